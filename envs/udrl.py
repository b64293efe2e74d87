"""Upside-down reinforcement learning (UDRL) with tree ensembles as the behaviour function.

UDRL (Schmidhuber 2019; Srivastava et al. 2019, "Training agents using upside-down reinforcement learning") turns
RL into supervised learning. The behaviour function maps a state and a *command* (the return still wanted and
the steps left to get it) to an action, ``a = f(s, desired_return, desired_horizon)``. Cardenas-Cartagena,
Falzari, Zullich and Sabatelli (ICAART 2025) fit it with random forests and extra trees instead of a network,
which makes the agent a transparent controller: here a :class:`~interp_rl.kinds.forest.ForestProgram` whose inputs
are the task's observation features then ``desired_return`` and ``desired_horizon``.

The loop (Algorithm 1 of Srivastava et al.):

1. ``warmup_episodes`` episodes of uniformly random actions fill the replay buffer.
2. Each iteration fits ``f`` on the buffer's episodes with hindsight commands: at step ``t`` of an episode of
   ``T`` steps the input is ``(s_t, r_t + ... + r_{T-1}, T - t)`` and the target the action taken (one-hot for a
   discrete task, whose actions are then class scores). ``fit_samples`` rows are drawn (episode uniformly, then
   step uniformly, as the paper samples its batches).
3. The exploratory command comes from the ``top_episodes`` best episodes of the buffer: horizon their mean length,
   return ``mean + uniform(0, std)`` of their returns.
4. ``episodes_per_iter`` episodes run with that command (a discrete action drawn in proportion to the class
   scores; a continuous one with Gaussian noise); after each step the command becomes
   ``(desired_return - r, max(desired_horizon - 1, 1))``.
5. The buffer keeps the ``buffer_episodes`` episodes of highest return.

Evaluation runs greedily (the class with the highest score; the action itself) with the command of the top of the
buffer: horizon the mean length, return the mean of the ``top_episodes`` best returns. It does not count towards
``steps``.

Everything is deterministic given ``seed``. A checkpoint (``checkpoint/``: the buffer as ``.npz``, the random state and
history as JSON) lets ``resume`` continue; no pickle is written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.registry import get_task, task_signals
from interp_rl.errors import InvalidParameterError
from interp_rl.io import atomic_write, atomic_write_text
from interp_rl.kinds.forest import COMMAND_FEATURES, ForestProgram, forest_from_sklearn
from interp_rl.program import Controller
from interp_rl.seeds import TRAIN_EVAL_SEED_OFFSET
from interp_rl.validation import check_choice, check_float, check_int

__all__ = ["ESTIMATORS", "CommandEnv", "CommandObservation", "UDRLConfig", "command_env_factory", "train_udrl"]

#: ``--estimator`` choices: a forest of the ICAART 2025 paper, one tree, or the paper's network.
ESTIMATORS = ("forest", "extra-trees", "tree", "nn")


@dataclass(frozen=True)
class UDRLConfig:
    """Configuration of one ``interp-rl train --algo udrl`` run."""

    task: str
    """Task id, e.g. ``CartPole-v1``."""
    steps: int
    """Environment steps of training (warm-up and exploration; evaluation is not counted)."""
    out: str
    """Output folder."""
    seed: int = 0
    """Seed of the episodes, the command sampling and the estimators."""
    estimator: str = "forest"
    """Behaviour function: ``forest`` (random forest), ``extra-trees``, ``tree`` (one tree) or ``nn`` (an MLP)."""
    n_trees: int = 20
    """Trees of ``forest`` and ``extra-trees``."""
    max_depth: int = 0
    """Depth limit of the trees (0: none)."""
    min_samples_leaf: int = 5
    """Fewest training rows in a leaf of the trees."""
    hidden: int = 64
    """Units of each of the two hidden layers of ``nn``."""
    warmup_episodes: int = 10
    """Episodes of random actions before the first fit."""
    buffer_episodes: int = 100
    """Episodes the replay buffer keeps (those of highest return)."""
    top_episodes: int = 20
    """Best episodes the commands are sampled from ("last_few" in the paper)."""
    episodes_per_iter: int = 10
    """Exploratory episodes after each fit."""
    fit_samples: int = 20_000
    """Rows (episode, step) drawn from the buffer for each fit."""
    action_noise: float = 0.1
    """Standard deviation of the exploration noise of continuous actions, as a share of the action range."""
    eval_episodes: int = 5
    """Greedy episodes after each iteration (0: none)."""
    checkpoint_every: int = 1
    """Iterations between checkpoints (0: none)."""

    def check(self) -> None:
        """One-line errors naming the bad setting."""
        get_task(self.task)
        check_int(self.steps, "steps", "train --algo udrl")
        check_choice(self.estimator, "estimator", "train --algo udrl", ESTIMATORS)
        for name in ("n_trees", "min_samples_leaf", "hidden", "warmup_episodes", "buffer_episodes", "top_episodes",
                     "episodes_per_iter", "fit_samples"):
            check_int(getattr(self, name), name, "train --algo udrl")
        for name in ("max_depth", "eval_episodes", "checkpoint_every"):
            check_int(getattr(self, name), name, "train --algo udrl", low=0)
        check_float(self.action_noise, "action_noise", "train --algo udrl", low=0.0)
        if self.top_episodes > self.buffer_episodes:
            raise InvalidParameterError(f"The 'top_episodes' setting of train --algo udrl must be at most "
                                        f"buffer_episodes ({self.buffer_episodes}). Got {self.top_episodes} instead.")


class CommandObservation:
    """What the behaviour function reads: the observation followed by the command, updated by each reward.

    >>> c = CommandObservation(200.0, 100.0)
    >>> c.inputs(np.array([0.5, -0.5])).tolist()
    [0.5, -0.5, 200.0, 100.0]
    >>> c.step(1.0); (c.desired_return, c.desired_horizon)
    (199.0, 99.0)
    """

    def __init__(self, desired_return: float, desired_horizon: float) -> None:
        self.desired_return = float(desired_return)
        self.desired_horizon = float(desired_horizon)

    def inputs(self, obs: np.ndarray) -> np.ndarray:
        """``(obs_dim + 2,)``: the observation, then ``desired_return`` and ``desired_horizon``."""
        return np.concatenate([np.asarray(obs, dtype=np.float64).ravel(),
                               [self.desired_return, self.desired_horizon]])

    def step(self, reward: float) -> None:
        """The command for the next step: the return still wanted, one step fewer (at least one)."""
        self.desired_return -= float(reward)
        self.desired_horizon = max(self.desired_horizon - 1.0, 1.0)


class CommandEnv(gym.Wrapper):  # type: ignore[type-arg]
    """The task's environment with the UDRL command appended to every observation.

    The observation becomes ``(obs..., desired_return, desired_horizon)``, what a UDRL controller reads; each reset
    starts from the given command and each step updates it as :class:`CommandObservation` does (the
    reward subtracted from ``desired_return``, one step fewer in ``desired_horizon``, never below 1). A saved UDRL
    controller then plays through :func:`interp_rl.rollouts.evaluate` like any controller.
    """

    def __init__(self, env: gym.Env, desired_return: float, desired_horizon: float) -> None:
        super().__init__(env)
        self.start_command = (float(desired_return), float(desired_horizon))
        dim = int(np.prod(env.observation_space.shape)) + 2
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float64)
        self._command: Any = None

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._command = CommandObservation(*self.start_command)
        return self._command.inputs(obs), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._command.step(float(reward))
        return self._command.inputs(obs), float(reward), terminated, truncated, info


@dataclass
class _Episode:
    obs: np.ndarray  # (T, obs_dim)
    actions: np.ndarray  # (T, act_dim): one-hot for a discrete task
    rewards: np.ndarray  # (T,)

    @property
    def ret(self) -> float:
        return float(self.rewards.sum())

    def __len__(self) -> int:
        return len(self.rewards)


class _Behaviour:
    """The fitted behaviour function: a forest program, or an MLP for ``nn``."""

    def __init__(self, program: ForestProgram | None, model: Any) -> None:
        self.program, self.model = program, model
        # One state at a time, a walk over Python lists is far faster than the vectorised apply (same arithmetic:
        # the leaf values summed in tree order, then divided by the number of trees).
        self._trees = [] if program is None else [
            (t.feature.tolist(), t.threshold.tolist(), t.left.tolist(), t.right.tolist(), t.intercept.tolist())
            for t in program.trees]

    def scores(self, x: np.ndarray) -> np.ndarray:
        """The unclipped output for one input row ``x`` (observation then command)."""
        if self.program is None:
            return np.asarray(self.model.predict(np.asarray(x, dtype=np.float64)[None, :]), dtype=np.float64).ravel()
        row = np.asarray(x, dtype=np.float64).tolist()
        s: list[float] | None = None
        for feature, threshold, left, right, value in self._trees:
            node = 0
            while left[node] >= 0:
                node = left[node] if row[feature[node]] <= threshold[node] else right[node]
            s = list(value[node]) if s is None else [a + b for a, b in zip(s, value[node], strict=True)]
        assert s is not None
        n = float(len(self._trees))
        return np.array([v / n for v in s])


def _estimator(cfg: UDRLConfig, seed: int) -> Any:
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.tree import DecisionTreeRegressor

    depth = cfg.max_depth or None
    if cfg.estimator == "forest":
        return RandomForestRegressor(n_estimators=cfg.n_trees, max_depth=depth, min_samples_leaf=cfg.min_samples_leaf,
                                     random_state=seed, n_jobs=1)
    if cfg.estimator == "extra-trees":
        return ExtraTreesRegressor(n_estimators=cfg.n_trees, max_depth=depth, min_samples_leaf=cfg.min_samples_leaf,
                                   random_state=seed, n_jobs=1)
    if cfg.estimator == "tree":
        return DecisionTreeRegressor(max_depth=depth, min_samples_leaf=cfg.min_samples_leaf, random_state=seed)
    return MLPRegressor(hidden_layer_sizes=(cfg.hidden, cfg.hidden), max_iter=200, early_stopping=False,
                        random_state=seed)


def _training_rows(buffer: list[_Episode], n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows with hindsight commands: episode uniformly, then step uniformly (all rows if there are fewer)."""
    total = sum(len(e) for e in buffer)
    if total <= n:
        picks = [(i, t) for i, e in enumerate(buffer) for t in range(len(e))]
    else:
        eps = rng.integers(len(buffer), size=n)
        picks = [(int(i), int(rng.integers(len(buffer[i])))) for i in eps]
    X, Y = [], []
    for i, t in picks:
        e = buffer[i]
        to_go = float(e.rewards[t:].sum())
        X.append(np.concatenate([e.obs[t], [to_go, float(len(e) - t)]]))
        Y.append(e.actions[t])
    return np.asarray(X), np.asarray(Y)


def _command(buffer: list[_Episode], top: int, rng: np.random.Generator | None) -> tuple[float, float]:
    """(desired return, desired horizon) from the ``top`` best episodes: with ``rng``, the exploratory command
    ``mean + uniform(0, std)``; without, the evaluation command (the mean)."""
    best = sorted(buffer, key=lambda e: e.ret, reverse=True)[:top]
    returns = np.array([e.ret for e in best])
    horizon = float(np.mean([len(e) for e in best]))
    ret = float(returns.mean())
    if rng is not None:
        ret += float(rng.uniform(0.0, float(returns.std())))
    return ret, horizon


class _Runner:
    def __init__(self, cfg: UDRLConfig) -> None:
        self.task = get_task(cfg.task)
        self.discrete = self.task.discrete
        self.cfg = cfg
        env = self.task.make(cfg.seed, raw_actions=True)
        space: Any = env.action_space
        env.close()
        if self.discrete:
            self.n_classes = int(space.n)
            self.act_dim = self.n_classes
            self.low, self.high = np.zeros(self.act_dim), np.ones(self.act_dim)
        else:
            self.act_dim = int(np.prod(space.shape))
            self.low = np.asarray(space.low, dtype=np.float64).ravel()
            self.high = np.asarray(space.high, dtype=np.float64).ravel()

    def episode(self, seed: int, rng: np.random.Generator, behaviour: _Behaviour | None,
                command: tuple[float, float] | None, greedy: bool) -> _Episode:
        env = self.task.make(seed, raw_actions=True)
        try:
            obs, _ = env.reset(seed=seed)
            cmd = CommandObservation(*(command or (0.0, 1.0)))
            seen, A, R = [], [], []
            while True:
                if behaviour is None:
                    a_vec = self._random_action(rng)
                else:
                    scores = behaviour.scores(cmd.inputs(obs))
                    a_vec = self._act(scores, rng, greedy)
                action = int(np.argmax(a_vec)) if self.discrete else a_vec
                seen.append(np.asarray(obs, dtype=np.float64).ravel())
                A.append(a_vec)
                obs, r, term, trunc, _ = env.step(action)
                R.append(float(r))
                cmd.step(float(r))
                if term or trunc:
                    break
        finally:
            env.close()
        return _Episode(np.asarray(seen), np.asarray(A, dtype=np.float64), np.asarray(R))

    def _random_action(self, rng: np.random.Generator) -> np.ndarray:
        if self.discrete:
            return np.eye(self.n_classes)[int(rng.integers(self.n_classes))]
        return rng.uniform(self.low, self.high)

    def _act(self, scores: np.ndarray, rng: np.random.Generator, greedy: bool) -> np.ndarray:
        if self.discrete:
            if greedy:
                k = int(np.argmax(scores))
            else:
                p = np.clip(scores, 0.0, None) + 1e-6
                k = int(rng.choice(self.n_classes, p=p / p.sum()))
            return np.eye(self.n_classes)[k]
        a = np.clip(scores, self.low, self.high)
        if not greedy and self.cfg.action_noise > 0:
            a = np.clip(a + rng.normal(size=a.shape) * self.cfg.action_noise * (self.high - self.low) / 2,
                        self.low, self.high)
        return a


# ------------------------------------------------------------------------------ checkpoints
def command_env_factory(env_fn: Any, command: dict[str, Any]) -> Any:
    """``env_fn(seed)`` wrapped in :class:`CommandEnv` at ``command`` (``desired_return``, ``desired_horizon``, as a
    UDRL controller's metadata keeps it): what a saved UDRL controller plays in."""
    try:
        target, horizon = float(command["desired_return"]), float(command["desired_horizon"])
    except (KeyError, TypeError, ValueError):
        raise InvalidParameterError(f"A UDRL command needs desired_return and desired_horizon; got "
                                    f"{command!r}.") from None

    def make(seed: int) -> CommandEnv:
        return CommandEnv(env_fn(seed), target, horizon)

    return make


def _save_checkpoint(folder: Path, buffer: list[_Episode], state: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lengths = np.array([len(e) for e in buffer], dtype=np.int64)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, lengths=lengths, obs=np.concatenate([e.obs for e in buffer]),
                     actions=np.concatenate([e.actions for e in buffer]),
                     rewards=np.concatenate([e.rewards for e in buffer]))

    atomic_write(folder / "buffer.npz", write)
    atomic_write_text(folder / "state.json", json.dumps(state, indent=1) + "\n")


def _load_checkpoint(folder: Path) -> tuple[list[_Episode], dict[str, Any]]:
    with np.load(folder / "buffer.npz", allow_pickle=False) as z:
        cut = np.cumsum(z["lengths"])[:-1]
        buffer = [_Episode(o, a, r) for o, a, r in zip(np.split(z["obs"], cut), np.split(z["actions"], cut),
                                                       np.split(z["rewards"], cut), strict=True)]
    return buffer, json.loads((folder / "state.json").read_text())


# ------------------------------------------------------------------------------ training
def train_udrl(cfg: UDRLConfig, *, resume: bool = False,
               on_iteration: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train a UDRL agent; write ``controller.json`` (the forest kinds), ``metrics.json``, ``train_config.json``.

    Returns the metrics: ``history`` (one row per iteration: ``step``, ``episodes``, ``explore_return`` (mean of
    the iteration's exploratory episodes), ``eval_return``, ``command``), ``eval`` (the final evaluation at
    ``command``) and ``command``.
    """
    cfg.check()
    out = Path(cfg.out)
    ckpt = out / "checkpoint"
    runner = _Runner(cfg)
    if resume:
        if not (ckpt / "state.json").is_file():
            raise InvalidParameterError(f"Nothing to resume in {out}: no checkpoint/state.json.")
        buffer, state = _load_checkpoint(ckpt)
        saved, now = dict(state["config"]), asdict(cfg)
        saved.pop("steps"), now.pop("steps")  # a resumed run may be given more steps
        if saved != now:
            changed = sorted(k for k in saved if saved[k] != now.get(k))
            raise InvalidParameterError(f"--resume continues the run in {out} with its own settings; "
                                        f"{', '.join(changed)} differ.")
        rng = np.random.default_rng()
        rng.bit_generator.state = state["rng"]
        steps, n_episodes, history = int(state["steps"]), int(state["episodes"]), list(state["history"])
    else:
        out.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(cfg.seed)
        buffer, steps, n_episodes, history = [], 0, 0, []
        for _ in range(cfg.warmup_episodes):
            e = runner.episode(cfg.seed + n_episodes, rng, None, None, greedy=False)
            buffer.append(e)
            steps += len(e)
            n_episodes += 1
        buffer = _keep_best(buffer, cfg.buffer_episodes)
        history.append({"step": steps, "episodes": n_episodes,
                        "explore_return": float(np.mean([e.ret for e in buffer])), "eval_return": None,
                        "command": None, "seconds": 0.0})
    atomic_write_text(out / "train_config.json", json.dumps({"algo": "udrl", **asdict(cfg)}, indent=1) + "\n")

    behaviour = None
    while steps < cfg.steps:
        start = time.perf_counter()
        behaviour = _fit(cfg, buffer, rng, runner)
        command = _command(buffer, cfg.top_episodes, rng)
        fresh = []
        for _ in range(cfg.episodes_per_iter):
            e = runner.episode(cfg.seed + n_episodes, rng, behaviour, command, greedy=False)
            fresh.append(e)
            steps += len(e)
            n_episodes += 1
            if steps >= cfg.steps:
                break
        buffer = _keep_best(buffer + fresh, cfg.buffer_episodes)
        row = {"step": steps, "episodes": n_episodes, "explore_return": float(np.mean([e.ret for e in fresh])),
               "eval_return": None, "command": list(command)}
        if cfg.eval_episodes:
            row["eval_return"] = _evaluate(runner, behaviour, _command(buffer, cfg.top_episodes, None), cfg)[0]
        row["seconds"] = round(time.perf_counter() - start, 3)
        history.append(row)
        if on_iteration is not None:
            on_iteration(row)
        if cfg.checkpoint_every and len(history) % cfg.checkpoint_every == 0:
            _save_checkpoint(ckpt, buffer, {"config": asdict(cfg), "rng": rng.bit_generator.state, "steps": steps,
                                            "episodes": n_episodes, "history": history})

    behaviour = _fit(cfg, buffer, rng, runner) if behaviour is None else behaviour
    command = _command(buffer, cfg.top_episodes, None)
    mean, returns = _evaluate(runner, behaviour, command, cfg, episodes=max(cfg.eval_episodes, 1))
    metrics = {"algo": "udrl", "task": cfg.task, "estimator": cfg.estimator, "seed": cfg.seed, "steps": steps,
               "episodes": n_episodes, "command": {"desired_return": command[0], "desired_horizon": command[1]},
               "eval": {"mean_return": mean, "returns": returns, "episodes": len(returns)},
               "buffer": {"best_return": max(e.ret for e in buffer),
                          "mean_return": float(np.mean([e.ret for e in buffer]))},
               "history": history}
    if behaviour.program is not None:
        features, actions = task_signals(cfg.task)
        ctrl = Controller(behaviour.program, [*features, *COMMAND_FEATURES], actions, cfg.task,
                          {"method": "udrl", "estimator": cfg.estimator, "seed": cfg.seed,
                           "command": metrics["command"], "eval_return": mean, "config": asdict(cfg)})
        ctrl.save(out / "controller.json")
        metrics["controller"] = "controller.json"
        metrics["size"] = ctrl.size()
    atomic_write_text(out / "metrics.json", json.dumps(metrics, indent=1) + "\n")
    return metrics


def _keep_best(buffer: list[_Episode], n: int) -> list[_Episode]:
    """The ``n`` episodes of highest return (the earlier one first among equals)."""
    order = sorted(range(len(buffer)), key=lambda i: (-buffer[i].ret, i))[:n]
    return [buffer[i] for i in sorted(order)]


def _fit(cfg: UDRLConfig, buffer: list[_Episode], rng: np.random.Generator, runner: _Runner) -> _Behaviour:
    X, Y = _training_rows(buffer, cfg.fit_samples, rng)
    model = _estimator(cfg, int(rng.integers(2**31 - 1)))
    if cfg.estimator == "nn":
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, Y)
        return _Behaviour(None, model)
    model.fit(X, Y if Y.shape[1] > 1 else Y[:, 0])
    return _Behaviour(forest_from_sklearn(model, runner.low, runner.high), model)


def _evaluate(runner: _Runner, behaviour: _Behaviour, command: tuple[float, float], cfg: UDRLConfig,
              episodes: int | None = None) -> tuple[float, list[float]]:
    rng = np.random.default_rng(0)  # greedy episodes draw nothing; the generator is only passed along
    returns = [runner.episode(TRAIN_EVAL_SEED_OFFSET + cfg.seed * 1000 + i, rng, behaviour, command, greedy=True).ret
               for i in range(episodes if episodes is not None else cfg.eval_episodes)]
    return float(np.mean(returns)), returns
