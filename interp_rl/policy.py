"""The policy protocol shared by teachers and every interpretable controller.

A policy maps a batch of *raw* observations (physical units, shape
``(n, obs_dim)``) to a batch of actions (shape ``(n, act_dim)``). Teachers own
any normalisation they need; students read raw observations.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Policy", "SB3PredictorAdapter", "as_sb3_predictor"]


@runtime_checkable
class Policy(Protocol):
    """Anything with a batched, deterministic ``predict(obs) -> actions``."""

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Return actions of shape ``(n, act_dim)`` for ``obs`` of shape ``(n, obs_dim)``."""
        ...


class SB3PredictorAdapter:
    """Make a :class:`Policy` look like an SB3 model to ``evaluate_policy``.

    Parameters
    ----------
    policy : Policy
        The batched policy to wrap.

    Examples
    --------
    >>> import numpy as np
    >>> class Zero:
    ...     def predict(self, obs):
    ...         return np.zeros((len(obs), 2))
    >>> actions, state = SB3PredictorAdapter(Zero()).predict(np.ones((3, 4)))
    >>> actions.shape, state
    ((3, 2), None)
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, None]:
        """SB3 signature: return ``(actions, None)``; batches and single observations."""
        obs = np.asarray(observation)
        if obs.ndim == 1:
            return np.asarray(self.policy.predict(obs[None, :]))[0], None
        return np.asarray(self.policy.predict(obs)), None


def as_sb3_predictor(policy: Policy) -> SB3PredictorAdapter:
    """Return ``policy`` wrapped so SB3's ``evaluate_policy`` can run it."""
    return SB3PredictorAdapter(policy)
