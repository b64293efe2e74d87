"""What a report says about its groups: the targets met or missed and by how much, where each teacher falls
short and what was tried, mixtures against trees, repair before and after, the held-out choices, sparsity,
and the chosen controllers' explanations. Each returns rows or lines; :mod:`benchmarks.report` lays them out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.peers import peers_section
from benchmarks.plots import aggregate_plot, pareto_plot
from benchmarks.records import TARGET, Group, _first, _num, _pct, chosen, left_out_of_aggregate
from benchmarks.sections import (  # noqa: F401 - the registry, long imported from here
    ANALYSES,
    ON_REQUEST,
    Analysis,
    ReportContext,
    analyses_of,
    register_analysis,
)
from benchmarks.sections import fmt as _f
from benchmarks.sections import slug as _slug
from benchmarks.suite import TARGET_KEYS
from interp_rl.document import Document
from interp_rl.errors import InterpRLError

__all__ = ["FEWER_SUFFICE_POINTS", "against_equal_sizes", "against_trees", "at_a_glance", "attribution_table",
           "closest", "explanations", "held_out_choices", "idle_check", "load_tried", "own_cells", "repair_pairs",
           "sparsest_within", "target_checks", "where_short"]



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
    mean = g.mean_percent
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
    from interp_rl.program import PROGRAMS

    def kind(r: dict[str, Any]) -> Any:
        return PROGRAMS.get(str(r.get("kind")))

    # the kinds that can act without some of their pieces (a mixture's experts), judged on the records' usage
    used = [r for r in g.records if (k := kind(r)) is not None and getattr(k, "drops_pieces", lambda: False)()
            and (r.get("usage") or {}).get("idle") is not None]
    if not used:
        return None
    verdicts = []
    for r in used:
        idle, own, usage = int(r["usage"]["idle"]), _num(r["percent_of_teacher"]), r["usage"]
        one, several = getattr(kind(r), "piece_names", ("piece", "pieces"))
        fewer, many = usage.get("without_idle"), f"{idle} idle {one if idle == 1 else several}"
        if idle <= limit:
            verdicts.append((True, 0, many))
        elif fewer is None:
            verdicts.append((False, 2, f"{many} (limit {limit:g}); not run without them (a routing tree names one "
                                       f"{one} per leaf)"))
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

def against_trees(summary: dict[str, list[Group]], budget: float | None = None, kind: str | None = None
                  ) -> list[str]:
    """One line per teacher with mixtures and trees: the best mixture against the best tree within the same
    parameter ``budget`` (all sizes when ``None``), by the mean % of teacher over seeds, the worst episode after.
    Every kind that names one to be compared with (``Program.compared_with``), or only ``kind``.

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
        for mine in sorted(k for k in kinds if k in PROGRAMS and kind in (None, k)):
            other = PROGRAMS[mine].compared_with  # the program kind says what it is set against
            best: dict[str, Group] = {}
            for k in (mine, other):
                fits = [x for x in groups if x.percents and x.records[0].get("kind") == k
                        and (budget is None or (x.mean("size", "parameters") or 0) <= budget)]
                if fits:
                    best[k] = max(fits, key=lambda x: float(np.mean(x.percents)))
            if not other or len(best) < 2:
                continue
            m, t = (float(np.mean(best[k].percents)) for k in (mine, other))
            said = [f"best {name} {x.method} {x.size} ({_f(x.mean('size', 'parameters'), '.0f')} parameters) "
                    f"{float(np.mean(x.percents)):.1f}% (worst {x.worst_percent:.1f}%)"
                    for name, x in ((mine, best[mine]), (other, best[other]))]
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
            text = f"{g.mean_percent:.1f} / {g.worst_percent:.1f} / {round(g.below_half, 1):g}"
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
                             _f(g.mean("size", "parameters"), ".0f"), _f(g.mean_percent, ".1f"),
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

            best = max(mine, key=lambda g: g.mean_percent)
            top = float(np.mean(best.percents))
            ok = [g for g in mine if g.mean_percent >= top - tolerance * abs(top)]
            sparse = min(ok, key=lambda g: (size(g), -g.mean_percent))

            def said(g: Group, unit: str = unit) -> str:
                return (f"{g.size} ({size(g):.0f} {unit}) {g.mean_percent:.1f}% "
                        f"(worst {g.worst_percent:.1f}%)")

            out.append(f"**{teacher}** {method}: best {said(best)}; sparsest within {tolerance:.0%} of it: "
                       f"{said(sparse)}")
    return out

def against_equal_sizes(summary: dict[str, list[Group]], kind: str, other: str) -> list[str]:
    """Per teacher: the best controller of ``kind`` against the best of ``other`` with at most its parameters.

    >>> def g(method, kind, pct, params):
    ...     rec = {"kind": kind, "percent_of_teacher": pct, "cell": {"seed": 0}, "size": {"parameters": params},
    ...            "student": {"returns": [pct]}, "teacher": {"return_mean": 100.0}}
    ...     return Group("T-v5", "T", method, 8, [rec])
    >>> line, = against_equal_sizes({"T": [g("sindy", "equations", 80.0, 60), g("tree", "tree", 70.0, 50),
    ...                                   g("tree", "tree", 99.0, 900)]}, "equations", "tree")
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
        best = max(mine, key=lambda g: g.mean_percent)
        budget = best.mean("size", "parameters") or 0.0
        trees = [g for g in groups if g.percents and g.records[0].get("kind") == other
                 and (g.mean("size", "parameters") or float("inf")) <= budget]

        def said(g: Group) -> str:
            return (f"{g.method} {g.size} ({_f(g.mean('size', 'parameters'), '.0f')} parameters) "
                    f"{g.mean_percent:.1f}% (worst {g.worst_percent:.1f}%)")

        if not trees:
            out.append(f"**{teacher}**: {said(best)}; no {other} of ≤ {budget:.0f} parameters was run")
            continue
        tree = max(trees, key=lambda g: g.mean_percent)
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


def _fidelity(g: Group, states: str) -> str:
    """Action fidelity on ``states``: R², or for discrete actions the share of states where the controller picks
    the teacher's class (R² of class indices means little)."""
    same = g.mean("fidelity", states, "agreement")
    return f"{100 * same:.0f}% same" if same is not None else _f(g.mean("fidelity", states, "r2"), ".2f")


def _fidelity_name(groups: list[Group]) -> str:
    discrete = any(g.mean("fidelity", "student_states", "agreement") is not None for g in groups)
    return "fidelity R²" + (" (discrete actions: % of states with the teacher's class)" if discrete else "")


@register_analysis("summary")
def summary_section(ctx: ReportContext, doc: Document) -> None:
    """Per teacher and method, the smallest size reaching 90% of the teacher, else the best."""
    rows = []
    for teacher, groups in ctx.summary.items():
        for method, g in chosen(groups).items():
            hit = g.estimate["iqm"] >= TARGET
            rows.append([teacher, f"{_f(g.mean('teacher', 'return_mean'), '.0f')}", method,
                         f"{g.size}" + ("" if hit else " (best; none reaches 90%)"),
                         _f(g.mean("size", "parameters"), ".0f"), _est(g.estimate),
                         _fidelity(g, "student_states"),
                         f"{_f(g.mean('latency', 'speedup_single'), '.0f')}× / "
                         f"{_f(g.mean('latency', 'speedup_c_native'), '.0f')}×"])
    doc.h(2, "Summary")
    doc.p("Per teacher and method, the smallest size whose IQM reaches 90% of the teacher "
          "(else the best size).")
    doc.table(["teacher", "teacher return", "method", "size", "parameters", "% of teacher IQM [95% CI]",
               f"{_fidelity_name([g for gs in ctx.summary.values() for g in gs])} (own states)",
               "speed-up Python / C"], rows)


@register_analysis("targets")
def targets_section(ctx: ReportContext, doc: Document) -> None:
    """Every group against the suite's targets, the suite's own cells seed by seed, at a glance, where short."""
    targets, summary = ctx.targets, ctx.summary
    if not targets:
        return
    doc.h(2, "Targets")
    doc.p("The suite's targets: " + "; ".join(TARGET_KEYS[k].format(v) for k, v in targets.items())
          + ". Every group (teacher, method, size; its seeds together: the mean of the seeds' means, the "
          "worst episode of all, the share of all failure-rate episodes) against them; a miss says by how much. "
          "Next to them, the teacher against its own mean on its evaluation episodes: where the teacher "
          "itself has a low worst episode or episodes below half (Reacher: the target's distance sets the "
          "cost), those two targets measure the task more than the controller.")
    if ctx.compared:
        held_out = {t["name"] for t in ctx.suite.get("teachers") or [] if t.get("held_out")}
        doc.h(3, "This suite's own cells")
        doc.p(f"The methods this suite runs ({', '.join(sorted({r['method'] for r in ctx.own}))}), seed by seed and "
              "then the seeds together (bold); episodes below half counted over the failure-rate episodes. "
              + ("Held out: agents these methods were not chosen on (" + ", ".join(sorted(held_out)) + ")."
                 if held_out else ""))
        doc.table(["teacher", "method", "size", "seed", "parameters", "% of teacher", "worst episode %",
                   "episodes below half", "targets met, or the misses"],
                  own_cells(summary, {r["method"] for r in ctx.own}, targets, held_out))
        doc.h(3, "Every method against the targets")
    rows = []
    for teacher, groups in summary.items():
        for g in groups:
            t_worst, t_below = g.teacher_reference
            rows.append([teacher, g.method, str(g.size), _f(g.mean("size", "parameters"), ".0f"),
                         _f(g.mean_percent if g.percents else None, ".1f"),
                         _f(g.worst_percent, ".1f"), _f(g.below_half, ".1f"),
                         f"{_f(t_worst, '.1f')} / {_f(t_below, '.1f')}", _verdict(g, targets)])
    doc.table(["teacher", "method", "size", "parameters", "mean % of teacher", "worst episode %",
               "% of episodes below half", "the teacher itself: worst % / % below half",
               "targets met, or the misses"], rows)

    doc.h(3, "At a glance")
    doc.p("Per teacher and method: mean % of teacher / worst episode % / % of episodes below half, the "
          "seeds together as above; in bold where every target is met.")
    doc.table(*at_a_glance(summary, targets))

    tried = load_tried(ctx.results)
    doc.h(3, "Where short")
    doc.p("Per teacher, the controller closest to the targets (most targets met, then the highest mean), "
          "what it misses, and what was tried: the suite's methods on that teacher and, from "
          "`tried.toml` in the results folder, the experiments outside the suite with their commands.")
    doc.bullets(where_short(summary, targets, tried))
    if everywhere := [t for t in tried if t["teacher"] == "*"]:
        doc.p("Tried on every teacher:")
        doc.bullets([f"{t['what']}: {t['result']} (`{t['command']}`)." for t in everywhere])
    against_trees_section(ctx, doc)


def _title(kind: str) -> str:
    from interp_rl.program import PROGRAMS

    return getattr(PROGRAMS.get(kind), "title", "") or kind.capitalize()


def against_trees_section(ctx: ReportContext, doc: Document) -> None:
    """Each kind set against the one it is compared with (``Program.compared_with``), within the parameter target."""
    from interp_rl.program import PROGRAMS

    targets = ctx.targets
    kinds = sorted({str(g.records[0].get("kind")) for gs in ctx.summary.values() for g in gs if g.records})
    for kind in kinds:
        other = getattr(PROGRAMS.get(kind), "compared_with", "")
        if other and (lines := against_trees(ctx.summary, targets.get("parameters"), kind)):
            doc.h(3, f"{_title(kind)} against {_title(other).lower()}")
            doc.p(f"Per teacher, the best {kind} against the best {other} within the same parameter budget"
                  + (f" (≤ {targets['parameters']:g})" if "parameters" in targets else "")
                  + ", by the mean % of teacher over seeds.")
            doc.bullets(lines)


def _table_section(doc: Document, title: str, text: str, header: list[str], rows: list[list[str]]) -> None:
    """A section of one table, when there are rows."""
    if rows:
        doc.h(2, title)
        doc.p(text)
        doc.table(header, rows)


@register_analysis("repair")
def repair_section(ctx: ReportContext, doc: Document) -> None:
    """Each method next to the same method repaired from diagnosis, seed by seed."""
    _table_section(
        doc, "Repair from diagnosis: before and after",
        "Per teacher, each method next to the same method with repair from diagnosis (`-repair`: targeted "
        "DAgger from the run-up to each failure, `interp-rl distill ... --repair-rounds`), on the seeds both "
        "ran, so each pair is one distillation before and after its repair: mean % of teacher, worst "
        "episode %, and failure-rate episodes below half the teacher's mean (before → after). Found: per "
        "seed, the failures in each repair round's fresh episodes (the points of no return it learns "
        "from), and the round the held-out episodes kept.",
        ["teacher", "method → repaired", "seeds", "mean % of teacher", "worst episode %", "episodes below half",
         "found"], repair_pairs(ctx.summary))


@register_analysis("verification")
def verification_section(ctx: ReportContext, doc: Document) -> None:
    """Per teacher and method: the suite's domain rules decided on each seed's controller, and the time it took."""
    rows, per_rule = [], []
    for groups in ctx.summary.values():
        for g in groups:
            found = [r["verification"] for r in g.records if r.get("verification")]
            if not found:
                continue
            counts = {s: sum(v["counts"][s] for v in found) for s in ("proved", "refuted", "unknown")}
            rows.append([g.teacher, f"{g.method}-{g.size}", str(len(found)),
                         str(counts["proved"]), str(counts["refuted"]), str(counts["unknown"]),
                         f"{max(v['seconds'] for v in found):.2f}"])
            names = [d["name"] for d in found[0]["verdicts"]]
            for name in names:
                statuses = [next(d["status"] for d in v["verdicts"] if d["name"] == name) for v in found]
                per_rule.append([g.teacher, f"{g.method}-{g.size}", name,
                                 ", ".join(f"{statuses.count(s)} {s}" for s in ("proved", "refuted", "unknown")
                                           if statuses.count(s))])
    if not rows:
        return
    files = sorted({r["verification"]["properties"] for r in ctx.own if r.get("verification")})
    doc.h(2, "Verification against the plant's rules")
    doc.p(f"Each controller checked against its task's property file ({', '.join(f'`{f}`' for f in files)}, in "
          "`benchmarks/properties/`) by `interp-rl verify`: every rule decided region by region by linear programs, "
          "over the whole domain box the file gives, not at sampled states. Counts are summed over the seeds; "
          "seconds are the slowest controller's, all rules together.")
    doc.table(["teacher", "method", "controllers", "proved", "refuted", "unknown", "seconds (slowest)"], rows)
    doc.p("Rule by rule, over the seeds:")
    doc.table(["teacher", "method", "rule", "verdicts"], per_rule)


@register_analysis("held-out-choices")
def held_out_section(ctx: ReportContext, doc: Document) -> None:
    """What the held-out episodes chose in each cell: the DART level, the restart."""
    _table_section(
        doc, "What the held-out episodes chose",
        "Per cell, the choices made on held-out episodes (never the evaluation's): each DART level's best "
        "held-out score (the mean of the mean return and of the worst quarter's; the kept level bold), the "
        "kept restart (fit) of that level, and the % of teacher the evaluation then gave (after fine-tuning, "
        "where the method fine-tunes).",
        ["teacher", "method", "seed", "DART level: held-out score (worst return)", "kept restart", "% of teacher"],
        held_out_choices(ctx.summary))


@register_analysis("sparsity")
def sparsity_section(ctx: ReportContext, doc: Document) -> None:
    """Per teacher and method run at several sizes: the best size and the sparsest within 5% of it."""
    if lines := sparsest_within(ctx.summary):
        doc.h(2, "Sparsity: the sparsest within 5% of the best")
        doc.p("Per teacher and method run at several sizes: the size with the best mean % of teacher (seeds "
              "together) and the sparsest size whose mean is within 5% of it.")
        doc.bullets(lines)


@register_analysis("equal-size")
def equal_size_section(ctx: ReportContext, doc: Document) -> None:
    """Each kind set against the one it meets at no more than its own parameters (``Program.equal_size_with``)."""
    from interp_rl.program import PROGRAMS

    kinds = sorted({str(r.get("kind")) for r in ctx.own + [r for rs in ctx.compared.values() for r in rs]})
    for kind in kinds:
        other = getattr(PROGRAMS.get(kind), "equal_size_with", "")
        if other and (lines := against_equal_sizes(ctx.summary, kind, other)):
            doc.h(2, f"{_title(kind)} against {_title(other).lower()} of equal size")
            doc.p(f"Per teacher, the best of the {_title(kind).lower()} against the best of the "
                  f"{_title(other).lower()} with at most its parameters.")
            doc.bullets(lines)


@register_analysis("aggregate")
def aggregate_section(ctx: ReportContext, doc: Document) -> None:
    """The IQM of % of teacher over every task's seeds, per method and size, with its interval and plot."""
    agg = ctx.aggregate
    if not agg:
        return
    doc.h(2, "All tasks together")
    doc.p(f"IQM of % of teacher over the seed × task runs ({agg[0]['tasks']} tasks; per method the seeds "
          "that every task ran, so that every task weighs the same), with 95% stratified-bootstrap "
          "intervals (seeds resampled within each task).")
    ctx.image("aggregate.png", aggregate_plot(agg), "% of teacher against size, all tasks")
    doc.table(["method", "size", "parameters (mean)", "seeds", "IQM [95% CI]", "mean"],
              [[r["method"], str(r["size"]), f"{r['parameters']:.0f}",
                ", ".join(map(str, r["seeds"])),
                f"{r['iqm']:.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}]", f"{r['mean']:.1f}"]
               for r in agg])
    if left := left_out_of_aggregate(ctx.summary):
        doc.p("Not in this table: " + "; ".join(left) + ".")


@register_analysis("teachers")
def teachers_section(ctx: ReportContext, doc: Document) -> None:
    """Per teacher: its return, every group's figures, the Pareto plot, and the chosen controllers explained."""
    for teacher, groups in ctx.summary.items():
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
        ctx.image(f"pareto-{_slug(teacher)}.png", pareto_plot(teacher, groups),
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
                f"{_fidelity(g, 'teacher_states')} / {_fidelity(g, 'student_states')}",
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
                   "pieces acting on < 2% of states", "router-tree agreement %",
                   f"{_fidelity_name(groups)} teacher / own states",
                   "latency Python / C", "teacher latency", "batch latency / teacher", "distil s",
                   "Shapley rank agreement with the teacher (Spearman)"], rows)
        for method, g in chosen(groups).items():
            if any(method in {r["method"] for r in rs} for rs in ctx.compared.values()):
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
            for i, part in enumerate(explanations(ctx.results, g)):
                if part.kind == "svg":
                    ctx.image(f"{_slug(teacher)}-{_slug(method)}-{_slug(str(g.size))}-{i}.svg",
                              part.content.encode("utf-8"), part.title)
                else:
                    doc.p(f"**{part.title}**")
                    doc.pre(part.content)


# Our frontier against the published peers (benchmarks/peers.py reads no module of this one: no cycle).
register_analysis("peers", default=False)(peers_section)
