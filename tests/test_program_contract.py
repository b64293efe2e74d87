"""Every registered program kind keeps the contract (:func:`interp_rl.testing.check_program`), and declares its
capabilities instead of being probed for them; every student estimator passes scikit-learn's own checks."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from distill.linear import LinearPolicy
from distill.moe import MixturePolicy
from distill.prelu import PReLUPolicy
from distill.sindy import SINDyPolicy
from distill.tree import TreePolicy
from interp_rl.kinds.forest import ForestProgram
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import CAPABILITIES, PROGRAMS, ProgramBase
from interp_rl.testing import check_program

RNG = np.random.default_rng(0)
X = RNG.normal(size=(300, 3))
Y = np.column_stack([np.tanh(X[:, 0] - X[:, 1]), np.where(X[:, 2] > 0, 0.5, -0.5) + 0.2 * X[:, 0]])
LOW, HIGH = np.array([-1.0, -1.0]), np.array([1.0, 1.0])


def _stump(feature: int, t: float, a: float, b: float) -> TreeProgram:
    return TreeProgram.from_leaves(feature=[feature, -1, -1], threshold=[t, 0, 0], left=[1, -1, -1],
                                   right=[2, -1, -1], intercept=[[0.0, 0.0], [a, -a], [b, b]], obs_dim=3)


EXAMPLES = {
    "tree": lambda: TreePolicy(max_leaves=4, random_state=0).fit(X, Y)._fitted_program(),
    "linear": lambda: LinearPolicy(max_terms=2, action_low=LOW, action_high=HIGH).fit(X, Y)._fitted_program(),
    "mixture": lambda: MixturePolicy(n_experts=3, random_state=0).fit(X, Y)._fitted_program(),
    "mixture routed by a tree": lambda: MixturePolicy(n_experts=3, router="tree", router_depth=2,
                                                      random_state=0).fit(X, Y)._fitted_program(),
    "equations": lambda: SINDyPolicy().fit(X, Y)._fitted_program(),
    "oblique": lambda: PReLUPolicy(hidden=2, random_state=0).fit(X, Y)._fitted_program(),
    "forest": lambda: ForestProgram([_stump(0, 0.0, 1.0, 2.0), _stump(1, 0.3, 0.0, 4.0)]),
}


@functools.cache
def _example(name: str) -> ProgramBase:
    """``EXAMPLES[name]()``, fitted once: the tests share it (a program is a value; no check changes it)."""
    return EXAMPLES[name]()


#: The tests of the examples share a worker (``--dist loadgroup``), so each example is fitted once.
ON_THE_EXAMPLES = pytest.mark.xdist_group("program-examples")


@ON_THE_EXAMPLES
def test_every_registered_kind_has_an_example_here() -> None:
    assert set(PROGRAMS) <= {_example(name).kind for name in EXAMPLES}


@pytest.mark.parametrize("name", list(EXAMPLES))
@ON_THE_EXAMPLES
def test_every_kind_keeps_the_contract(name: str) -> None:
    program = _example(name)
    shown = check_program(program, X)
    declared = {c for c in CAPABILITIES if type(program).kind_can(c)}
    assert set(shown) <= declared
    if name == "mixture routed by a tree":  # a kind may lack for one program what it declares
        assert "drop_pieces" in declared and "drop_pieces" not in shown
        assert program.cannot("drop_pieces").startswith("A mixture routed by one decision tree")


@ON_THE_EXAMPLES
def test_capabilities_are_declared_not_probed() -> None:
    """Asked, a kind answers from what it implements; an unknown capability is a one-line error."""
    from interp_rl.kinds.linear import LinearProgram

    assert LinearProgram.kind_can("from_scratch") and not TreeProgram.kind_can("from_scratch")
    assert TreeProgram.kind_can("regions") and not ForestProgram.kind_can("regions")
    tree = _example("tree")
    assert tree.can("affine") and tree.cannot("from_scratch") == (
        "A tree program has structure to learn first; start from a saved one.")
    with pytest.raises(ValueError, match="Unknown capability 'fly'; one of affine, regions, from_scratch"):
        TreeProgram.kind_can("fly")


@ON_THE_EXAMPLES
def test_a_bug_inside_a_hook_is_no_longer_read_as_not_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Callers ask can() first, so a TypeError raised by a bug inside regions() reaches the user."""
    from interp_rl.program import Controller
    from interp_rl.verify import verify

    tree = _example("tree")

    def broken(self):  # noqa: ANN001, ANN202
        raise TypeError("a bug")

    monkeypatch.setattr(TreeProgram, "regions", broken)
    ctrl = Controller(tree)
    props = ('[domain]\nfrom = "given"\nfeatures.obs_0 = [-1, 1]\nfeatures.obs_1 = [-1, 1]\nfeatures.obs_2 = [-1, 1]\n'
             '[[property]]\nname = "p"\nthen = ["action_0 <= 5"]\n')
    with pytest.raises(TypeError, match="a bug"):
        verify(ctrl, props)


def _known(estimator) -> dict[str, str]:  # noqa: ANN001
    """The checks a student is known not to pass, and why (sklearn's own way of saying so)."""
    if isinstance(estimator, MixturePolicy | PReLUPolicy):
        return {"check_sample_weight_equivalence_on_dense_data": "trained by minibatch gradient steps: a row weighted "
                "2 and the row given twice are drawn differently, so the fits differ (the weights are honoured in "
                "expectation)"}
    return {}


@parametrize_with_checks([LinearPolicy(), LinearPolicy(max_terms=2), MixturePolicy(n_experts=2, n_steps=50),
                          SINDyPolicy(), PReLUPolicy(hidden="4", n_steps=400)], expected_failed_checks=_known)
def test_every_student_keeps_scikit_learns_contract(estimator, check) -> None:  # noqa: ANN001
    check(estimator)
