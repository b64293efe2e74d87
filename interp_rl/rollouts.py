"""Deterministic evaluation and data collection on batches of environments.

These functions take an *environment factory* ``env_fn(seed) -> gymnasium.Env``
so the core never depends on a task registry; :mod:`envs` supplies factories
for named tasks (``envs.env_factory("Hopper-v5")``) and the task-level
wrappers ``envs.evaluate(policy, "Hopper-v5", ...)`` / ``envs.collect(...)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from interp_rl._validation import check_int
from interp_rl.errors import ObservationError
from interp_rl.io import atomic_write_text
from interp_rl.policy import Policy

__all__ = ["EnvFn", "EvalResult", "Rollout", "collect", "evaluate"]

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


def _policy_actions(policy: Policy, obs: np.ndarray, task: str) -> np.ndarray:
    if not np.all(np.isfinite(obs)):
        col = int(np.argwhere(~np.isfinite(obs))[0][1])
        raise ObservationError(
            f"The environment{f' {task}' if task else ''} returned a non-finite observation at index {col}; "
            "the simulation diverged."
        )
    return np.asarray(policy.predict(obs), dtype=np.float64)


def _clip(action: np.ndarray, space: gym.Space) -> np.ndarray:
    if isinstance(space, gym.spaces.Box):
        return np.clip(action, space.low, space.high)
    return action


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

    Episodes run ``n_envs`` at a time in lock-step so the policy is called on
    batches; each episode owns its environment, so results depend only on
    ``seed`` and ``n_envs`` (the batch shape).

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
    returns = [0.0] * episodes
    lengths = [0] * episodes
    next_ep = 0
    envs: list[gym.Env] = []
    slots: list[int] = []
    obs_list: list[np.ndarray] = []
    try:
        while next_ep < episodes or slots:
            while next_ep < episodes and len(slots) < n_envs:
                env = env_fn(seed + next_ep)
                obs, _ = env.reset(seed=seed + next_ep)
                envs.append(env)
                slots.append(next_ep)
                obs_list.append(np.asarray(obs, dtype=np.float64))
                next_ep += 1
            actions = _policy_actions(policy, np.stack(obs_list), task)
            keep_envs, keep_slots, keep_obs = [], [], []
            finished = 0
            for env, ep, act in zip(envs, slots, actions, strict=False):
                obs, reward, terminated, truncated, _ = env.step(_clip(act, env.action_space))
                returns[ep] += float(reward)
                lengths[ep] += 1
                if terminated or truncated:
                    env.close()
                    finished += 1
                else:
                    keep_envs.append(env)
                    keep_slots.append(ep)
                    keep_obs.append(np.asarray(obs, dtype=np.float64))
            envs, slots, obs_list = keep_envs, keep_slots, keep_obs
            if finished and progress is not None:
                progress(finished)
    finally:
        for env in envs:
            env.close()
    return EvalResult(
        returns=returns, lengths=lengths, seeds=[seed + i for i in range(episodes)], task=task
    )


def collect(
    policy: Policy,
    env_fn: EnvFn,
    steps: int,
    seed: int = 0,
    *,
    labeller: Policy | None = None,
    task: str = "",
) -> Rollout:
    """Roll out ``policy`` for ``steps`` steps and record raw observations.

    Episodes are reset with ``seed``, ``seed + 1``, ... as they end. The
    recorded actions are ``labeller``'s (the teacher's, for DAgger) when given,
    else the policy's own.
    """
    steps = check_int(steps, "steps", "collect")
    obs_buf, act_buf, rew_buf, start_buf = [], [], [], []
    episode = 0
    env = env_fn(seed)
    try:
        obs, _ = env.reset(seed=seed)
        start = True
        for _ in range(steps):
            o = np.asarray(obs, dtype=np.float64)[None, :]
            act = _policy_actions(policy, o, task)[0]
            label = act if labeller is None else _policy_actions(labeller, o, task)[0]
            obs_buf.append(o[0])
            act_buf.append(label)
            start_buf.append(start)
            obs, reward, terminated, truncated, _ = env.step(_clip(act, env.action_space))
            rew_buf.append(float(reward))
            start = False
            if terminated or truncated:
                episode += 1
                obs, _ = env.reset(seed=seed + episode)
                start = True
    finally:
        env.close()
    return Rollout(
        observations=np.asarray(obs_buf),
        actions=np.asarray(act_buf),
        rewards=np.asarray(rew_buf),
        episode_starts=np.asarray(start_buf, dtype=bool),
    )
