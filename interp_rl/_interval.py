"""Interval arithmetic on arrays of intervals, rounded outward: bounds of real values that floating point cannot fool.

An interval is a pair ``(lo, hi)`` of float arrays of one shape (one interval per entry). Every
operation computes its endpoints rounded to nearest and moves them one float outward
(:func:`numpy.nextafter`), which covers the rounding of that operation, subnormal results
included; ``0 * inf`` gives NaN, which the callers read as "unknown". Program kinds use these to
bound their real-valued arithmetic over boxes of states (:mod:`interp_rl.verify.nonlinear`).

Examples
--------
>>> lo, hi = mul((np.array([-1.0]), np.array([2.0])), (np.array([0.1]), np.array([0.3])))
>>> bool(lo[0] <= -0.3 and hi[0] >= 0.6), float(hi[0] - 0.6) < 1e-15
(True, True)
>>> power(np.array([-1.0]), np.array([2.0]), 2)[0]  # x^2 over [-1, 2] reaches 0
array([0.])
"""

from __future__ import annotations

import numpy as np

__all__ = ["add", "down", "mul", "power", "scale", "up", "widen"]

Interval = tuple[np.ndarray, np.ndarray]


def down(v: np.ndarray) -> np.ndarray:
    """The next float below each entry (``-inf`` stays)."""
    return np.nextafter(v, -np.inf)


def up(v: np.ndarray) -> np.ndarray:
    """The next float above each entry (``inf`` stays)."""
    return np.nextafter(v, np.inf)


def widen(lo: np.ndarray, hi: np.ndarray, ulps: float) -> Interval:
    """``[lo, hi]`` widened by ``ulps`` units in the last place of its largest magnitude (finite ones only)."""
    size = np.maximum(np.abs(lo), np.abs(hi))
    finite = np.isfinite(size)
    pad = np.where(finite, ulps * np.spacing(np.where(finite, size, 0.0)), 0.0)
    return down(lo - pad), up(hi + pad)


def add(a: Interval, b: Interval) -> Interval:
    """``a + b``."""
    with np.errstate(invalid="ignore", over="ignore"):
        return down(a[0] + b[0]), up(a[1] + b[1])


def scale(c: float, a: Interval) -> Interval:
    """``c * a`` for a number ``c``."""
    with np.errstate(invalid="ignore", over="ignore"):
        p, q = c * a[0], c * a[1]
    return down(np.minimum(p, q)), up(np.maximum(p, q))


def mul(a: Interval, b: Interval) -> Interval:
    """``a * b`` (NaN where ``0 * inf`` may occur)."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.stack([a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]])
    nan = ((a[0] <= 0) & (a[1] >= 0) & (np.isinf(b[0]) | np.isinf(b[1]))) | \
          ((b[0] <= 0) & (b[1] >= 0) & (np.isinf(a[0]) | np.isinf(a[1])))
    return np.where(nan, np.nan, down(p.min(axis=0))), np.where(nan, np.nan, up(p.max(axis=0)))


def power(lo: np.ndarray, hi: np.ndarray, q: int) -> Interval:
    """``x^q`` for ``x`` in ``[lo, hi]`` (``q >= 0``): the endpoints' powers by repeated products, whose relative error
    is below ``q`` units in the last place, widened by that; even powers reach 0 where the interval holds it."""
    if q == 0:
        return np.ones_like(lo), np.ones_like(hi)
    with np.errstate(over="ignore", under="ignore"):
        a, b = lo.copy(), hi.copy()
        for _ in range(q - 1):
            a, b = a * lo, b * hi
    if q % 2:
        return widen(a, b, q)
    straddle = (lo <= 0) & (hi >= 0)
    low, high = widen(np.where(straddle, 0.0, np.minimum(a, b)), np.maximum(a, b), q)
    return np.maximum(low, 0.0), high
