"""P-ReLU networks: a small ReLU network fitted to the teacher, converted exactly into its activation regions.

:class:`PReLUPolicy` trains a multilayer perceptron with ReLU hidden layers (PyTorch, float64, CPU) on the
teacher's actions, folds the input and output standardisation into its first and last layers, and converts
the network (:func:`to_oblique`) into an :class:`~interp_rl.kinds.oblique.ObliqueProgram`: an oblique tree
whose every leaf is an affine rule on a polyhedron, one leaf per activation pattern that some state of the
domain box has. The student's actions are the program's, which are the network's own float64 forward pass
(:func:`network_forward`) bit for bit on the box.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distill._student import PolicyStudent, check_bounds
from interp_rl.errors import bad_value
from interp_rl.kinds.oblique import ObliqueProgram
from interp_rl.threads import torch_threads
from interp_rl.validation import check_float, check_int
from interp_rl.verify.lp import maximise

__all__ = ["PReLUPolicy", "domain_box", "network_forward", "parse_hidden", "to_oblique"]

Layers = list[tuple[np.ndarray, np.ndarray]]


def parse_hidden(hidden: Any, owner: str = "PReLUPolicy") -> list[int]:
    """``"8,8"`` (or a sequence of ints, or one int: a single layer) as layer widths, each 1 to 64, one to three
    layers.

    >>> parse_hidden("8,8"), parse_hidden(8)
    ([8, 8], [8])
    """
    if isinstance(hidden, (int, np.integer)) and not isinstance(hidden, bool):
        hidden = [int(hidden)]
    try:
        sizes = [int(v) for v in (hidden.split(",") if isinstance(hidden, str) else hidden)]
    except (TypeError, ValueError):
        raise bad_value("hidden", owner, "comma-separated layer widths such as '8,8'", hidden) from None
    if not 1 <= len(sizes) <= 3 or not all(1 <= s <= 64 for s in sizes):
        raise bad_value("hidden", owner, "one to three layer widths, each 1 to 64 ('8,8')", hidden)
    return sizes


def network_forward(layers: Layers, X: np.ndarray) -> np.ndarray:
    """The network's unclipped outputs in float64 with a fixed order: every layer ``z = b`` then
    ``z = z + W[:, i] * h_i`` for ``i`` ascending, ``h = max(z, 0)`` on the hidden layers.

    >>> network_forward([(np.array([[1.0], [-1.0]]), np.zeros(2)), (np.array([[1.0, 2.0]]), np.array([0.5]))],
    ...                 np.array([[3.0], [-1.0]]))
    array([[3.5],
           [2.5]])
    """
    h = np.asarray(X, dtype=np.float64)
    for k, (W, b) in enumerate(layers):
        z = np.repeat(b[None, :], len(h), axis=0)
        for i in range(W.shape[1]):
            z = z + W[:, i] * h[:, i : i + 1]
        h = np.maximum(z, 0.0) if k < len(layers) - 1 else z
    return h


def domain_box(X: np.ndarray, widen: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """The box the conversion is exact on: the observations' range widened by ``widen`` of it on each side
    (a feature that never varies gets ``+-widen``)."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = np.where(hi > lo, widen * (hi - lo), widen)
    return lo - pad, hi + pad


def to_oblique(layers: Layers, lower: np.ndarray, upper: np.ndarray, *, samples: np.ndarray | None = None,
               action_low: Any = None, action_high: Any = None) -> ObliqueProgram:
    """The ReLU network ``layers`` (hidden layers, then the output layer) as an oblique tree, exactly on the box.

    Layer by layer, unit by unit, each region (a polyhedron inside ``[lower, upper]``) is split on the unit's
    pre-activation, affine there: ``z <= 0`` (off) goes left, ``z > 0`` (on) right. One linear program per unit
    and region (:func:`interp_rl.verify.lp.maximise`) decides whether the side not holding the region's known
    state has states; a side without any is pruned (the unit is then off, or on, throughout the region and
    needs no test). ``samples`` (e.g. the training states) are known states: where some lie clearly on both
    sides, no LP is needed. A leaf is an activation pattern; its affine map composes the active rows.
    """
    layers = [(np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64)) for W, b in layers]
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    d = layers[0][0].shape[1]
    sizes = [len(b) for _, b in layers[:-1]]
    offsets = np.cumsum([0, *sizes])
    hidden = int(offsets[-1])
    nodes: list[dict[str, Any]] = []

    def new(**kw: Any) -> int:
        nodes.append(kw)
        return len(nodes) - 1

    # each frame: where to attach, layer, unit, constraints, the previous layer as affine maps of x, the pattern,
    # known states of the region (the first always in it)
    pts0 = np.asarray(samples, dtype=np.float64).reshape(-1, d) if samples is not None else np.zeros((0, d))
    pts0 = pts0[np.all((pts0 >= lower) & (pts0 <= upper), axis=1)]
    root = np.vstack([(lower + upper)[None, :] / 2, pts0])
    stack: list[tuple[int | None, str, int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                      np.ndarray]] = [(None, "", 0, 0, np.zeros((0, d)), np.zeros(0), np.eye(d), np.zeros(d),
                                       np.zeros(hidden, dtype=bool), root)]
    while stack:
        parent, side, layer, j, A, rhs, M, m, pattern, pts = stack.pop()
        node_id: int
        while True:
            if layer == len(sizes):  # a leaf: the output layer on the active units
                W, b = layers[-1]
                node_id = new(leaf=True, intercept=b + W @ m, coef=W @ M, active=pattern.copy())
                break
            W, b = layers[layer]
            if j == sizes[layer]:  # the layer is decided: the next one reads its active units
                on = pattern[offsets[layer]:offsets[layer + 1]]
                M, m = (W @ M) * on[:, None], (b + W @ m) * on
                layer, j = layer + 1, 0
                continue
            w, c = W[j] @ M, float(b[j] + W[j] @ m)
            z = pts @ w + c
            margin = 1e-9 * (1.0 + np.abs(w) @ np.maximum(np.abs(lower), np.abs(upper)) + abs(c))
            if np.any(z < -margin) and np.any(z > margin):  # known states on both sides: no LP needed
                split = (pts[z <= 0.0], pts[z > 0.0])
            else:
                here = float(z[0])
                if here <= 0.0:  # the first state is off: are there states where the unit is on?
                    o = maximise(w, c, lower, upper, A, rhs)
                    other = o.status != "empty" and o.bound > 0.0 and o.x is not None and float(w @ o.x + c) > 0.0
                else:
                    o = maximise(-w, -c, lower, upper, A, rhs)
                    other = o.status != "empty" and o.bound >= 0.0 and o.x is not None and float(w @ o.x + c) <= 0.0
                if not other:  # one side only: the unit is fixed throughout the region
                    pattern = pattern.copy()
                    pattern[offsets[layer] + j] = here > 0.0
                    j += 1
                    continue
                assert o.x is not None
                keep = pts[(z <= 0.0) == (here <= 0.0)]
                split = (keep, o.x[None, :]) if here <= 0.0 else (o.x[None, :], keep)
            node_id = new(leaf=False, weight=w, bias=c, unit=(layer, j), active=pattern.copy())
            for go_on, row, r, known in ((True, -w, c, split[1]), (False, w, -c, split[0])):
                pat = pattern.copy()
                pat[offsets[layer] + j] = go_on
                stack.append((node_id, "right" if go_on else "left", layer, j + 1, np.vstack([A, row]),
                              np.append(rhs, r), M, m, pat, known))
            break
        if parent is not None:
            nodes[parent][side] = node_id
    n = len(nodes)
    act_dim = len(layers[-1][1])
    left, right = -np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)
    weight, bias = np.zeros((n, d)), np.zeros(n)
    intercept, coef = np.zeros((n, act_dim)), np.zeros((n, act_dim, d))
    unit, active = -np.ones((n, 2), dtype=np.int64), np.zeros((n, hidden), dtype=bool)
    for k, nd in enumerate(nodes):
        active[k] = nd["active"]
        if nd["leaf"]:
            intercept[k], coef[k] = nd["intercept"], nd["coef"]
        else:
            left[k], right[k], unit[k] = nd["left"], nd["right"], nd["unit"]
            weight[k], bias[k] = nd["weight"], nd["bias"]
    # the active units a node needs are those of the layers above its own
    for k in range(n):
        if left[k] >= 0:
            active[k, offsets[unit[k, 0]]:] = False
    return ObliqueProgram(left=left, right=right, weight=weight, bias=bias, intercept=intercept, coef=coef,
                          network=layers, unit=unit, active=active, domain_low=lower, domain_high=upper,
                          action_low=action_low, action_high=action_high)


class PReLUPolicy(PolicyStudent):
    """A small ReLU network, fitted by Adam on the weighted squared error, run as its exact oblique tree.

    Parameters
    ----------
    hidden : str, default="8,8"
        Hidden layer widths, comma-separated (one to three layers).
    n_steps : int, default=2000
        Gradient steps (Adam).
    batch_size : int, default=512
        Rows per step.
    learning_rate : float, default=3e-3
        Adam's step size.
    widen : float, default=0.1
        The conversion's domain box: the observations' range widened by this share on each side.
    action_low, action_high : array-like, default=None
        Bounds the actions are clipped to (``None``: no clipping).
    random_state : int, default=None
        Seed of the initialisation and the batches.

    Attributes
    ----------
    program_ : ObliqueProgram
        The converted network; runs, explains and exports the controller.
    layers_ : list of (W, b)
        The network with the standardisation folded in (raw observations in, actions out).

    Examples
    --------
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(400, 2))
    >>> pol = PReLUPolicy(hidden="4", n_steps=200, random_state=0).fit(X, np.abs(X[:, :1]))
    >>> bool(np.array_equal(pol.predict(X), network_forward(pol.layers_, X)))
    True
    """

    program_kind = "oblique"

    def __init__(self, *, hidden: str = "8,8", n_steps: int = 2000, batch_size: int = 512,
                 learning_rate: float = 3e-3, widen: float = 0.1, action_low: Any = None, action_high: Any = None,
                 random_state: int | None = None) -> None:
        self.hidden = hidden
        self.n_steps = n_steps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.widen = widen
        self.action_low = action_low
        self.action_high = action_high
        self.random_state = random_state

    def _validate_params(self) -> None:
        owner = type(self).__name__
        parse_hidden(self.hidden, owner)
        check_int(self.n_steps, "n_steps", owner, low=0)
        check_int(self.batch_size, "batch_size", owner, low=1)
        check_float(self.learning_rate, "learning_rate", owner, low_open=True)
        check_float(self.widen, "widen", owner)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> PReLUPolicy:
        """Fit to observations ``X`` ``(n, obs_dim)`` and actions ``y`` ``(n, act_dim)``, then convert."""
        import torch

        self._validate_params()
        X, Y, w = self._fit_inputs(X, y, sample_weight)
        low, high = check_bounds(self.action_low, self.action_high, Y.shape[1], type(self).__name__)
        mu, sd = X.mean(axis=0), X.std(axis=0)
        sd = np.where(sd > 1e-12, sd, 1.0)
        ymu, ysd = Y.mean(axis=0), Y.std(axis=0)
        ysd = np.where(ysd > 1e-12, ysd, 1.0)
        sizes = [X.shape[1], *parse_hidden(self.hidden), Y.shape[1]]
        with torch_threads(1):
            gen = torch.Generator().manual_seed(int(self.random_state or 0))
            torch_layers = []
            for a, b in zip(sizes[:-1], sizes[1:], strict=True):
                W = torch.randn(b, a, generator=gen, dtype=torch.float64) * np.sqrt(2.0 / a)
                torch_layers.append((W.requires_grad_(), torch.zeros(b, dtype=torch.float64, requires_grad=True)))
            params = [p for pair in torch_layers for p in pair]
            opt = torch.optim.Adam(params, lr=self.learning_rate)
            Xs = torch.as_tensor((X - mu) / sd)
            Ys = torch.as_tensor((Y - ymu) / ysd)
            Wt = torch.as_tensor(w / w.mean())
            self.loss_curve_: list[float] = []
            for step in range(self.n_steps):
                idx = torch.randint(0, len(Xs), (min(self.batch_size, len(Xs)),), generator=gen)
                h = Xs[idx]
                for k, (W, b) in enumerate(torch_layers):
                    h = h @ W.T + b
                    if k < len(torch_layers) - 1:
                        h = torch.relu(h)
                loss = (Wt[idx] * ((h - Ys[idx]) ** 2).sum(dim=1)).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 100 == 0:
                    self.loss_curve_.append(float(loss.detach()))
            layers = [(W.detach().numpy().copy(), b.detach().numpy().copy()) for W, b in torch_layers]
        W0, b0 = layers[0]
        layers[0] = (W0 / sd[None, :], b0 - (W0 / sd[None, :]) @ mu)
        WL, bL = layers[-1]
        layers[-1] = (WL * ysd[:, None], bL * ysd + ymu)
        self.layers_ = layers
        self.domain_ = domain_box(X, float(self.widen))
        self.program_ = to_oblique(layers, *self.domain_, samples=X, action_low=low, action_high=high)
        return self

    def fit_facts(self) -> dict[str, Any]:
        """The converted form's size: regions (non-empty activation patterns) and the network's widths."""
        return {"regions": self.program_.size()["regions"], "hidden": parse_hidden(self.hidden)}
