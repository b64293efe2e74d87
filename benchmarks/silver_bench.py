"""SILVER on its paper's own tasks: a discrete teacher's choice as a linear rule found through its Shapley values.

    python -m benchmarks.silver_bench teachers          # trains the four teachers with `interp-rl train`
    python -m benchmarks.silver_bench run --seeds 0 1 2
    python -m benchmarks.silver_bench report

Teachers (trained here with training seeds 0 and 1, the shipped zoo hyperparameters, the policy with the
best 20-episode checkpoint evaluation kept): DQN and PPO on CartPole-v1 and MountainCar-v0. For every teacher and seed
the registry's ``silver`` method is run in three forms (teacher-labelled clusters with the boundary carried
back from Shapley space; the same with the boundary refitted on the raw features it kept, the default; the
paper's unsupervised k-means clusters, boundary carried back), and a decision tree with 8 constant leaves as the
baseline. The default was chosen on the seed-0 teachers and checked on the seed-1 ones. Each controller
and the teacher play the same 20 episodes per seed. One JSON per cell under
``benchmarks/results/silver/records/`` (a finished cell is skipped, so a stopped run resumes); ``report``
writes ``report.md`` and ``returns.png``. The teachers' zips (SB3 pickles) are not committed: the
``teachers`` step rebuilds them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._study import finish_report, write_json

OUT = Path(__file__).resolve().parent / "results" / "silver"
EPISODES = 20
_BUDGETS = {("dqn", "CartPole-v1"): (50_000, 2_500), ("ppo", "CartPole-v1"): (100_000, 5_000),
            ("dqn", "MountainCar-v0"): (120_000, 6_000), ("ppo", "MountainCar-v0"): (1_000_000, 50_000)}
#: name -> (algo, task, steps, checkpoint every, training seed): the zoo's step budgets; a second training
#: seed of every teacher checks that the recipe holds on agents it was not looked at with.
TEACHERS: dict[str, tuple[str, str, int, int, int]] = {
    f"{algo}-{task}" + (f"-seed{seed}" if seed else ""): (algo, task, steps, every, seed)
    for seed in (0, 1) for (algo, task), (steps, every) in _BUDGETS.items()
}
#: variant -> (method, settings); the distillation budget is the same for all.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "silver-shapley": ("silver", {"boundary": "shapley"}),
    "silver-refit": ("silver", {"boundary": "refit"}),
    "silver-kmeans": ("silver", {"clusters": "kmeans", "boundary": "shapley"}),
    "tree-8": ("tree", {"max_leaves": 8, "leaf_model": "constant", "iterations": 4}),
}


def train_teachers() -> None:
    from envs.training import TrainConfig, train_teacher

    for name, (algo, task, steps, every, seed) in TEACHERS.items():
        out = OUT / "teachers" / name
        t0 = time.perf_counter()
        meta = train_teacher(TrainConfig(algo=algo, task=task, steps=steps, out=str(out), seed=seed,
                                         checkpoint_every=every, eval_episodes=20),
                             resume=(out / "checkpoint").is_dir() or (out / "teacher.json").is_file(),
                             progress_bar=False)
        print(f"{name}: kept step {meta['model_step']} (evaluation {meta['model_eval_return']}), "
              f"{time.perf_counter() - t0:.0f} s", flush=True)


def run(seeds: list[int], only: list[str] | None = None) -> None:
    from distill.methods import METHODS
    from envs import task_signals
    from envs.teachers import load_teacher
    from interp_rl.compare import fidelity
    from interp_rl.rollouts import collect, evaluate
    from interp_rl.viz import export_text

    for name in only or list(TEACHERS):
        teacher = load_teacher(OUT / "teachers" / name)
        for seed in seeds:
            t_eval = evaluate(teacher, teacher.env_fn, EPISODES, seed=10_000 + seed)
            held_out = collect(teacher, teacher.env_fn, 2000, 20_000 + seed)
            for variant, (method, settings) in VARIANTS.items():
                cell = OUT / "records" / f"{name}__{variant}__seed{seed}.json"
                if cell.is_file():
                    continue
                t0 = time.perf_counter()
                m = METHODS[method]
                est = m.build(m.resolve({**settings, "seed": seed}))
                est.fit(teacher)
                student = est.student_
                ctrl = student.to_controller(*task_signals(teacher.task), task=teacher.task)
                ev = evaluate(ctrl, teacher.env_fn, EPISODES, seed=10_000 + seed)
                facts = getattr(student, "fit_facts", dict)()
                rec = {"teacher": name, "task": teacher.task, "algo": teacher.algo, "variant": variant,
                       "method": method, "settings": settings, "seed": seed, "size": ctrl.size(),
                       "nonzero_parameters": _nonzero(ctrl.program) if method == "silver" else None,
                       "teacher_return": t_eval.mean_return, "teacher_worst": float(min(t_eval.returns)),
                       "return": ev.mean_return, "worst_return": float(min(ev.returns)),
                       "returns": [float(r) for r in ev.returns],
                       "agreement": fidelity(ctrl, held_out.observations, held_out.actions).get("agreement"),
                       "fit_facts": {k: v for k, v in facts.items() if k != "cluster_classes"},
                       "rules": export_text(ctrl, precision=3), "seconds": time.perf_counter() - t0}
                write_json(cell, rec)
                print(f"{cell.stem}: {rec['return']:.1f} (worst {rec['worst_return']:.0f}; teacher "
                      f"{rec['teacher_return']:.1f}), agreement {rec['agreement']:.3f}", flush=True)


def _nonzero(program: Any) -> int:
    """The rule's non-zero numbers a reader must know: router coefficients and intercepts (SILVER's mixture)."""
    return int(np.count_nonzero(program.router_coef) + np.count_nonzero(program.router_intercept))


def report() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp_rl.compare import percent_of_teacher

    recs = [json.loads(p.read_text()) for p in sorted((OUT / "records").glob("*.json"))]
    lines = ["# SILVER on CartPole-v1 and MountainCar-v0", "",
             "Regenerate: `python -m benchmarks.silver_bench teachers`, `python -m benchmarks.silver_bench run "
             "--seeds 0 1 2`, `python -m benchmarks.silver_bench report`.", "",
             "Teachers trained by `interp-rl train` (training seeds 0 and 1: `-seed1` in the name; the zoo's "
             "hyperparameters and step budgets, the best "
             "checkpoint by a 20-episode evaluation kept). Each controller is distilled with the method registry's "
             f"defaults (4 DAgger rounds of 10,000 steps for `silver`) and plays the same {EPISODES} episodes per "
             "seed as the teacher. Cells: mean return over seeds, % of teacher (`interp_rl.compare."
             "percent_of_teacher`: 100 = the teacher, higher is better, also for MountainCar's negative returns), "
             "worst episode over all seeds in brackets, share of held-out teacher states where the controller picks "
             "the teacher's class.", "",
             "Variants: `silver-shapley` (Shapley vectors grouped by the teacher's class → L1 boundary in Shapley "
             "space → carried back through per-feature affine fits, as the paper); `silver-refit` (the same, then "
             "the boundary refitted on the raw features it kept: the default of `interp-rl distill silver`, chosen "
             "on the seed-0 teachers, checked on the `-seed1` ones); `silver-kmeans` (the paper's unsupervised "
             "k-means clusters, one per class, boundary carried back); `tree-8` (a DAgger tree with 8 constant "
             "leaves: the classification-tree baseline).", ""]
    teachers = sorted({r["teacher"] for r in recs})
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in recs)]
    lines += ["| teacher | teacher return [worst] | " + " | ".join(variants) + " |",
              "|---|---:|" + "---:|" * len(variants)]
    summary: dict[str, dict[str, float]] = {}
    for t in teachers:
        rs = [r for r in recs if r["teacher"] == t]
        t_mean = float(np.mean([r["teacher_return"] for r in rs]))
        row = [f"{t_mean:.1f} [{min(r['teacher_worst'] for r in rs):.0f}]"]
        for v in variants:
            sel = [r for r in rs if r["variant"] == v]
            if not sel:
                row.append("")
                continue
            ret = float(np.mean([r["return"] for r in sel]))
            worst = min(r["worst_return"] for r in sel)
            agree = np.mean([r["agreement"] for r in sel])
            pct = float(percent_of_teacher(ret, t_mean))
            summary.setdefault(t, {})[v] = pct
            row.append(f"{ret:.1f} = {pct:.0f}% [{worst:.0f}], {agree:.0%} same class ({len(sel)} seeds)")
        lines.append(f"| {t} | " + " | ".join(row) + " |")
    lines += ["", "## Size and the steps of SILVER", "",
              "Parameters: the rule's non-zero coefficients and intercepts (SILVER), the tree's thresholds and leaf "
              "values (`size()['parameters']`).", "",
              "| teacher | variant | parameters | cluster purity | boundary accuracy (Shapley space) | "
              "rule accuracy (training states) |", "|---|---|---:|---:|---:|---:|"]
    for t in teachers:
        for v in variants:
            sel = [r for r in recs if r["teacher"] == t and r["variant"] == v]
            if not sel:
                continue
            counts = [r["nonzero_parameters"] if r["method"] == "silver" else r["size"]["parameters"] for r in sel]
            nz = f"{min(counts)}–{max(counts)}" if min(counts) != max(counts) else str(counts[0])
            f = [r["fit_facts"] for r in sel]
            if f and "cluster_purity" in f[0]:
                vals = [f"{np.mean([x[k] for x in f]):.3f}" for k in ("cluster_purity", "boundary_accuracy",
                                                                        "rule_accuracy")]
            else:
                vals = ["", "", ""]
            lines.append(f"| {t} | {v} | {nz} | " + " | ".join(vals) + " |")
    lines += ["", "## The rules (seed 0)", ""]
    for t in teachers:
        for v in ("silver-shapley", "silver-refit"):
            sel = [r for r in recs if r["teacher"] == t and r["variant"] == v and r["seed"] == 0]
            if sel:
                lines += [f"### {t}, {v}", "", "```", sel[0]["rules"].strip(), "```", ""]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    width = 0.8 / max(1, len(variants))
    for i, v in enumerate(variants):
        ax.bar(np.arange(len(teachers)) + i * width, [summary.get(t, {}).get(v, 0.0) for t in teachers], width,
               label=v)
    ax.axhline(100, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(teachers)) + width * (len(variants) - 1) / 2, teachers, fontsize=8)
    ax.set_ylabel("% of teacher (mean over seeds)")
    ax.legend(fontsize=7)
    finish_report(OUT, fig, "returns.png", "% of teacher per variant", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["teachers", "run", "report"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--teacher", nargs="*", choices=list(TEACHERS), default=None)
    args = parser.parse_args()
    if args.part == "teachers":
        train_teachers()
    elif args.part == "run":
        run(args.seeds, args.teacher)
    else:
        report()


if __name__ == "__main__":
    main()
