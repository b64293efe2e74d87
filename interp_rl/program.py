"""Transparent controllers as data: the program every distiller compiles to.

A :class:`TreeProgram` is a binary decision tree over raw observations whose
leaves are affine maps (a constant action, or a sparse linear function of the
observation), followed by clipping to the action bounds. It is the one
representation that is drawn, exported to Python and C, and saved as JSON, so
one loader runs every controller.

Arithmetic is fixed so that every runtime gives bit-identical actions: at a
leaf, ``y = intercept`` then ``y = y + coef_j * x_j`` for the non-zero terms in
ascending feature order, then ``y = min(max(y, low), high)``. A split sends
``x`` left when ``x[feature] <= threshold``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl._validation import check_observations
from interp_rl.errors import InterpRLError
from interp_rl.io import atomic_write_text

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Controller",
    "ControllerFormatError",
    "Signal",
    "TreeProgram",
    "load_controller",
]

FORMAT = "interp-rl-controller"
FORMAT_VERSION = 1


class ControllerFormatError(InterpRLError, ValueError):
    """A saved controller file is corrupt, truncated or of an unknown version."""


@dataclass(frozen=True)
class Signal:
    """One named observation feature or action component, with its unit."""

    name: str
    unit: str = ""
    description: str = ""

    @property
    def label(self) -> str:
        """``name [unit]`` (or just ``name``)."""
        return f"{self.name} [{self.unit}]" if self.unit else self.name

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "unit": self.unit, "description": self.description}


def default_signals(prefix: str, n: int) -> list[Signal]:
    """``obs_0 ... obs_{n-1}``: names used when none are given."""
    return [Signal(f"{prefix}_{i}") for i in range(n)]


@dataclass
class TreeProgram:
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
    >>> t.n_leaves, t.depth
    (2, 1)
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
        self.action_low = np.asarray(self.action_low, dtype=np.float64)
        if self.action_low.size == 0:
            self.action_low = np.full(act_dim, -np.inf)
        self.action_high = np.asarray(self.action_high, dtype=np.float64)
        if self.action_high.size == 0:
            self.action_high = np.full(act_dim, np.inf)
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

    def leaf_terms(self, node: int, out: int) -> list[tuple[int, float]]:
        """``[(feature, coef), ...]`` of a leaf's output, ascending feature order."""
        row = self.coef[node, out]
        return [(int(j), float(row[j])) for j in np.flatnonzero(row)]

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
        for name in ("action_low", "action_high"):
            if getattr(self, name).shape != (self.act_dim,):
                raise ControllerFormatError(f"{name} must have {self.act_dim} entries.")
        internal = self.left >= 0
        if np.any((self.right >= 0) != internal):
            raise ControllerFormatError("Every node needs both children or none.")
        if np.any(self.left[internal] >= n) or np.any(self.right[internal] >= n):
            raise ControllerFormatError("A child id points past the last node.")
        if np.any(self.feature[internal] < 0) or np.any(self.feature[internal] >= self.obs_dim):
            raise ControllerFormatError(f"A split feature is outside [0, {self.obs_dim}).")
        if not np.all(np.isfinite(self.threshold[internal])):
            raise ControllerFormatError("A split threshold is not finite.")
        if not (np.all(np.isfinite(self.intercept)) and np.all(np.isfinite(self.coef))):
            raise ControllerFormatError("A leaf parameter is not finite.")
        seen = np.zeros(n, dtype=bool)
        stack = [0]
        while stack:
            node = stack.pop()
            if seen[node]:
                raise ControllerFormatError(f"Node {node} is reached twice; the nodes do not form a tree.")
            seen[node] = True
            if internal[node]:
                stack.extend((int(self.left[node]), int(self.right[node])))

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

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Actions ``(n, act_dim)`` for raw observations ``X`` ``(n, obs_dim)``."""
        X = np.asarray(X, dtype=np.float64)
        y = self.leaf_actions(X, self.apply(X))
        return np.minimum(np.maximum(y, self.action_low), self.action_high)

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
            "action_low": [_float_out(v) for v in self.action_low],
            "action_high": [_float_out(v) for v in self.action_high],
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


def _float_out(v: float) -> float | str:
    return float(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")


PROGRAMS: dict[str, type[TreeProgram]] = {"tree": TreeProgram}


@dataclass
class Controller:
    """A transparent controller: a program plus the names of what it reads and drives.

    Parameters
    ----------
    program : TreeProgram
        What computes the actions.
    features : list of Signal
        One per observation component (names and units).
    actions : list of Signal
        One per action component.
    task : str
        The task the controller was made for.
    metadata : dict
        Provenance (teacher, method, config, metrics); JSON-serialisable.

    Examples
    --------
    >>> import numpy as np
    >>> prog = TreeProgram.from_leaves(feature=[-1], threshold=[0.0], left=[-1], right=[-1],
    ...                                intercept=[[0.5]], obs_dim=2)
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad"), Signal("speed", "m/s")],
    ...                   actions=[Signal("torque")])
    >>> ctrl.predict(np.zeros((2, 2)))
    array([[0.5],
           [0.5]])
    >>> Controller.from_dict(ctrl.to_dict()).predict(np.zeros(2))
    array([0.5])
    """

    program: TreeProgram
    features: list[Signal] = field(default_factory=list)
    actions: list[Signal] = field(default_factory=list)
    task: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.features:
            self.features = default_signals("obs", self.program.obs_dim)
        if not self.actions:
            self.actions = default_signals("action", self.program.act_dim)
        if len(self.features) != self.program.obs_dim:
            raise ControllerFormatError(
                f"{len(self.features)} feature names for a program reading {self.program.obs_dim} features."
            )
        if len(self.actions) != self.program.act_dim:
            raise ControllerFormatError(
                f"{len(self.actions)} action names for a program with {self.program.act_dim} actions."
            )

    @property
    def kind(self) -> str:
        return self.program.kind

    @property
    def feature_names(self) -> list[str]:
        return [f.name for f in self.features]

    @property
    def action_names(self) -> list[str]:
        return [a.name for a in self.actions]

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Actions for raw ``obs`` ``(n, obs_dim)`` or ``(obs_dim,)``."""
        arr, single = check_observations(
            obs, self.program.obs_dim, owner=f"the {self.kind} controller", task=self.task or None,
            feature_names=self.feature_names,
        )
        out = self.program.predict(arr)
        return out[0] if single else out

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "task": self.task,
            "features": [f.to_dict() for f in self.features],
            "actions": [a.to_dict() for a in self.actions],
            "program": self.program.to_dict(),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, d: Any, *, source: str = "controller") -> Controller:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ControllerFormatError(f"{source} is not an interp-rl controller (no 'format': '{FORMAT}').")
        version = d.get("version")
        if version != FORMAT_VERSION:
            raise ControllerFormatError(
                f"{source} has controller format version {version!r}; this interp-rl reads version "
                f"{FORMAT_VERSION}. Upgrade interp-rl or re-export the controller."
            )
        prog = d.get("program")
        kind = prog.get("kind") if isinstance(prog, dict) else None
        if not isinstance(prog, dict) or kind not in PROGRAMS:
            raise ControllerFormatError(
                f"{source} holds a program of kind {kind!r}; known kinds: {', '.join(sorted(PROGRAMS))}."
            )
        try:
            features = [Signal(**f) for f in d["features"]]
            actions = [Signal(**a) for a in d["actions"]]
        except (KeyError, TypeError) as exc:
            raise ControllerFormatError(f"{source} has malformed feature or action names: {exc}.") from None
        return cls(PROGRAMS[kind].from_dict(prog), features=features, actions=actions,
                   task=str(d.get("task", "")), metadata=dict(d.get("metadata") or {}))

    def save(self, path: str | Path) -> Path:
        """Write the controller as JSON, atomically."""
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Controller:
        """Read a controller saved by :meth:`save` (or ``interp-rl distill``)."""
        p = Path(path)
        if p.is_dir():
            p = p / "controller.json"
        if not p.is_file():
            raise ControllerFormatError(f"Controller file {str(p)!r} does not exist.")
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ControllerFormatError(f"{str(p)!r} is corrupt (not valid JSON: {exc}).") from None
        return cls.from_dict(d, source=repr(str(p)))


def load_controller(path: str | Path) -> Controller:
    """Load any saved controller (a ``controller.json`` or the folder holding it)."""
    return Controller.load(path)
