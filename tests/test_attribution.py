"""Shapley attribution: exact rules of every program kind against brute force and shap, the sampling
estimators against exact values on a real teacher, efficiency everywhere, and one-line errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from interp_rl.attribution import Attribution, Background, agreement, explain, summarize_background
from interp_rl.errors import InvalidParameterError, ObservationError
from interp_rl.kinds.equations import EquationsProgram
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.mixture import MixtureProgram, router_tree
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import Controller, Signal


def brute_force(f, x, B, w):
    """Shapley values of v(S) = sum_k w_k f(x_S, b_k) by the definition (every ordering's weight)."""
    d = len(x)

    def v(S):
        Z = B.copy()
        Z[:, list(S)] = x[list(S)]
        return w @ f(Z)

    phi = np.zeros((d, f(x[None]).shape[1]))
    for i in range(d):
        others = [j for j in range(d) if j != i]
        for s in range(d):
            wt = math.factorial(s) * math.factorial(d - s - 1) / math.factorial(d)
            for S in itertools.combinations(others, s):
                phi[i] += wt * (v(S + (i,)) - v(S))
    return phi, v(())


def affine_tree(rng, d=5, k=2, linear=True):
    """Depth 3, a feature split twice on one path (feature 0), affine or constant leaves."""
    feature = [0, 1, 0, -1, -1, 3, -1, -1, -1]
    threshold = [0.0, 0.3, 0.5, 0, 0, -0.2, 0, 0, 0]
    left = [1, 3, 5, -1, -1, 7, -1, -1, -1]
    right = [2, 4, 6, -1, -1, 8, -1, -1, -1]
    n = len(feature)
    leaf = (np.array(left) < 0)[:, None]
    coef = rng.normal(size=(n, k, d)) * leaf[:, :, None] if linear else np.zeros((n, k, d))
    return TreeProgram(feature=feature, threshold=threshold, left=left, right=right,
                       intercept=rng.normal(size=(n, k)), coef=coef)


def equations(d=5):
    return EquationsProgram(
        terms=[[("pow", 0, 1)], [("pow", 1, 2), ("pow", 2, 1)], [("sin", 3, 2.0)], [("tanh", 4, 1.0), ("pow", 0, 1)],
               [("pow", 2, 1), ("cos", 2, 1.0)],
               # three and four features in one product: Shapley's weights differ from uniform ones only there
               [("pow", 0, 1), ("pow", 1, 1), ("pow", 3, 1)],
               [("pow", 1, 1), ("sin", 2, 1.0), ("pow", 3, 2), ("tanh", 4, 1.0)]],
        intercept=[0.3, -0.1], coef=[[1.0, -0.5, 0.0, 2.0, 0.7, 1.3, 0.0], [0.0, 0.25, 1.5, -1.0, 0.0, -0.4, 2.2]],
        obs_dim_=d)


def mixture(rng, d=5, k=2):
    router = router_tree(feature=[2, -1, 1, -1, -1], threshold=[0.1, 0, -0.3, 0, 0], left=[1, -1, 3, -1, -1],
                         right=[2, -1, 4, -1, -1], expert=[0, 2, 0, 1, 0], obs_dim=d)
    return MixtureProgram(expert_intercept=rng.normal(size=(3, k)), expert_coef=rng.normal(size=(3, k, d)),
                          tree=router)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 5))
    B = rng.normal(size=(6, 5))
    B[3] = B[2]  # equal rows are merged by pattern; the weights must still add up
    w = rng.random(6)
    return rng, X, B, w / w.sum()


@pytest.mark.parametrize("kind", ["tree-affine", "tree-constant", "linear", "mixture", "equations"])
def test_exact_rules_match_the_definition(kind, data):
    rng, X, B, w = data
    program = {"tree-affine": lambda: affine_tree(rng), "tree-constant": lambda: affine_tree(rng, linear=False),
               "linear": lambda: LinearProgram(intercept=[0.5, -1.0], coef=rng.normal(size=(2, 5))),
               "mixture": lambda: mixture(rng), "equations": equations}[kind]()
    a = explain(program, X, Background(B, w))
    assert a.exact and a.output == "raw" and a.method == f"{program.kind}-exact"
    for i, x in enumerate(X):
        phi, base = brute_force(program.raw_predict, x, B, w)
        np.testing.assert_allclose(a.values[i], phi, atol=1e-12)
        np.testing.assert_allclose(a.base, base, atol=1e-12)
    # efficiency: base + sum = the program's (unclipped) output, per action
    np.testing.assert_allclose(a.base + a.values.sum(axis=1), program.raw_predict(X), atol=1e-12)


def test_constant_leaf_tree_matches_shap_tree_explainer():
    """Our interventional TreeSHAP on a fitted scikit-learn tree equals shap's TreeExplainer."""
    shap = pytest.importorskip("shap")
    from sklearn.tree import DecisionTreeRegressor

    from distill.tree import program_from_sklearn

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 6))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * (X[:, 2] > 0) + 0.3 * X[:, 3]
    cart = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y)
    program = program_from_sklearn(cart, np.array([-np.inf]), np.array([np.inf]))
    bg, states = X[:50], X[100:130]
    ours = explain(program, states, bg)
    theirs = shap.TreeExplainer(cart, data=bg, feature_perturbation="interventional").shap_values(states)
    np.testing.assert_allclose(ours.values[:, :, 0], theirs, atol=1e-6)  # shap computes in float32


def test_mixture_with_a_linear_router_is_estimated(data):
    rng, X, B, w = data
    p = MixtureProgram(expert_intercept=rng.normal(size=(2, 1)), expert_coef=rng.normal(size=(2, 1, 5)),
                       router_intercept=[0.0, 0.1], router_coef=rng.normal(size=(2, 5)))
    assert not p.exact_shapley
    a = explain(p, X, Background(B, w))
    assert a.method == "exact" and a.exact  # 5 features: the default budget covers every coalition
    with pytest.raises(InvalidParameterError, match="no exact Shapley rule|has none"):
        explain(p, X, B, method="program")


def test_controller_names_and_clipped_output(data):
    rng, X, B, w = data
    program = LinearProgram(intercept=[0.0], coef=[[5.0, 0, 0, 0, 0]], action_low=[-1.0], action_high=[1.0])
    ctrl = Controller(program, features=[Signal(f"f{i}") for i in range(5)], actions=[Signal("torque")])
    raw = explain(ctrl, X, B)
    assert raw.features == ["f0", "f1", "f2", "f3", "f4"] and raw.actions == ["torque"]
    np.testing.assert_allclose(raw.prediction, program.raw_predict(X))
    clipped = explain(ctrl, X, B, method="exact")  # the shipped, clipped action
    np.testing.assert_allclose(clipped.prediction, ctrl.predict(X))
    np.testing.assert_allclose(clipped.base + clipped.values.sum(axis=1), ctrl.predict(X), atol=1e-12)
    assert raw.ranking(0)[0] == "f0"


@pytest.mark.parametrize("method", ["exact", "kernel", "permutation"])
def test_sampling_estimators_on_a_teacher(method, teachers):
    """On the Swimmer SAC teacher (8 features): efficiency holds exactly, the same seed gives the same values,
    and the estimates are close to the exact values."""
    t = teachers["sac_swimmer"]
    rng = np.random.default_rng(0)
    states = rng.normal(scale=0.5, size=(12, t.obs_dim))
    bg = summarize_background(rng.normal(scale=0.5, size=(200, t.obs_dim)), 4, seed=0)
    a = explain(t, states, bg, method=method, budget=600, seed=3)
    np.testing.assert_allclose(a.base + a.values.sum(axis=1), t.predict(states), atol=1e-9)
    assert a.values.shape == (12, t.obs_dim, t.act_dim)
    b = explain(t, states, bg, method=method, budget=600, seed=3)
    np.testing.assert_array_equal(a.values, b.values)
    exact = explain(t, states, bg, method="exact")
    err = np.abs(a.values - exact.values).mean() / np.abs(exact.values).mean()
    assert err < (1e-9 if method == "exact" else 0.25)


def test_full_budget_gives_exact_values(data):
    rng, X, B, w = data
    f = equations()
    exact = explain(f, X, Background(B, w), method="exact")
    for method in ("kernel", "permutation"):
        a = explain(f, X, Background(B, w), method=method, budget=32 * 6)
        assert a.method == "exact"
        np.testing.assert_allclose(a.values, exact.values)
    k = explain(f, X, Background(B, w), method="kernel", budget=20 * 6, seed=0)
    assert k.method == "kernel" and k.efficiency_gap() < 1e-9


def test_bad_input_gets_one_line_errors(data):
    rng, X, B, w = data
    p = LinearProgram(intercept=[0.0], coef=[[1.0, 2, 3, 4, 5]])
    with pytest.raises(InvalidParameterError, match=r"^explain needs a background: .*got None\.$"):
        explain(p, X, None)
    with pytest.raises(ObservationError, match=r"^The states have shape \(5, 3\), but the policy reads 5 features"):
        explain(p, X[:, :3], B)
    with pytest.raises(ObservationError, match=r"^The background has shape \(6, 4\), but explain explains 5"):
        explain(p, X, B[:, :4])
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ObservationError, match=r"non-finite value \(nan\) at feature 'obs_1' \(row 2\)"):
        explain(p, bad, B, features=[f"obs_{i}" for i in range(5)])
    with pytest.raises(InvalidParameterError, match=r"The 'method' parameter of explain must be one of"):
        explain(p, X, B, method="magic")
    with pytest.raises(InvalidParameterError, match="has no rows"):
        explain(p, X, np.zeros((0, 5)))
    with pytest.raises(InvalidParameterError, match="refused above 16 features"):
        explain(LinearProgram(intercept=[0.0], coef=np.ones((1, 17))), np.zeros((1, 17)), np.zeros((1, 17)),
                method="exact")


def test_agreement_and_round_trip(tmp_path, data):
    rng, X, B, w = data
    X = rng.normal(size=(40, 5))
    a = explain(LinearProgram(intercept=[0.0, 0.0], coef=[[5, 4, 3, 2, 1], [1, 0, 0, 0, 0.0]]), X, B)
    b = explain(LinearProgram(intercept=[0.0, 0.0], coef=[[5, 4, 3, 2, 1], [0, 0, 0, 0, 0.0]]), X, B)
    c = explain(LinearProgram(intercept=[0.0, 0.0], coef=[[1, 2, 3, 4, 5], [1, 0, 0, 0, 0.0]]), X, B)
    same = agreement(a, b, top_k=2)
    assert same["spearman"]["action_0"] == pytest.approx(1.0) and same["spearman"]["action_1"] is None
    assert same["top_k_overlap"]["action_0"] == 1.0
    flipped = agreement(a, c, top_k=2)
    assert flipped["spearman"]["action_0"] == pytest.approx(-1.0) and flipped["top_k_overlap"]["action_0"] == 0.0
    path = a.save(tmp_path / "attr.json")
    back = Attribution.load(path)
    np.testing.assert_array_equal(back.values, a.values)
    assert back.method == a.method and back.features == a.features
    assert a.efficiency_gap() < 1e-12
    back.values[3, 1, 0] += 0.25  # values that no longer add up to the prediction: the gap says by how much
    assert back.efficiency_gap() == pytest.approx(0.25)


def test_teacher_and_controller_agreement_on_a_task_of_two_features() -> None:
    """MountainCar observes two features: the top-3 overlap compares both (every benchmark cell there failed)."""
    from interp_rl.attribution import attribution_agreement

    X = np.random.default_rng(0).normal(size=(300, 2))
    teacher = LinearProgram(intercept=[0.0], coef=[[2.0, 0.5]])
    controller = LinearProgram(intercept=[0.0], coef=[[1.5, 0.0]])
    out = attribution_agreement(teacher, controller, X, n_states=50, budget=64)
    assert out["top_k"] == 2 and out["top_k_overlap"]["action_0"] == 1.0


def test_summarize_background_is_seeded():
    X = np.random.default_rng(0).normal(size=(300, 4))
    a, b = summarize_background(X, 8, seed=1), summarize_background(X, 8, seed=1)
    np.testing.assert_array_equal(a.data, b.data)
    assert a.data.shape == (8, 4) and a.weights.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("kind", ["tree", "linear", "mixture", "equations"])
def test_widened_programs_read_their_columns_of_a_wider_observation(kind, data):
    rng, X, B, w = data
    program = {"tree": lambda: affine_tree(rng), "linear": lambda: LinearProgram(intercept=[0.5, -1.0],
                                                                                 coef=rng.normal(size=(2, 5))),
               "mixture": lambda: mixture(rng), "equations": equations}[kind]()
    cols = [0, 2, 3, 6, 7]  # increasing: the kinds add terms in feature order, kept bit for bit
    wide = program.widened(cols, 8)
    Xw = rng.normal(size=(len(X), 8))
    Xw[:, cols] = X
    np.testing.assert_array_equal(wide.predict(Xw), program.predict(X))
    assert wide.obs_dim == 8
    phi = explain(wide, Xw, Xw[:3]).values
    assert np.all(phi[:, [1, 4, 5], :] == 0)  # the columns it does not read get nothing
    with pytest.raises(ValueError, match="distinct indices"):
        program.widened([0, 0, 1, 2, 3], 8)


def test_feature_subset_distils_from_the_teachers_top_features(teachers):
    """Rank the Swimmer teacher's features by Shapley importance, distil a tree on the top 3 only: the
    controller reads the full observation but splits and weighs only those 3."""
    from distill import DAgger, FeatureSubset, TreePolicy
    from interp_rl.attribution import feature_ranking
    from interp_rl.rollouts import collect

    t = teachers["sac_swimmer"]
    visited = collect(t, t.env_fn, 400, seed=0).observations
    top = feature_ranking(explain(t, visited[::4], summarize_background(visited, 4), method="kernel", budget=256))[:3]
    student = FeatureSubset(student=TreePolicy(max_leaves=4), columns=top)
    dagger = DAgger(student, n_iter=0, steps=500, seed=0, eval_episodes=1).fit(t, t.env_fn)
    prog = dagger.student_.program_
    used = set(prog.feature[prog.feature >= 0].tolist()) | set(np.flatnonzero(np.any(prog.coef != 0, axis=(0, 1))))
    assert used and used <= set(top)
    # DAgger fills the wrapped student's seed and bounds: the same seed gives the same controller, clipped
    again = DAgger(student, n_iter=0, steps=500, seed=0, eval_episodes=1).fit(t, t.env_fn).student_.program_
    np.testing.assert_array_equal(again.intercept, prog.intercept)
    np.testing.assert_array_equal(prog.action_high, t.action_high)
    ctrl = dagger.student_.to_controller(t.feature_names)
    assert ctrl.predict(visited[:5]).shape == (5, 2)
    with pytest.raises(InvalidParameterError, match="The 'columns' parameter of FeatureSubset"):
        FeatureSubset(student=TreePolicy(), columns=[9]).fit(visited, np.zeros((len(visited), 2)))


def test_pictures_carry_the_action_unit_and_say_how_they_were_computed_in_plain_words(tmp_path, data):
    """A new user saw 'kernel estimate, 14848 predict rows per state' and an unexplained [x150 N m]."""
    import matplotlib

    from interp_rl.viz import attribution_bar, attribution_beeswarm

    rng, X, B, w = data
    prog = LinearProgram(intercept=[0.0, 0.0], coef=[[5, 4, 3, 2, 1], [1, 0, 0, 0, 0.0]])
    attr = explain(prog, rng.normal(size=(30, 5)), B, method="kernel", budget=64, seed=0,
                   actions=["thigh_torque", "foot_torque"])
    attr.units = ["x150 N m", "x150 N m"]
    back = Attribution.load(attr.save(tmp_path / "a.json"))
    assert back.units == ["x150 N m", "x150 N m"]
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text in the SVG
        bar = attribution_bar(attr, tmp_path / "bar.svg").read_text()
        swarm = attribution_beeswarm(attr, tmp_path / "swarm.svg").read_text()
    for svg in (bar, swarm):
        assert "estimated by sampling (Kernel SHAP)" in svg and "predict rows" not in svg
        assert "[x150 N m]: an action of 1 is 150 N m (the motor multiplies it by its gear)." in svg
    assert "mean |Shapley value| [x150 N m]" in bar
    assert "Shapley value [x150 N m]: the feature's push on thigh_torque" in swarm
