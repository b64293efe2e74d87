"""``interp-rl bench``, ``report`` and ``demo``: the benchmark harness and its reports."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from interp_rl.cli._app import (
    _csv,
    _fail,
    app,
    cli_errors,
    out,
)


@app.command()
@cli_errors(resumable="rerun")
def bench(
    suite: Annotated[str, typer.Option(
        help="A shipped suite (quick, demo, mujoco, smose, sindy, sindy-default, recipe, frontier, silver, sensors, "
             "verify) or a suite file (.toml/.yaml) to copy and edit.",
    )] = "quick",
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Results folder; a rerun continues it [default: bench-results/SUITE].")] = None,
    methods: Annotated[str | None, typer.Option(
        help="Only these methods of the suite, comma-separated.")] = None,
    seeds: Annotated[str | None, typer.Option(
        "--seeds", "--seed", help="Only these seeds, comma-separated [default: the suite's].")] = None,
    only_teachers: Annotated[str | None, typer.Option(
        help="Only these teachers of the suite (their names), comma-separated.")] = None,
    workers: Annotated[int, typer.Option(help="Cells run at once.")] = 2,
    executor: Annotated[str, typer.Option(
        help="'process' (a local process pool), 'ray' (Ray tasks) or 'inline' (one cell after another in "
             "this process).")] = "process",
    ray_address: Annotated[str | None, typer.Option(
        help="With --executor ray: the address of a running Ray cluster [default: start a local one].",
    )] = None,
    teachers: Annotated[Path | None, typer.Option(
        help="Folder the suite's teacher paths are relative to "
             "[default: $INTERP_RL_TEACHERS, else ../shared/teachers].")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Run a benchmark suite: one JSON record per (teacher, method, size, seed) cell; resumable."""
    from benchmarks.harness import run_suite
    from benchmarks.suite import load_suite

    s = load_suite(suite)
    results = out_dir or Path("bench-results") / s.name
    result = run_suite(s, results, teachers_dir=teachers, methods=_csv(methods, "--methods"),
                       seeds=_csv(seeds, "--seeds", int), teachers=_csv(only_teachers, "--only-teachers"),
                       workers=workers, executor=executor,
                       ray_address=ray_address, progress=progress and sys.stderr.isatty())
    busy = f", {len(result.busy)} left to another interp-rl bench running them" if result.busy else ""
    out.print(f"{len(result.cells)} cells: {len(result.finished)} run now, {len(result.skipped)} already "
              f"done, {len(result.failed)} failed{busy}. Records in {results / 'records'}.")
    if result.failed:
        _fail(f"{len(result.failed)} cell(s) failed ({', '.join(result.failed)}); rerun the same command to "
              "retry them.")
    out.print(f"Next: interp-rl report {results}")


@app.command()
@cli_errors
def report(
    results: Annotated[Path, typer.Argument(help="A results folder written by interp-rl bench.")],
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Folder for report.md, report.html and figures/ [default: RESULTS].")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap resampling.")] = 0,
    reps: Annotated[int, typer.Option(help="Bootstrap resamples for the confidence intervals.")] = 2000,
) -> None:
    """Write a Markdown and a self-contained HTML report (tables with IQM and CIs, Pareto plots, trees)."""
    from benchmarks.report import write_report
    from interp_rl.validation import check_int

    check_int(reps, "reps", "report")
    check_int(seed, "seed", "report", low=0)
    paths = write_report(results, out_dir, reps=reps, seed=seed)
    out.print(f"Wrote {paths['markdown']} and {paths['html']}")




@app.command()
@cli_errors(resumable="rerun")
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for everything the demo makes.")] = Path(
        "interp-rl-demo"),
    seed: Annotated[int, typer.Option(help="Seed of the teacher's training and of every distillation.")] = 0,
    workers: Annotated[int, typer.Option(help="Cells run at once.")] = 2,
) -> None:
    """Train a small MuJoCo teacher, distil every available controller, explain them, write the report."""

    from benchmarks.demo import run_demo

    t0 = time.perf_counter()
    summary = run_demo(out_dir, seed=seed, workers=workers, progress=sys.stderr.isatty(), console=out)
    out.print(f"Demo finished in {time.perf_counter() - t0:.0f} s. Report: {summary['html']} "
              f"(Markdown: {summary['markdown']}).")


