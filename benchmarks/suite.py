"""Benchmark suites: which teachers, which methods at which sizes, which seeds.

A suite is a TOML or YAML file (see ``benchmarks/suites/*.toml``, which a user can copy and
edit)::

    name = "quick"
    seeds = [0, 1]
    episodes = 10              # evaluation episodes per cell (teacher and student, same seeds)
    settings = { iterations = 4 }   # every method that has the setting (a method's own settings win)

    [[teachers]]
    name = "Swimmer-SAC"
    path = "sac/Swimmer-v3_1/Swimmer-v3.zip"   # relative to --teachers, or absolute

    [[teachers]]
    name = "InvertedPendulum-SAC"
    train = { algo = "sac", env = "InvertedPendulum-v5", steps = 10000 }   # trained once, by interp-rl train

    [methods.tree]             # the table name labels the method; `method` picks the distiller
    sizes = [4, 16]            # the method's size (here max_leaves); `vary = "top_features"` varies that instead

    [methods.tree-few]
    method = "tree"
    sizes = [16]
    settings = { top_features = 3 }

The suite expands into :class:`Cell` s, one per (teacher, method, size, seed).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from distill.methods import JOB_DEFAULTS
from interp_rl.errors import SuiteError

__all__ = ["TARGET_KEYS", "Cell", "MethodSpec", "Suite", "SuiteError", "TeacherSpec", "builtin_suites",
           "load_suite"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")

#: A suite's ``[targets]``: what each means, as the report states it.
TARGET_KEYS = {
    "percent": "mean return ≥ {:g}% of the teacher's",
    "worst_percent": "worst episode ≥ {:g}% of the teacher's mean",
    "below_half": "≤ {:g}% of episodes below half the teacher's mean",
    "parameters": "≤ {:g} non-zero parameters",
    "nonzero_terms": "≤ {:g} non-zero terms (coefficients, all actions together, intercepts not counted)",
    "idle_experts": ("≤ {:g} idle experts (acting on < 2% of the states of the failure-rate episodes) in a mixture, "
                     "unless it does as well without them (its mean return on the evaluation episodes falls by ≤ 1 "
                     "point, or still meets the mean-return target)"),
    "minutes": ("≤ {:g} min of distillation plus fine-tuning per cell (the record's `distill_seconds`, a fine-tuned "
                "cell counting the distilled cell it starts from; wall clock on the machine the suite ran on)"),
}


@dataclass(frozen=True)
class TeacherSpec:
    """One teacher of a suite: a saved agent (``path``) or one to train (``train``)."""

    name: str
    path: str | None = None
    env: str | None = None
    algo: str | None = None
    train: dict[str, Any] | None = None
    held_out: bool = False
    """An agent the suite's recipe was not chosen on (its figures show whether the recipe holds beyond the agents
    it was tuned on); a label for the report, not a setting: it may change without invalidating records."""


@dataclass(frozen=True)
class MethodSpec:
    """One method of a suite: a registered distiller, the sizes to try and shared settings."""

    label: str
    method: str
    sizes: tuple[Any, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    start: str | None = None
    """Label of the method whose cell (same teacher, size and seed) this one fine-tunes instead of distilling
    again: its distillation settings are the same, only what acts after the distillation differs."""
    vary: str | None = None
    """The setting ``sizes`` lists values of (such as ``top_features``); ``None``: the method's size."""
    teachers: tuple[str, ...] = ()
    """The teachers this method runs on (a budget set for one task, say); empty: every teacher of the suite."""

    def cell_settings(self, size: Any, seed: int) -> dict[str, Any]:
        """The settings of this method's cell of ``size`` and ``seed``, before the method fills in defaults."""
        from distill.methods import METHODS

        return {**self.settings, self.vary or METHODS[self.method].size: size, "seed": seed}


@dataclass(frozen=True)
class Cell:
    """One (teacher, method, size, seed) run of a suite; its record is ``records/<id>.json``."""

    teacher: str
    method: str
    size: Any
    seed: int

    @property
    def id(self) -> str:
        return f"{self.teacher}__{self.method}-{self.size}__seed{self.seed}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Suite:
    """A parsed suite file."""

    name: str
    description: str
    seeds: tuple[int, ...]
    episodes: int
    fidelity_steps: int
    latency_batch: int
    teachers: tuple[TeacherSpec, ...]
    methods: tuple[MethodSpec, ...]
    source: str = ""
    rate_episodes: int = 0
    """Extra controller episodes measuring how often it fails (below half the teacher's mean); 0: off."""
    attribution_states: int = JOB_DEFAULTS["attribution_states"]
    """Teacher-visited states on which each record compares teacher and controller Shapley importance; 0: off."""
    targets: dict[str, float] = field(default_factory=dict)
    """What a controller must reach (keys of :data:`TARGET_KEYS`); the report checks every group against them."""
    compare: tuple[str, ...] = ()
    """Results folders beside this suite's (their suite names) whose records of the same teachers the report
    shows next to this suite's, without running them again."""
    report: dict[str, Any] = field(default_factory=dict)
    """``analyses``: the report's sections by name, in order (:data:`benchmarks.analyses.ANALYSES`; default:
    every one)."""
    properties: dict[str, str] = field(default_factory=dict)
    """Task id -> property file (:mod:`interp_rl.verify`): every controller of that task is verified against it
    and its record carries the verdicts (``verification``)."""

    def teacher(self, name: str) -> TeacherSpec:
        return next(t for t in self.teachers if t.name == name)

    def method(self, label: str) -> MethodSpec:
        return next(m for m in self.methods if m.label == label)

    def cells(self, methods: list[str] | None = None, seeds: list[int] | None = None,
              teachers: list[str] | None = None) -> list[Cell]:
        """All cells, seed-major (every method of seed 0 first), optionally filtered."""
        ms, ts = self.chosen_methods(methods), self.chosen_teachers(teachers)
        return [Cell(t.name, m.label, size, seed) for seed in (seeds or list(self.seeds))
                for t in ts for m in ms if not m.teachers or t.name in m.teachers for size in m.sizes]

    def chosen_methods(self, methods: list[str] | None = None) -> list[MethodSpec]:
        """The suite's methods named in ``methods`` (all when ``None``); an unknown label is an error."""
        return _chosen(self.methods, [m.label for m in self.methods], methods, "method", self.name)

    def chosen_teachers(self, teachers: list[str] | None = None) -> list[TeacherSpec]:
        """The suite's teachers named in ``teachers`` (all when ``None``); an unknown name is an error."""
        return _chosen(self.teachers, [t.name for t in self.teachers], teachers, "teacher", self.name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _chosen(items: Sequence[Any], names: list[str], wanted: list[str] | None, what: str, suite: str) -> list[Any]:
    for name in wanted or []:
        if name not in names:
            raise SuiteError(f"Unknown {what} {name!r} for suite {suite!r}; it has: {', '.join(names)}.")
    return [x for x, n in zip(items, names, strict=True) if wanted is None or n in wanted]


def builtin_suites() -> dict[str, Path]:
    """Suite name -> file of the suites shipped in ``benchmarks/suites``."""
    folder = resources.files("benchmarks").joinpath("suites")
    return {Path(str(p)).stem: Path(str(p)) for p in folder.iterdir() if str(p).endswith((".toml", ".yaml"))}


def _read(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".toml":
            data: Any = tomllib.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # tomllib and yaml errors
        raise SuiteError(f"Suite file {str(path)!r} is not valid: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise SuiteError(f"Suite file {str(path)!r} must hold a table.")
    return data


def _ints(value: Any, what: str, low: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value):
        raise SuiteError(f"{what} must be a non-empty list of integers >= {low}. Got {value!r} instead.")
    if len(set(value)) != len(value):
        raise SuiteError(f"{what} lists a value twice: {value!r}.")
    return tuple(value)


def _int(data: dict[str, Any], key: str, default: int, low: int, where: str) -> int:
    v = data.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < low:
        raise SuiteError(f"{where}: '{key}' must be an integer >= {low}. Got {v!r} instead.")
    return v


def _check_start(m: MethodSpec, methods: list[MethodSpec], where: str) -> None:
    """A method that starts from another's cells: that method exists, does not itself start from one, is the
    same distiller with the sizes, and distils with the same settings (so its controller is the one this
    method's own distillation would make)."""
    from distill.methods import METHODS

    labels = {x.label: x for x in methods}
    base = labels.get(m.start)
    head = f"{where}: [methods.{m.label}] start = {m.start!r}"
    if base is None or base is m:
        raise SuiteError(f"{head} must name another method of the suite ({', '.join(sorted(labels))}).")
    if base.start is not None:
        raise SuiteError(f"{head}: that method starts from {base.start!r} itself; name a method that distils.")
    if base.method != m.method:
        raise SuiteError(f"{head}: that method is {base.method!r}, this one {m.method!r}; they must be the same "
                         "distiller.")
    missing = [s for s in m.sizes if s not in base.sizes]
    if missing:
        raise SuiteError(f"{head}: that method has no size(s) {', '.join(map(str, missing))}.")
    method = METHODS[m.method]
    if m.vary != base.vary:
        raise SuiteError(f"{head}: that method's sizes vary {base.vary or 'its size'}, this one's "
                         f"{m.vary or 'its size'}; they must be the same.")
    mine = method.resolve(m.cell_settings(m.sizes[0], 0))
    theirs = method.resolve(base.cell_settings(m.sizes[0], 0))
    differ = [k for k in method.distill_settings() if mine[k] != theirs[k]]
    if differ:
        raise SuiteError(f"{head}: the distillation settings differ ({', '.join(differ)}); only what acts after "
                         "the distillation may.")


def _shared_settings(shared: Any, methods: dict[str, Any], where: str) -> dict[str, Any]:
    """The suite-wide ``[settings]``: each applies to every method that has it (a method's own ``settings``
    win); one that no method of the suite has is an error."""
    from distill.methods import METHODS

    if not isinstance(shared, dict):
        raise SuiteError(f"{where}: 'settings' must be a table of settings shared by the methods. "
                         f"Got {shared!r} instead.")
    known: set[str] = set()
    for label, m in methods.items():
        kind = m.get("method", label) if isinstance(m, dict) else label
        if kind in METHODS:
            known |= set(METHODS[kind].defaults())
    unused = sorted(set(shared) - known)
    if unused:
        raise SuiteError(f"{where}: [settings] names {', '.join(unused)}, which no method of the suite has.")
    return dict(shared)


def _properties(raw: Any, path: Path, where: str) -> dict[str, str]:
    """``[properties]``: task id -> property file, relative to the suite file's folder; each file is read now
    against the task's features and actions, so a bad rule fails before an hour of distillation."""
    from envs import get_task, task_signals
    from interp_rl.errors import UnknownTaskError
    from interp_rl.verify import PropertyError, load_properties

    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise SuiteError(f"{where}: [properties] must map task ids to property files, such as "
                         f"\"Hopper-v5\" = \"../properties/Hopper-v5.toml\". Got {raw!r} instead.")
    out = {}
    for task, file in raw.items():
        try:
            task_id = get_task(task).id
        except UnknownTaskError as exc:
            raise SuiteError(f"{where}: [properties] {exc}") from None
        resolved = (path.parent / file).resolve()
        features, actions = task_signals(task_id)
        try:
            load_properties(resolved, features=features, actions=actions)
        except PropertyError as exc:
            raise SuiteError(f"{where}: [properties] {task}: {exc}") from None
        out[task_id] = str(resolved)
    return out


def load_suite(name_or_path: str | Path) -> Suite:
    """A shipped suite by name (``quick``, ``mujoco``, ``demo``) or a suite file by path."""
    from distill.methods import METHODS

    shipped = builtin_suites()
    path = Path(name_or_path)
    if str(name_or_path) in shipped:
        path = shipped[str(name_or_path)]
    elif not path.is_file():
        raise SuiteError(f"Unknown suite {str(name_or_path)!r}: not a file, and not one of the shipped "
                         f"suites ({', '.join(sorted(shipped))}).")
    if path.suffix.lower() not in (".toml", ".yaml", ".yml"):
        raise SuiteError(f"Suite file {str(path)!r}: use a .toml or .yaml file.")
    data = _read(path)
    where = f"Suite {str(path)!r}"
    known = {"name", "description", "seeds", "episodes", "fidelity_steps", "latency_batch", "rate_episodes",
             "attribution_states", "settings", "teachers", "methods", "targets", "compare", "report", "properties"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SuiteError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")
    name = str(data.get("name", path.stem))
    seeds = _ints(data.get("seeds", [0]), f"{where}: 'seeds'", 0)
    episodes = _int(data, "episodes", 10, 1, where)
    teachers = []
    for i, t in enumerate(data.get("teachers") or []):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not _NAME.match(t["name"]):
            raise SuiteError(f"{where}: teacher {i} needs a 'name' of letters, digits, '.', '_', '+' or '-'. "
                             f"Got {t!r} instead.")
        bad = sorted(set(t) - {"name", "path", "env", "algo", "train", "held_out"})
        if bad:
            raise SuiteError(f"{where}: teacher {t['name']!r} has unknown key(s) {', '.join(bad)}.")
        if ("path" in t) == ("train" in t):
            raise SuiteError(f"{where}: teacher {t['name']!r} needs exactly one of 'path' (a saved agent) "
                             "or 'train' (settings of interp-rl train).")
        train = t.get("train")
        if train is not None and (not isinstance(train, dict) or not {"algo", "env", "steps"} <= set(train)):
            raise SuiteError(f"{where}: teacher {t['name']!r}: 'train' must be a table with algo, env and "
                             f"steps. Got {train!r} instead.")
        if not isinstance(t.get("held_out", False), bool):
            raise SuiteError(f"{where}: teacher {t['name']!r}: 'held_out' must be true or false. "
                             f"Got {t['held_out']!r} instead.")
        teachers.append(TeacherSpec(name=t["name"], path=t.get("path"), env=t.get("env"), algo=t.get("algo"),
                                    train=dict(train) if train else None, held_out=t.get("held_out", False)))
    if not teachers:
        raise SuiteError(f"{where}: no [[teachers]].")
    if len({t.name for t in teachers}) != len(teachers):
        raise SuiteError(f"{where}: two teachers share a name.")
    methods = []
    raw_methods = data.get("methods") or {}
    if not isinstance(raw_methods, dict) or not raw_methods:
        raise SuiteError(f"{where}: no [methods.NAME] tables.")
    shared = _shared_settings(data.get("settings", {}), raw_methods, where)
    for label, m in raw_methods.items():
        if not _NAME.match(label) or "__" in label:
            raise SuiteError(f"{where}: method label {label!r} must be letters, digits, '.', '_', '+' "
                             "or '-'.")
        if not isinstance(m, dict):
            raise SuiteError(f"{where}: [methods.{label}] must be a table.")
        bad = sorted(set(m) - {"method", "sizes", "settings", "start", "vary", "teachers"})
        if bad:
            raise SuiteError(f"{where}: [methods.{label}] has unknown key(s) {', '.join(bad)}.")
        kind = m.get("method", label)
        if kind not in METHODS:
            raise SuiteError(f"{where}: [methods.{label}] names unknown method {kind!r}; "
                             f"available: {', '.join(sorted(METHODS))}.")
        sizes = m.get("sizes")
        if not isinstance(sizes, list) or not sizes:
            raise SuiteError(f"{where}: [methods.{label}] needs a non-empty list 'sizes'. "
                             f"Got {sizes!r} instead.")
        settings = m.get("settings", {})
        if not isinstance(settings, dict):
            raise SuiteError(f"{where}: [methods.{label}] 'settings' must be a table.")
        own = METHODS[kind].defaults()
        settings = {**{k: v for k, v in shared.items() if k in own}, **settings}
        vary = m.get("vary")
        if vary is not None and (vary not in own or vary == "seed" or vary in settings):
            raise SuiteError(f"{where}: [methods.{label}] 'vary' must name a setting of method {kind!r} that "
                             f"'settings' does not fix (such as 'top_features'). Got {vary!r} instead.")
        start = m.get("start")
        if start is not None and not isinstance(start, str):
            raise SuiteError(f"{where}: [methods.{label}] 'start' must be the label of another method. "
                             f"Got {start!r} instead.")
        only = m.get("teachers", [])
        known = {t.name for t in teachers}
        if not isinstance(only, list) or not all(isinstance(t, str) and t in known for t in only):
            raise SuiteError(f"{where}: [methods.{label}] 'teachers' must list some of the suite's teachers "
                             f"({', '.join(sorted(known))}). Got {only!r} instead.")
        spec = MethodSpec(label=label, method=kind, sizes=tuple(sizes), settings=settings, start=start, vary=vary,
                          teachers=tuple(only))
        for size in sizes:  # fail now, not an hour into the run
            METHODS[kind].resolve(spec.cell_settings(size, 0),
                                  owner=f"[methods.{label}] in {where[:1].lower()}{where[1:]}")
        methods.append(spec)
    for m in methods:
        if m.start is not None:
            _check_start(m, methods, where)
    targets = data.get("targets", {})
    if not isinstance(targets, dict) or set(targets) - set(TARGET_KEYS) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in targets.values()):
        raise SuiteError(f"{where}: [targets] must map some of {', '.join(TARGET_KEYS)} to numbers >= 0. "
                         f"Got {targets!r} instead.")
    compare = data.get("compare", [])
    if not isinstance(compare, list) or not all(isinstance(c, str) and _NAME.match(c) for c in compare):
        raise SuiteError(f"{where}: 'compare' must be a list of results folder names beside this suite's "
                         f"(such as [\"smose\"]). Got {compare!r} instead.")
    report = data.get("report", {})
    from benchmarks.sections.registry import ANALYSES  # full: the benchmarks package registers every section

    if not isinstance(report, dict) or set(report) - {"analyses"} or not isinstance(report.get("analyses", []), list) \
            or not all(a in ANALYSES for a in report.get("analyses", [])):
        raise SuiteError(f"{where}: [report] takes 'analyses', a list of some of {', '.join(ANALYSES)}. "
                         f"Got {report!r} instead.")
    properties = _properties(data.get("properties", {}), path, where)
    return Suite(name=name, description=str(data.get("description", "")), seeds=seeds, episodes=episodes,
                 properties=properties,
                 compare=tuple(compare), report={"analyses": list(report["analyses"])} if "analyses" in report else {},
                 targets={k: float(v) for k, v in targets.items()},
                 fidelity_steps=_int(data, "fidelity_steps", JOB_DEFAULTS["fidelity_steps"], 1, where),
                 latency_batch=_int(data, "latency_batch", 256, 1, where),
                 rate_episodes=_int(data, "rate_episodes", 0, 0, where),
                 attribution_states=_int(data, "attribution_states", JOB_DEFAULTS["attribution_states"], 0, where),
                 teachers=tuple(teachers), methods=tuple(methods), source=str(path))
