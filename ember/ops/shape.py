"""Shape ops: views (view, reshape, transpose, permute, squeeze, expand, the views of basic
indexing, ...), reshaping (repeat, tile, flip, roll, diagonal, tril, ...), and joining and
splitting (cat, stack, split, chunk, unbind).

Views share memory (and the version counter) with their base, as in torch. A view remembers its
root base and the chain of view ops that made it, so an in-place op on the view can rewrite the
base's history (``CopySlices``) and replay the view on top. Ops that return views in torch
(split, chunk, tensor_split, narrow, diagonal, meshgrid, unbind, ravel of a contiguous input)
return views here too, recorded through ``view_op`` (the multi-output ones with one node for
all pieces), so in-place ops on them rewrite the base's history.
"""

from __future__ import annotations

import math
import warnings

from .._backend import host, result_type, to_dtype, xp_of
from .._tensor import Size, Tensor, _make, _wrap_dim
from ..autograd.forward_ad import propagate as propagate_tangents
from ..autograd.grad_mode import state as _grad_state
from ..autograd.record import mark_view, needs_recording, record
from ._op import Op, apply1, is_dual, write_out
from ._registry import register

# --------------------------------------------------------------------------- views

class ViewOp(Op):
    """Marker base: the forward returns a NumPy view of its input. A view is linear: its
    forward-mode tangent is the same view of the input's tangent (``forward_ad.propagate``)."""

    __slots__ = ()
    linear = True


def view_op(cls, x: Tensor, *params) -> Tensor:
    """Apply a view op and record the base/view relationship on the result."""
    out = apply1(cls, x, *params)
    a = out._data
    # NOTE: NumPy gives a view of a view its root array as ``base``: that test settles the
    # common cases in ~60 ns, where ``may_share_memory`` (and ``xp_of``) took ~700
    base, d = getattr(a, "base", None), x._data
    if base is not None and (base is d or base is getattr(d, "base", None)) or \
            xp_of(a).may_share_memory(a, d) or not a.size:
        mark_view(out, x, (cls, params))
    return out


@register(name="_replay_view", export=False)
def replay_view(base: Tensor, chain) -> Tensor:
    """Re-apply a recorded chain of view ops to ``base`` (``Tensor._replay_view``: how a view's
    ``grad_fn`` is re-derived after its base changed in place, without ``_tensor`` importing
    ops)."""
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
            # (a C-ordered array always reshapes to a view: ``copy=False`` costs ~450 ns more)
            return a.reshape(shape) if a.flags.c_contiguous else a.reshape(shape, copy=False)
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


def _shape_arg(shape, op: str) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    for s in shape:  # the usual case, Python ints, without building a new tuple
        if type(s) is not int:
            break
    else:
        return shape
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
    if -1 not in shape and math.prod(shape) == numel and (not shape or min(shape) >= 0):
        return shape
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


@register(export=False)
def view(input: Tensor, *size) -> Tensor:
    """``Tensor.view``: same data, new shape; fails when strides don't allow it."""
    if len(size) == 1 and not isinstance(size[0], (int, tuple, list, Size, Tensor)):
        dt = to_dtype(size[0])
        if dt.np.itemsize != input._data.itemsize:
            raise NotImplementedError("view(dtype) between dtypes of different sizes is not "
                                      "supported by ember yet")
        return view_op(DtypeViewBackward, input, dt.np)
    shape = _infer_shape(_shape_arg(size, "view"), input._data.size, input._data.shape)
    return view_op(ViewBackward0, input, shape)


class DtypeViewBackward(ViewOp):
    __slots__ = ()

    def forward(self, a, np_dtype):
        return a.view(np_dtype)

    def backward(self, grad):
        raise RuntimeError("view(dtype) is not differentiable")


@register
def reshape(input: Tensor, *shape) -> Tensor:
    """``torch.reshape``: a view when the strides allow, else a copy."""
    shape = _infer_shape(_shape_arg(shape, "reshape"), input._data.size, input._data.shape)
    try:
        input._data.reshape(shape, copy=False)
    except ValueError:
        return apply1(UnsafeViewBackward0, input, shape)
    cls = ViewBackward0 if input._data.flags.c_contiguous else ReshapeAliasBackward0
    return view_op(cls, input, shape)


@register(export=False)
def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other._data.shape)


@register(export=False)
def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other._data.shape)


@register
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


@register
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


@register(aliases=("swapdims",))
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``torch.transpose``: swap two dims (a view)."""
    nd = input._data.ndim
    return view_op(TransposeBackward0, input, _wrap_dim(dim0, nd), _wrap_dim(dim1, nd))


@register
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``torch.swapaxes``: ``transpose`` under NumPy's name, with NumPy's argument names."""
    return transpose(input, axis0, axis1)


@register
def t(input: Tensor) -> Tensor:
    """``torch.t``: transpose of a matrix; 0-d and 1-d tensors are returned as is."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return view_op(TBackward0, input)


@register
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


@register
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


@register
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """``torch.unsqueeze``: insert a size-1 dim at ``dim``."""
    return view_op(UnsqueezeBackward0, input, _wrap_dim(dim, input._data.ndim + 1))


@register(export=False)
def expand(input: Tensor, *size) -> Tensor:
    """``Tensor.expand``: broadcast to ``sizes`` without copying (-1 keeps a dim)."""
    sizes = _shape_arg(size, "expand")
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


@register(export=False)
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._data.shape)


@register
def broadcast_to(input: Tensor, size) -> Tensor:
    return expand(input, tuple(size))


@register(method=False)
def broadcast_shapes(*shapes) -> Size:
    try:
        return Size(host.broadcast_shapes(*[tuple(s) if not isinstance(s, int) else (s,)
                                             for s in shapes]))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{shapes}") from None


@register(method=False)
def broadcast_tensors(*tensors: Tensor) -> tuple:
    shape = broadcast_shapes(*[t._data.shape for t in tensors])
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


@register(aliases=("moveaxis",))
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
        return stack(parts, self.dim)


@register
def unbind(input: Tensor, dim: int = 0) -> tuple:
    """``torch.unbind``: the slices along ``dim``, as views, recorded by one UnbindBackward0."""
    a = input._data
    if a.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, a.ndim)
    lead = (slice(None),) * d
    keys = [lead + (i,) for i in range(a.shape[d])]
    pieces = [a[k + (Ellipsis,)] for k in keys]  # (the Ellipsis keeps 0-d pieces views)
    recorded = bool(pieces) and needs_recording((input,), _grad_state.grad_enabled)
    select = (MULTI_OUTPUT_NODES if recorded else _BASIC_NODES)["SelectBackward0"]
    steps = [(select, (k,)) for k in keys]  # views: in-place writes reach the input
    node = object.__new__(UnbindBackward0)
    node.dim, node.shape = d, a.shape
    if recorded:
        outs = record(node, (input,), pieces, view_of=input, view_steps=steps)
    else:
        outs = [_make(p) for p in pieces]
        for t, step in zip(outs, steps):
            mark_view(t, input, step)
    if is_dual(input):
        propagate_tangents(node, (input,), tuple(outs))
    return tuple(outs)


# --------------------------------------------------------------------------- joining

class CatBackward0(Op):
    """cat(tensors, dim): each input gets its slice of the gradient."""

    __slots__ = ("dim", "sizes")

    def forward(self, *arrays_and_dim):
        *arrays, dim = arrays_and_dim
        self.dim = dim
        # torch's legacy rule: a 1-d empty input is skipped (None: its gradient is empty too)
        legacy = [a.ndim == 1 and not a.shape[0] for a in arrays]
        if all(legacy):
            legacy = [False] * len(arrays)
        self.sizes = [None if skip else a.shape[dim] for a, skip in zip(arrays, legacy)]
        kept = [a for a, size in zip(arrays, self.sizes) if size is not None]
        return xp_of(*arrays).concatenate(kept, axis=dim)

    def backward(self, grad):
        out, start = [], 0
        lead = (slice(None),) * self.dim
        for size, (node, _) in zip(self.sizes, self.next_functions):
            if size is None:  # a skipped legacy empty input
                out.append(grad.new_zeros((0,)) if node is not None else None)
                continue
            out.append(grad[lead + (slice(start, start + size),)] if node is not None else None)
            start += size
        return tuple(out)


class StackBackward0(Op):
    """stack(tensors, dim): each input gets its index of the gradient along ``dim``."""

    __slots__ = ("dim",)

    def forward(self, *arrays_and_dim):
        *arrays, dim = arrays_and_dim
        self.dim = dim
        return xp_of(*arrays).stack(arrays, axis=dim)

    def backward(self, grad):
        lead = (slice(None),) * self.dim
        return tuple(grad[lead + (i,)] if node is not None else None
                     for i, (node, _) in enumerate(self.next_functions))


def tensor_list(tensors, op: str, empty: str = "(): expected a non-empty list of Tensors") -> list:
    """The sequence of tensors a joining op takes, with torch's errors (``empty`` follows the
    op's name in the message for an empty one)."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        "Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(op + empty)
    return tensors


@register(method=False, aliases=("concat", "concatenate"))
def cat(tensors, dim: int = 0, *, out=None) -> Tensor:
    """``torch.cat``: join along an existing dim (dtypes promoted; legacy empty 1-d skipped)."""
    tensors = tensor_list(tensors, "cat")
    kept = [(i, t) for i, t in enumerate(tensors)
            if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or list(enumerate(tensors))
    ref = kept[0][1]
    d = _wrap_dim(dim, ref._data.ndim)
    for i, t in kept:
        if t._data.ndim != ref._data.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got "
                               f"{ref._data.ndim} and {t._data.ndim}")
        for k in range(ref._data.ndim):
            if k != d and t._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref._data.shape[k]} but got size {t._data.shape[k]} for tensor number "
                    f"{i} in the list.")
    result = CatBackward0.apply(*_promoted(tensors), params=(d,))
    if out is None:
        return result
    return write_out(out, result)


@register(method=False)
def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    """``torch.stack``: join along a new dim; all shapes must be equal."""
    tensors = tensor_list(tensors, "stack")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._data.shape)} at entry {i}")
    d = _wrap_dim(dim, len(shape) + 1)
    return StackBackward0.apply(*_promoted(tensors), params=(d,))


def _promoted(tensors: list) -> list:
    dtypes = {t._data.dtype for t in tensors}
    if len(dtypes) == 1:
        return tensors
    rt = result_type(*tensors)
    return [t if t._data.dtype == rt.np else t.to(rt) for t in tensors]


# --------------------------------------------------------------------------- reshaping and splitting

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


@register(export=False)
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


@register
def tile(input: Tensor, *dims) -> Tensor:
    """``torch.tile``: ``repeat``, with ``dims`` padded with leading ones to the input's rank."""
    dims = _ints(dims, "tile", "dims")
    nd = input._data.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


@register
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
        return input.index_select(d, _make(idx))  # a Tensor method: indexing builds on shape
    repeats = int(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    x = unsqueeze(input, d + 1)
    shape = list(x._data.shape)
    shape[d + 1] = repeats
    x = expand(x, shape).clone()  # a Tensor method: unary builds on shape
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
    node = object.__new__(cls)
    node.dim, node.sizes, node.shape = d, list(sizes), a.shape
    if recorded:
        outs = record(node, (input,), pieces, view_of=input, view_steps=steps)
    else:
        outs = [_make(p) for p in pieces]
        for t, st in zip(outs, steps):
            mark_view(t, input, st)
    if is_dual(input):
        propagate_tangents(node, (input,), tuple(outs))
    return tuple(outs)


@register
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


@register
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


@register
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


@register
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
    return tuple(view_op(_BASIC_NODES["SliceBackward0"], input, lead + (slice(a, b),))
                 for a, b in zip(starts, stops))


# --------------------------------------------------------------------------- stacks


def _tensor_list(tensors, op: str) -> list:
    return tensor_list(tensors, op, " expects a non-empty TensorList")


@register(method=False)
def hstack(tensors, *, out=None) -> Tensor:
    """``torch.hstack``: cat along dim 1 (dim 0 for 1-d tensors), 0-d tensors as 1-d."""
    ts = atleast_1d(_tensor_list(tensors, "hstack"))
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


@register(method=False, aliases=("row_stack",))
def vstack(tensors, *, out=None) -> Tensor:
    """``torch.vstack``: cat along dim 0 of the tensors made at least 2-d."""
    return cat(atleast_2d(_tensor_list(tensors, "vstack")), 0)


@register(method=False)
def dstack(tensors, *, out=None) -> Tensor:
    """``torch.dstack``: cat along dim 2 of the tensors made at least 3-d."""
    return cat(atleast_3d(_tensor_list(tensors, "dstack")), 2)


@register(method=False)
def column_stack(tensors, *, out=None) -> Tensor:
    """``torch.column_stack``: 0-d and 1-d tensors become columns, then cat along dim 1."""
    ts = _tensor_list(tensors, "column_stack")
    return cat([reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in ts], 1)


# --------------------------------------------------------------------------- narrow, flip, roll


@register
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
    return view_op(_BASIC_NODES["SliceBackward0"], input,
                   (slice(None),) * d + (slice(start, start + length),))


class FlipBackward0(Op):
    """flip(dims): a reversed copy; d/dinput = grad flipped back."""

    __slots__ = ("dims",)

    def forward(self, a, dims):
        self.dims = dims
        return xp_of(a).flip(a, dims).copy() if a.ndim else a.copy()

    def backward(self, grad):
        return apply1(FlipBackward0, grad, self.dims)


@register
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


@register
def fliplr(input: Tensor) -> Tensor:
    """``torch.fliplr``: flip dim 1."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


@register
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


@register
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


@register
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


# --------------------------------------------------------------------------- sliding windows


class UnfoldBackward0(ViewOp):
    """unfold(dim, size, step): a strided view whose last dim holds each window of ``dim``;
    d/dinput = each window's gradient added back where it came from (windows may overlap)."""

    __slots__ = ("dim", "shape", "size", "step")

    def forward(self, a, dim, size, step):
        self.shape, self.dim, self.size, self.step = a.shape, dim, size, step
        xp = xp_of(a)
        if not a.ndim:
            return xp.lib.stride_tricks.as_strided(a, (size,), (0,))
        n, st = a.shape[dim], a.strides[dim]
        shape = a.shape[:dim] + ((n - size) // step + 1,) + a.shape[dim + 1:] + (size,)
        strides = a.strides[:dim] + (st * step,) + a.strides[dim + 1:] + (st,)
        return xp.lib.stride_tricks.as_strided(a, shape, strides)

    def backward(self, grad):
        return apply1(UnfoldBackwardBackward0, grad, self.shape, self.dim, self.size, self.step)


class UnfoldBackwardBackward0(Op):
    """unfold's backward: zeros of the input's shape with each window's gradient added at its
    place; d/dgrad = unfold again."""

    __slots__ = ("dim", "size", "step")

    def forward(self, g, shape, dim, size, step):
        self.dim, self.size, self.step = dim, size, step
        out = xp_of(g).zeros(shape, dtype=g.dtype)
        if not len(shape):
            return out + g.sum()
        count = g.shape[dim]
        for j in range(size):  # offset j of every window: distinct places, one strided add
            where = (slice(None),) * dim + (slice(j, j + step * (count - 1) + 1, step),)
            out[where] += g[..., j]
        return out

    def backward(self, grad):
        return view_op(UnfoldBackward0, grad, self.dim, self.size, self.step)


def _unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``: every window of ``size`` elements of ``dimension``, ``step`` apart,
    as a new last dim; a view sharing memory, as in torch."""
    a = input._data
    d = _wrap_dim(dimension, a.ndim)
    n = a.shape[d] if a.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    return view_op(UnfoldBackward0, input, d, size, step)


# torch has ``Tensor.unfold`` only (``torch.unfold`` does not exist; ``F.unfold`` is im2col)
register(_unfold, name="unfold", export=False)


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


@register
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``torch.diagonal``: the diagonal ``offset`` of the (dim1, dim2) planes, as the last dim
    (a view)."""
    d1, d2 = _diag_dims(dim1, dim2, input._data.ndim)
    return view_op(DiagonalBackward0, input, int(offset), d1, d2)


@register
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.diag_embed``: each last-dim vector on the diagonal ``offset`` of new matrices in
    dims (dim1, dim2) of the output."""
    d1, d2 = _diag_dims(dim1, dim2, input._data.ndim + 1)
    return apply1(DiagEmbedBackward0, input, int(offset), d1, d2)


@register
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """``torch.diag``: a 1-d tensor's diagonal matrix, or a matrix's diagonal (a copy)."""
    nd = input._data.ndim
    if nd == 1:
        return apply1(DiagEmbedBackward0, input, int(diagonal), 0, 1)
    if nd != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")
    return apply1(DiagonalBackward0_copy, input, int(diagonal), 0, 1)


@register
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


@register
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


@register(inplace=True)
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """``torch.tril``: the lower triangle of the last two dims (the rest zeroed)."""
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return apply1(TrilBackward0, input, int(diagonal))


@register(inplace=True)
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """``torch.triu``: the upper triangle of the last two dims (the rest zeroed)."""
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return apply1(TriuBackward0, input, int(diagonal))


# --------------------------------------------------------------------------- meshgrid, atleast


_MESHGRID_WARNING = ("torch.meshgrid: in an upcoming release, it will be required to pass the "
                     "indexing argument.")


@register(method=False)
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


@register(method=False)
def atleast_1d(*tensors):
    """``torch.atleast_1d``: 0-d tensors viewed as 1-d; one tensor in, one out."""
    return _atleast(tensors, _one_1d)


@register(method=False)
def atleast_2d(*tensors):
    """``torch.atleast_2d``: 0-d and 1-d tensors viewed as 2-d (1-d as a row)."""
    return _atleast(tensors, _one_2d)


@register(method=False)
def atleast_3d(*tensors):
    """``torch.atleast_3d``: (n,) becomes (1, n, 1) and (m, n) becomes (m, n, 1)."""
    return _atleast(tensors, _one_3d)


@register
def ravel(input: Tensor) -> Tensor:
    """``torch.ravel``: the flattened tensor; a view when contiguous, else a view of a copy."""
    return view(input.contiguous(), (-1,))  # a Tensor method: unary builds on shape
