"""The verdicts on one controller, with the domain they hold on: tables, details and the written report.

:class:`Verification` is what :func:`interp_rl.verify.verify` returns; this module holds it and the statistics
of the probabilistic check (:class:`Sampled`, :func:`clopper_pearson_upper`), apart from the engine that decides
the properties, so that the stages that use a verdict (the repairs) do not import the engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.program import Controller
from interp_rl.verify.properties import (
    PropertySet,
)
from interp_rl.verify.prove import Verdict
from interp_rl.verify.search import TeacherSearch

__all__ = ["CONFIDENCE", "Sampled", "Verification", "clopper_pearson_upper"]


#: Confidence of the Clopper-Pearson bound on the share of states that break a property.
CONFIDENCE = 0.95


def clopper_pearson_upper(k: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper-Pearson upper bound of a rate seen ``k`` times in ``n`` draws.

    >>> round(clopper_pearson_upper(0, 100), 4), round(clopper_pearson_upper(5, 100), 4)
    (0.0295, 0.1023)
    """
    from scipy.stats import beta

    if n <= 0:
        return 1.0
    if k >= n:
        return 1.0
    return float(beta.ppf(confidence, k + 1, n - k))


@dataclass
class Sampled:
    """The probabilistic check: how many of the visited states in ``when`` break the property."""

    states: int
    """Visited states where ``when`` holds."""
    violations: int
    upper: float
    """Clopper-Pearson upper bound (at :data:`CONFIDENCE`) of the share of such states that break it."""

    def to_dict(self) -> dict[str, Any]:
        return {"states": self.states, "violations": self.violations, "upper": self.upper,
                "confidence": CONFIDENCE}


@dataclass
class Verification:
    """The verdicts on one controller, with the domain they hold on."""

    controller: Controller
    properties: PropertySet
    lower: np.ndarray
    upper: np.ndarray
    verdicts: list[Verdict]
    sampled: dict[str, Sampled] = field(default_factory=dict)
    """Per property: the probabilistic check on the visited states, when states were given."""
    seconds: float = 0.0
    teacher: dict[str, TeacherSearch] = field(default_factory=dict)
    """Per property: the search of the teacher, when a teacher was given (:mod:`interp_rl.verify.search`)."""
    teacher_sampled: dict[str, Sampled] = field(default_factory=dict)
    """Per property: the probabilistic check of the teacher on the visited states."""
    teacher_source: str = ""
    """Which teacher was searched."""

    def counts(self) -> dict[str, int]:
        """``{"proved": ..., "refuted": ..., "unknown": ...}``."""
        return {s: sum(v.status == s for v in self.verdicts) for s in ("proved", "refuted", "unknown")}

    def verdict(self, name: str) -> Verdict:
        for v in self.verdicts:
            if v.name == name:
                return v
        raise KeyError(f"No property named {name!r}; the properties are {[v.name for v in self.verdicts]}.")

    def to_dict(self) -> dict[str, Any]:
        c = self.controller
        props = {p.name: p for p in self.properties.properties}
        return {
            "controller": {"kind": c.kind, "task": c.task, "size": c.size()},
            "properties": self.properties.source,
            "domain": {f.name: [float(lo), float(hi)] for f, lo, hi in zip(c.features, self.lower, self.upper,
                                                                             strict=True)},
            "counts": self.counts(), "seconds": self.seconds,
            "verdicts": [{
                "name": v.name, "kind": props[v.name].kind, "statement": props[v.name].statement,
                "why": props[v.name].why, "status": v.status, "reason": v.reason,
                "counterexample": None if v.counterexample is None else v.counterexample.to_dict(c),
                "regions": v.regions, "linear_programs": v.programs, "seconds": v.seconds,
                "failing_regions": len(v.failing),
                "sampled": self.sampled[v.name].to_dict() if v.name in self.sampled else None,
                **({"teacher": self.teacher[v.name].to_dict(c.feature_names, c.action_names),
                    "teacher_sampled": (self.teacher_sampled[v.name].to_dict() if v.name in self.teacher_sampled
                                        else None)} if v.name in self.teacher else {}),
            } for v in self.verdicts],
            **({"teacher": self.teacher_source} if self.teacher else {})}

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Header and rows of the summary table (one row per property)."""
        header = ["property", "verdict", "regions", "seconds", "visited states breaking it"]
        rows = []
        for v in self.verdicts:
            status = f"refuted ({len(v.failing)} regions)" if v.status == "refuted" and v.failing else v.status
            s = self.sampled.get(v.name)
            share = "" if s is None else (f"{s.violations} of {s.states} (≤ {100 * s.upper:.3g}% at "
                                          f"{100 * CONFIDENCE:.0f}%)")
            rows.append([v.name, status, str(v.regions), f"{v.seconds:.2f}", share])
        if self.teacher:
            header += ["teacher", "visited states the teacher breaks"]
            for v, row in zip(self.verdicts, rows, strict=True):
                t, s = self.teacher.get(v.name), self.teacher_sampled.get(v.name)
                row += ["" if t is None else t.summary(),
                        "" if s is None else f"{s.violations} of {s.states} (≤ {100 * s.upper:.3g}% at "
                                             f"{100 * CONFIDENCE:.0f}%)"]
        return header, rows

    def side_by_side(self) -> list[tuple[str, str]]:
        """``(name, "controller: proved · teacher: 37 counterexamples")`` for every property the teacher was
        searched for."""
        out = []
        for v in self.verdicts:
            t = self.teacher.get(v.name)
            if t is not None:
                mine = f"refuted ({len(v.failing)} regions)" if v.status == "refuted" and v.failing else v.status
                out.append((v.name, f"controller: {mine} · teacher: {t.summary()}"))
        return out

    def details(self, precision: int = 4) -> list[str]:
        """One paragraph per property that is not proved: the counterexample or the reason."""
        c = self.controller
        out = []
        for v in self.verdicts:
            if v.counterexample is not None:
                cex = v.counterexample
                state = ", ".join(f"{f.name} = {x:.{precision}g}" for f, x in zip(c.features, cex.state, strict=True))
                act = ", ".join(f"{a.name} = {y:.{precision}g}" for a, y in zip(c.actions, cex.action, strict=True))
                if cex.other_state is not None and cex.other_action is not None:
                    f = int(np.argmax(cex.other_state != cex.state))
                    moved = [k for k in range(len(c.actions)) if cex.other_action[k] != cex.action[k]]
                    change = ", ".join(f"{c.actions[k].name} {cex.action[k]:.{precision}g} -> "
                                       f"{cex.other_action[k]:.{precision}g}" for k in moved)
                    out.append(f"{v.name}: refuted at {state}: raising {c.features[f].name} to "
                               f"{cex.other_state[f]:.{precision + 3}g} ({cex.region} -> {cex.other_region}) changes "
                               f"{change}; `{cex.requirement}` fails by {cex.violation:.3g}.")
                    continue
                out.append(f"{v.name}: refuted at {state}: {cex.region} acts, giving {act}; `{cex.requirement}` "
                           f"fails by {cex.violation:.3g}.")
            elif v.status == "unknown":
                out.append(f"{v.name}: unknown: {v.reason}.")
        return out + self._teacher_details(precision)

    def _teacher_details(self, precision: int) -> list[str]:
        """What the teacher does at a ``teacher`` property's counterexample, and the teacher's worst counterexample
        to every other property."""
        c = self.controller
        out = []
        compared = {p.name for p in self.properties.properties if p.kind == "teacher"}
        for v in self.verdicts:
            mine = v.counterexample
            if v.name in compared and mine is not None and mine.other_action is not None:
                theirs = ", ".join(f"{a.name} = {y:.{precision}g}"
                                   for a, y in zip(c.actions, mine.other_action, strict=True))
                out.append(f"{v.name}: there the teacher gives {theirs}.")
            t = self.teacher.get(v.name)
            if t is None or t.worst is None or v.name in compared:
                continue
            w = t.worst
            state = ", ".join(f"{f.name} = {x:.{precision}g}" for f, x in zip(c.features, w.state, strict=True))
            act = ", ".join(f"{a.name} = {y:.{precision}g}" for a, y in zip(c.actions, w.action, strict=True))
            moved = ""
            if w.other_state is not None and w.other_action is not None:
                j = int(np.argmax(w.other_state != w.state))
                moved = (f", and at {c.features[j].name} = {w.other_state[j]:.{precision}g} gives "
                         + ", ".join(f"{a.name} = {y:.{precision}g}"
                                     for a, y in zip(c.actions, w.other_action, strict=True)))
            out.append(f"{v.name}: the teacher breaks it ({t.counterexamples:,} counterexamples found); the worst "
                       f"at {state}: it gives {act}{moved}; `{w.requirement}` fails by {w.violation:.3g}.")
        return out

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write ``verification.json``, ``verification.md`` and ``verification.html`` into ``out_dir`` (atomically);
        returns their paths by format (``json``, ``markdown``, ``html``)."""
        from interp_rl.document import Document
        from interp_rl.io import atomic_write_text

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": atomic_write_text(out / "verification.json", json.dumps(self.to_dict(), indent=1) + "\n")}
        doc = Document()
        counts = self.counts()
        task = self.controller.task or "its task"
        doc.p(f"{counts['proved']} proved, {counts['refuted']} refuted, {counts['unknown']} unknown "
              f"({self.seconds:.2f} s) for the {self.controller.kind} controller of {task} against "
              f"{self.properties.source}.")
        header, rows = self.table()
        doc.table(header, rows)
        props = {p.name: p for p in self.properties.properties}
        doc.bullets([f"**{v.name}**: {props[v.name].statement}" + (f" ({props[v.name].why})" if props[v.name].why
                                                                    else "") for v in self.verdicts])
        if self.teacher:
            doc.p(f"Side by side with the teacher ({self.teacher_source}), searched by random sampling and gradient "
                  "ascent on the violation inside each property's region (a search: finding nothing proves nothing):")
            doc.bullets([f"**{name}**: {line}" for name, line in self.side_by_side()])
        details = self.details()
        if details:
            doc.bullets(details)
        paths.update(doc.write(out, "Verification", stem="verification"))
        return paths


