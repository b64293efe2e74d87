"""Improve a distilled tree's leaves against the real return, by augmented random search.

Distillation copies the teacher's actions; what counts is the return. Once a
tree's structure is fixed, its leaf parameters (the constant actions and the
non-zero linear coefficients) are few, so they can be tuned directly on the
environment's return with augmented random search (ARS; Mania, Guy and Recht,
2018): perturb all parameters along random directions, roll out each ``±``
pair on the same episode, and step along the directions that improved the
return most. The structure, the sparsity pattern and thus the readability of
the tree are unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from distill.ars import ars_update
from distill.events import SearchStep
from distill.tree import TreePolicy
from interp_rl.errors import bad_value
from interp_rl.kinds.tree import TreeProgram
from interp_rl.rollouts import evaluate, run_episodes
from interp_rl.seeds import SELECTION_SEED_OFFSET, TUNING_SEED_OFFSET
from interp_rl.validation import check_float, check_int

__all__ = ["LeafTuner"]

EnvFn = Callable[[int], Any]


class _LeafParams:
    """Flatten a tree's leaf parameters into a vector and back (structure and sparsity fixed)."""

    def __init__(self, program: TreeProgram, feature_scale: np.ndarray) -> None:
        self.program = program
        leaves = program.leaves
        self.intercept_idx = [(int(n), o) for n in leaves for o in range(program.act_dim)]
        self.coef_idx = [tuple(int(v) for v in i) for i in np.argwhere(program.coef != 0.0)]
        # Perturbations move every parameter by a similar amount of *action*:
        # a coefficient of feature j by noise / scale_j.
        self.scale = np.concatenate([
            np.ones(len(self.intercept_idx)),
            np.array([1.0 / feature_scale[j] for _, _, j in self.coef_idx]),
        ])

    def get(self, program: TreeProgram | None = None) -> np.ndarray:
        p = program or self.program
        return np.concatenate([
            np.array([p.intercept[n, o] for n, o in self.intercept_idx]),
            np.array([p.coef[n, o, j] for n, o, j in self.coef_idx]),
        ])

    def arrays(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        intercept = self.program.intercept.copy()
        coef = self.program.coef.copy()
        k = len(self.intercept_idx)
        for (n, o), v in zip(self.intercept_idx, theta[:k], strict=True):
            intercept[n, o] = v
        for (n, o, j), v in zip(self.coef_idx, theta[k:], strict=True):
            coef[n, o, j] = v if v != 0.0 else np.finfo(float).tiny  # keep the sparsity pattern
        return intercept, coef

    def program_for(self, theta: np.ndarray) -> TreeProgram:
        intercept, coef = self.arrays(theta)
        p = self.program
        return p.replace(intercept=intercept, coef=coef)


def _batched_returns(
    program: TreeProgram, intercepts: np.ndarray, coefs: np.ndarray, seed: int, env_fn: EnvFn,
) -> np.ndarray:
    """Run policy ``k`` (leaf parameters ``intercepts[k]``, ``coefs[k]``) for one episode each, all on seed ``seed``.

    One batch through the rollout engine: episode ``k`` is keyed to parameter set ``k``.
    Returns the ``k`` returns.
    """
    k = len(intercepts)

    def act(x: np.ndarray, episodes: np.ndarray) -> np.ndarray:
        leaf = program.apply(x)
        y = intercepts[episodes, leaf] + np.einsum("iaj,ij->ia", coefs[episodes, leaf], x)
        return program.clip(y)

    return np.asarray(run_episodes(act, env_fn, [seed] * k, n_envs=k).returns)


class LeafTuner(BaseEstimator):
    """Tune a fitted tree's leaf parameters on the return (ARS), keeping its structure.

    Parameters
    ----------
    n_iter : int, default=50
        ARS updates (0: no tuning; the tree is kept as it is).
    n_directions : int, default=8
        Random directions per update (each rolled out ``+`` and ``-``).
    top_directions : int, default=None
        Directions used in the update (the best by ``max(r+, r-)``); None: all.
    step_size : float, default=0.02
        ARS step size.
    noise : float, default=0.03
        Perturbation scale, in action units.
    eval_every : int, default=5
        Updates between held-out evaluations of the current parameters.
    eval_episodes : int, default=5
        Held-out episodes (seeds ``seed + 50000 ...``) scoring each candidate;
        the best candidate, the starting one included, is kept.
    seed : int, default=0
        Seeds the directions and the episodes.

    Attributes
    ----------
    student_ : TreePolicy
        The tree with the best held-out return.
    history_ : list of dict
        ``iteration``, ``return_mean`` (held-out), ``seconds``.
    initial_return_, best_return_ : float
        Held-out return before and after tuning.
    """

    def __init__(
        self,
        *,
        n_iter: int = 50,
        n_directions: int = 8,
        top_directions: int | None = None,
        step_size: float = 0.02,
        noise: float = 0.03,
        eval_every: int = 5,
        eval_episodes: int = 5,
        seed: int = 0,
    ) -> None:
        self.n_iter = n_iter
        self.n_directions = n_directions
        self.top_directions = top_directions
        self.step_size = step_size
        self.noise = noise
        self.eval_every = eval_every
        self.eval_episodes = eval_episodes
        self.seed = seed

    def _validate_params(self) -> None:
        """Check every setting; a bad one raises the one-line template error."""
        owner = "LeafTuner"
        check_int(self.n_iter, "n_iter", owner, low=0)
        n_dir = check_int(self.n_directions, "n_directions", owner)
        if self.top_directions is not None:
            check_int(self.top_directions, "top_directions", owner, high=n_dir)
        check_float(self.step_size, "step_size", owner, low_open=True)
        check_float(self.noise, "noise", owner, low_open=True)
        check_int(self.eval_every, "eval_every", owner)
        check_int(self.eval_episodes, "eval_episodes", owner)
        check_int(self.seed, "seed", owner, low=0)

    def fit(
        self,
        student: TreePolicy,
        env_fn: EnvFn,
        *,
        feature_scale: np.ndarray | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> LeafTuner:
        """Tune ``student`` (a fitted :class:`TreePolicy`) in environments from ``env_fn(seed)``.

        ``feature_scale`` (one positive number per observation feature, e.g. the
        standard deviation over visited states) sets how far each linear
        coefficient is perturbed; estimated from a rollout when omitted.
        """
        self._validate_params()
        n_dir = self.n_directions
        top = n_dir if self.top_directions is None else self.top_directions
        step, noise, eval_every, episodes = self.step_size, self.noise, self.eval_every, self.eval_episodes
        if not isinstance(student, TreePolicy) or not hasattr(student, "tree_"):
            raise bad_value("student", "LeafTuner.fit", "a fitted TreePolicy", type(student).__name__)
        program = student.tree_
        if feature_scale is None:
            from interp_rl.rollouts import collect

            visited = collect(student, env_fn, 1000, self.seed + TUNING_SEED_OFFSET - 1).observations
            feature_scale = visited.std(axis=0)
        scale = np.where(np.asarray(feature_scale, dtype=np.float64) > 1e-8, feature_scale, 1.0)
        params = _LeafParams(program, scale)
        theta = params.get()
        rng = np.random.default_rng([self.seed, 7])

        def score(th: np.ndarray) -> float:
            cand = student.with_program(params.program_for(th))
            return evaluate(cand, env_fn, episodes, seed=self.seed + SELECTION_SEED_OFFSET).mean_return

        best_theta, best = theta.copy(), score(theta)
        self.initial_return_ = best
        history: list[dict[str, Any]] = [{"iteration": 0, "return_mean": best, "seconds": 0.0}]
        t0 = time.perf_counter()
        for it in range(1, self.n_iter + 1):
            delta = rng.standard_normal((n_dir, len(theta))) * params.scale
            cands = np.concatenate([theta + noise * delta, theta - noise * delta])
            arrays = [params.arrays(c) for c in cands]
            intercepts = np.stack([a[0] for a in arrays])
            coefs = np.stack([a[1] for a in arrays])
            ep_seed = self.seed + TUNING_SEED_OFFSET + it
            rets = _batched_returns(program, intercepts, coefs, ep_seed, env_fn)
            theta, _ = ars_update(theta, rets[:n_dir], rets[n_dir:], delta, step, top)
            if it % eval_every == 0 or it == self.n_iter:
                ret = score(theta)
                row = {"iteration": it, "return_mean": ret, "seconds": time.perf_counter() - t0}
                history.append(row)
                if ret > best:
                    best, best_theta = ret, theta.copy()
                if progress is not None:
                    progress(SearchStep(iteration=it, return_mean=ret, details=row))
        self.history_ = history
        self.best_return_ = best
        self.student_ = student.with_program(params.program_for(best_theta))
        return self
