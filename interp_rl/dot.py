"""Graphviz DOT text that every program kind's picture shares: labels, the caption, attribute lists, the boxes and
edges of equation-like pictures, and what a scaled unit means.

The kinds draw their own pictures (``to_dot``) with these helpers; rendering them (``dot``) and every other picture
live in :mod:`interp_rl.viz`. This module imports nothing of interp-rl, so the kinds and the program contract can
use it without a loop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["dot_action_nodes", "dot_attrs", "dot_coefficient_edge", "dot_header", "dot_label", "unit_note"]


def unit_note(signals: Sequence[Any]) -> str | None:
    """What a scaled unit such as ``[x200 N m]`` means, once per unit, or ``None`` when no unit is scaled.

    A MuJoCo motor multiplies its control by its gear: an action of 1 on a motor of gear 200 is 200 N m.
    ``signals`` are signals or bare units.

    >>> from interp_rl.program import Signal
    >>> unit_note([Signal("thigh_joint_torque", "x200 N m"), Signal("foot_joint_torque", "x200 N m")])
    '[x200 N m]: an action of 1 is 200 N m (the motor multiplies it by its gear).'
    >>> unit_note([Signal("force", "N")]) is None
    True
    """
    units = [str(getattr(s, "unit", s)) for s in signals]
    scaled = list(dict.fromkeys(u for u in units if re.fullmatch(r"x[0-9][0-9.eE+-]* \S.*", u)))
    if not scaled:
        return None
    parts = [f"[{u}]: an action of 1 is {u[1:]}" for u in scaled]
    return "; ".join(parts) + " (the motor multiplies it by its gear)."



def _esc(text: str) -> str:
    """``text`` inside a double-quoted DOT string: ``\\`` and ``"`` escaped, newlines as spaces.

    ``<`` and ``>`` need no escape inside quotes (only HTML labels ``<...>`` do);
    Graphviz writes them as ``&lt;``/``&gt;`` in SVG itself.
    """
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def dot_label(lines: Sequence[str], *, left: bool = False) -> str:
    """A quoted DOT label of several lines (``left``: each line left-aligned).

    >>> dot_label(["a <= 1", 'say "hi"'])
    '"a <= 1\\\\nsay \\\\"hi\\\\""'
    """
    sep = "\\l" if left else "\\n"
    return '"' + sep.join(_esc(line) for line in lines) + (sep if left else "") + '"'


def dot_header(controller: Any, *, title: str | None, fmt: Any, rankdir: str | None = None,
               clip: bool = True) -> list[str]:
    """Opening lines every kind's picture shares: the caption (title and action clipping, unless ``clip`` is
    False: pieces that name the class they play) and fonts."""
    out = ["digraph controller {"] + ([f"  rankdir={rankdir};"] if rankdir else [])
    caption = [title] if title else []
    note = controller.program.clip_note(controller, fmt) if clip else None
    if note:
        caption.append(note)
    units = unit_note(controller.actions)
    if units:
        caption.append(units)
    if caption:
        out.append(f'  graph [label={dot_label(caption)}, labelloc="t", fontname="Helvetica"];')
    out.append('  node [shape=box, fontname="Helvetica", fontsize=11];')
    out.append('  edge [fontname="Helvetica", fontsize=10];')
    return out


def dot_attrs(attrs: Mapping[str, str]) -> str:
    """``[k=v, ...]``: a DOT attribute list (values already quoted where needed)."""
    return "[" + ", ".join(f"{k}={v}" for k, v in attrs.items()) + "]"


def dot_action_nodes(controller: Any, intercept: Any, values: Any, fmt: Any) -> list[str]:
    """One box per action of an equation-like picture: its name, its constant and (``values``) its value."""
    out = []
    for o, a in enumerate(controller.actions):
        text = [a.label, f"bias {fmt(float(intercept[o]))}"]
        if values is not None:
            text.append(f"= {fmt(float(values[o]))}")
        attrs = {"label": dot_label(text), "style": '"rounded,filled"', "fillcolor": '"#f2f2f2"'}
        out.append(f"  a{o} {dot_attrs(attrs)};")
    return out


def dot_coefficient_edge(src: str, dst: str, c: float, share: float, fmt: Any) -> str:
    """An edge carrying a coefficient: labelled, blue when positive, red when negative, ``share`` (0-1 of the
    largest) setting its width."""
    attrs = {"label": dot_label([fmt(c)]), "color": '"#d62728"' if c < 0 else '"#1f77b4"',
             "penwidth": f"{0.5 + 3.0 * share:.2f}"}
    return f"  {src} -> {dst} {dot_attrs(attrs)};"
