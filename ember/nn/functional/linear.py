"""nn.functional linear layers: ``linear`` and ``bilinear``.

``linear`` folds its input to a matrix and records the nodes torch records for each case
(``AddmmBackward0``, ``MmBackward0``, then the view back), so graphs read as torch's do.
"""

from __future__ import annotations

import math

from ..._backend import host, matrix_product
from ..._tensor import Tensor, _make
from ...amp import _state as _amp
from ...autograd.forward_ad import state as _fw_state
from ...autograd.grad_mode import state as _grad_state
from ...ops._op import Op, apply1
from ...ops.arithmetic import _check_tensor, scalar_name
from ...ops.products import _low, mm
from ...ops.shape import UnsafeViewBackward0

__all__ = ["bilinear", "linear"]


class AddmmBackward0(Op):
    """addmm(bias, a, b) = bias + a @ b: d/dbias = grad (summed back by the engine),
    d/da = grad @ b^T, d/db = a^T @ grad.

    ``b`` is the weight's transpose (``weight.t()``), so d/db is computed as ``(grad^T @ a)^T``:
    the same GEMM with the operands swapped, whose result is C-ordered in the weight's own
    layout once ``TBackward0`` transposes it back.
    NOTE: ``a^T @ grad`` gave the weight a Fortran-ordered gradient, which AccumulateGrad's
    private (C-ordered) copy reads transposed: 214 µs against 37 for a (512, 784) float32
    copy; benchmarks/mlp.py's forward+backward went 5.06 -> 4.37 ms (best of 210 steps).
    """

    __slots__ = ()
    save_inputs = (1, 2)

    def forward(self, bias, a, b):
        return _addmm_array(bias, a, b)

    def backward(self, grad):
        a, b = self.saved()
        return (grad if self.needs_grad(0) else None,
                grad.mm(b.t()) if self.needs_grad(1) else None,
                grad.t().mm(a).t() if self.needs_grad(2) else None)

    def raw_backward(self, grad):
        # the rule above on arrays (the engine's path without create_graph), bit for bit
        a, b = self.saved()
        (eg, _), (ea, _), (eb, _) = self.next_functions
        return (grad if eg is not None else None,
                _low(matrix_product(grad, b._data.T), grad) if ea is not None else None,
                _low(matrix_product(grad.T, a._data), grad).T if eb is not None else None)


def _addmm_array(bias, a, b):
    """``bias + a @ b`` on arrays, rounded once to ``a``'s dtype (bfloat16 (ml_dtypes)
    multiplies in float32, and torch's GEMM rounds once)."""
    out = matrix_product(a, b)
    # (the bias added in place: one (N, M) temporary less than ``bias + a @ b``, the same
    # sums since IEEE addition commutes; no time measurably saved while glibc reuses arrays)
    out += bias
    return _low(out, a)


def _addmm_no_graph(a, w, bias):
    """``bias + a @ w.T`` when nothing is recorded and the arguments are the usual ones (the
    weight's transpose, a view, is not made as a Tensor); None when a check may fail: the
    general path then raises torch's error.
    NOTE: 10.2 -> ~6 µs per no_grad call on small matrices (torch 7.6)."""
    if not (a.shape[1] == w.shape[1] and a.dtype == w.dtype == bias.dtype
            and _bias_fits(bias.shape, a.shape[0], w.shape[0])):
        return None
    try:
        return _addmm_array(bias, a, w.T)
    except TypeError:  # arrays of two devices: the general path says which
        return None


class SqueezeBackward4(Op):
    """(1, n) -> (n,) after a 1-d input's mm (torch squeezes in place: not a view)."""

    __slots__ = ()

    def forward(self, a):
        return a.reshape(a.shape[1:])

    def backward(self, grad):
        return grad.unsqueeze(0)


def _addmm(bias: Tensor, a: Tensor, b: Tensor) -> Tensor:
    if a._data.shape[1] != b._data.shape[0]:
        mm(a, b)  # raises torch's shape error
    if not (a._data.dtype == b._data.dtype == bias._data.dtype):
        other = a if a._data.dtype != bias._data.dtype else b
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{scalar_name(bias.dtype)} and {scalar_name(other.dtype)}")
    if not _bias_fits(bias._data.shape, a._data.shape[0], b._data.shape[1]):
        bias.expand(a._data.shape[0], b._data.shape[1])  # raises torch's expand error
    return AddmmBackward0.apply(bias, a, b)


def _bias_fits(shape: tuple, rows: int, cols: int) -> bool:
    """Whether a bias of ``shape`` broadcasts to (rows, cols) without growing it."""
    if len(shape) == 1:  # the usual (out_features,) first, without broadcast_shapes (~2 µs)
        return shape[0] == cols or shape[0] == 1
    try:
        return host.broadcast_shapes(shape, (rows, cols)) == (rows, cols)
    except ValueError:
        return False


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``F.linear``: input @ weight.T + bias, weight of shape (out_features, in_features)."""
    if _amp.active:  # autocast: lower-precision op
        input, weight, bias = _amp.lower(input, weight, bias)
    _check_tensor(input, "linear")
    nd, wd = input._data.ndim, weight._data.ndim
    if nd == 0 or wd == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{nd}D and {wd}D")
    if wd == 1:  # a vector of weights: a dot product per row (torch's matmul path)
        if bias is not None and nd == 2:
            raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
        return input.matmul(weight) if bias is None else input.matmul(weight) + bias
    if nd == 2 and wd == 2 and bias is not None and not (_grad_state.grad_enabled and (
            input._requires_grad or weight._requires_grad or bias._requires_grad)) and \
            not _fw_state.active:
        out = _addmm_no_graph(input._data, weight._data, bias._data)
        if out is not None:
            return _make(out)
    wt = weight.t()
    if nd == 2:
        return mm(input, wt) if bias is None else _addmm(bias, input, wt)
    if nd == 1:
        if bias is None:
            return apply1(SqueezeBackward4, mm(input.unsqueeze(0), wt))
        return _addmm(bias, input.view(1, -1), wt).view(-1)
    shape = input._data.shape
    rows = math.prod(shape[:-1])
    out_shape = shape[:-1] + (weight._data.shape[0],)
    try:
        flat = input.view(rows, shape[-1])
    except RuntimeError:  # strides allow no view
        flat = None
    if flat is not None:
        if bias is not None:
            return _addmm(bias, flat, wt).view(out_shape)
        return apply1(UnsafeViewBackward0, mm(flat, wt), out_shape)
    flat = input.reshape(rows, shape[-1])  # a copy, as torch's contiguous + _unsafe_view
    out = apply1(UnsafeViewBackward0, mm(flat, wt), out_shape)
    return out if bias is None else out + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``F.bilinear``: y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o].

    A composite: (x1 @ W reshaped to (in1, out * in2)) times x2, summed over in2, then the
    view back to the batch shape (torch's last node, ``ViewBackward0``).
    """
    s1, s2, sw = input1._data.shape, input2._data.shape, weight._data.shape
    if len(sw) != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, but got {len(sw)} "
                           f"dimension(s)")
    if len(s1) != len(s2):
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {len(s1)} and "
                           f"{len(s2)}")
    if s1[:-1] != s2[:-1]:
        for i, (a, b) in enumerate(zip(s1[:-1], s2[:-1])):
            if a != b:
                raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim "
                                   f"{i}: got {a} and {b}")
    if s1[-1] != sw[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{s1[-1]} but expected {sw[1]}")
    if s2[-1] != sw[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{s2[-1]} but expected {sw[2]}")
    out_f, in1, in2 = sw
    rows = math.prod(s1[:-1])
    x1 = input1.reshape(rows, in1)
    x2 = input2.reshape(rows, in2)
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    y = (mm(x1, w).view(rows, out_f, in2) * x2.unsqueeze(1)).sum(-1)
    y = y.view(*s1[:-1], out_f)
    return y if bias is None else y + bias
