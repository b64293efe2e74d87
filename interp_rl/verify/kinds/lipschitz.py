"""``lipschitz`` properties: an action changes by at most ``bound`` per unit of a feature, the other features held.

A tree's leaves or a mixture's experts rarely meet where they touch, so a Lipschitz bound is refuted by
almost every tree: it jumps at its splits, and only a jump of exactly zero keeps it.

Examples
--------
>>> from interp_rl.program import Signal
>>> from interp_rl.verify.properties import parse_properties
>>> ps = parse_properties('[[property]]\\nname = "l"\\nkind = "lipschitz"\\naction = "u"\\nfeature = "x"\\n'
...                       'bound = 2', features=[Signal("x")], actions=[Signal("u")])
>>> prop = ps.properties[0]
>>> prop.statement, prop.slope_keeps(-1.5, 1.0), prop.change_violation(-3.0, 1.0)
('u changes by at most 2 per unit of x', True, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from interp_rl.verify.kinds.pair import PairProperty
from interp_rl.verify.properties import Table

__all__ = ["LipschitzProperty"]


@dataclass
class LipschitzProperty(PairProperty):
    """``action`` changes by at most ``bound`` per unit of ``feature``, the other features held."""

    kind = "lipschitz"
    keys = ("action", "feature", "bound")
    needs = ("action", "feature", "bound")

    bound: float = math.inf
    """The largest change of the action per unit of the feature."""

    @classmethod
    def from_table(cls, table: Table) -> LipschitzProperty:
        action, feature = table.action(), table.feature()
        a, f = table.actions[action].name, table.features[feature].name
        bound = table.number("bound")
        if bound < 0:
            raise table.error(f"bound must be >= 0; got {bound:g}.")
        return cls(**table.common, action=action, feature=feature, bound=bound,
                   then_text=[f"{a} changes by at most {bound:g} per unit of {f}"])

    def change_violation(self, change: float, h: float) -> float:
        return abs(change) - self.bound * h

    def slope_keeps(self, slope: float, gain: float) -> bool:
        return abs(slope) * gain <= self.bound

    def jump_directions(self) -> list[float]:
        return [1.0, -1.0]  # a jump either way breaks it

    def pair_violation(self, a_low: np.ndarray, a_high: np.ndarray, x_low: np.ndarray, x_high: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """The change of the action per unit of the feature, above ``bound``."""
        f = self.feature
        dx = x_high[:, f] - x_low[:, f]
        slope = np.abs(a_high - a_low) / np.where(dx > 0, dx, np.inf)
        return slope - self.bound, slope > self.bound

    def pair_gradient(self, g_low: np.ndarray, g_high: np.ndarray, a_low: np.ndarray, a_high: np.ndarray,
                      x_low: np.ndarray, x_high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f = self.feature  # |a(high) - a(low)| / (high_f - low_f)
        dx = x_high[:, f] - x_low[:, f]
        dx = np.where(dx > 0, dx, np.inf)
        delta = a_high - a_low
        sg = np.sign(delta)[:, None]
        d_low, d_high = -sg * g_low / dx[:, None], sg * g_high / dx[:, None]
        d_low[:, f] += np.abs(delta) / dx**2
        d_high[:, f] -= np.abs(delta) / dx**2
        return d_low, d_high
