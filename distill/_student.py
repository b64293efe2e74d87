"""What every student estimator shares: fitted on raw observations, clipped actions out, a Controller at the end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from interp_rl.errors import bad_value
from interp_rl.program import Controller, Program, Signal

__all__ = ["PolicyStudent", "check_bounds", "check_sample_weight"]


class PolicyStudent(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Base of the students: subclasses fit a program kind and keep it in ``_program_attr``.

    Gives them the same input checks in ``fit`` (:meth:`_fit_inputs`), the same ``predict``
    (the program's own arithmetic) and the same ``to_controller``.
    """

    #: Attribute holding the fitted program (``program_``; ``tree_`` for trees).
    _program_attr: ClassVar[str] = "program_"
    #: The program kind the student fits (``Program.kind``).
    program_kind: ClassVar[str] = ""

    def _fitted_program(self) -> Program:
        return getattr(self, self._program_attr)

    @classmethod
    def from_program(cls, program: Program) -> Any:
        """A fitted student (default parameters) running ``program``, e.g. a saved controller's, to fine-tune it."""
        if getattr(program, "kind", None) != cls.program_kind:
            raise bad_value("program", f"{cls.__name__}.from_program", f"a {cls.program_kind} program",
                            getattr(program, "kind", program))
        new = cls()
        setattr(new, cls._program_attr, program)
        new.n_features_in_, new.n_outputs_, new._y_1d = program.obs_dim, program.act_dim, False
        return new

    def with_program(self, program: Program) -> Any:
        """A fitted copy of this estimator that runs ``program`` (after editing or tuning)."""
        check_is_fitted(self)
        new = type(self)(**self.get_params())
        setattr(new, self._program_attr, program)
        for name in ("n_features_in_", "n_outputs_", "_y_1d", "feature_names_in_"):
            if hasattr(self, name):
                setattr(new, name, getattr(self, name))
        return new

    def _fit_inputs(self, X: Any, y: Any, sample_weight: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(X, Y, w)``: observations, actions as a 2-D array and checked weights; sets the fitted shapes."""
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        self._y_1d = y.ndim == 1
        Y = y.reshape(len(y), -1).astype(np.float64)
        self.n_outputs_ = Y.shape[1]
        return X, Y, check_sample_weight(sample_weight, len(X), type(self).__name__)

    def predict(self, X: Any) -> np.ndarray:
        """Actions ``(n, act_dim)`` for raw observations ``X`` ``(n, obs_dim)``."""
        program = getattr(self, self._program_attr, None)
        if not (program is not None and type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2
                and len(X) and X.shape[1] == getattr(self, "n_features_in_", None)
                and not hasattr(self, "feature_names_in_") and np.isfinite(X).all()):
            # anything but what scikit-learn's checks would pass through unchanged (a rollout's observations,
            # at every step, skip them: they took three quarters of a small student's time) is checked
            check_is_fitted(self)
            X = validate_data(self, X, reset=False, dtype=np.float64)
            program = self._fitted_program()
        out = program.predict(X)
        return out[:, 0] if self._y_1d else out

    def to_controller(
        self,
        features: Sequence[str | Signal] | None = None,
        actions: Sequence[str | Signal] | None = None,
        *,
        task: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> Controller:
        """The fitted program as a :class:`~interp_rl.program.Controller` with named features and actions.

        Examples
        --------
        >>> import numpy as np
        >>> from distill.tree import TreePolicy
        >>> from interp_rl.viz import export_text
        >>> X = np.linspace(-1, 1, 50)[:, None]
        >>> tree = TreePolicy(max_depth=1, leaf_model="constant").fit(X, np.sign(X))
        >>> print(export_text(tree.to_controller(["pole_angle"], ["push"])))
        |--- pole_angle <= 0.000
        |   |--- leaf 1: push = -1.000   (50% of data)
        |--- pole_angle >  0.000
        |   |--- leaf 2: push = 1.000   (50% of data)
        """
        check_is_fitted(self)
        return Controller(self._fitted_program(), features=list(features or []), actions=list(actions or []),
                          task=task, metadata=dict(metadata or {}))


def check_bounds(action_low: Any, action_high: Any, n_out: int, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """Action bounds as arrays of ``n_out`` (``None``: unbounded), checked for ``low <= high``."""

    def one(v: Any, fill: float) -> np.ndarray:
        if v is None:
            return np.full(n_out, fill)
        return np.broadcast_to(np.asarray(v, dtype=np.float64), (n_out,)).copy()

    low, high = one(action_low, -np.inf), one(action_high, np.inf)
    if np.any(low > high):
        raise bad_value("action_low", owner, f"<= action_high {high.tolist()} everywhere", low.tolist())
    return low, high


def check_sample_weight(sample_weight: Any, n: int, owner: str) -> np.ndarray:
    """``sample_weight`` as ``n`` finite non-negative floats with a positive sum (``None``: all ones)."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise bad_value("sample_weight", f"{owner}.fit", f"{n} finite non-negative values",
                        f"an array of shape {w.shape}" if w.shape != (n,) else "negative or non-finite values")
    if not w.sum() > 0:
        raise bad_value("sample_weight", f"{owner}.fit", "weights with at least one non-zero value", "all zeros")
    return w
