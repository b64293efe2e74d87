"""Verify the benchmark's Hopper and HalfCheetah controllers against the committed domain rules, and repair some.

Run from the repository's root::

    python -m benchmarks.studies.verification run [--results benchmarks/results] [--out benchmarks/results/verification]
    python -m benchmarks.studies.verification report [--out benchmarks/results/verification]

``run`` checks every 64-leaf tree and 8-expert mixture the benchmark distilled from a Hopper or HalfCheetah teacher
(the ``recipe``, ``mujoco`` and ``verify`` results folders' cells; a cell missing on this machine is skipped and
said so) against ``benchmarks/properties/TASK.toml`` with :func:`interp_rl.verify.verify`, timing each controller;
then repairs the refuted controller/property pairs of :data:`REPAIRS` (:func:`interp_rl.verify.refit.repair` on
the cell's distillation data), verifies them again, and runs the controller before and after for 20 episodes on
the same seeds. It writes the record ``verification.json`` and the report; ``report`` rebuilds the report from the
record alone.
"""

from __future__ import annotations

import argparse
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.studies._common import add_out, add_teachers, new_report, parse, read_json, write_json, write_report

__all__ = ["CONTROLLERS", "REPAIRS", "main", "measure", "report"]

OUT = "benchmarks/results/verification"
RECORD = "verification.json"
#: The committed property files, ``TASK.toml`` (package data of ``benchmarks``).
PROPERTIES = Path(str(resources.files("benchmarks").joinpath("properties")))

#: (results folder, cell) of the controllers checked: the benchmark's 8-expert mixtures and 64-leaf trees of
#: the Hopper and HalfCheetah teachers.
CONTROLLERS: list[tuple[str, str]] = (
    [("recipe", f"{t}__moe-8__seed{s}") for t in ("Hopper-PPO", "Hopper-SAC", "Hopper-TD3", "Hopper-TRPO",
                                                  "HalfCheetah-PPO", "HalfCheetah-SAC") for s in range(3)]
    + [("verify", f"{t}__{m}-64__seed{s}") for t in ("Hopper-SAC", "Hopper-PPO", "HalfCheetah-SAC", "HalfCheetah-PPO")
       for m in ("tree", "tree-constant") for s in range(3)]
)

#: (results folder, cell, property) repaired: refuted pairs of both tasks and both kinds.
REPAIRS: list[tuple[str, str, str]] = [
    ("recipe", "Hopper-SAC__moe-8__seed0", "foot not into its upper stop"),
    ("recipe", "Hopper-PPO__moe-8__seed0", "thigh not into its upper stop"),
    ("recipe", "HalfCheetah-SAC__moe-8__seed0", "front foot not into its upper stop"),
    ("recipe", "HalfCheetah-PPO__moe-8__seed0", "back thigh not into its lower stop"),
    ("verify", "HalfCheetah-SAC__tree-64__seed0", "back thigh not into its lower stop"),
    ("verify", "Hopper-SAC__tree-64__seed0", "foot not into its upper stop"),
]

EPISODES = 20


def _check(folder: Path) -> tuple[Any, Any, np.ndarray | None]:
    from interp_rl.program import load_controller
    from interp_rl.verify import load_properties

    ctrl = load_controller(folder)
    props = load_properties(PROPERTIES / f"{ctrl.task}.toml", features=ctrl.features, actions=ctrl.actions)
    states = np.load(folder / "states.npy") if (folder / "states.npy").is_file() else None
    return ctrl, props, states


#: The shared teachers of the cells repaired (their names in the suites), as ``(algo, zoo env)``.
TEACHERS = {"Hopper-SAC": ("sac", "Hopper-v3"), "Hopper-PPO": ("ppo", "Hopper-v3"),
            "HalfCheetah-SAC": ("sac", "HalfCheetah-v3"), "HalfCheetah-PPO": ("ppo", "HalfCheetah-v3")}


def _teacher_side(ctrl: Any, props: Any, name: str, states: np.ndarray | None, cell: str,
                  teachers: Path | None) -> dict[str, Any]:
    """The rule searched on the cell's neural teacher (sampling and gradient ascent on the domain box; its share of
    the controller's visited states that break it), when the shared teachers are at hand."""
    from envs.loading import load_teacher
    from interp_rl.verify import verify

    spec = TEACHERS.get(cell.split("__")[0])
    if teachers is None or spec is None or not (Path(teachers) / spec[0]).is_dir():
        return {}
    teacher = load_teacher(folder=teachers, algo=spec[0], env=spec[1])
    found = verify(ctrl, props, states=states, names=[name], teacher=teacher, seed=0)
    search = found.teacher[name]
    visited = found.teacher_sampled.get(name)
    return {"teacher": f"{spec[0]}/{spec[1]}", "teacher_counterexamples": search.counterexamples,
            "teacher_samples": search.samples, "teacher_ascents": search.ascents,
            "teacher_visited": None if visited is None else visited.to_dict()}


def measure(results: Path, teachers: Path | None = None) -> dict[str, Any]:
    """Verify :data:`CONTROLLERS` and repair :data:`REPAIRS` (see the module docstring).

    Parameters
    ----------
    results
        The folder holding the benchmark's results folders (``recipe``, ``verify``, ...).
    teachers
        The shared teachers, to search each repaired rule on the cell's teacher too (``None``: not searched).

    Returns
    -------
    dict
        ``controllers`` (one row per controller checked), ``repairs`` (one per pair) and ``missing`` (cells not
        on this machine).
    """
    import torch

    from envs import env_factory
    from interp_rl.evidence import load_data
    from interp_rl.rollouts import evaluate
    from interp_rl.verify import verify
    from interp_rl.verify.refit import repair

    torch.set_num_threads(1)
    rows, missing = [], []
    for suite, cell in CONTROLLERS:
        folder = results / suite / "cells" / cell
        if not (folder / "controller.json").is_file():
            missing.append(f"{suite}/{cell}")
            continue
        ctrl, props, states = _check(folder)
        result = verify(ctrl, props, states=states)
        rows.append({"suite": suite, "cell": cell, "task": ctrl.task, "kind": ctrl.kind, "size": ctrl.size(),
                     "counts": result.counts(), "seconds": result.seconds,
                     "verdicts": {v.name: {"status": v.status, "regions": v.regions, "seconds": v.seconds,
                                           "reason": v.reason} for v in result.verdicts}})
        print(f"{suite}/{cell}: {result.counts()} in {result.seconds:.2f} s", flush=True)
    fixes = []
    for suite, cell, name in REPAIRS:
        folder = results / suite / "cells" / cell
        if not (folder / "distillation.npz").is_file():
            missing.append(f"{suite}/{cell} (repair)")
            continue
        ctrl, props, states = _check(folder)
        before = verify(ctrl, props, states=states, names=[name])
        if before.verdicts[0].status != "refuted":
            fixes.append({"suite": suite, "cell": cell, "property": name, "before": before.verdicts[0].status})
            continue
        data = load_data(folder)
        t0 = time.perf_counter()
        fixed = repair(ctrl, before, data.observations, data.actions, data.weights)
        seconds = time.perf_counter() - t0
        after = verify(fixed.controller, props, states=states)
        env_fn = env_factory(ctrl.task)
        old = evaluate(ctrl, env_fn, EPISODES, 0, task=ctrl.task)
        new = evaluate(fixed.controller, env_fn, EPISODES, 0, task=ctrl.task)
        side = _teacher_side(ctrl, props, name, states, cell, teachers)
        fixes.append({
            "suite": suite, "cell": cell, "task": ctrl.task, "kind": ctrl.kind, "property": name, **side,
            "before": "refuted", "after": after.verdict(name).status,
            "others_after": {v.name: v.status for v in after.verdicts if v.name != name},
            "others_before": {v.name: v.status for v in verify(ctrl, props, states=states).verdicts
                              if v.name != name},
            "pieces": fixed.pieces, "fit_before": fixed.fit_before, "fit_after": fixed.fit_after,
            "repair_seconds": seconds, "episodes": EPISODES, "seeds": [0, EPISODES - 1],
            "return_before": old.mean_return, "worst_before": float(min(old.returns)),
            "return_after": new.mean_return, "worst_after": float(min(new.returns)),
            "returns_before": old.returns, "returns_after": new.returns})
        print(f"repaired {suite}/{cell} '{name}': {after.verdict(name).status}; return {old.mean_return:.1f} -> "
              f"{new.mean_return:.1f} ({seconds:.1f} s)", flush=True)
    return {"controllers": rows, "repairs": fixes, "missing": missing}


def report(out: Path) -> Path:
    """Rebuild ``report.md`` from the record ``verification.json`` in ``out``.

    Parameters
    ----------
    out
        The study's folder.

    Returns
    -------
    Path
        The ``report.md`` written.
    """
    rec = read_json(Path(out) / RECORD)
    doc = new_report("Verification of the benchmark's controllers against domain rules", "verification",
                     ["interp-rl bench --suite verify --out benchmarks/results/verify",
                      "python -m benchmarks.studies.verification run"])
    rows = rec["controllers"]
    doc.p("Every Hopper and HalfCheetah controller of 64 leaves or 8 experts in the benchmark, checked against its "
          "task's property file in `benchmarks/properties/` (every rule decided on the whole domain box the file "
          "gives, by linear programs region by region). Seconds: all the rules of one controller, on one core.")
    doc.table(["controller", "kind", "parameters", "regions", "proved", "refuted", "unknown", "seconds"],
              [[f"{r['suite']}/{r['cell']}", r["kind"], str(r["size"]["parameters"]),
                str(max(v["regions"] for v in r["verdicts"].values())), str(r["counts"]["proved"]),
                str(r["counts"]["refuted"]), str(r["counts"]["unknown"]), f"{r['seconds']:.2f}"] for r in rows])
    if rows:
        slowest = max(rows, key=lambda r: r["seconds"])
        undecided = sum(r["counts"]["unknown"] for r in rows)
        doc.p(f"{len(rows)} controllers, {sum(sum(r['counts'].values()) for r in rows)} verdicts, {undecided} "
              f"undecided; the slowest controller took {slowest['seconds']:.2f} s ({slowest['suite']}/"
              f"{slowest['cell']}).")
        names = sorted({(r["task"], n) for r in rows for n in r["verdicts"]})
        doc.h(2, "Rule by rule")
        def tally(task: str, name: str, kind: str) -> str:
            mine = [r["verdicts"][name]["status"] for r in rows if r["task"] == task and r["kind"] == kind]
            return f"{mine.count('proved')} / {mine.count('refuted')}" if mine else ""

        doc.table(["task", "rule", "mixtures proved / refuted", "trees proved / refuted"],
                  [[task, n, tally(task, n, "mixture"), tally(task, n, "tree")] for task, n in names])
    fixes = [f for f in rec["repairs"] if "after" in f]
    if fixes:
        doc.h(2, "Repairs")
        doc.p(f"Each refuted pair repaired by `interp-rl verify --repair` (the failing pieces refitted on the "
              f"distillation data under the rule on their whole region; splits and router kept), verified again, "
              f"then run before and after on the same {fixes[0]['episodes']} episodes (seeds "
              f"{fixes[0]['seeds'][0]}-{fixes[0]['seeds'][1]}). Teacher: the same rule searched on the cell's "
              "neural teacher (20,000 states sampled where the rule applies and 64 gradient ascents on the "
              "violation; in brackets, how many of the controller's visited states where it applies the teacher "
              "breaks it on). Other rules: how many of the file's other rules are proved before → after. A rule "
              "the teacher breaks on most of the box asks for a gait other than the one the controller copied: "
              "imposing it on the pieces' whole regions then costs return.")
        doc.table(["controller", "rule", "teacher", "pieces refitted", "after repair", "other rules proved",
                   "return before (worst)", "return after (worst)", "change", "seconds"],
                  [[f"{f['suite']}/{f['cell']}", f["property"], _teacher_text(f), str(len(f["pieces"])), f["after"],
                    f"{sum(s == 'proved' for s in f['others_before'].values())} → "
                    f"{sum(s == 'proved' for s in f['others_after'].values())}",
                    f"{f['return_before']:.0f} ({f['worst_before']:.0f})",
                    f"{f['return_after']:.0f} ({f['worst_after']:.0f})",
                    f"{100 * (f['return_after'] - f['return_before']) / abs(f['return_before']):+.1f}%",
                    f"{f['repair_seconds']:.1f}"] for f in fixes])
    if rec["missing"]:
        doc.p("Not on the machine that ran it (skipped): " + ", ".join(rec["missing"]) + ".")
    return write_report(doc, out)


def _teacher_text(f: dict[str, Any]) -> str:
    """``controller: refuted · teacher: 37 counterexamples (5 of 75 visited states)`` for one repaired pair."""
    if "teacher_counterexamples" not in f:
        return "not searched"
    n = f["teacher_counterexamples"]
    found = (f"{n:,} counterexamples" if n else
             f"none found in {f['teacher_samples']:,} + {f['teacher_ascents']} ascents")
    seen = f.get("teacher_visited")
    if seen:
        found += f" ({seen['violations']} of {seen['states']} visited states)"
    return f"controller: refuted · teacher: {found}"


def main(argv: list[str] | None = None) -> None:
    """The command line: ``run`` (verify and repair, then report) or ``report``.

    Parameters
    ----------
    argv
        The arguments (None: the command line's).
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.verification",
                                     description=(__doc__ or "").splitlines()[0])
    parts = parser.add_subparsers(dest="part", required=True)
    r = parts.add_parser("run")
    r.add_argument("--results", type=Path, default=Path("benchmarks/results"),
                   help="the folder of the benchmark's results folders")
    add_teachers(r)
    add_out(r, OUT)
    add_out(parts.add_parser("report"), OUT)
    args = parse(parser, argv)
    if args.part == "run":
        write_json(args.out / RECORD, measure(args.results, args.teachers))
    report(args.out)


if __name__ == "__main__":
    main()
