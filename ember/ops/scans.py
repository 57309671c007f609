"""Scans along a dim: cumsum, cumprod, cummax/cummin."""

from __future__ import annotations

import math
from collections import namedtuple

from .._backend import FLOAT_KINDS, host, xp_of
from .._backend import dtypes as _dt
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.grad_mode import state as _grad_state
from ._op import Op, apply1, op_result
from ._registry import register
from .indexing import ValueSelectingReductionBackward0

cummax_result = namedtuple("cummax", ["values", "indices"])
cummin_result = namedtuple("cummin", ["values", "indices"])
cummax_result.__module__ = cummin_result.__module__ = "torch.return_types"


# --------------------------------------------------------------------------- helpers for rules


class FlipBackward0(Op):
    """flip(input, dim) for one dim: what reversed scans in the rules are built from."""

    __slots__ = ("dim",)

    def forward(self, a, dim):
        self.dim = dim
        return xp_of(a).flip(a, dim).copy() if a.ndim else a.copy()

    def backward(self, grad):
        return apply1(FlipBackward0, grad, self.dim)


def _flip(x: Tensor, dim: int) -> Tensor:
    return apply1(FlipBackward0, x, dim)


# --------------------------------------------------------------------------- sums


_BLOCK = 16  # the length of the blocks that ``_prefix_sums`` sums by matmul
_BLAS_SCAN = (host.dtype(host.float32), host.dtype(host.float64))


def _prefix_sums(x, reverse: bool):
    """The inclusive sums along axis 1 of the float32/float64 array ``x`` of (A, n, C), from
    the start (``reverse``: from the end): each block of ``_BLOCK`` summed by a matmul with a
    triangle of ones, then the sums of the blocks before it (in float64, by the same means)
    added to it."""
    xp = xp_of(x)
    a, n, c = x.shape
    size = min(_BLOCK, n)
    b = -(-n // size)
    if b * size != n:  # zeros after the end change no sum
        padded = xp.zeros((a, b * size, c), dtype=x.dtype)
        padded[:, :n] = x
        x = padded
    tri = xp.triu(xp.ones((size, size), dtype=x.dtype))  # tri[i, j] = 1 where i <= j
    if reverse:
        tri = tri.T
    if c == 1:
        w = x.reshape(a * b, size) @ tri
    else:
        w = xp.matmul(tri.T, x.reshape(a * b, size, c))
    if b > 1:
        blocks = w.reshape(a, b, size, c)
        carry = xp.zeros((a, b, c), dtype=w.dtype)  # the sums of the blocks before each
        if reverse:
            carry[:, :-1] = _prefix_sums(blocks[:, 1:, 0].astype(host.float64), True)
        else:
            carry[:, 1:] = _prefix_sums(blocks[:, :-1, -1].astype(host.float64), False)
        # (NOTE: added to all of ``w`` at once: 241 -> 83 µs against the blocks after the
        # first only, a strided 3-d loop, for (1024, 256) float32)
        w += carry.reshape(a * b, 1) if c == 1 else carry.reshape(a * b, 1, c)
    return w.reshape(a, b * size, c)[:, :n]


def _scan_sum(a, dim: int, out_dtype, reverse: bool = False):
    """cumsum of the array ``a`` along ``dim`` in ``out_dtype`` (None: ``a``'s), or, with
    ``reverse``, the sums from each position to the end.

    NOTE: NumPy's ``cumsum`` runs one dependent add an element (~3.3 ns: 870 µs for float32
    (16, 64, 256) along -1, 2,560 along 0; torch 236 and 789). float32 and float64 scans of
    16384 elements or more are ``_prefix_sums``' blocked matmuls instead (280 and 221 µs;
    below that size the matmuls' overhead loses: (4096,) 36 against 14 µs), when the scanned
    dim is the last, or has 16 elements or more after it (fewer make tiny matmuls). Torch
    sums float32 in float64; here blocks of 16 are summed in float32 and the rest in float64,
    so results differ from torch's by ~2 ulps of the sum of |x| at most (NumPy's float32
    ``cumsum`` by up to n).
    """
    if out_dtype is not None and a.dtype != out_dtype:
        a = a.astype(out_dtype)
    shape = a.shape
    if not len(shape):
        return a.copy()
    after = math.prod(shape[dim + 1:])
    if a.dtype in _BLAS_SCAN and a.size >= 16384 and (after == 1 or after >= 16):
        x = a.reshape(math.prod(shape[:dim]), shape[dim], after)
        return _prefix_sums(x, reverse).reshape(shape)
    xp = xp_of(a)
    if not reverse:
        return a.cumsum(axis=dim)
    return xp.flip(xp.flip(a, dim).cumsum(axis=dim), dim).copy()


def reverse_cumsum(x: Tensor, dim: int) -> Tensor:
    """``out[i] = sum(x[i:])`` along ``dim``: torch's ``reversed_cumsum``."""
    return apply1(_ReverseCumsum, x, dim)


class _ReverseCumsum(Op):
    """The sums from each position to the end along ``dim`` (torch composes it of flip,
    cumsum, flip; one op here: ``_scan_sum`` runs it without the two flipped copies)."""

    __slots__ = ("dim",)

    def forward(self, a, dim):
        self.dim = dim
        return _scan_sum(a, dim, None, True)

    def backward(self, grad):
        return apply1(CumsumBackward0, grad, self.dim, None)


# --------------------------------------------------------------------------- the ops


def _scan_dtype(a, dtype):
    """torch's scans promote integer and bool inputs to int64 unless ``dtype`` is given."""
    if dtype is not None:
        return _dt.to_dtype(dtype).np
    return host.int64 if a.dtype.kind in "biu" else a.dtype


class CumsumBackward0(Op):
    """cumsum(input, dim): d/dinput = grad summed from each position to the end."""

    __slots__ = ("dim",)

    def forward(self, a, dim, out_dtype):
        self.dim = dim
        return _scan_sum(a, dim, out_dtype)

    def backward(self, grad):
        if not grad.ndim:
            return grad
        return reverse_cumsum(grad, self.dim)

    def raw_backward(self, grad):
        return _scan_sum(grad, self.dim, None, True) if grad.ndim else grad


class CumprodBackward0(Op):
    """cumprod(input, dim): d/dinput_i = sum over j >= i of grad_j * prod(input[:j+1] but i).

    Without zeros that is ``reverse_cumsum(grad * out) / input``. With zeros, torch's two
    formulas: O(n) from the first zero of each slice for a first derivative, and when the
    gradient itself is differentiated (grad mode on), the O(n^2) products with each element
    left out in turn, which stay exact as functions of the input.
    """

    __slots__ = ("dim",)
    save_inputs = (0,)
    save_output = True

    def forward(self, a, dim, out_dtype):
        self.dim = dim
        if not a.ndim:
            return a.astype(out_dtype).copy()
        return a.cumprod(axis=dim, dtype=out_dtype)

    def backward(self, grad):
        (x,) = self.saved()
        d = self.dim
        xd = x._data
        if xd.ndim == 0 or xd.shape[d] <= 1:
            return grad
        zero = xd == 0
        if not zero.any():
            return reverse_cumsum(grad * self.saved_output(), d) / x
        if not _grad_state.grad_enabled:
            return _cumprod_grad_first_zero(grad, x, self.saved_output(), d, zero)
        return _cumprod_grad_left_out(grad, x, d)


def _cumprod_grad_first_zero(grad, x, out, d, zero) -> Tensor:
    seen = zero.cumsum(axis=d)
    before = _make(seen == 0)                    # positions before each slice's first zero
    first = zero & (seen == 1)                   # each slice's first zero
    x_safe = x.masked_fill(~before, 1.0)
    g_before = reverse_cumsum(grad * out, d) / x_safe
    # at the first zero z: sum over j >= z of grad_j * prod(x[:j+1] without x_z)
    skipped = apply1(CumprodBackward0, x.masked_fill(_make(first), 1.0), d, None)
    g_first = reverse_cumsum(grad * skipped, d)
    return g_before.masked_fill(~before, 0.0) + g_first.masked_fill(_make(~first), 0.0)


def _cumprod_grad_left_out(grad, x, d) -> Tensor:
    xm, gm = x.movedim(d, -1), grad.movedim(d, -1)
    n = xm.shape[-1]
    xp = xp_of(x._data)
    rows = xm.unsqueeze(-2).expand(*xm.shape[:-1], n, n)      # rows[..., i, j] = x_j
    rows = rows.masked_fill(_make(xp.eye(n, dtype=bool)), 1.0)  # row i leaves x_i out
    left_out = apply1(CumprodBackward0, rows, rows.ndim - 1, None)
    below = _make(~xp.triu(xp.ones((n, n), dtype=bool)))       # j < i: out_j has no x_i
    g = (gm.unsqueeze(-2) * left_out).masked_fill(below, 0.0).sum(-1)
    return g.movedim(-1, d)


@register(inplace=True)
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``torch.cumsum``: integer and bool inputs sum to int64, as in torch."""
    d = _wrap_dim(dim, input._data.ndim)
    return apply1(CumsumBackward0, input, d, _scan_dtype(input._data, dtype))


@register(inplace=True)
def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``torch.cumprod``: exact gradients where the input has zeros, as torch's."""
    d = _wrap_dim(dim, input._data.ndim)
    return apply1(CumprodBackward0, input, d, _scan_dtype(input._data, dtype))


class CummaxBackward0(Op):
    """cummax(input, dim) / cummin: each output's gradient goes to the index it came from."""

    __slots__ = ("dim", "idx", "shape")

    def forward(self, a, dim, ufunc):
        self.shape, self.dim = a.shape, dim
        xp = xp_of(a)
        if not a.ndim:
            self.idx = xp.zeros((), host.int64)
            return a.copy()
        # ufunc: "maximum" or "minimum"; they propagate NaN, as torch
        values = getattr(xp, ufunc).accumulate(a, axis=dim)
        pos = xp.arange(a.shape[dim]).reshape((-1,) + (1,) * (a.ndim - 1 - dim))
        # torch moves the index to every later element equal to the running extreme (or NaN)
        hit = (a == values) | xp.isnan(a) if a.dtype.kind in FLOAT_KINDS else a == values
        self.idx = xp.maximum.accumulate(xp.where(hit, pos, 0), axis=dim).astype(host.int64)
        return values

    def backward(self, grad):
        if not len(self.shape):
            return grad
        return apply1(ValueSelectingReductionBackward0, grad, self.shape, self.dim, self.idx)


class CumminBackward0(CummaxBackward0):
    __slots__ = ()


def _cum_extreme(cls, input: Tensor, dim: int, ufunc: str, result):
    if not input._data.ndim and dim not in (0, -1):
        name = result.__name__
        raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
    d = _wrap_dim(dim, input._data.ndim)
    node = object.__new__(cls)
    values = node.forward(input._data, d, ufunc)
    recording = input._requires_grad and _grad_state.grad_enabled
    return result(op_result(node, (input,), values, recording), _make(node.idx))


@register
def cummax(input: Tensor, dim: int):
    """``torch.cummax``: running maxima and the index each came from (the latest on ties)."""
    return _cum_extreme(CummaxBackward0, input, dim, "maximum", cummax_result)


@register
def cummin(input: Tensor, dim: int):
    """``torch.cummin``: running minima and the index each came from (the latest on ties)."""
    return _cum_extreme(CumminBackward0, input, dim, "minimum", cummin_result)
