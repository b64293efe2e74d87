"""Real SB3 training runs with tiny budgets: checkpoints, resume, interruption, seeds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from envs.loading import load_teacher
from envs.training import TrainConfig, default_hyperparams, train_teacher
from interp_rl.errors import InvalidParameterError, UnknownAlgorithmError
from interp_rl.rollouts import evaluate

CLI = [sys.executable, "-m", "interp_rl.cli"]


def _train_cmd(out: Path, steps: int, every: int, *extra: str) -> list[str]:
    return [*CLI, "train", "--algo", "sac", "--env", "InvertedPendulum-v5", "--steps", str(steps),
            "--seed", "3", "--checkpoint-every", str(every), "--hp", "learning_starts=100",
            "--out", str(out), "--no-progress", *extra]


def _popen(cmd: list[str]) -> subprocess.Popen[bytes]:
    # A shell that runs jobs in the background starts them with SIGINT ignored, and Python keeps
    # it ignored; give the child the default disposition so Ctrl-C reaches it as it would a user.
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    start = time.time()
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"training exited early: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        if time.time() - start > timeout:
            proc.kill()
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.2)


def test_killed_run_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = _popen(_train_cmd(out, 1200, 400))
    _wait_for(out / "checkpoint" / "state.json", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    state = json.loads((out / "checkpoint" / "state.json").read_text())
    saved = state["num_timesteps"]
    assert 400 <= saved < 1200
    assert (out / "checkpoint" / "replay_buffer" / "00000.npz").exists()
    assert not [p for p in out.rglob("*.tmp")], "a half-written file was left behind"
    files = [p for p in (out / "checkpoint").rglob("*") if p.is_file()]
    assert {p.suffix for p in files} <= {".npz", ".json"}, "a checkpoint holds nothing but arrays and JSON"
    for p in files:
        if p.suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                [z[k] for k in z.files]  # every array reads back without unpickling

    # the refusal and the resume in this process (typer's runner): neither is about processes, each new interpreter
    # only imported the toolkit again
    from typer.testing import CliRunner

    from interp_rl.cli import app

    again = CliRunner().invoke(app, _train_cmd(out, 1200, 400)[len(CLI):])
    assert again.exit_code == 1
    assert again.stderr.strip().splitlines()[-1] == (
        f"Error: The output folder '{out}' already holds a training run; pass --resume to "
        "continue it, or choose another --out."
    )

    resumed = CliRunner().invoke(app, _train_cmd(out, 1200, 400, "--resume")[len(CLI):])
    assert resumed.exit_code == 0, resumed.stderr
    meta = json.loads((out / "teacher.json").read_text())
    assert meta["steps"] == 1200
    steps = [h["step"] for h in meta["history"]]
    assert steps[0] == 400 and saved in steps, "the history before the kill was lost"
    assert not (out / "checkpoint").exists()
    teacher = load_teacher(out)
    assert teacher.algo == "sac" and teacher.task == "InvertedPendulum-v5"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupting_training_writes_a_checkpoint(tmp_path: Path, signum: int) -> None:
    out = tmp_path / "run"
    proc = _popen(_train_cmd(out, 100_000, 300))
    _wait_for(out / "checkpoint" / "state.json", proc)
    proc.send_signal(signum)
    try:
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130
    line = stderr.decode().strip().splitlines()[-1]
    assert line.startswith("Error: Training interrupted at step ")
    assert "rerun with --resume to continue. To continue: interp-rl train " in line and line.endswith(" --resume")
    stopped = int(line.split("at step ")[1].split(" ")[0])
    assert json.loads((out / "checkpoint" / "state.json").read_text())["num_timesteps"] == stopped


def test_same_seed_same_teacher_bit_for_bit(tmp_path: Path) -> None:
    results = []
    for name in ("a", "b"):
        cfg = TrainConfig("sac", "InvertedPendulum-v5", 400, str(tmp_path / name), seed=7,
                          hyperparams={"learning_starts": 100})
        train_teacher(cfg, progress_bar=False)
        teacher = load_teacher(tmp_path / name)
        obs = np.random.default_rng(0).normal(size=(64, 4))
        results.append((teacher.predict(obs), evaluate(teacher, teacher.env_fn, 3, seed=5).returns))
    assert np.array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


@pytest.mark.parametrize("algo", ["sac", "td3", "ddpg", "tqc", "ppo", "a2c", "trpo", "ars"])
def test_every_algorithm_trains_and_loads_as_a_teacher(tmp_path: Path, algo: str) -> None:
    hp = {"learning_starts": 50, "batch_size": 32} if algo in {"sac", "td3", "ddpg", "tqc"} else {}
    if algo in {"ppo", "trpo"}:
        hp = {"n_steps": 64, "batch_size": 32}
    cfg = TrainConfig(algo, "Pendulum-v1", 256, str(tmp_path / algo), seed=0, hyperparams=hp,
                      eval_episodes=1)
    meta = train_teacher(cfg, progress_bar=False)
    teacher = load_teacher(tmp_path / algo)
    assert (teacher.algo, teacher.task) == (algo, "Pendulum-v1")
    assert meta["steps"] >= 256
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]])
    actions = teacher.predict(obs)
    assert actions.shape == (2, 1) and np.all(np.abs(actions) <= 2.0)
    if algo in {"sac", "td3", "ddpg", "tqc"}:
        assert teacher.has_q and np.isfinite(teacher.q_values(obs, actions)).all()
    elif algo != "ars":
        assert teacher.has_value and teacher.value(obs).shape == (2,)
    normalised = default_hyperparams(algo, "Pendulum-v1").get("normalize", False)
    assert (teacher.normalizer is not None) == bool(normalised)
    assert (tmp_path / algo / "vecnormalize.npz").exists() == bool(normalised)


def test_keep_last_and_bad_keep(tmp_path: Path) -> None:
    cfg = TrainConfig("sac", "Pendulum-v1", 300, str(tmp_path / "last"), seed=1, checkpoint_every=100,
                      hyperparams={"learning_starts": 50}, eval_episodes=1, keep="last")
    meta = train_teacher(cfg, progress_bar=False)
    assert meta["kept"] == "last" and meta["model_step"] == 300
    assert [h["step"] for h in meta["history"]] == [100, 200, 300]
    with pytest.raises(InvalidParameterError, match=r"^The 'keep' parameter of train must be 'best' or "
                       r"'last'\. Got 'worst' instead\.$"):
        train_teacher(TrainConfig("sac", "Pendulum-v1", 10, str(tmp_path / "x"), keep="worst"))


def test_bad_training_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match=r"^The 'steps' parameter of train must be an int in "
                       r"\[1, inf\)\. Got -5 instead\.$"):
        train_teacher(TrainConfig("sac", "Pendulum-v1", -5, str(tmp_path)))
    with pytest.raises(UnknownAlgorithmError, match="^Unknown algorithm 'dqnx'; expected one of sac,"):
        train_teacher(TrainConfig("dqnx", "Pendulum-v1", 10, str(tmp_path)))


@pytest.mark.slow
def test_readme_demo_runs_on_a_fresh_folder_and_balances_the_pendulum(tmp_path: Path) -> None:
    """The README's main command, exactly as written, in an empty folder: it trains SAC on
    InvertedPendulum-v5 (10,000 steps reach return 1000), distils every controller and writes the report."""
    import json
    import shutil

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    head = readme.split("## ", 1)[0]
    assert "\ninterp-rl demo\n" in head and "\npip install -e '.[dev]'\n" in head and "\npython -m pytest -n auto\n" in head
    # typed in this order: the CPU build of torch, the install, the main job, the tests
    order = [head.index(c) for c in ("\npip install torch==2.13.0\n", "\npip install -e '.[dev]'\n", "\ninterp-rl demo\n",
                                      "\npython -m pytest -n auto\n")]
    assert order == sorted(order)
    assert "\npython -m pytest -n auto\n" in (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(), \
        "CI runs the README's test command"
    exe = shutil.which("interp-rl")
    assert exe, "the interp-rl console script is not installed"
    done = subprocess.run([exe, "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "interp-rl-demo"
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert len(records) == 8
    assert all(r["teacher"]["return_mean"] == pytest.approx(1000.0) for r in records)
    linear = [r for r in records if r["method"] == "tree"]
    assert max(r["percent_of_teacher"] for r in linear) >= 90.0
    assert "Chosen tree controller" in done.stdout and "→ leaf" in done.stdout
    assert "a low or negative R² next to a high % of teacher is no contradiction" in done.stdout  # read beside R²
    equations = [r for r in records if r["method"] == "sindy"]  # a handful of terms balance the pole too
    assert [r["kind"] for r in equations] == ["equations"] * 2 and all(r["size"]["nonzero_terms"] <= 8 for r in equations)
    assert "Chosen sindy controller" in done.stdout and "contributes" in done.stdout


def test_cli_module_runs() -> None:
    done = subprocess.run([*CLI, "--help"], capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0 and "train" in done.stdout


def test_the_replay_buffer_checkpoints_in_chunks_each_written_once(tmp_path: Path, monkeypatch) -> None:
    """A checkpoint rewrites only the chunks new transitions reached (a run kept between sessions stores each
    transition once); the chunks, and the single file of older checkpoints, load back to the same buffer."""
    from stable_baselines3 import SAC

    import envs
    import envs.training as training

    monkeypatch.setattr(training, "BUFFER_CHUNK", 100)
    env = envs.make_env("Pendulum-v1", 0)
    model = SAC("MlpPolicy", env, buffer_size=1000, learning_starts=50, seed=0, device="cpu")
    model.learn(250)
    folder = tmp_path / "ckpt" / training.BUFFER_DIR
    training._save_buffer(model, folder)
    assert sorted(p.name for p in folder.glob("*.npz")) == ["00000.npz", "00001.npz", "00002.npz"]
    with np.load(folder / "00000.npz", allow_pickle=False) as z:  # each observation stored once
        assert "next_observations" not in z.files and len(z["next_observations_rows"]) <= 2
    first = {p.name: p.read_bytes() for p in folder.glob("*.npz")}
    for p in folder.glob("*.npz"):
        p.write_bytes(b"left alone")  # what the next checkpoint must not touch is marked
    model.learn(100, reset_num_timesteps=False)
    training._save_buffer(model, folder, since=250)
    assert (folder / "00000.npz").read_bytes() == (folder / "00001.npz").read_bytes() == b"left alone"
    assert (folder / "00002.npz").read_bytes() not in (b"left alone", first["00002.npz"])  # rows 200-299 grew
    (folder / "00000.npz").write_bytes(first["00000.npz"])
    (folder / "00001.npz").write_bytes(first["00001.npz"])
    fresh = SAC("MlpPolicy", env, buffer_size=1000, seed=1, device="cpu")
    training._load_buffer(fresh, tmp_path / "ckpt")
    assert fresh.replay_buffer.pos == model.replay_buffer.pos == 350
    for f in ("observations", "actions", "rewards", "next_observations", "dones"):
        np.testing.assert_array_equal(getattr(fresh.replay_buffer, f), getattr(model.replay_buffer, f))
    old = tmp_path / "old"  # a checkpoint written before chunks: one file
    old.mkdir()
    with open(old / "replay_buffer.npz", "wb") as fh:
        np.savez(fh, pos=np.int64(350), full=np.bool_(False),
                 **{f: getattr(model.replay_buffer, f)[:350] for f in ("observations", "actions", "rewards")})
    again = SAC("MlpPolicy", env, buffer_size=1000, seed=1, device="cpu")
    training._load_buffer(again, old)
    assert again.replay_buffer.pos == 350
    np.testing.assert_array_equal(again.replay_buffer.actions, model.replay_buffer.actions)


@pytest.mark.parametrize("algo,task", [("sac", "Pendulum-v1"), ("td3", "Pendulum-v1"), ("tqc", "Pendulum-v1"),
                                       ("ppo", "Pendulum-v1"), ("ars", "Pendulum-v1"), ("dqn", "CartPole-v1")])
def test_an_agent_state_restores_every_tensor_and_counter(tmp_path: Path, algo: str, task: str) -> None:
    """What a checkpoint keeps of a model (networks, optimisers' moments and steps, the learnt entropy coefficient,
    the counters) reads back into a model built afresh from the same settings with another seed, exactly."""
    import torch

    from envs.agent_state import load_agent_state, load_module_state, save_agent_state, save_module_state
    from envs.training import _build_model, _Run

    hp = {"learning_starts": 50, "batch_size": 32} if algo in {"sac", "td3", "tqc", "dqn"} else {}
    if algo == "ppo":
        hp = {"n_steps": 64, "batch_size": 32}
    cfg = TrainConfig(algo, task, 200, str(tmp_path / "a"), seed=0, hyperparams=hp)
    run = _Run(cfg)
    trained = _build_model(cfg, run.hp, run.make_venv()).learn(200)
    save_agent_state(trained, tmp_path / "agent.npz")
    save_module_state(trained.policy, tmp_path / "policy.npz")
    fresh = _build_model(TrainConfig(algo, task, 200, str(tmp_path / "b"), seed=9, hyperparams=hp), run.hp,
                         run.make_venv())

    def flat(x: object) -> list:
        if isinstance(x, torch.Tensor):
            return [x.detach().numpy()]
        if isinstance(x, dict):
            return [a for k in sorted(x, key=str) for a in [k, *flat(x[k])]]
        if isinstance(x, list | tuple):
            return [a for v in x for a in flat(v)]
        return [x]

    assert any(not np.array_equal(a, b) for a, b in zip(flat(fresh.policy.state_dict()),
                                                        flat(trained.policy.state_dict()), strict=True))
    load_agent_state(fresh, tmp_path / "agent.npz")
    got, want = flat(fresh.get_parameters()), flat(trained.get_parameters())
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
    for c in ("num_timesteps", "_n_updates", "_episode_num", "_n_calls"):
        assert getattr(fresh, c, None) == getattr(trained, c, None)
    if hasattr(trained, "log_ent_coef"):
        assert float(fresh.log_ent_coef.detach()) == float(trained.log_ent_coef.detach()) != 0.0
    other = _build_model(TrainConfig(algo, task, 200, str(tmp_path / "c"), seed=5, hyperparams=hp), run.hp,
                         run.make_venv())
    load_module_state(other.policy, tmp_path / "policy.npz")
    obs = np.stack([other.observation_space.sample() for _ in range(8)])
    np.testing.assert_array_equal(other.predict(obs, deterministic=True)[0],
                                  trained.predict(obs, deterministic=True)[0])
    with pytest.raises(InvalidParameterError, match="is not an agent state of the kind expected"):
        load_agent_state(other, tmp_path / "policy.npz")
    (tmp_path / "bad.npz").write_bytes(b"PK not really")
    with pytest.raises(InvalidParameterError, match=r"bad\.npz' is not an agent state written by interp-rl"):
        load_agent_state(other, tmp_path / "bad.npz")


def test_a_checkpoint_of_the_sb3_zip_era_is_refused_unless_trusted(tmp_path: Path, monkeypatch) -> None:
    """Checkpoints written before agent states held a pickled model.zip: resuming one would run its pickles."""
    from envs.sb3 import TRUST_PICKLES_ENV

    out = tmp_path / "run"
    cfg = TrainConfig("sac", "Pendulum-v1", 300, str(out), seed=1, checkpoint_every=100,
                      hyperparams={"learning_starts": 50}, eval_episodes=1)
    (out / "checkpoint").mkdir(parents=True)
    (out / "checkpoint" / "state.json").write_text(json.dumps({"num_timesteps": 100, "history": [], "best": None}))
    (out / "checkpoint" / "model.zip").write_bytes(b"an SB3 zip")
    monkeypatch.delenv(TRUST_PICKLES_ENV, raising=False)
    with pytest.raises(InvalidParameterError, match=r"was written by an older interp-rl, as an SB3 zip, which "
                       r"cannot be read back without running its pickles; if you wrote it yourself, resume with "
                       r"interp-rl --trust-pickles train"):
        train_teacher(cfg, resume=True, progress_bar=False)
