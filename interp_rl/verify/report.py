"""The verification report: a :class:`~interp_rl.verify.result.Verification` as a table, paragraphs, JSON and
Markdown/HTML.

What ``interp-rl verify`` prints and writes (``verification.json``, ``verification.md``, ``verification.html``)
is rendered here from the verdicts alone; the methods of :class:`~interp_rl.verify.result.Verification`
(``table``, ``details``, ``write``, ...) call these functions. Each property kind says how its own verdict and
the teacher's search for it read (:meth:`~interp_rl.verify.properties.Property.detail`,
:meth:`~interp_rl.verify.properties.Property.teacher_detail`), with the sentences below.

Examples
--------
>>> import numpy as np
>>> from interp_rl.program import Signal
>>> values(np.array([0.5, -1.25]), [Signal("angle", "rad"), Signal("speed")])
'angle = 0.5, speed = -1.25'
>>> share(3, 120, 0.0715)
'3 of 120 (≤ 7.15% at 95%)'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from interp_rl.program import Controller, Signal
    from interp_rl.verify.prove import Counterexample, Verdict
    from interp_rl.verify.result import Verification
    from interp_rl.verify.search import TeacherSearch

__all__ = ["counterexample_detail", "details", "share", "side_by_side", "table", "teacher_counterexample_detail",
           "teacher_gives_detail", "to_dict", "values", "write"]


def values(xs: np.ndarray, signals: Sequence[Signal], precision: int = 4) -> str:
    """``angle = 0.5, speed = -1.25``: named values, each to ``precision`` significant digits."""
    return ", ".join(f"{s.name} = {x:.{precision}g}" for s, x in zip(signals, xs, strict=True))


def share(violations: int, states: int, upper: float, confidence: float = 0.95) -> str:
    """``3 of 120 (≤ 7.15% at 95%)``: a probabilistic check as the table shows it."""
    return f"{violations} of {states} (≤ {100 * upper:.3g}% at {100 * confidence:.0f}%)"


def _status(v: Verdict) -> str:
    return f"refuted ({len(v.failing)} regions)" if v.status == "refuted" and v.failing else v.status


def counterexample_detail(name: str, cex: Counterexample, controller: Controller, precision: int = 4) -> str:
    """The paragraph on a counterexample: the state, what acts there and what it does, and what fails by how
    much; for a pair of states (the second given), the feature moved and how the actions changed."""
    c = controller
    state, act = values(cex.state, c.features, precision), values(cex.action, c.actions, precision)
    if cex.other_state is not None and cex.other_action is not None:
        f = int(np.argmax(cex.other_state != cex.state))
        moved = [k for k in range(len(c.actions)) if cex.other_action[k] != cex.action[k]]
        change = ", ".join(f"{c.actions[k].name} {cex.action[k]:.{precision}g} -> "
                           f"{cex.other_action[k]:.{precision}g}" for k in moved)
        return (f"{name}: refuted at {state}: raising {c.features[f].name} to "
                f"{cex.other_state[f]:.{precision + 3}g} ({cex.region} -> {cex.other_region}) changes "
                f"{change}; `{cex.requirement}` fails by {cex.violation:.3g}.")
    return (f"{name}: refuted at {state}: {cex.region} acts, giving {act}; `{cex.requirement}` "
            f"fails by {cex.violation:.3g}.")


def teacher_counterexample_detail(name: str, search: TeacherSearch, controller: Controller,
                                  precision: int = 4) -> str | None:
    """The paragraph on the teacher's worst counterexample (``None`` when the search found none)."""
    w = search.worst
    if w is None:
        return None
    c = controller
    state, act = values(w.state, c.features, precision), values(w.action, c.actions, precision)
    moved = ""
    if w.other_state is not None and w.other_action is not None:
        j = int(np.argmax(w.other_state != w.state))
        moved = (f", and at {c.features[j].name} = {w.other_state[j]:.{precision}g} gives "
                 + values(w.other_action, c.actions, precision))
    return (f"{name}: the teacher breaks it ({search.counterexamples:,} counterexamples found); the worst "
            f"at {state}: it gives {act}{moved}; `{w.requirement}` fails by {w.violation:.3g}.")


def teacher_gives_detail(name: str, cex: Counterexample | None, controller: Controller,
                         precision: int = 4) -> str | None:
    """What the teacher does at a counterexample that compares the controller with it (``None`` without one)."""
    if cex is None or cex.other_action is None:
        return None
    return f"{name}: there the teacher gives {values(cex.other_action, controller.actions, precision)}."


def to_dict(verification: Verification) -> dict[str, Any]:
    """The verification as ``verification.json`` holds it."""
    r = verification
    c = r.controller
    props = {p.name: p for p in r.properties.properties}
    return {
        "controller": {"kind": c.kind, "task": c.task, "size": c.size()},
        "properties": r.properties.source,
        "domain": {f.name: [float(lo), float(hi)] for f, lo, hi in zip(c.features, r.lower, r.upper, strict=True)},
        "counts": r.counts(), "seconds": r.seconds,
        "verdicts": [{
            "name": v.name, "kind": props[v.name].kind, "statement": props[v.name].statement,
            "why": props[v.name].why, "status": v.status, "reason": v.reason,
            "counterexample": None if v.counterexample is None else v.counterexample.to_dict(c),
            "regions": v.regions, "linear_programs": v.programs, "seconds": v.seconds,
            "failing_regions": len(v.failing),
            "sampled": r.sampled[v.name].to_dict() if v.name in r.sampled else None,
            **({"teacher": r.teacher[v.name].to_dict(c.feature_names, c.action_names),
                "teacher_sampled": (r.teacher_sampled[v.name].to_dict() if v.name in r.teacher_sampled
                                    else None)} if v.name in r.teacher else {}),
        } for v in r.verdicts],
        **({"teacher": r.teacher_source} if r.teacher else {})}


def table(verification: Verification) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the summary table (one row per property)."""
    r = verification
    header = ["property", "verdict", "regions", "seconds", "visited states breaking it"]
    rows = []
    for v in r.verdicts:
        s = r.sampled.get(v.name)
        rows.append([v.name, _status(v), str(v.regions), f"{v.seconds:.2f}",
                     "" if s is None else share(s.violations, s.states, s.upper, s.confidence)])
    if r.teacher:
        header += ["teacher", "visited states the teacher breaks"]
        for v, row in zip(r.verdicts, rows, strict=True):
            t, s = r.teacher.get(v.name), r.teacher_sampled.get(v.name)
            row += ["" if t is None else t.summary(),
                    "" if s is None else share(s.violations, s.states, s.upper, s.confidence)]
    return header, rows


def side_by_side(verification: Verification) -> list[tuple[str, str]]:
    """``(name, "controller: proved · teacher: 37 counterexamples")`` for every property the teacher was searched
    for."""
    out = []
    for v in verification.verdicts:
        t = verification.teacher.get(v.name)
        if t is not None:
            out.append((v.name, f"controller: {_status(v)} · teacher: {t.summary()}"))
    return out


def details(verification: Verification, precision: int = 4) -> list[str]:
    """One paragraph per property that is not proved (its counterexample or the reason), then one per property
    the teacher's search has something to say about; each property kind words its own."""
    r = verification
    props = {p.name: p for p in r.properties.properties}
    mine = [props[v.name].detail(v, r.controller, precision) for v in r.verdicts]
    theirs = [props[v.name].teacher_detail(v, r.teacher.get(v.name), r.controller, precision) for v in r.verdicts]
    return [line for line in mine + theirs if line is not None]


def write(verification: Verification, out_dir: str | Path) -> dict[str, Path]:
    """Write ``verification.json``, ``verification.md`` and ``verification.html`` into ``out_dir`` (atomically);
    returns their paths by format (``json``, ``markdown``, ``html``)."""
    from interp_rl.document import Document
    from interp_rl.io import atomic_write_text

    r = verification
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": atomic_write_text(out / "verification.json", json.dumps(to_dict(r), indent=1) + "\n")}
    doc = Document()
    counts = r.counts()
    task = r.controller.task or "its task"
    doc.p(f"{counts['proved']} proved, {counts['refuted']} refuted, {counts['unknown']} unknown "
          f"({r.seconds:.2f} s) for the {r.controller.kind} controller of {task} against "
          f"{r.properties.source}.")
    header, rows = table(r)
    doc.table(header, rows)
    props = {p.name: p for p in r.properties.properties}
    doc.bullets([f"**{v.name}**: {props[v.name].statement}" + (f" ({props[v.name].why})" if props[v.name].why
                                                                else "") for v in r.verdicts])
    if r.teacher:
        doc.p(f"Side by side with the teacher ({r.teacher_source}), searched by random sampling and gradient "
              "ascent on the violation inside each property's region (a search: finding nothing proves nothing):")
        doc.bullets([f"**{name}**: {line}" for name, line in side_by_side(r)])
    lines = details(r)
    if lines:
        doc.bullets(lines)
    paths.update(doc.write(out, "Verification", stem="verification"))
    return paths
