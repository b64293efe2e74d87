"""Fine-tune a distilled controller on the real return with an off-policy actor-critic, warm-started.

Distillation copies the teacher's actions; the rare catastrophic episode (the robot flips or
falls) is where a copy fails. :class:`CriticTuner` trains the controller's own parameters on the
return, keeping its structure and its sparsity:

* the **actor** is the controller: its affine pieces (a tree's leaves, a mixture's experts, a
  linear policy's one equation; see :meth:`interp_rl.program.ProgramBase.affine_pieces`) are
  trainable, the assignment of states to pieces (the splits, the router) is frozen, and the
  zero coefficients stay zero; with ``router='train'`` a mixture's linear router learns too
  (SMoSE's gating: noisy top-1 scores whose noise has a learnt scale, the routed expert acting
  with the softmax mixture's gradient, straight-through, and the importance and load balancing
  loss), its zero coefficients kept zero as well;
* the **critic** starts from the teacher's own Q-networks (SAC, TD3, TQC: twin critics with
  their target copies) and keeps learning on the controller's own transitions; for a teacher
  without one it starts fresh;
* the update is TD3's (clipped double Q, target policy smoothing, delayed actor updates) with a
  trust region around the starting controller, ``-Q / mean|Q| + trust_weight * ||a - a_start||^2``,
  which keeps the early updates, made with a critic that has not yet seen the controller's
  states, from wandering off. TD3+BC's pull towards the teacher's actions
  (``bc_weight * ||a - a_teacher||^2``) is there too, off by default: on the controller's own
  noisy states it moved a distilled HalfCheetah mixture away from a good gait (the held-out
  return fell 12% in 10,000 transitions with the pull alone), where the trust region let the
  return climb from the first actor step;
* the coefficients learn in feature units (``actor_units``): Adam moves each by the same amount
  of action per standard deviation of its feature, as a network on normalised observations;
* the critic alone learns for the first ``critic_warmup`` transitions (the offline-to-online dip
  comes from actor steps on a critic that does not yet know the new policy's states);
* every ``eval_every`` transitions the controller is scored on held-out episodes and the best
  one, the starting controller included, is kept (by default the one with the best mean minus
  standard deviation, so that rare catastrophic episodes count): fine-tuning never returns a
  worse controller on those episodes.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from distill.events import FineTuneStep
from interp_rl.errors import DistillInterrupted, InterpRLError, bad_value
from interp_rl.io import atomic_write, atomic_write_text
from interp_rl.rollouts import evaluate
from interp_rl.seeds import RL_SEED_OFFSET, SELECTION_SEED_OFFSET
from interp_rl.teachers import Teacher, check_teacher
from interp_rl.threads import torch_threads
from interp_rl.validation import check_choice, check_float, check_int

__all__ = ["CriticTuner"]

EnvFn = Callable[[int], Any]
STATE_JSON, STATE_NPZ = "rl_state.json", "rl_state.npz"
_COUNTERS = ("_elapsed_steps", "_current_step")  # TimeLimit's and TimeFeatureWrapper's step counters


def _wrappers(env: Any) -> list[Any]:
    chain = [env]
    while hasattr(chain[-1], "env"):
        chain.append(chain[-1].env)
    return chain


def _env_state(env: Any) -> tuple[np.ndarray, list[int | None]] | None:
    """What an episode in flight needs to go on exactly: the simulator's full integration state (MuJoCo) or
    its state vector (classic control), and each wrapper's step counter; ``None`` when neither is known."""
    core = env.unwrapped
    if hasattr(core, "model") and hasattr(core, "data"):
        import mujoco

        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        state = np.empty(mujoco.mj_stateSize(core.model, spec))
        mujoco.mj_getState(core.model, core.data, state, spec)
    elif isinstance(getattr(core, "state", None), np.ndarray):
        state = np.array(core.state, dtype=np.float64)
    else:
        return None
    return state, [getattr(w, name, None) for w in _wrappers(env) for name in _COUNTERS]


def _set_env_state(env: Any, state: np.ndarray, counters: list[int | None]) -> None:
    core = env.unwrapped
    if hasattr(core, "model") and hasattr(core, "data"):
        import mujoco

        mujoco.mj_setState(core.model, core.data, np.asarray(state, dtype=np.float64),
                           mujoco.mjtState.mjSTATE_INTEGRATION)
    else:
        core.state = np.array(state, dtype=core.state.dtype)
    values = iter(counters)
    for w in _wrappers(env):
        for name in _COUNTERS:
            v = next(values)
            if v is not None:
                setattr(w, name, int(v))


def _state_arrays(prefix: str, state: dict[str, Any]) -> dict[str, np.ndarray]:
    """A module's or an optimiser's tensors as named numpy arrays (no pickle)."""
    import torch

    out: dict[str, np.ndarray] = {}

    def walk(key: str, v: Any) -> None:
        if isinstance(v, torch.Tensor):
            out[key] = v.detach().cpu().numpy().copy()
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(f"{key}/{k}", x)

    for k, v in state.items():
        walk(f"{prefix}/{k}", v)
    return out


def _load_arrays(prefix: str, state: dict[str, Any], arrays: Any) -> dict[str, Any]:
    """``state`` (a ``state_dict``) with every tensor replaced by the saved array of the same name."""
    import torch

    def walk(key: str, v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return torch.as_tensor(np.array(arrays[key])).to(v.dtype)
        if isinstance(v, dict):
            return {k: walk(f"{key}/{k}", x) for k, x in v.items()}
        return v

    return {k: walk(f"{prefix}/{k}", v) for k, v in state.items()}


def _load_optimizer(opt: Any, prefix: str, arrays: Any) -> None:
    """Restore an optimiser's per-parameter state (Adam's step and moments) saved by :func:`_state_arrays`."""
    import torch

    state: dict[int, dict[str, Any]] = {}
    head = f"{prefix}/state/"
    for key in arrays.files:
        if key.startswith(head):
            idx, name = key[len(head):].split("/", 1)
            state.setdefault(int(idx), {})[name] = torch.as_tensor(np.array(arrays[key]))
    opt.load_state_dict({"state": state, "param_groups": opt.state_dict()["param_groups"]})


class _Buffer:
    """A ring buffer of transitions (raw observations, env-space actions, teacher labels, pieces)."""

    def __init__(self, size: int, obs_dim: int, act_dim: int) -> None:
        self.obs = np.zeros((size, obs_dim))
        self.next_obs = np.zeros((size, obs_dim))
        self.act = np.zeros((size, act_dim))
        self.label = np.zeros((size, act_dim))
        self.reward = np.zeros(size)
        self.done = np.zeros(size)
        self.size, self.n, self.pos = size, 0, 0

    def add(self, obs: np.ndarray, act: np.ndarray, label: np.ndarray, reward: np.ndarray, next_obs: np.ndarray,
            done: np.ndarray) -> None:
        for i in range(len(obs)):
            j = self.pos
            self.obs[j], self.act[j], self.label[j] = obs[i], act[i], label[i]
            self.reward[j], self.next_obs[j], self.done[j] = reward[i], next_obs[i], done[i]
            self.pos = (self.pos + 1) % self.size
            self.n = min(self.n + 1, self.size)

    def sample(self, rng: np.random.Generator, batch: int) -> np.ndarray:
        return rng.integers(0, self.n, size=batch)


def _mlp(n_in: int, zero_last: bool = False) -> Any:
    import torch

    last = torch.nn.Linear(256, 1)
    if zero_last:
        torch.nn.init.zeros_(last.weight)
        torch.nn.init.zeros_(last.bias)
    return torch.nn.Sequential(torch.nn.Linear(n_in, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                               torch.nn.ReLU(), last)


def _fresh_critic(obs_dim: int, act_dim: int) -> Any:
    """Twin Q-networks (two 256-256 MLPs) for a teacher that has no value function at all."""
    import torch

    class Twin(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qs = torch.nn.ModuleList([_mlp(obs_dim + act_dim) for _ in range(2)])

        def forward(self, obs: Any, act: Any) -> tuple[Any, ...]:
            x = torch.cat([obs, act], dim=1)
            return tuple(q(x) for q in self.qs)

    return Twin()


def _value_critic(policy: Any, reward_scale: float, obs_dim: int, act_dim: int) -> Any:
    """Twin ``Q_i(s, a) = scale * V_teacher(s) + A_i(s, a)`` with the advantages starting at zero.

    An on-policy teacher (PPO, TRPO, A2C) knows how good a state is, not an action: its value
    network (a copy, in raw reward units) starts the critic, and two advantage networks whose last
    layer starts at zero learn how the action changes it.
    """
    import torch

    class ValueTwin(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.policy = copy.deepcopy(policy)
            self.scale = float(reward_scale)
            self.adv = torch.nn.ModuleList([_mlp(obs_dim + act_dim, zero_last=True) for _ in range(2)])

        def forward(self, obs: Any, act: Any) -> tuple[Any, ...]:
            v = self.policy.predict_values(obs) * self.scale
            x = torch.cat([obs, act], dim=1)
            return tuple(v + a(x) for a in self.adv)

    return ValueTwin()


class CriticTuner(BaseEstimator):
    """Fine-tune a distilled controller's affine pieces on the return (TD3+BC, critic warm-started).

    Parameters
    ----------
    n_steps : int, default=0
        Environment transitions (0: no fine-tuning; the controller is kept as it is).
    critic : {'auto', 'teacher', 'new'}, default='auto'
        Start the critic from the teacher's: its Q-networks (SAC, TD3, TQC), or for an on-policy
        teacher (PPO, TRPO, A2C) its value network plus advantage networks that start at zero.
        ``'teacher'`` is an error for a teacher with neither; ``'auto'`` uses the teacher's when
        it has one, else new networks.
    critic_warmup : int, default=10_000
        Transitions during which only the critic learns.
    exploration_noise : float, default=0.2
        Gaussian noise on the executed actions, in half action ranges.
    bc_weight : float, default=0.0
        Pull of the actor towards the teacher's actions (TD3+BC's; 0: none).
    trust_weight : float, default=1.0
        Pull of the actor towards the starting controller's own actions on the same states (a trust
        region around the distilled controller, in half action ranges squared; 0 with
        ``bc_weight=0``: pure TD3).
    actor_lr, critic_lr : float, default=1e-4, 3e-4
        Adam step sizes.
    batch_size : int, default=256
        Transitions per gradient step.
    updates_per_step : float, default=0.5
        Critic gradient steps per environment transition.
    policy_delay : int, default=2
        Critic steps per actor step.
    gamma : float, default=None
        Discount; ``None``: the teacher's own (``model.gamma``, what its critic was trained with),
        else 0.99.
    tau : float, default=0.005
        Target-network averaging.
    n_envs : int, default=4
        Environments stepped together.
    eval_every : int, default=10_000
        Transitions between held-out evaluations (the best controller is kept).
    eval_episodes : int, default=10
        Held-out episodes per evaluation (seeds ``seed + 50000 ...``, as DAgger's selection).
    select : {'robust', 'mean'}, default='robust'
        How evaluations are compared: ``'robust'`` by the mean minus the standard deviation of the
        held-out returns (a controller that flips the robot in one episode of ten loses to a
        slightly slower one that never does), ``'mean'`` by the mean.
    actor_units : {'features', 'raw'}, default='features'
        What Adam's steps on the coefficients are measured in: ``'features'``, action per standard
        deviation of the feature (the controller learns as a network on normalised observations
        does, every feature at the same pace); ``'raw'``, action per raw unit of the feature (a
        feature ten times wider moves the action ten times faster).
    buffer_size : int, default=300_000
        Replay capacity.
    seed : int, default=0
        Seeds the episodes, the noise and the batches.
    router : {'frozen', 'train'}, default='frozen'
        Whether a mixture's linear router learns with its experts. ``'train'``: the router's scores
        (argmax: the acting expert) get noise of a learnt scale per state and expert on every actor
        update (Shazeer et al.'s noisy gating, as SMoSE trains it: where the router is unsure the
        actor is made to try the other experts), the routed expert's action carries the softmax
        mixture's gradient (straight-through: the action is the deployed controller's), and
        :data:`~interp_rl.kinds.mixture_training.SMOSE`'s weight of the importance and load
        balancing loss is added. The router's zero coefficients stay zero, so the size does not
        grow. Only a linear router can: a tree's (or a routing tree's) splits are hard thresholds,
        whose gradient is zero almost everywhere, and a softened tree would train a controller
        other than the one deployed.
    search : {'td3', 'ars'}, default='td3'
        How the pieces are searched: TD3 as described above, or augmented random search
        (:class:`distill.ars.ARS`, V2-t with the teacher's task's settings, :func:`distill.ars.teacher_ars_settings`,
        ``n_steps`` environment steps, no critic;
        the start and the end are scored on the held-out episodes and the better one is kept).
    checkpoint_dir : str or Path, default=None
        Where the whole state (controller, critic, optimisers, replay, random generators, the episodes in
        flight) is saved at every evaluation, as JSON and ``.npz`` (no pickle); ``fit(..., resume=True)``
        continues from it, to the same numbers as a run never stopped.

    Attributes
    ----------
    student_ : estimator
        The student running the best controller found.
    history_ : list of dict
        ``step``, ``return_mean``, ``return_std``, ``return_min`` (held-out), ``score`` (what
        ``select`` compares) and ``seconds`` at each evaluation.
    initial_return_, best_return_ : float
        Held-out mean return before fine-tuning and of the kept controller (the one with the best
        ``score``).
    critic_source_ : str
        ``'teacher'`` (its Q-networks), ``'teacher-value'`` (its value network) or ``'new'``.
    gamma_ : float
        The discount used.
    critic_ : torch.nn.Module
        The critic after fine-tuning (a copy: the teacher's own networks are never trained).
    final_student_ : estimator
        The student running the controller at the end of fine-tuning, kept or not.
    resumed_from_ : int or None
        The transitions already done when a ``resume=True`` run picked up the saved state (``None``: from the
        start).
    earlier_seconds_ : float
        Seconds spent before that resume (0 for a run from the start), for whoever totals the cost.
    feature_scale_ : ndarray of shape (n_features,)
        The features' standard deviations on the replay when the actor started learning (ones with
        ``actor_units='raw'`` or when it never did): the units its coefficients were learnt in.
    """

    def __init__(
        self,
        *,
        n_steps: int = 0,
        critic: str = "auto",
        critic_warmup: int = 10_000,
        exploration_noise: float = 0.2,
        bc_weight: float = 0.0,
        trust_weight: float = 1.0,
        actor_lr: float = 1e-4,
        critic_lr: float = 3e-4,
        batch_size: int = 256,
        updates_per_step: float = 0.5,
        policy_delay: int = 2,
        gamma: float | None = None,
        tau: float = 0.005,
        n_envs: int = 4,
        eval_every: int = 10_000,
        eval_episodes: int = 10,
        select: str = "robust",
        actor_units: str = "features",
        buffer_size: int = 300_000,
        seed: int = 0,
        search: str = "td3",
        router: str = "frozen",
        checkpoint_dir: str | Path | None = None,
    ) -> None:
        self.n_steps = n_steps
        self.critic = critic
        self.critic_warmup = critic_warmup
        self.exploration_noise = exploration_noise
        self.bc_weight = bc_weight
        self.trust_weight = trust_weight
        self.actor_lr = actor_lr
        self.critic_lr = critic_lr
        self.batch_size = batch_size
        self.updates_per_step = updates_per_step
        self.policy_delay = policy_delay
        self.gamma = gamma
        self.tau = tau
        self.n_envs = n_envs
        self.eval_every = eval_every
        self.eval_episodes = eval_episodes
        self.select = select
        self.actor_units = actor_units
        self.buffer_size = buffer_size
        self.seed = seed
        self.search = search
        self.router = router
        self.checkpoint_dir = checkpoint_dir

    def _validate_params(self) -> None:
        owner = "CriticTuner"
        check_int(self.n_steps, "n_steps", owner, low=0)
        check_choice(self.critic, "critic", owner, ("auto", "teacher", "new"))
        check_int(self.critic_warmup, "critic_warmup", owner, low=0)
        check_float(self.exploration_noise, "exploration_noise", owner, high=2.0)
        check_float(self.bc_weight, "bc_weight", owner)
        check_float(self.trust_weight, "trust_weight", owner)
        check_float(self.actor_lr, "actor_lr", owner, low_open=True)
        check_float(self.critic_lr, "critic_lr", owner, low_open=True)
        check_int(self.batch_size, "batch_size", owner)
        check_float(self.updates_per_step, "updates_per_step", owner, low_open=True, high=16.0)
        check_int(self.policy_delay, "policy_delay", owner)
        if self.gamma is not None:
            check_float(self.gamma, "gamma", owner, high=1.0)
        check_float(self.tau, "tau", owner, low_open=True, high=1.0)
        check_int(self.n_envs, "n_envs", owner)
        check_int(self.eval_every, "eval_every", owner)
        check_int(self.eval_episodes, "eval_episodes", owner)
        check_choice(self.select, "select", owner, ("robust", "mean"))
        check_choice(self.actor_units, "actor_units", owner, ("features", "raw"))
        check_int(self.buffer_size, "buffer_size", owner)
        check_int(self.seed, "seed", owner, low=0)
        check_choice(self.search, "search", owner, ("td3", "ars", "cmaes"))
        check_choice(self.router, "router", owner, ("frozen", "train"))

    def _critic_source(self, teacher: Teacher) -> str:
        model = getattr(teacher, "model", None)
        has_q = bool(teacher.has_q) and hasattr(model, "critic")
        has_v = bool(teacher.has_value) and hasattr(getattr(model, "policy", None), "predict_values")
        if self.critic == "teacher" and not (has_q or has_v):
            raise bad_value("critic", "CriticTuner", "'auto' or 'new' for a teacher without a critic (this one has "
                            "neither Q-networks, as SAC, TD3 and TQC, nor a value network, as PPO and TRPO)",
                            self.critic)
        if self.critic == "new" or not (has_q or has_v):
            return "new"
        return "teacher" if has_q else "teacher-value"

    # ------------------------------------------------------------------ fitting
    def fit(self, student: Any, teacher: Teacher, env_fn: EnvFn | None = None, *, resume: bool = False,
            progress: Callable[[dict[str, Any]], None] | None = None) -> CriticTuner:
        """Fine-tune ``student`` (a fitted student whose program is piecewise affine) against ``teacher``.

        With a ``checkpoint_dir``, a Ctrl-C keeps the state of the last evaluation and raises
        :class:`~interp_rl.errors.DistillInterrupted`; ``resume=True`` continues from it.
        """
        self._validate_params()
        check_teacher(teacher, "CriticTuner")
        env_fn = env_fn if env_fn is not None else teacher.env_fn
        program = student._fitted_program()
        if self.router == "train":
            self._check_router(program)
        if self.search in ("ars", "cmaes"):
            self._fit_ars(student, env_fn, progress, resume, teacher)
            return self
        self.critic_source_ = self._critic_source(teacher)
        if not program.can("affine"):
            raise bad_value("student", "CriticTuner.fit", "a student whose program is piecewise affine (tree, "
                            "linear, mixture, equations)", program.kind)
        pieces = program.affine_pieces()
        with torch_threads(1):
            self._fit(student, teacher, env_fn, program, pieces, progress, resume)
        return self

    def _check_router(self, program: Any) -> None:
        """``router='train'`` needs one linear routing map whose argmax is the acting piece (a mixture's router)."""
        maps = program.routing_maps()
        if self.search in ("ars", "cmaes"):
            raise bad_value("router", "CriticTuner", f"'frozen' with search={self.search!r} (the search already "
                            "moves a linear router with the experts)", self.router)
        if len(maps) != 1 or len(maps[0][0]) != len(program.affine_pieces().intercept):
            why = {"tree": "a tree's splits are hard thresholds, whose gradient is zero almost everywhere; a "
                           "softened tree would train another controller than the one deployed",
                   "oblique": "an oblique tree's splits are hard thresholds (fine-tune the ReLU network it is "
                              "converted from instead)",
                   "mixture": "this mixture routes by a tree, whose thresholds have no gradient"}.get(
                program.kind, f"a {program.kind} program has no linear router")
            raise bad_value("router", "CriticTuner", f"'frozen' for this controller ({why})", self.router)

    def _config(self) -> dict[str, Any]:
        params = self.get_params()
        params.pop("checkpoint_dir", None)
        if params.get("search") == "td3":  # the states saved before there was a choice stay resumable
            params.pop("search")
        if params.get("router") == "frozen":
            params.pop("router")
        return params

    def _fit_ars(self, student: Any, env_fn: EnvFn, progress: Callable[[dict[str, Any]], None] | None,
                 resume: bool, teacher: Teacher) -> None:
        """``search='ars'`` or ``'cmaes'``: :class:`distill.ars.ARS` (or :class:`distill.cmaes.CMAES`) over the
        student's program for ``n_steps`` environment steps, its state in ``checkpoint_dir/ars`` (or ``/cmaes``);
        the start and the end scored on the held-out episodes, the better kept."""
        from distill.cmaes import search_for

        ckpt = Path(self.checkpoint_dir) / self.search if self.checkpoint_dir is not None else None
        t0 = time.perf_counter()
        first = {"step": 0, **self._score(student, env_fn), "seconds": 0.0}
        ars = search_for(self.search, teacher, seed=self.seed, checkpoint_dir=ckpt)
        again = resume and ckpt is not None and (ckpt / ars.state_file).is_file()
        saved = json.loads((ckpt / ars.state_file).read_text()) if again else None  # type: ignore[operator]
        earlier = float(saved["history"][-1]["seconds"]) if saved and saved["history"] else 0.0

        def forward(row: dict[str, Any]) -> None:
            if progress is not None:
                progress(FineTuneStep(step=row["env_steps"], return_mean=row["return_mean"]))

        ars.fit(student._fitted_program(), env_fn, steps=self.n_steps, resume=again, progress=forward)
        final_student = student.with_program(ars.program_)
        end = {"step": int(ars.env_steps_), **self._score(final_student, env_fn),
               "seconds": earlier + time.perf_counter() - t0}
        better = end["score"] > first["score"]
        self.history_ = [first, end]
        self.initial_return_ = first["return_mean"]
        self.best_return_ = end["return_mean"] if better else first["return_mean"]
        self.critic_source_, self.critic_, self.gamma_ = "none", None, None
        self.feature_scale_ = np.ones(student._fitted_program().obs_dim)
        self.resumed_from_ = int(saved["env_steps"]) if saved else None
        self.earlier_seconds_ = earlier
        self.final_student_ = final_student
        self.student_ = final_student if better else student

    def _read_state(self, ckpt: Path, start_key: str) -> tuple[dict[str, Any], Any]:
        """The saved state (JSON and arrays), checked: same settings, same starting controller, files that agree."""
        try:
            meta = json.loads((ckpt / STATE_JSON).read_text())
            arr = np.load(ckpt / STATE_NPZ, allow_pickle=False)
            consistent = int(arr["steps"]) == int(meta["steps"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InterpRLError(f"The fine-tuning state in {str(ckpt)!r} is missing or corrupt ({exc}); delete "
                                f"{STATE_JSON} and {STATE_NPZ} there to start it again.") from None
        if not consistent:
            raise InterpRLError(f"The fine-tuning state in {str(ckpt)!r} is corrupt ({STATE_JSON} and {STATE_NPZ} are "
                                "from different steps); delete them to start it again.")
        mine = self._config()
        for key in sorted(set(meta["config"]) | set(mine)):
            if meta["config"].get(key) != mine.get(key):
                raise InterpRLError(f"Cannot resume {str(ckpt)!r}: its fine-tuning was started with "
                                    f"{key}={meta['config'].get(key)!r}, not {mine.get(key)!r}.")
        if meta["start"] != start_key:
            raise InterpRLError(f"Cannot resume {str(ckpt)!r}: its fine-tuning started from another controller.")
        return meta, arr

    def _score(self, student: Any, env_fn: EnvFn) -> dict[str, float]:
        res = evaluate(student, env_fn, self.eval_episodes, seed=self.seed + SELECTION_SEED_OFFSET)
        r = np.asarray(res.returns, dtype=np.float64)
        score = float(r.mean() - r.std()) if self.select == "robust" else float(r.mean())
        return {"return_mean": float(r.mean()), "return_std": float(r.std()), "return_min": float(r.min()),
                "score": score}

    def _fit(self, student: Any, teacher: Teacher, env_fn: EnvFn, program: Any, pieces: Any,
             progress: Callable[[dict[str, Any]], None] | None, resume: bool = False) -> None:
        import hashlib

        import torch

        torch.manual_seed(self.seed)
        rng = np.random.default_rng([self.seed, 11])
        low = np.asarray(program.action_low, dtype=np.float64)
        high = np.asarray(program.action_high, dtype=np.float64)
        t_low = np.asarray(teacher.action_low, dtype=np.float64)
        t_high = np.asarray(teacher.action_high, dtype=np.float64)
        half = (t_high - t_low) / 2
        centre = (t_high + t_low) / 2
        obs_dim, act_dim = program.obs_dim, program.act_dim
        n_in = int(pieces.coef.shape[2])  # what the pieces are affine in: observations, or a SINDy policy's terms
        inputs = pieces.features
        normalize = getattr(teacher, "normalizer", None)

        # The actor: the pieces' parameters, zeros kept zero.
        mask = torch.as_tensor(pieces.coef != 0.0)
        b = torch.nn.Parameter(torch.tensor(pieces.intercept, dtype=torch.float64))  # copies: b and w change in place
        b0 = torch.tensor(pieces.intercept, dtype=torch.float64)
        w0 = torch.tensor(pieces.coef, dtype=torch.float64)
        w = torch.nn.Parameter(torch.tensor(pieces.coef, dtype=torch.float64))
        # The coefficients are learnt as ``w * feature_scale`` (``actor_units='features'``): Adam's steps are then
        # in action units per standard deviation of each feature, as a network on normalised inputs takes them,
        # instead of per raw unit (a velocity of scale 10 would move the action 100 times faster than an angle of
        # scale 0.1). The scales are the replay's, measured when the actor starts learning.
        feature_scale = torch.ones(n_in, dtype=torch.float64)

        def weights() -> Any:
            return w / feature_scale

        # The router, when it learns too: a mixture's scores (argmax: the acting expert), in feature units as the
        # experts, zeros kept zero, and the noise's scale per state and expert learnt beside it (from zero weights:
        # softplus(0) everywhere).
        train_router = self.router == "train"
        router_params: list[Any] = []
        if train_router:
            from interp_rl.kinds.mixture_net import importance_load_loss
            from interp_rl.kinds.mixture_training import SMOSE

            (router_b, router_w), = program.routing_maps()
            rmask = torch.as_tensor(router_w != 0.0)
            rb = torch.nn.Parameter(torch.tensor(router_b, dtype=torch.float64))
            rw = torch.nn.Parameter(torch.tensor(router_w, dtype=torch.float64))
            nb = torch.nn.Parameter(torch.zeros(len(router_b), dtype=torch.float64))
            nw = torch.nn.Parameter(torch.zeros(router_w.shape, dtype=torch.float64))
            router_params = [rb, rw, nb, nw]

        def assign(o: np.ndarray, x: Any) -> Any:
            """The acting piece of each row: the start's assignment, or the learning router's argmax."""
            if train_router:
                return (rb + x @ ((rw / feature_scale) * rmask).T).argmax(dim=1)
            return torch.as_tensor(pieces.assign(o))

        lo_t, hi_t = torch.as_tensor(low), torch.as_tensor(high)
        half_t, centre_t = torch.as_tensor(half), torch.as_tensor(centre)

        tanh_squash = pieces.squash == "tanh"

        def pieces_act(intercept: Any, coef: Any, x: Any, piece: Any) -> tuple[Any, Any]:
            y = intercept[piece] + torch.einsum("nkd,nd->nk", coef[piece] * mask[piece], x)
            if tanh_squash:  # SAC-trained mixtures: the affine output is squashed into the bounds
                y = lo_t + 0.5 * (torch.tanh(y) + 1.0) * (hi_t - lo_t)
            return torch.minimum(torch.maximum(y, lo_t), hi_t), y

        def actor(x: Any, piece: Any) -> tuple[Any, Any]:
            return pieces_act(b, weights(), x, piece)

        def start_actor(x: Any, piece: Any) -> Any:
            return pieces_act(b0, w0, x, piece)[0]

        def routed_actor(x: Any) -> tuple[Any, Any, Any]:
            """The actor whose router learns: noisy scores choose the expert, whose action carries the softmax
            mixture's gradient (straight-through); plus the weighted importance and load loss."""
            clean = rb + x @ ((rw / feature_scale) * rmask).T
            std = torch.nn.functional.softplus(nb + (x / feature_scale) @ nw.T)
            noisy = clean + torch.randn(clean.shape, generator=gen, dtype=torch.float64) * std
            prob = torch.softmax(noisy, dim=1)
            y_all = b[None] + torch.einsum("mkd,nd->nmk", weights() * mask, x)
            if tanh_squash:
                y_all = lo_t + 0.5 * (torch.tanh(y_all) + 1.0) * (hi_t - lo_t)
            a_all = torch.minimum(torch.maximum(y_all, lo_t), hi_t)
            rows, chosen = torch.arange(len(x)), noisy.argmax(dim=1)
            soft = (prob.unsqueeze(2) * a_all).sum(dim=1)
            a = a_all[rows, chosen] + soft - soft.detach()
            return a, y_all[rows, chosen], SMOSE.load_balance * importance_load_loss(prob, clean, noisy, std)

        def program_now() -> Any:
            with torch.no_grad():
                prog = program.with_affine_pieces(b.detach().numpy().copy(),
                                                  (weights() * mask).detach().numpy().copy())
                if train_router:
                    prog = prog.with_routing_maps([(rb.detach().numpy().copy(),
                                                    ((rw / feature_scale) * rmask).detach().numpy().copy())])
                return prog

        # The critic: the teacher's twin Q-networks (or new ones) on normalised obs and [-1, 1] actions.
        if self.critic_source_ == "teacher":
            model = teacher.model  # type: ignore[attr-defined]
            q_net = copy.deepcopy(model.critic)
            q_target = copy.deepcopy(getattr(model, "critic_target", model.critic))
        elif self.critic_source_ == "teacher-value":
            model = teacher.model  # type: ignore[attr-defined]
            scale = float(getattr(normalize, "reward_scale", 1.0)) if normalize is not None else 1.0
            q_net = _value_critic(model.policy, scale, obs_dim, act_dim)
            q_target = copy.deepcopy(q_net)
        else:
            q_net = _fresh_critic(obs_dim, act_dim)
            q_target = copy.deepcopy(q_net)
        for p in q_target.parameters():
            p.requires_grad_(False)
        q_opt = torch.optim.Adam(q_net.parameters(), lr=self.critic_lr)
        a_opt = torch.optim.Adam([b, w, *router_params], lr=self.actor_lr)

        def q_in(obs: np.ndarray) -> Any:
            o = normalize(obs) if normalize is not None else obs
            return torch.as_tensor(o, dtype=torch.float32)

        def scaled(a: Any) -> Any:
            return ((a - centre_t) / half_t).float()

        def qs(net: Any, o: Any, a: Any) -> list[Any]:
            out = net(o, a)
            if isinstance(out, (tuple, list)):
                return list(out)
            return [out.mean(dim=tuple(range(1, out.dim()))).unsqueeze(1)]  # TQC: mean of quantiles

        buf = _Buffer(min(self.buffer_size, self.n_steps), obs_dim, act_dim)
        own_gamma = getattr(getattr(teacher, "model", None), "gamma", None)
        gamma = float(self.gamma if self.gamma is not None else own_gamma if own_gamma is not None else 0.99)
        self.gamma_ = gamma
        gen = torch.Generator().manual_seed(self.seed)
        envs = [env_fn(self.seed + RL_SEED_OFFSET + i) for i in range(self.n_envs)]
        next_seed = self.seed + RL_SEED_OFFSET
        obs = np.stack([env.reset(seed=next_seed + i)[0] for i, env in enumerate(envs)]).astype(np.float64)
        next_seed += self.n_envs

        ckpt = Path(self.checkpoint_dir) if self.checkpoint_dir is not None else None
        start_key = hashlib.sha256(np.ascontiguousarray(pieces.intercept).tobytes()
                                   + np.ascontiguousarray(pieces.coef).tobytes()).hexdigest()
        saved = None
        if ckpt is not None and (ckpt / STATE_JSON).is_file():
            if not resume:
                raise InterpRLError(f"{str(ckpt)!r} already holds a fine-tuning; pass resume=True (--resume) to "
                                    "continue it or choose another folder.")
            saved = self._read_state(ckpt, start_key)

        history: list[dict[str, Any]]
        if saved is None:
            first = self._score(student, env_fn)
            self.initial_return_ = best_ret = first["return_mean"]
            best_score, best_program = first["score"], program
            history = [{"step": 0, **first, "seconds": 0.0}]
            steps, updates, owed, next_eval = 0, 0, 0.0, min(self.eval_every, self.n_steps)
            in_units = self.actor_units != "features"  # the coefficients are in the units the actor learns in
        else:  # everything as it was at the last evaluation
            meta, arr = saved
            self.initial_return_, best_ret, best_score = meta["initial_return"], meta["best_return"], meta["best_score"]
            best_program = program.with_affine_pieces(np.array(arr["best/intercept"]), np.array(arr["best/coef"]))
            if train_router:
                best_program = best_program.with_routing_maps([(np.array(arr["best/router_b"]),
                                                                np.array(arr["best/router_w"]))])
            history = meta["history"]
            steps, updates, owed, next_eval = meta["steps"], meta["updates"], meta["owed"], meta["next_eval"]
            in_units = meta["in_units"]
            with torch.no_grad():
                b.copy_(torch.as_tensor(np.array(arr["actor/b"])))
                w.copy_(torch.as_tensor(np.array(arr["actor/w"])))
                feature_scale.copy_(torch.as_tensor(np.array(arr["actor/feature_scale"])))
                for name, param in zip(("rb", "rw", "nb", "nw"), router_params, strict=False):
                    param.copy_(torch.as_tensor(np.array(arr[f"actor/{name}"])))
            q_net.load_state_dict(_load_arrays("q", q_net.state_dict(), arr))
            q_target.load_state_dict(_load_arrays("qt", q_target.state_dict(), arr))
            _load_optimizer(q_opt, "qopt", arr)
            _load_optimizer(a_opt, "aopt", arr)
            gen.set_state(torch.as_tensor(np.array(arr["gen"]), dtype=torch.uint8))
            rng.bit_generator.state = meta["rng"]
            buf.n, buf.pos = meta["buffer"]["n"], meta["buffer"]["pos"]
            for name in ("obs", "next_obs", "act", "label", "reward", "done"):
                getattr(buf, name)[: buf.n] = arr[f"buf/{name}"]
            obs = np.array(arr["obs"])
            next_seed = meta["next_seed"]
            for i, (env, counters) in enumerate(zip(envs, meta["envs"], strict=True)):
                if counters is None:  # a simulator whose state is not known: its episode starts afresh
                    obs[i] = env.reset(seed=next_seed)[0]
                    next_seed += 1
                else:
                    _set_env_state(env, np.array(arr[f"env/{i}"]), counters)
        self.resumed_from_ = steps if saved is not None else None
        self.earlier_seconds_ = float(history[-1]["seconds"]) if saved is not None else 0.0
        t0 = time.perf_counter() - history[-1]["seconds"]

        def save_state() -> None:
            best_pieces = best_program.affine_pieces()
            arrays = {"actor/b": b.detach().numpy(), "actor/w": w.detach().numpy(),
                      "actor/feature_scale": feature_scale.numpy(), "best/intercept": best_pieces.intercept,
                      "best/coef": best_pieces.coef, "gen": gen.get_state().numpy(), "obs": obs,
                      **_state_arrays("q", q_net.state_dict()), **_state_arrays("qt", q_target.state_dict()),
                      **_state_arrays("qopt", q_opt.state_dict()), **_state_arrays("aopt", a_opt.state_dict()),
                      **{f"buf/{name}": getattr(buf, name)[: buf.n] for name in
                         ("obs", "next_obs", "act", "label", "reward", "done")}}
            if train_router:
                (best_rb, best_rw), = best_program.routing_maps()
                arrays.update({"best/router_b": best_rb, "best/router_w": best_rw,
                               **{f"actor/{name}": param.detach().numpy() for name, param in
                                  zip(("rb", "rw", "nb", "nw"), router_params, strict=True)}})
            env_meta = []
            for i, env in enumerate(envs):
                snap = _env_state(env)
                env_meta.append(None if snap is None else snap[1])
                if snap is not None:
                    arrays[f"env/{i}"] = snap[0]

            def write(tmp: str) -> None:
                with open(tmp, "wb") as fh:
                    np.savez(fh, steps=np.array(steps), **arrays)

            ckpt.mkdir(parents=True, exist_ok=True)
            atomic_write(ckpt / STATE_NPZ, write)
            meta = {"config": self._config(), "start": start_key, "steps": steps, "updates": updates, "owed": owed,
                    "next_eval": next_eval, "next_seed": next_seed, "in_units": in_units, "history": history,
                    "initial_return": self.initial_return_, "best_return": best_ret, "best_score": best_score,
                    "rng": rng.bit_generator.state, "buffer": {"n": buf.n, "pos": buf.pos}, "envs": env_meta}
            atomic_write_text(ckpt / STATE_JSON, json.dumps(meta, indent=1) + "\n")

        def update() -> None:
            nonlocal in_units
            idx = buf.sample(rng, self.batch_size)
            o, o2 = buf.obs[idx], buf.next_obs[idx]
            x, x2 = torch.as_tensor(inputs(o)), torch.as_tensor(inputs(o2))
            with torch.no_grad():
                piece, piece2 = assign(o, x), assign(o2, x2)
            r = torch.as_tensor(buf.reward[idx], dtype=torch.float32)[:, None]
            d = torch.as_tensor(buf.done[idx], dtype=torch.float32)[:, None]
            with torch.no_grad():
                a2, _ = actor(x2, piece2)
                smooth = (torch.randn(a2.shape, generator=gen, dtype=torch.float64) * 0.2).clamp(-0.5, 0.5)
                a2 = torch.minimum(torch.maximum(a2 + smooth * half_t, torch.as_tensor(t_low)),
                                   torch.as_tensor(t_high))
                q2 = torch.min(torch.cat(qs(q_target, q_in(o2), scaled(a2)), dim=1), dim=1, keepdim=True).values
                target = r + gamma * (1.0 - d) * q2
            q_pred = qs(q_net, q_in(o), scaled(torch.as_tensor(buf.act[idx])))
            q_loss = sum(torch.nn.functional.mse_loss(q, target) for q in q_pred)
            q_opt.zero_grad()
            q_loss.backward()
            q_opt.step()
            if steps > self.critic_warmup and updates % self.policy_delay == 0:
                if not in_units:
                    in_units = True
                    spread = torch.as_tensor(inputs(buf.obs[:buf.n]).std(axis=0))
                    with torch.no_grad():
                        feature_scale.copy_(torch.where(spread > 1e-8, spread, torch.ones_like(spread)))
                        w.mul_(feature_scale)
                        if train_router:
                            rw.mul_(feature_scale)
                balance = 0.0
                if train_router:
                    a, y, balance = routed_actor(x)
                else:
                    a, y = actor(x, piece)
                q1 = qs(q_net, q_in(o), scaled(a))[0]
                lam = 1.0 / q1.abs().mean().detach().clamp_min(1e-6)
                label = torch.as_tensor(buf.label[idx])
                trust = 0.0
                if self.trust_weight:
                    with torch.no_grad():
                        a0 = start_actor(x, torch.as_tensor(pieces.assign(o)) if train_router else piece)
                    trust = self.trust_weight * (((a - a0) / half_t) ** 2).mean()
                a_loss = trust + balance + (-(lam * q1).mean() + self.bc_weight * (((a - label) / half_t) ** 2).mean()
                                            + (((y - a) / half_t) ** 2).mean())  # pulls clipped pre-actions back in
                a_opt.zero_grad()
                a_loss.backward()
                a_opt.step()
            with torch.no_grad():
                for p, pt in zip(q_net.parameters(), q_target.parameters(), strict=True):
                    pt.mul_(1 - self.tau).add_(self.tau * p)

        try:
            while steps < self.n_steps:
                before = obs.copy()
                with torch.no_grad():
                    x_now = torch.as_tensor(inputs(before))
                    act = actor(x_now, assign(before, x_now))[0].numpy()
                act = np.clip(act + rng.normal(size=act.shape) * self.exploration_noise * half, t_low, t_high)
                # The teacher's labels serve only TD3+BC's pull: without it, no teacher forward pass per step.
                label = (np.asarray(teacher.predict(before), dtype=np.float64).reshape(act.shape) if self.bc_weight
                         else act)
                nxt = np.empty_like(before)
                rew, done = np.zeros(len(envs)), np.zeros(len(envs))
                for i, env in enumerate(envs):
                    o2, r, term, trunc, _ = env.step(act[i])
                    nxt[i], rew[i], done[i] = o2, r, float(term)
                    if term or trunc:
                        o2, _ = env.reset(seed=next_seed)
                        next_seed += 1
                    obs[i] = o2
                buf.add(before, act, label, rew, nxt, done)
                steps += len(envs)
                owed += self.updates_per_step * len(envs)
                while owed >= 1.0 and buf.n >= self.batch_size:
                    owed -= 1.0
                    update()
                    updates += 1
                if steps >= next_eval:
                    next_eval += self.eval_every
                    cand = program_now()
                    row = {"step": steps, **self._score(student.with_program(cand), env_fn),
                           "seconds": time.perf_counter() - t0}
                    history.append(row)
                    if row["score"] > best_score:
                        best_score, best_ret, best_program = row["score"], row["return_mean"], cand
                    if ckpt is not None:
                        save_state()
                    if progress is not None:
                        progress(FineTuneStep(step=steps, return_mean=row["return_mean"], total=self.n_steps,
                                              seconds=row["seconds"], details={k: v for k, v in row.items()
                                                                               if k not in ("step", "seconds")}))
        except KeyboardInterrupt:
            kept = (f"; its state at {history[-1]['step']} transitions is kept in {str(ckpt)!r}"
                    if ckpt is not None and len(history) > 1 else "")
            raise DistillInterrupted(f"Fine-tuning interrupted{kept}.") from None
        finally:
            for env in envs:
                env.close()
        self.history_ = history
        self.best_return_ = best_ret
        self.critic_ = q_net
        self.feature_scale_ = feature_scale.numpy().copy()
        self.student_ = student.with_program(best_program)
        self.final_student_ = student.with_program(program_now())
