"""The tree-distillation benchmark's report: aggregation over seeds, the smallest tree reaching 90%."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.tree_distillation import cell_dir, smallest_reaching, summarise, write_report


def _cell(out: Path, task: str, config: str, seed: int, pct: float, leaves: int) -> None:
    folder = cell_dir(out, task, config, seed)
    folder.mkdir(parents=True)
    teacher = 1000.0
    (folder / "metrics.json").write_text(json.dumps({
        "leaves": leaves, "depth": 3, "linear_terms": 0, "parameters": 10, "teacher_return": teacher,
        "student_return": teacher * pct / 100, "percent_of_teacher": pct, "distill_seconds": 12.0,
        "best_round": 2, "fidelity_student_states": {"r2": 0.5, "mse": 0.1},
        "fidelity_teacher_states": {"r2": 0.7, "mse": 0.05}, "tuning": {},
    }))


def test_report_aggregates_seeds_and_finds_the_smallest_tree_reaching_the_target(tmp_path):
    for seed, (a, b, c) in enumerate([(80, 95, 99), (85, 93, 98), (70, 91, 97)]):
        _cell(tmp_path, "Hopper", "linear-4", seed, a, 4)
        _cell(tmp_path, "Hopper", "linear-8", seed, b, 8)
        _cell(tmp_path, "Hopper", "linear-64", seed, c, 64)
        _cell(tmp_path, "Walker2d", "linear-8", seed, 20 + seed, 8)
    from benchmarks.tree_distillation import collect_records

    summary = summarise(collect_records(tmp_path))
    assert summary["Hopper"]["linear-4"]["percent_mean"] == pytest.approx((80 + 85 + 70) / 3)
    assert summary["Hopper"]["linear-8"]["seeds"] == [0, 1, 2]
    name, _ = smallest_reaching(summary["Hopper"], 90.0)
    assert name == "linear-8"
    assert smallest_reaching(summary["Walker2d"], 90.0) is None

    text = write_report(tmp_path, tmp_path, "python -m benchmarks.tree_distillation --seeds 0,1,2", {})
    assert "| Hopper (PPO) | 1000 | linear-8 | 8 | 93.0 | linear-64 | 98.0 ± 0.8 |" in text
    assert "| Walker2d (SAC) | 1000 | not reached | – | – | linear-8 | 21.0 ± 0.8 |" in text
    assert "| linear-4 | 4 | 0 | 783 | 78.3 ± 6.2 | [80, 85, 70] (3) | 0.50 | 12 |" in text
    assert (tmp_path / "tree_distillation.png").read_bytes()[:4] == b"\x89PNG"
    saved = json.loads((tmp_path / "tree_distillation.json").read_text())
    assert len(saved["records"]) == 12 and saved["command"].endswith("--seeds 0,1,2")
