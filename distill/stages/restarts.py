"""The restarts: the final student refitted with other seeds on its data, the best on held-out episodes kept."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone

from distill.events import RestartScored
from distill.stages.base import Stage, StageContext, StageResult, refit_like, register_stage
from interp_rl.errors import bad_value
from interp_rl.seeds import RESTART_SEED_OFFSET

__all__ = ["Restarts"]


@register_stage
class Restarts(Stage):
    """Fits of the final student on the final data, each with another seed (``random_state + 1000 k``), scored on
    ``episodes`` held-out episodes (the mean of the mean return and of the worst quarter's); the best is kept
    (``Distillation(restarts=...)``). A student's fit is a draw, and a closed loop makes small differences large.

    Parameters
    ----------
    n : int, default=1
        Fits, the student's own included (1: only the student's own, scored when ``score_one``).
    episodes : int, default=20
        Held-out episodes scoring each fit.
    score_one : bool, default=False
        Score the student even when ``n`` is 1 (DART levels are compared on these scores).
    """

    name = "restarts"
    per_level = True
    needs_data = True
    needs_data_error = ("Restarts refit the student on its distillation data; they need DAgger (not --start or "
                        "training from scratch).")

    def __init__(self, n: int = 1, episodes: int = 20, score_one: bool = False) -> None:
        self.n = n
        self.episodes = episodes
        self.score_one = score_one

    def active(self) -> bool:
        return self.n > 1 or self.score_one

    def fit(self, student: Any, context: StageContext) -> StageResult:
        assert context.data is not None  # needs_data
        X, y, w = context.data
        params = student.get_params(deep=False)
        if "random_state" not in params and self.n > 1:
            raise bad_value("restarts", "Distillation", f"1 for a {type(student).__name__} (it takes no seed)",
                            self.n)
        base = int(params.get("random_state") or 0)
        rows, students = [], []
        for k in range(self.n):
            cand = student if k == 0 else refit_like(clone(student).set_params(random_state=base + 1000 * k), X, y, w,
                                                     w is not None)
            score, mean, worst = self.held_out(cand, context, self.episodes, RESTART_SEED_OFFSET)
            rows.append({"restart": k, "random_state": base + 1000 * k, "score": score, "return_mean": mean,
                         "return_min": worst})
            students.append(cand)
            self.emit(context, RestartScored(**rows[-1]))
        kept = int(np.argmax([r["score"] for r in rows]))
        return StageResult(student=students[kept], record={"rows": rows, "kept": kept, "episodes": self.episodes},
                           score=rows[kept]["score"])
