"""The suite's targets in a report: each group met or missed and by how much (:func:`target_checks`), the idle
pieces of a mixture (:func:`idle_check`), the suite's own cells seed by seed (:func:`own_cells`), every method at a
glance (:func:`at_a_glance`), where each teacher falls short and what was tried (:func:`where_short`,
``tried.toml``), and each kind against the one it is compared with (:func:`against_trees`); the ``targets``
section lays them out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.records import Group, num
from benchmarks.sections.context import ReportContext
from benchmarks.sections.format import below_count, fmt, kind_title
from benchmarks.suite import TARGET_KEYS
from interp_rl.document import Document
from interp_rl.errors import InterpRLError

__all__ = ["FEWER_SUFFICE_POINTS", "against_trees", "against_trees_section", "at_a_glance", "closest", "idle_check",
           "load_tried", "own_cells", "target_checks", "targets_section", "verdict", "where_short"]


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
        idle, own, usage = int(r["usage"]["idle"]), num(r["percent_of_teacher"]), r["usage"]
        one, several = getattr(kind(r), "piece_names", ("piece", "pieces"))
        fewer, many = usage.get("without_idle"), f"{idle} idle {one if idle == 1 else several}"
        if idle <= limit:
            verdicts.append((True, 0, many))
        elif fewer is None:
            verdicts.append((False, 2, f"{many} (limit {limit:g}); not run without them (a routing tree names one "
                                       f"{one} per leaf)"))
        elif ((pct := num(fewer["percent_of_teacher"])) >= own - FEWER_SUFFICE_POINTS
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
            said = [f"best {name} {x.method} {x.size} ({fmt(x.mean('size', 'parameters'), '.0f')} parameters) "
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
                f" ({fmt(g.mean('size', 'parameters'), '.0f')} parameters)")
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


def verdict(g: Group, targets: dict[str, float]) -> str:
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
                             fmt(one.mean("size", "parameters"), ".0f"), fmt(num(r["percent_of_teacher"]), ".1f"),
                             fmt(one.worst_percent, ".1f"), below_count(one), verdict(one, targets)])
            if len(runs) > 1:
                rows.append([f"**{name}**", f"**{g.method}**", f"**{g.size}**",
                             f"**{', '.join(str(r['cell']['seed']) for r in runs)}**",
                             fmt(g.mean("size", "parameters"), ".0f"), fmt(g.mean_percent, ".1f"),
                             fmt(g.worst_percent, ".1f"), below_count(g), verdict(g, targets)])
    return rows


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
            rows.append([teacher, g.method, str(g.size), fmt(g.mean("size", "parameters"), ".0f"),
                         fmt(g.mean_percent if g.percents else None, ".1f"),
                         fmt(g.worst_percent, ".1f"), fmt(g.below_half, ".1f"),
                         f"{fmt(t_worst, '.1f')} / {fmt(t_below, '.1f')}", verdict(g, targets)])
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


def against_trees_section(ctx: ReportContext, doc: Document) -> None:
    """Each kind set against the one it is compared with (``Program.compared_with``), within the parameter target."""
    from interp_rl.program import PROGRAMS

    targets = ctx.targets
    kinds = sorted({str(g.records[0].get("kind")) for gs in ctx.summary.values() for g in gs if g.records})
    for kind in kinds:
        other = getattr(PROGRAMS.get(kind), "compared_with", "")
        if other and (lines := against_trees(ctx.summary, targets.get("parameters"), kind)):
            doc.h(3, f"{kind_title(kind)} against {kind_title(other).lower()}")
            doc.p(f"Per teacher, the best {kind} against the best {other} within the same parameter budget"
                  + (f" (≤ {targets['parameters']:g})" if "parameters" in targets else "")
                  + ", by the mean % of teacher over seeds.")
            doc.bullets(lines)
