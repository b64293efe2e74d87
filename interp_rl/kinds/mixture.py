"""Sparse mixtures of linear experts: the ``mixture`` program kind (SMOSE's controllers).

A router picks one of ``M`` experts for each observation; the expert, an affine map like a
:class:`~interp_rl.kinds.linear.LinearProgram`, gives the actions. The router is either linear
(one score per expert, the highest wins) or a decision tree whose leaves name an expert. Few
experts with few terms each make a controller a person reads as "in this regime, these
equations".

Arithmetic (bit-identical in every runtime):

* linear router: ``s_m = b_m`` then ``s_m = s_m + w_mj * x_j`` for the non-zero weights in
  ascending feature order; the expert is the first ``m`` with the largest ``s_m`` (a later
  score wins only when strictly greater);
* tree router: the tree is walked as a :class:`~interp_rl.kinds.tree.TreeProgram` is (left
  when ``x_f <= threshold``); the leaf names the expert;
* score-tree router (SMOSE's one tree per expert): tree ``m`` is walked the same way and its leaf
  holds the score ``s_m``; the expert is the first with the largest score, as for the linear
  router;
* the chosen expert: ``y = intercept`` then ``y = y + coef_j * x_j`` for its non-zero terms in
  ascending feature order;
* with ``squash="tanh"`` (mixtures trained by SAC, whose actions are squashed), then
  ``y = low + 0.5 * (tanh(y) + 1.0) * (high - low)`` with the C library's ``tanh``;
* then ``y = min(max(y, low), high)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

import interp_rl._codegen as cg
from interp_rl._shapley import tree_shapley
from interp_rl.errors import ControllerFormatError
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import (
    SQUASHES,
    AffinePieces,
    ProgramBase,
    Region,
    register_program,
    tanh_squash,
    widen_columns,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interp_rl._onnx import OnnxGraph
    from interp_rl.program import Controller

__all__ = ["SQUASHES", "MixtureProgram", "router_tree"]


def _score_tree_boxes(trees: Sequence[TreeProgram], lower: np.ndarray,
                      upper: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``[(expert, lower, upper), ...]``: boxes covering ``[lower, upper]`` in each of which one expert's score
    tree gives the largest score (the first of equal ones), found by cutting boxes along the trees' splits
    only until the winner is settled."""
    spans = []  # per tree: (min, max) leaf score under each node
    for t in trees:
        lo, hi = t.intercept[:, 0].copy(), t.intercept[:, 0].copy()
        for node in reversed(t._preorder()):
            if not t.is_leaf[node]:
                kids = [int(t.left[node]), int(t.right[node])]
                lo[node], hi[node] = lo[kids].min(), hi[kids].max()
        spans.append((lo, hi))
    out: list[tuple[int, np.ndarray, np.ndarray]] = []
    stack = [(lower, upper, [0] * len(trees))]
    while stack:
        lo, hi, nodes = stack.pop()
        nodes = list(nodes)
        for k, t in enumerate(trees):  # the deepest node of each tree whose box holds all of [lo, hi]
            n = nodes[k]
            while not t.is_leaf[n]:
                f, th = int(t.feature[n]), float(t.threshold[n])
                if hi[f] <= th:
                    n = int(t.left[n])
                elif lo[f] > th:
                    n = int(t.right[n])
                else:
                    break
            nodes[k] = n
        smin = np.array([spans[k][0][n] for k, n in enumerate(nodes)])
        smax = np.array([spans[k][1][n] for k, n in enumerate(nodes)])
        winner = next((m for m in range(len(trees))
                       if np.all(smin[m] > smax[:m]) and np.all(smin[m] >= smax[m + 1:])), None)
        if winner is not None:
            out.append((winner, lo, hi))
            continue
        k = next(k for k, t in enumerate(trees) if not t.is_leaf[nodes[k]])
        t, n = trees[k], nodes[k]
        f, th = int(t.feature[n]), float(t.threshold[n])
        hi_l, lo_r = hi.copy(), lo.copy()
        hi_l[f], lo_r[f] = th, float(np.nextafter(th, np.inf))
        stack += [(lo_r, hi, nodes), (lo, hi_l, nodes)]
    return out


def router_tree(*, feature: Any, threshold: Any, left: Any, right: Any, expert: Any, obs_dim: int,
                n_samples: Any = ()) -> TreeProgram:
    """A routing tree: a :class:`TreeProgram` with one constant output per leaf, the expert's index.

    >>> t = router_tree(feature=[0, -1, -1], threshold=[0.0, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
    ...                 expert=[0, 1, 0], obs_dim=2)
    >>> t.predict(np.array([[-1.0, 0.0], [1.0, 0.0]]))[:, 0].tolist()
    [1.0, 0.0]
    """
    expert = np.asarray(expert, dtype=np.float64).reshape(-1, 1)
    return TreeProgram.from_leaves(feature=feature, threshold=threshold, left=left, right=right, intercept=expert,
                                   obs_dim=obs_dim, n_samples=list(n_samples))


@register_program
@dataclass
class MixtureProgram(ProgramBase):
    """A top-1 mixture of affine experts with a linear or tree router, then clipping.

    Parameters
    ----------
    expert_intercept : ndarray of shape (n_experts, act_dim)
        Constant part of each expert's actions.
    expert_coef : ndarray of shape (n_experts, act_dim, obs_dim)
        Each expert's coefficients; zeros are absent terms.
    router_intercept, router_coef : ndarray of shape (n_experts,) and (n_experts, obs_dim)
        The linear router's scores (empty when ``tree`` routes).
    tree : TreeProgram, optional
        A routing tree (see :func:`router_tree`) used instead of the linear router.
    score_trees : list of TreeProgram, optional
        One tree per expert whose constant leaves give its score (instead of the linear router).
    usage : ndarray of shape (n_experts,)
        Share of the training data each expert acted on (zeros when unknown), for explanations.
    action_low, action_high : ndarray of shape (act_dim,)
        Actions are clipped to these bounds (``-inf``/``inf`` for none).
    squash : {"clip", "tanh"}, default="clip"
        ``"tanh"`` maps each expert's output ``z`` into the (finite) bounds as SAC does,
        ``low + (high - low) * (tanh(z) + 1) / 2``, before the clip.

    Examples
    --------
    Two experts switching on the sign of ``x0``: ``u = x1`` when ``x0 > 0``, else ``u = -2 x1``.

    >>> import numpy as np
    >>> p = MixtureProgram(expert_intercept=[[0.0], [0.0]], expert_coef=[[[0.0, 1.0]], [[0.0, -2.0]]],
    ...                    router_intercept=[0.0, 0.0], router_coef=[[1.0, 0.0], [-1.0, 0.0]])
    >>> p.predict(np.array([[0.5, 3.0], [-0.5, 3.0]]))
    array([[ 3.],
           [-6.]])
    >>> p.size()
    {'parameters': 8, 'nonzero_terms': 2, 'experts': 2, 'router_parameters': 4}
    """

    expert_intercept: np.ndarray
    expert_coef: np.ndarray
    router_intercept: np.ndarray = field(default_factory=lambda: np.zeros(0))
    router_coef: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    tree: TreeProgram | None = None
    score_trees: list[TreeProgram] | None = None
    usage: np.ndarray = field(default_factory=lambda: np.zeros(0))
    action_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    action_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    squash: str = "clip"

    kind = "mixture"
    title = "Mixtures"
    rules_title = "Equations"
    piece_names = ("expert", "experts")
    compared_with = "tree"  # SMOSE's claim: a mixture reads as easily as a tree of its size, and does better

    def __post_init__(self) -> None:
        self.expert_intercept = np.asarray(self.expert_intercept, dtype=np.float64)
        self.expert_coef = np.asarray(self.expert_coef, dtype=np.float64)
        if self.expert_intercept.ndim != 2 or len(self.expert_intercept) < 1:
            raise ControllerFormatError(
                f"expert_intercept must have shape (n_experts >= 1, act_dim); got {self.expert_intercept.shape}."
            )
        m, act_dim = self.expert_intercept.shape
        if self.expert_coef.ndim != 3 or self.expert_coef.shape[:2] != (m, act_dim):
            raise ControllerFormatError(
                f"expert_coef must have shape (n_experts={m}, act_dim={act_dim}, obs_dim); "
                f"got {self.expert_coef.shape}."
            )
        if not (np.all(np.isfinite(self.expert_intercept)) and np.all(np.isfinite(self.expert_coef))):
            bad = int(np.flatnonzero(~(np.isfinite(self.expert_intercept).all(axis=1)
                                       & np.isfinite(self.expert_coef).all(axis=(1, 2))))[0])
            raise ControllerFormatError(f"Expert {bad + 1} has a non-finite parameter; parameters must be finite.")
        self.router_intercept = np.asarray(self.router_intercept, dtype=np.float64).ravel()
        self.router_coef = np.asarray(self.router_coef, dtype=np.float64)
        if self.score_trees is not None:
            if self.tree is not None:
                raise ControllerFormatError("A mixture has one router: a tree or score trees, not both.")
            self.score_trees = list(self.score_trees)
            if len(self.score_trees) != m:
                raise ControllerFormatError(f"There are {len(self.score_trees)} score trees for {m} experts; "
                                            "there must be one per expert.")
            for k, t in enumerate(self.score_trees):
                if t.obs_dim != self.obs_dim or t.act_dim != 1 or t.has_linear_leaves:
                    raise ControllerFormatError(
                        f"Score tree {k + 1} reads {t.obs_dim} features and gives {t.act_dim} outputs; it must read "
                        f"{self.obs_dim} and give 1 constant score per leaf."
                    )
            self.router_intercept, self.router_coef = np.zeros(0), np.zeros((0, self.obs_dim))
        elif self.tree is None:
            if self.router_intercept.shape != (m,) or self.router_coef.shape != (m, self.obs_dim):
                raise ControllerFormatError(
                    f"A linear router needs router_intercept of shape ({m},) and router_coef of shape "
                    f"({m}, {self.obs_dim}); got {self.router_intercept.shape} and {self.router_coef.shape}."
                )
            if not (np.all(np.isfinite(self.router_intercept)) and np.all(np.isfinite(self.router_coef))):
                raise ControllerFormatError("A router weight is not finite; router weights must be finite.")
        else:
            if self.tree.obs_dim != self.obs_dim or self.tree.act_dim != 1:
                raise ControllerFormatError(
                    f"The routing tree reads {self.tree.obs_dim} features and gives {self.tree.act_dim} "
                    f"outputs; it must read {self.obs_dim} and give 1 (the expert)."
                )
            ids = self.tree.intercept[self.tree.is_leaf, 0]
            if np.any(ids != np.round(ids)) or np.any(ids < 0) or np.any(ids >= m):
                bad = ids[(ids != np.round(ids)) | (ids < 0) | (ids >= m)][0]
                raise ControllerFormatError(
                    f"A routing leaf names expert index {bad:g}; indices must be whole numbers in [0, {m})."
                )
            self.router_intercept, self.router_coef = np.zeros(0), np.zeros((0, self.obs_dim))
        self.usage = np.asarray(self.usage, dtype=np.float64).ravel()
        if self.usage.size == 0:
            self.usage = np.zeros(m)
        if self.usage.shape != (m,) or not np.all(np.isfinite(self.usage)):
            raise ControllerFormatError(f"usage must hold {m} finite shares; got {self.usage.tolist()}.")
        self._init_bounds(self.action_low, self.action_high, act_dim)
        self._check_squash(self.squash)

    # ------------------------------------------------------------------ shape and size
    @property
    def n_experts(self) -> int:
        return int(self.expert_intercept.shape[0])

    @property
    def obs_dim(self) -> int:
        return int(self.expert_coef.shape[2])

    @property
    def act_dim(self) -> int:
        return int(self.expert_intercept.shape[1])

    @property
    def router(self) -> str:
        """``'linear'``, ``'tree'`` or ``'trees'`` (one score tree per expert)."""
        if self.score_trees is not None:
            return "trees"
        return "linear" if self.tree is None else "tree"

    @property
    def n_terms(self) -> int:
        """Non-zero expert coefficients."""
        return int(np.count_nonzero(self.expert_coef))

    def router_size(self) -> int:
        """Router parameters: biases plus non-zero weights, or the tree's thresholds plus its leaves."""
        if self.score_trees is not None:
            return int(sum((~t.is_leaf).sum() + t.n_leaves for t in self.score_trees))
        if self.tree is None:
            return self.n_experts + int(np.count_nonzero(self.router_coef))
        return int((~self.tree.is_leaf).sum() + self.tree.n_leaves)

    def size(self) -> dict[str, int]:
        """``parameters`` (all), ``nonzero_terms`` (expert coefficients), ``experts``, the router's size."""
        out = {"parameters": self.n_experts * self.act_dim + self.n_terms + self.router_size(),
               "nonzero_terms": self.n_terms, "experts": self.n_experts, "router_parameters": self.router_size()}
        if self.tree is not None:
            out["router_depth"] = self.tree.depth
        if self.score_trees is not None:
            out["router_depth"] = max(t.depth for t in self.score_trees)
        return out

    def cannot(self, capability: str) -> str | None:
        """A mixture routed by one decision tree cannot drop experts (each router leaf names one)."""
        if capability == "drop_pieces" and self.router == "tree":
            return "A mixture routed by one decision tree names one expert per leaf: it has no next choice."
        return super().cannot(capability)

    def without_pieces(self, drop: Sequence[int]) -> MixtureProgram:
        """:meth:`without_experts` (the pieces are the experts); refused for a routing tree."""
        if self.router == "tree":
            raise TypeError("A mixture routed by one decision tree names one expert per leaf: it has no next choice.")
        return self.without_experts(drop)

    def without_experts(self, drop: Sequence[int]) -> MixtureProgram:
        """This mixture with experts ``drop`` (0-based) removed: where one of them acted, the router's next
        choice acts (the highest remaining score). For a linear router or score trees; a routing tree names
        one expert per leaf, so it has no next choice and is refused.

        >>> p = MixtureProgram(expert_intercept=[[1.0], [2.0], [3.0]], expert_coef=np.zeros((3, 1, 1)),
        ...                    router_intercept=[0.0, 1.0, 0.5], router_coef=np.zeros((3, 1)))
        >>> p.predict(np.zeros((1, 1))), p.without_experts([1]).predict(np.zeros((1, 1)))
        (array([[2.]]), array([[3.]]))
        """
        gone = sorted({int(m) for m in drop})
        if any(not 0 <= m < self.n_experts for m in gone):
            raise ValueError(f"Experts to drop must be in [0, {self.n_experts}); got {list(drop)}.")
        keep = [m for m in range(self.n_experts) if m not in gone]
        if not keep:
            raise ValueError(f"Dropping experts {list(drop)} leaves none of the {self.n_experts}.")
        if self.tree is not None:
            raise ValueError("A routing tree names one expert per leaf, so a dropped expert has no next choice; "
                             "distil the router again without it.")
        trees = None if self.score_trees is None else [self.score_trees[m] for m in keep]
        return dataclasses.replace(
            self, expert_intercept=self.expert_intercept[keep], expert_coef=self.expert_coef[keep],
            router_intercept=self.router_intercept[keep] if trees is None else np.zeros(0),
            router_coef=self.router_coef[keep] if trees is None else np.zeros((0, self.obs_dim)),
            score_trees=trees, usage=self.usage[keep])

    def expert(self, m: int) -> LinearProgram:
        """Expert ``m`` (0-based) as a linear program with this mixture's bounds."""
        return LinearProgram(intercept=self.expert_intercept[m], coef=self.expert_coef[m],
                             action_low=self.action_low, action_high=self.action_high)

    def router_terms(self, m: int) -> list[tuple[int, float]]:
        """``[(feature, weight), ...]`` of expert ``m``'s score, ascending feature order."""
        row = self.router_coef[m]
        return [(int(j), float(row[j])) for j in np.flatnonzero(row)]

    # ------------------------------------------------------------------ running
    def scores(self, X: np.ndarray) -> np.ndarray:
        """Router scores ``(n, n_experts)``: the linear scores summed in the contract's order, or the score trees'."""
        X = np.asarray(X, dtype=np.float64)
        if self.score_trees is not None:
            return np.stack([t.intercept[t.apply(X), 0] for t in self.score_trees], axis=1)
        # Every expert's terms in ascending feature order, added left to right from the intercept (the C
        # export's order: add.accumulate adds sequentially, unlike sum); an expert with fewer terms adds
        # exact zeros after its last one.
        feats, weights = self._router_table()
        parts = np.concatenate([np.broadcast_to(self.router_intercept[None, :, None], (len(X), self.n_experts, 1)),
                                X[:, feats] * weights[None]], axis=2)
        return np.add.accumulate(parts, axis=2)[:, :, -1]

    def _router_table(self) -> tuple[np.ndarray, np.ndarray]:
        """``(features, weights)``, each ``(n_experts, most terms)``: expert ``m``'s score terms, padded with
        weight 0 on feature 0 (cached while the router's weights stay the same)."""
        key = self.router_coef.tobytes()
        cached = self.__dict__.get("_router_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        rows = [self.router_terms(m) for m in range(self.n_experts)]
        width = max((len(r) for r in rows), default=0)
        feats = np.zeros((self.n_experts, width), dtype=np.int64)
        weights = np.zeros((self.n_experts, width))
        for m, r in enumerate(rows):
            for k, (j, w) in enumerate(r):
                feats[m, k], weights[m, k] = j, w
        self.__dict__["_router_cache"] = (key, (feats, weights))
        return feats, weights

    def route(self, X: np.ndarray) -> np.ndarray:
        """The expert (0-based) acting on each row of ``X``."""
        X = np.asarray(X, dtype=np.float64)
        if self.tree is not None:
            return self.tree.intercept[self.tree.apply(X), 0].astype(np.int64)
        return np.argmax(self.scores(X), axis=1).astype(np.int64)  # argmax keeps the first of equal maxima

    def raw_predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        chosen = self.route(X)
        y = np.empty((len(X), self.act_dim))
        for m in np.unique(chosen):
            rows = np.flatnonzero(chosen == m)
            y[rows] = self.expert(int(m)).raw_predict(X[rows])
        if self.squash == "tanh":
            y = tanh_squash(y, self.action_low, self.action_high)
        return y

    def widened(self, columns: Sequence[int], obs_dim: int) -> MixtureProgram:
        """Experts, router and routing trees reading column ``columns[i]`` of a wider observation for feature ``i``."""
        linear = self.tree is None and self.score_trees is None
        return dataclasses.replace(
            self, expert_coef=widen_columns(self.expert_coef, columns, obs_dim),
            router_coef=widen_columns(self.router_coef, columns, obs_dim) if linear else np.zeros((0, obs_dim)),
            tree=None if self.tree is None else self.tree.widened(columns, obs_dim),
            score_trees=None if self.score_trees is None else [t.widened(columns, obs_dim) for t in self.score_trees])

    @property
    def exact_shapley(self) -> bool:
        """Exact for a routing tree without squash (a tree whose leaves are experts); an argmax of scores or
        a tanh squash is estimated by sampling."""
        return self.tree is not None and self.squash == "clip"

    def shapley_values(self, X: np.ndarray, background: np.ndarray,
                       weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact Shapley values of the unclipped output when routed by a tree (each router leaf is its
        expert's affine map; :func:`interp_rl._shapley.tree_shapley`)."""
        if not self.exact_shapley:
            return super().shapley_values(X, background, weights)
        t = self.tree
        assert t is not None
        expert = t.intercept[:, 0].astype(np.int64).clip(0, self.n_experts - 1)
        return tree_shapley(feature=t.feature, threshold=t.threshold, left=t.left, right=t.right,
                            intercept=self.expert_intercept[expert], coef=self.expert_coef[expert], X=X,
                            background=background, weights=weights)

    def affine_pieces(self) -> AffinePieces:
        """One piece per expert, assigned by the router."""
        return AffinePieces(self.route, self.expert_intercept.copy(), self.expert_coef.copy(),
                            [f"expert {m + 1}" for m in range(self.n_experts)], squash=self.squash)

    def with_affine_pieces(self, intercept: np.ndarray, coef: np.ndarray) -> MixtureProgram:
        return dataclasses.replace(self, expert_intercept=intercept, expert_coef=coef)

    def routing_maps(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """A linear router's scores ``router_intercept + router_coef @ x``; none for routing trees."""
        if self.router != "linear" or not len(self.router_intercept):
            return []
        return [(self.router_intercept.copy(), self.router_coef.copy())]

    def with_routing_maps(self, maps: Sequence[tuple[np.ndarray, np.ndarray]]) -> MixtureProgram:
        if len(maps) != len(self.routing_maps()):
            raise TypeError(f"This mixture has {len(self.routing_maps())} routing map(s), not {len(maps)}.")
        if not maps:
            return self
        (b, w), = maps
        return dataclasses.replace(self, router_intercept=np.asarray(b, dtype=np.float64),
                                   router_coef=np.asarray(w, dtype=np.float64))

    def regions(self) -> list[Region]:
        """Where each expert acts: for a linear router the polyhedron where its score is the largest (one row
        ``(w_j - w_m) @ x <= b_m - b_j`` per other expert ``j``; ties belong to both), for a routing tree each
        leaf's box, for score trees the boxes cut by their splits until one expert's score wins throughout.

        >>> p = MixtureProgram(expert_intercept=[[0.0], [1.0]], expert_coef=np.zeros((2, 1, 1)),
        ...                    router_intercept=[0.0, 0.0], router_coef=[[1.0], [-1.0]])
        >>> [(r.label, r.A.tolist(), r.b.tolist()) for r in p.regions()]
        [('expert 1', [[-2.0]], [0.0]), ('expert 2', [[2.0]], [0.0])]
        """
        inf = np.full(self.obs_dim, np.inf)
        if self.tree is not None:
            return [Region.box(m, f"expert {m + 1}", lo, hi, self.expert_intercept[m], self.expert_coef[m])
                    for node, (lo, hi) in self.tree.leaf_boxes().items() if np.all(lo <= hi)
                    for m in [int(self.tree.intercept[node, 0])]]
        if self.score_trees is not None:
            return [Region.box(m, f"expert {m + 1}", lo, hi, self.expert_intercept[m], self.expert_coef[m])
                    for m, lo, hi in _score_tree_boxes(self.score_trees, -inf, inf)]
        out = []
        for m in range(self.n_experts):
            others = [j for j in range(self.n_experts) if j != m]
            out.append(Region(m, f"expert {m + 1}", -inf, inf.copy(),
                              self.router_coef[others] - self.router_coef[m],
                              self.router_intercept[m] - self.router_intercept[others],
                              self.expert_intercept[m], self.expert_coef[m]))
        return out

    def visit_summary(self, X: np.ndarray) -> str:
        """``experts acting: 1 (34%), 3 (66%)``."""
        share = self.usage_of(X)
        return "experts acting: " + ", ".join(f"{m + 1} ({100 * v:.0f}%)" for m, v in enumerate(share) if v)

    def usage_of(self, X: np.ndarray) -> np.ndarray:
        """Share of the rows of ``X`` each expert acts on, shape ``(n_experts,)``."""
        chosen = self.route(X)
        return np.bincount(chosen, minlength=self.n_experts) / max(len(chosen), 1)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        terms = [[int(m), int(o), int(j), float(self.expert_coef[m, o, j])]
                 for m, o, j in np.argwhere(self.expert_coef != 0.0)]
        if self.tree is None:
            router: dict[str, Any] = {
                "kind": "linear", "intercept": self.router_intercept.tolist(),
                "terms": [[int(m), int(j), float(self.router_coef[m, j])]
                          for m, j in np.argwhere(self.router_coef != 0.0)]}
        else:
            router = {"kind": "tree", "tree": self.tree.to_dict()}
        if self.score_trees is not None:
            router = {"kind": "trees", "trees": [t.to_dict() for t in self.score_trees]}
        return {"kind": self.kind, "obs_dim": self.obs_dim, "act_dim": self.act_dim, "n_experts": self.n_experts,
                "expert_intercept": self.expert_intercept.tolist(), "expert_terms": terms, "router": router,
                "usage": self.usage.tolist(), **self._bounds_dict(), "squash": self.squash}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MixtureProgram:
        try:
            m, act_dim, obs_dim = int(d["n_experts"]), int(d["act_dim"]), int(d["obs_dim"])
            coef = np.zeros((m, act_dim, obs_dim))
            for e, o, j, c in d["expert_terms"]:
                if not (0 <= int(e) < m and 0 <= int(o) < act_dim and 0 <= int(j) < obs_dim):
                    raise ControllerFormatError(
                        f"An expert term ({e}, {o}, {j}) lies outside the shape ({m}, {act_dim}, {obs_dim})."
                    )
                coef[int(e), int(o), int(j)] = float(c)
            router = d["router"]
            kw: dict[str, Any] = {}
            if router["kind"] == "linear":
                w = np.zeros((m, obs_dim))
                for e, j, c in router["terms"]:
                    if not (0 <= int(e) < m and 0 <= int(j) < obs_dim):
                        raise ControllerFormatError(
                            f"A router term ({e}, {j}) lies outside the shape ({m}, {obs_dim})."
                        )
                    w[int(e), int(j)] = float(c)
                kw = {"router_intercept": router["intercept"], "router_coef": w}
            elif router["kind"] == "tree":
                kw = {"tree": TreeProgram.from_dict(router["tree"])}
            elif router["kind"] == "trees":
                kw = {"score_trees": [TreeProgram.from_dict(t) for t in router["trees"]]}
            else:
                raise ControllerFormatError(f"The router kind {router['kind']!r} is not 'linear', 'tree' or 'trees'.")
            return cls(expert_intercept=d["expert_intercept"], expert_coef=coef, usage=d.get("usage", []),
                       action_low=[float(v) for v in d["action_low"]],
                       action_high=[float(v) for v in d["action_high"]], squash=str(d.get("squash", "clip")),
                       **kw)
        except ControllerFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ControllerFormatError(f"The mixture program is malformed: {type(exc).__name__}: {exc}.") from None

    # ------------------------------------------------------------------ text
    def _score_text(self, m: int, names: list[str], fmt: Any, max_terms: int | None = None) -> str:
        return cg.affine_text(float(self.router_intercept[m]), self.router_terms(m), names, fmt, max_terms)

    def _equations(self, m: int, controller: Controller, fmt: Any, max_terms: int | None = None) -> list[str]:
        expert, names = self.expert(m), controller.feature_names
        lhs = "z({})" if self.squash == "tanh" else "{}"  # squashed: the equation is tanh's argument
        return [f"{lhs.format(a.label)} = {cg.affine_text(float(b), expert.terms(o), names, fmt, max_terms)}"
                for o, (a, b) in enumerate(zip(controller.actions, self.expert_intercept[m], strict=True))]

    def _expert_title(self, m: int, fmt: Any) -> str:
        share = f" (fitted on {fmt(100 * float(self.usage[m]))}% of the distillation data)" if self.usage.sum() > 0 \
            else ""
        return f"expert {m + 1}{share}"

    def router_text(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
        """The router in named features: the scores, or the routing tree's rules."""
        fmt = partial(cg.fixed, precision=precision)
        if self.score_trees is not None:
            lines = ["router: the expert with the highest score acts"]
            for k, t in enumerate(self.score_trees):
                body = t.explain(controller, precision=precision, max_depth=max_depth,
                                 leaf_text=lambda node, t=t, k=k: f"score {k + 1} = {fmt(float(t.intercept[node, 0]))}")
                lines += [f"score {k + 1}:"] + ["  " + line for line in body.splitlines()]
            return "\n".join(lines)
        if self.tree is None:
            names = controller.feature_names
            lines = ["router: the expert with the highest score acts"]
            lines += [f"  score {m + 1} = {self._score_text(m, names, fmt)}" for m in range(self.n_experts)]
            return "\n".join(lines)
        body = self.tree.explain(controller, precision=precision, max_depth=max_depth,
                                 leaf_text=lambda node: f"expert {int(self.tree.intercept[node, 0]) + 1}")
        return "router:\n" + body

    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
        """The router, then each expert's equations in named features.

        >>> from interp_rl.program import Controller, Signal
        >>> p = MixtureProgram(expert_intercept=[[0.0], [0.5]], expert_coef=[[[0.0, 1.0]], [[0.0, -2.0]]],
        ...                    router_intercept=[0.0, 0.0], router_coef=[[1.0, 0.0], [-1.0, 0.0]])
        >>> print(p.explain(Controller(p, [Signal("angle", "rad"), Signal("vx", "m/s")], [Signal("torque")])))
        router: the expert with the highest score acts
          score 1 = 1.000*angle
          score 2 = -1.000*angle
        expert 1:
          torque = 1.000*vx
        expert 2:
          torque = 0.500 - 2.000*vx
        """
        fmt = partial(cg.fixed, precision=precision)
        lines = [self.router_text(controller, precision=precision, max_depth=max_depth)]
        for m in range(self.n_experts):
            lines.append(self._expert_title(m, partial(cg.compact, precision=1)) + ":")
            lines += ["  " + line for line in self._equations(m, controller, fmt)]
        note = self.squash_note(controller, fmt) if self.squash == "tanh" else self.clip_note(controller, fmt)
        return "\n".join(lines + ([note] if note else []))

    def explain_decision(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> str:
        """Why this expert (the scores with their values, or the routing splits), then its equations."""
        x = np.asarray(x, dtype=np.float64).ravel()
        m = int(self.route(x[None, :])[0])
        fmt = partial(cg.compact, precision=precision)
        if self.tree is None:  # linear scores or score trees
            s = self.scores(x[None, :])[0]
            lines = [f"score {k + 1} = {fmt(float(s[k]))}" + ("   <- highest" if k == m else "")
                     for k in range(self.n_experts)]
        else:
            lines = self.tree.split_path_text(controller, x, precision=precision)
        lines.append(f"expert {m + 1} acts:")
        lines += ["  " + line for line in self.expert(m).explain_decision(controller, x, precision=precision)
                  .splitlines()]
        return "\n".join(lines)

    def to_dot(self, controller: Controller, *, obs: np.ndarray | None = None, states: np.ndarray | None = None,
               max_depth: int | None = None, title: str | None = None, precision: int = 3,
               **options: Any) -> str:
        """The router (its tree, or one box of scores) pointing at one box per expert with its equations.

        With ``states`` the expert boxes are shaded by how often each acts on them; with ``obs``
        the expert that acts is outlined and the routing path highlighted.
        """
        from interp_rl.dot import dot_attrs, dot_header, dot_label

        if options:
            raise TypeError(f"to_dot of a mixture program takes no option {sorted(options)[0]!r}.")
        fmt = partial(cg.compact, precision=precision)
        names = controller.feature_names
        usage = self.usage_of(np.asarray(states, dtype=np.float64)) if states is not None and len(states) else None
        chosen = int(self.route(np.asarray(obs, dtype=np.float64)[None, :])[0]) if obs is not None else None
        legend = []
        if self.usage.sum() > 0:
            legend.append("fitted on: the expert's share of the distillation data")
        if usage is not None:
            legend.append("acts on: its share of the states shown (the darker the box, the more)")
        caption = "; ".join(legend)
        out = dot_header(controller, title=f"{title}\n{caption}" if title and caption else title or caption or None,
                         fmt=fmt, rankdir="LR")  # experts stacked top to bottom, the router on the left
        one = partial(cg.compact, precision=1)
        for m in range(self.n_experts):
            shares = []
            if self.usage.sum() > 0:
                shares.append(f"fitted on {one(100 * float(self.usage[m]))}%")
            if usage is not None:
                shares.append(f"acts on {one(100 * float(usage[m]))}%")
            text = [f"expert {m + 1}" + (f" ({', '.join(shares)})" if shares else "")]
            text += self._equations(m, controller, fmt, 4)
            attrs = {"label": dot_label(text, left=True), "style": '"rounded,filled"', "fillcolor": '"#f2f2f2"'}
            if usage is not None:
                attrs["fillcolor"] = f'"{_blue(float(usage[m]) / max(float(usage.max()), 1e-12))}"'
            if chosen == m:
                attrs.update(color='"#d62728"', penwidth="2.5")
            out.append(f"  e{m} {dot_attrs(attrs)};")
        if self.score_trees is not None:
            text = ["router: highest score acts"]
            text += [f"score {k + 1}: a tree of depth {t.depth}, {t.n_leaves} leaves"
                     for k, t in enumerate(self.score_trees)]
            out.append(f"  router {dot_attrs({'label': dot_label(text, left=True)})};")
            out += [f"  router -> e{m};" for m in range(self.n_experts)]
        elif self.tree is None:
            text = ["router: highest score acts"]
            text += [f"score {m + 1} = {self._score_text(m, names, fmt, 4)}" for m in range(self.n_experts)]
            out.append(f"  router {dot_attrs({'label': dot_label(text, left=True)})};")
            out += [f"  router -> e{m};" for m in range(self.n_experts)]
        else:
            tree = self.tree
            path = set(tree.decision_path(np.asarray(obs, dtype=np.float64))) if obs is not None else set()
            for node in range(tree.n_nodes):
                if tree.is_leaf[node]:
                    continue
                label = dot_label([f"{controller.features[tree.feature[node]].label} <= "
                                   f"{fmt(float(tree.threshold[node]))}"])
                out.append(f"  n{node} {dot_attrs({'label': label})};")
                for child, yes in ((int(tree.left[node]), "yes"), (int(tree.right[node]), "no")):
                    target = f"n{child}" if not tree.is_leaf[child] else f"e{int(tree.intercept[child, 0])}"
                    attrs = {"label": yes}
                    if node in path and child in path:
                        attrs.update(color='"#d62728"', penwidth="2.5")
                    out.append(f"  n{node} -> {target} {dot_attrs(attrs)};")
        out.append("}")
        return "\n".join(out)

    # ------------------------------------------------------------------ code
    def _expert_body(self, m: int, indent: str, end: str, python: bool) -> list[str]:
        lines = [line for o in range(self.act_dim)
                 for line in cg.assignment(indent, f"y{o}", cg.affine_parts(self.expert_intercept[m, o],
                                                                            self.expert(m).terms(o)), end,
                                           python=python)]
        return lines or ([f"{indent}pass"] if python else [])

    def _squash_lines(self, python: bool) -> list[str]:
        if self.squash != "tanh":
            return []
        return cg.tanh_squash_lines(self.action_low, self.action_high, python=python)

    def _body(self, controller: Controller, python: bool) -> list[str]:
        end = "" if python else ";"
        if self.n_experts == 1:  # nothing to route
            return self._expert_body(0, "", end, python) + self._squash_lines(python)
        lines: list[str] = []
        if self.tree is None:
            for m in range(self.n_experts):
                decl = "" if python else "double "
                if self.score_trees is not None:
                    t = self.score_trees[m]
                    if not python:
                        lines.append(f"double s{m} = 0.0;")
                    lines += t.code_lines(controller, python, leaf_lines=lambda node, ind, t=t, m=m: [
                        f"{ind}s{m} = {cg.lit(t.intercept[node, 0])}{end}"])
                    continue
                parts = cg.affine_parts(self.router_intercept[m], self.router_terms(m))
                lines += cg.assignment("", f"{decl}s{m}", parts, end, python=python)
            lines.append("e = 0" if python else "int e = 0;")
            lines.append("best = s0" if python else "double best = s0;")
            for m in range(1, self.n_experts):
                lines += ([f"if s{m} > best:", f"    e = {m}", f"    best = s{m}"] if python
                          else [f"if (s{m} > best) {{ e = {m}; best = s{m}; }}"])
        else:
            if not python:
                lines.append("int e = 0;")
            ids = self.tree.intercept[:, 0].astype(int)
            lines += self.tree.code_lines(controller, python,
                                          leaf_lines=lambda node, ind: [f"{ind}e = {ids[node]}{end}"])
        for m in range(self.n_experts):
            head = ("if" if m == 0 else "elif") if python else ("if" if m == 0 else "} else if")
            if m == self.n_experts - 1 and m > 0:
                head = "else" if python else "} else"
            test = "" if head.endswith("else") else (f" e == {m}" if python else f" (e == {m})")
            lines.append(f"{head}{test}:  # expert {m + 1}" if python else f"{head}{test} {{  /* expert {m + 1} */")
            lines += self._expert_body(m, "    ", end, python)
        if not python:
            lines.append("}")
        return lines + self._squash_lines(python)

    def python_body(self, controller: Controller) -> list[str]:
        """The router (scores and the first highest, or the tree's ``if``/``else``), then the expert's equations."""
        return self._body(controller, python=True)

    def c_body(self, controller: Controller) -> list[str]:
        """As :meth:`python_body`, in C99."""
        return self._body(controller, python=False)

    def onnx_route(self, graph: OnnxGraph) -> str:
        """ONNX: the expert (``(N,)`` int64) acting on each observation, as :meth:`route` picks it: the routing
        tree's leaf, or the first of the largest scores (linear scores added as :meth:`scores` adds them, or the
        score trees' leaves)."""
        if self.tree is not None:
            ids = np.round(self.tree.intercept[:, 0]).astype(np.int64)
            return graph.op("Gather", graph.const(ids, dtype=np.int64), self.tree.onnx_leaf(graph), axis=0)
        if self.score_trees is not None:
            scores = graph.concat_columns([graph.op("Gather", graph.const(t.intercept[:, :1]), t.onnx_leaf(graph),
                                                    axis=0) for t in self.score_trees])
        else:  # s = b, then s = s + w_k * x_k slot by slot (padded slots add 0 * x_0), every expert at once
            feats, weights = self._router_table()
            scores = graph.rows(self.router_intercept) if feats.shape[1] == 0 else graph.const(self.router_intercept)
            for k in range(feats.shape[1]):
                x = graph.op("Gather", graph.obs, graph.const(feats[:, k], dtype=np.int64), axis=1)
                scores = graph.op("Add", scores, graph.op("Mul", x, graph.const(weights[:, k])))
        return graph.first_argmax(scores)

    def onnx_graph(self, graph: OnnxGraph) -> str:
        """Every expert's ``y = intercept + coef_j * obs[:, j] + ...`` (as :meth:`expert`'s ``predict``), the one
        the router picks (:meth:`onnx_route`) copied out, then the tanh squash
        ``low + 0.5 * (tanh(y) + 1.0) * (high - low)`` in that order."""
        outputs = [graph.affine(self.expert_intercept[m], self.expert_coef[m]) for m in range(self.n_experts)]
        y = outputs[0] if self.n_experts == 1 else graph.select(self.onnx_route(graph), outputs)
        if self.squash == "tanh":
            y = graph.tanh_squash(y, self.action_low, self.action_high)
        return y


def _blue(t: float) -> str:
    """White to light blue, for how often an expert acts."""
    t = min(max(t, 0.0), 1.0)
    r, g, b = (int(round(255 + (c - 255) * t)) for c in (158, 202, 225))
    return f"#{r:02x}{g:02x}{b:02x}"
