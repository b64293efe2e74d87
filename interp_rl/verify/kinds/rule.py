"""``rule`` properties (the default kind): linear requirements that must hold at every state where ``when`` does.

``then`` holds linear inequalities over the actions and the features (``foot_torque <= 0.5``,
``2*force - torque/4 + 0.5*temp <= 3``); each is a requirement on the state and the action there, alone.
So a rule is decided region by region by linear programs on a piecewise-affine controller
(:func:`interp_rl.verify.prove.decide`), by interval branch and bound on equations
(:func:`interp_rl.verify.nonlinear.decide_nonlinear`), searched on a policy one state at a time
(:class:`~interp_rl.verify.search.StateProblem`), and checked on each visited state.

Examples
--------
>>> from interp_rl.program import Signal
>>> from interp_rl.verify.properties import parse_properties
>>> ps = parse_properties('[[property]]\\nname = "gentle"\\nthen = ["abs(u) <= 0.5"]', features=[Signal("x")],
...                       actions=[Signal("u")])
>>> prop = ps.properties[0]
>>> type(prop).__name__, prop.pointwise, [str(r) for r in prop.then]
('RuleProperty', True, ['u <= 0.5', '-u <= 0.5'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from interp_rl.verify.nonlinear import decide_nonlinear
from interp_rl.verify.properties import Property, Table
from interp_rl.verify.prove import Verdict
from interp_rl.verify.prove import decide as decide_regions
from interp_rl.verify.search import StateProblem

if TYPE_CHECKING:
    from interp_rl.program import Controller, Region
    from interp_rl.verify.search import Jacobian, Predict

__all__ = ["RuleProperty"]


@dataclass
class RuleProperty(Property):
    """``then``: linear inequalities over actions and features that must hold wherever ``when`` does."""

    kind = "rule"
    keys: ClassVar[tuple[str, ...]] = ("then",)
    needs: ClassVar[tuple[str, ...]] = ("then",)
    pointwise = True

    @classmethod
    def from_table(cls, table: Table) -> RuleProperty:
        then_text = table.strings("then")
        then = [ineq for text in then_text for ineq in table.requirements(text)]
        if not then:
            raise table.error("`then` is empty; say what must hold.")
        return cls(**table.common, then=then, then_text=then_text)

    def decide(self, controller: Controller, lo: np.ndarray, hi: np.ndarray, regions: list[Region] | None
               ) -> Verdict:
        """Region by region by linear programs; for equations (a program that bounds its actions over boxes), by
        interval branch and bound; else unknown, with the reason the program gives."""
        if regions is not None:
            return decide_regions(controller, self, lo, hi, regions)
        if hasattr(controller.program, "action_bounds"):
            return decide_nonlinear(controller, self, lo, hi)
        return Verdict(self.name, "unknown", controller.program.cannot("regions") or "")

    def search_problem(self, predict: Predict, lo: np.ndarray, hi: np.ndarray, *, act_dim: int,
                       reference: Predict | None, jacobian: Jacobian, h: np.ndarray) -> StateProblem:
        """The largest value of the ``then`` inequalities, one state at a time."""
        return StateProblem(predict, self, lo, hi, then=self.then, act_dim=act_dim, reference=reference,
                            jacobian=jacobian, h=h)

    def visited_share(self, predict: Predict, states: np.ndarray, *, reference: Predict | None = None
                      ) -> tuple[int, int]:
        """The visited states where ``when`` holds, and those of them where ``predict`` breaks a ``then``
        inequality."""
        X = np.asarray(states, dtype=np.float64)
        A = np.asarray(predict(X), dtype=np.float64).reshape(len(X), -1)
        inside = self.when_holds(X, A.shape[1])
        broken = np.zeros(len(X), dtype=bool)
        for ineq in self.then:
            broken |= ~ineq.holds(X, A)
        return int(inside.sum()), int((broken & inside).sum())
