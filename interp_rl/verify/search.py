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

What is searched, by kind:

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
from typing import Any

import numpy as np

from interp_rl.verify.properties import Inequality, Property
from interp_rl.verify.prove import Counterexample

__all__ = ["MONOTONE_TOLERANCE", "TeacherSearch", "search_policy", "teacher_verdict", "visited_share"]

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


def _when_holds(prop: Property, X: np.ndarray, act_dim: int) -> np.ndarray:
    """Whether ``when`` (any of its conjunctions) holds at each row of ``X``."""
    inside = np.zeros(len(X), dtype=bool)
    for conj in prop.when:
        inside |= _holds_all(conj, X, act_dim)
    return inside


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


class _Problem:
    """The search of one property: the parameters ``z`` of a candidate (a state; for pairs a state and the
    other value of the feature), what breaking the property means, and the violation's gradient."""

    def __init__(self, predict: Predict, prop: Property, lo: np.ndarray, hi: np.ndarray, *, act_dim: int,
                 reference: Predict | None, jacobian: Jacobian, h: np.ndarray) -> None:
        self.predict, self.prop, self.lo, self.hi = predict, prop, lo, hi
        self.act_dim, self.reference, self.jacobian, self.h = act_dim, reference, jacobian, h
        self.pair = prop.kind in ("monotone", "lipschitz")
        self.conjs = _conjunctions(prop, lo, hi)
        if prop.kind == "teacher":  # |predict - reference| <= epsilon, one inequality per action and sign
            eye = np.eye(act_dim)
            self.then = [Inequality(np.zeros(len(lo)), s * eye[k], prop.bound, False, prop.then_text[0])
                         for k in range(act_dim) for s in (1.0, -1.0)]
        else:
            self.then = list(prop.then)
        width = hi - lo
        self.hmin = PAIR_STEP * width[prop.feature] if self.pair else 0.0

    # -- candidates
    def box(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        conj = self.conjs[c]
        if not self.pair:
            return conj.lo, conj.hi
        f = self.prop.feature
        return np.append(conj.lo, conj.lo[f]), np.append(conj.hi, conj.hi[f])

    def points(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` states of each pair, ordered by the feature (for a single state: both the state)."""
        if not self.pair:
            return Z, Z
        f = self.prop.feature
        X, Y = Z[:, :-1].copy(), Z[:, :-1].copy()
        Y[:, f] = Z[:, -1]
        swap = Y[:, f] < X[:, f]
        low, high = np.where(swap[:, None], Y, X), np.where(swap[:, None], X, Y)
        return low, high

    def draw(self, rng: np.random.Generator, c: int, n: int) -> np.ndarray:
        zlo, zhi = self.box(c)
        Z = rng.uniform(zlo, zhi, size=(n, len(zlo)))
        if self.pair:  # the other value of the feature: a log-uniform distance either way
            f = self.prop.feature
            span = max(zhi[-1] - zlo[-1], 0.0)
            if span > 0 and self.hmin > 0:
                dist = np.exp(rng.uniform(math.log(self.hmin), math.log(max(span, self.hmin)), size=n))
                sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
                Z[:, -1] = Z[:, f] + sign * dist
        return Z

    def feasible(self, Z: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Inside the conjunction's box and ``when`` (both states of a pair, at least ``hmin`` apart)."""
        low, high = self.points(Z)
        ok = np.zeros(len(Z), dtype=bool)
        for k in np.unique(c):
            idx = np.flatnonzero(c == k)
            zlo, zhi = self.box(int(k))
            inb = np.all((Z[idx] >= zlo) & (Z[idx] <= zhi), axis=1)
            ok[idx] = inb & _holds_all(self.conjs[k].when, low[idx], self.act_dim)
            if self.pair:
                ok[idx] &= _holds_all(self.conjs[k].when, high[idx], self.act_dim)
                ok[idx] &= (high[idx, self.prop.feature] - low[idx, self.prop.feature]) >= self.hmin
        return ok

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
        low, high = self.points(Z)
        n = len(Z)
        if not self.pair:
            A, R = self.actions(low)
            D = A if R is None else A - R
            values = np.stack([ineq.value(low, D) for ineq in self.then], axis=1) if len(Z) else np.zeros((0, 1))
            broken = np.zeros(n, dtype=bool)
            for ineq in self.then:
                broken |= ~ineq.holds(low, D)
            which = np.argmax(values, axis=1) if n else np.zeros(0, dtype=int)
            return {"violation": values.max(axis=1) if n else np.zeros(0), "broken": broken & self.valid(low),
                    "which": which, "A": A, "R": R if R is not None else A, "AH": A}
        both, _ = self.actions(np.concatenate([low, high]))
        AL, AH = both[:n], both[n:]
        k, f = self.prop.action, self.prop.feature
        if self.prop.kind == "monotone":
            wrong = self.prop.direction * (AL[:, k] - AH[:, k])
            violation, broken = wrong - MONOTONE_TOLERANCE, wrong > MONOTONE_TOLERANCE
        else:
            dx = high[:, f] - low[:, f]
            slope = np.abs(AH[:, k] - AL[:, k]) / np.where(dx > 0, dx, np.inf)
            violation, broken = slope - self.prop.bound, slope > self.prop.bound
        broken &= (high[:, f] > low[:, f]) & self.valid(low) & self.valid(high)
        return {"violation": violation, "broken": broken, "which": np.zeros(n, dtype=int), "A": AL, "R": AL,
                "AH": AH}

    def valid(self, X: np.ndarray) -> np.ndarray:
        """Inside the domain, with ``when`` holding."""
        return np.all((X >= self.lo) & (X <= self.hi), axis=1) & _when_holds(self.prop, X, self.act_dim)

    def gradient(self, Z: np.ndarray, ev: dict[str, np.ndarray]) -> np.ndarray:
        """The violation's gradient in ``z`` (through the action's Jacobian at the states involved)."""
        low, high = self.points(Z)
        n = len(Z)
        if not self.pair:
            J = self.jacobian(low)
            feat = np.stack([self.then[i].feat for i in ev["which"]])
            act = np.stack([self.then[i].act for i in ev["which"]])
            return np.asarray(feat + np.einsum("na,nad->nd", act, J))
        JJ = self.jacobian(np.concatenate([low, high]))
        k, f = self.prop.action, self.prop.feature
        gl, gh = JJ[:n, k, :], JJ[n:, k, :]
        if self.prop.kind == "monotone":  # s * (a(low) - a(high))
            s = float(self.prop.direction)
            d_low, d_high = s * gl, -s * gh
        else:  # |a(high) - a(low)| / (high_f - low_f)
            dx = high[:, f] - low[:, f]
            dx = np.where(dx > 0, dx, np.inf)
            delta = ev["AH"][:, k] - ev["A"][:, k]
            sg = np.sign(delta)[:, None]
            d_low, d_high = -sg * gl / dx[:, None], sg * gh / dx[:, None]
            d_low[:, f] += np.abs(delta) / dx**2
            d_high[:, f] -= np.abs(delta) / dx**2
        # z = (x, t): the features but f are shared; x_f and t are the low or the high state's feature
        g = np.zeros_like(Z)
        g[:, :-1] = d_low + d_high
        x_is_low = Z[:, f] <= Z[:, -1]
        g[:, f] = np.where(x_is_low, d_low[:, f], d_high[:, f])
        g[:, -1] = np.where(x_is_low, d_high[:, f], d_low[:, f])
        return g


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
    if prop.kind == "teacher" and reference is None:
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
    if prop.kind == "teacher" and reference is not None:
        ref_jac = fd(reference)

        def jacobian(X: np.ndarray) -> np.ndarray:
            return own(X) - ref_jac(X)

    problem = _Problem(counted, prop, lo, hi, act_dim=act_dim, reference=reference, jacobian=jacobian, h=h)
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
    if states is not None and len(states) and not problem.pair and prop.kind == "teacher":
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
        out.worst = _counterexample(problem, Zb[i:i + 1], label)
    out.evaluations = calls[0]
    out.seconds = time.perf_counter() - start
    return out


def _counterexample(problem: _Problem, z: np.ndarray, label: str) -> Counterexample | None:
    ev = problem.evaluate(z)
    if not ev["broken"][0]:
        return None
    low, high = problem.points(z)
    prop = problem.prop
    if problem.pair:
        wrong = float(ev["violation"][0]) + (MONOTONE_TOLERANCE if prop.kind == "monotone" else 0.0)
        return Counterexample(low[0].copy(), ev["A"][0].copy(), label, prop.then_text[0], wrong, high[0].copy(),
                              ev["AH"][0].copy(), label)
    requirement = problem.then[int(ev["which"][0])].text or prop.then_text[0]
    if prop.kind == "teacher":
        return Counterexample(low[0].copy(), ev["A"][0].copy(), label, prop.then_text[0],
                              float(ev["violation"][0]), low[0].copy(), ev["R"][0].copy(), "controller")
    return Counterexample(low[0].copy(), ev["A"][0].copy(), label, requirement, float(ev["violation"][0]))


def visited_share(predict: Predict, prop: Property, states: np.ndarray, *,
                  reference: Predict | None = None) -> tuple[int, int] | None:
    """``(visited states where when holds, how many of them break the property)`` for ``rule`` and ``range``
    properties (and ``teacher`` ones, given the ``reference``); ``None`` for the kinds that speak of pairs."""
    X = np.asarray(states, dtype=np.float64)
    A = np.asarray(predict(X), dtype=np.float64).reshape(len(X), -1)
    inside = _when_holds(prop, X, A.shape[1])
    if prop.kind in ("rule", "range"):
        broken = np.zeros(len(X), dtype=bool)
        for ineq in prop.then:
            broken |= ~ineq.holds(X, A)
    elif prop.kind == "teacher" and reference is not None:
        R = np.asarray(reference(X), dtype=np.float64).reshape(len(X), -1)
        broken = np.max(np.abs(A - R), axis=1) > prop.bound
    else:
        return None
    return int(inside.sum()), int((broken & inside).sum())


def teacher_verdict(search: TeacherSearch, prop: Property, controller: Any, teacher: Predict) -> Any:
    """The verdict of a ``teacher`` property from the search: ``refuted`` at the state where the controller and
    the teacher differ most (checked once more through both), else ``unknown`` (tested, not proved)."""
    from interp_rl.verify.prove import Verdict

    cex = search.worst
    if cex is not None:
        x = cex.state[None, :]
        a, t = np.asarray(controller.predict(x), dtype=np.float64)[0], np.asarray(teacher(x), dtype=np.float64)[0]
        gap = float(np.max(np.abs(a - t))) - prop.bound
        if gap > 0:
            region = controller.kind
            if controller.program.can("affine"):
                pieces = controller.program.affine_pieces()
                p = int(pieces.assign(x)[0])
                region = pieces.labels[p] if pieces.labels else f"piece {p}"
            return Verdict(prop.name, "refuted", counterexample=Counterexample(
                cex.state.copy(), a, region, prop.then_text[0], gap, cex.state.copy(), t, "teacher"),
                seconds=search.seconds)
    tried = f"{search.samples:,} sampled" + (f" and {search.visited:,} visited" if search.visited else "")
    return Verdict(prop.name, "unknown", f"tested on {tried} states and {search.ascents} gradient ascents, no "
                                         f"disagreement above ε = {prop.bound:g} found (not a proof)",
                   seconds=search.seconds)
