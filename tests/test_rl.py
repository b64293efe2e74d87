"""Fine-tuning distilled controllers on the return with an actor-critic warm-started from the teacher."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import build_once

import envs
from distill import CriticTuner, DAgger, LinearPolicy, MixturePolicy, SINDyPolicy
from envs.loading import load_teacher
from interp_rl.errors import InterpRLError, InvalidParameterError
from interp_rl.program import load_controller

pytestmark = pytest.mark.usefixtures("single_torch_thread")
def _in_process(args: list[str]) -> Any:
    """The command line run in this process (typer's runner; stderr kept apart): for a run refused at its options,
    whose only work would be a new interpreter's imports."""
    from typer.testing import CliRunner

    from interp_rl.cli import app

    return CliRunner().invoke(app, args)
SMALL = {"n_steps": 600, "critic_warmup": 200, "eval_every": 200, "eval_episodes": 2, "batch_size": 64,
         "n_envs": 2}


@pytest.fixture(scope="module")
def pendulum_sac(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real SB3 SAC on Pendulum-v1 (torque in [-2, 2]) after a few hundred steps of training, trained once for
    every worker (read-only)."""
    from stable_baselines3 import SAC

    def train(folder: Path) -> None:
        folder.mkdir()
        env = envs.make_env("Pendulum-v1", 0)
        model = SAC("MlpPolicy", env, buffer_size=2000, learning_starts=100, seed=0, device="cpu")
        model.learn(300)
        model.save(str(folder / "sac.zip"))
        env.close()

    return build_once(tmp_path_factory, "pendulum-sac", train) / "sac.zip"


def _student(teacher, cls=LinearPolicy, **params):
    return DAgger(cls(**params), n_iter=0, steps=400, eval_episodes=0).fit(teacher, teacher.env_fn).student_


@pytest.mark.parametrize("kind", ["linear", "mixture", "equations"])
def test_fine_tuning_from_the_teachers_critic_runs_end_to_end(pendulum_sac: Path, kind: str) -> None:
    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    student = (_student(teacher, max_terms=2) if kind == "linear"
               else _student(teacher, SINDyPolicy, max_terms=4, threshold=0.0) if kind == "equations"
               else _student(teacher, MixturePolicy, n_experts=2, max_terms=2, n_steps=200))
    before = [p.detach().clone() for p in teacher.model.critic.parameters()]
    tuner = CriticTuner(**SMALL).fit(student, teacher, teacher.env_fn)
    assert tuner.critic_source_ == "teacher" and tuner.gamma_ == teacher.model.gamma  # the critic's own discount
    # The teacher is not touched: its critic was copied, not trained in place.
    assert all(np.array_equal(a.numpy(), b.detach().numpy())
               for a, b in zip(before, teacher.model.critic.parameters(), strict=True))
    assert [h["step"] for h in tuner.history_] == [0, 200, 400, 600]
    assert tuner.initial_return_ == tuner.history_[0]["return_mean"]
    best = max(tuner.history_, key=lambda h: h["score"])
    assert tuner.best_return_ == best["return_mean"]
    for h in tuner.history_:  # 'robust' selection: mean minus standard deviation
        assert h["score"] == pytest.approx(h["return_mean"] - h["return_std"])
    # Same kind and structure; zero coefficients stay zero.
    old, new = student._fitted_program(), tuner.student_._fitted_program()
    assert new.kind == old.kind and new.size()["parameters"] <= old.size()["parameters"]
    assert np.all(new.affine_pieces().coef[old.affine_pieces().coef == 0.0] == 0.0)
    if kind == "mixture":
        X = np.random.default_rng(0).normal(size=(200, 3))
        np.testing.assert_array_equal(new.route(X), old.route(X))  # the router is frozen
    if kind == "equations":  # the library terms are kept, their coefficients learnt
        assert new.terms == old.terms and tuner.feature_scale_.shape == (len(old.terms),)  # learnt per term


def test_the_router_learns_with_the_experts_within_the_size_budget_and_resumes_exactly(pendulum_sac: Path,
                                                                                        tmp_path: Path) -> None:
    """router='train': the mixture's router moves with its experts (SMoSE's gating), every zero of the router and
    of the experts stays zero, so the size never grows; an interrupted run resumes to the same controller."""
    from interp_rl.errors import DistillInterrupted

    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    student = _student(teacher, MixturePolicy, n_experts=3, max_terms=2, n_steps=200)
    old = student._fitted_program()
    (_, old_rw), = old.routing_maps()
    assert (old_rw == 0).any() or (old.expert_coef == 0).any()  # there are masks to keep
    params = {**SMALL, "router": "train", "actor_lr": 1e-2}
    whole = CriticTuner(**params, checkpoint_dir=tmp_path / "whole").fit(student, teacher, teacher.env_fn)
    new = whole.final_student_._fitted_program()
    (_, new_rw), = new.routing_maps()
    assert not np.array_equal(new_rw, old_rw)  # the router learnt
    assert np.all(new_rw[old_rw == 0.0] == 0.0) and np.all(new.expert_coef[old.expert_coef == 0.0] == 0.0)
    assert new.size()["parameters"] <= old.size()["parameters"]
    X = np.random.default_rng(0).normal(size=(500, 3)) * [1, 1, 4]
    assert (new.route(X) != old.route(X)).any()  # states change expert
    frozen = CriticTuner(**{**params, "router": "frozen"}).fit(student, teacher, teacher.env_fn)
    np.testing.assert_array_equal(frozen.final_student_._fitted_program().route(X), old.route(X))

    def stop_at_400(row: dict) -> None:
        if row["step"] == 400:
            raise KeyboardInterrupt

    with pytest.raises(DistillInterrupted):
        CriticTuner(**params, checkpoint_dir=tmp_path / "cut").fit(student, teacher, teacher.env_fn,
                                                                   progress=stop_at_400)
    resumed = CriticTuner(**params, checkpoint_dir=tmp_path / "cut").fit(student, teacher, teacher.env_fn,
                                                                         resume=True)
    for a, b in ((resumed.final_student_, whole.final_student_), (resumed.student_, whole.student_)):
        assert json.dumps(a._fitted_program().to_dict()) == json.dumps(b._fitted_program().to_dict())
    # a tree's thresholds cannot learn by the actor's gradient: said in one line
    from distill import TreePolicy

    tree = _student(teacher, TreePolicy, max_leaves=3)
    with pytest.raises(InvalidParameterError, match="hard thresholds, whose gradient is zero almost everywhere"):
        CriticTuner(**params).fit(tree, teacher, teacher.env_fn)


def test_the_best_checkpoint_is_kept_not_the_last(pendulum_sac: Path) -> None:
    """Steps far too large wreck the controller after its first evaluation: the student kept is the best one seen
    (here the starting controller), scored again on the selection episodes; the last is only ``final_student_``."""
    from distill.critic_tuning import SELECTION_SEED_OFFSET
    from interp_rl.rollouts import evaluate

    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    student = _student(teacher)
    tuner = CriticTuner(**{**SMALL, "actor_lr": 10.0, "trust_weight": 0.0}).fit(student, teacher, teacher.env_fn)
    scores = [h["score"] for h in tuner.history_]
    best = int(np.argmax(scores))
    assert best != len(scores) - 1, scores  # the case this test is about: the last is not the best

    def held_out(s: Any) -> float:
        return float(np.mean(evaluate(s, teacher.env_fn, SMALL["eval_episodes"],
                                      seed=tuner.seed + SELECTION_SEED_OFFSET).returns))

    assert held_out(tuner.student_) == tuner.history_[best]["return_mean"] == tuner.best_return_
    assert held_out(tuner.final_student_) == tuner.history_[-1]["return_mean"]


def test_the_critic_starts_as_the_teachers_and_fine_tuning_is_reproducible(pendulum_sac: Path) -> None:
    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    student = _student(teacher)
    frozen = CriticTuner(**{**SMALL, "n_steps": 200, "critic_lr": 1e-30, "actor_lr": 1e-30}).fit(
        student, teacher, teacher.env_fn)
    for a, b in zip(frozen.critic_.parameters(), teacher.model.critic.parameters(), strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
    a = CriticTuner(**SMALL, seed=3).fit(student, teacher, teacher.env_fn)
    b = CriticTuner(**SMALL, seed=3).fit(student, teacher, teacher.env_fn)
    assert [h["return_mean"] for h in a.history_] == [h["return_mean"] for h in b.history_]


@pytest.mark.parametrize("units", ["features", "raw"])
def test_the_actors_first_step_moves_every_feature_at_the_pace_its_units_say(pendulum_sac: Path, units: str) -> None:
    """One Adam step moves each coefficient by about lr (raw) or lr / the feature's spread (features)."""
    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    student = _student(teacher)
    lr = 1e-3
    tuner = CriticTuner(**{**SMALL, "n_steps": 202, "critic_warmup": 200, "policy_delay": 1, "updates_per_step": 0.5,
                           "actor_lr": lr, "actor_units": units}).fit(student, teacher, teacher.env_fn)
    old = student._fitted_program().affine_pieces()
    new = tuner.final_student_._fitted_program().affine_pieces()
    moved = np.abs(new.coef - old.coef)[0, 0]
    scale = tuner.feature_scale_
    if units == "raw":
        np.testing.assert_array_equal(scale, 1.0)
    else:
        assert np.ptp(scale) > 1.0  # Pendulum's angular velocity is far wider than cos and sin
        assert np.all(scale > 0.1)
    np.testing.assert_allclose(moved * scale, lr, rtol=1e-2)
    np.testing.assert_allclose(np.abs(new.intercept - old.intercept), lr, rtol=1e-2)


def test_the_trust_region_keeps_the_controller_near_where_it_started(pendulum_sac: Path) -> None:
    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    student = _student(teacher)
    X = np.random.default_rng(0).normal(size=(500, 3))
    drift = {}
    for trust in (0.0, 1e3):
        tuner = CriticTuner(**{**SMALL, "n_steps": 280, "critic_warmup": 200, "policy_delay": 1, "actor_lr": 1e-3,
                               "bc_weight": 0.0, "trust_weight": trust}).fit(student, teacher, teacher.env_fn)
        drift[trust] = np.abs(tuner.final_student_.predict(X) - student.predict(X)).mean()
    assert drift[1e3] < 0.25 * drift[0.0]


@pytest.fixture(scope="module")
def pendulum_ars(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained sb3-contrib ARS agent: a teacher with neither Q-networks nor a value network."""
    from sb3_contrib import ARS

    env = envs.make_env("Pendulum-v1", 0)
    path = tmp_path_factory.mktemp("ars") / "ars.zip"
    ARS("LinearPolicy", env, seed=0, device="cpu").save(str(path))
    env.close()
    return path


def test_an_on_policy_teacher_starts_the_critic_from_its_value_network(teachers) -> None:
    """Q(s, a) = scale * V(s) + A(s, a), the advantages starting at zero: at first Q is the teacher's V, in raw units."""
    import torch

    ppo = teachers["ppo_hopper"]
    student = _student(ppo, max_terms=2)
    frozen = CriticTuner(**{**SMALL, "n_steps": 100, "eval_every": 100, "eval_episodes": 1, "critic_lr": 1e-30,
                            "actor_lr": 1e-30}).fit(student, ppo, ppo.env_fn)
    assert frozen.critic_source_ == "teacher-value" and frozen.gamma_ == ppo.model.gamma
    obs = np.stack([ppo.env_fn(i).reset(seed=i)[0] for i in range(5)])
    with torch.no_grad():
        q1, q2 = frozen.critic_(torch.as_tensor(ppo.normalizer(obs), dtype=torch.float32),
                                torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (5, 3)), dtype=torch.float32))
    v_raw = ppo.value(obs) * ppo.normalizer.reward_scale  # the zoo normalised rewards: V speaks in those units
    np.testing.assert_allclose(q1.numpy()[:, 0], v_raw, rtol=1e-4)
    np.testing.assert_allclose(q2.numpy()[:, 0], v_raw, rtol=1e-4)
    assert 300 < v_raw.mean() < 5000  # a standing Hopper is worth hundreds to thousands of reward


def test_a_teacher_without_a_critic_gets_a_new_one_or_a_one_line_error(pendulum_ars: Path) -> None:
    ars = load_teacher(pendulum_ars, env="Pendulum-v1")
    student = _student(ars, max_terms=2)
    with pytest.raises(InvalidParameterError) as exc:
        CriticTuner(critic="teacher", n_steps=100).fit(student, ars, ars.env_fn)
    assert str(exc.value) == NO_CRITIC.format(name="'critic' parameter of CriticTuner")
    tuner = CriticTuner(**{**SMALL, "n_steps": 200, "eval_every": 200, "eval_episodes": 1}).fit(
        student, ars, ars.env_fn)
    assert tuner.critic_source_ == "new" and len(tuner.history_) == 2


NO_CRITIC = ("The {name} must be 'auto' or 'new' for a teacher without a critic (this one has neither Q-networks, "
             "as SAC, TD3 and TQC, nor a value network, as PPO and TRPO). Got 'teacher' instead.")


@pytest.mark.parametrize(("params", "message"), [
    ({"n_steps": -1}, "The 'n_steps' parameter of CriticTuner must be an int in [0, inf). Got -1 instead."),
    ({"critic": "ppo"}, "The 'critic' parameter of CriticTuner must be one of 'auto', 'teacher', 'new'. Got 'ppo' "
                        "instead."),
    ({"gamma": 1.5}, "The 'gamma' parameter of CriticTuner must be a float in [0.0, 1.0]. Got 1.5 instead."),
    ({"actor_units": "normalised"}, "The 'actor_units' parameter of CriticTuner must be one of 'features', 'raw'. "
                                    "Got 'normalised' instead."),
    ({"trust_weight": -1.0}, "The 'trust_weight' parameter of CriticTuner must be a float in [0.0, inf). Got -1.0 "
                             "instead."),
])
def test_bad_settings_are_one_line(pendulum_sac: Path, params: dict, message: str) -> None:
    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    with pytest.raises(InvalidParameterError) as exc:
        CriticTuner(**params).fit(_student(teacher), teacher, teacher.env_fn)
    assert str(exc.value) == message


def test_distill_with_rl_fine_tuning_from_the_cli(pendulum_sac: Path, pendulum_ars: Path, tmp_path: Path) -> None:
    out = tmp_path / "lin"
    tiny = ["--iterations", "0", "--steps", "400", "--select-episodes", "1", "--eval-episodes", "2"]
    run = _in_process(["distill", "linear", "--teacher", str(pendulum_sac), "--env", "Pendulum-v1",
                          "--rl-steps", "400", "--rl-warmup", "100", *tiny, "--out", str(out)])
    assert run.exit_code == 0, run.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["rl"]["critic"] == "teacher" and metrics["rl"]["history"][-1]["step"] == 400
    kept = max(metrics["rl"]["history"], key=lambda h: h["score"])
    assert metrics["rl"]["best_return"] == kept["return_mean"]
    assert load_controller(out).kind == "linear"
    run = _in_process(["distill", "linear", "--teacher", str(pendulum_ars), "--env", "Pendulum-v1",
                          "--rl-steps", "100", "--rl-critic", "teacher", *tiny, "--out", str(tmp_path / "ars")])
    assert run.exit_code == 1
    assert run.stderr.strip() == "Error: " + NO_CRITIC.format(name="'--rl-critic' option of interp-rl distill linear")


@pytest.mark.parametrize(("algo", "hp", "squash"), [
    ("ppo", ["n_steps=512", "batch_size=64"], "clip"),
    ("sac", ["learning_starts=200", "batch_size=64"], "tanh"),  # SMOSE proper
])
def test_train_with_a_mixture_actor_writes_the_controller_it_trained(tmp_path: Path, algo: str, hp: list[str],
                                                                     squash: str) -> None:
    """SMOSE from scratch: the trained SB3 actor and the written controller act alike on raw observations."""
    out = tmp_path / "moe"
    run = _in_process(["train", "--algo", algo, "--env", "Pendulum-v1", "--steps", "1024", "--policy", "moe",
                          "--experts", "3", *(a for h in hp for a in ("--hp", h)), "--eval-episodes", "1",
                          "--no-progress", "--out", str(out)])
    assert run.exit_code == 0, run.stderr
    assert "The mixture actor is a transparent controller too" in run.stdout
    teacher, ctrl = load_teacher(out), load_controller(out / "controller.json")
    assert ctrl.kind == "mixture" and ctrl.program.n_experts == 3 and ctrl.feature_names[0] == "cos_theta"
    assert ctrl.program.squash == squash
    if algo == "ppo":
        assert teacher.normalizer is not None  # the zoo's PPO settings normalise; the controller folds that in
    X = np.stack([teacher.env_fn(i).reset(seed=i)[0] for i in range(50)])
    X = np.concatenate([X, X * [1, 1, 4]])  # fast swings too, where the router and the squash matter
    np.testing.assert_allclose(ctrl.predict(X), teacher.predict(X), atol=1e-5)
    assert np.ptp(ctrl.predict(X)) > 1e-3  # it acts: the check above is not two constant zeros
    assert json.loads((out / "teacher.json").read_text())["controller"] == "controller.json"
    if algo == "sac":  # SMoSE's own gating: the learnt noise scale trained with it, and is not deployed
        head = teacher.model.policy.actor.mu
        assert teacher.model.policy.gating == "smose" and head.gating.noise == "learnt"
        assert head.router_noise.weight.abs().sum() > 0


def test_smose_gating_learns_its_noise_and_balances_importance_and_load() -> None:
    """Shazeer et al.'s noisy gating as SMoSE trains it: noise of a learnt scale while learning, none while acting;
    the balancing loss is half the squared coefficients of variation of importance and of the smooth load."""
    import torch

    from interp_rl.kinds.mixture_training import SMOSE, Gating, NoisyTop1Mixture

    torch.manual_seed(0)
    net = NoisyTop1Mixture(3, 2, 4, gating=SMOSE).train()
    with torch.no_grad():
        net.router_noise.weight.copy_(torch.randn(4, 3))
        net.experts_b.copy_(torch.randn(4, 2))
    x = torch.randn(64, 3)
    with torch.no_grad():  # acting: no noise
        torch.testing.assert_close(net(x), net(x))
    assert not torch.equal(net(x), net(x))  # learning: noisy scores
    net(x).sum().backward()
    assert net.router_noise.weight.grad.abs().sum() > 0  # the noise's scale learns with the router
    # the loss, written out from the paper's definitions
    clean = net.router(x).detach()
    std = torch.nn.functional.softplus(net.router_noise(x)).detach()
    noisy = clean + torch.randn(clean.shape) * std
    prob = torch.softmax(noisy, dim=1)
    load = torch.zeros(4)
    for m in range(4):
        others = torch.cat([noisy[:, :m], noisy[:, m + 1:]], dim=1).max(dim=1).values
        load[m] = torch.distributions.Normal(0.0, 1.0).cdf((clean[:, m] - others) / std[:, m]).sum()
    imp = prob.sum(dim=0)
    want = 0.01 * 0.5 * (imp.var() / imp.mean() ** 2 + load.var() / load.mean() ** 2)
    torch.testing.assert_close(net.balance_loss(prob, clean, noisy, std), want)
    # a router that cannot tell the experts apart is balanced: no loss
    flat = torch.zeros(64, 4)
    assert float(net.balance_loss(torch.softmax(flat, 1), flat, flat + torch.eye(4)[torch.arange(64) % 4],
                                  torch.ones(64, 4))) < 1e-3
    with pytest.raises(InvalidParameterError, match="'noise' parameter of Gating"):
        Gating(gate_noise=0.1, load_balance=0.0, noise="loud")


@pytest.mark.parametrize("policy", ["ppo", "sac"])
def test_mixture_actor_adds_noisy_gating_and_load_balancing_only_while_learning(policy: str) -> None:
    """The load-balancing loss reaches the router's gradient exactly; acting is noiseless and deterministic."""
    import gymnasium as gym
    import torch

    from envs.moe_policy import MixturePPOPolicy, MixtureSACPolicy

    env = gym.make("Pendulum-v1")
    cls = MixturePPOPolicy if policy == "ppo" else MixtureSACPolicy

    def head(**kw: float) -> Any:
        torch.manual_seed(0)
        pol = cls(env.observation_space, env.action_space, lambda _: 1e-3, n_experts=4, **kw)
        return pol.action_net if policy == "ppo" else pol.actor.mu

    x = torch.randn(256, 3)
    plain, balanced = head(gate_noise=0.0, load_balance=0.0), head(gate_noise=0.0, load_balance=0.5)
    for h in (plain, balanced):
        h(x).sum().backward()
    scores = plain.router(x)
    prob = torch.softmax(scores, dim=1)
    share = torch.bincount(scores.argmax(dim=1), minlength=4).float() / len(x)
    aux = 0.5 * 4 * (share.detach() * prob.mean(dim=0)).sum()
    (expected,) = torch.autograd.grad(aux, plain.router.weight)
    torch.testing.assert_close(balanced.router.weight.grad - plain.router.weight.grad, expected)
    torch.testing.assert_close(balanced.experts_w.grad, plain.experts_w.grad)  # the experts are not pulled by it

    noisy = head(gate_noise=5.0, load_balance=0.0)
    with torch.no_grad():  # acting (SB3 predicts without gradients): no noise
        torch.testing.assert_close(noisy(x), noisy(x))
    noisy.eval()
    torch.testing.assert_close(noisy(x), noisy(x))
    noisy.train()
    assert not torch.equal(noisy(x), noisy(x))  # learning: the router's scores are noisy


@pytest.mark.parametrize(("args", "line"), [
    (["--algo", "td3", "--policy", "moe"], "Error: The 'policy' setting of train must be an SB3 policy name for TD3; "
                                           "'moe' needs one of ppo, a2c, trpo, sac"),
    (["--algo", "ppo", "--experts", "4"], "Error: --experts sets the experts of --policy moe; add --policy moe."),
])
def test_train_policy_moe_bad_input_is_one_line(tmp_path: Path, args: list[str], line: str) -> None:
    run = _in_process(["train", *args, "--env", "Pendulum-v1", "--steps", "100", "--out", str(tmp_path / "x")])
    assert run.exit_code == 1 and run.stderr.strip().startswith(line) and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_distill_start_fine_tunes_a_saved_controller_from_the_cli(pendulum_sac: Path, tmp_path: Path) -> None:
    from distill.dagger import SELECTION_SEED_OFFSET
    from interp_rl.rollouts import evaluate

    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    saved = tmp_path / "saved"
    _student(teacher, max_terms=2).to_controller(task="Pendulum-v1").save(saved)
    out = tmp_path / "tuned"
    run = _in_process(["distill", "linear", "--teacher", str(pendulum_sac), "--env", "Pendulum-v1",
                          "--start", str(saved), "--rl-steps", "400", "--rl-warmup", "100", "--eval-episodes", "2",
                          "--out", str(out)])
    assert run.exit_code == 0, run.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["start"]["controller"] == str(saved) and metrics["dagger_history"] is None  # nothing distilled
    held_out = evaluate(load_controller(saved), teacher.env_fn, 10, seed=SELECTION_SEED_OFFSET).returns
    assert metrics["rl"]["initial_return"] == pytest.approx(float(np.mean(held_out)))  # it started there
    assert json.loads((out / "config.json").read_text())["start"] == str(saved)
    # a controller of another kind, or of another task, is refused in one line
    moe = tmp_path / "moe"
    _student(teacher, MixturePolicy, n_experts=2, max_terms=2, n_steps=100).to_controller(task="Pendulum-v1").save(moe)
    other = tmp_path / "other"
    _student(teacher, max_terms=2).to_controller(task="InvertedPendulum-v5").save(other)
    for start, message in ((moe, f"The start controller in {str(moe)!r} is a mixture program; method 'linear' "
                                 "fine-tunes linear programs."),
                           (other, f"The start controller in {str(other)!r} is for InvertedPendulum-v5, not the "
                                   "teacher's task Pendulum-v1.")):
        run = _in_process(["distill", "linear", "--teacher", str(pendulum_sac), "--env", "Pendulum-v1",
                           "--start", str(start), "--rl-steps", "100", "--out", str(tmp_path / "x")])
        assert run.exit_code == 1 and run.stderr.strip() == f"Error: {message}"
    with pytest.raises(InvalidParameterError, match="The 'program' parameter of LinearPolicy.from_program must be "
                                                    "a linear program. Got 'mixture' instead."):
        LinearPolicy.from_program(load_controller(moe).program)


def test_interrupted_fine_tuning_resumes_to_the_same_numbers(pendulum_sac: Path, tmp_path: Path) -> None:
    from interp_rl.errors import DistillInterrupted, InterpRLError

    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")
    student = _student(teacher, max_terms=2)
    whole = CriticTuner(**SMALL, checkpoint_dir=tmp_path / "whole").fit(student, teacher, teacher.env_fn)

    def stop_at_400(row: dict) -> None:
        if row["step"] == 400:
            raise KeyboardInterrupt

    ckpt = tmp_path / "cut"
    with pytest.raises(DistillInterrupted, match=r"its state at 400 transitions is kept in .*cut"):
        CriticTuner(**SMALL, checkpoint_dir=ckpt).fit(student, teacher, teacher.env_fn, progress=stop_at_400)
    with pytest.raises(InterpRLError, match="already holds a fine-tuning; pass resume=True"):
        CriticTuner(**SMALL, checkpoint_dir=ckpt).fit(student, teacher, teacher.env_fn)
    with pytest.raises(InterpRLError, match=r"started with actor_lr=0\.0001, not 0\.001"):
        CriticTuner(**{**SMALL, "actor_lr": 1e-3}, checkpoint_dir=ckpt).fit(student, teacher, teacher.env_fn,
                                                                            resume=True)
    resumed = CriticTuner(**SMALL, checkpoint_dir=ckpt).fit(student, teacher, teacher.env_fn, resume=True)
    assert resumed.resumed_from_ == 400 and whole.resumed_from_ is None
    drop = {"seconds"}
    assert ([{k: v for k, v in h.items() if k not in drop} for h in resumed.history_]
            == [{k: v for k, v in h.items() if k not in drop} for h in whole.history_])
    for a, b in ((resumed.final_student_, whole.final_student_), (resumed.student_, whole.student_)):
        assert json.dumps(a._fitted_program().to_dict()) == json.dumps(b._fitted_program().to_dict())
    (ckpt / "rl_state.json").write_text("{broken")
    with pytest.raises(InterpRLError, match="is missing or corrupt"):
        CriticTuner(**SMALL, checkpoint_dir=ckpt).fit(student, teacher, teacher.env_fn, resume=True)


def test_a_mujoco_episode_in_flight_continues_exactly_from_its_saved_state() -> None:
    from distill.critic_tuning import _env_state, _set_env_state

    rng = np.random.default_rng(0)
    a, b = envs.make_env("Hopper-v5", 0), envs.make_env("Hopper-v5", 1)
    a.reset(seed=3)
    for _ in range(40):
        a.step(rng.uniform(-1, 1, 3))
    state, counters = _env_state(a)
    assert 40 in counters  # TimeLimit's step count travels with it
    b.reset(seed=99)
    _set_env_state(b, state, counters)
    for act in rng.uniform(-1, 1, (60, 3)):
        ra, rb = a.step(act), b.step(act)
        assert np.array_equal(ra[0], rb[0]) and ra[1:4] == rb[1:4]


def test_distill_moe_by_rl_from_scratch_trains_the_mixture_instead_of_distilling(pendulum_sac: Path,
                                                                                 tmp_path: Path) -> None:
    """``--scratch-steps``: SMOSE proper as a method's first stage, the teacher only the yardstick."""
    def distill(out: Path, *extra: str) -> Any:
        return _in_process(["distill", "moe", "--teacher", str(pendulum_sac), "--env", "Pendulum-v1",
                               "--experts", "2", "--scratch-steps", "300", "--eval-episodes", "2", "--seed", "3",
                               "--rl-steps", "0",
                               *extra, "--out", str(out)])

    run = distill(tmp_path / "a")
    assert run.exit_code == 0, run.stderr
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert "dagger_history" not in metrics  # nothing distilled
    assert metrics["scratch"]["algo"] == "sac" and metrics["scratch"]["steps"] == 300
    assert [h["step"] for h in metrics["scratch"]["history"]] == [300] and metrics["distill_seconds"] > 0
    assert metrics["distill_seconds"] >= metrics["scratch"]["history"][-1]["seconds"]
    ctrl = load_controller(tmp_path / "a")
    assert ctrl.kind == "mixture" and ctrl.program.n_experts == 2 and ctrl.program.squash == "tanh"  # SAC's actor
    assert not (tmp_path / "a" / "checkpoint").exists()
    # same seed, same controller; the evaluation saw it act
    assert distill(tmp_path / "b").exit_code == 0
    assert load_controller(tmp_path / "b").program.to_dict() == ctrl.program.to_dict()
    assert metrics["student_return"] == json.loads((tmp_path / "b" / "metrics.json").read_text())["student_return"]
    # what it cannot do, in one line each
    for extra, line in ((["--router", "tree"], "Error: RL from scratch trains a linear router; got router='tree' "
                                               "(distil the router into a tree afterwards, or use router='linear')."),
                        (["--start", str(tmp_path / "a")], "Error: RL from scratch (scratch_steps) and a start "
                                                           "controller exclude each other: drop one."),
                        (["--scratch-algo", "td3"], "Error: The '--scratch-algo' option of interp-rl distill moe "
                                                    "must be one of 'sac', 'ppo', 'a2c', 'trpo', 'ars', 'cmaes'. Got 'td3' "
                                                    "instead."),
                        (["--scratch-algo", "ars"], "Error: ARS from scratch searches a kind that starts from zeros (a "
                                                    "linear policy); this method's student is a mixture, whose "
                                                    "structure must be learnt first (distil it, then fine-tune with "
                                                    "rl_search='ars').")):
        run = _in_process(["distill", "moe", "--teacher", str(pendulum_sac), "--env", "Pendulum-v1", "--experts", "2",
                           "--scratch-steps", "300", "--eval-episodes", "2", "--seed", "3", "--rl-steps", "0", *extra,
                           "--out", str(tmp_path / "bad")])  # refused before any work: no process of its own
        assert run.exit_code == 1 and run.stderr.strip() == line, run.stderr


def test_rl_from_scratch_asks_the_teacher_to_train_and_names_one_that_cannot(tmp_path: Path) -> None:
    """``distill`` never imports ``envs``: the training runs through the teacher (``train_from_scratch``)."""
    from distill.from_scratch import ScratchTrainer

    class Bare:  # a teacher that knows no training machinery
        task = "Pendulum-v1"

    with pytest.raises(InterpRLError) as exc:
        ScratchTrainer(n_steps=10).fit(MixturePolicy(n_experts=2), Bare(), checkpoint_dir=tmp_path / "r")
    assert str(exc.value) == ("RL from scratch needs a teacher that can train on its own task (train_from_scratch, "
                              "as teachers from envs.load_teacher have); Bare has none.")
    assert not (tmp_path / "r").exists()


def test_training_in_a_teachers_observation_layout_keeps_it(tmp_path: Path) -> None:
    from envs.training import TrainConfig, train_teacher

    cfg = TrainConfig(algo="ppo", task="Pendulum-v1", steps=256, out=str(tmp_path / "tf"), eval_episodes=1,
                      hyperparams={"n_steps": 128, "batch_size": 64}, variant={"time_feature": True})
    meta = train_teacher(cfg, progress_bar=False)
    assert meta["variant"]["time_feature"] and all("seconds" in h for h in meta["history"])
    teacher = load_teacher(tmp_path / "tf")
    assert teacher.variant["time_feature"] and len(teacher.feature_names) == 4  # cos, sin, speed, time left
    with pytest.raises(InvalidParameterError) as exc:
        train_teacher(TrainConfig(algo="ppo", task="Pendulum-v1", steps=256, out=str(tmp_path / "x"),
                                  variant={"layout": "v3"}), progress_bar=False)
    assert str(exc.value).startswith("The 'variant' setting of train must map some of legacy_model, obs_layout, "
                                     "time_feature, zero_contact_forces to values. Got {'layout': 'v3'} instead.")


def test_the_long_recipe_fine_tunes_each_dart_level_and_resumes_to_the_same_controller(pendulum_sac: Path,
                                                                                        tmp_path: Path) -> None:
    """rl_levels='each': both levels fine-tuned (the router learning too), the better kept on further held-out
    episodes; a run stopped in the second level's fine-tuning resumes to the controller of a run never stopped."""
    from distill.job import Distillation
    from interp_rl.errors import DistillInterrupted

    teacher = load_teacher(pendulum_sac, env="Pendulum-v1")

    def make() -> Distillation:
        return Distillation(DAgger(MixturePolicy(n_experts=2, max_terms=2, n_steps=200), n_iter=1, steps=600,
                                   eval_episodes=0),
                            rl=CriticTuner(**SMALL, router="train"), restart_episodes=2, noise_levels="0,0.3",
                            rl_levels="each", n_jobs=1)

    whole = make().fit(teacher, checkpoint_dir=tmp_path / "whole")
    rows = whole.rl_levels_["rows"]
    assert [r["noise"] for r in rows] == [0.0, 0.3]
    kept = whole.rl_levels_["kept"]
    assert kept == int(np.argmax([r["score"] for r in rows])) and whole.noise_levels_["kept"] == kept
    assert whole.noise_levels_["chosen"] == "after fine-tuning" and whole.rl_["best_return"] == rows[kept]["best_return"]
    assert sorted(p.name for p in (tmp_path / "whole").iterdir()) == ["noise-0", "noise-0.3", "rl-noise-0",
                                                                      "rl-noise-0.3"]

    def stop(row: dict) -> None:
        if row.get("phase") == "fine-tune" and row.get("level") == 1 and row["step"] == 400:
            raise KeyboardInterrupt

    with pytest.raises(DistillInterrupted):
        make().fit(teacher, checkpoint_dir=tmp_path / "cut", progress=stop)
    resumed = make().fit(teacher, checkpoint_dir=tmp_path / "cut", resume=True)
    assert json.dumps(resumed.student_.to_controller().to_dict()) == json.dumps(whole.student_.to_controller().to_dict())
    def timeless(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert timeless(resumed.rl_levels_["rows"]) == timeless(rows)


def test_budgets_name_recipes_whose_settings_the_users_own_flags_override(tmp_path: Path) -> None:
    from distill.methods import LONG_RL_STEPS, METHODS

    moe = METHODS["moe"]
    assert moe.resolve({})["rl_steps"] == 100_000 and moe.resolve({})["budget"] == "default"
    long = moe.resolve({"budget": "long"})
    assert (long["rl_steps"], long["rl_levels"], long["rl_router"], long["rl_eval_every"]) == (
        LONG_RL_STEPS, "each", "train", 50_000)
    assert moe.resolve({"budget": "long", "rl_steps": 5000})["rl_steps"] == 5000  # the flag given wins
    assert METHODS["tree"].resolve({"budget": "long"})["rl_router"] == "frozen"  # a tree's splits stay
    with pytest.raises(InvalidParameterError, match=r"The 'budget' setting of method 'moe' must be one of "
                                                    r"'default', 'long'\. Got 'fast' instead\."):
        moe.resolve({"budget": "fast"})
    run = _in_process(["distill", "moe", "--teacher", "x.zip", "--budget", "fast", "--out",
                          str(tmp_path / "o")])
    assert run.exit_code == 1 and run.stderr.strip() == (
        "Error: The '--budget' option of interp-rl distill moe must be one of 'default', 'long'. Got 'fast' instead.")
    assert not (tmp_path / "o").exists()
