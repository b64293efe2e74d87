"""Wrappers: old observation layouts rebuilt from the simulator state, and discrete actions as class scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from envs.features import ObservationBlock, layout_features, layout_values

__all__ = ["ClassScores", "LayoutObservation"]


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


class ClassScores(gym.ActionWrapper):  # type: ignore[type-arg]
    """Take one score per class of a ``Discrete(n)`` task and play the class with the highest.

    The action becomes a vector in ``[0, 1]^n`` (a one-hot vector, or class probabilities), so every
    controller, rollout and export of the toolkit works unchanged on discrete tasks: a regression tree
    fitted to one-hot labels is a classification tree (its squared error is the Gini impurity), and a
    mixture whose experts are constant one-hot vectors is an argmax rule. Ties go to the lowest class,
    as ``numpy.argmax`` breaks them.

    >>> env = ClassScores(gym.make("CartPole-v1"))
    >>> env.action_space
    Box(0.0, 1.0, (2,), float64)
    >>> env.action([0.2, 0.7])
    1
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.action_space
        if not isinstance(space, gym.spaces.Discrete):
            raise TypeError(f"ClassScores wraps a Discrete action space; got {space}.")
        self.n_classes = int(space.n)
        self.start = int(space.start)
        self.action_space = gym.spaces.Box(0.0, 1.0, (self.n_classes,), np.float64)

    def action(self, action: Any) -> int:
        scores = np.asarray(action, dtype=np.float64).reshape(-1)
        if scores.shape != (self.n_classes,):
            raise ValueError(f"Expected {self.n_classes} class scores; got an action of shape {scores.shape}.")
        return self.start + int(np.argmax(scores))
