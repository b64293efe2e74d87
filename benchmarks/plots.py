"""The report's plots: % of teacher against size per teacher (with the Pareto front) and over all tasks."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.records import TARGET, Group
from interp_rl.document import png as _png
from interp_rl.document import pyplot as _pyplot

__all__ = ["aggregate_plot", "pareto_front", "pareto_plot"]


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both size (smaller) and score (larger), by size.

    >>> pareto_front([(10, 50.0), (20, 40.0), (30, 90.0), (5, 10.0)])
    [(5, 10.0), (10, 50.0), (30, 90.0)]
    """
    front: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or y > front[-1][1]:
            front.append((x, y))
    return front

def pareto_plot(teacher: str, groups: list[Group]) -> bytes:
    """% of teacher (IQM, 95% CI) against parameters, one line per method, the Pareto front dashed."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    pts = []
    for method in dict.fromkeys(g.method for g in groups):
        mine = [g for g in groups if g.method == method and g.estimate]
        if not mine:
            continue
        x = np.array([g.mean("size", "parameters") or np.nan for g in mine])
        y = np.array([g.estimate["iqm"] for g in mine])
        lo = y - np.array([g.estimate["ci_low"] for g in mine])
        hi = np.array([g.estimate["ci_high"] for g in mine]) - y
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=method)
        for g, xi, yi in zip(mine, x, y, strict=True):
            ax.annotate(str(g.size), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
        pts += list(zip(x.tolist(), y.tolist(), strict=True))
    front = pareto_front([p for p in pts if np.isfinite(p[0])])
    if len(front) > 1:
        fx, fy = zip(*front, strict=True)
        ax.step(fx, fy, where="post", ls="--", color="grey", lw=1, label="Pareto front")
    return _finish(fig, ax, "parameters of the controller (log scale)", "% of teacher return (IQM, 95% CI)",
                   f"{teacher}: performance against size")

def _finish(fig: Any, ax: Any, xlabel: str, ylabel: str, title: str) -> bytes:
    """The axes every size plot shares: log size, the teacher's level and the 90% line; PNG bytes."""
    ax.axhline(100, color="black", lw=0.8, alpha=0.5)
    ax.axhline(TARGET, color="grey", ls=":", lw=1, label=f"{TARGET:.0f}% of teacher")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)

def aggregate_plot(rows: list[dict[str, Any]]) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        x = np.array([r["parameters"] for r in mine])
        y = np.array([r["iqm"] for r in mine])
        err = [y - np.array([r["ci_low"] for r in mine]), np.array([r["ci_high"] for r in mine]) - y]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=method)
        for r, xi, yi in zip(mine, x, y, strict=True):
            ax.annotate(str(r["size"]), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
    front = pareto_front([(float(r["parameters"]), float(r["iqm"])) for r in rows])
    if len(front) > 1:
        fx, fy = zip(*front, strict=True)
        ax.step(fx, fy, where="post", ls="--", color="grey", lw=1, label="Pareto front")
    return _finish(fig, ax, "parameters (mean over tasks, log scale)",
                   "% of teacher return (IQM over runs × tasks)", f"All {rows[0]['tasks']} tasks")
