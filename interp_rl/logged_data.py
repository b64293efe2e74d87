"""Logged data to learn a controller from when there is no teacher: a CSV or Parquet log, or a Minari dataset.

A plant without a simulator (a building, a process line) has logs, not a gymnasium environment. :func:`read_log`
reads one into :class:`LoggedData`: the feature columns a controller may read, the action column(s) it should set,
their names and units, which rows form an episode, and where the data came from (path and sha256), so that a
student can be fitted to it by behaviour cloning (:func:`distill.logged.fit_from_log`).

A CSV or Parquet log needs a schema naming its columns, ``LOG.schema.toml`` beside the log (``building.csv``:
``building.schema.toml``; ``.schema.json`` works too) or a file given explicitly::

    task = "building-heating"   # optional: what the controller is for
    episode = "day"             # optional: the column whose rows form one episode (kept together when held out)

    [features]                  # the columns a controller may read, in this order
    time_of_day = { unit = "h", description = "local time, hours after midnight" }
    zone_temperature = { unit = "°C", column = "Zone Temp (C)" }

    [actions]                   # the column(s) it sets
    heating_setpoint = { unit = "°C", discrete = true }

Each column takes ``unit``, ``description`` and ``column`` (the log's own column name, when the name shown differs);
an action also takes ``discrete`` (whole numbers that are classes, such as setpoints in whole degrees), ``classes``
(a discrete action's classes, when some never occur in the log) and, if continuous, ``low``/``high`` (the bounds
its actions are clipped to; default: the range logged). Nothing is guessed from column names: no name tells an
action from a feature, a setpoint from a measurement or a day counter from either, and a wrong guess would train a
controller on its own target.

A discrete action becomes one score per class, as discrete tasks do everywhere in interp-rl
(``envs.wrappers.ClassScores``): the student is fitted to one-hot labels (a regression tree on them is a
classification tree) and the class with the highest score is played, ties going to the first. The controller's
metadata keeps the classes' values, so :func:`class_values` turns its scores back into setpoints. A log has either
continuous actions or one discrete action.

A Minari dataset (its folder, or the id of a dataset already in the local Minari folder: interp-rl never
downloads) needs no schema: its observation components are the features (``obs_0``, ...), its action the action
(a ``Discrete`` one is discrete, with classes ``start ... start + n - 1``) and its episodes the episodes. A schema
there names the features and the action in order (``column`` keys do not apply). Reading one needs the ``minari``
package (``pip install 'interp-rl[logs]'``), as Parquet needs ``pyarrow``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from interp_rl.errors import ControllerFormatError, InterpRLError, LogError
from interp_rl.program import Controller, Signal

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LOG_SUFFIXES",
    "LogColumn",
    "LogSchema",
    "LoggedData",
    "class_note",
    "class_signals",
    "class_values",
    "default_schema_path",
    "from_frame",
    "path_sha256",
    "read_log",
    "read_schema",
]

#: File suffixes read as logs (a folder, or an id of a local Minari dataset, is read as a Minari dataset).
LOG_SUFFIXES = (".csv", ".parquet", ".pq")
SCHEMA_SUFFIXES = (".schema.toml", ".schema.json")
_TOP_KEYS = ("task", "episode", "features", "actions")
_FEATURE_KEYS = ("unit", "description", "column")
_ACTION_KEYS = (*_FEATURE_KEYS, "discrete", "classes", "low", "high")
_INSTALL = "pip install 'interp-rl[logs]'"


@dataclass(frozen=True)
class LogColumn:
    """One feature or action of a log, as its schema names it.

    Examples
    --------
    >>> LogColumn("zone_temperature", "Zone Temp (C)", unit="°C").signal.label
    'zone_temperature [°C]'
    """

    name: str
    """The name shown in rules, pictures and exports."""
    column: str
    """The log's own column name."""
    unit: str = ""
    description: str = ""
    discrete: bool = False
    """An action whose whole-number values are classes."""
    classes: tuple[int, ...] = ()
    """A discrete action's classes, when the schema lists them (else those the log holds)."""
    low: float | None = None
    """A continuous action's lower bound (``None``: the lowest value logged)."""
    high: float | None = None
    """A continuous action's upper bound (``None``: the highest value logged)."""

    @property
    def signal(self) -> Signal:
        """The column as a named :class:`~interp_rl.program.Signal` with its unit."""
        return Signal(self.name, self.unit, self.description)


@dataclass(frozen=True)
class LogSchema:
    """What each column of a log is: the features a controller may read, the action(s) it sets, the episodes.

    Build it with :meth:`from_dict` (the contents of a schema file, see the module docstring) or
    :func:`read_schema`.

    Examples
    --------
    >>> schema = LogSchema.from_dict({"episode": "day",
    ...                               "features": {"zone_temperature": {"unit": "°C"}},
    ...                               "actions": {"heating_setpoint": {"unit": "°C", "discrete": True}}})
    >>> [c.name for c in schema.features], schema.discrete, schema.episode
    (['zone_temperature'], True, 'day')
    >>> LogSchema.from_dict({"features": {"t": {"units": "s"}}, "actions": {"u": {}}})
    Traceback (most recent call last):
    ...
    interp_rl.errors.LogError: In the schema, feature 't' has an unknown key 'units'; known: unit, description, \
column.
    """

    features: tuple[LogColumn, ...]
    actions: tuple[LogColumn, ...]
    episode: str | None = None
    """The column whose rows form one episode (``None``: the log is one long run)."""
    task: str = ""
    """What the controller is for, as its ``task`` (``""``: unnamed)."""
    source: str = ""
    """Where the schema was read from, quoted (``""``: given in code)."""

    @property
    def discrete(self) -> bool:
        """Whether the log's action is discrete (its one action column holds classes)."""
        return any(a.discrete for a in self.actions)

    @property
    def where(self) -> str:
        """``the schema 'PATH'`` (or ``the schema``), for messages."""
        return f"the schema {self.source}" if self.source else "the schema"

    @classmethod
    def from_dict(cls, d: Any, *, source: str = "") -> LogSchema:
        """A schema from the contents of a schema file; anything malformed raises a one-line :class:`LogError`."""
        where = f"the schema {source}" if source else "the schema"
        if not isinstance(d, dict):
            raise LogError(f"{where[0].upper()}{where[1:]} must be a table with [features] and [actions].")
        for key in d:
            if key not in _TOP_KEYS:
                raise LogError(f"{where[0].upper()}{where[1:]} has an unknown key {key!r}; known: "
                               f"{', '.join(_TOP_KEYS)}.")
        for key in ("task", "episode"):
            if key in d and not isinstance(d[key], str):
                raise LogError(f"In {where}, {key!r} must be a string (a column name for 'episode'). "
                               f"Got {d[key]!r} instead.")
        features = _columns(d.get("features"), "feature", _FEATURE_KEYS, where)
        actions = _columns(d.get("actions"), "action", _ACTION_KEYS, where)
        seen: dict[str, str] = {}
        for what, col in [("feature", c) for c in features] + [("action", c) for c in actions]:
            if col.column in seen:
                raise LogError(f"In {where}, column {col.column!r} is named twice (as {seen[col.column]} and as "
                               f"{what} {col.name!r}); a column is a feature or an action, once.")
            seen[col.column] = f"{what} {col.name!r}"
        names = [c.name for c in (*features, *actions)]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise LogError(f"In {where}, the name {twice[0]!r} is given to two columns; names must differ.")
        discrete = [a.name for a in actions if a.discrete]
        if discrete and len(actions) > 1:
            others = ", ".join(a.name for a in actions if a.name != discrete[0])
            raise LogError(f"In {where}, the discrete action {discrete[0]!r} comes with other actions ({others}): a "
                           "log's actions are continuous columns, or one discrete column.")
        episode = d.get("episode")
        if episode is not None and any(a.column == episode for a in actions):
            raise LogError(f"In {where}, the episode column {episode!r} is also an action.")
        return cls(features=features, actions=actions, episode=episode, task=str(d.get("task", "")), source=source)


def _columns(table: Any, what: str, keys: tuple[str, ...], where: str) -> tuple[LogColumn, ...]:
    plural = f"{what}s"
    if table is None or (isinstance(table, dict) and not table):
        role = "a controller may read" if what == "feature" else "a controller sets"
        article = "an" if what == "action" else "a"
        raise LogError(f"{where[0].upper()}{where[1:]} names no {what} columns: add {article} [{plural}] table with "
                       f"one entry per column {role}.")
    if not isinstance(table, dict):
        raise LogError(f"In {where}, {plural!r} must be a table of columns. Got {table!r} instead.")
    out = []
    for name, spec in table.items():
        spec = {} if spec is None else spec
        if not isinstance(spec, dict):
            raise LogError(f"In {where}, {what} {name!r} must be a table such as {{ unit = \"°C\" }}. "
                           f"Got {spec!r} instead.")
        for key in spec:
            if key not in keys:
                raise LogError(f"In {where}, {what} {name!r} has an unknown key {key!r}; known: {', '.join(keys)}.")

        def text(key: str, spec: dict[str, Any] = spec, name: str = name) -> str:
            value = spec.get(key, "")
            if not isinstance(value, str):
                raise LogError(f"In {where}, {what} {name!r}: {key!r} must be a string. Got {value!r} instead.")
            return value

        discrete = spec.get("discrete", False)
        if not isinstance(discrete, bool):
            raise LogError(f"In {where}, {what} {name!r}: 'discrete' must be true or false. Got {discrete!r} instead.")
        classes = spec.get("classes")
        if classes is not None:
            if not discrete:
                raise LogError(f"In {where}, {what} {name!r} lists classes but is not discrete = true.")
            if (not isinstance(classes, list) or not classes
                    or not all(_whole(c) for c in classes) or len(set(classes)) != len(classes)):
                raise LogError(f"In {where}, {what} {name!r}: 'classes' must be a list of distinct whole numbers "
                               f"such as [15, 16, 17]. Got {classes!r} instead.")
        bounds = {}
        for key in ("low", "high"):
            v = spec.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v)):
                raise LogError(f"In {where}, {what} {name!r}: {key!r} must be a number. Got {v!r} instead.")
            if v is not None and discrete:
                raise LogError(f"In {where}, {what} {name!r} is discrete; 'low' and 'high' bound continuous "
                               "actions only.")
            bounds[key] = None if v is None else float(v)
        if bounds["low"] is not None and bounds["high"] is not None and bounds["low"] > bounds["high"]:
            raise LogError(f"In {where}, {what} {name!r}: 'low' ({bounds['low']:g}) is above 'high' "
                           f"({bounds['high']:g}).")
        out.append(LogColumn(name=str(name), column=text("column") or str(name), unit=text("unit"),
                             description=text("description"), discrete=discrete,
                             classes=tuple(sorted(int(c) for c in classes)) if classes else (), **bounds))
    return tuple(out)


def _whole(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and float(v).is_integer()


def class_signals(action: Signal, classes: Any) -> list[Signal]:
    """One score per class of a discrete action: what a controller learnt from it outputs.

    >>> [s.label for s in class_signals(Signal("heating_setpoint", "°C"), [15, 16])]
    ['heating_setpoint=15 [score]', 'heating_setpoint=16 [score]']
    >>> class_signals(Signal("heating_setpoint", "°C"), [15, 16])[1].description
    'class 1: heating_setpoint = 16 °C'
    """
    unit = f" {action.unit}" if action.unit else ""
    return [Signal(f"{action.name}={int(c)}", "score", f"class {k}: {action.name} = {int(c)}{unit}")
            for k, c in enumerate(classes)]


@dataclass(frozen=True, eq=False)
class LoggedData:
    """A log read for learning a controller: features, logged actions, their names and units, episodes, origin.

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
        The features of each row, in their units.
    y : ndarray of shape (n, n_actions)
        The logged actions (a discrete action: its class values, one column).
    features : list of Signal
        One per feature column.
    actions : list of Signal
        One per logged action column.
    discrete : bool
        Whether the (one) action holds classes.
    classes : ndarray of int
        A discrete action's class values, increasing (empty when continuous).
    task : str
        What the controller is for (its ``task``).
    episodes : ndarray of shape (n,), optional
        The episode of each row, numbered from 0 in order of appearance (``None``: one long run).
    episode_labels : list, optional
        The episode column's value for each episode number (``episode_labels[episodes[i]]``).
    episode_column : str, optional
        The column the episodes come from.
    outputs : list of Signal, optional
        What a controller learnt from the log outputs (default: the actions; a discrete action's
        :func:`class_signals`).
    action_low, action_high : ndarray, optional
        Bounds of the outputs (default: the range logged; a class score's ``[0, 1]``).
    episode_returns : ndarray, optional
        Each episode's return, when the log has rewards (a Minari dataset).
    source : dict
        Where the data came from: ``format``, ``path``, ``sha256``, ``rows``, the schema's path and sha256.
    named : bool
        Whether the names came from a schema (else ``obs_0``, ..., which a task's names may replace).

    Examples
    --------
    >>> import numpy as np
    >>> data = LoggedData(X=np.array([[20.0], [24.0], [21.0]]), y=np.array([[21], [20], [21]]),
    ...                   features=[Signal("zone_temperature", "°C")], actions=[Signal("heating_setpoint", "°C")],
    ...                   discrete=True, classes=np.array([20, 21]))
    >>> [s.name for s in data.outputs], data.targets.tolist()
    (['heating_setpoint=20', 'heating_setpoint=21'], [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    >>> data.played(np.array([[0.2, 0.7], [0.9, 0.1]])).tolist()
    [21, 20]
    """

    X: np.ndarray
    y: np.ndarray
    features: list[Signal]
    actions: list[Signal]
    discrete: bool = False
    classes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    task: str = ""
    episodes: np.ndarray | None = None
    episode_labels: list[Any] | None = None
    episode_column: str | None = None
    outputs: list[Signal] = field(default_factory=list)
    action_low: np.ndarray | None = None
    action_high: np.ndarray | None = None
    episode_returns: np.ndarray | None = None
    source: dict[str, Any] = field(default_factory=dict)
    named: bool = True

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.float64)
        y = y.reshape(len(y), -1) if y.ndim == 1 else y
        if X.ndim != 2 or y.ndim != 2 or len(X) != len(y):
            raise LogError(f"A log's X is (rows, features) and y (rows, actions) with as many rows; got shapes "
                           f"{X.shape} and {y.shape}.")
        if X.shape[1] != len(self.features) or y.shape[1] != len(self.actions):
            raise LogError(f"A log of {X.shape[1]} feature and {y.shape[1]} action columns needs as many names; got "
                           f"{len(self.features)} and {len(self.actions)}.")
        classes = np.asarray(self.classes, dtype=np.int64).ravel()
        if self.discrete:
            if y.shape[1] != 1:
                raise LogError(f"A log's actions are continuous columns, or one discrete column; got "
                               f"{y.shape[1]} discrete columns.")
            if not len(classes) or np.any(np.diff(classes) <= 0):
                raise LogError(f"A discrete action's classes are distinct increasing whole numbers; got "
                               f"{classes.tolist()}.")
            missing = ~np.isin(y[:, 0], classes)
            if missing.any():
                raise LogError(f"The logged action {y[missing, 0][0]:g} is not one of the classes "
                               f"{', '.join(map(str, classes.tolist()))}.")
        set_ = object.__setattr__
        set_(self, "X", X)
        set_(self, "y", y)
        set_(self, "classes", classes)
        set_(self, "features", list(self.features))
        set_(self, "actions", list(self.actions))
        outputs = list(self.outputs) or (class_signals(self.actions[0], classes) if self.discrete else
                                         list(self.actions))
        if len(outputs) != self.n_outputs:
            raise LogError(f"A controller learnt from this log has {self.n_outputs} outputs; {len(outputs)} names "
                           "were given.")
        set_(self, "outputs", outputs)
        if self.discrete:
            low, high = np.zeros(self.n_outputs), np.ones(self.n_outputs)
        else:
            low = y.min(axis=0) if len(y) else np.full(self.n_outputs, -np.inf)
            high = y.max(axis=0) if len(y) else np.full(self.n_outputs, np.inf)
        for name, default in (("action_low", low), ("action_high", high)):
            given = getattr(self, name)
            value = default if given is None else np.asarray(given, dtype=np.float64).ravel()
            if value.shape != (self.n_outputs,):
                raise LogError(f"{name} needs {self.n_outputs} entries; got {value.shape[0]}.")
            set_(self, name, value)
        if self.episodes is not None:
            episodes = np.asarray(self.episodes, dtype=np.int64).ravel()
            if episodes.shape != (len(X),):
                raise LogError(f"A log's episodes give one number per row; got {episodes.shape[0]} for {len(X)} rows.")
            set_(self, "episodes", episodes)

    @property
    def n_rows(self) -> int:
        return len(self.X)

    @property
    def n_outputs(self) -> int:
        """What a controller learnt from the log outputs: one value per action, or one score per class."""
        return len(self.classes) if self.discrete else self.y.shape[1]

    @property
    def class_index(self) -> np.ndarray:
        """Each row's class, as an index into :attr:`classes` (a discrete action only)."""
        if not self.discrete:
            raise LogError("The log's actions are continuous; it has no classes.")
        return np.searchsorted(self.classes, self.y[:, 0].astype(np.int64))

    @property
    def targets(self) -> np.ndarray:
        """What a student is fitted to, ``(n, n_outputs)``: the actions, or a discrete action's one-hot classes."""
        return np.eye(len(self.classes))[self.class_index] if self.discrete else self.y

    def played(self, scores: np.ndarray) -> np.ndarray:
        """The class values played for class ``scores`` ``(n, n_classes)``: the highest score's (ties: the first)."""
        return self.classes[np.argmax(np.atleast_2d(scores), axis=1)]

    def class_metadata(self) -> dict[str, Any] | None:
        """What a controller's metadata keeps under ``classes`` (``None`` for continuous actions)."""
        if not self.discrete:
            return None
        return {"action": self.actions[0].to_dict(), "values": [int(c) for c in self.classes]}

    def renamed(self, features: list[Signal] | None = None, outputs: list[Signal] | None = None) -> LoggedData:
        """The same data under other names (a task's, for a log without a schema); the counts must match."""
        features = list(features) if features is not None else self.features
        outputs = list(outputs) if outputs is not None else self.outputs
        if len(features) != len(self.features) or len(outputs) != len(self.outputs):
            raise LogError(f"The log has {len(self.features)} features and {len(self.outputs)} outputs; "
                           f"{len(features)} and {len(outputs)} names were given.")
        actions = self.actions
        if not self.discrete:
            actions = outputs
        return replace(self, features=features, actions=actions, outputs=outputs, named=True)


# ------------------------------------------------------------------------------------------------ reading
def path_sha256(path: str | Path) -> str:
    """The sha256 of a file, or of a folder's files (each one's path relative to the folder, then its bytes, in
    path order): what a controller's provenance records of the log it was learnt from.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as f:
    ...     path_sha256(f.name)[:16]
    'e3b0c44298fc1c14'
    """
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        for f in sorted(q for q in p.rglob("*") if q.is_file()):
            h.update(f.relative_to(p).as_posix().encode("utf-8") + b"\0")
            _hash_file(h, f)
    else:
        _hash_file(h, p)
    return h.hexdigest()


def _hash_file(h: Any, path: Path) -> None:
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)


def default_schema_path(log: str | Path) -> Path:
    """Where a log's schema is looked for: ``LOG.schema.toml`` beside it, or ``LOG.schema.json`` if only that exists.

    >>> default_schema_path("runs/building.csv").as_posix()
    'runs/building.schema.toml'
    """
    p = Path(log)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    found = [p.with_name(stem + s) for s in SCHEMA_SUFFIXES if p.with_name(stem + s).is_file()]
    return found[0] if found else p.with_name(stem + SCHEMA_SUFFIXES[0])


def read_schema(path: str | Path) -> LogSchema:
    """A log's schema from a TOML or JSON file (see the module docstring); a bad one is a one-line :class:`LogError`."""
    p = Path(path)
    if not p.is_file():
        raise LogError(f"Schema file {str(p)!r} does not exist.")
    suffix = p.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise LogError(f"Schema file {str(p)!r}: use a .toml or .json file.")
    import tomllib

    try:
        text = p.read_text(encoding="utf-8")
        data = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LogError(f"Schema file {str(p)!r} is not valid {suffix[1:].upper()}: {' '.join(str(exc).split())}"
                       ) from None
    return LogSchema.from_dict(data, source=repr(str(p)))


def _as_schema(schema: LogSchema | dict[str, Any] | str | Path) -> tuple[LogSchema, Path | None]:
    if isinstance(schema, LogSchema):
        return schema, None
    if isinstance(schema, dict):
        return LogSchema.from_dict(schema), None
    return read_schema(schema), Path(schema)


def _is_minari_id(text: str) -> bool:
    """``namespace/name-v0`` or ``name-v0``: how Minari names datasets (a path with a log suffix is a file)."""
    return bool(re.fullmatch(r"([\w.-]+/)*[\w.-]+-v\d+", text)) and not text.lower().endswith(LOG_SUFFIXES)


def read_log(path: str | Path, schema: LogSchema | dict[str, Any] | str | Path | None = None) -> LoggedData:
    """Read a log to learn from: a ``.csv`` or ``.parquet`` file with its schema, or a Minari dataset.

    Parameters
    ----------
    path : str or Path
        A CSV or Parquet file; or a Minari dataset, as its folder or as the id of a dataset in the local Minari
        folder (``$MINARI_DATASETS_PATH``; nothing is downloaded).
    schema : LogSchema, dict, str or Path, optional
        The schema (a file, or its contents). Default: ``LOG.schema.toml`` (or ``.json``) beside a CSV or Parquet
        log, which must then exist; none for a Minari dataset.

    Returns
    -------
    LoggedData
        With ``source`` holding the log's format, path, sha256 and row count, and the schema's path and sha256.

    Raises
    ------
    LogError
        One line naming what is wrong and where: a missing file, a column the schema names that the log lacks (with
        the columns it has), an empty log, a missing value or a non-numeric one (with its row and column), a
        discrete action that is not a whole number.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "valve.csv").write_text("level_m,valve_pct\\n1.0,20\\n1.5,30\\n2.0,40\\n")
    >>> _ = (folder / "valve.schema.toml").write_text('[features]\\nlevel_m = { unit = "m" }\\n'
    ...                                               '[actions]\\nvalve_pct = { unit = "%" }\\n')
    >>> data = read_log(folder / "valve.csv")
    >>> data.X.ravel().tolist(), data.y.ravel().tolist(), data.outputs[0].label, data.source["rows"]
    ([1.0, 1.5, 2.0], [20.0, 30.0, 40.0], 'valve_pct [%]', 3)
    >>> _ = (folder / "valve.csv").write_text("level_m,valve_pct\\n1.0,20\\n,30\\n")
    >>> read_log(folder / "valve.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interp_rl.errors.LogError: '.../valve.csv' has no value in column 'level_m' at data row 2; every feature and \
action needs a number in every row (drop or fill such rows first).
    """
    p = Path(path)
    if p.is_dir() or (not p.exists() and _is_minari_id(str(path))):
        return read_minari(path, schema)
    if not p.exists():
        raise LogError(f"Log file {str(p)!r} does not exist.")
    suffix = p.suffix.lower()
    if suffix not in LOG_SUFFIXES:
        raise LogError(f"Log {str(p)!r}: use a .csv or .parquet file, or a Minari dataset (its folder, or its id).")
    frame = _read_frame(p, "csv" if suffix == ".csv" else "parquet")
    if schema is None:
        found = default_schema_path(p)
        if not found.is_file():
            raise LogError(f"No schema for {str(p)!r}: write {found.name!r} beside it naming its feature and action "
                           f"columns, or give one (--schema FILE). Its columns: {_column_list(frame)}.")
        schema = found
    sch, schema_file = _as_schema(schema)
    data = from_frame(frame, sch, name=repr(str(p)))
    source = {"format": "csv" if suffix == ".csv" else "parquet", "path": str(p), "sha256": path_sha256(p),
              "rows": data.n_rows, "schema": str(schema_file) if schema_file else None,
              "schema_sha256": path_sha256(schema_file) if schema_file else None}
    return replace(data, source=source)


def _read_frame(p: Path, fmt: str) -> pd.DataFrame:
    import pandas as pd

    if fmt == "csv":
        try:
            return pd.read_csv(p)
        except pd.errors.EmptyDataError:
            raise LogError(f"{str(p)!r} is empty (no header, no rows).") from None
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise LogError(f"{str(p)!r} is not a readable CSV file: {' '.join(str(exc).split())}") from None
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise LogError(f"Reading the Parquet log {str(p)!r} needs pyarrow: {_INSTALL}.") from None
    try:
        return pd.read_parquet(p)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid, OSError, ... for a file that is not Parquet
        raise LogError(f"{str(p)!r} is not a readable Parquet file: {' '.join(str(exc).split())}") from None


def _column_list(frame: pd.DataFrame, limit: int = 40) -> str:
    cols = [str(c) for c in frame.columns]
    more = f" ... ({len(cols) - limit} more)" if len(cols) > limit else ""
    return ", ".join(cols[:limit]) + more


def from_frame(frame: pd.DataFrame, schema: LogSchema | dict[str, Any] | str | Path, *, name: str = "the log",
               task: str | None = None) -> LoggedData:
    """A :class:`LoggedData` from a pandas DataFrame and its schema, every value checked (see :func:`read_log`).

    ``name`` says the log in messages (``'building.csv'``); ``task`` overrides the schema's.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"day": [0, 0, 1], "zone_temperature": [20.0, 24.1, 21.0],
    ...                       "heating_setpoint": [21, 20, 22]})
    >>> data = from_frame(frame, {"episode": "day", "features": {"zone_temperature": {"unit": "°C"}},
    ...                           "actions": {"heating_setpoint": {"unit": "°C", "discrete": True}}})
    >>> data.classes.tolist(), data.episodes.tolist(), data.outputs[2].description
    ([20, 21, 22], [0, 0, 1], 'class 2: heating_setpoint = 22 °C')
    >>> from_frame(frame, {"features": {"zone_temp": {}}, "actions": {"heating_setpoint": {}}})
    Traceback (most recent call last):
    ...
    interp_rl.errors.LogError: The schema names column 'zone_temp', which the log does not have; its columns: day, \
zone_temperature, heating_setpoint.
    """
    import pandas as pd

    sch, _ = _as_schema(schema)
    columns = [*sch.features, *sch.actions]
    have = {str(c) for c in frame.columns}
    for col in columns + ([LogColumn(sch.episode, sch.episode)] if sch.episode else []):
        if col.column not in have:
            what = f"names column {col.column!r}" + ("" if col.column == col.name else f" (for {col.name!r})")
            raise LogError(f"{sch.where[0].upper()}{sch.where[1:]} {what}, which {name} does not have; its columns: "
                           f"{_column_list(frame)}.")
    if len(frame) == 0:
        raise LogError(f"{name} holds no rows.")
    frame = frame.reset_index(drop=True)
    values = np.empty((len(frame), len(columns)))
    for j, col in enumerate(columns):
        values[:, j] = _numeric(frame[col.column], col.column, name)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        j = int(np.argmax(bad[row]))
        v = values[row, j]
        if np.isnan(v):
            raise LogError(f"{name} has no value in column {columns[j].column!r} at data row {row + 1}; every "
                           "feature and action needs a number in every row (drop or fill such rows first).")
        raise LogError(f"{name} holds {v:g} in column {columns[j].column!r} at data row {row + 1}; features and "
                       "actions must be finite numbers.")
    n_feat = len(sch.features)
    X, y = values[:, :n_feat], values[:, n_feat:]
    classes = np.zeros(0, dtype=np.int64)
    if sch.discrete:
        act = sch.actions[0]
        whole = y[:, 0] == np.round(y[:, 0])
        if not whole.all():
            row = int(np.argmin(whole))
            raise LogError(f"Column {act.column!r} of {name} is a discrete action but holds {y[row, 0]:g} at data "
                           f"row {row + 1}; a discrete action's values are whole numbers (classes such as setpoints in "
                           "whole degrees). Drop 'discrete = true' from the schema for a continuous action.")
        if act.classes:
            classes = np.asarray(act.classes, dtype=np.int64)
            unknown = ~np.isin(y[:, 0], classes)
            if unknown.any():
                row = int(np.argmax(unknown))
                raise LogError(f"Column {act.column!r} of {name} holds {y[row, 0]:g} at data row {row + 1}, which is "
                               f"not one of its classes in {sch.where}: {', '.join(map(str, act.classes))}.")
        else:
            classes = np.unique(y[:, 0]).astype(np.int64)
    episodes, labels = None, None
    if sch.episode:
        ep = frame[sch.episode]
        if ep.isna().any():
            row = int(np.argmax(ep.isna().to_numpy()))
            raise LogError(f"{name} has no value in its episode column {sch.episode!r} at data row {row + 1}.")
        codes, uniques = pd.factorize(ep, sort=False)
        episodes = codes.astype(np.int64)
        labels = [u.item() if hasattr(u, "item") else u for u in uniques]
    low = high = None
    if not sch.discrete:
        low = np.array([a.low if a.low is not None else y[:, i].min() for i, a in enumerate(sch.actions)])
        high = np.array([a.high if a.high is not None else y[:, i].max() for i, a in enumerate(sch.actions)])
    return LoggedData(X=X, y=y, features=[c.signal for c in sch.features], actions=[c.signal for c in sch.actions],
                      discrete=sch.discrete, classes=classes, task=sch.task if task is None else task,
                      episodes=episodes, episode_labels=labels, episode_column=sch.episode, action_low=low,
                      action_high=high, source={"format": "frame", "rows": len(X)})


def _numeric(col: pd.Series, column: str, name: str) -> np.ndarray:
    """A column as floats (booleans as 0/1), or a one-line error naming its first non-number."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=np.float64)
    if pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    parsed = pd.to_numeric(col, errors="coerce")
    wrong = (parsed.isna() & col.notna()).to_numpy()
    if wrong.any():
        row = int(np.argmax(wrong))
        raise LogError(f"Column {column!r} of {name} is not numeric: data row {row + 1} holds {col.iloc[row]!r}. "
                       "Features and actions must be numbers (encode categories as numbers first).")
    return parsed.to_numpy(dtype=np.float64, na_value=np.nan)


def read_minari(ref: str | Path, schema: LogSchema | dict[str, Any] | str | Path | None = None) -> LoggedData:
    """A Minari dataset as :class:`LoggedData` (see :func:`read_log`): a dataset folder, or a local dataset's id."""
    try:
        import minari
    except ImportError:
        raise LogError(f"Reading the Minari dataset {str(ref)!r} needs minari: {_INSTALL}.") from None
    p = Path(ref)
    try:
        if p.is_dir():
            folder = p / "data" if (p / "data" / "metadata.json").is_file() else p
            if not (folder / "metadata.json").is_file():
                raise LogError(f"{str(p)!r} is a folder but not a Minari dataset (no metadata.json in it or in its "
                               "data folder).")
            ds = minari.MinariDataset(folder)
        else:
            local = {str(k) for k in minari.list_local_datasets()}
            if str(ref) not in local:
                raise LogError(f"No local Minari dataset {str(ref)!r} (local: {', '.join(sorted(local)) or 'none'}); "
                               f"interp-rl never downloads: 'minari download {ref}' fetches it.")
            ds = minari.load_dataset(str(ref))
            folder = Path(ds.spec.data_path)
    except ImportError as exc:  # an HDF5 dataset without h5py: minari names the package
        raise LogError(f"Reading the Minari dataset {str(ref)!r} needs another package: {exc}") from None
    name = repr(str(ref))
    obs_space, act_space = ds.spec.observation_space, ds.spec.action_space
    import gymnasium as gym

    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise LogError(f"The Minari dataset {name} observes {obs_space}; interp-rl reads flat Box observations.")
    discrete = isinstance(act_space, gym.spaces.Discrete)
    if not discrete and (not isinstance(act_space, gym.spaces.Box) or len(act_space.shape) != 1):
        raise LogError(f"The Minari dataset {name} acts in {act_space}; interp-rl reads Box or Discrete actions.")
    xs, ys, eps, returns = [], [], [], []
    for k, episode in enumerate(ds.iterate_episodes()):
        n = len(episode.actions)
        xs.append(np.asarray(episode.observations, dtype=np.float64)[:n])
        ys.append(np.asarray(episode.actions, dtype=np.float64).reshape(n, -1))
        eps.append(np.full(n, k))
        returns.append(float(np.sum(episode.rewards)))
    if not xs or not sum(len(x) for x in xs):
        raise LogError(f"The Minari dataset {name} holds no steps.")
    X, y = np.concatenate(xs), np.concatenate(ys)
    bad = ~np.isfinite(np.hstack([X, y]))
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise LogError(f"The Minari dataset {name} holds a non-finite observation or action at step {row + 1} "
                       "(counting every episode's steps in order).")
    n_obs = X.shape[1]
    features = [Signal(f"obs_{i}") for i in range(n_obs)]
    actions = [Signal("action")] if discrete else [Signal(f"action_{i}") for i in range(y.shape[1])]
    classes = np.arange(int(act_space.start), int(act_space.start) + int(act_space.n)) if discrete else np.zeros(0)
    env_spec = getattr(ds.spec, "env_spec", None)
    task = getattr(env_spec, "id", None) or ""
    low = high = None
    if not discrete:
        low = np.where(np.isfinite(act_space.low), act_space.low, y.min(axis=0)).astype(np.float64)
        high = np.where(np.isfinite(act_space.high), act_space.high, y.max(axis=0)).astype(np.float64)
    named = False
    schema_file = None
    if schema is not None:
        sch, schema_file = _as_schema(schema)
        if len(sch.features) != n_obs or len(sch.actions) != y.shape[1]:
            raise LogError(f"{sch.where[0].upper()}{sch.where[1:]} names {len(sch.features)} features and "
                           f"{len(sch.actions)} action(s); the Minari dataset {name} has {n_obs} and {y.shape[1]}.")
        if sch.discrete != discrete:
            raise LogError(f"{sch.where[0].upper()}{sch.where[1:]} says the action is "
                           f"{'discrete' if sch.discrete else 'continuous'}; the Minari dataset {name} acts in "
                           f"{act_space}.")
        features, actions = [c.signal for c in sch.features], [c.signal for c in sch.actions]
        task, named = sch.task or task, True
        if low is not None and high is not None:  # continuous actions: the schema's bounds win
            low = np.array([a.low if a.low is not None else low[i] for i, a in enumerate(sch.actions)])
            high = np.array([a.high if a.high is not None else high[i] for i, a in enumerate(sch.actions)])
    source = {"format": "minari", "path": str(folder), "dataset_id": str(ds.spec.dataset_id),
              "sha256": path_sha256(folder), "rows": len(X), "episodes": len(xs),
              "schema": str(schema_file) if schema_file else None,
              "schema_sha256": path_sha256(schema_file) if schema_file else None}
    return LoggedData(X=X, y=y, features=features, actions=actions, discrete=discrete, classes=classes, task=task,
                      episodes=np.concatenate(eps), episode_labels=list(range(len(xs))), episode_column="episode",
                      action_low=low, action_high=high, episode_returns=np.array(returns), source=source, named=named)


# ------------------------------------------------------------------------------------------------ classes
def _classes_of(controller: Controller) -> tuple[dict[str, Any], np.ndarray]:
    info = controller.metadata.get("classes")
    if not isinstance(info, dict) or not isinstance(info.get("values"), list):
        raise InterpRLError(f"The {controller.kind} controller names no classes: it was not learnt from a log with a "
                            "discrete action (its actions are what it outputs).")
    values = np.asarray(info["values"])
    if values.shape != (controller.program.act_dim,):
        raise ControllerFormatError(f"The controller names {len(values)} classes for its "
                                    f"{controller.program.act_dim} class scores.")
    return info, values


def class_values(controller: Controller, obs: Any) -> np.ndarray:
    """The class a controller learnt from a discrete action plays for each observation: the value of the class with
    the highest score (ties: the first), e.g. a setpoint in whole degrees.

    Parameters
    ----------
    controller : Controller
        A controller whose metadata names its classes (``fit_from_log`` on a discrete action writes them).
    obs : array-like of shape (n, n_features) or (n_features,)
        Raw observations.

    Returns
    -------
    ndarray of shape (n,), or a scalar for one observation

    Examples
    --------
    >>> import numpy as np
    >>> from interp_rl.kinds.linear import LinearProgram
    >>> prog = LinearProgram(intercept=[1.0, 0.0], coef=[[0.0], [0.1]])  # scores: 1 and zone_temperature / 10
    >>> ctrl = Controller(prog, features=[Signal("zone_temperature", "°C")], actions=class_signals(
    ...     Signal("heating_setpoint", "°C"), [21, 20]), metadata={"classes": {"values": [21, 20]}})
    >>> class_values(ctrl, np.array([[5.0], [24.0]])).tolist(), int(class_values(ctrl, [24.0]))
    ([21, 20], 20)
    """
    _, values = _classes_of(controller)
    scores = controller.predict(obs)
    played = values[np.argmax(np.atleast_2d(scores), axis=1)]
    return played[0] if np.ndim(scores) == 1 else played


def class_note(controller: Controller) -> str | None:
    """What a controller's class scores mean, for under its rules; ``None`` when it plays no classes.

    >>> from interp_rl.kinds.linear import LinearProgram
    >>> ctrl = Controller(LinearProgram(intercept=[1.0, 0.0], coef=[[0.0], [0.1]]), features=["t"],
    ...                   actions=["sp=20", "sp=21"], metadata={"classes": {"action": {"name": "sp", "unit": "°C"},
    ...                                                                     "values": [20, 21]}})
    >>> class_note(ctrl)
    'The controller plays sp [°C] = the class with the highest score (20 or 21; ties: the first).'
    """
    try:
        info, values = _classes_of(controller)
    except InterpRLError:
        return None
    action = Signal(**{k: v for k, v in (info.get("action") or {}).items() if k in ("name", "unit", "description")})
    shown = [str(v) for v in values.tolist()]
    listed = ", ".join(shown[:-1]) + f" or {shown[-1]}" if len(shown) > 1 else shown[0]
    label = action.label if action.name else "its action"
    return f"The controller plays {label} = the class with the highest score ({listed}; ties: the first)."
