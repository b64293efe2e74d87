"""SINDy dynamics surrogates: the fit (known answer on the pendulum), files, the surrogate env, the Dyna loop, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from typer.testing import CliRunner

from distill.dynamics import (
    SINDyDynamics,
    SurrogateEnv,
    Transitions,
    collect_transitions,
    evaluate_dynamics,
    steps_to_reach,
    train_dyna,
    train_model_free,
)
from envs.dynamics import SB3Agents, dynamics_task
from interp_rl.cli import app
from interp_rl.errors import InterpRLError, InvalidParameterError

runner = CliRunner()


@pytest.fixture(scope="module")
def pendulum():
    task = dynamics_task("Pendulum-v1")
    return task, collect_transitions(task.env_fn, 2000, seed=0)


def test_pendulum_velocity_equation_is_read_back_from_random_rollouts(pendulum) -> None:
    task, data = pendulum
    # gymnasium's pendulum: theta_dot' = theta_dot + (3 g / (2 l) sin(theta) + 3 / (m l^2) u) dt, g=10, dt=0.05
    model = SINDyDynamics(n_models=1, library="poly2").fit(data, task)
    line = next(ln for ln in model.equations() if ln.startswith("Δtheta_dot"))
    assert "0.750*sin_theta" in line and "0.150*torque" in line
    assert "x0" not in line and "obs_" not in line
    assert model.reward_kind_ == "formula" and "known formula of Pendulum-v1" in model.equations()[-1]


def test_one_step_predictions_are_accurate_and_the_ensemble_spread_grows_off_the_data(pendulum) -> None:
    task, data = pendulum
    model = SINDyDynamics(n_models=5, random_state=1).fit(data, task)
    test = collect_transitions(task.env_fn, 400, seed=77)
    ev = evaluate_dynamics(model, test, (1, 5))
    assert ev["states"] == ["cos_theta", "sin_theta", "theta_dot"]
    assert max(ev["nrmse"]["1"]) < 0.05 and max(ev["nrmse"]["5"]) < 0.3
    assert ev["reward_rmse"] < 1e-6  # the known formula
    near = model.uncertainty(test.obs[:50], test.act[:50]).mean()
    far = model.uncertainty(test.obs[:50] * 5, test.act[:50] * 5).mean()
    assert far > 3 * near
    members = model.predict_members(test.obs[:10], test.act[:10])
    assert members.shape == (5, 10, 3)
    np.testing.assert_allclose(model.predict(test.obs[:10], test.act[:10]), members.mean(axis=0))


def test_a_sindy_reward_model_is_fitted_where_no_formula_is_known(pendulum) -> None:
    task, data = pendulum
    model = SINDyDynamics(n_models=2, reward="model").fit(data, task)
    assert model.reward_kind_ == "model" and model.size()["reward_terms"] > 0
    assert model.equations()[-1].startswith("reward = ")
    r = model.predict_reward(data.obs[:200], data.act[:200], data.next_obs[:200])
    assert np.corrcoef(r, data.reward[:200])[0, 1] > 0.95


def test_model_json_round_trip_and_bad_files(pendulum, tmp_path) -> None:
    task, data = pendulum
    model = SINDyDynamics(n_models=3, random_state=2).fit(data, task)
    path = model.save(tmp_path / "model.json")
    text = path.read_text()
    assert "pickle" not in text and json.loads(text)["format"] == "interp-rl-dynamics"
    back = SINDyDynamics.load(tmp_path, reward_fn=task.reward_fn)
    X, U = data.obs[:20], data.act[:20]
    assert back.predict(X, U).tobytes() == model.predict(X, U).tobytes()
    assert back.predict_reward(X, U, X).tobytes() == model.predict_reward(X, U, X).tobytes()
    with pytest.raises(InterpRLError, match="load it with reward_fn="):
        SINDyDynamics.load(path).predict_reward(X, U, X)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InterpRLError, match="Cannot read the dynamics model"):
        SINDyDynamics.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"format": "something"}')
    with pytest.raises(InterpRLError, match="is not an interp-rl dynamics model"):
        SINDyDynamics.load(tmp_path / "other.json")
    data.save(tmp_path / "data.npz")
    again = Transitions.load(tmp_path / "data.npz")
    assert np.array_equal(again.obs, data.obs) and np.array_equal(again.episode, data.episode)


def test_bad_input_gets_one_line_errors(pendulum) -> None:
    task, data = pendulum
    model = SINDyDynamics(n_models=1).fit(data, task)
    with pytest.raises(InvalidParameterError, match=r"must be \(n, 3\) states and \(n, 1\) actions"):
        model.predict(data.obs[:5, :2], data.act[:5])
    bad = data.obs[:5].copy()
    bad[0, 0] = np.nan
    with pytest.raises(InvalidParameterError, match="must be finite numbers"):
        model.predict(bad, data.act[:5])
    swimmer = dynamics_task("Swimmer-v5")
    with pytest.raises(InvalidParameterError, match="must be 8 states and 2 actions"):
        SINDyDynamics().fit(data, swimmer)
    with pytest.raises(InvalidParameterError, match="The 'threshold' parameter of SINDyPolicy"):
        SINDyDynamics(threshold=-1).fit(data, task)
    with pytest.raises(InvalidParameterError, match="'model' or 'auto' for Swimmer-v5"):
        SINDyDynamics(reward="formula").fit(collect_transitions(swimmer.env_fn, 20, seed=0), swimmer)
    with pytest.raises(InvalidParameterError, match="The 'n_models' parameter of SINDyDynamics"):
        SINDyDynamics(n_models=0).fit(data, task)


def test_surrogate_is_a_gymnasium_env_that_ends_by_the_tasks_termination() -> None:
    task = dynamics_task("InvertedPendulum-v5")
    data = collect_transitions(task.env_fn, 600, seed=0)
    model = SINDyDynamics(n_models=3).fit(data, task)
    env = SurrogateEnv(model, task, data.obs, horizon=50, seed=0)
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=3)
    ends = []
    for _ in range(200):  # random pushes tip the pole past 0.2 rad: terminated, as on the real task
        obs, reward, terminated, truncated, info = env.step(np.array([3.0]))
        assert reward in (0.0, 1.0) and "disagreement" in info
        if terminated or truncated:
            ends.append(terminated)
            obs, _ = env.reset()
    assert any(ends)
    # MOPO's penalty: the reward less penalty x the members' disagreement, step by step
    penalised = SurrogateEnv(model, task, data.obs, horizon=50, penalty=2.0, seed=0)
    penalised.reset(seed=3)
    seen = []
    for _ in range(20):
        _, reward, terminated, truncated, info = penalised.step(np.array([0.5]))
        base = reward + 2.0 * info["disagreement"]  # the task's reward: 0 or 1
        assert min(abs(base), abs(base - 1.0)) < 1e-9
        seen.append(info["disagreement"])
        if terminated or truncated:
            penalised.reset()
    assert max(seen) > 0
    with pytest.raises(InvalidParameterError, match="The 'penalty' parameter of SurrogateEnv must be a finite"):
        SurrogateEnv(model, task, data.obs, penalty=-1.0)


def test_dyna_loop_and_model_free_baseline_write_curves_and_resume(tmp_path) -> None:
    task = dynamics_task("Pendulum-v1")
    agents = SB3Agents("sac", task.task)
    small = {"real_steps": 500, "initial_steps": 300, "iterations": 2, "model_steps": 150, "horizon": 50,
             "eval_episodes": 1, "seed": 0}
    rows: list[dict] = []
    first = train_dyna(task, agents, tmp_path / "dyna", **{**small, "iterations": 2}, progress=rows.append)
    curve = first["curve"]
    # x: the real steps each evaluated agent learnt from; the last one has used the whole budget
    assert [r["real_steps"] for r in curve] == [300, 500] and [r["iteration"] for r in rows] == [0, 1]
    for name in ("curve.json", "model.json", "data.npz", "agent.npz", "state.json"):
        assert (tmp_path / "dyna" / name).is_file()
    assert len(Transitions.load(tmp_path / "dyna" / "data.npz")) == 500
    # each round refills the emptied buffer for min(1000, model_steps / 10) steps, then learns: the shipped
    # learning_starts (1000 for Pendulum) would otherwise pass without a single update
    agent = agents.load(str(tmp_path / "dyna" / "agent.npz"), task.env_fn(0))
    assert agent.learning_starts == 150 + 15 and agent._n_updates > 0
    with pytest.raises(InterpRLError, match="already holds a run; pass --resume"):
        train_dyna(task, agents, tmp_path / "dyna", **small)
    with pytest.raises(InterpRLError, match=r"different settings \(model_steps\)"):
        train_dyna(task, agents, tmp_path / "dyna", **{**small, "model_steps": 99}, resume=True)
    again = train_dyna(task, agents, tmp_path / "dyna", **small, resume=True)  # nothing left to do
    assert again["curve"] == curve
    free = train_model_free(task, agents, tmp_path / "free", real_steps=400, eval_every=200, eval_episodes=1)
    assert [r["real_steps"] for r in free["curve"]] == [200, 400]
    assert steps_to_reach(free["curve"], -1e9) == 200 and steps_to_reach(free["curve"], 1e9) is None
    with pytest.raises(InvalidParameterError, match="The 'initial_steps' parameter of train_dyna must be fewer"):
        train_dyna(task, agents, tmp_path / "x", **{**small, "initial_steps": 500})
    with pytest.raises(InvalidParameterError, match="The 'iterations' parameter of train_dyna must be at least 2"):
        train_dyna(task, agents, tmp_path / "x", **{**small, "iterations": 1})
    # a new agent in each round's model: the last one has trained only there
    fresh = train_dyna(task, agents, tmp_path / "fresh", **small, warm_start=False)
    assert len(fresh["curve"]) == 2 and fresh["settings"]["warm_start"] is False
    assert agents.load(str(tmp_path / "fresh" / "agent.npz"), task.env_fn(0)).num_timesteps == 150
    assert not list(tmp_path.rglob("*.zip")), "the loop keeps its agents without pickles"
    with pytest.raises(InvalidParameterError, match="The 'uncertainty_penalty' parameter of train_dyna must be a"):
        train_dyna(task, agents, tmp_path / "x", **small, uncertainty_penalty=float("nan"))


def test_cli_dynamics_fit_evaluate_and_train(tmp_path) -> None:
    res = runner.invoke(app, ["dynamics", "fit", "--env", "Pendulum-v1", "--out", str(tmp_path / "m"),
                              "--steps", "600", "--models", "2", "--horizons", "1,5"])
    assert res.exit_code == 0, res.stderr
    assert "theta_dot" in res.stdout and "1-step" in res.stdout
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["data.npz", "equations.txt", "metrics.json",
                                                                  "model.json"]
    assert "0.750*sin_theta" in (tmp_path / "m" / "equations.txt").read_text()
    res = runner.invoke(app, ["dynamics", "evaluate", str(tmp_path / "m"), "--steps", "300", "--horizons", "1,5"])
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "m" / "evaluation.png").is_file() and (tmp_path / "m" / "evaluation.json").is_file()
    # another check, kept apart (--out): the model's folder is left as it was
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()}
    res = runner.invoke(app, ["dynamics", "evaluate", str(tmp_path / "m"), "--steps", "300", "--horizons", "1,5",
                              "--seed", "7", "--out", str(tmp_path / "check")])
    assert res.exit_code == 0, res.stderr
    assert json.loads((tmp_path / "check" / "evaluation.json").read_text())["seed"] == 7
    assert (tmp_path / "check" / "evaluation.png").is_file()
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()} == before
    bad = runner.invoke(app, ["dynamics", "fit", "--env", "Pendulum-v1", "--out", str(tmp_path / "b"),
                              "--steps", "100", "--library", "poly0"])
    assert bad.exit_code == 1
    assert bad.stderr.startswith("Error: The '--library' option of interp-rl dynamics fit must be 'polyD'")
    assert len(bad.stderr.strip().splitlines()) == 1
    bad = runner.invoke(app, ["dynamics", "fit", "--env", "Pendulum-v1", "--out", str(tmp_path / "b"),
                              "--horizons", "0,x"])
    assert "The '--horizons' option of interp-rl dynamics must be comma-separated step counts" in bad.stderr
    res = runner.invoke(app, ["dynamics", "train", "--env", "Pendulum-v1", "--out", str(tmp_path / "t"),
                              "--real-steps", "400", "--initial-steps", "300", "--iterations", "2",
                              "--model-steps", "100", "--horizon", "50", "--baseline-steps", "200",
                              "--eval-every", "200", "--eval-episodes", "1", "--no-warm-start"])
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "t" / "curves.png").is_file() and "Model-free: return" in res.stdout
    assert json.loads((tmp_path / "t" / "dyna" / "curve.json").read_text())["settings"]["model"] == {
        "library": "poly2", "threshold": 0.02}
    assert json.loads((tmp_path / "t" / "dyna" / "curve.json").read_text())["settings"]["warm_start"] is False
    for flag, value, message in (("--uncertainty-penalty", "-1", "The '--uncertainty-penalty' option of interp-rl "
                                                                 "dynamics train must be a finite number >= 0"),
                                 ("--library", "poly0", "The '--library' option of interp-rl dynamics train must be"),
                                 ("--threshold", "-0.5", "The '--threshold' option of interp-rl dynamics train")):
        bad = runner.invoke(app, ["dynamics", "train", "--env", "Pendulum-v1", "--out", str(tmp_path / "b"),
                                  flag, value])
        assert bad.exit_code == 1 and bad.stderr.startswith(f"Error: {message}"), bad.stderr
        assert not (tmp_path / "b").exists()


def test_dyna_study_report_states_the_gain_at_equal_return(tmp_path) -> None:
    from benchmarks.studies.dyna import BUDGETS, report

    spec = BUDGETS["Pendulum-v1"]

    def write(seed: int, name: str, settings: dict, points: list[tuple[int, float]]) -> None:
        folder = tmp_path / "Pendulum-v1" / f"seed{seed}" / name
        folder.mkdir(parents=True)
        curve = [{"real_steps": s, "return_mean": r} for s, r in points]
        (folder / "curve.json").write_text(json.dumps({"settings": settings, "curve": curve}))

    write(0, "dyna", spec["dyna"], [(1000, -150.0), (2000, -160.0), (3000, -155.0)])
    write(0, "model-free", spec["model_free"], [(2000, -1500.0), (4000, -170.0), (6000, -145.0), (20000, -130.0)])
    text = report(tmp_path).read_text()
    assert "Model-free final return, mean of 1 seed(s): **-130.0** after 20000 real steps." in text
    # the model-free agent first reaches Dyna's last return (-155) after 6000 steps: 2x Dyna's 3000; and Dyna's
    # first evaluation (-150 after 1000) after 6000 too: 6x
    assert "| 0 | -155.0 | -170.0 (at 4000) | -130.0 | not reached | – | 6000 | 2.0x | 6.0x (-150.0 after 1000) |" \
        in text
    assert (tmp_path / "figures" / "curves-Pendulum-v1.png").stat().st_size > 0


# ------------------------------------------------------------------------------ the surrogate, step by step
@pytest.fixture(scope="module")
def cartpole_models():
    task = dynamics_task("InvertedPendulum-v5")
    data = collect_transitions(task.env_fn, 600, seed=0)
    return task, data, SINDyDynamics(n_models=1).fit(data, task), SINDyDynamics(n_models=3, random_state=1).fit(data, task)


def _one_step(model, task, start, action, **kw):
    env = SurrogateEnv(model, task, np.asarray([start], dtype=np.float64), horizon=50, seed=0, **kw)
    env.reset(seed=0)
    return env.step(np.array([action]))


def test_members_are_fitted_on_bootstrap_resamples(cartpole_models) -> None:
    """Each member sees its own resample, so members differ, and disagree more off the data than on it."""
    task, data, one, three = cartpole_models
    X, U = data.obs[:50], data.act[:50]
    members = three.predict_members(X, U)
    assert not np.allclose(members[0], members[1], rtol=0, atol=1e-9)
    near = three.uncertainty(X, U).mean()
    assert near > 1e-6  # a floor: identical members would give 0 up to round-off
    assert three.uncertainty(X * 5, U * 5).mean() > 3 * near
    assert np.array_equal(one.predict_members(X, U)[0], one.predict(X, U))  # one member: a fit on every row


def test_the_surrogate_terminates_on_the_state_it_steps_to(cartpole_models) -> None:
    task, data, one, _ = cartpole_models
    up = np.array([0.0, 0.19, 0.0, 2.0])  # upright but falling: the next state is past 0.2 rad
    nxt, _, terminated, _, _ = _one_step(one, task, up, 0.0)
    assert abs(nxt[1]) > 0.2 and terminated
    down = np.array([0.0, 0.21, 0.0, -2.0])  # past 0.2 rad but coming back: the next state is inside
    nxt, _, terminated, _, _ = _one_step(one, task, down, 0.0)
    assert abs(nxt[1]) <= 0.2 and not terminated


def test_the_surrogate_truncates_where_the_members_disagree(cartpole_models) -> None:
    task, data, _, three = cartpole_models
    start = data.obs[10]
    _, _, _, truncated, info = _one_step(three, task, start, 0.5, max_disagreement=0.0)
    assert info["disagreement"] > 0 and truncated
    _, _, _, truncated, info = _one_step(three, task, start, 0.5, max_disagreement=1e9)
    assert not truncated


def test_the_surrogate_truncates_and_clips_where_the_state_leaves_the_data_widened_by_the_margin(
        cartpole_models) -> None:
    task, data, one, _ = cartpole_models
    spread = one.state_scale_
    start = data.obs[10].copy()
    start[0] = one.state_high_[0] + 10 * spread[0]  # the cart 10 spreads beyond anything recorded
    nxt, _, _, truncated, _ = _one_step(one, task, start, 0.0, margin=3.0)
    assert truncated and nxt[0] == pytest.approx(one.state_high_[0] + 3.0 * spread[0])  # clipped to the margin
    _, _, _, truncated, _ = _one_step(one, task, start, 0.0, margin=100.0)
    assert not truncated  # inside a margin of 100 spreads
    start[0] = one.state_low_[0] - 10 * spread[0]  # and below
    nxt, _, _, truncated, _ = _one_step(one, task, start, 0.0, margin=3.0)
    assert truncated and nxt[0] == pytest.approx(one.state_low_[0] - 3.0 * spread[0])
    assert not _one_step(one, task, start, 0.0, margin=100.0)[3]
