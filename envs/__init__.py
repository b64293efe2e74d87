"""Tasks with named features, zoo-compatible wrappers, and teacher loading."""

from envs.features import Feature
from envs.registry import (
    TASKS,
    EnvVariant,
    Task,
    env_factory,
    get_task,
    list_tasks,
    make_env,
    make_vec_env,
    observation_dim,
    resolve_task,
    task_signals,
)
from envs.rollouts import collect, evaluate
from envs.teachers import load_teacher
from envs.training import TrainConfig, train_teacher

__all__ = [
    "TASKS",
    "TrainConfig",
    "EnvVariant",
    "Feature",
    "Task",
    "collect",
    "env_factory",
    "evaluate",
    "get_task",
    "list_tasks",
    "load_teacher",
    "make_env",
    "make_vec_env",
    "observation_dim",
    "resolve_task",
    "task_signals",
    "train_teacher",
]
