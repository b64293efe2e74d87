"""Upside-down RL (``envs.udrl``, ``interp-rl train --algo udrl``): it learns, it is deterministic, it resumes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from envs.udrl import UDRLConfig, train_udrl
from interp_rl.cli import app
from interp_rl.errors import InvalidParameterError
from interp_rl.export import load_python_controller, write_exports
from interp_rl.kinds.forest import ForestProgram
from interp_rl.program import load_controller

runner = CliRunner()
SMALL = {"n_trees": 5, "warmup_episodes": 10, "episodes_per_iter": 10, "buffer_episodes": 50, "top_episodes": 10,
         "eval_episodes": 2, "fit_samples": 5000}


def to_python_file(ctrl: Any, folder: Path) -> Path:
    return write_exports(ctrl, folder, formats=("python",))["python"]


def _curve(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in metrics["history"]]


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory: pytest.TempPathFactory) -> tuple[UDRLConfig, dict[str, Any]]:
    cfg = UDRLConfig(task="CartPole-v1", steps=4000, out=str(tmp_path_factory.mktemp("udrl") / "a"), seed=3, **SMALL)
    return cfg, train_udrl(cfg)


def test_udrl_forest_improves_over_the_random_warm_up(cartpole: tuple[UDRLConfig, dict[str, Any]]) -> None:
    cfg, m = cartpole
    warm = m["history"][0]
    assert warm["episodes"] == 10 and warm["eval_return"] is None
    assert m["steps"] >= 4000 and [r["step"] for r in m["history"]] == sorted(r["step"] for r in m["history"])
    # random CartPole episodes last about 22 steps; the greedy forest at the top-of-buffer command lasts longer
    assert warm["explore_return"] < 30
    assert m["eval"]["mean_return"] > 1.5 * warm["explore_return"]
    assert m["history"][-1]["explore_return"] > 1.5 * warm["explore_return"]
    ctrl = load_controller(Path(cfg.out))
    assert isinstance(ctrl.program, ForestProgram) and ctrl.program.n_trees == 5
    assert ctrl.feature_names == ["cart_position", "cart_velocity", "pole_angle", "pole_angular_velocity",
                                  "desired_return", "desired_horizon"]
    assert ctrl.metadata["command"] == m["command"] and m["command"]["desired_horizon"] > 30
    # the learned forest exports like any controller: the Python module gives predict's actions bit for bit
    rng = np.random.default_rng(0)
    X = np.hstack([rng.normal(size=(300, 4)) * 0.2, rng.uniform(0, 80, size=(300, 1)), rng.uniform(1, 80, (300, 1))])
    act = load_python_controller(to_python_file(ctrl, Path(cfg.out) / "export"))
    assert np.array([act(list(x)) for x in X]).tobytes() == ctrl.predict(X).tobytes()
    written = json.loads((Path(cfg.out) / "metrics.json").read_text())
    assert written["eval"] == m["eval"] and len(written["history"]) == len(m["history"])


def test_udrl_is_deterministic_and_resumes_to_the_same_run(cartpole: tuple[UDRLConfig, dict[str, Any]],
                                                           tmp_path: Path) -> None:
    cfg, m = cartpole
    again = train_udrl(replace(cfg, out=str(tmp_path / "b")))
    assert _curve(again) == _curve(m) and again["eval"] == m["eval"]
    assert load_controller(tmp_path / "b").program.to_dict() == load_controller(Path(cfg.out)).program.to_dict()

    class Stop(Exception):
        pass

    def stop_at_4(row: dict[str, Any]) -> None:
        if row["episodes"] >= 50:
            raise Stop

    cut = replace(cfg, out=str(tmp_path / "c"))
    with pytest.raises(Stop):
        train_udrl(cut, on_iteration=stop_at_4)
    resumed = train_udrl(cut, resume=True)
    assert _curve(resumed) == _curve(m) and resumed["eval"] == m["eval"]
    with pytest.raises(InvalidParameterError, match=r"--resume continues the run in .* with its own settings; "
                                                    r"n_trees differ\."):
        train_udrl(replace(cut, n_trees=6), resume=True)


def test_interp_rl_evaluate_plays_a_saved_forest_at_its_command(cartpole: tuple[UDRLConfig, dict[str, Any]],
                                                                 tmp_path: Path) -> None:
    """The CLI runs the controller in the task with its command appended and kept (``envs.udrl.CommandEnv``): on
    the final evaluation's seeds it gives train_udrl's own returns."""
    cfg, m = cartpole
    seed = 1_000_000 + cfg.seed * 1000  # train_udrl's final evaluation episodes
    res = runner.invoke(app, ["evaluate", cfg.out, "--episodes", str(m["eval"]["episodes"]), "--seed", str(seed),
                              "--json", str(tmp_path / "e.json")])
    assert res.exit_code == 0, res.output
    played = json.loads((tmp_path / "e.json").read_text())
    assert played["returns"] == m["eval"]["returns"] and played["task"] == "CartPole-v1"


def test_interp_rl_distill_reads_a_saved_forest_as_one_small_tree(cartpole: tuple[UDRLConfig, dict[str, Any]],
                                                                  tmp_path: Path) -> None:
    """A saved controller is a teacher (``envs.controllers.ControllerTeacher``): DAgger distils the forest into one
    tree that reads the same inputs, is labelled with the forest's classes, and plays at the forest's command."""
    from envs.controllers import ControllerTeacher
    from envs.loading import load_teacher
    from interp_rl.errors import TeacherLoadError

    cfg, m = cartpole
    small = ["--max-leaves", "4", "--leaf-model", "constant", "--iterations", "1", "--steps", "500", "--rl-steps", "0",
             "--noise-levels", "", "--restarts", "1", "--eval-episodes", "2", "--attribution-states", "0"]
    res = runner.invoke(app, ["distill", "tree", "--teacher", cfg.out, "--out", str(tmp_path / "t"), *small])
    assert res.exit_code == 0, res.output
    assert "distilled from a forest controller on CartPole-v1" in res.output
    forest, tree = load_controller(Path(cfg.out)), load_controller(tmp_path / "t")
    assert tree.kind == "tree" and tree.size()["leaves"] <= 4
    assert tree.feature_names == forest.feature_names and tree.metadata["command"] == forest.metadata["command"]
    assert tree.metadata["teacher"]["algo"] == "forest" and tree.metadata["teacher"]["source"] == cfg.out
    # the rows DAgger fitted are labelled with the class the forest plays (one-hot, ties to the first class)
    data = np.load(tmp_path / "t" / "distillation.npz")
    scores = forest.predict(data["observations"])
    assert np.array_equal(data["actions"], np.eye(2)[np.argmax(scores, axis=1)])
    teacher = ControllerTeacher(forest)
    assert teacher.discrete and not teacher.has_q and np.array_equal(teacher.action_scores(data["observations"]),
                                                                       scores)
    # the tree plays in the forest's environment: the command appended to its observations
    res = runner.invoke(app, ["evaluate", str(tmp_path / "t"), "--episodes", "2", "--json", str(tmp_path / "e.json")])
    assert res.exit_code == 0, res.output
    assert len(json.loads((tmp_path / "e.json").read_text())["returns"]) == 2
    res = runner.invoke(app, ["distill", "tree", "--teacher", cfg.out, "--out", str(tmp_path / "u"), "--algo", "ppo"])
    assert res.exit_code != 0 and "--algo is about SB3 agents" in res.output
    with pytest.raises(TeacherLoadError, match="is a saved controller, not an SB3 agent"):
        load_teacher(cfg.out)


def test_the_cli_trains_a_single_tree_and_checks_its_options(tmp_path: Path) -> None:
    out = tmp_path / "tree"
    res = runner.invoke(app, ["train", "--algo", "udrl", "--estimator", "tree", "--env", "CartPole-v1", "--steps",
                              "600", "--out", str(out), "--seed", "1", "--eval-episodes", "1",
                              "--hp", "top_episodes=5", "--hp", "max_depth=4"])
    assert res.exit_code == 0, res.output
    assert "Evaluation at the command desired_return = " in res.output
    ctrl = load_controller(out)
    assert ctrl.program.n_trees == 1 and ctrl.program.size()["depth"] <= 4
    assert json.loads((out / "train_config.json").read_text())["estimator"] == "tree"
    res = runner.invoke(app, ["train", "--algo", "udrl", "--env", "CartPole-v1", "--out", str(out), "--hp", "lr=1"])
    assert res.exit_code != 0 and "--hp lr is not a setting of --algo udrl; its settings: action_noise, " in res.output
    res = runner.invoke(app, ["train", "--algo", "ppo", "--estimator", "forest", "--env", "CartPole-v1", "--out",
                              str(out)])
    assert res.exit_code != 0 and "--estimator chooses the behaviour function of --algo udrl" in res.output
    res = runner.invoke(app, ["train", "--algo", "udrl", "--estimator", "svm", "--env", "CartPole-v1", "--out",
                              str(out)])
    assert res.exit_code != 0 and "Training UDRL" not in res.output
    assert ("The '--estimator' option of interp-rl train must be one of 'forest', 'extra-trees', 'tree', 'nn'. Got "
            "'svm' instead.") in res.output


@pytest.mark.parametrize("estimator", ["extra-trees", "nn"])
def test_other_estimators_run_on_a_tiny_budget(estimator: str, tmp_path: Path) -> None:
    cfg = UDRLConfig(task="CartPole-v1", steps=400, out=str(tmp_path), seed=0, estimator=estimator,
                     **{**SMALL, "eval_episodes": 1})
    m = train_udrl(cfg)
    assert np.isfinite(m["eval"]["mean_return"])
    assert (tmp_path / "controller.json").exists() == (estimator != "nn")
