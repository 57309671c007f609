"""``Adagrad``: per-coordinate learning rates from the running sum of squared gradients."""

from __future__ import annotations

import numpy as np

from .._tensor import _make
from .optimizer import Optimizer, _bump, _check_lr, _check_unsupported, _scalar_state, _to_scalar

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """``torch.optim.Adagrad``, the same update as torch's ``_single_tensor_adagrad``."""

    def __init__(self, params, lr=1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_unsupported("Adagrad", differentiable, fused=fused)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        # torch fills the state of every parameter at construction
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _scalar_state()
                state["sum"] = _make(np.full_like(p._data, initial_accumulator_value))

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def share_memory(self) -> None:
        """A no-op: NumPy state already lives in this process's memory."""

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            lr_decay = group["lr_decay"]
            weight_decay = group["weight_decay"]
            eps = group["eps"]
            maximize = group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["sum"] = _make(np.full_like(
                        p._data, self.defaults["initial_accumulator_value"]))
                step_t = state["step"]._data
                step_t += 1
                step = float(step_t)
                d = p._data
                g = p._grad._data
                if maximize:
                    g = -g
                if weight_decay != 0:
                    g = g + weight_decay * d
                clr = lr / (1 + (step - 1) * lr_decay)
                s = state["sum"]._data
                s += g * g
                std = np.sqrt(s)
                std += eps
                np.divide(g, std, out=std)
                std *= clr
                d -= std
                _bump(p)
        return loss
