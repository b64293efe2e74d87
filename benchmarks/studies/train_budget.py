"""How fast ``interp-rl train`` balances InvertedPendulum-v5 (the README's training budget).

Run from the repository's root::

    python -m benchmarks.studies.train_budget run [--algo sac] [--env InvertedPendulum-v5] [--steps 10000]
        [--seeds 0 1 2 3 4] [--target 1000] [--out benchmarks/results/train_budget]
    python -m benchmarks.studies.train_budget report [--out benchmarks/results/train_budget]

For each seed, ``run`` trains with the shipped hyperparameters and records the evaluation return at every
checkpoint, the first step at which it reached the target, the wall time, and the final 10-episode return of
the saved model, into the record ``ALGO_ENV.json`` in ``--out``; then it writes the report. ``report`` rebuilds
``report.md`` from the records alone, a section per record.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.studies._common import add_out, new_report, parse, read_json, write_json, write_report

__all__ = ["main", "report", "run"]

OUT = "benchmarks/results/train_budget"
TARGET = 1000.0


def run(algo: str, env: str, steps: int, seeds: list[int], target: float = TARGET) -> dict[str, Any]:
    """Train one agent per seed and record when it first reached ``target``.

    Parameters
    ----------
    algo, env
        What ``interp-rl train`` trains (``sac``, ``InvertedPendulum-v5``), with its shipped hyperparameters.
    steps
        Training steps of each run.
    seeds
        One run per seed.
    target
        The evaluation return to reach.

    Returns
    -------
    dict
        The record: ``algo``, ``env``, ``target`` and the ``runs``, one per seed.
    """
    from envs.loading import load_teacher
    from envs.training import TrainConfig, train_teacher
    from interp_rl.rollouts import evaluate

    rows = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            meta = train_teacher(TrainConfig(algo, env, steps, tmp, seed=seed), progress_bar=False)
            wall = time.perf_counter() - start
            teacher = load_teacher(tmp)
            assert teacher.env_fn is not None
            final = evaluate(teacher, teacher.env_fn, 10, seed=0, task=teacher.task)
        reached = [h["step"] for h in meta["history"] if (h["eval_return"] or 0) >= target]
        rows.append({
            "seed": seed, "steps": steps, "wall_seconds": wall,
            "first_step_at_target": reached[0] if reached else None,
            "kept_step": meta["model_step"], "final_return_10_episodes": final.mean_return,
            "history": meta["history"],
        })
        print(f"seed {seed}: reached {target:g} at step {rows[-1]['first_step_at_target']}, "
              f"saved model returns {final.mean_return:.1f}, {wall:.0f} s", flush=True)
    return {"algo": algo, "env": env, "target": target, "runs": rows}


def _command(record: dict[str, Any]) -> str:
    runs = record["runs"]
    target = "" if record["target"] == TARGET else f" --target {record['target']:g}"
    return (f"python -m benchmarks.studies.train_budget run --algo {record['algo']} --env {record['env']} "
            f"--steps {runs[0]['steps']} --seeds {' '.join(str(r['seed']) for r in runs)}{target}")


def report(out: Path) -> Path:
    """Rebuild ``report.md`` from the records (``ALGO_ENV.json``) in ``out``, a section per record.

    Parameters
    ----------
    out
        The study's folder.

    Returns
    -------
    Path
        The ``report.md`` written.
    """
    records = [read_json(p) for p in sorted(Path(out).glob("*.json"))]
    doc = new_report("Steps `interp-rl train` needs to reach a target return", "train_budget",
                     [_command(d) for d in records])
    for d in records:
        doc.h(2, f"`interp-rl train --algo {d['algo']} --env {d['env']}`: steps to return {d['target']:g}")
        doc.p("On a 2-core CPU machine, one torch thread. Evaluation: 5 deterministic episodes at every checkpoint "
              "(every 1,000 steps); the saved model is the best evaluated one, then re-evaluated over 10 episodes "
              "(seeds 0-9).")
        doc.table(["seed", "first step with evaluation return >= target", "saved model's step",
                   "saved model, 10 episodes", "wall time"],
                  [[str(r["seed"]), str(r["first_step_at_target"]), str(r["kept_step"]),
                    f"{r['final_return_10_episodes']:.1f}", f"{r['wall_seconds']:.0f} s"] for r in d["runs"]])
    return write_report(doc, out)


def main(argv: list[str] | None = None) -> None:
    """The command line: ``run`` (train, then report) or ``report``.

    Parameters
    ----------
    argv
        The arguments (None: the command line's).
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.train_budget",
                                     description=(__doc__ or "").splitlines()[0])
    parts = parser.add_subparsers(dest="part", required=True)
    r = parts.add_parser("run")
    r.add_argument("--algo", default="sac")
    r.add_argument("--env", default="InvertedPendulum-v5")
    r.add_argument("--steps", type=int, default=10_000)
    r.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    r.add_argument("--target", type=float, default=TARGET, help="the evaluation return to reach")
    add_out(r, OUT)
    add_out(parts.add_parser("report"), OUT)
    args = parse(parser, argv)
    if args.part == "run":
        write_json(args.out / f"{args.algo}_{args.env}.json",
                   run(args.algo, args.env, args.steps, args.seeds, args.target))
    report(args.out)


if __name__ == "__main__":
    main()
