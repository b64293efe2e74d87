"""The engine of :func:`interp_rl.verify.verify`: each property decided region by region (or bounded over boxes
for equations), checked on the visited states, and searched on the teacher side by side."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from interp_rl.program import Controller
from interp_rl.verify.lp import maximise
from interp_rl.verify.properties import (
    Property,
    PropertyError,
    PropertySet,
    load_properties,
    parse_properties,
)
from interp_rl.verify.result import Sampled, Verification, clopper_pearson_upper
from interp_rl.verify.search import search_policy

__all__ = ["verify"]


def _when_possible(prop: Property, lo: np.ndarray, hi: np.ndarray) -> bool:
    for conj in prop.when:
        if not conj:
            return True
        A = np.array([w.feat for w in conj])
        b = np.array([w.rhs for w in conj])
        if maximise(np.zeros(len(lo)), 0.0, lo, hi, A, b).status != "empty":
            return True
    return False


def verify(controller: Controller, properties: PropertySet | str | Path, *, states: np.ndarray | None = None,
           task_bounds: tuple[np.ndarray, np.ndarray] | None = None,
           names: Sequence[str] | None = None, teacher: Any | None = None, seed: int = 0) -> Verification:
    """Decide every property of ``properties`` for ``controller``.

    Parameters
    ----------
    controller : Controller
        Any piecewise-affine controller (its program implements ``regions()``), or one whose program bounds its
        actions over a box (``action_bounds``: equations, :mod:`interp_rl.verify.nonlinear`). A controller learnt
        from a discrete action (its metadata names the classes) is verified on the class it plays
        (:func:`interp_rl.verify.classes.class_view`): rules name the logged action, not the scores.
    properties : PropertySet, str or Path
        Parsed properties, a property file's path, or its text (a string holding a newline).
    states : ndarray of shape (n, obs_dim), optional
        Visited states: the domain when the file takes it from them, and the probabilistic check.
    task_bounds : (lower, upper), optional
        The task's observation bounds, for ``[domain] from = "task"``.
    names : sequence of str, optional
        Decide only these properties.
    teacher : object with ``predict(obs) -> actions``, optional
        The neural teacher, searched side by side for states that break each property
        (:func:`~interp_rl.verify.search.search_policy`; its gradient when it has ``action_jacobian``), and
        checked on the visited states; ``teacher`` properties get their verdict from the search.
    seed : int
        Seed of the teacher's search.
    """
    start = time.perf_counter()
    from interp_rl.verify.classes import class_view

    controller = class_view(controller) or controller  # a discrete action: rules speak of the class played
    if not isinstance(properties, PropertySet):
        text = str(properties)
        properties = (parse_properties(text, features=controller.features, actions=controller.actions)
                      if "\n" in text else load_properties(text, features=controller.features,
                                                           actions=controller.actions))
    lo, hi = properties.domain.box(controller.features, states=states, task_bounds=task_bounds)
    chosen = properties.properties
    if names is not None:
        known = [p.name for p in chosen]
        for n in names:
            if n not in known:
                raise PropertyError(f"No property named {n!r} in {properties.source}; there are {', '.join(known)}.")
        chosen = [p for p in chosen if p.name in names]
    for p in chosen:
        if not _when_possible(p, lo, hi):
            raise PropertyError(f"Property {p.name!r}: `when` ({' and '.join(p.when_text)}) never holds in the "
                                "domain; check its signs and numbers.")
    regions = None if controller.program.cannot("regions") else controller.program.regions()
    verdicts = [p.decide(controller, lo, hi, regions) for p in chosen]  # each kind decides its own
    sampled = {}
    if states is not None and len(states):
        X = np.asarray(states, dtype=np.float64)
        for p in chosen:
            share = p.visited_share(controller.program.predict, X)
            if share is not None:
                inside, broken = share
                sampled[p.name] = Sampled(inside, broken, clopper_pearson_upper(broken, inside))
    result = Verification(controller, properties, lo, hi, verdicts, sampled)
    if teacher is not None:
        _teacher_side(result, chosen, teacher, states, seed)
    result.seconds = time.perf_counter() - start
    return result


def _teacher_side(result: Verification, chosen: list[Property], teacher: Any, states: np.ndarray | None,
                  seed: int) -> None:
    """Search the teacher for every property, check it on the visited states, and decide the properties that compare
    the controller with the teacher (``teacher``)."""
    from interp_rl.errors import InterpRLError

    c = result.controller
    obs_dim, act_dim = getattr(teacher, "obs_dim", c.program.obs_dim), getattr(teacher, "act_dim", len(c.actions))
    if (obs_dim, act_dim) != (c.program.obs_dim, len(c.actions)):
        raise InterpRLError(f"The teacher observes {obs_dim} features and outputs {act_dim} actions, but the "
                            f"controller reads {c.program.obs_dim} and outputs {len(c.actions)}"
                            f"{f' ({c.task})' if c.task else ''}; is it the teacher of this controller?")
    jacobian = None if getattr(teacher, "discrete", False) else getattr(teacher, "action_jacobian", None)
    result.teacher_source = str(getattr(teacher, "source", "") or type(teacher).__name__)
    X = None if states is None or not len(states) else np.asarray(states, dtype=np.float64)
    for k, p in enumerate(chosen):
        reference = c.predict if p.against_teacher else None
        found = search_policy(teacher.predict, p, result.lower, result.upper, seed=seed, gradient=jacobian,
                              reference=reference, states=X if p.against_teacher else None, act_dim=act_dim)
        result.teacher[p.name] = found
        decided = p.search_verdict(found, c, teacher.predict)
        if decided is not None:
            result.verdicts[k] = decided
        if X is not None:
            share = p.visited_share(teacher.predict, X, reference=reference)
            if share is not None:
                n, broken = share
                (result.sampled if p.against_teacher else result.teacher_sampled)[p.name] = Sampled(
                    n, broken, clopper_pearson_upper(broken, n))



