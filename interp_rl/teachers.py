"""The teacher protocol: what students and DAgger rely on from the black box they distil.

A teacher is a :class:`~interp_rl.policy.Policy` (batched deterministic ``predict`` on raw
observations) that also knows its task: the action bounds, the environment it expects
(``env_fn``, required), and, when it has them, its critic — ``q_values(obs, actions)`` for
Q-function agents (SAC, TD3, DDPG, TQC), ``value(obs)`` for state-value agents (PPO, A2C, TRPO).
A teacher that can also train a new agent on its own task and observation layout offers
``train_from_scratch(out, *, algo, steps, seed, eval_episodes, hyperparams, resume, on_checkpoint, checkpoint_every)``
(optional; RL from scratch, :class:`distill.from_scratch.ScratchTrainer`, needs it). A teacher with continuous
actions may offer ``action_jacobian(obs) -> (n, act_dim, obs_dim)``, the gradient of ``predict`` (optional;
:func:`interp_rl.verify.search_policy` climbs it, and falls back to finite differences without it).

:class:`envs.sb3.SB3Teacher` implements it for Stable-Baselines3 agents; anything else with
these attributes is a teacher too (a test's stand-in with a known Q-function, a hand-written
controller). :func:`check_teacher` tells, in one line, what an object lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from interp_rl.errors import InterpRLError

__all__ = ["Teacher", "check_teacher"]


@runtime_checkable
class Teacher(Protocol):
    """A policy to distil, with its task, action bounds and (optionally) its critic."""

    task: str
    """The task it acts in (a ``-v5`` id), or ``""``."""
    obs_dim: int
    act_dim: int
    action_low: np.ndarray
    """Lower action bounds, shape ``(act_dim,)``."""
    action_high: np.ndarray
    """Upper action bounds, shape ``(act_dim,)``."""
    env_fn: Callable[[int], Any]
    """``env_fn(seed) -> gymnasium.Env``: exactly the environment the teacher expects."""

    @property
    def has_q(self) -> bool:
        """Whether :meth:`q_values` is available."""
        ...

    @property
    def has_value(self) -> bool:
        """Whether :meth:`value` is available."""
        ...

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic actions ``(n, act_dim)`` for raw observations ``(n, obs_dim)``."""
        ...

    def q_values(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The critic's ``Q(s, a)``, shape ``(n,)``, for raw observations and env-space actions."""
        ...

    def value(self, obs: np.ndarray) -> np.ndarray:
        """The state value ``V(s)``, shape ``(n,)``."""
        ...


_REQUIRED = ("predict", "task", "obs_dim", "act_dim", "action_low", "action_high", "env_fn", "has_q",
             "has_value")


def check_teacher(teacher: Any, owner: str) -> Teacher:
    """Return ``teacher`` if it implements :class:`Teacher`, else raise a one-line error naming what is missing.

    >>> check_teacher(object(), "DAgger")
    Traceback (most recent call last):
    ...
    interp_rl.errors.InterpRLError: DAgger needs a teacher (interp_rl.teachers.Teacher); object has no predict, \
task, obs_dim, act_dim, action_low, action_high, env_fn, has_q, has_value.
    """
    missing = [name for name in _REQUIRED if not hasattr(teacher, name)]
    if not missing and not callable(getattr(teacher, "env_fn", None)):
        missing = ["env_fn (a callable seed -> gymnasium.Env)"]
    if missing:
        raise InterpRLError(f"{owner} needs a teacher (interp_rl.teachers.Teacher); {type(teacher).__name__} "
                            f"has no {', '.join(missing)}.")
    return teacher  # type: ignore[no-any-return]
