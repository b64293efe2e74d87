"""Per-action latency of teachers and exported controllers."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["controller_latency", "native_c_latency", "teacher_latency"]

_BENCH_MAIN = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>
void act(const double *obs, double *action);
int main(int argc, char **argv) {
    static double obs[%(obs_dim)d], action[%(act_dim)d];
    double sink = 0.0;
    long n = %(calls)d;
    for (int i = 0; i < %(obs_dim)d; i++) scanf("%%lf", &obs[i]);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long k = 0; k < n; k++) {
        obs[k %% %(obs_dim)d] += 1e-12;  /* keep the compiler from hoisting the call */
        act(obs, action);
        sink += action[0];
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%%.9e %%g\n", ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / n, sink);
    return 0;
}
"""


def native_c_latency(c_file: Path, obs: np.ndarray, act_dim: int, calls: int = 200_000) -> float:
    """Seconds per ``act`` call of an exported ``controller.c``, timed inside a C loop."""
    from interp_rl.export import find_compiler

    with tempfile.TemporaryDirectory() as tmp:
        main = Path(tmp) / "bench.c"
        main.write_text(_BENCH_MAIN % {"obs_dim": len(obs), "act_dim": act_dim, "calls": calls})
        exe = Path(tmp) / "bench"
        cc = find_compiler()
        # -lm last: a squashed mixture's controller.c calls tanh
        subprocess.run([*cc, "-O2", "-std=c99", "-ffp-contract=off", "-o", str(exe), str(c_file), str(main), "-lm"],
                       check=True, capture_output=True)
        res = subprocess.run([str(exe)], input=" ".join(repr(float(v)) for v in obs), text=True,
                             capture_output=True, check=True)
        return float(res.stdout.split()[0])


def teacher_latency(teacher: Any, states: np.ndarray, *, repeats: int = 100) -> dict[str, float]:
    """Three timings of the teacher, from the whole user-facing call down to the bare network.

    ``single_s``: SB3's ``model.predict`` on one observation (what a user calls; it converts,
    reshapes and clips around the network). ``forward_s``: the policy network's own forward
    pass on one prepared tensor under ``torch.no_grad()`` (``policy._predict``), the like-for-like
    reference for a compiled controller's ``act``. ``batch_s_per_obs``: the teacher's batched
    ``predict`` on ``states``, per observation.
    """
    import torch

    from interp_rl.export import measure_latency

    obs = states[:1]
    norm = teacher.normalizer(obs) if teacher.normalizer is not None else obs
    sb3_obs = np.asarray(norm[0], dtype=np.float32)
    single = measure_latency(lambda o: teacher.model.predict(o, deterministic=True), sb3_obs, repeats=repeats)
    tensor = torch.as_tensor(np.asarray(norm, dtype=np.float32))
    policy = teacher.model.policy

    def forward(x: Any) -> Any:
        with torch.no_grad():
            return policy._predict(x, deterministic=True)

    fwd = measure_latency(forward, tensor, repeats=repeats)
    batch = measure_latency(teacher.predict, states, repeats=max(repeats // 10, 5), warmup=2)
    return {"single_s": float(single["median_s"]), "forward_s": float(fwd["median_s"]),
            "batch_s_per_obs": float(batch["median_s"]) / len(states)}


def controller_latency(controller: Any, folder: Path, states: np.ndarray, *,
                       repeats: int = 300) -> dict[str, float | None]:
    """An exported controller: Python ``act`` and native C ``act`` on one observation, batch ``predict``.

    ``c_native_s`` is None only when no C compiler is installed; a C file that fails to compile
    or run is an error, never a missing number.
    """
    from interp_rl.errors import ExportError
    from interp_rl.export import find_compiler, load_python_controller, measure_latency

    act_py = load_python_controller(folder / "controller.py")
    obs = states[0]
    single = measure_latency(act_py, obs.tolist(), repeats=repeats)
    batch = measure_latency(controller.program.predict, states, repeats=max(repeats // 10, 5), warmup=2)
    c_native: float | None = None
    try:
        find_compiler()
    except ExportError:
        pass  # no compiler on this machine: the C timing is left out
    else:
        c_native = native_c_latency(folder / "controller.c", obs, controller.program.act_dim)
    return {"single_s": float(single["median_s"]), "batch_s_per_obs": float(batch["median_s"]) / len(states),
            "c_native_s": c_native}
