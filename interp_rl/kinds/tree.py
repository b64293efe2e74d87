"""Decision trees with affine leaves: the ``tree`` program kind.

A :class:`TreeProgram` is a binary decision tree over raw observations whose leaves are affine
maps (a constant action, or a sparse linear function of the observation), followed by clipping
to the action bounds.

Arithmetic is fixed so that every runtime gives bit-identical actions: at a leaf,
``y = intercept`` then ``y = y + coef_j * x_j`` for the non-zero terms in ascending feature
order, then ``y = min(max(y, low), high)``. A split sends ``x`` left when
``x[feature] <= threshold``.

Leaves are numbered for people 1, 2, ... from left to right (the order of the rules text);
node ids (``apply``, ``decision_path``) are the storage order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

import interp_rl._codegen as cg
from interp_rl._shapley import tree_shapley
from interp_rl.errors import ControllerFormatError, InvalidParameterError, bad_value
from interp_rl.program import AffinePieces, ProgramBase, Region, register_program, widen_columns
from interp_rl.validation import check_int

if TYPE_CHECKING:
    from interp_rl._onnx import OnnxGraph
    from interp_rl.program import Controller

__all__ = ["TreeProgram", "leaf_visit_counts"]

_HIGHLIGHT = '"#d62728"'
_LEAF_FILL = "#f2f2f2"
_LIGHT = (247, 251, 255)  # fill of an unvisited leaf
_DARK = (8, 81, 156)  # fill of the most visited leaf
_DOT_LINE = 44  # leaf equations longer than this are broken into one term per line


@register_program
@dataclass
class TreeProgram(ProgramBase):
    """A decision tree with affine leaves, stored as flat node arrays (node 0 is the root).

    Parameters
    ----------
    feature : ndarray of shape (n_nodes,)
        Split feature of each internal node; ``-1`` at leaves.
    threshold : ndarray of shape (n_nodes,)
        Go left when ``x[feature] <= threshold``; unused at leaves.
    left, right : ndarray of shape (n_nodes,)
        Child node ids; ``-1`` at leaves.
    intercept : ndarray of shape (n_nodes, act_dim)
        Constant part of each node's action. Internal nodes keep the mean
        action of the samples that reached them (used when pruning and drawing).
    coef : ndarray of shape (n_nodes, act_dim, obs_dim)
        Linear part at leaves (zeros for constant leaves and internal nodes).
    n_samples : ndarray of shape (n_nodes,)
        Weighted number of training samples that reached each node.
    risk : ndarray of shape (n_nodes,)
        Weighted squared error of each node's fit on its training samples.
    action_low, action_high : ndarray of shape (act_dim,)
        Actions are clipped to these bounds (``-inf``/``inf`` for none).

    Examples
    --------
    A one-split tree: ``u = -1`` if ``x0 <= 0.5`` else ``u = 0.25 + 2 x1``.

    >>> import numpy as np
    >>> t = TreeProgram.from_leaves(
    ...     feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1], right=[2, -1, -1],
    ...     intercept=[[0.0], [-1.0], [0.25]], coef={2: {(0, 1): 2.0}}, obs_dim=2)
    >>> t.predict(np.array([[0.0, 3.0], [1.0, 3.0]]))
    array([[-1.  ],
           [ 6.25]])
    >>> t.n_leaves, t.depth, t.size()["parameters"]
    (2, 1, 4)
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    intercept: np.ndarray
    coef: np.ndarray
    n_samples: np.ndarray = field(default_factory=lambda: np.zeros(0))
    risk: np.ndarray = field(default_factory=lambda: np.zeros(0))
    action_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    action_high: np.ndarray = field(default_factory=lambda: np.zeros(0))

    kind = "tree"
    title = "Trees"
    piece_names = ("leaf", "leaves")
    rules_title = "Rules"

    def __post_init__(self) -> None:
        self.feature = np.asarray(self.feature, dtype=np.int64)
        n = len(self.feature)
        self.threshold = np.asarray(self.threshold, dtype=np.float64)
        self.left = np.asarray(self.left, dtype=np.int64)
        self.right = np.asarray(self.right, dtype=np.int64)
        self.intercept = np.asarray(self.intercept, dtype=np.float64)
        if self.intercept.ndim != 2 or len(self.intercept) != n:
            raise ControllerFormatError(
                f"intercept must have shape (n_nodes={n}, act_dim); got {self.intercept.shape}."
            )
        self.coef = np.asarray(self.coef, dtype=np.float64)
        act_dim = self.intercept.shape[1]
        if self.coef.ndim != 3 or self.coef.shape[:2] != (n, act_dim):
            raise ControllerFormatError(
                f"coef must have shape (n_nodes={n}, act_dim={act_dim}, obs_dim); got {self.coef.shape}."
            )
        self.n_samples = np.asarray(self.n_samples, dtype=np.float64)
        if self.n_samples.size == 0:
            self.n_samples = np.zeros(n)
        self.risk = np.asarray(self.risk, dtype=np.float64)
        if self.risk.size == 0:
            self.risk = np.zeros(n)
        self._init_bounds(self.action_low, self.action_high, act_dim)
        self._check()

    @classmethod
    def from_leaves(
        cls,
        *,
        feature: Any,
        threshold: Any,
        left: Any,
        right: Any,
        intercept: Any,
        obs_dim: int,
        coef: dict[int, dict[tuple[int, int], float]] | None = None,
        **kwargs: Any,
    ) -> TreeProgram:
        """Build a program from node arrays and sparse leaf terms ``{node: {(out, feat): c}}``."""
        intercept = np.asarray(intercept, dtype=np.float64)
        dense = np.zeros((len(intercept), intercept.shape[1], obs_dim))
        for node, terms in (coef or {}).items():
            for (out, feat), c in terms.items():
                dense[node, out, feat] = c
        return cls(feature=feature, threshold=threshold, left=left, right=right,
                   intercept=intercept, coef=dense, **kwargs)

    def replace(self, **changes: Any) -> TreeProgram:
        """A copy with some arrays replaced (``intercept=...``, ``coef=...``)."""
        arrays = {k: getattr(self, k) for k in ("feature", "threshold", "left", "right", "intercept", "coef",
                                                "n_samples", "risk", "action_low", "action_high")}
        return TreeProgram(**{**arrays, **changes})

    def affine_pieces(self) -> AffinePieces:
        """Every node is a piece (only leaves are ever assigned): ``assign`` is :meth:`apply`."""
        number = self.leaf_numbers()
        labels = [f"leaf {number[n]}" if n in number else f"node {n}" for n in range(self.n_nodes)]
        leaves = sorted(number, key=number.__getitem__)
        return AffinePieces(self.apply, self.intercept.copy(), self.coef.copy(), labels, leaves)

    def leaf_boxes(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """``{leaf node: (lower, upper)}``: the box of observations that reach each leaf, in leaf order.

        A left branch ``x_f <= t`` bounds ``x_f`` above by ``t``; a right branch ``x_f > t`` bounds it
        below by the next float after ``t``, so the boxes split the floats exactly as :meth:`apply` does.
        A leaf no observation reaches (its path contradicts itself) has ``lower > upper`` somewhere.

        >>> t = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1],
        ...                             right=[2, -1, -1], intercept=[[0.0], [1.0], [2.0]], obs_dim=1)
        >>> {n: (float(lo[0]), float(hi[0])) for n, (lo, hi) in t.leaf_boxes().items()}
        {1: (-inf, 0.5), 2: (0.5000000000000001, inf)}
        """
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        stack = [(0, np.full(self.obs_dim, -np.inf), np.full(self.obs_dim, np.inf))]
        while stack:
            node, lo, hi = stack.pop()
            if self.is_leaf[node]:
                out[node] = (lo, hi)
                continue
            f, t = int(self.feature[node]), float(self.threshold[node])
            lo_r, hi_l = lo.copy(), hi.copy()
            hi_l[f] = min(hi[f], t)
            lo_r[f] = max(lo[f], float(np.nextafter(t, np.inf)))
            stack.append((int(self.right[node]), lo_r, hi))
            stack.append((int(self.left[node]), lo, hi_l))
        return out

    def regions(self) -> list[Region]:
        """One box per leaf that some observation reaches (:meth:`leaf_boxes`); the piece is the leaf's node id."""
        number = self.leaf_numbers()
        return [Region.box(node, f"leaf {number[node]}", lo, hi, self.intercept[node], self.coef[node])
                for node, (lo, hi) in self.leaf_boxes().items() if np.all(lo <= hi)]

    def widened(self, columns: Sequence[int], obs_dim: int) -> TreeProgram:
        """The tree reading column ``columns[i]`` of a wider observation wherever it read feature ``i``."""
        coef = widen_columns(self.coef, columns, obs_dim)
        cols = np.asarray([int(c) for c in columns], dtype=np.int64)
        feature = np.where(self.feature >= 0, cols[np.maximum(self.feature, 0)], -1)
        return self.replace(feature=feature, coef=coef)

    exact_shapley = True

    def shapley_values(self, X: np.ndarray, background: np.ndarray,
                       weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact interventional Shapley values of the unclipped leaf outputs (TreeSHAP with affine leaves,
        :func:`interp_rl._shapley.tree_shapley`)."""
        return tree_shapley(feature=self.feature, threshold=self.threshold, left=self.left, right=self.right,
                            intercept=self.intercept, coef=self.coef, X=X, background=background, weights=weights)

    def visit_summary(self, X: np.ndarray) -> str:
        """``5 of 8 leaves visited``."""
        return f"{len(np.unique(self.apply(np.asarray(X, dtype=np.float64))))} of {self.n_leaves} leaves visited"

    def with_affine_pieces(self, intercept: np.ndarray, coef: np.ndarray) -> TreeProgram:
        return self.replace(intercept=intercept, coef=coef)

    # ------------------------------------------------------------------ shape
    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    @property
    def obs_dim(self) -> int:
        return int(self.coef.shape[2])

    @property
    def act_dim(self) -> int:
        return int(self.intercept.shape[1])

    @property
    def is_leaf(self) -> np.ndarray:
        """Boolean mask of leaves, shape ``(n_nodes,)``."""
        return self.left < 0

    @property
    def leaves(self) -> np.ndarray:
        """Leaf node ids in ascending order."""
        return np.flatnonzero(self.is_leaf)

    @property
    def n_leaves(self) -> int:
        return int(self.is_leaf.sum())

    def node_depths(self) -> np.ndarray:
        """Depth of every node (root 0)."""
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        for node in self._preorder():
            if not self.is_leaf[node]:
                depth[self.left[node]] = depth[node] + 1
                depth[self.right[node]] = depth[node] + 1
        return depth

    @property
    def depth(self) -> int:
        return int(self.node_depths().max(initial=0))

    @property
    def n_terms(self) -> int:
        """Non-zero linear coefficients over all leaves."""
        return int(np.count_nonzero(self.coef[self.is_leaf]))

    @property
    def n_parameters(self) -> int:
        """Thresholds plus leaf intercepts plus non-zero leaf coefficients."""
        return int((~self.is_leaf).sum() + self.n_leaves * self.act_dim + self.n_terms)

    @property
    def has_linear_leaves(self) -> bool:
        return self.n_terms > 0

    def size(self) -> dict[str, int]:
        """``parameters``, ``nonzero_terms``, ``leaves`` and ``depth``."""
        return {"parameters": self.n_parameters, "nonzero_terms": self.n_terms, "leaves": self.n_leaves,
                "depth": self.depth}

    def leaf_terms(self, node: int, out: int) -> list[tuple[int, float]]:
        """``[(feature, coef), ...]`` of a leaf's output, ascending feature order."""
        row = self.coef[node, out]
        return [(int(j), float(row[j])) for j in np.flatnonzero(row)]

    def _leaf_class(self, controller: Controller, node: int, precision: int = 3) -> str | None:
        """What a constant leaf plays when the actions are class scores (``heating_setpoint = 22 °C``); ``None``
        for a leaf whose scores depend on the state, or a controller of plain actions."""
        if controller.class_values is None or np.any(self.coef[node]):
            return None
        return controller.played_class(self.clip(self.intercept[node][None, :])[0], precision=precision)

    def _all_classes(self, controller: Controller) -> bool:
        """Every leaf plays one class (constant class scores): a reader is told the class, not the scores."""
        return controller.class_values is not None and not np.any(self.coef[self.is_leaf])

    def leaf_numbers(self) -> dict[int, int]:
        """``{node id: 1, 2, ...}``: leaves numbered from left to right, as people count them."""
        return {node: i + 1 for i, node in enumerate(n for n in self._preorder() if self.is_leaf[n])}

    def _preorder(self) -> list[int]:
        order, stack = [], [0]
        while stack:
            node = stack.pop()
            order.append(node)
            if self.left[node] >= 0:
                stack.append(int(self.right[node]))
                stack.append(int(self.left[node]))
        return order

    def _check(self) -> None:
        n = self.n_nodes
        if n == 0:
            raise ControllerFormatError("A tree needs at least one node.")
        for name in ("threshold", "left", "right", "n_samples", "risk"):
            if len(getattr(self, name)) != n:
                raise ControllerFormatError(f"{name} has {len(getattr(self, name))} entries; expected {n}.")
        internal = self.left >= 0

        def first(bad: np.ndarray) -> int:
            return int(np.flatnonzero(bad)[0])

        if np.any((self.right >= 0) != internal):
            node = first((self.right >= 0) != internal)
            raise ControllerFormatError(
                f"Node {node} has left child {self.left[node]} and right child {self.right[node]}; "
                "a node needs both children (ids >= 0) or none (-1)."
            )
        past = internal & ((self.left >= n) | (self.right >= n))
        if np.any(past):
            node = first(past)
            raise ControllerFormatError(
                f"Node {node} has children ({self.left[node]}, {self.right[node]}); ids must be below "
                f"the node count {n}."
            )
        outside = internal & ((self.feature < 0) | (self.feature >= self.obs_dim))
        if np.any(outside):
            node = first(outside)
            raise ControllerFormatError(
                f"Node {node} splits on feature {self.feature[node]}; split features must be in "
                f"[0, {self.obs_dim})."
            )
        if not np.all(np.isfinite(self.threshold[internal])):
            node = first(internal & ~np.isfinite(self.threshold))
            raise ControllerFormatError(
                f"Node {node} has split threshold {self.threshold[node]}; thresholds must be finite."
            )
        bad_leaf = ~(np.isfinite(self.intercept).all(axis=1) & np.isfinite(self.coef).all(axis=(1, 2)))
        if np.any(bad_leaf):
            node = first(bad_leaf)
            raise ControllerFormatError(
                f"Node {node} has a non-finite leaf parameter; intercepts and coefficients must be finite."
            )
        seen = np.zeros(n, dtype=bool)
        stack = [0]
        while stack:
            node = stack.pop()
            if seen[node]:
                raise ControllerFormatError(f"Node {node} is reached twice; the nodes do not form a tree.")
            seen[node] = True
            if internal[node]:
                stack.extend((int(self.left[node]), int(self.right[node])))
        if not seen.all():
            raise ControllerFormatError(
                f"Node {first(~seen)} cannot be reached from the root; every node must belong to the tree."
            )

    # --------------------------------------------------------------- running
    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf id reached by each row of ``X`` ``(n, obs_dim)``."""
        X = np.asarray(X, dtype=np.float64)
        node = np.zeros(len(X), dtype=np.int64)
        active = np.flatnonzero(self.left[node] >= 0)
        while active.size:
            cur = node[active]
            go_left = X[active, self.feature[cur]] <= self.threshold[cur]
            node[active] = np.where(go_left, self.left[cur], self.right[cur])
            active = active[self.left[node[active]] >= 0]
        return node

    def decision_path(self, x: np.ndarray) -> list[int]:
        """Node ids from the root to the leaf for one observation ``x`` ``(obs_dim,)``."""
        x = np.asarray(x, dtype=np.float64).ravel()
        path, node = [0], 0
        while self.left[node] >= 0:
            node = int(self.left[node] if x[self.feature[node]] <= self.threshold[node] else self.right[node])
            path.append(node)
        return path

    def leaf_actions(self, X: np.ndarray, leaf: np.ndarray) -> np.ndarray:
        """Unclipped affine leaf outputs for rows ``X`` at leaves ``leaf``."""
        y = self.intercept[leaf].copy()
        cols = np.flatnonzero(np.any(self.coef[self.is_leaf] != 0.0, axis=(0, 1)))
        for j in cols:
            y += self.coef[leaf, :, j] * X[:, j : j + 1]
        return y

    def raw_predict(self, X: np.ndarray) -> np.ndarray:
        """Unclipped actions ``(n, act_dim)`` for raw observations ``X``."""
        X = np.asarray(X, dtype=np.float64)
        return self.leaf_actions(X, self.apply(X))

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; floats round-trip exactly."""
        terms = [
            [int(n), int(o), int(j), float(self.coef[n, o, j])] for n, o, j in np.argwhere(self.coef != 0.0)
        ]
        return {
            "kind": self.kind,
            "obs_dim": self.obs_dim,
            "act_dim": self.act_dim,
            "feature": self.feature.tolist(),
            "threshold": self.threshold.tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "intercept": self.intercept.tolist(),
            "terms": terms,
            "n_samples": self.n_samples.tolist(),
            "risk": self.risk.tolist(),
            **self._bounds_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TreeProgram:
        try:
            obs_dim = int(d["obs_dim"])
            coef: dict[int, dict[tuple[int, int], float]] = {}
            for n, o, j, c in d["terms"]:
                coef.setdefault(int(n), {})[(int(o), int(j))] = float(c)
            return cls.from_leaves(
                feature=d["feature"], threshold=d["threshold"], left=d["left"], right=d["right"],
                intercept=d["intercept"], obs_dim=obs_dim, coef=coef,
                n_samples=d.get("n_samples", []), risk=d.get("risk", []),
                action_low=[float(v) for v in d["action_low"]],
                action_high=[float(v) for v in d["action_high"]],
            )
        except ControllerFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ControllerFormatError(
                f"The tree program is malformed: {type(exc).__name__}: {exc}."
            ) from None

    # ------------------------------------------------------------------ text
    def _share(self, node: int) -> str:
        """``40%``: the node's share of the (weighted) training data, or '' when unknown."""
        total = float(self.n_samples[0])
        n = float(self.n_samples[node])
        if total <= 0 or n <= 0:
            return ""
        pct = 100.0 * n / total
        return f"{pct:.0f}%" if pct >= 1 else f"{pct:.1g}%"

    def _leaves_below(self, per_leaf: np.ndarray) -> np.ndarray:
        """Sum of ``per_leaf`` over the leaves under each node (the node itself if a leaf)."""
        total = np.where(self.is_leaf, per_leaf, 0.0).astype(np.float64)
        for node in reversed(self._preorder()):
            if not self.is_leaf[node]:
                total[node] = total[self.left[node]] + total[self.right[node]]
        return total

    def _expr(self, node: int, out: int, names: Sequence[str], fmt: Any, max_terms: int | None = None) -> str:
        return cg.affine_text(float(self.intercept[node, out]), self.leaf_terms(node, out), names, fmt,
                              max_terms)

    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None,
                leaf_text: Callable[[int], str] | None = None) -> str:
        """The rules as indented text, like :func:`sklearn.tree.export_text` with names.

        Each split prints its two conditions (left is ``<=``), each leaf its number (left to
        right), its actions (``intercept + c*feature`` for linear leaves) and its share of the
        training data. A last line lists the action bounds, if any. Subtrees below
        ``max_depth`` print as ``... (k leaves below)``. ``leaf_text(node)``, when given, replaces
        what a leaf says (a routing tree names its expert).
        """
        fmt = partial(cg.fixed, precision=precision)
        names = controller.feature_names
        n_below = self._leaves_below(np.ones(self.n_nodes))
        depth = self.node_depths()
        number = self.leaf_numbers()

        lines: list[str] = []
        stack: list[str | tuple[int, int]] = [(0, 0)]  # a line to print, or (node, indent)
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                lines.append(item)
                continue
            node, indent = item
            bar = "|   " * indent + "|--- "
            if self.is_leaf[node]:
                share = self._share(node)
                share = f"   ({share} of data)" if share else ""
                if leaf_text is not None:
                    lines.append(f"{bar}{leaf_text(node)}{share}")
                    continue
                text = self._leaf_class(controller, node, precision) or ", ".join(
                    f"{a.label} = {self._expr(node, o, names, fmt)}" for o, a in enumerate(controller.actions)
                )
                lines.append(f"{bar}leaf {number[node]}: {text}{share}")
            elif max_depth is not None and depth[node] >= max_depth:
                lines.append(bar + f"... ({int(n_below[node])} leaves below)")
            else:
                label = controller.features[self.feature[node]].label
                thr = fmt(float(self.threshold[node]))
                stack += [
                    (int(self.right[node]), indent + 1),
                    f"{bar}{label} >  {thr}",
                    (int(self.left[node]), indent + 1),
                    f"{bar}{label} <= {thr}",
                ]
        note = self.clip_note(controller, fmt) if leaf_text is None and not self._all_classes(controller) else None
        if note:
            lines.append(note)
        return "\n".join(lines)

    def split_path_text(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> list[str]:
        """The splits ``x`` passes, one line each: ``thigh_angle = 0.25 rad > 0.2``."""
        x = np.asarray(x, dtype=np.float64).ravel()
        path = self.decision_path(x)
        lines = []
        for node, child in zip(path, path[1:], strict=False):
            feat = controller.features[self.feature[node]]
            value, thr = cg.apart(float(x[self.feature[node]]), float(self.threshold[node]), precision)
            unit = f" {feat.unit}" if feat.unit else ""
            op = "<=" if child == self.left[node] else ">"
            lines.append(f"{feat.name} = {value}{unit} {op} {thr}")
        return lines

    def explain_decision(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> str:
        """The splits one observation passes, with its values, the leaf reached and its actions.

        A value that rounds like its threshold is shown with more digits, so the comparison
        always reads true; a clipped action shows its value before and after clipping.
        """
        x = np.asarray(x, dtype=np.float64).ravel()
        fmt = partial(cg.compact, precision=precision)
        lines = self.split_path_text(controller, x, precision=precision)
        leaf = self.decision_path(x)[-1]
        share = self._share(leaf)
        lines.append(f"→ leaf {self.leaf_numbers()[leaf]} of {self.n_leaves}"
                     + (f" ({share} of data)" if share else ""))
        if (played := self._leaf_class(controller, leaf, precision)) is not None:
            lines.append(f"  plays {played}")
            return "\n".join(lines)
        raw = self.leaf_actions(x[None, :], np.array([leaf]))[0]
        clipped = self.clip(raw)
        for out, action in enumerate(controller.actions):
            line = f"  {action.label} = {self._expr(leaf, out, controller.feature_names, fmt)}"
            shown_raw, shown_clipped = cg.apart(float(raw[out]), float(clipped[out]), precision)
            if self.leaf_terms(leaf, out):
                line += f" = {shown_raw}"
            if clipped[out] != raw[out]:
                line += f" → clipped to {shown_clipped}"
            lines.append(line)
        return "\n".join(lines)

    # ------------------------------------------------------------------- DOT
    def _visits_array(self, leaf_visits: Any) -> np.ndarray:
        n = self.n_nodes
        if isinstance(leaf_visits, Mapping):
            visits = np.zeros(n)
            for key, c in leaf_visits.items():
                if not isinstance(key, (int, np.integer)) or not 0 <= key < n:
                    raise bad_value("leaf_visits", "to_dot", f"keyed by node ids in [0, {n})", key)
                visits[int(key)] += float(c)
        else:
            visits = np.asarray(leaf_visits, dtype=np.float64)
            if visits.shape != (n,):
                raise bad_value("leaf_visits", "to_dot", f"one count per node, shape ({n},)",
                                f"shape {visits.shape}")
        if not np.all(np.isfinite(visits)) or np.any(visits < 0):
            raise bad_value("leaf_visits", "to_dot", "finite counts >= 0", "a negative or non-finite count")
        internal = np.flatnonzero((visits != 0) & ~self.is_leaf)
        if internal.size:
            raise InvalidParameterError(
                f"leaf_visits counts visits at internal node {int(internal[0])}; only leaves are visited "
                "(use leaf_visit_counts or np.bincount(program.apply(X), minlength=n_nodes))."
            )
        return visits

    def _check_path(self, highlight_path: Sequence[int]) -> list[int]:
        path = [int(v) for v in highlight_path]
        for node in path:
            if not 0 <= node < self.n_nodes:
                raise bad_value("highlight_path", "to_dot", f"node ids in [0, {self.n_nodes})", node)
        for parent, child in zip(path, path[1:], strict=False):
            if child not in (self.left[parent], self.right[parent]):
                raise InvalidParameterError(
                    f"highlight_path must run from parent to child like program.decision_path(x); "
                    f"node {child} is not a child of node {parent}."
                )
        return path

    def to_dot(self, controller: Controller, *, obs: np.ndarray | None = None, states: np.ndarray | None = None,
               max_depth: int | None = None, title: str | None = None, precision: int = 3,
               highlight_path: Sequence[int] | None = None,
               leaf_visits: Mapping[int, float] | Sequence[float] | np.ndarray | None = None,
               max_terms: int = 3) -> str:
        """The tree as Graphviz DOT text (see :func:`interp_rl.viz.to_dot`).

        ``obs`` highlights its decision path (or give ``highlight_path``, node ids from parent to
        child); ``states`` shade the leaves by visits (or give ``leaf_visits``, a count per node
        id or ``{leaf_id: count}``). ``max_terms`` limits the linear terms shown per action.
        """
        from interp_rl.dot import dot_attrs, dot_header, dot_label

        max_terms = check_int(max_terms, "max_terms", "to_dot", low=1)
        if obs is not None:
            highlight_path = self.decision_path(obs)
        if states is not None:
            leaf_visits = np.bincount(self.apply(states), minlength=self.n_nodes)
        fmt = partial(cg.compact, precision=precision)
        names = controller.feature_names
        depth = self.node_depths()
        n_below = self._leaves_below(np.ones(self.n_nodes))
        number = self.leaf_numbers()

        path = self._check_path(highlight_path) if highlight_path is not None else []
        on_path = set(path)
        path_edges = set(zip(path, path[1:], strict=False))

        def truncated(node: int) -> bool:
            return not self.is_leaf[node] and max_depth is not None and bool(depth[node] >= max_depth)

        # The drawn nodes, in preorder: internal splits, leaves and "…" stand-ins.
        drawn: list[int] = []
        stack = [0]
        while stack:
            node = stack.pop()
            drawn.append(node)
            if not self.is_leaf[node] and not truncated(node):
                stack += [int(self.right[node]), int(self.left[node])]
        boxes = [node for node in drawn if self.is_leaf[node] or truncated(node)]

        extra: dict[int, list[str]] = {node: [] for node in boxes}
        fill: dict[int, tuple[str, str]] = {}
        if leaf_visits is not None:
            visits = self._leaves_below(self._visits_array(leaf_visits))
            box_visits = visits[boxes]
            pct = _percentages(box_visits)
            peak = float(box_visits.max(initial=0.0))
            for node, p, v in zip(boxes, pct, box_visits, strict=True):
                extra[node].append(f"visits {p}% ({cg.count(float(v))})")
                fill[node] = _shade(v / peak if peak > 0 else 0.0)

        out = dot_header(controller, title=title, fmt=fmt, clip=not self._all_classes(controller))

        parent = {int(c): p for p in range(self.n_nodes) for c in (self.left[p], self.right[p]) if c >= 0}
        for node in drawn:
            if node != 0:
                up = parent[node]
                attrs = {"label": '"yes"' if node == self.left[up] else '"no"'}
                if (up, node) in path_edges:
                    attrs |= {"color": _HIGHLIGHT, "penwidth": "2.5"}
                out.append(f"  n{up} -> n{node} {dot_attrs(attrs)};")
            if self.is_leaf[node] and (played := self._leaf_class(controller, node, precision)) is not None:
                lines = [f"leaf {number[node]}", played]
                share = self._share(node)
                lines += [f"{share} of data"] if share else []
                style = '"rounded,filled"'
            elif self.is_leaf[node]:
                lines = [f"leaf {number[node]}"]
                for o, a in enumerate(controller.actions):
                    lines += _wrapped(f"{a.label} = ", self._expr(node, o, names, fmt, max_terms))
                share = self._share(node)
                lines += [f"{share} of data"] if share else []
                style = '"rounded,filled"'
            elif truncated(node):
                lines = [f"… {int(n_below[node])} leaves"]
                style = '"dashed,filled"' if node in fill else '"dashed"'
            else:
                feat = controller.features[self.feature[node]]
                unit = f" {feat.unit}" if feat.unit else ""
                lines = [f"{feat.name} <= {fmt(float(self.threshold[node]))}{unit}"]
                style = ""
            attrs = {"label": dot_label(lines + extra.get(node, []))}
            if style:
                attrs["style"] = style
            if node in fill:
                attrs["fillcolor"], attrs["fontcolor"] = fill[node]
            elif self.is_leaf[node]:
                attrs["fillcolor"] = f'"{_LEAF_FILL}"'
            if node in on_path:
                attrs |= {"color": _HIGHLIGHT, "penwidth": "2.5"}
            out.append(f"  n{node} {dot_attrs(attrs)};")
        out.append("}")
        return "\n".join(out)

    # ------------------------------------------------------------------ code
    def _events(self) -> list[tuple[str, int, int]]:
        """``(kind, node, depth)`` in source order; kind is ``if``, ``else``, ``end`` or ``leaf``.

        Iterative, so a deep tree does not hit Python's recursion limit.
        """
        events: list[tuple[str, int, int]] = []
        stack: list[tuple[str, int, int]] = [("visit", 0, 0)]
        while stack:
            kind, node, depth = stack.pop()
            if kind != "visit":
                events.append((kind, node, depth))
            elif self.left[node] < 0:
                events.append(("leaf", node, depth))
            else:
                events.append(("if", node, depth))
                stack.extend([
                    ("end", node, depth),
                    ("visit", int(self.right[node]), depth + 1),
                    ("else", node, depth),
                    ("visit", int(self.left[node]), depth + 1),
                ])
        return events

    #: Deepest tree the Python export can write: CPython allows 100 levels of indentation and a
    #: leaf at depth ``d`` sits at level ``d + 1`` inside ``act``.
    MAX_PYTHON_DEPTH = 98

    def code_lines(self, controller: Controller, python: bool,
                   leaf_lines: Callable[[int, str], list[str]] | None = None) -> list[str]:
        """The tree as nested ``if``/``else`` in Python or C; ``leaf_lines(node, indent)`` writes each leaf
        (default: its number as a comment, then its actions ``y0 = ...``)."""
        number = self.leaf_numbers()
        lines: list[str] = []
        end = "" if python else ";"
        for kind, node, depth in self._events():
            ind = "    " * depth
            if kind == "if":
                f = int(self.feature[node])
                test = f"obs[{f}] <= {cg.lit(self.threshold[node])}"
                label = cg.comment(controller.features[f].label)
                lines.append(f"{ind}if {test}:  # {label}" if python else f"{ind}if ({test}) {{  /* {label} */")
            elif kind == "else":
                lines.append(f"{ind}else:" if python else f"{ind}}} else {{")
            elif kind == "end":
                if not python:
                    lines.append(f"{ind}}}")
            elif leaf_lines is not None:
                lines += leaf_lines(node, ind)
            else:
                tag = f"leaf {number[node]} of {self.n_leaves}"
                if (played := self._leaf_class(controller, node)) is not None:
                    tag += f": plays {cg.comment(played)}"
                lines.append(f"{ind}# {tag}" if python else f"{ind}/* {tag} */")
                for out in range(self.act_dim):
                    parts = cg.affine_parts(self.intercept[node, out], self.leaf_terms(node, out))
                    lines += cg.assignment(ind, f"y{out}", parts, end, python=python)
                if python and self.act_dim == 0:
                    lines.append(f"{ind}pass")
        return lines

    def python_body(self, controller: Controller) -> list[str]:
        """Nested ``if``/``else`` blocks following the tree, each split commented with its feature."""
        from interp_rl.errors import ExportError

        if self.depth > self.MAX_PYTHON_DEPTH:
            raise ExportError(
                f"The tree has depth {self.depth}, deeper than the {self.MAX_PYTHON_DEPTH} levels of nested "
                "blocks Python allows; export it to C (to_c) or prune it."
            )
        return self.code_lines(controller, python=True)

    def c_body(self, controller: Controller) -> list[str]:
        """Nested ``if``/``else`` blocks following the tree, each split commented with its feature."""
        return self.code_lines(controller, python=False)

    def onnx_leaf(self, graph: OnnxGraph) -> str:
        """ONNX: the leaf (node id, ``(N,)`` int64) each observation reaches, as :meth:`apply` finds it."""
        return graph.walk_tree(self.feature, self.threshold, self.left, self.right)

    def onnx_graph(self, graph: OnnxGraph) -> str:
        """The leaf each observation reaches (the tree walked one level at a time), then that leaf's
        ``y = intercept`` and ``y = y + coef_j * obs[:, j]`` for the features some leaf uses, ascending, as
        :meth:`leaf_actions` computes them."""
        coef = np.where(self.is_leaf[:, None, None], self.coef, 0.0)  # as leaf_actions: only the leaves' terms
        return graph.gathered_affine(self.onnx_leaf(graph), self.intercept, coef)


def _wrapped(head: str, expr: str) -> list[str]:
    """``head + expr`` on one line, or broken before each ``+``/``-`` term when long (for pictures)."""
    if len(head) + len(expr) <= _DOT_LINE:
        return [head + expr]
    lines, cur = [], head
    for tok in expr.replace(" - ", " \x00- ").replace(" + ", " \x00+ ").split(" \x00"):
        if len(cur) + len(tok) + 1 > _DOT_LINE and cur.strip():
            lines.append(cur.rstrip())
            cur = "    "
        cur += tok + " "
    lines.append(cur.rstrip())
    return lines


def _shade(t: float) -> tuple[str, str]:
    """Fill colour ``t`` of the way from light to dark blue, and a readable font colour."""
    rgb = (round(lo + (hi - lo) * t) for lo, hi in zip(_LIGHT, _DARK, strict=True))
    return '"#' + "".join(f"{c:02x}" for c in rgb) + '"', ('"white"' if t > 0.55 else '"black"')


def _percentages(values: np.ndarray) -> np.ndarray:
    """Whole percentages of ``values`` that sum to exactly 100 (largest remainders round up)."""
    total = float(values.sum())
    if total <= 0:
        return np.zeros(len(values), dtype=np.int64)
    exact = 100.0 * values / total
    pct = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - pct), kind="stable")
    pct[order[: 100 - int(pct.sum())]] += 1
    return pct


def leaf_visit_counts(controller: Controller, observations: Any) -> np.ndarray:
    """How many of ``observations`` reach each node's leaf (a tree controller).

    Parameters
    ----------
    controller : Controller
        A controller whose program is a :class:`TreeProgram`.
    observations : array-like of shape (n, obs_dim) or (obs_dim,)
        Raw observations.

    Returns
    -------
    ndarray of int64, shape (n_nodes,)
        Count per node id; zero at internal nodes. Pass it to :func:`interp_rl.viz.to_dot`
        as ``leaf_visits``.

    Examples
    --------
    >>> from interp_rl.program import Controller
    >>> prog = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[0.2, 0, 0], left=[1, -1, -1],
    ...                                right=[2, -1, -1], intercept=[[0.0], [-0.5], [0.1]], obs_dim=2)
    >>> leaf_visit_counts(Controller(prog), [[0.0, 1.0], [0.1, 1.0], [0.9, 1.0]])
    array([0, 2, 1])
    """
    prog = controller.program
    if not isinstance(prog, TreeProgram):
        raise bad_value("controller", "leaf_visit_counts", "a tree controller", controller.kind)
    arr, _ = controller.check_obs(observations)
    return np.bincount(prog.apply(arr), minlength=prog.n_nodes).astype(np.int64)
