"""Augmented random search over a transparent program's own parameters (Mania, Guy and Recht, 2018).

:class:`ARS` is the paper's V2-t, searching over the parameters of a program kind instead of a
matrix: a linear policy's intercept and coefficients, a tree's leaves or a mixture's experts (their
affine maps, :meth:`interp_rl.program.ProgramBase.affine_pieces`) and a mixture's linear router.
Each iteration:

1. ``n_directions`` directions ``delta_k`` are drawn from one master generator, in order;
2. ``theta + noise * delta_k`` and ``theta - noise * delta_k`` each run ``episodes`` episodes
   (the same episode seeds for both signs, derived from ``(seed, iteration, k)``);
3. the ``top_directions`` directions with the largest ``max(r+, r-)`` move the parameters,
   ``theta += step_size / (b * sigma_R) * sum_k (r+_k - r-_k) delta_k`` with ``sigma_R`` the standard
   deviation of the ``2b`` returns used;
4. the observations visited update the running mean and standard deviation (V2), which the next
   iteration's policies read.

The affine maps read normalised observations, ``a = b + W (x - mu) / sigma``; a warm start (a distilled
controller) first runs ``warmup_episodes`` episodes to set ``mu`` and ``sigma`` and is re-expressed in those
units, so the search starts around the start itself. Every policy run is the map folded into raw units
(``W' = W / sigma``, ``b' = b - W mu / sigma``), so zero coefficients stay zero and the returned program
is of the same kind as the start, reading raw observations. A tree's splits
and a mixture's routing tree read raw features and are not searched (V1 there: nothing to normalise);
a linear router is searched and folded like an expert.

Determinism: the directions come from the master generator alone and the returns are reduced in
direction order, so the result is the same whatever the number of workers (a local process pool,
:func:`interp_rl.parallel.side_by_side`, or Ray tasks, :func:`interp_rl.parallel.ray_map`). The
state is saved after every iteration (JSON and ``.npz``, no pickle); ``fit(..., resume=True)``
continues to the same numbers as a run never stopped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from distill.events import SearchStep
from interp_rl.errors import InterpRLError, bad_value
from interp_rl.io import atomic_write, atomic_write_text
from interp_rl.parallel import ray_map, side_by_side
from interp_rl.program import Controller, Program
from interp_rl.seeds import SELECTION_SEED_OFFSET
from interp_rl.validation import check_choice, check_float, check_int

__all__ = ["ARS", "ParameterLayout", "ars_update", "run_ars_job"]

EnvFn = Callable[[int], Any]
STATE_JSON = "ars_state.json"
EXECUTORS = ("process", "ray")
WARMUP = 2**31 - 1  # the "iteration" whose episode seeds the warm-up uses


@dataclass
class ParameterLayout:
    """Which numbers of a program ARS moves, as one flat vector ``theta`` (in normalised-observation units).

    ``groups`` are the affine maps searched, each ``(intercept (P, A), coef (P, A, D), intercept mask (P, A),
    coef mask (P, A, D))``: the program's pieces and its kind's routing maps (a mixture's linear router: one
    piece of ``n_experts`` outputs).
    """

    program: Any
    intercepts: list[np.ndarray]
    coefs: list[np.ndarray]
    b_masks: list[np.ndarray]
    w_masks: list[np.ndarray]

    @classmethod
    def of(cls, program: Program, *, dense: bool = False) -> ParameterLayout:
        """The layout of ``program``: acting pieces' intercepts and non-zero coefficients (all of them with
        ``dense``, a linear policy searched from scratch)."""
        try:
            pieces = program.affine_pieces()  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            raise InterpRLError(f"ARS searches piecewise-affine programs (linear, tree, mixture); a "
                                f"{program.kind} program has no affine pieces.") from None
        if pieces.inputs is not None:
            raise InterpRLError(f"ARS searches affine maps of the observations; a {program.kind} program's pieces "
                                "read library terms.")
        b_mask = np.zeros(pieces.intercept.shape, dtype=bool)
        b_mask[pieces.acting_pieces()] = True
        w_mask = (pieces.coef != 0.0) | dense
        w_mask &= b_mask[:, :, None]
        intercepts, coefs = [pieces.intercept.copy()], [pieces.coef.copy()]
        b_masks, w_masks = [b_mask], [w_mask]
        for b, w in program.routing_maps():  # type: ignore[attr-defined]  # a mixture's linear router, say
            intercepts.append(b[None].copy())
            coefs.append(w[None].copy())
            b_masks.append(np.ones((1, len(b)), dtype=bool))
            w_masks.append(w[None] != 0.0)
        return cls(program, intercepts, coefs, b_masks, w_masks)

    @property
    def size(self) -> int:
        return int(sum(m.sum() for m in self.b_masks) + sum(m.sum() for m in self.w_masks))

    def theta(self) -> np.ndarray:
        """The program's own parameters (raw units are normalised units when ``mu = 0, sigma = 1``)."""
        parts = []
        for b, w, bm, wm in zip(self.intercepts, self.coefs, self.b_masks, self.w_masks, strict=True):
            parts += [b[bm], w[wm]]
        return np.concatenate(parts)

    def theta_for(self, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
        """The parameters that, on observations normalised by ``mean`` and ``std``, act as the program does on raw
        ones (``W = W' sigma``, ``b = b' + W' mu``): the inverse of :meth:`program_for`'s folding."""
        parts = []
        for b, w, bm, wm in zip(self.intercepts, self.coefs, self.b_masks, self.w_masks, strict=True):
            parts += [(b + w @ mean)[bm], (w * std)[wm]]
        return np.concatenate(parts)

    def program_for(self, theta: np.ndarray, mean: np.ndarray, std: np.ndarray) -> Any:
        """The program acting as ``theta`` on observations normalised by ``mean`` and ``std``, in raw units."""
        i = 0
        folded = []
        for b0, w0, bm, wm in zip(self.intercepts, self.coefs, self.b_masks, self.w_masks, strict=True):
            b, w = b0.copy(), w0.copy()
            nb, nw = int(bm.sum()), int(wm.sum())
            b[bm] = theta[i:i + nb]
            w[wm] = theta[i + nb:i + nb + nw]
            i += nb + nw
            w_raw = w / std
            folded.append((b - w_raw @ mean, w_raw))
        prog = self.program.with_affine_pieces(*folded[0])
        return prog.with_routing_maps([(b[0], w[0]) for b, w in folded[1:]])


def _merge(a: tuple[float, np.ndarray, np.ndarray], b: tuple[float, np.ndarray, np.ndarray]
           ) -> tuple[float, np.ndarray, np.ndarray]:
    """Chan et al.'s merge of two ``(count, mean, M2)`` summaries."""
    na, ma, sa = a
    nb, mb, sb = b
    if nb == 0:
        return a
    n = na + nb
    d = mb - ma
    return n, ma + d * (nb / n), sa + sb + d * d * (na * nb / n)


def _episode(program: Any, env: Any, seed: int, horizon: int) -> tuple[float, int, tuple[float, np.ndarray,
                                                                                         np.ndarray]]:
    """One episode: its return, its steps and the ``(count, mean, M2)`` of the observations it saw."""
    obs, _ = env.reset(seed=seed)
    seen = [np.asarray(obs, dtype=np.float64)]
    total, steps = 0.0, 0
    low, high = env.action_space.low, env.action_space.high
    while steps < horizon:
        action = np.clip(program.predict(seen[-1][None])[0], low, high)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        steps += 1
        if terminated or truncated:
            break
        seen.append(np.asarray(obs, dtype=np.float64))
    x = np.array(seen)
    m = x.mean(axis=0)
    return total, steps, (float(len(x)), m, ((x - m) ** 2).sum(axis=0))


def evaluate_directions(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one chunk of directions (a worker's task): for each, ``theta +- noise * delta`` on its episodes.

    ``spec`` holds ``layout``, ``theta``, ``deltas`` ``(k, n)``, ``noise``, ``mean``, ``std``, ``seeds``
    (``k`` lists of episode seeds), ``horizon``, ``alive_bonus_offset`` and ``env_fn``; everything in it pickles,
    for Ray.
    """
    layout, env = spec["layout"], spec["env_fn"](int(spec["seeds"][0][0]) if len(spec["seeds"]) else 0)
    out = []
    try:
        for delta, seeds in zip(spec["deltas"], spec["seeds"], strict=True):
            row: dict[str, Any] = {"steps": 0}
            for sign, name in ((1.0, "plus"), (-1.0, "minus")):
                prog = layout.program_for(spec["theta"] + sign * spec["noise"] * delta, spec["mean"], spec["std"])
                returns, stats = [], (0.0, np.zeros_like(spec["mean"]), np.zeros_like(spec["mean"]))
                for s in seeds:
                    r, n, st = _episode(prog, env, int(s), spec["horizon"])
                    returns.append(r + spec["alive_bonus_offset"] * n)
                    row["steps"] += n
                    stats = _merge(stats, st)
                row[name] = float(np.mean(returns))
                row[f"{name}_stats"] = stats
            out.append(row)
    finally:
        env.close()
    return out


class ARS(BaseEstimator):
    """Augmented random search (V2-t) over a program's affine maps; see the module docstring.

    Parameters
    ----------
    n_directions : int, default=8
        Directions ``N`` drawn per iteration (each runs twice, ``+`` and ``-``).
    top_directions : int, default=None
        Directions ``b`` used in the update, those with the best ``max(r+, r-)``; ``None``: all.
    step_size : float, default=0.02
        ``alpha``; the update is divided by ``b`` and by the standard deviation of the ``2b`` returns.
    noise : float, default=0.03
        ``nu``, the exploration noise, in normalised-observation units.
    episodes : int, default=1
        Episodes per direction and sign (their mean return is the direction's).
    horizon : int, default=None
        Steps per episode at most; ``None``: the environment's time limit.
    alive_bonus_offset : float, default=0.0
        Added to the reward of every step while searching (the paper's V2-t removes Hopper's, Walker2d's and
        Ant's survival bonus with -1, -1 and -1, Humanoid's with -5; sb3-contrib's ``alive_bonus_offset``).
    normalize : bool, default=True
        V2 (observations normalised by their running mean and std) or V1 (raw observations).
    dense : bool, default=False
        Search every coefficient of a linear start, not only its non-zero ones (a start from scratch is
        always dense).
    warmup_episodes : int, default=2
        With ``normalize``, episodes the start runs first (a start that is not all zeros) to set the observation
        statistics, its parameters then re-expressed in normalised units (0: none, the paper's way from zeros).
    seed : int, default=0
        Seeds the directions and the episodes.
    n_workers : int, default=1
        Processes (or Ray tasks) the directions are spread over; the result does not depend on it.
    executor : {'process', 'ray'}, default='process'
        Forked local processes, or Ray tasks (a local Ray instance, or the cluster at ``ray_address``).
    ray_address : str, default=None
        A running Ray cluster's address (with ``executor='ray'``).
    checkpoint_dir : str or Path, default=None
        Where the state is written after every iteration (``ars_state.json`` and ``ars_state_<i>.npz``).

    Attributes
    ----------
    program_ : Program
        The final program (same kind and structure as the start, raw observations).
    history_ : list of dict
        Per iteration: ``iteration``, ``env_steps`` (total), ``return_mean`` and ``return_max`` (of the
        ``2N`` perturbed policies, ``alive_bonus_offset`` included), ``update_std`` and ``seconds`` (total).
    obs_mean_, obs_std_ : ndarray of shape (obs_dim,)
        The running statistics at the end (folded into ``program_``).
    n_parameters_ : int
        Numbers searched.
    ray_nodes_ : set of str
        With ``executor='ray'``, the ids of the Ray nodes the directions ran on (each history row counts them
        so far, ``ray_nodes``).
    env_steps_ : int
        Environment steps taken in all (a warm start's warm-up episodes included).

    Examples
    --------
    >>> ARS(n_directions=4, seed=1).get_params()["n_directions"]
    4
    """

    state_file = STATE_JSON

    def __init__(self, *, n_directions: int = 8, top_directions: int | None = None, step_size: float = 0.02,
                 noise: float = 0.03, episodes: int = 1, horizon: int | None = None,
                 alive_bonus_offset: float = 0.0, normalize: bool = True,
                 dense: bool = False, warmup_episodes: int = 2, seed: int = 0, n_workers: int = 1,
                 executor: str = "process", ray_address: str | None = None,
                 checkpoint_dir: str | Path | None = None) -> None:
        self.n_directions = n_directions
        self.top_directions = top_directions
        self.step_size = step_size
        self.noise = noise
        self.episodes = episodes
        self.horizon = horizon
        self.alive_bonus_offset = alive_bonus_offset
        self.normalize = normalize
        self.dense = dense
        self.warmup_episodes = warmup_episodes
        self.seed = seed
        self.n_workers = n_workers
        self.executor = executor
        self.ray_address = ray_address
        self.checkpoint_dir = checkpoint_dir

    def _validate_params(self) -> int:
        check_int(self.n_directions, "n_directions", "ARS", high=100_000)
        top = self.n_directions if self.top_directions is None else self.top_directions
        check_int(top, "top_directions", "ARS", high=self.n_directions)
        check_float(self.step_size, "step_size", "ARS", low=0.0, low_open=True)
        check_float(self.noise, "noise", "ARS", low=0.0, low_open=True)
        check_int(self.episodes, "episodes", "ARS")
        if self.horizon is not None:
            check_int(self.horizon, "horizon", "ARS")
        check_float(self.alive_bonus_offset, "alive_bonus_offset", "ARS", low=-np.inf)
        check_int(self.seed, "seed", "ARS", low=0)
        check_int(self.warmup_episodes, "warmup_episodes", "ARS", low=0)
        check_int(self.n_workers, "n_workers", "ARS", high=1024)
        check_choice(self.executor, "executor", "ARS", EXECUTORS)
        return int(top)

    def _config(self) -> dict[str, Any]:
        keep = ("n_directions", "top_directions", "step_size", "noise", "episodes", "horizon", "alive_bonus_offset",
                "normalize", "dense", "warmup_episodes", "seed")
        return {k: getattr(self, k) for k in keep}

    def fit(self, program: Program | Controller | str, env_fn: EnvFn, *, steps: int | None = None,
            iterations: int | None = None, resume: bool = False,
            progress: Callable[[dict[str, Any]], None] | None = None) -> ARS:
        """Search from ``program`` (a program, a controller, or ``'linear'``: zeros) until ``steps`` environment
        steps or ``iterations`` iterations are done (whichever is given; both: the first reached).

        ``env_fn(seed) -> gymnasium.Env`` with a box action space. ``progress`` gets each iteration's history row.
        """
        top = self._validate_params()
        if steps is None and iterations is None:
            raise InterpRLError("ARS.fit needs steps or iterations.")
        if steps is not None:
            check_int(steps, "steps", "ARS.fit", low=0)
        if iterations is not None:
            check_int(iterations, "iterations", "ARS.fit", low=0)
        if isinstance(program, Controller):
            program = program.program
        dense = self.dense
        if isinstance(program, str):  # a kind's name: its all-zero program, from scratch
            program = _from_scratch(program, env_fn)
            dense = True
        layout = ParameterLayout.of(program, dense=dense)
        self.ray_nodes_: set[str] = set()
        rng = np.random.default_rng(self.seed)
        theta = layout.theta()
        obs_dim = int(program.obs_dim)
        stats: tuple[float, np.ndarray, np.ndarray] = (0.0, np.zeros(obs_dim), np.zeros(obs_dim))
        history: list[dict[str, Any]] = []
        iteration, env_steps, seconds = 0, 0, 0.0
        ckpt = Path(self.checkpoint_dir) if self.checkpoint_dir is not None else None
        if resume:
            if ckpt is None or not (ckpt / STATE_JSON).is_file():
                raise InterpRLError(f"Nothing to resume: no {STATE_JSON} in {str(ckpt)!r}.")
            state = json.loads((ckpt / STATE_JSON).read_text())
            if state["config"] != json.loads(json.dumps(self._config())):
                raise InterpRLError(f"The ARS state in {str(ckpt)!r} was made with other settings "
                                    f"({state['config']}); resume with the same ones.")
            with np.load(ckpt / state["arrays"], allow_pickle=False) as arr:
                theta = np.array(arr["theta"])
                stats = (float(state["obs_count"]), np.array(arr["obs_mean"]), np.array(arr["obs_m2"]))
                if theta.shape != (layout.size,):
                    raise InterpRLError(f"The ARS state in {str(ckpt)!r} has {theta.size} parameters; the start "
                                        f"has {layout.size}: resume from the same start.")
            rng.bit_generator.state = state["rng"]
            history, iteration, env_steps = state["history"], state["iteration"], state["env_steps"]
            seconds = history[-1]["seconds"] if history else 0.0
        horizon = self.horizon or _horizon(env_fn, self.seed)
        t0 = time.perf_counter() - seconds
        if not resume and self.normalize and self.warmup_episodes and np.any(theta != 0.0):
            stats, env_steps, theta = warm_up(program, layout, env_fn, self.seed, self.warmup_episodes, horizon)
        while (steps is None or env_steps < steps) and (iterations is None or iteration < iterations):
            mean, std = _moments(stats) if self.normalize else (np.zeros(obs_dim), np.ones(obs_dim))
            deltas = rng.standard_normal((self.n_directions, layout.size))
            seeds = [[_episode_seed(self.seed, iteration, k, e) for e in range(self.episodes)]
                     for k in range(self.n_directions)]
            rows = self._run(layout, theta, deltas, seeds, mean, std, horizon, env_fn)
            plus = np.array([r["plus"] for r in rows])
            minus = np.array([r["minus"] for r in rows])
            theta, sigma_r = ars_update(theta, plus, minus, deltas, self.step_size, top)
            for r in rows:
                stats = _merge(_merge(stats, r["plus_stats"]), r["minus_stats"])
                env_steps += r["steps"]
            iteration += 1
            row = {"iteration": iteration, "env_steps": env_steps,
                   "return_mean": float(np.concatenate([plus, minus]).mean()),
                   "return_max": float(max(plus.max(), minus.max())), "update_std": sigma_r,
                   "seconds": time.perf_counter() - t0}
            if self.executor == "ray":
                row["ray_nodes"] = len(self.ray_nodes_)
            history.append(row)
            if ckpt is not None:
                self._save(ckpt, theta, stats, rng, history, iteration, env_steps)
            if progress is not None:
                progress(SearchStep(iteration=iteration, return_mean=row["return_mean"], details=row))
        mean, std = _moments(stats) if self.normalize else (np.zeros(obs_dim), np.ones(obs_dim))
        self.program_ = layout.program_for(theta, mean, std)
        self.theta_, self.obs_mean_, self.obs_std_ = theta, mean, std
        self.history_, self.n_parameters_, self.env_steps_ = history, layout.size, env_steps
        self.layout_ = layout
        return self

    def _run(self, layout: ParameterLayout, theta: np.ndarray, deltas: np.ndarray, seeds: list[list[int]],
             mean: np.ndarray, std: np.ndarray, horizon: int, env_fn: EnvFn) -> list[dict[str, Any]]:
        """Every direction's results, in direction order, from ``n_workers`` contiguous chunks."""
        chunks = ars_chunks(len(deltas), self.n_workers)
        specs = [{"layout": layout, "theta": theta, "deltas": deltas[c], "noise": self.noise, "mean": mean,
                  "std": std, "seeds": [seeds[k] for k in c], "horizon": horizon,
                  "alive_bonus_offset": self.alive_bonus_offset, "env_fn": env_fn}
                 for c in chunks]
        return map_chunks(evaluate_directions, specs, n_workers=self.n_workers, executor=self.executor,
                          ray_address=self.ray_address, nodes=self.ray_nodes_)

    def _save(self, ckpt: Path, theta: np.ndarray, stats: tuple[float, np.ndarray, np.ndarray], rng: Any,
              history: list[dict[str, Any]], iteration: int, env_steps: int) -> None:
        """The arrays as ``ars_state_<iteration>.npz``, then the JSON naming them (atomic; older arrays removed)."""
        save_search_state(ckpt, STATE_JSON.removesuffix(".json"), iteration,
                          {"theta": theta, "obs_mean": stats[1], "obs_m2": stats[2]},
                          {"config": self._config(), "iteration": iteration, "env_steps": env_steps,
                           "obs_count": stats[0], "rng": rng.bit_generator.state, "history": history})


def warm_up(program: Any, layout: ParameterLayout, env_fn: EnvFn, seed: int, episodes: int, horizon: int
            ) -> tuple[tuple[float, np.ndarray, np.ndarray], int, np.ndarray]:
    """A warm start's observation statistics from ``episodes`` episodes of it, the steps they took, and its
    parameters re-expressed in the normalised units those statistics define (a search then perturbs around the
    start itself, not around its numbers read as normalised)."""
    stats: tuple[float, np.ndarray, np.ndarray] = (0.0, np.zeros(program.obs_dim), np.zeros(program.obs_dim))
    steps = 0
    env = env_fn(seed)
    try:
        for e in range(episodes):
            _, n, seen = _episode(program, env, _episode_seed(seed, WARMUP, 0, e), horizon)
            stats, steps = _merge(stats, seen), steps + n
    finally:
        env.close()
    return stats, steps, layout.theta_for(*_moments(stats))


def map_chunks(fn: Callable[[dict[str, Any]], list[dict[str, Any]]], specs: list[dict[str, Any]], *,
               n_workers: int, executor: str, ray_address: str | None, nodes: set[str]) -> list[dict[str, Any]]:
    """``fn`` on every chunk's spec on ``n_workers`` forked processes or Ray tasks; the rows in chunk order."""
    if executor == "ray":
        parts = ray_map(fn, specs, workers=n_workers, address=ray_address, nodes=nodes)
    else:
        parts = side_by_side([lambda _p, s=s: fn(s) for s in specs], n_workers)
    return [row for part in parts for row in part]


def save_search_state(ckpt: Path, stem: str, iteration: int, arrays: dict[str, np.ndarray],
                      state: dict[str, Any]) -> None:
    """A search's arrays as ``<stem>_<iteration>.npz``, then ``<stem>.json`` naming them (both atomic; the JSON
    last, so it never names arrays not yet written), older arrays removed."""
    name = f"{stem}_{iteration}.npz"

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    atomic_write(ckpt / name, write)
    atomic_write_text(ckpt / f"{stem}.json", json.dumps({**state, "arrays": name}, indent=1) + "\n")
    for old in ckpt.glob(f"{stem}_*.npz"):
        if old.name != name:
            old.unlink(missing_ok=True)


def _moments(stats: tuple[float, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (1 where it is below 1e-8, as the paper's code) of the observations seen."""
    n, mean, m2 = stats
    if n < 2:
        return np.zeros_like(mean) if n == 0 else mean.copy(), np.ones_like(mean)
    std = np.sqrt(m2 / n)
    return mean.copy(), np.where(std < 1e-8, 1.0, std)


def _episode_seed(seed: int, iteration: int, direction: int, episode: int) -> int:
    return int(np.random.SeedSequence([seed, iteration, direction, episode]).generate_state(1)[0])


def _horizon(env_fn: EnvFn, seed: int) -> int:
    env = env_fn(seed)
    try:
        return int(getattr(getattr(env, "spec", None), "max_episode_steps", None) or 1000)
    finally:
        env.close()


def _from_scratch(kind: str, env_fn: EnvFn) -> Program:
    """The all-zero program of ``kind`` (:meth:`ProgramBase.from_scratch`) for the environment's spaces."""
    from interp_rl.program import PROGRAMS

    cls = PROGRAMS.get(kind)
    expected = "a program, a controller or the name of a kind that starts from scratch (linear)"
    if cls is None or not cls.kind_can("from_scratch"):
        raise bad_value("program", "ARS.fit", expected, kind)
    env = env_fn(0)
    try:
        obs_dim = int(np.prod(env.observation_space.shape))
        space = env.action_space
        if not hasattr(space, "low"):
            raise InterpRLError("ARS searches continuous actions; the environment's actions are discrete.")
        return cls.from_scratch(obs_dim, np.asarray(space.low, dtype=np.float64),
                                np.asarray(space.high, dtype=np.float64))
    finally:
        env.close()


_SEARCH_NAMES = {"ars": "ARS", "cmaes": "CMA-ES"}
_ZOO_NAMES = {"n_delta": "n_directions", "n_top": "top_directions", "learning_rate": "step_size",
              "delta_std": "noise", "alive_bonus_offset": "alive_bonus_offset", "normalize": "normalize"}


def ars_settings(table: Mapping[str, Any]) -> dict[str, Any]:
    """A task's ARS entry in the zoo's names (``envs/hyperparams/ars.yml``, the paper's table: ``n_delta``,
    ``n_top``, ``learning_rate``, ``delta_std``, ...) as :class:`ARS` parameters: ``n_delta`` is ``n_directions``,
    ``n_top`` ``top_directions``, ``learning_rate`` ``step_size`` and ``delta_std`` ``noise``; other keys (the
    policy, the number of environments) are not ARS's.

    >>> ars_settings({"n_delta": 32, "n_top": 4, "delta_std": 0.03, "learning_rate": 0.02, "policy": "LinearPolicy"})
    {'n_directions': 32, 'top_directions': 4, 'noise': 0.03, 'step_size': 0.02, 'normalize': False}
    """
    settings = {_ZOO_NAMES[k]: v for k, v in table.items() if k in _ZOO_NAMES}
    settings["normalize"] = bool(settings.get("normalize", False))
    return settings


def teacher_ars_settings(teacher: Any) -> dict[str, Any]:
    """The ARS settings of ``teacher``'s task, from its ``default_hyperparams("ars")`` (teachers loaded by
    :func:`envs.load_teacher` have it); ARS's own defaults for a teacher without, or a task without an entry."""
    table = getattr(teacher, "default_hyperparams", None)
    if not callable(table):
        return {}
    try:
        return ars_settings(table("ars"))
    except InterpRLError:
        return {}


def ars_chunks(n_directions: int, workers: int) -> Sequence[np.ndarray]:
    """The contiguous chunks of directions ``workers`` tasks run (for tests and timing)."""
    return [c for c in np.array_split(np.arange(n_directions), max(1, workers)) if len(c)]


def ars_update(theta: np.ndarray, plus: np.ndarray, minus: np.ndarray, deltas: np.ndarray, step_size: float,
               top: int) -> tuple[np.ndarray, float]:
    """One update of augmented random search (Mania et al., 2018, Algorithm 2, line 7), the one every ARS here
    makes (:class:`ARS` on a program's parameters, :class:`~distill.leaf_search.LeafTuner` on a tree's leaves).

    ``plus[k]`` and ``minus[k]`` are the returns of ``theta + nu * deltas[k]`` and ``theta - nu * deltas[k]``; the
    ``top`` directions by ``max(plus, minus)`` (ties in direction order) step ``theta`` by ``step_size / (top *
    sigma)`` times their return differences times their directions, ``sigma`` the standard deviation of those
    ``2 top`` returns (1 when they are all equal). Returns ``(new theta, sigma)``.

    >>> theta, sigma = ars_update(np.zeros(2), np.array([3.0, 1.0]), np.array([1.0, 1.0]), np.eye(2), 0.5, 1)
    >>> theta.tolist(), sigma  # direction 0 (3 > 1): 0.5 / (1 * std([3, 1])) * (3 - 1) * e0
    ([1.0, 0.0], 1.0)
    """
    best = np.argsort(-np.maximum(plus, minus), kind="stable")[:top]
    sigma = float(np.concatenate([plus[best], minus[best]]).std())
    step = (plus[best] - minus[best]) @ deltas[best]
    return theta + step_size / (top * (sigma if sigma > 0 else 1.0)) * step, sigma


def run_ars_job(ars: Any, start: Program | Controller | str, env_fn: EnvFn, out: str | Path, *, steps: int,
                task: str, features: Sequence[Any] = (), actions: Sequence[Any] = (), resume: bool = False,
                eval_episodes: int = 5, progress: Callable[[dict[str, Any]], None] | None = None
                ) -> dict[str, Any]:
    """Search from ``start`` for ``steps`` environment steps and write a controller folder to ``out``, as
    ``interp-rl distill`` does: ``controller.json``, the exports, ``rules.txt``, the picture and ``metrics.json``
    (the return curve, the environment steps, the wall time; written last). The state is kept in
    ``out/checkpoint`` after every iteration; ``resume`` continues it. Returns the metrics. ``ars`` is an
    :class:`ARS` or a :class:`distill.cmaes.CMAES` (the same contract)."""
    from sklearn.base import clone

    from distill.folder import METRICS_FILE, write_controller_files
    from interp_rl.rollouts import evaluate

    out = Path(out)
    if (out / METRICS_FILE).is_file() and not resume:
        raise InterpRLError(f"{str(out)!r} already holds a finished controller; choose another --out.")
    state_file = getattr(ars, "state_file", STATE_JSON)
    search = "cmaes" if state_file != STATE_JSON else "ars"
    if (out / "checkpoint" / state_file).is_file() and not resume:
        raise InterpRLError(f"{str(out)!r} holds an unfinished {_SEARCH_NAMES[search]} run; continue it with "
                            "--resume or choose another --out.")
    out.mkdir(parents=True, exist_ok=True)
    kind = start if isinstance(start, str) else (start.program if isinstance(start, Controller) else start).kind
    est = clone(ars).set_params(checkpoint_dir=out / "checkpoint")
    resume = resume and (out / "checkpoint" / state_file).is_file()
    est.fit(start, env_fn, steps=steps, resume=resume, progress=progress)
    held = evaluate(est.program_, env_fn, episodes=eval_episodes, seed=int(ars.seed) + SELECTION_SEED_OFFSET, task=task)
    config = {**est._config(), "n_workers": est.n_workers, "executor": est.executor, "steps": steps}
    controller = Controller(est.program_, list(features), list(actions), task=task,
                            metadata={"method": search, "start": kind, "config": config})
    controller.save(out / "controller.json")
    last = est.history_[-1] if est.history_ else {"env_steps": 0, "seconds": 0.0, "iteration": 0}
    metrics = {"method": search, "kind": est.program_.kind, "start": kind, "task": task, "config": config,
               "env_steps": est.env_steps_, "iterations": last["iteration"], "wall_seconds": last["seconds"],
               "n_parameters": est.n_parameters_, "eval_return_mean": held.mean_return,
               "eval_return_std": held.std_return, "eval_episodes": eval_episodes,
               **({"ray_nodes": len(est.ray_nodes_)} if est.executor == "ray" else {}),
               "obs_mean": est.obs_mean_.tolist(), "obs_std": est.obs_std_.tolist(), "history": est.history_}
    write_controller_files(controller, out, metrics, f"{task} {_SEARCH_NAMES[search]} {est.program_.kind}")
    return metrics
