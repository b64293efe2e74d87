"""The piece graph: which pieces of a controller act one after another, and which of them lead into failures.

ARLIN (assured RL model interrogation) clusters an agent's latent states into a semi-aggregated MDP to find
critical states and vulnerable paths. A transparent controller is already partitioned into pieces (a tree's
leaves, a mixture's experts), so its graph is exact: the nodes are the pieces, an edge ``p -> q`` is a step on
which ``q`` acts right after ``p``. For a neural teacher the nodes are clusters of the states it visits
(:func:`cluster_states`), as ARLIN makes them, so the two can be compared.

Examples
--------
>>> import numpy as np
>>> g = piece_graph(np.array([0, 0, 1, 1, 0]), np.array([0, 0, 0, 1, 1]), np.ones(5), failed=[False, True],
...                 phase=np.array([0, 0, 0, 1, 2]))
>>> g.nodes[1]["steps"], g.edges[(0, 1)]["count"], g.edges[(1, 0)]["failed_share"], g.nodes[0]["lost"]
(2, 1, 1.0, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["PieceGraph", "cluster_states", "piece_graph"]


@dataclass
class PieceGraph:
    """Counts over recorded episodes (see :func:`piece_graph`)."""

    nodes: dict[int, dict[str, Any]]
    """Per piece: ``steps``, ``share`` (of all steps), ``mean_reward`` (per step it acts on), ``episodes``,
    ``failed_episodes`` (how many it acts in), ``failed_share`` (of the failed episodes), ``leading`` (steps it acts
    on in the run-up to a point of no return), ``lost`` (steps after one), ``marked`` (how many of the ``marks`` it
    acts at)."""
    edges: dict[tuple[int, int], dict[str, Any]]
    """Per transition ``(p, q)``, ``p != q``: ``count``, ``mean_reward`` (of the first step ``q`` acts on),
    ``episodes``, ``failed_episodes``, ``failed_share`` (of the failed episodes that pass through it), ``leading``
    (how often it is taken in the run-up to a point of no return)."""
    labels: dict[int, str] = field(default_factory=dict)
    n_episodes: int = 0
    n_failed: int = 0
    n_steps: int = 0
    n_marks: int = 0
    n_leading: int = 0
    title: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "episodes": self.n_episodes, "failed_episodes": self.n_failed,
                "steps": self.n_steps, "marks": self.n_marks, "leading_steps": self.n_leading,
                "nodes": [{"piece": int(p), "label": self.labels.get(p, str(p)), **v} for p, v in self.nodes.items()],
                "edges": [{"from": int(p), "to": int(q), **v} for (p, q), v in self.edges.items()]}

    def to_dot(self, *, max_edges: int = 40, title: str | None = None) -> str:
        """Graphviz source. A node's size grows with its share of the steps; it is red by its share of the run-up
        steps to the points of no return (thick: it acts at some). Edge labels: ``count · mean reward``, and
        ``· N before no return`` for transitions taken in a run-up (drawn red). The ``max_edges`` most frequent
        edges are drawn, and every run-up edge."""
        from interp_rl.dot import dot_label

        lines = ["digraph pieces {", "  layout=circo; mindist=0.6;",
                 '  node [shape=ellipse, style=filled, fontname="Helvetica", fontsize=10];',
                 '  edge [fontname="Helvetica", fontsize=8];']
        caption = title or self.title
        if caption:
            lines.append(f"  label={dot_label([caption])}; labelloc=t; fontname=\"Helvetica\";")
        for p, v in sorted(self.nodes.items()):
            lead = v["leading"] / self.n_leading if self.n_leading else 0.0
            red = int(255 * (1 - 0.8 * lead))
            fill = f"#ff{red:02x}{red:02x}" if lead > 0 else "#e8eef7"
            text = [self.labels.get(p, f"piece {p}"), f"{100 * v['share']:.1f}% of steps",
                    f"reward {v['mean_reward']:.2f}/step"]
            if self.n_leading:
                text.append(f"{100 * lead:.0f}% of the run-up steps")
            if v["lost"]:
                text.append(f"{v['lost']} steps after no return")
            if v["marked"]:
                text.append(f"acts at {v['marked']} of {self.n_marks} points of no return")
            width = 1.0 + 1.5 * np.sqrt(v["share"])
            lines.append(f"  p{p} [label={dot_label(text)}, fillcolor=\"{fill}\", width={width:.2f}, "
                         f"penwidth={3.0 if v['marked'] else 1.0}];")
        ranked = sorted(self.edges.items(), key=lambda kv: -kv[1]["count"])
        shown = [kv for n, kv in enumerate(ranked) if n < max_edges or kv[1]["leading"]]
        top = max((v["count"] for _, v in shown), default=1)
        for (p, q), v in shown:
            label = f"{v['count']} · {v['mean_reward']:.2f}"
            if v["leading"]:
                label += f" · {v['leading']} before no return"
            colour = "#c0392b" if v["leading"] else "#555555"
            lines.append(f"  p{p} -> p{q} [label={dot_label([label])}, penwidth={0.6 + 3 * v['count'] / top:.2f}, "
                         f"color=\"{colour}\"];")
        lines.append("}")
        return "\n".join(lines)


def piece_graph(pieces: Any, episodes: Any, rewards: Any, *, failed: Sequence[bool] | None = None,
                phase: Any = None, marks: Sequence[int] = (), labels: Sequence[str] | dict[int, str] | None = None,
                title: str = "") -> PieceGraph:
    """Count a graph of pieces from recorded steps.

    Parameters
    ----------
    pieces : array-like of int, shape (n,)
        The piece acting at each step.
    episodes : array-like of int, shape (n,)
        The episode each step belongs to, ``0 ... n_episodes - 1``; an episode's steps are consecutive, in order.
    rewards : array-like of float, shape (n,)
        The reward after each step.
    failed : sequence of bool, optional
        Per episode, whether it failed.
    phase : array-like of int, shape (n,), optional
        Per step: 0 an ordinary step, 1 in the run-up to a point of no return, 2 after one (the episode is lost).
    marks : sequence of int
        Steps (row indices) to count at their piece: the points of no return.
    labels : sequence or dict of str, optional
        What to call each piece (``expert 3``, ``leaf 5``).
    """
    p = np.asarray(pieces, dtype=np.int64).ravel()
    ep = np.asarray(episodes, dtype=np.int64).ravel()
    r = np.asarray(rewards, dtype=np.float64).ravel()
    if not (len(p) == len(ep) == len(r)):
        raise ValueError(f"pieces, episodes and rewards must have one entry per step; got {len(p)}, {len(ep)}, "
                         f"{len(r)}.")
    n_ep = int(ep.max()) + 1 if len(ep) else 0
    fail = np.zeros(n_ep, dtype=bool) if failed is None else np.asarray(failed, dtype=bool)
    if len(fail) < n_ep:
        raise ValueError(f"failed has {len(fail)} entries for {n_ep} episodes.")
    n_failed = int(fail.sum())
    ph = np.zeros(len(p), dtype=np.int64) if phase is None else np.asarray(phase, dtype=np.int64).ravel()
    if len(ph) != len(p):
        raise ValueError(f"phase must have one entry per step; got {len(ph)} for {len(p)}.")
    mark_at = np.bincount(p[np.asarray(list(marks), dtype=np.int64)], minlength=0) if len(marks) else np.zeros(0)
    nodes: dict[int, dict[str, Any]] = {}
    for q in np.unique(p):
        on = p == q
        eps = np.unique(ep[on])
        nf = int(fail[eps].sum())
        nodes[int(q)] = {"steps": int(on.sum()), "share": float(on.mean()), "mean_reward": float(r[on].mean()),
                         "episodes": int(len(eps)), "failed_episodes": nf,
                         "failed_share": nf / n_failed if n_failed else 0.0,
                         "leading": int(np.sum(on & (ph == 1))), "lost": int(np.sum(on & (ph == 2))),
                         "marked": int(mark_at[q]) if q < len(mark_at) else 0}
    same_episode = ep[1:] == ep[:-1]
    switch = same_episode & (p[1:] != p[:-1])
    edges: dict[tuple[int, int], dict[str, Any]] = {}
    idx = np.flatnonzero(switch)
    for a, b in {(int(p[i]), int(p[i + 1])) for i in idx}:
        at = idx[(p[idx] == a) & (p[idx + 1] == b)]
        eps = np.unique(ep[at + 1])
        nf = int(fail[eps].sum())
        edges[(a, b)] = {"count": int(len(at)), "mean_reward": float(r[at + 1].mean()), "episodes": int(len(eps)),
                         "failed_episodes": nf, "failed_share": nf / n_failed if n_failed else 0.0,
                         "leading": int(np.sum(ph[at + 1] == 1))}
    names = dict(labels) if isinstance(labels, dict) else ({i: s for i, s in enumerate(labels)} if labels else {})
    return PieceGraph(nodes, edges, names, n_ep, n_failed, len(p), len(marks), int(np.sum(ph == 1)), title)


def cluster_states(states: Any, n_clusters: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """ARLIN's abstraction for an agent without pieces: k-means clusters of the visited states, each feature scaled
    by its standard deviation. Returns the cluster of each state and the centres (raw units)."""
    from sklearn.cluster import KMeans

    X = np.asarray(states, dtype=np.float64)
    sd = X.std(axis=0)
    sd = np.where(sd > 1e-12, sd, 1.0)
    k = int(min(max(n_clusters, 1), len(np.unique(X, axis=0))))
    km = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(X / sd)
    return km.labels_.astype(np.int64), km.cluster_centers_ * sd
