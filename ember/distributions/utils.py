"""``torch.distributions.utils``: parameter broadcasting, logits/probs conversions and the
``lazy_property`` descriptor the distributions cache derived parameters with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import update_wrapper
from typing import Any

import ember

from .._tensor import Size, Tensor

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant

_NUMBER = (int, float, bool)  # torch.types._Number


def broadcast_all(*values: Tensor | float) -> tuple[Tensor, ...]:
    """``torch.distributions.utils.broadcast_all``: tensors broadcast together; numbers become
    tensors of the first tensor's dtype and device (the default dtype when all are numbers)."""
    if not all(isinstance(v, (Tensor, *_NUMBER)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        options: dict[str, Any] = {"dtype": ember.get_default_dtype()}
        for v in values:
            if isinstance(v, Tensor):
                options = {"dtype": v.dtype, "device": v.device}
                break
        values = tuple(v if isinstance(v, Tensor) else ember.tensor(v, **options)
                       for v in values)
    return tuple(ember.broadcast_tensors(*values))


def _standard_normal(shape: Sequence[int], dtype, device) -> Tensor:
    """N(0, 1) draws of ``shape`` from ember's default generator."""
    return ember.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds to probabilities (``is_binary``: a sigmoid), else a softmax over the last
    dimension."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped into ``[eps, 1 - eps]`` for their dtype's machine epsilon."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities to log-odds (``is_binary``) or to log-probabilities, clamped first."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """``torch.distributions.utils.lazy_property``: computed on first access (with grad
    enabled), then stored on the instance, replacing the descriptor for that instance."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a ``lazy_property`` looks like on the class: a property to documentation tools, a
    lazy_property to argument validation (which skips parameters not yet computed)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        property.__init__(self, wrapped)


def _tril_mask(n: int, diag: int, device) -> Tensor:
    arange = ember.arange(n, device=device)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower-triangular entries (below diagonal ``diag``) of a (batch of) square
    matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of ``tril_matrix_to_vec``: a (batch of) lower-triangular matrices."""
    # the positive root of D**2 + (1+2*diag)*D - |diag| * (diag+1) - 2*vec.shape[-1] = 0
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]
                            + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = ember.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mask = _tril_mask(n, diag, vec.device)
    # a scatter of the entries into the masked positions, as a differentiable composite
    flat_index = ember.nonzero(mask.reshape(-1)).reshape(-1)
    out = vec.new_zeros(tuple(vec.shape[:-1]) + (n * n,))
    index = flat_index.expand(tuple(vec.shape[:-1]) + (flat_index.shape[0],))
    out = out.scatter(-1, index, vec)
    return out.reshape(tuple(vec.shape[:-1]) + (n, n))


def _fmt(value: Any) -> str:
    """``f"{value}"`` as torch formats it: a 0-d tensor as its number (torch's
    ``Tensor.__format__``), any other value as ``str`` does."""
    if isinstance(value, Tensor) and value.dim() == 0:
        return format(value.item())
    return str(value)


def _size(shape) -> Size:
    """``shape`` as an ember ``Size`` (torch.Size + tuple is a Size; ember's is a tuple)."""
    return shape if type(shape) is Size else Size(tuple(shape))
