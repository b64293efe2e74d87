"""The parts program kinds build their ONNX graphs from: an :class:`OnnxGraph` of float64 operations.

:func:`interp_rl.export.to_onnx` makes an :class:`OnnxGraph` reading the input ``obs`` (raw observations,
float64, ``(N, obs_dim)``), asks the program for its unclipped actions (``program.onnx_graph(graph)`` returns
the name of an ``(N, act_dim)`` float64 tensor), clips them and wraps the graph in a model.

Each kind writes its own arithmetic in its own module, with these parts, in the order its contract fixes,
so the graph does what ``predict`` does operation for operation and gives the same doubles:

* :meth:`OnnxGraph.op` and :meth:`OnnxGraph.const`: one node, one constant, under fresh names;
* :meth:`OnnxGraph.column` (``obs[:, j]``) and :meth:`OnnxGraph.rows` (one row of constants per state);
* :meth:`OnnxGraph.affine`: ``y = intercept`` then ``y = y + coef_j * x_j`` for the features with a non-zero
  coefficient, ascending (a linear program, a mixture's expert);
* :meth:`OnnxGraph.walk_tree` (a tree's leaf, each split ``x[f] <= t`` taken as the tree takes it) and
  :meth:`OnnxGraph.gathered_affine` (the affine map of each row's leaf);
* :meth:`OnnxGraph.first_argmax` (the first of equal maxima) and :meth:`OnnxGraph.select` (each row's pick of
  several outputs);
* :meth:`OnnxGraph.clip`: ``min(max(y, low), high)``, skipping infinite bounds.

Only operators with float64 kernels in onnxruntime are used (opset :data:`OPSET`): Add, Mul, Max, Min, Sin,
Cos, Tanh, Exp, Abs, LessOrEqual, Equal, Where, Gather, GatherElements, ArgMax, Concat, Expand, Shape, Slice,
Reshape, Identity.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

__all__ = ["IR_VERSION", "OPSET", "OnnxGraph"]

#: The ONNX operator set the exports use: the oldest with every operator needed in its present form (ArgMax's
#: ``select_last_index``, LessOrEqual), so that older runtimes (embedded toolchains, PLCs) load them too.
OPSET = 13
#: The ONNX file format version that goes with :data:`OPSET`.
IR_VERSION = 7


class OnnxGraph:
    """An ONNX graph under construction: float64 nodes and constants reading the input ``obs`` ``(N, obs_dim)``.

    Parameters
    ----------
    obs_dim : int
        Number of observation features (columns of the input).
    input_name : str, default "obs"
        Name of the input.

    Examples
    --------
    >>> g = OnnxGraph(2)
    >>> y = g.affine(np.array([0.5]), np.array([[0.0, 2.0]]))  # y = 0.5 + 2.0 * obs[:, 1]
    >>> [node.op_type for node in g.nodes]
    ['Gather', 'Mul', 'Add']
    """

    def __init__(self, obs_dim: int, *, input_name: str = "obs") -> None:
        self.obs_dim = int(obs_dim)
        self.obs = input_name
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = itertools.count()
        self._consts: dict[tuple[str, tuple[int, ...], bytes], str] = {}
        self._columns: dict[int, str] = {}
        self._batch: str | None = None

    # ------------------------------------------------------------------ nodes and constants
    def _fresh(self, hint: str) -> str:
        return f"{hint}_{next(self._count)}"

    def const(self, value: Any, *, dtype: Any = np.float64, hint: str = "c") -> str:
        """A constant tensor (an initializer; equal constants are stored once)."""
        arr = np.ascontiguousarray(np.asarray(value, dtype=dtype))
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            name = self._fresh(hint)
            self.initializers.append(numpy_helper.from_array(arr, name))
            self._consts[key] = name
        return self._consts[key]

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        """Add one node ``op_type(*inputs)`` with ONNX attributes ``attrs``; returns its output's name."""
        name = out or self._fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], name=f"{op_type}_{name}", **attrs))
        return name

    # ------------------------------------------------------------------ reading the input
    def column(self, j: int) -> str:
        """``obs[:, j:j+1]`` ``(N, 1)``."""
        j = int(j)
        if not 0 <= j < self.obs_dim:
            raise ValueError(f"Feature {j} is outside [0, {self.obs_dim}).")
        if j not in self._columns:
            self._columns[j] = self.op("Gather", self.obs, self.const([j], dtype=np.int64), axis=1)
        return self._columns[j]

    def _batch_size(self) -> str:
        """``[N]`` (int64, shape ``(1,)``): the number of rows of the input."""
        if self._batch is None:
            shape = self.op("Shape", self.obs)
            self._batch = self.op("Slice", shape, self.const([0], dtype=np.int64), self.const([1], dtype=np.int64))
        return self._batch

    def rows(self, values: Any, *, dtype: Any = np.float64) -> str:
        """``values`` ``(k,)`` repeated on every row: ``(N, k)``."""
        row = np.asarray(values, dtype=dtype).reshape(1, -1)
        shape = self.op("Concat", self._batch_size(), self.const([row.shape[1]], dtype=np.int64), axis=0)
        return self.op("Expand", self.const(row, dtype=dtype), shape)

    def concat_columns(self, columns: Sequence[str]) -> str:
        """``(N, 1)`` tensors side by side: ``(N, len(columns))``."""
        if not columns:
            return self.rows(np.zeros(0))
        return columns[0] if len(columns) == 1 else self.op("Concat", *columns, axis=1)

    # ------------------------------------------------------------------ arithmetic
    def affine(self, intercept: np.ndarray, coef: np.ndarray) -> str:
        """``(N, k)``: ``y = intercept`` then ``y = y + coef[:, j] * obs[:, j]`` for every feature ``j`` with a
        non-zero coefficient, ascending (:class:`~interp_rl.kinds.linear.LinearProgram`'s arithmetic).

        ``intercept`` is ``(k,)``, ``coef`` ``(k, obs_dim)``.
        """
        intercept = np.asarray(intercept, dtype=np.float64)
        coef = np.asarray(coef, dtype=np.float64)
        y: str | None = None
        for j in np.flatnonzero(np.any(coef != 0.0, axis=0)):
            term = self.op("Mul", self.const(coef[:, j]), self.column(int(j)))
            y = self.op("Add", self.const(intercept) if y is None else y, term)
        return y if y is not None else self.rows(intercept)

    def tanh_squash(self, y: str, low: np.ndarray, high: np.ndarray) -> str:
        """``(N, k)``: ``low + 0.5 * (tanh(y) + 1.0) * (high - low)`` in that order (the ``squash="tanh"`` step)."""
        low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        half = self.op("Mul", self.const(0.5), self.op("Add", self.op("Tanh", y), self.const(1.0)))
        return self.op("Add", self.const(low), self.op("Mul", half, self.const(high - low)))

    def gathered_affine(self, index: str, intercept: np.ndarray, coef: np.ndarray) -> str:
        """``(N, k)``: row ``i`` is piece ``p = index[i]``'s affine map, ``y = intercept[p]`` then
        ``y = y + coef[p, :, j] * obs[i, j]`` for every feature ``j`` that some piece uses, ascending
        (:meth:`~interp_rl.kinds.tree.TreeProgram.leaf_actions`'s arithmetic).

        ``index`` is ``(N,)`` int64; ``intercept`` is ``(P, k)``, ``coef`` ``(P, k, obs_dim)``.
        """
        coef = np.asarray(coef, dtype=np.float64)
        y = self.op("Gather", self.const(intercept), index, axis=0)
        for j in np.flatnonzero(np.any(coef != 0.0, axis=(0, 1))):
            c = self.op("Gather", self.const(coef[:, :, j]), index, axis=0)
            y = self.op("Add", y, self.op("Mul", c, self.column(int(j))))
        return y

    def walk_tree(self, feature: np.ndarray, threshold: np.ndarray, left: np.ndarray, right: np.ndarray) -> str:
        """``(N,)`` int64: the leaf (node id) each row reaches in a binary tree stored as flat node arrays (node 0 is
        the root, ``left[n] < 0`` at leaves), going left when ``obs[:, feature[n]] <= threshold[n]``.

        The walk is unrolled, one step per level (a leaf stays where it is), so the graph grows with the depth,
        not with the number of nodes.
        """
        feature, left, right = (np.asarray(a, dtype=np.int64) for a in (feature, left, right))
        threshold = np.asarray(threshold, dtype=np.float64)
        leaf = left < 0
        if leaf[0]:
            return self._zeros_index()
        depth, levels = 0, [0]
        while True:
            levels = [int(c) for n in levels if not leaf[n] for c in (left[n], right[n])]
            if not levels:
                break
            depth += 1
        ids = np.arange(len(feature))
        feat = np.where(leaf, 0, feature)
        thr = np.where(leaf, 0.0, threshold)
        go_left = self.op("LessOrEqual", self.column(int(feat[0])), self.const([[thr[0]]]))
        node = self.op("Where", go_left, self.const([[left[0]]], dtype=np.int64),
                       self.const([[right[0]]], dtype=np.int64))  # (N, 1)
        tables = {name: self.const(a, dtype=a.dtype) for name, a in
                  (("feature", feat), ("threshold", thr), ("left", np.where(leaf, ids, left)),
                   ("right", np.where(leaf, ids, right)))}
        for _ in range(depth - 1):
            f = self.op("Gather", tables["feature"], node, axis=0)
            v = self.op("GatherElements", self.obs, f, axis=1)
            go_left = self.op("LessOrEqual", v, self.op("Gather", tables["threshold"], node, axis=0))
            node = self.op("Where", go_left, self.op("Gather", tables["left"], node, axis=0),
                           self.op("Gather", tables["right"], node, axis=0))
        return self.op("Reshape", node, self.const([-1], dtype=np.int64))

    def _zeros_index(self) -> str:
        """``(N,)`` int64 zeros."""
        return self.op("Expand", self.const([0], dtype=np.int64), self._batch_size())

    def first_argmax(self, scores: str) -> str:
        """``(N,)`` int64: the column of each row's largest score, the first of equal ones (as ``np.argmax``)."""
        return self.op("ArgMax", scores, axis=1, keepdims=0, select_last_index=0)

    def select(self, index: str, outputs: Sequence[str]) -> str:
        """``(N, k)``: row ``i`` of ``outputs[index[i]]`` (each ``(N, k)``), copied exactly."""
        if len(outputs) == 1:
            return outputs[0]
        idx = self.op("Reshape", index, self.const([-1, 1], dtype=np.int64))
        y = outputs[-1]
        for m in range(len(outputs) - 2, -1, -1):
            y = self.op("Where", self.op("Equal", idx, self.const([m], dtype=np.int64)), outputs[m], y)
        return y

    def clip(self, y: str, low: np.ndarray, high: np.ndarray) -> str:
        """``min(max(y, low), high)`` per column; a side whose bounds are all infinite is skipped."""
        low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        if np.any(np.isfinite(low)):
            y = self.op("Max", y, self.const(low))
        if np.any(np.isfinite(high)):
            y = self.op("Min", y, self.const(high))
        return y
