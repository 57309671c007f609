"""Indexing: ``t[key]``, ``t[key] = value``, index_put, masked_fill, nonzero; gather/scatter and
their reductions, the index_* family, masked_select and masked_scatter, take/take_along_dim and
put, with torch's checks, messages and node names.

Basic keys (ints, slices, None, Ellipsis) give views (the view nodes live in ``shape``, named as
torch names the last step: ``SelectBackward0``, ``SliceBackward0``, ...). Any tensor, list or
bool mask in the key makes it advanced: a copy (``IndexBackward0``) whose gradient accumulates
over repeated indices.

Every other op here reads or writes its input at one advanced key: ``a[key]`` selects,
``a[key] = v`` writes and ``xp.<ufunc>.at(a, key, v)`` reduces (repeated indices accumulate).
For scatter and scatter_reduce the key is the index with an open grid for the other dims
(gather, scatter_add and the max/min/sort-by-dim backward use the same positions in the input
read as 1-d: one flat index array is faster); for the index_* family it is
``(:, ..., :, index)``; for take/put it indexes the flattened input. Derivatives
use the three keyed ops (select at a key: ``IndexBackward0``, accumulate into zeros at a key:
``IndexBackwardBackward0``, zero at a key: ``IndexPutBackward0``), which differentiate into each
other, so double backward works. A 0-d input is handled as its 1-element 1-d view, as torch does.
"""

from __future__ import annotations

import math
import warnings

from .._backend import FLOAT_KINDS, from_numpy_dtype, host, is_array, ndarray, xp_of
from .._tensor import _CPP_NAMES, Tensor, _make, _wrap_dim
from ._op import Op, apply1, broadcast_error, write_out
from ._registry import register
from .arithmetic import _raise_not_broadcastable
from .comparison import where
from .inplace import copy_, inplace
from .shape import _BASIC_NODES, unbind, view_op

_BASIC = (int, slice, type(None), type(Ellipsis))


def normalize_key(key):
    """An array index for ``key``: tensors become arrays, and a 1-tuple is kept a tuple."""
    if not isinstance(key, tuple):
        if key.__class__ is list and _sequence_as_tuple(key):
            key = tuple(key)
        else:
            key = (key,)
    out = []
    for k in key:
        if isinstance(k, Tensor):
            d = k._data
            if d.dtype.kind in FLOAT_KINDS:
                raise IndexError("tensors used as indices must be long, int, byte or bool "
                                 "tensors")
            k = int(d) if d.ndim == 0 and d.dtype.kind in "iu" else d
        elif isinstance(k, host.integer):
            k = int(k)
        elif isinstance(k, bool):
            k = host.asarray(k)
        elif isinstance(k, slice):
            if k.step is not None and k.step <= 0:
                raise ValueError("slice step cannot be zero" if k.step == 0
                                 else "step must be greater than zero")
        elif isinstance(k, _BASIC):
            pass
        elif isinstance(k, (list, tuple, range)) or is_array(k):  # a sequence: one index tensor
            if not is_array(k):
                k = host.asarray(k if isinstance(k, range) else _tensors_to_ints(k))
            if k.dtype.kind in FLOAT_KINDS:
                if k.size:
                    raise IndexError("tensors used as indices must be long, int, byte or bool "
                                     "tensors")
                k = k.astype(host.int64)  # x[[]]: an empty index list
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or "
                             "byte Variables are valid indices (got "
                             f"{type(k).__name__})")
        out.append(k)
    return tuple(out)


_SEQUENCE_KEY_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error "
    "or a different result")


def _sequence_as_tuple(key: list) -> bool:
    """torch's (and old NumPy's) rule for ``x[list]``: a short list holding a tensor, a
    sequence, a slice, None or Ellipsis is a tuple of indices (with torch's deprecation
    warning); any other list is one index tensor."""
    if len(key) >= 32:
        return False
    for k in key:
        if isinstance(k, (Tensor, list, tuple, range, slice)) or k is None or k is Ellipsis:
            warnings.warn(_SEQUENCE_KEY_WARNING, UserWarning, stacklevel=4)
            return True
    return False


def _tensors_to_ints(seq: list) -> list:
    """A (nested) list index with any 0-d tensors in it as Python numbers."""
    return [k.item() if isinstance(k, Tensor) else
            _tensors_to_ints(k) if isinstance(k, (list, tuple)) else k for k in seq]


def keys_on(key: tuple, a) -> tuple:
    """``key`` with its host index arrays (from lists, or CPU tensors) moved to ``a``'s
    backend, as torch accepts CPU indices for a CUDA tensor."""
    if type(a) is ndarray:
        return key
    asarray = xp_of(a).asarray
    return tuple(asarray(k) if type(k) is ndarray else k for k in key)


def is_basic(key: tuple) -> bool:
    for k in key:
        if not isinstance(k, _BASIC):
            return False
    return True


def _check_basic(key: tuple, shape: tuple) -> None:
    """Torch's IndexError wording for out-of-range ints and too many indices."""
    dims_used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if dims_used > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    dim = 0
    for i, k in enumerate(key):
        if k is Ellipsis:
            dim += len(shape) - dims_used
            continue
        if k is None:
            continue
        if isinstance(k, int) and not -shape[dim] <= k < shape[dim]:
            raise IndexError(f"index {k} is out of bounds for dimension {dim} with size "
                             f"{shape[dim]}")
        dim += 1


def _basic_name(key: tuple) -> str:
    for k in reversed(key):
        if isinstance(k, int):
            return "SelectBackward0"
        if k is None:
            return "UnsqueezeBackward0"
        # (no ``k != slice(None)``: bounds may be 0-d tensors, whose == is elementwise)
        if isinstance(k, slice) and not (k.start is None and k.stop is None and k.step is None):
            return "SliceBackward0"
    if any(isinstance(k, slice) for k in key):
        return "SliceBackward0"
    return "AliasBackward0"


class IndexBackward0(Op):
    """x[advanced key]: a copy; d/dx = grad accumulated into zeros at the key."""

    __slots__ = ("key", "shape")

    def forward(self, a, key):
        self.shape, self.key = a.shape, key
        return a[key]

    def backward(self, grad):
        return apply1(IndexBackwardBackward0, grad, self.shape, self.key)


class IndexBackwardBackward0(Op):
    """Accumulate grad into zeros of ``shape`` at an advanced key (repeats add up)."""

    __slots__ = ("key",)

    def forward(self, g, shape, key):
        self.key = key
        return added_at(g, shape, key)

    def backward(self, grad):
        return apply1(IndexBackward0, grad, self.key)


class IndexPutBackward0(Op):
    """index_put(x, key, value) out of place: what ``x[mask] = v`` records."""

    __slots__ = ("key",)

    def forward(self, a, v, key):
        self.key = key
        out = a.copy()
        out[key] = v
        return out

    def backward(self, grad):
        ga = IndexPutBackward0.apply(grad, 0.0, params=(self.key,)) if self.needs_grad(0) \
            else None
        gv = apply1(IndexBackward0, grad, self.key) if self.needs_grad(1) else None
        return ga, gv


def _index_error(err: IndexError, shape, key: tuple) -> IndexError:
    """NumPy's IndexError for ``key`` reworded as torch words it."""
    msg = str(err)
    if "out of bounds for axis" in msg:
        msg = msg.replace("axis", "dimension")
    elif "too many indices" in msg:
        msg = f"too many indices for tensor of dimension {len(shape)}"
    elif "boolean index did not match" in msg:
        return _mask_mismatch(key, shape) or IndexError(msg)
    return IndexError(msg)


def _mask_mismatch(key: tuple, shape: tuple) -> IndexError | None:
    """torch's error for the first bool mask in ``key`` whose shape doesn't fit the dims it
    indexes. As in torch, ints, slices and None apply first: the mask is checked against
    that view, where it covers as many dims as it has."""
    def is_mask(k):
        return is_array(k) and k.dtype == host.bool_ and k.ndim
    # the view left by the basic part of the key: each array's dims kept whole
    basic = []
    for k in key:
        if is_array(k):  # a 0-d bool (x[True]) adds a dim, as None does
            basic += [slice(None)] * k.ndim if is_mask(k) else [None if k.ndim == 0 else
                                                                 slice(None)]
        else:
            basic.append(k)
    try:
        view = host.broadcast_to(host.empty((), host.bool_), shape)[tuple(basic)].shape
    except IndexError:
        return None
    rest = [k for k in key if not isinstance(k, int)]  # ints leave no dim in the view
    width = [k.ndim if is_mask(k) else 0 if k is Ellipsis else 1 for k in rest]
    dim = 0
    for k, w in zip(rest, width):
        if k is Ellipsis:
            dim += len(view) - sum(width)
        elif is_mask(k):
            for j, size in enumerate(k.shape):
                if dim + j >= len(view) or view[dim + j] != size:
                    return IndexError(f"The shape of the mask {list(k.shape)} at index {j} does "
                                      f"not match the shape of the indexed tensor {list(view)} "
                                      f"at index {dim + j}")
        dim += w
    return None


def _fast_basic(key, shape: tuple):
    """The view node for ``key`` when it is an int, a slice, or a tuple of them in bounds
    (steps None or positive ints); None otherwise (``getitem``'s general path then checks,
    words errors and names the node)."""
    if key.__class__ is not tuple:
        key = (key,)
    if len(key) > len(shape):
        return None
    name = None
    for k, n in zip(key, shape):
        cls = k.__class__
        if cls is int:
            if not -n <= k < n:
                return None
            name = "SelectBackward0"
        elif cls is slice:
            step = k.step
            if step is None:
                if k.start is not None or k.stop is not None:
                    name = "SliceBackward0"
            elif step.__class__ is int and step > 0:
                name = "SliceBackward0"
            else:
                return None
        else:
            return None
    return _BASIC_NODES[name or ("SliceBackward0" if key else "AliasBackward0")], key


@register(method=False, export=False, operators=("__getitem__",))
def getitem(input: Tensor, key) -> Tensor:
    """``Tensor.__getitem__`` with torch's semantics and gradients."""
    shape = input._data.shape
    # NOTE: ints and slices (a DataLoader's ``t[i]``) skip normalize_key and the general
    # checks: ``t[0]`` of (4, 5) 2.8 -> ~2.0 µs, ``t[:, 1:]`` 3.2 -> ~2.2 (torch 0.9, 1.7)
    cls = key.__class__
    if cls is int or cls is slice or cls is tuple:
        fast = _fast_basic(key, shape)
        if fast is not None:
            return view_op(fast[0], input, fast[1])
    key = normalize_key(key)
    if is_basic(key):
        _check_basic(key, shape)
        return view_op(_BASIC_NODES[_basic_name(key)], input, key)
    try:
        return apply1(IndexBackward0, input, keys_on(key, input._data))
    except IndexError as e:
        raise _index_error(e, shape, key) from None


@register(method=False, export=False, operators=("__setitem__",))
def setitem(input: Tensor, key, value) -> None:
    """``Tensor.__setitem__``: an in-place copy into a view (basic key) or an index_put."""
    key = normalize_key(key)
    if not isinstance(value, Tensor):
        value = value if isinstance(value, (int, float, bool)) else _make(
            xp_of(input._data).asarray(value, dtype=input._data.dtype))
    if is_basic(key):
        _check_basic(key, input._data.shape)
        copy_(getitem(input, key), value)
        return
    inplace(input, index_put_op, keys_on(key, input._data), value)


def index_put_op(input: Tensor, key, value) -> Tensor:
    try:
        return IndexPutBackward0.apply(input, value, params=(key,))
    except IndexError as e:
        raise _index_error(e, input._data.shape, key) from None
    except ValueError as e:
        shape = value._data.shape if isinstance(value, Tensor) else host.shape(value)
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(shape)}"
                           f" cannot be broadcast to indexing result: {e}") from None


@register(inplace=True)
def index_put(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    if accumulate:
        raise NotImplementedError("index_put(accumulate=True) is not supported by ember yet")
    return index_put_op(input, keys_on(normalize_key(tuple(indices)), input._data), values)


class MaskedFillBackward0(Op):
    """masked_fill(input, mask, value): d/dinput = grad with masked positions zeroed."""

    __slots__ = ("mask",)

    def forward(self, a, mask, value):
        self.mask = mask
        xp = xp_of(a)
        return xp.where(mask, xp.asarray(value, dtype=a.dtype), a)

    def backward(self, grad):
        return apply1(MaskedFillBackward0, grad, self.mask, 0)


class MaskedFillBackward1(Op):
    """masked_fill(input, mask, value: 0-d Tensor): value gets the sum of grad where mask."""

    __slots__ = ("mask",)

    def forward(self, a, value, mask):
        self.mask = mask
        return xp_of(a).where(mask, value.astype(a.dtype), a)

    def backward(self, grad):
        mask = _make(self.mask)
        return (apply1(MaskedFillBackward0, grad, self.mask, 0) if self.needs_grad(0) else None,
                where(mask, grad, 0.0).sum() if self.needs_grad(1) else None)


@register(inplace=True)
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``torch.masked_fill``: value where mask is True."""
    if not isinstance(mask, Tensor) or mask._data.dtype != host.bool_:
        name = _CPP_NAMES[mask.dtype.name] if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{name}")
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._data.ndim} dimension(s).")
    try:
        if isinstance(value, Tensor):  # a tensor value gets a gradient too
            return MaskedFillBackward1.apply(input, value, params=(mask._data,))
        return apply1(MaskedFillBackward0, input, mask._data, value)
    except ValueError:
        _raise_not_broadcastable(mask, input)


@register
def nonzero(input: Tensor, *, as_tuple: bool = False):
    """``torch.nonzero``: (n, ndim) int64 indices, or a tuple of 1-D index tensors."""
    d = input._data
    if as_tuple:  # views of one index matrix, as in torch (a 0-d input counts as 1-d)
        d = d.reshape(1) if d.ndim == 0 else d
        return unbind(_make(xp_of(d).argwhere(d).astype(host.int64)), 1)
    return _make(xp_of(d).argwhere(d).astype(host.int64))


# --------------------------------------------------------------------------- keyed helpers

def _is_full(k) -> bool:
    return isinstance(k, slice) and k.start is None and k.stop is None and k.step is None


def _row_key(key: tuple, shape: tuple):
    """For a key of full slices, then integer arrays, then full slices (an Ellipsis standing
    for full slices): (P, rows, num, Q) with ``out[key] += g`` as
    ``out.reshape(P, num, Q)[:, rows[i]] += g.reshape(P, len(rows), Q)[:, i]``. None for any
    other key."""
    at = [i for i, k in enumerate(key) if k is Ellipsis]
    if at:
        if len(at) > 1:
            return None
        i = at[0]
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        return None
    m = 0
    while m < len(key) and _is_full(key[m]):
        m += 1
    j = m
    while j < len(key) and is_array(key[j]) and key[j].dtype.kind in "iu":
        j += 1
    if j == m or not all(_is_full(k) for k in key[j:]):
        return None
    rows = None
    for a, size in zip(key[m:j], shape[m:j]):
        signed = a.dtype.kind == "i"
        a = a.astype(host.intp, copy=False)
        if signed:  # negative indices count from the end
            a = xp_of(a).where(a < 0, a + size, a)
        rows = a if rows is None else rows * size + a  # (broadcasts as the key's arrays do)
    return (math.prod(shape[:m]), rows.reshape(-1), math.prod(shape[m:j]),
            math.prod(shape[j:]))


def _add_rows(out, g, rows, zeros: bool) -> None:
    """``out[:, rows[i]] += g[:, i]`` in place for each i, repeats accumulating (``out``:
    (p, num, q), ``g``: (p, n, q); ``zeros``: out holds only zeros).

    The rows are sorted stably by target. If no run of equal targets is longer than 8, the
    rows are added in layers: the first of each run, then the second, ..., each layer a
    vectorised add at distinct rows, so each target gets its rows in index order, as torch's
    sequential loop. Longer runs are summed in pairwise steps (step 1 adds each odd element of
    a run into the even one before it, step 2 the sums two apart, ...): log2(longest run)
    steps, equal to torch's sequential sums within rounding.
    """
    xp = xp_of(g)
    n = g.shape[1]
    order = rows.argsort(kind="stable")
    s = rows[order]
    first = xp.empty(n, dtype=bool)
    first[0] = True
    xp.not_equal(s[1:], s[:-1], out=first[1:])
    starts = xp.flatnonzero(first)
    if starts.size == n:  # no target repeats
        if zeros:
            out[:, rows] = g
        else:
            out[:, rows] += g
        return
    counts = xp.diff(starts, append=n)
    longest = int(counts.max())
    if longest <= 8:
        for k in range(longest):
            at = starts if k == 0 else starts[counts > k] + k  # positions in sorted order
            part = g.take(order[at], axis=1)
            if zeros and k == 0:
                out[:, s[at]] = part
            else:
                out[:, s[at]] += part
        return
    r = g.take(order, axis=1)
    rank = xp.arange(n) - xp.repeat(starts, counts)  # position within its run
    after = xp.repeat(counts, counts) - rank - 1  # run elements after this one
    step = 1
    while step < longest:
        pos = xp.flatnonzero(((rank & (2 * step - 1)) == 0) & (after >= step))
        r[:, pos] += r[:, pos + step]
        step *= 2
    if zeros:
        out[:, s[starts]] = r[:, starts]
    else:
        out[:, s[starts]] += r[:, starts]


def add_at(out, key, g, zeros: bool = False):
    """``out`` (written in place, and returned; ``zeros``: it holds only zeros) with ``g``
    added at the advanced ``key``, repeats accumulating: ``xp.add.at(out, key, g)``, as
    torch's ``index_put_(accumulate=True)``.

    NOTE: NumPy's ``add.at`` on a multi-dim array costs ~1 µs a row it adds (2,277 µs for
    2,048 rows of 128 float32 into (1000, 128), 285 µs for 64 rows of 512 into (256, 512));
    on host arrays:
    * a key without integer arrays repeats no position: an in-place add;
    * integer arrays after full slices select rows: ``add.at`` on the flat index of every
      element is NumPy's fast case (~1.8 ns an element: 456 and 65 µs there), and rows of 64
      or more elements, 32768 in all, are faster added by ``_add_rows`` (282 and 45 µs, the
      pairwise sums alone 282 and 58; 256 rows of 512 into (256, 512): 92, pairwise 116;
      but 43 against 16 µs for 200 rows of 32; and it needs no flat index, of 8 bytes an
      element).
    Traced arrays (``ember.compile``) keep ``add.at``: ``_add_rows`` reads its step count from
    the data.
    """
    xp = xp_of(g)
    if out.ndim == 1 and len(key) == 1 and is_array(key[0]) and key[0].dtype.kind in "iu":
        xp.add.at(out, key[0], g)  # NumPy's fast case already (gather/scatter's flat keys)
        return out
    if type(g) is ndarray and type(out) is ndarray and g.size:
        if not any(is_array(k) and k.dtype.kind != "b" for k in key):
            # only slices, ints, None and masks: every position once
            if zeros:
                out[key] = g
            else:
                out[key] += g
            return out
        rows = _row_key(key, out.shape) if out.flags.c_contiguous else None
        if rows is not None:
            p, rows, num, q = rows
            n = rows.size
            if p == q == 1 or (q < 64 or n * q < 32768) and n * p * q <= 1 << 22:
                if p > 1:
                    rows = (xp.arange(0, p * num, num)[:, None] + rows).reshape(-1)
                if q > 1:
                    rows = (rows[:, None] * q + xp.arange(q)).reshape(-1)
                xp.add.at(out.reshape(-1), rows, g.reshape(-1))
                return out
            _add_rows(out.reshape(p, num, q), g.reshape(p, n, q), rows, zeros)
            return out
    xp.add.at(out, key, g)
    return out


def added_at(g, shape: tuple, key):
    """Zeros of ``shape`` with ``g`` added at the advanced ``key``, repeats accumulating
    (``add_at`` into zeros)."""
    return add_at(xp_of(g).zeros(shape, dtype=g.dtype), key, g, zeros=True)


def _select_at(g: Tensor, key) -> Tensor:
    """``g[key]`` (differentiable: its derivative accumulates at the key)."""
    return apply1(IndexBackward0, g, key)


def _add_at(g: Tensor, shape: tuple, key) -> Tensor:
    """Zeros of ``shape`` with ``g`` added at ``key``, repeats accumulating."""
    return apply1(IndexBackwardBackward0, g, shape, key)


def _zero_at(g: Tensor, key) -> Tensor:
    """``g`` with the elements at ``key`` set to zero."""
    return IndexPutBackward0.apply(g, 0.0, params=(key,))


def _nd(a):
    """A 0-d array as its 1-element 1-d view (torch treats 0-d inputs so here)."""
    return a.reshape(1) if a.ndim == 0 else a


def _ndt(t: Tensor) -> Tensor:
    return t.reshape(1) if t._data.ndim == 0 else t


def _grid_key(index, dim: int) -> tuple:
    """The key of gather/scatter: ``index`` at ``dim``, an open grid over the other dims."""
    xp, nd = xp_of(index), index.ndim
    key = [xp.arange(n).reshape((1,) * i + (n,) + (1,) * (nd - i - 1))
           for i, n in enumerate(index.shape)]  # as np.ogrid
    key[dim] = index
    return tuple(key)


def _flat_key(index, dim: int, shape: tuple) -> tuple:
    """The key of gather/scatter on an array of ``shape`` read as 1-d: ``(flat,)``, 1-d, with
    the position in the C-order flattening of each element ``_grid_key`` selects (``index``
    has ``shape``'s number of dims; its entries are non-negative).

    NOTE: a 1-d key, not the open grid: NumPy selects at one index array faster (gather of
    (256, 8) from (256, 512): 7.1 -> 1.8 µs), and accumulates into a 1-d array at NumPy's fast
    ``add.at`` case (gather's backward there, 75 -> ~10 µs).
    """
    xp = xp_of(index)
    nd = index.ndim
    dim = dim % nd if nd else 0
    stride = math.prod(shape[dim + 1:])
    flat = index.astype(host.intp, copy=False)
    flat = flat * stride if stride != 1 else flat
    for i, n in enumerate(index.shape):
        stride = math.prod(shape[i + 1:])
        if i != dim and n > 1 and stride:
            flat = flat + xp.arange(0, n * stride, stride).reshape(
                (1,) * i + (n,) + (1,) * (nd - i - 1))
    return (flat.reshape(-1),)  # (each term above broadcasts to index's shape)


def _dim_key(index, dim: int) -> tuple:
    """The key of the index_* family: ``index`` along ``dim``, whole slices elsewhere."""
    return (slice(None),) * dim + (index,)


def _scalar_name(arr) -> str:
    return from_numpy_dtype(arr.dtype)._legacy[:-6]


def _index_array(index, what: str = "index"):
    if not isinstance(index, Tensor):
        raise TypeError(f"{what} must be a Tensor, not {type(index).__name__}")
    return index._data


def _first_out_of_bounds(index, size: int, allow_negative: bool):
    """The first index (in C order) outside ``[0, size)`` (or ``[-size, size)``), or None."""
    lo = -size if allow_negative else 0
    # (min and max: two passes, but cheaper than a mask and its any(), 3.6 -> 2.7 µs)
    if not index.size or (int(index.min()) >= lo and int(index.max()) < size):
        return None
    bad = (index < lo) | (index >= size)
    return int(index.ravel()[bad.ravel().argmax()])


def _check_bounds(index, size: int, dim: int, exc=RuntimeError, prefix: str = "",
                  allow_negative: bool = False) -> None:
    v = _first_out_of_bounds(index, size, allow_negative)
    if v is not None:
        raise exc(f"{prefix}index {v} is out of bounds for dimension {dim} with size {size}")


# --------------------------------------------------------------------------- gather / scatter

class GatherBackward0(Op):
    """gather(input, dim, index): d/dinput = grad accumulated back at the index (also the
    derivative of ``ValueSelectingReductionBackward0``, as in torch). ``key``: the
    ``_flat_key`` of the index into input read as 1-d."""

    __slots__ = ("key", "shape")

    def forward(self, a, key, out_shape):
        self.shape, self.key = a.shape, key
        return a.reshape(-1)[key].reshape(out_shape)

    def backward(self, grad):
        size = math.prod(self.shape)
        return _add_at(grad.reshape(-1), (size,), self.key).reshape(self.shape)


class ValueSelectingReductionBackward0(Op):
    """Add grad at ``idx`` along ``dim`` into zeros of ``shape`` (backward of max/min/cummax
    by dim); repeated indices accumulate. ``distinct``: no slice of ``idx`` along ``dim``
    repeats an index (sort, topk, max by dim), so the grad is put, as torch's ``scatter``."""

    __slots__ = ("idx", "key")

    def forward(self, g, shape, dim, idx, distinct=False):
        self.idx = idx
        self.key = key = _flat_key(_nd(idx), dim, shape or (1,))
        if not len(shape):
            return g.copy()
        size = math.prod(shape)
        if distinct:
            out = xp_of(g).zeros(size, dtype=g.dtype)
            out[key] = g.reshape(-1)
            return out.reshape(shape)
        return added_at(g.reshape(-1), (size,), key).reshape(shape)

    def backward(self, grad):
        return apply1(GatherBackward0, grad, self.key, self.idx.shape)


def _scatter_into(grad: Tensor, shape: tuple, dim: int, idx) -> Tensor:
    """Zeros of ``shape`` with ``grad`` put at the distinct indices ``idx`` along ``dim``."""
    return apply1(ValueSelectingReductionBackward0, grad, shape, dim, idx, True)


class ScatterBackward0(Op):
    """scatter(input, dim, index, src): the src elements at the index replace input's."""

    __slots__ = ("key",)

    def forward(self, a, src, key, src_part=...):
        self.key = key
        out = _nd(a).copy()
        out[key] = _nd(src)[src_part]
        return out.reshape(a.shape)

    def backward(self, grad):
        g = _ndt(grad)
        return (_zero_at(g, self.key) if self.needs_grad(0) else None,
                _select_at(g, self.key) if self.needs_grad(1) else None)


class ScatterBackward1(Op):
    """scatter(input, dim, index, value): ``value`` at the index."""

    __slots__ = ("key",)

    def forward(self, a, key, value):
        self.key = key
        out = _nd(a).copy()
        out[key] = value
        return out.reshape(a.shape)

    def backward(self, grad):
        return _zero_at(_ndt(grad), self.key)


class ScatterAddBackward0(Op):
    """scatter_add(input, dim, index, src): src added at the index (repeats accumulate).
    ``key``: the ``_flat_key`` of the index into input read as 1-d."""

    __slots__ = ("key", "part_shape")

    def forward(self, a, src, key, src_part):
        self.key, self.part_shape = key, tuple(p.stop for p in src_part)
        # NOTE: 1-d, at the flat key: (256, 8) into (256, 512) float32, 56 -> 35 µs (torch 18)
        flat = a.reshape(-1).copy()  # (a copy of the 1-d view: add_at writes into it)
        return add_at(flat, key, _nd(src)[src_part].reshape(-1)).reshape(a.shape)

    def backward(self, grad):
        if not self.needs_grad(1):
            return grad, None
        return grad, _select_at(grad.reshape(-1), self.key).reshape(self.part_shape)


class _NotDifferentiable(Op):
    """A result torch records with a ``NotImplemented`` node: backward raises its error."""

    __slots__ = ("what",)

    def forward(self, a, *rest):
        *_, fn, what = rest
        self.what = what
        return fn()

    def backward(self, grad):
        raise RuntimeError(f"derivative for {self.what} is not implemented")


NotImplementedBackward = type("NotImplemented", (_NotDifferentiable,), {"__slots__": ()})

_IDENTITY = {"sum": 0, "mean": 0, "prod": 1}
_UFUNC = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum",
          "amin": "minimum", "max": "maximum", "min": "minimum"}


def _reduce_at(a, src, key, reduce: str, include_self: bool):
    """``a`` with ``src`` reduced into it at ``key`` (a copy; 0-d already made 1-d)."""
    xp = xp_of(a)
    out = a.copy()
    if not include_self:
        if reduce in _IDENTITY:
            ident = _IDENTITY[reduce]
        elif a.dtype.kind in FLOAT_KINDS:
            ident = math.inf if reduce.endswith("min") else -math.inf
        else:
            info = host.iinfo(a.dtype) if a.dtype.kind in "iu" else None
            ident = (info.max if reduce.endswith("min") else info.min) if info else \
                reduce.endswith("min")
        out[key] = ident
    with xp.errstate(all="ignore"):
        getattr(xp, _UFUNC[reduce]).at(out, key, src)
        if reduce == "mean":
            count = xp.full(a.shape, 1 if include_self else 0, dtype=host.int64)
            xp.add.at(count, key, 1)
            count[count == 0] = 1
            if out.dtype.kind in FLOAT_KINDS:
                out = (out / count).astype(out.dtype)
            else:
                out = xp.floor_divide(out, count).astype(out.dtype)
    return out


class ScatterReduceBackward0(Op):
    """scatter_reduce(input, dim, index, src, reduce, include_self): derivative as torch's
    ``scatter_reduce_backward`` (prod handles zeros; amax/amin share grad among ties)."""

    __slots__ = ("include_self", "key", "reduce", "src_part")
    save_inputs = (0, 1)
    save_output = True

    def forward(self, a, src, key, src_part, reduce, include_self):
        self.key, self.reduce, self.include_self, self.src_part = key, reduce, include_self, \
            src_part
        s = _nd(src) if src_part is None else _nd(src)[src_part]
        return _reduce_at(_nd(a), s, key, reduce, include_self).reshape(a.shape)

    def _rereduce(self, a: Tensor, src: Tensor) -> Tensor:
        """The same reduction on other tensors (differentiable), at the same key."""
        return type(self).apply(a, src, params=(self.key, self.src_part, self.reduce,
                                                self.include_self))

    def backward(self, grad):
        self_t, src = self.saved()
        result = _ndt(self.saved_output())
        key, reduce = self.key, self.reduce
        g = _ndt(grad)
        x, s = _ndt(self_t), _ndt(src)
        part = self.src_part
        if part is not None and s._data.shape != tuple(p.stop for p in part):
            s = _select_at(s, part)  # src larger than index: only its first part is used
        shape = x._data.shape
        if reduce not in _SCATTER_REDUCES:  # torch's forward also takes 'max'/'min' ...
            raise RuntimeError("Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', "
                               f"'amin' but got {reduce}.")  # ... but not its derivative
        if reduce == "sum":
            g_self, g_src = g, _select_at(g, key)
        elif reduce == "mean":
            xp = xp_of(g._data)
            n = xp.full(shape, 1.0 if self.include_self else 0.0, dtype=g._data.dtype)
            xp.add.at(n, key, 1.0)
            n[n == 0] = 1
            n = _make(n)
            g_self = g / n
            g_src = _select_at(g, key) / _select_at(n, key)
        elif reduce == "prod":
            masked_self = x.masked_fill(x == 0, 1)
            g_self = g * self._rereduce(masked_self, s) / masked_self
            src_zero = s == 0
            xp = xp_of(g._data)
            zeros_at = xp.zeros(shape, dtype=g._data.dtype)
            xp.add.at(zeros_at, key, src_zero._data.astype(zeros_at.dtype))
            single_zero = src_zero & _make(zeros_at[key] == 1)
            masked_src_result = self._rereduce(x, s.masked_fill(single_zero, 1))
            g_src = where(single_zero, _select_at(g * masked_src_result, key),
                          _select_at(g * result, key) / s.masked_fill(src_zero, 1))
        else:  # amax / amin: ties share the gradient evenly
            value = _select_at(result, key)
            self_is = (x == result).to(g.dtype)
            src_is = (s == value).to(g.dtype)
            n = self_is + _add_at(src_is, shape, key)
            g_dist = g / n
            g_self = self_is * g_dist
            g_src = src_is * _select_at(g_dist, key)
        if not self.include_self:
            g_self = _zero_at(g_self, key)
        return (g_self if self.needs_grad(0) else None,
                g_src if self.needs_grad(1) else None)


def _check_scatter_args(name: str, input: Tensor, dim: int, index, src=None,
                        flat: bool = False) -> tuple:
    """torch's checks for gather/scatter (dtype, dims, sizes, bounds); returns (dim, key,
    src_part) for the 1-d view of a 0-d input (``flat``: the ``_flat_key`` into input read
    as 1-d)."""
    idx = _index_array(index)
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    op = "gather" if name == "gather" else "scatter"
    if idx.dtype not in (host.int64, host.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    if src is not None and src._data.dtype != a.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    a_shape, i_shape = _nd(a).shape, _nd(idx).shape
    if len(i_shape) != len(a_shape):
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           f"{'input' if op == 'gather' else 'self'} tensor")
    s_shape = None
    if src is not None:
        s_shape = _nd(src._data).shape
        if len(s_shape) != len(i_shape):
            raise RuntimeError("Index tensor must have the same number of dimensions as src "
                               "tensor")
    if idx.size:
        for k in range(len(i_shape)):
            if k != d and i_shape[k] > a_shape[k]:
                if op == "gather":
                    raise RuntimeError(f"Size does not match at dimension {k} expected index "
                                       f"{list(idx.shape)} to be no larger than self "
                                       f"{list(a.shape)} apart from dimension {d}")
                break
            if s_shape is not None and i_shape[k] > s_shape[k]:
                break
        else:
            k = None
        if k is not None:
            msg = (f"Expected index {list(idx.shape)} to be no larger than self {list(a.shape)} "
                   f"apart from dimension {d}")
            if s_shape is not None:
                msg += f" and to be no larger size than src {list(src._data.shape)}"
            raise RuntimeError(msg)
        _check_bounds(idx, a_shape[d], d)
    idx = _nd(idx)
    src_part = None if s_shape is None else tuple(slice(n) for n in idx.shape)
    return d, _flat_key(idx, d, a_shape) if flat else _grid_key(idx, d), src_part


@register
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False,
           out: Tensor | None = None) -> Tensor:
    """``torch.gather``: ``out[i][j] = input[index[i][j]][j]`` (dim 0); sparse_grad ignored."""
    _, key, _ = _check_scatter_args("gather", input, dim, index, flat=True)
    result = apply1(GatherBackward0, input, key, index._data.shape)
    return _write_out(out, result)


def _write_out(out, result, name: str | None = None):
    """``out=``; torch refuses an ``out`` of another dtype (``name``: the op, for the
    wording of index_select/masked_select)."""
    if out is None:
        return result
    have, want = out._data.dtype, result._data.dtype
    if have != want:
        if name:
            raise RuntimeError(f"{name}(): self and result must have the same scalar type")
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES[want.name]}, but got "
                           f"{_CPP_NAMES[have.name]} instead")
    return write_out(out, result)


@register(inplace=True)
def scatter(input: Tensor, dim: int, index: Tensor, src=None, value=None, *,
            reduce: str | None = None) -> Tensor:
    """``torch.scatter``: ``src`` (a tensor) or ``value`` (a number) written at the index.

    ``reduce='add'/'multiply'`` (torch's legacy form) accumulates instead; torch records it
    as not differentiable (a ``NotImplemented`` node), and so does ember.
    """
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    if isinstance(value, Tensor):
        value = value.item()
    _, key, src_part = _check_scatter_args("scatter", input, dim, index, src)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if src is not None:
            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated "
                          "and will be removed in a future PyTorch release. Use "
                          "torch.scatter_reduce instead for more reduction options.",
                          UserWarning, stacklevel=2)
        a = input._data
        xp = xp_of(a)
        ufunc = xp.add if reduce == "add" else xp.multiply

        def run():
            out = _nd(a).copy()
            v = _nd(src._data)[src_part] if src is not None else xp.asarray(value, a.dtype)
            ufunc.at(out, key, v)
            return out.reshape(a.shape)
        return NotImplementedBackward.apply(input, src, params=(run, "aten::scatter"))
    if src is not None:
        return ScatterBackward0.apply(input, src, params=(key, src_part))
    return apply1(ScatterBackward1, input, key, value)


@register(inplace=True)
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``torch.scatter_add``: src added into input at the index; repeated indices add up."""
    _, key, src_part = _check_scatter_args("scatter_add", input, dim, index, src, flat=True)
    return ScatterAddBackward0.apply(input, src, params=(key, src_part))


_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@register(inplace=True)
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """``torch.scatter_reduce``: src reduced into input at the index with ``reduce`` ('sum',
    'prod', 'mean', 'amax', 'amin'); ``include_self=False`` leaves input's values out."""
    if reduce not in _SCATTER_REDUCES and reduce not in ("max", "min"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    _, key, src_part = _check_scatter_args("scatter_reduce", input, dim, index, src)
    return ScatterReduceBackward0.apply(input, src,
                                        params=(key, src_part, reduce, bool(include_self)))


# --------------------------------------------------------------------------- index_* family

class IndexSelectBackward0(Op):
    """index_select(input, dim, index): d/dinput = grad accumulated back at the index."""

    __slots__ = ("key", "sel_shape", "shape")

    def forward(self, a, key, out_shape):
        a = _nd(a)
        sel = a[key]
        self.shape, self.key, self.sel_shape = a.shape, key, sel.shape
        return sel.reshape(out_shape)

    def backward(self, grad):
        return _add_at(grad.reshape(self.sel_shape), self.shape, self.key)


class IndexAddBackward0(Op):
    """index_add(input, dim, index, source, alpha): alpha * source added along dim."""

    __slots__ = ("alpha", "key")

    def forward(self, a, src, key, alpha):
        self.key, self.alpha = key, alpha
        s = _nd(src)
        # NOTE: ``add_at``'s row sums, not ``add.at``: 256 rows of 512 float32 into
        # (256, 512), 1,151 -> 83 µs (torch 37)
        out = add_at(_nd(a).copy(), key, s if alpha == 1 else (s * alpha).astype(s.dtype))
        return out.reshape(a.shape)

    def backward(self, grad):
        if not self.needs_grad(1):
            return grad, None
        g_src = _select_at(_ndt(grad), self.key)
        return grad, g_src if self.alpha == 1 else g_src * self.alpha


class IndexCopyBackward0(ScatterBackward0):
    """index_copy(input, dim, index, source): source's slices replace input's along dim."""

    __slots__ = ()


class IndexFillBackward0(ScatterBackward1):
    """index_fill(input, dim, index, value: number)."""

    __slots__ = ()


class IndexFillBackward1(Op):
    """index_fill(input, dim, index, value: 0-d tensor): value gets the filled slices' grad."""

    __slots__ = ("key",)

    def forward(self, a, value, key):
        self.key = key
        out = _nd(a).copy()
        out[key] = value.astype(a.dtype)
        return out.reshape(a.shape)

    def backward(self, grad):
        g = _ndt(grad)
        return (_zero_at(g, self.key) if self.needs_grad(0) else None,
                _select_at(g, self.key).sum() if self.needs_grad(1) else None)


class IndexReduceBackward0(ScatterReduceBackward0):
    """index_reduce(input, dim, index, source, reduce, include_self): as scatter_reduce,
    with source's slices along dim reduced into input's."""

    __slots__ = ()


def _check_index_dtype(idx, name: str) -> None:
    if idx.dtype not in (host.int64, host.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: "
                           f"{_scalar_name(idx)}")


def _check_source(name: str, input: Tensor, d: int, idx, source: Tensor) -> None:
    """index_add/index_reduce's checks of source against input and the index."""
    if idx.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, but got dim: {idx.ndim} "
                         f"with type: {_scalar_name(idx)} and size: {list(idx.shape)}")
    a, s = input._data, source._data
    n_src = s.shape[d] if s.ndim else 1
    if idx.size != n_src:
        raise RuntimeError(f"{name}(): Number of indices ({idx.size}) should be equal to "
                           f"source.size(dim): ({n_src}), for dim: {d}")
    if s.dtype != a.dtype:
        raise RuntimeError(f"{name}(): self ({_scalar_name(a)}) and source ({_scalar_name(s)}) "
                           "must have the same scalar type")
    if a.ndim != s.ndim or any(a.shape[k] != s.shape[k] for k in range(min(a.ndim, s.ndim)) if k != d):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(a.shape)} source.shape "
                           f"= {list(s.shape)}")


@register
def index_select(input: Tensor, dim: int, index: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.index_select``: the slices of input along ``dim`` at a 1-d (or 0-d) index."""
    idx = _index_array(index)
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    if idx.dtype not in (host.int64, host.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx = idx.reshape(-1)
    if a.ndim == 0 and idx.size != 1:
        raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                           f"{idx.size} value(s)")
    if _first_out_of_bounds(idx, _nd(a).shape[d], False) is not None:
        raise IndexError("index out of range in self")
    shape = a.shape[:d] + (idx.size,) + a.shape[d + 1:] if a.ndim else ()
    return _write_out(out, apply1(IndexSelectBackward0, input, _dim_key(idx, d), shape),
                      "index_select")


@register(inplace=True)
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """``torch.index_add``: ``alpha * source`` added to input's slices along dim at the index
    (repeated indices accumulate)."""
    idx = _index_array(index)
    d = _wrap_dim(dim, input._data.ndim)
    _check_index_dtype(idx, "index_add_")
    _check_source("index_add_", input, d, idx, source)
    idx = idx.reshape(-1)
    _check_bounds(idx, _nd(input._data).shape[d], d)
    return IndexAddBackward0.apply(input, source, params=(_dim_key(idx, d), alpha))


@register(inplace=True)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``torch.index_copy``: source's slices copied into input along dim at the index."""
    idx = _index_array(index)
    a, s = input._data, source._data
    d = _wrap_dim(dim, a.ndim)
    if idx.dtype != host.int64:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{_scalar_name(idx)}")
    if idx.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {idx.ndim})")
    if a.ndim and s.ndim and a.ndim != s.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({s.ndim}), "
                         f"destination dimensionality ({a.ndim})")
    n_src = s.shape[d] if s.ndim else 1
    if idx.size != n_src:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({n_src})")
    if s.dtype != a.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {_scalar_name(a)} and (source) {_scalar_name(s)}")
    a_rest = a.shape[:d] + a.shape[d + 1:]
    s_rest = s.shape[:d] + s.shape[d + 1:]
    if a.ndim and s.ndim and a_rest != s_rest:
        raise RuntimeError("index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {' '.join(map(str, a_rest))} at "
                           f"dimension {d} and source slice shape: "
                           f"{' '.join(map(str, s_rest))} at dimension 0.")
    idx = idx.reshape(-1)
    _check_bounds(idx, _nd(a).shape[d], d, IndexError, "index_copy_(): ")
    return IndexCopyBackward0.apply(input, source, params=(_dim_key(idx, d),))


@register(inplace=True)
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """``torch.index_fill``: input's slices along dim at the index set to ``value`` (a number
    or a 0-d tensor, which then gets a gradient)."""
    idx = _index_array(index)
    d = _wrap_dim(dim, input._data.ndim)
    if idx.dtype != host.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if idx.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._data.ndim} dimension(s).")
    size = _nd(input._data).shape[d]
    idx = idx.reshape(-1)
    _check_bounds(idx, size, d, IndexError, allow_negative=True)
    xp = xp_of(idx)
    key = _dim_key(xp.unique(xp.where(idx < 0, idx + size, idx)), d)  # each slice once
    if isinstance(value, Tensor):
        return IndexFillBackward1.apply(input, value, params=(key,))
    return apply1(IndexFillBackward0, input, key, value)


@register(inplace=True)
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """``torch.index_reduce``: source's slices along dim reduced into input's at the index with
    ``reduce`` ('prod', 'mean', 'amax', 'amin'); torch marks it beta and warns so."""
    warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning,
                  stacklevel=2)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    idx = _index_array(index)
    d = _wrap_dim(dim, input._data.ndim)
    _check_index_dtype(idx, "index_reduce_")
    _check_source("index_reduce_", input, d, idx, source)
    idx = idx.reshape(-1)
    if _first_out_of_bounds(idx, _nd(input._data).shape[d], False) is not None:
        raise IndexError("index out of range in self")
    return IndexReduceBackward0.apply(input, source, params=(_dim_key(idx, d), None, reduce,
                                                             bool(include_self)))


# --------------------------------------------------------------------------- masked

class MaskedSelectBackward0(Op):
    """masked_select(input, mask): the elements where mask (both broadcast) is True, 1-d."""

    __slots__ = ("key", "shape")

    def forward(self, a, mask):
        xp, shape = xp_of(a), host.broadcast_shapes(a.shape, mask.shape)
        self.shape, self.key = shape, (xp.broadcast_to(mask, shape),)
        return xp.broadcast_to(a, shape)[self.key]

    def backward(self, grad):
        return _add_at(grad, self.shape, self.key)  # the engine sums broadcast dims back


class MaskedScatterBackward0(Op):
    """masked_scatter(input, mask, source): source's first elements, in order, where mask."""

    __slots__ = ("key", "src_shape")

    def forward(self, a, src, mask):
        xp, shape = xp_of(a), host.broadcast_shapes(a.shape, mask.shape)
        key = (xp.broadcast_to(mask, shape),)
        self.key, self.src_shape = key, src.shape
        out = xp.broadcast_to(a, shape).copy()
        out[key] = src.reshape(-1)[:int(xp.count_nonzero(key[0]))]
        return out

    def backward(self, grad):
        g_src = None
        if self.needs_grad(1):
            picked = _select_at(grad, self.key)
            n = picked._data.shape[0]
            size = math.prod(self.src_shape)
            arange = xp_of(picked._data).arange
            g_src = _add_at(picked, (size,), (arange(n),)).reshape(self.src_shape)
        return (_zero_at(grad, self.key) if self.needs_grad(0) else None), g_src


def _mask_array(mask, input: Tensor):
    return mask._data if isinstance(mask, Tensor) else xp_of(input._data).asarray(mask)


@register
def masked_select(input: Tensor, mask: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.masked_select``: a 1-d tensor of input's elements where mask is True (input and
    mask broadcast together)."""
    m = _mask_array(mask, input)
    if m.dtype != host.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    err = broadcast_error(m.shape, input._data.shape)
    if err is not None:
        raise err
    return _write_out(out, MaskedSelectBackward0.apply(input, params=(m,)), "masked_select")


@register(inplace=True)
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``torch.masked_scatter``: source's elements, in order, written where mask is True."""
    m = _mask_array(mask, input)
    if m.dtype != host.bool_:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {_scalar_name(m)}")
    a, s = input._data, source._data
    if s.dtype != a.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but "
                           f"got{_scalar_name(a)} and {_scalar_name(s)}")
    err = broadcast_error(m.shape, a.shape)
    if err is not None:
        raise err
    xp = xp_of(m)
    if int(xp.count_nonzero(xp.broadcast_to(m, host.broadcast_shapes(a.shape, m.shape)))) > \
            s.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return MaskedScatterBackward0.apply(input, source, params=(m,))


# --------------------------------------------------------------------------- take / put

class TakeBackward0(Op):
    """take(input, index): input read as 1-d at the index; output shaped as the index."""

    __slots__ = ("key", "shape")

    def forward(self, a, idx):
        self.shape, self.key = a.shape, (idx,)
        return a.reshape(-1)[idx]

    def backward(self, grad):
        return _add_at(grad, (math.prod(self.shape),), self.key).reshape(self.shape)


class PutBackward0(Op):
    """put(input, index, source, accumulate): source written (or added) at the index of
    input read as 1-d."""

    __slots__ = ("accumulate", "key", "src_shape")

    def forward(self, a, src, idx, accumulate):
        self.key, self.accumulate, self.src_shape = (idx,), accumulate, src.shape
        out = a.copy()
        flat = out.reshape(-1)
        if accumulate:
            xp_of(flat).add.at(flat, idx, src.reshape(-1))
        else:
            flat[idx] = src.reshape(-1)
        return out

    def backward(self, grad):
        g_self = g_src = None
        if self.needs_grad(0):
            g_self = grad if self.accumulate else \
                _zero_at(grad.reshape(-1), self.key).reshape(grad.shape)
        if self.needs_grad(1):
            g_src = _select_at(grad.reshape(-1), self.key).reshape(self.src_shape)
        return g_self, g_src


def _check_flat_bounds(idx, size: int) -> None:
    v = _first_out_of_bounds(idx, size, True)
    if v is not None:
        raise IndexError(f"out of range: tried to access index {v} on a tensor of {size} "
                         "elements.")


@register
def take(input: Tensor, index: Tensor) -> Tensor:
    """``torch.take``: input read as 1-d at ``index`` (negative indices count from the end)."""
    idx = _index_array(index)
    if idx.dtype != host.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{_scalar_name(idx)}")
    size = input._data.size
    if size == 0 and idx.size:
        raise IndexError("take(): tried to take from an empty tensor")
    _check_flat_bounds(idx, size)
    return apply1(TakeBackward0, input, idx)


@register
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *,
                   out: Tensor | None = None) -> Tensor:
    """``torch.take_along_dim``: gather along ``dim`` after broadcasting input and indices
    (all dims but ``dim``); with ``dim=None``, along the flattened input. As in torch, indices
    along a given ``dim`` are taken modulo its size (so negative ones count from the end)."""
    idx = _index_array(indices, "indices")
    if idx.dtype != host.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_scalar_name(idx)}")
    a = input._data
    if dim is None:
        return _write_out(out, gather(input.reshape(-1), 0, _make(idx.reshape(-1))))
    if a.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _wrap_dim(dim, a.ndim)
    if a.ndim != idx.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {a.ndim} dimensions for input, and "
                           f"{idx.ndim} dimensions for indices")
    a_rest = a.shape[:d] + (1,) + a.shape[d + 1:]
    i_rest = idx.shape[:d] + (1,) + idx.shape[d + 1:]
    err = broadcast_error(a_rest, i_rest)
    if err is not None:
        raise err
    rest = host.broadcast_shapes(a_rest, i_rest)
    if rest != a_rest:
        input = input.expand(rest[:d] + (a.shape[d],) + rest[d + 1:])
    idx = xp_of(idx).broadcast_to(idx, rest[:d] + (idx.shape[d],) + rest[d + 1:])
    if a.shape[d]:
        idx = idx % a.shape[d]
    return _write_out(out, gather(input, d, _make(idx)))


@register(inplace=True)
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``torch.put``: source's elements written (or, with ``accumulate``, added) at ``index``
    of input read as 1-d."""
    idx = _index_array(index)
    a, s = input._data, source._data
    if idx.dtype != host.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_scalar_name(idx)}")
    if s.dtype != a.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_scalar_name(a)} and source.dtype = "
                           f"{_scalar_name(s)}")
    if idx.size != s.size:
        raise IndexError("put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {s.size}, index.numel() = "
                         f"{idx.size}")
    _check_flat_bounds(idx, a.size)
    return PutBackward0.apply(input, source, params=(idx.reshape(-1), bool(accumulate)))
