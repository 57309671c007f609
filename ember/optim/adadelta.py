"""``Adadelta``: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

from .._backend import xp_of
from .optimizer import Optimizer, _check_lr, _check_unsupported, _scalar_state, _zeros_like

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

    def _init_state(self, state, p, group) -> None:
        state["step"] = _scalar_state()
        state["square_avg"] = _zeros_like(p)
        state["acc_delta"] = _zeros_like(p)

    def _update(self, d, g, state, group, lr, step) -> None:
        # torch's order of operations through two scratch arrays: 16 passes, no temporaries
        rho = group["rho"]
        eps = group["eps"]
        xp = xp_of(d)
        std = self._scratch(d)
        delta = self._scratch(d, 1)
        sq = state["square_avg"]._data
        acc = state["acc_delta"]._data
        sq *= rho
        xp.multiply(g, 1 - rho, out=std)
        std *= g
        sq += std
        xp.add(sq, eps, out=std)
        xp.sqrt(std, out=std)
        xp.add(acc, eps, out=delta)
        xp.sqrt(delta, out=delta)
        delta /= std
        delta *= g
        acc *= rho
        xp.multiply(delta, 1 - rho, out=std)
        std *= delta
        acc += std
        delta *= lr
        d -= delta
