"""Fine-tuning on the return as a stage: :class:`~distill.critic_tuning.CriticTuner` (TD3 from the teacher's critic, or
ARS / CMA-ES on the controller's parameters), its state kept in the run's checkpoint folder."""

from __future__ import annotations

import time
from typing import Any

from sklearn.base import clone

from distill.stages.base import Stage, StageContext, StageResult, register_stage

__all__ = ["FineTuning"]


@register_stage
class FineTuning(Stage):
    """Fine-tune the controller on the return with ``rl`` (a :class:`~distill.critic_tuning.CriticTuner`), resumable
    from its state (``Distillation(rl=...)``); off when ``rl`` is ``None`` or its ``n_steps`` is 0. Its record is
    ``metrics.json``'s ``rl``: start and best held-out return, critic source, history, seconds (those of the run
    before a resume included)."""

    name = "rl"

    def __init__(self, rl: Any = None) -> None:
        self.rl = rl

    def active(self) -> bool:
        return self.rl is not None and self.rl.n_steps > 0

    def fit(self, student: Any, context: StageContext) -> StageResult:
        rl = clone(self.rl).set_params(checkpoint_dir=context.checkpoint(self))
        t0 = time.perf_counter()
        rl.fit(student, context.teacher, context.env_fn, resume=context.resume, progress=context.progress)
        return StageResult(student=rl.student_, record={
            "initial_return": rl.initial_return_, "best_return": rl.best_return_, "critic": rl.critic_source_,
            "history": rl.history_, "seconds": time.perf_counter() - t0 + rl.earlier_seconds_,
            "earlier_seconds": rl.earlier_seconds_})
