"""``torch.nn.utils.weight_norm`` (the deprecated hook form): w = g * v / ||v||.

The weight becomes two parameters, ``weight_g`` (the norms) and ``weight_v`` (the direction),
and a forward pre-hook recomputes ``weight`` from them before every forward.
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ... import linalg
from ..._tensor import Tensor
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """``torch.norm_except_dim``: the ``pow``-norm over every dim but ``dim``, kept as size-1
    dims; ``dim=-1`` is the norm of the whole tensor (a 0-d tensor)."""
    if dim == -1:
        return linalg.vector_norm(v, pow)
    keep = dim % v.dim()
    dims = [d for d in range(v.dim()) if d != keep]
    if not dims:  # a 1-d tensor: each entry is its own slice
        return v.abs()
    return linalg.vector_norm(v, pow, dim=dims, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """``torch._weight_norm``: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError(  # noqa: TRY004 (torch's type)
                "The module passed to `WeightNorm` can't have uninitialized "
                "parameters. Make sure to run the dummy forward before applying "
                "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


T_module = TypeVar("T_module", bound=Module)


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Reparametrize ``module.<name>`` as ``<name>_g * <name>_v / ||<name>_v||`` (norm over
    every dim but ``dim``; ``dim=None`` for the whole tensor). Deprecated in torch."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Fold ``<name>_g`` and ``<name>_v`` back into one parameter ``<name>``."""
    remove_norm_hook(module, name, WeightNorm, "weight_norm")
    return module


def remove_norm_hook(module: Module, name: str, kind: type, what: str) -> None:
    """Undo the ``kind`` forward pre-hook (WeightNorm, SpectralNorm) that normalises
    ``module.<name>``: the hook folds its parameters back into ``<name>``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return
    raise ValueError(f"{what} of '{name}' not found in {module}")
