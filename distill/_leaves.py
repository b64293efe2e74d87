"""Fitting affine maps to data: the leaves of trees and whole linear policies.

Weighted ridge regression on standardised features, optionally sparse (greedy forward
selection of at most ``max_terms`` features per action), computed from Gram statistics.
"""

from __future__ import annotations

import numpy as np

from interp_rl.kinds.tree import TreeProgram

__all__ = ["fit_leaf_models", "restate"]


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


def restate(program: TreeProgram, X: np.ndarray, Y: np.ndarray, w: np.ndarray) -> TreeProgram:
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
