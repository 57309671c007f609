"""Activations (``F.*``): threshold, hardtanh, leaky_relu, rrelu, elu/selu/celu, gelu, silu, mish,
softplus, logsigmoid, the hard* and *shrink functions, prelu, glu, softmax/log_softmax/softmin;
and torch.softmax/log_softmax, the Tensor methods (dim required).

Where torch has a fused kernel (``EluBackward0``, ``GeluBackward0``, ``SoftmaxBackward0``, ...)
the activation is one primitive named as torch names it; its derivative is written with ember
ops, so double backward works (softmin is softmax of -x, as torch writes it; the composites,
relu6, softsign and tanhshrink, are in ``nn.functional.activation``). In-place forms (``inplace=True``) go through ember's one in-place
mechanism; where torch records them under another node name (``LeakyReluBackward1``), a
subclass carries that name.
"""

from __future__ import annotations

import math
import warnings

from .. import random as _random
from .._backend import FLOAT_KINDS, host, is_array, ndarray, xp_of
from .._backend import dtypes as _dt
from .._tensor import Tensor, _make, _wrap_dim
from ._op import Op, apply1
from ._registry import register
from .arithmetic import _check_tensor, scalar_name
from .comparison import where
from .inplace import inplace as _inplace
from .shape import cat
from .unary import erf, sigmoid, tanh

__all__ = [
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish",
    "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "log_softmax", "logsigmoid", "mish",
    "prelu", "rrelu", "rrelu_", "selu", "selu_", "silu", "softmax", "softmin", "softplus",
    "softshrink", "threshold", "threshold_"
]


def _float_only(x: Tensor, kernel: str) -> None:
    """torch's error for a float-only kernel given an integer (or bool) tensor."""
    if x._data.dtype.kind not in FLOAT_KINDS:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_name(x.dtype)}\'')


def _mask(grad: Tensor, keep: ndarray) -> Tensor:
    """``grad`` where ``keep`` else 0: the derivative of a piecewise-linear activation."""
    return where(_make(keep), grad, 0.0)


def _unary(cls, inplace_cls, input: Tensor, inplace: bool, *params) -> Tensor:
    """Apply ``cls`` to ``input``, or ``inplace_cls`` in place (torch's ``name_`` form)."""
    if not inplace:
        return apply1(cls, input, *params)

    def op(t: Tensor) -> Tensor:
        return apply1(inplace_cls, t, *params)

    op.__name__ = inplace_cls.__name__
    return _inplace(input, op)


class ThresholdBackward0(Op):
    """threshold(x, th, value) = x if x > th else value: d/dx = grad where x > th."""

    __slots__ = ("th",)
    save_inputs = (0,)

    def forward(self, a, th, value):
        xp = xp_of(a)
        self.th = th
        return xp.where(a > th, a, xp.asarray(value).astype(a.dtype))

    def backward(self, grad):
        (x,) = self.saved()
        # torch's threshold_backward: 0 where x <= th, so a nan input passes its gradient
        return _mask(grad, ~(x._data <= self.th))


class ThresholdBackward1(ThresholdBackward0):
    """threshold_ (in place): torch's name for it."""

    __slots__ = ()


@register(method=False)
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``F.threshold``: ``value`` where ``input <= threshold``."""
    return _unary(ThresholdBackward0, ThresholdBackward1, input, inplace, threshold, value)


@register(method=False)
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _unary(ThresholdBackward0, ThresholdBackward1, input, True, threshold, value)


class HardtanhBackward0(Op):
    """hardtanh(x, lo, hi) = clip(x, lo, hi): d/dx = grad where lo < x < hi (strictly)."""

    __slots__ = ("hi", "lo")
    save_inputs = (0,)

    def forward(self, a, lo, hi):
        xp = xp_of(a)
        self.lo, self.hi = lo, hi
        return xp.clip(a, lo, hi).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return _mask(grad, (d > self.lo) & (d < self.hi))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``F.hardtanh``: clamp to [min_val, max_val]; the gradient is 0 at the bounds."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _unary(HardtanhBackward0, HardtanhBackward0, input, inplace, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


class LeakyReluBackward0(Op):
    """leaky_relu(x, slope): d/dx = grad if x > 0 else slope * grad."""

    __slots__ = ("slope",)
    save_inputs = (0,)

    def forward(self, a, slope):
        xp = xp_of(a)
        self.slope = slope
        return xp.where(a > 0, a, a * slope)

    def backward(self, grad):
        (x,) = self.saved()
        return where(_make(x._data > 0), grad, grad * self.slope)


class LeakyReluBackward1(LeakyReluBackward0):
    __slots__ = ()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``F.leaky_relu``."""
    _float_only(input, "leaky_relu_cpu")
    return _unary(LeakyReluBackward0, LeakyReluBackward1, input, inplace, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


class RreluWithNoiseBackward0(Op):
    """rrelu: x if x > 0 else slope * x, slope the mean of the bounds (eval) or drawn per
    element (training); d/dx = grad if x > 0 else slope * grad."""

    __slots__ = ("slope",)
    save_inputs = (0,)

    def forward(self, a, slope):
        xp = xp_of(a)
        self.slope = slope
        return xp.where(a > 0, a, a * slope).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        slope = self.slope
        if is_array(slope):
            slope = _make(slope)
        return where(_make(x._data > 0), grad, grad * slope)


class RreluWithNoiseBackward1(RreluWithNoiseBackward0):
    __slots__ = ()


@register(method=False)
def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """``F.rrelu``: leaky relu with a random slope in [lower, upper] per element when training,
    the mean slope otherwise."""
    _float_only(input, "leaky_relu_cpu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if training:
        rng = _random.default_generator._rng
        slope = rng.uniform(lower, upper, input._data.shape).astype(input._data.dtype)
        slope = xp_of(input._data).asarray(slope)  # drawn on the host
    else:
        slope = (lower + upper) / 2
    return _unary(RreluWithNoiseBackward0, RreluWithNoiseBackward1, input, inplace, slope)


@register(method=False)
def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


# --------------------------------------------------------------------------- elu family


class EluBackward0(Op):
    """elu(x, alpha, scale, input_scale) = scale * (x if x > 0 else alpha * (exp(x * s) - 1)):
    d/dx = grad * scale if x > 0 else grad * scale * alpha * s * exp(x * s)."""

    __slots__ = ("alpha", "input_scale", "scale")
    save_inputs = (0,)

    def forward(self, a, alpha, scale, input_scale):
        xp = xp_of(a)
        self.alpha, self.scale, self.input_scale = alpha, scale, input_scale
        neg = xp.expm1(xp.minimum(a, 0) * input_scale) * (alpha * scale)
        return xp.where(a > 0, a * scale, neg).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        s, scale = self.input_scale, self.scale
        # clamp_max keeps exp finite where x > 0 (that branch is not taken, but a masked
        # inf would turn into nan in the second derivative)
        slope = (x.clamp_max(0.0) * s).exp() * (scale * self.alpha * s)
        return where(_make(x._data > 0), grad * scale, grad * slope)


class EluBackward1(EluBackward0):
    __slots__ = ()


class CeluBackward0(EluBackward0):
    __slots__ = ()


class CeluBackward1(EluBackward0):
    __slots__ = ()


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``F.elu``."""
    _float_only(input, "elu_cpu")
    return _unary(EluBackward0, EluBackward1, input, inplace, alpha, 1.0, 1.0)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@register(method=False)
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.selu``: elu with torch's fixed alpha and scale (its node is ``EluBackward0``)."""
    _float_only(input, "elu_cpu")
    return _unary(EluBackward0, EluBackward1, input, inplace, _SELU_ALPHA, _SELU_SCALE, 1.0)


@register(method=False)
def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


@register(method=False)
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``F.celu``: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    _float_only(input, "elu_cpu")
    return _unary(CeluBackward0, CeluBackward1, input, inplace, alpha, 1.0, 1.0 / alpha)


@register(method=False)
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


# --------------------------------------------------------------------------- smooth activations

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_C = 0.044715


class GeluBackward0(Op):
    """gelu(x) = x * Phi(x), or its tanh approximation; the derivative in ember ops."""

    __slots__ = ("approximate",)
    save_inputs = (0,)

    def forward(self, a, approximate):
        xp = xp_of(a)
        self.approximate = approximate
        if approximate == "tanh":
            inner = _SQRT_2_OVER_PI * (a + _GELU_C * a * a * a)
            return 0.5 * a * (1.0 + xp.tanh(inner))
        return 0.5 * a * (1.0 + erf(_make(a * math.sqrt(0.5)))._data)

    def backward(self, grad):
        (x,) = self.saved()
        if self.approximate == "tanh":
            t = tanh((x + x * x * x * _GELU_C) * _SQRT_2_OVER_PI)
            dinner = (x * x * (3 * _GELU_C) + 1.0) * _SQRT_2_OVER_PI
            return grad * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * dinner)
        cdf = (erf(x * math.sqrt(0.5)) + 1.0) * 0.5
        pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
        return grad * (cdf + x * pdf)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``F.gelu``: x * Phi(x) (with ``ember.erf``, accurate to ~1e-15), or the tanh
    approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_only(input, "GeluKernelImpl")
    return apply1(GeluBackward0, input, approximate)


def _array_sigmoid(a: ndarray) -> ndarray:
    xp = xp_of(a)
    with host.errstate(over="ignore"):
        return xp.exp(-xp.logaddexp(0, -a)).astype(a.dtype, copy=False)


class SiluBackward0(Op):
    """silu(x) = x * sigmoid(x): d/dx = grad * s * (1 + x * (1 - s))."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return a * _array_sigmoid(a)

    def backward(self, grad):
        (x,) = self.saved()
        s = sigmoid(x)
        return grad * (s * (x * (1.0 - s) + 1.0))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.silu`` (swish)."""
    _float_only(input, "silu_cpu")
    return _unary(SiluBackward0, SiluBackward0, input, inplace)


class SoftplusBackward0(Op):
    """softplus(x) = log(1 + exp(beta x)) / beta, x itself where beta x > threshold:
    d/dx = grad * sigmoid(beta x) (grad where beta x > threshold)."""

    __slots__ = ("beta", "threshold")
    save_inputs = (0,)

    def forward(self, a, beta, threshold):
        xp = xp_of(a)
        self.beta, self.threshold = beta, threshold
        bx = a * beta
        # NOTE: logaddexp(0, bx) = log1p(exp(bx)) without overflow for large bx
        return xp.where(bx > threshold, a, xp.logaddexp(0, bx) / beta).astype(a.dtype,
                                                                              copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        linear = x._data * self.beta > self.threshold
        return where(_make(linear), grad, grad * sigmoid(x * self.beta))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``F.softplus``, stable for large |x|."""
    _float_only(input, "softplus_cpu")
    return apply1(SoftplusBackward0, input, beta, threshold)


class MishBackward0(Op):
    """mish(x) = x * tanh(softplus(x)): d/dx = grad * (t + x * sigmoid(x) * (1 - t^2))."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        xp = xp_of(a)
        return (a * xp.tanh(xp.logaddexp(0, a))).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        t = tanh(apply1(SoftplusBackward0, x, 1.0, 20.0))
        return grad * (t + x * sigmoid(x) * (1.0 - t * t))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.mish``."""
    _float_only(input, "mish_cpu")
    return _unary(MishBackward0, MishBackward0, input, inplace)


class LogSigmoidBackward0(Op):
    """logsigmoid(x) = -softplus(-x): d/dx = grad * sigmoid(-x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        xp = xp_of(a)
        return (-xp.logaddexp(0, -a)).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        return grad * sigmoid(-x)


def logsigmoid(input: Tensor) -> Tensor:
    """``F.logsigmoid``, stable for large |x|."""
    _float_only(input, "log_sigmoid_cpu")
    return apply1(LogSigmoidBackward0, input)


# --------------------------------------------------------------------------- hard* and *shrink


class HardsigmoidBackward0(Op):
    """hardsigmoid(x) = relu6(x + 3) / 6: d/dx = grad / 6 where -3 < x < 3."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        xp = xp_of(a)
        return xp.clip(a / 6 + 0.5, 0, 1).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return _mask(grad / 6, (d > -3) & (d < 3))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.hardsigmoid``."""
    _float_only(input, "hardsigmoid_cpu")
    return _unary(HardsigmoidBackward0, HardsigmoidBackward0, input, inplace)


class HardswishBackward0(Op):
    """hardswish(x) = x * relu6(x + 3) / 6: d/dx = 0 up to -3, grad * (x / 3 + 1/2) below 3,
    grad from 3 (torch's choice at the kinks)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        xp = xp_of(a)
        return (a * xp.clip(a + 3, 0, 6) / 6).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        mid = where(_make(d < 3), grad * (x / 3 + 0.5), grad)
        return _mask(mid, d > -3)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.hardswish``."""
    _float_only(input, "hardswish_cpu")
    return _unary(HardswishBackward0, HardswishBackward0, input, inplace)


class SoftshrinkBackward0(Op):
    """softshrink(x, l) = x - l above l, x + l below -l, else 0: d/dx = grad where |x| > l."""

    __slots__ = ("lambd",)
    save_inputs = (0,)

    def forward(self, a, lambd):
        xp = xp_of(a)
        self.lambd = lambd
        out = xp.where(a > lambd, a - lambd, xp.where(a < -lambd, a + lambd, 0))
        return out.astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return _mask(grad, (d > self.lambd) | (d < -self.lambd))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``F.softshrink``."""
    _float_only(input, "softshrink_check")
    if lambd < 0:
        big = float(host.finfo(input._data.dtype).max)
        raise RuntimeError(f"lambda must be in range [0, {big:g}] for input dtype "
                           f"{scalar_name(input.dtype)}, but found {lambd:g}")
    return apply1(SoftshrinkBackward0, input, lambd)


class HardshrinkBackward0(Op):
    """hardshrink(x, l) = 0 where -l <= x <= l, else x: d/dx = grad outside [-l, l]."""

    __slots__ = ("lambd",)
    save_inputs = (0,)

    def forward(self, a, lambd):
        xp = xp_of(a)
        self.lambd = lambd
        return xp.where((a >= -lambd) & (a <= lambd), 0, a).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return _mask(grad, (d < -self.lambd) | (d > self.lambd))


@register
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``F.hardshrink``."""
    _float_only(input, "hardshrink_cpu")
    return apply1(HardshrinkBackward0, input, lambd)


# --------------------------------------------------------------------------- prelu, glu


class PreluKernelBackward0(Op):
    """prelu(x, w) = x if x > 0 else w * x, w broadcast over the channel dim:
    d/dx = grad if x > 0 else w * grad; d/dw = x * grad where x <= 0."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, w):
        xp = xp_of(a)
        return xp.where(a > 0, a, w * a)

    def backward(self, grad):
        x, w = self.saved()
        pos = _make(x._data > 0)
        gx = where(pos, grad, grad * w) if self.needs_grad(0) else None
        gw = where(pos, 0.0, grad * x) if self.needs_grad(1) else None
        return gx, gw


@register
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``F.prelu``: one slope, or one per channel (dim 1)."""
    from ..amp import _state as _amp  # the autocast hook (lazy: keeps this file's imports)
    if _amp.active:  # autocast: lower-precision op
        input, weight = _amp.lower(input, weight)
    n = weight._data.size
    nd = input._data.ndim
    if n != 1:
        channels = input._data.shape[1] if nd > 1 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
    if weight._data.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight._data.ndim}")
    _float_only(input, "prelu_cpu")
    w = weight
    if nd >= 2:  # (C,) -> (C, 1, ...): broadcast over dim 1, as torch reshapes it
        w = weight.view(n, *([1] * (nd - 2))) if n != 1 else weight.view(*([1] * (nd - 1)))
    elif nd == 0:
        w = weight.view(())
    return PreluKernelBackward0.apply(input, w)


class GluBackward0(Op):
    """glu(x, dim) = a * sigmoid(b), (a, b) the halves of x along dim."""

    __slots__ = ("dim", "half")
    save_inputs = (0,)

    def forward(self, a, dim):
        xp = xp_of(a)
        self.dim = dim
        self.half = h = a.shape[dim] // 2
        first, second = xp.split(a, [h], axis=dim)
        return first * _array_sigmoid(second)

    def backward(self, grad):
        (x,) = self.saved()
        lead = (slice(None),) * self.dim
        a = x[lead + (slice(None, self.half),)]
        sb = sigmoid(x[lead + (slice(self.half, None),)])
        ga = grad * sb
        return cat([ga, ga * a * (1.0 - sb)], self.dim)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``F.glu``: gated linear unit over ``dim``, whose size must be even."""
    if input._data.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    return apply1(GluBackward0, input, d)


# --------------------------------------------------------------------------- softmax family


def _reduce_axis(a: ndarray, dim: int):
    """``a`` and the array axis to reduce (a 0-d array is viewed as 1-d)."""
    return (a.reshape(1), 0) if a.ndim == 0 else (a, dim)


class SoftmaxBackward0(Op):
    """softmax(x, dim) = exp(x - max) / sum: d/dx = y * (grad - sum(grad * y, dim))."""

    __slots__ = ("dim",)
    save_output = True

    def forward(self, a, dim):
        xp = xp_of(a)
        self.dim = dim
        if not a.size:
            return a.copy()
        x, ax = _reduce_axis(a, dim)
        # (the ufuncs' own reductions: ``xp.max``/``xp.sum`` are the same loops behind a
        # Python wrapper, ~2 µs a call)
        with host.errstate(invalid="ignore"):
            e = xp.exp(x - xp.maximum.reduce(x, axis=ax, keepdims=True))
            e /= xp.add.reduce(e, axis=ax, keepdims=True)  # in place: a temporary less
        return e.reshape(a.shape)

    def backward(self, grad):
        y = self.saved_output()
        return y * (grad - (grad * y).sum(self.dim, keepdim=True))

    def raw_backward(self, grad):
        # the rule above on arrays, in its order of operations (bit for bit); bfloat16 sums
        # (accumulated in float32 by ``sum``) take the Tensor rule
        y = self.saved_output_array()
        if grad.dtype.kind != "f" or y.dtype != grad.dtype or not y.ndim:
            return self.tensor_backward(grad)
        xp = xp_of(grad)
        t = grad * y
        t = grad - xp.add.reduce(t, axis=self.dim, keepdims=True)
        t *= y
        return t


class LogSoftmaxBackward0(Op):
    """log_softmax(x, dim) = x - max - log(sum(exp(x - max))):
    d/dx = grad - exp(y) * sum(grad, dim)."""

    __slots__ = ("dim",)
    save_output = True

    def forward(self, a, dim):
        xp = xp_of(a)
        self.dim = dim
        if not a.size:
            return a.copy()
        x, ax = _reduce_axis(a, dim)
        # (the shifted input becomes the result in place: one full-size temporary less, and
        # the same bits as ``shifted - log(sum(exp(shifted)))``)
        with host.errstate(invalid="ignore", divide="ignore"):
            out = x - xp.maximum.reduce(x, axis=ax, keepdims=True)
            lse = xp.add.reduce(xp.exp(out), axis=ax, keepdims=True)
            out -= xp.log(lse, out=lse)
        return out.reshape(a.shape)

    def backward(self, grad):
        y = self.saved_output()
        return grad - y.exp() * grad.sum(self.dim, keepdim=True)

    def raw_backward(self, grad):
        # the rule above on arrays, in its order of operations (bit for bit); bfloat16 sums
        # (accumulated in float32 by ``sum``) take the Tensor rule
        y = self.saved_output_array()
        if grad.dtype.kind != "f" or y.dtype != grad.dtype or not y.ndim:
            return self.tensor_backward(grad)
        xp = xp_of(grad)
        e = xp.exp(y)
        e *= xp.add.reduce(grad, axis=self.dim, keepdims=True)
        return xp.subtract(grad, e, out=e)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_impl(cls, kernel: str, input: Tensor, dim: int, dtype) -> Tensor:
    _check_tensor(input, kernel)
    d = _wrap_dim(dim, input._data.ndim)
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind not in FLOAT_KINDS:
        last = d == max(input._data.ndim - 1, 0)
        _float_only(input, f"{kernel}_lastdim_kernel_impl" if last else f"{kernel}_kernel_impl")
    return apply1(cls, input, d)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: _dt.dtype | None = None) -> Tensor:
    """``F.softmax`` (``SoftmaxBackward0``); ``dtype`` casts the input first."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _softmax_impl(SoftmaxBackward0, "softmax", input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: _dt.dtype | None = None) -> Tensor:
    """``F.log_softmax`` (``LogSoftmaxBackward0``), stable for large inputs."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _softmax_impl(LogSoftmaxBackward0, "log_softmax", input, dim, dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: _dt.dtype | None = None) -> Tensor:
    """``F.softmin``: softmax(-input)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _softmax_impl(SoftmaxBackward0, "softmax", -input, dim, dtype)


# --------------------------------------------------------------------------- torch.softmax & co.
# torch.softmax / torch.log_softmax and the Tensor methods take ``dim`` as a required argument.

_REQUIRED = object()


def _dim_required(name: str, dim) -> None:
    if dim is _REQUIRED:
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')


@register(name="softmax")
def torch_softmax(input: Tensor, dim=_REQUIRED, dtype: _dt.dtype | None = None) -> Tensor:
    """``torch.softmax`` / ``Tensor.softmax``."""
    _dim_required("softmax", dim)
    return _softmax_impl(SoftmaxBackward0, "softmax", input, dim, dtype)


@register(name="log_softmax")
def torch_log_softmax(input: Tensor, dim=_REQUIRED, dtype: _dt.dtype | None = None) -> Tensor:
    """``torch.log_softmax`` / ``Tensor.log_softmax``."""
    _dim_required("log_softmax", dim)
    return _softmax_impl(LogSoftmaxBackward0, "log_softmax", input, dim, dtype)


torch_softmax.__name__ = "softmax"
torch_log_softmax.__name__ = "log_softmax"
