"""Task registry: lookup, suggestions for typos, zoo aliases, seeded factories."""

from __future__ import annotations

import re

import numpy as np
import pytest

import envs
from interp_rl.errors import InterpRLError, UnknownTaskError

KNOWN = (
    "Known tasks: HalfCheetah-v5, Hopper-v5, Walker2d-v5, Swimmer-v5, Ant-v5, Reacher-v5, "
    "InvertedPendulum-v5, InvertedDoublePendulum-v5, Humanoid-v5, Pendulum-v1, CartPole-v1, MountainCar-v0, Acrobot-v1, LunarLander-v3."
)


def test_unknown_task_suggests_closest_names() -> None:
    expected = (
        "Unknown task 'Hoper-v5'. Did you mean 'Hopper-v5', 'Hopper-v4', 'Hopper-v3'? " + KNOWN
    )
    with pytest.raises(UnknownTaskError, match=f"^{re.escape(expected)}$") as info:
        envs.get_task("Hoper-v5")
    assert str(info.value).startswith("Unknown task 'Hoper-v5'. Did you mean 'Hopper-v5'")
    # A user error, and still a KeyError for callers that catch that.
    assert isinstance(info.value, InterpRLError)
    assert isinstance(info.value, KeyError)


def test_unknown_task_without_close_match_lists_known_tasks() -> None:
    with pytest.raises(UnknownTaskError) as info:
        envs.get_task("zzzzzzzzzzzz")
    assert str(info.value) == f"Unknown task 'zzzzzzzzzzzz'. {KNOWN}"


def test_unknown_task_in_make_env_and_env_factory() -> None:
    with pytest.raises(UnknownTaskError, match=re.escape("Unknown task 'Hoper-v5'.")):
        envs.make_env("Hoper-v5")
    with pytest.raises(UnknownTaskError, match=re.escape("Unknown task 'Hoper-v5'.")):
        envs.env_factory("Hoper-v5")


@pytest.mark.parametrize(
    ("alias", "target"),
    [("Hopper-v3", "Hopper-v5"), ("Hopper-v4", "Hopper-v5"), ("Ant-v3", "Ant-v5"),
     ("Walker2d-v3", "Walker2d-v5"), ("HalfCheetah-v3", "HalfCheetah-v5"),
     ("Swimmer-v3", "Swimmer-v5"), ("Humanoid-v3", "Humanoid-v5"), ("Reacher-v2", "Reacher-v5")],
)
def test_zoo_aliases_resolve_to_v5(alias: str, target: str) -> None:
    assert envs.get_task(alias).id == target
    task, is_alias = envs.resolve_task(alias)
    assert task.id == target and is_alias is True


def test_resolve_task_v5_is_not_alias() -> None:
    task, is_alias = envs.resolve_task("Hopper-v5")
    assert task is envs.TASKS["Hopper-v5"]
    assert is_alias is False


def test_zoo_alias_builds_v5_env() -> None:
    env = envs.make_env("Hopper-v3", 0)
    try:
        assert env.spec.id == "Hopper-v5"
        assert env.observation_space.shape == (11,)
    finally:
        env.close()


def test_make_env_same_seed_same_observations() -> None:
    a = envs.make_env("Hopper-v5", seed=7)
    b = envs.make_env("Hopper-v5", seed=7)
    c = envs.make_env("Hopper-v5", seed=8)
    try:
        # make_env has already reset with the seed; the next unseeded reset continues its RNG.
        oa, _ = a.reset()
        ob, _ = b.reset()
        oc, _ = c.reset()
        assert np.array_equal(oa, ob)
        assert not np.allclose(oa, oc)
        # The action space is seeded too.
        assert np.array_equal(a.action_space.sample(), b.action_space.sample())
        # And an explicit reset seed reproduces the same start in any env.
        assert np.array_equal(a.reset(seed=3)[0], c.reset(seed=3)[0])
    finally:
        for e in (a, b, c):
            e.close()


def test_make_env_seed_is_applied_to_first_reset() -> None:
    a = envs.make_env("InvertedPendulum-v5", seed=5)
    b = envs.make_env("InvertedPendulum-v5", seed=0)
    try:
        # The first (unseeded) reset after make_env continues the seed-5 RNG: the same as
        # seeding a reset with 5 and then resetting again.
        expected_first = a.reset()[0]
        b.reset(seed=5)
        assert np.array_equal(b.reset()[0], expected_first)
    finally:
        a.close()
        b.close()


def test_env_factory_builds_seeded_envs() -> None:
    make = envs.env_factory("Hopper-v3")
    assert make.task_id == "Hopper-v5"
    e1, e2, e3 = make(0), make(0), make(1)
    try:
        assert e1.spec.id == "Hopper-v5"
        o1, o2, o3 = e1.reset()[0], e2.reset()[0], e3.reset()[0]
        assert o1.shape == (11,)
        assert np.array_equal(o1, o2)
        assert not np.allclose(o1, o3)
    finally:
        for e in (e1, e2, e3):
            e.close()


def test_env_factory_passes_variant() -> None:
    make = envs.env_factory("Ant-v5", envs.EnvVariant(obs_layout="v3", zero_contact_forces=True))
    env = make(0)
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == (111,)
        assert np.all(obs[-84:] == 0.0)
    finally:
        env.close()


def test_make_vec_env() -> None:
    venv = envs.make_vec_env("Hopper-v5", n_envs=2, seed=0)
    try:
        obs = venv.reset()
        assert obs.shape == (2, 11)
        assert not np.allclose(obs[0], obs[1])
        obs, rewards, dones, infos = venv.step(np.zeros((2, 3)))
        assert obs.shape == (2, 11) and rewards.shape == (2,)
    finally:
        venv.close()


def test_observation_dim() -> None:
    assert envs.observation_dim("Hopper-v3") == 11
    assert envs.observation_dim("Ant-v5") == 105
    assert envs.observation_dim("Ant-v5", envs.EnvVariant(obs_layout="v3")) == 111
    assert envs.observation_dim("Swimmer-v5", envs.EnvVariant(time_feature=True)) == 9


def test_task_metadata() -> None:
    hopper = envs.get_task("Hopper-v5")
    assert hopper.is_mujoco
    assert hopper.zoo_ids == ("Hopper-v3", "Hopper-v4")
    assert hopper.max_episode_steps == 1000
    assert envs.get_task("Reacher-v5").max_episode_steps == 50
    assert envs.get_task("Pendulum-v1").max_episode_steps == 200
    assert envs.get_task("Walker2d-v5").legacy_model_file == "walker2d.xml"
    assert set(envs.get_task("Ant-v5").legacy_layouts) == {"v3"}
    for task in envs.list_tasks():
        assert task.description.strip()
