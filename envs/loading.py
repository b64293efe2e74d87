"""Load SB3 teachers (a zip, an RL-Zoo log folder, or a folder made by ``interp-rl train``).

.. warning::
   SB3 zips and zoo ``vecnormalize.pkl`` files hold Python pickles, which can
   run code when loaded. Load them only from paths you named and trust.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from envs.registry import EnvVariant, Task, env_factory, resolve_task
from envs.sb3 import (
    ObsNormalizer,
    SB3Teacher,
    action_dim,
    load_sb3_model,
    read_vecnormalize,
)
from interp_rl.errors import ObservationError, TeacherLoadError

__all__ = ["TEACHER_FILE", "find_zoo_model", "is_controller_path", "load_teacher", "read_zoo_config"]

#: Metadata file written by ``interp-rl train`` beside its model.
TEACHER_FILE = "teacher.json"


class _ZooLoader(yaml.SafeLoader):
    """SafeLoader that reads the zoo's ``!!python/object/apply:collections.OrderedDict``."""


def _ordered_dict(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    pairs = loader.construct_sequence(node, deep=True)
    items = pairs[0] if len(pairs) == 1 and isinstance(pairs[0], list) else pairs
    return {k: v for k, v in items}


_ZooLoader.add_constructor(
    "tag:yaml.org,2002:python/object/apply:collections.OrderedDict", _ordered_dict
)


def read_zoo_config(path: str | Path) -> dict[str, Any]:
    """Read a zoo ``config.yml`` / ``args.yml`` without running any Python tags."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_ZooLoader)  # noqa: S506 - SafeLoader subclass
    except (OSError, yaml.YAMLError) as exc:
        raise TeacherLoadError(f"Cannot read zoo config {str(path)!r}: {exc}".splitlines()[0]) from None
    return dict(data or {})


def _wrapper_names(config: dict[str, Any]) -> list[str]:
    wrapper = config.get("env_wrapper")
    if wrapper is None:
        return []
    items = wrapper if isinstance(wrapper, list) else [wrapper]
    out = []
    for item in items:
        out += list(item) if isinstance(item, dict) else [str(item)]
    return out


def find_zoo_model(folder: str | Path, algo: str, env: str, exp_id: int = 0) -> Path:
    """The zip of an RL-Zoo run: ``FOLDER/ALGO/ENV_ID/ENV.zip`` (``exp_id`` 0: the latest run)."""
    base = Path(folder) / algo.lower()
    if exp_id > 0:
        run = base / f"{env}_{exp_id}"
    else:
        runs = [p for p in base.glob(f"{env}_*") if re.fullmatch(rf"{re.escape(env)}_\d+", p.name)]
        if not runs:
            raise TeacherLoadError(
                f"No zoo run of {algo} on {env} under {str(base)!r} (expected a folder {env}_N)."
            )
        run = max(runs, key=lambda p: int(p.name.rsplit("_", 1)[1]))
    zip_path = run / f"{env}.zip"
    if not zip_path.is_file():
        raise TeacherLoadError(f"Zoo model {str(zip_path)!r} does not exist.")
    return zip_path


def is_controller_path(path: str | Path) -> bool:
    """Whether ``path`` names a saved controller (a ``.json`` file, or a folder with a ``controller.json`` and no
    ``teacher.json``: a distilled controller, or a UDRL run of ``interp-rl train``) rather than an SB3 agent."""
    p = Path(path)
    if p.is_dir():
        return (p / "controller.json").is_file() and not (p / TEACHER_FILE).is_file()
    return p.suffix == ".json"


def _choose_variant(task: Task, obs_dim: int, base: EnvVariant) -> EnvVariant:
    tried = []
    for layout in ["default", *task.legacy_layouts]:
        variant = replace(base, obs_layout=layout)
        n = len(task.observation_features(variant))
        tried.append(f"{n} ({layout} layout)" if layout != "default" else str(n))
        if n == obs_dim:
            return variant
    raise ObservationError(
        f"The teacher observes {obs_dim} features, but {task.id} gives {' or '.join(tried)}; "
        "is it a teacher for another task?"
    )


def _contact_indices(task: Task, variant: EnvVariant) -> np.ndarray:
    feats = task.observation_features(variant)
    return np.array([i for i, f in enumerate(feats) if "_ext_" in f.name], dtype=int)


def load_teacher(
    path: str | Path | None = None,
    *,
    env: str | None = None,
    algo: str | None = None,
    folder: str | Path | None = None,
    exp_id: int = 0,
    legacy_model: bool = False,
) -> SB3Teacher:
    """Load an SB3 agent as a teacher that acts on raw observations of a ``-v5`` task.

    Parameters
    ----------
    path : str or Path, optional
        An SB3 ``.zip``; a zoo run folder holding ``<Env>.zip``; or a folder
        written by ``interp-rl train``.
    env : str, optional
        The task (``Hopper-v5``) or the zoo's id (``Hopper-v3``). Read from the
        zoo file name or ``teacher.json`` when omitted.
    algo : str, optional
        Algorithm; detected from the zip when omitted.
    folder : str or Path, optional
        RL-Zoo log folder, used with ``algo`` and ``env`` instead of ``path``
        (as ``rl_zoo3.enjoy -f FOLDER --algo ALGO --env ENV``).
    exp_id : int
        Zoo experiment id; 0 picks the latest.
    legacy_model : bool
        Run Walker2d on its pre-v5 model file.

    Returns
    -------
    SB3Teacher
        With ``env_fn(seed)`` building the exact environment it expects.

    Examples
    --------
    The published RL-Zoo agents (a file the user names; it is not shipped):

    >>> teacher = load_teacher("teachers/ppo/Hopper-v3_1/Hopper-v3.zip")  # doctest: +SKIP
    >>> teacher.task, teacher.algo  # doctest: +SKIP
    ('Hopper-v5', 'ppo')
    """
    meta: dict[str, Any] = {}
    if folder is not None:
        if algo is None or env is None:
            raise TeacherLoadError("A zoo folder (-f) needs both --algo and --env.")
        zip_path = find_zoo_model(folder, algo, env, exp_id)
    elif path is None:
        raise TeacherLoadError("Name a teacher: a .zip, a zoo run folder, or -f FOLDER --algo --env.")
    else:
        p = Path(path)
        if is_controller_path(p) and p.exists():
            raise TeacherLoadError(
                f"{str(p)!r} is a saved controller, not an SB3 agent: `interp-rl evaluate` plays it, and "
                "`interp-rl distill METHOD --teacher` distils a smaller controller from it "
                "(envs.controllers.ControllerTeacher)."
            )
        if p.is_dir():
            if (p / TEACHER_FILE).is_file():
                try:
                    meta = json.loads((p / TEACHER_FILE).read_text())
                except json.JSONDecodeError as exc:
                    raise TeacherLoadError(f"{str(p / TEACHER_FILE)!r} is corrupt: {exc}.") from None
                zip_path = p / meta.get("model", "model.zip")
            else:
                zips = sorted(z for z in p.glob("*.zip") if not z.name.startswith("best_model"))
                if len(zips) != 1:
                    raise TeacherLoadError(
                        f"{str(p)!r} holds {len(zips)} model zips; expected one (a zoo run folder) "
                        f"or a {TEACHER_FILE} (an interp-rl train folder)."
                    )
                zip_path = zips[0]
        elif p.exists() or p.suffix == ".zip":
            zip_path = p
        else:
            raise TeacherLoadError(f"Teacher {str(p)!r} does not exist.")
    if not zip_path.is_file():
        raise TeacherLoadError(f"Teacher file {str(zip_path)!r} does not exist.")

    model, algo_name = load_sb3_model(zip_path, algo or meta.get("algo"))
    task_id = env or meta.get("task") or zip_path.stem
    try:
        task, _ = resolve_task(task_id)
    except KeyError:
        if env is None and not meta:
            raise TeacherLoadError(
                f"Cannot tell which task {str(zip_path)!r} was trained on; pass --env TASK."
            ) from None
        raise

    # The zoo keeps config.yml and vecnormalize.pkl in a folder named after the zip.
    side = zip_path.parent / zip_path.stem
    config = read_zoo_config(side / "config.yml") if (side / "config.yml").is_file() else {}
    wrappers = _wrapper_names(config)
    unsupported = [w for w in wrappers if "TimeFeatureWrapper" not in w]
    if unsupported:
        raise TeacherLoadError(
            f"The zoo config names env wrappers interp-rl cannot rebuild: {', '.join(unsupported)}."
        )
    saved = meta.get("variant", {})  # what `interp-rl train` trained in
    base = EnvVariant(
        time_feature=bool(wrappers) or bool(saved.get("time_feature")),
        legacy_model=legacy_model or bool(saved.get("legacy_model")),
    )
    obs_dim = int(np.prod(model.observation_space.shape))
    variant = _choose_variant(task, obs_dim, base)
    if saved.get("zero_contact_forces") and variant.obs_layout != "default":
        variant = replace(variant, zero_contact_forces=True)

    normalizer: ObsNormalizer | None = None
    if meta.get("normalizer"):
        normalizer = ObsNormalizer.load(zip_path.parent / meta["normalizer"])
    elif (side / "vecnormalize.pkl").is_file():
        normalizer = read_vecnormalize(side / "vecnormalize.pkl")
    elif config.get("normalize"):
        raise TeacherLoadError(
            f"The zoo config of {str(zip_path)!r} says the agent normalised its observations, "
            f"but {str(side / 'vecnormalize.pkl')!r} is missing."
        )
    if normalizer is not None:
        if normalizer.mean.shape != (obs_dim,):
            raise TeacherLoadError(
                f"The normalisation statistics have {normalizer.mean.size} features, but the "
                f"agent observes {obs_dim} ({task.id})."
            )
        idx = _contact_indices(task, variant)
        if variant.obs_layout != "default" and idx.size and np.all(normalizer.var[idx] < 1e-6):
            variant = replace(variant, zero_contact_forces=True)

    act_dim = action_dim(model.action_space)
    n_act = len(task.action_features())
    if act_dim != n_act:
        raise ObservationError(
            f"The teacher outputs {act_dim} actions, but {task.id} takes {n_act}; "
            "is it a teacher for another task?"
        )
    feats = task.observation_features(variant)
    return SB3Teacher(
        model,
        algo_name,
        task.id,
        normalizer=normalizer,
        env_fn=env_factory(task.id, variant),
        feature_names=[f.name for f in feats],
        source=str(zip_path),
        variant=variant.to_dict(),
    )
