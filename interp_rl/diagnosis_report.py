"""One page per diagnosis: ``report.md`` and ``report.html`` (and ``diagnosis.json``) from a :class:`Diagnosis`.

The page shows the failure rate with its confidence interval, the returns of every episode, the failed episodes
with their points of no return, the worst ones' feature traces and frames around that point, the critical states
(the piece that acted, its rule, the Shapley attribution of teacher and controller, the evidence), and the piece
graphs of the controller and of the teacher.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.diagnose import CriticalState, Diagnosis
from interp_rl.document import Document, png, pyplot
from interp_rl.errors import InterpRLError
from interp_rl.io import atomic_write_text, json_safe

__all__ = ["write_diagnosis"]


def _svg(dot: str) -> bytes | None:
    from interp_rl.viz import render

    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = render(dot, Path(tmp) / "g.svg")
        except InterpRLError:
            return None
        return path.read_bytes()


def _pct(v: float) -> str:
    return f"{v:.1f}%"


def returns_figure(d: Diagnosis) -> bytes:
    """Each episode's return, controller against teacher, with the failure line."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    x = np.arange(d.episodes)
    ax.plot(x, d.teacher_returns, ".", color="0.55", label="teacher")
    c = np.asarray(d.controller_returns)
    bad = c < d.threshold
    ax.plot(x[~bad], c[~bad], ".", color="#1f77b4", label="controller")
    ax.plot(x[bad], c[bad], "x", color="#c0392b", label="controller, failed")
    ax.axhline(d.threshold, color="#c0392b", lw=0.8, ls="--", label="half the teacher's mean")
    ax.set_xlabel(f"episode (reset seed {d.seed} + episode)")
    ax.set_ylabel("return")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(f"{d.kind} controller and teacher on {d.task}: {d.n_failed} of {d.episodes} episodes failed")
    fig.tight_layout()
    return png(fig, dpi=100)


def trace_figure(d: Diagnosis, episode: int, n_features: int = 4) -> bytes | None:
    """The features that stray furthest from the teacher's states at the point of no return, along the episode,
    the controller's and the teacher's on the same seed, the point of no return and the critical steps marked."""
    fe = next(f for f in d.failed if f.episode == episode)
    if fe.no_return is None:
        return None
    s = d.steps_
    c_obs = s["c_obs"][s["c_episodes"] == episode]
    t_obs = s["t_obs"][s["t_episodes"] == episode]
    mu, sd = s["t_obs"].mean(axis=0), s["t_obs"].std(axis=0)
    sd = np.where(sd > 1e-12, sd, 1.0)
    at = c_obs[min(fe.no_return, len(c_obs) - 1)]
    feats = np.argsort(-np.abs((at - mu) / sd), kind="stable")[:n_features]
    plt = pyplot()
    fig, axes = plt.subplots(len(feats), 1, figsize=(7.5, 1.6 * len(feats) + 0.6), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, j in zip(axes, feats, strict=True):
        ax.plot(np.arange(len(t_obs)), t_obs[:, j], color="0.6", lw=0.8, label="teacher (same seed)")
        ax.plot(np.arange(len(c_obs)), c_obs[:, j], color="#1f77b4", lw=1.0, label="controller")
        ax.axvline(fe.no_return, color="#c0392b", lw=1.2, label="point of no return")
        for c in fe.critical:
            ax.plot([c.step], [c_obs[c.step, j]], "o", ms=4, color="#e67e22")
        unit = f" [{d.units[j]}]" if d.units[j] else ""
        ax.set_ylabel(f"{d.features[j]}{unit}", fontsize=7)
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=7, loc="upper left")
    axes[-1].set_xlabel("step (orange: critical states)")
    fig.suptitle(f"Episode {episode} (seed {fe.seed}): {_pct(fe.percent_of_teacher)} of the teacher; point of no "
                 f"return at step {fe.no_return} of {fe.length}", fontsize=9)
    fig.tight_layout()
    return png(fig, dpi=100)


def frames_figure(d: Diagnosis, episode: int) -> bytes | None:
    if episode not in d.frames_:
        return None
    fe = next(f for f in d.failed if f.episode == episode)
    steps, pics = d.frames_[episode]
    plt = pyplot()
    fig, axes = plt.subplots(1, len(pics), figsize=(2.1 * len(pics), 1.9))
    for ax, step, pic in zip(np.atleast_1d(axes), steps, pics, strict=True):
        ax.imshow(pic)
        ax.axis("off")
        rel = step - (fe.no_return or 0)
        ax.set_title(f"step {step} ({'+' if rel >= 0 else ''}{rel})", fontsize=8,
                     color="#c0392b" if rel == 0 else "black")
    fig.suptitle(f"Episode {episode}: around the point of no return", fontsize=9)
    fig.tight_layout()
    return png(fig, dpi=100)


def _top(pairs: list[list[Any]]) -> str:
    return ", ".join(f"`{name}` {value:+.3g}" for name, value in pairs)


def _critical_row(d: Diagnosis, c: CriticalState, pnr: int) -> list[str]:
    att = c.attribution or {}
    a = d.actions.index(att["action"]) if att.get("action") in d.actions else int(
        np.argmax(np.abs(np.asarray(c.teacher_action) - np.asarray(c.controller_action))))
    ev = c.evidence
    if ev and ev["rows"]:
        dev = ev["deviations"][0]
        unit = f" {dev[2]}" if dev[2] else ""
        evidence = (f"nearest of {ev['rows_fitted']} fitted: {ev['distance_sd'][0]:.2f} sd (usually "
                    f"{ev['typical_sd']:.2f}); most off: `{dev[0]}` {dev[1]:+.3g}{unit} ({dev[3]:+.1f} sd)")
    elif ev is not None:
        evidence = "the piece was fitted on no recorded state"
    else:
        evidence = "-"
    return [str(c.seed), str(c.step), str(pnr - c.step), f"{c.gap:.3g}", c.piece_label,
            f"`{d.actions[a]}`: {c.controller_action[a]:.3g} vs {c.teacher_action[a]:.3g}",
            _top(att.get("teacher", [])) or "-", _top(att.get("controller", [])) or "-", evidence]


def write_diagnosis(d: Diagnosis, out: str | Path, *, command: str = "", details: int = 8, max_rows: int = 40,
                    repair: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write ``diagnosis.json``, ``report.md`` (pictures in ``figures/``) and the self-contained ``report.html``;
    with ``repair`` (the metrics of :func:`distill.failure_repair.repair_controller`) a section on the repair."""
    dest = Path(out)
    if dest.exists() and not dest.is_dir():
        raise InterpRLError(f"--out {str(dest)!r} is a file; name a folder for the diagnosis.")
    dest.mkdir(parents=True, exist_ok=True)
    doc = Document()
    title = f"Diagnosis: {d.kind} controller on {d.task}"
    doc.h(1, title)
    lo, hi = d.rate_interval
    c = np.asarray(d.controller_returns)
    from interp_rl.compare import percent_of_teacher

    mean_pct = percent_of_teacher(float(c.mean()), d.teacher_mean)
    worst_pct = percent_of_teacher(float(c.min()), d.teacher_mean)
    doc.p(f"{d.episodes} fresh episodes (reset seeds {d.seed} to {d.seed + d.episodes - 1}), controller and teacher "
          f"on the same seeds. Teacher mean {d.teacher_mean:.1f}; an episode **fails** below half of it "
          f"({d.threshold:.1f}). The controller keeps {_pct(mean_pct)} of the teacher's mean; its worst episode "
          f"{_pct(worst_pct)}.")
    doc.p(f"**Failure rate: {d.n_failed} of {d.episodes} = {100 * d.rate:.1f}%** (95% Clopper-Pearson interval "
          f"{100 * lo:.1f}-{100 * hi:.1f}%). The teacher itself fails {sum(t < d.threshold for t in d.teacher_returns)}"
          f" of the {d.episodes}.")
    doc.image("returns.png", returns_figure(d), "Return of every episode, controller and teacher on the same seeds")

    doc.h(2, "Failed episodes and their points of no return")
    doc.p("The point of no return is the first step from which the teacher, taking over from the exact simulator "
          "state, no longer brings the episode above the failure line without falling (where its own episode on "
          "that seed does not fall): found by bisection, each takeover a real rollout (the return counts the "
          "controller's rewards before the takeover and the teacher's after it).")
    with_pnr = [fe for fe in d.failed if fe.no_return is not None]
    if with_pnr:
        lead = np.array([fe.length - fe.no_return for fe in with_pnr])
        at = [d.graph.labels.get(p, str(p)) for p, v in sorted(d.graph.nodes.items(), key=lambda kv: -kv[1]["marked"])
              if v["marked"]][:3]
        marked = {p: v["marked"] for p, v in d.graph.nodes.items()}
        doc.p(f"Across the {len(with_pnr)} failed episodes with a point of no return, it comes a median "
              f"{int(np.median(lead))} steps before the episode ends (range {int(lead.min())}-{int(lead.max())}), at "
              f"step {int(np.median([fe.no_return for fe in with_pnr]))} in the median. The pieces acting there most "
              "often: " + ", ".join(f"{name} ({v} time{'' if v == 1 else 's'})" for name, v in zip(
                  at, sorted((v for v in marked.values() if v), reverse=True), strict=False)) + ".")
    if d.failed:
        rows = []
        for fe in d.failed:
            before = next((t for t in fe.takeovers if fe.no_return is not None and t.step == fe.no_return - 1), None)
            at = next((t for t in fe.takeovers if t.step == fe.no_return), None)
            rows.append([str(fe.episode), str(fe.seed), f"{fe.episode_return:.1f} ({_pct(fe.percent_of_teacher)})",
                         f"{fe.length}{' (fell)' if fe.terminated else ''}",
                         "-" if fe.no_return is None else str(fe.no_return),
                         str(len(fe.takeovers)),
                         f"{before.episode_return:.1f}" if before else ("teacher's own" if fe.no_return == 1 else "-"),
                         f"{at.episode_return:.1f}" if at else "controller's own",
                         fe.note or "-"])
        doc.table(["episode", "seed", "return (% of teacher)", "steps", "point of no return", "takeovers",
                   "takeover one step before: return", "takeover at it: return", "note"], rows)
    else:
        doc.p("No episode failed.")

    worst = [fe for fe in sorted(d.failed, key=lambda f: f.episode_return) if fe.no_return is not None][:3]
    if worst:
        doc.h(2, "The worst episodes")
        for fe in worst:
            pic = trace_figure(d, fe.episode)
            if pic:
                doc.image(f"trace_{fe.episode}.png", pic, f"Episode {fe.episode}: the features that stray furthest "
                          "from the teacher's states at the point of no return")
            strip = frames_figure(d, fe.episode)
            if strip:
                doc.image(f"frames_{fe.episode}.png", strip, f"Episode {fe.episode}: frames around the point of no "
                          "return")
        if d.frames_note:
            doc.p(d.frames_note)

    crit = sorted([(c, fe.no_return or 0) for fe in d.failed for c in fe.critical], key=lambda x: -x[0].gap)
    doc.h(2, "Critical states")
    doc.p(f"The steps in the window before each point of no return where the controller's action costs most by the "
          f"teacher's own judgement ({d.judge}). For each: the piece that acted, the action on which controller and "
          "teacher differ most (controller vs teacher), the top Shapley features of that action for each, and the "
          "evidence: the nearest teacher-labelled state the piece was fitted on, in standard deviations of the "
          "distillation data, against the piece's usual spacing between fitted states.")
    if crit:
        shown = crit[:max_rows]
        doc.table(["seed", "step", "steps before no return", "cost (return)", "piece", "action: controller vs "
                   "teacher", "teacher's top features", "controller's top features", "evidence"],
                  [_critical_row(d, c, pnr) for c, pnr in shown])
        if len(crit) > len(shown):
            doc.p(f"The {len(shown)} costliest of {len(crit)} critical states; `diagnosis.json` holds them all.")
        for note in (d.attribution_note, d.evidence_note):
            if note:
                doc.p(note)
        doc.h(3, "The costliest critical states in detail")
        for c, pnr in crit[:details]:
            ahead = pnr - c.step
            doc.p(f"**Seed {c.seed}, step {c.step}** ({ahead} step{'' if ahead == 1 else 's'} before the point of no "
                  f"return), cost {c.gap:.3g}: {c.piece_label} acted.")
            doc.pre(c.rule)
            ev = c.evidence
            if ev and ev["rows"]:
                doc.table(["recorded row", "distance (sd)", f"teacher's action there ({', '.join(d.actions)})"],
                          [[str(r), f"{dist:.2f}", ", ".join(f"{v:.3g}" for v in act)]
                           for r, dist, act in zip(ev["rows"], ev["distance_sd"], ev["teacher_actions"], strict=True)])
                doc.p("Where the state differs most from the nearest: " + "; ".join(
                    f"`{f}` {v:+.3g}{' ' + u if u else ''} ({z:+.1f} sd)" for f, v, u, z in ev["deviations"]))
    else:
        doc.p("None (no failed episode with a point of no return).")

    doc.h(2, "Piece graph")
    doc.p(f"Nodes are the controller's pieces, an edge a step on which one piece takes over from another (its label: "
          f"how often, and the mean reward of that step). The **run-up** is the {d.window} steps before each point of "
          "no return: nodes are red by their share of the run-up steps, thick where they act at a point of no "
          "return, and red edges are transitions taken in a run-up. The teacher's graph clusters the states it "
          "visits instead (k-means on its policy network's last hidden layer, ARLIN's abstraction), for "
          "comparison.")
    for graph, name in ((d.graph, "pieces"), (d.teacher_graph, "teacher_clusters")):
        dot = graph.to_dot()
        atomic_write_text(dest / "figures" / f"{name}.dot", dot)
        svg = _svg(dot)
        if svg is not None:
            doc.image(f"{name}.svg", svg, graph.title)
        else:
            doc.p(f"(Graphviz is not installed: the graph's source is figures/{name}.dot.)")
    n_lead = d.graph.n_leading
    doc.table(["piece", "% of steps", "mean reward per step", "% of the run-up steps", "steps after no return",
               "points of no return it acts at", "in % of failed episodes"],
              [[graph_label(d, p), f"{100 * v['share']:.1f}", f"{v['mean_reward']:.2f}",
                f"{100 * v['leading'] / n_lead:.0f}" if n_lead else "-", str(v["lost"]), str(v["marked"]),
                f"{100 * v['failed_share']:.0f}" if d.n_failed else "-"]
               for p, v in sorted(d.graph.nodes.items(), key=lambda kv: (-kv[1]["marked"], -kv[1]["leading"]))])

    if repair is not None:
        _repair_section(doc, repair)
    doc.h(2, "How this was made")
    items = ["Seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in d.seconds.items()),
             f"Teacher: `{d.sources.get('teacher', '')}`"]
    if command:
        items.insert(0, f"Command: `{command}`")
    doc.bullets(items)
    paths = doc.write(dest, title)
    paths["json"] = atomic_write_text(dest / "diagnosis.json", json.dumps(json_safe(d.to_dict()), indent=1) + "\n")
    return paths


def graph_label(d: Diagnosis, piece: int) -> str:
    return d.graph.labels.get(piece, str(piece))


def _repair_section(doc: Document, repair: dict[str, Any]) -> None:
    ba = repair["before_after"]
    doc.h(2, "Repair")
    rows = repair["repair"]["history"]
    doc.p("Targeted DAgger from the run-up to each failure: in each round, fresh episodes are diagnosed, the states "
          "before each point of no return restored, the controller lets act from them while the teacher labels "
          "every state, and the student refitted on its distillation data plus these rows (the same size limits). "
          f"Kept: round {repair['repair']['best_round']} (0: the controller as it was), chosen on held-out "
          "episodes." + (" It was then fine-tuned on the return, as the original was." if repair.get("rl") else ""))
    doc.table(["round", "failed episodes found", "rows added", "held-out score", "held-out mean", "held-out worst"],
              [[str(r["round"]), "-" if r.get("failed") is None else f"{r['failed']} of {r.get('episodes')}",
                str(r.get("rows", 0)), "-" if r.get("score") is None else f"{r['score']:.1f}",
                "-" if r.get("return_mean") is None else f"{r['return_mean']:.1f}",
                "-" if r.get("return_min") is None else f"{r['return_min']:.1f}"] for r in rows])
    doc.p("Held-out score: the mean of the mean return and of the worst quarter's mean return.")
    doc.p(f"Before and after, on {ba['episodes']} other fresh episodes (seeds {ba['first_seed']} on; the teacher's "
          f"mean there {ba['teacher_mean']:.1f}):")
    table = []
    for name in ("before", "after"):
        r = ba[name]
        lo, hi = r["rate_interval"]
        table.append([name, _pct(r["percent_of_teacher"]), _pct(r["worst_percent_of_teacher"]),
                      f"{r['failures']} ({100 * lo:.1f}-{100 * hi:.1f}%)"])
    doc.table(["controller", "mean, % of teacher", "worst episode, % of teacher", "failed episodes (95% interval)"],
              table)
