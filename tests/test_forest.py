"""The ``forest`` kind: averaged constant-leaf trees reading an observation and a command (upside-down RL).

Its exports are checked bit for bit with every kind's in ``test_export.py`` and ``test_onnx.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

from interp_rl.errors import ControllerFormatError
from interp_rl.kinds.forest import COMMAND_FEATURES, ForestProgram, distill_tree, forest_from_sklearn
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import Controller, Signal, load_controller


def _stump(feature: int, t: float, a: float, b: float, obs_dim: int = 2) -> TreeProgram:
    return TreeProgram.from_leaves(feature=[feature, -1, -1], threshold=[t, 0, 0], left=[1, -1, -1],
                                   right=[2, -1, -1], intercept=[[0.0], [a], [b]], obs_dim=obs_dim)


@pytest.fixture(scope="module")
def fitted() -> tuple[Controller, np.ndarray, RandomForestRegressor]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 4))
    y = np.stack([X[:, 0] - X[:, 3] ** 2, (X[:, 1] > 0).astype(float)], axis=1)
    model = RandomForestRegressor(n_estimators=6, max_depth=5, random_state=0).fit(X, y)
    prog = forest_from_sklearn(model, action_low=[-2.0, -np.inf], action_high=[2.0, np.inf])
    features = [Signal("angle", "rad"), Signal("speed", "m/s"), *COMMAND_FEATURES]
    return Controller(prog, features, [Signal("force", "N"), Signal("push")], task="Toy-v0"), X, model


def test_known_answer_sum_in_order_then_divide() -> None:
    f = ForestProgram([_stump(0, 0.0, 1.0, 2.0), _stump(1, 0.0, 0.0, 4.0), _stump(0, 5.0, 0.5, 0.5)])
    X = np.array([[-1.0, -1.0], [0.0, 1.0], [1.0, 1.0]])
    assert f.predict(X).ravel().tolist() == [(1.0 + 0.0 + 0.5) / 3, (1.0 + 4.0 + 0.5) / 3, (2.0 + 4.0 + 0.5) / 3]
    assert f.size() == {"parameters": 9, "nonzero_terms": 0, "trees": 3, "leaves": 6, "depth": 1}


def test_sklearn_forests_convert_exactly(fitted: tuple[Controller, np.ndarray, RandomForestRegressor]) -> None:
    ctrl, X, model = fitted
    assert ctrl.program.raw_predict(X).tolist() == model.predict(X).tolist()
    extra = ExtraTreesRegressor(n_estimators=3, max_depth=3, random_state=1).fit(X, X[:, 0] * 2)
    assert forest_from_sklearn(extra).raw_predict(X).tolist() == extra.predict(X)[:, None].tolist()


def test_json_round_trip_gives_identical_actions(fitted: tuple[Controller, np.ndarray, RandomForestRegressor],
                                                 tmp_path: pytest.TempPathFactory) -> None:
    ctrl, X, _ = fitted
    path = ctrl.save(tmp_path / "controller.json")  # type: ignore[operator]
    back = load_controller(path)
    assert isinstance(back.program, ForestProgram) and back.feature_names[-2:] == ["desired_return", "desired_horizon"]
    Xw = X * 3
    assert back.predict(Xw).tobytes() == ctrl.predict(Xw).tobytes()
    assert json.loads(json.dumps(back.to_dict())) == json.loads(json.dumps(ctrl.to_dict()))


def test_malformed_forests_are_refused() -> None:
    with pytest.raises(ControllerFormatError, match="A forest needs at least one tree"):
        ForestProgram([])
    with pytest.raises(ControllerFormatError, match="Tree 2 reads 3 features and gives 1 actions; tree 1 reads 2"):
        ForestProgram([_stump(0, 0.0, 1.0, 2.0), _stump(0, 0.0, 1.0, 2.0, obs_dim=3)])
    linear = _stump(0, 0.0, 1.0, 2.0)
    linear = linear.replace(coef=np.where(np.arange(3)[:, None, None] == 2, 1.0, 0.0) * np.ones((3, 1, 2)))
    with pytest.raises(ControllerFormatError, match="Tree 1 of the forest has linear leaves"):
        ForestProgram([linear])
    with pytest.raises(ControllerFormatError, match="The forest program is malformed: KeyError"):
        ForestProgram.from_dict({"kind": "forest"})


def test_exact_shapley_values_sum_to_the_output(fitted: tuple[Controller, np.ndarray, RandomForestRegressor]) -> None:
    ctrl, X, _ = fitted
    prog = ctrl.program
    assert prog.exact_shapley
    w = np.full(60, 1 / 60)
    phi, base = prog.shapley_values(X[:20], X[100:160], w)
    assert phi.shape == (20, 4, 2)
    np.testing.assert_allclose(base + phi.sum(axis=1), prog.raw_predict(X[:20]), atol=1e-12)
    np.testing.assert_allclose(base, w @ prog.raw_predict(X[100:160]), atol=1e-12)


def test_explanations_name_the_command_and_draw_one_tree(
        fitted: tuple[Controller, np.ndarray, RandomForestRegressor]) -> None:
    ctrl, X, _ = fitted
    text = ctrl.program.explain(ctrl, max_depth=1, show_trees=1)
    lines = text.splitlines()
    assert lines[0].startswith("Forest of 6 trees (") and "every action is the mean of the trees' leaf values" in lines[0]
    assert lines[1] == "Inputs: angle [rad], speed [m/s], desired_return, desired_horizon [steps]"
    assert lines[2] == "Tree 1 of 6:" and lines[-2] == "... 5 more trees"
    assert lines[-1] == "actions are clipped to force [N] in [-2.000, 2.000]"
    why = ctrl.program.explain_decision(ctrl, X[0])
    assert why.count("tree ") == 6 and why.splitlines()[-2].startswith("→ mean of 6 trees: force [N] = ")
    dot = ctrl.program.to_dot(ctrl, tree=2, obs=X[0])
    assert dot.startswith("digraph") and "tree 2 of 6 (the forest's actions are the trees' mean)" in dot
    with pytest.raises(ValueError, match=r"The 'tree' parameter of to_dot must be an int in \[1, 6\]. Got 7"):
        ctrl.program.to_dot(ctrl, tree=7)
    assert ctrl.program.visit_summary(X).endswith("leaves visited (6 trees)")


def test_a_small_tree_distilled_from_the_forest_reads_like_it(
        fitted: tuple[Controller, np.ndarray, RandomForestRegressor]) -> None:
    ctrl, X, _ = fitted
    small = distill_tree(ctrl.program, X, max_depth=3, max_leaves=8)
    assert small.n_leaves <= 8 and small.depth <= 3
    assert small.action_low.tolist() == [-2.0, -np.inf]
    want, got = ctrl.program.raw_predict(X), small.raw_predict(X)
    # it explains most of the forest's variation on these states
    assert 1 - ((got - want) ** 2).sum(axis=0)[0] / ((want - want.mean(axis=0)) ** 2).sum(axis=0)[0] > 0.6
