"""``interp-rl demo``: the whole toolkit in one command, from nothing but the installed package.

Trains a small MuJoCo teacher with the project's own ``interp-rl train`` (SAC on
InvertedPendulum-v5, about a minute), runs the ``demo`` suite (every available distiller at a
few sizes) through the benchmark harness, writes the report, and prints the chosen
controller's rules and one decision explained. A rerun continues where a stopped one ended.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from benchmarks.harness import load_records, run_suite
from benchmarks.records import chosen, summarise
from benchmarks.report import write_report
from benchmarks.sections.explanations import explanations
from benchmarks.suite import load_suite

__all__ = ["demo_suite", "run_demo"]


def demo_suite(seed: int = 0) -> Any:
    """The shipped ``demo`` suite with its teacher and distillations seeded by ``seed``."""
    from interp_rl.validation import check_int

    check_int(seed, "seed", "demo", low=0)
    suite = load_suite("demo")
    teachers = tuple(dataclasses.replace(t, train={**t.train, "seed": seed}) if t.train else t
                     for t in suite.teachers)
    return dataclasses.replace(suite, seeds=(seed,), teachers=teachers)


def run_demo(out: str | Path, *, seed: int = 0, workers: int = 2, progress: bool = True,
             console: Any = None) -> dict[str, Any]:
    """Run the demo into ``out``; return the report paths and the summary groups."""
    from rich.table import Table

    from interp_rl._progress import line_console

    con = console or line_console()
    out = Path(out)
    suite = demo_suite(seed)
    con.print(f"interp-rl demo: {' '.join(suite.description.split())}", markup=False)
    result = run_suite(suite, out, workers=workers, progress=progress,
                       log=lambda msg: con.print(msg, markup=False))
    if result.failed:
        from interp_rl.errors import InterpRLError

        raise InterpRLError(f"{len(result.failed)} demo cell(s) failed: "
                            + "; ".join(f"{k}: {v}" for k, v in result.failed.items()))
    paths = write_report(out, seed=seed)
    summary = summarise(load_records(out), seed=seed)
    for teacher, groups in summary.items():
        table = Table(title=f"Transparent controllers against their teacher, {teacher} "
                            f"({groups[0].records[0]['episodes']} evaluation episodes)")
        for col in ("method", "size", "parameters", "return / teacher", "% of teacher", "fidelity R²"):
            table.add_column(col, justify="left" if col == "method" else "right")
        for g in groups:
            table.add_row(g.method, str(g.size), f"{g.mean('size', 'parameters'):.0f}",
                          f"{g.mean('student', 'return_mean'):.0f} / {g.mean('teacher', 'return_mean'):.0f}",
                          f"{g.estimate['iqm']:.1f}", f"{g.mean('fidelity', 'student_states', 'r2'):.3f}")
        con.print(table)
    if summary:
        from interp_rl.compare import FIDELITY_NOTE

        con.print(FIDELITY_NOTE, markup=False)
    for teacher, groups in summary.items():
        for method, g in chosen(groups).items():
            con.print(f"\nChosen {method} controller for {teacher}: size {g.size}, "
                      f"{g.estimate['iqm']:.1f}% of the teacher.", markup=False)
            for part in explanations(out, g):
                if part.kind == "text":
                    con.print(f"{part.title}:\n{part.content}", markup=False)
    return {**paths, "summary": summary}

