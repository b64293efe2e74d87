"""The algorithms interp-rl trains and loads, and the hyperparameters it ships for each task.

``envs/hyperparams/ALGO.yml`` holds them (the RL Baselines3 Zoo's where it has them); ``interp-rl train``, the
teachers (:meth:`envs.sb3.SB3Teacher.default_hyperparams`) and the Dyna loop all read them from here.
"""

from __future__ import annotations

import importlib
from importlib import resources
from typing import Any

import yaml

from envs.registry import get_task
from interp_rl.errors import UnknownAlgorithmError

__all__ = ["ALGORITHMS", "algorithm_class", "default_hyperparams"]

#: Algorithm name -> (module, class) of every algorithm interp-rl loads.
ALGORITHMS: dict[str, tuple[str, str]] = {
    "sac": ("stable_baselines3", "SAC"),
    "td3": ("stable_baselines3", "TD3"),
    "ddpg": ("stable_baselines3", "DDPG"),
    "ppo": ("stable_baselines3", "PPO"),
    "a2c": ("stable_baselines3", "A2C"),
    "tqc": ("sb3_contrib", "TQC"),
    "trpo": ("sb3_contrib", "TRPO"),
    "ars": ("sb3_contrib", "ARS"),
    "dqn": ("stable_baselines3", "DQN"),
}

def algorithm_class(algo: str) -> Any:
    """The SB3 class for ``algo`` (``sac``, ``ppo``, ...)."""
    key = algo.lower()
    if key not in ALGORITHMS:
        raise UnknownAlgorithmError(
            f"Unknown algorithm {algo!r}; expected one of {', '.join(ALGORITHMS)}."
        )
    module, name = ALGORITHMS[key]
    return getattr(importlib.import_module(module), name)


def default_hyperparams(algo: str, task: str) -> dict[str, Any]:
    """The shipped hyperparameters of ``algo`` on ``task`` (zoo-tuned where they exist)."""
    algorithm_class(algo)
    text = resources.files("envs").joinpath("hyperparams", f"{algo.lower()}.yml").read_text()
    table = yaml.safe_load(text) or {}
    task_id = get_task(task).id
    entry = table.get(task_id, table.get("default", {}))
    return dict(entry or {})
