"""A CuPy-like backend that runs on the CPU: it keeps the backend seam honest in CI.

``StrictArray`` wraps a NumPy array and behaves like ``cupy.ndarray`` where a seam violation
would show on a GPU:

* no implicit conversion to NumPy: ``numpy.asarray(x)`` raises CuPy's TypeError; ``x.get()``
  is the explicit host copy;
* mixing with a NumPy array of ndim > 0, in an operator or a module function, raises CuPy's
  ``TypeError: Unsupported type <class 'numpy.ndarray'>`` (Python and NumPy scalars, and
  0-d arrays, are fine, as in CuPy);
* reductions return 0-d arrays, not NumPy scalars.

``module`` is its ``xp``: NumPy's API with strict arrays in and out (``module.exp``,
``module.zeros``, ``module.linalg.solve``, ``module.lib.stride_tricks.as_strided``, ...).
``module.asarray`` accepts host data, as ``cupy.asarray`` does: an explicit host->device copy.
Indexing and ``x[...] = host_array`` accept host indices and values, as CuPy does.
"""

from __future__ import annotations

import operator
import types

import numpy

from . import register_array_type
from .device import STRICT

_new = object.__new__
_SCALARS = (bool, int, float, complex, numpy.generic)
_NO_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
                "construct a NumPy array explicitly.")


def _refuse(x) -> None:
    raise TypeError(f"Unsupported type {type(x)}")


def _unwrap(x):
    """Arguments of a module function: strict arrays unwrapped, host arrays (ndim > 0) refused."""
    t = type(x)
    if t is StrictArray:
        return x._a
    if t is list or t is tuple:
        return t(_unwrap(v) for v in x)
    if isinstance(x, numpy.ndarray) and x.ndim:
        _refuse(x)
    return x


def _wrap(r):
    """Results of NumPy: arrays and NumPy scalars become strict arrays (0-d for scalars)."""
    t = type(r)
    if t is numpy.ndarray:
        s = _new(StrictArray)
        s._a = r
        return s
    if isinstance(r, numpy.generic):
        s = _new(StrictArray)
        s._a = numpy.asarray(r)
        return s
    if t is list:
        return [_wrap(v) for v in r]
    if isinstance(r, tuple):
        wrapped = [_wrap(v) for v in r]
        return t(*wrapped) if hasattr(r, "_fields") else tuple(wrapped)
    return r


def _operand(x):
    """An operator's other operand, or NotImplemented (a Tensor then takes over)."""
    t = type(x)
    if t is StrictArray:
        return x._a
    if isinstance(x, numpy.ndarray):
        if x.ndim:
            _refuse(x)
        return x
    if isinstance(x, _SCALARS):
        return x
    return NotImplemented


def _wrapped_call(fn, name: str):
    def call(*args, **kwargs):
        out = kwargs.get("out")
        r = fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        if out is not None and type(out) is StrictArray and r is out._a:
            return out
        return _wrap(r)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = getattr(fn, "__doc__", None)
    return call


class _MemoryPointer:
    """``cupy.cuda.MemoryPointer``'s ``ptr``: the address of an array's first element."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class StrictArray:
    """``cupy.ndarray`` stand-in: a NumPy array that refuses to be mixed with host arrays.

    ``StrictArray(shape, dtype)`` makes an uninitialised array, as ``cupy.ndarray`` does.
    """

    __slots__ = ("__weakref__", "_a")  # weakly referable, as cupy.ndarray
    # NOTE: NumPy's ufuncs and functions refuse strict arrays instead of dispatching to them
    # (CuPy dispatches): a kernel that calls ``numpy.exp`` on a device array has bypassed the
    # seam, and refusing shows that here instead of on a GPU machine later. ``None`` also makes
    # ``ndarray + StrictArray`` defer to ``__radd__``, which raises CuPy's TypeError.
    __array_ufunc__ = None

    def __array_function__(self, func, types, args, kwargs):
        return NotImplemented  # numpy.concatenate(strict, ...) -> TypeError (see above)

    def __init__(self, shape, dtype=float) -> None:
        self._a = numpy.empty(shape, dtype=dtype)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(_NO_IMPLICIT)

    def get(self, stream=None, order="C", out=None) -> numpy.ndarray:
        """An explicit host copy (``cupy.ndarray.get``)."""
        return self._a.copy()

    @property
    def data(self) -> _MemoryPointer:
        return _MemoryPointer(self._a.__array_interface__["data"][0])

    @property
    def device(self) -> str:
        return "strict"

    def __getattr__(self, name: str):
        if name.startswith("__"):  # never hand out __array_interface__ and the like
            raise AttributeError(name)
        v = getattr(self._a, name)
        return _wrapped_call(v, name) if callable(v) else _wrap(v)

    # -- indexing: host indices and values are accepted, as CuPy does
    def __getitem__(self, key):
        return _wrap(self._a[_index(key)])

    def __setitem__(self, key, value) -> None:
        self._a[_index(key)] = value._a if type(value) is StrictArray else value

    # -- Python protocols
    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        return (_wrap(v) for v in self._a)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __index__(self) -> int:
        return operator.index(self._a)

    def __complex__(self) -> complex:
        return complex(self._a)

    def __repr__(self) -> str:
        return repr(self._a)

    def __str__(self) -> str:
        return str(self._a)

    def __format__(self, spec: str) -> str:
        return format(self._a.item() if self._a.ndim == 0 else self._a, spec)

    def __copy__(self) -> StrictArray:
        return _wrap(self._a.copy())

    def __deepcopy__(self, memo) -> StrictArray:
        return _wrap(self._a.copy())

    def __reduce__(self):
        return (asarray, (self._a,))

    __hash__ = None  # mutable, like ndarray


def _index(key):
    t = type(key)
    if t is StrictArray:
        return key._a
    if t is tuple:
        return tuple(k._a if type(k) is StrictArray else k for k in key)
    return key


def _binary(name: str):
    fn = getattr(operator, name)
    ifn = getattr(operator, "i" + name.rstrip("_"), None)

    def op(self, other):
        b = _operand(other)
        return NotImplemented if b is NotImplemented else _wrap(fn(self._a, b))

    def rop(self, other):
        b = _operand(other)
        return NotImplemented if b is NotImplemented else _wrap(fn(b, self._a))

    def iop(self, other):
        b = _operand(other)
        if b is NotImplemented:
            return NotImplemented
        ifn(self._a, b)
        return self

    return op, rop, iop


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_",
              "or_", "xor", "lshift", "rshift"):
    _op, _rop, _iop = _binary(_name)
    _dunder = _name.rstrip("_")
    setattr(StrictArray, f"__{_dunder}__", _op)
    setattr(StrictArray, f"__r{_dunder}__", _rop)
    setattr(StrictArray, f"__i{_dunder}__", _iop)
for _name in ("lt", "le", "eq", "ne", "gt", "ge"):
    setattr(StrictArray, f"__{_name}__", _binary(_name)[0])


def _unary(fn):
    return lambda self: _wrap(fn(self._a))


for _name in ("neg", "pos", "abs", "invert"):
    setattr(StrictArray, f"__{_name}__", _unary(getattr(operator, _name)))


def _divmod(self, other):
    b = _operand(other)
    return NotImplemented if b is NotImplemented else _wrap(divmod(self._a, b))


StrictArray.__divmod__ = _divmod


class _Namespace(types.ModuleType):
    """NumPy's (sub)module with strict arrays in and out; names resolve on first use."""

    def __init__(self, name: str, source) -> None:
        super().__init__(name)
        self._source = source

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        v = getattr(self._source, name)
        if isinstance(v, types.ModuleType):
            v = _Namespace(f"{self.__name__}.{name}", v)
        elif isinstance(v, numpy.ufunc):
            v = _Ufunc(v)
        elif callable(v) and not isinstance(v, type):
            v = _wrapped_call(v, name)  # classes (dtypes, errstate, finfo) pass through
        setattr(self, name, v)
        return v


class _Ufunc:
    """A NumPy ufunc over strict arrays: ``xp.add(a, b)``, ``xp.add.at``, ``xp.maximum.reduce``."""

    __slots__ = ("_call", "_ufunc")

    def __init__(self, ufunc) -> None:
        self._ufunc = ufunc
        self._call = _wrapped_call(ufunc, ufunc.__name__)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str):
        v = getattr(self._ufunc, name)
        return _wrapped_call(v, name) if callable(v) else v

    def __repr__(self) -> str:
        return f"<strict ufunc '{self._ufunc.__name__}'>"


def asarray(a, dtype=None, order=None, *, copy=None) -> StrictArray:
    """``cupy.asarray``: a strict array as is; host data (arrays, lists, scalars) copied over."""
    if type(a) is StrictArray:
        if dtype is None or numpy.dtype(dtype) == a._a.dtype:
            return a.copy() if copy else a
        return _wrap(a._a.astype(dtype))
    return _wrap(numpy.array(_unwrap_nested(a), dtype=dtype, order=order or "K", copy=True))


def array(obj, dtype=None, copy=True, order="K", ndmin=0) -> StrictArray:
    """``cupy.array``: a copy (of host data or of a strict array)."""
    return _wrap(numpy.array(_unwrap_nested(obj), dtype=dtype, copy=copy, order=order,
                             ndmin=ndmin))


def _unwrap_nested(x):
    if type(x) is StrictArray:
        return x._a
    if type(x) in (list, tuple):
        return type(x)(_unwrap_nested(v) for v in x)
    return x


def ascontiguousarray(a, dtype=None) -> StrictArray:
    return _wrap(numpy.ascontiguousarray(_unwrap_nested(a), dtype=dtype))


module = _Namespace("ember._backend.strict.module", numpy)
module.ndarray = StrictArray
module.asarray = module.asanyarray = asarray
module.array = array
module.ascontiguousarray = ascontiguousarray

register_array_type(StrictArray, module, STRICT)
