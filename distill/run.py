"""One distillation job: teacher in, a folder with the controller, its pictures, exports and metrics out.

:func:`distill_tree` is what ``interp-rl distill tree`` calls once it has
loaded the teacher; the benchmarks call it too.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import mean_squared_error, r2_score

from distill.dagger import DAgger
from distill.finetune import LeafTuner
from distill.prune import collapse_similar
from distill.tree import TreePolicy
from interp_rl._validation import check_choice, check_float, check_int
from interp_rl.errors import InterpRLError, InvalidParameterError
from interp_rl.io import atomic_write_text, json_safe
from interp_rl.program import Controller, Signal
from interp_rl.rollouts import EvalResult, collect, evaluate

__all__ = ["TreeDistillConfig", "distill_tree", "fidelity", "student_metrics"]

log = logging.getLogger(__name__)
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.json"


@dataclass(frozen=True)
class TreeDistillConfig:
    """Settings of one tree distillation (written, resolved, beside every output)."""

    max_leaves: int | None = 64
    """Leaf limit of the tree (>= 2; None for no limit)."""
    max_depth: int | None = None
    """Depth limit of the tree (1-32; None for no limit)."""
    leaf_model: str = "linear"
    """'constant' or 'linear' (sparse-linear) leaves."""
    max_leaf_terms: int | None = None
    """With linear leaves, at most this many features per action and leaf (None: all)."""
    split_on: str = "auto"
    """'constant' (CART), 'linear' (model tree, for linear leaves), 'residual', or 'auto': linear for
    linear leaves, constant otherwise."""
    iterations: int = 12
    """DAgger rounds after the teacher's rollouts (0: behaviour cloning)."""
    steps: int = 10_000
    """Environment steps collected per round."""
    beta_decay: float = 0.7
    """Round i follows the teacher with probability beta_decay**i (0: plain DAgger)."""
    weighting: str = "auto"
    """'auto' (critic when the teacher has a Q-function), 'critic' or 'none'."""
    select_episodes: int = 5
    """Episodes scoring each round (held-out seeds); the best round is kept."""
    tune_iterations: int = 0
    """ARS updates of the leaf parameters on the real return after distillation (0: off)."""
    tune_directions: int = 8
    """Random directions per ARS update."""
    tune_step: float = 0.02
    """ARS step size."""
    tune_noise: float = 0.03
    """ARS perturbation, in action units."""
    collapse_atol: float = 0.0
    """Merge sibling leaves whose parameters differ by at most this (0: off)."""
    eval_episodes: int = 10
    """Episodes of the final evaluation of teacher and student (seeds seed, seed+1, ...)."""
    fidelity_steps: int = 2000
    """Steps of teacher- and student-visited states on which action fidelity is measured."""
    seed: int = 0
    """Seeds everything: rollouts, tree, evaluation."""

    def validate(self) -> TreeDistillConfig:
        owner = "distill tree"
        if self.max_leaves is not None:
            check_int(self.max_leaves, "max_leaves", owner, low=2)
        if self.max_depth is not None:
            check_int(self.max_depth, "max_depth", owner, low=1, high=32)
        check_choice(self.leaf_model, "leaf_model", owner, ["constant", "linear"])
        check_choice(self.split_on, "split_on", owner, ["auto", "constant", "residual", "linear"])
        if self.max_leaf_terms is not None:
            check_int(self.max_leaf_terms, "max_leaf_terms", owner, low=1)
        check_int(self.iterations, "iterations", owner, low=0)
        check_int(self.steps, "steps", owner)
        check_int(self.select_episodes, "select_episodes", owner, low=0)
        check_int(self.tune_iterations, "tune_iterations", owner, low=0)
        check_int(self.tune_directions, "tune_directions", owner)
        check_float(self.tune_step, "tune_step", owner, low_open=True)
        check_float(self.tune_noise, "tune_noise", owner, low_open=True)
        check_float(self.beta_decay, "beta_decay", owner, high=1.0)
        check_choice(self.weighting, "weighting", owner, ["auto", "critic", "none"])
        check_int(self.eval_episodes, "eval_episodes", owner)
        check_int(self.fidelity_steps, "fidelity_steps", owner)
        check_int(self.seed, "seed", owner, low=0)
        if not (self.collapse_atol >= 0 and math.isfinite(self.collapse_atol)):
            raise InvalidParameterError(
                f"The 'collapse_atol' parameter of {owner} must be a float in [0.0, inf). "
                f"Got {self.collapse_atol!r} instead."
            )
        if self.split_on == "auto":
            return replace(self, split_on="linear" if self.leaf_model == "linear" else "constant")
        if self.split_on != "constant" and self.leaf_model != "linear":
            raise InvalidParameterError(
                f"split_on={self.split_on!r} chooses splits for linear leaves; use leaf_model='linear' "
                "or split_on='constant'."
            )
        return self

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TreeDistillConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise InvalidParameterError(
                f"Unknown tree distillation setting(s): {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}."
            )
        return cls(**d)

    def student(self) -> TreePolicy:
        return TreePolicy(max_leaves=self.max_leaves, max_depth=self.max_depth, leaf_model=self.leaf_model,
                          max_leaf_terms=self.max_leaf_terms, split_on=self.split_on,
                          random_state=self.seed)


def fidelity(student: Any, observations: np.ndarray, teacher_actions: np.ndarray) -> dict[str, float]:
    """R² and MSE of the student's actions against the teacher's on given states."""
    pred = np.asarray(student.predict(observations)).reshape(teacher_actions.shape)
    return {"r2": float(r2_score(teacher_actions, pred)),
            "mse": float(mean_squared_error(teacher_actions, pred))}


def student_metrics(student: Any, teacher: Any, env_fn: Callable[[int], Any], *, episodes: int, seed: int,
                    fidelity_steps: int, teacher_result: EvalResult | None = None) -> dict[str, Any]:
    """Return of teacher and student on the same episodes, and action fidelity on both state distributions."""
    t_res = teacher_result or evaluate(teacher, env_fn, episodes, seed)
    s_res = evaluate(student, env_fn, episodes, seed)
    on_teacher = collect(teacher, env_fn, fidelity_steps, seed)
    on_student = collect(student, env_fn, fidelity_steps, seed, labeller=teacher)
    t_mean = t_res.mean_return
    return {
        "episodes": episodes,
        "seed": seed,
        "teacher_return": t_mean,
        "teacher_return_std": t_res.std_return,
        "teacher_returns": t_res.returns,
        "student_return": s_res.mean_return,
        "student_return_std": s_res.std_return,
        "student_returns": s_res.returns,
        "student_lengths": s_res.lengths,
        "percent_of_teacher": 100.0 * s_res.mean_return / t_mean if t_mean else float("nan"),
        "fidelity_teacher_states": fidelity(student, on_teacher.observations, on_teacher.actions),
        "fidelity_student_states": fidelity(student, on_student.observations, on_student.actions),
    }


def distill_tree(
    teacher: Any,
    env_fn: Callable[[int], Any],
    config: TreeDistillConfig,
    out_dir: str | Path,
    *,
    features: Sequence[Signal] | None = None,
    actions: Sequence[Signal] | None = None,
    task: str = "",
    provenance: dict[str, Any] | None = None,
    resume: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
    render_picture: bool = True,
    evaluate_student: bool = True,
) -> dict[str, Any]:
    """Distil ``teacher`` into a tree and write everything about it to ``out_dir``.

    Writes ``controller.json`` (loads back to identical actions), ``controller.py``
    and ``controller.c`` (standalone exports), ``rules.txt``, ``tree.dot`` and
    ``tree.svg``, ``metrics.json`` and the resolved ``config.json``; the
    DAgger rounds are kept in ``out_dir/checkpoint`` so an interrupted run
    loses no completed round (``resume=True`` continues it). With
    ``evaluate_student=False`` the final evaluation (returns and fidelity) is left to
    the caller, as the benchmark harness does for every method alike.

    Returns
    -------
    dict
        The metrics written to ``metrics.json``.
    """
    from interp_rl.export import write_exports
    from interp_rl.viz import export_text, render, to_dot

    config = config.validate()
    out = Path(out_dir)
    ckpt = out / "checkpoint"
    if (out / METRICS_FILE).exists() and not resume:
        raise InterpRLError(f"{str(out)!r} already holds a distilled controller; choose another --out.")
    if ckpt.exists() and not resume:
        raise InterpRLError(
            f"{str(out)!r} holds an unfinished distillation; pass --resume to continue it or choose "
            "another --out."
        )
    if resume and (out / CONFIG_FILE).is_file():
        saved = json.loads((out / CONFIG_FILE).read_text())
        if saved.get("config") != asdict(config):
            diff = sorted(k for k, v in asdict(config).items() if saved.get("config", {}).get(k) != v)
            raise InterpRLError(f"Cannot resume {str(out)!r} with different settings ({', '.join(diff)}).")
    out.mkdir(parents=True, exist_ok=True)
    resolved = {"config": asdict(config), "task": task, "teacher": provenance or {}}
    atomic_write_text(out / CONFIG_FILE, json.dumps(resolved, indent=1) + "\n")

    t0 = time.perf_counter()
    dagger = DAgger(
        config.student(), n_iter=config.iterations, steps=config.steps, beta_decay=config.beta_decay,
        weighting=config.weighting, eval_episodes=config.select_episodes, seed=config.seed,
        checkpoint_dir=ckpt,
    )
    rounds_run = 0

    def _progress(row: dict[str, Any]) -> None:
        nonlocal rounds_run
        rounds_run += 1
        if progress is not None:
            progress(row)

    dagger.fit(teacher, env_fn, resume=resume, progress=_progress)
    student = dagger.student_
    tuning: dict[str, Any] = {}
    if config.tune_iterations > 0:
        tuner = LeafTuner(n_iter=config.tune_iterations, n_directions=config.tune_directions,
                          step_size=config.tune_step, noise=config.tune_noise,
                          eval_episodes=max(config.select_episodes, 1), seed=config.seed)
        t_tune = time.perf_counter()
        tuner.fit(student, env_fn, feature_scale=dagger.X_.std(axis=0), progress=progress)
        student = tuner.student_
        tuning = {"initial_return": tuner.initial_return_, "best_return": tuner.best_return_,
                  "history": tuner.history_, "seconds": time.perf_counter() - t_tune}
    if config.collapse_atol > 0:
        student = collapse_similar(student, config.collapse_atol)
    # Rounds finished before an interruption count too: each round records its own time.
    seconds = sum(r["seconds"] for r in dagger.history_) + (time.perf_counter() - t0 - sum(
        r["seconds"] for r in dagger.history_[len(dagger.history_) - rounds_run:]))

    program = student.tree_
    metrics: dict[str, Any] = {
        "method": "tree",
        "task": task,
        "leaves": program.n_leaves,
        "depth": program.depth,
        "leaf_model": config.leaf_model,
        "linear_terms": program.n_terms,
        "parameters": program.n_parameters,
        "weighting": dagger.weighting_,
        "best_round": dagger.best_round_,
        "samples": dagger.n_samples_used_,
        "distill_seconds": seconds,
        "dagger_history": dagger.history_,
        "tuning": tuning,
    }
    metadata: dict[str, Any] = {"method": "tree", "config": asdict(config), "teacher": provenance or {}}
    if evaluate_student:
        metrics.update(student_metrics(student, teacher, env_fn, episodes=config.eval_episodes,
                                       seed=config.seed, fidelity_steps=config.fidelity_steps))
        shown = ("teacher_return", "student_return", "percent_of_teacher")
        metadata["metrics"] = {k: metrics[k] for k in shown}
    controller = Controller(program, features=list(features or []), actions=list(actions or []), task=task,
                            metadata=metadata)
    paths = write_exports(controller, out)
    metrics["export_bytes"] = {k: Path(p).stat().st_size for k, p in paths.items()}
    atomic_write_text(out / "rules.txt", export_text(controller) + "\n")
    dot = to_dot(controller, title=f"{task} tree ({program.n_leaves} leaves)" if task else None)
    atomic_write_text(out / "tree.dot", dot)
    if render_picture:
        try:
            render(dot, out / "tree.svg")
        except InterpRLError as exc:  # no graphviz binary: everything else is still written
            log.warning("%s", exc)
            metrics["picture_error"] = str(exc)
    atomic_write_text(out / METRICS_FILE, json.dumps(json_safe(metrics), indent=1) + "\n")
    shutil.rmtree(ckpt, ignore_errors=True)
    return metrics

