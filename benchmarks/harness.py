"""The benchmark harness: every cell of a suite, one JSON record each, resumable, local or on Ray.

Layout of a results folder::

    RESULTS/suite.json               the suite as run (what ``interp-rl report`` describes)
    RESULTS/teachers/NAME/           teachers the suite trains (``interp-rl train`` folders)
    RESULTS/cells/CELL/              a cell's controller, exports, pictures and DAgger checkpoints
    RESULTS/records/CELL.json        a finished cell's record (written last, atomically)

:func:`run_cell` is the unit of work: a pure function of the cell, the suite and the two
folders that returns the record and writes it; a rerun skips cells whose record exists and
resumes unfinished ones from their checkpoints, so a killed run loses at most the work in
flight since the last DAgger round.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.measurements import MEASUREMENTS, CellRun
from benchmarks.record import RECORD_SCHEMA, BenchRecord
from benchmarks.suite import Cell, Suite, SuiteError, TeacherSpec
from interp_rl.errors import InterpRLError
from interp_rl.interrupts import sigterm_as_interrupt
from interp_rl.io import atomic_write_text, remove_stale_temps
from interp_rl.threads import one_blas_thread

__all__ = ["BenchResult", "RECORD_SCHEMA", "default_teachers_dir", "load_records", "prepare_teachers",
           "record_path", "run_cell", "run_suite", "teacher_command"]

EXECUTORS = ("process", "ray", "inline")


def default_teachers_dir() -> Path:
    """Where suites' relative teacher paths point: ``$INTERP_RL_TEACHERS``, else ``../shared/teachers``."""
    return Path(os.environ.get("INTERP_RL_TEACHERS", os.path.join("..", "shared", "teachers")))


def record_path(results: Path, cell: Cell) -> Path:
    return Path(results) / "records" / f"{cell.id}.json"


def teacher_command(spec: TeacherSpec, seed: int = 0) -> str:
    """The ``interp-rl train`` command that makes a suite's trained teacher."""
    assert spec.train is not None
    t = spec.train
    more = "".join(f" --{k.replace('_', '-')} {t[k]}" for k in ("checkpoint_every", "eval_episodes", "keep") if k in t)
    return (f"interp-rl train --algo {t['algo']} --env {t['env']} --steps {t['steps']} "
            f"--seed {t.get('seed', seed)}{more} --out teachers/{spec.name}")


def _teacher_location(spec: TeacherSpec, results: Path, teachers_dir: Path) -> Path:
    if spec.train is not None:
        return Path(results) / "teachers" / spec.name
    assert spec.path is not None
    p = Path(spec.path)
    return p if p.is_absolute() else Path(teachers_dir) / p


def prepare_teachers(suite: Suite, results: Path, teachers_dir: Path, *,
                     log: Callable[[str], None] = print, only: list[str] | None = None) -> None:
    """Train the suite's ``train`` teachers that are not trained yet; check the others exist (those named in
    ``only``, when given)."""
    from envs.training import TEACHER_FILE, TrainConfig, train_teacher

    for spec in suite.chosen_teachers(only):
        where = _teacher_location(spec, results, teachers_dir)
        if spec.train is None:
            if not where.exists():
                raise SuiteError(f"Teacher {spec.name!r} of suite {suite.name!r}: {str(where)!r} does not "
                                 "exist (set --teachers to the folder the suite's paths are relative to).")
            continue
        if (where / TEACHER_FILE).is_file() and not (where / "checkpoint").exists():
            continue
        remove_stale_temps(where)
        t = dict(spec.train)
        log(f"Training teacher {spec.name}: {teacher_command(spec)}")
        cfg = TrainConfig(algo=str(t.pop("algo")), task=str(t.pop("env")), steps=int(t.pop("steps")),
                          out=str(where), seed=int(t.pop("seed", 0)),
                          hyperparams=dict(t.pop("hyperparams", {})), **t)
        train_teacher(cfg, resume=True, progress_bar=sys.stderr.isatty())


def _load_teacher(spec: TeacherSpec, results: Path, teachers_dir: Path) -> Any:
    from envs.loading import load_teacher

    return load_teacher(_teacher_location(spec, results, teachers_dir), env=spec.env, algo=spec.algo)


def _provenance(spec: TeacherSpec, teacher: Any) -> dict[str, Any]:
    source = teacher_command(spec) if spec.train is not None else spec.path
    return {"name": spec.name, "source": source, "algo": teacher.algo, "task": teacher.task,
            "variant": teacher.variant}


@one_blas_thread
def run_cell(cell: dict[str, Any], suite: dict[str, Any], results: str, teachers_dir: str,
             jobs: int = 1) -> dict[str, Any]:
    """Run one cell and write its record; return the record (an existing record is returned as is).

    Arguments are plain data (``Cell.to_dict()``, ``Suite.to_dict()``, folder names) so the
    function runs unchanged in a worker process or a Ray task. NumPy's BLAS runs on one thread inside a
    cell: cells run side by side, and BLAS threads waiting on busy cores made SINDy fits several times slower.
    ``jobs`` is the CPUs the cell may use for a recipe's DART levels (the distillation's ``jobs``); it changes
    the cell's time, never its controller. Once the controller is made, every registered measurement
    (:data:`benchmarks.measurements.MEASUREMENTS`) runs on it, in order, and the record
    (:class:`benchmarks.record.BenchRecord`) holds what the cell is and what they measured.
    """
    import torch

    from benchmarks.suite import MethodSpec
    from distill.job import METRICS_FILE, run_job
    from distill.methods import JOB_OPTIONS, METHODS, SHAPING
    from envs import task_signals
    from interp_rl.export import write_exports
    from interp_rl.program import load_controller
    from interp_rl.provenance import machine, versions

    torch.set_num_threads(1)  # small batches: one thread is fastest and never oversubscribes
    c = Cell(**cell)
    res = Path(results)
    out = record_path(res, c)
    if out.is_file():
        return dict(json.loads(out.read_text()))
    t0 = time.perf_counter()
    spec = TeacherSpec(**next(t for t in suite["teachers"] if t["name"] == c.teacher))
    mspec = MethodSpec(**next(m for m in suite["methods"] if m["label"] == c.method))
    method = METHODS[mspec.method]
    settings = method.resolve(mspec.cell_settings(c.size, c.seed),
                              owner=f"method {c.method!r} of suite {suite['name']!r}")
    config = {k: v for k, v in settings.items() if k not in {j.name for j in JOB_OPTIONS} - SHAPING}
    settings["jobs"] = jobs
    teacher = _load_teacher(spec, res, Path(teachers_dir))
    features, actions = task_signals(teacher.task, teacher.variant)
    provenance = _provenance(spec, teacher)
    work = res / "cells" / c.id
    remove_stale_temps(work)  # a killed run's half-written temporaries; the files they replace are intact
    start = None
    if mspec.start is not None:  # fine-tune the start method's controller of this teacher, size and seed
        first = Cell(c.teacher, mspec.start, c.size, c.seed)
        if not record_path(res, first).is_file():
            raise InterpRLError(f"Cell {c.id} starts from cell {first.id}, which has no record yet; run it first.")
        start = _start_folder(res, first)
    if not (work / METRICS_FILE).is_file():  # else: distilled before the run was stopped
        run_job(method, teacher, settings, work, features=features, actions=actions, provenance=provenance,
                resume=(work / "config.json").is_file(), evaluate_student=False, start=start)
    made = json.loads((work / METRICS_FILE).read_text())
    controller = load_controller(work)
    exports = write_exports(controller, work, force=True)
    run = CellRun(cell=c, suite=suite, teacher=teacher, provenance=provenance, controller=controller, made=made,
                  work=work, exports=exports)
    measured = {name: m.measure(run) for name, m in MEASUREMENTS.items()}
    built_in = {f.name for f in dataclasses.fields(BenchRecord)} - {"extra"}
    episodes = int(suite["episodes"])
    record = BenchRecord(
        id=c.id, suite=suite["name"], cell=c, task=teacher.task, method=c.method, distiller=mspec.method,
        kind=controller.kind, size_name=mspec.vary or method.size, episodes=episodes,
        episode_seeds=[c.seed + i for i in range(episodes)],
        distill_cores=jobs,  # the cores its DART levels could use (a resumed cell's last run's)
        config=config, controller=f"cells/{c.id}", versions=versions(), machine=machine(),
        **{k: v for k, v in measured.items() if k in built_in},
        extra={k: v for k, v in measured.items() if k not in built_in},
        cell_seconds=time.perf_counter() - t0)
    atomic_write_text(out, record.to_json())
    return record.to_dict()


def load_records(results: Path) -> list[dict[str, Any]]:
    """Every record in ``RESULTS/records``, sorted by cell id; a corrupt record is a one-line error."""
    rows = []
    for p in sorted((Path(results) / "records").glob("*.json")):
        try:
            rec = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InterpRLError(
                f"Record {str(p)!r} is not valid JSON ({exc}); delete it to rerun its cell.") from None
        if not isinstance(rec, dict) or rec.get("schema") != RECORD_SCHEMA:
            raise InterpRLError(f"{str(p)!r} is not a benchmark record (expected schema {RECORD_SCHEMA!r}).")
        rows.append(rec)
    return rows


@dataclass
class BenchResult:
    """What :func:`run_suite` did."""

    cells: list[Cell]
    skipped: list[Cell] = field(default_factory=list)
    finished: list[Cell] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    busy: list[Cell] = field(default_factory=list)
    """Cells another ``interp-rl bench`` on the same folder was running: left to it."""


#: Where a results folder's cell locks live (one file per cell a bench is running).
LOCKS = ".locks"


def _lock_cells(res: Path, cells: list[Cell]) -> tuple[dict[Cell, Any], list[Cell]]:
    """Take the lock of every cell another bench on ``res`` is not running: ``(locks held, cells left to others)``.

    A lock is an OS file lock (``filelock``), released when its process ends however it ends, so a killed bench
    never leaves a cell locked. The temporary files of a locked cell's record left by a killed writer go.
    """
    from filelock import FileLock, Timeout

    folder = res / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    held: dict[Cell, Any] = {}
    busy: list[Cell] = []
    for cell in cells:
        lock = FileLock(str(folder / f"{cell.id}.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            busy.append(cell)
            continue
        held[cell] = lock
        for stale in (res / "records").glob(f".{cell.id}.json.*"):
            stale.unlink(missing_ok=True)
    return held, busy


def _check_compatible(before: dict[str, Any], now: dict[str, Any], res: Path) -> None:
    """A results folder may grow (more teachers, methods, sizes or seeds), but its records must keep meaning
    what they meant: same evaluation settings, and the same teacher and settings behind every name."""
    where = f"{str(res)!r} holds results of a different suite ({before.get('name')!r})"
    if before.get("name") != now["name"]:
        raise InterpRLError(f"{where}; choose another results folder.")
    for key in ("episodes", "fidelity_steps", "latency_batch", "rate_episodes"):
        if before.get(key, 0) != now.get(key, 0):
            raise InterpRLError(f"{where} with {key} = {before.get(key)!r}, not {now[key]!r}; choose another "
                                "results folder.")
    for kind, name_key in (("teachers", "name"), ("methods", "label")):
        old = {x[name_key]: x for x in before.get(kind, [])}
        for x in now[kind]:
            prev = old.get(x[name_key])
            # 'start' may come or go: a method starting from another's cell is checked to distil with the
            # same settings, so its controllers are the ones its own distillation makes (same seed).
            # 'held_out' labels a teacher for the report; it is not a setting.
            # A key missing from an older suite.json is its default (None, or an empty list), such as a method's
            # 'vary' or 'teachers'.
            labels = ("sizes", "start", "held_out")
            if prev is not None and {k: v for k, v in prev.items() if k not in labels and v not in (None, [])} != {
                    k: v for k, v in x.items() if k not in labels and v not in (None, [])}:
                raise InterpRLError(f"{where}: {kind[:-1]} {x[name_key]!r} has other settings there; give it "
                                    "another name or choose another results folder.")


def _start_folder(res: Path, first: Cell) -> Path:
    """The folder of the start cell ``first``, which has a record: its controller must be there. Results folders
    commit records and chosen controllers but not a cell's working files, so a missing ``metrics.json`` (what the
    start cost to make, its distillation history) is restored from the record, where the same values are kept."""
    from distill.job import METRICS_FILE

    folder = res / "cells" / first.id
    if not (folder / "controller.json").is_file():
        raise InterpRLError(f"Cell {first.id} has a record but no controller in {str(folder)!r} (cell folders are "
                            f"not committed); delete {str(record_path(res, first))!r} to make it again.")
    if not (folder / METRICS_FILE).is_file():
        rec = json.loads(record_path(res, first).read_text())
        made = {"distill_seconds": rec["distill_seconds"], "restored_from": f"records/{first.id}.json",
                **{k: v for k, v in (rec.get("details") or {}).items() if v is not None}}
        atomic_write_text(folder / METRICS_FILE, json.dumps(made, indent=1) + "\n")
    return folder


def _start_cell(suite: Suite, cell: Cell) -> Cell | None:
    """The cell whose controller ``cell`` fine-tunes (its method's ``start``), or ``None``."""
    first = suite.method(cell.method).start
    return None if first is None else Cell(cell.teacher, first, cell.size, cell.seed)


def _suite_label(suite: Suite) -> str:
    """How a user names the suite again: a shipped suite by name, else its file name."""
    from benchmarks.suite import builtin_suites

    shipped = builtin_suites().get(suite.name)
    return suite.name if shipped is not None and Path(suite.source) == shipped else Path(suite.source).name


def _executor_jobs(executor: str, workers: int, ray_address: str | None) -> Any:
    if executor == "process":
        return _ProcessJobs(workers)
    if executor == "ray":
        return _RayJobs(workers, ray_address)
    if executor == "inline":
        return _InlineJobs()
    raise InterpRLError(f"Unknown executor {executor!r}; use one of {', '.join(EXECUTORS)}.")


class _ProcessJobs:
    """At most ``workers`` cells at a time in a local process pool."""

    def __init__(self, workers: int) -> None:
        import multiprocessing

        # 'spawn': fresh interpreters, like Ray workers, so no torch/MuJoCo state is forked.
        from interp_rl.parallel import leave_with_parent

        # A worker leaves when this process is killed outright, so a rerun never has two writers on one cell.
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=leave_with_parent, initargs=(os.getpid(),))
        self.pending: dict[Any, Cell] = {}

    def submit(self, cell: Cell, *args: Any) -> None:
        self.pending[self.pool.submit(run_cell, cell.to_dict(), *args)] = cell

    def next_done(self) -> Iterator[tuple[Cell, dict[str, Any] | None, str | None]]:
        done, _ = wait(list(self.pending), return_when=FIRST_COMPLETED)
        for fut in done:
            cell = self.pending.pop(fut)
            exc = fut.exception()
            if exc is None:
                yield cell, fut.result(), None
            else:
                yield cell, None, "".join(traceback.format_exception_only(type(exc), exc)).strip()

    def close(self, cancel: bool = False) -> None:
        if cancel:  # stop the cells in flight now; their records are never half written
            for proc in list(getattr(self.pool, "_processes", {}).values()):
                proc.terminate()
        self.pool.shutdown(wait=True, cancel_futures=cancel)


class _InlineJobs:
    """Cells one after another in this process: for debugging, and for methods registered at run time."""

    def __init__(self) -> None:
        self.pending: dict[int, Cell] = {}
        self._args: dict[int, tuple[Any, ...]] = {}
        self._submitted = 0

    def submit(self, cell: Cell, *args: Any) -> None:
        key = self._submitted  # never a pending cell's key: a cell given while another waits is kept
        self._submitted += 1
        self.pending[key], self._args[key] = cell, args

    def next_done(self) -> Iterator[tuple[Cell, dict[str, Any] | None, str | None]]:
        key = next(iter(self.pending))
        cell = self.pending.pop(key)
        try:
            yield cell, run_cell(cell.to_dict(), *self._args.pop(key)), None
        except Exception as exc:  # noqa: BLE001 - reported like a worker's failure
            yield cell, None, "".join(traceback.format_exception_only(type(exc), exc)).strip()

    def close(self, cancel: bool = False) -> None:
        self.pending.clear()


class _RayJobs:
    """The same cells as Ray tasks: a local Ray instance, or the cluster at ``address``."""

    def __init__(self, workers: int, address: str | None) -> None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            import ray
        except ImportError:
            raise InterpRLError("--executor ray needs Ray, an optional extra: pip install 'interp-rl[ray]'.") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "configure_logging": False}
            if address:
                ray.init(address=address, **kwargs)
            else:
                ray.init(num_cpus=workers, **kwargs)
        self.task = ray.remote(num_cpus=1, max_retries=0)(run_cell)
        self.pending: dict[Any, Cell] = {}

    def submit(self, cell: Cell, *args: Any) -> None:
        self.pending[self.task.remote(cell.to_dict(), *args)] = cell

    def next_done(self) -> Iterator[tuple[Cell, dict[str, Any] | None, str | None]]:
        done, _ = self.ray.wait(list(self.pending), num_returns=1)
        for ref in done:
            cell = self.pending.pop(ref)
            try:
                yield cell, self.ray.get(ref), None
            except Exception as exc:  # a RayTaskError wraps the cell's own exception
                cause = getattr(exc, "cause", None) or exc
                yield cell, None, "".join(traceback.format_exception_only(type(cause), cause)).strip()

    def close(self, cancel: bool = False) -> None:
        if cancel:
            for ref in self.pending:
                self.ray.cancel(ref, force=True)
        if self.started:
            self.ray.shutdown()


def run_suite(
    suite: Suite,
    results: str | Path,
    *,
    teachers_dir: str | Path | None = None,
    methods: list[str] | None = None,
    seeds: list[int] | None = None,
    teachers: list[str] | None = None,
    workers: int = 2,
    executor: str = "process",
    ray_address: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> BenchResult:
    """Run every unfinished cell of ``suite`` into ``results``; see the module docstring for the layout.

    Parameters
    ----------
    suite : Suite
        From :func:`benchmarks.suite.load_suite`.
    results : path
        Results folder (created; a rerun continues it).
    teachers_dir : path, optional
        Folder the suite's relative teacher paths start from (default :func:`default_teachers_dir`).
    methods, seeds, teachers : list, optional
        Run only these method labels / seeds / teacher names.
    workers : int
        Cells run at once.
    executor : {"process", "ray", "inline"}
        A local process pool, Ray tasks (a local Ray instance, or ``ray_address``), or one cell
        after another in this process (methods registered at run time are seen only there).
    progress : bool
        Show a progress bar naming the cells in flight, with an ETA.
    """
    from interp_rl._progress import line_console
    from interp_rl.validation import check_int

    check_int(workers, "workers", "bench")
    if executor not in EXECUTORS:
        raise InterpRLError(f"Unknown executor {executor!r}; use one of {', '.join(EXECUTORS)}.")
    console = line_console(stderr=True)  # piped into a log, a cell's line stays whole
    say = log or (lambda msg: console.print(msg, markup=False))
    res = Path(results)
    tdir = Path(teachers_dir) if teachers_dir is not None else default_teachers_dir()
    cells = suite.cells(methods, seeds, teachers)
    for s in seeds or []:
        if s < 0:
            raise SuiteError(f"Seeds must be >= 0. Got {s} instead.")
    res.mkdir(parents=True, exist_ok=True)
    suite_file = res / "suite.json"
    if suite_file.is_file():
        _check_compatible(json.loads(suite_file.read_text()), json.loads(json.dumps(suite.to_dict())), res)
    as_run = {**suite.to_dict(), "source": _suite_label(suite)}
    atomic_write_text(suite_file, json.dumps(as_run, indent=1) + "\n")
    needed = [t.name for t in suite.chosen_teachers(teachers) if any(c.teacher == t.name for c in cells)]
    if needed:  # only the teachers some cell runs on (a method may run on a few of the suite's teachers)
        prepare_teachers(suite, res, tdir, log=say, only=needed)
    result = BenchResult(cells=cells)
    todo: list[Cell] = []
    for cell in cells:
        (result.skipped if record_path(res, cell).is_file() else todo).append(cell)
    starts = {c: _start_cell(suite, c) for c in todo}
    for cell, first in list(starts.items()):  # a start cell not asked for, and not run yet, runs first
        if first is not None and first not in starts and not record_path(res, first).is_file():
            todo.insert(todo.index(cell), first)
            starts[first] = None
    locks, result.busy = _lock_cells(res, todo)
    for cell in result.busy:  # another bench on this folder runs it: never two writers of one cell
        say(f"{cell.id}: left to the other interp-rl bench running it on {str(res)!r} "
            f"(its lock: {str(res / LOCKS / (cell.id + '.lock'))!r})")
    todo = [c for c in todo if c in locks]
    if result.skipped:
        say(f"{len(result.skipped)} of {len(cells)} cells already have records; "
            f"running the other {len(todo)}.")
    if not todo:
        return result
    try:
        return _run_cells(suite, res, tdir, todo, starts, result, workers=workers, executor=executor,
                          ray_address=ray_address, progress=progress, console=console)
    finally:
        for lock in locks.values():
            lock.release()


def _run_cells(suite: Suite, res: Path, tdir: Path, todo: list[Cell], starts: dict[Cell, Cell | None],
               result: BenchResult, *, workers: int, executor: str, ray_address: str | None, progress: bool,
               console: Any) -> BenchResult:
    """Run ``todo`` (their locks held), each after its start cell's record exists."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from interp_rl.parallel import usable_cpus

    # The CPUs left to each cell for its DART levels; Ray counts one CPU per task, so its cells get one.
    cells_at_once = 1 if executor == "inline" else min(workers, len(todo))
    jobs_per_cell = 1 if executor == "ray" else max(1, usable_cpus() // cells_at_once)
    args = (suite.to_dict(), str(res), str(tdir), jobs_per_cell)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn()]
    jobs = _executor_jobs(executor, min(workers, len(todo)), ray_address)
    queue = list(todo)
    with Progress(*columns, console=console, disable=not progress) as bar, sigterm_as_interrupt():
        job = bar.add_task("", total=len(todo))

        def describe() -> str:
            flying = ", ".join(c.id for c in jobs.pending.values())
            return f"[{executor}] running: {flying}" if flying else f"[{executor}]"

        try:
            while queue or jobs.pending:
                while len(jobs.pending) < workers:
                    # the first queued cell whose start cell (if any) has its record; a failed start fails it
                    ready = next((c for c in queue if starts[c] is None or record_path(res, starts[c]).is_file()
                                  or starts[c].id in result.failed), None)
                    if ready is None:
                        break
                    queue.remove(ready)
                    if starts[ready] is not None and starts[ready].id in result.failed:
                        result.failed[ready.id] = f"its start cell {starts[ready].id} failed"
                        bar.console.print(f"{ready.id} skipped: its start cell {starts[ready].id} failed",
                                          markup=False)
                        bar.advance(job)
                        continue
                    jobs.submit(ready, *args)
                    if not progress:  # a log says what runs, as the bar would
                        bar.console.print(f"{ready.id}: started", markup=False)
                if not jobs.pending:  # nothing runs and nothing can start: say so rather than hang
                    for c in queue:
                        result.failed[c.id] = f"its start cell {starts[c].id} never ran"
                    break
                bar.update(job, description=describe())
                for cell, record, error in jobs.next_done():
                    if error is None:
                        assert record is not None
                        result.finished.append(cell)
                        bar.console.print(
                            f"{cell.id}: {record['percent_of_teacher']:.1f}% of teacher, "
                            f"{record['size']['parameters']} parameters, "
                            f"{record['distill_seconds']:.0f} s", markup=False)
                    else:
                        result.failed[cell.id] = error
                        bar.console.print(f"{cell.id} failed: {error}", markup=False)
                    bar.advance(job)
        except BaseException:
            jobs.close(cancel=True)
            raise
        jobs.close()
    return result
