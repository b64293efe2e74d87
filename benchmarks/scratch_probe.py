"""RL from scratch against the warm start: SMOSE trained by SAC for as many environment steps as
distillation plus fine-tuning used, judged on the same episodes as :mod:`benchmarks.finetune_probe`.

Usage::

    python -m benchmarks.scratch_probe TEACHER [--env TASK] --steps 180000 [--algo sac] [--experts 8]
        [--seed 0] [--episodes 20] [--out benchmarks/results/finetune]

Trains a top-1 mixture of ``--experts`` linear experts end to end on the teacher's task
(``interp-rl train --algo sac --policy moe``; the training run lives in ``OUT/runs/`` and resumes
when rerun), then evaluates the controller it wrote on ``--episodes`` episodes (seeds 1000, ...)
as % of the teacher's mean on the same episodes. The teacher serves only as the yardstick. The
warm start's budget, for ``--steps``: DAgger's environment steps (rounds × steps per round) plus
the fine-tuning transitions; ``finetune_probe`` records both.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.finetune_probe import EVAL_SEED, judge
from envs.teachers import load_teacher
from envs.training import TrainConfig, train_teacher
from interp_rl.io import atomic_write_text, json_safe
from interp_rl.program import load_controller
from interp_rl.rollouts import evaluate


def probe(teacher_path: str, steps: int, algo: str, experts: int, seed: int, episodes: int, out: Path,
          env: str | None = None, progress: bool = True) -> dict[str, Any]:
    """Train from scratch (resuming an unfinished run), judge; the figures as a dict."""
    teacher = load_teacher(teacher_path, env=env)
    run = out / "runs" / f"{teacher.task}-{algo}-moe{experts}-{steps}-seed{seed}"
    cfg = TrainConfig(algo=algo, task=teacher.task, steps=steps, out=str(run), seed=seed,
                      hyperparams={"policy": "moe", "policy_kwargs": {"n_experts": experts}})
    t0 = time.perf_counter()
    if not (run / "controller.json").is_file():
        train_teacher(cfg, resume=(run / "checkpoint").is_dir(), progress_bar=progress)
    seconds = time.perf_counter() - t0
    controller = load_controller(run / "controller.json")
    history = json.loads((run / "teacher.json").read_text()).get("history", [])
    teacher_mean = float(np.mean(evaluate(teacher, teacher.env_fn, episodes, seed=EVAL_SEED).returns))
    return {"teacher": teacher_path, "task": teacher.task, "algo": algo, "experts": experts, "steps": steps,
            "seed": seed, "episodes": episodes, "teacher_return": teacher_mean, "train_seconds": seconds,
            "controller_size": controller.size(), "train_history": history,
            "scratch": judge(controller, teacher_mean, teacher.env_fn, episodes)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("teacher")
    ap.add_argument("--env", default=None, help="The task, when the zip's name does not say it.")
    ap.add_argument("--steps", type=int, required=True, help="Environment steps of the training from scratch.")
    ap.add_argument("--algo", default="sac")
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/finetune"))
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    res = probe(args.teacher, args.steps, args.algo, args.experts, args.seed, args.episodes, args.out, args.env,
                not args.no_progress)
    name = f"{res['task']}-scratch-{args.algo}-moe{args.experts}-{args.steps}-seed{args.seed}"
    path = atomic_write_text(args.out / f"{name}.json", json.dumps(json_safe(res), indent=1) + "\n")
    j = res["scratch"]
    print(f"from scratch ({args.steps} steps): {j['percent']:.1f}% of the teacher, worst episode "
          f"{j['worst_percent']:.1f}%, {j['below_half']} of {args.episodes} episodes below half")
    print(f"size {res['controller_size']}; wrote {path}")


if __name__ == "__main__":
    main()
