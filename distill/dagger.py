"""DAgger with continuous-action VIPER weighting: learn a student from a teacher.

Round 0 rolls out the teacher (behaviour cloning). Each later round rolls out
a mixture, taking the teacher's action with probability ``beta_i`` and the
current student's otherwise, labels every visited state with the teacher's
action, adds it to the data set and refits the student on everything so far.
Every student is scored by its return on held-out episodes, and the best
round's student is kept.

With a teacher that has a Q-function (SAC, TD3, DDPG, TQC), states can be
weighted as VIPER does for discrete actions, by how much the action matters
there: ``w(s) = Q(s, pi*(s)) - mean_a Q(s, a)`` over actions drawn uniformly
from the action box. On-policy teachers (PPO, A2C, TRPO) have no Q-function;
``weighting="auto"`` then falls back to uniform weights and says so in
``weighting_``.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.metrics import mean_squared_error, r2_score

from distill.events import DaggerRound
from distill.tree import TreePolicy
from interp_rl.errors import DistillInterrupted, InterpRLError, bad_value
from interp_rl.io import atomic_write, atomic_write_text
from interp_rl.rollouts import episode_horizon, evaluate, mixture, run_episodes
from interp_rl.seeds import ROLLOUT_SEED_STRIDE, SELECTION_SEED_OFFSET
from interp_rl.teachers import Teacher, check_teacher
from interp_rl.validation import check_choice, check_float, check_int

__all__ = ["DAgger", "critic_weights", "fill_student", "rollout_mixture"]

EnvFn = Callable[[int], Any]

STATE_FILE = "dagger_state.json"


@dataclass
class MixtureRollout:
    observations: np.ndarray
    teacher_actions: np.ndarray
    episodes: int


def rollout_mixture(
    teacher: Teacher,
    student: Any | None,
    env_fn: EnvFn,
    steps: int,
    *,
    beta: float,
    seed: int,
    rng: np.random.Generator,
    n_envs: int = 8,
    action_noise: float = 0.0,
) -> MixtureRollout:
    """Roll out ``beta * teacher + (1 - beta) * student`` for ``steps`` steps in lock-step.

    At every step each environment follows the teacher with probability ``beta``
    (:func:`interp_rl.rollouts.mixture`); every visited observation is labelled with the
    teacher's action. Episodes are reset with seeds ``seed``, ``seed + 1``, ... At most
    ``steps // horizon`` environments run together, so that whole episodes (up to the
    environment's time limit) are visited. ``action_noise`` perturbs the executed actions
    (see :func:`interp_rl.rollouts.mixture`); the labels stay the teacher's.
    """
    # Fewer environments than that would leave the late part of every episode unvisited.
    n_par = max(1, min(n_envs, steps // episode_horizon(env_fn, seed)))
    actor = mixture(teacher, student, beta, rng, noise=action_noise, low=getattr(teacher, "action_low", None),
                    high=getattr(teacher, "action_high", None))
    ran = run_episodes(actor, env_fn, itertools.count(seed), n_envs=n_par,
                       steps=steps, record=True, task=getattr(teacher, "task", ""))
    assert ran.rollout is not None
    return MixtureRollout(ran.rollout.observations, ran.rollout.actions, len(ran.seeds))


def critic_weights(
    teacher: Teacher, observations: np.ndarray, actions: np.ndarray, *, n_action_samples: int,
    rng: np.random.Generator, chunk: int = 4096,
) -> np.ndarray:
    """VIPER weights for continuous actions: ``Q(s, pi*(s)) - mean_k Q(s, a_k)``, ``a_k ~ U(box)``.

    Negative values (the teacher's action looks worse than random to its own
    critic) are set to 0; the weights are scaled to mean 1.
    """
    low = np.asarray(teacher.action_low, dtype=np.float64)
    high = np.asarray(teacher.action_high, dtype=np.float64)
    out = np.empty(len(observations))
    for start in range(0, len(observations), chunk):
        o = observations[start : start + chunk]
        q_star = teacher.q_values(o, actions[start : start + chunk])
        sampled = rng.uniform(low, high, size=(n_action_samples, len(o), len(low)))
        q_rand = teacher.q_values(np.tile(o, (n_action_samples, 1)), sampled.reshape(-1, len(low)))
        out[start : start + chunk] = q_star - q_rand.reshape(n_action_samples, len(o)).mean(axis=0)
    out = np.maximum(out, 0.0)
    mean = float(out.mean()) if len(out) else 0.0
    return out / mean if mean > 0 else np.ones(len(observations))


def _save_npz(path: Path, **arrays: np.ndarray) -> None:
    def _write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]

    atomic_write(path, _write)


class DAgger(BaseEstimator):
    """Distil a teacher into any scikit-learn-style student by DAgger.

    Parameters
    ----------
    student : estimator, default=None
        Anything with ``fit(X, y, sample_weight=...)`` and ``predict(X)``;
        cloned, never modified. Default: ``TreePolicy()`` (64 sparse-linear leaves).
        ``action_low``/``action_high``/``random_state`` parameters left at
        ``None`` are filled from the teacher and ``seed``.
    n_iter : int, default=12
        DAgger rounds after the teacher's own rollouts (0: behaviour cloning).
    steps : int, default=10_000
        Environment steps collected per round.
    beta_decay : float, default=0.7
        Round ``i >= 1`` follows the teacher with probability
        ``beta_decay ** i`` at each step (0: plain DAgger, the student alone).
        The defaults (12 rounds, 0.7) are the best recipe measured on the shared teachers
        (``benchmarks/results/mujoco``).
    weighting : {"auto", "critic", "none"}, default="auto"
        ``"critic"``: VIPER-style weights from the teacher's Q-function
        (an error for teachers without one); ``"auto"``: critic weights when
        the teacher has a Q-function, uniform otherwise; ``"none"``: uniform.
    n_action_samples : int, default=16
        Random actions per state for the critic weights.
    action_noise : float, default=0.0
        DART: Gaussian noise on the actions executed while collecting, in half action ranges
        (0.3 perturbs a [-1, 1] action by 0.3 standard deviations); the labels stay the
        teacher's clean actions. Recovery data against rare catastrophic episodes.
    eval_episodes : int, default=5
        Episodes scoring each round's student (on seeds ``seed + 50000 ...``,
        apart from the usual evaluation seeds); 0 keeps the last round.
    select : {"return", "last"}, default="return"
        Keep the round with the best mean return, or the last round.
    n_envs : int, default=8
        Environments stepped together.
    seed : int, default=0
        Seeds the rollouts, the action mixing and the student.
    checkpoint_dir : str or Path, default=None
        Folder keeping every completed round (data as ``.npz``, history as
        JSON); ``fit(..., resume=True)`` continues from it.

    Attributes
    ----------
    student_ : estimator
        The selected student, fitted.
    best_round_ : int
        Round of ``student_``.
    history_ : list of dict
        Per round: ``round``, ``beta``, ``samples``, ``return_mean``,
        ``return_std``, fidelity of the previous student on the new states
        (``fidelity_r2``, ``fidelity_mse``), ``seconds``.
    weighting_ : str
        ``"critic"`` or ``"none"``: what was used.
    X_, y_, sample_weight_ : ndarray
        The aggregated data set.

    Examples
    --------
    >>> from distill.tree import TreePolicy
    >>> dagger = DAgger(TreePolicy(max_leaves=16), n_iter=4, steps=2000)
    >>> dagger.get_params()["student__max_leaves"]
    16
    >>> dagger.fit(teacher, env_fn)  # doctest: +SKIP
    >>> dagger.student_.tree_.n_leaves  # doctest: +SKIP
    16
    """

    def __init__(
        self,
        student: Any = None,
        *,
        n_iter: int = 12,
        steps: int = 10_000,
        beta_decay: float = 0.7,
        weighting: str = "auto",
        n_action_samples: int = 16,
        action_noise: float = 0.0,
        eval_episodes: int = 5,
        select: str = "return",
        n_envs: int = 8,
        seed: int = 0,
        checkpoint_dir: str | Path | None = None,
    ) -> None:
        self.student = student
        self.n_iter = n_iter
        self.steps = steps
        self.beta_decay = beta_decay
        self.weighting = weighting
        self.n_action_samples = n_action_samples
        self.action_noise = action_noise
        self.eval_episodes = eval_episodes
        self.select = select
        self.n_envs = n_envs
        self.seed = seed
        self.checkpoint_dir = checkpoint_dir

    # ------------------------------------------------------------ helpers
    def _validate_params(self) -> None:
        """Check every setting (the student's too); a bad one raises the one-line template error."""
        owner = "DAgger"
        check_int(self.n_iter, "n_iter", owner, low=0)
        check_int(self.steps, "steps", owner)
        check_float(self.beta_decay, "beta_decay", owner, high=1.0)
        check_choice(self.weighting, "weighting", owner, ["auto", "critic", "none"])
        check_int(self.n_action_samples, "n_action_samples", owner)
        check_float(self.action_noise, "action_noise", owner, high=2.0)
        check_int(self.eval_episodes, "eval_episodes", owner, low=0)
        check_choice(self.select, "select", owner, ["return", "last"])
        check_int(self.n_envs, "n_envs", owner)
        check_int(self.seed, "seed", owner, low=0)
        validate = getattr(self._base_student(), "_validate_params", None)
        if validate is not None:
            validate()

    def _check(self, teacher: Teacher) -> None:
        self._validate_params()
        check_teacher(teacher, "DAgger")
        has_q = bool(teacher.has_q)
        if self.weighting == "critic" and not has_q:
            algo = str(getattr(teacher, "algo", "")).upper() or "given"
            raise bad_value("weighting", "DAgger", "'auto' or 'none' for a teacher without a Q-function (the "
                            f"{algo} teacher has none; SAC, TD3, DDPG and TQC have one)", self.weighting)
        self.weighting_ = "critic" if has_q and self.weighting != "none" else "none"

    def _base_student(self) -> Any:
        return self.student if self.student is not None else TreePolicy()

    def _new_student(self, teacher: Teacher) -> Any:
        """A clone of the student with ``action_low``/``action_high``/``random_state`` (and ``teacher``, for a
        student that reads the teacher itself, :class:`~distill.silver.SILVERPolicy`) left at ``None`` filled from
        the teacher and ``seed``; also those of a student wrapped by a meta-student (``student__random_state``
        of :class:`~distill.subset.FeatureSubset`)."""
        given: dict[str, Any] = {"random_state": self.seed, "teacher": teacher}
        for name in ("action_low", "action_high"):
            if hasattr(teacher, name):
                given[name] = np.asarray(getattr(teacher, name), dtype=np.float64).tolist()
        return fill_student(self._base_student(), given)

    def _fit_student(self, teacher: Teacher, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> Any:
        student = self._new_student(teacher)
        if self.weighting_ == "critic":
            return student.fit(X, y, sample_weight=w)
        return student.fit(X, y)

    def _score(self, student: Any, env_fn: EnvFn) -> tuple[float, float]:
        if self.eval_episodes == 0:
            return float("nan"), float("nan")
        res = evaluate(student, env_fn, self.eval_episodes, seed=self.seed + SELECTION_SEED_OFFSET,
                       n_envs=self.n_envs)
        return res.mean_return, res.std_return

    def _config(self) -> dict[str, Any]:
        """The settings as JSON-ready values (``get_params(deep=True)``), without where checkpoints go."""
        params = clone(self).set_params(student=self._base_student()).get_params(deep=True)
        params.pop("checkpoint_dir", None)
        params["student"] = type(self._base_student()).__name__
        return _jsonable(params)

    # ---------------------------------------------------------------- fit
    def fit(
        self,
        teacher: Teacher,
        env_fn: EnvFn | None = None,
        *,
        resume: bool = False,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> DAgger:
        """Distil ``teacher`` using environments from ``env_fn(seed)`` (default: ``teacher.env_fn``).

        ``progress`` is called with each round's history row as it completes.
        With a ``checkpoint_dir``, a Ctrl-C (``KeyboardInterrupt``) keeps every
        completed round and raises :class:`DistillInterrupted`;
        ``resume=True`` continues from the folder.
        """
        self._check(teacher)
        env_fn = env_fn if env_fn is not None else teacher.env_fn
        ckpt = Path(self.checkpoint_dir) if self.checkpoint_dir is not None else None
        chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        history: list[dict[str, Any]] = []
        if ckpt is not None:
            state_path = ckpt / STATE_FILE
            if state_path.is_file():
                if not resume:
                    raise InterpRLError(
                        f"{str(ckpt)!r} already holds a distillation; pass resume=True (--resume) to "
                        "continue it or choose another folder."
                    )
                chunks, history = self._load_checkpoint(ckpt)
            ckpt.mkdir(parents=True, exist_ok=True)

        student: Any = None
        if chunks:
            X, y, w = (np.concatenate(a) for a in zip(*chunks, strict=True))
            student = self._fit_student(teacher, X, y, w)
        try:
            for rnd in range(len(chunks), self.n_iter + 1):
                t0 = time.perf_counter()
                rng = np.random.default_rng([self.seed, rnd])
                beta = 1.0 if rnd == 0 else float(self.beta_decay**rnd)
                roll = rollout_mixture(
                    teacher, student, env_fn, self.steps, beta=beta,
                    seed=self.seed + ROLLOUT_SEED_STRIDE * (rnd + 1), rng=rng, n_envs=self.n_envs,
                    action_noise=self.action_noise,
                )
                row: dict[str, Any] = {"round": rnd, "beta": beta, "episodes": roll.episodes}
                if student is not None:
                    pred = np.asarray(student.predict(roll.observations)).reshape(roll.teacher_actions.shape)
                    row["fidelity_r2"] = float(r2_score(roll.teacher_actions, pred))
                    row["fidelity_mse"] = float(mean_squared_error(roll.teacher_actions, pred))
                if self.weighting_ == "critic":
                    w = critic_weights(teacher, roll.observations, roll.teacher_actions,
                                       n_action_samples=self.n_action_samples, rng=rng)
                else:
                    w = np.ones(len(roll.observations))
                chunks.append((roll.observations, roll.teacher_actions, w))
                X, y, w_all = (np.concatenate(a) for a in zip(*chunks, strict=True))
                student = self._fit_student(teacher, X, y, w_all)
                row["samples"] = len(X)
                row["return_mean"], row["return_std"] = self._score(student, env_fn)
                row["seconds"] = time.perf_counter() - t0
                history.append(row)
                if ckpt is not None:
                    _save_npz(ckpt / f"round_{rnd:02d}.npz", observations=roll.observations,
                              actions=roll.teacher_actions, weights=w)
                    atomic_write_text(ckpt / STATE_FILE, json.dumps(
                        {"config": self._config(), "weighting": self.weighting_, "history": history},
                        indent=1) + "\n")
                if progress is not None:
                    progress(DaggerRound(round=row["round"], return_mean=row["return_mean"], details=row))
        except KeyboardInterrupt:
            where = f"; {len(history)} completed round(s) are kept in {str(ckpt)!r}" if ckpt else ""
            raise DistillInterrupted(f"Distillation interrupted{where}.") from None

        self.history_ = history
        self.X_, self.y_, self.sample_weight_ = (np.concatenate(a) for a in zip(*chunks, strict=True))
        returns = [r["return_mean"] for r in history]
        if self.select == "last" or self.eval_episodes == 0:
            self.best_round_ = len(history) - 1
        else:
            self.best_round_ = int(np.argmax(returns))
        if self.best_round_ == len(history) - 1:
            self.student_ = student
        else:
            Xb, yb, wb = (np.concatenate(a) for a in zip(*chunks[: self.best_round_ + 1], strict=True))
            self.student_ = self._fit_student(teacher, Xb, yb, wb)
        self.n_samples_used_ = int(sum(len(c[0]) for c in chunks[: self.best_round_ + 1]))
        return self

    def _load_checkpoint(
        self, ckpt: Path
    ) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], list[dict[str, Any]]]:
        try:
            state = json.loads((ckpt / STATE_FILE).read_text())
            history = list(state["history"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InterpRLError(f"{str(ckpt / STATE_FILE)!r} is corrupt: {exc}.") from None
        saved = state.get("config", {})
        mine = self._config()
        for key in sorted(set(saved) | set(mine)):
            if key in ("n_iter", "eval_episodes", "select", "n_envs") or key.startswith("student__"):
                continue  # more rounds may be added; the student is refitted on the data anyway
            if saved.get(key) != mine.get(key):
                raise InterpRLError(
                    f"Cannot resume {str(ckpt)!r}: it was started with {key}={saved.get(key)!r}, "
                    f"not {mine.get(key)!r}."
                )
        chunks = []
        for row in history:
            path = ckpt / f"round_{int(row['round']):02d}.npz"
            try:
                with np.load(path, allow_pickle=False) as data:
                    chunks.append((data["observations"], data["actions"], data["weights"]))
            except (OSError, KeyError, ValueError) as exc:
                raise InterpRLError(f"{str(path)!r} is missing or corrupt: {exc}.") from None
        return chunks, history


def fill_student(student: Any, given: dict[str, Any]) -> Any:
    """A clone of ``student`` with its parameters named in ``given`` that it leaves at ``None`` set from ``given``;
    also those of a student wrapped by a meta-student (``student__random_state`` of
    :class:`~distill.subset.FeatureSubset`). ``student`` itself is not modified.

    >>> from distill.tree import TreePolicy
    >>> filled = fill_student(TreePolicy(random_state=7), {"random_state": 0, "action_low": [-1.0]})
    >>> filled.random_state, filled.action_low
    (7, [-1.0])
    """
    student = clone(student)
    fill: dict[str, Any] = {}
    for key, value in student.get_params(deep=True).items():
        *wrappers, name = key.split("__")
        if value is None and name in given and all(w == "student" for w in wrappers):
            fill[key] = given[name]
    return student.set_params(**fill) if fill else student


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        try:
            json.dumps(v)
        except TypeError:
            v = repr(v)
        out[k] = v
    return out
