"""Oblique trees with affine leaves: the ``oblique`` program kind (a ReLU network converted exactly).

A binary tree whose internal nodes test an affine function of the observation (``w @ x + b <= 0`` goes
left) and whose leaves are affine maps ``y = intercept + coef @ x``: every leaf is an affine rule on a
polyhedron (its path's half-spaces). :func:`distill.prelu.to_oblique` converts a small ReLU network into
one: each node tests one hidden unit's pre-activation, affine within the region above it; the left side
is the unit off, the right side on; sides that are empty within the conversion's domain box are pruned.

Arithmetic (bit-identical in every runtime), in one of two forms:

* ``affine`` (no ``network``): a node's value is ``b`` then ``+ w_j * x_j`` for its non-zero weights in
  ascending feature order; a leaf's actions ``intercept`` then ``+ coef_j * x_j`` likewise (a
  :class:`~interp_rl.kinds.linear.LinearProgram`);
* ``network`` (a converted ReLU network, stored factored): node ``n`` tests unit ``j`` of hidden layer
  ``l``. Its value is the network's own pre-activation ``z = b_l[j]`` then ``z = z + W_l[j, i] * h_i`` for
  the units ``i`` of layer ``l - 1`` active on the path (the observation's features for ``l = 0``,
  non-zero weights only), ascending; an active unit's value is ``h_i = z_i``, an inactive one is absent
  (the network's ``max(z, 0) = 0``). A leaf computes the output layer the same way from the active units
  of the last hidden layer (``leaf_form="network"``), or its stored affine map (``leaf_form="affine"``,
  after fine-tuning the pieces). On the conversion's domain box this is the network's float64 forward
  pass (every layer ``z = b`` then ``+ W[:, i] * h_i`` ascending, ``h = max(z, 0)``) bit for bit: adding
  ``W * 0`` changes no sum.

then ``y = min(max(y, low), high)``.

No ONNX form yet: export it as Python, C or JSON.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

import interp_rl._codegen as cg
from interp_rl.errors import ControllerFormatError
from interp_rl.program import AffinePieces, ProgramBase, Region, float_out, register_program, widen_columns

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interp_rl.program import Controller

__all__ = ["LEAF_FORMS", "PICTURE_DEPTH", "PICTURE_LEAVES", "ObliqueProgram"]

#: How a leaf computes its actions: the network's output layer on the path's active units, or its affine map.
LEAF_FORMS = ("network", "affine")
#: Pictures of trees with more regions than this stop at depth :data:`PICTURE_DEPTH` (Graphviz cannot lay out
#: thousands of boxes in reasonable time).
PICTURE_LEAVES = 64
PICTURE_DEPTH = 5


@register_program
@dataclass
class ObliqueProgram(ProgramBase):
    """A tree of oblique splits ``w @ x + b <= 0`` (left) with affine leaves, then clipping.

    Parameters
    ----------
    left, right : ndarray of shape (n_nodes,)
        Children of each node (node 0 is the root); ``-1`` at leaves.
    weight, bias : ndarray of shape (n_nodes, obs_dim) and (n_nodes,)
        Each internal node's split ``weight @ x + bias <= 0`` (zeros at leaves).
    intercept, coef : ndarray of shape (n_nodes, act_dim) and (n_nodes, act_dim, obs_dim)
        Each leaf's affine map (zeros at internal nodes).
    network : list of (W, b), optional
        A converted ReLU network (hidden layers, then the output layer), stored factored; with it nodes and
        leaves compute as the network does (see the module docstring).
    unit : ndarray of shape (n_nodes, 2)
        With ``network``: the (layer, unit) each internal node tests (``-1`` at leaves).
    active : ndarray of shape (n_nodes, n_hidden)
        With ``network``: the hidden units (all layers concatenated) active on the path to each node, for
        the layers decided above it (every hidden layer at a leaf).
    leaf_form : {"network", "affine"}
        With ``network``: whether leaves run the output layer or their affine map.
    domain_low, domain_high : ndarray of shape (obs_dim,)
        The box the network was converted on (where the conversion is exact); ``-inf``/``inf`` for none.
    action_low, action_high : ndarray of shape (act_dim,)
        Actions are clipped to these bounds.

    Examples
    --------
    ``u = x1`` where ``x0 - x1 <= 0``, else ``u = 2``:

    >>> p = ObliqueProgram(left=[1, -1, -1], right=[2, -1, -1], weight=[[1.0, -1.0], [0, 0], [0, 0]],
    ...                    bias=[0.0, 0, 0], intercept=[[0.0], [0.0], [2.0]],
    ...                    coef=[[[0.0, 0.0]], [[0.0, 1.0]], [[0.0, 0.0]]])
    >>> p.predict(np.array([[0.0, 1.0], [1.0, 0.0]]))
    array([[1.],
           [2.]])
    >>> p.size()
    {'parameters': 6, 'nonzero_terms': 3, 'regions': 2, 'leaves': 2, 'depth': 1}
    """

    left: np.ndarray
    right: np.ndarray
    weight: np.ndarray
    bias: np.ndarray
    intercept: np.ndarray
    coef: np.ndarray
    network: list[tuple[np.ndarray, np.ndarray]] | None = None
    unit: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    active: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    leaf_form: str = "network"
    domain_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    domain_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    action_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    action_high: np.ndarray = field(default_factory=lambda: np.zeros(0))

    kind = "oblique"
    title = "Oblique trees"
    rules_title = "Rules"
    piece_names = ("region", "regions")

    def __post_init__(self) -> None:
        self.left = np.asarray(self.left, dtype=np.int64).ravel()
        self.right = np.asarray(self.right, dtype=np.int64).ravel()
        self.weight = np.asarray(self.weight, dtype=np.float64)
        self.bias = np.asarray(self.bias, dtype=np.float64).ravel()
        self.intercept = np.asarray(self.intercept, dtype=np.float64)
        self.coef = np.asarray(self.coef, dtype=np.float64)
        n = len(self.left)
        if n < 1 or self.right.shape != (n,) or self.weight.ndim != 2 or len(self.weight) != n \
                or self.bias.shape != (n,) or self.intercept.ndim != 2 or len(self.intercept) != n \
                or self.coef.shape != (n, self.intercept.shape[1], self.weight.shape[1]):
            raise ControllerFormatError(
                f"An oblique tree of {n} nodes needs right ({n},), weight ({n}, obs_dim), bias ({n},), intercept "
                f"({n}, act_dim) and coef ({n}, act_dim, obs_dim); got {self.right.shape}, {self.weight.shape}, "
                f"{self.bias.shape}, {self.intercept.shape}, {self.coef.shape}.")
        inner = self.left >= 0
        if np.any(inner != (self.right >= 0)) or np.any(self.left[inner] >= n) or np.any(self.right[inner] >= n):
            raise ControllerFormatError("Every internal node needs two children among the nodes; leaves none.")
        if self._preorder_count() != n:
            raise ControllerFormatError("The nodes do not form one tree rooted at node 0.")
        for name in ("weight", "bias", "intercept", "coef"):
            if not np.all(np.isfinite(getattr(self, name))):
                raise ControllerFormatError(f"A value of the oblique tree's {name} is not finite.")
        if self.leaf_form not in LEAF_FORMS:
            raise ControllerFormatError(f"leaf_form must be one of {', '.join(LEAF_FORMS)}; got {self.leaf_form!r}.")
        if self.network is not None:
            self._check_network()
        self._init_bounds(self.action_low, self.action_high, self.act_dim)
        lo = np.asarray(self.domain_low, dtype=np.float64).ravel()
        hi = np.asarray(self.domain_high, dtype=np.float64).ravel()
        self.domain_low = np.full(self.obs_dim, -np.inf) if lo.size == 0 else lo
        self.domain_high = np.full(self.obs_dim, np.inf) if hi.size == 0 else hi
        if self.domain_low.shape != (self.obs_dim,) or self.domain_high.shape != (self.obs_dim,):
            raise ControllerFormatError(f"The domain box needs {self.obs_dim} lower and upper bounds.")

    def _check_network(self) -> None:
        assert self.network is not None
        layers = [(np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64).ravel()) for W, b in self.network]
        if len(layers) < 2:
            raise ControllerFormatError("A network needs at least one hidden layer and the output layer.")
        width = self.obs_dim
        for k, (W, b) in enumerate(layers):
            if W.ndim != 2 or W.shape[1] != width or b.shape != (W.shape[0],):
                raise ControllerFormatError(f"Layer {k + 1} of the network has weights {W.shape} and biases "
                                            f"{b.shape}; it reads {width} values.")
            if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
                raise ControllerFormatError(f"A weight of layer {k + 1} of the network is not finite.")
            width = W.shape[0]
        if width != self.act_dim:
            raise ControllerFormatError(f"The network gives {width} outputs; the tree {self.act_dim} actions.")
        self.network = layers
        n, hidden = len(self.left), sum(len(b) for _, b in layers[:-1])
        self.unit = np.asarray(self.unit, dtype=np.int64).reshape(-1, 2)
        self.active = np.asarray(self.active, dtype=bool).reshape(n, -1) if n else self.active
        if self.unit.shape != (n, 2) or self.active.shape != (n, hidden):
            raise ControllerFormatError(f"With a network, unit must be ({n}, 2) and active ({n}, {hidden}); got "
                                        f"{self.unit.shape} and {self.active.shape}.")
        inner = self.left >= 0
        ok = (self.unit[inner, 0] >= 0) & (self.unit[inner, 0] < len(layers) - 1)
        if not np.all(ok) or any(not 0 <= j < len(layers[k][1]) for k, j in self.unit[inner]):
            raise ControllerFormatError("A node tests a unit that the network's hidden layers do not have.")

    def _preorder_count(self) -> int:
        seen, stack = 0, [0]
        while stack and seen <= len(self.left):
            node = stack.pop()
            seen += 1
            if self.left[node] >= 0:
                stack += [int(self.right[node]), int(self.left[node])]
        return seen

    # ------------------------------------------------------------------ shape and size
    @property
    def obs_dim(self) -> int:
        return int(self.weight.shape[1])

    @property
    def act_dim(self) -> int:
        return int(self.intercept.shape[1])

    @property
    def n_nodes(self) -> int:
        return len(self.left)

    @property
    def is_leaf(self) -> np.ndarray:
        return self.left < 0

    @property
    def leaves(self) -> list[int]:
        """Leaf node ids in depth-first order (left first): how people count them."""
        return [n for n in self.preorder() if self.left[n] < 0]

    def preorder(self) -> list[int]:
        out, stack = [], [0]
        while stack:
            node = stack.pop()
            out.append(node)
            if self.left[node] >= 0:
                stack += [int(self.right[node]), int(self.left[node])]
        return out

    @property
    def depth(self) -> int:
        d = np.zeros(self.n_nodes, dtype=np.int64)
        for node in self.preorder():
            if self.left[node] >= 0:
                d[self.left[node]] = d[self.right[node]] = d[node] + 1
        return int(d.max())

    @property
    def layer_sizes(self) -> list[int]:
        return [] if self.network is None else [len(b) for _, b in self.network[:-1]]

    def size(self) -> dict[str, int]:
        """``parameters``: each split's bias and non-zero weights, each leaf's intercepts and non-zero
        coefficients (the converted form); ``nonzero_terms``: the non-zero weights and coefficients;
        ``regions`` (= ``leaves``) and ``depth``."""
        inner, leaf = ~self.is_leaf, self.is_leaf
        terms = int(np.count_nonzero(self.weight[inner]) + np.count_nonzero(self.coef[leaf]))
        return {"parameters": int(inner.sum() + leaf.sum() * self.act_dim + terms), "nonzero_terms": terms,
                "regions": int(leaf.sum()), "leaves": int(leaf.sum()), "depth": self.depth}

    # ------------------------------------------------------------------ running
    def _offsets(self) -> list[int]:
        return list(np.cumsum([0, *self.layer_sizes]))

    def _pre(self, layer: int, unit: int, h: list[np.ndarray], mask: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Unit ``unit`` of ``layer``'s pre-activation for the rows of ``X``: ``b`` then ``+ W * h`` over the
        active inputs (non-zero weights), ascending."""
        assert self.network is not None
        W, b = self.network[layer]
        z = np.full(len(X), b[unit])
        if layer == 0:
            inputs = [(i, X[:, i]) for i in range(X.shape[1])]
        else:
            off = self._offsets()[layer - 1]
            inputs = [(i, h[layer - 1][:, i]) for i in range(W.shape[1]) if mask[off + i]]
        for i, v in inputs:
            if W[unit, i] != 0.0:
                z = z + W[unit, i] * v
        return z

    def _hidden(self, h: list[np.ndarray], upto: int, mask: np.ndarray, X: np.ndarray) -> list[np.ndarray]:
        """``h`` with the hidden layers ``len(h) .. upto - 1`` computed (active units; zeros stand for absent)."""
        assert self.network is not None
        h = list(h)
        off = self._offsets()
        for layer in range(len(h), upto):
            vals = np.zeros((len(X), len(self.network[layer][1])))
            for j in range(vals.shape[1]):
                if mask[off[layer] + j]:
                    vals[:, j] = self._pre(layer, j, h, mask, X)
            h.append(vals)
        return h

    def _split_value(self, node: int, X: np.ndarray, h: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        if self.network is None:
            z = np.full(len(X), self.bias[node])
            for j in np.flatnonzero(self.weight[node]):
                z = z + self.weight[node, j] * X[:, j]
            return z, h
        layer, unit = (int(v) for v in self.unit[node])
        h = self._hidden(h, layer, self.active[node], X)
        return self._pre(layer, unit, h, self.active[node], X), h

    def _leaf_value(self, node: int, X: np.ndarray, h: list[np.ndarray]) -> np.ndarray:
        if self.network is None or self.leaf_form == "affine":
            y = np.repeat(self.intercept[node][None, :], len(X), axis=0)
            for j in np.flatnonzero(np.any(self.coef[node] != 0.0, axis=0)):
                y += self.coef[node][:, j] * X[:, j : j + 1]
            return y
        last = len(self.network) - 1
        h = self._hidden(h, last, self.active[node], X)
        return np.stack([self._pre(last, o, h, self.active[node], X) for o in range(self.act_dim)], axis=1)

    def _walk(self, X: np.ndarray, visit: Any) -> None:
        stack: list[tuple[int, np.ndarray, list[np.ndarray]]] = [(0, np.arange(len(X)), [])]
        while stack:
            node, rows, h = stack.pop()
            if len(rows) == 0:
                continue
            if self.left[node] < 0:
                visit(node, rows, h)
                continue
            z, h = self._split_value(node, X[rows], h)
            go = z <= 0.0
            stack.append((int(self.right[node]), rows[~go], [a[~go] for a in h]))
            stack.append((int(self.left[node]), rows[go], [a[go] for a in h]))

    def apply(self, X: np.ndarray) -> np.ndarray:
        """The leaf (node id) each row of ``X`` reaches."""
        X = np.asarray(X, dtype=np.float64)
        out = np.zeros(len(X), dtype=np.int64)

        def visit(node: int, rows: np.ndarray, h: list[np.ndarray]) -> None:
            out[rows] = node

        self._walk(X, visit)
        return out

    def raw_predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        y = np.zeros((len(X), self.act_dim))

        def visit(node: int, rows: np.ndarray, h: list[np.ndarray]) -> None:
            y[rows] = self._leaf_value(node, X[rows], h)

        self._walk(X, visit)
        return y

    def decision_path(self, x: np.ndarray) -> list[int]:
        """Nodes from the root to the leaf acting on the one observation ``x``."""
        x = np.asarray(x, dtype=np.float64).reshape(1, -1)
        path, node, h = [0], 0, []
        while self.left[node] >= 0:
            z, h = self._split_value(node, x, h)
            node = int(self.left[node] if z[0] <= 0.0 else self.right[node])
            path.append(node)
        return path

    # ------------------------------------------------------------------ pieces and regions
    def affine_pieces(self) -> AffinePieces:
        """One piece per leaf (node ids index the pieces; only leaves act)."""
        leaves = self.leaves
        labels = [""] * self.n_nodes
        for k, node in enumerate(leaves):
            labels[node] = f"region {k + 1}"
        return AffinePieces(self.apply, self.intercept.copy(), self.coef.copy(), labels, acting=leaves)

    def with_affine_pieces(self, intercept: np.ndarray, coef: np.ndarray) -> ObliqueProgram:
        """The same splits with the leaves' affine maps replaced (leaves then compute their maps)."""
        return dataclasses.replace(self, intercept=np.asarray(intercept, dtype=np.float64),
                                   coef=np.asarray(coef, dtype=np.float64), leaf_form="affine")

    def _parents(self) -> dict[int, int]:
        return {int(c): n for n in range(self.n_nodes) if self.left[n] >= 0 for c in (self.left[n], self.right[n])}

    def path_constraints(self, node: int, parent: dict[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(A, b)`` with ``A @ x <= b`` the half-spaces of the path to ``node`` (a right branch
        ``w @ x + c > 0`` relaxed to ``-w @ x <= c``); ``parent`` maps each node to its parent (found if not
        given)."""
        parent = self._parents() if parent is None else parent
        rows, rhs = [], []
        while node in parent:
            p = parent[node]
            if node == self.left[p]:
                rows.append(self.weight[p])
                rhs.append(-self.bias[p])
            else:
                rows.append(-self.weight[p])
                rhs.append(self.bias[p])
            node = p
        A = np.array(rows[::-1]).reshape(-1, self.obs_dim)
        return A, np.array(rhs[::-1])

    def regions(self) -> list[Region]:
        """Each leaf's polyhedron (its path's half-spaces; ties belong to both sides) with its affine map.
        The box is the whole space: outside the conversion's domain the rules apply as written. With a network,
        each region also bounds how far the network's factored sums may be from its composed maps
        (:meth:`network_rounding`)."""
        inf = np.full(self.obs_dim, np.inf)
        out, parent = [], self._parents()
        for k, node in enumerate(self.leaves):
            A, b = self.path_constraints(node, parent)
            rounding = None
            if self.network is not None:
                path, n = [], node
                while n in parent:
                    path.append(int(parent[n]))
                    n = parent[n]
                rounding = partial(self._region_rounding, [tuple(self.unit[p]) for p in path[::-1]])
            out.append(Region(node, f"region {k + 1}", -inf, inf.copy(), A, b, self.intercept[node],
                              self.coef[node], rounding))
        return out

    def network_rounding(self, lo: np.ndarray, hi: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Bounds, on the box ``lo..hi``, of how far each hidden unit's computed pre-activation (per hidden layer)
        and each computed output may be from the composed affine maps stored in the nodes and leaves.

        The network sums left to right, layer after layer: the computed layer ``l`` is within
        ``gamma(n_l) * M_l`` of the exact one, ``n_l`` the terms summed up to it and ``M_l = |b_l| + |W_l| M_{l-1}``
        (``M_0`` the box's largest magnitudes; a ReLU does not increase either). The stored maps were composed
        in floats too, within as much again; the bound doubles that, twice over.
        """
        assert self.network is not None
        unit = float(np.finfo(np.float64).eps) / 2
        mag = np.maximum(np.abs(np.asarray(lo, dtype=np.float64)), np.abs(np.asarray(hi, dtype=np.float64)))
        n, errors = 0, []
        for W, b in self.network:
            n += W.shape[1] + 1
            mag = np.abs(b) + np.abs(W) @ mag
            gamma = n * unit / (1.0 - n * unit)
            errors.append(4.0 * gamma * mag)
        return errors[:-1], errors[-1]

    def _region_rounding(self, units: list[tuple[int, int]], lo: np.ndarray, hi: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
        """:attr:`Region.rounding` of the region whose path tests ``units`` (root first)."""
        hidden, outputs = self.network_rounding(lo, hi)
        rows = np.array([hidden[layer][j] for layer, j in units], dtype=np.float64)
        return rows, (outputs if self.leaf_form == "network" else np.zeros(self.act_dim))

    def widened(self, columns: Sequence[int], obs_dim: int) -> ObliqueProgram:
        """The same tree reading column ``columns[i]`` of a wider observation for feature ``i``."""
        net = None
        if self.network is not None:
            W0, b0 = self.network[0]
            net = [(widen_columns(W0, columns, obs_dim), b0), *self.network[1:]]
        cols = [int(c) for c in columns]
        lo, hi = np.full(obs_dim, -np.inf), np.full(obs_dim, np.inf)
        lo[cols], hi[cols] = self.domain_low, self.domain_high
        return dataclasses.replace(self, weight=widen_columns(self.weight, columns, obs_dim),
                                   coef=widen_columns(self.coef, columns, obs_dim), network=net,
                                   domain_low=lo, domain_high=hi)

    def visit_summary(self, X: np.ndarray) -> str:
        """``regions acting: 12 of 40``."""
        used = len(np.unique(self.apply(X)))
        return f"regions acting: {used} of {len(self.leaves)}"

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        inner = [int(n) for n in np.flatnonzero(self.left >= 0)]
        leaves = [int(n) for n in np.flatnonzero(self.left < 0)]
        d: dict[str, Any] = {
            "kind": self.kind, "version": 1, "obs_dim": self.obs_dim, "act_dim": self.act_dim,
            "left": self.left.tolist(), "right": self.right.tolist(),
            "splits": {str(n): {"bias": float(self.bias[n]),
                                "terms": [[int(j), float(self.weight[n, j])] for j in np.flatnonzero(self.weight[n])]}
                       for n in inner},
            "leaves": {str(n): {"intercept": self.intercept[n].tolist(),
                                "terms": [[int(o), int(j), float(self.coef[n, o, j])]
                                          for o, j in np.argwhere(self.coef[n] != 0.0)]} for n in leaves},
            "leaf_form": self.leaf_form,
            "domain_low": [float_out(v) for v in self.domain_low],
            "domain_high": [float_out(v) for v in self.domain_high],
            **self._bounds_dict(),
        }
        if self.network is not None:
            d["network"] = [{"weight": W.tolist(), "bias": b.tolist()} for W, b in self.network]
            d["unit"] = {str(n): [int(v) for v in self.unit[n]] for n in inner}
            d["active"] = {str(n): [int(i) for i in np.flatnonzero(self.active[n])] for n in range(self.n_nodes)}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ObliqueProgram:
        try:
            if int(d.get("version", 1)) != 1:
                raise ControllerFormatError(f"oblique program version {d.get('version')!r}; this reads version 1.")
            n, obs_dim, act_dim = len(d["left"]), int(d["obs_dim"]), int(d["act_dim"])
            weight, bias = np.zeros((n, obs_dim)), np.zeros(n)
            intercept, coef = np.zeros((n, act_dim)), np.zeros((n, act_dim, obs_dim))
            for key, s in d["splits"].items():
                bias[int(key)] = float(s["bias"])
                for j, c in s["terms"]:
                    weight[int(key), int(j)] = float(c)
            for key, leaf in d["leaves"].items():
                intercept[int(key)] = [float(v) for v in leaf["intercept"]]
                for o, j, c in leaf["terms"]:
                    coef[int(key), int(o), int(j)] = float(c)
            kw: dict[str, Any] = {}
            if "network" in d:
                net = [(np.asarray(layer["weight"], dtype=np.float64).reshape(len(layer["bias"]), -1),
                        np.asarray(layer["bias"], dtype=np.float64)) for layer in d["network"]]
                hidden = sum(len(b) for _, b in net[:-1])
                unit = -np.ones((n, 2), dtype=np.int64)
                for key, u in d["unit"].items():
                    unit[int(key)] = [int(v) for v in u]
                active = np.zeros((n, hidden), dtype=bool)
                for key, on in d["active"].items():
                    active[int(key), [int(i) for i in on]] = True
                kw = {"network": net, "unit": unit, "active": active}
            return cls(left=d["left"], right=d["right"], weight=weight, bias=bias, intercept=intercept, coef=coef,
                       leaf_form=str(d.get("leaf_form", "network")),
                       domain_low=[float(v) for v in d["domain_low"]], domain_high=[float(v) for v in d["domain_high"]],
                       action_low=[float(v) for v in d["action_low"]], action_high=[float(v) for v in d["action_high"]],
                       **kw)
        except ControllerFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ControllerFormatError(f"The oblique program is malformed: {type(exc).__name__}: {exc}.") from None

    # ------------------------------------------------------------------ text
    def split_text(self, node: int, names: list[str], fmt: Any) -> str:
        """``0.3*thigh_angle - 1.2*foot_vx <= 0.05``: the split with its constant on the right."""
        terms = [(int(j), float(self.weight[node, j])) for j in np.flatnonzero(self.weight[node])]
        lhs = cg.affine_text(0.0, terms, names, fmt) if terms else "0"
        return f"{lhs} <= {fmt(-float(self.bias[node]) + 0.0)}"

    def _leaf_lines(self, node: int, controller: Controller, fmt: Any) -> list[str]:
        names = controller.feature_names
        return [f"{a.label} = {cg.affine_text(float(self.intercept[node, o]), self._terms(node, o), names, fmt)}"
                for o, a in enumerate(controller.actions)]

    def _terms(self, node: int, out: int) -> list[tuple[int, float]]:
        row = self.coef[node, out]
        return [(int(j), float(row[j])) for j in np.flatnonzero(row)]

    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
        """The tree as nested ``if``/``else`` rules in named features, each leaf's equations.

        >>> from interp_rl.program import Controller, Signal
        >>> p = ObliqueProgram(left=[1, -1, -1], right=[2, -1, -1], weight=[[1.0, -1.0], [0, 0], [0, 0]],
        ...                    bias=[-0.5, 0, 0], intercept=[[0.0], [0.0], [2.0]],
        ...                    coef=[[[0.0, 0.0]], [[0.0, 1.0]], [[0.0, 0.0]]])
        >>> print(p.explain(Controller(p, [Signal("angle", "rad"), Signal("vx", "m/s")], [Signal("torque")])))
        if 1.000*angle - 1.000*vx <= 0.500:
          region 1: torque = 1.000*vx
        else:
          region 2: torque = 2.000
        """
        fmt = partial(cg.fixed, precision=precision)
        names = controller.feature_names
        number = {node: k + 1 for k, node in enumerate(self.leaves)}
        lines: list[str] = []

        def emit(node: int, depth: int) -> None:
            pad = "  " * depth
            if self.left[node] < 0:
                eqs = self._leaf_lines(node, controller, fmt)
                lines.append(f"{pad}region {number[node]}: {eqs[0]}")
                lines.extend(f"{pad}  {e}" for e in eqs[1:])
                return
            if max_depth is not None and depth >= max_depth:
                under = sum(1 for n in self._subtree(node) if self.left[n] < 0)
                lines.append(f"{pad}… {under} regions below")
                return
            lines.append(f"{pad}if {self.split_text(node, names, fmt)}:")
            emit(int(self.left[node]), depth + 1)
            lines.append(f"{pad}else:")
            emit(int(self.right[node]), depth + 1)

        emit(0, 0)
        note = self.clip_note(controller, fmt)
        if self.network is not None:
            lo, hi = self.domain_low, self.domain_high
            if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
                widths = ", ".join(map(str, self.layer_sizes))
                lines.append(f"(a ReLU network with hidden layers of {widths} units, converted exactly on the box of "
                             "the observations it was distilled on, widened)")
        return "\n".join(lines + ([note] if note else []))

    def _subtree(self, node: int) -> list[int]:
        out, stack = [], [node]
        while stack:
            n = stack.pop()
            out.append(n)
            if self.left[n] >= 0:
                stack += [int(self.left[n]), int(self.right[n])]
        return out

    def explain_decision(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> str:
        """The splits on the path with their values, then the region's equations with the values put in."""
        from interp_rl.kinds.linear import LinearProgram

        x = np.asarray(x, dtype=np.float64).ravel()
        fmt = partial(cg.compact, precision=precision)
        names = controller.feature_names
        path = self.decision_path(x)
        lines = []
        for node, nxt in zip(path[:-1], path[1:], strict=True):
            value = float(self.bias[node] + self.weight[node] @ x)
            holds = nxt == self.left[node]
            text = self.split_text(node, names, fmt)
            lhs = fmt(value - float(self.bias[node]))
            lines.append(f"{text}  ({'yes' if holds else 'no'}: the left side is {lhs})")
        leaf = path[-1]
        lines.append(f"region {self.leaves.index(leaf) + 1} acts:")
        lin = LinearProgram(intercept=self.intercept[leaf], coef=self.coef[leaf], action_low=self.action_low,
                            action_high=self.action_high)
        lines += ["  " + line for line in lin.explain_decision(controller, x, precision=precision).splitlines()]
        return "\n".join(lines)

    def to_dot(self, controller: Controller, *, obs: np.ndarray | None = None, states: np.ndarray | None = None,
               max_depth: int | None = None, title: str | None = None, precision: int = 3,
               **options: Any) -> str:
        """Oblique splits as boxes (``yes`` goes left), leaves with their equations; ``obs``'s path in red,
        with ``states`` each leaf's share of them. A tree of more than :data:`PICTURE_LEAVES` regions is drawn
        to depth :data:`PICTURE_DEPTH` unless ``max_depth`` says otherwise (the text has every rule)."""
        from interp_rl.dot import dot_attrs, dot_header, dot_label

        if options:
            raise TypeError(f"to_dot of an oblique program takes no option {sorted(options)[0]!r}.")
        if max_depth is None and len(self.leaves) > PICTURE_LEAVES and self.depth > PICTURE_DEPTH:
            max_depth = PICTURE_DEPTH
            top = f"the top {PICTURE_DEPTH} levels of {len(self.leaves)} regions"
            title = f"{title} ({top})" if title else top
        fmt = partial(cg.compact, precision=precision)
        names = controller.feature_names
        path = set(self.decision_path(obs)) if obs is not None else set()
        share = None
        if states is not None and len(states):
            share = np.bincount(self.apply(np.asarray(states, dtype=np.float64)), minlength=self.n_nodes) / len(states)
        number = {node: k + 1 for k, node in enumerate(self.leaves)}
        out = dot_header(controller, title=title, fmt=fmt)
        depth = {0: 0}
        for node in self.preorder():
            if self.left[node] >= 0:
                depth[int(self.left[node])] = depth[int(self.right[node])] = depth[node] + 1
        for node in self.preorder():
            if max_depth is not None and depth[node] > max_depth:
                continue
            attrs: dict[str, str] = {}
            if self.left[node] < 0 or (max_depth is not None and depth[node] == max_depth):
                if self.left[node] < 0:
                    text = [f"region {number[node]}" + (f" ({100 * share[node]:.0f}%)" if share is not None else "")]
                    text += self._leaf_lines(node, controller, partial(cg.fixed, precision=precision))
                else:
                    text = [f"… {sum(1 for n in self._subtree(node) if self.left[n] < 0)} regions"]
                attrs = {"label": dot_label(text, left=True), "style": '"rounded,filled"', "fillcolor": '"#f2f2f2"'}
            else:
                attrs = {"label": dot_label([self.split_text(node, names, fmt)])}
                for child, yes in ((int(self.left[node]), "yes"), (int(self.right[node]), "no")):
                    if max_depth is not None and depth[child] > max_depth:
                        continue
                    edge = {"label": yes}
                    if node in path and child in path:
                        edge.update(color='"#d62728"', penwidth="2.5")
                    out.append(f"  n{node} -> n{child} {dot_attrs(edge)};")
            if node in path:
                attrs.update(color='"#d62728"', penwidth="2.5")
            out.append(f"  n{node} {dot_attrs(attrs)};")
        out.append("}")
        return "\n".join(out)

    # ------------------------------------------------------------------ code
    def _code(self, python: bool) -> list[str]:
        end = "" if python else ";"
        lines: list[str] = []
        if not python and self.network is not None:
            names = [f"h{k}_{j}" for k, size in enumerate(self.layer_sizes) for j in range(size)]
            lines += [f"double {', '.join(names)};", "double z;"]
        elif not python:
            lines.append("double z;")
        off = self._offsets() if self.network is not None else []
        number = {node: k + 1 for k, node in enumerate(self.leaves)}

        def pre_parts(layer: int, unit: int, mask: np.ndarray) -> list[str]:
            assert self.network is not None
            W, b = self.network[layer]
            parts = [cg.lit(b[unit])]
            for i in range(W.shape[1]):
                if W[unit, i] == 0.0 or (layer > 0 and not mask[off[layer - 1] + i]):
                    continue
                v = f"obs[{i}]" if layer == 0 else f"h{layer - 1}_{i}"
                sign = "-" if np.copysign(1.0, W[unit, i]) < 0 else "+"
                parts.append(f"{sign} {cg.lit(abs(W[unit, i]))} * {v}")
            return parts

        def hidden(ind: str, done: int, upto: int, mask: np.ndarray) -> list[str]:
            out = []
            for layer in range(done, upto):
                for j in range(self.layer_sizes[layer]):
                    if mask[off[layer] + j]:
                        out += cg.assignment(ind, f"h{layer}_{j}", pre_parts(layer, j, mask), end, python=python)
            return out

        def emit(node: int, ind: str, done: int) -> None:
            if self.left[node] < 0:
                lines.append(f"{ind}{'# ' if python else '/* '}region {number[node]}"
                             f"{'' if python else ' */'}")
                if self.network is None or self.leaf_form == "affine":
                    for o in range(self.act_dim):
                        lines.extend(cg.assignment(ind, f"y{o}", cg.affine_parts(self.intercept[node, o],
                                                                                 self._terms(node, o)), end,
                                                   python=python))
                else:
                    last = len(self.network) - 1
                    lines.extend(hidden(ind, done, last, self.active[node]))
                    for o in range(self.act_dim):
                        lines.extend(cg.assignment(ind, f"y{o}", pre_parts(last, o, self.active[node]), end,
                                                   python=python))
                return
            if self.network is None:
                terms = [(int(j), float(self.weight[node, j])) for j in np.flatnonzero(self.weight[node])]
                lines.extend(cg.assignment(ind, "z", cg.affine_parts(self.bias[node], terms), end, python=python))
            else:
                layer, unit = (int(v) for v in self.unit[node])
                lines.extend(hidden(ind, done, layer, self.active[node]))
                done = max(done, layer)
                lines.extend(cg.assignment(ind, "z", pre_parts(layer, unit, self.active[node]), end, python=python))
            if python:
                lines.append(f"{ind}if z <= 0.0:")
                emit(int(self.left[node]), ind + "    ", done)
                lines.append(f"{ind}else:")
                emit(int(self.right[node]), ind + "    ", done)
            else:
                lines.append(f"{ind}if (z <= 0.0) {{")
                emit(int(self.left[node]), ind + "    ", done)
                lines.append(f"{ind}}} else {{")
                emit(int(self.right[node]), ind + "    ", done)
                lines.append(f"{ind}}}")

        emit(0, "", 0)
        return lines

    def python_body(self, controller: Controller) -> list[str]:
        """Nested ``if z <= 0.0:`` with each split's value computed as the contract fixes, then the leaf's."""
        return self._code(python=True)

    def c_body(self, controller: Controller) -> list[str]:
        """As :meth:`python_body`, in C99."""
        return self._code(python=False)
