"""Exact interventional Shapley values for the shipped program kinds (the kinds call these).

The game of one state ``x`` against a background ``B`` (rows ``b_k``, weights ``w_k`` summing to 1)
is ``v(S) = sum_k w_k f(z)`` with ``z_j = x_j`` for ``j`` in ``S`` and ``b_kj`` otherwise. Both
algorithms here reduce ``f`` at a pair ``(x, b_k)`` to a sum of *indicator games*
``g(S) = 1[A subset of S, S and B disjoint]`` times constants, whose Shapley values are known in
closed form (``a = |A|``, ``b = |B|``)::

    phi_i = (a-1)! b! / (a+b)!     for i in A
    phi_i = -a! (b-1)! / (a+b)!    for i in B
    phi_i = 0                      otherwise

* :func:`tree_shapley` -- a binary tree over axis-aligned splits with affine leaves (the ``tree``
  kind; a linear policy is a tree of one leaf; a mixture routed by a tree is a tree whose leaves are
  experts). At a pair, a leaf is reached by the hybrid ``z`` iff every split feature on its path
  where ``x`` and ``b`` disagree is taken from the side that satisfies the path: those features form
  ``A`` (``x``'s side) and ``B`` (``b``'s side). The affine leaf adds, per free feature ``j``,
  ``coef_j (x_j - b_j) 1[j in S]``: an indicator game with ``A + {j}``. This is interventional
  TreeSHAP (Lundberg et al. 2020) extended to linear leaves; background rows with the same pattern
  of path tests are merged (everything is linear in ``b`` once the pattern is fixed), so the cost is
  per (state, leaf, pattern), not per (state, leaf, background row).
* :func:`product_terms_shapley` -- sums of terms, each a product of functions of one feature each
  (the ``equations`` kind). A term touching features ``F`` is a game on ``F`` alone; its value at
  ``S`` is ``prod_{j in S&F} g_j(x_j) * E_b[prod_{j in F-S} g_j(b_j)]``, so the ``2^|F|`` coalitions
  of ``F`` are enumerated (``|F|`` is 1 to 3 for SINDy libraries).

Both return the values of the *unclipped* output (the kind's ``raw_predict``): with
``base = sum_k w_k f(b_k)``, ``base + phi.sum(axis=1) == f(x)`` per action (efficiency).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from math import factorial

import numpy as np

__all__ = ["product_terms_shapley", "tree_shapley"]


def _weights(n_max: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tables indexed ``[a, b]``: alpha = (a-1)!b!/(a+b)!, beta = a!(b-1)!/(a+b)!, gamma = a!b!/(a+b+1)!,
    beta1 = (a+1)!(b-1)!/(a+b+1)! (zero where undefined)."""
    size = n_max + 2
    alpha, beta, gamma, beta1 = (np.zeros((size, size)) for _ in range(4))
    for a in range(size):
        for b in range(size):
            if a + b >= size:
                continue
            if a >= 1:
                alpha[a, b] = factorial(a - 1) * factorial(b) / factorial(a + b)
            if b >= 1:
                beta[a, b] = factorial(a) * factorial(b - 1) / factorial(a + b)
                beta1[a, b] = factorial(a + 1) * factorial(b - 1) / factorial(a + b + 1)
            gamma[a, b] = factorial(a) * factorial(b) / factorial(a + b + 1)
    return alpha, beta, gamma, beta1


def _leaf_boxes(feature: np.ndarray, threshold: np.ndarray, left: np.ndarray,
                right: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """``(leaf, features, lo, hi)`` per leaf: the leaf's region is ``lo < x_f <= hi`` on its path features."""
    out = []
    stack: list[tuple[int, dict[int, tuple[float, float]]]] = [(0, {})]
    while stack:
        node, box = stack.pop()
        if left[node] < 0:
            feats = np.array(sorted(box), dtype=np.int64)
            lo = np.array([box[f][0] for f in feats], dtype=np.float64)
            hi = np.array([box[f][1] for f in feats], dtype=np.float64)
            out.append((node, feats, lo, hi))
            continue
        f, t = int(feature[node]), float(threshold[node])
        lo, hi = box.get(f, (-np.inf, np.inf))
        stack.append((int(right[node]), {**box, f: (max(lo, t), hi)}))
        stack.append((int(left[node]), {**box, f: (lo, min(hi, t))}))
    return out


def tree_shapley(
    *,
    feature: np.ndarray,
    threshold: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    intercept: np.ndarray,
    coef: np.ndarray,
    X: np.ndarray,
    background: np.ndarray,
    weights: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact Shapley values of a tree with affine leaves.

    Parameters
    ----------
    feature, threshold, left, right : ndarray of shape (n_nodes,)
        The tree (``left < 0`` at leaves; left when ``x[feature] <= threshold``).
    intercept : ndarray of shape (n_nodes, act_dim)
    coef : ndarray of shape (n_nodes, act_dim, obs_dim)
        Each leaf's output ``intercept + coef @ x`` (rows of inner nodes are ignored).
    X : ndarray of shape (n, obs_dim)
        States to explain.
    background : ndarray of shape (m, obs_dim)
    weights : ndarray of shape (m,)
        Background rows and their weights (summing to 1).

    Returns
    -------
    phi : ndarray of shape (n, obs_dim, act_dim)
    base : ndarray of shape (act_dim,)
        The weighted mean output over the background.

    Examples
    --------
    ``y = x0 + 2 x1`` (one leaf) against the background ``(0, 0)``:

    >>> phi, base = tree_shapley(feature=np.array([-1]), threshold=np.zeros(1), left=np.array([-1]),
    ...     right=np.array([-1]), intercept=np.zeros((1, 1)), coef=np.array([[[1.0, 2.0]]]),
    ...     X=np.array([[3.0, 1.0]]), background=np.zeros((1, 2)), weights=np.ones(1))
    >>> phi[0, :, 0], base
    (array([3., 2.]), array([0.]))
    """
    X = np.asarray(X, dtype=np.float64)
    Bg = np.asarray(background, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    n, d = X.shape
    k = intercept.shape[1]
    phi = np.zeros((n, d, k))
    base = np.zeros(k)
    boxes = _leaf_boxes(feature, threshold, left, right)
    depth = max((len(f) for _, f, _, _ in boxes), default=0)
    alpha, beta, gamma, beta1 = _weights(depth + 1)
    for leaf, feats, lo, hi in boxes:
        c = intercept[leaf]  # (k,)
        W = coef[leaf]  # (k, d)
        p = len(feats)
        xin = (X[:, feats] > lo) & (X[:, feats] <= hi)  # (n, p)
        bin_ = (Bg[:, feats] > lo) & (Bg[:, feats] <= hi)  # (m, p)
        # Merge background rows with the same pattern of path tests.
        codes = bin_.astype(np.int64) @ (1 << np.arange(p, dtype=np.int64)) if p else np.zeros(len(Bg), np.int64)
        uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        G = len(uniq)
        Wg = np.bincount(inverse, weights=w, minlength=G)  # (G,)
        Sg = np.zeros((G, d))
        np.add.at(Sg, inverse, w[:, None] * Bg)  # sum of w_k b_k per pattern
        bg_in = bin_[first]  # (G, p)
        base += (Wg[bin_[first].all(axis=1)] if p else Wg).sum() * c + (
            Sg[bg_in.all(axis=1)] if p else Sg).sum(axis=0) @ W.T
        # The hybrid of x and a pattern-g row reaches the leaf iff x passes every test the row fails.
        reach = ((~xin).astype(np.int64) @ (~bg_in).T.astype(np.int64)) == 0  # (n, G)
        rows, cols = np.flatnonzero(reach.any(axis=1)), np.flatnonzero(reach.any(axis=0))
        if not len(rows):
            continue
        # Only the states and patterns that can reach this leaf (deep trees: a small share).
        Xr, Wr, Sr, xr, gin = X[rows], Wg[cols], Sg[cols], xin[rows], bg_in[cols]
        reach = reach[rows][:, cols]
        A = xr[:, None, :] & ~gin[None, :, :]  # (n', G', p): x's side
        Bm = ~xr[:, None, :] & gin[None, :, :]  # the row's side
        a = A.sum(axis=2)
        b = Bm.sum(axis=2)
        ra = np.where(reach, 1.0, 0.0)
        al, be, ga, be1 = (t[a, b] * ra for t in (alpha, beta, gamma, beta1))  # (n', G')
        wx = Xr @ W.T  # (n', k)
        wb = Sr @ W.T  # (G', k)
        C = c[None, None, :] * Wr[None, :, None] + wb[None, :, :]  # constant part, (n', G', k)
        gsum = ga @ Wr  # (n',)
        gS = ga @ Sr  # (n', d)
        # Free features: gamma * W_j (x_j Wg - S_gj), summed over patterns; path features corrected below.
        part = (Xr * gsum[:, None] - gS)[:, :, None] * W.T[None, :, :]  # (n', d, k)
        Af, Bf = A.astype(np.float64), Bm.astype(np.float64)
        AfT, BfT = Af.transpose(0, 2, 1), Bf.transpose(0, 2, 1)  # (n', p, G'): batched matmuls below
        if np.any(W):
            # The path features' part, sum_{k in g} w_k W_j (x_j - b_kj) for j = feats[q], factors as
            # E[n, g, q] * Wp[q, :] with E = x_j Wg - S_gj: contracted by matmuls, never built as (n', G', p, k).
            E = Xr[:, feats][:, None, :] * Wr[None, :, None] - Sr[:, feats][None, :, :]  # (n', G', p)
            Wp = W[:, feats].T  # (p, k)
            fixed = Af + Bf  # x's or the row's side taken: not free
            C = C + (Af * E) @ Wp
            D = wx[:, None, :] * Wr[None, :, None] - wb[None, :, :] - (fixed * E) @ Wp
            part[:, feats, :] -= np.sum(fixed * E * ga[:, :, None], axis=1)[:, :, None] * Wp[None, :, :]
            part[:, feats, :] += (AfT * ga[:, None, :]) @ D
            part[:, feats, :] -= (BfT * be1[:, None, :]) @ D
        part[:, feats, :] += (AfT * al[:, None, :]) @ C
        part[:, feats, :] -= (BfT * be[:, None, :]) @ C
        phi[rows] += part
    return phi, base


def product_terms_shapley(
    *,
    factors: Sequence[dict[int, Callable[[np.ndarray], np.ndarray]]],
    coef: np.ndarray,
    X: np.ndarray,
    background: np.ndarray,
    weights: np.ndarray,
    intercept: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact Shapley values of ``y = intercept + sum_t coef[:, t] * prod_{j in F_t} g_tj(x_j)``.

    Parameters
    ----------
    factors : list of dict
        Per term, ``{feature: g}`` with ``g`` vectorised over a column of values.
    coef : ndarray of shape (act_dim, n_terms)
    X, background, weights, intercept
        As for :func:`tree_shapley`; ``intercept`` has shape ``(act_dim,)``.

    Examples
    --------
    ``y = x0 * x1`` at ``(1, 1)`` against ``(0, 0)``: each feature gets half.

    >>> phi, base = product_terms_shapley(factors=[{0: lambda v: v, 1: lambda v: v}], coef=np.ones((1, 1)),
    ...     X=np.ones((1, 2)), background=np.zeros((1, 2)), weights=np.ones(1), intercept=np.zeros(1))
    >>> phi[0, :, 0], base
    (array([0.5, 0.5]), array([0.]))
    """
    X = np.asarray(X, dtype=np.float64)
    Bg = np.asarray(background, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    n, d = X.shape
    k = len(intercept)
    phi = np.zeros((n, d, k))
    base = np.asarray(intercept, dtype=np.float64).copy()
    for t, term in enumerate(factors):
        if not np.any(coef[:, t]):
            continue
        feats = sorted(term)
        r = len(feats)
        gx = {j: np.asarray(term[j](X[:, j]), dtype=np.float64) for j in feats}  # (n,)
        gb = {j: np.asarray(term[j](Bg[:, j]), dtype=np.float64) for j in feats}  # (m,)
        # value(U) for U a subset of feats (as a frozenset): (n,)
        value: dict[frozenset[int], np.ndarray] = {}
        for size in range(r + 1):
            for U in combinations(feats, size):
                rest = [j for j in feats if j not in U]
                eb = float(w @ np.prod([gb[j] for j in rest], axis=0)) if rest else 1.0
                vx = np.prod([gx[j] for j in U], axis=0) if U else np.ones(n)
                value[frozenset(U)] = vx * eb
        base += coef[:, t] * float(value[frozenset()][0] if n else w @ np.prod([gb[j] for j in feats], axis=0))
        for i in feats:
            others = [j for j in feats if j != i]
            contrib = np.zeros(n)
            for size in range(r):
                wt = factorial(size) * factorial(r - size - 1) / factorial(r)
                for U in combinations(others, size):
                    s = frozenset(U)
                    contrib += wt * (value[s | {i}] - value[s])
            phi[:, i, :] += contrib[:, None] * coef[None, :, t]
    return phi, base
