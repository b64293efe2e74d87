"""SMOSE trained by RL from scratch: an SB3 actor-critic policy whose actor is a mixture of linear experts.

``interp-rl train --algo ppo --policy moe --experts 8`` trains :class:`MixturePPOPolicy`: the
critic is SB3's usual MLP, the actor is a top-1 mixture of ``M`` affine experts with a linear
router reading the (normalised) observation directly. The action each state gets is the
routed expert's (hard top-1, as the deployed controller acts); the gradient reaches the router
through the softmax of its scores (straight-through), so routing is learnt with the experts.

PPO, A2C and TRPO act with the Gaussian's mean, clipped to the action bounds, so the trained
policy *is* a :class:`~interp_rl.kinds.mixture.MixtureProgram` on raw observations (the
observation normalisation folds into the affine maps): :func:`mixture_from_model` writes it
out exactly, up to float32 rounding and VecNormalize's ±10σ clip. SAC squashes its actions with
``tanh``, which no transparent program here reproduces; it is refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.policies import ActorCriticPolicy

from interp_rl.errors import bad_value
from interp_rl.kinds.mixture import MixtureProgram

__all__ = ["MIXTURE_ALGOS", "MixturePPOPolicy", "mixture_from_model"]

#: Algorithms whose deterministic action is the (clipped) Gaussian mean.
MIXTURE_ALGOS = ("ppo", "a2c", "trpo")


def _head(obs_dim: int, act_dim: int, n_experts: int) -> Any:
    import torch
    from torch import nn

    class MixtureHead(nn.Module):
        """Router and experts; hard top-1 value, soft (straight-through) gradient."""

        def __init__(self) -> None:
            super().__init__()
            self.router = nn.Linear(obs_dim, n_experts)
            self.weight = nn.Parameter(torch.randn(n_experts, act_dim, obs_dim) * 0.01)
            self.bias = nn.Parameter(torch.zeros(n_experts, act_dim))

        def forward(self, x: Any) -> Any:
            scores = self.router(x)
            outs = torch.einsum("nd,mkd->nmk", x, self.weight) + self.bias
            soft = (torch.softmax(scores, dim=1).unsqueeze(2) * outs).sum(dim=1)
            hard = outs[torch.arange(len(x)), scores.argmax(dim=1)]
            return hard + soft - soft.detach()

    return MixtureHead()


class MixturePPOPolicy(ActorCriticPolicy):  # type: ignore[misc]
    """SB3's actor-critic policy with a mixture-of-linear-experts actor reading the features directly.

    Parameters are SB3's, plus ``n_experts``; ``net_arch`` defaults to no hidden layer for the
    actor (it must read the observation itself) and two of 64 units for the critic.
    """

    def __init__(self, *args: Any, n_experts: int = 8, **kwargs: Any) -> None:
        self.n_experts = n_experts
        kwargs.setdefault("net_arch", {"pi": [], "vf": [64, 64]})
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        act_dim = int(np.prod(self.action_space.shape))
        self.action_net = _head(self.mlp_extractor.latent_dim_pi, act_dim, self.n_experts)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "n_experts": self.n_experts}


def mixture_from_model(model: Any, normalizer: Any = None) -> MixtureProgram:
    """The trained mixture actor of ``model`` as a program on raw observations.

    ``normalizer`` (``(obs - mean) / sqrt(var + eps)``) is folded into the affine maps:
    ``w·z + b`` with ``z = (x - mean) / s`` is ``(w / s)·x + (b - w·mean / s)``.
    """
    head = model.policy.action_net
    if not hasattr(head, "router"):
        raise bad_value("model", "mixture_from_model", "a model trained with --policy moe", type(head).__name__)
    w = head.weight.detach().double().numpy()  # (m, k, d)
    b = head.bias.detach().double().numpy()  # (m, k)
    rw = head.router.weight.detach().double().numpy()  # (m, d)
    rb = head.router.bias.detach().double().numpy()  # (m,)
    d = w.shape[2]
    mean, scale = np.zeros(d), np.ones(d)
    if normalizer is not None:
        mean = np.asarray(normalizer.mean, dtype=np.float64)
        scale = np.sqrt(np.asarray(normalizer.var, dtype=np.float64) + normalizer.epsilon)
    coef = w / scale
    router_coef = rw / scale
    low = np.asarray(model.action_space.low, dtype=np.float64)
    high = np.asarray(model.action_space.high, dtype=np.float64)
    return MixtureProgram(expert_intercept=b - coef @ mean, expert_coef=coef, router_intercept=rb - router_coef @ mean,
                          router_coef=router_coef, action_low=low, action_high=high)
