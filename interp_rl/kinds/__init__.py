"""The program kinds shipped with interp-rl, one module each; importing this package registers them.

- :mod:`interp_rl.kinds.tree`: decision trees with constant or sparse-linear leaves (``tree``).
- :mod:`interp_rl.kinds.linear`: sparse linear policies (``linear``).
- :mod:`interp_rl.kinds.mixture`: top-1 mixtures of linear experts with a linear or tree router
  (``mixture``).
- :mod:`interp_rl.kinds.forest`: averaged ensembles of constant-leaf trees (random forests, extra trees;
  ``forest``), the behaviour functions of upside-down RL.
- :mod:`interp_rl.kinds.oblique`: oblique trees with affine leaves, ReLU networks converted exactly into
  their activation regions (``oblique``).
- :mod:`interp_rl.kinds.equations`: sparse equations over a library of terms (SINDy policies;
  ``equations``).

A new kind is a new module here (or anywhere) with a class decorated by
:func:`interp_rl.program.register_program`; see :mod:`interp_rl.program`.
"""

from interp_rl.kinds.equations import EquationsProgram
from interp_rl.kinds.forest import ForestProgram
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.mixture import MixtureProgram
from interp_rl.kinds.oblique import ObliqueProgram
from interp_rl.kinds.tree import TreeProgram, leaf_visit_counts

__all__ = ["EquationsProgram", "ForestProgram", "LinearProgram", "MixtureProgram", "ObliqueProgram", "TreeProgram",
           "leaf_visit_counts"]
