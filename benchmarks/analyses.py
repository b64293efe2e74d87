"""What a report says about its groups: the targets met or missed and by how much, where each teacher falls
short and what was tried, mixtures against trees, repair before and after, the held-out choices, sparsity,
and the chosen controllers' explanations. Each returns rows or lines; :mod:`benchmarks.report` lays them out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.records import Group, _num
from interp_rl.errors import InterpRLError

__all__ = ["FEWER_SUFFICE_POINTS", "against_equal_trees", "against_trees", "at_a_glance", "attribution_table",
           "closest", "explanations", "held_out_choices", "idle_check", "load_tried", "own_cells", "repair_pairs",
           "sparsest_within", "target_checks", "where_short"]


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
