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


distill_app = typer.Typer(
    help="Distil a teacher into a transparent controller.",
    rich_markup_mode=None,
    no_args_is_help=True,
)
app.add_typer(distill_app, name="distill")


def _read_config_file(path: Path | None) -> dict[str, Any]:
    """Settings from a TOML or YAML file (keys as in the resolved config.json)."""
    if path is None:
        return {}
    if not path.is_file():
        raise InterpRLError(f"Config file {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".yml", ".yaml", ".json"):
        raise InterpRLError(f"Config file {str(path)!r}: use a .toml, .yaml or .json file.")
    import tomllib

    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        data: Any = tomllib.loads(text) if suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        reason = " ".join(str(exc).split())  # YAML reports span several lines
        raise InterpRLError(f"Config file {str(path)!r} is not valid: {reason}") from None
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = data["config"]  # a resolved config.json from an earlier run
    if not isinstance(data, dict):
        raise InterpRLError(f"Config file {str(path)!r} must hold a table of settings.")
    return data


@distill_app.command("tree")
@cli_errors
def distill_tree_cmd(
    teacher: Annotated[str, typer.Option(help="SB3 .zip, zoo run folder, or train folder.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")],
    env: Annotated[str | None, typer.Option(
        help="Task (Hopper-v5) or zoo id; must match the teacher.")] = None,
    algo: Annotated[str | None, typer.Option(help="Teacher algorithm (detected from the zip).")] = None,
    legacy_model: Annotated[bool, typer.Option(help="Walker2d: use the pre-v5 model file.")] = False,
    max_leaves: Annotated[int | None, typer.Option(help="Leaf limit [default: 64].")] = None,
    max_depth: Annotated[int | None, typer.Option(help="Depth limit [default: none].")] = None,
    leaf_model: Annotated[str | None, typer.Option(
        help="'linear' or 'constant' leaves [default: linear].")] = None,
    max_leaf_terms: Annotated[int | None, typer.Option(
        help="Features per action in a linear leaf [default: all].")] = None,
    split_on: Annotated[str | None, typer.Option(
        help="Choose splits for 'constant' children (CART) or, with linear leaves, 'linear' children "
             "(model tree) or the 'residual' of a global linear fit "
             "[default: linear for linear leaves].")] = None,
    iterations: Annotated[int | None, typer.Option(
        help="DAgger rounds after the teacher's rollouts; 0 is behaviour cloning [default: 12].")] = None,
    steps: Annotated[int | None, typer.Option(help="Environment steps per round [default: 10000].")] = None,
    beta_decay: Annotated[float | None, typer.Option(
        help="Round i follows the teacher with probability beta_decay**i [default: 0.7].")] = None,
    weighting: Annotated[str | None, typer.Option(
        help="'auto', 'critic' (VIPER-style, Q-function teachers) or 'none' [default: auto].")] = None,
    tune_iterations: Annotated[int | None, typer.Option(
        help="ARS updates of the leaves on the return after distillation [default: 0].")] = None,
    eval_episodes: Annotated[int | None, typer.Option(
        help="Final evaluation episodes [default: 10].")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed [default: 0].")] = None,
    config: Annotated[Path | None, typer.Option(
        help="TOML/YAML file of settings; options given on the command line win.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted distillation in --out.")] = False,
) -> None:
    """Distil a teacher into a small decision tree (DAgger, critic-weighted when possible)."""
    from distill.run import TreeDistillConfig, distill_tree
    from envs import get_task, task_signals
    from envs.teachers import load_teacher

    settings = _read_config_file(config)
    given = {"max_leaves": max_leaves, "max_depth": max_depth, "leaf_model": leaf_model,
             "max_leaf_terms": max_leaf_terms, "split_on": split_on, "iterations": iterations, "steps": steps,
             "beta_decay": beta_decay, "weighting": weighting, "tune_iterations": tune_iterations,
             "eval_episodes": eval_episodes, "seed": seed}
    settings.update({k: v for k, v in given.items() if v is not None})
    cfg = TreeDistillConfig.from_dict(settings).validate()  # resolved: split_on 'auto' is decided
    import torch

    torch.set_num_threads(1)
    t = load_teacher(teacher, env=env, algo=algo, legacy_model=legacy_model)
    if env is not None and get_task(env).id != t.task:
        raise InterpRLError(f"The teacher is for {t.task}, not {get_task(env).id}.")
    assert t.env_fn is not None
    features, actions = task_signals(t.task, t.variant)
    provenance = {"source": t.source, "algo": t.algo, "task": t.task, "variant": t.variant}

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=err,
                  disable=not sys.stderr.isatty()) as bar:
        job = bar.add_task(f"Distilling {t.algo.upper()} on {t.task}", total=cfg.iterations + 1)

        def on_round(row: dict[str, Any]) -> None:
            if "round" in row:
                ret = row.get("return_mean")
                bar.update(job, completed=row["round"] + 1, description=(
                    f"DAgger round {row['round']}" + (f": return {ret:.0f}" if ret == ret and ret is not None
                                                      else "")))
            else:
                bar.update(job, description=f"Tuning leaves: update {row['iteration']}, "
                                            f"return {row['return_mean']:.0f}")

        metrics = distill_tree(t, t.env_fn, cfg, out_dir, features=features, actions=actions, task=t.task,
                               provenance=provenance, resume=resume, progress=on_round)
    table = Table(title=f"Tree distilled from {t.algo.upper()} on {t.task}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("teacher return", f"{metrics['teacher_return']:.1f} ± {metrics['teacher_return_std']:.1f}"),
        ("tree return", f"{metrics['student_return']:.1f} ± {metrics['student_return_std']:.1f}"),
        ("% of teacher", f"{metrics['percent_of_teacher']:.1f}"),
        ("fidelity R² (teacher states)", f"{metrics['fidelity_teacher_states']['r2']:.3f}"),
        ("fidelity R² (tree states)", f"{metrics['fidelity_student_states']['r2']:.3f}"),
        ("leaves / depth", f"{metrics['leaves']} / {metrics['depth']}"),
        ("linear terms", str(metrics["linear_terms"])),
        ("distillation seconds", f"{metrics['distill_seconds']:.0f}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    out.print(table)
    out.print(f"Wrote controller.json, controller.py, controller.c, rules.txt, tree.svg and metrics.json "
              f"to {out_dir}.")


@app.command()
@cli_errors
def viz(
    controller: Annotated[Path, typer.Argument(help="controller.json, or the folder holding it.")],
    out_file: Annotated[Path | None, typer.Option(
        "--out", help="Picture to write (.svg, .png, .pdf) [default: tree.svg beside the controller].",
    )] = None,
    max_depth: Annotated[int | None, typer.Option(help="Draw only the top levels of a big tree.")] = None,
    obs: Annotated[str | None, typer.Option(
        help="Highlight the path of one observation: comma-separated raw values.")] = None,
    episode_seed: Annotated[int | None, typer.Option(
        help="Run the controller for one episode with this seed and show leaf-visit counts.")] = None,
    text: Annotated[bool, typer.Option(help="Also print the rules as text.")] = False,
) -> None:
    """Draw a saved controller: rules, picture, the path of one state, leaf visits over an episode."""
    import numpy as np

    from interp_rl.program import load_controller
    from interp_rl.viz import decision_path_text, export_text, leaf_visit_counts, render, to_dot

    ctrl = load_controller(controller)
    path = None
    if obs is not None:
        try:
            x = np.array([float(v) for v in obs.replace(" ", "").split(",") if v != ""])
        except ValueError:
            raise InterpRLError(f"--obs must be comma-separated numbers. Got {obs!r} instead.") from None
        x, _ = _checked_obs(ctrl, x)
        path = ctrl.program.decision_path(x)
        out.print(decision_path_text(ctrl, x), markup=False)
    visits = None
    if episode_seed is not None:
        from envs import EnvVariant, env_factory
        from interp_rl.rollouts import collect

        if not ctrl.task:
            raise InterpRLError("The controller does not name its task, so no episode can be run.")
        variant = EnvVariant(**ctrl.metadata.get("teacher", {}).get("variant", {}))
        env_fn = env_factory(ctrl.task, variant)
        env = env_fn(episode_seed)
        horizon = int(getattr(env.spec, "max_episode_steps", None) or 1000)
        env.close()
        roll = collect(ctrl, env_fn, horizon, episode_seed, task=ctrl.task)
        first_episode = np.flatnonzero(roll.episode_starts)
        end = first_episode[1] if len(first_episode) > 1 else len(roll.observations)
        visits = leaf_visit_counts(ctrl, roll.observations[:end])
        out.print(f"Episode seed {episode_seed}: {end} steps, return {roll.rewards[:end].sum():.1f}; "
                  f"{int(np.count_nonzero(visits))} of {ctrl.program.n_leaves} leaves visited.")
    if text:
        out.print(export_text(ctrl, max_depth=max_depth), markup=False)
    base = controller if controller.is_dir() else controller.parent
    target = out_file or base / "tree.svg"
    render(to_dot(ctrl, max_depth=max_depth, highlight_path=path, leaf_visits=visits), target)
    out.print(f"Wrote {target}")


def _checked_obs(ctrl: Any, x: Any) -> Any:
    from interp_rl._validation import check_observations

    return check_observations(x, ctrl.program.obs_dim, owner=f"the {ctrl.kind} controller",
                              task=ctrl.task or None, feature_names=ctrl.feature_names)


@app.command()
@cli_errors
def export(
    controller: Annotated[Path, typer.Argument(help="controller.json, or the folder holding it.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write to.")],
    fmt: Annotated[list[str] | None, typer.Option(
        "--format", help="python, c or json; repeatable [default: all three].")] = None,
) -> None:
    """Export a saved controller as a standalone Python module, a C file and versioned JSON."""
    from interp_rl.export import to_c, to_python
    from interp_rl.io import atomic_write_text
    from interp_rl.program import load_controller

    ctrl = load_controller(controller)
    formats = fmt or ["python", "c", "json"]
    for f in formats:
        if f not in ("python", "c", "json"):
            raise InterpRLError(f"Unknown export format {f!r}; use python, c or json.")
    written = []
    for f in formats:
        if f == "python":
            written.append(atomic_write_text(out_dir / "controller.py", to_python(ctrl)))
        elif f == "c":
            written.append(atomic_write_text(out_dir / "controller.c", to_c(ctrl)))
        else:
            written.append(ctrl.save(out_dir / "controller.json"))
    for p in written:
        out.print(f"Wrote {p}")


def _csv(value: str | None, what: str, cast: Callable[[str], Any] = str) -> list[Any] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    try:
        parsed = [cast(v) for v in items]
    except ValueError:
        kind = " of integers" if cast is int else ""
        raise InterpRLError(f"{what} must be a comma-separated list{kind}. Got {value!r} instead.") from None
    if not parsed:
        raise InterpRLError(f"{what} is empty. Got {value!r} instead.")
    return parsed


@app.command()
@cli_errors
def bench(
    suite: Annotated[str, typer.Option(
        help="A shipped suite (quick, mujoco, demo) or a suite file (.toml/.yaml) to copy and edit.",
    )] = "quick",
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Results folder; a rerun continues it [default: bench-results/SUITE].")] = None,
    methods: Annotated[str | None, typer.Option(
        help="Only these methods of the suite, comma-separated.")] = None,
    seeds: Annotated[str | None, typer.Option(
        "--seeds", "--seed", help="Only these seeds, comma-separated [default: the suite's].")] = None,
    workers: Annotated[int, typer.Option(help="Cells run at once.")] = 2,
    executor: Annotated[str, typer.Option(
        help="'process' (a local process pool) or 'ray' (Ray tasks).")] = "process",
    ray_address: Annotated[str | None, typer.Option(
        help="With --executor ray: the address of a running Ray cluster [default: start a local one].",
    )] = None,
    teachers: Annotated[Path | None, typer.Option(
        help="Folder the suite's teacher paths are relative to "
             "[default: $INTERP_RL_TEACHERS, else ../shared/teachers].")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Run a benchmark suite: one JSON record per (teacher, method, size, seed) cell; resumable."""
    from benchmarks.harness import run_suite
    from benchmarks.suite import load_suite

    s = load_suite(suite)
    results = out_dir or Path("bench-results") / s.name
    result = run_suite(s, results, teachers_dir=teachers, methods=_csv(methods, "--methods"),
                       seeds=_csv(seeds, "--seeds", int), workers=workers, executor=executor,
                       ray_address=ray_address, progress=progress and sys.stderr.isatty())
    out.print(f"{len(result.cells)} cells: {len(result.finished)} run now, {len(result.skipped)} already "
              f"done, {len(result.failed)} failed. Records in {results / 'records'}.")
    if result.failed:
        _fail(f"{len(result.failed)} cell(s) failed ({', '.join(result.failed)}); rerun the same command to "
              "retry them.")
    out.print(f"Next: interp-rl report {results}")


@app.command()
@cli_errors
def report(
    results: Annotated[Path, typer.Argument(help="A results folder written by interp-rl bench.")],
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Folder for report.md, report.html and figures/ [default: RESULTS].")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap resampling.")] = 0,
    reps: Annotated[int, typer.Option(help="Bootstrap resamples for the confidence intervals.")] = 2000,
) -> None:
    """Write a Markdown and a self-contained HTML report (tables with IQM and CIs, Pareto plots, trees)."""
    from benchmarks.report import write_report
    from interp_rl._validation import check_int

    check_int(reps, "reps", "report")
    check_int(seed, "seed", "report", low=0)
    paths = write_report(results, out_dir, reps=reps, seed=seed)
    out.print(f"Wrote {paths['markdown']} and {paths['html']}")


@app.command()
@cli_errors
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for everything the demo makes.")] = Path(
        "interp-rl-demo"),
    seed: Annotated[int, typer.Option(help="Seed of the teacher's training and of every distillation.")] = 0,
    workers: Annotated[int, typer.Option(help="Cells run at once.")] = 2,
) -> None:
    """Train a small MuJoCo teacher, distil every available controller, explain them, write the report."""
    import time

    from benchmarks.demo import run_demo

    t0 = time.perf_counter()
    summary = run_demo(out_dir, seed=seed, workers=workers, progress=sys.stderr.isatty(), console=out)
    out.print(f"Demo finished in {time.perf_counter() - t0:.0f} s. Report: {summary['html']} "
              f"(Markdown: {summary['markdown']}).")


def _versions() -> dict[str, str]:
    from interp_rl.provenance import versions

    return versions()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
