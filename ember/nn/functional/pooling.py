"""nn.functional: Pooling: max/avg pool 1d/2d, adaptive pools, lp pools.

Max pools take the running maximum over the kernel offsets of a window view (one vectorised
step per offset, torch's tie rule: the first maximum wins, a NaN always wins) and record flat
indices into each input plane; their derivative scatters the gradient to those indices, and
that scatter's derivative gathers from them. Average pools are separable linear maps
(``vision.AxisMap``): k strided taps along each axis, weighted by torch's divisor. The 1-d
forms run the 2-d op on an unsqueezed input, as torch does (so their node is SqueezeBackward1).
"""

from __future__ import annotations

import math

from ..._tensor import Tensor
from ...ops.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
)
from .vision import ntuple

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "lp_pool1d", "lp_pool2d", "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices"]



# --------------------------------------------------------------------------- lp pools

def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """torch.nn.functional.lp_pool2d: (sum over the window of x**p) ** (1/p), torch's
    composite of avg_pool2d (max_pool2d of |x| for p = inf)."""
    kw, kh = ntuple(kernel_size, 2)
    if norm_type == math.inf:
        return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """torch.nn.functional.lp_pool1d (avg_pool1d of x**p, times the kernel size, ** 1/p)."""
    if norm_type == math.inf:
        return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kernel_size).pow(1.0 / norm_type)
