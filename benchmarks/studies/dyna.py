"""SINDy-RL's sample-efficiency study: the Dyna loop on a SINDy surrogate against model-free SB3, in real steps.

Run from the repository's root::

    python -m benchmarks.studies.dyna run --task Pendulum-v1 --seeds 0,1,2 [--out benchmarks/results/dyna]
    python -m benchmarks.studies.dyna run --task Swimmer-v5 --seeds 0,1,2
    python -m benchmarks.studies.dyna report [--out benchmarks/results/dyna]

``run`` trains, per seed, the Dyna agent (``interp-rl dynamics train``'s loop, :func:`distill.dynamics.train_dyna`)
and the model-free agent (:func:`distill.dynamics.train_model_free`: the same algorithm and shipped
hyperparameters, trained on the real task) with the task's budgets in :data:`BUDGETS`, into
``OUT/TASK/seedN/{dyna,model-free}``; each run resumes where it stopped, and finished runs are skipped.
``report`` writes ``OUT/report.md`` and ``OUT/figures/curves-TASK.png`` (return against real steps, every seed and
the mean) from the runs' curves (``curve.json``) alone: per task, the model-free agent's final return (mean over
seeds), the real steps the Dyna agent needs to reach it (each seed, and the mean curve), the ratio, and the final
returns.
Evaluation episodes (``eval_episodes`` per point, deterministic actions) count on neither side.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.studies._common import add_out, new_report, parse, read_json, write_report
from distill.dynamics import learning_curve_plot, steps_to_reach
from interp_rl.document import png

__all__ = ["BUDGETS", "main", "report", "run"]

OUT = "benchmarks/results/dyna"

#: Per task: the Dyna loop's settings, the model-free agent's real-step budget (5x the loop's and more) and the
#: evaluation episodes per point (Pendulum's returns depend much on the random start: 20 episodes).
#: Pendulum: a new agent each round; the continued one went from -143 to -151 after the first round to -155 to -209
#: after the last, where a new agent trained on the last model scored -144.
#: Swimmer's surrogate: pysindy's polynomial (degree 2) and Fourier (sin, cos) libraries, threshold 0.1 -- with
#: data of a swimming gait its 1,000-step rollouts of the teacher score 360 against the real 350, where the degree-2
#: polynomials alone diverge within 130 steps; MOPO's uncertainty penalty against exploiting the early models.
#: SAC (gamma 0.9999) finds Swimmer's gait only after ~90,000 steps on the real task, and not within 30,000 even in
#: that good surrogate: 5 rounds of 30,000 surrogate steps were no better (24.1, then -17.0 after two rounds).
BUDGETS: dict[str, dict[str, Any]] = {
    "Pendulum-v1": {"dyna": {"real_steps": 3000, "initial_steps": 1000, "iterations": 4, "model_steps": 10000,
                             "horizon": 200, "warm_start": False},
                    "model_free": {"real_steps": 20000, "eval_every": 2000},
                    "eval_episodes": 20},
    "Swimmer-v5": {"dyna": {"real_steps": 20000, "initial_steps": 4000, "iterations": 8, "model_steps": 10000,
                            "horizon": 200, "uncertainty_penalty": 1.0,
                            "model_params": {"library": "poly2+fourier1", "threshold": 0.1}},
                   "model_free": {"real_steps": 100000, "eval_every": 5000},
                   "eval_episodes": 5},
}
ALGO = "sac"


def _finished(folder: Path, settings: dict[str, Any]) -> bool:
    """Whether ``folder`` holds a committed curve of a whole run with these settings (its resume state, not
    committed, may be missing)."""
    f = folder / "curve.json"
    if not f.is_file():
        return False
    done = read_json(f)
    same = all(done["settings"].get("model" if k == "model_params" else k) == v for k, v in settings.items())
    return same and bool(done["curve"]) and done["curve"][-1]["real_steps"] >= settings["real_steps"]


def run(task: str, seeds: list[int], out: Path) -> None:
    """Train the Dyna and the model-free agent of ``task`` for each seed, into ``out/TASK/seedN/{dyna,model-free}``.

    Parameters
    ----------
    task
        A task of :data:`BUDGETS`.
    seeds
        The seeds.
    out
        The study's folder.
    """
    from distill.dynamics import train_dyna, train_model_free
    from envs.dynamics import SB3Agents, dynamics_task

    spec = BUDGETS[task]
    t = dynamics_task(task)
    agents = SB3Agents(ALGO, t.task)
    for seed in seeds:
        where = out / task / f"seed{seed}"
        for name, fn, settings in (("dyna", train_dyna, spec["dyna"]),
                                   ("model-free", train_model_free, spec["model_free"])):
            folder = where / name

            def say(row: dict[str, Any], name: str = name, seed: int = seed) -> None:
                print(f"{task} seed {seed} {name}: {row['real_steps']} real steps, return {row['return_mean']:.1f}",
                      flush=True)

            if _finished(folder, settings):
                continue
            fn(t, agents, folder, **settings, eval_episodes=spec["eval_episodes"], seed=seed,
               resume=(folder / "state.json").is_file(), progress=say)


def _curves(out: Path, task: str) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``{"dyna": {seed: curve}, "model-free": {seed: curve}}`` of the runs in ``out/task``."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {"dyna": {}, "model-free": {}}
    for name in found:
        for f in sorted((out / task).glob(f"seed*/{name}/curve.json")):
            found[name][f.parent.parent.name.removeprefix("seed")] = read_json(f)["curve"]
    return found


def _mean_curve(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    grid = sorted({r["real_steps"] for run in runs for r in run})
    return [{"real_steps": g, "return_mean": float(np.mean([np.interp(g, [r["real_steps"] for r in run],
                                                                      [r["return_mean"] for r in run])
                                                            for run in runs]))} for g in grid]


def _gain(free: list[dict[str, Any]] | None, level: float, budget: int) -> list[str]:
    """Model-free steps to ``level`` and their ratio to the Dyna ``budget`` (two table cells)."""
    if not free:
        return ["–", "–"]
    steps = steps_to_reach(free, level)
    if steps is None:
        return [f"not within {free[-1]['real_steps']}", f"> {free[-1]['real_steps'] / budget:.1f}x"]
    return [str(steps), f"{steps / budget:.1f}x"]


def _best_gain(free: list[dict[str, Any]] | None, dyna: list[dict[str, Any]]) -> str:
    """Over the Dyna curve's points: the largest ratio of the model-free steps to reach that point's return to
    the Dyna steps behind it (a table cell: the ratio and the point)."""
    if not free:
        return "–"
    best = None
    for r in dyna:
        steps = steps_to_reach(free, r["return_mean"])
        if steps is not None and (best is None or steps / r["real_steps"] > best[0]):
            best = (steps / r["real_steps"], r)
    if best is None:
        return f"none reached within {free[-1]['real_steps']}"
    return f"{best[0]:.1f}x ({best[1]['return_mean']:.1f} after {best[1]['real_steps']})"


def report(out: Path) -> Path:
    """Rebuild ``report.md`` and its figures from the runs' curves in ``out`` (nothing is trained).

    Parameters
    ----------
    out
        The study's folder.

    Returns
    -------
    Path
        The ``report.md`` written.
    """
    out = Path(out)
    doc = new_report("SINDy surrogates: sample efficiency against model-free RL", "dyna",
                     [f"python -m benchmarks.studies.dyna run --task {task} --seeds 0,1,2" for task in BUDGETS])
    doc.p(f"Both sides train SB3 {ALGO.upper()} with the hyperparameters `interp-rl train` ships for the task. "
          "The Dyna agent (SINDy-RL's loop, `interp-rl dynamics train`) sees only the real steps it collects: "
          "random actions first, then its own actions with exploration noise, between rounds of fitting a "
          "SINDy ensemble (5 bootstrap members, STLSQ; the reward from the task's formula where known, else a "
          "SINDy reward model) and training in the surrogate (its replay buffer emptied at each refit). Each "
          "point: the mean return of deterministic episodes on the real task, which count on neither side. "
          "'Model-free steps to Dyna's return': the real steps the model-free agent needed to first reach the "
          "return the Dyna agent had after its whole budget; their ratio to that budget is the sample-efficiency "
          "gain at equal return; 'largest gain along the Dyna curve' takes the same ratio at every Dyna "
          "evaluation and gives the largest (with that evaluation's return and real steps).")
    for task, spec in BUDGETS.items():
        curves = _curves(out, task)
        if not curves["dyna"] and not curves["model-free"]:
            continue
        fig = learning_curve_plot({"SINDy surrogate (Dyna)": list(curves["dyna"].values()),
                                   f"{ALGO.upper()} model-free": list(curves["model-free"].values())},
                                  f"{task}: return against real steps")
        doc.h(2, task)
        doc.image(f"curves-{task}.png", png(fig), task)
        doc.p(f"Dyna: {spec['dyna']}; model-free: {spec['model_free']}; {spec['eval_episodes']} evaluation "
              "episodes per point.")
        free_steps = spec["model_free"]["real_steps"]
        free = {s: c for s, c in curves["model-free"].items() if c[-1]["real_steps"] >= free_steps}
        dyna = {s: c for s, c in curves["dyna"].items() if c[-1]["real_steps"] >= spec["dyna"]["real_steps"]}
        if not free or not dyna:
            doc.p(f"Runs finished: Dyna {len(dyna)} seed(s), model-free {len(free)}; the comparison waits for both.")
            continue
        level = float(np.mean([c[-1]["return_mean"] for c in free.values()]))
        budget = spec["dyna"]["real_steps"]
        rows = []
        for seed, c in sorted(dyna.items()):
            reach = steps_to_reach(c, level)
            own = free.get(seed)
            same = next((r for r in own if r["real_steps"] >= budget), None) if own else None
            rows.append([seed, f"{c[-1]['return_mean']:.1f}",
                         f"{same['return_mean']:.1f} (at {same['real_steps']})" if same else "–",
                         f"{own[-1]['return_mean']:.1f}" if own else "–",
                         str(reach) if reach else "not reached", f"{free_steps / reach:.1f}x" if reach else "–",
                         *_gain(own, c[-1]["return_mean"], budget), _best_gain(own, c)])
        mean_reach = steps_to_reach(_mean_curve(list(dyna.values())), level)
        doc.p(f"Model-free final return, mean of {len(free)} seed(s): **{level:.1f}** after {free_steps} real steps.")
        doc.table(["seed", "Dyna's return after its budget", "model-free's, first evaluation at or after that budget",
                   "model-free final return", "Dyna's real steps to the model-free final mean", "fewer steps",
                   "model-free steps to Dyna's return", "gain at equal return", "largest gain along the Dyna curve"],
                  rows)
        doc.p(f"Mean Dyna curve over {len(dyna)} seed(s): "
              + (f"reaches {level:.1f} after **{mean_reach}** real steps, **{free_steps / mean_reach:.1f}x** "
                 "fewer." if mean_reach else f"does not reach {level:.1f} within {spec['dyna']['real_steps']} "
                 "real steps."))
    return write_report(doc, out)


def main(argv: list[str] | None = None) -> None:
    """The command line: ``run`` one task, or ``report``.

    Parameters
    ----------
    argv
        The arguments (None: the command line's).
    """
    ap = argparse.ArgumentParser(prog="python -m benchmarks.studies.dyna",
                                 description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    r = sub.add_parser("run")
    r.add_argument("--task", required=True, choices=sorted(BUDGETS))
    r.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    add_out(r, OUT)
    add_out(sub.add_parser("report"), OUT)
    args = parse(ap, argv)
    if args.part == "run":
        run(args.task, [int(s) for s in args.seeds.split(",")], args.out)
    else:
        report(args.out)


if __name__ == "__main__":
    main()
