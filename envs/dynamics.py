"""What the SINDy dynamics surrogates need to know of a task: names, known rewards and terminations, an agent.

:mod:`distill.dynamics` fits and runs surrogates on plain arrays and callables; this module supplies them for a
registered task (:func:`dynamics_task`) and makes the SB3 agents the Dyna loop and its model-free baseline train
(:class:`SB3Agents`, with the shipped hyperparameters of ``interp-rl train``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.registry import env_factory, get_task, task_signals
from interp_rl.program import Signal

__all__ = ["REWARDS", "TERMINATIONS", "DynamicsTask", "SB3Agents", "dynamics_task"]


# ------------------------------------------------------------------------------ known task formulas
def _angle(x: np.ndarray) -> np.ndarray:
    return ((x + np.pi) % (2 * np.pi)) - np.pi


def _pendulum_reward(x: np.ndarray, u: np.ndarray, x_next: np.ndarray) -> np.ndarray:
    """Gymnasium's Pendulum-v1: ``-(theta^2 + 0.1 theta_dot^2 + 0.001 u^2)`` on the state before the step."""
    th = np.arctan2(x[:, 1], x[:, 0])
    torque = np.clip(u[:, 0], -2.0, 2.0)
    return -(_angle(th) ** 2 + 0.1 * x[:, 2] ** 2 + 0.001 * torque**2)


def _inverted_pendulum_reward(x: np.ndarray, u: np.ndarray, x_next: np.ndarray) -> np.ndarray:
    """InvertedPendulum-v5: 1 for every step the pole is up after it."""
    return (np.abs(x_next[:, 1]) <= 0.2).astype(np.float64)


#: Known reward formulas ``r(x, u, x')`` by task id; other tasks use a SINDy reward model.
REWARDS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "Pendulum-v1": _pendulum_reward,
    "InvertedPendulum-v5": _inverted_pendulum_reward,
}

#: Known termination conditions ``done(x')`` by task id; other tasks end only by time (and divergence).
TERMINATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "InvertedPendulum-v5": lambda x: ~np.isfinite(x).all(axis=1) | (np.abs(x[:, 1]) > 0.2),
}


@dataclass
class DynamicsTask:
    """A task as :mod:`distill.dynamics` uses it."""

    task: str
    env_fn: Callable[[int], Any]
    states: list[Signal]
    actions: list[Signal]
    reward_fn: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None
    """The known reward ``r(x, u, x')`` (None: fit a SINDy reward model)."""
    termination_fn: Callable[[np.ndarray], np.ndarray] | None
    """The known termination ``done(x')`` (None: episodes end by time only)."""


def dynamics_task(task: str) -> DynamicsTask:
    """The named task's environment, state and action names, and known reward and termination (where known)."""
    t = get_task(task)
    states, actions = task_signals(t.id)
    return DynamicsTask(t.id, env_factory(t.id), list(states), list(actions), REWARDS.get(t.id),
                        TERMINATIONS.get(t.id))


class SB3Agents:
    """Makes and loads SB3 agents of ``algo`` with the hyperparameters ``interp-rl train`` ships for ``task``."""

    def __init__(self, algo: str, task: str) -> None:
        from envs.sb3 import algorithm_class
        from envs.training import default_hyperparams

        self.algo, self.task = algo.lower(), get_task(task).id
        self.cls = algorithm_class(self.algo)
        self.hp = default_hyperparams(self.algo, self.task)

    def new(self, env: Any, seed: int) -> Any:
        from envs.training import _policy_kwargs

        kwargs = {k: v for k, v in self.hp.items() if k not in ("n_timesteps", "policy", "normalize", "n_envs",
                                                               "noise_type", "noise_std", "env_wrapper")}
        kwargs["policy_kwargs"] = _policy_kwargs(kwargs.get("policy_kwargs"))
        return self.cls(self.hp.get("policy", "MlpPolicy"), env, seed=seed, device="cpu", verbose=0, **kwargs)

    def load(self, path: str, env: Any) -> Any:
        """The agent whose training state :meth:`save` wrote to ``path`` (arrays and JSON, no pickles), on ``env``."""
        from envs.agent_state import load_agent_state

        agent = self.new(env, 0)
        load_agent_state(agent, path)
        return agent

    @staticmethod
    def save(agent: Any, path: str | Path) -> None:
        """``agent``'s training state (networks, optimisers, counters) as arrays and JSON, atomically."""
        from envs.agent_state import save_agent_state

        save_agent_state(agent, path)
