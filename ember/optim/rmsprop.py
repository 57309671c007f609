"""``RMSprop``: gradients scaled by a running root mean square, optionally centered."""

from __future__ import annotations

from .._backend import xp_of
from .optimizer import (
    Optimizer,
    _check_lr,
    _check_unsupported,
    _lerp_,
    _scalar_state,
    _zeros_like,
)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """``torch.optim.RMSprop``, the same update as torch's ``_single_tensor_rmsprop``."""

    def __init__(self, params, lr=1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_unsupported("RMSprop", differentiable, capturable)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _init_state(self, state, p, group) -> None:
        state["step"] = _scalar_state()
        state["square_avg"] = _zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = _zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = _zeros_like(p)

    def _update(self, d, g, state, group, lr, step) -> None:
        # torch's order of operations, every pass into a scratch array: 4 passes for
        # square_avg, 3 + 3 more when centered, sqrt and eps 2, the step 3 (4 with momentum)
        alpha = group["alpha"]
        xp = xp_of(d)
        t = self._scratch(d)
        sq = state["square_avg"]._data
        sq *= alpha
        xp.multiply(g, 1 - alpha, out=t)
        t *= g
        sq += t
        if group["centered"]:
            ga = state["grad_avg"]._data
            _lerp_(ga, g, 1 - alpha, t)
            xp.multiply(ga, ga, out=t)
            xp.subtract(sq, t, out=t)  # torch's addcmul(ga, ga, value=-1)
            xp.sqrt(t, out=t)
        else:
            xp.sqrt(sq, out=t)
        t += group["eps"]
        xp.divide(g, t, out=t)
        momentum = group["momentum"]
        if momentum > 0:
            buf = state["momentum_buffer"]._data
            buf *= momentum
            buf += t
            xp.multiply(buf, lr, out=t)
        else:
            t *= lr
        d -= t
