"""Discrete actions: properties about the class a controller plays, not the scores it computes.

A controller learnt from a discrete action (a heating setpoint in whole degrees, a push left or right)
outputs one score per class and plays the class with the highest score (the first of equal ones).
Rules speak of the class played (``heating_setpoint <= 20 [°C]``), so :func:`class_view` turns such a
controller into one that outputs the played class's value. It is piecewise constant: each region of the
scores splits into the polyhedra where one class's score is the largest, so the same linear programs
decide its properties. :func:`repair_classes` makes each failing piece play, throughout its region, the
allowed class its data most often shows, by refitting that piece's scores under robust constraints.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from interp_rl.program import AffinePieces, Controller, ProgramBase, Region, Signal

__all__ = ["ClassView", "class_view", "repair_classes"]


@dataclasses.dataclass
class ClassView(ProgramBase):
    """The class value a score program plays (an adapter for verification; it is not saved or exported)."""

    scores: Any
    """The program computing one score per class."""
    values: np.ndarray
    """``(n_classes,)`` each class's value."""

    kind = "classes"

    def __post_init__(self) -> None:
        self.values = np.asarray(self.values, dtype=np.float64)
        self._init_bounds([self.values.min()], [self.values.max()], 1)

    @property
    def obs_dim(self) -> int:
        return int(self.scores.obs_dim)

    @property
    def act_dim(self) -> int:
        return 1

    def raw_predict(self, X: np.ndarray) -> np.ndarray:
        return self.values[np.argmax(self.scores.predict(X), axis=1)][:, None]

    def _base(self) -> AffinePieces:
        return self.scores.affine_pieces()

    def affine_pieces(self) -> AffinePieces:
        """One piece per (piece of the scores, class): ``piece * n_classes + class``, a constant."""
        base = self._base()
        k = len(self.values)
        n = len(base.intercept) * k

        def assign(X: np.ndarray) -> np.ndarray:
            return base.assign(X) * k + np.argmax(self.scores.predict(X), axis=1)

        labels = [f"{(base.labels[p] if base.labels else f'piece {p}')} playing class {c + 1}"
                  for p in range(len(base.intercept)) for c in range(k)]
        return AffinePieces(assign, np.repeat(self.values[None, :], len(base.intercept), axis=0).reshape(n, 1),
                            np.zeros((n, 1, self.obs_dim)), labels)

    def cannot(self, capability: str) -> str | None:
        """The class played has regions when the scores do, and their pieces are constant or unbounded affine."""
        if capability == "regions":
            why = self.scores.cannot("regions")
            if why is not None:
                return why
            low, high, squash = self.scores.action_low, self.scores.action_high, self._base().squash
            bounded = squash != "clip" or np.any(np.isfinite(low)) or np.any(np.isfinite(high))
            if bounded and np.any(self._base().coef):
                return ("The class played by clipped or squashed affine scores is not decided region by region; use "
                        "constant leaves for a discrete action")
        return super().cannot(capability)

    def regions(self) -> list[Region]:
        """Each region of the scores cut where each class's score is the largest (constant pieces: the one class
        that wins there). Clipped affine scores are refused (the largest clipped score is not a polyhedron)."""
        low, high = self.scores.action_low, self.scores.action_high
        squash = self._base().squash
        k = len(self.values)
        out = []
        for r in self.scores.regions():
            constant = not np.any(r.coef)
            if not constant and (squash != "clip" or np.any(np.isfinite(low)) or np.any(np.isfinite(high))):
                raise TypeError("The class played by clipped or squashed affine scores is not decided region by "
                                "region; use constant leaves for a discrete action")
            if constant:
                c = int(np.argmax(np.minimum(np.maximum(r.intercept, low), high)))
                out.append(Region(r.piece * k + c, self._label(r, c), r.lower, r.upper, r.A, r.b,
                                  self.values[c:c + 1], np.zeros((1, self.obs_dim))))
                continue
            for c in range(k):
                others = [j for j in range(k) if j != c]
                A = np.vstack([r.A, r.coef[others] - r.coef[c]])
                b = np.concatenate([r.b, r.intercept[c] - r.intercept[others]])
                out.append(Region(r.piece * k + c, self._label(r, c), r.lower, r.upper, A, b, self.values[c:c + 1],
                                  np.zeros((1, self.obs_dim))))
        return out

    def _label(self, r: Region, c: int) -> str:
        return f"{r.label} playing {self.values[c]:g}"

    # what verification never asks of it
    def to_dict(self) -> dict[str, Any]:
        raise TypeError("A class view is not saved; save the controller it was made from.")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClassView:
        raise TypeError("A class view is not loaded; load the controller it was made from.")

    def size(self) -> dict[str, int]:
        return dict(self.scores.size())

    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
        return f"{controller.actions[0].name} = the value of the class with the highest score"

    def python_body(self, controller: Controller) -> list[str]:
        raise TypeError("Export the controller the class view was made from.")

    def c_body(self, controller: Controller) -> list[str]:
        raise TypeError("Export the controller the class view was made from.")


def class_view(controller: Controller) -> Controller | None:
    """The controller that outputs the class ``controller`` plays, named as the logged action (``None`` when its
    metadata names no classes).

    >>> from interp_rl.kinds.linear import LinearProgram
    >>> ctrl = Controller(LinearProgram(intercept=[1.0, 0.0], coef=[[0.0], [0.1]]), [Signal("t", "°C")],
    ...                   ["sp=21", "sp=20"], metadata={"classes": {"action": {"name": "sp", "unit": "°C"},
    ...                                                           "values": [21, 20]}})
    >>> view = class_view(ctrl)
    >>> view.action_names, view.predict(np.array([[5.0], [24.0]]))[:, 0].tolist()
    (['sp'], [21.0, 20.0])
    """
    info = controller.metadata.get("classes")
    if not isinstance(info, dict) or not isinstance(info.get("values"), list):
        return None
    action = info.get("action") or {"name": "class"}
    values = np.asarray(info["values"], dtype=np.float64)
    view = ClassView(controller.program, values)
    return Controller(view, controller.features, [Signal(**action)], controller.task,
                      {**controller.metadata, "scores": controller})


def _plays(view_ctrl: Controller, props: list[Any], p: int, c: int, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether piece ``p`` playing class ``c`` on all of its region keeps every property said state by state
    (``rule``, ``range``: :attr:`~interp_rl.verify.properties.Property.pointwise`)."""
    view: ClassView = view_ctrl.program  # type: ignore[assignment]
    n = view.obs_dim
    k = len(view.values)
    fixed = [dataclasses.replace(r, piece=p * k + c, intercept=view.values[c:c + 1], coef=np.zeros((1, n)))
             for r in view.scores.regions() if r.piece == p]
    return all(prop.decide(view_ctrl, lo, hi, fixed).status == "proved" for prop in props if prop.pointwise)


def repair_classes(verification: Any, observations: np.ndarray, targets: np.ndarray,
                   weights: np.ndarray | None = None, *, margin: float = 1e-3, rounds: int = 20) -> Any:
    """Repair a class view's refuted properties by choosing the class some pieces of the scores play.

    A piece that breaks a ``rule`` or ``range`` property (one said state by state:
    :attr:`~interp_rl.verify.properties.Property.pointwise`) plays, on its whole region, the class that keeps every
    such property and that its data shows most (with no data, the one nearest in value to the class it played).
    Where a ``monotone`` property (:attr:`~interp_rl.verify.properties.Property.mend_pairs`) breaks as the feature
    crosses from one piece into the next, the later piece plays the earlier one's class (if that keeps the rules);
    this repeats
    until the properties are proved or ``rounds`` pass. Each chosen class is made to win by ``margin`` throughout
    the piece's region by refitting that piece's scores (:func:`interp_rl.verify.refit.repair`); the structure is
    kept. ``targets`` are the class scores fitted (one-hot rows of the logged classes). Returns a
    :class:`~interp_rl.verify.refit.RepairResult` whose controller is the repaired *score* controller.
    """
    from interp_rl.verify.kinds.rule import RuleProperty
    from interp_rl.verify.properties import Inequality, Property, PropertySet
    from interp_rl.verify.prove import Verdict
    from interp_rl.verify.refit import RepairResult, repair
    from interp_rl.verify.result import Verification

    view_ctrl: Controller = verification.controller
    view: ClassView = view_ctrl.program  # type: ignore[assignment]
    scores_ctrl: Controller = view_ctrl.metadata["scores"]
    k = len(view.values)
    props = list(verification.properties.properties)
    lo, hi = verification.lower, verification.upper
    X = np.asarray(observations, dtype=np.float64)
    base = scores_ctrl.program.affine_pieces()
    assign = base.assign(X)
    w = np.ones(len(X)) if weights is None else np.asarray(weights, dtype=np.float64)
    n = scores_ctrl.program.obs_dim
    names = (tuple(scores_ctrl.feature_names), tuple(scores_ctrl.action_names))
    forced: dict[int, int] = {}
    current, result = scores_ctrl, RepairResult(scores_ctrl)
    for _ in range(rounds):
        cur_view = class_view(current)
        assert cur_view is not None
        regions = None if cur_view.program.cannot("regions") else cur_view.program.regions()
        verdicts = [p.decide(cur_view, lo, hi, regions) for p in props]
        changed = False
        for prop, v in zip(props, verdicts, strict=True):
            if v.status != "refuted":
                continue
            if prop.pointwise:
                for q in sorted({q // k for q in v.failing}):
                    allowed = [c for c in range(k) if _plays(cur_view, props, q, c, lo, hi)]
                    if not allowed:
                        continue
                    share = [float(w[assign == q] @ targets[assign == q, c]) for c in allowed]
                    # the class its data shows most; without data (a corner no row reached), the allowed class
                    # nearest in value to the one the piece plays now
                    now = int(np.argmax(current.program.clip(base.intercept[q][None, :])[0]))
                    best = max(zip(allowed, share, strict=True),
                               key=lambda cs: (cs[1], -abs(float(view.values[cs[0]] - view.values[now]))))[0]
                    changed |= forced.get(q) != best
                    forced[q] = best
            elif prop.mend_pairs and v.counterexample is not None:
                cex = v.counterexample
                assert cex.other_state is not None
                first = int(base.assign(cex.state[None, :])[0])
                second = int(base.assign(cex.other_state[None, :])[0])
                played = [int(np.argmax(current.program.predict(x[None, :])[0])) for x in (cex.state, cex.other_state)]
                # one of the two plays the other's class: whichever keeps the rules and changes the least data
                options = [(q, c) for q, c in ((second, played[0]), (first, played[1]))
                           if q != (first if q == second else second) and forced.get(q) != c
                           and _plays(cur_view, props, q, c, lo, hi)]
                if options:
                    def cost(qc: tuple[int, int]) -> float:
                        rows = assign == qc[0]
                        return float(w[rows] @ (1.0 - targets[rows, qc[1]]))

                    q, c = min(options, key=cost)
                    forced[q] = c
                    changed = True
        if not changed:
            break
        synthetic: list[Property] = []
        fake = []
        for q, best in sorted(forced.items()):
            then = [Inequality(np.zeros(n), np.eye(k)[j] - np.eye(k)[best], -margin, False,
                               f"score of class {best + 1} above class {j + 1}", names) for j in range(k) if j != best]
            name = f"piece {q} plays class {best + 1}"
            synthetic.append(RuleProperty(name, then=then))
            fake.append(Verdict(name, "refuted", failing=[q]))
        result = repair(scores_ctrl, Verification(scores_ctrl, PropertySet(synthetic), lo, hi, fake), X, targets,
                        weights)
        current = result.controller
    result.properties = [v.name for v in verification.verdicts if v.status == "refuted"]
    return result
