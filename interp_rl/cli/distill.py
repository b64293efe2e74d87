"""``interp-rl distill METHOD``: one command per registered distiller, its options read from the registry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from interp_rl.cli._app import (
    _read_config_file,
    _sentence,
    app,
    cli_errors,
    err,
    out,
)
from interp_rl.errors import InterpRLError


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




def _distill_command(method: Any) -> Callable[..., None]:
    """The ``interp-rl distill NAME`` command of a registered method, options generated from its declaration."""
    import inspect

    from distill.methods import JOB_OPTIONS

    defaults = method.defaults()
    common = [
        ("teacher", str | None, typer.Option(
            "--teacher", help="SB3 .zip, zoo run folder, or train folder; or a saved controller (its folder or "
                              "controller.json) to distil into a smaller one (or --data: learn from a log instead)."),
         None),
        ("out_dir", Path, typer.Option("--out", help="Output folder."), ...),
        ("data", str | None, typer.Option(
            "--data", help="Learn from a log instead of a teacher (behaviour cloning): a .csv or .parquet file whose "
                           "columns LOG.schema.toml beside it (or --schema) names, or a Minari dataset (its folder, or "
                           "the id of a local one). Only the student's options and --seed apply."), None),
        ("schema", Path | None, typer.Option(
            "--schema", help="With --data: the log's schema (TOML or JSON) naming its feature and action columns "
                             "[default: LOG.schema.toml beside the log]."), None),
        ("held_out", float | None, typer.Option(
            "--held-out", help="With --data: the share of the log held out to measure fidelity, as whole episodes "
                               "(the schema's episode column) or contiguous blocks of rows [default: 0.2]."), None),
        ("env", str | None, typer.Option(
            "--env", help="Task (Hopper-v5) or zoo id; must match the teacher (with --data: the task the log comes "
                          "from, to measure the controller's return too)."), None),
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
    if method.budgets:  # named recipes: their settings over the defaults, under the flags given
        recipes = "; ".join(f"'{name}': " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in sets.items())
                            for name, sets in method.budgets.items())
        settings_opts.append(("budget", str, f"A named recipe: 'default' (about half an hour on 2 cores) or {recipes} "
                                             "(hours: run it in the background; --resume continues it)."))
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


def _distill(method: Any, given: dict[str, Any], *, teacher: str | None, out_dir: Path, env: str | None,
             algo: str | None, legacy_model: bool, config: Path | None, resume: bool,
             start: Path | None = None, data: str | None = None, schema: Path | None = None,
             held_out: float | None = None) -> None:
    if data is not None:
        if teacher is not None:
            raise InterpRLError("Give --teacher (an agent to distil) or --data (a log to learn from), not both.")
        about_teacher = [flag for flag, value in (("--algo", algo), ("--legacy-model", legacy_model),
                                                  ("--resume", resume), ("--start", start)) if value]
        if about_teacher:
            verb = "does" if len(about_teacher) == 1 else "do"
            raise InterpRLError(f"{', '.join(about_teacher)} {verb} not apply with --data: "
                                f"{'it is' if len(about_teacher) == 1 else 'they are'} about distilling a teacher.")
        _distill_log(method, given, data=data, schema=schema, held_out=0.2 if held_out is None else held_out,
                     out_dir=out_dir, env=env, config=config)
        return
    if teacher is None:
        raise InterpRLError("Give --teacher (an agent to distil) or --data (a log to learn from).")
    if schema is not None or held_out is not None:
        raise InterpRLError(f"{'--schema' if schema is not None else '--held-out'} goes with --data (a log to learn "
                            "from).")
    from distill.job import run_job
    from envs import get_task, task_signals
    from envs.loading import is_controller_path, load_teacher
    from interp_rl.compare import FIDELITY_NOTE
    from interp_rl.errors import InvalidParameterError

    owner = f"interp-rl distill {method.name}"
    settings = {**_read_config_file(config), **{k: v for k, v in given.items() if v is not None}}
    resolved = method.resolve(settings, owner=owner, spell=lambda n: "--" + n.replace("_", "-"), what="option")
    import torch

    torch.set_num_threads(1)
    if is_controller_path(teacher):  # a saved controller as the teacher: a big one distilled into a smaller one
        given_flags = [flag for flag, value in (("--algo", algo), ("--legacy-model", legacy_model)) if value]
        if given_flags:
            raise InterpRLError(f"{given_flags[0]} is about SB3 agents; the teacher {teacher!r} is a saved "
                                "controller.")
        from envs.controllers import ControllerTeacher
        from interp_rl.program import load_controller

        ct = ControllerTeacher(load_controller(teacher), source=str(teacher), env=env)
        features, actions = ct.controller.features, ct.controller.actions
        t: Any = ct
        source = f"a {ct.algo} controller"
    else:
        t = load_teacher(teacher, env=env, algo=algo, legacy_model=legacy_model)
        if env is not None and get_task(env).id != t.task:
            raise InterpRLError(f"The teacher is for {t.task}, not {get_task(env).id}.")
        features, actions = task_signals(t.task, t.variant)
        source = t.algo.upper()
    provenance = {"source": t.source, "algo": t.algo, "task": t.task, "variant": t.variant}

    from distill.events import (
        DaggerRound,
        DartLevel,
        FineTuneStep,
        LevelChosen,
        ProgressEvent,
        RepairRound,
        RestartScored,
        ScratchStep,
        SearchStep,
        StageNote,
        SweepFit,
        as_event,
    )
    from interp_rl._progress import Steps

    with Steps(err) as bar:
        scratch = bool(resolved.get("scratch_steps"))
        levels = max(1, len(str(resolved.get("noise_levels") or "").split(",")))
        what = (f"Fine-tuning {start} on {t.task}" if start is not None else
                f"Training a {method.name} controller by RL from scratch on {t.task}" if scratch else
                f"Distilling {source} on {t.task}")
        job = bar.task(f"{what} into {out_dir}", total=None if start is not None or scratch else
                       (resolved["iterations"] + 1) * levels, count_lines=False)
        noises: dict[int, float] = {}  # DART level index -> noise, when the recipe runs several (side by side)
        rounds: dict[int, int] = {}  # DART level index -> DAgger rounds done

        said: list[bool] = []

        def show(description: str, **kw: Any) -> None:
            if not said:  # what runs, and where to: the log's first line, with the first step (a run refused
                said.append(True)  # while its settings are checked prints only its error)
                bar.update(job, description=bar.description(job))
            bar.update(job, description=description, **kw)


        def dart(event: ProgressEvent) -> str:
            return f" (DART {noises[event.level]:g})" if event.level in noises else ""

        def on_round(event: ProgressEvent) -> None:
            match as_event(event):
                case DartLevel(noise=noise, level=level):
                    noises[level or 0] = noise
                    show(description="DAgger with DART noise " + ", ".join(f"{v:g}" for v in noises.values()))
                case RepairRound(repair_round=n, return_mean=ret, failed=failed, episodes=episodes):
                    found = "" if failed is None else f", {failed} failed of {episodes}"
                    show(description=f"Repair round {n}{found}"
                         + (f", held-out return {ret:.0f}" if ret is not None else ""))
                case RestartScored(restart=k, return_mean=ret, return_min=worst) as e:
                    show(description=f"Restart {k}{dart(e)}: held-out return {ret:.0f}, worst {worst:.0f}")
                case DaggerRound(round=n, return_mean=ret, level=level) as e:
                    rounds[level or 0] = n + 1
                    show(completed=sum(rounds.values()), description=(
                        f"DAgger round {n}{dart(e)}" + (f": return {ret:.0f}" if ret == ret and ret is not None
                                                        else "")))
                case SweepFit(param=param, value=value, parameters=size, return_mean=ret):
                    show(description=f"Sparsity sweep: {param}={value}, {size} parameters, return {ret:.0f}")
                case ScratchStep(step=step, total=total, return_mean=ret):
                    show(description=f"RL from scratch: {step} of {total} steps"
                         + (f", return {ret:.0f}" if ret is not None else ""))
                case LevelChosen(noise=noise, return_mean=ret, return_min=worst):
                    show(description=f"Fine-tuned DART {noise:g}: further held-out return {ret:.0f}, "
                         f"worst {worst:.0f}")
                case FineTuneStep(step=step, return_mean=ret, total=total, seconds=spent) as e:
                    rate = step / spent if spent else None  # transitions (and their updates) a second
                    pace = "" if rate is None else f", {rate:.0f} transitions/s"
                    if rate and total and total > step:
                        pace += f", about {(total - step) / rate / 60:.0f} min left"
                    show(description=f"Fine-tuning on the return{dart(e)}: {step}"
                         + (f" of {total}" if total else "") + f" transitions, return {ret:.0f}{pace}")
                case SearchStep(iteration=it, return_mean=ret):
                    show(description=f"Tuning leaves: update {it}, return {ret:.0f}")
                case StageNote(stage=stage, text=text):
                    show(description=f"{stage}: {text}")

        try:
            metrics = run_job(method, t, resolved, out_dir, features=features, actions=actions,
                              provenance=provenance, resume=resume, progress=on_round, start=start)
        except InvalidParameterError as exc:  # a setting that does not suit this teacher: say it as typed
            opt = method._option_for(exc)
            raise (exc.renamed(opt.flag, owner) if opt is not None else exc) from None
    kind = metrics["kind"]
    table = Table(title=f"{kind.capitalize()} controller distilled from {source} on {t.task} "
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




def _distill_log(method: Any, given: dict[str, Any], *, data: str, schema: Path | None, held_out: float,
                 out_dir: Path, env: str | None, config: Path | None) -> None:
    """``interp-rl distill METHOD --data LOG``: behaviour cloning from a log (:func:`distill.logged.fit_from_log`)."""
    from dataclasses import replace

    from distill.logged import check_held_out, check_log_settings, fit_from_log
    from interp_rl._progress import Steps
    from interp_rl.logged_data import read_log

    owner = f"interp-rl distill {method.name}"

    def spell(name: str) -> str:
        return "--" + name.replace("_", "-")

    settings = {**_read_config_file(config), **{k: v for k, v in given.items() if v is not None}}
    check_log_settings(method, settings, owner=owner, spell=spell)
    method.resolve(settings, owner=owner, spell=spell, what="option")  # a bad value, said as typed, before reading
    check_held_out(held_out, owner)
    if (out_dir / "metrics.json").exists():
        raise InterpRLError(f"{str(out_dir)!r} already holds a distilled controller; choose another --out.")
    logged = read_log(data, schema)
    env_fn = None
    if env is not None:
        from envs import env_factory, get_task, task_signals

        task = get_task(env).id
        env_fn = env_factory(task)
        features, actions = task_signals(task)
        if not logged.named and len(features) == len(logged.features) and len(actions) == logged.n_outputs:
            logged = logged.renamed(features, actions)  # a log without a schema: the task's names
        logged = replace(logged, task=task)
    with Steps(err) as bar:
        job = bar.task(f"Learning a {method.name} controller from {data} into {out_dir}", total=None,
                       count_lines=False)

        def on_step(row: dict[str, Any]) -> None:
            if row["stage"] == "fit":
                bar.update(job, description=bar.description(job))  # what runs, and where to: the log's first line
                bar.update(job, description=f"Fitting to {row['rows']} rows ({row['held_out_rows']} held out)")
            else:
                bar.update(job, description=f"Running the controller on {logged.task}: {row['episodes']} episodes")

        metrics = fit_from_log(method, logged, settings, out_dir, held_out=held_out, env_fn=env_fn,
                               progress=on_step)
    _print_log_metrics(metrics, logged, data)
    written = ["controller.json", "distillation.npz", "controller.py", "controller.c", "rules.txt",
               metrics["picture"]]
    out.print(f"Wrote {', '.join(written)}, metrics.json and config.json to {out_dir}.", markup=False)
    if "picture_error" in metrics:
        out.print(f"No picture rendered: {metrics['picture_error']}", markup=False)


def _print_log_metrics(metrics: dict[str, Any], logged: Any, data: str) -> None:
    """What a controller learnt from a log got, as tables: fidelity on the held-out rows (a discrete action's
    confusion matrix too) and, with an environment, its return."""
    split, held, fitted = metrics["split"], metrics["fidelity_held_out"], metrics["fidelity_train"]
    if split["unit"] == "episode":
        units = f"{split['column']} {', '.join(map(str, split['held_out_units']))}"
    else:
        units = f"{len(split['held_out_units'])} of {len(split['held_out_units']) + len(split['train_units'])} " \
                "blocks of rows"
    kind = metrics["kind"]
    table = Table(title=f"{kind.capitalize()} controller learnt from {data} (held out: {units}; "
                        f"{split['held_out_rows']} of {split['held_out_rows'] + split['train_rows']} rows)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows: list[tuple[str, str]] = []
    if metrics["discrete"]:
        action = logged.actions[0]
        unit = f" {action.unit}" if action.unit else ""
        rows += [(f"held-out accuracy ({action.name} class)", f"{held['accuracy']:.1%}"),
                 (f"always playing the most common class ({held['majority_class']}{unit})",
                  f"{held['majority_accuracy']:.1%}"),
                 ("held-out mean absolute error", f"{held['mean_abs_error']:.2f}{unit}"),
                 ("accuracy on the rows fitted", f"{fitted['accuracy']:.1%}")]
    else:
        for a in logged.actions:
            unit = f" {a.unit}" if a.unit else ""
            rows += [(f"held-out R² ({a.name})", f"{held['r2_per_action'][a.name]:.3f}"),
                     (f"held-out RMSE ({a.name})", f"{held['rmse_per_action'][a.name]:.3g}{unit}")]
        rows.append(("R² on the rows fitted (mean over actions)", f"{fitted['r2']:.3f}"))
    if "student_return" in metrics:
        rows += [(f"return on {metrics['task']} ({metrics['episodes']} episodes)",
                  f"{metrics['student_return']:.1f} ± {metrics['student_return_std']:.1f}"),
                 ("worst episode", f"{metrics['worst_student_return']:.1f}")]
        if "logged_return" in metrics:
            rows.append((f"the log's own episodes ({metrics['logged_episodes']})", f"{metrics['logged_return']:.1f}"))
    size = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in metrics["size"].items())
    rows += [("size", size), ("fitting seconds", f"{metrics['distill_seconds']:.1f}")]
    for name, value in rows:
        table.add_row(name, value)
    out.print(table)
    if metrics["discrete"]:
        matrix = held["confusion_matrix"]
        action = logged.actions[0]
        cm = Table(title=f"Held-out rows by logged (down) and played (across) {action.label}")
        cm.add_column("logged")
        for c in matrix["classes"]:
            cm.add_column(str(c), justify="right")
        for c, counts in zip(matrix["classes"], matrix["counts"], strict=True):
            cm.add_row(str(c), *(str(v) if v else "." for v in counts))
        out.print(cm)


_COMMANDS: dict[int, tuple[Any, Callable[..., None]]] = {}


def _method_command(method: Any) -> Callable[..., None]:
    """The command of ``method`` (built once per method object)."""
    held = _COMMANDS.get(id(method))
    if held is None or held[0] is not method:
        held = (method, cli_errors(_distill_command(method), resumable="flag"))
        _COMMANDS[id(method)] = held
    return held[1]


