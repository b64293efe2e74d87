"""The formatters every section of a report shares: numbers (:func:`fmt`, :func:`seconds`, :func:`estimate`), file
names (:func:`slug`), and what a group's figures say (:func:`fidelity`, :func:`below_count`, :func:`kind_title`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.records import Group

__all__ = ["below_count", "estimate", "fidelity", "fidelity_name", "fmt", "kind_title", "seconds", "slug"]


def fmt(v: float | None, spec: str = ".1f") -> str:
    """``v`` formatted with ``spec``, or ``–`` for a missing or non-finite value.

    >>> fmt(3.14159), fmt(None), fmt(float("nan")), fmt(2.5, ".0f")
    ('3.1', '–', '–', '2')
    """
    return "–" if v is None or not np.isfinite(v) else format(v, spec)


def slug(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``-``, ``_`` and ``.`` kept, anything else ``-``.

    >>> slug("HalfCheetah-SAC moe (recipe)")
    'HalfCheetah-SAC-moe--recipe-'
    """
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)


def seconds(s: float | None) -> str:
    """A duration in the unit that suits it, three significant digits; ``–`` when missing.

    >>> seconds(2.5), seconds(0.00123), seconds(4.2e-6), seconds(3e-9), seconds(None)
    ('2.5 s', '1.23 ms', '4.2 µs', '3 ns', '–')
    """
    if s is None or not np.isfinite(s):
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def estimate(e: dict[str, Any]) -> str:
    """A group's IQM with its interval (:func:`benchmarks.stats.interval_estimate`); the IQM alone for one run.

    >>> estimate({"iqm": 91.24, "ci_low": 88.0, "ci_high": 93.5, "runs": 3}), estimate({"iqm": 90.0, "runs": 1})
    ('91.2 [88.0, 93.5]', '90.0')
    """
    if not e:
        return "–"
    if e["runs"] < 2:
        return f"{e['iqm']:.1f}"
    return f"{e['iqm']:.1f} [{e['ci_low']:.1f}, {e['ci_high']:.1f}]"


def fidelity(g: Group, states: str) -> str:
    """Action fidelity on ``states`` (``teacher_states`` or ``student_states``): R², or for discrete actions the
    share of states where the controller picks the teacher's class (R² of class indices means little)."""
    same = g.mean("fidelity", states, "agreement")
    return f"{100 * same:.0f}% same" if same is not None else fmt(g.mean("fidelity", states, "r2"), ".2f")


def fidelity_name(groups: list[Group]) -> str:
    """The heading of the fidelity column: R², saying what it is for discrete actions when some group has them."""
    discrete = any(g.mean("fidelity", "student_states", "agreement") is not None for g in groups)
    return "fidelity R²" + (" (discrete actions: % of states with the teacher's class)" if discrete else "")


def below_count(g: Group) -> str:
    """Episodes below half the teacher's mean, as a count: "3 of 100" ("–" without episodes)."""
    flags = g.failure_flags()
    return f"{sum(flags)} of {len(flags)}" if flags else "–"


def kind_title(kind: str) -> str:
    """What a kind of controller is called in headings: its program's ``title``, else its name capitalised.

    >>> kind_title("no-such-kind")
    'No-such-kind'
    """
    from interp_rl.program import PROGRAMS

    return getattr(PROGRAMS.get(kind), "title", "") or kind.capitalize()
