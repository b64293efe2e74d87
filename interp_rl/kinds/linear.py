"""Sparse linear policies: the ``linear`` program kind.

``a_k = intercept_k + sum_j coef_kj * x_j``, clipped to the action bounds: the baseline every
paper on interpretable control reports (augmented random search's linear policies are the
best published transparent controllers for MuJoCo locomotion). Few non-zero coefficients make
it a set of equations a person reads at a glance.

Arithmetic (bit-identical in every runtime): ``y = intercept`` then ``y = y + coef_j * x_j`` for
the non-zero terms in ascending feature order (exactly as a leaf of a
:class:`~interp_rl.kinds.tree.TreeProgram`); with ``squash="tanh"`` (linear policies whose
output a ``tanh`` squashes, as sb3-contrib ARS's may) then
``y = low + 0.5 * (tanh(y) + 1.0) * (high - low)`` with the C library's ``tanh``, as the
:class:`~interp_rl.kinds.mixture.MixtureProgram` does; then ``y = min(max(y, low), high)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

import interp_rl._codegen as cg
from interp_rl._shapley import tree_shapley
from interp_rl.errors import ControllerFormatError
from interp_rl.program import AffinePieces, ProgramBase, Region, register_program, tanh_squash, widen_columns

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interp_rl._onnx import OnnxGraph
    from interp_rl.program import Controller

__all__ = ["LinearProgram"]



@register_program
@dataclass
class LinearProgram(ProgramBase):
    """An affine map from raw observations to actions, then clipping.

    Parameters
    ----------
    intercept : ndarray of shape (act_dim,)
        Constant part of each action.
    coef : ndarray of shape (act_dim, obs_dim)
        Coefficients; zeros are absent terms.
    action_low, action_high : ndarray of shape (act_dim,)
        Actions are clipped to these bounds (``-inf``/``inf`` for none).
    squash : {"clip", "tanh"}, default="clip"
        ``"tanh"`` maps each affine output ``z`` into the (finite) bounds,
        ``low + (high - low) * (tanh(z) + 1) / 2``, before the clip.

    Examples
    --------
    >>> import numpy as np
    >>> p = LinearProgram(intercept=[0.1, 0.0], coef=[[0.0, -0.3], [2.0, 0.0]],
    ...                   action_low=[-1, -1], action_high=[1, 1])
    >>> p.predict(np.array([[0.25, 2.0]]))
    array([[-0.5,  0.5]])
    >>> p.size()
    {'parameters': 4, 'nonzero_terms': 2}
    """

    intercept: np.ndarray
    coef: np.ndarray
    action_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    action_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    squash: str = "clip"

    kind = "linear"
    title = "Linear policies"
    rules_title = "Equations"

    def __post_init__(self) -> None:
        self.intercept = np.asarray(self.intercept, dtype=np.float64)
        self.coef = np.asarray(self.coef, dtype=np.float64)
        if self.intercept.ndim != 1:
            raise ControllerFormatError(f"intercept must have shape (act_dim,); got {self.intercept.shape}.")
        if self.coef.ndim != 2 or len(self.coef) != len(self.intercept):
            raise ControllerFormatError(
                f"coef must have shape (act_dim={len(self.intercept)}, obs_dim); got {self.coef.shape}."
            )
        if not (np.all(np.isfinite(self.intercept)) and np.all(np.isfinite(self.coef))):
            raise ControllerFormatError("A coefficient of the linear program is not finite.")
        self._init_bounds(self.action_low, self.action_high, len(self.intercept))
        self._check_squash(self.squash)

    @property
    def obs_dim(self) -> int:
        return int(self.coef.shape[1])

    @property
    def act_dim(self) -> int:
        return int(self.coef.shape[0])

    @property
    def n_terms(self) -> int:
        return int(np.count_nonzero(self.coef))

    def terms(self, out: int) -> list[tuple[int, float]]:
        """``[(feature, coef), ...]`` of action ``out``, ascending feature order."""
        row = self.coef[out]
        return [(int(j), float(row[j])) for j in np.flatnonzero(row)]

    def size(self) -> dict[str, int]:
        """``parameters`` (intercepts plus non-zero coefficients) and ``nonzero_terms``."""
        return {"parameters": self.act_dim + self.n_terms, "nonzero_terms": self.n_terms}

    def affine_pieces(self) -> AffinePieces:
        """One piece."""
        return AffinePieces(lambda X: np.zeros(len(X), dtype=np.int64), self.intercept[None].copy(),
                            self.coef[None].copy(), ["equations"], squash=self.squash)

    @classmethod
    def from_scratch(cls, obs_dim: int, low: np.ndarray, high: np.ndarray) -> LinearProgram:
        """All-zero equations (a search's start).

        >>> LinearProgram.from_scratch(3, np.array([-1.0]), np.array([1.0])).predict(np.ones((1, 3)))
        array([[0.]])
        """
        act_dim = len(np.atleast_1d(low))
        return cls(intercept=np.zeros(act_dim), coef=np.zeros((act_dim, int(obs_dim))), action_low=low,
                   action_high=high)

    def regions(self) -> list[Region]:
        """One region, every observation."""
        inf = np.full(self.obs_dim, np.inf)
        return [Region.box(0, "equations", -inf, inf, self.intercept, self.coef)]

    def with_affine_pieces(self, intercept: np.ndarray, coef: np.ndarray) -> LinearProgram:
        return LinearProgram(intercept=intercept[0], coef=coef[0], action_low=self.action_low,
                             action_high=self.action_high, squash=self.squash)

    def widened(self, columns: Sequence[int], obs_dim: int) -> LinearProgram:
        """The same equations, feature ``i`` read from column ``columns[i]`` of a wider observation."""
        return LinearProgram(intercept=self.intercept, coef=widen_columns(self.coef, columns, obs_dim),
                             action_low=self.action_low, action_high=self.action_high, squash=self.squash)

    @property
    def exact_shapley(self) -> bool:
        """Exact without squash (an affine map); a tanh squash is estimated by sampling."""
        return self.squash == "clip"

    def shapley_values(self, X: np.ndarray, background: np.ndarray,
                       weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact Shapley values of the unclipped output: ``coef_j * (x_j - E_b[b_j])``."""
        if not self.exact_shapley:
            return super().shapley_values(X, background, weights)
        leaf = np.array([-1])
        return tree_shapley(feature=leaf, threshold=np.zeros(1), left=leaf, right=leaf,
                            intercept=self.intercept[None], coef=self.coef[None], X=X, background=background,
                            weights=weights)

    def raw_predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        y = np.repeat(self.intercept[None, :], len(X), axis=0)
        for j in np.flatnonzero(np.any(self.coef != 0.0, axis=0)):  # ascending features, one add each
            y += self.coef[:, j] * X[:, j : j + 1]
        if self.squash == "tanh":
            y = tanh_squash(y, self.action_low, self.action_high)
        return y

    def affine_predict(self, X: np.ndarray) -> np.ndarray:
        """The affine outputs ``z`` ``(n, act_dim)`` before any squash or clip."""
        if self.squash == "clip":
            return self.raw_predict(X)
        return LinearProgram(intercept=self.intercept, coef=self.coef).raw_predict(X)

    def to_dict(self) -> dict[str, Any]:
        terms = [[int(o), int(j), float(self.coef[o, j])] for o, j in np.argwhere(self.coef != 0.0)]
        out = {"kind": self.kind, "obs_dim": self.obs_dim, "act_dim": self.act_dim,
               "intercept": self.intercept.tolist(), "terms": terms, **self._bounds_dict()}
        if self.squash != "clip":  # absent means clip: files written before the squash read unchanged
            out["squash"] = self.squash
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LinearProgram:
        try:
            coef = np.zeros((int(d["act_dim"]), int(d["obs_dim"])))
            for o, j, c in d["terms"]:
                if not (0 <= int(o) < coef.shape[0] and 0 <= int(j) < coef.shape[1]):
                    raise ControllerFormatError(f"The linear program has a term ({o}, {j}) outside its shape "
                                                f"{coef.shape}.")
                coef[int(o), int(j)] = float(c)
            return cls(intercept=d["intercept"], coef=coef, action_low=[float(v) for v in d["action_low"]],
                       action_high=[float(v) for v in d["action_high"]], squash=str(d.get("squash", "clip")))
        except ControllerFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ControllerFormatError(f"The linear program is malformed: {type(exc).__name__}: {exc}.") from None

    # ------------------------------------------------------------------ text
    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None) -> str:
        """One equation per action in named features; terms in feature order.

        >>> from interp_rl.program import Controller, Signal
        >>> p = LinearProgram(intercept=[0.1], coef=[[0.0, -0.3]])
        >>> print(p.explain(Controller(p, [Signal("angle", "rad"), Signal("vx", "m/s")], [Signal("torque")])))
        torque = 0.100 - 0.300*vx
        """
        fmt = partial(cg.fixed, precision=precision)
        names = controller.feature_names
        lhs = "z({})" if self.squash == "tanh" else "{}"  # squashed: the equation is tanh's argument
        lines = [f"{lhs.format(a.label)} = {cg.affine_text(float(self.intercept[o]), self.terms(o), names, fmt)}"
                 for o, a in enumerate(controller.actions)]
        note = self.squash_note(controller, fmt) if self.squash == "tanh" else self.clip_note(controller, fmt)
        return "\n".join(lines + ([note] if note else []))

    def explain_decision(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> str:
        """Each equation with the observation's values put in: ``torque = 0.1 - 0.3*vx = 0.1 - 0.3*(2) = -0.5``."""
        x = np.asarray(x, dtype=np.float64).ravel()
        fmt = partial(cg.compact, precision=precision)
        names = controller.feature_names
        z = self.affine_predict(x[None, :])[0]
        raw = self.raw_predict(x[None, :])[0]
        clipped = self.clip(raw)
        lhs = "z({})" if self.squash == "tanh" else "{}"
        lines = []
        for out, action in enumerate(controller.actions):
            terms = self.terms(out)
            line = f"{lhs.format(action.label)} = {cg.affine_text(float(self.intercept[out]), terms, names, fmt)}"
            if terms:
                line += " = " + " ".join(
                    [fmt(float(self.intercept[out]))]
                    + [f"{'-' if c < 0 else '+'} {fmt(abs(c))}*({fmt(float(x[j]))})" for j, c in terms])
                line += f" = {cg.apart(float(z[out]), float(clipped[out]), precision)[0]}"
            if self.squash == "tanh":
                line += f" → squashed to {cg.apart(float(z[out]), float(clipped[out]), precision)[1]}"
            elif clipped[out] != raw[out]:
                line += f" → clipped to {cg.apart(float(raw[out]), float(clipped[out]), precision)[1]}"
            lines.append(line)
        return "\n".join(lines)

    def to_dot(self, controller: Controller, *, obs: np.ndarray | None = None, states: np.ndarray | None = None,
               max_depth: int | None = None, title: str | None = None, precision: int = 3,
               **options: Any) -> str:
        """Features on the left, actions on the right, one edge per non-zero coefficient.

        Edges are blue for positive and red for negative coefficients; with ``states`` (visited
        states) an edge's width follows the typical size of its term, ``|c_j| * std(x_j)``, and
        with ``obs`` each action box shows its value for that observation.
        """
        from interp_rl.dot import dot_action_nodes, dot_attrs, dot_coefficient_edge, dot_header, dot_label

        if options:
            raise TypeError(f"to_dot of a linear program takes no option {sorted(options)[0]!r}.")
        fmt = partial(cg.compact, precision=precision)
        used = sorted({j for o in range(self.act_dim) for j, _ in self.terms(o)})
        scale = np.ones(self.obs_dim)
        if states is not None and len(states):
            scale = np.asarray(states, dtype=np.float64).std(axis=0)
        weight = np.abs(self.coef) * scale[None, :]
        peak = float(weight.max(initial=0.0)) or 1.0
        values = self.predict(np.asarray(obs, dtype=np.float64)[None, :])[0] if obs is not None else None
        out = dot_header(controller, title=title, fmt=fmt, rankdir="LR")
        for j in used:
            text = [controller.features[j].label]
            if obs is not None:
                text.append(f"= {fmt(float(obs[j]))}")
            out.append(f"  f{j} {dot_attrs({'label': dot_label(text)})};")
        out += dot_action_nodes(controller, self.intercept, values, fmt)
        for o in range(self.act_dim):
            for j, c in self.terms(o):
                out.append(dot_coefficient_edge(f"f{j}", f"a{o}", c, float(weight[o, j]) / peak, fmt))
        out.append("}")
        return "\n".join(out)

    # ------------------------------------------------------------------ code
    def _body(self, python: bool) -> list[str]:
        end = "" if python else ";"
        lines: list[str] = []
        for out in range(self.act_dim):
            lines += cg.assignment("", f"y{out}", cg.affine_parts(self.intercept[out], self.terms(out)), end,
                                   python=python)
        if self.squash == "tanh":
            lines += cg.tanh_squash_lines(self.action_low, self.action_high, python=python)
        return lines or (["pass"] if python else [])

    def python_body(self, controller: Controller) -> list[str]:
        """``y0 = c0 + c1 * obs[j1] + ...`` per action."""
        return self._body(python=True)

    def c_body(self, controller: Controller) -> list[str]:
        """``y0 = c0 + c1 * obs[j1] + ...;`` per action."""
        return self._body(python=False)

    def onnx_graph(self, graph: OnnxGraph) -> str:
        """``y = intercept`` then ``y = y + coef[:, j] * obs[:, j]`` per feature used, ascending, as :meth:`predict`
        adds them, then the tanh squash ``low + 0.5 * (tanh(y) + 1.0) * (high - low)`` when there is one."""
        y = graph.affine(self.intercept, self.coef)
        return graph.tanh_squash(y, self.action_low, self.action_high) if self.squash == "tanh" else y
