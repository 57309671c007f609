"""Statistical reductions: prod, std/var (correction), var_mean/std_mean, logsumexp,
count_nonzero, nansum/nanmean."""

from __future__ import annotations

import math
import warnings

from .._backend import dtypes as _dt
from .._backend import host, xp_of
from .._tensor import Tensor, _make, _wrap_dim
from ._op import Op, apply1, record_outputs
from .elementwise import scalar_name
from .reduction import _all_if_empty, _expand_back, reduce_dims

__all__: list[str] = [
    "count_nonzero",
    "logsumexp",
    "nanmean",
    "nansum",
    "prod",
    "std",
    "std_mean",
    "var",
    "var_mean",
]  # exported as ember.<name>


def _int_to_int64(a, dtype):
    """The result dtype of sum-like reductions: ``dtype`` if given, int64 for integers."""
    if dtype is not None:
        return _dt.to_dtype(dtype).np
    return host.int64 if a.dtype.kind in "biu" else None


# --------------------------------------------------------------------------- prod


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
    from .joining import cat
    from .scan import _flip, cumprod
    n = x.shape[dim]
    d = x._data
    ones = _make(xp_of(d).ones(d.shape[:dim] + (1,) + d.shape[dim + 1:], dtype=d.dtype))
    head = (slice(None),) * dim
    left = cumprod(cat([ones, x[head + (slice(0, n - 1),)]], dim), dim)
    right = _flip(cumprod(cat([ones, _flip(x[head + (slice(1, n),)], dim)], dim), dim), dim)
    return left * right


def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.prod``: integer and bool inputs multiply to int64, as in torch."""
    out_dtype = _int_to_int64(input._data, dtype)
    if dim is None:
        return apply1(ProdBackward0, input, out_dtype)
    return apply1(ProdBackward1, input, _wrap_dim(dim, input._data.ndim), keepdim, out_dtype)


# --------------------------------------------------------------------------- var / std


def _var_arrays(a, dims, correction, keepdim: bool, name: str):
    """(var, mean) of the array ``a`` over ``dims`` with torch's degrees of freedom and warning."""
    mean = a.sum(axis=dims, keepdims=True)
    n = a.size // max(mean.size, 1)
    with host.errstate(invalid="ignore", divide="ignore"):
        mean = mean / n if n else mean * math.nan
        dev = a - mean
        dof = n - correction
        if dof <= 0:
            warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the reduction factor (input numel divided by output numel).",
                          UserWarning, stacklevel=4)
        var = (dev * dev).sum(axis=dims, keepdims=keepdim) / max(dof, 0)
    if not keepdim:
        mean = mean.reshape(var.shape)
    return var.astype(a.dtype, copy=False), mean.astype(a.dtype, copy=False), dof


def _var_grad(grad: Tensor, x: Tensor, dims, keepdim: bool, dof) -> Tensor:
    """torch's ``var_backward``: grad * 2 (x - mean) / dof."""
    g = _expand_back(grad, x.shape, dims, keepdim)
    if dof > 0:
        return g * (2.0 / dof) * (x - x.mean(dims, keepdim=True))
    with host.errstate(invalid="ignore"):  # torch's 2 / 0 = inf, times 0 deviations: NaN
        return g * float("inf") * (x - x.mean(dims, keepdim=True))


def _std_grad(grad: Tensor, std: Tensor, x: Tensor, dims, keepdim: bool, dof) -> Tensor:
    """torch's ``std_backward``: the var gradient through grad / (2 std), 0 where std is 0."""
    g = (grad / (std * 2)).masked_fill(_make(std._data == 0), 0.0)
    return _var_grad(g, x, dims, keepdim, dof)


def _mean_grad(grad: Tensor, x: Tensor, dims, keepdim: bool) -> Tensor:
    n = x.numel() // max(grad.numel(), 1)
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
    if input._data.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError("Cannot pass both correction and unbiased arguments")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    nd = input._data.ndim
    return _all_if_empty(reduce_dims(dim, nd), nd), correction, keepdim


def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """``torch.var``: Bessel's correction (``correction=1``) by default."""
    return apply1(VarBackward0, input, *_var_args(input, dim, unbiased, keepdim, correction))


def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """``torch.std``: the square root of ``var``; its gradient is 0 where std is 0."""
    return apply1(StdBackward0, input, *_var_args(input, dim, unbiased, keepdim, correction))


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple:
    """``torch.var_mean``: a plain tuple (var, mean), as torch returns."""
    node = object.__new__(VarMeanBackward0)
    outs = node.forward(input._data, *_var_args(input, dim, unbiased, keepdim, correction))
    return record_outputs(node, (input,), outs)


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple:
    """``torch.std_mean``: a plain tuple (std, mean), as torch returns."""
    node = object.__new__(StdMeanBackward0)
    outs = node.forward(input._data, *_var_args(input, dim, unbiased, keepdim, correction))
    return record_outputs(node, (input,), outs)


# --------------------------------------------------------------------------- logsumexp


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
        with host.errstate(divide="ignore", invalid="ignore"):
            out = xp.log(xp.exp(a - peak).sum(axis=dims, keepdims=True)) + peak
        return out if keepdim else out.reshape(out.sum(axis=dims).shape)

    def backward(self, grad):
        (x,) = self.saved()
        shape, dims, keepdim = x.shape, self.dims, self.keepdim
        out = _expand_back(self.saved_output(), shape, dims, keepdim)
        with host.errstate(invalid="ignore"):  # inf - inf where the input holds +inf: NaN
            return _expand_back(grad, shape, dims, keepdim) * (x - out).exp()


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``torch.logsumexp``: stable for large inputs; integer inputs give the default float."""
    if input._data.dtype.kind != "f":
        input = input.to(_dt.get_default_dtype())
    nd = input._data.ndim
    return apply1(LogsumexpBackward0, input, _all_if_empty(reduce_dims(dim, nd), nd), keepdim)


# --------------------------------------------------------------------------- nan-aware, counts


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
        with host.errstate(invalid="ignore"):  # as torch: an infinite gradient times 0 is NaN
            d = x._data
            return g * _make(~xp_of(d).isnan(d))


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.nansum``: ``sum`` treating NaN as 0."""
    nd = input._data.ndim
    dims = reduce_dims(dim, nd)
    dims = None if dims is None and not keepdim else _all_if_empty(dims, nd)
    return apply1(NansumBackward0, input, dims, keepdim, _int_to_int64(input._data, dtype))


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.nanmean``: as torch, ``nansum / count of non-NaN`` (recorded as DivBackward0)."""
    if input._data.dtype.kind != "f":
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {scalar_name(input.dtype)}")
    a = input._data
    counted = _make(~xp_of(a).isnan(a)).sum(dim, keepdim=keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / counted


METHODS: dict = {"prod": prod, "std": std, "var": var, "logsumexp": logsumexp,
                 "count_nonzero": count_nonzero, "nansum": nansum, "nanmean": nanmean}
INPLACE: tuple = ()  # method names that also get an in-place form name_
