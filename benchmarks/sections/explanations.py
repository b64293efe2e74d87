"""What a report shows of a controller (:func:`explain_controller`): its picture, which piece acts where, its rules
and one decision explained, as :class:`Explanation` parts; :func:`explanations` gives them for a group's chosen
controller, read from its results folder. The method's ``picture_note`` (data in the method registry) says what
the picture's shading or widths mean."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.records import Group, num
from interp_rl.program import Controller

__all__ = ["Explanation", "explain_controller", "explanations", "usage_picture"]

#: Rules longer than this many lines are cut in a report (``interp-rl viz FOLDER --text`` prints all).
RULE_LINES = 80


@dataclass
class Explanation:
    """One piece of a controller's explanation for a report: a picture (SVG) or text."""

    title: str
    kind: str
    """``"svg"`` or ``"text"``."""
    source: str | Callable[[], str]
    """The text or the SVG, or a function making it where drawing costs (called once, when first asked)."""

    @functools.cached_property
    def content(self) -> str:
        """The text, or the SVG's source."""
        return self.source() if callable(self.source) else self.source

    def svg_bytes(self) -> bytes:
        """The picture's bytes, for a report's ``figures/`` (drawn now if it was not yet)."""
        return self.content.encode("utf-8")


def explain_controller(controller: Controller, states: np.ndarray, title: str, *, note: str = "") -> list[Explanation]:
    """The picture, which piece acts where, the rules and one decision explained: what a report shows of a
    controller.

    Parameters
    ----------
    controller : Controller
        The controller shown.
    states : ndarray of shape (n, obs_dim)
        States it visited, in time order (``n`` may be 0: no shading, no usage picture, no decision).
    title : str
        The picture's title.
    note : str
        What the picture's shading or widths mean (the method's ``picture_note``).

    Returns
    -------
    list of Explanation
        The Graphviz picture (or, where Graphviz cannot draw it, why as text), the usage picture of a piecewise
        controller with two or more acting pieces (drawn when first asked for), the rules, and one decision.
    """
    from interp_rl.errors import RenderError
    from interp_rl.viz import decision_path_text, export_text, render, to_dot

    big = controller.size().get("depth", 0) > 4
    shown = " (top 4 levels)" if big else ""
    dot = to_dot(controller, max_depth=4 if big else None, states=states if len(states) else None,
                 title=f"{title}{shown}")
    parts = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            svg = render(dot, Path(tmp) / "picture.svg").read_text(encoding="utf-8")
        parts.append(Explanation(f"{controller.kind.capitalize()}{f' ({note})' if note else ''}", "svg", svg))
    except RenderError as exc:
        parts.append(Explanation("Picture", "text", str(exc)))
    usage = usage_picture(controller, states)
    if usage is not None:
        parts.append(usage)
    rules = export_text(controller).splitlines()
    if len(rules) > RULE_LINES:
        rules = [*rules[:RULE_LINES],
                 f"… {len(rules) - RULE_LINES} more lines (interp-rl viz FOLDER --text prints all)"]
    title = getattr(controller.program, "rules_title", "") or f"The {controller.kind} controller"
    parts.append(Explanation(title, "text", "\n".join(rules)))
    if len(states):
        parts.append(Explanation("Why it acts as it does in one visited state", "text",
                                 decision_path_text(controller, states[len(states) // 2])))
    return parts


def usage_picture(controller: Controller, states: np.ndarray) -> Explanation | None:
    """Which piece acts step by step over the visited states (in time order), overall, and where; ``None`` for a
    controller that is not piecewise affine, or with fewer than two states or two acting pieces. The picture is
    drawn (:func:`interp_rl.viz.usage_figure`) when its content is first asked for."""
    if not controller.program.can("affine"):
        return None
    pieces = controller.program.affine_pieces()
    if len(states) < 2 or len(pieces.acting_pieces()) < 2:
        return None
    what = getattr(controller.program, "piece_names", ("piece",))[0]  # the kind's own word: expert, leaf, region
    return Explanation(f"Usage: which {what} acts, overall, and where", "svg",
                       functools.partial(_usage_svg, controller, states,
                                         f"Which {what} acts, step by step ({len(states)} visited states)"))


def _usage_svg(controller: Controller, states: np.ndarray, title: str) -> str:
    from interp_rl.viz import usage_figure

    with tempfile.TemporaryDirectory() as tmp:
        return usage_figure(controller, states, Path(tmp) / "usage.svg", title=title).read_text(encoding="utf-8")


def explanations(results: Path, g: Group) -> list[Explanation]:
    """:func:`explain_controller` of the group's median controller, read from ``results`` with the states it visited
    (``states.npy``, when there); none when its folder holds no controller (cells' folders are not committed but
    the chosen controllers')."""
    from distill.methods import METHODS
    from interp_rl.program import load_controller

    rec = g.median_record()
    folder = results / rec["controller"]
    if not (folder / "controller.json").is_file():
        return []
    ctrl = load_controller(folder)
    states_file = folder / "states.npy"
    states = np.load(states_file, allow_pickle=False) if states_file.is_file() else np.zeros((0, 0))
    title = (f"{g.teacher}: {g.method} {g.size}, seed {rec['cell']['seed']}, "
             f"{num(rec['percent_of_teacher']):.0f}% of teacher")
    return explain_controller(ctrl, states, title, note=METHODS[rec["distiller"]].picture_note)
