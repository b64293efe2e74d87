"""Run a few long, independent computations side by side in forked processes, their progress forwarded.

Fork, not spawn: a child starts with the caller's objects as they are (a loaded teacher, an environment
factory that is a closure, a test's stand-in), so nothing has to be picklable on the way in. Only the
progress rows and each result travel back, over a pipe in memory from the process's own child (nothing is
written to disk or read from anywhere else). A task must not
depend on what an earlier task did to the process (global random state, caches): then the results are the
same whether the tasks run side by side or one after the other.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from interp_rl.errors import InterpRLError

__all__ = ["leave_with_parent", "ray_map", "side_by_side", "usable_cpus"]

T = TypeVar("T")
Progress = Callable[[dict[str, Any]], None]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a child, shown as the cause of the one re-raised here."""

    def __str__(self) -> str:
        return str(self.args[0])


def _exit_with(parent: int) -> None:
    """Leave as soon as ``parent`` is gone (killed without a chance to stop its children): an orphan would go
    on computing, and writing checkpoints beside the run that resumes it, for nobody."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def leave_with_parent(parent: int) -> None:
    """Make this process leave as soon as ``parent`` (a process id) is gone: a pool's initializer, so that a worker
    of a run killed outright (``kill -9``) does not go on beside the run that resumes it."""
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _child(task: Callable[[Progress | None], Any], conn: Connection, forward: bool, parent: int) -> None:
    """Run ``task`` in the child; send its progress rows, then ("done", result) or ("error", exception, text)."""
    # A forked child inherits the parent's Python handlers. SIGTERM is how the parent stops a child: it must end
    # the child outright. A handler that raises (the command line's SIGTERM-as-Ctrl-C, Ray's sys.exit) could
    # reach the child after its task, in multiprocessing's exit path, and the child would then run on in the
    # parent's own code (it did, under pytest: a second copy of the test session).
    # The parent forked it with SIGTERM blocked, so none arrives before its default is back.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    leave_with_parent(parent)
    try:
        result = task((lambda row: conn.send(("progress", row))) if forward else None)
        conn.send(("done", result))
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent, which re-raises it
        text = traceback.format_exc()
        for error in (exc, InterpRLError(f"{type(exc).__name__}: {exc}")):
            try:
                conn.send(("error", error, text))
                break
            except OSError:  # the parent is gone: nobody to tell
                break
            except Exception:  # noqa: BLE001 - it cannot travel: its type and message instead
                continue
    finally:
        conn.close()


def side_by_side(tasks: Sequence[Callable[[Progress | None], T]], jobs: int,
                 progress: Progress | None = None) -> list[T]:
    """Run ``tasks`` (each ``task(progress) -> result``), at most ``jobs`` at a time; their results, in order.

    With ``jobs`` 1, one task, or no ``fork`` on this system they run one after the other in this process.
    Otherwise each runs in a forked child; the rows a child passes to its ``progress`` reach ``progress``
    here as they come. An exception in a child stops the others and is raised here (its traceback as the
    cause); a child that dies without a word (killed, out of memory) raises :class:`InterpRLError`. On
    an interruption here (Ctrl-C, SIGTERM turned into one) the children are stopped before it propagates.
    """
    if jobs <= 1 or len(tasks) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [task(progress) for task in tasks]
    ctx = multiprocessing.get_context("fork")
    results: dict[int, T] = {}
    running: dict[int, tuple[Any, Connection]] = {}
    waiting = list(range(len(tasks)))
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                i = waiting.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(tasks[i], send, progress is not None, os.getpid()),
                                   daemon=True)
                mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # see _child
                try:
                    proc.start()
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                send.close()
                running[i] = (proc, recv)
            ready = wait([conn for _, conn in running.values()])
            for i, (proc, conn) in list(running.items()):
                if conn not in ready:
                    continue
                try:
                    message = conn.recv()
                except EOFError:
                    proc.join()
                    raise InterpRLError(f"A worker process stopped without a result (exit code {proc.exitcode}); "
                                        "if it ran out of memory, run the tasks one after the other.") from None
                except Exception as exc:  # e.g. an exception class that cannot be rebuilt from its message
                    raise InterpRLError(f"A worker process's message could not be read back "
                                        f"({type(exc).__name__}: {exc}).") from None
                if message[0] == "progress":
                    assert progress is not None
                    progress(message[1])
                elif message[0] == "done":
                    results[i] = message[1]
                    proc.join()
                    conn.close()
                    del running[i]
                else:
                    _, exc, text = message
                    raise exc from _RemoteTraceback(text)
    finally:
        for proc, conn in running.values():
            proc.terminate()
            proc.join()
            conn.close()
    return [results[i] for i in range(len(tasks))]


def _on_node(fn: Callable[[Any], T], arg: Any) -> tuple[str, T]:
    """``fn(arg)`` and the id of the Ray node that ran it (a Ray task's body)."""
    import ray

    return ray.get_runtime_context().get_node_id(), fn(arg)


def ray_map(fn: Callable[[Any], T], args: Sequence[Any], *, workers: int, address: str | None = None,
            nodes: set[str] | None = None) -> list[T]:
    """``[fn(a) for a in args]`` as Ray tasks (one CPU each), results in order: on the cluster at ``address``, on
    the Ray instance this process already joined, or else on a local one of ``workers`` CPUs started (and left
    running, for the next call) here. ``fn`` and ``args`` travel by cloudpickle; a task's exception is raised
    here as itself. ``nodes``, when given, collects the ids of the nodes the tasks ran on."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise InterpRLError("--executor ray needs Ray, an optional extra: pip install 'interp-rl[ray]'.") from None
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(address="local", num_cpus=max(1, workers), **kwargs)  # not a cluster found running here
    task = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(_on_node)  # over every node
    refs = [task.remote(fn, a) for a in args]
    try:
        done = ray.get(refs)
    except Exception as exc:  # a RayTaskError wraps the task's own exception
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from exc
        raise
    if nodes is not None:
        nodes.update(node for node, _ in done)
    return [result for _, result in done]
