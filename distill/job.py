"""One distillation job, for every method: teacher in, a folder with the controller and everything about it out.

:class:`Distillation` is the method's estimator (DAgger, then optional leaf tuning and leaf
merging for trees); :func:`run_job` is what ``interp-rl distill METHOD`` and the benchmark
harness call: it fits, then writes the controller, its exports, its explanation and picture,
``metrics.json`` and ``config.json`` (derived from the estimator's ``get_params(deep=True)``).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import BaseEstimator, clone

from distill.dagger import DAgger, _jsonable
from distill.events import DaggerRound, DartLevel, LevelChosen, Progress, ProgressEvent, as_event
from distill.folder import CONFIG_FILE, METRICS_FILE, _save_evidence, _size_text, write_controller_files
from distill.stages import (
    STAGES,
    Collapse,
    FineTuning,
    FromScratch,
    LeafTuning,
    RepairStage,
    Restarts,
    SparsitySweep,
    Stage,
    StageContext,
    refit_like,
)
from interp_rl.errors import DistillInterrupted, InterpRLError, bad_value
from interp_rl.io import atomic_write_text, json_safe
from interp_rl.program import Signal
from interp_rl.seeds import RL_LEVELS_SEED_OFFSET
from interp_rl.teachers import Teacher, check_teacher
from interp_rl.threads import one_blas_thread
from interp_rl.validation import check_choice, check_float, check_int

if TYPE_CHECKING:
    from distill.registry import Method

__all__ = ["CONFIG_FILE", "METRICS_FILE", "Distillation", "refit_like", "run_job", "write_controller_files"]

log = logging.getLogger(__name__)
CHECKPOINT_DIR = "checkpoint"


def _numbers(text: Any, name: str, example: str, *, none: bool = False) -> list[Any]:
    """Comma-separated non-negative numbers (ints where whole; ``none`` as ``None`` when allowed); [] for ""."""
    if not text:
        return []
    expected = f"comma-separated non-negative numbers such as {example}"
    if not isinstance(text, str):
        raise bad_value(name, "Distillation", expected, text)
    values: list[Any] = []
    for part in text.replace(" ", "").split(","):
        try:
            v = None if none and part.lower() == "none" else float(part)
        except ValueError:
            raise bad_value(name, "Distillation", expected, text) from None
        if v is not None and (not np.isfinite(v) or v < 0):
            raise bad_value(name, "Distillation", expected, text)
        values.append(int(v) if v is not None and v.is_integer() else v)
    return values


class Distillation(BaseEstimator):
    """A method's whole estimator: DAgger, then fine-tuning on the return (ARS on tree leaves, and/or
    the actor-critic :class:`~distill.critic_tuning.CriticTuner` on any piecewise-affine controller), then leaf merging.

    Parameters
    ----------
    dagger : DAgger, default=None
        Learns the student from the teacher (default: ``DAgger()``, a 64-leaf linear tree).
    tuner : LeafTuner, default=None
        Tunes a tree's leaves on the return after DAgger; skipped when ``None`` or its
        ``n_iter`` is 0.
    rl : CriticTuner, default=None
        Fine-tunes the controller on the return with an actor-critic warm-started from the teacher's
        critic, after leaf tuning; skipped when ``None`` or its ``n_steps`` is 0.
    collapse_atol : float, default=0.0
        Merge sibling tree leaves whose parameters differ by at most this (0: off).
    scratch : ScratchTrainer, default=None
        With ``n_steps`` > 0: no DAgger; the student (a mixture) is trained by RL from scratch on the
        teacher's task instead (:class:`~distill.from_scratch.ScratchTrainer`), and the later stages start from it.
    sweep : str, default=""
        A sparsity sweep after DAgger: comma-separated values of the student's ``sweep_param``
        (``"5,10,20,40"``). The student is refitted on the selected round's data at each value, each
        fit is scored by its return on ``sweep_episodes`` held-out episodes, and the sparsest (fewest
        non-zero parameters) within ``sweep_tolerance`` of the best return is kept ("" : off).
    sweep_param : str, default=""
        The student parameter the sweep sets (the method's size, e.g. ``max_terms``).
    sweep_tolerance : float, default=0.05
        Keep the sparsest fit whose return is at least ``best - sweep_tolerance * |best|``.
    sweep_episodes : int, default=10
        Held-out episodes scoring each fit of the sweep.
    restarts : int, default=1
        Fits of the final student on the final data (DAgger's, plus the repair's), each with another seed; the one
        with the best held-out score (``restart_episodes`` episodes: the mean of the mean return and of the worst
        quarter's) is kept. A student's fit is a draw (a mixture's router can settle several ways), and a closed
        loop makes small differences large, so choosing between draws on held-out episodes pays (1: off).
    restart_episodes : int, default=20
        Held-out episodes scoring each restart (seeds apart from every other stage's).
    noise_levels : str, default=""
        DART levels to choose between: comma-separated action noises (``"0,0.3"``, in half action ranges). DAgger
        runs once at each level (in place of ``dagger.action_noise``), each run's student gets its ``restarts``,
        and the fit with the best held-out score over all levels is kept, with its data. Noise on the executed
        actions teaches recovery but spends the teacher's labels away from its own path; which pays depends on
        the teacher, so the held-out episodes decide ("": one run at ``dagger.action_noise``).
    rl_levels : {'kept', 'each'}, default='kept'
        With several DART levels and fine-tuning: ``'kept'`` fine-tunes the fit the held-out episodes chose
        before fine-tuning; ``'each'`` fine-tunes every level's kept fit (side by side, as the levels distil, each
        with its own checkpoints) and keeps the one whose fine-tuned controller scores best on
        ``restart_episodes`` further held-out episodes (the long recipe: which level a teacher wants shows only
        after fine-tuning).
    n_jobs : int, default=None
        Processes running the DART levels side by side (forked; each level on one CPU). ``None``: one per level,
        up to the CPUs this process may use; 1: one level after the other. The controller is the same either
        way: each level has its own seeds and touches nothing the other reads.
    repair : FailureRepair, default=None
        After DAgger (and the sweep): targeted DAgger from the run-up to the controller's failures, the student
        refitted within its budget (:class:`~distill.failure_repair.FailureRepair`); skipped when ``None`` or its
        ``n_rounds`` is 0.
    stages : list of Stage, default=None
        Further stages (:mod:`distill.stages`, registered with ``register_stage``): a stage whose ``per_level`` is
        true runs on each DART level's fit after the repair and before the restarts (it sees DAgger's data); the
        others run, in order, on the kept controller after fine-tuning and leaf merging. Each one's record is kept
        in ``stages_`` and in ``metrics.json`` under its name.

    Attributes
    ----------
    student_ : estimator
        The final student (``to_controller`` makes it a :class:`~interp_rl.program.Controller`).
    dagger_ : DAgger or None
        The fitted DAgger (history, data, chosen round); ``None`` when ``fit`` started from a given student.
    tuning_ : dict
        Leaf tuning's returns and history (empty when it did not run).
    rl_ : dict
        Actor-critic fine-tuning's returns, history and critic source (empty when it did not run).
    scratch_ : dict
        RL from scratch: algorithm, steps, seconds, checkpoint history, the kept checkpoint (empty when it
        did not run).
    sweep_ : dict
        The sparsity sweep: one row per value (size, return mean, worst and spread), the best return and the
        kept value (empty when it did not run).
    repair_ : dict
        The repair's rounds and the kept one (empty when it did not run).
    restarts_ : dict
        Each restart's seed (and noise level) and held-out score, mean and worst return, and the kept one (empty
        when off).
    noise_levels_ : dict
        Each DART level's best held-out score and the kept level (empty when ``noise_levels`` is off); with
        ``rl_levels='each'`` the level kept after fine-tuning.
    rl_levels_ : dict
        With ``rl_levels='each'``: each level's fine-tuning (start and best held-out return of the tuner) and its
        fine-tuned controller's score, mean and worst return on the further held-out episodes, and the kept one
        (empty otherwise).
    stages_ : dict
        The record of each given stage that ran, by name (empty without ``stages``).
    daggers_ : list of DAgger
        Every DAgger run, one per DART level (``[dagger_]`` with one level; empty without DAgger).
    data_ : tuple or None
        ``(X, y, sample_weight)``: the teacher-labelled states the final student was fitted on (weights ``None``
        when uniform); ``None`` without DAgger.
    """

    def __init__(self, dagger: DAgger | None = None, tuner: Any = None, rl: Any = None,
                 collapse_atol: float = 0.0, scratch: Any = None, sweep: str = "", sweep_param: str = "",
                 sweep_tolerance: float = 0.05, sweep_episodes: int = 10, repair: Any = None, restarts: int = 1,
                 restart_episodes: int = 20, noise_levels: str = "", rl_levels: str = "kept",
                 n_jobs: int | None = None, stages: Sequence[Stage] | None = None) -> None:
        self.dagger = dagger
        self.tuner = tuner
        self.rl = rl
        self.collapse_atol = collapse_atol
        self.scratch = scratch
        self.sweep = sweep
        self.sweep_param = sweep_param
        self.sweep_tolerance = sweep_tolerance
        self.sweep_episodes = sweep_episodes
        self.repair = repair
        self.restarts = restarts
        self.restart_episodes = restart_episodes
        self.noise_levels = noise_levels
        self.rl_levels = rl_levels
        self.n_jobs = n_jobs
        self.stages = stages

    def _noise_values(self) -> list[float]:
        """The DART levels to choose between, parsed; [] when off."""
        values = _numbers(self.noise_levels, "noise_levels", "'0,0.3' (or '' for one level)")
        if len(set(values)) != len(values):
            raise bad_value("noise_levels", "Distillation", "comma-separated distinct non-negative numbers such as "
                            "'0,0.3' (or '' for one level)", self.noise_levels)
        return [float(v) for v in values]

    def _sweep_values(self) -> list[Any]:
        """The sweep's values, parsed (ints where whole, ``none`` as ``None``); [] when off."""
        return _numbers(self.sweep, "sweep", "'5,10,20,40' (or '' for no sweep)", none=True)

    def _validate_params(self) -> None:
        """Check every setting of every part; a bad one raises the one-line template error."""
        (self.dagger or DAgger())._validate_params()
        for part in (self.tuner, self.rl, self.scratch, self.repair):
            if part is not None:
                part._validate_params()
        names = [self._check_stage(stage) for stage in self.stages or ()]
        if len(set(names)) != len(names):
            raise bad_value("stages", "Distillation", "stages of distinct names", ", ".join(names))
        check_float(self.collapse_atol, "collapse_atol", "Distillation")
        check_float(self.sweep_tolerance, "sweep_tolerance", "Distillation")
        check_int(self.sweep_episodes, "sweep_episodes", "Distillation", low=1)
        check_int(self.restarts, "restarts", "Distillation", low=1)
        check_int(self.restart_episodes, "restart_episodes", "Distillation", low=1)
        if self.n_jobs is not None:
            check_int(self.n_jobs, "n_jobs", "Distillation", low=1)
        check_choice(self.rl_levels, "rl_levels", "Distillation", ("kept", "each"))
        self._noise_values()
        if self._sweep_values():
            student = (self.dagger or DAgger())._base_student()
            if self.sweep_param not in student.get_params(deep=False):
                raise bad_value("sweep_param", "Distillation", f"a parameter of {type(student).__name__}",
                                self.sweep_param)

    @staticmethod
    def _check_stage(stage: Any) -> str:
        """A given stage's name, once it is checked to be a registered :class:`~distill.stages.Stage`."""
        if not isinstance(stage, Stage):
            raise bad_value("stages", "Distillation", "Stage instances (distill.stages.Stage)", stage)
        if STAGES.get(stage.name) is not type(stage):
            raise bad_value("stages", "Distillation", "registered stages (distill.stages.register_stage)",
                            type(stage).__name__)
        if stage.name in {"tuning", "rl", "repair", "restarts", "sweep", "scratch", "collapse"}:
            raise bad_value("stages", "Distillation", "a stage that is not built in (those are set by their own "
                            "parameters)", stage.name)
        stage._validate_params()
        return stage.name

    @one_blas_thread
    def fit(self, teacher: Teacher, env_fn: Callable[[int], Any] | None = None, *,
            checkpoint_dir: str | Path | None = None, resume: bool = False,
            progress: Progress | None = None, start: Any = None) -> Distillation:
        """Distil ``teacher`` in environments from ``env_fn`` (default ``teacher.env_fn``).

        DAgger rounds and the stages' state are checkpointed in ``checkpoint_dir`` (``resume=True`` continues
        them). With ``start`` (a fitted student, e.g. ``PolicyStudent.from_program`` of a saved controller) DAgger is
        skipped: the stages after it start from it (``dagger_`` is then ``None``). ``progress`` receives
        :mod:`distill.events` events.

        NumPy's BLAS runs on one thread throughout, as torch does in every student: how a product's sums are
        split across threads changes their last bits, DAgger's rollouts amplify them, and the same seed would
        give another controller on a machine with more cores (on Ant, with its 105 features, it did).
        """
        self._validate_params()
        check_teacher(teacher, "Distillation")
        if self.rl is not None and self.rl.n_steps > 0:
            self.rl._critic_source(teacher)  # a critic the teacher lacks is said now, not after distilling
        env_fn = env_fn if env_fn is not None else teacher.env_fn
        ckpt = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.scratch_: dict[str, Any] = {}
        self.noise_levels_: dict[str, Any] = {}
        self.daggers_: list[DAgger] = []
        self.sweep_: dict[str, Any] = {}
        self.data_: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None
        self.repair_: dict[str, Any] = {}
        self.restarts_: dict[str, Any] = {}
        self.rl_levels_: dict[str, Any] = {}
        self.stages_: dict[str, dict[str, Any]] = {}
        runs: list[dict[str, Any]] = []
        dagger: DAgger | None
        template = self.dagger or DAgger()
        scratch = FromScratch(self.scratch)
        if scratch.active():
            if start is not None:
                raise InterpRLError("RL from scratch (scratch_steps) and a start controller exclude each other: "
                                    "drop one.")
            res = scratch.run(clone(template.student), StageContext(
                teacher, env_fn, ckpt, resume, progress, seed=template.seed, n_envs=template.n_envs))
            dagger, student, scale, self.scratch_ = None, res.student, None, res.record
        elif start is None:
            levels = self._noise_values()
            runs = self._distil_levels(teacher, env_fn, levels, checkpoint_dir, resume, progress)
            kept = int(np.argmax([r["score"] for r in runs])) if len(runs) > 1 else 0
            self.daggers_ = [r["dagger"] for r in runs]
            dagger, student = runs[kept]["dagger"], runs[kept]["student"]
            scale = dagger.X_.std(axis=0)
            self.sweep_, self.data_, self.repair_ = runs[kept]["sweep"], runs[kept]["data"], runs[kept]["repair"]
            self.restarts_ = runs[kept]["restarts"]
            self.stages_.update(runs[kept]["stages"])
            if len(runs) > 1:
                rows = [{"noise": r["noise"], "score": r["score"], "return_mean": r["return_mean"],
                         "return_min": r["return_min"]} for r in runs]
                self.noise_levels_ = {"rows": rows, "kept": kept, "noise": runs[kept]["noise"],
                                      "episodes": self.restart_episodes}
                if self.restarts > 1:
                    self.restarts_ = {**self.restarts_,
                                      "rows": [row for r in runs for row in r["restarts"]["rows"]],
                                      "kept": sum(len(r["restarts"]["rows"]) for r in runs[:kept])
                                      + self.restarts_["kept"]}
        else:
            dagger, student, scale = None, start, None
        context = StageContext(teacher, env_fn, ckpt, resume, progress, dagger=dagger, data=self.data_,
                               feature_scale=scale, seed=template.seed if dagger is None else dagger.seed,
                               n_envs=template.n_envs if dagger is None else dagger.n_envs)
        self.tuning_: dict[str, Any] = {}
        tuning = LeafTuning(self.tuner)
        if tuning.active():
            res = tuning.run(student, context)
            student, self.tuning_ = res.student, res.record
        self.rl_: dict[str, Any] = {}
        tuning_rl = FineTuning(self.rl)
        if tuning_rl.active() and self.rl_levels == "each" and len(runs) > 1:
            if self.tuning_:
                raise bad_value("rl_levels", "Distillation", "'kept' with leaf tuning (tune_iterations)",
                                self.rl_levels)
            kept, student = self._tune_levels(runs, context)
            dagger = runs[kept]["dagger"]
            self.sweep_, self.data_, self.repair_ = runs[kept]["sweep"], runs[kept]["data"], runs[kept]["repair"]
            self.stages_ = dict(runs[kept]["stages"])
            context.dagger, context.data = dagger, self.data_
            self.noise_levels_ = {**self.noise_levels_, "kept": kept, "noise": runs[kept]["noise"],
                                  "chosen": "after fine-tuning"}
        elif tuning_rl.active():
            res = tuning_rl.run(student, context)
            student, self.rl_ = res.student, res.record
        collapse = Collapse(self.collapse_atol)
        if collapse.active():
            student = collapse.run(student, context).student
        for stage in self._extra_stages(per_level=False):
            res = stage.run(student, context)
            student = res.student
            self.stages_[stage.name] = res.record
            if res.data is not None:
                self.data_ = context.data = res.data
        self.dagger_, self.student_ = dagger, student
        return self

    def _extra_stages(self, *, per_level: bool) -> list[Stage]:
        """The given ``stages`` that run per DART level (``per_level``) or once after, and are on."""
        return [s for s in self.stages or () if s.per_level == per_level and s.active()]

    def _tune_levels(self, runs: list[dict[str, Any]], context: StageContext) -> tuple[int, Any]:
        """``rl_levels='each'``: every level's student fine-tuned (side by side, a checkpoint folder each), each
        result scored on ``restart_episodes`` further held-out episodes; ``(kept level, its student)``."""
        from functools import partial

        from interp_rl.parallel import side_by_side, usable_cpus

        jobs = min(len(runs), self.n_jobs if self.n_jobs is not None else usable_cpus())
        tasks = [partial(self._tune_one, run["student"], run["dagger"], context, run["noise"], i)
                 for i, run in enumerate(runs)]
        try:
            tuned = side_by_side(tasks, jobs, context.progress)
        except KeyboardInterrupt:
            if jobs == 1:
                raise
            where = (f"; each level's state is kept in {str(context.checkpoint_dir)!r} (a folder per DART level)"
                     if context.checkpoint_dir is not None else "")
            raise DistillInterrupted(f"Fine-tuning interrupted{where}.") from None
        first = runs[0]["dagger"]
        choose = replace(context, seed=first.seed, n_envs=first.n_envs)
        rows = []
        for run, (student, rl) in zip(runs, tuned, strict=True):
            score, mean, worst = FineTuning(self.rl).held_out(student, choose, self.restart_episodes,
                                                              RL_LEVELS_SEED_OFFSET)
            rows.append({"noise": run["noise"], "score": score, "return_mean": mean, "return_min": worst,
                         "rl": rl})
            if context.progress is not None:
                context.progress(LevelChosen(noise=run["noise"], return_mean=mean, return_min=worst))
        kept = int(np.argmax([r["score"] for r in rows]))
        self.rl_levels_ = {"rows": [{k: v for k, v in r.items() if k != "rl"} | {
            "initial_return": r["rl"]["initial_return"], "best_return": r["rl"]["best_return"],
            "seconds": r["rl"]["seconds"]} for r in rows], "kept": kept, "episodes": self.restart_episodes}
        self.rl_ = rows[kept]["rl"]
        return kept, tuned[kept][0]

    def _tune_one(self, student: Any, dagger: DAgger, context: StageContext, noise: float, level: int,
                  progress: Progress | None) -> tuple[Any, dict[str, Any]]:
        """The fine-tuning of DART level ``level``'s ``student`` in its own checkpoint folder, its events to
        ``progress`` (this process's or a forked level's) tagged by the level: ``(the kept student, the rl_
        record)``."""
        folder = None if context.checkpoint_dir is None else context.checkpoint_dir / f"rl-noise-{noise:g}"
        res = FineTuning(self.rl).run(student, replace(
            context, checkpoint_dir=folder, dagger=dagger, level=level,
            progress=None if progress is None else _tagged(progress, level)))
        return res.student, res.record

    def _distil_levels(self, teacher: Teacher, env_fn: Callable[[int], Any], levels: list[float],
                       checkpoint_dir: str | Path | None, resume: bool,
                       progress: Progress | None) -> list[dict[str, Any]]:
        """One :meth:`_distil` run per DART level (one at DAgger's own noise without levels), side by side in
        up to ``n_jobs`` processes. Each level has its own seeds and checkpoint folder and touches no shared
        state, so the runs are the same whether they run side by side or in turn; their events carry
        ``level`` (the level's index)."""
        from functools import partial

        from interp_rl.parallel import side_by_side, usable_cpus

        if not levels:
            return [self._distil(teacher, env_fn, None, checkpoint_dir, resume, progress, score=False)]
        jobs = min(len(levels), self.n_jobs if self.n_jobs is not None else usable_cpus())
        tasks = [partial(self._distil, teacher, env_fn, noise, checkpoint_dir, resume, score=len(levels) > 1,
                         level=i) for i, noise in enumerate(levels)]
        try:
            return side_by_side(tasks, jobs, progress)
        except KeyboardInterrupt:  # here, not in a level: its processes are stopped, their completed rounds kept
            if jobs == 1:
                raise
            where = (f"; completed round(s) are kept in {str(checkpoint_dir)!r} (a folder per DART level)"
                     if checkpoint_dir is not None else "")
            raise DistillInterrupted(f"Distillation interrupted{where}.") from None

    def _distil(self, teacher: Teacher, env_fn: Callable[[int], Any], noise: float | None,
                checkpoint_dir: str | Path | None, resume: bool, progress: Progress | None,
                *, score: bool, level: int = 0) -> dict[str, Any]:
        """DAgger (at DART level ``noise``, or DAgger's own when ``None``), then the per-level stages on its data
        (the sweep, the repair, any given per-level stage, the restarts); with ``score``, the kept fit's held-out
        score (one fit is scored too)."""
        dagger = clone(self.dagger or DAgger())
        if noise is not None:
            dagger.set_params(action_noise=noise)
            if checkpoint_dir is not None:
                checkpoint_dir = Path(checkpoint_dir) / f"noise-{noise:g}"
            if progress is not None:
                progress = _tagged(progress, level)
                progress(DartLevel(noise=noise))
        dagger.set_params(checkpoint_dir=checkpoint_dir)
        dagger.fit(teacher, env_fn, resume=resume, progress=progress)
        context = StageContext(teacher, env_fn, None if checkpoint_dir is None else Path(checkpoint_dir), resume,
                               progress, dagger=dagger, seed=dagger.seed, n_envs=dagger.n_envs,
                               level=None if noise is None else level)
        records: dict[str, dict[str, Any]] = {}
        student = dagger.student_
        n = dagger.n_samples_used_
        weights = dagger.sample_weight_[:n] if dagger.weighting_ == "critic" else None
        context.data = (dagger.X_[:n], dagger.y_[:n], weights)  # the selected round's: what every stage refits on
        sweep = SparsitySweep(self._sweep_values(), self.sweep_param, self.sweep_tolerance, self.sweep_episodes)
        if sweep.active():
            res = sweep.run(student, context)
            student, records[sweep.name] = res.student, res.record
        per_level: list[Stage] = [RepairStage(self.repair), *self._extra_stages(per_level=True),
                                  Restarts(self.restarts, self.restart_episodes, score_one=score)]
        kept_score = None
        for stage in per_level:
            if stage.active():
                res = stage.run(student, context)
                student, records[stage.name] = res.student, res.record
                kept_score = res.score if res.score is not None else kept_score
                if res.data is not None:
                    context.data = res.data
        restarts = records.get("restarts", {})
        for row in restarts.get("rows", ()):
            row["noise"] = float(dagger.action_noise)
        best = restarts["rows"][restarts["kept"]] if restarts else {}
        return {"dagger": dagger, "student": student, "noise": float(dagger.action_noise),
                "sweep": records.pop("sweep", {}), "data": context.data, "repair": records.pop("repair", {}),
                "restarts": records.pop("restarts", {}) if self.restarts > 1 else {},
                "stages": records, "score": best.get("score"), "return_mean": best.get("return_mean"),
                "return_min": best.get("return_min")}


def _tagged(progress: Progress, level: int) -> Progress:
    """``progress`` with every event tagged by the DART level's index (levels may run side by side)."""
    return lambda event: progress(as_event(event).tagged(level))


def _sweep_figure(sweep: dict[str, Any], path: Path, title: str) -> None:
    """Return (mean, and worst episode) against non-zero parameters for each fit of the sweep; the kept one ringed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp_rl.io import atomic_write

    rows = sorted(sweep["rows"], key=lambda r: r["parameters"])
    size = [r["parameters"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(size, [r["return_mean"] for r in rows], "o-", label="mean return")
    ax.plot(size, [r["return_min"] for r in rows], "v--", alpha=0.7, label="worst episode")
    kept = sweep["rows"][sweep["kept_index"]]
    ax.plot([kept["parameters"]], [kept["return_mean"]], "o", ms=14, mfc="none", mec="k",
            label=f"kept: {sweep['param']}={kept['value'] if kept['value'] is not None else 'none'}")
    ax.axhline(sweep["best_return"] - sweep["tolerance"] * abs(sweep["best_return"]), color="grey", lw=0.8, ls=":",
               label=f"{sweep['tolerance']:.0%} below the best")
    ax.set_xscale("log")
    ax.set_xlabel("non-zero parameters")
    ax.set_ylabel(f"return ({sweep['episodes']} held-out episodes)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


@one_blas_thread
def run_job(
    method: Method,
    teacher: Teacher,
    settings: dict[str, Any],
    out_dir: str | Path,
    *,
    features: Sequence[Signal] | None = None,
    actions: Sequence[Signal] | None = None,
    provenance: dict[str, Any] | None = None,
    resume: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
    evaluate_student: bool = True,
    start: str | Path | None = None,
) -> dict[str, Any]:
    """Distil ``teacher`` by ``method`` with ``settings`` and write everything about it to ``out_dir``.

    Writes ``controller.json`` (loads back to identical actions), ``distillation.npz`` (the teacher-labelled
    states it was fitted on, :mod:`interp_rl.evidence`; a fine-tuned controller keeps its start's),
    ``controller.py`` and ``controller.c`` (standalone exports), ``rules.txt`` (the controller as text),
    ``KIND.dot`` and ``KIND.svg`` (its picture; the ``.svg`` needs Graphviz), ``metrics.json``
    and ``config.json`` (the resolved settings and the estimator's parameters). DAgger rounds
    are kept in ``out_dir/checkpoint`` so an interrupted run loses no completed round
    (``resume=True`` continues it). With ``evaluate_student=False`` the final evaluation
    (returns and fidelity) is left to the caller, as the benchmark harness does.

    With ``start`` (a folder holding a saved controller of this method's kind, for the teacher's task)
    no DAgger runs: the method's fine-tuning (``rl_steps``, leaf tuning) starts from that controller, and
    ``distill_seconds`` adds the time the start took to make (its own ``metrics.json``).

    NumPy's BLAS runs on one thread throughout (see :meth:`Distillation.fit`), so a seed gives the same
    controller and the same figures on any number of cores.

    Returns
    -------
    dict
        The metrics written to ``metrics.json``.
    """
    from distill.registry import SPEED_ONLY
    from interp_rl.compare import compare

    check_teacher(teacher, f"distill {method.name}")
    resolved = method.resolve(settings)
    estimator = method.build(resolved).set_params(n_jobs=resolved["jobs"] or None)
    out = Path(out_dir)
    ckpt = out / CHECKPOINT_DIR
    if (out / METRICS_FILE).exists() and not resume:
        raise InterpRLError(f"{str(out)!r} already holds a distilled controller; choose another --out.")
    if ckpt.exists() and not resume:
        raise InterpRLError(
            f"{str(out)!r} holds an unfinished distillation; pass --resume to continue it or choose "
            "another --out."
        )
    if resume and (out / CONFIG_FILE).is_file():
        saved = json.loads((out / CONFIG_FILE).read_text()).get("settings", {})
        saved = {**{k: v for k, v in method.defaults().items() if k not in saved}, **saved}  # settings added since
        diff = sorted(k for k in (set(saved) | set(resolved)) - SPEED_ONLY if saved.get(k) != resolved.get(k))
        if diff:
            raise InterpRLError(f"Cannot resume {str(out)!r} with different settings ({', '.join(diff)}).")
    begin = _start_student(method, estimator, teacher, start, features) if start is not None else None
    subset = (_feature_subset(estimator, teacher, resolved, begin is not None)
              if resolved["top_features"] or resolved["random_features"] else None)
    out.mkdir(parents=True, exist_ok=True)
    config = {"method": method.name, "settings": resolved, "params": _jsonable(estimator.get_params(deep=True)),
              "task": teacher.task, "teacher": provenance or {}}
    if subset is not None:
        config["feature_subset"] = subset
    if begin is not None:
        config["start"] = str(start)
    atomic_write_text(out / CONFIG_FILE, json.dumps(json_safe(config), indent=1) + "\n")

    t0 = time.perf_counter()
    rounds_now: dict[int, int] = {}  # DAgger rounds run by this call, per DART level (levels may run side by side)

    def _progress(event: ProgressEvent) -> None:
        if isinstance(event, DaggerRound):
            level = event.level or 0
            rounds_now[level] = rounds_now.get(level, 0) + 1
        if progress is not None:
            progress(event)

    estimator.fit(teacher, checkpoint_dir=ckpt, resume=resume, progress=_progress,
                  start=None if begin is None else begin[0])
    dagger = estimator.dagger_
    if dagger is not None:
        # Rounds finished before an interruption count too: each round records its own time (a DART level
        # finished before it ran no round now).
        now = [rounds_now.get(i, 0) for i in range(len(estimator.daggers_))]
        earlier = sum(sum(r["seconds"] for r in d.history_[: len(d.history_) - n])
                      for d, n in zip(estimator.daggers_, now, strict=True))
    elif begin is not None:
        earlier = begin[1].get("distill_seconds") or 0.0  # the start's own making
    else:  # RL from scratch: its seconds before a resume are in its own history
        earlier = 0.0
    seconds = earlier + (estimator.rl_.get("earlier_seconds") or 0.0) + time.perf_counter() - t0
    if estimator.scratch_:
        seconds = max(seconds, estimator.scratch_["seconds"] + (estimator.rl_.get("seconds") or 0.0))

    made_by = {k: v for k, v in resolved.items() if k not in SPEED_ONLY}  # the controller is the same whatever these
    metadata: dict[str, Any] = {"method": method.name, "settings": made_by, "teacher": provenance or {},
                                # what the teacher's environment needs of its students (a UDRL forest's command)
                                **getattr(teacher, "controller_metadata", {})}
    controller = estimator.student_.to_controller(features, actions, task=teacher.task, metadata=metadata)
    size = controller.size()
    metrics: dict[str, Any] = {
        "method": method.name,
        "kind": controller.kind,
        "task": teacher.task,
        "size": size,
        **size,
        "distill_seconds": seconds,
        "tuning": estimator.tuning_,
        "rl": estimator.rl_,
    }
    if estimator.repair_:
        metrics["repair"] = estimator.repair_
    if estimator.restarts_:
        metrics["restarts"] = estimator.restarts_
    if getattr(estimator, "noise_levels_", None):
        metrics["noise_levels"] = estimator.noise_levels_
    if getattr(estimator, "rl_levels_", None):
        metrics["rl_levels"] = estimator.rl_levels_
    if subset is not None:
        metrics["feature_subset"] = subset
    if estimator.scratch_:
        metrics["scratch"] = estimator.scratch_
    for name, record in estimator.stages_.items():  # the given stages' (a built-in's record has its own key)
        if record:
            metrics[name] = record
    if estimator.sweep_:
        metrics["sweep"] = estimator.sweep_
        _sweep_figure(estimator.sweep_, out / "sweep.png", f"{teacher.task} {method.name}: return against size")
    if dagger is not None:
        metrics.update({
            "weighting": dagger.weighting_, "best_round": dagger.best_round_, "samples": dagger.n_samples_used_,
            "dagger_history": dagger.history_,
            # what the distilled student reports of its own fit (a mixture: router-tree agreement, usage)
            "fit_facts": getattr(dagger.student_, "fit_facts", dict)(),
        })
    elif begin is not None:  # the start's distillation, as its own metrics say
        metrics.update({k: begin[1].get(k) for k in ("weighting", "best_round", "samples", "dagger_history",
                                                    "fit_facts")})
        metrics["start"] = {"controller": str(start), "distill_seconds": earlier,
                            "tuning": begin[1].get("tuning") or {}, "rl": begin[1].get("rl") or {}}
    if evaluate_student:
        metrics.update(compare(controller, teacher, teacher.env_fn, episodes=resolved["eval_episodes"],
                               seed=resolved["seed"], fidelity_steps=resolved["fidelity_steps"]))
        from interp_rl.attribution import teacher_agreement

        metrics["attribution_agreement"] = teacher_agreement(
            teacher, controller, resolved["attribution_states"], resolved["seed"])
        shown = ("teacher_return", "student_return", "percent_of_teacher", "worst_percent_of_teacher")
        controller.metadata["metrics"] = {k: metrics[k] for k in shown}
    _save_evidence(out, estimator.data_, start)
    write_controller_files(controller, out, metrics, f"{teacher.task} {method.name} ({_size_text(size)})")
    shutil.rmtree(ckpt, ignore_errors=True)
    return metrics


def _feature_subset(estimator: Distillation, teacher: Teacher, resolved: dict[str, Any], started: bool
                    ) -> dict[str, Any]:
    """Make the student read only some of the teacher's features: its ``top_features`` most important ones
    (Shapley ranking on states the teacher visits), or ``random_features`` drawn with the seed (the baseline).
    The DAgger student is wrapped in :class:`~distill.subset.FeatureSubset`."""
    from distill.subset import FeatureSubset
    from distill.tree import TreePolicy
    from interp_rl.attribution import teacher_ranking

    top, drawn = resolved["top_features"], resolved["random_features"]
    flag = "--top-features" if top else "--random-features"
    if top and drawn:
        raise InterpRLError("--top-features and --random-features both choose the features the controller reads; "
                            "give one.")
    k = top or drawn
    if started or (estimator.scratch is not None and estimator.scratch.n_steps) or estimator.sweep:
        what = "--start" if started else ("--sweep" if estimator.sweep else "training from scratch")
        raise InterpRLError(f"{flag} chooses the features DAgger's student reads; it cannot be combined with "
                            f"{what}.")
    dagger = estimator.dagger or DAgger()
    names = list(teacher.feature_names)
    n_features = getattr(teacher, "obs_dim", None) or len(names)
    if k > n_features:
        raise InterpRLError(f"{flag} {k} asks for more features than the teacher's {n_features}.")
    if top:
        ranking = teacher_ranking(teacher, seed=resolved["seed"])
        columns = ranking["order"][:k]
        facts = {"pick": "shapley", "features": [ranking["features"][i] for i in range(k)],
                 "ranking": ranking["features"]}
    else:
        columns = sorted(np.random.default_rng(resolved["seed"]).choice(n_features, size=k, replace=False).tolist())
        facts = {"pick": "random", "features": [names[i] for i in columns]}
    estimator.dagger = dagger.set_params(student=FeatureSubset(student=dagger.student or TreePolicy(),
                                                               columns=columns))
    return {"k": k, "columns": sorted(int(c) for c in columns), **facts}


def _start_student(method: Method, estimator: Distillation, teacher: Teacher, start: str | Path,
                   features: Sequence[Signal] | None) -> tuple[Any, dict[str, Any]]:
    """The student running the saved controller in ``start`` and that folder's metrics, checked against the
    method (same kind of program) and the teacher (same task, same observation features)."""
    from interp_rl.program import load_controller

    folder = Path(start)
    ctrl = load_controller(folder)
    student_cls = type((estimator.dagger or DAgger()).student)
    if ctrl.kind != student_cls.program_kind:
        raise InterpRLError(f"The start controller in {str(folder)!r} is a {ctrl.kind} program; method "
                            f"{method.name!r} fine-tunes {student_cls.program_kind} programs.")
    if ctrl.task != teacher.task:
        raise InterpRLError(f"The start controller in {str(folder)!r} is for {ctrl.task}, not the teacher's "
                            f"task {teacher.task}.")
    if features is not None and ctrl.program.obs_dim != len(features):
        raise InterpRLError(f"The start controller in {str(folder)!r} reads {ctrl.program.obs_dim} observation "
                            f"features; this teacher's {teacher.task} gives {len(features)} (another observation "
                            "layout?).")
    made = folder / METRICS_FILE
    metrics = json.loads(made.read_text()) if made.is_file() else {}
    return student_cls.from_program(ctrl.program), metrics
