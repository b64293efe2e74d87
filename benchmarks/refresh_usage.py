"""Measure again which pieces of each controller act, for records written before the harness did it as it does now.

Usage::

    python -m benchmarks.refresh_usage RESULTS [--teachers DIR] [--all]

A record's ``usage`` (the share of states each expert or leaf acts on, the idle ones, and for a
mixture with idle experts its return without them: ``without_idle``) now comes from every state of
the suite's failure-rate episodes (``rate_episodes``, 100 whole episodes in ``smose``). Records
written earlier counted the 256 latency states, the first steps of one episode, so an expert that
acts later in an episode could read as idle. This reruns those episodes with the cell's saved
controller (``cells/CELL/controller.json``), the same seeds, and rewrites only ``usage`` of the
record (atomically). A record already measured that way is left alone unless ``--all``; a record
whose controller is not there (cell folders are not committed whole) is skipped with a message.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    _failure_rate,
    _load_teacher,
    _piece_usage,
    _teacher_location,
    default_teachers_dir,
    without_idle,
)
from benchmarks.suite import TeacherSpec
from envs.training import TEACHER_FILE
from interp_rl.io import atomic_write_text, json_safe

__all__ = ["refresh_usage"]


def refresh_usage(results: str | Path, teachers_dir: str | Path | None = None, *, every: bool = False,
                  log: Callable[[str], None] = print) -> list[str]:
    """Rewrite ``usage`` of the records in ``results`` measured on the latency states (all with ``every``);
    return the ids of the records rewritten."""
    from interp_rl.program import load_controller

    res = Path(results)
    suite = json.loads((res / "suite.json").read_text())
    episodes = int(suite.get("rate_episodes", 0))
    if episodes <= 0:
        raise ValueError(f"Suite {suite['name']!r} runs no failure-rate episodes (rate_episodes = 0): usage stays "
                         "on the latency states.")
    tdir = Path(teachers_dir) if teachers_dir is not None else default_teachers_dir()
    teachers: dict[str, Any] = {}
    done = []
    for path in sorted((res / "records").glob("*.json")):
        rec = json.loads(path.read_text())
        usage = rec.get("usage")
        if usage is None or (usage.get("episodes") and not every):
            continue  # not piecewise, or measured on the episodes already
        folder = res / rec["controller"]
        if not (folder / "controller.json").is_file():
            log(f"{rec['id']}: skipped, no controller in {folder}")
            continue
        name = rec["cell"]["teacher"]
        if name not in teachers:
            spec = TeacherSpec(**next(t for t in suite["teachers"] if t["name"] == name))
            ready = _teacher_location(spec, res, tdir)
            ready = ready / TEACHER_FILE if spec.train is not None else ready
            teachers[name] = _load_teacher(spec, res, tdir) if ready.exists() else None
        if teachers[name] is None:
            log(f"{rec['id']}: skipped, teacher {name} is not there (a suite's trained teacher: run the suite)")
            continue
        teacher, seed = teachers[name], int(rec["cell"]["seed"])
        controller = load_controller(folder)
        _, seen = _failure_rate(controller, teacher, rec["teacher"]["return_mean"], episodes, seed)
        assert seen is not None
        new = _piece_usage(controller, seen, episodes)
        assert new is not None
        new["without_idle"] = without_idle(controller, new, teacher.env_fn, rec["teacher"]["returns"], seed)
        rec["usage"] = json_safe(new)
        atomic_write_text(path, json.dumps(rec, indent=1) + "\n")
        fewer = new["without_idle"]
        log(f"{rec['id']}: {usage['idle']} idle on {usage['states']} states -> {new['idle']} on {new['states']}"
            + ("" if fewer is None else f"; without them {fewer['percent_of_teacher']:.1f}% "
                                        f"(with: {rec['percent_of_teacher']:.1f}%)"))
        done.append(rec["id"])
    return done


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="A results folder written by interp-rl bench.")
    ap.add_argument("--teachers", default=None, help="Folder the suite's teacher paths are relative to.")
    ap.add_argument("--all", action="store_true", help="Measure every record again, not only the old ones.")
    args = ap.parse_args(argv)
    done = refresh_usage(args.results, args.teachers, every=args.all)
    print(f"{len(done)} record(s) rewritten.")


if __name__ == "__main__":
    main()
