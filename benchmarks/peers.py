"""Our best transparent controller per task and size, against the published peers (``benchmarks/peers.toml``).

A report's ``peers`` section reads every record it shows (the suite's own and those of its ``compare`` folders)
and, per task, whatever the teacher:

* **our frontier**: the best mean absolute return over the seeds of one (teacher, method, size) group, at each
  count of non-zero parameters, among the groups run with at least :data:`MIN_SEEDS` seeds;
* **the peers** (:func:`load_peers`): SMoSE, the RL Baselines3 Zoo's ARS linear policies, the
  interpretable-rl-zoo's trees, oblique trees and MLPs, each with its environment version;
* per size budget (:data:`BUDGETS`), the best of ours and the best peer within it, the verdict and the margin.

An episode of ours *fails* below half the peer's number at that budget (``half_of_teacher`` of it, so a cost such
as Reacher's counts the same way), so the failure rate does not depend on which teacher the controller came from;
it is counted on the records' failure-rate episodes (100 fresh episodes per seed), else their evaluation episodes.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.records import Group
from interp_rl.compare import half_of_teacher
from interp_rl.document import Document
from interp_rl.document import png as _png
from interp_rl.document import pyplot as _pyplot
from interp_rl.errors import InterpRLError

if TYPE_CHECKING:
    from benchmarks.sections.context import ReportContext

__all__ = ["BUDGETS", "MIN_SEEDS", "Ours", "Peer", "best_within", "frontier", "load_peers", "our_points",
           "peer_within", "peers_section"]

#: The size budgets the verdicts are given at: non-zero parameters.
BUDGETS = (32, 128, 1000)
#: Seeds a group needs to count on the frontier (fewer: drawn, not counted).
MIN_SEEDS = 3
_FIELDS = {"task": str, "family": str, "label": str, "return": (int, float), "parameters": int, "env": str,
           "steps": int, "source": str}


@dataclass(frozen=True)
class Peer:
    """One published controller: its absolute return on ``task`` at ``env``'s version, and its size."""

    task: str
    family: str
    label: str
    ret: float
    parameters: int
    env: str
    steps: int
    source: str
    worst: float | None = None


@dataclass
class Ours:
    """One (teacher, method, size) group of ours, in absolute returns."""

    task: str
    teacher: str
    method: str
    size: Any
    parameters: float
    seed_means: list[float]
    teacher_return: float | None
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return float(np.mean(self.seed_means))

    @property
    def worst(self) -> float:
        """The worst evaluation episode over every seed."""
        return float(min(min(r["student"]["returns"]) for r in self.records))

    def command(self) -> str:
        """The command that makes this group's cells again (into its suite's committed results folder)."""
        first = self.records[0]
        suite, cell = first.get("suite") or "SUITE", first["cell"]
        seeds = ",".join(str(s) for s in sorted({int(r["cell"]["seed"]) for r in self.records}))
        return (f"interp-rl bench --suite {suite} --out benchmarks/results/{suite} --methods {cell['method']} "
                f"--only-teachers {cell['teacher']} --seeds {seeds}")

    def wall_minutes(self) -> tuple[float, float]:
        """The fewest and the most minutes one seed's cell took to make its controller (distillation, search or
        training, fine-tuning included), as its record measured them."""
        mins = [float(r.get("distill_seconds") or 0.0) / 60 for r in self.records]
        return min(mins), max(mins)

    def failures(self, threshold: float) -> tuple[int, int]:
        """Episodes below ``threshold`` and episodes counted: the failure-rate episodes where a record has them."""
        bad = total = 0
        for r in self.records:
            rets = (r.get("failures") or {}).get("returns") or r["student"].get("returns") or []
            bad += sum(ret < threshold for ret in rets)
            total += len(rets)
        return bad, total


def task_name(task_id: str) -> str:
    """``'HalfCheetah-v5'`` -> ``'HalfCheetah'``: what peers and records share across environment versions."""
    return task_id.rsplit("-v", 1)[0]


def load_peers(path: str | Path | None = None) -> list[Peer]:
    """The peers of ``path`` (default: the shipped ``benchmarks/peers.toml``), checked field by field."""
    text = (Path(path).read_text() if path is not None
            else resources.files("benchmarks").joinpath("peers.toml").read_text())
    where = str(path) if path is not None else "benchmarks/peers.toml"
    try:
        rows = tomllib.loads(text).get("peers") or []
    except tomllib.TOMLDecodeError as exc:
        raise InterpRLError(f"The peer file {where!r} is not valid TOML: {exc}.") from None
    peers = []
    for i, row in enumerate(rows):
        for key, kind in _FIELDS.items():
            if not isinstance(row.get(key), kind) or isinstance(row.get(key), bool):
                raise InterpRLError(f"Peer {i + 1} of {where!r} needs '{key}' ({getattr(kind, '__name__', 'number')});"
                                    f" got {row.get(key)!r}.")
        peers.append(Peer(task=row["task"], family=row["family"], label=row["label"], ret=float(row["return"]),
                          parameters=int(row["parameters"]), env=row["env"], steps=int(row["steps"]),
                          source=row["source"], worst=None if row.get("worst") is None else float(row["worst"])))
    return peers


def our_points(summary: dict[str, list[Group]]) -> dict[str, list[Ours]]:
    """Every group of the summary with absolute returns, by task (whatever the teacher)."""
    out: dict[str, list[Ours]] = {}
    for groups in summary.values():
        for g in groups:
            recs = [r for r in g.records if r["student"].get("returns")]
            params = g.mean("size", "parameters")
            if not recs or params is None:
                continue
            out.setdefault(task_name(g.task), []).append(Ours(
                task=task_name(g.task), teacher=g.teacher, method=g.method, size=g.size, parameters=params,
                seed_means=[float(r["student"]["return_mean"]) for r in recs],
                teacher_return=g.mean("teacher", "return_mean"), records=recs))
    return out


def frontier(points: list[Ours]) -> list[Ours]:
    """The groups (with :data:`MIN_SEEDS` seeds) no smaller group beats on mean return, by size."""
    front: list[Ours] = []
    for p in sorted((p for p in points if len(p.seed_means) >= MIN_SEEDS), key=lambda p: (p.parameters, -p.mean)):
        if not front or p.mean > front[-1].mean:
            front.append(p)
    return front


def best_within(points: list[Ours], budget: float) -> Ours | None:
    """Our best group (mean over :data:`MIN_SEEDS` or more seeds) within ``budget`` non-zero parameters."""
    fit = [p for p in points if p.parameters <= budget and len(p.seed_means) >= MIN_SEEDS]
    return max(fit, key=lambda p: p.mean) if fit else None


def peer_within(peers: list[Peer], task: str, budget: float) -> Peer | None:
    """The best peer of ``task`` within ``budget`` parameters (any environment version)."""
    fit = [p for p in peers if p.task == task and p.parameters <= budget]
    return max(fit, key=lambda p: p.ret) if fit else None


def _margin(ours: float, peer: float) -> float:
    return 100.0 * (ours - peer) / abs(peer) if peer else float("nan")


def verdict(ours: Ours | None, peer: Peer | None, limit: float = 1.0) -> tuple[str, str, str]:
    """``(verdict, margin, failures)`` of ours against the peer at one budget; failures are episodes below half the
    peer's number (``limit``: the share, %, a lead may have)."""
    if ours is None:
        return ("no controller of ours" + (" (the peer stands)" if peer else ""), "–", "–")
    if peer is None:
        return ("no peer", "–", "–")
    bad, total = ours.failures(half_of_teacher(peer.ret))
    rate = 100.0 * bad / total if total else float("nan")
    margin = _margin(ours.mean, peer.ret)
    if ours.mean <= peer.ret:
        word = "behind"
    elif rate > limit:
        word = f"ahead on the mean, but {rate:.1f}% of episodes below half (limit {limit:g}%)"
    else:
        word = "**ahead**"
    return word, f"{margin:+.1f}%", f"{rate:.1f}% ({bad} of {total})"


def peers_plot(task: str, points: list[Ours], peers: list[Peer]) -> bytes:
    """Absolute return against non-zero parameters (log x): our groups, our frontier, the peers labelled."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    few = [p for p in points if len(p.seed_means) < MIN_SEEDS]
    many = [p for p in points if len(p.seed_means) >= MIN_SEEDS]
    ax.scatter([p.parameters for p in many], [p.mean for p in many], s=14, color="tab:blue", alpha=0.35,
               label="ours (mean of the seeds)")
    if few:
        ax.scatter([p.parameters for p in few], [p.mean for p in few], s=18, facecolors="none",
                   edgecolors="tab:blue", label=f"ours, fewer than {MIN_SEEDS} seeds (not on the frontier)")
    front = frontier(points)
    if front:
        xs = [p.parameters for p in front] + [max(p.parameters for p in front) * 3]
        ys = [p.mean for p in front] + [front[-1].mean]
        ax.step(xs, ys, where="post", color="tab:blue", lw=1.6, label=f"our frontier (best {MIN_SEEDS}-seed mean)")
    markers = {"SMoSE": ("*", "tab:red"), "ARS linear": ("D", "tab:green")}
    for fam in dict.fromkeys(p.family for p in peers):
        mine = [p for p in peers if p.family == fam]
        marker, color = markers.get(fam, ("^", "tab:grey"))
        ax.scatter([p.parameters for p in mine], [p.ret for p in mine], marker=marker, s=60 if marker == "*" else 30,
                   color=color, label=fam, zorder=3)
        if fam in markers:
            for p in mine:
                ax.annotate(f"{fam} -{p.env}", (p.parameters, p.ret), textcoords="offset points", xytext=(5, 3),
                            fontsize=7, color=color)
    for b in BUDGETS:
        ax.axvline(b, color="black", ls=":", lw=0.6, alpha=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("non-zero parameters (log scale)")
    ax.set_ylabel("return (absolute)")
    ax.set_title(f"{task}: ours (-v5) against the published peers")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return _png(fig)


def _ours_cell(p: Ours | None) -> list[str]:
    if p is None:
        return ["–", "–", "–", "–"]
    teacher = f"{p.teacher}, {p.teacher_return:.0f}" if p.teacher_return is not None else p.teacher
    return [f"{p.method} {p.size} ({teacher})", f"{p.parameters:.0f}",
            f"{p.mean:.1f} [" + ", ".join(f"{m:.0f}" for m in p.seed_means) + "]", f"{p.worst:.1f}"]


def peers_section(ctx: ReportContext, doc: Document) -> None:
    """Per task: our frontier against the peers (plot), and the verdict at each size budget (table)."""
    ours = our_points(ctx.summary)
    peers = load_peers()
    known = {p.task for p in peers}
    tasks = [t for t in dict.fromkeys(task_name(g.task) for gs in ctx.summary.values() for g in gs) if t in known]
    if not tasks:  # no task of this report has a published peer
        return
    doc.h(2, "Against the published peers")
    doc.p(f"Absolute returns, whatever the teacher: ours on the `-v5` tasks (the mean of each seed's "
          f"{ctx.suite.get('episodes', 20)} evaluation episodes, then over the seeds; only groups of at least "
          f"{MIN_SEEDS} seeds count), the peers as published or as measured here, on the environment version each "
          "names (`benchmarks/peers.toml`). At each budget the best of ours meets the best peer within it. An episode "
          "fails below half the peer's number, counted on the failure-rate episodes (100 fresh episodes per seed); "
          "a lead counts with at most 1% of them. The worst episode is of the evaluation episodes. Ours: method "
          "size (teacher, its return on the same episodes).")
    rows = []
    for task in tasks:
        pts, mine = ours.get(task, []), [p for p in peers if p.task == task]
        ctx.image(f"peers-{task}.png", peers_plot(task, pts, mine),
                  f"{task}: return against non-zero parameters, ours and the peers")
        for budget in BUDGETS:
            best, peer = best_within(pts, budget), peer_within(peers, task, budget)
            word, margin, failed = verdict(best, peer)
            rows.append([task, f"≤ {budget:,}", *_ours_cell(best), failed,
                         "–" if peer is None else f"{peer.label}: {peer.ret:g} ({peer.parameters} params, "
                                                  f"-{peer.env})",
                         word, margin, "-v5 / " + ("–" if peer is None else f"-{peer.env}")])
    doc.table(["task", "budget", "ours: best group", "parameters", "mean return [per seed]", "worst episode",
               "episodes below half the peer's", "best peer within the budget", "verdict", "margin",
               "env (ours / peer)"], rows)
    made = {id(p): p for task in tasks for b in BUDGETS if (p := best_within(ours.get(task, []), b)) is not None}
    if made:
        doc.p("How each of these points was made: the wall time one seed's cell took to make its controller "
              "(distillation, search or training, fine-tuning included; fewest and most minutes over the seeds, on "
              "the cores of the machine its records name), and the command that makes the group's cells again.")
        doc.table(["task", "ours", "seeds", "minutes per seed", "cores", "command"], [
            [p.task, f"{p.method} {p.size} ({p.teacher})", str(len(p.records)),
             "{:.0f}–{:.0f}".format(*p.wall_minutes()) if round(p.wall_minutes()[0]) != round(p.wall_minutes()[1])
             else f"{p.wall_minutes()[0]:.0f}",
             str(p.records[0].get("distill_cores") or (p.records[0].get("machine") or {}).get("cpus") or "–"),
             f"`{p.command()}`"] for p in made.values()])
