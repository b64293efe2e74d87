"""Deterministic evaluation, data collection, the SB3 adapter, and result files."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envs
from interp_rl.errors import InvalidParameterError, ObservationError
from interp_rl.policy import Policy, SB3PredictorAdapter, as_sb3_predictor
from interp_rl.rollouts import EvalResult, Rollout, collect, evaluate

pytestmark = pytest.mark.usefixtures("single_torch_thread")

PENDULUM = "InvertedPendulum-v5"


@pytest.fixture(scope="module")
def pendulum_fn():
    return envs.env_factory(PENDULUM)


# --- evaluate ------------------------------------------------------------------------------


def test_evaluate_seeds_and_shapes(pendulum_fn, constant_policy) -> None:
    result = evaluate(constant_policy(1), pendulum_fn, 5, seed=10)
    assert result.seeds == [10, 11, 12, 13, 14]
    assert len(result.returns) == 5 and len(result.lengths) == 5
    assert all(isinstance(r, float) for r in result.returns)
    assert all(isinstance(n, int) and n >= 1 for n in result.lengths)


@pytest.mark.parametrize("n_envs", [1, 8])
def test_episode_i_is_reset_with_seed_plus_i(pendulum_fn, constant_policy, n_envs: int) -> None:
    policy = constant_policy(1)
    seed = 3
    evaluate(policy, pendulum_fn, 3, seed=seed, n_envs=n_envs)
    expected = []
    for i in range(3):
        env = envs.make_env(PENDULUM, seed + i)
        expected.append(env.reset(seed=seed + i)[0])
        env.close()
    if n_envs == 1:
        # One episode at a time: the first observation of episode i opens its run of calls.
        starts = [0]
        lengths = evaluate(constant_policy(1), pendulum_fn, 3, seed=seed, n_envs=1).lengths
        for n in lengths[:-1]:
            starts.append(starts[-1] + n)
        firsts = [policy.calls[s][0] for s in starts]
    else:
        firsts = list(policy.calls[0])
    assert len(firsts) == 3
    for got, want in zip(firsts, expected, strict=False):
        np.testing.assert_array_equal(got, want)
    # Different seeds give different starts.
    assert not np.allclose(expected[0], expected[1])


def test_zero_policy_known_answer_inverted_pendulum(pendulum_fn, constant_policy) -> None:
    """With no force the pole falls; v5 pays 1 per step except the terminating one."""
    a = evaluate(constant_policy(1), pendulum_fn, 6, seed=0)
    b = evaluate(constant_policy(1), pendulum_fn, 6, seed=0)
    c = evaluate(constant_policy(1), pendulum_fn, 6, seed=0, n_envs=2)
    assert a.lengths == b.lengths == c.lengths
    assert a.returns == b.returns == c.returns
    assert all(1 < n < 1000 for n in a.lengths)
    assert a.returns == [float(n - 1) for n in a.lengths]
    assert a.mean_length == pytest.approx(np.mean(a.lengths))


def test_actions_are_clipped_to_the_action_space(pendulum_fn, constant_policy) -> None:
    # InvertedPendulum's actions lie in [-3, 3]: 50 acts exactly like 3.
    big = evaluate(constant_policy(1, 50.0), pendulum_fn, 3, seed=0)
    edge = evaluate(constant_policy(1, 3.0), pendulum_fn, 3, seed=0)
    assert big.returns == edge.returns and big.lengths == edge.lengths


def test_evaluate_is_reproducible_and_seed_dependent(pendulum_fn) -> None:
    class Proportional:
        def predict(self, obs: np.ndarray) -> np.ndarray:
            return np.clip(10.0 * obs[:, 1:2] + 2.0 * obs[:, 3:4], -3, 3)

    a = evaluate(Proportional(), pendulum_fn, 4, seed=1)
    b = evaluate(Proportional(), pendulum_fn, 4, seed=1)
    c = evaluate(Proportional(), pendulum_fn, 4, seed=2)
    assert a == b
    assert a.returns[1:] == c.returns[:3]  # episode i uses seed + i
    assert a.lengths[1:] == c.lengths[:3]


def test_evaluate_progress_callback(pendulum_fn, constant_policy) -> None:
    done: list[int] = []
    evaluate(constant_policy(1), pendulum_fn, 5, seed=0, n_envs=2, progress=done.append)
    assert sum(done) == 5
    assert all(n >= 1 for n in done)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"episodes": 0}, "The 'episodes' parameter of evaluate must be an int in [1, inf). Got 0 instead."),
        ({"episodes": -3}, "The 'episodes' parameter of evaluate must be an int in [1, inf). Got -3 instead."),
        ({"episodes": 2.0}, "The 'episodes' parameter of evaluate must be an int in [1, inf). Got 2.0 instead."),
        ({"episodes": True}, "The 'episodes' parameter of evaluate must be an int in [1, inf). Got True instead."),
        ({"n_envs": 0}, "The 'n_envs' parameter of evaluate must be an int in [1, inf). Got 0 instead."),
    ],
)
def test_evaluate_rejects_bad_parameters(pendulum_fn, constant_policy, kwargs, message) -> None:
    kwargs = {"episodes": 1, **kwargs}
    with pytest.raises(InvalidParameterError, match=f"^{re.escape(message)}$"):
        evaluate(constant_policy(1), pendulum_fn, seed=0, **kwargs)


def test_evaluate_accepts_numpy_ints(pendulum_fn, constant_policy) -> None:
    result = evaluate(constant_policy(1), pendulum_fn, np.int64(2), seed=0)
    assert len(result.returns) == 2


class _DivergingEnv(gym.Env):
    """Returns a NaN in its observation's index 1 after the first step."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3), {}

    def step(self, action):
        return np.array([0.0, np.nan, 0.0]), 0.0, False, False, {}


def test_non_finite_environment_observation_is_reported(constant_policy) -> None:
    expected = (
        "The environment Fake-v0 returned a non-finite observation at index 1; "
        "the simulation diverged."
    )
    with pytest.raises(ObservationError, match=f"^{re.escape(expected)}$"):
        evaluate(constant_policy(1), lambda seed: _DivergingEnv(), 2, seed=0, task="Fake-v0")
    with pytest.raises(ObservationError, match="non-finite observation at index 1"):
        collect(constant_policy(1), lambda seed: _DivergingEnv(), 5, seed=0)


# --- EvalResult ---------------------------------------------------------------------------


def test_eval_result_statistics_and_dict() -> None:
    r = EvalResult(returns=[1.0, 3.0], lengths=[10, 20], seeds=[0, 1], task="Hopper-v5",
                   extra={"algo": "sac"})
    assert r.mean_return == 2.0
    assert r.std_return == 1.0
    assert r.mean_length == 15.0
    assert r.to_dict() == {
        "returns": [1.0, 3.0], "lengths": [10, 20], "seeds": [0, 1], "task": "Hopper-v5",
        "extra": {"algo": "sac"}, "mean_return": 2.0, "std_return": 1.0, "episodes": 2,
    }


def test_eval_result_save_writes_json_atomically(tmp_path: Path, pendulum_fn, constant_policy) -> None:
    result = evaluate(constant_policy(1), pendulum_fn, 3, seed=0, task=PENDULUM)
    assert result.task == PENDULUM
    out = tmp_path / "sub" / "eval.json"
    result.save(str(out))
    assert os.listdir(out.parent) == ["eval.json"]
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n")
    data = json.loads(text)
    assert data == json.loads(json.dumps(result.to_dict()))
    assert data["episodes"] == 3 and data["seeds"] == [0, 1, 2]
    # Overwrite in place: still one file, no leftover temporaries.
    EvalResult([5.0], [7], [9]).save(str(out))
    assert os.listdir(out.parent) == ["eval.json"]
    assert json.loads(out.read_text())["returns"] == [5.0]
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_eval_result_save_failure_keeps_old_file(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    EvalResult([1.0], [1], [0]).save(str(out))
    before = out.read_text()
    bad = EvalResult([1.0], [1], [0], extra={"obj": object()})
    with pytest.raises(TypeError):
        bad.save(str(out))
    assert out.read_text() == before
    assert os.listdir(tmp_path) == ["eval.json"]


# --- collect --------------------------------------------------------------------------------


def test_collect_shapes_and_episode_starts(pendulum_fn, constant_policy) -> None:
    ro = collect(constant_policy(1), pendulum_fn, 60, seed=3)
    assert isinstance(ro, Rollout)
    assert ro.observations.shape == (60, 4)
    assert ro.actions.shape == (60, 1)
    assert ro.rewards.shape == (60,)
    assert ro.episode_starts.shape == (60,) and ro.episode_starts.dtype == bool
    assert np.all(ro.actions == 0.0)
    starts = np.flatnonzero(ro.episode_starts)
    assert starts[0] == 0 and len(starts) >= 2  # the pole falls well within 60 steps
    # Episode k is reset with seed + k.
    for k, s in enumerate(starts):
        env = envs.make_env(PENDULUM, 3 + k)
        np.testing.assert_array_equal(ro.observations[s], env.reset(seed=3 + k)[0])
        env.close()
    # The step before each new episode terminated (reward 0 in v5).
    assert np.all(ro.rewards[starts[1:] - 1] == 0.0)
    # The same lengths as evaluate with the same seeds.
    ev = evaluate(constant_policy(1), pendulum_fn, 1, seed=3)
    assert starts[1] == ev.lengths[0]


def test_collect_records_labeller_actions(pendulum_fn, constant_policy) -> None:
    driver = constant_policy(1, 0.0)
    labeller = constant_policy(1, 0.5)
    ro = collect(driver, pendulum_fn, 40, seed=0, labeller=labeller)
    assert np.all(ro.actions == 0.5)
    # The driver, not the labeller, moved the environment.
    plain = collect(constant_policy(1, 0.0), pendulum_fn, 40, seed=0)
    np.testing.assert_array_equal(ro.observations, plain.observations)
    assert len(labeller.calls) == 40


def test_collect_with_teacher(teachers) -> None:
    t = teachers["ppo_hopper"]
    ro = collect(t, t.env_fn, 30, seed=0)
    assert ro.observations.shape == (30, 11)
    np.testing.assert_allclose(ro.actions, t.predict(ro.observations), atol=1e-6)


def test_collect_rejects_bad_steps(pendulum_fn, constant_policy) -> None:
    with pytest.raises(InvalidParameterError, match=re.escape(
        "The 'steps' parameter of collect must be an int in [1, inf). Got 0 instead."
    )):
        collect(constant_policy(1), pendulum_fn, 0)


# --- the SB3 adapter ------------------------------------------------------------------------


def test_adapter_shapes(constant_policy) -> None:
    adapter = as_sb3_predictor(constant_policy(2, 0.25))
    assert isinstance(adapter, SB3PredictorAdapter)
    actions, state = adapter.predict(np.ones((3, 4)))
    assert actions.shape == (3, 2) and state is None
    action, state = adapter.predict(np.ones(4), state=None, episode_start=np.array([True]),
                                    deterministic=True)
    assert action.shape == (2,) and state is None
    assert np.all(action == 0.25)


def test_teacher_is_a_policy(teachers) -> None:
    assert isinstance(teachers["sac_swimmer"], Policy)


def test_sb3_evaluate_policy_runs_with_adapter(teachers) -> None:
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    t = teachers["sac_swimmer"]
    venv = DummyVecEnv([lambda: Monitor(t.env_fn(0))])
    try:
        mean, std = evaluate_policy(as_sb3_predictor(t), venv, n_eval_episodes=2, deterministic=True)
    finally:
        venv.close()
    assert np.isfinite(mean) and np.isfinite(std)
    # The Swimmer teacher is steady (336 ± 4 on v5).
    assert abs(mean - 336.0) <= 0.05 * 336.0


def test_task_level_evaluate_and_collect(teachers) -> None:
    import envs
    from interp_rl.errors import ObservationError

    teacher = teachers["ppo_hopper"]
    by_task = envs.evaluate_on_task(teacher, "Hopper-v5", episodes=2, seed=3)
    own = envs.evaluate_on_task(teacher, episodes=2, seed=3)
    assert by_task.returns == own.returns and by_task.task == "Hopper-v5"
    data = envs.collect_on_task(teacher, steps=50, seed=0)
    assert data.observations.shape == (50, 11) and data.actions.shape == (50, 3)
    with pytest.raises(ObservationError, match=re.escape(
            "The policy observes 11 features, but Walker2d-v5 gives 17; is it a policy for another task?")):
        envs.evaluate_on_task(teacher, "Walker2d-v5", episodes=1)
