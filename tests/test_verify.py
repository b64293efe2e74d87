"""Verification: property files, LP verdicts against brute force, soundness on real benchmark controllers, the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interp_rl.export import compile_c, find_compiler, load_c_controller, load_python_controller, write_exports
from interp_rl.kinds.mixture import MixtureProgram, router_tree
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import Controller, Signal, load_controller
from interp_rl.verify import PropertyError, clopper_pearson_upper, parse_properties, verify

ROOT = Path(__file__).resolve().parents[1]
HOPPER_MOE = ROOT / "benchmarks/results/recipe/cells/Hopper-SAC__moe-8__seed0"
CHEETAH_TREE = ROOT / "benchmarks/results/mujoco/cells/HalfCheetah-SAC__tree-64__seed0"
CHEETAH_STATES = ROOT / "benchmarks/results/recipe/cells/HalfCheetah-SAC__moe-8__seed2/states.npy"

FEATURES = [Signal("angle", "rad"), Signal("speed", "m/s"), Signal("temp", "°C")]
ACTIONS = [Signal("force", "N"), Signal("torque", "N m")]


def _parse(text: str):
    return parse_properties(text, features=FEATURES, actions=ACTIONS)


# ----------------------------------------------------------------------------- property files
@pytest.mark.parametrize(("text", "message"), [
    ('[[property]]\nname = "p"\nthen = ["forse <= 1"]',
     "Property 'p': 'forse <= 1': 'forse' is not a feature or action of the controller"),
    ('[[property]]\nname = "p"\nwhen = ["angle >= 2 [deg]"]\nthen = ["force <= 1"]',
     "Property 'p': 'angle >= 2 [deg]': angle is in 'rad', not 'deg'."),
    ('[[property]]\nname = "p"\nwhen = ["force >= 2"]\nthen = ["force <= 1"]',
     "'force' is an action; `when` speaks of features only"),
    ('[[property]]\nname = "p"\nthen = ["angle * speed <= 1"]', "the product of two signals is not linear"),
    ('[[property]]\nname = "p"\nthen = ["abs(force) >= 1"]', "in `then` write it as two properties"),
    ('[[property]]\nname = "p"\nkind = "range"\naction = "force"', "a range property needs within"),
    ('[[property]]\nname = "p"\nkind = "monotone"\naction = "force"\nfeature = "angel"',
     "feature 'angel' is not one of the controller's features (angle, speed, temp)"),
    ('[[property]]\nname = "p"\nkind = "magic"', "kind 'magic' is not one of rule, range"),
    ('[[property]]\nname = "p"\nthen = ["force <= 1"]\n[[property]]\nname = "p"\nthen = ["force <= 2"]',
     "two properties are named 'p'"),
    ('[[property]]\nname = "p"\nthen = ["force <= 1"]\nwhen = ["angle >= "]', "the expression ends too early"),
    ("[[property]\n", "is not valid TOML"),
    ('[domain]\nfeatures.angel = [0, 1]\n[[property]]\nname = "p"\nthen = ["force <= 1"]',
     "[domain.features] names 'angel', which is not a feature"),
])
def test_bad_property_files_get_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(PropertyError) as info:
        _parse(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_inequalities_read_as_written() -> None:
    ps = _parse('[[property]]\nname = "p"\nwhen = ["-0.1 <= angle < 0.2 [rad]", "abs(speed) >= 1"]\n'
                'then = ["2*force - torque/4 + 0.5*temp <= 3", "force == 0"]')
    (p,) = ps.properties
    assert len(p.when) == 2  # abs(speed) >= 1 is an either-or
    assert [str(w) for w in p.when[0]] == ["-angle <= 0.1", "angle < 0.2", "-speed <= -1"]
    assert [str(w) for w in p.when[1]][-1] == "speed <= -1"
    assert [str(r) for r in p.then] == ["0.5*temp + 2*force - 0.25*torque <= 3", "force <= 0", "-force <= 0"]


def test_unsatisfiable_when_and_unbounded_domain_are_errors() -> None:
    tree = TreeProgram.from_leaves(feature=[-1], threshold=[0.0], left=[-1], right=[-1], intercept=[[0.0, 0.0]],
                                   obs_dim=3)
    ctrl = Controller(tree, FEATURES, ACTIONS)
    text = ('[domain]\nfrom = "given"\nfeatures = {angle = [-1, 1], speed = [-1, 1], temp = [0, 40]}\n'
            '[[property]]\nname = "never"\nwhen = ["angle >= 0.5", "angle + speed <= -1.6"]\nthen = ["force <= 1"]')
    with pytest.raises(PropertyError, match=r"Property 'never': `when` \(angle >= 0.5 and angle \+ speed <= -1.6\) "
                                            "never holds in the domain"):
        verify(ctrl, text)
    with pytest.raises(PropertyError, match="no finite range for speed, temp; give speed = "):
        verify(ctrl, '[domain]\nfrom = "given"\nfeatures.angle = [0, 1]\n[[property]]\nname = "p"\n'
                     'then = ["force <= 1"]')


def test_clopper_pearson_matches_the_beta_quantile() -> None:
    from scipy.stats import beta

    assert clopper_pearson_upper(3, 50) == pytest.approx(beta.ppf(0.95, 4, 47))
    assert clopper_pearson_upper(0, 0) == 1.0


# ----------------------------------------------------------------------------- LP verdicts against brute force
_Q = st.integers(-8, 8).map(lambda k: k / 4)  # quarter steps: ties, equalities and thresholds are hit exactly


@st.composite
def _small_tree(draw: st.DrawFn, linear: bool) -> TreeProgram:
    n_feat, act_dim = 2, 2
    feature, threshold, left, right = [], [], [], []

    def node(depth: int) -> int:
        i = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        if depth < 3 and draw(st.booleans()):
            feature[i] = draw(st.integers(0, n_feat - 1))
            threshold[i] = draw(_Q)
            left[i] = node(depth + 1)
            right[i] = node(depth + 1)
        return i

    node(0)
    n = len(feature)
    intercept = [[draw(_Q) for _ in range(act_dim)] for _ in range(n)]
    coef = np.zeros((n, act_dim, n_feat))
    if linear:
        for i in range(n):
            coef[i] = np.array([[draw(_Q) for _ in range(n_feat)] for _ in range(act_dim)])
    return TreeProgram(feature=feature, threshold=threshold, left=left, right=right, intercept=intercept,
                       coef=coef, action_low=[-1.5, -np.inf], action_high=[1.5, 1.25])


def _grid(ctrl: Controller, prop, lo, hi) -> tuple[bool, float]:
    """Whether some state breaks the property, and its largest violation, over every corner the verdict can
    depend on: the domain's bounds, the thresholds and the floats just past them, the bounds `when` gives
    (exact for constant leaves, and for affine leaves with a requirement on one action)."""
    tree = ctrl.program
    values = []
    for j in range(len(lo)):
        cand = {lo[j], hi[j]}
        for t in tree.threshold[tree.feature == j]:
            cand |= {float(t), float(np.nextafter(t, np.inf))}
        for conj in prop.when:
            for w in conj:
                if list(np.flatnonzero(w.feat)) == [j]:
                    b = w.rhs / w.feat[j]
                    cand |= {b, float(np.nextafter(b, np.inf)), float(np.nextafter(b, -np.inf))}
        values.append(sorted(v for v in cand if lo[j] <= v <= hi[j]))
    X = np.array(list(itertools.product(*values)))
    A = ctrl.program.predict(X)
    inside = np.zeros(len(X), dtype=bool)
    for conj in prop.when:
        ok = np.ones(len(X), dtype=bool)
        for w in conj:
            ok &= w.holds(X, np.zeros((len(X), 2)))
        inside |= ok
    broken = any(bool((~r.holds(X, A))[inside].any()) for r in prop.then)
    worst = max((float(r.value(X, A)[inside].max()) for r in prop.then if inside.any()), default=-np.inf)
    return broken, worst


_WHEN = st.sampled_from([[], ["x0 >= 0.5"], ["x0 > 0.5", "x1 <= -0.25"], ["abs(x1) <= 0.75"], ["abs(x0) > 1"],
                         ["-1 < x1 < 1.25", "x0 <= 0"]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_small_tree(linear=False), when=_WHEN,
       then=st.sampled_from(["a0 <= 0.5", "a0 + a1 < 1", "a1 - x0 >= -0.25", "abs(a0) <= 1.25", "a0 - 2*a1 + x1 <= 0"]))
def test_lp_verdicts_agree_with_brute_force_on_constant_trees(tree: TreeProgram, when: list[str], then: str) -> None:
    _agree(tree, when, then)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_small_tree(linear=True), when=_WHEN,
       then=st.sampled_from(["a0 <= 0.5", "a0 > -1", "a1 <= 1", "a1 >= 0", "abs(a0) < 1.5"]))
def test_lp_verdicts_agree_with_brute_force_on_affine_leaves(tree: TreeProgram, when: list[str], then: str) -> None:
    _agree(tree, when, then)


def _verify_small(tree: TreeProgram, when: list[str], body: str):
    """The verdict on one property of a two-feature tree over [-2, 2]^2 (``None`` when `when` never holds there)."""
    ctrl = Controller(tree, [Signal("x0"), Signal("x1")], [Signal("a0"), Signal("a1")])
    text = ('[domain]\nfrom = "given"\nfeatures = {x0 = [-2, 2], x1 = [-2, 2]}\n[[property]]\nname = "p"\n'
            f"when = {json.dumps(when)}\n{body}\n")
    try:
        return ctrl, verify(ctrl, text)
    except PropertyError as exc:
        assert "never holds in the domain" in str(exc)
        return None


def _agree(tree: TreeProgram, when: list[str], then: str) -> None:
    got = _verify_small(tree, when, f"then = {json.dumps([then])}")
    if got is None:
        return
    ctrl, result = got
    (v,) = result.verdicts
    prop = result.properties.properties[0]
    broken, worst = _grid(ctrl, prop, result.lower, result.upper)
    if v.status == "proved":
        assert not broken, (then, when)
    elif v.status == "refuted":
        assert broken, (then, when)
        cex = v.counterexample
        assert cex is not None
        a = tree.predict(cex.state[None, :])
        assert any(not r.holds(cex.state[None, :], a)[0] for r in prop.then)
    else:  # only where a bound is met (up to rounding) and rounding could go either way
        assert not broken and abs(worst) <= 1e-12, (v.reason, worst)


def _line_violation(ctrl: Controller, prop, lo, hi) -> bool:
    """Whether consecutive corner states along the feature break a monotone or Lipschitz property (exact for
    these trees: between two consecutive candidates one clipped affine piece acts)."""
    tree, f = ctrl.program, prop.feature
    g = 1 - f
    cand = []
    for j in range(2):
        c = {lo[j], hi[j]}
        for t in tree.threshold[tree.feature == j]:
            c |= {float(t), float(np.nextafter(t, np.inf))}
        for conj in prop.when:
            for w in conj:
                if list(np.flatnonzero(w.feat)) == [j]:
                    b = w.rhs / w.feat[j]
                    c |= {b, float(np.nextafter(b, np.inf)), float(np.nextafter(b, -np.inf))}
        cand.append(sorted(v for v in c if lo[j] <= v <= hi[j]))
    for conj in prop.when:
        for v in cand[g]:
            X = np.zeros((len(cand[f]), 2))
            X[:, f], X[:, g] = cand[f], v
            ok = np.ones(len(X), dtype=bool)
            for w in conj:
                ok &= w.holds(X, np.zeros((len(X), 2)))
            X = X[ok]
            if len(X) < 2:
                continue
            a = tree.predict(X)[:, prop.action]
            da, dx = np.diff(a), np.diff(X[:, f])
            if prop.kind == "monotone" and np.any(prop.direction * da < 0):
                return True
            if prop.kind == "lipschitz" and np.any(np.abs(da) > prop.bound * dx):
                return True
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_small_tree(linear=False), when=_WHEN, feature=st.sampled_from(["x0", "x1"]),
       kind=st.sampled_from(['kind = "monotone"\ndirection = "increasing"', 'kind = "monotone"\ndirection = "decreasing"',
                             'kind = "lipschitz"\nbound = 3']))
def test_monotone_and_lipschitz_verdicts_agree_with_brute_force(tree: TreeProgram, when: list[str], feature: str,
                                                                 kind: str) -> None:
    _agree_slope(tree, when, feature, kind)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_small_tree(linear=True), when=_WHEN, feature=st.sampled_from(["x0", "x1"]),
       direction=st.sampled_from(["increasing", "decreasing"]))
def test_monotone_verdicts_agree_with_brute_force_on_affine_leaves(tree: TreeProgram, when: list[str], feature: str,
                                                                   direction: str) -> None:
    _agree_slope(tree, when, feature, f'kind = "monotone"\ndirection = "{direction}"')


def _agree_slope(tree: TreeProgram, when: list[str], feature: str, kind: str) -> None:
    got = _verify_small(tree, when, f'{kind}\naction = "a0"\nfeature = "{feature}"')
    if got is None:
        return
    ctrl, result = got
    (v,) = result.verdicts
    prop = result.properties.properties[0]
    broken = _line_violation(ctrl, prop, result.lower, result.upper)
    if v.status == "proved":
        assert not broken, (kind, feature, when)
    elif v.status == "refuted":
        cex = v.counterexample
        assert cex is not None and cex.other_state is not None
        a = tree.predict(np.stack([cex.state, cex.other_state]))[:, prop.action]
        h = cex.other_state[prop.feature] - cex.state[prop.feature]
        assert h > 0 and np.array_equal(np.delete(cex.state, prop.feature), np.delete(cex.other_state, prop.feature))
        if prop.kind == "monotone":
            assert prop.direction * (a[1] - a[0]) < 0
        else:
            assert abs(a[1] - a[0]) > prop.bound * h
    else:
        assert not broken, v.reason


# ----------------------------------------------------------------------------- soundness on the benchmark's controllers
HOPPER_PROPS = """
[domain]
from = "visited"
margin = 0.1

[[property]]
name = "bounded"
why = "Clipping keeps every torque in the motor's range."
kind = "range"
action = "thigh_joint_torque"
within = [-1, 1]

[[property]]
name = "thigh range upright"
why = "A test rule the mixture breaks."
when = ["abs(torso_pitch) <= 0.1 [rad]"]
kind = "range"
action = "thigh_joint_torque"
within = [-0.95, 0.95]

[[property]]
name = "foot gentle near rest"
when = ["abs(torso_vx) <= 0.1", "abs(torso_vz) <= 0.1"]
then = ["abs(foot_joint_torque) <= 0.5"]

[[property]]
name = "sum"
when = ["torso_pitch - thigh_joint_angle >= 0.2"]
then = ["thigh_joint_torque + leg_joint_torque - 0.1*torso_vx <= 2.5"]
"""


@pytest.mark.parametrize("path", [HOPPER_MOE, CHEETAH_TREE], ids=["hopper-mixture", "cheetah-tree-64"])
def test_verdicts_are_sound_on_benchmark_controllers(path: Path, tmp_path: Path) -> None:
    ctrl = load_controller(path)
    states = np.load(path / "states.npy") if (path / "states.npy").is_file() else np.load(CHEETAH_STATES)
    if ctrl.task.startswith("HalfCheetah"):
        text = HOPPER_PROPS.replace("thigh_joint_torque", "bthigh_torque").replace("leg_joint_torque", "bshin_torque") \
            .replace("foot_joint_torque", "bfoot_torque").replace("thigh_joint_angle", "bthigh_angle")
    else:
        text = HOPPER_PROPS
    result = verify(ctrl, text, states=states)
    statuses = {v.name: v.status for v in result.verdicts}
    assert statuses["bounded"] == "proved"
    assert "refuted" in statuses.values()
    assert "unknown" not in statuses.values()
    rng = np.random.default_rng(0)
    files = write_exports(ctrl, tmp_path, formats=("python", "c"))
    act_py = load_python_controller(files["python"])
    act_c = load_c_controller(compile_c(files["c"], tmp_path)) if find_compiler() else None
    for v, prop in zip(result.verdicts, result.properties.properties, strict=True):
        if v.status == "proved":  # holds on 100,000 random states of its domain
            X = rng.uniform(result.lower, result.upper, size=(100_000, len(result.lower)))
            zeros = np.zeros((len(X), ctrl.program.act_dim))
            inside = np.zeros(len(X), dtype=bool)
            for conj in prop.when:
                ok = np.ones(len(X), dtype=bool)
                for w in conj:
                    ok &= w.holds(X, zeros)
                inside |= ok
            A = ctrl.predict(X[inside])
            for r in prop.then:
                assert r.holds(X[inside], A).all(), v.name
        elif v.status == "refuted":  # the counterexample breaks it through predict, the Python and the C export
            cex = v.counterexample
            assert cex is not None
            assert np.all(cex.state >= result.lower) and np.all(cex.state <= result.upper)
            zero = np.zeros((1, ctrl.program.act_dim))
            assert any(all(w.holds(cex.state[None, :], zero)[0] for w in conj) for conj in prop.when)
            runs = [ctrl.predict(cex.state), np.array(act_py(cex.state.tolist()))]
            if act_c is not None:
                runs.append(np.array(act_c(cex.state.tolist())))
            for a in runs:
                assert np.array_equal(a, cex.action)
                assert any(not r.holds(cex.state[None, :], a[None, :])[0] for r in prop.then), v.name
    assert result.seconds < 60  # generous here; the benchmark's timing is measured in benchmarks/


def test_mixture_routers_agree_on_regions() -> None:
    """Tree-routed and linearly routed mixtures: every random state lies in a region of the expert that acts."""
    rng = np.random.default_rng(3)
    lin = MixtureProgram(expert_intercept=rng.normal(size=(3, 1)), expert_coef=rng.normal(size=(3, 1, 2)),
                         router_intercept=rng.normal(size=3), router_coef=rng.normal(size=(3, 2)))
    tree = router_tree(feature=[0, 1, -1, -1, -1], threshold=[0.1, -0.3, 0, 0, 0], left=[1, 3, -1, -1, -1],
                       right=[2, 4, -1, -1, -1], expert=[0, 0, 2, 1, 0], obs_dim=2)
    routed = MixtureProgram(expert_intercept=lin.expert_intercept, expert_coef=lin.expert_coef, tree=tree)
    scores = [router_tree(feature=[k % 2, -1, -1], threshold=[0.2 * k, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                          expert=[0, float(k), float(2 - k)], obs_dim=2) for k in range(3)]
    scored = MixtureProgram(expert_intercept=lin.expert_intercept, expert_coef=lin.expert_coef, score_trees=scores)
    X = rng.uniform(-2, 2, size=(2000, 2))
    for prog in (lin, routed, scored):
        regions = prog.regions()
        acting = prog.route(X)
        for x, m in zip(X, acting, strict=True):
            inside = [r.piece for r in regions if np.all(x >= r.lower) and np.all(x <= r.upper)
                      and np.all(r.A @ x <= r.b + 1e-12)]
            assert m in inside


@pytest.mark.parametrize(("then", "status"), [("a0 <= 0.99", "proved"), ("a0 <= 0.98", "refuted"),
                                             ("a1 >= -0.9", "proved"), ("a1 > -0.85", "refuted")])
def test_tanh_squashed_linear_programs_verify(then: str, status: str) -> None:
    """An imported ARS agent's form: a0 = tanh(2 x0 + 0.5 x1) in [-1, 1], a1 = -1 + 1.5 (tanh(x1 - 0.25) + 1) / 2;
    on [-1, 1]^2 a0 peaks at tanh(2.5) = 0.9866 and a1 bottoms at -1 + 0.75 (tanh(-1.25) + 1) = -0.886, so
    the rules are decided, and every refutation's state breaks the rule."""
    from interp_rl.kinds.linear import LinearProgram

    prog = LinearProgram(intercept=[0.0, -0.25], coef=[[2.0, 0.5], [0.0, 1.0]], action_low=[-1.0, -1.0],
                         action_high=[1.0, 0.5], squash="tanh")
    ctrl = Controller(prog, [Signal("x0"), Signal("x1")], [Signal("a0"), Signal("a1")])
    text = ('[domain]\nfrom = "given"\nfeatures = {x0 = [-1, 1], x1 = [-1, 1]}\n[[property]]\nname = "p"\n'
            f"then = {json.dumps([then])}\n")
    (v,) = verify(ctrl, text).verdicts
    assert v.status == status, (then, v)
    if status == "refuted":
        state = v.counterexample.state
        rule = parse_properties(text, features=ctrl.features, actions=ctrl.actions).properties[0].then[0]
        assert not rule.holds(state[None, :], prog.predict(state[None, :]))[0]


# ----------------------------------------------------------------------------- the command line
def test_verify_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interp_rl.cli import app

    props = tmp_path / "hopper.toml"
    props.write_text(HOPPER_PROPS)
    res = CliRunner().invoke(app, ["verify", str(HOPPER_MOE), "--properties", str(props), "--out",
                                   str(tmp_path / "v")])
    assert res.exit_code == 3, res.output
    assert "refuted at torso_z = " in res.output
    data = json.loads((tmp_path / "v/verification.json").read_text())
    assert data["counts"]["proved"] >= 1 and data["counts"]["refuted"] >= 1
    assert (tmp_path / "v/verification.md").read_text().count("refuted") >= 1
    replay = next(line for line in res.output.splitlines() if "replay 'thigh range upright'" in line)
    obs = replay.split("--obs ")[1].strip()
    cex = next(v for v in data["verdicts"] if v["name"] == "thigh range upright")["counterexample"]
    assert np.array_equal(np.array([float(v) for v in obs.split(",")]), np.array(list(cex["state"].values())))
    drawn = CliRunner().invoke(app, ["viz", str(HOPPER_MOE), "--obs", obs, "--text"])
    assert drawn.exit_code == 0 and f"{cex['region']}" in drawn.output, drawn.output
    only = CliRunner().invoke(app, ["verify", str(HOPPER_MOE), "--properties", str(props), "--property", "bounded"])
    assert only.exit_code == 0, only.output
    bad = CliRunner().invoke(app, ["verify", str(HOPPER_MOE), "--properties", str(tmp_path / "nope.toml")])
    assert bad.exit_code == 1
    assert "Property file" in bad.output and "does not exist" in bad.output


# ----------------------------------------------------------------------------- repair
def test_repair_refits_only_failing_leaves_until_proved() -> None:
    from interp_rl.verify.refit import repair

    rng = np.random.default_rng(0)
    X = rng.uniform([10, 0], [30, 1], size=(2000, 2))
    Y = (0.3 * (22 - X[:, :1]) + 0.5 * X[:, 1:]).clip(-1, 1)  # too eager when hot and occupied
    tree = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[23.5, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                                   intercept=[[0.0], [0.2], [0.3]], coef={1: {(0, 0): -0.05}, 2: {(0, 1): 0.5}},
                                   obs_dim=2, action_low=[-1], action_high=[1])
    ctrl = Controller(tree, [Signal("zone_temperature", "°C"), Signal("occupancy")], [Signal("setpoint_change", "°C")])
    text = ('[domain]\nfrom = "given"\nfeatures = {zone_temperature = [10, 35], occupancy = [0, 1]}\n'
            '[[property]]\nname = "hot and occupied"\nwhen = ["zone_temperature > 23.5 [°C]", "occupancy >= 0.5"]\n'
            'then = ["setpoint_change <= 0"]\n')
    before = verify(ctrl, text)
    assert before.verdicts[0].status == "refuted"
    fixed = repair(ctrl, before, X, Y)
    assert fixed.pieces == ["leaf 2"]
    after = verify(fixed.controller, text)
    assert after.verdicts[0].status == "proved"
    new = fixed.controller.program
    assert np.array_equal(new.intercept[1], tree.intercept[1]) and np.array_equal(new.coef[1], tree.coef[1])
    assert np.array_equal(new.coef[2] != 0, tree.coef[2] != 0)  # structure kept
    assert np.array_equal(new.feature, tree.feature) and np.array_equal(new.threshold, tree.threshold)


def test_verify_repair_command(tmp_path: Path) -> None:
    """A pendulum tree that pushes the wrong way when falling right is repaired from its data, end to end."""
    from typer.testing import CliRunner

    from envs import task_signals
    from interp_rl.cli import app
    from interp_rl.evidence import DistillationData, save_data

    features, actions = task_signals("Pendulum-v1")
    rng = np.random.default_rng(0)
    th = rng.uniform(-np.pi, np.pi, 3000)
    X = np.stack([np.cos(th), np.sin(th), rng.uniform(-8, 8, 3000)], axis=1)
    Y = (-10 * X[:, 1:2] - 1.0 * X[:, 2:3]).clip(-2, 2)
    tree = TreeProgram.from_leaves(feature=[1, -1, -1], threshold=[0.0, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                                   intercept=[[0.0], [1.0], [0.5]], coef={2: {(0, 2): -1.0}}, obs_dim=3,
                                   action_low=[-2], action_high=[2])
    folder = tmp_path / "pendulum"
    Controller(tree, features, actions, "Pendulum-v1").save(folder / "controller.json")
    save_data(folder, DistillationData(X, Y))
    props = tmp_path / "pendulum.toml"
    props.write_text('[domain]\nfrom = "task"\n[[property]]\nname = "push back"\n'
                     'when = ["sin_theta >= 0.5", "theta_dot >= 0"]\nthen = ["torque <= 0"]\n')
    res = CliRunner().invoke(app, ["verify", str(folder), "--properties", str(props), "--repair", "--out",
                                   str(tmp_path / "r"), "--episodes", "2"])
    assert res.exit_code == 0, res.output
    assert "refuted at cos_theta = " in res.output
    assert "after repair: push back: proved" in res.output and "before," in res.output
    fixed = load_controller(tmp_path / "r")
    assert verify(fixed, props.read_text(), task_bounds=(-np.array([1.0, 1.0, 8.0]), np.array([1.0, 1.0, 8.0]))
                  ).verdicts[0].status == "proved"


# ----------------------------------------------------------------------------- a plant with logs, no simulator
def test_building_log_end_to_end_distil_verify_repair_verify(tmp_path: Path) -> None:
    """The logged-data path: a synthetic building log, a tree learnt from it, the occupancy rules checked on the
    setpoint it plays, repaired, and checked again."""
    from typer.testing import CliRunner

    from interp_rl.cli import app
    from interp_rl.datasets import write_building_log

    write_building_log(tmp_path / "building.csv", n_days=14)
    runner = CliRunner()
    res = runner.invoke(app, ["distill", "tree", "--data", str(tmp_path / "building.csv"), "--max-leaves", "8",
                              "--leaf-model", "constant", "--seed", "0", "--out", str(tmp_path / "tree")])
    assert res.exit_code == 0, res.output
    props = ROOT / "benchmarks/properties/building.toml"
    res = runner.invoke(app, ["verify", str(tmp_path / "tree"), "--properties", str(props), "--out",
                              str(tmp_path / "checked")])
    assert res.exit_code == 3, res.output
    before = json.loads((tmp_path / "checked/verification.json").read_text())
    status = {v["name"]: v["status"] for v in before["verdicts"]}
    assert status["occupied and hot: never raised"] == "refuted"
    cex = next(v for v in before["verdicts"] if v["name"] == "occupied and hot: never raised")["counterexample"]
    assert cex["state"]["occupancy"] >= 0.5 and cex["state"]["zone_temperature"] > 23.5
    assert cex["action"]["heating_setpoint"] > 20
    res = runner.invoke(app, ["verify", str(tmp_path / "tree"), "--properties", str(props), "--repair",
                              "--repair-by", "whole", "--out", str(tmp_path / "repaired")])
    assert res.exit_code == 0, res.output
    assert "No simulator for building-heating" in res.output and "distillation rows" in res.output
    fixed = load_controller(tmp_path / "repaired")
    again = verify(fixed, props)
    assert [v.status for v in again.verdicts] == ["proved"] * 3
    old = load_controller(tmp_path / "tree").program
    assert np.array_equal(fixed.program.feature, old.feature) and np.array_equal(fixed.program.threshold,
                                                                                   old.threshold)
    from interp_rl.logged_data import class_values

    data = np.load(tmp_path / "tree/distillation.npz")
    X, logged = data["observations"], np.argmax(data["actions"], axis=1)
    played = class_values(fixed, X)
    assert set(np.unique(played)) <= set(range(15, 23))

    # Cutting the failing leaves at zone_temperature > 23.5 instead: the same rules proved, the cold part of each
    # leaf left alone, so it plays the logged setpoint far more often than refitting whole leaves (issue 45).
    res = runner.invoke(app, ["verify", str(tmp_path / "tree"), "--properties", str(props), "--repair", "--out",
                              str(tmp_path / "cut")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "Repair by cutting: cut leaf 2 at zone_temperature > 23.5 °C" in text
    assert "Repair by refitting whole pieces: refitted leaf 2, leaf 6, leaf 7; 3 of 3 proved after" in text
    cut = load_controller(tmp_path / "cut")
    assert [v.status for v in verify(cut, props).verdicts] == ["proved"] * 3
    assert cut.program.n_leaves > old.n_leaves and "cut" in cut.metadata
    same = {name: float(np.mean(np.argmax(c.predict(X), axis=1) == logged))
            for name, c in (("before", load_controller(tmp_path / "tree")), ("whole", fixed), ("cut", cut))}
    assert same["cut"] >= same["before"] - 0.01 and same["whole"] < same["cut"] - 0.1, same
    assert f"after: plays the logged class on {100 * same['cut']:.1f}% of its {len(X)} distillation rows" in text
    res = runner.invoke(app, ["verify", str(tmp_path / "tree"), "--properties", str(props), "--repair",
                              "--repair-by", "nope", "--out", str(tmp_path / "x")])
    assert res.exit_code == 1 and "--repair-by must be one of best, whole, split. Got 'nope' instead." in res.output
