"""Shared fixtures: the pretrained zoo teachers in ``../shared/teachers`` and small policies."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

#: The read-only zoo agents live in ``shared/teachers`` beside the checkout, or in
#: ``$INTERP_RL_TEACHERS``.
SHARED_TEACHERS = Path(
    os.environ.get("INTERP_RL_TEACHERS", Path(__file__).resolve().parents[2] / "shared" / "teachers")
)

#: Set (as ``.ci/run`` does) to make a missing teachers folder fail the run instead of skipping
#: the tests that need it.
REQUIRE_TEACHERS = os.environ.get("INTERP_RL_REQUIRE_TEACHERS", "") not in ("", "0")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # -n auto: one worker per core, each computing on one thread
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import torch

        torch.set_num_threads(1)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``slow`` tests first (else in their order): under ``-n auto`` a test of minutes begun last keeps one core
    busy after the other has finished everything else. (``--dist loadgroup`` hands out the xdist groups before
    single tests, the largest group first.) And each test of an ``xdist_group`` named as that option expects."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        for item in items:
            _name_its_xdist_group(item)


def _name_its_xdist_group(item: pytest.Item) -> None:
    """Suffix the node id of a test in an ``xdist_group`` with ``@GROUP``, as pytest-xdist does on each worker.

    That suffix is how ``--dist loadgroup`` sends a group's tests to one worker. pytest 9.2 keeps node ids
    structured, and pytest-xdist 3.8 still writes the suffix into the attribute older pytest read, so it is lost
    and the groups silently spread over every worker (pytest-xdist issue #1386): the Ray tests ran on both
    workers, two Ray clusters at a time, and each worker built the shared fixtures of a group again. Once xdist
    writes the suffix again, this does nothing.
    """
    marks = item.iter_markers("xdist_group")
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks})
    if not names:
        return
    suffix = "@" + "_".join(names)
    if item.nodeid.endswith(suffix):
        return
    from _pytest.nodeid import NodeId

    item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]


def pytest_sessionstart(session: pytest.Session) -> None:
    if REQUIRE_TEACHERS and not SHARED_TEACHERS.is_dir():
        pytest.exit(
            f"The shared zoo teachers are required ($INTERP_RL_REQUIRE_TEACHERS is set) but the folder "
            f"{SHARED_TEACHERS} does not exist; put them there or name their folder in $INTERP_RL_TEACHERS.",
            returncode=1,
        )


#: key -> (algorithm, zoo env name) of every shared teacher.
TEACHER_SPECS: dict[str, tuple[str, str]] = {
    "sac_halfcheetah": ("sac", "HalfCheetah"),
    "sac_hopper": ("sac", "Hopper"),
    "ppo_hopper": ("ppo", "Hopper"),
    "sac_walker2d": ("sac", "Walker2d"),
    "sac_swimmer": ("sac", "Swimmer"),
    "trpo_ant": ("trpo", "Ant"),
}


def teacher_run_dir(root: Path, algo: str, env: str) -> Path:
    """The zoo run folder ``ROOT/ALGO/ENV-v3_1``."""
    return root / algo / f"{env}-v3_1"


def teacher_zip(root: Path, algo: str, env: str) -> Path:
    """The zoo model zip ``ROOT/ALGO/ENV-v3_1/ENV-v3.zip``."""
    return teacher_run_dir(root, algo, env) / f"{env}-v3.zip"


def build_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """The folder ``name``, made by ``build(folder)`` once per test run and shared by every xdist worker.

    A module- or session-scoped fixture runs once per worker, so under ``-n auto`` an expensive one ran on each
    core. When its tests can share a worker, an ``xdist_group`` is enough; a fixture that tests on several workers
    need (a trained teacher, a bench run the Ray group uses too) is built here: the first worker to ask builds the
    folder, under a file lock in the run's common temporary folder (``getbasetemp().parent`` under xdist); the
    others wait for it and reuse it. Without xdist it is the session's own. A build that fails leaves nothing
    behind, so the next worker to ask builds again (and fails the same way, in its own test). Treat the folder as
    read-only: :func:`private_copy` gives a worker a copy to change.
    """
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # one temporary folder per run, holding each worker's own
    shared = root / "built-once"
    shared.mkdir(exist_ok=True)
    folder, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            try:
                build(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            done.touch()
    return folder


def private_copy(tmp_path_factory: pytest.TempPathFactory, folder: Path) -> Path:
    """A copy of ``folder`` (a :func:`build_once` folder) that this worker may change; times are kept."""
    copy = tmp_path_factory.mktemp(folder.name) / folder.name
    shutil.copytree(folder, copy)
    return copy


@pytest.fixture(scope="module")
def single_torch_thread():
    """Run torch on one thread for the module, then restore the previous setting.

    Teachers label small batches (at most 8 observations per step in ``evaluate``), where
    one thread is fastest; with two threads on a busy 2-core machine the thread hand-off
    makes evaluations several times slower. Results are identical either way.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def shared_teachers() -> Path:
    """Path of the shared zoo teachers; skips the test when the folder is missing."""
    if not SHARED_TEACHERS.is_dir():
        pytest.skip(
            f"pretrained zoo teachers not available: folder {SHARED_TEACHERS} is missing"
        )
    return SHARED_TEACHERS


class _TeacherCache:
    """Loads each shared teacher (from its zip) once per session, on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, object] = {}

    def __getitem__(self, key: str):  # noqa: ANN204 - returns SB3Teacher
        if key not in self._cache:
            from envs.loading import load_teacher

            algo, env = TEACHER_SPECS[key]
            self._cache[key] = load_teacher(teacher_zip(self.root, algo, env))
        return self._cache[key]


@pytest.fixture(scope="session")
def teachers(shared_teachers: Path) -> _TeacherCache:
    """``teachers['sac_hopper']`` etc.: session-wide loaded shared teachers (do not mutate)."""
    return _TeacherCache(shared_teachers)


class ConstantPolicy:
    """A batched policy that always returns ``value`` for each of ``act_dim`` actions."""

    def __init__(self, act_dim: int, value: float = 0.0) -> None:
        self.act_dim = act_dim
        self.value = value
        self.calls: list[np.ndarray] = []

    def predict(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs)
        self.calls.append(obs.copy())
        return np.full((len(obs), self.act_dim), self.value, dtype=np.float64)


@pytest.fixture
def constant_policy() -> type[ConstantPolicy]:
    """The :class:`ConstantPolicy` class (construct with ``act_dim`` and ``value``)."""
    return ConstantPolicy
