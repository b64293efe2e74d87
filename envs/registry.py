"""The task registry: supported tasks, their named features, and seeded factories."""

from __future__ import annotations

import difflib
import functools
import logging
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import mujoco

from envs.features import (
    BodyArray,
    ComDifference,
    JointQpos,
    JointQvel,
    ObservationBlock,
    QfrcActuator,
    QfrcConstraint,
    TrigQpos,
    action_features,
    layout_features,
)
from envs.wrappers import ClassScores, LayoutObservation
from interp_rl.errors import InvalidParameterError, UnknownTaskError
from interp_rl.program import Signal

__all__ = [
    "TASKS",
    "EnvVariant",
    "Task",
    "env_factory",
    "get_task",
    "list_tasks",
    "make_env",
    "make_vec_env",
    "resolve_task",
    "task_signals",
]

Layout = tuple[ObservationBlock, ...]
_log = logging.getLogger("envs")


def _mujoco_warning(message: str) -> None:
    """MuJoCo's compiler prints deprecation notes about gymnasium's own model files to
    stderr; route them to logging, and every other MuJoCo warning to ``warnings``."""
    if "deprecated" in message:
        _log.debug("MuJoCo: %s", message)
    else:
        warnings.warn(f"MuJoCo: {message}", RuntimeWarning, stacklevel=2)


if mujoco.get_mju_user_warning() is None:
    mujoco.set_mju_user_warning(_mujoco_warning)


@dataclass(frozen=True)
class EnvVariant:
    """How a task's environment is adjusted to fit an agent.

    The default variant is the plain gymnasium task.
    """

    obs_layout: str = "default"
    """``default`` (the task's own observation) or ``v3`` (the old zoo layout)."""
    zero_contact_forces: bool = False
    """In the ``v3`` layout, feed zeros for contact forces (old mujoco-py agents)."""
    legacy_model: bool = False
    """Use the pre-v5 model file (Walker2d: feet friction 0.9 and 1.9)."""
    time_feature: bool = False
    """Append sb3-contrib's ``TimeFeatureWrapper`` remaining-time feature."""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Task:
    """A supported task: gymnasium id, observation layout, legacy layouts."""

    id: str
    """Gymnasium id, e.g. ``Hopper-v5``."""
    description: str
    """One line on what the agent must do."""
    layout: Layout | None = None
    """Blocks of the default observation (MuJoCo tasks)."""
    legacy_layouts: dict[str, Layout] = field(default_factory=dict)
    """Old observation layouts by name (``v3``), rebuilt from the simulator state."""
    legacy_model_file: str | None = None
    """Gymnasium asset holding the pre-v5 model, where it differs."""
    zoo_ids: tuple[str, ...] = ()
    """Older ids (RL-Zoo agents) that run on this task."""
    static_obs: tuple[Signal, ...] = ()
    """Observation features of non-MuJoCo tasks."""
    static_actions: tuple[Signal, ...] = ()
    """Action features of non-MuJoCo tasks (for a discrete task, one score per class)."""
    max_episode_steps: int = 1000
    discrete: bool = False
    """The gymnasium task takes one of ``len(static_actions)`` classes; controllers give one score per class
    and the highest is played (:class:`~envs.wrappers.ClassScores`)."""

    @property
    def is_mujoco(self) -> bool:
        return self.layout is not None

    def _layout(self, variant: EnvVariant) -> Layout | None:
        if variant.obs_layout == "default":
            return None
        if variant.obs_layout not in self.legacy_layouts:
            known = ", ".join(["default", *self.legacy_layouts]) or "default"
            raise InvalidParameterError(
                f"The 'obs_layout' parameter of {self.id} must be one of {known}. "
                f"Got {variant.obs_layout!r} instead."
            )
        layout = self.legacy_layouts[variant.obs_layout]
        if variant.zero_contact_forces:
            layout = tuple(
                BodyArray(b.field, b.first_body, b.clip, zero=True)
                if isinstance(b, BodyArray) and b.field == "cfrc_ext" else b
                for b in layout
            )
        return layout

    def make(self, seed: int = 0, variant: EnvVariant | None = None, *, raw_actions: bool = False,
             **kwargs: Any) -> gym.Env:
        """Build the environment, seeded with ``seed``.

        A discrete task takes class scores (:class:`~envs.wrappers.ClassScores`) unless ``raw_actions``, which
        keeps gymnasium's ``Discrete`` space (what an SB3 agent trains on).
        """
        variant = variant or EnvVariant()
        if variant.legacy_model:
            if self.legacy_model_file is None:
                with_file = [t.id for t in TASKS.values() if t.legacy_model_file]
                raise InvalidParameterError(
                    f"{self.id} has no legacy model file; it exists for {', '.join(with_file)} only."
                )
            kwargs.setdefault("xml_file", _gym_asset(self.legacy_model_file))
        env = gym.make(self.id, **kwargs)
        if self.discrete and not raw_actions:
            env = ClassScores(env)
        layout = self._layout(variant)
        if layout is not None:
            env = LayoutObservation(env, layout)
        if variant.time_feature:
            from sb3_contrib.common.wrappers import TimeFeatureWrapper

            env = TimeFeatureWrapper(env, max_steps=self.max_episode_steps)
        env.reset(seed=seed)
        env.action_space.seed(seed)
        env.observation_space.seed(seed)
        return env

    def observation_features(self, variant: EnvVariant | None = None) -> list[Signal]:
        """Every observation component's name and unit, in order."""
        variant = variant or EnvVariant()
        if self.is_mujoco:
            layout = self._layout(variant) or self.layout
            assert layout is not None
            feats = layout_features(layout, _model(self.id, variant.legacy_model))
        else:
            feats = list(self.static_obs)
        if variant.time_feature:
            feats.append(Signal("time_remaining", "1", "1 - t / max_steps (TimeFeatureWrapper)"))
        return feats

    def action_features(self) -> list[Signal]:
        """Every action component's name and unit, in order."""
        if self.is_mujoco:
            return action_features(_model(self.id, False))
        return list(self.static_actions)


def _gym_asset(name: str) -> str:
    import gymnasium.envs.mujoco as gm

    return os.path.join(os.path.dirname(gm.__file__), "assets", name)


@functools.cache
def _model(task_id: str, legacy_model: bool) -> Any:
    task = TASKS[task_id]
    env = task.make(0, EnvVariant(legacy_model=legacy_model))
    model = env.unwrapped.model  # type: ignore[attr-defined]
    env.close()
    return model


_HOP = (JointQpos(1), JointQvel(clip=10.0))
TASKS: dict[str, Task] = {
    t.id: t
    for t in [
        Task("HalfCheetah-v5", "2D cheetah: run forward as fast as possible.",
             (JointQpos(1), JointQvel()), zoo_ids=("HalfCheetah-v3", "HalfCheetah-v4")),
        Task("Hopper-v5", "2D one-legged hopper: hop forward without falling.",
             _HOP, zoo_ids=("Hopper-v3", "Hopper-v4")),
        Task("Walker2d-v5", "2D biped: walk forward without falling.", _HOP,
             legacy_model_file="walker2d.xml", zoo_ids=("Walker2d-v3", "Walker2d-v4")),
        Task("Swimmer-v5", "3-link swimmer in viscous fluid: swim forward.",
             (JointQpos(2), JointQvel()), zoo_ids=("Swimmer-v3", "Swimmer-v4")),
        Task("Ant-v5", "3D quadruped: walk forward without flipping.",
             (JointQpos(2), JointQvel(), BodyArray("cfrc_ext", 1, clip=1.0)),
             legacy_layouts={"v3": (JointQpos(2), JointQvel(), BodyArray("cfrc_ext", 0, clip=1.0))},
             zoo_ids=("Ant-v3", "Ant-v4")),
        Task("Reacher-v5", "2-link arm: bring the fingertip to a random target.",
             (TrigQpos("cos", 0, 2), TrigQpos("sin", 0, 2), JointQpos(2), JointQvel(0, 2),
              ComDifference("fingertip", "target", 2)),
             zoo_ids=("Reacher-v2", "Reacher-v4"), max_episode_steps=50),
        Task("InvertedPendulum-v5", "Cart-pole: keep the pole upright.",
             (JointQpos(), JointQvel()), zoo_ids=("InvertedPendulum-v2", "InvertedPendulum-v4")),
        Task("InvertedDoublePendulum-v5", "Cart with two poles: keep them upright.",
             (JointQpos(0, 1), TrigQpos("sin", 1), TrigQpos("cos", 1), JointQvel(clip=10.0),
              QfrcConstraint(0, 1, clip=10.0)),
             zoo_ids=("InvertedDoublePendulum-v2", "InvertedDoublePendulum-v4")),
        Task("Humanoid-v5", "3D humanoid: walk forward without falling.",
             (JointQpos(2), JointQvel(), BodyArray("cinert", 1), BodyArray("cvel", 1),
              QfrcActuator(6), BodyArray("cfrc_ext", 1)),
             legacy_layouts={"v3": (JointQpos(2), JointQvel(), BodyArray("cinert", 0),
                                    BodyArray("cvel", 0), QfrcActuator(0),
                                    BodyArray("cfrc_ext", 0))},
             zoo_ids=("Humanoid-v3", "Humanoid-v4")),
        Task("Pendulum-v1", "Classic pendulum swing-up (not MuJoCo): keep it upright.",
             static_obs=(Signal("cos_theta", "1", "cos of the pendulum angle (0 = upright)"),
                         Signal("sin_theta", "1", "sin of the pendulum angle"),
                         Signal("theta_dot", "rad/s", "angular velocity")),
             static_actions=(Signal("torque", "N m", "torque on the pendulum, in [-2, 2]"),),
             max_episode_steps=200),
        Task("CartPole-v1", "Classic cart-pole (not MuJoCo, discrete): push the cart left or right to keep the "
             "pole up.",
             static_obs=(Signal("cart_position", "m", "cart position (episode ends beyond +-2.4)"),
                         Signal("cart_velocity", "m/s", "cart velocity"),
                         Signal("pole_angle", "rad", "pole angle from upright (episode ends beyond +-0.21)"),
                         Signal("pole_angular_velocity", "rad/s", "pole angular velocity")),
             static_actions=(Signal("push_left", "score", "class 0: push the cart to the left"),
                             Signal("push_right", "score", "class 1: push the cart to the right")),
             max_episode_steps=500, discrete=True),
        Task("MountainCar-v0", "Classic mountain car (not MuJoCo, discrete): rock the car up to the flag.",
             static_obs=(Signal("car_position", "m", "position along the valley (flag at 0.5)"),
                         Signal("car_velocity", "m/s", "velocity (within +-0.07)")),
             static_actions=(Signal("accelerate_left", "score", "class 0: accelerate to the left"),
                             Signal("coast", "score", "class 1: do not accelerate"),
                             Signal("accelerate_right", "score", "class 2: accelerate to the right")),
             max_episode_steps=200, discrete=True),
        Task("Acrobot-v1", "Classic acrobot (not MuJoCo, discrete): swing the free end of a two-link chain above a "
             "line by torque at the middle joint.",
             static_obs=(Signal("cos_theta1", "1", "cos of the first link's angle (1 = hanging down)"),
                         Signal("sin_theta1", "1", "sin of the first link's angle"),
                         Signal("cos_theta2", "1", "cos of the second link's angle relative to the first"),
                         Signal("sin_theta2", "1", "sin of the second link's relative angle"),
                         Signal("theta1_dot", "rad/s", "first link's angular velocity"),
                         Signal("theta2_dot", "rad/s", "second link's relative angular velocity")),
             static_actions=(Signal("torque_negative", "score", "class 0: torque -1 at the middle joint"),
                             Signal("torque_zero", "score", "class 1: no torque"),
                             Signal("torque_positive", "score", "class 2: torque +1 at the middle joint")),
             max_episode_steps=500, discrete=True),
        Task("LunarLander-v3", "Box2D lunar lander (not MuJoCo, discrete; needs the box2d extra): land between the "
             "flags by firing the main and side engines.",
             static_obs=(Signal("x", "1", "horizontal position (pad at 0)"),
                         Signal("y", "1", "height above the pad"),
                         Signal("x_velocity", "1/s", "horizontal velocity"),
                         Signal("y_velocity", "1/s", "vertical velocity"),
                         Signal("angle", "rad", "lander angle"),
                         Signal("angular_velocity", "rad/s", "lander angular velocity"),
                         Signal("left_leg_contact", "1", "1 when the left leg touches the ground"),
                         Signal("right_leg_contact", "1", "1 when the right leg touches the ground")),
             static_actions=(Signal("noop", "score", "class 0: fire no engine"),
                             Signal("fire_left", "score", "class 1: fire the left orientation engine"),
                             Signal("fire_main", "score", "class 2: fire the main engine"),
                             Signal("fire_right", "score", "class 3: fire the right orientation engine")),
             max_episode_steps=1000, discrete=True),
    ]
}
_ZOO_ALIASES = {z: t.id for t in TASKS.values() for z in t.zoo_ids}


def list_tasks() -> list[Task]:
    """All supported tasks, in registry order."""
    return list(TASKS.values())


def resolve_task(task_id: str) -> tuple[Task, bool]:
    """Return ``(task, is_zoo_alias)``; unknown ids suggest the closest names."""
    if task_id in TASKS:
        return TASKS[task_id], False
    if task_id in _ZOO_ALIASES:
        return TASKS[_ZOO_ALIASES[task_id]], True
    names = list(TASKS) + list(_ZOO_ALIASES)
    close = difflib.get_close_matches(task_id, names, n=3, cutoff=0.4)
    if not close:
        lowered = {n.lower(): n for n in names}
        close = [lowered[n] for n in difflib.get_close_matches(task_id.lower(), lowered, n=3, cutoff=0.4)]
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownTaskError(
        f"Unknown task {task_id!r}.{hint} Known tasks: {', '.join(TASKS)}."
    )


def get_task(task_id: str) -> Task:
    """The :class:`Task` for ``task_id`` (zoo ids such as ``Hopper-v3`` resolve to ``-v5``)."""
    return resolve_task(task_id)[0]


def make_env(task: str, seed: int = 0, variant: EnvVariant | None = None, **kwargs: Any) -> gym.Env:
    """Build task ``task`` seeded with ``seed``.

    Examples
    --------
    >>> env = make_env("Hopper-v5", seed=0)
    >>> env.observation_space.shape
    (11,)
    """
    return get_task(task).make(seed, variant, **kwargs)


def env_factory(task: str, variant: EnvVariant | None = None, **kwargs: Any) -> Callable[[int], gym.Env]:
    """A picklable-free factory ``seed -> env`` for :mod:`interp_rl.rollouts`."""
    t = get_task(task)

    def make(seed: int) -> gym.Env:
        return t.make(seed, variant, **kwargs)

    make.task_id = t.id  # type: ignore[attr-defined]
    return make


def make_vec_env(task: str, n_envs: int, seed: int = 0, variant: EnvVariant | None = None, *,
                 raw_actions: bool = False) -> Any:
    """An SB3 ``DummyVecEnv`` of ``n_envs`` copies seeded ``seed``, ``seed + 1``, ...

    ``raw_actions`` keeps a discrete task's ``Discrete`` space (for SB3 training) instead of class scores.
    """
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    t = get_task(task)
    def factory(i: int) -> Callable[[], gym.Env]:
        return lambda: Monitor(t.make(seed + i, variant, raw_actions=raw_actions))

    venv = DummyVecEnv([factory(i) for i in range(n_envs)])
    venv.seed(seed)
    return venv


def task_signals(
    task: str, variant: EnvVariant | dict[str, Any] | None = None
) -> tuple[list[Signal], list[Signal]]:
    """Named observation features and actions of ``task`` as :class:`~interp_rl.program.Signal` lists.

    Examples
    --------
    >>> features, actions = task_signals("Hopper-v5")
    >>> features[1].label, actions[0].name
    ('torso_pitch [rad]', 'thigh_joint_torque')
    """
    if isinstance(variant, dict):
        variant = EnvVariant(**variant)
    t = get_task(task)
    return list(t.observation_features(variant)), list(t.action_features())


def observation_dim(task: str, variant: EnvVariant | None = None) -> int:
    """Number of observation components of ``task`` under ``variant``."""
    return len(get_task(task).observation_features(variant))


