"""Attribution benchmark: accuracy against exact Shapley values, speed, and shap's explainers side by side.

Run from the repository's root (each part writes its JSON record into ``--out``, default
``benchmarks/results/attribution``, replacing an earlier one)::

    python -m benchmarks.studies.attribution accuracy --teacher sac/Hopper-v3_1   # exact vs ours vs shap
    python -m benchmarks.studies.attribution speed --teacher sac/HalfCheetah-v3_1 # 1,000 states, trees too
    python -m benchmarks.studies.attribution check --teacher ppo/HalfCheetah-v3_1 # error at the default budget
    python -m benchmarks.studies.attribution report                               # report.md from the records

Everything is measured on the states the teacher visits (5 episodes, seed 0) against 16 of them as the
background, equally weighted (shap's ``Independent`` masker and ``KernelExplainer`` take the same rows, so
every estimator explains the same game). Error: mean absolute error over states, features and actions,
relative to the mean |phi| of the exact values. Times are wall-clock on this machine: ours with the teacher's
network on ``EXPLAIN_THREADS`` (2) torch threads in ``speed`` (the target is for 2 cores) and on one in
``accuracy``, side by side with shap's explainers, which call the teacher's one-thread ``predict``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.studies._common import add_out, add_teachers, new_report, parse, read_json, write_json, write_report

__all__ = ["accuracy", "check", "main", "report", "speed"]

OUT = "benchmarks/results/attribution"
#: States per part when ``--states`` is not given.
STATES = {"accuracy": 200, "speed": 1000, "check": 12}
BUDGETS = (2048, 4096, 8192, 16384)
SHAP_PERMUTATION_EVALS = (2 * 11 + 1, 4 * 11 + 1, 8 * 11 + 1, 16 * 11 + 1, 32 * 11 + 1)
SHAP_KERNEL_SAMPLES = (128, 256, 512, 1024)


def _teacher(teachers: Path, name: str) -> Any:
    from envs.loading import load_teacher

    folder = Path(teachers) / name
    return load_teacher(next(folder.glob("*.zip")))


def _states(teacher: Any, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` visited states and 16 background rows, drawn apart from each other."""
    from interp_rl.rollouts import run_episodes

    ran = run_episodes(teacher, teacher.env_fn, range(seed, seed + 5), record=True, task=teacher.task)
    assert ran.rollout is not None  # record=True
    visited = ran.rollout.observations
    rng = np.random.default_rng(seed)
    pick = rng.permutation(len(visited))
    return visited[pick[16:16 + n]], visited[pick[:16]]


def _err(values: np.ndarray, exact: np.ndarray) -> float:
    return float(np.abs(values - exact).mean() / np.abs(exact).mean())


def _record(out: Path, part: str, teacher_name: str) -> Path:
    return Path(out) / f"{part}_{teacher_name.replace('/', '_')}.json"


def accuracy(teachers: Path, teacher_name: str, out: Path, n: int = STATES["accuracy"]) -> Path:
    """Exact (every coalition) against ours and shap's estimators on ``n`` states of an 11-feature task.

    Parameters
    ----------
    teachers
        Folder of the shared teachers.
    teacher_name
        The teacher's folder in it (``sac/Hopper-v3_1``).
    out
        The study's folder: writes ``accuracy_TEACHER.json`` there.
    n
        Visited states explained.

    Returns
    -------
    Path
        The record written.
    """
    import shap

    from interp_rl.attribution import explain

    t = _teacher(teachers, teacher_name)
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
    return write_json(_record(out, "accuracy", teacher_name),
                      {"teacher": teacher_name, "task": t.task, "states": n, "background": len(bg), "features": d,
                       "mean_abs_exact": float(np.abs(exact.values).mean()), "rows": rows,
                       "seconds_total": time.perf_counter() - t0})


def speed(teachers: Path, teacher_name: str, out: Path, n: int = STATES["speed"], exact_states: int = 10,
          results: Path = Path("benchmarks/results")) -> Path:
    """Teacher attributions of ``n`` states at the default budget, their error on ``exact_states`` against every
    coalition (2^d), shap's PermutationExplainer on the same states, and tree attributions.

    Parameters
    ----------
    teachers
        Folder of the shared teachers.
    teacher_name
        The teacher's folder in it (``sac/HalfCheetah-v3_1``).
    out
        The study's folder: writes ``speed_TEACHER.json`` there.
    n
        Visited states explained.
    exact_states
        States also explained exactly (0: none, and no shap comparison).
    results
        Benchmark results searched for tree controllers of the task
        (``RESULTS/SUITE/cells/TASK-*tree*/controller.json``, the first four).

    Returns
    -------
    Path
        The record written.
    """
    import shap

    from interp_rl.attribution import explain
    from interp_rl.program import load_controller

    t = _teacher(teachers, teacher_name)
    X, bg = _states(t, n)
    d = X.shape[1]
    found: dict[str, Any] = {"teacher": teacher_name, "task": t.task, "states": n, "features": d,
                           "background": len(bg), "threads": t.threads}
    runs = {}
    for method in ("kernel", "permutation"):
        a = explain(t, X, bg, method=method)
        runs[method] = a
        found[method] = {"seconds": a.seconds, "rows_per_state": a.budget, "efficiency_gap": a.efficiency_gap()}
        print(method, found[method])
    if exact_states:
        ex = explain(t, X[:exact_states], bg, method="exact") if d <= 16 else _exact_big(t, X[:exact_states], bg)
        found["exact_check"] = {"states": exact_states, "seconds": ex.seconds,
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
        found["shap_permutation"] = {"errors": evals, "states_per_second_one_permutation": rate,
                                   "seconds": time.perf_counter() - s0}
        print(found["exact_check"], found["shap_permutation"])
    # trees: every committed tree controller of this task, exact rule against the teacher's time
    trees = []
    for path in sorted(results.glob(f"*/cells/{t.task.split('-')[0]}-*tree*/controller.json"))[:4]:
        ctrl = load_controller(path)
        if ctrl.program.obs_dim != d:
            continue
        a = explain(ctrl, X, bg)
        trees.append({"controller": str(path.parent.relative_to(results)), "method": a.method,
                      "seconds": a.seconds, "efficiency_gap": a.efficiency_gap(), **ctrl.size(),
                      "speedup_vs_teacher_kernel": found["kernel"]["seconds"] / max(a.seconds, 1e-9)})
        print(trees[-1])
    found["trees"] = trees
    return write_json(_record(out, "speed", teacher_name), found)


def check(teachers: Path, teacher_name: str, out: Path, n: int = STATES["check"]) -> Path:
    """Both estimators at the default budget and half of it, 3 seeds each, against exact values of ``n`` states
    (every coalition; one state at a time above 16 features).

    Parameters
    ----------
    teachers
        Folder of the shared teachers.
    teacher_name
        The teacher's folder in it (``ppo/HalfCheetah-v3_1``).
    out
        The study's folder: writes ``check_TEACHER.json`` there.
    n
        Visited states explained.

    Returns
    -------
    Path
        The record written.
    """
    from interp_rl.attribution import DEFAULT_BUDGET, explain

    t = _teacher(teachers, teacher_name)
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
    return write_json(_record(out, "check", teacher_name),
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


def _command(part: str, record: dict[str, Any]) -> str:
    states = "" if record["states"] == STATES[part] else f" --states {record['states']}"
    return f"python -m benchmarks.studies.attribution {part} --teacher {record['teacher']}{states}"


def report(out: Path) -> Path:
    """Rebuild ``report.md`` from the records in ``out`` (no teacher is loaded).

    Parameters
    ----------
    out
        The study's folder.

    Returns
    -------
    Path
        The ``report.md`` written.
    """
    out = Path(out)
    records = {part: [read_json(p) for p in sorted(out.glob(f"{part}_*.json"))] for part in STATES}
    doc = new_report("Attribution benchmark", "attribution",
                     [_command(part, d) for part in ("accuracy", "check", "speed") for d in records[part]])
    doc.p("Error: mean |phi - exact| / mean |exact|, over states, features and actions; the exact values "
          "evaluate every coalition against the same 16 background states.")
    for d in records["accuracy"]:
        doc.h(2, f"Accuracy: {d['teacher']} on {d['task']} ({d['states']} states, {d['features']} features, "
                 f"background {d['background']})")
        rows = []
        for r in d["rows"]:
            setting = next((f"{k} {r[k]}" for k in ("budget", "max_evals", "nsamples") if k in r), "")
            if "seed" in r:
                setting += f", seed {r['seed']}"
            rows.append([r["estimator"], setting, str(r["rows_per_state"]), f"{r['seconds']:.2f}",
                         f"{100 * r['error']:.1f}%"])
        doc.table(["estimator", "setting", "predict rows per state", "seconds", "error"], rows)
    if records["check"]:
        doc.h(2, "Error against exact values, per teacher")
        rows = []
        for d in records["check"]:
            for method in ("kernel", "permutation"):
                for b in sorted({r["budget"] for r in d["rows"]}):
                    sel = [r for r in d["rows"] if r["estimator"] == method and r["budget"] == b]
                    rows.append([d["teacher"], str(d["features"]), str(d["states"]), method,
                                 str(int(np.mean([r["rows_per_state"] for r in sel]))),
                                 ", ".join(f"{100 * r['error']:.1f}%" for r in sel)])
        doc.table(["teacher", "features", "states", "estimator", "predict rows per state", "error (3 seeds)"], rows)
    for d in records["speed"]:
        doc.h(2, f"Speed: {d['teacher']} on {d['task']} ({d['states']} states, {d['features']} features)")
        items = [f"{m}: {d[m]['seconds']:.1f} s for {d['states']} states ({d[m]['rows_per_state']} predict rows "
                 "per state)" for m in ("kernel", "permutation")]
        if "exact_check" in d:
            e = d["exact_check"]
            items.append(f"error against exact on {e['states']} states: kernel {100 * e['kernel']:.1f}%, "
                         f"permutation {100 * e['permutation']:.1f}%")
            sp = d["shap_permutation"]
            items.append(f"shap PermutationExplainer: {sp['states_per_second_one_permutation']:.0f} states/s with "
                         "one permutation; error " + ", ".join(f"{100 * r['error']:.1f}% at max_evals {r['max_evals']}"
                                                           for r in sp["errors"]))
        items += [f"tree {tr['controller']} ({tr['leaves']} leaves, {tr['parameters']} parameters): "
                  f"{tr['method']} in {tr['seconds']:.3f} s, {tr['speedup_vs_teacher_kernel']:.0f}x faster than "
                  "the teacher's kernel estimate" for tr in d.get("trees", [])]
        doc.bullets(items)
    return write_report(doc, out)


def main(argv: list[str] | None = None) -> None:
    """The command line: ``accuracy``, ``speed`` or ``check`` one teacher, or ``report``.

    Parameters
    ----------
    argv
        The arguments (None: the command line's).
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.attribution",
                                     description=(__doc__ or "").splitlines()[0])
    parts = parser.add_subparsers(dest="part", required=True)
    for part in STATES:
        sub = parts.add_parser(part)
        sub.add_argument("--teacher", default="sac/Hopper-v3_1", help="the teacher's folder in --teachers")
        sub.add_argument("--states", type=int, default=STATES[part], help="visited states explained")
        add_teachers(sub)
        add_out(sub, OUT)
        if part == "speed":
            sub.add_argument("--results", type=Path, default=Path("benchmarks/results"),
                             help="benchmark results searched for tree controllers of the task")
    add_out(parts.add_parser("report"), OUT)
    args = parse(parser, argv)
    if args.part == "accuracy":
        accuracy(args.teachers, args.teacher, args.out, args.states)
    elif args.part == "speed":
        speed(args.teachers, args.teacher, args.out, args.states, results=args.results)
    elif args.part == "check":
        check(args.teachers, args.teacher, args.out, args.states)
    else:
        report(args.out)


if __name__ == "__main__":
    main()
