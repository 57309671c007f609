"""The op library, and the one table that turns its functions into Tensor methods.

Each op is declared once, as a function (``ember.X``) built on an ``Op`` class that holds its
forward and derivative. ``_bind`` derives the method form (``t.X``), the in-place form
(``t.X_``, via the single in-place mechanism) and the operators from that function.
"""

from __future__ import annotations

from .._tensor import Tensor
from . import _registry
from . import blas, creation, elementwise, indexing, inplace, reduction, views
from .blas import bmm, dot, matmul, mm, mv
from .elementwise import (
    abs,
    absolute,
    add,
    allclose,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    clone,
    contiguous,
    cos,
    div,
    divide,
    eq,
    equal,
    exp,
    floor_divide,
    ge,
    greater,
    greater_equal,
    gt,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    maximum,
    minimum,
    mul,
    multiply,
    ne,
    neg,
    negative,
    not_equal,
    pow,
    reciprocal,
    relu,
    rsub,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    sub,
    subtract,
    tanh,
    true_divide,
    where,
)
from .indexing import getitem, index_put, masked_fill, nonzero, setitem
from .inplace import copy_, fill_, zero_
from .inplace import inplace as _inplace
from .joining import cat, concat, concatenate, stack
from .reduction import all, amax, amin, any, argmax, argmin, max, mean, min, norm, sum
from .views import (
    broadcast_shapes,
    broadcast_tensors,
    broadcast_to,
    expand,
    expand_as,
    flatten,
    moveaxis,
    movedim,
    permute,
    reshape,
    reshape_as,
    squeeze,
    swapaxes,
    swapdims,
    t,
    transpose,
    unbind,
    unflatten,
    unsqueeze,
    view,
    view_as,
)

# name -> function: each becomes Tensor.name
METHODS = {f.__name__ if n is None else n: f for n, f in [
    (None, add), (None, sub), ("subtract", sub), (None, mul), ("multiply", mul), (None, div),
    ("divide", div), ("true_divide", div), (None, floor_divide), (None, pow), (None, neg),
    ("negative", neg), (None, exp), (None, log), (None, sqrt), (None, sin), (None, cos),
    (None, tanh), (None, sigmoid), (None, relu), (None, abs), ("absolute", abs), (None, sign),
    (None, square), (None, reciprocal), (None, clamp), ("clip", clamp), (None, clamp_min),
    (None, clamp_max), (None, maximum), (None, minimum), (None, masked_fill), (None, sum),
    (None, mean), (None, norm), (None, max), (None, min), (None, amax), (None, amin),
    (None, argmax),
    (None, argmin), (None, all), (None, any), (None, matmul), (None, mm), (None, mv),
    (None, dot), (None, bmm), (None, view), (None, view_as), (None, reshape),
    (None, reshape_as), (None, flatten), (None, unflatten), (None, transpose),
    ("swapaxes", transpose), ("swapdims", transpose), (None, t), (None, permute),
    (None, squeeze), (None, unsqueeze), (None, expand), (None, expand_as),
    (None, broadcast_to), (None, movedim), ("moveaxis", movedim), (None, clone),
    (None, contiguous), (None, eq), (None, ne), (None, lt), (None, le), (None, gt), (None, ge),
    ("greater", gt), ("greater_equal", ge), ("less", lt), ("less_equal", le),
    ("not_equal", ne), (None, logical_and), (None, logical_or), (None, logical_not),
    (None, logical_xor), (None, bitwise_and), (None, bitwise_or), (None, bitwise_xor),
    (None, bitwise_not), (None, isnan), (None, isinf), (None, isfinite), (None, equal),
    (None, allclose), (None, isclose), (None, nonzero), (None, unbind), (None, index_put),
    (None, rsub),
]}

# methods that also get an in-place form ``name_``
INPLACE = ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
           "floor_divide", "pow", "neg", "negative", "exp", "log", "sqrt", "sin", "cos", "tanh",
           "sigmoid", "relu", "abs", "absolute", "sign", "square", "reciprocal", "clamp", "clip",
           "clamp_min", "clamp_max", "masked_fill", "index_put", "logical_not", "logical_and",
           "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne",
           "lt", "le", "gt", "ge")


def _inplace_method(fn, name: str | None = None):
    def method(self, *args, **kwargs):
        return _inplace(self, fn, *args, **kwargs)
    method.__name__ = method.__qualname__ = name or fn.__name__ + "_"
    method.__doc__ = f"In-place form of ``{fn.__name__}``."
    return method


def _rtruediv(self, other):
    if isinstance(other, Tensor):
        return div(other, self)
    return reciprocal(self) * other  # torch records ``2 / x`` as MulBackward0(Reciprocal)


def _where_method(self, condition, y):
    return where(condition, self, y)


def _new_factory(factory):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        return factory(*size, dtype=dtype or self.dtype, device=device,
                       requires_grad=requires_grad, **kwargs)
    return method


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return creation.tensor(data, dtype=dtype or self.dtype, device=device,
                           requires_grad=requires_grad)


def _invert(self):
    kind = self._data.dtype.kind
    if kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return logical_not(self) if kind == "b" else bitwise_not(self)


OPERATORS = {
    "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": rsub,
    "__mul__": mul, "__rmul__": mul, "__truediv__": div, "__rtruediv__": _rtruediv,
    "__floordiv__": floor_divide, "__rfloordiv__": lambda s, o: floor_divide(o, s),
    "__pow__": pow, "__rpow__": lambda s, o: pow(o, s), "__matmul__": matmul,
    "__rmatmul__": lambda s, o: matmul(o, s), "__neg__": neg, "__pos__": lambda s: s,
    "__abs__": abs, "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt,
    "__ge__": ge, "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
    "__rand__": bitwise_and, "__ror__": bitwise_or, "__rxor__": bitwise_xor,
    "__invert__": _invert, "__getitem__": getitem, "__setitem__": setitem,
}

INPLACE_OPERATORS = {"__iadd__": add, "__isub__": sub, "__imul__": mul, "__itruediv__": div,
                     "__ifloordiv__": floor_divide, "__ipow__": pow, "__iand__": bitwise_and,
                     "__ior__": bitwise_or, "__ixor__": bitwise_xor}


# Op modules added since declare their own tables: ``__all__`` (exported as ``ember.X``),
# ``METHODS`` (name -> function, bound as ``Tensor.name``), ``INPLACE`` (names that also get
# ``Tensor.name_``) and optionally ``OPERATORS`` (dunder -> function).
AREA_MODULES = ("pointwise", "stats", "scan", "sorting", "shaping", "sampling", "gather_scatter",
                "products")


def _load_areas() -> None:
    import importlib
    g = globals()
    for area in AREA_MODULES:
        mod = importlib.import_module("." + area, __name__)
        for name in getattr(mod, "__all__", ()):
            g[name] = getattr(mod, name)
        METHODS.update(getattr(mod, "METHODS", {}))
        globals()["INPLACE"] = INPLACE + tuple(getattr(mod, "INPLACE", ()))
        OPERATORS.update(getattr(mod, "OPERATORS", {}))


def _bind() -> None:
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name in INPLACE:
        setattr(Tensor, name + "_", _inplace_method(METHODS[name]))
    for name, fn in OPERATORS.items():
        setattr(Tensor, name, fn)
    for name, fn in INPLACE_OPERATORS.items():
        setattr(Tensor, name, _inplace_method(fn))
    Tensor.copy_ = copy_
    Tensor.fill_ = fill_
    Tensor.zero_ = zero_
    Tensor.where = _where_method
    Tensor.new_tensor = _new_tensor
    Tensor.new_zeros = _new_factory(creation.zeros)
    Tensor.new_ones = _new_factory(creation.ones)
    Tensor.new_empty = _new_factory(creation.empty)
    Tensor.new_full = lambda self, size, fill_value, dtype=None, device=None, \
        requires_grad=False: creation.full(size, fill_value, dtype=dtype or self.dtype,
                                           requires_grad=requires_grad)


_load_areas()
_bind()
# ops declared with ``_registry.register`` (the one registration per op): ember.X and Tensor forms
globals().update(_registry.exports())
_registry.bind(Tensor, _inplace_method)



# torch.softmax / torch.log_softmax (and the Tensor methods): the ops live in
# nn.functional.activation, loaded on first use to keep ``import ember`` light.
def softmax(*args, **kwargs) -> Tensor:
    """``torch.softmax(input, dim, dtype=None)``."""
    from ..nn.functional.activation import torch_softmax
    return torch_softmax(*args, **kwargs)


def log_softmax(*args, **kwargs) -> Tensor:
    """``torch.log_softmax(input, dim, dtype=None)``."""
    from ..nn.functional.activation import torch_log_softmax
    return torch_log_softmax(*args, **kwargs)


Tensor.softmax = softmax  # replaced by the real op when nn.functional is imported
Tensor.log_softmax = log_softmax
