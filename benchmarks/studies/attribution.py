"""Attribution benchmark: accuracy against exact Shapley values, speed, and shap's explainers side by side.

Run (each part writes its JSON under ``benchmarks/results/attribution/``, replacing an earlier one)::

    python -m benchmarks.attribution_bench accuracy --teacher sac/Hopper-v3_1   # exact vs ours vs shap
    python -m benchmarks.attribution_bench speed --teacher sac/HalfCheetah-v3_1 # 1,000 states, trees too
    python -m benchmarks.attribution_bench check --teacher ppo/HalfCheetah-v3_1 # error at the default budget
    python -m benchmarks.attribution_bench report

Everything is measured on the states the teacher visits (5 episodes, seed 0) against 16 of them as the
background, equally weighted (shap's ``Independent`` masker and ``KernelExplainer`` take the same rows, so
every estimator explains the same game). Error: mean absolute error over states, features and actions,
relative to the mean |phi| of the exact values. Times are wall-clock on this machine: ours with the teacher's
network on ``EXPLAIN_THREADS`` (2) torch threads in ``speed`` (the target is for 2 cores) and on one in
``accuracy``, side by side with shap's explainers, which call the teacher's one-thread ``predict``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._study import write_json

OUT = Path(__file__).resolve().parent / "results" / "attribution"
TEACHERS = Path(os.environ.get("INTERP_RL_TEACHERS", Path(__file__).resolve().parents[2] / "shared" / "teachers"))
BUDGETS = (2048, 4096, 8192, 16384)
SHAP_PERMUTATION_EVALS = (2 * 11 + 1, 4 * 11 + 1, 8 * 11 + 1, 16 * 11 + 1, 32 * 11 + 1)
SHAP_KERNEL_SAMPLES = (128, 256, 512, 1024)


def _teacher(name: str) -> Any:
    from envs.teachers import load_teacher

    folder = TEACHERS / name
    return load_teacher(next(folder.glob("*.zip")))


def _states(teacher: Any, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` visited states and 16 background rows, drawn apart from each other."""
    from interp_rl.rollouts import run_episodes

    ran = run_episodes(teacher, teacher.env_fn, range(seed, seed + 5), record=True, task=teacher.task)
    visited = ran.rollout.observations
    rng = np.random.default_rng(seed)
    pick = rng.permutation(len(visited))
    return visited[pick[16:16 + n]], visited[pick[:16]]


def _err(values: np.ndarray, exact: np.ndarray) -> float:
    return float(np.abs(values - exact).mean() / np.abs(exact).mean())


def _write(name: str, data: dict[str, Any]) -> None:
    write_json(OUT / name, data)
    print(f"wrote {OUT / name}")


def accuracy(teacher_name: str, n: int = 200) -> None:
    """Exact (every coalition) against ours and shap's estimators on ``n`` states of an 11-feature task."""
    import shap

    from interp_rl.attribution import explain

    t = _teacher(teacher_name)
    X, bg = _states(t, n)
    d = X.shape[1]
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    exact = explain(t, X, bg, method="exact")
    rows.append({"estimator": "exact (interp-rl)", "rows_per_state": exact.budget, "seconds": exact.seconds,
                 "error": 0.0})
    print(rows[-1])
    for method in ("kernel", "permutation"):
        for b in BUDGETS:
            for seed in (0, 1):
                a = explain(t, X, bg, method=method, budget=b, seed=seed, threads=1)  # shap's predict: 1 thread
                rows.append({"estimator": f"{method} (interp-rl)", "budget": b, "seed": seed,
                             "rows_per_state": a.budget, "seconds": a.seconds, "error": _err(a.values, exact.values),
                             "efficiency_gap": a.efficiency_gap()})
                print(rows[-1])
    f = t.predict
    masker = shap.maskers.Independent(bg, max_samples=len(bg))
    evals = [2 * k * d + 1 for k in (1, 2, 4, 8, 16)]
    for max_evals in evals:
        ex = shap.PermutationExplainer(f, masker, seed=0)
        s0 = time.perf_counter()
        sv = ex(X, max_evals=max_evals, silent=True)
        sec = time.perf_counter() - s0
        rows.append({"estimator": "shap PermutationExplainer", "max_evals": max_evals,
                     "rows_per_state": max_evals * len(bg), "seconds": sec, "error": _err(sv.values, exact.values)})
        print(rows[-1])
    for nsamples in SHAP_KERNEL_SAMPLES:
        ke = shap.KernelExplainer(f, bg, seed=0)
        s0 = time.perf_counter()
        sv = ke.shap_values(X, nsamples=nsamples, silent=True)
        sec = time.perf_counter() - s0
        vals = np.stack(sv, axis=-1) if isinstance(sv, list) else np.asarray(sv)
        rows.append({"estimator": "shap KernelExplainer", "nsamples": nsamples, "rows_per_state": nsamples * len(bg),
                     "seconds": sec, "error": _err(vals, exact.values)})
        print(rows[-1])
    _write(f"accuracy_{teacher_name.replace('/', '_')}.json",
           {"teacher": teacher_name, "task": t.task, "states": n, "background": len(bg), "features": d,
            "mean_abs_exact": float(np.abs(exact.values).mean()), "rows": rows,
            "seconds_total": time.perf_counter() - t0})


def speed(teacher_name: str, n: int = 1000, exact_states: int = 10) -> None:
    """Teacher attributions of ``n`` states at the default budget, their error on ``exact_states`` against every
    coalition (2^d), shap's PermutationExplainer on the same states, and tree attributions."""
    import shap

    from interp_rl.attribution import explain
    from interp_rl.program import load_controller

    t = _teacher(teacher_name)
    X, bg = _states(t, n)
    d = X.shape[1]
    out: dict[str, Any] = {"teacher": teacher_name, "task": t.task, "states": n, "features": d,
                           "background": len(bg), "threads": t.threads}
    runs = {}
    for method in ("kernel", "permutation"):
        a = explain(t, X, bg, method=method)
        runs[method] = a
        out[method] = {"seconds": a.seconds, "rows_per_state": a.budget, "efficiency_gap": a.efficiency_gap()}
        print(method, out[method])
    if exact_states:
        ex = explain(t, X[:exact_states], bg, method="exact") if d <= 16 else _exact_big(t, X[:exact_states], bg)
        out["exact_check"] = {"states": exact_states, "seconds": ex.seconds,
                              **{m: _err(runs[m].values[:exact_states], ex.values) for m in runs}}
        s0 = time.perf_counter()
        ex_perm = shap.PermutationExplainer(t.predict, shap.maskers.Independent(bg, max_samples=len(bg)), seed=0)
        evals = []
        for k in (1, 2, 4, 8):
            sv = ex_perm(X[:exact_states], max_evals=2 * k * d + 1, silent=True)
            evals.append({"max_evals": 2 * k * d + 1, "error": _err(sv.values, ex.values)})
        s1 = time.perf_counter()
        sv = ex_perm(X[:100], max_evals=2 * d + 1, silent=True)
        rate = 100 / (time.perf_counter() - s1)
        out["shap_permutation"] = {"errors": evals, "states_per_second_one_permutation": rate,
                                   "seconds": time.perf_counter() - s0}
        print(out["exact_check"], out["shap_permutation"])
    # trees: every committed tree controller of this task, exact rule against the teacher's time
    trees = []
    results = Path(__file__).resolve().parent / "results"
    for path in sorted(results.glob(f"*/cells/{t.task.split('-')[0]}-*tree*/controller.json"))[:4]:
        ctrl = load_controller(path)
        if ctrl.program.obs_dim != d:
            continue
        a = explain(ctrl, X, bg)
        trees.append({"controller": str(path.parent.relative_to(results)), "method": a.method,
                      "seconds": a.seconds, "efficiency_gap": a.efficiency_gap(), **ctrl.size(),
                      "speedup_vs_teacher_kernel": out["kernel"]["seconds"] / max(a.seconds, 1e-9)})
        print(trees[-1])
    out["trees"] = trees
    _write(f"speed_{teacher_name.replace('/', '_')}.json", out)


def check(teacher_name: str, n: int = 12) -> None:
    """Both estimators at the default budget and half of it, 3 seeds each, against exact values of ``n`` states
    (every coalition; one state at a time above 16 features)."""
    from interp_rl.attribution import DEFAULT_BUDGET, explain

    t = _teacher(teacher_name)
    X, bg = _states(t, n)
    d = X.shape[1]
    ex = explain(t, X, bg, method="exact") if d <= 16 else _exact_big(t, X, bg)
    rows = []
    for method in ("kernel", "permutation"):
        for b in (DEFAULT_BUDGET // 2, DEFAULT_BUDGET):
            for seed in (0, 1, 2):
                a = explain(t, X, bg, method=method, budget=b, seed=seed)
                rows.append({"estimator": method, "budget": b, "seed": seed, "rows_per_state": a.budget,
                             "error": _err(a.values, ex.values)})
                print(rows[-1], flush=True)
    _write(f"check_{teacher_name.replace('/', '_')}.json",
           {"teacher": teacher_name, "task": t.task, "states": n, "features": d, "background": len(bg),
            "exact_seconds": ex.seconds, "rows": rows})


def _exact_big(t: Any, X: np.ndarray, bg: np.ndarray) -> Any:
    """Exact values above the 16-feature cap, one state at a time (2^d coalitions each; slow, for checks)."""
    from interp_rl import attribution as at

    masks, op = at._plan_exact(X.shape[1])
    background = at.Background.of(bg, X.shape[1])
    plan = at._over_background(masks, op, background.weights)
    m, r, o = plan.finish()
    vals = []
    s0 = time.perf_counter()
    for x in X:
        v, _ = at._coalition_values(t, x[None], background, m, r)
        vals.append(np.einsum("dM,nMk->ndk", o, v)[0])
    return at.Attribution(values=np.array(vals), base=np.zeros(1), prediction=np.zeros((len(X), 1)), states=X,
                          features=[], actions=[], method="exact", exact=True, seconds=time.perf_counter() - s0)


def report() -> None:
    lines = ["# Attribution benchmark", "", "Regenerate: `python -m benchmarks.attribution_bench accuracy --teacher "
             "sac/Hopper-v3_1` (and the other teachers), `... speed --teacher sac/HalfCheetah-v3_1`, `... report`.",
             "Error: mean |phi - exact| / mean |exact|, over states, features and actions; the exact values "
             "evaluate every coalition against the same 16 background states.", ""]
    for p in sorted(OUT.glob("accuracy_*.json")):
        d = json.loads(p.read_text())
        lines += [f"## Accuracy: {d['teacher']} on {d['task']} ({d['states']} states, {d['features']} features, "
                  f"background {d['background']})", "",
                  "| estimator | setting | predict rows per state | seconds | error |", "|---|---|---:|---:|---:|"]
        for r in d["rows"]:
            setting = next((f"{k} {r[k]}" for k in ("budget", "max_evals", "nsamples") if k in r), "")
            if "seed" in r:
                setting += f", seed {r['seed']}"
            lines.append(f"| {r['estimator']} | {setting} | {r['rows_per_state']} | {r['seconds']:.2f} | "
                         f"{100 * r['error']:.1f}% |")
        lines.append("")
    checks = sorted(OUT.glob("check_*.json"))
    if checks:
        lines += ["## Error against exact values, per teacher", "",
                  "| teacher | features | states | estimator | predict rows per state | error (3 seeds) |",
                  "|---|---:|---:|---|---:|---|"]
        for p in checks:
            d = json.loads(p.read_text())
            for method in ("kernel", "permutation"):
                for b in sorted({r["budget"] for r in d["rows"]}):
                    sel = [r for r in d["rows"] if r["estimator"] == method and r["budget"] == b]
                    lines.append(f"| {d['teacher']} | {d['features']} | {d['states']} | {method} | "
                                 f"{int(np.mean([r['rows_per_state'] for r in sel]))} | "
                                 + ", ".join(f"{100 * r['error']:.1f}%" for r in sel) + " |")
        lines.append("")
    for p in sorted(OUT.glob("speed_*.json")):
        d = json.loads(p.read_text())
        lines += [f"## Speed: {d['teacher']} on {d['task']} ({d['states']} states, {d['features']} features)", ""]
        for m in ("kernel", "permutation"):
            lines.append(f"- {m}: {d[m]['seconds']:.1f} s for {d['states']} states ({d[m]['rows_per_state']} "
                         "predict rows per state)")
        if "exact_check" in d:
            e = d["exact_check"]
            lines.append(f"- error against exact on {e['states']} states: kernel {100 * e['kernel']:.1f}%, "
                         f"permutation {100 * e['permutation']:.1f}%")
            sp = d["shap_permutation"]
            lines.append(f"- shap PermutationExplainer: {sp['states_per_second_one_permutation']:.0f} states/s with "
                         "one permutation; error " + ", ".join(f"{100 * r['error']:.1f}% at max_evals {r['max_evals']}"
                                                           for r in sp["errors"]))
        for tr in d.get("trees", []):
            lines.append(f"- tree {tr['controller']} ({tr['leaves']} leaves, {tr['parameters']} parameters): "
                         f"{tr['method']} in {tr['seconds']:.3f} s, {tr['speedup_vs_teacher_kernel']:.0f}x faster than "
                         "the teacher's kernel estimate")
        lines.append("")
    from interp_rl.io import atomic_write_text

    atomic_write_text(OUT / "report.md", "\n".join(lines) + "\n")
    print(f"wrote {OUT / 'report.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["accuracy", "speed", "check", "report"])
    parser.add_argument("--teacher", default="sac/Hopper-v3_1")
    parser.add_argument("--states", type=int, default=None)
    args = parser.parse_args()
    if args.part == "accuracy":
        accuracy(args.teacher, args.states or 200)
    elif args.part == "speed":
        speed(args.teacher, args.states or 1000)
    elif args.part == "check":
        check(args.teacher, args.states or 12)
    else:
        report()


if __name__ == "__main__":
    main()
