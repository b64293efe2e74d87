"""Property files: the plant's rules in named features, actions and units.

A property file is TOML. Each ``[[property]]`` has a ``name``, a one-sentence ``why`` and a
``kind``; ``when`` conditions (a list of linear inequalities over features, all of which hold) say
where it applies. The kinds:

``rule`` (the default)
    ``then``: linear inequalities over actions and features that must hold wherever ``when`` does.
``range``
    ``action`` stays ``within = [low, high]`` (in the action's unit).
``monotone``
    ``action`` never falls (``direction = "increasing"``) or never rises (``"decreasing"``) as
    ``feature`` grows, the other features held.
``lipschitz``
    ``action`` changes by at most ``bound`` per unit of ``feature``, the other features held.
``teacher``
    the controller's actions stay within ``epsilon`` of the teacher's (tested on sampled states,
    never proved: the teacher is a neural network).

An inequality reads like ``pole_angle >= 0.02 [rad]`` or ``2*thigh_angle - foot_vx < 0.5``:
sums of numbers times names, compared with ``<=``, ``<``, ``>=``, ``>`` or ``==``, chained as in
``-0.1 <= torso_pitch <= 0.1``; ``abs(...)`` may stand alone on one side. A number may carry its
unit in brackets, which must be the unit of the features and actions it is compared with.

The ``[domain]`` table gives the box of states the properties speak about: ``from = "task"`` (the
task's observation bounds), ``"visited"`` (the range of the visited states, widened by ``margin``
times each feature's range on both sides) or ``"given"`` (only ``[domain.features]``); entries of
``[domain.features]`` (``torso_z = [0.7, 2.0]``) override the others.

Examples
--------
>>> from interp_rl.program import Signal
>>> text = '''
... [[property]]
... name = "push toward the fall"
... why = "A pole leaning and falling right is caught only by pushing the cart right."
... when = ["pole_angle >= 0.02 [rad]", "pole_angular_velocity >= 0.1"]
... then = ["force >= 0"]
... '''
>>> ps = parse_properties(text, features=[Signal("pole_angle", "rad"), Signal("pole_angular_velocity", "rad/s")],
...                       actions=[Signal("force", "N")])
>>> prop = ps.properties[0]
>>> prop.name, prop.kind, [str(c) for c in prop.when[0]], [str(r) for r in prop.then]
('push toward the fall', 'rule', ['-pole_angle <= -0.02', '-pole_angular_velocity <= -0.1'], ['-force <= 0'])
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import interp_rl.verify.report as report
from interp_rl.errors import InterpRLError
from interp_rl.program import Signal

if TYPE_CHECKING:
    from interp_rl.program import Controller
    from interp_rl.verify.prove import Verdict
    from interp_rl.verify.search import TeacherSearch

__all__ = ["DOMAIN_SOURCES", "KINDS", "Domain", "Inequality", "Property", "PropertyError", "PropertySet",
           "load_properties", "parse_properties"]

#: Property kinds (``kind = ...`` in a file).
KINDS = ("rule", "range", "monotone", "lipschitz", "teacher")
#: Where the domain box comes from (``[domain] from = ...``).
DOMAIN_SOURCES = ("task", "visited", "given")


class PropertyError(InterpRLError, ValueError):
    """A property file that cannot be read as written (the message names the property and the bad text)."""


@dataclass(frozen=True)
class Inequality:
    """``feat @ x + act @ a <= rhs`` (``<`` when ``strict``), as parsed from ``text``."""

    feat: np.ndarray
    """``(obs_dim,)`` coefficients of the features."""
    act: np.ndarray
    """``(act_dim,)`` coefficients of the actions."""
    rhs: float
    strict: bool
    text: str = ""
    names: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    """Feature and action names, to print the inequality."""

    def __str__(self) -> str:
        terms = [(c, n) for coefs, names in ((self.feat, self.names[0]), (self.act, self.names[1]))
                 for c, n in zip(coefs, names, strict=False) if c != 0.0]
        out = ""
        for k, (c, n) in enumerate(terms):
            mag = n if abs(c) == 1.0 else f"{abs(c):g}*{n}"
            out += (("-" if c < 0 else "") if k == 0 else (" - " if c < 0 else " + ")) + mag
        return f"{out or '0'} {'<' if self.strict else '<='} {self.rhs:g}"

    def value(self, x: np.ndarray, a: np.ndarray) -> np.ndarray:
        """``feat @ x + act @ a - rhs`` for rows of states ``x`` ``(n, obs_dim)`` and actions ``a`` ``(n, act_dim)``,
        each sum taken exactly rounded (:func:`math.fsum`); the inequality holds where it is ``<= 0`` (``< 0``)."""
        x, a = np.atleast_2d(x), np.atleast_2d(a)
        fi, ai = np.flatnonzero(self.feat), np.flatnonzero(self.act)
        terms = np.concatenate([x[:, fi] * self.feat[fi], a[:, ai] * self.act[ai],
                                np.full((len(x), 1), -self.rhs)], axis=1)
        return np.array([math.fsum(row) for row in terms])

    def holds(self, x: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Whether the inequality holds at each row."""
        v = self.value(x, a)
        return v < 0 if self.strict else v <= 0


@dataclass(frozen=True)
class Domain:
    """How the box of states is made: ``source`` (see :data:`DOMAIN_SOURCES`), ``margin``, and given ranges."""

    source: str = "visited"
    margin: float = 0.1
    given: dict[str, tuple[float, float]] = field(default_factory=dict)

    def box(self, features: Sequence[Signal], *, states: np.ndarray | None = None,
            task_bounds: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` of the box, finite in every feature, or a :class:`PropertyError` saying which
        feature has no finite range and how to give one."""
        n = len(features)
        lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
        if self.source == "task":
            if task_bounds is None:
                raise PropertyError("The domain is the task's observation bounds (from = \"task\"), but no task "
                                    "bounds were given; give the task or another domain source.")
            lo, hi = (np.asarray(v, dtype=np.float64).copy() for v in task_bounds)
        elif self.source == "visited":
            if states is None or len(states) == 0:
                raise PropertyError("The domain is the range of visited states (from = \"visited\"), but no states "
                                    "were given; pass the states (--states FILE.npy) or give the domain.")
            states = np.asarray(states, dtype=np.float64)
            if states.ndim != 2 or states.shape[1] != n:
                raise PropertyError(f"The visited states have shape {states.shape}; expected (n, {n}).")
            lo, hi = states.min(axis=0), states.max(axis=0)
            width = np.where(hi > lo, hi - lo, np.maximum(np.abs(hi), 1.0))
            lo, hi = lo - self.margin * width, hi + self.margin * width
        names = [f.name for f in features]
        for name, (a, b) in self.given.items():
            if name not in names:
                raise PropertyError(f"[domain.features] names {name!r}, which is not a feature; the features are "
                                    f"{', '.join(names)}.")
            lo[names.index(name)], hi[names.index(name)] = a, b
        bad = [names[j] for j in range(n) if not (np.isfinite(lo[j]) and np.isfinite(hi[j]))]
        if bad:
            raise PropertyError(f"The domain has no finite range for {', '.join(bad)}; give "
                                f"{bad[0]} = [low, high] in [domain.features] or take the domain from the visited "
                                "states (from = \"visited\").")
        return lo, hi


@dataclass
class Property:
    """One property of a :class:`PropertySet` (see the module docstring for the kinds)."""

    name: str
    kind: str
    why: str = ""
    when: list[list[Inequality]] = field(default_factory=lambda: [[]])
    """Where it applies: any of these conjunctions (``abs(e) >= c`` splits one into two); ``[[]]``: everywhere."""
    then: list[Inequality] = field(default_factory=list)
    """``rule`` and ``range``: what must hold there (every inequality)."""
    action: int = -1
    """``monotone``, ``lipschitz``: the action's index."""
    feature: int = -1
    """``monotone``, ``lipschitz``: the feature's index."""
    direction: int = 1
    """``monotone``: +1 increasing, -1 decreasing."""
    bound: float = math.inf
    """``lipschitz``: largest change of the action per unit of the feature; ``teacher``: ``epsilon``."""
    when_text: list[str] = field(default_factory=list)
    then_text: list[str] = field(default_factory=list)

    @property
    def statement(self) -> str:
        """The property as people wrote it: ``when A and B: C``."""
        head = f"when {' and '.join(self.when_text)}: " if self.when_text else ""
        return head + ", ".join(self.then_text)

    def detail(self, verdict: Verdict, controller: Controller, precision: int = 4) -> str | None:
        """Its paragraph in the report: where it is refuted, or why it is unknown (``None`` when proved)."""
        if verdict.counterexample is not None:
            return report.counterexample_detail(verdict.name, verdict.counterexample, controller, precision)
        if verdict.status == "unknown":
            return f"{verdict.name}: unknown: {verdict.reason}."
        return None

    def teacher_detail(self, verdict: Verdict, search: TeacherSearch | None, controller: Controller,
                       precision: int = 4) -> str | None:
        """Its paragraph on the teacher in the report: the teacher's worst counterexample (``None``: none found)."""
        if self.kind == "teacher":
            return report.teacher_gives_detail(verdict.name, verdict.counterexample, controller, precision)
        return None if search is None else report.teacher_counterexample_detail(verdict.name, search, controller,
                                                                                 precision)


@dataclass
class PropertySet:
    """The properties of one file, with the domain they speak about."""

    properties: list[Property]
    domain: Domain = field(default_factory=Domain)
    task: str = ""
    source: str = ""


# --------------------------------------------------------------------------- parsing
_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<unit>\[[^\]]*\])|"
                    r"(?P<op><=|>=|==|<|>|\*|/|\+|-|\(|\))|(?P<name>[A-Za-z_][A-Za-z0-9_.]*))")
_COMPARE = ("<=", ">=", "==", "<", ">")


@dataclass
class _Lin:
    """A linear expression: ``{signal: coef} + const``; ``units`` of its numbers; ``absolute``: ``abs(...)``."""

    coef: dict[str, float] = field(default_factory=dict)
    const: float = 0.0
    units: list[str] = field(default_factory=list)
    absolute: bool = False

    def scaled(self, k: float) -> _Lin:
        return _Lin({n: k * c for n, c in self.coef.items()}, k * self.const, list(self.units), self.absolute)

    def plus(self, other: _Lin, sign: float = 1.0) -> _Lin:
        coef = dict(self.coef)
        for n, c in other.coef.items():
            coef[n] = coef.get(n, 0.0) + sign * c
        return _Lin(coef, self.const + sign * other.const, self.units + other.units)


class _Parser:
    def __init__(self, text: str, where: str, names: set[str]) -> None:
        self.text, self.where, self.names = text, where, names
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                self.fail(f"cannot read {text[pos:].strip()[:20]!r}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def fail(self, why: str) -> None:
        raise PropertyError(f"{self.where}: {self.text!r}: {why}.")

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.i += 1
        return tok

    def chain(self) -> list[tuple[_Lin, str, _Lin]]:
        sides, ops = [self.expr()], []
        while self.peek()[1] in _COMPARE:
            ops.append(self.take()[1])
            sides.append(self.expr())
        if self.peek()[0] != "end":
            self.fail(f"unexpected {self.peek()[1]!r}")
        if not ops:
            self.fail("expected a comparison (<=, <, >=, >, ==)")
        return [(sides[k], op, sides[k + 1]) for k, op in enumerate(ops)]

    def expr(self) -> _Lin:
        out = self.term()
        while self.peek()[1] in ("+", "-"):
            sign = 1.0 if self.take()[1] == "+" else -1.0
            rhs = self.term()
            if out.absolute or rhs.absolute:
                self.fail("abs(...) must stand alone on its side of the comparison")
            out = out.plus(rhs, sign)
        return out

    def term(self) -> _Lin:
        out = self.factor()
        while self.peek()[1] in ("*", "/"):
            op = self.take()[1]
            rhs = self.factor()
            if op == "/":
                if rhs.coef or rhs.const == 0.0:
                    self.fail("divide only by a non-zero number")
                out = out.scaled(1.0 / rhs.const)
            elif not rhs.coef and not rhs.absolute:
                out = out.scaled(rhs.const)
            elif not out.coef and not out.absolute:
                if out.const < 0 and rhs.absolute:
                    self.fail("abs(...) may only be multiplied by a positive number")
                out = _Lin(rhs.scaled(out.const).coef, rhs.const * out.const, out.units + rhs.units, rhs.absolute)
            else:
                self.fail("the product of two signals is not linear")
        return out

    def factor(self) -> _Lin:
        kind, text = self.take()
        if kind == "num":
            value = float(text)
            units = []
            if self.peek()[0] == "unit":
                units.append(self.take()[1][1:-1].strip())
            return _Lin(const=value, units=units)
        if text == "-":
            return self.factor().scaled(-1.0)
        if text == "(":
            inner = self.expr()
            if self.take()[1] != ")":
                self.fail("a '(' is not closed")
            return inner
        if kind == "name" and text == "abs" and self.peek()[1] == "(":
            self.take()
            inner = self.expr()
            if self.take()[1] != ")":
                self.fail("a '(' is not closed")
            inner.absolute = True
            return inner
        if kind == "name":
            if text not in self.names:
                self.fail(f"{text!r} is not a feature or action of the controller; they are "
                          f"{', '.join(sorted(self.names))}")
            return _Lin({text: 1.0})
        self.fail(f"unexpected {text!r}" if text else "the expression ends too early")
        raise AssertionError  # unreachable


def _inequalities(text: str, where: str, features: Sequence[Signal], actions: Sequence[Signal], *,
                  allow_actions: bool, in_when: bool) -> list[list[Inequality]]:
    """The inequalities ``text`` says, as a disjunction of conjunctions (one conjunction unless ``abs(e) >= c``)."""
    units = {s.name: s.unit for s in [*features, *actions]}
    names = {s.name for s in features} | ({s.name for s in actions} if allow_actions else set())
    parser = _Parser(text, where, names | {a.name for a in actions})
    if not allow_actions:
        for kind, tok in parser.tokens:
            if kind == "name" and tok in {a.name for a in actions}:
                parser.fail(f"{tok!r} is an action; `when` speaks of features only")
    fnames, anames = [f.name for f in features], [a.name for a in actions]
    disjuncts: list[list[Inequality]] = [[]]
    for lhs, op, rhs in parser.chain():
        signals = {n for n, c in (lhs.coef | rhs.coef).items() if c != 0.0}
        for unit in lhs.units + rhs.units:
            wrong = sorted(n for n in signals if units.get(n, "") != unit)
            if wrong:
                parser.fail(f"{wrong[0]} is in {units[wrong[0]] or 'no unit'!r}, not {unit!r}")
        if lhs.absolute and rhs.absolute:
            parser.fail("abs(...) on both sides is not linear")
        if rhs.absolute:  # c <= abs(e)  ->  abs(e) >= c
            lhs, rhs, op = rhs, lhs, {"<=": ">=", "<": ">", ">=": "<=", ">": "<", "==": "=="}[op]
        if lhs.absolute and (rhs.coef or op == "=="):
            parser.fail("abs(...) must be compared with a number")
        diff = lhs.plus(rhs, -1.0)  # diff op 0
        if not any(diff.coef.values()):
            parser.fail("no feature or action is left once both sides are gathered")

        def make(sign: float, strict: bool, d: _Lin = diff) -> Inequality:
            feat = np.array([sign * d.coef.get(n, 0.0) for n in fnames])
            act = np.array([sign * d.coef.get(n, 0.0) for n in anames])
            return Inequality(feat + 0.0, act + 0.0, -sign * d.const + 0.0, strict, text, (tuple(fnames),
                                                                                       tuple(anames)))

        if lhs.absolute:
            e = _Lin(dict(lhs.coef), lhs.const)
            c = rhs.const
            strict = op in ("<", ">")
            if op in ("<=", "<"):  # -c <= e <= c
                both = [make(1.0, strict, e.plus(_Lin(const=c), -1.0)), make(-1.0, strict, e.plus(_Lin(const=c)))]
                disjuncts = [d + both for d in disjuncts]
            else:  # e >= c or e <= -c
                if not in_when:
                    parser.fail("abs(...) >= c is an either-or; in `then` write it as two properties")
                up, down = make(-1.0, strict, e.plus(_Lin(const=c), -1.0)), make(1.0, strict, e.plus(_Lin(const=c)))
                disjuncts = [d + [one] for d in disjuncts for one in (up, down)]
            continue
        if op in ("<=", "<"):
            new = [make(1.0, op == "<")]
        elif op in (">=", ">"):
            new = [make(-1.0, op == ">")]
        else:
            new = [make(1.0, False), make(-1.0, False)]
        disjuncts = [d + new for d in disjuncts]
    return disjuncts


def _lookup(raw: Any, signals: Sequence[Signal], what: str, where: str) -> int:
    names = [s.name for s in signals]
    if raw not in names:
        raise PropertyError(f"{where}: {what} {raw!r} is not one of the controller's {what}s "
                            f"({', '.join(names)}).")
    return names.index(raw)


def _number(raw: Any, key: str, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(float(raw)):
        raise PropertyError(f"{where}: {key} must be a finite number; got {raw!r}.")
    return float(raw)


def _strings(raw: Any, key: str, where: str) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw]
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise PropertyError(f"{where}: {key} must be a list of inequalities as strings; got {raw!r}.")
    return list(raw)


_KEYS = {"name", "why", "kind", "when", "then", "action", "within", "feature", "direction", "bound", "epsilon"}


def _property(raw: Any, index: int, features: Sequence[Signal], actions: Sequence[Signal]) -> Property:
    if not isinstance(raw, dict):
        raise PropertyError(f"[[property]] {index + 1} is not a table.")
    name = str(raw.get("name") or f"property {index + 1}")
    where = f"Property {name!r}"
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise PropertyError(f"{where}: unknown key {unknown[0]!r}; a property has {', '.join(sorted(_KEYS))}.")
    kind = str(raw.get("kind", "rule"))
    if kind not in KINDS:
        raise PropertyError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}.")
    when_text = _strings(raw.get("when"), "when", where)
    when: list[list[Inequality]] = [[]]
    for text in when_text:
        parts = _inequalities(text, where, features, actions, allow_actions=False, in_when=True)
        when = [a + b for a in when for b in parts]
    prop = Property(name=name, kind=kind, why=str(raw.get("why", "")), when=when, when_text=when_text)
    needed = {"rule": {"then"}, "range": {"action", "within"}, "monotone": {"action", "feature"},
              "lipschitz": {"action", "feature", "bound"}, "teacher": {"epsilon"}}[kind]
    missing = sorted(needed - set(raw))
    if missing:
        raise PropertyError(f"{where}: a {kind} property needs {', '.join(missing)}.")
    if kind == "rule":
        prop.then_text = _strings(raw.get("then"), "then", where)
        for text in prop.then_text:
            (conj,) = _inequalities(text, where, features, actions, allow_actions=True, in_when=False)
            prop.then += conj
        if not prop.then:
            raise PropertyError(f"{where}: `then` is empty; say what must hold.")
    if kind in ("range", "monotone", "lipschitz"):
        prop.action = _lookup(raw["action"], actions, "action", where)
    if kind == "range":
        within = raw["within"]
        if not isinstance(within, list) or len(within) != 2:
            raise PropertyError(f"{where}: within must be [low, high]; got {within!r}.")
        low, high = (_number(v, "within", where) for v in within)
        if low > high:
            raise PropertyError(f"{where}: within = [{low:g}, {high:g}] is empty (low above high).")
        a = actions[prop.action].name
        prop.then_text = [f"{low!r} <= {a} <= {high!r}"]  # every digit: the text is parsed back
        (prop.then,) = _inequalities(prop.then_text[0], where, features, actions, allow_actions=True, in_when=False)
    if kind in ("monotone", "lipschitz"):
        prop.feature = _lookup(raw["feature"], features, "feature", where)
        a, f = actions[prop.action].name, features[prop.feature].name
    if kind == "monotone":
        direction = str(raw.get("direction", "increasing"))
        if direction not in ("increasing", "decreasing"):
            raise PropertyError(f"{where}: direction must be 'increasing' or 'decreasing'; got {direction!r}.")
        prop.direction = 1 if direction == "increasing" else -1
        prop.then_text = [f"{a} never {'falls' if prop.direction > 0 else 'rises'} as {f} grows"]
    if kind == "lipschitz":
        prop.bound = _number(raw["bound"], "bound", where)
        if prop.bound < 0:
            raise PropertyError(f"{where}: bound must be >= 0; got {prop.bound:g}.")
        prop.then_text = [f"{a} changes by at most {prop.bound:g} per unit of {f}"]
    if kind == "teacher":
        prop.bound = _number(raw["epsilon"], "epsilon", where)
        if prop.bound <= 0:
            raise PropertyError(f"{where}: epsilon must be > 0; got {prop.bound:g}.")
        prop.then_text = [f"every action within {prop.bound:g} of the teacher's"]
    return prop


def parse_properties(text: str, *, features: Sequence[Signal], actions: Sequence[Signal],
                     source: str = "properties") -> PropertySet:
    """Read a property file's text for a controller with these features and actions.

    Raises :class:`PropertyError` naming the property and what is wrong with it (an unknown feature,
    a unit that is not the feature's, a kind's missing key, ...).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PropertyError(f"{source} is not valid TOML: {exc}.") from None
    unknown = sorted(set(data) - {"property", "domain", "task"})
    if unknown:
        raise PropertyError(f"{source}: unknown table or key {unknown[0]!r}; expected [[property]], [domain] and "
                            "task.")
    raw_props = data.get("property", [])
    if not isinstance(raw_props, list) or not raw_props:
        raise PropertyError(f"{source} has no [[property]]; write at least one.")
    props = [_property(p, i, features, actions) for i, p in enumerate(raw_props)]
    seen: set[str] = set()
    for p in props:
        if p.name in seen:
            raise PropertyError(f"{source}: two properties are named {p.name!r}; names must differ.")
        seen.add(p.name)
    dom = data.get("domain", {})
    if not isinstance(dom, dict):
        raise PropertyError(f"{source}: [domain] must be a table.")
    extra = sorted(set(dom) - {"from", "margin", "features"})
    if extra:
        raise PropertyError(f"{source}: [domain] has unknown key {extra[0]!r}; expected from, margin, features.")
    src = str(dom.get("from", "visited"))
    if src not in DOMAIN_SOURCES:
        raise PropertyError(f"{source}: [domain] from = {src!r}; expected one of {', '.join(DOMAIN_SOURCES)}.")
    margin = _number(dom.get("margin", 0.1), "margin", f"{source}: [domain]")
    if margin < 0:
        raise PropertyError(f"{source}: [domain] margin must be >= 0; got {margin:g}.")
    given: dict[str, tuple[float, float]] = {}
    feats = dom.get("features", {})
    if not isinstance(feats, dict):
        raise PropertyError(f"{source}: [domain.features] must be a table of name = [low, high].")
    for name, rng in feats.items():
        where = f"{source}: [domain.features] {name}"
        if not isinstance(rng, list) or len(rng) != 2:
            raise PropertyError(f"{where} must be [low, high]; got {rng!r}.")
        lo, hi = (_number(v, name, where) for v in rng)
        if lo > hi:
            raise PropertyError(f"{where} = [{lo:g}, {hi:g}] is empty (low above high).")
        given[str(name)] = (lo, hi)
    _lookup_all(given, features, source)
    return PropertySet(props, Domain(src, margin, given), str(data.get("task", "")), source)


def _lookup_all(given: dict[str, tuple[float, float]], features: Sequence[Signal], source: str) -> None:
    names = [f.name for f in features]
    for name in given:
        if name not in names:
            raise PropertyError(f"{source}: [domain.features] names {name!r}, which is not a feature; the features "
                                f"are {', '.join(names)}.")


def load_properties(path: str | Path, *, features: Sequence[Signal], actions: Sequence[Signal]) -> PropertySet:
    """:func:`parse_properties` of a file (a missing or unreadable file is a :class:`PropertyError`)."""
    p = Path(path)
    if not p.is_file():
        raise PropertyError(f"Property file {str(path)!r} does not exist.")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PropertyError(f"Property file {str(path)!r} cannot be read: {exc}.") from None
    return parse_properties(text, features=features, actions=actions, source=repr(str(path)))
