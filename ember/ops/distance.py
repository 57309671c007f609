"""Distances (``F.*`` and torch.*): cosine_similarity, pairwise_distance, pdist, cdist.

The first two are written as torch writes them (so their graphs match); ``pdist`` and
``cdist`` are primitives (``PdistBackward0``, ``CdistBackward0``), their derivatives in ember
ops; ``cdist``'s matrix-product path for p = 2 is a composite, as in torch.
"""

from __future__ import annotations

from .._backend import FLOAT_KINDS, xp_of
from .._backend import dtypes as _dt
from .._tensor import Tensor, _make
from ..autograd.grad_mode import no_grad
from ._op import Op, apply1, broadcast_error
from ._registry import register
from .arithmetic import scalar_name
from .comparison import where
from .products import matmul
from .reductions import LinalgVectorNormBackward0, linalg_vector_norm, reduce_dims
from .shape import broadcast_tensors, cat

__all__ = ["cdist", "cosine_similarity", "pairwise_distance", "pdist"]


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
    if x1._data.dtype.kind not in FLOAT_KINDS:
        x1 = x1.to(common)
    if x2._data.dtype.kind not in FLOAT_KINDS:
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
    if diff._data.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {scalar_name(diff.dtype)} instead.")
    dims = reduce_dims(nd - 1, diff._data.ndim) or ()
    return apply1(NormBackward1, diff, float(p), dims, keepdim)


def _p_norm(xp, d, p: float, axis: int = -1):
    """The p-norm of the absolute differences ``d`` along ``axis`` (p = 0 counts nonzeros)."""
    if p == 0:
        return xp.sum(d != 0, axis=axis).astype(d.dtype)
    if p == float("inf"):
        if not d.shape[axis]:
            return xp.zeros(d.shape[:axis] + d.shape[axis:][1:], d.dtype)
        return xp.max(d, axis=axis)
    if p == 1:
        return xp.sum(d, axis=axis)
    if p == 2:
        return xp.sqrt(xp.sum(d * d, axis=axis))
    return xp.sum(d ** p, axis=axis) ** (1.0 / p)


def _p_norm_weight(d: Tensor, dist: Tensor, p: float) -> Tensor:
    """d(||d||_p)/d(d) for differences ``d`` (..., M) and their norms ``dist`` (..., 1), 0
    where the norm is 0 (torch's subgradient there)."""
    if p == 1:
        return d.sign()
    if p == float("inf"):
        return d.sign() * (d.abs() == dist).to(d.dtype)
    zero = _make(dist._data == 0)
    safe = where(zero, 1.0, dist)
    if p == 2:
        w = d / safe
    else:
        w = d.sign() * d.abs() ** (p - 1) / safe ** (p - 1)
    if p < 1:
        zero = zero | _make(d._data == 0)
    return where(zero, 0.0, w)


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
        return _p_norm(xp, xp.abs(x[i] - x[j]), p, 1)

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
        w = _p_norm_weight(d, dist.unsqueeze(1), p)
        return a.t().mm(grad.unsqueeze(1) * w)


@register(method=False)
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """``F.pdist``: the p-norm distances between the rows of a 2-D input, pairs i < j."""
    if input._data.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input._data.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input._data.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError("pdist only supports floating-point dtypes")
    return apply1(PdistBackward0, input, float(p))


class CdistBackward0(Op):
    """cdist(x1, x2, p): out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p.

    With d = x1_i - x2_j, the derivative is w = d(||d||_p)/dd (``_p_norm_weight``): x1 gets
    sum_j grad_ij w_ij and x2 gets -sum_i grad_ij w_ij (the engine sums broadcast batches)."""

    __slots__ = ("p",)
    save_inputs = (0, 1)
    save_output = True

    def forward(self, x1, x2, p):
        self.p = p
        xp = xp_of(x1)
        return _p_norm(xp, xp.abs(x1[..., :, None, :] - x2[..., None, :, :]), p)

    def backward(self, grad):
        x1, x2 = self.saved()
        d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        if self.p == 0:
            return x1 * 0, x2 * 0
        g = grad.unsqueeze(-1) * _p_norm_weight(d, self.saved_output().unsqueeze(-1), self.p)
        return (g.sum(-2) if self.needs_grad(0) else None,
                -g.sum(-3) if self.needs_grad(1) else None)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


def _euclidean_dist(x1: Tensor, x2: Tensor) -> Tensor:
    """torch's matrix-product form of the 2-norm distance: faster for many rows, less exact
    (|x1|^2 + |x2|^2 - 2 x1.x2, clamped at 0 before the square root)."""
    n1 = x1.pow(2).sum(-1, keepdim=True)
    n2 = x2.pow(2).sum(-1, keepdim=True)
    a = cat([x1.mul(-2), n1, n1.new_ones(n1.shape)], -1)
    b = cat([x2, n2.new_ones(n2.shape), n2], -1)
    return matmul(a, b.mT).clamp_min_(0).sqrt_()


@register(method=False)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """``torch.cdist``: the p-norm distance between each row of ``x1`` (..., P, M) and each
    row of ``x2`` (..., R, M), batch dims broadcast; for p = 2 with more than 25 rows (or
    ``compute_mode='use_mm_for_euclid_dist'``) through a matrix product, as torch."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    a, b = x1._data, x2._data
    for name, arr in (("X1", a), ("X2", b)):
        if arr.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{arr.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{a.shape[-1]} X2: {b.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if t._data.dtype.kind not in FLOAT_KINDS:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{scalar_name(t.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    err = broadcast_error(a.shape[:-2], b.shape[:-2])
    if err is not None:
        raise err
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(x1.dtype)} but found "
                           f"{scalar_name(x2.dtype)}")
    r1, r2 = a.shape[-2], b.shape[-2]
    mode = _CDIST_MODES.index(compute_mode)
    if p == 2 and a.shape[-1] and r1 and r2 and (mode == 1 or (mode == 0 and (r1 > 25 or
                                                                              r2 > 25))):
        batch = xp_of(a).broadcast_shapes(a.shape[:-2], b.shape[:-2])
        c = a.shape[-1]
        e1 = x1.expand(*batch, r1, c).reshape(-1, r1, c)
        e2 = x2.expand(*batch, r2, c).reshape(-1, r2, c)
        return _euclidean_dist(e1, e2).view(*batch, r1, r2)
    return CdistBackward0.apply(x1, x2, params=(float(p),))
