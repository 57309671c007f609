"""Order statistics: sort, argsort, msort, topk, kthvalue, median/nanmedian, mode, unique, aminmax;
searching sorted rows: searchsorted, bucketize.

Ops that select values (sort, topk, kthvalue, median with dim, mode) send each output's
gradient back to the index it was taken from, as torch's ``value_selecting_reduction_backward``;
the 0-d results of ``median()`` / ``nanmedian()`` and ``aminmax`` share it among equal elements.
"""

from __future__ import annotations

from collections import namedtuple

from .._backend import FLOAT_KINDS, host, ndarray, xp_of
from .._backend.dtypes import _FROM_NP
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.grad_mode import state as _grad_state
from ._op import Op, is_dual, op_result, record_op, record_outputs
from ._registry import register
from .arithmetic import scalar_name
from .indexing import _scatter_into
from .reductions import _all_if_empty, _expand_back, reduce_dims


def _result(name: str, fields=("values", "indices")):
    cls = namedtuple(name, fields)
    cls.__module__ = "torch.return_types"
    return cls


sort_result, topk_result, kthvalue_result = _result("sort"), _result("topk"), _result("kthvalue")
median_result, nanmedian_result, mode_result = (_result("median"), _result("nanmedian"),
                                                _result("mode"))
aminmax_result = _result("aminmax", ("min", "max"))


def _argsort(a, dim: int, descending: bool):
    """Stable argsort of the array ``a`` along ``dim``, NaN above everything (torch's order);
    descending keeps equal elements in their original order too."""
    if not descending:
        return a.argsort(axis=dim, kind="stable")
    xp = xp_of(a)
    n = a.shape[dim]
    return n - 1 - xp.flip(xp.flip(a, dim).argsort(axis=dim, kind="stable"), dim)


# --------------------------------------------------------------------------- value selection


class SortBackward0(Op):
    """sort(input, dim): the gradient of each output goes to the input index it came from.

    ``forward`` receives the values and indices already chosen; ``keepdim`` False means the
    selection removed ``dim`` (median, kthvalue, mode without keepdim).
    """

    __slots__ = ("dim", "idx", "keepdim", "shape")

    def forward(self, a, values, idx, dim, keepdim):
        self.shape, self.dim, self.keepdim = a.shape, dim, keepdim
        self.idx = idx if keepdim or not a.ndim else xp_of(idx).expand_dims(idx, dim)
        return values

    def backward(self, grad):
        if not len(self.shape):
            return grad
        g = grad if self.keepdim else grad.unsqueeze(self.dim)
        return _scatter_into(g, self.shape, self.dim, self.idx)


class SortBackward1(SortBackward0):
    """sort(input, *, stable, dim, descending): what torch records when ``stable`` is passed."""

    __slots__ = ()


class TopkBackward0(SortBackward0):
    __slots__ = ()


class KthvalueBackward0(SortBackward0):
    __slots__ = ()


class MedianBackward1(SortBackward0):
    __slots__ = ()


class NanmedianBackward1(SortBackward0):
    __slots__ = ()


class ModeBackward0(SortBackward0):
    __slots__ = ()


def _select(cls, result, input: Tensor, values, idx, dim: int, keepdim: bool = True):
    """(values, indices) (arrays) as ``result``, values recorded by a ``cls`` node if grad is
    needed."""
    indices = _make(idx.astype(host.int64, copy=False))
    recording = input._requires_grad and _grad_state.grad_enabled
    if recording or is_dual(input):
        node = object.__new__(cls)
        out = node.forward(input._data, values, indices._data, dim, keepdim)
        return result(op_result(node, (input,), out, recording), indices)
    return result(_make(values), indices)


def _take(a, idx, dim: int):
    return xp_of(a).take_along_axis(a, idx, axis=dim) if a.ndim else a.copy()


_NOT_GIVEN = object()  # torch records sort(stable=...) as another node, whatever the value


@register
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable=_NOT_GIVEN):
    """``torch.sort``: (values, indices); always stable, NaN sorts above every number."""
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    idx = _argsort(a, d, descending) if a.ndim else xp_of(a).zeros((), host.int64)
    cls = SortBackward0 if stable is _NOT_GIVEN else SortBackward1
    return _select(cls, sort_result, input, _take(a, idx, d), idx, d)


@register
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:
    """``torch.argsort``: the indices ``sort`` returns."""
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    return _make(_argsort(a, d, descending) if a.ndim else xp_of(a).zeros((), host.int64))


@register
def msort(input: Tensor) -> Tensor:
    """``torch.msort``: ``sort(input, dim=0).values``."""
    return sort(input, 0).values


def _topk_by_picks(rows, k: int, largest: bool):
    """The first ``k`` of each row of ``rows`` in ``sort``'s order, picked one at a time by
    argmax (argmin), each pick then overwritten by a sentinel (-inf or the dtype's least for
    argmax); None where a pick may be wrong (a sentinel value picked, or, for argmin, which
    picks NaN first, a NaN)."""
    xp = xp_of(rows)
    r = rows.copy()
    if r.dtype.kind == "f":
        sentinel = -host.inf if largest else host.inf
    else:
        info = host.iinfo(r.dtype)
        sentinel = info.min if largest else info.max
    pick = r.argmax if largest else r.argmin
    at = xp.arange(r.shape[0])
    idx = xp.empty((r.shape[0], k), dtype=host.int64)
    values = xp.empty((r.shape[0], k), dtype=r.dtype)  # as picked: a sentinel shows
    for i in range(k):
        j = pick(axis=1)  # the first extreme: ties in index order, as the stable sort
        idx[:, i] = j
        values[:, i] = r[at, j]
        r[at, j] = sentinel
    doubt = values == sentinel
    if r.dtype.kind == "f" and not largest:
        doubt |= xp.isnan(values)
    return None if doubt.any() else idx


def _topk_by_threshold(rows, k: int, largest: bool):
    """The first ``k`` of each row of ``rows`` in ``sort``'s order: the elements beyond the
    k-th value (``partition``), then as many of those equal to it as are needed, in index
    order, sorted among themselves."""
    xp = xp_of(rows)
    n = rows.shape[1]
    kth = n - k if largest else k - 1
    t = xp.partition(rows, kth, axis=1)[:, kth:kth + 1]  # NaN is largest, as in torch
    if rows.dtype.kind == "f" and xp.isnan(t).any():
        nan, t_nan = xp.isnan(rows), xp.isnan(t)
        equal = (rows == t) | (nan & t_nan)
        beyond = ~(rows <= t) & ~t_nan if largest else (rows < t) | (~nan & t_nan)
    else:
        equal = rows == t
        beyond = ~(rows <= t) if largest else rows < t  # (~(x <= t): NaN too)
    chosen = beyond | equal
    if int(xp.count_nonzero(chosen)) != rows.shape[0] * k:  # ties across the k-th place
        room = k - xp.count_nonzero(beyond, axis=1, keepdims=True)
        chosen = beyond | (equal & (equal.cumsum(axis=1) <= room))
    idx = (xp.flatnonzero(chosen) % n).reshape(rows.shape[0], k)
    order = _argsort(xp.take_along_axis(rows, idx, axis=1), 1, largest)
    return xp.take_along_axis(idx, order, axis=1)


@register
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """``torch.topk``: the ``k`` largest (or smallest) along ``dim``, NaN largest; ember
    always returns them sorted (torch's order with ``sorted=False`` is unspecified), equal
    values in index order (``sort``'s stable order; torch leaves that unspecified too).

    NOTE: on host arrays, without a full sort: k argmax (argmin) passes for k <= 16, else a
    ``partition`` to the k-th value and a sort of the k selected (float32 (256, 512), k=5:
    5,386 -> 130 µs, torch 198; k=16 and 17 take 345 and 408 µs, torch 1,171). The picks read data into Python, so a traced array
    (``ember.compile``) and a device array keep the full stable sort.
    """
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    n = a.shape[d] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    xp = xp_of(a)
    if not a.ndim:
        idx = xp.zeros((), host.int64)
    elif type(a) is ndarray and a.dtype.kind in "fiu" and 0 < k < n:
        rows = xp.moveaxis(a, d, -1)
        lead = rows.shape[:-1]
        rows = rows.reshape(-1, n)
        idx = _topk_by_picks(rows, k, largest) if k <= 16 else None
        if idx is None:
            idx = _topk_by_threshold(rows, k, largest)
        idx = xp.moveaxis(idx.reshape(lead + (k,)), -1, d)
    else:
        idx = _argsort(a, d, largest).take(xp.arange(k), axis=d)
    return _select(TopkBackward0, topk_result, input, _take(a, idx, d), idx, d)


def _nth(a, d: int, pos, keepdim: bool):
    """(values, indices) of the array ``a`` at sorted position ``pos`` (keepdim-shaped) along
    ``d``."""
    xp = xp_of(a)
    order = a.argsort(axis=d, kind="stable")
    idx = xp.take_along_axis(order, pos, axis=d)
    values = xp.take_along_axis(a, idx, axis=d)
    if not keepdim:
        idx, values = idx.squeeze(d), values.squeeze(d)
    return values, idx


def _check_nonempty(a, d: int, name: str) -> None:
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


@register
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """``torch.kthvalue``: the ``k``-th smallest element (1-based) along ``dim``."""
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    _check_nonempty(a, d, "kthvalue")
    n = a.shape[d] if a.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if not a.ndim:
        return _select(KthvalueBackward0, kthvalue_result, input, a.copy(),
                       xp_of(a).zeros((), host.int64), d)
    pos = xp_of(a).full(a.shape[:d] + (1,) + a.shape[d + 1:], k - 1)
    values, idx = _nth(a, d, pos, keepdim)
    return _select(KthvalueBackward0, kthvalue_result, input, values, idx, d, keepdim)


def _median_dim(input: Tensor, dim: int, keepdim: bool, ignore_nan: bool):
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    name = "median"  # (sic: torch's nanmedian reports itself as median())
    cls = NanmedianBackward1 if ignore_nan else MedianBackward1
    result = nanmedian_result if ignore_nan else median_result
    _check_nonempty(a, d, name)
    xp = xp_of(a)
    if not a.ndim:
        return _select(cls, result, input, a.copy(), xp.zeros((), host.int64), d)
    n = a.shape[d]
    numbers = (~xp.isnan(a)).sum(axis=d, keepdims=True) if a.dtype.kind in FLOAT_KINDS else n
    if ignore_nan:  # the lower median of the numbers; an all-NaN slice gives its first NaN
        pos = xp.maximum(numbers - 1, 0) // 2
    else:  # any NaN makes the median NaN: the first NaN (it sorts right after the numbers)
        pos = xp.where(numbers < n, numbers, (n - 1) // 2)
    pos = xp.broadcast_to(pos, a.shape[:d] + (1,) + a.shape[d + 1:])
    values, idx = _nth(a, d, pos, keepdim)
    return _select(cls, result, input, values, idx, d, keepdim)


class MedianBackward0(Op):
    """median(input) / nanmedian(input): the gradient is shared evenly by the elements equal
    to the result (the NaNs if it is NaN), as torch's ``evenly_distribute_backward``."""

    __slots__ = ("hit",)

    def forward(self, a, value):
        xp = xp_of(a)
        self.hit = xp.isnan(a) if xp.isnan(value) else a == value
        return value

    def backward(self, grad):
        hit = _make(self.hit).to(grad.dtype)
        return hit * (grad / hit.sum())


class NanmedianBackward0(MedianBackward0):
    __slots__ = ()


def _median_all(input: Tensor, ignore_nan: bool) -> Tensor:
    a = input._data
    flat = a.reshape(-1)
    if not flat.size:
        value = xp_of(a).full((), host.nan, dtype=a.dtype)
    else:
        value, _ = _median_dim(_make(flat), 0, False, ignore_nan)
        value = value._data
    recording = input._requires_grad and _grad_state.grad_enabled
    if recording or is_dual(input):
        node = object.__new__(NanmedianBackward0 if ignore_nan else MedianBackward0)
        return op_result(node, (input,), node.forward(a, value), recording)
    return _make(value)


@register
def median(input: Tensor, dim=None, keepdim: bool = False):
    """``torch.median``: the lower median (NaN if any NaN); with ``dim``, (values, indices)."""
    if dim is None:
        return _median_all(input, False)
    return _median_dim(input, dim, keepdim, False)


@register
def nanmedian(input: Tensor, dim=None, keepdim: bool = False):
    """``torch.nanmedian``: ``median`` ignoring NaN (NaN only where all are NaN)."""
    if dim is None:
        return _median_all(input, True)
    return _median_dim(input, dim, keepdim, True)


@register
def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """``torch.mode``: the most frequent value along ``dim`` (the smallest such on ties) and
    the index of its last occurrence."""
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    xp = xp_of(a)
    if not a.ndim:
        return _select(ModeBackward0, mode_result, input, a.copy(), xp.zeros((), host.int64), d)
    order = a.argsort(axis=d, kind="stable")
    s = xp.take_along_axis(a, order, axis=d)
    pos = xp.arange(a.shape[d]).reshape((-1,) + (1,) * (a.ndim - 1 - d))
    starts = xp.ones(s.shape, dtype=bool)
    starts[(slice(None),) * d + (slice(1, None),)] = (
        xp.diff(s, axis=d) != 0 if s.dtype.kind != "b" else xp.diff(s.view(host.uint8), axis=d))
    # how many equal elements precede each one in its run: runs grow, so the first position
    # reaching the longest run ends the smallest of the most frequent values (its last index)
    run = pos - xp.maximum.accumulate(xp.where(starts, pos, 0), axis=d) + 1
    best = (run == run.max(axis=d, keepdims=True)).argmax(axis=d, keepdims=True) \
        if a.shape[d] else xp.zeros(a.shape[:d] + (1,) + a.shape[d + 1:], host.int64)
    idx = xp.take_along_axis(order, best, axis=d) if a.shape[d] else best
    values = xp.take_along_axis(a, idx, axis=d) if a.shape[d] else xp.zeros(idx.shape, a.dtype)
    if not keepdim:
        idx, values = idx.squeeze(d), values.squeeze(d)
    return _select(ModeBackward0, mode_result, input, values, idx, d, keepdim)


# --------------------------------------------------------------------------- unique


class Unique2Backward0(Op):
    """unique(input): torch records the node but has no derivative for it."""

    __slots__ = ()
    op_name = "_unique2"

    def backward(self, grad):
        raise NotImplementedError(f"the derivative for '{self.op_name}' is not implemented.")


class UniqueDimBackward0(Unique2Backward0):
    __slots__ = ()
    op_name = "unique_dim"


@register
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim=None):
    """``torch.unique``: the distinct values, always sorted (as torch on CPU); with ``dim``,
    the distinct slices along it in lexicographic order."""
    a = input._data
    if dim is None:
        values, inverse, counts = xp_of(a).unique(a.reshape(-1), return_inverse=True,
                                                  return_counts=True)
        inverse = inverse.reshape(a.shape)
        cls = Unique2Backward0
    else:
        if not a.ndim:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        d = _wrap_dim(dim, a.ndim)
        if any(s == 0 for i, s in enumerate(a.shape) if i != d):
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        values, inverse, counts = xp_of(a).unique(a, return_inverse=True, return_counts=True,
                                                  axis=d)
        inverse = inverse.reshape(-1)
        cls = UniqueDimBackward0
    if input._requires_grad and _grad_state.grad_enabled:
        out = record_op(object.__new__(cls), (input,), values)
    else:
        out = _make(values)
    extra = []
    if return_inverse:
        extra.append(_make(inverse.astype(host.int64)))
    if return_counts:
        extra.append(_make(counts.astype(host.int64)))
    return (out, *extra) if extra else out


# --------------------------------------------------------------------------- aminmax


class AminmaxBackward0(Op):
    """aminmax: outputs (min, max) of one node; each gradient is shared evenly by the
    elements equal to its result, as amin's and amax's."""

    __slots__ = ("_num_outputs", "dims", "hi", "keepdim", "lo")
    save_inputs = (0,)

    def forward(self, a, dims, keepdim):
        self.dims, self.keepdim = dims, keepdim
        self.lo = a.min(axis=dims, keepdims=True)
        self.hi = a.max(axis=dims, keepdims=True)
        shape = a.sum(axis=dims, keepdims=keepdim).shape
        return self.lo.reshape(shape), self.hi.reshape(shape)

    def backward(self, grad_min, grad_max):
        (x,) = self.saved()
        out = None
        for g, extreme in ((grad_min, self.lo), (grad_max, self.hi)):
            if g is None:
                continue
            hit = _make(x._data == extreme).to(g.dtype)
            part = _expand_back(g, x.shape, self.dims, self.keepdim) * hit / hit.sum(
                self.dims, keepdim=True)
            out = part if out is None else out + part
        return out


@register
def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """``torch.aminmax``: (min, max) over ``dim`` (all dims if None), as a named tuple."""
    a = input._data
    nd = a.ndim
    if dim is None:
        if not a.size:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = tuple(range(nd))
    else:
        dims = _all_if_empty(reduce_dims(dim, nd), nd)
        for d in dims:
            if a.shape[d] == 0:
                raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    node = object.__new__(AminmaxBackward0)
    return aminmax_result(*record_outputs(node, (input,), node.forward(a, dims, keepdim)))


# --------------------------------------------------------------------------- searching


def _search(seq, values, right: bool, sorter, out_int32: bool):
    """Insertion points of the array ``values`` in the sorted rows of ``seq`` (1-D, or the
    innermost dim with leading dims equal to those of ``values``)."""
    xp = xp_of(seq)
    side = "right" if right else "left"
    common = xp.result_type(seq, values)  # compare in the promoted dtype, as torch
    seq, values = seq.astype(common, copy=False), values.astype(common, copy=False)
    if seq.ndim == 1:
        out = xp.searchsorted(seq, values, side=side, sorter=sorter)
    else:
        rows, n = seq.reshape(-1, seq.shape[-1]), values.shape[-1]
        flat = values.reshape(rows.shape[0], n)
        order = None if sorter is None else sorter.reshape(rows.shape)
        out = xp.stack([xp.searchsorted(rows[i], flat[i], side=side,
                                        sorter=None if order is None else order[i])
                        for i in range(rows.shape[0])]).reshape(values.shape) if n else \
            xp.zeros(values.shape, host.int64)
    return _make(xp.asarray(out, dtype=host.int32 if out_int32 else host.int64))


@register(method=False)
def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter=None) -> Tensor:
    """``torch.searchsorted``: where ``input`` would be inserted to keep each innermost row of
    ``sorted_sequence`` sorted (``right``/``side='right'``: after equal elements). Not
    differentiable (integer result)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    xp = xp_of(seq)
    if isinstance(input, Tensor):
        values = input._data
    else:
        if seq.ndim != 1:
            raise RuntimeError("torch.searchsorted(): input value can be a scalar only when "
                               f"boundaries tensor dimension is 1, but we got boundaries tensor "
                               f"dim({seq.ndim}) and input value's dim(0) numel(1)")
        values = xp.asarray(input)
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if seq.ndim != 1 and seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           "the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor {list(seq.shape)} "
                           f"and input value tensor {list(values.shape)}")
    order = None
    if sorter is not None:
        order = sorter._data
        if order.shape != seq.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(order.shape)}")
        if order.dtype != host.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {scalar_name(_FROM_NP[order.dtype])}")
    return _search(seq, values, right, order, out_int32)


@register(method=False)
def bucketize(input, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """``torch.bucketize``: the bucket of each element of ``input`` among the 1-D sorted
    ``boundaries`` (``right``: a value equal to a boundary goes to the bucket after it)."""
    b = boundaries._data
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    values = input._data if isinstance(input, Tensor) else xp_of(b).asarray(input)
    return _search(b, values, right, None, out_int32)
