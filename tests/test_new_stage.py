"""A new distillation stage is one new room: a stage and a method using it, defined here only.

Nothing outside this file changes. The stage (the tree refitted at smaller depths on DAgger's data,
the shallowest within a tolerance of the best held-out score kept) uses what the base gives every
stage: the distillation's data, held-out scoring on its own seeds, its own checkpoint folder and
resume, and progress lines. It runs from Python and through ``interp-rl distill``, and its record
lands in ``metrics.json`` under its name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone
from typer.testing import CliRunner

from distill import METHODS, DAgger, Distillation, Method, Option
from distill.events import StageNote
from distill.stages import STAGES, Stage, StageContext, StageResult, refit_like, register_stage
from distill.tree import TreePolicy
from envs import env_factory
from interp_rl.cli import app
from interp_rl.errors import InvalidParameterError
from interp_rl.program import load_controller

runner = CliRunner()
PENDULUM = env_factory("Pendulum-v1")


class BangBang:
    """Push with the swing: +2 when the angular velocity is positive, -2 otherwise (a teacher, no critic)."""

    task = "Pendulum-v1"
    obs_dim, act_dim = 3, 1
    action_low, action_high = np.array([-2.0]), np.array([2.0])
    env_fn = staticmethod(PENDULUM)
    has_q = has_value = False

    def predict(self, obs: np.ndarray) -> np.ndarray:
        return np.where(obs[:, 2:3] > 0.0, 2.0, -2.0)


class Shallower(Stage):
    """The tree refitted at each of ``depths`` on the distillation's data; the shallowest whose held-out score is
    within ``tolerance`` of the best kept. Each scored depth is kept in its checkpoint folder, so a resumed run
    scores no depth twice."""

    name = "shallower"
    per_level = True
    needs_data = True
    checkpoint_folder = "shallower"
    fits = 0  # depths scored (not read back), across instances: what a resume must not redo

    def __init__(self, depths: tuple[int, ...] = (1, 2), tolerance: float = 0.05, episodes: int = 2) -> None:
        self.depths = depths
        self.tolerance = tolerance
        self.episodes = episodes

    def fit(self, student: Any, context: StageContext) -> StageResult:
        X, y, w = context.data
        folder = context.checkpoint(self)
        state = folder / "scores.json" if folder is not None else None
        scores = json.loads(state.read_text()) if context.resume and state is not None and state.is_file() else {}
        rows, fits = [], []
        for depth in (*self.depths, student.get_params()["max_depth"]):
            fit = refit_like(clone(student).set_params(max_depth=depth), X, y, w, w is not None)
            if str(depth) not in scores:
                type(self).fits += 1
                scores[str(depth)] = self.held_out(fit, context, self.episodes, offset=40_000_000)[0]
                if state is not None:
                    state.parent.mkdir(parents=True, exist_ok=True)
                    state.write_text(json.dumps(scores))
            rows.append({"max_depth": depth, "score": scores[str(depth)]})
            fits.append(fit)
            self.say(context, f"depth {depth}: held-out score {scores[str(depth)]:.0f}")
        best = max(r["score"] for r in rows)
        kept = min((i for i, r in enumerate(rows) if r["score"] >= best - self.tolerance * abs(best)),
                   key=lambda i: rows[i]["max_depth"])
        return StageResult(student=fits[kept], record={"rows": rows, "kept_depth": rows[kept]["max_depth"]},
                           score=rows[kept]["score"])


@pytest.fixture
def shallower() -> Any:
    register_stage(Shallower)
    Shallower.fits = 0
    yield Shallower
    STAGES.pop("shallower")


def _estimator(**stage: Any) -> Distillation:
    tree = TreePolicy(leaf_model="constant", split_on="constant", max_leaves=None, max_depth=3)
    return Distillation(dagger=DAgger(tree, n_iter=1, steps=400, eval_episodes=1), stages=[Shallower(**stage)])


def test_a_stage_defined_here_runs_with_its_data_scores_checkpoint_and_progress(shallower: Any,
                                                                                 tmp_path: Path) -> None:
    events: list[Any] = []
    est = _estimator().fit(BangBang(), PENDULUM, checkpoint_dir=tmp_path / "ckpt", progress=events.append)
    record = est.stages_["shallower"]
    assert [r["max_depth"] for r in record["rows"]] == [1, 2, 3]
    # the teacher's rule is one split: depth 1 plays it, so it is kept (the shallowest within 5% of the best)
    assert record["kept_depth"] == 1 and est.student_.tree_.depth == 1
    assert record["seconds"] > 0  # timed by the base
    notes = [e for e in events if isinstance(e, StageNote)]
    assert [n.stage for n in notes] == ["shallower"] * 3 and notes[0].text.startswith("depth 1: held-out score")
    assert Shallower.fits == 3 and (tmp_path / "ckpt" / "shallower" / "scores.json").is_file()

    # resumed, the stage reads its scores back from its own folder: no depth is scored again, same result
    again = _estimator().fit(BangBang(), PENDULUM, checkpoint_dir=tmp_path / "ckpt", resume=True)
    assert Shallower.fits == 3 and again.stages_["shallower"] == {**record, "seconds": again.stages_[
        "shallower"]["seconds"]}


def test_a_stage_must_be_registered_and_named_apart(shallower: Any) -> None:
    STAGES.pop("shallower")
    with pytest.raises(InvalidParameterError, match="registered stages"):
        _estimator().fit(BangBang(), PENDULUM)
    register_stage(Shallower)
    with pytest.raises(ValueError, match="a stage named 'shallower' is registered already"):
        register_stage(type("Shallower2", (Shallower,), {}))
    with pytest.raises(ValueError, match="'rl' is a key metrics.json already uses|registered already"):
        register_stage(type("Tuned", (Shallower,), {"name": "rl"}))
    with pytest.raises(InvalidParameterError, match="distinct names"):
        Distillation(stages=[Shallower(), Shallower()]).fit(BangBang(), PENDULUM)


def test_a_method_with_the_stage_runs_through_the_cli(shallower: Any, monkeypatch: pytest.MonkeyPatch,
                                                      shared_teachers: Path, tmp_path: Path) -> None:
    method = Method(
        name="tree-shallower", description="a tree, then the shallowest good depth (a test's stage)", size="max_depth",
        make=lambda: Distillation(dagger=DAgger(TreePolicy(max_depth=3)), stages=[Shallower(depths=(1,))]),
        options=(Option("max_depth", ("dagger__student__max_depth",), "Deepest tree."),
                 Option("iterations", ("dagger__n_iter",), "DAgger rounds."),
                 Option("steps", ("dagger__steps",), "Steps a round."),
                 Option("select_episodes", ("dagger__eval_episodes",), "Episodes scoring each round."),
                 Option("seed", ("dagger__seed",), "Random seed.")),
    )
    monkeypatch.setitem(METHODS, method.name, method)
    out = tmp_path / "run"
    teacher = shared_teachers / "sac" / "Swimmer-v3_1" / "Swimmer-v3.zip"
    res = runner.invoke(app, ["distill", "tree-shallower", "--teacher", str(teacher), "--iterations", "1", "--steps",
                              "1000", "--select-episodes", "1", "--eval-episodes", "1", "--fidelity-steps", "100",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert [r["max_depth"] for r in metrics["shallower"]["rows"]] == [1, 3]
    assert metrics["shallower"]["kept_depth"] in (1, 3)
    assert load_controller(out).program.depth == metrics["shallower"]["kept_depth"]
