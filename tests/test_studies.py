"""The stand-alone studies (``benchmarks/studies``): reports rebuilt from their committed records, one ``--out``."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUDIES_DIR = ROOT / "benchmarks" / "studies"
#: study -> its committed folder under benchmarks/results (the default --out)
STUDIES = {"ars": "ars", "attribution": "attribution", "dyna": "dyna", "teacher_returns": "teachers", "train_budget": "train_budget",
           "udrl": "udrl", "verification": "verification"}
#: study -> every part, with the arguments it needs besides --out
PARTS = {
    "ars": [["scratch"], ["workers"], ["ray"], ["import", "--agent", "nowhere"], ["report"]],
    "attribution": [["accuracy"], ["speed"], ["check"], ["report"]],
    "dyna": [["run", "--task", "Pendulum-v1"], ["report"]],
    "teacher_returns": [["run"], ["report"]],
    "train_budget": [["run"], ["report"]],
    "udrl": [["run"], ["read"], ["report"]],
    "verification": [["run"], ["report"]],
}


def _study(name: str):
    return importlib.import_module(f"benchmarks.studies.{name}")


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_the_report_step_rebuilds_the_committed_report_from_the_records(tmp_path: Path, name: str) -> None:
    committed = ROOT / "benchmarks" / "results" / STUDIES[name]
    out = tmp_path / STUDIES[name]
    shutil.copytree(committed, out, ignore=shutil.ignore_patterns("report.*", "figures", "*.zip", "*.npz"))
    assert not (out / "report.md").exists()
    _study(name).main(["report", "--out", str(out)])
    assert (out / "report.md").read_bytes() == (committed / "report.md").read_bytes()
    assert (out / "report.html").is_file()
    figures = sorted(p.name for p in (committed / "figures").glob("*"))
    assert sorted(p.name for p in (out / "figures").glob("*")) == figures


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_an_out_that_is_a_file_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    for part in PARTS[name]:
        for out in (afile, afile / "below"):
            with pytest.raises(SystemExit) as stop:
                _study(name).main([*part, "--out", str(out)])
            message = str(stop.value.code)
            assert message.startswith("Error: --out ") and str(out) in message and "\n" not in message, message
    assert afile.read_text() == "not a folder"


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_the_default_out_is_relative_to_the_current_directory(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    study, seen = _study(name), []
    monkeypatch.setattr(study, "report", seen.append)
    study.main(["report"])
    assert seen == [Path("benchmarks") / "results" / STUDIES[name]]


def test_the_teachers_default_is_the_harness_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    attribution, teacher_returns, seen = _study("attribution"), _study("teacher_returns"), []
    monkeypatch.setenv("INTERP_RL_TEACHERS", str(tmp_path / "zoo"))
    monkeypatch.setattr(attribution, "check", lambda teachers, *a: seen.append(teachers))
    monkeypatch.setattr(teacher_returns, "measure", lambda teachers, seed: seen.append(teachers) or [])
    monkeypatch.setattr(teacher_returns, "report", lambda out: None)
    monkeypatch.setattr(teacher_returns, "write_json", lambda path, data: None)
    attribution.main(["check"])
    teacher_returns.main(["run"])
    assert seen == [tmp_path / "zoo", tmp_path / "zoo"]
    monkeypatch.delenv("INTERP_RL_TEACHERS")
    attribution.main(["check"])
    assert seen[-1] == Path("..") / "shared" / "teachers"


def test_no_study_finds_where_to_write_from_its_own_file_nor_writes_tables_by_hand() -> None:
    modules = sorted(STUDIES_DIR.glob("*.py"))
    assert {p.stem for p in modules} >= set(STUDIES)
    for path in modules:
        text = path.read_text()
        assert "__file__" not in text, path.name
        assert "|---" not in text and '"| ' not in text, path.name  # reports are built with interp_rl.document
