"""Augmented random search in the linear class from scratch: returns, steps, workers and a Ray cluster.

Run from the repository's root::

    python -m benchmarks.studies.ars scratch [--env HalfCheetah-v5] [--steps 12500000] [--seeds 0 1 2]
        [--workers 2] [--work FOLDER] [--episodes 20] [--out benchmarks/results/ars]
    python -m benchmarks.studies.ars workers [--env HalfCheetah-v5] [--iterations 5] [--repeats 3] [--out ...]
    python -m benchmarks.studies.ars ray [--env HalfCheetah-v5] [--iterations 10] [--out ...]
    python -m benchmarks.studies.ars import --agent AGENT [--episodes 20] [--out ...]
    python -m benchmarks.studies.ars report [--out benchmarks/results/ars]

``scratch`` runs ``interp-rl train --algo ars --policy linear`` (the task's settings from
``envs/hyperparams/ars.yml``, the paper's) once per seed in ``--work`` (resumable: rerun it after an
interruption), then plays each controller for ``--episodes`` fresh episodes (seeds 1000 on) and writes the
record ``scratch_ENV.json`` and the controllers to ``controllers/``. ``workers`` times the same run's first
iterations with one worker and with two, on a machine otherwise idle, and checks that the two controllers are
equal. ``ray`` starts a Ray cluster of two nodes on this machine (a head and a second node, one CPU each, their
own processes), runs the first iterations as Ray tasks on it and in a local process pool, and checks that the two
controllers are equal. ``import`` imports an sb3-contrib ARS agent (``interp-rl import``) and records its
comparison with the controller. ``report`` rebuilds ``report.md`` from the records alone.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.studies._common import add_out, new_report, parse, read_json, write_json, write_report
from interp_rl.seeds import STUDY_EVAL_SEED

__all__ = ["main", "ray_cluster", "report", "scratch", "workers"]

OUT = "benchmarks/results/ars"
#: The RL Baselines3 Zoo's ARS agent on HalfCheetah (a linear policy), played on -v5 (issue 30's measurement).
ZOO = {"HalfCheetah-v5": 5138.0}


def ars_task_settings(env: str) -> dict[str, Any]:
    """The task's ARS settings (``envs/hyperparams/ars.yml``) as :class:`distill.ars.ARS` parameters."""
    from distill.ars import ars_settings
    from envs.training import default_hyperparams

    return ars_settings(default_hyperparams("ars", env))


def _job(env: str, out: Path, *, steps: int, seed: int, workers: int, executor: str = "process",
         ray_address: str | None = None, resume: bool = True) -> dict[str, Any]:
    """One ``train --algo ars --policy linear`` run into ``out`` (its metrics; resumed if unfinished)."""
    from distill.ars import ARS, run_ars_job
    from envs import env_factory, task_signals
    from interp_rl.errors import InterpRLError

    features, actions = task_signals(env)
    ars = ARS(seed=seed, n_workers=workers, executor=executor, ray_address=ray_address, **ars_task_settings(env))
    try:
        return run_ars_job(ars, "linear", env_factory(env), out, steps=steps, task=env, features=features,
                           actions=actions, resume=resume, eval_episodes=5,
                           progress=lambda r: print(f"  seed {seed} iteration {r['iteration']}: {r['env_steps']} "
                                                    f"steps, mean return {r['return_mean']:.1f}", flush=True))
    except InterpRLError:
        if (out / "metrics.json").is_file():  # finished before: its record stands
            return read_json(out / "metrics.json")
        raise


def scratch(env: str, steps: int, seeds: list[int], workers: int, work: Path, episodes: int,
            out: Path) -> dict[str, Any]:
    """ARS linear from scratch on ``env``, one run per seed, each controller played for ``episodes`` episodes.

    Returns
    -------
    dict
        The record: ``env``, ``steps``, ``workers``, ``settings``, ``zoo`` and the ``runs`` (steps, iterations,
        wall time, parameters, returns of every episode, the learning curve).
    """
    import shutil

    from envs import env_factory
    from interp_rl.program import load_controller
    from interp_rl.rollouts import evaluate

    rows = []
    for seed in seeds:
        folder = work / f"{env}-linear-seed{seed}"
        if (folder / "metrics.json").is_file():
            metrics = read_json(folder / "metrics.json")
        else:
            metrics = _job(env, folder, steps=steps, seed=seed, workers=workers)
        ctrl = load_controller(folder)
        played = evaluate(ctrl.program, env_factory(env), episodes, seed=STUDY_EVAL_SEED, task=env)
        (out / "controllers").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / "controller.json", out / "controllers" / f"{env}-linear-seed{seed}.json")
        rows.append({
            "seed": seed, "env_steps": metrics["env_steps"], "iterations": metrics["iterations"],
            "wall_seconds": metrics["wall_seconds"], "parameters": int(ctrl.program.size()["parameters"]),
            "returns": [float(r) for r in played.returns],
            "curve": [[h["env_steps"], h["return_mean"]] for h in metrics["history"]],
        })
        print(f"seed {seed}: {played.mean_return:.1f} over {episodes} episodes (worst {min(played.returns):.1f}), "
              f"{metrics['env_steps']} steps, {metrics['wall_seconds']:.0f} s", flush=True)
    return {"env": env, "steps": steps, "workers": workers, "episodes": episodes, "eval_seed": STUDY_EVAL_SEED,
            "settings": ars_task_settings(env), "zoo": ZOO.get(env), "runs": rows}


def workers(env: str, iterations: int, repeats: int = 1) -> dict[str, Any]:
    """The first ``iterations`` of the from-scratch run (seed 0) with 1 and with 2 workers, ``repeats`` times in
    turn (1, 2, 1, 2, ...): wall times, and whether every controller is the same.

    A shared machine's speed drifts between runs; repeating in turn and taking the median speed-up keeps one slow
    run from deciding the figure."""

    steps = iterations * 2 * int(ars_task_settings(env)["n_directions"]) * _horizon(env)
    runs, programs = [], []
    for repeat in range(repeats):
        for n in (1, 2):
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                metrics = _job(env, Path(tmp) / "run", steps=steps, seed=0, workers=n, resume=False)
                wall = time.perf_counter() - t0
                programs.append(_program_json(Path(tmp) / "run"))
            runs.append({"workers": n, "repeat": repeat, "search_seconds": metrics["wall_seconds"],
                         "wall_seconds": wall, "env_steps": metrics["env_steps"]})
            print(f"{n} worker(s), repeat {repeat + 1} of {repeats}: {metrics['wall_seconds']:.1f} s searching, "
                  f"{wall:.1f} s in all", flush=True)
    return {"env": env, "iterations": iterations, "repeats": repeats, "runs": runs,
            "same_controller": len(set(programs)) == 1}


def _program_json(folder: Path) -> str:
    """The controller's program as JSON (its metadata, which names the executor and the workers, left out)."""
    import json

    from interp_rl.program import load_controller

    return json.dumps(load_controller(folder).program.to_dict(), sort_keys=True)


def _horizon(env: str) -> int:
    from envs import env_factory

    e = env_factory(env)(0)
    try:
        return int(getattr(e.spec, "max_episode_steps", None) or 1000)
    finally:
        e.close()


def ray_cluster(env: str, iterations: int) -> dict[str, Any]:
    """The first ``iterations`` of the from-scratch run (seed 0, 2 workers) in a process pool and as Ray tasks on
    a two-node Ray cluster started here (``ray.cluster_utils.Cluster``: a head and a second node, one CPU each)."""
    import ray
    from ray.cluster_utils import Cluster


    steps = iterations * 2 * int(ars_task_settings(env)["n_directions"]) * _horizon(env)
    controllers, runs = [], []
    for executor in ("process", "ray"):
        with tempfile.TemporaryDirectory() as tmp:
            cluster = None
            if executor == "ray":
                cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
                cluster.add_node(num_cpus=1)
                cluster.wait_for_nodes()
            try:
                metrics = _job(env, Path(tmp) / "run", steps=steps, seed=0, workers=2, executor=executor,
                               ray_address=cluster.address if cluster else None, resume=False)
                nodes = len(ray.nodes()) if cluster else None
            finally:
                if cluster is not None:
                    ray.shutdown()
                    cluster.shutdown()
            controllers.append(_program_json(Path(tmp) / "run"))
        runs.append({"executor": executor, "search_seconds": metrics["wall_seconds"],
                     "env_steps": metrics["env_steps"], "cluster_nodes": nodes,
                     "nodes_used": metrics.get("ray_nodes")})
        print(f"{executor}: {metrics['wall_seconds']:.1f} s, {metrics['env_steps']} steps", flush=True)
    return {"env": env, "iterations": iterations, "runs": runs, "same_controller": controllers[0] == controllers[1]}


def import_check(agent: Path, episodes: int, work: Path) -> dict[str, Any]:
    """``interp-rl import AGENT`` into ``work``: the agent against its controller on ``episodes`` seeds (and the
    agent's weights in float64, and the agent in batches of one)."""
    from envs.importing import import_to_folder

    controller, check = import_to_folder(agent, work, episodes=episodes, seed=0)
    meta = controller.metadata["teacher"]
    print(f"{controller.task}: {check.identical_episodes} of {episodes} returns identical to the agent's, "
          f"{check.identical_episodes_float64} to the float64 agent's", flush=True)
    trained = Path(agent) / "teacher.json"
    how = read_json(trained) if trained.is_file() else {}
    return {"task": controller.task, "agent": Path(str(meta["source"])).name,
            "trained": {k: how[k] for k in ("algo", "steps", "seed", "model_step") if k in how},
            "normalised": bool(
        meta["normalization"]), "parameters": int(controller.program.size()["parameters"]), **check.to_dict()}


def _curves_png(record: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp_rl.document import png

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for r in record["runs"]:
        steps, ret = zip(*r["curve"], strict=True)
        ax.plot([s / 1e6 for s in steps], ret, lw=1, label=f"seed {r['seed']}")
    if record.get("zoo"):
        ax.axhline(record["zoo"], ls="--", color="grey", lw=1, label="zoo ARS agent")
    ax.set_xlabel("environment steps (millions)")
    ax.set_ylabel("mean return of the 2N perturbed policies")
    ax.set_title(f"ARS, linear policy from scratch, {record['env']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png(fig)


def report(out: Path) -> Path:
    """Rebuild ``report.md`` from the records in ``out`` (``scratch_*.json``, ``workers_*.json``, ``ray_*.json``).

    Parameters
    ----------
    out
        The study's folder.

    Returns
    -------
    Path
        The ``report.md`` written.
    """
    import numpy as np

    out = Path(out)
    scratch_records = [read_json(p) for p in sorted(out.glob("scratch_*.json"))]
    worker_records = [read_json(p) for p in sorted(out.glob("workers_*.json"))]
    ray_records = [read_json(p) for p in sorted(out.glob("ray_*.json"))]
    commands = [f"python -m benchmarks.studies.ars scratch --env {d['env']} --steps {d['steps']} --seeds "
                f"{' '.join(str(r['seed']) for r in d['runs'])} --workers {d['workers']} --episodes {d['episodes']}"
                for d in scratch_records]
    commands += [f"python -m benchmarks.studies.ars workers --env {d['env']} --iterations {d['iterations']}"
                 + (f" --repeats {d['repeats']}" if d.get("repeats", 1) != 1 else "")
                 for d in worker_records]
    commands += [f"python -m benchmarks.studies.ars ray --env {d['env']} --iterations {d['iterations']}"
                 for d in ray_records]
    import_records = [read_json(p) for p in sorted(out.glob("import_*.json"))]
    commands += [f"interp-rl train --algo ars --env {d['task']} --steps {d['trained'].get('steps', 'STEPS')} --seed "
                 f"{d['trained'].get('seed', 0)} --out ars-runs/{d['task']}-agent\n"
                 f"python -m benchmarks.studies.ars import --agent ars-runs/{d['task']}-agent "
                 f"--episodes {d['episodes']}" for d in import_records]
    doc = new_report("Augmented random search in the linear class", "ars", commands)
    for d in scratch_records:
        doc.h(2, f"From scratch on {d['env']}")
        s = d["settings"]
        doc.p(f"`interp-rl train --algo ars --policy linear --env {d['env']} --steps {d['steps']} --workers "
              f"{d['workers']}`, one run per seed: ARS V2-t with the task's settings (N = {s['n_directions']} "
              f"directions, the best b = {s['top_directions']}, step size {s['step_size']:g}, noise "
              f"{s['noise']:g}). Each controller is then played for {d['episodes']} fresh episodes (seeds "
              f"{d['eval_seed']} on).")
        rows = []
        for r in d["runs"]:
            ret = np.asarray(r["returns"])
            rows.append([str(r["seed"]), f"{ret.mean():.1f} +- {ret.std():.1f}", f"{ret.min():.1f}",
                         f"{r['env_steps']:,}", str(r["iterations"]), str(r["parameters"]),
                         f"{r['wall_seconds'] / 60:.1f} min"])
        pooled = np.concatenate([np.asarray(r["returns"]) for r in d["runs"]])
        rows.append(["all", f"{pooled.mean():.1f} +- {pooled.std():.1f}", f"{pooled.min():.1f}",
                     f"{sum(r['env_steps'] for r in d['runs']) / len(d['runs']):,.0f} each", "", "", ""])
        doc.table(["seed", f"return, {d['episodes']} episodes", "worst episode", "environment steps", "iterations",
                   "parameters", "wall time"], rows)
        doc.p("Wall time is the search's own, beside whatever else the machine was running then; the section on "
              "workers times the search on an otherwise idle machine.")
        if d.get("zoo"):
            doc.p(f"The RL Baselines3 Zoo's ARS agent on this task (a linear policy, 12,500,000 steps) returns "
                  f"{d['zoo']:.0f} on -v5: the controllers here keep {100 * pooled.mean() / d['zoo']:.0f}% of it "
                  f"(seeds pooled).")
        doc.image(f"curves-{d['env']}.png", _curves_png(d), f"ARS learning curves on {d['env']}")
    for d in worker_records:
        doc.h(2, f"One worker against two ({d['env']})")
        repeats = int(d.get("repeats", 1))
        doc.p(f"The first {d['iterations']} iterations of the seed-0 run, on a 2-core machine otherwise idle, "
              f"{repeats} time{'s' if repeats > 1 else ''} in turn (1 worker, then 2). Same controller in every run: "
              f"{'yes' if d['same_controller'] else 'NO'}.")
        rows, ups = [], []
        for r in d["runs"]:
            base = next(b for b in d["runs"] if b["workers"] == 1 and b.get("repeat", 0) == r.get("repeat", 0))
            up = base["search_seconds"] / r["search_seconds"]
            if r["workers"] != 1:
                ups.append(up)
            rows.append([str(r.get("repeat", 0) + 1), str(r["workers"]), f"{r['env_steps']:,}",
                         f"{r['search_seconds']:.1f} s", f"{r['wall_seconds']:.1f} s", f"{up:.2f}x"])
        doc.table(["repeat", "workers", "environment steps", "searching", "whole command", "speed-up"], rows)
        if len(ups) > 1:
            doc.p(f"Speed-up of 2 workers over 1: median {float(np.median(ups)):.2f}x (from {min(ups):.2f}x to "
                  f"{max(ups):.2f}x over the {len(ups)} repeats). The machine's vCPUs are shared with other "
                  "tenants, so absolute times drift between runs; the ratio within a repeat is the figure to read.")
    for d in ray_records:
        doc.h(2, f"Ray tasks on a two-node cluster ({d['env']})")
        doc.p(f"The first {d['iterations']} iterations of the seed-0 run with 2 workers, in a local process pool "
              f"and as Ray tasks on a Ray cluster of a head and a second node started on this machine (one CPU each, "
              f"tasks spread over the nodes). Same controller: {'yes' if d['same_controller'] else 'NO'}.")
        doc.table(["executor", "environment steps", "searching", "nodes in the cluster", "nodes that ran tasks"],
                  [[r["executor"], f"{r['env_steps']:,}", f"{r['search_seconds']:.1f} s",
                    "" if r["cluster_nodes"] is None else str(r["cluster_nodes"]),
                    "" if r["nodes_used"] is None else str(r["nodes_used"])] for r in d["runs"]])
    if import_records:
        doc.h(2, "ARS agents imported as linear controllers")
        doc.p("`interp-rl import AGENT` on sb3-contrib ARS agents trained here (`interp-rl train --algo ars`, the "
              "task's settings). Each is played on the same seeds as the agent (float32, batches of 8), as the "
              "agent's own weights in float64 with its normalisation unfolded, and as the agent in batches of one.")
        doc.table(["task", "VecNormalize", "parameters", "agent", "controller", "same return as the agent",
                   "same return as the float64 agent", "largest difference", "agent against itself",
                   "largest action difference"],
                  [[d["task"], "yes" if d["normalised"] else "no", str(d["parameters"]),
                    f"{d['agent_mean_return']:.4f}", f"{d['controller_mean_return']:.4f}",
                    f"{d['identical_episodes']} of {d['episodes']}",
                    f"{d['identical_episodes_float64']} of {d['episodes']}", f"{d['max_return_difference']:.3g}",
                    f"{d['max_agent_self_difference']:.3g}", f"{d['max_action_difference']:.3g}"]
                   for d in import_records])
        doc.p("The controller computes in float64 and the agent in float32, so their actions differ in the last "
              "float32 bits (the largest action difference) and no episode's return is the same double. Without "
              "VecNormalize the controller is the agent's own arithmetic in float64: the same return on every seed. "
              "With it, the statistics are folded into the weights, which rounds differently from normalising "
              "first. How far these differences carry depends on the task: the agent itself changes its returns "
              "as much when only the batch its float32 product is computed in changes (agent against itself).")
    return write_report(doc, out)


def main(argv: list[str] | None = None) -> None:
    """The command line: ``scratch``, ``workers`` or ``ray`` (each then reports), or ``report``.

    Parameters
    ----------
    argv
        The arguments (None: the command line's).
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.ars",
                                     description=(__doc__ or "").splitlines()[0])
    parts = parser.add_subparsers(dest="part", required=True)
    s = parts.add_parser("scratch")
    s.add_argument("--env", default="HalfCheetah-v5")
    s.add_argument("--steps", type=int, default=12_500_000)
    s.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    s.add_argument("--workers", type=int, default=2)
    s.add_argument("--work", type=Path, default=Path("ars-runs"), help="where the runs (and their checkpoints) go")
    s.add_argument("--episodes", type=int, default=20)
    add_out(s, OUT)
    for name, iters in (("workers", 5), ("ray", 10)):
        p = parts.add_parser(name)
        p.add_argument("--env", default="HalfCheetah-v5")
        p.add_argument("--iterations", type=int, default=iters)
        if name == "workers":
            p.add_argument("--repeats", type=int, default=3, help="runs of each worker count, in turn")
        add_out(p, OUT)
    m = parts.add_parser("import")
    m.add_argument("--agent", type=Path, required=True, help="an ARS agent (interp-rl train --algo ars folder)")
    m.add_argument("--episodes", type=int, default=20)
    m.add_argument("--work", type=Path, default=Path("ars-runs"), help="where the imported controller goes")
    add_out(m, OUT)
    add_out(parts.add_parser("report"), OUT)
    args = parse(parser, argv)
    if args.part == "scratch":
        write_json(args.out / f"scratch_{args.env}.json",
                   scratch(args.env, args.steps, args.seeds, args.workers, args.work, args.episodes, args.out))
    elif args.part == "workers":
        write_json(args.out / f"workers_{args.env}.json", workers(args.env, args.iterations, args.repeats))
    elif args.part == "import":
        record = import_check(args.agent, args.episodes, args.work / f"import-{args.agent.name}")
        write_json(args.out / f"import_{record['task']}.json", record)
    elif args.part == "ray":
        write_json(args.out / f"ray_{args.env}.json", ray_cluster(args.env, args.iterations))
    report(args.out)


if __name__ == "__main__":
    main()
