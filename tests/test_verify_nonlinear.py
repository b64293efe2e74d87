"""Verification of equations (SINDy) controllers: interval bounds that hold for every factor function, proofs checked
on random states, counterexamples through predict and the exports, rules that touch their bound left unknown."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from interp_rl.errors import InvalidParameterError
from interp_rl.export import compile_c, find_compiler, load_c_controller, load_python_controller, write_exports
from interp_rl.kinds.equations import EquationsProgram
from interp_rl.program import Controller, Signal
from interp_rl.verify import parse_properties, verify
from interp_rl.verify.nonlinear import decide_nonlinear

# torque = 0.1 + 0.8*angle - 0.5*angle*speed + 0.3*sin(2*speed) + 0.2*cos(heat) + 0.25*angle*tanh(heat), in [-1, 1]
# brake = 1 - 2*angle + angle^2 = (angle - 1)^2, in [-2, 2]: it touches 0 at angle = 1
TERMS = [[("pow", 0, 1)], [("pow", 0, 2)], [("pow", 0, 1), ("pow", 1, 1)], [("sin", 1, 2.0)], [("cos", 2, 1.0)],
         [("pow", 0, 1), ("tanh", 2, 1.0)]]
PROGRAM = EquationsProgram(terms=TERMS, intercept=[0.1, 1.0],
                           coef=[[0.8, 0.0, -0.5, 0.3, 0.2, 0.25], [-2.0, 1.0, 0.0, 0.0, 0.0, 0.0]],
                           action_low=[-1.0, -2.0], action_high=[1.0, 2.0])
CTRL = Controller(PROGRAM, [Signal("angle", "rad"), Signal("speed", "m/s"), Signal("heat", "")],
                  [Signal("torque", "N m"), Signal("brake", "")])
DOMAIN = '[domain]\nfrom = "given"\nfeatures = {angle = [-1.5, 1.5], speed = [-1, 1], heat = [-2, 2]}\n'
PROPS = DOMAIN + """
[[property]]
name = "pushes back when tilted"
when = ["angle >= 0.5 [rad]"]
then = ["torque >= 0.1"]

[[property]]
name = "gentle when falling back"
when = ["angle + speed <= -1"]
then = ["torque <= -0.05"]

[[property]]
name = "torque follows the angle"
when = ["abs(speed) >= 0.2"]
then = ["torque - 0.5*angle <= 1.2"]

[[property]]
name = "joint limit"
then = ["torque + brake <= 2.5"]

[[property]]
name = "bounded"
kind = "range"
action = "torque"
within = [-1, 1]
"""
EXPECTED = {"pushes back when tilted": "proved", "gentle when falling back": "refuted",
            "torque follows the angle": "proved", "joint limit": "proved", "bounded": "proved"}


def _when(prop, X: np.ndarray) -> np.ndarray:
    zeros = np.zeros((len(X), CTRL.program.act_dim))
    inside = np.zeros(len(X), dtype=bool)
    for conj in prop.when:
        ok = np.ones(len(X), dtype=bool)
        for w in conj:
            ok &= w.holds(X, zeros)
        inside |= ok
    return inside


def _property(text: str):
    ps = parse_properties(DOMAIN + text, features=CTRL.features, actions=CTRL.actions)
    lo, hi = ps.domain.box(CTRL.features)
    return ps.properties[0], lo, hi


# ----------------------------------------------------------------------------- verdicts
def test_verdicts_are_sound_on_a_sindy_controller(tmp_path: Path) -> None:
    result = verify(CTRL, PROPS)
    assert {v.name: v.status for v in result.verdicts} == EXPECTED
    rng = np.random.default_rng(0)
    files = write_exports(CTRL, tmp_path, formats=("python", "c"))
    act_py = load_python_controller(files["python"])
    act_c = load_c_controller(compile_c(files["c"], tmp_path)) if find_compiler() else None
    for v, prop in zip(result.verdicts, result.properties.properties, strict=True):
        if v.status == "proved":  # holds on 100,000 random states of its domain
            X = rng.uniform(result.lower, result.upper, size=(100_000, 3))
            X = X[_when(prop, X)]
            A = CTRL.predict(X)
            for r in prop.then:
                assert r.holds(X, A).all(), v.name
        else:  # the counterexample breaks it through predict, the Python and the C export
            cex = v.counterexample
            assert cex is not None and cex.region == "equations" and cex.violation > 0
            assert np.all(cex.state >= result.lower) and np.all(cex.state <= result.upper)
            assert _when(prop, cex.state[None, :])[0]
            runs = [CTRL.predict(cex.state), np.array(act_py(cex.state.tolist()))]
            if act_c is not None:
                runs.append(np.array(act_c(cex.state.tolist())))
            for a in runs:
                assert np.array_equal(a, cex.action)
                assert any(not r.holds(cex.state[None, :], a[None, :])[0] for r in prop.then), v.name
    assert "gentle when falling back: refuted at angle = " in result.details()[0]
    assert result.seconds < 10


def test_a_rule_that_touches_its_bound_ends_unknown_with_the_unresolved_volume() -> None:
    """(angle - 1)^2 >= 0 holds with no margin at angle = 1: the bounds of every box around it stay above zero."""
    prop, lo, hi = _property('[[property]]\nname = "brake never negative"\nthen = ["brake >= 0"]\n')
    v = decide_nonlinear(CTRL, prop, lo, hi, max_boxes=2000)
    assert v.status == "unknown" and v.counterexample is None and v.regions <= 2000
    assert re.fullmatch(r"undecided after 1,999 boxes: [0-9.e+-]+% of the domain's volume where `when` may hold is "
                        r"unresolved; `brake >= 0` may fail there by at most [0-9.e+-]+, and no state found breaks it",
                        v.reason), v.reason
    share = float(re.search(r"boxes: ([0-9.e+-]+)%", v.reason).group(1))
    assert 0 < share < 1
    # with the smallest margin it is proved; the clock stops the search with a reason too
    prop, lo, hi = _property('[[property]]\nname = "brake never negative"\nthen = ["brake >= -1e-9"]\n')
    assert decide_nonlinear(CTRL, prop, lo, hi).status == "proved"
    prop, lo, hi = _property('[[property]]\nname = "brake never negative"\nthen = ["brake >= 0"]\n')
    assert decide_nonlinear(CTRL, prop, lo, hi, time_limit=1e-6).reason.startswith("undecided after 1e-06 s")


def test_the_search_is_deterministic() -> None:
    prop, lo, hi = _property('[[property]]\nname = "p"\nwhen = ["angle + speed <= -1"]\nthen = ["torque <= -0.05"]\n')
    a, b = (decide_nonlinear(CTRL, prop, lo, hi) for _ in range(2))
    assert (a.status, a.regions) == (b.status, b.regions)
    assert a.counterexample is not None and b.counterexample is not None
    assert np.array_equal(a.counterexample.state, b.counterexample.state)


def test_nan_actions_are_never_proved() -> None:
    """exp(x) - exp(x) is inf - inf = NaN once exp overflows: bounds say NaN, and predict breaks the rule there."""
    prog = EquationsProgram(terms=[[("exp", 0, 1.0)], [("exp", 0, 1.0), ("pow", 0, 1)]], intercept=[0.0],
                            coef=[[1.0, -1.0]])
    ctrl = Controller(prog, [Signal("x")], [Signal("u")])
    assert np.isnan(prog.action_bounds([700.0], [800.0])[0]).all()
    result = verify(ctrl, '[domain]\nfrom = "given"\nfeatures.x = [700, 800]\n[[property]]\nname = "p"\n'
                          'then = ["u <= 1e300"]\n')
    v = result.verdicts[0]
    assert v.status == "refuted" and np.isnan(v.counterexample.action).all()


def test_bad_budgets_are_one_line_errors() -> None:
    prop, lo, hi = _property('[[property]]\nname = "p"\nthen = ["torque <= 1"]\n')
    with pytest.raises(InvalidParameterError, match=re.escape("The 'max_boxes' parameter of decide_nonlinear must be "
                                                              "an int in [1, inf). Got 0 instead.")):
        decide_nonlinear(CTRL, prop, lo, hi, max_boxes=0)
    with pytest.raises(InvalidParameterError, match="The 'time_limit' parameter of decide_nonlinear must be a float"):
        decide_nonlinear(CTRL, prop, lo, hi, time_limit=0)


# ----------------------------------------------------------------------------- the bounds
FACTORS = st.one_of(
    st.tuples(st.just("pow"), st.integers(1, 16).map(float)),
    st.tuples(st.sampled_from(["sin", "cos"]), st.one_of(st.just(1.0), st.floats(-20, 20))),
    st.tuples(st.sampled_from(["tanh", "exp", "abs"]), st.just(1.0)),
)
BOXES = st.tuples(st.floats(-40, 40), st.one_of(st.just(0.0), st.floats(1e-12, 1e-6), st.floats(1e-3, 20)))


@settings(max_examples=300, deadline=None)
@example(factor=("pow", 1.0), box=(-7.404598101350796, 8.664417125860064), other=(0.0, 0.0), coef=-1.0, intercept=0.0,
         at=[1.0])
@given(factor=FACTORS, box=BOXES, other=BOXES, coef=st.floats(-1e3, 1e3), intercept=st.floats(-10, 10),
       at=st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_bounds_hold_for_every_factor_function(factor: tuple[str, float], box: tuple[float, float],
                                               other: tuple[float, float], coef: float, intercept: float,
                                               at: list[float]) -> None:
    """A factor alone, times a power of another feature, and beside a term that cancels much of it: every computed
    action at points of a random box (its corners among them) lies within the bounds."""
    func, arg = factor
    f = (func, 0, arg)
    prog = EquationsProgram(terms=[[f], [f, ("pow", 1, 2.0)], [("pow", 1, 1.0), f], [("pow", 0, 2.0)]],
                            intercept=[intercept, 0.0, -intercept],
                            coef=[[coef, 0.0, 0.0, 0.0], [0.5, -coef, 0.0, 0.0], [1.0, 0.0, 0.3, -1.0]],
                            action_low=[-50.0, -np.inf, -1.0], action_high=[50.0, np.inf, 1.0])
    lo = np.array([box[0] - box[1], other[0] - other[1]])
    hi = np.array([box[0] + box[1], other[0] + other[1]])
    t = np.array(at)[:, None]
    X = np.vstack([lo, hi, [lo[0], hi[1]], [hi[0], lo[1]], lo + t * (hi - lo), lo + np.hstack([t, t[::-1]]) * (hi - lo)])
    X = np.clip(X, lo, hi)  # lo + 1.0 * (hi - lo) can round one ulp past hi: a point outside the box proves nothing
    with np.errstate(all="ignore"):
        raw, low, high = prog.raw_predict(X), *prog.action_bounds(lo, hi, clip=False)
        clipped, clow, chigh = prog.predict(X), *prog.action_bounds(lo, hi)
    for y, a, b in ((raw, low, high), (clipped, clow, chigh)):
        checked = ~np.isnan(a) & ~np.isnan(b)  # NaN bounds: the arithmetic may give NaN there
        assert np.all((y >= a) | ~checked), (y.min(axis=0), a)
        assert np.all((y <= b) | ~checked), (y.max(axis=0), b)


def test_bounds_of_a_power_reuse_the_feature_and_shrink_with_the_box() -> None:
    prog = EquationsProgram(terms=[[("pow", 0, 2.0)], [("pow", 0, 1.0)]], intercept=[0.0], coef=[[1.0, -2.0]])
    assert EquationsProgram(terms=[[("pow", 0, 2.0)]], intercept=[0.0], coef=[[1.0]]).action_bounds(
        [-1.0], [2.0])[0][0] == 0.0
    for r in (0.1, 0.01, 0.001):  # x^2 - 2x around x = 1: the true range is [-1, r^2 - 1]
        low, high = prog.action_bounds([1 - r], [1 + r])
        assert -1 - 2.5 * r**2 <= low[0] <= -1 and r**2 - 1 <= high[0] <= 2.5 * r**2 - 1
