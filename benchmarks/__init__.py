"""Benchmarks and their committed reports (``benchmarks/results/``).

Stand-alone studies (:mod:`benchmarks.studies`): each has ``run`` parts, and a ``report`` part that rebuilds its
report from its records alone, in its folder under ``benchmarks/results/``:

- ``python -m benchmarks.studies.attribution``: Shapley attribution against exact values and shap's explainers
  (``attribution/``).
- ``python -m benchmarks.studies.dyna``: the Dyna loop on a SINDy surrogate against model-free SAC, in real steps
  (``dyna/``).
- ``python -m benchmarks.studies.teacher_returns``: returns of the shared RL-Zoo teachers on ``-v5``
  (``teachers/``).
- ``python -m benchmarks.studies.train_budget``: steps ``interp-rl train`` needs to solve a task
  (``train_budget/``).
"""

#: The distribution that ships this package (read by interp_rl._packages: other distributions may use the name).
DISTRIBUTION = "interp-rl"

# The benchmarks.sections package registers the report's sections; importing it here fills the registry whichever
# module of the package is imported first (a suite checks the sections it names against it).
import benchmarks.sections  # noqa: E402,F401
