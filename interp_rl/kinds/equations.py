"""Sparse equations over a library of terms: the ``equations`` program kind (SINDy policies).

Each action is a short sum of *terms*, ``a_k = intercept_k + sum_t coef_kt * term_t(x)``, where a
term is a product of *factors* of single observation features: a power ``x_j^p``, ``sin(w*x_j)``,
``cos(w*x_j)``, ``tanh(x_j)``, ``exp(x_j)`` or ``abs(x_j)``. It is what a sparse regression over a
feature library (pysindy's polynomial, Fourier and custom libraries) produces, and what a control
engineer reads as ``thigh_torque = 0.42*thigh_angle - 1.3*foot_vx*thigh_angle``.

Arithmetic (bit-identical in every runtime):

* a factor: ``x_j ^ p`` is ``x_j * x_j * ...`` (``p`` factors, left to right); ``sin(w*x_j)`` is
  the C library's ``sin`` of ``w * x_j`` (of ``x_j`` itself when ``w == 1``), likewise ``cos``;
  ``tanh``, ``exp`` are the C library's, ``abs`` is exact;
* a term: its factors multiplied left to right, in the order stored;
* an action: ``y = intercept`` then ``y = y + coef_t * term_t`` for its non-zero coefficients in
  term order; then ``y = min(max(y, low), high)``.

The C library's functions are called from NumPy too (never NumPy's own vectorised ``sin``), so
``predict``, the exported Python (``math.sin``) and the exported C (``sin`` of ``<math.h>``) agree
to the last bit on one machine.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

import interp_rl._codegen as cg
import interp_rl._interval as iv
from interp_rl._shapley import product_terms_shapley
from interp_rl.errors import ControllerFormatError
from interp_rl.program import AffinePieces, ProgramBase, register_program, widen_columns

if TYPE_CHECKING:
    from interp_rl._onnx import OnnxGraph
    from interp_rl.program import Controller

__all__ = ["FUNCTIONS", "KIND_VERSION", "LIBM_ULPS", "EquationsProgram", "Factor", "term_text"]

#: Version of this kind's JSON (``"version"`` in the program's dict).
KIND_VERSION = 1

#: Factor functions besides ``pow``: name -> (exact Python callable, Python spelling, C spelling).
#: ``sin``/``cos`` take a frequency ``w`` (argument ``w * x``); the others take none.
FUNCTIONS: dict[str, tuple[Any, str, str]] = {
    "sin": (math.sin, "math.sin", "sin"),
    "cos": (math.cos, "math.cos", "cos"),
    "tanh": (math.tanh, "math.tanh", "tanh"),
    "exp": (lambda v: _exp(v), "_exp", "exp"),
    "abs": (abs, "abs", "fabs"),
}
_PERIODIC = ("sin", "cos")
_GREY = '"#999999"'


def _exp(v: float) -> float:
    """``exp`` as C's: ``inf`` where the result overflows (``math.exp`` raises there)."""
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf

_UFUNCS = {name: np.frompyfunc(f, 1, 1) for name, (f, _, _) in FUNCTIONS.items()}

#: Units in the last place by which :meth:`EquationsProgram.action_bounds` widens a bound read off the C
#: library's ``sin``, ``cos``, ``tanh`` or ``exp`` (enough for results within 4 ulps of the exact value).
LIBM_ULPS = 16
#: Largest number of distinct operands of a term whose product is bounded corner by corner (else step by step).
_CORNERS = 6
#: Where ``sin`` and ``cos`` reach their largest and their smallest value, modulo ``2*pi``.
_EXTREMES = {"sin": (math.pi / 2, -math.pi / 2), "cos": (0.0, math.pi)}
_U = float(np.finfo(np.float64).eps) / 2
_TINY = 2.0**-1074

Factor = tuple[str, int, float]
"""``(function, feature, argument)``: ``("pow", j, p)``, ``("sin", j, w)``, ``("tanh", j, 1.0)`` ..."""


def _check_factor(raw: Any, obs_dim: int) -> Factor:
    try:
        func, j, arg = raw
        func, j, arg = str(func), int(j), float(arg)
    except (TypeError, ValueError) as exc:
        raise ControllerFormatError(f"A factor of the equations must be [function, feature, argument]; got "
                                    f"{raw!r} ({exc}).") from None
    if func != "pow" and func not in FUNCTIONS:
        raise ControllerFormatError(f"Unknown factor function {func!r}; expected one of "
                                    f"{', '.join(['pow', *FUNCTIONS])}.")
    if not 0 <= j < obs_dim:
        raise ControllerFormatError(f"A factor reads feature {j}, outside [0, {obs_dim}).")
    if func == "pow" and not (arg.is_integer() and 1 <= arg <= 16):
        raise ControllerFormatError(f"A power must be a whole number in [1, 16]; got {arg}.")
    if not math.isfinite(arg):
        raise ControllerFormatError(f"A factor's argument is not finite: {arg}.")
    if func not in ("pow", *_PERIODIC):
        arg = 1.0
    return (func, j, arg)


def _libm(func: str, v: np.ndarray) -> np.ndarray:
    """The C library's ``func`` at every finite ``v`` (as :meth:`EquationsProgram.term_values` calls it), NaN
    elsewhere."""
    finite = np.isfinite(v)
    out = np.full(v.shape, np.nan)
    if finite.any():
        out[finite] = _UFUNCS[func](v[finite]).astype(np.float64)
    return out


def _may_reach(low: np.ndarray, high: np.ndarray, at: float) -> np.ndarray:
    """Whether ``[low, high]`` may hold a point ``at + 2*k*pi`` (with a margin for the rounding of this test)."""
    a, b = (low - at) / (2 * math.pi), (high - at) / (2 * math.pi)
    slack = 1e-9 * (1.0 + np.abs(a) + np.abs(b))
    return np.ceil(a - slack) <= np.floor(b + slack)


def _factor_bounds(func: str, arg: float, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of a factor other than a power, as :meth:`EquationsProgram.term_values` computes it, for its feature in
    ``[low, high]``; NaN where it may be NaN."""
    if func == "abs":
        return np.where(low >= 0, low, np.where(high <= 0, -high, 0.0)), np.maximum(np.abs(low), np.abs(high))
    if func in _PERIODIC and arg != 1.0:  # the rounded argument w * x is monotone in x
        a, b = arg * low, arg * high
        low, high = np.minimum(a, b), np.maximum(a, b)
    at_low, at_high = _libm(func, low), _libm(func, high)
    lo, hi = np.minimum(at_low, at_high), np.maximum(at_low, at_high)
    if func in _PERIODIC:
        top, bottom = _EXTREMES[func]
        hi = np.where(_may_reach(low, high, top), 1.0, hi)
        lo = np.where(_may_reach(low, high, bottom), -1.0, lo)
    lo, hi = iv.widen(lo, hi, LIBM_ULPS)
    if func == "exp":
        lo = np.maximum(lo, 0.0)
    return lo, hi


class _Operands:
    """The operands of the terms over boxes ``[L, U]`` ``(m, obs_dim)``: a feature (a power's copies of it) or a
    factor, each with bounds of its computed value and of how far that may be from the exact one."""

    def __init__(self, L: np.ndarray, U: np.ndarray) -> None:
        self.L, self.U = L, U
        self.cache: dict[Factor, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def key(self, f: Factor) -> Factor:
        return ("pow", f[1], 1.0) if f[0] == "pow" else f

    def __getitem__(self, k: Factor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lo, hi, err)``: ``lo <= computed <= hi`` and ``|computed - exact| <= err``."""
        if k not in self.cache:
            func, j, arg = k
            lo, hi = self.L[:, j], self.U[:, j]
            if func in ("pow", "abs"):
                err = np.zeros(len(lo))
                if func == "abs":
                    lo, hi = _factor_bounds(func, arg, lo, hi)
            else:  # the C library within 4 ulps, and sin(w*x) read at the rounded w*x (within u*|w*x|)
                x = np.maximum(np.abs(lo), np.abs(hi))
                lo, hi = _factor_bounds(func, arg, lo, hi)
                err = 16 * _U * np.maximum(np.abs(lo), np.abs(hi)) + 4 * _TINY
                if func in _PERIODIC and arg != 1.0:
                    err = err + _U * abs(arg) * x
            self.cache[k] = (lo, hi, err)
        return self.cache[k]

    def exact(self, k: Factor) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the operand's exact value."""
        lo, hi, err = self[k]
        return (lo, hi) if k[0] == "pow" else (iv.down(lo - err), iv.up(hi + err))

    def slope(self, k: Factor) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the exact operand's derivative in its feature."""
        func, j, arg = k
        lo, hi = self.L[:, j], self.U[:, j]
        if func == "pow":
            return np.ones_like(lo), np.ones_like(hi)
        if func == "abs":
            a, b = np.where(lo >= 0, 1.0, -1.0), np.where(hi <= 0, -1.0, 1.0)
            return np.minimum(a, b), np.maximum(a, b)
        if func in _PERIODIC:  # d sin(w x) = w cos(w x), d cos(w x) = -w sin(w x)
            return iv.scale(arg if func == "sin" else -arg, self.exact(("cos" if func == "sin" else "sin", j, arg)))
        if func == "exp":
            return self.exact(k)
        t = self.exact(k)  # d tanh = 1 - tanh^2
        sq = iv.power(np.maximum(t[0], -1.0), np.minimum(t[1], 1.0), 2)
        return np.maximum(iv.down(1.0 - sq[1]), 0.0), np.minimum(iv.up(1.0 - sq[0]), 1.0)


def _operands(term: Sequence[Factor], ops: _Operands) -> list[Factor]:
    """The term's operands in the order they are multiplied (a power ``p`` as ``p`` copies of its feature)."""
    return [ops.key(f) for f in term for _ in range(int(f[2]) if f[0] == "pow" else 1)]


def _term_bounds(term: Sequence[Factor], ops: _Operands) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of a term's computed value, its operands multiplied left to right. The rounded product is odd in each
    operand and its size grows with each operand's size, so it takes its extremes at corners of the operands'
    ranges, or 0 where one may be 0."""
    seq = _operands(term, ops)
    if len(seq) == 1:
        return ops[seq[0]][:2]
    distinct = list(dict.fromkeys(seq))
    zero = np.zeros(len(ops.L), dtype=bool)
    for k in distinct:
        zero |= (ops[k][0] <= 0) & (ops[k][1] >= 0)
    if len(distinct) <= _CORNERS:
        corners = []
        for pick in itertools.product((0, 1), repeat=len(distinct)):
            end = dict(zip(distinct, pick, strict=True))
            v = ops[seq[0]][end[seq[0]]]
            for k in seq[1:]:
                v = v * ops[k][end[k]]
            corners.append(v)
        values = np.stack(corners)
        lo, hi = values.min(axis=0), values.max(axis=0)
        lo, hi = np.where(zero, np.minimum(lo, 0.0), lo), np.where(zero, np.maximum(hi, 0.0), hi)
        nan = zero & np.any(np.isinf(values), axis=0)
    else:  # each product on its own: sound, looser where an operand repeats
        lo, hi = ops[seq[0]][:2]
        nan = np.zeros(len(ops.L), dtype=bool)
        for k in seq[1:]:
            kl, kh = ops[k][:2]
            nan |= (((lo <= 0) & (hi >= 0)) & (np.isinf(kl) | np.isinf(kh))) | \
                   (((kl <= 0) & (kh >= 0)) & (np.isinf(lo) | np.isinf(hi)))
            values = np.stack([lo * kl, lo * kh, hi * kl, hi * kh])
            lo, hi = values.min(axis=0), values.max(axis=0)
    return np.where(nan, np.nan, lo), np.where(nan, np.nan, hi)


def _term_error(term: Sequence[Factor], ops: _Operands) -> tuple[np.ndarray, np.ndarray]:
    """``(size, err)``: bounds of the term's computed size and of its distance to the exact term. A rounded product
    of ``a~`` and ``b~`` is off ``a*b`` by at most ``|a~| err_b + |b| err_a + u |a~ b~|`` (plus an underflow)."""
    seq = _operands(term, ops)
    lo, hi, err = ops[seq[0]]
    size = np.maximum(np.abs(lo), np.abs(hi))
    for k in seq[1:]:
        klo, khi, kerr = ops[k]
        ksize = np.maximum(np.abs(klo), np.abs(khi))
        err = size * kerr + (ksize + kerr) * err + _U * size * ksize + _TINY
        size = size * ksize
    return size, err


def _term_slopes(term: Sequence[Factor], ops: _Operands) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Bounds of the exact term's derivative in each feature it reads: the sum over its distinct operands ``g`` (taken
    ``n`` times) of ``n g^(n-1) g'`` times the others' powers."""
    count: dict[Factor, int] = {}
    for k in _operands(term, ops):
        count[k] = count.get(k, 0) + 1
    powers = {k: iv.power(*ops.exact(k), n) for k, n in count.items()}
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for k, n in count.items():
        d = iv.mul(iv.scale(float(n), iv.power(*ops.exact(k), n - 1)), ops.slope(k))
        for other, pw in powers.items():
            if other != k:
                d = iv.mul(d, pw)
        j = int(k[1])
        out[j] = iv.add(out[j], d) if j in out else d
    return out


def _factor_code(f: Factor, python: bool) -> list[str]:
    """The factor as one or more operands of a left-to-right product."""
    func, j, arg = f
    x = f"obs[{j}]"
    if func == "pow":
        return [x] * int(arg)
    spelled = FUNCTIONS[func][1 if python else 2]
    inner = x if func not in _PERIODIC or arg == 1.0 else f"{cg.lit(arg)} * {x}"
    return [f"{spelled}({inner})"]


def _factor_text(f: Factor, names: Sequence[str], fmt: Any) -> str:
    func, j, arg = f
    if func == "pow":
        return names[j] if arg == 1 else f"{names[j]}^{int(arg)}"
    inner = names[j] if func not in _PERIODIC or arg == 1.0 else f"{fmt(arg)}*{names[j]}"
    return f"{func}({inner})"


def term_text(term: Sequence[Factor], names: Sequence[str], fmt: Any = None) -> str:
    """A term in named features: ``thigh_angle^2*sin(2*foot_vx)``.

    >>> term_text([("pow", 0, 2.0), ("sin", 1, 2.0)], ["thigh_angle", "foot_vx"])
    'thigh_angle^2*sin(2*foot_vx)'
    """
    fmt = fmt or partial(cg.compact, precision=3)
    return "*".join(_factor_text(f, names, fmt) for f in term)


@register_program
@dataclass
class EquationsProgram(ProgramBase):
    """One sparse equation per action over a library of terms, then clipping.

    Parameters
    ----------
    terms : list of list of (function, feature, argument)
        The library terms the equations use (see the module docstring); no empty term (the
        constant is ``intercept``).
    intercept : ndarray of shape (act_dim,)
        Constant part of each action.
    coef : ndarray of shape (act_dim, n_terms)
        Coefficient of each term in each action; zeros are absent.
    action_low, action_high : ndarray of shape (act_dim,)
        Actions are clipped to these bounds (``-inf``/``inf`` for none).
    term_scale : ndarray of shape (n_terms,), optional
        Typical size of each term (its standard deviation in the training states); the text lists
        a term's weight ``|coef| * scale`` first. Not part of the arithmetic.

    Examples
    --------
    >>> import numpy as np
    >>> p = EquationsProgram(terms=[[("pow", 0, 1)], [("pow", 0, 2), ("pow", 1, 1)]],
    ...                      intercept=[0.5], coef=[[2.0, -1.0]], action_low=[-10], action_high=[10])
    >>> p.predict(np.array([[3.0, 0.5]]))
    array([[2.]])
    >>> p.size()
    {'parameters': 3, 'nonzero_terms': 2, 'library_terms': 2}
    """

    terms: list[list[Factor]]
    intercept: np.ndarray
    coef: np.ndarray
    action_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    action_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    term_scale: np.ndarray | None = None
    obs_dim_: int | None = None

    kind = "equations"
    title = "Equations"
    rules_title = "Equations"
    equal_size_with = "tree"  # a sparsity study: equations against trees of no more parameters

    def __post_init__(self) -> None:
        self.intercept = np.asarray(self.intercept, dtype=np.float64)
        self.coef = np.asarray(self.coef, dtype=np.float64)
        if self.intercept.ndim != 1:
            raise ControllerFormatError(f"intercept must have shape (act_dim,); got {self.intercept.shape}.")
        if self.coef.ndim != 2 or self.coef.shape != (len(self.intercept), len(self.terms)):
            raise ControllerFormatError(f"coef must have shape (act_dim={len(self.intercept)}, n_terms="
                                        f"{len(self.terms)}); got {self.coef.shape}.")
        if not (np.all(np.isfinite(self.intercept)) and np.all(np.isfinite(self.coef))):
            raise ControllerFormatError("A coefficient of the equations is not finite.")
        used = [int(f[1]) for t in self.terms for f in t] if self.terms else []
        obs_dim = self.obs_dim_ if self.obs_dim_ is not None else (max(used) + 1 if used else 0)
        self.obs_dim_ = int(obs_dim)
        terms = []
        for t in self.terms:
            if not len(t):
                raise ControllerFormatError("A term of the equations has no factor; the constant is the intercept.")
            terms.append([_check_factor(f, self.obs_dim_) for f in t])
        self.terms = terms
        if self.term_scale is not None:
            self.term_scale = np.asarray(self.term_scale, dtype=np.float64)
            if self.term_scale.shape != (len(terms),) or not np.all(np.isfinite(self.term_scale)):
                raise ControllerFormatError(f"term_scale must hold {len(terms)} finite values.")
        self._init_bounds(self.action_low, self.action_high, len(self.intercept))

    @property
    def obs_dim(self) -> int:
        return int(self.obs_dim_ or 0)

    @property
    def act_dim(self) -> int:
        return int(self.coef.shape[0])

    @property
    def n_terms(self) -> int:
        return int(np.count_nonzero(self.coef))

    def size(self) -> dict[str, int]:
        """``parameters`` (intercepts plus non-zero coefficients), ``nonzero_terms``, ``library_terms`` used."""
        return {"parameters": self.act_dim + self.n_terms, "nonzero_terms": self.n_terms,
                "library_terms": int(np.count_nonzero(np.any(self.coef != 0.0, axis=0)))}

    def affine_pieces(self) -> AffinePieces:
        """One piece, affine in the library terms (``inputs`` is :meth:`term_values`): fine-tuning on the return
        trains the coefficients and keeps the terms."""
        return AffinePieces(lambda X: np.zeros(len(X), dtype=np.int64), self.intercept[None].copy(),
                            self.coef[None].copy(), ["equations"], inputs=self.term_values)

    def with_affine_pieces(self, intercept: np.ndarray, coef: np.ndarray) -> EquationsProgram:
        return EquationsProgram(terms=self.terms, intercept=intercept[0], coef=coef[0], action_low=self.action_low,
                                action_high=self.action_high, term_scale=self.term_scale, obs_dim_=self.obs_dim)

    def pruned(self) -> EquationsProgram:
        """The same equations without the terms no action uses."""
        keep = np.flatnonzero(np.any(self.coef != 0.0, axis=0))
        return EquationsProgram(
            terms=[self.terms[t] for t in keep], intercept=self.intercept, coef=self.coef[:, keep],
            action_low=self.action_low, action_high=self.action_high, obs_dim_=self.obs_dim,
            term_scale=None if self.term_scale is None else self.term_scale[keep])

    # ------------------------------------------------------------------ arithmetic
    def term_values(self, X: np.ndarray, which: Sequence[int] | None = None) -> np.ndarray:
        """``(n, n_terms)``: every term at every row of ``X`` (the arithmetic above); with ``which``, only those
        terms are computed (the other columns are 0)."""
        X = np.asarray(X, dtype=np.float64)
        out = np.zeros((len(X), len(self.terms)))
        for t in range(len(self.terms)) if which is None else which:
            term = self.terms[t]
            v: np.ndarray | None = None
            for func, j, arg in term:
                x = X[:, j]
                if func == "pow":
                    for _ in range(int(arg)):
                        v = x.copy() if v is None else v * x
                    continue
                inner = x if func not in _PERIODIC or arg == 1.0 else arg * x
                with np.errstate(over="ignore", invalid="ignore"):
                    fx = _UFUNCS[func](inner).astype(np.float64) if len(x) else np.zeros(0)
                v = fx if v is None else v * fx
            out[:, t] = v if v is not None else 1.0
        return out

    def action_bounds(self, lower: Any, upper: Any, *, clip: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the actions :meth:`predict` computes, rounding and all, at every state of a box.

        Two bounds, of which the tighter is kept. *Step by step*: a product of a term's operands
        takes its extremes at corners of their ranges (or at 0), because rounding to nearest keeps
        the order of real numbers and their signs; so do ``c * term`` and each sum, so these bounds
        hold for the computed values as they are. A power reuses one feature's range (``x^2`` over
        ``[-1, 2]`` is ``[0, 4]``); ``sin`` and ``cos`` are monotone between their extremes and reach
        ``+-1`` wherever ``w * x`` may pass ``pi/2 + k*pi`` (``k*pi``); ``tanh`` and ``exp`` are
        monotone, ``abs`` is exact. *Centred*: the exact actions at the box's centre plus the
        derivatives' bounds times the distance from it (the mean value theorem), plus a bound of
        the rounding error of the whole computation; it shrinks with the square of the box, where
        the first shrinks with the box (terms sharing a feature are bounded apart). Bounds read
        off the C library's ``sin``, ``cos``, ``tanh`` and ``exp`` are widened by :data:`LIBM_ULPS`
        units in the last place, which covers libraries within 4 ulps of the exact value (glibc
        documents at most 2); the other arithmetic is rounded outward.

        Parameters
        ----------
        lower, upper : array-like of shape (obs_dim,) or (m, obs_dim)
            The box (one box per row), ``lower <= upper``.
        clip : bool, default True
            Bound the clipped actions (:meth:`predict`); ``False``: the unclipped ones
            (:meth:`raw_predict`).

        Returns
        -------
        low, high : ndarray of shape (act_dim,) or (m, act_dim)
            ``low <= predict(x) <= high`` for every ``x`` in the box; NaN where the arithmetic may
            give NaN inside it (``inf - inf``, ``0 * inf``).

        Examples
        --------
        >>> p = EquationsProgram(terms=[[("pow", 0, 2)], [("sin", 1, 2.0)]], intercept=[0.5], coef=[[1.0, -1.0]],
        ...                      action_low=[-1.0], action_high=[3.0])
        >>> low, high = p.action_bounds([-1.0, 0.0], [2.0, 1.0], clip=False)
        >>> float(low[0]) < -0.5 < 4.5 < float(high[0])  # x0^2 in [0, 4], sin(2*x1) in [0, 1]
        True
        >>> [round(float(v), 9) for v in (low[0], high[0])]
        [-0.5, 4.5]
        >>> p.action_bounds([-1.0, 0.0], [2.0, 1.0])[1]
        array([3.])
        >>> q = EquationsProgram(terms=[[("pow", 0, 1)], [("pow", 0, 2)]], intercept=[0.0], coef=[[-2.0, 1.0]])
        >>> [round(float(v), 6) for v in np.ravel(q.action_bounds([0.9], [1.1]))]  # x^2 - 2x is in [-1, -0.99]
        [-1.02, -0.98]
        """
        L, U = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
        one = L.ndim == 1
        L, U = np.atleast_2d(L), np.atleast_2d(U)
        if L.shape != U.shape or L.shape[1] != self.obs_dim:
            raise ValueError(f"lower and upper must both have shape (obs_dim={self.obs_dim},) or (m, {self.obs_dim}); "
                             f"got {np.shape(lower)} and {np.shape(upper)}.")
        ops = _Operands(L, U)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            lo, hi = self._stepwise_bounds(ops)
            clo, chi = self._centred_bounds(ops)
        keep = ~np.isnan(lo) & ~np.isnan(hi)  # NaN: the arithmetic may give NaN, whatever the centred bounds say
        lo, hi = np.where(keep, np.fmax(lo, clo), lo), np.where(keep, np.fmin(hi, chi), hi)
        if clip:
            lo, hi = self.clip(lo), self.clip(hi)
        return (lo[0], hi[0]) if one else (lo, hi)

    def _stepwise_bounds(self, ops: _Operands) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the unclipped computed actions, operation by operation (see :meth:`action_bounds`)."""
        lo = np.repeat(self.intercept[None, :], len(ops.L), axis=0)
        hi = lo.copy()
        terms: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for o in range(self.act_dim):
            for t in np.flatnonzero(self.coef[o]):
                if t not in terms:
                    terms[t] = _term_bounds(self.terms[t], ops)
                tl, th = terms[t]
                c = float(self.coef[o, t])
                zl, zh = (c * tl, c * th) if c > 0 else (c * th, c * tl)
                nan = ((hi[:, o] == np.inf) & (zl == -np.inf)) | ((lo[:, o] == -np.inf) & (zh == np.inf))
                lo[:, o], hi[:, o] = lo[:, o] + zl, hi[:, o] + zh
                lo[nan, o] = hi[nan, o] = np.nan
        return lo, hi

    def _centred_bounds(self, ops: _Operands) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the unclipped computed actions by the mean value theorem at the boxes' centres (see
        :meth:`action_bounds`); infinite or NaN where they do not help."""
        L, U = ops.L, ops.U
        C = L + (U - L) / 2
        y = self.raw_predict(C)
        dx = (iv.down(L - C), iv.up(U - C))
        lo, hi = np.empty_like(y), np.empty_like(y)
        errors = {t: _term_error(self.terms[t], ops) for t in np.flatnonzero(np.any(self.coef != 0.0, axis=0))}
        slopes = {t: _term_slopes(self.terms[t], ops) for t in errors}
        for o in range(self.act_dim):
            # the rounding error of y = b + sum c_t * term_t, as for a product (see _term_error)
            size, err = np.full(len(L), abs(float(self.intercept[o]))), np.zeros(len(L))
            grad: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            for t in np.flatnonzero(self.coef[o]):
                c = float(self.coef[o, t])
                tsize, terr = errors[t]
                zsize = abs(c) * tsize
                err = err + abs(c) * terr + _U * zsize + _TINY + _U * (size + zsize)
                size = size + zsize
                for j, d in slopes[t].items():
                    d = iv.scale(c, d)
                    grad[j] = iv.add(grad[j], d) if j in grad else d
            err = iv.up(2.0 * (1.0 + 1e-10) * err)  # at the centre and at x; a margin for the rounding of err
            z = (iv.down(y[:, o] - err), iv.up(y[:, o] + err))
            for j, d in grad.items():
                z = iv.add(z, iv.mul(d, (dx[0][:, j], dx[1][:, j])))
            lo[:, o], hi[:, o] = z
        return lo, hi

    def widened(self, columns: Sequence[int], obs_dim: int) -> EquationsProgram:
        """The same equations, feature ``i`` read from column ``columns[i]`` of a wider observation."""
        widen_columns(np.zeros(self.obs_dim), columns, obs_dim)  # checks the columns
        cols = [int(c) for c in columns]
        terms = [[(f, cols[j], arg) for f, j, arg in term] for term in self.terms]
        return EquationsProgram(terms=terms, intercept=self.intercept, coef=self.coef, action_low=self.action_low,
                                action_high=self.action_high, term_scale=self.term_scale, obs_dim_=obs_dim)

    exact_shapley = True

    def shapley_values(self, X: np.ndarray, background: np.ndarray,
                       weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact Shapley values of the unclipped equations: each term is a game on its own features
        (:func:`interp_rl._shapley.product_terms_shapley`)."""
        factors = []
        for term in self.terms:
            by_feature: dict[int, list[Factor]] = {}
            for f in term:
                by_feature.setdefault(int(f[1]), []).append(f)
            factors.append({j: partial(self._factor_column, fs) for j, fs in by_feature.items()})
        return product_terms_shapley(factors=factors, coef=self.coef, X=X, background=background,
                                     weights=weights, intercept=self.intercept)

    def _factor_column(self, factors: list[Factor], v: np.ndarray) -> np.ndarray:
        """The product of ``factors`` (all on one feature) at the values ``v`` of that feature."""
        j = int(factors[0][1])
        Z = np.zeros((len(v), self.obs_dim))
        Z[:, j] = v
        one = EquationsProgram(terms=[factors], intercept=[0.0], coef=[[1.0]], obs_dim_=self.obs_dim)
        return one.term_values(Z)[:, 0]

    def raw_predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        T = self.term_values(X, np.flatnonzero(np.any(self.coef != 0.0, axis=0)).tolist())
        y = np.repeat(self.intercept[None, :], len(X), axis=0)
        for o in range(self.act_dim):
            for t in np.flatnonzero(self.coef[o]):  # term order, one add each
                y[:, o] = y[:, o] + self.coef[o, t] * T[:, t]
        return y

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        coef = [[int(o), int(t), float(self.coef[o, t])] for o, t in np.argwhere(self.coef != 0.0)]
        d: dict[str, Any] = {
            "kind": self.kind, "version": KIND_VERSION, "obs_dim": self.obs_dim, "act_dim": self.act_dim,
            "terms": [[[f, int(j), float(a)] for f, j, a in t] for t in self.terms],
            "intercept": self.intercept.tolist(), "coef": coef, **self._bounds_dict()}
        if self.term_scale is not None:
            d["term_scale"] = self.term_scale.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EquationsProgram:
        try:
            version = int(d.get("version", KIND_VERSION))
            if version > KIND_VERSION:
                raise ControllerFormatError(f"The equations are in version {version} of their format; this "
                                            f"interp-rl reads up to version {KIND_VERSION}: upgrade it.")
            terms = d["terms"]
            coef = np.zeros((int(d["act_dim"]), len(terms)))
            for o, t, c in d["coef"]:
                if not (0 <= int(o) < coef.shape[0] and 0 <= int(t) < coef.shape[1]):
                    raise ControllerFormatError(f"The equations have a coefficient ({o}, {t}) outside their shape "
                                                f"{coef.shape}.")
                coef[int(o), int(t)] = float(c)
            return cls(terms=terms, intercept=d["intercept"], coef=coef,
                       action_low=[float(v) for v in d["action_low"]],
                       action_high=[float(v) for v in d["action_high"]],
                       term_scale=d.get("term_scale"), obs_dim_=int(d["obs_dim"]))
        except ControllerFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ControllerFormatError(f"The equations are malformed: {type(exc).__name__}: {exc}.") from None

    # ------------------------------------------------------------------ text
    def weights(self) -> np.ndarray:
        """``(act_dim, n_terms)``: ``|coef| * term_scale`` (``|coef|`` without scales), what the text sorts by."""
        scale = self.term_scale if self.term_scale is not None else np.ones(len(self.terms))
        return np.abs(self.coef) * scale[None, :]

    def ordered_terms(self, out: int) -> list[int]:
        """Action ``out``'s terms, heaviest first (ties: term order)."""
        w = self.weights()[out]
        return sorted(np.flatnonzero(self.coef[out]).tolist(), key=lambda t: (-w[t], t))

    def equation(self, controller: Controller, out: int, fmt: Any) -> str:
        names = controller.feature_names
        parts = [fmt(float(self.intercept[out]))] if self.intercept[out] != 0.0 else []
        for t in self.ordered_terms(out):
            c = float(self.coef[out, t])
            term = f"{fmt(abs(c))}*{term_text(self.terms[t], names, fmt)}"
            parts.append((("- " if c < 0 else "+ ") if parts else ("-" if c < 0 else "")) + term)
        return f"{controller.actions[out].label} = {' '.join(parts) or fmt(0.0)}"

    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
        """One equation per action in named features, heaviest term first, then the units of what they read.

        >>> from interp_rl.program import Controller, Signal
        >>> p = EquationsProgram(terms=[[("pow", 0, 1)], [("pow", 1, 1)]], intercept=[0.0], coef=[[0.42, -1.3]])
        >>> print(p.explain(Controller(p, [Signal("thigh_angle", "rad"), Signal("foot_vx", "m/s")],
        ...                            [Signal("thigh_torque")])))
        thigh_torque = -1.300*foot_vx + 0.420*thigh_angle
        where thigh_angle [rad], foot_vx [m/s]
        """
        fmt = partial(cg.fixed, precision=precision)
        lines = [self.equation(controller, o, fmt) for o in range(self.act_dim)]
        used = sorted({f[1] for t in np.flatnonzero(np.any(self.coef != 0.0, axis=0)) for f in self.terms[t]})
        units = [controller.features[j].label for j in used if controller.features[j].unit]
        if units:
            lines.append("where " + ", ".join(units))
        note = self.clip_note(controller, fmt)
        return "\n".join(lines + ([note] if note else []))

    def explain_decision(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> str:
        """Each equation, then every term's value and contribution for ``x``, heaviest contribution first."""
        x = np.asarray(x, dtype=np.float64).ravel()
        fmt = partial(cg.compact, precision=precision)
        T = self.term_values(x[None, :])[0]
        raw = self.raw_predict(x[None, :])[0]
        clipped = self.clip(raw)
        lines = []
        for o in range(self.act_dim):
            lines.append(self.equation(controller, o, fmt))
            terms = sorted(np.flatnonzero(self.coef[o]).tolist(), key=lambda t: -abs(self.coef[o, t] * T[t]))
            lines += [f"    {term_text(self.terms[t], controller.feature_names, fmt)} = {fmt(float(T[t]))}"
                      f" contributes {fmt(float(self.coef[o, t] * T[t]))}" for t in terms]
            a, b = cg.apart(float(raw[o]), float(clipped[o]), precision)
            line = f"  = {a}"
            if clipped[o] != raw[o]:
                line += f" → clipped to {b}"
            lines.append(line)
        return "\n".join(lines)

    def to_dot(self, controller: Controller, *, obs: np.ndarray | None = None, states: np.ndarray | None = None,
               max_depth: int | None = None, title: str | None = None, precision: int = 3,
               **options: Any) -> str:
        """Features, then terms, then actions; an edge per non-zero coefficient (blue +, red -).

        With ``states`` an edge's width follows the typical size of the term there, ``|c| * std(term)``;
        with ``obs`` features and actions show their values.
        """
        from interp_rl.dot import dot_action_nodes, dot_attrs, dot_coefficient_edge, dot_header, dot_label

        if options:
            raise TypeError(f"to_dot of an equations program takes no option {sorted(options)[0]!r}.")
        fmt = partial(cg.compact, precision=precision)
        names = controller.feature_names
        used_terms = np.flatnonzero(np.any(self.coef != 0.0, axis=0)).tolist()
        if states is not None and len(states):
            scale = self.term_values(np.asarray(states, dtype=np.float64)).std(axis=0)
            weight = np.abs(self.coef) * scale[None, :]
        else:
            weight = self.weights()
        peak = float(weight.max(initial=0.0)) or 1.0
        values = self.predict(np.asarray(obs, dtype=np.float64)[None, :])[0] if obs is not None else None
        out = dot_header(controller, title=title, fmt=fmt, rankdir="LR")
        features = sorted({f[1] for t in used_terms for f in self.terms[t]})
        for j in features:
            text = [controller.features[j].label] + ([f"= {fmt(float(obs[j]))}"] if obs is not None else [])
            out.append(f"  f{j} {dot_attrs({'label': dot_label(text)})};")
        for t in used_terms:
            single = len(self.terms[t]) == 1 and self.terms[t][0][0] == "pow" and self.terms[t][0][2] == 1
            if single:
                continue  # a plain feature: its edges go straight to the actions
            label = dot_label([term_text(self.terms[t], names, fmt)])
            out.append(f"  t{t} {dot_attrs({'label': label, 'shape': 'ellipse'})};")
            for j in sorted({f[1] for f in self.terms[t]}):
                out.append(f"  f{j} -> t{t} {dot_attrs({'color': _GREY, 'arrowhead': 'none'})};")
        out += dot_action_nodes(controller, self.intercept, values, fmt)
        for o in range(self.act_dim):
            for t in np.flatnonzero(self.coef[o]):
                single = len(self.terms[t]) == 1 and self.terms[t][0][0] == "pow" and self.terms[t][0][2] == 1
                src = f"f{self.terms[t][0][1]}" if single else f"t{t}"
                out.append(dot_coefficient_edge(src, f"a{o}", float(self.coef[o, t]),
                                                float(weight[o, t]) / peak, fmt))
        out.append("}")
        return "\n".join(out)

    # ------------------------------------------------------------------ code
    def _body(self, python: bool) -> list[str]:
        end = "" if python else ";"
        lines: list[str] = []
        if python and any(f[0] == "exp" for t in self.terms for f in t):
            lines += ["def _exp(v):", "    try:", "        return math.exp(v)", "    except OverflowError:",
                      "        return math.inf"]
        for o in range(self.act_dim):
            parts = [cg.lit(self.intercept[o])]
            for t in np.flatnonzero(self.coef[o]):
                c = float(self.coef[o, t])
                operands = [op for f in self.terms[t] for op in _factor_code(f, python)]
                product = operands[0] if len(operands) == 1 else f"({' * '.join(operands)})"
                parts.append(f"{'-' if math.copysign(1.0, c) < 0 else '+'} {cg.lit(abs(c))} * {product}")
            lines += cg.assignment("", f"y{o}", parts, end, python=python)
        return lines or (["pass"] if python else [])

    def python_body(self, controller: Controller) -> list[str]:
        """``y0 = c0 + c1 * (obs[0] * obs[0]) - c2 * math.sin(2.0 * obs[3]) ...`` per action."""
        return self._body(python=True)

    def c_body(self, controller: Controller) -> list[str]:
        """``y0 = c0 + c1 * (obs[0] * obs[0]) - c2 * sin(2.0 * obs[3]) ...;`` per action."""
        return self._body(python=False)

    def _onnx_term(self, graph: OnnxGraph, term: Sequence[Factor]) -> str:
        """ONNX: one term ``(N, 1)``, its factors multiplied left to right (a power as repeated factors)."""
        v: str | None = None
        for func, j, arg in term:
            x = graph.column(j)
            if func == "pow":
                operands = [x] * int(arg)
            else:
                inner = x if func not in _PERIODIC or arg == 1.0 else graph.op("Mul", graph.const(arg), x)
                operands = [graph.op(func.capitalize(), inner)]  # Sin, Cos, Tanh, Exp, Abs
            for op in operands:
                v = op if v is None else graph.op("Mul", v, op)
        assert v is not None  # a term has at least one factor (checked on construction)
        return v

    def onnx_graph(self, graph: OnnxGraph) -> str:
        """Each term used (:meth:`term_values`' arithmetic), then per action ``y = intercept`` and
        ``y = y + coef_t * term_t`` in term order, as :meth:`predict` adds them. ``sin``, ``cos``, ``tanh`` and
        ``exp`` are the runtime's, which may differ from the C library's in the last bits."""
        used = np.flatnonzero(np.any(self.coef != 0.0, axis=0))
        values = {int(t): self._onnx_term(graph, self.terms[t]) for t in used}
        columns = []
        for o in range(self.act_dim):
            y: str | None = None
            for t in np.flatnonzero(self.coef[o]):
                term = graph.op("Mul", graph.const(self.coef[o, t]), values[int(t)])
                y = graph.op("Add", graph.const(self.intercept[o]) if y is None else y, term)
            columns.append(y if y is not None else graph.rows([self.intercept[o]]))
        return graph.concat_columns(columns)
