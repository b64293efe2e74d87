"""Task-level wrappers of :mod:`interp_rl.rollouts`: run a policy on a named task."""

from __future__ import annotations

from typing import Any

from envs.registry import EnvVariant, env_factory, get_task
from interp_rl.errors import ObservationError
from interp_rl.policy import Policy
from interp_rl.rollouts import EnvFn, EvalResult, Rollout
from interp_rl.rollouts import collect as _collect
from interp_rl.rollouts import evaluate as _evaluate

__all__ = ["collect_on_task", "evaluate_on_task", "task_env_fn"]


def task_env_fn(policy: Any, task: str | None, variant: EnvVariant | None = None) -> tuple[EnvFn, str]:
    """The environment factory for ``policy`` on ``task``, checked for size.

    A teacher loaded with :func:`envs.load_teacher` brings the exact
    environment it expects (zoo compatibility included); it is used when
    ``task`` is omitted or names the teacher's own task.
    """
    own_fn = getattr(policy, "env_fn", None)
    own_task = getattr(policy, "task", None)
    if task is None and own_fn is not None and own_task:
        return own_fn, own_task
    if task is None:
        raise ObservationError("Name the task to run the policy on (e.g. task='Hopper-v5').")
    t = get_task(task)
    if own_fn is not None and own_task == t.id and variant is None:
        return own_fn, t.id
    n_obs = len(t.observation_features(variant))
    want = getattr(policy, "obs_dim", None)
    if want is not None and int(want) != n_obs:
        raise ObservationError(
            f"The policy observes {want} features, but {t.id} gives {n_obs}; "
            "is it a policy for another task?"
        )
    return env_factory(t.id, variant), t.id


def evaluate_on_task(
    policy: Policy,
    task: str | None = None,
    episodes: int = 10,
    seed: int = 0,
    *,
    variant: EnvVariant | None = None,
    n_envs: int = 8,
) -> EvalResult:
    """Deterministic evaluation of ``policy`` on ``task``; episode ``i`` uses ``seed + i``.

    Examples
    --------
    >>> import numpy as np
    >>> class Still:
    ...     obs_dim = 4
    ...     def predict(self, obs):
    ...         return np.zeros((len(obs), 1))
    >>> result = evaluate_on_task(Still(), "InvertedPendulum-v5", episodes=2, seed=0)
    >>> len(result.returns), result.seeds
    (2, [0, 1])
    """
    env_fn, task_id = task_env_fn(policy, task, variant)
    return _evaluate(policy, env_fn, episodes, seed, n_envs=n_envs, task=task_id)


def collect_on_task(
    policy: Policy,
    task: str | None = None,
    steps: int = 1000,
    seed: int = 0,
    *,
    labeller: Policy | None = None,
    variant: EnvVariant | None = None,
) -> Rollout:
    """Roll ``policy`` out on ``task`` and record raw observations with ``labeller``'s actions."""
    env_fn, task_id = task_env_fn(policy, task, variant)
    return _collect(policy, env_fn, steps, seed, labeller=labeller, task=task_id)
