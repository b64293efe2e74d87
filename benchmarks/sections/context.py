"""What every section of a report reads: :class:`ReportContext`, the results folder, its suite, the records and
their groups."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.records import Group, aggregate

__all__ = ["Picture", "ReportContext"]

#: A picture's bytes, or a function that draws them when the page is written (a page only read as text never
#: draws it).
Picture = bytes | Callable[[], bytes]


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
    image: Callable[[str, Picture, str], None]
    """``image(file name, picture, alt text)``: a picture into the page and ``figures/``; the picture is its bytes,
    or a function drawing them, called when the page is written."""

    @property
    def targets(self) -> dict[str, float]:
        return self.suite.get("targets") or {}

    @functools.cached_property
    def aggregate(self) -> list[dict[str, Any]]:
        """The all-task aggregate (:func:`benchmarks.records.aggregate`), computed once per report."""
        return aggregate(self.summary, reps=self.reps, seed=self.seed)
