"""Leaf tuning as a stage: a tree's leaves searched on the return (:class:`~distill.leaf_search.LeafTuner`)."""

from __future__ import annotations

from typing import Any

from sklearn.base import clone

from distill.stages.base import Stage, StageContext, StageResult, register_stage

__all__ = ["LeafTuning"]


@register_stage
class LeafTuning(Stage):
    """Tune a tree's leaves on the return with ``tuner`` (a :class:`~distill.leaf_search.LeafTuner`), its steps scaled
    by each feature's spread on DAgger's states (``Distillation(tuner=...)``); off when ``tuner`` is ``None`` or its
    ``n_iter`` is 0. Its record is ``metrics.json``'s ``tuning``."""

    name = "tuning"

    def __init__(self, tuner: Any = None) -> None:
        self.tuner = tuner

    def active(self) -> bool:
        return self.tuner is not None and self.tuner.n_iter > 0

    def fit(self, student: Any, context: StageContext) -> StageResult:
        tuner = clone(self.tuner)
        tuner.fit(student, context.env_fn, feature_scale=context.feature_scale, progress=context.progress)
        return StageResult(student=tuner.student_, record={"initial_return": tuner.initial_return_,
                                                           "best_return": tuner.best_return_,
                                                           "history": tuner.history_})
