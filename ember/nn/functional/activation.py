"""nn.functional activations: the primitives from ``ember.ops.activation``, and the composites
(relu with its ``inplace`` flag, relu6, softsign, tanhshrink) written as torch writes them.
"""

from __future__ import annotations

from ..._tensor import Tensor
from ...ops.activation import (
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    rrelu,
    rrelu_,
    selu,
    selu_,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    threshold,
    threshold_,
)
from ...ops.arithmetic import _check_tensor
from ...ops.inplace import inplace as _inplace
from ...ops.unary import relu as _relu
from ...ops.unary import tanh

__all__ = [
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish",
    "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "log_softmax", "logsigmoid", "mish",
    "prelu", "relu", "relu6", "relu_", "rrelu", "rrelu_", "selu", "selu_", "silu", "softmax",
    "softmin", "softplus", "softshrink", "softsign", "tanhshrink", "threshold", "threshold_"
]


# --------------------------------------------------------------------------- relu family


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.relu``: max(x, 0) (``ReluBackward0``); integer tensors allowed, as in torch."""
    _check_tensor(input, "relu")
    return _inplace(input, _relu) if inplace else _relu(input)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.relu6``: hardtanh(x, 0, 6), recorded as ``HardtanhBackward0`` as in torch."""
    return hardtanh(input, 0.0, 6.0, inplace)


def softsign(input: Tensor) -> Tensor:
    """``F.softsign``: x / (1 + |x|) (a composite, as in torch)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``F.tanhshrink``: x - tanh(x) (a composite, as in torch)."""
    return input - tanh(input)
