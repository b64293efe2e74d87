"""The distillation's stages, one family (:class:`Stage`), one module each, registered in :data:`STAGES`.

:class:`~distill.job.Distillation` runs, after DAgger (once per DART level), the per-level stages
(:class:`SparsitySweep`, :class:`RepairStage`, :class:`Restarts`, then any given ``per_level`` stage),
compares the levels, then runs the rest on the kept controller (:class:`LeafTuning`,
:class:`FineTuning`, :class:`Collapse`, then any other given stage). :class:`FromScratch` replaces
DAgger when the student is trained by RL from scratch.
"""

from distill.stages.base import STAGES, Stage, StageContext, StageResult, refit_like, register_stage, unregister_stage
from distill.stages.collapse import Collapse
from distill.stages.fine_tuning import FineTuning
from distill.stages.leaf_tuning import LeafTuning
from distill.stages.repair import RepairStage
from distill.stages.restarts import Restarts
from distill.stages.scratch import FromScratch
from distill.stages.sweep import SparsitySweep

__all__ = ["STAGES", "Collapse", "FineTuning", "FromScratch", "LeafTuning", "RepairStage", "Restarts",
           "SparsitySweep", "Stage", "StageContext", "StageResult", "refit_like", "register_stage",
           "unregister_stage"]
