"""Loading the shared RL-Zoo teachers, their error messages, and the returns they reproduce on v5."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

import envs
from envs.loading import find_zoo_model, load_teacher, read_zoo_config
from envs.sb3 import (
    ObsNormalizer,
    SB3Teacher,
    _old_gym_names,
    algorithm_class,
    detect_algorithm,
    read_vecnormalize,
)
from interp_rl.errors import (
    ObservationError,
    TeacherLoadError,
    UnknownAlgorithmError,
)
from interp_rl.rollouts import evaluate

pytestmark = pytest.mark.usefixtures("single_torch_thread")

# key -> (algo, zoo env, task, obs_dim, act_dim, normalised)
EXPECTED = {
    "sac_halfcheetah": ("sac", "HalfCheetah", "HalfCheetah-v5", 17, 6, False),
    "sac_hopper": ("sac", "Hopper", "Hopper-v5", 11, 3, False),
    "ppo_hopper": ("ppo", "Hopper", "Hopper-v5", 11, 3, True),
    "sac_walker2d": ("sac", "Walker2d", "Walker2d-v5", 17, 6, False),
    "sac_swimmer": ("sac", "Swimmer", "Swimmer-v5", 8, 2, False),
    "trpo_ant": ("trpo", "Ant", "Ant-v5", 111, 8, True),
}
KEYS = list(EXPECTED)
SAC_KEYS = [k for k in KEYS if EXPECTED[k][0] == "sac"]
V_KEYS = [k for k in KEYS if EXPECTED[k][0] in ("ppo", "trpo")]


def _zip(root: Path, key: str) -> Path:
    algo, env = EXPECTED[key][:2]
    return root / algo / f"{env}-v3_1" / f"{env}-v3.zip"


def _reset_obs(teacher: SB3Teacher, n: int, seed: int = 0) -> np.ndarray:
    """``n`` real start observations of the teacher's own environment."""
    out = []
    for i in range(n):
        env = teacher.env_fn(seed + i)
        out.append(env.reset(seed=seed + i)[0])
        env.close()
    return np.asarray(out, dtype=np.float64)


# --- loading ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", KEYS)
def test_load_zip_detects_algorithm_and_task(teachers, shared_teachers: Path, key: str) -> None:
    algo, _, task, obs_dim, act_dim, normalised = EXPECTED[key]
    t = teachers[key]
    assert isinstance(t, SB3Teacher)
    assert t.algo == algo
    assert detect_algorithm(_zip(shared_teachers, key)) == algo
    assert t.task == task
    assert t.obs_dim == obs_dim and t.act_dim == act_dim
    np.testing.assert_array_equal(t.action_low, -np.ones(act_dim))
    np.testing.assert_array_equal(t.action_high, np.ones(act_dim))
    assert t.has_q is (algo == "sac")
    assert t.has_value is (algo in ("ppo", "trpo"))
    assert (t.normalizer is not None) is normalised
    assert t.source == str(_zip(shared_teachers, key))
    assert t.feature_names is not None and len(t.feature_names) == obs_dim
    assert t.env_fn.task_id == task
    env = t.env_fn(0)
    try:
        assert env.observation_space.shape == (obs_dim,)
        assert env.action_space.shape == (act_dim,)
    finally:
        env.close()
    norm = ", normalised" if normalised else ""
    assert repr(t) == f"SB3Teacher({algo.upper()} on {task}, obs {obs_dim}, act {act_dim}{norm})"


def test_ant_teacher_uses_v3_layout_with_zero_contact_forces(teachers) -> None:
    t = teachers["trpo_ant"]
    assert t.variant == {
        "obs_layout": "v3", "zero_contact_forces": True, "legacy_model": False, "time_feature": False,
    }
    obs = _reset_obs(t, 1)
    assert obs.shape == (1, 111)
    assert np.all(obs[0, -84:] == 0.0)
    assert t.feature_names[27] == "world_ext_torque_x"


@pytest.mark.parametrize("key", ["sac_halfcheetah", "sac_hopper", "ppo_hopper", "sac_walker2d", "sac_swimmer"])
def test_other_teachers_use_the_default_variant(teachers, key: str) -> None:
    assert teachers[key].variant == envs.EnvVariant().to_dict()


def test_load_zoo_run_folder(shared_teachers: Path) -> None:
    t = load_teacher(shared_teachers / "trpo" / "Ant-v3_1")
    assert (t.algo, t.task, t.obs_dim) == ("trpo", "Ant-v5", 111)
    assert t.source == str(_zip(shared_teachers, "trpo_ant"))
    assert t.variant["zero_contact_forces"] is True
    t = load_teacher(str(shared_teachers / "sac" / "Hopper-v3_1"))
    assert (t.algo, t.task) == ("sac", "Hopper-v5")


def test_load_zoo_folder_mode(shared_teachers: Path) -> None:
    t = load_teacher(folder=shared_teachers, algo="ppo", env="Hopper-v3")
    assert (t.algo, t.task, t.obs_dim) == ("ppo", "Hopper-v5", 11)
    assert t.normalizer is not None
    assert t.source == str(_zip(shared_teachers, "ppo_hopper"))
    t = load_teacher(folder=shared_teachers, algo="SAC", env="Swimmer-v3", exp_id=1)
    assert (t.algo, t.task) == ("sac", "Swimmer-v5")


def test_find_zoo_model(shared_teachers: Path) -> None:
    assert find_zoo_model(shared_teachers, "sac", "Walker2d-v3") == _zip(shared_teachers, "sac_walker2d")
    assert find_zoo_model(shared_teachers, "sac", "Walker2d-v3", 1) == _zip(shared_teachers, "sac_walker2d")
    base = shared_teachers / "sac"
    with pytest.raises(TeacherLoadError, match=re.escape(
        f"No zoo run of sac on Ant-v3 under {str(base)!r} (expected a folder Ant-v3_N)."
    )):
        find_zoo_model(shared_teachers, "sac", "Ant-v3")
    missing = base / "Walker2d-v3_2" / "Walker2d-v3.zip"
    with pytest.raises(TeacherLoadError, match=re.escape(f"Zoo model {str(missing)!r} does not exist.")):
        find_zoo_model(shared_teachers, "sac", "Walker2d-v3", 2)


def test_folder_mode_needs_algo_and_env(shared_teachers: Path) -> None:
    with pytest.raises(TeacherLoadError, match=re.escape("A zoo folder (-f) needs both --algo and --env.")):
        load_teacher(folder=shared_teachers, algo="sac")
    with pytest.raises(TeacherLoadError, match=re.escape("Name a teacher: a .zip")):
        load_teacher()


def test_explicit_env_alias_and_unknown_zip_name(shared_teachers: Path, tmp_path: Path) -> None:
    src = _zip(shared_teachers, "sac_swimmer")
    t = load_teacher(src, env="Swimmer-v3", algo="sac")
    assert t.task == "Swimmer-v5"
    renamed = tmp_path / "model.zip"
    shutil.copyfile(src, renamed)
    with pytest.raises(TeacherLoadError, match=re.escape(
        f"Cannot tell which task {str(renamed)!r} was trained on; pass --env TASK."
    )):
        load_teacher(renamed)
    assert load_teacher(renamed, env="Swimmer-v5").task == "Swimmer-v5"


# --- predictions, critics -------------------------------------------------------------------


@pytest.mark.parametrize("key", KEYS)
def test_predict_batch_and_single(teachers, key: str) -> None:
    t = teachers[key]
    obs = _reset_obs(t, 3)
    batch = t.predict(obs)
    assert batch.shape == (3, t.act_dim)
    assert batch.dtype == np.float64
    assert np.all(np.isfinite(batch))
    assert np.all(batch >= -1.0) and np.all(batch <= 1.0)
    single = t.predict(obs[0])
    assert single.shape == (t.act_dim,)
    np.testing.assert_allclose(single, batch[0], atol=1e-6)
    # Deterministic.
    np.testing.assert_array_equal(t.predict(obs), batch)
    np.testing.assert_array_equal(t.act(obs), batch)


@pytest.mark.parametrize("key", KEYS)
def test_predict_gives_sb3s_own_actions_bit_for_bit(teachers, key: str) -> None:
    """The teacher skips SB3's per-call switch to evaluation mode, never its numbers: every action equals
    ``model.predict(obs, deterministic=True)``'s, clipped, to the last bit, in batches and one at a time."""
    from envs.sb3 import _plain_predict

    t = teachers[key]
    assert _plain_predict(t.model), "the shared teachers take the fast path, so this test checks it"
    obs = np.random.default_rng(0).normal(size=(33, t.obs_dim)) * 3
    t.model.policy.set_training_mode(True)  # a caller left it training: the teacher still acts as SB3 would
    for batch in (obs, obs[:1]):
        arr, _ = t._prepare(batch)
        ref = np.asarray(t.model.predict(arr, deterministic=True)[0], dtype=np.float64).reshape(len(arr), -1)
        np.testing.assert_array_equal(t.predict(batch), np.clip(ref, t.action_low, t.action_high))
    assert not t.model.policy.training


def test_a_policy_with_its_own_predict_goes_through_it(pendulum_agents: dict[str, Path], monkeypatch) -> None:
    """A policy whose ``predict`` is not SB3's own (a recurrent one, a user's) is asked through ``model.predict``."""
    from envs.loading import load_teacher

    t = load_teacher(pendulum_agents["sac"], env="Pendulum-v1")
    calls = []
    original = type(t.model).predict

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(t.model), "predict", counted)
    t.predict(np.zeros((2, t.obs_dim)))
    assert calls == [1]


@pytest.mark.parametrize("key", SAC_KEYS)
def test_sac_q_values(teachers, key: str) -> None:
    t = teachers[key]
    obs = _reset_obs(t, 4)
    q = t.q_values(obs, t.predict(obs))
    assert q.shape == (4,)
    assert q.dtype == np.float64
    assert np.all(np.isfinite(q))
    with pytest.raises(TeacherLoadError, match=re.escape("The SAC teacher has no state-value network")):
        t.value(obs)


@pytest.mark.parametrize("key", V_KEYS)
def test_on_policy_values(teachers, key: str) -> None:
    t = teachers[key]
    obs = _reset_obs(t, 4)
    v = t.value(obs)
    assert v.shape == (4,)
    assert np.all(np.isfinite(v))
    algo = t.algo.upper()
    with pytest.raises(TeacherLoadError, match=re.escape(
        f"The {algo} teacher has no Q-function (only SAC, TD3, DDPG, TQC and DQN do); "
        "use value() for on-policy teachers."
    )):
        t.q_values(obs, t.predict(obs))


def _own_sac_q(model, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """SB3's own twin critics on actions rescaled to [-1, 1] by hand; the smaller of the two."""
    import torch as th

    low, high = model.action_space.low, model.action_space.high
    scaled = 2.0 * (actions - low) / (high - low) - 1.0
    with th.no_grad():
        q1, q2 = model.critic(th.as_tensor(obs, dtype=th.float32), th.as_tensor(scaled, dtype=th.float32))
    return np.minimum(q1.numpy()[:, 0], q2.numpy()[:, 0])


@pytest.mark.parametrize("key", SAC_KEYS)
def test_sac_q_values_are_the_models_own_critic(teachers, key: str) -> None:
    t = teachers[key]
    obs = _reset_obs(t, 4)
    actions = np.random.default_rng(0).uniform(t.action_low, t.action_high, size=(4, t.act_dim))
    np.testing.assert_allclose(t.q_values(obs, actions), _own_sac_q(t.model, obs, actions), rtol=1e-5, atol=1e-5)
    # Q depends on the action: a q_values that ignored its second argument would fail here.
    assert not np.allclose(t.q_values(obs, actions), t.q_values(obs, -actions))


@pytest.mark.parametrize("key", V_KEYS)
def test_on_policy_values_are_the_models_own_value_network(teachers, shared_teachers: Path, key: str) -> None:
    """``value`` takes raw observations: normalised by SB3's own VecNormalize before the value head."""
    import torch as th
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    t = teachers[key]
    obs = _reset_obs(t, 4)
    zoo = _zip(shared_teachers, key)
    venv = DummyVecEnv([lambda: t.env_fn(0)])
    with _old_gym_names():  # the zoo pickled it under gym's names
        norm = VecNormalize.load(str(zoo.with_suffix("") / "vecnormalize.pkl"), venv)
    with th.no_grad():
        own = t.model.policy.predict_values(th.as_tensor(norm.normalize_obs(obs), dtype=th.float32))
    venv.close()
    np.testing.assert_allclose(t.value(obs), own.numpy()[:, 0], rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def pendulum_agents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Untrained SAC and TD3 on Pendulum-v1, whose torque bounds are [-2, 2], not [-1, 1]."""
    from stable_baselines3 import SAC, TD3

    folder = tmp_path_factory.mktemp("pendulum")
    out = {}
    for name, cls in (("sac", SAC), ("td3", TD3)):
        env = envs.make_env("Pendulum-v1", 0)
        model = cls("MlpPolicy", env, buffer_size=100, seed=0, device="cpu")
        out[name] = folder / f"{name}.zip"
        model.save(str(out[name]))
        env.close()
    return out


def test_q_values_rescale_actions_outside_unit_bounds(pendulum_agents: dict[str, Path]) -> None:
    """Env-space actions in [-2, 2] reach the critic rescaled to [-1, 1], as SB3 trained it."""
    import torch as th

    sac = load_teacher(pendulum_agents["sac"], env="Pendulum-v1")
    np.testing.assert_array_equal(sac.action_low, [-2.0])
    obs = _reset_obs(sac, 5)
    actions = np.array([[-2.0], [-1.0], [0.0], [1.5], [2.0]])
    np.testing.assert_allclose(sac.q_values(obs, actions), _own_sac_q(sac.model, obs, actions), rtol=1e-5, atol=1e-6)
    # Deterministic actions are SB3's own, in env units.
    own, _ = sac.model.predict(obs.astype(np.float32), deterministic=True)
    np.testing.assert_allclose(sac.predict(obs), own, rtol=1e-6)

    td3 = load_teacher(pendulum_agents["td3"], env="Pendulum-v1")
    with th.no_grad():
        q1 = td3.model.critic.q1_forward(th.as_tensor(obs, dtype=th.float32),
                                         th.as_tensor(actions / 2.0, dtype=th.float32))
    np.testing.assert_allclose(td3.q_values(obs, actions), q1.numpy()[:, 0], rtol=1e-5, atol=1e-6)


def test_sac_value_message_exact(teachers) -> None:
    with pytest.raises(TeacherLoadError) as info:
        teachers["sac_swimmer"].value(np.zeros((1, 8)))
    assert str(info.value) == (
        "The SAC teacher has no state-value network (only PPO, A2C and TRPO do); "
        "use q_values() for off-policy teachers."
    )


def test_nan_observation_names_the_feature(teachers) -> None:
    t = teachers["sac_hopper"]
    obs = np.zeros((2, 11))
    obs[1, 5] = np.nan
    expected = (
        "obs holds a non-finite value (nan) at feature 'torso_vx' (row 1) given to the SAC "
        "teacher (Hopper-v5); observations must be finite."
    )
    with pytest.raises(ObservationError, match=f"^{re.escape(expected)}$"):
        t.predict(obs)
    single = np.zeros(11)
    single[2] = np.inf
    with pytest.raises(ObservationError, match=re.escape(
        "obs holds a non-finite value (inf) at feature 'thigh_joint_angle' (row 0)"
    )):
        t.predict(single)
    with pytest.raises(ObservationError, match="at feature 'torso_vx'"):
        t.q_values(obs, np.zeros((2, 3)))


def test_nan_observation_on_normalised_teacher(teachers) -> None:
    obs = np.zeros((1, 11))
    obs[0, 0] = np.nan
    with pytest.raises(ObservationError, match=re.escape(
        "at feature 'torso_z' (row 0) given to the PPO teacher (Hopper-v5)"
    )):
        teachers["ppo_hopper"].value(obs)


def test_wrong_observation_size(teachers) -> None:
    t = teachers["sac_hopper"]
    expected = "obs has 5 features, but the SAC teacher expects 11 (Hopper-v5)."
    with pytest.raises(ObservationError, match=f"^{re.escape(expected)}$"):
        t.predict(np.zeros(5))
    with pytest.raises(ObservationError, match=f"^{re.escape(expected)}$"):
        t.predict(np.zeros((3, 5)))
    with pytest.raises(ObservationError, match=re.escape(
        "obs has 110 features, but the TRPO teacher expects 111 (Ant-v5)."
    )):
        teachers["trpo_ant"].predict(np.zeros((2, 110)))


def test_teacher_for_another_task(shared_teachers: Path) -> None:
    with pytest.raises(ObservationError) as info:
        load_teacher(_zip(shared_teachers, "sac_hopper"), env="HalfCheetah-v5")
    msg = str(info.value)
    assert msg == (
        "The teacher observes 11 features, but HalfCheetah-v5 gives 17; "
        "is it a teacher for another task?"
    )
    assert "11" in msg and "17" in msg
    with pytest.raises(ObservationError, match=re.escape(
        "The teacher observes 11 features, but Ant-v5 gives 105 or 111 (v3 layout)"
    )):
        load_teacher(_zip(shared_teachers, "sac_hopper"), env="Ant-v5")


# --- errors on bad files -----------------------------------------------------------------


def test_missing_files(tmp_path: Path) -> None:
    missing_zip = tmp_path / "nothing.zip"
    with pytest.raises(TeacherLoadError, match=re.escape(
        f"Teacher file {str(missing_zip)!r} does not exist."
    )):
        load_teacher(missing_zip)
    missing = tmp_path / "nothing_here"
    with pytest.raises(TeacherLoadError, match=re.escape(f"Teacher {str(missing)!r} does not exist.")):
        load_teacher(missing)
    with pytest.raises(TeacherLoadError, match="does not exist"):
        detect_algorithm(missing_zip)


def test_corrupt_zip(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"this is not a zip file at all\x00\x01\x02" * 4)
    with pytest.raises(TeacherLoadError, match="corrupt") as info:
        load_teacher(bad)
    assert str(info.value) == (
        f"{str(bad)!r} is corrupt or not a zip file (File is not a zip file); "
        "expected an SB3 model .zip."
    )
    with pytest.raises(TeacherLoadError, match="corrupt"):
        load_teacher(bad, algo="sac", env="Hopper-v5")


def test_zip_without_data_entry(tmp_path: Path) -> None:
    path = tmp_path / "Hopper-v3.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("policy.pth", b"not a model")
    expected = (
        f"{str(path)!r} is not a Stable-Baselines3 model: the zip has no 'data' and "
        "'policy.pth' entries."
    )
    with pytest.raises(TeacherLoadError, match=f"^{re.escape(expected)}$"):
        load_teacher(path)
    # With the algorithm named, the zip is still read before SB3 sees it: the same line.
    with pytest.raises(TeacherLoadError, match=f"^{re.escape(expected)}$"):
        load_teacher(path, algo="sac")


def test_zip_with_unreadable_data_entry(tmp_path: Path) -> None:
    path = tmp_path / "Hopper-v3.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data", b"{not json")
        zf.writestr("policy.pth", b"")
    with pytest.raises(TeacherLoadError, match=re.escape(f"{str(path)!r} has an unreadable 'data' entry")):
        detect_algorithm(path)


def test_wrong_algorithm_named(shared_teachers: Path) -> None:
    with pytest.raises(TeacherLoadError, match=re.escape("as a PPO model")):
        load_teacher(_zip(shared_teachers, "sac_hopper"), algo="ppo")


def test_unknown_algorithm() -> None:
    with pytest.raises(UnknownAlgorithmError, match=re.escape(
        "Unknown algorithm 'dqnx'; expected one of sac, td3, ddpg, ppo, a2c, tqc, trpo, ars, dqn."
    )):
        algorithm_class("dqnx")
    from sb3_contrib import TRPO
    from stable_baselines3 import SAC

    assert algorithm_class("SAC") is SAC
    assert algorithm_class("trpo") is TRPO


def test_unknown_algorithm_in_load_teacher(shared_teachers: Path) -> None:
    with pytest.raises(UnknownAlgorithmError, match="Unknown algorithm 'dqnx'"):
        load_teacher(_zip(shared_teachers, "sac_hopper"), algo="dqnx")


class _Evil:
    """Pickles as a call to ``os.system``: the hostile input the restricted unpickler must refuse.

    The tests write such pickles only to prove they are never executed; interp-rl itself
    never writes pickles.
    """

    def __init__(self, cmd: str) -> None:
        self.cmd = cmd

    def __reduce__(self):  # noqa: ANN204
        return (os.system, (self.cmd,))


def test_malicious_vecnormalize_is_refused_and_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "hacked"
    path = tmp_path / "vecnormalize.pkl"
    path.write_bytes(pickle.dumps(_Evil(f"echo hacked > {marker}")))
    with pytest.raises(TeacherLoadError, match=re.escape(
        f"{str(path)!r} is not a readable VecNormalize file (UnpicklingError: refusing to load global"
    )):
        read_vecnormalize(path)
    assert not marker.exists()


def test_malicious_vecnormalize_via_load_teacher(shared_teachers: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hacked"
    shutil.copyfile(_zip(shared_teachers, "sac_swimmer"), tmp_path / "Swimmer-v3.zip")
    (tmp_path / "Swimmer-v3").mkdir()
    (tmp_path / "Swimmer-v3" / "vecnormalize.pkl").write_bytes(
        pickle.dumps(_Evil(f"touch {marker}"))
    )
    with pytest.raises(TeacherLoadError, match="not a readable VecNormalize file"):
        load_teacher(tmp_path / "Swimmer-v3.zip")
    assert not marker.exists()


def test_garbage_and_missing_vecnormalize(tmp_path: Path) -> None:
    path = tmp_path / "vecnormalize.pkl"
    path.write_bytes(b"\x00garbage")
    with pytest.raises(TeacherLoadError, match="is not a readable VecNormalize file"):
        read_vecnormalize(path)
    with pytest.raises(TeacherLoadError, match="Cannot read normalisation file"):
        read_vecnormalize(tmp_path / "missing.pkl")


def test_read_shared_vecnormalize(shared_teachers: Path) -> None:
    norm = read_vecnormalize(shared_teachers / "ppo" / "Hopper-v3_1" / "Hopper-v3" / "vecnormalize.pkl")
    assert norm.mean.shape == (11,) and norm.var.shape == (11,)
    assert np.all(np.isfinite(norm.mean)) and np.all(norm.var > 0)
    assert norm.clip == 10.0 and norm.epsilon == pytest.approx(1e-8)
    ant = read_vecnormalize(shared_teachers / "trpo" / "Ant-v3_1" / "Ant-v3" / "vecnormalize.pkl")
    assert ant.mean.shape == (111,)
    # The old agent never saw contact forces: zero variance there.
    assert np.all(ant.var[-84:] < 1e-6)


def test_read_vecnormalize_saved_by_current_sb3(tmp_path: Path) -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    venv = VecNormalize(DummyVecEnv([lambda: envs.make_env("Hopper-v5", 0)]), clip_obs=5.0)
    venv.obs_rms.mean = np.arange(11.0)
    venv.obs_rms.var = np.arange(11.0) + 1.0
    venv.save(str(tmp_path / "vecnormalize.pkl"))
    norm = read_vecnormalize(tmp_path / "vecnormalize.pkl")
    np.testing.assert_array_equal(norm.mean, np.arange(11.0))
    np.testing.assert_array_equal(norm.var, np.arange(11.0) + 1.0)
    assert norm.clip == 5.0


def test_obs_normalizer_roundtrip(tmp_path: Path) -> None:
    norm = ObsNormalizer(np.array([1.0, -2.0]), np.array([4.0, 0.25]), clip=3.0, epsilon=0.0)
    np.testing.assert_allclose(norm(np.array([[3.0, -2.0], [100.0, -100.0]])), [[1.0, 0.0], [3.0, -3.0]])
    norm.save(tmp_path / "norm.npz")
    assert sorted(os.listdir(tmp_path)) == ["norm.npz"]
    back = ObsNormalizer.load(tmp_path / "norm.npz")
    np.testing.assert_array_equal(back.mean, norm.mean)
    np.testing.assert_array_equal(back.var, norm.var)
    assert (back.clip, back.epsilon) == (3.0, 0.0)
    (tmp_path / "bad.npz").write_bytes(b"junk")
    with pytest.raises(TeacherLoadError, match="is unreadable"):
        ObsNormalizer.load(tmp_path / "bad.npz")


# --- zoo configs and wrappers -------------------------------------------------------------


def test_read_zoo_config(shared_teachers: Path) -> None:
    cfg = read_zoo_config(shared_teachers / "sac" / "Swimmer-v3_1" / "Swimmer-v3" / "config.yml")
    assert type(cfg) is dict
    assert cfg["policy"] == "MlpPolicy"
    assert cfg == {
        "gamma": 0.9999, "learning_starts": 10000, "n_timesteps": 1000000.0,
        "policy": "MlpPolicy", "use_sde": False,
    }
    ppo = read_zoo_config(shared_teachers / "ppo" / "Hopper-v3_1" / "Hopper-v3" / "config.yml")
    assert ppo["policy"] == "MlpPolicy" and ppo["normalize"] is True


def test_read_zoo_config_refuses_python_tags(tmp_path: Path) -> None:
    marker = tmp_path / "hacked"
    path = tmp_path / "config.yml"
    path.write_text(f"!!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(TeacherLoadError, match=re.escape(f"Cannot read zoo config {str(path)!r}")):
        read_zoo_config(path)
    assert not marker.exists()
    with pytest.raises(TeacherLoadError, match="Cannot read zoo config"):
        read_zoo_config(tmp_path / "missing.yml")


@pytest.fixture(scope="module")
def time_feature_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained SAC on Swimmer with sb3-contrib's TimeFeatureWrapper (9 observations)."""
    from stable_baselines3 import SAC

    env = envs.make_env("Swimmer-v5", 0, envs.EnvVariant(time_feature=True))
    model = SAC("MlpPolicy", env, buffer_size=100, seed=0, device="cpu")
    path = tmp_path_factory.mktemp("timefeature") / "Swimmer-v3.zip"
    model.save(str(path))
    env.close()
    return path


PLAIN_CONFIG = "env_wrapper: sb3_contrib.common.wrappers.TimeFeatureWrapper\npolicy: MlpPolicy\n"
ZOO_CONFIG = (
    "!!python/object/apply:collections.OrderedDict\n"
    "- - - env_wrapper\n"
    "    - - sb3_contrib.common.wrappers.TimeFeatureWrapper\n"
    "  - - policy\n"
    "    - MlpPolicy\n"
)


@pytest.mark.parametrize("config", [PLAIN_CONFIG, ZOO_CONFIG], ids=["plain", "zoo-ordereddict"])
def test_time_feature_wrapper_teacher(time_feature_zip: Path, tmp_path: Path, config: str) -> None:
    zip_path = tmp_path / "Swimmer-v3.zip"
    shutil.copyfile(time_feature_zip, zip_path)
    (tmp_path / "Swimmer-v3").mkdir()
    (tmp_path / "Swimmer-v3" / "config.yml").write_text(config)
    assert "TimeFeatureWrapper" in str(read_zoo_config(tmp_path / "Swimmer-v3" / "config.yml")["env_wrapper"])
    t = load_teacher(zip_path)
    assert t.variant["time_feature"] is True
    assert (t.algo, t.task, t.obs_dim) == ("sac", "Swimmer-v5", 9)
    assert t.feature_names[-1] == "time_remaining"
    env = t.env_fn(0)
    assert env.observation_space.shape == (9,)
    env.close()
    result = evaluate(t, t.env_fn, 1, seed=0)
    assert result.lengths == [1000]
    assert np.isfinite(result.returns[0])


def test_time_feature_zip_without_config_is_rejected(time_feature_zip: Path) -> None:
    # Without the zoo config the 9-value observation matches no Swimmer layout.
    with pytest.raises(ObservationError, match=re.escape(
        "The teacher observes 9 features, but Swimmer-v5 gives 8; is it a teacher for another task?"
    )):
        load_teacher(time_feature_zip)


def test_unsupported_wrapper_and_missing_vecnormalize(shared_teachers: Path, tmp_path: Path) -> None:
    zip_path = tmp_path / "Swimmer-v3.zip"
    shutil.copyfile(_zip(shared_teachers, "sac_swimmer"), zip_path)
    side = tmp_path / "Swimmer-v3"
    side.mkdir()
    (side / "config.yml").write_text("env_wrapper: my.module.FancyWrapper\n")
    with pytest.raises(TeacherLoadError, match=re.escape(
        "The zoo config names env wrappers interp-rl cannot rebuild: my.module.FancyWrapper."
    )):
        load_teacher(zip_path)
    (side / "config.yml").write_text("normalize: true\npolicy: MlpPolicy\n")
    with pytest.raises(TeacherLoadError, match=re.escape(
        f"The zoo config of {str(zip_path)!r} says the agent normalised its observations, "
        f"but {str(side / 'vecnormalize.pkl')!r} is missing."
    )):
        load_teacher(zip_path)


# --- reproduced returns (the main acceptance) ---------------------------------------------

REFERENCE_RETURNS = [
    ("sac_halfcheetah", 9341.0, 5),
    ("ppo_hopper", 2437.0, 5),
    ("sac_swimmer", 336.0, 5),
    ("trpo_ant", 5057.0, 5),
    ("sac_walker2d", 3908.0, 20),
]


@pytest.mark.parametrize(("key", "reference", "episodes"), REFERENCE_RETURNS,
                         ids=[r[0] for r in REFERENCE_RETURNS])
def test_reproduces_published_v5_returns(teachers, key: str, reference: float, episodes: int) -> None:
    t = teachers[key]
    result = evaluate(t, t.env_fn, episodes, seed=0)
    assert len(result.returns) == episodes
    assert result.seeds == list(range(episodes))
    assert abs(result.mean_return - reference) <= 0.05 * reference, (
        f"{key}: mean return {result.mean_return:.1f} over {episodes} episodes, "
        f"expected {reference} ± 5%; returns {result.returns}"
    )


def test_sac_hopper_returns(teachers) -> None:
    """The SAC Hopper falls in most episodes; it still clears 900 in each of 20."""
    t = teachers["sac_hopper"]
    result = evaluate(t, t.env_fn, 20, seed=0)
    assert result.mean_return > 1000, result.returns
    assert all(r > 900 for r in result.returns), result.returns


def test_same_seed_gives_bit_identical_returns(teachers) -> None:
    t = teachers["sac_hopper"]
    a = evaluate(t, t.env_fn, 3, seed=11)
    b = evaluate(t, t.env_fn, 3, seed=11)
    assert a.returns == b.returns
    assert a.lengths == b.lengths
    c = evaluate(t, t.env_fn, 3, seed=12)
    assert c.returns != a.returns


def test_returns_do_not_depend_on_the_global_torch_thread_count(teachers) -> None:
    import torch

    from interp_rl.rollouts import evaluate

    teacher = teachers["sac_halfcheetah"]
    obs = _reset_obs(teacher, 2)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        two = evaluate(teacher, teacher.env_fn, 2, seed=11).returns
        # Every network call runs on the teacher's own count and gives the caller's back.
        teacher.predict(obs)
        teacher.q_values(obs, teacher.predict(obs))
        assert torch.get_num_threads() == 2, "the teacher must restore the caller's thread count"
        torch.set_num_threads(1)
        one = evaluate(teacher, teacher.env_fn, 2, seed=11).returns
    finally:
        torch.set_num_threads(before)
    assert one == two


def test_teacher_runs_its_network_on_its_own_thread_count(teachers, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    teacher = teachers["ppo_hopper"]
    obs = _reset_obs(teacher, 2)
    seen: list[int] = []
    forward = teacher.model.policy.predict_values

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return forward(*args, **kwargs)

    monkeypatch.setattr(teacher.model.policy, "predict_values", spy)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        teacher.value(obs)
        assert seen == [teacher.threads] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_run_that_requires_the_teachers_fails_when_they_are_missing(tmp_path: Path) -> None:
    """CI sets $INTERP_RL_REQUIRE_TEACHERS: without the folder the run fails (naming it), never skips."""
    import subprocess
    import sys

    missing = tmp_path / "no-teachers"
    env = {**os.environ, "INTERP_RL_TEACHERS": str(missing), "INTERP_RL_REQUIRE_TEACHERS": "1"}
    here = Path(__file__).resolve()
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{here}::test_unknown_algorithm"],
        cwd=here.parents[1], env=env, capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"the folder {missing} does not exist" in res.stdout + res.stderr
    # Without the requirement the same run passes (the teacher tests would skip).
    env.pop("INTERP_RL_REQUIRE_TEACHERS")
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{here}::test_unknown_algorithm"],
        cwd=here.parents[1], env=env, capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def _system_call(cmd: str) -> bytes:
    """A pickle (protocol 0 opcodes, written by hand) that calls ``os.system(cmd)`` when unpickled."""
    return f"c{os.system.__module__}\nsystem\n(V{cmd}\ntR.".encode()


def _with_field(src: Path, dst: Path, key: str, payload: bytes) -> Path:
    """A copy of the SB3 zip ``src`` whose ``data`` field ``key`` is the pickle ``payload``."""
    import base64
    import json

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            body = zin.read(info.filename)
            if info.filename == "data":
                data = json.loads(body)
                item = data.get(key) if isinstance(data.get(key), dict) else {":type:": "<class 'x'>"}
                data[key] = {**item, ":serialized:": base64.b64encode(payload).decode()}  # its readable keys kept
                body = json.dumps(data).encode()
            zout.writestr(info, body)
    return dst


@pytest.mark.parametrize("field", ["policy_class", "observation_space", "policy_kwargs"])
def test_a_crafted_agent_zip_is_refused_in_one_line_and_never_run(shared_teachers: Path, tmp_path: Path,
                                                                   field: str) -> None:
    """An inference field asking for os.system: refused, naming the global, and nothing runs; with
    --trust-pickles SB3's own loader would run it (so the flag is the user's word, not a default)."""
    marker = tmp_path / "pwned"
    evil = _with_field(_zip(shared_teachers, "sac_hopper"), tmp_path / "evil.zip", field,
                       _system_call(f"touch {marker}"))
    with pytest.raises(TeacherLoadError) as exc:
        load_teacher(evil, env="Hopper-v5")
    message = str(exc.value)
    assert message == (f"Refused to load {str(evil)!r}: its {field!r} field asks for a global that an agent does not "
                       f"need (refusing to load global {os.system.__module__}.system; unpickling it could run code). "
                       "If you trust this file, pass --trust-pickles.")
    assert not marker.exists()
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "interp_rl.cli", "evaluate", str(evil), "--env", "Hopper-v5",
                          "--episodes", "1"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1 and "Refused to load" in run.stderr
    assert not marker.exists()


def test_pickled_fields_inference_does_not_need_are_never_read(shared_teachers: Path, tmp_path: Path) -> None:
    """A schedule or the last observations holding os.system: left unread, the agent loads and acts as SB3's own
    loader makes it act on the untouched file."""
    from envs.sb3 import load_sb3_model

    marker = tmp_path / "pwned"
    src = _zip(shared_teachers, "sac_hopper")
    evil = _with_field(src, tmp_path / "a.zip", "lr_schedule", _system_call(f"touch {marker}"))
    evil = _with_field(evil, tmp_path / "Hopper-v3.zip", "_last_obs", _system_call(f"touch {marker}"))
    teacher = load_teacher(evil, env="Hopper-v5")
    assert not marker.exists()
    trusted, _ = load_sb3_model(src, trust=True)  # SB3's own loader, on the untouched file
    obs = _reset_obs(teacher, 8)
    np.testing.assert_array_equal(teacher.predict(obs), trusted.predict(obs.astype(np.float32), deterministic=True)[0])


@pytest.mark.parametrize("algo", ["sac", "td3", "ddpg", "tqc", "ppo", "a2c", "trpo", "ars", "dqn", "sac-moe",
                                  "ppo-moe"])
def test_every_algorithm_train_writes_loads_without_its_pickles(tmp_path: Path, algo: str) -> None:
    """What `interp-rl train` saves (every algorithm, the mixture policies too) loads through the allow-list and
    acts exactly as SB3's own loader makes it act."""
    from envs.moe_policy import MixturePPOPolicy, MixtureSACPolicy
    from envs.sb3 import load_sb3_model

    name, _, moe = algo.partition("-")
    import gymnasium

    task = "CartPole-v1" if name == "dqn" else "Pendulum-v1"
    env = gymnasium.make(task)  # SB3's own view of the task (DQN acts on its Discrete actions)
    cls = algorithm_class(name)
    policy: object = {"sac": MixtureSACPolicy, "ppo": MixturePPOPolicy}[name] if moe else (
        "LinearPolicy" if name == "ars" else "MlpPolicy")
    kwargs = {"buffer_size": 100, "learning_starts": 10} if name in {"sac", "td3", "ddpg", "tqc", "dqn"} else {}
    kwargs.update({"n_steps": 64} if name in {"ppo", "a2c", "trpo"} else {})
    kwargs.update({"policy_kwargs": {"n_experts": 2, "gating": "smose"}} if algo == "sac-moe" else
                  {"policy_kwargs": {"n_experts": 2}} if moe else {})
    model = cls(policy, env, seed=0, device="cpu", **kwargs)
    model.learn(128)
    path = tmp_path / f"{algo}.zip"
    model.save(str(path))
    env.close()
    safe, detected = load_sb3_model(path, name)
    trusted, _ = load_sb3_model(path, name, trust=True)
    assert detected == name and type(safe.policy) is type(trusted.policy)
    obs = np.stack([gymnasium.make(task).reset(seed=i)[0] for i in range(6)]).astype(np.float32)
    np.testing.assert_array_equal(safe.predict(obs, deterministic=True)[0], trusted.predict(obs, deterministic=True)[0])
