"""Unary math: exp/log/sqrt, trigonometry and its inverses, hyperbolic functions, the erf
family, sigmoid/relu/tanh (the primitives the activations build on), abs/sign, rounding,
nan_to_num; and the differentiable copies and casts (clone, contiguous, ``to(dtype)``).

Each class is one op, its forward (NumPy) beside its derivative (ember ops, so higher-order
gradients work), named as torch names the node. Derivatives follow torch's derivatives.yaml.

NOTE: most ops here are primitives rather than composites because torch records each with a
node of its own (``Exp2Backward0``, ...) and the op table checks the names; where torch's node
is a composite's, ember composes too (``fix`` is ``trunc``, the ``arc*`` names are aliases).
"""

from __future__ import annotations

import math

from .._backend import FLOAT_KINDS, HOST_ARRAYS, device_of, host, ndarray, weak_scalar, xp_of
from .._backend import dtypes as _dt
from .._backend.device import device, to_device
from .._backend.errstate import (
    ignore_all,
    ignore_divide,
    ignore_divide_invalid,
    ignore_invalid,
    ignore_invalid_over,
    ignore_over,
)
from .._tensor import Tensor, _make
from ._op import MISSING, Op, apply1, unary_apply, unary_function
from ._registry import register
from .arithmetic import _check_tensor, _maybe_out, scalar_name
from .comparison import masked_bits, where
from .complex import conj_of, sgn_of
from .creation import to_device_copy
from .inplace import inplace as _inplace

# ------------------------------ exp, log, sqrt, trigonometry, sigmoid, relu, abs, sign, reciprocal


class ExpBackward0(Op):
    """exp: d/dx = grad * conj(result)."""

    __slots__ = ()
    save_output = True
    complex_ok = True

    ufunc = "exp"

    def jvp(self, tangents, inputs, out):
        return tangents[0] * out

    def backward(self, grad):
        return grad * conj_of(self.saved_output())

    def raw_backward(self, grad):
        y = self.saved_output_array()
        return grad * (y if y.dtype.kind != "c" else y.conj())


class LogBackward0(Op):
    """log: d/dx = grad / conj(x)."""

    __slots__ = ()
    save_inputs = (0,)
    complex_ok = True

    def forward(self, a):
        with ignore_divide_invalid():
            return (host if type(a) is ndarray else xp_of(a)).log(a)

    def jvp(self, tangents, inputs, out):
        return tangents[0] / inputs[0]

    def backward(self, grad):
        (a,) = self.saved()
        return grad / conj_of(a)

    def raw_backward(self, grad):
        (a,) = self.saved()
        a = a._data
        with ignore_divide_invalid():
            return grad / (a if a.dtype.kind != "c" else a.conj())


class SqrtBackward0(Op):
    """sqrt: d/dx = grad / (2 * conj(result))."""

    __slots__ = ()
    save_output = True
    complex_ok = True

    def forward(self, a):
        with ignore_invalid():
            return (host if type(a) is ndarray else xp_of(a)).sqrt(a)

    def jvp(self, tangents, inputs, out):
        return tangents[0] / (out * 2)

    def backward(self, grad):
        return grad / (2 * conj_of(self.saved_output()))

    def raw_backward(self, grad):
        y = self.saved_output_array()
        with ignore_divide_invalid():
            return grad / ((y if y.dtype.kind != "c" else y.conj()) * 2)


class SinBackward0(Op):
    """sin: d/dx = grad * conj(cos(x))."""

    __slots__ = ()
    save_inputs = (0,)
    complex_ok = True

    ufunc = "sin"

    def jvp(self, tangents, inputs, out):
        return tangents[0] * inputs[0].cos()

    def backward(self, grad):
        (a,) = self.saved()
        return grad * conj_of(cos(a))


class CosBackward0(Op):
    """cos: d/dx = -grad * conj(sin(x))."""

    __slots__ = ()
    save_inputs = (0,)
    complex_ok = True

    ufunc = "cos"

    def jvp(self, tangents, inputs, out):
        return -(tangents[0] * inputs[0].sin())

    def backward(self, grad):
        (a,) = self.saved()
        return grad * -conj_of(sin(a))


# 1 for host arrays' arithmetic: ``weak_scalar``'s 0-d arrays, by dtype (the same values as the
# Python number, ~0.28 µs less a ufunc call on small arrays)
_ONES = {host.dtype(t): weak_scalar(1, host.dtype(t)) for t in ("float16", "float32", "float64")}


class TanhBackward0(Op):
    """tanh: d/dx = grad * conj(1 - result**2)."""

    __slots__ = ()
    save_output = True
    complex_ok = True

    ufunc = "tanh"

    def jvp(self, tangents, inputs, out):
        return tangents[0] * (1 - out * out)

    def backward(self, grad):
        y = conj_of(self.saved_output())
        return grad * (1 - y * y)

    def raw_backward(self, grad):
        y = self.saved_output_array()
        if y.dtype.kind == "c":
            y = y.conj()
        return grad * ((_ONES.get(y.dtype, 1) if type(y) is ndarray else 1) - y * y)


class SigmoidBackward0(Op):
    """sigmoid: d/dx = grad * result * (1 - result)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        # NOTE: 1 / (1 + exp(-a)) as torch's CPU kernel: exp(-a) overflows to inf for very
        # negative a, giving exactly 0 as torch does; 10x faster than masked two-branch forms
        xp = host if type(a) is ndarray else xp_of(a)
        e = xp.negative(a, out=xp.empty_like(a))
        with ignore_over():
            xp.exp(e, out=e)
        e += 1
        return xp.reciprocal(e, out=e)

    def jvp(self, tangents, inputs, out):
        return tangents[0] * (out * (1 - out))

    def backward(self, grad):
        y = self.saved_output()
        return grad * (y * (1 - y))

    def raw_backward(self, grad):
        y = self.saved_output_array()
        return grad * (y * ((_ONES.get(y.dtype, 1) if type(y) is ndarray else 1) - y))


class ReluBackward0(Op):
    """relu: d/dx = grad where result > 0 (0 at 0, as torch)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        if a.dtype.kind == "b":
            return a.copy()
        xp = host if type(a) is ndarray else xp_of(a)
        if not a.ndim:
            return xp.maximum(a, 0)
        # NOTE: a 0-d zero takes NumPy's strided loop; a row of zeros broadcasts on the
        # vectorised one, which runs once per row: 25 -> 13.5 µs for (128, 512) float32 (torch
        # 6.5). Short rows cost a loop restart each, so a contiguous array is taken as rows of
        # at least 4,096 (its trailing dims): (64, 16, 28, 28) 264 -> 143 µs, (64, 32, 14, 14)
        # 170 -> 57 (torch 70 and 36)
        if xp is host and a.flags.c_contiguous and a.size:
            row = 1
            for n in reversed(a.shape):
                row *= n
                if row >= 4096:
                    break
            return xp.maximum(a.reshape(-1, row), xp.zeros(row, a.dtype)).reshape(a.shape)
        return xp.maximum(a, xp.zeros(a.shape[-1:], a.dtype))

    def jvp(self, tangents, inputs, out):
        return tangents[0].masked_fill(~(out > 0), 0)  # (0 at nan, as threshold_backward)

    def backward(self, grad):
        return ThresholdBackwardBackward0.apply(grad, self.saved_output(), params=(0,))

    def raw_backward(self, grad):
        return threshold_backward_array(grad, self.saved_output_array(), 0)




def threshold_backward_array(g, x, threshold):
    """torch's threshold_backward on arrays: 0 where ``x <= threshold``, else ``g`` (so also
    where x is nan), bit for bit: +0.0 even where ``g`` is nan, inf or negative, which
    ``g * (x > t)`` gets wrong (nan * 0 is nan, -5 * 0 is -0.0, and nan > t drops g).

    On NumPy arrays the select is ``masked_bits`` (a bitwise AND with a word mask), three
    vectorised passes.
    """
    out = masked_bits(g, x <= threshold, False) if type(x) in HOST_ARRAYS else None
    if out is not None:
        return out
    xp = xp_of(g)
    return xp.where(x <= threshold, xp.zeros((), g.dtype), g)


class ThresholdBackwardBackward0(Op):
    """threshold_backward(grad, x, threshold): grad where x > threshold (or x is nan), else 0
    (``threshold_backward_array``, torch's select bit for bit)."""

    __slots__ = ("threshold",)
    save_inputs = (1,)

    def forward(self, g, x, threshold):
        self.threshold = threshold
        return threshold_backward_array(g, x, threshold)

    def backward(self, grad):
        (x,) = self.saved()
        return ThresholdBackwardBackward0.apply(grad, x, params=(self.threshold,)), None

    def raw_backward(self, grad):
        (x,) = self.saved()
        return threshold_backward_array(grad, x._data, self.threshold), None


class AbsBackward0(Op):
    """abs: d/dx = grad * sign(x) (0 at 0); for a complex x, grad * sgn(x) = grad * x / |x|."""

    __slots__ = ()
    save_inputs = (0,)
    complex_ok = True

    def forward(self, a):
        return xp_of(a).abs(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * (sgn_of(a) if a._data.dtype.kind == "c" else sign(a))


class SignBackward0(Op):
    __slots__ = ()

    def forward(self, a):
        return xp_of(a).sign(a) if a.dtype.kind != "b" else a.copy()

    def backward(self, grad):
        return grad * 0


class ReciprocalBackward0(Op):
    """reciprocal: d/dx = -grad * result**2."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        if a.dtype.kind not in FLOAT_KINDS:
            a = a.astype(_dt.get_default_dtype().np)
        with ignore_divide():
            return xp_of(a).reciprocal(a)

    def backward(self, grad):
        y = self.saved_output()
        return -grad * (y * y)


class ToCopyBackward0(Op):
    """to(dtype): the gradient is cast back to the input's dtype (by the engine)."""

    __slots__ = ()
    complex_ok = True

    def forward(self, a, np_dtype):
        return a.astype(np_dtype)

    def backward(self, grad):
        return grad


class CloneBackward0(Op):
    __slots__ = ()
    complex_ok = True

    def forward(self, a):
        return a.copy()

    def backward(self, grad):
        return grad


_LN2 = math.log(2.0)


_LN10 = math.log(10.0)


_SQRT_PI = math.sqrt(math.pi)


_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI


# -------------------------------------------------------------------------------------- erf family
# The coefficients below are ember's own fits (mpmath, 40 digits: linearised least squares with
# Lawson reweighting towards the minimax relative error, on Chebyshev nodes), given with the
# relative error of each fit; the evaluation in float64 adds ~1 ulp. ``tools/fit_erf.py``
# reproduces them.

# erf(x) / x as a polynomial in t = x*x on |x| < 1/2 (fit error 3.9e-18)
_ERF_SMALL = (1.1283791670955126, -0.37612638903183465, 0.11283791670924807,
              -0.026866170632715396, 0.005223977370324183, -0.0008548297524266646,
              0.00012053324308253612, -1.4845583612980958e-05, 1.4723214147811995e-06)
# erfcx(x) = exp(x*x) erfc(x) as P(x) / Q(x) on 1/2 <= x < 2 (fit error 1.5e-20)
_ERFCX_MID = ((1.000000000004305, 1.4096726988912074, 1.0067083863702322, 0.4296055843708689,
               0.1141059152895536, 0.017756376443740698, 0.001271598708109331,
               -2.7176030071660703e-09),
              (1.0, 2.538051866066425, 2.870593236352696, 1.8829241052750663,
               0.7774215649801799, 0.2033455268690495, 0.03147502299226688,
               0.002253688507827536))
# x * erfcx(x) as 1/sqrt(pi) + s P(s) / Q(s) in s = 1/x**2 on 2 <= x <= 27 (fit error 2.2e-19;
# the fitted P'/Q less its constant term, so that the rounding of P and Q counts at most ~10%);
# erfc underflows to 0 past 26.55
_ERFCX_TAIL = (0.5641895835477563,
               (-0.2820947917738755, -10.29091489238141, -138.72903344849925, -873.7700480865611,
                -2679.7288355341666, -3791.257116838849, -2093.667985171108, -290.5573466475783),
               (1.0, 37.98034346067952, 545.0021343285852, 3785.63608642755, 13573.51703620297,
                24838.57858457116, 21502.56124235063, 7382.511434861511, 645.4679193403887))
# erf(x) / x as P(t) / Q(t) in t = x*x on |x| <= 4, float32's whole range short of 1 (fit error
# 2.0e-9: float32 erf correctly rounded but for ~1 in 10^4 values, 1 ulp off, in float64)
_ERF_F32 = ((1.1283791694688434, 0.18520235441192284, 0.05431748409381537,
             0.003849671673555094, 0.00037963828480747184, 4.685546293930296e-06,
             -1.320599595594299e-08),
            (1.0, 0.49746472741395387, 0.11395866673646776, 0.015462304574565744,
             0.0013076227958406397, 6.311801764428133e-05))


# x * erfcx(x) as P(s) / Q(s) in s = 1/x**2 on 1/2 <= x <= 10.5, past which float32's erfc is 0
# (fit error 4.3e-11: float32 erfc, evaluated in float64, is rounded once from ~1e-10)
_ERFCX_F32 = ((0.5641895830169966, 7.776348121002918, 34.72415738093966, 61.69967535970249,
               43.878989602659374, 11.280684663470085, 0.8074980147954395,
               0.006882033035007009),
              (1.0, 14.283217982320474, 67.93858972381013, 134.49115460117702,
               114.29724082492503, 39.213991922677536, 4.581079545397353, 0.11754779564140015))


def _horner(coefs, v):
    """sum(c_k v**k) on the array ``v``: one multiply and one add per coefficient, in place
    on a host array of one or more dims (others, e.g. 0-d or traced ones, out of place: the
    same operations, the same bits)."""
    acc = v * coefs[-1]
    if type(acc) is not ndarray or not acc.ndim:
        acc = acc + coefs[-2]
        for c in coefs[-3::-1]:
            acc = acc * v + c
        return acc
    acc += coefs[-2]
    for c in coefs[-3::-1]:
        acc *= v
        acc += c
    return acc


def _exp_neg_square(x):
    """exp(-x*x) of a float64 array without the rounding error of x*x (x split into a 26-bit
    head and a tail: head*head is exact, and exp(-tail*(x+head)) is near 1)."""
    xp = xp_of(x)
    if not getattr(x, "ndim", 0):  # 0-d: arithmetic on it gives scalars, which out= refuses
        return _exp_neg_square(xp.asarray(x, dtype=host.float64).reshape(1)).reshape(())
    head = (x.view(host.int64) & ~((1 << 27) - 1)).view(host.float64)
    tail = x - head
    tail *= x + head
    xp.negative(tail, out=tail)
    xp.exp(tail, out=tail)
    head *= head
    xp.negative(head, out=head)
    xp.exp(head, out=head)
    head *= tail
    return head


def _erfcx_mid(a):
    """erfcx on 1/2 <= a < 2."""
    r = _horner(_ERFCX_MID[0], a)
    r /= _horner(_ERFCX_MID[1], a)
    return r


def _erfcx_tail(a):
    """erfcx on a >= 2 (inf and nan as 28, a value where erfc is 0, and nan)."""
    c0, num, den = _ERFCX_TAIL
    s = 1.0 / (a * a)
    r = _horner(num, s)
    r /= _horner(den, s)
    r *= s
    r += c0
    r /= a
    return r


_SIGN_BIT = -(1 << 63)


def _erf_erfc(x, want_erfc: bool):
    """erf(x) (or erfc(x)) of a float64 array, within ~2 ulp: erf = x P(x*x) below |x| = 1/2
    (erfc = 1 - erf there); above, erfc(|x|) = exp(-x*x) erfcx(|x|) (``_exp_neg_square``;
    erfcx ``_erfcx_mid`` below 2, ``_erfcx_tail`` above) and erf = 1 - erfc, mirrored for x < 0
    (erf(-a) = -erf(a), erfc(-a) = 2 - erfc(a)). NaN gives NaN; +-inf +-1 (erfc 0 and 2).

    NOTE: each of the three formulas runs on its own elements only, gathered with
    ``flatnonzero`` (~0.15 ms for 256K elements, against ~1 ms for a boolean index or
    ``where`` on a mixed mask). (16, 64, 256), x ~ N(0, 4): 16.8 -> ~4.5 ms (torch 0.8, erfc
    1.7): ~50 array passes an element, where the series and continued fraction took ~150."""
    xp = xp_of(x)
    if _traced(x):
        return _erf_erfc_everywhere(x, want_erfc)
    flat = x.reshape(-1)
    ax = xp.abs(flat)
    out = xp.empty_like(flat)
    small, mid = ax < 0.5, ax < 2.0
    mid &= ~small
    parts = [(xp.flatnonzero(small), None), (xp.flatnonzero(mid), _erfcx_mid)]
    done = parts[0][0].size + parts[1][0].size
    if done < flat.size:
        small |= mid  # the rest (nan included): the tail
        parts.append((xp.flatnonzero(~small), _erfcx_tail))
    for idx, erfcx in parts:
        if not idx.size:
            continue
        whole = idx.size == flat.size
        xs = flat if whole else flat[idx]
        if erfcx is None:
            r = _horner(_ERF_SMALL, xs * xs)
            r *= xs
            if want_erfc:
                xp.subtract(1.0, r, out=r)
        else:
            a = ax if whole else ax[idx]
            if erfcx is _erfcx_tail:
                a = xp.minimum(a, 28.0)  # exp(-784) is 0: erfc(inf) = 0, all finite
            r = _exp_neg_square(a)
            r *= erfcx(a)
            # the sign of x on |erf| (erf) or on erfc(|x|), then 2 added for x < 0 (erfc)
            sign = xs.view(host.int64) & _SIGN_BIT
            if not want_erfc:
                xp.subtract(1.0, r, out=r)
            bits = r.view(host.int64)
            bits |= sign
            if want_erfc:
                r += (xs < 0) * 2.0
        if whole:
            return r.reshape(x.shape)
        out[idx] = r
    return out.reshape(x.shape)


def _traced(x) -> bool:
    """Whether ``x`` is a traced array of ``ember.compile``'s capture (a host array other
    than NumPy's own): its program must not depend on which elements fall in which region."""
    return type(x) is not ndarray and type(x) in HOST_ARRAYS


def _erf_erfc_everywhere(x, want_erfc: bool):
    """``_erf_erfc`` for a traced array: each region's formula on every element, the results
    picked by region with ``where`` (the same operations an element, so the same bits; the
    gathers' shapes would depend on the data, which a replay must not)."""
    xp = xp_of(x)
    flat = x.reshape(-1)
    ax = xp.abs(flat)
    with ignore_all():
        small = _horner(_ERF_SMALL, flat * flat) * flat
        if want_erfc:
            small = 1.0 - small
        rest = []
        for a, erfcx in ((ax, _erfcx_mid), (xp.minimum(ax, 28.0), _erfcx_tail)):
            r = _exp_neg_square(a) * erfcx(a)
            if not want_erfc:
                r = 1.0 - r
            r = (r.view(host.int64) | (flat.view(host.int64) & _SIGN_BIT)).view(host.float64)
            if want_erfc:
                r = r + (flat < 0) * 2.0
            rest.append(r)
    out = xp.where(ax < 0.5, small, xp.where(ax < 2.0, rest[0], rest[1]))
    return out.reshape(x.shape)


_ERF_FLOAT32_DTYPES = (host.dtype(host.float32), host.dtype(host.float16))


def _erf_float32(a):
    """erf of a float32 (or float16) array: the float32 fit ``_ERF_F32``, evaluated in float64
    and rounded once. NOTE: (16, 64, 256): ~1.2 ms against 16.5 through the float64 kernel
    (torch 0.34); in float32 arithmetic it runs in ~0.6 ms but is up to 6 ulp off."""
    xp = xp_of(a)
    x = xp.clip(a, -4.0, 4.0).astype(host.float64)  # erf(4) rounds to 1 in float32
    t = x * x
    e = _horner(_ERF_F32[0], t) / _horner(_ERF_F32[1], t) * x  # (a 0-d one is a scalar)
    return e.astype(a.dtype)


def _erfc_float32(a):
    """erfc of a float32 (or float16) array, in float64 and rounded once: 1 - erf (the fit
    ``_ERF_F32``) below x = 1/2, exp(-x*x) erfcx(x) (``_ERFCX_F32``) above, x*x exact in
    float64 for a float32 x. NOTE: (16, 64, 256): 16.7 ms through the float64 kernel before,
    4.2 through its new version, ~2.4 here (torch 0.46; a third of it is the gathers and
    scatters of the two regions, still less than evaluating both everywhere)."""
    xp = xp_of(a)
    x = a.astype(host.float64).reshape(-1)
    if _traced(a):  # (see ``_erf_erfc_everywhere``)
        with ignore_all():
            v = xp.clip(x, -4.0, 4.0)
            t = v * v
            low = 1.0 - _horner(_ERF_F32[0], t) / _horner(_ERF_F32[1], t) * v
            v = xp.minimum(x, 10.5)
            t = v * v
            high = _horner(_ERFCX_F32[0], 1.0 / t) / _horner(_ERFCX_F32[1], 1.0 / t) / v * \
                xp.exp(-t)
        return xp.where(x < 0.5, low, high).reshape(a.shape).astype(a.dtype)
    out = xp.empty_like(x)
    low = x < 0.5
    for idx, is_low in ((xp.flatnonzero(low), True), (xp.flatnonzero(~low), False)):
        if not idx.size:
            continue
        whole = idx.size == x.size
        v = x if whole else x[idx]
        if is_low:
            v = xp.clip(v, -4.0, 4.0)  # (erfc rounds to 2 below -4 in float32)
            t = v * v
            r = _horner(_ERF_F32[0], t)
            r /= _horner(_ERF_F32[1], t)
            r *= v
            xp.subtract(1.0, r, out=r)
        else:
            v = xp.minimum(v, 10.5)  # inf as 10.5: erfc 0 in float32; nan stays nan
            t = v * v
            s = 1.0 / t
            r = _horner(_ERFCX_F32[0], s)
            r /= _horner(_ERFCX_F32[1], s)
            r /= v
            xp.negative(t, out=t)
            r *= xp.exp(t, out=t)
        if whole:
            return r.reshape(a.shape).astype(a.dtype)
        out[idx] = r
    return out.reshape(a.shape).astype(a.dtype)


def _float64_math(fn, a):
    """``fn`` evaluated in float64 on the array ``a``, the result in ``a``'s dtype."""
    out = xp_of(a).asarray(fn(a.astype(host.float64)), dtype=host.float64)
    return out.astype(a.dtype, copy=False)


def _erfinv64(y):
    xp = xp_of(y)
    ay = xp.abs(y)
    with ignore_divide_invalid():
        # Winitzki: erfinv(y) ~ sqrt(sqrt(b^2 - l/a) - b), l = log(1 - y^2), b = 2/(pi a) + l/2
        a = 0.147
        ln = xp.log((1.0 - ay) * (1.0 + ay))
        b = 2.0 / (math.pi * a) + 0.5 * ln
        x = xp.sqrt(xp.sqrt(b * b - ln / a) - b)
        inner = ay < 0.5
        x = xp.where(inner, _SQRT_PI / 2 * ay * (1 + math.pi / 12 * ay * ay), x)
        ok = ay < 1.0
        x = xp.where(ok, x, 0.0)
        c = 1.0 - ay  # exact for ay >= 0.5
        for _ in range(3):
            fprime = _TWO_OVER_SQRT_PI * _exp_neg_square(x)
            resid = xp.where(inner, _erf_erfc(x, False) - ay, c - _erf_erfc(x, True))
            u = xp.where(fprime > 0, resid / fprime, 0.0)
            x = x - u / (1.0 + x * u)
        x = xp.where(ok, x, xp.where(ay == 1.0, math.inf, math.nan))
    return xp.copysign(x, y)


# ---------------- more unary math: exp2, log1p, hyperbolic and inverse trigonometry, erf, rounding


class Exp2Backward0(Op):
    """exp2: d/dx = grad * result * log(2)."""

    __slots__ = ()
    save_output = True

    ufunc = "exp2"

    def backward(self, grad):
        return grad * (self.saved_output() * _LN2)


class Expm1Backward0(Op):
    """expm1: d/dx = grad * (result + 1)."""

    __slots__ = ()
    save_output = True

    ufunc = "expm1"

    def backward(self, grad):
        return grad * (self.saved_output() + 1)


class Log2Backward0(Op):
    """log2: d/dx = grad / (x * log(2))."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_divide_invalid():
            return xp_of(a).log2(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / (a * _LN2)


class Log10Backward0(Op):
    """log10: d/dx = grad / (x * log(10))."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_divide_invalid():
            return xp_of(a).log10(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / (a * _LN10)


class Log1PBackward0(Op):
    """log1p: d/dx = grad / (x + 1)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_divide_invalid():
            return xp_of(a).log1p(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / (a + 1)


class RsqrtBackward0(Op):
    """rsqrt: d/dx = -0.5 * grad * result**3."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        with ignore_divide_invalid():
            return 1 / xp_of(a).sqrt(a)

    def backward(self, grad):
        y = self.saved_output()
        return grad * (y * y * y * -0.5)


class TanBackward0(Op):
    """tan: d/dx = grad * (1 + result**2)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        return xp_of(a).tan(a)

    def backward(self, grad):
        y = self.saved_output()
        return grad * (y * y + 1)


class AsinBackward0(Op):
    """asin: d/dx = grad / sqrt(1 - x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_invalid():
            return xp_of(a).arcsin(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * rsqrt(1 - a * a)


class AcosBackward0(Op):
    """acos: d/dx = -grad / sqrt(1 - x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_invalid():
            return xp_of(a).arccos(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * -rsqrt(1 - a * a)


class AtanBackward0(Op):
    """atan: d/dx = grad / (1 + x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return xp_of(a).arctan(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / (a * a + 1)


class SinhBackward0(Op):
    """sinh: d/dx = grad * cosh(x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_over():
            return xp_of(a).sinh(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * cosh(a)


class CoshBackward0(Op):
    """cosh: d/dx = grad * sinh(x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_over():
            return xp_of(a).cosh(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * sinh(a)


class AsinhBackward0(Op):
    """asinh: d/dx = grad / sqrt(x**2 + 1)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return xp_of(a).arcsinh(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * rsqrt(a * a + 1)


class AcoshBackward0(Op):
    """acosh: d/dx = grad / sqrt(x**2 - 1)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_invalid():
            return xp_of(a).arccosh(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * rsqrt(a * a - 1)


class AtanhBackward0(Op):
    """atanh: d/dx = grad / (1 - x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with ignore_divide_invalid():
            return xp_of(a).arctanh(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / (1 - a * a)


class LogitBackward0(Op):
    """logit(x, eps): log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given.

    d/dx = grad / (x (1 - x)); 0 outside [eps, 1 - eps] (with eps), NaN outside [0, 1] (without).
    """

    __slots__ = ("eps",)
    save_inputs = (0,)

    def forward(self, a, eps):
        self.eps = eps
        if eps is not None:
            a = a.clip(eps, 1 - eps)
        with ignore_divide_invalid():
            return xp_of(a).log(a / (1 - a))

    def backward(self, grad):
        (a,) = self.saved()
        x = a._data
        d = grad / (a * (1 - a))
        if self.eps is None:
            outside = (x < 0) | (x > 1)
            return where(_make(outside), math.nan, d) if outside.any() else d
        return where(_make((x < self.eps) | (x > 1 - self.eps)), 0.0, d)


class ErfBackward0(Op):
    """erf: d/dx = grad * 2/sqrt(pi) * exp(-x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        if a.dtype == host.float64:
            return _erf_erfc(a, False)
        if a.dtype in _ERF_FLOAT32_DTYPES:
            return _erf_float32(a)
        return _float64_math(lambda v: _erf_erfc(v, False), a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * (exp(-(a * a)) * _TWO_OVER_SQRT_PI)


class ErfcBackward0(Op):
    """erfc: d/dx = -grad * 2/sqrt(pi) * exp(-x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        if a.dtype == host.float64:
            return _erf_erfc(a, True)
        if a.dtype in _ERF_FLOAT32_DTYPES:
            return _erfc_float32(a)
        return _float64_math(lambda v: _erf_erfc(v, True), a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * (exp(-(a * a)) * -_TWO_OVER_SQRT_PI)


class ErfinvBackward0(Op):
    """erfinv: d/dx = grad * sqrt(pi)/2 * exp(result**2)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        return _float64_math(_erfinv64, a)

    def backward(self, grad):
        y = self.saved_output()
        return grad * (exp(y * y) * (_SQRT_PI / 2))


class SincBackward0(Op):
    """sinc(x) = sin(pi x) / (pi x), 1 at 0: d/dx = grad (cos(pi x) - sinc(x)) / x, 0 at 0."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        xp = xp_of(a)
        px = a * math.pi
        with ignore_divide_invalid():
            out = xp.sin(px) / px
        return xp.where(a == 0, xp.ones((), a.dtype), out)

    def backward(self, grad):
        (a,) = self.saved()
        zero = _make(a._data == 0)
        safe = where(zero, 1.0, a)  # no 0/0 in this branch (it would leak into double backward)
        px = safe * math.pi
        d = (px * cos(px) - sin(px)) / (px * safe)
        return grad * where(zero, 0.0, d)


class Deg2RadBackward0(Op):
    """deg2rad: d/dx = grad * pi / 180."""

    __slots__ = ()

    def forward(self, a):
        return a * (math.pi / 180)

    def backward(self, grad):
        return grad * (math.pi / 180)


class Rad2DegBackward0(Op):
    """rad2deg: d/dx = grad * 180 / pi."""

    __slots__ = ()

    def forward(self, a):
        return a * (180 / math.pi)

    def backward(self, grad):
        return grad * (180 / math.pi)


class FracBackward0(Op):
    """frac(x) = x - trunc(x): d/dx = grad."""

    __slots__ = ()

    def forward(self, a):
        return a - xp_of(a).trunc(a)

    def backward(self, grad):
        return grad


class NanToNumBackward0(Op):
    """nan_to_num: d/dx = grad where x is finite, else 0."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a, nan, posinf, neginf):
        return xp_of(a).nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)

    def backward(self, grad):
        (a,) = self.saved()
        x = a._data
        return where(_make(xp_of(x).isfinite(x)), grad, 0.0)


class _Rounding(Op):
    """A piecewise-constant rounding: its gradient is 0 (torch records zeros_like(grad))."""

    __slots__ = ()

    def backward(self, grad):
        return grad * 0


class FloorBackward0(_Rounding):
    __slots__ = ()

    def forward(self, a):
        return xp_of(a).floor(a)


class CeilBackward0(_Rounding):
    __slots__ = ()

    def forward(self, a):
        return xp_of(a).ceil(a)


class TruncBackward0(_Rounding):
    __slots__ = ()

    def forward(self, a):
        return xp_of(a).trunc(a)


class RoundBackward0(_Rounding):
    """round: half to even, as torch."""

    __slots__ = ()

    def forward(self, a):
        return xp_of(a).rint(a)


class RoundBackward1(_Rounding):
    """round(decimals=d): rint(x * 10**d) / 10**d (rint(x / 10**-d) * 10**-d for d < 0)."""

    __slots__ = ()

    def forward(self, a, decimals):
        k = -decimals if decimals < 0 else decimals
        with ignore_invalid_over():
            xp = xp_of(a)
            scale = xp.asarray(10.0 ** k if k < 309 else math.inf).astype(a.dtype)  # as torch
            if decimals >= 0:
                return xp.rint(a * scale) / scale
            return xp.rint(a / scale) * scale


class _InplaceNotDifferentiable(Op):
    """torch records ``asinh_``/``acosh_``/``atanh_`` with a node of their own (named
    ``...Backward1``) whose backward refuses: the in-place forms are not differentiable."""

    __slots__ = ()

    def backward(self, grad):
        name = type(self).__name__.removesuffix("Backward1").lower()
        raise NotImplementedError(f"the derivative for 'inplace version of {name}' is not "
                                  "implemented.")


class AsinhBackward1(_InplaceNotDifferentiable):
    __slots__ = ()
    forward = AsinhBackward0.forward


class AcoshBackward1(_InplaceNotDifferentiable):
    __slots__ = ()
    forward = AcoshBackward0.forward


class AtanhBackward1(_InplaceNotDifferentiable):
    __slots__ = ()
    forward = AtanhBackward0.forward


def _inplace_only(cls, name: str):
    fn = unary_apply(cls, to_float=True)
    fn.__name__ = name

    def method(self: Tensor) -> Tensor:
        return _inplace(self, fn)

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place ``{name}`` (not differentiable, as in torch)."
    return method


# -------------------------------------------------------------------------------- public functions


def _float_unary(cls, name: str, **registration):
    """Register a unary math function of a floating result (integer inputs give the default
    float): ``ember.<name>`` (``unary_function``: torch's ``x=``/``a=``/``x1=`` spellings of
    ``input`` are parameters of its own, so the registry wraps it in nothing) and
    ``Tensor.<name>``, which is ``unary_apply`` itself."""
    apply = unary_apply(cls, to_float=True)
    fn = unary_function(cls, name, _resolve_input, _maybe_out, to_float=True)
    apply.__name__ = apply.__qualname__ = name
    fn.__doc__ = apply.__doc__ = f"``torch.{name}``; integer inputs give the default float dtype."
    return register(fn, method=apply, **registration)


def _resolve_input(name: str, input, x, a, x1) -> Tensor:
    """``unary_function``'s input given other than as one Tensor positionally: by one of
    torch's other spellings, or not a Tensor (torch's TypeError)."""
    if input is MISSING or x is not MISSING or a is not MISSING or x1 is not MISSING:
        input = keyword_input(name, input, x=x, a=a, x1=x1)
    return _check_tensor(input, name)


def keyword_input(name: str, input, **aliases):
    """``input`` given by one of torch's spellings of it, or torch's TypeError (torch names
    the spelling before the last; with two spellings as parameters the call's order is not
    known here, so the first of x, a, x1)."""
    given = [k for k, v in aliases.items() if v is not MISSING]
    if input is not MISSING and given or len(given) > 1:
        raise TypeError(f"{name}() got an unexpected keyword argument '{given[0]}'")
    if not given:
        raise TypeError(f"{name}() missing 1 required positional argument: 'input'")
    return aliases[given[0]]


exp = _float_unary(ExpBackward0, "exp", inplace=True)
log = _float_unary(LogBackward0, "log", inplace=True)
sqrt = _float_unary(SqrtBackward0, "sqrt", inplace=True)
sin = _float_unary(SinBackward0, "sin", inplace=True)
cos = _float_unary(CosBackward0, "cos", inplace=True)
tanh = _float_unary(TanhBackward0, "tanh", inplace=True)
sigmoid = _float_unary(SigmoidBackward0, "sigmoid", inplace=True)
reciprocal = _float_unary(ReciprocalBackward0, "reciprocal", inplace=True)


@register(inplace=True)
def relu(input: Tensor) -> Tensor:
    """``torch.relu``: max(x, 0); its node is ``ReluBackward0``."""
    return apply1(ReluBackward0, _check_tensor(input, "relu"))


@register(inplace=True, aliases=("absolute",), operators=("__abs__",))
def abs(input: Tensor, *, out=None) -> Tensor:
    """``torch.abs``; the derivative at 0 is 0, as in torch."""
    return _maybe_out(apply1(AbsBackward0, _check_tensor(input, "abs")), out)


@register(inplace=True)
def sign(input: Tensor) -> Tensor:
    return apply1(SignBackward0, input)


def _as_float(x: Tensor) -> Tensor:
    """Integer and bool tensors are computed in the default float dtype, as torch does."""
    if x._data.dtype.kind not in FLOAT_KINDS:
        return _make(x._data.astype(_dt.get_default_dtype().np))
    return x


exp2 = _float_unary(Exp2Backward0, "exp2", inplace=True)
expm1 = _float_unary(Expm1Backward0, "expm1", inplace=True)
log2 = _float_unary(Log2Backward0, "log2", inplace=True)
log10 = _float_unary(Log10Backward0, "log10", inplace=True)
log1p = _float_unary(Log1PBackward0, "log1p", inplace=True)
rsqrt = _float_unary(RsqrtBackward0, "rsqrt", inplace=True)
tan = _float_unary(TanBackward0, "tan", inplace=True)
asin = _float_unary(AsinBackward0, "asin", inplace=True, aliases=("arcsin",))
acos = _float_unary(AcosBackward0, "acos", inplace=True, aliases=("arccos",))
atan = _float_unary(AtanBackward0, "atan", inplace=True, aliases=("arctan",))
sinh = _float_unary(SinhBackward0, "sinh", inplace=True)
cosh = _float_unary(CoshBackward0, "cosh", inplace=True)
asinh = _float_unary(AsinhBackward0, "asinh", aliases=("arcsinh",),
                     inplace=_inplace_only(AsinhBackward1, "asinh"))
acosh = _float_unary(AcoshBackward0, "acosh", aliases=("arccosh",),
                     inplace=_inplace_only(AcoshBackward1, "acosh"))
atanh = _float_unary(AtanhBackward0, "atanh", aliases=("arctanh",),
                     inplace=_inplace_only(AtanhBackward1, "atanh"))
erf = _float_unary(ErfBackward0, "erf", inplace=True)
erfc = _float_unary(ErfcBackward0, "erfc", inplace=True)
erfinv = _float_unary(ErfinvBackward0, "erfinv", inplace=True)
sinc = _float_unary(SincBackward0, "sinc", inplace=True)
deg2rad = _float_unary(Deg2RadBackward0, "deg2rad", inplace=True)
rad2deg = _float_unary(Rad2DegBackward0, "rad2deg", inplace=True)


@register(inplace=True)
def logit(input: Tensor, eps: float | None = None, *, out=None) -> Tensor:
    """``torch.logit``: log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given."""
    x = _as_float(_check_tensor(input, "logit"))
    return _maybe_out(apply1(LogitBackward0, x, None if eps is None else float(eps)), out)


def _rounding(cls, name: str, kernel: str):
    """floor/ceil/trunc/round: integer tensors come back unchanged (a copy), bool refused."""

    def fn(input: Tensor, *, out=None) -> Tensor:
        x = _check_tensor(input, name)
        kind = x._data.dtype.kind
        if kind == "b":
            raise NotImplementedError(f"\"{kernel}_vml_cpu\" not implemented for 'Bool'")
        if kind not in FLOAT_KINDS:
            return _maybe_out(_make(x._data.copy()), out)
        return _maybe_out(apply1(cls, x), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``; its gradient is 0."
    return fn


floor = register(_rounding(FloorBackward0, "floor", "floor"), inplace=True)
ceil = register(_rounding(CeilBackward0, "ceil", "ceil"), inplace=True)
trunc = register(_rounding(TruncBackward0, "trunc", "trunc"), inplace=True)
fix = register(_rounding(TruncBackward0, "fix", "trunc"), inplace=True)
_round0 = _rounding(RoundBackward0, "round", "round")


@register(inplace=True)
def round(input: Tensor, *, decimals: int | None = None, out=None) -> Tensor:
    """``torch.round``: half to even; ``decimals`` rounds to that many decimal places."""
    if decimals is None:
        return _round0(input, out=out)
    x = _check_tensor(input, "round")
    if x._data.dtype.kind not in FLOAT_KINDS:
        raise NotImplementedError(f"\"round_cpu\" not implemented for '{scalar_name(x.dtype)}'")
    return _maybe_out(apply1(RoundBackward1, x, int(decimals)), out)


@register(inplace=True)
def frac(input: Tensor, *, out=None) -> Tensor:
    """``torch.frac``: x - trunc(x), floating tensors only."""
    x = _check_tensor(input, "frac")
    if x._data.dtype.kind not in FLOAT_KINDS:
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{scalar_name(x.dtype)}'")
    return _maybe_out(apply1(FracBackward0, x), out)


@register(inplace=True)
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None, *, out=None) -> Tensor:
    """``torch.nan_to_num``: NaN, +inf and -inf replaced (infinities by the dtype's extremes
    unless given); integer and bool tensors come back unchanged (a copy)."""
    x = _check_tensor(input, "nan_to_num")
    if x._data.dtype.kind not in FLOAT_KINDS:
        return _maybe_out(_make(x._data.copy()), out)
    return _maybe_out(apply1(NanToNumBackward0, x, nan, posinf, neginf), out)


# -------------------------------------------------------------------------------- casts and copies


def to_dtype(input: Tensor, dtype: _dt.dtype) -> Tensor:
    """A differentiable cast (``ToCopyBackward0``); the result requires grad only if floating."""
    out = apply1(ToCopyBackward0, input, dtype.np)
    if out._grad_fn is not None and not dtype.is_floating_point and not dtype.is_complex:
        out._grad_fn = None
        out._requires_grad = False
    return out


@register(export=False)
def to(self: Tensor, *args, **kwargs) -> Tensor:
    """``Tensor.to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``; self if
    unchanged."""
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, (_dt.dtype, type)) or (isinstance(a, str) and a in _dt.ALIASES):
            dtype = a
        elif isinstance(a, (str, device)):
            dev = a
        elif isinstance(a, bool):
            continue
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {args}")
    dtype = None if dtype is None else _dt.to_dtype(dtype)
    if dev is not None and to_device(dev) != device_of(self._data):
        return to_device_copy(self, to_device(dev), dtype)
    if dtype is None or dtype.np == self._data.dtype:
        return self.clone() if copy else self
    return to_dtype(self, dtype)


@register
def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """``torch.clone``: a copy that stays in the graph (``CloneBackward0``)."""
    return apply1(CloneBackward0, input)


@register(export=False)
def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """Self if already C-contiguous, else a contiguous copy (``CloneBackward0``)."""
    if input._data.flags.c_contiguous:
        return input
    return clone(input)
