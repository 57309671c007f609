"""``ember.linalg``: torch.linalg's functions (norms, solves and decompositions) with gradients.

The primitives (each an ``Op`` with its derivative) live in ``ember/ops/linalg.py``; the norms,
ranks, powers and logdet here are composites of ember ops.
"""

from __future__ import annotations

from ._backend import FLOAT_KINDS, host, xp_of
from ._tensor import Tensor, _make, _wrap_dim
from .ops.arithmetic import scalar_name
from .ops.comparison import where
from .ops.linalg import (
    LinAlgError,
    _check,
    _tolerance,
    cholesky,
    cholesky_solve,
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from .ops.products import linalg_cross as cross
from .ops.products import matmul, multi_dot
from .ops.reductions import linalg_vector_norm as vector_norm

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_solve",
    "cross",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "logdet",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "vector_norm",
]

_INF = float("inf")


def logdet(A: Tensor) -> Tensor:
    """``torch.logdet``: log det(A), nan where det(A) < 0 (a where over slogdet, as torch)."""
    _check(A, "logdet")
    sign, logabsdet = slogdet(A)
    return where(sign == -1, float("nan"), logabsdet)


# --------------------------------------------------------------------------- powers and ranks

def matrix_power(A: Tensor, n: int) -> Tensor:
    """``torch.linalg.matrix_power``: binary powering with matmul, as torch (n < 0: of inv)."""
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    _check(A, "linalg.matrix_power", floating=False)
    if n == 0:
        xp = xp_of(A._data)
        eye = _make(xp.broadcast_to(xp.eye(A._data.shape[-1], dtype=A._data.dtype),
                                    A._data.shape))
        return A.clone().copy_(eye)
    if n < 0:
        A = inv(A)
        n = -n
        if n == 1:
            return A
    if n == 1:
        return A.clone()
    if n == 2:
        return matmul(A, A)
    if n == 3:
        return matmul(matmul(A, A), A)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False,
                tol=None) -> Tensor:
    """``torch.linalg.matrix_rank``: how many singular values exceed the tolerance."""
    a = A._data
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 "
                           "dimensions.")
    if a.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    xp = xp_of(a)
    if hermitian:
        s = abs(xp.linalg.eigvalsh(a)) if a.size else xp.zeros(a.shape[:-1], a.dtype)
    else:
        s = xp.linalg.svd(a, compute_uv=False) if a.size else \
            xp.zeros(a.shape[:-2] + (0,), a.dtype)
    return _make(xp.asarray((s > _tolerance(s, a.shape, atol, rtol)).sum(axis=-1),
                            dtype=host.int64))


# --------------------------------------------------------------------------- norms

def _matrix_dims(A: Tensor, dim, fname: str = "linalg.matrix_norm") -> tuple:
    nd = A._data.ndim
    if isinstance(dim, int) or len(dim) != 2:
        shown = dim if isinstance(dim, int) else " ".join(map(str, dim))
        raise RuntimeError(f"{fname}: dim must be a 2-tuple. Got {shown}")
    d0, d1 = _wrap_dim(dim[0], nd), _wrap_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"{fname}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """``torch.linalg.matrix_norm``: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf over ``dim``."""
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if A._data.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as "
                           f"input. Got {scalar_name(A.dtype)}")
    d0, d1 = _matrix_dims(A, dim)
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        moved = A.movedim((d0, d1), (-2, -1))
        s = svdvals(moved)
        out = s.sum(-1, keepdim) if ord == "nuc" else \
            (s.amax(-1, keepdim) if ord == 2 else s.amin(-1, keepdim))
        if keepdim:  # as torch: (..., 1, 1) moved back to where the matrix dims were
            out = out.unsqueeze(-1).movedim((-2, -1), (d0, d1))
        return out
    if ord in (1, -1, _INF, -_INF):
        first, second = (d0, d1) if abs(ord) == 1 else (d1, d0)
        if not keepdim and first < second:
            second -= 1
        sums = vector_norm(A, 1, first, keepdim)
        return sums.amax(second, keepdim) if ord > 0 else sums.amin(second, keepdim)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.linalg.norm``: a vector norm or a matrix norm, by ``dim`` and ``ord``."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dims)}")
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    nd = A._data.ndim
    if nd not in (1, 2):
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {nd}D.")
    if nd == 1 and not isinstance(ord, str):
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
