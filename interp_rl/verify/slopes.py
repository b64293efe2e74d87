"""Monotone and Lipschitz properties of piecewise-affine controllers: slopes inside regions, jumps between them.

Along a line parallel to feature ``f``, a piecewise-affine controller's action changes in two ways:
inside a region by the acting piece's slope (zero where the action is clipped), and where the line
crosses from one region into the next by the jump between the two pieces there. So "``a`` never
falls as ``f`` grows" holds exactly when no region has a slope of the wrong sign where the action is
not clipped, over a stretch of positive length along ``f``, and no crossing along ``f`` jumps the
wrong way; a Lipschitz bound ``L`` holds exactly when every such slope is at most ``L`` and no
crossing jumps at all. Each check is a linear program (:func:`interp_rl.verify.lp.maximise`);
each counterexample is a pair of states, ``f`` moved, that ``predict`` shows breaking the property.

``when`` is taken per conjunction: the pair's two states both satisfy the same conjunction.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from interp_rl.program import Controller, Region
from interp_rl.verify.lp import maximise
from interp_rl.verify.properties import Inequality
from interp_rl.verify.prove import Counterexample, Verdict, _pieces_of, _rounding, _System, systems

if TYPE_CHECKING:
    from interp_rl.verify.kinds.pair import PairProperty

__all__ = ["decide_slope"]


def _label(controller: Controller, x: np.ndarray) -> str:
    pieces = controller.program.affine_pieces()
    p = int(pieces.assign(x[None, :])[0])
    return pieces.labels[p] if pieces.labels else f"piece {p}"


def _pair_breaks(controller: Controller, prop: PairProperty, x1: np.ndarray, x2: np.ndarray) -> Counterexample | None:
    """The pair ``(x1, x2)`` (``x2`` further along the feature; both checked to lie in the domain and in ``when``
    by the caller) as a counterexample, if ``predict`` breaks the property between them."""
    f, k = prop.feature, prop.action
    h = float(x2[f] - x1[f])
    if not h > 0:
        return None
    a = controller.program.predict(np.stack([x1, x2]))
    violation = prop.change_violation(float(a[1, k] - a[0, k]), h)
    if not violation > 0:
        return None
    return Counterexample(x1.copy(), a[0], _label(controller, x1), prop.then_text[0], violation, x2.copy(), a[1],
                          _label(controller, x2))


def _inside(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, when: list[Inequality], act_dim: int) -> bool:
    if not (np.all(x >= lo) and np.all(x <= hi)):
        return False
    zeros = np.zeros((1, act_dim))
    return all(bool(w.holds(x[None, :], zeros)[0]) for w in when)


def _stretch(sysm: _System, f: int, z: tuple[np.ndarray, float] | None, low: float, high: float
             ) -> tuple[np.ndarray, float] | None:
    """A point ``x`` and the largest ``t`` such that ``x +- t e_f`` stays in the system (and, given the piece's
    output ``z = z0 + zc @ x``, strictly inside the action's bounds); ``None`` when no stretch of positive length
    exists."""
    n = len(sysm.lo)
    rows, rhs = [sysm.A], [sysm.b]
    col = np.abs(sysm.A[:, f]) if len(sysm.A) else np.zeros(0)
    slack = [col]
    if z is not None:
        zc, z0 = z
        s = abs(float(zc[f]))
        if math.isfinite(high):
            rows.append(zc[None, :])
            rhs.append(np.array([high - z0]))
            slack.append(np.array([s + 1e-12]))
        if math.isfinite(low):
            rows.append(-zc[None, :])
            rhs.append(np.array([z0 - low]))
            slack.append(np.array([s + 1e-12]))
    e = np.zeros(n)
    e[f] = 1.0
    rows += [e[None, :], -e[None, :]]
    rhs += [np.array([sysm.hi[f]]), np.array([-sysm.lo[f]])]
    slack += [np.ones(1), np.ones(1)]
    A = np.hstack([np.vstack(rows), np.concatenate(slack)[:, None]])
    b = np.concatenate(rhs)
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    width = float(sysm.hi[f] - sysm.lo[f])
    if not width > 0:
        return None
    o = maximise(cost, 0.0, np.append(sysm.lo, 0.0), np.append(sysm.hi, width / 2), A, b)
    if o.status != "optimal" or o.x is None or not o.x[-1] > 0:
        return None
    return o.x[:n], float(o.x[-1])


def _faces(regions: list[Region], f: int) -> list[tuple[Region, Region, np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray]]:
    """Where a line along feature ``f`` leaves region ``P`` for region ``Q``: ``(P, Q, lo, hi, A, b)`` of the
    face (closed; for boxes ``x_f`` is ``P``'s upper bound there and ``Q``'s lower bound is the next float)."""
    out = []
    boxes = all(len(r.A) == 0 for r in regions)
    for i, P in enumerate(regions):
        for j, Q in enumerate(regions):
            if i == j or P.piece == Q.piece and boxes:
                continue
            if boxes:
                if not (P.upper[f] < Q.lower[f] and float(np.nextafter(P.upper[f], np.inf)) == Q.lower[f]):
                    continue
                lo, hi = np.maximum(P.lower, Q.lower), np.minimum(P.upper, Q.upper)
                lo[f] = hi[f] = P.upper[f]
                if np.any(lo > hi):
                    continue
                out.append((P, Q, lo, hi, np.zeros((0, len(lo))), np.zeros(0)))
            elif i < j:
                out.append((P, Q, np.maximum(P.lower, Q.lower), np.minimum(P.upper, Q.upper),
                            np.vstack([P.A, Q.A]), np.concatenate([P.b, Q.b])))
    return out


def _order(P: Region, Q: Region, x: np.ndarray, f: int, width: float) -> tuple[int, float] | None:
    """``(+1 or -1, h)``: whether a step of ``h`` along ``f`` from the face point ``x`` leads from ``P`` into ``Q``
    (+1) or from ``Q`` into ``P`` (-1); ``None`` when the face lies along ``f``."""

    def within(r: Region, y: np.ndarray) -> bool:
        return bool(np.all(y >= r.lower) and np.all(y <= r.upper) and np.all(r.A @ y <= r.b + 1e-12 * (1 + abs(r.b))))

    for rel in (1e-6, 1e-8, 1e-10):
        h = rel * max(width, 1e-300)
        lo_x, hi_x = x.copy(), x.copy()
        lo_x[f] -= h
        hi_x[f] += h
        if within(P, lo_x) and within(Q, hi_x) and not within(Q, lo_x):
            return 1, h
        if within(Q, lo_x) and within(P, hi_x) and not within(P, lo_x):
            return -1, h
    return None


def decide_slope(controller: Controller, prop: PairProperty, lo: np.ndarray, hi: np.ndarray,
                 regions: list[Region] | None = None) -> Verdict:
    """Decide a property of how an action changes along a feature (``monotone``, ``lipschitz``: a
    :class:`~interp_rl.verify.kinds.pair.PairProperty`, which says which slopes and jumps break it) on the box
    ``[lo, hi]`` (see the module docstring)."""
    start = time.perf_counter()
    prog = controller.program
    regions = prog.regions() if regions is None else regions
    squash = prog.affine_pieces().squash
    f, k = prop.feature, prop.action
    low, high = float(prog.action_low[k]), float(prog.action_high[k])
    verdict = Verdict(prop.name, "proved")
    reasons: list[str] = []
    tally = 0
    best: Counterexample | None = None
    n_checked = 0
    for when in prop.when:
        sys_list = systems(regions, when, lo, hi)
        n_checked += len(sys_list)
        # 1. slopes inside each region
        for sysm in sys_list:
            if best is not None:
                break
            r = sysm.region
            s = float(r.coef[k, f])
            gain = (high - low) / 2 if squash == "tanh" else 1.0  # the most the squash multiplies a slope by
            if prop.slope_keeps(s, gain):
                continue
            z = None if squash == "tanh" else (r.coef[k], float(r.intercept[k]))
            got = _stretch(sysm, f, z, low, high)
            tally += 1
            if got is None:
                continue
            x, t = got
            x1, x2 = x.copy(), x.copy()
            x1[f] -= t * 0.5
            x2[f] += t * 0.5
            cex = None
            if _inside(x1, sysm.lo, sysm.hi, when, prog.act_dim) and _inside(x2, sysm.lo, sysm.hi, when, prog.act_dim):
                cex = _pair_breaks(controller, prop, x1, x2)
            verdict.failing.append(r.piece)
            if cex is None:
                reasons.append(f"{r.label} has slope {s:.3g} in the feature, but no pair of states was found that "
                               "shows it")
            elif best is None or cex.violation > best.violation:
                best = cex
        # 2. jumps where a line along the feature crosses from one region into another
        blo, bhi = (np.min([s.lo for s in sys_list], axis=0), np.max([s.hi for s in sys_list], axis=0)) if sys_list \
            else (lo, hi)
        region_of = {id(s.region): s for s in sys_list}
        for P, Q, flo, fhi, A, b in _faces([s.region for s in sys_list], f):
            sp, sq = region_of[id(P)], region_of[id(Q)]
            flo, fhi = np.maximum(flo, np.maximum(sp.lo, sq.lo)), np.minimum(fhi, np.minimum(sp.hi, sq.hi))
            if len(A) == 0:
                flo[f] = fhi[f] = P.upper[f]
            rows = [A, sp.A[len(P.A):], sq.A[len(Q.A):]]  # the `when` rows of the two systems
            A2 = np.vstack([r_ for r_ in rows if len(r_)]) if any(len(r_) for r_ in rows) else np.zeros((0, len(lo)))
            b2 = np.concatenate([b, sp.b[len(P.b):], sq.b[len(Q.b):]])
            if np.any(flo > fhi):
                continue
            if len(A) == 0:
                sign, first, second = 1, P, Q
            else:
                o = maximise(np.zeros(len(lo)), 0.0, flo, fhi, A2, b2)
                tally += 1
                if o.status != "optimal" or o.x is None:
                    continue
                order = _order(P, Q, o.x, f, float(bhi[f] - blo[f]))
                if order is None:
                    continue
                sign = order[0]
                first, second = (P, Q) if sign > 0 else (Q, P)
            if best is not None:  # one pair of states settles it; the rest only costs time
                break
            if _box_settles(prop, first, second, k, flo, fhi, low, high, squash):
                continue
            pair = Region(first.piece, first.label, flo, fhi, A2, b2,
                          np.array([first.intercept[k], second.intercept[k]]),
                          np.stack([first.coef[k], second.coef[k]]))
            lows, highs = np.array([low, low]), np.array([high, high])
            for d in prop.jump_directions():
                # violation: d * (a_first - a_second) > 0 (monotone: the later action is lower)
                ineq = Inequality(np.zeros(len(lo)), np.array([d, -d]), 0.0, False, prop.then_text[0])
                slack = _rounding(pair, 0, flo, fhi) + _rounding(pair, 1, flo, fhi)
                pieces = _pieces_of(pair, ineq, lows, highs, "clip") if squash != "tanh" else [
                    (d * (pair.coef[0] - pair.coef[1]), d * float(pair.intercept[0] - pair.intercept[1]),
                     np.zeros((0, len(lo))), np.zeros(0))]
                for c, c0, extra, erhs in pieces:  # type: ignore[misc]
                    AA = np.vstack([A2, extra]) if len(extra) else A2
                    bb = np.concatenate([b2, erhs]) if len(extra) else b2
                    o = maximise(c, c0, flo, fhi, AA, bb)
                    tally += 1
                    if o.status == "empty":
                        continue
                    if o.status != "optimal" or o.x is None:
                        reasons.append(o.reason)
                        continue
                    if o.bound + slack <= 0:
                        continue
                    verdict.failing.append(first.piece)
                    cex = _crossing(controller, prop, o.x, first, second, f, sp, sq, when, len(A) == 0,
                                    float(bhi[f] - blo[f]))
                    if cex is None:
                        reasons.append(f"the step from {first.label} to {second.label} may break it by up to "
                                       f"{o.bound + slack:.3g}, within rounding; no pair of states shows it")
                    elif best is None or cex.violation > best.violation:
                        best = cex
    verdict.failing = sorted(set(verdict.failing))
    if best is not None:
        verdict.status, verdict.counterexample = "refuted", best
    elif reasons:
        verdict.status, verdict.reason = "unknown", reasons[0]
    verdict.regions, verdict.programs, verdict.seconds = n_checked, tally, time.perf_counter() - start
    return verdict


def _box_settles(prop: PairProperty, first: Region, second: Region, k: int, lo: np.ndarray, hi: np.ndarray,
                 low: float, high: float, squash: str) -> bool:
    """Whether interval bounds on the face's box alone show the crossing keeps the property (no LP needed)."""
    def span(r: Region) -> tuple[float, float]:
        c, w = float(r.intercept[k]), r.coef[k]
        top = c + float(np.sum(np.maximum(w * lo, w * hi)))
        bottom = c + float(np.sum(np.minimum(w * lo, w * hi)))
        if squash == "tanh":
            return float(np.tanh(bottom)), float(np.tanh(top))  # order is all that matters: tanh is increasing
        return min(max(bottom, low), high), min(max(top, low), high)

    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return False
    (p_lo, p_hi), (q_lo, q_hi) = span(first), span(second)
    pad = 1e-9 * (1.0 + max(abs(p_lo), abs(p_hi), abs(q_lo), abs(q_hi)))
    return prop.jump_kept((p_lo, p_hi), (q_lo, q_hi), pad)  # a Lipschitz bound: never (only the LP shows no jump)


def _crossing(controller: Controller, prop: PairProperty, x: np.ndarray, first: Region, second: Region, f: int,
              sp: _System, sq: _System, when: list[Inequality], boxes: bool, width: float) -> Counterexample | None:
    """A pair of states straddling the face at ``x``, in ``first`` then ``second``, that breaks the property."""
    act_dim = controller.program.act_dim
    lo = np.minimum(sp.lo, sq.lo)
    hi = np.maximum(sp.hi, sq.hi)
    if boxes:
        x1, x2 = x.copy(), x.copy()
        x1[f], x2[f] = first.upper[f], second.lower[f]
        if _inside(x1, lo, hi, when, act_dim) and _inside(x2, lo, hi, when, act_dim):
            return _pair_breaks(controller, prop, x1, x2)
        return None
    for rel in (1e-9, 1e-7, 1e-5):
        h = rel * max(width, 1e-300)
        x1, x2 = x.copy(), x.copy()
        x1[f] -= h
        x2[f] += h
        if _inside(x1, lo, hi, when, act_dim) and _inside(x2, lo, hi, when, act_dim):
            cex = _pair_breaks(controller, prop, x1, x2)
            if cex is not None:
                return cex
    return None
