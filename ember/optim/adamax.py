"""``Adamax``: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from .._backend import xp_of
from .adam import _check_betas
from .optimizer import (
    Optimizer,
    _check_lr,
    _check_unsupported,
    _lerp_,
    _scalar_state,
    _zeros_like,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """``torch.optim.Adamax``, the same update as torch's ``_single_tensor_adamax``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        _check_unsupported("Adamax", differentiable, capturable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _init_state(self, state, p, group) -> None:
        state["step"] = _scalar_state()
        state["exp_avg"] = _zeros_like(p)
        state["exp_inf"] = _zeros_like(p)

    def _update(self, d, g, state, group, lr, step) -> None:
        # torch: exp_inf = max(exp_inf * beta2, |g| + eps); d.addcdiv_(m, exp_inf, -clr): 11 passes
        beta1, beta2 = group["betas"]
        xp = xp_of(d)
        t = self._scratch(d)
        m = state["exp_avg"]._data
        u = state["exp_inf"]._data
        _lerp_(m, g, 1 - beta1, t)
        u *= beta2
        xp.abs(g, out=t)
        t += group["eps"]
        xp.maximum(u, t, out=u)
        clr = lr / (1 - beta1 ** step)
        xp.divide(m, u, out=t)
        t *= clr
        d -= t
