"""``NAdam``: Adam with Nesterov momentum (Dozat, 2016), with torch's momentum decay."""

from __future__ import annotations

from .._backend import xp_of
from .._backend.trace import symbolic as _symbolic
from .adam import _check_betas, _update_moments
from .optimizer import (
    Optimizer,
    _check_lr,
    _check_unsupported,
    _scalar_state,
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

    def _init_state(self, state, p, group) -> None:
        state["step"] = _scalar_state()
        state["mu_product"] = _scalar_state(1.0)
        state["exp_avg"] = _zeros_like(p)
        state["exp_avg_sq"] = _zeros_like(p)

    def _update(self, d, g, state, group, lr, step) -> None:
        beta1, beta2 = group["betas"]
        momentum_decay = group["momentum_decay"]
        bias_correction2 = 1 - beta2 ** step
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product_t = state["mu_product"]._data
        mu_product_t *= mu  # a float32 product, as torch's 0-d state tensor
        mu_product = _symbolic(mu_product_t)  # .item(); traced by ember.compile

        xp = xp_of(d)
        t = self._scratch(d)
        m, v = _update_moments(state, g, beta1, beta2, t)
        xp.divide(v, bias_correction2, out=t)
        xp.sqrt(t, out=t)
        t += group["eps"]  # t is torch's denom from here on
        mu_product_next = mu_product * mu_next
        # torch's two addcdiv_: d + (c * g) / denom, then d + (c' * m) / denom (16 passes)
        u = self._scratch(d, 1)
        xp.multiply(g, -lr * (1.0 - mu) / (1.0 - mu_product), out=u)
        u /= t
        d += u
        xp.multiply(m, (-lr * mu_next) / (1.0 - mu_product_next), out=u)
        u /= t
        d += u
