"""``Adadelta``: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

import numpy as np

from .optimizer import (
    Optimizer,
    _bump,
    _check_lr,
    _check_unsupported,
    _scalar_state,
    _to_scalar,
    _zeros_like,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """``torch.optim.Adadelta``, the same update as torch's ``_single_tensor_adadelta``."""

    def __init__(self, params, lr=1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_unsupported("Adadelta", differentiable, capturable)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            rho = group["rho"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            maximize = group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                state["step"]._data += 1
                d = p._data
                g = p._grad._data
                if maximize:
                    g = -g
                if weight_decay != 0:
                    g = g + weight_decay * d
                sq = state["square_avg"]._data
                acc = state["acc_delta"]._data
                sq *= rho
                sq += (1 - rho) * g * g
                std = np.sqrt(sq + eps)
                delta = np.sqrt(acc + eps)
                delta /= std
                delta *= g
                acc *= rho
                acc += (1 - rho) * delta * delta
                delta *= lr
                d -= delta
                _bump(p)
        return loss
