"""``torch.nn.utils.parametrizations``: ``orthogonal``, ``weight_norm`` and ``spectral_norm``
written as parametrizations (see ``parametrize``).

ember has no ``matrix_exp``, ``householder_product`` or ``geqrf`` op yet; the composites here
are built from matmul, tril and indexing so autograd differentiates them like any other ops.
"""

from __future__ import annotations

import math
from enum import Enum, auto

from ... import linalg
from ..._backend import dtypes as _dt
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops.creation import eye, randn, zeros_like
from ...ops.products import mv, vdot
from ...ops.shape import cat
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_EPS = {_dt.float16: 2.0 ** -10, _dt.float32: 2.0 ** -23, _dt.float64: 2.0 ** -52}


# ---------------------------------------------------------------------- matrix functions
def _matrix_exp(a: Tensor) -> Tensor:
    """exp of a (batch of) square matrices: scaling and squaring around a degree-12 Taylor
    polynomial (Horner form). The scaling keeps ||a / 2^s||_1 <= 1/4, where the truncation
    error (1/4)^13 / 13! is below float64's epsilon."""
    n = a.size(-1)
    with no_grad():
        norm = float(a.abs().sum(-2).amax()) if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm / 0.25))) if norm > 0 else 0
    x = a / (2.0 ** s)
    ident = eye(n, dtype=a.dtype, device=a.device)
    e = ident + x / 12.0
    for k in range(11, 0, -1):
        e = ident + (x @ e) / float(k)
    for _ in range(s):
        e = e @ e
    return e


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """``torch.linalg.householder_product``: the first n columns of H_1 ... H_k, where
    H_i = I - tau_i v_i v_i^T and v_i is column i of ``a`` below the diagonal with a 1 on it."""
    m, n = a.size(-2), a.size(-1)
    v = a.tril(diagonal=-1) + eye(m, n, dtype=a.dtype, device=a.device)
    q = eye(m, dtype=a.dtype, device=a.device).expand(*a.shape[:-2], m, m)
    for i in range(tau.size(-1)):
        vi = v[..., :, i:i + 1]
        q = q - (q @ vi) @ (vi.mT * tau[..., i:i + 1].unsqueeze(-1))
    return q[..., :, :n]


def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.geqrf`` of a matrix, LAPACK's convention (dlarfg): R on and above the
    diagonal, the Householder vectors below it, and their ``tau``."""
    with no_grad():
        r = a.clone()
        m, n = r.shape
        taus = []
        for j in range(min(m, n)):
            alpha = float(r[j, j])
            tail = r[j + 1:, j]
            xnorm = float(linalg.vector_norm(tail)) if tail.numel() else 0.0
            if xnorm == 0.0:
                taus.append(0.0)
                continue
            beta = -math.copysign(math.hypot(alpha, xnorm), alpha)
            taus.append((beta - alpha) / beta)
            tail.div_(alpha - beta)
            r[j, j] = beta
            vec = cat([r.new_ones(1), tail])
            rest = r[j:, j + 1:]
            rest.sub_(taus[-1] * vec.unsqueeze(1) * (vec @ rest).unsqueeze(0))
        return r, a.new_tensor(taus)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.size(-2), q.size(-1)
    ident = eye(k, dtype=q.dtype, device=q.device)
    return bool((q.mT @ q).allclose(ident, atol=10.0 * n * _EPS[q.dtype]))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a = QR with diag(R) >= 0 (torch: geqrf, householder_product, sign fix)."""
    q, r = linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


# ---------------------------------------------------------------------- orthogonal
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one (torch's ``_Orthogonal``)."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.size(-2), x.size(-1)
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # n*k - k(k-1)/2 free parameters: the lower triangle, embedded in a square matrix
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], dim=-1)
            a = x - x.mT  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = _matrix_exp(a)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                ident = eye(n, dtype=a.dtype, device=a.device)
                q = linalg.solve(ident - 0.5 * a, ident + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = _householder_product(a, tau)
            # the diagonal of x holds the signs (+-1); no gradient flows to it
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            q = self.base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q: Tensor) -> Tensor:
        with no_grad():
            if q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {q.shape}.")
            q_init = q
            n, k = q.size(-2), q.size(-1)
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                if q.dim() != 2:
                    raise NotImplementedError("ember: orthogonal(use_trivialization=False) "
                                              "assigns one matrix at a time (no batches)")
                a, tau = _geqrf(q)
                # diag(a) holds diag(R); keep only its signs (-1 where no reflection was used)
                diag = a.diagonal()
                diag.copy_(diag.sign() * (1.0 - 2.0 * (tau == 0.0).to(a.dtype)))
                return a.mT if transpose else a
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:  # complete q to an n x n orthogonal matrix
                extra = randn(*(q.shape[:-2] + (n, n - k)), dtype=q.dtype, device=q.device)
                q = _make_orthogonal(cat([q, extra], dim=-1))
            self.base = q
            # -Id, so that householder(zeros) is zeros and the diagonal signs are -1
            neg_id = zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Make ``module.<name>`` orthogonal (torch's defaults: ``matrix_exp`` for square
    matrices, ``householder`` otherwise; the trivialization keeps a ``base`` matrix)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(  # noqa: TRY004 (torch's type)
            f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---------------------------------------------------------------------- weight norm
class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """``module.<name>`` = g * v / ||v||, with g and v stored as
    ``parametrizations.<name>.original0`` and ``original1``; old ``<name>_g``/``<name>_v``
    checkpoints load too."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ---------------------------------------------------------------------- spectral norm
class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # the buffers change in place (torch's ``out=``), never recorded
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mv(weight_mat.mT, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()  # clones: later in-place updates must not touch this graph
        v = self._v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """``module.<name>`` divided by its spectral norm (power iteration on buffers ``_u`` and
    ``_v`` of ``parametrizations.<name>[0]``, in training mode only)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(  # noqa: TRY004 (torch's type)
            f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
