"""Vision ops (``F.*``): pad, interpolate, pixel_shuffle/pixel_unshuffle, grid_sample and
affine_grid.

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
import warnings
from itertools import pairwise
from numbers import Integral

from .._backend import host, ndarray, xp_of
from .._backend.trace import kept
from .._tensor import Tensor, _make
from ._op import Op, apply1
from ._registry import register
from .comparison import where

__all__ = ["affine_grid", "grid_sample", "interpolate", "pad", "pixel_shuffle",
           "pixel_unshuffle"]


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


_SCALAR_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                 "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool", "bfloat16": "BFloat16"}


def scalar_type_name(dtype) -> str:
    """torch's ScalarType name of ``dtype`` ("Float", "Long"), as its kernel errors print it."""
    name = str(dtype).removeprefix("torch.")
    return _SCALAR_TYPES.get(name, name)


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


# NOTE: a weighted map as a matmul with its dense (n_out, n_in) matrix ran bilinear
# upsampling ~3x faster, but a NaN or inf in the input then reaches every output along the
# axis (0 * nan is nan), where torch's windows keep it to their own outputs: the taps stay.


class AxisMap:
    """A linear map along ``axis`` (negative): zero-pad by ``pad``, then each output element
    ``j`` is ``sum_t weight_t[j] * x[index_t[j]]`` (a weight of None means 1). Immutable (the
    maps of interpolate and the pools are kept and shared); what ``apply`` and ``adjoint``
    derive from the taps is made on first use."""

    __slots__ = ("_plans", "axis", "n_in", "pad", "taps")

    def __init__(self, axis: int, n_in: int, taps, pad=(0, 0)):
        self.axis, self.n_in, self.pad = axis, n_in, tuple(pad)
        self.taps = tuple((_as_index(host.asarray(i, dtype=host.int64)),
                           None if w is None else host.asarray(w, dtype=host.float64))
                          for i, w in taps)
        self._plans = None

    @property
    def plans(self) -> tuple:
        if self._plans is None:
            self._plans = tuple(_scatter_plan(i) for i, _ in self.taps)
        return self._plans

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
        lead = (slice(None),) * (a.ndim - nd)
        a = a[lead + crop]
        grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
        # NOTE: the borders filled and the input copied into an empty result, not ``xp.pad``
        # (Python-level, slower): (16, 64, 256) padded (1, 1, 2, 2), 62 -> ~45 µs (torch 45)
        out = xp_of(a).empty(a.shape[:a.ndim - nd] + tuple(
            n + lo + hi for n, (lo, hi) in zip(a.shape[a.ndim - nd:], grow)), dtype=a.dtype)
        fill = 0 if value is None else value
        inner = []
        for i, ((lo, hi), n) in enumerate(zip(grow, a.shape[a.ndim - nd:])):
            before = lead + tuple(inner)  # earlier axes: only their inner part, filled below
            if lo:
                out[before + (slice(0, lo),)] = fill
            if hi:
                out[before + (slice(lo + n, None),)] = fill
            inner.append(slice(lo, lo + n))
        out[lead + tuple(inner)] = a
        return out

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


@kept(256)  # (maps are immutable: kept per size)
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


@kept(256)  # (maps are immutable: kept per size)
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


_CUBIC_A = -0.75  # torch's cubic convolution constant (OpenCV's; PIL uses -0.5)


def _cubic_weights(t, one):
    """torch's get_cubic_upsample_coefficients: the 4 tap weights at fraction ``t`` (arrays or
    Tensors; ``one`` is 1 in t's type)."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + one), near(t), near(one - t), far((one - t) + one)]


@kept(256)  # (maps are immutable: kept per size)
def _cubic_map(axis, n_in, n_out, scale, align_corners, dtype) -> AxisMap:
    """Bicubic along one axis: 4 taps around floor(src), clamped to the border, weighted by
    the cubic convolution kernel (torch's upsample_bicubic2d, no clamping of src at 0)."""
    dt = host.dtype(host.float64 if dtype == host.float64 else host.float32)
    s = _src_scale(n_in, n_out, scale, align_corners, dt)
    j = host.arange(n_out, dtype=dt)
    real = s * j if align_corners else s * (j + dt.type(0.5)) - dt.type(0.5)
    i0 = host.minimum(host.floor(real).astype(host.int64), n_in - 1)
    t = host.clip(real - i0.astype(dt), dt.type(0), dt.type(1))
    weights = _cubic_weights(t, dt.type(1))
    return AxisMap(axis, n_in, [(host.clip(i0 - 1 + k, 0, n_in - 1), w.astype(dt))
                                for k, w in enumerate(weights)])


_INTERP_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3}
_INTERP_NAMES = {"nearest": "UpsampleNearest{}DBackward0",
                 "nearest-exact": "UpsampleNearestExact{}DBackward0",
                 "linear": "UpsampleLinear1DBackward0", "bilinear": "UpsampleBilinear2DBackward0",
                 "trilinear": "UpsampleTrilinear3DBackward0",
                 "bicubic": "UpsampleBicubic2DBackward0"}


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """torch.nn.functional.interpolate for modes nearest, nearest-exact, linear, bilinear,
    bicubic, trilinear and area, with torch's source-index arithmetic (float32 scales for
    nearest); ``antialias=True`` is not implemented."""
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
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and dim == 2):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode == "lanczos" and dim == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if antialias:
        raise NotImplementedError(f"interpolate: antialias=True (mode='{mode}') is not "
                                  "implemented by ember; use antialias=False")
    # torch's bicubic kernel is 2-d only; other inputs get its generic refusal
    if (mode not in _INTERP_NAMES and mode != "area" or dim not in (1, 2, 3)
            or mode == "bicubic" and dim != 2):
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
        elif mode == "bicubic":
            maps.append(_cubic_map(axis, in_size[k], out_size[k], scales[k], align_corners,
                                   dtype))
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


# --------------------------------------------------------------------------- grid_sample

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """torch's grid_sampler_unnormalize: [-1, 1] to pixel coordinates (corner centres when
    ``align_corners``, else the outer pixel edges)."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """torch's reflect_coordinates: fold ``coord`` into [low, high] by repeated mirroring."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    extra = dist.fmod(span)
    flips = (dist.detach() / span).floor()
    return where(flips.fmod(2) == 0, extra + low, span - extra + low)


def _padded_coord(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """torch's compute_coordinates: border clamps, reflection mirrors then clamps."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else \
            _reflect(coord, -1, 2 * size - 1)
        return coord.clamp(0, size - 1)
    return coord


def _gather_taps(flat: Tensor, taps) -> list:
    """Values of ``flat`` (N, C, P) at each tap's (N, *out) plane index: (N, C, *out) each."""
    n, c = flat.shape[:2]
    out = []
    for index in taps:
        spatial = tuple(index.shape[1:])
        points = math.prod(spatial)
        idx = index.reshape(n, 1, points).expand(n, c, points)
        out.append(flat.gather(2, idx).reshape(n, c, *spatial))
    return out


def _sample(input: Tensor, ints, weights) -> Tensor:
    """sum over the taps of weight * input at the tap (zero where a tap is outside): ``ints``
    lists, per tap, one (N, *out) integer Tensor per spatial axis; ``weights`` per tap a
    (N, *out) Tensor."""
    sizes = input.shape[2:]
    strides = [math.prod(sizes[k + 1:]) for k in range(len(sizes))]
    flat = input.reshape(input.shape[0], input.shape[1], math.prod(sizes))
    taps, masks = [], []
    for coords in ints:
        inside = None
        index = None
        for c, n, w in zip(coords, sizes, strides):
            ok = (c >= 0) & (c < n)
            inside = ok if inside is None else inside & ok
            term = c.clamp(0, n - 1) * w
            index = term if index is None else index + term
        taps.append(index)
        masks.append(inside)
    out = None
    for value, weight, inside in zip(_gather_taps(flat, taps), weights, masks):
        w = where(inside, weight, 0).unsqueeze(1)
        out = value * w if out is None else out + value * w
    return out


def _check_grid_sampler(input: Tensor, grid: Tensor, mode: str) -> None:
    """torch's check_grid_sampler_common and the 2-d/3-d checks, in its order."""
    shapes = f"input with sizes {_shape_str(input.shape)} and grid with sizes " \
             f"{_shape_str(grid.shape)}"
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(input.dtype)} "
                           f"but found {scalar_type_name(grid.dtype)}")
    if input.shape[:1] != grid.shape[:1]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got {shapes}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last "
                           f"dimension, but got grid with sizes {_shape_str(grid.shape)}")
    for d in range(2, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {_shape_str(input.shape)} "
                               f"with dimension {d} being empty")
    if input.dim() not in (4, 5) or input.dim() != grid.dim():
        raise RuntimeError(f"grid_sampler(): expected {4 if input.dim() == 4 else 5}D input and "
                           f"grid with same number of dimensions, but got {shapes}")
    if input.dim() == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"grid_sampler_{input.dim() - 2}d_cpu_kernel_impl" not '
                                  f"implemented for '{scalar_type_name(input.dtype)}'")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """torch.nn.functional.grid_sample: ``input`` (N, C, H, W) or (N, C, D, H, W) sampled at
    ``grid`` (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3) of (x, y[, z]) in [-1, 1]; modes bilinear
    (trilinear for 5-d), nearest (round half to even) and bicubic (4-d, A = -0.75); padding
    zeros, border or reflection. Differentiable in input and grid."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    _check_grid_sampler(input, grid, mode)
    nd = input.dim() - 2
    sizes = input.shape[2:]
    # grid's last axis is (x, y[, z]): x indexes the last input axis
    coords = [_unnormalize(grid[..., nd - 1 - k], sizes[k], align_corners) for k in range(nd)]
    if mode == "bicubic":
        return _sample_bicubic(input, coords, padding_mode, align_corners)
    coords = [_padded_coord(c, n, padding_mode, align_corners) for c, n in zip(coords, sizes)]
    if mode == "nearest":  # nearbyint: half to even; the grid's gradient is 0, as torch's
        ints = [[c.detach().round().long() for c in coords]]
        return _sample(input, ints, [coords[0] * 0 + 1])
    lows = [c.detach().floor() for c in coords]
    fracs = [c - lo for c, lo in zip(coords, lows)]  # the weight of the upper neighbour
    ints, weights = [], []
    for corner in host.ndindex(*(2,) * nd):
        ints.append([lo.long() + b for lo, b in zip(lows, corner)])
        w = None
        for f, b in zip(fracs, corner):
            wk = f if b else 1 - f
            w = wk if w is None else w * wk
        weights.append(w)
    return _sample(input, ints, weights)


def _sample_bicubic(input: Tensor, coords, padding_mode: str, align_corners: bool) -> Tensor:
    """grid_sample's bicubic mode: 4x4 taps around floor(src), each tap's coordinate padded
    (torch's get_value_bounded), weighted by the cubic convolution kernel of the fractions."""
    lows = [c.detach().floor() for c in coords]
    coeffs = [_cubic_weights(c - lo, 1) for c, lo in zip(coords, lows)]  # per axis, 4 each
    sizes = input.shape[2:]
    tap_coords = [[_padded_coord(lo + (k - 1), n, padding_mode, align_corners).long()
                   for k in range(4)] for lo, n in zip(lows, sizes)]
    ints, weights = [], []
    for i, j in host.ndindex(4, 4):
        ints.append([tap_coords[0][i], tap_coords[1][j]])
        weights.append(coeffs[0][i] * coeffs[1][j])
    return _sample(input, ints, weights)


# --------------------------------------------------------------------------- affine_grid

def _base_coords(n: int, align_corners: bool, dtype) -> ndarray:
    """torch's linspace_from_neg_one: n points over [-1, 1], shrunk by (n - 1) / n to pixel
    centres unless ``align_corners``; 0 for a single point."""
    if n <= 1:
        return host.zeros(max(n, 0), dtype=dtype)
    r = host.linspace(-1, 1, n, dtype=dtype)
    return r if align_corners else r * dtype.type((n - 1) / n)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """torch.nn.functional.affine_grid: the (N, H, W, 2) or (N, D, H, W, 3) grid of theta
    (N, 2, 3) or (N, 3, 4) applied to the (x, y[, z], 1) pixel coordinates in [-1, 1]; the
    matmul carries theta's gradient."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if size[0] != theta.shape[0]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {theta.shape[2]}] but got: "
                           f"[{theta.shape[0]}, {theta.shape[2]}].")
    dtype = theta._data.dtype
    nd = len(spatial)
    axes = [_base_coords(n, align_corners, dtype) for n in reversed(spatial)]  # x, y[, z]
    mesh = host.meshgrid(*reversed(axes), indexing="ij")  # (D,) H, W each
    base = host.stack([*reversed(mesh), host.ones_like(mesh[0])], axis=-1)[..., None, :]
    base = _make(xp_of(theta._data).asarray(base))  # (*spatial, 1, nd + 1)
    # grid[n, *p, i] = sum_j base[*p, j] * theta[n, i, j]: torch's bmm, kept as a product and
    # a sum so that the result is no view (as torch's)
    return (base * theta.reshape(size[0], *(1,) * nd, nd, nd + 1)).sum(-1)
