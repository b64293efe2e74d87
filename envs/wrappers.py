"""Observation wrappers that rebuild old observation layouts from the simulator state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from envs.features import ObservationBlock, layout_features, layout_values

__all__ = ["LayoutObservation"]


class LayoutObservation(gym.ObservationWrapper):  # type: ignore[type-arg]
    """Replace a MuJoCo task's observation with one computed from ``layout``.

    Used to give agents trained on the old ``-v3`` tasks the observation they
    saw (Ant's 111 values, Humanoid's 376).
    """

    def __init__(self, env: gym.Env, layout: Sequence[ObservationBlock]) -> None:
        super().__init__(env)
        self.layout = tuple(layout)
        model = env.unwrapped.model  # type: ignore[attr-defined]
        n = len(layout_features(self.layout, model))
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (n,), np.float64)

    def observation(self, observation: Any) -> np.ndarray:
        u = self.env.unwrapped
        return layout_values(self.layout, u.model, u.data)  # type: ignore[attr-defined]
