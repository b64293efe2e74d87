"""A multi-output regression tree policy with constant or sparse-linear leaves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.validation import check_is_fitted, validate_data

from interp_rl._validation import check_choice, check_float, check_int
from interp_rl.errors import InvalidParameterError
from interp_rl.program import Controller, Signal, TreeProgram

__all__ = ["TreePolicy", "fit_leaf_models", "program_from_sklearn"]


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


def _forward_select(G: np.ndarray, b: np.ndarray, ridge: np.ndarray, k: int) -> tuple[list[int], np.ndarray]:
    """Greedy forward selection of at most ``k`` columns for one output from Gram statistics."""
    chosen: list[int] = []
    coef = np.zeros(0)
    for _ in range(min(k, len(b))):
        best, best_gain, best_coef = -1, 0.0, coef
        for j in range(len(b)):
            if j in chosen:
                continue
            S = [*chosen, j]
            A = G[np.ix_(S, S)] + np.diag(ridge[S])
            try:
                c = np.linalg.solve(A, b[S])
            except np.linalg.LinAlgError:
                continue
            gain = float(c @ b[S])  # reduction of the (ridge-penalised) squared error
            if gain > best_gain + 1e-12:
                best, best_gain, best_coef = j, gain, c
        if best < 0:
            break
        chosen.append(best)
        coef = best_coef
    return chosen, coef


def fit_leaf_models(
    program: TreeProgram,
    X: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray,
    *,
    alpha: float = 1e-3,
    max_terms: int | None = None,
    min_samples: int = 4,
) -> TreeProgram:
    """Fit a (sparse) ridge-regularised linear model in every leaf of ``program``.

    Each leaf's output ``k`` becomes ``intercept + sum_j coef_j * x_j`` fitted by
    weighted least squares on the samples that reach the leaf, with a ridge
    penalty ``alpha`` on standardised features; ``max_terms`` keeps at most that
    many features per output (greedy forward selection). Leaves with fewer than
    ``min_samples`` (weighted) samples stay constant.

    Returns a new program; ``program`` is not modified.
    """
    coef = np.zeros_like(program.coef)
    intercept = program.intercept.copy()
    risk = program.risk.copy()
    leaf_of = program.apply(X)
    d = X.shape[1]
    k = d if max_terms is None else min(max_terms, d)
    for node in program.leaves:
        rows = np.flatnonzero(leaf_of == node)
        w = sample_weight[rows]
        sw = float(w.sum())
        if sw < min_samples or sw <= 0:
            continue
        Xl, yl = X[rows], y[rows]
        xbar = (w @ Xl) / sw
        ybar = (w @ yl) / sw
        Xc, yc = Xl - xbar, yl - ybar
        G = (Xc * w[:, None]).T @ Xc
        B = (Xc * w[:, None]).T @ yc
        var = np.diag(G) / sw
        # A ridge on standardised features; constant columns (var 0) are never chosen.
        ridge = alpha * sw * np.where(var > 1e-12, var, np.inf)
        ridge = np.where(np.isfinite(ridge), ridge, 1e300)
        for out in range(y.shape[1]):
            if k == d:
                S = [int(j) for j in np.flatnonzero(var > 1e-12)]
                c = np.linalg.solve(G[np.ix_(S, S)] + np.diag(ridge[S]), B[S, out]) if S else np.zeros(0)
            else:
                S, c = _forward_select(G, B[:, out], ridge, k)
            if not S:
                continue
            coef[node, out, S] = c
            intercept[node, out] = ybar[out] - float(xbar[S] @ c)
        pred = intercept[node] + Xl @ coef[node].T
        risk[node] = float(w @ ((yl - pred) ** 2).sum(axis=1))
    return TreeProgram(
        feature=program.feature, threshold=program.threshold, left=program.left, right=program.right,
        intercept=intercept, coef=coef, n_samples=program.n_samples, risk=risk,
        action_low=program.action_low, action_high=program.action_high,
    )


class TreePolicy(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """A small multi-output regression tree mapping raw observations to actions.

    The structure is grown by CART (scikit-learn's ``DecisionTreeRegressor``)
    under limits on depth and leaves; each leaf then predicts a constant action
    or, with ``leaf_model="linear"``, a sparse linear function of the
    observation. Predictions are clipped to the action bounds.

    Parameters
    ----------
    max_depth : int, default=None
        Depth limit, in [1, 32]; ``None`` for no limit.
    max_leaves : int, default=None
        Leaf limit, >= 2, grown best-first; ``None`` for no limit.
    leaf_model : {"constant", "linear"}, default="constant"
        What each leaf predicts.
    max_leaf_terms : int, default=None
        With linear leaves, at most this many observation features per action
        in each leaf (``None``: all).
    leaf_alpha : float, default=1e-3
        Ridge penalty of the leaf models on standardised features.
    split_on : {"constant", "residual", "linear"}, default="constant"
        How splits are chosen. ``"constant"``: CART, for constant children.
        With linear leaves, ``"residual"`` runs CART on what one global
        linear model leaves unexplained, and ``"linear"`` grows a model tree
        whose splits are judged by the fit of linear children (M5-style).
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
    >>> tree = TreePolicy(max_depth=1).fit(X, y)
    >>> round(float(tree.tree_.threshold[0]), 2), tree.tree_.n_leaves
    (0.3, 2)
    >>> tree.predict(np.array([[0.0], [0.5]]))
    array([[-1.],
           [ 1.]])
    """

    def __init__(
        self,
        *,
        max_depth: int | None = None,
        max_leaves: int | None = None,
        leaf_model: str = "constant",
        max_leaf_terms: int | None = None,
        leaf_alpha: float = 1e-3,
        split_on: str = "constant",
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

    def _check_params(self) -> None:
        owner = type(self).__name__
        if self.max_depth is not None:
            check_int(self.max_depth, "max_depth", owner, low=1, high=32)
        if self.max_leaves is not None:
            check_int(self.max_leaves, "max_leaves", owner, low=2)
        check_choice(self.leaf_model, "leaf_model", owner, ["constant", "linear"])
        check_choice(self.split_on, "split_on", owner, ["constant", "residual", "linear"])
        if self.split_on != "constant" and self.leaf_model != "linear":
            raise InvalidParameterError(
                f"split_on={self.split_on!r} chooses splits for linear leaves; set leaf_model='linear' "
                "or split_on='constant'."
            )
        if self.max_leaf_terms is not None:
            check_int(self.max_leaf_terms, "max_leaf_terms", owner, low=1)
        check_float(self.leaf_alpha, "leaf_alpha", owner)
        check_int(self.min_samples_leaf, "min_samples_leaf", owner, low=1)
        check_float(self.ccp_alpha, "ccp_alpha", owner)

    def _bounds(self, n_out: int) -> tuple[np.ndarray, np.ndarray]:
        def one(v: Any, fill: float, name: str) -> np.ndarray:
            if v is None:
                return np.full(n_out, fill)
            arr = np.broadcast_to(np.asarray(v, dtype=np.float64), (n_out,)).copy()
            return arr
        low = one(self.action_low, -np.inf, "action_low")
        high = one(self.action_high, np.inf, "action_high")
        if np.any(low > high):
            raise ValueError(f"action_low {low} exceeds action_high {high}.")
        return low, high

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> TreePolicy:
        """Fit the tree to observations ``X`` ``(n, obs_dim)`` and actions ``y`` ``(n, act_dim)``."""
        self._check_params()
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        self._y_1d = y.ndim == 1
        Y = y.reshape(len(y), -1).astype(np.float64)
        self.n_outputs_ = Y.shape[1]
        w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if w.shape != (len(X),) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"sample_weight must be {len(X)} finite non-negative values.")
        if not w.sum() > 0:
            raise ValueError("Sample weights must contain at least one non-zero number.")
        linear = self.leaf_model == "linear"
        target = Y
        if self.split_on == "linear":
            self.tree_ = self._fit_model_tree(X, Y, w)
            return self
        if self.split_on == "residual":
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
        low, high = self._bounds(Y.shape[1])
        program = program_from_sklearn(cart, low, high)
        if target is not Y:  # node means and risks of the actions themselves
            program = _restate(program, X, Y, w)
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
        low, high = self._bounds(Y.shape[1])
        n = len(nodes["feature"])
        program = TreeProgram(coef=np.zeros((n, Y.shape[1], X.shape[1])), action_low=low, action_high=high,
                              **nodes)
        if self.ccp_alpha > 0:
            from distill.prune import prune

            program = prune(program, self.ccp_alpha)
        return fit_leaf_models(program, X, Y, w, alpha=self.leaf_alpha, max_terms=self.max_leaf_terms,
                               min_samples=max(4, self.min_samples_leaf))

    def predict(self, X: Any) -> np.ndarray:
        """Actions ``(n, act_dim)`` for raw observations ``X`` ``(n, obs_dim)``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        out = self.tree_.predict(X)
        return out[:, 0] if self._y_1d else out

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

    def to_controller(
        self,
        features: Sequence[str | Signal] | None = None,
        actions: Sequence[str | Signal] | None = None,
        *,
        task: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> Controller:
        """The fitted tree as a :class:`~interp_rl.program.Controller` with named features and actions.

        Examples
        --------
        >>> import numpy as np
        >>> from interp_rl.viz import export_text
        >>> X = np.linspace(-1, 1, 50)[:, None]
        >>> tree = TreePolicy(max_depth=1).fit(X, np.sign(X))
        >>> print(export_text(tree.to_controller(["pole_angle"], ["push"])))
        |--- pole_angle <= 0.000
        |   |--- push = -1.000   (n=25)
        |--- pole_angle >  0.000
        |   |--- push = 1.000   (n=25)
        """
        check_is_fitted(self)

        def signals(items: Sequence[str | Signal] | None) -> list[Signal]:
            return [s if isinstance(s, Signal) else Signal(str(s)) for s in (items or [])]

        return Controller(self.tree_, features=signals(features), actions=signals(actions), task=task,
                          metadata=dict(metadata or {}))

    def with_program(self, program: TreeProgram) -> TreePolicy:
        """A fitted copy of this estimator that runs ``program`` (after editing or tuning)."""
        check_is_fitted(self)
        new = type(self)(**self.get_params())
        new.tree_ = program
        new.n_features_in_ = self.n_features_in_
        new.n_outputs_ = self.n_outputs_
        new._y_1d = self._y_1d
        if hasattr(self, "feature_names_in_"):
            new.feature_names_in_ = self.feature_names_in_
        return new


def _restate(program: TreeProgram, X: np.ndarray, Y: np.ndarray, w: np.ndarray) -> TreeProgram:
    """Recompute node means and squared errors of ``Y`` for a structure grown on another target."""
    intercept = np.zeros((program.n_nodes, Y.shape[1]))
    risk = np.zeros(program.n_nodes)
    leaf_of = program.apply(X)
    members: dict[int, np.ndarray] = {int(n): np.flatnonzero(leaf_of == n) for n in program.leaves}
    for node in reversed(program._preorder()):
        if not program.is_leaf[node]:
            lc, rc = int(program.left[node]), int(program.right[node])
            members[node] = np.concatenate((members[lc], members[rc]))
        rows = members[node]
        sw = float(w[rows].sum())
        if sw > 0:
            intercept[node] = (w[rows] @ Y[rows]) / sw
            risk[node] = float(w[rows] @ ((Y[rows] - intercept[node]) ** 2).sum(axis=1))
    return TreeProgram(
        feature=program.feature, threshold=program.threshold, left=program.left, right=program.right,
        intercept=intercept, coef=program.coef, n_samples=program.n_samples, risk=risk,
        action_low=program.action_low, action_high=program.action_high,
    )
