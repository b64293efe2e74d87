"""Deciding properties of piecewise-affine controllers, region by region.

For every property and every region of the controller (:meth:`~interp_rl.program.ProgramBase.regions`),
the question "is there a state of the domain where ``when`` holds and the requirement fails?" is a
linear program: the region, the domain box and ``when`` are linear constraints, the acting piece is
affine, and clipping is handled exactly by splitting on whether each action is below, inside or
above its bounds (a tanh squash is monotone: the largest action comes from the largest affine
output). A property is ``proved`` when a rigorous upper bound of every violation
(:func:`interp_rl.verify.lp.maximise`, plus the rounding of the controller's own arithmetic) is not
positive; ``refuted`` only with a concrete state where the controller's ``predict`` violates it;
``unknown`` otherwise, with the reason.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interp_rl.program import Controller, Region
from interp_rl.verify.lp import maximise
from interp_rl.verify.properties import Inequality, Property

__all__ = ["STATUSES", "Counterexample", "Verdict", "decide"]

#: A verdict's ``status``.
STATUSES = ("proved", "refuted", "unknown")

_U = float(np.finfo(np.float64).eps) / 2


@dataclass
class Counterexample:
    """A state of the domain where the property fails, and what the controller does there."""

    state: np.ndarray
    action: np.ndarray
    region: str
    """The region that acts there (``leaf 3``, ``expert 2``)."""
    requirement: str
    """What fails, as the property file said it."""
    violation: float
    """By how much (in the requirement's own units; > 0)."""
    other_state: np.ndarray | None = None
    """Monotone and Lipschitz properties: the second state of the pair (the feature moved)."""
    other_action: np.ndarray | None = None
    other_region: str = ""

    def to_dict(self, controller: Controller) -> dict[str, Any]:
        out: dict[str, Any] = {
            "state": dict(zip(controller.feature_names, map(float, self.state), strict=True)),
            "action": dict(zip(controller.action_names, map(float, self.action), strict=True)),
            "region": self.region, "requirement": self.requirement, "violation": float(self.violation)}
        if self.other_state is not None and self.other_action is not None:
            out["other_state"] = dict(zip(controller.feature_names, map(float, self.other_state), strict=True))
            out["other_action"] = dict(zip(controller.action_names, map(float, self.other_action), strict=True))
            out["other_region"] = self.other_region
        return out


@dataclass
class Verdict:
    """What :func:`decide` (and :func:`interp_rl.verify.verify`) concluded about one property."""

    name: str
    status: str
    reason: str = ""
    counterexample: Counterexample | None = None
    regions: int = 0
    """Regions checked (for equations, boxes bounded: :mod:`interp_rl.verify.nonlinear`)."""
    programs: int = 0
    """Linear programs solved."""
    seconds: float = 0.0
    failing: list[int] = field(default_factory=list)
    """Pieces (indices of ``affine_pieces``) where a violation was found or could not be ruled out."""


def _label(controller: Controller, x: np.ndarray) -> str:
    pieces = controller.program.affine_pieces()
    p = int(pieces.assign(x[None, :])[0])
    return pieces.labels[p] if pieces.labels else f"piece {p}"


def _step(v: float, k: int) -> float:
    """``v`` moved ``|k|`` floats up (``k > 0``) or down (``k < 0``); ``v`` itself for ``k == 0``."""
    return float(np.nextafter(v, np.inf if k > 0 else -np.inf)) if k else v


def _rounding(region: Region, k: int, lo: np.ndarray, hi: np.ndarray) -> float:
    """A bound of the rounding error of the piece's ``k``-th output, summed left to right on the box."""
    w = region.coef[k]
    n = int(np.count_nonzero(w))
    gamma = 1.01 * n * _U / (1 - n * _U)
    reach = np.maximum(np.abs(lo), np.abs(hi))
    own = gamma * (abs(float(region.intercept[k])) + float(np.abs(w) @ reach)) if n else 0.0
    if region.rounding is not None:  # the kind computes otherwise (a network's factored sums): its own bound too
        own += float(region.rounding(lo, hi)[1][k])
    return own


@dataclass
class _System:
    """The constraints of one region meeting one ``when`` conjunction inside the domain."""

    region: Region
    lo: np.ndarray
    hi: np.ndarray
    A: np.ndarray
    b: np.ndarray
    when: list[Inequality]


def systems(regions: list[Region], when: list[Inequality], lo: np.ndarray, hi: np.ndarray) -> list[_System]:
    """Each region cut by ``when`` and the domain box (single-feature inequalities tighten the box; the
    router's rows get a slack covering the rounding of its scores); regions the box alone empties are dropped."""
    blo, bhi = lo.copy(), hi.copy()
    rows, rhs = [], []
    for w in when:
        nz = np.flatnonzero(w.feat)
        if len(nz) == 1:
            j, c = int(nz[0]), float(w.feat[nz[0]])
            bound = w.rhs / c
            # x_j <= bound, or < bound: the next float inward. Exact when |c| == 1, as people write them; else
            # widened by one float outward to cover the division's rounding (the concrete check decides).
            step = (1 if w.strict else 0) if abs(c) == 1.0 else (0 if w.strict else -1)
            if c > 0:
                bhi[j] = min(bhi[j], _step(bound, -step))
            else:
                blo[j] = max(blo[j], _step(bound, step))
        else:
            rows.append(w.feat)
            rhs.append(w.rhs)
    reach = np.maximum(np.abs(lo), np.abs(hi))
    out = []
    for r in regions:
        rlo, rhi = np.maximum(blo, r.lower), np.minimum(bhi, r.upper)
        if np.any(rlo > rhi):
            continue
        slack = 1e-12 * (np.abs(r.b) + np.abs(r.A) @ reach) if len(r.A) else np.zeros(0)
        if r.rounding is not None and len(r.A):  # rows the kind computes otherwise: its bound, if larger
            slack = np.maximum(slack, r.rounding(lo, hi)[0])
        A = np.vstack([r.A, *rows]) if rows else r.A
        b = np.concatenate([r.b + slack, rhs]) if rows else r.b + slack
        out.append(_System(r, rlo, rhi, A.reshape(-1, len(lo)), b, when))
    return out


def _pieces_of(region: Region, ineq: Inequality, low: np.ndarray, high: np.ndarray, squash: str
               ) -> list[tuple[np.ndarray, float, np.ndarray, np.ndarray]] | str:
    """The requirement's violation ``feat @ x + act @ clip(z(x)) - rhs`` as affine pieces ``(c, c0, A, b)``,
    one per way the involved actions sit against their bounds; a string says why it cannot be done."""
    acts = [int(k) for k in np.flatnonzero(ineq.act)]
    n = len(ineq.feat)
    if squash == "tanh":
        return "the tanh squash is handled for a requirement on one action alone"
    options = []
    for k in acts:
        opts = ["mid"]
        if math.isfinite(low[k]):
            opts.append("low")
        if math.isfinite(high[k]):
            opts.append("high")
        options.append(opts)
    out = []
    for combo in itertools.product(*options):
        c, c0 = ineq.feat.copy(), -ineq.rhs
        rows, rhs = [], []
        for k, how in zip(acts, combo, strict=True):
            a, z0, zc = float(ineq.act[k]), float(region.intercept[k]), region.coef[k]
            if how == "mid":
                c = c + a * zc
                c0 += a * z0
                if math.isfinite(high[k]):
                    rows.append(zc)
                    rhs.append(high[k] - z0)
                if math.isfinite(low[k]):
                    rows.append(-zc)
                    rhs.append(z0 - low[k])
            elif how == "low":
                c0 += a * low[k]
                rows.append(zc)
                rhs.append(low[k] - z0)
            else:
                c0 += a * high[k]
                rows.append(-zc)
                rhs.append(z0 - high[k])
        out.append((c, c0, np.array(rows).reshape(-1, n), np.array(rhs, dtype=np.float64)))
    return out


def _interior(c: np.ndarray, c0: float, least: float, lo: np.ndarray, hi: np.ndarray, A: np.ndarray,
              b: np.ndarray) -> np.ndarray | None:
    """A point as deep inside the constraints as can be while the violation is at least ``least``."""
    n = len(lo)
    norms = np.linalg.norm(A, axis=1) if len(A) else np.zeros(0)
    eye = np.eye(n)
    rows = np.vstack([np.hstack([A, norms[:, None]]) if len(A) else np.zeros((0, n + 1)),
                      np.hstack([eye, np.ones((n, 1))]), np.hstack([-eye, np.ones((n, 1))]),
                      np.append(-c, 0.0)[None, :]])
    rhs = np.concatenate([b, hi, -lo, [c0 - least]])
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    width = float(np.max(hi - lo)) / 2 + 1.0
    o = maximise(cost, 0.0, np.append(lo, 0.0), np.append(hi, width), rows, rhs)
    return None if o.x is None else np.clip(o.x[:n], lo, hi)


def _violates(controller: Controller, x: np.ndarray, sysm: _System, ineq: Inequality) -> Counterexample | None:
    """A counterexample at ``x`` if it lies in the domain, ``when`` holds there and ``predict`` breaks ``ineq``."""
    if not (np.all(x >= sysm.lo) and np.all(x <= sysm.hi)):
        return None
    zeros = np.zeros((1, len(ineq.act)))
    if not all(bool(w.holds(x[None, :], zeros)[0]) for w in sysm.when):
        return None
    a = controller.program.predict(x[None, :])
    v = float(ineq.value(x[None, :], a)[0])
    if (v < 0) or (v == 0 and not ineq.strict):
        return None
    return Counterexample(x.copy(), a[0], _label(controller, x), ineq.text, v)


def _requirement(controller: Controller, sysm: _System, ineq: Inequality, squash: str,
                 tally: list[int]) -> Counterexample | str | None:
    """``None`` (holds on the system), a counterexample, or why it is unknown."""
    prog = controller.program
    low, high = prog.action_low, prog.action_high
    region = sysm.region
    acts = [int(k) for k in np.flatnonzero(ineq.act)]
    slack = sum(abs(float(ineq.act[k])) * _rounding(region, k, sysm.lo, sysm.hi) for k in acts)
    if len(acts) == 1 and not np.any(ineq.feat):
        # a = g(z) with g increasing (a clip, or tanh then a clip): the largest alpha * a is alpha * g(the
        # largest alpha-signed z), and the rounded z is within `slack` of the exact one
        k, alpha = acts[0], float(ineq.act[acts[0]])
        sign = 1.0 if alpha > 0 else -1.0
        o = maximise(sign * region.coef[k], sign * float(region.intercept[k]), sysm.lo, sysm.hi, sysm.A, sysm.b)
        tally[0] += 1
        if o.status == "empty":
            return None
        if o.status != "optimal":
            return o.reason
        z = sign * (o.bound + slack)
        squashed = low[k] + 0.5 * (math.tanh(z) + 1.0) * (high[k] - low[k]) if squash == "tanh" else z
        top = alpha * min(max(squashed, low[k]), high[k]) - ineq.rhs
        if top < 0 or (top == 0 and not ineq.strict):
            return None
        candidates = [o.x] if o.x is not None else []
        for x in candidates:
            cex = _violates(controller, x, sysm, ineq)
            if cex is not None:
                return cex
        return (f"the largest value found breaks `{ineq.text}` by at most {top:.3g}, within the rounding of the "
                "controller's arithmetic")
    pieces = _pieces_of(region, ineq, low, high, squash)
    if isinstance(pieces, str):
        return pieces
    worst = ""
    for c, c0, rows, rhs in pieces:
        A = np.vstack([sysm.A, rows]) if len(rows) else sysm.A
        b = np.concatenate([sysm.b, rhs]) if len(rows) else sysm.b
        o = maximise(c, c0, sysm.lo, sysm.hi, A, b)
        tally[0] += 1
        if o.status == "empty":
            continue
        if o.status != "optimal":
            worst = o.reason
            continue
        top = o.bound + slack
        if top < 0 or (top == 0 and not ineq.strict):
            continue
        tries = [o.x] if o.x is not None else []
        for x in tries:
            cex = _violates(controller, x, sysm, ineq)
            if cex is not None:
                return cex
        value = float(c @ o.x + c0) if o.x is not None else top
        if value > 0:
            x = _interior(c, c0, value / 2, sysm.lo, sysm.hi, A, b)
            tally[0] += 1
            if x is not None:
                cex = _violates(controller, x, sysm, ineq)
                if cex is not None:
                    return cex
        worst = (f"`{ineq.text}` may fail by at most {top:.3g} in {region.label}, within the rounding of the "
                 "controller's arithmetic and the LP solver's tolerance; no state found that breaks it")
    return worst or None


def decide(controller: Controller, prop: Property, lo: np.ndarray, hi: np.ndarray,
           regions: list[Region] | None = None) -> Verdict:
    """Decide a ``rule`` or ``range`` property on the domain box ``[lo, hi]`` (see the module docstring)."""
    import time

    start = time.perf_counter()
    regions = controller.program.regions() if regions is None else regions
    squash = controller.program.affine_pieces().squash
    tally = [0]
    verdict = Verdict(prop.name, "proved")
    reasons: list[str] = []
    n_regions = 0
    for when in prop.when:
        for sysm in systems(regions, when, lo, hi):
            n_regions += 1
            for ineq in prop.then:
                got = _requirement(controller, sysm, ineq, squash, tally)
                if got is None:
                    continue
                verdict.failing.append(sysm.region.piece)
                if isinstance(got, Counterexample):
                    if verdict.counterexample is None or got.violation > verdict.counterexample.violation:
                        verdict.counterexample = got
                else:
                    reasons.append(got)
    verdict.failing = sorted(set(verdict.failing))
    if verdict.counterexample is not None:
        verdict.status = "refuted"
    elif reasons:
        verdict.status, verdict.reason = "unknown", reasons[0]
    verdict.regions, verdict.programs = n_regions, tally[0]
    verdict.seconds = time.perf_counter() - start
    return verdict
