"""Comparison and selection: eq/ne/lt/le/gt/ge, isclose/allclose/equal, isnan/isinf/isfinite,
logical_* and bitwise_* (bool results, not differentiable), and the ops that choose between
values: where, maximum/minimum, fmax/fmin, clamp/clamp_min/clamp_max.

Each public op is registered once (``@register``) with its method, in-place, alias and operator
forms.
"""

from __future__ import annotations

from .._backend import FLOAT_KINDS, HOST_ARRAYS, host, xp_of
from .._backend import dtypes as _dt
from .._backend.errstate import ignore_invalid
from .._tensor import Tensor, _make
from ._op import BinaryOp, Op, apply1, broadcast_error, promote
from ._registry import register
from .arithmetic import (
    _as_dtype,
    _check_both_tensors,
    _maybe_out,
    _promote_all,
    _raise_not_broadcastable,
    _shape,
    _xp_of_tensors,
    scalar_name,
)

# ------------------------------------------------------------------ maximum, minimum, where, clamp


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


_INT_OF_SIZE = {2: "int16", 4: "int32", 8: "int64"}


def masked_bits(g, mask, keep: bool):
    """``g`` where the bool array ``mask`` (of g's shape) is ``keep``, else +0.0, bit for bit
    (also where g is nan or inf, which ``g * mask`` gets wrong), on NumPy arrays of a float
    dtype; None for other arrays (the caller then uses ``where``).

    NOTE: an AND of g's bits with an all-ones/all-zeros word per element, made from the mask's
    bytes (0/1 -> 0/-1 in int8, widened with sign extension), into the result's own buffer.
    NumPy's where branches on a random mask (3.0 ms against 0.3 at (64, 16, 28, 28)); making
    the words with ``subtract(mask, 1, dtype=uint32)`` casts bool element by element: 328
    against 233 µs for this at (64, 16, 28, 28), torch's threshold_backward 130."""
    word = _INT_OF_SIZE.get(g.dtype.itemsize)
    if type(g) not in HOST_ARRAYS or type(mask) not in HOST_ARRAYS or g.dtype.kind != "f" \
            or word is None or g.shape != mask.shape:
        return None
    m8 = mask.view(host.int8)
    # -1 (all ones) where kept
    m8 = host.negative(m8) if keep else host.subtract(m8, 1, dtype=host.int8)
    out = host.empty(g.shape, g.dtype)
    bits = out.view(word)
    host.copyto(bits, m8, casting="unsafe")  # sign extension: -1 stays all ones
    host.bitwise_and(g.view(word), bits, out=bits)
    return out


def select_array(g, keep):
    """``g`` where the bool array ``keep`` (of g's shape) is True, else +0.0: torch's
    ``where(keep, grad, 0)`` bit for bit (``masked_bits``)."""
    out = masked_bits(g, keep, True)
    if out is not None:
        return out
    xp = xp_of(g)
    return xp.where(keep, g, xp.zeros((), g.dtype))


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


class ClampBackward1(Op):
    """clamp(input, min, max) with scalar bounds: the gradient passes where min <= x <= max."""

    __slots__ = ("hi", "lo")
    save_inputs = (0,)

    def forward(self, a, lo, hi):
        self.lo, self.hi = lo, hi
        if a.dtype.kind not in FLOAT_KINDS and (isinstance(lo, float) or isinstance(hi, float)):
            a = a.astype(_dt.get_default_dtype().np)
        xp = xp_of(a)
        # NOTE: one bound is NumPy's clip without its Python wrapper (~2 µs a call): the same
        # maximum/minimum ufunc clip runs for it
        if hi is None:
            return xp.maximum(a, lo)
        if lo is None:
            return xp.minimum(a, hi)
        return xp.clip(a, lo, hi)

    def _keep(self, x):
        lo, hi = self.lo, self.hi
        return x <= hi if lo is None else x >= lo if hi is None else (x >= lo) & (x <= hi)

    def backward(self, grad):
        (a,) = self.saved()
        return where(_make(self._keep(a._data)), grad, 0.0)

    def raw_backward(self, grad):
        (a,) = self.saved()
        return select_array(grad, self._keep(a._data))


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


class FmaxBackward0(BinaryOp):
    """fmax: the gradient goes to input where input >= other or other is NaN, else to other."""

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return xp_of(a, b).fmax(a, b)

    def backward(self, grad):
        a, b = self.saved()
        with ignore_invalid():
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
        with ignore_invalid():
            first = (a._data <= b._data) | xp_of(b._data).isnan(b._data)
        return _split(grad, first)


def _split(grad: Tensor, first):
    mask = _make(first)
    return where(mask, grad, 0.0), where(mask, 0.0, grad)


@register(inplace=True, aliases=("clip",))
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


@register(inplace=True)
def clamp_min(input: Tensor, min) -> Tensor:
    """``torch.clamp_min``: max(input, min), min a number or a tensor."""
    if isinstance(min, Tensor):
        try:
            return ClampMinBackward1.apply(*_promote_all(input, min))
        except ValueError:
            _raise_not_broadcastable(input, min)
    return apply1(ClampMinBackward0, input, min)


@register(inplace=True)
def clamp_max(input: Tensor, max) -> Tensor:
    """``torch.clamp_max``: min(input, max), max a number or a tensor."""
    if isinstance(max, Tensor):
        try:
            return ClampMaxBackward1.apply(*_promote_all(input, max))
        except ValueError:
            _raise_not_broadcastable(input, max)
    return apply1(ClampMaxBackward0, input, max)


@register
def maximum(input: Tensor, other: Tensor) -> Tensor:
    """``torch.maximum``: elementwise max of two tensors."""
    return MaximumBackward0.apply(input, other)


@register
def minimum(input: Tensor, other: Tensor) -> Tensor:
    """``torch.minimum``: elementwise min of two tensors."""
    return MinimumBackward0.apply(input, other)


def _where_method(self: Tensor, condition, y) -> Tensor:
    """``Tensor.where(condition, y)``: ``self`` where ``condition``, else ``y``."""
    return where(condition, self, y)


@register(method=_where_method)
def where(condition, input=None, other=None) -> Tensor:
    """``torch.where(condition, input, other)``; scalars are allowed for input and other."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)  # a Tensor method: indexing builds on this
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


@register
def fmax(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.fmax``: the elementwise max, ignoring NaN (NaN only where both are)."""
    _check_both_tensors("fmax", input, other)
    return _maybe_out(FmaxBackward0.apply(input, other), out)


@register
def fmin(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.fmin``: the elementwise min, ignoring NaN (NaN only where both are)."""
    _check_both_tensors("fmin", input, other)
    return _maybe_out(FminBackward0.apply(input, other), out)


# --------------------------------------------------------------------------- comparisons and logic


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


eq = register(_compare("equal", "eq"), inplace=True, operators=("__eq__",))
ne = register(_compare("not_equal", "ne"), inplace=True, aliases=("not_equal",), operators=("__ne__",))
lt = register(_compare("less", "lt"), inplace=True, aliases=("less",), operators=("__lt__",))
le = register(_compare("less_equal", "le"), inplace=True, aliases=("less_equal",), operators=("__le__",))
gt = register(_compare("greater", "gt"), inplace=True, aliases=("greater",), operators=("__gt__",))
ge = register(_compare("greater_equal", "ge"), inplace=True, aliases=("greater_equal",), operators=("__ge__",))


@register(inplace=True)
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


logical_and = register(_logical("logical_and", "logical_and"), inplace=True)
logical_or = register(_logical("logical_or", "logical_or"), inplace=True)
logical_xor = register(_logical("logical_xor", "logical_xor"), inplace=True)


def _bitwise(ufunc: str, name: str):
    def fn(input, other) -> Tensor:
        a, b = promote(input, other)
        xp = xp_of(a, b)
        dt = xp.result_type(a, b)
        if dt.kind in FLOAT_KINDS:
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


bitwise_and = register(_bitwise("bitwise_and", "bitwise_and"), inplace=True,
                         operators=("__and__", "__rand__", "__iand__"))


bitwise_or = register(_bitwise("bitwise_or", "bitwise_or"), inplace=True,
                         operators=("__or__", "__ror__", "__ior__"))


bitwise_xor = register(_bitwise("bitwise_xor", "bitwise_xor"), inplace=True,
                         operators=("__xor__", "__rxor__", "__ixor__"))


def _shift(name: str, left: bool):
    """torch's shifts: a shift by a negative amount or by at least the dtype's width gives 0
    (a right shift of a negative signed value: -1), where C and NumPy leave it undefined."""
    def fn(input, other) -> Tensor:
        a, b = promote(input, other)
        xp = xp_of(a, b)
        dt = xp.result_type(a, b)
        if dt.kind in "fbV":
            err = broadcast_error(_shape(a), _shape(b))  # torch checks shapes first
            if err is not None:
                raise err
            raise NotImplementedError(f"\"{'l' if left else 'r'}shift_cpu\" not implemented "
                                      f"for '{scalar_name(_dt.from_numpy_dtype(dt))}'")
        a = xp.asarray(a, dtype=dt)
        amount = xp.asarray(b)  # (the shift's own dtype: -1 must stay -1 for a uint8 result)
        valid = (amount >= 0) & (amount < dt.itemsize * 8)
        amount = xp.where(valid, amount, 0).astype(dt)
        try:
            if left:
                out = xp.where(valid, xp.left_shift(a, amount), 0)
            else:
                out = xp.where(valid, xp.right_shift(a, amount), xp.where(a < 0, -1, 0))
        except ValueError:
            _raise_not_broadcastable(a, amount)
        return _make(xp.asarray(out, dtype=dt))
    fn.__name__ = name
    fn.__doc__ = f"``torch.{name}`` (``{'<<' if left else '>>'}``): torch's shift semantics."
    return fn


bitwise_left_shift = register(_shift("bitwise_left_shift", True), inplace=True,
                              operators=("__lshift__", "__ilshift__"))
bitwise_right_shift = register(_shift("bitwise_right_shift", False), inplace=True,
                               operators=("__rshift__", "__irshift__"))


@register(method=False, export=False, operators=("__rlshift__",))
def _rlshift(self: Tensor, other) -> Tensor:
    """``n << x``."""
    return bitwise_left_shift(other, self)


@register(method=False, export=False, operators=("__rrshift__",))
def _rrshift(self: Tensor, other) -> Tensor:
    """``n >> x``."""
    return bitwise_right_shift(other, self)


@register(inplace=True)
def bitwise_not(input: Tensor) -> Tensor:
    if input._data.dtype.kind in FLOAT_KINDS:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for "
                                  f"'{scalar_name(input.dtype)}'")
    a = input._data
    return _make(xp_of(a).invert(a))


@register
def isnan(input: Tensor) -> Tensor:
    a = input._data
    return _make(xp_of(a).isnan(a))


@register
def isinf(input: Tensor) -> Tensor:
    a = input._data
    return _make(xp_of(a).isinf(a))


@register
def isfinite(input: Tensor) -> Tensor:
    a = input._data
    return _make(xp_of(a).isfinite(a))


@register
def equal(input: Tensor, other: Tensor) -> bool:
    """``torch.equal``: same shape and same values."""
    a, b = input._data, other._data
    return a.shape == b.shape and bool(xp_of(a).array_equal(a, b))


@register
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    a = input._data
    return bool(xp_of(a).allclose(a, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@register
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    a = input._data
    return _make(xp_of(a).isclose(a, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@register(method=False, export=False, operators=("__invert__",))
def _invert(self: Tensor) -> Tensor:
    """``~x``: logical not of a bool tensor, bitwise not of an integer one."""
    kind = self._data.dtype.kind
    if kind in FLOAT_KINDS:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return logical_not(self) if kind == "b" else bitwise_not(self)
