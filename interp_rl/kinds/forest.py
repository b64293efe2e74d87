"""Averaged ensembles of constant-leaf decision trees: the ``forest`` program kind.

A :class:`ForestProgram` holds ``n`` decision trees (each a :class:`~interp_rl.kinds.tree.TreeProgram`
with constant leaves) over the same raw inputs. Its arithmetic is fixed so that every runtime gives
bit-identical actions::

    s = leaf value of tree 1
    s = s + leaf value of tree k      for k = 2 ... n, in order
    y = s / n
    y = min(max(y, low), high)

A random forest or extra-trees regressor of scikit-learn converts to it exactly (:func:`forest_from_sklearn`).
On a discrete task the actions are class scores (one per class, as
``envs.wrappers.ClassScores`` reads them): trees fitted to one-hot labels average to class frequencies and
the class with the highest score is played.

Upside-down RL (``envs.udrl``) reads the observation followed by a *command*: the program's inputs are the task's
observation features, then ``desired_return`` and ``desired_horizon`` (:data:`COMMAND_FEATURES`). The kind itself
does not care what its inputs mean; the controller's feature names say it.

Exact Shapley values are the mean of the members' (TreeSHAP with the background distribution), and a single small
tree can be distilled from the forest for reading (:func:`distill_tree`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import interp_rl._codegen as cg
from interp_rl.errors import ControllerFormatError, bad_value
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import ProgramBase, Signal, register_program
from interp_rl.validation import check_int

if TYPE_CHECKING:
    from interp_rl._onnx import OnnxGraph
    from interp_rl.program import Controller

__all__ = ["COMMAND_FEATURES", "ForestProgram", "distill_tree", "forest_from_sklearn"]

#: The two command inputs an upside-down RL behaviour function reads after the observation.
COMMAND_FEATURES = (
    Signal("desired_return", "", "return the command asks for over the rest of the episode"),
    Signal("desired_horizon", "steps", "steps the command leaves to reach the desired return"),
)


@register_program
class ForestProgram(ProgramBase):
    """The mean of ``n`` constant-leaf decision trees, clipped to the action bounds.

    Parameters
    ----------
    trees : list of TreeProgram
        The members, in the order they are summed; same ``obs_dim`` and ``act_dim``, constant leaves.
        Their own action bounds are ignored (the forest clips the mean).
    action_low, action_high : array-like of shape (act_dim,), optional
        Bounds the mean is clipped to (default: none).

    Examples
    --------
    >>> import numpy as np
    >>> stump = lambda t, a, b: TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[t, 0, 0], left=[1, -1, -1],
    ...                                                 right=[2, -1, -1], intercept=[[0.0], [a], [b]], obs_dim=1)
    >>> f = ForestProgram([stump(0.0, 1.0, 2.0), stump(1.0, 0.0, 4.0)])
    >>> f.predict(np.array([[-1.0], [0.5], [2.0]]))
    array([[0.5],
           [1. ],
           [3. ]])
    >>> f.size()
    {'parameters': 6, 'nonzero_terms': 0, 'trees': 2, 'leaves': 4, 'depth': 1}
    """

    kind = "forest"
    title = "Forests"
    piece_names = ("tree", "trees")

    def __init__(self, trees: list[TreeProgram], action_low: Any = None, action_high: Any = None) -> None:
        self.trees = list(trees)
        if not self.trees:
            raise ControllerFormatError("A forest needs at least one tree.")
        for i, t in enumerate(self.trees):
            if not isinstance(t, TreeProgram):
                raise ControllerFormatError(f"Tree {i + 1} of the forest is a {type(t).__name__}, not a TreeProgram.")
            if (t.obs_dim, t.act_dim) != (self.trees[0].obs_dim, self.trees[0].act_dim):
                raise ControllerFormatError(
                    f"Tree {i + 1} reads {t.obs_dim} features and gives {t.act_dim} actions; tree 1 reads "
                    f"{self.trees[0].obs_dim} and gives {self.trees[0].act_dim}: the members must agree.")
            if t.has_linear_leaves:
                raise ControllerFormatError(
                    f"Tree {i + 1} of the forest has linear leaves; a forest's leaves are constant.")
        self._init_bounds(action_low, action_high, self.act_dim)

    # ------------------------------------------------------------------ shape
    @property
    def obs_dim(self) -> int:
        return self.trees[0].obs_dim

    @property
    def act_dim(self) -> int:
        return self.trees[0].act_dim

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    def size(self) -> dict[str, int]:
        """``parameters`` (thresholds and leaf values, summed over the trees), ``trees``, ``leaves``, ``depth`` (the
        deepest tree)."""
        return {"parameters": sum(t.n_parameters for t in self.trees), "nonzero_terms": 0, "trees": self.n_trees,
                "leaves": sum(t.n_leaves for t in self.trees), "depth": max(t.depth for t in self.trees)}

    # --------------------------------------------------------------- running
    def member_outputs(self, X: np.ndarray) -> np.ndarray:
        """``(n_trees, n, act_dim)``: each tree's leaf value for each row of ``X``."""
        X = np.asarray(X, dtype=np.float64)
        return np.stack([t.intercept[t.apply(X)] for t in self.trees])

    def raw_predict(self, X: np.ndarray) -> np.ndarray:
        """Unclipped actions: the leaf values summed in tree order, then divided by the number of trees."""
        X = np.asarray(X, dtype=np.float64)
        s = self.trees[0].intercept[self.trees[0].apply(X)].copy()
        for t in self.trees[1:]:
            s = s + t.intercept[t.apply(X)]
        return s / float(self.n_trees)

    exact_shapley = True

    def shapley_values(self, X: np.ndarray, background: np.ndarray,
                       weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact interventional Shapley values: the mean of the trees' (Shapley values are linear in the model)."""
        phi, base = self.trees[0].shapley_values(X, background, weights)
        for t in self.trees[1:]:
            p, b = t.shapley_values(X, background, weights)
            phi, base = phi + p, base + b
        return phi / self.n_trees, base / self.n_trees

    def visit_summary(self, X: np.ndarray) -> str:
        """``412 of 980 leaves visited (20 trees)``."""
        X = np.asarray(X, dtype=np.float64)
        seen = sum(len(np.unique(t.apply(X))) for t in self.trees)
        return f"{seen} of {self.size()['leaves']} leaves visited ({self.n_trees} trees)"

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; each tree as the ``tree`` kind writes it (without bounds)."""
        trees = []
        for t in self.trees:
            d = t.to_dict()
            for key in ("kind", "action_low", "action_high", "terms"):
                d.pop(key)
            trees.append(d)
        return {"kind": self.kind, "obs_dim": self.obs_dim, "act_dim": self.act_dim, "trees": trees,
                **self._bounds_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ForestProgram:
        try:
            act_dim = int(d["act_dim"])
            unbounded = ["-inf"] * act_dim, ["inf"] * act_dim
            trees = [TreeProgram.from_dict({**t, "terms": [], "action_low": unbounded[0], "action_high": unbounded[1]})
                     for t in d["trees"]]
            prog = cls(trees, [float(v) for v in d["action_low"]], [float(v) for v in d["action_high"]])
        except ControllerFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ControllerFormatError(f"The forest program is malformed: {type(exc).__name__}: {exc}.") from None
        if prog.obs_dim != int(d["obs_dim"]):
            raise ControllerFormatError(f"The forest says obs_dim {d['obs_dim']}; its trees read {prog.obs_dim}.")
        return prog

    # ------------------------------------------------------------------ text
    def _member(self, controller: Controller, i: int) -> Controller:
        from interp_rl.program import Controller as _Controller

        return _Controller(self.trees[i], controller.features, controller.actions,  # type: ignore[arg-type]
                           controller.task)

    def explain(self, controller: Controller, *, precision: int = 3, max_depth: int | None = None,
                show_trees: int = 2) -> str:
        """A summary (trees, leaves, depth, what the mean is), then the first ``show_trees`` trees' rules."""
        show_trees = check_int(show_trees, "show_trees", "explain", low=0)
        size = self.size()
        lines = [f"Forest of {self.n_trees} trees ({size['leaves']} leaves, depth up to {size['depth']}, "
                 f"{size['parameters']} parameters): every action is the mean of the trees' leaf values."]
        lines.append("Inputs: " + ", ".join(f.label for f in controller.features))
        for i in range(min(show_trees, self.n_trees)):
            lines.append(f"Tree {i + 1} of {self.n_trees}:")
            text = self.trees[i].explain(self._member(controller, i), precision=precision, max_depth=max_depth)
            lines += ["  " + line for line in text.splitlines()]
        if self.n_trees > show_trees:
            lines.append(f"... {self.n_trees - show_trees} more trees")
        note = self.clip_note(controller, lambda v: cg.fixed(v, precision))
        if note:
            lines.append(note)
        return "\n".join(lines)

    def explain_decision(self, controller: Controller, x: np.ndarray, *, precision: int = 3) -> str:
        """Each tree's leaf value for ``x``, then their mean (the actions)."""
        x = np.asarray(x, dtype=np.float64).ravel()
        outs = self.member_outputs(x[None, :])[:, 0, :]
        y = self.predict(x[None, :])[0]
        lines = []
        for i, row in enumerate(outs[:10]):
            vals = ", ".join(cg.compact(float(v), precision) for v in row)
            lines.append(f"tree {i + 1}: leaf {self.trees[i].leaf_numbers()[self.trees[i].decision_path(x)[-1]]} "
                         f"→ ({vals})")
        if self.n_trees > 10:
            lines.append(f"... {self.n_trees - 10} more trees")
        lines += [f"→ mean of {self.n_trees} trees: {a.label} = {cg.compact(float(v), precision)}"
                  for a, v in zip(controller.actions, y, strict=True)]
        return "\n".join(lines)

    def to_dot(self, controller: Controller, *, obs: np.ndarray | None = None, states: np.ndarray | None = None,
               max_depth: int | None = None, title: str | None = None, precision: int = 3,
               tree: int = 1, **options: Any) -> str:
        """Tree ``tree`` (1-based) of the forest drawn as the ``tree`` kind draws it, captioned with its place in
        the forest; ``obs`` and ``states`` mark it as for a tree."""
        tree = check_int(tree, "tree", "to_dot", low=1)
        if tree > self.n_trees:
            raise bad_value("tree", "to_dot", f"an int in [1, {self.n_trees}]", tree)
        caption = f"tree {tree} of {self.n_trees} (the forest's actions are the trees' mean)"
        return self.trees[tree - 1].to_dot(self._member(controller, tree - 1), obs=obs, states=states,
                                           max_depth=max_depth, precision=precision,
                                           title=f"{title}: {caption}" if title else caption, **options)

    # ------------------------------------------------------------------ code
    def _code(self, controller: Controller, python: bool) -> list[str]:
        end = "" if python else ";"
        k = self.act_dim
        lines = [] if python or k == 0 else [f"double {', '.join(f's{o}' for o in range(k))};"]
        for i, t in enumerate(self.trees):
            def leaf(node: int, ind: str, first: bool = i == 0, t: TreeProgram = t) -> list[str]:
                out = [f"{ind}s{o} = {'' if first else f's{o} + '}{cg.lit(t.intercept[node, o])}{end}"
                       for o in range(k)]
                return out or [f"{ind}pass" if python else f"{ind};"]
            lines.append(f"# tree {i + 1} of {self.n_trees}" if python else f"/* tree {i + 1} of {self.n_trees} */")
            lines += t.code_lines(controller, python=python, leaf_lines=leaf)
        lines += [f"y{o} = s{o} / {cg.lit(float(self.n_trees))}{end}" for o in range(k)]
        return lines

    def python_body(self, controller: Controller) -> list[str]:
        """Each tree's nested ``if``/``else`` adding its leaf value to ``s``, then ``y = s / n``."""
        return self._code(controller, python=True)

    def c_body(self, controller: Controller) -> list[str]:
        """Each tree's nested ``if``/``else`` adding its leaf value to ``s``, then ``y = s / n``."""
        return self._code(controller, python=False)

    def onnx_graph(self, graph: OnnxGraph) -> str:
        """Each tree walked to its leaf and the leaf values gathered, summed in tree order, divided by ``n``."""
        s: str | None = None
        for t in self.trees:
            v = graph.op("Gather", graph.const(t.intercept), t.onnx_leaf(graph), axis=0)
            s = v if s is None else graph.op("Add", s, v)
        assert s is not None
        return graph.op("Div", s, graph.const(np.float64(self.n_trees)))


def forest_from_sklearn(model: Any, action_low: Any = None, action_high: Any = None) -> ForestProgram:
    """A fitted scikit-learn ``RandomForestRegressor``, ``ExtraTreesRegressor`` or ``DecisionTreeRegressor`` as a
    :class:`ForestProgram` (one member for a single tree).

    The program compares float64 inputs with the thresholds scikit-learn chose; scikit-learn compares the inputs
    rounded to float32, so on an input between a float32 value and its threshold the two may differ.
    """
    from sklearn.tree import DecisionTreeRegressor

    from interp_rl.kinds.tree import TreeProgram as _Tree

    members = [model] if isinstance(model, DecisionTreeRegressor) else list(getattr(model, "estimators_", []))
    if not members:
        raise bad_value("model", "forest_from_sklearn", "a fitted regression tree or forest of scikit-learn",
                        type(model).__name__)
    trees = []
    for m in members:
        t = m.tree_
        leaf = t.children_left < 0
        n_out = int(t.n_outputs)
        trees.append(_Tree(feature=np.where(leaf, -1, t.feature), threshold=np.where(leaf, 0.0, t.threshold),
                           left=t.children_left, right=t.children_right,
                           intercept=np.asarray(t.value[:, :, 0], dtype=np.float64).reshape(t.node_count, n_out),
                           coef=np.zeros((t.node_count, n_out, t.n_features)),
                           n_samples=np.asarray(t.weighted_n_node_samples, dtype=np.float64)))
    return ForestProgram(trees, action_low, action_high)


def distill_tree(program: Any, X: np.ndarray, *, max_depth: int = 4, max_leaves: int | None = 16) -> TreeProgram:
    """One small regression tree fitted to ``program``'s unclipped outputs on the states ``X`` ``(n, obs_dim)``:
    a readable summary of a forest (its fidelity is the caller's to measure). Bounds are the program's."""
    from sklearn.tree import DecisionTreeRegressor

    X = np.asarray(X, dtype=np.float64)
    y = program.raw_predict(X)
    model = DecisionTreeRegressor(max_depth=max_depth, max_leaf_nodes=max_leaves, random_state=0).fit(X, y)
    single = forest_from_sklearn(model).trees[0]
    return single.replace(action_low=program.action_low, action_high=program.action_high)
