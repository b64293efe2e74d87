"""Progress for people and for logs: a rich bar on a terminal, plain time-stamped lines otherwise."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

__all__ = ["Steps", "line_console"]


def line_console(stderr: bool = False) -> Any:
    """A rich console on stdout (or stderr) that wraps only for a terminal: piped into a log or a file, each
    line stays whole, however long.

    >>> import contextlib, io
    >>> buf = io.StringIO()
    >>> with contextlib.redirect_stdout(buf):
    ...     line_console().print("x" * 150)
    >>> buf.getvalue().count("\\n")
    1
    """
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    terminal = stream.isatty()
    return Console(stderr=stderr, highlight=False, width=None if terminal else 1000, soft_wrap=not terminal)


class Steps:
    """Show a long run's progress on ``console``.

    On a terminal, a rich progress bar (one row per task). Piped to a file or a CI log, one plain
    line per change instead, prefixed with the time since the start (``[2:05] DAgger round 3``): a
    line whenever a task's description changes and, for a counted task, at every tenth of its total; nothing
    before a task's first update (a run refused at once prints only its error).

    Parameters
    ----------
    console : rich.console.Console
        Where to show it (the CLI's stderr console).
    terminal : bool, optional
        Draw the bar; default: whether the console writes to a terminal.
    transient : bool
        Remove the bar when done (terminal only).

    Examples
    --------
    >>> import io
    >>> from rich.console import Console
    >>> log = io.StringIO()
    >>> with Steps(Console(file=log, width=80), terminal=False) as steps:
    ...     job = steps.task("Explaining", total=4)
    ...     for _ in range(4):
    ...         steps.update(job, advance=1)
    >>> print(log.getvalue(), end="")
    [0:00] Explaining: 1 of 4
    [0:00] Explaining: 2 of 4
    [0:00] Explaining: 3 of 4
    [0:00] Explaining: 4 of 4
    """

    def __init__(self, console: Any, *, terminal: bool | None = None, transient: bool = False) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.console = console
        self.terminal = console.is_terminal if terminal is None else terminal
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                             TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                             TimeRemainingColumn(), console=console, transient=transient,
                             disable=not self.terminal)
        self._started = time.monotonic()
        self._said: dict[int, tuple[str, int]] = {}  # task -> (description, tenth of the total) last said
        self._uncounted: set[int] = set()

    def __enter__(self) -> Steps:
        self._bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._bar.__exit__(kind, exc, tb)

    def task(self, description: str, total: float | None = None, *, count_lines: bool = True) -> int:
        """Start a task; returns its id for :meth:`update`. ``count_lines=False``: a log line only when the
        description changes (it says the step itself), without ``: 3 of 10``."""
        job = self._bar.add_task(description, total=total)
        if not count_lines:
            self._uncounted.add(job)
        return job

    def update(self, task: int, *, description: str | None = None, completed: float | None = None,
               advance: float | None = None, total: float | None = None) -> None:
        """Change a task's description, count or total (as ``rich.progress.Progress.update``)."""
        kw = {k: v for k, v in (("description", description), ("completed", completed), ("advance", advance),
                                ("total", total)) if v is not None}
        self._bar.update(task, **kw)
        self._say(task)

    def description(self, task: int) -> str:
        """A task's description as shown now."""
        return next(t.description for t in self._bar.tasks if t.id == task)

    def line(self, text: str) -> None:
        """One line above the bar on a terminal, or in the log, time-stamped like the progress lines."""
        self.console.print(text if self.terminal else f"[{self.clock()}] {text}", markup=False, highlight=False)

    def clock(self) -> str:
        """Time since the start, ``m:ss``."""
        minutes, seconds = divmod(int(time.monotonic() - self._started), 60)
        return f"{minutes}:{seconds:02d}"

    def _say(self, job: int) -> None:
        if self.terminal:
            return
        t = next((t for t in self._bar.tasks if t.id == job), None)
        if t is None:
            return
        total = t.total
        counted = bool(total) and t.completed > 0 and job not in self._uncounted
        tenth = int(10 * t.completed / total) if counted and total else -1
        if self._said.get(job) == (t.description, tenth):
            return
        self._said[job] = (t.description, tenth)
        text = t.description
        if counted:
            text += f": {t.completed:g} of {total:g}"
        self.console.print(f"[{self.clock()}] {text}", markup=False, highlight=False)
