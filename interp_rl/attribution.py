"""Shapley attribution for policies: which named features drive each action, for teachers and controllers.

:func:`explain` gives interventional Shapley values ``phi`` of shape ``(states, features, actions)`` for
anything with a batched ``predict`` -- an SB3 teacher, a :class:`~interp_rl.program.Controller` of any
kind, a student estimator. The game of a state ``x`` is ``v(S) = sum_k w_k f(x_S, b_k)``: the features
in ``S`` come from ``x``, the others from background rows ``b_k`` (weights ``w_k``, a summary of visited
states made by :func:`summarize_background`). Every explainer satisfies efficiency exactly:
``base + phi.sum(axis=1) == prediction`` per action, with ``base = v(empty)``.

Estimators (``method=``):

* ``"auto"`` -- the program's exact rule where its kind has one (trees with constant or affine leaves,
  linear policies, mixtures routed by a tree, SINDy equations; they explain the output *before*
  clipping, ``output="raw"``), else ``"kernel"`` where the budget covers a quarter of all coalitions and
  ``"permutation"`` elsewhere (:func:`auto_estimator`: the lower error per ``predict`` row on the Hopper and
  on the HalfCheetah/Walker2d teachers: ``benchmarks/results/attribution/report.md``).
* ``"program"`` -- that exact rule, or an error naming why there is none.
* ``"exact"`` -- all ``2^d`` coalitions evaluated on ``predict`` (the reference; ``d <= 16``).
* ``"kernel"`` -- Kernel SHAP (Lundberg & Lee 2017) with the efficiency constraint, paired sampling
  and the small and large coalition sizes enumerated in full, as shap's ``KernelExplainer`` chooses
  them; here one set of coalitions serves every state, so the whole batch is a few large ``predict``
  calls and one linear map instead of a regression per state.
* ``"permutation"`` -- antithetic permutation sampling (each permutation walked forwards and
  backwards, as shap's ``PermutationExplainer``), the permutations drawn from orthogonal spherical codes
  (Mitchell et al. 2022) rather than independently, batched the same way.

``budget`` is the number of ``predict`` rows per state (``kernel``/``permutation``): a Kernel SHAP
coalition costs one row per background row, a permutation walk's coalition one row against its own.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.errors import InvalidParameterError, ObservationError
from interp_rl.io import atomic_write_text
from interp_rl.validation import check_choice, check_finite, check_int

__all__ = [
    "METHODS",
    "Attribution",
    "ClassScoreModel",
    "Background",
    "agreement",
    "attribution_agreement",
    "explain",
    "explain_policy",
    "explained_model",
    "feature_ranking",
    "summarize_background",
    "teacher_agreement",
    "teacher_ranking",
]

#: Estimators :func:`explain` knows.
METHODS = ("auto", "program", "exact", "kernel", "permutation")
#: ``exact`` enumerates ``2^d`` coalitions; above this many features it is refused.
MAX_EXACT_FEATURES = 16
#: Default ``predict`` rows per state for the sampling estimators: enough for a mean absolute error of at most
#: 5% of the mean |phi| on every Hopper teacher (see the attribution benchmark).
DEFAULT_BUDGET = 16384
#: With ``method="auto"``, Kernel SHAP when its coalitions cover at least this share of all ``2^d`` (it then
#: enumerates most coalition sizes in full and beats permutations), else permutation sampling.
KERNEL_COVERAGE = 0.25
#: Torch threads of a teacher's network inside :func:`explain` (the targets' machine has 2 cores).
EXPLAIN_THREADS = 2
_ROWS_PER_CALL = 200_000  # predict rows per call (memory ~ rows * obs_dim * 8 bytes)


@dataclass(frozen=True)
class Background:
    """Background rows and their weights: the reference states a feature takes when it is "absent".

    Parameters
    ----------
    data : ndarray of shape (m, obs_dim)
    weights : ndarray of shape (m,)
        Positive, summing to 1 (normalised on construction).
    """

    data: np.ndarray
    weights: np.ndarray

    @classmethod
    def of(cls, background: Any, obs_dim: int, *, owner: str = "explain",
           feature_names: Sequence[str] | None = None) -> Background:
        """``background`` (a :class:`Background` or an array of equally weighted rows) checked against
        ``obs_dim``; a one-line error for a missing, empty, mis-shaped or non-finite background."""
        if background is None:
            raise InvalidParameterError(
                f"{owner} needs a background: states whose values stand in for absent features (e.g. "
                "summarize_background(visited_states)); got None.")
        data, weights = (background.data, background.weights) if isinstance(background, Background) else (
            background, None)
        try:
            arr = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"The background given to {owner} must be a numeric array of shape "
                                        f"(m, {obs_dim}).") from None
        if arr.ndim == 1 and arr.size == obs_dim:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != obs_dim:
            raise ObservationError(f"The background has shape {arr.shape}, but {owner} explains {obs_dim} "
                                   f"features: expected (m, {obs_dim}).")
        if len(arr) == 0:
            raise InvalidParameterError(f"The background given to {owner} has no rows; give at least one state.")
        check_finite(arr, owner, what="background", feature_names=feature_names)
        if weights is None:
            w = np.full(len(arr), 1.0 / len(arr))
        else:
            w = np.asarray(weights, dtype=np.float64).ravel()
            if w.shape != (len(arr),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise InvalidParameterError(f"The background weights must be {len(arr)} non-negative numbers "
                                            "with a positive sum.")
            w = w / w.sum()
        return cls(arr, w)

    def to_dict(self) -> dict[str, Any]:
        return {"data": self.data.tolist(), "weights": self.weights.tolist()}


def summarize_background(states: Any, size: int = 16, *, seed: int = 0) -> Background:
    """``size`` weighted k-means centres of ``states`` (or the states themselves if there are fewer).

    Each centre is weighted by its cluster's share of the states, as shap's ``kmeans`` summary;
    a run with the same ``seed`` gives the same centres.

    Examples
    --------
    >>> import numpy as np
    >>> bg = summarize_background(np.r_[np.zeros((30, 2)), np.ones((10, 2))], 2)
    >>> sorted(np.round(bg.weights, 2).tolist())
    [0.25, 0.75]
    """
    size = check_int(size, "size", "summarize_background")
    X = np.asarray(states, dtype=np.float64)
    if X.ndim != 2 or len(X) == 0:
        raise ObservationError(f"summarize_background needs states of shape (n, obs_dim); got {X.shape}.")
    check_finite(X, "summarize_background", what="states")
    uniq = np.unique(X, axis=0)
    if len(uniq) <= size:
        counts = np.array([np.sum(np.all(X == u, axis=1)) for u in uniq], dtype=np.float64)
        return Background(uniq, counts / counts.sum())
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=size, n_init=4, random_state=seed).fit(X)
    counts = np.bincount(km.labels_, minlength=size).astype(np.float64)
    keep = counts > 0
    return Background(km.cluster_centers_[keep], counts[keep] / counts.sum())


@dataclass
class Attribution:
    """Shapley values of a policy at some states, with what is needed to read and check them.

    ``base + values.sum(axis=1) == prediction`` (efficiency), per action.
    """

    values: np.ndarray
    """``(n, obs_dim, act_dim)``: each feature's share of each action at each state."""
    base: np.ndarray
    """``(act_dim,)``: the output averaged over the background (every feature absent)."""
    prediction: np.ndarray
    """``(n, act_dim)``: what the values explain (the action; before clipping when ``output == 'raw'``)."""
    states: np.ndarray
    """``(n, obs_dim)``: the explained states."""
    features: list[str]
    actions: list[str]
    method: str
    """The estimator that produced the values (``tree-exact``, ``exact``, ``kernel`` ...)."""
    exact: bool
    output: str = "action"
    """``"action"``: the policy's actions; ``"raw"``: a program's output before clipping to the bounds."""
    background_size: int = 0
    budget: int | None = None
    """Coalitions evaluated per state (sampling estimators)."""
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    units: list[str] = field(default_factory=list)
    """Each action's unit (``x200 N m``; empty when unknown): the values are in it."""

    @property
    def n_states(self) -> int:
        return int(self.values.shape[0])

    def importance(self) -> np.ndarray:
        """Global importance ``(obs_dim, act_dim)``: the mean ``|phi|`` over the states."""
        return np.abs(self.values).mean(axis=0)

    def ranking(self, action: int) -> list[str]:
        """Feature names from the most to the least important for ``action``."""
        order = np.argsort(-self.importance()[:, action], kind="stable")
        return [self.features[i] for i in order]

    def efficiency_gap(self) -> float:
        """``max |base + sum(phi) - prediction|`` (0 up to rounding)."""
        if not self.n_states:
            return 0.0
        return float(np.max(np.abs(self.base[None, :] + self.values.sum(axis=1) - self.prediction)))

    def to_dict(self, *, values: bool = True) -> dict[str, Any]:
        """JSON-ready: the estimator, global importance per action, and (``values=True``) every value."""
        imp = self.importance()
        out: dict[str, Any] = {
            "method": self.method, "exact": self.exact, "output": self.output, "n_states": self.n_states,
            "background_size": self.background_size, "budget": self.budget, "seconds": round(self.seconds, 4),
            "features": list(self.features), "actions": list(self.actions), "units": list(self.units),
            "base": self.base.tolist(),
            "importance": {a: {f: float(imp[i, k]) for i, f in enumerate(self.features)}
                           for k, a in enumerate(self.actions)},
            "info": self.info,
        }
        if values:
            out.update(states=self.states.tolist(), values=self.values.tolist(),
                       prediction=self.prediction.tolist())
        return out

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` as JSON, atomically."""
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Attribution:
        from interp_rl.errors import ControllerFormatError

        try:
            d = json.loads(Path(path).read_text())
            return cls(values=np.asarray(d["values"], dtype=np.float64), base=np.asarray(d["base"], dtype=np.float64),
                       prediction=np.asarray(d["prediction"], dtype=np.float64),
                       states=np.asarray(d["states"], dtype=np.float64), features=list(d["features"]),
                       actions=list(d["actions"]), method=str(d["method"]), exact=bool(d["exact"]),
                       output=str(d.get("output", "action")), background_size=int(d.get("background_size", 0)),
                       budget=d.get("budget"), seconds=float(d.get("seconds", 0.0)), info=dict(d.get("info") or {}),
                       units=[str(u) for u in d.get("units") or []])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ControllerFormatError(f"{path} is not an attribution file written by interp-rl: {exc}") from None


class ClassScoreModel:
    """A discrete teacher's class scores as a policy to explain: ``predict`` gives ``teacher.action_scores``.

    ``predict`` of a discrete teacher is the one-hot vector of its class, which jumps from state to state; its
    scores (PPO/A2C/TRPO: log-probabilities; DQN: Q-values) are what it chooses by, and what attribution
    explains for it (``interp-rl explain``, SILVER).
    """

    def __init__(self, teacher: Any) -> None:
        if not callable(getattr(teacher, "action_scores", None)) or not getattr(teacher, "discrete", True):
            what = (f"the {str(getattr(teacher, 'algo', '')).upper()} teacher of {teacher.task} has continuous actions"
                    if hasattr(teacher, "action_scores") else f"{type(teacher).__name__} has no action_scores()")
            raise InvalidParameterError(
                f"Class scores exist for teachers with discrete actions (an SB3 agent of CartPole-v1 or "
                f"MountainCar-v0); {what}."
            )
        self.teacher = teacher
        self.obs_dim = int(teacher.obs_dim)
        self.feature_names = getattr(teacher, "feature_names", None)
        self.unit = "Q-value" if getattr(teacher, "algo", "") == "dqn" else "log-probability"

    def predict(self, obs: np.ndarray) -> np.ndarray:
        X = np.asarray(obs, dtype=np.float64)
        return np.asarray(self.teacher.action_scores(X), dtype=np.float64).reshape(len(X), -1)


def explained_model(policy: Any) -> Any:
    """What attribution explains of ``policy``: a discrete teacher's class scores (:class:`ClassScoreModel`),
    anything else's own actions."""
    if getattr(policy, "discrete", False) and callable(getattr(policy, "action_scores", None)):
        return ClassScoreModel(policy)
    return policy


# ---------------------------------------------------------------------------------------------- policy access
def _program_of(policy: Any) -> Any:
    """The program behind ``policy`` (a Controller, a program, a fitted student), or ``None``."""
    from interp_rl.program import Controller, Program

    if isinstance(policy, Controller):
        return policy.program
    if isinstance(policy, Program):
        return policy
    to_controller = getattr(policy, "to_controller", None)
    if callable(to_controller):
        try:
            return to_controller().program
        except Exception:  # noqa: BLE001 - an unfitted or unusual student: sample instead
            return None
    return None


def _exact_rule(program: Any) -> bool:
    """Whether ``program`` has an exact Shapley rule (a kind without ``exact_shapley`` is estimated)."""
    return program is not None and bool(getattr(program, "exact_shapley", False))


def _names(policy: Any, d: int, k: int, features: Sequence[str] | None,
           actions: Sequence[str] | None) -> tuple[list[str], list[str]]:
    feats = list(features) if features is not None else list(getattr(policy, "feature_names", None) or [])
    acts = list(actions) if actions is not None else list(getattr(policy, "action_names", None) or [])
    if len(feats) != d:
        feats = [f"obs_{i}" for i in range(d)]
    if len(acts) != k:
        acts = [f"action_{i}" for i in range(k)]
    return feats, acts


def _obs_dim(policy: Any, program: Any) -> int | None:
    if program is not None:
        return int(program.obs_dim)
    dim = getattr(policy, "obs_dim", None)
    return int(dim) if isinstance(dim, (int, np.integer)) else None


def _predict(policy: Any, Z: np.ndarray) -> np.ndarray:
    y = np.asarray(policy.predict(Z), dtype=np.float64)
    return y.reshape(len(Z), -1)


# ------------------------------------------------------------------------------------------------ estimators
def _shapley_weight(size: int, d: int) -> float:
    """``|S|! (d - |S| - 1)! / d!``."""
    return math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)


def _plan_exact(d: int) -> tuple[np.ndarray, np.ndarray]:
    """All coalitions and the operator ``phi = op @ v``."""
    M = 1 << d
    masks = ((np.arange(M)[:, None] >> np.arange(d)[None, :]) & 1).astype(bool)
    sizes = masks.sum(axis=1)
    op = np.zeros((d, M))
    for s in range(d + 1):
        plus = _shapley_weight(s - 1, d) if s >= 1 else 0.0  # i in S: S = T + {i}, |T| = s - 1
        minus = _shapley_weight(s, d) if s < d else 0.0
        rows = sizes == s
        op[:, rows] = np.where(masks[rows].T, plus, -minus)
    return masks, op


class _Plan:
    """Which ``predict`` rows a sampling estimator evaluates and how it combines them: ``phi = op @ v``.

    Columns of ``v``: 0 is ``f(x)``; ``1 + k`` is ``f(b_k)`` (background row ``k`` alone, the same for every
    state); then one column per ``(mask, row)`` pair in ``masks``/``rows``: ``f(z)`` with ``z`` taken from
    ``x`` where ``mask`` is set and from ``b_row`` elsewhere.
    """

    def __init__(self, d: int, m: int) -> None:
        self.d, self.m = d, m
        self._index: dict[tuple[bytes, int], int] = {}
        self.masks: list[np.ndarray] = []
        self.rows: list[int] = []
        self._ops: dict[int, np.ndarray] = {}

    def column(self, mask: np.ndarray, row: int) -> int:
        if mask.all():
            return 0
        if not mask.any():
            return 1 + row
        key = (mask.tobytes(), row)
        if key not in self._index:
            self._index[key] = 1 + self.m + len(self.masks)
            self.masks.append(mask.copy())
            self.rows.append(row)
        return self._index[key]

    def add(self, mask: np.ndarray, row: int, coef: np.ndarray) -> None:
        c = self.column(mask, row)
        self._ops.setdefault(c, np.zeros(self.d))
        self._ops[c] += coef

    def finish(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        masks = np.array(self.masks, dtype=bool).reshape(-1, self.d)
        op = np.zeros((self.d, 1 + self.m + len(masks)))
        for c, v in self._ops.items():
            op[:, c] = v
        return masks, np.array(self.rows, dtype=np.int64), op


def _over_background(masks: np.ndarray, op: np.ndarray, weights: np.ndarray) -> _Plan:
    """A plan whose every coalition is averaged over the whole background (exact and Kernel SHAP)."""
    d, m = masks.shape[1], len(weights)
    plan = _Plan(d, m)
    for c in range(len(masks)):
        if not np.any(op[:, c]):
            continue
        if masks[c].all():
            plan.add(masks[c], 0, op[:, c])
            continue
        for k in range(m):
            plan.add(masks[c], k, weights[k] * op[:, c])
    return plan


def auto_estimator(d: int, budget: int, background: int) -> str:
    """The sampling estimator ``method="auto"`` picks for ``d`` features, ``budget`` rows per state and
    ``background`` rows: ``"kernel"`` when its coalitions (``budget / background`` per state) cover at least
    :data:`KERNEL_COVERAGE` of the ``2^d``, else ``"permutation"``. On the shared teachers Kernel SHAP had the
    lower error at 11 features (Hopper) and permutations at 17-18 (``benchmarks/results/attribution``).

    >>> auto_estimator(11, 16384, 16), auto_estimator(17, 16384, 16)
    ('kernel', 'permutation')
    """
    coalitions = budget // max(1, background)
    return "kernel" if d < 63 and coalitions >= KERNEL_COVERAGE * (1 << d) else "permutation"


@contextlib.contextmanager
def _torch_threads_of(policy: Any, threads: int | None) -> Iterator[None]:
    """Run a teacher's network (a policy with an integer ``threads``) on ``threads`` torch threads meanwhile."""
    owner = getattr(policy, "teacher", policy)  # ClassScoreModel: the teacher inside
    old = getattr(owner, "threads", None)
    if threads is None or not isinstance(old, int) or isinstance(old, bool):
        yield
        return
    owner.threads = check_int(threads, "threads", "explain")
    try:
        yield
    finally:
        owner.threads = old


def _orthogonal_permutations(d: int, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``n`` permutations of ``d`` features from orthogonal spherical codes (Mitchell et al., 2022, "Sampling
    permutations for Shapley value estimation"): blocks of ``d - 1`` orthonormal random directions in the
    subspace orthogonal to ``(1, ..., 1)``, each read as the order that sorts it. Within a block the orders are
    spread out rather than independent; on the Hopper teachers this lowers the permutation estimate's error by
    11-13% at the same budget (``benchmarks/results/attribution``). ``d < 3``: plain random permutations."""
    if d < 3:
        return [rng.permutation(d) for _ in range(n)]
    out: list[np.ndarray] = []
    while len(out) < n:
        G = rng.normal(size=(d - 1, d))
        G -= G.mean(axis=1, keepdims=True)
        Q, R = np.linalg.qr(G.T)  # (d, d - 1): orthonormal columns, each orthogonal to the ones vector
        Q = Q * np.where(np.diag(R) < 0, -1.0, 1.0)  # QR fixes signs by the data; undone, each column is uniform
        out += [np.argsort(Q[:, j], kind="stable") for j in range(d - 1)]
    return out[:n]


def _plan_permutation(d: int, budget: int, rng: np.random.Generator, weights: np.ndarray) -> _Plan:
    """Antithetic permutation walks, each against one background row.

    A walk adds the features of a permutation one at a time to the state's side, the others taken from
    one background row ``b``; its marginal contributions sum to ``f(x) - f(b)``. The permutations come from
    orthogonal spherical codes (:func:`_orthogonal_permutations`), each uniformly distributed. Walks come in
    forward/backward pairs (``2 (d - 1)`` coalitions per pair, within ``budget`` per state) and the rows
    are stratified: every row gets at least one pair, the pairs are spread in proportion to the weights,
    and a walk on row ``k`` weighs ``w_k / walks_k``. So the estimate is unbiased and exactly efficient.
    """
    m = len(weights)
    n_pairs = max(m, budget // max(1, 2 * (d - 1)))
    share = weights * n_pairs
    alloc = np.maximum(1, np.floor(share)).astype(np.int64)
    extra = int(n_pairs - alloc.sum())
    if extra > 0:  # largest remainders first
        alloc[np.argsort(-(share - np.floor(share)), kind="stable")[:extra]] += 1
    plan = _Plan(d, m)
    for k in range(m):
        wt = weights[k] / (2 * alloc[k])
        for perm in _orthogonal_permutations(d, int(alloc[k]), rng):
            for order in (perm, perm[::-1]):
                mask = np.zeros(d, bool)
                for i in order:
                    unit = np.zeros(d)
                    unit[i] = wt
                    plan.add(mask, k, -unit)
                    mask[i] = True
                    plan.add(mask, k, unit)
    return plan


def _plan_kernel(d: int, budget: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Kernel SHAP's coalitions and the constrained weighted least squares as one linear operator.

    As shap's ``KernelExplainer``: sizes are enumerated from the outside in (``s`` and ``d - s`` together)
    while the share of the budget their kernel mass earns covers all their coalitions; the remaining sizes are
    sampled in complementary pairs, each sample carrying an equal part of the remaining mass."""
    if d == 1:
        return np.array([[False], [True]]), np.array([[-1.0, 1.0]])
    budget = max(budget, 2 * d)
    sizes = list(range(1, d))
    kernel = np.array([(d - 1) / (s * (d - s)) for s in sizes])  # total kernel mass of each size
    mass = dict(zip(sizes, kernel / kernel.sum(), strict=True))
    chosen: dict[bytes, float] = {}
    left = budget
    complete: set[int] = set()
    for s in range(1, d // 2 + 1):
        pair = {s, d - s}
        count = sum(math.comb(d, t) for t in pair)
        remaining = sum(v for t, v in mass.items() if t not in complete)
        if count > left * sum(mass[t] for t in pair) / remaining:
            break
        for t in pair:
            per = mass[t] / math.comb(d, t)
            for U in combinations(range(d), t):
                m = np.zeros(d, bool)
                m[list(U)] = True
                chosen[m.tobytes()] = chosen.get(m.tobytes(), 0.0) + per
            complete.add(t)
        left -= count
    rest = [s for s in sizes if s not in complete]
    if rest and left >= 2:
        p = np.array([mass[s] for s in rest])
        rest_mass = p.sum()
        n_pairs = left // 2
        draws = rng.choice(len(rest), size=n_pairs, p=p / rest_mass)
        per = rest_mass / (2 * n_pairs)
        for r in draws:
            s = rest[int(r)]
            m = np.zeros(d, bool)
            m[rng.choice(d, size=s, replace=False)] = True
            for mm in (m, ~m):
                chosen[mm.tobytes()] = chosen.get(mm.tobytes(), 0.0) + per
    Z = np.array([np.frombuffer(k, dtype=bool) for k in chosen], dtype=np.float64)  # (M', d)
    pi = np.array(list(chosen.values()))
    # minimise sum pi (y - Z phi)^2 subject to 1.phi = delta, with y = v(S) - v(empty), delta = v(full) - v(empty)
    A = Z.T @ (pi[:, None] * Z)
    Ainv = np.linalg.pinv(A)
    L = Ainv @ (Z.T * pi[None, :])  # (d, M')
    g = Ainv.sum(axis=1)  # A^-1 1
    # phi = L y - g (1.L y - delta) / 1.g, linear in the middle coalitions' y, v(empty) and v(full)
    mid = L - np.outer(g, L.sum(axis=0)) / g.sum()
    full = g / g.sum()
    empty = -mid.sum(axis=1) - full
    masks = np.vstack([np.zeros((1, d), bool), np.ones((1, d), bool), Z.astype(bool)])
    op = np.hstack([empty[:, None], full[:, None], mid])
    return masks, op


def _coalition_values(policy: Any, X: np.ndarray, bg: Background, masks: np.ndarray, rows: np.ndarray,
                      progress: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """``(v, y_bg)``: ``v`` ``(n, 1 + m + M, k)`` in the column order of :class:`_Plan`, and ``f(b)`` ``(m, k)``."""
    n, d = X.shape
    m, M = len(bg.data), len(masks)
    y_bg = _predict(policy, bg.data)
    k = y_bg.shape[1]
    v = np.empty((n, 1 + m + M, k))
    v[:, 1:1 + m, :] = y_bg[None, :, :]
    if n:
        v[:, 0, :] = _predict(policy, X)
    if not M:
        if progress is not None:
            progress(n)
        return v, y_bg
    B = bg.data[rows]  # (M, d)
    chunk = max(1, _ROWS_PER_CALL // M)
    for start in range(0, n, chunk):
        xs = X[start:start + chunk]
        Z = np.where(masks[None, :, :], xs[:, None, :], B[None, :, :])
        v[start:start + chunk, 1 + m:, :] = _predict(policy, Z.reshape(-1, d)).reshape(len(xs), M, k)
        if progress is not None:
            progress(len(xs))
    return v, y_bg


def explain(
    policy: Any,
    states: Any,
    background: Any,
    *,
    method: str = "auto",
    budget: int | None = None,
    seed: int = 0,
    features: Sequence[str] | None = None,
    actions: Sequence[str] | None = None,
    progress: Any = None,
    threads: int | None = EXPLAIN_THREADS,
) -> Attribution:
    """Shapley values of ``policy``'s actions at ``states`` against ``background``.

    Parameters
    ----------
    policy : object with ``predict(obs) -> actions``
        A teacher, a :class:`~interp_rl.program.Controller`, a program or a fitted student.
    states : array-like of shape (n, obs_dim)
        Raw observations to explain.
    background : Background or array-like of shape (m, obs_dim)
        Reference states (equally weighted if an array); :func:`summarize_background` makes one.
    method : {'auto', 'program', 'exact', 'kernel', 'permutation'}
        See the module docstring.
    budget : int, optional
        ``predict`` rows per state for ``kernel``/``permutation`` (default :data:`DEFAULT_BUDGET`; a budget
        that covers every coalition against every background row gives the exact values).
    seed : int
        Seeds the sampled coalitions; the same seed gives the same values.
    features, actions : list of str, optional
        Names (default: the policy's ``feature_names``/``action_names``, else ``obs_i``/``action_i``).
    progress : callable, optional
        Called with the number of states finished after each batch (a progress bar's ``update``).
    threads : int or None, default=EXPLAIN_THREADS
        Torch threads of a teacher's network while its coalitions are evaluated (an SB3 teacher runs its
        rollouts on one, for returns that repeat bit for bit; the big batches here gain from more). ``None``
        keeps the teacher's own. The same count gives the same values.

    Returns
    -------
    Attribution

    Examples
    --------
    >>> import numpy as np
    >>> from interp_rl.kinds.linear import LinearProgram
    >>> a = explain(LinearProgram(intercept=[0.0], coef=[[2.0, -1.0]]), [[1.0, 1.0]], np.zeros((1, 2)))
    >>> a.values[0, :, 0].tolist(), a.method
    ([2.0, -1.0], 'linear-exact')
    """
    method = check_choice(method, "method", "explain", METHODS)
    if not callable(getattr(policy, "predict", None)):
        raise InvalidParameterError(f"explain needs a policy with predict(obs); got {type(policy).__name__}.")
    program = _program_of(policy)
    d = _obs_dim(policy, program)
    try:
        X = np.asarray(states, dtype=np.float64)
    except (TypeError, ValueError):
        raise ObservationError("The states given to explain must be a numeric array of shape (n, obs_dim).") from None
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or (d is not None and X.shape[1] != d):
        want = f"(n, {d})" if d is not None else "(n, obs_dim)"
        raise ObservationError(f"The states have shape {X.shape}, but the policy reads {d if d is not None else '?'} "
                               f"features: expected {want}.")
    d = X.shape[1]
    names_hint = list(features) if features is not None else getattr(policy, "feature_names", None)
    check_finite(X, "explain", what="states", feature_names=names_hint)
    bg = Background.of(background, d, feature_names=names_hint)
    start = time.perf_counter()

    use_program = method == "program" or (method == "auto" and _exact_rule(program))
    if use_program:
        if not _exact_rule(program):
            what = type(policy).__name__ if program is None else f"a {program.kind} program of this form"
            raise InvalidParameterError(f"method='program' needs a program kind with an exact Shapley rule; "
                                        f"{what} has none (use 'kernel', 'permutation' or 'exact').")
        phi, base = program.shapley_values(X, bg.data, bg.weights)
        k = phi.shape[2]
        feats, acts = _names(policy, d, k, features, actions)
        if progress is not None:
            progress(len(X))
        return Attribution(values=phi, base=base, prediction=base[None, :] + phi.sum(axis=1), states=X,
                           features=feats, actions=acts, method=f"{program.kind}-exact", exact=True, output="raw",
                           background_size=len(bg.data), seconds=time.perf_counter() - start)

    rng = np.random.default_rng(seed)
    if budget is not None:
        budget = check_int(budget, "budget", "explain", low=2)
    b = DEFAULT_BUDGET if budget is None else budget
    est = auto_estimator(d, b, len(bg.data)) if method == "auto" else method
    if est == "exact" or (d <= MAX_EXACT_FEATURES and b >= (1 << d) * len(bg.data)):
        if d > MAX_EXACT_FEATURES:
            raise InvalidParameterError(f"method='exact' evaluates 2^{d} coalitions per state; it is refused above "
                                        f"{MAX_EXACT_FEATURES} features (use 'kernel' or 'permutation').")
        plan = _over_background(*_plan_exact(d), bg.weights)
        est = "exact"
    elif est == "kernel":
        plan = _over_background(*_plan_kernel(d, max(2 * d, b // len(bg.data)), rng), bg.weights)
    else:
        plan = _plan_permutation(d, b, rng, bg.weights)
    masks, rows, op = plan.finish()
    with _torch_threads_of(policy, threads):
        v, y_bg = _coalition_values(policy, X, bg, masks, rows, progress)
    phi = np.einsum("dM,nMk->ndk", op, v)
    base = bg.weights @ y_bg
    prediction = v[:, 0, :]
    feats, acts = _names(policy, d, y_bg.shape[1], features, actions)
    return Attribution(values=phi, base=base, prediction=prediction, states=X, features=feats, actions=acts,
                       method=est, exact=est == "exact", output="action", background_size=len(bg.data),
                       budget=int(len(masks)), seconds=time.perf_counter() - start,
                       info={"predict_rows_per_state": int(len(masks))})


def feature_ranking(attr: Attribution) -> list[int]:
    """Feature indices from the most to the least important over all actions: each action's importance is
    divided by its total, so that every action weighs the same, then averaged.

    >>> import numpy as np
    >>> from interp_rl.kinds.linear import LinearProgram
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> feature_ranking(explain(LinearProgram(intercept=[0.0, 0.0], coef=[[1.0, 0, 0], [0, 0, 100.0]]), X, X[:5]))
    [0, 2, 1]
    """
    imp = attr.importance()
    total = imp.sum(axis=0)
    share = np.divide(imp, total, out=np.zeros_like(imp), where=total > 0)
    return [int(i) for i in np.argsort(-share.mean(axis=1), kind="stable")]


# -------------------------------------------------------------------------------------------------- agreement
def agreement(reference: Attribution, other: Attribution, *, top_k: int = 3) -> dict[str, Any]:
    """How alike two policies' global importances are, per action: Spearman's rank correlation and the
    overlap of the ``top_k`` most important features (shared / ``top_k``).

    Returns ``{"spearman": {action: r}, "top_k_overlap": {action: share}, "mean_spearman", "mean_top_k_overlap",
    "top_k"}``; a correlation is ``None`` where either importance is constant (a controller ignoring every
    feature for that action).

    Examples
    --------
    >>> import numpy as np
    >>> from interp_rl.kinds.linear import LinearProgram
    >>> X, bg = np.random.default_rng(0).normal(size=(50, 3)), np.zeros((1, 3))
    >>> a = explain(LinearProgram(intercept=[0.0], coef=[[3.0, 2.0, 1.0]]), X, bg)
    >>> b = explain(LinearProgram(intercept=[0.0], coef=[[3.0, 1.0, 0.0]]), X, bg)
    >>> agreement(a, b, top_k=2)["top_k_overlap"]
    {'action_0': 1.0}
    """
    from scipy.stats import spearmanr

    if reference.values.shape[1:] != other.values.shape[1:]:
        raise ObservationError(f"Attributions over {reference.values.shape[1:]} (features, actions) and "
                               f"{other.values.shape[1:]} cannot be compared.")
    top_k = check_int(top_k, "top_k", "agreement", high=reference.values.shape[1])
    ri, oi = reference.importance(), other.importance()
    rho: dict[str, float | None] = {}
    overlap: dict[str, float] = {}
    for a, name in enumerate(reference.actions):
        x, y = ri[:, a], oi[:, a]
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            rho[name] = None
        else:
            rho[name] = float(spearmanr(x, y).statistic)
        top_r = set(np.argsort(-x, kind="stable")[:top_k].tolist())
        top_o = set(np.argsort(-y, kind="stable")[:top_k].tolist())
        overlap[name] = len(top_r & top_o) / top_k
    valid = [r for r in rho.values() if r is not None]
    return {"spearman": rho, "top_k_overlap": overlap, "top_k": top_k,
            "mean_spearman": float(np.mean(valid)) if valid else None,
            "mean_top_k_overlap": float(np.mean(list(overlap.values())))}


# ------------------------------------------------------------------------------------------------ the job
#: Most steps of the first episode drawn as the timeline.
TIMELINE_STEPS = 300


def explain_policy(
    policy: Any,
    env_fn: Any,
    out_dir: str | Path,
    *,
    states: int = 1000,
    episodes: int = 5,
    seed: int = 0,
    background: int = 16,
    method: str = "auto",
    budget: int | None = None,
    task: str = "",
    features: Sequence[str] | None = None,
    actions: Sequence[str] | None = None,
    units: Sequence[str] | None = None,
    formats: Sequence[str] = ("png", "svg"),
    progress: Any = None,
) -> dict[str, Any]:
    """``interp-rl explain``: run the policy, explain the states it visits, write pictures and JSON.

    The policy runs ``episodes`` deterministic episodes (seeds ``seed, seed + 1, ...``); ``states`` of the
    visited states (drawn with ``seed``) are explained against ``background`` k-means centres of all of
    them, and the first episode (up to :data:`TIMELINE_STEPS` steps) is explained again, in time order, for
    the timeline. A discrete teacher's class scores are explained (:func:`explained_model`), not its one-hot
    choice. Writes into ``out_dir``: ``attribution.json`` (every value), ``timeline.json``,
    ``summary.json`` (estimator, timings, global importance per action, the ranking) and the figures
    (:func:`interp_rl.viz.attribution_figures`, in ``units``: each action's unit). Returns the summary.
    """
    from interp_rl.rollouts import run_episodes
    from interp_rl.viz import attribution_figures

    states = check_int(states, "states", "explain_policy")
    episodes = check_int(episodes, "episodes", "explain_policy")
    background = check_int(background, "background", "explain_policy")
    check_choice(method, "method", "explain_policy", METHODS)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ran = run_episodes(policy, env_fn, range(seed, seed + episodes), record=True, task=task)
    target = explained_model(policy)
    assert ran.rollout is not None
    visited = ran.rollout.observations
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(visited), size=min(states, len(visited)), replace=False))
    bg = summarize_background(visited, background, seed=seed)
    names = {"features": features, "actions": actions}
    attr = explain(target, visited[pick], bg, method=method, budget=budget, seed=seed, progress=progress, **names)
    first = np.flatnonzero(ran.rollout.episodes == ran.rollout.episodes[0])[:TIMELINE_STEPS]
    timeline = explain(target, visited[first], bg, method=method, budget=budget, seed=seed, **names)
    scored = isinstance(target, ClassScoreModel)
    attr.units = timeline.units = [target.unit] * len(attr.actions) if scored else list(units or [])
    attr.save(out / "attribution.json")
    timeline.save(out / "timeline.json")
    figures = attribution_figures(attr, out, timeline=timeline, formats=formats)
    summary = {
        "task": task, "seed": seed, "episodes": episodes, "returns": [float(r) for r in ran.returns],
        "visited_states": int(len(visited)), "timeline_steps": int(len(first)),
        "explained": f"class scores ({target.unit})" if isinstance(target, ClassScoreModel) else "actions",
        **attr.to_dict(values=False),
        "efficiency_gap": attr.efficiency_gap(),
        "ranking": {a: attr.ranking(k) for k, a in enumerate(attr.actions)},
        "figures": sorted(p.name for p in figures),
    }
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    return summary


#: Predict rows per state when comparing importances (global importance averages the sampling error out).
AGREEMENT_BUDGET = 2048


def attribution_agreement(
    teacher: Any,
    controller: Any,
    states: Any,
    *,
    n_states: int = 200,
    background: int = 16,
    budget: int = AGREEMENT_BUDGET,
    seed: int = 0,
    top_k: int = 3,
    features: Sequence[str] | None = None,
    actions: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Teacher against controller: Shapley importance of each feature for each *action* (both explained by the
    same estimator, coalitions and background, on ``n_states`` of ``states`` drawn with ``seed``), their rank
    agreement (:func:`agreement`) and both importances side by side.

    The controller's shipped (clipped) actions are explained, as the teacher's, so a controller whose raw output
    runs past its bounds is compared on what it does. ``top_k`` is capped at the number of features (MountainCar
    has two).
    """
    X = np.asarray(states, dtype=np.float64)
    n_states = check_int(n_states, "n_states", "attribution_agreement")
    rng = np.random.default_rng(seed)
    X = X[np.sort(rng.choice(len(X), size=min(n_states, len(X)), replace=False))]
    bg = summarize_background(X, background, seed=seed)
    method = "permutation"
    names = {"features": features, "actions": actions}
    a = explain(teacher, X, bg, method=method, budget=budget, seed=seed, **names)
    b = explain(controller, X, bg, method=method, budget=budget, seed=seed, **names)  # predict: clipped actions
    out = agreement(a, b, top_k=min(top_k, a.values.shape[1]))
    ti, ci = a.importance(), b.importance()
    out.update({
        "estimator": a.method, "budget": a.budget, "states": a.n_states, "background": len(bg.data),
        "teacher_seconds": round(a.seconds, 3), "controller_seconds": round(b.seconds, 3),
        "features": a.features, "actions": a.actions,
        "teacher_importance": {n: ti[:, k].tolist() for k, n in enumerate(a.actions)},
        "controller_importance": {n: ci[:, k].tolist() for k, n in enumerate(a.actions)},
    })
    return out


def teacher_ranking(teacher: Any, *, n_states: int = 500, seed: int = 0) -> dict[str, Any]:
    """The teacher's features from the most to the least important (:func:`feature_ranking`), from its Shapley
    values on ``n_states`` of the states it visits (``5 n_states`` steps from ``seed``) against 16 of them."""
    from interp_rl.rollouts import collect

    visited = collect(teacher, teacher.env_fn, 5 * n_states, seed).observations
    states = visited[np.sort(np.random.default_rng(seed).choice(len(visited), n_states, replace=False))]
    names = list(getattr(teacher, "feature_names", None) or [])
    attr = explain(explained_model(teacher), states, summarize_background(visited, 16, seed=seed), seed=seed,
                   features=names or None)
    order = feature_ranking(attr)
    imp = attr.importance()
    return {"order": order, "features": [attr.features[i] for i in order], "importance": imp[order].tolist(),
            "method": attr.method, "budget": attr.budget, "states": attr.n_states, "seconds": attr.seconds}


def teacher_agreement(teacher: Any, controller: Any, n_states: int, seed: int) -> dict[str, Any] | None:
    """Shapley importance of teacher and controller on ``n_states`` states the teacher visits, ranked against each
    other (:func:`attribution_agreement`); ``None`` when ``n_states`` is 0."""
    from interp_rl.rollouts import collect

    if not n_states:
        return None
    visited = collect(teacher, teacher.env_fn, 5 * n_states, seed).observations
    return attribution_agreement(teacher, controller, visited, n_states=n_states, seed=seed,
                                 features=controller.feature_names, actions=controller.action_names)
