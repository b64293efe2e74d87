"""A sparse linear policy: one affine equation per action, fitted by weighted ridge regression."""

from __future__ import annotations

from typing import Any

import numpy as np

from distill._leaves import fit_leaf_models
from distill._student import PolicyStudent, check_bounds
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.tree import TreeProgram
from interp_rl.validation import check_float, check_int

__all__ = ["LinearPolicy"]


class LinearPolicy(PolicyStudent):
    """``action = intercept + coef @ obs``, clipped, with at most ``max_terms`` features per action.

    Fitted on raw observations by weighted ridge regression on standardised features (the same
    fit as a tree's linear leaf); with ``max_terms``, greedy forward selection keeps the
    features that explain each action best, so the equations stay short.

    Parameters
    ----------
    max_terms : int, default=None
        At most this many observation features per action (``None``: all).
    alpha : float, default=1e-3
        Ridge penalty on standardised features.
    action_low, action_high : array-like, default=None
        Bounds the actions are clipped to (``None``: no clipping).

    Attributes
    ----------
    program_ : LinearProgram
        The fitted equations; runs, explains and exports the controller.
    n_features_in_ : int
        Observation size seen in ``fit``.
    n_outputs_ : int
        Number of action components.

    Examples
    --------
    A linear teacher ``a = 0.5 x0 - 0.2 x2`` is read back exactly, and ``max_terms`` keeps the
    two features that matter:

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(500, 4))
    >>> y = 0.5 * X[:, [0]] - 0.2 * X[:, [2]]
    >>> pol = LinearPolicy(max_terms=2, alpha=0.0).fit(X, y)
    >>> np.round(pol.program_.coef, 6).tolist()
    [[0.5, 0.0, -0.2, 0.0]]
    """

    program_kind = "linear"

    def __init__(
        self,
        *,
        max_terms: int | None = None,
        alpha: float = 1e-3,
        action_low: Any = None,
        action_high: Any = None,
    ) -> None:
        self.max_terms = max_terms
        self.alpha = alpha
        self.action_low = action_low
        self.action_high = action_high

    def _validate_params(self) -> None:
        """Check every setting; a bad one raises the one-line template error."""
        owner = type(self).__name__
        if self.max_terms is not None:
            check_int(self.max_terms, "max_terms", owner, low=1)
        check_float(self.alpha, "alpha", owner)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> LinearPolicy:
        """Fit to observations ``X`` ``(n, obs_dim)`` and actions ``y`` ``(n, act_dim)``."""
        self._validate_params()
        X, Y, w = self._fit_inputs(X, y, sample_weight)
        low, high = check_bounds(self.action_low, self.action_high, Y.shape[1], type(self).__name__)
        none = np.array([-1])
        root = TreeProgram(feature=none, threshold=np.zeros(1), left=none, right=none,
                           intercept=np.zeros((1, Y.shape[1])), coef=np.zeros((1, Y.shape[1], X.shape[1])))
        fitted = fit_leaf_models(root, X, Y, w, alpha=self.alpha, max_terms=self.max_terms, min_samples=1)
        if not fitted.has_linear_leaves:  # too few samples for a fit: the weighted mean action
            fitted = fitted.replace(intercept=((w @ Y) / w.sum())[None, :])
        self.program_ = LinearProgram(intercept=fitted.intercept[0], coef=fitted.coef[0], action_low=low,
                                      action_high=high)
        return self
