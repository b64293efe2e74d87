"""Warm start against RL from scratch, at equal environment steps: one picture and one table.

Usage::

    python -m benchmarks.warm_vs_scratch [benchmarks/results/finetune]

Reads the folder's ``finetune_probe`` results (distilled by DAgger, then fine-tuned) and
``scratch_probe`` results (a mixture trained by SAC from scratch) and, per task and teacher (the yardstick), draws the
held-out return against environment steps: DAgger's rounds (each round's steps counted), then the
fine-tuning (its transitions added), against the training from scratch's checkpoint evaluations.
Writes ``warm-vs-scratch.md`` and ``warm-vs-scratch-TASK-TEACHER.png`` there (atomically). Held-out
evaluation episodes are counted on neither side.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from interp_rl.io import atomic_write_bytes, atomic_write_text


def _teacher(res: dict[str, Any]) -> str:
    """A short name of the yardstick: ``sac`` for a zoo folder ``sac/HalfCheetah-v3_1/HalfCheetah-v3.zip``,
    else the file's stem."""
    path = Path(res["teacher"])
    return path.parts[-3] if len(path.parts) >= 3 and re.search(r"_\d+$", path.parent.name) else path.stem


def _judged(j: dict[str, Any], episodes: int) -> str:
    return f"{j['percent']:.1f} | {j['worst_percent']:.1f} | {j['below_half']} of {episodes}"


def warm_curve(res: dict[str, Any]) -> tuple[list[int], list[float]]:
    """(environment steps, held-out return) of DAgger's rounds, then of the fine-tuning's evaluations."""
    xs, ys, steps = [], [], 0
    for row in res["dagger_history"]:
        steps = int(row["samples"])
        xs.append(steps)
        ys.append(float(row["return_mean"]))
    for row in res.get("rl_history", [])[1:]:
        xs.append(steps + int(row["step"]))
        ys.append(float(row["return_mean"]))
    return xs, ys


def main(argv: list[str] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, default=Path("benchmarks/results/finetune"))
    args = ap.parse_args(argv)
    by_task: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = defaultdict(lambda: {"warm": [], "scratch": []})
    for path in sorted(args.folder.glob("*.json")):
        res = json.loads(path.read_text())
        if "scratch" in res:
            by_task[(res["task"], _teacher(res))]["scratch"].append(res)
        elif "fine_tuned" in res:
            by_task[(res["task"], _teacher(res))]["warm"].append(res)
    lines = ["# Warm start against RL from scratch", "",
             "Controllers judged on the same evaluation episodes (seeds 1000+), % of the teacher's mean there. "
             "Warm: distilled by DAgger, then fine-tuned (`python -m benchmarks.finetune_probe`); scratch: a "
             "mixture of linear experts trained end to end (`python -m benchmarks.scratch_probe`). Steps: environment "
             "steps of training (DAgger's rounds plus fine-tuning transitions; SAC's steps), held-out "
             "evaluation episodes not counted. Regenerate this page: `python -m benchmarks.warm_vs_scratch`.", "",
             "| task | teacher | start | seed | steps | mean % | worst % | episodes below half |",
             "|---|---|---|---|---|---|---|---|"]
    for (task, teacher), runs in sorted(by_task.items()):
        if not runs["warm"] or not runs["scratch"]:
            continue
        fig, ax = plt.subplots(figsize=(7, 4))
        for res in runs["warm"]:
            xs, ys = warm_curve(res)
            t = res["teacher_return"]
            label = f"warm: {res['method']}-{res['size']} distilled, then fine-tuned (seed {res['seed']})"
            ax.plot(xs, [100 * y / t for y in ys], marker="o", ms=3, label=label)
            j = res["fine_tuned"]
            lines.append(f"| {task} | {teacher} | warm ({res['method']}-{res['size']}) | {res['seed']} | "
                         f"{xs[-1]} | {_judged(j, res['episodes'])} |")
        for res in runs["scratch"]:
            t = res["teacher_return"]
            hist = res.get("train_history", [])
            ax.plot([h["step"] for h in hist], [100 * h["eval_return"] / t for h in hist], marker="s", ms=3,
                    ls="--", label=f"scratch: {res['algo'].upper()} moe-{res['experts']} (seed {res['seed']})")
            j = res["scratch"]
            lines.append(f"| {task} | {teacher} | scratch ({res['algo']} moe-{res['experts']}) | {res['seed']} | "
                         f"{res['steps']} | {_judged(j, res['episodes'])} |")
        ax.axhline(100, color="black", lw=0.8, alpha=0.5)
        ax.axhline(90, color="grey", ls=":", lw=1)
        ax.set_xlabel("environment steps of training")
        ax.set_ylabel(f"held-out return, % of the {teacher.upper()} teacher")
        ax.set_title(f"{task}: warm start against RL from scratch")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        buf = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        name = f"warm-vs-scratch-{task}-{teacher}.png"
        atomic_write_bytes(args.folder / name, buf.getvalue())
        lines += ["", f"![{task}]({name})", ""]
    path = atomic_write_text(args.folder / "warm-vs-scratch.md", "\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
