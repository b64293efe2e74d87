"""Grow a tree whose splits are chosen for linear leaves (a model tree, as M5 or GUIDE do).

CART chooses a split by how well two *constants* fit the children. When the
leaves are linear, a split should be judged by how well two *linear* models
fit them, otherwise the splits chase slopes a linear leaf would have captured
anyway. For every candidate split (a feature and one of ``n_bins`` quantile
thresholds) this computes the ridge-penalised squared error of a linear fit on
each side from per-bin sufficient statistics, so a node costs a few small
matrix products per feature instead of one fit per candidate.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

__all__ = ["grow_model_tree"]


@dataclass
class _Split:
    gain: float
    feature: int
    threshold: float


class _Grower:
    def __init__(self, X: np.ndarray, Y: np.ndarray, w: np.ndarray, *, alpha: float, n_bins: int,
                 min_samples_leaf: int, max_split_samples: int, rng: np.random.Generator) -> None:
        self.X, self.Y, self.w = X, Y, w
        self.n_bins = n_bins
        self.min_leaf = min_samples_leaf
        self.max_split = max_split_samples
        self.rng = rng
        sw = float(w.sum())
        mean = (w @ X) / sw
        var = (w @ (X - mean) ** 2) / sw
        self.usable = var > 1e-12
        # Ridge on standardised features, as fit_leaf_models: alpha * (weight) * var_j per column.
        # Constant columns (e.g. zeroed contact forces) carry nothing: leave them out of the fits.
        cols = np.flatnonzero(self.usable)
        self.lam_unit = np.concatenate([[0.0], alpha * var[cols]])
        self.Z = np.concatenate([np.ones((len(X), 1)), X[:, cols]], axis=1)

    def stats(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
        Zw = self.Z[rows] * self.w[rows, None]
        return Zw.T @ self.Z[rows], Zw.T @ self.Y[rows], float(self.w[rows] @ (self.Y[rows] ** 2).sum(1)), \
            float(self.w[rows].sum())

    def sse(self, rows: np.ndarray) -> float:
        G, B, yy, sw = self.stats(rows)
        return float(_batched_sse(G[None], B[None], np.array([yy]), (self.lam_unit * sw)[None])[0])

    def best_split(self, rows: np.ndarray, sse_parent: float) -> _Split | None:
        if len(rows) < 2 * self.min_leaf:
            return None
        sub = rows
        if len(rows) > self.max_split:
            sub = np.sort(self.rng.choice(rows, self.max_split, replace=False))
        scale = float(self.w[rows].sum()) / float(self.w[sub].sum())
        Z, Y, w = self.Z[sub], self.Y[sub], self.w[sub]
        Zw = Z * w[:, None]
        yy = w * (Y**2).sum(1)
        best: _Split | None = None
        qs = np.linspace(0, 1, self.n_bins + 1)[1:-1]
        for j in np.flatnonzero(self.usable):
            x = self.X[sub, j]
            thresholds = np.unique(np.quantile(x, qs, method="lower"))
            if len(thresholds) == 0:
                continue
            bins = np.searchsorted(thresholds, x, side="left")  # x <= t[b]  ->  bin <= b
            k = len(thresholds) + 1
            order = np.argsort(bins, kind="stable")
            Zs, Zws, Ys = Z[order], Zw[order], Y[order]
            N = np.bincount(bins, minlength=k).astype(float)
            W = np.bincount(bins, weights=w, minlength=k)
            YY = np.bincount(bins, weights=yy, minlength=k)
            ends = np.cumsum(N).astype(int)
            G = np.zeros((k, Z.shape[1], Z.shape[1]))
            B = np.zeros((k, Z.shape[1], Y.shape[1]))
            start = 0
            for b, end in enumerate(ends):
                if end > start:
                    G[b] = Zws[start:end].T @ Zs[start:end]
                    B[b] = Zws[start:end].T @ Ys[start:end]
                start = end
            cG, cB, cY, cN, cW = (np.cumsum(a, axis=0)[:-1] for a in (G, B, YY, N, W))
            tG, tB, tY, tN, tW = G.sum(0), B.sum(0), YY.sum(), N.sum(), W.sum()
            ok = (cN * scale >= self.min_leaf) & ((tN - cN) * scale >= self.min_leaf) & (cW > 0) & (cW < tW)
            if not ok.any():
                continue
            idx = np.flatnonzero(ok)
            # Each side gets its own ridge strength (proportional to its weight), so solve per side.
            lam_l = cW[idx, None] * self.lam_unit[None]
            lam_r = (tW - cW[idx])[:, None] * self.lam_unit[None]
            left = _batched_sse(cG[idx], cB[idx], cY[idx], lam_l)
            right = _batched_sse(tG[None] - cG[idx], tB[None] - cB[idx], tY - cY[idx], lam_r)
            total = (left + right) * scale
            i = int(np.argmin(total))
            gain = sse_parent - float(total[i])
            if best is None or gain > best.gain + 1e-12:
                best = _Split(gain, int(j), float(thresholds[idx[i]]))
        if best is None or best.gain <= 1e-12 * max(abs(sse_parent), 1.0):
            return None
        return best


def _batched_sse(G: np.ndarray, B: np.ndarray, yy: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Penalised SSE of ridge fits, batched: ``G`` (k, p, p), ``B`` (k, p, m), ``yy`` (k,), ``lam`` (k, p)."""
    p = G.shape[1]
    A = G + lam[:, :, None] * np.eye(p)[None]
    A[:, 0, 0] += 1e-12
    try:
        sol = np.linalg.solve(A, B)
    except np.linalg.LinAlgError:
        sol = np.einsum("kij,kjm->kim", np.linalg.pinv(A), B)
    return yy - np.einsum("kpm,kpm->k", B, sol)


def grow_model_tree(
    X: np.ndarray,
    Y: np.ndarray,
    w: np.ndarray,
    *,
    max_leaves: int | None,
    max_depth: int | None,
    min_samples_leaf: int,
    alpha: float,
    n_bins: int = 32,
    max_split_samples: int = 20_000,
    random_state: int | None = None,
) -> dict[str, np.ndarray]:
    """Best-first growth of a tree judged by linear-leaf fit; returns node arrays.

    Returns ``feature``, ``threshold``, ``left``, ``right``, ``n_samples``,
    ``intercept`` (node mean actions) and ``risk`` (ridge-linear squared error
    of each node), in the layout of :class:`~interp_rl.program.TreeProgram`.
    """
    rng = np.random.default_rng(random_state)
    grower = _Grower(X, Y, w, alpha=alpha, n_bins=n_bins, min_samples_leaf=min_samples_leaf,
                     max_split_samples=max_split_samples, rng=rng)
    feature: list[int] = [-1]
    threshold: list[float] = [0.0]
    left: list[int] = [-1]
    right: list[int] = [-1]
    depth: list[int] = [0]
    members: list[np.ndarray] = [np.arange(len(X))]
    risk: list[float] = [grower.sse(members[0])]
    heap: list[tuple[float, int, int, _Split]] = []
    counter = 0

    def consider(node: int) -> None:
        nonlocal counter
        if max_depth is not None and depth[node] >= max_depth:
            return
        split = grower.best_split(members[node], risk[node])
        if split is not None:
            heapq.heappush(heap, (-split.gain, counter, node, split))
            counter += 1

    consider(0)
    n_leaves = 1
    while heap and (max_leaves is None or n_leaves < max_leaves):
        _, _, node, split = heapq.heappop(heap)
        rows = members[node]
        go_left = X[rows, split.feature] <= split.threshold
        feature[node], threshold[node] = split.feature, split.threshold
        for side_rows in (rows[go_left], rows[~go_left]):
            feature.append(-1)
            threshold.append(0.0)
            left.append(-1)
            right.append(-1)
            depth.append(depth[node] + 1)
            members.append(side_rows)
            risk.append(grower.sse(side_rows))
        left[node], right[node] = len(feature) - 2, len(feature) - 1
        n_leaves += 1
        consider(left[node])
        consider(right[node])

    n_samples = np.array([float(w[m].sum()) for m in members])
    intercept = np.array([(w[m] @ Y[m]) / max(float(w[m].sum()), 1e-300) for m in members])
    return {
        "feature": np.array(feature, dtype=np.int64), "threshold": np.array(threshold),
        "left": np.array(left, dtype=np.int64), "right": np.array(right, dtype=np.int64),
        "n_samples": n_samples, "intercept": intercept.reshape(len(members), Y.shape[1]),
        "risk": np.maximum(np.array(risk), 0.0),
    }
