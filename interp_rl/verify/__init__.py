"""Check a controller against the plant's rules before shipping it.

Every piecewise-affine controller (trees, linear policies, mixtures) splits the state space into
regions with one affine rule each, so a property written in named features and actions (a
property file, :mod:`interp_rl.verify.properties`) is *decided* region by region with linear
programs (:mod:`interp_rl.verify.prove`): ``proved`` on the whole domain box, ``refuted`` with a
concrete counterexample state, or ``unknown`` with the reason. Beside the proof, the share of
visited states that break each property is measured, with a Clopper-Pearson upper bound (the check
Veri_HVAC runs on historical data).

Examples
--------
>>> import numpy as np
>>> from interp_rl.kinds.tree import TreeProgram
>>> from interp_rl.program import Controller, Signal
>>> tree = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[23.5, 0, 0], left=[1, -1, -1],
...                                right=[2, -1, -1], intercept=[[0.0], [1.0], [-1.0]], obs_dim=1,
...                                action_low=[-1], action_high=[1])
>>> ctrl = Controller(tree, features=[Signal("zone_temperature", "°C")], actions=[Signal("setpoint_change", "°C")])
>>> props = '''
... [domain]
... from = "given"
... features.zone_temperature = [10, 35]
... [[property]]
... name = "hot room"
... when = ["zone_temperature > 23.5 [°C]"]
... then = ["setpoint_change <= 0 [°C]"]
... [[property]]
... name = "cold room"
... when = ["zone_temperature <= 18"]
... then = ["setpoint_change >= 0.5"]
... '''
>>> result = verify(ctrl, props)
>>> [(v.name, v.status) for v in result.verdicts]
[('hot room', 'proved'), ('cold room', 'proved')]
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.program import Controller
from interp_rl.verify._lp import maximise
from interp_rl.verify.nonlinear import decide_nonlinear
from interp_rl.verify.properties import (
    Domain,
    Property,
    PropertyError,
    PropertySet,
    load_properties,
    parse_properties,
)
from interp_rl.verify.prove import Counterexample, Verdict, decide
from interp_rl.verify.search import TeacherSearch, search_policy, teacher_verdict, visited_share
from interp_rl.verify.slopes import decide_slope

__all__ = ["Counterexample", "Domain", "Property", "PropertyError", "PropertySet", "Sampled", "Verdict",
           "Verification", "clopper_pearson_upper", "load_properties", "parse_properties", "verify"]
__all__ += ["TeacherSearch", "search_policy"]  # the teacher, side by side

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


def _when_possible(prop: Property, lo: np.ndarray, hi: np.ndarray) -> bool:
    for conj in prop.when:
        if not conj:
            return True
        A = np.array([w.feat for w in conj])
        b = np.array([w.rhs for w in conj])
        if maximise(np.zeros(len(lo)), 0.0, lo, hi, A, b).status != "empty":
            return True
    return False


def _sampled(controller: Controller, prop: Property, states: np.ndarray) -> Sampled | None:
    if prop.kind not in ("rule", "range"):
        return None
    actions = controller.program.predict(states)
    zeros = np.zeros((len(states), len(controller.actions)))
    inside = np.zeros(len(states), dtype=bool)
    for conj in prop.when:
        ok = np.ones(len(states), dtype=bool)
        for w in conj:
            ok &= w.holds(states, zeros)
        inside |= ok
    broken = np.zeros(len(states), dtype=bool)
    for ineq in prop.then:
        broken |= ~ineq.holds(states, actions)
    n, k = int(inside.sum()), int((broken & inside).sum())
    return Sampled(n, k, clopper_pearson_upper(k, n))


def verify(controller: Controller, properties: PropertySet | str | Path, *, states: np.ndarray | None = None,
           task_bounds: tuple[np.ndarray, np.ndarray] | None = None,
           names: Sequence[str] | None = None, teacher: Any | None = None, seed: int = 0) -> Verification:
    """Decide every property of ``properties`` for ``controller``.

    Parameters
    ----------
    controller : Controller
        Any piecewise-affine controller (its program implements ``regions()``), or one whose program bounds its
        actions over a box (``action_bounds``: equations, :mod:`interp_rl.verify.nonlinear`). A controller learnt
        from a discrete action (its metadata names the classes) is verified on the class it plays
        (:func:`interp_rl.verify.classes.class_view`): rules name the logged action, not the scores.
    properties : PropertySet, str or Path
        Parsed properties, a property file's path, or its text (a string holding a newline).
    states : ndarray of shape (n, obs_dim), optional
        Visited states: the domain when the file takes it from them, and the probabilistic check.
    task_bounds : (lower, upper), optional
        The task's observation bounds, for ``[domain] from = "task"``.
    names : sequence of str, optional
        Decide only these properties.
    teacher : object with ``predict(obs) -> actions``, optional
        The neural teacher, searched side by side for states that break each property
        (:func:`~interp_rl.verify.search.search_policy`; its gradient when it has ``action_jacobian``), and
        checked on the visited states; ``teacher`` properties get their verdict from the search.
    seed : int
        Seed of the teacher's search.
    """
    start = time.perf_counter()
    from interp_rl.verify.classes import class_view

    controller = class_view(controller) or controller  # a discrete action: rules speak of the class played
    if not isinstance(properties, PropertySet):
        text = str(properties)
        properties = (parse_properties(text, features=controller.features, actions=controller.actions)
                      if "\n" in text else load_properties(text, features=controller.features,
                                                           actions=controller.actions))
    lo, hi = properties.domain.box(controller.features, states=states, task_bounds=task_bounds)
    chosen = properties.properties
    if names is not None:
        known = [p.name for p in chosen]
        for n in names:
            if n not in known:
                raise PropertyError(f"No property named {n!r} in {properties.source}; there are {', '.join(known)}.")
        chosen = [p for p in chosen if p.name in names]
    for p in chosen:
        if not _when_possible(p, lo, hi):
            raise PropertyError(f"Property {p.name!r}: `when` ({' and '.join(p.when_text)}) never holds in the "
                                "domain; check its signs and numbers.")
    why = ""
    try:
        regions = controller.program.regions()
    except TypeError as exc:
        regions, why = None, str(exc)
    bounded = hasattr(controller.program, "action_bounds")
    verdicts = []
    for p in chosen:
        if p.kind in ("rule", "range") and regions is not None:
            verdicts.append(decide(controller, p, lo, hi, regions))
        elif p.kind in ("rule", "range") and bounded:  # equations: interval branch and bound
            verdicts.append(decide_nonlinear(controller, p, lo, hi))
        elif p.kind == "teacher":
            verdicts.append(Verdict(p.name, "unknown", "agreement with the teacher is tested, not proved: give the "
                                                       "teacher to search it"))
        elif regions is not None:
            verdicts.append(decide_slope(controller, p, lo, hi, regions))
        elif p.kind in ("rule", "range"):
            verdicts.append(Verdict(p.name, "unknown", why))
        else:
            verdicts.append(Verdict(p.name, "unknown", f"{p.kind} properties are decided for piecewise-affine "
                                                       f"controllers; a {controller.kind} program is not one ({why})"))
    sampled = {}
    if states is not None and len(states):
        X = np.asarray(states, dtype=np.float64)
        for p in chosen:
            s = _sampled(controller, p, X)
            if s is not None:
                sampled[p.name] = s
    result = Verification(controller, properties, lo, hi, verdicts, sampled)
    if teacher is not None:
        _teacher_side(result, chosen, teacher, states, seed)
    result.seconds = time.perf_counter() - start
    return result


def _teacher_side(result: Verification, chosen: list[Property], teacher: Any, states: np.ndarray | None,
                  seed: int) -> None:
    """Search the teacher for every property, check it on the visited states, and decide ``teacher`` properties."""
    from interp_rl.errors import InterpRLError

    c = result.controller
    obs_dim, act_dim = getattr(teacher, "obs_dim", c.program.obs_dim), getattr(teacher, "act_dim", len(c.actions))
    if (obs_dim, act_dim) != (c.program.obs_dim, len(c.actions)):
        raise InterpRLError(f"The teacher observes {obs_dim} features and outputs {act_dim} actions, but the "
                            f"controller reads {c.program.obs_dim} and outputs {len(c.actions)}"
                            f"{f' ({c.task})' if c.task else ''}; is it the teacher of this controller?")
    jacobian = None if getattr(teacher, "discrete", False) else getattr(teacher, "action_jacobian", None)
    result.teacher_source = str(getattr(teacher, "source", "") or type(teacher).__name__)
    X = None if states is None or not len(states) else np.asarray(states, dtype=np.float64)
    for k, p in enumerate(chosen):
        found = search_policy(teacher.predict, p, result.lower, result.upper, seed=seed, gradient=jacobian,
                              reference=c.predict if p.kind == "teacher" else None,
                              states=X if p.kind == "teacher" else None, act_dim=act_dim)
        result.teacher[p.name] = found
        if p.kind == "teacher":
            result.verdicts[k] = teacher_verdict(found, p, c, teacher.predict)
        if X is not None:
            share = visited_share(teacher.predict, p, X, reference=c.predict if p.kind == "teacher" else None)
            if share is not None:
                n, broken = share
                (result.sampled if p.kind == "teacher" else result.teacher_sampled)[p.name] = Sampled(
                    n, broken, clopper_pearson_upper(broken, n))



