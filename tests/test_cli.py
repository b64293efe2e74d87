"""The CLI: every command has help, output names features, bad input gets one exact line."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interp_rl.cli import app

runner = CliRunner()


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", [[], ["envs"], ["envs", "show"], ["train"], ["evaluate"]])
def test_every_command_has_help(command: list[str]) -> None:
    code, stdout, _ = _run(*command, "--help")
    assert code == 0 and "Usage:" in stdout


def test_envs_lists_every_task() -> None:
    code, stdout, _ = _run("envs")
    assert code == 0
    for task in ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Swimmer-v5", "Ant-v5", "Reacher-v5",
                 "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Humanoid-v5", "Pendulum-v1", "CartPole-v1",
                 "MountainCar-v0"):
        assert task in stdout


def test_envs_show_prints_the_named_feature_table() -> None:
    code, stdout, _ = _run("envs", "show", "Hopper-v5")
    assert code == 0
    assert "thigh_joint_angle" in stdout and "torso_vx" in stdout and "m/s" in stdout
    assert "foot_joint_torque" in stdout


def test_envs_show_json_matches_the_registry() -> None:
    code, stdout, _ = _run("envs", "show", "Ant-v5", "--layout", "v3", "--json")
    assert code == 0
    table = json.loads(stdout)
    assert len(table["observation"]) == 111 and len(table["action"]) == 8
    assert table["observation"][0] == {"index": 0, "name": "torso_z", "unit": "m",
                                       "description": "joint 'root' position"}


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["envs", "show", "Hoper-v5"],
         "Error: Unknown task 'Hoper-v5'. Did you mean 'Hopper-v5', 'Hopper-v4', 'Hopper-v3'? Known tasks: "
         "HalfCheetah-v5, Hopper-v5, Walker2d-v5, Swimmer-v5, Ant-v5, Reacher-v5, InvertedPendulum-v5, "
         "InvertedDoublePendulum-v5, Humanoid-v5, Pendulum-v1, CartPole-v1, MountainCar-v0, Acrobot-v1, LunarLander-v3."),
        (["envs", "show", "Walker2d-v5", "--layout", "v9"],
         "Error: The 'obs_layout' parameter of Walker2d-v5 must be one of default. Got 'v9' instead."),
        (["evaluate", "missing.zip"], "Error: Teacher file 'missing.zip' does not exist."),
        (["train", "--algo", "dqnx", "--env", "Hopper-v5", "--out", "unused"],
         "Error: Unknown algorithm 'dqnx'; expected one of sac, td3, ddpg, ppo, a2c, tqc, trpo, ars, dqn."),
        (["train", "--algo", "sac", "--env", "Hopper-v5", "--out", "unused", "--steps", "0"],
         "Error: The '--steps' option of interp-rl train must be an int in [1, inf). Got 0 instead."),
        (["train", "--algo", "sac", "--env", "Hopper-v99", "--out", "unused", "--steps", "5"],
         "Error: Unknown task 'Hopper-v99'. Did you mean 'Hopper-v5', 'Hopper-v4', 'Hopper-v3'? Known tasks: "
         "HalfCheetah-v5, Hopper-v5, Walker2d-v5, Swimmer-v5, Ant-v5, Reacher-v5, InvertedPendulum-v5, "
         "InvertedDoublePendulum-v5, Humanoid-v5, Pendulum-v1, CartPole-v1, MountainCar-v0, Acrobot-v1, LunarLander-v3."),
        (["train", "--algo", "sac", "--env", "Hopper-v5", "--out", "unused", "--hp", "oops"],
         "Error: --hp expects KEY=VALUE. Got 'oops' instead."),
        (["evaluate", "--algo", "sac", "--env", "Hopper-v3"],
         "Error: Name a teacher: a .zip, a zoo run folder, or -f FOLDER --algo --env."),
    ],
)
def test_bad_input_gets_one_exact_line(args: list[str], line: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = _run(*args)
    assert code == 1
    assert stderr.strip() == line
    assert "Traceback" not in stdout + stderr
    assert not (tmp_path / "unused").exists()


def test_corrupt_teacher_file(tmp_path: Path) -> None:
    bad = tmp_path / "Hopper-v3.zip"
    bad.write_bytes(b"not a zip at all")
    code, _, stderr = _run("evaluate", str(bad))
    assert code == 1
    assert stderr.strip() == (f"Error: '{bad}' is corrupt or not a zip file (File is not a zip file); "
                              "expected an SB3 model .zip.")
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("readme.txt", "hello")
    code, _, stderr = _run("evaluate", str(empty), "--env", "Hopper-v5")
    assert stderr.strip() == (f"Error: '{empty}' is not a Stable-Baselines3 model: the zip has no 'data' "
                              "and 'policy.pth' entries.")


def test_evaluate_mismatched_task(shared_teachers: Path) -> None:
    zip_path = shared_teachers / "sac" / "Hopper-v3_1" / "Hopper-v3.zip"
    code, _, stderr = _run("evaluate", str(zip_path), "--env", "HalfCheetah-v5")
    assert code == 1
    assert stderr.strip().splitlines()[-1] == (
        "Error: The teacher observes 11 features, but HalfCheetah-v5 gives 17; "
        "is it a teacher for another task?")


def test_evaluate_zoo_folder_prints_table_and_writes_json(shared_teachers: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    code, stdout, _ = _run("evaluate", "-f", str(shared_teachers), "--algo", "ppo", "--env", "Hopper-v3",
                           "--episodes", "2", "--seed", "4", "--json", str(out))
    assert code == 0
    assert "PPO teacher on Hopper-v5" in stdout and "mean" in stdout
    record = json.loads(out.read_text())
    assert record["seeds"] == [4, 5] and record["episodes"] == 2 and record["task"] == "Hopper-v5"
    assert record["mean_return"] == pytest.approx(2437, rel=0.05)
    assert record["extra"]["algo"] == "ppo" and "stable-baselines3" in record["extra"]["versions"]
    again = tmp_path / "again.json"
    _run("evaluate", "-f", str(shared_teachers), "--algo", "ppo", "--env", "Hopper-v3",
         "--episodes", "2", "--seed", "4", "--json", str(again))
    assert json.loads(again.read_text())["returns"] == record["returns"]


def _leaf_commands() -> list[tuple[list[str], object]]:
    import typer

    found, todo = [], [([], typer.main.get_command(app))]
    while todo:
        words, command = todo.pop()
        subs = getattr(command, "commands", None)
        if subs:
            todo.extend((words + [name], sub) for name, sub in subs.items())
        else:
            found.append((words, command))
    return sorted(found, key=lambda item: item[0])


_FOLDER_COMMANDS = [words for words, command in _leaf_commands()
                    if any(p.name == "out_dir" for p in command.params)]  # type: ignore[attr-defined]


def test_the_out_check_covers_the_commands_a_new_user_tried() -> None:
    for words in (["distill", "sindy"], ["distill", "moe"], ["explain"], ["dynamics", "fit"], ["report"],
                  ["bench"], ["train"], ["diagnose"], ["demo"], ["export"]):
        assert words in _FOLDER_COMMANDS


@pytest.mark.parametrize("words", _FOLDER_COMMANDS, ids=" ".join)
def test_out_naming_a_file_is_one_line_in_every_command(words: list[str], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    command = dict((tuple(w), c) for w, c in _leaf_commands())[tuple(words)]
    required = []
    for p in command.params:  # type: ignore[attr-defined]
        if p.required and p.name != "out_dir":
            required += ["unused"] if p.param_type_name == "argument" else [p.opts[0], "unused"]
    Path("notes.txt").write_text("mine\n")
    code, stdout, stderr = _run(*words, *required, "--out", "notes.txt")
    assert (code, stderr.strip()) == (1, "Error: --out 'notes.txt' is a file; name a folder (made if missing).")
    code, stdout, stderr = _run(*words, *required, "--out", "notes.txt/run")
    assert (code, stderr.strip()) == (
        1, "Error: --out 'notes.txt/run' lies inside 'notes.txt', which is a file; name a folder.")
    assert "Traceback" not in stdout + stderr
    assert Path("notes.txt").read_text() == "mine\n" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
