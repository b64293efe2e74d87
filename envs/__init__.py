"""Tasks with named features, zoo-compatible wrappers, and teacher loading."""

from envs.loading import load_teacher
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
from envs.task_rollouts import collect_on_task, evaluate_on_task
from envs.training import TrainConfig, train_teacher

__all__ = [
    "TASKS",
    "TrainConfig",
    "EnvVariant",
    "Task",
    "collect_on_task",
    "env_factory",
    "evaluate_on_task",
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

#: The distribution that ships this package (read by interp_rl._packages: other distributions may use the name).
DISTRIBUTION = "interp-rl"
