"""A new measurement and a new report section are one registration each: both defined here only.

Nothing outside this file changes: a measurement registered in the harness (the widest action the controller takes
on the states it visits) lands in a one-cell ``bench`` record, after the built-in fields and valid against the
record's schema, and a section registered for the report shows it in ``interp-rl report``; both are unregistered
afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from benchmarks.measurements import MEASUREMENTS, CellRun, register_measurement, unregister_measurement
from benchmarks.record import SCHEMA_FILE
from benchmarks.sections import ANALYSES, ReportContext, register_analysis, unregister_analysis
from interp_rl.cli import app
from interp_rl.document import Document

runner = CliRunner()


def widest_action(run: CellRun) -> dict[str, Any]:
    """The largest |action| the controller takes over its visited states, per action."""
    acts = np.abs(run.controller.predict(run.states))
    return {a.name: float(v) for a, v in zip(run.controller.actions, acts.max(axis=0), strict=True)}


def widest_action_section(ctx: ReportContext, doc: Document) -> None:
    """Per teacher, method and seed: the widest action (the ``widest_action`` measurement)."""
    rows = [[g.teacher, g.method, str(r["cell"]["seed"]), f"{max(r['widest_action'].values()):.3f}"]
            for groups in ctx.summary.values() for g in groups for r in g.records if r.get("widest_action")]
    if rows:
        doc.h(2, "Widest action")
        doc.table(["teacher", "method", "seed", "largest action magnitude"], rows)


@pytest.fixture
def widest() -> Iterator[None]:
    register_measurement("widest_action")(widest_action)
    register_analysis("widest-action")(widest_action_section)
    yield
    unregister_measurement("widest_action")
    unregister_analysis("widest-action")


def test_a_new_measurement_and_section_reach_the_record_and_the_report(widest: None, shared_teachers: Path,
                                                                        tmp_path: Path,
                                                                        single_torch_thread: None) -> None:
    assert "widest_action" in MEASUREMENTS and "widest-action" in ANALYSES
    suite = tmp_path / "widest.toml"
    suite.write_text('name = "widest"\nseeds = [0]\nepisodes = 2\nfidelity_steps = 100\nlatency_batch = 16\n'
                     'attribution_states = 0\n'
                     '[[teachers]]\nname = "Swimmer-SAC"\npath = "sac/Swimmer-v3_1/Swimmer-v3.zip"\n'
                     '[methods.linear]\nsizes = [2]\nsettings = { iterations = 0, steps = 1000, select_episodes = 1 }\n'
                     '[report]\nanalyses = ["summary", "widest-action"]\n')
    results = tmp_path / "results"
    res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(results), "--workers", "1",
                              "--executor", "inline", "--no-progress", "--teachers", str(shared_teachers)])
    assert res.exit_code == 0, res.output

    text = (results / "records" / "Swimmer-SAC__linear-2__seed0.json").read_text()
    record = json.loads(text)
    assert list(record)[-2:] == ["cell_seconds", "widest_action"]
    assert len(record["widest_action"]) == 2  # Swimmer's two joints
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(record, json.loads(SCHEMA_FILE.read_text()))

    res = runner.invoke(app, ["report", str(results)])
    assert res.exit_code == 0, res.output
    report = (results / "report.md").read_text()
    widest = max(record["widest_action"].values())
    assert ("## Widest action\n\n| teacher | method | seed | largest action magnitude |\n|---|---|---|---|\n"
            f"| Swimmer-SAC | linear | 0 | {widest:.3f} |\n") in report


def test_unregistering_leaves_the_built_in_ones(widest: None) -> None:
    unregister_measurement("widest_action")
    unregister_analysis("widest-action")
    assert "widest_action" not in MEASUREMENTS and "widest-action" not in ANALYSES
    assert list(MEASUREMENTS)[:2] == ["teacher", "student"] and "teachers" in ANALYSES
