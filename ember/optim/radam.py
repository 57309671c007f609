"""``RAdam``: Adam with the variance of the adaptive learning rate rectified (Liu et al.)."""

from __future__ import annotations

from .._backend import xp_of
from .adam import _check_betas, _update_moments
from .optimizer import (
    Optimizer,
    _check_lr,
    _check_unsupported,
    _scalar_state,
    _zeros_like,
)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """``torch.optim.RAdam``, the same update as torch's ``_single_tensor_radam``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        _check_unsupported("RAdam", differentiable, capturable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)

    def _init_state(self, state, p, group) -> None:
        state["step"] = _scalar_state()
        state["exp_avg"] = _zeros_like(p)
        state["exp_avg_sq"] = _zeros_like(p)

    def _update(self, d, g, state, group, lr, step) -> None:
        beta1, beta2 = group["betas"]
        xp = xp_of(d)
        t = self._scratch(d)
        m, v = _update_moments(state, g, beta1, beta2, t)

        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        # torch: d -= m / bc1 * lr [* sqrt(bc2) / (sqrt(v) + eps) * rect]
        xp.divide(m, bias_correction1, out=t)
        t *= lr
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = self._scratch(d, 1)
            xp.sqrt(v, out=adaptive)
            adaptive += group["eps"]
            xp.divide(bias_correction2 ** 0.5, adaptive, out=adaptive)
            t *= adaptive
            t *= rect
        d -= t
