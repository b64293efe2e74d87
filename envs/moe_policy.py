"""SMOSE trained by RL from scratch: SB3 policies whose actor is a mixture of linear experts.

``interp-rl train --algo sac --policy moe --experts 8`` trains :class:`MixtureSACPolicy`, SMOSE
proper; ``--algo ppo`` (or a2c, trpo) trains :class:`MixturePPOPolicy`. The critic is SB3's
usual MLP; the actor is a top-1 mixture of ``M`` affine experts with a linear router reading
the (normalised) observation directly. The action each state gets is the routed expert's (hard
top-1, as the deployed controller acts); the gradient reaches the router through the softmax
of its scores (straight-through), so routing is learnt with the experts. While training, the
router's scores carry Gaussian noise (noisy gating) and a load-balancing loss (the Switch
Transformer's ``M * sum_m share_m * mean_prob_m``) is added to the actor's gradient, so every
expert gets used.

PPO, A2C and TRPO act with the Gaussian's mean, clipped to the bounds; SAC with ``tanh`` of it,
mapped into the bounds. Either way the trained actor *is* a
:class:`~interp_rl.kinds.mixture.MixtureProgram` on raw observations (``squash="tanh"`` for
SAC; the observation normalisation folds into the affine maps): :func:`mixture_from_model`
writes it out exactly, up to float32 rounding and VecNormalize's ±10σ clip.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.sac.policies import SACPolicy

from interp_rl.errors import bad_value
from interp_rl.kinds.mixture import MixtureProgram
from interp_rl.kinds.mixture_training import GATINGS, ON_POLICY, Gating

__all__ = ["MIXTURE_ALGOS", "MixturePPOPolicy", "MixtureSACPolicy", "mixture_from_model"]

#: Algorithms that train a mixture actor: the on-policy ones act with the clipped Gaussian mean,
#: SAC with its tanh-squashed mean.
MIXTURE_ALGOS = ("ppo", "a2c", "trpo", "sac")


def _head(obs_dim: int, act_dim: int, n_experts: int, gating: Gating) -> Any:
    import torch

    from interp_rl.kinds.mixture_training import NoisyTop1Mixture

    head = NoisyTop1Mixture(obs_dim, act_dim, n_experts, gating=gating)
    with torch.no_grad():
        head.experts_w.copy_(torch.randn(n_experts, obs_dim, act_dim) * 0.01)
        if gating.noise == "learnt":  # SMoSE's start: a router of zero weights, every expert as likely anywhere
            head.router.weight.zero_()
    return head


def _mixture_settings(kwargs: dict[str, Any], owner: str, gating: Gating) -> tuple[int, float, float]:
    from interp_rl.validation import check_float, check_int

    n = check_int(kwargs.pop("n_experts", 8), "n_experts", owner, low=1)
    noise = check_float(kwargs.pop("gate_noise", gating.gate_noise), "gate_noise", owner)
    balance = check_float(kwargs.pop("load_balance", gating.load_balance), "load_balance", owner)
    return n, noise, balance


def _named_gating(kwargs: dict[str, Any], owner: str, default: str) -> tuple[str, Gating]:
    """The ``gating`` policy setting: a name of :data:`~interp_rl.kinds.mixture_training.GATINGS`."""
    from interp_rl.validation import check_choice

    name = check_choice(kwargs.pop("gating", default), "gating", owner, tuple(GATINGS))
    return name, GATINGS[name]


class MixturePPOPolicy(ActorCriticPolicy):  # type: ignore[misc]
    """SB3's actor-critic policy with a mixture-of-linear-experts actor reading the features directly.

    Parameters are SB3's, plus ``n_experts`` (default 8), ``gate_noise`` (standard deviation of
    the noise on the router's scores while training) and ``load_balance`` (weight of the
    load-balancing loss), their defaults :data:`~interp_rl.kinds.mixture_training.ON_POLICY`'s;
    ``net_arch`` defaults to no hidden layer for the actor (it must read the observation itself)
    and two of 64 units for the critic.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.n_experts, self.gate_noise, self.load_balance = _mixture_settings(kwargs, "MixturePPOPolicy", ON_POLICY)
        kwargs.setdefault("net_arch", {"pi": [], "vf": [64, 64]})
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        act_dim = int(np.prod(self.action_space.shape))
        self.action_net = _head(self.mlp_extractor.latent_dim_pi, act_dim, self.n_experts,
                                Gating(gate_noise=self.gate_noise, load_balance=self.load_balance))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "n_experts": self.n_experts,
                "gate_noise": self.gate_noise, "load_balance": self.load_balance}


class MixtureSACPolicy(SACPolicy):  # type: ignore[misc]
    """SB3's SAC policy whose actor's mean is a mixture of linear experts: SMOSE.

    The log-std stays SB3's linear map of the observation (it only explores; the deployed
    controller is the squashed mean). Parameters are SB3's plus ``n_experts`` and ``gating``:
    ``'switch'`` (the class's default, so that agents saved before the choice load as they were
    trained; :data:`~interp_rl.kinds.mixture_training.SAC`: fixed noise ``gate_noise`` and the
    Switch Transformer's balancing, ``load_balance``) or ``'smose'``
    (:data:`~interp_rl.kinds.mixture_training.SMOSE`, SMoSE's own noisy gating with a learnt noise
    scale and importance and load balancing; what ``interp-rl train --policy moe`` asks for). ``net_arch`` defaults to
    no hidden layer for the actor and SAC's two of 256 units for the critics.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.gating, gating = _named_gating(kwargs, "MixtureSACPolicy", "switch")
        self.n_experts, self.gate_noise, self.load_balance = _mixture_settings(kwargs, "MixtureSACPolicy", gating)
        self._gating = Gating(gate_noise=self.gate_noise, load_balance=self.load_balance, noise=gating.noise,
                              balance=gating.balance)
        kwargs.setdefault("net_arch", {"pi": [], "qf": [256, 256]})
        super().__init__(*args, **kwargs)

    def make_actor(self, features_extractor: Any = None) -> Any:
        actor = super().make_actor(features_extractor)
        if len(actor.latent_pi) or actor.use_sde:
            raise bad_value("net_arch", "MixtureSACPolicy", "no hidden layer for the actor ('pi': [])",
                            actor.net_arch)
        act_dim = int(np.prod(self.action_space.shape))
        actor.mu = _head(actor.features_dim, act_dim, self.n_experts, self._gating)
        return actor.to(self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "n_experts": self.n_experts, "gating": self.gating,
                "gate_noise": self.gate_noise, "load_balance": self.load_balance}


def mixture_from_model(model: Any, normalizer: Any = None) -> MixtureProgram:
    """The trained mixture actor of ``model`` as a program on raw observations.

    ``normalizer`` (``(obs - mean) / sqrt(var + eps)``) is folded into the affine maps:
    ``w·z + b`` with ``z = (x - mean) / s`` is ``(w / s)·x + (b - w·mean / s)``.
    """
    sac = isinstance(model.policy, SACPolicy)
    head = model.policy.actor.mu if sac else model.policy.action_net
    if not hasattr(head, "router"):
        raise bad_value("model", "mixture_from_model", "a model trained with --policy moe", type(head).__name__)
    rb, rw, b, w = head.affine()
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
                          router_coef=router_coef, action_low=low, action_high=high,
                          squash="tanh" if sac else "clip")
