"""Repair: refit only the pieces that break a property, so that it holds on their whole region.

For each refuted ``rule`` or ``range`` property, every piece where a violation was found is refitted
by least squares on the distillation data that piece acts on (its non-zero pattern kept: the
structure does not change), subject to the property on the *whole* region: a convex quadratic
program, solved by HiGHS. "For every state ``x`` of the polyhedron ``G x <= h``,
``alpha @ (c + W x) + beta @ x <= d``" is one linear constraint set through LP duality: it holds
exactly when some ``lam >= 0`` has ``G.T @ lam = W.T @ alpha + beta`` and ``h @ lam + alpha @ c <= d``
(a robust constraint, not a check at sampled states). The requirement is imposed on the unclipped
output, which implies it after clipping for a requirement on one action; :func:`repair` verifies the
result again either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interp_rl.errors import InterpRLError
from interp_rl.program import Controller, Region
from interp_rl.verify.prove import systems

__all__ = ["RepairResult", "repair"]


@dataclass
class RepairResult:
    """What :func:`repair` changed."""

    controller: Controller
    """The repaired controller (same kind, same structure)."""
    pieces: list[str] = field(default_factory=list)
    """Labels of the refitted pieces."""
    fit_before: float = 0.0
    """Weighted mean squared error of the refitted pieces on their data, before."""
    fit_after: float = 0.0
    """The same, after."""
    properties: list[str] = field(default_factory=list)
    """The properties repaired."""


def _constraints_for(piece_regions: list[Region], prop, lo: np.ndarray, hi: np.ndarray):
    """``(G, h, ineq)`` for every polyhedron of the piece where the property applies, and each requirement."""
    out = []
    for when in prop.when:
        for sysm in systems(piece_regions, when, lo, hi):
            n = len(lo)
            G = np.vstack([sysm.A.reshape(-1, n), np.eye(n), -np.eye(n)])
            h = np.concatenate([sysm.b, sysm.hi, -sysm.lo])
            for ineq in prop.then:
                out.append((G, h, ineq))
    return out


def _quiet_highs() -> Any:
    """A HiGHS instance, without the banner the first one prints on standard output."""
    import os
    import sys

    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


def _solve(theta0: np.ndarray, quads: list[tuple[np.ndarray, np.ndarray]], penalty: np.ndarray, offsets: np.ndarray,
           eq: tuple[np.ndarray, np.ndarray], ineq: tuple[np.ndarray, np.ndarray], n_var: int) -> np.ndarray | None:
    """Minimise the quadratic fit plus the pull to ``theta0`` subject to ``Aeq v = beq``, ``Ain v >= bin``, the
    multipliers (the variables after ``theta``) non-negative: a convex QP, solved by HiGHS. ``None`` when HiGHS
    finds no solution."""
    import highspy
    from scipy.sparse import csc_matrix

    n_theta = len(theta0)
    H = np.zeros((n_var, n_var))
    g = np.zeros(n_var)
    for i, (Q, q) in enumerate(quads):  # t @ Q t - 2 q @ t  ->  1/2 t @ (2Q) t + (-2q) @ t
        sl = slice(offsets[i], offsets[i + 1])
        H[sl, sl] += 2 * Q
        g[sl] -= 2 * q
    H[:n_theta, :n_theta] += 2 * np.diag(penalty)
    g[:n_theta] -= 2 * penalty * theta0
    Aeq, beq = eq
    Ain, bin_ = ineq
    A = csc_matrix(np.vstack([Aeq, Ain]))
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_var, A.shape[0]
    lp.col_cost_ = g
    big = 1e6 * (1.0 + float(np.max(np.abs(theta0), initial=0.0)))  # HiGHS's QP solver fails on free variables
    lp.col_lower_ = np.concatenate([np.full(n_theta, -big), np.zeros(n_var - n_theta)])
    lp.col_upper_ = np.full(n_var, big)
    lp.row_lower_ = np.concatenate([beq, bin_])
    lp.row_upper_ = np.concatenate([beq, np.full(len(bin_), inf)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n_var, A.shape[0]
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    lower = csc_matrix(np.tril(H))
    hess = highspy.HighsHessian()
    hess.dim_, hess.format_ = n_var, highspy.HessianFormat.kTriangular
    hess.start_, hess.index_, hess.value_ = lower.indptr, lower.indices, lower.data
    model = highspy.HighsModel()
    model.lp_, model.hessian_ = lp, hess
    h = _quiet_highs()
    if h.passModel(model) != highspy.HighsStatus.kOk:
        return None
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(h.getSolution().col_value, dtype=np.float64)


def repair(controller: Controller, verification, observations: np.ndarray, targets: np.ndarray,
           weights: np.ndarray | None = None, *, proximity: float = 1e-3, margin: float = 1e-4) -> RepairResult:
    """Refit the pieces of ``controller`` that break the refuted properties of ``verification``.

    Parameters
    ----------
    controller : Controller
        A piecewise-affine controller.
    verification : Verification
        Its verdicts (:func:`interp_rl.verify.verify`); the refuted ``rule`` and ``range`` properties are repaired.
    observations, targets : ndarray of shape (n, obs_dim) and (n, act_dim)
        The data to fit (the distillation data: states and the teacher's actions).
    weights : ndarray of shape (n,), optional
        Sample weights.
    proximity : float
        Weight of staying near the old coefficients (per sample, in units of each feature's spread): a piece
        with little data changes little.
    margin : float
        How far inside the property the repaired pieces are put (relative to the bound), so that rounding cannot
        take them back out.
    """
    prog = controller.program
    pieces = prog.affine_pieces()
    props = {p.name: p for p in verification.properties.properties}
    refuted = [v for v in verification.verdicts if v.status == "refuted" and props[v.name].pointwise]
    if not refuted:
        return RepairResult(controller)
    X = np.asarray(observations, dtype=np.float64)
    Y = np.asarray(targets, dtype=np.float64)
    w = np.ones(len(X)) if weights is None else np.asarray(weights, dtype=np.float64)
    assign = pieces.assign(X)
    scale = np.where(X.std(axis=0) > 1e-12, X.std(axis=0), 1.0) if len(X) else np.ones(prog.obs_dim)
    regions = prog.regions()
    lo, hi = verification.lower, verification.upper
    intercept, coef = pieces.intercept.copy(), pieces.coef.copy()
    failing = sorted({p for v in refuted for p in v.failing})
    before = after = 0.0
    total = 0.0
    for p in failing:
        mine = [r for r in regions if r.piece == p]
        cons = [c for v in refuted if p in v.failing for c in _constraints_for(mine, props[v.name], lo, hi)]
        acts = sorted({int(k) for _, _, ineq in cons for k in np.flatnonzero(ineq.act)})
        if not acts:
            continue
        rows = assign == p
        Xp, Yp, wp = X[rows], Y[rows], w[rows]
        # variables: per action k, the intercept and the non-zero coefficients; then one lam per constraint row
        pattern = {k: np.flatnonzero(coef[p, k]) for k in acts}
        sizes = [1 + len(pattern[k]) for k in acts]
        n_theta = sum(sizes)
        offsets = np.cumsum([0, *sizes])
        theta0 = np.concatenate([np.append(intercept[p, k], coef[p, k, pattern[k]]) for k in acts])
        design = {k: np.hstack([np.ones((len(Xp), 1)), Xp[:, pattern[k]]]) for k in acts}
        penalty = np.concatenate([np.append(1.0, scale[pattern[k]]) for k in acts]) ** 2
        n_w = max(float(wp.sum()), 1.0)

        # the weighted squared error as a quadratic form per action: t @ Q t - 2 q @ t + const
        quad = {k: (design[k].T @ (wp[:, None] * design[k]) / n_w, design[k].T @ (wp * Yp[:, k]) / n_w)
                for k in acts}

        lam_sizes = [len(h) for _, h, _ in cons]
        lam_off = n_theta + np.cumsum([0, *lam_sizes])
        n_var = int(lam_off[-1])
        eq_rows, eq_rhs, in_rows, in_rhs = [], [], [], []
        for ci, (G, h, ineq) in enumerate(cons):
            # G.T lam - sum_k alpha_k w_k = beta   (one row per feature)
            block = np.zeros((G.shape[1], n_var))
            block[:, lam_off[ci]:lam_off[ci + 1]] = G.T
            cin = np.zeros(n_var)
            cin[lam_off[ci]:lam_off[ci + 1]] = -h
            for i, k in enumerate(acts):
                a = float(ineq.act[k])
                if a == 0.0:
                    continue
                for m, j in enumerate(pattern[k]):
                    block[j, offsets[i] + 1 + m] -= a
                cin[offsets[i]] -= a
            eq_rows.append(block)
            eq_rhs.append(ineq.feat)
            # d - margin - h lam - alpha c >= 0
            in_rows.append(cin)
            in_rhs.append(-(ineq.rhs - margin * (1.0 + abs(ineq.rhs))))
        Aeq, beq = np.vstack(eq_rows), np.concatenate(eq_rhs)
        Ain, bin_ = np.array(in_rows), np.array(in_rhs)
        label = pieces.labels[p] if pieces.labels else f"piece {p}"
        solution = _solve(theta0, [quad[k] for k in acts], penalty * proximity, offsets, (Aeq, beq), (Ain, bin_),
                          n_var)
        if solution is None:
            raise InterpRLError(f"Repair of {label} failed: no affine rule on its region keeps the property (the "
                                "constrained fit has no solution).")
        th = solution[:n_theta]
        for i, k in enumerate(acts):
            t = th[offsets[i]:offsets[i + 1]]
            intercept[p, k] = t[0]
            coef[p, k, pattern[k]] = t[1:]
            old = theta0[offsets[i]:offsets[i + 1]]
            before += float(wp @ (design[k] @ old - Yp[:, k]) ** 2)
            after += float(wp @ (design[k] @ t - Yp[:, k]) ** 2)
        total += float(wp.sum()) * len(acts)
    new = Controller(prog.with_affine_pieces(intercept, coef), controller.features, controller.actions,
                     controller.task, {**controller.metadata, "repaired": [v.name for v in refuted]})
    labels = [pieces.labels[p] if pieces.labels else f"piece {p}" for p in failing]
    return RepairResult(new, labels, before / max(total, 1.0), after / max(total, 1.0), [v.name for v in refuted])
