"""Pointwise math beyond the core: exp2/expm1/log2/log10/log1p, inverse and hyperbolic
trigonometry, the erf family, rounding, remainder/fmod, lerp/addcmul/addcdiv, hypot, logaddexp,
nan_to_num, xlogy, sinc, copysign, heaviside, float_power.

Each class is one op, its forward (NumPy) beside its derivative (ember ops, so higher-order
gradients work), named as torch names the node. Derivatives follow torch's derivatives.yaml.

NOTE: most ops here are primitives rather than composites because torch records each with a
node of its own (``Exp2Backward0``, ``LerpBackward1``, ...) and the op table checks the names;
where torch's node is a composite's, ember composes too (``float_power`` is a cast and
``pow``, ``fix`` is ``trunc``, the ``arc*`` names are aliases, ``positive`` is the identity).
"""

from __future__ import annotations

import math

from .._backend import dtypes as _dt
from .._backend import host, is_array, xp_of
from .._tensor import Tensor, _make
from ._op import BinaryOp, Op, apply1, promote
from .elementwise import (
    _maybe_out,
    _promote_all,
    _raise_not_broadcastable,
    cos,
    div,
    exp,
    pow,
    scalar_name,
    sin,
    to_dtype,
    where,
)
from .inplace import inplace as _inplace

__all__ = [
    "acos",
    "acosh",
    "addcdiv",
    "addcmul",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "ceil",
    "copysign",
    "cosh",
    "deg2rad",
    "erf",
    "erfc",
    "erfinv",
    "exp2",
    "expm1",
    "fix",
    "float_power",
    "floor",
    "fmax",
    "fmin",
    "fmod",
    "frac",
    "heaviside",
    "hypot",
    "lerp",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "logit",
    "nan_to_num",
    "positive",
    "rad2deg",
    "remainder",
    "round",
    "rsqrt",
    "sinc",
    "sinh",
    "tan",
    "trunc",
    "xlogy",
]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_SQRT_PI = math.sqrt(math.pi)
_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI


def _const(values, like: Tensor) -> Tensor:
    """A constant (non-differentiable) tensor of ``values`` (an array) in ``like``'s dtype."""
    d = like._data
    return _make(xp_of(d).asarray(values, dtype=d.dtype))


# --------------------------------------------------------------------------- erf family
# NOTE: no scipy. erf/erfc are computed in float64 from two expansions, each used where it
# converges fast and keeps full relative accuracy (both about 1e-15 against math.erf/erfc):
#   |x| < 2:  erf(x)  = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1*3*...*(2n+1))
#             (all terms positive: no cancellation; 40 terms reach 1e-16 at |x| = 2)
#   |x| >= 2: erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
#             (the continued fraction evaluated bottom-up at a fixed depth of 60)
# erfinv starts from Winitzki's closed-form approximation (relative error < 2e-3) and takes
# Halley steps (cubic convergence) on erf(x) = y, or on erfc(x) = 1 - y where y > 0.5, so the
# tail keeps its relative accuracy.

_SERIES_TERMS = 40
_CF_DEPTH = 60
_SPLIT = 2.0


def _exp_neg_square(x):
    """exp(-x*x) of a float64 array without the rounding error of x*x (x split into a 26-bit
    head and a tail)."""
    xp = xp_of(x)
    head = (x.view(host.int64) & ~((1 << 27) - 1)).view(host.float64)
    tail = x - head
    return xp.exp(-head * head) * xp.exp(-tail * (x + head))


def _erf_series(x):
    x2 = 2.0 * x * x
    term = x.copy()
    total = x.copy()
    for k in range(1, _SERIES_TERMS):
        term *= x2 / (2 * k + 1)
        total += term
    return _TWO_OVER_SQRT_PI * _exp_neg_square(x) * total


def _erfc_fraction(x):
    t = x.copy()
    for k in range(_CF_DEPTH, 0, -1):
        t = x + (0.5 * k) / t
    return _exp_neg_square(x) / _SQRT_PI / t


def _erf_erfc(x, want_erfc: bool):
    """erf(x) (or erfc(x)) of a float64 array."""
    xp = xp_of(x)
    ax = xp.minimum(abs(x), 30.0)  # erfc underflows to 0 well before |x| = 30
    out = xp.full(x.shape, math.nan)
    small = ax < _SPLIT
    large = ax >= _SPLIT
    e_small = _erf_series(ax[small])
    c_large = _erfc_fraction(ax[large])
    neg = xp.signbit(x)
    if want_erfc:  # erfc(-a) = 2 - erfc(a)
        out[small] = xp.where(neg[small], 1.0 + e_small, 1.0 - e_small)
        out[large] = xp.where(neg[large], 2.0 - c_large, c_large)
    else:  # erf(-a) = -erf(a)
        out[small] = xp.where(neg[small], -e_small, e_small)
        out[large] = xp.where(neg[large], c_large - 1.0, 1.0 - c_large)
    return out


def _float64_math(fn, a):
    """``fn`` evaluated in float64 on the array ``a``, the result in ``a``'s dtype."""
    out = xp_of(a).asarray(fn(a.astype(host.float64)), dtype=host.float64)
    return out.astype(a.dtype, copy=False)


def _erfinv64(y):
    xp = xp_of(y)
    ay = abs(y)
    with host.errstate(divide="ignore", invalid="ignore"):
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


# --------------------------------------------------------------------------- unary ops


class Exp2Backward0(Op):
    """exp2: d/dx = grad * result * log(2)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        return xp_of(a).exp2(a)

    def backward(self, grad):
        return grad * (self.saved_output() * _LN2)


class Expm1Backward0(Op):
    """expm1: d/dx = grad * (result + 1)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        return xp_of(a).expm1(a)

    def backward(self, grad):
        return grad * (self.saved_output() + 1)


class Log2Backward0(Op):
    """log2: d/dx = grad / (x * log(2))."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with host.errstate(divide="ignore", invalid="ignore"):
            return xp_of(a).log2(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / (a * _LN2)


class Log10Backward0(Op):
    """log10: d/dx = grad / (x * log(10))."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with host.errstate(divide="ignore", invalid="ignore"):
            return xp_of(a).log10(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / (a * _LN10)


class Log1PBackward0(Op):
    """log1p: d/dx = grad / (x + 1)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with host.errstate(divide="ignore", invalid="ignore"):
            return xp_of(a).log1p(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / (a + 1)


class RsqrtBackward0(Op):
    """rsqrt: d/dx = -0.5 * grad * result**3."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        with host.errstate(divide="ignore", invalid="ignore"):
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
        with host.errstate(invalid="ignore"):
            return xp_of(a).arcsin(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * rsqrt(1 - a * a)


class AcosBackward0(Op):
    """acos: d/dx = -grad / sqrt(1 - x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with host.errstate(invalid="ignore"):
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
        with host.errstate(over="ignore"):
            return xp_of(a).sinh(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * cosh(a)


class CoshBackward0(Op):
    """cosh: d/dx = grad * sinh(x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with host.errstate(over="ignore"):
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
        with host.errstate(invalid="ignore"):
            return xp_of(a).arccosh(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * rsqrt(a * a - 1)


class AtanhBackward0(Op):
    """atanh: d/dx = grad / (1 - x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with host.errstate(divide="ignore", invalid="ignore"):
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
        with host.errstate(divide="ignore", invalid="ignore"):
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
        return _float64_math(lambda v: _erf_erfc(v, False), a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * (exp(-(a * a)) * _TWO_OVER_SQRT_PI)


class ErfcBackward0(Op):
    """erfc: d/dx = -grad * 2/sqrt(pi) * exp(-x**2)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
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
        with host.errstate(divide="ignore", invalid="ignore"):
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
        with host.errstate(over="ignore", invalid="ignore"):
            xp = xp_of(a)
            scale = xp.asarray(10.0 ** k if k < 309 else math.inf).astype(a.dtype)  # as torch
            if decimals >= 0:
                return xp.rint(a * scale) / scale
            return xp.rint(a / scale) * scale


# --------------------------------------------------------------------------- public unary functions


def _check_tensor(x, op: str, arg: str = "input", pos: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _as_float(x: Tensor) -> Tensor:
    """Integer and bool tensors are computed in the default float dtype, as torch does."""
    if x._data.dtype.kind != "f":
        return _make(x._data.astype(_dt.get_default_dtype().np))
    return x


def _float_unary(cls, name: str):
    """A unary math function of a floating result (integer inputs give the default float)."""

    def fn(input: Tensor, *, out=None) -> Tensor:
        return _maybe_out(apply1(cls, _as_float(_check_tensor(input, name))), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``; integer inputs give the default float dtype."
    return fn


exp2 = _float_unary(Exp2Backward0, "exp2")
expm1 = _float_unary(Expm1Backward0, "expm1")
log2 = _float_unary(Log2Backward0, "log2")
log10 = _float_unary(Log10Backward0, "log10")
log1p = _float_unary(Log1PBackward0, "log1p")
rsqrt = _float_unary(RsqrtBackward0, "rsqrt")
tan = _float_unary(TanBackward0, "tan")
asin = _float_unary(AsinBackward0, "asin")
acos = _float_unary(AcosBackward0, "acos")
atan = _float_unary(AtanBackward0, "atan")
sinh = _float_unary(SinhBackward0, "sinh")
cosh = _float_unary(CoshBackward0, "cosh")
asinh = _float_unary(AsinhBackward0, "asinh")
acosh = _float_unary(AcoshBackward0, "acosh")
atanh = _float_unary(AtanhBackward0, "atanh")
erf = _float_unary(ErfBackward0, "erf")
erfc = _float_unary(ErfcBackward0, "erfc")
erfinv = _float_unary(ErfinvBackward0, "erfinv")
sinc = _float_unary(SincBackward0, "sinc")
deg2rad = _float_unary(Deg2RadBackward0, "deg2rad")
rad2deg = _float_unary(Rad2DegBackward0, "rad2deg")
arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh


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
        if kind != "f":
            return _maybe_out(_make(x._data.copy()), out)
        return _maybe_out(apply1(cls, x), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``; its gradient is 0."
    return fn


floor = _rounding(FloorBackward0, "floor", "floor")
ceil = _rounding(CeilBackward0, "ceil", "ceil")
trunc = _rounding(TruncBackward0, "trunc", "trunc")
fix = _rounding(TruncBackward0, "fix", "trunc")
_round0 = _rounding(RoundBackward0, "round", "round")


def round(input: Tensor, *, decimals: int | None = None, out=None) -> Tensor:
    """``torch.round``: half to even; ``decimals`` rounds to that many decimal places."""
    if decimals is None:
        return _round0(input, out=out)
    x = _check_tensor(input, "round")
    if x._data.dtype.kind != "f":
        raise NotImplementedError(f"\"round_cpu\" not implemented for '{scalar_name(x.dtype)}'")
    return _maybe_out(apply1(RoundBackward1, x, int(decimals)), out)


def frac(input: Tensor, *, out=None) -> Tensor:
    """``torch.frac``: x - trunc(x), floating tensors only."""
    x = _check_tensor(input, "frac")
    if x._data.dtype.kind != "f":
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{scalar_name(x.dtype)}'")
    return _maybe_out(apply1(FracBackward0, x), out)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None, *, out=None) -> Tensor:
    """``torch.nan_to_num``: NaN, +inf and -inf replaced (infinities by the dtype's extremes
    unless given); integer and bool tensors come back unchanged (a copy)."""
    x = _check_tensor(input, "nan_to_num")
    if x._data.dtype.kind != "f":
        return _maybe_out(_make(x._data.copy()), out)
    return _maybe_out(apply1(NanToNumBackward0, x, nan, posinf, neginf), out)


def positive(input: Tensor) -> Tensor:
    """``torch.positive``: ``input`` itself (torch returns the same tensor); bool refused."""
    x = _check_tensor(input, "positive")
    if x._data.dtype == host.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


# --------------------------------------------------------------------------- binary ops


class RemainderBackward0(Op):
    """remainder(input, other: scalar) (Python's %): d/dinput = grad."""

    __slots__ = ()

    def forward(self, a, b):
        return _mod("remainder", a, b)

    def backward(self, grad):
        return grad


class RemainderBackward1(BinaryOp):
    """remainder(input, other: Tensor): d/dinput = grad, d/dother = -grad * floor(input/other)."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return _mod("remainder", a, b)

    def backward(self, grad):
        a, b = self.saved()
        gb = -grad * div(a, b, rounding_mode="floor") if self.needs_grad(1) else None
        return grad, gb


class FmodBackward0(Op):
    """fmod(input, other: scalar) (C's fmod, the sign of input): d/dinput = grad."""

    __slots__ = ()

    def forward(self, a, b):
        return _mod("fmod", a, b)

    def backward(self, grad):
        return grad


class FmodBackward1(BinaryOp):
    """fmod(input, other: Tensor): d/dinput = grad, d/dother = -grad * trunc(input/other)."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return _mod("fmod", a, b)

    def backward(self, grad):
        a, b = self.saved()
        gb = -grad * div(a, b, rounding_mode="trunc") if self.needs_grad(1) else None
        return grad, gb


def _mod(ufunc: str, a, b):
    """The array module's ``ufunc`` (``"remainder"`` or ``"fmod"``) of ``a`` and ``b``."""
    xp = xp_of(a, b)
    if type(b) is int and is_array(a) and a.dtype.kind in "iu":
        b = xp.asarray(b).astype(a.dtype)  # torch casts the scalar, wrapping around (uint8: -2)
    if xp.result_type(a, b).kind in "iub" and not xp.all(b):
        raise RuntimeError("ZeroDivisionError")  # torch's wording for integer x % 0
    with host.errstate(divide="ignore", invalid="ignore"):
        return getattr(xp, ufunc)(a, b)


class _ForwardOnly(Op):
    """forward(*arrays, fn) = fn(*arrays); backward refuses (see ``_not_differentiable``)."""

    __slots__ = ()

    def forward(self, *args):
        return args[-1](*args[:-1])


def _not_differentiable(op: str):
    """A node that records the graph but refuses backward, as torch's ``NotImplemented``."""

    def backward(self, grad):
        raise RuntimeError(f"derivative for aten::{op} is not implemented")

    return type("NotImplemented", (_ForwardOnly,), {"__slots__": (), "backward": backward})


_RemainderNotImplemented = _not_differentiable("remainder")
_HeavisideNotImplemented = _not_differentiable("heaviside")


class Atan2Backward0(BinaryOp):
    """atan2(input, other): d/dinput = grad * other / r2, d/dother = -grad * input / r2."""

    __slots__ = ()
    save_inputs = (0, 1)
    int_to_float = True

    def forward(self, a, b):
        return xp_of(a, b).arctan2(a, b)

    def backward(self, grad):
        a, b = self.saved()
        g = grad / (a * a + b * b)
        return (g * b if self.needs_grad(0) else None,
                g * -a if self.needs_grad(1) else None)


class FmaxBackward0(BinaryOp):
    """fmax: the gradient goes to input where input >= other or other is NaN, else to other."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return xp_of(a, b).fmax(a, b)

    def backward(self, grad):
        a, b = self.saved()
        with host.errstate(invalid="ignore"):
            first = (a._data >= b._data) | xp_of(b._data).isnan(b._data)
        return _split(grad, first)


class FminBackward0(BinaryOp):
    """fmin: the gradient goes to input where input <= other or other is NaN, else to other."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return xp_of(a, b).fmin(a, b)

    def backward(self, grad):
        a, b = self.saved()
        with host.errstate(invalid="ignore"):
            first = (a._data <= b._data) | xp_of(b._data).isnan(b._data)
        return _split(grad, first)


def _split(grad: Tensor, first):
    mask = _make(first)
    return where(mask, grad, 0.0), where(mask, 0.0, grad)


class HypotBackward0(BinaryOp):
    """hypot: d/dinput = grad * input / result, d/dother = grad * other / result."""

    __slots__ = ()
    save_inputs = (0, 1)
    save_output = True

    def forward(self, a, b):
        return xp_of(a, b).hypot(a, b)

    def backward(self, grad):
        a, b = self.saved()
        g = grad / self.saved_output()
        return (g * a if self.needs_grad(0) else None,
                g * b if self.needs_grad(1) else None)


class LogaddexpBackward0(BinaryOp):
    """logaddexp: d/dinput = grad / (1 + exp(other - input)), and symmetrically."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return xp_of(a, b).logaddexp(a, b)

    def backward(self, grad):
        a, b = self.saved()
        return (grad / (exp(b - a) + 1) if self.needs_grad(0) else None,
                grad / (exp(a - b) + 1) if self.needs_grad(1) else None)


class Logaddexp2Backward0(BinaryOp):
    """logaddexp2: d/dinput = grad / (1 + 2**(other - input)), and symmetrically."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return xp_of(a, b).logaddexp2(a, b)

    def backward(self, grad):
        a, b = self.saved()
        return (grad / (exp2(b - a) + 1) if self.needs_grad(0) else None,
                grad / (exp2(a - b) + 1) if self.needs_grad(1) else None)


def _xlogy(a, b):
    xp = xp_of(a, b)
    if not is_array(b):  # the log of a Python float is a (strong) float64
        b = xp.asarray(b, dtype=a.dtype)
    with host.errstate(divide="ignore", invalid="ignore"):
        out = a * xp.log(b)
    return xp.where((a == 0) & ~xp.isnan(b), xp.zeros((), out.dtype), out)


class XlogyBackward0(BinaryOp):
    """xlogy(input, other) = input * log(other), 0 where input == 0 (unless other is NaN).

    d/dinput = xlogy(grad, other), 0 where input == 0 and other <= 0;
    d/dother = grad * input / other.
    """

    __slots__ = ()
    save_inputs = (0, 1)
    int_to_float = True

    def forward(self, a, b):
        return _xlogy(a, b)

    def backward(self, grad):
        a, b = self.saved()
        ga = gb = None
        if self.needs_grad(0):
            ga = _xlogy_input_grad(grad, a, b, b._data)
        if self.needs_grad(1):
            gb = grad * a / b
        return ga, gb


class XlogyBackward1(Op):
    """xlogy(self: scalar, other: Tensor): d/dother = grad * self / other."""

    __slots__ = ("scalar",)

    save_inputs = (0,)

    def forward(self, b, a):
        self.scalar = a
        return _xlogy(a, b)

    def backward(self, grad):
        (b,) = self.saved()
        return grad * self.scalar / b


class XlogyBackward2(Op):
    """xlogy(input: Tensor, other: scalar): d/dinput = xlogy(grad, other) (see above)."""

    __slots__ = ("scalar",)
    save_inputs = (0,)

    def forward(self, a, b):
        self.scalar = b
        return _xlogy(a, b)

    def backward(self, grad):
        (a,) = self.saved()
        return _xlogy_input_grad(grad, a, self.scalar, self.scalar)


def _xlogy_input_grad(grad: Tensor, a: Tensor, b, b_values) -> Tensor:
    """torch: xlogy(grad, other), masked to 0 where input == 0 and other <= 0."""
    g = xlogy(grad, b)
    with host.errstate(invalid="ignore"):
        x = a._data
        mask = (x == 0) & (xp_of(x).asarray(b_values) <= 0)
    return where(_make(mask), 0.0, g) if mask.any() else g


class CopysignBackward0(BinaryOp):
    """copysign(input, other): d/dinput = grad * result / input (0 at 0); other gets zeros."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True
    int_to_float = True

    def forward(self, a, b):
        return xp_of(a, b).copysign(a, b)

    def backward(self, grad):
        (a,) = self.saved()
        ga = grad * _copysign_ratio(a, self.saved_output()) if self.needs_grad(0) else None
        return ga, (grad * 0 if self.needs_grad(1) else None)


class CopysignBackward1(Op):
    """copysign(input, other: scalar): d/dinput = grad * result / input (0 at 0)."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a, b):
        return xp_of(a, b).copysign(a, b)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * _copysign_ratio(a, self.saved_output())


def _copysign_ratio(a: Tensor, out: Tensor) -> Tensor:
    """result / input: +-1, and 0 where input is 0. Piecewise constant, so a constant here."""
    x = a._data
    with host.errstate(divide="ignore", invalid="ignore"):
        return _const(xp_of(x).where(x == 0, 0, out._data / x), a)


class LerpBackward0(Op):
    """lerp(input, end, weight: scalar): d/dinput = grad * (1 - weight), d/dend = grad * weight."""

    __slots__ = ("weight",)

    def forward(self, a, b, weight):
        self.weight = weight
        return _lerp(a, b, weight)

    def backward(self, grad):
        w = self.weight
        return (grad * (1 - w) if self.needs_grad(0) else None,
                grad * w if self.needs_grad(1) else None)


class LerpBackward1(Op):
    """lerp(input, end, weight: Tensor): d/dweight = grad * (end - input) too."""

    __slots__ = ()
    save_inputs = (0, 1, 2)

    def forward(self, a, b, w):
        return _lerp(a, b, w)

    def backward(self, grad):
        a, b, w = self.saved()
        return (grad * (1 - w) if self.needs_grad(0) else None,
                grad * w if self.needs_grad(1) else None,
                grad * (b - a) if self.needs_grad(2) else None)


def _lerp(a, b, w):
    """torch's formula: exact at both ends (weight 0 gives input, weight 1 gives end)."""
    diff = b - a
    return xp_of(a).where(abs(w) < 0.5, a + w * diff, b - diff * (1 - w))


class AddcmulBackward0(Op):
    """addcmul(input, t1, t2, value): input + value * t1 * t2."""

    __slots__ = ("value",)
    save_inputs = (1, 2)

    def forward(self, a, t1, t2, value):
        self.value = value
        return a + value * t1 * t2 if value != 1 else a + t1 * t2

    def backward(self, grad):
        t1, t2 = self.saved()
        v = self.value
        return (grad,
                grad * t2 * v if self.needs_grad(1) else None,
                grad * t1 * v if self.needs_grad(2) else None)


class AddcdivBackward0(Op):
    """addcdiv(input, t1, t2, value): input + value * t1 / t2."""

    __slots__ = ("value",)
    save_inputs = (1, 2)

    def forward(self, a, t1, t2, value):
        self.value = value
        with host.errstate(divide="ignore", invalid="ignore"):
            return a + value * (t1 / t2) if value != 1 else a + t1 / t2

    def backward(self, grad):
        t1, t2 = self.saved()
        v = self.value
        return (grad,
                grad * v / t2 if self.needs_grad(1) else None,
                -grad * v * t1 / (t2 * t2) if self.needs_grad(2) else None)


# --------------------------------------------------------------------------- public binary functions


def _check_both_tensors(name: str, input, other) -> None:
    _check_tensor(input, name)
    _check_tensor(other, name, "other", 2)


def _invalid_combination(name: str, args: tuple, signatures: list[str]) -> TypeError:
    got = ", ".join(type(a).__name__ if not isinstance(a, Tensor) else "Tensor" for a in args)
    lines = "".join(f" * ({s})\n" for s in signatures)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{lines}")


_TENSOR_OR_NUMBER = ["Tensor input, Tensor other, *, Tensor out = None",
                     "Tensor input, Number other, *, Tensor out = None"]


def _scalar_op(cls, input: Tensor, other):
    """``cls`` applied to a tensor and a Python number, promoted as torch does."""
    a, b = promote(input, other)
    if a is not input._data:
        input = _make(a)
    return apply1(cls, input, b)


def remainder(input, other, *, out=None) -> Tensor:
    """``torch.remainder``: Python's %, the sign of the divisor."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _maybe_out(RemainderBackward1.apply(input, other), out)
    if isinstance(input, Tensor):
        return _maybe_out(_scalar_op(RemainderBackward0, input, other), out)
    return _maybe_out(_reversed_remainder(other, input), out)


def _reversed_remainder(x: Tensor, scalar) -> Tensor:
    """``scalar % x``: torch records it as not differentiable (a ``NotImplemented`` node)."""
    b, a = promote(_check_tensor(x, "remainder", "other", 2), scalar)
    if b is not x._data:  # promoted from an integer dtype: nothing to differentiate
        x = _make(b)
    return _RemainderNotImplemented.apply(x, params=(a, _scalar_first_remainder))


def _scalar_first_remainder(b, scalar):
    return _mod("remainder", scalar, b)


def fmod(input, other, *, out=None) -> Tensor:
    """``torch.fmod``: C's fmod, the sign of the dividend."""
    if not isinstance(input, Tensor):
        raise _invalid_combination("fmod", (input, other), _TENSOR_OR_NUMBER)
    if isinstance(other, Tensor):
        return _maybe_out(FmodBackward1.apply(input, other), out)
    return _maybe_out(_scalar_op(FmodBackward0, input, other), out)


def atan2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.atan2``: the angle of (other, input); integer inputs give the default float."""
    _check_both_tensors("atan2", input, other)
    return _maybe_out(Atan2Backward0.apply(input, other), out)


def arctan2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    _check_both_tensors("arctan2", input, other)
    return _maybe_out(Atan2Backward0.apply(input, other), out)


def fmax(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.fmax``: the elementwise max, ignoring NaN (NaN only where both are)."""
    _check_both_tensors("fmax", input, other)
    return _maybe_out(FmaxBackward0.apply(input, other), out)


def fmin(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.fmin``: the elementwise min, ignoring NaN (NaN only where both are)."""
    _check_both_tensors("fmin", input, other)
    return _maybe_out(FminBackward0.apply(input, other), out)


def _float_binary(cls, name: str):
    """A binary op of floating tensors only (torch has no integer kernel)."""

    def fn(input: Tensor, other: Tensor, *, out=None) -> Tensor:
        _check_both_tensors(name, input, other)
        rt = _dt.result_type(input, other)
        if not rt.is_floating_point:
            try:
                host.broadcast_shapes(input._data.shape, other._data.shape)
            except ValueError:
                _raise_not_broadcastable(input, other)
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{scalar_name(rt)}'")
        return _maybe_out(cls.apply(input, other), out)

    fn.__name__ = fn.__qualname__ = name
    return fn


hypot = _float_binary(HypotBackward0, "hypot")
hypot.__doc__ = "``torch.hypot``: sqrt(input**2 + other**2) without overflow."
logaddexp = _float_binary(LogaddexpBackward0, "logaddexp")
logaddexp.__doc__ = "``torch.logaddexp``: log(exp(input) + exp(other)) without overflow."
logaddexp2 = _float_binary(Logaddexp2Backward0, "logaddexp2")
logaddexp2.__doc__ = "``torch.logaddexp2``: log2(2**input + 2**other) without overflow."


def xlogy(input, other, *, out=None) -> Tensor:
    """``torch.xlogy``: input * log(other), 0 where input == 0 unless other is NaN."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _maybe_out(XlogyBackward0.apply(input, other), out)
    if isinstance(input, Tensor):
        a, b = promote(input, other, True)
        x = input if a is input._data else _make(a)
        return _maybe_out(apply1(XlogyBackward2, x, b), out)
    if isinstance(other, Tensor):
        b, a = promote(other, input, True)
        x = other if b is other._data else _make(b)
        return _maybe_out(apply1(XlogyBackward1, x, a), out)
    raise _invalid_combination("xlogy", (input, other), [
        "Tensor input, Tensor other, *, Tensor out = None",
        "Number self, Tensor other, *, Tensor out = None",
        "Tensor input, Number other, *, Tensor out = None"])


def copysign(input, other, *, out=None) -> Tensor:
    """``torch.copysign``: |input| with the sign of other; integer inputs give a float."""
    if not isinstance(input, Tensor):
        raise _invalid_combination("copysign", (input, other), _TENSOR_OR_NUMBER)
    if isinstance(other, Tensor):
        return _maybe_out(CopysignBackward0.apply(input, other), out)
    a, b = promote(input, other, True)
    x = input if a is input._data else _make(a)
    return _maybe_out(apply1(CopysignBackward1, x, b), out)


def heaviside(input: Tensor, values: Tensor, *, out=None) -> Tensor:
    """``torch.heaviside``: 0 where input < 0, values where input == 0, 1 where input > 0.

    Not differentiable: as in torch, the result records a ``NotImplemented`` node whose
    backward raises.
    """
    _check_tensor(input, "heaviside")
    _check_tensor(values, "heaviside", "values", 2)
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    try:
        return _maybe_out(_HeavisideNotImplemented.apply(input, values, params=(_heaviside,)),
                          out)
    except ValueError:
        _raise_not_broadcastable(input, values)


def _heaviside(x, values):
    xp = xp_of(x)
    one = xp.ones((), x.dtype)
    zero = xp.zeros((), x.dtype)
    return xp.where(x == 0, values, xp.where(x > 0, one, zero)).astype(x.dtype, copy=False)


def float_power(input, exponent, *, out=None) -> Tensor:
    """``torch.float_power``: pow computed in float64 (a composite: cast, then ``pow``)."""
    f64 = _dt.float64
    if isinstance(input, Tensor):
        base = input if input._data.dtype == host.float64 else to_dtype(input, f64)
    else:
        base = float(input)
    if isinstance(exponent, Tensor):
        exp_ = exponent if exponent._data.dtype == host.float64 else to_dtype(exponent, f64)
    else:
        exp_ = float(exponent)
    return _maybe_out(pow(base, exp_), out)


def _float_power_(self: Tensor, exponent) -> Tensor:
    """``Tensor.float_power_``: in place, so the base must already be float64."""
    if self._data.dtype != host.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {scalar_name(self.dtype)} "
                           "but the operation's result requires dtype Double")
    return _inplace(self, float_power, exponent)


def lerp(input: Tensor, end: Tensor, weight, *, out=None) -> Tensor:
    """``torch.lerp``: input + weight * (end - input); weight a number or a tensor."""
    if not isinstance(input, Tensor) or not isinstance(end, Tensor):
        raise _invalid_combination("lerp", (input, end, weight), [
            "Tensor input, Tensor end, Tensor weight, *, Tensor out = None",
            "Tensor input, Tensor end, Number weight, *, Tensor out = None"])
    dt = input._data.dtype
    if dt.kind != "f":
        raise NotImplementedError(f"\"lerp_kernel_scalar\" not implemented for "
                                  f"'{scalar_name(input.dtype)}'")
    if end._data.dtype != dt:
        raise RuntimeError(f"expected dtype {_cpp_name(input.dtype)} for `end` but got dtype "
                           f"{_cpp_name(end.dtype)}")
    try:
        if isinstance(weight, Tensor):
            if weight._data.dtype != dt:
                if weight._data.ndim:
                    raise RuntimeError(f"expected dtype {_cpp_name(input.dtype)} for `weight` "
                                       f"but got dtype {_cpp_name(weight.dtype)}")
                weight = to_dtype(weight, input.dtype)
            return _maybe_out(LerpBackward1.apply(input, end, weight), out)
        return _maybe_out(LerpBackward0.apply(input, end, params=(weight,)), out)
    except ValueError:
        operands = (input, end, weight) if isinstance(weight, Tensor) else (input, end)
        _raise_not_broadcastable(*operands)


def _cpp_name(dt: _dt.dtype) -> str:
    """The C++ type name torch's dtype checks print: float, double, long int, ..."""
    name = dt.np.name if hasattr(dt, "np") else str(dt)
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
            "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}.get(name, name)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """``torch.addcmul``: input + value * tensor1 * tensor2."""
    _check_tensor(input, "addcmul")
    _check_tensor(tensor1, "addcmul", "tensor1", 2)
    _check_tensor(tensor2, "addcmul", "tensor2", 3)
    return _maybe_out(_addc(AddcmulBackward0, input, tensor1, tensor2, value), out)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """``torch.addcdiv``: input + value * tensor1 / tensor2 (integer tensor1/tensor2 refused)."""
    _check_tensor(input, "addcdiv")
    _check_tensor(tensor1, "addcdiv", "tensor1", 2)
    _check_tensor(tensor2, "addcdiv", "tensor2", 3)
    if tensor1._data.dtype.kind in "iub" and tensor2._data.dtype.kind in "iub":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    return _maybe_out(_addc(AddcdivBackward0, input, tensor1, tensor2, value), out)


def _addc(cls, input, t1, t2, value):
    a, x, y = _promote_all(input, t1, t2)
    if value.__class__ is float and not a.dtype.is_floating_point:
        value = int(value)  # torch casts value to the integer result type
    try:
        return cls.apply(a, x, y, params=(value,))
    except ValueError:
        _raise_not_broadcastable(input, t1, t2)


# --------------------------------------------------------------------------- tables


def _rmod(self: Tensor, other) -> Tensor:
    return remainder(other, self)


def _imod(self: Tensor, other) -> Tensor:
    return _inplace(self, remainder, other)


OPERATORS = {"__mod__": remainder, "__rmod__": _rmod, "__imod__": _imod}

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
    fn = _float_unary(cls, name)

    def method(self: Tensor) -> Tensor:
        return _inplace(self, fn)

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place ``{name}`` (not differentiable, as in torch)."
    return method


METHODS = {name: globals()[name] for name in __all__}
METHODS["float_power_"] = _float_power_
for _names, _cls in [(("asinh", "arcsinh"), AsinhBackward1), (("acosh", "arccosh"), AcoshBackward1),
                     (("atanh", "arctanh"), AtanhBackward1)]:
    for _name in _names:
        METHODS[_name + "_"] = _inplace_only(_cls, _names[0])

# methods that also get an in-place form ``name_`` (torch has none for fmax, fmin, logaddexp,
# logaddexp2 and positive; float_power_ (which first checks that the base is float64) and the
# not differentiable asinh_, acosh_ and atanh_ are in METHODS)
INPLACE = tuple(n for n in __all__ if n not in (
    "fmax", "fmin", "logaddexp", "logaddexp2", "positive", "float_power", "asinh", "arcsinh",
    "acosh", "arccosh", "atanh", "arctanh"))
