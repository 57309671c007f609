"""View ops: results share memory (and the version counter) with their base, as in torch.

A view remembers its root base and the chain of view ops that made it, so an in-place op
on the view can rewrite the base's history (``CopySlices``) and replay the view on top.
"""

from __future__ import annotations

import math

import numpy as np

from .._tensor import Size, Tensor, _wrap_dim
from ._op import Op, apply1


class ViewOp(Op):
    """Marker base: the forward returns a NumPy view of its input."""

    __slots__ = ()


def view_op(cls, x: Tensor, *params) -> Tensor:
    """Apply a view op and record the base/view relationship on the result."""
    out = apply1(cls, x, *params)
    if np.may_share_memory(out._data, x._data):
        base = x._base
        out._base = x if base is None else base
        out._version = x._version
        chain = x._view
        step = (cls, params)
        out._view = (step,) if base is None else chain + (step,)
    return out


def replay_view(base: Tensor, chain) -> Tensor:
    """Re-apply a recorded chain of view ops to ``base``."""
    t = base
    for cls, params in chain:
        t = view_op(cls, t, *params)
    return t


def replay_view_array(arr: np.ndarray, chain) -> np.ndarray:
    for cls, params in chain:
        arr = object.__new__(cls).forward(arr, *params)
    return arr


class ViewBackward0(ViewOp):
    """view/reshape/flatten: d/dinput = grad reshaped back."""

    __slots__ = ("shape",)

    def forward(self, a, shape):
        self.shape = a.shape
        try:
            return np.reshape(a, shape, copy=False)
        except ValueError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None

    def backward(self, grad):
        return grad.reshape(self.shape)


class UnsafeViewBackward0(Op):
    """reshape that had to copy (non-contiguous input)."""

    __slots__ = ("shape",)

    def forward(self, a, shape):
        self.shape = a.shape
        return np.reshape(a, shape)

    def backward(self, grad):
        return grad.reshape(self.shape)


class TransposeBackward0(ViewOp):
    __slots__ = ("d0", "d1")

    def forward(self, a, d0, d1):
        self.d0, self.d1 = d0, d1
        return np.swapaxes(a, d0, d1)

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
        return np.transpose(a, dims)

    def backward(self, grad):
        return grad.permute(*np.argsort(self.dims).tolist())


class SqueezeBackward0(ViewOp):
    """squeeze(): all size-1 dims removed."""

    __slots__ = ("shape",)

    def forward(self, a):
        self.shape = a.shape
        return np.squeeze(a)

    def backward(self, grad):
        return grad.reshape(self.shape)


class SqueezeBackward1(ViewOp):
    """squeeze(dim): that dim removed if its size is 1."""

    __slots__ = ("shape",)

    def forward(self, a, dims):
        self.shape = a.shape
        return np.squeeze(a, dims) if dims else a.view()

    def backward(self, grad):
        return grad.reshape(self.shape)


class UnsqueezeBackward0(ViewOp):
    __slots__ = ("dim",)

    def forward(self, a, dim):
        self.dim = dim
        return np.expand_dims(a, dim)

    def backward(self, grad):
        return grad.squeeze(self.dim)


class ExpandBackward0(ViewOp):
    """expand: the engine sums the gradient back to the input's shape."""

    __slots__ = ()

    def forward(self, a, shape):
        return np.broadcast_to(a, shape)

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
        if not isinstance(s, (int, np.integer)):
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
        np.reshape(input._data, shape, copy=False)
    except ValueError:
        return apply1(UnsafeViewBackward0, input, shape)
    return view_op(ViewBackward0, input, shape)


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
    d = _wrap_dim(dim, input._data.ndim)
    shp = input._data.shape
    sizes = _infer_shape(tuple(sizes), shp[d], None)
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
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(d for d in (_wrap_dim(d, nd) for d in dims)
                 if nd and input._data.shape[d] == 1)
    return view_op(SqueezeBackward1, input, dims)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """``torch.unsqueeze``: insert a size-1 dim at ``dim``."""
    return view_op(UnsqueezeBackward0, input, _wrap_dim(dim, input._data.ndim + 1))


def expand(input: Tensor, *sizes) -> Tensor:
    """``Tensor.expand``: broadcast to ``sizes`` without copying (-1 keeps a dim)."""
    sizes = _shape_arg(sizes, "expand")
    shp = input._data.shape
    nd = len(sizes)
    if nd < len(shp):
        raise RuntimeError(f"expand({input.dtype._legacy.replace('Tensor', '')}Type{{{list(shp)}}}"
                           f", size=[{', '.join(map(str, sizes))}]): the number of sizes provided "
                           f"({nd}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({len(shp)})")
    lead = nd - len(shp)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   "leading, non-existing dimension 0")
            target.append(s)
            continue
        cur = shp[i - lead]
        if s == -1:
            target.append(cur)
        elif cur == 1 or cur == s:
            target.append(s)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                               f"[{', '.join(map(str, sizes))}].  Tensor sizes: "
                               f"[{', '.join(map(str, shp))}]")
    target = tuple(target)
    if target == shp:
        return view_op(ExpandBackward0, input, target) if input._requires_grad else input
    return view_op(ExpandBackward0, input, target)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._data.shape)


def broadcast_to(input: Tensor, size) -> Tensor:
    return expand(input, tuple(size))


def broadcast_shapes(*shapes) -> Size:
    try:
        return Size(np.broadcast_shapes(*[tuple(s) if not isinstance(s, int) else (s,)
                                           for s in shapes]))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{shapes}") from None


def broadcast_tensors(*tensors: Tensor) -> tuple:
    shape = broadcast_shapes(*[t._data.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


def movedim(input: Tensor, source, destination) -> Tensor:
    nd = input._data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_wrap_dim(s, nd) for s in src]
    dst = [_wrap_dim(d, nd) for d in dst]
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, *order)


moveaxis = movedim
