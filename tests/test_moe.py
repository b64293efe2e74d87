"""Sparse mixtures of linear experts: the program kind, the student, the method."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from distill import METHODS, MixturePolicy
from interp_rl.cli import app
from interp_rl.errors import ControllerFormatError, InvalidParameterError, ObservationError, RenderError
from interp_rl.export import compile_c, load_c_controller, load_python_controller, write_exports
from interp_rl.kinds.mixture import MixtureProgram, router_tree
from interp_rl.program import Controller, Signal, load_controller
from interp_rl.viz import decision_path_text, export_text, to_dot, usage_figure

runner = CliRunner()
CC = shutil.which("gcc") or shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler on PATH; CI installs gcc")
FEATURES = [Signal("hip_angle", "rad"), Signal("hip_speed", "rad/s")]


def _two_regimes(n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``u = x1`` where ``x0 > 0``, ``u = -2 x1`` elsewhere: the router must switch on the sign of x0."""
    X = np.random.default_rng(seed).uniform(-1, 1, size=(n, 2))
    return X, np.where(X[:, [0]] > 0, X[:, [1]], -2.0 * X[:, [1]])


def _four_regimes(n: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """Four linear laws, one per quadrant of (x0, x1)."""
    X = np.random.default_rng(0).uniform(-1, 1, size=(n, 3))
    k = (X[:, 0] > 0).astype(int) * 2 + (X[:, 1] > 0)
    W = np.array([[1.0, 0, 2], [-1, 0.5, 0], [0, -2, 1], [2, 1, -1]])
    return X, np.einsum("nd,nd->n", X, W[k])[:, None]


@pytest.mark.parametrize("router", ["linear", "tree"])
def test_two_experts_switching_on_a_sign_are_learned_exactly(router: str) -> None:
    X, y = _two_regimes()
    pol = MixturePolicy(n_experts=2, router=router, router_depth=1, alpha=0.0, n_steps=1000,
                        random_state=0).fit(X, y)
    prog = pol.program_
    # Each expert is one of the two laws, exactly, and acts exactly on its half.
    coefs = sorted(prog.expert_coef[:, 0, :].tolist(), key=lambda c: c[1])
    np.testing.assert_allclose(coefs, [[0.0, -2.0], [0.0, 1.0]], atol=1e-9)
    np.testing.assert_allclose(prog.expert_intercept, 0.0, atol=1e-9)
    positive = int(np.argmax(prog.expert_coef[:, 0, 1]))
    probe = np.random.default_rng(1).uniform(-1, 1, size=(1000, 2))
    probe = probe[np.abs(probe[:, 0]) > 0.02]
    np.testing.assert_array_equal(prog.route(probe) == positive, probe[:, 0] > 0)
    np.testing.assert_allclose(pol.predict(probe), np.where(probe[:, [0]] > 0, probe[:, [1]], -2 * probe[:, [1]]),
                               atol=1e-9)
    assert pol.router_agreement_ == 1.0 and prog.router == router
    if router == "tree":
        assert prog.tree.depth == 1 and prog.tree.feature[0] == 0 and abs(prog.tree.threshold[0]) < 0.02


def test_one_score_tree_per_expert_approximates_the_router() -> None:
    """SMOSE's variant: each expert's score imitated by a regression tree; argmax over the trees."""
    X, y = _two_regimes()
    pol = MixturePolicy(n_experts=2, router="trees", router_depth=1, alpha=0.0, n_steps=1000,
                        random_state=0).fit(X, y)
    prog = pol.program_
    assert prog.router == "trees" and len(prog.score_trees) == 2
    assert all(t.depth <= 1 for t in prog.score_trees)
    assert any(t.depth == 1 and t.feature[0] == 0 and abs(t.threshold[0]) < 0.05 for t in prog.score_trees)
    assert pol.router_agreement_ > 0.98  # a depth-1 tree splits a linear score near, not at, its zero
    coefs = sorted(prog.expert_coef[:, 0, 1].tolist())
    np.testing.assert_allclose(coefs, [-2.0, 1.0], atol=0.1)


@pytest.mark.parametrize("router", ["linear", "trees"])
def test_without_experts_hands_their_states_to_the_routers_next_choice(router: str) -> None:
    X, y = _four_regimes()
    prog = MixturePolicy(n_experts=4, router=router, router_depth=3, alpha=0.0, n_steps=500,
                         random_state=0).fit(X, y).program_
    fewer = prog.without_experts([1, 3])
    assert fewer.n_experts == 2 and fewer.router == router and fewer.usage.shape == (2,)
    keep = np.array([0, 2])
    np.testing.assert_array_equal(fewer.expert_coef, prog.expert_coef[keep])
    # the next choice: the best of the remaining scores, by the same scores
    np.testing.assert_array_equal(fewer.route(X), np.argmax(prog.scores(X)[:, keep], axis=1))
    kept = np.isin(prog.route(X), keep)  # where a kept expert acted, nothing changes
    np.testing.assert_array_equal(fewer.predict(X[kept]), prog.predict(X[kept]))
    assert MixtureProgram.from_dict(fewer.to_dict()).size() == fewer.size()
    assert fewer.size()["parameters"] < prog.size()["parameters"]


def test_without_experts_refuses_a_routing_tree_and_bad_indices() -> None:
    X, y = _two_regimes()
    prog = MixturePolicy(n_experts=2, router="tree", router_depth=1, alpha=0.0, n_steps=200,
                         random_state=0).fit(X, y).program_
    with pytest.raises(ValueError, match="^A routing tree names one expert per leaf"):
        prog.without_experts([0])
    linear = MixturePolicy(n_experts=2, alpha=0.0, n_steps=200, random_state=0).fit(X, y).program_
    with pytest.raises(ValueError, match=r"^Experts to drop must be in \[0, 2\); got \[2\]\.$"):
        linear.without_experts([2])
    with pytest.raises(ValueError, match=r"^Dropping experts \[0, 1\] leaves none of the 2\.$"):
        linear.without_experts([0, 1])


def test_load_balancing_evens_expert_usage() -> None:
    X, y = _four_regimes()
    plain = MixturePolicy(n_experts=8, load_balance=0.0, n_refine=0, n_steps=1500, random_state=0).fit(X, y)
    balanced = MixturePolicy(n_experts=8, load_balance=0.5, n_refine=0, n_steps=1500, random_state=0).fit(X, y)
    assert np.sum(plain.usage_ < 0.02) >= 3  # four laws: without balancing half the experts idle
    assert balanced.usage_.min() > 0.05
    entropy = [-(u[u > 0] * np.log(u[u > 0])).sum() for u in (plain.usage_, balanced.usage_)]
    assert entropy[1] > entropy[0] + 0.4
    np.testing.assert_allclose(balanced.usage_.sum(), 1.0)


def test_same_seed_same_mixture_and_clone_refits() -> None:
    from sklearn.base import clone

    X, y = _four_regimes(1500)
    a = MixturePolicy(n_experts=3, n_steps=300, random_state=4).fit(X, y)
    b = clone(a).fit(X, y)
    assert json.dumps(a.program_.to_dict()) == json.dumps(b.program_.to_dict())


def test_router_scores_add_each_experts_terms_left_to_right_as_the_c_export_does() -> None:
    rng = np.random.default_rng(8)
    router_coef = rng.normal(size=(4, 6)) * (rng.uniform(size=(4, 6)) < 0.5)  # uneven term counts
    router_coef[3] = 0.0
    prog = MixtureProgram(expert_intercept=np.zeros((4, 1)), expert_coef=np.zeros((4, 1, 6)),
                          router_intercept=rng.normal(size=4), router_coef=router_coef)
    X = rng.normal(size=(300, 6)) * 1e3
    plain = np.empty((300, 4))
    for m in range(4):
        for i, x in enumerate(X):
            total = prog.router_intercept[m]
            for j, w in prog.router_terms(m):
                total = total + w * x[j]
            plain[i, m] = total
    assert np.array_equal(prog.scores(X), plain)
    prog.router_coef[0, :] = 1.0  # edited in place: the cached term table follows
    first = np.full(300, prog.router_intercept[0])
    for j in range(6):
        first = first + X[:, j]
    assert np.array_equal(prog.scores(X)[:, 0], first)


def _programs() -> dict[str, MixtureProgram]:
    rng = np.random.default_rng(3)
    m, k, d = 3, 2, 4
    coef = rng.normal(size=(m, k, d)) * (rng.uniform(size=(m, k, d)) < 0.6)
    linear = MixtureProgram(expert_intercept=rng.normal(size=(m, k)), expert_coef=coef,
                            router_intercept=[0.1, 0.1, -0.2], router_coef=rng.normal(size=(m, d)) * [1, 0, 1, 1],
                            action_low=[-1.0, -np.inf], action_high=[1.0, 0.5])
    tree = router_tree(feature=[1, 0, -1, -1, -1], threshold=[0.3, -0.2, 0, 0, 0], left=[1, 2, -1, -1, -1],
                       right=[4, 3, -1, -1, -1], expert=[0, 0, 2, 0, 1], obs_dim=d)
    routed = MixtureProgram(expert_intercept=rng.normal(size=(m, k)), expert_coef=coef, tree=tree,
                            usage=[0.5, 0.3, 0.2])
    tied = MixtureProgram(expert_intercept=[[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]], expert_coef=np.zeros((m, k, d)),
                          router_intercept=[0.0, 0.5, 0.5], router_coef=np.zeros((m, d)))
    trees = MixtureProgram(expert_intercept=rng.normal(size=(m, k)), expert_coef=coef, score_trees=[
        router_tree(feature=[f, -1, -1], threshold=[th, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                    expert=[0, 0, 0], obs_dim=d).replace(intercept=[[0.0], [lo], [hi]])
        for f, th, lo, hi in ((0, 0.1, 1.0, -1.0), (2, -0.3, 0.5, 0.5), (0, 0.1, 0.2, 2.0))])
    one = MixtureProgram(expert_intercept=[[0.5, -0.5]], expert_coef=coef[:1], router_intercept=[0.0],
                         router_coef=np.zeros((1, d)))
    squashed = MixtureProgram(expert_intercept=rng.normal(size=(m, k)), expert_coef=coef * 3,
                              router_intercept=[0.1, 0.1, -0.2], router_coef=rng.normal(size=(m, d)),
                              action_low=[-1.0, -0.4], action_high=[1.0, 0.7], squash="tanh")  # SAC's actions
    return {"linear": linear, "tree": tree and routed, "trees": trees, "tied": tied, "one": one, "tanh": squashed}


def _controller(prog: MixtureProgram) -> Controller:
    feats = [Signal(f"joint{j}_angle", "rad") for j in range(prog.obs_dim)]
    return Controller(prog, features=feats, actions=[Signal("hip_torque", "N m"), Signal("knee_torque", "N m")],
                      task="Toy-v0")


def test_tanh_squash_maps_each_experts_output_into_the_bounds_as_sac_does() -> None:
    prog = _programs()["tanh"]
    X = np.random.default_rng(2).normal(size=(200, 4)) * 3
    z = np.stack([prog.expert(int(e)).raw_predict(x[None])[0] for e, x in zip(prog.route(X), X, strict=True)])
    np.testing.assert_allclose(prog.predict(X), prog.action_low + (np.tanh(z) + 1) / 2 * (prog.action_high
                                                                                          - prog.action_low))
    assert prog.affine_pieces().squash == "tanh"
    text = prog.explain(_controller(prog))
    assert "actions are squashed into their bounds" in text and "knee_torque [N m] = -0.400 + 1.100 * (tanh(z(knee_torque [N m])) + 1) / 2" in text
    assert "\n  z(hip_torque [N m]) = " in text  # the experts' equations are tanh's arguments
    with pytest.raises(ControllerFormatError, match="every bound must be finite"):
        MixtureProgram(expert_intercept=[[0.0]], expert_coef=[[[1.0]]], router_intercept=[0.0], router_coef=[[0.0]],
                       squash="tanh")
    with pytest.raises(ControllerFormatError, match="squash must be one of clip, tanh; got 'sigmoid'"):
        MixtureProgram(expert_intercept=[[0.0]], expert_coef=[[[1.0]]], router_intercept=[0.0], router_coef=[[0.0]],
                       squash="sigmoid")


def test_the_benchmarks_c_latency_links_a_squashed_mixture(tmp_path: Path) -> None:
    """A SAC-trained mixture's controller.c calls tanh: the harness's timing loop must link it."""
    from benchmarks.latency import controller_latency
    from interp_rl.export import write_exports

    ctrl = _controller(_programs()["tanh"])
    write_exports(ctrl, tmp_path, force=True)
    states = np.random.default_rng(0).normal(size=(8, 4))
    lat = controller_latency(ctrl, tmp_path, states, repeats=5)
    assert lat["c_native_s"] is not None and lat["c_native_s"] > 0


@pytest.mark.parametrize(("router", "limit"), [("linear", 1000), ("tree", 800), ("trees", 900), ("linear", 400)])
def test_max_parameters_keeps_a_wide_mixture_within_budget(router: str, limit: int) -> None:
    """HalfCheetah's shape (17 features, 6 actions, 8 experts) is 1,008 parameters dense; the default keeps 1,000."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(3000, 17)), np.zeros((3000, 4))], axis=1)  # 4 features never vary
    Y = np.tanh(X[:, :6] * X[:, [0]] + X[:, 6:12])
    pol = MixturePolicy(router=router, max_parameters=limit, n_steps=200, random_state=0).fit(X, Y)
    size = pol.program_.size()
    assert size["parameters"] <= limit and size["parameters"] > 0.8 * limit
    assert pol.fit_facts()["terms_per_action"] == pol.terms_ < 17
    dense = MixturePolicy(router=router, max_parameters=None, n_steps=200, random_state=0).fit(X, Y)
    assert dense.terms_ is None and dense.program_.size()["parameters"] > limit


def test_equal_scores_pick_the_first_expert() -> None:
    prog = _programs()["tied"]
    assert prog.route(np.zeros((3, 4))).tolist() == [1, 1, 1]  # experts 2 and 3 tie: the first of them acts
    np.testing.assert_array_equal(prog.predict(np.zeros((1, 4))), [[2.0, 0.0]])


@pytest.mark.parametrize("name", ["linear", "tree", "trees", "tied", "one", "tanh"])
def test_json_python_and_c_reproduce_predict_bit_for_bit(name: str, tmp_path: Path) -> None:
    ctrl = _controller(_programs()[name])
    X = np.random.default_rng(5).normal(size=(400, 4)) * 2
    X[:3] = [[0.0, 0.3, 0.0, 0.0], [-0.2, 0.3, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]  # on the splits: ties go left
    expect = ctrl.predict(X)
    paths = write_exports(ctrl, tmp_path / "out")
    loaded = load_controller(paths["json"])
    assert isinstance(loaded.program, MixtureProgram)
    assert loaded.predict(X).tobytes() == expect.tobytes()
    assert json.dumps(loaded.to_dict()) == json.dumps(ctrl.to_dict())
    act_py = load_python_controller(paths["python"])
    assert np.array(act_py(X[0].tolist())).shape == (2,)
    assert np.array([act_py(list(x)) for x in X]).tobytes() == expect.tobytes()
    if CC is not None:
        strict = ["-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Werror"]
        act_c = load_c_controller(compile_c(paths["c"], tmp_path / "c", extra_flags=strict))
        assert np.array([act_c(list(x)) for x in X]).tobytes() == expect.tobytes()


@needs_cc
def test_c_main_of_a_tree_routed_mixture(tmp_path: Path) -> None:
    ctrl = _controller(_programs()["tree"])
    paths = write_exports(ctrl, tmp_path / "out", formats=("c",))
    program = compile_c(paths["c"], tmp_path / "main", shared=False)
    X = np.random.default_rng(6).normal(size=(30, 4))
    stdin = "\n".join(" ".join(repr(v) for v in row) for row in X.tolist()) + "\n"
    run = subprocess.run([str(program)], input=stdin, capture_output=True, text=True, check=True)
    got = np.array([[float(v) for v in line.split()] for line in run.stdout.splitlines()])
    assert got.tobytes() == ctrl.predict(X).tobytes()


def test_explanations_name_features_router_and_experts() -> None:
    X, y = _two_regimes()
    pol = MixturePolicy(n_experts=2, max_terms=1, alpha=0.0, n_steps=1000, random_state=0).fit(X, y)
    ctrl = pol.to_controller(FEATURES, [Signal("hip_torque", "N m")])
    text = export_text(ctrl)
    assert text.startswith("router: the expert with the highest score acts\n  score 1 = ")
    assert "hip_angle" in text and "x0" not in text
    assert "+ 1.000*hip_speed" in text and "- 2.000*hip_speed" in text  # (the intercepts are ~1e-17)
    assert "(fitted on 5" in text or "(fitted on 4" in text  # each expert's share of the distillation data
    why = decision_path_text(ctrl, [0.5, 0.25])
    positive = int(np.argmax(pol.program_.expert_coef[:, 0, 1])) + 1
    assert f"score {positive} = " in why and "<- highest" in why
    assert why.splitlines()[-2] == f"expert {positive} acts:"
    assert why.splitlines()[-1].endswith(" + 1*(0.25) = 0.25")
    dot = to_dot(ctrl, obs=np.array([0.5, 0.25]), states=X)
    assert dot.startswith("digraph") and f"e{positive - 1} [" in dot and "router -> e0" in dot
    # experts stacked (not a strip), and both kinds of share named in each box and in the legend
    assert "rankdir=LR;" in dot and "xlabel" not in dot
    share = 100 * float(np.mean(pol.program_.route(X) == 0))
    assert f"expert 1 (fitted on {100 * pol.program_.usage[0]:.3g}%, acts on {share:.3g}%)" in dot
    assert ("fitted on: the expert's share of the distillation data; acts on: its share of the states shown "
            "(the darker the box, the more)") in dot

    routed = MixturePolicy(n_experts=2, router="tree", router_depth=1, n_steps=1000, random_state=0).fit(X, y)
    rctrl = routed.to_controller(FEATURES, [Signal("hip_torque", "N m")])
    text = export_text(rctrl)
    assert text.startswith("router:\n|--- hip_angle [rad] <= ")
    assert "|   |--- expert " in text
    why = decision_path_text(rctrl, [0.5, 0.25])
    assert why.startswith("hip_angle = 0.5 rad > ")
    assert "n0 -> e" in to_dot(rctrl, obs=np.array([0.5, 0.25]))

    scored = MixturePolicy(n_experts=2, router="trees", router_depth=1, n_steps=1000, random_state=0).fit(X, y)
    sctrl = scored.to_controller(FEATURES, [Signal("hip_torque", "N m")])
    text = export_text(sctrl)
    assert text.startswith("router: the expert with the highest score acts\nscore 1:\n  |--- ")
    assert "\nscore 2:\n  |--- hip_angle [rad] <= " in text and "|   |--- score 2 = " in text
    assert "<- highest" in decision_path_text(sctrl, [0.5, 0.25])
    assert "score 2: a tree of depth 1, 2 leaves" in to_dot(sctrl)


def test_size_counts_every_parameter() -> None:
    prog = _programs()["linear"]
    size = prog.size()
    assert size["experts"] == 3
    assert size["nonzero_terms"] == int(np.count_nonzero(prog.expert_coef))
    assert size["router_parameters"] == 3 + int(np.count_nonzero(prog.router_coef))
    assert size["parameters"] == 3 * 2 + size["nonzero_terms"] + size["router_parameters"]
    tree = _programs()["tree"].size()
    assert tree["router_parameters"] == 2 + 3 and tree["router_depth"] == 2
    trees = _programs()["trees"].size()
    assert trees["router_parameters"] == 3 * (1 + 2) and trees["router_depth"] == 1


@pytest.mark.parametrize(("params", "message"), [
    ({"n_experts": 0}, "The 'n_experts' parameter of MixturePolicy must be an int in [1, 64]. Got 0 instead."),
    ({"router_depth": 0}, "The 'router_depth' parameter of MixturePolicy must be an int in [1, 16]. Got 0 instead."),
    ({"router": "soft"}, "The 'router' parameter of MixturePolicy must be one of 'linear', 'tree', 'trees'. Got 'soft' "
                       "instead."),
    ({"learning_rate": 0.0}, "The 'learning_rate' parameter of MixturePolicy must be a float in (0.0, inf). Got 0.0 "
                             "instead."),
])
def test_bad_parameters_are_one_line(params: dict, message: str) -> None:
    X, y = _two_regimes(50)
    with pytest.raises(InvalidParameterError) as exc:
        MixturePolicy(**params).fit(X, y)
    assert str(exc.value) == message


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["router"]["tree"].update(intercept=[[0.0], [0.0], [5.0], [0.0], [1.0]]),
     "A routing leaf names expert index 5; indices must be whole numbers in [0, 3)."),
    (lambda d: d["expert_terms"].append([3, 0, 0, 1.0]), "An expert term (3, 0, 0) lies outside the shape (3, 2, 4)."),
    (lambda d: d["router"].update(kind="soft"), "The router kind 'soft' is not 'linear', 'tree' or 'trees'."),
    (lambda d: d["expert_intercept"][1].__setitem__(0, float("nan")),
     "Expert 2 has a non-finite parameter; parameters must be finite."),
])
def test_malformed_mixture_files_are_refused(tmp_path: Path, change, message: str) -> None:
    d = _controller(_programs()["tree"]).to_dict()
    change(d["program"])
    path = tmp_path / "controller.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ControllerFormatError) as exc:
        load_controller(path)
    assert str(exc.value) == f"{str(path)!r} holds a malformed mixture program: {message}"


def test_moe_is_a_registered_method_with_its_options() -> None:
    method = METHODS["moe"]
    assert method.size == "experts"
    defaults = method.defaults()
    assert defaults["experts"] == 8 and defaults["router"] == "linear" and defaults["router_depth"] == 4
    with pytest.raises(InvalidParameterError) as exc:
        method.resolve({"experts": 0}, owner="interp-rl distill moe", spell=lambda n: "--" + n.replace("_", "-"),
                       what="option")
    assert str(exc.value) == ("The '--experts' option of interp-rl distill moe must be an int in [1, 64]. "
                              "Got 0 instead.")


def test_distill_moe_from_the_cli_then_evaluate_viz_and_a_task_mismatch(tmp_path: Path) -> None:
    """A tiny end-to-end run on Pendulum with a stand-in teacher trained by nobody: SB3's untrained SAC."""
    from stable_baselines3 import SAC

    import envs

    env = envs.make_env("Pendulum-v1", 0)
    SAC("MlpPolicy", env, buffer_size=100, seed=0, device="cpu").save(str(tmp_path / "sac.zip"))
    env.close()
    out = tmp_path / "moe"
    res = runner.invoke(app, ["distill", "moe", "--teacher", str(tmp_path / "sac.zip"), "--env", "Pendulum-v1",
                              "--experts", "2", "--router", "tree", "--router-depth", "2", "--train-steps", "200",
                              "--iterations", "1", "--steps", "300", "--select-episodes", "1",
                              "--eval-episodes", "2", "--noise-levels", "", "--restarts", "1", "--rl-steps", "0", "--out", str(out), "--seed", "0"])
    assert res.exit_code == 0, res.output
    ctrl = load_controller(out)
    assert ctrl.kind == "mixture" and ctrl.program.router == "tree" and ctrl.program.n_experts == 2
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["method"] == "moe" and metrics["experts"] == 2
    facts = metrics["fit_facts"]  # the routing tree's agreement with the linear router it was distilled from
    assert 0.5 <= facts["router_agreement"] <= 1.0 and sum(facts["usage"]) == pytest.approx(1.0)
    res = runner.invoke(app, ["viz", str(out), "--text"])
    assert res.exit_code == 0 and res.output.startswith("router:\n|--- ")
    res = runner.invoke(app, ["viz", str(out), "--episode-seed", "3", "--out", str(tmp_path / "m.svg")])
    assert res.exit_code == 0, res.output
    assert "Episode seed 3: 200 steps" in res.output and "experts acting: " in res.output
    assert (tmp_path / "m.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    assert (tmp_path / "m-episode.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = runner.invoke(app, ["evaluate", str(out), "--env", "Hopper-v5", "--episodes", "1"])
    assert res.exit_code == 1
    assert res.output.strip().splitlines()[-1].startswith("Error: The controller observes 3 features, but Hopper-v5 "
                                                          "gives 11")


def test_reports_show_which_expert_acts_when_more_than_one_does() -> None:
    from benchmarks.sections.explanations import explain_controller
    from interp_rl.kinds.linear import LinearProgram

    X = np.random.default_rng(0).normal(size=(200, 4))
    parts = explain_controller(_controller(_programs()["linear"]), X, "toy", note=METHODS["moe"].picture_note)
    usage = [p for p in parts if p.title.startswith("Usage: which expert acts")]
    assert len(usage) == 1 and usage[0].kind == "svg" and "joint" in usage[0].content  # named axes
    one = explain_controller(_controller(_programs()["one"]), X, "toy")  # a single expert: nothing to show
    assert not any(p.title.startswith("Usage") for p in one)
    lin = Controller(LinearProgram(intercept=[0.0, 0.0], coef=np.ones((2, 4))), features=_controller(
        _programs()["one"]).features, actions=[Signal("a"), Signal("b")])
    assert not any(p.title.startswith("Usage") for p in explain_controller(lin, X, "toy"))


def test_usage_figure_names_pieces_and_features(tmp_path: Path) -> None:
    ctrl = _controller(_programs()["tree"])
    X = np.random.default_rng(0).normal(size=(300, 4))
    path = usage_figure(ctrl, X, tmp_path / "usage.svg", title="one episode")
    svg = path.read_text()
    assert "expert 1" in svg and "joint1_angle [rad]" in svg and "% of steps" in svg
    for suffix in ("svg", "pdf", "png"):  # the same figure, the same bytes (committed reports do not churn)
        a = usage_figure(ctrl, X, tmp_path / f"a.{suffix}").read_bytes()
        assert usage_figure(ctrl, X, tmp_path / f"b.{suffix}").read_bytes() == a
    with pytest.raises(RenderError, match=r"use \.png, \.svg or \.pdf"):
        usage_figure(ctrl, X, tmp_path / "usage.txt")
    with pytest.raises(ObservationError, match="expects 4"):
        usage_figure(ctrl, X[:, :3], tmp_path / "usage.png")


def test_one_trainer_and_one_definition_of_each_gating_default() -> None:
    """Distillation and RL train the same noisy top-1 module; each use's defaults are written once."""
    import torch

    from envs.moe_policy import MixturePPOPolicy, MixtureSACPolicy, _mixture_settings
    from interp_rl.kinds.mixture_training import DISTILL, ON_POLICY, SAC, NoisyTop1Mixture

    student = MixturePolicy()
    assert (student.gate_noise, student.load_balance) == (DISTILL.gate_noise, DISTILL.load_balance)
    assert _mixture_settings({}, "MixtureSACPolicy", SAC)[1:] == (SAC.gate_noise, SAC.load_balance)
    assert _mixture_settings({}, "MixturePPOPolicy", ON_POLICY)[1:] == (0.0, ON_POLICY.load_balance)
    import gymnasium as gym

    obs, act = gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-1, 1, (2,))
    sac, ppo = MixtureSACPolicy(obs, act, lambda _: 1e-3), MixturePPOPolicy(obs, act, lambda _: 1e-3)
    assert (sac.gate_noise, sac.load_balance) == (SAC.gate_noise, SAC.load_balance)
    assert (ppo.gate_noise, ppo.load_balance) == (ON_POLICY.gate_noise, ON_POLICY.load_balance)
    assert isinstance(sac.actor.mu, NoisyTop1Mixture) and isinstance(ppo.action_net, NoisyTop1Mixture)
    # an agent saved before the two trainers shared the module (experts as weight (m, k, d) and bias) loads
    net = NoisyTop1Mixture(3, 2, 4, gating=DISTILL)
    old = {"router.weight": torch.randn(4, 3), "router.bias": torch.randn(4), "weight": torch.randn(4, 2, 3),
           "bias": torch.randn(4, 2)}
    net.load_state_dict(dict(old))
    np.testing.assert_array_equal(net.experts_w.detach().numpy(), old["weight"].transpose(1, 2).numpy())
    rb, rw, b, w = net.affine()
    np.testing.assert_array_equal(w, old["weight"].double().numpy())  # the program's (m, k, d) again
    # the distillation loss is the squared error expected under the router's probabilities (no noise, no balance)
    plain = NoisyTop1Mixture(3, 2, 4, gating=type(DISTILL)(gate_noise=0.0, load_balance=0.0))
    plain.load_state_dict(dict(old))
    x, y, wt = torch.randn(5, 3), torch.randn(5, 2), torch.ones(5)
    p = torch.softmax(x @ old["router.weight"].T + old["router.bias"], dim=1)
    pred = torch.einsum("bd,mkd->bmk", x, old["weight"]) + old["bias"]
    want = (p * ((pred - y[:, None, :]) ** 2).sum(dim=2)).sum(dim=1).mean()
    assert float(plain.regression_loss(x, y, wt).detach()) == pytest.approx(float(want.detach()), rel=1e-6)
