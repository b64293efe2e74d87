"""``interp-rl viz``, ``explain`` and ``export``: read, explain and ship a saved controller."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from interp_rl.cli._app import (
    _controller_env,
    _load_target,
    app,
    cli_errors,
    err,
    out,
)
from interp_rl.errors import InterpRLError


@app.command()
@cli_errors
def viz(
    controller: Annotated[Path, typer.Argument(help="controller.json, or the folder holding it.")],
    out_file: Annotated[Path | None, typer.Option(
        "--out", help="Picture to write (.svg, .png, .pdf, or .dot for the Graphviz source) "
                      "[default: KIND.svg beside the controller].",
    )] = None,
    max_depth: Annotated[int | None, typer.Option(help="Draw only the top levels of a big tree.")] = None,
    obs: Annotated[str | None, typer.Option(
        help="Explain one observation (and mark it on the picture): comma-separated raw values.")] = None,
    episode_seed: Annotated[int | None, typer.Option(
        help="Run the controller for one episode with this seed and show what it visited.")] = None,
    text: Annotated[bool, typer.Option(
        help="Print the rules or equations as text instead of drawing them (with --out: both).")] = False,
) -> None:
    """Draw a saved controller (or print it, --text): its rules or equations, one decision explained, what an
    episode visits."""
    import numpy as np

    from interp_rl.logged_data import class_note
    from interp_rl.program import load_controller, unit_note
    from interp_rl.viz import decision_path_text, export_text, render, to_dot, usage_figure

    ctrl = load_controller(controller)
    x = None
    if obs is not None:
        try:
            values = np.array([float(v) for v in obs.replace(" ", "").split(",") if v != ""])
        except ValueError:
            raise InterpRLError(f"--obs must be comma-separated numbers. Got {obs!r} instead.") from None
        x = ctrl.check_obs(values)[0][0]
        out.print(decision_path_text(ctrl, x), markup=False)
    visited = None
    if episode_seed is not None:
        from interp_rl.rollouts import run_episodes

        env_fn, task = _controller_env(ctrl, None)
        ran = run_episodes(ctrl, env_fn, [episode_seed], n_envs=1, record=True, task=task)
        assert ran.rollout is not None
        visited = ran.rollout.observations
        line = f"Episode seed {episode_seed}: {ran.lengths[0]} steps, return {ran.returns[0]:.1f}"
        summary = getattr(ctrl.program, "visit_summary", lambda _: "")(visited)
        out.print(line + (f"; {summary}" if summary else "") + ".", markup=False)
    if text:
        out.print(export_text(ctrl, max_depth=max_depth), markup=False)
        if units := unit_note(ctrl.actions):  # what [x200 N m] means, as the pictures' captions say
            out.print(units, markup=False)
        if classes := class_note(ctrl):  # a controller of class scores: which class it plays
            out.print(classes, markup=False)
        if out_file is None:
            return
    base = controller if controller.is_dir() else controller.parent
    target = out_file or base / f"{ctrl.kind}.svg"
    render(to_dot(ctrl, max_depth=max_depth, obs=x, states=visited), target)
    out.print(f"Wrote {target}")
    if visited is not None:
        try:
            pieces = ctrl.program.affine_pieces()
        except (TypeError, AttributeError):
            return  # not piecewise affine: no usage picture
        if len(pieces.acting_pieces()) < 2:
            return  # one piece acts everywhere: nothing to show
        figure = target.with_name(f"{target.stem}-episode.png")
        usage_figure(ctrl, visited, figure, title=f"Episode seed {episode_seed}: which part of the "
                                                 f"{ctrl.kind} acts, step by step")
        out.print(f"Wrote {figure}")


@app.command()
@cli_errors
def explain(
    policy: Annotated[str, typer.Option(
        "--policy",
        help="A teacher (SB3 .zip, zoo run folder, train folder) or a controller (folder or controller.json).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the pictures and the JSON of the values.")],
    env: Annotated[str | None, typer.Option(help="Task (Hopper-v5) [default: the policy's own].")] = None,
    states: Annotated[int, typer.Option(help="Visited states to explain.")] = 1000,
    episodes: Annotated[int, typer.Option(help="Episodes to run for the visited states.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the first episode, the state draw and the estimator.")] = 0,
    background: Annotated[int, typer.Option(help="k-means centres of the visited states used as background.")] = 16,
    method: Annotated[str, typer.Option(
        help="auto (exact rule of the controller's kind, else permutation), exact, kernel or permutation.")] = "auto",
    budget: Annotated[int | None, typer.Option(
        help="Predict rows per state for the sampling estimators [default: 16384].")] = None,
    legacy_model: Annotated[bool, typer.Option(help="Walker2d: use the pre-v5 model file.")] = False,
) -> None:
    """Shapley values of a teacher or a controller on the states it visits: importance, beeswarm, waterfall and
    episode timeline pictures in named features, plus the values as JSON."""
    import torch

    from envs import get_task
    from envs.loading import load_teacher
    from interp_rl._progress import Steps
    from interp_rl.attribution import explain_policy

    torch.set_num_threads(1)
    kind, ctrl = _load_target(policy)
    if kind == "controller":
        env_fn, task = _controller_env(ctrl, env)
        target: Any = ctrl
        features, actions = ctrl.feature_names, ctrl.action_names
        units = [a.unit for a in ctrl.actions]
    else:
        target = load_teacher(policy, env=env, legacy_model=legacy_model)
        env_fn, task = target.env_fn, target.task
        features = list(target.feature_names)
        actions = [a.name for a in get_task(task).action_features()]
        units = [a.unit for a in get_task(task).action_features()]
    with Steps(err, transient=True) as bar:
        job = bar.task(f"Explaining the {kind} on {task}", total=states)
        summary = explain_policy(target, env_fn, out_dir, states=states, episodes=episodes, seed=seed,
                                 background=background, method=method, budget=budget, task=task, features=features,
                                 actions=actions, units=units, progress=lambda n: bar.update(job, advance=n))
    what = "" if summary["explained"] == "actions" else f" for its {summary['explained']}"
    table = Table(title=f"Most important features of the {kind} on {task}{what} ({summary['method']}, "
                        f"{summary['n_states']} states, {summary['seconds']:.1f} s)")
    table.add_column("action")
    table.add_column("features, most important first (mean |Shapley value|)")
    for a in summary["actions"]:
        imp = summary["importance"][a]
        top = summary["ranking"][a][:4]
        table.add_row(a, ", ".join(f"{f} ({imp[f]:.3g})" for f in top))
    out.print(table)
    out.print(f"Wrote {len(summary['figures'])} figures, attribution.json and summary.json to {out_dir}")


@app.command()
@cli_errors
def export(
    controller: Annotated[Path, typer.Argument(help="controller.json, or the folder holding it.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write to.")],
    fmt: Annotated[list[str] | None, typer.Option(
        "--format", help="python, c, json or onnx; repeatable [default: python, c and json].")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite files that interp-rl did not write.")] = False,
) -> None:
    """Export a saved controller as a standalone Python module, a C file and versioned JSON, or an ONNX model."""
    from interp_rl.errors import bad_value
    from interp_rl.export import EXPORT_FILES, write_exports
    from interp_rl.program import load_controller

    ctrl = load_controller(controller)
    formats = fmt or ["python", "c", "json"]
    for f in formats:
        if f not in EXPORT_FILES:
            raise bad_value("--format", "interp-rl export", "python, c, json or onnx", f, what="option")
    for p in write_exports(ctrl, out_dir, formats, force=force).values():
        out.print(f"Wrote {p}")


