"""Properties of how an action changes as one feature grows, the other features held.

:class:`PairProperty` is the base of the ``monotone`` and ``lipschitz`` kinds. On a piecewise-affine
controller such a property is decided from the slopes of the pieces inside their regions and the jumps
where a line along the feature crosses from one region into the next (:mod:`interp_rl.verify.slopes`);
on a policy it is searched on pairs of states that differ in the feature alone
(:class:`~interp_rl.verify.search.PairProblem`); it is not checked state by state. A kind says, through
the methods below, what breaking it means for a change of the action, a slope, a jump and a pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from interp_rl.verify.properties import Property
from interp_rl.verify.prove import Verdict
from interp_rl.verify.search import PairProblem
from interp_rl.verify.slopes import decide_slope

if TYPE_CHECKING:
    from interp_rl.program import Controller, Region
    from interp_rl.verify.search import Jacobian, Predict

__all__ = ["PairProperty"]


@dataclass
class PairProperty(Property):
    """How ``action`` changes as ``feature`` grows, the other features held (the base of such kinds: see
    :mod:`interp_rl.verify.kinds.pair`)."""

    tolerance: ClassVar[float] = 0.0
    """A pair breaks the property only when its violation exceeds this; a counterexample reports the violation from
    zero."""

    action: int = -1
    """The action's index."""
    feature: int = -1
    """The feature's index."""

    def decide(self, controller: Controller, lo: np.ndarray, hi: np.ndarray, regions: list[Region] | None
               ) -> Verdict:
        """From the slopes inside the regions and the jumps between them
        (:func:`interp_rl.verify.slopes.decide_slope`); unknown for a controller that is not piecewise affine."""
        if regions is None:
            why = controller.program.cannot("regions") or ""
            return Verdict(self.name, "unknown", f"{self.kind} properties are decided for piecewise-affine "
                                                 f"controllers; a {controller.kind} program is not one ({why})")
        return decide_slope(controller, self, lo, hi, regions)

    def search_problem(self, predict: Predict, lo: np.ndarray, hi: np.ndarray, *, act_dim: int,
                       reference: Predict | None, jacobian: Jacobian, h: np.ndarray) -> PairProblem:
        """Pairs of states that differ in the feature alone."""
        return PairProblem(predict, self, lo, hi, act_dim=act_dim, reference=reference, jacobian=jacobian, h=h)

    # -- what the slopes and the jumps of a piecewise-affine controller ask
    def change_violation(self, change: float, h: float) -> float:
        """By how much a change ``change`` of the action over a step ``h > 0`` of the feature breaks it (``> 0``:
        broken)."""
        raise NotImplementedError(f"{type(self).__name__} does not say when a change breaks it.")

    def slope_keeps(self, slope: float, gain: float) -> bool:
        """Whether a piece's slope in the feature keeps it (``gain``: the most the squash multiplies a slope by)."""
        raise NotImplementedError(f"{type(self).__name__} does not say which slopes keep it.")

    def jump_directions(self) -> list[float]:
        """The signs ``d`` of the jumps that may break it: ``d * (earlier action - later action) > 0``."""
        raise NotImplementedError(f"{type(self).__name__} does not say which jumps break it.")

    def jump_kept(self, first: tuple[float, float], second: tuple[float, float], pad: float) -> bool:
        """Whether the action's ranges on the two sides of a crossing (earlier, later) show that the jump keeps it,
        by more than ``pad`` (no linear program needed); ``False``: the linear programs decide."""
        return False

    # -- what the search of a policy asks
    def pair_violation(self, a_low: np.ndarray, a_high: np.ndarray, x_low: np.ndarray, x_high: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """``(violation, broken)`` of pairs: the action at the lower and at the higher state of each, and the
        states ``(n, obs_dim)``."""
        raise NotImplementedError(f"{type(self).__name__} does not say how a pair breaks it.")

    def pair_gradient(self, g_low: np.ndarray, g_high: np.ndarray, a_low: np.ndarray, a_high: np.ndarray,
                      x_low: np.ndarray, x_high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The violation's gradient in the lower and in the higher state ``(n, obs_dim)``, given the action's
        gradients there (``g_low``, ``g_high``)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how its violation climbs.")
