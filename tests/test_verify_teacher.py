"""The teacher, side by side: searching a neural policy for states that break a property (sampling, then gradient
ascent), the teacher kind, the SB3 action Jacobian, ``verify --teacher``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import Controller, Signal, load_controller
from interp_rl.verify import parse_properties, search_policy, verify
from interp_rl.verify.properties import Property

ROOT = Path(__file__).resolve().parents[1]
HOPPER_MOE = ROOT / "benchmarks/results/recipe/cells/Hopper-SAC__moe-8__seed0"

FEATURES = [Signal("x0"), Signal("x1"), Signal("x2")]
ACTIONS = [Signal("u")]
LO, HI = -np.ones(3), np.ones(3)
CENTRE = np.array([0.25, -0.4, 0.1])
WIDTH = 0.03


class Bump:
    """A smooth stand-in teacher: ``u = exp(-|x - centre|^2 / (2 width^2))``, above 0.5 only in a ball of radius
    0.035 (a 5e-5 share of the box), with its exact gradient as the optional hook."""

    obs_dim, act_dim = 3, 1

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, obs: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        self.calls += len(X)
        return np.exp(-np.sum((X - CENTRE) ** 2, axis=1) / (2 * WIDTH**2))[:, None]

    def action_jacobian(self, obs: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        return (self.predict(X) * -(X - CENTRE) / WIDTH**2)[:, None, :]


def _prop(text: str) -> Property:
    return parse_properties(text, features=FEATURES, actions=ACTIONS).properties[0]


GENTLE = _prop('[[property]]\nname = "gentle"\nwhen = ["x0 >= 0", "x1 + x2 <= 0"]\nthen = ["u <= 0.5"]\n')


def _breaks(bump: Bump, prop: Property, x: np.ndarray) -> bool:
    """Through predict and the Inequality methods: in the domain, `when` holds and `then` fails."""
    X, zero = x[None, :], np.zeros((1, 1))
    inside = any(all(w.holds(X, zero)[0] for w in conj) for conj in prop.when)
    a = bump.predict(X)
    return bool(np.all(x >= LO) and np.all(x <= HI) and inside and any(not r.holds(X, a)[0] for r in prop.then))


@pytest.mark.parametrize("hook", [False, True], ids=["finite-differences", "gradient-hook"])
def test_ascent_finds_what_sampling_misses(hook: bool) -> None:
    bump = Bump()
    alone = search_policy(bump.predict, GENTLE, LO, HI, samples=2000, ascent_starts=0, seed=1)
    assert (alone.counterexamples, alone.sampled_violations, alone.worst) == (0, 0, None)
    found = search_policy(bump.predict, GENTLE, LO, HI, samples=2000, ascent_starts=16, seed=1,
                          gradient=bump.action_jacobian if hook else None)
    assert found.sampled_violations == 0 and found.samples == 2000
    assert found.counterexamples >= 1 and found.ascent_violations == found.counterexamples
    assert found.gradient == ("policy" if hook else "finite differences")
    w = found.worst
    assert w is not None and _breaks(bump, GENTLE, w.state)
    assert np.array_equal(w.action, bump.predict(w.state)[0])
    assert w.violation == pytest.approx(bump.predict(w.state)[0, 0] - 0.5)
    assert w.violation > 0.4  # climbed to near the top of the bump (1 - 0.5)
    assert found.summary() == f"{found.counterexamples} counterexample{'s' if found.counterexamples > 1 else ''}"


def test_a_property_the_policy_keeps_has_no_counterexamples() -> None:
    bump = Bump()
    prop = _prop('[[property]]\nname = "kept"\nwhen = ["x0 >= 0"]\nthen = ["u <= 1.01", "u >= 0"]\n')
    found = search_policy(bump.predict, prop, LO, HI, samples=2000, ascent_starts=16, seed=0,
                          gradient=bump.action_jacobian)
    assert (found.counterexamples, found.worst, found.ascents) == (0, None, 16)
    assert found.summary() == "none found in 2,000 + 16 ascents"


def test_samples_stay_in_when_and_the_search_is_deterministic() -> None:
    everywhere = lambda X: np.ones((len(X), 1))  # noqa: E731 - breaks `u <= 0.5` wherever `when` holds
    prop = _prop('[[property]]\nname = "p"\nwhen = ["abs(x0) >= 0.9", "x1 + x2 <= -0.5"]\nthen = ["u <= 0.5"]\n')
    found = search_policy(everywhere, prop, LO, HI, samples=1000, ascent_starts=4, seed=3)
    assert found.samples == 1000 and found.sampled_violations == 1000
    assert found.counterexamples == 1000  # distinct states; the ascents cannot climb a flat policy
    again = search_policy(everywhere, prop, LO, HI, samples=1000, ascent_starts=4, seed=3)
    assert np.array_equal(found.worst.state, again.worst.state)
    other = search_policy(everywhere, prop, LO, HI, samples=1000, ascent_starts=4, seed=4)
    assert not np.array_equal(found.worst.state, other.worst.state)
    bump = Bump()
    a = search_policy(bump.predict, GENTLE, LO, HI, samples=500, ascent_starts=8, seed=1)
    b = search_policy(bump.predict, GENTLE, LO, HI, samples=500, ascent_starts=8, seed=1)
    assert a.to_dict(["x0", "x1", "x2"], ["u"]) | {"seconds": 0} == b.to_dict(["x0", "x1", "x2"], ["u"]) | {"seconds": 0}


def test_pairs_for_monotone_and_lipschitz() -> None:
    wave = lambda X: np.sin(3 * X[:, :1])  # noqa: E731 - falls where |x0| > pi / 6
    line = lambda X: 2 * X[:, :1] - X[:, 1:2]  # noqa: E731
    mono = _prop('[[property]]\nname = "m"\nkind = "monotone"\naction = "u"\nfeature = "x0"\n')
    lip = _prop('[[property]]\nname = "l"\nkind = "lipschitz"\naction = "u"\nfeature = "x0"\nbound = 2.5\n')
    tight = _prop('[[property]]\nname = "t"\nkind = "lipschitz"\naction = "u"\nfeature = "x0"\nbound = 1.5\n')
    kw = {"samples": 500, "ascent_starts": 8, "seed": 0}
    assert search_policy(line, mono, LO, HI, **kw).counterexamples == 0
    assert search_policy(line, lip, LO, HI, **kw).counterexamples == 0
    broken = search_policy(line, tight, LO, HI, **kw)
    assert broken.counterexamples > 0 and broken.worst.violation == pytest.approx(0.5)
    fall = search_policy(wave, mono, LO, HI, **kw)
    w = fall.worst
    assert fall.counterexamples > 0 and w.other_state is not None and w.other_action is not None
    moved = np.flatnonzero(w.state != w.other_state)
    assert list(moved) == [0] and w.other_state[0] > w.state[0]  # the same state, x0 moved up
    assert wave(w.other_state[None, :])[0, 0] < wave(w.state[None, :])[0, 0]  # and u fell
    assert w.violation == pytest.approx(1 - np.sin(3.0), abs=1e-3)  # the longest fall: from x0 = pi / 6 to 1


# ----------------------------------------------------------------------------- verify(..., teacher=...)
HVAC = """
[domain]
from = "given"
features = {x0 = [-1, 1], x1 = [-1, 1], x2 = [-1, 1]}

[[property]]
name = "gentle"
when = ["x0 >= 0", "x1 + x2 <= 0"]
then = ["u <= 0.5"]

[[property]]
name = "bounded"
kind = "range"
action = "u"
within = [-1, 1]

[[property]]
name = "close to the teacher"
kind = "teacher"
epsilon = 0.3
"""


def _constant_tree(value: float) -> Controller:
    tree = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[0.0, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                                   intercept=[[value], [value], [value]], obs_dim=3, action_low=[-1], action_high=[1])
    return Controller(tree, FEATURES, ACTIONS)


def test_verify_shows_the_teacher_side_by_side(tmp_path: Path) -> None:
    ctrl, bump = _constant_tree(0.0), Bump()
    states = np.random.default_rng(0).uniform(LO, HI, size=(300, 3))
    states[:3] = CENTRE  # three visited states at the top of the bump
    result = verify(ctrl, HVAC, states=states, teacher=bump, seed=0)
    status = {v.name: v.status for v in result.verdicts}
    assert status == {"gentle": "proved", "bounded": "proved", "close to the teacher": "refuted"}
    gentle = result.teacher["gentle"]
    assert gentle.counterexamples > 0 and gentle.gradient == "policy"
    assert _breaks(bump, result.properties.properties[0], gentle.worst.state)
    assert result.teacher["bounded"].counterexamples == 0
    # the probabilistic check on the visited states, for the teacher: the three at the top break `gentle`
    s = result.teacher_sampled["gentle"]
    assert s.violations == 3 and s.states == int(((states[:, 0] >= 0) & (states[:, 1] + states[:, 2] <= 0)).sum())
    # the teacher kind: refuted where the controller (0) and the teacher (the bump) differ by more than 0.3
    v = result.verdict("close to the teacher")
    cex = v.counterexample
    assert cex is not None and cex.other_region == "teacher"
    assert abs(ctrl.predict(cex.state)[0] - bump.predict(cex.state)[0, 0]) > 0.3
    assert cex.violation == pytest.approx(abs(bump.predict(cex.state)[0, 0]) - 0.3)
    assert result.sampled["close to the teacher"].violations == 3
    lines = dict(result.side_by_side())
    assert lines["gentle"] == f"controller: proved · teacher: {gentle.counterexamples:,} counterexample" + \
        ("s" if gentle.counterexamples > 1 else "")
    assert lines["bounded"] == "controller: proved · teacher: none found in 20,000 + 64 ascents"
    header, rows = result.table()
    assert header[-2:] == ["teacher", "visited states the teacher breaks"]
    assert rows[1][-2:] == ["none found in 20,000 + 64 ascents", "0 of 300 (≤ 0.994% at 95%)"]
    paths = result.write(tmp_path)
    md = paths["markdown"].read_text()
    assert "**gentle**: controller: proved · teacher: " in md
    assert "close to the teacher: there the teacher gives u = " in md
    data = json.loads(paths["json"].read_text())
    row = {r["name"]: r for r in data["verdicts"]}
    assert row["gentle"]["teacher"]["counterexamples"] == gentle.counterexamples
    assert row["gentle"]["teacher_sampled"]["violations"] == 3
    assert row["close to the teacher"]["counterexample"]["other_region"] == "teacher"
    assert data["teacher"] == "Bump"


def test_a_teacher_the_controller_follows_is_tested_not_proved() -> None:
    ctrl = _constant_tree(0.25)

    class Same:
        def predict(self, obs: np.ndarray) -> np.ndarray:
            return ctrl.predict(obs) + 0.1

    result = verify(ctrl, HVAC, teacher=Same(), seed=0)
    v = result.verdict("close to the teacher")
    assert v.status == "unknown" and v.counterexample is None
    assert v.reason == ("tested on 20,000 sampled states and 64 gradient ascents, no disagreement above ε = 0.3 "
                        "found (not a proof)")
    alone = verify(ctrl, HVAC)
    assert alone.verdict("close to the teacher").status == "unknown" and not alone.teacher


def test_a_teacher_of_another_shape_is_refused() -> None:
    from interp_rl.errors import InterpRLError

    class Wide:
        obs_dim, act_dim = 5, 1

        def predict(self, obs: np.ndarray) -> np.ndarray:
            return np.zeros((len(obs), 1))

    with pytest.raises(InterpRLError, match=r"^The teacher observes 5 features and outputs 1 actions, but the "
                                            r"controller reads 3 and outputs 1; is it the teacher of this controller\?$"):
        verify(_constant_tree(0.0), HVAC, teacher=Wide())


# ----------------------------------------------------------------------------- SB3 teachers
@pytest.mark.parametrize("key", ["sac_hopper", "ppo_hopper"], ids=["sac-tanh", "ppo-vecnormalize-clip"])
def test_sb3_action_jacobian_agrees_with_finite_differences(teachers, key: str) -> None:
    import torch

    t = teachers[key]
    states = np.load(HOPPER_MOE / "states.npy")[:64]
    assert np.array_equal(t.predict_torch(torch.as_tensor(states)).detach().numpy(), t.predict(states))
    J = t.action_jacobian(states)
    assert J.shape == (64, t.act_dim, t.obs_dim)
    h = 1e-4 * (states.max(axis=0) - states.min(axis=0))
    fd = np.stack([(t.predict(states + h[j] * np.eye(11)[j]) - t.predict(states - h[j] * np.eye(11)[j])) / (2 * h[j])
                   for j in range(11)], axis=2)
    close = np.abs(J - fd) <= 1e-2 * (1 + np.abs(J))
    assert close.mean() > 0.95  # the rest straddle a ReLU kink or a clip within h
    assert np.abs(J).max() > 1  # not a network whose actions are all clipped


def test_hopper_teacher_breaks_the_foot_rule(teachers) -> None:
    """The shared SAC teacher against a rule its distilled mixture is refuted on too: both break it."""
    ctrl = load_controller(HOPPER_MOE)
    states = np.load(HOPPER_MOE / "states.npy")
    text = ('[domain]\nfrom = "visited"\n[[property]]\nname = "foot gentle near rest"\n'
            'when = ["abs(torso_vx) <= 0.1", "abs(torso_vz) <= 0.1"]\nthen = ["abs(foot_joint_torque) <= 0.5"]\n')
    result = verify(ctrl, text, states=states, teacher=teachers["sac_hopper"], seed=0)
    (v,) = result.verdicts
    found = result.teacher[v.name]
    assert v.status == "refuted" and found.gradient == "policy"
    assert found.counterexamples > 1000 and found.samples == 20_000
    w = found.worst
    x = w.state[None, :]
    assert np.all(w.state >= result.lower) and np.all(w.state <= result.upper)
    assert abs(w.state[5]) <= 0.1 and abs(w.state[6]) <= 0.1
    assert abs(teachers["sac_hopper"].predict(x)[0, 2]) > 0.5
    assert found.seconds < 10


# ----------------------------------------------------------------------------- the command line
def test_verify_command_with_a_teacher(tmp_path: Path) -> None:
    """A pendulum tree against an (untrained) SAC agent saved as a zip, loaded as `interp-rl distill` loads one."""
    import gymnasium as gym
    from stable_baselines3 import SAC
    from typer.testing import CliRunner

    from envs import task_signals
    from interp_rl.cli import app

    features, actions = task_signals("Pendulum-v1")
    tree = TreeProgram.from_leaves(feature=[1, -1, -1], threshold=[0.0, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                                   intercept=[[0.0], [-1.0], [0.5]], obs_dim=3, action_low=[-2], action_high=[2])
    folder = tmp_path / "pendulum"
    Controller(tree, features, actions, "Pendulum-v1").save(folder / "controller.json")
    SAC("MlpPolicy", gym.make("Pendulum-v1"), policy_kwargs={"net_arch": [16, 16]}, seed=0,
        buffer_size=10).save(tmp_path / "Pendulum-v1.zip")
    props = tmp_path / "pendulum.toml"
    props.write_text('[domain]\nfrom = "task"\n'
                     '[[property]]\nname = "push back"\nwhen = ["sin_theta >= 0.5"]\nthen = ["torque <= 0"]\n'
                     '[[property]]\nname = "gentle"\nkind = "range"\naction = "torque"\nwithin = [-1.5, 1.5]\n'
                     '[[property]]\nname = "follows"\nkind = "teacher"\nepsilon = 0.05\n')
    args = ["verify", str(folder), "--properties", str(props), "--teacher", str(tmp_path / "Pendulum-v1.zip"),
            "--seed", "1", "--out", str(tmp_path / "v")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 3, res.output  # the controller's `push back` and `follows` are refuted
    data = json.loads((tmp_path / "v/verification.json").read_text())
    row = {r["name"]: r for r in data["verdicts"]}
    assert row["push back"]["status"] == "refuted" and row["gentle"]["status"] == "proved"
    assert row["follows"]["status"] == "refuted"
    assert row["gentle"]["teacher"]["counterexamples"] == 0 and row["gentle"]["teacher"]["gradient"] == "policy"
    n = row["push back"]["teacher"]["counterexamples"]
    summary = f"{n:,} counterexamples" if n else "none found in 20,000 + 64 ascents"
    assert f"push back: controller: refuted (1 regions) · teacher: {summary}" in res.output
    assert "gentle: controller: proved · teacher: none found in 20,000 + 64 ascents" in res.output
    assert re.search(r"follows: there the teacher gives torque = ", res.output)
    again = CliRunner().invoke(app, args[:-2])
    assert again.exit_code == 3
    assert re.findall(r"teacher: [^\n]*", again.output) == re.findall(r"teacher: [^\n]*", res.output)
    bad = CliRunner().invoke(app, ["verify", str(folder), "--properties", str(props), "--teacher",
                                   str(tmp_path / "nope.zip")])
    assert bad.exit_code == 1 and "nope.zip" in bad.output and "does not exist" in bad.output
