"""Errors raised by interp-rl.

Every error a user can cause derives from :class:`InterpRLError`; the CLI turns
them into a one-line message and a non-zero exit status.
"""

from __future__ import annotations

__all__ = [
    "InterpRLError",
    "InvalidParameterError",
    "ObservationError",
    "TeacherLoadError",
    "UnknownAlgorithmError",
    "UnknownTaskError",
]


class InterpRLError(Exception):
    """Base class of every error caused by bad input."""


class InvalidParameterError(InterpRLError, ValueError):
    """A parameter is outside its allowed range."""


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
