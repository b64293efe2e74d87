"""Deciding properties of controllers that are not piecewise affine (equations), by interval branch and bound.

The program bounds its actions over any box of states (``action_bounds(lower, upper)``, rounding
included: :meth:`interp_rl.kinds.equations.EquationsProgram.action_bounds`), so the largest value of
a requirement ``feat @ x + act @ a - rhs`` over a box has a rigorous upper bound. The search starts
from the domain box cut by ``when``'s single-feature bounds and keeps the boxes where that bound is
positive, the largest first; it halves each along its widest side (relative to the domain, weighted
by how much each feature moves the bounds, and only along features that move them). A box is
settled when the bound shows every requirement holds on all of it, or when a ``when`` inequality
provably fails on all of it. The centre of every box kept, and a local search (L-BFGS-B) from the
most violating of a few hundred sampled states, are tried on the controller's ``predict``.

* ``proved``: no box is left;
* ``refuted``: a state of the domain where ``when`` holds and ``predict`` breaks a requirement (the
  one breaking it most, among the states tried when it was found);
* ``unknown``: the box budget (``max_boxes``) or the time limit ran out first; the reason gives the
  share of the domain's volume (where ``when`` may hold) left unresolved, and by how much the
  requirement may fail there. A requirement that holds with no margin (it touches its bound, as
  ``(x - 1)^2 >= 0`` at ``x = 1``) ends there: the bounds over a box around the touching point stay
  above zero however small the box, and no state breaks it.

The search is deterministic: the same inputs give the same verdict, and the box budget, not the
clock, is the primary stop; ``time_limit`` is a safety net (a verdict it cuts short may differ on a
slower machine, and says so).

Examples
--------
>>> import numpy as np
>>> from interp_rl.kinds.equations import EquationsProgram
>>> from interp_rl.program import Controller, Signal
>>> from interp_rl.verify.properties import parse_properties
>>> prog = EquationsProgram(terms=[[("pow", 0, 2)], [("sin", 1, 1.0)]], intercept=[0.0], coef=[[1.0, 0.5]])
>>> ctrl = Controller(prog, [Signal("x"), Signal("y")], [Signal("u")])
>>> props = parse_properties('''
... [[property]]
... name = "small"
... then = ["u <= 1.6"]
... [[property]]
... name = "smaller"
... then = ["u <= 1.4"]
... ''', features=ctrl.features, actions=ctrl.actions)
>>> lo, hi = np.array([-1.0, -2.0]), np.array([1.0, 2.0])
>>> [decide_nonlinear(ctrl, p, lo, hi).status for p in props.properties]
['proved', 'refuted']
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from interp_rl.program import Controller
from interp_rl.validation import check_float, check_int
from interp_rl.verify.properties import Inequality, Property
from interp_rl.verify.prove import Counterexample, Verdict

__all__ = ["MAX_BOXES", "TIME_LIMIT", "decide_nonlinear"]

#: Default box budget of :func:`decide_nonlinear` (boxes whose bounds are computed, over all of ``when``).
MAX_BOXES = 200_000
#: Default time limit of :func:`decide_nonlinear`, in seconds (a safety net: the box budget stops first).
TIME_LIMIT = 10.0
#: Boxes split at once (their children's bounds are computed in one vectorised call).
_BATCH = 256
#: States sampled at the start, and how many of the most violating start a local search.
_SAMPLES, _STARTS = 512, 4

_U = float(np.finfo(np.float64).eps) / 2


def _upper_sums(terms: np.ndarray) -> np.ndarray:
    """Per row of ``terms`` ``(m, n)``, an upper bound of its exact sum that is exact in sign: ``<= 0`` (``< 0``)
    only where the exact sum is, so ``fsum`` of the row (what :meth:`Inequality.value` computes) is too. NaN, or
    ``inf`` meeting ``-inf``, gives ``inf``."""
    m, n = terms.shape
    out = np.full(m, np.inf)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.all(np.isfinite(terms), axis=1)
        s = terms.sum(axis=1)
        err = 1.01 * (n + 2) * _U * np.abs(terms).sum(axis=1) + 1e-300  # |naive sum - exact sum|, and its rounding
    top = s + err
    sure = finite & ((top < 0) | (s - err > 0)) & np.isfinite(top)
    out[sure] = top[sure]
    for i in np.flatnonzero(finite & ~sure):
        f = math.fsum(terms[i])
        out[i] = f if f <= 0 else float(np.nextafter(f, np.inf))
    inf = ~finite & ~np.any(np.isnan(terms), axis=1)
    up, down = np.any(terms == np.inf, axis=1), np.any(terms == -np.inf, axis=1)
    out[inf & down & ~up] = -np.inf
    return out


def _products(coef: np.ndarray, low: np.ndarray, high: np.ndarray, largest: bool) -> np.ndarray:
    """``(m, k)``: the largest (smallest) rounded ``coef_i * v_i`` for ``v_i`` in ``[low_i, high_i]``, per row."""
    with np.errstate(invalid="ignore", over="ignore"):
        a, b = coef * low, coef * high
    return np.maximum(a, b) if largest else np.minimum(a, b)


def _upper(ineq: Inequality, L: np.ndarray, U: np.ndarray, alo: np.ndarray, ahi: np.ndarray) -> np.ndarray:
    """Sign-exact upper bound of ``ineq.value`` over each box ``[L, U]`` with actions in ``[alo, ahi]``."""
    fi, ai = np.flatnonzero(ineq.feat), np.flatnonzero(ineq.act)
    terms = np.concatenate([_products(ineq.feat[fi], L[:, fi], U[:, fi], True),
                            _products(ineq.act[ai], alo[:, ai], ahi[:, ai], True),
                            np.full((len(L), 1), -ineq.rhs)], axis=1)
    return _upper_sums(terms)


def _fails(ineq: Inequality, upper: np.ndarray) -> np.ndarray:
    """Whether the requirement may fail, given :func:`_upper` (NaN: may)."""
    return ~((upper < 0) | ((upper == 0) & (not ineq.strict)))


def _excluded(when: Sequence[Inequality], L: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Boxes where some ``when`` inequality fails at every state."""
    out = np.zeros(len(L), dtype=bool)
    for w in when:
        fi = np.flatnonzero(w.feat)
        terms = np.concatenate([_products(-w.feat[fi], L[:, fi], U[:, fi], True), np.full((len(L), 1), w.rhs)],
                               axis=1)
        least = _upper_sums(terms)  # -(least value of the inequality)
        out |= (least <= 0) if w.strict else (least < 0)
    return out


def _tightened(lo: np.ndarray, hi: np.ndarray, when: Sequence[Inequality]) -> tuple[np.ndarray, np.ndarray]:
    """The domain box cut by ``when``'s single-feature inequalities (widened outward by a few floats: the
    inequalities stay, for the boxes and the concrete checks)."""
    blo, bhi = lo.astype(np.float64).copy(), hi.astype(np.float64).copy()
    for w in when:
        nz = np.flatnonzero(w.feat)
        if len(nz) != 1:
            continue
        j, c = int(nz[0]), float(w.feat[nz[0]])
        bound = w.rhs / c
        for _ in range(4):
            bound = float(np.nextafter(bound, np.inf if c > 0 else -np.inf))
        if c > 0:
            bhi[j] = min(bhi[j], bound)
        else:
            blo[j] = max(blo[j], bound)
    return blo, bhi


@dataclass
class _Search:
    """One ``when`` conjunction's search."""

    controller: Controller
    prop: Property
    when: list[Inequality]
    lo: np.ndarray
    """The domain box."""
    hi: np.ndarray
    deadline: float
    budget: int
    seed: int
    boxes: int = 0
    counterexample: Counterexample | None = None
    left: list[tuple[float, int, np.ndarray, np.ndarray, int]] = field(default_factory=list)
    """Unresolved boxes: ``(-bound, order, lower, upper, requirement)``."""
    atoms: list[tuple[float, np.ndarray, np.ndarray, int]] = field(default_factory=list)
    """Unresolved boxes too small to split: ``(bound, lower, upper, requirement)``."""
    volume: float = 0.0
    """Share of the domain's volume of the boxes where ``when`` may hold (an upper bound, tightening as boxes are
    settled)."""
    timed_out: bool = False

    # ------------------------------------------------------------------ concrete checks
    def check(self, X: np.ndarray) -> Counterexample | None:
        """The state of ``X`` that breaks a requirement most, if one lies in the domain, where ``when`` holds."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        ok = np.all((X >= self.lo) & (X <= self.hi), axis=1)
        zeros = np.zeros((len(X), self.controller.program.act_dim))
        for w in self.when:
            ok &= w.holds(X, zeros)
        if not ok.any():
            return None
        X = X[ok]
        with np.errstate(all="ignore"):  # a NaN action breaks the property like any other
            A = self.controller.program.predict(X)
        best: Counterexample | None = None
        for ineq in self.prop.then:
            with np.errstate(invalid="ignore", over="ignore"):  # the exact value only where a rough one may be >= 0
                terms = np.abs(X) @ np.abs(ineq.feat) + np.abs(A) @ np.abs(ineq.act) + abs(ineq.rhs)
                rough = X @ ineq.feat + A @ ineq.act - ineq.rhs
                maybe = ~(rough + 1e-12 * terms < 0)
            if not maybe.any():
                continue
            idx = np.flatnonzero(maybe)
            v = ineq.value(X[idx], A[idx])
            broken = ~ineq.holds(X[idx], A[idx])
            if broken.any():
                i = int(idx[np.flatnonzero(broken)[np.argmax(np.nan_to_num(v[broken], nan=np.inf))]])
                value = float(ineq.value(X[i], A[i])[0])
                if best is None or not value <= best.violation:
                    best = Counterexample(X[i].copy(), A[i].copy(), _label(self.controller, X[i]), ineq.text, value)
        return best

    def scores(self, X: np.ndarray) -> np.ndarray:
        """How much each state breaks the property (its largest requirement value), less a penalty where ``when``
        fails (``-1e300`` where the value is not a number)."""
        with np.errstate(all="ignore"):
            A = self.controller.program.predict(X)
        zeros = np.zeros_like(A)
        v = np.max(np.stack([r.value(X, A) for r in self.prop.then]), axis=0)
        miss = sum((np.maximum(w.value(X, zeros), 0.0) for w in self.when), np.zeros(len(X)))
        return np.where(np.isfinite(v), v - 1e3 * miss, -1e300)

    def local(self, starts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Counterexample | None:
        """A local search (L-BFGS-B on the violation) from each start, inside ``[lo, hi]``."""
        from scipy.optimize import minimize

        free = hi > lo
        if not free.any():
            return None
        found: Counterexample | None = None
        for x0 in starts:
            if time.perf_counter() > self.deadline:
                break
            full = x0.copy()

            def f(z: np.ndarray, full: np.ndarray = full) -> float:
                full[free] = z
                return -float(self.scores(full[None, :])[0])

            with np.errstate(all="ignore"):
                res = minimize(f, x0[free], method="L-BFGS-B", bounds=list(zip(lo[free], hi[free], strict=True)),
                               options={"maxiter": 50})
            x = x0.copy()
            x[free] = np.clip(res.x, lo[free], hi[free])
            cex = self.check(x)
            if cex is not None and (found is None or not cex.violation <= found.violation):
                found = cex
        return found

    # ------------------------------------------------------------------ bounds
    def bounds(self, L: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per box: excluded by ``when``, the largest bound of a requirement's value, and which requirement."""
        excluded = _excluded(self.when, L, U)
        alo, ahi = self.controller.program.action_bounds(L, U)
        alo, ahi = np.atleast_2d(alo), np.atleast_2d(ahi)
        ups = np.empty((len(L), len(self.prop.then)))
        for k, r in enumerate(self.prop.then):
            u = _upper(r, L, U, alo, ahi)
            ups[:, k] = np.where(_fails(r, u), np.nan_to_num(u, nan=np.inf), -np.inf)
        which = np.argmax(ups, axis=1)
        return excluded, ups[np.arange(len(L)), which], which

    def weights(self, root_lo: np.ndarray, root_hi: np.ndarray) -> np.ndarray:
        """How much each feature moves the bounds over the root box (0: never split it), the largest 1."""
        n = len(root_lo)
        L = np.repeat(root_lo[None, :], n + 1, axis=0)
        U = np.repeat(root_hi[None, :], n + 1, axis=0)
        mid = root_lo + (root_hi - root_lo) / 2
        L[np.arange(n), np.arange(n)] = U[np.arange(n), np.arange(n)] = mid
        alo, ahi = self.controller.program.action_bounds(L, U, clip=False)
        alo, ahi = np.atleast_2d(alo), np.atleast_2d(ahi)
        with np.errstate(invalid="ignore", over="ignore"):
            width = np.zeros(n + 1)
            for r in [*self.prop.then, *self.when]:
                width += (np.abs(r.feat) * (U - L)).sum(axis=1) + (np.abs(r.act) * (ahi - alo)).sum(axis=1)
            gain = width[-1] - width[:n]
        gain = np.where(np.isnan(gain) | (gain == np.inf), 1.0, np.maximum(gain, 0.0))
        top = float(gain.max(initial=0.0))
        return gain / top if top > 0 else np.ones(n)  # nothing moves them: split every feature alike

    # ------------------------------------------------------------------ the search
    def run(self) -> None:
        """Search until every box is settled, a counterexample is found, or the budget or the time runs out."""
        root_lo, root_hi = _tightened(self.lo, self.hi, self.when)
        if np.any(root_lo > root_hi):
            return
        width = self.hi - self.lo
        scale = np.where(width > 0, width, 1.0)
        self.volume = float(np.prod((root_hi - root_lo) / scale))
        excluded, bound, which = self.bounds(root_lo[None, :], root_hi[None, :])
        self.boxes = 1
        if excluded[0]:
            self.volume = 0.0
            return
        if bound[0] == -np.inf:
            return
        order_ = itertools.count()
        heap = self.left = [(-float(bound[0]), next(order_), root_lo, root_hi, int(which[0]))]
        rng = np.random.default_rng(self.seed)
        samples = np.vstack([root_lo + (root_hi - root_lo) / 2,
                             rng.uniform(root_lo, root_hi, size=(_SAMPLES, len(root_lo)))])
        self.counterexample = self.check(samples)
        if self.counterexample is not None:
            return
        weight = self.weights(root_lo, root_hi)
        while heap:
            if time.perf_counter() > self.deadline:
                self.timed_out = True
                break
            room = (self.budget - self.boxes) // 2
            if room <= 0:
                break
            popped = [heapq.heappop(heap) for _ in range(min(_BATCH, len(heap), room))]
            blo, bhi = np.array([b[2] for b in popped]), np.array([b[3] for b in popped])
            mid = blo + (bhi - blo) / 2
            score = np.where((weight > 0) & (mid > blo) & (mid < bhi), (bhi - blo) / scale * weight, -1.0)
            j = np.argmax(score, axis=1)
            rows = np.arange(len(popped))
            split = score[rows, j] >= 0
            for i in np.flatnonzero(~split):
                self.atoms.append((-popped[i][0], blo[i], bhi[i], popped[i][4]))
            if not split.any():
                continue
            rows, j = rows[split], j[split]
            left_hi, right_lo = bhi[rows].copy(), blo[rows].copy()
            left_hi[np.arange(len(rows)), j] = right_lo[np.arange(len(rows)), j] = mid[rows, j]
            L, U = np.concatenate([blo[rows], right_lo]), np.concatenate([left_hi, bhi[rows]])
            self.boxes += len(L)
            excluded, bound, which = self.bounds(L, U)
            sizes = np.prod((U - L) / scale, axis=1)
            self.volume -= float(sizes[excluded].sum())
            keep = np.flatnonzero(~excluded & (bound > -np.inf))
            if len(keep):
                cex = self.check(L[keep] + (U[keep] - L[keep]) / 2)
                if cex is not None:
                    self.counterexample = cex
                    return
            for i in keep:
                heapq.heappush(heap, (-float(bound[i]), next(order_), L[i], U[i], int(which[i])))
        if self.left or self.atoms:  # undecided: a local search from the most violating samples, then inside the
            best = np.argsort(-self.scores(samples), kind="stable")[:_STARTS]  # boxes that may fail most
            self.counterexample = self.local(samples[best], root_lo, root_hi)
            for _, _, blo, bhi, _ in sorted(self.left)[:_STARTS]:
                if self.counterexample is not None:
                    return
                self.counterexample = self.local((blo + (bhi - blo) / 2)[None, :], blo, bhi)

    def unresolved(self) -> tuple[float, float, int]:
        """Share of the domain's volume left, the largest bound there, and the requirement it belongs to."""
        width = self.hi - self.lo
        scale = np.where(width > 0, width, 1.0)
        boxes = [(-neg, blo, bhi, k) for neg, _, blo, bhi, k in self.left] + self.atoms
        share = float(np.prod((np.array([b[2] for b in boxes]) - np.array([b[1] for b in boxes])) / scale,
                              axis=1).sum())
        bound, _, _, k = max(boxes, key=lambda b: b[0])
        return share, bound, k


def _label(controller: Controller, x: np.ndarray) -> str:
    """The piece that acts at ``x`` (``equations``), or the program's kind."""
    if not controller.program.can("affine"):
        return controller.program.kind
    pieces = controller.program.affine_pieces()
    p = int(pieces.assign(x[None, :])[0])
    return pieces.labels[p] if pieces.labels else f"piece {p}"


def _percent(share: float) -> str:
    v = 100 * share
    return f"{v:.2g}%" if v >= 0.01 or v == 0 else f"{v:.1e}%"


def decide_nonlinear(controller: Controller, prop: Property, lo: np.ndarray, hi: np.ndarray, *,
                     max_boxes: int = MAX_BOXES, time_limit: float = TIME_LIMIT, seed: int = 0) -> Verdict:
    """Decide a ``rule`` or ``range`` property on the domain box ``[lo, hi]`` by interval branch and bound.

    Parameters
    ----------
    controller : Controller
        Its program bounds its actions over a box (``action_bounds``, as the equations kind does);
        otherwise the verdict is ``unknown`` and says so.
    prop : Property
        A ``rule`` or ``range`` property.
    lo, hi : ndarray of shape (obs_dim,)
        The domain box.
    max_boxes : int, default :data:`MAX_BOXES`
        Boxes to bound, over all of ``when``'s conjunctions; the primary stop.
    time_limit : float, default :data:`TIME_LIMIT`
        Seconds, a safety net.
    seed : int, default 0
        Seed of the states sampled to start the local search.

    Returns
    -------
    Verdict
        ``regions`` counts the boxes bounded; ``failing`` is ``[0]`` unless proved.
    """
    start = time.perf_counter()
    max_boxes = check_int(max_boxes, "max_boxes", "decide_nonlinear")
    time_limit = check_float(time_limit, "time_limit", "decide_nonlinear", low_open=True)
    if not prop.pointwise:
        raise ValueError(f"decide_nonlinear decides rule and range properties; {prop.name!r} is a {prop.kind} "
                         "property.")
    prog = controller.program
    if not hasattr(prog, "action_bounds"):
        return Verdict(prop.name, "unknown", f"a {prog.kind} program is not piecewise affine and does not bound its "
                                             "actions over a box", failing=[0])
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    deadline = start + time_limit
    searches: list[_Search] = []
    used = 0
    for i, when in enumerate(prop.when):
        s = _Search(controller, prop, when, lo, hi, deadline, (max_boxes - used) // (len(prop.when) - i), seed)
        s.run()
        used += s.boxes
        searches.append(s)
        if s.counterexample is not None:
            break
    seconds = time.perf_counter() - start
    found = [s.counterexample for s in searches if s.counterexample is not None]
    if found:
        return Verdict(prop.name, "refuted", counterexample=found[0], regions=used, seconds=seconds, failing=[0])
    open_ = [s for s in searches if s.left or s.atoms]
    if not open_:
        return Verdict(prop.name, "proved", regions=used, seconds=seconds)
    left = [s.unresolved() for s in open_]
    share = sum(u[0] for u in left)
    volume = sum(s.volume for s in searches)
    _, bound, k = max(left, key=lambda u: u[1])
    if any(s.timed_out for s in searches):
        why = f"undecided after {time_limit:g} s ({used:,} boxes)"
    elif any(s.left for s in open_):
        why = f"undecided after {used:,} boxes"
    else:
        why = f"undecided after {used:,} boxes: the boxes left are too small to split further"
    reason = (f"{why}: {_percent(share / volume if volume > 0 else 1.0)} of the domain's volume where `when` may "
              f"hold is unresolved; `{prop.then[k].text}` may fail there by at most {bound:.3g}, and no state "
              "found breaks it")
    return Verdict(prop.name, "unknown", reason, regions=used, seconds=seconds, failing=[0])
