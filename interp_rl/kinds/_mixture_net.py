"""The torch module of :mod:`interp_rl.kinds.mixture_training` (imported with torch, by the trainers only)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from interp_rl.kinds.mixture_training import Gating

__all__ = ["NoisyTop1Mixture"]


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

    def _learning(self) -> bool:
        return self.training and torch.is_grad_enabled()

    def scores(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """The router's scores ``(n, n_experts)``, noisy while learning (the noise drawn from ``generator``)."""
        s = self.router(x)
        if self._learning() and self.gating.gate_noise > 0:
            s = s + self.gating.gate_noise * torch.randn(s.shape, generator=generator, dtype=s.dtype,
                                                         device=s.device)
        return s

    def experts(self, x: torch.Tensor) -> torch.Tensor:
        """Every expert's output ``(n, n_experts, act_dim)``."""
        return torch.einsum("bd,mdk->bmk", x, self.experts_w) + self.experts_b

    def balance_loss(self, prob: torch.Tensor) -> torch.Tensor:
        """``load_balance * M * sum_m share_m * mean_prob_m`` for the router's probabilities ``prob``."""
        share = torch.bincount(prob.argmax(dim=1), minlength=self.n_experts).to(prob.dtype) / len(prob)
        return self.gating.load_balance * self.n_experts * (share * prob.mean(dim=0)).sum()

    def regression_loss(self, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor,
                        generator: torch.Generator | None = None) -> torch.Tensor:
        """Distillation's loss: the squared error of each expert on ``y``, expected under the (noisy) router's
        probabilities, averaged with ``weight`` per row; plus the load-balancing loss."""
        p = torch.softmax(self.scores(x, generator), dim=1)
        err = ((self.experts(x) - y[:, None, :]) ** 2).sum(dim=2)
        loss = (weight * (p * err).sum(dim=1)).mean()
        if self.gating.load_balance > 0:
            loss = loss + self.balance_loss(p)
        return loss

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The routed expert's output: its value, with the softmax-weighted mixture's gradient; while learning, the
        load-balancing loss rides on the output into whatever loss is built from it."""
        scores = self.scores(x)
        prob = torch.softmax(scores, dim=1)
        outs = self.experts(x)
        soft = (prob.unsqueeze(2) * outs).sum(dim=1)
        hard = outs[torch.arange(len(x)), scores.argmax(dim=1)]
        out = hard + soft - soft.detach()
        if self._learning() and self.gating.load_balance > 0 and len(x) > 1:
            out = _WithAuxiliaryLoss.apply(out, self.balance_loss(prob))
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
