"""``interp-rl import``: an agent that is already transparent (sb3-contrib ARS, linear) as a linear controller."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from interp_rl.cli._app import app, cli_errors, err, out


@app.command("import")
@cli_errors()
def import_(
    agent: Annotated[str, typer.Argument(help="An ARS agent: an SB3 .zip, a zoo run folder or an interp-rl train "
                                              "folder.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the controller.")],
    env: Annotated[str | None, typer.Option(help="Task id [default: read from the agent].")] = None,
    algo: Annotated[str | None, typer.Option(help="Algorithm [default: detected from the zip]; only ars is "
                                                  "linear.")] = None,
    episodes: Annotated[int, typer.Option(help="Seeds on which the agent and the controller are compared.")] = 20,
    seed: Annotated[int, typer.Option(help="First seed of the comparison.")] = 0,
) -> None:
    """Turn a linear agent (sb3-contrib ARS with LinearPolicy) into the linear controller it is: VecNormalize
    folded into the weights, a tanh squash kept; then compare both on the same seeds."""
    import torch

    from envs.importing import import_to_folder
    from interp_rl.validation import check_int

    check_int(episodes, "--episodes", "interp-rl import", low=1)
    torch.set_num_threads(1)
    controller, check = import_to_folder(agent, out_dir, env=env, algo=algo, episodes=episodes, seed=seed)
    same = check.identical_episodes
    table = Table(title=f"ARS agent imported as a linear controller on {controller.task} ({len(check.seeds)} seeds "
                        f"from {seed})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in [
        ("agent return (float32)", f"{sum(check.agent_returns) / len(check.seeds):.4f}"),
        ("controller return", f"{sum(check.controller_returns) / len(check.seeds):.4f}"),
        ("episodes with the same return", f"{same} of {len(check.seeds)}"),
        ("largest return difference", f"{check.max_return_difference:.3g}"),
        ("episodes with the float64 agent's return", f"{check.identical_episodes_float64} of {len(check.seeds)}"),
        ("largest difference from the float64 agent", f"{check.max_return_difference_float64:.3g}"),
        ("the agent against itself in batches of 1", f"{check.max_agent_self_difference:.3g}"),
        ("largest action difference", f"{check.max_action_difference:.3g}"),
        ("states where the normalisation clip binds", f"{100 * check.clip_binding_share:.2f}%"),
        ("size", ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in controller.program.size().items())),
    ]:
        table.add_row(name, value)
    out.print(table)
    out.print(controller.program.explain(controller), markup=False)
    if check.clip_binding_share > 0:
        err.print(f"Warning: VecNormalize's clip binds on {100 * check.clip_binding_share:.2f}% of the agent's "
                  "states; there the agent saturates a feature and the controller does not (controller.json keeps "
                  "the box where the import is exact as exact_domain).", markup=False)
    out.print(f"Wrote controller.json, controller.py, controller.c, controller.onnx, rules.txt and import.json to "
              f"{out_dir}.", markup=False)
