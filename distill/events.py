"""What a distillation tells its ``progress`` callback: one typed event per kind of step.

A caller matches on the class (``match event: case DaggerRound(round=r): ...``), as the CLI does,
instead of guessing a step from its dict's keys. Every event still reads as the row it replaced
(``event["return_mean"]``, ``"round" in event``, ``dict(event)``), so a callback written against
rows keeps working. Events run side by side (one per DART level) carry ``level``, the level's index.

Examples
--------
>>> event = DaggerRound(round=2, return_mean=311.5, details={"round": 2, "samples": 3000, "return_mean": 311.5})
>>> event["samples"], "round" in event, event.tagged(1).level
(3000, True, 1)
>>> match event:
...     case DaggerRound(round=r, return_mean=ret):
...         print(f"round {r}: return {ret:.0f}")
round 2: return 312
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DaggerRound", "DartLevel", "FineTuneStep", "LevelChosen", "Progress", "ProgressEvent", "RepairRound",
           "RestartScored", "ScratchStep", "SearchStep", "StageNote", "SweepFit", "as_event"]


@dataclass(frozen=True, eq=False)
class ProgressEvent(Mapping[str, Any]):
    """Base of the events: ``level`` (the DART level's index when levels run side by side, else ``None``); the
    mapping view is :meth:`row`."""

    level: int | None = field(default=None, kw_only=True)

    def row(self) -> dict[str, Any]:
        """The event as the dict row earlier versions passed (``level`` only when set)."""
        row = self._row()
        return row if self.level is None else {**row, "level": self.level}

    def _row(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("level", "details")}

    def tagged(self, level: int) -> ProgressEvent:
        """This event from DART level ``level``."""
        return dataclasses.replace(self, level=level)

    def __getitem__(self, key: str) -> Any:
        return self.row()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.row())

    def __len__(self) -> int:
        return len(self.row())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ProgressEvent):
            return type(self) is type(other) and self.row() == other.row()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


Progress = Callable[[ProgressEvent], None]


@dataclass(frozen=True, eq=False)
class DaggerRound(ProgressEvent):
    """A DAgger round ended: its student's held-out ``return_mean`` (NaN when not scored); ``details`` is the round's
    history row (samples, seconds, ...)."""

    round: int
    return_mean: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def _row(self) -> dict[str, Any]:
        return {**self.details, "round": self.round, "return_mean": self.return_mean}


@dataclass(frozen=True, eq=False)
class DartLevel(ProgressEvent):
    """DAgger starts at DART action noise ``noise`` (half action ranges)."""

    noise: float

    def _row(self) -> dict[str, Any]:
        return {"stage": "dart", "noise": self.noise}


@dataclass(frozen=True, eq=False)
class SweepFit(ProgressEvent):
    """One fit of the sparsity sweep: the student's ``param`` at ``value``, its non-zero ``parameters`` and held-out
    returns; ``details`` the sweep's row (its size counts)."""

    param: str
    value: Any
    parameters: int
    return_mean: float
    details: dict[str, Any] = field(default_factory=dict)

    def _row(self) -> dict[str, Any]:
        return dict(self.details)


@dataclass(frozen=True, eq=False)
class RepairRound(ProgressEvent):
    """A failure-repair round: its held-out return and, when it looked for failures, ``failed`` of ``episodes``."""

    repair_round: int
    return_mean: float | None = None
    failed: int | None = None
    episodes: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def _row(self) -> dict[str, Any]:
        return dict(self.details)


@dataclass(frozen=True, eq=False)
class RestartScored(ProgressEvent):
    """A restart (a refit with another seed) scored on held-out episodes."""

    restart: int
    random_state: int
    score: float
    return_mean: float
    return_min: float


@dataclass(frozen=True, eq=False)
class LevelChosen(ProgressEvent):
    """A fine-tuned DART level scored on the further held-out episodes that choose between levels."""

    noise: float
    return_mean: float
    return_min: float

    def _row(self) -> dict[str, Any]:
        return {"stage": "level-choice", "noise": self.noise, "return_mean": self.return_mean,
                "return_min": self.return_min}


@dataclass(frozen=True, eq=False)
class ScratchStep(ProgressEvent):
    """RL from scratch reached ``step`` of ``total`` environment steps (``return_mean`` at its last evaluation)."""

    step: int
    total: int
    return_mean: float | None = None

    def _row(self) -> dict[str, Any]:
        return {"phase": "scratch", "step": self.step, "total": self.total, "return_mean": self.return_mean}


@dataclass(frozen=True, eq=False)
class FineTuneStep(ProgressEvent):
    """Fine-tuning on the return reached ``step`` transitions; ``return_mean`` on its held-out episodes; ``total``
    and ``seconds`` when known; ``details`` the rest of its row."""

    step: int
    return_mean: float
    total: int | None = None
    seconds: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def _row(self) -> dict[str, Any]:
        row: dict[str, Any] = {"phase": "fine-tune"}
        if self.total is not None:
            row["total"] = self.total
        row.update({"step": self.step, **self.details, "return_mean": self.return_mean})
        if self.seconds is not None:
            row["seconds"] = self.seconds
        return row


@dataclass(frozen=True, eq=False)
class SearchStep(ProgressEvent):
    """A random-search update (ARS, CMA-ES, leaf tuning): ``iteration`` and the return it measured; ``details`` the
    rest of its history row (environment steps, seconds, ...)."""

    iteration: int
    return_mean: float
    details: dict[str, Any] = field(default_factory=dict)

    def _row(self) -> dict[str, Any]:
        return {**self.details, "iteration": self.iteration, "return_mean": self.return_mean}


@dataclass(frozen=True, eq=False)
class StageNote(ProgressEvent):
    """A line from any other stage (a stage added by a user, for one): the stage's ``name`` and what it says."""

    stage: str
    text: str


def as_event(row: Mapping[str, Any]) -> ProgressEvent:
    """An event from a row of an earlier version (or a third-party stage that still passes dicts)."""
    if isinstance(row, ProgressEvent):
        return row
    level = row.get("level")
    rest = {k: v for k, v in row.items() if k != "level"}
    if rest.get("stage") == "dart":
        return DartLevel(noise=rest["noise"], level=level)
    if rest.get("stage") == "level-choice":
        return LevelChosen(noise=rest["noise"], return_mean=rest["return_mean"], return_min=rest["return_min"],
                           level=level)
    if "repair_round" in rest:
        return RepairRound(repair_round=rest["repair_round"], return_mean=rest.get("return_mean"),
                           failed=rest.get("failed"), episodes=rest.get("episodes"), details=rest, level=level)
    if "restart" in rest:
        return RestartScored(**{k: rest[k] for k in ("restart", "random_state", "score", "return_mean",
                                                      "return_min")}, level=level)
    if "round" in rest:
        return DaggerRound(round=rest["round"], return_mean=rest.get("return_mean"), details=rest, level=level)
    if "sweep" in rest:
        return SweepFit(param=rest["sweep"], value=rest["value"], parameters=rest["parameters"],
                        return_mean=rest["return_mean"], details=rest, level=level)
    if rest.get("phase") == "scratch":
        return ScratchStep(step=rest["step"], total=rest["total"], return_mean=rest.get("return_mean"), level=level)
    if "step" in rest:
        details = {k: v for k, v in rest.items() if k not in ("phase", "step", "return_mean", "total", "seconds")}
        return FineTuneStep(step=rest["step"], return_mean=rest["return_mean"], total=rest.get("total"),
                            seconds=rest.get("seconds"), details=details, level=level)
    if "iteration" in rest:
        return SearchStep(iteration=rest["iteration"], return_mean=rest["return_mean"], details=rest, level=level)
    return StageNote(stage=str(rest.get("stage", "")), text=str(rest.get("text", rest)), level=level)
