"""Shape and movement: repeat, repeat_interleave, tile, split, chunk, tensor_split, the stacks,
narrow, flip, roll, rot90, diagonal, trace, tril/triu, diag, diag_embed, meshgrid, atleast_nd.

Ops that return views in torch (split, chunk, tensor_split, narrow, diagonal, meshgrid, ravel
of a contiguous input) return views here too, recorded through ``view_op`` (or, for the
multi-output splits, the same base/chain bookkeeping ``unbind`` does), so in-place ops on
them rewrite the base's history.
"""

from __future__ import annotations

import warnings

from .._backend import host, xp_of
from .._tensor import Size, Tensor, _make, _wrap_dim
from ..autograd.grad_mode import state as _grad_state
from ..autograd.record import mark_view, needs_recording, record
from ._op import Op, apply1
from .indexing import _BASIC_NODES, MULTI_OUTPUT_NODES, IndexBackward0, getitem
from .joining import cat, tensor_list
from .views import ViewOp, expand, reshape, unsqueeze, view, view_op

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "chunk",
    "column_stack",
    "diag",
    "diag_embed",
    "diagflat",
    "diagonal",
    "dstack",
    "flip",
    "fliplr",
    "flipud",
    "hstack",
    "meshgrid",
    "narrow",
    "ravel",
    "repeat_interleave",
    "roll",
    "rot90",
    "row_stack",
    "split",
    "split_with_sizes",
    "tensor_split",
    "tile",
    "trace",
    "tril",
    "triu",
    "vstack",
]


def _ints(args, op: str, name: str) -> tuple:
    """``f(2, 3)`` or ``f((2, 3))`` as a tuple of ints (0-d tensors allowed)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = tuple(args[0])
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = a.item()
        if not isinstance(a, (int, host.integer)) or isinstance(a, bool):
            raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found "
                            f"element of type {type(a).__name__}")
        out.append(int(a))
    return tuple(out)


def _dtype_name(t: Tensor) -> str:
    return t.dtype._legacy[:-6]  # "LongTensor" -> "Long", as torch names dtypes in errors


# --------------------------------------------------------------------------- repeat, tile


class RepeatBackward0(Op):
    """repeat(*repeats): tile; d/dinput = grad folded to (r0, s0, r1, s1, ...), summed over r."""

    __slots__ = ("repeats", "shape")

    def forward(self, a, repeats):
        self.shape, self.repeats = a.shape, repeats
        padded = a.reshape((1,) * (len(repeats) - a.ndim) + a.shape)
        return xp_of(a).tile(padded, repeats)

    def backward(self, grad):
        r = self.repeats
        if not r:
            return grad.reshape(self.shape)
        sizes = (1,) * (len(r) - len(self.shape)) + self.shape
        folded = [x for pair in zip(r, sizes) for x in pair]
        return grad.reshape(folded).sum(tuple(range(0, 2 * len(r), 2))).reshape(self.shape)


def repeat(input: Tensor, *repeats) -> Tensor:
    """``Tensor.repeat``: tile the tensor ``repeats`` times along each dim (a copy)."""
    if not repeats:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    repeats = _ints(repeats, "repeat", "repeats")
    shape = input._data.shape
    if len(repeats) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    padded = (1,) * (len(repeats) - len(shape)) + shape
    target = [r * s for r, s in zip(repeats, padded)]
    for t in target:
        if t < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {t}: {target}")
    return apply1(RepeatBackward0, input, repeats)


def tile(input: Tensor, *dims) -> Tensor:
    """``torch.tile``: ``repeat``, with ``dims`` padded with leading ones to the input's rank."""
    dims = _ints(dims, "tile", "dims")
    nd = input._data.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


class IndexSelectBackward0(IndexBackward0):
    """index_select along a dim with a fixed index array (repeat_interleave with a tensor)."""

    __slots__ = ()


def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """``torch.repeat_interleave``: repeat each element (int or per-element tensor repeats).

    As in torch, int repeats give a view of a contiguous copy of an expanded input
    (``ViewBackward0``); tensor repeats an index_select (``IndexSelectBackward0``).
    ``repeat_interleave(repeats)`` alone gives the indices ``repeat_interleave`` would take.
    """
    if repeats is None:  # torch.repeat_interleave(repeats)
        reps = _check_repeats(input)
        xp = xp_of(reps)
        idx = xp.repeat(xp.arange(reps.shape[0], dtype=host.int64), reps)
        return _make(idx)
    if dim is None:
        input = reshape(input, (-1,))
        d = 0
    else:
        d = _wrap_dim(dim, input._data.ndim)
    if isinstance(repeats, Tensor):
        reps = _check_repeats(repeats)
        xp = xp_of(reps)
        n = input._data.shape[d] if input._data.ndim else 1
        if reps.shape[0] == 1:
            reps = xp.broadcast_to(reps, (n,))
        elif reps.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {reps.shape[0]} and input.size({d}) = {n}")
        idx = xp.repeat(xp.arange(n, dtype=host.int64), reps)
        return apply1(IndexSelectBackward0, input, (slice(None),) * d + (idx,))
    repeats = int(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    x = unsqueeze(input, d + 1)
    shape = list(x._data.shape)
    shape[d + 1] = repeats
    from .elementwise import clone
    x = clone(expand(x, shape))
    return reshape(x, tuple(shape[:d]) + (shape[d] * repeats,) + tuple(shape[d + 2:]))


def _check_repeats(repeats: Tensor):
    r = repeats._data
    if r.dtype.kind not in "iu":
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                  f"'{_dtype_name(repeats)}'")
    if r.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    r = r.reshape(-1).astype(host.int64)
    if (r < 0).any():
        raise RuntimeError("repeats can not be negative")
    return r


# --------------------------------------------------------------------------- split, chunk


class _SplitNode(Op):
    """One node with an output per piece (each a view of the input), as torch records split.

    Backward joins the pieces' gradients along ``dim`` (zeros for the pieces not used).
    """

    __slots__ = ("_num_outputs", "dim", "shape", "sizes")

    def backward(self, *grads):
        like = next((g for g in grads if g is not None), None)
        if like is None:
            return (None,)
        parts = []
        for g, size in zip(grads, self.sizes):
            if g is None:
                shape = list(self.shape)
                shape[self.dim] = size
                g = _make(xp_of(like._data).zeros(shape, dtype=like._data.dtype))
            parts.append(g)
        return cat(parts, self.dim)


class SplitBackward0(_SplitNode):
    __slots__ = ()


class SplitWithSizesBackward0(_SplitNode):
    __slots__ = ()


def _split_views(input: Tensor, d: int, sizes: list, cls) -> tuple:
    """The pieces of ``input`` along ``d``, as views recorded by one ``cls`` node."""
    a = input._data
    lead = (slice(None),) * d
    keys, start = [], 0
    for size in sizes:
        keys.append(lead + (slice(start, start + size),))
        start += size
    pieces = [a[k] for k in keys]
    # (torch refuses in-place ops on the pieces of a recorded split)
    recorded = needs_recording((input,), _grad_state.grad_enabled)
    step = (MULTI_OUTPUT_NODES if recorded else _BASIC_NODES)["SliceBackward0"]
    steps = [(step, (k,)) for k in keys]  # views: in-place writes reach the input
    if recorded:
        node = object.__new__(cls)
        node.dim, node.sizes, node.shape = d, list(sizes), a.shape
        return tuple(record(node, (input,), pieces, view_of=input, view_steps=steps))
    outs = [_make(p) for p in pieces]
    for t, st in zip(outs, steps):
        mark_view(t, input, st)
    return tuple(outs)


def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """``torch.split``: pieces of ``split_size`` (the last may be smaller) or of the given
    sizes, along ``dim``; views of the input."""
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections._data.ndim:
        split_size_or_sections = split_size_or_sections.tolist()
    if isinstance(split_size_or_sections, (list, tuple)):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    size = int(split_size_or_sections)
    if tensor._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, tensor._data.ndim)
    n = tensor._data.shape[d]
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {n}")
    count = max(-(-n // size), 1) if size else 1
    sizes = [size] * (count - 1) + [n - size * (count - 1)]
    return _split_views(tensor, d, sizes, SplitBackward0)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``torch.split_with_sizes``: pieces of the given sizes along ``dim`` (views)."""
    sizes = list(_ints((split_sizes,), "split_with_sizes", "split_sizes"))
    if input._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={sizes}")
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    return _split_views(input, d, sizes, SplitWithSizesBackward0)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``torch.chunk``: ``chunks`` pieces of ceil(n / chunks) (fewer if that covers n)."""
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    size = -(-n // chunks)
    if size == 0 and n == 0:  # torch: `chunks` empty pieces, recorded as split_with_sizes
        return split_with_sizes(input, [0] * chunks, d)
    return split(input, size, d)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """``torch.tensor_split``: ``sections`` near-equal pieces, or pieces between the
    ``indices``; each a slice (view) of the input."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    arg = indices_or_sections
    if isinstance(arg, Tensor):
        if arg._data.dtype != host.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {_dtype_name(arg)}")
        if arg._data.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {arg._data.ndim} dims")
        arg = arg.tolist()
    d = _wrap_dim(dim, nd)
    n = input._data.shape[d]
    if isinstance(arg, (list, tuple)):
        bounds = [int(i) for i in arg]
        starts, stops = [0] + bounds, bounds + [None]
    else:
        sections = int(arg)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(n, sections)
        sizes = [small + 1] * extra + [small] * (sections - extra)
        stops = host.cumsum(sizes).tolist()
        starts = [0] + stops[:-1]
    lead = (slice(None),) * d
    return tuple(getitem(input, lead + (slice(a, b),)) for a, b in zip(starts, stops))


# --------------------------------------------------------------------------- stacks


def _tensor_list(tensors, op: str) -> list:
    return tensor_list(tensors, op, " expects a non-empty TensorList")


def hstack(tensors, *, out=None) -> Tensor:
    """``torch.hstack``: cat along dim 1 (dim 0 for 1-d tensors), 0-d tensors as 1-d."""
    ts = atleast_1d(_tensor_list(tensors, "hstack"))
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


def vstack(tensors, *, out=None) -> Tensor:
    """``torch.vstack``: cat along dim 0 of the tensors made at least 2-d."""
    return cat(atleast_2d(_tensor_list(tensors, "vstack")), 0)


row_stack = vstack


def dstack(tensors, *, out=None) -> Tensor:
    """``torch.dstack``: cat along dim 2 of the tensors made at least 3-d."""
    return cat(atleast_3d(_tensor_list(tensors, "dstack")), 2)


def column_stack(tensors, *, out=None) -> Tensor:
    """``torch.column_stack``: 0-d and 1-d tensors become columns, then cat along dim 1."""
    ts = _tensor_list(tensors, "column_stack")
    return cat([reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in ts], 1)


# --------------------------------------------------------------------------- narrow, flip, roll


def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """``torch.narrow``: ``length`` elements from ``start`` along ``dim`` (a view)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if isinstance(start, Tensor):
        start = start.item()
    start, length = int(start), int(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap_dim(dim, nd)
    n = input._data.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if start > n - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


class FlipBackward0(Op):
    """flip(dims): a reversed copy; d/dinput = grad flipped back."""

    __slots__ = ("dims",)

    def forward(self, a, dims):
        self.dims = dims
        return xp_of(a).flip(a, dims).copy() if a.ndim else a.copy()

    def backward(self, grad):
        return apply1(FlipBackward0, grad, self.dims)


def flip(input: Tensor, *dims) -> Tensor:
    """``torch.flip``: reverse the order of elements along ``dims`` (a copy, as in torch)."""
    dims = _ints(dims, "flip", "dims")
    nd = input._data.ndim
    wrapped = [_wrap_dim(d, nd) for d in dims]
    seen = set()
    for d in wrapped:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return apply1(FlipBackward0, input, tuple(wrapped))


def fliplr(input: Tensor) -> Tensor:
    """``torch.fliplr``: flip dim 1."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    """``torch.flipud``: flip dim 0."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


class RollBackward0(Op):
    """roll(shifts, dims): d/dinput = grad rolled back."""

    __slots__ = ("dims", "shifts")

    def forward(self, a, shifts, dims):
        self.shifts, self.dims = shifts, dims
        if dims is None:
            return xp_of(a).roll(a, shifts[0])
        return xp_of(a).roll(a, shifts, dims)

    def backward(self, grad):
        return apply1(RollBackward0, grad, tuple(-s for s in self.shifts), self.dims)


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """``torch.roll``: shift elements along ``dims`` cyclically (the flattened tensor if none)."""
    shifts = (shifts,) if isinstance(shifts, (int, host.integer)) else tuple(shifts)
    dims = () if dims is None else (dims,) if isinstance(dims, (int, host.integer)) else \
        tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return apply1(RollBackward0, input, (int(shifts[0]),), None)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dims = tuple(_wrap_dim(int(d), nd) for d in dims)
    return apply1(RollBackward0, input, tuple(int(s) for s in shifts), dims)


class Rot90Backward0(Op):
    """rot90(k, dims): a rotated copy; d/dinput = grad rotated back by -k."""

    __slots__ = ("dims", "k")

    def forward(self, a, k, dims):
        self.k, self.dims = k, dims
        return xp_of(a).rot90(a, k, dims).copy()

    def backward(self, grad):
        return apply1(Rot90Backward0, grad, -self.k, self.dims)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """``torch.rot90``: rotate by 90 degrees ``k`` times in the plane of ``dims``."""
    dims = tuple(dims)
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    wrapped = (_wrap_dim(dims[0], nd), _wrap_dim(dims[1], nd))
    if wrapped[0] == wrapped[1]:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    return apply1(Rot90Backward0, input, int(k) % 4, wrapped)


# --------------------------------------------------------------------------- diagonals


def _diag_view(a, offset: int, d1: int, d2: int):
    """The writable strided view of ``a``'s diagonal ``offset`` in dims (d1, d2), as the last
    dim (``np.diagonal`` returns a read-only view, which in-place ops could not write)."""
    xp = xp_of(a)
    b = xp.moveaxis(a, (d1, d2), (-2, -1))
    b = b[..., :, offset:] if offset >= 0 else b[..., -offset:, :]
    n = min(b.shape[-2], b.shape[-1])
    return xp.lib.stride_tricks.as_strided(b, b.shape[:-2] + (n,),
                                           b.strides[:-2] + (b.strides[-2] + b.strides[-1],))


class DiagonalBackward0(ViewOp):
    """diagonal(offset, dim1, dim2): a view; d/dinput = grad placed on the diagonal of zeros."""

    __slots__ = ("d1", "d2", "offset", "shape")

    def forward(self, a, offset, d1, d2):
        self.shape, self.offset, self.d1, self.d2 = a.shape, offset, d1, d2
        return _diag_view(a, offset, d1, d2)

    def backward(self, grad):
        return apply1(DiagonalBackwardBackward0, grad, self.shape, self.offset, self.d1, self.d2)


class DiagonalBackwardBackward0(Op):
    """Zeros of ``shape`` with ``grad`` on a diagonal (diagonal's backward); d/dgrad: diagonal."""

    __slots__ = ("d1", "d2", "offset")

    def forward(self, g, shape, offset, d1, d2):
        self.offset, self.d1, self.d2 = offset, d1, d2
        out = xp_of(g).zeros(shape, dtype=g.dtype)
        _diag_view(out, offset, d1, d2)[...] = g
        return out

    def backward(self, grad):
        return view_op(DiagonalBackward0, grad, self.offset, self.d1, self.d2)


class DiagonalBackward0_copy(DiagonalBackward0):  # torch's name for diag(2-d)
    """diag of a matrix: the diagonal as a copy (torch's ``diagonal_copy``)."""

    __slots__ = ()

    def forward(self, a, offset, d1, d2):
        return super().forward(a, offset, d1, d2).copy()


class DiagEmbedBackward0(Op):
    """diag_embed(offset, dim1, dim2): the last dim laid on a diagonal of zeros;
    d/dinput = that diagonal of grad."""

    __slots__ = ("d1", "d2", "offset")

    def forward(self, a, offset, d1, d2):
        self.offset, self.d1, self.d2 = offset, d1, d2
        n = (a.shape[-1] if a.ndim else 1) + abs(offset)
        rest = iter(a.shape[:-1])
        shape = tuple(n if k in (d1, d2) else next(rest) for k in range(a.ndim + 1))
        out = xp_of(a).zeros(shape, dtype=a.dtype)
        _diag_view(out, offset, d1, d2)[...] = a
        return out

    def backward(self, grad):
        return view_op(DiagonalBackward0, grad, self.offset, self.d1, self.d2)


def _diag_dims(dim1: int, dim2: int, nd: int) -> tuple:
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``torch.diagonal``: the diagonal ``offset`` of the (dim1, dim2) planes, as the last dim
    (a view)."""
    d1, d2 = _diag_dims(dim1, dim2, input._data.ndim)
    return view_op(DiagonalBackward0, input, int(offset), d1, d2)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.diag_embed``: each last-dim vector on the diagonal ``offset`` of new matrices in
    dims (dim1, dim2) of the output."""
    d1, d2 = _diag_dims(dim1, dim2, input._data.ndim + 1)
    return apply1(DiagEmbedBackward0, input, int(offset), d1, d2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """``torch.diag``: a 1-d tensor's diagonal matrix, or a matrix's diagonal (a copy)."""
    nd = input._data.ndim
    if nd == 1:
        return apply1(DiagEmbedBackward0, input, int(diagonal), 0, 1)
    if nd != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")
    return apply1(DiagonalBackward0_copy, input, int(diagonal), 0, 1)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """``torch.diagflat``: the flattened input on the diagonal ``offset`` of a matrix."""
    return apply1(DiagEmbedBackward0, reshape(input, (-1,)), int(offset), 0, 1)


class TraceBackward0(Op):
    """trace: sum of the main diagonal (integers sum to int64); d/dinput = grad on it."""

    __slots__ = ("shape",)

    def forward(self, a):
        self.shape = a.shape
        return a.trace(dtype=host.int64 if a.dtype.kind in "iu" else a.dtype)

    def backward(self, grad):
        k = min(self.shape)
        return apply1(DiagonalBackwardBackward0, grad.expand(k), self.shape, 0, 0, 1)


def trace(input: Tensor) -> Tensor:
    """``torch.trace``: the sum of a matrix's main diagonal."""
    nd = input._data.ndim
    if nd != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {nd}")
    if input._data.dtype == host.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return apply1(TraceBackward0, input)


class TrilBackward0(Op):
    """tril(diagonal): d/dinput = tril(grad)."""

    __slots__ = ("k",)

    def forward(self, a, k):
        self.k = k
        return xp_of(a).tril(a, k)

    def backward(self, grad):
        return apply1(TrilBackward0, grad, self.k)


class TriuBackward0(Op):
    """triu(diagonal): d/dinput = triu(grad)."""

    __slots__ = ("k",)

    def forward(self, a, k):
        self.k = k
        return xp_of(a).triu(a, k)

    def backward(self, grad):
        return apply1(TriuBackward0, grad, self.k)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """``torch.tril``: the lower triangle of the last two dims (the rest zeroed)."""
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return apply1(TrilBackward0, input, int(diagonal))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """``torch.triu``: the upper triangle of the last two dims (the rest zeroed)."""
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return apply1(TriuBackward0, input, int(diagonal))


# --------------------------------------------------------------------------- meshgrid, atleast


_MESHGRID_WARNING = ("torch.meshgrid: in an upcoming release, it will be required to pass the "
                     "indexing argument.")


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """``torch.meshgrid``: each 1-d (or 0-d) tensor viewed along its own dim and expanded to
    the grid (views); 'xy' swaps the first two dims of the grid."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    if len({t._data.dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    n = len(tensors)
    axes = list(range(n))
    if indexing == "xy" and n >= 2:
        axes[0], axes[1] = 1, 0
    sizes = [t._data.size for t in tensors]
    grid = [0] * n
    for t, ax, size in zip(tensors, axes, sizes):
        grid[ax] = size
    out = []
    for t, ax, size in zip(tensors, axes, sizes):
        shape = [1] * n
        shape[ax] = size
        out.append(expand(view(t, tuple(shape)), tuple(grid)))
    return tuple(out)


def _atleast(tensors, fn):
    if len(tensors) == 1:
        tensors = tensors[0]
        if isinstance(tensors, Tensor):
            return fn(tensors)
    return tuple(fn(t) for t in tensors)


def _one_1d(t: Tensor) -> Tensor:
    return reshape(t, (1,)) if t._data.ndim == 0 else t


def _one_2d(t: Tensor) -> Tensor:
    nd = t._data.ndim
    return reshape(t, (1, 1)) if nd == 0 else unsqueeze(t, 0) if nd == 1 else t


def _one_3d(t: Tensor) -> Tensor:
    nd = t._data.ndim
    if nd == 0:
        return reshape(t, (1, 1, 1))
    if nd == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if nd == 2 else t


def atleast_1d(*tensors):
    """``torch.atleast_1d``: 0-d tensors viewed as 1-d; one tensor in, one out."""
    return _atleast(tensors, _one_1d)


def atleast_2d(*tensors):
    """``torch.atleast_2d``: 0-d and 1-d tensors viewed as 2-d (1-d as a row)."""
    return _atleast(tensors, _one_2d)


def atleast_3d(*tensors):
    """``torch.atleast_3d``: (n,) becomes (1, n, 1) and (m, n) becomes (m, n, 1)."""
    return _atleast(tensors, _one_3d)


def ravel(input: Tensor) -> Tensor:
    """``torch.ravel``: the flattened tensor; a view when contiguous, else a view of a copy."""
    from .elementwise import contiguous
    return view(contiguous(input), (-1,))


METHODS = {f.__name__: f for f in (
    repeat, repeat_interleave, tile, split, split_with_sizes, chunk, tensor_split, narrow, flip,
    fliplr, flipud, roll, rot90, diagonal, trace, tril, triu, diag, diag_embed, diagflat, ravel,
)}
INPLACE = ("tril", "triu")
