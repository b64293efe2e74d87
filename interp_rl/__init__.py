"""interp-rl core: policy protocol, teachers, rollouts, controller programs, export, viz, errors, I/O.

Tasks and teacher loading live in :mod:`envs`; distillers in :mod:`distill`.
"""

from interp_rl.errors import (
    InterpRLError,
    InvalidParameterError,
    ObservationError,
    TeacherLoadError,
    UnknownAlgorithmError,
    UnknownTaskError,
)
from interp_rl.policy import Policy, SB3PredictorAdapter, as_sb3_predictor
from interp_rl.program import Controller, ControllerFormatError, Signal, TreeProgram, load_controller
from interp_rl.rollouts import EvalResult, Rollout, collect, evaluate
from interp_rl.teachers import ObsNormalizer, SB3Teacher

__version__ = "0.1.0"

__all__ = [
    "Controller",
    "ControllerFormatError",
    "Signal",
    "TreeProgram",
    "load_controller",
    "EvalResult",
    "InterpRLError",
    "InvalidParameterError",
    "ObsNormalizer",
    "ObservationError",
    "Policy",
    "Rollout",
    "SB3PredictorAdapter",
    "SB3Teacher",
    "TeacherLoadError",
    "UnknownAlgorithmError",
    "UnknownTaskError",
    "__version__",
    "as_sb3_predictor",
    "collect",
    "evaluate",
]
