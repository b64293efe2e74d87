"""Stable-Baselines3 agents behind the :class:`~interp_rl.teachers.Teacher` protocol.

Reading SB3 zips (:func:`load_sb3_model`, :func:`detect_algorithm`) and zoo normalisation
statistics (:func:`read_vecnormalize`) lives here, beside the zoo loading of
:mod:`envs.loading`; the core only knows the protocol.

.. warning::
   SB3 ``.zip`` files and zoo ``vecnormalize.pkl`` files contain Python pickles,
   and unpickling can run arbitrary code. interp-rl runs none of it by default:
   of a zip's pickled fields it reads only the four inference needs (the policy
   class, its keyword arguments, the observation and action spaces) with a
   restricted unpickler that builds allowed classes only (spaces, NumPy arrays,
   torch activations and optimisers, SB3 policy classes) and refuses any other
   global in one line; every other pickled field (schedules, buffers, the last
   observations) is left unread; the weights are read by ``torch.load`` with
   ``weights_only=True``. ``vecnormalize.pkl`` is read with a restricted
   unpickler that only builds NumPy arrays and plain records. ``trust_pickles``
   (``interp-rl --trust-pickles``, or ``INTERP_RL_TRUST_PICKLES=1``) hands a zip to
   SB3's own loader instead, for a file you vouch for. interp-rl's own artifacts
   are JSON and NumPy arrays.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import importlib.abc
import importlib.util
import io
import json
import os
import pickle
import shutil
import sys
import tempfile
import types
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.algorithms import ALGORITHMS, algorithm_class  # noqa: F401 - long imported from here
from interp_rl.errors import InterpRLError, TeacherLoadError, UnknownAlgorithmError
from interp_rl.threads import torch_threads
from interp_rl.validation import check_observations

__all__ = [
    "ALGORITHMS",
    "TRUST_PICKLES_ENV",
    "ObsNormalizer",
    "SB3Teacher",
    "detect_algorithm",
    "load_sb3_model",
    "read_vecnormalize",
    "trust_pickles",
]

Q_ALGOS = frozenset({"sac", "td3", "ddpg", "tqc", "dqn"})

#: What trains an agent from scratch for :meth:`SB3Teacher.train_from_scratch`: :mod:`envs.training` registers
#: it (:func:`register_trainer`), and the ``envs`` package imports that module, so it is there whenever a teacher
#: is, without this module importing the training machinery.
_TRAINERS: list[Callable[..., dict[str, Any]]] = []


def register_trainer(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Make ``fn(teacher, out, *, algo, steps, seed, eval_episodes, hyperparams, resume, on_checkpoint,
    checkpoint_every)`` the trainer of :meth:`SB3Teacher.train_from_scratch`."""
    _TRAINERS[:] = [fn]
    return fn
V_ALGOS = frozenset({"ppo", "a2c", "trpo"})


def _read_zip_data(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise TeacherLoadError(f"Teacher file {str(path)!r} does not exist.")
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if "data" not in names or "policy.pth" not in names:
                raise TeacherLoadError(
                    f"{str(path)!r} is not a Stable-Baselines3 model: the zip has no "
                    "'data' and 'policy.pth' entries."
                )
            data: dict[str, Any] = json.loads(zf.read("data"))
            return data
    except zipfile.BadZipFile as exc:
        raise TeacherLoadError(
            f"{str(path)!r} is corrupt or not a zip file ({exc}); expected an SB3 model .zip."
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TeacherLoadError(f"{str(path)!r} has an unreadable 'data' entry ({exc}).") from None


def detect_algorithm(path: str | Path) -> str:
    """Tell which algorithm saved the SB3 zip at ``path``, without unpickling it.

    The policy class's module names SAC, TD3/DDPG, TQC and ARS; actor-critic
    on-policy algorithms share a policy class, so their saved hyperparameters
    decide (TRPO's conjugate-gradient settings, PPO's clip range, else A2C).
    """
    data = _read_zip_data(Path(path))
    module = str(data.get("policy_class", {}).get("__module__", ""))
    if ".sac." in module:
        return "sac"
    if ".dqn." in module:
        return "dqn"
    if ".tqc." in module:
        return "tqc"
    if ".ars." in module or "n_delta" in data:
        return "ars"
    if ".td3." in module:
        ddpg = data.get("policy_delay") == 1 and data.get("target_noise_clip") == 0.0
        return "ddpg" if ddpg else "td3"
    if "cg_max_steps" in data:
        return "trpo"
    if "clip_range" in data and "n_epochs" in data:
        return "ppo"
    if "n_steps" in data and "gae_lambda" in data:
        return "a2c"
    raise UnknownAlgorithmError(
        f"Cannot tell which algorithm saved {str(path)!r} (policy class module {module!r}); "
        f"interp-rl loads {', '.join(ALGORITHMS)}. Pass the algorithm explicitly."
    )


class _GymAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolve ``gym`` and ``gym.*`` imports to ``gymnasium`` while old pickles load."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname == "gym" or fullname.startswith("gym."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return importlib.import_module("gymnasium" + spec.name[3:])

    def exec_module(self, module: types.ModuleType) -> None:
        return None


@contextlib.contextmanager
def _old_gym_names() -> Iterator[None]:
    if importlib.util.find_spec("gym") is not None and "gym" not in sys.modules:
        yield  # the real old gym is installed: let it be used
        return
    finder = _GymAlias()
    before = {k for k in sys.modules if k == "gym" or k.startswith("gym.")}
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for key in [k for k in sys.modules if (k == "gym" or k.startswith("gym.")) and k not in before]:
            del sys.modules[key]


#: The environment variable that lets SB3's own loader unpickle every field of a zip (``--trust-pickles``).
TRUST_PICKLES_ENV = "INTERP_RL_TRUST_PICKLES"
#: The pickled fields of an SB3 zip that inference needs; every other pickled field is left unread.
_INFERENCE_FIELDS = ("policy_class", "policy_kwargs", "observation_space", "action_space")


def trust_pickles() -> bool:
    """Whether SB3 zips may be unpickled whole (``INTERP_RL_TRUST_PICKLES=1``, set by ``--trust-pickles``)."""
    return os.environ.get(TRUST_PICKLES_ENV, "").strip().lower() in {"1", "true", "yes"}


class _AgentUnpickler(pickle.Unpickler):
    """What an SB3 zip's inference fields may build: spaces, NumPy arrays and generators, torch activation and
    optimiser classes and dtypes, SB3 policy and feature-extractor classes, plain containers. Any other global
    (a function, ``os.system``, cloudpickle's code objects) is refused by name."""

    _NUMPY = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
              ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
              ("numpy._core.multiarray", "scalar"), ("numpy.core.numeric", "_frombuffer"),
              ("numpy._core.numeric", "_frombuffer"), ("numpy.random._pickle", "__generator_ctor"),
              ("numpy.random._pickle", "__bit_generator_ctor"), ("numpy.random._pickle", "__randomstate_ctor")}
    _PLAIN = {("builtins", "object"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"),
              ("builtins", "complex"), ("collections", "OrderedDict"), ("copyreg", "_reconstructor")}
    _POLICY_MODULES = ("stable_baselines3.", "sb3_contrib.", "envs.moe_policy")

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._NUMPY:
            fixed = module.replace("numpy.core", "numpy._core") if module.startswith("numpy.core.") else module
            return getattr(importlib.import_module(fixed), name)
        if (module, name) in self._PLAIN:
            return getattr(importlib.import_module(module), name)
        if module.startswith("numpy.random.") and name.startswith("__pyx_unpickle_"):  # a space's seed sequence
            return getattr(importlib.import_module(module), name)
        where = "gymnasium" + module[3:] if module == "gym" or module.startswith("gym.") else module
        obj = self._allowed(where, name)
        if obj is None:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")
        return obj

    def _allowed(self, module: str, name: str) -> Any:
        """The class ``module.name`` when it is of an allowed kind, else ``None`` (nothing of it is run)."""
        import torch

        kinds: list[type] = []
        if module.startswith("gymnasium.spaces"):
            import gymnasium

            kinds = [gymnasium.spaces.Space]
        elif module.startswith("torch.nn.modules."):
            kinds = [torch.nn.Module]
        elif module.startswith("torch.optim."):
            kinds = [torch.optim.Optimizer]
        elif module.startswith(self._POLICY_MODULES):
            from stable_baselines3.common.policies import BasePolicy
            from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

            kinds = [BasePolicy, BaseFeaturesExtractor]
        elif module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        elif module.startswith("numpy.random.") and name in {"Generator", "RandomState", "PCG64", "PCG64DXSM",
                                                             "MT19937", "Philox", "SFC64", "SeedSequence"}:
            kinds = [object]
        elif module == "numpy.dtypes":  # NumPy 2's dtype classes (Float32DType, ...)
            kinds = [np.dtype]
        if not kinds or "." in name or name.startswith("__"):
            return None
        try:
            obj = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            return None
        return obj if isinstance(obj, type) and issubclass(obj, tuple(kinds)) else None


def _inference_fields(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The inference fields of the zip's ``data``, unpickled by :class:`_AgentUnpickler`, and the names of the
    pickled fields left unread."""
    data = _read_zip_data(path)
    fields: dict[str, Any] = {}
    skipped = []
    for key, item in data.items():
        if not (isinstance(item, dict) and ":serialized:" in item):
            continue
        if key not in _INFERENCE_FIELDS:
            skipped.append(key)
            continue
        try:
            raw = base64.b64decode(str(item[":serialized:"]).encode())
            with _old_gym_names():
                fields[key] = _AgentUnpickler(io.BytesIO(raw)).load()
        except pickle.UnpicklingError as exc:
            raise TeacherLoadError(
                f"Refused to load {str(path)!r}: its {key!r} field asks for a global that an agent does not need "
                f"({exc}; unpickling it could run code). If you trust this file, pass --trust-pickles."
            ) from None
        except Exception as exc:  # noqa: BLE001 - a corrupt field, whatever the error
            raise TeacherLoadError(f"{str(path)!r} has an unreadable {key!r} field ({type(exc).__name__}: "
                                   f"{' '.join(str(exc).split())[:200]}).") from None
    return fields, skipped


def _without_fields(path: Path, drop: Sequence[str], folder: Path) -> Path:
    """A copy of the zip in ``folder`` whose ``data`` lacks the ``drop`` fields (left at the class's defaults)."""
    copy = folder / path.name
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(copy, "w") as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "data":
                data = json.loads(body)
                body = json.dumps({k: v for k, v in data.items() if k not in drop}).encode()
            dst.writestr(info, body)
    return copy


def load_sb3_model(path: str | Path, algo: str | None = None, *, trust: bool | None = None) -> tuple[Any, str]:
    """Load an SB3 zip on the CPU for inference; return ``(model, algo)``.

    By default nothing in the zip is unpickled but its inference fields, through an allow-list (see the module's
    warning); a zip that asks for anything else is refused in one line naming the global. ``trust`` (default:
    :func:`trust_pickles`) hands the zip to SB3's own loader. Copes with agents pickled under the old ``gym``
    package and under old Pythons (schedules are replaced by constants: the model is for inference).
    """
    path = Path(path)
    algo = (algo or detect_algorithm(path)).lower()
    cls = algorithm_class(algo)
    custom: dict[str, Any] = {
        "learning_rate": 0.0,
        "lr_schedule": lambda _: 0.0,
        "clip_range": lambda _: 0.0,
        "exploration_schedule": lambda _: 0.0,
    }
    if algo in {"sac", "td3", "ddpg", "tqc", "dqn"}:
        custom["buffer_size"] = 1
    trusted = trust_pickles() if trust is None else trust
    folder = None
    try:
        source = path
        if not trusted:
            fields, skipped = _inference_fields(path)
            space = fields.get("action_space")
            if "target_entropy" in skipped and space is not None:  # SAC's and TQC's, unread: the usual -|A|
                custom["target_entropy"] = float(-np.prod(space.shape))
            custom.update(fields)
            folder = Path(tempfile.mkdtemp(prefix="interp-rl-agent-"))
            # a field left unread is dropped (the class's default stands) unless a stand-in replaces it unread
            source = _without_fields(path, [k for k in skipped if k not in custom], folder)
        with _old_gym_names():
            model = cls.load(str(source), device="cpu", custom_objects=custom)
    except (ValueError, KeyError, RuntimeError, TypeError, AttributeError, pickle.UnpicklingError,
            zipfile.BadZipFile, ModuleNotFoundError) as exc:
        raise TeacherLoadError(
            f"Could not load {str(path)!r} as a {algo.upper()} model: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}"
        ) from None
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    return model, algo


@dataclass(frozen=True)
class ObsNormalizer:
    """VecNormalize statistics: ``clip((obs - mean) / sqrt(var + eps), -clip, clip)``.

    ``reward_scale`` is what rewards were divided by during training (``sqrt(ret_var + eps)`` when
    VecNormalize normalised rewards, else 1): the teacher's value network speaks in those units.
    """

    mean: np.ndarray
    var: np.ndarray
    clip: float = 10.0
    epsilon: float = 1e-8
    reward_scale: float = 1.0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        out = (obs - self.mean) / np.sqrt(self.var + self.epsilon)
        return np.clip(out, -self.clip, self.clip)

    def save(self, path: str | Path) -> None:
        """Write the statistics as ``.npz`` (no pickle), atomically."""
        from interp_rl.io import atomic_write

        def _w(tmp: str) -> None:
            with open(tmp, "wb") as fh:
                np.savez(fh, mean=self.mean, var=self.var, clip=np.float64(self.clip),
                         epsilon=np.float64(self.epsilon), reward_scale=np.float64(self.reward_scale))

        atomic_write(path, _w)

    @classmethod
    def load(cls, path: str | Path) -> ObsNormalizer:
        """Read statistics written by :meth:`save`."""
        try:
            with np.load(path, allow_pickle=False) as z:
                scale = float(z["reward_scale"]) if "reward_scale" in z.files else 1.0
                return cls(np.array(z["mean"]), np.array(z["var"]),
                           float(z["clip"]), float(z["epsilon"]), scale)
        except (OSError, KeyError, ValueError) as exc:
            raise TeacherLoadError(
                f"Normalisation file {str(path)!r} is unreadable ({exc}); "
                "expected an .npz with mean, var, clip, epsilon."
            ) from None


class _Record:
    """Stand-in for any allowed pickled object: keeps its state as attributes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args = args

    def __setstate__(self, state: Any) -> None:
        pair = isinstance(state, tuple) and len(state) == 2
        if pair and all(part is None or isinstance(part, dict) for part in state):  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update(state)

    @classmethod
    def _new(cls, *args: Any) -> _Record:
        return cls()


class _RestrictedUnpickler(pickle.Unpickler):
    """Builds NumPy arrays and plain records only; any other global is refused."""

    _NUMPY = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
    }
    _RECORD_PREFIXES = ("stable_baselines3.", "gym.spaces", "gymnasium.spaces")

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._NUMPY:
            return getattr(importlib.import_module(module.replace("numpy.core", "numpy._core")
                                                   if module.startswith("numpy.core") else module),
                           name)
        if module == "collections" and name == "OrderedDict":
            import collections

            return collections.OrderedDict
        if module.startswith(self._RECORD_PREFIXES):
            return _Record
        if module in ("copyreg",) and name in ("_reconstructor",):
            return lambda cls, base, state: cls()
        if module == "builtins" and name in ("object",):
            return object
        if module.startswith("numpy.random."):  # RNG states and bit generators: inert records
            return lambda *a, **k: _Record()
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")


def read_vecnormalize(path: str | Path) -> ObsNormalizer:
    """Read the observation statistics of a zoo ``vecnormalize.pkl`` safely."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TeacherLoadError(f"Cannot read normalisation file {str(path)!r}: {exc}.") from None
    try:
        obj = _RestrictedUnpickler(io.BytesIO(raw)).load()
        rms = obj.obs_rms
        mean = np.asarray(rms.mean, dtype=np.float64)
        var = np.asarray(rms.var, dtype=np.float64)
        clip = float(getattr(obj, "clip_obs", 10.0))
        eps = float(getattr(obj, "epsilon", 1e-8))
        norm_obs = bool(getattr(obj, "norm_obs", True))
        ret = getattr(obj, "ret_rms", None)
        reward_scale = (float(np.sqrt(float(np.asarray(ret.var)) + eps))
                        if bool(getattr(obj, "norm_reward", False)) and ret is not None else 1.0)
    except Exception as exc:  # noqa: BLE001 - any failure means a corrupt or foreign file
        raise TeacherLoadError(
            f"{str(path)!r} is not a readable VecNormalize file ({type(exc).__name__}: {exc})."
        ) from None
    if not norm_obs:
        return ObsNormalizer(np.zeros_like(mean), np.ones_like(var) - eps, np.inf, eps, reward_scale)
    return ObsNormalizer(mean, var, clip, eps, reward_scale)


def action_dim(space: Any) -> int:
    """Action components of an SB3 agent's space: one score per class for ``Discrete(n)``, else the Box's size."""
    return int(space.n) if hasattr(space, "n") else int(np.prod(space.shape))


def _activations_in_place(model: Any) -> None:
    """Let the networks' ReLU-type activations overwrite their input: the same numbers, a quarter less time on
    big batches (attribution evaluates millions of rows), and safe for autograd after a linear layer."""
    import torch.nn as nn

    policy = getattr(model, "policy", None)
    if isinstance(policy, nn.Module):
        for module in policy.modules():
            if isinstance(module, (nn.ReLU, nn.LeakyReLU, nn.ELU)):
                module.inplace = True


def _plain_predict(model: Any) -> bool:
    """Whether ``model.predict(obs, deterministic=True)`` is SB3's own ``BasePolicy.predict`` (feed-forward
    policies of every built-in algorithm; DQN's exploration only acts when not deterministic)."""
    from stable_baselines3 import DQN
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.policies import BasePolicy

    policy = getattr(model, "policy", None)
    return (isinstance(policy, BasePolicy) and type(policy).predict is BasePolicy.predict
            and type(model).predict in (BaseAlgorithm.predict, DQN.predict))


class SB3Teacher:
    """A loaded SB3 agent: batched deterministic actions on *raw* observations.

    An agent of a discrete task (``Discrete(n)`` actions: DQN, PPO, A2C on CartPole) acts in the toolkit's
    class-score space (:class:`~envs.wrappers.ClassScores`): ``predict`` gives the one-hot vector of its
    class, and :meth:`action_scores` the numbers it chose by (PPO/A2C: log-probabilities; DQN: Q-values).

    Inference runs on ``threads`` torch threads (default 1): the floating-point
    results of a network depend on how its sums are split across threads, and a
    MuJoCo rollout amplifies the last bit, so a fixed count keeps returns
    identical from run to run and machine to machine. One thread is also the
    fastest for these small networks on small batches.

    Parameters
    ----------
    model : BaseAlgorithm
        The SB3 model.
    algo : str
        Its algorithm name (``sac``, ``ppo``, ...).
    task : str
        The task it expects (a ``-v5`` id).
    normalizer : ObsNormalizer, optional
        VecNormalize statistics applied before the networks.
    env_fn : callable
        ``env_fn(seed) -> gymnasium.Env`` building exactly the environment the
        agent expects (zoo compatibility wrappers included).
    feature_names : sequence of str, optional
        Names of the observation components, used in error messages.
    source : str
        Where the agent came from, for provenance.
    """

    def __init__(
        self,
        model: Any,
        algo: str,
        task: str,
        *,
        normalizer: ObsNormalizer | None = None,
        env_fn: Callable[[int], Any],
        feature_names: Sequence[str] | None = None,
        source: str = "",
        variant: dict[str, Any] | None = None,
        threads: int = 1,
    ) -> None:
        self.model = model
        self.threads = threads
        self.algo = algo
        self.task = task
        self.normalizer = normalizer
        self.env_fn = env_fn
        self.feature_names = list(feature_names) if feature_names is not None else None
        self.source = source
        self.variant = dict(variant or {})
        self.obs_dim = int(np.prod(model.observation_space.shape))
        _activations_in_place(model)
        space = model.action_space
        self.act_dim = action_dim(space)
        #: Number of classes of a discrete task's agent; 0 for continuous actions.
        self.n_classes = self.act_dim if hasattr(space, "n") else 0
        if self.n_classes:
            self.action_low = np.zeros(self.n_classes)
            self.action_high = np.ones(self.n_classes)
        else:
            self.action_low = np.asarray(space.low, dtype=np.float64)
            self.action_high = np.asarray(space.high, dtype=np.float64)

    def __repr__(self) -> str:
        norm = ", normalised" if self.normalizer is not None else ""
        return f"SB3Teacher({self.algo.upper()} on {self.task}, obs {self.obs_dim}, act {self.act_dim}{norm})"

    @property
    def discrete(self) -> bool:
        """Whether the agent picks one of :attr:`n_classes` classes (its actions are one-hot class scores)."""
        return self.n_classes > 0

    @property
    def gamma(self) -> float:
        """The discount the agent was trained with (what its critic's values mean)."""
        return float(getattr(self.model, "gamma", 0.99))

    @property
    def has_q(self) -> bool:
        """Whether :meth:`q_values` is available (SAC, TD3, DDPG, TQC, DQN)."""
        return self.algo in Q_ALGOS

    @property
    def has_value(self) -> bool:
        """Whether :meth:`value` is available (PPO, A2C, TRPO)."""
        return self.algo in V_ALGOS

    def train_from_scratch(
        self,
        out: str | Path,
        *,
        algo: str,
        steps: int,
        seed: int = 0,
        eval_episodes: int = 5,
        hyperparams: dict[str, Any] | None = None,
        resume: bool = False,
        on_checkpoint: Callable[[dict[str, Any]], None] | None = None,
        checkpoint_every: int = 0,
    ) -> dict[str, Any]:
        """Train a new agent by RL from scratch on this teacher's task, in its observation layout.

        The run (``interp-rl train``: checkpoints, resume, the best checkpoint kept) goes to ``out``,
        with this teacher's environment variant; ``hyperparams`` override the task's shipped ones
        (``{"policy": "moe", ...}`` trains a mixture of linear experts and writes its ``controller.json``).
        This is how :class:`distill.from_scratch.ScratchTrainer` reaches the training machinery without
        importing ``envs``. Returns the run's ``teacher.json`` metadata.
        """
        if not _TRAINERS:
            raise InterpRLError("No trainer is registered: import envs (its training module registers it).")
        return _TRAINERS[0](self, out, algo=algo, steps=steps, seed=seed, eval_episodes=eval_episodes,
                            hyperparams=hyperparams, resume=resume, on_checkpoint=on_checkpoint,
                            checkpoint_every=checkpoint_every)

    def default_hyperparams(self, algo: str) -> dict[str, Any]:
        """The toolkit's shipped hyperparameters of ``algo`` on this teacher's task (``envs/hyperparams``), as
        ``interp-rl train`` uses them; how :mod:`distill` reads a task's ARS settings without importing ``envs``."""
        from envs.algorithms import default_hyperparams

        return default_hyperparams(algo, self.task)

    def _prepare(self, obs: Any) -> tuple[np.ndarray, bool]:
        arr, single = check_observations(
            obs, self.obs_dim, owner=f"the {self.algo.upper()} teacher", task=self.task,
            feature_names=self.feature_names,
        )
        if self.normalizer is not None:
            arr = self.normalizer(arr)
        return arr.astype(np.float32), single

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic actions, shape ``(n, act_dim)``, for raw ``obs`` ``(n, obs_dim)``."""
        arr, single = self._prepare(obs)
        with torch_threads(self.threads):
            actions = self._deterministic_actions(arr)
        if self.n_classes:
            actions = np.eye(self.n_classes)[np.asarray(actions, dtype=np.int64).reshape(len(arr))]
        actions = np.asarray(actions, dtype=np.float64).reshape(len(arr), self.act_dim)
        actions = np.clip(actions, self.action_low, self.action_high)
        return actions[0] if single else actions

    act = predict

    def _deterministic_actions(self, arr: np.ndarray) -> np.ndarray:
        """``model.predict(arr, deterministic=True)[0]``, the same numbers, without putting every network into
        evaluation mode again at each call (SB3 does; over a rollout of small batches that walk through the modules
        took a third of the teacher's time). Done for SB3's feed-forward policies; any other goes through
        ``model.predict``."""
        import torch as th

        if not _plain_predict(self.model):
            return self.model.predict(arr, deterministic=True)[0]
        policy = self.model.policy
        if policy.training:
            policy.set_training_mode(False)
        obs_tensor, _ = policy.obs_to_tensor(arr)
        with th.no_grad():
            actions = policy._predict(obs_tensor, deterministic=True)
        actions = actions.cpu().numpy().reshape((-1, *policy.action_space.shape))
        if hasattr(policy.action_space, "low"):  # a Box: as BasePolicy.predict
            if policy.squash_output:
                actions = policy.unscale_action(actions)
            else:
                actions = np.clip(actions, policy.action_space.low, policy.action_space.high)
        return actions

    def predict_torch(self, obs: Any) -> Any:
        """:meth:`predict` as a differentiable torch function: raw observations ``(n, obs_dim)`` (a float64
        tensor) to actions ``(n, act_dim)`` (float64), through the same VecNormalize statistics, the same float32
        networks, the same squashing into the action bounds and the same clipping, so its values are
        :meth:`predict`'s. Continuous actions only (a discrete agent's one-hot actions have no gradient)."""
        import torch as th

        if self.n_classes:
            raise TeacherLoadError(
                f"The {self.algo.upper()} teacher picks one of {self.n_classes} classes; its one-hot actions have "
                "no gradient (differentiate action_scores() instead)."
            )
        x = obs
        if self.normalizer is not None:
            n = self.normalizer
            x = th.clamp((x - th.as_tensor(n.mean)) / th.sqrt(th.as_tensor(n.var) + n.epsilon), -n.clip, n.clip)
        policy = self.model.policy
        policy.set_training_mode(False)
        a = policy._predict(x.to(th.float32), deterministic=True)  # the network part of policy.predict
        space = policy.action_space
        if policy.squash_output:  # policy.unscale_action, in float32 as there
            low32, high32 = th.as_tensor(space.low), th.as_tensor(space.high)
            a = low32 + (0.5 * (a + 1.0) * (high32 - low32))
        a = a.to(th.float64).reshape(len(x), self.act_dim)
        return th.clamp(a, th.as_tensor(self.action_low), th.as_tensor(self.action_high))

    def action_jacobian(self, obs: np.ndarray) -> np.ndarray:
        """``d predict(obs) / d obs``, shape ``(n, act_dim, obs_dim)``, for raw ``obs`` ``(n, obs_dim)``: the
        gradient of :meth:`predict_torch` (zero where an action is clipped or a normalised feature is cut at
        the VecNormalize clip). What a search for states where the agent breaks a rule climbs."""
        import torch as th

        arr, _ = check_observations(obs, self.obs_dim, owner=f"the {self.algo.upper()} teacher", task=self.task,
                                    feature_names=self.feature_names)
        x = th.tensor(arr, dtype=th.float64, requires_grad=True)
        rows = []
        with th.enable_grad(), torch_threads(self.threads):
            a = self.predict_torch(x)
            for k in range(self.act_dim):
                (g,) = th.autograd.grad(a[:, k].sum(), x, retain_graph=k < self.act_dim - 1)
                rows.append(g)
        return np.asarray(th.stack(rows, dim=1).numpy(), dtype=np.float64)

    def latent(self, obs: np.ndarray) -> np.ndarray:
        """The policy network's last hidden layer at ``obs`` ``(n, hidden)``: what the agent's actions are a function
        of, the states as the agent sees them (ARLIN clusters these into the abstract states of its graph)."""
        import torch as th

        arr, _ = self._prepare(np.atleast_2d(obs))
        policy = self.model.policy
        with th.no_grad(), torch_threads(self.threads):
            o = th.as_tensor(arr)
            if hasattr(policy, "actor") and hasattr(policy.actor, "latent_pi"):  # SAC, TQC
                h = policy.actor.latent_pi(policy.actor.extract_features(o, policy.actor.features_extractor))
            elif hasattr(policy, "actor") and hasattr(policy.actor, "mu"):  # TD3, DDPG: all but the output layer
                feats = policy.actor.extract_features(o, policy.actor.features_extractor)
                h = policy.actor.mu[:-2](feats) if len(policy.actor.mu) > 2 else feats
            elif hasattr(policy, "mlp_extractor"):  # PPO, A2C, TRPO
                h = policy.mlp_extractor.forward_actor(policy.extract_features(o, policy.pi_features_extractor)
                                                       if hasattr(policy, "pi_features_extractor")
                                                       else policy.extract_features(o))
            elif hasattr(policy, "q_net"):  # DQN
                net = policy.q_net
                h = net.q_net[:-1](net.extract_features(o, net.features_extractor))
            else:
                raise TeacherLoadError(f"No hidden layer to read in the {self.algo.upper()} agent's policy.")
        return np.asarray(h.numpy(), dtype=np.float64)

    def action_scores(self, obs: np.ndarray) -> np.ndarray:
        """What a discrete agent chooses its class by, shape ``(n, n_classes)``; ``predict`` plays the highest.

        PPO, A2C, TRPO: the log-probability of each class; DQN: the Q-value of each class. Smooth in the
        observation where the one-hot ``predict`` jumps, these are what attribution explains.
        """
        import torch as th

        if not self.n_classes:
            raise TeacherLoadError(
                f"The {self.algo.upper()} teacher has continuous actions; action_scores() is for agents of a "
                "discrete task (CartPole-v1, MountainCar-v0)."
            )
        arr, single = self._prepare(obs)
        with th.no_grad(), torch_threads(self.threads):
            o = th.as_tensor(arr)
            if self.algo == "dqn":
                out = self.model.q_net(o)
            else:
                out = self.model.policy.get_distribution(o).distribution.logits
        scores = out.numpy().astype(np.float64)
        return scores[0] if single else scores

    def q_values(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The critic's Q(s, a), shape ``(n,)``, for raw ``obs`` and env-space ``actions``.

        SAC: minimum over the twin critics; TD3/DDPG: the first critic; TQC:
        mean of the quantiles; DQN: the Q-value of the class with the highest score in ``actions``.
        """
        import torch as th

        if not self.has_q:
            raise TeacherLoadError(
                f"The {self.algo.upper()} teacher has no Q-function (only SAC, TD3, DDPG, TQC "
                "and DQN do); use value() for on-policy teachers."
            )
        arr, _ = self._prepare(obs)
        acts = np.asarray(actions, dtype=np.float64).reshape(len(arr), self.act_dim)
        if self.algo == "dqn":
            with th.no_grad(), torch_threads(self.threads):
                q_all = self.model.q_net(th.as_tensor(arr)).numpy().astype(np.float64)
            return q_all[np.arange(len(arr)), np.argmax(acts, axis=1)]
        scaled = self.model.policy.scale_action(acts).astype(np.float32)
        with th.no_grad(), torch_threads(self.threads):
            o = th.as_tensor(arr)
            a = th.as_tensor(scaled)
            if self.algo == "tqc":
                q = self.model.critic(o, a).mean(dim=(1, 2))
            elif self.algo == "sac":
                q = th.min(th.cat(self.model.critic(o, a), dim=1), dim=1).values
            else:
                q = self.model.critic.q1_forward(o, a)[:, 0]
        return q.numpy().astype(np.float64)

    def value(self, obs: np.ndarray) -> np.ndarray:
        """The state-value V(s), shape ``(n,)``, for raw ``obs`` (PPO, A2C, TRPO)."""
        import torch as th

        if not self.has_value:
            raise TeacherLoadError(
                f"The {self.algo.upper()} teacher has no state-value network (only PPO, A2C "
                "and TRPO do); use q_values() for off-policy teachers."
            )
        arr, _ = self._prepare(obs)
        with th.no_grad(), torch_threads(self.threads):
            v = self.model.policy.predict_values(th.as_tensor(arr))[:, 0]
        return v.numpy().astype(np.float64)
