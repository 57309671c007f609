"""Reductions: sum, mean, prod, norm, max/min (with indices), amax/amin, argmax/argmin,
all/any, var/std (with correction), var_mean/std_mean, logsumexp, count_nonzero, nansum/nanmean.

Each public op is registered once (``@register``); ``dim=``/``keepdim=`` also take torch's
NumPy spellings ``axis=``/``keepdims=`` (the registry adds them).
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections import namedtuple
from itertools import pairwise

from .._backend import FLOAT_KINDS, expand_array, host, xp_of
from .._backend import dtypes as _dt
from .._backend.errstate import ignore_divide_invalid, ignore_invalid
from .._backend.sums import blas_sum as _blas_sum
from .._backend.sums import blas_sum_squares as _blas_sum_squares
from .._backend.sums import sum_arrays as _sum_arrays
from .._tensor import Tensor, _make, _wrap_dim
from ._op import Op, apply1, record_outputs
from ._registry import register
from .arithmetic import scalar_name
from .comparison import maximum, minimum
from .indexing import _scatter_into
from .scans import _flip, cumprod
from .shape import cat

max_result = namedtuple("max", ["values", "indices"])


min_result = namedtuple("min", ["values", "indices"])


max_result.__module__ = min_result.__module__ = "torch.return_types"


def reduce_dims(dim, ndim: int) -> tuple[int, ...] | None:
    """Normalise torch's ``dim`` (int or sequence) to sorted positive dims; None stays None.

    A 0-d tensor accepts dim 0 or -1 and has no dims to reduce: that gives ().
    """
    if dim is None:
        return None
    if isinstance(dim, (int, host.integer)):
        d = _wrap_dim(int(dim), ndim)
        return (d,) if ndim else ()
    dims = tuple(sorted(_wrap_dim(int(d), ndim) for d in dim))
    for a, b in pairwise(dims):
        if a == b:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    return dims if ndim else ()


def _all_if_empty(dims, ndim: int) -> tuple[int, ...]:
    """torch's sum/mean/norm/amax read ``dim=None`` or ``dim=()`` as every dim."""
    return dims if dims else tuple(range(ndim))


def _expand_back(grad: Tensor, shape: tuple, dims, keepdim: bool) -> Tensor:
    """Undo a reduction's shape change on ``grad``: re-insert reduced dims, broadcast back."""
    if dims is not None and not keepdim and len(shape):
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        grad = grad.reshape(kept)
    return grad.expand(shape)


def _raw_expand_back(grad, shape: tuple, dims, keepdim: bool):
    """``_expand_back`` on an array (for ``raw_backward`` rules)."""
    if dims is not None and not keepdim and len(shape):
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        grad = grad.reshape(kept)
    return expand_array(grad, shape)


def _raw_div_count(grad, n: int):
    """``grad / n`` as the Tensor rule computes it (an empty input gives 0 / 0 = nan)."""
    if n:
        return grad / n
    with ignore_divide_invalid():
        return grad / n


class SumBackward0(Op):
    """sum(input): d/dinput = grad broadcast to input's shape."""

    __slots__ = ("shape",)
    complex_ok = True

    def forward(self, a, out_dtype):
        self.shape = a.shape
        # add.reduce, not sum: its float warnings are then attributed to ember (and
        # silenced), and it skips NumPy's Python wrapper of sum
        if a.dtype.kind == "V" and out_dtype is None:  # bfloat16: accumulate in float32
            return xp_of(a).add.reduce(a, axis=None, dtype=host.float32).astype(a.dtype)
        return _sum_arrays(a, None, False, out_dtype)

    def jvp(self, tangents, inputs, out):
        return tangents[0].sum()

    def backward(self, grad):
        return grad.expand(self.shape)

    def raw_backward(self, grad):
        return expand_array(grad, self.shape)


class SumBackward1(Op):
    """sum(input, dim, keepdim): d/dinput = grad with the reduced dims re-inserted, broadcast."""

    __slots__ = ("dims", "keepdim", "shape")
    complex_ok = True

    def forward(self, a, dims, keepdim, out_dtype):
        self.shape, self.dims, self.keepdim = a.shape, dims, keepdim
        if a.dtype.kind == "V" and out_dtype is None:  # bfloat16: accumulate in float32
            return xp_of(a).add.reduce(a, axis=dims, keepdims=keepdim,
                                       dtype=host.float32).astype(a.dtype)
        return _sum_arrays(a, dims, keepdim, out_dtype)

    def jvp(self, tangents, inputs, out):
        return tangents[0].sum(self.dims, keepdim=self.keepdim)

    def backward(self, grad):
        return _expand_back(grad, self.shape, self.dims, self.keepdim)

    def raw_backward(self, grad):
        return _raw_expand_back(grad, self.shape, self.dims, self.keepdim)


class MeanBackward0(Op):
    """mean(input): d/dinput = grad / numel, broadcast."""

    __slots__ = ("shape",)
    complex_ok = True

    def forward(self, a):
        self.shape = a.shape
        if not a.size:  # NumPy warns "Mean of empty slice"; torch quietly gives nan
            return xp_of(a).full((), math.nan, dtype=a.dtype)
        if a.dtype.kind == "V":  # bfloat16: accumulate in float32, as torch
            return a.mean(dtype=host.float32).astype(a.dtype)
        if a.dtype.char not in "fd":  # (float16 accumulates in float32 there)
            return a.mean()
        # (``a.mean()`` is add.reduce and a division behind ~3 µs of Python)
        out = _blas_sum(a, None, False)
        return (xp_of(a).add.reduce(a, axis=None) if out is None else out) / a.size

    def jvp(self, tangents, inputs, out):
        return tangents[0].mean()

    def backward(self, grad):
        n = math.prod(self.shape)
        return (grad / n).expand(self.shape)

    def raw_backward(self, grad):
        n = 1
        for s in self.shape:
            n *= s
        grad = _raw_div_count(grad, n)
        return expand_array(grad, self.shape)


class MeanBackward1(Op):
    """mean(input, dim, keepdim): d/dinput = grad / count, broadcast."""

    __slots__ = ("dims", "keepdim", "shape")
    complex_ok = True

    def forward(self, a, dims, keepdim):
        self.shape, self.dims, self.keepdim = a.shape, dims, keepdim
        if not a.size:  # NumPy warns "Mean of empty slice"; torch quietly gives nan
            with ignore_invalid():
                return a.sum(axis=dims, keepdims=keepdim) / 0
        if a.dtype.kind == "V":  # bfloat16: accumulate in float32, as torch
            return a.mean(axis=dims, keepdims=keepdim, dtype=host.float32).astype(a.dtype)
        if a.dtype.char not in "fd":
            return a.mean(axis=dims, keepdims=keepdim)
        out = _blas_sum(a, dims, keepdim)
        if out is None:
            out = xp_of(a).add.reduce(a, axis=dims, keepdims=keepdim)
        return out / (a.size // builtins.max(out.size, 1))

    def jvp(self, tangents, inputs, out):
        return tangents[0].mean(self.dims, keepdim=self.keepdim)

    def backward(self, grad):
        n = math.prod([self.shape[d] for d in self.dims])
        return _expand_back(grad / n, self.shape, self.dims, self.keepdim)

    def raw_backward(self, grad):
        n = 1
        for d in self.dims:
            n *= self.shape[d]
        return _raw_expand_back(_raw_div_count(grad, n), self.shape, self.dims, self.keepdim)


class LinalgVectorNormBackward0(Op):
    """vector_norm(input, ord, dim, keepdim): d/dx = grad * x |x|^(p-2) / norm^(p-1)."""

    __slots__ = ("dims", "keepdim", "ord")
    save_inputs = (0,)
    save_output = True

    def forward(self, a, ord, dims, keepdim):
        self.ord, self.dims, self.keepdim = ord, dims, keepdim
        if ord == 2 and a.dtype.kind == "f":
            # (no abs pass for a real input; the sum of squares by BLAS dots where it can:
            # clip_grad_norm_'s norm of a (256, 256) float32 gradient went 36 -> 9 µs)
            squares = _blas_sum_squares(a) if dims is None and not keepdim else None
            if squares is None:
                squares = _sum_arrays(a * a, dims, keepdim)
            return xp_of(a).sqrt(squares)
        x = abs(a)
        if ord == _INF:
            return x.max(axis=dims, keepdims=keepdim)
        if ord == -_INF:
            return x.min(axis=dims, keepdims=keepdim)
        if ord == 0:
            return (x != 0).sum(axis=dims, keepdims=keepdim).astype(a.dtype)
        if ord == 2:
            return xp_of(a).sqrt((x * x).sum(axis=dims, keepdims=keepdim))
        return (x ** ord).sum(axis=dims, keepdims=keepdim) ** (1.0 / ord)

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
        elif p == _INF or p == -_INF:
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
            raise RuntimeError(f"{fn}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        self.fn = fn
        return getattr(xp_of(a), fn)(a)

    def backward(self, grad):
        (x,) = self.saved()
        hit = (x == self.saved_output()).to(grad.dtype)
        return hit * (grad / hit.sum())


class MinBackward1(MaxBackward1):
    __slots__ = ()


class MaxBackward0(Op):
    """max(input, dim) / min(input, dim): the gradient goes to the selected index."""

    __slots__ = ("dim", "idx", "keepdim", "shape")

    def forward(self, a, dim, keepdim, argfn):
        if a.ndim and a.shape[dim] == 0:
            raise IndexError(f"{argfn[3:]}(): Expected reduction dim {dim} to have "
                             "non-zero size.")
        self.shape, self.dim, self.keepdim = a.shape, dim, keepdim
        xp = xp_of(a)
        idx = getattr(xp, argfn)(a, axis=dim, keepdims=True) if a.ndim else xp.zeros(
            (), host.int64)
        self.idx = idx
        vals = xp.take_along_axis(a, idx, axis=dim) if a.ndim else a.copy()
        return vals if keepdim or not a.ndim else vals.squeeze(dim)

    def backward(self, grad):
        g = grad if self.keepdim or not len(self.shape) else grad.unsqueeze(self.dim)
        return _scatter_into(g, self.shape, self.dim, self.idx)


class MinBackward0(MaxBackward0):
    __slots__ = ()


class AmaxBackward0(Op):
    """amax(input, dim, keepdim) / amin: each slice's gradient is shared evenly by its maxima."""

    __slots__ = ("dims", "keepdim")
    save_inputs = (0,)
    save_output = True

    def forward(self, a, dims, keepdim, fn):
        for d in dims:
            if a.shape[d] == 0:
                raise IndexError(f"{fn}(): Expected reduction dim {d} to have non-zero "
                                 "size.")
        self.dims, self.keepdim = dims, keepdim
        return getattr(xp_of(a), fn)(a, axis=dims, keepdims=keepdim)

    def backward(self, grad):
        (x,) = self.saved()
        shape, dims, keepdim = x.shape, self.dims, self.keepdim
        hit = (x == _expand_back(self.saved_output(), shape, dims, keepdim)).to(grad.dtype)
        return _expand_back(grad, shape, dims, keepdim) * hit / hit.sum(dims, keepdim=True)


class AminBackward0(AmaxBackward0):
    __slots__ = ()


@register
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.sum``: integer and bool inputs sum to int64, as in torch."""
    out_dtype = _dt.to_dtype(dtype).np if dtype is not None else (
        host.int64 if input._data.dtype.kind in "biu" else None)
    if dim is None and not keepdim:
        return apply1(SumBackward0, input, out_dtype)
    nd = input._data.ndim
    return apply1(SumBackward1, input, _all_if_empty(reduce_dims(dim, nd), nd), keepdim,
                  out_dtype)


@register
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.mean``: floating inputs only (torch refuses to guess an integer mean's dtype)."""
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind not in FLOAT_KINDS and input._data.dtype.kind != "c":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {scalar_name(input.dtype)}")
    if dim is None and not keepdim:
        return apply1(MeanBackward0, input)
    nd = input._data.ndim
    return apply1(MeanBackward1, input, _all_if_empty(reduce_dims(dim, nd), nd), keepdim)


def linalg_vector_norm(input: Tensor, ord=2, dim=None, keepdim: bool = False, *,
                       dtype=None) -> Tensor:
    """``torch.linalg.vector_norm``."""
    if input._data.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {scalar_name(input.dtype)}")
    if dtype is not None:
        input = input.to(dtype)
    nd = input._data.ndim
    dims = None if dim is None else _all_if_empty(reduce_dims(dim, nd), nd)
    ord = float(ord)
    if ord in (_INF, -_INF):
        shape = input._data.shape
        if not input._data.size and (dims is None or 0 in [shape[d] for d in dims]):
            sign = "-" if ord < 0 else ""
            if dims is None:
                where = "an empty tensor because"
            else:  # (sic: torch's message has no space after the dim)
                where = (f"the dimension {next(d for d in dims if shape[d] == 0)}because this "
                         "dimension is empty and")
            raise RuntimeError(f"linalg.vector_norm cannot compute the {sign}inf norm on {where} "
                               "the operation does not have an identity")
    return apply1(LinalgVectorNormBackward0, input, ord, dims, keepdim)


_INF = float("inf")


@register
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """``torch.norm``: the 2-norm (Frobenius) by default, or the vector p-norm."""
    if p == "fro" or p is None:
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            # torch sends a 'fro' norm over more than two dims to matrix_norm, which refuses
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                               + " ".join(str(d) for d in dim))
        p = 2
    if isinstance(p, str):
        raise NotImplementedError(f"torch.norm with p='{p}' is not supported by ember yet")
    return linalg_vector_norm(input, p, dim, keepdim, dtype=dtype)


def _extreme(input: Tensor, dim, keepdim, other, fn: str, argfn: str, full_cls, dim_cls, result,
             name):
    """max/min: ``fn``/``argfn`` name the array module's functions (``"max"``, ``"argmax"``)."""
    if isinstance(dim, Tensor) and other is None:
        other, dim = dim, None
    if other is not None:
        return (maximum if name == "max" else minimum)(input, other)
    if dim is None:
        return apply1(full_cls, input, fn)
    d = _wrap_dim(dim, input._data.ndim)
    values = apply1(dim_cls, input, d, keepdim, argfn)
    node = values._grad_fn
    a = input._data
    xp = xp_of(a)
    idx = node.idx if node is not None else (
        getattr(xp, argfn)(a, axis=d, keepdims=True) if a.ndim else xp.zeros((), host.int64))
    if not keepdim and a.ndim:
        idx = idx.squeeze(d)
    return result(values, _make(xp.asarray(idx, dtype=host.int64)))


@register
def max(input: Tensor, dim=None, keepdim: bool = False, *, other=None):
    """``torch.max``: the maximum; with ``dim``, a named tuple (values, indices)."""
    return _extreme(input, dim, keepdim, other, "max", "argmax", MaxBackward1, MaxBackward0,
                    max_result, "max")


@register
def min(input: Tensor, dim=None, keepdim: bool = False, *, other=None):
    """``torch.min``: the minimum; with ``dim``, a named tuple (values, indices)."""
    return _extreme(input, dim, keepdim, other, "min", "argmin", MinBackward1, MinBackward0,
                    min_result, "min")


def _amax_amin(cls, input: Tensor, dim, keepdim: bool, fn: str) -> Tensor:
    nd = input._data.ndim
    dims = reduce_dims(dim, nd)
    if not dims and not input._data.size:
        raise RuntimeError(f"{fn}(): Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
    return apply1(cls, input, _all_if_empty(dims, nd), keepdim, fn)


@register
def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """``torch.amax``: the maximum over ``dim`` (all dims if empty); ties share the gradient."""
    return _amax_amin(AmaxBackward0, input, dim, keepdim, "amax")


@register
def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """``torch.amin``: the minimum over ``dim`` (all dims if empty); ties share the gradient."""
    return _amax_amin(AminBackward0, input, dim, keepdim, "amin")


def _arg_extreme(input: Tensor, dim, keepdim: bool, fn: str) -> Tensor:
    """argmax/argmin: torch's IndexError for an empty input or an empty reduced dim."""
    a = input._data
    xp = xp_of(a)
    if dim is None:
        if not a.size:
            raise IndexError(f"{fn}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        out = getattr(xp, fn)(a)
        if keepdim:  # torch: keepdim without dim keeps every dim (as size 1)
            out = xp.reshape(out, (1,) * a.ndim)
        return _make(xp.asarray(out, dtype=host.int64))
    d = _wrap_dim(dim, a.ndim)
    if a.ndim and not a.shape[d]:
        raise IndexError(f"{fn}(): Expected reduction dim {d} to have non-zero size.")
    if not a.ndim:
        return _make(xp.zeros((), dtype=host.int64))
    return _make(xp.asarray(getattr(xp, fn)(a, axis=d, keepdims=keepdim), dtype=host.int64))


@register
def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.argmax``: index of the first maximum (of the flattened input if dim is None)."""
    return _arg_extreme(input, dim, keepdim, "argmax")


@register
def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.argmin``: index of the first minimum (of the flattened input if dim is None)."""
    return _arg_extreme(input, dim, keepdim, "argmin")


@register
def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.all``: a bool result (uint8 for a uint8 input, as in torch)."""
    dims = reduce_dims(dim, input._data.ndim)
    a = input._data
    xp = xp_of(a)
    out = xp.asarray(xp.all(a, axis=dims, keepdims=keepdim))
    return _make(out.astype(host.uint8) if a.dtype == host.uint8 else out)


@register
def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.any``: a bool result (uint8 for a uint8 input, as in torch)."""
    dims = reduce_dims(dim, input._data.ndim)
    a = input._data
    xp = xp_of(a)
    out = xp.asarray(xp.any(a, axis=dims, keepdims=keepdim))
    return _make(out.astype(host.uint8) if a.dtype == host.uint8 else out)


# ------------------------------------------- prod, var/std, logsumexp, nansum (torch's statistics)


def _int_to_int64(a, dtype):
    """The result dtype of sum-like reductions: ``dtype`` if given, int64 for integers."""
    if dtype is not None:
        return _dt.to_dtype(dtype).np
    return host.int64 if a.dtype.kind in "biu" else None


class ProdBackward0(Op):
    """prod(input): d/dinput_i = product of the other elements (exact where inputs are 0)."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a, out_dtype):
        return a.prod(dtype=out_dtype)

    def backward(self, grad):
        (x,) = self.saved()
        if not x.ndim:
            return grad
        if not (x._data == 0).any():
            return grad * (self.saved_output() / x)
        return (grad * _prod_of_others(x.reshape(-1), 0)).reshape(x.shape)


class ProdBackward1(Op):
    """prod(input, dim, keepdim): the same rule along ``dim``."""

    __slots__ = ("dim", "keepdim")
    save_inputs = (0,)
    save_output = True

    def forward(self, a, dim, keepdim, out_dtype):
        self.dim, self.keepdim = dim, keepdim
        if not a.ndim:
            return a.astype(out_dtype) if out_dtype is not None else a.copy()
        return a.prod(axis=dim, keepdims=keepdim, dtype=out_dtype)

    def backward(self, grad):
        (x,) = self.saved()
        if not x.ndim:
            return grad
        shape, dims = x.shape, (self.dim,)
        g = _expand_back(grad, shape, dims, self.keepdim)
        if not (x._data == 0).any():
            return g * (_expand_back(self.saved_output(), shape, dims, self.keepdim) / x)
        return g * _prod_of_others(x, self.dim)


def _prod_of_others(x: Tensor, dim: int) -> Tensor:
    """``prod(x without x_i)`` along ``dim`` for each i, as exclusive cumulative products from
    both ends (torch's ``prod_safe_zeros_backward``): exact with zeros, and differentiable."""
    n = x.shape[dim]
    d = x._data
    ones = _make(xp_of(d).ones(d.shape[:dim] + (1,) + d.shape[dim + 1:], dtype=d.dtype))
    head = (slice(None),) * dim
    left = cumprod(cat([ones, x[head + (slice(0, n - 1),)]], dim), dim)
    right = _flip(cumprod(cat([ones, _flip(x[head + (slice(1, n),)], dim)], dim), dim), dim)
    return left * right


@register
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.prod``: integer and bool inputs multiply to int64, as in torch."""
    out_dtype = _int_to_int64(input._data, dtype)
    if dim is None:
        return apply1(ProdBackward0, input, out_dtype)
    return apply1(ProdBackward1, input, _wrap_dim(dim, input._data.ndim), keepdim, out_dtype)


def _var_arrays(a, dims, correction, keepdim: bool, name: str):
    """(var, mean) of the array ``a`` over ``dims`` with torch's degrees of freedom and warning."""
    mean = a.sum(axis=dims, keepdims=True)
    n = a.size // builtins.max(mean.size, 1)
    with ignore_divide_invalid():
        mean = mean / n if n else mean * math.nan
        dev = a - mean
        dof = n - correction
        if dof <= 0:
            warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the reduction factor (input numel divided by output numel).",
                          UserWarning, stacklevel=4)
        var = (dev * dev).sum(axis=dims, keepdims=keepdim) / builtins.max(dof, 0)
    if not keepdim:
        mean = mean.reshape(var.shape)
    return var.astype(a.dtype, copy=False), mean.astype(a.dtype, copy=False), dof


def _var_grad(grad: Tensor, x: Tensor, dims, keepdim: bool, dof) -> Tensor:
    """torch's ``var_backward``: grad * 2 (x - mean) / dof."""
    g = _expand_back(grad, x.shape, dims, keepdim)
    if dof > 0:
        return g * (2.0 / dof) * (x - x.mean(dims, keepdim=True))
    with ignore_invalid():  # torch's 2 / 0 = inf, times 0 deviations: NaN
        return g * float("inf") * (x - x.mean(dims, keepdim=True))


def _std_grad(grad: Tensor, std: Tensor, x: Tensor, dims, keepdim: bool, dof) -> Tensor:
    """torch's ``std_backward``: the var gradient through grad / (2 std), 0 where std is 0."""
    g = (grad / (std * 2)).masked_fill(_make(std._data == 0), 0.0)
    return _var_grad(g, x, dims, keepdim, dof)


def _mean_grad(grad: Tensor, x: Tensor, dims, keepdim: bool) -> Tensor:
    n = x.numel() // builtins.max(grad.numel(), 1)
    return _expand_back(grad, x.shape, dims, keepdim) / n


class VarBackward0(Op):
    """var(input, dim, correction, keepdim): d/dinput = grad * 2 (input - mean) / dof."""

    __slots__ = ("dims", "dof", "keepdim")
    save_inputs = (0,)

    def forward(self, a, dims, correction, keepdim):
        self.dims, self.keepdim = dims, keepdim
        var, _, self.dof = _var_arrays(a, dims, correction, keepdim, "var")
        return var

    def backward(self, grad):
        (x,) = self.saved()
        return _var_grad(grad, x, self.dims, self.keepdim, self.dof)


class StdBackward0(Op):
    """std(input, dim, correction, keepdim): d/dinput = var's gradient times grad / (2 std)."""

    __slots__ = ("dims", "dof", "keepdim")
    save_inputs = (0,)
    save_output = True

    def forward(self, a, dims, correction, keepdim):
        self.dims, self.keepdim = dims, keepdim
        var, _, self.dof = _var_arrays(a, dims, correction, keepdim, "std")
        return xp_of(var).sqrt(var)

    def backward(self, grad):
        (x,) = self.saved()
        return _std_grad(grad, self.saved_output(), x, self.dims, self.keepdim, self.dof)


class VarMeanBackward0(Op):
    """var_mean: outputs (var, mean) of one node; their gradients add up."""

    __slots__ = ("_num_outputs", "dims", "dof", "keepdim")
    save_inputs = (0,)

    def forward(self, a, dims, correction, keepdim):
        self.dims, self.keepdim = dims, keepdim
        var, mean, self.dof = _var_arrays(a, dims, correction, keepdim, "var_mean")
        return var, mean

    def backward(self, grad_var, grad_mean):
        (x,) = self.saved()
        out = None
        if grad_var is not None:
            out = _var_grad(grad_var, x, self.dims, self.keepdim, self.dof)
        if grad_mean is not None:
            gm = _mean_grad(grad_mean, x, self.dims, self.keepdim)
            out = gm if out is None else out + gm
        return out


class StdMeanBackward0(Op):
    """std_mean: outputs (std, mean) of one node; their gradients add up."""

    __slots__ = ("_num_outputs", "dims", "dof", "keepdim")
    save_inputs = (0,)
    save_output = True

    def forward(self, a, dims, correction, keepdim):
        self.dims, self.keepdim = dims, keepdim
        var, mean, self.dof = _var_arrays(a, dims, correction, keepdim, "std_mean")
        return xp_of(var).sqrt(var), mean

    def backward(self, grad_std, grad_mean):
        (x,) = self.saved()
        out = None
        if grad_std is not None:
            out = _std_grad(grad_std, self.saved_output(), x, self.dims, self.keepdim, self.dof)
        if grad_mean is not None:
            gm = _mean_grad(grad_mean, x, self.dims, self.keepdim)
            out = gm if out is None else out + gm
        return out


def _var_args(input: Tensor, dim, unbiased, keepdim, correction):
    """Torch's overloads: ``(dim, *, correction, keepdim)``, ``(dim, unbiased, keepdim)`` and
    ``(unbiased)`` (a bool where dim goes)."""
    if input._data.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError("Cannot pass both correction and unbiased arguments")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    nd = input._data.ndim
    return _all_if_empty(reduce_dims(dim, nd), nd), correction, keepdim


@register
def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """``torch.var``: Bessel's correction (``correction=1``) by default."""
    return apply1(VarBackward0, input, *_var_args(input, dim, unbiased, keepdim, correction))


@register
def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """``torch.std``: the square root of ``var``; its gradient is 0 where std is 0."""
    return apply1(StdBackward0, input, *_var_args(input, dim, unbiased, keepdim, correction))


@register(method=False)
def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple:
    """``torch.var_mean``: a plain tuple (var, mean), as torch returns."""
    node = object.__new__(VarMeanBackward0)
    outs = node.forward(input._data, *_var_args(input, dim, unbiased, keepdim, correction))
    return record_outputs(node, (input,), outs)


@register(method=False)
def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple:
    """``torch.std_mean``: a plain tuple (std, mean), as torch returns."""
    node = object.__new__(StdMeanBackward0)
    outs = node.forward(input._data, *_var_args(input, dim, unbiased, keepdim, correction))
    return record_outputs(node, (input,), outs)


class LogsumexpBackward0(Op):
    """logsumexp(input, dim, keepdim): d/dinput = grad * exp(input - out) (the softmax)."""

    __slots__ = ("dims", "keepdim")
    save_inputs = (0,)
    save_output = True

    def forward(self, a, dims, keepdim):
        self.dims, self.keepdim = dims, keepdim
        # shift by the maximum so exp cannot overflow; an infinite maximum shifts by 0
        xp = xp_of(a)
        peak = a.max(axis=dims, keepdims=True, initial=-math.inf)
        peak = xp.where(xp.isfinite(peak), peak, 0).astype(a.dtype)
        with ignore_divide_invalid():
            out = xp.log(xp.exp(a - peak).sum(axis=dims, keepdims=True)) + peak
        return out if keepdim else out.reshape(out.sum(axis=dims).shape)

    def backward(self, grad):
        (x,) = self.saved()
        shape, dims, keepdim = x.shape, self.dims, self.keepdim
        out = _expand_back(self.saved_output(), shape, dims, keepdim)
        with ignore_invalid():  # inf - inf where the input holds +inf: NaN
            return _expand_back(grad, shape, dims, keepdim) * (x - out).exp()


@register
def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``torch.logsumexp``: stable for large inputs; integer inputs give the default float."""
    if input._data.dtype.kind not in FLOAT_KINDS:
        input = input.to(_dt.get_default_dtype())
    nd = input._data.ndim
    return apply1(LogsumexpBackward0, input, _all_if_empty(reduce_dims(dim, nd), nd), keepdim)


@register
def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """``torch.count_nonzero``: int64 counts over ``dim`` (all dims if None)."""
    dims = reduce_dims(dim, input._data.ndim)
    a = input._data
    xp = xp_of(a)
    return _make(xp.asarray(xp.count_nonzero(a, axis=dims), dtype=host.int64))


class NansumBackward0(Op):
    """nansum(input, dim, keepdim): d/dinput = grad where input is not NaN, else 0."""

    __slots__ = ("dims", "keepdim")
    save_inputs = (0,)

    def forward(self, a, dims, keepdim, out_dtype):
        self.dims, self.keepdim = dims, keepdim
        return xp_of(a).nansum(a, axis=dims, keepdims=keepdim, dtype=out_dtype)

    def backward(self, grad):
        (x,) = self.saved()
        g = _expand_back(grad, x.shape, self.dims, self.keepdim)
        with ignore_invalid():  # as torch: an infinite gradient times 0 is NaN
            d = x._data
            return g * _make(~xp_of(d).isnan(d))


@register
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.nansum``: ``sum`` treating NaN as 0."""
    nd = input._data.ndim
    dims = reduce_dims(dim, nd)
    dims = None if dims is None and not keepdim else _all_if_empty(dims, nd)
    return apply1(NansumBackward0, input, dims, keepdim, _int_to_int64(input._data, dtype))


@register
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.nanmean``: as torch, ``nansum / count of non-NaN`` (recorded as DivBackward0)."""
    if input._data.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {scalar_name(input.dtype)}")
    a = input._data
    counted = _make(~xp_of(a).isnan(a)).sum(dim, keepdim=keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / counted


# --------------------------------------------------------------------------- counting


@register
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """``torch.bincount``: occurrences of each value of a 1-D non-negative integer tensor
    (summed ``weights`` instead, float32 weights staying float32 and others giving float64, as
    torch). Not differentiable."""
    a = input._data
    xp = xp_of(a)
    if a.dtype.kind not in "iu":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for "
                                  f"'{scalar_name(input.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if a.ndim != 1 or (a.size and a.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None
    if weights is not None:
        w = weights._data
        if w.ndim != 1 or w.shape[0] != a.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        w = w.astype(host.float32 if w.dtype == host.float32 else host.float64)
    out = xp.bincount(a, weights=w, minlength=minlength)  # (NumPy sums weights in float64)
    return _make(out.astype(host.int64 if w is None else w.dtype, copy=False))


def _c_float(v: float) -> str:
    """A float as torch's C++ messages print it (``1``, ``2.5``, ``inf``)."""
    return f"{v:g}"


@register
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """``torch.histc``: counts in ``bins`` equal-width bins over [min, max] (the data's range
    if min == max; widened by 1 either side if still equal); elements outside are ignored, an
    element equal to ``max`` counts in the last bin. Not differentiable."""
    a = input._data
    xp = xp_of(a)
    if a.dtype.kind not in FLOAT_KINDS:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{scalar_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_c_float(lo)}, {_c_float(hi)}] is not "
                           "finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    # NOTE: torch's linear binning, in the input's dtype: pos = (x - lo) * bins / (hi - lo),
    # with the edges as its linspace makes them
    left, right = a.dtype.type(lo), a.dtype.type(hi)
    flat = a.reshape(-1)
    flat = flat[(flat >= left) & (flat <= right)]
    pos = ((flat - left) * bins / (right - left)).astype(host.int64)
    pos = xp.minimum(pos, bins - 1)
    return _make(xp.bincount(pos, minlength=bins).astype(a.dtype))
