"""Every error interp-rl raises on purpose, in one hierarchy.

Errors a user can cause derive from :class:`InterpRLError`; the CLI turns them into a one-line
message and exit status 1. A long run that was stopped (Ctrl-C, SIGTERM) raises a subclass of
:class:`Interrupted`, which keeps its completed work; the CLI maps it to exit status 130 and prints
the command that continues it.

Bad parameter values all read the same way (:func:`bad_value` writes the template)::

    The 'max_depth' parameter of TreePolicy must be an int in [1, 32]. Got 0 instead.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ControllerFormatError",
    "DistillInterrupted",
    "ExportError",
    "InterpRLError",
    "Interrupted",
    "InvalidParameterError",
    "LogError",
    "ObservationError",
    "RenderError",
    "SuiteError",
    "TeacherLoadError",
    "TrainInterrupted",
    "UnknownAlgorithmError",
    "UnknownTaskError",
    "bad_value",
]

_MISSING = object()


class InterpRLError(Exception):
    """Base class of every error caused by bad input."""


class InvalidParameterError(InterpRLError, ValueError):
    """A parameter is outside its allowed range.

    Built by :func:`bad_value`, it keeps what the message says (``name``, ``owner``,
    ``expected``, ``value``) so a front end can say it again in its own words: the CLI names
    ``--max-leaves`` where the library names ``max_leaves``.
    """

    def __init__(self, message: str, *, name: str | None = None, owner: str | None = None,
                 expected: str | None = None, value: Any = _MISSING, what: str = "parameter") -> None:
        super().__init__(message)
        self.name, self.owner, self.expected, self.value, self.what = name, owner, expected, value, what

    def renamed(self, name: str, owner: str, what: str = "option") -> InvalidParameterError:
        """The same complaint about ``name`` of ``owner`` (a CLI option, a suite key)."""
        if self.expected is None or self.value is _MISSING:
            return self
        return bad_value(name, owner, self.expected, self.value, what=what)


def bad_value(name: str, owner: str, expected: str, value: Any, *, what: str = "parameter"
              ) -> InvalidParameterError:
    """The one template for a bad value: ``The 'NAME' WHAT of OWNER must be EXPECTED. Got VALUE instead.``

    >>> str(bad_value("max_depth", "TreePolicy", "an int in [1, 32]", 0))
    "The 'max_depth' parameter of TreePolicy must be an int in [1, 32]. Got 0 instead."
    >>> str(bad_value("max_depth", "TreePolicy", "an int in [1, 32]", 0).renamed("--max-depth", "distill tree"))
    "The '--max-depth' option of distill tree must be an int in [1, 32]. Got 0 instead."
    """
    return InvalidParameterError(
        f"The '{name}' {what} of {owner} must be {expected}. Got {value!r} instead.",
        name=name, owner=owner, expected=expected, value=value, what=what,
    )


class UnknownTaskError(InterpRLError, KeyError):
    """A task id is not in the registry."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not.
        return str(self.args[0]) if self.args else ""


class UnknownAlgorithmError(InterpRLError, ValueError):
    """An algorithm name is not one interp-rl can load or train."""


class ObservationError(InterpRLError, ValueError):
    """Observations have the wrong size or hold non-finite values."""


class TeacherLoadError(InterpRLError, OSError):
    """A teacher file is missing, unreadable or corrupt."""


class LogError(InterpRLError, ValueError):
    """A log to learn from (CSV, Parquet, a Minari dataset) or its schema is missing, malformed or unusable."""


class ControllerFormatError(InterpRLError, ValueError):
    """A saved controller file is corrupt, truncated or of an unknown version."""


class ExportError(InterpRLError, RuntimeError):
    """A controller cannot be exported, compiled or loaded back."""


class RenderError(InterpRLError):
    """DOT text could not be turned into an image (no ``dot`` program, unknown format, bad DOT)."""


class SuiteError(InterpRLError):
    """A benchmark suite file is missing or malformed."""


class Interrupted(InterpRLError):
    """A long run was stopped (Ctrl-C, SIGTERM); what it completed is kept and it can be resumed."""


class DistillInterrupted(Interrupted):
    """A distillation was interrupted; completed rounds are kept in its checkpoint folder."""


class TrainInterrupted(Interrupted):
    """Training was interrupted; the last checkpoint is kept."""
