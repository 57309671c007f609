"""nn.functional normalisation: batch_norm, layer_norm, group_norm from
``ember.ops.normalization``; instance_norm (batch_norm on a (1, N*C, ...) view, as in torch) and
local_response_norm, composites.
"""

from __future__ import annotations

from ..._backend import xp_of
from ..._tensor import Tensor, _make
from ...ops.creation import zeros
from ...ops.normalization import batch_norm, group_norm, layer_norm
from ...ops.shape import cat

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm"]


# --------------------------------------------------------------------------- instance norm


def _repeat(t: Tensor | None, n: int) -> Tensor | None:
    """``t`` (C,) tiled n times to (n * C,) (differentiable)."""
    if t is None:
        return None
    c = t._data.shape[0]
    return t.unsqueeze(0).expand(n, c).reshape(n * c)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """``F.instance_norm``: batch_norm of the (1, N*C, ...) view, statistics per sample and
    channel; the running statistics (if given) get the mean over the batch of the updates."""
    shape = input._data.shape
    if use_input_stats:
        prod = 1
        for s in shape[2:]:
            prod *= s
        if prod == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {input.shape}")
    n, c = shape[0], shape[1]
    x = input.contiguous().view(1, n * c, *shape[2:])
    rm = None if running_mean is None else _make(xp_of(running_mean._data).tile(running_mean._data, n))
    rv = None if running_var is None else _make(xp_of(running_var._data).tile(running_var._data, n))
    out = batch_norm(x, rm, rv, _repeat(weight, n), _repeat(bias, n), use_input_stats,
                     momentum, eps)
    for given, tiled in ((running_mean, rm), (running_var, rv)):
        if given is not None and use_input_stats:
            given._data[...] = tiled._data.reshape(n, c).mean(0)
            given._vc[0] += 1
    return out.view(shape)


# --------------------------------------------------------------------------- local response norm


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """``F.local_response_norm``: x / (k + alpha * mean of x^2 over ``size`` neighbouring
    channels (zero-padded)) ** beta. A composite, as in torch."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {dim} dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    shape = input._data.shape
    front, back = size // 2, (size - 1) // 2
    dev = input.device
    parts = [zeros(shape[0], front, *shape[2:], dtype=input.dtype, device=dev), sq,
             zeros(shape[0], back, *shape[2:], dtype=input.dtype, device=dev)]
    padded = cat([p for p in parts if p.shape[1]], 1)
    c = shape[1]
    window = padded[:, 0:c]
    for off in range(1, size):  # a loop over the window's offsets, not over elements
        window = window + padded[:, off:off + c]
    div = (window * (alpha / size) + k) ** beta
    return input / div
