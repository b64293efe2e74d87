"""``interp-rl train`` and ``interp-rl evaluate``: teachers trained here, and any policy's returns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from interp_rl.cli._app import (
    _controller_env,
    _fmt,
    _load_target,
    _versions,
    app,
    cli_errors,
    err,
    out,
)
from interp_rl.errors import InterpRLError


@app.command()
@cli_errors(resumable="flag")
def train(
    algo: Annotated[str, typer.Option(
        help="sac, td3, ddpg, tqc, ppo, a2c, trpo, ars, dqn (discrete tasks) or udrl (upside-down RL).")],
    env: Annotated[str, typer.Option(help="Task id, e.g. InvertedPendulum-v5.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")],
    steps: Annotated[int, typer.Option(help="Total environment steps.")] = 20_000,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    checkpoint_every: Annotated[int, typer.Option(help="Steps between checkpoints (0: steps/10).")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run in --out.")] = False,
    hp: Annotated[list[str] | None, typer.Option(
        "--hp", help="Override a hyperparameter, KEY=VALUE (YAML value); repeatable.")] = None,
    eval_episodes: Annotated[int, typer.Option(
        help="Deterministic evaluation episodes at every checkpoint (0: none).")] = 5,
    keep: Annotated[str, typer.Option(help="Save the 'best' evaluated policy or the 'last' one.")] = "best",
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    policy: Annotated[str | None, typer.Option(
        help="'moe': the actor is a mixture of linear experts (SMOSE; sac, ppo, a2c, trpo), written out as "
             "controller.json too [default: the per-task policy].")] = None,
    experts: Annotated[int | None, typer.Option(help="Experts of --policy moe [default: 8].")] = None,
    workers: Annotated[int, typer.Option(
        help="--algo ars --policy KIND: processes (or Ray tasks) the directions are spread over.")] = 1,
    start: Annotated[Path | None, typer.Option(
        help="--algo ars --policy KIND: the controller folder to search from (needed for tree and mixture; "
             "linear starts from zeros without it).")] = None,
    executor: Annotated[str, typer.Option(
        help="--algo ars --policy KIND: 'process' (local processes) or 'ray' (Ray tasks).")] = "process",
    ray_address: Annotated[str | None, typer.Option(
        help="With --executor ray: the address of a running Ray cluster [default: start a local one].")] = None,
    estimator: Annotated[str | None, typer.Option(
        help="--algo udrl: the behaviour function, forest, extra-trees, tree or nn [default: forest].")] = None,
) -> None:
    """Train a teacher with the per-task hyperparameters; checkpoints allow --resume.

    With --algo ars --policy linear|tree|mixture, augmented random search (V2-t) searches a transparent
    controller's own parameters and writes a controller folder. It starts from the task's settings in
    envs/hyperparams/ars.yml (the paper's); --hp sets ARS's n_directions, top_directions, step_size, noise,
    episodes, horizon, normalize, dense, warmup_episodes, alive_bonus_offset. Without --policy, ARS trains
    sb3-contrib's policy.

    --algo udrl trains an upside-down RL agent whose behaviour function (a forest of trees by default) is a
    transparent controller reading the observation and a command (desired return, desired horizon).
    """
    import yaml

    from envs.training import TrainConfig, train_teacher
    from interp_rl.errors import InvalidParameterError

    overrides: dict[str, Any] = {}
    for item in hp or []:
        if "=" not in item:
            raise InvalidParameterError(f"--hp expects KEY=VALUE. Got {item!r} instead.")
        key, value = item.split("=", 1)
        overrides[key] = yaml.safe_load(value)
    if algo.lower() == "udrl":
        if policy is not None or experts is not None:
            raise InvalidParameterError("--policy and --experts are for SB3 algorithms; --algo udrl takes --estimator.")
        _train_udrl(env, out_dir, steps, seed, resume, overrides, estimator or "forest", eval_episodes)
        return
    if estimator is not None:
        raise InvalidParameterError("--estimator chooses the behaviour function of --algo udrl; add --algo udrl.")
    if algo.lower() == "ars" and policy in ARS_KINDS:
        _train_ars_program(policy, env, out_dir, steps=steps, seed=seed, workers=workers, start=start,
                           executor=executor, ray_address=ray_address, resume=resume, settings=overrides,
                           eval_episodes=eval_episodes)
        return
    for name, value, default in (("--workers", workers, 1), ("--start", start, None), ("--executor", executor,
                                 "process"), ("--ray-address", ray_address, None)):
        if value != default:
            raise InvalidParameterError(f"{name} is an option of --algo ars --policy {'|'.join(ARS_KINDS)}.")
    if policy is not None:
        overrides["policy"] = policy
    if experts is not None:
        if overrides.get("policy") != "moe":
            raise InvalidParameterError("--experts sets the experts of --policy moe; add --policy moe.")
        from interp_rl.validation import check_int

        check_int(experts, "--experts", "interp-rl train", high=64)
        overrides["policy_kwargs"] = {**(overrides.get("policy_kwargs") or {}), "n_experts": experts}
    cfg = TrainConfig(algo=algo.lower(), task=env, steps=steps, out=str(out_dir), seed=seed,
                      checkpoint_every=checkpoint_every, hyperparams=overrides,
                      eval_episodes=eval_episodes, keep=keep)
    from interp_rl._progress import Steps

    with Steps(err, terminal=False) as log:  # SB3 draws its own bar on a terminal; a log gets a line a checkpoint

        def checkpoint(row: dict[str, Any]) -> None:
            if not err.is_terminal:
                log.line(f"Step {row['step']} of {steps}: evaluation return {_fmt(row.get('eval_return'))}, "
                         f"training return {_fmt(row.get('recent_return'))}")

        def start(done: int) -> None:
            if not err.is_terminal:
                log.line(f"Training {algo.upper()} on {env} for {steps} steps into {out_dir}"
                         + (f", from step {done}" if done else ""))

        meta = train_teacher(cfg, resume=resume, progress_bar=progress and err.is_terminal, on_checkpoint=checkpoint,
                             on_start=start)
    table = Table(title=f"{meta['algo'].upper()} on {meta['task']}, seed {meta['seed']}")
    for col in ("step", "evaluation return", "training return (recent episodes)"):
        table.add_column(col, justify="right")
    for h in meta["history"]:
        table.add_row(str(h["step"]), _fmt(h.get("eval_return")), _fmt(h.get("recent_return")))
    out.print(table)
    score = meta.get("model_eval_return")
    out.print(f"Saved the {meta['kept']} policy (step {meta['model_step']}"
              + (f", evaluation return {score:.1f}" if score is not None else "")
              + f") to {out_dir}.")
    if meta.get("controller"):
        out.print(f"The mixture actor is a transparent controller too: {out_dir / meta['controller']} "
                  f"(interp-rl viz {out_dir} --text).")




ARS_KINDS = ("linear", "tree", "mixture")


def _train_ars_program(kind: str, task: str, out_dir: Path, *, steps: int, seed: int, workers: int,
                       start: Path | None, executor: str, ray_address: str | None, resume: bool,
                       settings: dict[str, Any], eval_episodes: int) -> None:
    """``train --algo ars --policy KIND``: :func:`distill.ars.run_ars_job` on the task's environment."""

    from distill.ars import ARS, ars_settings, run_ars_job
    from envs import env_factory, task_signals
    from envs.training import default_hyperparams
    from interp_rl.errors import InvalidParameterError
    from interp_rl.program import load_controller

    allowed = ("n_directions", "top_directions", "step_size", "noise", "episodes", "horizon", "normalize", "dense",
               "warmup_episodes", "alive_bonus_offset")
    for key in settings:
        if key not in allowed:
            raise InvalidParameterError(f"--hp {key} is not a setting of --algo ars --policy {kind}; use one of "
                                        f"{', '.join(allowed)}.")
    if start is not None:
        origin: Any = load_controller(start)
        if origin.program.kind != kind:
            raise InvalidParameterError(f"--start holds a {origin.program.kind} controller; --policy is {kind}.")
    else:
        from interp_rl.program import PROGRAMS

        if not PROGRAMS[kind].kind_can("from_scratch"):  # type: ignore[attr-defined] # else --start is needed
            raise InvalidParameterError(f"--policy {kind} searches a {kind} controller's pieces: give --start, a "
                                        f"{kind} controller folder (interp-rl distill makes one).")
        origin = kind
    settings = {**ars_settings(default_hyperparams("ars", task)), **settings}
    ars = ARS(seed=seed, n_workers=workers, executor=executor, ray_address=ray_address, **settings)
    features, actions = task_signals(task)
    env_fn = env_factory(task)
    err.print(f"ARS over a {kind} controller on {task} for {steps} steps into {out_dir} ({workers} "
              f"{'Ray tasks' if executor == 'ray' else 'processes'})")

    def line(row: dict[str, Any]) -> None:
        err.print(f"Iteration {row['iteration']}: {row['env_steps']} steps, mean return {row['return_mean']:.1f}, "
                  f"best {row['return_max']:.1f} ({row['seconds']:.1f} s)", highlight=False)

    metrics = run_ars_job(ars, origin, env_fn, out_dir, steps=steps, task=task, features=features, actions=actions,
                          resume=resume, eval_episodes=max(1, eval_episodes), progress=line)
    out.print(f"{metrics['iterations']} iterations, {metrics['env_steps']} environment steps, "
              f"{metrics['wall_seconds']:.1f} s; held-out return {metrics['eval_return_mean']:.1f} "
              f"+- {metrics['eval_return_std']:.1f} over {metrics['eval_episodes']} episodes"
              + (f"; the directions ran on {metrics['ray_nodes']} Ray node(s)." if "ray_nodes" in metrics else "."))
    out.print(f"Saved the {kind} controller to {out_dir} (interp-rl viz {out_dir} --text).")


def _train_udrl(env: str, out_dir: Path, steps: int, seed: int, resume: bool, overrides: dict[str, Any],
                estimator: str, eval_episodes: int) -> None:
    """``interp-rl train --algo udrl``: settings from --hp KEY=VALUE (fields of :class:`envs.udrl.UDRLConfig`)."""
    from dataclasses import fields

    from envs.udrl import UDRLConfig, train_udrl
    from interp_rl._progress import Steps
    from interp_rl.errors import InvalidParameterError

    known = {f.name for f in fields(UDRLConfig)} - {"task", "steps", "out", "seed", "estimator", "eval_episodes"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise InvalidParameterError(f"--hp {unknown[0]} is not a setting of --algo udrl; its settings: "
                                    f"{', '.join(sorted(known))}.")
    cfg = UDRLConfig(task=env, steps=steps, out=str(out_dir), seed=seed, estimator=estimator,
                     eval_episodes=eval_episodes, **overrides)
    cfg.check()
    with Steps(err, terminal=False) as log:
        log.line(f"Training UDRL ({estimator}) on {env} for {steps} steps into {out_dir}")

        def iteration(row: dict[str, Any]) -> None:
            log.line(f"Step {row['step']} of {steps}: exploration return {_fmt(row['explore_return'])}, "
                     f"evaluation return {_fmt(row.get('eval_return'))}")

        meta = train_udrl(cfg, resume=resume, on_iteration=iteration)
    table = Table(title=f"UDRL ({estimator}) on {env}, seed {seed}")
    for col in ("step", "episodes", "exploration return", "evaluation return"):
        table.add_column(col, justify="right")
    for h in meta["history"]:
        table.add_row(str(h["step"]), str(h["episodes"]), _fmt(h["explore_return"]), _fmt(h.get("eval_return")))
    out.print(table)
    cmd = meta["command"]
    out.print(f"Evaluation at the command desired_return = {cmd['desired_return']:.1f}, desired_horizon = "
              f"{cmd['desired_horizon']:.1f}: mean return {meta['eval']['mean_return']:.1f} over "
              f"{meta['eval']['episodes']} episodes.")
    if meta.get("controller"):
        size = meta["size"]
        out.print(f"The behaviour function is a {size.get('trees', 1)}-tree forest ({size['leaves']} leaves) reading "
                  f"the observation and the command: {out_dir / meta['controller']} (interp-rl viz {out_dir} --text).")
    out.print(f"Wrote {out_dir / 'metrics.json'} (the learning curve: return against environment steps).")


@app.command()
@cli_errors
def evaluate(
    target: Annotated[str | None, typer.Argument(
        help="A teacher (SB3 .zip, zoo run folder, train folder) or a controller (folder or controller.json).",
    )] = None,
    env: Annotated[str | None, typer.Option(help="Task (Hopper-v5) or zoo id (Hopper-v3).")] = None,
    algo: Annotated[str | None, typer.Option(help="Algorithm (detected from the zip if omitted).")] = None,
    folder: Annotated[Path | None, typer.Option("-f", "--folder", help="RL-Zoo log folder.")] = None,
    exp_id: Annotated[int, typer.Option(help="Zoo experiment id (0: latest).")] = 0,
    against: Annotated[str | None, typer.Option(
        help="A teacher to run on the same episodes, side by side with the controller.")] = None,
    episodes: Annotated[int, typer.Option(help="Number of episodes.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the first episode (episode i uses seed + i).")] = 0,
    legacy_model: Annotated[bool, typer.Option(help="Walker2d: use the pre-v5 model file.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the results as JSON.")] = None,
) -> None:
    """Run a teacher or a distilled controller deterministically and print per-episode returns."""
    from envs.loading import load_teacher
    from interp_rl.rollouts import EvalResult
    from interp_rl.rollouts import evaluate as run_eval
    from interp_rl.validation import check_int

    check_int(episodes, "episodes", "evaluate")
    import torch

    torch.set_num_threads(1)  # small batches: one thread is fastest and never oversubscribes
    kind, ctrl = _load_target(target) if target is not None else ("teacher", None)
    runs: list[tuple[str, Any, Any]] = []  # (label, policy, env_fn)
    task = ""
    if kind == "controller":
        env_fn, task = _controller_env(ctrl, env)
        if against is not None:
            t = load_teacher(against, env=env or ctrl.task, legacy_model=legacy_model)
            if t.obs_dim != ctrl.program.obs_dim:
                raise InterpRLError(f"The controller observes {ctrl.program.obs_dim} features, but the teacher "
                                    f"{t.obs_dim}; they are for different tasks.")
            env_fn = t.env_fn
            runs.append((f"{t.algo.upper()} teacher", t, env_fn))
        runs.append((f"{ctrl.kind} controller", ctrl, env_fn))
        source = str(target)
    else:
        if against is not None:
            raise InterpRLError("--against compares a controller with a teacher; give a controller folder first.")
        t = load_teacher(target, env=env, algo=algo, folder=folder, exp_id=exp_id, legacy_model=legacy_model)
        runs.append((f"{t.algo.upper()} teacher", t, t.env_fn))
        task, source = t.task, t.source
    from interp_rl._progress import Steps

    results: list[tuple[str, EvalResult]] = []
    with Steps(err, transient=True) as bar:
        for label, policy, env_fn in runs:
            job = bar.task(f"Evaluating the {label} on {task}", total=episodes)
            results.append((label, run_eval(policy, env_fn, episodes, seed, task=task,
                                            progress=lambda n, job=job: bar.update(job, advance=n))))
    table = Table(title=f"{' and '.join(label for label, _ in results)} on {task} ({source})")
    table.add_column("episode", justify="right")
    table.add_column("seed", justify="right")
    for label, _ in results:
        table.add_column(f"{label} return", justify="right")
        table.add_column("length", justify="right")
    for i in range(episodes):
        row = [str(i), str(seed + i)]
        for _, r in results:
            row += [f"{r.returns[i]:.1f}", str(r.lengths[i])]
        table.add_row(*row)
    table.add_section()
    mean_row, worst_row = ["mean", ""], ["worst", ""]
    for _, r in results:
        mean_row += [f"{r.mean_return:.1f} ± {r.std_return:.1f}", f"{r.mean_length:.0f}"]
        worst_row += [f"{min(r.returns):.1f}", ""]
    table.add_row(*mean_row)
    table.add_row(*worst_row)
    out.print(table)
    if len(results) == 2:
        t_mean, c_res = results[0][1].mean_return, results[1][1]
        if t_mean:
            from interp_rl.compare import percent_of_teacher

            out.print(f"The controller keeps {percent_of_teacher(c_res.mean_return, t_mean):.1f}% of the teacher's "
                      f"mean return; its worst episode {percent_of_teacher(min(c_res.returns), t_mean):.1f}%.")
    if json_out is not None:
        from dataclasses import replace

        from interp_rl.io import atomic_write_text

        extra = {"source": source, "versions": _versions()}
        if kind == "teacher":
            extra |= {"teacher": t.source, "algo": t.algo, "variant": t.variant}
        if len(results) == 1:
            replace(results[0][1], extra=extra).save(str(json_out))
        else:
            data = {"controller": replace(results[1][1], extra=extra).to_dict(),
                    "teacher": results[0][1].to_dict()}
            atomic_write_text(json_out, json.dumps(data, indent=2) + "\n")
        out.print(f"Wrote {json_out}")


