"""The ``interp-rl`` command line: a thin shell over the library.

Each command parses its options, calls one library function, and turns
library errors into a one-line message on stderr with exit status 1.
"""

from __future__ import annotations

import functools
import json
import math
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

def _console(stderr: bool = False) -> Console:
    """A console that wraps only for a terminal: piped or redirected output keeps long lines whole."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 1000
    return Console(stderr=stderr, highlight=False, width=width, soft_wrap=not stream.isatty())


out = _console()
err = _console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int = 1) -> None:
    err.print(f"Error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


def _rerun_command(resume_flag: bool) -> str:
    """The command line that continues the interrupted one (with ``--resume`` where it takes one)."""
    import shlex

    argv = [a for a in sys.argv[1:]]
    if resume_flag and "--resume" not in argv:
        argv.append("--resume")
    return shlex.join(["interp-rl", *argv])


def cli_errors(fn: F | None = None, *, resumable: str | None = None) -> Any:
    """Turn library errors into one-line CLI errors with a non-zero exit.

    A command's ``out_dir`` (its ``--out`` folder) is checked first: a file there is one line too.

    ``resumable``: ``"flag"`` for commands that continue with ``--resume``, ``"rerun"`` for those
    that continue when run again. Such commands treat SIGTERM like Ctrl-C; either exits with
    status 130 and prints the command that continues the work.
    """

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from interp_rl.errors import Interrupted
            from interp_rl.interrupts import sigterm_as_interrupt

            try:
                if kwargs.get("out_dir") is not None:  # every command's --out folder, before any work
                    from interp_rl.io import check_folder

                    check_folder(kwargs["out_dir"], "--out")
                if resumable is None:
                    return f(*args, **kwargs)
                with sigterm_as_interrupt():
                    return f(*args, **kwargs)
            except (Interrupted, KeyboardInterrupt) as exc:
                what = str(exc) if isinstance(exc, Interrupted) else "Interrupted."
                hint = f" To continue: {_rerun_command(resumable == 'flag')}" if resumable else ""
                _fail(f"{what}{hint}", 130)
            except InterpRLError as exc:
                _fail(str(_as_typed(exc, f, kwargs)), 1)

        return wrapper  # type: ignore[return-value]

    return decorate(fn) if fn is not None else decorate


def _as_typed(exc: InterpRLError, command: Callable[..., Any], given: dict[str, Any]) -> InterpRLError:
    """A library's complaint about one of its parameters that is also an option of ``command``, with the
    value the user gave, said about the option as typed (``--states`` of ``interp-rl explain``).

    A command function is named after its words (``dynamics_fit`` is ``interp-rl dynamics fit``).
    """
    import inspect

    from interp_rl.errors import InvalidParameterError

    if not isinstance(exc, InvalidParameterError) or exc.name not in given:
        return exc
    try:
        same = bool(given[exc.name] == exc.value)
    except (TypeError, ValueError):
        same = False
    if not same:
        return exc
    param = inspect.signature(command, eval_str=True).parameters[exc.name]
    flags = [d for info in getattr(param.annotation, "__metadata__", ())
             for d in getattr(info, "param_decls", None) or () if d.startswith("--")]
    flag = max(flags, key=len) if flags else "--" + exc.name.replace("_", "-")
    return exc.renamed(flag, "interp-rl " + command.__name__.replace("_", " "))


def _version(value: bool) -> None:
    if value:
        from interp_rl import __version__

        out.print(f"interp-rl {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False) -> None:
    """Turn black-box deep RL policies into controllers a person can read, check and ship."""


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
@cli_errors(resumable="flag")
def train(
    algo: Annotated[str, typer.Option(help="sac, td3, ddpg, tqc, ppo, a2c, trpo, ars or dqn (discrete tasks).")],
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
    if policy is not None:
        overrides["policy"] = policy
    if experts is not None:
        if overrides.get("policy") != "moe":
            raise InvalidParameterError("--experts sets the experts of --policy moe; add --policy moe.")
        from interp_rl._validation import check_int

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

        if not err.is_terminal:
            log.line(f"Training {algo.upper()} on {env} for {steps} steps into {out_dir}")
        meta = train_teacher(cfg, resume=resume, progress_bar=progress and err.is_terminal, on_checkpoint=checkpoint)
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


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _load_target(path: str) -> tuple[str, Any]:
    """``("controller", Controller)`` for a controller file or folder, else ``("teacher", None)``."""
    from interp_rl.program import load_controller

    p = Path(path)
    if p.suffix == ".json" or (p.is_dir() and (p / "controller.json").is_file()):
        return "controller", load_controller(p)
    return "teacher", None


def _controller_env(ctrl: Any, env: str | None) -> tuple[Any, str]:
    """The environment factory a saved controller runs in: its own task (and variant), or ``--env``."""
    from envs import EnvVariant, env_factory, get_task

    task = get_task(env).id if env else ctrl.task
    if not task:
        raise InterpRLError("The controller does not name its task; pass --env TASK.")
    variant = EnvVariant(**ctrl.metadata.get("teacher", {}).get("variant", {}))
    n_obs = len(get_task(task).observation_features(variant))
    if n_obs != ctrl.program.obs_dim:
        raise InterpRLError(f"The controller observes {ctrl.program.obs_dim} features, but {task} gives {n_obs}; "
                            "is it a controller for another task?")
    return env_factory(task, variant), task


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
    from envs.teachers import load_teacher
    from interp_rl._validation import check_int
    from interp_rl.rollouts import EvalResult
    from interp_rl.rollouts import evaluate as run_eval

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


class _MethodCommands(typer.Typer):
    """The ``distill`` group: one command per registered method, read from the registry at every run.

    A method registered after import (a plugin, a test) is a command like the shipped ones.
    """

    @property  # type: ignore[override]
    def registered_commands(self) -> list[Any]:
        from typer.models import CommandInfo

        from distill.methods import METHODS

        return [CommandInfo(name=name, callback=_method_command(method), help=_sentence(method.description))
                for name, method in sorted(METHODS.items())]

    @registered_commands.setter
    def registered_commands(self, value: list[Any]) -> None:
        pass  # commands come from the registry


distill_app = _MethodCommands(
    help="Distil a teacher into a transparent controller, by one of the methods below.",
    rich_markup_mode=None,
    no_args_is_help=True,
    context_settings={"max_content_width": 120},
)
app.add_typer(distill_app, name="distill")


def _read_config_file(path: Path | None) -> dict[str, Any]:
    """Settings from a TOML, YAML or JSON file (keys as in a resolved config.json's ``settings``)."""
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
    for key in ("settings", "config"):  # a resolved config.json from an earlier run (older ones: "config")
        if isinstance(data, dict) and isinstance(data.get(key), dict):
            data = data[key]
            break
    if not isinstance(data, dict):
        raise InterpRLError(f"Config file {str(path)!r} must hold a table of settings.")
    return data


def _distill_command(method: Any) -> Callable[..., None]:
    """The ``interp-rl distill NAME`` command of a registered method, options generated from its declaration."""
    import inspect

    from distill.methods import JOB_OPTIONS

    defaults = method.defaults()
    common = [
        ("teacher", str, typer.Option("--teacher", help="SB3 .zip, zoo run folder, or train folder."), ...),
        ("out_dir", Path, typer.Option("--out", help="Output folder."), ...),
        ("env", str | None, typer.Option("--env", help="Task (Hopper-v5) or zoo id; must match the teacher."),
         None),
        ("algo", str | None, typer.Option("--algo", help="Teacher algorithm (detected from the zip)."), None),
        ("legacy_model", bool, typer.Option("--legacy-model", help="Walker2d: use the pre-v5 model file."), False),
        ("config", Path | None, typer.Option(
            "--config", help="TOML/YAML/JSON file of settings; options given on the command line win."), None),
        ("resume", bool, typer.Option("--resume", help="Continue an interrupted distillation in --out."), False),
        ("start", Path | None, typer.Option(
            "--start", help="Folder of a saved controller of this kind to fine-tune (--rl-steps) instead of "
                            "distilling one."), None),
    ]
    settings_opts = [(o.name, o.type, o.help) for o in method.options] + [
        (j.name, int, j.help) for j in JOB_OPTIONS]
    params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                annotation=Annotated[typ, opt]) for name, typ, opt, default in common]
    for name, typ, text in settings_opts:
        flag = "--" + name.replace("_", "-")
        shown = defaults[name] if defaults[name] is not None else "none"
        params.append(inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=None,
            annotation=Annotated[typ | None, typer.Option(flag, help=f"{text} [default: {shown}]")]))
    names = [name for name, *_ in settings_opts]

    def command(**kwargs: Any) -> None:
        given = {k: kwargs.pop(k) for k in names}
        _distill(method, given, **kwargs)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__name__ = f"distill_{method.name}"
    command.__doc__ = _sentence(method.description)
    return command


def _distill(method: Any, given: dict[str, Any], *, teacher: str, out_dir: Path, env: str | None,
             algo: str | None, legacy_model: bool, config: Path | None, resume: bool,
             start: Path | None = None) -> None:
    from distill.job import run_job
    from envs import get_task, task_signals
    from envs.teachers import load_teacher
    from interp_rl.compare import FIDELITY_NOTE
    from interp_rl.errors import InvalidParameterError

    owner = f"interp-rl distill {method.name}"
    settings = {**_read_config_file(config), **{k: v for k, v in given.items() if v is not None}}
    resolved = method.resolve(settings, owner=owner, spell=lambda n: "--" + n.replace("_", "-"), what="option")
    import torch

    torch.set_num_threads(1)
    t = load_teacher(teacher, env=env, algo=algo, legacy_model=legacy_model)
    if env is not None and get_task(env).id != t.task:
        raise InterpRLError(f"The teacher is for {t.task}, not {get_task(env).id}.")
    features, actions = task_signals(t.task, t.variant)
    provenance = {"source": t.source, "algo": t.algo, "task": t.task, "variant": t.variant}

    from interp_rl._progress import Steps

    with Steps(err) as bar:
        scratch = bool(resolved.get("scratch_steps"))
        levels = max(1, len(str(resolved.get("noise_levels") or "").split(",")))
        what = (f"Fine-tuning {start} on {t.task}" if start is not None else
                f"Training a {method.name} controller by RL from scratch on {t.task}" if scratch else
                f"Distilling {t.algo.upper()} on {t.task}")
        job = bar.task(f"{what} into {out_dir}", total=None if start is not None or scratch else
                       (resolved["iterations"] + 1) * levels, count_lines=False)
        noises: dict[int, float] = {}  # DART level index -> noise, when the recipe runs several (side by side)
        rounds: dict[int, int] = {}  # DART level index -> DAgger rounds done

        def show(description: str, **kw: Any) -> None:
            bar.update(job, description=description, **kw)

        def dart(row: dict[str, Any]) -> str:
            return f" (DART {noises[row['level']]:g})" if row.get("level") in noises else ""

        def on_round(row: dict[str, Any]) -> None:
            if row.get("stage") == "dart":
                noises[row.get("level", 0)] = row["noise"]
                show(description="DAgger with DART noise " + ", ".join(f"{v:g}" for v in noises.values()))
            elif "repair_round" in row:
                ret = row.get("return_mean")
                found = "" if row.get("failed") is None else f", {row['failed']} failed of {row['episodes']}"
                show(description=f"Repair round {row['repair_round']}{found}"
                     + (f", held-out return {ret:.0f}" if ret is not None else ""))
            elif "restart" in row:
                show(description=f"Restart {row['restart']}{dart(row)}: held-out return "
                     f"{row['return_mean']:.0f}, worst {row['return_min']:.0f}")
            elif "round" in row:
                ret = row.get("return_mean")
                rounds[row.get("level", 0)] = row["round"] + 1
                show(completed=sum(rounds.values()), description=(
                    f"DAgger round {row['round']}{dart(row)}" + (f": return {ret:.0f}" if ret == ret and ret is not None
                                                            else "")))
            elif "sweep" in row:
                show(description=f"Sparsity sweep: {row['sweep']}={row['value']}, "
                     f"{row['parameters']} parameters, return {row['return_mean']:.0f}")
            elif row.get("phase") == "scratch":
                ret = row.get("return_mean")
                show(description=f"RL from scratch: {row['step']} of {row['total']} steps"
                     + (f", return {ret:.0f}" if ret is not None else ""))
            elif "step" in row:
                show(description=f"Fine-tuning on the return: {row['step']} transitions, "
                     f"return {row['return_mean']:.0f}")
            else:
                show(description=f"Tuning leaves: update {row['iteration']}, "
                     f"return {row['return_mean']:.0f}")

        try:
            metrics = run_job(method, t, resolved, out_dir, features=features, actions=actions,
                              provenance=provenance, resume=resume, progress=on_round, start=start)
        except InvalidParameterError as exc:  # a setting that does not suit this teacher: say it as typed
            opt = method._option_for(exc)
            raise (exc.renamed(opt.flag, owner) if opt is not None else exc) from None
    kind = metrics["kind"]
    table = Table(title=f"{kind.capitalize()} controller distilled from {t.algo.upper()} on {t.task} "
                        f"({metrics['episodes']} evaluation episodes)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    size = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in metrics["size"].items())
    rows = [
        ("teacher return", f"{metrics['teacher_return']:.1f} ± {metrics['teacher_return_std']:.1f}"),
        (f"{kind} return", f"{metrics['student_return']:.1f} ± {metrics['student_return_std']:.1f}"),
        ("% of teacher (mean)", f"{metrics['percent_of_teacher']:.1f}"),
        ("% of teacher (worst episode)", f"{metrics['worst_percent_of_teacher']:.1f}"),
        ("fidelity R² (teacher states)", f"{metrics['fidelity_teacher_states']['r2']:.3f}"),
        (f"fidelity R² ({kind} states)", f"{metrics['fidelity_student_states']['r2']:.3f}"),
        *([("same class as the teacher (teacher / own states)",
            f"{metrics['fidelity_teacher_states']['agreement']:.1%} / "
            f"{metrics['fidelity_student_states']['agreement']:.1%}")]
          if "agreement" in metrics["fidelity_teacher_states"] else []),
        ("size", size),
        ("distillation seconds", f"{metrics['distill_seconds']:.0f}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    out.print(table)
    out.print(FIDELITY_NOTE, markup=False)
    if metrics.get("sweep"):
        sweep = metrics["sweep"]
        best = sweep["best_return"]
        table = Table(title=f"Sparsity sweep ({sweep['episodes']} held-out episodes each; kept: the sparsest within "
                            f"{sweep['tolerance']:.0%} of the best return)")
        for col in (sweep["param"], "non-zero parameters", "return", "worst episode", "kept"):
            table.add_column(col, justify="right")
        for i, r in enumerate(sweep["rows"]):
            table.add_row(str(r["value"] if r["value"] is not None else "none"), str(r["parameters"]),
                          f"{r['return_mean']:.1f}", f"{r['return_min']:.1f}",
                          "yes" if i == sweep["kept_index"] else "")
        out.print(table)
        out.print(f"Best return {best:.1f}; plotted in sweep.png.", markup=False)
    written = ["controller.json", "controller.py", "controller.c", "rules.txt", f"{kind}.dot"]
    if (out_dir / "distillation.npz").is_file():
        written.insert(1, "distillation.npz")
    if metrics.get("picture", "").endswith(".svg"):
        written.append(metrics["picture"])
    if metrics.get("sweep"):
        written.append("sweep.png")
    out.print(f"Wrote {', '.join(written)}, metrics.json and config.json to {out_dir}.", markup=False)
    if "picture_error" in metrics:
        out.print(f"No picture rendered: {metrics['picture_error']}", markup=False)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


_COMMANDS: dict[int, tuple[Any, Callable[..., None]]] = {}


def _method_command(method: Any) -> Callable[..., None]:
    """The command of ``method`` (built once per method object)."""
    held = _COMMANDS.get(id(method))
    if held is None or held[0] is not method:
        held = (method, cli_errors(_distill_command(method), resumable="flag"))
        _COMMANDS[id(method)] = held
    return held[1]


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

    from interp_rl.program import load_controller
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
    from envs.teachers import load_teacher
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
        "--format", help="python, c or json; repeatable [default: all three].")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite files that interp-rl did not write.")] = False,
) -> None:
    """Export a saved controller as a standalone Python module, a C file and versioned JSON."""
    from interp_rl.errors import bad_value
    from interp_rl.export import EXPORT_FILES, write_exports
    from interp_rl.program import load_controller

    ctrl = load_controller(controller)
    formats = fmt or ["python", "c", "json"]
    for f in formats:
        if f not in EXPORT_FILES:
            raise bad_value("--format", "interp-rl export", "python, c or json", f, what="option")
    for p in write_exports(ctrl, out_dir, formats, force=force).values():
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
@cli_errors(resumable="rerun")
def bench(
    suite: Annotated[str, typer.Option(
        help="A shipped suite (quick, demo, mujoco, smose, sindy, recipe) or a suite file (.toml/.yaml) to copy and "
             "edit.",
    )] = "quick",
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Results folder; a rerun continues it [default: bench-results/SUITE].")] = None,
    methods: Annotated[str | None, typer.Option(
        help="Only these methods of the suite, comma-separated.")] = None,
    seeds: Annotated[str | None, typer.Option(
        "--seeds", "--seed", help="Only these seeds, comma-separated [default: the suite's].")] = None,
    only_teachers: Annotated[str | None, typer.Option(
        help="Only these teachers of the suite (their names), comma-separated.")] = None,
    workers: Annotated[int, typer.Option(help="Cells run at once.")] = 2,
    executor: Annotated[str, typer.Option(
        help="'process' (a local process pool), 'ray' (Ray tasks) or 'inline' (one cell after another in "
             "this process).")] = "process",
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
                       seeds=_csv(seeds, "--seeds", int), teachers=_csv(only_teachers, "--only-teachers"),
                       workers=workers, executor=executor,
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
def diagnose(
    controller: Annotated[Path, typer.Argument(help="A distilled controller (its folder or controller.json).")],
    teacher: Annotated[str, typer.Option(help="The teacher it was distilled from (SB3 .zip, zoo or train folder).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.html, report.md and diagnosis.json.")],
    episodes: Annotated[int, typer.Option(help="Fresh episodes, controller and teacher on the same seeds.")] = 100,
    seed: Annotated[int | None, typer.Option(
        help="Reset seed of the first episode [default: 10000000, far from every seed distillation uses].")] = None,
    window: Annotated[int, typer.Option(help="Steps before each point of no return searched for critical states.")
                      ] = 100,
    critical: Annotated[int, typer.Option(help="Critical states kept per failed episode.")] = 5,
    horizon: Annotated[int, typer.Option(
        help="Look-ahead steps judging an action for a teacher without a Q-function (PPO, TRPO).")] = 25,
    neighbours: Annotated[int, typer.Option(help="Nearest recorded teacher states shown as evidence.")] = 5,
    data: Annotated[Path | None, typer.Option(
        help="Distillation data (a folder holding distillation.npz, or the file) [default: the controller's].")] = None,
    frames: Annotated[bool, typer.Option(help="Draw frames around the points of no return.")] = True,
    attribution: Annotated[bool, typer.Option(help="Shapley values of teacher and controller at critical states.")
                           ] = True,
    repair: Annotated[bool, typer.Option(
        help="Then repair it: targeted DAgger from the run-up to its failures, refitted as its method made it (and "
             "fine-tuned on the return if it was); written to OUT/repaired, measured before and after on other "
             "fresh episodes.")] = False,
    repair_rounds: Annotated[int, typer.Option(help="Repair rounds (each on new episodes).")] = 3,
    repair_episodes: Annotated[int, typer.Option(help="Episodes per repair round.")] = 50,
    legacy_model: Annotated[bool, typer.Option(help="Walker2d: use the pre-v5 model file.")] = False,
) -> None:
    """Find out why a controller fails where its teacher would not: failure rate, points of no return, critical
    states with the piece that acted and the evidence it rests on, piece graphs; one page (report.html)."""
    import time

    import torch

    from envs.teachers import load_teacher
    from interp_rl._validation import check_int
    from interp_rl.diagnose import DIAGNOSE_SEED
    from interp_rl.diagnose import diagnose as run_diagnosis
    from interp_rl.diagnosis_report import write_diagnosis
    from interp_rl.errors import InvalidParameterError
    from interp_rl.evidence import DATA_FILE, load_data
    from interp_rl.program import load_controller

    torch.set_num_threads(1)
    for name, value in (("episodes", episodes), ("window", window), ("critical", critical), ("horizon", horizon),
                        ("neighbours", neighbours), ("repair_rounds", repair_rounds),
                        ("repair_episodes", repair_episodes)):
        try:
            check_int(value, name, "interp-rl diagnose")
        except InvalidParameterError as exc:  # said as typed
            raise exc.renamed("--" + name.replace("_", "-"), "interp-rl diagnose") from None
    ctrl = load_controller(controller)
    t = load_teacher(teacher, env=ctrl.task or None, legacy_model=legacy_model)
    note = ""
    try:
        given = data if data is None or data.is_dir() else data.parent
        if data is not None and data.is_file() and data.name != DATA_FILE:
            raise InterpRLError(f"--data {str(data)!r}: expected a folder holding {DATA_FILE}, or that file.")
        evidence = load_data(given if given is not None else controller)
    except InterpRLError as exc:
        if data is not None or "corrupt" in str(exc):
            raise
        evidence, note = None, str(exc)
        err.print(f"Note: {note}", markup=False, soft_wrap=True)
    t0 = time.perf_counter()
    from interp_rl._progress import Steps

    with Steps(err, transient=True) as bar:
        jobs: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in jobs:
                jobs[stage] = bar.task(stage.capitalize(), total=total)
            bar.update(jobs[stage], completed=done, total=total)

        d = run_diagnosis(ctrl, t, episodes=episodes, seed=DIAGNOSE_SEED if seed is None else seed, window=window,
                          critical=critical, horizon=horizon, neighbours=neighbours, data=evidence,
                          evidence_note=note, attribution=attribution, frames=frames, progress=progress)
    repaired = None
    if repair:
        from distill.repair import repair_controller

        with Steps(err, transient=True) as bar:
            job = bar.task("Repairing")

            def on_repair(row: dict[str, Any]) -> None:
                if "repair_round" not in row:
                    text = f"Fine-tuning the repaired controller: {row.get('step')} transitions"
                elif row["repair_round"] == 0:
                    text = "Repair: the controller as it is scored on held-out episodes"
                else:
                    text = (f"Repair round {row['repair_round']}: {row['failed']} of {row['episodes']} episodes "
                            f"failed, {row['rows']} teacher-labelled states added")
                bar.update(job, description=text)

            repaired = repair_controller(controller if controller.is_dir() else controller.parent, t,
                                         out_dir / "repaired", rounds=repair_rounds, episodes=repair_episodes,
                                         window=window, measure_episodes=episodes, measure_seed=d.seed + 1_000_000,
                                         seed=0 if seed is None else seed, progress=on_repair)
    paths = write_diagnosis(d, out_dir, command=_rerun_command(False), repair=repaired)
    lo, hi = d.rate_interval
    out.print(f"{d.n_failed} of {d.episodes} episodes failed ({100 * d.rate:.1f}%, 95% interval {100 * lo:.1f}-"
              f"{100 * hi:.1f}%), below half the teacher's mean {d.teacher_mean:.1f}.")
    for fe in d.failed[:10]:
        where = "the teacher fails it too" if fe.no_return is None else f"point of no return at step {fe.no_return}"
        worst = f"; costliest step {fe.critical[0].step} ({fe.critical[0].piece_label})" if fe.critical else ""
        out.print(f"  seed {fe.seed}: {fe.percent_of_teacher:.1f}% of the teacher, {where}{worst}")
    if d.n_failed > 10:
        out.print(f"  ... and {d.n_failed - 10} more (see the report)")
    if repaired is not None:
        ba = repaired["before_after"]
        for name in ("before", "after"):
            r = ba[name]
            out.print(f"{name.capitalize()} repair, {ba['episodes']} other fresh episodes: "
                      f"{r['percent_of_teacher']:.1f}% of the teacher, worst {r['worst_percent_of_teacher']:.1f}%, "
                      f"{r['failures']} failed.")
        out.print(f"Wrote the repaired controller to {out_dir / 'repaired'}")
    out.print(f"Wrote {paths['html']}, {paths['markdown']} and {paths['json']} ({time.perf_counter() - t0:.0f} s)")


@app.command()
@cli_errors(resumable="rerun")
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


dynamics_app = typer.Typer(
    help="SINDy dynamics surrogates: fit one from rollouts, check its predictions, train an agent in it (Dyna).",
    rich_markup_mode=None,
    no_args_is_help=True,
)
app.add_typer(dynamics_app, name="dynamics")


def _rollout_policy(path: str | None, task: str) -> Any:
    """None (random actions), a saved controller, or a teacher (SB3 zip, zoo or train folder) for ``task``."""
    if path is None:
        return None
    kind, ctrl = _load_target(path)
    if kind == "controller":
        if ctrl.task and ctrl.task != task:
            raise InterpRLError(f"The controller in {path!r} is for {ctrl.task}, not {task}.")
        return ctrl
    from envs.teachers import load_teacher

    return load_teacher(path, env=task)


def _nrmse_table(evaluation: dict[str, Any], title: str) -> Table:
    table = Table(title=title)
    table.add_column("state")
    hs = [h for h in evaluation["horizons"] if str(h) in evaluation["nrmse"]]
    for h in hs:
        table.add_column(f"{h}-step", justify="right")
    for j, name in enumerate(evaluation["states"]):
        table.add_row(name, *(f"{evaluation['nrmse'][str(h)][j]:.3g}" for h in hs))
    return table


def _horizons(text: str) -> list[int]:
    from interp_rl.errors import bad_value

    try:
        hs = sorted({int(h) for h in text.split(",")})
    except ValueError:
        raise bad_value("--horizons", "interp-rl dynamics", "comma-separated step counts such as '1,10,50'",
                        text, what="option") from None
    if not hs or hs[0] < 1:
        raise bad_value("--horizons", "interp-rl dynamics", "step counts >= 1", text, what="option")
    return hs


@dynamics_app.command("fit")
@cli_errors
def dynamics_fit(
    env: Annotated[str, typer.Option(help="Task, e.g. Swimmer-v5 or Pendulum-v1.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for model.json, data.npz, equations.txt, "
                                                        "metrics.json.")],
    steps: Annotated[int, typer.Option(help="Real transitions to collect (80% fit, the last 20% of episodes "
                                            "held out).")] = 5000,
    policy: Annotated[str | None, typer.Option(help="Collect with this teacher (zip, zoo or train folder) or "
                                                    "controller folder [default: random actions].")] = None,
    action_noise: Annotated[float, typer.Option(help="Gaussian noise on the policy's actions, in half action "
                                                     "ranges.")] = 0.1,
    data: Annotated[Path | None, typer.Option(help="Fit on these transitions (a data.npz) instead of "
                                                   "collecting.")] = None,
    library: Annotated[str, typer.Option(help="Candidate terms of the states and actions, as for distill "
                                              "sindy.")] = "poly2",
    threshold: Annotated[float, typer.Option(help="Smallest standardised coefficient kept.")] = 0.02,
    models: Annotated[int, typer.Option(help="Ensemble members (bootstrap resamples).")] = 5,
    reward: Annotated[str, typer.Option(help="'auto' (the task's known formula where there is one), 'formula' or "
                                             "'model' (a SINDy reward model).")] = "auto",
    horizons: Annotated[str, typer.Option(help="Prediction horizons checked on the held-out episodes.")] = "1,10,50",
    seed: Annotated[int, typer.Option(help="Seed of the rollouts and the resamples.")] = 0,
) -> None:
    """Fit an ensemble of sparse discrete-time models x[t+1] = x[t] + f(x[t], u[t]) and a reward from rollouts."""
    from distill.dynamics import SINDyDynamics, Transitions, collect_transitions, evaluate_dynamics
    from envs.dynamics import dynamics_task
    from interp_rl._validation import check_float, check_int
    from interp_rl.io import atomic_write_text

    task = dynamics_task(env)
    check_int(steps, "--steps", "interp-rl dynamics fit", low=20)
    check_float(action_noise, "--action-noise", "interp-rl dynamics fit")
    hs = _horizons(horizons)
    if data is not None:
        transitions = Transitions.load(data)
    else:
        transitions = collect_transitions(task.env_fn, steps, policy=_rollout_policy(policy, task.task), seed=seed,
                                          action_noise=action_noise if policy else 0.0)
    fit_part, held = transitions.split(0.2)
    from interp_rl.errors import InvalidParameterError

    try:
        model = SINDyDynamics(library=library, threshold=threshold, n_models=models, reward=reward,
                              random_state=seed).fit(fit_part, task)
    except InvalidParameterError as exc:
        flags = {"library": "--library", "threshold": "--threshold", "n_models": "--models", "reward": "--reward"}
        if exc.name in flags:
            raise exc.renamed(flags[exc.name], "interp-rl dynamics fit") from None
        raise
    evaluation = evaluate_dynamics(model, held, hs)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save(out_dir / "model.json")
    transitions.save(out_dir / "data.npz")
    atomic_write_text(out_dir / "equations.txt", "\n".join(model.equations()) + "\n")
    metrics = {"task": task.task, "transitions": len(transitions), "fitted_on": len(fit_part),
               "held_out": len(held), "source": policy or "random", "size": model.size(),
               "held_out_evaluation": evaluation, "seed": seed}
    atomic_write_text(out_dir / "metrics.json", json.dumps(metrics, indent=1) + "\n")
    out.print(_nrmse_table(evaluation, f"{task.task}: prediction error on held-out episodes (RMSE / std; "
                                       f"reward {evaluation['reward_rmse']:.3g})"))
    size = model.size()
    out.print(f"{size['members']} members of about {size['nonzero_terms_per_member']} terms each"
              + (f", reward model {size['reward_terms']} terms" if size["reward_terms"] else ", known reward")
              + f". Wrote model.json, data.npz, equations.txt and metrics.json to {out_dir}.", markup=False)


@dynamics_app.command("evaluate")
@cli_errors
def dynamics_evaluate(
    model_dir: Annotated[Path, typer.Argument(help="A folder written by interp-rl dynamics fit (or its "
                                                   "model.json).")],
    steps: Annotated[int, typer.Option(help="Fresh real transitions to test on.")] = 2000,
    policy: Annotated[str | None, typer.Option(help="Collect them with this teacher or controller [default: "
                                                    "random actions].")] = None,
    action_noise: Annotated[float, typer.Option(help="Gaussian noise on the policy's actions.")] = 0.1,
    horizons: Annotated[str, typer.Option(help="Prediction horizons.")] = "1,10,50",
    seed: Annotated[int, typer.Option(help="Seed of the test rollouts.")] = 12345,
) -> None:
    """One-step and multi-step prediction error per named state on fresh episodes; evaluation.json and .png."""
    from distill.dynamics import SINDyDynamics, collect_transitions, evaluate_dynamics, prediction_figure
    from envs.dynamics import REWARDS, dynamics_task
    from interp_rl._validation import check_int
    from interp_rl.io import atomic_write_text

    check_int(steps, "--steps", "interp-rl dynamics evaluate", low=2)
    folder = model_dir if model_dir.is_dir() else model_dir.parent
    raw = SINDyDynamics.load(model_dir)
    model = SINDyDynamics.load(model_dir, reward_fn=REWARDS.get(raw.task_))
    task = dynamics_task(model.task_)
    test = collect_transitions(task.env_fn, steps, policy=_rollout_policy(policy, task.task), seed=seed,
                               action_noise=action_noise if policy else 0.0)
    evaluation = evaluate_dynamics(model, test, _horizons(horizons))
    evaluation.update({"source": policy or "random", "seed": seed, "transitions": steps})
    atomic_write_text(folder / "evaluation.json", json.dumps(evaluation, indent=1) + "\n")
    prediction_figure(evaluation, folder / "evaluation.png", f"{task.task}: SINDy surrogate prediction error")
    out.print(_nrmse_table(evaluation, f"{task.task}: prediction error on {evaluation['episodes']} fresh episodes "
                                       f"(RMSE / std; reward {evaluation['reward_rmse']:.3g})"))
    out.print(f"Wrote evaluation.json and evaluation.png to {folder}.", markup=False)


@dynamics_app.command("train")
@cli_errors(resumable="flag")
def dynamics_train(
    env: Annotated[str, typer.Option(help="Task, e.g. Swimmer-v5 or Pendulum-v1.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for dyna/, model-free/ and curves.png.")],
    real_steps: Annotated[int, typer.Option(help="Real environment steps of the Dyna loop, in all.")] = 20000,
    initial_steps: Annotated[int, typer.Option(help="Random-action steps before the first fit.")] = 4000,
    iterations: Annotated[int, typer.Option(help="Fit - train in the surrogate - collect rounds.")] = 8,
    model_steps: Annotated[int, typer.Option(help="Agent steps in the surrogate per round.")] = 20000,
    horizon: Annotated[int, typer.Option(help="Longest surrogate episode.")] = 200,
    library: Annotated[str, typer.Option(help="Candidate terms of the dynamics, as for distill sindy (e.g. "
                                              "poly2+fourier1).")] = "poly2",
    threshold: Annotated[float, typer.Option(help="SINDy threshold of the dynamics.")] = 0.02,
    uncertainty_penalty: Annotated[float, typer.Option(help="Taken off each surrogate reward per state spread of "
                                                            "the members' disagreement, in standard deviations of "
                                                            "the real rewards (MOPO; 0: none).")] = 0.0,
    warm_start: Annotated[bool, typer.Option(help="Continue the last round's agent in the new model (else a new "
                                                  "agent each round).")] = True,
    algo: Annotated[str, typer.Option(help="SB3 algorithm, with the shipped hyperparameters.")] = "sac",
    baseline_steps: Annotated[int, typer.Option(help="Real steps of the model-free baseline (0: no "
                                                     "baseline).")] = 100000,
    eval_every: Annotated[int, typer.Option(help="Baseline evaluation every this many real steps.")] = 5000,
    eval_episodes: Annotated[int, typer.Option(help="Real episodes per evaluation (not counted as training "
                                                    "steps).")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of everything.")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run in --out.")] = False,
) -> None:
    """SINDy-RL's Dyna loop against the model-free agent on the same task; learning curves in real steps."""
    from distill.dynamics import (
        SINDyDynamics,
        collect_transitions,
        learning_curve_figure,
        steps_to_reach,
        train_dyna,
        train_model_free,
    )
    from envs.dynamics import SB3Agents, dynamics_task
    from interp_rl.errors import InvalidParameterError, bad_value

    task = dynamics_task(env)
    agents = SB3Agents(algo, task.task)
    if not (math.isfinite(uncertainty_penalty) and uncertainty_penalty >= 0):
        raise bad_value("--uncertainty-penalty", "interp-rl dynamics train", "a finite number >= 0",
                        uncertainty_penalty, what="option")
    try:  # the model's options, checked before any environment step
        SINDyDynamics(library=library, threshold=threshold).fit(collect_transitions(task.env_fn, 20, seed=seed),
                                                                task)
    except InvalidParameterError as exc:
        if exc.name in ("library", "threshold"):
            raise exc.renamed(f"--{exc.name}", "interp-rl dynamics train") from None
        raise

    def say(row: dict[str, Any]) -> None:
        what = "Dyna" if "iteration" in row else "model-free"
        err.print(f"{what}: {row['real_steps']} real steps, return {row['return_mean']:.1f}", markup=False)

    dyna = train_dyna(task, agents, out_dir / "dyna", real_steps=real_steps, initial_steps=initial_steps,
                      iterations=iterations, model_steps=model_steps, horizon=horizon,
                      eval_episodes=eval_episodes, uncertainty_penalty=uncertainty_penalty,
                      warm_start=warm_start, seed=seed,
                      resume=resume or (out_dir / "dyna").exists(),
                      model_params={"library": library, "threshold": threshold}, progress=say)
    curves = {"SINDy surrogate (Dyna)": [dyna["curve"]]}
    free = None
    if baseline_steps > 0:
        free = train_model_free(task, agents, out_dir / "model-free", real_steps=baseline_steps,
                                eval_every=eval_every, eval_episodes=eval_episodes, seed=seed,
                                resume=resume or (out_dir / "model-free").exists(), progress=say)
        curves[f"{agents.algo.upper()} model-free"] = [free["curve"]]
    learning_curve_figure(curves, out_dir / "curves.png", f"{task.task}: return against real steps")
    final = dyna["curve"][-1]
    out.print(f"Dyna: return {final['return_mean']:.1f} after {final['real_steps']} real steps.", markup=False)
    if free is not None:
        level = free["curve"][-1]["return_mean"]
        reach = steps_to_reach(dyna["curve"], level)
        out.print(f"Model-free: return {level:.1f} after {free['curve'][-1]['real_steps']} real steps; Dyna "
                  + (f"reaches it after {reach} ({free['curve'][-1]['real_steps'] / reach:.1f}x fewer)."
                     if reach else "does not reach it."), markup=False)
    out.print(f"Wrote curves.png, dyna/ and model-free/ to {out_dir}.", markup=False)


def _versions() -> dict[str, str]:
    from interp_rl.provenance import versions

    return versions()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
