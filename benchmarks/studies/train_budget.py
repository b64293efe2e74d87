"""How fast ``interp-rl train`` balances InvertedPendulum-v5 (the README's training budget).

Usage::

    python -m benchmarks.train_budget [--algo sac] [--env InvertedPendulum-v5] [--steps 10000]
        [--seeds 0 1 2 3 4] [--out benchmarks/results]

For each seed: trains with the shipped hyperparameters, records the evaluation return at every
checkpoint, the first step at which it reached the target, the wall time, and the final
10-episode return of the saved model. Writes ``train_<env>.json`` and ``.md`` atomically.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from envs.teachers import load_teacher
from envs.training import TrainConfig, train_teacher
from interp_rl.io import atomic_write_text
from interp_rl.rollouts import evaluate


def run(algo: str, env: str, steps: int, seeds: list[int], target: float) -> list[dict[str, Any]]:
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
    return rows


def to_markdown(rows: list[dict[str, Any]], algo: str, env: str, target: float, command: str) -> str:
    lines = [
        f"# `interp-rl train --algo {algo} --env {env}`: steps to return {target:g}",
        "",
        f"Regenerate with `{command}` (2-core CPU machine, one torch thread).",
        "Evaluation: 5 deterministic episodes at every checkpoint (every 1,000 steps); the saved",
        "model is the best evaluated one, then re-evaluated over 10 episodes (seeds 0-9).",
        "",
        "| seed | first step with evaluation return >= target | saved model's step | "
        "saved model, 10 episodes | wall time |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['first_step_at_target']} | {r['kept_step']} | "
                     f"{r['final_return_10_episodes']:.1f} | {r['wall_seconds']:.0f} s |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="sac")
    parser.add_argument("--env", default="InvertedPendulum-v5")
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--target", type=float, default=1000.0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    rows = run(args.algo, args.env, args.steps, args.seeds, args.target)
    command = (f"python -m benchmarks.train_budget --algo {args.algo} --env {args.env} "
               f"--steps {args.steps} --seeds {' '.join(map(str, args.seeds))}")
    stem = f"train_{args.env.split('-')[0].lower()}"
    atomic_write_text(args.out / f"{stem}.json", json.dumps(rows, indent=2) + "\n")
    text = to_markdown(rows, args.algo, args.env, args.target, command)
    atomic_write_text(args.out / f"{stem}.md", text)
    print(text)


if __name__ == "__main__":
    main()
