"""A new kind of property is one class: a toy kind defined here only, registered, read from a property file through
``verify``, proved on one tree, refuted on another with a concrete counterexample, checked on visited states,
searched on a teacher, told in the report in its own words, and unregistered again.

Nothing outside this file changes. The toy is a dead band: while a feature stays within a band, an action stays
within ``±epsilon`` of zero (a heater that idles near its setpoint). It is a rule whose ``when`` and ``then`` it
writes itself from its own keys, so it is decided, searched and checked as a rule is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import Controller, Signal
from interp_rl.verify import (
    PROPERTY_KINDS,
    Property,
    PropertyError,
    Table,
    Verdict,
    clopper_pearson_upper,
    parse_properties,
    register_property,
    verify,
)
from interp_rl.verify.kinds import RuleProperty


@dataclass
class DeadBandProperty(RuleProperty):
    """While ``feature`` is within ``band = [low, high]``, ``action`` stays within ``±epsilon`` of zero."""

    kind = "deadband"
    keys = ("feature", "band", "action", "epsilon")
    needs = ("feature", "band", "action", "epsilon")

    feature: int = -1
    action: int = -1
    epsilon: float = 0.0

    @classmethod
    def from_table(cls, table: Table) -> DeadBandProperty:
        feature, action = table.feature(), table.action()
        low, high = table.interval("band")
        epsilon = table.number("epsilon")
        if epsilon < 0:
            raise table.error(f"epsilon must be >= 0; got {epsilon:g}.")
        band = f"{low!r} <= {table.features[feature].name} <= {high!r}"  # every digit: parsed back as `when`
        when = [conj + extra for conj in table.when for extra in table.conditions(band)]
        then_text = [f"abs({table.actions[action].name}) <= {epsilon!r}"]
        return cls(**{**table.common, "when": when, "when_text": [*table.when_text, band]},
                   then=table.requirements(then_text[0]), then_text=then_text, feature=feature, action=action,
                   epsilon=epsilon)

    def detail(self, verdict: Verdict, controller: Controller, precision: int = 4) -> str | None:
        cex = verdict.counterexample
        if cex is None:
            return super().detail(verdict, controller, precision)
        f, a = controller.features[self.feature].name, controller.actions[self.action].name
        return (f"{verdict.name}: at {f} = {cex.state[self.feature]:.{precision}g}, inside its dead band, {cex.region} "
                f"gives {a} = {cex.action[self.action]:.{precision}g} (allowed: ±{self.epsilon:g}).")


@pytest.fixture
def deadband() -> Iterator[type[Property]]:
    register_property(DeadBandProperty)
    try:
        yield DeadBandProperty
    finally:
        del PROPERTY_KINDS["deadband"]


FEATURES = [Signal("temp", "°C"), Signal("occupancy")]
ACTIONS = [Signal("heat")]
TEXT = '''
[domain]
from = "given"
features.temp = [10, 30]
features.occupancy = [0, 1]

[[property]]
name = "idle near the setpoint"
why = "Within a degree and a half of 21 °C, an occupied room needs neither heating nor cooling."
kind = "deadband"
when = ["occupancy >= 0.5"]
feature = "temp"
band = [19.5, 22.5]
action = "heat"
epsilon = 0.1
'''
NAME = "idle near the setpoint"


def _tree(feature: list[int], threshold: list[float], left: list[int], right: list[int], leaves: list[float]
          ) -> Controller:
    tree = TreeProgram.from_leaves(feature=feature, threshold=threshold, left=left, right=right,
                                   intercept=[[v] for v in leaves], obs_dim=2, action_low=[-1], action_high=[1])
    return Controller(tree, FEATURES, ACTIONS, task="toy room")


#: Heats below 19 °C, idles (0.05) up to 23 °C, cools above: it keeps the dead band.
IDLES = _tree([0, -1, 0, -1, -1], [19.0, 0, 23.0, 0, 0], [1, -1, 3, -1, -1], [2, -1, 4, -1, -1],
              [0.0, 1.0, 0.0, 0.05, -1.0])
#: Heats at half power up to 21 °C: it breaks the dead band's lower half.
HEATS = _tree([0, -1, -1], [21.0, 0, 0], [1, -1, -1], [2, -1, -1], [0.0, 0.5, 0.0])


def test_the_kind_reads_its_own_keys(deadband: type[Property]) -> None:
    (prop,) = parse_properties(TEXT, features=FEATURES, actions=ACTIONS).properties
    assert type(prop) is DeadBandProperty and prop.kind == "deadband" and prop.pointwise
    assert (prop.feature, prop.action, prop.epsilon) == (0, 0, 0.1)
    assert [str(w) for w in prop.when[0]] == ["-occupancy <= -0.5", "-temp <= -19.5", "temp <= 22.5"]
    assert [str(r) for r in prop.then] == ["heat <= 0.1", "-heat <= 0.1"]
    assert prop.statement == "when occupancy >= 0.5 and 19.5 <= temp <= 22.5: abs(heat) <= 0.1"


@pytest.mark.parametrize(("line", "instead", "message"), [
    ('epsilon = 0.1', '', "a deadband property needs epsilon."),
    ('epsilon = 0.1', 'epsilon = -0.1', "epsilon must be >= 0; got -0.1."),
    ('band = [19.5, 22.5]', 'band = [22.5, 19.5]', "band = [22.5, 19.5] is empty (low above high)."),
    ('band = [19.5, 22.5]', 'band = [19.5]', "band must be [low, high]; got [19.5]."),
    ('band = [19.5, 22.5]', 'band = [19.5, "22.5"]', "band must be a finite number; got '22.5'."),
    ('feature = "temp"', 'feature = "temperature"', "feature 'temperature' is not one of the controller's features "
                                                    "(temp, occupancy)."),
    ('band = [19.5, 22.5]', 'bandwidth = 3', "unknown key 'bandwidth'; a property has action, band, bound, direction, "
                                             "epsilon, feature, kind, name, then, when, why, within."),
])
def test_its_errors_are_one_line_and_name_the_bad_value(deadband: type[Property], line: str, instead: str,
                                                        message: str) -> None:
    with pytest.raises(PropertyError) as info:
        parse_properties(TEXT.replace(line, instead), features=FEATURES, actions=ACTIONS)
    assert str(info.value) == f"Property {NAME!r}: {message}"


def test_proved_on_a_tree_that_idles_in_the_band(deadband: type[Property]) -> None:
    result = verify(IDLES, TEXT)
    v = result.verdict(NAME)
    assert (v.status, v.counterexample, v.regions) == ("proved", None, 1)  # only the idling leaf meets the band
    assert result.details() == []


def test_refuted_on_a_tree_that_heats_in_the_band_with_a_concrete_state(deadband: type[Property],
                                                                        tmp_path: Path) -> None:
    result = verify(HEATS, TEXT)
    v = result.verdict(NAME)
    assert v.status == "refuted" and v.failing == [1]
    cex = v.counterexample
    assert cex is not None and cex.region == "leaf 1"
    temp, occupancy = cex.state
    assert 19.5 <= temp <= 21.0 and 0.5 <= occupancy <= 1.0  # in the domain, in `when` and in the band
    assert np.array_equal(HEATS.predict(cex.state[None, :])[0], cex.action) and cex.action[0] == 0.5
    assert cex.violation == pytest.approx(0.4)
    line = f"{NAME}: at temp = {temp:.4g}, inside its dead band, leaf 1 gives heat = 0.5 (allowed: ±0.1)."
    assert result.details() == [line]  # the kind's own words
    paths = result.write(tmp_path)
    (record,) = json.loads(paths["json"].read_text())["verdicts"]
    assert (record["kind"], record["status"]) == ("deadband", "refuted")
    assert record["statement"] == "when occupancy >= 0.5 and 19.5 <= temp <= 22.5: abs(heat) <= 0.1"
    assert line in paths["markdown"].read_text()


def test_its_sample_check_counts_the_visited_states_in_the_band(deadband: type[Property]) -> None:
    states = np.random.default_rng(0).uniform([10.0, 0.0], [30.0, 1.0], size=(400, 2))
    inside = (states[:, 1] >= 0.5) & (states[:, 0] >= 19.5) & (states[:, 0] <= 22.5)
    n, k = int(inside.sum()), int((inside & (states[:, 0] <= 21.0)).sum())  # HEATS gives 0.5 up to 21 °C
    assert 0 < k < n
    for ctrl, broken in ((IDLES, 0), (HEATS, k)):
        s = verify(ctrl, TEXT, states=states).sampled[NAME]
        assert (s.states, s.violations, s.upper) == (n, broken, clopper_pearson_upper(broken, n))


class _Heater:
    """A smooth stand-in teacher: ``heat = 0.3 tanh(21 - temp)``, outside ±0.1 near the band's edges."""

    obs_dim, act_dim = 2, 1

    def predict(self, obs: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        return 0.3 * np.tanh(21.0 - X[:, :1])


def test_the_teacher_is_searched_for_it(deadband: type[Property]) -> None:
    teacher = _Heater()
    found = verify(IDLES, TEXT, teacher=teacher, seed=0).teacher[NAME]
    assert found.counterexamples > 0 and found.worst is not None
    temp, occupancy = found.worst.state
    assert 19.5 <= temp <= 22.5 and occupancy >= 0.5
    assert found.worst.violation == pytest.approx(abs(teacher.predict(found.worst.state)[0, 0]) - 0.1)


def test_unregistered_the_kind_and_its_keys_are_unknown_again() -> None:
    assert "deadband" not in PROPERTY_KINDS
    with pytest.raises(PropertyError, match=r"^Property 'idle near the setpoint': unknown key 'band'; a property has "
                                            r"action, bound, direction, epsilon, feature, kind, name, then, when, why, "
                                            r"within\.$"):
        parse_properties(TEXT, features=FEATURES, actions=ACTIONS)
    with pytest.raises(PropertyError, match=r"^Property 'p': kind 'deadband' is not one of rule, range, monotone, "
                                            r"lipschitz, teacher\.$"):
        parse_properties('[[property]]\nname = "p"\nkind = "deadband"', features=FEATURES, actions=ACTIONS)


def test_a_taken_kind_is_refused(deadband: type[Property]) -> None:
    clash = type("DeadBand2", (DeadBandProperty,), {})
    with pytest.raises(TypeError, match="Property kind 'deadband' is taken by DeadBandProperty"):
        register_property(clash)


@pytest.mark.parametrize("kind", ["rule", "range", "monotone", "lipschitz", "teacher"])
def test_every_built_in_kind_is_a_registered_class(kind: str) -> None:
    cls = PROPERTY_KINDS[kind]
    assert issubclass(cls, Property) and cls.kind == kind and set(cls.needs) <= set(cls.keys)
    assert {type(flag) for flag in (cls.pointwise, cls.against_teacher, cls.mend_pairs)} == {bool}
