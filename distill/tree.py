"""A multi-output regression tree policy with constant or sparse-linear leaves."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.validation import check_is_fitted, validate_data

from distill._leaves import fit_leaf_models, restate
from distill._student import PolicyStudent, check_bounds
from distill.prune import prune
from interp_rl.errors import bad_value
from interp_rl.kinds.tree import TreeProgram
from interp_rl.validation import check_choice, check_float, check_int

__all__ = ["TreePolicy", "program_from_sklearn"]


def program_from_sklearn(
    tree: DecisionTreeRegressor, action_low: np.ndarray, action_high: np.ndarray
) -> TreeProgram:
    """Convert a fitted scikit-learn regression tree into a :class:`TreeProgram` (constant leaves)."""
    t = tree.tree_
    n_out = int(t.n_outputs)
    leaf = t.children_left < 0
    feature = np.where(leaf, -1, t.feature).astype(np.int64)
    threshold = np.where(leaf, 0.0, t.threshold)
    intercept = np.asarray(t.value[:, :, 0], dtype=np.float64).reshape(t.node_count, n_out)
    weights = np.asarray(t.weighted_n_node_samples, dtype=np.float64)
    # scikit-learn's impurity is the weighted MSE averaged over outputs.
    risk = np.asarray(t.impurity, dtype=np.float64) * weights * n_out
    return TreeProgram(
        feature=feature, threshold=threshold, left=t.children_left, right=t.children_right,
        intercept=intercept, coef=np.zeros((t.node_count, n_out, t.n_features)),
        n_samples=weights, risk=risk, action_low=action_low, action_high=action_high,
    )


class TreePolicy(PolicyStudent):
    """A small multi-output regression tree mapping raw observations to actions.

    The structure is grown by CART (scikit-learn's ``DecisionTreeRegressor``)
    under limits on depth and leaves; each leaf then predicts a constant action
    or, with ``leaf_model="linear"``, a sparse linear function of the
    observation. Predictions are clipped to the action bounds.

    Parameters
    ----------
    max_depth : int, default=None
        Depth limit, in [1, 32]; ``None`` for no limit.
    max_leaves : int, default=64
        Leaf limit, >= 2, grown best-first; ``None`` for no limit.
    leaf_model : {"constant", "linear"}, default="linear"
        What each leaf predicts.
    max_leaf_terms : int, default=None
        With linear leaves, at most this many observation features per action
        in each leaf (``None``: all).
    leaf_alpha : float, default=1e-3
        Ridge penalty of the leaf models on standardised features.
    split_on : {"auto", "constant", "residual", "linear"}, default="auto"
        How splits are chosen. ``"constant"``: CART, for constant children.
        With linear leaves, ``"residual"`` runs CART on what one global
        linear model leaves unexplained, and ``"linear"`` grows a model tree
        whose splits are judged by the fit of linear children (M5-style).
        ``"auto"``: ``"linear"`` for linear leaves, ``"constant"`` otherwise.
        The defaults (64 linear leaves, model-tree splits) are the best recipe measured on the
        shared teachers (``benchmarks/results/mujoco``).
    min_samples_leaf : int, default=1
        Minimum samples in a leaf.
    ccp_alpha : float, default=0.0
        Cost-complexity pruning strength (as in scikit-learn).
    action_low, action_high : array-like, default=None
        Bounds the actions are clipped to (``None``: no clipping).
    random_state : int, default=None
        Seed of the tie-breaking between equally good splits.

    Attributes
    ----------
    tree_ : TreeProgram
        The fitted tree; runs, draws and exports the controller.
    n_features_in_ : int
        Observation size seen in ``fit``.
    n_outputs_ : int
        Number of action components.

    Examples
    --------
    A depth-1 tree finds the threshold of a bang-bang controller:

    >>> import numpy as np
    >>> X = np.linspace(-1, 1, 201)[:, None]
    >>> y = np.where(X[:, 0] <= 0.3, -1.0, 1.0)[:, None]
    >>> tree = TreePolicy(max_depth=1, leaf_model="constant").fit(X, y)
    >>> round(float(tree.tree_.threshold[0]), 2), tree.tree_.n_leaves
    (0.3, 2)
    >>> tree.predict(np.array([[0.0], [0.5]]))
    array([[-1.],
           [ 1.]])
    """

    _program_attr = "tree_"
    program_kind = "tree"

    def __init__(
        self,
        *,
        max_depth: int | None = None,
        max_leaves: int | None = 64,
        leaf_model: str = "linear",
        max_leaf_terms: int | None = None,
        leaf_alpha: float = 1e-3,
        split_on: str = "auto",
        min_samples_leaf: int = 1,
        ccp_alpha: float = 0.0,
        action_low: Any = None,
        action_high: Any = None,
        random_state: int | None = None,
    ) -> None:
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.leaf_model = leaf_model
        self.max_leaf_terms = max_leaf_terms
        self.leaf_alpha = leaf_alpha
        self.split_on = split_on
        self.min_samples_leaf = min_samples_leaf
        self.ccp_alpha = ccp_alpha
        self.action_low = action_low
        self.action_high = action_high
        self.random_state = random_state

    def _validate_params(self) -> None:
        """Check every setting; a bad one raises the one-line template error."""
        owner = type(self).__name__
        if self.max_depth is not None:
            check_int(self.max_depth, "max_depth", owner, low=1, high=32)
        if self.max_leaves is not None:
            check_int(self.max_leaves, "max_leaves", owner, low=2)
        check_choice(self.leaf_model, "leaf_model", owner, ["constant", "linear"])
        check_choice(self.split_on, "split_on", owner, ["auto", "constant", "residual", "linear"])
        if self.split_on not in ("auto", "constant") and self.leaf_model != "linear":
            raise bad_value("split_on", owner, "'auto' or 'constant' with constant leaves (it chooses splits for "
                            "linear leaves)", self.split_on)
        if self.max_leaf_terms is not None:
            check_int(self.max_leaf_terms, "max_leaf_terms", owner, low=1)
        check_float(self.leaf_alpha, "leaf_alpha", owner)
        check_int(self.min_samples_leaf, "min_samples_leaf", owner, low=1)
        check_float(self.ccp_alpha, "ccp_alpha", owner)

    @property
    def split_on_(self) -> str:
        """The split criterion used: ``split_on`` with ``"auto"`` decided."""
        if self.split_on != "auto":
            return str(self.split_on)
        return "linear" if self.leaf_model == "linear" else "constant"

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> TreePolicy:
        """Fit the tree to observations ``X`` ``(n, obs_dim)`` and actions ``y`` ``(n, act_dim)``."""
        self._validate_params()
        X, Y, w = self._fit_inputs(X, y, sample_weight)
        linear = self.leaf_model == "linear"
        target = Y
        if self.split_on_ == "linear":
            self.tree_ = self._fit_model_tree(X, Y, w)
            return self
        if self.split_on_ == "residual":
            none = np.array([-1])
            root = TreeProgram(feature=none, threshold=np.zeros(1), left=none, right=none,
                               intercept=np.zeros((1, Y.shape[1])),
                               coef=np.zeros((1, Y.shape[1], X.shape[1])))
            glob = fit_leaf_models(root, X, Y, w, alpha=self.leaf_alpha, max_terms=self.max_leaf_terms)
            target = Y - glob.leaf_actions(X, np.zeros(len(X), dtype=np.int64))
        cart = DecisionTreeRegressor(
            max_depth=self.max_depth, max_leaf_nodes=self.max_leaves, min_samples_leaf=self.min_samples_leaf,
            ccp_alpha=self.ccp_alpha, random_state=self.random_state,
        )
        cart.fit(X, target, sample_weight=w)
        low, high = check_bounds(self.action_low, self.action_high, Y.shape[1], type(self).__name__)
        program = program_from_sklearn(cart, low, high)
        if target is not Y:  # node means and risks of the actions themselves
            program = restate(program, X, Y, w)
        if linear:
            program = fit_leaf_models(program, X, Y, w, alpha=self.leaf_alpha, max_terms=self.max_leaf_terms,
                                      min_samples=max(4, self.min_samples_leaf))
        self.tree_ = program
        return self

    def _fit_model_tree(self, X: np.ndarray, Y: np.ndarray, w: np.ndarray) -> TreeProgram:
        from distill._model_tree import grow_model_tree

        nodes = grow_model_tree(X, Y, w, max_leaves=self.max_leaves, max_depth=self.max_depth,
                                min_samples_leaf=self.min_samples_leaf, alpha=self.leaf_alpha,
                                random_state=self.random_state)
        low, high = check_bounds(self.action_low, self.action_high, Y.shape[1], type(self).__name__)
        n = len(nodes["feature"])
        program = TreeProgram(coef=np.zeros((n, Y.shape[1], X.shape[1])), action_low=low, action_high=high,
                              **nodes)
        if self.ccp_alpha > 0:
            program = prune(program, self.ccp_alpha)
        return fit_leaf_models(program, X, Y, w, alpha=self.leaf_alpha, max_terms=self.max_leaf_terms,
                               min_samples=max(4, self.min_samples_leaf))

    def apply(self, X: Any) -> np.ndarray:
        """Leaf node id of each observation."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.tree_.apply(X)

    def get_n_leaves(self) -> int:
        check_is_fitted(self)
        return self.tree_.n_leaves

    def get_depth(self) -> int:
        check_is_fitted(self)
        return self.tree_.depth

