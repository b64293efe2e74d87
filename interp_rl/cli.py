"""The ``interp-rl`` command line: a thin shell over the library.

Each command parses its options, calls one library function, and turns
library errors into a one-line message on stderr with exit status 1.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from interp_rl.errors import InterpRLError

__all__ = ["app", "main"]

app = typer.Typer(
    name="interp-rl",
    help="Turn black-box deep RL policies into controllers a person can read, check and ship.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)
envs_app = typer.Typer(
    help="List the supported tasks, or show one task's named features.",
    rich_markup_mode=None,
    invoke_without_command=True,
)
app.add_typer(envs_app, name="envs")

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)
F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int = 1) -> None:
    err.print(f"Error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


def cli_errors(fn: F) -> F:
    """Turn library errors into one-line CLI errors with a non-zero exit."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InterpRLError as exc:
            _fail(str(exc), 130 if type(exc).__name__ == "TrainInterrupted" else 1)
        except KeyboardInterrupt:
            _fail("interrupted.", 130)

    return wrapper  # type: ignore[return-value]


@envs_app.callback()
@cli_errors
def envs_list(ctx: typer.Context) -> None:
    """List the supported tasks."""
    if ctx.invoked_subcommand is not None:
        return
    from envs import list_tasks

    table = Table(title="interp-rl tasks")
    table.add_column("task", no_wrap=True)
    for col in ("obs", "actions", "older ids", "description"):
        table.add_column(col)
    for task in list_tasks():
        table.add_row(task.id, str(len(task.observation_features())), str(len(task.action_features())),
                      ", ".join(task.zoo_ids), task.description)
    out.print(table)


@envs_app.command("show")
@cli_errors
def envs_show(
    task: Annotated[str, typer.Argument(help="Task id, e.g. Hopper-v5.")],
    layout: Annotated[str, typer.Option(
        help="Observation layout: default, or v3 (Ant, Humanoid).")] = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Print a task's observation and action features with their units."""
    from envs import EnvVariant, get_task

    t = get_task(task)
    variant = EnvVariant(obs_layout=layout)
    obs, acts = t.observation_features(variant), t.action_features()
    if as_json:
        out.print_json(json.dumps({
            "task": t.id,
            "observation": [{"index": i, "name": f.name, "unit": f.unit, "description": f.description}
                            for i, f in enumerate(obs)],
            "action": [{"index": i, "name": f.name, "unit": f.unit, "description": f.description}
                       for i, f in enumerate(acts)],
        }))
        return
    for title, feats in ((f"{t.id} observation ({len(obs)})", obs), (f"{t.id} action ({len(acts)})", acts)):
        table = Table(title=title)
        for col in ("#", "name", "unit", "source"):
            table.add_column(col)
        for i, f in enumerate(feats):
            table.add_row(str(i), f.name, f.unit, f.description)
        out.print(table)


@app.command()
@cli_errors
def train(
    algo: Annotated[str, typer.Option(help="sac, td3, ddpg, tqc, ppo, a2c, trpo or ars.")],
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
) -> None:
    """Train a teacher with the per-task hyperparameters; checkpoints allow --resume."""
    import yaml

    from envs.training import TrainConfig, train_teacher
    from interp_rl.errors import InvalidParameterError

    overrides: dict[str, Any] = {}
    for item in hp or []:
        if "=" not in item:
            raise InvalidParameterError(f"--hp expects KEY=VALUE. Got {item!r} instead.")
        key, value = item.split("=", 1)
        overrides[key] = yaml.safe_load(value)
    cfg = TrainConfig(algo=algo.lower(), task=env, steps=steps, out=str(out_dir), seed=seed,
                      checkpoint_every=checkpoint_every, hyperparams=overrides,
                      eval_episodes=eval_episodes, keep=keep)
    meta = train_teacher(cfg, resume=resume, progress_bar=progress and sys.stderr.isatty())
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


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


@app.command()
@cli_errors
def evaluate(
    teacher: Annotated[str | None, typer.Argument(help="SB3 .zip, zoo run folder, or train folder.")] = None,
    env: Annotated[str | None, typer.Option(help="Task (Hopper-v5) or zoo id (Hopper-v3).")] = None,
    algo: Annotated[str | None, typer.Option(help="Algorithm (detected from the zip if omitted).")] = None,
    folder: Annotated[Path | None, typer.Option("-f", "--folder", help="RL-Zoo log folder.")] = None,
    exp_id: Annotated[int, typer.Option(help="Zoo experiment id (0: latest).")] = 0,
    episodes: Annotated[int, typer.Option(help="Number of episodes.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the first episode (episode i uses seed + i).")] = 0,
    legacy_model: Annotated[bool, typer.Option(help="Walker2d: use the pre-v5 model file.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the results as JSON.")] = None,
) -> None:
    """Evaluate a teacher deterministically and print per-episode returns."""
    from envs import get_task
    from envs.teachers import load_teacher
    from interp_rl._validation import check_int
    from interp_rl.rollouts import evaluate as run_eval

    check_int(episodes, "episodes", "evaluate")
    import torch

    torch.set_num_threads(1)  # small batches: one thread is fastest and never oversubscribes
    t = load_teacher(teacher, env=env, algo=algo, folder=folder, exp_id=exp_id, legacy_model=legacy_model)
    if env is not None and get_task(env).id != t.task:  # pragma: no cover - load_teacher resolves env
        raise InterpRLError(f"Teacher expects {t.task}, not {env}.")
    assert t.env_fn is not None
    from rich.progress import Progress

    with Progress(console=err, transient=True, disable=not sys.stderr.isatty()) as bar:
        job = bar.add_task(f"Evaluating {t.algo.upper()} on {t.task}", total=episodes)
        result = run_eval(t, t.env_fn, episodes, seed, task=t.task,
                          progress=lambda n: bar.advance(job, n))
    table = Table(title=f"{t.algo.upper()} teacher on {t.task} ({t.source})")
    for col in ("episode", "seed", "return", "length"):
        table.add_column(col, justify="right")
    for i, (r, n) in enumerate(zip(result.returns, result.lengths, strict=False)):
        table.add_row(str(i), str(seed + i), f"{r:.1f}", str(n))
    table.add_section()
    table.add_row("mean", "", f"{result.mean_return:.1f} ± {result.std_return:.1f}",
                  f"{result.mean_length:.0f}")
    out.print(table)
    if json_out is not None:
        from dataclasses import replace

        result = replace(result, extra={"teacher": t.source, "algo": t.algo, "variant": t.variant,
                                        "versions": _versions()})
        result.save(str(json_out))
        out.print(f"Wrote {json_out}")


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for pkg in ("interp-rl", "stable-baselines3", "sb3-contrib", "gymnasium", "mujoco", "torch", "numpy"):
        try:
            found[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return found


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
