"""An SB3 model's training state as one ``.npz`` of arrays, its layout as JSON inside: no pickles.

SB3's ``save`` pickles the model's settings (schedules, spaces, the last observations), so its zip cannot be read
back whole without running code from the file. A training checkpoint needs less: the model is rebuilt from the
run's own settings (``train_config.json``), and this file restores what training changed since:

- every network's and every optimiser's tensors and settings (SB3's ``get_parameters``);
- the entropy coefficient SAC and TQC learn (``log_ent_coef``);
- the counters learning continues from (steps, gradient updates, episodes, DQN's calls).

So a checkpoint can be kept between sessions (committed) and resumed on another machine without trusting it.

>>> import tempfile, pathlib
>>> from stable_baselines3 import SAC
>>> import envs
>>> env = envs.make_env("Pendulum-v1", 0)
>>> a = SAC("MlpPolicy", env, learning_starts=10, seed=0, device="cpu").learn(40)
>>> path = pathlib.Path(tempfile.mkdtemp()) / "agent.npz"
>>> save_agent_state(a, path)
>>> b = SAC("MlpPolicy", env, learning_starts=10, seed=1, device="cpu")
>>> load_agent_state(b, path)
>>> b.num_timesteps, b._n_updates == a._n_updates, float(b.log_ent_coef) == float(a.log_ent_coef)
(40, True, True)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.errors import InvalidParameterError
from interp_rl.io import atomic_write

__all__ = ["AGENT_STATE_FORMAT", "load_agent_state", "load_module_state", "save_agent_state",
           "save_module_state"]

AGENT_STATE_FORMAT = "interp-rl-agent-state/1"
#: Counters of an SB3 model that learning continues from (those the model has).
_COUNTERS = ("num_timesteps", "_n_updates", "_episode_num", "_n_calls", "learning_starts")
#: Trainable tensors outside every module and optimiser (SAC's and TQC's learnt entropy coefficient).
_VARIABLES = ("log_ent_coef",)
_LAYOUT = "__layout__"


def _encode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """``value`` as JSON, its tensors and arrays moved to ``arrays`` (named ``t0``, ``t1``...)."""
    import torch

    if isinstance(value, torch.Tensor):
        key = f"t{len(arrays)}"
        arrays[key] = value.detach().cpu().numpy().copy()
        return {"tensor": key, "dtype": str(value.dtype).removeprefix("torch.")}
    if isinstance(value, np.ndarray):
        key = f"t{len(arrays)}"
        arrays[key] = value.copy()
        return {"array": key}
    if isinstance(value, dict):
        return {"dict": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return [_encode(v, arrays) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"An agent's state holds a {type(value).__name__}, which has no array or JSON form.")


def _decode(value: Any, arrays: Any) -> Any:
    import torch

    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if isinstance(value, dict):
        if "tensor" in value:
            return torch.from_numpy(np.array(arrays[value["tensor"]])).to(getattr(torch, value["dtype"]))
        if "array" in value:
            return np.array(arrays[value["array"]])
        if "tuple" in value:
            return tuple(_decode(v, arrays) for v in value["tuple"])
        return {_decode(k, arrays): _decode(v, arrays) for k, v in value["dict"]}
    return value


def _write(path: Path, layout: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    def _w(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **{_LAYOUT: np.array(json.dumps(layout))}, **arrays)

    atomic_write(path, _w)


def _read(path: Path, expected: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    try:
        with np.load(path, allow_pickle=False) as z:
            layout = json.loads(str(z[_LAYOUT]))
            arrays = {k: z[k] for k in z.files if k != _LAYOUT}
    except FileNotFoundError:
        raise
    except Exception as exc:  # a truncated or foreign file: one line naming it
        raise InvalidParameterError(
            f"{str(path)!r} is not an agent state written by interp-rl ({type(exc).__name__}: {exc}).") from None
    if layout.get("format") != AGENT_STATE_FORMAT or layout.get("kind") != expected:
        raise InvalidParameterError(
            f"{str(path)!r} is not an agent state of the kind expected ({expected!r} in format "
            f"{AGENT_STATE_FORMAT!r}); it says format {layout.get('format')!r}, kind {layout.get('kind')!r}.")
    return layout, arrays


def save_agent_state(model: Any, path: str | Path) -> None:
    """Write ``model``'s training state (every network's and optimiser's state, the learnt entropy coefficient,
    the counters) to ``path``, atomically, as arrays and JSON."""
    arrays: dict[str, np.ndarray] = {}
    layout = {
        "format": AGENT_STATE_FORMAT, "kind": "agent", "class": type(model).__name__,
        "parameters": _encode(model.get_parameters(), arrays),
        "variables": {v: _encode(getattr(model, v), arrays) for v in _VARIABLES
                      if getattr(model, v, None) is not None},
        "counters": {c: int(getattr(model, c)) for c in _COUNTERS if hasattr(model, c)},
    }
    _write(Path(path), layout, arrays)


def load_agent_state(model: Any, path: str | Path) -> None:
    """Restore into ``model`` (built with the same settings) the state :func:`save_agent_state` wrote.

    Raises
    ------
    InvalidParameterError
        ``path`` is not such a file, was written for another algorithm, or its networks have other shapes.
    """
    import torch

    layout, arrays = _read(Path(path), "agent")
    if layout["class"] != type(model).__name__:
        raise InvalidParameterError(
            f"{str(path)!r} holds the state of a {layout['class']} agent, not of a {type(model).__name__} one.")
    try:
        model.set_parameters(_decode(layout["parameters"], arrays), exact_match=True, device="cpu")
    except (RuntimeError, ValueError, KeyError) as exc:
        reason = " ".join(str(exc).split())[:300]
        raise InvalidParameterError(
            f"{str(path)!r} does not fit this run's networks (were they built with other settings?): {reason}"
        ) from None
    with torch.no_grad():
        for name, enc in layout["variables"].items():
            getattr(model, name).copy_(_decode(enc, arrays))
    for name, value in layout["counters"].items():
        setattr(model, name, int(value))


def save_module_state(module: Any, path: str | Path) -> None:
    """Write a torch module's ``state_dict`` (a policy kept as the best so far, say) to ``path`` as arrays."""
    arrays: dict[str, np.ndarray] = {}
    _write(Path(path), {"format": AGENT_STATE_FORMAT, "kind": "module", "class": type(module).__name__,
                        "state": _encode(module.state_dict(), arrays)}, arrays)


def load_module_state(module: Any, path: str | Path) -> None:
    """Restore into ``module`` the ``state_dict`` :func:`save_module_state` wrote."""
    layout, arrays = _read(Path(path), "module")
    try:
        module.load_state_dict(_decode(layout["state"], arrays))
    except (RuntimeError, KeyError) as exc:
        raise InvalidParameterError(
            f"{str(path)!r} does not fit this network: {' '.join(str(exc).split())[:300]}") from None
