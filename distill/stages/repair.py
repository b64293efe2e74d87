"""The failure repair as a stage: targeted DAgger from the run-up to each failure, on DAgger's data."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone

from distill.stages.base import Stage, StageContext, StageResult, refit_like, register_stage

__all__ = ["RepairStage"]


@register_stage
class RepairStage(Stage):
    """Run ``repair`` (a :class:`~distill.failure_repair.FailureRepair`) on the student, refitted as it was made on
    DAgger's data plus the repair's labels (``Distillation(repair=...)``); off when ``repair`` is ``None`` or its
    ``n_rounds`` is 0."""

    name = "repair"
    per_level = True
    needs_data = True
    needs_data_error = ("Repair refits the student on its distillation data; it needs DAgger (not --start or "
                        "training from scratch).")

    def __init__(self, repair: Any = None) -> None:
        self.repair = repair

    def active(self) -> bool:
        return self.repair is not None and self.repair.n_rounds > 0

    def fit(self, student: Any, context: StageContext) -> StageResult:
        from distill.dagger import critic_weights

        dagger, teacher = context.dagger, context.teacher
        assert dagger is not None and context.data is not None  # needs_data
        critic = dagger.weighting_ == "critic"
        rng = np.random.default_rng([dagger.seed, 77])
        rep = clone(self.repair)
        X, y, w = context.data
        rep.fit(student, teacher, context.env_fn, X, y, w,
                refit=lambda X, y, w: refit_like(student, X, y, w, critic),
                label_weights=(lambda o, a: critic_weights(teacher, o, a, n_action_samples=dagger.n_action_samples,
                                                           rng=rng)) if critic else None, progress=context.progress)
        return StageResult(student=rep.student_, record={"history": rep.history_, "best_round": rep.best_round_},
                           data=(rep.X_, rep.y_, rep.sample_weight_ if critic else None))
