"""Tree editing: cost-complexity pruning, pruning to a leaf budget, merging look-alike leaves.

Each function takes a fitted :class:`~distill.tree.TreePolicy` (or a bare
:class:`~interp_rl.program.TreeProgram`) and returns a new one; nothing is
modified in place. A pruned subtree becomes a constant leaf predicting the mean
action of the samples that reached it; pass the training data to refit linear
leaves on the new structure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from distill._leaves import fit_leaf_models
from interp_rl.kinds.tree import TreeProgram
from interp_rl.validation import check_float, check_int

if TYPE_CHECKING:
    from distill.tree import TreePolicy

__all__ = [
    "collapse_similar",
    "cost_complexity_path",
    "prune",
    "prune_to_leaves",
]

T = TypeVar("T", "TreePolicy", TreeProgram)


def _is_estimator(model: Any) -> bool:
    """A fitted tree estimator (``TreePolicy``) rather than a bare program."""
    return not isinstance(model, TreeProgram)


def _program(model: TreePolicy | TreeProgram) -> TreeProgram:
    return model.tree_ if _is_estimator(model) else model  # type: ignore[union-attr]


def _rebuild(
    program: TreeProgram, leaf_nodes: set[int], leaf_params: dict[int, tuple[np.ndarray, np.ndarray]]
) -> TreeProgram:
    """Keep the subtree above ``leaf_nodes`` (which become leaves), renumbered in preorder."""
    order: list[int] = []
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if node not in leaf_nodes and not program.is_leaf[node]:
            stack.append(int(program.right[node]))
            stack.append(int(program.left[node]))
    new_id = {old: i for i, old in enumerate(order)}
    n = len(order)
    feature = np.full(n, -1, dtype=np.int64)
    threshold = np.zeros(n)
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    intercept = program.intercept[order].copy()
    coef = program.coef[order].copy()
    for old, i in new_id.items():
        if old in leaf_nodes or program.is_leaf[old]:
            if old in leaf_params:
                intercept[i], coef[i] = leaf_params[old]
            elif not program.is_leaf[old]:
                coef[i] = 0.0
            continue
        feature[i] = program.feature[old]
        threshold[i] = program.threshold[old]
        left[i] = new_id[int(program.left[old])]
        right[i] = new_id[int(program.right[old])]
    return TreeProgram(
        feature=feature, threshold=threshold, left=left, right=right, intercept=intercept, coef=coef,
        n_samples=program.n_samples[order], risk=program.risk[order],
        action_low=program.action_low, action_high=program.action_high,
    )


def _subtree_stats(program: TreeProgram, cut: set[int]) -> tuple[dict[int, float], dict[int, int]]:
    """Risk of each node's current subtree and its number of leaves, treating ``cut`` as leaves."""
    risk: dict[int, float] = {}
    leaves: dict[int, int] = {}
    order: list[int] = []
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if node not in cut and not program.is_leaf[node]:
            stack.extend((int(program.left[node]), int(program.right[node])))
    for node in reversed(order):
        if node in cut or program.is_leaf[node]:
            risk[node], leaves[node] = float(program.risk[node]), 1
        else:
            lc, rc = int(program.left[node]), int(program.right[node])
            risk[node] = risk[lc] + risk[rc]
            leaves[node] = leaves[lc] + leaves[rc]
    return risk, leaves


def _weakest_link(program: TreeProgram, cut: set[int]) -> tuple[int, float] | None:
    risk, leaves = _subtree_stats(program, cut)
    # scikit-learn's scale: risks as weighted MSE per output, relative to the root's weight.
    scale = max(float(program.n_samples[0]), 1e-300) * program.act_dim
    best: tuple[int, float] | None = None
    for node, n_leaves in leaves.items():
        if n_leaves <= 1:
            continue
        g = (float(program.risk[node]) - risk[node]) / (n_leaves - 1) / scale
        if best is None or g < best[1] - 1e-15:
            best = (node, g)
    return best


def cost_complexity_path(model: TreePolicy | TreeProgram) -> tuple[np.ndarray, np.ndarray]:
    """Effective alphas of minimal cost-complexity pruning and the leaf count after each.

    Returns
    -------
    alphas : ndarray
        Increasing pruning strengths, starting at 0.
    n_leaves : ndarray
        Leaves left once the subtrees up to that alpha are pruned.
    """
    program = _program(model)
    cut: set[int] = set()
    alphas, counts = [0.0], [program.n_leaves]
    while True:
        link = _weakest_link(program, cut)
        if link is None:
            break
        node, g = link
        cut.add(node)
        alphas.append(max(g, alphas[-1]))
        counts.append(_subtree_stats(program, cut)[1][0])
    return np.asarray(alphas), np.asarray(counts)


def _finish(model: T, program: TreeProgram, X: Any, y: Any, sample_weight: Any) -> T:
    if X is not None and y is not None and _is_estimator(model) and model.leaf_model == "linear":
        X = np.asarray(X, dtype=np.float64)
        Y = np.asarray(y, dtype=np.float64).reshape(len(X), -1)
        w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        program = fit_leaf_models(program, X, Y, w, alpha=model.leaf_alpha, max_terms=model.max_leaf_terms)
    if _is_estimator(model):
        return model.with_program(program)
    return program  # type: ignore[return-value]


def prune(model: T, ccp_alpha: float, *, X: Any = None, y: Any = None, sample_weight: Any = None) -> T:
    """Minimal cost-complexity pruning with strength ``ccp_alpha`` (scikit-learn's definition).

    Examples
    --------
    >>> import numpy as np
    >>> from distill.tree import TreePolicy
    >>> X = np.linspace(-1, 1, 200)[:, None]
    >>> y = np.sign(X) + 0.01 * np.sin(40 * X)
    >>> tree = TreePolicy(max_depth=4, max_leaves=None, leaf_model="constant").fit(X, y)
    >>> tree.tree_.n_leaves, prune(tree, 0.05).tree_.n_leaves
    (14, 2)
    """
    program = _program(model)
    alpha = check_float(ccp_alpha, "ccp_alpha", "prune")
    cut: set[int] = set()
    while True:
        link = _weakest_link(program, cut)
        if link is None or link[1] > alpha:
            break
        cut.add(link[0])
    return _finish(model, _rebuild(program, cut, {}), X, y, sample_weight)


def prune_to_leaves(
    model: T, max_leaves: int, *, X: Any = None, y: Any = None, sample_weight: Any = None
) -> T:
    """Prune weakest links until at most ``max_leaves`` leaves remain."""
    program = _program(model)
    max_leaves = check_int(max_leaves, "max_leaves", "prune_to_leaves")
    cut: set[int] = set()
    while _subtree_stats(program, cut)[1][0] > max_leaves:
        link = _weakest_link(program, cut)
        if link is None:
            break
        cut.add(link[0])
    return _finish(model, _rebuild(program, cut, {}), X, y, sample_weight)


def collapse_similar(model: T, atol: float) -> T:
    """Merge sibling leaves whose parameters differ by at most ``atol`` everywhere.

    The merged leaf takes the sample-weighted mean of the two leaves'
    intercepts and coefficients. Repeats until no sibling pair qualifies, so
    whole subtrees acting alike collapse.

    Examples
    --------
    >>> import numpy as np
    >>> from distill.tree import TreePolicy
    >>> X = np.linspace(-1, 1, 200)[:, None]
    >>> y = np.where(X < 0, -1.0, 1.0) + np.where(X < 0.5, 0.0, 0.001)
    >>> tree = TreePolicy(max_depth=2, max_leaves=None, leaf_model="constant").fit(X, y)
    >>> tree.tree_.n_leaves, collapse_similar(tree, 0.01).tree_.n_leaves
    (3, 2)
    """
    program = _program(model)
    atol = check_float(atol, "atol", "collapse_similar")
    while True:
        cut: set[int] = set()
        params: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for node in np.flatnonzero(~program.is_leaf):
            lc, rc = int(program.left[node]), int(program.right[node])
            if not (program.is_leaf[lc] and program.is_leaf[rc]):
                continue
            if (np.max(np.abs(program.intercept[lc] - program.intercept[rc])) <= atol
                    and np.max(np.abs(program.coef[lc] - program.coef[rc]), initial=0.0) <= atol):
                wl, wr = program.n_samples[lc], program.n_samples[rc]
                a = 0.5 if wl + wr <= 0 else wl / (wl + wr)
                params[int(node)] = (
                    a * program.intercept[lc] + (1 - a) * program.intercept[rc],
                    a * program.coef[lc] + (1 - a) * program.coef[rc],
                )
                cut.add(int(node))
        if not cut:
            break
        program = _rebuild(program, cut, params)
    if _is_estimator(model):
        return model.with_program(program)
    return program  # type: ignore[return-value]
