"""Convolutions (``F.*``, and torch.conv1d, ...): conv1d/2d/3d and conv_transpose1d/2d/3d via
im2col and one matmul; unfold/fold (im2col/col2im, ``Im2ColBackward0``/``Col2ImBackward0``).

A convolution ``y = B(x, w)`` is bilinear, and three array kernels cover it and all its
derivatives:

* ``B(x, w)``, the convolution: an im2col copy of the window view and one batched matmul;
* ``Bt(g, w)``, its transpose in ``x`` (the transposed convolution, and d/dx of ``B``): one
  matmul, then col2im with one strided add per kernel offset;
* ``C(x, g)``, its transpose in ``w`` (d/dw of ``B``): one matmul of the im2col columns.

``ConvolutionBackward0`` runs ``B`` (or ``Bt`` when transposed); its backward is again
``ConvolutionBackward0`` (transposed the other way) for the input and ``C`` for the weight,
and ``C``'s backward is ``B`` and ``Bt`` (``<v, C(x, g)> = <B(x, v), g>``), so derivatives of
any order stay convolutions.
"""

from __future__ import annotations

import math
import warnings

from .._backend import host, ndarray, xp_of
from .._tensor import Tensor
from ..amp import _state as _amp
from ._op import Op, apply1
from ._registry import register
from .vision import _shape_str, accumulate_windows, ntuple, pad_array, windows

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "fold", "unfold"
]


# --------------------------------------------------------------------------- array kernels
# ``spec`` is (stride, pads, dilation, groups) with ``pads`` a (lo, hi) pair per spatial dim.
#
# NOTE: the im2col columns are stored channel-major, (C, *K, N, *out), and used through an
# (N, G, Cg*K, P) view, so that every BLAS call runs on plainly strided matrices and no kernel
# copies its result into NCHW order afterwards. Measured on the benchmarks/cnn.py second layer (N=64,
# C=16, 14x14, Cout=32, one thread; benchmarks/conv_kernels.py has the full table):
#
# * forward: the batched matmul over a (N, G, Cg*K, P) *view* of the channel-major columns
#   writes NCHW directly (1.42 ms vs 1.55 ms on sample-major columns), and the im2col copy
#   from the channel-major padded buffer is 0.79 ms vs 0.91 ms;
# * d/dweight: a matmul per sample over views of the columns and the gradient, then a sum
#   over the batch: 1.8 ms vs 3.0 ms on the sample-major columns (see ``_conv_weight``);
# * d/dinput does not use these columns, and stays sample-major (see ``_conv_transposed``).
#
# The flat "shifted rows" im2col of the *padded* image (each kernel offset one contiguous slice)
# multiplies the garbage columns between rows too: its GEMMs were 1.3x slower here. The shifted
# kernels below shift the *unpadded* plane instead and zero what falls off it, so the columns
# are exact (see ``_row_shifts``).

def _row_shifts(kernel: tuple, spec, size: tuple, out: tuple):
    """For a 2-d stride-1 convolution whose output rows are as wide as the input's (padding
    "same" in width), output position f = y*w + x reads input position f + s for kernel offset
    (i, j): one shift of the flattened plane. Yields (i, j, taps) with taps None when the
    offset only reads padding, else (y0, y1, b, s, f0, f1): output rows [y0, y1) read inside
    the input, the column shift b (columns x with x + b outside [0, w) would wrap into the
    neighbouring row: the caller zeroes them), and the flat output range [f0, f1) to move."""
    _, ((lh, _), (lw, _)), (dh, dw), _ = spec
    h, w = size
    for i in range(kernel[0]):
        a = i * dh - lh
        y0, y1 = max(0, -a), min(out[0], h - a)
        for j in range(kernel[1]):
            b = j * dw - lw
            s = a * w + b
            taps = (y0, y1, b, s, max(y0 * w, -s), min(y1 * w, h * w - s)) \
                if y0 < y1 and abs(b) < w else None
            yield i, j, taps


def _shifted(spec, size: tuple, out: tuple) -> bool:
    """``_row_shifts``' case: 2-d, stride 1, output rows as wide as the input's."""
    return len(size) == 2 and spec[0][0] == spec[0][1] == 1 and out[1] == size[1]


def _wrapped(cols6: ndarray, rows: tuple, b: int) -> ndarray:
    """The columns of ``cols6`` (..., oh, ow) in ``rows`` that a column shift ``b`` wraps."""
    return cols6[..., rows[0]:rows[1], :-b] if b < 0 else cols6[..., rows[0]:rows[1], -b:]


_CHUNK_BYTES = 1 << 20  # the columns the chunked d/dinput makes at a time: about an L2 cache


def _spatial(nd: int) -> tuple:
    return tuple(range(2, 2 + nd))


def _columns(x: ndarray, kernel: tuple, spec, out: tuple) -> ndarray:
    """im2col: the windows of padded ``x`` (N, C, *S) as an (N, G, Cg*K, P) view, P = prod(out),
    of columns laid out channel-major (C, *K, N, *out): one copy, from a channel-major padded
    buffer. A 1x1 kernel with unit stride and no padding needs no copy: the view is ``x``."""
    stride, pads, dilation, groups = spec
    n, c = x.shape[:2]
    nd = len(kernel)
    p = math.prod(out)
    cgk = (c // groups) * math.prod(kernel)
    if math.prod(kernel) == 1 and all(s == 1 for s in stride) and not any(map(any, pads)):
        # NOTE: 0.50 ms forward for conv_kernels.py's 1x1 case vs 0.68 ms through the
        # channel-major copy (0.60 ms for the old sample-major im2col)
        return x.reshape(n, groups, cgk, p)
    xp = xp_of(x)
    if _shifted(spec, x.shape[2:], out):
        return _shifted_columns(x, kernel, spec, out)
    xt = x.transpose(1, 0, *_spatial(nd))                          # (C, N, *S), a view
    if any(lo or hi for lo, hi in pads):
        # the padded buffer is written channel-major straight away (one copy for both)
        size = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
        buf = xp.zeros((c, n) + size, dtype=x.dtype)
        inner = tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pads))
        buf[(slice(None), slice(None)) + inner] = xt
        xt = buf
    win = windows(xt, kernel, stride, dilation, out)               # (C, N, *O, *K)
    cols = xp.empty((c,) + tuple(kernel) + (n,) + tuple(out), dtype=x.dtype)
    # NOTE: assigning into ``empty`` measured 2x faster than ``ascontiguousarray`` of the view
    cols[...] = win.transpose(0, *range(2 + nd, 2 + 2 * nd), 1, *_spatial(nd))
    return cols.reshape(groups, cgk, n, p).transpose(2, 0, 1, 3)


def _shifted_columns(x: ndarray, kernel: tuple, spec, out: tuple,
                     ones: bool = False) -> ndarray:
    """``_columns`` in ``_row_shifts``' case, in the same layout: per kernel offset one copy of
    the shifted planes (rows of h*w, no padded buffer), then zeros where it reads padding.
    ``ones`` (one group only) appends a row of ones, for the bias (see ``_conv``).

    NOTE: 0.44 ms vs 1.0 ms for the window copy on cnn.py's second layer (its inner loops
    run along 14-wide rows), 0.09 vs 0.13 ms on the first."""
    n, c, h, w = x.shape
    groups = spec[3]
    p = out[0] * out[1]
    rows = c * math.prod(kernel)
    xf = x.reshape(n, c, h * w).transpose(1, 0, 2)                 # (C, N, h*w), a view
    buf = xp_of(x).empty((rows + ones, n, p), dtype=x.dtype)
    if ones:
        buf[-1] = 1
    cols = buf[:rows].reshape((c,) + tuple(kernel) + (n, p))
    cols6 = cols.reshape(cols.shape[:4] + tuple(out))
    for i, j, taps in _row_shifts(kernel, spec, (h, w), out):
        dst = cols[:, i, j]                                        # (C, N, P)
        if taps is None:
            dst[...] = 0
            continue
        y0, y1, b, s, f0, f1 = taps
        dst[..., f0:f1] = xf[..., f0 + s:f1 + s]
        dst[..., :f0] = 0
        dst[..., f1:] = 0
        if b:
            _wrapped(cols6[:, i, j], (y0, y1), b)[...] = 0
    return buf.reshape(groups, (rows + ones) // groups, n, p).transpose(2, 0, 1, 3)


def _shifted_col2im(cols: ndarray, size: tuple, spec, buf: ndarray) -> None:
    """``_col2im`` in ``_row_shifts``' case, from (N, C, kh, kw, oh, ow) contiguous columns
    (a temporary: its wrapping columns are zeroed in place) into ``buf`` (N, C, h*w): one add
    of long rows per kernel offset, the offset reading the plane unshifted (if any) copied in
    first instead of zeros.

    NOTE: 0.82 ms vs 1.6 ms for the strided adds on cnn.py's second layer (14-wide rows)."""
    n, c, kh, kw, oh, ow = cols.shape
    h, w = size
    flat = cols.reshape(n, c, kh, kw, oh * ow)
    shifts = list(_row_shifts((kh, kw), spec, size, (oh, ow)))
    first = next((k for k, (_, _, t) in enumerate(shifts)
                  if t is not None and t[3:] == (0, 0, h * w)), None)
    if first is None:
        buf[...] = 0
    else:
        i, j, _ = shifts.pop(first)
        buf[...] = flat[:, :, i, j]
    for i, j, taps in shifts:
        if taps is None:
            continue
        y0, y1, b, s, f0, f1 = taps
        if b:
            _wrapped(cols[:, :, i, j], (y0, y1), b)[...] = 0
        buf[:, :, f0 + s:f1 + s] += flat[:, :, i, j, f0:f1]


def _col2im(cols: ndarray, size: tuple, spec) -> ndarray:
    """The adjoint of im2col: sum ``cols`` (N, C, *K, *O) into zeros (N, C, *size), one strided
    add per kernel offset, each clipped to the unpadded input (no padded buffer)."""
    stride, pads, dilation, _ = spec
    nd = len(size)
    kernel = cols.shape[2:2 + nd]
    out = cols.shape[2 + nd:]
    buf = xp_of(cols).zeros(cols.shape[:2] + tuple(size), dtype=cols.dtype)
    lead = (slice(None), slice(None))
    for k in host.ndindex(*kernel):
        src, dst = [], []
        for i, d, o, s, (lo, _), n in zip(k, dilation, out, stride, pads, size):
            # output o lands on input o * s + i * d - lo; keep those inside [0, n)
            first = max(0, -((i * d - lo) // s))
            last = min(o, (n - 1 + lo - i * d) // s + 1)
            if first >= last:
                break
            begin = first * s + i * d - lo
            src.append(slice(first, last))
            dst.append(slice(begin, begin + (last - first - 1) * s + 1, s))
        else:
            buf[lead + tuple(dst)] += cols[lead + k + tuple(src)]
    return buf


def _conv(x: ndarray, w: ndarray, spec, out: tuple, keep_cols: bool = False, bias=None):
    """B(x, w): the convolution of x (N, C, *S) with w (Cout, C/G, *K), output (N, Cout, *out),
    plus ``bias`` (Cout,) if given."""
    groups = spec[3]
    n = x.shape[0]
    cout = w.shape[0]
    # NOTE: in the shifted case the bias is one more column of the weight times a row of
    # ones in the columns: 0.25-0.4 ms less per cnn.py step than adding it to the output after
    fold = bias is not None and groups == 1 and math.prod(w.shape[2:]) > 1 \
        and _shifted(spec, x.shape[2:], out)
    if fold:
        cols = _shifted_columns(x, w.shape[2:], spec, out, ones=True)  # (N, 1, C*K + 1, P)
        wm = xp_of(w).concatenate([w.reshape(1, cout, -1), bias.reshape(1, cout, 1)], axis=2)
    else:
        cols = _columns(x, w.shape[2:], spec, out)                 # (N, G, Cg*K, P) view
        wm = w.reshape(groups, cout // groups, cols.shape[2])
    y = wm @ cols                                  # (N, G, Og, P): the result is already NCHW
    y = y.reshape(n, cout, *out)
    if fold:
        cols = cols[:, :, :-1]
    elif bias is not None:
        y += bias.reshape((-1,) + (1,) * len(out))
    return (y, cols) if keep_cols else y


def _conv_transposed(g: ndarray, w: ndarray, spec, size: tuple) -> ndarray:
    """Bt(g, w): the transpose of ``B`` in x, result (N, G*Cg, *size): col2im of one matmul."""
    stride, pads, _, groups = spec
    n, cout = g.shape[:2]
    out = g.shape[2:]
    kernel = w.shape[2:]
    cg = w.shape[1]
    p = math.prod(out)
    cgk = cg * math.prod(kernel)
    gm = g.reshape(n, groups, cout // groups, p)                   # (N, G, Og, P)
    wm = w.reshape(groups, cout // groups, cgk).transpose(0, 2, 1)  # (G, Cg*K, Og)
    if cgk != cg and n and _shifted(spec, size, out):
        # NOTE: matmul and col2im a few samples at a time, so that the columns are still in
        # cache for the adds: cnn.py's second-layer d/dinput took 2.20-2.24 ms per training
        # step in chunks of 8-16 samples (about 1 MiB of columns), 2.47 in chunks of 4 and
        # 2.69-2.73 all at once
        step = max(1, _CHUNK_BYTES // (cgk * p * g.itemsize))
        dx = None
        for s in range(0, n, step):
            cols = wm @ gm[s:s + step]
            if dx is None:
                dx = xp_of(cols).empty((n, groups * cg, math.prod(size)), dtype=cols.dtype)
            _shifted_col2im(cols.reshape(-1, groups * cg, *kernel, *out), size, spec,
                            dx[s:s + step])
        return dx.reshape(n, groups * cg, *size)
    cols = wm @ gm                                                 # (N, G, Cg*K, P)
    if cgk == cg and all(s == 1 for s in stride) and not any(map(any, pads)):
        return cols.reshape(n, groups * cg, *size)                 # 1x1: no col2im
    # NOTE: sample-major columns here: col2im of the channel-major ones (written through
    # ``matmul(out=)`` into the layout ``_columns`` uses) measured no faster on cnn.py's second
    # layer (2.77 vs 2.75 ms) and slower with stride 2 (2.21 vs 1.90 ms)
    cols = cols.reshape(n, groups * cg, *kernel, *out)
    return _col2im(cols, size, spec)


def _conv_weight(x: ndarray, g: ndarray, spec, kernel: tuple,
                 cols: ndarray | None = None) -> ndarray:
    """C(x, g): the transpose of ``B`` in w, result (Cout, C/G, *kernel): a matmul per sample
    of the channel-major columns with the gradient, summed over the batch."""
    groups = spec[3]
    xp = xp_of(g)
    n, cout = g.shape[:2]
    p = math.prod(g.shape[2:])
    if cols is None:
        cols = _columns(x, kernel, spec, g.shape[2:])              # (N, G, Cg*K, P) view
    gm = g.reshape(n, groups, cout // groups, p).transpose(0, 1, 3, 2)  # (N, G, P, Og) view
    # NOTE: (Cg*K, P) @ (P, Og) per sample, both operands plain strided views (no copy):
    # 0.20 ms vs 0.28 ms for (Og, P) @ (P, Cg*K) on cnn.py's first layer (Cg*K = 9), and vs
    # 0.75 ms + 0.2 ms for one (Cg*K, N*P) @ (N*P, Og) GEMM after a transpose copy of the
    # gradient (OpenBLAS is slow on that thin, long GEMM); on the second layer all three are
    # within 10% (1.77-1.80 ms vs 2.14 ms for the other orientation).
    gw = (cols @ gm).sum(0)                                      # (G, Cg*K, Og)
    gw = xp.ascontiguousarray(gw.transpose(0, 2, 1))
    return gw.reshape(cout, x.shape[1] // groups, *kernel)


# --------------------------------------------------------------------------- the ops

class ConvolutionBackward0(Op):
    """convolution(input, weight, bias): ``B`` (or ``Bt`` when transposed) plus bias.

    d/dinput is the transposed-the-other-way convolution of the grad with the weight, d/dweight
    is ``C`` and d/dbias sums the grad over batch and space.
    """

    __slots__ = ("cols", "kernel", "spec", "transposed")
    save_inputs = (0, 1)

    def forward(self, x, w, b, spec, transposed, size):
        self.spec, self.transposed, self.kernel = spec, transposed, w.shape[2:]
        self.cols = None
        if transposed:
            y = _conv_transposed(x, w, spec, size)
        else:
            # NOTE: the im2col columns are kept for d/dweight (saves one im2col per step)
            y, self.cols = _conv(x, w, spec, size, keep_cols=True, bias=b)
        if transposed and b is not None:
            y += b.reshape((-1,) + (1,) * len(size))
        # bfloat16 (ml_dtypes) multiplies in float32: round once, as torch does
        return y if y.dtype == x.dtype else y.astype(x.dtype)

    def backward(self, grad):
        x, w = self.saved()
        spec, cols = self.spec, self.cols
        self.cols = None
        gx = gw = gb = None
        if self.transposed:
            if self.needs_grad(0):
                gx = ConvolutionBackward0.apply(grad, w, None, params=(spec, False, x.shape[2:]))
            if self.needs_grad(1):
                gw = ConvolutionWeightBackward0.apply(grad, x, params=(spec, self.kernel, None))
        else:
            # NOTE: the weight gradient first, while the kept columns may still be in cache
            # (the input gradient's own columns would evict them): cnn.py's two d/dweight
            # took 2.23-2.25 ms per step this way, 2.41-2.48 ms after d/dinput
            if self.needs_grad(1):
                gw = ConvolutionWeightBackward0.apply(x, grad, params=(spec, self.kernel, cols))
            if self.needs_grad(0):
                gx = ConvolutionBackward0.apply(grad, w, None, params=(spec, True, x.shape[2:]))
        if self.needs_grad(2):
            gb = grad.sum([0] + list(range(2, grad.dim())))
        return gx, gw, gb


class ConvolutionWeightBackward0(Op):
    """``C(x, g)``, the weight gradient of a convolution; its derivatives are convolutions:
    d/dx = Bt(g, v) and d/dg = B(x, v) for an upstream gradient v of the weight's shape."""

    __slots__ = ("spec",)
    save_inputs = (0, 1)

    def forward(self, x, g, spec, kernel, cols):
        self.spec = spec
        gw = _conv_weight(x, g, spec, kernel, cols)
        return gw if gw.dtype == x.dtype else gw.astype(x.dtype)

    def backward(self, v):
        x, g = self.saved()
        spec = self.spec
        dx = dg = None
        if self.needs_grad(0):
            dx = ConvolutionBackward0.apply(g, v, None, params=(spec, True, x.shape[2:]))
        if self.needs_grad(1):
            dg = ConvolutionBackward0.apply(x, v, None, params=(spec, False, g.shape[2:]))
        return dx, dg


# --------------------------------------------------------------------------- argument checks

def _dims_str(v) -> str:
    return " x ".join(str(int(s)) for s in v)


def _prepare(name: str, nd: int, input: Tensor, weight: Tensor, bias, stride, dilation,
             groups: int):
    """Torch's checks shared by convolutions; returns (input batched?, stride, dilation)."""
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {_shape_str(input.shape)}")
    wd = weight.dim() - 2
    stride_t = ntuple(stride, nd, "stride")
    if wd != nd:
        raise RuntimeError(f"expected stride to be a single integer value or a list of {wd} "
                           "values to match the convolution dimensions, but got "
                           f"stride={list(stride_t)}")
    dilation_t = ntuple(dilation, nd, "dilation")
    if input._data.dtype != weight._data.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(input)} but found "
                           f"{_scalar_name(weight)}")
    if bias is not None and bias._data.dtype != weight._data.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(input)} but found "
                           f"{_scalar_name(bias)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if min(stride_t) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation_t) <= 0:
        raise RuntimeError("non-positive dilation is not supported")
    return input.dim() == nd + 2, stride_t, dilation_t


def _scalar_name(t: Tensor) -> str:
    name = repr(t.dtype).removeprefix("torch.")
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "bfloat16": "BFloat16"}.get(name, name)


def _check_weight(weight: Tensor, groups: int, wshape, xshape, channels: int,
                  transposed: bool) -> None:
    if wshape[0] == 0 and not transposed:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least 1 at dimension "
                           f"0, but got weight of size {_shape_str(wshape)} instead")
    if wshape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{_shape_str(wshape)}] "
                           "instead")
    expected = wshape[0] if transposed else wshape[1] * groups
    if xshape[1] != expected:
        head = "Given transposed=1, weight of size" if transposed else \
            f"Given groups={groups}, weight of size"
        raise RuntimeError(f"{head} {_shape_str(wshape)}, expected input{_shape_str(xshape)} to "
                           f"have {expected} channels, but got {xshape[1]} channels instead")


def _check_bias(bias, wshape, n_out: int) -> None:
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != n_out):
        raise RuntimeError(f"Given weight of size {_shape_str(wshape)}, expected bias to be "
                           f"1-dimensional with {n_out} elements, but got bias of size "
                           f"{_shape_str(bias.shape)} instead")


def _convnd(name: str, nd: int, input: Tensor, weight: Tensor, bias, stride, padding,
            dilation, groups: int) -> Tensor:
    if _amp.active:  # autocast: lower-precision op
        input, weight, bias = _amp.lower(input, weight, bias)
    batched, stride, dilation = _prepare(name, nd, input, weight, bias, stride, dilation, groups)
    x = input if batched else input.unsqueeze(0)
    xshape, wshape = tuple(x.shape), tuple(weight.shape)
    kernel = wshape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
            if any(t % 2 for t in totals):
                warnings.warn("Using padding='same' with even kernel lengths and odd dilation "
                              "may require a zero-padded copy of the input be created",
                              UserWarning, stacklevel=3)
            pads = tuple((t // 2, t - t // 2) for t in totals)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        p = ntuple(padding, nd, "padding")
        if min(p) < 0:
            raise RuntimeError("negative padding is not supported")
        pads = tuple((v, v) for v in p)
    _check_weight(weight, groups, wshape, xshape, xshape[1], transposed=False)
    _check_bias(bias, wshape, wshape[0])
    padded = [s + lo + hi for s, (lo, hi) in zip(xshape[2:], pads)]
    span = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(p < s for p, s in zip(padded, span)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_dims_str(padded)}). "
                           f"Kernel size: ({_dims_str(span)}). Kernel size can't be greater "
                           "than actual input size")
    out = tuple((p - s) // st + 1 for p, s, st in zip(padded, span, stride))
    spec = (stride, pads, dilation, groups)
    y = ConvolutionBackward0.apply(x, weight, bias, params=(spec, False, out))
    return y if batched else y.squeeze(0)


def _conv_transposend(name: str, nd: int, input: Tensor, weight: Tensor, bias, stride, padding,
                      output_padding, groups: int, dilation) -> Tensor:
    if _amp.active:  # autocast: lower-precision op
        input, weight, bias = _amp.lower(input, weight, bias)
    batched, stride, dilation = _prepare(name, nd, input, weight, bias, stride, dilation, groups)
    x = input if batched else input.unsqueeze(0)
    xshape, wshape = tuple(x.shape), tuple(weight.shape)
    kernel = wshape[2:]
    p = ntuple(padding, nd, "padding")
    op = ntuple(output_padding, nd, "output_padding")
    if min(p) < 0:
        raise RuntimeError("negative padding is not supported")
    if min(op) < 0:
        raise RuntimeError("negative output_padding is not supported")
    if any(o >= s and o >= d for o, s, d in zip(op, stride, dilation)):
        names = ("depth", "height", "width")[3 - nd:]
        parts = []
        for what, vals in (("output_padding", op), ("stride", stride), ("dilation", dilation)):
            parts.append(" ".join(f"{what}_{n}: {v}" for n, v in zip(names, vals)))
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got {' '.join(parts)}")
    _check_weight(weight, groups, wshape, xshape, xshape[1], transposed=True)
    _check_bias(bias, wshape, wshape[1] * groups)
    size = tuple((i - 1) * s - 2 * pp + d * (k - 1) + o + 1
                 for i, s, pp, d, k, o in zip(xshape[2:], stride, p, dilation, kernel, op))
    if min(size) <= 0:
        raise RuntimeError(f"Given input size per channel: ({_dims_str(xshape[2:])}). Calculated "
                           f"output size per channel: ({_dims_str(size)}). Output size is too "
                           "small")
    spec = (stride, tuple((v, v) for v in p), dilation, groups)
    y = ConvolutionBackward0.apply(x, weight, bias, params=(spec, True, size))
    return y if batched else y.squeeze(0)


@register(method=False)
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """torch.nn.functional.conv1d: input (N, C, L) or (C, L), weight (Cout, C/groups, k);
    padding an int, a tuple, 'valid' or 'same'."""
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@register(method=False)
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """torch.nn.functional.conv2d: input (N, C, H, W) or (C, H, W), weight
    (Cout, C/groups, kh, kw); padding an int, a pair, 'valid' or 'same'."""
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@register(method=False)
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """torch.nn.functional.conv3d: input (N, C, D, H, W) or (C, D, H, W)."""
    return _convnd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


@register(method=False)
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """torch.nn.functional.conv_transpose1d: weight (C, Cout/groups, k); the adjoint of conv1d
    in its input, output length (L-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1."""
    return _conv_transposend("conv_transpose1d", 1, input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


@register(method=False)
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """torch.nn.functional.conv_transpose2d: weight (C, Cout/groups, kh, kw)."""
    return _conv_transposend("conv_transpose2d", 2, input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


@register(method=False)
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """torch.nn.functional.conv_transpose3d: weight (C, Cout/groups, kd, kh, kw)."""
    return _conv_transposend("conv_transpose3d", 3, input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


# --------------------------------------------------------------------------- unfold / fold

class Im2ColBackward0(Op):
    """unfold (im2col): (N, C, H, W) -> (N, C*kh*kw, L); d/dx = fold (col2im) of the grad."""

    __slots__ = ("params", "size")

    def forward(self, a, kernel, dilation, padding, stride):
        self.size, self.params = a.shape[-2:], (kernel, dilation, padding, stride)
        out = _blocks(a.shape[-2:], kernel, dilation, padding, stride)
        padded = pad_array(a, [(p, p) for p in padding])
        w = windows(padded, kernel, stride, dilation, out)  # (*, C, oh, ow, kh, kw)
        w = xp_of(w).moveaxis(w, (-2, -1), (-4, -3))        # (*, C, kh, kw, oh, ow)
        return w.reshape(*a.shape[:-3], a.shape[-3] * kernel[0] * kernel[1], out[0] * out[1])

    def backward(self, grad):
        return apply1(Col2ImBackward0, grad, self.size, *self.params)


class Col2ImBackward0(Op):
    """fold (col2im): (N, C*kh*kw, L) -> (N, C, H, W), overlapping blocks summed;
    d/dcols = unfold (im2col) of the grad."""

    __slots__ = ("params",)

    def forward(self, a, size, kernel, dilation, padding, stride):
        self.params = (kernel, dilation, padding, stride)
        out = _blocks(size, kernel, dilation, padding, stride)
        lead, ckk = a.shape[:-2], a.shape[-2]
        cols = a.reshape(*lead, ckk // (kernel[0] * kernel[1]), *kernel, *out)
        padded = tuple(s + 2 * p for s, p in zip(size, padding))
        buf = accumulate_windows(cols, padded, stride, dilation)
        crop = tuple(slice(p, p + s) for p, s in zip(padding, size))
        return xp_of(buf).ascontiguousarray(buf[(Ellipsis,) + crop])

    def backward(self, grad):
        return apply1(Im2ColBackward0, grad, *self.params)


def _blocks(size, kernel, dilation, padding, stride) -> tuple:
    """The number of sliding blocks along each dim (torch's im2col/col2im shape check)."""
    for what, v, low in (("kernel", kernel, 0), ("stride", stride, 0),
                         ("dilation", dilation, 0), ("padding", padding, -1)):
        if v[0] <= low or v[1] <= low:
            raise RuntimeError(f"{what} should be greater than {'zero' if low == 0 else 'or equal to zero'}, "
                               f"but got {what}_height: {v[0]} {what}_width: {v[1]}")
    out = tuple((s + 2 * p - (d * (k - 1) + 1)) // st + 1
                for s, p, d, k, st in zip(size, padding, dilation, kernel, stride))
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(size)}, kernel_size="
                           f"{tuple(kernel)}, dilation={tuple(dilation)}, padding={tuple(padding)}, "
                           f"calculated shape of the array of sliding blocks as {out}, but its "
                           "components must be at least one.")
    return out


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """torch.nn.functional.unfold: sliding blocks of a (N, C, H, W) or (C, H, W) input as
    columns (N, C*kh*kw, L)."""
    if input.dim() not in (3, 4):
        raise NotImplementedError("Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.dim()}D)")
    args = [ntuple(v, 2) for v in (kernel_size, dilation, padding, stride)]
    return apply1(Im2ColBackward0, input, *args)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """torch.nn.functional.fold: sum columns (N, C*kh*kw, L) or (C*kh*kw, L) back into a
    (N, C, H, W) image; the adjoint of ``unfold``."""
    if input.dim() not in (2, 3):
        raise NotImplementedError("Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.dim()}D)")
    size, kernel, dilation, padding, stride = (
        ntuple(v, 2) for v in (output_size, kernel_size, dilation, padding, stride))
    shape = input.shape
    ckk, length = shape[-2], shape[-1]
    if ckk % (kernel[0] * kernel[1]):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={ckk} and "
                           f"kernel_size={kernel}.")
    out = _blocks(size, kernel, dilation, padding, stride)
    if out[0] * out[1] != length:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, stride={stride}, expected "
                           "size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {out[0]} * {out[1]} = {out[0] * out[1]}, but got "
                           f"input.size(2)={length}.")
    return apply1(Col2ImBackward0, input, size, kernel, dilation, padding, stride)
