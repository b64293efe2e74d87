"""Tasks side by side in forked processes: results in order, progress forwarded, errors and deaths raised,
children stopped on an interruption; and the recipe's DART levels give the same controller either way."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from interp_rl.errors import InterpRLError
from interp_rl.parallel import side_by_side, usable_cpus


def _pid_task(k):
    def task(progress):
        if progress is not None:
            progress({"task": k, "pid": os.getpid()})
        return k, os.getpid()

    return task


def test_tasks_run_in_child_processes_and_return_in_order():
    rows = []
    out = side_by_side([_pid_task(k) for k in range(3)], jobs=2, progress=rows.append)
    assert [k for k, _ in out] == [0, 1, 2]
    pids = {pid for _, pid in out}
    assert os.getpid() not in pids and len(pids) == 3  # one fresh child per task
    assert sorted(r["task"] for r in rows) == [0, 1, 2]  # every child's progress reached the caller
    assert {r["pid"] for r in rows} == pids
    assert multiprocessing.active_children() == []


def test_one_job_runs_the_tasks_here_one_after_the_other():
    out = side_by_side([_pid_task(k) for k in range(2)], jobs=1)
    assert out == [(0, os.getpid()), (1, os.getpid())]
    assert usable_cpus() >= 1


def test_an_error_in_a_child_is_raised_here_and_stops_the_others():
    def slow(progress):
        time.sleep(60)

    def bad(progress):
        raise InterpRLError("The teacher is for Hopper-v5, not Ant-v5.")

    t0 = time.perf_counter()
    with pytest.raises(InterpRLError, match="not Ant-v5") as info:
        side_by_side([slow, bad], jobs=2)
    assert "raise InterpRLError" in str(info.value.__cause__)  # the child's traceback is the cause
    assert time.perf_counter() - t0 < 30 and multiprocessing.active_children() == []


def test_an_exception_that_cannot_travel_back_keeps_its_type_and_message():
    class Local(Exception):  # defined in a function: cannot be pickled
        pass

    def bad(progress):
        raise Local("the step size is NaN")

    with pytest.raises(InterpRLError, match="Local: the step size is NaN"):
        side_by_side([bad, _pid_task(1)], jobs=2)


def test_a_child_that_dies_without_a_word_is_reported():
    def killed(progress):
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(InterpRLError, match=r"stopped without a result \(exit code -9\)"):
        side_by_side([killed, _pid_task(1)], jobs=2)
    assert multiprocessing.active_children() == []


def test_an_interruption_here_stops_the_children():
    def slow(progress):
        progress({"started": True})
        time.sleep(60)

    def stop(row):
        raise KeyboardInterrupt

    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        side_by_side([slow, slow], jobs=2, progress=stop)
    assert time.perf_counter() - t0 < 30 and multiprocessing.active_children() == []


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting for a reaper does not)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_children_leave_when_the_parent_is_killed_outright(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""
        import os, time
        from interp_rl.parallel import side_by_side

        def slow(progress):
            progress({"pid": os.getpid()})
            time.sleep(120)

        side_by_side([slow, slow], 2, lambda row: print(row["pid"], flush=True))
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pids = [int(proc.stdout.readline()) for _ in range(2)]
    assert all(_running(p) for p in pids)
    proc.kill()  # SIGKILL: no finally block runs in the parent
    proc.wait()
    deadline = time.perf_counter() + 15
    while any(_running(p) for p in pids) and time.perf_counter() < deadline:
        time.sleep(0.2)
    assert not any(_running(p) for p in pids)


def test_dart_levels_side_by_side_make_the_same_controller(teachers, single_torch_thread, tmp_path):
    from distill.dagger import DAgger
    from distill.job import Distillation
    from distill.moe import MixturePolicy

    teacher = teachers["ppo_hopper"]

    def fit(n_jobs, folder, progress=None):
        est = Distillation(DAgger(MixturePolicy(n_experts=2, n_steps=200), n_iter=1, steps=600, eval_episodes=0),
                           restarts=2, restart_episodes=2, noise_levels="0, 0.5", n_jobs=n_jobs)
        return est.fit(teacher, checkpoint_dir=tmp_path / folder, progress=progress)

    rows: list[dict] = []
    one, two = fit(1, "one"), fit(2, "two", rows.append)
    assert json.dumps(one.student_.to_controller().to_dict()) == json.dumps(two.student_.to_controller().to_dict())
    assert one.noise_levels_ == two.noise_levels_ and one.restarts_["rows"] == two.restarts_["rows"]
    for a, b in zip(one.data_[:2], two.data_[:2], strict=True):
        assert np.array_equal(a, b)
    for a, b in zip(one.daggers_, two.daggers_, strict=True):  # each level's data, not only the kept one's
        assert np.array_equal(a.X_, b.X_) and np.array_equal(a.y_, b.y_)
    # every row says which level it is from, both levels checkpoint in their own folders
    assert {r["level"] for r in rows if "round" in r} == {0, 1}
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["noise-0", "noise-0.5"]
    with pytest.raises(InterpRLError, match="'n_jobs' parameter of Distillation"):
        Distillation(n_jobs=0).fit(teacher)


def _sigterm_disposition(progress):  # noqa: ANN001, ANN202
    return signal.getsignal(signal.SIGTERM)


def test_a_child_is_stopped_by_sigterm_whatever_handler_its_parent_has():
    """The parent's SIGTERM handler (the command line's, Ray's) is not the child's: the parent's terminate() ends
    the child, never an exception raised in it, which could carry the forked child on into the parent's code."""
    def leave(signum, frame):  # noqa: ANN001, ANN202 - what ray.init installs
        raise SystemExit(signum)

    before = signal.signal(signal.SIGTERM, leave)
    try:
        dispositions = side_by_side([_sigterm_disposition, _sigterm_disposition], jobs=2)
        with pytest.raises(InterpRLError, match=r"stopped without a result \(exit code -9\)"):
            side_by_side([_killed, _sleeper], jobs=2)  # the sleeper is terminated, as SIGTERM's default does
    finally:
        signal.signal(signal.SIGTERM, before)
    assert dispositions == [signal.SIG_DFL, signal.SIG_DFL]
    assert multiprocessing.active_children() == []


def _killed(progress):  # noqa: ANN001, ANN202
    os.kill(os.getpid(), signal.SIGKILL)


def _sleeper(progress):  # noqa: ANN001, ANN202
    time.sleep(60)
