"""The contract every program kind keeps, as one check: for your own kind, call :func:`check_program` in a test.

It runs a program through what the rest of interp-rl relies on: actions of the right shape within the bounds,
the JSON round trip (bit for bit), the size figures, the rules as text, the standalone Python export (bit for
bit), and each capability the program declares (:data:`interp_rl.program.CAPABILITIES`) doing what it says,
while each capability its kind lacks is refused by its hook with a ``TypeError``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from interp_rl.program import CAPABILITIES, PROGRAMS, Controller, ProgramBase

__all__ = ["check_program"]


def _fail(program: Any, what: str) -> None:
    raise AssertionError(f"The {program.kind} program breaks the contract: {what}")


def check_program(program: ProgramBase, X: np.ndarray) -> list[str]:
    """Check ``program`` on the raw observations ``X`` ``(n, obs_dim)``; returns the capabilities it showed.

    Raises ``AssertionError`` naming the first broken promise.
    """
    from interp_rl.export import to_python

    X = np.asarray(X, dtype=np.float64)
    n, obs_dim, act_dim = len(X), program.obs_dim, program.act_dim
    y = program.predict(X)
    if y.shape != (n, act_dim):
        _fail(program, f"predict gives shape {y.shape} for {n} observations of {act_dim} actions")
    inside = (y >= program.action_low) & (y <= program.action_high)
    if not np.all(inside | np.isnan(y)):
        _fail(program, "predict leaves its action bounds")
    raw = program.raw_predict(X)
    if not np.array_equal(program.clip(raw), y, equal_nan=True):
        _fail(program, "predict is not the clipped raw_predict")

    again = PROGRAMS[program.kind].from_dict(json.loads(json.dumps(program.to_dict())))
    if not np.array_equal(again.predict(X), y, equal_nan=True):
        _fail(program, "to_dict then from_dict (through JSON) changes its actions")
    size = program.size()
    if not all(isinstance(size.get(k), int | np.integer) and size[k] >= 0 for k in ("parameters", "nonzero_terms")):
        _fail(program, f"size() lacks whole 'parameters' and 'nonzero_terms': {size}")

    ctrl = Controller(program)
    if not isinstance(program.explain(ctrl), str) or not program.explain(ctrl):
        _fail(program, "explain gives no text")
    module: dict[str, Any] = {}
    exec(to_python(ctrl), module)  # noqa: S102 - our own generated code
    exported = np.array([module["act"](list(x)) for x in X[: min(n, 50)]])
    if not np.array_equal(exported, y[: len(exported)], equal_nan=True):
        _fail(program, "the Python export's act() differs from predict")

    shown = []
    for cap, (hook, _) in CAPABILITIES.items():
        declared = type(program).kind_can(cap)
        why = program.cannot(cap)
        if not declared:
            if why is None:
                _fail(program, f"it says it can {cap!r} but its kind does not implement {hook}()")
            try:
                if cap == "from_scratch":
                    type(program).from_scratch(obs_dim, program.action_low, program.action_high)
                elif cap == "exact_shapley":
                    program.shapley_values(X[:2], X, np.full(n, 1.0 / n))
                elif cap == "widen":
                    program.widened(list(range(obs_dim)), obs_dim + 1)
                elif cap == "drop_pieces":
                    program.without_pieces([0])
                elif cap == "onnx":
                    continue  # needs an OnnxGraph; the export tests call it
                else:
                    getattr(program, hook)()
            except TypeError:
                continue
            _fail(program, f"its kind lacks {cap!r}, but {hook}() did not refuse with a TypeError")
        if why is not None:
            continue
        shown.append(cap)
        if cap == "affine":
            pieces = program.affine_pieces()
            assign = pieces.assign(X)
            if assign.shape != (n,) or assign.min() < 0 or assign.max() >= len(pieces.intercept):
                _fail(program, "affine_pieces().assign names no piece for some observations")
            if pieces.squash == "clip":
                affine = pieces.intercept[assign] + np.einsum("nao,no->na", pieces.coef[assign], pieces.features(X))
                if not np.allclose(affine, raw, rtol=1e-9, atol=1e-9):
                    _fail(program, "its affine pieces do not give raw_predict")
        elif cap == "regions":
            if not isinstance(program.regions(), list) or not program.regions():
                _fail(program, "regions() gives no list of regions")
        elif cap == "from_scratch":
            zero = type(program).from_scratch(obs_dim, program.action_low, program.action_high)
            if zero.kind != program.kind or np.any(zero.predict(X) != np.clip(0.0, program.action_low,
                                                                               program.action_high)):
                _fail(program, "from_scratch is not a zero program of the kind")
        elif cap == "widen":
            wide = program.widened(list(range(obs_dim)), obs_dim + 1)
            padded = np.hstack([X, np.full((n, 1), 7.0)])
            if not np.array_equal(wide.predict(padded), y, equal_nan=True):
                _fail(program, "widened() to an extra ignored feature changes its actions")
        elif cap == "exact_shapley":
            phi, base = program.shapley_values(X[:5], X, np.full(n, 1.0 / n))
            if not np.allclose(base + phi.sum(axis=1), raw[:5], rtol=1e-8, atol=1e-8):
                _fail(program, "its exact Shapley values do not add up to raw_predict")
        elif cap == "drop_pieces":
            acting = program.affine_pieces().acting_pieces()
            if len(acting) > 1:
                fewer = program.without_pieces([acting[0]])
                if fewer.kind != program.kind or fewer.predict(X).shape != y.shape:
                    _fail(program, "without_pieces() gives no program of the kind")
    return shown
