"""Exact import of agents that are already transparent: an sb3-contrib ARS linear agent as a linear controller.

An ARS agent with ``LinearPolicy`` computes, on raw observations ``x``,

* VecNormalize (when it trained with it): ``n = clip((x - mean) / sqrt(var + eps), -clip_obs, clip_obs)``;
* its one ``nn.Linear`` layer, in float32: ``z = W n + b`` (``b = 0`` when ``with_bias=False``);
* with ``squash_output=True`` a ``tanh`` layer, then SB3's ``unscale_action``
  ``low + 0.5 * (tanh(z) + 1) * (high - low)``; otherwise ``np.clip(z, low, high)``.

:func:`linear_program_of` folds the normalisation into the weights, ``W' = W / sqrt(var + eps)`` (column by
column) and ``b' = b - W' @ mean``, giving a :class:`~interp_rl.kinds.linear.LinearProgram` on raw
observations with ``squash="tanh"`` or ``"clip"``. Two things separate it from the agent, and both are
measured rather than hidden (:func:`import_agent` writes them into ``import.json``):

* **the normalisation clip**, which is not affine: the fold is exact on the box
  ``mean +- clip_obs * sqrt(var + eps)`` (recorded as the controller's ``exact_domain``); outside it the
  agent saturates a feature the controller does not. The share of the agent's visited states where it binds
  is reported (and a warning printed when it is not zero);
* **float32 against float64**: the agent rounds its normalised observation to float32 and sums in float32;
  the controller computes in float64 (its arithmetic contract, bit-identical in every export). Actions agree
  to float32 rounding (about 1e-7 of the terms' size), so returns on the same seeds are not the same doubles:
  on smooth tasks (Pendulum, Swimmer) they agree to about 1e-8 of their size, on chaotic contact tasks
  (HalfCheetah) the 1e-7 grows over 1000 steps into a few percent per episode. That is the agent's own noise
  floor: the same agent run with another batch size (its float32 product summed in another order) differs
  from itself as much, which :func:`check_import` measures beside the comparison; the controller's returns do
  not depend on the batch size.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.loading import load_teacher
from envs.registry import task_signals
from envs.sb3 import ObsNormalizer, SB3Teacher
from interp_rl.errors import TeacherLoadError
from interp_rl.io import atomic_write_text
from interp_rl.kinds.linear import LinearProgram
from interp_rl.logged_data import path_sha256
from interp_rl.program import Controller
from interp_rl.rollouts import evaluate, run_episodes

__all__ = [
    "IMPORT_FILE",
    "Float64Agent",
    "ImportCheck",
    "check_import",
    "controller_from_teacher",
    "exact_domain",
    "import_agent",
    "import_to_folder",
    "linear_program_of",
    "normalisation_clip_share",
]

#: What ``interp-rl import`` writes beside the controller: the agent's and the controller's returns.
IMPORT_FILE = "import.json"


def _describe(teacher: SB3Teacher) -> str:
    """``'SAC agent, SACPolicy (actor: Linear(8, 256), ReLU, Linear(256, 256), ReLU, Linear(256, 2), ...)'``."""
    import torch.nn as nn

    policy = getattr(teacher.model, "policy", None)
    net = getattr(policy, "actor", None) or getattr(policy, "action_net", None) or policy
    layers = [m for m in (net.modules() if isinstance(net, nn.Module) else [])
              if not list(m.children()) and not isinstance(m, nn.Flatten)]
    shown = ", ".join(f"Linear({m.in_features}, {m.out_features})" if isinstance(m, nn.Linear)
                      else type(m).__name__ for m in layers[:5])
    more = ", ..." if len(layers) > 5 else ""
    return f"{teacher.algo.upper()} agent, {type(policy).__name__}" + (f" (actor: {shown}{more})" if shown else "")


def _linear_layer(teacher: SB3Teacher) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """``(W, b, with_bias, squashed)`` of an ARS linear policy, float32 weights as float64; refuses anything
    else."""
    import torch.nn as nn
    from stable_baselines3.common.torch_layers import FlattenExtractor

    found = _describe(teacher)
    if teacher.algo != "ars":
        raise TeacherLoadError(f"interp-rl import takes linear agents (sb3-contrib ARS with LinearPolicy); found: "
                               f"{found}.")
    policy = teacher.model.policy
    if teacher.discrete:
        raise TeacherLoadError(f"interp-rl import takes ARS agents of continuous actions; found: {found}, playing "
                               f"one of {teacher.n_classes} classes.")
    net = getattr(policy, "action_net", None)
    layers = list(net) if isinstance(net, nn.Sequential) else []
    linear = len(layers) in (1, 2) and isinstance(layers[0], nn.Linear) and (
        len(layers) == 1 or isinstance(layers[1], nn.Tanh))
    if not linear or not isinstance(policy.features_extractor, FlattenExtractor):
        raise TeacherLoadError(f"interp-rl import takes linear agents (sb3-contrib ARS with LinearPolicy); found: "
                               f"{found}, which is not linear.")
    squashed = len(layers) == 2
    if squashed != bool(policy.squash_output):  # SB3 unscales exactly when the policy squashes
        raise TeacherLoadError(f"The {found} has a tanh layer but squash_output={policy.squash_output}; its actions "
                               "are not a squashed linear map interp-rl can reproduce.")
    layer: Any = layers[0]
    W = layer.weight.detach().cpu().numpy().astype(np.float64)
    b = (layer.bias.detach().cpu().numpy().astype(np.float64) if layer.bias is not None
         else np.zeros(W.shape[0]))
    return W, b, layer.bias is not None, squashed


def linear_program_of(W: np.ndarray, b: np.ndarray, *, normalizer: ObsNormalizer | None, low: np.ndarray,
                      high: np.ndarray, squash: bool) -> LinearProgram:
    """The linear program ``W clip((x - mean) / s) + b`` is on the box where the clip does not bind: the weights
    folded, ``W' = W / s`` and ``b' = b - W' @ mean`` with ``s = sqrt(var + eps)``, then ``tanh`` squashed or
    clipped into ``[low, high]``.

    >>> p = linear_program_of(np.array([[2.0, 0.0]]), np.array([0.5]), low=np.array([-1.0]), high=np.array([1.0]),
    ...                       normalizer=ObsNormalizer(np.array([1.0, 0.0]), np.array([4.0, 1.0]), 10.0, 0.0),
    ...                       squash=False)
    >>> p.coef.tolist(), p.intercept.tolist()
    ([[1.0, 0.0]], [-0.5])
    """
    W, b = np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if normalizer is not None:
        scale = np.sqrt(normalizer.var + normalizer.epsilon)  # as ObsNormalizer and VecNormalize compute it
        W = W / scale[None, :]
        b = b - W @ normalizer.mean
    return LinearProgram(intercept=b, coef=W, action_low=low, action_high=high, squash="tanh" if squash else "clip")


def exact_domain(normalizer: ObsNormalizer | None, obs_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The raw-observation box where VecNormalize's clip does not bind (the whole space without it)."""
    if normalizer is None or not np.isfinite(normalizer.clip):
        return np.full(obs_dim, -np.inf), np.full(obs_dim, np.inf)
    scale = np.sqrt(normalizer.var + normalizer.epsilon)
    return normalizer.mean - normalizer.clip * scale, normalizer.mean + normalizer.clip * scale


def normalisation_clip_share(normalizer: ObsNormalizer | None, states: np.ndarray) -> float:
    """Share of ``states`` (raw, ``(n, obs_dim)``) on which VecNormalize's clip changes some feature."""
    if normalizer is None or not len(states):
        return 0.0
    raw = (np.asarray(states, dtype=np.float64) - normalizer.mean) / np.sqrt(normalizer.var + normalizer.epsilon)
    return float(np.mean(np.any(np.abs(raw) > normalizer.clip, axis=1)))


def controller_from_teacher(teacher: SB3Teacher, *, sha256: str = "") -> Controller:
    """The linear controller an ARS linear agent is, with named features and actions and its provenance.

    Refuses (:class:`~interp_rl.errors.TeacherLoadError`, one line naming what it found) agents that are not
    linear: ARS with an MLP, SAC, PPO, ...
    """
    W, b, with_bias, squashed = _linear_layer(teacher)
    prog = linear_program_of(W, b, normalizer=teacher.normalizer, low=teacher.action_low, high=teacher.action_high,
                             squash=squashed)
    features, actions = task_signals(teacher.task, teacher.variant)
    lo, hi = exact_domain(teacher.normalizer, teacher.obs_dim)
    norm = teacher.normalizer
    provenance: dict[str, Any] = {
        "source": teacher.source, "sha256": sha256, "algo": teacher.algo, "task": teacher.task,
        "variant": teacher.variant, "policy": type(teacher.model.policy).__name__,
        "with_bias": with_bias, "squash_output": squashed,
        "normalization": None if norm is None else {"clip_obs": float(norm.clip), "epsilon": float(norm.epsilon)},
    }
    exact = None  # everywhere: no clip to bind
    if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
        exact = {"note": "where the VecNormalize clip does not bind; outside, the agent saturates the feature and "
                         "the controller does not", "lower": [float(v) for v in lo], "upper": [float(v) for v in hi]}
    metadata = {"method": "import", "teacher": provenance, "exact_domain": exact}
    return Controller(prog, features=features, actions=actions, task=teacher.task, metadata=metadata)


class Float64Agent:
    """The agent's own computation in float64, unfolded: ``n = clip((x - mean) / s)`` as its VecNormalize, then
    ``z = b + W_j n_j`` over ``j`` ascending, then the same squash or clip as the controller. What the agent is
    without float32 rounding: the controller differs from it only by the rounding of the fold."""

    def __init__(self, teacher: SB3Teacher) -> None:
        W, b, _, squashed = _linear_layer(teacher)
        self.normalizer = teacher.normalizer
        self.program = LinearProgram(intercept=b, coef=W, action_low=teacher.action_low,
                                     action_high=teacher.action_high, squash="tanh" if squashed else "clip")

    def predict(self, obs: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        return self.program.predict(self.normalizer(x) if self.normalizer is not None else x)


@dataclass(frozen=True)
class ImportCheck:
    """The imported controller against the agent on the same seeds (``interp_rl.rollouts.evaluate``)."""

    seeds: list[int]
    """Reset seed of each episode."""
    agent_returns: list[float]
    """The SB3 agent's return per episode (float32 networks, through its VecNormalize statistics)."""
    controller_returns: list[float]
    """The imported controller's return per episode."""
    float64_agent_returns: list[float]
    """The agent's weights run in float64 without folding (:class:`Float64Agent`), per episode."""
    identical_episodes: int
    """Episodes whose returns are the same double."""
    max_return_difference: float
    """Largest ``|agent - controller|`` return over the episodes."""
    max_return_difference_float64: float
    """Largest ``|float64 agent - controller|`` return: what the fold's rounding alone changes."""
    identical_episodes_float64: int
    """Episodes whose returns are the same double for the float64 agent and the controller."""
    agent_one_by_one_returns: list[float]
    """The SB3 agent again, one environment at a time (batches of 1, not 8): its float32 matrix product sums in
    another order, so this is how far the agent is from itself."""
    max_agent_self_difference: float
    """Largest ``|agent - agent one by one|`` return: the agent's own float32 noise floor on these seeds."""
    max_action_difference: float
    """Largest ``|agent - controller|`` action over the agent's visited states."""
    clip_binding_share: float
    """Share of the agent's visited states where the VecNormalize clip binds (0: the fold is exact there)."""
    agent_states: int
    """States the agent visited."""

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**asdict(self), "episodes": len(self.seeds),
                "agent_mean_return": float(np.mean(self.agent_returns)),
                "controller_mean_return": float(np.mean(self.controller_returns))}


def check_import(controller: Controller, teacher: SB3Teacher, *, episodes: int = 20, seed: int = 0) -> ImportCheck:
    """Run the agent and the imported controller on ``episodes`` seeds (``seed``, ``seed + 1``, ...) and compare
    returns episode by episode, actions on the agent's visited states and how often the normalisation clip binds."""
    agent = evaluate(teacher, teacher.env_fn, episodes, seed=seed, task=teacher.task)
    mine = evaluate(controller, teacher.env_fn, episodes, seed=seed, task=teacher.task)
    visited = run_episodes(teacher, teacher.env_fn, range(seed, seed + episodes), record=True, task=teacher.task)
    states = visited.rollout.observations if visited.rollout is not None else np.zeros((0, teacher.obs_dim))
    wide = evaluate(Float64Agent(teacher), teacher.env_fn, episodes, seed=seed, task=teacher.task)
    alone = evaluate(teacher, teacher.env_fn, episodes, seed=seed, n_envs=1, task=teacher.task)
    gap = np.abs(np.asarray(teacher.predict(states)) - controller.predict(states))
    diff = np.abs(np.asarray(agent.returns) - np.asarray(mine.returns))
    return ImportCheck(seeds=list(agent.seeds), agent_returns=[float(r) for r in agent.returns],
                       controller_returns=[float(r) for r in mine.returns],
                       float64_agent_returns=[float(r) for r in wide.returns],
                       agent_one_by_one_returns=[float(r) for r in alone.returns],
                       max_agent_self_difference=float(np.abs(np.asarray(agent.returns)
                                                              - np.asarray(alone.returns)).max()),
                       identical_episodes=int(np.sum(diff == 0.0)), max_return_difference=float(diff.max()),
                       max_return_difference_float64=float(np.abs(np.asarray(wide.returns)
                                                                  - np.asarray(mine.returns)).max()),
                       identical_episodes_float64=int(np.sum(np.asarray(wide.returns) == np.asarray(mine.returns))),
                       max_action_difference=float(gap.max()) if gap.size else 0.0,
                       clip_binding_share=normalisation_clip_share(teacher.normalizer, states),
                       agent_states=int(len(states)))


def import_agent(path: str | Path, *, env: str | None = None, algo: str | None = None) -> Controller:
    """Load the agent at ``path`` (an SB3 zip, a zoo run folder or an ``interp-rl train`` folder) and return the
    linear controller it is (see :func:`controller_from_teacher`); provenance records the zip's sha256."""
    teacher = load_teacher(path, env=env, algo=algo)
    return controller_from_teacher(teacher, sha256=path_sha256(teacher.source))


def import_to_folder(path: str | Path, out: str | Path, *, env: str | None = None, algo: str | None = None,
                     episodes: int = 20, seed: int = 0) -> tuple[Controller, ImportCheck]:
    """:func:`import_agent`, then :func:`check_import`, then the controller folder: ``controller.json`` (with the
    check in its metadata), ``controller.py``, ``controller.c``, ``controller.onnx``, ``rules.txt`` and
    ``import.json``."""
    from interp_rl.export import write_exports

    start = time.perf_counter()
    teacher = load_teacher(path, env=env, algo=algo)
    controller = controller_from_teacher(teacher, sha256=path_sha256(teacher.source))
    check = check_import(controller, teacher, episodes=episodes, seed=seed)
    summary = check.to_dict()
    controller.metadata["import_check"] = {k: summary[k] for k in (
        "episodes", "identical_episodes", "identical_episodes_float64", "max_return_difference",
        "max_return_difference_float64",
        "max_agent_self_difference", "max_action_difference", "clip_binding_share",
        "agent_mean_return", "controller_mean_return")}
    out = Path(out)
    write_exports(controller, out, ("json", "python", "c", "onnx"), force=True)
    atomic_write_text(out / "rules.txt", controller.program.explain(controller) + "\n")
    atomic_write_text(out / IMPORT_FILE, json.dumps({**summary, "seconds": time.perf_counter() - start},
                                                    indent=1) + "\n")
    return controller, check
