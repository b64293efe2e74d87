"""CMA-ES over a program's own parameters: it improves the return, keeps the start's kind and zeros, gives the same
controller with any number of workers, and resumes to the numbers of a run never stopped."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from distill.cmaes import CMAES, STATE_JSON, search_for
from envs import env_factory
from interp_rl.errors import InterpRLError, InvalidParameterError
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.tree import TreeProgram
from interp_rl.rollouts import evaluate

TASK = "InvertedPendulum-v5"  # obs: slider position, hinge angle, slider velocity, hinge angular velocity


@pytest.fixture(scope="module")
def env_fn():  # noqa: ANN201
    return env_factory(TASK)


def _cma(**kw: object) -> CMAES:
    return CMAES(**{"population": 8, "sigma": 1.0, "horizon": 200, "normalize": True, "seed": 3, **kw})  # type: ignore[arg-type]


def test_linear_cmaes_from_scratch_balances_the_pole(env_fn) -> None:  # noqa: ANN001
    cma = _cma(seed=1).fit("linear", env_fn, iterations=12)
    start = LinearProgram(intercept=[0.0], coef=np.zeros((1, 4)), action_low=[-3.0], action_high=[3.0])
    before = evaluate(start, env_fn, episodes=5, seed=1000).mean_return
    after = evaluate(cma.program_, env_fn, episodes=5, seed=1000).mean_return
    assert isinstance(cma.program_, LinearProgram) and cma.n_parameters_ == 5
    assert before < 30 and after > 150
    assert cma.history_[-1]["return_mean"] > 10 * cma.history_[0]["return_mean"]
    assert [h["iteration"] for h in cma.history_] == list(range(1, 13))
    assert cma.env_steps_ == cma.history_[-1]["env_steps"] > 0


def test_the_minimum_of_a_quadratic_is_found() -> None:
    """The update itself, away from any simulator: a one-step 'episode' whose reward is minus a tilted quadratic
    of the action (a linear map of a constant observation) is maximised at its optimum."""
    import gymnasium as gym

    target = np.array([0.7, -1.3, 0.4])
    tilt = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])

    class Bowl(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (1,))
        action_space = gym.spaces.Box(-5.0, 5.0, (3,))

        def reset(self, *, seed=None, options=None):  # noqa: ANN001, ANN202
            super().reset(seed=seed)
            return np.ones(1, dtype=np.float32), {}

        def step(self, action):  # noqa: ANN001, ANN202
            d = np.asarray(action) - target
            return np.ones(1, dtype=np.float32), -float(d @ tilt @ d), True, False, {}

    cma = CMAES(population=10, sigma=1.0, seed=1).fit("linear", lambda seed: Bowl(), iterations=120)
    got = cma.program_.predict(np.ones((1, 1)))[0]
    np.testing.assert_allclose(got, target, atol=1e-3)
    assert cma.sigma_ < 1e-2


def test_a_warm_start_keeps_its_kind_and_its_zeros(env_fn) -> None:  # noqa: ANN001
    tree = TreeProgram.from_leaves(feature=[1, -1, -1], threshold=[0.0, 0.0, 0.0], left=[1, -1, -1],
                                   right=[2, -1, -1], intercept=[[0.0], [0.1], [-0.1]], obs_dim=4,
                                   coef={1: {(0, 1): 1.0, (0, 3): 0.5}, 2: {(0, 1): 2.0}},
                                   action_low=[-3.0], action_high=[3.0])
    cma = _cma().fit(tree, env_fn, iterations=2)
    assert cma.program_.kind == "tree" and cma.n_parameters_ == 2 + 3  # two leaves' intercepts, three coefficients
    before, after = tree.affine_pieces().coef, cma.program_.affine_pieces().coef
    np.testing.assert_array_equal(before == 0.0, after == 0.0)


def test_the_same_seed_gives_the_same_controller_with_one_or_two_workers(env_fn) -> None:  # noqa: ANN001
    one = _cma(n_workers=1).fit("linear", env_fn, iterations=3)
    two = _cma(n_workers=2).fit("linear", env_fn, iterations=3)
    assert np.array_equal(one.theta_, two.theta_) and one.program_.to_dict() == two.program_.to_dict()
    strip = [{k: v for k, v in h.items() if k != "seconds"} for h in one.history_]
    assert strip == [{k: v for k, v in h.items() if k != "seconds"} for h in two.history_]


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(env_fn, tmp_path: Path) -> None:  # noqa: ANN001
    whole = _cma().fit("linear", env_fn, iterations=4)
    _cma(checkpoint_dir=tmp_path).fit("linear", env_fn, iterations=2)
    state = json.loads((tmp_path / STATE_JSON).read_text())
    assert state["iteration"] == 2 and sorted(p.name for p in tmp_path.glob("*.npz")) == ["cmaes_state_2.npz"]
    resumed = _cma(checkpoint_dir=tmp_path).fit("linear", env_fn, iterations=4, resume=True)
    assert np.array_equal(whole.theta_, resumed.theta_) and whole.sigma_ == resumed.sigma_
    assert whole.program_.to_dict() == resumed.program_.to_dict()
    with pytest.raises(InterpRLError, match="made with other settings"):
        _cma(checkpoint_dir=tmp_path, sigma=0.1).fit("linear", env_fn, iterations=5, resume=True)


def test_bad_settings_are_one_line_errors(env_fn) -> None:  # noqa: ANN001
    with pytest.raises(InvalidParameterError, match=r"The 'population' parameter of CMAES must be an int in \[4, "):
        CMAES(population=2).fit("linear", env_fn, iterations=1)
    with pytest.raises(InvalidParameterError, match="The 'sigma' parameter of CMAES must be a float"):
        CMAES(sigma=0.0).fit("linear", env_fn, iterations=1)
    with pytest.raises(InvalidParameterError, match="The 'search' parameter of search_for must be one of"):
        search_for("sgd", None)


def test_distill_linear_searches_by_cmaes_from_scratch(tmp_path: Path) -> None:
    """`interp-rl distill linear --scratch-steps N --scratch-algo cmaes`: a dense linear policy searched from zeros,
    its controller folder written as the command's others are."""
    from typer.testing import CliRunner

    from envs.training import TrainConfig, train_teacher
    from interp_rl.cli import app
    from interp_rl.program import load_controller

    teacher = tmp_path / "teacher"
    train_teacher(TrainConfig("sac", TASK, 300, str(teacher), seed=0, hyperparams={"learning_starts": 100},
                              eval_episodes=1), progress_bar=False)
    res = CliRunner().invoke(app, ["distill", "linear", "--teacher", str(teacher), "--out", str(tmp_path / "c"),
                                   "--scratch-steps", "3000", "--scratch-algo", "cmaes", "--seed", "1",
                                   "--eval-episodes", "2"])
    assert res.exit_code == 0, res.output
    ctrl = load_controller(tmp_path / "c" / "controller.json")
    assert ctrl.program.kind == "linear" and ctrl.feature_names[1] == "hinge_angle"
    scratch = json.loads((tmp_path / "c" / "metrics.json").read_text())["scratch"]
    assert scratch["algo"] == "cmaes" and scratch["history"][-1]["step"] >= 3000
