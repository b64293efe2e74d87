"""Training a top-1 mixture of linear experts with noisy gating: the one trainer distillation and RL share.

A :class:`NoisyTop1Mixture` holds a linear router (one score per expert) and ``M`` affine experts. While it
learns, the router's scores carry Gaussian noise (noisy gating), so that every expert is tried where the
routing has not settled, and the Switch Transformer's load-balancing loss ``M * sum_m share_m * mean_prob_m``
(``share_m``: the rows routed to expert ``m``) keeps every expert in use. SMoSE's own gating (Vincze et al.,
AAAI-25, as its authors' code trains it) is the other choice: Shazeer et al.'s noisy top-k gating, whose noise has
a *learnt* scale per state and expert (``eps * softplus(W_noise x + b_noise)``; the actor is pushed to explore the
expert space where the router is unsure), with the squared coefficients of variation of the experts' importance
(summed probabilities) and of their load (the probability, under fresh noise, that each expert is chosen) as the
balancing loss. Two objectives use it:

* distillation (:class:`distill.MixturePolicy`) fits recorded teacher actions:
  :meth:`NoisyTop1Mixture.regression_loss`, the squared error expected under the router's probabilities;
* RL (:mod:`envs.moe_policy`: SMOSE's SAC actor, PPO's) acts with the routed expert's output, as the deployed
  controller does: :meth:`NoisyTop1Mixture.forward`, hard top-1 value with the softmax's gradient
  (straight-through), the load-balancing loss added to whatever loss the algorithm builds on it.

The gating defaults of each use are defined here once (:data:`DISTILL`, :data:`SAC`, :data:`ON_POLICY`).
Trained, the module is a :class:`~interp_rl.kinds.mixture.MixtureProgram` (:meth:`NoisyTop1Mixture.affine`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DISTILL", "GATINGS", "ON_POLICY", "SAC", "SMOSE", "Gating", "NoisyTop1Mixture"]  # noqa: F822 - NoisyTop1Mixture: lazily


@dataclass(frozen=True)
class Gating:
    """How a mixture learns its routing."""

    gate_noise: float
    """Standard deviation of the Gaussian noise on the router's scores while learning."""
    load_balance: float
    """Weight of the load-balancing loss (0: off)."""
    noise: str = "fixed"
    """``'fixed'``: Gaussian noise of standard deviation :attr:`gate_noise`; ``'learnt'``: Shazeer et al.'s noisy
    gating, ``eps * softplus(W_noise x + b_noise)`` with ``W_noise`` learnt with the router (:attr:`gate_noise`
    unused)."""
    balance: str = "switch"
    """``'switch'``: the Switch Transformer's ``M * sum_m share_m * mean_prob_m``; ``'cv'``: Shazeer et al.'s
    ``(CV(importance)^2 + CV(load)^2) / 2``, as SMoSE's code adds it."""

    def __post_init__(self) -> None:
        from interp_rl.validation import check_choice

        check_choice(self.noise, "noise", "Gating", ("fixed", "learnt"))
        check_choice(self.balance, "balance", "Gating", ("switch", "cv"))


#: Distilling recorded teacher data: strong noise and balance, since nothing else moves the routing out of the
#: first split the scores happen to make.
DISTILL = Gating(gate_noise=0.5, load_balance=0.05)
#: SMOSE's SAC actor: milder, since SAC's own exploration already visits the states.
SAC = Gating(gate_noise=0.1, load_balance=0.01)
#: SMoSE's own gating (its authors' code): learnt noise scale, importance and load balancing at 0.01, the
#: router starting at zero weights (every expert equally likely where nothing is learnt yet).
SMOSE = Gating(gate_noise=0.0, load_balance=0.01, noise="learnt", balance="cv")
#: PPO, A2C and TRPO's actor: no noise, since their ratio compares with the noiseless routing they collected with.
ON_POLICY = Gating(gate_noise=0.0, load_balance=0.01)
#: The gatings a user names (``policy_kwargs={"gating": NAME}``, ``--rl-gating NAME``).
GATINGS = {"smose": SMOSE, "switch": SAC}


def __getattr__(name: str) -> Any:
    if name == "NoisyTop1Mixture":  # torch is imported only by the trainers that use it
        from interp_rl.kinds.mixture_net import NoisyTop1Mixture

        return NoisyTop1Mixture
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
