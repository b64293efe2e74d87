"""``monotone`` properties: an action never falls (or never rises) as a feature grows, the other features held.

Examples
--------
>>> from interp_rl.program import Signal
>>> from interp_rl.verify.properties import parse_properties
>>> ps = parse_properties('[[property]]\\nname = "m"\\nkind = "monotone"\\naction = "u"\\nfeature = "x"\\n'
...                       'direction = "decreasing"', features=[Signal("x")], actions=[Signal("u")])
>>> prop = ps.properties[0]
>>> prop.statement, prop.direction, prop.change_violation(0.5, 1.0)
('u never rises as x grows', -1, 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interp_rl.verify.kinds.pair import PairProperty
from interp_rl.verify.properties import Table
from interp_rl.verify.search import MONOTONE_TOLERANCE

__all__ = ["MonotoneProperty"]


@dataclass
class MonotoneProperty(PairProperty):
    """``action`` never falls (``direction = "increasing"``) or never rises (``"decreasing"``) as ``feature``
    grows, the other features held."""

    kind = "monotone"
    keys = ("action", "feature", "direction")
    needs = ("action", "feature")
    mend_pairs = True
    tolerance = MONOTONE_TOLERANCE

    direction: int = 1
    """+1 increasing, -1 decreasing."""

    @classmethod
    def from_table(cls, table: Table) -> MonotoneProperty:
        action, feature = table.action(), table.feature()
        a, f = table.actions[action].name, table.features[feature].name
        direction = str(table.raw.get("direction", "increasing"))
        if direction not in ("increasing", "decreasing"):
            raise table.error(f"direction must be 'increasing' or 'decreasing'; got {direction!r}.")
        sign = 1 if direction == "increasing" else -1
        return cls(**table.common, action=action, feature=feature, direction=sign,
                   then_text=[f"{a} never {'falls' if sign > 0 else 'rises'} as {f} grows"])

    def change_violation(self, change: float, h: float) -> float:
        return -self.direction * change

    def slope_keeps(self, slope: float, gain: float) -> bool:
        return self.direction * slope >= 0

    def jump_directions(self) -> list[float]:
        return [self.direction * 1.0]  # the later action below the earlier one (increasing)

    def jump_kept(self, first: tuple[float, float], second: tuple[float, float], pad: float) -> bool:
        # increasing: the later action (second) must not be below the earlier one (first)
        (p_lo, p_hi), (q_lo, q_hi) = first, second
        return (q_lo - p_hi > pad) if self.direction > 0 else (q_hi - p_lo < -pad)

    def pair_violation(self, a_low: np.ndarray, a_high: np.ndarray, x_low: np.ndarray, x_high: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """The action moving the wrong way by more than :data:`~interp_rl.verify.search.MONOTONE_TOLERANCE`."""
        wrong = self.direction * (a_low - a_high)
        return wrong - self.tolerance, wrong > self.tolerance

    def pair_gradient(self, g_low: np.ndarray, g_high: np.ndarray, a_low: np.ndarray, a_high: np.ndarray,
                      x_low: np.ndarray, x_high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = float(self.direction)  # s * (a(low) - a(high))
        return s * g_low, -s * g_high
