"""Transparent controllers as data: the :class:`Program` protocol every kind of controller implements.

A *program* is what computes a controller's actions from raw observations: a decision tree
(:class:`interp_rl.kinds.tree.TreeProgram`), a sparse linear policy
(:class:`interp_rl.kinds.linear.LinearProgram`), and whatever kind comes next. Each kind keeps
together, in one module of :mod:`interp_rl.kinds`:

* its arithmetic (``predict``), fixed in its docstring so that every runtime gives bit-identical
  actions, followed by clipping to the action bounds ``y = min(max(y, low), high)``;
* versioned JSON (``to_dict``/``from_dict``, registered under its ``kind``);
* its size (``size()``: ``parameters``, ``nonzero_terms`` and figures of its own, such as
  ``leaves`` and ``depth``);
* its explanation in named features and units (``explain``, ``explain_decision``, ``to_dot``);
* standalone code (``python_body``, ``c_body``: the statements that set ``y0 ... y{k-1}``;
  ``onnx_graph``: the same arithmetic as ONNX operations, optional; the shared frame, the clipping
  and the checks are written by :mod:`interp_rl.export`).

A :class:`Controller` is a program plus the names and units of what it reads and drives, the
task, and provenance; it is what is saved, loaded (:func:`load_controller`, for every kind),
drawn and exported. Fitting programs is :mod:`distill`'s job.

Adding a kind: subclass :class:`ProgramBase` (or implement :class:`Program` from scratch) and
decorate it with :func:`register_program`; nothing else in the toolkit changes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

from interp_rl.dot import unit_note
from interp_rl.errors import ControllerFormatError
from interp_rl.io import atomic_write_text
from interp_rl.validation import check_observations

if TYPE_CHECKING:
    from interp_rl._onnx import OnnxGraph

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "PROGRAMS",
    "Controller",
    "Program",
    "ProgramBase",
    "Region",
    "SQUASHES",
    "CAPABILITIES",
    "Signal",
    "load_controller",
    "tanh_squash",
    "unit_note",
    "register_program",
]

FORMAT = "interp-rl-controller"
FORMAT_VERSION = 1

#: How a piece's affine output becomes the action before the final clip (linear and mixture kinds).
SQUASHES = ("clip", "tanh")

_tanh = np.frompyfunc(math.tanh, 1, 1)  # the C library's tanh, as the exported Python and C call it


def tanh_squash(y: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``low + 0.5 * (tanh(y) + 1.0) * (high - low)`` with the C library's ``tanh``, in that order: the
    ``squash="tanh"`` step (SAC's and ARS's squashed actions mapped into finite bounds).

    >>> tanh_squash(np.array([[0.0, 100.0]]), np.array([-2.0, -1.0]), np.array([2.0, 1.0])).tolist()
    [[0.0, 1.0]]
    """
    t = np.asarray(_tanh(np.asarray(y, dtype=np.float64)), dtype=np.float64)
    return low + 0.5 * (t + 1.0) * (high - low)


@dataclass(frozen=True)
class Signal:
    """One named observation feature or action component, with its unit.

    Examples
    --------
    >>> Signal("thigh_joint_angle", "rad").label
    'thigh_joint_angle [rad]'
    """

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


@runtime_checkable
class Program(Protocol):
    """What every kind of controller program provides (see the module docstring)."""

    kind: ClassVar[str]
    action_low: np.ndarray
    action_high: np.ndarray

    @property
    def obs_dim(self) -> int: ...

    @property
    def act_dim(self) -> int: ...

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Clipped actions ``(n, act_dim)`` for raw observations ``X`` ``(n, obs_dim)``."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict holding ``"kind"``; floats round-trip exactly."""
        ...

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Program:
        """Inverse of :meth:`to_dict`; a malformed dict raises :class:`ControllerFormatError`."""
        ...

    def size(self) -> dict[str, int]:
        """``{"parameters": ..., "nonzero_terms": ..., ...kind-specific figures}``."""
        ...

    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
        """The whole program as text in named features, actions and units."""
        ...

    def explain_decision(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> str:
        """Why the program gives its actions for one raw observation ``x`` ``(obs_dim,)``."""
        ...

    def to_dot(self, controller: Controller, *, obs: np.ndarray | None = None, states: np.ndarray | None = None,
               max_depth: int | None = None, title: str | None = None, precision: int = 3,
               **options: Any) -> str:
        """A Graphviz picture; ``obs`` (one state) and ``states`` (visited states) may be marked on it."""
        ...

    def python_body(self, controller: Controller) -> list[str]:
        """Python statements (4-space indents, no base indent) setting ``y0 ... y{act_dim-1}`` unclipped."""
        ...

    def c_body(self, controller: Controller) -> list[str]:
        """C99 statements (4-space indents, no base indent) setting the doubles ``y0 ...`` unclipped."""
        ...


P = TypeVar("P", bound=type)

#: kind -> program class; :func:`load_controller` reads every kind registered here.
PROGRAMS: dict[str, type[Program]] = {}


def register_program(cls: P) -> P:
    """Class decorator: make a program kind loadable (``cls.kind`` names it in JSON).

    Registering a second class under a taken kind is an error, unless it replaces the class of
    the same name (a module reloaded).
    """
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"{cls.__name__} needs a class attribute 'kind' naming its program kind.")
    held = PROGRAMS.get(kind)
    if held is not None and held.__qualname__ != cls.__qualname__:
        raise TypeError(f"Program kind {kind!r} is taken by {held.__qualname__}.")
    PROGRAMS[kind] = cls  # type: ignore[assignment]
    return cls


def widen_columns(a: np.ndarray, columns: Sequence[int], obs_dim: int) -> np.ndarray:
    """``a`` with its last axis (one entry per feature read) scattered to ``columns`` of ``obs_dim`` entries
    (zeros elsewhere): the coefficients of a program widened by :meth:`ProgramBase.widened`.

    >>> widen_columns(np.array([[1.0, 2.0]]), [3, 0], 4)
    array([[2., 0., 0., 1.]])
    """
    cols = [int(c) for c in columns]
    if len(cols) != a.shape[-1] or len(set(cols)) != len(cols) or not all(0 <= c < obs_dim for c in cols):
        raise ValueError(f"columns must be {a.shape[-1]} distinct indices in [0, {obs_dim}); got {cols}.")
    out = np.zeros((*a.shape[:-1], obs_dim))
    out[..., cols] = a
    return out


def float_out(v: float) -> float | str:
    """A bound for JSON: finite floats as they are, infinities as ``"inf"``/``"-inf"``."""
    return float(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")


@dataclass
class AffinePieces:
    """A piecewise-affine program as its pieces: ``y = intercept[p] + coef[p] @ inputs(x)`` with ``p = assign(x)``.

    What RL fine-tuning trains: the pieces' parameters change, the assignment (the tree's
    splits, the mixture's router) stays as it is.
    """

    assign: Callable[[np.ndarray], np.ndarray]
    """Piece index ``(n,)`` of each row of raw observations ``(n, obs_dim)``."""
    intercept: np.ndarray
    """``(n_pieces, act_dim)``."""
    coef: np.ndarray
    """``(n_pieces, act_dim, n_inputs)``; zeros are absent terms."""
    labels: list[str] = field(default_factory=list)
    """What people call each piece (``leaf 3``, ``expert 2``)."""
    acting: list[int] = field(default_factory=list)
    """The pieces ``assign`` can return, in the order people count them (a tree's leaves, not its
    inner nodes); empty means all."""
    inputs: Callable[[np.ndarray], np.ndarray] | None = None
    """What the pieces are affine in: ``inputs(X)`` ``(n, n_inputs)`` for raw observations ``X`` (a SINDy
    policy's library terms); ``None``: the observations themselves (then ``n_inputs == obs_dim``)."""
    squash: str = "clip"
    """``"clip"``: the action is the affine output clipped to the bounds; ``"tanh"``: it is
    ``low + (high - low) * (tanh(y) + 1) / 2`` (finite bounds), then clipped."""

    def features(self, X: np.ndarray) -> np.ndarray:
        """``inputs(X)``, or ``X`` itself: what ``coef`` multiplies."""
        X = np.asarray(X, dtype=np.float64)
        return X if self.inputs is None else np.asarray(self.inputs(X), dtype=np.float64)

    def acting_pieces(self) -> list[int]:
        return list(self.acting) if self.acting else list(range(len(self.intercept)))


@dataclass
class Region:
    """A polyhedron of observations where one affine piece acts: ``lower <= x <= upper`` and ``A @ x <= b``.

    What :mod:`interp_rl.verify` checks properties on, one linear program per region. A tree's leaf is
    a box (``A`` empty; a right branch ``x_f > t`` is ``x_f >= nextafter(t, inf)``, exactly as floats
    compare); a mixture's expert acts where its router score is the largest (``A`` holds one row per
    other expert). Regions may overlap on their boundaries (ties), never leave a gap.
    """

    piece: int
    """Index of the acting piece in :meth:`ProgramBase.affine_pieces`."""
    label: str
    """What people call it (``leaf 3``, ``expert 2``)."""
    lower: np.ndarray
    """``(obs_dim,)`` box; ``-inf`` for none."""
    upper: np.ndarray
    """``(obs_dim,)`` box; ``inf`` for none."""
    A: np.ndarray
    """``(m, obs_dim)`` further constraints ``A @ x <= b`` (``m`` may be 0)."""
    b: np.ndarray
    """``(m,)``."""
    intercept: np.ndarray
    """``(act_dim,)``: the piece's unclipped actions are ``intercept + coef @ x``."""
    coef: np.ndarray
    """``(act_dim, obs_dim)``."""
    rounding: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    """For a kind whose arithmetic is not the piece's affine map summed left to right (a ReLU network stored
    factored): ``rounding(lo, hi) -> (rows, actions)``, bounds on the box ``lo..hi`` of how far the computed
    values of the ``A`` rows' left-hand sides and of the unclipped actions may be from ``A @ x`` and
    ``intercept + coef @ x``. ``None``: the left-to-right sum's own bound applies."""

    @classmethod
    def box(cls, piece: int, label: str, lower: np.ndarray, upper: np.ndarray, intercept: np.ndarray,
            coef: np.ndarray) -> Region:
        """A region that is a box."""
        return cls(piece, label, np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64),
                   np.zeros((0, len(lower))), np.zeros(0), np.asarray(intercept, dtype=np.float64),
                   np.asarray(coef, dtype=np.float64))


#: What a program kind may be able to do: capability -> (the hook that gives it, why a kind without it cannot).
#: Callers ask :meth:`ProgramBase.can`; ``tests/test_new_kind.py`` checks every registered kind's declarations.
CAPABILITIES: dict[str, tuple[str, str]] = {
    "affine": ("affine_pieces", "A {kind} program is not piecewise affine."),
    "regions": ("regions", "A {kind} program is not piecewise affine: it has no regions."),
    "from_scratch": ("from_scratch", "A {kind} program has structure to learn first; start from a saved one."),
    "drop_pieces": ("without_pieces", "A {kind} program cannot act without some of its pieces."),
    "widen": ("widened", "A {kind} program cannot be widened to more observation features."),
    "exact_shapley": ("shapley_values", "A {kind} program has no exact Shapley rule; estimate its values by "
                                        "sampling."),
    "onnx": ("onnx_graph", "A {kind} program has no ONNX form."),
}


class ProgramBase:
    """Shared behaviour of the shipped kinds: action bounds, clipping, and fallbacks for pictures.

    Subclasses set ``kind``, ``action_low``/``action_high`` (via :meth:`_init_bounds`) and
    implement ``obs_dim``, ``act_dim``, ``raw_predict`` (unclipped actions), ``to_dict``,
    ``from_dict``, ``size``, ``explain``, ``python_body`` and ``c_body``; ``onnx_graph`` if they
    can be exported to ONNX.
    """

    kind: ClassVar[str] = ""
    rules_title: ClassVar[str] = ""
    """What reports call the program's text (a tree's is ``Rules``; "": ``The KIND controller``)."""
    compared_with: ClassVar[str] = ""
    """Another kind that reports set this one against at equal size ("": none); a mixture's is ``tree``."""
    equal_size_with: ClassVar[str] = ""
    """Another kind that reports set this one against at no more than its own parameters ("": none)."""
    title: ClassVar[str] = ""
    """What reports call controllers of this kind, plural (``Mixtures``; "": the kind's name)."""
    piece_names: ClassVar[tuple[str, str]] = ("piece", "pieces")
    """What reports call one and several of its pieces (:meth:`affine_pieces`): a mixture's experts."""

    @classmethod
    def drops_pieces(cls) -> bool:
        """Whether the kind can act without some of its pieces (it implements :meth:`without_pieces`)."""
        return cls.kind_can("drop_pieces")

    @classmethod
    def kind_can(cls, capability: str) -> bool:
        """Whether the kind declares ``capability`` (one of :data:`CAPABILITIES`): it implements the hook. A
        program of the kind may still lack it (:meth:`cannot` says why); a kind that lacks it never has it.

        >>> from interp_rl.kinds.linear import LinearProgram
        >>> from interp_rl.kinds.tree import TreeProgram
        >>> LinearProgram.kind_can("from_scratch"), TreeProgram.kind_can("from_scratch")
        (True, False)
        """
        if capability not in CAPABILITIES:
            raise ValueError(f"Unknown capability {capability!r}; one of {', '.join(CAPABILITIES)}.")
        hook = CAPABILITIES[capability][0]
        owner = next(k for k in cls.__mro__ if hook in k.__dict__)  # who defines the hook (a classmethod too)
        return owner is not ProgramBase

    def cannot(self, capability: str) -> str | None:
        """Why this program lacks ``capability`` (one line), or ``None`` when it has it. Kinds whose programs
        differ (a mixture routed by one tree cannot drop experts) override it and ask ``super()`` first."""
        if not type(self).kind_can(capability):
            return CAPABILITIES[capability][1].format(kind=self.kind)
        if capability == "exact_shapley" and not self.exact_shapley:
            return f"This {self.kind} program has no exact Shapley rule; its values are estimated by sampling."
        return None

    def can(self, capability: str) -> bool:
        """Whether this program has ``capability``: callers ask, rather than call the hook and catch a
        ``TypeError`` (which would hide a bug inside the hook as "not supported")."""
        return self.cannot(capability) is None
    action_low: np.ndarray
    action_high: np.ndarray

    def _init_bounds(self, low: Any, high: Any, act_dim: int) -> None:
        low = np.asarray(low if low is not None else [], dtype=np.float64).ravel()
        high = np.asarray(high if high is not None else [], dtype=np.float64).ravel()
        self.action_low = np.full(act_dim, -np.inf) if low.size == 0 else low
        self.action_high = np.full(act_dim, np.inf) if high.size == 0 else high
        for name in ("action_low", "action_high"):
            if getattr(self, name).shape != (act_dim,):
                raise ControllerFormatError(f"{name} must have {act_dim} entries.")
        if np.any(np.isnan(self.action_low)) or np.any(np.isnan(self.action_high)):
            raise ControllerFormatError("An action bound is NaN; bounds must be numbers or +-inf.")

    def _bounds_dict(self) -> dict[str, list[float | str]]:
        return {"action_low": [float_out(v) for v in self.action_low],
                "action_high": [float_out(v) for v in self.action_high]}

    def affine_pieces(self) -> AffinePieces:
        """The program as affine pieces (kinds that are piecewise affine implement it)."""
        raise TypeError(f"A {self.kind} program is not piecewise affine.")

    def with_affine_pieces(self, intercept: np.ndarray, coef: np.ndarray) -> Program:
        """The same program with its pieces' parameters replaced (structure and bounds kept)."""
        raise TypeError(f"A {self.kind} program is not piecewise affine.")

    def routing_maps(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Affine maps of the observations besides the pieces that choose which piece acts and that a search
        may move with them, ``[(intercept (k,), coef (k, obs_dim)), ...]`` (a mixture's linear router); none by
        default."""
        return []

    def with_routing_maps(self, maps: Sequence[tuple[np.ndarray, np.ndarray]]) -> Program:
        """The same program with :meth:`routing_maps` replaced (as many, of the same shapes)."""
        if maps:
            raise TypeError(f"A {self.kind} program has no routing maps to replace.")
        return self  # type: ignore[return-value]

    @classmethod
    def from_scratch(cls, obs_dim: int, low: np.ndarray, high: np.ndarray) -> Program:
        """A program of this kind that a search can start from with nothing learnt (all zero), for ``obs_dim``
        features and actions bounded by ``low``/``high``; a ``TypeError`` for kinds whose structure must be
        learnt first (a tree's splits, a mixture's router)."""
        raise TypeError(f"A {cls.kind} program has structure to learn first; start from a saved one.")

    def regions(self) -> list[Region]:
        """The observation space split into the polyhedra where one affine piece acts (kinds that are piecewise
        affine implement it; :mod:`interp_rl.verify` decides properties on them one by one)."""
        raise TypeError(f"A {self.kind} program is not piecewise affine: it has no regions.")

    def without_pieces(self, drop: Sequence[int]) -> Program:
        """The program with the pieces ``drop`` (indices of :meth:`affine_pieces`) removed, others acting in their
        place; a ``TypeError`` where the kind has no such thing (the harness then does not try fewer pieces)."""
        raise TypeError(f"A {self.kind} program cannot act without some of its pieces.")

    def widened(self, columns: Sequence[int], obs_dim: int) -> Program:
        """The same program reading a wider observation of ``obs_dim`` features: its feature ``i`` is column
        ``columns[i]`` there, the other columns are ignored (a controller fitted on a subset of the sensors,
        run on the full observation). Kinds implement it. With ``columns`` increasing, the actions are
        bit-identical to the program's on those columns (terms are added in the same order)."""
        raise TypeError(f"A {self.kind} program cannot be widened to more observation features.")

    @property
    def exact_shapley(self) -> bool:
        """Whether :meth:`shapley_values` has an exact rule for this program (else estimate by sampling)."""
        return False

    def shapley_values(self, X: np.ndarray, background: np.ndarray,
                       weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact interventional Shapley values of the *unclipped* output (:meth:`raw_predict`).

        Returns ``phi`` ``(n, obs_dim, act_dim)`` and ``base`` ``(act_dim,)``, the background's weighted
        mean output, with ``base + phi.sum(axis=1) == raw_predict(X)``. Kinds with an exact rule override
        it (see :mod:`interp_rl._shapley`); :func:`interp_rl.attribution.explain` estimates the others.
        """
        raise TypeError(f"A {self.kind} program has no exact Shapley rule; estimate its values by sampling.")

    def visit_summary(self, X: np.ndarray) -> str:
        """What visiting the states ``X`` (e.g. one episode) used of the program, for a one-line report;
        '' when there is nothing to say (a kind may override it)."""
        return ""

    def onnx_graph(self, graph: OnnxGraph) -> str:
        """The unclipped actions as ONNX operations added to ``graph``, which reads the raw observations
        ``(N, obs_dim)``: returns the name of an ``(N, act_dim)`` float64 tensor. Kinds that have an ONNX form
        implement it with the kind's arithmetic, operation for operation (see :mod:`interp_rl._onnx`);
        :func:`interp_rl.export.to_onnx` clips the result and writes the model."""
        raise TypeError(f"A {self.kind} program has no ONNX form.")

    def clip(self, y: np.ndarray) -> np.ndarray:
        """``min(max(y, low), high)``, the last step of every program."""
        return np.minimum(np.maximum(y, self.action_low), self.action_high)

    def raw_predict(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Actions ``(n, act_dim)`` for raw observations ``X`` ``(n, obs_dim)``."""
        return self.clip(self.raw_predict(np.asarray(X, dtype=np.float64)))

    def _check_squash(self, squash: str) -> None:
        if squash not in SQUASHES:
            raise ControllerFormatError(f"squash must be one of {', '.join(SQUASHES)}; got {squash!r}.")
        if squash == "tanh" and not (np.all(np.isfinite(self.action_low)) and np.all(np.isfinite(self.action_high))):
            raise ControllerFormatError("squash='tanh' maps into the action bounds, so every bound must be finite.")

    def squash_note(self, controller: Controller, fmt: Any) -> str:
        """``actions are squashed into their bounds: torque = -1 + 2 * (tanh(z(torque)) + 1) / 2, ...``."""
        parts = [f"{a.label} = {fmt(float(lo))} + {fmt(float(hi - lo))} * (tanh(z({a.label})) + 1) / 2"
                 for a, lo, hi in zip(controller.actions, self.action_low, self.action_high, strict=True)]
        return "actions are squashed into their bounds: " + ", ".join(parts)

    def clip_note(self, controller: Controller, fmt: Any) -> str | None:
        """``actions are clipped to a in [lo, hi], ...`` for the actions with a finite bound."""
        parts = []
        for out, action in enumerate(controller.actions):
            lo, hi = float(self.action_low[out]), float(self.action_high[out])
            if np.isfinite(lo) or np.isfinite(hi):
                parts.append(f"{action.label} in [{fmt(lo)}, {fmt(hi)}]")
        return "actions are clipped to " + ", ".join(parts) if parts else None

    def explain_decision(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> str:
        """Fallback: the program's text, then the actions it gives for ``x``."""
        from interp_rl._codegen import compact

        y = self.predict(np.asarray(x, dtype=np.float64)[None, :])[0]
        lines = [self.explain(controller, precision=precision)]  # type: ignore[attr-defined]
        lines += [f"  {a.label} = {compact(float(v), precision)}" for a, v in zip(controller.actions, y,
                                                                                    strict=True)]
        return "\n".join(lines)

    def to_dot(self, controller: Controller, *, obs: np.ndarray | None = None, states: np.ndarray | None = None,
               max_depth: int | None = None, title: str | None = None, precision: int = 3,
               **options: Any) -> str:
        """Fallback picture: one box holding :meth:`explain`'s text."""
        from interp_rl.dot import dot_label

        if options:
            raise TypeError(f"to_dot of a {self.kind} program takes no option {sorted(options)[0]!r}.")
        text = self.explain(controller, precision=precision, max_depth=max_depth)  # type: ignore[attr-defined]
        lines = ([title] if title else []) + text.splitlines()
        return ("digraph controller {\n"
                '  node [shape=box, fontname="Helvetica", fontsize=11, labeljust=l];\n'
                f"  program [label={dot_label(lines, left=True)}];\n}}")


@dataclass
class Controller:
    """A transparent controller: a program plus the names of what it reads and drives.

    Parameters
    ----------
    program : Program
        What computes the actions (any registered kind).
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
    >>> from interp_rl.kinds.linear import LinearProgram
    >>> prog = LinearProgram(intercept=[0.5], coef=[[0.0, 2.0]])
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad"), Signal("speed", "m/s")],
    ...                   actions=[Signal("torque")])
    >>> ctrl.predict(np.array([[0.0, 1.0], [0.0, -1.0]]))
    array([[ 2.5],
           [-1.5]])
    >>> Controller.from_dict(ctrl.to_dict()).predict(np.zeros(2))
    array([0.5])
    """

    program: Program
    features: list[Signal] = field(default_factory=list)
    actions: list[Signal] = field(default_factory=list)
    task: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.program, Program):
            raise TypeError(f"A controller's program implements interp_rl.program.Program; got "
                            f"{type(self.program).__name__}.")
        self.features = _signals(self.features) or default_signals("obs", self.program.obs_dim)
        self.actions = _signals(self.actions) or default_signals("action", self.program.act_dim)
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

    def size(self) -> dict[str, int]:
        """The program's size figures (``parameters``, ``nonzero_terms``, ...)."""
        return self.program.size()

    @property
    def class_values(self) -> list[Any] | None:
        """The value of each class, when the controller outputs one score per class of a discrete action (learnt
        from a log, whose metadata names them) and plays the class with the highest score; ``None`` otherwise."""
        info = self.metadata.get("classes")
        values = info.get("values") if isinstance(info, dict) else None
        return list(values) if isinstance(values, list) and len(values) == self.program.act_dim else None

    def played_class(self, scores: Any, *, precision: int = 3) -> str | None:
        """What a piece with these constant (clipped) scores plays, for a reader: ``heating_setpoint = 22 °C``, the
        runner-up added where it comes within 0.25 of the winner's score (``ties go to the first``); ``None`` for a
        controller that plays no classes.

        >>> from interp_rl.kinds.linear import LinearProgram
        >>> ctrl = Controller(LinearProgram(intercept=[0.0, 0.0, 0.0], coef=np.zeros((3, 1))), features=["t"],
        ...                   actions=["sp=20", "sp=21", "sp=22"],
        ...                   metadata={"classes": {"action": {"name": "sp", "unit": "°C"}, "values": [20, 21, 22]}})
        >>> ctrl.played_class([0.1, 0.9, 0.0]), ctrl.played_class([0.4, 0.6, 0.0])
        ('sp = 21 °C', 'sp = 21 °C (runner-up 20 °C: 0.400 against 0.600)')
        >>> ctrl.played_class([0.5, 0.5, 0.0])
        'sp = 20 °C (tied with 21 °C at 0.500: the first plays)'
        """
        values = self.class_values
        if values is None:
            return None
        info = self.metadata["classes"]
        action = info.get("action") or {}
        name, unit = action.get("name") or "class", action.get("unit") or ""
        s = np.asarray(scores, dtype=np.float64).ravel()
        order = np.argsort(-s, kind="stable")  # the first of equal scores first, as the controller plays
        shown = [f"{values[i]:g}{' ' + unit if unit else ''}" if isinstance(values[i], int | float)
                 else f"{values[i]}{' ' + unit if unit else ''}" for i in range(len(values))]
        text = f"{name} = {shown[order[0]]}"
        if len(s) > 1:
            best, second = s[order[0]], s[order[1]]
            if second == best:
                text += f" (tied with {shown[order[1]]} at {best:.{precision}f}: the first plays)"
            elif best - second < 0.25:
                text += f" (runner-up {shown[order[1]]}: {second:.{precision}f} against {best:.{precision}f})"
        return text

    def check_obs(self, obs: Any) -> tuple[np.ndarray, bool]:
        """``(obs_2d, was_single)``: ``obs`` checked for size and finiteness, naming the features."""
        return check_observations(
            obs, self.program.obs_dim, owner=f"the {self.kind} controller", task=self.task or None,
            feature_names=self.feature_names,
        )

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Actions for raw ``obs`` ``(n, obs_dim)`` or ``(obs_dim,)``."""
        arr, single = self.check_obs(obs)
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
        try:
            program = PROGRAMS[kind].from_dict(prog)
        except ControllerFormatError as exc:
            raise ControllerFormatError(f"{source} holds a malformed {kind} program: {exc}") from None
        return cls(program, features=features, actions=actions,
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


def _signals(items: Sequence[str | Signal] | None) -> list[Signal]:
    return [s if isinstance(s, Signal) else Signal(str(s)) for s in (items or [])]


def load_controller(path: str | Path) -> Controller:
    """Load any saved controller (a ``controller.json`` or the folder holding it)."""
    return Controller.load(path)
