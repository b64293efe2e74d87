"""``interp-rl dynamics fit|evaluate|train``: SINDy dynamics surrogates and the Dyna loop."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from interp_rl.cli._app import (
    _rollout_policy,
    app,
    cli_errors,
    err,
    out,
)

dynamics_app = typer.Typer(
    help="SINDy dynamics surrogates: fit one from rollouts, check its predictions, train an agent in it (Dyna).",
    rich_markup_mode=None,
    no_args_is_help=True,
)
app.add_typer(dynamics_app, name="dynamics")




def _nrmse_table(evaluation: dict[str, Any], title: str) -> Table:
    table = Table(title=title)
    table.add_column("state")
    hs = [h for h in evaluation["horizons"] if str(h) in evaluation["nrmse"]]
    for h in hs:
        table.add_column(f"{h}-step", justify="right")
    for j, name in enumerate(evaluation["states"]):
        table.add_row(name, *(f"{evaluation['nrmse'][str(h)][j]:.3g}" for h in hs))
    return table


def _horizons(text: str) -> list[int]:
    from interp_rl.errors import bad_value

    try:
        hs = sorted({int(h) for h in text.split(",")})
    except ValueError:
        raise bad_value("--horizons", "interp-rl dynamics", "comma-separated step counts such as '1,10,50'",
                        text, what="option") from None
    if not hs or hs[0] < 1:
        raise bad_value("--horizons", "interp-rl dynamics", "step counts >= 1", text, what="option")
    return hs


@dynamics_app.command("fit")
@cli_errors
def dynamics_fit(
    env: Annotated[str, typer.Option(help="Task, e.g. Swimmer-v5 or Pendulum-v1.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for model.json, data.npz, equations.txt, "
                                                        "metrics.json.")],
    steps: Annotated[int, typer.Option(help="Real transitions to collect (80% fit, the last 20% of episodes "
                                            "held out).")] = 5000,
    policy: Annotated[str | None, typer.Option(help="Collect with this teacher (zip, zoo or train folder) or "
                                                    "controller folder [default: random actions].")] = None,
    action_noise: Annotated[float, typer.Option(help="Gaussian noise on the policy's actions, in half action "
                                                     "ranges.")] = 0.1,
    data: Annotated[Path | None, typer.Option(help="Fit on these transitions (a data.npz) instead of "
                                                   "collecting.")] = None,
    library: Annotated[str, typer.Option(help="Candidate terms of the states and actions, as for distill "
                                              "sindy.")] = "poly2",
    threshold: Annotated[float, typer.Option(help="Smallest standardised coefficient kept.")] = 0.02,
    models: Annotated[int, typer.Option(help="Ensemble members (bootstrap resamples).")] = 5,
    reward: Annotated[str, typer.Option(help="'auto' (the task's known formula where there is one), 'formula' or "
                                             "'model' (a SINDy reward model).")] = "auto",
    horizons: Annotated[str, typer.Option(help="Prediction horizons checked on the held-out episodes.")] = "1,10,50",
    seed: Annotated[int, typer.Option(help="Seed of the rollouts and the resamples.")] = 0,
) -> None:
    """Fit an ensemble of sparse discrete-time models x[t+1] = x[t] + f(x[t], u[t]) and a reward from rollouts."""
    from distill.dynamics import Transitions, collect_transitions, fit_dynamics
    from envs.dynamics import dynamics_task
    from interp_rl.validation import check_float, check_int

    task = dynamics_task(env)
    check_int(steps, "--steps", "interp-rl dynamics fit", low=20)
    check_float(action_noise, "--action-noise", "interp-rl dynamics fit")
    hs = _horizons(horizons)
    if data is not None:
        transitions = Transitions.load(data)
    else:
        transitions = collect_transitions(task.env_fn, steps, policy=_rollout_policy(policy, task.task), seed=seed,
                                          action_noise=action_noise if policy else 0.0)
    from interp_rl.errors import InvalidParameterError

    try:
        model, metrics = fit_dynamics(task, transitions, out_dir, library=library, threshold=threshold,
                                      n_models=models, reward=reward, horizons=hs, seed=seed,
                                      source=policy or "random")
    except InvalidParameterError as exc:  # the one option not named as the library's parameter (the others:
        if exc.name == "n_models":  # cli_errors)
            raise exc.renamed("--models", "interp-rl dynamics fit") from None
        raise
    evaluation = metrics["held_out_evaluation"]
    out.print(_nrmse_table(evaluation, f"{task.task}: prediction error on held-out episodes (RMSE / std; "
                                       f"reward {evaluation['reward_rmse']:.3g})"))
    size = model.size()
    out.print(f"{size['members']} members of about {size['nonzero_terms_per_member']} terms each"
              + (f", reward model {size['reward_terms']} terms" if size["reward_terms"] else ", known reward")
              + f". Wrote model.json, data.npz, equations.txt and metrics.json to {out_dir}.", markup=False)


@dynamics_app.command("evaluate")
@cli_errors
def dynamics_evaluate(
    model_dir: Annotated[Path, typer.Argument(help="A folder written by interp-rl dynamics fit (or its "
                                                   "model.json).")],
    steps: Annotated[int, typer.Option(help="Fresh real transitions to test on.")] = 2000,
    policy: Annotated[str | None, typer.Option(help="Collect them with this teacher or controller [default: "
                                                    "random actions].")] = None,
    action_noise: Annotated[float, typer.Option(help="Gaussian noise on the policy's actions.")] = 0.1,
    horizons: Annotated[str, typer.Option(help="Prediction horizons.")] = "1,10,50",
    seed: Annotated[int, typer.Option(help="Seed of the test rollouts.")] = 12345,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Folder for evaluation.json and evaluation.png "
                                                               "[default: the model's folder].")] = None,
) -> None:
    """One-step and multi-step prediction error per named state on fresh episodes; evaluation.json and .png."""
    from distill.dynamics import SINDyDynamics, collect_transitions, write_evaluation
    from envs.dynamics import REWARDS, dynamics_task
    from interp_rl.validation import check_int

    check_int(steps, "--steps", "interp-rl dynamics evaluate", low=2)
    folder = out_dir or (model_dir if model_dir.is_dir() else model_dir.parent)
    raw = SINDyDynamics.load(model_dir)
    model = SINDyDynamics.load(model_dir, reward_fn=REWARDS.get(raw.task_))
    task = dynamics_task(model.task_)
    test = collect_transitions(task.env_fn, steps, policy=_rollout_policy(policy, task.task), seed=seed,
                               action_noise=action_noise if policy else 0.0)
    evaluation = write_evaluation(model, test, folder, horizons=_horizons(horizons), source=policy or "random",
                                  seed=seed, transitions=steps)
    out.print(_nrmse_table(evaluation, f"{task.task}: prediction error on {evaluation['episodes']} fresh episodes "
                                       f"(RMSE / std; reward {evaluation['reward_rmse']:.3g})"))
    out.print(f"Wrote evaluation.json and evaluation.png to {folder}.", markup=False)


@dynamics_app.command("train")
@cli_errors(resumable="flag")
def dynamics_train(
    env: Annotated[str, typer.Option(help="Task, e.g. Swimmer-v5 or Pendulum-v1.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for dyna/, model-free/ and curves.png.")],
    real_steps: Annotated[int, typer.Option(help="Real environment steps of the Dyna loop, in all.")] = 20000,
    initial_steps: Annotated[int, typer.Option(help="Random-action steps before the first fit.")] = 4000,
    iterations: Annotated[int, typer.Option(help="Fit - train in the surrogate - collect rounds.")] = 8,
    model_steps: Annotated[int, typer.Option(help="Agent steps in the surrogate per round.")] = 20000,
    horizon: Annotated[int, typer.Option(help="Longest surrogate episode.")] = 200,
    library: Annotated[str, typer.Option(help="Candidate terms of the dynamics, as for distill sindy (e.g. "
                                              "poly2+fourier1).")] = "poly2",
    threshold: Annotated[float, typer.Option(help="SINDy threshold of the dynamics.")] = 0.02,
    uncertainty_penalty: Annotated[float, typer.Option(help="Taken off each surrogate reward per state spread of "
                                                            "the members' disagreement, in standard deviations of "
                                                            "the real rewards (MOPO; 0: none).")] = 0.0,
    warm_start: Annotated[bool, typer.Option(help="Continue the last round's agent in the new model (else a new "
                                                  "agent each round).")] = True,
    algo: Annotated[str, typer.Option(help="SB3 algorithm, with the shipped hyperparameters.")] = "sac",
    baseline_steps: Annotated[int, typer.Option(help="Real steps of the model-free baseline (0: no "
                                                     "baseline).")] = 100000,
    eval_every: Annotated[int, typer.Option(help="Baseline evaluation every this many real steps.")] = 5000,
    eval_episodes: Annotated[int, typer.Option(help="Real episodes per evaluation (not counted as training "
                                                    "steps).")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of everything.")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run in --out.")] = False,
) -> None:
    """SINDy-RL's Dyna loop against the model-free agent on the same task; learning curves in real steps."""
    from distill.dynamics import (
        SINDyDynamics,
        collect_transitions,
        learning_curve_figure,
        steps_to_reach,
        train_dyna,
        train_model_free,
    )
    from envs.dynamics import SB3Agents, dynamics_task
    from interp_rl.errors import bad_value

    task = dynamics_task(env)
    agents = SB3Agents(algo, task.task)
    if not (math.isfinite(uncertainty_penalty) and uncertainty_penalty >= 0):
        raise bad_value("--uncertainty-penalty", "interp-rl dynamics train", "a finite number >= 0",
                        uncertainty_penalty, what="option")
    # the model's options, checked before any environment step (cli_errors names them as typed)
    SINDyDynamics(library=library, threshold=threshold).fit(collect_transitions(task.env_fn, 20, seed=seed), task)

    def say(row: dict[str, Any]) -> None:
        what = "Dyna" if "iteration" in row else "model-free"
        err.print(f"{what}: {row['real_steps']} real steps, return {row['return_mean']:.1f}", markup=False)

    dyna = train_dyna(task, agents, out_dir / "dyna", real_steps=real_steps, initial_steps=initial_steps,
                      iterations=iterations, model_steps=model_steps, horizon=horizon,
                      eval_episodes=eval_episodes, uncertainty_penalty=uncertainty_penalty,
                      warm_start=warm_start, seed=seed,
                      resume=resume or (out_dir / "dyna").exists(),
                      model_params={"library": library, "threshold": threshold}, progress=say)
    curves = {"SINDy surrogate (Dyna)": [dyna["curve"]]}
    free = None
    if baseline_steps > 0:
        free = train_model_free(task, agents, out_dir / "model-free", real_steps=baseline_steps,
                                eval_every=eval_every, eval_episodes=eval_episodes, seed=seed,
                                resume=resume or (out_dir / "model-free").exists(), progress=say)
        curves[f"{agents.algo.upper()} model-free"] = [free["curve"]]
    learning_curve_figure(curves, out_dir / "curves.png", f"{task.task}: return against real steps")
    final = dyna["curve"][-1]
    out.print(f"Dyna: return {final['return_mean']:.1f} after {final['real_steps']} real steps.", markup=False)
    if free is not None:
        level = free["curve"][-1]["return_mean"]
        reach = steps_to_reach(dyna["curve"], level)
        out.print(f"Model-free: return {level:.1f} after {free['curve'][-1]['real_steps']} real steps; Dyna "
                  + (f"reaches it after {reach} ({free['curve'][-1]['real_steps'] / reach:.1f}x fewer)."
                     if reach else "does not reach it."), markup=False)
    out.print(f"Wrote curves.png, dyna/ and model-free/ to {out_dir}.", markup=False)


