"""interp-rl core: program kinds, policy and teacher protocols, rollouts, export, viz, errors, I/O.

Tasks and teacher loading live in :mod:`envs`; distillers in :mod:`distill`; the benchmark
harness in :mod:`benchmarks`; the command line in :mod:`interp_rl.cli`, on top of them all.
"""

from interp_rl._packages import check_own_packages
from interp_rl.errors import (
    ControllerFormatError,
    InterpRLError,
    Interrupted,
    InvalidParameterError,
    ObservationError,
    TeacherLoadError,
    UnknownAlgorithmError,
    UnknownTaskError,
)
from interp_rl.kinds import LinearProgram, MixtureProgram, TreeProgram  # noqa: I001 - registers the shipped kinds
from interp_rl.policy import Policy, SB3PredictorAdapter, as_sb3_predictor
from interp_rl.program import PROGRAMS, Controller, Program, Signal, load_controller, register_program
from interp_rl.rollouts import EvalResult, Rollout, collect, evaluate
from interp_rl.teachers import Teacher, check_teacher

__version__ = "0.1.0"

__all__ = [
    "PROGRAMS",
    "Controller",
    "ControllerFormatError",
    "EvalResult",
    "InterpRLError",
    "Interrupted",
    "InvalidParameterError",
    "LinearProgram",
    "MixtureProgram",
    "ObservationError",
    "Policy",
    "Program",
    "Rollout",
    "SB3PredictorAdapter",
    "Signal",
    "Teacher",
    "TeacherLoadError",
    "TreeProgram",
    "UnknownAlgorithmError",
    "UnknownTaskError",
    "__version__",
    "as_sb3_predictor",
    "check_teacher",
    "collect",
    "evaluate",
    "load_controller",
    "register_program",
]

check_own_packages()  # envs, distill, benchmarks: ours, not a PyPI namesake's
