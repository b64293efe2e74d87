"""Named features: counts, order (checked against the real observations), known names, variants."""

from __future__ import annotations

import numpy as np
import pytest

import envs
from envs.features import layout_features, layout_values
from interp_rl.program import Signal

ALL_TASKS = envs.list_tasks()
MUJOCO_TASKS = [t for t in ALL_TASKS if t.is_mujoco]


def _ids(tasks: list[envs.Task]) -> list[str]:
    return [t.id for t in tasks]


def _names(features: list[Signal]) -> list[str]:
    return [f.name for f in features]


def _step_randomly(env, n: int = 5, seed: int = 0) -> np.ndarray:
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    for _ in range(n):
        obs, *_ = env.step(env.action_space.sample())
    return np.asarray(obs)


# --- every task -----------------------------------------------------------------------


def test_registry_lists_the_expected_tasks() -> None:
    assert _ids(ALL_TASKS) == [
        "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Swimmer-v5", "Ant-v5", "Reacher-v5",
        "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Humanoid-v5", "Pendulum-v1", "CartPole-v1",
        "MountainCar-v0", "Acrobot-v1", "LunarLander-v3",
    ]


@pytest.mark.parametrize("task", ALL_TASKS, ids=_ids(ALL_TASKS))
def test_feature_counts_match_spaces(task: envs.Task) -> None:
    env = task.make(0)
    try:
        assert len(task.observation_features()) == env.observation_space.shape[0]
        assert len(task.action_features()) == env.action_space.shape[0]
        assert envs.observation_dim(task.id) == env.observation_space.shape[0]
    finally:
        env.close()


@pytest.mark.parametrize("task", ALL_TASKS, ids=_ids(ALL_TASKS))
def test_feature_names_unique_and_well_formed(task: envs.Task) -> None:
    for feats in (task.observation_features(), task.action_features()):
        names = _names(feats)
        assert len(set(names)) == len(names), f"duplicate names in {task.id}: {names}"
        for f in feats:
            assert isinstance(f, Signal)
            assert f.name and f.name.isidentifier(), f.name
            assert f.unit
            assert f.label == f"{f.name} [{f.unit}]"


@pytest.mark.parametrize("task", MUJOCO_TASKS, ids=_ids(MUJOCO_TASKS))
def test_layout_values_equal_real_observation(task: envs.Task) -> None:
    """The layout rebuilds the env's own observation, so the names are in the right order."""
    env = task.make(0)
    try:
        u = env.unwrapped
        obs, _ = env.reset(seed=0)
        assert np.allclose(layout_values(task.layout, u.model, u.data), obs)
        obs = _step_randomly(env, 5, seed=0)
        values = layout_values(task.layout, u.model, u.data)
        assert values.shape == obs.shape
        assert np.allclose(values, obs)
        assert len(layout_features(task.layout, u.model)) == obs.shape[0]
    finally:
        env.close()


# --- known answers ---------------------------------------------------------------------


def test_hopper_observation_names_and_units() -> None:
    feats = envs.get_task("Hopper-v5").observation_features()
    assert [(f.name, f.unit) for f in feats] == [
        ("torso_z", "m"), ("torso_pitch", "rad"), ("thigh_joint_angle", "rad"),
        ("leg_joint_angle", "rad"), ("foot_joint_angle", "rad"), ("torso_vx", "m/s"),
        ("torso_vz", "m/s"), ("torso_pitch_rate", "rad/s"), ("thigh_joint_angvel", "rad/s"),
        ("leg_joint_angvel", "rad/s"), ("foot_joint_angvel", "rad/s"),
    ]
    assert feats[5].name == "torso_vx" and feats[5].unit == "m/s"
    assert feats[5].label == "torso_vx [m/s]"


def test_hopper_velocities_are_clipped_in_description() -> None:
    feats = envs.get_task("Hopper-v5").observation_features()
    assert "clipped to ±10" in feats[5].description
    assert "clipped" not in feats[0].description


def test_hopper_action_names() -> None:
    acts = envs.get_task("Hopper-v5").action_features()
    assert _names(acts) == ["thigh_joint_torque", "leg_joint_torque", "foot_joint_torque"]
    assert [a.unit for a in acts] == ["x200 N m"] * 3


def test_inverted_double_pendulum_names() -> None:
    feats = envs.get_task("InvertedDoublePendulum-v5").observation_features()
    assert _names(feats) == [
        "cart_x", "sin_hinge_angle", "sin_hinge2_angle", "cos_hinge_angle", "cos_hinge2_angle",
        "cart_vx", "hinge_angvel", "hinge2_angvel", "slider_constraint_force",
    ]
    assert feats[-1].name == "slider_constraint_force"
    assert feats[-1].unit == "N"
    assert feats[-1].label == "slider_constraint_force [N]"
    assert _names(envs.get_task("InvertedDoublePendulum-v5").action_features()) == ["slider_force"]


def test_reacher_names() -> None:
    feats = envs.get_task("Reacher-v5").observation_features()
    assert [(f.name, f.unit) for f in feats] == [
        ("cos_joint0_angle", "1"), ("cos_joint1_angle", "1"),
        ("sin_joint0_angle", "1"), ("sin_joint1_angle", "1"),
        ("target_x", "m"), ("target_y", "m"),
        ("joint0_angvel", "rad/s"), ("joint1_angvel", "rad/s"),
        ("fingertip_to_target_x", "m"), ("fingertip_to_target_y", "m"),
    ]
    assert _names(envs.get_task("Reacher-v5").action_features()) == ["joint0_torque", "joint1_torque"]


def test_inverted_pendulum_and_pendulum_names() -> None:
    assert _names(envs.get_task("InvertedPendulum-v5").observation_features()) == [
        "cart_x", "hinge_angle", "cart_vx", "hinge_angvel",
    ]
    pend = envs.get_task("Pendulum-v1")
    assert not pend.is_mujoco
    assert _names(pend.observation_features()) == ["cos_theta", "sin_theta", "theta_dot"]
    assert [(a.name, a.unit) for a in pend.action_features()] == [("torque", "N m")]


def test_swimmer_and_halfcheetah_first_names() -> None:
    assert _names(envs.get_task("Swimmer-v5").observation_features())[:3] == [
        "torso_yaw", "motor1_rot_angle", "motor2_rot_angle",
    ]
    assert _names(envs.get_task("HalfCheetah-v5").observation_features())[:3] == [
        "torso_z", "torso_pitch", "bthigh_angle",
    ]


def test_ant_v5_free_joint_names() -> None:
    feats = envs.get_task("Ant-v5").observation_features()
    assert [(f.name, f.unit) for f in feats[:5]] == [
        ("torso_z", "m"), ("torso_qw", "1"), ("torso_qx", "1"), ("torso_qy", "1"), ("torso_qz", "1"),
    ]
    assert [(f.name, f.unit) for f in feats[13:19]] == [
        ("torso_vx", "m/s"), ("torso_vy", "m/s"), ("torso_vz", "m/s"),
        ("torso_wx", "rad/s"), ("torso_wy", "rad/s"), ("torso_wz", "rad/s"),
    ]
    assert (feats[27].name, feats[27].unit) == ("torso_ext_torque_x", "N m")


# --- variants --------------------------------------------------------------------------


def test_ant_v3_layout_has_111_features() -> None:
    task = envs.get_task("Ant-v5")
    variant = envs.EnvVariant(obs_layout="v3")
    feats = task.observation_features(variant)
    assert len(feats) == 111
    names = _names(feats)
    assert len(set(names)) == 111
    assert names[27:33] == [
        "world_ext_torque_x", "world_ext_torque_y", "world_ext_torque_z",
        "world_ext_force_x", "world_ext_force_y", "world_ext_force_z",
    ]
    env = envs.make_env("Ant-v5", 0, variant)
    try:
        assert env.observation_space.shape == (111,)
        obs, _ = env.reset(seed=0)
        assert obs.shape == (111,)
    finally:
        env.close()


def test_ant_v3_zero_contact_forces_are_exactly_zero() -> None:
    variant = envs.EnvVariant(obs_layout="v3", zero_contact_forces=True)
    env = envs.make_env("Ant-v5", 0, variant)
    try:
        obs, _ = env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(20):
            obs, *_ = env.step(env.action_space.sample())
            assert obs.shape == (111,)
            assert np.all(obs[-84:] == 0.0)
        u = env.unwrapped
        assert np.array_equal(obs, layout_values(env.layout, u.model, u.data))
    finally:
        env.close()
    feats = envs.get_task("Ant-v5").observation_features(variant)
    assert all("always 0" in f.description for f in feats[-84:])


def test_ant_v3_real_contact_forces_match_layout_and_v5() -> None:
    """Without zeroing, the v3 contact block holds the clipped ``cfrc_ext`` of every body."""
    variant = envs.EnvVariant(obs_layout="v3", zero_contact_forces=False)
    env = envs.make_env("Ant-v5", 0, variant)
    plain = envs.make_env("Ant-v5", 0)
    try:
        obs, _ = env.reset(seed=0)
        plain_obs, _ = plain.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(5):
            a = env.action_space.sample()
            obs, *_ = env.step(a)
            plain_obs, *_ = plain.step(a)
        u = env.unwrapped
        assert np.allclose(obs, layout_values(env.layout, u.model, u.data))
        assert np.all(np.abs(obs[-84:]) <= 1.0)
        # The v3 layout is Ant-v5's own observation plus the world body's contact wrench.
        assert np.allclose(obs[:27], plain_obs[:27])
        assert np.allclose(obs[33:], plain_obs[27:])
    finally:
        env.close()
        plain.close()


def test_unknown_obs_layout_is_rejected() -> None:
    from interp_rl.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=r"^The 'obs_layout' parameter of Ant-v5 "
                       r"must be one of default, v3\. Got 'v9' instead\.$"):
        envs.make_env("Ant-v5", 0, envs.EnvVariant(obs_layout="v9"))
    with pytest.raises(InvalidParameterError, match="must be one of default. Got 'v3'"):
        envs.get_task("Hopper-v5").observation_features(envs.EnvVariant(obs_layout="v3"))


def test_humanoid_v3_layout_has_376_features() -> None:
    task = envs.get_task("Humanoid-v5")
    variant = envs.EnvVariant(obs_layout="v3")
    names = _names(task.observation_features(variant))
    assert len(names) == 376
    assert len(set(names)) == 376
    env = envs.make_env("Humanoid-v5", 0, variant)
    try:
        assert env.observation_space.shape == (376,)
        obs = _step_randomly(env, 5, seed=0)
        assert obs.shape == (376,)
        u = env.unwrapped
        assert np.allclose(obs, layout_values(env.layout, u.model, u.data))
    finally:
        env.close()


def test_walker2d_legacy_model_feet_friction() -> None:
    legacy = envs.make_env("Walker2d-v5", 0, envs.EnvVariant(legacy_model=True))
    current = envs.make_env("Walker2d-v5", 0)
    try:
        # The geoms of the feet are named foot_geom / foot_left_geom in both model files.
        m = legacy.unwrapped.model
        assert m.geom("foot_geom").friction[0] == pytest.approx(0.9)
        assert m.geom("foot_left_geom").friction[0] == pytest.approx(1.9)
        m = current.unwrapped.model
        assert m.geom("foot_geom").friction[0] == pytest.approx(1.9)
        assert m.geom("foot_left_geom").friction[0] == pytest.approx(1.9)
    finally:
        legacy.close()
        current.close()
    # Same bodies and joints: the names do not change.
    task = envs.get_task("Walker2d-v5")
    assert _names(task.observation_features(envs.EnvVariant(legacy_model=True))) == _names(
        task.observation_features()
    )


def test_legacy_model_only_for_walker2d() -> None:
    from interp_rl.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=r"^Hopper-v5 has no legacy model file; it exists for Walker2d-v5 only\.$"):
        envs.make_env("Hopper-v5", 0, envs.EnvVariant(legacy_model=True))


@pytest.mark.parametrize("task_id", ["Hopper-v5", "Swimmer-v5", "Pendulum-v1"])
def test_time_feature_variant_adds_time_remaining(task_id: str) -> None:
    task = envs.get_task(task_id)
    variant = envs.EnvVariant(time_feature=True)
    plain = task.observation_features()
    feats = task.observation_features(variant)
    assert len(feats) == len(plain) + 1
    assert _names(feats[:-1]) == _names(plain)
    assert (feats[-1].name, feats[-1].unit) == ("time_remaining", "1")
    env = envs.make_env(task_id, 0, variant)
    try:
        assert env.observation_space.shape == (len(plain) + 1,)
        obs, _ = env.reset(seed=0)
        assert obs.shape == (len(plain) + 1,)
        assert obs[-1] == pytest.approx(1.0)
        obs, *_ = env.step(env.action_space.sample())
        assert obs[-1] == pytest.approx(1.0 - 1.0 / task.max_episode_steps)
    finally:
        env.close()


def test_env_variant_to_dict() -> None:
    assert envs.EnvVariant(obs_layout="v3", zero_contact_forces=True).to_dict() == {
        "obs_layout": "v3", "zero_contact_forces": True, "legacy_model": False, "time_feature": False,
    }
