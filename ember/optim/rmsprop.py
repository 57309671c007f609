"""``RMSprop``: gradients scaled by a running root mean square, optionally centered."""

from __future__ import annotations

import numpy as np

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

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            alpha = group["alpha"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            maximize = group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        state["grad_avg"] = _zeros_like(p)
                state["step"]._data += 1
                d = p._data
                g = p._grad._data
                if maximize:
                    g = -g
                if weight_decay != 0:
                    g = g + weight_decay * d
                sq = state["square_avg"]._data
                sq *= alpha
                sq += (1 - alpha) * g * g
                if centered:
                    ga = state["grad_avg"]._data
                    _lerp_(ga, g, 1 - alpha)
                    avg = sq - ga * ga
                    np.sqrt(avg, out=avg)
                else:
                    avg = np.sqrt(sq)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]._data
                    buf *= momentum
                    buf += g / avg
                    d -= lr * buf
                else:
                    np.divide(g, avg, out=avg)
                    avg *= lr
                    d -= avg
                _bump(p)
        return loss
