"""``ember.optim.swa_utils``: Stochastic Weight Averaging and EMA, following torch 2.13.

``AveragedModel`` keeps a deep copy of a model whose parameters (and, with ``use_buffers``,
buffers) are running averages of the model's; ``SWALR`` anneals every group's learning rate
to a fixed ``swa_lr``; ``update_bn`` recomputes BatchNorm statistics for averaged weights.
Torch's ``_foreach_*`` multi-tensor kernels are per-tensor loops here: the same arithmetic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any, Literal

from .._backend import dtypes as _dt
from .._tensor import Tensor
from ..autograd import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from ..ops.creation import tensor
from .lr_scheduler import LRScheduler, _format_param, _warn_get_lr_called_within_step
from .optimizer import Optimizer

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]

PARAM_LIST = tuple[Tensor, ...] | list[Tensor]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[PARAM_LIST, PARAM_LIST, Any], None]:
    """``torch.optim.swa_utils.get_ema_multi_avg_fn``: in place, ``ema.lerp_(p, 1 - decay)``
    for floating tensors, ``ema * decay + p * (1 - decay)`` copied back for integer ones."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list: PARAM_LIST, current_param_list: PARAM_LIST, _) -> None:
        if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[PARAM_LIST, PARAM_LIST, Tensor | int], None]:
    """``torch.optim.swa_utils.get_swa_multi_avg_fn``: the equal-weight running mean, in
    place (``avg.lerp_(p, 1 / (n + 1))`` for floating tensors)."""

    @no_grad()
    def swa_update(averaged_param_list: PARAM_LIST, current_param_list: PARAM_LIST,
                   num_averaged: Tensor | int) -> None:
        if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
            weight = 1 / (num_averaged + 1)
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                p_avg.lerp_(p_model, weight)
        else:
            diffs = [p - a for a, p in zip(averaged_param_list, current_param_list,
                                           strict=True)]
            for p_avg, diff in zip(averaged_param_list, diffs):
                if isinstance(num_averaged, Tensor):  # torch: _foreach_addcdiv_ (ints raise)
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """``torch.optim.swa_utils.get_ema_avg_fn``: ``decay * ema + (1 - decay) * p``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Tensor | int], Tensor]:
    """``torch.optim.swa_utils.get_swa_avg_fn``: ``avg + (p - avg) / (n + 1)``."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(averaged: list[Tensor], current: list[Tensor]) -> dict:
    """torch's ``_group_tensors_by_device_and_dtype`` (keyed by the averaged tensors)."""
    groups: dict[tuple[Any, Any], tuple[list[Tensor], list[Tensor]]] = {}
    for a, p in zip(averaged, current):
        mine, theirs = groups.setdefault((a.device, a.dtype), ([], []))
        mine.append(a)
        theirs.append(p)
    return groups


class AveragedModel(Module):
    """``torch.optim.swa_utils.AveragedModel``: SWA (the default) or EMA of a model's weights.

    ``update_parameters(model)`` copies the model's parameters on its first call, then averages
    with ``avg_fn(avg, p, n_averaged)`` (its result copied in) or ``multi_avg_fn(avgs, ps,
    n_averaged)`` (in place); without either, the equal-weight mean. Buffers are copied, or
    averaged too with ``use_buffers=True``. ``n_averaged`` is a long buffer, in the state dict.
    """

    n_averaged: Tensor

    def __init__(self, model: Module, device=None,
                 avg_fn: Callable[[Tensor, Tensor, Tensor | int], Tensor] | None = None,
                 multi_avg_fn: Callable[[PARAM_LIST, PARAM_LIST, Tensor | int], None]
                 | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=_dt.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """The averaged copy's forward."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s current weights into this copy (torch's order and arithmetic)."""
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        self_detached: list[Tensor] = []
        model_detached: list[Tensor] = []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            self_detached.append(p_averaged.detach())
            model_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)

        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups = _group_by_device_and_dtype(self_detached, model_detached)
                for (device, _), (self_params, model_params) in groups.items():
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn:
                        self.multi_avg_fn(self_params, model_params, n_averaged)
                    else:  # torch's path on the CPU (no foreach kernels there)
                        avg_fn = get_swa_avg_fn()
                        for p_averaged, p_model in zip(self_params, model_params):
                            p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
            else:
                for p_averaged, p_model in zip(self_detached, model_detached):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.detach().copy_(
                        self.avg_fn(p_averaged.detach(), p_model, n_averaged))

        if not self.use_buffers:
            # keep the buffers (BatchNorm statistics) in step with the model's
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """``torch.optim.swa_utils.update_bn``: one pass over ``loader`` in train mode with every
    BatchNorm reset to a cumulative average (``momentum=None``), then momenta and mode restored.
    A batch that is a list or tuple feeds its first element to the model."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for bn_module, momentum in momenta.items():
        bn_module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """``torch.optim.swa_utils.SWALR``: anneals each group's ``lr`` to ``swa_lr`` over
    ``anneal_epochs`` steps (``"cos"`` or ``"linear"``), then holds it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: Literal["cos", "linear"] = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', "
                             f"instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(
                f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float | Tensor]:
        """The next learning rates: each group's lr moved ``anneal_func`` of the way to its
        ``swa_lr`` (recovering the pre-anneal lr from the current one, as torch does)."""
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy: Literal["cos", "linear"]) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and ``anneal_func`` (a bound function)."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and the anneal function from ``_anneal_strategy``."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
