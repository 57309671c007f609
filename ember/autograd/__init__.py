"""``ember.autograd``: ``backward``, ``grad``, ``Function``, grad modes and checks, as in torch."""

from __future__ import annotations

import importlib

from .._backend import xp_of
from .._tensor import Tensor, _make
from . import engine, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .api import backward, grad
from .function import Function, FunctionCtx, InplaceFunction, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # functions shadow the module


def Variable(data, requires_grad: bool = False, volatile: bool = False) -> Tensor:
    """Legacy ``torch.autograd.Variable``: returns the tensor itself (optionally requiring grad)."""
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    if requires_grad:
        data.requires_grad_(True)
    return data


# torch's path to the engine's final callbacks: ``Variable._execution_engine.queue_callback``
Variable._execution_engine = engine


def __getattr__(name: str):
    # Heavy or rarely used parts load on first use, keeping ``import ember`` fast.
    if name in ("functional", "profiler", "forward_ad"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")


__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "InplaceFunction", "Variable", "backward",
    "detect_anomaly", "enable_grad", "grad", "gradcheck", "gradgradcheck", "graph",
    "inference_mode", "is_grad_enabled",
    "is_inference_mode_enabled", "no_grad", "once_differentiable", "set_detect_anomaly",
    "set_grad_enabled",
]
