"""Train an SB3 teacher on a task, with checkpoints and resume.

The output folder holds ``model.zip`` (SB3's format), ``teacher.json``
(algorithm, task, provenance), ``vecnormalize.npz`` when observations are
normalised, ``train_config.json`` (the resolved configuration) and
``checkpoint/``, from which ``--resume`` continues: the model's training state
(``agent.npz``: networks, optimisers, counters) and the best policy so far
(``best_policy.npz``), both arrays and JSON (:mod:`envs.agent_state`), the
replay buffer as ``.npz`` chunks, the normaliser's state and ``state.json``.
Nothing in a checkpoint is a pickle: resuming rebuilds the model from the run's
settings and reads the arrays back, so a checkpoint can be kept between sessions
(committed) and resumed without trusting it. Every file is written atomically,
so an interruption loses at most the steps since the last checkpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from envs.agent_state import load_agent_state, load_module_state, save_agent_state, save_module_state
from envs.algorithms import ALGORITHMS, algorithm_class, default_hyperparams
from envs.loading import TEACHER_FILE
from envs.registry import EnvVariant, env_factory, get_task, make_vec_env
from envs.sb3 import ObsNormalizer, SB3Teacher, register_trainer, trust_pickles
from interp_rl.errors import InvalidParameterError, TrainInterrupted
from interp_rl.interrupts import sigterm_as_interrupt
from interp_rl.io import atomic_write, atomic_write_text
from interp_rl.rollouts import evaluate
from interp_rl.seeds import TRAIN_EVAL_SEED_OFFSET
from interp_rl.validation import check_int

__all__ = ["TrainConfig", "TrainInterrupted", "check_config", "default_hyperparams", "train_teacher"]

_OFF_POLICY = {"sac", "td3", "ddpg", "tqc", "dqn"}
_ACTIVATIONS = {"relu": "ReLU", "tanh": "Tanh", "elu": "ELU", "leaky_relu": "LeakyReLU"}
_SETTINGS = {"normalize", "n_envs", "noise_type", "noise_std", "policy"}


@dataclass(frozen=True)
class TrainConfig:
    """Configuration of one ``interp-rl train`` run."""

    algo: str
    """Algorithm: sac, td3, ddpg, tqc, ppo, a2c, trpo, ars or dqn (dqn: discrete tasks only)."""
    task: str
    """Task id, e.g. ``InvertedPendulum-v5``."""
    steps: int
    """Total environment steps."""
    out: str
    """Output folder."""
    seed: int = 0
    """Seed of the environments, the networks and the exploration."""
    checkpoint_every: int = 0
    """Steps between checkpoints; 0 picks ``max(1000, steps // 10)``."""
    hyperparams: dict[str, Any] = field(default_factory=dict)
    """Overrides of the per-task hyperparameters."""
    eval_episodes: int = 5
    """Deterministic episodes run at every checkpoint (0: none)."""
    keep: str = "best"
    """Which policy becomes ``model.zip``: ``best`` (highest checkpoint evaluation) or ``last``."""
    threads: int = 1
    """Torch CPU threads; one is fastest for these small networks (and never oversubscribes)."""
    variant: dict[str, Any] = field(default_factory=dict)
    """The environment adjusted as for an agent (fields of :class:`~envs.registry.EnvVariant`, e.g.
    ``{"time_feature": True}``); empty: the plain task. Training a controller on a teacher's own
    observation layout makes the two comparable on the same episodes."""

    def env_variant(self) -> EnvVariant:
        """:attr:`variant` as an :class:`~envs.registry.EnvVariant`; unknown fields are a one-line error."""
        known = set(EnvVariant.__dataclass_fields__)
        if not isinstance(self.variant, dict) or set(self.variant) - known:
            raise InvalidParameterError(
                f"The 'variant' setting of train must map some of {', '.join(sorted(known))} to values. "
                f"Got {self.variant!r} instead.")
        return EnvVariant(**self.variant)

    def resolved_hyperparams(self) -> dict[str, Any]:
        """Per-task defaults updated with :attr:`hyperparams`."""
        return {**default_hyperparams(self.algo, self.task), **self.hyperparams}


def _policy_kwargs(raw: dict[str, Any] | None) -> dict[str, Any]:
    import torch.nn as nn

    kwargs = dict(raw or {})
    act = kwargs.get("activation_fn")
    if isinstance(act, str):
        if act not in _ACTIVATIONS:
            raise InvalidParameterError(
                f"The 'activation_fn' policy setting must be one of {', '.join(_ACTIVATIONS)}. "
                f"Got {act!r} instead."
            )
        kwargs["activation_fn"] = getattr(nn, _ACTIVATIONS[act])
    return kwargs


def _build_model(cfg: TrainConfig, hp: dict[str, Any], venv: Any) -> Any:
    cls = algorithm_class(cfg.algo)
    kwargs = {k: v for k, v in hp.items() if k not in _SETTINGS}
    kwargs["policy_kwargs"] = _policy_kwargs(kwargs.get("policy_kwargs"))
    if hp.get("policy") == "moe":  # SMOSE: a mixture of linear experts as the actor
        from envs.moe_policy import MIXTURE_ALGOS, MixturePPOPolicy, MixtureSACPolicy

        algo = cfg.algo.lower()
        if algo not in MIXTURE_ALGOS:
            raise InvalidParameterError(
                f"The 'policy' setting of train must be an SB3 policy name for {cfg.algo.upper()}; 'moe' needs "
                f"one of {', '.join(MIXTURE_ALGOS)} (TD3, DDPG and TQC are not supported with it). Got 'moe' "
                "instead."
            )
        arch = kwargs["policy_kwargs"].get("net_arch")
        critic = "qf" if algo == "sac" else "vf"
        default = [256, 256] if algo == "sac" else [64, 64]
        layers = arch.get(critic, default) if isinstance(arch, dict) else list(arch or default)
        kwargs["policy_kwargs"] = {**kwargs["policy_kwargs"], "net_arch": {"pi": [], critic: layers}}
        if algo == "sac" and kwargs.get("use_sde"):
            raise InvalidParameterError("--policy moe trains SAC without gSDE; drop use_sde from the settings.")
        if algo == "sac":  # SMoSE's own gating unless the settings name another
            kwargs["policy_kwargs"] = {"gating": "smose", **kwargs["policy_kwargs"]}
        policy = MixtureSACPolicy if algo == "sac" else MixturePPOPolicy
        return cls(policy, venv, seed=cfg.seed, device="cpu", verbose=0, **kwargs)
    if hp.get("noise_type") == "normal":
        from stable_baselines3.common.noise import NormalActionNoise

        n = venv.action_space.shape[0]
        kwargs["action_noise"] = NormalActionNoise(np.zeros(n), float(hp["noise_std"]) * np.ones(n))
    return cls(hp.get("policy", "MlpPolicy"), venv, seed=cfg.seed, device="cpu", verbose=0, **kwargs)


def _save_zip(model: Any, path: Path) -> None:
    def _w(tmp: str) -> None:
        model.save(tmp + ".zip")  # SB3 appends ".zip" to names without it
        os.replace(tmp + ".zip", tmp)

    atomic_write(path, _w)


def _save_npz(path: Path, **arrays: Any) -> None:
    def _w(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    atomic_write(path, _w)


_BUFFER_FIELDS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")
#: Replay rows per chunk file of a checkpoint (``replay_buffer/NNNNN.npz``): a chunk once full never changes while the
#: buffer fills, so a checkpoint rewrites only the chunks new rows reached, and a run's checkpoint kept between
#: sessions (committed) stores each transition once.
BUFFER_CHUNK = 25_000
BUFFER_DIR = "replay_buffer"
#: A checkpoint's model (networks, optimisers, counters) and best policy so far: arrays and JSON, no pickles.
AGENT_FILE = "agent.npz"
BEST_FILE = "best_policy.npz"


def _save_buffer(model: Any, folder: Path, since: int = 0) -> None:
    """The filled rows of the replay buffer as chunk files in ``folder`` (those holding rows written after ``since``,
    the position of the last save, or every chunk once the buffer has wrapped), then its position."""
    buf = model.replay_buffer
    n = buf.buffer_size if buf.full else buf.pos  # only the filled rows
    folder.mkdir(parents=True, exist_ok=True)
    first = 0 if buf.full else since // BUFFER_CHUNK
    for k in range(first, (n + BUFFER_CHUNK - 1) // BUFFER_CHUNK):
        rows = slice(k * BUFFER_CHUNK, min(n, (k + 1) * BUFFER_CHUNK))
        _save_npz(folder / f"{k:05d}.npz", **_packed({f: getattr(buf, f)[rows] for f in _BUFFER_FIELDS
                                                      if getattr(buf, f, None) is not None}))
    atomic_write_text(folder / "position.json", json.dumps({"pos": int(buf.pos), "full": bool(buf.full),
                                                            "rows": int(n), "chunk": BUFFER_CHUNK}) + "\n")


def _packed(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A chunk's arrays with ``next_observations`` kept only where it is not the next row's observation (episode
    ends, the chunk's last row): within an episode each is the following row's ``observations``, so a chunk holds
    each observation once, exactly (:func:`_unpacked` restores them).

    >>> obs = np.array([[0.0], [1.0], [2.0], [9.0]])
    >>> nxt = np.array([[1.0], [2.0], [3.0], [10.0]])  # an episode ended after row 2
    >>> p = _packed({"observations": obs, "next_observations": nxt})
    >>> p["next_observations_rows"].tolist(), np.array_equal(_unpacked(p)["next_observations"], nxt)
    ([2, 3], True)
    """
    if "observations" not in arrays or "next_observations" not in arrays:
        return arrays
    out = dict(arrays)
    obs, nxt = out["observations"], out.pop("next_observations")
    same = np.zeros(len(nxt), dtype=bool)
    same[:-1] = np.all((nxt[:-1] == obs[1:]).reshape(len(nxt) - 1, -1), axis=1)
    keep = np.flatnonzero(~same)
    out["next_observations_rows"], out["next_observations_at"] = keep, nxt[keep]
    return out


def _unpacked(arrays: Any) -> dict[str, np.ndarray]:
    """A chunk's arrays as the buffer holds them (see :func:`_packed`; chunks written whole load as they are)."""
    out = {k: np.asarray(arrays[k]) for k in (arrays.files if hasattr(arrays, "files") else arrays)}
    if "next_observations_rows" in out:
        obs = out["observations"]
        nxt = np.empty_like(obs)
        nxt[:-1] = obs[1:]
        nxt[out.pop("next_observations_rows")] = out.pop("next_observations_at")
        out["next_observations"] = nxt
    return out


def _load_buffer(model: Any, ckpt: Path) -> None:
    """The replay buffer of the checkpoint ``ckpt``: its chunk files, or the single ``replay_buffer.npz`` of
    checkpoints written before chunks."""
    buf = model.replay_buffer
    folder = ckpt / BUFFER_DIR
    if (folder / "position.json").is_file():
        state = json.loads((folder / "position.json").read_text())
        parts = [folder / f"{k:05d}.npz" for k in range((int(state["rows"]) + int(state["chunk"]) - 1)
                                                        // int(state["chunk"]))]
        pos, full = int(state["pos"]), bool(state["full"])
    else:
        parts, pos, full = [ckpt / "replay_buffer.npz"], None, None
    start = 0
    for part in parts:
        with np.load(part, allow_pickle=False) as npz:
            z = _unpacked(npz)
            length = 0
            for f in _BUFFER_FIELDS:
                if f in z:
                    target = getattr(buf, f)
                    saved = z[f]
                    if target.shape[1:] != saved.shape[1:] or start + len(saved) > len(target):
                        raise InvalidParameterError(
                            f"The checkpoint's replay buffer field {f!r} has shape {saved.shape}, but "
                            f"this run expects {target.shape}; was it made with other settings?"
                        )
                    target[start: start + len(saved)] = saved
                    length = len(saved)
            if pos is None:  # the single file of older checkpoints
                pos, full = int(z["pos"]), bool(z["full"])
        start += length
    buf.pos = int(pos or 0)
    buf.full = bool(full)


def _save_vecnorm(venv: Any, path: Path) -> None:
    _save_npz(
        path,
        obs_mean=venv.obs_rms.mean, obs_var=venv.obs_rms.var, obs_count=np.float64(venv.obs_rms.count),
        ret_mean=np.float64(venv.ret_rms.mean), ret_var=np.float64(venv.ret_rms.var),
        ret_count=np.float64(venv.ret_rms.count),
    )


def _load_vecnorm(venv: Any, path: Path) -> None:
    with np.load(path, allow_pickle=False) as z:
        venv.obs_rms.mean = np.array(z["obs_mean"])
        venv.obs_rms.var = np.array(z["obs_var"])
        venv.obs_rms.count = float(z["obs_count"])
        venv.ret_rms.mean = float(z["ret_mean"])
        venv.ret_rms.var = float(z["ret_var"])
        venv.ret_rms.count = float(z["ret_count"])


def _normalizer_of(venv: Any) -> ObsNormalizer:
    return ObsNormalizer(np.array(venv.obs_rms.mean), np.array(venv.obs_rms.var),
                         float(venv.clip_obs), float(venv.epsilon))


def _checkpoint_callback(run: _Run, every: int, last: int,
                         on_checkpoint: Callable[[dict[str, Any]], None] | None = None) -> Any:
    """An SB3 callback that checkpoints ``run`` every ``every`` steps (and tells ``on_checkpoint``)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class _Checkpoint(BaseCallback):  # type: ignore[misc]
        def _on_step(self) -> bool:
            nonlocal last
            if self.num_timesteps - last >= every:
                run.checkpoint(self.model)
                last = self.num_timesteps
                if on_checkpoint is not None and run.history:
                    on_checkpoint(dict(run.history[-1]))
            return True

    return _Checkpoint()


class _Run:
    """State and files of one training run."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.out = Path(cfg.out)
        self.ckpt = self.out / "checkpoint"
        self.hp = cfg.resolved_hyperparams()
        self.algo = cfg.algo.lower()
        self.task = get_task(cfg.task).id
        self.history: list[dict[str, Any]] = []
        self.best: dict[str, Any] | None = None
        self.buffer_saved = 0  # the replay position at the last checkpoint: chunks before it are written
        self.t0 = time.perf_counter()  # moved back by the seconds a resumed run had already spent

    def make_venv(self) -> Any:
        n_envs = int(self.hp.get("n_envs", 1))
        venv = make_vec_env(self.task, n_envs, self.cfg.seed, self.cfg.env_variant(), raw_actions=True)
        if self.hp.get("normalize"):
            from stable_baselines3.common.vec_env import VecNormalize

            venv = VecNormalize(venv, norm_obs=True, norm_reward=self.algo not in {"ars"},
                                gamma=float(self.hp.get("gamma", 0.99)))
        return venv

    def recent_return(self, model: Any) -> float | None:
        eps = [e["r"] for e in model.ep_info_buffer] if model.ep_info_buffer else []
        return float(np.mean(eps)) if eps else None

    def normalizer(self, model: Any) -> ObsNormalizer | None:
        return _normalizer_of(model.get_env()) if self.hp.get("normalize") else None

    def evaluate(self, model: Any) -> float | None:
        """Deterministic return of the current policy (episodes seeded away from training)."""
        if self.cfg.eval_episodes == 0:
            return None
        env_fn = env_factory(self.task, self.cfg.env_variant())
        teacher = SB3Teacher(model, self.algo, self.task, normalizer=self.normalizer(model), env_fn=env_fn)
        result = evaluate(teacher, env_fn, self.cfg.eval_episodes,
                          seed=self.cfg.seed + TRAIN_EVAL_SEED_OFFSET, task=self.task)
        return result.mean_return

    def record(self, model: Any) -> None:
        """Evaluate, append to the history, and keep the best policy so far."""
        if self.history and self.history[-1]["step"] == int(model.num_timesteps):
            return
        score = self.evaluate(model)
        self.history.append({"step": int(model.num_timesteps), "eval_return": score,
                             "recent_return": self.recent_return(model),
                             "seconds": time.perf_counter() - self.t0})
        if score is not None and (self.best is None or score > self.best["eval_return"]):
            self.ckpt.mkdir(parents=True, exist_ok=True)
            save_module_state(model.policy, self.ckpt / BEST_FILE)
            (self.ckpt / "best_model.zip").unlink(missing_ok=True)  # an older checkpoint's pickled best
            norm = self.normalizer(model)
            if norm is not None:
                norm.save(self.ckpt / "best_vecnormalize.npz")
            self.best = {"step": int(model.num_timesteps), "eval_return": score}

    def checkpoint(self, model: Any) -> None:
        self.ckpt.mkdir(parents=True, exist_ok=True)
        self.record(model)
        save_agent_state(model, self.ckpt / AGENT_FILE)
        (self.ckpt / "model.zip").unlink(missing_ok=True)  # an older checkpoint's pickled model
        if self.algo in _OFF_POLICY:
            _save_buffer(model, self.ckpt / BUFFER_DIR, since=self.buffer_saved)
            self.buffer_saved = int(model.replay_buffer.pos)
            (self.ckpt / "replay_buffer.npz").unlink(missing_ok=True)  # an older checkpoint's single file
        if self.hp.get("normalize"):
            _save_vecnorm(model.get_env(), self.ckpt / "vecnormalize_state.npz")
        # state.json last: it marks the checkpoint complete.
        atomic_write_text(self.ckpt / "state.json", json.dumps(
            {"num_timesteps": int(model.num_timesteps), "history": self.history, "best": self.best},
            indent=2))

    def finish(self, model: Any) -> dict[str, Any]:
        self.record(model)
        last = self.history[-1]
        use_best = (self.cfg.keep == "best" and self.best is not None
                    and self.best["step"] != last["step"])
        if use_best and (self.ckpt / BEST_FILE).is_file():
            load_module_state(model.policy, self.ckpt / BEST_FILE)  # the end: the model is only saved now
        elif use_best:  # an older checkpoint's pickled best, resumed with --trust-pickles: copied, never read
            shutil.copyfile(self.ckpt / "best_model.zip", self.ckpt / "chosen.zip")
            os.replace(self.ckpt / "chosen.zip", self.out / "model.zip")
        if not use_best or (self.ckpt / BEST_FILE).is_file():
            _save_zip(model, self.out / "model.zip")
        chosen = self.best if use_best else {"step": last["step"], "eval_return": last["eval_return"]}
        meta: dict[str, Any] = {
            "format": "interp-rl-teacher/1",
            "algo": self.algo,
            "task": self.task,
            "model": "model.zip",
            "seed": self.cfg.seed,
            "steps": int(model.num_timesteps),
            "kept": self.cfg.keep if use_best else "last",
            "model_step": chosen["step"] if chosen else int(model.num_timesteps),
            "model_eval_return": chosen["eval_return"] if chosen else None,
            "eval_episodes": self.cfg.eval_episodes,
            "variant": self.cfg.env_variant().to_dict(),
            "history": self.history,
        }
        if self.hp.get("normalize"):
            if use_best:
                ObsNormalizer.load(self.ckpt / "best_vecnormalize.npz").save(self.out / "vecnormalize.npz")
            else:
                _normalizer_of(model.get_env()).save(self.out / "vecnormalize.npz")
            meta["normalizer"] = "vecnormalize.npz"
        atomic_write_text(self.out / TEACHER_FILE, json.dumps(meta, indent=2) + "\n")
        return meta


def check_config(cfg: TrainConfig) -> int:
    """Check ``cfg``'s settings before anything runs (one-line errors); returns its steps."""
    steps = check_int(cfg.steps, "steps", "train")
    if cfg.algo.lower() not in ALGORITHMS:
        algorithm_class(cfg.algo)  # raises UnknownAlgorithmError
    check_int(cfg.checkpoint_every, "checkpoint_every", "train", low=0)
    check_int(cfg.threads, "threads", "train")
    check_int(cfg.eval_episodes, "eval_episodes", "train", low=0)
    if cfg.keep not in ("best", "last"):
        raise InvalidParameterError(
            f"The 'keep' parameter of train must be 'best' or 'last'. Got {cfg.keep!r} instead."
        )
    return steps


def train_teacher(
    cfg: TrainConfig,
    *,
    resume: bool = False,
    progress_bar: bool = True,
    on_checkpoint: Callable[[dict[str, Any]], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Train ``cfg.algo`` on ``cfg.task``; return the ``teacher.json`` metadata.

    ``on_checkpoint``, when given, receives the history row (``step``, ``eval_return``, ...) of every
    checkpoint, and ``on_start`` the steps already done when learning starts (every setting checked by
    then), for a caller that shows progress its own way.

    Raises
    ------
    InvalidParameterError
        Non-positive steps, or an output folder that already holds a run
        while ``resume`` is False.
    TrainInterrupted
        On Ctrl-C, after writing a checkpoint.
    """
    steps = check_config(cfg)
    import torch

    torch.set_num_threads(cfg.threads)
    run = _Run(cfg)
    state_file = run.ckpt / "state.json"
    if not resume and (state_file.exists() or (run.out / TEACHER_FILE).exists()):
        raise InvalidParameterError(
            f"The output folder {cfg.out!r} already holds a training run; pass --resume to "
            "continue it, or choose another --out."
        )
    if resume and (run.out / TEACHER_FILE).exists() and not state_file.exists():
        return dict(json.loads((run.out / TEACHER_FILE).read_text()))
    venv = run.make_venv()
    if resume and state_file.exists() and not (run.ckpt / AGENT_FILE).is_file() and not trust_pickles():
        venv.close()
        raise InvalidParameterError(
            f"The checkpoint in {str(run.ckpt)!r} was written by an older interp-rl, as an SB3 zip, which cannot "
            "be read back without running its pickles; if you wrote it yourself, resume with "
            "interp-rl --trust-pickles train ... --resume (its next checkpoint is written without pickles)."
        )
    try:  # bad hyperparameters fail here, before anything is written to --out
        fresh = _build_model(cfg, run.hp, venv)
    except InvalidParameterError:
        venv.close()
        raise
    except (TypeError, ValueError, AssertionError) as exc:
        venv.close()
        given = ", ".join(f"{k}={v!r}" for k, v in cfg.hyperparams.items()) or "the shipped defaults"
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise InvalidParameterError(
            f"{run.algo.upper()} does not accept the hyperparameters ({given}): {reason}"
        ) from None
    run.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run.out / "train_config.json", json.dumps(
        {**asdict(cfg), "task": run.task, "hyperparams": run.hp}, indent=2, default=str) + "\n")

    done = 0
    if resume and state_file.exists():
        state = json.loads(state_file.read_text())
        done = int(state["num_timesteps"])
        run.history = list(state.get("history", []))
        run.best = state.get("best")
        run.t0 -= float(run.history[-1].get("seconds", 0.0)) if run.history else 0.0
        if run.hp.get("normalize"):
            _load_vecnorm(venv, run.ckpt / "vecnormalize_state.npz")
        if (run.ckpt / AGENT_FILE).is_file():
            model = fresh
            load_agent_state(model, run.ckpt / AGENT_FILE)
        else:  # an older checkpoint, trusted by the user (checked above)
            model = algorithm_class(run.algo).load(str(run.ckpt / "model.zip"), env=venv, device="cpu")
        if run.algo in _OFF_POLICY:
            _load_buffer(model, run.ckpt)
            run.buffer_saved = 0 if (run.ckpt / "replay_buffer.npz").is_file() else int(model.replay_buffer.pos)
    else:
        model = fresh
    every = cfg.checkpoint_every or max(1000, steps // 10)
    callback = _checkpoint_callback(run, every, done, on_checkpoint)
    remaining = steps - done
    try:
        with sigterm_as_interrupt():
            if on_start is not None:
                on_start(done)
            if remaining > 0:
                model.learn(total_timesteps=remaining, callback=callback,
                            reset_num_timesteps=done == 0, progress_bar=progress_bar)
    except KeyboardInterrupt:
        run.checkpoint(model)
        raise TrainInterrupted(
            f"Training interrupted at step {model.num_timesteps} of {steps}; checkpoint saved in "
            f"{str(run.ckpt)!r}; rerun with --resume to continue."
        ) from None
    finally:
        venv.close()
    meta = run.finish(model)
    if run.hp.get("policy") == "moe":
        _write_mixture_controller(run.out)
        meta["controller"] = "controller.json"
        atomic_write_text(run.out / TEACHER_FILE, json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(run.ckpt, ignore_errors=True)
    return meta


def _write_mixture_controller(out: Path) -> None:
    """The kept mixture actor as ``controller.json``: the transparent controller RL trained directly."""
    from envs.loading import load_teacher
    from envs.moe_policy import mixture_from_model
    from envs.registry import task_signals
    from interp_rl.program import Controller

    teacher = load_teacher(out)
    features, actions = task_signals(teacher.task, teacher.variant)
    program = mixture_from_model(teacher.model, teacher.normalizer)
    meta = {"method": "moe-scratch", "algo": teacher.algo, "source": str(out)}
    Controller(program, features=features, actions=actions, task=teacher.task, metadata=meta).save(
        out / "controller.json")


@register_trainer
def _train_for_teacher(teacher: SB3Teacher, out: str | Path, *, algo: str, steps: int, seed: int = 0,
                       eval_episodes: int = 5, hyperparams: dict[str, Any] | None = None, resume: bool = False,
                       on_checkpoint: Callable[[dict[str, Any]], None] | None = None,
                       checkpoint_every: int = 0) -> dict[str, Any]:
    """:meth:`SB3Teacher.train_from_scratch`: ``algo`` trained on the teacher's task, in its observation layout."""
    cfg = TrainConfig(algo=algo, task=teacher.task, steps=steps, out=str(out), seed=seed,
                      eval_episodes=eval_episodes, variant=dict(teacher.variant),
                      hyperparams=dict(hyperparams or {}), checkpoint_every=checkpoint_every)
    return train_teacher(cfg, resume=resume, progress_bar=False, on_checkpoint=on_checkpoint)
