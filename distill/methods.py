"""The registry of distillation methods: the one list the CLI, the benchmark harness and the demo read.

A :class:`Method` names a distiller, builds its estimator (a :class:`~distill.job.Distillation`
with the method's student) and declares its *options*: the settings a user can give on the
command line (``--max-leaves``), in a config file or in a suite, each mapped to the estimator
parameters it sets (``dagger__student__max_leaves``). Defaults are never written here: an
option's default is the estimator's own (``get_params``), so each default lives in one place.

Adding a distiller: write its student (``fit``/``predict``/``to_controller``) and program kind,
then :func:`register_method` a :class:`Method`. ``interp-rl distill NAME``, suites
(``method = "NAME"``), reports and the demo pick it up.
"""

import distill.recipes  # noqa: F401 - registers the built-in methods
from distill.registry import (  # noqa: F401 - names the harness, the CLI and the tests import from here
    DEFAULT_BUDGET,
    JOB_DEFAULTS,
    JOB_OPTIONS,
    LONG_BUDGET,
    LONG_RL_STEPS,
    METHODS,
    RECIPE_ITERATIONS,
    RECIPE_NOISE_LEVELS,
    RECIPE_RESTARTS,
    RECIPE_RL_STEPS,
    SHAPING,
    SPEED_ONLY,
    JobOption,
    Method,
    Option,
    get_method,
    register_method,
)
