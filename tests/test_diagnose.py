"""Diagnosis: exact restores, points of no return checked by real takeovers, critical states, the piece graph
counted by hand, the nearest examples against brute force, and the one-line messages."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import teacher_zip
from typer.testing import CliRunner

from envs import env_factory, task_signals
from interp_rl.cli import app
from interp_rl.diagnose import critic_gaps, diagnose, failure_interval
from interp_rl.diagnosis_report import write_diagnosis
from interp_rl.errors import ControllerFormatError, InterpRLError
from interp_rl.evidence import DATA_FILE, DistillationData, load_data, nearest_examples, save_data
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.tree import TreeProgram
from interp_rl.piece_graph import piece_graph
from interp_rl.program import Controller
from interp_rl.rollouts import run_episodes

runner = CliRunner()


class _Drift:
    """A small fixed linear policy: it keeps Hopper up for a while and then falls."""

    def __init__(self, obs_dim: int, act_dim: int) -> None:
        self.W = np.random.default_rng(0).normal(size=(act_dim, obs_dim)) * 0.05

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.tanh(np.asarray(X) @ self.W.T)


@pytest.mark.parametrize("task", ["Hopper-v5", "Ant-v5", "HalfCheetah-v5", "CartPole-v1"])
def test_restoring_a_state_reproduces_the_rollout_bit_for_bit(task):
    env_fn = env_factory(task)
    env = env_fn(0)
    policy = _Drift(env.observation_space.shape[0], env.action_space.shape[0])
    env.close()
    ran = run_episodes(policy, env_fn, [4], n_envs=1, record=True, snapshots=True)
    ro = ran.rollout
    n = ran.lengths[0]
    assert len(ro.states) == n
    for t in sorted({0, 1, n // 2, n - 1}):
        again = run_episodes(policy, env_fn, [ro.states[t]], n_envs=1, record=True)
        assert np.array_equal(again.rollout.observations, ro.observations[t:n])
        assert np.array_equal(again.rollout.rewards, ro.rewards[t:n])  # Ant's reward reads derived body positions
        assert again.terminated[0] == ran.terminated[0]


def _zero_controller(teacher) -> Controller:
    f, a = task_signals(teacher.task, teacher.variant)
    prog = LinearProgram(intercept=np.zeros(teacher.act_dim), coef=np.zeros((teacher.act_dim, teacher.obs_dim)),
                         action_low=teacher.action_low, action_high=teacher.action_high)
    return Controller(prog, features=f, actions=a, task=teacher.task)


#: The tests of the Hopper diagnosis share a worker (``--dist loadgroup``), so it is run once.
ON_THE_HOPPER_DIAGNOSIS = pytest.mark.xdist_group("hopper-diagnosis")


@pytest.fixture(scope="module")
def hopper_diagnosis(teachers, single_torch_thread):
    teacher = teachers["ppo_hopper"]
    ctrl = _zero_controller(teacher)  # no torque: Hopper falls in every episode, the teacher would not
    return teacher, ctrl, diagnose(ctrl, teacher, episodes=3, seed=11, window=40, critical=3, attribution=True,
                                   frames=False)


@ON_THE_HOPPER_DIAGNOSIS
def test_the_point_of_no_return_is_where_a_takeover_stops_recovering(hopper_diagnosis):
    teacher, ctrl, d = hopper_diagnosis
    assert d.n_failed == 3 and d.rate == 1.0
    ran = run_episodes(ctrl, teacher.env_fn, [d.seed + fe.episode for fe in d.failed], n_envs=1, record=True,
                       snapshots=True)
    ro = ran.rollout
    for k, fe in enumerate(d.failed):
        rows = np.flatnonzero(ro.episodes == k)
        assert fe.no_return is not None and 1 <= fe.no_return <= len(rows)
        prefix = np.concatenate([[0.0], np.cumsum(ro.rewards[rows])])
        steps = [s for s in (fe.no_return - 1, fe.no_return, fe.no_return + 1) if s < len(rows)]
        back = run_episodes(teacher, teacher.env_fn, [ro.states[rows[s]] for s in steps], n_envs=1)
        ok = {s: prefix[s] + r >= d.threshold and not fell
              for s, r, fell in zip(steps, back.returns, back.terminated, strict=True)}  # the PPO teacher never falls
        assert ok[fe.no_return - 1]  # one step before: the teacher recovers
        for s in steps[1:]:
            assert not ok[s]  # at it and after: it does not
        recorded = {t.step: t for t in fe.takeovers}
        assert recorded[fe.no_return - 1].recovered if fe.no_return > 1 else True


@ON_THE_HOPPER_DIAGNOSIS
def test_critical_states_name_the_piece_and_compare_attributions(hopper_diagnosis):
    teacher, ctrl, d = hopper_diagnosis
    for fe in d.failed:
        assert 1 <= len(fe.critical) <= 3
        steps = sorted(c.step for c in fe.critical)
        assert all(fe.no_return - 40 <= s < fe.no_return for s in steps)
        assert all(b - a >= 3 for a, b in zip(steps, steps[1:], strict=False))
        assert [c.gap for c in fe.critical] == sorted((c.gap for c in fe.critical), reverse=True)
        for c in fe.critical:
            assert c.piece_label == "equations" and "thigh_joint_torque" in c.rule
            assert c.attribution["action"] in ctrl.action_names
            assert len(c.attribution["teacher"]) == 3
            assert all(v == 0.0 for _, v in c.attribution["controller"])  # a zero controller: nothing to attribute
    assert d.judge.startswith("look-ahead of 25 steps")  # PPO has a state value, no Q-function
    assert "No distillation data" in d.evidence_note


def test_an_action_judged_against_itself_costs_nothing(teachers, single_torch_thread):
    teacher = teachers["ppo_hopper"]
    ran = run_episodes(teacher, teacher.env_fn, [5], n_envs=1, record=True, snapshots=True)
    pick = [0, 10, 20]
    gaps, how = critic_gaps(teacher, teacher, teacher.env_fn, ran.rollout.observations[pick],
                            [ran.rollout.states[i] for i in pick], horizon=5)
    assert how.startswith("look-ahead") and np.array_equal(gaps, np.zeros(3))


@ON_THE_HOPPER_DIAGNOSIS
def test_the_page_and_json_are_written(hopper_diagnosis, tmp_path):
    _, _, d = hopper_diagnosis
    paths = write_diagnosis(d, tmp_path / "diag", command="interp-rl diagnose ...")
    md = paths["markdown"].read_text()
    assert "Failure rate: 3 of 3 = 100.0%" in md and "point of no return" in md
    assert "figures/returns.png" in md and (tmp_path / "diag" / "figures" / "pieces.dot").is_file()
    html = paths["html"].read_text()
    assert html.count("data:image/png;base64") >= 2
    data = json.loads(paths["json"].read_text())
    assert data["n_failed"] == 3 and data["failed"][0]["no_return"] == d.failed[0].no_return
    with pytest.raises(InterpRLError, match="is a file; name a folder"):
        (tmp_path / "file").write_text("x")
        write_diagnosis(d, tmp_path / "file")


def _tiny_tree() -> Controller:
    # x0 < 0: leaf 1; 0 <= x0 < 1: leaf 2; x0 >= 1: leaf 3
    prog = TreeProgram(feature=[0, -1, 0, -1, -1], threshold=[0.0, 0, 1.0, 0, 0], left=[1, -1, 3, -1, -1],
                       right=[2, -1, 4, -1, -1], intercept=np.zeros((5, 1)), coef=np.zeros((5, 1, 1)))
    return Controller(prog, features=["x"], actions=["u"])


def test_piece_graph_counts_equal_a_hand_count_on_a_tiny_tree():
    ctrl = _tiny_tree()
    ap = ctrl.program.affine_pieces()
    # episode 0: x = -1, 0.5, 0.5, 2, -1     leaves 1 2 2 3 1
    # episode 1: x = 0.5, 2, 2               leaves 2 3 3   (failed)
    x = np.array([-1, 0.5, 0.5, 2, -1, 0.5, 2, 2], dtype=float)[:, None]
    rewards = np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=float)
    episodes = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    pieces = ap.assign(x)
    phase = np.array([0, 0, 0, 0, 0, 1, 2, 2])  # episode 1: a run-up step, then lost
    g = piece_graph(pieces, episodes, rewards, failed=[False, True], phase=phase, marks=[6], labels=ap.labels)
    leaf = {ap.labels[p]: p for p in g.nodes}
    l1, l2, l3 = leaf["leaf 1"], leaf["leaf 2"], leaf["leaf 3"]
    assert {ap.labels[p]: v["steps"] for p, v in g.nodes.items()} == {"leaf 1": 2, "leaf 2": 3, "leaf 3": 3}
    assert g.nodes[l2]["mean_reward"] == pytest.approx((2 + 3 + 6) / 3)
    assert g.nodes[l3]["failed_episodes"] == 1 and g.nodes[l1]["failed_share"] == 0.0
    assert g.nodes[l3]["marked"] == 1 and g.nodes[l2]["marked"] == 0
    assert (g.nodes[l2]["leading"], g.nodes[l3]["lost"], g.nodes[l1]["lost"]) == (1, 2, 0)
    # transitions: ep0 1->2 (r 2), 2->3 (r 4), 3->1 (r 5); ep1 2->3 (r 7); none across the episode boundary
    assert {(ap.labels[a], ap.labels[b]): v["count"] for (a, b), v in g.edges.items()} == {
        ("leaf 1", "leaf 2"): 1, ("leaf 2", "leaf 3"): 2, ("leaf 3", "leaf 1"): 1}
    assert g.edges[(l2, l3)]["mean_reward"] == pytest.approx((4 + 7) / 2)
    assert g.edges[(l2, l3)]["failed_share"] == 1.0 and g.edges[(l3, l1)]["failed_share"] == 0.0
    assert g.edges[(l2, l3)]["episodes"] == 2
    assert g.edges[(l2, l3)]["leading"] == 0 and g.n_leading == 1
    dot = g.to_dot()
    assert "leaf 2" in dot and "->" in dot


def test_nearest_examples_are_the_true_nearest():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4)) * [1.0, 10.0, 0.1, 3.0]
    data = DistillationData(X, rng.normal(size=(300, 2)))
    Q = rng.normal(size=(7, 4)) * [1.0, 10.0, 0.1, 3.0]
    among = [rng.choice(300, size=int(rng.integers(2, 120)), replace=False) for _ in range(7)]
    near = nearest_examples(data, Q, k=4, among=among)
    sd = X.std(axis=0)
    for i in range(7):
        d = np.sqrt((((X[among[i]] - Q[i]) / sd) ** 2).sum(axis=1))
        order = np.argsort(d)[: min(4, len(d))]
        assert near.index[i, : len(order)].tolist() == among[i][order].tolist()
        assert np.allclose(near.distance[i, : len(order)], d[order])
    whole = nearest_examples(data, Q, k=3)
    d_all = np.sqrt((((X[None] - Q[:, None]) / sd) ** 2).sum(axis=2))
    assert whole.index.tolist() == np.argsort(d_all, axis=1)[:, :3].tolist()


def test_distillation_data_round_trip_and_one_line_errors(tmp_path):
    data = DistillationData(np.arange(6.0).reshape(3, 2), np.ones((3, 1)), np.array([1.0, 2.0, 3.0]))
    save_data(tmp_path, data)
    back = load_data(tmp_path / "controller.json")
    assert np.array_equal(back.observations, data.observations) and np.array_equal(back.weights, data.weights)
    with pytest.raises(InterpRLError, match=r"holds no distillation data \(distillation.npz\)") as info:
        load_data(tmp_path / "elsewhere")
    assert "\n" not in str(info.value)
    (tmp_path / DATA_FILE).write_bytes(b"not a zip")
    with pytest.raises(ControllerFormatError, match="is corrupt") as info:
        load_data(tmp_path)
    assert "\n" not in str(info.value)


def test_failure_interval_is_clopper_pearson():
    lo, hi = failure_interval(5, 100)
    assert lo == pytest.approx(0.01643, abs=1e-4) and hi == pytest.approx(0.11284, abs=1e-4)


def test_cli_diagnoses_a_distilled_tree_with_its_evidence(shared_teachers, tmp_path, single_torch_thread):
    hopper = teacher_zip(shared_teachers, "ppo", "Hopper")
    tree = tmp_path / "tree"
    res = runner.invoke(app, ["distill", "tree", "--teacher", str(hopper), "--out", str(tree), "--max-leaves", "4",
                              "--iterations", "1", "--steps", "1000", "--eval-episodes", "2", "--seed", "1",
                              "--noise-levels", "", "--rl-steps", "0"])
    assert res.exit_code == 0, res.stderr
    data = load_data(tree)
    ctrl = Controller.load(tree)
    assert data.observations.shape[1] == 11 and len(data) == 2000  # DAgger's two rounds of 1,000 steps
    res = runner.invoke(app, ["diagnose", str(tree), "--teacher", str(hopper), "--out", str(tmp_path / "d"),
                              "--episodes", "3", "--window", "20", "--no-frames", "--no-attribution"])
    assert res.exit_code == 0, res.stderr
    assert "Note:" not in res.stderr
    d = json.loads((tmp_path / "d" / "diagnosis.json").read_text())
    assert "episodes failed" in res.stdout and (tmp_path / "d" / "report.html").is_file()
    assign = ctrl.program.affine_pieces().assign
    for fe in d["failed"]:
        for c in fe["critical"]:
            ev = c["evidence"]
            assert ev is not None and ev["rows"], "a critical state without evidence"
            # the evidence rows are states the acting piece was fitted on, nearest first
            assert set(assign(data.observations[ev["rows"]]).tolist()) == {c["piece"]}
            assert ev["distance_sd"] == sorted(ev["distance_sd"])
    # --repair: refitted as the method made it, written beside the page, measured before and after
    res = runner.invoke(app, ["diagnose", str(tree), "--teacher", str(hopper), "--out", str(tmp_path / "r"),
                              "--episodes", "2", "--window", "20", "--no-frames", "--no-attribution", "--repair",
                              "--repair-rounds", "1", "--repair-episodes", "2"])
    assert res.exit_code == 0, res.stderr
    repaired = tmp_path / "r" / "repaired"
    metrics = json.loads((repaired / "metrics.json").read_text())
    ba = metrics["before_after"]
    assert ba["episodes"] == 2 and ba["first_seed"] == 10_000_000 + 1_000_000
    assert set(ba) >= {"before", "after"} and len(ba["before"]["returns"]) == 2
    assert [r["round"] for r in metrics["repair"]["history"]] == [0, 1]
    again = Controller.load(repaired)
    assert again.size()["leaves"] <= 4  # the same size limit
    assert load_data(repaired).observations.shape[1] == 11
    assert "## Repair" in (tmp_path / "r" / "report.md").read_text()
    assert "After repair, 2 other fresh episodes" in res.stdout


def test_cli_without_distillation_data_says_so_in_one_line(shared_teachers, tmp_path, single_torch_thread):
    hopper = teacher_zip(shared_teachers, "ppo", "Hopper")
    from envs.loading import load_teacher

    ctrl = _zero_controller(load_teacher(hopper))
    folder = tmp_path / "zero"
    folder.mkdir()
    ctrl.save(folder / "controller.json")
    res = runner.invoke(app, ["diagnose", str(folder), "--teacher", str(hopper), "--out", str(tmp_path / "d"),
                              "--episodes", "1", "--window", "5", "--critical", "1", "--no-frames",
                              "--no-attribution"])
    assert res.exit_code == 0, res.stderr
    notes = [line for line in res.stderr.splitlines() if line.startswith("Note:")]
    assert len(notes) == 1 and "holds no distillation data" in notes[0]
    assert "Traceback" not in res.stderr + res.stdout
    res = runner.invoke(app, ["diagnose", str(folder), "--teacher", str(hopper), "--out", str(tmp_path / "d"),
                              "--episodes", "0"])
    assert res.exit_code == 1 and res.stderr.strip() == (
        "Error: The '--episodes' option of interp-rl diagnose must be an int in [1, inf). Got 0 instead.")
    (tmp_path / "f").write_text("x")
    res = runner.invoke(app, ["diagnose", str(folder), "--teacher", str(hopper), "--out", str(tmp_path / "f")])
    assert res.exit_code == 1 and res.stderr.strip() == (
        f"Error: --out {str(tmp_path / 'f')!r} is a file; name a folder (made if missing).")


def test_repair_labels_the_run_up_with_the_teacher_and_keeps_the_better_student(teachers, single_torch_thread):
    from distill.failure_repair import FailureRepair
    from distill.linear import LinearPolicy

    teacher = teachers["ppo_hopper"]
    start = _zero_controller(teacher)
    X = np.zeros((10, 11))
    y = np.zeros((10, 3))
    fits: list[int] = []

    def refit(X, y, w):
        fits.append(len(X))
        return LinearPolicy(action_low=teacher.action_low, action_high=teacher.action_high).fit(X, y)

    rows: list[dict] = []
    rep = FailureRepair(1, episodes=2, window=20, stride=5, horizon=10, select_episodes=2).fit(
        start, teacher, None, X, y, None, refit=refit, progress=rows.append)
    # its progress rows are numbered repair_round: a 'round' is a DAgger round to the job (which counts their time)
    assert [r["repair_round"] for r in rows] == [0, 1] and not any("round" in r for r in rows)
    row = rep.history_[1]
    assert row["failed"] == 2 and row["starts"] == 8  # every episode falls; 4 run-up states each
    assert 8 <= row["rows"] <= 80 and fits == [10 + row["rows"]]
    new_x, new_y = rep.X_[10:], rep.y_[10:]
    if rep.best_round_ == 1:
        assert np.array_equal(new_y, teacher.predict(new_x))  # the teacher labels every revisited state
        assert rep.student_ is not start
    else:
        assert rep.student_ is start and len(rep.X_) == 10
    scores = [r["score"] for r in rep.history_]
    assert rep.history_[rep.best_round_]["score"] == max(s for s in scores if s is not None)


def test_distill_with_repair_keeps_the_repair_rows_with_the_controller(shared_teachers, tmp_path, single_torch_thread):
    hopper = teacher_zip(shared_teachers, "ppo", "Hopper")
    out = tmp_path / "tree"
    res = runner.invoke(app, ["distill", "tree", "--teacher", str(hopper), "--out", str(out), "--max-leaves", "4",
                              "--iterations", "1", "--steps", "1000", "--eval-episodes", "2", "--seed", "2",
                              "--noise-levels", "", "--rl-steps", "0", "--repair-rounds", "1", "--repair-episodes", "3", "--repair-window", "20"])
    assert res.exit_code == 0, res.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    history = metrics["repair"]["history"]
    assert [r["round"] for r in history] == [0, 1]
    kept = metrics["repair"]["best_round"]
    added = history[1]["rows"] if kept == 1 else 0
    assert len(load_data(out)) == 2000 + added


def test_frames_are_drawn_or_the_reason_is_one_line():
    import os

    from interp_rl._frames import render_states

    env_fn = env_factory("Hopper-v5")
    ran = run_episodes(_Drift(11, 3), env_fn, [0], n_envs=1, record=True, snapshots=True)
    frames, why = render_states(env_fn, ran.rollout.states[:3], width=64, height=48)
    if why:
        assert not frames and "\n" not in why and why.startswith("no offscreen rendering backend works here")
        assert not os.environ.get("CI"), f"CI installs EGL for the frames: {why}"
    else:
        assert len(frames) == 3 and frames[0].shape == (48, 64, 3) and frames[0].std() > 0
    frames, why = render_states(env_factory("CartPole-v1"), [], width=64, height=48)
    assert (frames, why) == ([], "")


@pytest.mark.parametrize(("key", "width"), [("sac_hopper", 256), ("ppo_hopper", 256), ("trpo_ant", 64)])
def test_a_teacher_shows_its_last_hidden_layer_for_the_teacher_graph(teachers, key, width):
    teacher = teachers[key]
    env = teacher.env_fn(0)
    obs = np.stack([env.reset(seed=s)[0] for s in range(3)])
    h = teacher.latent(obs)
    assert h.shape == (3, width) and np.isfinite(h).all() and np.array_equal(h, teacher.latent(obs))
    assert np.all(h >= 0) or key == "trpo_ant"  # ReLU layers (the TRPO zoo agent uses tanh)


def test_restarts_keep_the_best_fit_on_held_out_episodes(teachers, single_torch_thread):
    from distill.dagger import DAgger
    from distill.job import Distillation
    from distill.moe import MixturePolicy

    teacher = teachers["ppo_hopper"]
    est = Distillation(DAgger(MixturePolicy(n_experts=2, n_steps=200), n_iter=0, steps=1000, eval_episodes=0),
                       restarts=3, restart_episodes=2).fit(teacher)
    rows = est.restarts_["rows"]
    assert [r["random_state"] for r in rows] == [0, 1000, 2000]
    kept = est.restarts_["kept"]
    assert kept == int(np.argmax([r["score"] for r in rows]))
    assert est.student_.get_params()["random_state"] == rows[kept]["random_state"]
    with pytest.raises(InterpRLError, match="'restarts' parameter of Distillation"):
        Distillation(DAgger(_linear_student(), n_iter=0, steps=200, eval_episodes=0), restarts=2).fit(teacher)


def test_noise_levels_keep_the_best_level_and_its_data(teachers, single_torch_thread, tmp_path):
    from distill.dagger import DAgger
    from distill.job import Distillation
    from distill.moe import MixturePolicy

    teacher = teachers["ppo_hopper"]
    est = Distillation(DAgger(MixturePolicy(n_experts=2, n_steps=200), n_iter=1, steps=600, eval_episodes=0),
                       restarts=2, restart_episodes=2, noise_levels="0, 0.5").fit(teacher, checkpoint_dir=tmp_path)
    levels = est.noise_levels_["rows"]
    assert [r["noise"] for r in levels] == [0.0, 0.5]
    kept = est.noise_levels_["kept"]
    assert kept == int(np.argmax([r["score"] for r in levels]))
    assert est.dagger_.action_noise == levels[kept]["noise"]
    # every restart of every level is listed; the kept one is the level's best and the student's seed
    rows = est.restarts_["rows"]
    assert [(r["noise"], r["random_state"]) for r in rows] == [(0.0, 0), (0.0, 1000), (0.5, 0), (0.5, 1000)]
    assert rows[est.restarts_["kept"]]["score"] == levels[kept]["score"] == max(r["score"] for r in rows)
    # the kept level's data is the data saved with the controller; each level checkpoints in its own folder
    assert est.data_[0].shape == est.dagger_.X_[:est.dagger_.n_samples_used_].shape
    assert np.array_equal(est.data_[0], est.dagger_.X_[:est.dagger_.n_samples_used_])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noise-0", "noise-0.5"]
    for bad in ("0,x", "0,-1", "0.3,0.3"):
        with pytest.raises(InterpRLError, match=f"'noise_levels' parameter of Distillation.*{bad!r}"):
            Distillation(noise_levels=bad).fit(teacher)


def _linear_student():
    from distill.linear import LinearPolicy

    return LinearPolicy()
