"""Benchmark: decision-tree distillation of the shared teachers over a range of tree sizes.

Usage::

    python -m benchmarks.tree_distillation [--teachers ../shared/teachers]
        [--out benchmarks/results] [--seeds 0,1,2] [--workers 2] [--tasks HalfCheetah,Hopper,...]
        [--configs linear-8,constant-64,linear-64+tune,...] [--report-only]

Every cell (task, tree configuration, seed) runs ``distill.run.distill_tree`` (the
same job as ``interp-rl distill tree``) into ``OUT/tree_runs/TASK/CONFIG/seedS`` and is
skipped when its ``metrics.json`` exists, so a killed run continues where it stopped (an
unfinished cell resumes from its completed DAgger rounds). When all cells are done (or
with ``--report-only``), the report ``OUT/tree_distillation.{md,json}`` and the plot
``OUT/tree_distillation.png`` are written, with the per-action latency of the exported
controllers against the teacher's SB3 ``predict``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.latency import native_c_latency
from interp_rl.io import atomic_write_bytes, atomic_write_text

#: task key -> (algorithm, zoo env name) of the shared teachers distilled here.
TASKS: dict[str, tuple[str, str]] = {
    "HalfCheetah": ("sac", "HalfCheetah"),
    "Hopper": ("ppo", "Hopper"),
    "Walker2d": ("sac", "Walker2d"),
    "Swimmer": ("sac", "Swimmer"),
    "Ant": ("trpo", "Ant"),
}
#: Tree configurations: name -> settings of ``TreeDistillConfig``.
CONFIGS: dict[str, dict[str, Any]] = {
    "constant-8": {"leaf_model": "constant", "max_leaves": 8},
    "constant-64": {"leaf_model": "constant", "max_leaves": 64},
    "linear-4": {"leaf_model": "linear", "max_leaves": 4},
    "linear-8": {"leaf_model": "linear", "max_leaves": 8},
    "linear-16": {"leaf_model": "linear", "max_leaves": 16},
    "linear-64": {"leaf_model": "linear", "max_leaves": 64},
    "linear-8+tune": {"leaf_model": "linear", "max_leaves": 8, "tune_iterations": 60},
    # The default recipe of `interp-rl distill tree`: model-tree splits, 12 rounds, beta mixing.
    "model-64": {"leaf_model": "linear", "max_leaves": 64, "split_on": "linear", "iterations": 12,
                 "beta_decay": 0.7},
}
#: Settings every cell shares unless its configuration says otherwise.
COMMON: dict[str, Any] = {"iterations": 8, "steps": 10_000, "eval_episodes": 10, "split_on": "constant",
                          "beta_decay": 0.0}
TARGET = 90.0
KIND_LABELS = {"constant": "constant leaves", "linear": "linear leaves",
               "model": "linear leaves, model-tree splits, 12 rounds, β 0.7"}


def teacher_path(teachers: Path, task: str) -> Path:
    algo, env = TASKS[task]
    return teachers / algo / f"{env}-v3_1" / f"{env}-v3.zip"


def cell_dir(out: Path, task: str, config: str, seed: int) -> Path:
    return out / "tree_runs" / task / config / f"seed{seed}"


def run_cell(teachers: str, out: str, task: str, config: str, seed: int) -> dict[str, Any]:
    """Distil one cell (in a worker process); returns its metrics."""
    import torch

    torch.set_num_threads(1)
    from distill.run import TreeDistillConfig, distill_tree
    from envs import task_signals
    from envs.teachers import load_teacher

    folder = cell_dir(Path(out), task, config, seed)
    if (folder / "metrics.json").is_file():
        return dict(json.loads((folder / "metrics.json").read_text()))
    t = load_teacher(teacher_path(Path(teachers), task))
    assert t.env_fn is not None
    feats, acts = task_signals(t.task, t.variant)
    cfg = TreeDistillConfig(**{**COMMON, **CONFIGS[config], "seed": seed})
    resume = (folder / "checkpoint").is_dir()
    return distill_tree(t, t.env_fn, cfg, folder, features=feats, actions=acts, task=t.task,
                        provenance={"source": f"{TASKS[task][0]}/{TASKS[task][1]}-v3_1", "algo": t.algo,
                                    "task": t.task, "variant": t.variant}, resume=resume)


# ----------------------------------------------------------------------------- latency
def latency(teachers: Path, task: str, folder: Path) -> dict[str, Any]:
    """Per-action latency of the teacher's SB3 predict and of the exported controllers, one observation."""
    import torch

    torch.set_num_threads(1)
    from envs.teachers import load_teacher
    from interp_rl.export import compile_c, load_c_controller, load_python_controller, measure_latency
    from interp_rl.program import load_controller

    t = load_teacher(teacher_path(teachers, task))
    ctrl = load_controller(folder)
    assert t.env_fn is not None
    env = t.env_fn(0)
    obs = np.asarray(env.reset(seed=0)[0], dtype=np.float64)
    env.close()
    norm_obs = t.normalizer(obs[None])[0] if t.normalizer is not None else obs
    sb3_obs = norm_obs.astype(np.float32)
    teacher = measure_latency(lambda o: t.model.predict(o, deterministic=True), sb3_obs, repeats=300)
    with tempfile.TemporaryDirectory() as tmp:
        act_py = load_python_controller(folder / "controller.py")
        act_c = load_c_controller(compile_c(folder / "controller.c", Path(tmp)))
        olist = obs.tolist()
        python = measure_latency(act_py, olist, repeats=2000)
        c_ctypes = measure_latency(act_c, olist, repeats=2000)
        c_native = native_c_latency(folder / "controller.c", obs, ctrl.program.act_dim)
    base = teacher["median_s"]
    return {
        "controller": str(folder.relative_to(folder.parents[3])),
        "leaves": ctrl.program.n_leaves,
        "linear_terms": ctrl.program.n_terms,
        "teacher_sb3_predict_s": base,
        "python_export_s": python["median_s"],
        "c_export_via_ctypes_s": c_ctypes["median_s"],
        "c_export_native_s": c_native,
        "speedup_python": base / python["median_s"],
        "speedup_c_ctypes": base / c_ctypes["median_s"],
        "speedup_c_native": base / c_native,
    }


# ----------------------------------------------------------------------------- report
def collect_records(out: Path) -> list[dict[str, Any]]:
    rows = []
    for metrics in sorted((out / "tree_runs").glob("*/*/seed*/metrics.json")):
        m = json.loads(metrics.read_text())
        task, config, seed = metrics.parts[-4], metrics.parts[-3], int(metrics.parts[-2][4:])
        rows.append({"task": task, "config": config, "seed": seed, "folder": str(metrics.parent),
                     **{k: m[k] for k in ("leaves", "depth", "linear_terms", "parameters", "teacher_return",
                                          "student_return", "percent_of_teacher", "distill_seconds",
                                          "best_round")},
                     "fidelity_student_r2": m["fidelity_student_states"]["r2"],
                     "fidelity_teacher_r2": m["fidelity_teacher_states"]["r2"],
                     "tuned_from": (m.get("tuning") or {}).get("initial_return")})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["task"], {}).setdefault(r["config"], {"runs": []})["runs"].append(r)
    for configs in out.values():
        for s in configs.values():
            runs = sorted(s["runs"], key=lambda r: r["seed"])
            pct = np.array([r["percent_of_teacher"] for r in runs])
            s.update(
                seeds=[r["seed"] for r in runs], percent_mean=float(pct.mean()), percent_std=float(pct.std()),
                percent_min=float(pct.min()), percent=[float(p) for p in pct],
                leaves_mean=float(np.mean([r["leaves"] for r in runs])),
                leaves_max=int(max(r["leaves"] for r in runs)),
                fidelity_student_r2=float(np.mean([r["fidelity_student_r2"] for r in runs])),
                seconds_mean=float(np.mean([r["distill_seconds"] for r in runs])),
                teacher_return=float(np.mean([r["teacher_return"] for r in runs])),
                student_return=float(np.mean([r["student_return"] for r in runs])),
            )
    return out


def _config_order(name: str) -> tuple[int, int, str]:
    kind, _, rest = name.partition("-")
    leaves = int(rest.split("+")[0])
    return (leaves, ["constant", "linear", "model"].index(kind), name)


def plot(summary: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(summary)
    fig, axes = plt.subplots(1, len(tasks), figsize=(4 * len(tasks), 4.0), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        groups: dict[str, list[tuple[float, float, float]]] = {}
        for name, s in summary[task].items():
            kind = KIND_LABELS[name.split("-")[0]] + (" + leaf tuning" if "+tune" in name else "")
            groups.setdefault(kind, []).append((s["leaves_mean"], s["percent_mean"], s["percent_std"]))
        for kind, pts in sorted(groups.items()):
            pts.sort()
            x, y, e = (np.array(v) for v in zip(*pts, strict=True))
            ax.errorbar(x, y, yerr=e, marker="o", capsize=3, label=kind)
        ax.axhline(TARGET, color="grey", ls="--", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_title(task)
        ax.set_xlabel("leaves")
        ax.set_ylim(bottom=min(0, ax.get_ylim()[0]))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("% of teacher return (mean ± std over seeds)")
    handles: dict[str, Any] = {}
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles), fontsize=9,
               frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as fh:
        tmp = fh.name
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    atomic_write_bytes(path, Path(tmp).read_bytes())
    os.unlink(tmp)


def smallest_reaching(configs: dict[str, dict[str, Any]], target: float) -> tuple[str, dict[str, Any]] | None:
    ok = [(s["leaves_max"], name, s) for name, s in configs.items() if s["percent_mean"] >= target]
    if not ok:
        return None
    _, name, s = min(ok, key=lambda t: (t[0], -t[2]["percent_mean"]))
    return name, s


def keep_controller(out: Path, task: str, config: str, s: dict[str, Any]) -> str:
    """Copy the median-seed controller of a configuration to ``OUT/tree_controllers``; return its folder."""
    from interp_rl.program import load_controller
    from interp_rl.viz import RenderError, render, to_dot

    runs = sorted(s["runs"], key=lambda r: r["percent_of_teacher"])
    run = runs[(len(runs) - 1) // 2]
    src = Path(run["folder"])
    dest = out / "tree_controllers" / f"{task}-{config}-seed{run['seed']}"
    for name in ("controller.json", "rules.txt", "metrics.json"):
        if (src / name).is_file():
            atomic_write_bytes(dest / name, (src / name).read_bytes())
    ctrl = load_controller(src)
    title = (f"{task}: {config}, seed {run['seed']}, {run['percent_of_teacher']:.0f}% of teacher "
             "(top 3 levels)")
    try:
        render(to_dot(ctrl, max_depth=3, title=title), dest / "tree_top.svg")
    except RenderError:
        pass
    return str(dest.relative_to(out))


def write_report(out: Path, teachers: Path, command: str, lat: dict[str, Any]) -> str:
    rows = collect_records(out)
    summary = summarise(rows)
    plot(summary, out / "tree_distillation.png")
    lines = [
        "# Decision-tree distillation of the shared teachers",
        "",
        f"Regenerate: `{command}`",
        "",
        "Each cell: DAgger (teacher rollouts, then 8 rounds of tree rollouts labelled by the teacher, "
        "10,000 steps per round, critic-weighted for SAC teachers), the round with the best return on 5 "
        "held-out episodes kept; `+tune` then runs 60 ARS updates of the leaf parameters on the return. "
        "`constant-N`/`linear-N`: at most N constant/linear leaves, CART splits, plain DAgger (β = 0). "
        "`model-64`, the default recipe of `interp-rl distill tree`: at most 64 linear leaves with "
        "model-tree splits (chosen for linear children), 12 rounds, round i following the teacher with "
        "probability 0.7^i. "
        "Teacher and tree are evaluated on the same 10 episodes (seeds s..s+9, `-v5` tasks). "
        "% of teacher: mean ± std over seeds (individual seeds in brackets). Fidelity: R² of the tree's "
        "actions against the teacher's on states the tree visits. Times are wall-clock seconds on a "
        "2-core machine running two or three cells at once (so they overstate single-run times).",
        "",
        "![% of teacher against leaves](tree_distillation.png)",
        "",
        "## Smallest tree reaching 90% of the teacher",
        "",
        "| task | teacher | smallest config ≥ 90% | leaves | % of teacher | best config | best % |",
        "|---|---|---|---|---|---|---|",
    ]
    for task, configs in summary.items():
        best_name, best = max(configs.items(), key=lambda kv: kv[1]["percent_mean"])
        hit = smallest_reaching(configs, TARGET)
        algo = TASKS[task][0].upper()
        teacher_ret = np.mean([s["teacher_return"] for s in configs.values()])
        hit_txt = (f"{hit[0]} | {hit[1]['leaves_max']} | {hit[1]['percent_mean']:.1f}" if hit
                   else "not reached | – | –")
        lines.append(f"| {task} ({algo}) | {teacher_ret:.0f} | {hit_txt} | {best_name} | "
                     f"{best['percent_mean']:.1f} ± {best['percent_std']:.1f} |")
    kept = []
    for task, configs in summary.items():
        hit = smallest_reaching(configs, TARGET)
        best_name = max(configs, key=lambda n: configs[n]["percent_mean"])
        for name in dict.fromkeys([*(hit[0:1] if hit else []), best_name]):
            if (Path(configs[name]["runs"][0]["folder"]) / "controller.json").is_file():
                kept.append((task, name, keep_controller(out, task, name, configs[name])))
    if kept:
        lines += ["", "Controllers kept (the median seed; `controller.json`, `rules.txt`, and the top of the "
                  "tree drawn in `tree_top.svg`; `interp-rl viz FOLDER` draws all of it):", ""]
        lines += [f"- {task} {name}: [`{folder}`]({folder}/tree_top.svg)" for task, name, folder in kept]
    for task, configs in summary.items():
        lines += ["", f"## {task} ({TASKS[task][0].upper()} teacher)", "",
                  "| config | leaves | linear terms | tree return | % of teacher | seeds | fidelity R² | "
                  "seconds |", "|---|---|---|---|---|---|---|---|"]
        for name in sorted(configs, key=_config_order):
            s = configs[name]
            terms = np.mean([r["linear_terms"] for r in s["runs"]])
            per_seed = ", ".join(f"{p:.0f}" for p in s["percent"])
            lines.append(f"| {name} | {s['leaves_mean']:.0f} | {terms:.0f} | {s['student_return']:.0f} | "
                         f"{s['percent_mean']:.1f} ± {s['percent_std']:.1f} | "
                         f"[{per_seed}] ({len(s['seeds'])}) | "
                         f"{s['fidelity_student_r2']:.2f} | {s['seconds_mean']:.0f} |")
    if lat:
        lines += ["", "## Per-action latency, one observation", "",
                  "Median seconds per call, measured in one run: the teacher's SB3 `model.predict` "
                  "(deterministic, one observation), the exported `controller.py` `act`, the exported "
                  "`controller.c` `act` called through ctypes from Python, and the same C `act` timed in a "
                  "C loop.", "",
                  "| task, tree | controller | teacher SB3 | Python export | C via ctypes | C native | "
                  "speed-up Python / C ctypes / C native |", "|---|---|---|---|---|---|---|"]
        for task, m in lat.items():
            lines.append(
                f"| {task} | {m['leaves']} leaves, {m['linear_terms']} terms | "
                f"{m['teacher_sb3_predict_s'] * 1e6:.0f} µs"
                f" | {m['python_export_s'] * 1e6:.1f} µs | {m['c_export_via_ctypes_s'] * 1e6:.1f} µs | "
                f"{m['c_export_native_s'] * 1e9:.0f} ns | {m['speedup_python']:.0f}× / "
                f"{m['speedup_c_ctypes']:.0f}× / {m['speedup_c_native']:.0f}× |")
    text = "\n".join(lines) + "\n"
    atomic_write_text(out / "tree_distillation.md", text)
    atomic_write_text(out / "tree_distillation.json", json.dumps(
        {"command": command, "common": COMMON, "configs": CONFIGS, "records": rows, "latency": lat},
        indent=1) + "\n")
    return text


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--teachers", type=Path, default=Path("../shared/teachers"))
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--report-only", action="store_true")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    tasks = args.tasks.split(",")
    configs = args.configs.split(",")
    for name in tasks:
        if name not in TASKS:
            p.error(f"unknown task {name!r}; choose from {', '.join(TASKS)}")
    for name in configs:
        if name not in CONFIGS:
            p.error(f"unknown config {name!r}; choose from {', '.join(CONFIGS)}")
    command = " ".join(["python -m benchmarks.tree_distillation", *(
        a for a in (argv if argv is not None else sys.argv[1:]) if a != "--report-only")])
    if not args.report_only:
        cells = [(t, c, s) for s in seeds for t in tasks for c in configs
                 if not (cell_dir(args.out, t, c, s) / "metrics.json").is_file()]
        from rich.progress import Progress

        with Progress() as bar, ProcessPoolExecutor(args.workers) as pool:
            job = bar.add_task("tree distillation cells", total=len(cells))
            futures = {pool.submit(run_cell, str(args.teachers), str(args.out), *cell): cell
                       for cell in cells}
            for fut in as_completed(futures):
                t, c, s = futures[fut]
                try:
                    m = fut.result()
                    bar.console.print(f"{t} {c} seed {s}: {m['percent_of_teacher']:.1f}% of teacher "
                                      f"({m['leaves']} leaves, {m['distill_seconds']:.0f} s)")
                except Exception as exc:  # keep going; the cell reruns next time
                    bar.console.print(f"{t} {c} seed {s} failed: {type(exc).__name__}: {exc}")
                bar.advance(job)
    lat: dict[str, Any] = {}
    for task in tasks:
        for config in ("constant-64", "linear-64"):
            folder = cell_dir(args.out, task, config, seeds[0])
            if (folder / "controller.json").is_file():
                lat[f"{task} {config}"] = latency(args.teachers, task, folder)
    print(write_report(args.out, args.teachers, command, lat))


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"done in {time.time() - t0:.0f} s")
