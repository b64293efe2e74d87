"""Pictures of recorded MuJoCo states, drawn by MuJoCo's offscreen renderer in a child process.

MuJoCo picks its OpenGL backend (``MUJOCO_GL``: EGL, OSMesa, GLFW) once, when it is first imported, and a
headless machine needs EGL or OSMesa. The toolkit has imported MuJoCo long before a picture is wanted, so the
frames are drawn by ``python -m interp_rl._frames`` with the backend set, from the model (MuJoCo's binary
``.mjb``) and the physics state of each frame. Without a working backend the caller gets the reason in one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["render_states"]

_BACKENDS = ("egl", "osmesa")


def render_states(env_fn: Callable[[int], Any], states: Sequence[Any], *, width: int = 320, height: int = 240,
                  timeout: float = 180.0) -> tuple[list[np.ndarray], str]:
    """Frames ``(height, width, 3)`` of recorded states (:class:`~interp_rl.simstate.SimState`) of a MuJoCo task,
    seen from a camera that follows the robot; ``([], reason)`` when they cannot be drawn here."""
    import mujoco

    from interp_rl.simstate import restore

    if not states:
        return [], ""
    env = env_fn(states[0].seed)
    try:
        u = env.unwrapped
        model, data = getattr(u, "model", None), getattr(u, "data", None)
        if model is None or type(model).__name__ != "MjModel":
            return [], "the task has no MuJoCo simulator to draw"
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        rows = []
        for st in states:
            restore(env, st)
            buf = np.empty(mujoco.mj_stateSize(model, spec))
            mujoco.mj_getState(model, data, buf, spec)
            rows.append(buf)
        with tempfile.TemporaryDirectory() as tmp:
            mjb = Path(tmp) / "model.mjb"
            mujoco.mj_saveModel(model, str(mjb), None)
            np.savez(Path(tmp) / "in.npz", states=np.stack(rows), size=np.array([width, height]))
            backends = [os.environ["MUJOCO_GL"]] if os.environ.get("MUJOCO_GL") else list(_BACKENDS)
            reasons = []
            for backend in backends:
                env_vars = {**os.environ, "MUJOCO_GL": backend, "PYOPENGL_PLATFORM": backend}
                try:
                    done = subprocess.run([sys.executable, "-m", "interp_rl._frames", tmp], env=env_vars,
                                          capture_output=True, text=True, timeout=timeout, check=False)
                except subprocess.TimeoutExpired:
                    reasons.append(f"{backend}: no frame within {timeout:.0f} s")
                    continue
                out = Path(tmp) / "out.npz"
                if done.returncode == 0 and out.is_file():
                    with np.load(out, allow_pickle=False) as z:
                        frames = np.asarray(z["frames"])
                    return list(frames), ""
                last = (done.stderr.strip().splitlines() or ["failed"])[-1]
                reasons.append(f"{backend}: {last[:160]}")
            return [], "no offscreen rendering backend works here (" + "; ".join(reasons) + ")"
    finally:
        env.close()


def _child(folder: str) -> None:
    import mujoco

    tmp = Path(folder)
    model = mujoco.MjModel.from_binary_path(str(tmp / "model.mjb"))
    data = mujoco.MjData(model)
    with np.load(tmp / "in.npz", allow_pickle=False) as z:
        states, (width, height) = np.asarray(z["states"]), [int(v) for v in z["size"]]
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)
    renderer = mujoco.Renderer(model, height, width)
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid = 1 if model.nbody > 1 else 0
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    mujoco.mj_setState(model, data, states[0], spec)
    mujoco.mj_forward(model, data)
    body = data.xpos[1:] if model.nbody > 1 else data.xpos
    reach = float(np.max(np.ptp(body, axis=0))) if len(body) else 1.0
    camera.distance = 2.2 * max(reach, 1.0)  # the robot's own size, not the floor's
    camera.elevation = -12.0
    camera.azimuth = 90.0
    frames = []
    for row in states:
        mujoco.mj_setState(model, data, row, spec)
        mujoco.mj_forward(model, data)
        renderer.update_scene(data, camera=camera)
        frames.append(renderer.render().copy())
    renderer.close()
    np.savez(tmp / "out.npz", frames=np.stack(frames))


if __name__ == "__main__":  # pragma: no cover - runs in the child process
    _child(sys.argv[1])
