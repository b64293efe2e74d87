"""Saved controllers in their environment, and a saved controller as a teacher.

:func:`controller_env` builds the environment a saved controller runs in: its task with the environment variant it
was made for, and, for an upside-down RL controller (``envs.udrl``), the command appended to each observation.

:class:`ControllerTeacher` makes a saved controller a teacher (:class:`interp_rl.teachers.Teacher`), so that a big
controller can be distilled into a smaller one by any method: a UDRL forest of 20 trees and 50,000 leaves into one
tree of 16 leaves that a person can read, a deep tree into a shallow one. ``interp-rl distill METHOD --teacher
CONTROLLER`` does it (:func:`envs.loading.load_teacher` reads a controller folder or ``controller.json``).

>>> from envs.loading import load_teacher                              # doctest: +SKIP
>>> forest = load_teacher("runs/udrl-cartpole")  # its controller.json  # doctest: +SKIP
>>> forest.algo, forest.feature_names[-2:]                              # doctest: +SKIP
('forest', ['desired_return', 'desired_horizon'])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interp_rl.errors import InterpRLError

__all__ = ["ControllerTeacher", "controller_env"]


def controller_env(ctrl: Any, env: str | None = None) -> tuple[Callable[[int], Any], str]:
    """The environment factory a saved controller runs in, and its task.

    Parameters
    ----------
    ctrl : Controller
        The saved controller.
    env : str, optional
        Another task to run it in (``Hopper-v5`` or a zoo id); by default its own.

    Returns
    -------
    tuple
        ``(env_fn, task)``: ``env_fn(seed)`` builds the task with the controller's environment variant; for a UDRL
        controller (a ``command`` in its metadata, two more inputs than the task's features), the command is
        appended to every observation and updated by every reward (:func:`envs.udrl.command_env_factory`).

    Raises
    ------
    InterpRLError
        When the controller names no task and ``env`` is not given, or reads another number of features.
    """
    from envs import EnvVariant, env_factory, get_task

    task = get_task(env).id if env else ctrl.task
    if not task:
        raise InterpRLError("The controller does not name its task; pass --env TASK.")
    variant = EnvVariant(**ctrl.metadata.get("teacher", {}).get("variant", {}))
    n_obs = len(get_task(task).observation_features(variant))
    command = ctrl.metadata.get("command")
    if isinstance(command, dict) and ctrl.program.obs_dim == n_obs + 2:  # UDRL: it also reads its command
        from envs.udrl import command_env_factory

        return command_env_factory(env_factory(task, variant), command), task
    if n_obs != ctrl.program.obs_dim:
        raise InterpRLError(f"The controller observes {ctrl.program.obs_dim} features, but {task} gives {n_obs}; "
                            "is it a controller for another task?")
    return env_factory(task, variant), task


class ControllerTeacher:
    """A saved controller as a teacher: what DAgger distils a smaller controller from.

    It acts as the controller does, on the controller's own inputs (a UDRL controller's observation and command)
    in the controller's environment. On a discrete task ``predict`` gives the one-hot vector of the class the
    controller plays (its highest score, ties to the first, as :class:`~envs.wrappers.ClassScores` plays it) and
    :meth:`action_scores` the scores themselves. It has no critic, so the critic-weighted methods refuse it.

    Parameters
    ----------
    controller : Controller
        The saved controller.
    source : str
        Where it came from, for provenance.
    env : str, optional
        Another task to run it in (see :func:`controller_env`).

    Attributes
    ----------
    algo : str
        The controller's kind (``forest``, ``tree``, ...), where an SB3 teacher names its algorithm.
    controller_metadata : dict
        What a controller distilled from this one must carry to run in the same environment (a UDRL controller's
        ``command``); :func:`distill.job.run_job` copies it into the student's metadata.
    """

    has_q = False
    has_value = False
    gamma = 0.99

    def __init__(self, controller: Any, *, source: str = "", env: str | None = None) -> None:
        from envs import get_task

        self.controller = controller
        self.env_fn, self.task = controller_env(controller, env)
        self.algo = str(controller.kind)
        self.source = source
        self.variant = dict(controller.metadata.get("teacher", {}).get("variant", {}))
        self.feature_names = controller.feature_names
        self.obs_dim = int(controller.program.obs_dim)
        self.act_dim = int(controller.program.act_dim)
        self.n_classes = self.act_dim if get_task(self.task).discrete else 0
        if self.n_classes:
            self.action_low, self.action_high = np.zeros(self.n_classes), np.ones(self.n_classes)
        else:
            probe = self.env_fn(0)
            try:
                space = probe.action_space
                self.action_low = np.asarray(space.low, dtype=np.float64).reshape(-1)
                self.action_high = np.asarray(space.high, dtype=np.float64).reshape(-1)
            finally:
                probe.close()
        command = controller.metadata.get("command")
        self.controller_metadata: dict[str, Any] = {"command": dict(command)} if isinstance(command, dict) else {}

    def __repr__(self) -> str:
        return f"ControllerTeacher({self.algo} controller on {self.task}, obs {self.obs_dim}, act {self.act_dim})"

    @property
    def discrete(self) -> bool:
        """Whether the controller picks one of :attr:`n_classes` classes."""
        return self.n_classes > 0

    def action_scores(self, obs: np.ndarray) -> np.ndarray:
        """A discrete controller's class scores ``(n, n_classes)`` (the highest is played)."""
        if not self.n_classes:
            raise InterpRLError(f"The {self.algo} controller has continuous actions; action_scores() is for a "
                                "controller of a discrete task.")
        return np.asarray(self.controller.predict(obs), dtype=np.float64)

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """The controller's actions for raw ``obs`` ``(n, obs_dim)`` or ``(obs_dim,)`` (one-hot on a discrete task)."""
        out = np.asarray(self.controller.predict(obs), dtype=np.float64)
        if not self.n_classes:
            return out
        single = out.ndim == 1
        scores = np.atleast_2d(out)
        onehot = np.eye(self.n_classes)[np.argmax(scores, axis=1)]
        return onehot[0] if single else onehot

    act = predict

    def q_values(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        raise InterpRLError(f"The {self.algo} controller has no critic (no Q-values); choose a method that does not "
                            "weight by the critic.")

    def value(self, obs: np.ndarray) -> np.ndarray:
        raise InterpRLError(f"The {self.algo} controller has no critic (no state values); choose a method that does "
                            "not weight by the critic.")
