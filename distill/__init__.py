"""Distillers: turn a teacher into a transparent controller.

A distiller receives a teacher (``interp_rl.teachers.SB3Teacher`` or any
:class:`interp_rl.policy.Policy`) and an environment factory ``env_fn(seed)``;
it never imports :mod:`envs`.

- :class:`TreePolicy`: a scikit-learn regression tree with constant or sparse-linear leaves.
- :class:`DAgger`: learns any student from a teacher (behaviour cloning with ``n_iter=0``),
  with VIPER-style critic weighting for teachers that have a Q-function.
- :class:`LeafTuner`: tunes a tree's leaves on the real return (augmented random search).
- :mod:`distill.prune`: cost-complexity pruning, pruning to a leaf budget, merging look-alike leaves.
- :func:`distill_tree`: the whole job behind ``interp-rl distill tree``.
"""

from distill.dagger import DAgger, DistillInterrupted
from distill.finetune import LeafTuner
from distill.prune import collapse_similar, cost_complexity_path, prune, prune_to_leaves
from distill.run import TreeDistillConfig, distill_tree
from distill.tree import TreePolicy

__all__ = [
    "DAgger",
    "DistillInterrupted",
    "LeafTuner",
    "TreeDistillConfig",
    "TreePolicy",
    "collapse_similar",
    "cost_complexity_path",
    "distill_tree",
    "prune",
    "prune_to_leaves",
]
