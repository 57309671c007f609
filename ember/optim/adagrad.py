"""``Adagrad``: per-coordinate learning rates from the running sum of squared gradients."""

from __future__ import annotations

from .._backend import xp_of
from .._tensor import _make
from .optimizer import Optimizer, _check_lr, _check_unsupported, _scalar_state

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
                state["sum"] = _make(xp_of(p._data).full_like(p._data, initial_accumulator_value))

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def share_memory(self) -> None:
        """A no-op: the state already lives in this process's memory."""

    def _init_state(self, state, p, group) -> None:
        # only for a parameter added after construction (torch fills the rest in __init__)
        state["step"] = _scalar_state()
        state["sum"] = _make(xp_of(p._data).full_like(
            p._data, self.defaults["initial_accumulator_value"]))

    def _update(self, d, g, state, group, lr, step) -> None:
        # torch: sum.addcmul_(g, g); d.addcdiv_(g, sqrt(sum) + eps, value=-clr): 7 passes
        xp = xp_of(d)
        t = self._scratch(d)
        clr = lr / (1 + (step - 1) * group["lr_decay"])
        s = state["sum"]._data
        xp.multiply(g, g, out=t)
        s += t
        xp.sqrt(s, out=t)
        t += group["eps"]
        xp.divide(g, t, out=t)
        t *= clr
        d -= t
