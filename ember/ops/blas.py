"""BLAS-backed products: mm, mv, dot, bmm and matmul with torch's 1-d and batching rules."""

from __future__ import annotations

from .._backend import host
from .._tensor import Tensor
from ._op import BinaryOp
from .elementwise import scalar_name


def _dtype_check(a: Tensor, b: Tensor, op: str) -> None:
    if a._data.dtype != b._data.dtype:
        from .._backend import from_numpy_dtype
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{from_numpy_dtype(a._data.dtype).name} != "
                           f"{from_numpy_dtype(b._data.dtype).name}")


class MmBackward0(BinaryOp):
    """mm(a, b): d/da = grad @ b^T, d/db = a^T @ grad."""

    __slots__ = ()
    save_inputs = (0, 1)
    save_crosswise = True

    def forward(self, a, b):
        return a @ b

    def backward(self, grad):
        a, b = self.saved()
        return (grad.mm(b.t()) if self.needs_grad(0) else None,
                a.t().mm(grad) if self.needs_grad(1) else None)

    def raw_backward(self, grad):
        a, b = self.saved()
        (ea, _), (eb, _) = self.next_functions
        return (grad @ b._data.T if ea is not None else None,
                a._data.T @ grad if eb is not None else None)


class MvBackward0(BinaryOp):
    """mv(m, v): d/dm = outer(grad, v), d/dv = m^T @ grad."""

    __slots__ = ()
    save_inputs = (0, 1)
    save_crosswise = True

    def forward(self, m, v):
        return m @ v

    def backward(self, grad):
        m, v = self.saved()
        return (grad.unsqueeze(1) * v if self.needs_grad(0) else None,
                m.t().mv(grad) if self.needs_grad(1) else None)


class DotBackward0(BinaryOp):
    """dot(a, b): d/da = grad * b, d/db = grad * a."""

    __slots__ = ()
    save_inputs = (0, 1)
    save_crosswise = True

    def forward(self, a, b):
        return a.dot(b)

    def backward(self, grad):
        a, b = self.saved()
        return (grad * b if self.needs_grad(0) else None,
                grad * a if self.needs_grad(1) else None)


class BmmBackward0(BinaryOp):
    """bmm(a, b): d/da = grad @ b^T, d/db = a^T @ grad, per batch."""

    __slots__ = ()
    save_inputs = (0, 1)
    save_crosswise = True

    def forward(self, a, b):
        return a @ b

    def backward(self, grad):
        a, b = self.saved()
        return (grad.bmm(b.mT) if self.needs_grad(0) else None,
                a.mT.bmm(grad) if self.needs_grad(1) else None)


class MatmulBackward0(BinaryOp):
    """matmul with broadcast batch dims, where one side may be 1-d (promoted to a row or a
    column, as NumPy and torch do); the engine sums gradients over broadcast dims.

    NOTE: torch folds these cases into mm/bmm plus views, so its grad_fn names the fold
    (UnsafeViewBackward0, ...); one node keeps ember's graph small and the result not a view.
    """

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, b):
        return a @ b

    def backward(self, grad):
        a, b = self.saved()
        ga = gb = None
        if a._data.ndim == 1:  # (k) @ (..., k, n) -> (..., n)
            row = grad.unsqueeze(-2)
            if self.needs_grad(0):
                ga = matmul(row, b.mT).squeeze(-2)
            if self.needs_grad(1):
                gb = a.unsqueeze(-1) * row
        elif b._data.ndim == 1:  # (..., n, k) @ (k) -> (..., n)
            col = grad.unsqueeze(-1)
            if self.needs_grad(0):
                ga = col * b
            if self.needs_grad(1):
                gb = matmul(a.mT, col).squeeze(-1)
        else:
            if self.needs_grad(0):
                ga = matmul(grad, b.mT)
            if self.needs_grad(1):
                gb = matmul(a.mT, grad)
        return ga, gb


def _size_error(op: str, a: Tensor, b: Tensor) -> RuntimeError:
    sa, sb = a._data.shape, b._data.shape
    if op == "dot":
        return RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src "
                            f"[{sb[0]}] to have the same number of elements, but got {sa[0]} "
                            f"and {sb[0]} elements respectively")
    if op == "mv":
        return RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({sa[0]}x{sa[1]}), vec "
                            f"({sb[0]})")
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[-2]}x{sa[-1]} and "
                        f"{sb[-2]}x{sb[-1]})")


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """``torch.mm``: 2-D @ 2-D."""
    if input._data.ndim != 2 or mat2._data.ndim != 2:
        bad = input if input._data.ndim != 2 else mat2
        raise RuntimeError(f"{'self' if bad is input else 'mat2'} must be a matrix")
    if input._data.shape[1] != mat2._data.shape[0]:
        raise _size_error("mm", input, mat2)
    _dtype_check(input, mat2, "mm")
    return MmBackward0.apply(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """``torch.mv``: 2-D @ 1-D."""
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vec._data.ndim}, "
                           f"{input._data.ndim}, {vec._data.ndim}")
    _dtype_check(input, vec, "mv")
    if input._data.shape[1] != vec._data.shape[0]:
        raise _size_error("mv", input, vec)
    return MvBackward0.apply(input, vec)


def check_vectors(input: Tensor, other: Tensor) -> None:
    """dot's (and vdot's) argument checks, with torch's messages."""
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input._data.ndim}D and "
                           f"{other._data.ndim}D tensors")
    if input._data.dtype != other._data.dtype:
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{scalar_name(input.dtype)} and {scalar_name(other.dtype)}")
    if input._data.shape[0] != other._data.shape[0]:
        raise _size_error("dot", input, other)


def dot(input: Tensor, other: Tensor) -> Tensor:
    """``torch.dot``: 1-D . 1-D."""
    check_vectors(input, other)
    return DotBackward0.apply(input, other)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``torch.bmm``: (b, n, m) @ (b, m, p), no broadcasting."""
    if input._data.ndim != 3 or mat2._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if input._data.shape[0] != mat2._data.shape[0] or input._data.shape[2] != mat2._data.shape[1]:
        sa, sb = input._data.shape, mat2._data.shape
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{sa[0]}, {sa[2]}] but got: [{sb[0]}, {sb[1]}].")
    _dtype_check(input, mat2, "bmm")
    return BmmBackward0.apply(input, mat2)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """``torch.matmul``: dot, mv, mm or broadcast batched matmul by the operands' dims."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' must be Tensor, not "
                        f"{type(other if isinstance(input, Tensor) else input).__name__}")
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 2 and db == 2:
        return mm(input, other)
    _dtype_check(input, other, "matmul")
    sa, sb = input._data.shape, other._data.shape
    if sa[-1] != sb[-2 if db > 1 else 0]:
        rows, cols = (sa[-2] if da > 1 else 1), (sb[-1] if db > 1 else 1)
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{sa[-1]} and "
                           f"{sb[-2 if db > 1 else 0]}x{cols})")
    try:
        host.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({sa[-3]}) must match the size "
                           f"of tensor b ({sb[-3]}) at non-singleton dimension 0") from None
    return MatmulBackward0.apply(input, other)
