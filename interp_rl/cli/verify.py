"""``interp-rl verify``: decide a saved controller's properties (and repair what fails)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from interp_rl.cli._app import _controller_env, app, cli_errors, out
from interp_rl.errors import InterpRLError

#: Exit status when a property is refuted (errors exit with 1).
REFUTED_EXIT = 3


def _states(path: Path | None, controller: Path) -> Any:
    import numpy as np

    if path is None:
        beside = (controller if controller.is_dir() else controller.parent) / "states.npy"
        return np.load(beside) if beside.is_file() else None
    if not path.is_file():
        raise InterpRLError(f"--states {str(path)!r} does not exist; give a .npy file of visited states.")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InterpRLError(f"--states {str(path)!r} is not a .npy array of states: {exc}.") from None


def _task_bounds(ctrl: Any) -> Any:
    import numpy as np

    env_fn, _ = _controller_env(ctrl, None)
    env = env_fn(0)
    try:
        space = env.observation_space
        return np.asarray(space.low, dtype=np.float64), np.asarray(space.high, dtype=np.float64)
    finally:
        env.close()


@app.command()
@cli_errors
def verify(
    controller: Annotated[Path, typer.Argument(help="controller.json, or the folder holding it.")],
    properties: Annotated[Path, typer.Option("--properties", help="Property file (TOML).")],
    states: Annotated[Path | None, typer.Option(
        "--states", help="Visited states (.npy, one row per state) for the domain and the probabilistic check "
                         "[default: states.npy beside the controller, if any].")] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Folder for verification.json and verification.md.")] = None,
    only: Annotated[list[str] | None, typer.Option(
        "--property", help="Decide only this property (repeat for several).")] = None,
) -> None:
    """Decide every property of a property file for a saved controller: proved, refuted (with a counterexample
    state) or unknown (with the reason). Exits with status 3 when a property is refuted."""
    import numpy as np

    from interp_rl.program import load_controller
    from interp_rl.verify import load_properties
    from interp_rl.verify import verify as run_verify

    ctrl = load_controller(controller)
    props = load_properties(properties, features=ctrl.features, actions=ctrl.actions)
    visited = _states(states, controller)
    if visited is not None:
        visited = ctrl.check_obs(np.asarray(visited, dtype=np.float64))[0]
    bounds = _task_bounds(ctrl) if props.domain.source == "task" else None
    result = run_verify(ctrl, props, states=visited, task_bounds=bounds, names=only)
    header, rows = result.table()
    table = Table(*header, title=f"{ctrl.kind} controller of {ctrl.task or 'its task'} against {properties}")
    for row in rows:
        table.add_row(*row)
    out.print(table)
    for line in result.details():
        out.print(line, markup=False)
    counts = result.counts()
    out.print(f"{counts['proved']} proved, {counts['refuted']} refuted, {counts['unknown']} unknown in "
              f"{result.seconds:.2f} s.", markup=False)
    if out_dir is not None:
        paths = result.write(out_dir)
        out.print(f"Wrote {paths['markdown']} and {paths['json']}.", markup=False)
    if counts["refuted"]:
        raise typer.Exit(REFUTED_EXIT)
