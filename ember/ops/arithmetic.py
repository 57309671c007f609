"""Arithmetic: add, sub, mul, div, floor_divide, pow, neg, remainder/fmod, float_power, lerp,
addcmul/addcdiv, and the binary math of two numbers (atan2, hypot, logaddexp, xlogy, copysign,
heaviside), with the reflected operators (``2 / x``); and the argument checks, promotion and
``out=`` handling that the other op modules share.

Each class is one op: its forward (NumPy) beside its derivative (ember ops, so higher-order
gradients work), named as torch names the node; derivatives follow torch's derivatives.yaml.
Each public op is registered once (``@register``) with its method, in-place, alias and operator
forms.
"""

from __future__ import annotations

import math
import operator

from .._backend import FLOAT_KINDS, host, is_array, xp_of
from .._backend import dtypes as _dt
from .._backend.errstate import ignore_divide_invalid, ignore_invalid
from .._tensor import Tensor, _make
from ._op import (
    _PY_NUMBERS,
    BinaryOp,
    Op,
    apply1,
    bilinear_jvp,
    broadcast_error,
    promote,
    raw_operand,
    write_out,
)
from ._registry import register
from .complex import conj_of
from .inplace import DIRECT as _DIRECT
from .inplace import direct_binary
from .inplace import inplace as _inplace

# ---------------------------------------- argument checks and promotion (shared by the op modules)


def scalar_name(dt: _dt.dtype) -> str:
    """torch's C++ name of a dtype, as its messages print it: Float, Long, Half, Bool, ..."""
    return dt._legacy[:-len("Tensor")]


def _check_tensor(x, op: str, arg: str = "input", pos: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


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


def _const(values, like: Tensor) -> Tensor:
    """A constant (non-differentiable) tensor of ``values`` (an array) in ``like``'s dtype."""
    d = like._data
    return _make(xp_of(d).asarray(values, dtype=d.dtype))


def _promote_all(*operands) -> list:
    """Tensors (or numbers, or None) cast to their common dtype, as torch's promotion says."""
    rt = _dt.result_type(*(v for v in operands if v is not None))
    xp = _xp_of_tensors(*operands)
    return [None if v is None else _as_dtype(v, rt, xp) for v in operands]


def _as_dtype(x, dt: _dt.dtype, xp) -> Tensor:
    """``x`` (a Tensor, or a Python number made with array module ``xp``) as a tensor of dtype
    ``dt`` (a differentiable cast)."""
    if not isinstance(x, Tensor):
        return _make(xp.asarray(x, dtype=dt.np))
    return x if x._data.dtype == dt.np else x.to(dt)


def _xp_of_tensors(*values):
    """The array module of the Tensors among ``values`` (NumPy if there are none)."""
    return xp_of(*(v._data for v in values if isinstance(v, Tensor)))


def wrap_like(value, like: Tensor) -> Tensor:
    """A constant tensor for ``value`` in ``like``'s dtype if it is a number."""
    if isinstance(value, Tensor):
        return value
    d = like._data
    return _make(xp_of(d).asarray(value, dtype=d.dtype))


def _maybe_out(result: Tensor, out: Tensor | None) -> Tensor:
    """Support ``out=``: write into ``out`` (resizing it as torch does), return it."""
    if out is None:
        return result
    return write_out(out, result)


def _raise_not_broadcastable(*operands) -> None:
    """In an ``except ValueError``: raise torch's error if the operands' shapes don't
    broadcast (folded left to right, as torch reports them), else re-raise."""
    shape = ()
    for x in operands:
        s = _shape(x._data if isinstance(x, Tensor) else x)
        err = broadcast_error(shape, s)
        if err is not None:
            raise err from None
        shape = host.broadcast_shapes(shape, s)
    raise  # noqa: PLE0704 - re-raise the ValueError being handled


def _shape(x) -> tuple:
    """The shape of an array, a NumPy scalar or a Python number (``()``)."""
    return getattr(x, "shape", ())


# -------------------------------------------------------------------- add, sub, mul, div, pow, neg


class AddBackward0(BinaryOp):
    """add(input, other): d/dinput = d/dother = grad. (With an alpha other than 1 the node is
    ``AddAlphaBackward``, named as torch names both: AddBackward0.)"""

    __slots__ = ()
    scalar_arrays = True
    complex_ok = True
    alpha = 1
    # ``a + b`` itself, on any backend's arrays: a C call, no Python frame
    forward = staticmethod(operator.add)

    def jvp(self, tangents, inputs, out):
        ta, tb = tangents
        return tb if ta is None else ta if tb is None else ta + tb

    def backward(self, grad):
        return grad, grad

    def raw_backward(self, grad):
        return grad, grad


class AddAlphaBackward(AddBackward0):
    """add(input, other, alpha): d/dinput = grad, d/dother = alpha * grad."""

    __slots__ = ("alpha",)

    def forward(self, a, b, alpha):
        self.alpha = alpha
        return a + b if alpha == 1 else a + alpha * b

    def jvp(self, tangents, inputs, out):
        ta, tb = tangents
        if tb is not None and self.alpha != 1:
            tb = tb * self.alpha
        return tb if ta is None else ta if tb is None else ta + tb

    def backward(self, grad):
        return grad, (grad if self.alpha == 1 else grad * self.alpha)

    def raw_backward(self, grad):
        alpha = self.alpha
        if alpha == 1:
            return grad, grad
        return (grad, grad * alpha) if type(alpha) in _PY_NUMBERS else self.tensor_backward(grad)


AddAlphaBackward.__name__ = "AddBackward0"  # torch's name for the node, with any alpha


class SubBackward0(BinaryOp):
    """sub(input, other, alpha): d/dinput = grad, d/dother = -alpha * grad."""

    __slots__ = ("alpha",)
    scalar_arrays = True
    complex_ok = True

    def forward(self, a, b, alpha=1):
        self.alpha = alpha
        return a - b if alpha == 1 else a - alpha * b

    def jvp(self, tangents, inputs, out):
        ta, tb = tangents
        if tb is not None:
            tb = -tb if self.alpha == 1 else tb * -self.alpha
        return tb if ta is None else ta if tb is None else ta + tb

    def backward(self, grad):
        return grad, (-grad if self.alpha == 1 else grad * -self.alpha)

    def raw_backward(self, grad):
        alpha = self.alpha
        if alpha == 1:
            return grad, -grad
        return (grad, grad * -alpha) if type(alpha) in _PY_NUMBERS else self.tensor_backward(grad)


class RsubBackward0(BinaryOp):
    """rsub(input, other: Tensor, alpha) = other - alpha * input: d/dinput = -alpha * grad."""

    __slots__ = ("alpha",)
    complex_ok = True

    def forward(self, a, b, alpha=1):
        self.alpha = alpha
        return b - a if alpha == 1 else b - alpha * a

    def backward(self, grad):
        return (-grad if self.alpha == 1 else grad * -self.alpha), grad

    def raw_backward(self, grad):
        alpha = self.alpha
        if alpha == 1:
            return -grad, grad
        return (grad * -alpha, grad) if type(alpha) in _PY_NUMBERS else self.tensor_backward(grad)


class RsubBackward1(Op):
    """rsub(input, other: scalar, alpha) (what ``2 - x`` records): one edge, for input."""

    __slots__ = ("alpha",)
    complex_ok = True

    def forward(self, a, b, alpha, dtype):
        self.alpha = alpha
        if a.dtype != dtype:
            a = a.astype(dtype)
        return b - a if alpha == 1 else b - alpha * a

    def backward(self, grad):
        return -grad if self.alpha == 1 else grad * -self.alpha

    def raw_backward(self, grad):
        alpha = self.alpha
        if alpha == 1:
            return -grad
        return grad * -alpha if type(alpha) in _PY_NUMBERS else self.tensor_backward(grad)


class MulBackward0(BinaryOp):
    """mul(input, other): d/dinput = grad * conj(other), d/dother = grad * conj(input)."""

    __slots__ = ()
    scalar_arrays = True
    save_inputs = (0, 1)
    save_crosswise = True
    complex_ok = True

    # ``a * b`` itself, on any backend's arrays: a C call, no Python frame
    forward = staticmethod(operator.mul)

    def jvp(self, tangents, inputs, out):
        return bilinear_jvp(tangents, inputs, operator.mul)

    def backward(self, grad):
        a, b = self.saved()
        if grad._data.dtype.kind == "c":
            a, b = _conj_operand(a), _conj_operand(b)
        return (grad * b if self.needs_grad(0) else None,
                grad * a if self.needs_grad(1) else None)

    def raw_backward(self, grad):
        a, b = self.saved()
        (ea, _), (eb, _) = self.next_functions
        # (raw_operand inlined for the usual operand, a Tensor of grad's dtype)
        dt = grad.dtype
        if dt.kind == "c":
            return self.tensor_backward(grad)
        if eb is None:
            ad = 0
        elif type(a) is Tensor and a._data.dtype is dt:
            ad = a._data
        else:
            ad = raw_operand(a, grad)
        if ea is None:
            bd = 0
        elif type(b) is Tensor and b._data.dtype is dt:
            bd = b._data
        else:
            bd = raw_operand(b, grad)
        if ad is None or bd is None:
            return self.tensor_backward(grad)
        return (grad * bd if ea is not None else None,
                grad * ad if eb is not None else None)


class DivBackward0(BinaryOp):
    """div(input, other): d/dinput = grad / conj(other), d/dother = -grad * conj(input /
    other**2)."""

    __slots__ = ()
    scalar_arrays = True
    save_inputs = (0, 1)
    int_to_float = True
    complex_ok = True

    def forward(self, a, b):
        with ignore_divide_invalid():
            return a / b

    def jvp(self, tangents, inputs, out):
        (ta, tb), (_, b) = tangents, inputs
        da = ta / b if ta is not None else None
        db = -tb * out / b if tb is not None else None
        return db if da is None else da if db is None else da + db

    def backward(self, grad):
        a, b = self.saved()
        if grad._data.dtype.kind == "c":
            a, b = _conj_operand(a), _conj_operand(b)
        ga = grad / b if self.needs_grad(0) else None
        gb = -grad * a / (b * b) if self.needs_grad(1) else None
        return ga, gb

    def raw_backward(self, grad):
        if grad.dtype.kind == "c":
            return self.tensor_backward(grad)
        a, b = self.saved()
        (ea, _), (eb, _) = self.next_functions
        ad = raw_operand(a, grad) if eb is not None else 0  # (a is saved only for b's grad)
        bd = raw_operand(b, grad)
        if ad is None or bd is None:
            return self.tensor_backward(grad)
        if eb is None and type(b) in _PY_NUMBERS and b and b - b == 0:
            return grad / bd, None  # a finite nonzero number: no warning to silence
        with ignore_divide_invalid():
            return (grad / bd if ea is not None else None,
                    -grad * ad / (bd * bd) if eb is not None else None)


def _conj_operand(x):
    """A saved operand of a binary rule, conjugated (a Tensor, or a Python number)."""
    if isinstance(x, Tensor):
        return conj_of(x)
    return x.conjugate() if x is not None else None


class DivBackward2(BinaryOp):
    """div(input, other, rounding_mode='trunc'|'floor'): zero gradient almost everywhere."""

    __slots__ = ("mode",)

    def forward(self, a, b, mode):
        self.mode = mode
        xp = xp_of(a, b)
        if xp.result_type(a, b).kind in "iub" and not xp.all(b):
            raise RuntimeError("ZeroDivisionError")  # torch's wording for integer x // 0
        with ignore_divide_invalid():
            if mode == "floor":
                if a.dtype.kind in "iu" if is_array(a) else isinstance(a, int):
                    return xp.floor_divide(a, b)
                return xp.floor(xp.true_divide(a, b))
            q = xp.true_divide(a, b)
            out = xp.trunc(q)
            dt = xp.result_type(a, b)
            return out.astype(dt) if dt.kind in "iu" else out

    def backward(self, grad):
        return grad * 0, grad * 0


class PowBackward0(Op):
    """pow(input, exponent: scalar): d/dinput = grad * conj(exponent * input ** (exponent - 1))."""

    __slots__ = ("exponent",)
    save_inputs = (0,)
    complex_ok = True

    def forward(self, a, exponent):
        self.exponent = exponent
        if isinstance(exponent, float) and a.dtype.kind not in FLOAT_KINDS and \
                a.dtype.kind != "c":
            a = a.astype(_dt.get_default_dtype().np)
        if type(exponent) is int and exponent >= 0:
            # neither 0 ** negative nor (negative) ** fraction to silence: no errstate
            # (a context manager of ~1.1 µs, on a ~0.5 µs square of 640 elements)
            return a ** exponent
        with ignore_divide_invalid():
            return a ** exponent

    def jvp(self, tangents, inputs, out):
        e = self.exponent
        if e == 0:
            return tangents[0] * 0
        return tangents[0] * (e * inputs[0] ** (e - 1))

    def backward(self, grad):
        (a,) = self.saved()
        e = self.exponent
        if e == 0:
            return grad * 0
        return grad * conj_of(e * pow_scalar(a, e - 1))

    def raw_backward(self, grad):
        (a,) = self.saved()
        e = self.exponent
        a = a._data
        if a.dtype != grad.dtype or type(e) not in _PY_NUMBERS or a.dtype.kind == "c":
            return self.tensor_backward(grad)
        if e == 0:
            return grad * 0
        if e == 2:  # 2 * a ** 1 is a + a, bit for bit: one pass less
            return grad * (a + a)
        if type(e) is int and e > 0:  # no 0 ** negative nor (negative) ** fraction to silence
            return grad * (a ** (e - 1) * e)
        with ignore_divide_invalid():
            return grad * (a ** (e - 1) * e)


class PowBackward1(BinaryOp):
    """pow(input, exponent: Tensor): d/dinput = grad * e * input**(e-1), d/de = grad * out * log(input)."""

    __slots__ = ()
    save_inputs = (0, 1)
    save_output = True

    def forward(self, a, b):
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            return _int_power(a, b)
        with ignore_divide_invalid():
            return xp_of(a, b).power(a, b)

    def backward(self, grad):
        a, b = self.saved()
        ga = gb = None
        if self.needs_grad(0):
            # torch: no gradient where exponent == 0 (not 0 * 0 ** -1 = nan)
            ga = grad * b * pow_tensor(a, where(b == 0, 1.0, b) - 1)
        if self.needs_grad(1):
            out = self.saved_output()
            # torch: no gradient where input == 0 and exponent >= 0 (not 0 * log 0 = nan)
            gb = grad * out * log(where((a == 0) & (b >= 0), 1.0, a))
        return ga, gb


class PowBackward2(Op):
    """pow(self: scalar, exponent: Tensor) (``2 ** x``): d/dexponent = grad * out * log(self)."""

    __slots__ = ("base",)
    save_output = True

    def forward(self, e, base):
        self.base = base
        if e.dtype.kind not in FLOAT_KINDS and isinstance(base, float):
            e = e.astype(_dt.get_default_dtype().np)
        xp = xp_of(e)
        if e.dtype.kind in "iu" and isinstance(base, int):
            return _int_power(xp.asarray(base, dtype=e.dtype), e)
        with ignore_divide_invalid():
            return xp.power(base, e)

    def backward(self, grad):
        out = self.saved_output()
        if self.base == 0:  # torch: no gradient where exponent >= 0 (not 0 * log 0 = nan)
            d = out._data
            xp = xp_of(d)
            return grad * out * _make(xp.where(xp.isfinite(d), 0.0, -math.inf).astype(d.dtype))
        with ignore_invalid():
            return grad * out * float(host.log(self.base))


def _int_power(a, b):
    """Integer ``a ** b`` (arrays) as torch computes it: a negative exponent gives 1, -1 or 0."""
    xp = xp_of(a, b)
    neg = b < 0
    if not neg.any():
        return xp.power(a, b)
    out = xp.power(a, xp.where(neg, 0, b).astype(b.dtype))
    odd = (b % 2).astype(bool)
    special = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
    return xp.where(neg, special, out).astype(out.dtype)


class NegBackward0(Op):
    __slots__ = ()
    complex_ok = True

    def forward(self, a):
        return -a

    def jvp(self, tangents, inputs, out):
        return -tangents[0]

    def backward(self, grad):
        return -grad

    def raw_backward(self, grad):
        return -grad


# ----------------------------------------------------------------- remainder, fmod and binary math


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
    with ignore_divide_invalid():
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
    with ignore_divide_invalid():
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
    with ignore_invalid():
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
    with ignore_divide_invalid():
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
        with ignore_divide_invalid():
            return a + value * (t1 / t2) if value != 1 else a + t1 / t2

    def backward(self, grad):
        t1, t2 = self.saved()
        v = self.value
        return (grad,
                grad * v / t2 if self.needs_grad(1) else None,
                -grad * v * t1 / (t2 * t2) if self.needs_grad(2) else None)


# -------------------------------------------------------------------------------- public functions


@register(inplace=True, operators=("__add__", "__radd__", "__iadd__"),
          operator=AddBackward0.apply)
def add(input, other, *, alpha=1, out=None) -> Tensor:
    """``torch.add``: input + alpha * other, with broadcasting and type promotion."""
    if not isinstance(input, Tensor):
        return AddBackward0.apply(other, input) if alpha == 1 else add(
            wrap_like(input, other), other, alpha=alpha)
    if alpha.__class__ is not int:
        _alpha_check(input, other, alpha)
        result = AddAlphaBackward.apply(input, other, alpha)
    elif alpha == 1:
        result = AddBackward0.apply(input, other)
    else:
        result = AddAlphaBackward.apply(input, other, alpha)
    return result if out is None else _maybe_out(result, out)


def _alpha_check(input, other, alpha) -> None:
    """torch: a floating alpha needs a floating result, a bool alpha a bool one."""
    rt = _dt.result_type(input, other)
    if isinstance(alpha, bool) and rt is not _dt.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not rt.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


@register(inplace=True, aliases=("subtract",), operators=("__sub__", "__isub__"))
def sub(input, other, *, alpha=1, out=None) -> Tensor:
    """``torch.sub``: input - alpha * other."""
    if not isinstance(input, Tensor):
        return rsub(other, input) if alpha == 1 else sub(wrap_like(input, other), other,
                                                         alpha=alpha)
    _sub_check(input, other)
    if alpha.__class__ is not int:
        _alpha_check(input, other, alpha)
    return _maybe_out(SubBackward0.apply(input, other, alpha), out)


def _sub_check(input: Tensor, other) -> None:
    """torch refuses subtraction with a bool operand (a Python bool counts as one)."""
    a = input._data.dtype == host.bool_
    b = other.__class__ is bool or (isinstance(other, Tensor) and other._data.dtype == host.bool_)
    if a and b:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if a or b:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


@register(method=False, operators=("__rsub__",))
def rsub(input, other, *, alpha=1) -> Tensor:
    """``torch.rsub``: other - alpha * input (what ``2 - x`` computes)."""
    _sub_check(input, other)
    if alpha.__class__ is not int:
        _alpha_check(input, other, alpha)
    if isinstance(other, Tensor):
        return RsubBackward0.apply(input, other, alpha)
    dt = input._data.dtype
    if dt.kind not in FLOAT_KINDS or type(other) not in (int, float):
        dt = _dt.result_type(input, other).np
    return apply1(RsubBackward1, input, other, alpha, dt)


@register(inplace=True, aliases=("multiply",), operators=("__mul__", "__rmul__", "__imul__"),
          operator=MulBackward0.apply)
def mul(input, other, *, out=None) -> Tensor:
    """``torch.mul``: elementwise product with broadcasting."""
    if not isinstance(input, Tensor):
        input, other = other, input
    result = MulBackward0.apply(input, other)
    return result if out is None else _maybe_out(result, out)


@register(inplace=True, aliases=("divide", "true_divide"),
          operators=("__truediv__", "__itruediv__"), operator=DivBackward0.apply)
def div(input, other, *, rounding_mode: str | None = None, out=None) -> Tensor:
    """``torch.div``: true division (ints give the default float dtype) or rounded division."""
    if rounding_mode is None:
        return _maybe_out(DivBackward0.apply(input, other), out)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    return _maybe_out(DivBackward2.apply(input, other, rounding_mode), out)


_DIRECT[add] = direct_binary(host.add, "alpha", 1)
_DIRECT[sub] = direct_binary(host.subtract, "alpha", 1)
_DIRECT[mul] = direct_binary(host.multiply)
_DIRECT[div] = direct_binary(host.true_divide, "rounding_mode", None, ignore_divide_invalid)


@register(inplace=True, operators=("__floordiv__", "__ifloordiv__"))
def floor_divide(input, other) -> Tensor:
    return div(input, other, rounding_mode="floor")


@register(inplace=True, operators=("__pow__", "__ipow__"))
def pow(input, exponent, *, out=None) -> Tensor:
    """``torch.pow``: tensor ** scalar, tensor ** tensor or scalar ** tensor."""
    if not isinstance(input, Tensor):
        return pow_scalar_base(input, exponent)
    if isinstance(exponent, Tensor):
        return _maybe_out(pow_tensor(input, exponent), out)
    return _maybe_out(pow_scalar(input, exponent), out)


def pow_scalar(x: Tensor, e) -> Tensor:
    if not isinstance(e, (int, float)):
        raise TypeError(f"pow(): exponent must be a number or Tensor, got {type(e).__name__}")
    if x._data.dtype.kind in "iu" and isinstance(e, int) and e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return apply1(PowBackward0, x, e)


def pow_tensor(x: Tensor, e: Tensor) -> Tensor:
    return PowBackward1.apply(x, e)


def pow_scalar_base(base, e: Tensor) -> Tensor:
    return apply1(PowBackward2, e, base)


@register(inplace=True, aliases=("negative",), operators=("__neg__",))
def neg(input: Tensor) -> Tensor:
    """``torch.neg``."""
    if input._data.dtype == host.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return apply1(NegBackward0, input)


@register(inplace=True)
def square(input: Tensor) -> Tensor:
    """``torch.square``: ``input ** 2``."""
    return pow_scalar(input, 2)


@register(operators=("__pos__",))
def positive(input: Tensor) -> Tensor:
    """``torch.positive``: ``input`` itself (torch returns the same tensor); bool refused."""
    x = _check_tensor(input, "positive")
    if x._data.dtype == host.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


def _scalar_op(cls, input: Tensor, other):
    """``cls`` applied to a tensor and a Python number, promoted as torch does."""
    a, b = promote(input, other)
    if a is not input._data:
        input = _make(a)
    return apply1(cls, input, b)


@register(inplace=True, operators=("__mod__", "__imod__"))
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


@register(inplace=True)
def fmod(input, other, *, out=None) -> Tensor:
    """``torch.fmod``: C's fmod, the sign of the dividend."""
    if not isinstance(input, Tensor):
        raise _invalid_combination("fmod", (input, other), _TENSOR_OR_NUMBER)
    if isinstance(other, Tensor):
        return _maybe_out(FmodBackward1.apply(input, other), out)
    return _maybe_out(_scalar_op(FmodBackward0, input, other), out)


@register(inplace=True)
def atan2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.atan2``: the angle of (other, input); integer inputs give the default float."""
    _check_both_tensors("atan2", input, other)
    return _maybe_out(Atan2Backward0.apply(input, other), out)


@register(inplace=True)
def arctan2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    _check_both_tensors("arctan2", input, other)
    return _maybe_out(Atan2Backward0.apply(input, other), out)


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


hypot = register(_float_binary(HypotBackward0, "hypot"), inplace=True)


hypot.__doc__ = "``torch.hypot``: sqrt(input**2 + other**2) without overflow."


logaddexp = register(_float_binary(LogaddexpBackward0, "logaddexp"))


logaddexp.__doc__ = "``torch.logaddexp``: log(exp(input) + exp(other)) without overflow."


logaddexp2 = register(_float_binary(Logaddexp2Backward0, "logaddexp2"))


logaddexp2.__doc__ = "``torch.logaddexp2``: log2(2**input + 2**other) without overflow."


@register(inplace=True)
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


@register(inplace=True)
def copysign(input, other, *, out=None) -> Tensor:
    """``torch.copysign``: |input| with the sign of other; integer inputs give a float."""
    if not isinstance(input, Tensor):
        raise _invalid_combination("copysign", (input, other), _TENSOR_OR_NUMBER)
    if isinstance(other, Tensor):
        return _maybe_out(CopysignBackward0.apply(input, other), out)
    a, b = promote(input, other, True)
    x = input if a is input._data else _make(a)
    return _maybe_out(apply1(CopysignBackward1, x, b), out)


@register(inplace=True)
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


def _float_power_(self: Tensor, exponent) -> Tensor:
    """``Tensor.float_power_``: in place, so the base must already be float64."""
    if self._data.dtype != host.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {scalar_name(self.dtype)} "
                           "but the operation's result requires dtype Double")
    return _inplace(self, float_power, exponent)



@register(inplace=_float_power_)
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

@register(inplace=True)
def lerp(input: Tensor, end: Tensor, weight, *, out=None) -> Tensor:
    """``torch.lerp``: input + weight * (end - input); weight a number or a tensor."""
    if not isinstance(input, Tensor) or not isinstance(end, Tensor):
        raise _invalid_combination("lerp", (input, end, weight), [
            "Tensor input, Tensor end, Tensor weight, *, Tensor out = None",
            "Tensor input, Tensor end, Number weight, *, Tensor out = None"])
    dt = input._data.dtype
    if dt.kind not in FLOAT_KINDS:
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


@register(inplace=True)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """``torch.addcmul``: input + value * tensor1 * tensor2."""
    _check_tensor(input, "addcmul")
    _check_tensor(tensor1, "addcmul", "tensor1", 2)
    _check_tensor(tensor2, "addcmul", "tensor2", 3)
    return _maybe_out(_addc(AddcmulBackward0, input, tensor1, tensor2, value), out)


@register(inplace=True)
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


# --------------------------------------------------------------------- reflected operators
# ``2 / x``, ``2 // x``, ``2 ** x``, ``2 % x``: the op with its operands swapped


@register(method=False, export=False, operators=("__rtruediv__",))
def _rtruediv(self: Tensor, other) -> Tensor:
    if isinstance(other, Tensor):
        return div(other, self)
    return reciprocal(self) * other  # torch records ``2 / x`` as MulBackward0(Reciprocal)


@register(method=False, export=False, operators=("__rfloordiv__",))
def _rfloordiv(self: Tensor, other) -> Tensor:
    return floor_divide(other, self)


@register(method=False, export=False, operators=("__rpow__",))
def _rpow(self: Tensor, other) -> Tensor:
    return pow(other, self)


@register(method=False, export=False, operators=("__rmod__",))
def _rmod(self: Tensor, other) -> Tensor:
    return remainder(other, self)


# NOTE: imported last: these modules build on the helpers above, and the derivatives here call
# them only when they run (ops/__init__ imports this module first).
from .comparison import where
from .unary import exp, exp2, log, reciprocal, to_dtype
