"""Elementwise ops: arithmetic, powers, exp/log, trigonometry, activations, clamp, casts.

Each class is one op: its forward (NumPy) beside its derivative (ember ops, so higher-order
gradients work). Public functions below follow torch's signatures.
"""

from __future__ import annotations

import math

from .._backend import dtypes as _dt
from .._backend import host, is_array, ndarray, xp_of
from .._tensor import Tensor, _make
from ._op import _PY_NUMBERS, BinaryOp, Op, apply1, broadcast_error, promote, raw_operand

# --------------------------------------------------------------------------- binary arithmetic


class AddBackward0(BinaryOp):
    """add(input, other, alpha): d/dinput = grad, d/dother = alpha * grad."""

    __slots__ = ("alpha",)

    def forward(self, a, b, alpha=1):
        self.alpha = alpha
        return a + b if alpha == 1 else a + alpha * b

    def backward(self, grad):
        return grad, (grad if self.alpha == 1 else grad * self.alpha)

    def raw_backward(self, grad):
        alpha = self.alpha
        if alpha == 1:
            return grad, grad
        return (grad, grad * alpha) if type(alpha) in _PY_NUMBERS else self.tensor_backward(grad)


class SubBackward0(BinaryOp):
    """sub(input, other, alpha): d/dinput = grad, d/dother = -alpha * grad."""

    __slots__ = ("alpha",)

    def forward(self, a, b, alpha=1):
        self.alpha = alpha
        return a - b if alpha == 1 else a - alpha * b

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
    """mul(input, other): d/dinput = grad * other, d/dother = grad * input."""

    __slots__ = ()
    save_inputs = (0, 1)
    save_crosswise = True

    def forward(self, a, b):
        return a * b

    def backward(self, grad):
        a, b = self.saved()
        return (grad * b if self.needs_grad(0) else None,
                grad * a if self.needs_grad(1) else None)

    def raw_backward(self, grad):
        a, b = self.saved()
        (ea, _), (eb, _) = self.next_functions
        ad = raw_operand(a, grad) if eb is not None else 0
        bd = raw_operand(b, grad) if ea is not None else 0
        if ad is None or bd is None:
            return self.tensor_backward(grad)
        return (grad * bd if ea is not None else None,
                grad * ad if eb is not None else None)


class DivBackward0(BinaryOp):
    """div(input, other): d/dinput = grad / other, d/dother = -grad * input / other**2."""

    __slots__ = ()
    save_inputs = (0, 1)
    int_to_float = True

    def forward(self, a, b):
        with host.errstate(divide="ignore", invalid="ignore"):
            return a / b

    def backward(self, grad):
        a, b = self.saved()
        ga = grad / b if self.needs_grad(0) else None
        gb = -grad * a / (b * b) if self.needs_grad(1) else None
        return ga, gb

    def raw_backward(self, grad):
        a, b = self.saved()
        (ea, _), (eb, _) = self.next_functions
        ad = raw_operand(a, grad) if eb is not None else 0  # (a is saved only for b's grad)
        bd = raw_operand(b, grad)
        if ad is None or bd is None:
            return self.tensor_backward(grad)
        if eb is None and type(bd) in _PY_NUMBERS and bd and bd - bd == 0:
            return grad / bd, None  # a finite nonzero number: no warning to silence
        with host.errstate(divide="ignore", invalid="ignore"):
            return (grad / bd if ea is not None else None,
                    -grad * ad / (bd * bd) if eb is not None else None)


class DivBackward2(BinaryOp):
    """div(input, other, rounding_mode='trunc'|'floor'): zero gradient almost everywhere."""

    __slots__ = ("mode",)

    def forward(self, a, b, mode):
        self.mode = mode
        xp = xp_of(a, b)
        if xp.result_type(a, b).kind in "iub" and not xp.all(b):
            raise RuntimeError("ZeroDivisionError")  # torch's wording for integer x // 0
        with host.errstate(divide="ignore", invalid="ignore"):
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
    """pow(input, exponent: scalar): d/dinput = grad * exponent * input ** (exponent - 1)."""

    __slots__ = ("exponent",)
    save_inputs = (0,)

    def forward(self, a, exponent):
        self.exponent = exponent
        if isinstance(exponent, float) and a.dtype.kind != "f":
            a = a.astype(_dt.get_default_dtype().np)
        with host.errstate(divide="ignore", invalid="ignore"):
            return a ** exponent

    def backward(self, grad):
        (a,) = self.saved()
        e = self.exponent
        if e == 0:
            return grad * 0
        return grad * (e * pow_scalar(a, e - 1))

    def raw_backward(self, grad):
        (a,) = self.saved()
        e = self.exponent
        a = a._data
        if a.dtype != grad.dtype or type(e) not in _PY_NUMBERS:
            return self.tensor_backward(grad)
        if e == 0:
            return grad * 0
        if type(e) is int and e > 0:  # no 0 ** negative nor (negative) ** fraction to silence
            return grad * (a ** (e - 1) * e)
        with host.errstate(divide="ignore", invalid="ignore"):
            return grad * (a ** (e - 1) * e)


class PowBackward1(BinaryOp):
    """pow(input, exponent: Tensor): d/dinput = grad * e * input**(e-1), d/de = grad * out * log(input)."""

    __slots__ = ()
    save_inputs = (0, 1)
    save_output = True

    def forward(self, a, b):
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            return _int_power(a, b)
        with host.errstate(divide="ignore", invalid="ignore"):
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
        if e.dtype.kind != "f" and isinstance(base, float):
            e = e.astype(_dt.get_default_dtype().np)
        xp = xp_of(e)
        if e.dtype.kind in "iu" and isinstance(base, int):
            return _int_power(xp.asarray(base, dtype=e.dtype), e)
        with host.errstate(divide="ignore", invalid="ignore"):
            return xp.power(base, e)

    def backward(self, grad):
        out = self.saved_output()
        if self.base == 0:  # torch: no gradient where exponent >= 0 (not 0 * log 0 = nan)
            d = out._data
            xp = xp_of(d)
            return grad * out * _make(xp.where(xp.isfinite(d), 0.0, -math.inf).astype(d.dtype))
        with host.errstate(invalid="ignore"):
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


class MaximumBackward0(BinaryOp):
    """maximum(input, other): the gradient goes to the larger; split evenly on ties."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return xp_of(a, b).maximum(a, b)

    def backward(self, grad):
        a, b = self.saved()
        return _pick_grad(grad, a, b, gt)


class MinimumBackward0(BinaryOp):
    """minimum(input, other): the gradient goes to the smaller; split evenly on ties."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return xp_of(a, b).minimum(a, b)

    def backward(self, grad):
        a, b = self.saved()
        return _pick_grad(grad, a, b, lt)


def _pick_grad(grad, a, b, better):
    wa = better(a, b).to(grad.dtype) + (a == b).to(grad.dtype) * 0.5
    return grad * wa, grad * (1 - wa)


class WhereBackward0(Op):
    """where(condition, input, other): the gradient goes to the side that was chosen."""

    __slots__ = ("cond",)

    def forward(self, a, b, cond):
        self.cond = cond
        return xp_of(cond).where(cond, a, b)

    def backward(self, grad):
        c = _make(self.cond)
        return (where(c, grad, 0.0) if self.needs_grad(0) else None,
                where(c, 0.0, grad) if self.needs_grad(1) else None)


# --------------------------------------------------------------------------- unary ops
# NOTE: the hottest kernels (exp, log, sqrt, tanh, sigmoid, relu) take NumPy straight for a
# NumPy array (``type(a) is ndarray``) and ask ``xp_of`` only for other arrays: calling
# ``xp_of`` there cost 2-3% of the forward per-op time in benchmarks/overhead.py (a tanh every
# third op), the check under 1%.


class NegBackward0(Op):
    __slots__ = ()

    def forward(self, a):
        return -a

    def backward(self, grad):
        return -grad

    def raw_backward(self, grad):
        return -grad


class ExpBackward0(Op):
    """exp: d/dx = grad * result."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        return (host if type(a) is ndarray else xp_of(a)).exp(a)

    def backward(self, grad):
        return grad * self.saved_output()

    def raw_backward(self, grad):
        return grad * self.saved_output_array()


class LogBackward0(Op):
    """log: d/dx = grad / x."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        with host.errstate(divide="ignore", invalid="ignore"):
            return (host if type(a) is ndarray else xp_of(a)).log(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / a

    def raw_backward(self, grad):
        (a,) = self.saved()
        with host.errstate(divide="ignore", invalid="ignore"):
            return grad / a._data


class SqrtBackward0(Op):
    """sqrt: d/dx = grad / (2 * result)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        with host.errstate(invalid="ignore"):
            return (host if type(a) is ndarray else xp_of(a)).sqrt(a)

    def backward(self, grad):
        return grad / (2 * self.saved_output())

    def raw_backward(self, grad):
        with host.errstate(divide="ignore", invalid="ignore"):
            return grad / (self.saved_output_array() * 2)


class SinBackward0(Op):
    """sin: d/dx = grad * cos(x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return xp_of(a).sin(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * cos(a)


class CosBackward0(Op):
    """cos: d/dx = -grad * sin(x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return xp_of(a).cos(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * -sin(a)


class TanhBackward0(Op):
    """tanh: d/dx = grad * (1 - result**2)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        return (host if type(a) is ndarray else xp_of(a)).tanh(a)

    def backward(self, grad):
        y = self.saved_output()
        return grad * (1 - y * y)

    def raw_backward(self, grad):
        y = self.saved_output_array()
        return grad * (1 - y * y)


class SigmoidBackward0(Op):
    """sigmoid: d/dx = grad * result * (1 - result)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        # NOTE: 1 / (1 + exp(-a)) as torch's CPU kernel: exp(-a) overflows to inf for very
        # negative a, giving exactly 0 as torch does; 10x faster than masked two-branch forms
        xp = host if type(a) is ndarray else xp_of(a)
        e = xp.negative(a, out=xp.empty_like(a))
        with host.errstate(over="ignore"):
            xp.exp(e, out=e)
        e += 1
        return xp.reciprocal(e, out=e)

    def backward(self, grad):
        y = self.saved_output()
        return grad * (y * (1 - y))

    def raw_backward(self, grad):
        y = self.saved_output_array()
        return grad * (y * (1 - y))


class ReluBackward0(Op):
    """relu: d/dx = grad where result > 0 (0 at 0, as torch)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        if a.dtype.kind == "b":
            return a.copy()
        return (host if type(a) is ndarray else xp_of(a)).maximum(a, 0)

    def backward(self, grad):
        return ThresholdBackwardBackward0.apply(grad, self.saved_output(), params=(0,))

    def raw_backward(self, grad):
        return grad * (self.saved_output_array() > 0)


class ThresholdBackwardBackward0(Op):
    """threshold_backward(grad, x, threshold): grad where x > threshold, else 0.

    NOTE: one fused NumPy expression, not ``grad * (x > t).to(dtype)``: relu's backward runs
    on every activation of a network, and the extra temporaries cost more than the math.
    """

    __slots__ = ("threshold",)
    save_inputs = (1,)

    def forward(self, g, x, threshold):
        self.threshold = threshold
        return g * (x > threshold)

    def backward(self, grad):
        (x,) = self.saved()
        return ThresholdBackwardBackward0.apply(grad, x, params=(self.threshold,)), None

    def raw_backward(self, grad):
        (x,) = self.saved()
        return grad * (x._data > self.threshold), None


class AbsBackward0(Op):
    """abs: d/dx = grad * sign(x) (0 at 0)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return xp_of(a).abs(a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * sign(a)


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
        if a.dtype.kind != "f":
            a = a.astype(_dt.get_default_dtype().np)
        with host.errstate(divide="ignore"):
            return xp_of(a).reciprocal(a)

    def backward(self, grad):
        y = self.saved_output()
        return -grad * (y * y)


class ClampBackward1(Op):
    """clamp(input, min, max) with scalar bounds: the gradient passes where min <= x <= max."""

    __slots__ = ("hi", "lo")
    save_inputs = (0,)

    def forward(self, a, lo, hi):
        self.lo, self.hi = lo, hi
        if a.dtype.kind != "f" and (isinstance(lo, float) or isinstance(hi, float)):
            a = a.astype(_dt.get_default_dtype().np)
        return xp_of(a).clip(a, lo, hi)

    def backward(self, grad):
        (a,) = self.saved()
        x, lo, hi = a._data, self.lo, self.hi
        keep = x <= hi if lo is None else x >= lo if hi is None else (x >= lo) & (x <= hi)
        return where(_make(keep), grad, 0.0)


class ClampMinBackward0(ClampBackward1):
    """clamp_min(input, min: scalar)."""

    __slots__ = ()

    def forward(self, a, lo):
        return ClampBackward1.forward(self, a, lo, None)


class ClampMaxBackward0(ClampBackward1):
    """clamp_max(input, max: scalar)."""

    __slots__ = ()

    def forward(self, a, hi):
        return ClampBackward1.forward(self, a, None, hi)


class ClampBackward0(Op):
    """clamp(input, min, max) with tensor bounds: each bound gets the gradient where it won.

    As in torch, where min > max the result is max, and max takes the gradient.
    """

    __slots__ = ()
    save_inputs = (0, 1, 2)

    def forward(self, a, lo, hi):
        xp = xp_of(a)
        out = a
        if lo is not None:
            out = xp.maximum(out, lo)
        if hi is not None:
            out = xp.minimum(out, hi)
        return out if out is not a else a.copy()

    def backward(self, grad):
        a, lo, hi = self.saved()
        x = a._data
        if lo is None:
            return where(_make(x <= hi._data), grad, 0.0), None, _masked(grad, x > hi._data)
        if hi is None:
            return where(_make(x >= lo._data), grad, 0.0), _masked(grad, x < lo._data), None
        lo, hi = lo._data, hi._data
        return (where(_make((x >= lo) & (x <= hi)), grad, 0.0),
                _masked(grad, (x < lo) & (lo < hi)),
                _masked(grad, (x > hi) | (hi < lo)))


class ClampMinBackward1(Op):
    """clamp_min(input, min: Tensor): min gets the gradient where it won."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, lo):
        return xp_of(a).maximum(a, lo)

    def backward(self, grad):
        a, lo = self.saved()
        return _masked(grad, a._data >= lo._data), _masked(grad, a._data < lo._data)


class ClampMaxBackward1(Op):
    """clamp_max(input, max: Tensor): max gets the gradient where it won."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, hi):
        return xp_of(a).minimum(a, hi)

    def backward(self, grad):
        a, hi = self.saved()
        return _masked(grad, a._data <= hi._data), _masked(grad, a._data > hi._data)


def _masked(grad: Tensor, keep) -> Tensor:
    """``grad`` where ``keep``, else 0 (broadcast: the engine sums back to each input)."""
    return where(_make(keep), grad, 0.0)


class ToCopyBackward0(Op):
    """to(dtype): the gradient is cast back to the input's dtype (by the engine)."""

    __slots__ = ()

    def forward(self, a, np_dtype):
        return a.astype(np_dtype)

    def backward(self, grad):
        return grad


class CloneBackward0(Op):
    __slots__ = ()

    def forward(self, a):
        return a.copy()

    def backward(self, grad):
        return grad


# --------------------------------------------------------------------------- public functions


def scalar_name(dt: _dt.dtype) -> str:
    """torch's C++ name of a dtype, as its messages print it: Float, Long, Half, Bool, ..."""
    return dt._legacy[:-len("Tensor")]


def _check_tensor(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def add(input, other, *, alpha=1, out=None) -> Tensor:
    """``torch.add``: input + alpha * other, with broadcasting and type promotion."""
    if not isinstance(input, Tensor):
        return AddBackward0.apply(other, input, alpha) if alpha == 1 else add(
            wrap_like(input, other), other, alpha=alpha)
    if alpha.__class__ is not int:
        _alpha_check(input, other, alpha)
    result = AddBackward0.apply(input, other, alpha)
    return result if out is None else _maybe_out(result, out)


def _alpha_check(input, other, alpha) -> None:
    """torch: a floating alpha needs a floating result, a bool alpha a bool one."""
    rt = _dt.result_type(input, other)
    if isinstance(alpha, bool) and rt is not _dt.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not rt.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


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


subtract = sub


def rsub(input, other, *, alpha=1) -> Tensor:
    """``torch.rsub``: other - alpha * input (what ``2 - x`` computes)."""
    _sub_check(input, other)
    if alpha.__class__ is not int:
        _alpha_check(input, other, alpha)
    if isinstance(other, Tensor):
        return RsubBackward0.apply(input, other, alpha)
    dt = input._data.dtype
    if dt.kind != "f" or type(other) not in (int, float):
        dt = _dt.result_type(input, other).np
    return apply1(RsubBackward1, input, other, alpha, dt)


def mul(input, other, *, out=None) -> Tensor:
    """``torch.mul``: elementwise product with broadcasting."""
    if not isinstance(input, Tensor):
        input, other = other, input
    result = MulBackward0.apply(input, other)
    return result if out is None else _maybe_out(result, out)


multiply = mul


def div(input, other, *, rounding_mode: str | None = None, out=None) -> Tensor:
    """``torch.div``: true division (ints give the default float dtype) or rounded division."""
    if rounding_mode is None:
        return _maybe_out(DivBackward0.apply(input, other), out)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    return _maybe_out(DivBackward2.apply(input, other, rounding_mode), out)


divide = div
true_divide = div


def floor_divide(input, other) -> Tensor:
    return div(input, other, rounding_mode="floor")


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


def neg(input: Tensor) -> Tensor:
    """``torch.neg``."""
    if input._data.dtype == host.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return apply1(NegBackward0, input)


negative = neg


def _float_unary(cls):
    """A unary math function: integer inputs are computed in the default float dtype."""

    def fn(input: Tensor, *, out=None) -> Tensor:
        if not isinstance(input, Tensor):
            _check_tensor(input, fn.__name__)
        if input._data.dtype.kind != "f":
            input = _make(input._data.astype(_dt.get_default_dtype().np))
        result = apply1(cls, input)
        return result if out is None else _maybe_out(result, out)

    return fn


exp = _float_unary(ExpBackward0)
exp.__name__ = "exp"
log = _float_unary(LogBackward0)
log.__name__ = "log"
sqrt = _float_unary(SqrtBackward0)
sqrt.__name__ = "sqrt"
sin = _float_unary(SinBackward0)
sin.__name__ = "sin"
cos = _float_unary(CosBackward0)
cos.__name__ = "cos"
tanh = _float_unary(TanhBackward0)
tanh.__name__ = "tanh"
sigmoid = _float_unary(SigmoidBackward0)
sigmoid.__name__ = "sigmoid"
reciprocal = _float_unary(ReciprocalBackward0)
reciprocal.__name__ = "reciprocal"


def relu(input: Tensor) -> Tensor:
    """``torch.relu``: max(x, 0); its node is ``ReluBackward0``."""
    return apply1(ReluBackward0, _check_tensor(input, "relu"))


def abs(input: Tensor, *, out=None) -> Tensor:
    """``torch.abs``; the derivative at 0 is 0, as in torch."""
    return _maybe_out(apply1(AbsBackward0, _check_tensor(input, "abs")), out)


absolute = abs


def sign(input: Tensor) -> Tensor:
    return apply1(SignBackward0, input)


def square(input: Tensor) -> Tensor:
    """``torch.square``: ``input ** 2``."""
    return pow_scalar(input, 2)


def clamp(input: Tensor, min=None, max=None, *, out=None) -> Tensor:
    """``torch.clamp``: bounds may be numbers or tensors; at least one must be given."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        x, lo, hi = _promote_all(input, min, max)
        try:
            return _maybe_out(ClampBackward0.apply(x, lo, hi), out)
        except ValueError:
            _raise_not_broadcastable(*(v for v in (x, lo, hi) if v is not None))
    return _maybe_out(apply1(ClampBackward1, input, min, max), out)


clip = clamp


def clamp_min(input: Tensor, min) -> Tensor:
    """``torch.clamp_min``: max(input, min), min a number or a tensor."""
    if isinstance(min, Tensor):
        try:
            return ClampMinBackward1.apply(*_promote_all(input, min))
        except ValueError:
            _raise_not_broadcastable(input, min)
    return apply1(ClampMinBackward0, input, min)


def clamp_max(input: Tensor, max) -> Tensor:
    """``torch.clamp_max``: min(input, max), max a number or a tensor."""
    if isinstance(max, Tensor):
        try:
            return ClampMaxBackward1.apply(*_promote_all(input, max))
        except ValueError:
            _raise_not_broadcastable(input, max)
    return apply1(ClampMaxBackward0, input, max)


def _promote_all(*operands) -> list:
    """Tensors (or numbers, or None) cast to their common dtype, as torch's promotion says."""
    rt = _dt.result_type(*(v for v in operands if v is not None))
    xp = _xp_of_tensors(*operands)
    return [None if v is None else _as_dtype(v, rt, xp) for v in operands]


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """``torch.maximum``: elementwise max of two tensors."""
    return MaximumBackward0.apply(input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """``torch.minimum``: elementwise min of two tensors."""
    return MinimumBackward0.apply(input, other)


def where(condition, input=None, other=None) -> Tensor:
    """``torch.where(condition, input, other)``; scalars are allowed for input and other."""
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    xp = _xp_of_tensors(condition, input, other)
    cond = condition._data if isinstance(condition, Tensor) else xp.asarray(condition)
    if cond.dtype != host.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {scalar_name(_dt.from_numpy_dtype(cond.dtype))}")
    rt = _dt.result_type(input, other)
    ta = _as_dtype(input, rt, xp)
    tb = _as_dtype(other, rt, xp)
    try:
        return WhereBackward0.apply(ta, tb, params=(cond,))
    except ValueError:
        _raise_not_broadcastable(cond, ta, tb)


def _as_dtype(x, dt: _dt.dtype, xp) -> Tensor:
    """``x`` (a Tensor, or a Python number made with array module ``xp``) as a tensor of dtype
    ``dt`` (a differentiable cast)."""
    if not isinstance(x, Tensor):
        return _make(xp.asarray(x, dtype=dt.np))
    return x if x._data.dtype == dt.np else x.to(dt)


def _xp_of_tensors(*values):
    """The array module of the Tensors among ``values`` (NumPy if there are none)."""
    return xp_of(*(v._data for v in values if isinstance(v, Tensor)))


def to_dtype(input: Tensor, dtype: _dt.dtype) -> Tensor:
    """A differentiable cast (``ToCopyBackward0``); the result requires grad only if floating."""
    out = apply1(ToCopyBackward0, input, dtype.np)
    if out._grad_fn is not None and not dtype.is_floating_point:
        out._grad_fn = None
        out._requires_grad = False
    return out


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """``torch.clone``: a copy that stays in the graph (``CloneBackward0``)."""
    return apply1(CloneBackward0, input)


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """Self if already C-contiguous, else a contiguous copy (``CloneBackward0``)."""
    if input._data.flags.c_contiguous:
        return input
    return clone(input)


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
    from .inplace import write_out
    return write_out(out, result)


# --------------------------------------------------------------------------- comparisons and logic
# Not differentiable: results are bool tensors that never require grad.


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


def _compare(ufunc: str, name: str):
    """A comparison op computing with the array module's ``ufunc`` (a name: ``"equal"``)."""
    def fn(input, other) -> Tensor:
        a, b = promote(input, other)
        xp = xp_of(a, b)
        try:
            return _make(xp.asarray(getattr(xp, ufunc)(a, b)))
        except ValueError:
            _raise_not_broadcastable(a, b)
    fn.__name__ = name
    fn.__doc__ = f"``torch.{name}``: elementwise comparison with broadcasting; a bool tensor."
    return fn


eq = _compare("equal", "eq")
ne = _compare("not_equal", "ne")
lt = _compare("less", "lt")
le = _compare("less_equal", "le")
gt = _compare("greater", "gt")
ge = _compare("greater_equal", "ge")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def logical_not(input: Tensor) -> Tensor:
    a = input._data
    return _make(xp_of(a).logical_not(a))


def _logical(ufunc: str, name: str):
    def fn(input: Tensor, other) -> Tensor:
        a = input._data
        xp = xp_of(a)
        b = other._data if isinstance(other, Tensor) else xp.asarray(other)
        try:
            return _make(xp.asarray(getattr(xp, ufunc)(a, b)))
        except ValueError:
            _raise_not_broadcastable(input, b)
    fn.__name__ = name
    return fn


logical_and = _logical("logical_and", "logical_and")
logical_or = _logical("logical_or", "logical_or")
logical_xor = _logical("logical_xor", "logical_xor")


def _bitwise(ufunc: str, name: str):
    def fn(input, other) -> Tensor:
        a, b = promote(input, other)
        xp = xp_of(a, b)
        dt = xp.result_type(a, b)
        if dt.kind == "f":
            try:
                host.broadcast_shapes(_shape(a), _shape(b))
            except ValueError:
                _raise_not_broadcastable(a, b)
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{scalar_name(_dt.from_numpy_dtype(dt))}'")
        try:
            return _make(xp.asarray(getattr(xp, ufunc)(a, b)))
        except ValueError:
            _raise_not_broadcastable(a, b)
    fn.__name__ = name
    return fn


bitwise_and = _bitwise("bitwise_and", "bitwise_and")
bitwise_or = _bitwise("bitwise_or", "bitwise_or")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor")


def bitwise_not(input: Tensor) -> Tensor:
    if input._data.dtype.kind == "f":
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for "
                                  f"'{scalar_name(input.dtype)}'")
    a = input._data
    return _make(xp_of(a).invert(a))


def isnan(input: Tensor) -> Tensor:
    a = input._data
    return _make(xp_of(a).isnan(a))


def isinf(input: Tensor) -> Tensor:
    a = input._data
    return _make(xp_of(a).isinf(a))


def isfinite(input: Tensor) -> Tensor:
    a = input._data
    return _make(xp_of(a).isfinite(a))


def equal(input: Tensor, other: Tensor) -> bool:
    """``torch.equal``: same shape and same values."""
    a, b = input._data, other._data
    return a.shape == b.shape and bool(xp_of(a).array_equal(a, b))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    a = input._data
    return bool(xp_of(a).allclose(a, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    a = input._data
    return _make(xp_of(a).isclose(a, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))
