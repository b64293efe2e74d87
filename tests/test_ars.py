"""Augmented random search over programs (distill.ars): it learns, it is deterministic whatever the workers,
it resumes to the same numbers, and it keeps a program's structure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from distill.ars import ARS, STATE_JSON, ParameterLayout
from envs import env_factory
from interp_rl.errors import InterpRLError
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.mixture import MixtureProgram
from interp_rl.kinds.tree import TreeProgram
from interp_rl.rollouts import evaluate

TASK = "InvertedPendulum-v5"  # obs: cart position, pole angle, cart velocity, pole angular velocity


@pytest.fixture(scope="module")
def env_fn():  # noqa: ANN201
    return env_factory(TASK)


def _ars(**kw: object) -> ARS:
    args = {"n_directions": 4, "step_size": 0.1, "noise": 0.1, "horizon": 200, "seed": 3, **kw}
    return ARS(**args)  # type: ignore[arg-type]


def _tree() -> TreeProgram:
    """Pole leaning left or right: a different affine leaf on each side, each reading two features."""
    return TreeProgram.from_leaves(feature=[1, -1, -1], threshold=[0.0, 0.0, 0.0], left=[1, -1, -1],
                                   right=[2, -1, -1], intercept=[[0.0], [0.1], [-0.1]], obs_dim=4,
                                   coef={1: {(0, 1): 1.0, (0, 3): 0.5}, 2: {(0, 1): 2.0}},
                                   action_low=[-3.0], action_high=[3.0])


def _mixture() -> MixtureProgram:
    return MixtureProgram(expert_intercept=[[0.0], [0.0]], expert_coef=[[[0.0, 1.0, 0.0, 0.2]], [[0.0, 2.0, 0.0, 0.0]]],
                          router_intercept=[0.0, 0.0], router_coef=[[0.0, 1.0, 0.0, 0.0], [0.0, -1.0, 0.0, 0.0]],
                          action_low=[-3.0], action_high=[3.0])


def test_linear_ars_from_scratch_improves_the_return(env_fn) -> None:  # noqa: ANN001
    ars = _ars(seed=0).fit("linear", env_fn, iterations=10)
    start = LinearProgram(intercept=[0.0], coef=np.zeros((1, 4)), action_low=[-3.0], action_high=[3.0])
    before = evaluate(start, env_fn, episodes=5, seed=1000).mean_return
    after = evaluate(ars.program_, env_fn, episodes=5, seed=1000).mean_return
    assert isinstance(ars.program_, LinearProgram) and ars.n_parameters_ == 5
    assert before < 30 and after > 100
    assert ars.history_[-1]["return_mean"] > ars.history_[0]["return_mean"]
    assert [h["iteration"] for h in ars.history_] == list(range(1, 11))


def test_the_same_seed_gives_the_same_controller_with_one_or_two_workers(env_fn) -> None:  # noqa: ANN001
    one = _ars(n_workers=1).fit("linear", env_fn, iterations=3)
    two = _ars(n_workers=2).fit("linear", env_fn, iterations=3)
    assert np.array_equal(one.theta_, two.theta_)
    assert one.program_.to_dict() == two.program_.to_dict()
    strip = [{k: v for k, v in h.items() if k != "seconds"} for h in one.history_]
    assert strip == [{k: v for k, v in h.items() if k != "seconds"} for h in two.history_]


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(env_fn, tmp_path: Path) -> None:  # noqa: ANN001
    whole = _ars().fit("linear", env_fn, iterations=4)
    _ars(checkpoint_dir=tmp_path).fit("linear", env_fn, iterations=2)
    state = json.loads((tmp_path / STATE_JSON).read_text())
    assert state["iteration"] == 2 and sorted(p.name for p in tmp_path.glob("*.npz")) == ["ars_state_2.npz"]
    resumed = _ars(checkpoint_dir=tmp_path).fit("linear", env_fn, iterations=4, resume=True)
    assert np.array_equal(whole.theta_, resumed.theta_)
    assert whole.program_.to_dict() == resumed.program_.to_dict()
    with pytest.raises(InterpRLError, match="made with other settings"):
        _ars(checkpoint_dir=tmp_path, noise=0.2).fit("linear", env_fn, iterations=5, resume=True)


def test_a_trees_leaves_are_searched_and_its_structure_kept(env_fn) -> None:  # noqa: ANN001
    start = _tree()
    new = _ars().fit(start, env_fn, iterations=2).program_
    assert isinstance(new, TreeProgram)
    for name in ("feature", "threshold", "left", "right"):
        assert np.array_equal(getattr(new, name), getattr(start, name))
    assert np.array_equal(new.coef != 0.0, start.coef != 0.0)
    assert not np.array_equal(new.coef, start.coef) and not np.array_equal(new.intercept[1:], start.intercept[1:])
    assert new.intercept[0, 0] == start.intercept[0, 0]  # the root is not a piece that acts


def test_a_mixtures_experts_and_linear_router_are_searched_and_its_structure_kept(env_fn) -> None:  # noqa: ANN001
    start = _mixture()
    ars = _ars().fit(start, env_fn, iterations=2)
    new = ars.program_
    assert isinstance(new, MixtureProgram) and new.n_experts == 2 and new.router == "linear"
    assert ars.n_parameters_ == 2 + 3 + 2 + 2
    assert np.array_equal(new.expert_coef != 0.0, start.expert_coef != 0.0)
    assert np.array_equal(new.router_coef != 0.0, start.router_coef != 0.0)
    assert not np.array_equal(new.router_coef, start.router_coef)


@pytest.mark.parametrize("make", [lambda: LinearProgram(intercept=[0.3], coef=[[0.0, 1.5, -0.2, 0.7]]),
                                  _tree, _mixture], ids=["linear", "tree", "mixture"])
def test_folding_the_normalisation_gives_the_normalised_maps_actions(make) -> None:  # noqa: ANN001
    program = make()
    layout = ParameterLayout.of(program)
    rng = np.random.default_rng(0)
    theta = layout.theta() + rng.normal(size=layout.size)
    mean, std = rng.normal(size=4), rng.uniform(0.1, 3.0, size=4)
    X = rng.normal(size=(200, 4)) * 2
    folded = layout.program_for(theta, mean, std)
    normalised = layout.program_for(theta, np.zeros(4), np.ones(4))  # the same maps on normalised inputs
    Z = (X - mean) / std
    assign = folded.affine_pieces().assign(X)
    assert np.array_equal(assign, normalised.affine_pieces().assign(Z) if isinstance(program, MixtureProgram)
                          else folded.affine_pieces().assign(X))
    pieces = normalised.affine_pieces()
    expected = pieces.intercept[assign, :] + np.einsum("nad,nd->na", pieces.coef[assign], Z)
    np.testing.assert_allclose(folded.raw_predict(X), expected, rtol=1e-12, atol=1e-12)
    # a warm start re-expressed in normalised units acts as it did
    again = layout.program_for(layout.theta_for(mean, std), mean, std)
    np.testing.assert_allclose(again.raw_predict(X), program.raw_predict(X), rtol=1e-12, atol=1e-12)


def test_bad_arguments_are_one_line_errors(env_fn) -> None:  # noqa: ANN001
    with pytest.raises(InterpRLError, match="needs steps or iterations"):
        _ars().fit("linear", env_fn)
    with pytest.raises(InterpRLError, match="The 'steps' parameter of ARS.fit must be an int in"):
        _ars().fit("linear", env_fn, steps=-1)
    with pytest.raises(InterpRLError, match="'program' parameter of ARS.fit"):
        _ars().fit("tree", env_fn, iterations=1)


@pytest.fixture(scope="module")
def tree_on_the_pool(env_fn) -> ARS:  # noqa: ANN001
    """Two iterations of the tree's search in a process pool of two: what each Ray run must give."""
    return _ars(n_workers=2).fit(_tree(), env_fn, iterations=2)


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time on the machine: the tests of a group share a worker
def test_ray_tasks_give_the_same_controller_as_the_process_pool(env_fn, tree_on_the_pool: ARS) -> None:  # noqa: ANN001
    ray = pytest.importorskip("ray")
    pool = tree_on_the_pool
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        on_ray = _ars(n_workers=2, executor="ray").fit(_tree(), env_fn, iterations=2)
    finally:
        ray.shutdown()
    assert np.array_equal(pool.theta_, on_ray.theta_)


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time on the machine: the tests of a group share a worker
def test_ray_tasks_on_a_two_node_cluster_give_the_process_pools_controller(env_fn,  # noqa: ANN001
                                                                           tree_on_the_pool: ARS) -> None:
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    pool = tree_on_the_pool
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)  # a second node (its own raylet) on this machine
        cluster.wait_for_nodes()
        on_ray = _ars(n_workers=2, executor="ray", ray_address=cluster.address).fit(_tree(), env_fn, iterations=2)
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert np.array_equal(pool.theta_, on_ray.theta_)
    assert len(on_ray.ray_nodes_) == 2 and [row["ray_nodes"] for row in on_ray.history_] == [2, 2]


ARS_HP = ["--hp", "horizon=200", "--hp", "step_size=0.1", "--hp", "noise=0.1", "--hp", "n_directions=4"]


def test_train_ars_policy_writes_a_controller_folder_and_resumes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interp_rl.cli import app
    from interp_rl.program import load_controller

    runner = CliRunner()
    out = tmp_path / "lin"
    args = ["train", "--algo", "ars", "--policy", "linear", "--env", TASK, "--steps", "1500", "--out", str(out),
            "--seed", "0", *ARS_HP]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["env_steps"] >= 1500 and metrics["kind"] == "linear" and len(metrics["history"]) == metrics[
        "iterations"]
    assert {"controller.json", "controller.py", "controller.c", "rules.txt"} <= {p.name for p in out.iterdir()}
    first = load_controller(out).program.to_dict()
    again = runner.invoke(app, args)
    assert again.exit_code == 1 and "already holds a finished controller" in again.output
    resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert load_controller(out).program.to_dict() == first
    # a tree needs a start; a start of another kind is refused
    res = runner.invoke(app, ["train", "--algo", "ars", "--policy", "tree", "--env", TASK, "--steps", "100",
                              "--out", str(tmp_path / "t")])
    assert res.exit_code == 1 and "--policy tree searches a tree controller's pieces: give --start" in res.output
    res = runner.invoke(app, ["train", "--algo", "ars", "--policy", "tree", "--env", TASK, "--steps", "100",
                              "--out", str(tmp_path / "t"), "--start", str(out)])
    assert res.exit_code == 1 and "--start holds a linear controller; --policy is tree." in res.output
    res = runner.invoke(app, ["train", "--algo", "sac", "--env", TASK, "--steps", "100", "--out",
                              str(tmp_path / "s"), "--workers", "2"])
    assert res.exit_code == 1 and "--workers is an option of --algo ars --policy linear|tree|mixture." in res.output


def test_train_ars_policy_tree_searches_a_start_controllers_leaves(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interp_rl.cli import app
    from interp_rl.program import Controller, load_controller

    Controller(_tree(), task=TASK).save(tmp_path / "start" / "controller.json")
    res = CliRunner().invoke(app, ["train", "--algo", "ars", "--policy", "tree", "--env", TASK, "--steps", "300",
                                   "--out", str(tmp_path / "tuned"), "--start", str(tmp_path / "start"),
                                   "--workers", "2", *ARS_HP])
    assert res.exit_code == 0, res.output
    tuned = load_controller(tmp_path / "tuned")
    assert tuned.program.kind == "tree" and tuned.feature_names[1] == "hinge_angle"
    assert np.array_equal(tuned.program.threshold, _tree().threshold)


def test_critic_tuner_search_ars_fine_tunes_a_distilled_student_and_resumes(tmp_path: Path) -> None:
    """``--rl-search ars``: the fine-tuning stage of the distillers searches the pieces by ARS, keeps the better of
    start and end on the held-out episodes, and a resumed run makes the same controller."""
    from stable_baselines3 import SAC

    from distill import CriticTuner, DAgger, LinearPolicy
    from envs.loading import load_teacher

    env = env_factory("Pendulum-v1")(0)
    model = SAC("MlpPolicy", env, buffer_size=2000, learning_starts=100, seed=0, device="cpu")
    model.learn(200)
    model.save(str(tmp_path / "sac.zip"))
    teacher = load_teacher(tmp_path / "sac.zip", env="Pendulum-v1")
    student = DAgger(LinearPolicy(max_terms=2), n_iter=0, steps=400, eval_episodes=0).fit(
        teacher, teacher.env_fn).student_
    tuner = CriticTuner(n_steps=3000, search="ars", eval_episodes=2, checkpoint_dir=tmp_path / "a").fit(
        student, teacher, teacher.env_fn)
    assert tuner.critic_source_ == "none" and [h["step"] for h in tuner.history_] == [0, 3600]  # 2 + 16 episodes of 200
    best = max(tuner.history_, key=lambda h: h["score"])
    assert tuner.best_return_ == best["return_mean"] and tuner.initial_return_ == tuner.history_[0]["return_mean"]
    old, new = student._fitted_program(), tuner.final_student_._fitted_program()
    assert new.kind == "linear" and np.array_equal(new.coef != 0.0, old.coef != 0.0)
    assert not np.array_equal(new.coef, old.coef)
    again = CriticTuner(n_steps=3000, search="ars", eval_episodes=2, checkpoint_dir=tmp_path / "a").fit(
        student, teacher, teacher.env_fn, resume=True)
    assert again.resumed_from_ == 3600
    assert again.final_student_._fitted_program().to_dict() == new.to_dict()
    with pytest.raises(InterpRLError, match="'search' parameter of CriticTuner"):
        CriticTuner(n_steps=10, search="sgd").fit(student, teacher, teacher.env_fn)


def test_the_alive_bonus_offset_is_added_to_every_step_of_the_search(env_fn) -> None:  # noqa: ANN001
    plain = _ars().fit("linear", env_fn, iterations=1).history_[0]
    offset = _ars(alive_bonus_offset=-1.0).fit("linear", env_fn, iterations=1).history_[0]
    assert offset["env_steps"] == plain["env_steps"]  # the same first episodes
    assert offset["return_mean"] == pytest.approx(plain["return_mean"] - plain["env_steps"] / 8)


def test_a_distillation_fine_tuned_by_ars_and_a_resume_from_before_rl_search(tmp_path: Path, teachers) -> None:  # noqa: ANN001
    """``rl_search='ars'`` in a distillation job; a run whose ``config.json`` predates the setting resumes (a missing
    setting is its default)."""
    from distill import METHODS, run_job
    from interp_rl.errors import DistillInterrupted

    sac = teachers["sac_swimmer"]
    out = tmp_path / "t"
    cfg = {"max_terms": 4, "iterations": 1, "steps": 1000, "eval_episodes": 1, "fidelity_steps": 200,
           "select_episodes": 1, "noise_levels": "", "attribution_states": 0, "rl_steps": 0}

    def stop(row: dict) -> None:
        if row.get("round") == 0:
            raise KeyboardInterrupt

    with pytest.raises(DistillInterrupted):
        run_job(METHODS["linear"], sac, cfg, out, progress=stop)
    config = json.loads((out / "config.json").read_text())
    assert config["settings"].pop("rl_search") == "td3"
    (out / "config.json").write_text(json.dumps(config))
    with pytest.raises(InterpRLError, match=r"different settings \(rl_search\)"):
        run_job(METHODS["linear"], sac, {**cfg, "rl_search": "ars"}, out, resume=True)
    run_job(METHODS["linear"], sac, cfg, out, resume=True)
    metrics = run_job(METHODS["linear"], sac, {**cfg, "rl_steps": 3000, "rl_search": "ars"}, tmp_path / "ars")
    assert metrics["rl"]["critic"] == "none" and [h["step"] for h in metrics["rl"]["history"]] == [0, 4000]
    # the task's ARS settings (Swimmer: one direction, no normalisation, so no warm-up): 2 iterations of 2 episodes


def test_a_linear_cell_searched_by_ars_from_scratch_instead_of_distilled(tmp_path: Path, teachers) -> None:  # noqa: ANN001
    """``distill linear --scratch-steps N``: ARS from zeros on the teacher's task (its settings), the teacher only
    the yardstick; a dense linear policy, and the same one when the job is run again."""
    from distill import METHODS, TreePolicy, run_job
    from distill.from_scratch import ScratchTrainer
    from interp_rl.errors import InterpRLError
    from interp_rl.program import load_controller

    sac = teachers["sac_swimmer"]
    cfg = {"scratch_steps": 4000, "eval_episodes": 1, "fidelity_steps": 200, "attribution_states": 0,
           "rl_steps": 0, "noise_levels": ""}
    metrics = run_job(METHODS["linear"], sac, cfg, tmp_path / "a")
    assert metrics["scratch"]["algo"] == "ars" and metrics["scratch"]["steps"] == 4000
    assert [h["step"] for h in metrics["scratch"]["history"]] == [2000, 4000]  # Swimmer: 1 direction, 2 episodes
    program = load_controller(tmp_path / "a").program
    assert program.kind == "linear" and np.count_nonzero(program.coef) == program.coef.size  # dense
    again = run_job(METHODS["linear"], sac, cfg, tmp_path / "b")
    assert load_controller(tmp_path / "b").program.to_dict() == program.to_dict()
    assert again["scratch"]["history"] == [{**h, "seconds": again["scratch"]["history"][i]["seconds"]}
                                           for i, h in enumerate(metrics["scratch"]["history"])]
    with pytest.raises(InterpRLError, match="ARS from scratch searches a kind that starts from zeros"):
        ScratchTrainer(n_steps=10, algo="ars").fit(TreePolicy(), sac, checkpoint_dir=tmp_path / "c")


def test_each_task_gets_the_papers_ars_settings_and_others_the_default(teachers) -> None:  # noqa: ANN001
    from distill.ars import ars_settings, teacher_ars_settings
    from envs.training import default_hyperparams

    def of(task: str) -> dict:
        return ars_settings(default_hyperparams("ars", task))

    assert of("HalfCheetah-v5") == {"n_directions": 32, "top_directions": 4, "step_size": 0.02, "noise": 0.03,
                                    "alive_bonus_offset": 0, "normalize": True}
    assert of("Walker2d-v5")["alive_bonus_offset"] == -1
    assert of("Swimmer-v5")["normalize"] is False
    assert of("InvertedPendulum-v5") == {"n_directions": 8, "top_directions": 4, "step_size": 0.02, "noise": 0.025,
                                         "normalize": True}
    ARS(**of("Ant-v5"))._validate_params()  # every entry is a valid ARS
    assert teacher_ars_settings(teachers["sac_swimmer"]) == of("Swimmer-v5")  # through the teacher (distill)
    assert teacher_ars_settings(object()) == {}
