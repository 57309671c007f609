"""Vision ops (``F.*``): pad, interpolate, pixel_shuffle/pixel_unshuffle.

Also the window machinery the convolution and pooling modules share:

* ``windows``: the im2col view of an array (``sliding_window_view``, strided and dilated), no
  copy until a matmul or reduction consumes it;
* ``accumulate_windows``: its adjoint (col2im), one strided add per kernel offset;
* separable maps: a linear map applied along one axis at a time, each output element a
  weighted sum of a few input elements ("taps"). Padding by reflection, replication or
  wrapping, nearest and (bi)linear interpolation, average and adaptive average pooling are all
  such maps; one primitive pair (``map_node``) runs them forward and as their adjoint
  (transpose), each the other's derivative, so double backward comes for free.
"""

from __future__ import annotations

import math
from itertools import pairwise
from numbers import Integral

from .._backend import host, ndarray, xp_of
from .._tensor import Tensor
from ._op import Op, apply1
from ._registry import register

__all__ = ["interpolate", "pad", "pixel_shuffle", "pixel_unshuffle"]


# --------------------------------------------------------------------------- argument helpers

def ntuple(value, n: int, what: str = "") -> tuple:
    """An int or a sequence as an n-tuple of ints, as torch's ``_pair`` and the C++ ops read it."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return tuple(int(value[0]) for _ in range(n))
        if len(value) != n:
            raise RuntimeError(f"expected {what} to be a single integer value or a list of {n} "
                               f"values to match the convolution dimensions, but got "
                               f"{what}={list(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


# --------------------------------------------------------------------------- windows (im2col)

def windows(padded: ndarray, kernel: tuple, stride: tuple, dilation: tuple,
            out: tuple) -> ndarray:
    """The view (..., *out, *kernel) of the windows over the last ``len(kernel)`` axes of
    ``padded``: window ``o`` starts at ``o * stride``, taps ``dilation`` apart."""
    nd = len(kernel)
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    axes = tuple(range(padded.ndim - nd, padded.ndim))
    v = xp_of(padded).lib.stride_tricks.sliding_window_view(padded, span, axis=axes)
    lead = (slice(None),) * (padded.ndim - nd)
    starts = tuple(slice(0, (o - 1) * s + 1 if o else 0, s) for o, s in zip(out, stride))
    taps = tuple(slice(None, None, d) for d in dilation)
    return v[lead + starts + taps]


def accumulate_windows(cols: ndarray, padded: tuple, stride: tuple,
                       dilation: tuple) -> ndarray:
    """col2im: sum ``cols`` (..., *kernel, *out) into zeros (..., *padded), window ``o`` at
    ``o * stride``: one strided add per kernel offset, the adjoint of ``windows``."""
    nd = len(padded)
    lead_nd = cols.ndim - 2 * nd
    kernel = cols.shape[lead_nd:lead_nd + nd]
    out = cols.shape[lead_nd + nd:]
    buf = xp_of(cols).zeros(cols.shape[:lead_nd] + tuple(padded), dtype=cols.dtype)
    if not all(out):
        return buf
    lead = (slice(None),) * lead_nd
    for k in host.ndindex(*kernel):
        dst = tuple(slice(i * d, i * d + (o - 1) * s + 1, s)
                    for i, d, o, s in zip(k, dilation, out, stride))
        buf[lead + dst] += cols[lead + k]
    return buf


def pad_array(x: ndarray, pads, value=0) -> ndarray:
    """Pad the last ``len(pads)`` axes by ``(lo, hi)`` pairs (no copy when nothing to pad)."""
    if not any(lo or hi for lo, hi in pads):
        return x
    widths = [(0, 0)] * (x.ndim - len(pads)) + [tuple(p) for p in pads]
    return xp_of(x).pad(x, widths, constant_values=value)


# --------------------------------------------------------------------------- separable maps

def _as_index(idx: ndarray):
    """A slice when ``idx`` is an increasing arithmetic progression (a view, no gather)."""
    n = idx.size
    if n == 0:
        return slice(0, 0)
    if n == 1:
        return slice(int(idx[0]), int(idx[0]) + 1)
    step = int(idx[1] - idx[0])
    if step > 0 and host.all(host.diff(idx) == step):
        return slice(int(idx[0]), int(idx[-1]) + 1, step)
    return idx


def _slice_or(idx: ndarray):
    """``idx`` as a slice when it is an arithmetic progression of either sign, else itself."""
    n = idx.size
    if n == 1:
        return slice(int(idx[0]), int(idx[0]) + 1)
    step = int(idx[1] - idx[0])
    if step and host.all(host.diff(idx) == step):
        stop = int(idx[-1]) + step
        return slice(int(idx[0]), stop if stop >= 0 else None, step)
    return idx


def _scatter_plan(index):
    """How the adjoint adds a tap back, as (source positions, targets) pairs, each a slice or
    an index array with unique targets, so a plain ``+=`` is right. Few runs of steady step
    (a padding's borders and interior) give one pair per run; few repeats of each target
    (upsampling) give one pair per repeat; otherwise one ``add.reduceat`` (None)."""
    if isinstance(index, slice):
        return ((slice(None), index),)
    n = index.size
    d = host.diff(index)
    if not (d == 0).any():
        change = host.flatnonzero(d[1:] != d[:-1]) + 1
        if change.size <= 8:
            bounds = [0] + [int(c) + 1 for c in change] + [n]
            return tuple((slice(a, b), _slice_or(index[a:b])) for a, b in pairwise(bounds)
                         if b > a)
    order = host.argsort(index, kind="stable")
    s = index[order]
    first = host.r_[True, s[1:] != s[:-1]]
    rank = host.arange(n) - host.maximum.accumulate(host.where(first, host.arange(n), 0))
    occurrence = host.empty(n, dtype=host.int64)
    occurrence[order] = rank
    if occurrence.max() < 8:
        plan = []
        for k in range(int(occurrence.max()) + 1):
            pos = host.flatnonzero(occurrence == k)
            plan.append((_slice_or(pos), _slice_or(index[pos])))
        return tuple(plan)
    return None


def _reduceat_plan(index):
    order = host.argsort(index, kind="stable")
    s = index[order]
    starts = host.flatnonzero(host.r_[True, s[1:] != s[:-1]])
    return order, starts, s[starts]


def _on(xp, index):
    """A slice, or a host index array moved to ``xp``'s device (no copy on NumPy)."""
    return index if isinstance(index, slice) else xp.asarray(index)


class AxisMap:
    """A linear map along ``axis`` (negative): zero-pad by ``pad``, then each output element
    ``j`` is ``sum_t weight_t[j] * x[index_t[j]]`` (a weight of None means 1)."""

    __slots__ = ("axis", "n_in", "pad", "plans", "taps")

    def __init__(self, axis: int, n_in: int, taps, pad=(0, 0)):
        self.axis, self.n_in, self.pad = axis, n_in, tuple(pad)
        self.taps = tuple((_as_index(host.asarray(i, dtype=host.int64)),
                           None if w is None else host.asarray(w, dtype=host.float64))
                          for i, w in taps)
        self.plans = tuple(_scatter_plan(i) for i, _ in self.taps)

    def apply(self, a: ndarray) -> ndarray:
        xp = xp_of(a)
        ax = a.ndim + self.axis
        if self.pad != (0, 0):
            widths = [(0, 0)] * a.ndim
            widths[ax] = self.pad
            a = xp.pad(a, widths)
        pre = (slice(None),) * ax
        shape = (-1,) + (1,) * (-self.axis - 1)
        out = None
        for (index, w), plan in zip(self.taps, self.plans):
            if isinstance(index, slice) or plan is None:
                t = a[pre + (_on(xp, index),)]
            else:  # a few slice copies beat one gather along a middle axis
                size = list(a.shape)
                size[ax] = index.size
                t = xp.empty(size, dtype=a.dtype)
                for pos, target in plan:
                    t[pre + (_on(xp, pos),)] = a[pre + (_on(xp, target),)]
            if w is not None:
                t = t * xp.asarray(w.astype(a.dtype, copy=False).reshape(shape))
            if out is None:
                out = t if w is not None or not isinstance(index, slice) else t.copy()
            else:
                out += t
        return out

    def adjoint(self, g: ndarray) -> ndarray:
        xp = xp_of(g)
        ax = g.ndim + self.axis
        shape = list(g.shape)
        lo, hi = self.pad
        shape[ax] = self.n_in + lo + hi
        out = xp.zeros(shape, dtype=g.dtype)
        pre = (slice(None),) * ax
        wshape = (-1,) + (1,) * (-self.axis - 1)
        if g.shape[ax] == 0:
            return out[pre + (slice(lo, lo + self.n_in),)]
        for (index, w), plan in zip(self.taps, self.plans):
            if w is not None:
                t = g * xp.asarray(w.astype(g.dtype, copy=False).reshape(wshape))
            else:
                t = g
            if plan is not None:
                for pos, target in plan:
                    out[pre + (_on(xp, target),)] += t[pre + (_on(xp, pos),)]
            else:
                order, starts, targets = (xp.asarray(v) for v in _reduceat_plan(index))
                out[pre + (targets,)] += xp.add.reduceat(xp.take(t, order, axis=ax), starts,
                                                         axis=ax)
        return out[pre + (slice(lo, lo + self.n_in),)] if lo or hi else out


class SeparableMap(Op):
    """A chain of ``AxisMap``s; subclasses are named as torch names the op they implement.
    The derivative is the adjoint chain (``SeparableMapAdjoint``), whose derivative is this."""

    __slots__ = ("maps",)
    adjoint_node: type

    def forward(self, a, maps):
        self.maps = maps
        for m in maps:
            a = m.apply(a)
        return a

    def backward(self, grad):
        return apply1(self.adjoint_node, grad, self.maps)


class SeparableMapAdjoint(Op):
    """The transpose of a ``SeparableMap`` (its backward); its own backward is the map."""

    __slots__ = ("maps",)
    map_node: type

    def forward(self, g, maps):
        self.maps = maps
        for m in reversed(maps):
            g = m.adjoint(g)
        return xp_of(g).ascontiguousarray(g)

    def backward(self, grad):
        return apply1(self.map_node, grad, self.maps)


_MAP_NODES: dict[str, type] = {}


def map_node(name: str) -> type:
    """The ``SeparableMap`` subclass called ``name`` (e.g. ``ReflectionPad2DBackward0``)."""
    node = _MAP_NODES.get(name)
    if node is None:
        node = type(name, (SeparableMap,), {"__slots__": ()})
        adj = type(name[:-1] + "Backward0", (SeparableMapAdjoint,), {"__slots__": ()})
        node.adjoint_node, adj.map_node = adj, node
        _MAP_NODES[name] = node
    return node


def apply_maps(name: str, x: Tensor, maps) -> Tensor:
    return apply1(map_node(name), x, tuple(maps))


# --------------------------------------------------------------------------- pad

class ConstantPadNdBackward0(Op):
    """pad(mode='constant'): negative pads crop; d/dx = the gradient cropped (a negated pad)."""

    __slots__ = ("pads",)

    def forward(self, a, pads, value):
        self.pads = pads  # (lo, hi) per padded axis, last axes
        nd = len(pads)
        if not nd:
            return a.copy()
        crop = tuple(slice(-lo if lo < 0 else 0, n + hi if hi < 0 else n)
                     for (lo, hi), n in zip(pads, a.shape[a.ndim - nd:]))
        a = a[(slice(None),) * (a.ndim - nd) + crop]
        grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
        fill = 0 if value is None else value
        return xp_of(a).pad(a, [(0, 0)] * (a.ndim - nd) + grow, constant_values=fill)

    def backward(self, grad):
        return apply1(ConstantPadNdBackward0, grad, tuple((-lo, -hi) for lo, hi in self.pads), 0)


_NONCONST_HELP = ("Supported combinations for non-constant padding:\n"
                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
_PAD_NODES = {"reflect": "ReflectionPad{}DBackward0", "replicate": "ReplicationPad{}DBackward0",
              "circular": "CircularPad{}DBackward0"}


def _pad_index(n: int, lo: int, hi: int, mode: str) -> ndarray:
    """The source index of each output position along one padded axis."""
    if mode == "circular":  # as torch: negative pads crop first, then the crop wraps around
        core = host.arange(max(-lo, 0), n - max(-hi, 0))
        parts = [core[core.size - lo:]] if lo > 0 else []
        return host.concatenate(parts + [core] + ([core[:hi]] if hi > 0 else []))
    j = host.arange(-lo, n + hi)
    if mode == "reflect":
        j = host.abs(j)
        return host.where(j > n - 1, 2 * (n - 1) - j, j)
    return host.clip(j, 0, n - 1)


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """torch.nn.functional.pad: ``pad`` lists (left, right) pairs from the last dim backwards.

    Modes constant (negative pads crop), reflect, replicate and circular (the last three pad
    the last 1, 2 or 3 dims of a batched or unbatched input).
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd = len(pad) // 2
    shape = input.shape
    if nd > len(shape):
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{len(shape)}")
    pads = tuple((pad[2 * i], pad[2 * i + 1]) for i in reversed(range(nd)))  # first axis first
    if mode == "constant":
        for (lo, hi), n in zip(pads, shape[len(shape) - nd:]):
            if n + lo + hi < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        return apply1(ConstantPadNdBackward0, input, pads, value)
    if mode not in _PAD_NODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if nd not in (1, 2, 3) or len(shape) not in (nd + 1, nd + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for "
                                  f"{len(shape)}D input tensor.\n{_NONCONST_HELP}")
    if mode != "circular" and (0 in shape[1:] or (len(shape) == nd + 1 and 0 in shape)):
        dims = {1: "2D or 3D", 2: "3D or 4D", 3: "4D or 5D"}[nd]
        raise RuntimeError(f"Expected {dims} (batch mode) tensor with possibly 0 batch size and "
                           "other non-zero dimensions for input, but got: "
                           f"{_shape_str(shape)}")
    maps = []
    for k, ((lo, hi), n) in enumerate(zip(pads, shape[len(shape) - nd:])):
        axis = k - nd
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{len(shape) + axis} of input {_shape_str(shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + lo + hi <= 0:
            raise RuntimeError(f"input tensor with shape {_shape_str(shape)} is too small for "
                               f"padding {list(pad)}")
        maps.append(AxisMap(axis, n, [(_pad_index(n, lo, hi, mode), None)]))
    return apply_maps(_PAD_NODES[mode].format(nd), input, maps)


# --------------------------------------------------------------------------- interpolate

def _src_scale(n_in: int, n_out: int, scale, align_corners: bool, dtype) -> float:
    """Torch's ``area_pixel_compute_scale`` in the op's compute dtype."""
    if align_corners:
        return dtype.type(n_in - 1) / dtype.type(n_out - 1) if n_out > 1 else dtype.type(0)
    if scale is not None and scale > 0:
        return dtype.type(1.0 / scale)
    return dtype.type(n_in) / dtype.type(n_out)


def _nearest_map(axis, n_in, n_out, scale, exact, dtype) -> AxisMap:
    if n_out == n_in:
        idx = host.arange(n_out)
    elif n_out == 2 * n_in and not exact:
        idx = host.arange(n_out) >> 1
    else:
        s = host.float32(1.0 / scale) if scale is not None and scale > 0 else \
            host.float32(n_in) / host.float32(n_out)
        j = host.arange(n_out, dtype=host.float32)
        src = host.floor((j + host.float32(0.5)) * s if exact else j * s).astype(host.int64)
        idx = host.minimum(src, n_in - 1)
    return AxisMap(axis, n_in, [(idx, None)])


def _linear_map(axis, n_in, n_out, scale, align_corners, dtype) -> AxisMap:
    dt = host.dtype(host.float64 if dtype == host.float64 else host.float32)
    s = _src_scale(n_in, n_out, scale, align_corners, dt)
    j = host.arange(n_out, dtype=dt)
    if align_corners:
        real = s * j
    else:
        real = host.maximum(s * (j + dt.type(0.5)) - dt.type(0.5), dt.type(0))
    i0 = real.astype(host.int64)
    i1 = i0 + (i0 < n_in - 1)
    lam1 = real - i0.astype(dt)
    lam0 = dt.type(1) - lam1
    return AxisMap(axis, n_in, [(i0, lam0), (i1, lam1)])


_INTERP_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3}
_INTERP_NAMES = {"nearest": "UpsampleNearest{}DBackward0",
                 "nearest-exact": "UpsampleNearestExact{}DBackward0",
                 "linear": "UpsampleLinear1DBackward0", "bilinear": "UpsampleBilinear2DBackward0",
                 "trilinear": "UpsampleTrilinear3DBackward0"}


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """torch.nn.functional.interpolate for modes nearest, nearest-exact, linear, bilinear,
    trilinear and area, with torch's source-index arithmetic (float32 scales for nearest)."""
    dim = input.dim() - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format.")
            out_size = [int(s) for s in size]
        else:
            out_size = [int(size)] * dim
        scales = [None] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        out_size = [math.floor(n * s) for n, s in zip(input.shape[2:], scales)]
        if recompute_scale_factor or mode == "area":
            scales = [None] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by ember")
    if mode in ("bicubic", "lanczos"):
        raise NotImplementedError(f"interpolate: mode='{mode}' is not supported by ember yet; "
                                  "use 'bilinear' or 'nearest'")
    if mode not in _INTERP_NAMES and mode != "area" or dim not in (1, 2, 3):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    if mode in _INTERP_DIMS and _INTERP_DIMS[mode] != dim:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{_INTERP_DIMS[mode] + 2}D input")
    if mode == "area":
        from . import pooling  # cycle: pooling builds on this module's window helpers
        if dim == 1:
            return pooling.adaptive_avg_pool1d(input, out_size)
        if dim == 2:
            return pooling.adaptive_avg_pool2d(input, out_size)
        return pooling._adaptive_avg_pool(input, tuple(out_size), 3)
    in_size = input.shape[2:]
    if min(in_size) <= 0 or min(out_size) <= 0:
        raise RuntimeError(_size_error(in_size, out_size))
    dtype = input._data.dtype
    maps = []
    for k in reversed(range(dim)):  # the last axis first, as torch's kernels combine taps
        axis = k - dim
        if mode.startswith("nearest"):
            maps.append(_nearest_map(axis, in_size[k], out_size[k], scales[k],
                                     mode == "nearest-exact", dtype))
        else:
            maps.append(_linear_map(axis, in_size[k], out_size[k], scales[k], align_corners,
                                    dtype))
    return apply_maps(_INTERP_NAMES[mode].format(dim), input, maps)


def _size_error(in_size, out_size) -> str:
    names = ("D", "H", "W")[3 - len(in_size):]
    i = ", ".join(f"{n}: {s}" for n, s in zip(names, in_size))
    o = ", ".join(f"{n}: {s}" for n, s in zip(names, out_size))
    return f"Input and output sizes should be greater than 0, but got input ({i}) output ({o})"


# --------------------------------------------------------------------------- pixel shuffle

def _shuffle(a: ndarray, r: int) -> ndarray:
    *lead, c, h, w = a.shape
    a = a.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    a = a.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return a.reshape(*lead, c // (r * r), h * r, w * r)


def _unshuffle(a: ndarray, r: int) -> ndarray:
    *lead, c, h, w = a.shape
    a = a.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    a = a.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return a.reshape(*lead, c * r * r, h // r, w // r)


class PixelShuffleBackward0(Op):
    """pixel_shuffle: (*, C*r*r, H, W) -> (*, C, H*r, W*r); d/dx = pixel_unshuffle(grad)."""

    __slots__ = ("r",)

    def forward(self, a, r):
        self.r = r
        return _shuffle(a, r)

    def backward(self, grad):
        return apply1(PixelUnshuffleBackward0, grad, self.r)


class PixelUnshuffleBackward0(Op):
    """pixel_unshuffle: the inverse rearrangement; d/dx = pixel_shuffle(grad)."""

    __slots__ = ("r",)

    def forward(self, a, r):
        self.r = r
        return _unshuffle(a, r)

    def backward(self, grad):
        return apply1(PixelShuffleBackward0, grad, self.r)


def _check_shuffle(input: Tensor, factor, name: str, what: str) -> int:
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")
    if not isinstance(factor, Integral) or factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")
    return int(factor)


@register(method=False)
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """torch.nn.functional.pixel_shuffle."""
    r = _check_shuffle(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    c = input.shape[-3]
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    return apply1(PixelShuffleBackward0, input, r)


@register(method=False)
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """torch.nn.functional.pixel_unshuffle."""
    r = _check_shuffle(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    h, w = input.shape[-2:]
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    return apply1(PixelUnshuffleBackward0, input, r)
