"""A student fitted on some of the observation features only: "how many sensors does this controller need?"."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from distill._student import PolicyStudent
from interp_rl.errors import bad_value
from interp_rl.program import Program

__all__ = ["FeatureSubset"]


class FeatureSubset(PolicyStudent):
    """Fit ``student`` on the observation columns ``columns`` only; the fitted program reads the full observation.

    The inner student sees ``X[:, columns]``; its program is then widened (``Program.widened``) so that the
    controller takes the same raw observations as the teacher, named as they are, and ignores the other
    features. Any student whose program kind can be widened works (trees, linear policies, mixtures, SINDy).

    Parameters
    ----------
    student : estimator
        The student to fit (a clone is fitted).
    columns : sequence of int
        The observation features it may read, e.g. the top-k of the teacher's Shapley ranking
        (:func:`interp_rl.attribution.feature_ranking`).

    Examples
    --------
    >>> import numpy as np
    >>> from distill.linear import LinearPolicy
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> s = FeatureSubset(student=LinearPolicy(), columns=[2]).fit(X, 3 * X[:, 2] + X[:, 0])
    >>> s.program_.coef.round(0).tolist()  # reads only column 2, though column 0 mattered too
    [[0.0, 0.0, 3.0]]
    """

    def __init__(self, *, student: Any = None, columns: Any = ()) -> None:
        self.student = student
        self.columns = columns

    @property
    def program_kind(self) -> str:  # type: ignore[override]
        return str(getattr(self.student, "program_kind", ""))

    def _validate_params(self) -> None:
        if self.student is None or not hasattr(self.student, "fit"):
            raise bad_value("student", "FeatureSubset", "a student estimator", self.student)
        check = getattr(self.student, "_validate_params", None)
        if callable(check):
            check()

    def _columns(self, n_features: int) -> list[int]:
        cols = [int(c) for c in np.asarray(self.columns, dtype=np.int64).ravel()] if len(self.columns) else []
        if not cols or len(set(cols)) != len(cols) or not all(0 <= c < n_features for c in cols):
            raise bad_value("columns", "FeatureSubset", f"distinct feature indices in [0, {n_features})",
                            list(self.columns))
        return cols

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> FeatureSubset:
        """Fit a clone of ``student`` on ``X[:, columns]`` and widen its program to ``X``'s features."""
        self._validate_params()
        X, Y, w = self._fit_inputs(X, y, sample_weight)
        cols = sorted(self._columns(X.shape[1]))  # increasing: the widened program adds terms in the same order
        self.student_ = clone(self.student).fit(X[:, cols], Y, sample_weight=w)
        self.program_: Program = self.student_._fitted_program().widened(cols, X.shape[1])
        self.columns_ = cols
        return self

    def fit_facts(self) -> dict[str, Any]:
        """The columns read, and what the inner student reports of its fit."""
        check_is_fitted(self)
        return {"columns": self.columns_, **getattr(self.student_, "fit_facts", dict)()}
