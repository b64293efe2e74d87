"""Reproduce the returns of the shared RL-Zoo teachers on the ``-v5`` tasks.

Usage::

    python -m benchmarks.teacher_returns [--teachers ../shared/teachers] [--seed 0]
        [--out benchmarks/results]

Writes ``teachers.json`` and ``teachers.md`` (a table of the measured returns next to the
returns the teachers' README lists) into ``--out``, atomically.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from envs.teachers import load_teacher
from interp_rl.io import atomic_write_text
from interp_rl.rollouts import evaluate

#: (algo, zoo env, episodes, listed v5 return) of each shared teacher.
SHARED: list[tuple[str, str, int, float]] = [
    ("sac", "HalfCheetah-v3", 5, 9341.0),
    ("sac", "Hopper-v3", 20, 1597.0),
    ("ppo", "Hopper-v3", 5, 2437.0),
    ("sac", "Walker2d-v3", 20, 3908.0),
    ("sac", "Swimmer-v3", 5, 336.0),
    ("trpo", "Ant-v3", 5, 5057.0),
]


def measure(teachers: Path, seed: int = 0, extra_episodes: int = 0) -> list[dict[str, Any]]:
    """Evaluate every shared teacher; return one record per teacher."""
    rows = []
    for algo, env, episodes, listed in SHARED:
        start = time.perf_counter()
        teacher = load_teacher(folder=teachers, algo=algo, env=env)
        assert teacher.env_fn is not None
        result = evaluate(teacher, teacher.env_fn, episodes + extra_episodes, seed, task=teacher.task)
        rows.append({
            "teacher": f"{algo}/{env}_1", "task": teacher.task, "algo": algo,
            "obs_dim": teacher.obs_dim, "variant": teacher.variant, "episodes": len(result.returns),
            "seed": seed, "mean_return": result.mean_return, "std_return": result.std_return,
            "returns": result.returns, "listed_return": listed,
            "ratio_to_listed": result.mean_return / listed, "seconds": time.perf_counter() - start,
        })
    return rows


def to_markdown(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# Shared RL-Zoo teachers on the -v5 tasks",
        "",
        f"Regenerate with `{command}`. Deterministic actions; episode *i* reset with `seed + i`.",
        "",
        "| teacher | task | obs | episodes | measured return | listed return | measured / listed |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['teacher']} | {r['task']} | {r['obs_dim']} | {r['episodes']} | "
            f"{r['mean_return']:.1f} ± {r['std_return']:.1f} | {r['listed_return']:.0f} | "
            f"{100 * r['ratio_to_listed']:.1f}% |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teachers", type=Path, default=Path("../shared/teachers"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    rows = measure(args.teachers, args.seed)
    command = f"python -m benchmarks.teacher_returns --seed {args.seed}"
    atomic_write_text(args.out / "teachers.json", json.dumps(rows, indent=2) + "\n")
    atomic_write_text(args.out / "teachers.md", to_markdown(rows, command))
    print(to_markdown(rows, command))


if __name__ == "__main__":
    main()
