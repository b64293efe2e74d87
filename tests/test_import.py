"""``interp-rl import``: sb3-contrib ARS linear agents become exact linear controllers.

Tiny ARS agents are trained on Pendulum-v1 (200-step episodes), with VecNormalize and a tanh squash (what
``interp-rl train --algo ars`` does, plus a bias) and without either (sb3-contrib's LinearPolicy defaults).

What "exact" means here, measured: the controller computes the agent's map in float64; the agent runs it in
float32 (its normalised observation rounded to float32, a float32 matrix product). So

* against the agent's own weights run in float64 (:class:`envs.importing.Float64Agent`) actions and returns are
  bit-identical without VecNormalize, and equal to the fold's rounding (1e-12 of the return) with it;
* against the SB3 agent itself actions agree to float32 rounding of the terms (about 1e-7) and returns to
  1e-6 of their size on 20 seeds, not bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import build_once
from typer.testing import CliRunner

from envs.importing import Float64Agent, check_import, controller_from_teacher, import_agent, linear_program_of
from envs.loading import load_teacher
from envs.sb3 import ObsNormalizer
from envs.training import TrainConfig, train_teacher
from interp_rl.errors import TeacherLoadError
from interp_rl.kinds.linear import LinearProgram
from interp_rl.program import load_controller

EPS32 = float(np.finfo(np.float32).eps)
AGENTS = {  # name: hyperparameter overrides of the ARS defaults (envs/hyperparams/ars.yml)
    "normalised_tanh": {"normalize": True, "policy_kwargs": {"with_bias": True, "squash_output": True}},
    "raw_clip": {"normalize": False},
    "mlp": {"normalize": False, "policy": "MlpPolicy", "policy_kwargs": {"net_arch": [4]}},
}


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The ARS agents, trained once for every worker (read-only)."""
    def train(root: Path) -> None:
        for name, hp in AGENTS.items():
            train_teacher(TrainConfig(algo="ars", task="Pendulum-v1", steps=3200, out=str(root / name), seed=0,
                                      eval_episodes=0, hyperparams=hp), progress_bar=False)

    root = build_once(tmp_path_factory, "ars-agents", train)
    return {name: root / name for name in AGENTS}


def _observations(teacher, n: int = 5000) -> np.ndarray:
    """Visited-like and wide observations: ``cos, sin`` on the circle, speeds over the task's range and beyond."""
    rng = np.random.default_rng(0)
    theta = rng.uniform(-np.pi, np.pi, n)
    return np.column_stack([np.cos(theta), np.sin(theta), rng.uniform(-10, 10, n)])


@pytest.mark.parametrize("name", ["normalised_tanh", "raw_clip"])
def test_imported_actions_are_the_agents_to_float32_rounding(agents: dict[str, Path], name: str) -> None:
    teacher = load_teacher(agents[name])
    ctrl = controller_from_teacher(teacher)
    prog = ctrl.program
    assert isinstance(prog, LinearProgram)
    assert prog.squash == ("tanh" if name == "normalised_tanh" else "clip")
    assert (teacher.normalizer is not None) == (name == "normalised_tanh")
    X = _observations(teacher)
    # float32 rounding: of the normalised observation, each product and each partial sum, then tanh and unscale
    W = teacher.model.policy.action_net[0].weight.detach().numpy().astype(np.float64)
    n = teacher.normalizer(X) if teacher.normalizer is not None else X
    terms = np.abs(n) @ np.abs(W).T + np.abs(prog.intercept if teacher.normalizer is None else 0.0)
    width = teacher.action_high - teacher.action_low
    tol = 8 * EPS32 * (terms * (width / 2 if prog.squash == "tanh" else 1.0) + width)
    gap = np.abs(teacher.predict(X) - ctrl.predict(X))
    assert np.all(gap <= tol), float((gap / tol).max())
    assert gap.max() > 0  # float32 against float64: not the same doubles (why returns differ in the last digits)
    reference = Float64Agent(teacher).predict(X)
    if teacher.normalizer is None:
        assert np.array_equal(ctrl.predict(X), reference)  # the same float64 arithmetic, term for term
    else:
        np.testing.assert_allclose(ctrl.predict(X), reference, rtol=0, atol=1e-12)  # the fold's rounding


@pytest.mark.parametrize("name", ["normalised_tanh", "raw_clip"])
def test_imported_returns_match_the_agent_on_20_seeds(agents: dict[str, Path], name: str) -> None:
    teacher = load_teacher(agents[name])
    check = check_import(controller_from_teacher(teacher), teacher, episodes=20, seed=0)
    agent, mine, wide = (np.array(r) for r in (check.agent_returns, check.controller_returns,
                                               check.float64_agent_returns))
    assert check.seeds == list(range(20)) and check.agent_states == 20 * 200
    np.testing.assert_allclose(mine, agent, rtol=1e-6, atol=0)
    if teacher.normalizer is None:
        assert np.array_equal(mine, wide)
    else:
        np.testing.assert_allclose(mine, wide, rtol=1e-12, atol=0)
    assert check.clip_binding_share == 0.0
    assert len(check.agent_one_by_one_returns) == 20 and check.max_agent_self_difference >= 0.0


def test_folding_vecnormalize_is_exact_where_the_clip_does_not_bind() -> None:
    rng = np.random.default_rng(1)
    W, b = rng.normal(size=(2, 3)), rng.normal(size=2)
    norm = ObsNormalizer(rng.normal(size=3), rng.uniform(0.1, 4, size=3), 5.0, 1e-8)
    prog = linear_program_of(W, b, normalizer=norm, low=np.full(2, -np.inf), high=np.full(2, np.inf), squash=False)
    X = norm.mean + rng.uniform(-4, 4, size=(1000, 3)) * np.sqrt(norm.var + norm.epsilon)  # inside +-5 sigma
    np.testing.assert_allclose(prog.predict(X), norm(X) @ W.T + b, rtol=1e-12, atol=1e-12)
    outside = norm.mean + 7 * np.sqrt(norm.var + norm.epsilon)
    assert not np.allclose(prog.predict(outside[None]), norm(outside[None]) @ W.T + b)  # the clip binds


def test_the_share_of_states_where_the_normalisation_clip_binds() -> None:
    from envs.importing import exact_domain, normalisation_clip_share

    norm = ObsNormalizer(np.array([0.0, 1.0]), np.array([1.0, 4.0]), 3.0, 0.0)
    X = np.array([[0.0, 1.0], [2.9, -4.9], [3.1, 1.0], [0.0, 7.5]])
    assert normalisation_clip_share(norm, X) == 0.5
    assert normalisation_clip_share(None, X) == 0.0
    lo, hi = exact_domain(norm, 2)
    assert lo.tolist() == [-3.0, -5.0] and hi.tolist() == [3.0, 7.0]


def test_non_linear_agents_are_refused_with_what_was_found(agents: dict[str, Path]) -> None:
    with pytest.raises(TeacherLoadError, match=r"^interp-rl import takes linear agents \(sb3-contrib ARS with "
                                               r"LinearPolicy\); found: ARS agent, ARSPolicy \(actor: Linear\(3, 4\), "
                                               r"ReLU, Linear\(4, 1\), Tanh\), which is not linear\.$"):
        import_agent(agents["mlp"])


def test_import_command_writes_a_controller_folder(agents: dict[str, Path], tmp_path: Path) -> None:
    from interp_rl.cli import app

    res = CliRunner().invoke(app, ["import", str(agents["normalised_tanh"]), "--out", str(tmp_path / "c"),
                                   "--episodes", "3"])
    assert res.exit_code == 0, res.output
    assert "z(torque [N m]) = " in res.output and "Wrote controller.json" in res.output
    folder = tmp_path / "c"
    assert {p.name for p in folder.iterdir()} >= {"controller.json", "controller.py", "controller.c",
                                                  "controller.onnx", "rules.txt", "import.json"}
    ctrl = load_controller(folder / "controller.json")
    data = json.loads((folder / "controller.json").read_text())
    assert data["program"]["squash"] == "tanh"
    teacher = ctrl.metadata["teacher"]
    assert teacher["algo"] == "ars" and len(teacher["sha256"]) == 64 and teacher["squash_output"] is True
    assert ctrl.metadata["import_check"]["episodes"] == 3
    assert np.array_equal(ctrl.predict(np.array([[1.0, 0.0, 0.5]])),
                          controller_from_teacher(load_teacher(agents["normalised_tanh"])).predict(
                              np.array([[1.0, 0.0, 0.5]])))
    assert json.loads((folder / "import.json").read_text())["episodes"] == 3
    assert np.all(np.array(ctrl.metadata["exact_domain"]["lower"]) < np.array(ctrl.metadata["exact_domain"]["upper"]))
    raw = CliRunner().invoke(app, ["import", str(agents["raw_clip"]), "--out", str(tmp_path / "r"), "--episodes", "1"])
    assert raw.exit_code == 0, raw.output
    text = (tmp_path / "r/controller.json").read_text()
    assert "Infinity" not in text and json.loads(text)["metadata"]["exact_domain"] is None  # exact everywhere
    bad = CliRunner().invoke(app, ["import", str(agents["mlp"]), "--out", str(tmp_path / "m")])
    assert bad.exit_code == 1
    assert bad.output.count("\n") == 1 and "which is not linear" in bad.output


def test_linear_json_without_squash_reads_as_clip() -> None:
    p = LinearProgram(intercept=[0.5], coef=[[1.0, 0.0]], action_low=[-1.0], action_high=[1.0])
    d = p.to_dict()
    assert "squash" not in d  # files written before the squash are unchanged
    assert LinearProgram.from_dict(d).squash == "clip"
    t = LinearProgram.from_dict({**d, "squash": "tanh"})
    assert t.predict(np.array([[0.5, 3.0]])).tolist() == [[np.tanh(1.0)]]
    with pytest.raises(Exception, match="every bound must be finite"):
        LinearProgram(intercept=[0.5], coef=[[1.0]], squash="tanh")
