"""The registry of distillation methods: the one list the CLI, the benchmark harness and the demo read.

A :class:`Method` names a distiller, builds its estimator (a :class:`~distill.job.Distillation`
with the method's student) and declares its *options*: the settings a user can give on the
command line (``--max-leaves``), in a config file or in a suite, each mapped to the estimator
parameters it sets (``dagger__student__max_leaves``). Defaults are never written here: an
option's default is the estimator's own (``get_params``), so each default lives in one place.

This module imports no stage: the built-in methods are registered by :mod:`distill.recipes`, which the
``distill`` package imports, so :func:`get_method` finds them whichever module asked first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from interp_rl.errors import InvalidParameterError, bad_value
from interp_rl.validation import check_int

if TYPE_CHECKING:
    from distill.job import Distillation

__all__ = ["JOB_DEFAULTS", "JOB_OPTIONS", "METHODS", "SPEED_ONLY", "Method", "Option", "get_method",
           "register_method"]


@dataclass(frozen=True)
class Option:
    """One setting of a method: its name, what it sets in the estimator, and a line of help."""

    name: str
    """The setting's name (``max_leaves``; on the command line ``--max-leaves``)."""
    params: tuple[str, ...]
    """Estimator parameters it sets, ``get_params(deep=True)`` names; the first gives the default."""
    help: str
    """One line for ``--help``."""
    type: type = int
    """``int``, ``float`` or ``str``: how the command line parses it."""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class JobOption:
    """A setting of the job around every method (final evaluation), with its default."""

    name: str
    default: int
    help: str
    low: int = 1
    """The smallest value allowed."""


#: Settings of every job: the final evaluation of teacher and controller (the benchmark harness
#: evaluates with the suite's own numbers instead).
JOB_OPTIONS = (
    JobOption("eval_episodes", 10, "Final evaluation episodes of teacher and controller."),
    JobOption("fidelity_steps", 2000, "States (teacher- and controller-visited) for action fidelity."),
    JobOption("attribution_states", 200, "Teacher-visited states on which the Shapley importance of teacher and "
              "controller are compared (0: off).", low=0),
    JobOption("top_features", 0, "Read only the teacher's this-many most important features by Shapley value "
              "(0: all).", low=0),
    JobOption("random_features", 0, "Read only this many of the teacher's features, drawn at random with the seed: "
              "the baseline --top-features is judged against (0: all).", low=0),
    JobOption("jobs", 0, "Processes running the DART levels side by side (0: one per level, up to the CPUs); the "
              "controller is the same either way.", low=0),
)

#: Job settings that change how fast a job runs, never what it makes (a run may resume with other values).
#: Each job option's default, by name: the one definition the benchmark suites read too.
JOB_DEFAULTS = {o.name: o.default for o in JOB_OPTIONS}
SPEED_ONLY = frozenset({"jobs"})
#: Job settings that change what is made (which features the controller reads), unlike the evaluation's.
SHAPING = frozenset({"top_features", "random_features"})


def _dagger_options(seed_params: tuple[str, ...] = ("dagger__seed",)) -> tuple[Option, ...]:
    return (
        Option("iterations", ("dagger__n_iter",), "DAgger rounds after the teacher's rollouts; 0 is behaviour "
               "cloning."),
        Option("steps", ("dagger__steps",), "Environment steps per round."),
        Option("beta_decay", ("dagger__beta_decay",), "Round i follows the teacher with probability "
               "beta_decay**i.", float),
        Option("weighting", ("dagger__weighting",), "'auto', 'critic' (VIPER-style, Q-function teachers) or "
               "'none'.", str),
        Option("action_noise", ("dagger__action_noise",), "DART: noise on the executed actions while collecting, in "
               "half action ranges (0: off).", float),
        Option("select_episodes", ("dagger__eval_episodes",), "Held-out episodes scoring each round; the best "
               "round is kept."),
        Option("seed", seed_params, "Random seed of rollouts, student and evaluation."),
    )


def _rl_options() -> tuple[Option, ...]:
    return (
        Option("rl_steps", ("rl__n_steps",), "Fine-tune on the return for this many transitions with an "
               "actor-critic warm-started from the teacher's critic (0: off).", int),
        Option("rl_search", ("rl__search",), "How --rl-steps searches the pieces: 'td3' (actor-critic), 'ars' "
               "(augmented random search, V2-t, no critic) or 'cmaes' (CMA-ES, no critic).", str),
        Option("rl_critic", ("rl__critic",), "'auto' (start from the teacher's Q-networks or value network "
               "when it has one), 'teacher' or 'new'.", str),
        Option("rl_warmup", ("rl__critic_warmup",), "Transitions during which only the critic learns."),
        Option("rl_bc_weight", ("rl__bc_weight",), "Pull towards the teacher's actions while fine-tuning.", float),
        Option("rl_trust_weight", ("rl__trust_weight",), "Pull towards the starting controller's own actions while "
               "fine-tuning (a trust region).", float),
        Option("rl_router", ("rl__router",), "'frozen' (the pieces learn, the routing stays) or 'train' (a "
               "mixture's linear router learns with its experts: SMoSE's noisy top-1 gating, straight-through, "
               "balanced).", str),
        Option("rl_eval_every", ("rl__eval_every",), "Transitions between the fine-tuning's held-out evaluations "
               "(the best one is kept)."),
        Option("rl_levels", ("rl_levels",), "With several DART levels: 'kept' (fine-tune the level chosen before) "
               "or 'each' (fine-tune every level side by side, keep the better on further held-out episodes).", str),
    )


def _repair_options() -> tuple[Option, ...]:
    """Repair from diagnosis after DAgger (``Distillation(repair=FailureRepair(...))``)."""
    return (
        Option("repair_rounds", ("repair__n_rounds",), "Rounds of targeted DAgger from the run-up to the controller's "
               "failures (points of no return found by teacher takeovers), the student refitted; the best round on "
               "held-out episodes is kept (0: off)."),
        Option("repair_episodes", ("repair__episodes",), "Fresh episodes per repair round in which failures are "
               "looked for."),
        Option("repair_window", ("repair__window",), "Steps before each point of no return whose states are "
               "revisited."),
        Option("repair_weight", ("repair__weight",), "Sample weight of the repair rows.", float),
    )


def _restart_options() -> tuple[Option, ...]:
    """Restarts of the final fit (``Distillation(restarts=...)``)."""
    return (
        Option("restarts", ("restarts",), "Fits of the final student with other seeds; the best on held-out episodes "
               "(mean and worst quarter) is kept (1: off)."),
        Option("restart_episodes", ("restart_episodes",), "Held-out episodes scoring each restart."),
        Option("noise_levels", ("noise_levels",), "DART levels to choose between ('0,0.3'): DAgger runs at each, "
               "with its restarts, and the best fit on held-out episodes is kept ('': one run at --action-noise).",
               str),
    )


def _sweep_options(size_flag: str) -> tuple[Option, ...]:
    """The sparsity sweep after DAgger (``Distillation(sweep=...)``) over the method's size option."""
    return (
        Option("sweep", ("sweep",), f"Sparsity sweep after DAgger: comma-separated {size_flag} values ('10,20,40'); "
               "each refit on DAgger's data is scored on held-out episodes and the sparsest within "
               "--sweep-tolerance of the best return is kept ('': off).", str),
        Option("sweep_tolerance", ("sweep_tolerance",), "Share of the best return the kept fit may lose.", float),
        Option("sweep_episodes", ("sweep_episodes",), "Held-out episodes scoring each fit of the sweep."),
    )


@dataclass(frozen=True)
class Method:
    """A distiller as the CLI, the harness and the demo see it."""

    name: str
    description: str
    """One line, shown by ``interp-rl distill --help``."""
    size: str
    """The option a suite's ``sizes`` set (``max_leaves``)."""
    make: Callable[[], Distillation]
    """The estimator with its defaults."""
    options: tuple[Option, ...] = field(default_factory=tuple)
    picture_note: str = ""
    """What the picture's shading or widths mean, for the reports that draw it."""
    budgets: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Named recipes besides the default (``--budget long``): settings over the defaults, under the user's own."""
    size_options: tuple[str, ...] = ()
    """Options besides ``size`` that fix the controller's size: given one of them (or ``size``), a method whose
    default sweeps its size (``sweep``) keeps the size given instead."""

    def option(self, name: str) -> Option:
        for opt in self.options:
            if opt.name == name:
                return opt
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        """Every setting's default: the estimator's own values, then the job's, and the budget (``default``)."""
        params = self.make().get_params(deep=True)
        return {**{o.name: params[o.params[0]] for o in self.options},
                **{j.name: j.default for j in JOB_OPTIONS}, "budget": DEFAULT_BUDGET}

    def budget_settings(self, budget: str, *, owner: str | None = None) -> dict[str, Any]:
        """The settings of the named ``budget`` (``default``: none); an unknown name is a one-line error."""
        if budget == DEFAULT_BUDGET:
            return {}
        if budget not in self.budgets:
            raise bad_value("budget", owner or f"method {self.name!r}",
                            "one of " + ", ".join(map(repr, [DEFAULT_BUDGET, *self.budgets])), budget)
        return dict(self.budgets[budget])

    def distill_settings(self) -> tuple[str, ...]:
        """The settings that shape the distillation itself (DAgger and its student); the others act after it
        (leaf tuning, fine-tuning on the return, merging) or on the evaluation."""
        return tuple(o.name for o in self.options if any(p.startswith("dagger__") for p in o.params))

    def build(self, settings: dict[str, Any]) -> Distillation:
        """The estimator with ``settings`` (option names) applied; validates nothing."""
        est = self.make()
        params: dict[str, Any] = {}
        for opt in self.options:
            if opt.name in settings:
                params.update({p: settings[opt.name] for p in opt.params})
        return est.set_params(**params)

    def resolve(self, settings: dict[str, Any], *, owner: str | None = None,
                spell: Callable[[str], str] = lambda name: name, what: str = "setting") -> dict[str, Any]:
        """Every setting (defaults filled in), validated by the estimator itself.

        A bad value raises the one-line template error in the caller's words: ``spell`` turns an
        option name into what the user typed (``--max-leaves``), ``owner`` names where
        (``interp-rl distill tree``).
        """
        owner = owner or f"method {self.name!r}"
        defaults = self.defaults()
        unknown = sorted(set(settings) - set(defaults))
        if unknown:
            raise InvalidParameterError(
                f"Unknown setting(s) of {owner}: {', '.join(unknown)}; known: {', '.join(sorted(defaults))}.")
        budget = settings.get("budget", DEFAULT_BUDGET)
        try:
            chosen = self.budget_settings(budget, owner=owner) if isinstance(budget, str) else None
        except InvalidParameterError as exc:
            raise exc.renamed(spell("budget"), owner, what=what) from None
        if chosen is None:
            raise bad_value(spell("budget"), owner, "a budget's name", budget)
        resolved = {**defaults, **chosen, **settings}
        sized = any(name in settings for name in (self.size, *self.size_options))
        if sized and "sweep" not in settings and "sweep" not in chosen and resolved.get("sweep"):
            resolved["sweep"] = ""  # a size given is the size kept: a default sweep chooses one only when none is
        try:
            for j in JOB_OPTIONS:
                check_int(resolved[j.name], j.name, owner, low=j.low)
        except InvalidParameterError as exc:
            raise exc.renamed(spell(str(exc.name)), owner, what=what) from None
        try:
            self.build(resolved)._validate_params()
        except InvalidParameterError as exc:
            opt = self._option_for(exc)
            if opt is None:
                raise
            raise exc.renamed(spell(opt.name), owner, what=what) from None
        return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in resolved.items()}

    def _option_for(self, exc: InvalidParameterError) -> Option | None:
        """The option behind an estimator's parameter error (matched by parameter name and class)."""
        if exc.name is None:
            return None
        est = self.make()
        for opt in self.options:
            for path in opt.params:
                *parents, leaf = path.split("__")
                if leaf != exc.name.split(".")[-1]:
                    continue
                obj: Any = est
                for part in parents:
                    obj = obj.get_params(deep=False)[part]
                if exc.owner is not None and exc.owner.split(".")[0] == type(obj).__name__:
                    return opt
        return None


#: name -> method; the CLI's ``distill`` commands, suites and the demo read this.
METHODS: dict[str, Method] = {}

# The default recipe of ``distill moe`` and ``distill tree`` (issue 27; measured by the ``recipe`` suite): DAgger
# at two DART levels (no noise, and 0.3 half action ranges on the executed actions), five fits of the mixture on
# each level's data, the best of all on held-out episodes (mean and worst quarter), then fine-tuning on the return.
# Without noise the controller copies the teacher's own path best; with it, it learns to recover; which pays
# depends on the teacher, and neither choice alone held on every shared teacher (benchmarks/results/smose).
RECIPE_ITERATIONS = 8
RECIPE_NOISE_LEVELS = "0,0.3"
RECIPE_RESTARTS = 5
RECIPE_RL_STEPS = 100_000
#: The budget every method has: its defaults.
DEFAULT_BUDGET = "default"
# The long recipe (issue 44; ``--budget long``): hours instead of half an hour, in the background, resumable. What
# the recipe report named as the next candidate: both DART levels fine-tuned (side by side) and the better kept on
# further held-out episodes, five times the transitions, a mixture's router learning with its experts. Measured on
# 2 cores: about 70-140 transitions a second per level while the actor learns (Walker2d-SAC, the router learning),
# so the two levels side by side take about two hours, distillation included about two and a half.
LONG_RL_STEPS = 500_000
LONG_BUDGET = {"rl_steps": LONG_RL_STEPS, "rl_levels": "each", "rl_eval_every": 50_000}


def register_method(method: Method) -> Method:
    """Add ``method`` to :data:`METHODS` (a second method of the same name replaces the first)."""
    METHODS[method.name] = method
    return method


def get_method(name: str) -> Method:
    """The registered method ``name``, or a one-line error listing them."""
    if name not in METHODS:
        raise bad_value("method", "distill", "one of " + ", ".join(map(repr, sorted(METHODS))), name)
    return METHODS[name]
