"""The distillers the benchmark harness knows, behind one small interface.

A method turns a teacher into a :class:`interp_rl.program.Controller` in a work folder;
the harness does everything else (evaluation, fidelity, size, latency, the record) the
same way for every method. A new distiller plugs in by adding a :class:`Method` to
:data:`METHODS`; suites then name it in ``[methods.LABEL] method = "NAME"``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from interp_rl.program import Controller, Signal, load_controller

__all__ = ["METHODS", "Distilled", "Explanation", "Method", "TreeMethod"]


@dataclass
class Distilled:
    """What a method hands back: the controller (saved in the work folder) and how it was made."""

    controller: Controller
    distill_seconds: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Explanation:
    """One piece of a controller's explanation for the report: a picture (SVG) or text."""

    title: str
    kind: str  # "svg" or "text"
    content: str


class Method(Protocol):
    """A distiller as the harness sees it."""

    name: str
    description: str
    size_name: str
    """What a suite's ``sizes`` set, e.g. ``max_leaves``."""

    def resolve(self, size: Any, settings: dict[str, Any], seed: int) -> dict[str, Any]:
        """The complete, validated settings of one cell (raises a one-line error if invalid)."""
        ...

    def distill(self, teacher: Any, env_fn: Callable[[int], Any], config: dict[str, Any], work_dir: Path, *,
                features: Sequence[Signal], actions: Sequence[Signal], task: str,
                provenance: dict[str, Any], progress: Callable[[dict[str, Any]], None] | None = None
                ) -> Distilled:
        """Distil into ``work_dir`` (resuming what an interrupted call left there)."""
        ...

    def explain(self, controller: Controller, states: np.ndarray, title: str) -> list[Explanation]:
        """Pictures and text a person reads to understand ``controller`` on ``states`` it visits."""
        ...


class TreeMethod:
    """Decision-tree distillation (DAgger, critic-weighted for Q-function teachers): ``distill.run``."""

    name = "tree"
    description = "decision tree with sparse-linear or constant leaves, distilled by DAgger"
    size_name = "max_leaves"

    def resolve(self, size: Any, settings: dict[str, Any], seed: int) -> dict[str, Any]:
        from distill.run import TreeDistillConfig

        cfg = asdict(TreeDistillConfig.from_dict({**settings, "max_leaves": size, "seed": seed}).validate())
        # The harness evaluates every method alike, with the suite's episodes and fidelity steps.
        for key in ("eval_episodes", "fidelity_steps"):
            cfg.pop(key)
        return cfg

    def distill(self, teacher: Any, env_fn: Callable[[int], Any], config: dict[str, Any], work_dir: Path, *,
                features: Sequence[Signal], actions: Sequence[Signal], task: str,
                provenance: dict[str, Any], progress: Callable[[dict[str, Any]], None] | None = None
                ) -> Distilled:
        from distill.run import METRICS_FILE, TreeDistillConfig, distill_tree

        work = Path(work_dir)
        if not (work / METRICS_FILE).is_file():  # else: finished before the run was stopped
            resume = (work / "config.json").is_file()
            distill_tree(teacher, env_fn, TreeDistillConfig(**config), work, features=features,
                         actions=actions, task=task, provenance=provenance, resume=resume, progress=progress,
                         evaluate_student=False)
        metrics = json.loads((work / METRICS_FILE).read_text())
        keys = ("weighting", "best_round", "samples", "dagger_history", "tuning")
        details = {k: metrics.get(k) for k in keys}
        return Distilled(load_controller(work), float(metrics["distill_seconds"]), details)

    def explain(self, controller: Controller, states: np.ndarray, title: str) -> list[Explanation]:
        from interp_rl.viz import (
            RenderError,
            decision_path_text,
            export_text,
            leaf_visit_counts,
            render,
            to_dot,
        )

        visits = leaf_visit_counts(controller, states) if len(states) else None
        depth = None if controller.program.depth <= 4 else 4
        shown = "" if depth is None else " (top 4 levels)"
        dot = to_dot(controller, max_depth=depth, leaf_visits=visits, title=f"{title}{shown}")
        parts = []
        try:
            with tempfile.TemporaryDirectory() as tmp:
                svg = render(dot, Path(tmp) / "tree.svg").read_text(encoding="utf-8")
            parts.append(Explanation("Tree (shading: share of visited states per leaf)", "svg", svg))
        except RenderError as exc:
            parts.append(Explanation("Tree picture", "text", str(exc)))
        rules = export_text(controller).splitlines()
        if len(rules) > 80:
            rules = [*rules[:80], f"… {len(rules) - 80} more lines (interp-rl viz FOLDER --text prints all)"]
        parts.append(Explanation("Rules", "text", "\n".join(rules)))
        if len(states):
            parts.append(Explanation("Why it acts as it does in one visited state", "text",
                                     decision_path_text(controller, states[len(states) // 2])))
        return parts


#: name -> method; suites refer to these names.
METHODS: dict[str, Method] = {"tree": TreeMethod()}

