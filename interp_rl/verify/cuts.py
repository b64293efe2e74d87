"""Repair by cutting: a tree leaf that breaks a rule on part of its region is split there, the rest left alone.

:func:`interp_rl.verify.refit.repair` refits a failing leaf on its *whole* region, so a leaf that breaks
"when occupied and above 23.5 °C, at most 20 °C" only in its warm corner is made to play 20 °C throughout,
its cold part included. :func:`cut_leaves` first cuts each failing leaf along the property's own axis-aligned
conditions (``zone_temperature > 23.5`` becomes a split at 23.5 on the leaf's path), each new leaf a copy of
the old one; only the part inside the condition still breaks the rule, and the refit that follows changes
that part alone. A cut is made only where the leaf's box straddles the threshold, and only for properties
whose ``when`` is one conjunction; a condition over several features (``a + b > 1``) cannot be cut by one
axis split and is left to the refit. The cut tree is proved again by the same linear programs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interp_rl.program import Controller

__all__ = ["axis_cuts", "cut_leaves"]


def axis_cuts(conditions: list[Any]) -> list[tuple[int, float, bool]]:
    """``(feature, threshold, inside_left)`` for each condition of one feature (``c * x_j <= d``, ``<`` when
    strict) of a conjunction: the split ``x_j <= threshold`` puts the states meeting the condition on the left
    (``inside_left``) or on the right, exactly, floats included.

    >>> from interp_rl.verify.properties import Inequality
    >>> e = np.zeros(0)
    >>> axis_cuts([Inequality(np.array([0.0, -1.0]), e, -23.5, True),     # x1 > 23.5
    ...            Inequality(np.array([-1.0, 0.0]), e, -0.5, False),     # x0 >= 0.5
    ...            Inequality(np.array([1.0, 1.0]), e, 1.0, False)])      # x0 + x1 <= 1: not one feature
    [(1, 23.5, False), (0, 0.49999999999999994, False)]
    """
    out = []
    for ineq in conditions:
        nz = np.flatnonzero(ineq.feat)
        if len(nz) != 1 or np.any(ineq.act):
            continue
        j = int(nz[0])
        c, d = float(ineq.feat[j]), float(ineq.rhs)
        t = d / c
        if c > 0:  # x_j <= t (x_j < t when strict): the left side, up to the float below t when strict
            out.append((j, float(np.nextafter(t, -np.inf)) if ineq.strict else t, True))
        else:  # x_j >= t (x_j > t when strict): the right side of t, or of the float below t
            out.append((j, t if ineq.strict else float(np.nextafter(t, -np.inf)), False))
    return out


def _split(tree: Any, node: int, feature: int, threshold: float) -> tuple[Any, int, int]:
    """``tree`` with the leaf ``node`` turned into the split ``x[feature] <= threshold`` over two copies of it."""
    n = tree.n_nodes
    copy = [node, node]
    return tree.replace(
        feature=np.concatenate([np.where(np.arange(n) == node, feature, tree.feature), [-1, -1]]),
        threshold=np.concatenate([np.where(np.arange(n) == node, threshold, tree.threshold), [0.0, 0.0]]),
        left=np.concatenate([np.where(np.arange(n) == node, n, tree.left), [-1, -1]]),
        right=np.concatenate([np.where(np.arange(n) == node, n + 1, tree.right), [-1, -1]]),
        intercept=np.concatenate([tree.intercept, tree.intercept[copy]]),
        coef=np.concatenate([tree.coef, tree.coef[copy]]),
        n_samples=np.concatenate([tree.n_samples, tree.n_samples[copy] / 2]),
        risk=np.concatenate([tree.risk, tree.risk[copy] / 2]),
    ), n, n + 1


def cut_leaves(verification: Any, observations: np.ndarray, weights: np.ndarray | None = None
               ) -> tuple[Controller, list[str]] | None:
    """The tree of ``verification``'s controller (the scores' tree for a controller of classes) with every leaf
    that breaks a refuted ``rule`` or ``range`` property cut along that property's one-feature conditions, and
    one line per cut (``leaf 2 at zone_temperature > 23.5``, in the uncut tree's numbering); ``None`` when there
    is nothing to cut (not a tree, no such property, or every cut redundant). The data set each new leaf's share
    (``n_samples``)."""
    from interp_rl.kinds.tree import TreeProgram
    from interp_rl.verify.classes import ClassView

    view = verification.controller
    classes = isinstance(view.program, ClassView)
    ctrl = view.metadata.get("scores", view) if classes else view
    tree = ctrl.program
    if not isinstance(tree, TreeProgram):
        return None
    k = len(view.program.values) if classes else 1
    props = {p.name: p for p in verification.properties.properties}
    lo, hi = np.asarray(verification.lower, dtype=np.float64), np.asarray(verification.upper, dtype=np.float64)
    labels = tree.affine_pieces().labels
    made: list[str] = []
    for v in verification.verdicts:
        prop = props.get(v.name)
        if v.status != "refuted" or prop is None or not prop.pointwise or len(prop.when) != 1:
            continue
        cuts = axis_cuts(prop.when[0])
        for leaf in sorted({int(q) // k for q in v.failing}):
            if leaf >= tree.n_nodes or not tree.is_leaf[leaf]:
                continue  # already cut for an earlier property: its new leaves are refitted as found again
            inside, name = leaf, labels[leaf]
            for feature, threshold, inside_left in cuts:
                box_lo, box_hi = tree.leaf_boxes()[inside]
                low, high = max(box_lo[feature], lo[feature]), min(box_hi[feature], hi[feature])
                if not low <= threshold < high:  # the whole leaf is on one side: nothing to cut
                    continue
                tree, left, right = _split(tree, inside, feature, threshold)
                inside = left if inside_left else right
                f = ctrl.features[feature]
                shown = f"{f.name} {'<=' if inside_left else '>'} {threshold:.6g}{' ' + f.unit if f.unit else ''}"
                made.append(f"{name} at {shown}")
    if not made:
        return None
    X = np.asarray(observations, dtype=np.float64)
    w = np.ones(len(X)) if weights is None else np.asarray(weights, dtype=np.float64)
    counts = np.bincount(tree.apply(X), weights=w, minlength=tree.n_nodes) if len(X) else np.zeros(tree.n_nodes)
    tree = tree.replace(n_samples=tree._leaves_below(counts))
    cut = Controller(tree, ctrl.features, ctrl.actions, ctrl.task,
                     {**ctrl.metadata, "cut": made})
    return cut, made
