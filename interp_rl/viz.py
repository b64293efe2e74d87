"""Explanations of any controller as values: text, the trace of one decision, Graphviz DOT.

Every explanation is a function returning a string, so it can be printed, diffed, saved or
tested without any program installed. Each program kind writes its own (see
:mod:`interp_rl.kinds`); these functions check their arguments and dispatch by kind.
:func:`render` is the thin wrapper that turns DOT text into an SVG, PNG or PDF file with the
Graphviz ``dot`` program.

Numbers are rounded for reading only: ``precision`` decimals (a non-zero value that would
round to zero keeps ``precision`` significant digits instead). The saved controller keeps the
exact values.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.dot import (  # noqa: F401 - the DOT helpers, long imported from here
    _esc,
    dot_action_nodes,
    dot_attrs,
    dot_coefficient_edge,
    dot_header,
    dot_label,
    unit_note,
)
from interp_rl.errors import InvalidParameterError, ObservationError, RenderError
from interp_rl.io import atomic_write_bytes
from interp_rl.kinds.tree import leaf_visit_counts
from interp_rl.program import Controller
from interp_rl.validation import check_int

__all__ = [
    "DOT_SUFFIX",
    "RENDER_FORMATS",
    "decision_path_text",
    "dot_attrs",
    "dot_label",
    "export_text",
    "leaf_visit_counts",
    "render",
    "to_dot",
    "usage_figure",
]

#: Image formats :func:`render` writes, chosen by the file suffix.
RENDER_FORMATS = ("svg", "png", "pdf")
#: Suffix of DOT source files, which :func:`render` writes as they are (no Graphviz needed).
DOT_SUFFIX = "dot"


def _check_precision(precision: Any, owner: str) -> int:
    return check_int(precision, "precision", owner, low=0, high=17)


def _check_max_depth(max_depth: Any, owner: str) -> int | None:
    return None if max_depth is None else check_int(max_depth, "max_depth", owner, low=0)


# ------------------------------------------------------------------------------- text
def export_text(controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
    """The controller as text in named features, actions and units (its rules or equations).

    Parameters
    ----------
    controller : Controller
        Any controller.
    precision : int, default 3
        Decimals of thresholds and coefficients.
    max_depth : int, optional
        Trees: show only splits above this depth; a deeper subtree prints as
        ``... (k leaves below)``. ``None`` shows everything.

    Returns
    -------
    str
        One line each, no trailing newline; a last line names the action bounds, if any.

    Examples
    --------
    >>> from interp_rl.kinds.tree import TreeProgram
    >>> from interp_rl.program import Controller, Signal
    >>> prog = TreeProgram.from_leaves(
    ...     feature=[0, -1, -1], threshold=[0.2, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
    ...     intercept=[[0.0], [-0.5], [0.1]], coef={2: {(0, 1): -0.3}}, obs_dim=2, n_samples=[30, 20, 10])
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad"), Signal("vx", "m/s")],
    ...                   actions=[Signal("torque")])
    >>> print(export_text(ctrl))
    |--- angle [rad] <= 0.200
    |   |--- leaf 1: torque = -0.500   (67% of data)
    |--- angle [rad] >  0.200
    |   |--- leaf 2: torque = 0.100 - 0.300*vx   (33% of data)
    >>> print(export_text(ctrl, max_depth=0))
    |--- ... (2 leaves below)
    """
    precision = _check_precision(precision, "export_text")
    max_depth = _check_max_depth(max_depth, "export_text")
    return controller.program.explain(controller, precision=precision, max_depth=max_depth)


def decision_path_text(controller: Controller, obs: Any, *, precision: int = 3) -> str:
    """Why the controller acts as it does for one observation, with its values and the actions.

    A tree lists the splits passed (``name = value unit <= threshold``), the leaf reached and
    its actions; a linear policy shows each equation with the values put in. Clipped actions
    show their value before and after clipping.

    Parameters
    ----------
    controller : Controller
        Any controller.
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
    >>> from interp_rl.kinds.tree import TreeProgram
    >>> from interp_rl.program import Controller, Signal
    >>> prog = TreeProgram.from_leaves(
    ...     feature=[0, -1, -1], threshold=[0.2, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
    ...     intercept=[[0.0], [-0.5], [0.1]], coef={2: {(0, 1): -0.3}}, obs_dim=2, n_samples=[30, 20, 10])
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad"), Signal("vx", "m/s")],
    ...                   actions=[Signal("torque")])
    >>> print(decision_path_text(ctrl, [0.25, 2.0]))
    angle = 0.25 rad > 0.2
    → leaf 2 of 2 (33% of data)
      torque = 0.1 - 0.3*vx = -0.5
    """
    precision = _check_precision(precision, "decision_path_text")
    arr, _ = controller.check_obs(obs)
    if len(arr) != 1:
        raise ObservationError(f"decision_path_text explains one observation; got {len(arr)} rows.")
    return controller.program.explain_decision(controller, arr[0], precision=precision)


# -------------------------------------------------------------------------------- DOT
def to_dot(
    controller: Controller,
    *,
    obs: Any = None,
    states: Any = None,
    max_depth: int | None = None,
    precision: int = 3,
    title: str | None = None,
    **options: Any,
) -> str:
    """The controller as a Graphviz picture (DOT text), drawn by its program kind.

    A tree is drawn as splits (``feature <= threshold unit``, edges ``yes``/``no``) and
    rounded leaf boxes numbered from left to right with their actions and share of the
    training data; a linear policy as features joined to actions by one edge per coefficient.

    Parameters
    ----------
    controller : Controller
        The controller to draw.
    obs : array-like of shape (obs_dim,), optional
        One raw observation to mark (a tree: its decision path in bold red).
    states : array-like of shape (n, obs_dim), optional
        Visited states (a tree: leaves shaded by visits, labelled ``visits P% (count)``).
    max_depth : int, optional
        Trees: draw only splits above this depth; a deeper subtree becomes one dashed node
        ``… k leaves``.
    precision : int, default 3
        Decimals shown (trailing zeros dropped).
    title : str, optional
        Caption at the top. The action bounds, if any, are always noted there.
    **options
        Options of the kind's own drawing. Trees: ``highlight_path`` (node ids from parent to
        child), ``leaf_visits`` (a count per node id, or ``{leaf_id: count}``), ``max_terms``
        (linear terms shown per action, default 3).

    Returns
    -------
    str
        DOT source of a ``digraph``.

    Examples
    --------
    >>> from interp_rl.kinds.tree import TreeProgram
    >>> from interp_rl.program import Controller, Signal
    >>> prog = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[0.2, 0, 0], left=[1, -1, -1],
    ...                                right=[2, -1, -1], intercept=[[0.0], [-0.5], [0.1]], obs_dim=1)
    >>> ctrl = Controller(prog, features=[Signal("angle", "rad")], actions=[Signal("torque")])
    >>> print(to_dot(ctrl, obs=[0.5]))
    digraph controller {
      node [shape=box, fontname="Helvetica", fontsize=11];
      edge [fontname="Helvetica", fontsize=10];
      n0 [label="angle <= 0.2 rad", color="#d62728", penwidth=2.5];
      n0 -> n1 [label="yes"];
      n1 [label="leaf 1\\ntorque = -0.5", style="rounded,filled", fillcolor="#f2f2f2"];
      n0 -> n2 [label="no", color="#d62728", penwidth=2.5];
      n2 [label="leaf 2\\ntorque = 0.1", style="rounded,filled", fillcolor="#f2f2f2", color="#d62728", penwidth=2.5];
    }
    """
    precision = _check_precision(precision, "to_dot")
    max_depth = _check_max_depth(max_depth, "to_dot")
    x = None
    if obs is not None:
        arr, _ = controller.check_obs(obs)
        if len(arr) != 1:
            raise ObservationError(f"to_dot marks one observation (obs); got {len(arr)} rows.")
        x = arr[0]
    visited = None if states is None else controller.check_obs(states)[0]
    return controller.program.to_dot(controller, obs=x, states=visited, max_depth=max_depth, title=title,
                                     precision=precision, **options)


# ----------------------------------------------------------------------------- render
def _render_format(path: Path, format: str | None) -> str:
    accepted = (*RENDER_FORMATS, DOT_SUFFIX)
    if format is not None:
        fmt = str(format).lower().lstrip(".")
        if fmt not in accepted:
            raise RenderError(f"Unknown render format {format!r}; use one of {', '.join(accepted)}.")
        return fmt
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in accepted:
        raise RenderError(
            f"Cannot render to {str(path)!r}: unknown suffix {path.suffix!r}; use one of "
            f"{', '.join('.' + f for f in accepted)}."
        )
    return fmt


def render(dot: str, path: str | os.PathLike[str], *, format: str | None = None) -> Path:
    """Draw DOT text (e.g. from :func:`to_dot`) to an image file with Graphviz, atomically.

    Parameters
    ----------
    dot : str
        DOT source.
    path : str or path-like
        Output file; its suffix (``.svg``, ``.png``, ``.pdf``, or ``.dot`` for the source
        itself, which needs no Graphviz) picks the format.
    format : {"svg", "png", "pdf", "dot"}, optional
        Overrides the format the suffix implies.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    RenderError
        The suffix or format is not one of these, the Graphviz ``dot`` program is not
        installed, or Graphviz rejects the DOT text.

    Examples
    --------
    >>> render("digraph { a -> b }", "g.jpg")
    Traceback (most recent call last):
    ...
    interp_rl.errors.RenderError: Cannot render to 'g.jpg': unknown suffix '.jpg'; use one of .svg, .png, .pdf, .dot.
    """
    if not isinstance(dot, str):
        raise RenderError(f"render takes DOT source text (a str); got {type(dot).__name__}.")
    target = Path(path)
    fmt = _render_format(target, format)
    if fmt == DOT_SUFFIX:
        return atomic_write_bytes(target, (dot.rstrip("\n") + "\n").encode("utf-8"))
    try:
        import graphviz
    except ImportError:  # pragma: no cover - graphviz is a dependency
        raise RenderError(
            "Rendering needs the 'graphviz' Python package; install it with `pip install graphviz`."
        ) from None
    try:
        data = graphviz.Source(dot).pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise RenderError(
            "Rendering needs the Graphviz 'dot' program, which is not on PATH; install Graphviz "
            "(e.g. `apt-get install graphviz` or `brew install graphviz`) or write the DOT text instead "
            "(a .dot file)."
        ) from None
    except graphviz.CalledProcessError as exc:
        err = exc.stderr
        stderr = err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err or "")
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        detail = lines[0] if lines else f"exit status {exc.returncode}"
        raise RenderError(f"Graphviz could not render the DOT text: {detail}") from None
    return atomic_write_bytes(target, data)


def usage_figure(controller: Controller, observations: Any, out: str | Path, *, title: str | None = None) -> Path:
    """Which piece acts (a tree's leaf, a mixture's expert) over a run of visited states, as a picture.

    Three panels, in named features: the piece acting at each step (a timeline of the states in
    the order given, e.g. one episode), each piece's share of the steps, and a map of the states
    over the two features that best tell the pieces apart (those a depth-4 classification tree
    of the pieces splits on most), coloured by piece.

    Parameters
    ----------
    controller : Controller
        A piecewise-affine controller (tree, linear, mixture).
    observations : array-like of shape (n_steps, obs_dim)
        Raw observations in time order.
    out : str or Path
        ``.png``, ``.svg`` or ``.pdf``; written atomically.
    title : str, optional
        Shown above the panels.

    Returns
    -------
    Path
        ``out``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.tree import DecisionTreeClassifier

    from interp_rl.io import atomic_write

    target = Path(out)
    if target.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise RenderError(f"Cannot draw the usage figure to {str(target)!r}: use .png, .svg or .pdf.")
    X = controller.check_obs(np.asarray(observations, dtype=np.float64))[0]
    if len(X) == 0:
        raise InvalidParameterError("usage_figure needs at least one observation.")
    pieces = controller.program.affine_pieces()
    which = pieces.assign(X)
    used = [int(p) for p in np.unique(which)]
    order = {p: i for i, p in enumerate(used)}
    labels = [pieces.labels[p] if p < len(pieces.labels) else f"piece {p}" for p in used]
    colours = plt.get_cmap("tab10" if len(used) <= 10 else "tab20")
    colour = [colours(order[int(p)] % colours.N) for p in which]
    if len(used) > 1:
        clf = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, which)
        top = list(np.argsort(-clf.feature_importances_)[:2])
    else:
        top = list(np.argsort(-X.std(axis=0))[:2])
    if len(top) < 2:
        top = top + top

    fig = plt.figure(figsize=(10, 6.5))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.4])
    ax = fig.add_subplot(grid[0, :])
    ax.scatter(np.arange(len(X)), [order[int(p)] for p in which], c=colour, s=6, marker="s", linewidths=0)
    ax.set_yticks(range(len(used)), labels)
    ax.set_xlabel("step")
    ax.set_title(title or f"Which part of the {controller.kind} acts, step by step")
    ax.set_xlim(-0.5, len(X) - 0.5)
    bar = fig.add_subplot(grid[1, 0])
    share = np.array([np.mean(which == p) for p in used]) * 100
    bar.barh(range(len(used)), share, color=[colours(i % colours.N) for i in range(len(used))])
    bar.set_yticks(range(len(used)), labels)
    bar.invert_yaxis()
    bar.set_xlabel("% of steps")
    for i, v in enumerate(share):
        bar.text(v, i, f" {v:.0f}%", va="center", fontsize=8)
    area = fig.add_subplot(grid[1, 1])
    area.scatter(X[:, top[0]], X[:, top[1]], c=colour, s=8, linewidths=0)
    area.set_xlabel(controller.features[top[0]].label)
    area.set_ylabel(controller.features[top[1]].label)
    area.set_title("where each acts", fontsize=10)
    fig.tight_layout()

    def write(tmp: str) -> None:
        # The same figure gives the same bytes: no creation date, fixed ids (SVG).
        fmt = target.suffix.lower()[1:]
        stamp = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
        with plt.rc_context({"svg.hashsalt": "interp-rl"}):
            fig.savefig(tmp, format=fmt, dpi=110, metadata=stamp)

    try:
        return atomic_write(target, write)
    finally:
        plt.close(fig)


# ------------------------------------------------------------------------------------------ attribution views
_VIEW_FORMATS = (".png", ".svg", ".pdf")


def _save_figure(fig: Any, out: str | Path) -> Path:
    """Write a matplotlib figure atomically (same figure, same bytes) and close it."""
    import matplotlib.pyplot as plt

    from interp_rl.io import atomic_write

    target = Path(out)
    if target.suffix.lower() not in _VIEW_FORMATS:
        plt.close(fig)
        raise RenderError(f"Cannot draw a figure to {str(target)!r}: use .png, .svg or .pdf.")

    def write(tmp: str) -> None:
        fmt = target.suffix.lower()[1:]
        stamp = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
        with plt.rc_context({"svg.hashsalt": "interp-rl"}):
            fig.savefig(tmp, format=fmt, dpi=110, metadata=stamp, bbox_inches="tight")

    try:
        return atomic_write(target, write)
    finally:
        plt.close(fig)


def _estimator_note(attr: Any) -> str:
    """How a figure's values were computed, in plain words, and what a scaled unit means."""
    if attr.method.endswith("-exact"):
        note = "exact, from the controller's own rules (its output before clipping)"
    elif attr.exact:
        note = "exact (every subset of the features)"
    else:
        note = "estimated by sampling (" + {"kernel": "Kernel SHAP"}.get(attr.method, f"{attr.method} sampling") + ")"
    note += f"; each value is the feature's push away from the mean over {attr.background_size} typical states"
    units = unit_note(getattr(attr, "units", []))
    return note + (f"\n{units}" if units else "")


def _unit(attr: Any, action: int) -> str:
    """`` [x200 N m]``: the action's unit, in which its Shapley values are, or nothing when unknown."""
    units = getattr(attr, "units", [])
    return f" [{units[action]}]" if action < len(units) and units[action] else ""


def attribution_bar(attr: Any, out: str | Path, *, top: int = 12, title: str | None = None) -> Path:
    """Global importance (mean |Shapley value|) of the ``top`` features, one panel per action."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    imp = attr.importance()
    k = imp.shape[1]
    cols = min(k, 3)
    rows = -(-k // cols)
    n_top = min(top, imp.shape[0])
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 0.32 * n_top * rows + 1.6 * rows), squeeze=False)
    for a in range(rows * cols):
        ax = axes[a // cols][a % cols]
        if a >= k:
            ax.axis("off")
            continue
        order = np.argsort(-imp[:, a], kind="stable")[:n_top]
        ax.barh(range(n_top), imp[order, a], color="#1f77b4")
        ax.set_yticks(range(n_top), [attr.features[i] for i in order], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(attr.actions[a], fontsize=10)
        ax.set_xlabel(f"mean |Shapley value|{_unit(attr, a)}", fontsize=8)
    fig.suptitle((title or "Which features drive each action") + f"\n{_estimator_note(attr)}", fontsize=10)
    fig.tight_layout()
    return _save_figure(fig, out)


def _shap_explanation(attr: Any, action: int) -> Any:
    import shap

    return shap.Explanation(values=attr.values[:, :, action], base_values=np.full(attr.n_states, attr.base[action]),
                            data=attr.states, feature_names=list(attr.features))


def attribution_beeswarm(attr: Any, out: str | Path, *, action: int = 0, top: int = 12) -> Path:
    """shap's beeswarm for one action: a dot per state at its Shapley value, coloured by the feature's value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import shap

    _check_action(attr, action)
    fig = plt.figure()
    shap.plots.beeswarm(_shap_explanation(attr, action), max_display=top, show=False, plot_size=(7, 0.3 * top + 1.5))
    fig = plt.gcf()
    fig.axes[0].set_xlabel(f"Shapley value{_unit(attr, action)}: the feature's push on {attr.actions[action]}")
    fig.suptitle(f"{attr.actions[action]}: Shapley values over {attr.n_states} states\n{_estimator_note(attr)}",
                 fontsize=10)
    return _save_figure(fig, out)


def attribution_waterfall(attr: Any, out: str | Path, *, state: int = 0, action: int = 0, top: int = 10) -> Path:
    """shap's waterfall for one state and action: from the base value to the prediction, feature by feature."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import shap

    _check_action(attr, action)
    if not 0 <= state < attr.n_states:
        raise InvalidParameterError(f"state {state} is not one of the {attr.n_states} explained states.")
    shap.plots.waterfall(_shap_explanation(attr, action)[state], max_display=top, show=False)
    fig = plt.gcf()
    fig.suptitle(f"{attr.actions[action]} at state {state}: {attr.prediction[state, action]:.3g}{_unit(attr, action)}\n"
                 f"{_estimator_note(attr)}", fontsize=10)
    return _save_figure(fig, out)


def attribution_timeline(attr: Any, out: str | Path, *, top: int = 8, actions: Sequence[int] | None = None,
                         title: str | None = None) -> Path:
    """An episode as a heat map: the Shapley value of the ``top`` features (rows) at each step (columns), with
    the action above it, one pair of panels per action. The states must be in time order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    acts = list(range(len(attr.actions))) if actions is None else [int(a) for a in actions]
    for a in acts:
        _check_action(attr, a)
    n_top = min(top, len(attr.features))
    imp = attr.importance()
    fig, axes = plt.subplots(2 * len(acts), 1, figsize=(10, len(acts) * (1.2 + 0.22 * n_top + 0.6)),
                             gridspec_kw={"height_ratios": [1, 0.22 * n_top + 0.5] * len(acts)}, squeeze=False)
    steps = np.arange(attr.n_states)
    for r, a in enumerate(acts):
        top_ax, heat = axes[2 * r][0], axes[2 * r + 1][0]
        top_ax.plot(steps, attr.prediction[:, a], color="black", lw=1)
        top_ax.set_ylabel(attr.actions[a] + _unit(attr, a), fontsize=8, rotation=0, ha="right")
        top_ax.set_xlim(-0.5, attr.n_states - 0.5)
        top_ax.tick_params(labelbottom=False, labelsize=7)
        order = np.argsort(-imp[:, a], kind="stable")[:n_top]
        vals = attr.values[:, order, a].T
        lim = float(np.max(np.abs(vals))) or 1.0
        im = heat.imshow(vals, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        heat.set_yticks(range(n_top), [attr.features[i] for i in order], fontsize=7)
        heat.tick_params(labelsize=7)
        fig.colorbar(im, ax=heat, pad=0.01, fraction=0.02).set_label(f"Shapley value{_unit(attr, a)}", fontsize=7)
    axes[-1][0].set_xlabel("step")
    fig.suptitle((title or "Shapley values along the episode (red pushes the action up, blue down)")
                 + f"\n{_estimator_note(attr)}", fontsize=10)
    fig.tight_layout()
    return _save_figure(fig, out)


def _check_action(attr: Any, action: int) -> None:
    if not isinstance(action, (int, np.integer)) or not 0 <= action < len(attr.actions):
        raise InvalidParameterError(f"action {action!r} is not one of the {len(attr.actions)} actions "
                                    f"({', '.join(attr.actions)}).")


def attribution_figures(attr: Any, out_dir: str | Path, *, timeline: Any = None,
                        formats: Sequence[str] = ("png", "svg"), top: int = 12) -> list[Path]:
    """Every view of ``attr`` into ``out_dir``: ``importance``, per action ``beeswarm_ACTION`` and
    ``waterfall_ACTION`` (the state with the largest |action|), and ``timeline`` from ``timeline`` (an
    attribution of one episode's states in time order), each in ``formats``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fmt in formats:
        written.append(attribution_bar(attr, out / f"importance.{fmt}", top=top))
        for a, name in enumerate(attr.actions):
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
            written.append(attribution_beeswarm(attr, out / f"beeswarm_{safe}.{fmt}", action=a, top=top))
            state = int(np.argmax(np.abs(attr.prediction[:, a]))) if attr.n_states else 0
            written.append(attribution_waterfall(attr, out / f"waterfall_{safe}.{fmt}", state=state, action=a))
        if timeline is not None:
            written.append(attribution_timeline(timeline, out / f"timeline.{fmt}", top=min(top, 8)))
    return written
