"""The ``interp-rl`` command line: a thin shell over the library, one module per command group.

Each command parses its options, calls library functions that do the work and the writing, and turns
library errors into a one-line message on stderr with exit status 1 (:func:`~interp_rl.cli._app.cli_errors`).
"""

from __future__ import annotations

from interp_rl.cli import (  # noqa: F401 - registers them
    bench,
    diagnose,
    distill,
    dynamics,
    importing,
    inspect,
    tasks,
    train,
    verify,
)
from interp_rl.cli._app import app

__all__ = ["app", "main"]

#: The order ``interp-rl --help`` lists the commands in: a user's workflow (the groups follow).
ORDER = ("train", "evaluate", "import", "viz", "explain", "export", "verify", "diagnose", "bench", "report", "demo")
app.registered_commands.sort(key=lambda c: ORDER.index(c.name or c.callback.__name__))  # type: ignore[union-attr]


def main() -> None:
    """Console-script entry point."""
    app()
