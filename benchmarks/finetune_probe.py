"""What fine-tuning on the return does to one distilled controller, before and after, on 20 episodes.

Usage::

    python -m benchmarks.finetune_probe TEACHER [--env TASK] --method moe --size 8 --rl-steps 100000 [--seed 0]
        [--iterations 8] [--episodes 20] [--controller DIR] [--trust-weight W] [--bc-weight W]
        [--out benchmarks/results/finetune]

Distils ``TEACHER`` with the registered method (DAgger, the method's defaults), or loads a saved
controller of that method's kind (``--controller``: a benchmark cell's, say), evaluates the
controller on ``--episodes`` episodes (seeds 1000, 1001, ...: apart from the selection seeds),
fine-tunes it with :class:`distill.CriticTuner` (``--rl-steps`` transitions), and evaluates it
again on the same episodes. Prints and writes (atomically, JSON) the mean and the worst episode
as % of the teacher's mean on those episodes, the share of episodes below half of it, the sizes,
the held-out history of both stages and the seconds each took. The benchmark suites
(``benchmarks/suites/smose.toml``) run the same thing over many teachers and seeds; this is the
quick look at one.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from distill.methods import get_method
from envs.teachers import load_teacher
from interp_rl.compare import half_of_teacher, percent_of_teacher
from interp_rl.io import atomic_write_text, json_safe
from interp_rl.program import load_controller
from interp_rl.rollouts import evaluate

EVAL_SEED = 1000


def judge(policy: Any, teacher_mean: float, env_fn: Any, episodes: int) -> dict[str, Any]:
    r = np.asarray(evaluate(policy, env_fn, episodes, seed=EVAL_SEED).returns)
    return {"percent": percent_of_teacher(float(r.mean()), teacher_mean),
            "worst_percent": percent_of_teacher(float(r.min()), teacher_mean),
            "below_half": int((r < half_of_teacher(teacher_mean)).sum()), "returns": r.tolist()}


def probe(teacher_path: str, method: str, size: int, rl_steps: int, seed: int, iterations: int,
          episodes: int, env: str | None = None, controller: str | None = None,
          rl: dict[str, Any] | None = None) -> dict[str, Any]:
    """Distil (or load ``controller``), judge, fine-tune (``rl``: more ``rl_*`` settings), judge again."""
    teacher = load_teacher(teacher_path, env=env)
    m = get_method(method)
    settings = m.resolve({m.size: size, "seed": seed, "iterations": iterations})
    est = m.build(settings)
    t0 = time.perf_counter()
    if controller is None:
        est.set_params(rl=None).fit(teacher)
        student, history = est.student_, est.dagger_.history_
    else:
        student, history = type(est.dagger.student).from_program(load_controller(controller).program), []
    distil_s = time.perf_counter() - t0
    teacher_mean = float(np.mean(evaluate(teacher, teacher.env_fn, episodes, seed=EVAL_SEED).returns))
    out: dict[str, Any] = {
        "teacher": teacher_path, "task": teacher.task, "method": method, "size": size, "seed": seed,
        "iterations": iterations, "episodes": episodes, "teacher_return": teacher_mean, "controller": controller,
        "controller_size": student._fitted_program().size(), "distil_seconds": distil_s,
        "dagger_history": history, "distilled": judge(student, teacher_mean, teacher.env_fn, episodes),
    }
    if rl_steps:
        tuner = m.build({**settings, **(rl or {}), "rl_steps": rl_steps}).rl
        out["rl_settings"] = repr(tuner)
        t0 = time.perf_counter()
        tuner.fit(student, teacher, teacher.env_fn)
        out.update(rl_steps=rl_steps, rl_seconds=time.perf_counter() - t0, rl_history=tuner.history_,
                   fine_tuned=judge(tuner.student_, teacher_mean, teacher.env_fn, episodes))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("teacher")
    ap.add_argument("--env", default=None, help="The task, when the zip's name does not say it.")
    ap.add_argument("--method", default="moe")
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--rl-steps", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--controller", default=None,
                    help="Fine-tune this saved controller (a folder or controller.json of --method's kind) instead "
                         "of distilling one.")
    ap.add_argument("--trust-weight", type=float, default=None, help="The tuner's trust region (its default if unset).")
    ap.add_argument("--bc-weight", type=float, default=None, help="Its pull towards the teacher (default if unset).")
    ap.add_argument("--name", default=None, help="The JSON's name [default: from the teacher, method and seed].")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/finetune"))
    args = ap.parse_args(argv)
    rl = {k: v for k, v in (("rl_trust_weight", args.trust_weight), ("rl_bc_weight", args.bc_weight)) if v is not None}
    res = probe(args.teacher, args.method, args.size, args.rl_steps, args.seed, args.iterations, args.episodes,
                args.env, args.controller, rl)
    name = args.name or (f"{Path(args.teacher).stem}-{Path(args.teacher).parent.parent.name}-{args.method}{args.size}"
                         f"-seed{args.seed}")
    path = atomic_write_text(args.out / f"{name}.json", json.dumps(json_safe(res), indent=1) + "\n")
    for stage in ("distilled", "fine_tuned"):
        if stage in res:
            j = res[stage]
            print(f"{stage}: {j['percent']:.1f}% of the teacher, worst episode {j['worst_percent']:.1f}%, "
                  f"{j['below_half']} of {args.episodes} episodes below half")
    print(f"size {res['controller_size']}; wrote {path}")


if __name__ == "__main__":
    main()
