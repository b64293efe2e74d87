"""``interp-rl envs``: the supported tasks and their named features."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from interp_rl.cli._app import (
    app,
    cli_errors,
    out,
)

envs_app = typer.Typer(
    help="List the supported tasks, or show one task's named features.",
    rich_markup_mode=None,
    invoke_without_command=True,
)
app.add_typer(envs_app, name="envs")


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


