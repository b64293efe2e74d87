"""What a benchmark cell records, typed: :class:`BenchRecord` and the parts it is made of, written as JSON by
:meth:`BenchRecord.to_json` (``RESULTS/records/CELL.json``) and read back by :meth:`BenchRecord.from_dict`.

The JSON schema beside this module (``benchmarks/record.schema.json``) is generated from these classes
(:func:`record_schema`); a test checks that the committed file is what they generate and that every committed record
validates against it. Fields that the oldest committed records lack are optional (``None`` when read). The
measurements a cell makes are registered in :mod:`benchmarks.measurements`; one registered beyond the built-in
fields lands in :attr:`BenchRecord.extra`, written after them.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Union

from benchmarks.suite import Cell
from interp_rl.io import json_safe

__all__ = ["RECORD_SCHEMA", "SCHEMA_FILE", "BenchRecord", "FailureRate", "Fidelity", "FewerPieces", "Latency",
           "PieceUsage", "Size", "StudentResult", "TeacherResult", "record_schema", "to_data", "write_schema"]

#: The ``schema`` every record names: a record of another schema is refused when read.
RECORD_SCHEMA = "interp-rl.bench-record/1"
#: The JSON schema of a record, generated from these classes (:func:`record_schema`).
SCHEMA_FILE = Path(__file__).with_name("record.schema.json")


@dataclass(kw_only=True)
class TeacherResult:
    """The teacher: where it comes from, and its returns on the cell's evaluation episodes."""

    name: str
    """Its name in the suite."""
    source: str
    """The agent's file, or the ``interp-rl train`` command that made it."""
    algo: str
    task: str
    variant: dict[str, Any]
    """The task's settings the teacher was trained with."""
    return_mean: float
    return_std: float
    returns: list[float]
    """One return per evaluation episode (reset seeds ``seed``, ``seed + 1``, ...)."""


@dataclass(kw_only=True)
class StudentResult:
    """The controller's returns on the same evaluation episodes as the teacher's."""

    return_mean: float
    return_std: float
    returns: list[float]
    lengths: list[int]
    """Steps per episode."""
    worst_return: float | None = None
    """The worst episode's return (the oldest records lack it)."""


@dataclass(kw_only=True)
class FailureRate:
    """How often the controller fails: the suite's ``rate_episodes`` extra episodes, apart from the evaluation's."""

    episodes: int
    first_seed: int
    threshold: float
    """Half the teacher's mean return (on the % of teacher scale: 50%)."""
    below_half: int
    rate: float
    worst_percent_of_teacher: float | None
    returns: list[float]


@dataclass(kw_only=True)
class Fidelity:
    """Action fidelity of the controller against the teacher: on states the teacher visits and on its own."""

    teacher_states: dict[str, float]
    """``r2`` and ``mse`` (and ``agreement``, the share of states with the teacher's class, for discrete actions)."""
    student_states: dict[str, float]
    steps: int
    """States of each kind compared."""


@dataclass(kw_only=True)
class FewerPieces:
    """The controller without its idle pieces, run on the cell's evaluation episodes."""

    dropped: list[str]
    experts: int
    """Pieces left."""
    parameters: int
    return_mean: float
    percent_of_teacher: float
    worst_percent_of_teacher: float
    returns: list[float]


@dataclass(kw_only=True)
class PieceUsage:
    """Which pieces (leaves, experts) act, over the controller's visited states."""

    states: int
    episodes: int | None
    """Whole episodes the states come from (the failure-rate episodes); ``None``: the latency states."""
    shares: dict[str, float]
    """Per acting piece, by label: the share of the states on which it acts."""
    idle: int
    """Pieces acting on fewer than ``IDLE_SHARE`` of the states."""
    without_idle: FewerPieces | None
    """The controller without its idle pieces, where there are some and its kind can drop them."""


@dataclass(kw_only=True)
class Size:
    """How big the controller is: the program kind's figures (``Program.size``) and the bytes of each export."""

    EXTRA: ClassVar[dict[str, Any]] = {"type": ["integer", "null"]}
    """A kind's other figures (``router_parameters``, ``library_terms``, ``regions``, ``trees``, ...)."""

    leaves: int | None = None
    depth: int | None = None
    experts: int | None = None
    parameters: int
    nonzero_terms: int
    more: dict[str, int] = field(default_factory=dict)
    """The kind's other figures, in its order; written beside the others, not nested."""
    export_bytes: dict[str, int]
    """Bytes of each export (``json``, ``python``, ``c``)."""

    @classmethod
    def of(cls, size: dict[str, Any], export_bytes: dict[str, int]) -> Size:
        """From a program's ``size()`` and its exports' sizes."""
        named = {f.name for f in dataclasses.fields(cls)} - {"more", "export_bytes"}
        return cls(**{k: v for k, v in size.items() if k in named}, export_bytes=export_bytes,
                   more={k: v for k, v in size.items() if k not in named})

    def to_dict(self) -> dict[str, Any]:
        return {"leaves": self.leaves, "depth": self.depth, "experts": self.experts, "parameters": self.parameters,
                "nonzero_terms": self.nonzero_terms, **self.more, "export_bytes": self.export_bytes}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Size:
        return cls.of({k: v for k, v in d.items() if k != "export_bytes"}, d["export_bytes"])


@dataclass(kw_only=True)
class Latency:
    """Seconds per action (medians): the teacher's SB3 ``predict`` and bare forward pass against the controller's
    exported Python and C ``act``, one observation and batched; and the speed-ups."""

    compares: str | None = None
    """What is timed against what, in words (the oldest records lack it)."""
    teacher_single_s: float
    teacher_forward_s: float | None = None
    teacher_batch_s_per_obs: float
    student_single_s: float
    student_batch_s_per_obs: float
    student_c_native_s: float | None
    """``None`` without a C compiler."""
    batch: int
    speedup_single: float | None
    speedup_batch: float | None
    speedup_c_native: float | None
    speedup_c_vs_forward: float | None = None


@dataclass(kw_only=True)
class BenchRecord:
    """One cell of a suite (teacher, method, size, seed): what it is, what it measured, and where it ran."""

    EXTRA: ClassVar[bool] = True
    """Measurements registered beyond the built-in fields (:attr:`extra`)."""

    schema: str = RECORD_SCHEMA
    id: str
    """The cell's id: ``TEACHER__METHOD-SIZE__seedSEED``, also the record's file name."""
    suite: str
    cell: Cell
    task: str
    method: str
    """The suite's label of the method."""
    distiller: str
    """The registered method it runs (``distill.methods.METHODS``)."""
    kind: str | None = None
    """The controller's program kind (the oldest records lack it)."""
    size_name: str
    """The setting the cell's size sets."""
    teacher: TeacherResult
    student: StudentResult
    episodes: int
    episode_seeds: list[int]
    percent_of_teacher: float
    """The controller's mean return as % of the teacher's on the same episodes."""
    worst_percent_of_teacher: float | None = None
    failures: FailureRate | None = None
    """``None`` when the suite runs no failure-rate episodes."""
    fidelity: Fidelity
    usage: PieceUsage | None = None
    """``None`` for a controller that is not piecewise affine."""
    size: Size
    latency: Latency
    distill_seconds: float
    distill_cores: int | None = None
    """The cores the cell's DART levels could use."""
    attribution_agreement: dict[str, Any] | None
    """Shapley importance of teacher against controller (``interp_rl.attribution.teacher_agreement``)."""
    details: dict[str, Any]
    """What distilling made, from its ``metrics.json`` (DAgger's rounds, fine-tuning, restarts, ...)."""
    config: dict[str, Any]
    """The method's settings, resolved."""
    verification: dict[str, Any] | None = None
    """The suite's domain rules decided on the controller (``None``: the suite names no property file)."""
    controller: str
    """The cell's folder, relative to the results folder."""
    versions: dict[str, str]
    machine: dict[str, Any]
    cell_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    """Measurements registered beyond the built-in fields, by name, in their order; written after them."""

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON data: its fields in order, then :attr:`extra`; NaN and infinities as ``None``."""
        data = {f.name: to_data(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "extra"}
        return json_safe({**data, **{k: to_data(v) for k, v in self.extra.items()}})

    def to_json(self) -> str:
        """The record's file: :meth:`to_dict` as indented JSON, with a final newline."""
        return json.dumps(self.to_dict(), indent=1) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BenchRecord:
        """A record read back (``json.loads`` of its file); what an older record lacks is ``None``."""
        return _from_data(cls, d)


def to_data(value: Any) -> Any:
    """``value`` as JSON data: a record's part (a dataclass) as a dict of its fields, recursively; anything else as
    it is.

    >>> to_data(Fidelity(teacher_states={"r2": 0.9}, student_states={"r2": 0.8}, steps=10))
    {'teacher_states': {'r2': 0.9}, 'student_states': {'r2': 0.8}, 'steps': 10}
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict") and not isinstance(value, BenchRecord):
            return value.to_dict()
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_data(v) for v in value]
    return value


def _part_class(hint: Any) -> type | None:
    """The record part (dataclass) a field's type names, if any (``FailureRate | None``: ``FailureRate``)."""
    options = typing.get_args(hint) if _is_union(hint) else (hint,)
    found = [t for t in options if isinstance(t, type) and dataclasses.is_dataclass(t)]
    return found[0] if found else None


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType)


def _from_data(cls: type, d: dict[str, Any]) -> Any:
    if hasattr(cls, "from_dict") and cls is not BenchRecord:
        return cls.from_dict(d)
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.name != "extra"]
    kwargs: dict[str, Any] = {}
    for f in fields:
        if f.name not in d:
            continue
        part = _part_class(hints[f.name])
        value = d[f.name]
        kwargs[f.name] = _from_data(part, value) if part is not None and isinstance(value, dict) else value
    known = {f.name for f in fields}
    if getattr(cls, "EXTRA", False) is True:
        kwargs["extra"] = {k: v for k, v in d.items() if k not in known}
    return cls(**kwargs)


def _type_schema(hint: Any) -> dict[str, Any]:
    """The JSON schema of a field's type: a non-finite float is written as ``null`` (JSON has no NaN), so a float
    may be ``null`` too."""
    if _is_union(hint):
        options = [_type_schema(t) for t in typing.get_args(hint)]
        if all(set(o) == {"type"} for o in options):  # int | None: {"type": ["integer", "null"]}
            merged = [t for o in options for t in ([o["type"]] if isinstance(o["type"], str) else o["type"])]
            return {"type": list(dict.fromkeys(merged))}
        return {"anyOf": options}
    if hint is type(None):
        return {"type": "null"}
    if hint is Any:
        return {}
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": ["number", "null"]}
    origin = typing.get_origin(hint)
    if origin is list:
        return {"type": "array", "items": _type_schema(typing.get_args(hint)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(typing.get_args(hint)[1])}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return {"$ref": f"#/$defs/{hint.__name__}"}
    raise TypeError(f"No JSON schema for the record field type {hint!r}.")


def _class_schema(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    required = []
    for f in dataclasses.fields(cls):
        if f.name in ("extra", "more"):
            continue
        # a cell's size is the value of the setting it varies: a number of leaves, a noise level, a name
        sized = cls is Cell and f.name == "size"
        props[f.name] = {"type": ["integer", "number", "string"]} if sized else _type_schema(hints[f.name])
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    if cls is BenchRecord:
        props["schema"] = {"const": RECORD_SCHEMA}
        required.insert(0, "schema")
    extra = getattr(cls, "EXTRA", False)
    return {"title": cls.__name__, "description": " ".join((cls.__doc__ or "").split()), "type": "object",
            "properties": props, "required": required, "additionalProperties": extra}


def record_schema() -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of a record, generated from :class:`BenchRecord` and its parts.

    >>> schema = record_schema()
    >>> schema["$defs"]["BenchRecord"]["properties"]["schema"]
    {'const': 'interp-rl.bench-record/1'}
    >>> "kind" in schema["$defs"]["BenchRecord"]["required"], "teacher" in schema["$defs"]["BenchRecord"]["required"]
    (False, True)
    """
    parts = [BenchRecord, Cell, TeacherResult, StudentResult, FailureRate, Fidelity, PieceUsage, FewerPieces, Size,
             Latency]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": RECORD_SCHEMA,
            "title": "interp-rl benchmark record", "$ref": "#/$defs/BenchRecord",
            "$defs": {cls.__name__: _class_schema(cls) for cls in parts}}


def write_schema(path: Path = SCHEMA_FILE) -> Path:
    """Write :func:`record_schema` to ``path`` (``benchmarks/record.schema.json``): ``python -m benchmarks.record``."""
    from interp_rl.io import atomic_write_text

    return atomic_write_text(path, json.dumps(record_schema(), indent=1) + "\n")


if __name__ == "__main__":
    print(f"wrote {write_schema()}")
