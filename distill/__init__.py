"""Distillers: turn a teacher into a transparent controller.

A distiller receives a teacher (:class:`interp_rl.teachers.Teacher`) and an environment factory
``env_fn(seed)``; it never imports :mod:`envs`.

- Students (scikit-learn estimators on raw observations): :class:`TreePolicy` (a regression tree
  with constant or sparse-linear leaves), :class:`LinearPolicy` (sparse equations),
  :class:`MixturePolicy` (a top-1 mixture of sparse linear experts, SMOSE), :class:`SINDyPolicy`
  (sparse equations over a pysindy library of terms), :class:`SILVERPolicy` (a discrete teacher's choice as a
  linear argmax rule found through its Shapley values, SILVER), :class:`PReLUPolicy` (a small ReLU network
  converted exactly into its activation regions, an oblique tree).
- :class:`FeatureSubset`: any of them fitted on some observation features only (the top-k of the
  teacher's Shapley ranking), run on the full observation.
- :class:`DAgger`: learns any student from a teacher (behaviour cloning with ``n_iter=0``),
  with VIPER-style critic weighting for teachers that have a Q-function.
- :class:`LeafTuner`: tunes a tree's leaves on the real return (augmented random search).
- :class:`ARS` and :func:`run_ars_job`: augmented random search (V2-t) over a linear policy's, a tree's or a
  mixture's own parameters, on several workers, resumable (``interp-rl train --algo ars --policy KIND``).
- :mod:`distill.prune`: cost-complexity pruning, pruning to a leaf budget, merging look-alike leaves.
- :class:`Distillation` and :func:`run_job`: a method's whole estimator and the job behind
  ``interp-rl distill METHOD``; :data:`METHODS` is the registry of methods.
- :mod:`distill.stages`: the stages after DAgger, one family (:class:`Stage`: ``fit(student, context) ->
  StageResult``, its checkpoint folder, held-out score and progress), registered in :data:`STAGES`; a new
  stage is one class given to ``Distillation(stages=[...])``. :mod:`distill.events`: the typed progress
  events every stage sends.
- :func:`fit_from_log` and :func:`behaviour_clone` (:mod:`distill.logged`): a method's student learnt from a log
  when there is no teacher (``interp-rl distill METHOD --data LOG``), judged on a held-out part of it.
"""

from distill.ars import ARS, run_ars_job
from distill.critic_tuning import CriticTuner
from distill.dagger import DAgger
from distill.job import Distillation, run_job
from distill.leaf_search import LeafTuner
from distill.linear import LinearPolicy
from distill.logged import behaviour_clone, fit_from_log
from distill.methods import METHODS, Method, Option, get_method, register_method
from distill.moe import MixturePolicy
from distill.prelu import PReLUPolicy
from distill.prune import collapse_similar, cost_complexity_path, prune, prune_to_leaves
from distill.silver import SILVERPolicy
from distill.sindy import SINDyPolicy
from distill.stages import STAGES, Stage, StageContext, StageResult, register_stage
from distill.subset import FeatureSubset
from distill.tree import TreePolicy

__all__ = [
    "ARS",
    "METHODS",
    "STAGES",
    "CriticTuner",
    "DAgger",
    "Distillation",
    "FeatureSubset",
    "LeafTuner",
    "LinearPolicy",
    "Method",
    "MixturePolicy",
    "Option",
    "PReLUPolicy",
    "SILVERPolicy",
    "SINDyPolicy",
    "Stage",
    "StageContext",
    "StageResult",
    "TreePolicy",
    "behaviour_clone",
    "collapse_similar",
    "cost_complexity_path",
    "fit_from_log",
    "get_method",
    "prune",
    "prune_to_leaves",
    "register_method",
    "register_stage",
    "run_ars_job",
    "run_job",
]

#: The distribution that ships this package (read by interp_rl._packages: other distributions may use the name).
DISTRIBUTION = "interp-rl"
