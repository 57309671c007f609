"""Indexing: ``t[key]``, ``t[key] = value``, masked_fill, nonzero and their gradients.

Basic keys (ints, slices, None, Ellipsis) give views, named as torch names the last step
(``SelectBackward0``, ``SliceBackward0``, ...). Any tensor, list or bool mask in the key makes
it advanced: a copy (``IndexBackward0``) whose gradient accumulates over repeated indices.
"""

from __future__ import annotations

from .._backend import host, is_array, ndarray, xp_of
from .._tensor import Tensor, _make
from ._op import Op, apply1
from .views import ViewOp, view_op

_BASIC = (int, slice, type(None), type(Ellipsis))


def normalize_key(key):
    """An array index for ``key``: tensors become arrays, and a 1-tuple is kept a tuple."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, Tensor):
            d = k._data
            if d.dtype.kind == "f":
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
        elif isinstance(k, list) or is_array(k):
            k = host.asarray(k) if isinstance(k, list) else k
            if k.dtype.kind == "f":
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
        if isinstance(k, slice) and k != slice(None):
            return "SliceBackward0"
    if any(isinstance(k, slice) for k in key):
        return "SliceBackward0"
    return "AliasBackward0"


class BasicIndexBackward(ViewOp):
    """x[basic key]: a view; d/dx = grad placed into zeros at the key."""

    __slots__ = ("key", "shape")

    def forward(self, a, key):
        self.shape, self.key = a.shape, key
        # a trailing Ellipsis makes NumPy return a 0-d view, not a scalar copy, for x[i]
        return a[key if any(k is Ellipsis for k in key) else key + (Ellipsis,)]

    def backward(self, grad):
        return apply1(SliceBackwardBackward0, grad, self.shape, self.key)


_BASIC_NODES = {name: type(name, (BasicIndexBackward,), {"__slots__": ()})
                for name in ("SelectBackward0", "SliceBackward0", "UnsqueezeBackward0",
                             "AliasBackward0")}
# the same steps for the pieces of multi-output view ops (split, unbind) made with grad:
# torch refuses in-place ops on those pieces and on views of them (``check_inplace``)
MULTI_OUTPUT_NODES = {name: type(name, (cls,), {"__slots__": (), "multi_output": True})
                      for name, cls in _BASIC_NODES.items()}


class SliceBackwardBackward0(Op):
    """Place grad into zeros of ``shape`` at a basic key (backward of basic indexing)."""

    __slots__ = ("key",)

    def forward(self, g, shape, key):
        self.key = key
        out = xp_of(g).zeros(shape, dtype=g.dtype)
        out[key] = g
        return out

    def backward(self, grad):
        return grad[self.key]


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
        xp = xp_of(g)
        out = xp.zeros(shape, dtype=g.dtype)
        xp.add.at(out, key, g)
        return out

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


def getitem(input: Tensor, key) -> Tensor:
    """``Tensor.__getitem__`` with torch's semantics and gradients."""
    key = normalize_key(key)
    shape = input._data.shape
    if is_basic(key):
        _check_basic(key, shape)
        return view_op(_BASIC_NODES[_basic_name(key)], input, key)
    try:
        return apply1(IndexBackward0, input, keys_on(key, input._data))
    except IndexError as e:
        raise _index_error(e, shape, key) from None


def setitem(input: Tensor, key, value) -> None:
    """``Tensor.__setitem__``: an in-place copy into a view (basic key) or an index_put."""
    from .inplace import copy_, inplace
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
        from .elementwise import where
        mask = _make(self.mask)
        return (apply1(MaskedFillBackward0, grad, self.mask, 0) if self.needs_grad(0) else None,
                where(mask, grad, 0.0).sum() if self.needs_grad(1) else None)


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``torch.masked_fill``: value where mask is True."""
    if not isinstance(mask, Tensor) or mask._data.dtype != host.bool_:
        from .._tensor import _CPP_NAMES
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
        from .elementwise import _raise_not_broadcastable
        _raise_not_broadcastable(mask, input)


def nonzero(input: Tensor, *, as_tuple: bool = False):
    """``torch.nonzero``: (n, ndim) int64 indices, or a tuple of 1-D index tensors."""
    d = input._data
    if as_tuple:  # views of one index matrix, as in torch (a 0-d input counts as 1-d)
        from .views import unbind
        d = d.reshape(1) if d.ndim == 0 else d
        return unbind(_make(xp_of(d).argwhere(d).astype(host.int64)), 1)
    return _make(xp_of(d).argwhere(d).astype(host.int64))


def _along(idx, dim: int) -> tuple:
    """An array key putting ``idx`` on ``dim`` and each element's own position elsewhere."""
    xp, nd = xp_of(idx), idx.ndim
    grid = [xp.arange(n).reshape((1,) * i + (n,) + (1,) * (nd - i - 1))
            for i, n in enumerate(idx.shape)]  # as np.indices(sparse=True)
    grid[dim] = idx
    return tuple(grid)


class ValueSelectingReductionBackward0(Op):
    """Add grad at ``idx`` along ``dim`` into zeros of ``shape`` (backward of max/min/cummax
    by dim); repeated indices accumulate."""

    __slots__ = ("dim", "idx")

    def forward(self, g, shape, dim, idx):
        self.dim, self.idx = dim, idx
        xp = xp_of(g)
        out = xp.zeros(shape, dtype=g.dtype)
        if len(shape):
            xp.add.at(out, _along(idx, dim), g)
        else:
            out[...] = g
        return out

    def backward(self, grad):
        return apply1(GatherBackward0, grad, self.dim, self.idx)


class GatherBackward0(Op):
    """take_along_dim(input, idx, dim) with a fixed index array."""

    __slots__ = ("dim", "idx", "shape")

    def forward(self, a, dim, idx):
        self.shape, self.dim, self.idx = a.shape, dim, idx
        return xp_of(a).take_along_axis(a, idx, axis=dim) if a.ndim else a.copy()

    def backward(self, grad):
        return apply1(ValueSelectingReductionBackward0, grad, self.shape, self.dim, self.idx)


def _scatter_into(grad: Tensor, shape: tuple, dim: int, idx) -> Tensor:
    return apply1(ValueSelectingReductionBackward0, grad, shape, dim, idx)
