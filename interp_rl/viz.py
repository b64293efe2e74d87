"""Explanations of a controller as values: rules as text, the tree as Graphviz DOT.

Every explanation is a function returning a string (or an array), so it can be
printed, diffed, saved or tested without any program installed. :func:`render`
is the thin wrapper that turns DOT text into an SVG, PNG or PDF file with the
Graphviz ``dot`` program.

Numbers are rounded for reading only: ``precision`` decimals (a non-zero value
that would round to zero keeps ``precision`` significant digits instead). The
saved controller keeps the exact values.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl._validation import check_int, check_observations
from interp_rl.errors import InterpRLError, InvalidParameterError, ObservationError
from interp_rl.io import atomic_write_bytes
from interp_rl.program import Controller, TreeProgram

__all__ = [
    "RENDER_FORMATS",
    "RenderError",
    "decision_path_text",
    "export_text",
    "leaf_visit_counts",
    "render",
    "to_dot",
]

#: Image formats :func:`render` writes, chosen by the file suffix.
RENDER_FORMATS = ("svg", "png", "pdf")

_HIGHLIGHT = '"#d62728"'
_LEAF_FILL = "#f2f2f2"
_LIGHT = (247, 251, 255)  # fill of an unvisited leaf
_DARK = (8, 81, 156)  # fill of the most visited leaf


class RenderError(InterpRLError):
    """DOT text could not be turned into an image (no ``dot`` program, unknown format, bad DOT)."""


# ----------------------------------------------------------------------------- numbers
def _fixed(v: float, precision: int) -> str:
    """``v`` with ``precision`` decimals; never ``-0``; tiny non-zero values keep significant digits."""
    s = f"{v:.{precision}f}"
    if float(s) == 0.0:
        return f"{v:.{max(precision, 1)}g}" if v != 0.0 else s.lstrip("-")
    return s


def _compact(v: float, precision: int) -> str:
    """Like :func:`_fixed` without trailing zeros: ``0.21`` rather than ``0.210``."""
    s = _fixed(v, precision)
    if "." in s and "e" not in s:
        s = s.rstrip("0").rstrip(".")
    return s


def _apart(a: float, b: float, precision: int) -> tuple[str, str]:
    """Compact ``a`` and ``b`` with just enough extra digits that unequal values read as unequal."""
    p = precision
    while True:
        sa, sb = _compact(a, p), _compact(b, p)
        if sa != sb or a == b or p >= 17:
            return sa, sb
        p += 1


def _count(n: float) -> str:
    """A (weighted) count: ``1234``, or ``12.5`` when it is not whole."""
    return str(int(n)) if float(n).is_integer() else _compact(n, 2)


# ---------------------------------------------------------------------------- pieces
def _check_precision(precision: Any, owner: str) -> int:
    return check_int(precision, "precision", owner, low=0, high=17)


def _check_max_depth(max_depth: Any, owner: str) -> int | None:
    return None if max_depth is None else check_int(max_depth, "max_depth", owner, low=0)


def _expr(
    prog: TreeProgram,
    node: int,
    out: int,
    names: Sequence[str],
    fmt: Callable[[float], str],
    max_terms: int | None = None,
) -> str:
    """A leaf's output as ``intercept + c*name - c*name``; the intercept is left out when 0."""
    terms = prog.leaf_terms(node, out)
    hidden = 0
    if max_terms is not None and len(terms) > max_terms:
        # Keep the largest coefficients (ties: lower feature index), shown in feature order.
        keep = sorted(sorted(range(len(terms)), key=lambda i: -abs(terms[i][1]))[:max_terms])
        hidden = len(terms) - max_terms
        terms = [terms[i] for i in keep]
    c0 = float(prog.intercept[node, out])
    parts = [fmt(c0)] if c0 != 0.0 or not terms else []
    for j, c in terms:
        term = f"{fmt(abs(c))}*{names[j]}"
        if parts:
            parts.append(("- " if c < 0 else "+ ") + term)
        else:
            parts.append(("-" if c < 0 else "") + term)
    if hidden:
        parts.append(f"+ … ({hidden} more terms)")
    return " ".join(parts)


def _clip_note(controller: Controller, fmt: Callable[[float], str]) -> str | None:
    """``actions are clipped to a in [lo, hi], ...`` for the actions with a finite bound."""
    prog = controller.program
    parts = []
    for out, action in enumerate(controller.actions):
        lo, hi = float(prog.action_low[out]), float(prog.action_high[out])
        if np.isfinite(lo) or np.isfinite(hi):
            parts.append(f"{action.label} in [{fmt(lo)}, {fmt(hi)}]")
    return "actions are clipped to " + ", ".join(parts) if parts else None


def _leaves_below(prog: TreeProgram, per_leaf: np.ndarray) -> np.ndarray:
    """Sum of ``per_leaf`` over the leaves under each node (the node itself if a leaf)."""
    total = np.where(prog.is_leaf, per_leaf, 0.0).astype(np.float64)
    for node in reversed(prog._preorder()):
        if not prog.is_leaf[node]:
            total[node] = total[prog.left[node]] + total[prog.right[node]]
    return total


# ------------------------------------------------------------------------------- text
def export_text(controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
    """The controller's rules as indented text in named features, actions and units.

    Like :func:`sklearn.tree.export_text`, with names: each split prints its two
    conditions (left is ``<=``), each leaf its actions (``intercept + c*feature``
    for linear leaves) and its weighted training-sample count. A last line lists
    the action bounds the outputs are clipped to, if any.

    Parameters
    ----------
    controller : Controller
        The controller to describe.
    precision : int, default 3
        Decimals of thresholds and coefficients.
    max_depth : int, optional
        Show only splits above this depth; a deeper subtree prints as
        ``... (k leaves below)``. ``None`` shows the whole tree.

    Returns
    -------
    str
        The rules, one line each, with no trailing newline.

    Examples
    --------
    >>> from interp_rl.program import Controller, Signal, TreeProgram
    >>> prog = TreeProgram.from_leaves(
    ...     feature=[0, -1, -1], threshold=[0.2, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
    ...     intercept=[[0.0], [-0.5], [0.1]], coef={2: {(0, 1): -0.3}}, obs_dim=2, n_samples=[30, 20, 10])
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad"), Signal("vx", "m/s")],
    ...                   actions=[Signal("torque")])
    >>> print(export_text(ctrl))
    |--- angle [rad] <= 0.200
    |   |--- torque = -0.500   (n=20)
    |--- angle [rad] >  0.200
    |   |--- torque = 0.100 - 0.300*vx   (n=10)
    >>> print(export_text(ctrl, max_depth=0))
    |--- ... (2 leaves below)
    """
    precision = _check_precision(precision, "export_text")
    max_depth = _check_max_depth(max_depth, "export_text")
    prog = controller.program
    fmt = partial(_fixed, precision=precision)
    names = controller.feature_names
    n_below = _leaves_below(prog, np.ones(prog.n_nodes))
    depth = prog.node_depths()

    lines: list[str] = []
    stack: list[str | tuple[int, int]] = [(0, 0)]  # a line to print, or (node, indent)
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            lines.append(item)
            continue
        node, indent = item
        bar = "|   " * indent + "|--- "
        if prog.is_leaf[node]:
            text = ", ".join(
                f"{a.label} = {_expr(prog, node, o, names, fmt)}" for o, a in enumerate(controller.actions)
            )
            n = float(prog.n_samples[node])
            lines.append(bar + text + (f"   (n={_count(n)})" if n else ""))
        elif max_depth is not None and depth[node] >= max_depth:
            lines.append(bar + f"... ({int(n_below[node])} leaves below)")
        else:
            label = controller.features[prog.feature[node]].label
            thr = fmt(float(prog.threshold[node]))
            stack += [
                (int(prog.right[node]), indent + 1),
                f"{bar}{label} >  {thr}",
                (int(prog.left[node]), indent + 1),
                f"{bar}{label} <= {thr}",
            ]
    note = _clip_note(controller, fmt)
    if note:
        lines.append(note)
    return "\n".join(lines)


def leaf_visit_counts(controller: Controller, observations: Any) -> np.ndarray:
    """How many of ``observations`` reach each node's leaf.

    Parameters
    ----------
    controller : Controller
        The controller whose tree routes the observations.
    observations : array-like of shape (n, obs_dim) or (obs_dim,)
        Raw observations.

    Returns
    -------
    ndarray of int64, shape (n_nodes,)
        Count per node id; zero at internal nodes. Pass it to :func:`to_dot`
        as ``leaf_visits``.

    Examples
    --------
    >>> from interp_rl.program import Controller, TreeProgram
    >>> prog = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[0.2, 0, 0], left=[1, -1, -1],
    ...                                right=[2, -1, -1], intercept=[[0.0], [-0.5], [0.1]], obs_dim=2)
    >>> leaf_visit_counts(Controller(prog), [[0.0, 1.0], [0.1, 1.0], [0.9, 1.0]])
    array([0, 2, 1])
    """
    prog = controller.program
    arr, _ = check_observations(
        observations, prog.obs_dim, owner="leaf_visit_counts", task=controller.task or None,
        feature_names=controller.feature_names,
    )
    return np.bincount(prog.apply(arr), minlength=prog.n_nodes).astype(np.int64)


def decision_path_text(controller: Controller, obs: Any, *, precision: int = 3) -> str:
    """The rules one observation follows, with its values, and the actions it gets.

    One line per split passed (``name = value unit <= threshold`` or ``>``),
    then the leaf reached, then one line per action: the leaf's formula, its
    value for ``obs`` when the leaf is linear, and the clipped value when the
    action bounds change it. A value that rounds like its threshold is shown
    with more digits, so the comparison always reads true.

    Parameters
    ----------
    controller : Controller
        The controller to trace.
    obs : array-like of shape (obs_dim,) or (1, obs_dim)
        One raw observation.
    precision : int, default 3
        Decimals shown (trailing zeros dropped).

    Returns
    -------
    str
        The trace, one line each, with no trailing newline.

    Examples
    --------
    >>> from interp_rl.program import Controller, Signal, TreeProgram
    >>> prog = TreeProgram.from_leaves(
    ...     feature=[0, -1, -1], threshold=[0.2, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
    ...     intercept=[[0.0], [-0.5], [0.1]], coef={2: {(0, 1): -0.3}}, obs_dim=2, n_samples=[30, 20, 10])
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad"), Signal("vx", "m/s")],
    ...                   actions=[Signal("torque")])
    >>> print(decision_path_text(ctrl, [0.25, 2.0]))
    angle = 0.25 rad > 0.2
    → leaf 2 (n=10)
      torque = 0.1 - 0.3*vx = -0.5
    """
    precision = _check_precision(precision, "decision_path_text")
    prog = controller.program
    arr, _ = check_observations(
        obs, prog.obs_dim, owner="decision_path_text", task=controller.task or None,
        feature_names=controller.feature_names,
    )
    if len(arr) != 1:
        raise ObservationError(f"decision_path_text explains one observation; got {len(arr)} rows.")
    x = arr[0]
    fmt = partial(_compact, precision=precision)
    path = prog.decision_path(x)

    lines = []
    for node, child in zip(path, path[1:], strict=False):
        feat = controller.features[prog.feature[node]]
        value, thr = _apart(float(x[prog.feature[node]]), float(prog.threshold[node]), precision)
        unit = f" {feat.unit}" if feat.unit else ""
        op = "<=" if child == prog.left[node] else ">"
        lines.append(f"{feat.name} = {value}{unit} {op} {thr}")
    leaf = path[-1]
    n = float(prog.n_samples[leaf])
    lines.append(f"→ leaf {leaf}" + (f" (n={_count(n)})" if n else ""))

    raw = prog.leaf_actions(arr, np.array([leaf]))[0]
    clipped = np.minimum(np.maximum(raw, prog.action_low), prog.action_high)
    for out, action in enumerate(controller.actions):
        line = f"  {action.label} = {_expr(prog, leaf, out, controller.feature_names, fmt)}"
        shown_raw, shown_clipped = _apart(float(raw[out]), float(clipped[out]), precision)
        if prog.leaf_terms(leaf, out):
            line += f" = {shown_raw}"
        if clipped[out] != raw[out]:
            line += f" → clipped to {shown_clipped}"
        lines.append(line)
    return "\n".join(lines)


# -------------------------------------------------------------------------------- DOT
def _esc(text: str) -> str:
    """``text`` inside a double-quoted DOT string: ``\\`` and ``"`` escaped, newlines as spaces.

    ``<`` and ``>`` need no escape inside quotes (only HTML labels ``<...>`` do);
    Graphviz writes them as ``&lt;``/``&gt;`` in SVG itself.
    """
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def _label(lines: Sequence[str]) -> str:
    return '"' + "\\n".join(_esc(line) for line in lines) + '"'


def _attrs(attrs: Mapping[str, str]) -> str:
    return "[" + ", ".join(f"{k}={v}" for k, v in attrs.items()) + "]"


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


def _visits_array(prog: TreeProgram, leaf_visits: Any) -> np.ndarray:
    n = prog.n_nodes
    if isinstance(leaf_visits, Mapping):
        visits = np.zeros(n)
        for key, count in leaf_visits.items():
            if not isinstance(key, (int, np.integer)) or not 0 <= key < n:
                raise InvalidParameterError(
                    f"leaf_visits has key {key!r}, which is not a node id in [0, {n})."
                )
            visits[int(key)] += float(count)
    else:
        visits = np.asarray(leaf_visits, dtype=np.float64)
        if visits.shape != (n,):
            raise InvalidParameterError(
                f"leaf_visits must have one count per node, shape ({n},); got shape {visits.shape}."
            )
    if not np.all(np.isfinite(visits)) or np.any(visits < 0):
        raise InvalidParameterError("leaf_visits must hold finite counts >= 0.")
    internal = np.flatnonzero((visits != 0) & ~prog.is_leaf)
    if internal.size:
        raise InvalidParameterError(
            f"leaf_visits counts visits at internal node {int(internal[0])}; only leaves are visited "
            "(use leaf_visit_counts or np.bincount(program.apply(X), minlength=n_nodes))."
        )
    return visits


def _check_path(prog: TreeProgram, highlight_path: Sequence[int]) -> list[int]:
    path = [int(v) for v in highlight_path]
    for node in path:
        if not 0 <= node < prog.n_nodes:
            raise InvalidParameterError(
                f"highlight_path holds {node}, which is not a node id in [0, {prog.n_nodes})."
            )
    for parent, child in zip(path, path[1:], strict=False):
        if child not in (prog.left[parent], prog.right[parent]):
            raise InvalidParameterError(
                f"highlight_path must run from parent to child like program.decision_path(x); "
                f"node {child} is not a child of node {parent}."
            )
    return path


def to_dot(
    controller: Controller,
    *,
    max_depth: int | None = None,
    highlight_path: Sequence[int] | None = None,
    leaf_visits: Mapping[int, float] | Sequence[float] | np.ndarray | None = None,
    precision: int = 3,
    title: str | None = None,
    max_terms: int = 3,
) -> str:
    """The controller's tree as Graphviz DOT text.

    Splits are boxes ``feature <= threshold unit`` whose edges read ``yes``
    (condition true, left child) and ``no``. Leaves are rounded boxes with one
    line per action and the weighted training-sample count ``n``. Node ``i`` of
    the program is DOT node ``n{i}``. The text is deterministic; render it with
    :func:`render`.

    Parameters
    ----------
    controller : Controller
        The controller to draw.
    max_depth : int, optional
        Draw only splits above this depth; each deeper subtree becomes one
        dashed node ``… k leaves``. ``None`` draws the whole tree.
    highlight_path : sequence of int, optional
        Node ids from parent to child, e.g. ``program.decision_path(x)``; these
        nodes and the edges between them are drawn bold red.
    leaf_visits : mapping or array-like, optional
        Visits per leaf, ``{leaf_id: count}`` or an array of length ``n_nodes``
        (e.g. :func:`leaf_visit_counts`). Leaves show ``visits P% (count)`` with
        whole percentages that sum to 100, and are filled from light (never
        visited) to dark (most visited). A ``…`` node counts its whole subtree.
    precision : int, default 3
        Decimals shown (trailing zeros dropped).
    title : str, optional
        Caption at the top. The action bounds, if any, are always noted there.
    max_terms : int, default 3
        Most linear terms shown per action; the largest coefficients are kept
        and the rest summarised as ``+ … (k more terms)``.

    Returns
    -------
    str
        DOT source of a ``digraph``.

    Examples
    --------
    >>> from interp_rl.program import Controller, Signal, TreeProgram
    >>> prog = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[0.2, 0, 0], left=[1, -1, -1],
    ...                                right=[2, -1, -1], intercept=[[0.0], [-0.5], [0.1]], obs_dim=1)
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad")], actions=[Signal("torque")])
    >>> print(to_dot(ctrl, highlight_path=[0, 2]))
    digraph controller {
      node [shape=box, fontname="Helvetica", fontsize=11];
      edge [fontname="Helvetica", fontsize=10];
      n0 [label="angle <= 0.2 rad", color="#d62728", penwidth=2.5];
      n0 -> n1 [label="yes"];
      n1 [label="torque = -0.5", style="rounded,filled", fillcolor="#f2f2f2"];
      n0 -> n2 [label="no", color="#d62728", penwidth=2.5];
      n2 [label="torque = 0.1", style="rounded,filled", fillcolor="#f2f2f2", color="#d62728", penwidth=2.5];
    }
    """
    precision = _check_precision(precision, "to_dot")
    max_depth = _check_max_depth(max_depth, "to_dot")
    max_terms = check_int(max_terms, "max_terms", "to_dot", low=1)
    prog = controller.program
    fmt = partial(_compact, precision=precision)
    names = controller.feature_names
    depth = prog.node_depths()
    n_below = _leaves_below(prog, np.ones(prog.n_nodes))

    path = _check_path(prog, highlight_path) if highlight_path is not None else []
    on_path = set(path)
    path_edges = set(zip(path, path[1:], strict=False))

    def truncated(node: int) -> bool:
        return not prog.is_leaf[node] and max_depth is not None and bool(depth[node] >= max_depth)

    # The drawn nodes, in preorder: internal splits, leaves and "…" stand-ins.
    drawn: list[int] = []
    stack = [0]
    while stack:
        node = stack.pop()
        drawn.append(node)
        if not prog.is_leaf[node] and not truncated(node):
            stack += [int(prog.right[node]), int(prog.left[node])]
    boxes = [node for node in drawn if prog.is_leaf[node] or truncated(node)]

    extra: dict[int, list[str]] = {node: [] for node in boxes}
    fill: dict[int, tuple[str, str]] = {}
    if leaf_visits is not None:
        visits = _leaves_below(prog, _visits_array(prog, leaf_visits))
        box_visits = visits[boxes]
        pct = _percentages(box_visits)
        peak = float(box_visits.max(initial=0.0))
        for node, p, v in zip(boxes, pct, box_visits, strict=True):
            extra[node].append(f"visits {p}% ({_count(float(v))})")
            fill[node] = _shade(v / peak if peak > 0 else 0.0)

    out = ["digraph controller {"]
    caption = [title] if title else []
    note = _clip_note(controller, fmt)
    if note:
        caption.append(note)
    if caption:
        out.append(f'  graph [label={_label(caption)}, labelloc="t", fontname="Helvetica"];')
    out.append('  node [shape=box, fontname="Helvetica", fontsize=11];')
    out.append('  edge [fontname="Helvetica", fontsize=10];')

    parent = {int(c): p for p in range(prog.n_nodes) for c in (prog.left[p], prog.right[p]) if c >= 0}
    for node in drawn:
        if node != 0:
            up = parent[node]
            attrs = {"label": '"yes"' if node == prog.left[up] else '"no"'}
            if (up, node) in path_edges:
                attrs |= {"color": _HIGHLIGHT, "penwidth": "2.5"}
            out.append(f"  n{up} -> n{node} {_attrs(attrs)};")
        if prog.is_leaf[node]:
            lines = [
                f"{a.label} = {_expr(prog, node, o, names, fmt, max_terms)}"
                for o, a in enumerate(controller.actions)
            ]
            n = float(prog.n_samples[node])
            lines += [f"n = {_count(n)}"] if n else []
            style = '"rounded,filled"'
        elif truncated(node):
            lines = [f"… {int(n_below[node])} leaves"]
            style = '"dashed,filled"' if node in fill else '"dashed"'
        else:
            feat = controller.features[prog.feature[node]]
            unit = f" {feat.unit}" if feat.unit else ""
            lines = [f"{feat.name} <= {fmt(float(prog.threshold[node]))}{unit}"]
            style = ""
        attrs = {"label": _label(lines + extra.get(node, []))}
        if style:
            attrs["style"] = style
        if node in fill:
            attrs["fillcolor"], attrs["fontcolor"] = fill[node]
        elif prog.is_leaf[node]:
            attrs["fillcolor"] = f'"{_LEAF_FILL}"'
        if node in on_path:
            attrs |= {"color": _HIGHLIGHT, "penwidth": "2.5"}
        out.append(f"  n{node} {_attrs(attrs)};")
    out.append("}")
    return "\n".join(out)


# ----------------------------------------------------------------------------- render
def _render_format(path: Path, format: str | None) -> str:
    if format is not None:
        fmt = str(format).lower().lstrip(".")
        if fmt not in RENDER_FORMATS:
            raise RenderError(f"Unknown render format {format!r}; use one of {', '.join(RENDER_FORMATS)}.")
        return fmt
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in RENDER_FORMATS:
        accepted = ", ".join("." + f for f in RENDER_FORMATS)
        raise RenderError(
            f"Cannot render to {str(path)!r}: unknown suffix {path.suffix!r}; use one of {accepted}."
        )
    return fmt


def render(dot: str, path: str | os.PathLike[str], *, format: str | None = None) -> Path:
    """Draw DOT text (e.g. from :func:`to_dot`) to an image file with Graphviz, atomically.

    Parameters
    ----------
    dot : str
        DOT source.
    path : str or path-like
        Output file; its suffix (``.svg``, ``.png`` or ``.pdf``) picks the format.
    format : {"svg", "png", "pdf"}, optional
        Overrides the format the suffix implies.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    RenderError
        The suffix or format is not one of :data:`RENDER_FORMATS`, the Graphviz
        ``dot`` program is not installed, or Graphviz rejects the DOT text.

    Examples
    --------
    >>> render("digraph { a -> b }", "g.jpg")
    Traceback (most recent call last):
    ...
    interp_rl.viz.RenderError: Cannot render to 'g.jpg': unknown suffix '.jpg'; use one of .svg, .png, .pdf.
    """
    if not isinstance(dot, str):
        raise RenderError(f"render takes DOT source text (a str); got {type(dot).__name__}.")
    target = Path(path)
    fmt = _render_format(target, format)
    try:
        import graphviz
    except ImportError:
        raise RenderError(
            "Rendering needs the 'graphviz' Python package; install it with `pip install graphviz`."
        ) from None
    try:
        data = graphviz.Source(dot).pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise RenderError(
            "Rendering needs the Graphviz 'dot' program, which is not on PATH; install Graphviz "
            "(e.g. `apt-get install graphviz` or `brew install graphviz`) or save the DOT text instead."
        ) from None
    except graphviz.CalledProcessError as exc:
        err = exc.stderr
        stderr = err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err or "")
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        detail = lines[0] if lines else f"exit status {exc.returncode}"
        raise RenderError(f"Graphviz could not render the DOT text: {detail}") from None
    return atomic_write_bytes(target, data)
