"""Pieces every program kind uses to write itself out: exact literals, affine expressions, readable numbers.

Two audiences, two sets of helpers:

* generated code (:mod:`interp_rl.export`): :func:`lit` prints the shortest decimal that reads
  back as the same double, :func:`affine_parts` and :func:`assignment` write
  ``y = c0 + c1 * obs[j1] - c2 * obs[j2]`` in the contract's evaluation order;
* text for people (:mod:`interp_rl.viz`): :func:`fixed`, :func:`compact`, :func:`apart` round
  for reading only, and :func:`affine_text` writes ``0.1 - 0.3*vx`` in named features.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "WIDTH",
    "affine_parts",
    "affine_text",
    "apart",
    "assignment",
    "comment",
    "compact",
    "count",
    "fixed",
    "lit",
]

WIDTH = 100  # generated lines longer than this are wrapped (one term per line)


# ------------------------------------------------------------------------------ code
def lit(value: float) -> str:
    """Exact literal of a finite double, valid in Python and C (``repr`` always has ``.`` or ``e``).

    >>> lit(0.1), lit(-2.0), lit(1e-300)
    ('0.1', '-2.0', '1e-300')
    """
    from interp_rl.errors import ExportError

    text = repr(float(value))
    if not math.isfinite(float(value)):
        raise ExportError(f"Cannot write the non-finite number {text} as a literal.")
    return text


def comment(text: str) -> str:
    """``text`` made safe for a one-line comment in Python or C."""
    safe = "".join(ch if ch.isprintable() else "?" for ch in text)
    return safe.replace("*/", "* /")


def affine_parts(intercept: float, terms: Sequence[tuple[int, float]]) -> list[str]:
    """``["0.25", "+ 2.0 * obs[1]", "- 3.0 * obs[4]"]``: ``intercept + sum c_j obs[j]`` in evaluation order.

    A negative coefficient is written ``- |c| * obs[j]``, which IEEE 754 defines to be the same
    operation as adding ``c * obs[j]``.

    >>> affine_parts(0.25, [(1, 2.0), (4, -3.0)])
    ['0.25', '+ 2.0 * obs[1]', '- 3.0 * obs[4]']
    """
    parts = [lit(intercept)]
    for j, c in terms:
        sign = "-" if math.copysign(1.0, c) < 0 else "+"
        parts.append(f"{sign} {lit(abs(c))} * obs[{j}]")
    return parts


def assignment(indent: str, target: str, parts: list[str], end: str, *, python: bool) -> list[str]:
    """``target = parts...`` on one line, or one term per line when too long (order unchanged).

    >>> assignment("    ", "y0", ["1.0", "+ 2.0 * obs[0]"], ";", python=False)
    ['    y0 = 1.0 + 2.0 * obs[0];']
    """
    line = f"{indent}{target} = {' '.join(parts)}{end}"
    if len(line) <= WIDTH or len(parts) == 1:
        return [line]
    if python:  # parentheses keep the continuation; a + b + c still groups as (a + b) + c
        head = f"{indent}{target} = ("
        pad = " " * len(head)
        return [head + parts[0]] + [pad + p for p in parts[1:-1]] + [pad + parts[-1] + ")" + end]
    head = f"{indent}{target} = "
    pad = " " * len(head)
    return [head + parts[0]] + [pad + p for p in parts[1:-1]] + [pad + parts[-1] + end]


# ------------------------------------------------------------------------------ text
def tanh_squash_lines(low: Iterable[float], high: Iterable[float], *, python: bool) -> list[str]:
    """``y0 = low + 0.5 * (tanh(y0) + 1.0) * (high - low)`` per action: the ``squash="tanh"`` step."""
    end, tanh = ("", "math.tanh") if python else (";", "tanh")
    return [f"y{o} = {lit(lo)} + 0.5 * ({tanh}(y{o}) + 1.0) * ({lit(hi)} - {lit(lo)}){end}"
            for o, (lo, hi) in enumerate(zip(low, high, strict=True))]


def fixed(v: float, precision: int) -> str:
    """``v`` with ``precision`` decimals; never ``-0``; tiny non-zero values keep significant digits.

    >>> fixed(0.21, 3), fixed(-0.0001, 3), fixed(-0.0, 2)
    ('0.210', '-0.0001', '0.00')
    """
    s = f"{v:.{precision}f}"
    if float(s) == 0.0:
        return f"{v:.{max(precision, 1)}g}" if v != 0.0 else s.lstrip("-")
    return s


def compact(v: float, precision: int) -> str:
    """Like :func:`fixed` without trailing zeros: ``0.21`` rather than ``0.210``."""
    s = fixed(v, precision)
    if "." in s and "e" not in s:
        s = s.rstrip("0").rstrip(".")
    return s


def apart(a: float, b: float, precision: int) -> tuple[str, str]:
    """Compact ``a`` and ``b`` with just enough extra digits that unequal values read as unequal.

    >>> apart(0.2001, 0.2, 3)
    ('0.2001', '0.2')
    """
    p = precision
    while True:
        sa, sb = compact(a, p), compact(b, p)
        if sa != sb or a == b or p >= 17:
            return sa, sb
        p += 1


def count(n: float) -> str:
    """A (weighted) count: ``1234``, or ``12.5`` when it is not whole."""
    return str(int(n)) if float(n).is_integer() else compact(n, 2)


def affine_text(
    intercept: float,
    terms: Sequence[tuple[int, float]],
    names: Sequence[str],
    fmt: Callable[[float], str],
    max_terms: int | None = None,
) -> str:
    """``intercept + c*name - c*name`` for people; the intercept is left out when 0.

    With ``max_terms``, only the largest coefficients are shown (in feature order) and the rest
    summarised as ``+ … (k more terms)``.

    >>> affine_text(0.1, [(1, -0.3)], ["angle", "vx"], lambda v: f"{v:g}")
    '0.1 - 0.3*vx'
    >>> affine_text(0.0, [(0, 2.0)], ["angle"], lambda v: f"{v:g}")
    '2*angle'
    """
    terms = list(terms)
    hidden = 0
    if max_terms is not None and len(terms) > max_terms:
        # Keep the largest coefficients (ties: lower feature index), shown in feature order.
        keep = sorted(sorted(range(len(terms)), key=lambda i: -abs(terms[i][1]))[:max_terms])
        hidden = len(terms) - max_terms
        terms = [terms[i] for i in keep]
    parts = [fmt(intercept)] if intercept != 0.0 or not terms else []
    for j, c in terms:
        term = f"{fmt(abs(c))}*{names[j]}"
        if parts:
            parts.append(("- " if c < 0 else "+ ") + term)
        else:
            parts.append(("-" if c < 0 else "") + term)
    if hidden:
        parts.append(f"+ … ({hidden} more terms)")
    return " ".join(parts)
