"""The committed benchmark reports regenerate from the committed files alone and equal the committed ones."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.report import write_report

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _committed_copy(dest: Path) -> Path:
    """``benchmarks/results`` as committed (``git ls-files``): no cell's working files, no teachers."""
    listed = subprocess.run(["git", "ls-files", "-z", "benchmarks/results"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    files = [f for f in listed if f and (ROOT / f).is_file()]  # (a file deleted but not yet committed: gone)
    assert files, "benchmarks/results holds no committed files"
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)
    return dest / "benchmarks" / "results"


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the git checkout to know what is committed")
def test_a_committed_suite_report_regenerates_byte_for_byte_from_the_committed_files(tmp_path: Path) -> None:
    """The mujoco report (the quickest of the suites' to rebuild); every suite's report is built the same way."""
    results = _committed_copy(tmp_path)
    suite = results / "mujoco"
    shutil.rmtree(suite / "figures")
    (suite / "report.md").unlink()
    write_report(suite)
    assert (suite / "report.md").read_text() == (RESULTS / "mujoco" / "report.md").read_text()
    assert sorted(p.name for p in (suite / "figures").iterdir()) == sorted(
        p.name for p in (RESULTS / "mujoco" / "figures").iterdir())
