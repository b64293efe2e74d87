"""CMA-ES over a transparent program's own parameters: the search to try where augmented random search stalls.

:class:`CMAES` searches the same numbers as :class:`distill.ars.ARS` (a linear policy's intercept and
coefficients, a tree's leaves, a mixture's experts and linear router; :class:`distill.ars.ParameterLayout`),
with the covariance matrix adaptation evolution strategy (Hansen and Ostermeier, 2001; the
``(mu/mu_w, lambda)`` form with rank-one and rank-mu updates and cumulative step-size adaptation, as in
Hansen's tutorial, arXiv:1604.00772, whose defaults it takes). Each generation:

1. ``population`` candidates ``m + sigma * B D z_k`` are drawn (``z_k`` standard normal, from one master
   generator, in order);
2. each runs ``episodes`` episodes (seeds derived from ``(seed, generation, k)``), its return the mean;
3. the best half, weighted by rank, moves the mean ``m``, updates the evolution paths, the covariance ``C``
   and the step size ``sigma``;
4. with ``normalize``, the observations visited update the running mean and standard deviation the next
   generation's policies read (as ARS's V2).

ARS estimates one gradient per iteration from a few directions; on Swimmer it stalls in the gait worth ~50
on some seeds, where a search that adapts its sampling distribution can still leave it. The returned program
is the distribution's mean (not the luckiest candidate), folded into raw units, of the same kind as the
start with its zeros kept. Results do not depend on the number of workers; the state (arrays and JSON, no
pickle) is saved after every generation and ``fit(..., resume=True)`` continues to the same numbers as a
run never stopped.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from distill.ars import (
    EXECUTORS,
    EnvFn,
    ParameterLayout,
    _episode,
    _episode_seed,
    _from_scratch,
    _horizon,
    _merge,
    _moments,
    ars_chunks,
    map_chunks,
    save_search_state,
    warm_up,
)
from distill.events import SearchStep
from interp_rl.errors import InterpRLError
from interp_rl.program import Controller, Program
from interp_rl.validation import check_choice, check_float, check_int

__all__ = ["CMAES", "evaluate_candidates", "search_for"]

STATE_JSON = "cmaes_state.json"


def evaluate_candidates(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one chunk of candidates (a worker's task): each parameter vector on its episodes.

    ``spec`` holds ``layout``, ``thetas`` ``(k, n)``, ``mean``, ``std``, ``seeds`` (``k`` lists), ``horizon``,
    ``alive_bonus_offset`` and ``env_fn``; everything in it pickles, for Ray.
    """
    layout, env = spec["layout"], spec["env_fn"](int(spec["seeds"][0][0]) if len(spec["seeds"]) else 0)
    out = []
    try:
        for theta, seeds in zip(spec["thetas"], spec["seeds"], strict=True):
            prog = layout.program_for(theta, spec["mean"], spec["std"])
            returns, steps = [], 0
            stats = (0.0, np.zeros_like(spec["mean"]), np.zeros_like(spec["mean"]))
            for s in seeds:
                r, n, st = _episode(prog, env, int(s), spec["horizon"])
                returns.append(r + spec["alive_bonus_offset"] * n)
                steps += n
                stats = _merge(stats, st)
            out.append({"return": float(np.mean(returns)), "steps": steps, "stats": stats})
    finally:
        env.close()
    return out


class CMAES(BaseEstimator):
    """CMA-ES over a program's affine maps; see the module docstring.

    Parameters
    ----------
    population : int, default=None
        Candidates per generation ``lambda``; ``None``: ``4 + floor(3 ln n)`` for ``n`` parameters.
    sigma : float, default=0.5
        The initial step size, in the units the maps read (normalised observations with ``normalize``).
    episodes : int, default=1
        Episodes per candidate (their mean return is its fitness).
    horizon : int, default=None
        Steps per episode at most; ``None``: the environment's time limit.
    alive_bonus_offset : float, default=0.0
        Added to the reward of every step while searching (as ARS's V2-t: -1 removes Hopper's survival bonus).
    normalize : bool, default=False
        Maps read observations normalised by their running mean and std (as ARS's V2), or raw ones (V1).
    dense : bool, default=False
        Search every coefficient of a linear start, not only its non-zero ones (a start from scratch is
        always dense).
    warmup_episodes : int, default=2
        With ``normalize``, episodes a start that is not all zeros runs first to set the statistics.
    seed : int, default=0
        Seeds the candidates and the episodes.
    n_workers : int, default=1
        Processes (or Ray tasks) the candidates are spread over; the result does not depend on it.
    executor : {'process', 'ray'}, default='process'
        Forked local processes, or Ray tasks.
    ray_address : str, default=None
        A running Ray cluster's address (with ``executor='ray'``).
    checkpoint_dir : str or Path, default=None
        Where the state is written after every generation (``cmaes_state.json`` and ``cmaes_state_<i>.npz``).

    Attributes
    ----------
    program_ : Program
        The distribution's final mean as a program (same kind and structure as the start, raw observations).
    history_ : list of dict
        Per generation: ``iteration``, ``env_steps`` (total), ``return_mean`` and ``return_max`` (of the
        candidates, ``alive_bonus_offset`` included), ``sigma`` and ``seconds`` (total).
    obs_mean_, obs_std_ : ndarray of shape (obs_dim,)
        The statistics at the end (folded into ``program_``).
    n_parameters_ : int
        Numbers searched.
    env_steps_ : int
        Environment steps taken in all.

    Examples
    --------
    >>> CMAES(population=8).get_params()["population"]
    8
    """

    state_file = STATE_JSON

    def __init__(self, *, population: int | None = None, sigma: float = 0.5, episodes: int = 1,
                 horizon: int | None = None, alive_bonus_offset: float = 0.0, normalize: bool = False,
                 dense: bool = False, warmup_episodes: int = 2, seed: int = 0, n_workers: int = 1,
                 executor: str = "process", ray_address: str | None = None,
                 checkpoint_dir: str | Path | None = None) -> None:
        self.population = population
        self.sigma = sigma
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

    def _validate_params(self) -> None:
        if self.population is not None:
            check_int(self.population, "population", "CMAES", low=4, high=100_000)
        check_float(self.sigma, "sigma", "CMAES", low=0.0, low_open=True)
        check_int(self.episodes, "episodes", "CMAES")
        if self.horizon is not None:
            check_int(self.horizon, "horizon", "CMAES")
        check_float(self.alive_bonus_offset, "alive_bonus_offset", "CMAES", low=-np.inf)
        check_int(self.warmup_episodes, "warmup_episodes", "CMAES", low=0)
        check_int(self.seed, "seed", "CMAES", low=0)
        check_int(self.n_workers, "n_workers", "CMAES", high=1024)
        check_choice(self.executor, "executor", "CMAES", EXECUTORS)

    def _config(self) -> dict[str, Any]:
        keep = ("population", "sigma", "episodes", "horizon", "alive_bonus_offset", "normalize", "dense",
                "warmup_episodes", "seed")
        return {"search": "cmaes", **{k: getattr(self, k) for k in keep}}

    def fit(self, program: Program | Controller | str, env_fn: EnvFn, *, steps: int | None = None,
            iterations: int | None = None, resume: bool = False,
            progress: Callable[[dict[str, Any]], None] | None = None) -> CMAES:
        """Search from ``program`` (a program, a controller, or ``'linear'``: zeros) until ``steps`` environment
        steps or ``iterations`` generations are done (whichever is given; both: the first reached).

        ``env_fn(seed) -> gymnasium.Env`` with a box action space. ``progress`` gets each generation's row.
        """
        self._validate_params()
        if steps is None and iterations is None:
            raise InterpRLError("CMAES.fit needs steps or iterations.")
        if steps is not None:
            check_int(steps, "steps", "CMAES.fit", low=0)
        if iterations is not None:
            check_int(iterations, "iterations", "CMAES.fit", low=0)
        if isinstance(program, Controller):
            program = program.program
        dense = self.dense
        if isinstance(program, str):
            program = _from_scratch(program, env_fn)
            dense = True
        layout = ParameterLayout.of(program, dense=dense)
        n = layout.size
        lam = int(self.population or 4 + math.floor(3 * math.log(n)))
        mu = lam // 2
        w = math.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
        w /= w.sum()
        mueff = 1.0 / float(np.sum(w**2))
        cc = (4 + mueff / n) / (n + 4 + 2 * mueff / n)
        cs = (mueff + 2) / (n + mueff + 5)
        c1 = 2 / ((n + 1.3) ** 2 + mueff)
        cmu = min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + mueff))
        damps = 1 + 2 * max(0.0, math.sqrt((mueff - 1) / (n + 1)) - 1) + cs
        chi_n = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n**2))

        self.ray_nodes_: set[str] = set()
        rng = np.random.default_rng(self.seed)
        obs_dim = int(program.obs_dim)
        stats: tuple[float, np.ndarray, np.ndarray] = (0.0, np.zeros(obs_dim), np.zeros(obs_dim))
        m, sigma = layout.theta(), float(self.sigma)
        cov, pc, ps = np.eye(n), np.zeros(n), np.zeros(n)
        history: list[dict[str, Any]] = []
        generation, env_steps, seconds = 0, 0, 0.0
        ckpt = Path(self.checkpoint_dir) if self.checkpoint_dir is not None else None
        if resume:
            if ckpt is None or not (ckpt / STATE_JSON).is_file():
                raise InterpRLError(f"Nothing to resume: no {STATE_JSON} in {str(ckpt)!r}.")
            state = json.loads((ckpt / STATE_JSON).read_text())
            if state["config"] != json.loads(json.dumps(self._config())):
                raise InterpRLError(f"The CMA-ES state in {str(ckpt)!r} was made with other settings "
                                    f"({state['config']}); resume with the same ones.")
            with np.load(ckpt / state["arrays"], allow_pickle=False) as arr:
                m, cov, pc, ps = (np.array(arr[k]) for k in ("mean", "cov", "pc", "ps"))
                stats = (float(state["obs_count"]), np.array(arr["obs_mean"]), np.array(arr["obs_m2"]))
            if m.shape != (n,):
                raise InterpRLError(f"The CMA-ES state in {str(ckpt)!r} has {m.size} parameters; the start has "
                                    f"{n}: resume from the same start.")
            sigma = float(state["sigma"])
            rng.bit_generator.state = state["rng"]
            history, generation, env_steps = state["history"], state["iteration"], state["env_steps"]
            seconds = history[-1]["seconds"] if history else 0.0
        horizon = self.horizon or _horizon(env_fn, self.seed)
        t0 = time.perf_counter() - seconds
        if not resume and self.normalize and self.warmup_episodes and np.any(m != 0.0):
            stats, env_steps, m = warm_up(program, layout, env_fn, self.seed, self.warmup_episodes, horizon)
        while (steps is None or env_steps < steps) and (iterations is None or generation < iterations):
            mean, std = _moments(stats) if self.normalize else (np.zeros(obs_dim), np.ones(obs_dim))
            eigval, basis = np.linalg.eigh(cov)
            d = np.sqrt(np.maximum(eigval, 1e-20))
            z = rng.standard_normal((lam, n))
            y = (z * d) @ basis.T  # rows: B D z_k, distributed N(0, C)
            seeds = [[_episode_seed(self.seed, generation, k, e) for e in range(self.episodes)] for k in range(lam)]
            rows = self._run(layout, m + sigma * y, seeds, mean, std, horizon, env_fn)
            returns = np.array([r["return"] for r in rows])
            order = np.argsort(-returns, kind="stable")[:mu]  # maximising the return
            y_w = w @ y[order]
            m = m + sigma * y_w
            inv_sqrt = (basis / d) @ basis.T
            ps = (1 - cs) * ps + math.sqrt(cs * (2 - cs) * mueff) * (inv_sqrt @ y_w)
            hsig = float(np.linalg.norm(ps) / math.sqrt(1 - (1 - cs) ** (2 * (generation + 1))) / chi_n
                         < 1.4 + 2 / (n + 1))
            pc = (1 - cc) * pc + hsig * math.sqrt(cc * (2 - cc) * mueff) * y_w
            rank_mu = (y[order].T * w) @ y[order]
            cov = ((1 - c1 - cmu) * cov + c1 * (np.outer(pc, pc) + (1 - hsig) * cc * (2 - cc) * cov)
                   + cmu * rank_mu)
            cov = (cov + cov.T) / 2
            sigma *= math.exp((cs / damps) * (float(np.linalg.norm(ps)) / chi_n - 1))
            for r in rows:
                stats = _merge(stats, r["stats"])
                env_steps += r["steps"]
            generation += 1
            row = {"iteration": generation, "env_steps": env_steps, "return_mean": float(returns.mean()),
                   "return_max": float(returns.max()), "sigma": sigma, "seconds": time.perf_counter() - t0}
            history.append(row)
            if ckpt is not None:
                self._save(ckpt, m, sigma, cov, pc, ps, stats, rng, history, generation, env_steps)
            if progress is not None:
                progress(SearchStep(iteration=generation, return_mean=row["return_mean"], details=row))
        mean, std = _moments(stats) if self.normalize else (np.zeros(obs_dim), np.ones(obs_dim))
        self.program_ = layout.program_for(m, mean, std)
        self.theta_, self.sigma_, self.cov_ = m, sigma, cov
        self.obs_mean_, self.obs_std_ = mean, std
        self.history_, self.n_parameters_, self.env_steps_ = history, n, env_steps
        self.layout_ = layout
        return self

    def _run(self, layout: ParameterLayout, thetas: np.ndarray, seeds: list[list[int]], mean: np.ndarray,
             std: np.ndarray, horizon: int, env_fn: EnvFn) -> list[dict[str, Any]]:
        """Every candidate's result, in candidate order, from ``n_workers`` contiguous chunks."""
        chunks = ars_chunks(len(thetas), self.n_workers)
        specs = [{"layout": layout, "thetas": thetas[c], "mean": mean, "std": std, "seeds": [seeds[k] for k in c],
                  "horizon": horizon, "alive_bonus_offset": self.alive_bonus_offset, "env_fn": env_fn}
                 for c in chunks]
        return map_chunks(evaluate_candidates, specs, n_workers=self.n_workers, executor=self.executor,
                          ray_address=self.ray_address, nodes=self.ray_nodes_)

    def _save(self, ckpt: Path, m: np.ndarray, sigma: float, cov: np.ndarray, pc: np.ndarray, ps: np.ndarray,
              stats: tuple[float, np.ndarray, np.ndarray], rng: Any, history: list[dict[str, Any]],
              generation: int, env_steps: int) -> None:
        """The arrays as ``cmaes_state_<generation>.npz``, then the JSON naming them (atomic; older removed)."""
        save_search_state(ckpt, STATE_JSON.removesuffix(".json"), generation,
                          {"mean": m, "cov": cov, "pc": pc, "ps": ps, "obs_mean": stats[1], "obs_m2": stats[2]},
                          {"config": self._config(), "iteration": generation, "env_steps": env_steps, "sigma": sigma,
                           "obs_count": stats[0], "rng": rng.bit_generator.state, "history": history})


def search_for(search: str, teacher: Any, *, seed: int = 0, checkpoint_dir: str | Path | None = None) -> Any:
    """The return search ``search`` (``'ars'`` or ``'cmaes'``) with ``teacher``'s task settings: ARS with the
    task's whole ARS entry (``envs/hyperparams/ars.yml``); CMA-ES with its survival-bonus offset and its
    normalisation (V1 or V2), the rest CMA-ES's own defaults."""
    from distill.ars import ARS, teacher_ars_settings

    check_choice(search, "search", "search_for", ("ars", "cmaes"))
    settings = teacher_ars_settings(teacher)
    if search == "ars":
        return ARS(seed=seed, checkpoint_dir=checkpoint_dir, **settings)
    shared = {k: settings[k] for k in ("alive_bonus_offset", "normalize") if k in settings}
    return CMAES(seed=seed, checkpoint_dir=checkpoint_dir, **shared)
