"""A cell's record is typed (benchmarks.record) and its JSON schema is generated from the types: the committed schema
is what they generate, every committed record validates, and a record read back writes the same bytes."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from benchmarks.record import SCHEMA_FILE, BenchRecord, record_schema

ROOT = Path(__file__).resolve().parents[1]


def _committed_records() -> list[Path]:
    """Every committed record (``git ls-files``; without the checkout, every record in the results folders)."""
    if not (ROOT / ".git").exists():
        return sorted((ROOT / "benchmarks" / "results").glob("*/records/*.json"))
    listed = subprocess.run(["git", "ls-files", "-z", "benchmarks/results/*/records/*.json"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return [ROOT / f for f in listed if f and (ROOT / f).is_file()]


def _has_every_field(record: dict) -> bool:
    return {f.name for f in dataclasses.fields(BenchRecord)} - {"extra"} <= set(record)


def test_the_committed_schema_is_the_one_the_record_types_generate() -> None:
    assert SCHEMA_FILE.read_text() == json.dumps(record_schema(), indent=1) + "\n", (
        "benchmarks/record.schema.json is stale: regenerate it with `python -m benchmarks.record`")


def test_every_committed_record_validates_against_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    records = _committed_records()
    assert len(records) > 100
    bad = {}
    for path in records:
        errors = list(validator.iter_errors(json.loads(path.read_text())))
        if errors:
            bad[str(path.relative_to(ROOT))] = f"{errors[0].message} at {list(errors[0].path)}"
    assert bad == {}


def test_a_record_read_back_writes_the_same_bytes() -> None:
    """Every committed record with every field of today's records (the oldest lack some) round-trips exactly:
    key order and numbers as the file has them."""
    current = [p for p in _committed_records() if _has_every_field(json.loads(p.read_text()))]
    assert len(current) >= 20
    for path in current:
        text = path.read_text()
        assert BenchRecord.from_dict(json.loads(text)).to_json() == text, path


def test_an_older_record_reads_with_what_it_lacks_as_none() -> None:
    old = min(_committed_records(), key=lambda p: len(json.loads(p.read_text())))
    rec = BenchRecord.from_dict(json.loads(old.read_text()))
    assert rec.kind is None and rec.verification is None and rec.latency.compares is None
    assert rec.teacher.return_mean == json.loads(old.read_text())["teacher"]["return_mean"]


def test_measurements_beyond_the_built_in_fields_are_written_after_them() -> None:
    newest = next(p for p in _committed_records() if _has_every_field(json.loads(p.read_text())))
    rec = BenchRecord.from_dict({**json.loads(newest.read_text()), "first_action": [0.5, -1.0]})
    assert rec.extra == {"first_action": [0.5, -1.0]}
    rec.extra["first_action"][1] = float("nan")  # written as JSON writes a non-finite number: null
    data = rec.to_dict()
    assert list(data)[-2:] == ["cell_seconds", "first_action"] and data["first_action"] == [0.5, None]
