"""The tree student and tree editing: scikit-learn contract, known answers, pruning."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from distill.prune import collapse_similar, cost_complexity_path, prune, prune_to_leaves
from distill.tree import TreePolicy
from interp_rl.errors import InvalidParameterError


def CART(**params):  # noqa: N802 - reads like the estimator it builds
    """A TreePolicy with CART's defaults (constant leaves, CART splits, no leaf limit) unless overridden."""
    return TreePolicy(**{"leaf_model": "constant", "split_on": "constant", "max_leaves": None, **params})



@parametrize_with_checks([
    CART(),
    CART(max_depth=3, leaf_model="linear"),
    CART(max_leaves=8, leaf_model="linear", max_leaf_terms=2, split_on="residual"),
    CART(max_leaves=6, leaf_model="linear", split_on="linear"),
])
def test_sklearn_contract(estimator, check):
    check(estimator)


def test_depth_one_tree_finds_the_threshold():
    X = np.linspace(-2, 2, 401)[:, None]
    y = np.where(X[:, 0] <= -0.7, 0.5, -0.25)[:, None]
    tree = CART(max_depth=1).fit(X, y)
    assert tree.tree_.n_leaves == 2
    assert tree.tree_.feature[0] == 0
    assert -0.71 < tree.tree_.threshold[0] < -0.69
    np.testing.assert_allclose(tree.predict(np.array([[-1.0], [0.0]])), [[0.5], [-0.25]])


def test_picks_the_feature_that_matters_and_obeys_the_limits():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = np.c_[np.sign(X[:, 3]), np.sin(X[:, 1])]
    tree = CART(max_leaves=6, random_state=0).fit(X, y)
    assert tree.tree_.feature[0] == 3
    assert tree.get_n_leaves() == 6
    assert CART(max_depth=2).fit(X, y).get_depth() == 2


def test_constant_tree_equals_scikit_learn():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 4))
    y = np.c_[X[:, 0] ** 2, np.abs(X[:, 1])]
    w = rng.uniform(0.1, 2.0, size=500)
    ours = CART(max_leaves=12, random_state=0).fit(X, y, sample_weight=w)
    ref = DecisionTreeRegressor(max_leaf_nodes=12, random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X))


def test_linear_leaves_recover_a_piecewise_linear_policy():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(3000, 6))
    y = np.where(X[:, 0] <= 0.2, 0.5 * X[:, 2] - 1.0, -0.3 * X[:, 4] + 1.0)[:, None]
    tree = CART(max_depth=1, leaf_model="linear", max_leaf_terms=1, leaf_alpha=0.0).fit(X, y)
    left, right = tree.tree_.left[0], tree.tree_.right[0]
    assert tree.tree_.leaf_terms(left, 0) == [(2, pytest.approx(0.5))]
    assert tree.tree_.leaf_terms(right, 0) == [(4, pytest.approx(-0.3))]
    assert tree.tree_.intercept[left, 0] == pytest.approx(-1.0)
    assert tree.score(X, y) > 0.999


def test_linear_splits_see_through_a_global_slope():
    # y = 3 x1 + [x0 > 0.3]: constant-fit splits chase the slope in x1; residual splits find the step.
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(4000, 2))
    y = (3 * X[:, 1] + (X[:, 0] > 0.3))[:, None]
    plain = CART(max_depth=1, leaf_model="linear").fit(X, y)
    split = CART(max_depth=1, leaf_model="linear", split_on="residual").fit(X, y)
    assert plain.tree_.feature[0] == 1
    assert split.tree_.feature[0] == 0 and abs(split.tree_.threshold[0] - 0.3) < 0.01
    assert split.score(X, y) > plain.score(X, y)


def test_actions_are_clipped_to_the_bounds():
    X = np.linspace(-1, 1, 50)[:, None]
    y = 3 * X
    tree = CART(max_depth=2, leaf_model="linear", leaf_alpha=0.0, action_low=-1.0,
                      action_high=1.0).fit(X, y)
    pred = tree.predict(np.array([[-1.0], [1.0], [0.1]]))
    np.testing.assert_allclose(pred, [[-1.0], [1.0], [0.3]], atol=1e-6)


def test_sample_weights_steer_the_fit():
    X = np.r_[np.zeros(10), np.ones(10)][:, None]
    y = np.r_[np.zeros(10), np.ones(10)][:, None]
    w = np.r_[np.full(10, 9.0), np.ones(10)]
    stump = CART(max_leaves=2).fit(X, y, sample_weight=w)
    mean = CART(max_depth=1, min_samples_leaf=11).fit(X, y, sample_weight=w)  # no split allowed
    assert stump.tree_.n_leaves == 2
    assert mean.predict(np.zeros((1, 1)))[0, 0] == pytest.approx(0.1)


@pytest.mark.parametrize("params, message", [
    ({"max_depth": 0}, "The 'max_depth' parameter of TreePolicy must be an int in [1, 32]. Got 0 instead."),
    ({"max_leaves": 1}, "The 'max_leaves' parameter of TreePolicy must be an int in [2, inf). Got 1 instead."),
    ({"leaf_model": "cubic"},
     "The 'leaf_model' parameter of TreePolicy must be one of 'constant', 'linear'. Got 'cubic' instead."),
    ({"max_leaf_terms": -2},
     "The 'max_leaf_terms' parameter of TreePolicy must be an int in [1, inf). Got -2 instead."),
])
def test_bad_parameters_name_themselves(params, message):
    with pytest.raises(InvalidParameterError) as exc:
        CART(**params).fit(np.zeros((4, 2)), np.zeros((4, 1)))
    assert str(exc.value) == message


def test_clone_keeps_params_and_does_not_share_state():
    tree = CART(max_leaves=4, leaf_model="linear").fit(np.random.rand(50, 3), np.random.rand(50, 2))
    twin = clone(tree)
    assert twin.get_params() == tree.get_params()
    assert not hasattr(twin, "tree_")


# ---------------------------------------------------------------- editing
@pytest.fixture(scope="module")
def wiggly():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(800, 3))
    y = np.c_[np.sin(2 * X[:, 0]) + 0.3 * X[:, 1], np.tanh(X[:, 2])]
    return X, y, CART(max_depth=6, random_state=0).fit(X, y)


def test_cost_complexity_path_matches_scikit_learn(wiggly):
    X, y, tree = wiggly
    alphas, counts = cost_complexity_path(tree)
    ref = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y).cost_complexity_pruning_path(X, y)
    np.testing.assert_allclose(alphas, ref.ccp_alphas, rtol=1e-6, atol=1e-12)
    assert counts[0] == tree.tree_.n_leaves and counts[-1] == 1
    assert np.all(np.diff(counts) < 0)


def test_prune_matches_scikit_learn_ccp(wiggly):
    X, y, tree = wiggly
    alpha = 0.003
    ours = prune(tree, alpha)
    ref = DecisionTreeRegressor(max_depth=6, random_state=0, ccp_alpha=alpha).fit(X, y)
    assert ours.tree_.n_leaves == ref.get_n_leaves()
    np.testing.assert_allclose(ours.predict(X), ref.predict(X))
    assert tree.tree_.n_leaves > ours.tree_.n_leaves  # the original is untouched


def test_prune_to_leaves_hits_the_budget_and_keeps_the_best_splits(wiggly):
    X, y, tree = wiggly
    small = prune_to_leaves(tree, 5)
    assert small.tree_.n_leaves <= 5
    assert small.tree_.feature[0] == tree.tree_.feature[0]
    assert small.score(X, y) > prune_to_leaves(tree, 2).score(X, y)


def test_pruning_refits_linear_leaves_when_given_data():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(1000, 2))
    y = (2 * X[:, 0] + np.where(X[:, 1] > 0, 3.0, 0.0))[:, None]
    tree = CART(max_depth=4, leaf_model="linear").fit(X, y)
    bare = prune_to_leaves(tree, 2)
    refit = prune_to_leaves(tree, 2, X=X, y=y)
    assert refit.tree_.n_terms > 0 and bare.tree_.n_terms == 0
    assert refit.score(X, y) > 0.99 > bare.score(X, y)


def test_collapse_merges_children_that_act_alike():
    X = np.linspace(0, 4, 400)[:, None]
    y = np.floor(X)  # 0, 1, 2, 3 on four intervals
    y[X[:, 0] >= 2] = 2.0 + 0.001 * (X[X[:, 0] >= 2] >= 3)
    tree = CART(max_depth=2).fit(X, y)
    assert tree.tree_.n_leaves == 4
    merged = collapse_similar(tree, 0.01)
    assert merged.tree_.n_leaves == 3
    assert merged.predict(np.array([[3.5]]))[0, 0] == pytest.approx(2.0005, abs=1e-4)
    assert collapse_similar(tree, 0.0).tree_.n_leaves == 4


def test_editing_rejects_bad_sizes(wiggly):
    _, _, tree = wiggly
    with pytest.raises(InvalidParameterError, match=r"'max_leaves' parameter of prune_to_leaves .* Got 0"):
        prune_to_leaves(tree, 0)
    with pytest.raises(InvalidParameterError, match=r"'ccp_alpha' parameter of prune .* Got -1"):
        prune(tree, -1)


def test_model_tree_splits_find_a_kink_that_constant_splits_miss():
    # y = |x0| + 3 x1: CART splits on the slope in x1; judged with linear children, the best split is x0 = 0.
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(4000, 3))
    y = (np.abs(X[:, 0]) + 3 * X[:, 1])[:, None]
    cart = CART(max_depth=1, leaf_model="linear").fit(X, y)
    model = CART(max_depth=1, leaf_model="linear", split_on="linear").fit(X, y)
    assert cart.tree_.feature[0] == 1
    assert model.tree_.feature[0] == 0 and abs(model.tree_.threshold[0]) < 0.01
    assert model.score(X, y) > 0.9999 > cart.score(X, y)
    deeper = CART(max_leaves=5, leaf_model="linear", split_on="linear", random_state=0).fit(X, y)
    assert deeper.tree_.n_leaves <= 5


def test_split_on_needs_linear_leaves():
    with pytest.raises(InvalidParameterError, match=r"The 'split_on' parameter of TreePolicy must be 'auto' or 'constant' with constant leaves \(it chooses splits for linear leaves\). Got 'linear' instead."):
        CART(split_on="linear").fit(np.zeros((4, 2)), np.zeros((4, 1)))


def test_predict_on_a_rollouts_array_skips_the_checks_not_their_errors() -> None:
    """A float64 array of the right width (what a rollout passes at every step) is predicted without scikit-learn's
    checks, to the same numbers as any other input; a NaN, a wrong width or an unfitted student still fail there."""
    from sklearn.exceptions import NotFittedError

    from distill.tree import TreePolicy

    X = np.random.default_rng(0).normal(size=(300, 3)).astype(np.float32).astype(np.float64)  # float32 exact
    tree = TreePolicy(max_leaves=4).fit(X, np.c_[X[:, 0] > 0, X[:, 1]])
    fast = tree.predict(X[:5])
    np.testing.assert_array_equal(fast, tree.predict(X[:5].tolist()))  # a list goes through the checks
    np.testing.assert_array_equal(fast, tree.predict(X[:5].astype(np.float32)))  # float32: checked, then float64
    np.testing.assert_array_equal(fast, tree.tree_.predict(X[:5]))
    bad = X[:2].copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        tree.predict(bad)
    with pytest.raises(ValueError, match="3 features"):
        tree.predict(X[:2, :2])
    with pytest.raises(NotFittedError):
        TreePolicy().predict(X[:2])
