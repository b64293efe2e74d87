"""DAgger and leaf tuning on real environments: known answers, weighting, resume, determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest

from distill.dagger import STATE_FILE, DAgger, critic_weights, rollout_mixture
from distill.leaf_search import LeafTuner
from distill.tree import TreePolicy
from envs import env_factory
from interp_rl.errors import DistillInterrupted, InterpRLError, InvalidParameterError
from interp_rl.rollouts import evaluate


def CART(**params):  # noqa: N802 - reads like the estimator it builds
    """A TreePolicy with CART's defaults (constant leaves, CART splits, no leaf limit) unless overridden."""
    return TreePolicy(**{"leaf_model": "constant", "split_on": "constant", "max_leaves": None, **params})


PENDULUM = env_factory("Pendulum-v1")


class BangBang:
    """Push with the swing: +2 when the angular velocity is positive, -2 otherwise (a Teacher, no critic)."""

    task = "Pendulum-v1"
    obs_dim, act_dim = 3, 1
    action_low = np.array([-2.0])
    action_high = np.array([2.0])
    env_fn = staticmethod(PENDULUM)
    has_q = has_value = False

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, obs: np.ndarray) -> np.ndarray:
        self.calls += len(obs)
        return np.where(obs[:, 2:3] > 0.0, 2.0, -2.0)


def test_dagger_recovers_the_teachers_rule():
    dagger = DAgger(CART(max_depth=1), n_iter=2, steps=400, eval_episodes=2).fit(BangBang(), PENDULUM)
    tree = dagger.student_.tree_
    assert tree.feature[0] == 2 and abs(tree.threshold[0]) < 0.05
    np.testing.assert_allclose(sorted(tree.intercept[tree.leaves, 0]), [-2.0, 2.0])
    assert [r["samples"] for r in dagger.history_] == [400, 800, 1200]
    assert dagger.history_[-1]["fidelity_r2"] > 0.95
    assert dagger.weighting_ == "none"  # no Q-function
    # The student acts as the teacher does on held-out episodes.
    teacher_ret = evaluate(BangBang(), PENDULUM, 2, seed=9).mean_return
    assert evaluate(dagger.student_, PENDULUM, 2, seed=9).mean_return == pytest.approx(teacher_ret, rel=0.05)


def test_rounds_mix_teacher_and_student_by_beta():
    class Still:
        def predict(self, obs):
            return np.zeros((len(obs), 1))

    teacher = BangBang()
    rng = np.random.default_rng(0)
    # beta = 1: the teacher drives; beta = 0: the student drives, yet every state is labelled by the teacher.
    led = rollout_mixture(teacher, Still(), PENDULUM, 200, beta=1.0, seed=3, rng=rng)
    own = rollout_mixture(teacher, Still(), PENDULUM, 200, beta=0.0, seed=3, rng=rng)
    np.testing.assert_array_equal(led.observations[0], own.observations[0])  # same reset
    assert not np.allclose(led.observations[50:], own.observations[50:])
    np.testing.assert_array_equal(own.teacher_actions, teacher.predict(own.observations))

    dagger = DAgger(CART(max_depth=1), n_iter=3, steps=200, beta_decay=0.5, eval_episodes=0)
    dagger.fit(BangBang(), PENDULUM)
    assert [r["beta"] for r in dagger.history_] == [1.0, 0.5, 0.25, 0.125]
    assert dagger.best_round_ == 3  # no evaluation: the last round is kept


def test_best_round_is_the_best_evaluated_one():
    dagger = DAgger(CART(max_leaves=2), n_iter=3, steps=300, eval_episodes=2, seed=1)
    dagger.fit(BangBang(), PENDULUM)
    returns = [r["return_mean"] for r in dagger.history_]
    assert dagger.best_round_ == int(np.argmax(returns))
    assert dagger.n_samples_used_ == 300 * (dagger.best_round_ + 1)


def test_same_seed_same_student():
    runs = [DAgger(CART(max_leaves=8), n_iter=2, steps=300, eval_episodes=1, seed=5).fit(BangBang(), PENDULUM)
            for _ in range(2)]
    X = np.random.default_rng(0).uniform(-1, 1, size=(100, 3)) * [1, 1, 8]
    np.testing.assert_array_equal(runs[0].student_.predict(X), runs[1].student_.predict(X))
    assert runs[0].history_[-1]["return_mean"] == runs[1].history_[-1]["return_mean"]


def test_interrupted_distillation_keeps_completed_rounds_and_resumes(tmp_path):
    ckpt = tmp_path / "ckpt"

    def stop_after_round_1(row):
        if row["round"] == 1:
            raise KeyboardInterrupt

    make = lambda: DAgger(CART(max_leaves=4), n_iter=3, steps=300, eval_episodes=1, seed=2,  # noqa: E731
                          checkpoint_dir=ckpt)
    with pytest.raises(DistillInterrupted, match=r"2 completed round\(s\) are kept in"):
        make().fit(BangBang(), PENDULUM, progress=stop_after_round_1)
    state = json.loads((ckpt / STATE_FILE).read_text())
    assert [r["round"] for r in state["history"]] == [0, 1]
    assert sorted(p.name for p in ckpt.glob("round_*.npz")) == ["round_00.npz", "round_01.npz"]

    with pytest.raises(InterpRLError, match="already holds a distillation; pass resume=True"):
        make().fit(BangBang(), PENDULUM)
    teacher = BangBang()
    resumed = make().fit(teacher, PENDULUM, resume=True)
    assert teacher.calls == 2 * 300  # only rounds 2 and 3 were rolled out
    straight = DAgger(CART(max_leaves=4), n_iter=3, steps=300, eval_episodes=1, seed=2).fit(
        BangBang(), PENDULUM)
    assert [r["return_mean"] for r in resumed.history_] == [r["return_mean"] for r in straight.history_]
    X = np.random.default_rng(1).normal(size=(50, 3))
    np.testing.assert_array_equal(resumed.student_.predict(X), straight.student_.predict(X))


def test_resume_refuses_other_settings(tmp_path):
    DAgger(CART(max_leaves=4), n_iter=0, steps=200, eval_episodes=0, checkpoint_dir=tmp_path).fit(
        BangBang(), PENDULUM)
    with pytest.raises(InterpRLError, match="it was started with steps=200, not 300"):
        DAgger(CART(max_leaves=4), n_iter=1, steps=300, eval_episodes=0, checkpoint_dir=tmp_path).fit(
            BangBang(), PENDULUM, resume=True)


@pytest.mark.parametrize("params, message", [
    ({"n_iter": -1}, "The 'n_iter' parameter of DAgger must be an int in [0, inf). Got -1 instead."),
    ({"steps": 0}, "The 'steps' parameter of DAgger must be an int in [1, inf). Got 0 instead."),
    ({"beta_decay": 1.5}, "The 'beta_decay' parameter of DAgger must be a float in [0.0, 1.0]. Got 1.5 instead."),
    ({"weighting": "q"},
     "The 'weighting' parameter of DAgger must be one of 'auto', 'critic', 'none'. Got 'q' instead."),
])
def test_bad_parameters(params, message):
    with pytest.raises(InvalidParameterError) as exc:
        DAgger(CART(), **params).fit(BangBang(), PENDULUM)
    assert str(exc.value) == message


def test_critic_weighting_needs_a_critic():
    with pytest.raises(InvalidParameterError) as exc:
        DAgger(CART(), weighting="critic").fit(BangBang(), PENDULUM)
    assert str(exc.value) == (
        "The 'weighting' parameter of DAgger must be 'auto' or 'none' for a teacher without a Q-function (the "
        "given teacher has none; SAC, TD3, DDPG and TQC have one). Got 'critic' instead."
    )


class KnownQ(BangBang):
    """A Pendulum teacher whose critic is known: ``Q(s, a) = -g(s) (a - pi(s))^2`` with ``g(s) = 1 + cos(theta)``.

    For ``a ~ U(-2, 2)``, ``E[(a - p)^2] = 4/3 + p^2``, so VIPER's weight of a state is exactly
    ``g(s) (4/3 + pi(s)^2)`` before scaling to mean 1: zero where the pendulum hangs down (g = 0,
    every action as good as another), largest upright with a strong push.
    """

    has_q = True

    def predict(self, obs: np.ndarray) -> np.ndarray:
        return np.clip(0.5 * obs[:, 2:3], -2.0, 2.0)

    def q_values(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        gap = np.asarray(actions).reshape(len(obs), 1) - self.predict(obs)
        return -(1.0 + obs[:, 0]) * gap[:, 0] ** 2

    @staticmethod
    def exact_weights(obs: np.ndarray) -> np.ndarray:
        w = (1.0 + obs[:, 0]) * (4.0 / 3.0 + np.clip(0.5 * obs[:, 2], -2.0, 2.0) ** 2)
        return w / w.mean()


def test_critic_weights_match_a_known_q_function():
    teacher = KnownQ()
    roll = rollout_mixture(teacher, None, PENDULUM, 200, beta=1.0, seed=0, rng=np.random.default_rng(0))
    exact = KnownQ.exact_weights(roll.observations)
    assert exact.std() > 0.3  # the states differ: a uniform weighting cannot pass
    w = critic_weights(teacher, roll.observations, roll.teacher_actions, n_action_samples=4000,
                       rng=np.random.default_rng(1))
    np.testing.assert_allclose(w, exact, rtol=0.1, atol=0.02)
    # DAgger weights its data the same way when the teacher has a critic.
    dagger = DAgger(CART(max_leaves=4), n_iter=0, steps=200, n_action_samples=4000, eval_episodes=0)
    dagger.fit(teacher, PENDULUM)
    assert dagger.weighting_ == "critic"
    np.testing.assert_allclose(dagger.sample_weight_, KnownQ.exact_weights(dagger.X_), rtol=0.1, atol=0.02)


@pytest.mark.usefixtures("single_torch_thread")
def test_ppo_teacher_falls_back_to_uniform_weights_and_refuses_critic(teachers):
    ppo = teachers["ppo_hopper"]
    with pytest.raises(InvalidParameterError, match="the PPO teacher has none"):
        DAgger(CART(), weighting="critic").fit(ppo, ppo.env_fn)
    dagger = DAgger(CART(max_leaves=4), n_iter=0, steps=300, eval_episodes=0).fit(ppo, ppo.env_fn)
    assert dagger.weighting_ == "none"
    np.testing.assert_array_equal(dagger.sample_weight_, np.ones(300))


@pytest.mark.usefixtures("single_torch_thread")
def test_sac_critic_weights_favour_states_where_the_action_matters(teachers):
    sac = teachers["sac_swimmer"]
    roll = rollout_mixture(sac, None, sac.env_fn, 300, beta=1.0, seed=0, rng=np.random.default_rng(0))
    w = critic_weights(sac, roll.observations, roll.teacher_actions, n_action_samples=8,
                       rng=np.random.default_rng(0))
    assert w.shape == (300,) and np.all(w >= 0) and w.mean() == pytest.approx(1.0)
    assert w.std() > 0.05  # not uniform
    # By construction: the teacher's action beats random actions on average under its own critic.
    q_star = sac.q_values(roll.observations, roll.teacher_actions)
    q_rand = sac.q_values(roll.observations, np.random.default_rng(1).uniform(-1, 1, size=(300, 2)))
    assert np.mean(q_star > q_rand) > 0.9
    dagger = DAgger(CART(max_leaves=4), n_iter=0, steps=300, eval_episodes=0).fit(sac, sac.env_fn)
    assert dagger.weighting_ == "critic" and dagger.sample_weight_.std() > 0.05


def test_leaf_tuning_improves_a_bad_tree_on_the_return():
    # Cart-pole with a bang-bang tree on the pole angle that pushes far too hard (falls in ~50 steps):
    # tuning the two leaf forces on the return alone should make it balance longer.
    cartpole = env_factory("InvertedPendulum-v5")
    X = np.c_[np.zeros((40, 1)), np.linspace(-1, 1, 40), np.zeros((40, 2))]
    rough = CART(max_depth=1, action_low=-3.0, action_high=3.0).fit(X, np.where(X[:, 1:2] > 0, 1.0, -1.0))
    tuner = LeafTuner(n_iter=20, n_directions=4, step_size=0.3, noise=0.2, eval_every=5, eval_episodes=2,
                      seed=0).fit(rough, cartpole, feature_scale=np.ones(4))
    assert tuner.best_return_ > tuner.initial_return_ + 30
    assert evaluate(tuner.student_, cartpole, 2, seed=50_000).mean_return == tuner.best_return_
    assert tuner.student_.tree_.n_leaves == 2  # structure kept
    np.testing.assert_array_equal(tuner.student_.tree_.threshold, rough.tree_.threshold)
    assert [h["iteration"] for h in tuner.history_] == [0, 5, 10, 15, 20]
    assert rough.tree_.intercept[1, 0] == -1.0  # the input tree is untouched


def test_dart_noise_perturbs_what_is_executed_never_the_labels():
    teacher = KnownQ()
    clean = DAgger(CART(max_leaves=4), n_iter=0, steps=400, eval_episodes=0, weighting="none").fit(teacher, PENDULUM)
    noisy = DAgger(CART(max_leaves=4), n_iter=0, steps=400, eval_episodes=0, weighting="none",
                   action_noise=0.5).fit(teacher, PENDULUM)
    # Same seeds, so the first states agree; the executed noise then moves the pendulum elsewhere.
    np.testing.assert_array_equal(clean.X_[0], noisy.X_[0])
    assert np.abs(clean.X_ - noisy.X_).max() > 0.1
    # Every label is the teacher's clean action on the visited state.
    np.testing.assert_array_equal(noisy.y_, teacher.predict(noisy.X_))
    # No noise, no change: the default run equals one with action_noise=0.0 spelt out.
    again = DAgger(CART(max_leaves=4), n_iter=0, steps=400, eval_episodes=0, weighting="none",
                   action_noise=0.0).fit(teacher, PENDULUM)
    np.testing.assert_array_equal(again.X_, clean.X_)
    with pytest.raises(InvalidParameterError, match=r"^The 'action_noise' parameter of DAgger must be a float in "
                                                    r"\[0\.0, 2\.0\]\. Got -0\.1 instead\.$"):
        DAgger(CART(), action_noise=-0.1).fit(teacher, PENDULUM)
