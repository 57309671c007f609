"""Pooling layers (``torch.nn.MaxPool1d/2d/3d``, ``AvgPool1d/2d/3d``, ``LPPool1d/2d/3d``,
``AdaptiveAvgPool1d/2d/3d``, ``AdaptiveMaxPool1d/2d/3d``, ``MaxUnpool1d/2d/3d``): thin wrappers
over ``F``'s pools that keep torch's stored attributes and ``extra_repr``."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _single(x) -> tuple:
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def _ntuple(x, n: int) -> tuple:
    """torch's _pair/_triple: a sequence as a tuple, a number repeated ``n`` times."""
    return tuple(x) if isinstance(x, (list, tuple)) else (x,) * n


class _MaxPoolNd(Module):
    __constants__ = ("kernel_size", "stride", "padding", "dilation", "return_indices",
                     "ceil_mode")

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, "
                "dilation={dilation}, ceil_mode={ceil_mode}".format(**self.__dict__))


class MaxPool1d(_MaxPoolNd):
    """torch.nn.MaxPool1d: input (N, C, L) or (C, L)."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """torch.nn.MaxPool2d: input (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """torch.nn.MaxPool3d: input (N, C, D, H, W) or (C, D, H, W)."""

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _MaxUnpoolNd(Module):
    """torch's MaxUnpool: kernel_size, stride (default: the kernel) and padding stored as
    n-tuples; forward(input, indices, output_size=None)."""

    _n = 0

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._n)
        self.padding = _ntuple(padding, self._n)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool1d: the partial inverse of MaxPool1d (given its indices)."""

    _n = 1

    def forward(self, input, indices, output_size=None):
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool2d: the partial inverse of MaxPool2d (given its indices)."""

    _n = 2

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool3d: the partial inverse of MaxPool3d (given its indices)."""

    _n = 3

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class _AvgPoolNd(Module):
    __constants__ = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """torch.nn.AvgPool1d: stores kernel_size/stride/padding as 1-tuples, as torch."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """torch.nn.AvgPool2d, with ``divisor_override``."""

    __constants__ = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                     "divisor_override")

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(AvgPool2d):
    """torch.nn.AvgPool3d, with ``divisor_override``: input (N, C, D, H, W) or (C, D, H, W)."""

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _LPPoolNd(Module):
    __constants__ = ("norm_type", "kernel_size", "stride", "ceil_mode")

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class LPPool1d(_LPPoolNd):
    """torch.nn.LPPool1d: the p-norm over each window."""

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """torch.nn.LPPool2d: the p-norm over each window."""

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """torch.nn.LPPool3d: the p-norm over each window."""

    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class _AdaptiveMaxPoolNd(Module):
    __constants__ = ("output_size", "return_indices")

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """torch.nn.AdaptiveMaxPool1d."""

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """torch.nn.AdaptiveMaxPool2d; ``None`` in output_size keeps that input size."""

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """torch.nn.AdaptiveMaxPool3d; ``None`` in output_size keeps that input size."""

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _AdaptiveAvgPoolNd(Module):
    __constants__ = ("output_size",)

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """torch.nn.AdaptiveAvgPool1d."""

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """torch.nn.AdaptiveAvgPool2d; ``None`` in output_size keeps that input size."""

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """torch.nn.AdaptiveAvgPool3d; ``None`` in output_size keeps that input size."""

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)
