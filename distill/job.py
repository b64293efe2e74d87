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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import BaseEstimator, clone

from distill.dagger import DAgger, _jsonable
from distill.folder import CONFIG_FILE, METRICS_FILE, _save_evidence, _size_text, write_controller_files
from interp_rl._threads import one_blas_thread
from interp_rl._validation import check_choice, check_float, check_int
from interp_rl.errors import DistillInterrupted, InterpRLError, bad_value
from interp_rl.io import atomic_write_text, json_safe
from interp_rl.program import Signal
from interp_rl.seeds import RESTART_SEED_OFFSET, RL_LEVELS_SEED_OFFSET, SWEEP_SEED_OFFSET
from interp_rl.teachers import Teacher, check_teacher

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
    the actor-critic :class:`~distill.rl.CriticTuner` on any piecewise-affine controller), then leaf merging.

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
        teacher's task instead (:class:`~distill.scratch.ScratchTrainer`), and the later stages start from it.
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
        refitted within its budget (:class:`~distill.repair.FailureRepair`); skipped when ``None`` or its
        ``n_rounds`` is 0.

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
                 n_jobs: int | None = None) -> None:
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

    @one_blas_thread
    def fit(self, teacher: Teacher, env_fn: Callable[[int], Any] | None = None, *,
            checkpoint_dir: str | Path | None = None, resume: bool = False,
            progress: Callable[[dict[str, Any]], None] | None = None, start: Any = None) -> Distillation:
        """Distil ``teacher`` in environments from ``env_fn`` (default ``teacher.env_fn``).

        DAgger rounds and the fine-tuning's state are checkpointed in ``checkpoint_dir`` (``resume=True``
        continues them). With
        ``start`` (a fitted student, e.g. ``PolicyStudent.from_program`` of a saved controller) DAgger is
        skipped: the fine-tuning steps start from it (``dagger_`` is then ``None``).

        NumPy's BLAS runs on one thread throughout, as torch does in every student: how a product's sums are
        split across threads changes their last bits, DAgger's rollouts amplify them, and the same seed would
        give another controller on a machine with more cores (on Ant, with its 105 features, it did).
        """
        self._validate_params()
        check_teacher(teacher, "Distillation")
        if self.rl is not None and self.rl.n_steps > 0:
            self.rl._critic_source(teacher)  # a critic the teacher lacks is said now, not after distilling
        env_fn = env_fn if env_fn is not None else teacher.env_fn
        self.scratch_: dict[str, Any] = {}
        self.noise_levels_: dict[str, Any] = {}
        self.daggers_: list[DAgger] = []
        self.sweep_: dict[str, Any] = {}
        self.data_: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None
        self.repair_: dict[str, Any] = {}
        self.restarts_: dict[str, Any] = {}
        self.rl_levels_: dict[str, Any] = {}
        runs: list[dict[str, Any]] = []
        dagger: DAgger | None
        if self.scratch is not None and self.scratch.n_steps > 0:
            if start is not None:
                raise InterpRLError("RL from scratch (scratch_steps) and a start controller exclude each other: "
                                    "drop one.")
            dagger, student, scale = None, self._from_scratch(teacher, checkpoint_dir, resume, progress), None
        elif start is None:
            levels = self._noise_values()
            runs = self._distil_levels(teacher, env_fn, levels, checkpoint_dir, resume, progress)
            kept = int(np.argmax([r["score"] for r in runs])) if len(runs) > 1 else 0
            self.daggers_ = [r["dagger"] for r in runs]
            dagger, student = runs[kept]["dagger"], runs[kept]["student"]
            scale = dagger.X_.std(axis=0)
            self.sweep_, self.data_, self.repair_ = runs[kept]["sweep"], runs[kept]["data"], runs[kept]["repair"]
            self.restarts_ = runs[kept]["restarts"]
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
        self.tuning_: dict[str, Any] = {}
        if self.tuner is not None and self.tuner.n_iter > 0:
            tuner = clone(self.tuner)
            t0 = time.perf_counter()
            tuner.fit(student, env_fn, feature_scale=scale, progress=progress)
            student = tuner.student_
            self.tuning_ = {"initial_return": tuner.initial_return_, "best_return": tuner.best_return_,
                            "history": tuner.history_, "seconds": time.perf_counter() - t0}
        self.rl_: dict[str, Any] = {}
        if self.rl is not None and self.rl.n_steps > 0 and self.rl_levels == "each" and len(runs) > 1:
            if self.tuning_:
                raise bad_value("rl_levels", "Distillation", "'kept' with leaf tuning (tune_iterations)",
                                self.rl_levels)
            kept, student = self._tune_levels(runs, teacher, env_fn, checkpoint_dir, resume, progress)
            dagger = runs[kept]["dagger"]
            self.sweep_, self.data_, self.repair_ = runs[kept]["sweep"], runs[kept]["data"], runs[kept]["repair"]
            self.noise_levels_ = {**self.noise_levels_, "kept": kept, "noise": runs[kept]["noise"],
                                  "chosen": "after fine-tuning"}
        elif self.rl is not None and self.rl.n_steps > 0:
            student, self.rl_ = self._tune_one(student, teacher, env_fn, None if checkpoint_dir is None
                                               else Path(checkpoint_dir), resume, progress)
        if self.collapse_atol > 0:
            if not hasattr(student, "tree_"):
                raise bad_value("collapse_atol", "Distillation", "0 for a student that is not a tree",
                                self.collapse_atol)
            from distill.prune import collapse_similar

            student = collapse_similar(student, self.collapse_atol)
        self.dagger_, self.student_ = dagger, student
        return self

    def _tune_levels(self, runs: list[dict[str, Any]], teacher: Teacher, env_fn: Callable[[int], Any],
                     checkpoint_dir: str | Path | None, resume: bool,
                     progress: Callable[[dict[str, Any]], None] | None) -> tuple[int, Any]:
        """``rl_levels='each'``: every level's student fine-tuned (side by side, a checkpoint folder each), each
        result scored on ``restart_episodes`` further held-out episodes; ``(kept level, its student)``."""
        from functools import partial

        from distill.scoring import held_out_score
        from interp_rl._parallel import side_by_side, usable_cpus

        jobs = min(len(runs), self.n_jobs if self.n_jobs is not None else usable_cpus())
        tasks = [partial(self._tune_one, run["student"], teacher, env_fn,
                         None if checkpoint_dir is None else Path(checkpoint_dir) / f"rl-noise-{run['noise']:g}",
                         resume, level=i) for i, run in enumerate(runs)]
        try:
            tuned = side_by_side(tasks, jobs, progress)
        except KeyboardInterrupt:
            if jobs == 1:
                raise
            where = (f"; each level's state is kept in {str(checkpoint_dir)!r} (a folder per DART level)"
                     if checkpoint_dir is not None else "")
            raise DistillInterrupted(f"Fine-tuning interrupted{where}.") from None
        dagger = runs[0]["dagger"]
        seed = dagger.seed + RL_LEVELS_SEED_OFFSET
        rows = []
        for run, (student, rl) in zip(runs, tuned, strict=True):
            score, mean, worst = held_out_score(student, env_fn, self.restart_episodes, seed, n_envs=dagger.n_envs)
            rows.append({"noise": run["noise"], "score": score, "return_mean": mean, "return_min": worst,
                         "rl": rl})
            if progress is not None:
                progress({"stage": "level-choice", "noise": run["noise"], "return_mean": mean, "return_min": worst})
        kept = int(np.argmax([r["score"] for r in rows]))
        self.rl_levels_ = {"rows": [{k: v for k, v in r.items() if k != "rl"} | {
            "initial_return": r["rl"]["initial_return"], "best_return": r["rl"]["best_return"],
            "seconds": r["rl"]["seconds"]} for r in rows], "kept": kept, "episodes": self.restart_episodes}
        self.rl_ = rows[kept]["rl"]
        return kept, tuned[kept][0]

    def _tune_one(self, student: Any, teacher: Teacher, env_fn: Callable[[int], Any], checkpoint_dir: Path | None,
                  resume: bool, progress: Callable[[dict[str, Any]], None] | None, *,
                  level: int | None = None) -> tuple[Any, dict[str, Any]]:
        """The fine-tuning of ``student`` (of DART level ``level``, which tags its progress rows):
        ``(the kept student, the rl_ record)``."""
        rl = clone(self.rl).set_params(checkpoint_dir=checkpoint_dir)
        t0 = time.perf_counter()
        rl.fit(student, teacher, env_fn, resume=resume,
               progress=_tagged(progress, level) if progress is not None and level is not None else progress)
        return rl.student_, {"initial_return": rl.initial_return_, "best_return": rl.best_return_,
                             "critic": rl.critic_source_, "history": rl.history_,
                             "seconds": time.perf_counter() - t0 + rl.earlier_seconds_,
                             "earlier_seconds": rl.earlier_seconds_}

    def _distil_levels(self, teacher: Teacher, env_fn: Callable[[int], Any], levels: list[float],
                       checkpoint_dir: str | Path | None, resume: bool,
                       progress: Callable[[dict[str, Any]], None] | None) -> list[dict[str, Any]]:
        """One :meth:`_distil` run per DART level (one at DAgger's own noise without levels), side by side in
        up to ``n_jobs`` processes. Each level has its own seeds and checkpoint folder and touches no shared
        state, so the runs are the same whether they run side by side or in turn; their progress rows carry
        ``level`` (the level's index)."""
        from functools import partial

        from interp_rl._parallel import side_by_side, usable_cpus

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
                checkpoint_dir: str | Path | None, resume: bool, progress: Callable[[dict[str, Any]], None] | None,
                *, score: bool, level: int = 0) -> dict[str, Any]:
        """DAgger (at DART level ``noise``, or DAgger's own when ``None``), then the sweep, the repair and the
        restarts on its data; with ``score``, the kept fit's held-out score (one fit is scored too)."""
        dagger = clone(self.dagger or DAgger())
        if noise is not None:
            dagger.set_params(action_noise=noise)
            if checkpoint_dir is not None:
                checkpoint_dir = Path(checkpoint_dir) / f"noise-{noise:g}"
            if progress is not None:
                progress = _tagged(progress, level)
                progress({"stage": "dart", "noise": noise})
        dagger.set_params(checkpoint_dir=checkpoint_dir)
        dagger.fit(teacher, env_fn, resume=resume, progress=progress)
        self.data_ = None
        self.sweep_, self.repair_, self.restarts_ = {}, {}, {}
        student = dagger.student_
        if self._sweep_values():
            student = self._run_sweep(dagger, teacher, env_fn, progress)
        n = dagger.n_samples_used_
        weights = dagger.sample_weight_[:n] if dagger.weighting_ == "critic" else None
        self.data_ = (dagger.X_[:n], dagger.y_[:n], weights)
        if self.repair is not None and self.repair.n_rounds > 0:
            student = self._run_repair(dagger, student, teacher, env_fn, progress)
        if self.restarts > 1 or score:
            student = self._run_restarts(dagger, student, teacher, env_fn, progress)
            for row in self.restarts_["rows"]:
                row["noise"] = float(dagger.action_noise)
        best = self.restarts_["rows"][self.restarts_["kept"]] if self.restarts_ else {}
        run = {"dagger": dagger, "student": student, "noise": float(dagger.action_noise), "sweep": self.sweep_,
               "data": self.data_, "repair": self.repair_, "restarts": self.restarts_ if self.restarts > 1 else {},
               "score": best.get("score"), "return_mean": best.get("return_mean"),
               "return_min": best.get("return_min")}
        return run

    def _run_restarts(self, dagger: DAgger | None, student: Any, teacher: Teacher, env_fn: Callable[[int], Any],
                      progress: Callable[[dict[str, Any]], None] | None) -> Any:
        """Refit the student with other seeds on its data; keep the best on held-out episodes."""
        from distill.scoring import held_out_score

        if dagger is None or self.data_ is None:
            raise InterpRLError("Restarts refit the student on its distillation data; they need DAgger (not --start or "
                                "training from scratch).")
        X, y, w = self.data_
        params = student.get_params(deep=False)
        if "random_state" not in params and self.restarts > 1:
            raise bad_value("restarts", "Distillation", f"1 for a {type(student).__name__} (it takes no seed)",
                            self.restarts)
        base = int(params.get("random_state") or 0)
        seed = dagger.seed + RESTART_SEED_OFFSET
        t0 = time.perf_counter()
        rows, students = [], []
        for k in range(self.restarts):
            cand = student if k == 0 else refit_like(clone(student).set_params(random_state=base + 1000 * k), X, y, w,
                                                     w is not None)
            score, mean, worst = held_out_score(cand, env_fn, self.restart_episodes, seed, n_envs=dagger.n_envs)
            rows.append({"restart": k, "random_state": base + 1000 * k, "score": score, "return_mean": mean,
                         "return_min": worst})
            students.append(cand)
            if progress is not None:
                progress(dict(rows[-1]))
        kept = int(np.argmax([r["score"] for r in rows]))
        self.restarts_ = {"rows": rows, "kept": kept, "episodes": self.restart_episodes,
                          "seconds": time.perf_counter() - t0}
        return students[kept]

    def _run_repair(self, dagger: DAgger | None, student: Any, teacher: Teacher, env_fn: Callable[[int], Any],
                    progress: Callable[[dict[str, Any]], None] | None) -> Any:
        """Targeted DAgger from the run-up to each failure, on DAgger's data; the student refitted as it was made."""
        if dagger is None or self.data_ is None:
            raise InterpRLError("Repair refits the student on its distillation data; it needs DAgger (not --start or "
                                "training from scratch).")
        from distill.dagger import critic_weights

        critic = dagger.weighting_ == "critic"
        rng = np.random.default_rng([dagger.seed, 77])
        rep = clone(self.repair)
        X, y, w = self.data_
        t0 = time.perf_counter()
        rep.fit(student, teacher, env_fn, X, y, w, refit=lambda X, y, w: refit_like(student, X, y, w, critic),
                label_weights=(lambda o, a: critic_weights(teacher, o, a, n_action_samples=dagger.n_action_samples,
                                                           rng=rng)) if critic else None, progress=progress)
        self.data_ = (rep.X_, rep.y_, rep.sample_weight_ if critic else None)
        self.repair_ = {"history": rep.history_, "best_round": rep.best_round_, "seconds": time.perf_counter() - t0}
        return rep.student_

    def _run_sweep(self, dagger: DAgger, teacher: Teacher, env_fn: Callable[[int], Any],
                   progress: Callable[[dict[str, Any]], None] | None) -> Any:
        """Refit DAgger's student at each sweep value on the selected round's data; keep the sparsest good one."""
        from interp_rl.rollouts import evaluate

        n = dagger.n_samples_used_
        X, y, w = dagger.X_[:n], dagger.y_[:n], dagger.sample_weight_[:n]
        base = dagger.student_
        start = base.get_params(deep=False)[self.sweep_param]
        rows: list[dict[str, Any]] = []
        students: list[Any] = []
        t0 = time.perf_counter()
        for value in [start, *[v for v in self._sweep_values() if v != start]]:
            student = clone(base).set_params(**{self.sweep_param: value})
            student = student.fit(X, y, sample_weight=w) if dagger.weighting_ == "critic" else student.fit(X, y)
            res = evaluate(student, env_fn, self.sweep_episodes, seed=dagger.seed + SWEEP_SEED_OFFSET,
                           n_envs=dagger.n_envs)
            size = student.to_controller().size()
            row = {"sweep": self.sweep_param, "value": value, **size, "return_mean": res.mean_return,
                   "return_min": float(np.min(res.returns)), "return_std": res.std_return}
            rows.append(row)
            students.append(student)
            if progress is not None:
                progress(row)
        best = max(r["return_mean"] for r in rows)
        good = [i for i, r in enumerate(rows) if r["return_mean"] >= best - self.sweep_tolerance * abs(best)]
        kept = min(good, key=lambda i: (rows[i]["parameters"], -rows[i]["return_mean"]))
        self.sweep_ = {"param": self.sweep_param, "tolerance": self.sweep_tolerance, "episodes": self.sweep_episodes,
                       "rows": rows, "best_return": best, "kept": rows[kept]["value"], "kept_index": kept,
                       "seconds": time.perf_counter() - t0}
        return students[kept]

    def _from_scratch(self, teacher: Teacher, checkpoint_dir: str | Path | None, resume: bool,
                      progress: Callable[[dict[str, Any]], None] | None) -> Any:
        import tempfile

        trainer = clone(self.scratch)
        with tempfile.TemporaryDirectory() as tmp:  # without a checkpoint folder the run cannot resume anyway
            run = Path(checkpoint_dir) / "scratch" if checkpoint_dir is not None else Path(tmp) / "scratch"
            trainer.fit(clone((self.dagger or DAgger()).student), teacher, checkpoint_dir=run, resume=resume,
                        progress=progress)
        meta = trainer.meta_
        self.scratch_ = {"algo": trainer.algo, "steps": trainer.n_steps, "seconds": trainer.seconds_,
                         "history": trainer.history_, "kept_step": meta.get("model_step"),
                         "kept_return": meta.get("model_eval_return")}
        return trainer.student_


def _tagged(progress: Callable[[dict[str, Any]], None], level: int) -> Callable[[dict[str, Any]], None]:
    """``progress`` with every row tagged by the DART level's index (levels may run side by side)."""
    return lambda row: progress({**row, "level": level})


def refit_like(student: Any, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, weighted: bool) -> Any:
    """A new student with ``student``'s settings (size limits, seed, bounds) fitted on ``X``, ``y``."""
    fresh = clone(student)
    return fresh.fit(X, y, sample_weight=w) if weighted else fresh.fit(X, y)


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

    def _progress(row: dict[str, Any]) -> None:
        if "round" in row:  # a DAgger round
            level = int(row.get("level", 0))
            rounds_now[level] = rounds_now.get(level, 0) + 1
        if progress is not None:
            progress(row)

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
