"""Distances (``F.*`` and torch.*): cosine_similarity, pairwise_distance, pdist.

The first two are written as torch writes them (so their graphs match);
``pdist`` is one primitive (``PdistBackward0``), its derivative in ember ops.
"""

from __future__ import annotations

from .._backend import dtypes as _dt
from .._backend import xp_of
from .._tensor import Tensor, _make
from ..autograd.grad_mode import no_grad
from ._op import Op, apply1, broadcast_error
from ._registry import register
from .arithmetic import scalar_name
from .comparison import where
from .reductions import LinalgVectorNormBackward0, linalg_vector_norm, reduce_dims
from .shape import broadcast_tensors

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def _broadcast(x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor]:
    err = broadcast_error(x1._data.shape, x2._data.shape)
    if err is not None:
        raise err
    if x1._data.shape == x2._data.shape:
        return x1, x2
    return broadcast_tensors(x1, x2)


@register(method=False)
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``F.cosine_similarity``: sum(x1/|x1| * x2/|x2|) over dim, each norm clamped to eps.

    As in torch, each input is divided by its norm first (the result stays in [-1, 1]), and
    the clamp is applied without autograd to a clone of the norm.
    """
    common = _dt.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{scalar_name(common)}")
    if x1._data.dtype.kind != "f":
        x1 = x1.to(common)
    if x2._data.dtype.kind != "f":
        x2 = x2.to(common)
    x1, x2 = _broadcast(x1, x2)
    n1 = linalg_vector_norm(x1, 2, dim, keepdim=True).clone()
    n2 = linalg_vector_norm(x2, 2, dim, keepdim=True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


class NormBackward1(LinalgVectorNormBackward0):
    """norm(input, p, dim, keepdim): torch's name for the node pairwise_distance records."""

    __slots__ = ()


@register(method=False)
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``F.pairwise_distance``: ||x1 - x2 + eps||_p over the last dim (of the broadcast)."""
    diff = x1 - x2 + eps
    nd = max(x1._data.ndim, x2._data.ndim)
    if diff._data.dtype.kind != "f":
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {scalar_name(diff.dtype)} instead.")
    dims = reduce_dims(nd - 1, diff._data.ndim) or ()
    return apply1(NormBackward1, diff, float(p), dims, keepdim)


class PdistBackward0(Op):
    """pdist(x, p): ||x[i] - x[j]||_p for i < j, in row-major order of the pairs.

    Written as d = A @ x with A[k] = e_i - e_j, the derivative is A^T @ (grad * dd/dd_k)."""

    __slots__ = ("p", "pairs")
    save_inputs = (0,)
    save_output = True

    def forward(self, x, p):
        self.p = p
        xp = xp_of(x)
        i, j = xp.triu_indices(x.shape[0], 1)
        self.pairs = (i, j)
        d = xp.abs(x[i] - x[j])
        if p == 0:
            return xp.sum(d != 0, axis=1).astype(x.dtype)
        if p == float("inf"):
            return xp.max(d, axis=1) if d.shape[1] else xp.zeros(len(i), x.dtype)
        if p == 1:
            return xp.sum(d, axis=1)
        if p == 2:
            return xp.sqrt(xp.sum(d * d, axis=1))
        return xp.sum(d ** p, axis=1) ** (1.0 / p)

    def backward(self, grad):
        (x,) = self.saved()
        dist = self.saved_output()
        i, j = self.pairs
        n, p = x.shape[0], self.p
        xp = xp_of(x._data)
        a = xp.zeros((len(i), n), dtype=x._data.dtype)
        rows = xp.arange(len(i))
        a[rows, i] = 1
        a[rows, j] = -1
        a = _make(a)
        d = a.mm(x)
        if p == 0:
            return x * 0
        if p == 1:
            w = d.sign()
        elif p == float("inf"):
            w = d.sign() * (d.abs() == dist.unsqueeze(1)).to(d.dtype)
        else:
            zero = _make(dist._data == 0).unsqueeze(1)
            safe = where(zero, 1.0, dist.unsqueeze(1))
            if p == 2:
                w = d / safe
            else:
                w = d.sign() * d.abs() ** (p - 1) / safe ** (p - 1)
            if p < 1:
                zero = zero | _make(d._data == 0)
            w = where(zero, 0.0, w)
        return a.t().mm(grad.unsqueeze(1) * w)


@register(method=False)
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """``F.pdist``: the p-norm distances between the rows of a 2-D input, pairs i < j."""
    if input._data.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input._data.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input._data.dtype.kind != "f":
        raise RuntimeError("pdist only supports floating-point dtypes")
    return apply1(PdistBackward0, input, float(p))
