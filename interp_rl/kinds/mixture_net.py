"""The torch module of :mod:`interp_rl.kinds.mixture_training` (imported with torch, by the trainers only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:  # the settings' type only: mixture_training imports this module, not the other way round
    from interp_rl.kinds.mixture_training import Gating

__all__ = ["NoisyTop1Mixture", "importance_load_loss"]


class _WithAuxiliaryLoss(torch.autograd.Function):
    """Identity on ``out``; its backward also sends gradient 1 into ``aux`` (adds ``aux`` to the loss)."""

    @staticmethod
    def forward(ctx: Any, out: Any, aux: Any) -> Any:
        ctx.dtype = aux.dtype
        return out.view_as(out)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, torch.ones((), dtype=ctx.dtype, device=grad.device)


class NoisyTop1Mixture(nn.Module):
    """A linear router and ``n_experts`` affine experts on ``obs_dim`` inputs and ``act_dim`` outputs.

    Parameters: ``router`` (``nn.Linear``), ``experts_w`` ``(n_experts, obs_dim, act_dim)`` and ``experts_b``
    ``(n_experts, act_dim)``, the experts at zero (the caller initialises them as its method needs).

    Examples
    --------
    >>> from interp_rl.kinds.mixture_training import Gating
    >>> net = NoisyTop1Mixture(3, 1, 2, gating=Gating(gate_noise=0.0, load_balance=0.0)).eval()
    >>> with torch.no_grad():  # the first expert says 1 where x0 > 0, the second -1 elsewhere
    ...     _ = net.router.weight.copy_(torch.tensor([[1.0, 0, 0], [-1.0, 0, 0]]))
    ...     _ = net.router.bias.zero_()
    ...     _ = net.experts_b.copy_(torch.tensor([[1.0], [-1.0]]))
    ...     net(torch.tensor([[2.0, 0, 0], [-2.0, 0, 0]])).squeeze(1).tolist()
    [1.0, -1.0]
    """

    def __init__(self, obs_dim: int, act_dim: int, n_experts: int, *, gating: Gating) -> None:
        super().__init__()
        self.n_experts, self.gating = int(n_experts), gating
        self.router = nn.Linear(obs_dim, n_experts)
        self.experts_w = nn.Parameter(torch.zeros(n_experts, obs_dim, act_dim))
        self.experts_b = nn.Parameter(torch.zeros(n_experts, act_dim))
        if gating.noise == "learnt":  # the noise's scale per state and expert; learnt, never deployed
            self.router_noise = nn.Linear(obs_dim, n_experts)
            with torch.no_grad():
                self.router_noise.weight.zero_()
                self.router_noise.bias.zero_()

    def _learning(self) -> bool:
        return self.training and torch.is_grad_enabled()

    def noise_scale(self, x: torch.Tensor) -> torch.Tensor | None:
        """The standard deviation of the noise on each score while learning ``(n, n_experts)``, ``None`` without."""
        if self.gating.noise == "learnt":
            return torch.nn.functional.softplus(self.router_noise(x))
        if self.gating.gate_noise > 0:
            return torch.full((len(x), self.n_experts), float(self.gating.gate_noise), dtype=x.dtype,
                              device=x.device)
        return None

    def _noisy(self, x: torch.Tensor, generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(scores, clean scores, noise scale)``: the scores noisy while learning (noise drawn from ``generator``)."""
        clean = self.router(x)
        std = self.noise_scale(x) if self._learning() else None
        if std is None:
            return clean, clean, None
        eps = torch.randn(clean.shape, generator=generator, dtype=clean.dtype, device=clean.device)
        return clean + eps * std, clean, std

    def scores(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """The router's scores ``(n, n_experts)``, noisy while learning (the noise drawn from ``generator``)."""
        return self._noisy(x, generator)[0]

    def experts(self, x: torch.Tensor) -> torch.Tensor:
        """Every expert's output ``(n, n_experts, act_dim)``."""
        return torch.einsum("bd,mdk->bmk", x, self.experts_w) + self.experts_b

    def balance_loss(self, prob: torch.Tensor, clean: torch.Tensor | None = None, noisy: torch.Tensor | None = None,
                     std: torch.Tensor | None = None) -> torch.Tensor:
        """The load-balancing loss for the router's probabilities ``prob`` (of the ``noisy`` scores).

        ``'switch'``: ``load_balance * M * sum_m share_m * mean_prob_m``. ``'cv'``: ``load_balance / 2 *
        (CV(importance)^2 + CV(load)^2)``, the importance of expert ``m`` its summed probability, its load the
        summed probability that it is chosen under fresh noise, ``Phi((clean_m - max_{j != m} noisy_j) / std_m)``
        (Shazeer et al.'s smooth load; the count of rows routed to it where there is no noise).
        """
        if self.gating.balance == "switch":
            share = torch.bincount(prob.argmax(dim=1), minlength=self.n_experts).to(prob.dtype) / len(prob)
            return self.gating.load_balance * self.n_experts * (share * prob.mean(dim=0)).sum()
        return self.gating.load_balance * importance_load_loss(prob, clean, noisy, std)


    def regression_loss(self, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor,
                        generator: torch.Generator | None = None) -> torch.Tensor:
        """Distillation's loss: the squared error of each expert on ``y``, expected under the (noisy) router's
        probabilities, averaged with ``weight`` per row; plus the load-balancing loss."""
        noisy, clean, std = self._noisy(x, generator)
        p = torch.softmax(noisy, dim=1)
        err = ((self.experts(x) - y[:, None, :]) ** 2).sum(dim=2)
        loss = (weight * (p * err).sum(dim=1)).mean()
        if self.gating.load_balance > 0:
            loss = loss + self.balance_loss(p, clean, noisy, std)
        return loss

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The routed expert's output: its value, with the softmax-weighted mixture's gradient; while learning, the
        load-balancing loss rides on the output into whatever loss is built from it."""
        scores, clean, std = self._noisy(x)
        prob = torch.softmax(scores, dim=1)
        outs = self.experts(x)
        soft = (prob.unsqueeze(2) * outs).sum(dim=1)
        hard = outs[torch.arange(len(x)), scores.argmax(dim=1)]
        out = hard + soft - soft.detach()
        if self._learning() and self.gating.load_balance > 0 and len(x) > 1:
            out = _WithAuxiliaryLoss.apply(out, self.balance_loss(prob, clean, scores, std))
        return out

    def affine(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(router_intercept (m,), router_coef (m, d), expert_intercept (m, k), expert_coef (m, k, d))`` in the
        inputs' units, as :class:`~interp_rl.kinds.mixture.MixtureProgram` takes them."""
        rb = self.router.bias.detach().double().numpy()
        rw = self.router.weight.detach().double().numpy()
        b = self.experts_b.detach().double().numpy()
        w = self.experts_w.detach().double().numpy().transpose(0, 2, 1)
        return rb, rw, b, w

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        # agents saved before this module took both trainers' place kept the experts as weight (m, k, d) and bias
        if prefix + "weight" in state_dict and prefix + "experts_w" not in state_dict:
            state_dict[prefix + "experts_w"] = state_dict.pop(prefix + "weight").transpose(1, 2).contiguous()
            state_dict[prefix + "experts_b"] = state_dict.pop(prefix + "bias")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def importance_load_loss(prob: torch.Tensor, clean: torch.Tensor | None = None, noisy: torch.Tensor | None = None,
                         std: torch.Tensor | None = None) -> torch.Tensor:
    """``(CV(importance)^2 + CV(load)^2) / 2`` of a top-1 router (Shazeer et al.; SMoSE's balancing loss, unweighted).

    ``prob`` ``(n, M)`` are the probabilities of the ``noisy`` scores; expert ``m``'s importance is their sum, its load
    the summed probability that it is chosen under fresh noise, ``Phi((clean_m - max_{j != m} noisy_j) / std_m)``,
    or the count of rows routed to it where there is no noise (``std`` ``None``).
    """
    n_experts = prob.shape[1]

    def cv2(v: torch.Tensor) -> torch.Tensor:
        return v.var() / (v.mean() ** 2 + 1e-10)

    importance = prob.sum(dim=0)
    if std is None or clean is None or noisy is None or n_experts < 2:
        load = torch.bincount(prob.argmax(dim=1), minlength=n_experts).to(prob.dtype)
    else:
        top2 = torch.topk(noisy, 2, dim=1)
        first = torch.nn.functional.one_hot(top2.indices[:, 0], n_experts).bool()
        threshold = torch.where(first, top2.values[:, 1:2], top2.values[:, 0:1])  # the best of the others
        normal = torch.distributions.Normal(torch.zeros((), dtype=prob.dtype), torch.ones((), dtype=prob.dtype))
        load = normal.cdf((clean - threshold) / std.clamp_min(1e-9)).sum(dim=0)
    return 0.5 * (cv2(importance) + cv2(load))
