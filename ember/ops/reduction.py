"""Reductions: sum, mean, norm, max/min (with indices), all/any, argmax/argmin."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._backend import dtypes as _dt
from .._tensor import Tensor, _make, _wrap_dim
from ._op import Op, apply1

max_result = namedtuple("max", ["values", "indices"])
min_result = namedtuple("min", ["values", "indices"])
max_result.__module__ = min_result.__module__ = "torch.return_types"


def reduce_dims(dim, ndim: int) -> tuple[int, ...] | None:
    """Normalise torch's ``dim`` (int, sequence, or None = all) to sorted positive dims."""
    if dim is None:
        return None
    if isinstance(dim, (int, np.integer)):
        return (_wrap_dim(int(dim), ndim),)
    dims = tuple(sorted(_wrap_dim(int(d), ndim) for d in dim))
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims} appears multiple times in the list of dims")
    return dims if dims or ndim == 0 else None


def _expand_back(grad: Tensor, shape: tuple, dims, keepdim: bool) -> Tensor:
    """Undo a reduction's shape change on ``grad``: re-insert reduced dims, broadcast back."""
    if dims is not None and not keepdim and len(shape):
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        grad = grad.reshape(kept)
    return grad.expand(shape)


class SumBackward0(Op):
    """sum(input): d/dinput = grad broadcast to input's shape."""

    __slots__ = ("shape",)

    def forward(self, a, out_dtype):
        self.shape = a.shape
        return np.sum(a, dtype=out_dtype)

    def backward(self, grad):
        return grad.expand(self.shape)


class SumBackward1(Op):
    """sum(input, dim, keepdim): d/dinput = grad with the reduced dims re-inserted, broadcast."""

    __slots__ = ("shape", "dims", "keepdim")

    def forward(self, a, dims, keepdim, out_dtype):
        self.shape, self.dims, self.keepdim = a.shape, dims, keepdim
        return np.sum(a, axis=dims, keepdims=keepdim, dtype=out_dtype)

    def backward(self, grad):
        return _expand_back(grad, self.shape, self.dims, self.keepdim)


class MeanBackward0(Op):
    """mean(input): d/dinput = grad / numel, broadcast."""

    __slots__ = ("shape",)

    def forward(self, a):
        self.shape = a.shape
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.mean(a)

    def backward(self, grad):
        n = int(np.prod(self.shape))
        return (grad / n).expand(self.shape)


class MeanBackward1(Op):
    """mean(input, dim, keepdim): d/dinput = grad / count, broadcast."""

    __slots__ = ("shape", "dims", "keepdim")

    def forward(self, a, dims, keepdim):
        self.shape, self.dims, self.keepdim = a.shape, dims, keepdim
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.mean(a, axis=dims, keepdims=keepdim)

    def backward(self, grad):
        n = int(np.prod([self.shape[d] for d in self.dims]))
        return _expand_back(grad / n, self.shape, self.dims, self.keepdim)


class LinalgVectorNormBackward0(Op):
    """vector_norm(input, ord, dim, keepdim): d/dx = grad * x |x|^(p-2) / norm^(p-1)."""

    __slots__ = ("ord", "dims", "keepdim")
    save_inputs = (0,)
    save_output = True

    def forward(self, a, ord, dims, keepdim):
        self.ord, self.dims, self.keepdim = ord, dims, keepdim
        x = np.abs(a)
        if ord == float("inf"):
            return np.max(x, axis=dims, keepdims=keepdim) if x.size else np.zeros(())
        if ord == 0:
            return np.sum(x != 0, axis=dims, keepdims=keepdim).astype(a.dtype)
        if ord == 2:
            return np.sqrt(np.sum(x * x, axis=dims, keepdims=keepdim))
        return np.sum(x ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)

    def backward(self, grad):
        (x,) = self.saved()
        shape = x.shape
        norm = _expand_back(self.saved_output(), shape, self.dims, self.keepdim)
        g = _expand_back(grad, shape, self.dims, self.keepdim)
        p = self.ord
        if p == 0:
            return g * 0
        if p == 1:
            return g * x.sign()
        nonzero = _make(norm._data != 0)
        safe_norm = norm.masked_fill(~nonzero, 1.0)
        if p == 2:
            scale = x / safe_norm
        elif p == float("inf"):
            is_max = (x.abs() == norm).to(x.dtype)
            count = _expand_back(is_max.sum(self.dims, keepdim=True), shape, None, True)
            scale = x.sign() * is_max / count
        else:
            scale = x * x.abs() ** (p - 2) / safe_norm ** (p - 1)
        return g * scale.masked_fill(~nonzero, 0.0)


class MaxBackward1(Op):
    """max(input) / min(input): the gradient is shared evenly by all elements equal to it."""

    __slots__ = ("fn",)
    save_inputs = (0,)
    save_output = True

    def forward(self, a, fn):
        if a.size == 0:
            raise RuntimeError(f"{fn.__name__}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        self.fn = fn
        return fn(a)

    def backward(self, grad):
        (x,) = self.saved()
        hit = (x == self.saved_output()).to(grad.dtype)
        return hit * (grad / hit.sum())


class MinBackward1(MaxBackward1):
    __slots__ = ()


class MaxBackward0(Op):
    """max(input, dim) / min(input, dim): the gradient goes to the selected index."""

    __slots__ = ("shape", "dim", "keepdim", "idx")

    def forward(self, a, dim, keepdim, argfn):
        if a.ndim and a.shape[dim] == 0:
            raise IndexError(f"{argfn.__name__[3:]}(): Expected reduction dim {dim} to have "
                             "non-zero size.")
        self.shape, self.dim, self.keepdim = a.shape, dim, keepdim
        idx = argfn(a, axis=dim, keepdims=True) if a.ndim else np.zeros((), np.int64)
        self.idx = idx
        vals = np.take_along_axis(a, idx, axis=dim) if a.ndim else a.copy()
        return vals if keepdim or not a.ndim else np.squeeze(vals, dim)

    def backward(self, grad):
        from .indexing import _scatter_into
        g = grad if self.keepdim or not len(self.shape) else grad.unsqueeze(self.dim)
        return _scatter_into(g, self.shape, self.dim, self.idx)


class MinBackward0(MaxBackward0):
    __slots__ = ()


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001
    """``torch.sum``: integer and bool inputs sum to int64, as in torch."""
    out_dtype = _dt.to_dtype(dtype).np if dtype is not None else (
        np.int64 if input._data.dtype.kind in "biu" else None)
    dims = reduce_dims(dim, input._data.ndim)
    if dims is None:
        if keepdim:
            return apply1(SumBackward1, input, tuple(range(input.ndim)), True, out_dtype)
        return apply1(SumBackward0, input, out_dtype)
    return apply1(SumBackward1, input, dims, keepdim, out_dtype)


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.mean``: floating inputs only (torch refuses to guess an integer mean's dtype)."""
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind != "f":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: "
                           f"{_dt.from_numpy_dtype(input._data.dtype).name.capitalize()}")
    dims = reduce_dims(dim, input._data.ndim)
    if dims is None:
        if keepdim:
            return apply1(MeanBackward1, input, tuple(range(input.ndim)), True)
        return apply1(MeanBackward0, input)
    return apply1(MeanBackward1, input, dims, keepdim)


def linalg_vector_norm(input: Tensor, ord=2, dim=None, keepdim: bool = False, *,
                       dtype=None) -> Tensor:
    """``torch.linalg.vector_norm``."""
    if input._data.dtype.kind != "f":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dt.from_numpy_dtype(input._data.dtype).name.capitalize()}")
    if dtype is not None:
        input = input.to(dtype)
    dims = reduce_dims(dim, input._data.ndim)
    return apply1(LinalgVectorNormBackward0, input, float(ord), dims, keepdim)


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """``torch.norm``: the 2-norm (Frobenius) by default, or the vector p-norm."""
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        raise NotImplementedError(f"torch.norm with p='{p}' is not supported by ember yet")
    return linalg_vector_norm(input, p, dim, keepdim, dtype=dtype)


def _extreme(input: Tensor, dim, keepdim, other, fn, argfn, full_cls, dim_cls, result, name):
    if isinstance(dim, Tensor) and other is None:
        other, dim = dim, None
    if other is not None:
        from .elementwise import maximum, minimum
        return (maximum if name == "max" else minimum)(input, other)
    if dim is None:
        return apply1(full_cls, input, fn)
    d = _wrap_dim(dim, input._data.ndim)
    values = apply1(dim_cls, input, d, keepdim, argfn)
    node = values._grad_fn
    idx = node.idx if node is not None else (
        argfn(input._data, axis=d, keepdims=True) if input._data.ndim else np.zeros((), np.int64))
    if not keepdim and input._data.ndim:
        idx = np.squeeze(idx, d)
    return result(values, _make(np.asarray(idx, dtype=np.int64)))


def max(input: Tensor, dim=None, keepdim: bool = False, *, other=None):  # noqa: A001
    """``torch.max``: the maximum; with ``dim``, a named tuple (values, indices)."""
    return _extreme(input, dim, keepdim, other, np.max, np.argmax, MaxBackward1, MaxBackward0,
                    max_result, "max")


def min(input: Tensor, dim=None, keepdim: bool = False, *, other=None):  # noqa: A001
    """``torch.min``: the minimum; with ``dim``, a named tuple (values, indices)."""
    return _extreme(input, dim, keepdim, other, np.min, np.argmin, MinBackward1, MinBackward0,
                    min_result, "min")


def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    if dim == () or dim is None:
        return max(input)
    if isinstance(dim, int):
        return max(input, dim, keepdim).values
    out = input
    for d in sorted((_wrap_dim(d, input.ndim) for d in dim), reverse=True):
        out = max(out, d, keepdim).values
    return out


def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.argmax``: index of the first maximum (of the flattened input if dim is None)."""
    if dim is None:
        return _make(np.asarray(np.argmax(input._data), dtype=np.int64))
    d = _wrap_dim(dim, input._data.ndim)
    return _make(np.argmax(input._data, axis=d, keepdims=keepdim).astype(np.int64))


def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.argmin``."""
    if dim is None:
        return _make(np.asarray(np.argmin(input._data), dtype=np.int64))
    d = _wrap_dim(dim, input._data.ndim)
    return _make(np.argmin(input._data, axis=d, keepdims=keepdim).astype(np.int64))


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """``torch.all``: bool result."""
    dims = reduce_dims(dim, input._data.ndim)
    return _make(np.asarray(np.all(input._data, axis=dims, keepdims=keepdim)))


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """``torch.any``: bool result."""
    dims = reduce_dims(dim, input._data.ndim)
    return _make(np.asarray(np.any(input._data, axis=dims, keepdims=keepdim)))
