"""Leaf merging as a stage: sibling tree leaves whose parameters differ by at most ``atol`` become one."""

from __future__ import annotations

from typing import Any

from distill.stages.base import Stage, StageContext, StageResult, register_stage
from interp_rl.errors import bad_value

__all__ = ["Collapse"]


@register_stage
class Collapse(Stage):
    """Merge sibling leaves of a tree whose parameters differ by at most ``atol`` (``Distillation(collapse_atol=...)``;
    0: off). It keeps no record."""

    name = "collapse"

    def __init__(self, atol: float = 0.0) -> None:
        self.atol = atol

    def active(self) -> bool:
        return self.atol > 0

    def fit(self, student: Any, context: StageContext) -> StageResult:
        if not hasattr(student, "tree_"):
            raise bad_value("collapse_atol", "Distillation", "0 for a student that is not a tree", self.atol)
        from distill.prune import collapse_similar

        return StageResult(student=collapse_similar(student, self.atol))
