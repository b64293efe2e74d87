"""Searching a policy for states that break a property: random sampling, then gradient ascent.

A neural teacher is not piecewise affine, so its properties cannot be decided region by region
(:mod:`interp_rl.verify.prove`); they can be *searched*. :func:`search_policy` draws states
uniformly from the domain box where ``when`` holds (the box is first tightened by ``when``'s
single-feature bounds; either-or conditions are sampled one conjunction at a time), keeps the
states where the policy breaks the property, and climbs the violation from the most promising
states by projected gradient ascent: steps stay in the box and are refused when they leave
``when``. The gradient is the policy's own when it offers one (``gradient(obs) -> (n, act_dim,
obs_dim)``, as :meth:`envs.sb3.SB3Teacher.action_jacobian` does), else central finite differences
through one batched ``predict`` call per step. A counterexample is counted only after ``predict``
has been run on it and shown to break the property with ``when`` holding, inside the domain.

What is searched is the property's own (:meth:`~interp_rl.verify.properties.Property.search_problem`): a
:class:`StateProblem` for the kinds that speak of single states, a :class:`PairProblem` for those that speak
of how an action changes along a feature. For the built-in kinds:

``rule``, ``range``
    the largest ``feat @ x + act @ predict(x) - rhs`` over the ``then`` inequalities.
``monotone``
    pairs of states that differ in ``feature`` alone, where the action moves the wrong way by
    more than :data:`MONOTONE_TOLERANCE`.
``lipschitz``
    pairs as for ``monotone``, where ``|change of action| / change of feature > bound``.
``teacher``
    states where some action of ``predict`` and of ``reference`` (the controller) differ by more
    than ``epsilon``; the visited states, when given, are tried as well.

Finding nothing proves nothing; finding something is a concrete state to look at.

Examples
--------
>>> import numpy as np
>>> from interp_rl.program import Signal
>>> from interp_rl.verify.properties import parse_properties
>>> props = parse_properties('''
... [[property]]
... name = "gentle"
... when = ["x >= 0"]
... then = ["u <= 0.9"]
... ''', features=[Signal("x")], actions=[Signal("u")])
>>> bump = lambda X: np.exp(-((X - 0.8) / 0.01) ** 2)  # breaks it only on a sliver around x = 0.8
>>> found = search_policy(bump, props.properties[0], np.array([-1.0]), np.array([1.0]), samples=50, seed=0)
>>> found.sampled_violations, found.counterexamples > 0, round(float(found.worst.state[0]), 2)
(0, True, 0.8)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from interp_rl.verify.properties import Inequality, Property
from interp_rl.verify.prove import Counterexample

if TYPE_CHECKING:
    from interp_rl.verify.kinds.pair import PairProperty

__all__ = ["MONOTONE_TOLERANCE", "PairProblem", "StateProblem", "TeacherSearch", "search_policy", "teacher_verdict",
           "visited_share"]

Predict = Callable[[np.ndarray], np.ndarray]
"""Batched deterministic actions: ``(n, obs_dim) -> (n, act_dim)``."""
Jacobian = Callable[[np.ndarray], np.ndarray]
"""``d predict / d obs``: ``(n, obs_dim) -> (n, act_dim, obs_dim)``."""

#: ``monotone``: a pair counts only when the action moves the wrong way by more than this.
MONOTONE_TOLERANCE = 1e-9
#: Central finite differences step, as a share of each feature's range in the domain.
FD_STEP = 1e-4
#: ``monotone``, ``lipschitz``: the smallest change of the feature in a pair, as a share of its range.
PAIR_STEP = 1e-3


@dataclass
class TeacherSearch:
    """What :func:`search_policy` found for one property."""

    name: str
    kind: str
    counterexamples: int
    """Distinct states (``monotone``, ``lipschitz``: pairs) found where the policy breaks the property: the
    breaking ones among the samples and the visited states, and the ascents that end breaking it."""
    worst: Counterexample | None
    """The largest violation found (``region`` names the policy: ``teacher``)."""
    samples: int
    """Random states (pairs) of the domain where ``when`` holds, tried."""
    sampled_violations: int = 0
    """Of those, how many break the property."""
    visited: int = 0
    """Visited states where ``when`` holds, tried (``teacher`` kind)."""
    ascents: int = 0
    """Gradient ascents run (from the states closest to breaking it)."""
    steps: int = 0
    """The most steps an ascent took."""
    ascent_violations: int = 0
    """Ascents that ended on a state breaking the property."""
    evaluations: int = 0
    """States passed to ``predict`` in all."""
    gradient: str = "finite differences"
    """``"policy"`` (the policy's own gradient) or ``"finite differences"``."""
    seconds: float = 0.0
    note: str = ""
    """Why nothing could be tried, when nothing was."""

    @property
    def tried(self) -> str:
        """``20,000 + 64 ascents`` (with ``+ 256 visited`` when visited states were tried)."""
        visited = f" + {self.visited:,} visited" if self.visited else ""
        return f"{self.samples:,}{visited} + {self.ascents} ascents"

    def summary(self) -> str:
        """``37 counterexamples`` or ``none found in 20,000 + 64 ascents``."""
        if self.note and not self.samples and not self.visited:
            return f"not searched: {self.note}"
        if self.counterexamples:
            return f"{self.counterexamples:,} counterexample{'s' if self.counterexamples != 1 else ''}"
        return f"none found in {self.tried}"

    def to_dict(self, feature_names: Sequence[str], action_names: Sequence[str]) -> dict[str, Any]:
        worst = None
        if self.worst is not None:
            w = self.worst
            worst = {"state": dict(zip(feature_names, map(float, w.state), strict=True)),
                     "action": dict(zip(action_names, map(float, w.action), strict=True)),
                     "requirement": w.requirement, "violation": float(w.violation)}
            if w.other_state is not None and w.other_action is not None:
                worst["other_state"] = dict(zip(feature_names, map(float, w.other_state), strict=True))
                worst["other_action"] = dict(zip(action_names, map(float, w.other_action), strict=True))
                worst["other_region"] = w.other_region
        return {"counterexamples": self.counterexamples, "worst": worst, "samples": self.samples,
                "sampled_violations": self.sampled_violations, "visited": self.visited, "ascents": self.ascents,
                "steps": self.steps, "ascent_violations": self.ascent_violations, "evaluations": self.evaluations,
                "gradient": self.gradient, "seconds": self.seconds, "note": self.note}


# --------------------------------------------------------------------------- the problem, by kind
@dataclass
class _Conj:
    """One conjunction of ``when``: its inequalities and the domain box tightened by its single-feature ones."""

    when: list[Inequality]
    lo: np.ndarray
    hi: np.ndarray


def _conjunctions(prop: Property, lo: np.ndarray, hi: np.ndarray) -> list[_Conj]:
    out = []
    for conj in prop.when:
        blo, bhi = lo.astype(np.float64).copy(), hi.astype(np.float64).copy()
        for w in conj:
            nz = np.flatnonzero(w.feat)
            if len(nz) == 1:
                j, c = int(nz[0]), float(w.feat[nz[0]])
                if c > 0:
                    bhi[j] = min(bhi[j], w.rhs / c)
                else:
                    blo[j] = max(blo[j], w.rhs / c)
        if np.all(blo <= bhi):
            out.append(_Conj(list(conj), blo, bhi))
    return out


def _holds_all(conj: list[Inequality], X: np.ndarray, act_dim: int) -> np.ndarray:
    ok = np.ones(len(X), dtype=bool)
    zeros = np.zeros((len(X), act_dim))
    for w in conj:
        ok &= w.holds(X, zeros)
    return ok


def _fd_jacobian(predict: Predict, X: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Central finite differences of ``predict`` at the rows of ``X``: ``(n, act_dim, obs_dim)``, one call."""
    n, d = X.shape
    steps = np.where(h > 0, h, 1.0)
    E = np.eye(d) * steps
    batch = np.concatenate([(X[:, None, :] + E[None]).reshape(-1, d), (X[:, None, :] - E[None]).reshape(-1, d)])
    A = np.asarray(predict(batch), dtype=np.float64)
    up, down = A[: n * d].reshape(n, d, -1), A[n * d:].reshape(n, d, -1)
    J = ((up - down) / (2 * steps[None, :, None])).transpose(0, 2, 1)
    J[:, :, h <= 0] = 0.0
    return np.asarray(J)


class StateProblem:
    """The search of a property on single states: a candidate ``z`` is a state of the box where ``when`` holds, and
    the violation is the largest value of the ``then`` inequalities there, over the state and ``predict``'s action
    (its gap to the ``reference`` policy's, when one is given), climbed through the action's Jacobian."""

    visited: ClassVar[bool] = False
    """Whether the visited states, when given, are tried besides the samples."""

    def __init__(self, predict: Predict, prop: Property, lo: np.ndarray, hi: np.ndarray, *, then: Sequence[Inequality],
                 act_dim: int, reference: Predict | None, jacobian: Jacobian, h: np.ndarray) -> None:
        self.predict, self.prop, self.lo, self.hi = predict, prop, lo, hi
        self.act_dim, self.reference, self.jacobian, self.h = act_dim, reference, jacobian, h
        self.conjs = _conjunctions(prop, lo, hi)
        self.then = list(then)

    # -- candidates
    def box(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """The box of the candidates of conjunction ``c``."""
        conj = self.conjs[c]
        return conj.lo, conj.hi

    def points(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` states of each candidate (for a single state: both the state)."""
        return Z, Z

    def draw(self, rng: np.random.Generator, c: int, n: int) -> np.ndarray:
        """``n`` candidates drawn uniformly from the box of conjunction ``c``."""
        zlo, zhi = self.box(c)
        return rng.uniform(zlo, zhi, size=(n, len(zlo)))

    def feasible(self, Z: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Inside the conjunction's box and ``when``."""
        low, high = self.points(Z)
        ok = np.zeros(len(Z), dtype=bool)
        for k in np.unique(c):
            idx = np.flatnonzero(c == k)
            zlo, zhi = self.box(int(k))
            inb = np.all((Z[idx] >= zlo) & (Z[idx] <= zhi), axis=1)
            ok[idx] = inb & self._inside(int(k), low[idx], high[idx])
        return ok

    def _inside(self, c: int, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return _holds_all(self.conjs[c].when, low, self.act_dim)

    # -- the violation
    def actions(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``predict`` (and ``reference``) at ``X``, checked for shape."""
        A = np.asarray(self.predict(X), dtype=np.float64).reshape(len(X), -1)
        if A.shape[1] != self.act_dim:
            raise ValueError(f"predict returned {A.shape[1]} actions per state; the property speaks of "
                             f"{self.act_dim}.")
        R = None if self.reference is None else np.asarray(self.reference(X), dtype=np.float64).reshape(len(X), -1)
        return A, R

    def evaluate(self, Z: np.ndarray) -> dict[str, np.ndarray]:
        """The violation (``> 0``: broken) at each candidate, whether it truly breaks the property (through
        ``predict`` and the Inequality methods, ``when`` holding inside the domain), and what acted."""
        low, _ = self.points(Z)
        n = len(Z)
        A, R = self.actions(low)
        D = A if R is None else A - R
        values = np.stack([ineq.value(low, D) for ineq in self.then], axis=1) if len(Z) else np.zeros((0, 1))
        broken = np.zeros(n, dtype=bool)
        for ineq in self.then:
            broken |= ~ineq.holds(low, D)
        which = np.argmax(values, axis=1) if n else np.zeros(0, dtype=int)
        return {"violation": values.max(axis=1) if n else np.zeros(0), "broken": broken & self.valid(low),
                "which": which, "A": A, "R": R if R is not None else A, "AH": A}

    def valid(self, X: np.ndarray) -> np.ndarray:
        """Inside the domain, with ``when`` holding."""
        return np.all((X >= self.lo) & (X <= self.hi), axis=1) & self.prop.when_holds(X, self.act_dim)

    def gradient(self, Z: np.ndarray, ev: dict[str, np.ndarray]) -> np.ndarray:
        """The violation's gradient in ``z`` (through the action's Jacobian at the states involved)."""
        low, _ = self.points(Z)
        J = self.jacobian(low)
        feat = np.stack([self.then[i].feat for i in ev["which"]])
        act = np.stack([self.then[i].act for i in ev["which"]])
        return np.asarray(feat + np.einsum("na,nad->nd", act, J))

    # -- the counterexample
    def counterexample(self, z: np.ndarray, label: str) -> Counterexample | None:
        """The candidate ``z`` (one row) as a counterexample, run through ``predict`` once more (``None`` when it
        does not break the property); ``label`` names what acts."""
        ev = self.evaluate(z)
        if not ev["broken"][0]:
            return None
        low, high = self.points(z)
        return self.found(ev, low, high, label)

    def found(self, ev: dict[str, np.ndarray], low: np.ndarray, high: np.ndarray, label: str) -> Counterexample:
        """The counterexample at a candidate that breaks the property (:meth:`evaluate` of it, and its states)."""
        requirement = self.then[int(ev["which"][0])].text or self.prop.then_text[0]
        return Counterexample(low[0].copy(), ev["A"][0].copy(), label, requirement, float(ev["violation"][0]))


class PairProblem(StateProblem):
    """The search of a property on pairs of states that differ in the property's feature alone: a candidate is a
    state and the other value of the feature (at least :data:`PAIR_STEP` of its range apart, both states in
    ``when``), and the violation is the property's own (:meth:`PairProperty.pair_violation
    <interp_rl.verify.kinds.pair.PairProperty.pair_violation>`) of the action it names at the two states."""

    prop: PairProperty

    def __init__(self, predict: Predict, prop: PairProperty, lo: np.ndarray, hi: np.ndarray, *, act_dim: int,
                 reference: Predict | None, jacobian: Jacobian, h: np.ndarray) -> None:
        super().__init__(predict, prop, lo, hi, then=prop.then, act_dim=act_dim, reference=reference,
                         jacobian=jacobian, h=h)
        width = hi - lo
        self.hmin = PAIR_STEP * width[prop.feature]

    def box(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        conj = self.conjs[c]
        f = self.prop.feature
        return np.append(conj.lo, conj.lo[f]), np.append(conj.hi, conj.hi[f])

    def points(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` states of each pair, ordered by the feature."""
        f = self.prop.feature
        X, Y = Z[:, :-1].copy(), Z[:, :-1].copy()
        Y[:, f] = Z[:, -1]
        swap = Y[:, f] < X[:, f]
        low, high = np.where(swap[:, None], Y, X), np.where(swap[:, None], X, Y)
        return low, high

    def draw(self, rng: np.random.Generator, c: int, n: int) -> np.ndarray:
        """A state drawn uniformly, and the other value of the feature at a log-uniform distance either way."""
        Z = super().draw(rng, c, n)
        zlo, zhi = self.box(c)
        f = self.prop.feature
        span = max(zhi[-1] - zlo[-1], 0.0)
        if span > 0 and self.hmin > 0:
            dist = np.exp(rng.uniform(math.log(self.hmin), math.log(max(span, self.hmin)), size=n))
            sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
            Z[:, -1] = Z[:, f] + sign * dist
        return Z

    def _inside(self, c: int, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Both states of a pair in the conjunction, at least ``hmin`` apart."""
        f = self.prop.feature
        ok = _holds_all(self.conjs[c].when, low, self.act_dim)
        ok &= _holds_all(self.conjs[c].when, high, self.act_dim)
        ok &= (high[:, f] - low[:, f]) >= self.hmin
        return ok

    def evaluate(self, Z: np.ndarray) -> dict[str, np.ndarray]:
        low, high = self.points(Z)
        n = len(Z)
        both, _ = self.actions(np.concatenate([low, high]))
        AL, AH = both[:n], both[n:]
        k, f = self.prop.action, self.prop.feature
        violation, broken = self.prop.pair_violation(AL[:, k], AH[:, k], low, high)
        broken &= (high[:, f] > low[:, f]) & self.valid(low) & self.valid(high)
        return {"violation": violation, "broken": broken, "which": np.zeros(n, dtype=int), "A": AL, "R": AL,
                "AH": AH}

    def gradient(self, Z: np.ndarray, ev: dict[str, np.ndarray]) -> np.ndarray:
        low, high = self.points(Z)
        n = len(Z)
        JJ = self.jacobian(np.concatenate([low, high]))
        k, f = self.prop.action, self.prop.feature
        d_low, d_high = self.prop.pair_gradient(JJ[:n, k, :], JJ[n:, k, :], ev["A"][:, k], ev["AH"][:, k], low, high)
        # z = (x, t): the features but f are shared; x_f and t are the low or the high state's feature
        g = np.zeros_like(Z)
        g[:, :-1] = d_low + d_high
        x_is_low = Z[:, f] <= Z[:, -1]
        g[:, f] = np.where(x_is_low, d_low[:, f], d_high[:, f])
        g[:, -1] = np.where(x_is_low, d_high[:, f], d_low[:, f])
        return g

    def found(self, ev: dict[str, np.ndarray], low: np.ndarray, high: np.ndarray, label: str) -> Counterexample:
        wrong = float(ev["violation"][0]) + self.prop.tolerance
        return Counterexample(low[0].copy(), ev["A"][0].copy(), label, self.prop.then_text[0], wrong, high[0].copy(),
                              ev["AH"][0].copy(), label)


def _distinct(rows: np.ndarray) -> int:
    return 0 if len(rows) == 0 else len(np.unique(rows, axis=0))


def search_policy(predict: Predict, prop: Property, lo: np.ndarray, hi: np.ndarray, *, samples: int = 20_000,
                  ascent_starts: int = 64, steps: int = 100, seed: int = 0, gradient: Jacobian | None = None,
                  reference: Predict | None = None, states: np.ndarray | None = None, act_dim: int | None = None,
                  label: str = "teacher") -> TeacherSearch:
    """Search ``predict`` for states of the box ``[lo, hi]`` where it breaks ``prop`` (see the module docstring).

    Parameters
    ----------
    predict : callable
        Batched deterministic actions ``(n, obs_dim) -> (n, act_dim)`` (a teacher's ``predict``).
    prop : Property
        Any kind; ``teacher`` needs ``reference``.
    lo, hi : ndarray of shape (obs_dim,)
        The domain box.
    samples : int
        Random states (pairs) where ``when`` holds to try, spread over ``when``'s conjunctions.
    ascent_starts : int
        Gradient ascents, from the candidates with the largest violations.
    steps : int
        The most steps of each ascent.
    seed : int
        Seed of the sampling: the same seed gives the same search.
    gradient : callable, optional
        ``gradient(obs) -> (n, act_dim, obs_dim)``: ``d predict / d obs``; central finite differences
        (one batched ``predict`` of ``2 * obs_dim`` states per state) when not given.
    reference : callable, optional
        ``teacher`` kind: the other policy (the controller); its gradient is taken by finite differences.
    states : ndarray of shape (n, obs_dim), optional
        Visited states, tried besides the samples (``teacher`` kind; the others search the box only).
    act_dim : int, optional
        The number of actions (from one call of ``predict`` when not given).
    label : str
        What acts, in the counterexample (``region``).

    Returns
    -------
    TeacherSearch
    """
    start = time.perf_counter()
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    if prop.against_teacher and reference is None:
        raise ValueError(f"Property {prop.name!r} compares with the teacher: give the other policy (reference).")
    calls = [0]

    def counted(X: np.ndarray) -> np.ndarray:
        calls[0] += len(X)
        return predict(X)

    if act_dim is None:  # one call at the box's centre tells
        act_dim = int(np.asarray(counted(((lo + hi) / 2)[None, :])).reshape(1, -1).shape[1])
    h = FD_STEP * (hi - lo)

    def fd(fn: Predict) -> Jacobian:
        return lambda X: _fd_jacobian(fn, X, h)

    own = gradient if gradient is not None else fd(counted)
    jacobian: Jacobian = own
    if prop.against_teacher and reference is not None:
        ref_jac = fd(reference)

        def jacobian(X: np.ndarray) -> np.ndarray:
            return own(X) - ref_jac(X)

    problem = prop.search_problem(counted, lo, hi, act_dim=act_dim, reference=reference, jacobian=jacobian, h=h)
    out = TeacherSearch(prop.name, prop.kind, 0, None, 0,
                        gradient="policy" if gradient is not None else "finite differences")
    if not problem.conjs:
        out.note = "`when` leaves no state of the domain box"
        out.seconds = time.perf_counter() - start
        return out
    rng = np.random.default_rng(seed)

    # 1. sampling, one conjunction at a time (rejection inside the tightened box, topped up a few times)
    per = math.ceil(samples / len(problem.conjs)) if samples > 0 else 0
    Zs: list[np.ndarray] = []
    Cs: list[np.ndarray] = []
    for c in range(len(problem.conjs)):
        got: list[np.ndarray] = []
        tries = 0
        while per and sum(len(g) for g in got) < per and tries < 20:
            Z = problem.draw(rng, c, per)
            got.append(Z[problem.feasible(Z, np.full(len(Z), c))])
            tries += 1
        if got:
            Z = np.concatenate(got)[:per]
            Zs.append(Z)
            Cs.append(np.full(len(Z), c))
    n_samples = sum(len(z) for z in Zs)
    if states is not None and len(states) and problem.visited:
        X = np.asarray(states, dtype=np.float64)
        for c in range(len(problem.conjs)):
            ok = problem.feasible(X, np.full(len(X), c))
            Zs.append(X[ok])
            Cs.append(np.full(int(ok.sum()), c))
            X = X[~ok]
    Z = np.concatenate(Zs) if Zs else np.zeros((0, len(problem.box(0)[0])))
    C = np.concatenate(Cs).astype(int) if Cs else np.zeros(0, dtype=int)
    out.samples, out.visited = n_samples, len(Z) - n_samples
    if len(Z) == 0:
        out.note = "no state of the domain box where `when` holds was drawn"
        out.evaluations = calls[0]
        out.seconds = time.perf_counter() - start
        return out
    ev = problem.evaluate(Z)
    out.sampled_violations = int(ev["broken"][:n_samples].sum())
    found = [Z[ev["broken"]]]
    best = (Z, ev)

    # 2. gradient ascent from the candidates closest to breaking it (distinct ones)
    order = np.argsort(-ev["violation"], kind="stable")
    _, first = np.unique(Z[order], axis=0, return_index=True)
    picks = order[np.sort(first)][:ascent_starts]
    if len(picks) and steps > 0:
        Zc, cc = Z[picks].copy(), C[picks]
        evc = {k: v[picks] for k, v in ev.items() if v is not None}
        boxes = [problem.box(int(k)) for k in cc]
        zlo, zhi = np.stack([b[0] for b in boxes]), np.stack([b[1] for b in boxes])
        scale = zhi - zlo
        alpha = np.full(len(Zc), 0.05)
        taken = 0
        for _ in range(steps):
            live = np.flatnonzero(alpha > 1e-4)
            if len(live) == 0:
                break
            taken += 1
            sub = {k: v[live] for k, v in evc.items()}
            g = problem.gradient(Zc[live], sub) * scale[live]
            norm = np.max(np.abs(g), axis=1)
            flat = ~(norm > 0) | ~np.isfinite(norm)
            alpha[live[flat]] = 0.0
            live, g, norm = live[~flat], g[~flat], norm[~flat]
            if len(live) == 0:
                break
            trial = np.clip(Zc[live] + (alpha[live] / norm)[:, None] * scale[live] * g, zlo[live], zhi[live])
            evt = problem.evaluate(trial)
            ok = problem.feasible(trial, cc[live]) & (evt["violation"] > evc["violation"][live])
            acc = live[ok]
            Zc[acc] = trial[ok]
            for k in evc:
                evc[k][acc] = evt[k][ok]
            alpha[acc] = np.minimum(alpha[acc] * 1.5, 0.5)
            alpha[live[~ok]] *= 0.5
        out.ascents, out.steps = len(picks), taken
        out.ascent_violations = int(evc["broken"].sum())
        found.append(Zc[evc["broken"]])
        best = (np.concatenate([Z, Zc]), {k: np.concatenate([ev[k], evc[k]]) for k in evc})
    out.counterexamples = _distinct(np.concatenate(found))

    # 3. the worst counterexample, run through predict once more
    Zb, evb = best
    if evb["broken"].any():
        i = int(np.flatnonzero(evb["broken"])[np.argmax(evb["violation"][evb["broken"]])])
        out.worst = problem.counterexample(Zb[i:i + 1], label)
    out.evaluations = calls[0]
    out.seconds = time.perf_counter() - start
    return out


def visited_share(predict: Predict, prop: Property, states: np.ndarray, *,
                  reference: Predict | None = None) -> tuple[int, int] | None:
    """``(visited states where when holds, how many of them break the property)`` (the property's own check:
    :meth:`~interp_rl.verify.properties.Property.visited_share`): for ``rule`` and ``range`` properties, ``teacher``
    ones given the ``reference``; ``None`` for the kinds that speak of pairs."""
    return prop.visited_share(predict, states, reference=reference)


def teacher_verdict(search: TeacherSearch, prop: Property, controller: Any, teacher: Predict) -> Any:
    """The verdict of a property from the search of the teacher (the property's own:
    :meth:`~interp_rl.verify.properties.Property.search_verdict`; ``None`` for a kind the search does not decide)."""
    return prop.search_verdict(search, controller, teacher)
