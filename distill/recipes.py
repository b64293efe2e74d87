"""The built-in methods: each a :class:`~distill.registry.Method` registered with its student, stages and options.

Adding a distiller: write its student (``fit``/``predict``/``to_controller``) and program kind,
then :func:`~distill.registry.register_method` a :class:`~distill.registry.Method` (here for a built-in, or in
your own module). ``interp-rl distill NAME``, suites (``method = "NAME"``), reports and the demo pick it up.
"""

from __future__ import annotations

from distill.critic_tuning import CriticTuner
from distill.dagger import DAgger
from distill.failure_repair import FailureRepair
from distill.from_scratch import ScratchTrainer
from distill.job import Distillation
from distill.leaf_search import LeafTuner
from distill.linear import LinearPolicy
from distill.moe import MixturePolicy
from distill.prelu import PReLUPolicy
from distill.registry import (
    LONG_BUDGET,
    RECIPE_ITERATIONS,
    RECIPE_NOISE_LEVELS,
    RECIPE_RESTARTS,
    RECIPE_RL_STEPS,
    Method,
    Option,
    _dagger_options,
    _repair_options,
    _restart_options,
    _rl_options,
    _sweep_options,
    register_method,
)
from distill.silver import SILVERPolicy
from distill.sindy import SINDyPolicy
from distill.tree import TreePolicy

__all__: list[str] = []


register_method(Method(
    name="tree",
    description="decision tree with sparse-linear or constant leaves (DAgger)",
    size="max_leaves",
    make=lambda: Distillation(dagger=DAgger(TreePolicy(), n_iter=RECIPE_ITERATIONS), tuner=LeafTuner(n_iter=0),
                              rl=CriticTuner(n_steps=RECIPE_RL_STEPS), sweep_param="max_leaves",
                              repair=FailureRepair(), noise_levels=RECIPE_NOISE_LEVELS),
    options=(
        Option("max_leaves", ("dagger__student__max_leaves",), "Leaf limit."),
        Option("max_depth", ("dagger__student__max_depth",), "Depth limit."),
        Option("leaf_model", ("dagger__student__leaf_model",), "'linear' or 'constant' leaves.", str),
        Option("max_leaf_terms", ("dagger__student__max_leaf_terms",), "Features per action in a linear leaf "
               "(none: all)."),
        Option("split_on", ("dagger__student__split_on",), "'auto', 'constant' (CART), 'linear' (model tree) or "
               "'residual' (CART on a global linear fit's residual).", str),
        *_dagger_options(("dagger__seed", "tuner__seed", "rl__seed", "repair__seed")),
        *_sweep_options("--max-leaves"),
        *_repair_options(),
        *_restart_options(),
        Option("tune_iterations", ("tuner__n_iter",), "ARS updates of the leaves on the return after "
               "distillation (0: off)."),
        Option("tune_directions", ("tuner__n_directions",), "Random directions per ARS update."),
        Option("tune_step", ("tuner__step_size",), "ARS step size.", float),
        Option("tune_noise", ("tuner__noise",), "ARS perturbation, in action units.", float),
        *_rl_options(),
        Option("collapse_atol", ("collapse_atol",), "Merge sibling leaves whose parameters differ by at most "
               "this (0: off).", float),
    ),
    picture_note="shading: share of visited states per leaf",
    budgets={"long": dict(LONG_BUDGET)},
))

register_method(Method(
    name="linear",
    description="sparse linear policy, one equation per action (DAgger)",
    size="max_terms",
    make=lambda: Distillation(dagger=DAgger(LinearPolicy()), rl=CriticTuner(), sweep_param="max_terms",
                              repair=FailureRepair(), scratch=ScratchTrainer(algo="ars")),
    options=(
        Option("max_terms", ("dagger__student__max_terms",), "Features per action (none: all)."),
        Option("alpha", ("dagger__student__alpha",), "Ridge penalty on standardised features.", float),
        Option("scratch_steps", ("scratch__n_steps",), "Instead of distilling, search a dense linear policy by "
               "augmented random search from zeros for this many environment steps on the teacher's task (the "
               "task's ARS settings); the teacher is only the yardstick (0: off).", int),
        Option("scratch_algo", ("scratch__algo",), "The search of --scratch-steps: 'ars' or 'cmaes' (CMA-ES, with "
               "the task's survival-bonus offset and normalisation).", str),
        *_dagger_options(("dagger__seed", "rl__seed", "scratch__seed", "repair__seed")),
        *_sweep_options("--max-terms"),
        *_repair_options(),
        *_restart_options(),
        *_rl_options(),
    ),
    picture_note="edge width: typical size of the term in visited states",
))

register_method(Method(
    name="moe",
    description="mixture of sparse linear experts and a router (SMOSE; DAgger)",
    size="experts",
    make=lambda: Distillation(dagger=DAgger(MixturePolicy(), n_iter=RECIPE_ITERATIONS),
                              rl=CriticTuner(n_steps=RECIPE_RL_STEPS), scratch=ScratchTrainer(),
                              repair=FailureRepair(), restarts=RECIPE_RESTARTS, noise_levels=RECIPE_NOISE_LEVELS),
    options=(
        Option("experts", ("dagger__student__n_experts",), "Number of linear experts."),
        Option("router", ("dagger__student__router",), "'linear' (the highest score acts), 'tree' (one decision "
               "tree distilled from it) or 'trees' (one score tree per expert).", str),
        Option("router_depth", ("dagger__student__router_depth",), "Depth limit of the routing tree."),
        Option("max_terms", ("dagger__student__max_terms",), "Features per action in each expert (none: as many as "
               "--max-parameters allows)."),
        Option("max_parameters", ("dagger__student__max_parameters",), "Non-zero parameters the whole controller "
               "may have when --max-terms is not given (none: no limit)."),
        Option("load_balance", ("dagger__student__load_balance",), "Weight of the load-balancing loss (0: off).",
               float),
        Option("gate_noise", ("dagger__student__gate_noise",), "Noise on the router's scores while training.",
               float),
        Option("train_steps", ("dagger__student__n_steps",), "Gradient steps of the end-to-end training."),
        *_dagger_options(("dagger__seed", "rl__seed", "scratch__seed", "repair__seed")), *_repair_options(),
        *_restart_options(),
        *_rl_options(),
        Option("scratch_steps", ("scratch__n_steps",), "Instead of distilling, train the mixture (linear router) by "
               "RL from scratch for this many environment steps on the teacher's task; the teacher is only the "
               "yardstick (0: off).", int),
        Option("scratch_algo", ("scratch__algo",), "The RL algorithm of --scratch-steps: sac, ppo, a2c or trpo.",
               str),
    ),
    picture_note="shading: share of visited states per expert",
    budgets={"long": {**LONG_BUDGET, "rl_router": "train"}},
))

register_method(Method(
    name="prelu",
    description="small ReLU network converted exactly into its activation regions: an oblique tree (DAgger)",
    size="hidden",
    make=lambda: Distillation(dagger=DAgger(PReLUPolicy()), rl=CriticTuner(), repair=FailureRepair()),
    options=(
        Option("hidden", ("dagger__student__hidden",), "Hidden layer widths, comma-separated ('8,8'; one to three "
               "layers).", str),
        Option("train_steps", ("dagger__student__n_steps",), "Gradient steps of the network's training."),
        Option("widen", ("dagger__student__widen",), "The conversion's domain box: the distillation states' range "
               "widened by this share on each side.", float),
        *_dagger_options(("dagger__seed", "rl__seed", "repair__seed")),
        *_repair_options(),
        *_restart_options(),
        *_rl_options(),
    ),
    picture_note="shading: share of visited states per region",
))

register_method(Method(
    name="sindy",
    description="sparse equations over a library of terms (SINDy policy, pysindy; DAgger)",
    size="max_terms",
    size_options=("terms_per_action",),
    # No size given, the size is chosen as --sweep does: the threshold alone (every term it keeps) and at most
    # 8, 16, 32 or 64 terms, each refitted on DAgger's data and scored on held-out episodes, the sparsest within 5% of
    # the best return kept. A fixed cap (8 terms an action) kept 30% of a held-out Hopper agent's return where the
    # threshold alone (88 terms) kept 95%; a default short but useless is no better than one that is long.
    make=lambda: Distillation(dagger=DAgger(SINDyPolicy(terms_per_action=0)), rl=CriticTuner(),
                              sweep="8,16,32,64", sweep_param="max_terms", repair=FailureRepair()),
    options=(
        Option("max_terms", ("dagger__student__max_terms",), "Non-zero terms of the whole controller, all actions "
               "together (none: as the threshold leaves)."),
        Option("terms_per_action", ("dagger__student__terms_per_action",), "Non-zero terms of each action's "
               "equation when --max-terms is not given (0: as the threshold leaves). Without --max-terms, "
               "--terms-per-action or --sweep, the size is swept (--sweep 8,16,32,64, the threshold alone too)."),
        Option("library", ("dagger__student__library",), "Candidate terms: 'polyD', 'fourierK', 'custom:tanh,abs' "
               "(sin, cos, tanh, exp, abs), joined by '+'.", str),
        Option("optimizer", ("dagger__student__optimizer",), "Sparse regression: 'stlsq', 'sr3' or 'miosr'.", str),
        Option("threshold", ("dagger__student__threshold",), "Smallest standardised coefficient kept (a share of "
               "the action's standard deviation).", float),
        Option("alpha", ("dagger__student__alpha",), "Ridge penalty of the least squares (standardised terms).",
               float),
        Option("ensemble", ("dagger__student__ensemble",), "Bagged fits whose median coefficients are kept "
               "(pysindy's EnsembleOptimizer; 0: one fit)."),
        *_dagger_options(("dagger__seed", "rl__seed", "repair__seed")),
        *_sweep_options("--max-terms"),
        *_repair_options(),
        *_restart_options(),
        *_rl_options(),
    ),
    picture_note="edge width: typical size of the term in visited states",
))

register_method(Method(
    name="silver",
    description="argmax rule with a few coefficients through the teacher's Shapley values (SILVER; discrete tasks)",
    size="max_terms",
    make=lambda: Distillation(dagger=DAgger(SILVERPolicy(), n_iter=4)),
    options=(
        Option("clusters", ("dagger__student__clusters",), "How Shapley vectors are grouped before the boundary: "
               "'actions' (by the teacher's class) or 'kmeans' (unsupervised, as the SILVER paper).", str),
        Option("n_clusters", ("dagger__student__n_clusters",), "k-means clusters with --clusters kmeans (none: one "
               "per class)."),
        Option("C", ("dagger__student__C",), "Inverse L1 strength of the boundary in Shapley space (smaller: fewer "
               "terms).", float),
        Option("boundary", ("dagger__student__boundary",), "'refit' (the boundary refitted on the raw features the "
               "Shapley-space rule kept) or 'shapley' (carried back from Shapley space as it is, as the paper).", str),
        Option("max_terms", ("dagger__student__max_terms",), "Features the rule may read (none: as the L1 boundary "
               "leaves)."),
        Option("shapley_states", ("dagger__student__shapley_states",), "Teacher-visited states whose Shapley values "
               "are computed in each round."),
        *_dagger_options(),
    ),
    picture_note="shading: share of visited states per class",
))
