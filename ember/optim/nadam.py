"""``NAdam``: Adam with Nesterov momentum (Dozat, 2016), with torch's momentum decay."""

from __future__ import annotations

import numpy as np

from .adam import _check_betas
from .optimizer import (
    Optimizer,
    _bump,
    _check_lr,
    _check_unsupported,
    _lerp_,
    _scalar_state,
    _to_scalar,
    _zeros_like,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """``torch.optim.NAdam``, the same update as torch's ``_single_tensor_nadam``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _check_unsupported("NAdam", differentiable, capturable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            decoupled = group["decoupled_weight_decay"]
            maximize = group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["mu_product"] = _scalar_state(1.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                step_t = state["step"]._data
                step_t += 1
                step = float(step_t)
                bias_correction2 = 1 - beta2 ** step
                d = p._data
                g = p._grad._data
                if maximize:
                    g = -g
                if weight_decay != 0:
                    if decoupled:
                        d *= 1 - lr * weight_decay
                    else:
                        g = g + weight_decay * d
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product_t = state["mu_product"]._data
                mu_product_t *= mu  # a float32 product, as torch's 0-d state tensor
                mu_product = float(mu_product_t)

                m = state["exp_avg"]._data
                v = state["exp_avg_sq"]._data
                _lerp_(m, g, 1 - beta1)
                v *= beta2
                v += (1 - beta2) * g * g
                denom = v / bias_correction2
                np.sqrt(denom, out=denom)
                denom += eps
                mu_product_next = mu_product * mu_next
                d += (-lr * (1.0 - mu) / (1.0 - mu_product)) * g / denom
                d += ((-lr * mu_next) / (1.0 - mu_product_next)) * m / denom
                _bump(p)
        return loss
