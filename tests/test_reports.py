"""Every committed report regenerates from the committed files alone and equals the committed one: each suite's
(``interp-rl report``) and each study's (``python -m benchmarks.studies.NAME report``, named in its report)."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.report import build_report, write_report

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: How a study's report says it is rebuilt.
STUDY_COMMAND = re.compile(r"`python -m benchmarks\.studies\.(\w+) report`")
pytestmark = pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the git checkout to know what is committed")


def _committed(*paths: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z", *paths], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    return [f for f in listed if f and (ROOT / f).is_file()]  # (a file deleted but not yet committed: gone)


def _reports() -> list[str]:
    """The results folders with a committed report: every suite's and study's (not the diagnosis pages in
    ``diagnose/``, one folder down, which ``interp-rl diagnose`` makes by running teacher and controller again)."""
    if not (ROOT / ".git").exists():
        return []
    return sorted(Path(f).parent.name for f in _committed("benchmarks/results/*/report.md")
                  if len(Path(f).parts) == 4)


def _committed_copy(dest: Path, name: str) -> Path:
    """The results folder ``name`` as committed (``git ls-files``: no cell's working files, no teachers), with the
    folders its suite shows beside its own (``compare``); returns the copy of ``name``. A long run's committed
    checkpoint (``cells/CELL/checkpoint/``, there to resume it) is left out: no report reads it."""
    folder = f"benchmarks/results/{name}"
    suite = RESULTS / name / "suite.json"
    compare = json.loads(suite.read_text()).get("compare") or [] if suite.is_file() else []
    files = [f for f in _committed(folder, *(f"benchmarks/results/{other}" for other in compare))
             if "checkpoint" not in Path(f).parts]
    assert files, f"{folder} holds no committed files"
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)
    return dest / folder


def _figures(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "figures").iterdir()) if (folder / "figures").is_dir() else []


@pytest.mark.parametrize("name", _reports())
def test_every_committed_report_regenerates_byte_for_byte_from_the_committed_files(tmp_path: Path, name: str) -> None:
    """A suite's report is built from its records (its text whole, its pictures named but not drawn); a study's is
    rebuilt by its own ``report`` part, pictures and all."""
    copy = _committed_copy(tmp_path, name)
    committed, figures = (copy / "report.md").read_text(), _figures(copy)
    if (copy / "records").is_dir():
        report = build_report(copy)
        assert report.page.markdown() == committed
        assert sorted(report.page.image_names()) == figures
        assert json.dumps(report.summary, indent=1) + "\n" == (copy / "summary.json").read_text()
        return
    study = STUDY_COMMAND.search(committed)
    assert study, f"{name}: neither a suite's records nor a study's `report` command"
    shutil.rmtree(copy / "figures", ignore_errors=True)
    (copy / "report.md").unlink()
    importlib.import_module(f"benchmarks.studies.{study.group(1)}").report(copy)
    assert (copy / "report.md").read_text() == committed
    assert _figures(copy) == figures


def test_a_suite_report_is_written_with_its_pictures_drawn(tmp_path: Path) -> None:
    """The mujoco report (the quickest of the suites' to draw), written as ``interp-rl report`` writes it."""
    suite = _committed_copy(tmp_path, "mujoco")
    committed, figures = (suite / "report.md").read_text(), _figures(suite)
    shutil.rmtree(suite / "figures")
    (suite / "report.md").unlink()
    write_report(suite)
    assert (suite / "report.md").read_text() == committed
    assert _figures(suite) == figures
    assert all((suite / "figures" / f).stat().st_size > 1000 for f in figures)
