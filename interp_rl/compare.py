"""A controller against its teacher: return on the same episodes, and how closely it copies the actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interp_rl.policy import Policy
from interp_rl.rollouts import EvalResult, Rollout, collect, evaluate

__all__ = ["FIDELITY_NOTE", "compare", "fidelity", "half_of_teacher", "percent_of_teacher"]

#: What the fidelity R² means, for people reading it next to a return.
FIDELITY_NOTE = ("Fidelity R² compares the controller's actions with the teacher's on the same states (1: "
                 "identical; 0: no better than the teacher's mean action; below 0: worse). A controller can "
                 "act differently from its teacher yet as well, so a low or negative R² next to a high % of "
                 "teacher is no contradiction.")


def percent_of_teacher(returns: Any, teacher_mean: float) -> Any:
    """A return as % of the teacher's mean, higher always better: ``100 * (1 + (R - T) / |T|)``.

    For a teacher with a positive mean this is ``100 * R / T``. On tasks whose returns are
    negative (Reacher, Pendulum: costs) the plain ratio would turn around (a student at -4 against
    a teacher at -3 would read 133%); here it reads 67%: a third of the teacher's return worse.
    NaN when the teacher's mean is 0.

    >>> percent_of_teacher(80.0, 100.0), percent_of_teacher(-4.0, -3.0), percent_of_teacher(-2.0, -4.0)
    (80.0, 66.66666666666667, 150.0)
    """
    r = np.asarray(returns, dtype=np.float64)
    out = 100.0 * (1.0 + (r - teacher_mean) / abs(teacher_mean)) if teacher_mean else np.full_like(r, np.nan)
    return float(out) if out.ndim == 0 else out


def half_of_teacher(teacher_mean: float) -> float:
    """The return at 50% of the teacher (:func:`percent_of_teacher`): below it an episode counts as failed."""
    return float(teacher_mean - 0.5 * abs(teacher_mean))


def fidelity(student: Policy, observations: np.ndarray, teacher_actions: np.ndarray) -> dict[str, float]:
    """R² and MSE of the student's actions against the teacher's on the given states; for class scores (a
    discrete task: the teacher's actions are one-hot) also ``agreement``, the share of states where both pick
    the same class.

    >>> import numpy as np
    >>> class Left:
    ...     def predict(self, obs): return np.tile([1.0, 0.0], (len(obs), 1))
    >>> fidelity(Left(), np.zeros((4, 3)), np.eye(2)[[0, 0, 1, 0]])["agreement"]
    0.75
    """
    from sklearn.metrics import mean_squared_error, r2_score

    pred = np.asarray(student.predict(observations)).reshape(teacher_actions.shape)
    out = {"r2": float(r2_score(teacher_actions, pred)),
           "mse": float(mean_squared_error(teacher_actions, pred))}
    T = np.asarray(teacher_actions, dtype=np.float64)
    if T.ndim == 2 and T.shape[1] > 1 and len(T) and np.all((T == 0) | (T == 1)) and np.all(T.sum(axis=1) == 1):
        out["agreement"] = float(np.mean(np.argmax(pred, axis=1) == np.argmax(T, axis=1)))
    return out


def compare(student: Policy, teacher: Policy, env_fn: Callable[[int], Any], *, episodes: int, seed: int,
            fidelity_steps: int, teacher_result: EvalResult | None = None,
            teacher_states: Rollout | None = None) -> dict[str, Any]:
    """Return of teacher and student on the same episodes (seeds ``seed ...``), and action fidelity.

    Fidelity is measured on ``fidelity_steps`` states visited by the teacher and as many visited
    by the student, each labelled with the teacher's action. ``teacher_result`` and ``teacher_states`` are the
    teacher's own episodes and visited states, when already run (as :func:`evaluate` and :func:`collect` give them
    for the same ``episodes``, ``seed`` and ``fidelity_steps``): a benchmark runs them once per teacher and seed.

    Returns
    -------
    dict
        ``teacher_return``, ``teacher_return_std``, ``teacher_returns``, ``student_return``,
        ``student_return_std``, ``student_returns``, ``student_lengths``, ``worst_student_return``,
        ``percent_of_teacher``, ``worst_percent_of_teacher`` (the worst episode against the
        teacher's mean), ``fidelity_teacher_states`` and ``fidelity_student_states``.
    """
    t_res = teacher_result or evaluate(teacher, env_fn, episodes, seed)
    s_res = evaluate(student, env_fn, episodes, seed)
    on_teacher = teacher_states if teacher_states is not None else collect(teacher, env_fn, fidelity_steps, seed)
    on_student = collect(student, env_fn, fidelity_steps, seed, labeller=teacher)
    t_mean = t_res.mean_return
    worst = float(min(s_res.returns))
    return {
        "episodes": episodes,
        "seed": seed,
        "teacher_return": t_mean,
        "teacher_return_std": t_res.std_return,
        "teacher_returns": t_res.returns,
        "student_return": s_res.mean_return,
        "student_return_std": s_res.std_return,
        "student_returns": s_res.returns,
        "student_lengths": s_res.lengths,
        "worst_student_return": worst,
        "percent_of_teacher": percent_of_teacher(s_res.mean_return, t_mean),
        "worst_percent_of_teacher": percent_of_teacher(worst, t_mean),
        "fidelity_teacher_states": fidelity(student, on_teacher.observations, on_teacher.actions),
        "fidelity_student_states": fidelity(student, on_student.observations, on_student.actions),
    }
