"""Upside-down RL with tree ensembles against SB3 DQN and PPO at the same environment steps.

Run from the repository's root::

    python -m benchmarks.studies.udrl run [--task CartPole-v1] [--steps 100000] [--seeds 0 1 2]
        [--estimators forest extra-trees] [--baselines dqn ppo] [--work udrl-runs] [--episodes 20]
        [--udrl-hp KEY=VALUE ...] [--baseline-hp KEY=VALUE ...] [--eval-every STEPS]
        [--out benchmarks/results/udrl]
    python -m benchmarks.studies.udrl read [--task CartPole-v1 ...] [--work udrl-runs] [--leaves 8] [--episodes 20]
        [--out benchmarks/results/udrl]
    python -m benchmarks.studies.udrl report [--out benchmarks/results/udrl]

``run`` trains, in ``--work``, one UDRL agent per estimator and seed (:func:`envs.udrl.train_udrl`; ``--udrl-hp``
sets fields of :class:`envs.udrl.UDRLConfig`) and one SB3 agent per baseline and seed
(:func:`envs.training.train_teacher` with the shipped per-task hyperparameters, ``--baseline-hp`` overriding them,
5 evaluation episodes at every checkpoint, every ``--eval-every`` steps). A run that finished before is read back,
an interrupted one resumed from its checkpoint. Each final agent is then played greedily for ``--episodes`` fresh
episodes (seeds 1000 on): the UDRL forest as its saved ``controller.json`` with the command it was saved with
(:class:`envs.udrl.CommandEnv` appends the command to the observations, so :func:`interp_rl.rollouts.evaluate`
plays it like any controller), the SB3 agent as its saved model. DQN is for discrete tasks only: on a continuous
task it is skipped with a note. The record ``udrl_TASK.json`` (settings, every run with its learning curve, the
commands) goes to ``--out`` and is rewritten, with the report, after every run. Each finished run is also kept in
``--out``'s ``runs/`` and read back from there, so a study cut short resumes without its ``--work``.

``read`` distils one small tree from every UDRL forest of the records whose controller is in ``--work``: DAgger with
the forest as its teacher (:class:`envs.controllers.ControllerTeacher`, as ``interp-rl distill tree --teacher
FOREST`` does), at most ``--leaves`` constant leaves reading the observation and the command, then played on the
forest's own ``--episodes`` episodes. The tree goes to ``--out``'s ``trees/NAME/`` (``controller.json``,
``rules.txt``, ``tree.svg``), its row to ``runs/NAME-tree.json``. ``report`` rebuilds ``report.md`` from the records
alone.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.studies._common import add_out, new_report, parse, read_json, write_json, write_report
from interp_rl.seeds import STUDY_EVAL_SEED, TRAIN_EVAL_SEED_OFFSET

__all__ = ["PAPER", "READ", "baseline_run", "main", "play_udrl", "read", "read_forest", "report", "run", "udrl_run"]

OUT = "benchmarks/results/udrl"
WORK = "udrl-runs"
#: The paper's setting, quoted in every report for context (kept here so the report rebuilds identically).
PAPER = ("Cardenas-Cartagena, Falzari, Zullich and Sabatelli (ICAART 2025) compare random forests, extra trees and a "
         "network as UDRL's behaviour function on CartPole-v0, Acrobot-v1 and LunarLander-v2 for 500 iterations of "
         "15 episodes each. The stored copies of the paper we could read stop before its results; the authors' code "
         "comments give one random-forest run at -79.0 ± 47.0 on Acrobot-v1 and -92.0 ± 81.5 on LunarLander-v2 "
         "(100 test episodes each), which we quote for scale only.")
#: How ``read`` distils a small tree from a forest (the ``tree`` method's settings; ``max_leaves`` is ``--leaves``):
#: DAgger from the forest, constant leaves, no DART levels, restarts or fine-tuning on the return, so the tree is
#: the forest's behaviour in a few rules and nothing more.
READ = {"leaf_model": "constant", "iterations": 4, "steps": 5000, "rl_steps": 0, "noise_levels": "", "restarts": 1,
        "eval_episodes": 5, "attribution_states": 0}
#: What each UDRL estimator's behaviour function is called in the report's prose.
_ENSEMBLE = {"forest": "random forest", "extra-trees": "extra-trees ensemble", "tree": "single tree"}
#: UDRLConfig fields the study sets itself (not through --udrl-hp).
_UDRL_OWN = ("task", "steps", "out", "seed", "estimator")


def play_udrl(folder: Path, episodes: int, seed: int = STUDY_EVAL_SEED) -> tuple[Any, Any]:
    """Play the saved UDRL controller in ``folder`` greedily at the command it was saved with.

    Returns
    -------
    tuple
        The controller and the :class:`~interp_rl.rollouts.EvalResult` (episode ``i`` reset with ``seed + i``).
    """
    from envs.controllers import controller_env
    from interp_rl.program import load_controller
    from interp_rl.rollouts import evaluate

    ctrl = load_controller(folder)
    env_fn, task = controller_env(ctrl)  # the command appended to every observation, as interp-rl evaluate plays it
    return ctrl, evaluate(ctrl, env_fn, episodes, seed=seed, task=task)


def _hp(items: list[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` items as a dict, each value read as YAML (``5``, ``0.1``, ``[64, 64]``)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"Error: {flag} expects KEY=VALUE. Got {item!r} instead.")
        key, value = item.split("=", 1)
        out[key] = yaml.safe_load(value)
    return out


def _same(saved: dict[str, Any], now: dict[str, Any], skip: tuple[str, ...]) -> list[str]:
    """The settings (other than ``skip``) that differ between a run's ``train_config.json`` and this one."""
    now = json.loads(json.dumps(now, default=str))
    return sorted(k for k in set(saved) | set(now) if k not in skip and saved.get(k) != now.get(k))


def _curve(history: list[dict[str, Any]]) -> list[list[float]]:
    return [[int(h["step"]), float(h["eval_return"])] for h in history if h.get("eval_return") is not None]


def _row_path(out: Path | None, name: str) -> Path:
    return Path(out or ".") / "runs" / f"{name}.json"


def _kept_row(out: Path | None, name: str, expect: dict[str, Any]) -> dict[str, Any] | None:
    """The finished run ``name`` kept in ``out`` with the settings ``expect``, or None when there is none.

    A kept run with other settings stops the study in one line: its returns would be read as this run's.
    """
    path = None if out is None else _row_path(out, name)
    if path is None or not path.is_file():
        return None
    kept = read_json(path)
    expect = json.loads(json.dumps(expect, default=str))
    saved = kept.get("expect") or {}
    differ = sorted(k for k in set(saved) | set(expect) if k != "settings" and saved.get(k) != expect.get(k))
    differ += _same(saved.get("settings") or {}, expect["settings"], ())
    if differ:
        raise SystemExit(f"Error: {path} holds a finished run with other settings ({', '.join(differ)} differ); "
                         "choose another --out, or delete that file to run it again.")
    return kept["row"]


def _keep_row(out: Path | None, name: str, expect: dict[str, Any], row: dict[str, Any]) -> None:
    if out is not None:
        write_json(_row_path(out, name), {"expect": json.loads(json.dumps(expect, default=str)), "row": row})


def udrl_run(task: str, steps: int, seed: int, estimator: str, work: Path, episodes: int,
             hp: dict[str, Any], out: Path | None = None) -> dict[str, Any]:
    """One UDRL run (trained, resumed or read back), its final controller played for ``episodes`` episodes.

    With ``out``, the finished run is kept as ``out/runs/NAME.json`` and read back from there by a later call with
    the same settings, even when ``work`` is gone.

    Returns
    -------
    dict
        The run: ``method`` (``udrl``), ``estimator``, ``seed``, ``env_steps``, ``wall_seconds`` (the iterations'
        seconds, their evaluations included, the random warm-up not), ``returns`` (every episode), ``played``
        (``controller``: the saved controller at its command, seeds ``STUDY_EVAL_SEED`` on; ``train_udrl``: the
        network, which writes no controller, by ``train_udrl``'s own final evaluation), ``size``, ``command``,
        ``train_eval`` (``train_udrl``'s final evaluation), ``same_as_train_eval`` and ``train_eval_gap`` (the
        controller replayed on those seeds gives those returns; the largest difference) and the curves
        (``[step, return]``).
    """
    from dataclasses import asdict

    from envs import task_signals
    from envs.udrl import UDRLConfig, train_udrl
    from interp_rl.errors import InterpRLError

    folder = work / f"{task}-udrl-{estimator}-seed{seed}"
    try:
        cfg = UDRLConfig(task=task, steps=steps, out=str(folder), seed=seed, estimator=estimator, **hp)
        cfg.check()
    except (TypeError, InterpRLError) as err:
        raise SystemExit(f"Error: --udrl-hp: {' '.join(str(err).split())}") from None
    expect = {"episodes": episodes, "eval_seed": STUDY_EVAL_SEED,
              "settings": {k: v for k, v in {"algo": "udrl", **asdict(cfg)}.items() if k != "out"}}
    kept = _kept_row(out, folder.name, expect)
    if kept is not None:
        print(f"udrl {estimator} seed {seed}: finished before, read back from {_row_path(out, folder.name)}",
              flush=True)
        return kept
    metrics_file, config_file = folder / "metrics.json", folder / "train_config.json"
    done = False
    if metrics_file.is_file() and config_file.is_file():
        differ = _same(read_json(config_file), {"algo": "udrl", **asdict(cfg)}, ("steps", "out"))
        if differ:
            raise SystemExit(f"Error: {folder} holds a UDRL run with other settings ({', '.join(differ)} differ); "
                             "choose another --work.")
        metrics = read_json(metrics_file)
        done = int(metrics["steps"]) >= steps and (estimator == "nn" or (folder / "controller.json").is_file())
    if done:
        print(f"udrl {estimator} seed {seed}: finished before, read back from {folder}", flush=True)
    else:
        resume = (folder / "checkpoint" / "state.json").is_file()
        print(f"udrl {estimator} seed {seed}: {'resuming' if resume else 'training'} in {folder}", flush=True)
        metrics = train_udrl(cfg, resume=resume, on_iteration=lambda r: print(
            f"  step {r['step']}: exploration return {r['explore_return']:.1f}, evaluation return "
            f"{r['eval_return'] if r['eval_return'] is None else round(r['eval_return'], 1)}", flush=True))
    train_eval = metrics["eval"]
    if estimator == "nn":
        features, actions = task_signals(task)
        n_in, h, n_out = len(features) + 2, cfg.hidden, len(actions)
        size = {"parameters": n_in * h + h + h * h + h + h * n_out + n_out}
        returns, played, same = list(train_eval["returns"]), "train_udrl", None
    else:
        ctrl, result = play_udrl(folder, episodes)
        _, replay = play_udrl(folder, len(train_eval["returns"]), seed=TRAIN_EVAL_SEED_OFFSET + seed * 1000)
        # train_udrl sums an episode's rewards with numpy's pairwise sum, the rollout engine one by one: the same
        # episodes can differ in the last bits of their returns (not on CartPole, whose rewards are whole numbers)
        gap = float(np.max(np.abs(np.subtract(replay.returns, train_eval["returns"]))))
        same = bool(np.allclose(replay.returns, train_eval["returns"], rtol=1e-9, atol=1e-9))
        size = {**ctrl.size(), "nodes": sum(len(t.feature) for t in ctrl.program.trees)}
        returns, played = [float(r) for r in result.returns], "controller"
    history = metrics["history"]
    row = {
        "method": "udrl", "estimator": estimator, "seed": seed, "env_steps": int(metrics["steps"]),
        "episodes_trained": int(metrics["episodes"]), "iterations": len(history) - 1,
        "wall_seconds": float(sum(h.get("seconds") or 0.0 for h in history)),
        "returns": returns, "played": played, "size": size, "command": metrics["command"],
        "train_eval": {"mean_return": train_eval["mean_return"], "returns": train_eval["returns"]},
        "same_as_train_eval": same, "train_eval_gap": None if estimator == "nn" else gap,
        "curve": _curve(history),
        "explore_curve": [[int(h["step"]), float(h["explore_return"])] for h in history],
        "config": read_json(config_file),
    }
    _keep_row(out, folder.name, expect, row)
    ret = np.asarray(returns)
    print(f"udrl {estimator} seed {seed}: {ret.mean():.1f} +- {ret.std():.1f} over {len(ret)} episodes "
          f"({played}), {row['env_steps']} steps, {row['wall_seconds']:.0f} s", flush=True)
    return row


def _acting_parameters(model: Any) -> int:
    """Parameters of the network that picks the actions (not PPO's value head nor DQN's target network)."""
    skip = ("value_net", "q_net_target", "critic", "vf_")
    return int(sum(p.numel() for name, p in model.policy.named_parameters() if not any(s in name for s in skip)))


def baseline_run(algo: str, task: str, steps: int, seed: int, work: Path, episodes: int, hp: dict[str, Any],
                 every: int, out: Path | None = None) -> dict[str, Any]:
    """One SB3 run (trained, resumed or read back), its saved model played for ``episodes`` episodes.

    With ``out``, the finished run is kept as ``out/runs/NAME.json`` and read back from there (see :func:`udrl_run`).

    Returns
    -------
    dict
        The run: ``method`` (the algorithm), ``seed``, ``env_steps``, ``wall_seconds`` (training with its
        checkpoint evaluations), ``returns`` (every episode, seeds ``STUDY_EVAL_SEED`` on), ``model_step`` (the saved
        model is the best evaluated checkpoint), ``size`` (the acting network's parameters), ``curve``
        (``[step, evaluation return]``) and ``config``.
    """
    from envs.loading import TEACHER_FILE, load_teacher
    from envs.training import TrainConfig, train_teacher
    from interp_rl.errors import InterpRLError
    from interp_rl.rollouts import evaluate

    folder = work / f"{task}-{algo}-seed{seed}"
    cfg = TrainConfig(algo, task, steps, str(folder), seed=seed, checkpoint_every=every, hyperparams=hp,
                      eval_episodes=5)
    config_file = folder / "train_config.json"
    expect = {"episodes": episodes, "eval_seed": STUDY_EVAL_SEED, "settings": {
        "algo": algo, "task": task, "steps": steps, "seed": seed, "checkpoint_every": every, "eval_episodes": 5,
        "hyperparams": cfg.resolved_hyperparams()}}
    kept = _kept_row(out, folder.name, expect)
    if kept is not None:
        print(f"{algo} seed {seed}: finished before, read back from {_row_path(out, folder.name)}", flush=True)
        return kept
    finished = (folder / TEACHER_FILE).is_file() and not (folder / "checkpoint" / "state.json").is_file()
    if config_file.is_file():
        now = {"algo": algo, "seed": seed, "checkpoint_every": every, "eval_episodes": 5,
               "hyperparams": cfg.resolved_hyperparams()}
        differ = _same({k: v for k, v in read_json(config_file).items() if k in now}, now, ())
        if differ:
            raise SystemExit(f"Error: {folder} holds a {algo} run with other settings ({', '.join(differ)} differ); "
                             "choose another --work.")
    if finished:
        meta = read_json(folder / TEACHER_FILE)
        if int(meta["steps"]) < steps:
            raise SystemExit(f"Error: {folder} holds a finished {algo} run of {meta['steps']} steps, fewer than "
                             f"--steps {steps}; choose another --work.")
        print(f"{algo} seed {seed}: finished before, read back from {folder}", flush=True)
    else:
        print(f"{algo} seed {seed}: training in {folder}", flush=True)
        try:
            meta = train_teacher(cfg, resume=True, progress_bar=False, on_checkpoint=lambda r: print(
                f"  step {r['step']}: evaluation return {r['eval_return']}", flush=True))
        except InterpRLError as err:
            raise SystemExit(f"Error: {' '.join(str(err).split())}") from None
    teacher = load_teacher(folder)
    assert teacher.env_fn is not None
    result = evaluate(teacher, teacher.env_fn, episodes, seed=STUDY_EVAL_SEED, task=teacher.task)
    history = meta["history"]
    row = {
        "method": algo, "estimator": "", "seed": seed, "env_steps": int(meta["steps"]),
        "wall_seconds": float(history[-1].get("seconds") or 0.0) if history else 0.0,
        "returns": [float(r) for r in result.returns], "played": "model", "model_step": meta["model_step"],
        "size": {"parameters": _acting_parameters(teacher.model)},
        "curve": _curve(history), "config": read_json(config_file),
    }
    _keep_row(out, folder.name, expect, row)
    print(f"{algo} seed {seed}: {result.mean_return:.1f} +- {result.std_return:.1f} over {episodes} episodes, "
          f"{row['env_steps']} steps, {row['wall_seconds']:.0f} s", flush=True)
    return row


def _command(task: str, steps: int, seeds: list[int], estimators: list[str], baselines: list[str], episodes: int,
             udrl_hp: list[str], baseline_hp: list[str], every: int) -> str:
    parts = [f"python -m benchmarks.studies.udrl run --task {task} --steps {steps} --seeds "
             f"{' '.join(map(str, seeds))} --estimators {' '.join(estimators)} --baselines {' '.join(baselines)} "
             f"--episodes {episodes}"]
    parts += [f"--udrl-hp {item}" for item in udrl_hp]
    parts += [f"--baseline-hp {item}" for item in baseline_hp]
    if every:
        parts.append(f"--eval-every {every}")
    return " ".join(parts)


def run(task: str, steps: int, seeds: list[int], estimators: list[str], baselines: list[str], work: Path,
        episodes: int, udrl_hp: list[str] | None = None, baseline_hp: list[str] | None = None,
        every: int = 0, out: Path | None = None) -> dict[str, Any]:
    """Every UDRL estimator and every baseline on ``task``, one run per seed, each played for ``episodes`` episodes.

    With ``out``, every finished run is kept in ``out/runs`` (read back by a later call, even without ``work``), and
    the record ``udrl_TASK.json`` and the report are rewritten after each run: a study cut short keeps what it
    finished, marked as partial.

    Returns
    -------
    dict
        The record: ``task``, ``steps``, ``seeds``, ``episodes``, ``eval_seed``, ``estimators``, ``baselines``,
        ``udrl_hp``, ``baseline_hp``, ``eval_every``, ``notes`` (what was skipped), ``settings`` (each method's
        resolved settings), ``runs``, ``planned_runs`` (how many runs the study asks for) and ``commands``.
    """
    from envs import get_task

    udrl_items, base_items = list(udrl_hp or []), list(baseline_hp or [])
    u_hp, b_hp = _hp(udrl_items, "--udrl-hp"), _hp(base_items, "--baseline-hp")
    bad = sorted(set(u_hp) & set(_UDRL_OWN))
    if bad:
        raise SystemExit(f"Error: --udrl-hp {bad[0]} is set by the study itself (--task, --steps, --seeds, "
                         "--estimators, --work).")
    discrete = get_task(task).discrete
    notes: list[str] = []
    chosen = []
    for algo in baselines:
        if algo == "dqn" and not discrete:
            print(f"note: {task} has continuous actions; DQN is for discrete tasks only, skipped", flush=True)
            notes.append(f"DQN skipped: {task} has continuous actions (DQN is for discrete tasks only).")
        else:
            chosen.append(algo)
    jobs = [(lambda e=e, s=s: udrl_run(task, steps, s, e, work, episodes, u_hp, out))
            for e in estimators for s in seeds]
    jobs += [(lambda a=a, s=s: baseline_run(a, task, steps, s, work, episodes, b_hp, every, out))
             for a in chosen for s in seeds]
    runs: list[dict[str, Any]] = []
    record: dict[str, Any] = {}
    for job in jobs:
        runs.append(job())
        record = {"task": task, "steps": steps, "seeds": seeds, "episodes": episodes, "eval_seed": STUDY_EVAL_SEED,
                  "estimators": estimators, "baselines": baselines, "udrl_hp": udrl_items, "baseline_hp": base_items,
                  "eval_every": every, "notes": notes, "settings": _settings(runs),
                  "runs": [{k: v for k, v in r.items() if k != "config"} for r in runs], "planned_runs": len(jobs),
                  "commands": [_command(task, steps, seeds, estimators, baselines, episodes, udrl_items, base_items,
                                        every)]}
        if out is not None:
            write_json(Path(out) / f"udrl_{task}.json", record)
            report(out)
    return record


def read_forest(row: dict[str, Any], task: str, work: Path, leaves: int, episodes: int,
                out: Path | None = None) -> dict[str, Any] | None:
    """One small tree distilled from the UDRL forest of ``row`` (a run of the record), played for ``episodes``
    episodes; read back from ``out`` when it was made before with the same settings, None when the forest's
    folder is not in ``work``.

    Returns
    -------
    dict or None
        The tree's row: ``estimator`` and ``seed`` (the forest's), ``returns`` (the forest's episodes, seeds
        ``STUDY_EVAL_SEED`` on),
        ``size`` (``leaves``, ``depth``, ``parameters``), ``fidelity`` (``interp-rl distill``'s, on
        the forest's states and on its own: ``r2``, and on a discrete task ``agreement``, the share of states on which
        the tree plays the forest's class),
        ``distill_seconds``, ``rules`` (``rules.txt``) and ``settings``.
    """
    import shutil

    from distill.job import run_job
    from distill.methods import METHODS
    from envs.controllers import ControllerTeacher
    from interp_rl.program import load_controller

    name = f"{task}-udrl-{row['estimator']}-seed{row['seed']}"
    settings = {**READ, "max_leaves": leaves, "seed": int(row["seed"])}
    expect = {"episodes": episodes, "eval_seed": STUDY_EVAL_SEED, "settings": settings,
              "forest": {"parameters": row["size"]["parameters"], "command": row["command"]}}
    kept = _kept_row(out, f"{name}-tree", expect)
    if kept is not None:
        print(f"tree from {name}: made before, read back from {_row_path(out, name + '-tree')}", flush=True)
        return kept
    forest_dir = work / name
    if not (forest_dir / "controller.json").is_file():
        print(f"tree from {name}: skipped, no forest in {forest_dir}", flush=True)
        return None
    forest = load_controller(forest_dir)
    if forest.size()["parameters"] != row["size"]["parameters"]:
        raise SystemExit(f"Error: {forest_dir} holds another forest than the record's ({forest.size()['parameters']:,}"
                         f" parameters, not {row['size']['parameters']:,}); choose another --work.")
    teacher = ControllerTeacher(forest, source=str(forest_dir))
    method = METHODS["tree"]
    resolved = method.resolve(settings, owner="python -m benchmarks.studies.udrl read")
    made = work / f"{name}-tree"
    shutil.rmtree(made, ignore_errors=True)  # a half-made tree of a run cut short: made again from the start
    print(f"tree from {name}: distilling (at most {leaves} leaves) in {made}", flush=True)
    metrics = run_job(method, teacher, resolved, made, features=forest.features, actions=forest.actions,
                      provenance={"source": str(forest_dir), "algo": forest.kind, "task": task, "variant": {}})
    ctrl, result = play_udrl(made, episodes)
    keep = None if out is None else Path(out) / "trees" / name
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        for file in ("controller.json", "rules.txt", "tree.svg"):
            if (made / file).is_file():
                shutil.copyfile(made / file, keep / file)
    size = ctrl.size()
    tree = {
        "estimator": row["estimator"], "seed": int(row["seed"]), "returns": [float(r) for r in result.returns],
        "size": {"leaves": int(size["leaves"]), "depth": int(size["depth"]), "parameters": int(size["parameters"])},
        "fidelity": {"forest_states": metrics["fidelity_teacher_states"],
                     "tree_states": metrics["fidelity_student_states"]},
        "distill_seconds": float(metrics["distill_seconds"]), "rules": (made / "rules.txt").read_text(),
        "settings": settings,
    }
    _keep_row(out, f"{name}-tree", expect, tree)
    ret = np.asarray(tree["returns"])
    print(f"tree from {name}: {ret.mean():.1f} +- {ret.std():.1f} over {len(ret)} episodes, "
          f"{size['leaves']} leaves", flush=True)
    return tree


def read(out: Path, work: Path, leaves: int, episodes: int, tasks: list[str] | None = None) -> list[dict[str, Any]]:
    """A small tree from every UDRL forest of the records in ``out`` (or of ``tasks``) whose folder is in ``work``
    (:func:`read_forest`); the report is rewritten after each.

    Returns
    -------
    list
        The trees' rows, each with its ``task``.
    """
    records = [read_json(p) for p in sorted(Path(out).glob("udrl_*.json"))]
    known = [d["task"] for d in records]
    missing = [t for t in tasks or [] if t not in known]
    if missing:
        raise SystemExit(f"Error: no record of {missing[0]} in {out} (records: {', '.join(known) or 'none'}); "
                         "run the study on it first.")
    trees = []
    for d in records:
        if tasks and d["task"] not in tasks:
            continue
        for r in d["runs"]:
            if r["method"] == "udrl" and r["played"] == "controller":
                tree = read_forest(r, d["task"], work, leaves, episodes if episodes else d["episodes"], out)
                if tree is not None:
                    trees.append({"task": d["task"], **tree})
                    report(out)
    return trees


def _trees(out: Path, task: str) -> list[dict[str, Any]]:
    """The trees read from ``task``'s forests (kept in ``out/runs``), by estimator and seed."""
    rows = [read_json(p)["row"] for p in sorted((Path(out) / "runs").glob(f"{task}-udrl-*-tree.json"))]
    return sorted(rows, key=lambda r: (r["estimator"], r["seed"]))


def _settings(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each method's resolved settings, from the first of its runs (``udrl-ESTIMATOR``, or the SB3 algorithm)."""
    settings: dict[str, Any] = {}
    for r in runs:
        key = f"udrl-{r['estimator']}" if r["method"] == "udrl" else r["method"]
        cfg = r["config"]
        if r["method"] == "udrl":
            settings.setdefault(key, {k: v for k, v in cfg.items() if k not in ("algo", *_UDRL_OWN)})
        else:
            settings.setdefault(key, {"hyperparams": cfg.get("hyperparams"),
                                      "checkpoint_every": cfg.get("checkpoint_every"),
                                      "eval_episodes": cfg.get("eval_episodes"), "keep": cfg.get("keep")})
    return settings


def _label(r: dict[str, Any]) -> str:
    return f"UDRL {r['estimator']}" if r["method"] == "udrl" else r["method"].upper()


def _groups(record: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in record["runs"]:
        groups.setdefault(_label(r), []).append(r)
    return groups


def _curves_png(record: dict[str, Any]) -> bytes:
    from interp_rl.document import png, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, (label, rows) in enumerate(_groups(record).items()):
        color = f"C{i}"
        curves = [np.asarray(r["curve"], dtype=np.float64).reshape(-1, 2) for r in rows]
        curves = [c for c in curves if len(c)]
        if not curves:
            continue
        for c in curves:
            ax.plot(c[:, 0], c[:, 1], color=color, lw=0.6, alpha=0.3)
        grid = np.unique(np.concatenate([c[:, 0] for c in curves]))
        mean = np.mean([np.interp(grid, c[:, 0], c[:, 1], left=np.nan, right=np.nan) for c in curves], axis=0)
        ax.plot(grid, mean, color=color, lw=1.6, marker="." if len(grid) < 3 else None,
                label=f"{label} (mean of {len(curves)} seed{'s' if len(curves) > 1 else ''})")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("evaluation return")
    ax.set_title(f"UDRL against SB3 baselines, {record['task']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png(fig)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def _size(r: dict[str, Any]) -> str:
    s = r["size"]
    if "trees" in s:
        trees = f"{s['trees']} tree{'s' if s['trees'] != 1 else ''}"
        return f"{trees}, {s['nodes']:,} nodes ({s['leaves']:,} leaves), {s['parameters']:,} parameters"
    return f"{s['parameters']:,} parameters"


def _tree_section(doc: Any, d: dict[str, Any], trees: list[dict[str, Any]]) -> None:
    """The trees read from the forests of record ``d``: their returns next to the forests', a tree's rules, and the
    return against size of every method."""
    forests = {(r["estimator"], r["seed"]): r for r in d["runs"] if r["method"] == "udrl"}
    st = trees[0]["settings"]
    doc.h(3, "A small tree read from each forest")
    doc.p(f"One decision tree of at most {st['max_leaves']} constant leaves distilled from each forest, with the "
          f"forest as its teacher: {st['iterations']} DAgger rounds of {st['steps']:,} steps after the forest's own "
          "rollouts, the best round on 5 held-out episodes kept, no fine-tuning on the return (`interp-rl distill "
          f"tree --teacher FOREST --max-leaves {st['max_leaves']} --leaf-model constant --iterations "
          f"{st['iterations']} --steps {st['steps']} --rl-steps 0 --noise-levels '' --restarts 1`). It reads the "
          "same inputs (the observation and the command) and plays the forest's "
          f"{len(trees[0]['returns'])} episodes at the forest's command. Fidelity is `interp-rl distill`'s, on "
          "states the forest visits.")
    discrete = trees[0]["fidelity"]["forest_states"].get("agreement") is not None
    rows = []
    for t in trees:
        f = forests.get((t["estimator"], t["seed"]))
        if f is None:
            continue
        fr, tr = np.asarray(f["returns"]), np.asarray(t["returns"])
        fid = t["fidelity"]["forest_states"]
        rows.append([t["estimator"], str(t["seed"]), f"{fr.mean():.1f} (worst {fr.min():.1f})",
                     f"{f['size']['parameters']:,}", f"{tr.mean():.1f} ± {tr.std():.1f}", f"{tr.min():.1f}",
                     f"{t['size']['leaves']} leaves, depth {t['size']['depth']}, {t['size']['parameters']} parameters",
                     f"{fid['agreement']:.1%}" if discrete else f"{fid['r2']:.3f}"])
    doc.table(["forest", "seed", "forest return", "forest parameters", "tree return", "tree worst episode",
               "tree size", "same class as the forest" if discrete else "fidelity R²"], rows)
    paired = [t for t in trees if (t["estimator"], t["seed"]) in forests]
    if paired:
        tree_mean = float(np.mean(np.concatenate([t["returns"] for t in paired])))
        forest_mean = float(np.mean(np.concatenate([forests[(t["estimator"], t["seed"])]["returns"]
                                                    for t in paired])))
        doc.p(f"Pooled over these {len(paired)} runs the trees return {tree_mean:.1f} against their forests' "
              f"{forest_mean:.1f}, with {np.mean([t['size']['parameters'] for t in paired]):,.0f} parameters "
              "against "
              f"{np.mean([forests[(t['estimator'], t['seed'])]['size']['parameters'] for t in paired]):,.0f} "
              "(means).")
        shares = [t["fidelity"]["forest_states"].get("agreement") for t in paired]
        if discrete and all(x is not None for x in shares):
            doc.p(f"The trees play the forest's class on {min(shares):.0%} to {max(shares):.0%} of the states the "
                  "forest visits. Each is a controller learnt from its forest, not a faithful account of it: where "
                  "that share is low, its rules say how the tree acts, not why the forest does.")
    best = max(trees, key=lambda t: float(np.mean(t["returns"])))
    doc.p(f"The tree read from the {_ENSEMBLE.get(best['estimator'], best['estimator'])} of seed {best['seed']} "
          f"(the best of them, {np.mean(best['returns']):.1f} over its {len(best['returns'])} episodes):")
    doc.pre(best["rules"].rstrip("\n"))
    doc.image(f"size-{d['task']}.png", _size_png(d, trees), f"Return against size on {d['task']}")


def _size_png(d: dict[str, Any], trees: list[dict[str, Any]]) -> bytes:
    """Every method's return (the mean over its seeds' episodes, a bar from its worst seed's mean to its best)
    against its size (parameters, log scale)."""
    from interp_rl.document import png, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    groups = list(_groups(d).items()) + [("UDRL forest, read as one tree", trees)]
    for i, (label, rows) in enumerate(groups):
        means = [float(np.mean(r["returns"])) for r in rows]
        size = float(np.mean([r["size"]["parameters"] for r in rows]))
        pooled = float(np.mean(np.concatenate([np.asarray(r["returns"]) for r in rows])))
        ax.errorbar([size], [pooled], yerr=[[pooled - min(means)], [max(means) - pooled]], fmt="o", color=f"C{i}",
                    capsize=3, label=f"{label} ({len(rows)} seed{'s' if len(rows) != 1 else ''})")
    ax.set_xscale("log")
    ax.set_xlabel("parameters (log scale)")
    ax.set_ylabel(f"return, {d['episodes']} episodes")
    ax.set_title(f"Return against size, {d['task']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png(fig)


def report(out: Path) -> Path:
    """Rebuild ``report.md`` from the records (``udrl_*.json``) in ``out``, a section per task.

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
    records = [read_json(p) for p in sorted(out.glob("udrl_*.json"))]
    trees = {d["task"]: _trees(out, d["task"]) for d in records}
    reads = [f"python -m benchmarks.studies.udrl read --task {task} --leaves {rows[0]['settings']['max_leaves']}"
             for task, rows in trees.items() if rows]
    doc = new_report("Upside-down RL with tree ensembles against DQN and PPO", "udrl",
                     [c for d in records for c in d["commands"]] + reads)
    doc.p(PAPER)
    for d in records:
        doc.h(2, d["task"])
        planned = d.get("planned_runs", len(d["runs"]))
        if len(d["runs"]) < planned:
            doc.p(f"**Partial:** runs finished so far: {len(d['runs'])} of the {planned} this study asks for. The "
                  "rest follow when its command is run again (finished runs are read back from `runs/`).")
        u = next((v for k, v in d["settings"].items() if k.startswith("udrl-")), None)
        text = (f"Every method trains for {d['steps']:,} environment steps per seed (seeds "
                f"{', '.join(map(str, d['seeds']))}; episodes that run past the budget finish, so a run may end a "
                f"little later; evaluation episodes are not counted). ")
        if u is not None:
            text += (f"UDRL (`envs.udrl.train_udrl`): {u['warmup_episodes']} random warm-up episodes, then "
                     f"iterations of {u['episodes_per_iter']} exploratory episodes after each refit on up to "
                     f"{u['fit_samples']:,} hindsight rows of the {u['buffer_episodes']} best episodes, "
                     f"{u['n_trees']} trees with at least {u['min_samples_leaf']} rows a leaf; its curve is the "
                     f"greedy return of {u['eval_episodes']} episode{'s' if u['eval_episodes'] != 1 else ''} "
                     "after each iteration at the top-of-buffer command. ")
        if any(r["method"] != "udrl" for r in d["runs"]):
            text += ("The SB3 baselines (`envs.training.train_teacher`) use the shipped per-task hyperparameters; "
                     "their curve is the deterministic return of 5 episodes at every checkpoint, and the saved model "
                     "is the best evaluated checkpoint (UDRL's controller is its last fit). ")
        text += (f"Each final agent then plays {d['episodes']} fresh greedy episodes (seeds {d['eval_seed']} on): "
                 "the UDRL forest is its saved `controller.json` at the command saved with it (the mean length and "
                 "mean return of the best episodes of the buffer), the command appended to each observation and "
                 "updated by each reward, played by `interp_rl.rollouts.evaluate`.")
        doc.p(text)
        if d["udrl_hp"] or d["baseline_hp"] or d["eval_every"]:
            doc.p("Settings changed from the defaults: "
                  + ", ".join([f"UDRL {x}" for x in d["udrl_hp"]] + [f"baselines {x}" for x in d["baseline_hp"]]
                              + ([f"baseline checkpoints every {d['eval_every']:,} steps"] if d["eval_every"] else []))
                  + ".")
        rows = []
        for group in _groups(d).values():
            method = "UDRL" if group[0]["method"] == "udrl" else group[0]["method"].upper()
            for r in group:
                ret = np.asarray(r["returns"])
                rows.append([method, r["estimator"] or "network", str(r["seed"]), f"{ret.mean():.1f} ± {ret.std():.1f}",
                             f"{ret.min():.1f}", f"{r['env_steps']:,}", _duration(r["wall_seconds"]), _size(r)])
            pooled = np.concatenate([np.asarray(r["returns"]) for r in group])
            rows.append([method, group[0]["estimator"] or "network", "all",
                         f"{pooled.mean():.1f} ± {pooled.std():.1f}", f"{pooled.min():.1f}",
                         f"{np.mean([r['env_steps'] for r in group]):,.0f} each",
                         f"{_duration(float(np.mean([r['wall_seconds'] for r in group])))} each", ""])
        doc.table(["method", "estimator", "seed", f"return, {d['episodes']} episodes", "worst episode",
                   "environment steps", "wall time", "size"], rows)
        udrl = [r for r in d["runs"] if r["method"] == "udrl"]
        by_controller = [r for r in udrl if r["played"] == "controller"]
        if by_controller:
            same = sum(1 for r in by_controller if r["same_as_train_eval"])
            gap = max(r["train_eval_gap"] for r in by_controller)
            doc.p(f"Check of the replay: the saved controller played this way on `train_udrl`'s own final evaluation "
                  f"seeds gives the same returns as `train_udrl` in {same} of {len(by_controller)} runs (to 1e-9 "
                  f"relative; largest difference {gap:.3g}: `train_udrl` sums an episode's rewards with numpy's "
                  "pairwise sum, the rollout engine one reward at a time).")
        if len(by_controller) < len(udrl):
            doc.p("The `nn` behaviour function writes no controller: its returns are `train_udrl`'s own final "
                  "evaluation (its episodes, on seeds 1,000,000 + 1000 × seed on), not the study's seeds.")
        if udrl:
            doc.p("Wall time: UDRL's counts its iterations with their evaluations (not the random warm-up); SB3's its "
                  "training with the checkpoint evaluations. Size: UDRL's forest (every tree's nodes; parameters are "
                  "the thresholds and leaf values); SB3's acting network (PPO's policy head without the value head, "
                  "DQN's Q-network without its target copy).")
        for note in d["notes"]:
            doc.p(note)
        doc.image(f"curves-{d['task']}.png", _curves_png(d), f"Learning curves on {d['task']}")
        if trees[d["task"]]:
            _tree_section(doc, d, trees[d["task"]])
    return write_report(doc, out)


def main(argv: list[str] | None = None) -> None:
    """The command line: ``run`` (train or read back, play, then report) or ``report``.

    Parameters
    ----------
    argv
        The arguments (None: the command line's).
    """
    from envs.udrl import ESTIMATORS

    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.udrl",
                                     description=(__doc__ or "").splitlines()[0])
    parts = parser.add_subparsers(dest="part", required=True)
    r = parts.add_parser("run")
    r.add_argument("--task", default="CartPole-v1")
    r.add_argument("--steps", type=int, default=100_000)
    r.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    r.add_argument("--estimators", nargs="+", choices=ESTIMATORS, default=["forest", "extra-trees"])
    r.add_argument("--baselines", nargs="*", choices=("dqn", "ppo"), default=["dqn", "ppo"])
    r.add_argument("--work", type=Path, default=Path(WORK), help="where the runs (and their checkpoints) go")
    r.add_argument("--episodes", type=int, default=20, help="fresh episodes each final agent plays")
    r.add_argument("--udrl-hp", action="append", default=[], metavar="KEY=VALUE",
                   help="a field of envs.udrl.UDRLConfig (repeat the option for several)")
    r.add_argument("--baseline-hp", action="append", default=[], metavar="KEY=VALUE",
                   help="an SB3 hyperparameter of every baseline, over the shipped per-task ones")
    r.add_argument("--eval-every", type=int, default=0,
                   help="steps between the baselines' checkpoint evaluations (0: train_teacher's, steps/10)")
    add_out(r, OUT)
    rd = parts.add_parser("read", help="distil one small tree from every UDRL forest whose folder is in --work")
    rd.add_argument("--task", dest="tasks", action="append", default=None,
                    help="only this task's forests (repeat for several; default: every record's)")
    rd.add_argument("--work", type=Path, default=Path(WORK), help="where the runs are (run's --work)")
    rd.add_argument("--leaves", type=int, default=8, help="the tree's leaf limit")
    rd.add_argument("--episodes", type=int, default=0, help="fresh episodes the tree plays (0: the forest's)")
    add_out(rd, OUT)
    add_out(parts.add_parser("report"), OUT)
    args = parse(parser, argv)
    if args.part == "read":
        read(args.out, args.work, args.leaves, args.episodes, args.tasks)
    elif args.part == "run":
        # run rewrites the record and the report after every run (there is always at least one estimator's)
        run(args.task, args.steps, args.seeds, args.estimators, args.baselines, args.work, args.episodes,
            args.udrl_hp, args.baseline_hp, args.eval_every, args.out)
    else:
        report(args.out)


if __name__ == "__main__":
    main()
