"""ONNX export: every program kind loads in onnxruntime and gives ``Controller.predict``'s actions.

Every kind (trees with constant and linear leaves, linear policies, mixtures with each router and
the tanh squash, equations with every factor function) is exported, loaded with onnxruntime and
run on 10,000 random states: wide floats, split thresholds and one ulp either side, signed zeros,
and states far outside any training range so that clipping acts. Trees, linear policies and
clipped mixtures give the same doubles bit for bit; equations and squashed mixtures call the
runtime's sin, cos, tanh and exp, so they agree to rounding (checked against the size of the terms).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from test_export import CONTROLLERS, _signed_zero_controller, random_tree
from test_new_kind import SwitchProgram
from typer.testing import CliRunner

from interp_rl.cli import app
from interp_rl.errors import ExportError
from interp_rl.export import load_onnx_controller, to_onnx, write_exports
from interp_rl.kinds.equations import EquationsProgram
from interp_rl.kinds.forest import ForestProgram
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.mixture import MixtureProgram, router_tree
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import PROGRAMS, Controller, Program, Signal

runner = CliRunner()
N_STATES = 10_000


# ------------------------------------------------------------------------------ controllers
def _mixtures() -> dict[str, Controller]:
    rng = np.random.default_rng(29)
    m, k, d = 4, 3, 6
    coef = rng.normal(size=(m, k, d)) * 10.0 ** rng.uniform(-2, 2, size=(m, k, d)) * (rng.uniform(size=(m, k, d)) < 0.5)
    coef[2] = 0.0  # a constant expert
    intercept = rng.normal(size=(m, k))
    bounds = {"action_low": [-1.0, -np.inf, -5.0], "action_high": [1.0, 0.5, np.inf]}
    router_coef = rng.normal(size=(m, d)) * (rng.uniform(size=(m, d)) < 0.6)  # uneven term counts
    router_coef[1] = 0.0
    linear = MixtureProgram(expert_intercept=intercept, expert_coef=coef, router_intercept=rng.normal(size=m),
                            router_coef=router_coef, **bounds)
    shape = random_tree(rng, 5, d, 1)
    routing = router_tree(feature=shape.feature, threshold=shape.threshold, left=shape.left, right=shape.right,
                          expert=rng.integers(m, size=shape.n_nodes), obs_dim=d)
    tree = MixtureProgram(expert_intercept=intercept, expert_coef=coef, tree=routing, **bounds)
    score_trees = []
    for depth in (3, 0, 4, 2):  # scores on a grid of halves: equal scores happen, and the first expert wins
        t = random_tree(rng, depth, d, 1)
        score_trees.append(t.replace(intercept=np.round(rng.normal(size=(t.n_nodes, 1)) * 2) / 2,
                                     coef=np.zeros_like(t.coef)))
    trees = MixtureProgram(expert_intercept=intercept, expert_coef=coef, score_trees=score_trees, **bounds)
    tied = MixtureProgram(expert_intercept=[[1.0], [2.0], [3.0]], expert_coef=np.zeros((3, 1, d)),
                          router_intercept=[0.0, 0.5, 0.5], router_coef=np.zeros((3, d)))
    one = MixtureProgram(expert_intercept=intercept[:1], expert_coef=coef[:1], router_intercept=[0.0],
                         router_coef=np.zeros((1, d)), **bounds)
    tanh = MixtureProgram(expert_intercept=intercept, expert_coef=coef, router_intercept=rng.normal(size=m),
                          router_coef=router_coef, action_low=[-1.0, -0.4, 0.0], action_high=[1.0, 0.7, 2.0],
                          squash="tanh")
    tanh_tree = MixtureProgram(expert_intercept=intercept, expert_coef=coef, tree=routing,
                               action_low=[-1.0, -0.4, 0.0], action_high=[1.0, 0.7, 2.0], squash="tanh")
    feats = [Signal(f"joint{j}_angle", "rad") for j in range(d)]
    out = {}
    for name, prog in {"linear": linear, "tree": tree, "trees": trees, "one": one, "tanh": tanh,
                       "tanh_tree": tanh_tree}.items():
        out[f"mixture_{name}"] = Controller(prog, features=feats, actions=[Signal("hip", "N m"), Signal("knee", "N m"),
                                                                          Signal("ankle", "N m")], task="Toy-v0")
    out["mixture_tied"] = Controller(tied)
    return out


def _caterpillar(rng: np.random.Generator, depth: int, obs_dim: int, act_dim: int) -> TreeProgram:
    """A tree of ``depth`` splits in a row, each with a linear leaf on its right (2 * depth + 1 nodes)."""
    n = 2 * depth + 1
    internal = np.arange(n) < 2 * depth
    internal[1::2] = False  # nodes 0, 2, 4, ... split; 1, 3, 5, ... and the last are leaves
    ids = np.arange(n)
    coef = rng.normal(size=(n, act_dim, obs_dim)) * (rng.uniform(size=(n, act_dim, obs_dim)) < 0.4)
    return TreeProgram(feature=np.where(internal, rng.integers(obs_dim, size=n), -1),
                       threshold=np.where(internal, rng.normal(size=n) * 2, 0.0),
                       left=np.where(internal, ids + 2, -1), right=np.where(internal, ids + 1, -1),
                       intercept=rng.normal(size=(n, act_dim)), coef=coef * ~internal[:, None, None],
                       action_low=[-3.0] * act_dim, action_high=[3.0] * act_dim)


def _others() -> dict[str, Controller]:
    rng = np.random.default_rng(30)
    coef = rng.normal(size=(3, 7)) * (rng.uniform(size=(3, 7)) < 0.5)
    coef[1] = 0.0
    linear = LinearProgram(intercept=rng.normal(size=3), coef=coef, action_low=[-1.0, -np.inf, -2.0],
                           action_high=[1.0, np.inf, np.inf])
    deep = _caterpillar(rng, 40, 5, 2)
    # equations with an action that uses no term (a constant)
    constant = EquationsProgram(terms=[[("sin", 0, 3.0), ("pow", 1, 2)], [("cos", 1, 1.0)]], intercept=[0.25, -1.0],
                                coef=[[1.5, -0.5], [0.0, 0.0]], obs_dim_=2)
    return {"linear": Controller(linear, task="Toy-v0"),
            "linear_constant": Controller(LinearProgram(intercept=[0.5, -0.0], coef=np.zeros((2, 3)))),
            "tree_deep": Controller(deep), "signed_zeros": _signed_zero_controller(),
            "equations_constant_action": Controller(constant)}


ALL = {**{f"tree_{n}" if n not in ("equations", "linear_tanh") else n: c for n, c in CONTROLLERS.items()},
       **_mixtures(), **_others()}
#: Shipped kinds with no ONNX form (their export refuses it in one line).
WITHOUT_ONNX = {"oblique"}
#: Kinds whose arithmetic is all + and * (and comparisons): the same doubles, bit for bit.
TRANSCENDENTAL = {"equations", "equations_constant_action", "mixture_tanh", "mixture_tanh_tree", "linear_tanh"}


def test_every_shipped_kind_is_covered() -> None:
    shipped = {kind for kind, cls in PROGRAMS.items() if cls.__module__.startswith("interp_rl.kinds.")
               and kind not in WITHOUT_ONNX}
    assert {c.kind for c in ALL.values()} == shipped == {"equations", "forest", "linear", "mixture", "tree"}


def test_oblique_trees_have_no_onnx_form_yet() -> None:
    from interp_rl.kinds.oblique import ObliqueProgram

    prog = ObliqueProgram(left=[-1], right=[-1], weight=[[0.0]], bias=[0.0], intercept=[[1.0]], coef=[[[2.0]]])
    with pytest.raises(ExportError, match="^An? oblique program has no ONNX form"):
        to_onnx(Controller(prog))


def _trees(prog: Program) -> list[TreeProgram]:
    if isinstance(prog, TreeProgram):
        return [prog]
    if isinstance(prog, ForestProgram):
        return prog.trees
    if isinstance(prog, MixtureProgram):
        return [prog.tree] if prog.tree is not None else list(prog.score_trees or [])
    return []


def _reachable_leaves(t: TreeProgram) -> set[int]:
    """The leaves whose box of states (the splits on their path) is not empty."""
    out, stack = set(), [(0, {})]
    while stack:
        node, box = stack.pop()
        if t.left[node] < 0:
            out.add(node)
            continue
        f, th = int(t.feature[node]), float(t.threshold[node])
        lo, hi = box.get(f, (-math.inf, math.inf))
        if lo < min(hi, th):
            stack.append((int(t.left[node]), {**box, f: (lo, min(hi, th))}))
        if max(lo, th) < hi:
            stack.append((int(t.right[node]), {**box, f: (max(lo, th), hi)}))
    return out


def states(prog: Program, n: int = N_STATES, seed: int = 0) -> np.ndarray:
    """Wide floats; every split threshold and its neighbours one ulp away; signed zeros; far-out states."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, prog.obs_dim)) * 10.0 ** rng.uniform(-3, 3, size=(n, prog.obs_dim))
    at: dict[int, list[float]] = {}
    for t in _trees(prog):
        for node in np.flatnonzero(t.left >= 0):
            th = float(t.threshold[node])
            at.setdefault(int(t.feature[node]), []).extend([th, math.nextafter(th, -math.inf),
                                                             math.nextafter(th, math.inf)])
    for j, ts in at.items():
        pick = rng.random(n) < 0.4
        X[pick, j] = rng.choice(ts, size=int(pick.sum()))
    zeros = rng.random(X.shape) < 0.03
    X[zeros] = rng.choice([0.0, -0.0], size=int(zeros.sum()))
    X[: n // 10] *= 1e6  # far outside any training range: clipping acts
    return X


def _term_scale(prog: Program, X: np.ndarray) -> np.ndarray:
    """``(n, act_dim)``: ``|intercept| + sum_t |coef_t| * size(term_t)`` (sin and cos count as 1), or for a squashed
    mixture or linear program the width of the bounds: the size rounding errors are relative to."""
    if isinstance(prog, (MixtureProgram, LinearProgram)):
        return np.broadcast_to(prog.action_high - prog.action_low, (len(X), prog.act_dim))
    assert isinstance(prog, EquationsProgram)
    size = np.ones((len(X), len(prog.terms)))
    for t, term in enumerate(prog.terms):
        for func, j, arg in term:
            x = np.abs(X[:, j])
            with np.errstate(over="ignore"):
                size[:, t] *= {"pow": x ** arg, "exp": np.exp(X[:, j]), "abs": x}.get(func, 1.0)
    return np.stack([abs(prog.intercept[o]) + sum((abs(prog.coef[o, t]) * size[:, t] for t in np.flatnonzero(prog.coef[o])),
                                                  np.zeros(len(X))) for o in range(prog.act_dim)], axis=1)


# ------------------------------------------------------------------------------ exactness
@pytest.mark.parametrize("name", sorted(ALL))
def test_onnxruntime_gives_predicts_actions_on_10000_states(name: str, tmp_path: Path) -> None:
    ctrl = ALL[name]
    path = write_exports(ctrl, tmp_path, formats=("onnx",))["onnx"]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    X = states(ctrl.program, seed=len(name))
    want = ctrl.predict(X)
    (got,) = session.run(["action"], {"obs": X})
    assert got.dtype == np.float64 and got.shape == want.shape == (N_STATES, ctrl.program.act_dim)
    if name not in TRANSCENDENTAL:
        assert got.tobytes() == want.tobytes()  # bit for bit, signed zeros included
    else:
        assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
        finite = np.isfinite(want)
        err = np.abs(got - want)[finite] / np.maximum(_term_scale(ctrl.program, X)[finite], 1e-300)
        assert err.max() < 1e-13
    clipped = np.isfinite(ctrl.program.action_high) & (want == ctrl.program.action_high)
    if np.isfinite(ctrl.program.action_high).any() and name != "mixture_tied":
        assert clipped.any()  # the far-out states reach a bound
    for t in _trees(ctrl.program):  # every leaf that any state can reach is reached (the deep tree aside)
        if t.depth <= 8:
            assert set(t.apply(X).tolist()) == _reachable_leaves(t)


def test_ties_between_scores_pick_the_first_expert_as_predict_does() -> None:
    ctrl = ALL["mixture_tied"]
    act = load_onnx_controller(to_onnx(ctrl))
    X = np.zeros((3, ctrl.program.obs_dim))
    assert act(X).tolist() == ctrl.predict(X).tolist() == [[2.0], [2.0], [2.0]]
    trees = ALL["mixture_trees"].program
    X = states(trees, seed=1)
    scores = trees.scores(X)
    assert (np.sum(scores == scores.max(axis=1, keepdims=True), axis=1) > 1).mean() > 0.05  # many ties were tried


def test_a_tree_walk_grows_with_depth_not_nodes() -> None:
    ctrl = ALL["tree_deep"]
    model = to_onnx(ctrl)
    assert ctrl.program.depth == 40
    assert sum(node.op_type == "LessOrEqual" for node in model.graph.node) == 40


# ------------------------------------------------------------------------------ the model
def test_the_model_names_its_features_actions_units_and_bounds() -> None:
    ctrl = CONTROLLERS["odd_names"]
    model = to_onnx(ctrl)
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == 13 and model.ir_version == 7 and model.producer_name == "interp-rl"
    props = {p.key: p.value for p in model.metadata_props}
    assert {k: props[k] for k in ("format", "format_version", "task", "kind", "obs_dim", "act_dim")} == {
        "format": "interp-rl-controller", "format_version": "1", "task": "Task */ with\nnewline", "kind": "tree",
        "obs_dim": "3", "act_dim": "2"}
    assert json.loads(props["features"]) == [s.to_dict() for s in ctrl.features]
    actions = json.loads(props["actions"])
    assert [a["name"] for a in actions] == ctrl.action_names and actions[0]["unit"] == "N m"
    low, high = ctrl.program.action_low, ctrl.program.action_high
    assert [(a["low"], a["high"]) for a in actions] == [
        (float(lo) if math.isfinite(lo) else ("-inf" if lo < 0 else "inf"),
         float(hi) if math.isfinite(hi) else ("inf" if hi > 0 else "-inf")) for lo, hi in zip(low, high, strict=True)]
    (obs,), (action,) = model.graph.input, model.graph.output
    assert (obs.name, action.name) == ("obs", "action")
    for value, width in ((obs, 3), (action, 2)):
        assert value.type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
        dims = value.type.tensor_type.shape.dim
        assert (dims[0].dim_param, dims[1].dim_value) == ("N", width)
    assert "column 2 = θ_knee [°]" in obs.doc_string and "column 0 = u */ 0\r [N m]" in action.doc_string
    assert model.doc_string.startswith("Standalone controller exported by interp-rl")


def test_one_observation_and_an_empty_batch_run() -> None:
    ctrl = ALL["mixture_tree"]
    act = load_onnx_controller(to_onnx(ctrl))
    x = states(ctrl.program, 5)
    assert act(x[0]).tolist() == ctrl.predict(x[0]).tolist()
    assert act(np.zeros((0, ctrl.program.obs_dim))).shape == (0, 3)


def test_a_kind_without_an_onnx_form_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(PROGRAMS, "switch", SwitchProgram)
    ctrl = Controller(SwitchProgram(0, 0.5, [1.0], [2.0], obs_dim=2))
    with pytest.raises(TypeError, match=r"^A switch program has no ONNX form\.$"):
        ctrl.program.onnx_graph(None)  # type: ignore[attr-defined]
    message = "A switch program has no ONNX form; export it as Python, C or JSON instead."
    with pytest.raises(ExportError, match=f"^{message}$"):
        to_onnx(ctrl)
    with pytest.raises(ExportError, match=f"^{message}$"):  # nothing is written when one format fails
        write_exports(ctrl, tmp_path / "out", formats=("json", "onnx"))
    assert not (tmp_path / "out").exists()
    assert sorted(write_exports(ctrl, tmp_path / "out")) == ["c", "json", "python"]  # the other formats still work
    res = runner.invoke(app, ["export", str(tmp_path / "out"), "--format", "onnx", "--out", str(tmp_path / "x")])
    assert res.exit_code == 1 and res.output == f"Error: {message}\n"


# ------------------------------------------------------------------------------ files and the CLI
def test_cli_exports_onnx_and_replaces_only_its_own_file(tmp_path: Path) -> None:
    ctrl = ALL["mixture_trees"]
    ctrl.save(tmp_path / "ctrl" / "controller.json")
    out = tmp_path / "fw"
    res = runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--format", "onnx", "--format", "c",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["controller.c", "controller.onnx"]
    assert f"Wrote {out / 'controller.onnx'}" in res.output.replace("\n", "")
    X = states(ctrl.program, 500)
    assert load_onnx_controller(out)(X).tobytes() == ctrl.predict(X).tobytes()
    again = runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--format", "onnx", "--out", str(out)])
    assert again.exit_code == 0, again.output  # an earlier export of ours is replaced without --force
    mine = out / "controller.onnx"
    mine.write_bytes(b"\x08\x07my own model")
    res = runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--format", "onnx", "--out", str(out)])
    assert res.exit_code == 1
    assert res.output.strip() == (f"Error: {str(mine)!r} exists and was not written by interp-rl; choose another "
                                  "folder or pass --force (force=True) to overwrite it.")
    assert mine.read_bytes() == b"\x08\x07my own model"
    res = runner.invoke(app, ["export", str(tmp_path / "ctrl"), "--format", "onnx", "--out", str(out), "--force"])
    assert res.exit_code == 0 and load_onnx_controller(mine)(X).tobytes() == ctrl.predict(X).tobytes()


def test_cli_names_onnx_among_the_formats(tmp_path: Path) -> None:
    ALL["linear"].save(tmp_path / "controller.json")
    res = runner.invoke(app, ["export", str(tmp_path), "--format", "onnnx", "--out", str(tmp_path / "x")])
    assert res.exit_code == 1
    assert res.output.strip() == ("Error: The '--format' option of interp-rl export must be python, c, json or onnx. "
                                  "Got 'onnnx' instead.")
    assert "onnx" in runner.invoke(app, ["export", "--help"], terminal_width=200).stdout


def test_loading_a_missing_or_broken_model_is_an_export_error(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="^ONNX controller .* does not exist"):
        load_onnx_controller(tmp_path)
    (tmp_path / "controller.onnx").write_bytes(b"not a model")
    with pytest.raises(ExportError, match="^onnxruntime cannot load "):
        load_onnx_controller(tmp_path)
