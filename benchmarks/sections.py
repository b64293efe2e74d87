"""The report's sections as a registry: what each section reads (:class:`ReportContext`), how one is registered
(:func:`register_analysis`) and which a suite's report lays out (:func:`analyses_of`), with the formatters every
section shares (:func:`fmt`, :func:`slug`).

This module imports no section. The built-in sections (:mod:`benchmarks.analyses`), the studies' sections
(:mod:`benchmarks.study_analyses`) and the peers (:mod:`benchmarks.peers`) register themselves here, and the
``benchmarks`` package imports them, so the registry is full whichever module asked first; a section of your own is
one function and one :func:`register_analysis` call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.records import Group, aggregate
from interp_rl.document import Document
from interp_rl.errors import InterpRLError

__all__ = ["ANALYSES", "ON_REQUEST", "Analysis", "ReportContext", "analyses_of", "fmt", "register_analysis", "slug"]


def fmt(v: float | None, spec: str = ".1f") -> str:
    """``v`` formatted with ``spec``, or ``–`` for a missing or non-finite value.

    >>> fmt(3.14159), fmt(None), fmt(float("nan")), fmt(2.5, ".0f")
    ('3.1', '–', '–', '2')
    """
    return "–" if v is None or not np.isfinite(v) else format(v, spec)


def slug(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``-``, ``_`` and ``.`` kept, anything else ``-``.

    >>> slug("HalfCheetah-SAC moe (recipe)")
    'HalfCheetah-SAC-moe--recipe-'
    """
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)


@dataclass
class ReportContext:
    """What every section of a report reads: the results folder, its suite, the records and their groups."""

    results: Path
    suite: dict[str, Any]
    own: list[dict[str, Any]]
    """The records the suite itself ran."""
    compared: dict[str, list[dict[str, Any]]]
    """Records shown beside them, by the results folder they come from (the suite's ``compare``)."""
    summary: dict[str, list[Group]]
    reps: int
    seed: int
    image: Callable[[str, bytes, str], None]
    """``image(file name, bytes, alt text)``: a picture into the page and ``figures/``."""

    @property
    def targets(self) -> dict[str, float]:
        return self.suite.get("targets") or {}

    @functools.cached_property
    def aggregate(self) -> list[dict[str, Any]]:
        """The all-task aggregate (:func:`benchmarks.records.aggregate`), computed once per report."""
        return aggregate(self.summary, reps=self.reps, seed=self.seed)


#: A section of a report: writes into the document what it finds in the context (nothing when it finds nothing).
Analysis = Callable[[ReportContext, Document], None]
#: Every section by name, in the order a report lays them out when its suite names none (``[report] analyses``).
ANALYSES: dict[str, Analysis] = {}


#: Sections a report lays out only when its suite lists them (not in the default set of a suite that lists none).
ON_REQUEST: set[str] = set()


def register_analysis(name: str, *, default: bool = True) -> Callable[[Analysis], Analysis]:
    """Register a report section under ``name``, so that a suite can list it (``[report] analyses = [...]``);
    ``default=False`` keeps it out of the reports of suites that list no sections."""

    def add(fn: Analysis) -> Analysis:
        ANALYSES[name] = fn
        if not default:
            ON_REQUEST.add(name)
        return fn

    return add


def analyses_of(suite: dict[str, Any]) -> list[str]:
    """The sections a suite's report lays out: those it lists (``[report] analyses``), else every registered one
    but those registered on request."""
    names = list((suite.get("report") or {}).get("analyses") or [n for n in ANALYSES if n not in ON_REQUEST])
    unknown = [n for n in names if n not in ANALYSES]
    if unknown:
        raise InterpRLError(f"Suite {suite.get('name', '?')!r} lists unknown report analyses "
                            f"{', '.join(map(repr, unknown))}; known: {', '.join(ANALYSES)}.")
    return names
