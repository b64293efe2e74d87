"""``range`` properties: an action stays within ``[low, high]`` wherever ``when`` holds.

A range is a rule whose ``then`` is read from ``action`` and ``within`` (``low <= action <= high``, every
digit kept), so it is decided, searched, checked and repaired as a rule is
(:class:`~interp_rl.verify.kinds.rule.RuleProperty`).

Examples
--------
>>> from interp_rl.program import Signal
>>> from interp_rl.verify.properties import parse_properties
>>> ps = parse_properties('[[property]]\\nname = "r"\\nkind = "range"\\naction = "u"\\nwithin = [-0.5, 1]',
...                       features=[Signal("x")], actions=[Signal("u")])
>>> prop = ps.properties[0]
>>> prop.statement, [str(r) for r in prop.then]
('-0.5 <= u <= 1.0', ['-u <= 0.5', 'u <= 1'])
"""

from __future__ import annotations

from dataclasses import dataclass

from interp_rl.verify.kinds.rule import RuleProperty
from interp_rl.verify.properties import Table

__all__ = ["RangeProperty"]


@dataclass
class RangeProperty(RuleProperty):
    """``action`` stays ``within = [low, high]`` (in the action's unit)."""

    kind = "range"
    keys = ("action", "within")
    needs = ("action", "within")

    action: int = -1
    """The action's index."""

    @classmethod
    def from_table(cls, table: Table) -> RangeProperty:
        action = table.action()
        low, high = table.interval("within")
        then_text = [f"{low!r} <= {table.actions[action].name} <= {high!r}"]  # every digit: the text is parsed back
        return cls(**table.common, action=action, then=table.requirements(then_text[0]), then_text=then_text)
