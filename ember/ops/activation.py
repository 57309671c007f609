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
from .._backend.errstate import (
    ignore_divide_invalid,
    ignore_invalid,
    ignore_invalid_over,
    ignore_over,
    quietly,
)
from .._tensor import Tensor, _make, _wrap_dim
from ._op import Op, apply1
from ._registry import register
from .arithmetic import _check_tensor, scalar_name
from .comparison import masked_bits, select_array, where
from .inplace import inplace as _inplace
from .shape import cat
from .unary import _ERF_F32, _erf_erfc, _horner, exp, sigmoid, tanh

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


def _where_array(cond: ndarray, a: ndarray, b: ndarray) -> ndarray:
    """``where(cond, a, b)`` on arrays of one shape and float dtype, bit for bit, as the OR of
    two ``masked_bits`` selects (other arrays: ``where``).

    NOTE: NumPy's where branches per element on a mixed mask: ~0.95 ms at (16, 64, 256)
    float32, ~0.15 here; F.leaky_relu forward 984 -> ~150 µs (torch 30)."""
    kept = masked_bits(a, cond, True) if getattr(b, "dtype", None) == a.dtype else None
    other = masked_bits(b, cond, False) if kept is not None else None
    if other is None:
        return xp_of(a).where(cond, a, b)
    bits = kept.view(f"i{kept.dtype.itemsize}")
    bits |= other.view(bits.dtype)
    return kept


def _vector(a: ndarray) -> ndarray:
    """A 0-d array as 1-d (a view): NumPy's arithmetic on 0-d arrays gives scalars, which the
    in-place (``out=``) steps of the kernels below cannot take; the kernels reshape back."""
    return a.reshape(1) if not a.ndim else a


def _saved_vector(node) -> tuple:
    """A one-input node's saved input as ``_vector`` makes it, and its shape: what the array
    rules below compute on, their result reshaped back to it."""
    d = node.saved()[0]._data
    return _vector(d), d.shape


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
        # (value where x <= th, as torch: x itself where x is nan)
        return _where_array(a <= th, xp.full_like(a, value), a)

    def backward(self, grad):
        (x,) = self.saved()
        # torch's threshold_backward: 0 where x <= th, so a nan input passes its gradient
        return _mask(grad, ~(x._data <= self.th))

    def raw_backward(self, grad):
        (x,) = self.saved()
        return select_array(grad, ~(x._data <= self.th))


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

    def raw_backward(self, grad):
        # (bitwise: (16, 64, 256) float32 f+b 909 -> ~150 µs, torch 98)
        (x,) = self.saved()
        d = x._data
        return select_array(grad, (d > self.lo) & (d < self.hi))


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
        self.slope = slope
        # (a bfloat16 times a Python float is float32 in NumPy: cast back)
        return _where_array(a > 0, a, a * slope).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        return where(_make(x._data > 0), grad, grad * self.slope)

    def raw_backward(self, grad):
        (x,) = self.saved()
        return _where_array(x._data > 0, grad, grad * self.slope)


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
        self.slope = slope
        return _where_array(a > 0, a, a * slope).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        slope = self.slope
        if is_array(slope):
            slope = _make(slope)
        return where(_make(x._data > 0), grad, grad * slope)

    def raw_backward(self, grad):
        (x,) = self.saved()
        d = x._data
        if grad.dtype != d.dtype or grad.shape != d.shape:
            return self.tensor_backward(grad)
        return _where_array(d > 0, grad, grad * self.slope)


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
    d/dx = grad * scale if x > 0 else grad * scale * alpha * s * exp(x * s).

    NOTE: both sides computed everywhere and added (one of them is exactly 0: max(x, 0) and
    expm1(min(x, 0) s)), not selected with ``where``, which branches per element on a mixed
    mask: (16, 64, 256) float32 1.2 ms -> ~0.3 (torch 0.35)."""

    __slots__ = ("alpha", "input_scale", "scale")
    save_inputs = (0,)

    def forward(self, a, alpha, scale, input_scale):
        xp = xp_of(a)
        self.alpha, self.scale, self.input_scale = alpha, scale, input_scale
        shape = a.shape
        a = _vector(a)
        neg = xp.clip(a, None, 0)
        if input_scale != 1:
            neg *= input_scale
        xp.expm1(neg, out=neg)
        neg *= alpha * scale
        pos = xp.clip(a, 0, None)
        if scale != 1:
            pos *= scale
        neg += pos
        return neg.reshape(shape)

    def _slope(self, x):
        """d elu / dx where x <= 0: scale * alpha * s * exp(min(x, 0) * s)."""
        s = self.input_scale
        # clamp_max keeps exp finite where x > 0 (that branch is not taken, but a masked
        # inf would turn into nan in the second derivative)
        return (x.clamp_max(0.0) * s).exp() * (self.scale * self.alpha * s)

    def backward(self, grad):
        (x,) = self.saved()
        return grad * where(_make(x._data > 0), self.scale, self._slope(x))

    def raw_backward(self, grad):
        # the rule above on arrays (bit for bit): the select as the sum of the two sides
        # multiplied by the mask and its complement, one of them exactly 0 (slope is finite)
        d, shape = _saved_vector(self)
        xp = xp_of(d)
        slope = xp.minimum(d, 0.0)
        slope *= self.input_scale
        xp.exp(slope, out=slope)
        slope *= self.scale * self.alpha * self.input_scale
        pos = d > 0
        slope *= ~pos
        slope += xp.multiply(pos, d.dtype.type(self.scale))
        slope *= _vector(grad)
        return slope.reshape(shape)


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
_SQRT_HALF = math.sqrt(0.5)
_GELU_C = 0.044715
# dtypes gelu computes in; others (float16, bfloat16) in float32, as torch's CPU kernels
_GELU_NATIVE = (host.dtype(host.float32), host.dtype(host.float64))


# 0.5 * erf(x / sqrt 2) as x * P(x*x) / Q(x*x) for |x| <= 4 sqrt 2: ember's float32 fit of erf
# (``_ERF_F32``, t = x*x on |x| <= 4) with x / sqrt 2 and the 0.5 folded into its coefficients
_PHI_P = tuple(c / 2.0 ** k / (2.0 * math.sqrt(2.0)) for k, c in enumerate(_ERF_F32[0]))
_PHI_Q = tuple(c / 2.0 ** k for k, c in enumerate(_ERF_F32[1]))
# Phi rounds to 0 or 1 in float32 past 4 sqrt 2 = 5.657, where the fit ends; at 5.7 its float32
# evaluation is exactly +-1/2 (its neighbours are an ulp either side), so Phi is 0 or 1 beyond
_PHI_BOUND = 5.7


def _normal_cdf(x):
    """Phi(x), the standard normal CDF, of a float array. float64: erfc(-x / sqrt 2) / 2
    (``_erf_erfc``: accurate in the left tail, where torch's 1 + erf(x / sqrt 2) cancels);
    float32: 0.5 + 0.5 erf(x / sqrt 2) as torch, with ember's float32 erf fit evaluated in
    float32 (Phi within 1.7e-7 of exact where it cancels, torch's within 3.4e-7).

    NOTE: F.gelu on (16, 64, 256) float32: 14.7 ms through the float64 erf kernel -> ~0.6 ms
    (torch 0.13); evaluating the fit in float64 costs ~1.3 ms for no visible gain in Phi."""
    xp = xp_of(x)
    if x.dtype == host.float64:
        r = _erf_erfc(x * -_SQRT_HALF, True)
        r *= 0.5
        return r
    xc = xp.clip(x, -_PHI_BOUND, _PHI_BOUND)
    t = xc * xc
    r = _horner(_PHI_P, t)
    r /= _horner(_PHI_Q, t)
    r *= xc
    r += 0.5
    return xp.clip(r, 0.0, 1.0, out=r)  # (an ulp past 0 or 1 near the bound)


@quietly(ignore_invalid_over)  # inf * 0 is nan, as in torch: quietly
def _gelu_grad(g, x, approximate: str):
    """torch's gelu_backward on arrays: g * (Phi(x) + x * phi(x)), or the derivative of the
    tanh form (in float32 for float16 and bfloat16, as torch's CPU kernels)."""
    xp = xp_of(x)
    dtype, shape = x.dtype, x.shape
    if dtype not in _GELU_NATIVE:
        x, g = x.astype(host.float32), g.astype(host.float32)
    x, g = _vector(x), _vector(g)
    if approximate == "tanh":
        x_sq = x * x
        t = x_sq * x
        t *= _GELU_C
        t += x
        t *= _SQRT_2_OVER_PI
        xp.tanh(t, out=t)  # tanh of the inner
        d = x_sq
        d *= 3 * _GELU_C * _SQRT_2_OVER_PI
        d += _SQRT_2_OVER_PI  # d inner / dx
        d *= x
        d *= 0.5
        u = t * t
        xp.subtract(1.0, u, out=u)
        d *= u  # 0.5 x (1 - tanh^2) d inner/dx
        t += 1.0
        t *= 0.5
        t += d
    else:
        t = _normal_cdf(x)
        pdf = x * x
        pdf *= -0.5
        xp.exp(pdf, out=pdf)
        pdf *= x
        pdf *= _INV_SQRT_2PI
        t += pdf
    t *= g
    return t.astype(dtype, copy=False).reshape(shape)


class GeluBackward0(Op):
    """gelu(x) = x * Phi(x) (``_normal_cdf``), or its tanh approximation
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); the derivative is ``GeluBackwardBackward0``
    (torch's gelu_backward node), differentiable again."""

    __slots__ = ("approximate",)
    save_inputs = (0,)

    @quietly(ignore_invalid_over)  # inf * 0 is nan, as in torch: quietly
    def forward(self, a, approximate):
        xp = xp_of(a)
        self.approximate = approximate
        x = _vector(a if a.dtype in _GELU_NATIVE else a.astype(host.float32))
        if approximate == "tanh":
            inner = x * x
            inner *= _GELU_C
            inner += 1.0
            inner *= x
            inner *= _SQRT_2_OVER_PI
            xp.tanh(inner, out=inner)
            inner += 1.0
            inner *= x
            inner *= 0.5
            out = inner
        else:
            out = _normal_cdf(x)
            out *= x
        return out.astype(a.dtype, copy=False).reshape(a.shape)

    def backward(self, grad):
        (x,) = self.saved()
        return GeluBackwardBackward0.apply(grad, x, params=(self.approximate,))

    def raw_backward(self, grad):
        (x,) = self.saved()
        return _gelu_grad(grad, x._data, self.approximate)


class GeluBackwardBackward0(Op):
    """gelu_backward(grad, x) = grad * gelu'(x) (``_gelu_grad``): d/dgrad = gelu'(x),
    d/dx = grad * gelu''(x), gelu'' = phi(x) (2 - x^2) (exact) or, with t = tanh(inner) and
    D = d inner/dx, (1 - t^2) (D - x t D^2 + 3 sqrt(2/pi) 0.044715 x^2)."""

    __slots__ = ("approximate",)
    save_inputs = (0, 1)

    def forward(self, g, x, approximate):
        self.approximate = approximate
        return _gelu_grad(g, x, approximate)

    def backward(self, gg):
        g, x = self.saved()
        approximate = self.approximate
        d_g = d_x = None
        if self.needs_grad(0):
            d_g = GeluBackwardBackward0.apply(gg, x, params=(approximate,))
        if self.needs_grad(1):
            x_sq = x * x
            if approximate == "tanh":
                t = tanh((x + x_sq * x * _GELU_C) * _SQRT_2_OVER_PI)
                d = (x_sq * (3 * _GELU_C) + 1.0) * _SQRT_2_OVER_PI
                second = (1.0 - t * t) * (d - x * t * d * d
                                          + x_sq * (3 * _GELU_C * _SQRT_2_OVER_PI))
            else:
                second = exp(x_sq * -0.5) * _INV_SQRT_2PI * (2.0 - x_sq)
            d_x = gg * g * second
        return d_g, d_x


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``F.gelu``: x * Phi(x) (``_normal_cdf``), or the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_only(input, "GeluKernelImpl")
    return apply1(GeluBackward0, input, approximate)


def _array_sigmoid(a: ndarray) -> ndarray:
    """1 / (1 + exp(-a)) on a float array, as torch's CPU kernel and ``ember.sigmoid`` (bit for
    bit: the same four ufuncs): exp(-a) overflows to inf for very negative a, giving 0.

    NOTE: (16, 64, 256) float32: 5.0 ms -> ~0.2 (torch 0.1); ``exp(-logaddexp(0, -a))`` spent
    4.8 ms in NumPy's logaddexp."""
    xp = xp_of(a)
    e = xp.negative(a, out=xp.empty_like(a))
    with ignore_over():
        xp.exp(e, out=e)
    e += 1
    return xp.reciprocal(e, out=e)


class SiluBackward0(Op):
    """silu(x) = x * sigmoid(x) = x / (1 + exp(-x)) (torch's kernel): d/dx = grad * s *
    (1 + x * (1 - s)), s = sigmoid(x)."""

    __slots__ = ()
    save_inputs = (0,)

    @quietly(ignore_invalid_over)  # inf * 0 is nan, as in torch: quietly
    def forward(self, a):
        xp = xp_of(a)
        e = xp.negative(a, out=xp.empty_like(a))
        with ignore_over():
            xp.exp(e, out=e)
        e += 1
        return xp.divide(a, e, out=e)

    def backward(self, grad):
        (x,) = self.saved()
        s = sigmoid(x)
        return grad * (s * (x * (1.0 - s) + 1.0))

    @quietly(ignore_invalid_over)  # inf * 0 is nan, as in torch: quietly
    def raw_backward(self, grad):
        # the rule above on arrays, in its order of operations (bit for bit)
        x, shape = _saved_vector(self)
        s = _array_sigmoid(x)
        t = 1.0 - s
        t *= x
        t += 1.0
        t *= s
        t *= _vector(grad)
        return t.reshape(shape)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.silu`` (swish)."""
    _float_only(input, "silu_cpu")
    return _unary(SiluBackward0, SiluBackward0, input, inplace)


def _set_where(out: ndarray, cond: ndarray, values: ndarray) -> ndarray:
    """``out`` with ``values`` where ``cond`` (all of the same shape; ``out`` contiguous and
    writable). NOTE: the few elements where ``cond`` holds (softplus's linear part) by index:
    ``where`` on a mixed mask branches per element (~1 ms at 256K, here ~0.05)."""
    if cond.any():  # (a vectorised scan: ~15 µs at 256K, flatnonzero ~200)
        idx = xp_of(cond).flatnonzero(cond)
        out.reshape(-1)[idx] = values.reshape(-1)[idx]
    return out


def _softplus_array(a: ndarray, beta, threshold) -> ndarray:
    """torch's softplus kernel on arrays: log1p(exp(beta a)) / beta, a where beta a > threshold
    (exp of beta a clipped at the threshold: finite, and those values are replaced).
    NOTE: (16, 64, 256) float32 5.0 ms -> ~0.35 (torch 0.39): NumPy's logaddexp took 4.8."""
    xp = xp_of(a)
    shape = a.shape
    a = _vector(a)
    bx = a * beta if beta != 1 else a
    out = xp.clip(bx, None, threshold)
    with ignore_over():
        xp.exp(out, out=out)
    xp.log1p(out, out=out)
    if beta != 1:
        out /= beta
    # (bfloat16 is clipped into float32 by NumPy: cast back)
    return _set_where(out, bx > threshold, a).astype(a.dtype, copy=False).reshape(shape)


class SoftplusBackward0(Op):
    """softplus(x) = log(1 + exp(beta x)) / beta, x itself where beta x > threshold (torch's
    kernel, ``_softplus_array``): d/dx = grad * sigmoid(beta x) (grad where beta x >
    threshold)."""

    __slots__ = ("beta", "threshold")
    save_inputs = (0,)

    def forward(self, a, beta, threshold):
        self.beta, self.threshold = beta, threshold
        return _softplus_array(a, beta, threshold)

    def backward(self, grad):
        (x,) = self.saved()
        linear = x._data * self.beta > self.threshold
        return where(_make(linear), grad, grad * sigmoid(x * self.beta))

    def raw_backward(self, grad):
        # the rule above on arrays (bit for bit)
        x, shape = _saved_vector(self)
        bx = x * self.beta
        grad = _vector(grad)
        out = grad * _array_sigmoid(bx)
        return _set_where(out, bx > self.threshold, grad).reshape(shape)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``F.softplus``, stable for large |x|."""
    _float_only(input, "softplus_cpu")
    return apply1(SoftplusBackward0, input, beta, threshold)


class MishBackward0(Op):
    """mish(x) = x * tanh(log1p(exp(x))) (torch's kernel; exp's overflow gives x):
    d/dx = grad * (t + x * sigmoid(x) * (1 - t^2)), t = tanh(softplus(x)).
    NOTE: (16, 64, 256) float32 4.9 ms -> ~0.35 (torch 1.0), without logaddexp."""

    __slots__ = ()
    save_inputs = (0,)

    @quietly(ignore_invalid_over)  # inf * 0 is nan, as in torch: quietly
    def forward(self, a):
        xp = xp_of(a)
        with ignore_over():
            t = xp.exp(a, out=xp.empty_like(a))
        xp.log1p(t, out=t)
        xp.tanh(t, out=t)
        t *= a
        return t

    def backward(self, grad):
        (x,) = self.saved()
        t = tanh(apply1(SoftplusBackward0, x, 1.0, 20.0))
        return grad * (t + x * sigmoid(x) * (1.0 - t * t))

    @quietly(ignore_invalid_over)  # inf * 0 is nan, as in torch: quietly
    def raw_backward(self, grad):
        # the rule above on arrays, in its order of operations (bit for bit)
        x, shape = _saved_vector(self)
        xp = xp_of(x)
        t = _softplus_array(x, 1.0, 20.0)
        xp.tanh(t, out=t)
        u = x * _array_sigmoid(x)
        v = t * t
        xp.subtract(1.0, v, out=v)
        u *= v
        u += t
        u *= _vector(grad)
        return u.reshape(shape)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.mish``."""
    _float_only(input, "mish_cpu")
    return _unary(MishBackward0, MishBackward0, input, inplace)


class LogSigmoidBackward0(Op):
    """logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)) (torch's kernel): d/dx = grad *
    sigmoid(-x). NOTE: (16, 64, 256) float32 4.8 ms -> ~0.34 (torch 0.39), without
    logaddexp."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        xp = xp_of(a)
        e = xp.abs(a, out=xp.empty_like(a))
        xp.negative(e, out=e)
        xp.exp(e, out=e)
        xp.log1p(e, out=e)
        return xp.subtract(xp.minimum(a, xp.zeros(a.shape[-1:], a.dtype)), e, out=e)

    def backward(self, grad):
        (x,) = self.saved()
        return grad * sigmoid(-x)

    def raw_backward(self, grad):
        (x,) = self.saved()
        s = _array_sigmoid(xp_of(grad).negative(x._data, out=xp_of(grad).empty_like(x._data)))
        s *= grad
        return s


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
        t = xp.divide(a, 6, out=xp.empty_like(a))
        t += 0.5
        return xp.clip(t, 0, 1, out=t)

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return _mask(grad / 6, (d > -3) & (d < 3))

    def raw_backward(self, grad):
        # the rule above on arrays (bit for bit). NOTE: (16, 64, 256) float32 f+b 553 -> ~200
        # µs (torch 103): ``where`` branches per element on a mixed mask
        (x,) = self.saved()
        d = x._data
        return select_array(grad / 6, (d > -3) & (d < 3))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.hardsigmoid``."""
    _float_only(input, "hardsigmoid_cpu")
    return _unary(HardsigmoidBackward0, HardsigmoidBackward0, input, inplace)


class HardswishBackward0(Op):
    """hardswish(x) = x * relu6(x + 3) / 6: d/dx = 0 up to -3, grad * (x / 3 + 1/2) below 3,
    grad from 3 (torch's choice at the kinks)."""

    __slots__ = ()
    save_inputs = (0,)

    @quietly(ignore_invalid_over)  # inf * 0 is nan, as in torch: quietly
    def forward(self, a):
        xp = xp_of(a)
        t = xp.add(a, 3, out=xp.empty_like(a))
        xp.clip(t, 0, 6, out=t)
        t *= a
        t /= 6
        return t

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        mid = where(_make(d < 3), grad * (x / 3 + 0.5), grad)
        return _mask(mid, d > -3)

    def raw_backward(self, grad):
        # the rule above on arrays (bit for bit), its selects bitwise. NOTE: (16, 64, 256)
        # float32 f+b 792 -> ~460 µs (torch 116)
        (x,) = self.saved()
        d = x._data
        mid = grad * (d / 3 + 0.5)
        return select_array(_where_array(d < 3, mid, grad), d > -3)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.hardswish``."""
    _float_only(input, "hardswish_cpu")
    return _unary(HardswishBackward0, HardswishBackward0, input, inplace)


class SoftshrinkBackward0(Op):
    """softshrink(x, l) = x - l above l, x + l below -l, else 0: d/dx = grad where |x| > l."""

    __slots__ = ("lambd",)
    save_inputs = (0,)

    @quietly(ignore_invalid)  # inf * 0 is nan (a value not taken): quietly
    def forward(self, a, lambd):
        self.lambd = lambd
        # torch's kernel: a - l above l, a + l below -l, else a * 0 (nan for nan)
        below = _where_array(a < -lambd, a + lambd, a * 0)
        return _where_array(a > lambd, a - lambd, below).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return _mask(grad, (d > self.lambd) | (d < -self.lambd))

    def raw_backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return select_array(grad, (d > self.lambd) | (d < -self.lambd))


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
        self.lambd = lambd
        return select_array(a, ~((a >= -lambd) & (a <= lambd))).astype(a.dtype, copy=False)

    def backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return _mask(grad, (d < -self.lambd) | (d > self.lambd))

    def raw_backward(self, grad):
        (x,) = self.saved()
        d = x._data
        return select_array(grad, (d < -self.lambd) | (d > self.lambd))


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
        return _where_array(a > 0, a, w * a)

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
        # Python wrapper, ~2 µs a call). NOTE: one full-size buffer, every step in place; the
        # five passes are the cost: (256, 512) float32 ~170 µs, ~25 each and exp 60 (torch 80)
        with ignore_invalid():
            e = xp.subtract(x, xp.maximum.reduce(x, axis=ax, keepdims=True),
                            out=xp.empty_like(x))
            xp.exp(e, out=e)
            e /= xp.add.reduce(e, axis=ax, keepdims=True)
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
        xp.subtract(grad, xp.add.reduce(t, axis=self.dim, keepdims=True), out=t)
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
        with ignore_divide_invalid():
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
