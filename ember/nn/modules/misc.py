"""Shape and vision layers without parameters (torch's ``flatten``, ``upsampling``,
``pixelshuffle``, ``padding``, ``distance``, ``fold`` and ``channelshuffle`` modules)."""

from __future__ import annotations

from collections.abc import Iterable

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = [
    "ChannelShuffle", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
    "ConstantPad2d", "ConstantPad3d", "CosineSimilarity", "Flatten", "Fold", "PairwiseDistance",
    "PixelShuffle", "PixelUnshuffle", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
    "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "Unflatten", "Unfold",
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d",
    "ZeroPad3d",
]


def _ntuple(x, n: int) -> tuple:
    """torch's ``_ntuple(n)``: an iterable as a tuple, else ``x`` repeated n times."""
    return tuple(x) if isinstance(x, Iterable) else (x,) * n


# --------------------------------------------------------------------------- flatten


class Flatten(Module):
    """``nn.Flatten(start_dim=1, end_dim=-1)``."""

    __constants__ = ("start_dim", "end_dim")

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """``nn.Unflatten(dim, unflattened_size)``."""

    __constants__ = ("dim", "unflattened_size")

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        self._require_tuple_int(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def _require_tuple_int(self, input) -> None:
        if isinstance(input, (tuple, list)):
            for idx, elem in enumerate(input):
                if not isinstance(elem, int):
                    raise TypeError("unflattened_size must be tuple of ints, but found element "
                                    f"of type {type(elem).__name__} at pos {idx}")
            return
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                        f"{type(input).__name__}")

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# --------------------------------------------------------------------------- upsampling


class Upsample(Module):
    """``nn.Upsample(size=None, scale_factor=None, mode='nearest', align_corners=None,
    recompute_scale_factor=None)``: ``F.interpolate`` as a layer."""

    __constants__ = ("size", "scale_factor", "mode", "align_corners", "name",
                     "recompute_scale_factor")

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def __setstate__(self, state) -> None:
        if "recompute_scale_factor" not in state:
            state["recompute_scale_factor"] = True
        super().__setstate__(state)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """``nn.UpsamplingNearest2d(size=None, scale_factor=None)``."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``nn.UpsamplingBilinear2d(size=None, scale_factor=None)`` (align_corners=True)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


# --------------------------------------------------------------------------- pixel shuffle


class PixelShuffle(Module):
    """``nn.PixelShuffle(upscale_factor)``: (*, C r^2, H, W) -> (*, C, H r, W r)."""

    __constants__ = ("upscale_factor",)

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``nn.PixelUnshuffle(downscale_factor)``: the inverse of PixelShuffle."""

    __constants__ = ("downscale_factor",)

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """``nn.ChannelShuffle(groups)``: (N, g * k, *) -> channels reordered as (k, g)."""

    __constants__ = ("groups",)

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


# --------------------------------------------------------------------------- padding


class _ConstantPadNd(Module):
    __constants__ = ("padding", "value")
    _n = 0

    def __init__(self, padding, value: float) -> None:
        super().__init__()
        self.value = value
        self.padding = _ntuple(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """``nn.ConstantPad1d(padding, value)``: (left, right) or one int."""

    _n = 2


class ConstantPad2d(_ConstantPadNd):
    """``nn.ConstantPad2d(padding, value)``: (left, right, top, bottom) or one int."""

    _n = 4


class ConstantPad3d(_ConstantPadNd):
    """``nn.ConstantPad3d(padding, value)``: six sides or one int."""

    _n = 6


class ZeroPad1d(ConstantPad1d):
    """``nn.ZeroPad1d(padding)``."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """``nn.ZeroPad2d(padding)``."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """``nn.ZeroPad3d(padding)``."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ModePadNd(Module):
    """Reflection, replication and circular padding: ``F.pad`` with ``_mode``."""

    __constants__ = ("padding",)
    _n = 0
    _mode = ""

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(padding, self._n)

    def _check_input_dim(self, input: Tensor) -> None:
        pass

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """``nn.ReflectionPad1d(padding)``."""

    _n, _mode = 2, "reflect"


class ReflectionPad2d(_ModePadNd):
    """``nn.ReflectionPad2d(padding)``."""

    _n, _mode = 4, "reflect"


class ReflectionPad3d(_ModePadNd):
    """``nn.ReflectionPad3d(padding)``."""

    _n, _mode = 6, "reflect"


class ReplicationPad1d(_ModePadNd):
    """``nn.ReplicationPad1d(padding)``."""

    _n, _mode = 2, "replicate"


class ReplicationPad2d(_ModePadNd):
    """``nn.ReplicationPad2d(padding)``."""

    _n, _mode = 4, "replicate"


class ReplicationPad3d(_ModePadNd):
    """``nn.ReplicationPad3d(padding)``."""

    _n, _mode = 6, "replicate"


class _CircularPadNd(_ModePadNd):
    _mode = "circular"

    def _check_input_dim(self, input: Tensor) -> None:
        lo = self._n // 2 + 1
        if input.dim() != lo and input.dim() != lo + 1:
            raise ValueError(f"expected {lo}D or {lo + 1}D input (got {input.dim()}D input)")


class CircularPad1d(_CircularPadNd):
    """``nn.CircularPad1d(padding)``."""

    _n = 2


class CircularPad2d(_CircularPadNd):
    """``nn.CircularPad2d(padding)``."""

    _n = 4


class CircularPad3d(_CircularPadNd):
    """``nn.CircularPad3d(padding)``."""

    _n = 6


# --------------------------------------------------------------------------- distances


class PairwiseDistance(Module):
    """``nn.PairwiseDistance(p=2.0, eps=1e-6, keepdim=False)`` (the p is kept as ``norm``)."""

    __constants__ = ("norm", "eps", "keepdim")

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """``nn.CosineSimilarity(dim=1, eps=1e-8)``."""

    __constants__ = ("dim", "eps")

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


# --------------------------------------------------------------------------- fold


class Fold(Module):
    """``nn.Fold(output_size, kernel_size, dilation=1, padding=0, stride=1)``: col2im."""

    __constants__ = ("output_size", "kernel_size", "dilation", "padding", "stride")

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """``nn.Unfold(kernel_size, dilation=1, padding=0, stride=1)``: im2col."""

    __constants__ = ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
