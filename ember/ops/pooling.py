"""Pooling (``F.*``; torch.max_pool1d, ... where torch has them): max/avg pool 1d/2d/3d, adaptive
pools, max unpooling. The lp pools, composites, are in ``nn.functional.pooling``.

Max pools take the running maximum over the kernel offsets of a window view (one vectorised
step per offset, torch's tie rule: the first maximum wins, a NaN always wins) and record flat
indices into each input plane; their derivative scatters the gradient to those indices, and
that scatter's derivative gathers from them. Windows that tile the input (kernel == stride, no
padding or dilation: MaxPool2d(2)) reduce one axis at a time instead, each step one contiguous
pass over the flattened input, and keep, per axis, only which tap won (``WindowArgmax``);
indices are made only for the backward or when asked for.
Average pools are separable linear maps (``vision.AxisMap``): k strided taps along each axis,
weighted by torch's divisor. The 1-d forms run the 2-d op on an unsqueezed input, as torch
does (so their node is SqueezeBackward1). The 2-d and 3-d forms share one N-d implementation
of each pool; only torch's argument checks (whose order and wording differ between its 2-d and
3-d kernels) are per dimension.
Max unpooling writes each value at its index (torch's rule); its derivative gathers there.
"""

from __future__ import annotations

import functools
import math

from .._backend import FLOAT_KINDS, device_of, host, ndarray, xp_of
from .._backend.trace import kept
from .._tensor import Tensor, _make
from ..autograd.grad_mode import state as _grad_state
from ._op import Op, apply1, is_dual
from ._registry import register
from .vision import AxisMap, _shape_str, apply_maps, ntuple, pad_array, scalar_type_name, windows

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "max_pool1d", "max_pool1d_with_indices", "max_pool2d",
    "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices", "max_unpool1d",
    "max_unpool2d", "max_unpool3d"
]


# --------------------------------------------------------------------------- index scatter/gather

def _global_index(idx: ndarray, rows: int, plane: int) -> ndarray:
    """Flat plane indices ``idx`` (rows of ``..., *out``) as indices into the flattened
    (rows, plane) array."""
    base = xp_of(idx).arange(0, rows * plane, plane, dtype=host.int64)
    flat = idx.reshape(rows, idx.size // rows if rows else 0) + base[:, None]
    return flat.ravel()


class IndexScatter(Op):
    """Sum ``grad`` (..., *out) into zeros (..., *size) at flat plane indices ``idx`` (or at
    a ``WindowArgmax``): the derivative of a max pool. Its own derivative gathers at the same
    indices."""

    __slots__ = ("idx", "nd", "unique")

    def forward(self, g, idx, size, unique):
        self.idx, self.nd, self.unique = idx, len(size), unique
        lead = g.shape[:g.ndim - len(size)]
        plane = math.prod(size)
        rows = math.prod(lead)
        flat = idx.global_index().ravel() if type(idx) is WindowArgmax else \
            _global_index(idx, rows, plane)
        xp = xp_of(g)
        if unique:
            # NOTE: one fancy assignment at global flat indices: ~3x faster than put_along_axis.
            # ``+ 0`` gives torch's sum into zeros for a gradient of -0.0 (+0.0; 30 us of 230)
            out = xp.zeros(rows * plane, dtype=g.dtype)
            out[flat] = g.ravel() + 0
        else:
            out = xp.bincount(flat, weights=g.ravel(),
                              minlength=rows * plane).astype(g.dtype, copy=False)
        return out.reshape(*lead, *size)

    def backward(self, grad):
        return apply1(IndexGather, grad, self.idx, self.nd, self.unique)


class IndexGather(Op):
    """Take (..., *size) at flat indices ``idx`` (..., *out) into each of its planes (the last
    ``nd`` axes); derivative: IndexScatter."""

    __slots__ = ("idx", "size", "unique")

    def forward(self, a, idx, nd, unique):
        self.idx, self.size, self.unique = idx, a.shape[a.ndim - nd:], unique
        if type(idx) is WindowArgmax:
            flat = idx.global_index()
            return a.reshape(-1)[flat.ravel()].reshape(flat.shape)
        plane = math.prod(self.size)
        rows = a.size // plane if plane else 0
        return a.reshape(-1)[_global_index(idx, rows, plane)].reshape(idx.shape)

    def backward(self, grad):
        return apply1(IndexScatter, grad, self.idx, self.size, self.unique)


class _IndexedPool(Op):
    """A pool whose values and indices were computed by the caller (so the indices can be
    returned without grad); d/dx scatters the gradient to the indices."""

    __slots__ = ("idx", "size", "unique")

    def forward(self, a, values, idx, nd, unique):
        self.idx, self.size, self.unique = idx, a.shape[a.ndim - nd:], unique
        return values

    def backward(self, grad):
        return apply1(IndexScatter, grad, self.idx, self.size, self.unique)


class MaxPool2DWithIndicesBackward0(_IndexedPool):
    __slots__ = ()


class MaxPool3DWithIndicesBackward0(_IndexedPool):
    __slots__ = ()


class AdaptiveMaxPool2DBackward0(_IndexedPool):
    __slots__ = ()


class AdaptiveMaxPool3DBackward0(_IndexedPool):
    __slots__ = ()


_MAX_POOL_NODES = {2: MaxPool2DWithIndicesBackward0, 3: MaxPool3DWithIndicesBackward0}
_ADAPTIVE_MAX_NODES = {2: AdaptiveMaxPool2DBackward0, 3: AdaptiveMaxPool3DBackward0}


def _running_max(views, shape, dtype):
    """Max over ``views`` (one per kernel offset) and the offset of the max, by torch's rule
    ``val > max or isnan(val)``: the first maximum, or the last NaN.

    NOTE: masked copies (``copyto(where=)``) are ~10x slower than these branch-free steps:
    a running ``maximum``, then the first offset equal to the maximum in int8 arithmetic.
    """
    views = list(views)
    xp = xp_of(views[0])
    best = xp.array(views[0], dtype=dtype, copy=True)
    for v in views[1:]:
        xp.maximum(best, v, out=best)
    if dtype.kind in FLOAT_KINDS and xp.isnan(best).any():
        return best, _last_nan_or_first_max(views, shape)
    itype = host.int8 if len(views) < 128 else host.int64
    arg = xp.zeros(shape, dtype=itype)
    found = views[0] == best
    for k in range(1, len(views)):
        hit = views[k] == best
        hit &= ~found
        arg += hit.astype(itype) * itype(k)
        found |= hit
    return best, arg


def _last_nan_or_first_max(views, shape):
    xp = xp_of(views[0])
    best = xp.array(views[0], copy=True)
    arg = xp.zeros(shape, dtype=host.int64)
    for k, v in enumerate(views[1:], 1):
        upd = (v > best) | xp.isnan(v)
        xp.copyto(best, v, where=upd)
        xp.copyto(arg, k, where=upd)
    return arg


# --------------------------------------------------------------------------- tiling windows

@functools.lru_cache(maxsize=8)
def _window_origins(xp, device, rows: int, size: tuple, kernel: tuple, out: tuple) -> ndarray:
    """Where each window (rows, *out) of a tiling max pool starts in the flattened input (rows
    planes of ``size``), int64 on ``device``. Cached (a few shapes: the layers of a network),
    so never written to.

    NOTE: built per call (a broadcast add whose inner loop is one output row) it took 200 us
    of the 550 for the index walk of MaxPool2d(2) on 64x16x28x28."""
    nd = len(size)
    plane = math.prod(size)
    origin = xp.arange(0, rows * plane, plane, dtype=host.int64).reshape((rows,) + (1,) * nd)
    for ax, (o, k, step) in enumerate(zip(out, kernel, _plane_strides(size))):
        shape = [1] * (nd + 1)
        shape[ax + 1] = o
        origin = origin + (xp.arange(o, dtype=host.int64) * (k * step)).reshape(shape)
    return origin


class WindowArgmax:
    """Which element won each window of a max pool whose windows tile the input exactly
    (kernel == stride, no padding or dilation, sizes multiples of the kernel), kept per axis
    as the winning tap along it: what a max pool's backward needs, without int64 indices.

    ``args[ax]`` (None where the kernel is 1) is flat over the whole input, as
    ``_window_max`` computes it: at an element whose coordinates after ``ax`` are window
    starts, the tap along ``ax`` that won (the first maximum, the earlier axes' taps fixed at
    that element). Read from the first axis to the last, starting at the window's origin,
    that is torch's row-major "first maximum" rule.

    NOTE: the backward scatters at flat indices walked from these only when it runs (MaxPool2d(2)
    on 64x16x28x28: 0.38 ms walk + 0.25 ms scatter); replaying each reduction's adjoint as
    masked strided writes took 0.72 ms, and int64 indices made in the forward cost it ~0.4 ms
    even when no backward follows.
    """

    __slots__ = ("_global", "args", "kernel", "lead", "out", "size")

    def __init__(self, args: list, kernel: tuple, out: tuple, size: tuple, lead: tuple) -> None:
        self.args, self.kernel, self.out, self.size, self.lead = args, kernel, out, size, lead
        self._global = None

    def global_index(self) -> ndarray:
        """The winners' flat indices into the whole input (lead + out, int64): from each
        window's origin, add the winning tap of each axis times its step, first axis first
        (and kept: double backward reads them again)."""
        if self._global is not None:
            return self._global
        kernel, out, size = self.kernel, self.out, self.size
        rows = math.prod(self.lead)
        arg0 = next(a for a in self.args if a is not None)
        xp = xp_of(arg0)
        e = _window_origins(xp, device_of(arg0), rows, size, kernel, out)
        first = True
        for arg, step in zip(self.args, _plane_strides(size)):
            if arg is None:
                continue
            if first:  # read at the origins themselves: a strided view, no gather
                t = _window_starts(arg.reshape((rows,) + size), kernel, out)
                e = xp.multiply(t, step, dtype=host.int64) + e
                first = False
                continue
            t = arg.take(e)
            e += t if step == 1 and t.dtype == host.bool_ else \
                xp.multiply(t, step, dtype=host.int64)
        self._global = e.reshape(self.lead + out)
        return self._global

    def flat_index(self) -> ndarray:
        """torch's indices (int64, flat into each input plane)."""
        g = self.global_index()
        rows = math.prod(self.lead)
        plane = math.prod(self.size)
        base = xp_of(g).arange(0, rows * plane, plane, dtype=host.int64)
        return (g.reshape(rows, -1) - base[:, None]).reshape(g.shape)


def _window_starts(a: ndarray, kernel: tuple, out: tuple) -> ndarray:
    """The view (..., *out) of ``a`` (..., *spatial, spatial = out * kernel) at each window's
    first element."""
    nd = len(kernel)
    split = a.reshape(a.shape[:a.ndim - nd] + tuple(v for o, k in zip(out, kernel)
                                                   for v in (o, k)))
    return split[(Ellipsis,) + (slice(None), 0) * nd]


def _window_max(a: ndarray, kernel: tuple, out: tuple, with_argmax: bool):
    """Values (..., *out) of a max pool whose windows tile ``a`` (..., *spatial) and (with
    ``with_argmax``) the ``WindowArgmax``, or None when a NaN makes torch's "a NaN wins" rule
    the one to follow (the caller then takes the general path).

    One axis at a time, last axis first, over the whole flattened input: tap t of a window
    along an axis is the element t steps further, so each step is one contiguous ``maximum``
    (and ``>`` for the winning tap) of the array with itself shifted, whose results are
    right at the window starts (and garbage between them, never read); the values are picked
    out of the window starts at the end.

    NOTE: MaxPool2d(2) on 64x16x28x28 float32: 0.40 ms (values alone 0.28) against 0.84 ms
    (0.46) for the same passes over the strided even/odd views (inner loops one row long),
    and 1.26 ms for the running maximum over the four window taps with int8 first-maximum
    bookkeeping and int64 indices.
    """
    xp = xp_of(a)
    nd = len(kernel)
    size = a.shape[a.ndim - nd:]
    lead = a.shape[:a.ndim - nd]
    cur = a.reshape(-1)
    n = cur.size
    args = [None] * nd
    for ax, k, step in reversed(list(zip(range(nd), kernel, _plane_strides(size)))):
        if k == 1:
            continue
        m = n - step
        best = xp.empty(n, dtype=a.dtype)
        xp.maximum(cur[:m], cur[step:], out=best[:m])
        best[m:] = cur[m:]
        if with_argmax:  # a later tap wins only if greater: the first maximum
            arg = xp.empty(n, dtype=host.bool_)
            xp.greater(cur[step:], cur[:m], out=arg[:m])
            arg[m:] = False
            if k > 2:
                arg = arg.astype(host.int8 if k < 128 else host.int64)
        for t in range(2, k):
            m = n - t * step
            if with_argmax:  # arg -= (arg - t) * hit: t where hit, branch-free
                hit = cur[t * step:] > best[:m]
                arg[:m] -= (arg[:m] - arg.dtype.type(t)) * hit
            xp.maximum(best[:m], cur[t * step:], out=best[:m])
        args[ax] = arg if with_argmax else None
        cur = best
    vals = xp.ascontiguousarray(_window_starts(cur.reshape(a.shape), kernel, out))
    if not with_argmax:
        return vals, None
    if vals.dtype.kind in FLOAT_KINDS and xp.isnan(vals).any():
        return vals, None
    return vals, WindowArgmax(args, kernel, out, size, lead)


# --------------------------------------------------------------------------- shapes and checks

_WORDS = {2: "two", 3: "three"}


def _out_size(n, k, s, p, d, ceil_mode) -> int:
    """torch's pooling_output_shape: floor (or ceil) windows, the last one starting inside."""
    span = d * (k - 1) + 1
    out = (n + 2 * p - span + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_args(name, kernel_size, stride, padding, dilation, nd=2):
    """kernel, stride (default: the kernel), padding, dilation as ``nd``-tuples, refusing
    sequences of another length in torch's words (avg_pool3d's drop "either")."""
    either = "" if name == "avg_pool3d" else "either "
    n = _WORDS[nd]

    def arg(v, what, forms="a single int"):
        if isinstance(v, (list, tuple)) and len(v) not in (1, nd):
            verb = "be either" if what == "dilation" else f"{either}be"
            raise RuntimeError(f"{name}: {what} must {verb} {forms}, or a tuple of {n} ints")
        return ntuple(v, nd)

    kernel = arg(kernel_size, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else arg(stride, "stride", "omitted, a single int")
    return kernel, stride, arg(padding, "padding"), arg(dilation, "dilation")


def _check_pool2d(shape, kernel, stride, padding, dilation, ceil_mode):
    """torch's pool2d_shape_check, returning the output size."""
    if 0 in stride:
        raise RuntimeError("stride should not be zero")
    for p in padding:
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if min(kernel) <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kH: "
                           f"{kernel[0]} kW: {kernel[1]}")
    if min(stride) <= 0:
        raise RuntimeError("stride should be greater than zero, but got dH: "
                           f"{stride[0]} dW: {stride[1]}")
    if min(dilation) <= 0:
        raise RuntimeError("dilation should be greater than zero, but got dilationH: "
                           f"{dilation[0]} dilationW: {dilation[1]}")
    for k, p, d in zip(kernel, padding, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    if len(shape) not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if 0 in shape[-3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{_shape_str(shape)}")
    out = tuple(_out_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(shape[-2:], kernel, stride, padding, dilation))
    if min(out) < 1:
        c, h, w = shape[-3:]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}). Output size is too small")
    return out


def _check_pool3d(shape, kernel, stride, padding, dilation, ceil_mode, fn: str):
    """torch's 3-d checks in its order: the rank, pooling_output_shape per axis, then
    pool3d_shape_check (``fn`` names the kernel; avg_pool3d also wants input >= kernel)."""
    if len(shape) not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    out = []
    for n, k, s, p, d in zip(shape[-3:], kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > int((d * (k - 1) + 1) / 2):  # C++ division truncates
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
        out.append(_out_size(n, k, s, p, d, ceil_mode))
    (kt, kh, kw), (st, sh, sw), (dt, dh, dw) = kernel, stride, dilation
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {kt} kH: {kh} "
                           f"kW: {kw}")
    if min(stride) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {st} dH: {sh} "
                           f"dW: {sw}")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {dt} "
                           f"dilationH: {dh} dilationW: {dw}")
    if 0 in shape[len(shape) - 4:]:
        raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive length,"
                           f" but input has a shape of {_shape_str(shape)} and non-batch "
                           "dimension 0 has length zero!")
    c, t, h, w = shape[-4:]
    if fn == "avg_pool3d()" and (t < kt or h < kh or w < kw):
        raise RuntimeError(f"input image (T: {t} H: {h} W: {w}) smaller than kernel size "
                           f"(kT: {kt} kH: {kh} kW: {kw})")
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        (pt, ph, pw) = padding
        raise RuntimeError("pad should be smaller than or equal to half of kernel size, but got "
                           f"kT: {kt} kW: {kw} kH: {kh} padT: {pt} padW: {pw} padH: {ph}")
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({c}x{t}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")
    return tuple(out)


# --------------------------------------------------------------------------- max pool

def _plane_strides(sizes) -> list:
    """Row-major strides of a plane of ``sizes`` (the flat index of a position)."""
    return [math.prod(sizes[k + 1:]) for k in range(len(sizes))]


def _along(xp, v, k: int, nd: int):
    """``v`` (1-d) shaped to broadcast along axis ``k`` of ``nd`` trailing axes."""
    return v.reshape([-1 if j == k else 1 for j in range(nd)])


def _max_pool_arrays(a, kernel, stride, padding, dilation, out):
    """Values and flat plane indices of an N-d max pool of ``a`` (..., *spatial)."""
    nd = len(kernel)
    sizes = a.shape[a.ndim - nd:]
    his = [max((o - 1) * s + d * (k - 1) + 1 - n - p, 0)
           for o, s, d, k, n, p in zip(out, stride, dilation, kernel, sizes, padding)]
    fill = -math.inf if a.dtype.kind in FLOAT_KINDS else host.iinfo(a.dtype).min
    padded = pad_array(a, [(p, hi) for p, hi in zip(padding, his)], fill)
    win = windows(padded, kernel, stride, dilation, out)  # (..., *out, *kernel)
    lead = (Ellipsis,)
    views = (win[lead + k] for k in host.ndindex(*kernel))
    vals, arg = _running_max(views, win.shape[:win.ndim - nd], a.dtype)
    # flat index = window origin + the offset of the winning tap (a lookup, no divmod)
    xp = xp_of(a)
    strides = _plane_strides(sizes)
    origin = sum(_along(xp, (xp.arange(o) * s - p) * w, k, nd)
                 for k, (o, s, p, w) in enumerate(zip(out, stride, padding, strides)))
    offsets = sum(_along(xp, xp.arange(kk) * (d * w), k, nd)
                  for k, (kk, d, w) in enumerate(zip(kernel, dilation, strides))).ravel()
    idx = offsets.take(arg)
    idx += origin
    return vals, idx


def _tiles(a: ndarray, kernel, stride, padding, dilation, out) -> bool:
    """Whether the windows tile ``a`` exactly, ``_window_max``'s case (a size that leaves a
    remainder takes the general path)."""
    nd = len(kernel)
    return (a.dtype.kind in "fiuV" and a.size > 0 and tuple(kernel) == tuple(stride)
            and max(kernel) > 1 and not any(padding)
            and all(d == 1 or k == 1 for d, k in zip(dilation, kernel))
            and all(o * k == n for o, k, n in zip(out, kernel, a.shape[a.ndim - nd:])))


def _max_pool(input, nd, kernel_size, stride, padding, dilation, ceil_mode,
              name=None, with_indices: bool = True):
    """Values and (``with_indices``, else None) torch's int64 indices of an N-d max pool."""
    name = name or f"max_pool{nd}d"
    kernel, stride, padding, dilation = _pool_args(name, kernel_size, stride, padding, dilation,
                                                   nd)
    shape = tuple(input.shape)
    if nd == 2:
        out = _check_pool2d(shape, kernel, stride, padding, dilation, ceil_mode)
    else:
        out = _check_pool3d(shape, kernel, stride, padding, dilation, ceil_mode,
                            "max_pool3d_with_indices_out_cpu_template()")
    a = input._data
    record = (input._requires_grad and _grad_state.grad_enabled) or is_dual(input)
    if _tiles(a, kernel, stride, padding, dilation, out):
        vals, arg = _window_max(a, kernel, out, with_indices or record)
        if arg is not None or not (with_indices or record):
            y = _MAX_POOL_NODES[nd].apply(input, params=(vals, arg, nd, True)) if record \
                else _make(vals)
            return y, _make(arg.flat_index()) if with_indices else None
    vals, idx = _max_pool_arrays(a, kernel, stride, padding, dilation, out)
    # windows that cannot overlap send each gradient to its own element: a plain put
    unique = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel))
    y = _MAX_POOL_NODES[nd].apply(input, params=(vals, idx, nd, unique))
    return y, _make(idx) if with_indices else None


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool2d_with_indices: (values, flat indices into each plane)."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode)


@register(method=False)
def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool2d over a (N, C, H, W) or (C, H, W) input; stride defaults
    to kernel_size; padding counts as -inf; ``return_indices`` also gives flat plane indices."""
    y, idx = _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                       with_indices=return_indices)
    return (y, idx) if return_indices else y


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool3d_with_indices: (values, flat indices into each volume)."""
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode)


@register(method=False)
def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool3d over a (N, C, D, H, W) or (C, D, H, W) input; as
    max_pool2d, one more axis."""
    y, idx = _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                       with_indices=return_indices)
    return (y, idx) if return_indices else y


def _check_1d(name: str, input: Tensor) -> None:
    if input.dim() not in (2, 3) or 0 in input.shape[-2:]:
        raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{_shape_str(input.shape)}")


def _max_pool1d(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
                with_indices: bool):
    """max_pool1d's checks, then max_pool2d on the input with a unit axis before the last."""
    _check_1d("max_pool1d", input)
    k = ntuple(kernel_size, 1)[0]
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else ntuple(stride, 1)[0]
    p, d = ntuple(padding, 1)[0], ntuple(dilation, 1)[0]
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    o = _out_size(input.shape[-1], k, s, p, d, ceil_mode)
    if o < 1:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {o}")
    y, idx = _max_pool(input.unsqueeze(-2), 2, (1, k), (1, s), (0, p), (1, d), ceil_mode,
                       with_indices=with_indices)
    return y.squeeze(-2), None if idx is None else idx.squeeze(-2)


@register(method=False)
def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool1d_with_indices."""
    return _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@register(method=False)
def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool1d over a (N, C, L) or (C, L) input."""
    y, idx = _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)
    return (y, idx) if return_indices else y


# --------------------------------------------------------------------------- average pool

@kept(256)  # (maps are immutable: kept per size)
def _avg_map(axis, n, k, s, p, out, count_include_pad, fixed) -> AxisMap:
    """Average pooling along one axis as k strided taps over the zero-padded input, each
    weighing 1/(window size) (``fixed`` instead, if given)."""
    o = host.arange(out)
    start = o * s - p
    end = host.minimum(start + k, n + p)
    if fixed is not None:
        weight = host.full(out, fixed)
    elif count_include_pad:
        weight = 1.0 / (end - start)
    else:
        weight = 1.0 / (host.minimum(end, n) - host.maximum(start, 0))
    hi = max((out - 1) * s + k - n - p, 0)
    return AxisMap(axis, n, [(o * s + t, weight) for t in range(k)], pad=(p, hi))


def _avg_pool(input: Tensor, nd: int, kernel_size, stride, padding, ceil_mode: bool,
              count_include_pad: bool, divisor_override) -> Tensor:
    """N-d average pooling: one ``_avg_map`` per axis (the divisor override on the first)."""
    name = f"avg_pool{nd}d"
    kernel, stride, padding, _ = _pool_args(name, kernel_size, stride, padding, 1, nd)
    shape = tuple(input.shape)
    if nd == 2:
        out = _check_pool2d(shape, kernel, stride, padding, (1, 1), ceil_mode)
        if divisor_override is not None and divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    else:
        if len(shape) in (4, 5) and divisor_override is not None and divisor_override == 0:
            raise RuntimeError("divisor must be not zero")  # checked before the shapes
        out = _check_pool3d(shape, kernel, stride, padding, (1,) * nd, ceil_mode, "avg_pool3d()")
    fixed = [None] * nd if divisor_override is None else \
        [1.0 / divisor_override] + [1.0] * (nd - 1)
    sizes = shape[len(shape) - nd:]
    maps = [_avg_map(k - nd, sizes[k], kernel[k], stride[k], padding[k], out[k],
                     count_include_pad, fixed[k]) for k in range(nd)]
    return apply_maps(f"AvgPool{nd}DBackward0", input, maps)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """torch.nn.functional.avg_pool2d: window means over a (N, C, H, W) or (C, H, W) input,
    divided by the window size (padding counted or not) or ``divisor_override``."""
    if input.dim() < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got -3)")
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """torch.nn.functional.avg_pool3d over a (N, C, D, H, W) or (C, D, H, W) input; as
    avg_pool2d, one more axis."""
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


@register(method=False)
def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """torch.nn.functional.avg_pool1d over a (N, C, L) or (C, L) input (avg_pool2d inside)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for avg_pool1d)")
    k = ntuple(kernel_size, 1)[0]
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else ntuple(stride, 1)[0]
    p = ntuple(padding, 1)[0]
    y = avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad)
    return y.squeeze(-2)


# --------------------------------------------------------------------------- adaptive pools

def _adaptive_bounds(n: int, o: int):
    i = host.arange(o)
    start = (i * n) // o
    end = -((-(i + 1) * n) // o)  # ceil
    return start, end


@kept(256)  # (maps are immutable: kept per size)
def _adaptive_map(axis, n, o) -> AxisMap:
    start, end = _adaptive_bounds(n, o)
    k = int((end - start).max()) if o else 0
    taps = [(host.minimum(start + t, end - 1), (start + t < end) / (end - start))
            for t in range(k)]
    return AxisMap(axis, n, taps)


def _output_size(output_size, shape, dims: int, name: str) -> tuple:
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != dims:
            raise RuntimeError(f"{name}: output_size must be {dims}")
        sizes = output_size
    else:
        sizes = (output_size,) * dims
    return tuple(shape[len(shape) - dims + k] if s is None else int(s)
                 for k, s in enumerate(sizes))


def _adaptive_avg_pool(input: Tensor, out: tuple, dims: int) -> Tensor:
    """Adaptive average pooling of the last ``dims`` axes to ``out`` (interpolate 'area')."""
    shape = input.shape
    maps = [_adaptive_map(k - dims, shape[len(shape) - dims + k], out[k]) for k in range(dims)]
    name = {1: "AdaptiveAvgPool1DBackward0", 2: "AdaptiveAvgPool2DBackward0",
            3: "AdaptiveAvgPool3DBackward0"}[dims]
    return apply_maps(name, input, maps)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """torch.nn.functional.adaptive_avg_pool2d: window i spans [floor(i*n/o), ceil((i+1)*n/o));
    an output of (1, 1) is a mean, as torch computes it."""
    out = _output_size(output_size, input.shape, 2, "adaptive_avg_pool2d")
    if out == (1, 1):
        return input.mean((-2, -1), keepdim=True)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{_shape_str(input.shape)}")
    if min(out) < 0:
        raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than or "
                           f"equal to 0 but received {{{out[0]}, {out[1]}}}")
    return _adaptive_avg_pool(input, out, 2)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """torch.nn.functional.adaptive_avg_pool3d over a (N, C, D, H, W) or (C, D, H, W) input
    (``None`` keeps that size); an output of (1, 1, 1) is a mean, as torch computes it."""
    shape = tuple(input.shape)
    sizes = output_size if isinstance(output_size, (list, tuple)) else (output_size,) * 3
    if len(sizes) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    out = _output_size(sizes, shape, 3, "adaptive_avg_pool3d")
    if min(out) < 0:
        raise RuntimeError("adaptive_avg_pool3d: elements of output_size must be greater than or "
                           f"equal to 0 but received {{{out[0]}, {out[1]},{out[2]}}}")
    if out == (1, 1, 1):
        return input.mean((-3, -2, -1), keepdim=True)
    for d in range(1, len(shape)):
        if shape[d] == 0:
            raise RuntimeError("adaptive_avg_pool3d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {_shape_str(shape)} "
                               f"with dimension {d} being empty")
    if len(shape) not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{_shape_str(shape)}")
    return _adaptive_avg_pool(input, out, 3)


@register(method=False)
def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """torch.nn.functional.adaptive_avg_pool1d over a (N, C, L) or (C, L) input."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for "
                           "adaptive_avg_pool1d)")
    o = ntuple(output_size, 1)[0]
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, o)).squeeze(-2)


def _adaptive_max_pool(input: Tensor, output_size, nd: int):
    """Adaptive max pooling of the last ``nd`` axes: the running maximum over the taps of
    each window (windows shorter than the longest repeat their last element)."""
    name = f"adaptive_max_pool{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{_shape_str(input.shape)}")
    shape = tuple(input.shape)
    for d in range(1, len(shape)):
        if shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {_shape_str(shape)} "
                               f"with dimension {d} being empty")
    if nd == 3 and isinstance(output_size, (list, tuple)) and len(output_size) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    out = _output_size(output_size, shape, nd, name)
    if min(out) < 0:
        raise RuntimeError("Trying to create tensor with negative dimension "
                           f"{min(out)}: {_shape_str(shape[:-nd] + out)}")
    a = input._data
    xp = xp_of(a)
    sizes = shape[-nd:]
    bounds = [_adaptive_bounds(n, o) for n, o in zip(sizes, out)]
    kernel = [int((e - s).max()) if o else 0 for (s, e), o in zip(bounds, out)]
    # per axis, (O, k) source indices, the last one repeated: made on the host, moved to a's
    # device
    taps = [xp.asarray(host.minimum(s[:, None] + host.arange(k), e[:, None] - 1))
            for (s, e), k in zip(bounds, kernel)]
    lead = a.shape[:a.ndim - nd]
    if all(kernel):
        views = (a[(Ellipsis,) + tuple(_along(xp, t[:, j], k, nd) for k, (t, j)
                                       in enumerate(zip(taps, offset)))]
                 for offset in host.ndindex(*kernel))
        vals, arg = _running_max(views, lead + out, a.dtype)
        arg = arg.astype(host.int64)
        idx = xp.zeros(lead + out, dtype=host.int64)
        for k, w in reversed(list(enumerate(_plane_strides(sizes)))):
            arg, j = xp.divmod(arg, kernel[k])  # the tap along axis k, last axis first
            idx += taps[k][_along(xp, xp.arange(out[k]), k, nd), j] * w
    else:
        vals = xp.zeros(lead + out, dtype=a.dtype)
        idx = xp.zeros(lead + out, dtype=host.int64)
    y = _ADAPTIVE_MAX_NODES[nd].apply(input, params=(vals, idx, nd, False))
    return y, _make(idx)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool2d_with_indices."""
    return _adaptive_max_pool(input, output_size, 2)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool2d (``None`` in output_size keeps that size)."""
    y, idx = _adaptive_max_pool(input, output_size, 2)
    return (y, idx) if return_indices else y


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool3d_with_indices."""
    return _adaptive_max_pool(input, output_size, 3)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool3d (``None`` in output_size keeps that size)."""
    y, idx = _adaptive_max_pool(input, output_size, 3)
    return (y, idx) if return_indices else y


@register(name="adaptive_max_pool1d", method=False)
def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool1d_with_indices."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for "
                           "adaptive_max_pool1d)")
    o = ntuple(output_size, 1)[0]
    y, idx = _adaptive_max_pool(input.unsqueeze(-2), (1, o), 2)
    return y.squeeze(-2), idx.squeeze(-2)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool1d over a (N, C, L) or (C, L) input."""
    y, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (y, idx) if return_indices else y


# --------------------------------------------------------------------------- max unpool

class _MaxUnpool(Op):
    """Zeros of the output size with each input value written at its flat plane index (a
    repeated index keeps one of its values, as torch); d/dx gathers the gradient there."""

    __slots__ = ("idx", "nd")

    def forward(self, a, idx, size):
        self.idx, self.nd = idx, len(size)
        lead = a.shape[:a.ndim - len(size)]
        rows, plane = math.prod(lead), math.prod(size)
        out = xp_of(a).zeros(rows * plane, dtype=a.dtype)
        if a.size:
            out[_global_index(idx, rows, plane)] = a.ravel()
        return out.reshape(*lead, *size)

    def backward(self, grad):
        return apply1(IndexGather, grad, self.idx, self.nd, False)


class MaxUnpool2DBackward0(_MaxUnpool):
    __slots__ = ()


class MaxUnpool3DBackward0(_MaxUnpool):
    __slots__ = ()


def _unpool_output_size(input: Tensor, kernel, stride, padding, output_size) -> list:
    """torch.nn.functional._unpool_output_size: the inverse of the pool's output size, or
    ``output_size`` (its last len(kernel) entries) within a stride of it."""
    nd = len(kernel)
    shape = input.shape
    default = [(shape[len(shape) - nd + d] - 1) * stride[d] + kernel[d] - 2 * padding[d]
               for d in range(nd)]
    if output_size is None:
        ret = default
    else:
        if len(output_size) == nd + 2:
            output_size = output_size[2:]
        if len(output_size) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                             f"elements, but it has a length of '{len(output_size)}'")
        for d in range(nd):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < output_size[d] < hi:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} '
                                 f"must be between {lo} and {hi})")
        ret = [int(v) for v in output_size]
    for d in range(nd):
        if ret[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={ret[d]}")
    return ret


def _max_unpool(input: Tensor, indices: Tensor, size: list, nd: int, stride) -> Tensor:
    """torch's max_unpooling{2,3}d_forward_out_cpu checks, then the write."""
    fn = f"max_unpooling{nd}d_forward_out_cpu()"
    if str(indices.dtype) != "torch.int64":
        raise RuntimeError("elements in indices should be type int64" + (
            f" but got: {scalar_type_name(indices.dtype)}" if nd == 2 else ""))
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d "
                           f"Tensor, but got a tensor with {input.dim()} dimensions.")
    shape = tuple(input.shape)
    if shape != tuple(indices.shape):
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor "
                           f"({_shape_str(shape)}) but got indices tensor with shape: "
                           f"{_shape_str(indices.shape)}")
    for d in range(1, len(shape)):
        if shape[d] == 0:
            raise RuntimeError(f"{fn}: Expected input to have non-zero size for non-batch "
                               f"dimensions, but got {_shape_str(shape)} with dimension {d} "
                               "being empty.")
    if nd == 3 and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: "
                           f"{_shape_str(stride)}")
    idx = indices._data
    plane = math.prod(size)
    bad = (idx < 0) | (idx >= plane)
    if bad.any():  # torch's parallel loop reports any one of them; ember the last
        last = int(idx.ravel()[xp_of(idx).flatnonzero(bad.ravel())[-1]])
        raise RuntimeError(f"Found an invalid max index: {last} (output volumes are of size "
                           f"{'x'.join(str(s) for s in size)})")
    node = MaxUnpool2DBackward0 if nd == 2 else MaxUnpool3DBackward0
    return apply1(node, input, idx, tuple(size))


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """torch.nn.functional.max_unpool2d: the partial inverse of max_pool2d, each value put at
    its index in zeros of ``output_size`` (by default the size max_pool2d came from)."""
    kernel = ntuple(kernel_size, 2)
    stride = kernel if stride is None else ntuple(stride, 2)
    size = _unpool_output_size(input, kernel, stride, ntuple(padding, 2), output_size)
    return _max_unpool(input, indices, size, 2, stride)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """torch.nn.functional.max_unpool3d: the partial inverse of max_pool3d."""
    kernel = ntuple(kernel_size, 3)
    stride = kernel if stride is None else ntuple(stride, 3)
    size = _unpool_output_size(input, kernel, stride, ntuple(padding, 3), output_size)
    return _max_unpool(input, indices, size, 3, stride)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """torch.nn.functional.max_unpool1d: max_unpool2d on the input with a trailing unit axis,
    as torch computes it (so its node is SqueezeBackward1)."""
    kernel = ntuple(kernel_size, 1)
    stride = kernel if stride is None else ntuple(stride, 1)
    size = _unpool_output_size(input, kernel, stride, ntuple(padding, 1), output_size)
    return _max_unpool(input.unsqueeze(-1), indices.unsqueeze(-1), [*size, 1], 2,
                       stride).squeeze(-1)
