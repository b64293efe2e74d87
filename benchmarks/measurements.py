"""What a benchmark cell measures once its controller is made, as a registry the harness iterates.

A :class:`Measurement` is one function of the finished cell (:class:`CellRun`) that gives one field of its record
(:class:`benchmarks.record.BenchRecord`); :data:`MEASUREMENTS` holds them in the order they run. What several
measurements share (the evaluation of teacher and controller, the failure-rate episodes, the visited states, the
latencies) is computed once, on first use, by the :class:`CellRun`. A new measurement is one function and one
:func:`register_measurement` call; its value lands in the record after the built-in fields::

    from benchmarks.measurements import register_measurement

    @register_measurement("first_action")
    def first_action(run):
        return run.controller.predict(run.states[:1])[0].tolist()

This module holds the registry and the built-in measurements together, so nothing imports it back.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.record import (
    FailureRate,
    FewerPieces,
    Fidelity,
    Latency,
    PieceUsage,
    Size,
    StudentResult,
    TeacherResult,
)
from benchmarks.suite import Cell
from distill.methods import JOB_DEFAULTS
from interp_rl.io import atomic_write
from interp_rl.seeds import FAILURE_SEED_OFFSET

__all__ = ["IDLE_SHARE", "MEASUREMENTS", "CellRun", "Measurement", "piece_usage", "register_measurement",
           "teacher_runs", "unregister_measurement", "without_idle"]

#: A piece (expert, leaf) acting on fewer than this share of the controller's states is idle.
IDLE_SHARE = 0.02

#: What the latency figures time against what, in the record's words.
LATENCY_COMPARES = ("single: SB3 model.predict (the call a user makes) against the exported Python act(); "
                    "forward: the teacher network's bare forward pass (torch, no_grad) against the C act() "
                    "timed in a C loop; batch: batched predict per observation, teacher against controller")


@dataclass
class CellRun:
    """A cell whose controller is made: what every measurement reads. Shared results are computed on first use."""

    cell: Cell
    suite: dict[str, Any]
    """The suite as plain data (``Suite.to_dict()``)."""
    teacher: Any
    """The loaded teacher (``envs.load_teacher``)."""
    provenance: dict[str, Any]
    """Where the teacher comes from: ``name``, ``source``, ``algo``, ``task``, ``variant``."""
    controller: Any
    """The controller the cell made (``interp_rl.program.Controller``)."""
    made: dict[str, Any]
    """What distilling it recorded (its folder's ``metrics.json``)."""
    work: Path
    """The cell's folder (``RESULTS/cells/CELL``)."""
    exports: dict[str, Path]
    """The controller's exports by format (``json``, ``python``, ``c``)."""

    @property
    def seed(self) -> int:
        return int(self.cell.seed)

    @property
    def episodes(self) -> int:
        """The suite's evaluation episodes (reset seeds ``seed``, ``seed + 1``, ...)."""
        return int(self.suite["episodes"])

    @functools.cached_property
    def evaluation(self) -> dict[str, Any]:
        """Teacher and controller on the same evaluation episodes, and action fidelity
        (:func:`interp_rl.compare.compare`)."""
        from interp_rl.compare import compare

        steps = int(self.suite["fidelity_steps"])
        result, states = teacher_runs(self.work.parents[1], self.provenance, self.teacher, episodes=self.episodes,
                                      seed=self.seed, fidelity_steps=steps)
        return compare(self.controller, self.teacher, self.teacher.env_fn, episodes=self.episodes, seed=self.seed,
                       fidelity_steps=steps, teacher_result=result, teacher_states=states)

    @functools.cached_property
    def failure_rate(self) -> tuple[FailureRate | None, np.ndarray | None]:
        """How often the controller fails: the share of the suite's ``rate_episodes`` extra episodes below half the
        teacher's mean; and every state those episodes visited (``None`` when the suite runs none)."""
        episodes = int(self.suite.get("rate_episodes", 0))
        if episodes <= 0:
            return None, None
        from interp_rl.compare import half_of_teacher, percent_of_teacher
        from interp_rl.rollouts import evaluate

        seen: list[np.ndarray] = []
        controller, teacher_mean = self.controller, self.evaluation["teacher_return"]

        def act(obs: np.ndarray, _episodes: np.ndarray) -> np.ndarray:
            seen.append(np.array(obs, dtype=np.float64))
            return np.asarray(controller.predict(obs), dtype=np.float64)

        first = self.seed + FAILURE_SEED_OFFSET
        returns: np.ndarray = np.asarray(evaluate(act, self.teacher.env_fn, episodes,  # type: ignore[arg-type]
                                                  seed=first).returns)
        threshold = half_of_teacher(teacher_mean)
        below = int((returns < threshold).sum())
        return (FailureRate(episodes=episodes, first_seed=first, threshold=threshold, below_half=below,
                            rate=below / episodes,
                            worst_percent_of_teacher=percent_of_teacher(float(returns.min()), teacher_mean)
                            if teacher_mean else None, returns=returns.tolist()),
                np.concatenate(seen))

    @functools.cached_property
    def states(self) -> np.ndarray:
        """States the controller visits (the suite's ``latency_batch`` of them, from reset seed ``seed``): for
        latency, and for the report's explanations, which read them from the cell's ``states.npy``."""
        from interp_rl.rollouts import collect

        states = collect(self.controller, self.teacher.env_fn, int(self.suite["latency_batch"]),
                         self.seed).observations
        _save_npy(self.work / "states.npy", states)
        return states

    @functools.cached_property
    def teacher_latency(self) -> dict[str, float]:
        from benchmarks.latency import teacher_latency

        return teacher_latency(self.teacher, self.states)

    @functools.cached_property
    def controller_latency(self) -> dict[str, Any]:
        from benchmarks.latency import controller_latency

        return controller_latency(self.controller, self.work, self.states)


@dataclass(frozen=True)
class Measurement:
    """One field of a cell's record: its name and the function of the finished cell that gives its value."""

    name: str
    measure: Callable[[CellRun], Any]


#: Every measurement by the record field it fills, in the order a cell runs them.
MEASUREMENTS: dict[str, Measurement] = {}


def register_measurement(name: str) -> Callable[[Callable[[CellRun], Any]], Callable[[CellRun], Any]]:
    """Register ``fn(run) -> value`` as the measurement of the record field ``name`` (run after those registered
    before it); a name already registered is replaced in place."""

    def add(fn: Callable[[CellRun], Any]) -> Callable[[CellRun], Any]:
        MEASUREMENTS[name] = Measurement(name, fn)
        return fn

    return add


def unregister_measurement(name: str) -> None:
    """Remove the measurement ``name`` (one registered for a while, as a test does); unknown names are ignored."""
    MEASUREMENTS.pop(name, None)


#: Where a results folder keeps its teachers' own runs (:func:`teacher_runs`), one file per teacher, seed and suite
#: setting: the cells of one teacher and seed share them.
TEACHER_RUNS = ".teacher-runs"


def teacher_runs(results: Path, provenance: dict[str, Any], teacher: Any, *, episodes: int, seed: int,
                 fidelity_steps: int) -> tuple[Any, Any]:
    """The teacher's evaluation episodes (:func:`interp_rl.rollouts.evaluate`) and the states it visits with its
    actions (:func:`interp_rl.rollouts.collect`), as every cell of this teacher and seed compares its controller
    with them: run by the first cell that needs them, under a lock, and kept in ``RESULTS/.teacher-runs`` (NumPy
    arrays, no pickles) for the others, which read the same numbers instead of playing the same episodes again."""
    import hashlib
    import json

    from filelock import FileLock

    from interp_rl.rollouts import EvalResult, Rollout, collect, evaluate

    key = {"teacher": provenance, "episodes": episodes, "seed": seed, "fidelity_steps": fidelity_steps}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    folder = Path(results) / TEACHER_RUNS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{provenance.get('name', 'teacher')}__seed{seed}__{digest}.npz"
    with FileLock(str(path.with_suffix(".lock"))):
        if not path.is_file():
            ev = evaluate(teacher, teacher.env_fn, episodes, seed)
            on = collect(teacher, teacher.env_fn, fidelity_steps, seed)
            arrays = {"returns": np.asarray(ev.returns, dtype=np.float64),
                      "lengths": np.asarray(ev.lengths, dtype=np.int64),
                      "seeds": np.asarray(ev.seeds, dtype=np.int64), "observations": on.observations,
                      "actions": on.actions, "rewards": on.rewards, "episode_starts": on.episode_starts,
                      "episode_index": on.episodes}

            def _w(tmp: str) -> None:
                with open(tmp, "wb") as fh:
                    np.savez(fh, **arrays)

            atomic_write(path, _w)
        with np.load(path, allow_pickle=False) as z:
            result = EvalResult(returns=z["returns"].tolist(), lengths=z["lengths"].tolist(),
                                seeds=z["seeds"].tolist())
            states = Rollout(observations=z["observations"], actions=z["actions"], rewards=z["rewards"],
                             episode_starts=z["episode_starts"], episodes=z["episode_index"])
    return result, states


def _save_npy(path: Path, array: np.ndarray) -> None:
    def _w(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.save(fh, array, allow_pickle=False)

    atomic_write(path, _w)


def _speedup(teacher_s: float, student_s: float | None) -> float | None:
    return teacher_s / student_s if student_s else None


def piece_usage(controller: Any, states: np.ndarray, episodes: int | None = None) -> PieceUsage | None:
    """Share of the controller-visited ``states`` (from ``episodes`` whole episodes, when given) on which each
    piece (leaf, expert) acts; None if not piecewise. Its ``without_idle`` is left ``None`` (see
    :func:`without_idle`)."""
    if not controller.program.can("affine"):
        return None
    pieces = controller.program.affine_pieces()
    which = pieces.assign(states)
    count = np.bincount(which, minlength=len(pieces.intercept)) / max(len(states), 1)
    acting = pieces.acting_pieces()
    return PieceUsage(states=int(len(states)), episodes=episodes,
                      shares={pieces.labels[i]: float(count[i]) for i in acting},
                      idle=int(sum(count[i] < IDLE_SHARE for i in acting)), without_idle=None)


def without_idle(controller: Any, usage: PieceUsage | None, env_fn: Any, teacher_returns: list[float],
                 seed: int) -> FewerPieces | None:
    """Whether fewer pieces suffice: a controller with idle pieces (see :data:`IDLE_SHARE`) run without them
    (``Program.without_pieces``) on the cell's evaluation episodes (reset seeds ``seed ...``, one per teacher
    return); ``None`` when no piece is idle or the kind cannot drop pieces (a tree, a routing tree). The
    record's ``experts`` is the number of pieces left."""
    from interp_rl.compare import percent_of_teacher
    from interp_rl.rollouts import evaluate

    program = controller.program
    if usage is None:
        return None
    pieces = program.affine_pieces()
    acting = pieces.acting_pieces()
    idle = [i for i in acting if usage.shares.get(pieces.labels[i], 0.0) < IDLE_SHARE]
    if not idle or len(idle) == len(acting):
        return None
    if not program.can("drop_pieces"):  # a tree's leaves, a routing tree's experts
        return None
    fewer = dataclasses.replace(controller, program=program.without_pieces(idle))
    returns = evaluate(fewer, env_fn, len(teacher_returns), seed=seed).returns
    t_mean = float(np.mean(teacher_returns))
    return FewerPieces(dropped=[pieces.labels[i] for i in idle], experts=len(acting) - len(idle),
                       parameters=fewer.size()["parameters"], return_mean=float(np.mean(returns)),
                       percent_of_teacher=percent_of_teacher(float(np.mean(returns)), t_mean),
                       worst_percent_of_teacher=percent_of_teacher(float(min(returns)), t_mean),
                       returns=list(returns))


# ------------------------------------------------------------------------------------------ the built-in ones


@register_measurement("teacher")
def _teacher(run: CellRun) -> TeacherResult:
    ev = run.evaluation
    return TeacherResult(**run.provenance, return_mean=ev["teacher_return"], return_std=ev["teacher_return_std"],
                         returns=ev["teacher_returns"])


@register_measurement("student")
def _student(run: CellRun) -> StudentResult:
    ev = run.evaluation
    return StudentResult(return_mean=ev["student_return"], return_std=ev["student_return_std"],
                         returns=ev["student_returns"], lengths=ev["student_lengths"],
                         worst_return=ev["worst_student_return"])


@register_measurement("percent_of_teacher")
def _percent_of_teacher(run: CellRun) -> float:
    return run.evaluation["percent_of_teacher"]


@register_measurement("worst_percent_of_teacher")
def _worst_percent_of_teacher(run: CellRun) -> float:
    return run.evaluation["worst_percent_of_teacher"]


@register_measurement("failures")
def _failures(run: CellRun) -> FailureRate | None:
    return run.failure_rate[0]


@register_measurement("fidelity")
def _fidelity(run: CellRun) -> Fidelity:
    ev = run.evaluation
    return Fidelity(teacher_states=ev["fidelity_teacher_states"], student_states=ev["fidelity_student_states"],
                    steps=int(run.suite["fidelity_steps"]))


@register_measurement("usage")
def _usage(run: CellRun) -> PieceUsage | None:
    """Which pieces act, over every state of the failure-rate episodes (else the latency states)."""
    seen = run.failure_rate[1]
    usage = (piece_usage(run.controller, run.states) if seen is None
             else piece_usage(run.controller, seen, int(run.suite.get("rate_episodes", 0))))
    if usage is not None:
        usage.without_idle = without_idle(run.controller, usage, run.teacher.env_fn,
                                          run.evaluation["teacher_returns"], run.seed)
    return usage


@register_measurement("size")
def _size(run: CellRun) -> Size:
    return Size.of(run.controller.size(), {k: Path(p).stat().st_size for k, p in run.exports.items()})


@register_measurement("latency")
def _latency(run: CellRun) -> Latency:
    t, s = run.teacher_latency, run.controller_latency
    return Latency(compares=LATENCY_COMPARES, teacher_single_s=t["single_s"], teacher_forward_s=t["forward_s"],
                   teacher_batch_s_per_obs=t["batch_s_per_obs"], student_single_s=s["single_s"],
                   student_batch_s_per_obs=s["batch_s_per_obs"], student_c_native_s=s["c_native_s"],
                   batch=len(run.states), speedup_single=_speedup(t["single_s"], s["single_s"]),
                   speedup_batch=_speedup(t["batch_s_per_obs"], s["batch_s_per_obs"]),
                   speedup_c_native=_speedup(t["single_s"], s["c_native_s"]),
                   speedup_c_vs_forward=_speedup(t["forward_s"], s["c_native_s"]))


@register_measurement("distill_seconds")
def _distill_seconds(run: CellRun) -> float:
    return run.made["distill_seconds"]


@register_measurement("attribution_agreement")
def _attribution_agreement(run: CellRun) -> dict[str, Any] | None:
    from interp_rl.attribution import teacher_agreement

    states = int(run.suite.get("attribution_states", JOB_DEFAULTS["attribution_states"]))
    return teacher_agreement(run.teacher, run.controller, states, run.seed)


#: What distilling recorded that the record keeps (from the cell's ``metrics.json``).
DETAILS = ("weighting", "best_round", "samples", "dagger_history", "tuning", "rl", "fit_facts", "start", "scratch",
           "sweep", "repair", "restarts", "noise_levels", "rl_levels", "feature_subset")


@register_measurement("details")
def _details(run: CellRun) -> dict[str, Any]:
    return {k: run.made.get(k) for k in DETAILS}


@register_measurement("verification")
def _verification(run: CellRun) -> dict[str, Any] | None:
    """The verdicts of the suite's property file for the controller's task (``None`` when it names none)."""
    from interp_rl.verify import load_properties, verify

    file = (run.suite.get("properties") or {}).get(run.teacher.task)
    if file is None:
        return None
    controller, teacher = run.controller, run.teacher
    props = load_properties(file, features=controller.features, actions=controller.actions)
    bounds = None
    if props.domain.source == "task":
        env = teacher.env_fn(0)
        bounds = (env.observation_space.low, env.observation_space.high)
        env.close()
    result = verify(controller, props, states=run.states, task_bounds=bounds)
    return {"properties": Path(file).name, "counts": result.counts(), "seconds": result.seconds,
            "verdicts": [{"name": v.name, "status": v.status, "reason": v.reason, "regions": v.regions,
                          "seconds": v.seconds, "failing_regions": len(v.failing),
                          "sampled": result.sampled[v.name].to_dict() if v.name in result.sampled else None}
                         for v in result.verdicts]}
