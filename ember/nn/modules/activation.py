"""Activation layers (``torch.nn.modules.activation``): thin wrappers of ``nn.functional``.

Each layer keeps torch's attribute names, defaults and ``extra_repr`` text.
"""

from __future__ import annotations

import warnings

from ..._tensor import Tensor
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "RReLU",
    "ReLU",
    "ReLU6",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]


def _inplace_first(inplace: bool) -> str:
    return "inplace=True" if inplace else ""


def _inplace_after(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class Threshold(Module):
    """``nn.Threshold(threshold, value, inplace=False)``: ``value`` where input <= threshold."""

    __constants__ = ("threshold", "value", "inplace")

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_after(self.inplace)}"


class ReLU(Module):
    """``nn.ReLU(inplace=False)``."""

    __constants__ = ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_first(self.inplace)


class RReLU(Module):
    """``nn.RReLU(lower=1/8, upper=1/3, inplace=False)``: random slopes when training."""

    __constants__ = ("lower", "upper", "inplace")

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_after(self.inplace)}"


class Hardtanh(Module):
    """``nn.Hardtanh(min_val=-1, max_val=1, inplace=False)`` (``min_value``/``max_value`` are
    torch's deprecated spellings)."""

    __constants__ = ("min_val", "max_val", "inplace")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_after(self.inplace)}"


class ReLU6(Hardtanh):
    """``nn.ReLU6(inplace=False)``: hardtanh(x, 0, 6)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_first(self.inplace)


class Sigmoid(Module):
    """``nn.Sigmoid()``."""

    def forward(self, input: Tensor) -> Tensor:
        return input.sigmoid()


class Tanh(Module):
    """``nn.Tanh()``."""

    def forward(self, input: Tensor) -> Tensor:
        return input.tanh()


class _InplaceActivation(Module):
    """A layer with only an ``inplace`` flag, wrapping ``_fn`` (its repr shows no flag unless
    the torch layer prints one)."""

    __constants__ = ("inplace",)
    _fn = None
    _show_inplace = True

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_first(self.inplace) if self._show_inplace else ""


class Hardsigmoid(_InplaceActivation):
    """``nn.Hardsigmoid(inplace=False)`` (torch's repr shows no flag)."""

    _fn = staticmethod(F.hardsigmoid)
    _show_inplace = False


class Hardswish(_InplaceActivation):
    """``nn.Hardswish(inplace=False)`` (torch's repr shows no flag)."""

    _fn = staticmethod(F.hardswish)
    _show_inplace = False


class SiLU(_InplaceActivation):
    """``nn.SiLU(inplace=False)``."""

    _fn = staticmethod(F.silu)


class Mish(_InplaceActivation):
    """``nn.Mish(inplace=False)``."""

    _fn = staticmethod(F.mish)


class SELU(_InplaceActivation):
    """``nn.SELU(inplace=False)``."""

    _fn = staticmethod(F.selu)


class _AlphaActivation(Module):
    __constants__ = ("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_after(self.inplace)}"


class ELU(_AlphaActivation):
    """``nn.ELU(alpha=1.0, inplace=False)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)


class CELU(_AlphaActivation):
    """``nn.CELU(alpha=1.0, inplace=False)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class GLU(Module):
    """``nn.GLU(dim=-1)``: first half of ``dim`` times sigmoid of the second."""

    __constants__ = ("dim",)

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GELU(Module):
    """``nn.GELU(approximate='none')`` (or ``'tanh'``)."""

    __constants__ = ("approximate",)

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class _Shrink(Module):
    __constants__ = ("lambd",)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """``nn.Hardshrink(lambd=0.5)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    """``nn.Softshrink(lambd=0.5)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class LeakyReLU(Module):
    """``nn.LeakyReLU(negative_slope=0.01, inplace=False)``."""

    __constants__ = ("inplace", "negative_slope")

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_after(self.inplace)}"


class LogSigmoid(Module):
    """``nn.LogSigmoid()``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softplus(Module):
    """``nn.Softplus(beta=1.0, threshold=20.0)``."""

    __constants__ = ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(Module):
    """``nn.Softsign()``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(Module):
    """``nn.Tanhshrink()``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class PReLU(Module):
    """``nn.PReLU(num_parameters=1, init=0.25)``: a learnt slope (one, or one per channel)."""

    __constants__ = ("num_parameters",)

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    __constants__ = ("dim",)
    _fn = None

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        # _stacklevel 5: the implicit-dim warning points at the caller of the layer
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(_SoftmaxBase):
    """``nn.Softmin(dim=None)``."""

    _fn = staticmethod(F.softmin)


class Softmax(_SoftmaxBase):
    """``nn.Softmax(dim=None)``."""

    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    """``nn.LogSoftmax(dim=None)``."""

    _fn = staticmethod(F.log_softmax)


class Softmax2d(Module):
    """``nn.Softmax2d()``: softmax over the channels of (N, C, H, W) or (C, H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)
