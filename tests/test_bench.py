"""The benchmark harness end to end: suites, records, resuming after a kill, Ray, reports in Chromium."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import build_once, private_copy
from typer.testing import CliRunner

from benchmarks.harness import RECORD_SCHEMA, load_records, run_suite
from benchmarks.plots import pareto_front
from benchmarks.records import Group, aggregate, left_out_of_aggregate, summarise
from benchmarks.report import write_report
from benchmarks.stats import interval_estimate, iqm, stratified_bootstrap_ci
from benchmarks.suite import Cell, SuiteError, builtin_suites, load_suite
from interp_rl.cli import app
from interp_rl.compare import half_of_teacher, percent_of_teacher

CLI = [sys.executable, "-m", "interp_rl.cli"]
runner = CliRunner()

#: Fields that hold wall-clock times (they differ between runs; nothing else may).
TIMING = {"latency", "distill_seconds", "cell_seconds", "seconds", "machine", "versions", "teacher_seconds",
          "controller_seconds"}



def _has_compiler() -> bool:
    from interp_rl.errors import ExportError
    from interp_rl.export import find_compiler

    try:
        find_compiler()
    except ExportError:
        return False
    return True


HAS_CC = _has_compiler()

@pytest.fixture(scope="session")
def tiny_teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SAC teacher for InvertedPendulum-v5 trained by the project for 1,200 steps (seconds, not minutes), trained
    once for every worker (read-only)."""
    from envs.training import TrainConfig, train_teacher

    def train(out: Path) -> None:
        train_teacher(TrainConfig("sac", "InvertedPendulum-v5", 1200, str(out), seed=0, eval_episodes=0, keep="last"),
                      progress_bar=False)

    return build_once(tmp_path_factory, "tiny-teacher", train)


def write_suite(folder: Path, teacher: Path, *, seeds: str = "[0, 1]", extra: str = "") -> Path:
    path = folder / "tiny.toml"
    path.write_text(f"""
name = "tiny"
description = "A tiny suite for the tests."
seeds = {seeds}
episodes = 10
fidelity_steps = 300
latency_batch = 32
rate_episodes = 4

[targets]
percent = 90
worst_percent = 75
below_half = 1
parameters = 20
minutes = 10

[properties]
"InvertedPendulum-v5" = "{(Path(__file__).resolve().parents[1] / 'benchmarks/properties/InvertedPendulum-v5.toml').as_posix()}"

[[teachers]]
name = "IP-SAC"
path = "{teacher.as_posix()}"

[methods.tree]
sizes = [2, 4]
settings = {{ iterations = 1, steps = 500, select_episodes = 1, noise_levels = "", rl_steps = 0 }}

[methods.tree-constant]
method = "tree"
sizes = [2]
settings = {{ leaf_model = "constant", iterations = 1, steps = 500, noise_levels = "", rl_steps = 0 }}
{extra}""")
    return path


RL_FROM_TREE = ('[methods.tree-rl]\nmethod = "tree"\nsizes = [2]\nstart = "tree"\n'
                'settings = { iterations = 1, steps = 500, select_episodes = 1, rl_steps = 300, rl_warmup = 100 }\n')


def strip_timing(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: strip_timing(v) for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [strip_timing(v) for v in obj]
    return obj


def records_by_id(results: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in load_records(results)}


#: Cells run in the test's own process where the test is not about the process pool (the bench run, the killed
#: runs and the fine-tuning's ordering are): each pool worker is a new interpreter importing the toolkit again.
INLINE = ("--executor", "inline")


#: The tests of the tiny bench run and its report share a worker (``--dist loadgroup``), so the report is written
#: once; the run itself is shared with the Ray test too (:func:`build_once`).
ON_THE_BENCH_RUN = pytest.mark.xdist_group("bench-tiny")


@pytest.fixture(scope="module")
def bench_run(tiny_teacher: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``interp-rl bench`` on the tiny suite (6 cells), through the command line: run once for every worker, each
    worker getting its own copy (the report is written into it)."""
    def bench(folder: Path) -> None:
        folder.mkdir()
        suite = write_suite(folder, tiny_teacher)
        res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(folder / "results"), "--workers", "2"])
        assert res.exit_code == 0, res.output
        assert "6 cells: 6 run now, 0 already done, 0 failed" in " ".join(res.output.split())

    folder = private_copy(tmp_path_factory, build_once(tmp_path_factory, "bench-tiny", bench))
    return folder / "tiny.toml", folder / "results"


# ----------------------------------------------------------------------------- statistics
def test_percent_of_teacher_is_higher_for_better_returns_whatever_the_sign() -> None:
    """Reacher's and Pendulum's returns are costs (negative): a worse controller must not read above 100%."""
    assert percent_of_teacher(50.0, 200.0) == pytest.approx(25.0)  # the plain ratio for a positive teacher
    assert percent_of_teacher(-4.0, -3.0) == pytest.approx(100 * (1 - 1 / 3))  # worse than the teacher: below 100
    assert percent_of_teacher(-1.5, -3.0) == pytest.approx(150.0)  # half the cost: better
    np.testing.assert_allclose(percent_of_teacher(np.array([-3.0, -6.0]), -3.0), [100.0, 0.0])
    assert half_of_teacher(200.0) == 100.0 and half_of_teacher(-3.0) == -4.5
    assert percent_of_teacher(half_of_teacher(-3.0), -3.0) == pytest.approx(50.0)
    assert np.isnan(percent_of_teacher(1.0, 0.0))


def test_iqm_trims_a_quarter_from_each_end() -> None:
    x = np.array([0.0, 1, 2, 3, 4, 5, 6, 100])
    assert iqm(x) == pytest.approx(np.mean([2, 3, 4, 5]))
    assert iqm(np.array([[1.0, 2.0], [3.0, 4.0]])) == pytest.approx(2.5)


def test_stratified_bootstrap_resamples_within_each_task() -> None:
    # Task 0 never varies, task 1 always does: resampling within tasks keeps every
    # resample's task-0 column at 50, so the interval of the task-0 mean has zero width.
    scores = np.array([[50.0, 0.0], [50.0, 100.0], [50.0, 30.0], [50.0, 70.0]])
    lo, hi = stratified_bootstrap_ci(scores, lambda m: float(m[:, 0].mean()), reps=500)
    assert lo == hi == 50.0
    lo, hi = stratified_bootstrap_ci(scores, lambda m: float(m[:, 1].mean()), reps=2000, seed=1)
    assert 0.0 <= lo < 50.0 < hi <= 100.0
    # Reproducible for a seed.
    assert stratified_bootstrap_ci(scores, reps=300, seed=3) == stratified_bootstrap_ci(scores, reps=300, seed=3)


def test_stratified_bootstrap_covers_the_true_iqm_at_about_its_nominal_level() -> None:
    """On draws from a known distribution, the 95% interval holds the population IQM in about 95% of
    trials (percentile intervals on few runs undercover a little, as rliable notes; far off is a bug)."""
    rng = np.random.default_rng(0)
    # Task t scores ~ Normal(mu_t, 10): with equal runs per task the population IQM is the IQM of
    # the pooled mixture, estimated once from a huge sample.
    mus = np.array([20.0, 50.0, 80.0])
    truth = iqm(rng.normal(mus, 10.0, size=(400_000, 3)))
    trials, runs = 100, 10
    hits = sum(
        lo <= truth <= hi
        for lo, hi in (stratified_bootstrap_ci(rng.normal(mus, 10.0, size=(runs, 3)), reps=300, seed=i)
                       for i in range(trials))
    )
    assert 0.85 <= hits / trials <= 0.99, f"coverage {hits / trials:.2f} for nominal 0.95"
    # A wider nominal level covers more, a narrower one less.
    narrow = sum(
        lo <= truth <= hi
        for lo, hi in (stratified_bootstrap_ci(rng.normal(mus, 10.0, size=(runs, 3)), reps=300, seed=i,
                                               confidence=0.5) for i in range(trials))
    )
    assert 0.35 <= narrow / trials <= 0.65, f"coverage {narrow / trials:.2f} for nominal 0.5"


def test_interval_estimate_with_one_run_has_no_width() -> None:
    est = interval_estimate(np.array([[42.0]]))
    assert est["iqm"] == est["ci_low"] == est["ci_high"] == 42.0 and est["runs"] == 1


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"^confidence must be in \(0, 1\)\. Got 1\.5 instead\.$"):
        stratified_bootstrap_ci(np.ones((3, 1)), confidence=1.5)
    with pytest.raises(ValueError, match="non-empty"):
        stratified_bootstrap_ci(np.ones((0, 2)))


def test_pareto_front_keeps_only_undominated_points() -> None:
    assert pareto_front([(100, 80.0), (10, 90.0), (50, 95.0), (50, 70.0)]) == [(10, 90.0), (50, 95.0)]


def test_aggregate_uses_the_seeds_every_task_ran_and_names_what_it_leaves_out() -> None:
    def group(task: str, method: str, percents: dict[int, float]) -> Group:
        return Group(f"{task}-v5", task, method, 8, [{"percent_of_teacher": p, "cell": {"seed": s}, "size": {}}
                                                     for s, p in percents.items()])

    summary = {"A": [group("A", "moe", {0: 90.0, 1: 10.0}), group("A", "tree", {0: 50.0}),
                     group("A", "sac", {0: 70.0})],
               "B": [group("B", "moe", {0: 80.0}), group("B", "tree", {1: 60.0})]}
    rows = aggregate(summary, reps=50)
    assert [(r["method"], r["seeds"], r["mean"]) for r in rows] == [("moe", [0], 85.0)]
    assert left_out_of_aggregate(summary) == ["sac 8: ran on 1 of 2 tasks (not on B)",
                                              "tree 8: no seed that every task ran"]


def test_repair_pairs_put_each_method_next_to_its_repaired_twin() -> None:
    from benchmarks.analyses import repair_pairs

    def group(method: str, percents: list[float], worst: float, fails: list[bool]) -> Group:
        recs = [{"percent_of_teacher": p, "cell": {"seed": s}, "size": {}, "teacher": {"return_mean": 100.0},
                 "student": {"returns": [worst, p]},
                 "failures": {"threshold": 50.0, "returns": [10.0 if f else 90.0 for f in fails]}}
                for s, p in enumerate(percents)]
        return Group("T-v5", "T", method, 8, recs)

    repaired = group("moe-repair-rl", [95.0], 80.0, [False])
    repaired.records[0]["details"] = {"repair": {"best_round": 2, "history": [
        {"round": 0}, {"round": 1, "failed": 3, "episodes": 50}, {"round": 2, "failed": 1, "episodes": 50}]}}
    summary = {"T": [group("moe-rl", [80.0, 90.0], 20.0, [True, False]), repaired,
                     group("tree", [50.0], 1.0, [True])]}
    # Only seed 0 ran both ways: seed 1's 90% does not enter the "before".
    assert repair_pairs(summary) == [["T", "moe-rl → moe-repair-rl", "0", "80.0 → 95.0", "20.0 → 80.0",
                                      "1 of 2 → 0 of 1", "seed 0: 3/50, 1/50; kept round 2"]]


# ----------------------------------------------------------------------------- suites
def test_shipped_suites_load_and_expand_to_cells() -> None:
    assert {"quick", "mujoco", "demo", "smose", "sindy", "recipe"} <= set(builtin_suites())
    help_text = " ".join(runner.invoke(app, ["bench", "--help"], terminal_width=200).output.split())
    assert all(name in help_text for name in builtin_suites())  # --help names every shipped suite
    smose = load_suite("smose")
    assert len({t.name for t in smose.teachers}) == 10 and smose.episodes == 20
    sindy = load_suite("sindy")  # every shared teacher, trees and mixtures from smose's records beside it
    assert len(sindy.teachers) == 10 and sindy.compare == ("smose",) and sindy.targets["nonzero_terms"] == 60
    assert sindy.episodes == smose.episodes and sindy.seeds == smose.seeds
    mujoco = load_suite("mujoco")
    assert {t.name for t in mujoco.teachers} == {"HalfCheetah-SAC", "Hopper-PPO", "Walker2d-SAC", "Swimmer-SAC",
                                                  "Ant-TRPO"}
    assert len(mujoco.cells()) == 5 * (3 + 2 + 2) * 3  # teachers x sizes (linear-leaf and constant trees, linear) x seeds
    demo = load_suite("demo")
    assert demo.teachers[0].train is not None and len(demo.cells()) == 8
    recipe = load_suite("recipe")  # the defaults, nothing set, on every shared teacher and four held-out agents
    assert len(recipe.teachers) == 14 and {"Hopper-TD3", "Walker2d-TD3"} <= {t.name for t in recipe.teachers}
    assert {m.label: m.settings for m in recipe.methods} == {"moe": {}, "moe-long": {"budget": "long"}, "tree": {}}
    assert recipe.rate_episodes == 100
    assert {t.name for t in recipe.teachers if t.held_out} == {"Hopper-TD3", "Walker2d-TD3", "Walker2d-TQC",
                                                                "HalfCheetah-TQC"}
    quick = load_suite("quick")
    assert [c.id for c in quick.cells(seeds=[1])] == ["Swimmer-SAC__tree-4__seed1", "Swimmer-SAC__tree-16__seed1"]


@pytest.mark.parametrize(("extra", "message"), [
    (RL_FROM_TREE.replace('start = "tree"', 'start = "forest"'),
     "[methods.tree-rl] start = 'forest' must name another method of the suite"),
    (RL_FROM_TREE.replace("iterations = 1,", "iterations = 2,"),
     "[methods.tree-rl] start = 'tree': the distillation settings differ (iterations); only what acts after"),
    (RL_FROM_TREE.replace("sizes = [2]", "sizes = [3]"), "start = 'tree': that method has no size(s) 3."),
    (RL_FROM_TREE.replace('method = "tree"', 'method = "linear"').replace("sizes = [2]", "sizes = [4]"),
     "start = 'tree': that method is 'tree', this one 'linear'; they must be the same distiller."),
])
def test_bad_start_methods_are_one_line_errors(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(SuiteError, match=re.escape(message)):
        load_suite(write_suite(tmp_path, tmp_path / "t.zip", extra=extra))


@pytest.mark.parametrize(("text", "message"), [
    ('seeds = [0]\n[[teachers]]\nname = "a"\npath = "x.zip"\n[methods.tree]\nsizes = [0]',
     "The 'max_leaves' setting of [methods.tree] in suite "),
    ('seeds = [0]\n[[teachers]]\nname = "a"\npath = "x.zip"\n[methods.forest]\nsizes = [4]',
     "names unknown method 'forest'; available: linear, moe, prelu, silver, sindy, tree."),
    ('seeds = [-1]\n[[teachers]]\nname = "a"\npath = "x.zip"\n[methods.tree]\nsizes = [4]',
     "'seeds' must be a non-empty list of integers >= 0. Got [-1] instead."),
    ('seeds = [0]\n[[teachers]]\nname = "a"\n[methods.tree]\nsizes = [4]',
     "teacher 'a' needs exactly one of 'path' (a saved agent) or 'train'"),
    ('seeds = [0]\nepisode = 3\n[[teachers]]\nname = "a"\npath = "x.zip"\n[methods.tree]\nsizes = [4]',
     "unknown key(s) episode;"),
    ('seeds = [0]\n[[teachers]]\nname = "a"\npath = "x.zip"\n[methods.tree]\nsizes = [4]\n'
     'settings = { max_leafs = 3 }', "Unknown setting(s) of [methods.tree] in suite "),
    ('seeds = [0\n', "is not valid:"),
    ('seeds = [0]\n[[teachers]]\nname = "a"\npath = "x.zip"\nheld_out = "yes"\n[methods.tree]\nsizes = [4]',
     "teacher 'a': 'held_out' must be true or false. Got 'yes' instead."),
    ('seeds = [0]\n[targets]\npercent = -5\n[[teachers]]\nname = "a"\npath = "x.zip"\n[methods.tree]\nsizes = [4]',
     "[targets] must map some of percent, worst_percent, below_half, parameters, nonzero_terms, idle_experts, minutes "
     "to numbers "
     ">= 0. Got {'percent': -5} instead."),
])
def test_bad_suites_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(Exception, match=re.escape(message)):
        load_suite(path)
    res = runner.invoke(app, ["bench", "--suite", str(path), "--out", str(tmp_path / "r")])
    assert res.exit_code == 1 and res.output.startswith("Error: ") and message in " ".join(res.output.split())


def test_unknown_suite_and_method_are_named(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"^Unknown suite 'nope': not a file, and not one of the shipped suites "
                                         r"\(demo, frontier, mujoco, quick, recipe, sensors, silver, sindy, sindy-default, smose, verify\)\.$"):
        load_suite("nope")
    with pytest.raises(SuiteError, match=r"^Unknown method 'forest' for suite 'quick'; it has: tree\.$"):
        load_suite("quick").cells(methods=["forest"])
    with pytest.raises(SuiteError, match=r"^Unknown teacher 'Cheetah' for suite 'quick'; it has: Swimmer-SAC\.$"):
        load_suite("quick").cells(teachers=["Cheetah"])


def test_a_run_can_take_only_some_teachers(tmp_path: Path) -> None:
    from benchmarks.harness import prepare_teachers

    smose = load_suite("smose")
    assert smose.cells(methods=["moe", "tree"], seeds=[1], teachers=["Swimmer-SAC", "Ant-TRPO"]) == [
        Cell("Swimmer-SAC", "moe", 8, 1), Cell("Swimmer-SAC", "tree", 8, 1),
        Cell("Ant-TRPO", "moe", 8, 1), Cell("Ant-TRPO", "tree", 8, 1)]  # in the suite's order
    # only the chosen teachers are checked (and trained): here the Reacher teacher is not trained
    with pytest.raises(SuiteError, match="^Teacher 'Swimmer-SAC' of suite 'smose'"):
        prepare_teachers(smose, tmp_path / "r", tmp_path, log=print, only=["Swimmer-SAC"])
    assert not (tmp_path / "r").exists()


def test_missing_teacher_is_named(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, tmp_path / "no-such-teacher")
    with pytest.raises(SuiteError, match="Teacher 'IP-SAC' of suite 'tiny': .*no-such-teacher' does not exist"):
        run_suite(load_suite(suite), tmp_path / "r", progress=False)


# ----------------------------------------------------------------------------- running
@ON_THE_BENCH_RUN
def test_bench_writes_one_complete_record_per_cell(bench_run: tuple[Path, Path]) -> None:
    _, results = bench_run
    recs = records_by_id(results)
    assert sorted(recs) == sorted(c.id for c in load_suite(bench_run[0]).cells())
    for rec in recs.values():
        assert rec["schema"] == RECORD_SCHEMA
        assert len(rec["teacher"]["returns"]) == len(rec["student"]["returns"]) == rec["episodes"] == 10
        assert rec["teacher"]["return_mean"] == pytest.approx(np.mean(rec["teacher"]["returns"]))
        assert rec["percent_of_teacher"] == pytest.approx(
            100 * rec["student"]["return_mean"] / rec["teacher"]["return_mean"])
        for states in ("teacher_states", "student_states"):
            assert set(rec["fidelity"][states]) == {"r2", "mse"} and rec["fidelity"][states]["mse"] >= 0
        size = rec["size"]
        assert 1 <= size["leaves"] <= rec["cell"]["size"] and size["parameters"] > 0
        assert set(size["export_bytes"]) == {"json", "python", "c"} and min(size["export_bytes"].values()) > 0
        lat = rec["latency"]
        assert lat["teacher_single_s"] > 0 and lat["student_single_s"] > 0 and lat["student_batch_s_per_obs"] > 0
        assert lat["teacher_forward_s"] > 0
        agree = rec["attribution_agreement"]  # teacher against controller Shapley importance, per action
        assert agree["states"] == 200 and set(agree["top_k_overlap"]) == set(agree["actions"])
        assert all(0 <= v <= 1 for v in agree["top_k_overlap"].values())
        assert all(r is None or -1 <= r <= 1 for r in agree["spearman"].values())
        assert len(agree["teacher_importance"][agree["actions"][0]]) == len(agree["features"])
        fail = rec["failures"]  # how often it fails, on episodes apart from the evaluation's
        assert fail["episodes"] == len(fail["returns"]) == 4 and fail["first_seed"] == rec["cell"]["seed"] + 700_000
        assert fail["threshold"] == pytest.approx(0.5 * rec["teacher"]["return_mean"])
        assert fail["below_half"] == sum(r < fail["threshold"] for r in fail["returns"])
        assert fail["rate"] == fail["below_half"] / 4
        usage = rec["usage"]  # which leaf acts on the controller's own states: every state of the rate episodes
        assert set(usage["shares"]) == {f"leaf {i + 1}" for i in range(size["leaves"])}
        assert sum(usage["shares"].values()) == pytest.approx(1.0) and usage["episodes"] == 4
        assert usage["idle"] == sum(v < 0.02 for v in usage["shares"].values())
        assert usage["without_idle"] is None  # a tree: leaves have no next choice
        if HAS_CC:  # the compiled C controller was timed (CI installs gcc): a number, never None
            assert isinstance(lat["student_c_native_s"], float) and 0 < lat["student_c_native_s"] < 1e-3
            assert lat["speedup_c_native"] == pytest.approx(lat["teacher_single_s"] / lat["student_c_native_s"])
        else:
            assert lat["student_c_native_s"] is None and lat["speedup_c_native"] is None
        assert rec["distill_seconds"] > 0 and rec["versions"]["interp-rl"] and rec["config"]["max_leaves"]
        assert (results / rec["controller"] / "controller.json").is_file()
    constant = recs["IP-SAC__tree-constant-2__seed0"]
    assert constant["config"]["leaf_model"] == "constant" and constant["size"]["nonzero_terms"] == 0
    assert "sweep" in constant["details"] and constant["details"]["sweep"] is None  # a sweep's table is kept there
    from envs.loading import load_teacher
    from interp_rl.program import load_controller
    from interp_rl.rollouts import evaluate

    rate = evaluate(load_controller(results / constant["controller"]),
                    load_teacher(json.loads((results / "suite.json").read_text())["teachers"][0]["path"]).env_fn,
                    4, seed=700_000)
    assert rate.returns == constant["failures"]["returns"] and constant["usage"]["states"] == sum(rate.lengths)
    # Teacher and students play the same episodes: every cell of a seed sees the same teacher returns.
    seed0 = [r["teacher"]["returns"] for r in recs.values() if r["cell"]["seed"] == 0]
    assert all(t == seed0[0] for t in seed0)
    assert not list(results.rglob("*.tmp*"))


@ON_THE_BENCH_RUN
def test_the_cells_of_a_teacher_and_seed_share_its_runs(bench_run: tuple[Path, Path]) -> None:
    """The teacher's evaluation episodes and visited states are run once per seed, not once per cell: one file
    each (NumPy arrays, no pickles) holding the returns every cell of that seed recorded, the same numbers a fresh
    evaluation gives."""
    from benchmarks.measurements import TEACHER_RUNS
    from envs.loading import load_teacher
    from interp_rl.rollouts import evaluate

    _, results = bench_run
    runs = sorted((results / TEACHER_RUNS).glob("*.npz"))
    assert [p.name.split("__")[:2] for p in runs] == [["IP-SAC", "seed0"], ["IP-SAC", "seed1"]]
    recs = records_by_id(results).values()
    teacher = load_teacher(json.loads((results / "suite.json").read_text())["teachers"][0]["path"])
    for path, seed in zip(runs, (0, 1), strict=True):
        with np.load(path, allow_pickle=False) as z:
            assert len(z["observations"]) == 300 and z["actions"].shape == (300, 1)  # fidelity_steps
            returns = z["returns"].tolist()
        assert {tuple(r["teacher"]["returns"]) for r in recs if r["cell"]["seed"] == seed} == {tuple(returns)}
        assert evaluate(teacher, teacher.env_fn, 10, seed).returns == returns


def test_fewer_experts_are_run_without_the_idle_ones(tiny_teacher: Path) -> None:
    """A mixture whose second expert never acts: without it, the same episodes to the last digit; a routing tree
    has no next choice, so it is not run."""
    from benchmarks.measurements import piece_usage, without_idle
    from envs.loading import load_teacher
    from interp_rl.kinds.mixture import MixtureProgram, router_tree
    from interp_rl.program import Controller, Signal
    from interp_rl.rollouts import collect, evaluate

    teacher = load_teacher(tiny_teacher)
    prog = MixtureProgram(expert_intercept=[[0.0], [0.5]], expert_coef=[[[1.0, 2.0, 0.5, 0.5]], np.zeros((1, 4))],
                          router_intercept=[0.0, -1e6], router_coef=np.zeros((2, 4)),
                          action_low=[-3.0], action_high=[3.0])
    ctrl = Controller(prog, [Signal(f"x{i}") for i in range(4)], [Signal("force")], task="InvertedPendulum-v5")
    states = collect(ctrl, teacher.env_fn, 200, seed=0).observations
    usage = piece_usage(ctrl, states)
    assert usage is not None and usage.idle == 1 and usage.shares["expert 2"] == 0.0
    t_returns = evaluate(teacher, teacher.env_fn, 3, seed=5).returns
    fewer = without_idle(ctrl, usage, teacher.env_fn, t_returns, 5)
    assert fewer is not None and fewer.dropped == ["expert 2"] and fewer.experts == 1
    assert fewer.returns == evaluate(ctrl, teacher.env_fn, 3, seed=5).returns
    assert fewer.percent_of_teacher == pytest.approx(100 * np.mean(fewer.returns) / np.mean(t_returns))
    routed = Controller(dataclasses.replace(prog, router_intercept=np.zeros(0), router_coef=np.zeros((0, 4)),
                                            tree=router_tree(feature=[-1], threshold=[0.0], left=[-1], right=[-1],
                                                             expert=[0], obs_dim=4)), ctrl.features, ctrl.actions, task=ctrl.task)
    assert without_idle(routed, usage, teacher.env_fn, t_returns, 5) is None


@ON_THE_BENCH_RUN
def test_rerun_skips_finished_cells(bench_run: tuple[Path, Path]) -> None:
    suite, results = bench_run
    before = {p.name: p.stat().st_mtime_ns for p in (results / "records").iterdir()}
    res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(results), "--seeds", "0,1"])
    assert res.exit_code == 0, res.output
    assert "6 cells: 0 run now, 6 already done, 0 failed" in " ".join(res.output.split())
    assert {p.name: p.stat().st_mtime_ns for p in (results / "records").iterdir()} == before


def test_a_cell_another_bench_is_running_is_left_to_it_and_never_written_twice(tiny_teacher: Path,
                                                                                  tmp_path: Path) -> None:
    """Two benches on one results folder: each cell's lock lets one of them run it; the other says so in one line
    and runs the rest. A lock dies with its process, so a rerun takes the cell up."""
    from filelock import FileLock

    suite = write_suite(tmp_path, tiny_teacher, seeds="[0]", extra="")
    results = tmp_path / "results"
    (results / ".locks").mkdir(parents=True)
    other = FileLock(str(results / ".locks" / "IP-SAC__tree-2__seed0.lock"))
    other.acquire(timeout=0)  # another bench's hold on one cell
    try:
        res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(results), "--methods", "tree",
                                  "--no-progress", *INLINE])
    finally:
        other.release()
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert ("IP-SAC__tree-2__seed0: left to the other interp-rl bench running it on " in text
            and "2 cells: 1 run now, 0 already done, 0 failed, 1 left to another interp-rl bench running them" in text)
    line = next(x for x in res.output.splitlines() if x.startswith("IP-SAC__tree-2__seed0: left to the other"))
    assert len(line) > 80 and line.endswith("IP-SAC__tree-2__seed0.lock')"), "piped, a line is kept whole"
    assert sorted(p.name for p in (results / "records").glob("*.json")) == ["IP-SAC__tree-4__seed0.json"]
    res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(results), "--methods", "tree",
                              "--no-progress", *INLINE])
    assert res.exit_code == 0 and "2 cells: 1 run now, 1 already done, 0 failed." in " ".join(res.output.split())


@ON_THE_BENCH_RUN
def test_results_folder_of_another_suite_is_refused(bench_run: tuple[Path, Path], tmp_path: Path) -> None:
    _, results = bench_run
    res = runner.invoke(app, ["bench", "--suite", "quick", "--out", str(results)])
    assert res.exit_code == 1 and "holds results of a different suite ('tiny'" in res.output


def _start(cmd: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _count_records(results: Path) -> int:
    return len(list((results / "records").glob("*.json")))


def _wait_for_records(results: Path, at_least: int, proc: subprocess.Popen[bytes], timeout: float = 300) -> None:
    """Wait until ``results`` holds ``at_least`` records while ``proc`` still runs; fail otherwise."""
    deadline = time.monotonic() + timeout
    while _count_records(results) < at_least:
        assert proc.poll() is None, "the run ended before it could be stopped"
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"no {at_least} records in {results} after {timeout:.0f} s "
                        f"({_count_records(results)} written); the run was killed")
        time.sleep(0.1)


def test_waiting_for_records_fails_when_none_come(tmp_path: Path) -> None:
    sleeper = _start([sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(pytest.fail.Exception, match=r"^no 1 records in .* after 1 s \(0 written\)"):
        _wait_for_records(tmp_path, 1, sleeper, timeout=1)
    assert sleeper.wait(timeout=10) == -signal.SIGKILL


def test_killed_run_finishes_with_every_record_exactly_once(tiny_teacher: Path, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, tiny_teacher)
    results = tmp_path / "results"
    cmd = [*CLI, "bench", "--suite", str(suite), "--out", str(results), "--workers", "2", "--no-progress"]
    # A polite stop (SIGTERM, as a scheduler sends): the run ends at once with exit status 130.
    proc = _start(cmd)
    _wait_for_records(results, 1, proc)
    os.killpg(proc.pid, signal.SIGTERM)
    stopped_at = time.monotonic()
    assert proc.wait(timeout=60) == 130, proc.stderr.read().decode() if proc.stderr else ""
    assert time.monotonic() - stopped_at < 30
    # A hard kill of the runner and its workers, mid-run.
    proc = _start(cmd)
    first = _count_records(results)
    _wait_for_records(results, first + 1, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_at_kill = len(list((results / "records").glob("*.json")))
    assert 2 <= done_at_kill < 6, "the run was not stopped in the middle"
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{6 - done_at_kill} run now, {done_at_kill} already done" in " ".join(done.stdout.split())
    ids = [p.stem for p in (results / "records").iterdir()]
    assert sorted(ids) == sorted(c.id for c in load_suite(suite).cells())
    assert len(load_records(results)) == 6
    assert not [p for p in results.rglob("*") if ".tmp" in p.name]


def _workers(pid: int) -> list[int]:
    """The pool workers (spawned interpreters) among the children of process ``pid`` (Linux's /proc)."""
    out = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                out.append(int(child))
        except OSError:
            continue
    return out


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from Linux's /proc")
def test_workers_leave_when_the_runner_is_killed_outright(tiny_teacher: Path, tmp_path: Path) -> None:
    """`kill -9` of the runner alone: its workers stop on their own, so a rerun never has two writers on a cell."""
    suite = write_suite(tmp_path, tiny_teacher)
    proc = _start([*CLI, "bench", "--suite", str(suite), "--out", str(tmp_path / "r"), "--workers", "2",
                   "--no-progress"])
    deadline = time.monotonic() + 120
    while len(workers := _workers(proc.pid)) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before its workers started"
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)  # the runner only, not its process group
    proc.wait()
    deadline = time.monotonic() + 20
    while alive := [w for w in workers if Path(f"/proc/{w}").exists()
                    and "Z" not in Path(f"/proc/{w}/stat").read_text().split(")")[-1].split()[0]]:
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"workers {alive} still run 20 s after their runner was killed")
        time.sleep(0.2)


@ON_THE_BENCH_RUN
def test_a_results_folder_grows_but_keeps_its_meaning(bench_run: tuple[Path, Path], tmp_path: Path) -> None:
    suite, results = bench_run
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    grown = write_suite(tmp_path, Path(json.loads((copy / "suite.json").read_text())["teachers"][0]["path"]),
                        extra='[methods.tree-deep]\nmethod = "tree"\nsizes = [16]\n')
    res = runner.invoke(app, ["bench", "--suite", str(grown), "--out", str(copy), "--methods", "tree-constant"])
    assert res.exit_code == 0, res.output
    assert "2 cells: 0 run now, 2 already done" in " ".join(res.output.split())
    # a folder from before a key existed (a method's 'vary'): the missing key is its default, not a change
    saved = json.loads((copy / "suite.json").read_text())
    for m in saved["methods"]:
        m.pop("vary")
    (copy / "suite.json").write_text(json.dumps(saved))
    res = runner.invoke(app, ["bench", "--suite", str(grown), "--out", str(copy), "--methods", "tree-constant"])
    assert res.exit_code == 0, res.output
    # the same settings given suite-wide ([settings]) are the same settings
    hoisted = tmp_path / "hoisted.toml"
    hoisted.write_text(suite.read_text().replace("[targets]", '[settings]\nnoise_levels = ""\n\n[targets]', 1))
    res = runner.invoke(app, ["bench", "--suite", str(hoisted), "--out", str(copy), "--methods", "tree-constant"])
    assert res.exit_code == 0, res.output
    changed = tmp_path / "changed.toml"
    changed.write_text(suite.read_text().replace('leaf_model = "constant", iterations = 1',
                                                 'leaf_model = "constant", iterations = 2'))
    res = runner.invoke(app, ["bench", "--suite", str(changed), "--out", str(copy)])
    assert res.exit_code == 1
    assert "method 'tree-constant' has other settings there; give it another name" in " ".join(res.output.split())
    fewer = tmp_path / "fewer.toml"
    fewer.write_text(suite.read_text().replace("episodes = 10", "episodes = 12"))
    res = runner.invoke(app, ["bench", "--suite", str(fewer), "--out", str(copy)])
    assert res.exit_code == 1 and "with episodes = 10, not 12" in " ".join(res.output.split())


@ON_THE_BENCH_RUN
def test_a_method_can_fine_tune_another_methods_cells(bench_run: tuple[Path, Path], tmp_path: Path) -> None:
    from distill.dagger import SELECTION_SEED_OFFSET
    from envs.loading import load_teacher
    from interp_rl.program import load_controller
    from interp_rl.rollouts import evaluate

    suite, results = bench_run
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    teacher_path = Path(json.loads((copy / "suite.json").read_text())["teachers"][0]["path"])
    grown = write_suite(tmp_path, teacher_path, extra=RL_FROM_TREE)
    res = runner.invoke(app, ["bench", "--suite", str(grown), "--out", str(copy), "--methods", "tree-rl",
                              "--seeds", "0", *INLINE])
    assert res.exit_code == 0, res.output
    recs = records_by_id(copy)
    tuned, start = recs["IP-SAC__tree-rl-2__seed0"], recs["IP-SAC__tree-2__seed0"]
    assert tuned["details"]["start"]["controller"] == str(copy / start["controller"])
    # it started from that controller: the fine-tuning's first held-out return is that controller's
    ctrl = load_controller(copy / start["controller"])
    teacher = load_teacher(teacher_path)
    held_out = evaluate(ctrl, teacher.env_fn, 10, seed=SELECTION_SEED_OFFSET).returns
    assert tuned["details"]["rl"]["initial_return"] == pytest.approx(float(np.mean(held_out)))
    assert tuned["details"]["dagger_history"] == start["details"]["dagger_history"]  # no distillation again
    assert tuned["distill_seconds"] >= start["distill_seconds"]  # the start's making counts
    # asked alone in a fresh folder, the start cell runs first
    fresh = tmp_path / "fresh"
    res = runner.invoke(app, ["bench", "--suite", str(grown), "--out", str(fresh), "--methods", "tree-rl",
                              "--seeds", "0", "--workers", "2"])
    assert res.exit_code == 0, res.output
    assert sorted(records_by_id(fresh)) == ["IP-SAC__tree-2__seed0", "IP-SAC__tree-rl-2__seed0"]


@ON_THE_BENCH_RUN
def test_fine_tuning_starts_from_a_committed_cell_folder(bench_run: tuple[Path, Path], tmp_path: Path) -> None:
    """A results folder as committed (records, and only controller.json and rules.txt of a cell): the start's cost
    and distillation history come from its record; without its controller, a one-line error says what to do."""
    suite, results = bench_run
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    teacher_path = Path(json.loads((copy / "suite.json").read_text())["teachers"][0]["path"])
    grown = write_suite(tmp_path, teacher_path, extra=RL_FROM_TREE)
    folder = copy / "cells" / "IP-SAC__tree-2__seed0"
    for f in folder.iterdir():
        if f.name not in ("controller.json", "rules.txt"):
            shutil.rmtree(f) if f.is_dir() else f.unlink()
    args = ["bench", "--suite", str(grown), "--out", str(copy), "--methods", "tree-rl", "--seeds", "0", *INLINE]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    recs = records_by_id(copy)
    tuned, start = recs["IP-SAC__tree-rl-2__seed0"], recs["IP-SAC__tree-2__seed0"]
    assert tuned["details"]["dagger_history"] == start["details"]["dagger_history"]
    assert tuned["distill_seconds"] > start["distill_seconds"]
    assert tuned["details"]["start"]["distill_seconds"] == start["distill_seconds"]

    (copy / "records" / "IP-SAC__tree-rl-2__seed0.json").unlink()
    shutil.rmtree(copy / "cells" / "IP-SAC__tree-rl-2__seed0")
    (folder / "controller.json").unlink()
    res = runner.invoke(app, args)
    assert res.exit_code == 1
    assert ("Cell IP-SAC__tree-2__seed0 has a record but no controller" in " ".join(res.output.split())
            and "delete" in res.output), res.output


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time on the machine: the tests of a group share a worker
def test_ray_executor_gives_the_same_records(bench_run: tuple[Path, Path], tmp_path: Path) -> None:
    suite, results = bench_run
    ray_results = tmp_path / "ray"
    res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(ray_results), "--executor", "ray",
                              "--workers", "2", "--seeds", "0"])
    assert res.exit_code == 0, res.output
    local, on_ray = records_by_id(results), records_by_id(ray_results)
    assert sorted(on_ray) == sorted(k for k in local if k.endswith("seed0"))
    for key, rec in on_ray.items():
        assert strip_timing(rec) == strip_timing(local[key]), key


@ON_THE_BENCH_RUN
def test_unknown_executor_is_refused(bench_run: tuple[Path, Path]) -> None:
    suite, results = bench_run
    res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(results), "--executor", "dask"])
    assert res.exit_code == 1 and "Unknown executor 'dask'; use one of process, ray, inline." in res.output


# ----------------------------------------------------------------------------- reports
@pytest.fixture(scope="module")
def report(bench_run: tuple[Path, Path]) -> Path:
    _, results = bench_run
    res = runner.invoke(app, ["report", str(results), "--seed", "0"])
    assert res.exit_code == 0, res.output
    return results


@ON_THE_BENCH_RUN
def test_report_tables_match_the_records(report: Path) -> None:
    md = (report / "report.md").read_text()
    recs = load_records(report)
    summary = summarise(recs)
    groups = summary["IP-SAC"]
    assert [(g.method, g.size) for g in groups] == [("tree", 2), ("tree", 4), ("tree-constant", 2)]
    for g in groups:
        pct = sorted(r["percent_of_teacher"] for r in recs if r["method"] == g.method and r["cell"]["size"] == g.size)
        assert g.estimate["iqm"] == pytest.approx(np.mean(pct))  # two seeds: the IQM is their mean
        assert g.estimate["ci_low"] <= g.estimate["iqm"] <= g.estimate["ci_high"]
        assert f"{g.estimate['iqm']:.1f} [{g.estimate['ci_low']:.1f}, {g.estimate['ci_high']:.1f}]" in md
    assert "## IP-SAC: SAC on InvertedPendulum-v5" in md
    # the suite's targets, every group checked: met, or by how much it misses
    from benchmarks.analyses import target_checks

    targets = {"percent": 90, "worst_percent": 75, "below_half": 1, "parameters": 20, "minutes": 10}
    assert "## Targets" in md and "mean return ≥ 90% of the teacher's; worst episode ≥ 75%" in md
    for g in groups:
        checks = target_checks(g, targets)
        assert set(checks) == set(targets)
        verdict = "all" if all(ok for ok, _ in checks.values()) else "; ".join(t for ok, t in checks.values() if not ok)
        assert f"| IP-SAC | {g.method} | {g.size} |" in md and verdict in md
        t_worst, t_below = g.teacher_reference  # the teacher against itself, for reference
        ts = [np.array(r["teacher"]["returns"]) for r in g.records]
        assert t_worst == pytest.approx(min(percent_of_teacher(t.min(), t.mean()) for t in ts))
        assert t_below == pytest.approx(100 * np.mean(np.concatenate([t < half_of_teacher(t.mean()) for t in ts])))
        assert f"| {t_worst:.1f} / {t_below:.1f} |" in md
        params = g.mean("size", "parameters")
        assert checks["parameters"][0] == (params <= 20)
        if params > 20:
            assert f"{params:.0f} parameters (limit 20)" in verdict
        cores = {r["distill_cores"] for r in g.records}  # the cores each cell's distillation could use
        assert len(cores) == 1 and min(cores) >= 1
        n = min(cores)  # tiny cells: seconds
        assert checks["minutes"] == (True, f"{g.mean('distill_seconds') / 60:.1f} min on {n} core{'s' * (n != 1)}")
    fast = Group("T-v5", "T", "moe", 8, [{"percent_of_teacher": 99.0, "cell": {"seed": 0}, "distill_seconds": 1500,
                                          "student": {"returns": [99.0]}, "teacher": {"return_mean": 100.0}}])
    assert target_checks(fast, {"minutes": 20})["minutes"] == (False, "25.0 min (limit 20)")
    # a teacher that itself falls below half (or spreads, as on Reacher) is judged against its own figures
    own = {"percent_of_teacher": 95.0, "cell": {"seed": 0},
           "student": {"returns": [100.0, 100.0, 100.0, 20.0, 100.0]},
           "teacher": {"return_mean": 100.0, "returns": [110.0, 110.0, 110.0, 40.0, 130.0]}}
    checks = target_checks(Group("T-v5", "T", "moe", 8, [own]), {"worst_percent": 75, "below_half": 1})
    assert checks["below_half"] == (True, "20.0% of episodes below half (the teacher's own: 20.0%)")
    assert checks["worst_percent"] == (False, "worst 20.0% (20.0 short of the teacher's own worst, 40.0%)")
    own["student"]["returns"][3] = 45.0
    checks = target_checks(Group("T-v5", "T", "moe", 8, [own]), {"worst_percent": 75, "below_half": 1})
    assert checks["worst_percent"] == (True, "worst 45.0% (the teacher's own worst: 40.0%)")
    # at a glance: one row per teacher, a column per method, bold where every target is met
    from benchmarks.analyses import at_a_glance

    header, (row,) = at_a_glance({"IP-SAC": groups}, targets)
    assert "### At a glance" in md and "| " + " | ".join(header) + " |" in md and "| " + " | ".join(row) + " |" in md
    for g in groups:
        if g is next(h for h in groups if h.method == g.method):
            cell = row[header.index(g.method)]
            assert cell.strip("*").startswith(f"{np.mean(g.percents):.1f} / {g.worst_percent:.1f} / ")
            assert cell.startswith("**") == all(ok for ok, _ in target_checks(g, targets).values())
    assert "![IP-SAC: % of teacher against parameters per method](figures/pareto-IP-SAC.png)" in md
    for name in re.findall(r"\]\((figures/[^)]+)\)", md):
        assert (report / name).is_file() and (report / name).stat().st_size > 0
    assert "Why it acts as it does in one visited state" in md and "→ leaf" in md
    assert "hinge_angle [rad]" in md  # named features, not x[1]
    assert "x[" not in md


def test_target_verdicts_at_and_just_past_each_limit_against_hand_written_answers() -> None:
    """A value at a target's limit meets it; the smallest step past it misses, said in these words."""
    from benchmarks.analyses import target_checks
    from benchmarks.records import Group

    targets = {"percent": 90, "worst_percent": 75, "below_half": 1, "parameters": 1000, "nonzero_terms": 60,
               "minutes": 30}

    def record(percent: float, worst: float, below: int, parameters: int, terms: int, seconds: float) -> dict:
        rates = [10.0] * below + [100.0] * (100 - below)  # teacher mean 100: below half under 50
        return {"percent_of_teacher": percent, "cell": {"seed": 0}, "distill_seconds": seconds, "distill_cores": 2,
                "size": {"parameters": parameters, "nonzero_terms": terms},
                "student": {"returns": [worst, 100.0]}, "teacher": {"return_mean": 100.0},
                "failures": {"threshold": 50.0, "returns": rates}}

    at = target_checks(Group("T-v5", "T", "moe", 8, [record(90.0, 75.0, 1, 1000, 60, 1800.0)]), targets)
    assert at == {"percent": (True, "mean 90.0%"), "worst_percent": (True, "worst 75.0%"),
                  "below_half": (True, "1.0% of episodes below half"), "parameters": (True, "1000 parameters"),
                  "nonzero_terms": (True, "60 non-zero terms"), "minutes": (True, "30.0 min on 2 cores")}
    past = target_checks(Group("T-v5", "T", "moe", 8, [record(89.99, 74.99, 2, 1001, 61, 1800.6)]), targets)
    assert past == {"percent": (False, "mean 90.0% (0.0 short of 90%)"),
                    "worst_percent": (False, "worst 75.0% (0.0 short of 75%)"),
                    "below_half": (False, "2.0% of episodes below half (limit 1%)"),
                    "parameters": (False, "1001 parameters (limit 1000)"),
                    "nonzero_terms": (False, "61 non-zero terms (limit 60)"),
                    "minutes": (False, "30.0 min on 2 cores (limit 30)")}


@ON_THE_BENCH_RUN
def test_report_says_per_teacher_where_it_falls_short_and_what_was_tried(report: Path, tmp_path: Path) -> None:
    import shutil

    from benchmarks.analyses import closest, target_checks

    targets = {"percent": 90, "worst_percent": 75, "below_half": 1, "parameters": 20, "minutes": 10}
    groups = summarise(load_records(report))["IP-SAC"]
    g, checks = closest(groups, targets)
    met = sum(ok for ok, _ in checks.values())
    assert all(sum(ok for ok, _ in target_checks(h, targets).values()) <= met for h in groups)
    md = (report / "report.md").read_text()
    assert "### Where short" in md
    line = next(x for x in md.splitlines() if x.startswith("- **IP-SAC**"))
    assert f"{g.method} {g.size}" in line and "Tried: tree 2 (" in line and "tree-constant 2 (" in line
    head = line.split(" Tried: ")[0]
    assert head.startswith(f"- **IP-SAC**: {'met by' if met == len(checks) else 'closest'} {g.method} {g.size}")
    misses = head.split(" parameters)", 1)[1]
    for ok, text in checks.values():
        assert (text in misses) != ok  # the misses, and only those
    # experiments outside the suite, from the results folder's tried.toml
    copy = tmp_path / "res"
    shutil.copytree(report, copy)
    (copy / "tried.toml").write_text('[[tried]]\nteacher = "IP-SAC"\nwhat = "DART noise 0.3"\nresult = "99% / worst 98%"\n'
                                     'command = "interp-rl distill tree --action-noise 0.3"\n'
                                     '[[tried]]\nteacher = "*"\nwhat = "restarts"\nresult = "none better"\n'
                                     'command = "interp-rl distill tree --restarts 5"\n')
    write_report(copy, seed=0)
    md = (copy / "report.md").read_text()
    assert "also DART noise 0.3: 99% / worst 98% (`interp-rl distill tree --action-noise 0.3`)" in md
    # what was tried on every teacher is said once, after the teachers
    assert md.count("restarts: none better") == 1
    assert md.index("Tried on every teacher:") > md.index("also DART noise 0.3")
    (copy / "tried.toml").write_text('[[tried]]\nteacher = "Nope"\nwhat = "x"\nresult = "y"\ncommand = "z"\n')
    res = runner.invoke(app, ["report", str(copy)])
    assert res.exit_code == 1 and "tried.toml names teacher(s) 'Nope' that have no records" in res.output
    (copy / "tried.toml").write_text('[[tried]]\nteacher = "IP-SAC"\nwhat = "x"\n')
    res = runner.invoke(app, ["report", str(copy)])
    assert res.exit_code == 1 and "lacks result, command" in res.output


@ON_THE_BENCH_RUN
def test_report_shows_the_records_of_compared_suites_next_to_its_own(report: Path, tmp_path: Path) -> None:
    import shutil

    mine, other = tmp_path / "mine", tmp_path / "other"
    shutil.copytree(report, mine)
    shutil.copytree(report, other)
    for folder, drop in ((mine, "tree-constant"), (other, "tree")):
        for f in (folder / "records").glob("*.json"):
            if json.loads(f.read_text())["method"] == drop:
                f.unlink()
    suite = json.loads((mine / "suite.json").read_text())
    teachers = [{**t, "held_out": True} for t in suite["teachers"]]
    (mine / "suite.json").write_text(json.dumps({**suite, "compare": ["other", "absent"], "teachers": teachers,
                                                 "targets": {"percent": 90, "parameters": 1000}}))
    write_report(mine, seed=0)
    md = (mine / "report.md").read_text()
    own = md.split("### This suite's own cells")[1].split("### Every method against the targets")[0]
    mine_records = [json.loads(f.read_text()) for f in (mine / "records").glob("*.json")]
    name = mine_records[0]["cell"]["teacher"]
    assert f"Held out: agents these methods were not chosen on ({name})." in own
    for r in mine_records:  # each of its own cells, and only those, seed by seed
        c = r["cell"]
        assert f"| {name} (held out) | {c['method']} | {c['size']} | {c['seed']} |" in own
    assert "tree-constant" not in own
    n = len(list((other / "records").glob("*.json")))
    assert (f"Shown next to them, not run again: {n} records of methods tree-constant on the same teachers from the "
            "`other` suite's results folder") in md
    assert "| tree-constant | 2 |" in md and "| tree | 4 |" in md  # both in the teacher's table
    assert "### Chosen tree " in md and "### Chosen tree-constant" not in md  # described in its own report
    assert "absent" not in md.split("## Summary")[0]  # a compared folder that is not there is skipped


@ON_THE_BENCH_RUN
def test_records_carry_the_verdicts_of_the_suites_property_file(bench_run: tuple[Path, Path], report: Path) -> None:
    _, results = bench_run
    for rec in load_records(results):
        ver = rec["verification"]
        assert ver["properties"] == "InvertedPendulum-v5.toml"
        assert sum(ver["counts"].values()) == len(ver["verdicts"]) == 4
        assert {v["name"]: v["status"] for v in ver["verdicts"]}["within the motor's range"] == "proved"
    md = (report / "report.md").read_text()
    assert "## Verification against the plant's rules" in md and "`InvertedPendulum-v5.toml`" in md


def test_a_suite_with_a_bad_property_file_fails_at_load(tmp_path: Path) -> None:
    bad = tmp_path / "ip.toml"
    bad.write_text('[[property]]\nname = "p"\nthen = ["slider_forse <= 1"]\n')
    path = write_suite(tmp_path, tmp_path / "t.zip")
    path.write_text(path.read_text().replace(
        str(Path(__file__).resolve().parents[1] / "benchmarks/properties/InvertedPendulum-v5.toml"), bad.as_posix()))
    with pytest.raises(SuiteError, match="InvertedPendulum-v5: Property 'p': 'slider_forse <= 1': 'slider_forse' is "
                                         "not a feature or action"):
        load_suite(path)


@ON_THE_BENCH_RUN
def test_report_is_reproducible(report: Path, tmp_path: Path) -> None:
    (tmp_path / "again" / "figures").mkdir(parents=True)
    (tmp_path / "again" / "figures" / "pareto-an-old-teacher.png").write_bytes(b"an earlier report's picture")
    write_report(report, tmp_path / "again", seed=0)
    assert (tmp_path / "again" / "report.md").read_text() == (report / "report.md").read_text()
    # the pictures are the report's own: none left from an earlier one
    assert sorted(p.name for p in (tmp_path / "again" / "figures").iterdir()) == sorted(
        p.name for p in (report / "figures").iterdir())


@ON_THE_BENCH_RUN
def test_a_suite_chooses_its_reports_sections_and_a_new_analysis_is_one_registration(report: Path,
                                                                                     tmp_path: Path) -> None:
    """A study is a suite plus an analysis: registered by name, listed in the suite's [report] analyses."""
    import shutil

    from benchmarks.analyses import ANALYSES, register_analysis

    copy = tmp_path / "res"
    shutil.copytree(report, copy)

    @register_analysis("toy-count")
    def toy(ctx, doc) -> None:
        doc.h(2, "Records per teacher")
        doc.bullets([f"{t}: {sum(len(g.records) for g in gs)}" for t, gs in ctx.summary.items()])

    try:
        suite = json.loads((copy / "suite.json").read_text())
        (copy / "suite.json").write_text(json.dumps({**suite, "report": {"analyses": ["toy-count", "summary"]}}))
        write_report(copy, seed=0)
        md = (copy / "report.md").read_text()
        heads = [line for line in md.splitlines() if line.startswith("## ")]
        assert heads == ["## Records per teacher", "## Summary", "## Provenance"]
        n = len(load_records(copy))
        assert f"- IP-SAC: {n}" in md
        (copy / "suite.json").write_text(json.dumps({**suite, "report": {"analyses": ["summary", "nope"]}}))
        res = runner.invoke(app, ["report", str(copy)])
        assert res.exit_code == 1 and res.output.strip() == (
            f"Error: Suite {suite['name']!r} lists unknown report analyses 'nope'; known: " + ", ".join(ANALYSES) + ".")
    finally:
        ANALYSES.pop("toy-count")


def test_report_of_an_empty_or_corrupt_folder_is_a_one_line_error(tmp_path: Path) -> None:
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 1 and "holds no benchmark records" in res.output
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "x.json").write_text("{not json")
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 1 and "is not valid JSON" in res.output and "delete it to rerun its cell" in res.output
    res = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert res.exit_code == 1 and "does not exist" in res.output


@ON_THE_BENCH_RUN
def test_html_report_is_self_contained(report: Path) -> None:
    page = (report / "report.html").read_text()
    assert page.count("<img ") >= 2
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert srcs and all(s.startswith(("data:image/png;base64,", "data:image/svg+xml;base64,")) for s in srcs)
    assert not re.search(r'(src|href)="(https?:|//|file:)', page)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (.ci/run installs Debian's chromium)")
@ON_THE_BENCH_RUN
def test_html_report_renders_with_its_images_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    page = (report / "report.html").read_text()
    probe = """<script>
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0).length;
  const tables = document.querySelectorAll("table").length;
  document.title = `rendered images=${ok}/${imgs.length} tables=${tables} width=${document.body.scrollWidth}`;
});
</script></body>"""
    probed = tmp_path / "probe.html"
    probed.write_text(page.replace("</body>", probe))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    done = subprocess.run([_chromium(), *flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True,
                          timeout=120)
    title = re.search(r"<title>(rendered [^<]*)</title>", done.stdout)
    assert title, f"Chromium did not render the page: {done.stderr[-2000:]}"
    m = re.match(r"rendered images=(\d+)/(\d+) tables=(\d+) width=(\d+)", title.group(1))
    assert m, title.group(1)
    loaded, total, tables, width = map(int, m.groups())
    assert total == page.count("<img ") and total >= 2 and loaded == total
    assert tables >= 2 and width > 0
    shot = tmp_path / "shot.png"
    subprocess.run([_chromium(), *flags, "--window-size=1200,2400", f"--screenshot={shot}",
                    (report / "report.html").as_uri()], capture_output=True, timeout=120)
    assert shot.is_file()
    import matplotlib.image as mpimg

    pixels = mpimg.imread(str(shot))
    assert pixels.std() > 0.05, "the screenshot is blank"


def test_quick_suite_then_report_end_to_end(shared_teachers: Path, tmp_path: Path) -> None:
    """The README's `interp-rl bench --suite quick` and `interp-rl report`, on the shared Swimmer teacher."""
    results = tmp_path / "quick"
    res = runner.invoke(app, ["bench", "--suite", "quick", "--out", str(results), "--teachers", str(shared_teachers),
                              *INLINE,
                              "--seeds", "0"])
    assert res.exit_code == 0, res.output
    recs = records_by_id(results)
    assert sorted(recs) == ["Swimmer-SAC__tree-16__seed0", "Swimmer-SAC__tree-4__seed0"]
    assert all(r["teacher"]["return_mean"] > 300 for r in recs.values())  # the zoo agent swims
    assert all(r["teacher"]["source"] == "sac/Swimmer-v3_1/Swimmer-v3.zip" for r in recs.values())
    res = runner.invoke(app, ["report", str(results)])
    assert res.exit_code == 0, res.output
    md = (results / "report.md").read_text()
    assert "## Swimmer-SAC: SAC on Swimmer-v5" in md and "`interp-rl bench --suite quick --out RESULTS`" in md
    assert (results / "report.html").stat().st_size > 10_000


@pytest.mark.parametrize(("args", "message"), [
    (["demo", "--seed", "-1"], "The '--seed' option of interp-rl demo must be an int in [0, inf). Got -1 instead."),
    (["bench", "--suite", "quick", "--workers", "0"],
     "The '--workers' option of interp-rl bench must be an int in [1, inf). Got 0 instead."),
    (["bench", "--suite", "quick", "--seeds", "a,b"], "--seeds must be a comma-separated list of integers. Got 'a,b'"),
    (["report", ".", "--reps", "0"], "The '--reps' option of interp-rl report must be an int in [1, inf). Got 0 instead."),
])
def test_bad_command_options_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "out")])
    assert res.exit_code == 1 and res.output.startswith("Error: ") and message in " ".join(res.output.split())
    assert not (tmp_path / "out").exists()


def test_stale_temporaries_of_a_killed_writer_are_removed(tmp_path: Path) -> None:
    from interp_rl.io import atomic_write_text, remove_stale_temps

    atomic_write_text(tmp_path / "cells" / "a" / "config.json", "{}")
    stale = [tmp_path / "cells" / "a" / ".config.json.ab12cd34.tmp",
             tmp_path / "cells" / "a" / "checkpoint" / ".model.zip.ef56gh78.tmp.zip"]
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("half")
    assert sorted(remove_stale_temps(tmp_path / "cells")) == sorted(stale)
    assert [p.name for p in (tmp_path / "cells").rglob("*") if p.is_file()] == ["config.json"]
    assert remove_stale_temps(tmp_path / "missing") == []


# ----------------------------------------------------------------------------- study suites
SENSOR_SUITE = """
name = "sensors-tiny"
seeds = [0]
episodes = 3
fidelity_steps = 200
latency_batch = 16
attribution_states = 0

[settings]
iterations = 1
steps = 300
select_episodes = 1
noise_levels = ""
rl_steps = 0

[report]
analyses = ["sensors"]

[[teachers]]
name = "IP-SAC"
path = "{teacher}"

[methods.tree]
vary = "top_features"
sizes = [1, 0]
settings = {{ max_leaves = 2 }}

[methods.tree-random]
method = "tree"
vary = "random_features"
sizes = [2]
settings = {{ max_leaves = 2 }}
"""


def test_a_sensor_suite_varies_the_features_its_controllers_read(tiny_teacher: Path, tmp_path: Path) -> None:
    """`vary` turns a suite's sizes into the features read; [settings] reach every method; the report's sensors
    section puts the features read against % of teacher, every feature being the task's own count."""
    from envs.loading import load_teacher
    from interp_rl.attribution import teacher_ranking

    suite = tmp_path / "s.toml"
    suite.write_text(SENSOR_SUITE.format(teacher=tiny_teacher.as_posix()))
    spec = load_suite(suite)
    assert [m.settings["iterations"] for m in spec.methods] == [1, 1]
    assert [c.id for c in spec.cells()] == ["IP-SAC__tree-1__seed0", "IP-SAC__tree-0__seed0",
                                           "IP-SAC__tree-random-2__seed0"]
    res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(tmp_path / "r"), *INLINE])
    assert res.exit_code == 0, res.output
    recs = records_by_id(tmp_path / "r")
    one, every, drawn = (recs[f"IP-SAC__{x}__seed0"] for x in ("tree-1", "tree-0", "tree-random-2"))
    assert one["size_name"] == "top_features" and one["config"]["top_features"] == 1
    assert one["config"]["max_leaves"] == 2 and one["config"]["iterations"] == 1
    top = teacher_ranking(load_teacher(tiny_teacher), seed=0)["order"][0]
    assert one["details"]["feature_subset"]["columns"] == [top]
    assert drawn["details"]["feature_subset"]["pick"] == "random"
    assert len(drawn["details"]["feature_subset"]["columns"]) == 2
    assert every["details"]["feature_subset"] is None
    res = runner.invoke(app, ["report", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## How many sensors does a controller need?" in md
    assert "| features read | tree | tree-random |" in md
    pct = {k: f"{recs[k]['percent_of_teacher']:.1f}" for k in recs}
    assert f"| 1 | {pct['IP-SAC__tree-1__seed0']} [" in md
    assert f"| 4 | {pct['IP-SAC__tree-0__seed0']} [" in md  # every feature: InvertedPendulum's four
    assert re.search(rf"\| 2 \|  \| {re.escape(pct['IP-SAC__tree-random-2__seed0'])} \[", md)
    assert (tmp_path / "r" / "figures" / "sensors.png").is_file()


def test_vary_must_name_a_free_setting_of_the_method(tmp_path: Path, tiny_teacher: Path) -> None:
    text = SENSOR_SUITE.format(teacher=tiny_teacher.as_posix())
    for bad, why in [('vary = "top_features"\nsizes = [1, 0]\nsettings = {{ max_leaves = 2, top_features = 1 }}',
                      "'top_features'"), ('vary = "nope"\nsizes = [1, 0]\nsettings = {{ max_leaves = 2 }}', "'nope'")]:
        suite = tmp_path / "bad.toml"
        suite.write_text(text.replace('vary = "top_features"\nsizes = [1, 0]\nsettings = { max_leaves = 2 }',
                                      bad.replace("{{", "{").replace("}}", "}"), 1))
        with pytest.raises(SuiteError, match=r"\[methods.tree\] 'vary' must name a setting of method 'tree' that "
                                             rf"'settings' does not fix \(such as 'top_features'\). Got {why}"):
            load_suite(suite)
    suite = tmp_path / "shared.toml"
    suite.write_text(text.replace("rl_steps = 0\n", "rl_steps = 0\nexperts = 3\n", 1))
    with pytest.raises(SuiteError, match=r"\[settings\] names experts, which no method of the suite has."):
        load_suite(suite)


def _rec(teacher: str, method: str, seed: int, pct: float, details: dict[str, Any], kind: str = "mixture",
         config: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"cell": {"teacher": teacher, "method": method, "size": 8, "seed": seed}, "task": "HalfCheetah-v5",
            "method": method, "kind": kind, "percent_of_teacher": pct, "worst_percent_of_teacher": pct - 5,
            "teacher": {"return_mean": 1000.0, "returns": [1000.0]}, "student": {"returns": [10 * pct - 50]},
            "details": details, "config": config or {}, "size": {"parameters": 960}}


def test_warm_start_is_set_against_scratch_at_equal_environment_steps(tmp_path: Path) -> None:
    from benchmarks.analyses import ReportContext
    from benchmarks.study_analyses import env_steps, warm_curve, warm_vs_scratch_section
    from interp_rl.document import Document

    dagger = [{"samples": 100, "return_mean": 200.0}, {"samples": 200, "return_mean": 400.0}]
    rl = {"history": [{"step": 0, "return_mean": 400.0}, {"step": 50, "return_mean": 500.0},
                      {"step": 100, "return_mean": 900.0}]}
    warm = _rec("HC", "moe-rl", 0, 88.0, {"dagger_history": dagger, "rl": rl})
    scratch = _rec("HC", "moe-sac", 0, 51.0, {"scratch": {"steps": 300, "history": [
        {"step": 150, "eval_return": 300.0}, {"step": 300, "eval_return": 520.0}]}})
    distilled = _rec("HC", "moe", 0, 70.0, {"dagger_history": dagger, "rl": {}})
    longer = _rec("HC", "moe-long-rl", 0, 95.0, {"dagger_history": dagger, "rl": {"history": [
        {"step": 0, "return_mean": 1.0}, {"step": 500, "return_mean": 2.0}]}})
    two_levels = _rec("HC", "moe-dart-rl", 0, 90.0, {"dagger_history": dagger, "rl": rl},
                      config={"noise_levels": "0,0.3"})
    repaired = _rec("HC", "moe-repair-rl", 0, 90.0, {"dagger_history": dagger, "rl": rl, "repair": {"rounds": [1]}})
    restarted = _rec("HC", "moe-restarts-rl", 0, 89.0, {"dagger_history": dagger, "rl": rl}, config={"restarts": 5})
    assert env_steps(repaired) is None  # repair's fresh episodes are not in the history
    assert env_steps(restarted) == 300  # refits of the same data, chosen on held-out episodes: no more steps
    assert env_steps(warm) == 300 and env_steps(scratch) == 300 and env_steps(longer) == 700
    assert env_steps(two_levels) is None  # two distillations: the history does not count every step
    assert warm_curve(warm) == ([100, 200, 250, 300], [200.0, 400.0, 500.0, 900.0])
    assert warm_curve(scratch) == ([150, 300], [300.0, 520.0])
    doc, images = Document(), {}
    ctx = ReportContext(tmp_path, {"name": "x"}, [], {}, summarise([warm, scratch, distilled, longer, two_levels]),
                        10, 0, lambda name, data, alt: images.update({name: data}))
    warm_vs_scratch_section(ctx, doc)
    md = doc.markdown()
    assert "| HC | moe-rl | distilled, then fine-tuned | 0 | 300 | 88.0 | 83.0 |" in md
    assert "| HC | moe-sac | from scratch | 0 | 300 | 51.0 | 46.0 |" in md
    assert "moe-long-rl" not in md and "moe-dart-rl" not in md and "| HC | moe |" not in md
    assert list(images) == ["warm-vs-scratch-HC-moe-sac.png"]
    # without a run from scratch there is no section
    doc = Document()
    warm_vs_scratch_section(dataclasses.replace(ctx, summary=summarise([warm, distilled])), doc)
    assert doc.markdown().strip() == ""


def test_the_silver_section_shows_silvers_steps_and_only_where_silver_ran(tmp_path: Path) -> None:
    from benchmarks.analyses import ReportContext
    from benchmarks.study_analyses import silver_section
    from interp_rl.document import Document

    facts = {"cluster_purity": 0.9, "boundary_accuracy": 0.95, "rule_accuracy": 0.875}
    recs = [dict(_rec("CP", "silver-refit", seed, 100.0, {"fit_facts": facts}, kind="mixture"),
                 fidelity={"teacher_states": {"agreement": a}}) for seed, a in ((0, 0.9), (1, 0.8))]
    tree = dict(_rec("CP", "tree", 0, 60.0, {"fit_facts": None}, kind="tree"),
                fidelity={"teacher_states": {"agreement": 0.7}})
    images: dict[str, bytes] = {}
    suite = {"name": "s", "teachers": [{"name": "CP", "held_out": True}]}
    ctx = ReportContext(tmp_path, suite, [], {}, summarise([*recs, tree]), 10, 0,
                        lambda name, data, alt: images.update({name: data}))
    doc = Document()
    silver_section(ctx, doc)
    md = doc.markdown()
    assert "## SILVER's steps" in md and "Held out (the default was not chosen on them): CP." in md
    assert "| CP | silver-refit | 2 | 100.0 | 95.0 | 85 | 960 | 0.900 | 0.950 | 0.875 |" in md
    assert "| CP | tree | 1 | 60.0 | 55.0 | 70 | 960 |  |  |  |" in md
    assert list(images) == ["silver.png"]
    doc = Document()
    silver_section(dataclasses.replace(ctx, summary=summarise([tree])), doc)
    assert doc.markdown().strip() == ""


def test_fidelity_of_discrete_actions_is_the_share_of_the_teachers_class(tmp_path: Path) -> None:
    from benchmarks.analyses import ReportContext, summary_section
    from interp_rl.document import Document

    discrete = dict(_rec("CP", "silver", 0, 100.0, {}), fidelity={"student_states": {"r2": -3.4, "agreement": 0.87}})
    continuous = dict(_rec("HC", "moe", 0, 90.0, {}), fidelity={"student_states": {"r2": 0.91}})
    for recs, header, cell in [([discrete, continuous], "fidelity R² (discrete actions: % of states with the "
                                "teacher's class) (own states)", "87% same"),
                               ([continuous], "fidelity R² (own states)", "0.91")]:
        doc = Document()
        summary_section(ReportContext(tmp_path, {}, [], {}, summarise(recs), 10, 0, lambda *a: None), doc)
        md = doc.markdown()
        assert f"| {header} |" in md and f"| {cell} |" in md


def test_the_inline_executor_runs_every_cell_it_is_given(monkeypatch) -> None:
    """Cells given while others wait are all run, in order (a cell given after one had run once took a waiting
    cell's place, so a three-cell run with two workers ran two and said so)."""
    import benchmarks.harness as harness
    from benchmarks.suite import Cell

    monkeypatch.setattr(harness, "run_cell", lambda cell, *args: {"id": cell["method"]})
    jobs = harness._executor_jobs("inline", 2, None)
    cells = [Cell("T", m, 1, 0) for m in ("a", "b", "c")]
    ran = []
    jobs.submit(cells[0])
    jobs.submit(cells[1])
    ran += [rec["id"] for _, rec, _ in jobs.next_done()]
    jobs.submit(cells[2])
    while jobs.pending:
        ran += [rec["id"] for _, rec, _ in jobs.next_done()]
    assert ran == ["a", "b", "c"]
