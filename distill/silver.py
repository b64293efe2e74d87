"""SILVER: a discrete agent's choice as a short linear rule, found in the space of its Shapley values.

The recipe of SILVER (Shapley-value-based interpretable and verifiable RL) for a teacher with discrete actions:

1. explain the teacher's class scores (:meth:`~envs.sb3.SB3Teacher.action_scores`: log-probabilities or
   Q-values) at the states it visits, giving each state a *Shapley vector* (features × classes, centred
   over the classes, since only score differences decide the class);
2. cluster the Shapley vectors (k-means) and name each cluster by the class the teacher plays most in it;
3. draw the decision boundary between the clusters in Shapley space: a sparse (L1) logistic regression,
   whose coefficients weigh features in one common unit, the score;
4. carry the boundary back to the observation: each Shapley value is fitted as an affine function of its
   own feature (``phi_ic ~ a_ic x_i + b_ic``), so each class's score becomes an affine function of the
   raw features, ``s_k(x) = b_k + sum_i w_ki x_i``; by default (``boundary="refit"``) the boundary is then
   fitted again on the raw features this rule kept, which removes the error of the per-feature affine fits.

The controller plays the class with the highest score: a :class:`~interp_rl.kinds.mixture.MixtureProgram`
whose linear router holds the rule and whose experts are constant one-hot class scores, so it runs, explains
and exports as every mixture does. A handful of coefficients (CartPole: 2 x 5) replace the network.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sklearn
from sklearn.utils.validation import check_is_fitted

from distill._student import PolicyStudent
from interp_rl.attribution import ClassScoreModel, explain, summarize_background
from interp_rl.errors import bad_value
from interp_rl.kinds.mixture import MixtureProgram
from interp_rl.validation import check_choice, check_int

__all__ = ["SILVERPolicy"]

#: scikit-learn 1.8 asks for the L1 penalty as ``l1_ratio=1`` (``penalty`` is deprecated there).
_L1: dict[str, Any] = ({"l1_ratio": 1.0} if tuple(int(p) for p in sklearn.__version__.split(".")[:2]) >= (1, 8)
                       else {"penalty": "l1"})


class SILVERPolicy(PolicyStudent):
    """Fit a linear argmax rule through the teacher's Shapley values (see the module docstring).

    Parameters
    ----------
    teacher : object with ``action_scores(obs)``, default=None
        The discrete teacher whose Shapley values are clustered (DAgger fills it in).
    n_clusters : int, default=None
        Clusters of Shapley vectors (``None``: one per class the teacher plays).
    shapley_states : int, default=1000
        States (drawn from the training data) whose Shapley values are computed.
    background : int, default=16
        k-means centres of the training states used as the Shapley background.
    clusters : {"actions", "kmeans"}, default="actions"
        How the Shapley vectors are grouped: by the class the teacher plays, or by k-means (the paper's
        unsupervised step; each cluster then takes the class the teacher plays most in it).
    C : float, default=1.0
        Inverse strength of the L1 penalty of the boundary (on Shapley values brought to unit scale); smaller
        gives fewer terms.
    boundary : {"shapley", "refit"}, default="refit"
        ``"shapley"``: the boundary found in Shapley space, carried back through per-feature affine fits of the
        Shapley values (the paper's rule). ``"refit"``: the same features, the boundary fitted again on the raw
        observations (logistic regression on the teacher's classes), which removes the error of the affine fits:
        the default, as it kept more of the teacher on MountainCar and as much on CartPole
        (``benchmarks/results/silver/report.md``).
    max_terms : int, default=None
        Keep at most this many features in the rule (the ones whose terms vary most over the states).
    random_state : int, default=None
        Seeds the states drawn, the Shapley estimator and k-means.
    action_low, action_high : array-like, default=None
        Accepted for the student protocol; the class scores are one-hot, within ``[0, 1]``.

    Attributes
    ----------
    program_ : MixtureProgram
        The rule: a linear router over the raw features and one constant one-hot expert per class.
    classes_ : ndarray
        The classes the rule can play.
    facts_ : dict
        Cluster purity, accuracy of the boundary in Shapley space and of the rule on the training states.
    """

    program_kind = "mixture"

    def __init__(
        self,
        *,
        teacher: Any = None,
        clusters: str = "actions",
        n_clusters: int | None = None,
        shapley_states: int = 1000,
        background: int = 16,
        C: float = 1.0,
        boundary: str = "refit",
        max_terms: int | None = None,
        random_state: int | None = None,
        action_low: Any = None,
        action_high: Any = None,
    ) -> None:
        self.teacher = teacher
        self.clusters = clusters
        self.n_clusters = n_clusters
        self.shapley_states = shapley_states
        self.background = background
        self.C = C
        self.boundary = boundary
        self.max_terms = max_terms
        self.random_state = random_state
        self.action_low = action_low
        self.action_high = action_high

    def _validate_params(self) -> None:
        owner = "SILVERPolicy"
        if self.n_clusters is not None:
            check_int(self.n_clusters, "n_clusters", owner)
        check_int(self.shapley_states, "shapley_states", owner)
        check_int(self.background, "background", owner)
        if self.max_terms is not None:
            check_int(self.max_terms, "max_terms", owner)
        if not (isinstance(self.C, (int, float)) and np.isfinite(self.C) and self.C > 0):
            raise bad_value("C", owner, "a positive number", self.C)
        check_choice(self.clusters, "clusters", owner, ("actions", "kmeans"))
        check_choice(self.boundary, "boundary", owner, ("shapley", "refit"))

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SILVERPolicy:
        """Fit the rule to teacher-visited states ``X`` and the teacher's one-hot classes ``y``."""
        from sklearn.cluster import KMeans
        from sklearn.linear_model import LogisticRegression

        self._validate_params()
        X, Y, w = self._fit_inputs(X, y, sample_weight)
        if self.teacher is None:
            raise bad_value("teacher", "SILVERPolicy", "a discrete teacher (SILVER explains its class scores)", None)
        scores = ClassScoreModel(self.teacher)
        n, d = X.shape
        n_cls = Y.shape[1]
        labels = np.argmax(Y, axis=1)
        seed = 0 if self.random_state is None else int(self.random_state)
        rng = np.random.default_rng(seed)
        pick = np.sort(rng.choice(n, size=min(n, self.shapley_states), replace=False))
        S, S_labels, S_w = X[pick], labels[pick], w[pick]
        attr = explain(scores, S, summarize_background(X, self.background, seed=seed), seed=seed)
        phi = attr.values - attr.values.mean(axis=2, keepdims=True)  # (m, d, classes): differences decide
        flat = phi.reshape(len(S), -1)

        played = np.unique(S_labels)
        if self.clusters == "kmeans":
            k = self.n_clusters or len(played)
            km = KMeans(n_clusters=min(k, len(S)), n_init=10, random_state=seed).fit(flat, sample_weight=S_w)
            cluster_of = km.labels_
            cluster_class = np.array([
                np.bincount(S_labels[cluster_of == c], weights=S_w[cluster_of == c], minlength=n_cls).argmax()
                if np.any(cluster_of == c) else played[0] for c in range(km.n_clusters)
            ])
        else:  # the teacher's own classes group the Shapley vectors
            cluster_of = np.searchsorted(played, S_labels)
            cluster_class = played
        target = cluster_class[cluster_of]
        purity = float(np.average(target == S_labels, weights=S_w))
        classes = np.unique(target)
        if len(classes) == 1:  # one class everywhere: a constant rule
            coef_phi = np.zeros((1, flat.shape[1]))
            icpt = np.zeros(1)
            boundary_acc = 1.0
        else:
            clf = LogisticRegression(C=float(self.C), solver="saga", max_iter=20_000, tol=1e-5, random_state=seed,
                                     **_L1)
            # One scale for every Shapley value (they share the score's unit), so C means the same for
            # log-probabilities as for Q-values of any size.
            scale = float(np.sqrt(np.mean(flat**2))) or 1.0
            clf.fit(flat / scale, target, sample_weight=S_w)
            coef_phi, icpt = clf.coef_ / scale, clf.intercept_
            boundary_acc = float(np.average(clf.predict(flat / scale) == target, weights=S_w))
        # Scores over the rule's classes: binary logistic regression gives one score (class 1 against 0).
        if len(classes) == 2:
            coef_phi = np.vstack([np.zeros_like(coef_phi), coef_phi])
            icpt = np.concatenate([[0.0], icpt])
        # phi_ic ~ a_ic x_i + b_ic, by least squares over the explained states.
        xm = S.mean(axis=0)
        xc = S - xm
        var = (xc**2).mean(axis=0)
        slope = np.where(var[:, None] > 0, np.einsum("mi,mic->ic", xc, phi) / len(S) / np.maximum(var, 1e-300)[:, None],
                         0.0)  # (d, classes)
        offset = phi.mean(axis=0) - slope * xm[:, None]
        W = coef_phi.reshape(len(classes), d, n_cls)
        router_coef = np.einsum("kic,ic->ki", W, slope)
        router_icpt = icpt + np.einsum("kic,ic->k", W, offset)
        if self.max_terms is not None and self.max_terms < d:
            spread = np.abs(router_coef - router_coef.mean(axis=0)).sum(axis=0) * np.sqrt(var)
            drop = np.argsort(-spread, kind="stable")[self.max_terms:]
            router_icpt = router_icpt + router_coef[:, drop] @ xm[drop]
            router_coef[:, drop] = 0.0
        router_coef[np.abs(router_coef) < 1e-12] = 0.0
        if self.boundary == "refit" and len(classes) > 1:
            router_icpt, router_coef = self._refit(X, labels, w, classes, router_coef, seed)

        experts = np.eye(n_cls)[classes]
        self.program_ = MixtureProgram(
            expert_intercept=experts, expert_coef=np.zeros((len(classes), n_cls, d)),
            router_intercept=router_icpt, router_coef=router_coef,
            usage=np.array([np.average(target == c, weights=S_w) for c in classes]),
            action_low=np.zeros(n_cls), action_high=np.ones(n_cls),
        )
        self.classes_ = classes
        rule = np.argmax(self.program_.predict(X), axis=1)
        self.facts_ = {
            "shapley_method": attr.method, "shapley_states": int(len(S)), "clusters": int(len(cluster_class)),
            "cluster_classes": cluster_class.tolist(), "cluster_purity": purity,
            "boundary_accuracy": boundary_acc,
            "rule_accuracy": float(np.average(rule == labels, weights=w)),
            "rule_terms": int(np.count_nonzero(router_coef)),
        }
        return self

    def _refit(self, X: np.ndarray, labels: np.ndarray, w: np.ndarray, classes: np.ndarray,
               mapped: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The boundary fitted again on the raw features the Shapley-space rule kept (its intercepts, coefficients)."""
        from sklearn.linear_model import LogisticRegression

        used = np.flatnonzero(np.any(mapped != 0.0, axis=0))
        coef = np.zeros_like(mapped)
        keep = np.isin(labels, classes)
        if not len(used) or len(np.unique(labels[keep])) < 2:
            return np.zeros(len(classes)), coef
        Z = X[keep][:, used]
        mu, sd = Z.mean(axis=0), Z.std(axis=0)
        sd[sd == 0] = 1.0
        clf = LogisticRegression(C=float(self.C), max_iter=5000, tol=1e-8, random_state=seed)
        clf.fit((Z - mu) / sd, labels[keep], sample_weight=w[keep])
        raw = clf.coef_ / sd
        icpt = clf.intercept_ - raw @ mu
        if len(clf.classes_) == 2:
            raw, icpt = np.vstack([np.zeros_like(raw), raw]), np.concatenate([[0.0], icpt])
        rows = np.searchsorted(classes, clf.classes_)
        out_icpt = np.full(len(classes), -1e6)  # a class the teacher never played there is never chosen
        out_icpt[rows] = icpt
        coef[np.ix_(rows, used)] = raw
        return out_icpt, coef

    def fit_facts(self) -> dict[str, Any]:
        """How each step went: cluster purity, boundary accuracy in Shapley space, the rule's accuracy."""
        check_is_fitted(self)
        return dict(self.facts_)
