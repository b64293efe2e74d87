"""Exports: the generated Python and C reproduce ``Controller.predict`` bit for bit.

Random trees (constant and sparse-linear leaves, finite and infinite bounds) are exported once
per module; hypothesis then draws observations (moderate floats, signed zeros, values exactly at
a split threshold and one ulp either side) and every runtime must return the same doubles.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import struct
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interp_rl.errors import ControllerFormatError, ExportError, InterpRLError, InvalidParameterError
from interp_rl.export import (
    compile_c,
    load_c_controller,
    load_python_controller,
    measure_latency,
    to_c,
    to_python,
    write_exports,
)
from interp_rl.kinds.equations import EquationsProgram
from interp_rl.kinds.forest import COMMAND_FEATURES, ForestProgram
from interp_rl.kinds.linear import LinearProgram
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import Controller, Signal, load_controller


def _compiler() -> str | None:
    cc = os.environ.get("CC", "").split()
    if cc:
        return shutil.which(cc[0])
    return shutil.which("gcc") or shutil.which("cc") or shutil.which("clang")


CC = _compiler()
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler ($CC, gcc, cc or clang) on PATH; CI installs gcc")


def bits(values: Sequence[float]) -> list[bytes]:
    """Exact bit patterns (tells -0.0 from 0.0, unlike ==)."""
    return [struct.pack("<d", v) for v in values]


# ------------------------------------------------------------------------------ random trees
def random_tree(
    rng: np.random.Generator, depth: int, obs_dim: int, act_dim: int, *, bounds: str = "mixed"
) -> TreeProgram:
    """A random valid tree of at most ``depth`` (exactly ``depth`` on the leftmost path).

    Leaves are constant (about a third) or sparse linear (1-3 terms, magnitudes from 1e-6 to
    1e4, either sign); thresholds and intercepts carry all 17 significant digits. ``bounds`` is
    ``"finite"``, ``"inf"`` (unbounded) or ``"mixed"`` (each side finite or infinite at random).
    """
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    intercept: list[list[float]] = []
    coef: dict[int, dict[tuple[int, int], float]] = {}

    def new_node() -> int:
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        intercept.append((rng.normal(size=act_dim) * 10.0 ** rng.uniform(-2, 2, size=act_dim)).tolist())
        return len(feature) - 1

    stack = [(new_node(), 0, True)]
    while stack:
        node, d, leftmost = stack.pop()
        if d < depth and (leftmost or rng.random() < 0.75):
            feature[node] = int(rng.integers(obs_dim))
            threshold[node] = float(rng.normal() * 10.0 ** rng.uniform(-1, 1.5))
            left[node], right[node] = new_node(), new_node()
            stack += [(right[node], d + 1, False), (left[node], d + 1, leftmost)]
        elif rng.random() > 0.35:
            terms = {}
            for out in range(act_dim):
                for j in rng.choice(obs_dim, size=int(rng.integers(1, min(3, obs_dim) + 1)), replace=False):
                    terms[(out, int(j))] = float(rng.choice([-1, 1]) * 10.0 ** rng.uniform(-6, 4))
            coef[node] = terms
    low, high = np.full(act_dim, -np.inf), np.full(act_dim, np.inf)
    for i in range(act_dim):
        scale = float(10.0 ** rng.uniform(-1, 2))
        if bounds == "finite" or (bounds == "mixed" and rng.random() < 0.6):
            low[i] = -scale
        if bounds == "finite" or (bounds == "mixed" and rng.random() < 0.6):
            high[i] = scale * rng.uniform(0.5, 2)
    return TreeProgram.from_leaves(
        feature=feature, threshold=threshold, left=left, right=right, intercept=intercept,
        obs_dim=obs_dim, coef=coef, action_low=low, action_high=high,
    )


def _controllers() -> dict[str, Controller]:
    rng = np.random.default_rng(20240613)
    specs = {  # name: (depth, obs_dim, act_dim, bounds)
        "leaf_only": (0, 3, 1, "finite"),
        "small": (2, 4, 2, "mixed"),
        "unbounded": (4, 5, 3, "inf"),
        "medium": (6, 11, 3, "mixed"),
        "hopper_like": (8, 11, 3, "finite"),
        "wide": (5, 27, 8, "mixed"),
    }
    out = {}
    for name, (depth, obs_dim, act_dim, bounds) in specs.items():
        prog = random_tree(rng, depth, obs_dim, act_dim, bounds=bounds)
        features = [Signal(f"f{i}", "rad" if i % 2 else "m/s") for i in range(obs_dim)]
        out[name] = Controller(prog, features=features, task=f"Random-{name}")
    # Hostile names: comment terminators, newlines, quotes, non-ASCII must not break either file.
    prog = random_tree(rng, 3, 3, 2)
    out["odd_names"] = Controller(
        prog,
        features=[Signal("a*/b\nc", "m/s"), Signal('q"uote\'s', "*/"), Signal("θ_knee", "°")],
        actions=[Signal("u */ 0\r", "N m"), Signal("\\u1", "")],
        task="Task */ with\nnewline",
    )
    # Sparse equations (SINDy): every factor function, powers, products, one exp per action.
    terms = [[("pow", 0, 1)], [("pow", 1, 2), ("pow", 2, 1)], [("sin", 3, 2.0)], [("cos", 0, 1.0)],
             [("tanh", 1, 1)], [("abs", 3, 1), ("sin", 1, 1.5)], [("pow", 4, 3)]]
    coef = rng.normal(size=(2, len(terms))) * 10.0 ** rng.uniform(-3, 1, size=(2, len(terms)))
    coef[0, 2] = 0.0
    prog = EquationsProgram(terms=[*terms, [("exp", 2, 1)]], intercept=[0.1, -0.0],
                            coef=np.hstack([coef, [[0.3], [0.0]]]), action_low=[-1.0, -np.inf],
                            action_high=[1.0, np.inf], obs_dim_=5)
    out["equations"] = Controller(prog, features=[Signal(f"f{i}", "rad") for i in range(5)], task="Random-equations")
    # A forest of constant-leaf trees (one of them a single leaf) reading an observation and a command.
    members = [random_tree(rng, depth, 5, 2) for depth in (1, 3, 4, 0)]
    prog = ForestProgram([t.replace(coef=np.zeros_like(t.coef)) for t in members], action_low=[-1.0, -np.inf],
                         action_high=[1.0, np.inf])
    out["forest"] = Controller(prog, features=[Signal(f"f{i}", "rad") for i in range(3)] + list(COMMAND_FEATURES),
                               task="Random-forest")
    # A linear policy squashed by tanh into its bounds (an imported ARS agent): C library tanh, same order.
    coef = rng.normal(size=(2, 6)) * (rng.uniform(size=(2, 6)) < 0.7) * 10.0 ** rng.uniform(-3, 0, size=(2, 6))
    out["linear_tanh"] = Controller(LinearProgram(intercept=[0.2, -0.1], coef=coef, action_low=[-1.0, -0.5],
                                                  action_high=[1.0, 2.0], squash="tanh"), task="Random-linear")
    return out


CONTROLLERS = _controllers()


def _thresholds(prog: TreeProgram) -> dict[int, list[float]]:
    """Per feature: every split threshold and its neighbours one ulp away."""
    found: dict[int, list[float]] = {}
    trees = prog.trees if isinstance(prog, ForestProgram) else [prog] if isinstance(prog, TreeProgram) else []
    for tree in trees:
        for node in np.flatnonzero(tree.left >= 0):
            t = float(tree.threshold[node])
            found.setdefault(int(tree.feature[node]), []).extend(
                [t, math.nextafter(t, -math.inf), math.nextafter(t, math.inf)]
            )
    return found


@st.composite
def case(draw: st.DrawFn) -> tuple[str, list[float]]:
    """A controller name and one observation for it."""
    name = draw(st.sampled_from(sorted(CONTROLLERS)))
    prog = CONTROLLERS[name].program
    at = _thresholds(prog)
    moderate = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    obs = []
    for j in range(prog.obs_dim):
        options = [moderate, st.sampled_from([0.0, -0.0, 1.0, -1.0])]
        if j in at:
            options.append(st.sampled_from(at[j]))
        obs.append(draw(st.one_of(*options)))
    return name, obs


def _batch(prog: TreeProgram, n: int, seed: int) -> np.ndarray:
    """``n`` observations: a random mix of wide floats and split thresholds (+-1 ulp)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, prog.obs_dim)) * 10.0 ** rng.uniform(-3, 3, size=(n, prog.obs_dim))
    for j, ts in _thresholds(prog).items():
        pick = rng.random(n) < 0.4
        X[pick, j] = rng.choice(ts, size=int(pick.sum()))
    return X


def expected(name: str, obs: Sequence[float]) -> list[float]:
    return list(CONTROLLERS[name].predict(np.asarray(obs, dtype=np.float64)).tolist())


# ------------------------------------------------------------------------------ fixtures
@dataclass
class Exported:
    dirs: dict[str, Path]
    python: dict[str, Callable[[list[float]], list[float]]]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    root = tmp_path_factory.mktemp("exports")
    dirs = {name: write_exports(ctrl, root / name)["json"].parent for name, ctrl in CONTROLLERS.items()}
    return Exported(dirs, {name: load_python_controller(d / "controller.py") for name, d in dirs.items()})


@pytest.fixture(scope="module")
def c_acts(exported: Exported) -> dict[str, Callable[[Sequence[float]], list[float]]]:
    """Every controller compiled once (shared library) and loaded through ctypes."""
    if CC is None:
        pytest.skip("no C compiler ($CC, gcc, cc or clang) on PATH; CI installs gcc")
    return {
        name: load_c_controller(compile_c(d / "controller.c", d / "build"))
        for name, d in exported.dirs.items()
    }


# ------------------------------------------------------------------------------ exactness
@settings(max_examples=400, deadline=None)
@given(case())
def test_python_export_matches_predict_exactly(exported: Exported, drawn: tuple[str, list[float]]) -> None:
    name, obs = drawn
    got = exported.python[name](obs)
    want = expected(name, obs)
    assert got == want
    assert bits(got) == bits(want)


@needs_cc
@settings(max_examples=400, deadline=None)
@given(case())
def test_c_export_matches_predict_exactly(
    c_acts: dict[str, Callable[[Sequence[float]], list[float]]], drawn: tuple[str, list[float]]
) -> None:
    name, obs = drawn
    got = c_acts[name](obs)
    want = expected(name, obs)
    assert got == want
    assert bits(got) == bits(want)


@pytest.mark.parametrize("name", sorted(CONTROLLERS))
def test_python_export_matches_predict_on_a_batch(exported: Exported, name: str) -> None:
    prog = CONTROLLERS[name].program
    X = _batch(prog, 1500, seed=len(name))
    want = CONTROLLERS[name].predict(X)
    got = np.array([exported.python[name](row) for row in X.tolist()]).reshape(want.shape)
    assert got.tobytes() == want.tobytes()
    # the batch reaches every leaf of the smaller trees, so each leaf formula is exercised
    if isinstance(prog, TreeProgram) and prog.depth <= 4:
        assert set(prog.apply(X).tolist()) == set(prog.leaves.tolist())


@needs_cc
@pytest.mark.parametrize("name", sorted(CONTROLLERS))
def test_c_export_matches_predict_on_a_batch(
    c_acts: dict[str, Callable[[Sequence[float]], list[float]]], name: str
) -> None:
    X = _batch(CONTROLLERS[name].program, 1500, seed=len(name) + 1)
    want = CONTROLLERS[name].predict(X)
    got = np.array([c_acts[name](row) for row in X.tolist()]).reshape(want.shape)
    assert got.tobytes() == want.tobytes()


def _signed_zero_controller() -> Controller:
    """Corner cases of signed zeros: a ``-0.0`` leaf clipped at a ``0.0`` bound, a term on ``-0.0``."""
    prog = TreeProgram.from_leaves(
        feature=[0, -1, -1], threshold=[0.0, 0.0, 0.0], left=[1, -1, -1], right=[2, -1, -1],
        intercept=[[0.0, 0.0], [-0.0, -0.0], [-0.0, 1.0]], coef={2: {(0, 1): 3.0}}, obs_dim=2,
        action_low=[0.0, -np.inf], action_high=[np.inf, -0.0],
    )
    return Controller(prog)


@needs_cc
def test_python_and_c_agree_on_signed_zeros(tmp_path: Path) -> None:
    ctrl = _signed_zero_controller()
    paths = write_exports(ctrl, tmp_path)
    py, c = load_python_controller(paths["python"]), load_c_controller(compile_c(paths["c"], tmp_path))
    for obs in ([-0.0, -0.0], [0.0, 0.0], [-1.0, 2.0], [1.0, -0.0], [1.0, 0.0], [0.5, -2.0]):
        assert bits(py(obs)) == bits(c(obs)), obs
        assert py(obs) == ctrl.predict(obs).tolist()  # numpy may differ only in the sign of a zero
    # min(max(y, low), high) with Python's semantics: max(-0.0, 0.0) keeps -0.0
    assert bits(py([-1.0, 0.0])) == bits([-0.0, -0.0])


@needs_cc
@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="checks x86-64 FMA code")
def test_c_source_blocks_fused_multiply_add_even_when_the_flag_is_missing(tmp_path: Path) -> None:
    """The file itself turns contraction off (GCC pragma), so `-ffp-contract=fast` cannot fuse."""
    assert CC is not None
    version = subprocess.run([CC, "--version"], capture_output=True, text=True).stdout
    if "Free Software Foundation" not in version:
        pytest.skip(f"{CC} is not GCC; the pragma checked here is GCC's")
    src = to_c(CONTROLLERS["hopper_like"])
    bare = src.replace('#pragma GCC optimize("fp-contract=off")', "")
    asm = {}
    for label, text in (("exported", src), ("bare", bare)):
        (tmp_path / f"{label}.c").write_text(text)
        cmd = [CC, "-O2", "-std=gnu99", "-mfma", "-ffp-contract=fast", "-S", "-o", "-", str(tmp_path / f"{label}.c")]
        asm[label] = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "vfmadd" in asm["bare"]  # the check can see fusion ...
    assert "vfmadd" not in asm["exported"]  # ... and the exported file has none


@needs_cc
def test_c_compiles_cleanly_with_warnings_as_errors_and_main_prints_exact_actions(
    exported: Exported, tmp_path: Path
) -> None:
    name = "odd_names"
    c_path = exported.dirs[name] / "controller.c"
    strict = ["-Wall", "-Wextra", "-Wpedantic", "-Wmissing-prototypes", "-Wshadow", "-Werror"]
    compile_c(c_path, tmp_path / "strict", extra_flags=strict)
    program = compile_c(c_path, tmp_path / "main", shared=False)
    X = _batch(CONTROLLERS[name].program, 50, seed=7)
    stdin = "\n".join(" ".join(repr(v) for v in row) for row in X.tolist()) + "\n"
    run = subprocess.run([str(program)], input=stdin, capture_output=True, text=True, check=True)
    got = np.array([[float(v) for v in line.split()] for line in run.stdout.splitlines()])
    assert got.tobytes() == CONTROLLERS[name].predict(X).tobytes()
    bad = subprocess.run([str(program)], input="1.0 2.0\n", capture_output=True, text=True)
    assert bad.returncode == 1 and "expected 3 numbers" in bad.stderr


# ------------------------------------------------------------------------------ snapshot
def _one_split() -> Controller:
    prog = TreeProgram.from_leaves(
        feature=[0, -1, -1], threshold=[0.21, 0.0, 0.0], left=[1, -1, -1], right=[2, -1, -1],
        intercept=[[0.0], [-1.0], [0.25]], coef={2: {(0, 1): -2.0}}, obs_dim=2,
        action_low=[-1.0], action_high=[1.0],
    )
    return Controller(
        prog, features=[Signal("thigh_angle", "rad"), Signal("thigh_speed", "rad/s")],
        actions=[Signal("thigh_torque", "N m")], task="Toy-v0",
    )


EXPECTED_PYTHON = '''\
"""Standalone controller exported by interp-rl: ``act(obs)`` maps one raw observation to actions.

Standard library only. The arithmetic follows the interp-rl controller contract of its
program kind (tree), so ``act`` returns the same floats, bit for bit, as
``Controller.predict``: sums ``y = c0 + c1 * obs[j1] + ...`` are evaluated left to right in
ascending feature order, then clipped as ``min(max(y, low), high)``.
"""

# task: Toy-v0
# program kind: tree
# format: interp-rl-controller version 1
# observations (OBS_DIM = 2):
#   obs[0] = thigh_angle [rad]
#   obs[1] = thigh_speed [rad/s]
# actions (ACT_DIM = 1); yI in act() is action[I]:
#   action[0] = thigh_torque [N m], clipped to [-1.0, 1.0]

import math

FORMAT_VERSION = 1
OBS_DIM = 2
ACT_DIM = 1
FEATURES = ('thigh_angle', 'thigh_speed')
ACTIONS = ('thigh_torque',)


def act(obs: list[float]) -> list[float]:
    """Return the ACT_DIM actions for one observation of OBS_DIM finite floats."""
    obs = [float(v) for v in obs]
    if len(obs) != OBS_DIM:
        raise ValueError(f"act() expects {OBS_DIM} observation values (OBS_DIM); got {len(obs)}.")
    if not all(map(math.isfinite, obs)):
        bad = next(i for i, v in enumerate(obs) if not math.isfinite(v))
        raise ValueError(f"obs[{bad}] ({FEATURES[bad]}) is {obs[bad]}; observations must be finite.")
    if obs[0] <= 0.21:  # thigh_angle [rad]
        # leaf 1 of 2
        y0 = -1.0
    else:
        # leaf 2 of 2
        y0 = 0.25 - 2.0 * obs[1]
    return [min(max(y0, -1.0), 1.0)]
'''


def test_python_source_snapshot() -> None:
    assert to_python(_one_split()) == EXPECTED_PYTHON


def test_c_source_snapshot_lines() -> None:
    src = to_c(_one_split())
    lines = src.splitlines()
    for line in (
        "    if (obs[0] <= 0.21) {  /* thigh_angle [rad] */",
        "        y0 = 0.25 - 2.0 * obs[1];",
        "    if (y0 < -1.0) y0 = -1.0;",
        "    if (y0 > 1.0) y0 = 1.0;",
        "#define OBS_DIM 2",
        "#define ACT_DIM 1",
        "void act(const double *obs, double *action)",
        "#pragma STDC FP_CONTRACT OFF",
        " *   obs[0] = thigh_angle [rad]",
        " *   action[0] = thigh_torque [N m], clipped to [-1.0, 1.0]",
        " * format: interp-rl-controller version 1",
    ):
        assert line in lines, line
    assert "-ffp-contract=off" in src.split("*/")[0]
    assert "int main" in src.split("#ifdef INTERP_RL_MAIN")[1]
    assert "int main" not in src.split("#ifdef INTERP_RL_MAIN")[0]


def test_literals_round_trip_and_long_leaves_wrap_without_changing_order() -> None:
    obs_dim = 30
    terms = {(0, j): (-1) ** j * (1 / 3 + j * 1e-17 + 10.0 ** (j - 15)) for j in range(obs_dim)}
    prog = TreeProgram.from_leaves(
        feature=[-1], threshold=[0.0], left=[-1], right=[-1], intercept=[[1e16 + 2]],
        coef={0: terms}, obs_dim=obs_dim,
    )
    ctrl = Controller(prog)
    src = to_python(ctrl)
    assert all(len(line) <= 110 for line in src.splitlines())
    assert "    y0 = (1.0000000000000002e+16\n" in src  # one term per line, in order
    assert "          - 0.3333333333333433 * obs[1]\n" in src and src.index("obs[28]") < src.index("obs[29]")
    namespace: dict = {}
    exec(src, namespace)
    x = np.linspace(-3, 7, obs_dim)
    assert bits(namespace["act"](x.tolist())) == bits(ctrl.predict(x).tolist())


def test_trees_deeper_than_python_allows_are_refused_and_the_deepest_allowed_runs() -> None:
    def chain(depth: int) -> Controller:
        n = 2 * depth + 1
        feature, left, right = [-1] * n, [-1] * n, [-1] * n
        for d in range(depth):  # node 2d splits; left child 2d+1 is a leaf, right child 2d+2 goes on
            feature[2 * d], left[2 * d], right[2 * d] = 0, 2 * d + 1, 2 * d + 2
        prog = TreeProgram.from_leaves(
            feature=feature, threshold=[float(i) for i in range(n)], left=left, right=right,
            intercept=[[float(i)] for i in range(n)], obs_dim=1,
        )
        return Controller(prog)

    with pytest.raises(ExportError, match="depth 99"):
        to_python(chain(99))
    deepest = chain(98)
    namespace: dict = {}
    exec(to_python(deepest), namespace)
    for x in (-1.0, 0.0, 50.0, 195.0, 1e9):
        assert namespace["act"]([x]) == deepest.predict([x]).tolist()
    assert "if (obs[0] <= 196.0) {" in to_c(chain(99))  # C has no such limit


# ------------------------------------------------------------------------------ files and errors
def test_write_exports_round_trips_through_json(exported: Exported, tmp_path: Path) -> None:
    ctrl = CONTROLLERS["medium"]
    paths = write_exports(ctrl, tmp_path / "out")
    assert {k: p.name for k, p in paths.items()} == {
        "json": "controller.json", "python": "controller.py", "c": "controller.c",
    }
    assert paths["python"].read_text() == to_python(ctrl) and paths["c"].read_text() == to_c(ctrl)
    loaded = load_controller(paths["json"])
    X = _batch(ctrl.program, 500, seed=3)
    assert loaded.predict(X).tobytes() == ctrl.predict(X).tobytes()
    assert to_python(loaded) == to_python(ctrl)  # the export of the loaded file is the same program
    assert not list((tmp_path / "out").glob(".*.tmp"))


def test_corrupt_and_wrong_version_json_give_clear_errors(tmp_path: Path) -> None:
    paths = write_exports(_one_split(), tmp_path)
    text = paths["json"].read_text()
    paths["json"].write_text(text[: len(text) // 2])
    with pytest.raises(ControllerFormatError, match="corrupt"):
        load_controller(paths["json"])
    d = json.loads(text)
    d["version"] = 99
    paths["json"].write_text(json.dumps(d))
    with pytest.raises(ControllerFormatError, match="format version 99; this interp-rl reads version 1"):
        load_controller(tmp_path)


def _mangle(d: dict, **changes) -> dict:
    prog = {**d["program"], **changes}
    return {**d, "program": prog}


@pytest.mark.parametrize(("changes", "message"), [
    ({"left": [0, -1, -1]}, "Node 0 is reached twice; the nodes do not form a tree."),  # a cycle to the root
    ({"left": [2, -1, -1]}, "Node 2 is reached twice; the nodes do not form a tree."),
    ({"feature": [5, -1, -1]}, "Node 0 splits on feature 5; split features must be in [0, 2)."),
    ({"feature": [-3, -1, -1]}, "Node 0 splits on feature -3; split features must be in [0, 2)."),
    ({"threshold": [float("nan"), 0.0, 0.0]}, "Node 0 has split threshold nan; thresholds must be finite."),
    ({"threshold": [float("inf"), 0.0, 0.0]}, "Node 0 has split threshold inf; thresholds must be finite."),
    ({"intercept": [[0.0], [float("nan")], [0.25]]},
     "Node 1 has a non-finite leaf parameter; intercepts and coefficients must be finite."),
    ({"terms": [[2, 0, 1, float("inf")]]},
     "Node 2 has a non-finite leaf parameter; intercepts and coefficients must be finite."),
    ({"right": [-1, -1, -1]},
     "Node 0 has left child 1 and right child -1; a node needs both children (ids >= 0) or none (-1)."),
    ({"right": [7, -1, -1]}, "Node 0 has children (1, 7); ids must be below the node count 3."),
    ({"left": [-1, -1, -1], "right": [-1, -1, -1]},
     "Node 1 cannot be reached from the root; every node must belong to the tree."),
    ({"threshold": [0.21, 0.0]}, "threshold has 2 entries; expected 3."),
])
def test_malformed_tree_programs_are_refused_on_load(tmp_path: Path, changes: dict, message: str) -> None:
    """Each check guards something real: a cycle hangs ``predict``, a feature out of range reads past the
    end of the C observation array, a non-finite value turns every action into NaN."""
    good = _one_split().to_dict()
    Controller.from_dict(good)  # the unmangled program loads
    path = tmp_path / "controller.json"
    path.write_text(json.dumps(_mangle(good, **changes)))
    with pytest.raises(ControllerFormatError) as exc:
        load_controller(path)
    assert str(exc.value) == f"{str(path)!r} holds a malformed tree program: {message}"


def test_python_act_rejects_wrong_length_and_non_finite(exported: Exported) -> None:
    act = exported.python["small"]  # obs_dim 4
    with pytest.raises(ValueError, match=r"expects 4 observation values \(OBS_DIM\); got 3"):
        act([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"expects 4 .*got 5"):
        act([0.0] * 5)
    with pytest.raises(ValueError, match=r"obs\[2\] \(f2\) is nan"):
        act([0.0, 1.0, math.nan, 0.0])
    assert act(np.zeros(4)) == expected("small", [0.0] * 4)  # numpy input is fine


@needs_cc
def test_c_act_rejects_wrong_length_and_non_finite(c_acts: dict[str, Callable[[Sequence[float]], list[float]]]) -> None:
    with pytest.raises(ValueError, match=r"expects 4 observation values \(OBS_DIM\); got 3"):
        c_acts["small"]([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"obs\[1\] is inf"):
        c_acts["small"]([0.0, math.inf, 0.0, 0.0])


@needs_cc
def test_compile_errors_name_the_compiler_and_show_its_output(tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text("this is not C {\n")
    with pytest.raises(ExportError) as info:
        compile_c(bad, tmp_path / "out")
    msg = str(info.value)
    assert isinstance(info.value, InterpRLError)
    assert "The C compiler" in msg and os.path.basename(CC or "") in msg and "bad.c" in msg
    assert "error" in msg.lower()
    assert not list((tmp_path / "out").iterdir())  # no half-written library left behind


def test_missing_compiler_and_missing_files_raise_export_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = write_exports(_one_split(), tmp_path)
    monkeypatch.setenv("CC", "no-such-compiler-xyz -O1")
    with pytest.raises(ExportError, match="'no-such-compiler-xyz -O1' named by \\$CC was not found"):
        compile_c(paths["c"], tmp_path / "build")
    with pytest.raises(ExportError, match="does not exist"):
        compile_c(tmp_path / "missing.c", tmp_path / "build")
    with pytest.raises(ExportError, match="does not exist"):
        load_python_controller(tmp_path / "missing.py")
    with pytest.raises(ExportError, match="does not exist"):
        load_c_controller(tmp_path / "build")
    (tmp_path / "other.py").write_text("x = 1\n")
    with pytest.raises(ExportError, match="defines no act"):
        load_python_controller(tmp_path / "other.py")
    assert load_python_controller(tmp_path)([1.0, 3.0]) == [-1.0]  # a folder means its controller.py


def test_measure_latency_reports_median_p90_and_calls() -> None:
    calls = []
    stats = measure_latency(calls.append, [0.0], repeats=7, warmup=3)
    assert set(stats) == {"median_s", "p90_s", "calls"}
    assert 0 < stats["median_s"] <= stats["p90_s"] < 1e-3
    assert stats["calls"] >= 7 and stats["calls"] % 7 == 0
    assert len(calls) >= 3 + 7
    with pytest.raises(InvalidParameterError, match="'repeats'"):
        measure_latency(calls.append, [0.0], repeats=0)
