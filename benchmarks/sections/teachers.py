"""Per teacher, everything measured: its return, every group's figures, the Pareto plot, which features drive each
action (:func:`attribution_table`), and the chosen controllers drawn and explained (the ``teachers`` section)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from benchmarks.plots import pareto_plot
from benchmarks.records import chosen, first_number, num, percent
from benchmarks.sections.context import ReportContext
from benchmarks.sections.explanations import explanations
from benchmarks.sections.format import estimate, fidelity, fidelity_name, fmt, seconds, slug
from interp_rl.document import Document

__all__ = ["attribution_table", "teachers_section"]


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
                     f"Teacher return on the evaluation episodes: {fmt(t_mean, '.1f')} (mean over seeds; "
                     f"± {fmt(groups[0].mean('teacher', 'return_std'), '.1f')} over episodes)"])
        ctx.image(f"pareto-{slug(teacher)}.png", functools.partial(pareto_plot, teacher, groups),
                  f"{teacher}: % of teacher against parameters per method")
        rows = []
        for g in groups:
            rows.append([
                g.method, str(g.size), fmt(first_number(g.mean("size", "leaves"), g.mean("size", "experts")), ".0f"),
                fmt(g.mean("size", "depth"), ".0f"),
                fmt(g.mean("size", "nonzero_terms"), ".0f"), fmt(g.mean("size", "parameters"), ".0f"),
                fmt(g.mean("size", "export_bytes", "c"), ".0f"),
                fmt(g.mean("student", "return_mean"), ".0f"), estimate(g.estimate),
                "[" + ", ".join(f"{p:.0f}" for p in g.percents) + "]", fmt(g.worst_percent, ".0f"),
                f"{fmt(g.below_half, '.1f')} ({len(g.failure_flags())})",
                fmt(g.mean("usage", "idle"), ".1f"),
                fmt(percent(g.mean("details", "fit_facts", "router_agreement")), ".0f"),
                f"{fidelity(g, 'teacher_states')} / {fidelity(g, 'student_states')}",
                f"{seconds(g.mean('latency', 'student_single_s'))} / "
                f"{seconds(g.mean('latency', 'student_c_native_s'))}",
                seconds(g.mean("latency", "teacher_single_s")),
                f"{seconds(g.mean('latency', 'student_batch_s_per_obs'))} / "
                f"{seconds(g.mean('latency', 'teacher_batch_s_per_obs'))}",
                fmt(g.mean("distill_seconds"), ".0f"),
                fmt(g.mean("attribution_agreement", "mean_spearman"), ".2f"),
            ])
        doc.table(["method", "size", "leaves / experts", "depth", "non-zero terms", "parameters", "C bytes",
                   "return", "% of teacher IQM [95% CI]", "per seed", "worst episode %",
                   "% of episodes below half the teacher (episodes)",
                   "pieces acting on < 2% of states", "router-tree agreement %",
                   f"{fidelity_name(groups)} teacher / own states",
                   "latency Python / C", "teacher latency", "batch latency / teacher", "distil s",
                   "Shapley rank agreement with the teacher (Spearman)"], rows)
        for method, g in chosen(groups).items():
            if any(method in {r["method"] for r in rs} for rs in ctx.compared.values()):
                continue  # described in its own suite's report
            rec = g.median_record()
            doc.h(3, f"Chosen {method} controller: size {g.size}, seed {rec['cell']['seed']} "
                     f"({num(rec['percent_of_teacher']):.1f}% of teacher)")
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
                    ctx.image(f"{slug(teacher)}-{slug(method)}-{slug(str(g.size))}-{i}.svg", part.svg_bytes,
                              part.title)
                else:
                    doc.p(f"**{part.title}**")
                    doc.pre(part.content)
