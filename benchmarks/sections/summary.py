"""The report's overview: per teacher and method the size chosen (``summary``), and every task together
(``aggregate``: the IQM of % of teacher per method and size, with its interval and plot)."""

from __future__ import annotations

import functools

from benchmarks.plots import aggregate_plot
from benchmarks.records import TARGET, chosen, left_out_of_aggregate
from benchmarks.sections.context import ReportContext
from benchmarks.sections.format import estimate, fidelity, fidelity_name, fmt
from interp_rl.document import Document

__all__ = ["aggregate_section", "summary_section"]


def summary_section(ctx: ReportContext, doc: Document) -> None:
    """Per teacher and method, the smallest size reaching 90% of the teacher, else the best."""
    rows = []
    for teacher, groups in ctx.summary.items():
        for method, g in chosen(groups).items():
            hit = g.estimate["iqm"] >= TARGET
            rows.append([teacher, f"{fmt(g.mean('teacher', 'return_mean'), '.0f')}", method,
                         f"{g.size}" + ("" if hit else " (best; none reaches 90%)"),
                         fmt(g.mean("size", "parameters"), ".0f"), estimate(g.estimate),
                         fidelity(g, "student_states"),
                         f"{fmt(g.mean('latency', 'speedup_single'), '.0f')}× / "
                         f"{fmt(g.mean('latency', 'speedup_c_native'), '.0f')}×"])
    doc.h(2, "Summary")
    doc.p("Per teacher and method, the smallest size whose IQM reaches 90% of the teacher "
          "(else the best size).")
    doc.table(["teacher", "teacher return", "method", "size", "parameters", "% of teacher IQM [95% CI]",
               f"{fidelity_name([g for gs in ctx.summary.values() for g in gs])} (own states)",
               "speed-up Python / C"], rows)


def aggregate_section(ctx: ReportContext, doc: Document) -> None:
    """The IQM of % of teacher over every task's seeds, per method and size, with its interval and plot."""
    agg = ctx.aggregate
    if not agg:
        return
    doc.h(2, "All tasks together")
    doc.p(f"IQM of % of teacher over the seed × task runs ({agg[0]['tasks']} tasks; per method the seeds "
          "that every task ran, so that every task weighs the same), with 95% stratified-bootstrap "
          "intervals (seeds resampled within each task).")
    ctx.image("aggregate.png", functools.partial(aggregate_plot, agg), "% of teacher against size, all tasks")
    doc.table(["method", "size", "parameters (mean)", "seeds", "IQM [95% CI]", "mean"],
              [[r["method"], str(r["size"]), f"{r['parameters']:.0f}",
                ", ".join(map(str, r["seeds"])),
                f"{r['iqm']:.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}]", f"{r['mean']:.1f}"]
               for r in agg])
    if left := left_out_of_aggregate(ctx.summary):
        doc.p("Not in this table: " + "; ".join(left) + ".")
