"""View ops: results share memory (and the version counter) with their base, as in torch.

A view remembers its root base and the chain of view ops that made it, so an in-place op
on the view can rewrite the base's history (``CopySlices``) and replay the view on top.
"""

from __future__ import annotations

import math

from .._backend import host, xp_of
from .._tensor import Size, Tensor, _make, _wrap_dim
from ..autograd.grad_mode import state as _grad_state
from ..autograd.record import mark_view, needs_recording, record
from ._op import Op, apply1


class ViewOp(Op):
    """Marker base: the forward returns a NumPy view of its input."""

    __slots__ = ()


def view_op(cls, x: Tensor, *params) -> Tensor:
    """Apply a view op and record the base/view relationship on the result."""
    out = apply1(cls, x, *params)
    a = out._data
    if xp_of(a).may_share_memory(a, x._data) or not a.size:
        mark_view(out, x, (cls, params))
    return out


def replay_view(base: Tensor, chain) -> Tensor:
    """Re-apply a recorded chain of view ops to ``base``."""
    t = base
    for cls, params in chain:
        t = view_op(cls, t, *params)
    return t


def replay_view_array(arr, chain):
    for cls, params in chain:
        arr = object.__new__(cls).forward(arr, *params)
    return arr


class ViewBackward0(ViewOp):
    """view/reshape/flatten: d/dinput = grad reshaped back."""

    __slots__ = ("shape",)

    def forward(self, a, shape):
        self.shape = a.shape
        try:
            return a.reshape(shape, copy=False)
        except ValueError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None

    def backward(self, grad):
        return grad.reshape(self.shape)


class ReshapeAliasBackward0(ViewBackward0):
    """reshape of a non-contiguous input whose strides still allow a view (torch's name)."""

    __slots__ = ()


class UnsafeViewBackward0(Op):
    """reshape that had to copy (non-contiguous input)."""

    __slots__ = ("shape",)

    def forward(self, a, shape):
        self.shape = a.shape
        return a.reshape(shape)

    def backward(self, grad):
        return grad.reshape(self.shape)


class TransposeBackward0(ViewOp):
    __slots__ = ("d0", "d1")

    def forward(self, a, d0, d1):
        self.d0, self.d1 = d0, d1
        return a.swapaxes(d0, d1)

    def backward(self, grad):
        return grad.transpose(self.d0, self.d1)


class TBackward0(ViewOp):
    __slots__ = ()

    def forward(self, a):
        return a.T

    def backward(self, grad):
        return grad.t()


class PermuteBackward0(ViewOp):
    __slots__ = ("dims",)

    def forward(self, a, dims):
        self.dims = dims
        return a.transpose(dims)

    def backward(self, grad):
        dims = self.dims
        return grad.permute(*sorted(range(len(dims)), key=dims.__getitem__))


class SqueezeBackward0(ViewOp):
    """squeeze(): all size-1 dims removed."""

    __slots__ = ("shape",)

    def forward(self, a):
        self.shape = a.shape
        return a.squeeze()

    def backward(self, grad):
        return grad.reshape(self.shape)


class SqueezeBackward1(ViewOp):
    """squeeze(dim): that dim removed if its size is 1."""

    __slots__ = ("shape",)

    def forward(self, a, dims):
        self.shape = a.shape
        return a.squeeze(dims) if dims else a.view()

    def backward(self, grad):
        return grad.reshape(self.shape)


class SqueezeBackward2(SqueezeBackward1):
    """squeeze(dims: tuple): those dims removed where their size is 1."""

    __slots__ = ()


class UnsqueezeBackward0(ViewOp):
    __slots__ = ("dim",)

    def forward(self, a, dim):
        self.dim = dim
        return a.reshape(a.shape[:dim] + (1,) + a.shape[dim:])

    def backward(self, grad):
        return grad.squeeze(self.dim)


class ExpandBackward0(ViewOp):
    """expand: the engine sums the gradient back to the input's shape."""

    __slots__ = ()

    def forward(self, a, shape):
        return xp_of(a).broadcast_to(a, shape)

    def backward(self, grad):
        return grad


class AliasBackward0(ViewOp):
    __slots__ = ()

    def forward(self, a):
        return a.view()

    def backward(self, grad):
        return grad


def _shape_arg(shape, op: str) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, host.integer)):
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found element "
                            f"of type {type(s).__name__}")
        out.append(int(s))
    return tuple(out)


def _infer_shape(shape: tuple, numel: int, in_shape) -> tuple:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if -1 in shape:
        rest = math.prod(s for s in shape if s != -1)
        if rest == 0 or numel % rest:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // rest if s == -1 else s for s in shape)
    if math.prod(shape) != numel or any(s < 0 for s in shape):
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def view(input: Tensor, *shape) -> Tensor:
    """``Tensor.view``: same data, new shape; fails when strides don't allow it."""
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, Size, Tensor)):
        from .._backend import to_dtype
        dt = to_dtype(shape[0])
        if dt.np.itemsize != input._data.itemsize:
            raise NotImplementedError("view(dtype) between dtypes of different sizes is not "
                                      "supported by ember yet")
        return view_op(DtypeViewBackward, input, dt.np)
    shape = _infer_shape(_shape_arg(shape, "view"), input._data.size, input._data.shape)
    return view_op(ViewBackward0, input, shape)


class DtypeViewBackward(ViewOp):
    __slots__ = ()

    def forward(self, a, np_dtype):
        return a.view(np_dtype)

    def backward(self, grad):
        raise RuntimeError("view(dtype) is not differentiable")


def reshape(input: Tensor, *shape) -> Tensor:
    """``torch.reshape``: a view when the strides allow, else a copy."""
    shape = _infer_shape(_shape_arg(shape, "reshape"), input._data.size, input._data.shape)
    try:
        input._data.reshape(shape, copy=False)
    except ValueError:
        return apply1(UnsafeViewBackward0, input, shape)
    cls = ViewBackward0 if input._data.flags.c_contiguous else ReshapeAliasBackward0
    return view_op(cls, input, shape)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other._data.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other._data.shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """``torch.flatten``: merge dims start_dim..end_dim."""
    nd = input._data.ndim
    if nd == 0:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, nd)
    e = _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    return reshape(input, shp[:s] + (math.prod(shp[s:e + 1]),) + shp[e + 1:])


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """``torch.unflatten``: split dim ``dim`` into ``sizes`` (one may be -1)."""
    d = _wrap_dim(dim, input._data.ndim)
    shp = input._data.shape
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be "
                           "inferred")
    known = math.prod(s for s in sizes if s != -1)
    n = shp[d]
    if (n % known if known else n) if -1 in sizes else known != n:
        raise RuntimeError(f"unflatten: Provided sizes [{', '.join(map(str, sizes))}] don't "
                           f"multiply up to the size of dim {dim} ({n}) in the input tensor")
    sizes = _infer_shape(sizes, n, None)
    return view(input, shp[:d] + sizes + shp[d + 1:])


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``torch.transpose``: swap two dims (a view)."""
    nd = input._data.ndim
    return view_op(TransposeBackward0, input, _wrap_dim(dim0, nd), _wrap_dim(dim1, nd))


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    """``torch.t``: transpose of a matrix; 0-d and 1-d tensors are returned as is."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return view_op(TBackward0, input)


def permute(input: Tensor, *dims) -> Tensor:
    """``torch.permute``: reorder dims (a view)."""
    dims = _shape_arg(dims, "permute")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return view_op(PermuteBackward0, input, dims)


def squeeze(input: Tensor, dim=None) -> Tensor:
    """``torch.squeeze``: drop size-1 dims (all, or those named in ``dim``)."""
    if dim is None:
        return view_op(SqueezeBackward0, input)
    nd = input._data.ndim
    one = isinstance(dim, int)
    dims = (dim,) if one else tuple(dim)
    dims = tuple(d for d in (_wrap_dim(d, nd) for d in dims)
                 if nd and input._data.shape[d] == 1)
    return view_op(SqueezeBackward1 if one else SqueezeBackward2, input, dims)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """``torch.unsqueeze``: insert a size-1 dim at ``dim``."""
    return view_op(UnsqueezeBackward0, input, _wrap_dim(dim, input._data.ndim + 1))


def expand(input: Tensor, *sizes) -> Tensor:
    """``Tensor.expand``: broadcast to ``sizes`` without copying (-1 keeps a dim)."""
    sizes = _shape_arg(sizes, "expand")
    shp = input._data.shape
    nd = len(sizes)
    if nd < len(shp):
        raise RuntimeError(f"expand(torch.{input.dtype._legacy}{{{list(shp)}}}"
                           f", size=[{', '.join(map(str, sizes))}]): the number of sizes provided "
                           f"({nd}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({len(shp)})")
    lead = nd - len(shp)
    target = list(sizes)
    for i in range(nd - 1, -1, -1):  # torch checks (and reports) from the last dim back
        s = sizes[i]
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            continue
        cur = shp[i - lead]
        if s == -1:
            target[i] = cur
        elif cur != 1 and cur != s:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                               f"[{', '.join(map(str, sizes))}].  Tensor sizes: "
                               f"[{', '.join(map(str, shp))}]")
    return view_op(ExpandBackward0, input, tuple(target))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._data.shape)


def broadcast_to(input: Tensor, size) -> Tensor:
    return expand(input, tuple(size))


def broadcast_shapes(*shapes) -> Size:
    try:
        return Size(host.broadcast_shapes(*[tuple(s) if not isinstance(s, int) else (s,)
                                             for s in shapes]))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{shapes}") from None


def broadcast_tensors(*tensors: Tensor) -> tuple:
    shape = broadcast_shapes(*[t._data.shape for t in tensors])
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


def movedim(input: Tensor, source, destination) -> Tensor:
    nd = input._data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    src = [_wrap_dim(s, nd) for s in src]
    dst = [_wrap_dim(d, nd) for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, *order)


moveaxis = movedim


class UnbindBackward0(Op):
    """unbind(input, dim): one node with an output per slice (each a view of the input)."""

    __slots__ = ("_num_outputs", "dim", "shape")

    def backward(self, *grads):
        like = next((g for g in grads if g is not None), None)
        if like is None:
            return (None,)
        piece = self.shape[:self.dim] + self.shape[self.dim + 1:]
        zeros = None
        parts = []
        for g in grads:
            if g is None:
                if zeros is None:
                    zeros = _make(xp_of(like._data).zeros(piece, dtype=like._data.dtype))
                g = zeros
            parts.append(g)
        from .joining import stack
        return stack(parts, self.dim)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """``torch.unbind``: the slices along ``dim``, as views, recorded by one UnbindBackward0."""
    a = input._data
    if a.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, a.ndim)
    lead = (slice(None),) * d
    keys = [lead + (i,) for i in range(a.shape[d])]
    pieces = [a[k + (Ellipsis,)] for k in keys]  # (the Ellipsis keeps 0-d pieces views)
    from .indexing import _BASIC_NODES, MULTI_OUTPUT_NODES
    recorded = bool(pieces) and needs_recording((input,), _grad_state.grad_enabled)
    select = (MULTI_OUTPUT_NODES if recorded else _BASIC_NODES)["SelectBackward0"]
    steps = [(select, (k,)) for k in keys]  # views: in-place writes reach the input
    if recorded:
        node = object.__new__(UnbindBackward0)
        node.dim, node.shape = d, a.shape
        return tuple(record(node, (input,), pieces, view_of=input, view_steps=steps))
    outs = [_make(p) for p in pieces]
    for t, step in zip(outs, steps):
        mark_view(t, input, step)
    return tuple(outs)

