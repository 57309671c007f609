"""``Adam`` (and the decoupled weight decay of ``AdamW``), with AMSGrad."""

from __future__ import annotations

from .._backend import xp_of
from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    _check_lr,
    _check_unsupported,
    _lerp_,
    _scalar_state,
    _to_scalar,
    _zeros_like,
)

__all__ = ["Adam"]


def _update_moments(state: dict, g, beta1: float, beta2: float, scratch) -> tuple:
    """The Adam family's moments, in place: exp_avg lerps to g, exp_avg_sq to g * g in torch's
    order of operations (``mul_(beta2).addcmul_(g, g, value=1 - beta2)``, i.e.
    ``v * beta2 + ((1 - beta2) * g) * g``); seven passes through ``scratch``, no temporaries.
    Returns their arrays."""
    m = state["exp_avg"]._data
    v = state["exp_avg_sq"]._data
    _lerp_(m, g, 1 - beta1, scratch)
    v *= beta2
    xp_of(v).multiply(g, 1 - beta2, out=scratch)
    scratch *= g
    v += scratch
    return m, v


def _check_betas(betas, eps, weight_decay) -> None:
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """``torch.optim.Adam``, the same update as torch's ``_single_tensor_adam``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")  # noqa: TRY004 (torch raises ValueError)
        for i in (0, 1):
            if isinstance(betas[i], Tensor) and betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(map(_to_scalar, betas))
        _check_unsupported(type(self).__name__, differentiable, capturable, fused)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)

    def _init_state(self, state, p, group) -> None:
        state["step"] = _scalar_state()
        state["exp_avg"] = _zeros_like(p)
        state["exp_avg_sq"] = _zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _zeros_like(p)

    def _update(self, d, g, state, group, lr, step) -> None:
        beta1, beta2 = group["betas"]
        if isinstance(beta1, Tensor) or isinstance(beta2, Tensor):
            beta1, beta2 = _to_scalar(beta1), _to_scalar(beta2)
        xp = xp_of(d)
        t = self._scratch(d)
        m, v = _update_moments(state, g, beta1, beta2, t)
        if group["amsgrad"]:
            vmax = state["max_exp_avg_sq"]._data
            xp.maximum(vmax, v, out=vmax)
            v = vmax
        # torch: d -= step_size * m / (sqrt(v) / bc2_sqrt + eps), step_size = lr / bc1. With
        # numerator and denominator scaled by bc2_sqrt it is one pass fewer, the same value up
        # to rounding: sqrt, add, divide, multiply, subtract (12 passes in all; were 13, with
        # three temporaries).
        bc2_sqrt = (1 - beta2 ** step) ** 0.5
        xp.sqrt(v, out=t)
        t += group["eps"] * bc2_sqrt
        xp.divide(m, t, out=t)
        t *= lr * bc2_sqrt / (1 - beta1 ** step)
        d -= t
