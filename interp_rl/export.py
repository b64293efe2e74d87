"""Ship a controller: standalone Python and C source that reproduce its actions bit for bit.

:func:`to_python` and :func:`to_c` turn a :class:`~interp_rl.program.Controller` into source
code with no dependency on interp-rl (Python: standard library only; C: C99, no libm), for
every program kind. The frame is shared: a header naming the task, every feature with its unit
and every action with its bounds; the input checks; then the kind's own statements
(``program.python_body`` / ``program.c_body``, which follow its arithmetic contract literally,
e.g. a tree's splits and affine leaves ``y = intercept + c1 * obs[j1] + ...`` left to right);
then ``y = min(max(y, low), high)`` with Python's ``min``/``max`` (C uses the same comparisons),
skipping infinite bounds.

Every number is printed with ``repr(float)``, the shortest decimal that reads back as the same
double, in both languages. The C file turns off floating-point contraction (a fused multiply-add
rounds once instead of twice and changes the last bit) with ``#pragma GCC optimize`` for GCC and
``#pragma STDC FP_CONTRACT OFF`` elsewhere, and refuses to compile with ``-ffast-math`` or
excess-precision arithmetic unless ``INTERP_RL_ALLOW_INEXACT`` is defined. Compile it with
``-ffp-contract=off`` all the same.

:func:`to_onnx` writes the same controller as an ONNX model (float64 input ``obs`` ``(N, obs_dim)``,
output ``action`` ``(N, act_dim)``) for runtimes that take ONNX: each kind's ``onnx_graph`` builds
its arithmetic operation for operation (:mod:`interp_rl._onnx`), then the same clipping.

:func:`write_exports` writes ``controller.json``, ``controller.py`` and ``controller.c`` (and
``controller.onnx`` when asked) side by side; :func:`load_python_controller`, :func:`compile_c`,
:func:`load_c_controller` and :func:`load_onnx_controller` bring the exported code back into Python
(for tests and for :func:`measure_latency`).
"""

from __future__ import annotations

import ctypes
import importlib.util
import itertools
import json
import math
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from interp_rl._codegen import WIDTH, comment, lit
from interp_rl.errors import ExportError
from interp_rl.io import atomic_write_bytes, atomic_write_text
from interp_rl.program import FORMAT, FORMAT_VERSION, Controller, Program, ProgramBase, Signal, float_out
from interp_rl.validation import check_int

if TYPE_CHECKING:
    import onnx

__all__ = [
    "C_FLAGS",
    "EXPORT_FILES",
    "ExportError",
    "compile_c",
    "find_compiler",
    "load_c_controller",
    "load_onnx_controller",
    "load_python_controller",
    "measure_latency",
    "to_c",
    "to_onnx",
    "to_python",
    "write_exports",
]

#: Flags :func:`compile_c` passes to the C compiler (before the output flags).
C_FLAGS = ("-O2", "-std=c99", "-ffp-contract=off")

_module_counter = itertools.count()


# ------------------------------------------------------------------------------ helpers
def _label(signal: Signal) -> str:
    return comment(signal.label)


def _bounds_text(low: float, high: float) -> str:
    if math.isinf(low) and math.isinf(high):
        return "not clipped"
    return f"clipped to [{float(low)!r}, {float(high)!r}]"


def _check_exportable(controller: Controller) -> Program:
    prog = controller.program
    for name in ("action_low", "action_high"):
        if np.any(np.isnan(getattr(prog, name))):
            raise ExportError(f"The controller's {name} holds NaN; action bounds must be numbers or +-inf.")
    return prog


# ------------------------------------------------------------------------------ Python
def to_python(controller: Controller) -> str:
    """Source of a standalone Python module whose ``act(obs)`` reproduces ``controller.predict``.

    The module uses the standard library only and defines ``act(obs: list[float]) -> list[float]``
    for one raw observation, plus the constants ``OBS_DIM``, ``ACT_DIM``, ``FEATURES``,
    ``ACTIONS`` and ``FORMAT_VERSION``. ``act`` raises ``ValueError`` when ``obs`` has the wrong
    length or a non-finite value (as ``predict`` does).

    Parameters
    ----------
    controller : Controller
        Any controller.

    Returns
    -------
    str
        The module source: a header naming the task, every feature with its unit, every action
        with its bounds and the controller format version, then the program kind's statements
        (for a tree, nested ``if``/``else`` blocks, each split commented with its feature).

    Raises
    ------
    ExportError
        If the action bounds hold NaN, or the program cannot be written in Python (a tree deeper
        than CPython's 100 levels of indentation: export it to C instead).

    Examples
    --------
    >>> from interp_rl.kinds.tree import TreeProgram
    >>> from interp_rl.program import Controller, Signal
    >>> prog = TreeProgram.from_leaves(
    ...     feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1], right=[2, -1, -1],
    ...     intercept=[[0.0], [-1.0], [0.25]], coef={2: {(0, 1): 2.0}}, obs_dim=2)
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad"), Signal("speed", "m/s")],
    ...                   actions=[Signal("torque", "N m")])
    >>> src = to_python(ctrl)
    >>> print(src[src.index("    if obs"):], end="")
        if obs[0] <= 0.5:  # angle [rad]
            # leaf 1 of 2
            y0 = -1.0
        else:
            # leaf 2 of 2
            y0 = 0.25 + 2.0 * obs[1]
        return [y0]
    >>> namespace: dict = {}
    >>> exec(src, namespace)
    >>> namespace["act"]([1.0, 3.0]), ctrl.predict([1.0, 3.0]).tolist()
    ([6.25], [6.25])
    """
    prog = _check_exportable(controller)
    obs_dim, act_dim = prog.obs_dim, prog.act_dim
    lines = [
        '"""Standalone controller exported by interp-rl: ``act(obs)`` maps one raw observation to actions.',
        "",
        "Standard library only. The arithmetic follows the interp-rl controller contract of its",
        f"program kind ({comment(prog.kind)}), so ``act`` returns the same floats, bit for bit, as",
        "``Controller.predict``: sums ``y = c0 + c1 * obs[j1] + ...`` are evaluated left to right in",
        "ascending feature order, then clipped as ``min(max(y, low), high)``.",
        '"""',
        "",
        f"# task: {comment(controller.task) or '(none)'}",
        f"# program kind: {comment(prog.kind)}",
        f"# format: {FORMAT} version {FORMAT_VERSION}",
        f"# observations (OBS_DIM = {obs_dim}):",
        *(f"#   obs[{i}] = {_label(s)}" for i, s in enumerate(controller.features)),
        f"# actions (ACT_DIM = {act_dim}); yI in act() is action[I]:",
        *(
            f"#   action[{i}] = {_label(s)}, {_bounds_text(prog.action_low[i], prog.action_high[i])}"
            for i, s in enumerate(controller.actions)
        ),
        "",
        "import math",
        "",
        f"FORMAT_VERSION = {FORMAT_VERSION}",
        f"OBS_DIM = {obs_dim}",
        f"ACT_DIM = {act_dim}",
        *_python_tuple("FEATURES", controller.feature_names),
        *_python_tuple("ACTIONS", controller.action_names),
        "",
        "",
        "def act(obs: list[float]) -> list[float]:",
        '    """Return the ACT_DIM actions for one observation of OBS_DIM finite floats."""',
        "    obs = [float(v) for v in obs]",
        "    if len(obs) != OBS_DIM:",
        '        raise ValueError(f"act() expects {OBS_DIM} observation values (OBS_DIM); got {len(obs)}.")',
        "    if not all(map(math.isfinite, obs)):",
        "        bad = next(i for i, v in enumerate(obs) if not math.isfinite(v))",
        '        raise ValueError(f"obs[{bad}] ({FEATURES[bad]}) is {obs[bad]}; '
        'observations must be finite.")',
    ]
    lines += ["    " + line for line in prog.python_body(controller)]
    clipped = [_python_clip(f"y{i}", prog.action_low[i], prog.action_high[i]) for i in range(act_dim)]
    ret = f"    return [{', '.join(clipped)}]"
    if len(ret) <= WIDTH:
        lines.append(ret)
    else:
        lines += ["    return [", *(f"        {c}," for c in clipped), "    ]"]
    lines += _python_play(controller)
    return "\n".join(lines) + "\n"


def _class_action(controller: Controller) -> str:
    info = controller.metadata.get("classes") or {}
    action = info.get("action") or {}
    name, unit = action.get("name") or "the class", action.get("unit")
    return f"{name} [{unit}]" if unit else name


def _python_play(controller: Controller) -> list[str]:
    """``CLASSES`` and ``play(obs)``, for a controller whose actions are one score per class of a discrete action."""
    values = controller.class_values
    if values is None:
        return []
    return [
        "",
        "",
        f"# The class each action's score stands for: the controller plays {comment(_class_action(controller))} =",
        "# CLASSES[i] of the highest score (the first of equal ones).",
        *_python_tuple("CLASSES", values),
        "",
        "",
        "def play(obs: list[float]):",
        '    """The class value the controller plays for one observation: that of the highest score of act(obs), the',
        '    first of equal ones."""',
        "    scores = act(obs)",
        "    return CLASSES[max(range(ACT_DIM), key=lambda i: (scores[i], -i))]",
    ]


def _python_tuple(name: str, items: list[str]) -> list[str]:
    inner = ", ".join(repr(s) for s in items) + ("," if len(items) == 1 else "")
    line = f"{name} = ({inner})"
    if len(line) <= WIDTH:
        return [line]
    return [f"{name} = (", *(f"    {s!r}," for s in items), ")"]


def _python_clip(var: str, low: float, high: float) -> str:
    expr = var
    if not math.isinf(low):
        expr = f"max({expr}, {lit(low)})"
    if not math.isinf(high):
        expr = f"min({expr}, {lit(high)})"
    return expr


# ------------------------------------------------------------------------------ C
def to_c(controller: Controller) -> str:
    """Source of a standalone C99 file whose ``act`` reproduces ``controller.predict``.

    The file defines ``OBS_DIM`` and ``ACT_DIM``, ``void act(const double *obs, double *action)``
    (reads ``OBS_DIM`` doubles, writes ``ACT_DIM``; the two may alias), and
    ``int interp_rl_obs_dim(void)`` / ``int interp_rl_act_dim(void)`` for callers that cannot read
    macros (ctypes). Defining ``INTERP_RL_MAIN`` adds a ``main`` that reads observations from
    stdin (``OBS_DIM`` numbers each) and prints one line of actions per observation with
    ``%.17g``, which reads back exactly.

    Parameters
    ----------
    controller : Controller
        Any controller.

    Returns
    -------
    str
        The C source. Compile it with ``-ffp-contract=off`` (see the header comment); it does
        not use libm.

    Raises
    ------
    ExportError
        If the action bounds hold NaN.

    Examples
    --------
    >>> from interp_rl.kinds.tree import TreeProgram
    >>> from interp_rl.program import Controller, Signal
    >>> prog = TreeProgram.from_leaves(
    ...     feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1], right=[2, -1, -1],
    ...     intercept=[[0.0], [-1.0], [0.25]], coef={2: {(0, 1): -2.0}}, obs_dim=2,
    ...     action_low=[-1.0], action_high=[1.0])
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad"), Signal("speed", "m/s")])
    >>> src = to_c(ctrl)
    >>> body = src[src.index("void act(const double *obs, double *action)\\n"):]
    >>> print(body[:body.index("#ifdef INTERP_RL_MAIN")], end="")
    void act(const double *obs, double *action)
    {
        double y0;
    <BLANKLINE>
        (void)obs;
        if (obs[0] <= 0.5) {  /* angle [rad] */
            /* leaf 1 of 2 */
            y0 = -1.0;
        } else {
            /* leaf 2 of 2 */
            y0 = 0.25 - 2.0 * obs[1];
        }
        /* clip: y = min(max(y, low), high) */
        if (y0 < -1.0) y0 = -1.0;
        if (y0 > 1.0) y0 = 1.0;
        action[0] = y0;
    }
    <BLANKLINE>
    """
    prog = _check_exportable(controller)
    obs_dim, act_dim = prog.obs_dim, prog.act_dim
    lines = [
        "/* Standalone controller exported by interp-rl.",
        " *",
        f" * task: {comment(controller.task) or '(none)'}",
        f" * program kind: {comment(prog.kind)}",
        f" * format: {FORMAT} version {FORMAT_VERSION}",
        " *",
        " * act() returns the same doubles, bit for bit, as Controller.predict in interp-rl, provided",
        " * the compiler does not fuse a multiply and an add (one rounding instead of two changes the",
        " * last bit). Compile with -ffp-contract=off and never with -ffast-math, e.g.",
        " *     cc -O2 -std=c99 -ffp-contract=off -c controller.c",
        " * Define INTERP_RL_MAIN for a program that reads OBS_DIM numbers per observation from stdin",
        " * and prints the ACT_DIM actions of each on one line (%.17g, exact).",
        " *",
        f" * observations (OBS_DIM = {obs_dim}):",
        *(f" *   obs[{i}] = {_label(s)}" for i, s in enumerate(controller.features)),
        f" * actions (ACT_DIM = {act_dim}); yI in act() is action[I]:",
        *(
            f" *   action[{i}] = {_label(s)}, {_bounds_text(prog.action_low[i], prog.action_high[i])}"
            for i, s in enumerate(controller.actions)
        ),
        " */",
        "",
        "#include <float.h>",
        "#include <math.h>",
        "",
        "/* No floating-point contraction (fused multiply-add). GCC ignores the STDC pragma. */",
        "#if defined(__GNUC__) && !defined(__clang__)",
        '#pragma GCC optimize("fp-contract=off")',
        "#else",
        "#pragma STDC FP_CONTRACT OFF",
        "#endif",
        "",
        "#ifndef INTERP_RL_ALLOW_INEXACT",
        "#ifdef __FAST_MATH__",
        '#error "-ffast-math changes the arithmetic; compile without it (or define INTERP_RL_ALLOW_INEXACT)"',
        "#endif",
        "#if DBL_MANT_DIG != 53 \\",
        "    || (defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0 && FLT_EVAL_METHOD != 1)",
        '#error "double is not IEEE binary64 evaluated without excess precision (e.g. x87); results would '
        'differ (define INTERP_RL_ALLOW_INEXACT to accept that)"',
        "#endif",
        "#endif",
        "",
        f"#define OBS_DIM {obs_dim}",
        f"#define ACT_DIM {act_dim}",
        "",
        "int interp_rl_obs_dim(void);",
        "int interp_rl_act_dim(void);",
        "void act(const double *obs, double *action);",
        "",
        "int interp_rl_obs_dim(void) { return OBS_DIM; }",
        "int interp_rl_act_dim(void) { return ACT_DIM; }",
        "",
        "void act(const double *obs, double *action)",
        "{",
    ]
    if act_dim:
        lines += [f"    double {', '.join(f'y{i}' for i in range(act_dim))};", ""]
    lines.append("    (void)obs;")
    if act_dim == 0:
        lines.append("    (void)action;")
    lines += ["    " + line if line else "" for line in prog.c_body(controller)]
    if act_dim:
        lines.append("    /* clip: y = min(max(y, low), high) */")
    for i in range(act_dim):
        low, high = prog.action_low[i], prog.action_high[i]
        # Python's max(y, low) is low only when low > y, min(y, high) is high only when high < y;
        # the same comparisons keep NaN and signed zeros exactly as in the Python export.
        if not math.isinf(low):
            lines.append(f"    if (y{i} < {lit(low)}) y{i} = {lit(low)};")
        if not math.isinf(high):
            lines.append(f"    if (y{i} > {lit(high)}) y{i} = {lit(high)};")
    lines += [f"    action[{i}] = y{i};" for i in range(act_dim)]
    lines += ["}", *_c_play(controller)]
    lines += [
        "",
        "#ifdef INTERP_RL_MAIN",
        "#include <stdio.h>",
        "",
        "int main(void)",
        "{",
        "    double obs[OBS_DIM > 0 ? OBS_DIM : 1], action[ACT_DIM > 0 ? ACT_DIM : 1];",
        "    int i, r;",
        "",
        "    for (;;) {",
        "        for (i = 0; i < OBS_DIM; ++i) {",
        '            r = scanf("%lf", &obs[i]);',
        "            if (r != 1) {",
        "                if (r == EOF && i == 0)",
        "                    return 0;",
        '                fprintf(stderr, "controller: expected %d numbers per observation\\n", OBS_DIM);',
        "                return 1;",
        "            }",
        "        }",
        "        act(obs, action);",
        "        for (i = 0; i < ACT_DIM; ++i)",
        '            printf(i ? " %.17g" : "%.17g", action[i]);',
        '        printf("\\n");',
        "        if (OBS_DIM == 0)",
        "            return 0;",
        "    }",
        "}",
        "#endif",
    ]
    return "\n".join(lines) + "\n"


def _c_play(controller: Controller) -> list[str]:
    """``CLASSES`` and ``double play(const double *obs)``, for a controller of class scores with numeric classes."""
    values = controller.class_values
    if values is None or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return []
    return [
        "",
        f"/* The class each action's score stands for: the controller plays {comment(_class_action(controller))} =",
        " * CLASSES[i] of the highest score (the first of equal ones). */",
        f"static const double CLASSES[ACT_DIM] = {{{', '.join(lit(float(v)) for v in values)}}};",
        "",
        "double play(const double *obs);",
        "",
        "double play(const double *obs)",
        "{",
        "    double y[ACT_DIM];",
        "    int i, best = 0;",
        "",
        "    act(obs, y);",
        "    for (i = 1; i < ACT_DIM; ++i)",
        "        if (y[i] > y[best])",
        "            best = i;",
        "    return CLASSES[best];",
        "}",
    ]


# ------------------------------------------------------------------------------ ONNX
_PRODUCER = "interp-rl"


def _signal_list(signals: Sequence[Signal], low: Any = None, high: Any = None) -> str:
    items = []
    for i, s in enumerate(signals):
        item: dict[str, Any] = s.to_dict()
        if low is not None:
            item |= {"low": float_out(low[i]), "high": float_out(high[i])}
        items.append(item)
    return json.dumps(items, ensure_ascii=False)


def to_onnx(controller: Controller) -> onnx.ModelProto:
    """An ONNX model computing ``controller.predict`` in float64, for runtimes that take ONNX.

    The model has one input, ``obs`` (float64, ``(N, obs_dim)``, raw observations, one row per state,
    ``N`` free) and one output, ``action`` (float64, ``(N, act_dim)``). The graph is the program kind's
    arithmetic operation for operation (its ``onnx_graph``), then ``min(max(y, low), high)``; it uses
    ONNX opset 13 (:data:`interp_rl._onnx.OPSET`). Trees, linear policies and mixtures give the same
    doubles as ``predict``; equations too up to ``sin``, ``cos``, ``tanh`` and ``exp``, which are the
    runtime's rather than the C library's and may differ in the last bits. Unlike ``predict``, the model
    does not check that observations are finite: check them before calling it.

    The model's metadata (``metadata_props``) names the task, the program kind, the controller format
    and its version, and holds the features and actions with their units (and the actions' bounds) as
    JSON; the input's and output's doc strings list them too.

    Parameters
    ----------
    controller : Controller
        A controller whose program kind has an ONNX form (every shipped kind).

    Returns
    -------
    onnx.ModelProto
        The model, checked with ``onnx.checker``; ``model.SerializeToString()`` is the file.

    Raises
    ------
    ExportError
        If the action bounds hold NaN or the program kind has no ONNX form.

    Examples
    --------
    >>> from interp_rl.kinds.linear import LinearProgram
    >>> from interp_rl.program import Controller, Signal
    >>> ctrl = Controller(LinearProgram(intercept=[0.5], coef=[[0.0, 2.0]], action_low=[-1.0], action_high=[1.0]),
    ...                   features=[Signal("angle", "rad"), Signal("speed", "m/s")], actions=[Signal("torque", "N m")])
    >>> model = to_onnx(ctrl)
    >>> [node.op_type for node in model.graph.node]
    ['Gather', 'Mul', 'Add', 'Max', 'Min', 'Identity']
    >>> act = load_onnx_controller(model)
    >>> act([[0.0, 0.1], [0.0, 3.0]]).tolist(), ctrl.predict([[0.0, 0.1], [0.0, 3.0]]).tolist()
    ([[0.7], [1.0]], [[0.7], [1.0]])
    """
    import onnx
    from onnx import TensorProto, helper

    from interp_rl import __version__
    from interp_rl._onnx import IR_VERSION, OPSET, OnnxGraph

    prog = _check_exportable(controller)
    if getattr(type(prog), "onnx_graph", ProgramBase.onnx_graph) is ProgramBase.onnx_graph:
        raise ExportError(f"A {prog.kind} program has no ONNX form; export it as Python, C or JSON instead.")
    obs_dim, act_dim = prog.obs_dim, prog.act_dim
    graph = OnnxGraph(obs_dim, input_name="obs")
    y = graph.clip(prog.onnx_graph(graph), prog.action_low, prog.action_high)  # type: ignore[attr-defined]
    graph.op("Identity", y, out="action")
    features = "; ".join(f"column {i} = {s.label}" for i, s in enumerate(controller.features))
    actions = "; ".join(f"column {i} = {s.label}, {_bounds_text(prog.action_low[i], prog.action_high[i])}"
                        for i, s in enumerate(controller.actions))
    inputs = [helper.make_tensor_value_info(
        "obs", TensorProto.DOUBLE, ["N", obs_dim],
        f"Raw observations, one row per state (float64, finite; not checked). {features}".rstrip(". ") + ".")]
    outputs = [helper.make_tensor_value_info(
        "action", TensorProto.DOUBLE, ["N", act_dim],
        f"Actions, one row per state (float64). {actions}".rstrip(". ") + ".")]
    task = controller.task or "(none)"
    doc = (f"Standalone controller exported by interp-rl: action = act(obs) for task {task}, program kind "
           f"{prog.kind} ({FORMAT} version {FORMAT_VERSION}). The graph follows the kind's arithmetic operation "
           "for operation in float64, then clips to the action bounds as min(max(y, low), high).")
    onnx_graph = helper.make_graph(graph.nodes, f"interp_rl_{prog.kind}", inputs, outputs,
                                   initializer=graph.initializers, doc_string=doc)
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name=_PRODUCER, producer_version=__version__, doc_string=doc)
    helper.set_model_props(model, {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "task": controller.task,
        "kind": prog.kind,
        "obs_dim": str(obs_dim),
        "act_dim": str(act_dim),
        "features": _signal_list(controller.features),
        "actions": _signal_list(controller.actions, prog.action_low, prog.action_high),
    })
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as exc:  # pragma: no cover - a bug in a kind's onnx_graph
        raise ExportError(f"The ONNX model of the {prog.kind} controller is invalid: {exc}") from None
    return model


def load_onnx_controller(model: str | os.PathLike[str] | onnx.ModelProto) -> Callable[[Any], np.ndarray]:
    """Load an ONNX model written by :func:`to_onnx` into onnxruntime and return ``act(obs) -> actions``.

    Parameters
    ----------
    model : path or onnx.ModelProto
        The model, a ``controller.onnx`` file, or the folder holding it.

    Returns
    -------
    callable
        ``act(obs)``: float64 actions ``(n, act_dim)`` for observations ``(n, obs_dim)``, or ``(act_dim,)``
        for one observation ``(obs_dim,)``.

    Raises
    ------
    ExportError
        If the file is missing or onnxruntime cannot load it.
    """
    import onnxruntime as ort

    if isinstance(model, (str, os.PathLike)):
        p = Path(model)
        if p.is_dir():
            p = p / EXPORT_FILES["onnx"]
        if not p.is_file():
            raise ExportError(f"ONNX controller {str(p)!r} does not exist.")
        data = p.read_bytes()
        source = repr(str(p))
    else:
        data, source = model.SerializeToString(), "the ONNX model"
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only
    try:
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ExportError(f"onnxruntime cannot load {source}: {exc}") from None

    def act(obs: Any) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float64)
        single = x.ndim == 1
        out = session.run(["action"], {"obs": x[None, :] if single else x})[0]
        return out[0] if single else out

    act._session = session  # type: ignore[attr-defined]
    return act


# ------------------------------------------------------------------------------ files
#: Export formats and the file each is written to.
EXPORT_FILES = {"json": "controller.json", "python": "controller.py", "c": "controller.c", "onnx": "controller.onnx"}
_MARKERS = {"json": f'"format": "{FORMAT}"', "python": '"""Standalone controller exported by interp-rl',
            "c": "/* Standalone controller exported by interp-rl"}


def _written_by_us(path: Path, fmt: str) -> bool:
    """Whether ``path`` is an interp-rl export (so overwriting it loses nothing of the user's)."""
    if fmt == "onnx":
        import onnx

        try:
            model = onnx.load(str(path), load_external_data=False)
        except Exception:  # not a readable ONNX file: protobuf's and onnx's errors vary
            return False
        props = {p.key: p.value for p in model.metadata_props}
        return model.producer_name == _PRODUCER and props.get("format") == FORMAT
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return _MARKERS[fmt] in head


def write_exports(
    controller: Controller,
    out_dir: str | os.PathLike[str],
    formats: Sequence[str] = ("json", "python", "c"),
    *,
    force: bool = False,
) -> dict[str, Path]:
    """Write ``controller.json``, ``controller.py`` and ``controller.c`` (or the ``formats`` asked for, ``onnx``
    among them) into ``out_dir``, atomically.

    Every source is generated and every target checked before anything is written, so an error
    leaves ``out_dir`` as it was. An existing file is replaced only if interp-rl wrote it (an
    earlier export), unless ``force``.

    Parameters
    ----------
    controller : Controller
        The controller to export.
    out_dir : path
        Folder to write into (created if missing; an existing file is an error).
    formats : sequence of {"json", "python", "c", "onnx"}
        Which exports to write (``onnx``: ``controller.onnx``, see :func:`to_onnx`).
    force : bool, default False
        Overwrite files that interp-rl did not write.

    Returns
    -------
    dict of str to Path
        ``{"json": ..., "python": ..., "c": ...}`` for the formats written.

    Raises
    ------
    ExportError
        If a target exists and interp-rl did not write it (without ``force``), or a format cannot hold the
        controller (a kind with no ONNX form, a tree too deep for Python).

    Examples
    --------
    >>> import tempfile
    >>> from interp_rl.kinds.tree import TreeProgram
    >>> from interp_rl.program import Controller, load_controller
    >>> prog = TreeProgram.from_leaves(feature=[-1], threshold=[0.0], left=[-1], right=[-1],
    ...                                intercept=[[0.5]], obs_dim=1)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = write_exports(Controller(prog), tmp)
    ...     sorted(p.name for p in paths.values()), load_controller(paths["json"]).predict([0.0])
    (['controller.c', 'controller.json', 'controller.py'], array([0.5]))
    """
    from interp_rl.errors import bad_value

    for f in formats:
        if f not in EXPORT_FILES:
            raise bad_value("format", "export", "one of " + ", ".join(map(repr, EXPORT_FILES)), f)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ExportError(f"{str(out)!r} is a file; give a folder to export into.")
    text: dict[str, Callable[[], str | bytes]] = {
        "json": lambda: json.dumps(controller.to_dict(), indent=1) + "\n",
        "python": lambda: to_python(controller), "c": lambda: to_c(controller),
        "onnx": lambda: to_onnx(controller).SerializeToString()}
    sources = {f: text[f]() for f in formats}
    for f in sources:
        target = out / EXPORT_FILES[f]
        if target.exists() and not force and not _written_by_us(target, f):
            raise ExportError(f"{str(target)!r} exists and was not written by interp-rl; choose another folder "
                              "or pass --force (force=True) to overwrite it.")
    out.mkdir(parents=True, exist_ok=True)
    return {f: atomic_write_bytes(out / EXPORT_FILES[f], src) if isinstance(src, bytes)
            else atomic_write_text(out / EXPORT_FILES[f], src) for f, src in sources.items()}


def load_python_controller(path: str | os.PathLike[str]) -> Callable[[list[float]], list[float]]:
    """Import a ``controller.py`` written by :func:`to_python` and return its ``act``.

    Parameters
    ----------
    path : path
        The ``.py`` file, or the folder holding ``controller.py``.

    Returns
    -------
    callable
        ``act(obs) -> list[float]`` for one observation.

    Raises
    ------
    ExportError
        If the file is missing, does not import, or defines no ``act``.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "controller.py"
    if not p.is_file():
        raise ExportError(f"Python controller {str(p)!r} does not exist.")
    spec = importlib.util.spec_from_file_location(f"_interp_rl_exported_{next(_module_counter)}", p)
    if spec is None or spec.loader is None:  # pragma: no cover - only for odd suffixes
        raise ExportError(f"Cannot import {str(p)!r} as a Python module.")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ExportError(f"Importing {str(p)!r} failed: {type(exc).__name__}: {exc}") from exc
    act = getattr(module, "act", None)
    if not callable(act):
        raise ExportError(f"{str(p)!r} defines no act() function; is it an interp-rl export?")
    return cast(Callable[[list[float]], list[float]], act)


# ------------------------------------------------------------------------------ compiling C
def find_compiler() -> list[str]:
    """The compiler command: ``$CC`` (split like a shell would) or the first of gcc, cc, clang."""
    env = os.environ.get("CC", "").strip()
    if env:
        cmd = shlex.split(env)
        if shutil.which(cmd[0]) is None:
            raise ExportError(f"The C compiler {env!r} named by $CC was not found on PATH.")
        return cmd
    for name in ("gcc", "cc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    raise ExportError("No C compiler found (tried $CC, gcc, cc, clang); install gcc to compile controller.c.")


def compile_c(
    c_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    shared: bool = True,
    extra_flags: Sequence[str] = (),
) -> Path:
    """Compile a ``controller.c`` written by :func:`to_c` with the system C compiler.

    The compiler is ``$CC`` if set, else the first of ``gcc``, ``cc``, ``clang`` on ``PATH``;
    flags are :data:`C_FLAGS` (``-O2 -std=c99 -ffp-contract=off``). The result is written under a
    temporary name and renamed into place, so a loaded library is never overwritten in place.

    Parameters
    ----------
    c_path : path
        The C source.
    out_dir : path
        Folder for the output (created if missing).
    shared : bool, default True
        Build the shared library ``libcontroller.so`` (``-fPIC -shared``; load it with
        :func:`load_c_controller`). If False, build the program ``controller`` with
        ``-DINTERP_RL_MAIN`` (observations on stdin, actions on stdout).
    extra_flags : sequence of str, default ()
        More compiler flags (for example ``["-Wall", "-Werror"]``).

    Returns
    -------
    Path
        The library or program.

    Raises
    ------
    ExportError
        If no compiler is found or compiling fails; the message names the compiler command and
        holds its error output.
    """
    src = Path(c_path)
    if not src.is_file():
        raise ExportError(f"C source {str(src)!r} does not exist.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / ("libcontroller.so" if shared else "controller")
    tmp = out / f".{target.name}.{os.getpid()}.tmp"
    cc = find_compiler()
    mode = ["-fPIC", "-shared"] if shared else ["-DINTERP_RL_MAIN"]
    cmd = [*cc, *C_FLAGS, *mode, *extra_flags, "-o", str(tmp), str(src), "-lm"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportError(f"Running the C compiler {shlex.join(cmd)} failed: {exc}") from None
    if proc.returncode != 0:
        if tmp.exists():
            tmp.unlink()
        errors = (proc.stderr or proc.stdout).strip()[-4000:]
        raise ExportError(
            f"The C compiler {cc[0]!r} failed (exit status {proc.returncode}) on {str(src)!r}.\n"
            f"Command: {shlex.join(cmd)}\n{errors}"
        )
    os.replace(tmp, target)
    return target


def load_c_controller(so_path: str | os.PathLike[str]) -> Callable[[Sequence[float]], list[float]]:
    """Load a library built by :func:`compile_c` and return ``act(obs) -> list[float]``.

    The returned function checks ``obs`` like the Python export (``ValueError`` on a wrong length
    or a non-finite value), then calls the C ``act`` through ctypes.

    Parameters
    ----------
    so_path : path
        The shared library (or the folder holding ``libcontroller.so``).

    Returns
    -------
    callable
        ``act(obs: Sequence[float]) -> list[float]`` for one observation.

    Raises
    ------
    ExportError
        If the library is missing, does not load, or lacks the interp-rl entry points.
    """
    p = Path(so_path)
    if p.is_dir():
        p = p / "libcontroller.so"
    if not p.is_file():
        raise ExportError(f"C controller library {str(p)!r} does not exist.")
    try:
        lib = ctypes.CDLL(str(p.resolve()))
        c_act = lib.act
        obs_dim = int(lib.interp_rl_obs_dim())
        act_dim = int(lib.interp_rl_act_dim())
    except (OSError, AttributeError) as exc:
        raise ExportError(f"{str(p)!r} is not a loadable interp-rl C controller: {exc}") from None
    c_act.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
    c_act.restype = None
    obs_type = ctypes.c_double * max(obs_dim, 1)
    act_type = ctypes.c_double * max(act_dim, 1)

    def act(obs: Sequence[float]) -> list[float]:
        x = [float(v) for v in obs]
        if len(x) != obs_dim:
            raise ValueError(f"act() expects {obs_dim} observation values (OBS_DIM); got {len(x)}.")
        if not all(map(math.isfinite, x)):
            bad = next(i for i, v in enumerate(x) if not math.isfinite(v))
            raise ValueError(f"obs[{bad}] is {x[bad]}; observations must be finite.")
        out = act_type()
        c_act(obs_type(*x), out)
        return out[:act_dim]

    act._lib = lib  # type: ignore[attr-defined]  # keep the library loaded with the function
    return act


# ------------------------------------------------------------------------------ latency
def measure_latency(
    fn: Callable[[Any], Any], obs: Any, repeats: int = 200, *, warmup: int = 50, min_sample_s: float = 2e-5
) -> dict[str, float | int]:
    """Time single-observation calls ``fn(obs)``: median and 90th percentile seconds per call.

    After ``warmup`` untimed calls, each of ``repeats`` samples times a batch of back-to-back
    calls with :func:`time.perf_counter_ns` (the batch is sized once so a sample lasts at least
    ``min_sample_s``, which keeps timer resolution out of fast calls) and divides by its size.

    Parameters
    ----------
    fn : callable
        Called as ``fn(obs)``.
    obs : object
        One observation, in whatever form ``fn`` takes.
    repeats : int, default 200
        Number of timed samples.
    warmup : int, default 50
        Untimed calls first.
    min_sample_s : float, default 2e-5
        Shortest batch duration.

    Returns
    -------
    dict
        ``{"median_s": float, "p90_s": float, "calls": int}``; ``calls`` counts the timed calls.

    Examples
    --------
    >>> stats = measure_latency(lambda x: x, [0.0], repeats=5, warmup=1)
    >>> sorted(stats), stats["calls"] >= 5, 0 < stats["median_s"] <= stats["p90_s"]
    (['calls', 'median_s', 'p90_s'], True, True)
    """
    repeats = check_int(repeats, "repeats", "measure_latency")
    warmup = check_int(warmup, "warmup", "measure_latency", low=0)
    for _ in range(warmup):
        fn(obs)
    batch = 1
    while True:  # size the batch: double until one batch takes min_sample_s
        start = time.perf_counter_ns()
        for _ in range(batch):
            fn(obs)
        if time.perf_counter_ns() - start >= min_sample_s * 1e9 or batch >= 1 << 20:
            break
        batch *= 2
    samples = np.empty(repeats)
    for k in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(batch):
            fn(obs)
        samples[k] = max(time.perf_counter_ns() - start, 1) / batch / 1e9
    return {
        "median_s": float(np.median(samples)),
        "p90_s": float(np.percentile(samples, 90)),
        "calls": repeats * batch,
    }
