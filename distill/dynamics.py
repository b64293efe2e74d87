"""SINDy dynamics surrogates and SINDy-RL's Dyna-style loop (Zolman et al. 2024).

What a task brings (its environment factory, state and action names, known reward and termination, the agents
to train) comes in as arguments, a :class:`TaskLike` (``envs.dynamics.dynamics_task`` makes one for a registered
task) and an :class:`AgentMaker` (``envs.dynamics.SB3Agents``); this module never imports :mod:`envs`.

* :func:`collect_transitions` — real transitions ``(x, u, x', r)`` of a task, from random actions, a teacher or a
  controller (the student's own), with optional action noise.
* :class:`SINDyDynamics` — an ensemble of sparse discrete-time models ``x[t+1] = x[t] + f(x[t], u[t])``, each
  a :class:`~distill.sindy.SINDyPolicy` (pysindy's libraries and optimisers) fitted on a bootstrap resample of the
  transitions; the members' spread is the uncertainty. The reward is the task's known formula or a SINDy model
  of ``r(x, u, x')``. Saved as JSON (equations, no pickle); printed as equations in named states.
* :func:`evaluate_dynamics` — one-step and multi-step prediction error per named state on held-out episodes.
* :class:`SurrogateEnv` — the model as a gymnasium environment: starts from real states, steps with a random
  ensemble member, ends episodes by the task's known termination (:data:`TERMINATIONS`), when the members
  disagree too much, or when the state leaves the data's range.
* :func:`train_dyna` — the loop: fit the model on the real data, train an SB3 agent in the surrogate, collect a
  few real steps with it, refit, repeat; :func:`train_model_free`, the baseline with the same real-step budget.
  Both write a learning curve (real steps on the x axis) and resume from their last checkpoint.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from interp_rl.errors import InterpRLError, bad_value
from interp_rl.io import atomic_write, atomic_write_text
from interp_rl.program import Controller, Signal
from interp_rl.seeds import DYNA_DATA_SEED_OFFSET, DYNA_ROLLOUT_SEED_OFFSET

__all__ = [
    "AgentMaker",
    "SINDyDynamics",
    "SurrogateEnv",
    "Transitions",
    "collect_transitions",
    "evaluate_dynamics",
    "fit_dynamics",
    "write_evaluation",
    "learning_curve_figure",
    "learning_curve_plot",
    "prediction_figure",
    "steps_to_reach",
    "TaskLike",
    "train_dyna",
    "train_model_free",
]

FORMAT = "interp-rl-dynamics"
FORMAT_VERSION = 1
#: The loop's agent, after every round: its training state as arrays and JSON (:mod:`envs.agent_state`).
AGENT_FILE = "agent.npz"
RewardFn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class TaskLike(Protocol):
    """What the surrogate needs of a task (``envs.dynamics.DynamicsTask``)."""

    task: str
    env_fn: Callable[[int], gym.Env]
    states: list[Signal]
    actions: list[Signal]
    reward_fn: RewardFn | None
    termination_fn: Callable[[np.ndarray], np.ndarray] | None


class AgentMaker(Protocol):
    """Makes (``new(env, seed)``), saves (``save(agent, path)``: no pickles) and loads (``load(path, env)``) the RL
    agents trained in the loop."""

    def new(self, env: gym.Env, seed: int) -> Any: ...

    def save(self, agent: Any, path: str | Path) -> None: ...

    def load(self, path: str, env: gym.Env) -> Any: ...


# ------------------------------------------------------------------------------ transitions
@dataclass
class Transitions:
    """Real transitions of a task: ``obs[i]``, ``act[i]`` -> ``next_obs[i]``, ``reward[i]``.

    ``episode[i]`` numbers the episode each step belongs to (consecutive steps of one episode are adjacent);
    ``terminated[i]`` is the environment's own end (not a time limit).
    """

    obs: np.ndarray
    act: np.ndarray
    next_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    episode: np.ndarray

    def __len__(self) -> int:
        return len(self.obs)

    def __add__(self, other: Transitions) -> Transitions:
        shift = int(self.episode.max()) + 1 if len(self) else 0
        return Transitions(*(np.concatenate([a, b]) for a, b in zip(
            (self.obs, self.act, self.next_obs, self.reward, self.terminated),
            (other.obs, other.act, other.next_obs, other.reward, other.terminated), strict=True)),
            episode=np.concatenate([self.episode, other.episode + shift]))

    def save(self, path: str | Path) -> Path:
        def write(tmp: str) -> None:
            with open(tmp, "wb") as fh:
                np.savez(fh, obs=self.obs, act=self.act, next_obs=self.next_obs, reward=self.reward,
                         terminated=self.terminated, episode=self.episode)

        return atomic_write(path, write)

    @classmethod
    def load(cls, path: str | Path) -> Transitions:
        try:
            with np.load(path, allow_pickle=False) as z:
                return cls(z["obs"], z["act"], z["next_obs"], z["reward"], z["terminated"].astype(bool),
                           z["episode"])
        except (OSError, KeyError, ValueError) as exc:
            raise InterpRLError(f"{str(path)!r} is not a transitions file of interp-rl ({exc}).") from None

    def subset(self, idx: np.ndarray) -> Transitions:
        """The rows ``idx`` (in that order)."""
        return Transitions(self.obs[idx], self.act[idx], self.next_obs[idx], self.reward[idx], self.terminated[idx],
                           self.episode[idx])

    def split(self, held_out: float = 0.2) -> tuple[Transitions, Transitions]:
        """``(fit, held)``: the last ``held_out`` share of the episodes held out (of the steps, when there is one
        episode: its last steps, as an episode of their own)."""
        episodes = self.episodes()
        if len(episodes) > 1:
            cut = min(len(episodes) - 1, max(1, int(round((1 - held_out) * len(episodes)))))
            return self.subset(np.concatenate(episodes[:cut])), self.subset(np.concatenate(episodes[cut:]))
        cut = min(len(self) - 1, max(1, int(round((1 - held_out) * len(self)))))
        held = self.subset(np.arange(cut, len(self)))
        held.episode = held.episode + 1
        return self.subset(np.arange(cut)), held

    def episodes(self) -> list[np.ndarray]:
        """Row indices of each episode, in order."""
        cuts = np.flatnonzero(np.diff(self.episode)) + 1
        return np.split(np.arange(len(self)), cuts)


def collect_transitions(env_fn: Callable[[int], gym.Env], steps: int, *, policy: Any = None, seed: int = 0,
                        action_noise: float = 0.0) -> Transitions:
    """``steps`` real transitions: random actions (``policy=None``), or ``policy.predict(obs)`` plus Gaussian noise
    of ``action_noise`` half action ranges; episodes reset with seeds ``seed``, ``seed + 1``, ..."""
    rng = np.random.default_rng([seed, 7])
    env = env_fn(seed)
    low, high = env.action_space.low.astype(np.float64), env.action_space.high.astype(np.float64)
    env.action_space.seed(seed)
    rows: dict[str, list[Any]] = {k: [] for k in ("obs", "act", "next_obs", "reward", "terminated", "episode")}
    episode, obs = 0, env.reset(seed=seed)[0]
    try:
        for _ in range(int(steps)):
            if policy is None:
                act = rng.uniform(low, high)
            else:
                act = np.asarray(policy.predict(np.asarray(obs, dtype=np.float64)[None, :]),
                                 dtype=np.float64).reshape(-1)
                if action_noise > 0:
                    act = act + rng.normal(size=act.shape) * action_noise * (high - low) / 2
                act = np.clip(act, low, high)
            nxt, r, term, trunc, _ = env.step(act)
            for k, v in (("obs", obs), ("act", act), ("next_obs", nxt), ("reward", r), ("terminated", term),
                         ("episode", episode)):
                rows[k].append(v)
            obs = nxt
            if term or trunc:
                episode += 1
                obs = env.reset(seed=seed + episode)[0]
    finally:
        env.close()
    return Transitions(np.asarray(rows["obs"], dtype=np.float64), np.asarray(rows["act"], dtype=np.float64),
                       np.asarray(rows["next_obs"], dtype=np.float64), np.asarray(rows["reward"], dtype=np.float64),
                       np.asarray(rows["terminated"], dtype=bool), np.asarray(rows["episode"], dtype=np.int64))


# ------------------------------------------------------------------------------ the model
class SINDyDynamics:
    """An ensemble of sparse discrete-time models ``x' = x + f(x, u)`` and a reward, in named states.

    Parameters
    ----------
    library, optimizer, threshold, alpha : see :class:`~distill.sindy.SINDyPolicy`
        Each state's change is one sparse equation over the library of the states and actions.
    n_models : int, default=5
        Ensemble members, each fitted on a bootstrap resample of the transitions (1: one fit on all of them).
    reward : {"auto", "formula", "model"}, default="auto"
        The task's known formula (``task.reward_fn``) where it has one, else a SINDy model of ``r(x, u, x')``.
    random_state : int, default=0
        Seeds the resamples.
    """

    def __init__(self, *, library: Any = "poly2", optimizer: Any = "stlsq", threshold: float = 0.02,
                 alpha: float = 1e-3, n_models: int = 5, reward: str = "auto", random_state: int = 0) -> None:
        self.library = library
        self.optimizer = optimizer
        self.threshold = threshold
        self.alpha = alpha
        self.n_models = n_models
        self.reward = reward
        self.random_state = random_state

    def _student(self, seed: int) -> Any:
        from distill.sindy import SINDyPolicy

        return SINDyPolicy(library=self.library, optimizer=self.optimizer, threshold=self.threshold,
                           alpha=self.alpha, random_state=seed)

    def fit(self, data: Transitions, task: TaskLike) -> SINDyDynamics:
        """Fit the members (and the reward model) on ``data`` of ``task`` (``envs.dynamics.dynamics_task(ID)``)."""
        from interp_rl.validation import check_int

        check_int(self.n_models, "n_models", "SINDyDynamics", low=1, high=100)
        if self.reward not in ("auto", "formula", "model"):
            raise bad_value("reward", "SINDyDynamics", "one of 'auto', 'formula', 'model'", self.reward)
        self.task_ = task.task
        if self.reward == "formula" and task.reward_fn is None:
            raise bad_value("reward", "SINDyDynamics", f"'model' or 'auto' for {self.task_} (no known reward formula)",
                            self.reward)
        features, actions = task.states, task.actions
        if data.obs.shape[1] != len(features) or data.act.shape[1] != len(actions):
            raise bad_value("data", "SINDyDynamics.fit", f"{len(features)} states and {len(actions)} actions "
                            f"({self.task_})", f"{data.obs.shape[1]} states and {data.act.shape[1]} actions")
        if len(data) < 10:
            raise bad_value("data", "SINDyDynamics.fit", "at least 10 transitions", len(data))
        self.states_, self.actions_ = list(features), list(actions)
        XU = np.hstack([data.obs, data.act])
        dX = data.next_obs - data.obs
        self.members_ = []
        rng = np.random.default_rng([self.random_state, 3])
        for m in range(self.n_models):
            rows = np.arange(len(data)) if self.n_models == 1 else rng.integers(0, len(data), len(data))
            self.members_.append(self._student(self.random_state + m).fit(XU[rows], dX[rows]).program_)
        self.reward_kind_ = "formula" if task.reward_fn is not None and self.reward != "model" else "model"
        self.reward_fn_ = task.reward_fn if self.reward_kind_ == "formula" else None
        self.reward_program_ = None
        if self.reward_kind_ == "model":
            XUX = np.hstack([data.obs, data.act, data.next_obs])
            self.reward_program_ = self._student(self.random_state).fit(XUX, data.reward).program_
        self.state_low_ = np.minimum(data.obs.min(axis=0), data.next_obs.min(axis=0))
        self.state_high_ = np.maximum(data.obs.max(axis=0), data.next_obs.max(axis=0))
        self.state_scale_ = np.where(data.obs.std(axis=0) > 0, data.obs.std(axis=0), 1.0)
        self.n_samples_ = len(data)
        return self

    # -------------------------------------------------------------- prediction
    def _check(self, X: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        U = np.atleast_2d(np.asarray(U, dtype=np.float64))
        d, k = len(self.states_), len(self.actions_)
        if X.shape[1] != d or U.shape[1] != k or len(X) != len(U):
            raise bad_value("X, U", "SINDyDynamics.predict", f"(n, {d}) states and (n, {k}) actions",
                            f"{X.shape} and {U.shape}")
        if not (np.isfinite(X).all() and np.isfinite(U).all()):
            raise bad_value("X, U", "SINDyDynamics.predict", "finite numbers", "NaN or inf")
        return X, U

    def _dense(self) -> tuple[Any, np.ndarray, np.ndarray]:
        """The members as one matrix product over the union of their terms: (terms program, intercepts, coefs)."""
        from interp_rl.kinds.equations import EquationsProgram

        cache = getattr(self, "_dense_cache", None)
        if cache is not None and cache[0] is self.members_:
            return cache[1]
        keys: dict[Any, int] = {}
        for p in self.members_:
            for t in p.terms:
                keys.setdefault(tuple(map(tuple, t)), len(keys))
        terms = [list(k) for k in keys]
        coef = np.zeros((len(self.members_), len(self.states_), len(terms)))
        for m, p in enumerate(self.members_):
            for j, t in enumerate(p.terms):
                coef[m, :, keys[tuple(map(tuple, t))]] = p.coef[:, j]
        lib = EquationsProgram(terms=terms, intercept=np.zeros(0), coef=np.zeros((0, len(terms))),
                               obs_dim_=len(self.states_) + len(self.actions_))
        dense = (lib, np.stack([p.intercept for p in self.members_]), coef)
        self._dense_cache = (self.members_, dense)
        return dense

    def predict_members(self, X: Any, U: Any) -> np.ndarray:
        """``(n_models, n, n_states)``: every member's next state (one matrix product over the members' terms; the
        members' own programs give the same numbers up to rounding)."""
        X, U = self._check(X, U)
        lib, b, C = self._dense()
        T = lib.term_values(np.hstack([X, U]))
        return X[None] + b[:, None, :] + np.einsum("nt,mst->mns", T, C)

    def predict(self, X: Any, U: Any) -> np.ndarray:
        """The ensemble's mean next state ``(n, n_states)``."""
        return self.predict_members(X, U).mean(axis=0)

    def uncertainty(self, X: Any, U: Any) -> np.ndarray:
        """The members' standard deviation of each next state, in units of that state's spread in the data."""
        return self.predict_members(X, U).std(axis=0) / self.state_scale_

    def predict_reward(self, X: Any, U: Any, X_next: Any) -> np.ndarray:
        X, U = self._check(X, U)
        X_next = np.atleast_2d(np.asarray(X_next, dtype=np.float64))
        if self.reward_kind_ == "formula":
            if self.reward_fn_ is None:
                raise InterpRLError(f"This {self.task_} model uses the task's known reward formula; load it with "
                                    "reward_fn= (envs.dynamics.dynamics_task(task).reward_fn).")
            return self.reward_fn_(X, U, X_next)
        assert self.reward_program_ is not None
        return self.reward_program_.predict(np.hstack([X, U, X_next]))[:, 0]

    # -------------------------------------------------------------- reading
    def _controller(self, program: Any, outputs: Sequence[Signal], inputs: Sequence[Signal]) -> Controller:
        return Controller(program, features=list(inputs), actions=list(outputs), task=self.task_)

    def equations(self, member: int = 0, precision: int = 3) -> list[str]:
        """Member ``member``'s equations (``next_torso_vx - torso_vx = ...``) and the reward's, in named states."""
        inputs = [*self.states_, *self.actions_]
        outs = [Signal(f"Δ{s.name}", s.unit) for s in self.states_]
        lines = self.members_[member].explain(self._controller(self.members_[member], outs, inputs),
                                              precision=precision).splitlines()
        lines = [ln for ln in lines if not ln.startswith("actions are clipped")]
        if self.reward_program_ is not None:
            nxt = [Signal(f"next_{s.name}", s.unit) for s in self.states_]
            text = self.reward_program_.explain(self._controller(self.reward_program_, [Signal("reward")],
                                                                 [*inputs, *nxt]), precision=precision)
            lines += [ln for ln in text.splitlines() if ln.startswith("reward")]
        else:
            doc = (getattr(self.reward_fn_, "__doc__", None) or "").strip()
            lines.append(f"reward: the known formula of {self.task_}" + (f" ({doc})" if doc else ""))
        return lines

    def size(self) -> dict[str, int]:
        """Non-zero terms of one member, on average, and of the reward model."""
        terms = [p.size()["nonzero_terms"] for p in self.members_]
        return {"members": len(self.members_), "nonzero_terms_per_member": int(round(float(np.mean(terms)))),
                "reward_terms": self.reward_program_.size()["nonzero_terms"] if self.reward_program_ else 0}

    # -------------------------------------------------------------- files
    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": FORMAT_VERSION, "task": self.task_,
                "states": [s.to_dict() for s in self.states_], "actions": [s.to_dict() for s in self.actions_],
                "settings": {"library": str(self.library), "optimizer": str(self.optimizer),
                             "threshold": self.threshold, "alpha": self.alpha, "n_models": self.n_models,
                             "reward": self.reward, "random_state": self.random_state},
                "members": [p.to_dict() for p in self.members_], "reward_kind": self.reward_kind_,
                "reward_model": self.reward_program_.to_dict() if self.reward_program_ is not None else None,
                "state_low": self.state_low_.tolist(), "state_high": self.state_high_.tolist(),
                "state_scale": self.state_scale_.tolist(), "n_samples": self.n_samples_}

    def save(self, path: str | Path) -> Path:
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path, reward_fn: RewardFn | None = None) -> SINDyDynamics:
        """A saved model; ``reward_fn`` is the task's known reward, needed when the model was fitted with it."""
        from interp_rl.kinds.equations import EquationsProgram

        p = Path(path)
        p = p / "model.json" if p.is_dir() else p
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise InterpRLError(f"Cannot read the dynamics model {str(p)!r}: {exc}.") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InterpRLError(f"{str(p)!r} is not an interp-rl dynamics model (format {FORMAT!r}).")
        if int(d.get("version", 0)) > FORMAT_VERSION:
            raise InterpRLError(f"{str(p)!r} is in version {d['version']} of the dynamics format; this interp-rl "
                                f"reads up to version {FORMAT_VERSION}: upgrade it.")
        try:
            s = d["settings"]
            model = cls(library=s["library"], optimizer=s["optimizer"], threshold=s["threshold"], alpha=s["alpha"],
                        n_models=s["n_models"], reward=s["reward"], random_state=s["random_state"])
            model.task_ = str(d["task"])
            model.reward_fn_ = reward_fn
            model.states_ = [Signal(**x) for x in d["states"]]
            model.actions_ = [Signal(**x) for x in d["actions"]]
            model.members_ = [EquationsProgram.from_dict(m) for m in d["members"]]
            model.reward_kind_ = d["reward_kind"]
            model.reward_program_ = (EquationsProgram.from_dict(d["reward_model"]) if d["reward_model"] is not None
                                     else None)
            model.state_low_, model.state_high_ = np.asarray(d["state_low"]), np.asarray(d["state_high"])
            model.state_scale_ = np.asarray(d["state_scale"])
            model.n_samples_ = int(d["n_samples"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InterpRLError(f"The dynamics model {str(p)!r} is malformed: {type(exc).__name__}: {exc}.") from None
        return model


# ------------------------------------------------------------------------------ evaluation
def evaluate_dynamics(model: SINDyDynamics, data: Transitions, horizons: Sequence[int] = (1, 10, 50)
                      ) -> dict[str, Any]:
    """Prediction error of the ensemble's mean on held-out episodes, per named state.

    From every step of every episode with at least ``h`` steps left, the model is rolled ``h`` steps with the
    recorded actions; the error is the RMSE against the real state ``h`` steps later, divided by that state's
    standard deviation in ``data`` (normalised RMSE: 1 is no better than guessing the mean). ``reward_rmse`` is the
    one-step reward error (also normalised).
    """
    scale = np.where(data.next_obs.std(axis=0) > 0, data.next_obs.std(axis=0), 1.0)
    out: dict[str, Any] = {"horizons": list(map(int, horizons)), "states": [s.name for s in model.states_],
                           "nrmse": {}, "episodes": len(data.episodes())}
    for h in horizons:
        errs = []
        for idx in data.episodes():
            if len(idx) < h:
                continue
            starts = idx[: len(idx) - h + 1]
            x = data.obs[starts].copy()
            for k in range(h):
                x = model.predict(x, data.act[starts + k])
                x = np.clip(x, -1e6, 1e6)
            errs.append(x - data.next_obs[starts + h - 1])
        if errs:
            e = np.concatenate(errs)
            out["nrmse"][str(h)] = (np.sqrt(np.mean(e**2, axis=0)) / scale).tolist()
    r = model.predict_reward(data.obs, data.act, data.next_obs)
    out["reward_rmse"] = float(np.sqrt(np.mean((r - data.reward) ** 2)) / (data.reward.std() or 1.0))
    return out


def fit_dynamics(task: TaskLike, transitions: Transitions, out: str | Path, *, library: Any = "poly2",
                 threshold: float = 0.02, n_models: int = 5, reward: str = "auto",
                 horizons: Sequence[int] = (1, 10, 50), seed: int = 0, source: str = "random"
                 ) -> tuple[SINDyDynamics, dict[str, Any]]:
    """``interp-rl dynamics fit``: fit :class:`SINDyDynamics` on the first 80% of ``transitions``' episodes, check
    it on the rest (:func:`evaluate_dynamics` at ``horizons``) and write ``model.json``, ``data.npz``,
    ``equations.txt`` and ``metrics.json`` into ``out``. Returns the model and the metrics."""
    fit_part, held = transitions.split(0.2)
    model = SINDyDynamics(library=library, threshold=threshold, n_models=n_models, reward=reward,
                          random_state=seed).fit(fit_part, task)
    evaluation = evaluate_dynamics(model, held, horizons)
    dest = Path(out)
    dest.mkdir(parents=True, exist_ok=True)
    model.save(dest / "model.json")
    transitions.save(dest / "data.npz")
    atomic_write_text(dest / "equations.txt", "\n".join(model.equations()) + "\n")
    metrics = {"task": task.task, "transitions": len(transitions), "fitted_on": len(fit_part),
               "held_out": len(held), "source": source, "size": model.size(),
               "held_out_evaluation": evaluation, "seed": seed}
    atomic_write_text(dest / "metrics.json", json.dumps(metrics, indent=1) + "\n")
    return model, metrics


def write_evaluation(model: SINDyDynamics, test: Transitions, out: str | Path, *,
                     horizons: Sequence[int] = (1, 10, 50), title: str = "", **about: Any) -> dict[str, Any]:
    """``interp-rl dynamics evaluate``: :func:`evaluate_dynamics` of ``model`` on the transitions ``test`` at
    ``horizons``, written to ``out`` as ``evaluation.json`` (with ``about``: where the transitions come from) and
    ``evaluation.png`` (:func:`prediction_figure`). Returns the evaluation."""
    evaluation = {**evaluate_dynamics(model, test, horizons), **about}
    dest = Path(out)
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write_text(dest / "evaluation.json", json.dumps(evaluation, indent=1) + "\n")
    prediction_figure(evaluation, dest / "evaluation.png", title or f"{model.task_}: SINDy surrogate prediction error")
    return evaluation


# ------------------------------------------------------------------------------ the surrogate environment
class SurrogateEnv(gym.Env):
    """``model`` as a gymnasium environment with the task's spaces.

    Episodes start from ``starts`` (real states) and last at most ``horizon`` steps; each step draws one ensemble
    member. An episode is *terminated* by the task's known condition (``task.termination_fn``), and *truncated* at the
    horizon, when the members disagree by more than ``max_disagreement`` state spreads, or when the state leaves
    the data's range widened by ``margin`` spreads. ``penalty`` (reward units per state spread of disagreement,
    MOPO's uncertainty penalty) is taken off every step's reward, so that a policy gains nothing by steering into
    states where the model is unsure; the step's ``info["disagreement"]`` is that disagreement.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, model: SINDyDynamics, task: TaskLike, starts: np.ndarray, *, horizon: int = 200,
                 max_disagreement: float = 1.0, margin: float = 3.0, penalty: float = 0.0, seed: int = 0) -> None:
        if not (np.isfinite(penalty) and penalty >= 0):
            raise bad_value("penalty", "SurrogateEnv", "a finite number >= 0", penalty)
        real = task.env_fn(seed)
        self.observation_space = real.observation_space
        self.action_space = real.action_space
        real.close()
        self.termination_fn = task.termination_fn
        self.model, self.starts = model, np.asarray(starts, dtype=np.float64)
        self.horizon, self.max_disagreement, self.margin = int(horizon), float(max_disagreement), float(margin)
        self.penalty = float(penalty)
        self._low = model.state_low_ - margin * model.state_scale_
        self._high = model.state_high_ + margin * model.state_scale_
        from gymnasium.utils import seeding

        self._np_random, _ = seeding.np_random(seed)
        self._x = self.starts[0]
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._x = self.starts[self.np_random.integers(len(self.starts))].copy()
        self._t = 0
        return self._x.astype(self.observation_space.dtype), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        u = np.clip(np.asarray(action, dtype=np.float64).reshape(1, -1), self.action_space.low,
                    self.action_space.high)
        x = self._x[None, :]
        members = self.model.predict_members(x, u)[:, 0, :]
        nxt = members[self.np_random.integers(len(members))]
        spread = float((members.std(axis=0) / self.model.state_scale_).max()) if len(members) > 1 else 0.0
        reward = float(self.model.predict_reward(x, u, nxt[None, :])[0]) - self.penalty * spread
        self._t += 1
        done = self.termination_fn
        terminated = bool(done(nxt[None, :])[0]) if done is not None else False
        out = not (np.isfinite(nxt).all() and np.all(nxt >= self._low) and np.all(nxt <= self._high))
        truncated = self._t >= self.horizon or spread > self.max_disagreement or out
        self._x = np.clip(np.where(np.isfinite(nxt), nxt, 0.0), self._low, self._high)
        return self._x.astype(self.observation_space.dtype), reward, terminated, truncated, {"disagreement": spread}


# ------------------------------------------------------------------------------ training
class _AgentPolicy:
    """An SB3 agent as a batched policy (deterministic actions)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def predict(self, obs: np.ndarray) -> np.ndarray:
        return np.asarray(self.agent.predict(np.asarray(obs, dtype=np.float32), deterministic=True)[0],
                          dtype=np.float64)


def _evaluate(agent: Any, env_fn: Callable[[int], gym.Env], episodes: int, seed: int) -> tuple[float, float]:
    from interp_rl.rollouts import evaluate

    res = evaluate(_AgentPolicy(agent), env_fn, episodes, seed=seed)
    return res.mean_return, res.std_return


def _state(out: Path) -> dict[str, Any]:
    f = out / "state.json"
    return json.loads(f.read_text()) if f.is_file() else {}


def _check_resume(out: Path, settings: dict[str, Any], resume: bool) -> dict[str, Any]:
    state = _state(out)
    if state and not resume:
        raise InterpRLError(f"{str(out)!r} already holds a run; pass --resume to continue it or choose another --out.")
    if state and state.get("settings") != settings:
        diff = sorted(k for k in set(settings) | set(state.get("settings", {}))
                      if settings.get(k) != state.get("settings", {}).get(k))
        raise InterpRLError(f"Cannot resume {str(out)!r} with different settings ({', '.join(diff)}).")
    return state


def _one_torch_thread(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn`` with torch and NumPy's BLAS on one CPU thread: the same seed then gives the same run, and runs
    side by side do not wait on each other's threads."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from threadpoolctl import threadpool_limits

        from interp_rl.threads import torch_threads

        with torch_threads(1), threadpool_limits(1):
            return fn(*args, **kwargs)

    return wrapper


@_one_torch_thread
def train_dyna(task: TaskLike, agents: AgentMaker, out: str | Path, *, real_steps: int = 20_000,
               initial_steps: int = 4_000, iterations: int = 8, model_steps: int = 20_000, horizon: int = 200,
               eval_episodes: int = 5, uncertainty_penalty: float = 0.0, warm_start: bool = True, seed: int = 0,
               resume: bool = False, model_params: dict[str, Any] | None = None,
               progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """SINDy-RL's Dyna-style loop on ``task`` with ``real_steps`` real environment steps in all; ``agents`` makes
    the RL agent (``envs.dynamics.SB3Agents``).

    ``initial_steps`` random-action steps first; then ``iterations`` times: fit the :class:`SINDyDynamics` on all
    real data, train the agent ``model_steps`` steps in the :class:`SurrogateEnv` (starts: the real states seen; the
    replay buffer emptied at each refit, so that the agent learns from the current model only), evaluate it on
    ``eval_episodes`` real episodes (not counted: they are the yardstick, as for the model-free baseline; the curve's
    x is the real steps the evaluated agent was trained from), and, but after the last round, collect an equal share
    of the remaining real steps with it (exploration noise on). The last agent has used exactly ``real_steps``.
    Each round in the surrogate starts with min(1,000, ``model_steps`` / 10) random-action steps that refill the
    buffer. ``uncertainty_penalty`` (MOPO) takes that many standard deviations of the real rewards off a surrogate
    step's reward per state spread of the members' disagreement (:class:`SurrogateEnv`'s ``penalty``).
    ``warm_start=False`` trains a new agent in each round's model instead of continuing the last one (on Pendulum
    the continued agent lost 50-70 return over the rounds where a new one trained on the last model did not).
    Writes ``curve.json``, ``model.json`` (the last model), ``data.npz``, ``agent.npz`` (its training state: arrays
    and JSON, no pickles) and ``state.json`` after
    every round; ``resume=True`` continues from them (the replay buffer is not kept, so a resumed run is not
    bit-identical to an uninterrupted one).
    """
    from interp_rl.validation import check_int

    for name, v, low in (("real_steps", real_steps, 1), ("initial_steps", initial_steps, 1),
                         ("iterations", iterations, 1), ("model_steps", model_steps, 1), ("horizon", horizon, 1),
                         ("eval_episodes", eval_episodes, 1)):
        check_int(v, name, "train_dyna", low=low)
    if iterations < 2:
        raise bad_value("iterations", "train_dyna", "at least 2 (fit, train, collect, then fit and train again)",
                        iterations)
    if initial_steps >= real_steps:
        raise bad_value("initial_steps", "train_dyna", f"fewer than real_steps ({real_steps})", initial_steps)
    out = Path(out)
    algo = str(getattr(agents, "algo", type(agents).__name__))
    settings = {"method": "dyna", "task": task.task, "real_steps": real_steps, "initial_steps": initial_steps,
                "iterations": iterations, "model_steps": model_steps, "horizon": horizon, "algo": algo,
                "eval_episodes": eval_episodes, "seed": seed, "model": dict(model_params or {})}
    if not (np.isfinite(uncertainty_penalty) and uncertainty_penalty >= 0):
        raise bad_value("uncertainty_penalty", "train_dyna", "a finite number >= 0", uncertainty_penalty)
    if uncertainty_penalty:
        settings["uncertainty_penalty"] = float(uncertainty_penalty)
    if not warm_start:
        settings["warm_start"] = False
    state = _check_resume(out, settings, resume)
    out.mkdir(parents=True, exist_ok=True)
    env_fn = task.env_fn
    per_iter = (real_steps - initial_steps) // (iterations - 1)
    if state:
        data = Transitions.load(out / "data.npz")
        curve, done_iters, seconds = state["curve"], state["iterations_done"], state["seconds"]
    else:
        data = collect_transitions(env_fn, initial_steps, seed=seed + DYNA_DATA_SEED_OFFSET)
        curve, done_iters, seconds = [], 0, 0.0
    agent = None
    t0 = time.perf_counter()
    for it in range(done_iters, iterations):
        model = SINDyDynamics(**{"random_state": seed + it, **(model_params or {})}).fit(data, task)
        env = SurrogateEnv(model, task, data.obs, horizon=horizon, seed=seed + it,
                           penalty=uncertainty_penalty * float(np.std(data.reward)))
        if not warm_start:
            agent = agents.new(env, seed + it)
        elif agent is None:
            agent = agents.load(str(out / AGENT_FILE), env) if (out / AGENT_FILE).is_file() else agents.new(env, seed)
        else:
            agent.set_env(env)
        if hasattr(agent, "replay_buffer") and agent.replay_buffer is not None:
            agent.replay_buffer.reset()  # transitions of the previous model would teach its errors
            # refill the emptied buffer with random actions in the new model before the updates resume (a
            # learning_starts of the shipped hyperparameters counts from the run's start and would pass unused)
            agent.learning_starts = agent.num_timesteps + min(1_000, model_steps // 10)
        agent.learn(model_steps, reset_num_timesteps=False)
        mean, std = _evaluate(agent, env_fn, eval_episodes, seed)
        used = len(data)
        if it < iterations - 1:
            steps = per_iter if it < iterations - 2 else real_steps - len(data)
            data = data + collect_transitions(env_fn, steps, policy=_AgentPolicy(agent),
                                              seed=seed + DYNA_ROLLOUT_SEED_OFFSET + 10_000 * it, action_noise=0.1)
        row = {"iteration": it, "real_steps": used, "return_mean": mean, "return_std": std,
               "model_terms": model.size()["nonzero_terms_per_member"],
               "seconds": seconds + time.perf_counter() - t0}
        curve.append(row)
        data.save(out / "data.npz")
        model.save(out / "model.json")
        agents.save(agent, out / AGENT_FILE)
        atomic_write_text(out / "state.json", json.dumps({"settings": settings, "curve": curve,
                                                          "iterations_done": it + 1,
                                                          "seconds": row["seconds"]}, indent=1) + "\n")
        atomic_write_text(out / "curve.json", json.dumps({"settings": settings, "curve": curve}, indent=1) + "\n")
        if progress is not None:
            progress(row)
    if not (out / "data.npz").is_file():
        data.save(out / "data.npz")
    return {"settings": settings, "curve": curve}


@_one_torch_thread
def train_model_free(task: TaskLike, agents: AgentMaker, out: str | Path, *, real_steps: int = 100_000,
                     eval_every: int = 5_000, eval_episodes: int = 5, seed: int = 0, resume: bool = False,
                     progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The baseline: the agent ``agents`` makes, trained on the real ``task`` for ``real_steps`` steps,
    evaluated every ``eval_every`` real steps on ``eval_episodes`` episodes; ``curve.json`` and ``agent.npz`` after
    each evaluation, ``resume=True`` continues (without the replay buffer)."""
    from interp_rl.validation import check_int

    for name, v in (("real_steps", real_steps), ("eval_every", eval_every), ("eval_episodes", eval_episodes)):
        check_int(v, name, "train_model_free", low=1)
    out = Path(out)
    algo = str(getattr(agents, "algo", type(agents).__name__))
    settings = {"method": "model-free", "task": task.task, "real_steps": real_steps, "eval_every": eval_every,
                "algo": algo, "eval_episodes": eval_episodes, "seed": seed}
    state = _check_resume(out, settings, resume)
    out.mkdir(parents=True, exist_ok=True)
    env = task.env_fn(seed)
    if state and (out / AGENT_FILE).is_file():
        agent = agents.load(str(out / AGENT_FILE), env)
        curve, seconds = state["curve"], state["seconds"]
    else:
        agent, curve, seconds = agents.new(env, seed), [], 0.0
    t0 = time.perf_counter()
    while agent.num_timesteps < real_steps:
        agent.learn(min(eval_every, real_steps - agent.num_timesteps), reset_num_timesteps=False)
        mean, std = _evaluate(agent, task.env_fn, eval_episodes, seed)
        row = {"real_steps": int(agent.num_timesteps), "return_mean": mean, "return_std": std,
               "seconds": seconds + time.perf_counter() - t0}
        curve.append(row)
        agents.save(agent, out / AGENT_FILE)
        atomic_write_text(out / "state.json", json.dumps({"settings": settings, "curve": curve,
                                                          "seconds": row["seconds"]}, indent=1) + "\n")
        atomic_write_text(out / "curve.json", json.dumps({"settings": settings, "curve": curve}, indent=1) + "\n")
        if progress is not None:
            progress(row)
    return {"settings": settings, "curve": curve}


def learning_curve_plot(curves: dict[str, list[list[dict[str, Any]]]], title: str) -> Any:
    """Return against real environment steps: one line per seed (thin) and the mean (thick), per method.

    Parameters
    ----------
    curves
        Per method (the legend's label), its runs: each a list of ``{"real_steps", "return_mean"}`` points.
    title
        The figure's title.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, laid out; the caller saves and closes it.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, (label, runs) in enumerate(curves.items()):
        colour = f"C{i}"
        for run in runs:
            ax.plot([r["real_steps"] for r in run], [r["return_mean"] for r in run], color=colour, alpha=0.3, lw=0.8)
        if runs:
            grid = sorted({r["real_steps"] for run in runs for r in run})
            mean = [np.mean([np.interp(g, [r["real_steps"] for r in run], [r["return_mean"] for r in run])
                             for run in runs]) for g in grid]
            ax.plot(grid, mean, color=colour, lw=2, label=f"{label} ({len(runs)} seed{'s' * (len(runs) > 1)})")
    ax.set_xscale("log")
    ax.set_xlabel("real environment steps")
    ax.set_ylabel("return (real task)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def learning_curve_figure(curves: dict[str, list[list[dict[str, Any]]]], path: str | Path, title: str) -> Path:
    """:func:`learning_curve_plot` saved to ``path`` (its suffix names the format), atomically."""
    import matplotlib.pyplot as plt

    fig = learning_curve_plot(curves, title)
    out = Path(path)
    atomic_write(out, lambda tmp: fig.savefig(tmp, format=out.suffix.lstrip(".") or "png", dpi=110))
    plt.close(fig)
    return out


def steps_to_reach(curve: list[dict[str, Any]], level: float) -> int | None:
    """The first real-step count at which ``curve`` reaches ``level`` (None: never)."""
    for r in curve:
        if r["return_mean"] >= level:
            return int(r["real_steps"])
    return None


def prediction_figure(evaluation: dict[str, Any], path: str | Path, title: str) -> Path:
    """Normalised RMSE of every named state against the prediction horizon (:func:`evaluate_dynamics`'s result)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hs = [h for h in evaluation["horizons"] if str(h) in evaluation["nrmse"]]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for j, name in enumerate(evaluation["states"]):
        ax.plot(hs, [evaluation["nrmse"][str(h)][j] for h in hs], "o-", label=name)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="no better than the mean")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("prediction horizon (steps)")
    ax.set_ylabel("RMSE / state's standard deviation")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    out = Path(path)
    atomic_write(out, lambda tmp: fig.savefig(tmp, format=out.suffix.lstrip(".") or "png", dpi=110))
    plt.close(fig)
    return out
