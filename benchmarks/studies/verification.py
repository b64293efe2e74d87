"""Verify the benchmark's Hopper and HalfCheetah controllers against the committed domain rules, and repair some.

Run from the repository's root::

    python -m benchmarks.studies.verification run [--results benchmarks/results] [--out benchmarks/results/verification]
    python -m benchmarks.studies.verification report [--out benchmarks/results/verification]

``run`` checks every 64-leaf tree and 8-expert mixture the benchmark distilled from a Hopper or HalfCheetah teacher
(the ``recipe``, ``mujoco`` and ``verify`` results folders' cells; a cell missing on this machine is skipped and
said so) against ``benchmarks/properties/TASK.toml`` with :func:`interp_rl.verify.verify`, timing each controller;
then repairs the refuted controller/property pairs of :data:`REPAIRS` (:func:`interp_rl.verify.repair.repair` on
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

from benchmarks.studies._common import add_out, new_report, parse, read_json, write_json, write_report

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


def measure(results: Path) -> dict[str, Any]:
    """Verify :data:`CONTROLLERS` and repair :data:`REPAIRS` (see the module docstring).

    Parameters
    ----------
    results
        The folder holding the benchmark's results folders (``recipe``, ``verify``, ...).

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
    from interp_rl.verify.repair import repair

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
        fixes.append({
            "suite": suite, "cell": cell, "task": ctrl.task, "kind": ctrl.kind, "property": name,
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
              f"{fixes[0]['seeds'][0]}-{fixes[0]['seeds'][1]}). Other rules: how many of the file's other rules "
              "are proved before → after.")
        doc.table(["controller", "rule", "pieces refitted", "after repair", "other rules proved",
                   "return before (worst)", "return after (worst)", "change", "seconds"],
                  [[f"{f['suite']}/{f['cell']}", f["property"], str(len(f["pieces"])), f["after"],
                    f"{sum(s == 'proved' for s in f['others_before'].values())} → "
                    f"{sum(s == 'proved' for s in f['others_after'].values())}",
                    f"{f['return_before']:.0f} ({f['worst_before']:.0f})",
                    f"{f['return_after']:.0f} ({f['worst_after']:.0f})",
                    f"{100 * (f['return_after'] - f['return_before']) / abs(f['return_before']):+.1f}%",
                    f"{f['repair_seconds']:.1f}"] for f in fixes])
    if rec["missing"]:
        doc.p("Not on the machine that ran it (skipped): " + ", ".join(rec["missing"]) + ".")
    return write_report(doc, out)


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
    add_out(r, OUT)
    add_out(parts.add_parser("report"), OUT)
    args = parse(parser, argv)
    if args.part == "run":
        write_json(args.out / RECORD, measure(args.results))
    report(args.out)


if __name__ == "__main__":
    main()
