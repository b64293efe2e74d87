"""The rollout engine: every episode interp-rl runs goes through :func:`run_episodes`.

Evaluation (:func:`evaluate`), data collection (:func:`collect`), DAgger's mixed rollouts
(the :func:`mixture` hook), leaf tuning's batches of parameter sets (an :class:`Actor` keyed
on the episode index) and the CLI's one-episode pictures all call it.

These functions take an *environment factory* ``env_fn(seed) -> gymnasium.Env``
so the core never depends on a task registry; :mod:`envs` supplies factories
for named tasks (``envs.env_factory("Hopper-v5")``) and the task-level
wrappers ``envs.evaluate_on_task(policy, "Hopper-v5", ...)`` / ``envs.collect_on_task(...)``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sized
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from interp_rl.errors import ObservationError, bad_value
from interp_rl.io import atomic_write_text
from interp_rl.policy import Policy
from interp_rl.simstate import SimState, capture, restore
from interp_rl.validation import check_int

__all__ = [
    "Actor",
    "EnvFn",
    "Episodes",
    "EvalResult",
    "Rollout",
    "as_actor",
    "collect",
    "episode_horizon",
    "evaluate",
    "labelled",
    "mixture",
    "run_episodes",
]

EnvFn = Callable[[int], gym.Env]


@dataclass(frozen=True)
class EvalResult:
    """Per-episode results of :func:`evaluate`."""

    returns: list[float]
    """Undiscounted return of each episode, in episode order."""
    lengths: list[int]
    """Number of steps of each episode."""
    seeds: list[int]
    """Reset seed of each episode (``seed + i``)."""
    task: str = ""
    """Task the episodes ran on."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form provenance (teacher path, algorithm, versions)."""

    @property
    def mean_return(self) -> float:
        return float(np.mean(self.returns))

    @property
    def std_return(self) -> float:
        return float(np.std(self.returns))

    @property
    def mean_length(self) -> float:
        return float(np.mean(self.lengths))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            mean_return=self.mean_return, std_return=self.std_return, episodes=len(self.returns)
        )
        return out

    def save(self, path: str) -> None:
        """Write the results as JSON, atomically."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")


@dataclass(frozen=True)
class Rollout:
    """Observations visited by a policy, with the actions it (or a labeller) chose."""

    observations: np.ndarray
    """Raw observations, shape ``(n, obs_dim)``."""
    actions: np.ndarray
    """Actions, shape ``(n, act_dim)``."""
    rewards: np.ndarray
    """Reward received after each action, shape ``(n,)``."""
    episode_starts: np.ndarray
    """True where a new episode begins, shape ``(n,)``."""
    episodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Start index of the episode each step belongs to, shape ``(n,)``."""
    states: list[SimState] = field(default_factory=list)
    """With ``snapshots=True``: the exact environment state at each recorded step, to restore it later
    (:func:`interp_rl.simstate.restore`, or given to :func:`run_episodes` in place of a seed)."""


@dataclass(frozen=True)
class Episodes:
    """What :func:`run_episodes` ran: per-episode results and, when recorded, every step."""

    returns: list[float]
    """Undiscounted return of each started episode, in start order (partial if unfinished)."""
    lengths: list[int]
    """Steps of each started episode."""
    seeds: list[int]
    """Reset seed of each started episode."""
    finished: list[bool]
    """Whether each episode ended (terminated or truncated) rather than being cut by ``steps``."""
    rollout: Rollout | None = None
    """The recorded steps (``record=True``), in the order they were taken."""
    terminated: list[bool] = field(default_factory=list)
    """Whether each episode ended by the task's own termination (a fall), not a time limit or a cut."""
    final_observations: list[np.ndarray] = field(default_factory=list)
    """The observation each episode ended in (after its last step)."""


class Actor(Protocol):
    """The rollout engine's hook: actions for a batch of observations.

    ``episodes[i]`` is the start index of the episode row ``i`` belongs to (what a batch of
    parameter sets, one per episode, keys on). Return the actions to execute, or
    ``(actions, labels)`` to record ``labels`` (a teacher's actions) in their place.
    """

    def __call__(self, obs: np.ndarray, episodes: np.ndarray) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        ...


def as_actor(policy: Policy | Actor) -> Actor:
    """A :class:`Policy` (anything with ``predict``) as an :class:`Actor`; an actor as it is."""
    if hasattr(policy, "predict"):
        return lambda obs, episodes: np.asarray(policy.predict(obs), dtype=np.float64)  # type: ignore[union-attr]
    return policy  # type: ignore[return-value]


def mixture(teacher: Policy, student: Policy | None, beta: float, rng: np.random.Generator, *,
            noise: float = 0.0, low: Any = None, high: Any = None) -> Actor:
    """DAgger's mixing hook: each row follows ``teacher`` with probability ``beta``, else ``student``.

    Every row is labelled with the teacher's (clean) action. With no student (or ``beta >= 1``)
    the teacher acts alone. ``noise > 0`` adds Gaussian noise of that many half-ranges
    ``(high - low) / 2`` to the *executed* actions, clipped to the bounds (DART): the data then
    shows how the teacher recovers from the small mistakes a student makes.
    """
    if noise > 0 and (low is None or high is None):
        raise ValueError("Action noise needs the action bounds low and high.")
    half = (np.asarray(high, dtype=np.float64) - np.asarray(low, dtype=np.float64)) / 2 if noise > 0 else None

    def act(obs: np.ndarray, episodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        labels = np.asarray(teacher.predict(obs), dtype=np.float64).reshape(len(obs), -1)
        if student is None or beta >= 1.0:
            executed = labels
        else:
            own = np.asarray(student.predict(obs), dtype=np.float64).reshape(labels.shape)
            use_teacher = rng.random(len(obs)) < beta
            executed = np.where(use_teacher[:, None], labels, own)
        if half is not None:
            executed = np.clip(executed + rng.normal(size=executed.shape) * noise * half, low, high)
        return executed, labels

    return act


def labelled(policy: Policy, labeller: Policy) -> Actor:
    """``policy`` acts, ``labeller``'s actions on the same states are recorded (DAgger's labels)."""

    def act(obs: np.ndarray, episodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (np.asarray(policy.predict(obs), dtype=np.float64),
                np.asarray(labeller.predict(obs), dtype=np.float64))

    return act


def episode_horizon(env_fn: EnvFn, seed: int = 0) -> int:
    """The environment's time limit (``spec.max_episode_steps``; 1000 when it has none)."""
    env = env_fn(seed)
    try:
        return int(getattr(getattr(env, "spec", None), "max_episode_steps", None) or 1000)
    finally:
        env.close()


def _check_finite(obs: np.ndarray, task: str) -> None:
    if not np.all(np.isfinite(obs)):
        col = int(np.argwhere(~np.isfinite(obs))[0][1])
        raise ObservationError(
            f"The environment{f' {task}' if task else ''} returned a non-finite observation at index {col}; "
            "the simulation diverged."
        )


def _clip(action: np.ndarray, space: gym.Space) -> np.ndarray:
    if isinstance(space, gym.spaces.Box):
        return np.clip(action, space.low, space.high)
    return action


def run_episodes(
    actor: Policy | Actor,
    env_fn: EnvFn,
    seeds: Iterable[int | SimState],
    *,
    n_envs: int = 8,
    steps: int | None = None,
    record: bool = False,
    snapshots: bool = False,
    episode_steps: int | None = None,
    task: str = "",
    progress: Callable[[int], None] | None = None,
) -> Episodes:
    """The rollout engine: run episodes in lock-step batches; every episode loop in interp-rl is this one.

    Up to ``n_envs`` environments step together, so the actor is called on batches. Each
    episode takes the next seed from ``seeds``: its environment is reset with it (the first
    episode of a slot also builds the environment with ``env_fn(seed)``); when an episode
    ends, its environment is reset with the next seed, or closed when there is none. Results
    depend only on the seeds, ``n_envs`` and the actor.

    Parameters
    ----------
    actor : Policy or Actor
        A policy (batched ``predict``), or a hook ``actor(obs, episodes)`` returning actions
        or ``(actions, labels)`` (see :class:`Actor`, :func:`mixture`, :func:`labelled`).
    env_fn : callable
        ``env_fn(seed) -> gymnasium.Env``.
    seeds : iterable of int or SimState
        Reset seeds, one per episode, consumed as episodes start (may be endless with ``steps``). A
        :class:`~interp_rl.simstate.SimState` in their place continues a recorded episode from that moment (a
        takeover): its environment is built with the state's seed and the state restored; the episode's return
        and length then count from there.
    n_envs : int, default 8
        Environments stepped together.
    steps : int, optional
        Stop after this many steps in all (the last batch is cut to fit); None runs every
        episode of ``seeds`` to its end.
    record : bool, default False
        Keep every step's observation, action (or label), reward and episode start.
    snapshots : bool, default False
        With ``record``, also keep the exact environment state of every recorded step (``Rollout.states``).
    episode_steps : int, optional
        Cut every episode after this many steps (it then counts as not finished): short look-ahead rollouts.
    task : str
        Named in the error raised when the simulation returns non-finite observations.
    progress : callable, optional
        Called with the number of episodes that just ended.

    Returns
    -------
    Episodes
    """
    n_envs = check_int(n_envs, "n_envs", "run_episodes")
    if episode_steps is not None:
        episode_steps = check_int(episode_steps, "episode_steps", "run_episodes")
    if steps is None and not isinstance(seeds, Sized):
        raise bad_value("steps", "run_episodes", "an int when seeds is endless", steps)
    act = as_actor(actor)
    seed_iter = iter(seeds)
    returns: list[float] = []
    lengths: list[int] = []
    ep_seeds: list[int] = []
    finished: list[bool] = []
    ended_in: list[bool] = []
    final_obs: list[np.ndarray] = []
    obs_buf: list[np.ndarray] = []
    act_buf: list[np.ndarray] = []
    rew_buf: list[float] = []
    start_buf: list[bool] = []
    ep_buf: list[int] = []
    envs: list[gym.Env] = []
    slot_ep: list[int] = []
    slot_obs: list[np.ndarray] = []
    slot_new: list[bool] = []
    slot_state: list[SimState | None] = []
    state_buf: list[SimState | None] = []
    snapshots = snapshots and record

    def start(env: gym.Env | None) -> tuple[gym.Env, int, np.ndarray, SimState | None] | None:
        item = next(seed_iter, None)
        if item is None:
            return None
        seed = item.seed if isinstance(item, SimState) else int(item)
        env = env if env is not None else env_fn(seed)
        if isinstance(item, SimState):
            o, state = restore(env, item), item
        else:
            o, _ = env.reset(seed=seed)
            o = np.asarray(o, dtype=np.float64)
            state = SimState(o.copy(), seed=seed, step=0) if snapshots else None
        returns.append(0.0)
        lengths.append(0)
        ep_seeds.append(seed)
        finished.append(False)
        ended_in.append(False)
        final_obs.append(np.asarray(o, dtype=np.float64))
        return env, len(returns) - 1, np.asarray(o, dtype=np.float64), state

    taken = 0
    try:
        while len(envs) < n_envs:
            began = start(None)
            if began is None:
                break
            envs.append(began[0])
            slot_ep.append(began[1])
            slot_obs.append(began[2])
            slot_new.append(True)
            slot_state.append(began[3])
        while envs and (steps is None or taken < steps):
            k = len(envs) if steps is None else min(len(envs), steps - taken)
            batch = np.stack(slot_obs[:k])
            _check_finite(batch, task)
            eps = np.asarray(slot_ep[:k], dtype=np.int64)
            out = act(batch, eps)
            actions, labels = out if isinstance(out, tuple) else (out, out)
            actions = np.asarray(actions, dtype=np.float64).reshape(k, -1)
            if record:
                obs_buf.append(batch)
                act_buf.append(np.asarray(labels, dtype=np.float64).reshape(k, -1))
                start_buf += slot_new[:k]
                ep_buf += slot_ep[:k]
                state_buf += slot_state[:k]
            taken += k
            ended = 0
            for i in range(k):
                env = envs[i]
                before = capture(env) if snapshots else None
                executed = _clip(actions[i], env.action_space)
                o, reward, terminated, truncated, _ = env.step(executed)
                ep = slot_ep[i]
                returns[ep] += float(reward)
                lengths[ep] += 1
                if record:
                    rew_buf.append(float(reward))
                slot_new[i] = False
                cut = episode_steps is not None and lengths[ep] >= episode_steps
                if terminated or truncated or cut:
                    finished[ep] = bool(terminated or truncated)
                    ended_in[ep] = bool(terminated)
                    final_obs[ep] = np.asarray(o, dtype=np.float64)
                    ended += 1
                    began = start(env)
                    if began is None:
                        env.close()
                        envs[i] = None  # type: ignore[call-overload]
                        continue
                    _, slot_ep[i], o, slot_state[i] = began
                    slot_new[i] = True
                elif snapshots:
                    last = slot_state[i]
                    assert last is not None
                    slot_state[i] = SimState(np.asarray(o, dtype=np.float64).copy(), seed=last.seed,
                                             step=last.step + 1, before=before,
                                             action=np.array(executed, copy=True))
                slot_obs[i] = np.asarray(o, dtype=np.float64)
            keep = [i for i in range(len(envs)) if envs[i] is not None]
            envs, slot_ep, slot_obs, slot_new, slot_state = (
                [xs[i] for i in keep] for xs in (envs, slot_ep, slot_obs, slot_new, slot_state))
            if ended and progress is not None:
                progress(ended)
    finally:
        for env in envs:
            env.close()
    rollout = None
    if record:
        obs_dim = obs_buf[0].shape[1] if obs_buf else 0
        rollout = Rollout(
            observations=np.concatenate(obs_buf) if obs_buf else np.zeros((0, obs_dim)),
            actions=np.concatenate(act_buf) if act_buf else np.zeros((0, 0)),
            rewards=np.asarray(rew_buf),
            episode_starts=np.asarray(start_buf, dtype=bool),
            episodes=np.asarray(ep_buf, dtype=np.int64),
            states=[st for st in state_buf if st is not None],
        )
    return Episodes(returns, lengths, ep_seeds, finished, rollout, ended_in, final_obs)


def evaluate(
    policy: Policy,
    env_fn: EnvFn,
    episodes: int = 10,
    seed: int = 0,
    *,
    n_envs: int = 8,
    task: str = "",
    progress: Callable[[int], None] | None = None,
) -> EvalResult:
    """Run ``episodes`` deterministic episodes; episode ``i`` is reset with ``seed + i``.

    Episodes run ``n_envs`` at a time in lock-step (:func:`run_episodes`) so the policy is
    called on batches; results depend only on ``seed`` and ``n_envs`` (the batch shape).

    Parameters
    ----------
    policy : Policy
        Batched ``predict(obs) -> actions`` on raw observations.
    env_fn : callable
        ``env_fn(seed) -> gymnasium.Env``.
    episodes : int
        Number of episodes, >= 1.
    seed : int
        Seed of the first episode.
    n_envs : int
        Environments stepped together.
    progress : callable, optional
        Called with the number of episodes just finished.

    Returns
    -------
    EvalResult
    """
    episodes = check_int(episodes, "episodes", "evaluate")
    n_envs = check_int(n_envs, "n_envs", "evaluate")
    ran = run_episodes(policy, env_fn, range(seed, seed + episodes), n_envs=n_envs, task=task,
                       progress=progress)
    return EvalResult(returns=ran.returns, lengths=ran.lengths, seeds=ran.seeds, task=task)


def collect(
    policy: Policy,
    env_fn: EnvFn,
    steps: int,
    seed: int = 0,
    *,
    labeller: Policy | None = None,
    task: str = "",
) -> Rollout:
    """Roll out ``policy`` for ``steps`` steps in one environment and record raw observations.

    Episodes are reset with ``seed``, ``seed + 1``, ... as they end. The recorded actions are
    ``labeller``'s (the teacher's, for DAgger) when given, else the policy's own.
    """
    steps = check_int(steps, "steps", "collect")
    actor = labelled(policy, labeller) if labeller is not None else policy
    ran = run_episodes(actor, env_fn, itertools.count(seed), n_envs=1, steps=steps, record=True, task=task)
    assert ran.rollout is not None
    return ran.rollout
