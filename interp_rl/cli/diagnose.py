"""``interp-rl diagnose``: why a controller fails, and its repair."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from interp_rl.cli._app import (
    _rerun_command,
    app,
    cli_errors,
    err,
    out,
)
from interp_rl.errors import InterpRLError
from interp_rl.seeds import TRAIN_EVAL_SEED_OFFSET


@app.command()
@cli_errors
def diagnose(
    controller: Annotated[Path, typer.Argument(help="A distilled controller (its folder or controller.json).")],
    teacher: Annotated[str, typer.Option(help="The teacher it was distilled from (SB3 .zip, zoo or train folder).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.html, report.md and diagnosis.json.")],
    episodes: Annotated[int, typer.Option(help="Fresh episodes, controller and teacher on the same seeds.")] = 100,
    seed: Annotated[int | None, typer.Option(
        help="Reset seed of the first episode [default: 10000000, far from every seed distillation uses].")] = None,
    window: Annotated[int, typer.Option(help="Steps before each point of no return searched for critical states.")
                      ] = 100,
    critical: Annotated[int, typer.Option(help="Critical states kept per failed episode.")] = 5,
    horizon: Annotated[int, typer.Option(
        help="Look-ahead steps judging an action for a teacher without a Q-function (PPO, TRPO).")] = 25,
    neighbours: Annotated[int, typer.Option(help="Nearest recorded teacher states shown as evidence.")] = 5,
    data: Annotated[Path | None, typer.Option(
        help="Distillation data (a folder holding distillation.npz, or the file) [default: the controller's].")] = None,
    frames: Annotated[bool, typer.Option(help="Draw frames around the points of no return.")] = True,
    attribution: Annotated[bool, typer.Option(help="Shapley values of teacher and controller at critical states.")
                           ] = True,
    repair: Annotated[bool, typer.Option(
        help="Then repair it: targeted DAgger from the run-up to its failures, refitted as its method made it (and "
             "fine-tuned on the return if it was); written to OUT/repaired, measured before and after on other "
             "fresh episodes.")] = False,
    repair_rounds: Annotated[int, typer.Option(help="Repair rounds (each on new episodes).")] = 3,
    repair_episodes: Annotated[int, typer.Option(help="Episodes per repair round.")] = 50,
    legacy_model: Annotated[bool, typer.Option(help="Walker2d: use the pre-v5 model file.")] = False,
) -> None:
    """Find out why a controller fails where its teacher would not: failure rate, points of no return, critical
    states with the piece that acted and the evidence it rests on, piece graphs; one page (report.html)."""

    import torch

    from envs.loading import load_teacher
    from interp_rl.diagnose import DIAGNOSE_SEED
    from interp_rl.diagnose import diagnose as run_diagnosis
    from interp_rl.diagnosis_report import write_diagnosis
    from interp_rl.evidence import DATA_FILE, load_data
    from interp_rl.program import load_controller
    from interp_rl.validation import check_int

    torch.set_num_threads(1)
    for name, value in (("episodes", episodes), ("window", window), ("critical", critical), ("horizon", horizon),
                        ("neighbours", neighbours), ("repair_rounds", repair_rounds),
                        ("repair_episodes", repair_episodes)):
        check_int(value, name, "interp-rl diagnose")  # before any loading; cli_errors names the option as typed
    ctrl = load_controller(controller)
    t = load_teacher(teacher, env=ctrl.task or None, legacy_model=legacy_model)
    note = ""
    try:
        given = data if data is None or data.is_dir() else data.parent
        if data is not None and data.is_file() and data.name != DATA_FILE:
            raise InterpRLError(f"--data {str(data)!r}: expected a folder holding {DATA_FILE}, or that file.")
        evidence = load_data(given if given is not None else controller)
    except InterpRLError as exc:
        if data is not None or "corrupt" in str(exc):
            raise
        evidence, note = None, str(exc)
        err.print(f"Note: {note}", markup=False, soft_wrap=True)
    t0 = time.perf_counter()
    from interp_rl._progress import Steps

    with Steps(err, transient=True) as bar:
        jobs: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in jobs:
                jobs[stage] = bar.task(stage.capitalize(), total=total)
            bar.update(jobs[stage], completed=done, total=total)

        d = run_diagnosis(ctrl, t, episodes=episodes, seed=DIAGNOSE_SEED if seed is None else seed, window=window,
                          critical=critical, horizon=horizon, neighbours=neighbours, data=evidence,
                          evidence_note=note, attribution=attribution, frames=frames, progress=progress)
    repaired = None
    if repair:
        from distill.failure_repair import repair_controller

        with Steps(err, transient=True) as bar:
            job = bar.task("Repairing")

            def on_repair(row: dict[str, Any]) -> None:
                if "repair_round" not in row:
                    text = f"Fine-tuning the repaired controller: {row.get('step')} transitions"
                elif row["repair_round"] == 0:
                    text = "Repair: the controller as it is scored on held-out episodes"
                else:
                    text = (f"Repair round {row['repair_round']}: {row['failed']} of {row['episodes']} episodes "
                            f"failed, {row['rows']} teacher-labelled states added")
                bar.update(job, description=text)

            repaired = repair_controller(controller if controller.is_dir() else controller.parent, t,
                                         out_dir / "repaired", rounds=repair_rounds, episodes=repair_episodes,
                                         window=window, measure_episodes=episodes,
                                         measure_seed=d.seed + TRAIN_EVAL_SEED_OFFSET,
                                         seed=0 if seed is None else seed, progress=on_repair)
    paths = write_diagnosis(d, out_dir, command=_rerun_command(False), repair=repaired)
    lo, hi = d.rate_interval
    out.print(f"{d.n_failed} of {d.episodes} episodes failed ({100 * d.rate:.1f}%, 95% interval {100 * lo:.1f}-"
              f"{100 * hi:.1f}%), below half the teacher's mean {d.teacher_mean:.1f}.")
    for fe in d.failed[:10]:
        where = "the teacher fails it too" if fe.no_return is None else f"point of no return at step {fe.no_return}"
        worst = f"; costliest step {fe.critical[0].step} ({fe.critical[0].piece_label})" if fe.critical else ""
        out.print(f"  seed {fe.seed}: {fe.percent_of_teacher:.1f}% of the teacher, {where}{worst}")
    if d.n_failed > 10:
        out.print(f"  ... and {d.n_failed - 10} more (see the report)")
    if repaired is not None:
        ba = repaired["before_after"]
        for name in ("before", "after"):
            r = ba[name]
            out.print(f"{name.capitalize()} repair, {ba['episodes']} other fresh episodes: "
                      f"{r['percent_of_teacher']:.1f}% of the teacher, worst {r['worst_percent_of_teacher']:.1f}%, "
                      f"{r['failures']} failed.")
        out.print(f"Wrote the repaired controller to {out_dir / 'repaired'}")
    out.print(f"Wrote {paths['html']}, {paths['markdown']} and {paths['json']} ({time.perf_counter() - t0:.0f} s)")


