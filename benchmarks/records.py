"""Benchmark records grouped for reports: a :class:`Group` is one (teacher, method, size) over its seeds,
with its IQM and interval (:func:`summarise`), the sizes chosen per method and the all-task aggregate."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.stats import interval_estimate
from interp_rl.compare import half_of_teacher, percent_of_teacher

__all__ = ["Group", "TARGET", "aggregate", "chosen", "first_number", "left_out_of_aggregate", "num", "percent",
           "summarise"]

TARGET = 90.0

@dataclass
class Group:
    """All seeds of one (task, method, size)."""

    task: str
    teacher: str
    method: str
    size: Any
    records: list[dict[str, Any]] = field(default_factory=list)
    estimate: dict[str, float | int] = field(default_factory=dict)

    def mean(self, *path: str) -> float | None:
        vals = []
        for r in self.records:
            v: Any = r
            for key in path:
                v = v.get(key) if isinstance(v, dict) else None
            if v is not None:
                vals.append(float(v))
        return float(np.mean(vals)) if vals else None

    @property
    def seeds(self) -> list[int]:
        return [r["cell"]["seed"] for r in self.records]

    @property
    def percents(self) -> list[float]:
        return [num(r["percent_of_teacher"]) for r in self.records]

    @property
    def mean_percent(self) -> float:
        """The mean of the seeds' % of teacher (NaN without seeds)."""
        return float(np.mean(self.percents)) if self.percents else float("nan")

    @property
    def worst_percent(self) -> float:
        """The worst single episode over all seeds, as % of its cell's teacher mean return."""
        worst = [percent_of_teacher(min(r["student"]["returns"]), r["teacher"]["return_mean"]) for r in self.records
                 if r["student"].get("returns") and r["teacher"].get("return_mean")]
        return min(worst) if worst else float("nan")

    def failure_flags(self) -> list[bool]:
        """Per episode, over all seeds: below half its cell's teacher mean. The suite's failure-rate episodes
        (``rate_episodes``) where a record has them, else its evaluation episodes."""
        flags: list[bool] = []
        for r in self.records:
            fail = r.get("failures")
            if fail:
                flags += [ret < fail["threshold"] for ret in fail["returns"]]
            elif r["teacher"].get("return_mean"):
                half = half_of_teacher(r["teacher"]["return_mean"])
                flags += [ret < half for ret in r["student"].get("returns") or []]
        return flags

    @property
    def below_half(self) -> float:
        """Share (%) of episodes whose return is below half the teacher's mean (see :meth:`failure_flags`)."""
        flags = self.failure_flags()
        return 100.0 * float(np.mean(flags)) if flags else float("nan")

    @property
    def teacher_reference(self) -> tuple[float, float]:
        """The teacher against itself on its evaluation episodes, all seeds: (worst episode %, % below half).

        What the worst-episode and below-half figures mean depends on the task: on Reacher the teacher's
        own episodes spread (the target's distance sets the cost), so it falls below half its mean itself.
        """
        worst, flags = [], []
        for r in self.records:
            t = r["teacher"]
            if t.get("returns") and t.get("return_mean"):
                worst.append(percent_of_teacher(min(t["returns"]), t["return_mean"]))
                flags += [ret < half_of_teacher(t["return_mean"]) for ret in t["returns"]]
        return (min(worst) if worst else float("nan"), 100.0 * float(np.mean(flags)) if flags else float("nan"))

    def median_record(self) -> dict[str, Any]:
        runs = sorted(self.records, key=lambda r: num(r["percent_of_teacher"]))
        return runs[(len(runs) - 1) // 2]

def percent(v: float | None) -> float | None:
    """A share as a percentage (``None`` stays ``None``).

    >>> percent(0.25), percent(None)
    (25.0, None)
    """
    return None if v is None else 100.0 * v

def first_number(*values: float) -> float:
    """The first value that is a number (not NaN), else NaN.

    >>> first_number(float("nan"), 3.0, 4.0)
    3.0
    """
    return next((v for v in values if v == v), float("nan"))

def num(v: Any) -> float:
    """A record's value as a float, NaN where it is missing (``None``, as JSON writes a non-finite number).

    >>> num(None), num(2)
    (nan, 2.0)
    """
    return float("nan") if v is None else float(v)

def _size_key(size: Any) -> tuple[int, float, str]:
    return (0, float(size), "") if isinstance(size, (int, float)) else (1, 0.0, str(size))

def summarise(records: list[dict[str, Any]], *, reps: int = 2000, seed: int = 0) -> dict[str, list[Group]]:
    """Teacher name -> its groups (method, size), each with the IQM estimate of % of teacher."""
    groups: dict[tuple[str, str, str], Group] = {}
    for r in records:
        key = (r["cell"]["teacher"], r["method"], json.dumps(r["cell"]["size"]))
        g = groups.setdefault(key, Group(r["task"], r["cell"]["teacher"], r["method"], r["cell"]["size"]))
        g.records.append(r)
    out: dict[str, list[Group]] = defaultdict(list)
    for g in groups.values():
        g.records.sort(key=lambda r: r["cell"]["seed"])
        pct = np.array([p for p in g.percents if np.isfinite(p)])
        g.estimate = interval_estimate(pct[:, None], reps=reps, seed=seed) if len(pct) else {}
        out[g.teacher].append(g)
    for gs in out.values():
        gs.sort(key=lambda g: (g.method, _size_key(g.size)))
    return dict(sorted(out.items()))

def chosen(groups: list[Group]) -> dict[str, Group]:
    """Per method: the smallest size whose IQM reaches 90% of the teacher, else the best one."""
    picks: dict[str, Group] = {}
    for method in dict.fromkeys(g.method for g in groups):
        mine = [g for g in groups if g.method == method and g.estimate]
        if not mine:
            continue
        ok = [g for g in mine if g.estimate["iqm"] >= TARGET]
        picks[method] = (min(ok, key=lambda g: (g.mean("size", "parameters") or 0, -g.estimate["iqm"])) if ok
                         else max(mine, key=lambda g: g.estimate["iqm"]))
    return picks

def aggregate(summary: dict[str, list[Group]], *, reps: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """IQM of % of teacher over all tasks (runs x tasks, stratified by task) per (method, size) that ran on
    every task, over the seeds every task ran (a seed some task lacks is left out, so every task weighs the
    same). See :func:`left_out_of_aggregate` for the (method, size) pairs that cannot be aggregated."""
    rows = []
    for (method, size), (per_task, seeds, matrix) in _aggregable(summary)[0].items():
        params = float(np.mean([g.mean("size", "parameters") or 0 for g in per_task.values()]))
        rows.append({"method": method, "size": json.loads(size), "tasks": len(per_task), "seeds": seeds,
                     "parameters": params, **interval_estimate(matrix, reps=reps, seed=seed)})
    rows.sort(key=lambda r: (r["method"], _size_key(r["size"])))
    return rows

def left_out_of_aggregate(summary: dict[str, list[Group]]) -> list[str]:
    """Why each (method, size) missing from :func:`aggregate` is missing: tasks it did not run on, no seed
    that every task ran, or a score that is not a number."""
    return _aggregable(summary)[1]

def _aggregable(summary: dict[str, list[Group]]) -> tuple[dict[tuple[str, str], Any], list[str]]:
    """Per (method, size): its groups by task, the seeds every task ran and the (seeds, tasks) score
    matrix; and, for those that cannot be aggregated, why."""
    if len(summary) < 2:
        return {}, []
    by_key: dict[tuple[str, str], dict[str, Group]] = defaultdict(dict)
    for teacher, groups in summary.items():
        for g in groups:
            by_key[(g.method, json.dumps(g.size))][teacher] = g
    ok, left = {}, []
    for (method, size), per_task in by_key.items():
        name = f"{method} {json.loads(size)}"
        if len(per_task) != len(summary):
            missing = sorted(set(summary) - set(per_task))
            left.append(f"{name}: ran on {len(per_task)} of {len(summary)} tasks (not on {', '.join(missing)})")
            continue
        seeds = sorted(set.intersection(*(set(g.seeds) for g in per_task.values())))
        if not seeds:
            left.append(f"{name}: no seed that every task ran")
            continue
        matrix = np.array([[p for s, p in zip(g.seeds, g.percents, strict=True) if s in seeds]
                           for g in per_task.values()]).T  # (seeds, tasks)
        if not np.isfinite(matrix).all():
            left.append(f"{name}: a % of teacher that is not a number")
            continue
        ok[(method, size)] = (per_task, seeds, matrix)
    return ok, sorted(left)
