"""Repair from diagnosis: targeted DAgger on the states where the controller fails.

:class:`FailureRepair` runs the controller on fresh episodes, finds the ones it fails (below half the teacher's
mean on the same seeds) and their points of no return (:func:`interp_rl.diagnose.points_of_no_return`, bisected
teacher takeovers), then goes back to the run-up: it restores the exact simulator state every ``stride`` steps
in the ``window`` steps before each point of no return, runs ``horizon`` steps from there with controller and teacher
mixed as DAgger mixes them (the controller alone would replay the recorded failure exactly) while the teacher labels
every state, adds those rows to the distillation data and refits the student. Plain
DAgger rarely visits these states: a failure is rare, and the states before it are rarer still in the data.
Each round's student is scored on held-out episodes; the best one (the starting student included) is kept, so
a repair never makes the controller worse on the episodes that choose it, and the next round diagnoses the best
one so far (a worse refit does not feed on its own failures). A round adds at most ``max_rows`` rows, a DAgger
round's worth, so the repair data cannot swamp the distillation data.

The size limits are the student's own (``max_parameters``, ``max_leaves``): a repaired controller is refitted
within the same budget.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from distill.events import RepairRound
from distill.scoring import held_out_score
from interp_rl.compare import half_of_teacher
from interp_rl.io import atomic_write_text, json_safe
from interp_rl.rollouts import mixture, run_episodes
from interp_rl.seeds import REPAIR_SEED_OFFSET, REPAIR_SELECTION_SEED_OFFSET
from interp_rl.teachers import Teacher, check_teacher
from interp_rl.threads import one_blas_thread
from interp_rl.validation import check_float, check_int

__all__ = ["REPAIR_SEED_OFFSET", "FailureRepair", "held_out_score", "repair_controller"]



def _progress_row(row: dict[str, Any]) -> RepairRound:
    """A repair round's history row as its progress event (its number is ``repair_round``: a ``round`` is DAgger's)."""
    details = {"repair_round": row["round"], **{k: v for k, v in row.items() if k != "round"}}
    return RepairRound(repair_round=row["round"], return_mean=row.get("return_mean"), failed=row.get("failed"),
                       episodes=row.get("episodes"), details=details)


class FailureRepair(BaseEstimator):
    """Targeted DAgger from the run-up to each failure (see the module docstring).

    Parameters
    ----------
    n_rounds : int, default=0
        Repair rounds (0: off). Each round diagnoses ``episodes`` new episodes.
    episodes : int, default=50
        Fresh episodes per round in which failures are looked for.
    window : int, default=100
        Steps before each point of no return whose states are revisited.
    stride : int, default=4
        Every ``stride``-th state of the window is restored.
    horizon : int, default=50
        Steps run from each restored state, the teacher labelling every state.
    beta : float, default=0.5
        At each of those steps the teacher acts with probability ``beta``, the controller otherwise (DAgger's
        mixing). The controller alone would only replay the recorded failure (a restore is exact); mixing makes
        the rollouts leave it, towards the states from which the teacher recovers.
    weight : float, default=1.0
        Sample weight of the new rows relative to the distillation data's.
    max_rows : int, default=10_000
        Rows a round adds at most (as many as a DAgger round's steps): the restored states are subsampled to fit.
    select_episodes : int, default=20
        Held-out episodes scoring each round's student (and the starting one): the mean of the mean return and of
        the worst quarter's mean return.
    n_envs : int, default=8
        Environments stepped together.
    seed : int, default=0
        Seeds the episodes (``seed + REPAIR_SEED_OFFSET ...``).

    Attributes
    ----------
    student_ : estimator
        The kept student.
    X_, y_, sample_weight_ : ndarray
        The data it was fitted on (the distillation data plus the repair rows of the rounds up to the kept one).
    history_ : list of dict
        Per round (round 0: the starting student): failures found, rows added, held-out return, seconds.
    best_round_ : int
    """

    def __init__(self, n_rounds: int = 0, *, episodes: int = 50, window: int = 100, stride: int = 4,
                 horizon: int = 50, beta: float = 0.5, weight: float = 1.0, max_rows: int = 10_000,
                 select_episodes: int = 20, n_envs: int = 8, seed: int = 0) -> None:
        self.n_rounds = n_rounds
        self.episodes = episodes
        self.window = window
        self.stride = stride
        self.horizon = horizon
        self.beta = beta
        self.weight = weight
        self.max_rows = max_rows
        self.select_episodes = select_episodes
        self.n_envs = n_envs
        self.seed = seed

    def _validate_params(self) -> None:
        owner = "FailureRepair"
        check_int(self.n_rounds, "n_rounds", owner, low=0)
        for name in ("episodes", "window", "stride", "horizon", "max_rows", "select_episodes", "n_envs"):
            check_int(getattr(self, name), name, owner)
        check_float(self.weight, "weight", owner, low_open=True)
        check_float(self.beta, "beta", owner, high=1.0)
        check_int(self.seed, "seed", owner, low=0)

    def _score(self, student: Any, env_fn: Callable[[int], Any]) -> tuple[float, float, float]:
        return held_out_score(student, env_fn, self.select_episodes, self.seed + REPAIR_SELECTION_SEED_OFFSET,
                              n_envs=self.n_envs)

    def fit(self, student: Any, teacher: Teacher, env_fn: Callable[[int], Any] | None, X: np.ndarray,
            y: np.ndarray, sample_weight: np.ndarray | None, *, refit: Callable[..., Any],
            label_weights: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
            progress: Callable[[dict[str, Any]], None] | None = None, keep_start: bool = True) -> FailureRepair:
        """Repair ``student`` (fitted on ``X``, ``y``, ``sample_weight``).

        ``refit(X, y, w)`` fits a new student of the same kind and budget (DAgger's own ``_fit_student``);
        ``label_weights(obs, actions)`` gives the new rows' weights before ``weight`` (the critic weights of a
        critic-weighted distillation; default all ones). With ``keep_start=False`` the starting student does not
        compete (it was fine-tuned on the return, a refitted one is not yet): a round's student is kept if any
        round found failures to learn from.
        """
        from interp_rl.diagnose import points_of_no_return

        self._validate_params()
        check_teacher(teacher, "FailureRepair")
        env_fn = env_fn if env_fn is not None else teacher.env_fn
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(len(X), -1)
        w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        t0 = time.perf_counter()
        score, mean, worst = self._score(student, env_fn)
        history: list[dict[str, Any]] = [{"round": 0, "failed": None, "rows": 0, "score": score, "return_mean": mean,
                                          "return_min": worst, "seconds": time.perf_counter() - t0}]
        if progress is not None:
            progress(_progress_row(history[0]))
        kept = (score if keep_start else -np.inf, student, X, y, w)
        rng = np.random.default_rng([self.seed, 27])
        for rnd in range(1, self.n_rounds + 1):
            current = kept[1]  # the best student so far is diagnosed: a worse refit does not feed on its own failures
            t0 = time.perf_counter()
            first = self.seed + REPAIR_SEED_OFFSET + (rnd - 1) * self.episodes
            seeds = list(range(first, first + self.episodes))
            t_run = run_episodes(teacher, env_fn, seeds, n_envs=self.n_envs)
            t_fell = t_run.terminated
            threshold = half_of_teacher(float(np.mean(t_run.returns)))
            c_run = run_episodes(current, env_fn, seeds, n_envs=self.n_envs, record=True, snapshots=True)
            ro = c_run.rollout
            assert ro is not None
            bad = [i for i, r in enumerate(c_run.returns) if r < threshold]
            rows = {i: np.flatnonzero(ro.episodes == i) for i in bad}
            found = points_of_no_return(
                teacher, env_fn, [[ro.states[r] for r in rows[i]] for i in bad], [ro.rewards[rows[i]] for i in bad],
                threshold, recovered_at_start=[t_run.returns[i] >= threshold for i in bad],
                stays_up=[not fell for fell in np.asarray(t_fell)[bad]] if bad else [], n_envs=self.n_envs)
            starts = []
            for i, (pnr, _) in zip(bad, found, strict=True):
                if pnr is None:
                    continue
                steps = range(max(0, pnr - self.window), pnr, self.stride)
                starts += [ro.states[rows[i][s]] for s in steps]
            cap = max(1, self.max_rows // self.horizon)
            if len(starts) > cap:
                starts = [starts[i] for i in sorted(rng.choice(len(starts), size=cap, replace=False))]
            row: dict[str, Any] = {"round": rnd, "failed": len(bad), "episodes": self.episodes, "starts": len(starts)}
            if starts:
                ran = run_episodes(mixture(teacher, current, self.beta, rng), env_fn, starts, n_envs=2 * self.n_envs,
                                   record=True, episode_steps=self.horizon)
                assert ran.rollout is not None
                new_x, new_y = ran.rollout.observations, ran.rollout.actions
                new_w = label_weights(new_x, new_y) if label_weights is not None else np.ones(len(new_x))
                X, y = np.concatenate([X, new_x]), np.concatenate([y, new_y])
                w = np.concatenate([w, self.weight * np.asarray(new_w, dtype=np.float64)])
                current = refit(X, y, w)
                row["rows"] = len(new_x)
                row["score"], row["return_mean"], row["return_min"] = self._score(current, env_fn)
                if row["score"] > kept[0]:
                    kept = (row["score"], current, X, y, w)
            else:
                row.update(rows=0, score=None, return_mean=None, return_min=None)
            row["seconds"] = time.perf_counter() - t0
            history.append(row)
            if progress is not None:
                progress(_progress_row(row))
        self.history_ = history
        self.best_round_ = next((r["round"] for r in history[1:] if r.get("score") == kept[0]), 0)
        _, self.student_, self.X_, self.y_, self.sample_weight_ = kept
        return self


@one_blas_thread
def repair_controller(folder: str | Path, teacher: Teacher, out: str | Path, *, rounds: int = 3, episodes: int = 50,
                      window: int = 100, weight: float = 1.0, measure_episodes: int = 100, measure_seed: int,
                      seed: int = 0, progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Repair the saved controller in ``folder`` and write the repaired one to ``out`` (a controller folder).

    The student is refitted as its method made it (``config.json``) on its distillation data plus the repair rows,
    then fine-tuned on the return when its method did so (``rl_steps``). The result is kept only if it beats the
    saved controller on held-out episodes. Both are then measured on ``measure_episodes`` other fresh episodes
    (seeds ``measure_seed ...``): mean, worst episode and failure rate, before and after. NumPy's BLAS runs on one
    thread, as in a distillation (:meth:`distill.job.Distillation.fit`), so a seed gives the same repair anywhere.
    """
    from distill.dagger import critic_weights
    from distill.folder import CONFIG_FILE, METRICS_FILE, write_controller_files
    from distill.job import refit_like
    from distill.registry import get_method
    from interp_rl.diagnose import failure_profile
    from interp_rl.errors import InterpRLError
    from interp_rl.evidence import DistillationData, load_data, save_data
    from interp_rl.program import load_controller

    src, dest = Path(folder), Path(out)
    if dest.exists() and not dest.is_dir():
        raise InterpRLError(f"{str(dest)!r} is a file; name a folder for the repaired controller.")
    ctrl = load_controller(src)
    try:
        config = json.loads((src / CONFIG_FILE).read_text())
        method = get_method(config["method"])
        settings = dict(config["settings"])
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        raise InterpRLError(f"Repair refits the controller as its method made it, but {str(src / CONFIG_FILE)!r} "
                            f"cannot be read ({type(exc).__name__}); distil it with interp-rl distill first.") from None
    data = load_data(src)
    est = method.build(settings)
    dagger = est.dagger
    dagger._check(teacher)
    critic = dagger.weighting_ == "critic"
    template = dagger._new_student(teacher)
    rng = np.random.default_rng([seed, 78])
    fine_tuned = bool(settings.get("rl_steps"))
    start = type(template).from_program(ctrl.program)
    rep = FailureRepair(rounds, episodes=episodes, window=window, weight=weight, seed=seed).fit(
        start, teacher, None, data.observations, data.actions, data.weights if critic else None,
        refit=lambda X, y, w: refit_like(template, X, y, w, critic),
        label_weights=(lambda o, a: critic_weights(teacher, o, a, n_action_samples=dagger.n_action_samples,
                                                   rng=rng)) if critic else None,
        progress=progress, keep_start=not fine_tuned)
    student, t0 = rep.student_, time.perf_counter()
    rl_info: dict[str, Any] = {}
    if rep.best_round_ > 0 and fine_tuned:
        from sklearn.base import clone

        with tempfile.TemporaryDirectory() as tmp:
            rl = clone(est.rl).set_params(checkpoint_dir=tmp)
            rl.fit(student, teacher, teacher.env_fn, progress=progress)
        student = rl.student_
        rl_info = {"initial_return": rl.initial_return_, "best_return": rl.best_return_, "history": rl.history_}
    repaired = student.to_controller(ctrl.features, ctrl.actions, task=ctrl.task, metadata={
        **ctrl.metadata, "repaired_from": str(src), "repair": {"rounds": rounds, "episodes": episodes,
                                                               "window": window, "weight": weight, "seed": seed}})
    if rep.best_round_ > 0 and fine_tuned:  # the refitted, fine-tuned one must still beat the saved one
        before, after = rep._score(start, teacher.env_fn), rep._score(repaired, teacher.env_fn)
        if after[0] <= before[0]:  # the robust held-out score
            repaired, rl_info["kept"] = ctrl, "the saved controller (the repaired one scored lower held out)"
    profile = failure_profile({"before": ctrl, "after": repaired}, teacher, episodes=measure_episodes,
                              seed=measure_seed)
    dest.mkdir(parents=True, exist_ok=True)
    repaired.save(dest / "controller.json")
    save_data(dest, DistillationData(rep.X_, rep.y_, rep.sample_weight_ if critic else None))
    metrics = {"method": method.name, "kind": repaired.kind, "task": teacher.task, "size": repaired.size(),
               **repaired.size(), "repair": {"history": rep.history_, "best_round": rep.best_round_,
                                             "seconds": time.perf_counter() - t0}, "rl": rl_info,
               "before_after": profile}
    atomic_write_text(dest / CONFIG_FILE, json.dumps(json_safe({**config, "repair_of": str(src)}), indent=1) + "\n")
    write_controller_files(repaired, dest, metrics, f"{teacher.task} {method.name}, repaired")
    assert (dest / METRICS_FILE).is_file()
    return metrics
