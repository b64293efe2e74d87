"""Discrete-action tasks (CartPole-v1, MountainCar-v0): class scores, DQN/PPO teachers, and SILVER."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import envs
from distill import DAgger, SILVERPolicy
from envs.loading import load_teacher
from envs.sb3 import detect_algorithm
from envs.training import TrainConfig, train_teacher
from envs.wrappers import ClassScores
from interp_rl.attribution import ClassScoreModel, explain
from interp_rl.cli import app
from interp_rl.errors import InterpRLError
from interp_rl.kinds.mixture import MixtureProgram
from interp_rl.program import load_controller
from interp_rl.rollouts import collect, evaluate

runner = CliRunner()


class RuleTeacher:
    """A stand-in CartPole teacher with known class scores: push right when ``pole_angle + 0.3 pole_ang_vel > 0``
    (it balances the pole for all 500 steps)."""

    task = "CartPole-v1"
    obs_dim, act_dim, n_classes = 4, 2, 2
    action_low, action_high = np.zeros(2), np.ones(2)
    has_q = has_value = False
    discrete = True
    algo = "rule"
    feature_names = ["cart_position", "cart_velocity", "pole_angle", "pole_angular_velocity"]
    env_fn = staticmethod(envs.env_factory("CartPole-v1"))

    def action_scores(self, obs: np.ndarray) -> np.ndarray:
        o = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        return np.stack([np.zeros(len(o)), o @ np.array([0.0, 0.0, 1.0, 0.3])], axis=1)

    def predict(self, obs: np.ndarray) -> np.ndarray:
        return np.eye(2)[np.argmax(self.action_scores(obs), axis=1)]


# ------------------------------------------------------------------------------------------------ tasks
def test_discrete_tasks_take_one_score_per_class_and_play_the_highest() -> None:
    env = envs.make_env("CartPole-v1", seed=0)
    assert env.action_space == gym.spaces.Box(0.0, 1.0, (2,), np.float64)
    raw = envs.get_task("CartPole-v1").make(0, raw_actions=True)
    assert isinstance(raw.action_space, gym.spaces.Discrete) and raw.action_space.n == 2
    feats, acts = envs.task_signals("MountainCar-v0")
    assert [f.name for f in feats] == ["car_position", "car_velocity"]
    assert [a.name for a in acts] == ["accelerate_left", "coast", "accelerate_right"]
    assert envs.make_env("MountainCar-v0", seed=0).action_space.shape == (3,)

    wrapped = ClassScores(gym.make("MountainCar-v0"))
    assert wrapped.action([0.1, 0.9, 0.3]) == 1
    assert wrapped.action([0.5, 0.5, 0.5]) == 0  # ties go to the lowest class
    with pytest.raises(ValueError, match="Expected 3 class scores"):
        wrapped.action([1.0, 0.0])
    with pytest.raises(TypeError, match="Discrete"):
        ClassScores(gym.make("Pendulum-v1"))


def test_class_scores_env_steps_as_the_raw_env_does() -> None:
    """Playing one-hot scores through the wrapper is playing the classes on the raw task."""
    a = envs.make_env("CartPole-v1", seed=3)
    b = envs.get_task("CartPole-v1").make(3, raw_actions=True)
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    for k in [0, 1, 1, 0, 1]:
        oa, ra, *_ = a.step(np.eye(2)[k])
        ob, rb, *_ = b.step(k)
        np.testing.assert_array_equal(oa, ob)
        assert ra == rb


# ------------------------------------------------------------------------------------------------ teachers
@pytest.fixture(scope="module")
def tiny_teachers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """DQN and PPO trained briefly on CartPole by ``train_teacher`` (untrained in quality, real in format)."""
    root = tmp_path_factory.mktemp("discrete")
    out = {}
    for algo, hp in [("dqn", {"learning_starts": 200, "train_freq": 100, "gradient_steps": 10,
                              "policy_kwargs": {"net_arch": [32, 32]}}),
                     ("ppo", {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1})]:
        cfg = TrainConfig(algo=algo, task="CartPole-v1", steps=600, out=str(root / algo), seed=0, eval_episodes=1,
                          hyperparams=hp)
        meta = train_teacher(cfg, progress_bar=False)
        assert meta["task"] == "CartPole-v1" and meta["algo"] == algo
        out[algo] = root / algo
    return out


def test_discrete_teachers_act_in_class_scores(tiny_teachers: dict[str, Path]) -> None:
    assert detect_algorithm(tiny_teachers["dqn"] / "model.zip") == "dqn"
    obs = collect(RuleTeacher(), RuleTeacher.env_fn, 50, 0).observations
    for algo, path in tiny_teachers.items():
        t = load_teacher(path)
        assert (t.algo, t.discrete, t.n_classes, t.act_dim) == (algo, True, 2, 2)
        act = t.predict(obs)
        assert set(np.unique(act)) <= {0.0, 1.0} and np.all(act.sum(axis=1) == 1)
        scores = t.action_scores(obs)
        assert scores.shape == (50, 2)
        np.testing.assert_array_equal(np.argmax(scores, axis=1), np.argmax(act, axis=1))
        res = evaluate(t, t.env_fn, 2, seed=0)
        assert all(r >= 8 for r in res.returns)  # CartPole pays 1 per step; an episode lasts >= 8 steps
    dqn, ppo = load_teacher(tiny_teachers["dqn"]), load_teacher(tiny_teachers["ppo"])
    assert dqn.has_q and ppo.has_value
    # DQN's critic: Q of the class the scores pick; its own class has the highest Q.
    q_own = dqn.q_values(obs, dqn.predict(obs))
    np.testing.assert_allclose(q_own, dqn.action_scores(obs).max(axis=1), rtol=1e-6)
    q_other = dqn.q_values(obs, 1.0 - dqn.predict(obs))
    assert np.all(q_other <= q_own)
    # PPO's scores are log-probabilities.
    np.testing.assert_allclose(np.exp(ppo.action_scores(obs)).sum(axis=1), 1.0, rtol=1e-5)
    with pytest.raises(InterpRLError, match="continuous actions"):
        _continuous_teacher().action_scores(obs[:, :3])


def _continuous_teacher() -> object:
    from stable_baselines3 import SAC

    from envs.sb3 import SB3Teacher

    model = SAC("MlpPolicy", envs.make_env("Pendulum-v1", 0), seed=0, device="cpu", learning_starts=0)
    return SB3Teacher(model, "sac", "Pendulum-v1", env_fn=envs.env_factory("Pendulum-v1"))


def test_explain_a_discrete_teacher_explains_its_class_scores(tiny_teachers: dict[str, Path],
                                                              tmp_path: Path) -> None:
    res = runner.invoke(app, ["explain", "--policy", str(tiny_teachers["dqn"]), "--out", str(tmp_path / "ex"),
                              "--states", "30", "--episodes", "1"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "ex" / "summary.json").read_text())
    assert summary["explained"] == "class scores (Q-value)"
    assert summary["actions"] == ["push_left", "push_right"]
    assert summary["method"] == "exact"  # 4 features: every coalition
    assert "class scores (Q-value)" in res.output
    with pytest.raises(InterpRLError, match="no action_scores"):
        ClassScoreModel(object())
    with pytest.raises(InterpRLError, match="the SAC teacher of Pendulum-v1 has continuous actions"):
        ClassScoreModel(_continuous_teacher())


# ------------------------------------------------------------------------------------------------ SILVER
@pytest.fixture(scope="module")
def rule_data() -> tuple[np.ndarray, np.ndarray]:
    ro = collect(RuleTeacher(), RuleTeacher.env_fn, 3000, 0)
    return ro.observations, ro.actions


def test_silver_recovers_a_linear_rule_through_shapley_values(rule_data: tuple[np.ndarray, np.ndarray]) -> None:
    X, Y = rule_data
    teacher = RuleTeacher()
    s = SILVERPolicy(teacher=teacher, boundary="shapley", random_state=0).fit(X, Y)
    prog = s.program_
    assert isinstance(prog, MixtureProgram) and prog.router == "linear"
    facts = s.fit_facts()
    assert facts["shapley_method"] == "exact" and facts["cluster_purity"] == 1.0
    assert facts["rule_accuracy"] >= 0.97, facts
    # Carried back from Shapley space, the rule reads what the teacher reads: pole angle and angular
    # velocity, in the teacher's proportion (the Shapley values of linear scores are affine in their feature).
    w = prog.router_coef[1] - prog.router_coef[0]
    assert np.all(np.abs(w[:2]) < 0.05 * np.abs(w[2])), w
    assert w[3] / w[2] == pytest.approx(0.3, rel=0.1)
    pred = s.predict(X)
    assert set(np.unique(pred)) <= {0.0, 1.0} and np.all(pred.sum(axis=1) == 1)
    assert min(evaluate(s, teacher.env_fn, 5, seed=10).returns) == 500.0
    # Exact Shapley values of the rule's one-hot choice sum to it (efficiency).
    attr = explain(prog, X[:20], X[:8], method="exact")
    assert attr.efficiency_gap() < 1e-9
    # Reproducible, and the paper's unsupervised clusters run too.
    again = SILVERPolicy(teacher=teacher, boundary="shapley", random_state=0).fit(X, Y)
    np.testing.assert_array_equal(again.program_.router_coef, prog.router_coef)
    km = SILVERPolicy(teacher=teacher, clusters="kmeans", n_clusters=4, random_state=0).fit(X, Y)
    assert km.fit_facts()["clusters"] == 4 and 0.5 <= km.fit_facts()["cluster_purity"] <= 1.0
    one = SILVERPolicy(teacher=teacher, boundary="shapley", max_terms=1, random_state=0).fit(X, Y)
    assert np.count_nonzero(one.program_.router_coef.any(axis=0)) == 1
    # The refitted boundary (the default) reads the same features as the Shapley-space one.
    refit = SILVERPolicy(teacher=teacher, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(refit.program_.router_coef != 0, prog.router_coef != 0)
    assert refit.fit_facts()["rule_accuracy"] >= 0.97


class ValueShiftedTeacher(RuleTeacher):
    """The same choice, with a large state value added to every class's score, as a DQN's Q-values carry."""

    def action_scores(self, obs: np.ndarray) -> np.ndarray:
        o = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        return super().action_scores(o) + (40.0 * o[:, 1] + 25.0 * o[:, 0])[:, None]


def test_silver_reads_score_differences_only(rule_data: tuple[np.ndarray, np.ndarray]) -> None:
    """A value shared by every class decides nothing: centred over the classes, its Shapley values cancel and
    the rule is the one found without it."""
    X, Y = rule_data
    plain = SILVERPolicy(teacher=RuleTeacher(), boundary="shapley", random_state=0).fit(X, Y)
    shifted = SILVERPolicy(teacher=ValueShiftedTeacher(), boundary="shapley", random_state=0).fit(X, Y)
    np.testing.assert_allclose(shifted.program_.router_coef, plain.program_.router_coef, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(shifted.program_.router_intercept, plain.program_.router_intercept, rtol=1e-6,
                               atol=1e-9)


def test_silver_through_dagger_on_the_real_task() -> None:
    teacher = RuleTeacher()
    d = DAgger(SILVERPolicy(shapley_states=300), n_iter=1, steps=1500, eval_episodes=2, seed=0).fit(teacher)
    assert d.student_.teacher is teacher  # DAgger handed the student its teacher
    assert d.student_.fit_facts()["shapley_states"] == 300
    assert min(evaluate(d.student_, teacher.env_fn, 3, seed=50).returns) == 500.0


@pytest.mark.parametrize(("params", "line"), [
    ({}, "The 'teacher' parameter of SILVERPolicy must be a discrete teacher"),
    ({"teacher": object()}, "object has no action_scores()"),
    ({"teacher": RuleTeacher(), "C": 0.0}, "The 'C' parameter of SILVERPolicy must be a positive number"),
    ({"teacher": RuleTeacher(), "shapley_states": 0}, "shapley_states"),
    ({"teacher": RuleTeacher(), "boundary": "svm"}, "The 'boundary' parameter of SILVERPolicy must be"),
    ({"teacher": RuleTeacher(), "clusters": "dbscan"}, "The 'clusters' parameter of SILVERPolicy must be"),
])
def test_silver_bad_input_is_one_line(rule_data: tuple[np.ndarray, np.ndarray], params: dict, line: str) -> None:
    X, Y = rule_data
    with pytest.raises(InterpRLError) as info:
        SILVERPolicy(**params).fit(X[:100], Y[:100])
    assert line in str(info.value) and "\n" not in str(info.value)


def test_cli_distill_silver_writes_a_rule_controller(tiny_teachers: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "silver"
    res = runner.invoke(app, ["distill", "silver", "--teacher", str(tiny_teachers["ppo"]), "--env", "CartPole-v1",
                              "--out", str(out), "--iterations", "0", "--steps", "600", "--shapley-states", "200",
                              "--eval-episodes", "2", "--fidelity-steps", "200", "--attribution-states", "20",
                              "--seed", "1"])
    assert res.exit_code == 0, res.output
    assert "same class as the teacher" in res.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["method"] == "silver" and metrics["kind"] == "mixture"
    assert metrics["fit_facts"]["shapley_states"] == 200
    assert 0.0 <= metrics["fidelity_teacher_states"]["agreement"] <= 1.0
    ctrl = load_controller(out)
    assert ctrl.action_names == ["push_left", "push_right"]
    assert "router" in (out / "rules.txt").read_text()
    ns: dict = {}
    exec((out / "controller.py").read_text(), ns)  # noqa: S102 - our own generated module
    x = collect(RuleTeacher(), RuleTeacher.env_fn, 20, 0).observations
    np.testing.assert_array_equal(np.array([ns["act"](list(o)) for o in x]), ctrl.predict(x))


def test_cli_distill_silver_on_a_continuous_teacher_is_one_line(tmp_path: Path) -> None:
    from stable_baselines3 import SAC

    SAC("MlpPolicy", envs.make_env("Pendulum-v1", 0), seed=0, device="cpu").save(tmp_path / "sac.zip")
    res = runner.invoke(app, ["distill", "silver", "--teacher", str(tmp_path / "sac.zip"), "--env", "Pendulum-v1",
                              "--out", str(tmp_path / "out"), "--iterations", "0", "--steps", "200"])
    assert res.exit_code != 0
    assert res.output.strip().splitlines()[-1] == (
        "Error: Class scores exist for teachers with discrete actions (an SB3 agent of CartPole-v1 or "
        "MountainCar-v0); the SAC teacher of Pendulum-v1 has continuous actions.")
    assert not (tmp_path / "out" / "controller.json").exists()
