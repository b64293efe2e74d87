"""Property files: the plant's rules in named features, actions and units.

A property file is TOML. Each ``[[property]]`` has a ``name``, a one-sentence ``why`` and a
``kind``; ``when`` conditions (a list of linear inequalities over features, all of which hold) say
where it applies. The built-in kinds (:mod:`interp_rl.verify.kinds`):

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

A kind is a subclass of :class:`Property` registered with :func:`register_property`
(:data:`PROPERTY_KINDS` maps each name to its class): it reads its own keys of the table
(:meth:`Property.from_table`, through a :class:`Table`) and carries its behaviour, so a new kind
is one class.

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
>>> type(prop).__name__, list(PROPERTY_KINDS)
('RuleProperty', ['rule', 'range', 'monotone', 'lipschitz', 'teacher'])
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

import interp_rl.verify.report as report
from interp_rl.errors import InterpRLError
from interp_rl.program import Signal

if TYPE_CHECKING:
    from interp_rl.program import Controller, Region
    from interp_rl.verify.prove import Verdict
    from interp_rl.verify.search import Jacobian, Predict, StateProblem, TeacherSearch

__all__ = ["DEFAULT_KIND", "DOMAIN_SOURCES", "PROPERTY_KINDS", "Domain", "Inequality", "Property", "PropertyError",
           "PropertySet", "Table", "load_properties", "parse_properties", "register_property"]

#: The kind of a ``[[property]]`` that names none.
DEFAULT_KIND = "rule"
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
    """One property of a :class:`PropertySet`: where it applies (``when``) and what it requires.

    A kind of property is a subclass registered with :func:`register_property` (the built-ins are in
    :mod:`interp_rl.verify.kinds`). It reads its own keys of a ``[[property]]`` table (:meth:`from_table`) and
    carries its behaviour: how it is decided on a controller (:meth:`decide`), searched on a policy
    (:meth:`search_problem`, :meth:`search_verdict`), checked on visited states (:meth:`visited_share`) and told in
    the report (:meth:`detail`, :meth:`teacher_detail`); what the other stages may do with it is declared by the
    class flags below.
    """

    kind: ClassVar[str] = ""
    """Its name in a file (``kind = "..."``)."""
    keys: ClassVar[tuple[str, ...]] = ()
    """The kind's own keys of a ``[[property]]`` table, besides ``name``, ``why``, ``kind`` and ``when``."""
    needs: ClassVar[tuple[str, ...]] = ()
    """Those of its keys that a property of the kind must have."""
    pointwise: ClassVar[bool] = False
    """Whether it is ``then`` holding at every state of ``when``, state by state (linear requirements on the state and
    the action there): equations bound it over boxes (:mod:`interp_rl.verify.nonlinear`), repairs refit or cut the
    pieces that break it (:mod:`interp_rl.verify.refit`, :mod:`interp_rl.verify.cuts`), and a controller of classes
    keeps it when choosing the class a piece plays (:mod:`interp_rl.verify.classes`)."""
    against_teacher: ClassVar[bool] = False
    """Whether it compares the controller with the teacher: the teacher is searched with the controller as the
    reference (on the visited states too), the verdict comes from that search (:meth:`search_verdict`), and its
    check on the visited states needs both."""
    mend_pairs: ClassVar[bool] = False
    """Whether a controller of classes mends a pair of states that breaks it by making one of the pair's two pieces
    play the other's class (:func:`interp_rl.verify.classes.repair_classes`)."""

    name: str
    why: str = ""
    when: list[list[Inequality]] = field(default_factory=lambda: [[]])
    """Where it applies: any of these conjunctions (``abs(e) >= c`` splits one into two); ``[[]]``: everywhere."""
    then: list[Inequality] = field(default_factory=list)
    """What must hold there (every inequality), for the kinds that say it state by state."""
    when_text: list[str] = field(default_factory=list)
    then_text: list[str] = field(default_factory=list)

    @property
    def statement(self) -> str:
        """The property as people wrote it: ``when A and B: C``."""
        head = f"when {' and '.join(self.when_text)}: " if self.when_text else ""
        return head + ", ".join(self.then_text)

    # -- reading
    @classmethod
    def from_table(cls, table: Table) -> Property:
        """A property of this kind from its ``[[property]]`` table: its own keys (those of :attr:`needs` are there),
        besides what every property has, read already (``table.common``). A bad value is a :class:`PropertyError`
        naming the property, the value and what was expected (``table.error``)."""
        raise NotImplementedError(f"{cls.__name__} does not say how its table is read.")

    # -- deciding
    def decide(self, controller: Controller, lo: np.ndarray, hi: np.ndarray, regions: list[Region] | None
               ) -> Verdict:
        """Decide it for ``controller`` on the box ``[lo, hi]``: proved, refuted with a counterexample, or unknown
        with the reason. ``regions`` are the controller's (:meth:`~interp_rl.program.ProgramBase.regions`), or
        ``None`` when it is not piecewise affine (``controller.program.cannot("regions")`` says why)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how it is decided.")

    # -- searching a policy
    def search_problem(self, predict: Predict, lo: np.ndarray, hi: np.ndarray, *, act_dim: int,
                       reference: Predict | None, jacobian: Jacobian, h: np.ndarray) -> StateProblem:
        """What :func:`~interp_rl.verify.search.search_policy` searches for it on ``predict``: the candidates, the
        violation and its gradient (``jacobian``; ``h``, the finite differences' steps), and the counterexample."""
        raise NotImplementedError(f"{type(self).__name__} does not say how it is searched.")

    def search_verdict(self, search: TeacherSearch, controller: Controller, teacher: Predict) -> Verdict | None:
        """Its verdict from the search of the teacher, for a kind decided that way (``None``: the search decides
        nothing; the controller's verdict stands)."""
        return None

    def visited_share(self, predict: Predict, states: np.ndarray, *, reference: Predict | None = None
                      ) -> tuple[int, int] | None:
        """``(visited states where when holds, how many of them break it)`` for the policy ``predict`` (and the
        ``reference`` policy, for a kind that compares two); ``None`` for a kind that is not checked state by
        state. The Clopper-Pearson bound of the share is taken from these."""
        return None

    def when_holds(self, X: np.ndarray, act_dim: int) -> np.ndarray:
        """Whether ``when`` (any of its conjunctions) holds at each row of ``X`` ``(n, obs_dim)``."""
        inside = np.zeros(len(X), dtype=bool)
        zeros = np.zeros((len(X), act_dim))
        for conj in self.when:
            ok = np.ones(len(X), dtype=bool)
            for w in conj:
                ok &= w.holds(X, zeros)
            inside |= ok
        return inside

    # -- the report
    def detail(self, verdict: Verdict, controller: Controller, precision: int = 4) -> str | None:
        """Its paragraph in the report: where it is refuted, or why it is unknown (``None`` when proved)."""
        if verdict.counterexample is not None:
            return report.counterexample_detail(verdict.name, verdict.counterexample, controller, precision)
        if verdict.status == "unknown":
            return f"{verdict.name}: unknown: {verdict.reason}."
        return None

    def teacher_detail(self, verdict: Verdict, search: TeacherSearch | None, controller: Controller,
                       precision: int = 4) -> str | None:
        """Its paragraph on the teacher in the report: the teacher's worst counterexample (``None``: not searched,
        or none found)."""
        return None if search is None else report.teacher_counterexample_detail(verdict.name, search, controller,
                                                                                 precision)


P = TypeVar("P", bound=type[Property])

#: kind -> property class; :func:`parse_properties` reads every kind registered here (the built-ins:
#: :mod:`interp_rl.verify.kinds`, registered when :mod:`interp_rl.verify` is imported).
PROPERTY_KINDS: dict[str, type[Property]] = {}


def register_property(cls: P) -> P:
    """Class decorator: make a property kind readable from a file (``cls.kind`` names it there).

    Registering a second class under a taken kind is an error, unless it replaces the class of the same name
    (a module reloaded).
    """
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"{cls.__name__} needs a class attribute 'kind' naming its property kind.")
    held = PROPERTY_KINDS.get(kind)
    if held is not None and held.__qualname__ != cls.__qualname__:
        raise TypeError(f"Property kind {kind!r} is taken by {held.__qualname__}.")
    PROPERTY_KINDS[kind] = cls
    return cls


def __getattr__(name: str) -> Any:
    if name == "KINDS":  # the old tuple of kinds' names, now whatever is registered
        return tuple(PROPERTY_KINDS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
            tag = m.lastgroup or ""
            self.tokens.append((tag, m.group(tag)))
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
        tag, text = self.take()
        if tag == "num":
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
        if tag == "name" and text == "abs" and self.peek()[1] == "(":
            self.take()
            inner = self.expr()
            if self.take()[1] != ")":
                self.fail("a '(' is not closed")
            inner.absolute = True
            return inner
        if tag == "name":
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
        for tag, tok in parser.tokens:
            if tag == "name" and tok in {a.name for a in actions}:
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


#: What every ``[[property]]`` may have, whatever its kind.
_COMMON_KEYS = ("name", "why", "kind", "when")


@dataclass(frozen=True)
class Table:
    """One ``[[property]]`` table as its kind reads it (:meth:`Property.from_table`): the raw keys, the controller's
    features and actions, and what every property has (``name``, ``why``, ``when``), read already. Its readers give
    the one-line errors of a property file: they name the property, the bad value and what was expected."""

    raw: dict[str, Any]
    features: Sequence[Signal]
    actions: Sequence[Signal]
    name: str
    why: str = ""
    when: list[list[Inequality]] = field(default_factory=lambda: [[]])
    when_text: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        """``Property 'name'``: how errors name it."""
        return f"Property {self.name!r}"

    @property
    def common(self) -> dict[str, Any]:
        """``name``, ``why``, ``when`` and ``when_text``, as keyword arguments of the kind's class."""
        return {"name": self.name, "why": self.why, "when": self.when, "when_text": self.when_text}

    def error(self, message: str) -> PropertyError:
        """``Property 'name': message`` (to raise)."""
        return PropertyError(f"{self.where}: {message}")

    def action(self, key: str = "action") -> int:
        """The index of the action ``key`` names."""
        return _lookup(self.raw[key], self.actions, "action", self.where)

    def feature(self, key: str = "feature") -> int:
        """The index of the feature ``key`` names."""
        return _lookup(self.raw[key], self.features, "feature", self.where)

    def number(self, key: str) -> float:
        """The finite number ``key`` holds."""
        return _number(self.raw[key], key, self.where)

    def interval(self, key: str) -> tuple[float, float]:
        """``(low, high)`` from ``key = [low, high]``, finite, low not above high."""
        pair = self.raw[key]
        if not isinstance(pair, list) or len(pair) != 2:
            raise self.error(f"{key} must be [low, high]; got {pair!r}.")
        low, high = (_number(v, key, self.where) for v in pair)
        if low > high:
            raise self.error(f"{key} = [{low:g}, {high:g}] is empty (low above high).")
        return low, high

    def strings(self, key: str) -> list[str]:
        """The strings ``key`` holds (one string, or a list of them; none when it is missing)."""
        return _strings(self.raw.get(key), key, self.where)

    def requirements(self, text: str) -> list[Inequality]:
        """The inequalities over features and actions ``text`` says (as ``then`` reads them: all must hold)."""
        (conj,) = _inequalities(text, self.where, self.features, self.actions, allow_actions=True, in_when=False)
        return conj

    def conditions(self, text: str) -> list[list[Inequality]]:
        """The conditions over features ``text`` says (as ``when`` reads them: any of the conjunctions)."""
        return _inequalities(text, self.where, self.features, self.actions, allow_actions=False, in_when=True)


def _property(raw: Any, index: int, features: Sequence[Signal], actions: Sequence[Signal]) -> Property:
    if not isinstance(raw, dict):
        raise PropertyError(f"[[property]] {index + 1} is not a table.")
    name = str(raw.get("name") or f"property {index + 1}")
    where = f"Property {name!r}"
    keys = set(_COMMON_KEYS).union(*(k.keys for k in PROPERTY_KINDS.values()))
    unknown = sorted(set(raw) - keys)
    if unknown:
        raise PropertyError(f"{where}: unknown key {unknown[0]!r}; a property has {', '.join(sorted(keys))}.")
    kind = str(raw.get("kind", DEFAULT_KIND))
    cls = PROPERTY_KINDS.get(kind)
    if cls is None:
        raise PropertyError(f"{where}: kind {kind!r} is not one of {', '.join(PROPERTY_KINDS)}.")
    table = Table(raw, features, actions, name, str(raw.get("why", "")))
    when_text = table.strings("when")
    when: list[list[Inequality]] = [[]]
    for text in when_text:
        when = [a + b for a in when for b in table.conditions(text)]
    missing = sorted(set(cls.needs) - set(raw))
    if missing:
        raise PropertyError(f"{where}: a {kind} property needs {', '.join(missing)}.")
    return cls.from_table(Table(raw, features, actions, name, table.why, when, when_text))


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
