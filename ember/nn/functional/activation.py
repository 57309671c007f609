"""nn.functional activations: the primitives from ``ember.ops.activation``, and the composites
(relu with its ``inplace`` flag, relu6, softsign, tanhshrink, gumbel_softmax) written as torch
writes them; ``F.tanh`` and ``F.sigmoid`` are ``torch.tanh`` and ``torch.sigmoid``.
"""

from __future__ import annotations

import warnings

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
from ...ops.creation import zeros_like as _zeros_like
from ...ops.inplace import inplace as _inplace
from ...ops.unary import relu as _relu
from ...ops.unary import sigmoid, tanh

__all__ = [
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "gumbel_softmax", "hardshrink", "hardsigmoid",
    "hardswish", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "log_softmax",
    "logsigmoid", "mish", "prelu", "relu", "relu6", "relu_", "rrelu", "rrelu_", "selu", "selu_",
    "sigmoid", "silu", "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh",
    "tanhshrink", "threshold", "threshold_"
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


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """``F.gumbel_softmax``: softmax((logits + Gumbel(0, 1) noise) / tau) along ``dim``; with
    ``hard``, the one-hot of its argmax carrying the soft sample's gradient (straight through),
    as torch composes it (the noise is ember's, so samples differ from torch's)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_zeros_like(logits).exponential_().log()  # ~Gumbel(0, 1)
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft  # the reparameterization trick
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
