"""How a candidate controller is scored on held-out episodes wherever a stage chooses between candidates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interp_rl.rollouts import evaluate

__all__ = ["held_out_score"]


def held_out_score(policy: Any, env_fn: Callable[[int], Any], episodes: int, seed: int, *,
                   n_envs: int = 8) -> tuple[float, float, float]:
    """``(score, mean, worst)`` of ``policy`` on held-out episodes (seeds ``seed ...``): the score is the mean of the
    mean return and of the worst quarter's mean return, so a rare catastrophe counts as much as a slower gait."""
    res = evaluate(policy, env_fn, episodes, seed=seed, n_envs=n_envs)
    r = np.sort(np.asarray(res.returns))
    tail = float(r[: max(1, len(r) // 4)].mean())
    return 0.5 * (float(r.mean()) + tail), float(r.mean()), float(r[0])
