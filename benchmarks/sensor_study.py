"""How many sensors does a controller need? Students fitted on the teacher's top-k Shapley features.

    python -m benchmarks.sensor_study run --teacher sac/Swimmer-v3_1 --seeds 0 1 2
    python -m benchmarks.sensor_study report

For each teacher: the teacher's features are ranked by Shapley importance (``interp_rl.attribution``,
permutation estimate on 500 states it visits, every action weighing the same, :func:`feature_ranking`);
then a tree, a linear policy and SINDy equations are distilled (the methods' registry settings, with
the smaller budget below) on the top-k features only (:class:`distill.FeatureSubset`), and, as the
baseline, a tree on k features drawn at random. Each controller and the teacher run the same 20
episodes. One JSON per cell under ``benchmarks/results/sensors/cells/`` (a finished cell is skipped, so
a stopped run resumes); ``report`` writes ``report.md`` and ``return_vs_k.png``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._study import finish_report, write_json
from benchmarks.attribution_bench import TEACHERS

OUT = Path(__file__).resolve().parent / "results" / "sensors"
#: The study's budget (smaller than the methods' defaults), the same for every k.
SETTINGS: dict[str, dict[str, Any]] = {
    "tree": {"max_leaves": 16, "iterations": 4, "steps": 5000},
    "linear": {"iterations": 4, "steps": 5000},
    "sindy": {"max_terms": 20, "iterations": 4, "steps": 5000},
}
EPISODES = 20


def _ks(d: int) -> list[int]:
    return sorted({k for k in (1, 2, 3, 4, 6, 8, 12, d) if k <= d})


def _ranking(teacher: Any, seed: int) -> dict[str, Any]:
    """The teacher's Shapley ranking (:func:`interp_rl.attribution.teacher_ranking`), kept per teacher and seed."""
    from interp_rl.attribution import teacher_ranking

    path = OUT / "rankings" / f"{teacher.task}-{teacher.algo}-seed{seed}.json"
    if path.is_file():
        return dict(json.loads(path.read_text()))
    out = teacher_ranking(teacher, n_states=500, seed=seed)
    write_json(path, out)
    return out


def run(teacher_name: str, seeds: list[int]) -> None:
    from distill import FeatureSubset
    from distill.methods import METHODS
    from envs.teachers import load_teacher
    from interp_rl.rollouts import evaluate

    teacher = load_teacher(next((TEACHERS / teacher_name).glob("*.zip")))
    d = teacher.obs_dim
    for seed in seeds:
        ranking = _ranking(teacher, seed)
        t_eval = evaluate(teacher, teacher.env_fn, EPISODES, seed=10_000 + seed)
        for k in _ks(d):
            choices = [(m, "shapley", ranking["order"][:k]) for m in SETTINGS]
            rng = np.random.default_rng(1_000 + 31 * seed + k)
            choices.append(("tree", "random", sorted(rng.choice(d, size=k, replace=False).tolist())))
            for method, pick, cols in choices:
                cell = OUT / "cells" / f"{teacher.task}-{teacher.algo}__{method}-{pick}-k{k}__seed{seed}.json"
                if cell.is_file():
                    continue
                t0 = time.perf_counter()
                m = METHODS[method]
                est = m.build(m.resolve({**SETTINGS[method], "seed": seed}))
                est.dagger.student = FeatureSubset(student=est.dagger.student, columns=cols)
                est.fit(teacher)
                ctrl = est.student_.to_controller(teacher.feature_names, task=teacher.task)
                ev = evaluate(ctrl, teacher.env_fn, EPISODES, seed=10_000 + seed)
                rec = {"task": teacher.task, "teacher": teacher_name, "method": method, "pick": pick, "k": k,
                       "features": [teacher.feature_names[i] for i in sorted(cols)], "seed": seed,
                       "obs_dim": d, "size": ctrl.size(),
                       "teacher_return": t_eval.mean_return, "return": ev.mean_return,
                       "worst_return": float(min(ev.returns)), "returns": [float(r) for r in ev.returns],
                       "percent_of_teacher": 100 * ev.mean_return / t_eval.mean_return,
                       "worst_percent_of_teacher": 100 * float(min(ev.returns)) / t_eval.mean_return,
                       "seconds": time.perf_counter() - t0}
                write_json(cell, rec)
                print(f"{cell.stem}: {rec['percent_of_teacher']:.1f}% (worst {rec['worst_percent_of_teacher']:.1f}%)",
                      flush=True)


def report() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = [json.loads(p.read_text()) for p in sorted((OUT / "cells").glob("*.json"))]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        by_task.setdefault(f"{r['teacher']} ({r['task']})", []).append(r)
    lines = ["# How many sensors does a controller need?", "",
             "Regenerate: `python -m benchmarks.sensor_study run --teacher T --seeds 0 1 2`, then "
             "`python -m benchmarks.sensor_study report`. Students are fitted on the teacher's top-k features by "
             "Shapley importance (permutation estimate, 500 visited states) or, as the baseline, on k random "
             f"features; {EPISODES} evaluation episodes per seed; mean % of teacher over seeds, worst episode "
             "over all seeds in brackets. Budget: " + "; ".join(f"{m} {s}" for m, s in SETTINGS.items()) + ".", ""]
    fig, axes = plt.subplots(1, max(1, len(by_task)), figsize=(5 * max(1, len(by_task)), 4), squeeze=False)
    for ax, (task, rs) in zip(axes[0], sorted(by_task.items()), strict=False):
        rankings = sorted((OUT / "rankings").glob(f"{rs[0]['task']}-*.json"))
        if rankings:
            order = json.loads(rankings[0].read_text())["features"]
            lines += [f"## {task}", "", "Teacher's ranking (seed 0): " + ", ".join(f"`{f}`" for f in order), ""]
        series = sorted({(r["method"], r["pick"]) for r in rs})
        ks = sorted({r["k"] for r in rs})
        lines += ["| k | " + " | ".join(f"{m} ({p})" for m, p in series) + " |",
                  "|---:|" + "---:|" * len(series)]
        for k in ks:
            row = []
            for m, p in series:
                sel = [r for r in rs if r["method"] == m and r["pick"] == p and r["k"] == k]
                if not sel:
                    row.append("")
                    continue
                mean = np.mean([r["percent_of_teacher"] for r in sel])
                worst = min(r["worst_percent_of_teacher"] for r in sel)
                row.append(f"{mean:.1f} [{worst:.0f}] ({len(sel)} seeds)")
            lines.append(f"| {k} | " + " | ".join(row) + " |")
        lines.append("")
        for m, p in series:
            pts = [(k, np.mean([r["percent_of_teacher"] for r in rs if r["method"] == m and r["pick"] == p
                                and r["k"] == k])) for k in ks
                   if any(r["method"] == m and r["pick"] == p and r["k"] == k for r in rs)]
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", ls="--" if p == "random" else "-",
                    label=f"{m} ({p})")
        ax.axhline(100, color="grey", lw=0.8)
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("features read (k)")
        ax.set_ylabel("% of teacher")
        ax.legend(fontsize=7)
    finish_report(OUT, fig, "return_vs_k.png", "return against k", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["run", "report"])
    parser.add_argument("--teacher", default="sac/Swimmer-v3_1")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    if args.part == "run":
        run(args.teacher, args.seeds)
    else:
        report()


if __name__ == "__main__":
    main()
