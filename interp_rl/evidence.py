"""The evidence a controller rests on: the teacher-labelled states it was fitted on, and the nearest of them.

Every ``interp-rl distill`` run saves its distillation data beside the controller (``distillation.npz``: the
states DAgger recorded, the teacher's actions there and the sample weights the student was fitted with), so any
saved controller can answer, for a state where it acted: *which piece acted, and on which recorded teacher
decisions does that piece rest?* (the Accountable Offline Controller's decision corpus, exact here because every
piece of a tree, mixture or linear policy was fitted on known rows).

>>> import numpy as np
>>> X = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]); y = X[:, :1]
>>> data = DistillationData(X, y)
>>> near = nearest_examples(data, np.array([[0.9, 0.1]]), k=2)
>>> near.index.tolist(), np.round(near.distance, 3).tolist()
([[1, 0]], [[0.063, 0.419]])
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.errors import ControllerFormatError, InterpRLError
from interp_rl.io import atomic_write

__all__ = ["DATA_FILE", "DistillationData", "Neighbours", "load_data", "nearest_examples", "save_data",
           "typical_spacing"]

#: The distillation data's file name in a controller's folder.
DATA_FILE = "distillation.npz"


@dataclass
class DistillationData:
    """Teacher-labelled states a controller was fitted on."""

    observations: np.ndarray
    """``(n, obs_dim)`` raw observations."""
    actions: np.ndarray
    """``(n, act_dim)`` the teacher's actions there."""
    weights: np.ndarray | None = None
    """``(n,)`` the sample weights of the fit (critic weighting), or ``None`` (all equal)."""

    def __post_init__(self) -> None:
        self.observations = np.asarray(self.observations, dtype=np.float64)
        self.actions = np.asarray(self.actions, dtype=np.float64).reshape(len(self.observations), -1)
        self.weights = None if self.weights is None else np.asarray(self.weights, dtype=np.float64).ravel()

    def __len__(self) -> int:
        return len(self.observations)

    def scale(self) -> np.ndarray:
        """Each feature's standard deviation over the data (1 where it does not vary)."""
        sd = self.observations.std(axis=0) if len(self) else np.ones(self.observations.shape[1])
        return np.where(sd > 1e-12, sd, 1.0)


def save_data(folder: str | Path, data: DistillationData) -> Path:
    """Write ``folder/distillation.npz`` atomically (plain arrays, no pickle)."""
    arrays = {"observations": data.observations, "actions": data.actions}
    if data.weights is not None:
        arrays["weights"] = data.weights

    def _write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)  # type: ignore[arg-type]

    return atomic_write(Path(folder) / DATA_FILE, _write)


def load_data(folder: str | Path) -> DistillationData:
    """The distillation data saved with the controller in ``folder`` (or beside a ``controller.json``).

    A controller saved without it (made before interp-rl kept it, or written by hand) raises a one-line
    :class:`~interp_rl.errors.InterpRLError` saying so; a damaged file raises
    :class:`~interp_rl.errors.ControllerFormatError`.
    """
    p = Path(folder)
    if p.suffix == ".json":
        p = p.parent
    path = p / DATA_FILE
    if not path.is_file():
        raise InterpRLError(f"{str(p)!r} holds no distillation data ({DATA_FILE}): the controller was saved without "
                            "the states it was fitted on, so the evidence it rests on cannot be shown. Distil it "
                            "again with this interp-rl to keep them.")
    try:
        with np.load(path, allow_pickle=False) as z:
            obs, act = np.asarray(z["observations"]), np.asarray(z["actions"])
            w = np.asarray(z["weights"]) if "weights" in z.files else None
    except (OSError, ValueError, KeyError) as exc:
        raise ControllerFormatError(f"{str(path)!r} is corrupt: {exc}".splitlines()[0]) from None
    if obs.ndim != 2 or len(act) != len(obs) or (w is not None and len(w) != len(obs)):
        raise ControllerFormatError(f"{str(path)!r} is corrupt: observations {obs.shape}, actions {act.shape}.")
    return DistillationData(obs, act, w)


@dataclass
class Neighbours:
    """The ``k`` nearest recorded states of each query, in standard deviations of the data's features."""

    index: np.ndarray
    """``(n_queries, k)`` rows of the data, nearest first (-1 where fewer than ``k`` rows were eligible)."""
    distance: np.ndarray
    """``(n_queries, k)`` Euclidean distance over features scaled by their standard deviation (NaN if absent)."""
    scale: np.ndarray
    """``(obs_dim,)`` the standard deviations used."""


def nearest_examples(data: DistillationData, states: Any, *, k: int = 5, among: Any = None,
                     scale: np.ndarray | None = None) -> Neighbours:
    """The ``k`` nearest rows of ``data`` to each of ``states``, each feature divided by its standard deviation.

    ``among`` restricts the search: a boolean mask ``(n_queries, n_rows)`` or, more often, one array of
    eligible row indices per query (the rows fitted on the piece that acted there). The search is exact.
    """
    from sklearn.neighbors import NearestNeighbors

    Q = np.atleast_2d(np.asarray(states, dtype=np.float64))
    scale = data.scale() if scale is None else np.asarray(scale, dtype=np.float64)
    Z = data.observations / scale
    Qz = Q / scale
    idx = np.full((len(Q), k), -1, dtype=np.int64)
    dist = np.full((len(Q), k), np.nan)
    groups: dict[bytes, list[int]] = {}
    rows: list[np.ndarray] = []
    for i in range(len(Q)):
        r = np.arange(len(Z)) if among is None else np.asarray(among[i])
        if r.dtype == bool:
            r = np.flatnonzero(r)
        rows.append(r.astype(np.int64))
        groups.setdefault(rows[-1].tobytes(), []).append(i)
    for queries in groups.values():
        r = rows[queries[0]]
        if len(r) == 0:
            continue
        m = min(k, len(r))
        nn = NearestNeighbors(n_neighbors=m, algorithm="auto").fit(Z[r])
        d, j = nn.kneighbors(Qz[queries])
        idx[queries, :m] = r[j]
        dist[queries, :m] = d
    return Neighbours(idx, dist, scale)


def typical_spacing(data: DistillationData, rows: np.ndarray, *, scale: np.ndarray | None = None,
                    sample: int = 2000, seed: int = 0) -> float:
    """The median distance (in standard deviations) from a recorded state to its nearest other recorded state among
    ``rows``: how far apart the evidence usually lies, to read a query's distance against. NaN below 2 rows."""
    from sklearn.neighbors import NearestNeighbors

    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) < 2:
        return float("nan")
    scale = data.scale() if scale is None else scale
    Z = np.unique(data.observations[rows], axis=0) / scale  # repeated states are one state, not a spacing of 0
    if len(Z) < 2:
        return float("nan")
    pick = np.random.default_rng(seed).choice(len(Z), size=min(sample, len(Z)), replace=False)
    d, _ = NearestNeighbors(n_neighbors=2).fit(Z).kneighbors(Z[pick])
    return float(np.median(d[:, 1]))
