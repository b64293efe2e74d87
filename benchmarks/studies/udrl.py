"""Upside-down RL with tree ensembles against SB3 DQN and PPO at the same environment steps.

Run from the repository's root::

    python -m benchmarks.studies.udrl run [--task CartPole-v1] [--steps 100000] [--seeds 0 1 2]
        [--estimators forest extra-trees] [--baselines dqn ppo] [--work udrl-runs] [--episodes 20]
        [--udrl-hp KEY=VALUE ...] [--baseline-hp KEY=VALUE ...] [--eval-every STEPS]
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
``--out``'s ``runs/`` and read back from there, so a study cut short resumes without its ``--work``. ``report`` rebuilds
``report.md`` from the records alone.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.studies._common import add_out, new_report, parse, read_json, write_json, write_report

__all__ = ["PAPER", "baseline_run", "main", "play_udrl", "report", "run", "udrl_run"]

OUT = "benchmarks/results/udrl"
WORK = "udrl-runs"
EVAL_SEED = 1000
#: The paper's setting, quoted in every report for context (kept here so the report rebuilds identically).
PAPER = ("Cardenas-Cartagena, Falzari, Zullich and Sabatelli (ICAART 2025) compare random forests, extra trees and a "
         "network as UDRL's behaviour function on CartPole-v0, Acrobot-v1 and LunarLander-v2 for 500 iterations of "
         "15 episodes each. The stored copies of the paper we could read stop before its results; the authors' code "
         "comments give one random-forest run at -79.0 ± 47.0 on Acrobot-v1 and -92.0 ± 81.5 on LunarLander-v2 "
         "(100 test episodes each), which we quote for scale only.")
#: UDRLConfig fields the study sets itself (not through --udrl-hp).
_UDRL_OWN = ("task", "steps", "out", "seed", "estimator")


def play_udrl(folder: Path, episodes: int, seed: int = EVAL_SEED) -> tuple[Any, Any]:
    """Play the saved UDRL controller in ``folder`` greedily at the command it was saved with.

    Returns
    -------
    tuple
        The controller and the :class:`~interp_rl.rollouts.EvalResult` (episode ``i`` reset with ``seed + i``).
    """
    from envs import env_factory
    from envs.udrl import command_env_factory
    from interp_rl.program import load_controller
    from interp_rl.rollouts import evaluate

    ctrl = load_controller(folder)
    env_fn = command_env_factory(env_factory(ctrl.task), ctrl.metadata["command"])
    return ctrl, evaluate(ctrl, env_fn, episodes, seed=seed, task=ctrl.task)


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
        (``controller``: the saved controller at its command, seeds ``EVAL_SEED`` on; ``train_udrl``: the
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
    expect = {"episodes": episodes, "eval_seed": EVAL_SEED,
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
        _, replay = play_udrl(folder, len(train_eval["returns"]), seed=1_000_000 + seed * 1000)
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
        checkpoint evaluations), ``returns`` (every episode, seeds ``EVAL_SEED`` on), ``model_step`` (the saved
        model is the best evaluated checkpoint), ``size`` (the acting network's parameters), ``curve``
        (``[step, evaluation return]``) and ``config``.
    """
    from envs.teachers import TEACHER_FILE, load_teacher
    from envs.training import TrainConfig, train_teacher
    from interp_rl.errors import InterpRLError
    from interp_rl.rollouts import evaluate

    folder = work / f"{task}-{algo}-seed{seed}"
    cfg = TrainConfig(algo, task, steps, str(folder), seed=seed, checkpoint_every=every, hyperparams=hp,
                      eval_episodes=5)
    config_file = folder / "train_config.json"
    expect = {"episodes": episodes, "eval_seed": EVAL_SEED, "settings": {
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
    result = evaluate(teacher, teacher.env_fn, episodes, seed=EVAL_SEED, task=teacher.task)
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
        record = {"task": task, "steps": steps, "seeds": seeds, "episodes": episodes, "eval_seed": EVAL_SEED,
                  "estimators": estimators, "baselines": baselines, "udrl_hp": udrl_items, "baseline_hp": base_items,
                  "eval_every": every, "notes": notes, "settings": _settings(runs),
                  "runs": [{k: v for k, v in r.items() if k != "config"} for r in runs], "planned_runs": len(jobs),
                  "commands": [_command(task, steps, seeds, estimators, baselines, episodes, udrl_items, base_items,
                                        every)]}
        if out is not None:
            write_json(Path(out) / f"udrl_{task}.json", record)
            report(out)
    return record


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
    doc = new_report("Upside-down RL with tree ensembles against DQN and PPO", "udrl",
                     [c for d in records for c in d["commands"]])
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
    add_out(parts.add_parser("report"), OUT)
    args = parse(parser, argv)
    if args.part == "run":
        # run rewrites the record and the report after every run (there is always at least one estimator's)
        run(args.task, args.steps, args.seeds, args.estimators, args.baselines, args.work, args.episodes,
            args.udrl_hp, args.baseline_hp, args.eval_every, args.out)
    else:
        report(args.out)


if __name__ == "__main__":
    main()
