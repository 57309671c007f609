"""Products: matmul, mm, bmm, mv, dot (BLAS-backed, with torch's 1-d and batching rules); vdot,
outer, inner, addmm/addmv/addr/baddbmm/addbmm, einsum, tensordot, kron, cross, multi_dot; and the
top-level aliases of torch.linalg functions (det, inverse, svd, ...)."""

from __future__ import annotations

import operator
import warnings
from collections import namedtuple

from .._backend import dtypes as _dt
from .._backend import from_numpy_dtype, host, matrix_product, xp_of
from .._tensor import _CPP_NAMES, Tensor, _make, _wrap_dim
from ..amp import _state as _amp
from ._op import BinaryOp, Op, bilinear_jvp, write_out
from ._registry import register
from .arithmetic import scalar_name
from .complex import conj_of

# --------------------------------------------------------------------------- matmul and BLAS

def _dtype_check(a: Tensor, b: Tensor, op: str) -> None:
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{from_numpy_dtype(a._data.dtype).name} != "
                           f"{from_numpy_dtype(b._data.dtype).name}")



def _low(out, like):
    """``out`` in ``like``'s dtype: NumPy multiplies bfloat16 matrices in float32 (ml_dtypes),
    and torch rounds such a product back to bfloat16."""
    return out if out.dtype == like.dtype else out.astype(like.dtype)


def _transposed(x) -> bool:
    """Whether the matrix ``x`` is laid out as a transpose (``weight.t()``): its gradient is
    then made as the transpose of a C-ordered product, so that it lands in the layout of the
    tensor it was viewed from."""
    flags = x.flags
    return flags.f_contiguous and not flags.c_contiguous


def _conj_saved(node):
    """A product's two saved operands, conjugated if complex (torch: grad @ b^H, a^H @ grad);
    either may be None (saved crosswise)."""
    a, b = node.saved()
    return (None if a is None else conj_of(a)), (None if b is None else conj_of(b))


class MmBackward0(BinaryOp):
    """mm(a, b): d/da = grad @ b^T, d/db = a^T @ grad; each computed as the transpose of the
    swapped product, (b @ grad^T)^T or (grad^T @ a)^T, for an input laid out as a transpose.

    NOTE: ``x @ weight.t()`` (``F.linear`` without bias) otherwise gave the weight a
    Fortran-ordered gradient, which AccumulateGrad copies transposed: 214 µs against 37 for a
    (512, 784) float32 copy.
    """

    __slots__ = ("flip",)
    elementwise = False
    save_inputs = (0, 1)
    save_crosswise = True
    complex_ok = True  # (complex: the conjugate transposes, a^H and b^H)

    def forward(self, a, b):
        # (each input's layout, kept: the input itself is saved only for the other's grad)
        self.flip = (_transposed(a), _transposed(b))
        return _low(matrix_product(a, b), a)

    def jvp(self, tangents, inputs, out):
        return bilinear_jvp(tangents, inputs, operator.matmul)

    def backward(self, grad):
        a, b = _conj_saved(self)
        flip_a, flip_b = self.flip
        ga = gb = None
        if self.needs_grad(0):
            ga = b.mm(grad.t()).t() if flip_a else grad.mm(b.t())
        if self.needs_grad(1):
            gb = grad.t().mm(a).t() if flip_b else a.t().mm(grad)
        return ga, gb

    def raw_backward(self, grad):
        # the rule above on arrays, bit for bit
        if grad.dtype.kind == "c":
            return self.tensor_backward(grad)
        a, b = self.saved()
        flip_a, flip_b = self.flip
        (ea, _), (eb, _) = self.next_functions
        ga = gb = None
        if ea is not None:
            b = b._data
            ga = _low(matrix_product(b, grad.T), b).T if flip_a else \
                _low(matrix_product(grad, b.T), grad)
        if eb is not None:
            a = a._data
            gb = _low(matrix_product(grad.T, a), grad).T if flip_b else \
                _low(matrix_product(a.T, grad), a)
        return ga, gb


class MvBackward0(BinaryOp):
    """mv(m, v): d/dm = outer(grad, v), d/dv = m^T @ grad."""

    __slots__ = ()
    elementwise = False
    save_inputs = (0, 1)
    save_crosswise = True

    complex_ok = True

    def forward(self, m, v):
        return _low(m @ v, m)

    def backward(self, grad):
        m, v = _conj_saved(self)
        return (grad.unsqueeze(1) * v if self.needs_grad(0) else None,
                m.t().mv(grad) if self.needs_grad(1) else None)

    def raw_backward(self, grad):
        # the rule above on arrays. NOTE: (256, 512) @ (512,) then ``.sum().backward()``: 382
        # -> 120 µs (torch 133): the outer product as ``matrix_product``'s product of
        # vectors, not a broadcast multiply behind Tensor wrappers; and ``grad @ m`` on a
        # contiguous copy of grad (a stride-0 one from sum's backward, which NumPy's
        # vector-matrix product does not hand to BLAS, took 250 µs, 6 µs so)
        if grad.dtype.kind != "f":  # (complex: conjugates; bfloat16: rounding, as above)
            return self.tensor_backward(grad)
        if not grad.flags.c_contiguous:
            grad = grad.copy()
        m, v = self.saved()
        (em, _), (ev, _) = self.next_functions
        return (matrix_product(grad.reshape(-1, 1), v._data.reshape(1, -1))
                if em is not None else None,
                grad @ m._data if ev is not None else None)


class DotBackward0(BinaryOp):
    """dot(a, b): d/da = grad * b, d/db = grad * a."""

    __slots__ = ()
    elementwise = False
    save_inputs = (0, 1)
    save_crosswise = True

    complex_ok = True

    def forward(self, a, b):
        return a.dot(b)

    def backward(self, grad):
        a, b = _conj_saved(self)
        return (grad * b if self.needs_grad(0) else None,
                grad * a if self.needs_grad(1) else None)


class BmmBackward0(BinaryOp):
    """bmm(a, b): d/da = grad @ b^T, d/db = a^T @ grad, per batch."""

    __slots__ = ()
    elementwise = False
    save_inputs = (0, 1)
    save_crosswise = True

    complex_ok = True

    def forward(self, a, b):
        return _low(matrix_product(a, b), a)

    def backward(self, grad):
        a, b = _conj_saved(self)
        return (grad.bmm(b.mT) if self.needs_grad(0) else None,
                a.mT.bmm(grad) if self.needs_grad(1) else None)


class MatmulBackward0(BinaryOp):
    """matmul with broadcast batch dims, where one side may be 1-d (promoted to a row or a
    column, as NumPy and torch do); the engine sums gradients over broadcast dims.

    NOTE: torch folds these cases into mm/bmm plus views, so its grad_fn names the fold
    (UnsafeViewBackward0, ...); one node keeps ember's graph small and the result not a view.
    """

    __slots__ = ()
    elementwise = False
    save_inputs = (0, 1)
    complex_ok = True

    def forward(self, a, b):
        return _low(matrix_product(a, b), a)

    def jvp(self, tangents, inputs, out):
        return bilinear_jvp(tangents, inputs, operator.matmul)

    def backward(self, grad):
        a, b = _conj_saved(self)
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


@register
def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.mm``: 2-D @ 2-D."""
    if out is not None:
        return write_out(out, mm(input, mat2), "mm")
    if _amp.active:  # autocast: lower-precision op
        input, mat2 = _amp.lower(input, mat2)
    if input._data.ndim != 2 or mat2._data.ndim != 2:
        bad = input if input._data.ndim != 2 else mat2
        raise RuntimeError(f"{'self' if bad is input else 'mat2'} must be a matrix")
    if input._data.shape[1] != mat2._data.shape[0]:
        raise _size_error("mm", input, mat2)
    _dtype_check(input, mat2, "mm")
    return MmBackward0.apply(input, mat2)


@register
def mv(input: Tensor, vec: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.mv``: 2-D @ 1-D."""
    if out is not None:
        return write_out(out, mv(input, vec), "mv")
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


@register
def dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.dot``: 1-D . 1-D (torch names the second argument ``tensor``)."""
    if out is not None:
        return write_out(out, dot(input, tensor), "dot")
    check_vectors(input, tensor)
    return DotBackward0.apply(input, tensor)


@register
def bmm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.bmm``: (b, n, m) @ (b, m, p), no broadcasting."""
    if out is not None:
        return write_out(out, bmm(input, mat2), "bmm")
    if _amp.active:  # autocast: lower-precision op
        input, mat2 = _amp.lower(input, mat2)
    if input._data.ndim != 3 or mat2._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if input._data.shape[0] != mat2._data.shape[0] or input._data.shape[2] != mat2._data.shape[1]:
        sa, sb = input._data.shape, mat2._data.shape
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{sa[0]}, {sa[2]}] but got: [{sb[0]}, {sb[1]}].")
    _dtype_check(input, mat2, "bmm")
    return BmmBackward0.apply(input, mat2)


@register(operators=("__matmul__",))
def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.matmul``: dot, mv, mm or broadcast batched matmul by the operands' dims."""
    if out is not None:
        return write_out(out, matmul(input, other), "matmul")
    if _amp.active:  # autocast: lower-precision op
        input, other = _amp.lower(input, other)
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


@register(method=False, export=False, operators=("__rmatmul__",))
def rmatmul(input: Tensor, other: Tensor) -> Tensor:
    """``other @ input`` (``Tensor.__rmatmul__``)."""
    return matmul(other, input)

# --------------------------------------------------------------------------- small products

class VdotBackward0(DotBackward0):
    """vdot(a, b) of real vectors: dot's derivative."""

    __slots__ = ()
    complex_ok = False  # (its forward does not conjugate yet)


@register
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``torch.vdot``: the dot product (the first argument conjugated: a no-op for reals)."""
    check_vectors(input, other)
    return VdotBackward0.apply(input, other)


@register(aliases=("ger",))
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """``torch.outer`` (``ger``): ``input[:, None] * vec2``, recorded as torch does (a Mul)."""
    for name, v in (("self", input), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got "
                               f"{v._data.ndim}-D")
    return input.reshape(-1, 1) * vec2


@register
def inner(input: Tensor, other: Tensor) -> Tensor:
    """``torch.inner``: contract the last dims (a 0-d operand multiplies)."""
    a, b = input._data, other._data
    if a.ndim == 0 or b.ndim == 0:
        return input * other
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(a.shape)} and {list(b.shape)}")
    return tensordot(input, other, ([-1], [-1]))


# --------------------------------------------------------------------------- add + product

def _times(t: Tensor, s) -> Tensor:
    return t if s == 1 else t * s


def _expand_error(target: tuple, shape: tuple) -> RuntimeError | None:
    """torch's message when ``shape`` does not broadcast to ``target`` (None if it does)."""
    if len(shape) > len(target):
        return RuntimeError(f"The expanded size of the tensor ({target[0] if target else 0}) "
                            f"must match the existing size ({shape[0]}) at non-singleton "
                            f"dimension 0.  Target sizes: {list(target)}.  Tensor sizes: "
                            f"{list(shape)}")
    for i in range(1, len(shape) + 1):
        if shape[-i] != 1 and shape[-i] != target[-i]:
            return RuntimeError(f"The expanded size of the tensor ({target[-i]}) must match the "
                                f"existing size ({shape[-i]}) at non-singleton dimension "
                                f"{len(target) - i}.  Target sizes: {list(target)}.  Tensor "
                                f"sizes: {list(shape)}")
    return None


def _scaled_sum(inp, prod, beta, alpha):
    """beta * inp + alpha * prod; beta == 0 ignores inp (its nan and inf too), as in torch."""
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        shape = host.broadcast_shapes(inp.shape, prod.shape)
        return xp_of(prod).broadcast_to(prod, shape).copy()
    if beta != 1:
        inp = inp * beta
    return (inp + prod).astype(prod.dtype, copy=False)


class AddmmBackward0(Op):
    """addmm(input, m1, m2, beta, alpha) = beta*input + alpha*(m1 @ m2)."""

    __slots__ = ("alpha", "beta")
    save_inputs = (1, 2)

    def forward(self, inp, m1, m2, beta, alpha):
        self.beta, self.alpha = beta, alpha
        return _low(_scaled_sum(inp, m1 @ m2, beta, alpha), m1)

    def backward(self, grad):
        m1, m2 = self.saved()
        return (_times(grad, self.beta) if self.needs_grad(0) else None,
                _times(grad.mm(m2.t()), self.alpha) if self.needs_grad(1) else None,
                _times(m1.t().mm(grad), self.alpha) if self.needs_grad(2) else None)


class AddmvBackward0(Op):
    """addmv(input, mat, vec, beta, alpha) = beta*input + alpha*(mat @ vec)."""

    __slots__ = ("alpha", "beta")
    save_inputs = (1, 2)

    def forward(self, inp, mat, vec, beta, alpha):
        self.beta, self.alpha = beta, alpha
        return _low(_scaled_sum(inp, mat @ vec, beta, alpha), mat)

    def backward(self, grad):
        mat, vec = self.saved()
        return (_times(grad, self.beta) if self.needs_grad(0) else None,
                _times(grad.unsqueeze(1) * vec, self.alpha) if self.needs_grad(1) else None,
                _times(mat.t().mv(grad), self.alpha) if self.needs_grad(2) else None)


class AddrBackward0(Op):
    """addr(input, vec1, vec2, beta, alpha) = beta*input + alpha*outer(vec1, vec2)."""

    __slots__ = ("alpha", "beta")
    save_inputs = (1, 2)

    def forward(self, inp, v1, v2, beta, alpha):
        self.beta, self.alpha = beta, alpha
        return _scaled_sum(inp, v1[:, None] * v2, beta, alpha)

    def backward(self, grad):
        v1, v2 = self.saved()
        return (_times(grad, self.beta) if self.needs_grad(0) else None,
                _times(grad.mv(v2), self.alpha) if self.needs_grad(1) else None,
                _times(grad.t().mv(v1), self.alpha) if self.needs_grad(2) else None)


class BaddbmmBackward0(Op):
    """baddbmm(input, b1, b2, beta, alpha) = beta*input + alpha*(b1 @ b2), per batch."""

    __slots__ = ("alpha", "beta")
    save_inputs = (1, 2)

    def forward(self, inp, b1, b2, beta, alpha):
        self.beta, self.alpha = beta, alpha
        return _low(_scaled_sum(inp, b1 @ b2, beta, alpha), b1)

    def backward(self, grad):
        b1, b2 = self.saved()
        return (_times(grad, self.beta) if self.needs_grad(0) else None,
                _times(grad.bmm(b2.mT), self.alpha) if self.needs_grad(1) else None,
                _times(b1.mT.bmm(grad), self.alpha) if self.needs_grad(2) else None)


class AddbmmBackward0(Op):
    """addbmm(input, b1, b2, beta, alpha) = beta*input + alpha*sum_b(b1[b] @ b2[b])."""

    __slots__ = ("alpha", "beta")
    save_inputs = (1, 2)

    def forward(self, inp, b1, b2, beta, alpha):
        self.beta, self.alpha = beta, alpha
        xp = xp_of(b1)
        prod = xp.einsum("bij,bjk->ik", b1, b2, optimize=True) if b1.shape[0] else \
            xp.zeros((b1.shape[1], b2.shape[2]), dtype=b1.dtype)
        return _low(_scaled_sum(inp, prod, beta, alpha), b1)

    def backward(self, grad):
        b1, b2 = self.saved()
        return (_times(grad, self.beta) if self.needs_grad(0) else None,
                _times(matmul(grad, b2.mT), self.alpha) if self.needs_grad(1) else None,
                _times(matmul(b1.mT, grad), self.alpha) if self.needs_grad(2) else None)


def _check_scalars(input: Tensor, beta, alpha) -> None:
    if input._data.dtype.kind in "iub":
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise RuntimeError(  # noqa: TRY004 - torch's type for it
                    f"For integral input tensors, argument {name} must not be a floating point "
                    "number.")


def _same_dtype(input: Tensor, m1: Tensor, m2: Tensor) -> None:
    """addmm's dtype checks, in torch's order and words."""
    if m1._data.dtype != m2._data.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{scalar_name(m1.dtype)} and {scalar_name(m2.dtype)}")
    if input._data.dtype != m2._data.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{scalar_name(input.dtype)} and {scalar_name(m2.dtype)}")


def _check_expand(input: Tensor, target: tuple) -> None:
    err = _expand_error(target, input._data.shape)
    if err is not None:
        raise err


@register(inplace=True)
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``torch.addmm``: ``beta * input + alpha * (mat1 @ mat2)``; input broadcasts."""
    if _amp.active:  # autocast: lower-precision op
        input, mat1, mat2 = _amp.lower(input, mat1, mat2)
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m._data.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m._data.ndim}-D tensor")
    (n, k), (k2, p) = mat1._data.shape, mat2._data.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{p})")
    _same_dtype(input, mat1, mat2)
    _check_scalars(input, beta, alpha)
    _check_expand(input, (n, p))
    return AddmmBackward0.apply(input, mat1, mat2, params=(beta, alpha))


@register(inplace=True)
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``torch.addmv``: ``beta * input + alpha * (mat @ vec)``."""
    if mat._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, "
                           f"{mat._data.ndim}, {vec._data.ndim}")
    (n, k), (k2,) = mat._data.shape, vec._data.shape
    ish = input._data.shape
    if k != k2 or not (ish in ((n,), (1,)) or ish == ()):
        shown = ish[0] if len(ish) == 1 else "x".join(map(str, ish))
        raise RuntimeError(f"size mismatch, got input ({shown}), mat ({n}x{k}), vec ({k2})")
    if not (input._data.dtype == mat._data.dtype == vec._data.dtype):
        raise RuntimeError("addmv input tensors must have the same dtype, but got "
                           f"{scalar_name(input.dtype)}, {scalar_name(mat.dtype)}, and "
                           f"{scalar_name(vec.dtype)}")
    _check_scalars(input, beta, alpha)
    return AddmvBackward0.apply(input, mat, vec, params=(beta, alpha))


@register(inplace=True)
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``torch.addr``: ``beta * input + alpha * outer(vec1, vec2)``."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    _check_scalars(input, beta, alpha)
    _check_expand(input, (vec1._data.shape[0], vec2._data.shape[0]))
    if not (input._data.dtype == vec1._data.dtype == vec2._data.dtype):
        input, vec1, vec2 = _promote_all(input, vec1, vec2)
    return AddrBackward0.apply(input, vec1, vec2, params=(beta, alpha))


def _promote_all(*ts: Tensor) -> list:
    rt = ts[0].dtype
    for t in ts[1:]:
        rt = _dt.promote_types(rt, t.dtype)
    return [t.to(rt) for t in ts]


def _cpp(t: Tensor) -> str:
    """The C++ name of a tensor's dtype, as some of torch's messages spell it ('double')."""
    return _CPP_NAMES[t._data.dtype.name]


def _check_batches(b1: Tensor, b2: Tensor) -> None:
    for name, b in (("batch1", b1), ("batch2", b2)):
        if b._data.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    s1, s2 = b1._data.shape, b2._data.shape
    if s1[0] != s2[0] or s1[2] != s2[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{s1[0]}, {s1[2]}] but got: [{s2[0]}, {s2[1]}].")


@register(inplace=True)
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``torch.baddbmm``: ``beta * input + alpha * bmm(batch1, batch2)``."""
    if _amp.active:  # autocast: lower-precision op
        input, batch1, batch2 = _amp.lower(input, batch1, batch2)
    _check_batches(batch1, batch2)
    if not (input._data.dtype == batch1._data.dtype == batch2._data.dtype):
        raise RuntimeError(f"Input dtypes must be the same, got: input {_cpp(input)}, batch1: "
                           f"{_cpp(batch1)}, batch2: {_cpp(batch2)}")
    _check_scalars(input, beta, alpha)
    (b, n, _), p = batch1._data.shape, batch2._data.shape[2]
    _check_expand(input, (b, n, p))
    return BaddbmmBackward0.apply(input, batch1, batch2, params=(beta, alpha))


@register(inplace=True)
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``torch.addbmm``: ``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    if _amp.active:  # autocast: lower-precision op
        input, batch1, batch2 = _amp.lower(input, batch1, batch2)
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b._data.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    s1, s2 = batch1._data.shape, batch2._data.shape
    if s1[0] != s2[0] or s1[2] != s2[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({s1[1]}x{s1[2]} and "
                           f"{s2[1]}x{s2[2]})")
    _same_dtype(input, batch1, batch2)
    _check_scalars(input, beta, alpha)
    _check_expand(input, (s1[1], s2[2]))
    return AddbmmBackward0.apply(input, batch1, batch2, params=(beta, alpha))


# --------------------------------------------------------------------------- einsum

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_error(msg: str) -> RuntimeError:
    return RuntimeError("einsum(): " + msg)


def _parse_einsum(equation: str, shapes: list) -> tuple:
    """(letters per operand, output letters, squeezed dims per operand) with '...' spelled
    out in fresh letters; dims of size 1 that broadcast against a larger size are dropped."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise _einsum_error("fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise _einsum_error("more operands were provided than specified in the equation")
    pos = 0
    parsed = []  # (letters before '...', letters after, has ellipsis)
    for k, term in enumerate(terms):
        head, dots, tail = term.partition("...")
        if "." in tail or "." in head:
            if dots:
                raise _einsum_error(f"found '.' for operand {k} for which an ellipsis was "
                                    "already found")
            raise _einsum_error("found '.' for operand {k} that is not part of any ellipsis")
        for i, c in enumerate(head + tail):
            if c not in _LETTERS:
                at = pos + (i if i < len(head) else i + 3)
                raise _einsum_error(f"invalid subscript given at index {at} in the equation "
                                    "string, subscripts must be in [a-zA-Z]")
        parsed.append((head, tail, bool(dots)))
        pos += len(term) + 1
    used = set(eq)
    fresh = [c for c in _LETTERS if c not in used]
    n_ell = 0
    for k, ((head, tail, has), shape) in enumerate(zip(parsed, shapes)):
        n = len(head) + len(tail)
        if not has and n != len(shape):
            raise _einsum_error(f"the number of subscripts in the equation ({n}) does not match "
                                f"the number of dimensions ({len(shape)}) for operand {k} and "
                                "no ellipsis was given")
        if has and n > len(shape):
            raise _einsum_error(f"the number of subscripts in the equation ({n}) is more than "
                                f"the number of dimensions ({len(shape)}) for operand {k}")
        if has:
            n_ell = max(n_ell, len(shape) - n)
    ell = "".join(fresh[:n_ell])
    letters = []
    for (head, tail, has), shape in zip(parsed, shapes):
        e = len(shape) - len(head) - len(tail) if has else 0
        letters.append(head + (ell[n_ell - e:] if e else "") + tail)
    sizes: dict = {}
    for k, (ls, shape) in enumerate(zip(letters, shapes)):
        for c, s in zip(ls, shape):
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = s
            elif s != 1 and s != prev:
                raise _einsum_error(f"subscript {c} has size {s} for operand {k} which does not "
                                    f"broadcast with previously seen size {prev}")
    if arrow:
        head, dots, tail = rhs.partition("...")
        out = head + (ell if dots else "") + tail
        seen = set()
        for c in head + tail:
            if c not in _LETTERS:
                raise _einsum_error("invalid subscript given at index "
                                    f"{len(lhs) + 2 + rhs.index(c)} in the equation string, "
                                    "subscripts must be in [a-zA-Z]")
            if c not in sizes:
                raise _einsum_error(f"output subscript {c} does not appear in the equation for "
                                    "any input operand")
            if c in seen:
                raise _einsum_error(f"output subscript {c} appears more than once in the output")
            seen.add(c)
    else:
        counts: dict = {}
        for ls in letters:
            for c in ls:
                if c not in ell:
                    counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    # drop the size-1 dims that broadcast: NumPy's einsum only broadcasts '...'
    squeezed = []
    for k, (ls, shape) in enumerate(zip(letters, shapes)):
        drop = tuple(i for i, (c, s) in enumerate(zip(ls, shape)) if s == 1 and sizes[c] != 1)
        squeezed.append(drop)
        if drop:
            letters[k] = "".join(c for i, c in enumerate(ls) if i not in drop)
    return letters, out, squeezed


class EinsumBackward0(Op):
    """einsum(equation, *operands) with every '...' spelled out in letters.

    The gradient of operand i is the einsum of the output gradient with the other operands,
    producing operand i's subscripts: a repeated subscript (a diagonal) gets a fresh letter tied
    to it by an identity matrix; a subscript summed in operand i alone is broadcast back.

    NOTE: torch records einsum as the bmm/permute/view chain it folds to (ViewBackward0,
    PermuteBackward0, SumBackward1, ...); one node keeps the rule in one place.
    """

    __slots__ = ("_squeezed", "letters", "out", "save_inputs", "shapes")
    complex_ok = True  # multilinear: each gradient uses the other operands, conjugated

    def forward(self, *args):
        *arrays, letters, out, squeezed = args
        self.letters, self.out = letters, out
        self.shapes = tuple(a.shape for a in arrays)
        self._squeezed = squeezed
        self.save_inputs = tuple(range(len(arrays)))
        xp = xp_of(*arrays)
        ops = [a.squeeze(drop) if drop else a for a, drop in zip(arrays, squeezed)]
        eq = ",".join(letters) + "->" + out
        if any(a.size == 0 for a in ops):
            result = xp.einsum(eq, *ops)
        else:
            result = xp.einsum(eq, *ops, optimize=len(ops) > 1)
        if any(xp.may_share_memory(result, a) for a in arrays):
            result = result.copy()  # einsum returns views for pure transposes and diagonals
        return result

    def backward(self, grad):
        saved = self.saved()
        letters, out = self.letters, self.out
        grads = []
        for i, ls in enumerate(letters):
            if not self.needs_grad(i):
                grads.append(None)
                continue
            terms = [out]
            operands = [grad]
            for j, other in enumerate(letters):
                if j != i:
                    terms.append(other)
                    operands.append(conj_of(_squeezed_view(saved[j], self._squeezed[j])))
            used = set("".join(letters) + out)
            fresh = iter(c for c in _LETTERS if c not in used)
            target = []
            size = dict(zip(ls, _squeezed_shape(self.shapes[i], self._squeezed[i])))
            for c in ls:
                if c in target:  # a diagonal: a fresh letter tied to c by an identity matrix
                    f = next(fresh)
                    terms.append(c + f)
                    operands.append(_make(xp_of(grad._data).eye(size[c], dtype=grad._data.dtype)))
                    target.append(f)
                else:
                    target.append(c)
            present = set("".join(terms))
            kept = "".join(c for c in target if c in present)
            g = einsum(",".join(terms) + "->" + kept, *operands)
            if len(kept) != len(target):  # summed over in operand i only: broadcast back
                g = g.reshape([size[c] if c in present else 1 for c in target])
                g = g.expand([size[c] for c in target])
            if self._squeezed[i]:
                g = g.reshape(self.shapes[i])
            grads.append(g)
        return tuple(grads)


def _squeezed_shape(shape: tuple, drop: tuple) -> tuple:
    return tuple(s for k, s in enumerate(shape) if k not in drop)


def _squeezed_view(t: Tensor, drop: tuple) -> Tensor:
    return t.reshape(_squeezed_shape(t._data.shape, drop)) if drop else t


@register(method=False)
def einsum(equation: str, *operands) -> Tensor:
    """``torch.einsum``: '...' broadcasting, implicit output (sorted letters seen once)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    dtype = operands[0]._data.dtype
    for t in operands[1:]:
        if t._data.dtype != dtype:
            raise RuntimeError(f"expected scalar type {scalar_name(operands[0].dtype)} but "
                               f"found {scalar_name(t.dtype)}")
    letters, out, squeezed = _parse_einsum(equation, [t._data.shape for t in operands])
    return EinsumBackward0.apply(*operands, params=(letters, out, squeezed))


# --------------------------------------------------------------------------- tensordot, kron

@register(method=False)
def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """``torch.tensordot``: ``dims`` an int (last dims of a with first of b) or two lists."""
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, host.integer)):
        dims = int(dims)
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    sa, sb = a._data.shape, b._data.shape
    la, lb = list(_LETTERS[:na]), list(_LETTERS[na:na + nb])
    for x, y in zip(da, db):
        i, j = _wrap_dim(x, na), _wrap_dim(y, nb)
        if sa[i] != sb[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa[i]} "
                               f"in dim {x} and second has size {sb[j]} in dim {y}")
        lb[j] = la[i]
    contracted = set(lb) & set(la)
    out = "".join(c for c in la if c not in contracted) + \
        "".join(c for c in lb if c not in contracted)
    return einsum("".join(la) + "," + "".join(lb) + "->" + out, a, b)


@register
def kron(input: Tensor, other: Tensor) -> Tensor:
    """``torch.kron``: the Kronecker product, as a broadcast product reshaped."""
    a, b = input, other
    n = max(a._data.ndim, b._data.ndim)
    sa = (1,) * (n - a._data.ndim) + a._data.shape
    sb = (1,) * (n - b._data.ndim) + b._data.shape
    ea = a.reshape([s for d in sa for s in (d, 1)])
    eb = b.reshape([s for d in sb for s in (1, d)])
    return (ea * eb).reshape([x * y for x, y in zip(sa, sb)])


# --------------------------------------------------------------------------- cross

class LinalgCrossBackward0(Op):
    """cross(a, b, dim): d/da = cross(b, grad), d/db = cross(grad, a)."""

    __slots__ = ("dim",)
    save_inputs = (0, 1)

    def forward(self, a, b, dim):
        self.dim = dim
        return xp_of(a).cross(a, b, axis=dim)

    def backward(self, grad):
        a, b = self.saved()
        d = self.dim
        return (linalg_cross(b, grad, dim=d) if self.needs_grad(0) else None,
                linalg_cross(grad, a, dim=d) if self.needs_grad(1) else None)


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """``torch.linalg.cross``: 3-vectors along ``dim``; the other dims broadcast."""
    a, b = input._data, other._data
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = _wrap_dim(dim, a.ndim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input.dtype)} but found "
                           f"{scalar_name(other.dtype)}")
    return LinalgCrossBackward0.apply(input, other, params=(d - a.ndim,))


_CROSS_DIM_WARNING = (
    "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the "
    "dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to "
    "agree with that of linalg.cross in a future release.")


@register
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """``torch.cross``: without ``dim``, the first dim of size 3 (deprecated, warns)."""
    if dim is None:
        warnings.warn(_CROSS_DIM_WARNING, UserWarning, stacklevel=2)
        shape = host.broadcast_shapes(input._data.shape, other._data.shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)


# --------------------------------------------------------------------------- chains

def _chain_order(dims: list) -> list:
    """The cheapest parenthesisation of a matrix chain (dims[i] x dims[i+1] matrices): the
    split point table of the classic dynamic programme."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best
    return split


def multi_dot(tensors) -> Tensor:
    """``torch.linalg.multi_dot``: the chain product in its cheapest order; the first and last
    tensors may be vectors."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if i in (0, n - 1) and nd not in (1, 2):
            which = "first" if i == 0 else "last"
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got {nd}D")
        if 0 < i < n - 1 and nd != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {nd}D")
    for i, t in enumerate(tensors[1:], 1):
        if t._data.dtype != tensors[0]._data.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {_cpp(tensors[0])} and tensor {i} {_cpp(t)}")
    first_vec, last_vec = tensors[0]._data.ndim == 1, tensors[-1]._data.ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(1)
    for i in range(n - 1):
        sa, sb = mats[i]._data.shape, mats[i + 1]._data.shape
        if sa[1] != sb[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i]._data.shape)} and "
                               f"{list(tensors[i + 1]._data.shape)} cannot be multiplied")
    if n == 2:
        out = mm(mats[0], mats[1])
    else:
        split = _chain_order([m._data.shape[0] for m in mats] + [mats[-1]._data.shape[1]])

        def product(i, j):
            if i == j:
                return mats[i]
            k = split[i][j]
            return mm(product(i, k), product(k + 1, j))

        out = product(0, n - 1)
    if first_vec and last_vec:
        return out.reshape(())
    if first_vec:
        return out.squeeze(0)
    if last_vec:
        return out.squeeze(1)
    return out


@register(method=False)
def chain_matmul(*matrices) -> Tensor:
    """``torch.chain_matmul`` (deprecated for ``linalg.multi_dot``)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    for t in matrices:
        if t._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t._data.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


# --------------------------------------------------------------------------- linalg aliases

def _linalg():
    from .. import linalg  # lazy + cycle: ember.linalg builds on this module, loads on first use
    return linalg


@register
def det(input: Tensor) -> Tensor:
    """``torch.det``: ``torch.linalg.det``."""
    return _linalg().det(input)


@register
def inverse(input: Tensor) -> Tensor:
    """``torch.inverse``: ``torch.linalg.inv``."""
    return _linalg().inv(input)


@register
def logdet(input: Tensor) -> Tensor:
    """``torch.logdet``: log det(A); nan where det(A) < 0."""
    return _linalg().logdet(input)


slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
svd_result = namedtuple("svd", ["U", "S", "V"])
slogdet_result.__module__ = svd_result.__module__ = "torch.return_types"


@register
def slogdet(input: Tensor):
    """``torch.slogdet``: ``torch.linalg.slogdet`` (named tuple ``slogdet``)."""
    return slogdet_result(*_linalg().slogdet(input))


@register
def svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """``torch.svd`` (legacy): (U, S, V) with V, not Vh; ``some=False`` gives full U and V."""
    linalg = _linalg()
    if not compute_uv:
        s = linalg.svdvals(input)
        m, n = input._data.shape[-2:]
        batch = input._data.shape[:-2]
        zeros = xp_of(input._data).zeros
        zu = _make(zeros(batch + ((m, m) if not some else (m, min(m, n))),
                         dtype=input._data.dtype))
        zv = _make(zeros(batch + ((n, n) if not some else (n, min(m, n))),
                         dtype=input._data.dtype))
        return svd_result(zu, s, zv)
    u, s, vh = linalg.svd(input, full_matrices=not some)
    return svd_result(u, s, vh.mT)


@register
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky_solve``: solve A X = B given A's Cholesky factor (``input2``)."""
    return _linalg().cholesky_solve(input, input2, upper)


@register
def matrix_power(input: Tensor, n: int) -> Tensor:
    """``torch.matrix_power``: ``torch.linalg.matrix_power``."""
    return _linalg().matrix_power(input, n)


@register
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``torch.linalg.pinv`` with ``rtol=rcond``."""
    return _linalg().pinv(input, rtol=rcond)
