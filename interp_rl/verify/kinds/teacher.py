"""``teacher`` properties: every action of the controller within ``epsilon`` of the teacher's.

The teacher is a neural network, so agreement with it is tested, never proved: the teacher is searched
(:func:`~interp_rl.verify.search.search_policy`) with the controller as the reference, on the domain box
where ``when`` holds and on the visited states, for a state where some action of the two differs by more
than ``epsilon``. The verdict is ``refuted`` at the state where they differ most, checked once more
through both, else ``unknown``; the share of visited states where they differ is its check on samples.

Examples
--------
>>> from interp_rl.program import Signal
>>> from interp_rl.verify.properties import parse_properties
>>> ps = parse_properties('[[property]]\\nname = "close"\\nkind = "teacher"\\nepsilon = 0.1',
...                       features=[Signal("x")], actions=[Signal("u")])
>>> prop = ps.properties[0]
>>> prop.statement, prop.bound, prop.against_teacher
("every action within 0.1 of the teacher's", 0.1, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

import interp_rl.verify.report as report
from interp_rl.verify.properties import Inequality, Property, Table
from interp_rl.verify.prove import Counterexample, Verdict
from interp_rl.verify.search import StateProblem

if TYPE_CHECKING:
    from interp_rl.program import Controller, Region
    from interp_rl.verify.search import Jacobian, Predict, TeacherSearch

__all__ = ["TeacherProperty"]


class _Agreement(StateProblem):
    """``|predict - reference| <= epsilon``, one inequality per action and sign, tried on the visited states too;
    a counterexample holds both policies' actions."""

    visited = True

    def found(self, ev: dict[str, np.ndarray], low: np.ndarray, high: np.ndarray, label: str) -> Counterexample:
        return Counterexample(low[0].copy(), ev["A"][0].copy(), label, self.prop.then_text[0],
                              float(ev["violation"][0]), low[0].copy(), ev["R"][0].copy(), "controller")


@dataclass
class TeacherProperty(Property):
    """The controller's actions stay within ``epsilon`` of the teacher's (tested on sampled states, never proved)."""

    kind = "teacher"
    keys = ("epsilon",)
    needs = ("epsilon",)
    against_teacher = True

    bound: float = math.inf
    """``epsilon``: the largest difference allowed in any action."""

    @classmethod
    def from_table(cls, table: Table) -> TeacherProperty:
        bound = table.number("epsilon")
        if bound <= 0:
            raise table.error(f"epsilon must be > 0; got {bound:g}.")
        return cls(**table.common, bound=bound, then_text=[f"every action within {bound:g} of the teacher's"])

    def decide(self, controller: Controller, lo: np.ndarray, hi: np.ndarray, regions: list[Region] | None
               ) -> Verdict:
        """Unknown: without the teacher there is nothing to compare with (:meth:`search_verdict` decides it)."""
        return Verdict(self.name, "unknown", "agreement with the teacher is tested, not proved: give the teacher "
                                             "to search it")

    def search_problem(self, predict: Predict, lo: np.ndarray, hi: np.ndarray, *, act_dim: int,
                       reference: Predict | None, jacobian: Jacobian, h: np.ndarray) -> StateProblem:
        """The largest gap of an action of ``predict`` to ``reference``'s, over ``epsilon``."""
        eye = np.eye(act_dim)
        then = [Inequality(np.zeros(len(lo)), s * eye[k], self.bound, False, self.then_text[0])
                for k in range(act_dim) for s in (1.0, -1.0)]
        return _Agreement(predict, self, lo, hi, then=then, act_dim=act_dim, reference=reference, jacobian=jacobian,
                          h=h)

    def search_verdict(self, search: TeacherSearch, controller: Controller, teacher: Predict) -> Verdict:
        """``refuted`` at the state where the controller and the teacher differ most (checked once more through
        both), else ``unknown`` (tested, not proved)."""
        cex = search.worst
        if cex is not None:
            x = cex.state[None, :]
            a = np.asarray(controller.predict(x), dtype=np.float64)[0]
            t = np.asarray(teacher(x), dtype=np.float64)[0]
            gap = float(np.max(np.abs(a - t))) - self.bound
            if gap > 0:
                region = controller.kind
                if controller.program.can("affine"):
                    pieces = controller.program.affine_pieces()
                    p = int(pieces.assign(x)[0])
                    region = pieces.labels[p] if pieces.labels else f"piece {p}"
                return Verdict(self.name, "refuted", counterexample=Counterexample(
                    cex.state.copy(), a, region, self.then_text[0], gap, cex.state.copy(), t, "teacher"),
                    seconds=search.seconds)
        tried = f"{search.samples:,} sampled" + (f" and {search.visited:,} visited" if search.visited else "")
        return Verdict(self.name, "unknown", f"tested on {tried} states and {search.ascents} gradient ascents, no "
                                             f"disagreement above ε = {self.bound:g} found (not a proof)",
                       seconds=search.seconds)

    def visited_share(self, predict: Predict, states: np.ndarray, *, reference: Predict | None = None
                      ) -> tuple[int, int] | None:
        """The visited states where ``when`` holds, and those where some action of ``predict`` and of ``reference``
        differ by more than ``epsilon`` (``None`` without the reference)."""
        if reference is None:
            return None
        X = np.asarray(states, dtype=np.float64)
        A = np.asarray(predict(X), dtype=np.float64).reshape(len(X), -1)
        inside = self.when_holds(X, A.shape[1])
        R = np.asarray(reference(X), dtype=np.float64).reshape(len(X), -1)
        broken = np.max(np.abs(A - R), axis=1) > self.bound
        return int(inside.sum()), int((broken & inside).sum())

    def teacher_detail(self, verdict: Verdict, search: TeacherSearch | None, controller: Controller,
                       precision: int = 4) -> str | None:
        """What the teacher does at its counterexample."""
        return report.teacher_gives_detail(verdict.name, verdict.counterexample, controller, precision)
