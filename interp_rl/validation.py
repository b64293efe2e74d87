"""Parameter checks that produce one-line, template-shaped error messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interp_rl.errors import ObservationError, bad_value

__all__ = ["check_choice", "check_finite", "check_float", "check_int", "check_observations"]


def check_int(value: Any, name: str, owner: str, *, low: int = 1, high: int | None = None) -> int:
    """Return ``value`` as an int or raise an error naming the parameter.

    Examples
    --------
    >>> check_int(3, "episodes", "evaluate")
    3
    >>> check_int(0, "episodes", "evaluate")
    Traceback (most recent call last):
    ...
    interp_rl.errors.InvalidParameterError: The 'episodes' parameter of evaluate must be an int in [1, inf). Got 0 instead.
    """
    upper = "inf)" if high is None else f"{high}]"
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if ok and value >= low and (high is None or value <= high):
        return int(value)
    raise bad_value(name, owner, f"an int in [{low}, {upper}", value)


def check_float(
    value: Any,
    name: str,
    owner: str,
    *,
    low: float = 0.0,
    high: float = float("inf"),
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a float or raise an error naming the parameter.

    Examples
    --------
    >>> check_float(0.5, "beta", "DAgger", high=1.0)
    0.5
    >>> check_float(-1, "beta", "DAgger", high=1.0)
    Traceback (most recent call last):
    ...
    interp_rl.errors.InvalidParameterError: The 'beta' parameter of DAgger must be a float in [0.0, 1.0]. Got -1 instead.
    """
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if ok:
        v = float(value)
        above = v > low if low_open else v >= low
        below = v < high if high_open else v <= high
        if np.isfinite(v) and above and below:
            return v
    lo = "(" if low_open else "["
    hi = ")" if high_open or high == float("inf") else "]"
    raise bad_value(name, owner, f"a float in {lo}{low}, {high}{hi}", value)


def check_choice(value: Any, name: str, owner: str, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices`` or raise an error listing them.

    Examples
    --------
    >>> check_choice("linear", "leaf_model", "TreePolicy", ["constant", "linear"])
    'linear'
    >>> check_choice("cubic", "leaf_model", "TreePolicy", ["constant", "linear"])
    Traceback (most recent call last):
    ...
    interp_rl.errors.InvalidParameterError: The 'leaf_model' parameter of TreePolicy must be one of 'constant', 'linear'. Got 'cubic' instead.
    """
    if isinstance(value, str) and value in choices:
        return value
    options = ", ".join(repr(c) for c in choices)
    raise bad_value(name, owner, f"one of {options}", value)


def check_observations(
    obs: Any,
    expected_dim: int,
    *,
    owner: str,
    task: str | None = None,
    feature_names: Sequence[str] | None = None,
) -> tuple[np.ndarray, bool]:
    """Validate a batch (or one) observation; return ``(obs_2d, was_single)``.

    Raises :class:`ObservationError` naming both sizes and the task on a shape
    mismatch, and the first offending feature on NaN/inf values.
    """
    try:
        arr = np.asarray(obs, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ObservationError(
            f"obs must be a numeric array of shape (n, {expected_dim}) for {owner}; {exc}."
        ) from None
    single = arr.ndim == 1
    if single:
        arr = arr[None, :]
    where = f" ({task})" if task else ""
    if arr.ndim != 2 or arr.shape[1] != expected_dim:
        got = arr.shape[-1] if arr.ndim >= 1 else 0
        raise ObservationError(
            f"obs has {got} features, but {owner} expects {expected_dim}{where}."
        )
    check_finite(arr, owner, task=task, feature_names=feature_names)
    return arr, single


def check_finite(arr: np.ndarray, owner: str, *, what: str = "obs", task: str | None = None,
                 feature_names: Sequence[str] | None = None) -> None:
    """Raise :class:`ObservationError` naming the first non-finite value of ``arr`` ``(n, d)``: its feature
    (by name when given) and row.

    >>> check_finite(np.array([[0.0, np.nan]]), "explain", what="states", feature_names=["x", "v"])
    Traceback (most recent call last):
    ...
    interp_rl.errors.ObservationError: states holds a non-finite value (nan) at feature 'v' (row 0) given to explain; states must be finite.
    """
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        fname = feature_names[col] if feature_names is not None and col < len(feature_names) else f"index {col}"
        where = f" ({task})" if task else ""
        plural = "observations" if what == "obs" else what
        raise ObservationError(
            f"{what} holds a non-finite value ({arr[row, col]}) at feature '{fname}' "
            f"(row {row}) given to {owner}{where}; {plural} must be finite."
        )
