"""Reports of a results folder: Markdown and one self-contained HTML page, with plots and trees.

``write_report(RESULTS)`` reads ``RESULTS/records/*.json`` (and ``RESULTS/suite.json``) and
writes ``report.md``, ``report.html`` (every image embedded, nothing fetched) and the pictures
under ``figures/``. Across seeds, scores are summarised as rliable recommends: the
interquartile mean with a 95% stratified-bootstrap confidence interval
(:mod:`benchmarks.stats`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.analyses import (
    _est,
    _f,
    _t,
    _verdict,
    against_equal_trees,
    against_trees,
    at_a_glance,
    attribution_table,
    explanations,
    held_out_choices,
    load_tried,
    own_cells,
    repair_pairs,
    sparsest_within,
    where_short,
)
from benchmarks.harness import load_records
from benchmarks.plots import aggregate_plot, pareto_plot
from benchmarks.records import TARGET, _first, _num, _pct, aggregate, chosen, left_out_of_aggregate, summarise
from benchmarks.suite import TARGET_KEYS
from interp_rl.document import Document
from interp_rl.errors import InterpRLError
from interp_rl.io import atomic_write_bytes, atomic_write_text

__all__ = ["FIGURES", "write_report"]

FIGURES = "figures"

def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)

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
