"""The ``interp-rl`` application and what every command shares: consoles, one-line errors, small readers."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from interp_rl._progress import line_console
from interp_rl.errors import InterpRLError

__all__ = ["app", "cli_errors", "err", "out"]

app = typer.Typer(
    name="interp-rl",
    help="Turn black-box deep RL policies into controllers a person can read, check and ship.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)


out: Console = line_console()  # each wraps only on a terminal: piped output keeps long lines whole
err: Console = line_console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int = 1) -> None:
    err.print(f"Error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


def _rerun_command(resume_flag: bool) -> str:
    """The command line that continues the interrupted one (with ``--resume`` where it takes one)."""
    import shlex

    argv = [a for a in sys.argv[1:]]
    learning_from_a_log = "--data" in argv  # fitted in one go: the same command starts it again
    if resume_flag and "--resume" not in argv and not learning_from_a_log:
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
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
          trust_pickles: Annotated[bool, typer.Option(
              "--trust-pickles", help="Load SB3 zips with SB3's own loader, which unpickles every field and can run "
                                      "code from the file: only for a file you vouch for. By default only the "
                                      "fields an agent needs are read, through an allow-list.")] = False) -> None:
    """Turn black-box deep RL policies into controllers a person can read, check and ship."""
    if trust_pickles:
        import os

        from envs.sb3 import TRUST_PICKLES_ENV

        os.environ[TRUST_PICKLES_ENV] = "1"  # the commands' loaders read it (and the workers they start inherit it)



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
    """The environment factory a saved controller runs in: its own task (and variant), or ``--env``
    (:func:`envs.controllers.controller_env`)."""
    from envs.controllers import controller_env

    log = ctrl.metadata.get("log")
    if not env and isinstance(log, dict):  # learnt from a log: its task may be a plant interp-rl cannot simulate
        from envs import TASKS, resolve_task
        from interp_rl.errors import UnknownTaskError

        try:
            resolve_task(ctrl.task)
        except UnknownTaskError:
            raise InterpRLError(
                f"The controller was learnt from the log {log.get('path')!r} for "
                f"{repr(ctrl.task) if ctrl.task else 'an unnamed task'}, "
                f"which is no task interp-rl can simulate ({', '.join(TASKS)}); its fidelity on the log's held-out "
                "rows is in its metrics.json. Pass --env TASK if the log comes from one of them.") from None
    return controller_env(ctrl, env)



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



def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")



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



def _rollout_policy(path: str | None, task: str) -> Any:
    """None (random actions), a saved controller, or a teacher (SB3 zip, zoo or train folder) for ``task``."""
    if path is None:
        return None
    kind, ctrl = _load_target(path)
    if kind == "controller":
        if ctrl.task and ctrl.task != task:
            raise InterpRLError(f"The controller in {path!r} is for {ctrl.task}, not {task}.")
        return ctrl
    from envs.loading import load_teacher

    return load_teacher(path, env=task)



def _versions() -> dict[str, str]:
    from interp_rl.provenance import versions

    return versions()

