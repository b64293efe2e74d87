"""RL from scratch as the run's first stage: the student trained on the teacher's task instead of distilled."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from sklearn.base import clone

from distill.stages.base import Stage, StageContext, StageResult, register_stage

__all__ = ["FromScratch"]


@register_stage
class FromScratch(Stage):
    """Train the (unfitted) student by RL from scratch with ``trainer`` (a
    :class:`~distill.from_scratch.ScratchTrainer`), its run kept in the checkpoint folder's ``scratch``
    (``Distillation(scratch=...)``); off when ``trainer`` is ``None`` or its ``n_steps`` is 0. Its record is
    ``metrics.json``'s ``scratch``."""

    name = "scratch"
    checkpoint_folder = "scratch"

    def __init__(self, trainer: Any = None) -> None:
        self.trainer = trainer

    def active(self) -> bool:
        return self.trainer is not None and self.trainer.n_steps > 0

    def fit(self, student: Any, context: StageContext) -> StageResult:
        trainer = clone(self.trainer)
        with tempfile.TemporaryDirectory() as tmp:  # without a checkpoint folder the run cannot resume anyway
            run = context.checkpoint(self) or Path(tmp) / "scratch"
            trainer.fit(clone(student), context.teacher, checkpoint_dir=run, resume=context.resume,
                        progress=context.progress)
        meta = trainer.meta_
        return StageResult(student=trainer.student_, record={
            "algo": trainer.algo, "steps": trainer.n_steps, "seconds": trainer.seconds_, "history": trainer.history_,
            "kept_step": meta.get("model_step"), "kept_return": meta.get("model_eval_return")})
