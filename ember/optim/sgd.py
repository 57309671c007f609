"""``SGD``: stochastic gradient descent with momentum, dampening and Nesterov momentum."""

from __future__ import annotations

from .._backend import xp_of
from .._tensor import _make
from .optimizer import Optimizer, _bump, _check_unsupported

__all__ = ["SGD"]


class SGD(Optimizer):
    """``torch.optim.SGD``, the same update as torch's ``_single_tensor_sgd``."""

    def __init__(self, params, lr=1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay=0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_unsupported("SGD", differentiable, fused=fused)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def _has_state(self, group) -> bool:
        return group["momentum"] != 0

    def _update(self, d, g, state, group, lr, step) -> None:
        # torch's order: buf * momentum + (1 - dampening) * g; nesterov g + momentum * buf;
        # d + (-lr) * g. Three passes without momentum's first step (two without momentum).
        xp = xp_of(d)
        t = self._scratch(d)
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = _make(g.copy())
            else:
                b = buf._data
                b *= momentum
                dampening = group["dampening"]
                if dampening == 0:
                    b += g  # (1 - 0) * g is g exactly: one pass fewer
                else:
                    xp.multiply(g, 1 - dampening, out=t)
                    b += t
                _bump(buf)
            if group["nesterov"]:
                xp.multiply(buf._data, momentum, out=t)
                t += g
                g = t
            else:
                g = buf._data
        xp.multiply(g, lr, out=t)
        d -= t
