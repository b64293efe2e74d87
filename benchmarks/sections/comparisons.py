"""What a report sets side by side: each method before and after its repair (:func:`repair_pairs`), the choices
made on held-out episodes (:func:`held_out_choices`), the sparsest size within 5% of the best
(:func:`sparsest_within`), each kind against another of equal size (:func:`against_equal_sizes`), and the domain
rules verified; each with its section."""

from __future__ import annotations

import numpy as np

from benchmarks.records import Group
from benchmarks.sections.context import ReportContext
from benchmarks.sections.format import below_count, fmt, kind_title
from interp_rl.document import Document

__all__ = ["against_equal_sizes", "equal_size_section", "held_out_choices", "held_out_section", "repair_pairs",
           "repair_section", "sparsest_within", "sparsity_section", "verification_section"]


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
                return f"{fmt(a, '.1f')} → {fmt(b, '.1f')}"

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
                         f"{below_count(before)} → {below_count(after)}",
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
                rows.append([teacher, g.method, str(r["cell"]["seed"]), scores or "–", fmt(kept, "d"),
                             fmt(r["percent_of_teacher"], ".1f")])
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
            return (f"{g.method} {g.size} ({fmt(g.mean('size', 'parameters'), '.0f')} parameters) "
                    f"{g.mean_percent:.1f}% (worst {g.worst_percent:.1f}%)")

        if not trees:
            out.append(f"**{teacher}**: {said(best)}; no {other} of ≤ {budget:.0f} parameters was run")
            continue
        tree = max(trees, key=lambda g: g.mean_percent)
        a, b = float(np.mean(best.percents)), float(np.mean(tree.percents))
        out.append(f"**{teacher}**: {kind} {'above' if a > b else 'below'}, by {abs(a - b):.1f} points: "
                   f"{said(best)} against {said(tree)}")
    return out


def _table_section(doc: Document, title: str, text: str, header: list[str], rows: list[list[str]]) -> None:
    """A section of one table, when there are rows."""
    if rows:
        doc.h(2, title)
        doc.p(text)
        doc.table(header, rows)


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


def sparsity_section(ctx: ReportContext, doc: Document) -> None:
    """Per teacher and method run at several sizes: the best size and the sparsest within 5% of it."""
    if lines := sparsest_within(ctx.summary):
        doc.h(2, "Sparsity: the sparsest within 5% of the best")
        doc.p("Per teacher and method run at several sizes: the size with the best mean % of teacher (seeds "
              "together) and the sparsest size whose mean is within 5% of it.")
        doc.bullets(lines)


def equal_size_section(ctx: ReportContext, doc: Document) -> None:
    """Each kind set against the one it meets at no more than its own parameters (``Program.equal_size_with``)."""
    from interp_rl.program import PROGRAMS

    kinds = sorted({str(r.get("kind")) for r in ctx.own + [r for rs in ctx.compared.values() for r in rs]})
    for kind in kinds:
        other = getattr(PROGRAMS.get(kind), "equal_size_with", "")
        if other and (lines := against_equal_sizes(ctx.summary, kind, other)):
            doc.h(2, f"{kind_title(kind)} against {kind_title(other).lower()} of equal size")
            doc.p(f"Per teacher, the best of the {kind_title(kind).lower()} against the best of the "
                  f"{kind_title(other).lower()} with at most its parameters.")
            doc.bullets(lines)
