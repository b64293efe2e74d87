"""The family every distillation stage belongs to: :class:`Stage`, what it is given and what it gives back.

A stage takes a fitted student and returns another (``fit(student, context) -> StageResult``): the
sparsity sweep, the failure repair, the restarts, leaf tuning, actor-critic fine-tuning, leaf
merging. The base owns what every stage shares: its checkpoint folder and whether to resume, its
held-out score, its progress events and its timing. :class:`~distill.job.Distillation` runs the
built-in stages its parameters ask for, then the ones given in ``stages``.

A new stage is one class, registered::

    @register_stage
    class Shrink(Stage):
        name = "shrink"                      # its key in metrics.json

        def __init__(self, factor=0.5):
            self.factor = factor

        def fit(self, student, context):
            ...                               # context.teacher, .env_fn, .data, .checkpoint(self), .progress
            return StageResult(student=smaller, record={"factor": self.factor})

and given to ``Distillation(stages=[Shrink()])``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, clone

from distill.events import Progress, ProgressEvent, StageNote
from interp_rl.errors import InterpRLError

if TYPE_CHECKING:
    from distill.dagger import DAgger
    from interp_rl.teachers import Teacher

__all__ = ["STAGES", "Stage", "StageContext", "StageResult", "refit_like", "register_stage", "unregister_stage"]

#: Every registered stage class, by name (its key in ``metrics.json``).
STAGES: dict[str, type[Stage]] = {}
#: Keys of ``metrics.json`` a stage may not take (the job's own).
_RESERVED = {"method", "kind", "task", "size", "distill_seconds", "start", "weighting", "best_round", "samples",
             "dagger_history", "fit_facts", "noise_levels", "rl_levels", "feature_subset", "picture", "stages"}

Data = tuple[np.ndarray, np.ndarray, "np.ndarray | None"]


@dataclass
class StageContext:
    """What a stage is given besides the student.

    Attributes
    ----------
    teacher, env_fn
        The teacher and its environments (``env_fn(seed)``).
    checkpoint_dir : Path or None
        The run's checkpoint folder (``None``: nothing is kept); a stage keeps its state in
        :meth:`checkpoint` (its ``checkpoint_folder`` inside it).
    resume : bool
        Continue from the state found there.
    progress : callable or None
        Receives :mod:`distill.events` events (:meth:`Stage.emit`).
    dagger : DAgger or None
        The fitted DAgger the student came from (``None`` for a start controller or RL from scratch).
    data : tuple or None
        ``(X, y, sample_weight)``: the teacher-labelled states the student was fitted on (weights ``None`` when
        uniform).
    feature_scale : array or None
        Each feature's spread on DAgger's states (leaf tuning's step sizes).
    seed : int
        The run's seed (DAgger's); a stage's episodes start at ``seed`` plus its offset (:mod:`interp_rl.seeds`).
    n_envs : int
        Environments a held-out evaluation runs side by side.
    level : int or None
        The DART level's index when levels run side by side.
    """

    teacher: Teacher
    env_fn: Callable[[int], Any]
    checkpoint_dir: Path | None = None
    resume: bool = False
    progress: Progress | None = None
    dagger: DAgger | None = None
    data: Data | None = None
    feature_scale: np.ndarray | None = None
    seed: int = 0
    n_envs: int = 8
    level: int | None = None

    def checkpoint(self, stage: Stage) -> Path | None:
        """The folder ``stage`` keeps its state in (``None`` without a checkpoint folder)."""
        if self.checkpoint_dir is None:
            return None
        return Path(self.checkpoint_dir) / stage.checkpoint_folder if stage.checkpoint_folder else \
            Path(self.checkpoint_dir)


@dataclass
class StageResult:
    """What a stage gives back: the new ``student``, its ``record`` (kept in ``metrics.json`` under the stage's
    name; empty: nothing kept), its held-out ``score`` when it measured one, and the ``data`` the new student was
    fitted on when the stage changed it."""

    student: Any
    record: dict[str, Any] = field(default_factory=dict)
    score: float | None = None
    data: Data | None = None


class Stage(BaseEstimator):
    """Base of the distillation's stages (see the module docstring).

    Class attributes
    ----------------
    name : str
        The registry's key and the stage's key in ``metrics.json``.
    per_level : bool
        Runs on each DART level's fit, before the levels are compared (it sees DAgger's ``data``); otherwise once,
        on the kept controller.
    needs_data : bool
        Refits the student on the distillation's data, so it needs DAgger (not a start controller or RL from
        scratch).
    checkpoint_folder : str or None
        The folder inside the run's checkpoint folder holding the stage's state (``None``: the run's folder).
    """

    name: ClassVar[str] = ""
    per_level: ClassVar[bool] = False
    needs_data: ClassVar[bool] = False
    checkpoint_folder: ClassVar[str | None] = None
    #: Said when a stage that ``needs_data`` runs without DAgger ({name}: the stage's name).
    needs_data_error: ClassVar[str] = ("The {name} stage refits the student on its distillation data; it needs DAgger "
                                       "(not --start or training from scratch).")

    def active(self) -> bool:
        """Whether the stage runs with its settings (a stage with 0 rounds or 0 steps is off)."""
        return True

    def _validate_params(self) -> None:
        """Check the settings before anything runs; a bad one raises the one-line template error."""

    def fit(self, student: Any, context: StageContext) -> StageResult:
        """The new student, from ``student`` (fitted)."""
        raise NotImplementedError(f"{type(self).__name__} must define fit(student, context)")

    def run(self, student: Any, context: StageContext) -> StageResult:
        """:meth:`fit`, with the checks and the timing every stage shares (``seconds`` added to the record)."""
        if self.needs_data and (context.dagger is None or context.data is None):
            raise InterpRLError(self.needs_data_error.format(name=self.name))
        t0 = time.perf_counter()
        result = self.fit(student, context)
        if not isinstance(result, StageResult):
            raise TypeError(f"{type(self).__name__}.fit must return a StageResult, not {type(result).__name__}")
        if result.record and "seconds" not in result.record:
            result.record["seconds"] = time.perf_counter() - t0
        return result

    def emit(self, context: StageContext, event: ProgressEvent) -> None:
        """Tell ``context.progress`` (if any) about ``event``."""
        if context.progress is not None:
            context.progress(event)

    def say(self, context: StageContext, text: str) -> None:
        """A line of progress for a stage that has no event of its own."""
        self.emit(context, StageNote(stage=self.name, text=text))

    def held_out(self, student: Any, context: StageContext, episodes: int, offset: int) -> tuple[float, float, float]:
        """``(score, mean, worst)`` of ``student`` on ``episodes`` held-out episodes from ``context.seed + offset``
        (:func:`~distill.scoring.held_out_score`: the mean of the mean return and of the worst quarter's)."""
        from distill.scoring import held_out_score

        return held_out_score(student, context.env_fn, episodes, context.seed + offset, n_envs=context.n_envs)


def register_stage(cls: type[Stage]) -> type[Stage]:
    """Add ``cls`` to :data:`STAGES` under its ``name`` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Stage)):
        raise TypeError(f"register_stage takes a Stage subclass, not {cls!r}")
    if not cls.name or not cls.name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a stage's name is a word such as 'shrink', not {cls.name!r}")
    if cls.name in _RESERVED:
        raise ValueError(f"stage name {cls.name!r} is a key metrics.json already uses; choose another")
    if STAGES.get(cls.name, cls) is not cls:
        raise ValueError(f"a stage named {cls.name!r} is registered already ({STAGES[cls.name].__qualname__})")
    STAGES[cls.name] = cls
    return cls


def unregister_stage(name: str) -> None:
    """Remove the stage registered as ``name`` (a test's stage, when it is done)."""
    STAGES.pop(name, None)


def refit_like(student: Any, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, weighted: bool) -> Any:
    """A new student with ``student``'s settings (size limits, seed, bounds) fitted on ``X``, ``y``."""
    fresh = clone(student)
    return fresh.fit(X, y, sample_weight=w) if weighted else fresh.fit(X, y)
