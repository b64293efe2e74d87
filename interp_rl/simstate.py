"""An environment's exact state mid-episode, to restore it later: what a takeover rollout starts from.

:func:`snapshot` records everything that decides how an episode goes on from here:

* the MuJoCo simulator's whole integration state (``mj_getState`` with ``mjSTATE_INTEGRATION``: time,
  ``qpos``, ``qvel``, actuator activations, the solver's warm start, controls, applied forces, mocap), so the
  continuation is bit-identical, not just close;
* the Python state of every wrapper and of the environment itself (a ``TimeLimit``'s elapsed steps, sb3-contrib's
  ``TimeFeatureWrapper`` counter, a classic-control task's ``state``): their plain attributes (numbers,
  flags, strings, arrays and tuples of them);
* the environment's random generator, and the observation the agent sees there.

Some of what a task reads after a step is not state but the simulator's derived quantities (Ant's reward
reads body positions computed *before* the last integration step), which no state vector restores. So a
:class:`SimState` keeps the state one step *earlier* and the action taken there: restoring puts that state back
and takes the action again, and every derived quantity is then what it was. The moment right after a reset is
the reset itself.

:func:`restore` puts a snapshot into an environment built by the same factory. The rollout engine takes a
:class:`SimState` wherever it takes a reset seed (:func:`interp_rl.rollouts.run_episodes`), so every takeover
is an ordinary episode of the one engine.

>>> import gymnasium as gym
>>> env = gym.make("Pendulum-v1"); _ = env.reset(seed=3)
>>> before = capture(env); obs = env.step([0.5])[0]
>>> here = SimState(obs, seed=3, step=1, before=before, action=np.array([0.5]))
>>> after = env.step([1.0])[0]
>>> other = gym.make("Pendulum-v1")
>>> bool(np.array_equal(restore(other, here), obs)), bool(np.array_equal(other.step([1.0])[0], after))
(True, True)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from interp_rl.errors import InterpRLError

__all__ = ["Capture", "SimState", "capture", "restore"]

_SKIP = frozenset({"env", "spec", "model", "data", "metadata", "mujoco_renderer", "render_mode", "_np_random",
                   "_saved_kwargs", "_ezpickle_args", "_ezpickle_kwargs", "_cached_spec", "_metadata",
                   # gymnasium's PassiveEnvChecker: its checks start afresh after the reset a restore makes
                   "_previous_data", "checked_reset", "checked_step", "checked_render", "checked_data_reuse"})
_SCALARS = (bool, int, float, str, type(None), np.number, np.bool_)


@dataclass
class Capture:
    """An environment's state between two steps (see the module docstring)."""

    physics: np.ndarray | None
    """MuJoCo's integration state (``mj_getState``), ``None`` for a task without a MuJoCo simulator."""
    layers: list[dict[str, Any]]
    """The plain attributes of each wrapper, outermost first, then of the environment itself."""
    wrappers: list[str]
    """The class names of those layers (a restoring environment must have the same)."""
    rng: dict[str, Any] | None
    """The environment's ``np_random`` bit-generator state."""


@dataclass
class SimState:
    """One moment of one episode: enough to continue it exactly.

    ``before`` is the environment one step earlier and ``action`` what was done there; both are ``None`` for
    the moment right after ``reset(seed=seed)``.
    """

    observation: np.ndarray
    """What the agent observes at this moment (raw, as the environment returns it)."""
    seed: int = 0
    """The episode's reset seed (a restoring environment is built and reset with it)."""
    step: int = 0
    """Steps taken in the episode before this moment."""
    before: Capture | None = None
    action: np.ndarray | None = None


def _layers(env: gym.Env) -> list[Any]:
    out = [env]
    while hasattr(out[-1], "env"):
        out.append(out[-1].env)
    return out


def _plain(value: Any) -> bool:
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype != object and value.size <= 100_000
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return False


def _physics(env: gym.Env) -> tuple[Any, Any] | None:
    u = env.unwrapped
    model, data = getattr(u, "model", None), getattr(u, "data", None)
    if model is None or data is None or type(model).__name__ != "MjModel":
        return None
    return model, data


def capture(env: gym.Env) -> Capture:
    """The state of ``env`` now, between two steps."""
    import mujoco

    chain = _layers(env)
    layers = [{k: copy.deepcopy(v) for k, v in vars(layer).items() if k not in _SKIP and _plain(v)}
              for layer in chain]
    physics = None
    found = _physics(env)
    if found is not None:
        model, data = found
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        physics = np.empty(mujoco.mj_stateSize(model, spec))
        mujoco.mj_getState(model, data, physics, spec)
    generator = getattr(env.unwrapped, "_np_random", None)
    rng = copy.deepcopy(generator.bit_generator.state) if generator is not None else None
    return Capture(physics=physics, layers=layers, wrappers=[type(layer).__name__ for layer in chain], rng=rng)


def _put(env: gym.Env, cap: Capture) -> None:
    import mujoco

    layers = _layers(env)
    names = [type(layer).__name__ for layer in layers]
    if names != cap.wrappers:
        raise InterpRLError(f"Cannot restore a state recorded in {' > '.join(cap.wrappers)} into "
                            f"{' > '.join(names)}; build the environment with the same factory.")
    for layer, attrs in zip(layers, cap.layers, strict=True):
        for k, v in attrs.items():
            setattr(layer, k, copy.deepcopy(v))
    found = _physics(env)
    if (found is None) != (cap.physics is None):
        raise InterpRLError("Cannot restore a MuJoCo state into an environment without one (or the reverse).")
    if found is not None:
        model, data = found
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        if cap.physics.size != mujoco.mj_stateSize(model, spec):  # type: ignore[union-attr]
            raise InterpRLError("The recorded simulator state does not fit this environment's model.")
        mujoco.mj_setState(model, data, cap.physics, spec)
        mujoco.mj_forward(model, data)
    generator = getattr(env.unwrapped, "_np_random", None)
    if generator is not None and cap.rng is not None:
        generator.bit_generator.state = copy.deepcopy(cap.rng)


def restore(env: gym.Env, state: SimState) -> np.ndarray:
    """Put ``state`` into ``env`` (built by the same factory as the recorded one's) and return the observation.

    The environment is reset with the state's seed; then, unless the state is that reset, the state one step
    earlier is put back (every recorded attribute, the simulator, the random generator) and the recorded action
    is taken again. A restored observation that differs from the recorded one raises: the environment is not
    the one the state was recorded in.
    """
    obs, _ = env.reset(seed=state.seed)
    if state.before is not None:
        if state.action is None:
            raise InterpRLError("A recorded state with an earlier environment state needs the action taken there.")
        _put(env, state.before)
        obs, *_ = env.step(state.action)
    obs = np.asarray(obs, dtype=np.float64)
    if state.observation.size and not np.array_equal(obs, state.observation):
        raise InterpRLError(f"Restoring step {state.step} of the episode with seed {state.seed} gave another "
                            "observation than the recorded one; is the environment built by the same factory?")
    return obs
