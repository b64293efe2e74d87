"""A controller folder as every distiller writes it: beside ``controller.json``, the Python and C exports,
``rules.txt``, the picture, the evidence it was fitted on (``distillation.npz``) and ``metrics.json``, last.

One module writes it, whichever stage made the controller (distillation, ARS or CMA-ES, repair, a log).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.errors import InterpRLError
from interp_rl.io import atomic_write_text, json_safe
from interp_rl.program import Controller

__all__ = ["CONFIG_FILE", "METRICS_FILE", "write_controller_files"]

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.json"


def write_controller_files(controller: Controller, out: str | Path, metrics: dict[str, Any], title: str) -> None:
    """What every controller folder holds beside ``controller.json``: the Python and C exports, ``rules.txt`` (with
    what its class scores mean, for a controller learnt from a discrete action), the picture (``KIND.dot``, and
    ``KIND.svg`` with Graphviz) and ``metrics.json`` (last: its presence says done)."""
    from interp_rl.export import write_exports
    from interp_rl.logged_data import class_note

    out = Path(out)
    paths = write_exports(controller, out, force=True)
    metrics["export_bytes"] = {k: Path(p).stat().st_size for k, p in paths.items()}
    note = class_note(controller)  # a controller of class scores: which class it plays
    atomic_write_text(out / "rules.txt", controller.program.explain(controller) + "\n" + (f"{note}\n" if note else ""))
    _picture(controller, out, title, metrics)
    atomic_write_text(out / METRICS_FILE, json.dumps(json_safe(metrics), indent=1) + "\n")


def _save_evidence(out: Path, data: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None,
                   start: str | Path | None) -> None:
    """Keep the states the student was fitted on beside the controller (``distillation.npz``), so that diagnosis
    can show the evidence each piece rests on; a fine-tuned controller keeps its start's."""
    from interp_rl.evidence import DATA_FILE, DistillationData, save_data

    if data is not None:
        save_data(out, DistillationData(*data))
    elif start is not None and (Path(start) / DATA_FILE).is_file() and Path(start).resolve() != out.resolve():
        shutil.copyfile(Path(start) / DATA_FILE, out / DATA_FILE)


def _picture(controller: Controller, out: Path, title: str, metrics: dict[str, Any]) -> None:
    from interp_rl.viz import render, to_dot

    dot = to_dot(controller, title=title)
    atomic_write_text(out / f"{controller.kind}.dot", dot)
    try:
        render(dot, out / f"{controller.kind}.svg")
        metrics["picture"] = f"{controller.kind}.svg"
    except InterpRLError as exc:  # no graphviz binary: everything else is still written
        log.warning("%s", exc)
        metrics["picture"] = f"{controller.kind}.dot"
        metrics["picture_error"] = str(exc)


def _size_text(size: dict[str, int]) -> str:
    parts = [f"{size['leaves']} leaves"] if "leaves" in size else []
    return ", ".join([*parts, f"{size['parameters']} parameters"])
