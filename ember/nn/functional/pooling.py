"""nn.functional pooling: max/avg and adaptive pools and max unpooling from ``ember.ops.pooling``,
and the lp pools, torch's composites of them.
"""

from __future__ import annotations

import math

from ..._tensor import Tensor
from ...ops.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from ...ops.vision import ntuple

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d", "max_pool1d_with_indices",
    "max_pool2d", "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices",
    "max_unpool1d", "max_unpool2d", "max_unpool3d"
]


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


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """torch.nn.functional.lp_pool3d: avg_pool3d of x**p, times the kernel volume, ** 1/p
    (max_pool3d of |x| for p = inf), as torch composes it."""
    kd, kw, kh = ntuple(kernel_size, 3)
    if norm_type == math.inf:
        return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kd * kw * kh).pow(1.0 / norm_type)
