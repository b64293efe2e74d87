"""The verdicts on one controller, with the domain they hold on.

:class:`Verification` is what :func:`interp_rl.verify.verify` returns; this module holds it and the statistics
of the probabilistic check (:class:`Sampled`, :func:`clopper_pearson_upper`), apart from the engine that decides
the properties, so that the stages that use a verdict (the repairs) do not import the engine, and apart from the
report that renders it (:mod:`interp_rl.verify.report`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import interp_rl.verify.report as report
from interp_rl.program import Controller
from interp_rl.verify.properties import PropertySet
from interp_rl.verify.prove import Verdict
from interp_rl.verify.search import TeacherSearch

__all__ = ["CONFIDENCE", "Sampled", "Verification", "clopper_pearson_upper"]


#: Confidence of the Clopper-Pearson bound on the share of states that break a property.
CONFIDENCE = 0.95


def clopper_pearson_upper(k: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper-Pearson upper bound of a rate seen ``k`` times in ``n`` draws.

    >>> round(clopper_pearson_upper(0, 100), 4), round(clopper_pearson_upper(5, 100), 4)
    (0.0295, 0.1023)
    """
    from scipy.stats import beta

    if n <= 0:
        return 1.0
    if k >= n:
        return 1.0
    return float(beta.ppf(confidence, k + 1, n - k))


@dataclass
class Sampled:
    """The probabilistic check: how many of the visited states in ``when`` break the property."""

    states: int
    """Visited states where ``when`` holds."""
    violations: int
    upper: float
    """Clopper-Pearson upper bound (at ``confidence``) of the share of such states that break it."""
    confidence: float = CONFIDENCE

    def to_dict(self) -> dict[str, Any]:
        return {"states": self.states, "violations": self.violations, "upper": self.upper,
                "confidence": self.confidence}


@dataclass
class Verification:
    """The verdicts on one controller, with the domain they hold on."""

    controller: Controller
    properties: PropertySet
    lower: np.ndarray
    upper: np.ndarray
    verdicts: list[Verdict]
    sampled: dict[str, Sampled] = field(default_factory=dict)
    """Per property: the probabilistic check on the visited states, when states were given."""
    seconds: float = 0.0
    teacher: dict[str, TeacherSearch] = field(default_factory=dict)
    """Per property: the search of the teacher, when a teacher was given (:mod:`interp_rl.verify.search`)."""
    teacher_sampled: dict[str, Sampled] = field(default_factory=dict)
    """Per property: the probabilistic check of the teacher on the visited states."""
    teacher_source: str = ""
    """Which teacher was searched."""

    def counts(self) -> dict[str, int]:
        """``{"proved": ..., "refuted": ..., "unknown": ...}``."""
        return {s: sum(v.status == s for v in self.verdicts) for s in ("proved", "refuted", "unknown")}

    def verdict(self, name: str) -> Verdict:
        for v in self.verdicts:
            if v.name == name:
                return v
        raise KeyError(f"No property named {name!r}; the properties are {[v.name for v in self.verdicts]}.")

    def to_dict(self) -> dict[str, Any]:
        """The verification as ``verification.json`` holds it (:func:`interp_rl.verify.report.to_dict`)."""
        return report.to_dict(self)

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Header and rows of the summary table (one row per property; :func:`interp_rl.verify.report.table`)."""
        return report.table(self)

    def side_by_side(self) -> list[tuple[str, str]]:
        """``(name, "controller: proved · teacher: 37 counterexamples")`` for every property the teacher was
        searched for (:func:`interp_rl.verify.report.side_by_side`)."""
        return report.side_by_side(self)

    def details(self, precision: int = 4) -> list[str]:
        """One paragraph per property that is not proved: the counterexample or the reason, then the teacher's
        (:func:`interp_rl.verify.report.details`)."""
        return report.details(self, precision)

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write ``verification.json``, ``verification.md`` and ``verification.html`` into ``out_dir`` (atomically);
        returns their paths by format (``json``, ``markdown``, ``html``; :func:`interp_rl.verify.report.write`)."""
        return report.write(self, out_dir)
