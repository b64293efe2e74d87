"""A new kind of controller is one new room: a toy program kind and a toy method, defined here only.

Nothing outside this file changes; the toy goes through ``interp-rl distill``, the JSON round
trip, the Python and C exports (bit for bit against ``predict``), ``viz --text``, and a one-cell
``bench`` and ``report``.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from typer.testing import CliRunner

from distill import METHODS, DAgger, Distillation, Method, Option
from interp_rl import _codegen as cg
from interp_rl.cli import app
from interp_rl.errors import ControllerFormatError
from interp_rl.export import compile_c, load_c_controller, load_python_controller
from interp_rl.program import PROGRAMS, Controller, ProgramBase, load_controller, register_program

runner = CliRunner()


class SwitchProgram(ProgramBase):
    """Toy kind: every action is ``low_k`` if ``obs[feature] <= threshold`` else ``high_k`` (then clipped)."""

    kind = "switch"

    def __init__(self, feature: int, threshold: float, low: Any, high: Any, obs_dim: int,
                 action_low: Any = None, action_high: Any = None) -> None:
        self.feature, self.threshold, self._obs_dim = int(feature), float(threshold), int(obs_dim)
        self.low, self.high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        if not 0 <= self.feature < self._obs_dim:
            raise ControllerFormatError(f"feature {self.feature} is outside [0, {self._obs_dim}).")
        self._init_bounds(action_low, action_high, len(self.low))

    @property
    def obs_dim(self) -> int:
        return self._obs_dim

    @property
    def act_dim(self) -> int:
        return len(self.low)

    def raw_predict(self, X: np.ndarray) -> np.ndarray:
        return np.where((X[:, self.feature] <= self.threshold)[:, None], self.low, self.high)

    def size(self) -> dict[str, int]:
        return {"parameters": 1 + 2 * self.act_dim, "nonzero_terms": 0}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "obs_dim": self.obs_dim, "feature": self.feature, "threshold": self.threshold,
                "low": self.low.tolist(), "high": self.high.tolist(), **self._bounds_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SwitchProgram:
        return cls(d["feature"], d["threshold"], d["low"], d["high"], d["obs_dim"],
                   [float(v) for v in d["action_low"]], [float(v) for v in d["action_high"]])

    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
        f = controller.features[self.feature].label
        lines = [f"if {f} <= {cg.fixed(self.threshold, precision)}:"]
        lines += [f"    {a.label} = {cg.fixed(v, precision)}" for a, v in zip(controller.actions, self.low, strict=True)]
        lines.append("else:")
        lines += [f"    {a.label} = {cg.fixed(v, precision)}" for a, v in zip(controller.actions, self.high, strict=True)]
        return "\n".join(lines)

    def _body(self, python: bool) -> list[str]:
        test = f"obs[{self.feature}] <= {cg.lit(self.threshold)}"
        low = [f"    y{k} = {cg.lit(v)}" + ("" if python else ";") for k, v in enumerate(self.low)]
        high = [f"    y{k} = {cg.lit(v)}" + ("" if python else ";") for k, v in enumerate(self.high)]
        if python:
            return [f"if {test}:", *low, "else:", *high]
        return [f"if ({test}) {{", *low, "} else {", *high, "}"]

    def python_body(self, controller: Controller) -> list[str]:
        return self._body(python=True)

    def c_body(self, controller: Controller) -> list[str]:
        return self._body(python=False)


class SwitchPolicy(RegressorMixin, BaseEstimator):
    """Toy student: splits ``feature`` at its weighted median; each side acts as its mean action."""

    def __init__(self, *, feature: int = 0, action_low: Any = None, action_high: Any = None) -> None:
        self.feature = feature
        self.action_low = action_low
        self.action_high = action_high

    def _validate_params(self) -> None:
        from interp_rl.validation import check_int

        check_int(self.feature, "feature", "SwitchPolicy", low=0)

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: Any = None) -> SwitchPolicy:
        self._validate_params()
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        t = float(np.median(X[:, self.feature]))
        left = X[:, self.feature] <= t
        self.program_ = SwitchProgram(self.feature, t, y[left].mean(axis=0), y[~left].mean(axis=0), X.shape[1],
                                      self.action_low, self.action_high)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.program_.predict(np.asarray(X, dtype=np.float64))

    def to_controller(self, features: Any = None, actions: Any = None, *, task: str = "",
                      metadata: dict[str, Any] | None = None) -> Controller:
        return Controller(self.program_, list(features or []), list(actions or []), task, dict(metadata or {}))


TOY = Method(
    name="switch",
    description="toy: one switch on one feature",
    size="feature",
    make=lambda: Distillation(dagger=DAgger(SwitchPolicy())),
    options=(
        Option("feature", ("dagger__student__feature",), "The feature switched on."),
        Option("iterations", ("dagger__n_iter",), "DAgger rounds."),
        Option("steps", ("dagger__steps",), "Steps per round."),
        Option("select_episodes", ("dagger__eval_episodes",), "Episodes scoring each round."),
        Option("seed", ("dagger__seed",), "Random seed."),
    ),
)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Method:
    monkeypatch.setitem(PROGRAMS, "switch", SwitchProgram)
    monkeypatch.setitem(METHODS, "switch", TOY)
    return TOY


def test_registering_takes_the_kind_and_refuses_a_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROGRAMS, "tree", PROGRAMS["tree"])
    with pytest.raises(TypeError, match="Program kind 'tree' is taken by TreeProgram"):
        register_program(type("TreeProgram2", (SwitchProgram,), {"kind": "tree"}))


def test_toy_kind_and_method_run_everywhere(toy: Method, teachers: Any, shared_teachers: Path,
                                             tmp_path: Path, single_torch_thread: None) -> None:
    # distil from the CLI, like a shipped method
    out = tmp_path / "run"
    teacher = shared_teachers / "sac" / "Swimmer-v3_1" / "Swimmer-v3.zip"
    res = runner.invoke(app, ["distill", "switch", "--teacher", str(teacher), "--feature", "0", "--iterations",
                              "1", "--steps", "2000", "--select-episodes", "1", "--eval-episodes", "1",
                              "--fidelity-steps", "100", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Switch controller distilled from SAC on Swimmer-v5" in res.output
    assert json.loads((out / "config.json").read_text())["params"]["dagger__student__feature"] == 0
    assert "switch" in runner.invoke(app, ["distill", "--help"]).output

    # JSON round trip: identical actions
    ctrl = load_controller(out)
    assert isinstance(ctrl.program, SwitchProgram)
    obs = np.random.default_rng(0).normal(size=(200, ctrl.program.obs_dim)) * 2
    obs[:5, 0] = ctrl.program.threshold  # ties go left, in every runtime
    expect = ctrl.predict(obs)
    assert np.array_equal(Controller.from_dict(json.loads(json.dumps(ctrl.to_dict()))).predict(obs), expect)

    # the exports the job wrote reproduce predict bit for bit
    act_py = load_python_controller(out / "controller.py")
    assert all(act_py(list(o)) == list(e) for o, e in zip(obs, expect, strict=True))
    if shutil.which("gcc") or shutil.which("cc"):
        act_c = load_c_controller(compile_c(out / "controller.c", tmp_path / "c"))
        got = np.array([act_c(list(o)) for o in obs])
        assert got.tobytes() == expect.tobytes()

    # viz --text: the kind's own explanation in named features
    res = runner.invoke(app, ["viz", str(out), "--text", "--out", str(tmp_path / "switch.dot")])
    assert res.exit_code == 0, res.output
    assert f"if {ctrl.features[0].label} <= " in res.output
    assert (tmp_path / "switch.dot").read_text().startswith("digraph")

    # one cell of a suite, then the report
    suite = tmp_path / "toy.toml"
    suite.write_text('name = "toy"\nseeds = [0]\nepisodes = 2\nfidelity_steps = 100\nlatency_batch = 16\n'
                     '[[teachers]]\nname = "Swimmer-SAC"\npath = "sac/Swimmer-v3_1/Swimmer-v3.zip"\n'
                     '[methods.switch]\nsizes = [1]\nsettings = { iterations = 0, steps = 2000, '
                     'select_episodes = 1 }\n[targets]\npercent = 1\nparameters = 10\n')
    results = tmp_path / "results"
    res = runner.invoke(app, ["bench", "--suite", str(suite), "--out", str(results), "--workers", "1",
                              "--executor", "inline", "--teachers", str(shared_teachers)])
    assert res.exit_code == 0, res.output
    record = json.loads((results / "records" / "Swimmer-SAC__switch-1__seed0.json").read_text())
    assert record["kind"] == "switch" and record["size"]["parameters"] == 5
    assert math.isfinite(record["percent_of_teacher"])
    res = runner.invoke(app, ["report", str(results)])
    assert res.exit_code == 0, res.output
    report = (results / "report.md").read_text()
    assert "| switch | 1 |" in report and "Chosen switch controller" in report
    # the kind-specific parts come from the kind: its text's title, its verdicts against the suite's targets
    assert "**The switch controller**" in report and "5 parameters" in report and "## Targets" in report
