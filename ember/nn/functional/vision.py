"""nn.functional vision composites: torch's deprecated ``upsample*`` spellings of interpolate,
and channel_shuffle. The vision primitives (pad, interpolate, grid_sample, affine_grid, ...)
come from ``ember.ops.vision``.
"""

from __future__ import annotations

import warnings

from ..._tensor import Tensor
from ...ops.vision import interpolate

__all__ = ["channel_shuffle", "native_channel_shuffle", "upsample", "upsample_bilinear",
           "upsample_nearest"]


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """``F.upsample``: deprecated by torch in favour of ``interpolate``, which it calls."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """``F.upsample_nearest``: deprecated; interpolate(mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """``F.upsample_bilinear``: deprecated; interpolate(mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``F.channel_shuffle``: (N, g * k, *) with channels reordered as (k, g), a reshape and
    transpose (torch records one ChannelShuffleBackward0 node)."""
    shape = tuple(input.shape)
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    if shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {shape[1]} "
                           f"channels and {groups} groups.")
    if input.numel() == 0:  # nothing to move; a copy, as torch returns (not a view)
        return input.clone()
    n, c, rest = shape[0], shape[1], shape[2:]
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(shape)


native_channel_shuffle = channel_shuffle
