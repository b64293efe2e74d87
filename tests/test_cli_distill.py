"""`interp-rl distill tree`, `viz` and `export` end to end on a real teacher, with exact error lines."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import teacher_zip
from typer.testing import CliRunner

from interp_rl.cli import app
from interp_rl.export import compile_c, load_c_controller, load_python_controller
from interp_rl.program import load_controller

runner = CliRunner()
# tiny budgets, and the default recipe's DART levels and fine-tuning off
TINY = ["--max-leaves", "4", "--iterations", "1", "--steps", "1000", "--eval-episodes", "2", "--noise-levels", "",
        "--rl-steps", "0"]


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", [["distill"], ["distill", "tree"], ["viz"], ["export"], ["explain"]])
def test_every_new_command_has_help(command):
    code, stdout, _ = _run(*command, "--help")
    assert code == 0 and "Usage:" in stdout


#: The tests of the distilled Swimmer tree share a worker (``--dist loadgroup``), so it is distilled once.
ON_THE_SWIMMER_TREE = pytest.mark.xdist_group("swimmer-tree")


@pytest.fixture(scope="module")
def swimmer_tree(shared_teachers, tmp_path_factory, single_torch_thread):
    out = tmp_path_factory.mktemp("swimmer") / "tree"
    code, stdout, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                                "--out", out, *TINY, "--tune-iterations", "2", "--seed", "3")
    assert code == 0, stderr
    assert "% of teacher" in stdout
    (out.parent / "stderr.txt").write_text(stderr)
    return out


@ON_THE_SWIMMER_TREE
def test_a_log_gets_plain_progress_lines_with_the_time(swimmer_tree):
    """Piped to a file or a CI log (no terminal), a distillation says each step on a line of its own."""
    import re

    lines = (swimmer_tree.parent / "stderr.txt").read_text().splitlines()
    assert lines[0].split("] ", 1)[1] == f"Distilling SAC on Swimmer-v5 into {swimmer_tree}"  # with the first step
    assert all(re.fullmatch(r"\[\d+:\d\d\] \S.*", line) for line in lines), lines
    steps = [line.split("] ", 1)[1] for line in lines]
    assert [s.split(":")[0] for s in steps if s.startswith("DAgger round")] == ["DAgger round 0", "DAgger round 1"]
    assert steps[-1].startswith("Tuning leaves: update 2, return ")


@ON_THE_SWIMMER_TREE
def test_distill_writes_controller_pictures_exports_and_metrics(swimmer_tree):
    names = sorted(p.name for p in swimmer_tree.iterdir())
    assert names == ["config.json", "controller.c", "controller.json", "controller.py", "distillation.npz",
                     "metrics.json", "rules.txt", "tree.dot", "tree.svg"]  # the checkpoint folder is gone once done
    metrics = json.loads((swimmer_tree / "metrics.json").read_text())
    assert metrics["leaves"] <= 4 and metrics["weighting"] == "critic"
    assert len(metrics["student_returns"]) == len(metrics["teacher_returns"]) == 2
    assert metrics["percent_of_teacher"] == pytest.approx(
        100 * metrics["student_return"] / metrics["teacher_return"])
    for key in ("fidelity_teacher_states", "fidelity_student_states"):
        assert set(metrics[key]) == {"r2", "mse"}
    assert [r["round"] for r in metrics["dagger_history"]] == [0, 1]
    assert [h["iteration"] for h in metrics["tuning"]["history"]] == [0, 2]
    config = json.loads((swimmer_tree / "config.json").read_text())
    assert config["settings"]["max_leaves"] == 4 and config["settings"]["seed"] == 3
    assert config["params"]["dagger__student__max_leaves"] == 4 and config["params"]["dagger__seed"] == 3
    assert config["teacher"]["algo"] == "sac" and config["task"] == "Swimmer-v5"
    agree = metrics["attribution_agreement"]
    assert agree["actions"] == ["motor1_rot_torque", "motor2_rot_torque"] and agree["states"] == 200
    assert agree["estimator"] == "permutation" and agree["budget"] <= 2048  # predict rows per state
    rules = (swimmer_tree / "rules.txt").read_text()
    assert "motor1_rot_torque" in rules and "x[" not in rules
    assert "<svg" in (swimmer_tree / "tree.svg").read_text()


@ON_THE_SWIMMER_TREE
def test_saved_controller_and_exports_act_identically(swimmer_tree, tmp_path):
    ctrl = load_controller(swimmer_tree)
    assert ctrl.task == "Swimmer-v5" and ctrl.feature_names[0] == "torso_yaw"
    obs = np.random.default_rng(0).normal(size=(200, 8))
    expected = ctrl.predict(obs)
    act_py = load_python_controller(swimmer_tree / "controller.py")
    assert [act_py(list(o)) for o in obs] == expected.tolist()
    if shutil.which("gcc") or shutil.which("cc"):
        act_c = load_c_controller(compile_c(swimmer_tree / "controller.c", tmp_path))
        assert [act_c(list(o)) for o in obs] == expected.tolist()
    # The metrics' tree return is what the saved controller gets.
    from envs import env_factory
    from interp_rl.rollouts import evaluate

    metrics = json.loads((swimmer_tree / "metrics.json").read_text())
    again = evaluate(ctrl, env_factory("Swimmer-v5"), 2, seed=3)
    assert again.returns == metrics["student_returns"]


@ON_THE_SWIMMER_TREE
def test_viz_draws_the_path_of_a_state_and_leaf_visits(swimmer_tree, tmp_path):
    obs = ",".join(["0.1"] * 8)
    png = tmp_path / "tree.png"
    code, stdout, stderr = _run("viz", swimmer_tree, "--obs", obs, "--episode-seed", "0", "--out", png, "--text")
    assert code == 0, stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert re.search(r"^(torso|motor)\w+ = 0\.1 (rad|m/s|rad/s) (<=|>) ", stdout, re.M)  # named, with units
    assert "→ leaf" in stdout
    assert "Episode seed 0: 1000 steps" in stdout and "leaves visited" in stdout


@ON_THE_SWIMMER_TREE
def test_viz_rejects_an_observation_of_the_wrong_size(swimmer_tree):
    code, _, stderr = _run("viz", swimmer_tree, "--obs", "0.1,0.2")
    assert code == 1
    assert stderr.strip() == "Error: obs has 2 features, but the tree controller expects 8 (Swimmer-v5)."


@ON_THE_SWIMMER_TREE
def test_export_writes_the_formats_asked_for(swimmer_tree, tmp_path):
    code, _, stderr = _run("export", swimmer_tree / "controller.json", "--format", "c", "--out", tmp_path)
    assert code == 0, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["controller.c"]
    assert "void act(const double *obs, double *action)" in (tmp_path / "controller.c").read_text()
    code, _, stderr = _run("export", swimmer_tree, "--format", "rust", "--out", tmp_path)
    assert code == 1 and stderr.strip() == "Error: The '--format' option of interp-rl export must be python, c, json or onnx. Got 'rust' instead."


def test_export_refuses_a_corrupt_controller(tmp_path):
    bad = tmp_path / "controller.json"
    bad.write_text('{"format": "interp-rl-controller", "version": 1, "program": ')
    code, _, stderr = _run("export", bad, "--out", tmp_path / "x")
    assert code == 1 and stderr.startswith(f"Error: '{bad}' is corrupt (not valid JSON:")


@ON_THE_SWIMMER_TREE
def test_rerun_into_a_finished_folder_is_refused(swimmer_tree, shared_teachers):
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                           "--out", swimmer_tree, *TINY)
    assert code == 1
    assert stderr.strip() == f"Error: '{swimmer_tree}' already holds a distilled controller; choose another --out."


@pytest.mark.parametrize(("args", "line"), [
    (["--max-leaves", "0"], "Error: The '--max-leaves' option of interp-rl distill tree must be an int in [2, inf). Got 0 instead."),
    (["--max-depth", "-1"], "Error: The '--max-depth' option of interp-rl distill tree must be an int in [1, 32]. Got -1 instead."),
    (["--iterations", "-2"], "Error: The '--iterations' option of interp-rl distill tree must be an int in [0, inf). Got -2 instead."),
    (["--leaf-model", "cubic"],
     "Error: The '--leaf-model' option of interp-rl distill tree must be one of 'constant', 'linear'. Got 'cubic' instead."),
    (["--env", "Hopper-v5"],
     "Error: The teacher observes 8 features, but Hopper-v5 gives 11; is it a teacher for another task?"),
])
def test_bad_distill_input_gets_one_line(shared_teachers, tmp_path, args, line):
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                           "--out", tmp_path / "t", *args)
    assert code == 1 and stderr.strip() == line
    assert not (tmp_path / "t").exists()


def test_critic_weighting_without_a_critic_is_refused(shared_teachers, tmp_path):
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "ppo", "Hopper"),
                           "--out", tmp_path / "t", "--weighting", "critic", *TINY)
    assert code == 1
    assert stderr.strip() == (
        "Error: The '--weighting' option of interp-rl distill tree must be 'auto' or 'none' for a teacher without "
        "a Q-function (the PPO teacher has none; SAC, TD3, DDPG and TQC have one). Got 'critic' instead.")


def test_config_file_sets_defaults_and_options_win(shared_teachers, tmp_path):
    cfg = tmp_path / "tree.toml"
    cfg.write_text('max_leaves = 3\nleaf_model = "constant"\niterations = 0\nsteps = 1000\n'
                   'eval_episodes = 1\nfidelity_steps = 200\nnoise_levels = ""\nrl_steps = 0\n')
    out = tmp_path / "t"
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                           "--out", out, "--config", cfg, "--max-leaves", "2")
    assert code == 0, stderr
    resolved = json.loads((out / "config.json").read_text())["settings"]
    assert resolved["max_leaves"] == 2 and resolved["leaf_model"] == "constant" and resolved["iterations"] == 0
    assert load_controller(out).program.n_leaves == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("max_leafs = 3\n")
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                           "--out", tmp_path / "u", "--config", bad)
    assert code == 1 and stderr.startswith("Error: Unknown setting(s) of interp-rl distill tree: max_leafs; known: ")


def test_interrupted_distillation_resumes_from_its_completed_rounds(shared_teachers, tmp_path, teachers):
    from distill import METHODS, run_job
    from interp_rl.errors import DistillInterrupted

    sac = teachers["sac_swimmer"]
    out = tmp_path / "t"
    cfg = {"max_leaves": 4, "iterations": 2, "steps": 1000, "eval_episodes": 1, "fidelity_steps": 200,
           "select_episodes": 1, "noise_levels": "", "rl_steps": 0}

    def stop(row):
        if row.get("round") == 1:
            raise KeyboardInterrupt

    with pytest.raises(DistillInterrupted, match="2 completed round"):
        run_job(METHODS["tree"], sac, cfg, out, progress=stop)
    assert sorted(p.name for p in (out / "checkpoint").glob("round_*.npz")) == ["round_00.npz", "round_01.npz"]
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                           "--out", out, "--config", out / "config.json")
    assert code == 1 and "holds an unfinished distillation; pass --resume" in stderr
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                           "--out", out, "--config", out / "config.json", "--resume")
    assert code == 0, stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert [r["round"] for r in metrics["dagger_history"]] == [0, 1, 2]
    assert Path(out / "controller.json").is_file() and not (out / "checkpoint").exists()


def test_a_distillation_runs_numpy_s_blas_on_one_thread(tmp_path, teachers):
    """The same seed gives the same controller on any number of cores: BLAS threads split a product's sums
    differently (on Ant's 105 features a 2-thread run gave another controller), so distilling pins them to one."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from distill import METHODS, run_job
    from interp_rl.errors import DistillInterrupted

    cfg = {"max_leaves": 4, "iterations": 1, "steps": 1000, "eval_episodes": 1, "select_episodes": 1,
           "noise_levels": "", "rl_steps": 0}
    seen = []

    def look(row):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        raise KeyboardInterrupt

    with threadpool_limits(2), pytest.raises(DistillInterrupted):
        run_job(METHODS["tree"], teachers["sac_swimmer"], cfg, tmp_path / "t", progress=look)
    assert seen and seen[0] == {1}


def test_the_recipe_s_dart_levels_resume_and_count_their_time(shared_teachers, tmp_path, teachers):
    """The default recipe distils at two DART levels; a run stopped in the second resumes there."""
    from distill import METHODS, run_job
    from interp_rl.errors import DistillInterrupted

    sac = teachers["sac_swimmer"]
    out = tmp_path / "t"
    cfg = {"max_leaves": 4, "iterations": 1, "steps": 1000, "eval_episodes": 1, "fidelity_steps": 200,
           "select_episodes": 1, "rl_steps": 0, "restart_episodes": 2, "jobs": 1}
    assert METHODS["tree"].defaults()["noise_levels"] == "0,0.3"  # the recipe, not set here
    levels: list[float] = []

    def stop(row):
        levels.extend([row["noise"]] if row.get("stage") == "dart" else [])
        if levels == [0.0, 0.3] and row.get("round") == 0:
            raise KeyboardInterrupt

    with pytest.raises(DistillInterrupted):
        run_job(METHODS["tree"], sac, cfg, out, progress=stop)
    assert sorted(p.name for p in (out / "checkpoint" / "noise-0").glob("round_*.npz")) == ["round_00.npz",
                                                                                            "round_01.npz"]
    assert sorted(p.name for p in (out / "checkpoint" / "noise-0.3").glob("round_*.npz")) == ["round_00.npz"]
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                           "--out", out, "--config", out / "config.json", "--resume", "--jobs", "2")
    assert code == 0, stderr  # the levels go on side by side: how many run at once is not a setting of the result
    # a log says which level each line is from, though the two levels' lines interleave
    assert "Restart 0 (DART 0): held-out return" in stderr and "Restart 0 (DART 0.3): held-out return" in stderr
    metrics = json.loads((out / "metrics.json").read_text())
    rows = metrics["noise_levels"]["rows"]
    assert [r["noise"] for r in rows] == [0.0, 0.3]
    assert metrics["noise_levels"]["kept"] == int(np.argmax([r["score"] for r in rows]))
    # both levels' rounds count, those before the stop included
    assert metrics["distill_seconds"] >= sum(r["seconds"] for r in metrics["dagger_history"])


@pytest.mark.parametrize(("name", "text", "line"), [
    ("bad.toml", "max_leaves = = 3\n", "is not valid: "),
    ("bad.yaml", "max_leaves: [3\n", "is not valid: "),
    ("bad.ini", "max_leaves = 3\n", ": use a .toml, .yaml or .json file."),
    ("list.yaml", "- 3\n", " must hold a table of settings."),
])
def test_unreadable_config_files_get_one_line(shared_teachers, tmp_path, name, text, line):
    cfg = tmp_path / name
    cfg.write_text(text)
    code, _, stderr = _run("distill", "tree", "--teacher", teacher_zip(shared_teachers, "sac", "Swimmer"),
                           "--out", tmp_path / "t", "--config", cfg)
    assert code == 1 and stderr.startswith(f"Error: Config file '{cfg}'") and line in stderr
    assert len(stderr.strip().splitlines()) == 1


@ON_THE_SWIMMER_TREE
def test_explain_a_controller_and_a_teacher(swimmer_tree, shared_teachers, tmp_path):
    """`interp-rl explain` on a controller folder (exact rule) and on a teacher zip (sampling): pictures in named
    features and the values as JSON, efficiency holding."""
    from interp_rl.attribution import Attribution

    code, stdout, stderr = _run("explain", "--policy", swimmer_tree, "--out", tmp_path / "tree", "--states", "50",
                                "--episodes", "1", "--background", "4")
    assert code == 0, stderr
    summary = json.loads((tmp_path / "tree" / "summary.json").read_text())
    assert summary["method"] == "tree-exact" and summary["exact"] and summary["n_states"] == 50
    assert summary["efficiency_gap"] < 1e-9
    assert summary["units"] == ["x150 N m", "x150 N m"]  # the values' unit, shown and explained on every picture
    names = set(summary["figures"])
    for view in ("importance", "timeline", "beeswarm_motor1_rot_torque", "waterfall_motor2_rot_torque"):
        assert {f"{view}.png", f"{view}.svg"} <= names
    assert "motor1_rot_torque" in stdout
    code, stdout, stderr = _run("explain", "--policy", teacher_zip(shared_teachers, "sac", "Swimmer"), "--out",
                                tmp_path / "teacher", "--states", "20", "--episodes", "1", "--background", "4",
                                "--budget", "256", "--method", "permutation")
    assert code == 0, stderr
    attr = Attribution.load(tmp_path / "teacher" / "attribution.json")
    assert attr.method == "permutation" and attr.values.shape == (20, 8, 2) and attr.efficiency_gap() < 1e-9
    assert attr.features[0] == "torso_yaw" and attr.units == ["x150 N m", "x150 N m"]
    code, _, stderr = _run("explain", "--policy", swimmer_tree, "--out", tmp_path / "x", "--method", "magic")
    assert code == 1 and stderr.strip().splitlines()[-1].startswith("Error: The '--method' option of interp-rl explain")


def test_distill_on_the_teachers_top_shapley_features(shared_teachers, tmp_path):
    """`--top-features 2`: the controller reads only the teacher's two most important features (by Shapley
    value), named in metrics.json, and its rules mention nothing else."""
    zip_ = teacher_zip(shared_teachers, "sac", "Swimmer")
    code, _, stderr = _run("distill", "linear", "--teacher", zip_, "--top-features", "2", "--iterations", "0",
                           "--steps", "1000", "--eval-episodes", "1", "--attribution-states", "0", "--out",
                           tmp_path / "lin")
    assert code == 0, stderr
    metrics = json.loads((tmp_path / "lin" / "metrics.json").read_text())
    subset = metrics["feature_subset"]
    assert subset["k"] == 2 and len(subset["ranking"]) == 8 and subset["features"] == subset["ranking"][:2]
    assert metrics["attribution_agreement"] is None
    rules = (tmp_path / "lin" / "rules.txt").read_text()
    others = set(subset["ranking"][2:])
    assert not any(re.search(rf"\*{name}\b", rules) for name in others)
    assert all(re.search(rf"\*{name}\b", rules) for name in subset["features"])
    code, _, stderr = _run("distill", "linear", "--teacher", zip_, "--top-features", "9", "--out", tmp_path / "x")
    assert code == 1 and stderr.strip().splitlines()[-1] == (
        "Error: --top-features 9 asks for more features than the teacher's 8.")
