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
        folder = controller if controller.is_dir() else controller.parent
        if (folder / "states.npy").is_file():
            return np.load(folder / "states.npy")
        if (folder / "distillation.npz").is_file():  # a controller learnt from a log: the logged states
            from interp_rl.evidence import load_data

            return load_data(folder).observations
        return None
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
                         "[default: states.npy beside the controller, else its distillation data's states].")] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Folder for verification.json and verification.md.")] = None,
    only: Annotated[list[str] | None, typer.Option(
        "--property", help="Decide only this property (repeat for several).")] = None,
    repair: Annotated[bool, typer.Option(
        "--repair", help="Refit the pieces that break a property on the controller's distillation data, verify "
                         "again, and write the repaired controller to --out.")] = False,
    repair_by: Annotated[str, typer.Option(
        "--repair-by", help="With --repair: 'whole' (refit each failing piece on its whole region), 'split' (a "
                            "tree's failing leaves first cut along the property's one-feature conditions, only the "
                            "part inside refitted) or 'best' (both, the proved one that keeps more fidelity to the "
                            "data).")] = "best",
    episodes: Annotated[int, typer.Option(
        help="With --repair: episodes to compare the returns before and after (0: none).")] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the teacher's search; with --repair, of the first comparison "
                                           "episode.")] = 0,
    teacher: Annotated[str | None, typer.Option(
        "--teacher", help="The neural teacher (an SB3 .zip, a zoo run folder or an interp-rl train folder), searched "
                          "side by side for states that break each property (random sampling, then gradient ascent) "
                          "and checked on the visited states; `teacher` properties need it.")] = None,
    algo: Annotated[str | None, typer.Option(help="With --teacher: its algorithm (detected when omitted).")] = None,
) -> None:
    """Decide every property of a property file for a saved controller: proved, refuted (with a counterexample
    state) or unknown (with the reason); with --teacher, search the teacher for the same properties. Exits with
    status 3 when a property of the controller is (still) refuted."""
    import numpy as np

    from interp_rl.program import load_controller
    from interp_rl.verify import load_properties
    from interp_rl.verify import verify as run_verify
    from interp_rl.verify.classes import class_view

    if repair_by not in REPAIRS:
        raise InterpRLError(f"--repair-by must be one of {', '.join(REPAIRS)}. Got {repair_by!r} instead.")
    ctrl = load_controller(controller)
    view = class_view(ctrl) or ctrl  # a discrete action: the rules speak of the class played
    props = load_properties(properties, features=view.features, actions=view.actions)
    visited = _states(states, controller)
    if visited is not None:
        visited = ctrl.check_obs(np.asarray(visited, dtype=np.float64))[0]
    bounds = _task_bounds(ctrl) if props.domain.source == "task" else None
    neural = _teacher(teacher, algo, ctrl) if teacher is not None else None
    result = run_verify(ctrl, props, states=visited, task_bounds=bounds, names=only, teacher=neural, seed=seed)
    header, rows = result.table()
    table = Table(*header, title=f"{ctrl.kind} controller of {ctrl.task or 'its task'} against {properties}")
    for row in rows:
        table.add_row(*row)
    out.print(table)
    for line in result.details():
        out.print(line, markup=False)
    for v in result.verdicts:  # the counterexample's state, ready to replay (every digit: it parses back exactly)
        if v.counterexample is not None:
            obs = ",".join(repr(float(x)) for x in v.counterexample.state)
            out.print(f"  replay {v.name!r}: interp-rl viz {controller} --obs {obs}", markup=False, soft_wrap=True)
    for name, line in result.side_by_side():
        out.print(f"{name}: {line}", markup=False)
    counts = result.counts()
    out.print(f"{counts['proved']} proved, {counts['refuted']} refuted, {counts['unknown']} unknown in "
              f"{result.seconds:.2f} s.", markup=False)
    if out_dir is not None:
        paths = result.write(out_dir)
        out.print(f"Wrote {paths['markdown']} and {paths['json']}.", markup=False)
    if repair and counts["refuted"]:
        if out_dir is None:
            raise InterpRLError("--repair writes the repaired controller: give --out FOLDER.")
        result = _repair(ctrl, controller, result, props, visited, bounds, only, out_dir, episodes, seed, neural,
                         repair_by)
        counts = result.counts()
    if counts["refuted"]:
        raise typer.Exit(REFUTED_EXIT)


def _teacher(path: str, algo: str | None, ctrl: Any) -> Any:
    """The teacher, loaded as ``interp-rl distill`` loads it, on the controller's task (a teacher of another task
    is refused by :func:`interp_rl.verify.verify`, which compares their features and actions)."""
    import torch

    from envs.loading import load_teacher

    torch.set_num_threads(1)
    return load_teacher(path, env=ctrl.task or None, algo=algo)


REPAIRS = ("best", "whole", "split")


def _fidelity(ctrl: Any, data: Any) -> tuple[float, str]:
    """How closely ``ctrl`` follows its distillation data, higher is better, and as a reader is told it: the share
    of rows where it plays the logged class (a discrete action), else minus the weighted mean squared error."""
    import numpy as np

    from interp_rl.verify.classes import class_view

    if class_view(ctrl) is not None:
        same = float(np.mean(np.argmax(ctrl.predict(data.observations), axis=1) == np.argmax(data.actions, axis=1)))
        return same, f"plays the logged class on {100 * same:.1f}% of its {len(data.actions)} distillation rows"
    w = np.ones(len(data.actions)) if data.weights is None else np.asarray(data.weights, dtype=np.float64)
    err = float(w @ ((ctrl.predict(data.observations) - data.actions) ** 2).mean(axis=1) / max(w.sum(), 1e-12))
    return -err, f"mean squared error {err:.4g} on its {len(data.actions)} distillation rows"


def _refit(result: Any, data: Any) -> Any:
    """:func:`~interp_rl.verify.refit.repair` (or, for a controller of classes, its class-choosing form)."""
    from interp_rl.verify.classes import ClassView, repair_classes
    from interp_rl.verify.refit import RepairResult, repair

    if not any(v.status == "refuted" for v in result.verdicts):
        return RepairResult(result.controller.metadata.get("scores", result.controller)
                            if isinstance(result.controller.program, ClassView) else result.controller)
    if isinstance(result.controller.program, ClassView):
        return repair_classes(result, data.observations, data.actions, data.weights)
    return repair(result.controller, result, data.observations, data.actions, data.weights)


def _repair(ctrl: Any, path: Path, result: Any, props: Any, visited: Any, bounds: Any, only: Any, out_dir: Path,
            episodes: int, seed: int, neural: Any = None, repair_by: str = "best") -> Any:
    from interp_rl.evidence import load_data
    from interp_rl.verify import verify as run_verify
    from interp_rl.verify.cuts import cut_leaves

    data = load_data(path)

    def check(c: Any) -> Any:
        return run_verify(c, result.properties, states=visited, task_bounds=bounds, names=only, teacher=neural,
                          seed=seed)

    tried = []  # (repair result, its verification, the cuts made)
    cut = cut_leaves(result, data.observations, data.weights) if repair_by != "whole" else None
    if cut is not None:
        fixed = _refit(check(cut[0]), data)
        tried.append((fixed, check(fixed.controller), cut[1]))
    elif repair_by == "split":
        out.print("Nothing to cut (not a tree, or no failing leaf straddles a one-feature condition of the "
                  "properties): the failing pieces are refitted whole.", markup=False)
    if repair_by != "split" or cut is None:
        fixed = _refit(result, data)
        tried.append((fixed, check(fixed.controller), []))
    before = _fidelity(ctrl, data)
    kept = {id(t[0]): _fidelity(t[0].controller, data) for t in tried}  # each repair's fidelity, computed once
    for fixed, again, made in tried:
        proved = again.counts()["proved"]
        how = (f"cut {', '.join(made)}" + (f", then refitted the cut tree's {', '.join(fixed.pieces)}"
                                            if fixed.pieces else "") if made else f"refitted {', '.join(fixed.pieces)}")
        out.print(f"Repair by {'cutting' if made else 'refitting whole pieces'}: {how}; {proved} of "
                  f"{len(again.verdicts)} proved after; {kept[id(fixed)][1]} "
                  f"({fixed.controller.program.size()['parameters']} parameters).", markup=False)
    fixed, again, made = max(tried, key=lambda t: (t[1].counts()["proved"], kept[id(t[0])][0]))
    fixed.controller.save(Path(out_dir) / "controller.json")
    refuted = ", ".join(v.name for v in result.verdicts if v.status == "refuted")
    cuts = f"cutting {', '.join(made)} and then " if made else ""
    chosen = " (of the two, the one proving more and keeping more fidelity)" if len(tried) > 1 else ""
    out.print(f"Repaired {refuted} by {cuts}refitting {', '.join(fixed.pieces) or 'no piece'} (squared error on "
              f"their data {fixed.fit_before:.4g} -> {fixed.fit_after:.4g}){chosen}.", markup=False)
    for v in again.verdicts:
        out.print(f"  after repair: {v.name}: {v.status}", markup=False)
    out.print(f"Fidelity before: {before[1]}; after: {kept[id(fixed)][1]}.", markup=False)
    simulated = episodes > 0
    if simulated and isinstance(ctrl.metadata.get("log"), dict):
        from envs import resolve_task
        from interp_rl.errors import UnknownTaskError

        try:
            resolve_task(ctrl.task)
        except UnknownTaskError:
            out.print(f"No simulator for {ctrl.task or 'its task'}: returns not compared.", markup=False)
            simulated = False
    if simulated:
        from interp_rl.rollouts import evaluate

        env_fn, task = _controller_env(ctrl, None)
        old = evaluate(ctrl, env_fn, episodes, seed, task=task)
        new = evaluate(fixed.controller, env_fn, episodes, seed, task=task)
        out.print(f"Return over {episodes} episodes (seeds {seed}..{seed + episodes - 1}): {old.mean_return:.1f} "
                  f"(worst {min(old.returns):.1f}) before, {new.mean_return:.1f} (worst {min(new.returns):.1f}) after.",
                  markup=False)
    paths = again.write(out_dir)
    out.print(f"Wrote {Path(out_dir) / 'controller.json'} and {paths['markdown']}.", markup=False)
    return again
