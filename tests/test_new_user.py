"""What a new user hit: each item has a test (exact one-line errors, controllers run from the CLI, ...)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interp_rl.cli import app
from interp_rl.kinds.linear import LinearProgram
from interp_rl.program import Controller, Signal
from interp_rl.rollouts import evaluate

runner = CliRunner()


def _pendulum_controller(folder: Path) -> Controller:
    """A hand-written linear balance controller for InvertedPendulum-v5, saved in ``folder``."""
    prog = LinearProgram(intercept=[0.0], coef=[[1.0, 5.0, 0.5, 1.0]], action_low=[-3.0], action_high=[3.0])
    ctrl = Controller(prog, [Signal(n) for n in ("x", "theta", "vx", "omega")], [Signal("force")],
                      task="InvertedPendulum-v5")
    folder.mkdir(parents=True, exist_ok=True)
    ctrl.save(folder / "controller.json")
    return ctrl


def test_version() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == "interp-rl 0.1.0"


@pytest.mark.parametrize(("hp", "line"), [
    ("learning_rat=0.1", "Error: SAC does not accept the hyperparameters (learning_rat=0.1): SAC.__init__() got "
                         "an unexpected keyword argument 'learning_rat'"),
    ("learning_rate=abc", "Error: SAC does not accept the hyperparameters (learning_rate='abc'): The learning rate "
                          "schedule must be a float or a callable, not abc"),
])
def test_bad_hyperparameters_are_one_line_and_leave_no_folder(tmp_path: Path, hp: str, line: str) -> None:
    out = tmp_path / "run"
    res = runner.invoke(app, ["train", "--algo", "sac", "--env", "InvertedPendulum-v5", "--steps", "100",
                              "--hp", hp, "--out", str(out)])
    assert res.exit_code == 1
    assert res.output.strip() == line
    assert not out.exists()


def test_export_refuses_to_overwrite_a_users_file_unless_forced(tmp_path: Path) -> None:
    _pendulum_controller(tmp_path / "ctrl")
    mine = tmp_path / "fw" / "controller.c"
    mine.parent.mkdir()
    mine.write_text("/* my own firmware */\n")
    res = runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--format", "c", "--out", str(mine.parent)])
    assert res.exit_code == 1
    assert res.output.strip() == (f"Error: {str(mine)!r} exists and was not written by interp-rl; choose another "
                                  "folder or pass --force (force=True) to overwrite it.")
    assert mine.read_text() == "/* my own firmware */\n"
    again = runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--format", "c", "--out", str(mine.parent)])
    assert again.exit_code == 1  # still the user's file
    forced = runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--format", "c", "--out", str(mine.parent),
                                 "--force"])
    assert forced.exit_code == 0 and "exported by interp-rl" in mine.read_text()
    # an earlier export of ours is replaced without --force
    assert runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--out", str(mine.parent)]).exit_code == 0
    res = runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--out", str(mine)])
    assert res.exit_code == 1 and res.output.strip() == f"Error: --out {str(mine)!r} is a file; name a folder (made if missing)."


def test_a_controller_runs_from_the_cli_with_the_returns_python_gives(tmp_path: Path) -> None:
    ctrl = _pendulum_controller(tmp_path / "ctrl")
    from envs import env_factory

    expect = evaluate(ctrl, env_factory("InvertedPendulum-v5"), 3, seed=4)
    res = runner.invoke(app, ["evaluate", str(tmp_path / "ctrl"), "--episodes", "3", "--seed", "4",
                              "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    import json

    assert json.loads((tmp_path / "r.json").read_text())["returns"] == expect.returns
    assert f"{expect.mean_return:.1f}" in res.output and "worst" in res.output


@pytest.mark.parametrize(("args", "line"), [
    (["explain", "--policy", "CTRL", "--out", "shap", "--states", "0"],
     "Error: The '--states' option of interp-rl explain must be an int in [1, inf). Got 0 instead."),
    (["evaluate", "CTRL", "--episodes", "0"],
     "Error: The '--episodes' option of interp-rl evaluate must be an int in [1, inf). Got 0 instead."),
])
def test_errors_name_the_option_as_typed(args: list[str], line: str, tmp_path: Path) -> None:
    _pendulum_controller(tmp_path / "ctrl")
    res = runner.invoke(app, [str(tmp_path / "ctrl") if a == "CTRL" else a for a in args])
    assert (res.exit_code, res.stderr.strip()) == (1, line)


def test_viz_writes_dot_without_graphviz_and_linear_text(tmp_path: Path) -> None:
    _pendulum_controller(tmp_path / "ctrl")
    res = runner.invoke(app, ["viz", str(tmp_path / "ctrl"), "--text", "--out", str(tmp_path / "p.dot"),
                              "--obs", "0,0.1,0,0"])
    assert res.exit_code == 0, res.output
    assert "force = 1.000*x + 5.000*theta + 0.500*vx + 1.000*omega" in res.output
    assert "= 0 + 1*(0) + 5*(0.1) + 0.5*(0) + 1*(0) = 0.5" in res.output
    assert (tmp_path / "p.dot").read_text().startswith("digraph controller {")
    res = runner.invoke(app, ["viz", str(tmp_path / "ctrl"), "--text"])  # the text, and no picture beside it
    assert res.exit_code == 0 and res.output == (
        "force = 1.000*x + 5.000*theta + 0.500*vx + 1.000*omega\nactions are clipped to force in [-3.000, 3.000]\n")
    assert sorted(p.name for p in (tmp_path / "ctrl").iterdir()) == ["controller.json"]


def test_viz_text_says_what_a_scaled_action_unit_means() -> None:
    """`[x200 N m]` next to a MuJoCo torque is explained under the rules, as under the pictures."""
    cell = Path(__file__).resolve().parents[1] / "benchmarks/results/recipe/cells/Hopper-SAC__moe-8__seed0"
    res = runner.invoke(app, ["viz", str(cell), "--text"])
    assert res.exit_code == 0, res.output
    assert "thigh_joint_torque [x200 N m] = " in res.output
    assert res.output.splitlines()[-1] == "[x200 N m]: an action of 1 is 200 N m (the motor multiplies it by its gear)."


def test_piped_output_keeps_long_lines_whole(tmp_path: Path) -> None:
    _pendulum_controller(tmp_path / "ctrl")
    run = subprocess.run([sys.executable, "-c", "from interp_rl.cli import main; main()", "viz",
                          str(tmp_path / "ctrl"), "--text", "--out", str(tmp_path / "p.dot")],
                         capture_output=True, text=True, check=True)
    assert "force = 1.000*x + 5.000*theta + 0.500*vx + 1.000*omega" in run.stdout.splitlines()
    assert f"Wrote {tmp_path / 'p.dot'}" in run.stdout.splitlines()


def test_sigterm_stops_distill_with_exit_130_and_the_resume_line(shared_teachers: Path, tmp_path: Path) -> None:
    zip_path = shared_teachers / "sac" / "Swimmer-v3_1" / "Swimmer-v3.zip"
    out = tmp_path / "run"
    cmd = [sys.executable, "-c", "import sys; sys.argv[0] = 'interp-rl'; from interp_rl.cli import main; main()",
           "distill", "tree", "--teacher", str(zip_path), "--max-leaves", "4", "--iterations", "30",
           "--steps", "2000", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.time() + 120
    while time.time() < deadline and not list((out / "checkpoint").rglob("round_*.npz")):  # a DART level's folder
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("Error: Distillation interrupted; ") and "completed round(s) are kept in" in last
    assert last.endswith(f"To continue: interp-rl distill tree --teacher {zip_path} --max-leaves 4 --iterations 30 "
                         f"--steps 2000 --out {out} --resume")


@pytest.mark.parametrize("name", ["envs", "distill", "benchmarks"])
def test_a_pypi_namesake_of_our_packages_is_named_at_import(name: str, tmp_path: Path) -> None:
    """PyPI has its own 'envs' and 'benchmarks': one first on the path is named, not a traceback far away."""
    import os

    fake = tmp_path / name
    fake.mkdir()
    (fake / "__init__.py").write_text("# someone else's package\n")
    here = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), here])}
    run = subprocess.run([sys.executable, "-c", "import interp_rl"], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        f"ImportError: interp-rl's '{name}' package resolves to '{fake / '__init__.py'}', which is not "
        f"interp-rl's: another distribution that ships a '{name}' package shadows or overwrote it. Uninstall that "
        "one (pip show -f names the files of each) and reinstall interp-rl, or install interp-rl in a virtual "
        "environment of its own.")


def test_a_plain_folder_named_like_our_package_in_the_working_directory_is_named(tmp_path: Path) -> None:
    """A results copy (`benchmarks/results/...`) in the current directory hides our package: said so, plainly."""
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    run = subprocess.run([sys.executable, "-c", "import interp_rl"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        f"ImportError: interp-rl's 'benchmarks' package resolves to the folder '{tmp_path / 'benchmarks'}', which "
        "has no __init__.py: a folder named 'benchmarks' in the current directory (or another entry of sys.path) "
        "hides interp-rl's. Run from another directory, or rename that folder.")
