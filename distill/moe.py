"""Sparse mixtures of linear experts fitted to a teacher's actions (the student of SMOSE distillation).

:class:`MixturePolicy` trains ``M`` linear experts and a linear router end to end by gradient
descent (PyTorch) on the *expected* error ``sum_k p_k(x) ||a_k(x) - y||^2``, with noisy gating
(Gaussian noise on the router's scores while training) and a load-balancing loss (the Switch
Transformer's ``M * sum_k f_k P_k``: share of rows routed to ``k`` times its mean probability),
so that every expert is used. Then it turns the soft mixture into the controller that runs:

1. top-1 routing (the highest score acts);
2. optionally the router distilled into a decision tree of depth ``router_depth``;
3. every expert refitted by weighted (sparse) ridge regression on exactly the rows it acts on,
   so each expert is the best affine map of its regime.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from distill._student import PolicyStudent, check_bounds
from distill.linear import LinearPolicy
from interp_rl.kinds.mixture import MixtureProgram, router_tree
from interp_rl.kinds.mixture_training import DISTILL, Gating
from interp_rl.threads import torch_threads
from interp_rl.validation import check_choice, check_float, check_int

__all__ = ["MixturePolicy"]


class MixturePolicy(PolicyStudent):
    """A top-1 mixture of sparse linear experts with a linear or tree router.

    Parameters
    ----------
    n_experts : int, default=8
        Number of experts ``M``.
    router : {'linear', 'tree', 'trees'}, default='linear'
        The router that runs: linear scores (argmax); one classification tree distilled from them;
        or one regression tree per expert imitating its score (SMOSE's variant), argmax over them.
    router_depth : int, default=4
        Depth limit of the routing tree(s).
    max_terms : int, default=None
        At most this many observation features per action in each expert (``None``: as many as
        ``max_parameters`` allows).
    max_parameters : int, default=1000
        When ``max_terms`` is ``None``: the experts get as many terms per action as keep the whole
        controller (expert intercepts and terms, router) within this many non-zero parameters,
        SMOSE's scale (all, if that fits; ``None``: no limit). Features that never vary in the data
        are not counted: no fit uses them.
    load_balance : float, default=0.05
        Weight of the load-balancing loss (0: off).
    gate_noise : float, default=0.5
        Standard deviation of the Gaussian noise on the router's scores while training.
    n_steps : int, default=3000
        Gradient steps (Adam) of the end-to-end training.
    batch_size : int, default=1024
        Rows per step.
    learning_rate : float, default=1e-2
        Adam's step size.
    alpha : float, default=1e-3
        Ridge penalty on standardised features when the experts are refitted.
    n_refine : int, default=3
        Rounds of hard EM after the training: experts refitted on their rows, each row relabelled
        with the expert that fits it best, the router refitted to the labels (0: off).
    action_low, action_high : array-like, default=None
        Bounds the actions are clipped to (``None``: no clipping).
    random_state : int, default=None
        Seed of the initialisation, the batches and the gate noise.

    Attributes
    ----------
    program_ : MixtureProgram
        The fitted mixture; runs, explains and exports the controller.
    usage_ : ndarray of shape (n_experts,)
        Share of the (weighted) training rows each expert acts on.
    terms_ : int or None
        Terms per action each expert was allowed (``max_terms``, or what ``max_parameters`` left).
    router_agreement_ : float
        With ``router='tree'``: share of rows on which the tree picks the linear router's expert
        (1.0 for the linear router).
    loss_curve_ : list of float
        Training loss every 100 steps.
    n_features_in_ : int
        Observation size seen in ``fit``.
    n_outputs_ : int
        Number of action components.

    Examples
    --------
    Two regimes switching on the sign of ``x0`` are found, and each expert reads back exactly:

    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(2000, 2))
    >>> y = np.where(X[:, [0]] > 0, X[:, [1]], -2.0 * X[:, [1]])
    >>> pol = MixturePolicy(n_experts=2, n_steps=500, alpha=0.0, random_state=0).fit(X, y)
    >>> sorted(np.round(pol.program_.expert_coef[:, 0, 1], 4).tolist())
    [-2.0, 1.0]
    """

    program_kind = "mixture"

    def __init__(
        self,
        *,
        n_experts: int = 8,
        router: str = "linear",
        router_depth: int = 4,
        max_terms: int | None = None,
        max_parameters: int | None = 1000,
        load_balance: float = DISTILL.load_balance,
        gate_noise: float = DISTILL.gate_noise,
        n_steps: int = 3000,
        batch_size: int = 1024,
        learning_rate: float = 1e-2,
        alpha: float = 1e-3,
        n_refine: int = 3,
        action_low: Any = None,
        action_high: Any = None,
        random_state: int | None = None,
    ) -> None:
        self.n_experts = n_experts
        self.router = router
        self.router_depth = router_depth
        self.max_terms = max_terms
        self.max_parameters = max_parameters
        self.load_balance = load_balance
        self.gate_noise = gate_noise
        self.n_steps = n_steps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.n_refine = n_refine
        self.action_low = action_low
        self.action_high = action_high
        self.random_state = random_state

    def _validate_params(self) -> None:
        owner = type(self).__name__
        check_int(self.n_experts, "n_experts", owner, low=1, high=64)
        check_choice(self.router, "router", owner, ("linear", "tree", "trees"))
        check_int(self.router_depth, "router_depth", owner, low=1, high=16)
        if self.max_terms is not None:
            check_int(self.max_terms, "max_terms", owner, low=1)
        if self.max_parameters is not None:
            check_int(self.max_parameters, "max_parameters", owner, low=1)
        check_float(self.load_balance, "load_balance", owner)
        check_float(self.gate_noise, "gate_noise", owner)
        check_int(self.n_steps, "n_steps", owner, low=0)
        check_int(self.batch_size, "batch_size", owner, low=1)
        check_float(self.learning_rate, "learning_rate", owner, low_open=True)
        check_float(self.alpha, "alpha", owner)
        check_int(self.n_refine, "n_refine", owner, low=0)

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> MixturePolicy:
        """Fit to observations ``X`` ``(n, obs_dim)`` and actions ``y`` ``(n, act_dim)``."""
        self._validate_params()
        X, Y, w = self._fit_inputs(X, y, sample_weight)
        low, high = check_bounds(self.action_low, self.action_high, Y.shape[1], type(self).__name__)
        self.terms_ = self._terms_per_action(X, Y.shape[1])
        bias, weight = self._refine(X, Y, w, *self._train_router(X, Y, w))
        chosen = self._route(X, bias, weight)
        tree, score_trees = None, None
        self.router_agreement_ = 1.0
        if self.router != "linear":
            if self.router == "tree":
                tree = self._fit_router_tree(X, chosen, w)
                routed = tree.intercept[tree.apply(X), 0].astype(np.int64)
            else:
                score_trees = self._fit_score_trees(X, bias, weight, w)
                routed = np.argmax(np.stack([t.intercept[t.apply(X), 0] for t in score_trees], axis=1), axis=1)
            self.router_agreement_ = float(np.average(routed == chosen, weights=w))
            chosen = routed
        intercept, coef = self._refit_experts(X, Y, w, chosen)
        self.usage_ = np.bincount(chosen, weights=w, minlength=self.n_experts) / w.sum()
        self.program_ = MixtureProgram(
            expert_intercept=intercept, expert_coef=coef, router_intercept=bias if self.router == "linear" else [],
            router_coef=weight if self.router == "linear" else np.zeros((0, 0)), tree=tree,
            score_trees=score_trees, usage=self.usage_,
            action_low=low, action_high=high,
        )
        return self

    def _terms_per_action(self, X: np.ndarray, act_dim: int) -> int | None:
        """``max_terms``, or the most terms per action that keep the controller within ``max_parameters``."""
        if self.max_terms is not None or self.max_parameters is None:
            return self.max_terms
        m, d = self.n_experts, int(np.count_nonzero(X.std(axis=0) > 1e-12))
        nodes = 2 ** (self.router_depth + 1) - 1
        router = {"linear": m + m * d, "tree": nodes, "trees": m * nodes}[self.router]
        fit = (self.max_parameters - m * act_dim - router) // (m * act_dim)
        return None if fit >= d else max(int(fit), 1)

    def fit_facts(self) -> dict[str, Any]:
        """What fitting found, for metrics and reports: the router tree's agreement with the linear
        router it was distilled from, and each expert's share of the training rows."""
        return {"router_agreement": self.router_agreement_, "usage": self.usage_.tolist(),
                "terms_per_action": self.terms_}

    def _train_router(self, X: np.ndarray, Y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """End-to-end training of router and experts; returns the router on raw observations."""
        import torch

        m = self.n_experts
        mu, sd = X.mean(axis=0), X.std(axis=0)
        sd = np.where(sd > 1e-12, sd, 1.0)
        ymu, ysd = Y.mean(axis=0), Y.std(axis=0)
        ysd = np.where(ysd > 1e-12, ysd, 1.0)
        self.loss_curve_: list[float] = []
        if m == 1 or self.n_steps == 0:
            return np.zeros(m), np.zeros((m, X.shape[1]))
        from interp_rl.kinds.mixture_training import NoisyTop1Mixture

        with torch_threads(1):  # results do not depend on the machine's cores
            gen = torch.Generator().manual_seed(int(self.random_state or 0))
            Xs = torch.as_tensor((X - mu) / sd, dtype=torch.float32)
            Ys = torch.as_tensor((Y - ymu) / ysd, dtype=torch.float32)
            W = torch.as_tensor(w / w.mean(), dtype=torch.float32)
            d, k = X.shape[1], Y.shape[1]
            net = NoisyTop1Mixture(d, k, m, gating=Gating(gate_noise=float(self.gate_noise),
                                                           load_balance=float(self.load_balance)))
            with torch.no_grad():
                net.router.weight.copy_(torch.randn(m, d, generator=gen) * 0.5)
                net.router.bias.zero_()
                net.experts_w.copy_(torch.randn(m, d, k, generator=gen) * 0.01)
            opt = torch.optim.Adam(net.parameters(), lr=self.learning_rate)
            n = len(Xs)
            for step in range(self.n_steps):
                idx = torch.randint(0, n, (min(self.batch_size, n),), generator=gen)
                loss = net.regression_loss(Xs[idx], Ys[idx], W[idx], generator=gen)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 100 == 0:
                    self.loss_curve_.append(float(loss.detach()))
            bs, ws = net.affine()[:2]
        weight = ws / sd[None, :]
        bias = bs - weight @ mu
        return bias, weight

    def _route(self, X: np.ndarray, bias: np.ndarray, weight: np.ndarray) -> np.ndarray:
        m, k, d = self.n_experts, 1, X.shape[1]
        return MixtureProgram(expert_intercept=np.zeros((m, k)), expert_coef=np.zeros((m, k, d)),
                              router_intercept=bias, router_coef=weight).route(X)

    def _refine(self, X: np.ndarray, Y: np.ndarray, w: np.ndarray, bias: np.ndarray,
                weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hard EM on the top-1 mixture: refit the experts on their rows, relabel each row with the
        expert that fits it best, refit the router (multinomial logistic regression) to those labels,
        each row weighted by its regret (what the second-best expert would cost it).

        Keeps the router whose top-1 mixture has the smallest weighted squared error.
        """
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        m = self.n_experts
        mu, sd = X.mean(axis=0), X.std(axis=0)
        sd = np.where(sd > 1e-12, sd, 1.0)
        best: tuple[float, np.ndarray, np.ndarray] | None = None
        for _ in range(self.n_refine + 1):
            chosen = self._route(X, bias, weight)
            intercept, coef = self._refit_experts(X, Y, w, chosen)
            pred = intercept[:, None, :] + np.einsum("mkd,nd->mnk", coef, X)  # (m, n, k)
            err = ((pred - Y[None, :, :]) ** 2).sum(axis=2)  # (m, n)
            mse = float(np.average(err[chosen, np.arange(len(X))], weights=w))
            if best is None or mse < best[0]:
                best = (mse, bias, weight)
            labels = np.argmin(err, axis=0)
            # Cost-sensitive, as VIPER weights states: a row counts by how much a wrong expert costs it.
            ranked = np.sort(err, axis=0)
            regret = w * (ranked[1] - ranked[0])
            present = np.unique(labels[regret > 0])
            if len(present) < 2:
                break
            keep = regret > 0
            clf = LogisticRegression(C=1e4, max_iter=300)
            with warnings.catch_warnings():
                # One EM step among several, and only the router with the smallest error is kept: a step that
                # stops at max_iter is a less good candidate, not a fault worth a warning per DAgger round.
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf.fit(((X - mu) / sd)[keep], labels[keep], sample_weight=regret[keep] / regret[keep].mean())
            ws = np.zeros((m, X.shape[1]))
            bs = np.full(m, -1e9)  # an expert no row prefers is never chosen
            if len(present) == 2:  # scikit-learn's binary case: one score, for the second class
                ws[present[1]], bs[present[1]] = clf.coef_[0], clf.intercept_[0]
                bs[present[0]] = 0.0
            else:
                ws[present], bs[present] = clf.coef_, clf.intercept_
            weight = ws / sd[None, :]
            bias = bs - weight @ mu
        assert best is not None
        return best[1], best[2]

    def _fit_router_tree(self, X: np.ndarray, chosen: np.ndarray, w: np.ndarray) -> Any:
        """A classification tree of depth ``router_depth`` imitating the linear router."""
        from sklearn.tree import DecisionTreeClassifier

        clf = DecisionTreeClassifier(max_depth=self.router_depth, random_state=self.random_state or 0)
        clf.fit(X, chosen, sample_weight=w)
        t = clf.tree_
        leaf = t.children_left < 0
        expert = np.where(leaf, clf.classes_[np.argmax(t.value[:, 0, :], axis=1)], 0)
        return router_tree(feature=np.where(leaf, -1, t.feature), threshold=np.where(leaf, 0.0, t.threshold),
                           left=t.children_left, right=t.children_right, expert=expert, obs_dim=X.shape[1],
                           n_samples=t.weighted_n_node_samples)

    def _fit_score_trees(self, X: np.ndarray, bias: np.ndarray, weight: np.ndarray, w: np.ndarray) -> list[Any]:
        """One regression tree of depth ``router_depth`` per expert, imitating that expert's linear score."""
        from sklearn.tree import DecisionTreeRegressor

        from distill.tree import program_from_sklearn

        scores = bias[None, :] + X @ weight.T
        trees = []
        for m in range(self.n_experts):
            reg = DecisionTreeRegressor(max_depth=self.router_depth, random_state=self.random_state or 0)
            reg.fit(X, scores[:, m], sample_weight=w)
            trees.append(program_from_sklearn(reg, np.array([-np.inf]), np.array([np.inf])))
        return trees

    def _refit_experts(self, X: np.ndarray, Y: np.ndarray, w: np.ndarray,
                       chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each expert's (sparse) ridge fit on the rows it acts on; an idle expert predicts the mean action."""
        m, k, d = self.n_experts, Y.shape[1], X.shape[1]
        intercept = np.repeat(((w @ Y) / w.sum())[None, :], m, axis=0)
        coef = np.zeros((m, k, d))
        for e in range(m):
            rows = np.flatnonzero((chosen == e) & (w > 0))
            if len(rows) == 0:
                continue
            lin = LinearPolicy(max_terms=self.terms_, alpha=self.alpha).fit(X[rows], Y[rows], w[rows])
            intercept[e], coef[e] = lin.program_.intercept, lin.program_.coef
        return intercept, coef
