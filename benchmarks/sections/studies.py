"""Report sections of the study suites: SILVER's steps (``silver``), how many sensors a controller needs
(``sensors``), and a warm start against RL from scratch at equal environment steps (``warm-vs-scratch``).

Each reads the suite's records only; a suite lists the ones it wants (``[report] analyses = [...]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.records import Group, num
from benchmarks.sections.context import ReportContext
from benchmarks.sections.format import fmt, slug
from interp_rl.compare import percent_of_teacher
from interp_rl.document import Document, png, pyplot

__all__ = ["PICKS", "env_steps", "sensor_rows", "sensors_section", "silver_rows", "silver_section", "warm_curve",
           "warm_vs_scratch_section"]


#: The settings a sensor study's methods vary: the teacher's top features by Shapley value, or random ones.
PICKS = {"top_features": "Shapley", "random_features": "random"}


def silver_rows(summary: dict[str, list[Group]]) -> list[list[str]]:
    """Per teacher and method: % of teacher, worst episode, the teacher's class kept, size and SILVER's steps.

    >>> rec = {"cell": {"seed": 0}, "percent_of_teacher": 98.0, "teacher": {"return_mean": 200.0},
    ...        "student": {"returns": [190.0, 200.0]}, "fidelity": {"teacher_states": {"agreement": 0.97}},
    ...        "size": {"parameters": 5}, "details": {"fit_facts": {"cluster_purity": 0.91,
    ...        "boundary_accuracy": 0.95, "rule_accuracy": 0.96}}}
    >>> silver_rows({"t": [Group("CartPole-v1", "t", "silver-refit", 4, [rec])]})[0]
    ['t', 'silver-refit', '1', '98.0', '95.0', '97', '5', '0.910', '0.950', '0.960']
    """
    rows = []
    for teacher, groups in summary.items():
        for g in groups:
            facts = [(r.get("details") or {}).get("fit_facts") or {} for r in g.records]

            def fact(key: str, facts: list[dict[str, Any]] = facts) -> str:
                vals = [f[key] for f in facts if f.get(key) is not None]
                return f"{np.mean(vals):.3f}" if vals else ""

            agree = g.mean("fidelity", "teacher_states", "agreement")
            rows.append([teacher, g.method, str(len(g.records)), fmt(g.mean_percent, ".1f"),
                         fmt(g.worst_percent, ".1f"),
                         fmt(None if agree is None else 100 * agree, ".0f"), fmt(g.mean("size", "parameters"), ".0f"),
                         fact("cluster_purity"), fact("boundary_accuracy"), fact("rule_accuracy")])
    return rows


def _bars(summary: dict[str, list[Group]], ylabel: str) -> bytes:
    """Mean % of teacher per teacher (x) and method (bars)."""
    plt = pyplot()
    teachers = list(summary)
    methods = list(dict.fromkeys(g.method for gs in summary.values() for g in gs))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(teachers)), 3.6))
    width = 0.8 / max(1, len(methods))
    for i, m in enumerate(methods):
        ys = [next((g.mean_percent for g in summary[t] if g.method == m), 0.0) for t in teachers]
        ax.bar(np.arange(len(teachers)) + i * width, ys, width, label=m)
    ax.axhline(100, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(teachers)) + width * (len(methods) - 1) / 2, teachers, fontsize=7, rotation=20,
                  ha="right")
    ax.set_ylabel(ylabel)
    ax.set_ylim(top=max(125.0, ax.get_ylim()[1]))  # room above the bars for the legend
    ax.legend(fontsize=7, ncol=len(methods), loc="upper center")
    fig.tight_layout()
    return png(fig)


def silver_section(ctx: ReportContext, doc: Document) -> None:
    """SILVER's variants per discrete teacher: the return kept, the teacher's class kept, size, and its steps."""
    rows = silver_rows(ctx.summary)
    if not rows or not any(r[7] for r in rows):
        return
    held_out = [t["name"] for t in ctx.suite.get("teachers") or [] if t.get("held_out")]
    doc.h(2, "SILVER's steps")
    doc.p("Per teacher and method, the seeds together: mean % of teacher (100 = the teacher, higher is better, "
          "also for MountainCar's negative returns), the worst episode, the share of teacher-visited states where "
          "the controller picks the teacher's class, the non-zero parameters, and SILVER's steps on its last "
          "round's data: how pure the clusters of Shapley vectors are (the share of the majority class), how "
          "well the boundary separates them in Shapley space, and how well the rule on raw features reproduces "
          "the teacher's class on its training states."
          + (f" Held out (the default was not chosen on them): {', '.join(held_out)}." if held_out else ""))
    ctx.image("silver.png", _bars(ctx.summary, "% of teacher (mean over seeds)"), "% of teacher per method")
    doc.table(["teacher", "method", "seeds", "% of teacher", "worst episode %", "teacher's class kept %",
               "parameters", "cluster purity", "boundary accuracy (Shapley space)",
               "rule accuracy (training states)"], rows)


def _k(g: Group) -> tuple[int, str]:
    """(features read, how they were picked) of a group: its varied setting, else every feature of the task."""
    from envs import task_signals

    rec = g.records[0]
    name = rec.get("size_name")
    if name in PICKS and int(g.size):  # 0: every feature
        return int(g.size), PICKS[name]
    return len(task_signals(rec["task"])[0]), "all"


def sensor_rows(groups: list[Group]) -> tuple[list[str], list[list[str]]]:
    """The header and rows of one teacher's table: per number of features read (rows), each method's mean %
    of teacher [worst episode %] (seeds). A method run on every feature fills the row of the task's size."""
    series: dict[str, dict[int, Group]] = {}
    for g in groups:
        k, _ = _k(g)
        series.setdefault(g.method, {})[k] = g
    ks = sorted({k for s in series.values() for k in s})
    rows = []
    for k in ks:
        row = [str(k)]
        for method in series:
            at = series[method].get(k)
            row.append("" if at is None else f"{at.mean_percent:.1f} [{at.worst_percent:.0f}] ({len(at.records)})")
        rows.append(row)
    return ["features read", *series], rows


def _ranking(groups: list[Group]) -> list[str]:
    for g in groups:
        for r in g.records:
            subset = (r.get("details") or {}).get("feature_subset") or {}
            if subset.get("ranking") and r["cell"]["seed"] == 0:
                return list(subset["ranking"])
    return []


def sensors_section(ctx: ReportContext, doc: Document) -> None:
    """How many features a controller needs: % of teacher against the features it reads, picked by the
    teacher's Shapley ranking or at random."""
    by_teacher = {t: gs for t, gs in ctx.summary.items()
                  if any(g.records[0].get("size_name") in PICKS for g in gs)}
    if not by_teacher:
        return
    doc.h(2, "How many sensors does a controller need?")
    doc.p("Per teacher: each controller fitted on the teacher's k most important features by Shapley value "
          "(`--top-features k`, the teacher's ranking on 500 states it visits, per seed) or on k features drawn "
          "at random (`--random-features k`, the baseline); a method run on every feature gives the row of the "
          "task's size. Cells: mean % of teacher over the seeds [worst episode %] (seeds).")
    plt = pyplot()
    fig, axes = plt.subplots(1, len(by_teacher), figsize=(4.6 * len(by_teacher), 3.8), squeeze=False)
    for ax, (teacher, groups) in zip(axes[0], by_teacher.items(), strict=True):
        doc.h(3, teacher)
        if order := _ranking(groups):
            doc.p("The teacher's ranking (seed 0): " + ", ".join(f"`{f}`" for f in order))
        doc.table(*sensor_rows(groups))
        for method in dict.fromkeys(g.method for g in groups):
            pts = sorted((_k(g)[0], g.mean_percent) for g in groups if g.method == method)
            pick = _k(next(g for g in groups if g.method == method))[1]
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", ls="--" if pick == "random" else "-",
                    label=method)
        ax.axhline(100, color="grey", lw=0.8)
        ax.set_title(teacher, fontsize=9)
        ax.set_xlabel("features read (k)")
        ax.set_ylabel("% of teacher")
        ax.legend(fontsize=7)
    fig.tight_layout()
    ctx.image("sensors.png", png(fig), "% of teacher against the features read")


def env_steps(rec: dict[str, Any]) -> int | None:
    """Environment steps a record's controller was trained on: DAgger's rounds plus the fine-tuning's
    transitions, or the training from scratch's steps; ``None`` when DAgger ran more than once (DART levels) or
    repair collected more episodes, so its history does not count every step. Held-out episodes (choosing the
    round, the restart, the checkpoint) count on neither side."""
    d = rec.get("details") or {}
    if d.get("scratch"):
        return int(d["scratch"]["steps"])
    history, config = d.get("dagger_history") or [], rec.get("config") or {}
    levels = [x for x in str(config.get("noise_levels") or "").split(",") if x.strip()]
    if not history or len(levels) > 1 or d.get("repair"):
        return None
    tuned = ((d.get("rl") or {}).get("history") or [{"step": 0}])[-1]["step"]
    return int(history[-1]["samples"]) + int(tuned)


def warm_curve(rec: dict[str, Any]) -> tuple[list[int], list[float]]:
    """(environment steps, held-out return) of DAgger's rounds and then of the fine-tuning's evaluations, or of
    the training from scratch's checkpoints."""
    d = rec.get("details") or {}
    if d.get("scratch"):
        hist = [h for h in d["scratch"].get("history") or []  # ARS has no checkpoint evaluations: its own mean
                if (h.get("eval_return") if h.get("eval_return") is not None else h.get("recent_return")) is not None]
        return [int(h["step"]) for h in hist], [float(h["eval_return"] if h.get("eval_return") is not None
                                                      else h["recent_return"]) for h in hist]
    xs, ys, steps = [], [], 0
    for row in d.get("dagger_history") or []:
        steps = int(row["samples"])
        xs.append(steps)
        ys.append(float(row["return_mean"]))
    for row in ((d.get("rl") or {}).get("history") or [])[1:]:
        xs.append(steps + int(row["step"]))
        ys.append(float(row["return_mean"]))
    return xs, ys


def warm_vs_scratch_section(ctx: ReportContext, doc: Document) -> None:
    """Per teacher with a controller trained from scratch: it against the fine-tuned distillations of the same
    kind and size that used the same environment steps, seed by seed, with their learning curves."""
    plt = pyplot()
    rows = []
    figures = []
    for teacher, groups in ctx.summary.items():
        scratch = [g for g in groups if any((r.get("details") or {}).get("scratch") for r in g.records)]
        for s in scratch:
            budget = env_steps(s.records[0])
            kind = s.records[0].get("kind")
            warm = [g for g in groups if g is not s and g.size == s.size and g.records[0].get("kind") == kind
                    and (g.records[0].get("details") or {}).get("rl")
                    and {env_steps(r) for r in g.records} == {budget}]
            if not warm:
                continue
            fig, ax = plt.subplots(figsize=(7, 4))
            for g, style in [*((w, "-") for w in warm), (s, "--")]:
                for r in g.records:
                    xs, ys = warm_curve(r)
                    t = r["teacher"]["return_mean"]
                    ax.plot(xs, [percent_of_teacher(y, t) for y in ys], ls=style, marker="o", ms=3,
                            label=f"{g.method} (seed {r['cell']['seed']})")
                    rows.append([teacher, g.method, "from scratch" if g is s else "distilled, then fine-tuned",
                                 str(r["cell"]["seed"]), f"{env_steps(r):,}", f"{num(r['percent_of_teacher']):.1f}",
                                 f"{num(r['worst_percent_of_teacher']):.1f}"])
            ax.axhline(100, color="black", lw=0.8, alpha=0.5)
            ax.set_xlabel("environment steps of training")
            ax.set_ylabel("held-out return, % of the teacher's mean")
            ax.set_title(f"{teacher}: warm start against RL from scratch", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            fig.tight_layout()
            figures.append((f"warm-vs-scratch-{slug(teacher)}-{slug(s.method)}.png", png(fig), teacher))
    if not rows:
        return
    doc.h(2, "Warm start against RL from scratch")
    doc.p("Per teacher with a controller trained by RL from scratch (`--scratch-steps`; the teacher only the "
          "yardstick): it against each fine-tuned distillation of the same kind and size that used as many "
          "environment steps (DAgger's rounds plus the fine-tuning's transitions; held-out evaluation episodes "
          "counted on neither side), seed by seed on the suite's evaluation episodes. The curves: the held-out "
          "return of DAgger's rounds and the fine-tuning's evaluations, against the training's checkpoint "
          "evaluations.")
    doc.table(["teacher", "method", "start", "seed", "environment steps", "% of teacher", "worst episode %"], rows)
    for name, data, teacher in figures:
        ctx.image(name, data, f"{teacher}: held-out return against environment steps")
