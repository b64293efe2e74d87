"""Linear programs with bounds that floating point cannot fool.

:func:`maximise` finds the largest value of an affine function on a bounded polyhedron with HiGHS
(through SciPy), and returns, besides the solver's point, an *upper bound that holds whatever the
solver's tolerances*: for any multipliers ``y >= 0`` of the rows ``A x <= b`` and any ``x`` in the
box ``[lo, hi]``, ``c @ x = y @ A x + (c - A.T y) @ x <= y @ b + sum_i max(r_i lo_i, r_i hi_i)``
with ``r = c - A.T y`` (weak duality, as Neumaier and Shcherbina make LP bounds safe). The
solver's duals make that bound tight; a slack of a few ulps covers the rounding of the bound's own
sum. A region is declared empty only when the same kind of bound proves the least violation of its
rows positive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog

__all__ = ["Optimum", "maximise"]

_U = float(np.finfo(np.float64).eps) / 2


@dataclass(frozen=True)
class Optimum:
    """The result of :func:`maximise`."""

    status: str
    """``"optimal"``, ``"empty"`` (proved: no point satisfies the rows) or ``"unknown"``."""
    bound: float = -math.inf
    """A rigorous upper bound of the objective on the polyhedron (``-inf`` when empty)."""
    x: np.ndarray | None = None
    """A point of the polyhedron where the objective is (near) its largest, when the solver found one."""
    reason: str = ""


def _safe_sum(terms: np.ndarray) -> float:
    """The smallest float at or above the exact sum of ``terms`` (finite floats: exact rational arithmetic)."""
    values = [float(t) for t in np.ravel(terms)]
    s = math.fsum(values)
    if not all(math.isfinite(v) for v in values) or not math.isfinite(s):
        return s
    exact = sum((Fraction(v) for v in values), Fraction(0))
    return s if Fraction(s) >= exact else math.nextafter(s, math.inf)


def _box_max(r: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``max(r_i lo_i, r_i hi_i)`` per entry, ``0`` where ``r_i == 0`` (even for infinite bounds)."""
    with np.errstate(invalid="ignore"):
        out = np.maximum(r * lo, r * hi)
    return np.where(r == 0.0, 0.0, out)


def maximise(c: np.ndarray, c0: float, lo: np.ndarray, hi: np.ndarray, A: np.ndarray | None = None,
             b: np.ndarray | None = None, *, _phase_one: bool = False) -> Optimum:
    """The largest value of ``c @ x + c0`` for ``lo <= x <= hi`` (finite) and ``A @ x <= b``.

    Examples
    --------
    >>> o = maximise(np.array([1.0, 1.0]), 0.5, np.zeros(2), np.ones(2), np.array([[1.0, 1.0]]), np.array([1.5]))
    >>> o.status, round(o.bound, 9), bool(o.x.sum() <= 1.5 + 1e-9)
    ('optimal', 2.0, True)
    >>> maximise(np.array([1.0]), 0.0, np.zeros(1), np.ones(1), np.array([[-1.0]]), np.array([-2.0])).status
    'empty'
    """
    c = np.asarray(c, dtype=np.float64)
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    if np.any(lo > hi):
        return Optimum("empty")
    if A is not None and len(A):
        A, b = np.asarray(A, dtype=np.float64), np.asarray(b, dtype=np.float64)
        zero = ~np.any(A != 0.0, axis=1)
        if np.any(b[zero] < 0):  # 0 <= b < 0: no point at all
            return Optimum("empty")
        A, b = A[~zero], b[~zero]
    if A is None or len(A) == 0:
        x = np.where(c > 0, hi, lo)
        return Optimum("optimal", _safe_sum(np.append(_box_max(c, lo, hi), c0)), x)
    res = linprog(-c, A_ub=A, b_ub=b, bounds=np.stack([lo, hi], axis=1), method="highs")
    if res.status == 0:
        y = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)
        r = c - A.T @ y
        bound = _safe_sum(np.concatenate([y * b, _box_max(r, lo, hi), [c0]]))
        return Optimum("optimal", bound, np.clip(res.x, lo, hi))
    if res.status == 2 and not _phase_one:
        return _prove_empty(A, b, lo, hi)
    return Optimum("unknown", math.inf, None, f"the LP solver stopped: {res.message}")


def _prove_empty(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Optimum:
    """``empty`` when the least largest violation ``t`` of the rows (scaled to unit norm) is provably positive."""
    norm = np.linalg.norm(A, axis=1)
    An, bn = A / norm[:, None], b / norm
    worst = float(np.max(_box_max(An, lo, hi).sum(axis=1) - bn)) + 1.0
    # maximise -t subject to An x - t <= bn, x in the box, t in [-1, worst]
    At = np.hstack([An, -np.ones((len(An), 1))])
    c = np.zeros(A.shape[1] + 1)
    c[-1] = -1.0
    o = maximise(c, 0.0, np.append(lo, -1.0), np.append(hi, max(worst, -1.0)), At, bn, _phase_one=True)
    if o.status == "optimal" and o.bound < 0:
        return Optimum("empty")
    return Optimum("unknown", math.inf, None, "the region is empty or nearly so within the LP solver's tolerance")
