"""P-ReLU networks: a ReLU network converted exactly into its activation regions (the ``oblique`` kind).

The conversion agrees bit for bit with the network's float64 forward pass on 10,000 random states of the
domain box, every leaf's polyhedron is non-empty by a linear program, each state lies in the region of the
leaf that acts, and the kind goes through JSON, the Python and C exports, the text and the picture.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import teacher_zip
from typer.testing import CliRunner

from distill.prelu import PReLUPolicy, network_forward, parse_hidden, to_oblique
from interp_rl.cli import app
from interp_rl.errors import ControllerFormatError, InvalidParameterError
from interp_rl.export import compile_c, load_c_controller, load_python_controller, write_exports
from interp_rl.kinds.oblique import ObliqueProgram
from interp_rl.program import Controller, Signal, load_controller
from interp_rl.verify.lp import maximise

runner = CliRunner()
CC = shutil.which("gcc") or shutil.which("cc")


def _network(seed: int, sizes: list[int], d: int, k: int = 2) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    dims = [d, *sizes, k]
    return [(rng.normal(size=(b, a)) / np.sqrt(a), rng.normal(size=b) * 0.3)
            for a, b in zip(dims[:-1], dims[1:], strict=True)]


CASES = [(0, [3], 2), (1, [6], 4), (2, [4, 3], 3), (3, [3, 3, 3], 3), (4, [5, 5], 5)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"seed{c[0]}-{'x'.join(map(str, c[1]))}-d{c[2]}")
def converted(request: pytest.FixtureRequest) -> tuple[list, np.ndarray, np.ndarray, ObliqueProgram]:
    seed, sizes, d = request.param
    layers = _network(seed, sizes, d)
    lo, hi = -2.0 * np.ones(d), np.linspace(1.0, 3.0, d)
    return layers, lo, hi, to_oblique(layers, lo, hi, action_low=[-1.0, -np.inf], action_high=[1.0, np.inf])


def test_conversion_agrees_bit_for_bit_with_the_network_on_10000_states(converted) -> None:
    layers, lo, hi, prog = converted
    X = np.random.default_rng(7).uniform(lo, hi, size=(10_000, len(lo)))
    assert prog.raw_predict(X).tobytes() == network_forward(layers, X).tobytes()
    assert prog.predict(X).tobytes() == prog.clip(network_forward(layers, X)).tobytes()


def test_no_region_is_empty_and_each_state_lies_in_its_leafs_region(converted) -> None:
    layers, lo, hi, prog = converted
    regions = prog.regions()
    assert len(regions) == prog.size()["regions"] == prog.size()["leaves"] >= 2
    for r in regions:  # every leaf's polyhedron has a state of the domain box (an LP each)
        assert maximise(np.zeros(len(lo)), 0.0, lo, hi, r.A, r.b).status != "empty", r.label
    X = np.random.default_rng(8).uniform(lo, hi, size=(2000, len(lo)))
    by_piece = {r.piece: r for r in regions}
    leaf = prog.apply(X)
    for x, node in zip(X, leaf, strict=True):
        r = by_piece[int(node)]
        assert np.all(r.A @ x <= r.b + 1e-9)
        assert np.allclose(r.intercept + r.coef @ x, prog.raw_predict(x[None])[0], atol=1e-9)


def _pre_activations(layers: list, X: np.ndarray) -> list[np.ndarray]:
    """Each hidden layer's pre-activations, summed as :func:`network_forward` sums them."""
    h, out = X, []
    for W, b in layers[:-1]:
        z = np.repeat(b[None, :], len(h), axis=0)
        for i in range(W.shape[1]):
            z = z + W[:, i] * h[:, i : i + 1]
        out.append(z)
        h = np.maximum(z, 0.0)
    return out


def test_regions_bound_the_gap_between_the_networks_sums_and_their_composed_maps(converted) -> None:
    """What :mod:`interp_rl.verify` adds to its LP bounds for this kind: the computed outputs and the computed
    pre-activations of the units on the path lie within ``Region.rounding`` of the regions' composed maps."""
    layers, lo, hi, prog = converted
    X = np.random.default_rng(9).uniform(lo, hi, size=(3000, len(lo)))
    parent, leaf, pre = prog._parents(), prog.apply(X), _pre_activations(layers, X)
    out = prog.raw_predict(X)
    for r in prog.regions():
        rows, acts = r.rounding(lo, hi)
        assert rows.shape == r.b.shape and acts.shape == (prog.act_dim,) and np.all(acts > 0) and np.all(rows > 0)
        path, n = [], r.piece
        while n in parent:
            path.append(parent[n])
            n = parent[n]
        units = [tuple(prog.unit[p]) for p in path[::-1]]
        idx = np.flatnonzero(leaf == r.piece)
        for i in idx:
            x = X[i]
            assert np.all(np.abs(out[i] - (r.intercept + r.coef @ x)) <= acts)
            for row, (layer, j) in enumerate(units):
                z = pre[layer][i, j]
                side = 1.0 if z <= 0.0 else -1.0  # a left branch's row is w @ x + c, a right one's its negation
                assert abs((r.A[row] @ x - r.b[row]) - side * z) <= rows[row] + 1e-300
    affine = prog.with_affine_pieces(prog.intercept, prog.coef)
    assert all(not np.any(r.rounding(lo, hi)[1]) for r in affine.regions())  # its leaves sum their own maps


def test_json_round_trip_and_exports_reproduce_predict(converted, tmp_path: Path) -> None:
    layers, lo, hi, prog = converted
    d = len(lo)
    ctrl = Controller(prog, [Signal(f"f{j}", "m") for j in range(d)], [Signal("u0", "N"), Signal("u1")],
                      task="Toy-v0")
    X = np.random.default_rng(9).uniform(lo - 0.5, hi + 0.5, size=(300, d))  # outside the box too
    expect = ctrl.predict(X)
    back = Controller.from_dict(json.loads(json.dumps(ctrl.to_dict())))
    assert back.predict(X).tobytes() == expect.tobytes() and back.size() == ctrl.size()
    paths = write_exports(ctrl, tmp_path / "ctrl")
    act_py = load_python_controller(paths["python"])
    assert np.array([act_py(list(x)) for x in X]).tobytes() == expect.tobytes()
    if CC:
        strict = ["-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Werror", "-Wno-unused-variable",
                  "-Wno-unused-but-set-variable"]
        act_c = load_c_controller(compile_c(paths["c"], tmp_path / "c", extra_flags=strict))
        assert np.array([act_c(list(x)) for x in X]).tobytes() == expect.tobytes()
    text = ctrl.program.explain(ctrl)
    assert text.startswith("if ") and "region 1: u0 [N] = " in text and "<= " in text
    assert "region" in prog.explain_decision(ctrl, X[0])
    dot = prog.to_dot(ctrl, obs=X[0], states=X, max_depth=3)
    assert dot.startswith("digraph") and "#d62728" in dot


def test_affine_form_and_fine_tuned_leaves() -> None:
    layers = _network(5, [4, 3], 3)
    lo, hi = -np.ones(3), np.ones(3)
    prog = to_oblique(layers, lo, hi)
    X = np.random.default_rng(1).uniform(lo, hi, size=(1000, 3))
    pieces = prog.affine_pieces()
    tuned = prog.with_affine_pieces(pieces.intercept, pieces.coef)  # the leaves compute their composed maps
    assert tuned.leaf_form == "affine"
    assert np.allclose(tuned.predict(X), prog.predict(X), atol=1e-12)
    assert np.array_equal(tuned.apply(X), prog.apply(X))
    plain = ObliqueProgram(left=prog.left, right=prog.right, weight=prog.weight, bias=prog.bias,
                           intercept=prog.intercept, coef=prog.coef)  # no network: every value affine in x
    assert np.allclose(plain.predict(X), prog.predict(X), atol=1e-12)
    wide = prog.widened([0, 2, 4], 5)
    Xw = np.zeros((len(X), 5))
    Xw[:, [0, 2, 4]] = X
    assert wide.predict(Xw).tobytes() == prog.predict(X).tobytes()


def test_malformed_programs_and_settings_are_refused() -> None:
    prog = to_oblique(_network(0, [3], 2), -np.ones(2), np.ones(2))
    d = prog.to_dict()
    with pytest.raises(ControllerFormatError, match="two children"):
        ObliqueProgram.from_dict({**d, "right": [-1] * len(d["right"])})
    with pytest.raises(ControllerFormatError, match="network gives"):
        ObliqueProgram.from_dict({**d, "network": d["network"][:-1] + [{"weight": [[1.0] * 3], "bias": [0.0]}]})
    assert parse_hidden("8,8") == [8, 8]
    with pytest.raises(InvalidParameterError, match="hidden"):
        PReLUPolicy(hidden="8,x").fit(np.zeros((4, 2)), np.zeros((4, 1)))


def test_student_is_deterministic_and_runs_its_network_exactly() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3)) * [1.0, 2.0, 0.5] + [0.0, 1.0, -1.0]
    y = np.stack([np.abs(X[:, 0]) - X[:, 1], X[:, 0] + 0.5 * X[:, 2]], axis=1)
    a = PReLUPolicy(hidden="4,4", n_steps=300, action_low=-2.0, action_high=2.0, random_state=3).fit(X, y)
    b = PReLUPolicy(hidden="4,4", n_steps=300, action_low=-2.0, action_high=2.0, random_state=3).fit(X, y)
    assert json.dumps(a.program_.to_dict()) == json.dumps(b.program_.to_dict())
    assert a.predict(X).tobytes() == np.clip(network_forward(a.layers_, X), -2.0, 2.0).tobytes()
    assert a.score(X, np.clip(y, -2, 2)) > 0.5
    ctrl = a.to_controller(["p", "q", "r"], ["u", "v"])
    assert ctrl.kind == "oblique" and ctrl.size()["regions"] >= 2


def test_distill_prelu_runs_from_the_cli(shared_teachers: Path, tmp_path: Path, single_torch_thread: None) -> None:
    out = tmp_path / "prelu"
    start = time.perf_counter()
    res = runner.invoke(app, ["distill", "prelu", "--teacher", str(teacher_zip(shared_teachers, "sac", "Hopper")),
                              "--hidden", "4,4", "--train-steps", "300", "--iterations", "1", "--steps", "1000",
                              "--select-episodes", "1", "--eval-episodes", "1", "--fidelity-steps", "100",
                              "--attribution-states", "0", "--rl-steps", "0", "--repair-rounds", "0",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert time.perf_counter() - start < 600
    ctrl = load_controller(out)
    assert ctrl.kind == "oblique" and ctrl.program.layer_sizes == [4, 4]
    assert json.loads((out / "config.json").read_text())["params"]["dagger__student__hidden"] == "4,4"
    lo, hi = ctrl.program.domain_low, ctrl.program.domain_high
    X = np.random.default_rng(0).uniform(lo, hi, size=(10_000, len(lo)))
    assert ctrl.program.raw_predict(X).tobytes() == network_forward(ctrl.program.network, X).tobytes()
    act_py = load_python_controller(out / "controller.py")
    assert np.array([act_py(list(x)) for x in X[:200]]).tobytes() == ctrl.predict(X[:200]).tobytes()


def test_pictures_of_many_regions_stop_at_the_top_levels() -> None:
    prog = to_oblique(_network(4, [5, 5], 5), -2.0 * np.ones(5), 2.0 * np.ones(5))
    assert len(prog.leaves) > 64 and prog.depth > 5
    dot = prog.to_dot(Controller(prog))
    assert f"the top 5 levels of {len(prog.leaves)} regions" in dot
    assert dot.count("->") < 2 ** 6
