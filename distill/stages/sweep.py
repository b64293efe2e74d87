"""The sparsity sweep: the student refitted at several sizes, the sparsest good one kept."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone

from distill.events import SweepFit
from distill.stages.base import Stage, StageContext, StageResult, register_stage
from interp_rl.seeds import SWEEP_SEED_OFFSET

__all__ = ["SparsitySweep"]


@register_stage
class SparsitySweep(Stage):
    """Refit DAgger's student at each value of ``param`` on the selected round's data, score each fit by its return
    on ``episodes`` held-out episodes, and keep the sparsest (fewest non-zero parameters) within ``tolerance`` of the
    best return (``Distillation(sweep=...)``).

    Parameters
    ----------
    values : list
        The values of ``param`` to try besides the student's own (``None``: the parameter's "none").
    param : str
        The student parameter the sweep sets (the method's size, e.g. ``max_terms``).
    tolerance : float, default=0.05
        Keep the sparsest fit whose return is at least ``best - tolerance * |best|``.
    episodes : int, default=10
        Held-out episodes scoring each fit.
    """

    name = "sweep"
    per_level = True
    needs_data = True

    def __init__(self, values: list[Any] | None = None, param: str = "", tolerance: float = 0.05,
                 episodes: int = 10) -> None:
        self.values = values
        self.param = param
        self.tolerance = tolerance
        self.episodes = episodes

    def active(self) -> bool:
        return bool(self.values)

    def fit(self, student: Any, context: StageContext) -> StageResult:
        from interp_rl.rollouts import evaluate

        dagger = context.dagger
        assert dagger is not None  # needs_data
        n = dagger.n_samples_used_
        X, y, w = dagger.X_[:n], dagger.y_[:n], dagger.sample_weight_[:n]
        base = dagger.student_
        start = base.get_params(deep=False)[self.param]
        rows: list[dict[str, Any]] = []
        students: list[Any] = []
        for value in [start, *[v for v in self.values or () if v != start]]:
            fit = clone(base).set_params(**{self.param: value})
            fit = fit.fit(X, y, sample_weight=w) if dagger.weighting_ == "critic" else fit.fit(X, y)
            res = evaluate(fit, context.env_fn, self.episodes, seed=context.seed + SWEEP_SEED_OFFSET,
                           n_envs=context.n_envs)
            size = fit.to_controller().size()
            row = {"sweep": self.param, "value": value, **size, "return_mean": res.mean_return,
                   "return_min": float(np.min(res.returns)), "return_std": res.std_return}
            rows.append(row)
            students.append(fit)
            self.emit(context, SweepFit(param=self.param, value=value, parameters=row["parameters"],
                                        return_mean=row["return_mean"], details=row))
        best = max(r["return_mean"] for r in rows)
        good = [i for i, r in enumerate(rows) if r["return_mean"] >= best - self.tolerance * abs(best)]
        kept = min(good, key=lambda i: (rows[i]["parameters"], -rows[i]["return_mean"]))
        record = {"param": self.param, "tolerance": self.tolerance, "episodes": self.episodes, "rows": rows,
                  "best_return": best, "kept": rows[kept]["value"], "kept_index": kept}
        return StageResult(student=students[kept], record=record)
