"""Reports of a results folder: Markdown and one self-contained HTML page, with plots and trees.

``write_report(RESULTS)`` reads ``RESULTS/records/*.json`` (and ``RESULTS/suite.json``) and
writes ``report.md``, ``report.html`` (every image embedded, nothing fetched) and the pictures
under ``figures/``. Across seeds, scores are summarised as rliable recommends: the
interquartile mean with a 95% stratified-bootstrap confidence interval
(:mod:`benchmarks.stats`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import load_records
from benchmarks.records import summarise
from benchmarks.sections import ANALYSES, ReportContext, analyses_of
from interp_rl.document import Document
from interp_rl.errors import InterpRLError
from interp_rl.io import atomic_write_text

__all__ = ["FIGURES", "Report", "build_report", "write_report"]

FIGURES = "figures"

def _compared_records(res: Path, suite: dict[str, Any], own: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records of the suite's ``compare`` folders (beside ``res``) for its teachers, of methods it does not run;
    their controller paths made relative to ``res``."""
    teachers = {t["name"]: t for t in suite.get("teachers") or []}
    mine = {(r["cell"]["teacher"], r["method"]) for r in own}  # a label this suite runs on a teacher: its own there
    taken: set[str] = set()  # a method label an earlier compared folder already shows
    out: dict[str, list[dict[str, Any]]] = {}
    for other in suite.get("compare") or []:
        folder = res.parent / other
        if not (folder / "records").is_dir():
            continue
        kept = [{**r, "controller": f"../{other}/{r['controller']}", "compared_from": other}
                for r in load_records(folder)
                if r["cell"]["teacher"] in teachers and (r["cell"]["teacher"], r["method"]) not in mine
                and r.get("episodes") == own[0].get("episodes")]
        for r in kept:  # the same label in two compared folders names two methods: the later one says its suite
            if r["method"] in taken:
                r["method"] = f"{r['method']} ({other})"
        taken |= {r["method"] for r in kept}
        if kept:
            out[other] = kept
    return out

@dataclass
class Report:
    """A results folder's report, built and not yet written: the page (its pictures drawn only when written) and
    ``summary.json``'s content."""

    title: str
    page: Document
    summary: dict[str, Any]
    """What ``summary.json`` holds: every group's IQM and interval, and the all-task aggregate."""

    def write(self, dest: str | Path) -> dict[str, Path]:
        """Write ``report.md``, ``report.html``, ``figures/`` (drawing the pictures) and ``summary.json`` in
        ``dest``; return ``{"markdown": path, "html": path}``."""
        dest = Path(dest)
        paths = self.page.write(dest, self.title, prune=True)  # no picture of an earlier report left
        atomic_write_text(dest / "summary.json", json.dumps(self.summary, indent=1) + "\n")
        return paths


def write_report(results: str | Path, out: str | Path | None = None, *, reps: int = 2000,
                 seed: int = 0) -> dict[str, Path]:
    """Write ``report.md``, ``report.html`` and ``figures/`` for the records in ``results``.

    Returns
    -------
    dict
        ``{"markdown": path, "html": path}``.
    """
    report = build_report(results, reps=reps, seed=seed)
    return report.write(Path(out) if out is not None else Path(results))


def build_report(results: str | Path, *, reps: int = 2000, seed: int = 0) -> Report:
    """The report of the records in ``results`` (see :func:`write_report`), built but not written: its text is
    all there, its pictures are drawn when it is written.

    Returns
    -------
    Report
        The page and ``summary.json``'s content.
    """
    res = Path(results)
    if not res.is_dir():
        raise InterpRLError(f"Results folder {str(res)!r} does not exist.")
    records = load_records(res)
    if not records:
        raise InterpRLError(f"{str(res)!r} holds no benchmark records (expected "
                            f"{str(res / 'records')}/*.json); run `interp-rl bench` first.")
    suite = json.loads((res / "suite.json").read_text()) if (res / "suite.json").is_file() else {}
    compared = _compared_records(res, suite, records)
    own = records
    records = records + [r for rs in compared.values() for r in rs]
    name = suite.get("name") or records[0]["suite"]
    summary = summarise(records, reps=reps, seed=seed)
    doc = Document(figures=FIGURES)
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
          f"{records[0]['episodes']} episodes (reset seeds seed, seed+1, …) of the "
          + ("`-v5` task. " if all(str(r["task"]).endswith("-v5") for r in records) else "task. ") +
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

    ctx = ReportContext(results=res, suite=suite, own=own, compared=compared, summary=summary, reps=reps, seed=seed,
                        image=doc.image)
    for analysis in analyses_of(suite):
        ANALYSES[analysis](ctx, doc)

    doc.h(2, "Provenance")
    vers = records[0].get("versions", {})
    mach = records[0].get("machine", {})
    doc.bullets([f"Versions: {', '.join(f'{k} {v}' for k, v in vers.items())}",
                 f"Machine: {mach.get('processor', '?')}, {mach.get('cpus', '?')} CPUs, "
                 f"{mach.get('system', '?')}",
                 "Teachers: " + "; ".join(f"{tname}: `{gs[0].records[0]['teacher']['source']}`"
                                          for tname, gs in summary.items())])
    title = f"interp-rl benchmark: {name}"
    return Report(title, doc, {
        "suite": name, "groups": [{"teacher": g.teacher, "task": g.task, "method": g.method, "size": g.size,
                                   "seeds": g.seeds, "percent_of_teacher": g.percents, **g.estimate}
                                  for gs in summary.values() for g in gs],
        "aggregate": ctx.aggregate})
