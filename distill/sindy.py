"""SINDy policies: one sparse equation per action over a library of candidate terms (pysindy).

The student is composed as pysindy composes a model: a *feature library* (pysindy's
``PolynomialLibrary``, ``FourierLibrary``, ``CustomLibrary`` and their concatenations) turns the
observation into candidate terms, a *sparse optimiser* (pysindy's ``STLSQ``, ``SR3``, ``MIOSR``,
optionally inside its ``EnsembleOptimizer``) keeps few of them, and the actions are clipped to
their bounds. The fit is a sparse regression of the teacher's actions on the terms, the policy
counterpart of SINDy's regression of derivatives (SINDy-RL, Zolman et al. 2024). The result is an
:class:`~interp_rl.kinds.equations.EquationsProgram`.

Sparsity is unit-free: terms are standardised (zero mean, unit standard deviation in the
training states) and each action is divided by its standard deviation before the optimiser
runs, so ``threshold=0.05`` drops a term whose typical contribution is under 5% of the action's
spread, on any task. ``max_terms`` caps the number of non-zero terms of the whole controller by
raising the threshold until the cap holds.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from distill._student import PolicyStudent, check_bounds
from interp_rl.errors import InvalidParameterError, bad_value
from interp_rl.kinds.equations import FUNCTIONS, EquationsProgram, Factor
from interp_rl.program import Signal
from interp_rl.validation import check_float, check_int

__all__ = ["OPTIMIZERS", "SINDyPolicy", "library_terms", "make_library"]

#: Optimiser names ``optimizer=`` accepts (or give a pysindy optimiser object).
OPTIMIZERS = ("stlsq", "sr3", "miosr")
#: Rows used to search the threshold that meets ``max_terms`` when the fit is on the samples themselves (an
#: ensemble, or an optimiser object; otherwise the least-squares problem is compressed to one row per term).
SEARCH_ROWS = 20_000
_PART = re.compile(r"^(poly|fourier)(\d+)$|^custom:([a-z,]+)$")


def _unary(name: str) -> tuple[Any, Any]:
    """pysindy CustomLibrary's (function, name function) for one of :data:`FUNCTIONS`."""
    f = FUNCTIONS[name][0]
    vec = np.frompyfunc(f, 1, 1)
    return (lambda x: vec(x).astype(np.float64)), (lambda x: f"{name}({x})")


def make_library(spec: Any, owner: str = "SINDyPolicy") -> Any:
    """A pysindy feature library from a spec: ``"poly2"``, ``"fourier1"``, ``"custom:tanh,abs"``, joined by ``+``.

    ``polyD`` is pysindy's ``PolynomialLibrary(degree=D)`` (every monomial of degree 1 to ``D``),
    ``fourierK`` its ``FourierLibrary(n_frequencies=K)`` (``sin`` and ``cos`` of ``k*x``,
    ``k = 1..K``), ``custom:f,g`` its ``CustomLibrary`` of the named functions of one feature
    (:data:`~interp_rl.kinds.equations.FUNCTIONS`). A pysindy library object is returned as it is.

    >>> type(make_library("poly2+fourier1")).__name__
    'ConcatLibrary'
    >>> make_library("poly0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interp_rl.errors.InvalidParameterError: The 'library' parameter of SINDyPolicy must be 'polyD' ... instead.
    """
    import pysindy as ps
    from pysindy.feature_library.base import BaseFeatureLibrary

    if not isinstance(spec, str):
        if isinstance(spec, BaseFeatureLibrary):
            return spec
        raise bad_value("library", owner, "a library spec such as 'poly2+fourier1' or a pysindy feature library",
                        spec)
    expected = (f"'polyD' (degree D >= 1), 'fourierK' (K >= 1) or 'custom:f,g' (f, g in {', '.join(FUNCTIONS)}), "
                "joined by '+'")
    parts = []
    for part in spec.replace(" ", "").split("+"):
        m = _PART.match(part)
        if m is None:
            raise bad_value("library", owner, expected, spec)
        if m.group(1) == "poly":
            if int(m.group(2)) < 1 or int(m.group(2)) > 6:
                raise bad_value("library", owner, expected.replace("D >= 1", "1 <= D <= 6"), spec)
            parts.append(ps.PolynomialLibrary(degree=int(m.group(2)), include_bias=False))
        elif m.group(1) == "fourier":
            if int(m.group(2)) < 1:
                raise bad_value("library", owner, expected, spec)
            parts.append(ps.FourierLibrary(n_frequencies=int(m.group(2))))
        else:
            names = m.group(3).split(",")
            if not names or any(n not in FUNCTIONS for n in names):
                raise bad_value("library", owner, expected, spec)
            funcs = [_unary(n) for n in names]
            parts.append(ps.CustomLibrary([f for f, _ in funcs], [g for _, g in funcs]))
    lib = parts[0]
    for p in parts[1:]:
        lib = lib + p
    return lib


def library_terms(lib: Any, n_features: int) -> list[list[Factor] | None]:
    """The fitted library's output columns as terms (``None`` for a constant column).

    Knows pysindy's polynomial, Fourier and custom (functions of one feature) libraries and their
    concatenations; anything else raises ``ValueError`` (its terms could not be exported).
    """
    import pysindy as ps

    if isinstance(lib, ps.ConcatLibrary):
        return [t for sub in lib.libraries for t in library_terms(sub, n_features)]
    if isinstance(lib, ps.PolynomialLibrary):
        return [[("pow", int(j), float(p)) for j, p in enumerate(row) if p > 0] or None for row in lib.powers_]
    if isinstance(lib, ps.FourierLibrary):
        out: list[list[Factor] | None] = []
        for k in range(1, lib.n_frequencies + 1):
            for j in range(n_features):
                if lib.include_sin:
                    out.append([("sin", j, float(k))])
                if lib.include_cos:
                    out.append([("cos", j, float(k))])
        return out
    if isinstance(lib, ps.CustomLibrary):
        out = []
        for name_fn in lib.function_names:
            m = re.match(r"^(\w+)\(x\)$", str(name_fn("x")))
            if m is None or m.group(1) not in FUNCTIONS:
                raise ValueError(f"custom function {name_fn('x')!r} is not one of {', '.join(FUNCTIONS)}")
            out += [[(m.group(1), j, 1.0)] for j in range(n_features)]
        return out
    raise ValueError(f"{type(lib).__name__} is not a library whose terms can be written as equations")


class SINDyPolicy(PolicyStudent):
    """``action_k = intercept_k + sum_t coef_kt * term_t(obs)``, sparse, clipped: a SINDy policy.

    Parameters
    ----------
    library : str or pysindy feature library, default="poly2"
        Candidate terms: a spec (:func:`make_library`: ``"poly2"``, ``"poly1+fourier2"``,
        ``"poly2+custom:tanh"``) or a pysindy library (polynomial, Fourier, custom, concatenated).
    optimizer : {"stlsq", "sr3", "miosr"} or pysindy optimiser, default="stlsq"
        The sparse regression: sequentially thresholded least squares, sparse relaxed
        regularised regression (L0), or mixed-integer optimisation (needs ``gurobipy`` and
        ``cvxpy``). An optimiser object is used as it is (``threshold`` and ``alpha`` then unused).
    threshold : float, default=0.05
        Smallest standardised coefficient kept (STLSQ's threshold; SR3's L0 threshold): a term whose
        typical contribution is below this fraction of the action's standard deviation is dropped.
    alpha : float, default=1e-3
        Ridge penalty of STLSQ's least squares (standardised terms).
    max_terms : int, default=None
        At most this many non-zero terms in the whole controller (all actions together): the
        threshold is raised until the cap holds (MIOSR: its target sparsity per action).
    terms_per_action : int, default=8
        When ``max_terms`` is not given, at most this many non-zero terms in each action's
        equation (its threshold raised alone), so that every equation stays readable; 0 or None:
        as many as ``threshold`` leaves.
    ensemble : int, default=0
        With ``n`` > 0, pysindy's ``EnsembleOptimizer`` bags ``n`` fits on resampled rows and keeps
        the median coefficients (robust to outlying states); 0 fits once.
    action_low, action_high : array-like, default=None
        Bounds the actions are clipped to (``None``: no clipping).
    random_state : int, default=None
        Seeds the ensemble's resampling and the rows of the threshold search.

    Attributes
    ----------
    program_ : EquationsProgram
        The fitted equations; runs, explains and exports the controller.
    threshold_ : float
        The threshold the equations were fitted with (raised from ``threshold`` to meet ``max_terms``,
        or the largest of the actions' raised to meet ``terms_per_action``).
    coef_list_ : ndarray of shape (n_models, act_dim, n_terms) or None
        The ensemble's coefficients (standardised units, every library term), for their spread.

    Examples
    --------
    A linear teacher ``a = 0.5 x0 - 0.2 x2`` is read back exactly:

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> pol = SINDyPolicy(library="poly2").fit(X, 0.5 * X[:, 0] - 0.2 * X[:, 2])
    >>> print("\\n".join(pol.equations(["x_pos", "y_pos", "z_pos"], ["push"])))
    push = 0.500*x_pos - 0.200*z_pos
    """

    program_kind = "equations"

    def __init__(
        self,
        *,
        library: Any = "poly2",
        optimizer: Any = "stlsq",
        threshold: float = 0.05,
        alpha: float = 1e-3,
        max_terms: int | None = None,
        terms_per_action: int | None = 8,
        ensemble: int = 0,
        action_low: Any = None,
        action_high: Any = None,
        random_state: int | None = None,
    ) -> None:
        self.library = library
        self.optimizer = optimizer
        self.threshold = threshold
        self.alpha = alpha
        self.max_terms = max_terms
        self.terms_per_action = terms_per_action
        self.ensemble = ensemble
        self.action_low = action_low
        self.action_high = action_high
        self.random_state = random_state

    def _validate_params(self) -> None:
        """Check every setting; a bad one raises the one-line template error."""
        owner = type(self).__name__
        make_library(self.library, owner)
        if isinstance(self.optimizer, str):
            if self.optimizer not in OPTIMIZERS:
                raise bad_value("optimizer", owner, "one of " + ", ".join(map(repr, OPTIMIZERS))
                                + " or a pysindy optimizer", self.optimizer)
        else:
            import pysindy as ps

            if not isinstance(self.optimizer, ps.BaseOptimizer):
                raise bad_value("optimizer", owner, "one of " + ", ".join(map(repr, OPTIMIZERS))
                                + " or a pysindy optimizer", self.optimizer)
        check_float(self.threshold, "threshold", owner)
        check_float(self.alpha, "alpha", owner)
        if self.max_terms is not None:
            check_int(self.max_terms, "max_terms", owner, low=1)
        if self.terms_per_action is not None:
            check_int(self.terms_per_action, "terms_per_action", owner, low=0)
        check_int(self.ensemble, "ensemble", owner, low=0, high=1000)

    # ------------------------------------------------------------------ fit
    def _make_optimizer(self, threshold: float, n_out: int) -> Any:
        import pysindy as ps

        if not isinstance(self.optimizer, str):
            opt = clone(self.optimizer)
        elif self.optimizer == "stlsq":
            opt = ps.STLSQ(threshold=threshold, alpha=self.alpha, max_iter=20, unbias=True)
        elif self.optimizer == "sr3":
            # L0 prox: a coefficient survives when |c| > sqrt(2 * lam * nu); nu = 1.
            opt = ps.SR3(reg_weight_lam=threshold**2 / 2.0, regularizer="L0", relax_coeff_nu=1.0, max_iter=100,
                         unbias=True)
        else:
            try:
                from pysindy.optimizers import MIOSR  # type: ignore[attr-defined]
            except ImportError:
                raise InvalidParameterError(
                    "optimizer='miosr' needs pysindy's MIOSR, which needs gurobipy and cvxpy: "
                    "pip install 'pysindy[miosr]'.") from None
            per_action = max(1, (self.max_terms or 10 * n_out) // n_out)
            opt = MIOSR(target_sparsity=per_action, alpha=self.alpha, unbias=True)
        if self.ensemble > 0:
            opt = ps.EnsembleOptimizer(opt, bagging=True, n_models=self.ensemble)
        return opt

    def _solve(self, Z: np.ndarray, Yz: np.ndarray, threshold: float) -> tuple[np.ndarray, Any]:
        """Standardised coefficients ``(n_out, n_terms)`` (and the optimiser) for one threshold."""
        import warnings

        opt = self._make_optimizer(threshold, Yz.shape[1])
        state = np.random.get_state()  # pysindy's ensembles draw from NumPy's global generator
        np.random.seed(0 if self.random_state is None else int(self.random_state) % 2**32)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "sparsity parameter is too big" and convergence chatter
                opt.fit(Z, Yz)
        finally:
            np.random.set_state(state)
        coef = np.asarray(opt.coef_, dtype=np.float64).reshape(Yz.shape[1], Z.shape[1])
        return np.where(np.isfinite(coef), coef, 0.0), opt

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SINDyPolicy:
        """Fit to observations ``X`` ``(n, obs_dim)`` and actions ``y`` ``(n, act_dim)``."""
        self._validate_params()
        owner = f"{type(self).__name__}.fit"
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        import scipy.sparse as sp

        if sp.issparse(X) or sp.issparse(y):
            raise TypeError(f"{type(self).__name__} does not accept sparse input: pass dense arrays (a sparse matrix "
                            "or array is not supported).")
        for name, arr in (("X", X), ("y", y)):
            a = np.asarray(arr, dtype=np.float64) if not hasattr(arr, "to_numpy") else arr.to_numpy(np.float64)
            if a.size and not np.all(np.isfinite(a)):
                row = int(np.argwhere(~np.isfinite(a.reshape(len(a), -1)))[0][0])
                raise bad_value(name, owner, "finite numbers (no NaN or inf)", f"a non-finite value in row {row}")
        n_y = len(np.asarray(y)) if not hasattr(y, "shape") else y.shape[0]
        n_x = len(np.asarray(X)) if not hasattr(X, "shape") else X.shape[0]
        if n_x != n_y:
            raise bad_value("y", owner, f"one action row per observation row ({n_x})", f"{n_y} rows")
        X, Y, w = self._fit_inputs(X, y, sample_weight)
        low, high = check_bounds(self.action_low, self.action_high, Y.shape[1], type(self).__name__)
        n, d = X.shape
        wn = w / w.sum()
        active = np.flatnonzero(X.std(axis=0) > 0)  # constant features (e.g. zeroed contact forces) add nothing
        lib = copy.deepcopy(make_library(self.library))  # pysindy's custom library cannot be cloned
        terms: list[list[Factor] | None] = []
        T = np.zeros((n, 0))
        if len(active):
            Xa = X[:, active]
            lib.fit(Xa)
            T = np.asarray(lib.transform(Xa), dtype=np.float64)
            try:
                local = library_terms(lib, len(active))
            except ValueError as exc:
                raise bad_value("library", type(self).__name__, "a polynomial, Fourier or custom pysindy library "
                                "(or their concatenation)", f"{exc}") from None
            terms = [None if t is None else [(f, int(active[j]), a) for f, j, a in t] for t in local]
            probe = EquationsProgram(terms=[t for t in terms if t is not None], intercept=np.zeros(0),
                                     coef=np.zeros((0, sum(t is not None for t in terms))), obs_dim_=d)
            check = probe.term_values(X[:200])
            cols = [i for i, t in enumerate(terms) if t is not None]
            if T.shape[1] != len(terms) or not np.allclose(check, T[:200, cols], rtol=1e-9, atol=1e-12):
                raise bad_value("library", type(self).__name__, "a library whose columns are its declared terms",
                                type(lib).__name__)
        keep = [i for i, t in enumerate(terms) if t is not None]
        T = T[:, keep]
        kept_terms = [terms[i] for i in keep]
        mu = wn @ T
        sd = np.sqrt(wn @ (T - mu) ** 2)
        live = np.flatnonzero(sd > 1e-12 * np.maximum(1.0, np.abs(mu)))
        T, mu, sd = T[:, live], mu[live], sd[live]
        kept_terms = [kept_terms[i] for i in live]
        y_mean = wn @ Y
        y_sd = np.sqrt(wn @ (Y - y_mean) ** 2)
        y_sd = np.where(y_sd > 0, y_sd, 1.0)
        root = np.sqrt(w * n / w.sum())[:, None]
        Z = (T - mu) / sd * root
        Yz = (Y - y_mean) / y_sd * root
        if Z.shape[1] and len(Z) > Z.shape[1] and self.ensemble == 0 and isinstance(self.optimizer, str):
            # The least-squares optimisers see the data only through Z'Z and Z'Y: the QR factor R and Q'Y give
            # the same fits with one row per term instead of one per sample (bagged ensembles resample rows).
            Q, R = np.linalg.qr(Z, mode="reduced")
            Z, Yz = R, Q.T @ Yz
        threshold = float(self.threshold)
        if Z.shape[1]:
            coef_z, opt = self._solve(Z, Yz, threshold)
            if self.max_terms is not None and np.count_nonzero(coef_z) > self.max_terms and \
                    self.optimizer != "miosr":
                coef_z, threshold, opt = self._capped(Z, Yz, threshold, self.max_terms)
            elif self.max_terms is None and self.terms_per_action and self.optimizer != "miosr":
                for k in np.flatnonzero(np.count_nonzero(coef_z, axis=1) > self.terms_per_action):
                    coef_z[k], raised, _ = self._capped(Z, Yz[:, [k]], threshold, self.terms_per_action)
                    threshold = max(threshold, raised)
            self.coef_list_ = (np.asarray(opt.coef_list, dtype=np.float64) if hasattr(opt, "coef_list")
                               else None)
        else:
            coef_z, self.coef_list_ = np.zeros((Y.shape[1], 0)), None
        coef = coef_z * y_sd[:, None] / sd[None, :]
        intercept = y_mean - coef @ mu
        intercept[np.abs(intercept) < 1e-10 * y_sd] = 0.0  # round-off of the centring, not a constant
        self.threshold_ = threshold
        self.program_ = EquationsProgram(terms=kept_terms, intercept=intercept, coef=coef, action_low=low,
                                         action_high=high, term_scale=sd, obs_dim_=d).pruned()
        return self

    def _capped(self, Z: np.ndarray, Yz: np.ndarray, threshold: float, cap: int) -> tuple[np.ndarray, float, Any]:
        """The fit of ``Yz`` with at most ``cap`` non-zero terms: ``(coef_z, threshold, optimiser)``."""
        lower, threshold = self._search_threshold(Z, Yz, threshold, cap)
        coef_z, opt = self._solve(Z, Yz, threshold)
        # Thresholding is not monotone (collinear terms can all drop at once): the largest terms of
        # the fit just below the threshold, refitted, compete with it; the smaller residual wins.
        dense, _ = self._solve(Z, Yz, lower)
        order = np.argsort(-np.abs(dense), axis=None, kind="stable")[:cap]
        mask = np.zeros(dense.size, dtype=bool)
        mask[order] = True
        mask &= dense.ravel() != 0.0
        top = self._refit_support(Z, Yz, mask.reshape(dense.shape))
        # The largest terms overall can all belong to one action and starve the others; the budget shared out
        # term by term, each to the action whose residual falls most, competes too.
        shared = self._shared_out(Z, Yz, cap)
        fits = [c for c in (coef_z, top, shared) if np.count_nonzero(c) <= cap]
        coef_z = min(fits, key=lambda c: float(np.sum((Yz - Z @ c.T) ** 2)))
        return coef_z, threshold, opt

    def _shared_out(self, Z: np.ndarray, Yz: np.ndarray, cap: int) -> np.ndarray:
        """At most ``cap`` terms shared out between the actions by orthogonal matching pursuit: each action's next
        term is the one most correlated with its residual, and the next term of all goes to the action whose
        residual (refitted on its terms) it lowers most."""
        n_actions, n_terms = Yz.shape[1], Z.shape[1]
        norms = np.linalg.norm(Z, axis=0)
        norms[norms == 0] = np.inf

        def refit(o: int, cols: list[int]) -> np.ndarray:
            A = Z[:, cols]
            return Yz[:, o] - A @ np.linalg.solve(A.T @ A + self.alpha * np.eye(len(cols)), A.T @ Yz[:, o])

        chosen: list[list[int]] = [[] for _ in range(n_actions)]
        resid = [Yz[:, o].copy() for o in range(n_actions)]

        def best_next(o: int) -> tuple[float, int, np.ndarray]:
            score = np.abs(Z.T @ resid[o]) / norms
            score[chosen[o]] = -1.0
            j = int(np.argmax(score))
            if score[j] <= 0:
                return 0.0, -1, resid[o]
            r = refit(o, [*chosen[o], j])
            return float(resid[o] @ resid[o] - r @ r), j, r

        nexts = [best_next(o) for o in range(n_actions)]
        for _ in range(cap):
            o = max(range(n_actions), key=lambda k: (nexts[k][0], -k))
            gain, j, r = nexts[o]
            if j < 0 or gain <= 1e-12 * max(1.0, float(resid[o] @ resid[o])):
                break
            chosen[o].append(j)
            resid[o] = r
            nexts[o] = best_next(o)
        mask = np.zeros((n_actions, n_terms), dtype=bool)
        for o, cols in enumerate(chosen):
            mask[o, cols] = True
        return self._refit_support(Z, Yz, mask)

    def _search_threshold(self, Z: np.ndarray, Yz: np.ndarray, start: float, cap: int) -> tuple[float, float]:
        """``(lower, threshold)``: the smallest threshold leaving at most ``cap`` terms (bisection on a log scale,
        on at most :data:`SEARCH_ROWS` rows) and the largest one tried that leaves more."""
        if len(Z) > SEARCH_ROWS:
            rows = np.sort(np.random.default_rng(self.random_state).choice(len(Z), SEARCH_ROWS, replace=False))
            Z, Yz = Z[rows], Yz[rows]
        lo, hi = max(start, 1e-6), max(start, 1e-6) * 2.0
        while np.count_nonzero(self._solve(Z, Yz, hi)[0]) > cap and hi < 1e6:
            lo, hi = hi, hi * 2.0
        for _ in range(12):
            mid = float(np.sqrt(lo * hi))
            if np.count_nonzero(self._solve(Z, Yz, mid)[0]) > cap:
                lo = mid
            else:
                hi = mid
        return lo, hi

    def _refit_support(self, Z: np.ndarray, Yz: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Least squares of each action on its own support (ridge ``alpha``)."""
        out = np.zeros(mask.shape)
        for o in range(mask.shape[0]):
            cols = np.flatnonzero(mask[o])
            if len(cols):
                A = Z[:, cols]
                out[o, cols] = np.linalg.solve(A.T @ A + self.alpha * np.eye(len(cols)), A.T @ Yz[:, o])
        return out

    # ------------------------------------------------------------------ reading
    def equations(self, features: Sequence[str | Signal] | None = None,
                  actions: Sequence[str | Signal] | None = None, *, precision: int = 3) -> list[str]:
        """One line per action in named features, heaviest term first (``|coef| * std(term)``), then the units of
        the features they read (``where thigh_angle [rad], ...``, when given) and the action clipping.

        Names default to ``feature_names_in_`` (fitted on a DataFrame) or ``obs_0 ...``.
        """
        check_is_fitted(self)
        if features is None and hasattr(self, "feature_names_in_"):
            features = [str(f) for f in self.feature_names_in_]
        controller = self.to_controller(features, actions)
        return self.program_.explain(controller, precision=precision).splitlines()
