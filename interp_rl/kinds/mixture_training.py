"""Training a top-1 mixture of linear experts with noisy gating: the one trainer distillation and RL share.

A :class:`NoisyTop1Mixture` holds a linear router (one score per expert) and ``M`` affine experts. While it
learns, the router's scores carry Gaussian noise (noisy gating), so that every expert is tried where the
routing has not settled, and the Switch Transformer's load-balancing loss ``M * sum_m share_m * mean_prob_m``
(``share_m``: the rows routed to expert ``m``) keeps every expert in use. Two objectives use it:

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

__all__ = ["DISTILL", "ON_POLICY", "SAC", "Gating", "NoisyTop1Mixture"]  # noqa: F822 - NoisyTop1Mixture: lazily


@dataclass(frozen=True)
class Gating:
    """How a mixture learns its routing."""

    gate_noise: float
    """Standard deviation of the Gaussian noise on the router's scores while learning."""
    load_balance: float
    """Weight of the load-balancing loss (0: off)."""


#: Distilling recorded teacher data: strong noise and balance, since nothing else moves the routing out of the
#: first split the scores happen to make.
DISTILL = Gating(gate_noise=0.5, load_balance=0.05)
#: SMOSE's SAC actor: milder, since SAC's own exploration already visits the states.
SAC = Gating(gate_noise=0.1, load_balance=0.01)
#: PPO, A2C and TRPO's actor: no noise, since their ratio compares with the noiseless routing they collected with.
ON_POLICY = Gating(gate_noise=0.0, load_balance=0.01)


def __getattr__(name: str) -> Any:
    if name == "NoisyTop1Mixture":  # torch is imported only by the trainers that use it
        from interp_rl.kinds._mixture_net import NoisyTop1Mixture

        return NoisyTop1Mixture
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
