"""Named, unit-carrying features derived from a MuJoCo model.

An observation *layout* is a list of blocks. Each block knows the names and
units of the values it contributes (read off the model's own joint, body and
actuator names) and how to compute those values from the simulator state, so
the same description both labels the observation and can rebuild it (the zoo's
old ``-v3`` layouts are built this way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from interp_rl.program import Signal

__all__ = [
    "ActuatorActions",
    "BodyArray",
    "ComDifference",
    "JointQpos",
    "JointQvel",
    "ObservationBlock",
    "QfrcActuator",
    "QfrcConstraint",
    "TrigQpos",
    "action_features",
    "layout_features",
    "layout_values",
]

_AXES = {0: "x", 1: "y", 2: "z"}
_ROT = {"x": "roll", "y": "pitch", "z": "yaw"}


def _name(model: Any, obj: mujoco.mjtObj, idx: int) -> str | None:
    return mujoco.mj_id2name(model, obj, idx)


def body_name(model: Any, body: int) -> str:
    """Name of ``body``; unnamed bodies are named after their first joint."""
    name = _name(model, mujoco.mjtObj.mjOBJ_BODY, body)
    if name:
        return name
    if body == 0:
        return "world"
    for j in range(model.njnt):
        if model.jnt_bodyid[j] == body:
            jn = _name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if jn:
                return f"{jn}_link"
    return f"body{body}"


def _axis(vec: np.ndarray) -> str | None:
    i = int(np.argmax(np.abs(vec)))
    return _AXES[i] if abs(abs(vec[i]) - 1.0) < 1e-6 else None


def _is_root(model: Any, joint: int) -> bool:
    return int(model.body_parentid[model.jnt_bodyid[joint]]) == 0


def joint_dof_features(model: Any, joint: int) -> tuple[list[Signal], list[Signal]]:
    """Features of one joint's ``qpos`` entries and of its ``qvel`` entries."""
    jname = _name(model, mujoco.mjtObj.mjOBJ_JOINT, joint) or f"joint{joint}"
    jtype = int(model.jnt_type[joint])
    body = body_name(model, int(model.jnt_bodyid[joint]))
    src = f"joint '{jname}'"
    if jtype == mujoco.mjtJoint.mjJNT_FREE:
        pos = [Signal(f"{body}_{a}", "m", f"{src} position") for a in "xyz"]
        pos += [Signal(f"{body}_q{a}", "1", f"{src} orientation quaternion") for a in "wxyz"]
        vel = [Signal(f"{body}_v{a}", "m/s", f"{src} linear velocity") for a in "xyz"]
        vel += [Signal(f"{body}_w{a}", "rad/s", f"{src} angular velocity") for a in "xyz"]
        return pos, vel
    if jtype == mujoco.mjtJoint.mjJNT_BALL:
        pos = [Signal(f"{jname}_q{a}", "1", f"{src} quaternion") for a in "wxyz"]
        vel = [Signal(f"{jname}_w{a}", "rad/s", f"{src} angular velocity") for a in "xyz"]
        return pos, vel
    axis = _axis(np.asarray(model.jnt_axis[joint]))
    # A planar floating base (rootx/rootz/rooty, slider1/slider2/...) is named after its
    # body: torso_x, torso_pitch. A lone hinge on a world child (Reacher's joint0) is not.
    body_id = int(model.jnt_bodyid[joint])
    base_joints = int(np.sum(model.jnt_bodyid == body_id))
    root = _is_root(model, joint) and axis is not None and (
        jtype == mujoco.mjtJoint.mjJNT_SLIDE or base_joints >= 2
    )
    if jtype == mujoco.mjtJoint.mjJNT_SLIDE:
        if root:
            return ([Signal(f"{body}_{axis}", "m", f"{src} (slide)")],
                    [Signal(f"{body}_v{axis}", "m/s", f"{src} velocity")])
        return ([Signal(f"{jname}_pos", "m", f"{src} (slide)")],
                [Signal(f"{jname}_vel", "m/s", f"{src} velocity")])
    if root:
        rot = _ROT[axis]  # type: ignore[index]
        return ([Signal(f"{body}_{rot}", "rad", f"{src} (hinge)")],
                [Signal(f"{body}_{rot}_rate", "rad/s", f"{src} angular velocity")])
    return ([Signal(f"{jname}_angle", "rad", f"{src} (hinge)")],
            [Signal(f"{jname}_angvel", "rad/s", f"{src} angular velocity")])


def _qpos_features(model: Any) -> list[Signal]:
    out: list[Signal] = []
    for j in range(model.njnt):
        out += joint_dof_features(model, j)[0]
    return out


def _qvel_features(model: Any) -> list[Signal]:
    out: list[Signal] = []
    for j in range(model.njnt):
        out += joint_dof_features(model, j)[1]
    return out


class ObservationBlock:
    """A contiguous piece of an observation: names plus how to compute it."""

    def features(self, model: Any) -> list[Signal]:
        raise NotImplementedError

    def values(self, model: Any, data: Any) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class JointQpos(ObservationBlock):
    """``data.qpos[start:stop]``."""

    start: int = 0
    stop: int | None = None

    def features(self, model: Any) -> list[Signal]:
        return _qpos_features(model)[self.start : self.stop]

    def values(self, model: Any, data: Any) -> np.ndarray:
        return np.asarray(data.qpos, dtype=np.float64).ravel()[self.start : self.stop]


@dataclass(frozen=True)
class JointQvel(ObservationBlock):
    """``clip(data.qvel[start:stop], -clip, clip)``."""

    start: int = 0
    stop: int | None = None
    clip: float | None = None

    def features(self, model: Any) -> list[Signal]:
        feats = _qvel_features(model)[self.start : self.stop]
        if self.clip is None:
            return feats
        return [Signal(f.name, f.unit, f"{f.description}, clipped to ±{self.clip:g}") for f in feats]

    def values(self, model: Any, data: Any) -> np.ndarray:
        v = np.asarray(data.qvel, dtype=np.float64).ravel()[self.start : self.stop]
        return v if self.clip is None else np.clip(v, -self.clip, self.clip)


@dataclass(frozen=True)
class TrigQpos(ObservationBlock):
    """``fn(data.qpos[start:stop])`` with ``fn`` in {cos, sin}."""

    fn: str = "cos"
    start: int = 0
    stop: int | None = None

    def features(self, model: Any) -> list[Signal]:
        return [
            Signal(f"{self.fn}_{f.name}", "1", f"{self.fn} of {f.description}")
            for f in _qpos_features(model)[self.start : self.stop]
        ]

    def values(self, model: Any, data: Any) -> np.ndarray:
        q = np.asarray(data.qpos, dtype=np.float64).ravel()[self.start : self.stop]
        return np.cos(q) if self.fn == "cos" else np.sin(q)


@dataclass(frozen=True)
class ComDifference(ObservationBlock):
    """``(com(body_a) - com(body_b))[:dims]``."""

    body_a: str = ""
    body_b: str = ""
    dims: int = 3

    def features(self, model: Any) -> list[Signal]:
        return [
            Signal(f"{self.body_a}_to_{self.body_b}_{_AXES[i]}", "m",
                    f"position of body '{self.body_a}' minus body '{self.body_b}'")
            for i in range(self.dims)
        ]

    def values(self, model: Any, data: Any) -> np.ndarray:
        a = data.body(self.body_a).xpos
        b = data.body(self.body_b).xpos
        return np.asarray(a - b, dtype=np.float64)[: self.dims]


_BODY_ARRAYS: dict[str, tuple[list[tuple[str, str]], str]] = {
    "cinert": (
        [("Ixx", "kg m^2"), ("Iyy", "kg m^2"), ("Izz", "kg m^2"), ("Ixy", "kg m^2"),
         ("Ixz", "kg m^2"), ("Iyz", "kg m^2"), ("mcx", "kg m"), ("mcy", "kg m"),
         ("mcz", "kg m"), ("mass", "kg")],
        "com-based inertia and mass",
    ),
    "cvel": (
        [("wx", "rad/s"), ("wy", "rad/s"), ("wz", "rad/s"),
         ("vx", "m/s"), ("vy", "m/s"), ("vz", "m/s")],
        "com-based velocity",
    ),
    "cfrc_ext": (
        [("ext_torque_x", "N m"), ("ext_torque_y", "N m"), ("ext_torque_z", "N m"),
         ("ext_force_x", "N"), ("ext_force_y", "N"), ("ext_force_z", "N")],
        "external (contact) wrench",
    ),
}


@dataclass(frozen=True)
class BodyArray(ObservationBlock):
    """A per-body array of ``data`` (``cinert``, ``cvel``, ``cfrc_ext``) from ``first_body`` on.

    ``clip`` clips the values; ``zero`` replaces them with zeros (the zoo's
    old agents never saw real contact forces).
    """

    field: str = "cfrc_ext"
    first_body: int = 1
    clip: float | None = None
    zero: bool = False

    def features(self, model: Any) -> list[Signal]:
        comps, what = _BODY_ARRAYS[self.field]
        note = ", always 0 (zoo v3 layout)" if self.zero else (
            f", clipped to ±{self.clip:g}" if self.clip is not None else "")
        out = []
        for b in range(self.first_body, model.nbody):
            bn = body_name(model, b)
            for comp, unit in comps:
                # cfrc_ext components already say what they are (ext_force_x)
                name = f"{bn}_{comp}" if self.field == "cfrc_ext" else f"{bn}_{self.field}_{comp}"
                out.append(Signal(name, unit, f"{what} of body '{bn}'{note}"))
        return out

    def values(self, model: Any, data: Any) -> np.ndarray:
        v = np.asarray(getattr(data, self.field), dtype=np.float64)[self.first_body :].ravel()
        if self.zero:
            return np.zeros_like(v)
        return v if self.clip is None else np.clip(v, -self.clip, self.clip)


def _dof_features(model: Any, what: str, desc: str) -> list[Signal]:
    """One feature per degree of freedom: ``<joint>[_<component>]_<what>``."""
    out = []
    for d in range(model.nv):
        j = int(model.dof_jntid[d])
        jname = _name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}"
        jtype = int(model.jnt_type[j])
        k = d - int(model.jnt_dofadr[j])
        if jtype == mujoco.mjtJoint.mjJNT_FREE:
            comp, unit = (f"_{'xyz'[k]}", "N") if k < 3 else (f"_r{'xyz'[k - 3]}", "N m")
        elif jtype == mujoco.mjtJoint.mjJNT_BALL:
            comp, unit = f"_r{'xyz'[k]}", "N m"
        else:
            comp, unit = "", "N" if jtype == mujoco.mjtJoint.mjJNT_SLIDE else "N m"
        out.append(Signal(f"{jname}{comp}_{what}", unit, f"{desc} on joint '{jname}'"))
    return out


@dataclass(frozen=True)
class QfrcActuator(ObservationBlock):
    """``data.qfrc_actuator[start:]``: actuator force on each degree of freedom."""

    start: int = 0

    def features(self, model: Any) -> list[Signal]:
        return _dof_features(model, "actuator_force", "actuator force")[self.start :]

    def values(self, model: Any, data: Any) -> np.ndarray:
        return np.asarray(data.qfrc_actuator, dtype=np.float64).ravel()[self.start :]


@dataclass(frozen=True)
class QfrcConstraint(ObservationBlock):
    """``clip(data.qfrc_constraint, -clip, clip)[start:stop]``."""

    start: int = 0
    stop: int | None = None
    clip: float | None = None

    def features(self, model: Any) -> list[Signal]:
        note = "" if self.clip is None else f", clipped to ±{self.clip:g}"
        feats = _dof_features(model, "constraint_force", "constraint force")[self.start : self.stop]
        return [Signal(f.name, f.unit, f.description + note) for f in feats]

    def values(self, model: Any, data: Any) -> np.ndarray:
        v = np.asarray(data.qfrc_constraint, dtype=np.float64).ravel()
        if self.clip is not None:
            v = np.clip(v, -self.clip, self.clip)
        return v[self.start : self.stop]


def layout_features(layout: Sequence[ObservationBlock], model: Any) -> list[Signal]:
    """Concatenate the features of every block of ``layout``."""
    out: list[Signal] = []
    for block in layout:
        out += block.features(model)
    return out


def layout_values(layout: Sequence[ObservationBlock], model: Any, data: Any) -> np.ndarray:
    """Compute the observation described by ``layout`` from the simulator state."""
    return np.concatenate([block.values(model, data) for block in layout])


@dataclass(frozen=True)
class ActuatorActions:
    """Action features: one per actuator, named after the joint it drives."""

    def features(self, model: Any) -> list[Signal]:
        out = []
        for a in range(model.nu):
            joint = int(model.actuator_trnid[a, 0])
            jname = _name(model, mujoco.mjtObj.mjOBJ_JOINT, joint) or f"joint{joint}"
            aname = _name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a)
            gear = float(model.actuator_gear[a, 0])
            slide = int(model.jnt_type[joint]) == mujoco.mjtJoint.mjJNT_SLIDE
            kind = "force" if slide else "torque"
            unit = f"x{gear:g} N" if slide else f"x{gear:g} N m"
            desc = f"motor{f' {aname!r}' if aname else ''} on joint '{jname}', gear {gear:g}"
            out.append(Signal(f"{jname}_{kind}", unit, desc))
        return out


def action_features(model: Any) -> list[Signal]:
    """One named feature per actuator of ``model``."""
    return ActuatorActions().features(model)
