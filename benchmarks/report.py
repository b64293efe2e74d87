"""Reports of a results folder: Markdown and one self-contained HTML page, with plots and trees.

``write_report(RESULTS)`` reads ``RESULTS/records/*.json`` (and ``RESULTS/suite.json``) and
writes ``report.md``, ``report.html`` (every image embedded, nothing fetched) and the pictures
under ``figures/``. Across seeds, scores are summarised as rliable recommends: the
interquartile mean with a 95% stratified-bootstrap confidence interval
(:mod:`benchmarks.stats`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import load_records
from benchmarks.stats import interval_estimate
from benchmarks.suite import TARGET_KEYS
from interp_rl.compare import half_of_teacher, percent_of_teacher
from interp_rl.document import Document
from interp_rl.document import png as _png
from interp_rl.document import pyplot as _pyplot
from interp_rl.errors import InterpRLError
from interp_rl.io import atomic_write_bytes, atomic_write_text

__all__ = ["Group", "against_equal_trees", "aggregate", "at_a_glance", "chosen", "closest", "explanations",
           "load_tried", "own_cells", "pareto_front", "sparsest_within", "summarise", "target_checks", "where_short",
           "write_report"]

TARGET = 90.0
FIGURES = "figures"


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
        return [_num(r["percent_of_teacher"]) for r in self.records]

    @property
    def worst_percent(self) -> float:
        """The worst single episode over all seeds, as % of its cell's teacher mean return."""
        worst = [percent_of_teacher(min(r["student"]["returns"]), r["teacher"]["return_mean"]) for r in self.records
                 if r["student"].get("returns") and r["teacher"].get("return_mean")]
        return min(worst) if worst else float("nan")

    def _failure_flags(self) -> list[bool]:
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
        """Share (%) of episodes whose return is below half the teacher's mean (see :meth:`_failure_flags`)."""
        flags = self._failure_flags()
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
        runs = sorted(self.records, key=lambda r: _num(r["percent_of_teacher"]))
        return runs[(len(runs) - 1) // 2]


def target_checks(g: Group, targets: dict[str, float]) -> dict[str, tuple[bool, str]]:
    """Each target of ``targets`` (keys of ``TARGET_KEYS``) that ``g`` can be judged on: (met, what misses).

    >>> record = {"percent_of_teacher": 80.0, "cell": {"seed": 0}, "size": {"parameters": 900},
    ...           "student": {"returns": [70.0, 90.0]}, "teacher": {"return_mean": 100.0}}
    >>> for key, check in target_checks(Group("Task-v5", "T", "moe", 8, [record]),
    ...                                 {"percent": 90, "worst_percent": 75, "parameters": 1000}).items():
    ...     print(key, check)
    percent (False, 'mean 80.0% (10.0 short of 90%)')
    worst_percent (False, 'worst 70.0% (5.0 short of 75%)')
    parameters (True, '900 parameters')

    The minutes say on how many cores the cells distilled (cells run side by side get one each):

    >>> record.update(distill_seconds=1860.0, distill_cores=1)
    >>> target_checks(Group("Task-v5", "T", "moe", 8, [record]), {"minutes": 30})["minutes"]
    (False, '31.0 min on 1 core (limit 30)')
    """
    out: dict[str, tuple[bool, str]] = {}
    mean = float(np.mean(g.percents)) if g.percents else float("nan")
    if "percent" in targets and np.isfinite(mean):
        t = targets["percent"]
        out["percent"] = (mean >= t, f"mean {mean:.1f}%" + ("" if mean >= t else f" ({t - mean:.1f} short of {t:g}%)"))
    # a teacher whose own episodes fall below half (or spread, as on Reacher) is judged against itself there
    own_worst, own_below = g.teacher_reference
    worst = g.worst_percent
    if "worst_percent" in targets and np.isfinite(worst):
        t = targets["worst_percent"]
        own = np.isfinite(own_worst) and own_worst < t
        t, note = (own_worst, f"the teacher's own worst, {own_worst:.1f}%") if own else (t, f"{t:g}%")
        out["worst_percent"] = (worst >= t, f"worst {worst:.1f}%" + ("" if worst >= t else
                                                                      f" ({t - worst:.1f} short of {note})")
                                + (f" (the teacher's own worst: {own_worst:.1f}%)" if own and worst >= t else ""))
    below = g.below_half
    if "below_half" in targets and np.isfinite(below):
        t = targets["below_half"]
        own = np.isfinite(own_below) and own_below > t
        t, note = (own_below, f"the teacher's own {own_below:.1f}%") if own else (t, f"{t:g}%")
        out["below_half"] = (below <= t, f"{below:.1f}% of episodes below half" + ("" if below <= t else
                                                                                    f" (limit {note})")
                             + (f" (the teacher's own: {own_below:.1f}%)" if own and below <= t else ""))
    params = g.mean("size", "parameters")
    if "parameters" in targets and params is not None:
        t = targets["parameters"]
        out["parameters"] = (params <= t, f"{params:.0f} parameters" + ("" if params <= t else f" (limit {t:g})"))
    terms = g.mean("size", "nonzero_terms")
    if "nonzero_terms" in targets and terms is not None:
        t = targets["nonzero_terms"]
        out["nonzero_terms"] = (terms <= t, f"{terms:.0f} non-zero terms" + ("" if terms <= t else f" (limit {t:g})"))
    minutes = g.mean("distill_seconds")
    if "minutes" in targets and minutes is not None:
        t, minutes = targets["minutes"], minutes / 60.0
        cores = sorted({int(r["distill_cores"]) for r in g.records if r.get("distill_cores")})
        on = (f" on {cores[0]}" + (f"-{cores[-1]}" if len(cores) > 1 else "") + f" core{'s' * (cores[-1] != 1)}"
              if cores else "")  # cells side by side get a core each: their minutes overstate a 2-core run
        out["minutes"] = (minutes <= t, f"{minutes:.1f} min{on}" + ("" if minutes <= t else f" (limit {t:g})"))
    if "idle_experts" in targets and (check := idle_check(g, targets["idle_experts"], targets.get("percent"))):
        out["idle_experts"] = check
    return out


#: How far (points of % of teacher) a mixture without its idle experts may fall and still show they are not needed.
FEWER_SUFFICE_POINTS = 1.0


def idle_check(g: Group, limit: float, percent: float | None = None) -> tuple[bool, str] | None:
    """The usage target on a group of mixtures: at most ``limit`` idle experts in every seed, unless the mixture
    without them (the record's ``usage.without_idle``, on the same evaluation episodes) does as well: its mean
    falls by at most :data:`FEWER_SUFFICE_POINTS`, or stays at or above the return target ``percent``.
    ``None`` for other kinds, or records without usage.

    >>> rec = {"kind": "mixture", "percent_of_teacher": 95.0, "cell": {"seed": 0},
    ...        "usage": {"idle": 2, "without_idle": {"experts": 6, "percent_of_teacher": 94.5}}}
    >>> idle_check(Group("T-v5", "T", "moe", 8, [rec]), 0)
    (True, '2 idle experts, and 6 suffice: 94.5% without them (95.0% with)')
    >>> rec["usage"]["without_idle"]["percent_of_teacher"] = 91.0
    >>> idle_check(Group("T-v5", "T", "moe", 8, [rec]), 0)
    (False, '2 idle experts (limit 0); without them 91.0% against 95.0%')
    >>> idle_check(Group("T-v5", "T", "moe", 8, [rec]), 0, percent=90)
    (True, '2 idle experts, and 6 suffice: 91.0% without them (95.0% with)')
    """
    used = [r for r in g.records if r.get("kind") == "mixture" and (r.get("usage") or {}).get("idle") is not None]
    if not used:
        return None
    verdicts = []
    for r in used:
        idle, own, usage = int(r["usage"]["idle"]), _num(r["percent_of_teacher"]), r["usage"]
        fewer, many = usage.get("without_idle"), f"{int(r['usage']['idle'])} idle expert{'s' * (idle != 1)}"
        if idle <= limit:
            verdicts.append((True, 0, many))
        elif fewer is None:
            why = ("an older record: python -m benchmarks.refresh_usage" if "without_idle" not in usage else
                   "a routing tree names one expert per leaf")
            verdicts.append((False, 2, f"{many} (limit {limit:g}); not run without them ({why})"))
        elif ((pct := _num(fewer["percent_of_teacher"])) >= own - FEWER_SUFFICE_POINTS
              or (percent is not None and pct >= percent)):
            verdicts.append((True, 1, f"{many}, and {fewer['experts']} suffice: {pct:.1f}% without them "
                                      f"({own:.1f}% with)"))
        else:
            verdicts.append((False, 3, f"{many} (limit {limit:g}); without them {pct:.1f}% against {own:.1f}%"))
    ok, _, text = max(verdicts, key=lambda v: (not v[0], v[1]))  # the worst seed speaks for the group
    return ok, text


def closest(groups: list[Group], targets: dict[str, float]) -> tuple[Group, dict[str, tuple[bool, str]]] | None:
    """The group that meets the most ``targets``, ties broken by the highest mean % of teacher."""
    judged = [(g, target_checks(g, targets)) for g in groups if g.percents]
    if not judged:
        return None
    return max(judged, key=lambda gc: (sum(ok for ok, _ in gc[1].values()), float(np.nanmean(gc[0].percents))))


def load_tried(results: Path) -> list[dict[str, str]]:
    """``RESULTS/tried.toml``: experiments outside the suite, ``[[tried]]`` tables of ``teacher`` (a suite
    teacher's name, or ``"*"``), ``what``, ``result`` and ``command``. Missing file: none."""
    import tomllib

    path = Path(results) / "tried.toml"
    if not path.is_file():
        return []
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("tried", [])
    except tomllib.TOMLDecodeError as e:
        raise InterpRLError(f"{str(path)!r} is not valid TOML ({e}); expected [[tried]] tables.") from None
    out = []
    for i, entry in enumerate(entries):
        missing = [k for k in ("teacher", "what", "result", "command") if not isinstance(entry.get(k), str)]
        if missing:
            raise InterpRLError(f"{str(path)!r}: [[tried]] entry {i + 1} lacks {', '.join(missing)} (expected "
                                "the strings teacher, what, result and command).")
        out.append(entry)
    return out


def against_trees(summary: dict[str, list[Group]], budget: float | None = None) -> list[str]:
    """One line per teacher with mixtures and trees: the best mixture against the best tree within the same
    parameter ``budget`` (all sizes when ``None``), by the mean % of teacher over seeds, the worst episode after.

    >>> def g(method, kind, pct, params):
    ...     rec = {"kind": kind, "percent_of_teacher": pct, "cell": {"seed": 0}, "size": {"parameters": params},
    ...            "student": {"returns": [pct - 10]}, "teacher": {"return_mean": 100.0}}
    ...     return Group("T-v5", "T", method, 8, [rec])
    >>> line, = against_trees({"T": [g("moe", "mixture", 80.0, 960), g("tree", "tree", 85.0, 871),
    ...                              g("tree", "tree", 99.0, 5000)]}, 1000)  # the 5,000-parameter tree is over
    >>> for part in line.split(", "):
    ...     print(part)
    **T**: below
    by 5.0 points: best mixture moe 8 (960 parameters) 80.0% (worst 70.0%)
    best tree tree 8 (871 parameters) 85.0% (worst 75.0%)
    """
    from interp_rl.program import PROGRAMS

    out = []
    for teacher, groups in summary.items():
        kinds = {x.records[0].get("kind") for x in groups if x.records}
        for kind in sorted(k for k in kinds if k in PROGRAMS):
            other = PROGRAMS[kind].compared_with  # the program kind says what it is set against
            best: dict[str, Group] = {}
            for k in (kind, other):
                fits = [x for x in groups if x.percents and x.records[0].get("kind") == k
                        and (budget is None or (x.mean("size", "parameters") or 0) <= budget)]
                if fits:
                    best[k] = max(fits, key=lambda x: float(np.mean(x.percents)))
            if not other or len(best) < 2:
                continue
            m, t = (float(np.mean(best[k].percents)) for k in (kind, other))
            said = [f"best {name} {x.method} {x.size} ({_f(x.mean('size', 'parameters'), '.0f')} parameters) "
                    f"{float(np.mean(x.percents)):.1f}% (worst {x.worst_percent:.1f}%)"
                    for name, x in ((kind, best[kind]), (other, best[other]))]
            out.append(f"**{teacher}**: {'above' if m > t else 'below'}, by {abs(m - t):.1f} points: "
                       f"{', '.join(said)}")
    return out


def at_a_glance(summary: dict[str, list[Group]], targets: dict[str, float]) -> tuple[list[str], list[list[str]]]:
    """One row per teacher, one column per method (its first size): mean % of teacher / worst episode % /
    % of episodes below half, over all seeds, in bold where every target is met, with the seeds counted.

    >>> def g(method, pct, worst):
    ...     rec = {"kind": "mixture", "percent_of_teacher": pct, "cell": {"seed": 0}, "size": {"parameters": 900},
    ...            "student": {"returns": [worst]}, "teacher": {"return_mean": 100.0}}
    ...     return Group("T-v5", "T", method, 8, [rec])
    >>> header, rows = at_a_glance({"T": [g("moe", 95.0, 80.0), g("tree", 60.0, 10.0)]},
    ...                            {"percent": 90, "worst_percent": 75})
    >>> header
    ['teacher', 'moe', 'tree', 'seeds']
    >>> rows
    [['T', '**95.0 / 80.0 / 0**', '60.0 / 10.0 / 100', '0']]
    """
    methods = sorted({g.method for groups in summary.values() for g in groups})
    rows = []
    for teacher, groups in summary.items():
        first: dict[str, Group] = {}
        for g in groups:
            first.setdefault(g.method, g)
        cells = []
        for m in methods:
            g = first.get(m)
            if g is None or not g.percents:
                cells.append("–")
                continue
            text = f"{float(np.mean(g.percents)):.1f} / {g.worst_percent:.1f} / {round(g.below_half, 1):g}"
            checks = target_checks(g, targets)
            cells.append(f"**{text}**" if checks and all(ok for ok, _ in checks.values()) else text)
        seeds = sorted({s for g in groups for s in g.seeds})
        rows.append([teacher, *cells, ", ".join(map(str, seeds))])
    return ["teacher", *methods, "seeds"], rows


def where_short(summary: dict[str, list[Group]], targets: dict[str, float],
                tried: list[dict[str, str]] = ()) -> list[str]:
    """One line per teacher: the controller closest to ``targets``, its misses, and what was tried.

    >>> def rec(pct, worst):
    ...     return {"percent_of_teacher": pct, "cell": {"seed": 0}, "size": {"parameters": 900},
    ...             "student": {"returns": [worst, pct]}, "teacher": {"return_mean": 100.0}}
    >>> summary = {"T": [Group("Task-v5", "T", "moe", 8, [rec(80.0, 76.0)]),
    ...                  Group("Task-v5", "T", "moe-rl", 8, [rec(85.0, 40.0)])]}
    >>> import textwrap
    >>> print(textwrap.fill(where_short(summary, {"percent": 90, "worst_percent": 75},
    ...                   [{"teacher": "T", "what": "noise", "result": "82%", "command": "run"}])[0], 110))
    **T**: closest moe 8 (900 parameters): mean 80.0% (10.0 short of 90%). Tried: moe 8 (80.0% / worst 76.0%),
    moe-rl 8 (85.0% / worst 40.0%), 1 seed(s); also noise: 82% (`run`).
    """
    lines = []
    for teacher, groups in summary.items():
        best = closest(groups, targets)
        if best is None:
            continue
        g, checks = best
        misses = [text for ok, text in checks.values() if not ok]
        head = (f"**{teacher}**: " + (f"met by {g.method} {g.size}" if not misses else
                                      f"closest {g.method} {g.size}") +
                f" ({_f(g.mean('size', 'parameters'), '.0f')} parameters)")
        ok_groups = [f"{h.method} {h.size}" for h in groups
                     if h is not g and (c := target_checks(h, targets)) and all(ok for ok, _ in c.values())]
        line = head + (": " + "; ".join(misses) if misses else "") + "."
        if ok_groups:
            line += " Also meeting every target: " + ", ".join(ok_groups) + "."
        seeds = max(len(h.records) for h in groups)
        line += (" Tried: " + ", ".join(f"{h.method} {h.size} ({float(np.nanmean(h.percents)):.1f}% / worst "
                                         f"{h.worst_percent:.1f}%)" for h in groups if h.percents)
                 + f", {seeds} seed(s)")
        extra = [t for t in tried if t["teacher"] == teacher]  # those of every teacher ("*") are listed once
        if extra:
            line += "; also " + "; ".join(f"{t['what']}: {t['result']} (`{t['command']}`)" for t in extra)
        lines.append(line + ("" if line.endswith(".") else "."))
    unknown = sorted({t["teacher"] for t in tried} - set(summary) - {"*"})
    if unknown:
        raise InterpRLError(f"tried.toml names teacher(s) {', '.join(map(repr, unknown))} that have no records "
                            f"(expected one of {', '.join(map(repr, summary))} or '*').")
    return lines


def _pct(v: float | None) -> float | None:
    return None if v is None else 100.0 * v


def _first(*values: float) -> float:
    """The first value that is a number (not NaN), else NaN."""
    return next((v for v in values if v == v), float("nan"))


def _num(v: Any) -> float:
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


# ----------------------------------------------------------------------------- plots
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


# ----------------------------------------------------------------------------- formatting
def _f(v: float | None, spec: str = ".1f") -> str:
    return "–" if v is None or not np.isfinite(v) else format(v, spec)


def _t(seconds: float | None) -> str:
    if seconds is None or not np.isfinite(seconds):
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _est(e: dict[str, Any]) -> str:
    if not e:
        return "–"
    if e["runs"] < 2:
        return f"{e['iqm']:.1f}"
    return f"{e['iqm']:.1f} [{e['ci_low']:.1f}, {e['ci_high']:.1f}]"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)


# ----------------------------------------------------------------------------- the report
def _compared_records(res: Path, suite: dict[str, Any], own: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records of the suite's ``compare`` folders (beside ``res``) for its teachers, of methods it does not run;
    their controller paths made relative to ``res``."""
    teachers = {t["name"]: t for t in suite.get("teachers") or []}
    mine = {r["method"] for r in own}
    out: dict[str, list[dict[str, Any]]] = {}
    for other in suite.get("compare") or []:
        folder = res.parent / other
        if not (folder / "records").is_dir():
            continue
        kept = [{**r, "controller": f"../{other}/{r['controller']}", "compared_from": other}
                for r in load_records(folder)
                if r["cell"]["teacher"] in teachers and r["method"] not in mine
                and r.get("episodes") == own[0].get("episodes")]
        if kept:
            out[other] = kept
    return out


def repair_pairs(summary: dict[str, list[Group]]) -> list[list[str]]:
    """Rows comparing each method with its ``-repair`` twin (same teacher and size), on the seeds both ran (the
    same distillation, repaired or not): mean %, worst %, episodes below half (before → after), and what the
    repair found per seed (failures in each round's fresh episodes, the round kept on held-out episodes).
    """
    rows = []
    for teacher, groups in summary.items():
        by = {(g.method, str(g.size)): g for g in groups}
        for g in groups:
            if "-repair" not in g.method:
                continue
            base = by.get((g.method.replace("-repair", "", 1), str(g.size)))
            if base is None:
                continue
            seeds = sorted(set(base.seeds) & set(g.seeds))
            if not seeds:
                continue
            before, after = (Group(x.task, x.teacher, x.method, x.size,
                                   [r for r in x.records if r["cell"]["seed"] in seeds]) for x in (base, g))

            def pair(a: float | None, b: float | None) -> str:
                return f"{_f(a, '.1f')} → {_f(b, '.1f')}"

            found = []
            for r in sorted(after.records, key=lambda r: r["cell"]["seed"]):
                rep = (r.get("details") or {}).get("repair") or {}
                rounds = [h for h in rep.get("history", []) if h.get("round")]
                if rounds:
                    fails = ", ".join(f"{h.get('failed')}/{h.get('episodes', '?')}" for h in rounds)
                    kept = rep.get("best_round", 0)
                    found.append(f"seed {r['cell']['seed']}: {fails}; kept "
                                 + (f"round {kept}" if kept else "the unrepaired fit"))
            rows.append([teacher, f"{base.method} → {g.method}", ", ".join(map(str, seeds)),
                         pair(float(np.mean(before.percents)), float(np.mean(after.percents))),
                         pair(before.worst_percent, after.worst_percent),
                         f"{_below_count(before)} → {_below_count(after)}",
                         "; ".join(found) or "–"])
    return rows


def held_out_choices(summary: dict[str, list[Group]]) -> list[list[str]]:
    """Rows of the choices a cell made on held-out episodes (DART level, restart): per teacher, method and seed,
    each level's best held-out score (the kept one bold), the kept restart, and what the evaluation gave.

    >>> rec = {"percent_of_teacher": 91.0, "cell": {"seed": 2}, "student": {"returns": [91.0]},
    ...        "teacher": {"return_mean": 100.0},
    ...        "details": {"noise_levels": {"kept": 1, "rows": [{"noise": 0.0, "score": 120.4, "return_min": 50.0},
    ...                                                          {"noise": 0.3, "score": 180.6, "return_min": 170.0}]},
    ...                    "restarts": {"kept": 7, "rows": [{"noise": 0.3, "restart": 2}] * 8}}}
    >>> held_out_choices({"T": [Group("T-v5", "T", "moe", 8, [rec])]})
    [['T', 'moe', '2', '0: 120 (worst 50); **0.3: 181 (worst 170)**', '2', '91.0']]
    """
    rows = []
    for teacher, groups in summary.items():
        for g in groups:
            for r in sorted(g.records, key=lambda r: r["cell"]["seed"]):
                det = r.get("details") or {}
                levels, restarts = det.get("noise_levels") or {}, det.get("restarts") or {}
                if not levels and not restarts:
                    continue
                scores = "; ".join(
                    (lambda t: f"**{t}**" if i == levels["kept"] else t)(
                        f"{row['noise']:g}: {row['score']:.0f} (worst {row['return_min']:.0f})")
                    for i, row in enumerate(levels.get("rows") or []))
                kept = restarts["rows"][restarts["kept"]]["restart"] if restarts.get("rows") else None
                rows.append([teacher, g.method, str(r["cell"]["seed"]), scores or "–", _f(kept, "d"),
                             _f(r["percent_of_teacher"], ".1f")])
    return rows


def _below_count(g: Group) -> str:
    """Episodes below half the teacher's mean, as a count: "3 of 100" ("–" without episodes)."""
    flags = g._failure_flags()
    return f"{sum(flags)} of {len(flags)}" if flags else "–"


def _verdict(g: Group, targets: dict[str, float]) -> str:
    """"all" where ``g`` meets every target it can be judged on, else its misses; "–" where none applies."""
    checks = target_checks(g, targets)
    if checks and all(ok for ok, _ in checks.values()):
        idle = checks.get("idle_experts", (True, ""))[1]
        return "all" + (f" ({idle})" if "suffice" in idle else "")
    return "; ".join(text for ok, text in checks.values() if not ok) or "–"


def own_cells(summary: dict[str, list[Group]], methods: set[str], targets: dict[str, float],
              held_out: set[str] = frozenset()) -> list[list[str]]:
    """Rows of the suite's own methods (``methods``; not those shown beside them from another suite) against
    ``targets``: per teacher and method, each seed, then the seeds together as in the targets table. A teacher in
    ``held_out`` (an agent the recipe was not chosen on) is marked.

    >>> def rec(seed, pct, worst):
    ...     return {"percent_of_teacher": pct, "cell": {"seed": seed}, "size": {"parameters": 900},
    ...             "student": {"returns": [pct, worst]}, "teacher": {"return_mean": 100.0, "returns": [100.0]},
    ...             "failures": {"threshold": 50.0, "returns": [pct] * 99 + [40.0]}}
    >>> for row in own_cells({"T": [Group("T-v5", "T", "moe", 8, [rec(0, 95.0, 80.0), rec(1, 92.0, 70.0)])]},
    ...                      {"moe"}, {"percent": 90, "worst_percent": 75, "below_half": 1}, {"T"}):
    ...     print(" | ".join(row[:4]), "|", " | ".join(row[5:]))
    T (held out) | moe | 8 | 0 | 95.0 | 80.0 | 1 of 100 | all
    T (held out) | moe | 8 | 1 | 92.0 | 70.0 | 1 of 100 | worst 70.0% (5.0 short of 75%)
    **T (held out)** | **moe** | **8** | **0, 1** | 93.5 | 70.0 | 2 of 200 | worst 70.0% (5.0 short of 75%)
    """
    rows = []
    for teacher, groups in summary.items():
        name = teacher + (" (held out)" if teacher in held_out else "")
        for g in groups:
            if g.method not in methods:
                continue
            runs = sorted(g.records, key=lambda r: r["cell"]["seed"])
            for r in runs:
                one = Group(g.task, g.teacher, g.method, g.size, [r])
                rows.append([name, g.method, str(g.size), str(r["cell"]["seed"]),
                             _f(one.mean("size", "parameters"), ".0f"), _f(_num(r["percent_of_teacher"]), ".1f"),
                             _f(one.worst_percent, ".1f"), _below_count(one), _verdict(one, targets)])
            if len(runs) > 1:
                rows.append([f"**{name}**", f"**{g.method}**", f"**{g.size}**",
                             f"**{', '.join(str(r['cell']['seed']) for r in runs)}**",
                             _f(g.mean("size", "parameters"), ".0f"), _f(float(np.mean(g.percents)), ".1f"),
                             _f(g.worst_percent, ".1f"), _below_count(g), _verdict(g, targets)])
    return rows


def sparsest_within(summary: dict[str, list[Group]], tolerance: float = 0.05) -> list[str]:
    """Per teacher and method run at several sizes: the best size (mean % of teacher over seeds) and the sparsest
    size (fewest non-zero terms, else parameters) whose mean is within ``tolerance`` of the best's (relative).

    >>> def g(size, pct, terms):
    ...     rec = {"percent_of_teacher": pct, "cell": {"seed": 0}, "student": {"returns": [pct]},
    ...            "size": {"nonzero_terms": terms, "parameters": terms}, "teacher": {"return_mean": 100.0}}
    ...     return Group("T-v5", "T", "sindy", size, [rec])
    >>> for line in sparsest_within({"T": [g(10, 80.0, 10), g(20, 93.0, 20), g(60, 95.0, 58)]}):
    ...     for part in line.split("; "):
    ...         print(part)
    **T** sindy: best 60 (58 terms) 95.0% (worst 95.0%)
    sparsest within 5% of it: 20 (20 terms) 93.0% (worst 93.0%)

    Trees of constant leaves have no terms: their sizes are their parameters.

    >>> def c(size, pct):
    ...     rec = {"percent_of_teacher": pct, "cell": {"seed": 0}, "student": {"returns": [pct]},
    ...            "size": {"nonzero_terms": 0, "parameters": 4 * size - 1}, "teacher": {"return_mean": 100.0}}
    ...     return Group("T-v5", "T", "tree-const", size, [rec])
    >>> print(sparsest_within({"T": [c(4, 40.0), c(8, 41.0), c(16, 50.0)]})[0].split("; ")[1])
    sparsest within 5% of it: 16 (63 parameters) 50.0% (worst 50.0%)
    """
    out = []
    for teacher, groups in summary.items():
        for method in dict.fromkeys(g.method for g in groups):
            mine = [g for g in groups if g.method == method and g.percents]
            if len(mine) < 2:
                continue

            # non-zero terms where the method has them (equations, linear leaves); else (constant leaves, whose
            # terms are all zero) the parameters
            unit = "terms" if any(g.mean("size", "nonzero_terms") for g in mine) else "parameters"

            def size(g: Group, unit: str = unit) -> float:
                v = g.mean("size", "nonzero_terms" if unit == "terms" else "parameters")
                return v if v is not None else float("inf")

            best = max(mine, key=lambda g: float(np.mean(g.percents)))
            top = float(np.mean(best.percents))
            ok = [g for g in mine if float(np.mean(g.percents)) >= top - tolerance * abs(top)]
            sparse = min(ok, key=lambda g: (size(g), -float(np.mean(g.percents))))

            def said(g: Group, unit: str = unit) -> str:
                return (f"{g.size} ({size(g):.0f} {unit}) {float(np.mean(g.percents)):.1f}% "
                        f"(worst {g.worst_percent:.1f}%)")

            out.append(f"**{teacher}** {method}: best {said(best)}; sparsest within {tolerance:.0%} of it: "
                       f"{said(sparse)}")
    return out


def against_equal_trees(summary: dict[str, list[Group]], kind: str = "equations") -> list[str]:
    """Per teacher: the best controller of ``kind`` against the best tree with at most its parameters.

    >>> def g(method, kind, pct, params):
    ...     rec = {"kind": kind, "percent_of_teacher": pct, "cell": {"seed": 0}, "size": {"parameters": params},
    ...            "student": {"returns": [pct]}, "teacher": {"return_mean": 100.0}}
    ...     return Group("T-v5", "T", method, 8, [rec])
    >>> line, = against_equal_trees({"T": [g("sindy", "equations", 80.0, 60), g("tree", "tree", 70.0, 50),
    ...                                   g("tree", "tree", 99.0, 900)]})
    >>> for part in line.split(" against "):
    ...     print(part)
    **T**: equations above, by 10.0 points: sindy 8 (60 parameters) 80.0% (worst 80.0%)
    tree 8 (50 parameters) 70.0% (worst 70.0%)
    """
    out = []
    for teacher, groups in summary.items():
        mine = [g for g in groups if g.percents and g.records[0].get("kind") == kind]
        if not mine:
            continue
        best = max(mine, key=lambda g: float(np.mean(g.percents)))
        budget = best.mean("size", "parameters") or 0.0
        trees = [g for g in groups if g.percents and g.records[0].get("kind") == "tree"
                 and (g.mean("size", "parameters") or float("inf")) <= budget]

        def said(g: Group) -> str:
            return (f"{g.method} {g.size} ({_f(g.mean('size', 'parameters'), '.0f')} parameters) "
                    f"{float(np.mean(g.percents)):.1f}% (worst {g.worst_percent:.1f}%)")

        if not trees:
            out.append(f"**{teacher}**: {said(best)}; no tree of ≤ {budget:.0f} parameters was run")
            continue
        tree = max(trees, key=lambda g: float(np.mean(g.percents)))
        a, b = float(np.mean(best.percents)), float(np.mean(tree.percents))
        out.append(f"**{teacher}**: {kind} {'above' if a > b else 'below'}, by {abs(a - b):.1f} points: "
                   f"{said(best)} against {said(tree)}")
    return out


def attribution_table(rec: dict[str, Any], top: int = 4) -> tuple[list[str], list[list[str]]] | None:
    """The teacher's and the controller's most important features per action, side by side, with their rank
    agreement; ``None`` for a record without ``attribution_agreement``."""
    a = rec.get("attribution_agreement")
    if not a:
        return None
    rows = []
    for action in a["actions"]:
        cells = []
        for who in ("teacher_importance", "controller_importance"):
            imp = np.asarray(a[who][action])
            order = np.argsort(-imp, kind="stable")[:top]
            cells.append(", ".join(f"{a['features'][i]} {imp[i]:.2g}" for i in order))
        rho = a["spearman"].get(action)
        rows.append([action, *cells, "-" if rho is None else f"{rho:.2f}", f"{a['top_k_overlap'][action]:.2f}"])
    return (["action", f"teacher's top {top}", f"controller's top {top}", "Spearman",
             f"top-{a['top_k']} overlap"], rows)


def explanations(results: Path, g: Group) -> list[Any]:
    from distill.methods import METHODS
    from interp_rl.program import load_controller

    rec = g.median_record()
    folder = results / rec["controller"]
    if not (folder / "controller.json").is_file():
        return []
    ctrl = load_controller(folder)
    states_file = folder / "states.npy"
    states = np.load(states_file, allow_pickle=False) if states_file.is_file() else np.zeros((0, 0))
    title = (f"{g.teacher}: {g.method} {g.size}, seed {rec['cell']['seed']}, "
             f"{_num(rec['percent_of_teacher']):.0f}% of teacher")
    return METHODS[rec["distiller"]].explain(ctrl, states, title)


def write_report(results: str | Path, out: str | Path | None = None, *, reps: int = 2000,
                 seed: int = 0) -> dict[str, Path]:
    """Write ``report.md``, ``report.html`` and ``figures/`` for the records in ``results``.

    Returns
    -------
    dict
        ``{"markdown": path, "html": path}``.
    """
    res = Path(results)
    if not res.is_dir():
        raise InterpRLError(f"Results folder {str(res)!r} does not exist.")
    records = load_records(res)
    if not records:
        raise InterpRLError(f"{str(res)!r} holds no benchmark records (expected "
                            f"{str(res / 'records')}/*.json); run `interp-rl bench` first.")
    dest = Path(out) if out is not None else res
    suite = json.loads((res / "suite.json").read_text()) if (res / "suite.json").is_file() else {}
    compared = _compared_records(res, suite, records)
    own = records
    records = records + [r for rs in compared.values() for r in rs]
    name = suite.get("name") or records[0]["suite"]
    summary = summarise(records, reps=reps, seed=seed)
    doc = Document(figures=FIGURES)
    figures: dict[str, bytes] = {}

    def image(fname: str, data: bytes, alt: str) -> None:
        figures[fname] = data
        doc.image(fname, data, alt)

    doc.h(1, f"interp-rl benchmark: {name}")
    if suite.get("description"):
        doc.p(" ".join(suite["description"].split()))
    doc.p(f"{len(own)} cells: {len({r['cell']['teacher'] for r in own})} teacher(s), methods "
          f"{', '.join(sorted({r['method'] for r in own}))}, seeds "
          f"{', '.join(map(str, sorted({r['cell']['seed'] for r in own})))}. "
          f"Regenerate: `interp-rl bench --suite {suite.get('source') or name} --out RESULTS` then "
          f"`interp-rl report RESULTS`.")
    for other, rs in compared.items():
        doc.p(f"Shown next to them, not run again: {len(rs)} records of methods "
              f"{', '.join(sorted({r['method'] for r in rs}))} on the same teachers from the `{other}` suite's results "
              f"folder (`../{other}`; same evaluation episodes); their controllers are described in that report.")
    doc.p("Every cell distils the teacher once and evaluates teacher and controller on the same "
          f"{records[0]['episodes']} episodes (reset seeds seed, seed+1, …) of the `-v5` task. "
          "% of teacher = controller return / teacher return on those episodes (for a teacher whose mean "
          "return is negative, a cost as on Reacher, 100 × (1 + (controller − teacher) / |teacher|), so that "
          "higher is better there too; below half = below 50% on that scale). Across seeds, "
          "% of teacher is the **interquartile mean** with a 95% **stratified-bootstrap** interval "
          f"({reps} resamples; runs resampled within each task), as rliable computes them; with one seed it "
          "is that seed's value. Fidelity: R² of the controller's actions against the teacher's, on "
          "states the teacher visits and on states the controller visits. Latency: median seconds per "
          "action, one observation (SB3 `model.predict` for the teacher; the exported standalone Python "
          "`act` and the exported C `act` timed in a C loop for the controller) and per observation in a "
          "batch.")

    doc.h(2, "Summary")
    rows = []
    for teacher, groups in summary.items():
        for method, g in chosen(groups).items():
            hit = g.estimate["iqm"] >= TARGET
            rows.append([teacher, f"{_f(g.mean('teacher', 'return_mean'), '.0f')}", method,
                         f"{g.size}" + ("" if hit else " (best; none reaches 90%)"),
                         _f(g.mean("size", "parameters"), ".0f"), _est(g.estimate),
                         _f(g.mean("fidelity", "student_states", "r2"), ".2f"),
                         f"{_f(g.mean('latency', 'speedup_single'), '.0f')}× / "
                         f"{_f(g.mean('latency', 'speedup_c_native'), '.0f')}×"])
    doc.p("Per teacher and method, the smallest size whose IQM reaches 90% of the teacher "
          "(else the best size).")
    doc.table(["teacher", "teacher return", "method", "size", "parameters", "% of teacher IQM [95% CI]",
               "fidelity R² (own states)", "speed-up Python / C"], rows)

    targets = suite.get("targets") or {}
    if targets:
        doc.h(2, "Targets")
        doc.p("The suite's targets: " + "; ".join(TARGET_KEYS[k].format(v) for k, v in targets.items())
              + ". Every group (teacher, method, size; its seeds together: the mean of the seeds' means, the "
              "worst episode of all, the share of all failure-rate episodes) against them; a miss says by how much. "
              "Next to them, the teacher against its own mean on its evaluation episodes: where the teacher "
              "itself has a low worst episode or episodes below half (Reacher: the target's distance sets the "
              "cost), those two targets measure the task more than the controller.")
        if compared:
            held_out = {t["name"] for t in suite.get("teachers") or [] if t.get("held_out")}
            doc.h(3, "This suite's own cells")
            doc.p(f"The methods this suite runs ({', '.join(sorted({r['method'] for r in own}))}), seed by seed and "
                  "then the seeds together (bold); episodes below half counted over the failure-rate episodes. "
                  + ("Held out: agents these methods were not chosen on (" + ", ".join(sorted(held_out)) + ")."
                     if held_out else ""))
            doc.table(["teacher", "method", "size", "seed", "parameters", "% of teacher", "worst episode %",
                       "episodes below half", "targets met, or the misses"],
                      own_cells(summary, {r["method"] for r in own}, targets, held_out))
            doc.h(3, "Every method against the targets")
        rows = []
        for teacher, groups in summary.items():
            for g in groups:
                t_worst, t_below = g.teacher_reference
                rows.append([teacher, g.method, str(g.size), _f(g.mean("size", "parameters"), ".0f"),
                             _f(float(np.mean(g.percents)) if g.percents else None, ".1f"),
                             _f(g.worst_percent, ".1f"), _f(g.below_half, ".1f"),
                             f"{_f(t_worst, '.1f')} / {_f(t_below, '.1f')}", _verdict(g, targets)])
        doc.table(["teacher", "method", "size", "parameters", "mean % of teacher", "worst episode %",
                   "% of episodes below half", "the teacher itself: worst % / % below half",
                   "targets met, or the misses"], rows)

        doc.h(3, "At a glance")
        doc.p("Per teacher and method: mean % of teacher / worst episode % / % of episodes below half, the "
              "seeds together as above; in bold where every target is met.")
        doc.table(*at_a_glance(summary, targets))

        tried = load_tried(res)
        doc.h(3, "Where short")
        doc.p("Per teacher, the controller closest to the targets (most targets met, then the highest mean), "
              "what it misses, and what was tried: the suite's methods on that teacher and, from "
              "`tried.toml` in the results folder, the experiments outside the suite with their commands.")
        doc.bullets(where_short(summary, targets, tried))
        if everywhere := [t for t in tried if t["teacher"] == "*"]:
            doc.p("Tried on every teacher:")
            doc.bullets([f"{t['what']}: {t['result']} (`{t['command']}`)." for t in everywhere])
        if lines := against_trees(summary, targets.get("parameters")):
            doc.h(3, "Mixtures against trees")
            doc.p("Per teacher, the best mixture against the best tree within the same parameter budget"
                  + (f" (≤ {targets['parameters']:g})" if "parameters" in targets else "")
                  + ", by the mean % of teacher over seeds.")
            doc.bullets(lines)

    if rows := repair_pairs(summary):
        doc.h(2, "Repair from diagnosis: before and after")
        doc.p("Per teacher, each method next to the same method with repair from diagnosis (`-repair`: targeted "
              "DAgger from the run-up to each failure, `interp-rl distill ... --repair-rounds`), on the seeds both "
              "ran, so each pair is one distillation before and after its repair: mean % of teacher, worst "
              "episode %, and failure-rate episodes below half the teacher's mean (before → after). Found: per "
              "seed, the failures in each repair round's fresh episodes (the points of no return it learns "
              "from), and the round the held-out episodes kept.")
        doc.table(["teacher", "method → repaired", "seeds", "mean % of teacher", "worst episode %",
                   "episodes below half", "found"], rows)

    if rows := held_out_choices(summary):
        doc.h(2, "What the held-out episodes chose")
        doc.p("Per cell, the choices made on held-out episodes (never the evaluation's): each DART level's best "
              "held-out score (the mean of the mean return and of the worst quarter's; the kept level bold), the "
              "kept restart (fit) of that level, and the % of teacher the evaluation then gave (after fine-tuning, "
              "where the method fine-tunes).")
        doc.table(["teacher", "method", "seed", "DART level: held-out score (worst return)", "kept restart",
                   "% of teacher"], rows)

    if lines := sparsest_within(summary):
        doc.h(2, "Sparsity: the sparsest within 5% of the best")
        doc.p("Per teacher and method run at several sizes: the size with the best mean % of teacher (seeds "
              "together) and the sparsest size whose mean is within 5% of it.")
        doc.bullets(lines)
    if lines := against_equal_trees(summary):
        doc.h(2, "Equations against trees of equal size")
        doc.p("Per teacher, the best sparse-equation controller against the best tree with at most its parameters.")
        doc.bullets(lines)

    agg = aggregate(summary, reps=reps, seed=seed)
    if agg:
        doc.h(2, "All tasks together")
        doc.p(f"IQM of % of teacher over the seed × task runs ({agg[0]['tasks']} tasks; per method the seeds "
              "that every task ran, so that every task weighs the same), with 95% stratified-bootstrap "
              "intervals (seeds resampled within each task).")
        image("aggregate.png", aggregate_plot(agg), "% of teacher against size, all tasks")
        doc.table(["method", "size", "parameters (mean)", "seeds", "IQM [95% CI]", "mean"],
                  [[r["method"], str(r["size"]), f"{r['parameters']:.0f}",
                    ", ".join(map(str, r["seeds"])),
                    f"{r['iqm']:.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}]", f"{r['mean']:.1f}"]
                   for r in agg])
        if left := left_out_of_aggregate(summary):
            doc.p("Not in this table: " + "; ".join(left) + ".")

    for teacher, groups in summary.items():
        first = groups[0].records[0]
        t = first["teacher"]
        doc.h(2, f"{teacher}: {t['algo'].upper()} on {first['task']}")
        t_ret = [g.mean("teacher", "return_mean") for g in groups]
        t_mean = float(np.mean([v for v in t_ret if v is not None]))
        variant = ", ".join(f"{k}={v}" for k, v in (t.get("variant") or {}).items())
        doc.bullets([f"Teacher: `{t['source']}` ({t['algo'].upper()})",
                     f"Environment: `{first['task']}` ({variant})",
                     f"Teacher return on the evaluation episodes: {_f(t_mean, '.1f')} (mean over seeds; "
                     f"± {_f(groups[0].mean('teacher', 'return_std'), '.1f')} over episodes)"])
        image(f"pareto-{_slug(teacher)}.png", pareto_plot(teacher, groups),
              f"{teacher}: % of teacher against parameters per method")
        rows = []
        for g in groups:
            rows.append([
                g.method, str(g.size), _f(_first(g.mean("size", "leaves"), g.mean("size", "experts")), ".0f"),
                _f(g.mean("size", "depth"), ".0f"),
                _f(g.mean("size", "nonzero_terms"), ".0f"), _f(g.mean("size", "parameters"), ".0f"),
                _f(g.mean("size", "export_bytes", "c"), ".0f"),
                _f(g.mean("student", "return_mean"), ".0f"), _est(g.estimate),
                "[" + ", ".join(f"{p:.0f}" for p in g.percents) + "]", _f(g.worst_percent, ".0f"),
                f"{_f(g.below_half, '.1f')} ({len(g._failure_flags())})",
                _f(g.mean("usage", "idle"), ".1f"),
                _f(_pct(g.mean("details", "fit_facts", "router_agreement")), ".0f"),
                f"{_f(g.mean('fidelity', 'teacher_states', 'r2'), '.2f')} / "
                f"{_f(g.mean('fidelity', 'student_states', 'r2'), '.2f')}",
                f"{_t(g.mean('latency', 'student_single_s'))} / "
                f"{_t(g.mean('latency', 'student_c_native_s'))}",
                _t(g.mean("latency", "teacher_single_s")),
                f"{_t(g.mean('latency', 'student_batch_s_per_obs'))} / "
                f"{_t(g.mean('latency', 'teacher_batch_s_per_obs'))}",
                _f(g.mean("distill_seconds"), ".0f"),
                _f(g.mean("attribution_agreement", "mean_spearman"), ".2f"),
            ])
        doc.table(["method", "size", "leaves / experts", "depth", "non-zero terms", "parameters", "C bytes",
                   "return", "% of teacher IQM [95% CI]", "per seed", "worst episode %",
                   "% of episodes below half the teacher (episodes)",
                   "pieces acting on < 2% of states", "router-tree agreement %", "fidelity R² teacher / own states",
                   "latency Python / C", "teacher latency", "batch latency / teacher", "distil s",
                   "Shapley rank agreement with the teacher (Spearman)"], rows)
        for method, g in chosen(groups).items():
            if any(method in {r["method"] for r in rs} for rs in compared.values()):
                continue  # described in its own suite's report
            rec = g.median_record()
            doc.h(3, f"Chosen {method} controller: size {g.size}, seed {rec['cell']['seed']} "
                     f"({_num(rec['percent_of_teacher']):.1f}% of teacher)")
            doc.p(f"Files: `{rec['controller']}/controller.json` and `rules.txt`; "
                  f"`interp-rl export {rec['controller']} --out DIR` writes it as Python and C, "
                  f"`interp-rl viz {rec['controller']}` draws all of it.")
            if table := attribution_table(rec):
                doc.p("**Which features drive each action, teacher against controller** (mean |Shapley value| on "
                      f"{rec['attribution_agreement']['states']} teacher-visited states; "
                      f"{rec['attribution_agreement']['estimator']} estimate for both, "
                      f"{rec['attribution_agreement']['budget']} coalitions per state against "
                      f"{rec['attribution_agreement']['background']} background states)")
                doc.table(*table)
            for i, part in enumerate(explanations(res, g)):
                if part.kind == "svg":
                    image(f"{_slug(teacher)}-{_slug(method)}-{_slug(str(g.size))}-{i}.svg",
                          part.content.encode("utf-8"), part.title)
                else:
                    doc.p(f"**{part.title}**")
                    doc.pre(part.content)

    doc.h(2, "Provenance")
    vers = records[0].get("versions", {})
    mach = records[0].get("machine", {})
    doc.bullets([f"Versions: {', '.join(f'{k} {v}' for k, v in vers.items())}",
                 f"Machine: {mach.get('processor', '?')}, {mach.get('cpus', '?')} CPUs, "
                 f"{mach.get('system', '?')}",
                 "Teachers: " + "; ".join(f"{tname}: `{gs[0].records[0]['teacher']['source']}`"
                                          for tname, gs in summary.items())])
    md = doc.markdown()
    page = doc.html(f"interp-rl benchmark: {name}")
    for fname, data in figures.items():
        atomic_write_bytes(dest / FIGURES / fname, data)
    paths = {"markdown": atomic_write_text(dest / "report.md", md),
             "html": atomic_write_text(dest / "report.html", page)}
    atomic_write_text(dest / "summary.json", json.dumps(
        {"suite": name, "groups": [{"teacher": g.teacher, "task": g.task, "method": g.method, "size": g.size,
                                    "seeds": g.seeds, "percent_of_teacher": g.percents, **g.estimate}
                                   for gs in summary.values() for g in gs],
         "aggregate": agg}, indent=1) + "\n")
    return paths
