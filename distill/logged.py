"""Learn a controller from logged data: behaviour cloning of a method's student, judged on a held-out part of the log.

A plant with logs and no simulator (a building, a process line) has no teacher to ask and no environment to roll
out, so no DAgger: the method's student (the same estimator and options as ``interp-rl distill METHOD``, e.g. a
tree's ``max_leaves``) is fitted to the logged actions directly, on part of the log, and judged by how closely it
reproduces the actions in the part it never saw: R² per action for continuous actions; for a discrete action (a
setpoint in whole degrees), the share of rows where it plays the logged class, against always playing the most
common one, and the confusion matrix. Given an environment (a log of a task interp-rl knows, such as a Minari
dataset of CartPole), its return there too.

The held-out part is whole episodes (the schema's ``episode`` column, a Minari dataset's episodes): rows a few
minutes apart are near copies of each other, so rows drawn at random would put a copy of most held-out rows in the
training part and flatter the controller. A log without episodes is cut into :data:`N_BLOCKS` contiguous blocks
of rows (it is taken to be in time order) and whole blocks are held out. Which episodes or blocks are held out is
drawn with the seed, as many as bring the held-out rows closest to the share asked for.

:func:`fit_from_log` is the job behind ``interp-rl distill METHOD --data LOG``: it writes the same folder as a
distillation from a teacher (:func:`distill.job.run_job`), with the log's path and sha256 in the controller's
provenance.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from distill.dagger import DAgger, _jsonable, fill_student
from distill.folder import CONFIG_FILE, METRICS_FILE, _save_evidence, _size_text, write_controller_files
from interp_rl.errors import InterpRLError, bad_value
from interp_rl.io import atomic_write_text, json_safe
from interp_rl.logged_data import LoggedData
from interp_rl.program import Controller

if TYPE_CHECKING:
    from distill.registry import Method

__all__ = ["N_BLOCKS", "LogSplit", "behaviour_clone", "check_held_out", "check_log_settings", "fit_from_log",
           "log_fidelity", "log_settings", "split_log"]

#: A log without episodes is cut into this many contiguous blocks of rows for the held-out split.
N_BLOCKS = 20


def log_settings(method: Method) -> tuple[str, ...]:
    """The settings of ``method`` that apply to learning from a log: its student's, the seed, a tree's leaf merging,
    and ``eval_episodes`` (the return, when an environment is given). DAgger's, the fine-tuning's and the other
    stages' need a teacher or an environment to roll out.

    >>> from distill.methods import get_method
    >>> log_settings(get_method("linear"))
    ('max_terms', 'alpha', 'seed', 'eval_episodes')
    """
    student = [o.name for o in method.options if all(p.startswith("dagger__student__") for p in o.params)]
    other = [o.name for o in method.options if o.name in ("seed", "collapse_atol")]
    return (*student, *other, "eval_episodes")


def check_log_settings(method: Method, settings: dict[str, Any], *, owner: str | None = None,
                       spell: Callable[[str], str] = lambda name: name) -> None:
    """Refuse, in one line, settings of ``method`` that do not apply to a log (see :func:`log_settings`), and a
    method that cannot learn from one. ``spell`` says a setting as the user typed it (``--iterations``)."""
    owner = owner or f"method {method.name!r}"
    base = (method.make().dagger or DAgger())._base_student()
    if any(key.split("__")[-1] == "teacher" for key in base.get_params(deep=True)):
        raise InterpRLError(f"Method {method.name!r} reads a teacher's own scores; it cannot learn from a log "
                            "(tree, linear, moe and sindy can).")
    known = set(method.defaults())
    fits = log_settings(method)
    wrong = [k for k in settings if k in known and k not in fits]
    if wrong:
        verb = "does" if len(wrong) == 1 else "do"
        raise InterpRLError(f"{', '.join(spell(k) for k in wrong)} {verb} not apply when learning from a log (no "
                            f"teacher to ask, no environment to roll out); {owner} takes "
                            f"{', '.join(spell(k) for k in fits)}.")


@dataclass(frozen=True)
class LogSplit:
    """Which rows of a log a student is fitted on and which are held out to judge it.

    Examples
    --------
    >>> import numpy as np
    >>> from interp_rl.logged_data import LoggedData
    >>> from interp_rl.program import Signal
    >>> data = LoggedData(X=np.zeros((6, 1)), y=np.zeros((6, 1)), features=[Signal("x")], actions=[Signal("u")],
    ...                   episodes=np.array([0, 0, 1, 1, 2, 2]), episode_labels=["mon", "tue", "wed"],
    ...                   episode_column="day")
    >>> split = split_log(data, held_out=0.3, seed=0)
    >>> split.unit, split.held_out_units, split.held_out.tolist()
    ('episode', ['wed'], [4, 5])
    """

    train: np.ndarray
    """Row indices the student is fitted on, increasing."""
    held_out: np.ndarray
    """Row indices held out, increasing."""
    unit: str
    """``"episode"`` (whole episodes held out) or ``"block"`` (contiguous blocks of rows)."""
    column: str | None
    """The episode column (``None`` for blocks)."""
    train_units: list[Any]
    """The episodes (their column's values) or blocks (``[first, last]`` data rows, from 1) fitted on."""
    held_out_units: list[Any]
    """The episodes or blocks held out."""
    share: float
    """The share of rows asked to be held out."""
    seed: int

    def to_dict(self) -> dict[str, Any]:
        """What ``metrics.json``, ``config.json`` and the controller's provenance say of the split."""
        return {"unit": self.unit, "column": self.column, "held_out_share": self.share, "seed": self.seed,
                "train_rows": len(self.train), "held_out_rows": len(self.held_out),
                "train_units": self.train_units, "held_out_units": self.held_out_units}


def check_held_out(held_out: Any, owner: str = "fit_from_log") -> float:
    """``held_out`` as a float, or the one-line error for a share outside (0, 1).

    >>> check_held_out(1.5)
    Traceback (most recent call last):
    ...
    interp_rl.errors.InvalidParameterError: The 'held_out' parameter of fit_from_log must be a share of the rows in \
(0, 1). Got 1.5 instead.
    """
    if isinstance(held_out, bool) or not isinstance(held_out, (int, float)) or not 0 < held_out < 1:
        raise bad_value("held_out", owner, "a share of the rows in (0, 1)", held_out)
    return float(held_out)


def split_log(data: LoggedData, held_out: float = 0.2, seed: int = 0) -> LogSplit:
    """Hold out whole episodes (or contiguous blocks of rows) of ``data``, drawn with ``seed`` (module docstring).

    Parameters
    ----------
    data : LoggedData
        The log.
    held_out : float, default=0.2
        The share of rows to hold out, in (0, 1); whole episodes or blocks are held out, as many as bring it
        closest (at least one, and at least one left to fit on).
    seed : int, default=0
        Draws which episodes or blocks.
    """
    held_out = check_held_out(held_out, "split_log")
    n = data.n_rows
    if data.episodes is not None:
        unit, column = "episode", data.episode_column
        of_row = data.episodes
        n_units = int(of_row.max()) + 1
        labels = list(data.episode_labels or range(n_units))
    else:
        unit, column = "block", None
        n_units = min(N_BLOCKS, n)
        of_row = (np.arange(n) * n_units) // n
        labels = [[int(np.flatnonzero(of_row == b)[0]) + 1, int(np.flatnonzero(of_row == b)[-1]) + 1]
                  for b in range(n_units)]
    if n_units < 2:
        what = f"one episode ({column!r} is {labels[0]!r} throughout)" if unit == "episode" else "one row"
        hint = " or drop 'episode' from the schema to hold out blocks of rows" if unit == "episode" else ""
        raise InterpRLError(f"The log holds {what}; holding part of it out takes at least two{hint}.")
    sizes = np.bincount(of_row, minlength=n_units)
    order = np.random.default_rng(seed).permutation(n_units)
    rows_out = np.cumsum(sizes[order])[: n_units - 1]  # held out: the first k + 1 units drawn, k < n_units - 1
    k = int(np.argmin(np.abs(rows_out - held_out * n))) + 1
    out_units = np.sort(order[:k])
    mask = np.isin(of_row, out_units)
    in_units = np.setdiff1d(np.arange(n_units), out_units)
    return LogSplit(train=np.flatnonzero(~mask), held_out=np.flatnonzero(mask), unit=unit, column=column,
                    train_units=[labels[u] for u in in_units], held_out_units=[labels[u] for u in out_units],
                    share=float(held_out), seed=int(seed))


def behaviour_clone(method: Method, data: LoggedData, settings: dict[str, Any] | None = None, *,
                    rows: np.ndarray | None = None) -> Any:
    """``method``'s student, with ``settings`` (its options, e.g. ``max_leaves``), fitted to the logged actions.

    The student is the one ``method`` distils with (bounds filled from the log: a discrete action's class scores
    within ``[0, 1]``, a continuous action within its logged range or the schema's bounds; ``random_state`` from
    ``seed``), fitted to ``data.targets`` on ``rows`` (default: all); a tree's sibling leaves are then merged with
    ``collapse_atol``. ``data.outputs`` names what the fitted student outputs.

    Examples
    --------
    >>> from distill.methods import get_method
    >>> from interp_rl.datasets import building_log
    >>> from interp_rl.logged_data import from_frame
    >>> data = from_frame(building_log(n_days=7), {"features": {"occupancy": {}, "outdoor_temperature": {"unit": "°C"}},
    ...                   "actions": {"heating_setpoint": {"unit": "°C", "discrete": True}}})
    >>> tree = behaviour_clone(get_method("tree"), data, {"max_leaves": 6, "leaf_model": "constant"})
    >>> tree.get_n_leaves(), data.played(tree.predict([[1, 5.0], [0, -3.0], [0, 12.0]])).tolist()  # setpoints, °C
    (6, [21, 17, 15])
    """
    settings = dict(settings or {})
    check_log_settings(method, settings)
    resolved = method.resolve(settings)
    base = (method.build(resolved).dagger or DAgger())._base_student()
    student = fill_student(base, {"random_state": resolved["seed"],
                                  "action_low": np.asarray(data.action_low, dtype=np.float64).tolist(),
                                  "action_high": np.asarray(data.action_high, dtype=np.float64).tolist()})
    idx = np.arange(data.n_rows) if rows is None else np.asarray(rows)
    student.fit(data.X[idx], data.targets[idx])
    if resolved.get("collapse_atol"):
        from distill.prune import collapse_similar

        student = collapse_similar(student, resolved["collapse_atol"])
    return student


def log_fidelity(controller: Controller, data: LoggedData, rows: np.ndarray,
                 baseline_rows: np.ndarray | None = None) -> dict[str, Any]:
    """How closely ``controller`` reproduces the logged actions on ``rows``.

    Returns
    -------
    dict
        ``rows``; for continuous actions ``r2`` (the mean over actions), ``r2_per_action``, ``rmse_per_action`` (in
        the action's unit) and ``mse``; for a discrete action ``accuracy`` (the share of rows where it plays the
        logged class), ``majority_class`` and ``majority_accuracy`` (always playing the class most common on
        ``baseline_rows``, default ``rows``: the accuracy to beat), ``mean_abs_error`` (in the action's unit) and
        ``confusion_matrix``: ``classes`` and ``counts``, where ``counts[i][j]`` rows logged as ``classes[i]`` were
        played as ``classes[j]``.
    """
    from sklearn.metrics import confusion_matrix, mean_squared_error, r2_score

    rows = np.asarray(rows)
    pred = np.asarray(controller.predict(data.X[rows])).reshape(len(rows), -1)
    out: dict[str, Any] = {"rows": len(rows)}
    if data.discrete:
        logged = data.y[rows, 0].astype(np.int64)
        played = data.played(pred)
        base = data.y[rows if baseline_rows is None else np.asarray(baseline_rows), 0].astype(np.int64)
        values, counts = np.unique(base, return_counts=True)
        majority = int(values[np.argmax(counts)])
        out.update({
            "accuracy": float(np.mean(played == logged)),
            "majority_class": majority,
            "majority_accuracy": float(np.mean(logged == majority)),
            "mean_abs_error": float(np.mean(np.abs(played - logged))),
            "confusion_matrix": {"classes": [int(c) for c in data.classes],
                                 "counts": confusion_matrix(logged, played, labels=data.classes).tolist()},
        })
        return out
    Y = data.y[rows]
    names = [a.name for a in data.actions]
    r2 = np.atleast_1d(r2_score(Y, pred, multioutput="raw_values")) if len(rows) > 1 else np.full(len(names), np.nan)
    rmse = np.sqrt(np.mean((pred - Y) ** 2, axis=0))
    out.update({"r2": float(np.mean(r2)), "r2_per_action": dict(zip(names, r2.tolist(), strict=True)),
                "rmse_per_action": dict(zip(names, rmse.tolist(), strict=True)),
                "mse": float(mean_squared_error(Y, pred))})
    return out


def _check_env(env_fn: Callable[[int], Any], data: LoggedData, seed: int) -> str:
    """The environment's task, after checking that a controller learnt from ``data`` fits it."""
    env = env_fn(seed)
    try:
        obs, act = env.observation_space.shape, env.action_space.shape
    finally:
        env.close()
    task = getattr(env_fn, "task_id", "") or data.task or "the environment"
    if obs != (len(data.features),):
        raise InterpRLError(f"The log has {len(data.features)} features, but {task} observes "
                            f"{obs[0] if len(obs) == 1 else obs}; is the log from another task?")
    if act != (data.n_outputs,):
        what = "class scores" if data.discrete else "actions"
        raise InterpRLError(f"A controller learnt from the log outputs {data.n_outputs} {what}, but {task} takes "
                            f"{act[0] if len(act) == 1 else act}; is the log from another task?")
    return str(task)


def fit_from_log(method: Method, data: LoggedData, settings: dict[str, Any], out_dir: str | Path, *,
                 held_out: float = 0.2, env_fn: Callable[[int], Any] | None = None,
                 progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Learn a ``method`` controller from a log by behaviour cloning, judge it on a held-out part, write its folder.

    Writes to ``out_dir`` what :func:`distill.job.run_job` writes for a teacher: ``controller.json`` (its
    provenance names the log's path and sha256, the schema's, the method, settings and split; for a discrete action
    the classes, read back by :func:`interp_rl.logged_data.class_values`), ``distillation.npz`` (the rows it was fitted
    on),
    ``controller.py``, ``controller.c``, ``rules.txt``, ``KIND.dot`` and ``KIND.svg``, ``config.json`` and, last,
    ``metrics.json``: the fidelity on the held-out rows and on the rows fitted (:func:`log_fidelity`), the split
    (:func:`split_log`), size and time, and with ``env_fn`` the controller's return on ``eval_episodes`` episodes
    (seeds ``seed ...``) next to the log's own episodes' mean return where the log has rewards.

    Parameters
    ----------
    method : Method
        A registered method (``distill.methods.get_method("tree")``) whose student does not need a teacher.
    data : LoggedData
        The log (:func:`interp_rl.logged_data.read_log`).
    settings : dict
        The method's settings by name (``{"max_leaves": 8}``); only those of :func:`log_settings` apply.
    out_dir : str or Path
        The folder to write; one holding a finished controller is refused.
    held_out : float, default=0.2
        The share of the log held out (whole episodes or blocks).
    env_fn : callable, optional
        ``env_fn(seed) -> gymnasium.Env`` of the task the log comes from, when there is one.
    progress : callable, optional
        Called with ``{"stage": "fit", ...}`` and ``{"stage": "evaluate", ...}`` as the job goes.

    Returns
    -------
    dict
        The metrics written to ``metrics.json``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from distill.methods import get_method
    >>> from interp_rl.datasets import write_building_log
    >>> from interp_rl.logged_data import read_log
    >>> folder = Path(tempfile.mkdtemp())
    >>> data = read_log(write_building_log(folder / "building.csv", n_days=10))
    >>> metrics = fit_from_log(get_method("tree"), data, {"max_leaves": 8, "leaf_model": "constant"},
    ...                        folder / "tree")
    >>> held = metrics["fidelity_held_out"]
    >>> metrics["split"]["held_out_units"], held["accuracy"] > held["majority_accuracy"]
    ([4, 6], True)
    """
    check_held_out(held_out)
    out = Path(out_dir)
    if (out / METRICS_FILE).exists():
        raise InterpRLError(f"{str(out)!r} already holds a distilled controller; choose another --out.")
    check_log_settings(method, settings)
    resolved = method.resolve(settings)
    fits = log_settings(method)
    made_by = {k: resolved[k] for k in fits if k != "eval_episodes"}  # what the controller is a function of
    split = split_log(data, held_out, resolved["seed"])
    task = _check_env(env_fn, data, resolved["seed"]) if env_fn is not None else data.task
    out.mkdir(parents=True, exist_ok=True)
    base = (method.build(resolved).dagger or DAgger())._base_student()
    config = {"method": method.name, "learnt_from": "log", "settings": {k: resolved[k] for k in fits},
              "params": _jsonable({f"student__{k}": v for k, v in base.get_params(deep=True).items()}),
              "held_out": float(held_out), "task": task, "log": data.source, "split": split.to_dict()}
    atomic_write_text(out / CONFIG_FILE, json.dumps(json_safe(config), indent=1) + "\n")

    if progress is not None:
        progress({"stage": "fit", "rows": len(split.train), "held_out_rows": len(split.held_out)})
    t0 = time.perf_counter()
    student = behaviour_clone(method, data, made_by, rows=split.train)
    seconds = time.perf_counter() - t0
    provenance = {k: data.source.get(k) for k in ("format", "path", "dataset_id", "sha256", "rows", "schema",
                                                  "schema_sha256") if data.source.get(k) is not None}
    metadata: dict[str, Any] = {"method": method.name, "settings": made_by, "log": provenance,
                                "split": {k: v for k, v in split.to_dict().items() if k != "train_units"}}
    if data.discrete:
        metadata["classes"] = data.class_metadata()
    controller = student.to_controller(data.features, data.outputs, task=task, metadata=metadata)
    size = controller.size()
    metrics: dict[str, Any] = {
        "method": method.name, "kind": controller.kind, "task": task, "learnt_from": "log", "size": size, **size,
        "distill_seconds": seconds, "log": data.source, "split": split.to_dict(), "discrete": data.discrete,
        "fidelity_held_out": log_fidelity(controller, data, split.held_out, split.train),
        "fidelity_train": log_fidelity(controller, data, split.train, split.train),
    }
    held = metrics["fidelity_held_out"]
    shown = {"held_out_accuracy": held["accuracy"]} if data.discrete else {"held_out_r2": held["r2"]}
    if env_fn is not None:
        from interp_rl.rollouts import evaluate

        episodes = resolved["eval_episodes"]
        if progress is not None:
            progress({"stage": "evaluate", "episodes": episodes})
        res = evaluate(controller, env_fn, episodes, resolved["seed"])
        metrics.update({"episodes": episodes, "seed": resolved["seed"], "student_return": res.mean_return,
                        "student_return_std": res.std_return, "student_returns": res.returns,
                        "student_lengths": res.lengths, "worst_student_return": float(min(res.returns))})
        shown["student_return"] = res.mean_return
        if data.episode_returns is not None and len(data.episode_returns):
            metrics["logged_return"] = float(np.mean(data.episode_returns))
            metrics["logged_episodes"] = len(data.episode_returns)
    controller.metadata["metrics"] = shown
    _save_evidence(out, (data.X[split.train], data.targets[split.train], None), None)
    write_controller_files(controller, out, metrics, f"{task or 'log'} {method.name} ({_size_text(size)})")
    return metrics
