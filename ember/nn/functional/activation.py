"""nn.functional: Activations and the softmax family: relu, relu6, leaky_relu, elu, selu, celu, gelu, silu, mish, softplus, softsign, hardtanh, hardsigmoid, hardswish, logsigmoid, tanhshrink, softmax, log_softmax, softmin."""

from __future__ import annotations

__all__: list[str] = []
