"""Float sums on host arrays as BLAS products with vectors of ones: what ``sum``/``mean``
(``ops/reductions.py``), the backward engine's unbroadcasting and the norm and loss kernels
share, so that every path sums the same way (the same bits with and without
``create_graph``, eager and under ``ember.compile``, whose traced arrays are host arrays)."""

from __future__ import annotations

import numpy as host

from . import HOST_ARRAYS, xp_of
from .trace import ones as _plain_ones  # (NumPy's own, not capture's recording one)

# NOTE: NumPy's ``add.reduce`` is slow on float32/float64 against torch, and a product with a
# vector of ones (one BLAS gemv, ``blas_sum``) is the same sum 2-3x faster, single-threaded,
# (16, 64, 256) float32: all dims 40 -> 15 µs (by blocks of ``BLOCK``, below), dim 1 36 -> 15,
# dim 2 57 -> 16, dims (0, 1) 38 -> 14 (torch: 17-21). Each output is still one vectorised
# accumulation of at most ``BLOCK`` elements (or, over leading dims, a row-by-row one, as
# ``add.reduce``'s own), so the rounding error stays in NumPy's range. Below ``BLAS_MIN``
# elements the call's overhead wins and ``add.reduce`` stays. Whole ops, same shape:
# ``x.sum(1)`` 44 -> 20 µs, ``x.sum()`` 45 -> 24, ``x.mean()`` 50 -> 24, ``x.mean(-1)`` 67 -> 21
# (torch 21 / 17 / 19 / 21).
BLAS_MIN = 4096
BLOCK = 4096
ONES_KEPT: dict = {}


def ones_vector(n: int, dt):
    """A read-only vector of ``n`` ones of dtype ``dt``, kept (a few KiB each)."""
    v = ONES_KEPT.get((n, dt))
    if v is None:
        if len(ONES_KEPT) >= 64:
            ONES_KEPT.clear()
        v = _plain_ones(n, dt)  # (kept: a plain array, even when made during a capture)
        v.flags.writeable = False
        ONES_KEPT[(n, dt)] = v
    return v


def blas_sum(a, dims, keepdim: bool):
    """``add.reduce(a, axis=dims, keepdims=keepdim)`` as products with ones when ``a`` is a
    C-contiguous float32/float64 host array of ``BLAS_MIN`` elements or more and ``dims``
    (sorted; None: all) a run of consecutive dims; None otherwise (the caller reduces as
    before)."""
    if type(a) not in HOST_ARRAYS or a.size < BLAS_MIN or a.dtype.char not in "fd" or \
            not a.flags.c_contiguous:
        return None
    shape = a.shape
    if dims is None:
        lo, hi = 0, len(shape)
    else:
        lo, hi = dims[0], dims[-1] + 1
        if hi - lo != len(dims):
            return None
    outer = red = inner = 1
    for s in shape[:lo]:
        outer *= s
    for s in shape[lo:hi]:
        red *= s
    for s in shape[hi:]:
        inner *= s
    if red == 1:  # (nothing to add: add.reduce's copy is quicker)
        return None
    if inner == 1:
        if red <= BLOCK:
            out = host.matmul(a.reshape(outer, red), ones_vector(red, a.dtype))
        elif outer == 1:  # one long sum: by blocks, then the partial sums pairwise
            flat = a.reshape(-1)
            q = red // BLOCK * BLOCK
            part = host.matmul(flat[:q].reshape(-1, BLOCK), ones_vector(BLOCK, a.dtype))
            out = host.add.reduce(part) + host.add.reduce(flat[q:])
        else:
            return None
    elif outer == 1:
        out = host.matmul(ones_vector(red, a.dtype), a.reshape(red, inner))
    elif inner >= 64:  # one gemv per leading index
        out = host.matmul(ones_vector(red, a.dtype), a.reshape(outer, red, inner))
    else:
        return None
    if keepdim:
        return out.reshape(shape[:lo] + (1,) * (hi - lo) + shape[hi:])
    return out.reshape(shape[:lo] + shape[hi:])


def blas_sum_squares(a):
    """``add.reduce(a * a, axis=None)`` as BLAS dot products by blocks of ``BLOCK``, then the
    partial sums pairwise, for a C-contiguous float32/float64 host array of ``BLAS_MIN``
    elements or more (None otherwise). NOTE: (256, 512) float32 35 -> 8 µs (no squares
    array; mse_loss's and the 2-norm's sum)."""
    if type(a) not in HOST_ARRAYS or a.size < BLAS_MIN or a.dtype.char not in "fd" or \
            not a.flags.c_contiguous:
        return None
    flat = a.reshape(-1)
    q = a.size // BLOCK * BLOCK
    head, tail = flat[:q].reshape(-1, BLOCK), flat[q:]
    return host.add.reduce(host.vecdot(head, head)) + host.vecdot(tail, tail)


def sum_arrays(a, dims, keepdim: bool, out_dtype=None):
    """``a`` summed over ``dims`` (None: all) as torch's sum: ``blas_sum`` where it applies."""
    if out_dtype is None or out_dtype == a.dtype:
        out = blas_sum(a, dims, keepdim)
        if out is not None:
            return out
    return xp_of(a).add.reduce(a, axis=dims, keepdims=keepdim, dtype=out_dtype)
