"""Learning from logged data: `interp-rl distill METHOD --data LOG` on CSV, Parquet and Minari logs, end to end, with
exact error lines.

The logs are made here: a building's thermal log under a known heating controller (interp_rl.datasets), a
continuous log of a known linear policy, and Minari datasets of a known CartPole rule and of Pendulum.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from distill.logged import N_BLOCKS, fit_from_log, split_log
from distill.methods import get_method
from interp_rl.cli import app
from interp_rl.datasets import BUILDING_SCHEMA, building_log, write_building_log
from interp_rl.errors import LogError
from interp_rl.export import load_python_controller
from interp_rl.logged_data import LoggedData, class_values, read_log
from interp_rl.program import Signal, load_controller

runner = CliRunner()
TREE = ["--max-leaves", "8", "--leaf-model", "constant"]
FOLDER = ["config.json", "controller.c", "controller.json", "controller.py", "distillation.npz", "metrics.json",
          "rules.txt", "tree.dot", "tree.svg"]  # what a distillation from a teacher writes too


def _run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The building log (14 days, seed 0) as CSV and as Parquet, each with its schema beside it."""
    root = tmp_path_factory.mktemp("logs")
    return {"csv": write_building_log(root / "building.csv", n_days=14, seed=0),
            "parquet": write_building_log(root / "parquet" / "building.parquet", n_days=14, seed=0)}


@pytest.fixture(scope="module")
def tree_from_csv(logs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    out = tmp_path_factory.mktemp("runs") / "tree"
    code, stdout, stderr = _run("distill", "tree", "--data", logs["csv"], *TREE, "--seed", "0", "--out", out)
    assert code == 0, stderr
    return out, stdout, stderr


# ------------------------------------------------------------------------------------------------ the building log
def test_the_building_log_is_reproducible_and_keeps_its_rules(tmp_path: Path) -> None:
    log = building_log(n_days=14, seed=0)
    pd.testing.assert_frame_equal(log, building_log(n_days=14, seed=0))
    assert not log.equals(building_log(n_days=14, seed=1))
    assert len(log) == 14 * 96 and list(log["day"].unique()) == list(range(14))
    assert np.diff(log["time_of_day"][:96]).tolist() == [0.25] * 95
    setpoint = log["heating_setpoint"]
    assert setpoint.dtype == np.int64 and setpoint.between(15, 22).all()
    assert set(log["occupancy"]) == {0, 1} and log.loc[log["day"] % 7 >= 5, "occupancy"].eq(0).all()  # weekends
    hot = (log["occupancy"] == 1) & (log["zone_temperature"] > 23.5)
    assert hot.sum() > 50 and setpoint[hot].le(20).all()  # never a higher setpoint in a warm occupied zone
    assert setpoint[log["occupancy"] == 0].le(18).all()
    data = read_log(write_building_log(tmp_path / "b.csv", n_days=2))
    assert [f.label for f in data.features] == [
        "time_of_day [h]", "outdoor_temperature [°C]", "humidity [%]", "wind_speed [m/s]", "solar_radiation [W/m²]",
        "occupancy", "zone_temperature [°C]"]
    assert data.discrete and data.task == "building-heating" and data.episode_column == "day"


# ------------------------------------------------------------------------------------------------ end to end, CSV
def test_a_tree_from_a_csv_log_writes_the_usual_folder_and_says_its_fidelity(
        tree_from_csv: tuple[Path, str, str], logs: dict[str, Path]) -> None:
    out, stdout, stderr = tree_from_csv
    assert sorted(p.name for p in out.iterdir()) == FOLDER
    lines = [line.split("] ", 1)[1] for line in stderr.splitlines()]
    assert lines[0] == f"Learning a tree controller from {logs['csv']} into {out}"
    assert lines[1].startswith("Fitting to ") and lines[1].endswith(" held out)")
    assert "held-out accuracy (heating_setpoint class)" in stdout
    assert "Held-out rows by logged (down) and played (across) heating_setpoint [°C]" in stdout
    assert stdout.strip().splitlines()[-1] == (f"Wrote controller.json, distillation.npz, controller.py, controller.c, "
                                               f"rules.txt, tree.svg, metrics.json and config.json to {out}.")
    metrics = json.loads((out / "metrics.json").read_text())
    held = metrics["fidelity_held_out"]
    assert metrics["learnt_from"] == "log" and metrics["discrete"] and metrics["leaves"] <= 8
    assert held["accuracy"] >= 0.93 and held["majority_accuracy"] <= 0.5  # well above always playing one class
    assert held["mean_abs_error"] <= 0.1 and metrics["fidelity_train"]["accuracy"] >= 0.93
    # The confusion matrix: logged class (rows) by played class (columns), every held-out row counted once.
    cm = held["confusion_matrix"]
    counts = np.array(cm["counts"])
    assert cm["classes"] == list(range(15, 23)) and counts.shape == (8, 8)
    assert counts.sum() == held["rows"] == metrics["split"]["held_out_rows"]
    assert np.trace(counts) / counts.sum() == pytest.approx(held["accuracy"])
    # Whole held-out days, about a fifth of the log, drawn with the seed.
    split = metrics["split"]
    assert split["unit"] == "episode" and split["column"] == "day"
    assert split["held_out_rows"] == 96 * len(split["held_out_units"]) and len(split["held_out_units"]) == 3
    assert sorted(split["held_out_units"] + split["train_units"]) == list(range(14))


def test_the_controller_plays_whole_degree_setpoints_and_learnt_the_rules(tree_from_csv: tuple[Path, str, str],
                                                                          logs: dict[str, Path]) -> None:
    out, *_ = tree_from_csv
    ctrl = load_controller(out)
    log = building_log(n_days=14, seed=0)
    X = log[[f.name for f in ctrl.features]].to_numpy(dtype=float)
    played = class_values(ctrl, X)
    assert played.dtype.kind == "i" and set(played) <= set(range(15, 23))
    metrics = json.loads((out / "metrics.json").read_text())
    held = log["day"].isin(metrics["split"]["held_out_units"]).to_numpy()
    assert np.mean(played[held] == log["heating_setpoint"][held]) == metrics["fidelity_held_out"]["accuracy"]
    # The rules of the controller that made the log (time, outdoor, humidity, wind, sun, occupied, zone):
    states = [[10, 5.0, 70, 3, 100, 1, 21.0], [10, -3.0, 80, 3, 100, 1, 21.0], [12, 5.0, 70, 3, 500, 1, 24.5],
              [2, -3.0, 80, 3, 0, 0, 16.0], [2, 4.0, 80, 3, 0, 0, 16.0], [2, 10.0, 80, 3, 0, 0, 16.0]]
    assert class_values(ctrl, np.array(states)).tolist() == [21, 22, 20, 17, 16, 15]
    assert int(class_values(ctrl, states[2])) == 20
    # Named features and actions with units, the classes, and where it was learnt from.
    assert ctrl.task == "building-heating" and ctrl.features[1].label == "outdoor_temperature [°C]"
    assert [a.name for a in ctrl.actions] == [f"heating_setpoint={c}" for c in range(15, 23)]
    assert ctrl.actions[6].description == "class 6: heating_setpoint = 21 °C"
    assert ctrl.metadata["classes"]["values"] == list(range(15, 23))
    prov = ctrl.metadata["log"]
    assert prov["path"] == str(logs["csv"]) and prov["format"] == "csv" and prov["rows"] == 14 * 96
    assert prov["sha256"] == hashlib.sha256(logs["csv"].read_bytes()).hexdigest()
    assert prov["schema_sha256"] == hashlib.sha256(BUILDING_SCHEMA.encode()).hexdigest()
    assert ctrl.metadata["settings"]["max_leaves"] == 8 and ctrl.metadata["settings"]["seed"] == 0
    assert ctrl.metadata["metrics"]["held_out_accuracy"] == metrics["fidelity_held_out"]["accuracy"]
    config = json.loads((out / "config.json").read_text())
    assert config["learnt_from"] == "log" and config["held_out"] == 0.2 and "iterations" not in config["settings"]
    # The export acts as the controller does; the rules say which class the scores play.
    act = load_python_controller(out / "controller.py")
    np.testing.assert_array_equal(np.array([act(list(x)) for x in X[:50]]), ctrl.predict(X[:50]))
    note = ("The controller plays heating_setpoint [°C] = the class with the highest score (15, 16, 17, 18, 19, 20, "
            "21 or 22; ties: the first).")
    rules = (out / "rules.txt").read_text().splitlines()
    assert rules[-1] == note
    # each constant leaf names the setpoint it plays (never its eight scores), the runner-up only where close
    leaves = [line for line in rules if "--- leaf " in line]
    assert len(leaves) == 8 and not any("[score]" in line for line in rules)
    assert all(re.search(r"leaf \d: heating_setpoint = (1[5-9]|2[0-2]) °C( \(.*\))?   \(", line) for line in leaves)
    played = [int(re.search(r"heating_setpoint = (\d+) °C", line).group(1)) for line in leaves]
    assert set(class_values(ctrl, X).tolist()) <= set(played)
    # the exports play the class too: play(obs) is the class of the highest score, as class_values
    module = {}
    exec((out / "controller.py").read_text(), module)
    assert [module["play"](list(x)) for x in X[:200]] == class_values(ctrl, X[:200]).tolist()
    assert "# leaf 1 of 8: plays heating_setpoint = " in (out / "controller.py").read_text()
    with np.load(out / "distillation.npz", allow_pickle=False) as evidence:
        assert evidence["observations"].shape == (metrics["split"]["train_rows"], 7)


def _raised_when_warmer(ctrl, X: np.ndarray) -> tuple[int, int]:
    """States where an occupied zone above 23.5 °C gets a higher setpoint 1 °C warmer, and such states."""
    zone, occupancy = ctrl.feature_names.index("zone_temperature"), ctrl.feature_names.index("occupancy")
    warmer = X.copy()
    warmer[:, zone] += 1.0
    warm = (X[:, occupancy] == 1) & (X[:, zone] > 23.5)
    return int((warm & (class_values(ctrl, warmer) > class_values(ctrl, X))).sum()), int(warm.sum())


def test_the_tutorial_s_rule_check(tree_from_csv: tuple[Path, str, str], logs: dict[str, Path],
                                   tmp_path: Path) -> None:
    """docs/tutorials/logs.md: the 8-leaf tree raises the setpoint of a few warm occupied states (a narrow leaf just
    above 23.5 °C learnt the manual overrides); 6 leaves keep the rule at the same held-out accuracy."""
    eight = load_controller(tree_from_csv[0])
    X = building_log(n_days=14, seed=0)[eight.feature_names].to_numpy(dtype=float)
    raised, warm = _raised_when_warmer(eight, X)
    assert 0 < raised <= 5 and warm > 50
    assert class_values(eight, np.array([[12, 5.0, 70, 3, 400, 1, z] for z in (23.6, 23.8)])).tolist() == [19, 20]
    six = fit_from_log(get_method("tree"), read_log(logs["csv"]), {"max_leaves": 6, "leaf_model": "constant"},
                       tmp_path / "six")
    assert _raised_when_warmer(load_controller(tmp_path / "six"), X) == (0, warm)
    eight_metrics = json.loads((tree_from_csv[0] / "metrics.json").read_text())
    assert six["fidelity_held_out"]["accuracy"] == eight_metrics["fidelity_held_out"]["accuracy"]


def test_inspect_and_export_commands_take_the_controller(tree_from_csv: tuple[Path, str, str],
                                                         tmp_path: Path) -> None:
    out, *_ = tree_from_csv
    code, stdout, stderr = _run("viz", out, "--text")
    assert code == 0, stderr
    assert stdout.splitlines()[-1].startswith("The controller plays heating_setpoint [°C] = the class")
    code, stdout, stderr = _run("viz", out, "--obs", "12,5,70,3,500,1,24.5", "--out", tmp_path / "tree.dot")
    assert code == 0, stderr
    assert "zone_temperature = 24.5 °C > " in stdout and "  plays heating_setpoint = 20 °C" in stdout
    assert "[score]" not in (tmp_path / "tree.dot").read_text() and "heating_setpoint = 20 °C" in (
        tmp_path / "tree.dot").read_text()
    code, _, stderr = _run("export", out, "--format", "c", "--out", tmp_path / "fw")
    assert code == 0, stderr
    c_src = (tmp_path / "fw" / "controller.c").read_text()
    assert "obs[6] = zone_temperature [°C]" in c_src and "double play(const double *obs)" in c_src
    if shutil.which("gcc"):  # the C play() gives the class the controller plays
        X = building_log(n_days=2, seed=3)[load_controller(out).feature_names].to_numpy(dtype=float)
        driver = tmp_path / "fw" / "main.c"
        driver.write_text('#include <stdio.h>\ndouble play(const double *obs);\nint main(void) {\n'
                          '  double obs[7]; int i;\n  while (scanf("%lf", &obs[0]) == 1) {\n'
                          '    for (i = 1; i < 7; ++i) if (scanf("%lf", &obs[i]) != 1) return 1;\n'
                          '    printf("%g\\n", play(obs));\n  }\n  return 0;\n}\n')
        exe = tmp_path / "fw" / "play"
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(driver), str(tmp_path / "fw" / "controller.c")], check=True)
        done = subprocess.run([str(exe)], input="\n".join(" ".join(repr(float(v)) for v in x) for x in X), text=True,
                              capture_output=True, check=True)
        assert [int(float(v)) for v in done.stdout.split()] == class_values(load_controller(out), X).tolist()
    code, _, stderr = _run("evaluate", out)
    assert code == 1
    assert stderr.strip().startswith(f"Error: The controller was learnt from the log '{out.parent.parent}")
    assert "which is no task interp-rl can simulate" in stderr


# ------------------------------------------------------------------------------------------------ Parquet, seeds
def test_parquet_gives_the_controller_csv_gives_and_a_seed_the_same_controller(
        tree_from_csv: tuple[Path, str, str], logs: dict[str, Path], tmp_path: Path) -> None:
    code, _, stderr = _run("distill", "tree", "--data", logs["parquet"], *TREE, "--seed", "0", "--out", tmp_path / "pq")
    assert code == 0, stderr
    from_csv, from_parquet = load_controller(tree_from_csv[0]), load_controller(tmp_path / "pq")
    assert from_parquet.program.to_dict() == from_csv.program.to_dict()
    assert from_parquet.metadata["log"]["format"] == "parquet"
    assert from_parquet.metadata["log"]["sha256"] == hashlib.sha256(logs["parquet"].read_bytes()).hexdigest()
    # The same command twice: the same controller.json, byte for byte.
    code, _, stderr = _run("distill", "tree", "--data", logs["csv"], *TREE, "--seed", "0", "--out", tmp_path / "again")
    assert code == 0, stderr
    assert (tmp_path / "again" / "controller.json").read_bytes() == (tree_from_csv[0] / "controller.json").read_bytes()
    # Another seed holds out other days.
    code, _, stderr = _run("distill", "tree", "--data", logs["csv"], *TREE, "--seed", "1", "--out", tmp_path / "s1")
    assert code == 0, stderr
    held = [json.loads((p / "metrics.json").read_text())["split"]["held_out_units"]
            for p in (tree_from_csv[0], tmp_path / "s1")]
    assert held[0] != held[1]


def test_parquet_without_pyarrow_is_one_line(logs: dict[str, Path], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    code, _, stderr = _run("distill", "tree", "--data", logs["parquet"], "--out", tmp_path / "t")
    assert code == 1 and stderr.strip() == (
        f"Error: Reading the Parquet log '{logs['parquet']}' needs pyarrow: pip install 'interp-rl[logs]'.")


# ------------------------------------------------------------------------------------------------ every method
@pytest.mark.parametrize(("method", "settings"), [
    ("tree", {"max_leaves": 8, "leaf_model": "constant"}),
    ("linear", {}),
    ("moe", {"experts": 4, "train_steps": 300}),
    ("sindy", {"library": "poly1"}),
])
def test_every_method_learns_from_a_log(method: str, settings: dict, logs: dict[str, Path], tmp_path: Path) -> None:
    data = read_log(logs["csv"])
    metrics = fit_from_log(get_method(method), data, settings, tmp_path / method)
    held = metrics["fidelity_held_out"]
    assert held["accuracy"] > held["majority_accuracy"] + 0.3, held
    ctrl = load_controller(tmp_path / method)
    assert set(class_values(ctrl, data.X)) <= set(range(15, 23))
    assert (tmp_path / method / "metrics.json").is_file() and (tmp_path / method / "controller.c").is_file()


def test_a_continuous_log_recovers_a_linear_policy_and_says_r2(tmp_path: Path) -> None:
    """A log of u = 0.5 + 2 x0 - 1.5 x2 (x1 unused), no episode column: held out as contiguous blocks of rows."""
    rng = np.random.default_rng(0)
    X = np.cumsum(rng.normal(0, 0.1, size=(1000, 3)), axis=0)
    u = 0.5 + 2.0 * X[:, 0] - 1.5 * X[:, 2] + rng.normal(0, 0.01, size=1000)
    pd.DataFrame({"level": X[:, 0], "flow": X[:, 1], "pressure": X[:, 2], "valve": u}).to_csv(
        tmp_path / "valve.csv", index=False)
    (tmp_path / "valve.schema.toml").write_text(
        '[features]\nlevel = { unit = "m" }\nflow = { unit = "m3/h" }\npressure = { unit = "bar" }\n'
        '[actions]\nvalve = { unit = "%", low = -100.0, high = 100.0 }\n')
    out = tmp_path / "lin"
    code, stdout, stderr = _run("distill", "linear", "--data", tmp_path / "valve.csv", "--max-terms", "2",
                                "--held-out", "0.25", "--out", out)
    assert code == 0, stderr
    assert "held-out R² (valve)" in stdout and "held-out RMSE (valve)" in stdout and "blocks of rows" in stdout
    metrics = json.loads((out / "metrics.json").read_text())
    held = metrics["fidelity_held_out"]
    assert held["r2_per_action"]["valve"] > 0.999 and held["rmse_per_action"]["valve"] < 0.02
    assert held["r2"] == held["r2_per_action"]["valve"] and not metrics["discrete"]
    split = metrics["split"]
    assert split["unit"] == "block" and len(split["held_out_units"]) + len(split["train_units"]) == N_BLOCKS
    assert split["held_out_rows"] == 250 and [1, 50] in split["held_out_units"] + split["train_units"]
    ctrl = load_controller(out)
    np.testing.assert_allclose(ctrl.program.coef[0], [2.0, 0.0, -1.5], atol=0.01)
    assert ctrl.program.action_low.tolist() == [-100.0] and ctrl.actions[0].label == "valve [%]"
    assert "classes" not in ctrl.metadata and (out / "rules.txt").read_text().startswith("valve [%] = ")


def test_the_split_holds_out_whole_episodes_near_the_share_asked_for() -> None:
    data = LoggedData(X=np.zeros((100, 1)), y=np.zeros((100, 1)), features=[Signal("x")], actions=[Signal("u")],
                      episodes=np.repeat(np.arange(10), 10))
    for seed in range(5):
        split = split_log(data, 0.3, seed)
        assert len(split.held_out) == 30 and len(split.train) == 70
        assert not set(data.episodes[split.held_out]) & set(data.episodes[split.train])
    assert split_log(data, 0.01, 0).held_out.size == 10  # at least one episode out
    assert split_log(data, 0.99, 0).train.size == 10  # and one in
    blocks = split_log(LoggedData(X=np.zeros((7, 1)), y=np.zeros((7, 1)), features=[Signal("x")],
                                  actions=[Signal("u")]), 0.3, 0)
    assert blocks.unit == "block" and len(blocks.held_out) == 2  # a short log: one row per block


# ------------------------------------------------------------------------------------------------ with an environment
def _pendulum_log(folder: Path) -> Path:
    """A CSV log of a linear torque law on Pendulum-v1 (5 episodes), with its schema."""
    import envs

    rows = []
    for ep in range(5):
        env = envs.make_env("Pendulum-v1", seed=ep)
        obs, _ = env.reset(seed=ep)
        for _ in range(200):
            torque = 0.3 - 1.0 * obs[1] - 0.2 * obs[2]
            rows.append((ep, *obs, torque))
            obs, *_ = env.step(np.array([torque]))
    pd.DataFrame(rows, columns=["episode", "cos", "sin", "speed", "torque"]).to_csv(folder / "pend.csv", index=False)
    (folder / "pend.schema.toml").write_text(
        'episode = "episode"\n[features]\ncos_theta = { column = "cos" }\nsin_theta = { column = "sin" }\n'
        'theta_dot = { column = "speed", unit = "rad/s" }\n[actions]\ntorque = { unit = "N m", low = -2.0, high = 2.0 }\n')
    return folder / "pend.csv"


def test_with_env_the_return_is_measured_too(tmp_path: Path) -> None:
    from envs import env_factory
    from interp_rl.rollouts import evaluate

    out = tmp_path / "lin"
    code, stdout, stderr = _run("distill", "linear", "--data", _pendulum_log(tmp_path), "--env", "Pendulum-v1",
                                "--eval-episodes", "3", "--seed", "2", "--out", out)
    assert code == 0, stderr
    assert "return on Pendulum-v1 (3 episodes)" in stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["fidelity_held_out"]["r2"] > 0.999
    ctrl = load_controller(out)
    assert ctrl.task == "Pendulum-v1" and ctrl.feature_names == ["cos_theta", "sin_theta", "theta_dot"]
    again = evaluate(ctrl, env_factory("Pendulum-v1"), 3, seed=2)
    assert again.returns == metrics["student_returns"] and metrics["episodes"] == 3
    code, stdout, stderr = _run("evaluate", out, "--episodes", "3", "--seed", "2")  # a task it can run on: it runs
    assert code == 0, stderr


def _cartpole_dataset(dataset_id: str, episodes: int) -> None:
    """A Minari dataset (Arrow format) of a CartPole rule: push right when pole_angle + 0.3 pole_angular_velocity > 0.

    Built from buffers (``minari.create_dataset_from_buffers``): minari's DataCollector needs jax, which
    ``pip install minari`` does not bring; the dataset is the same format either way.
    """
    import gymnasium as gym
    import minari
    from minari.data_collector import EpisodeBuffer

    env = gym.make("CartPole-v1")
    buffers = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=ep)
        o, a, r, te, tr = [obs], [], [], [], []
        while True:
            act = int(obs[2] + 0.3 * obs[3] > 0)
            obs, rew, term, trunc, _ = env.step(act)
            o.append(obs), a.append(act), r.append(rew), te.append(term), tr.append(trunc)
            if term or trunc:
                break
        buffers.append(EpisodeBuffer(id=ep, observations=np.array(o), actions=np.array(a), rewards=np.array(r),
                                     terminations=np.array(te), truncations=np.array(tr)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # minari asks for an author, a description, ...
        minari.create_dataset_from_buffers(dataset_id, buffers, env=env, algorithm_name="rule", data_format="arrow")


def test_a_minari_dataset_with_env_names_the_task_s_features_and_measures_the_return(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _cartpole_dataset("rule/cartpole-v0", episodes=6)
    out = tmp_path / "tree"
    code, stdout, stderr = _run("distill", "tree", "--data", "rule/cartpole-v0", "--env", "CartPole-v1",
                                *TREE, "--eval-episodes", "3",
                                "--out", out)
    assert code == 0, stderr
    assert "the log's own episodes (6)" in stdout and "held out: episode " in stdout
    metrics = json.loads((out / "metrics.json").read_text())
    held = metrics["fidelity_held_out"]
    assert held["accuracy"] >= 0.95 and held["majority_accuracy"] <= 0.6  # the rule's classes are balanced
    assert metrics["student_return"] >= 400 and metrics["logged_return"] == 500.0  # the rule balances throughout
    assert metrics["log"]["format"] == "minari" and metrics["log"]["dataset_id"] == "rule/cartpole-v0"
    ctrl = load_controller(out)
    assert ctrl.action_names == ["push_left", "push_right"] and ctrl.feature_names[2] == "pole_angle"
    assert ctrl.metadata["classes"]["values"] == [0, 1]
    # The dataset's folder reads the same; without --env the names are the dataset's own.
    data = read_log(tmp_path / "minari" / "rule" / "cartpole-v0")
    assert data.task == "CartPole-v1" and data.features[0].name == "obs_0" and not data.named
    assert data.source["sha256"] == ctrl.metadata["log"]["sha256"] and data.episodes.max() == 5


def test_a_continuous_minari_dataset_takes_a_schema_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("minari")
    import minari
    from minari.data_collector import EpisodeBuffer

    import envs

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    buffers = []
    for ep in range(4):
        env = envs.make_env("Pendulum-v1", seed=ep)
        obs, _ = env.reset(seed=ep)
        o, a, r = [obs], [], []
        for _ in range(50):
            torque = np.clip([-1.0 * obs[1] - 0.2 * obs[2]], -2.0, 2.0)
            obs, rew, *_ = env.step(torque)
            o.append(obs), a.append(torque), r.append(rew)
        buffers.append(EpisodeBuffer(id=ep, observations=np.array(o), actions=np.array(a), rewards=np.array(r),
                                     terminations=np.zeros(50, bool), truncations=np.r_[np.zeros(49, bool), True]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minari.create_dataset_from_buffers("lin/pendulum-v0", buffers, env=env, data_format="arrow")
    schema = {"features": {"cos_theta": {}, "sin_theta": {}, "theta_dot": {"unit": "rad/s"}},
              "actions": {"torque": {"unit": "N m"}}}
    data = read_log("lin/pendulum-v0", schema)
    assert data.named and [f.label for f in data.features] == ["cos_theta", "sin_theta", "theta_dot [rad/s]"]
    assert data.n_rows == 200 and not data.discrete and data.episodes.tolist() == np.repeat(np.arange(4), 50).tolist()
    assert data.action_low.tolist() == [-2.0] and data.action_high.tolist() == [2.0]  # the dataset's action space
    assert data.episode_returns.shape == (4,) and data.source["schema"] is None  # given as a dict
    metrics = fit_from_log(get_method("linear"), data, {}, tmp_path / "lin")
    assert metrics["fidelity_held_out"]["r2"] > 0.999
    with pytest.raises(LogError, match=r"^The schema names 2 features and 1 action\(s\); the Minari dataset "
                                       r"'lin/pendulum-v0' has 3 and 1\.$"):
        read_log("lin/pendulum-v0", {"features": {"a": {}, "b": {}}, "actions": {"torque": {}}})
    with pytest.raises(LogError, match=r"^The schema says the action is discrete; the Minari dataset"):
        read_log("lin/pendulum-v0", {**schema, "actions": {"torque": {"discrete": True}}})


def test_a_minari_dataset_that_is_not_here_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "none"))
    code, _, stderr = _run("distill", "tree", "--data", "D4RL/door/human-v2", "--out", tmp_path / "t")
    assert code == 1 and stderr.strip() == (
        "Error: No local Minari dataset 'D4RL/door/human-v2' (local: none); interp-rl never downloads: "
        "'minari download D4RL/door/human-v2' fetches it.")
    (tmp_path / "folder").mkdir()
    code, _, stderr = _run("distill", "tree", "--data", tmp_path / "folder", "--out", tmp_path / "t")
    assert code == 1 and stderr.strip() == (
        f"Error: '{tmp_path / 'folder'}' is a folder but not a Minari dataset (no metadata.json in it or in its data "
        "folder).")


# ------------------------------------------------------------------------------------------------ errors
def _frame() -> pd.DataFrame:
    return building_log(n_days=3, seed=0)


def _log(folder: Path, frame: pd.DataFrame, name: str = "b.csv", schema: str | None = BUILDING_SCHEMA) -> Path:
    path = folder / name
    frame.to_csv(path, index=False)
    if schema is not None:
        path.with_name(path.stem + ".schema.toml").write_text(schema, encoding="utf-8")
    return path


def _with(frame: pd.DataFrame, row: int, column: str, value: object) -> pd.DataFrame:
    frame = frame.astype({column: object})
    frame.loc[row, column] = value
    return frame


@pytest.mark.parametrize(("make", "line"), [
    (lambda d: d / "nope.csv", "Error: Log file 'D/nope.csv' does not exist."),
    (lambda d: _log(d, _frame(), "b.json"), "Error: Log 'D/b.json': use a .csv or .parquet file, or a Minari dataset "
                                            "(its folder, or its id)."),
    (lambda d: _log(d, _frame(), schema=None),
     "Error: No schema for 'D/b.csv': write 'b.schema.toml' beside it naming its feature and action columns, or give "
     "one (--schema FILE). Its columns: day, time_of_day, outdoor_temperature, humidity, wind_speed, solar_radiation, "
     "occupancy, zone_temperature, heating_setpoint."),
    (lambda d: _log(d, _frame().rename(columns={"zone_temperature": "zone_temp"})),
     "Error: The schema 'D/b.schema.toml' names column 'zone_temperature', which 'D/b.csv' does not have; its "
     "columns: day, time_of_day, outdoor_temperature, humidity, wind_speed, solar_radiation, occupancy, zone_temp, "
     "heating_setpoint."),
    (lambda d: _log(d, _with(_frame(), 41, "humidity", None)),
     "Error: 'D/b.csv' has no value in column 'humidity' at data row 42; every feature and action needs a number in "
     "every row (drop or fill such rows first)."),
    (lambda d: _log(d, _with(_frame(), 6, "occupancy", "yes")),
     "Error: Column 'occupancy' of 'D/b.csv' is not numeric: data row 7 holds 'yes'. Features and actions must be "
     "numbers (encode categories as numbers first)."),
    (lambda d: _log(d, _frame().iloc[:0]), "Error: 'D/b.csv' holds no rows."),
    (lambda d: _log(d, _with(_frame(), 9, "heating_setpoint", 20.5)),
     "Error: Column 'heating_setpoint' of 'D/b.csv' is a discrete action but holds 20.5 at data row 10; a discrete "
     "action's values are whole numbers (classes such as setpoints in whole degrees). Drop 'discrete = true' from the "
     "schema for a continuous action."),
    (lambda d: _log(d, _frame(), schema=BUILDING_SCHEMA.replace("unit = \"h\"", "units = \"h\"")),
     "Error: In the schema 'D/b.schema.toml', feature 'time_of_day' has an unknown key 'units'; known: unit, "
     "description, column."),
    (lambda d: _log(d, _frame(), schema=BUILDING_SCHEMA + "humidity = { unit = \"%\" }\n"),
     "Error: In the schema 'D/b.schema.toml', column 'humidity' is named twice (as feature 'humidity' and as action "
     "'humidity'); a column is a feature or an action, once."),
    (lambda d: _log(d, _frame(), schema="[features\n"),
     "Error: Schema file 'D/b.schema.toml' is not valid TOML: Expected ']' at the end of a table declaration (at line "
     "1, column 10)"),
    (lambda d: _log(d, _frame(), schema=BUILDING_SCHEMA + "valve = { unit = \"%\" }\n"),
     "Error: In the schema 'D/b.schema.toml', the discrete action 'heating_setpoint' comes with other actions (valve): "
     "a log's actions are continuous columns, or one discrete column."),
    (lambda d: _log(d, _frame()[lambda f: f["day"] == 0]),
     "Error: The log holds one episode ('day' is 0 throughout); holding part of it out takes at least two or drop "
     "'episode' from the schema to hold out blocks of rows."),
])
def test_a_bad_log_is_one_line_and_writes_nothing(tmp_path: Path, make, line: str) -> None:
    code, _, stderr = _run("distill", "tree", "--data", make(tmp_path), "--out", tmp_path / "out")
    assert code == 1
    assert stderr.strip() == line.replace("'D/", f"'{tmp_path}/")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("args", "line"), [
    (["--teacher", "sac.zip"], "Error: Give --teacher (an agent to distil) or --data (a log to learn from), not both."),
    (["--iterations", "3", "--steps", "100"],
     "Error: --iterations, --steps do not apply when learning from a log (no teacher to ask, no environment to roll "
     "out); interp-rl distill tree takes --max-leaves, --max-depth, --leaf-model, --max-leaf-terms, --split-on, "
     "--seed, --collapse-atol, --eval-episodes."),
    (["--resume"], "Error: --resume does not apply with --data: it is about distilling a teacher."),
    (["--held-out", "1.5"],
     "Error: The '--held-out' option of interp-rl distill tree must be a share of the rows in (0, 1). Got 1.5 instead."),
    (["--max-leaves", "1"],
     "Error: The '--max-leaves' option of interp-rl distill tree must be an int in [2, inf). Got 1 instead."),
    (["--env", "Pendulum-v1"], "Error: The log has 7 features, but Pendulum-v1 observes 3; is the log from another task?"),
    (["--schema", "nope.toml"], "Error: Schema file 'nope.toml' does not exist."),
])
def test_bad_options_with_data_are_one_line(logs: dict[str, Path], tmp_path: Path, args: list[str], line: str) -> None:
    code, _, stderr = _run("distill", "tree", "--data", logs["csv"], "--out", tmp_path / "out", *args)
    assert (code, stderr.strip()) == (1, line)
    assert not (tmp_path / "out").exists()


def test_what_cannot_learn_from_a_log_says_so(logs: dict[str, Path], tmp_path: Path) -> None:
    code, _, stderr = _run("distill", "silver", "--data", logs["csv"], "--out", tmp_path / "s")
    assert (code, stderr.strip()) == (1, "Error: Method 'silver' reads a teacher's own scores; it cannot learn from a "
                                         "log (tree, linear, moe and sindy can).")
    code, _, stderr = _run("distill", "tree", "--out", tmp_path / "t")
    assert (code, stderr.strip()) == (1, "Error: Give --teacher (an agent to distil) or --data (a log to learn from).")
    code, _, stderr = _run("distill", "tree", "--teacher", "x.zip", "--held-out", "0.3", "--out", tmp_path / "t")
    assert (code, stderr.strip()) == (1, "Error: --held-out goes with --data (a log to learn from).")
    code, _, _ = _run("distill", "tree", "--data", logs["csv"], *TREE, "--out", tmp_path / "done")
    assert code == 0
    code, _, stderr = _run("distill", "tree", "--data", logs["csv"], "--out", tmp_path / "done")
    assert (code, stderr.strip()) == (1, f"Error: '{tmp_path / 'done'}' already holds a distilled controller; choose "
                                         "another --out.")
    with pytest.raises(LogError, match="^In the schema, 'task' must be a string"):
        read_log(logs["csv"], {"task": 3, "features": {"day": {}}, "actions": {"heating_setpoint": {}}})


def test_distill_help_names_the_log_options() -> None:
    code, stdout, _ = _run("distill", "tree", "--help")
    assert code == 0
    for flag in ("--data", "--schema", "--held-out"):
        assert flag in stdout


def test_an_interrupted_log_run_is_started_again_by_the_same_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from interp_rl.cli._app import _rerun_command

    monkeypatch.setattr(sys, "argv", ["interp-rl", "distill", "moe", "--data", "b.csv", "--out", "runs/b"])
    assert _rerun_command(True) == "interp-rl distill moe --data b.csv --out runs/b"  # no --resume: it is refused
    monkeypatch.setattr(sys, "argv", ["interp-rl", "distill", "moe", "--teacher", "t.zip", "--out", "runs/t"])
    assert _rerun_command(True) == "interp-rl distill moe --teacher t.zip --out runs/t --resume"
