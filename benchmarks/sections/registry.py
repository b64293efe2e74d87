"""The report's sections as a registry: how one is registered (:func:`register_analysis`) and which a suite's report
lays out (:func:`analyses_of`).

This module imports no section. The :mod:`benchmarks.sections` package registers the built-in sections, the
studies' and the peers', in the order a report lays them out; a section of your own is one function and one
:func:`register_analysis` call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.sections.context import ReportContext
from interp_rl.document import Document
from interp_rl.errors import InterpRLError

__all__ = ["ANALYSES", "ON_REQUEST", "Analysis", "analyses_of", "register_analysis", "unregister_analysis"]

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


def unregister_analysis(name: str) -> None:
    """Remove the section ``name`` (a section registered for a while, as a test does); unknown names are ignored."""
    ANALYSES.pop(name, None)
    ON_REQUEST.discard(name)


def analyses_of(suite: dict[str, Any]) -> list[str]:
    """The sections a suite's report lays out: those it lists (``[report] analyses``), else every registered one
    but those registered on request."""
    names = list((suite.get("report") or {}).get("analyses") or [n for n in ANALYSES if n not in ON_REQUEST])
    unknown = [n for n in names if n not in ANALYSES]
    if unknown:
        raise InterpRLError(f"Suite {suite.get('name', '?')!r} lists unknown report analyses "
                            f"{', '.join(map(repr, unknown))}; known: {', '.join(ANALYSES)}.")
    return names
