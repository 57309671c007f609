"""Pooling (``F.*``; torch.max_pool1d, ... where torch has them): max/avg pool 1d/2d, adaptive
pools. The lp pools, composites, are in ``nn.functional.pooling``.

Max pools take the running maximum over the kernel offsets of a window view (one vectorised
step per offset, torch's tie rule: the first maximum wins, a NaN always wins) and record flat
indices into each input plane; their derivative scatters the gradient to those indices, and
that scatter's derivative gathers from them. Average pools are separable linear maps
(``vision.AxisMap``): k strided taps along each axis, weighted by torch's divisor. The 1-d
forms run the 2-d op on an unsqueezed input, as torch does (so their node is SqueezeBackward1).
"""

from __future__ import annotations

import math

from .._backend import host, ndarray, xp_of
from .._tensor import Tensor, _make
from ._op import Op, apply1
from ._registry import register
from .vision import AxisMap, _shape_str, apply_maps, ntuple, pad_array, windows

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool1d_with_indices", "max_pool2d",
    "max_pool2d_with_indices"
]


# --------------------------------------------------------------------------- index scatter/gather

def _global_index(idx: ndarray, rows: int, plane: int) -> ndarray:
    """Flat plane indices ``idx`` (rows of ``..., *out``) as indices into the flattened
    (rows, plane) array."""
    base = xp_of(idx).arange(0, rows * plane, plane, dtype=host.int64)
    flat = idx.reshape(rows, idx.size // rows if rows else 0) + base[:, None]
    return flat.ravel()


class IndexScatter(Op):
    """Sum ``grad`` (..., *out) into zeros (..., *size) at flat plane indices ``idx``: the
    derivative of a max pool. Its own derivative gathers at the same indices."""

    __slots__ = ("idx", "unique")

    def forward(self, g, idx, size, unique):
        self.idx, self.unique = idx, unique
        lead = g.shape[:-2]
        plane = math.prod(size)
        rows = math.prod(lead)
        flat = _global_index(idx, rows, plane)
        xp = xp_of(g)
        if unique:
            # NOTE: one fancy assignment at global flat indices: ~3x faster than put_along_axis
            out = xp.zeros(rows * plane, dtype=g.dtype)
            out[flat] = g.ravel()
        else:
            out = xp.bincount(flat, weights=g.ravel(),
                              minlength=rows * plane).astype(g.dtype, copy=False)
        return out.reshape(*lead, *size)

    def backward(self, grad):
        return apply1(IndexGather, grad, self.idx, self.unique)


class IndexGather(Op):
    """Take (..., *size) at flat plane indices ``idx`` (..., *out); derivative: IndexScatter."""

    __slots__ = ("idx", "size", "unique")

    def forward(self, a, idx, unique):
        self.idx, self.size, self.unique = idx, a.shape[-2:], unique
        plane = a.shape[-2] * a.shape[-1]
        rows = a.size // plane if plane else 0
        return a.reshape(-1)[_global_index(idx, rows, plane)].reshape(idx.shape)

    def backward(self, grad):
        return apply1(IndexScatter, grad, self.idx, self.size, self.unique)


class _IndexedPool(Op):
    """A pool whose values and indices were computed by the caller (so the indices can be
    returned without grad); d/dx scatters the gradient to the indices."""

    __slots__ = ("idx", "size", "unique")

    def forward(self, a, values, idx, unique):
        self.idx, self.size, self.unique = idx, a.shape[-2:], unique
        return values

    def backward(self, grad):
        return apply1(IndexScatter, grad, self.idx, self.size, self.unique)


class MaxPool2DWithIndicesBackward0(_IndexedPool):
    __slots__ = ()


class AdaptiveMaxPool2DBackward0(_IndexedPool):
    __slots__ = ()


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
    if dtype.kind == "f" and xp.isnan(best).any():
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


# --------------------------------------------------------------------------- shapes and checks

def _out_size(n, k, s, p, d, ceil_mode) -> int:
    """torch's pooling_output_shape: floor (or ceil) windows, the last one starting inside."""
    span = d * (k - 1) + 1
    out = (n + 2 * p - span + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_args(name, kernel_size, stride, padding, dilation):
    kernel = _pair_arg(kernel_size, name, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else _pair_arg(stride, name, "stride")
    padding = _pair_arg(padding, name, "padding")
    dilation = _pair_arg(dilation, name, "dilation")
    return kernel, stride, padding, dilation


def _pair_arg(v, name, what):
    if isinstance(v, (list, tuple)) and len(v) not in (1, 2):
        raise RuntimeError(f"{name}: {what} must either be a single int, or a tuple of two ints")
    return ntuple(v, 2)


def _check_pool2d(shape, kernel, stride, padding, dilation, ceil_mode, what="effective "):
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


# --------------------------------------------------------------------------- max pool

def _max_pool2d_arrays(a, kernel, stride, padding, dilation, out):
    """Values and flat plane indices of a 2-d max pool of ``a`` (..., H, W)."""
    h, w = a.shape[-2:]
    his = [max((o - 1) * s + d * (k - 1) + 1 - n - p, 0)
           for o, s, d, k, n, p in zip(out, stride, dilation, kernel, (h, w), padding)]
    fill = -math.inf if a.dtype.kind == "f" else host.iinfo(a.dtype).min
    padded = pad_array(a, [(p, hi) for p, hi in zip(padding, his)], fill)
    win = windows(padded, kernel, stride, dilation, out)  # (..., OH, OW, kh, kw)
    views = (win[..., i, j] for i in range(kernel[0]) for j in range(kernel[1]))
    vals, arg = _running_max(views, win.shape[:-2], a.dtype)
    # flat index = window origin + the offset of the winning tap (a lookup, no divmod)
    xp = xp_of(a)
    origin = ((xp.arange(out[0]) * stride[0] - padding[0])[:, None] * w
              + xp.arange(out[1]) * stride[1] - padding[1])
    offsets = (xp.arange(kernel[0])[:, None] * (dilation[0] * w)
               + xp.arange(kernel[1]) * dilation[1]).ravel()
    idx = offsets.take(arg)
    idx += origin
    return vals, idx


def _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, name="max_pool2d"):
    kernel, stride, padding, dilation = _pool_args(name, kernel_size, stride, padding, dilation)
    out = _check_pool2d(tuple(input.shape), kernel, stride, padding, dilation, ceil_mode)
    a = input._data
    vals, idx = _max_pool2d_arrays(a, kernel, stride, padding, dilation, out)
    # windows that cannot overlap send each gradient to its own element: a plain put
    unique = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel))
    y = MaxPool2DWithIndicesBackward0.apply(input, params=(vals, idx, unique))
    return y, _make(idx)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool2d_with_indices: (values, flat indices into each plane)."""
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


@register(method=False)
def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool2d over a (N, C, H, W) or (C, H, W) input; stride defaults
    to kernel_size; padding counts as -inf; ``return_indices`` also gives flat plane indices."""
    y, idx = _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (y, idx) if return_indices else y


def _check_1d(name: str, input: Tensor) -> None:
    if input.dim() not in (2, 3) or 0 in input.shape[-2:]:
        raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{_shape_str(input.shape)}")


@register(method=False)
def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool1d_with_indices."""
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
    y, idx = _max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode)
    return y.squeeze(-2), idx.squeeze(-2)


@register(method=False)
def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """torch.nn.functional.max_pool1d over a (N, C, L) or (C, L) input."""
    y, idx = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (y, idx) if return_indices else y


# --------------------------------------------------------------------------- average pool

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


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """torch.nn.functional.avg_pool2d: window means over a (N, C, H, W) or (C, H, W) input,
    divided by the window size (padding counted or not) or ``divisor_override``."""
    if input.dim() < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got -3)")
    kernel, stride, padding, _ = _pool_args("avg_pool2d", kernel_size, stride, padding, 1)
    out = _check_pool2d(tuple(input.shape), kernel, stride, padding, (1, 1), ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    h, w = input.shape[-2:]
    fixed = (None, None) if divisor_override is None else (1.0 / divisor_override, 1.0)
    maps = [_avg_map(-2, h, kernel[0], stride[0], padding[0], out[0], count_include_pad,
                     fixed[0]),
            _avg_map(-1, w, kernel[1], stride[1], padding[1], out[1], count_include_pad,
                     fixed[1])]
    return apply_maps("AvgPool2DBackward0", input, maps)


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


@register(method=False)
def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """torch.nn.functional.adaptive_avg_pool1d over a (N, C, L) or (C, L) input."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for "
                           "adaptive_avg_pool1d)")
    o = ntuple(output_size, 1)[0]
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, o)).squeeze(-2)


def _adaptive_max_pool2d(input: Tensor, output_size):
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: "
                           f"{_shape_str(input.shape)}")
    shape = tuple(input.shape)
    for d in range(1, len(shape)):
        if shape[d] == 0:
            raise RuntimeError("adaptive_max_pool2d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {_shape_str(shape)} "
                               f"with dimension {d} being empty")
    out = _output_size(output_size, shape, 2, "adaptive_max_pool2d")
    if min(out) < 0:
        raise RuntimeError("Trying to create tensor with negative dimension "
                           f"{min(out)}: {_shape_str(shape[:-2] + out)}")
    a = input._data
    h, w = shape[-2:]
    (hs, he), (ws, we) = _adaptive_bounds(h, out[0]), _adaptive_bounds(w, out[1])
    kh = int((he - hs).max()) if out[0] else 0
    kw = int((we - ws).max()) if out[1] else 0
    xp = xp_of(a)
    # (OH, kh), the last index repeated: made on the host, moved to a's device
    rows = xp.asarray(host.minimum(hs[:, None] + host.arange(kh), he[:, None] - 1))
    cols = xp.asarray(host.minimum(ws[:, None] + host.arange(kw), we[:, None] - 1))
    views = (a[..., rows[:, i][:, None], cols[:, j]] for i in range(kh) for j in range(kw))
    if kh and kw:
        vals, arg = _running_max(views, shape[:-2] + out, a.dtype)
        ki, kj = xp.divmod(arg.astype(host.int64), kw)
        idx = rows[xp.arange(out[0])[:, None], ki] * w + cols[xp.arange(out[1]), kj]
    else:
        vals = xp.zeros(shape[:-2] + out, dtype=a.dtype)
        idx = xp.zeros(shape[:-2] + out, dtype=host.int64)
    y = AdaptiveMaxPool2DBackward0.apply(input, params=(vals, idx, False))
    return y, _make(idx)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool2d_with_indices."""
    return _adaptive_max_pool2d(input, output_size)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool2d (``None`` in output_size keeps that size)."""
    y, idx = _adaptive_max_pool2d(input, output_size)
    return (y, idx) if return_indices else y


@register(name="adaptive_max_pool1d", method=False)
def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool1d_with_indices."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for "
                           "adaptive_max_pool1d)")
    o = ntuple(output_size, 1)[0]
    y, idx = _adaptive_max_pool2d(input.unsqueeze(-2), (1, o))
    return y.squeeze(-2), idx.squeeze(-2)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool1d over a (N, C, L) or (C, L) input."""
    y, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (y, idx) if return_indices else y
