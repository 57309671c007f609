"""``torch.distributions.transforms``: invertible maps with their log-abs-det-Jacobians, for
``TransformedDistribution`` and for ``biject_to``/``transform_to``.

Each transform follows torch's: its ``domain``/``codomain`` constraints, ``bijective``,
``sign``, ``event_dim``, the optional one-entry cache (``cache_size=1``), ``inv`` (with
``t.inv.inv is t``), ``forward_shape``/``inverse_shape`` and equality.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any

import ember

from .._tensor import Size, Tensor
from ..nn import functional as F
from . import constraints
from .utils import (
    _sum_rightmost,
    broadcast_all,
    lazy_property,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]

_NUMBER = (int, float, bool)


class Transform:
    """An invertible (or pseudo-invertible) map ``x -> y`` with ``log |dy/dx|``.

    Subclasses implement ``_call`` and/or ``_inverse``, and ``log_abs_det_jacobian`` when
    bijective. ``cache_size=1`` remembers the last ``(x, y)`` pair, so that ``t.inv(t(x))``
    returns ``x`` itself (useful where the inverse is expensive or unstable).
    """

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        self._cache_size = cache_size
        self._inv: Transform | None = None
        if cache_size == 0:
            pass
        elif cache_size == 1:
            self._cached_x_y = None, None
        else:
            raise ValueError("cache_size must be 0 or 1")
        super().__init__()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (``t.inv.inv is t``)."""
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    @property
    def sign(self) -> Any:
        """The sign of the Jacobian's determinant (bijective transforms)."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __call__(self, x: Tensor) -> Tensor:
        """``y = t(x)``."""
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |dy/dx|`` given the input and the output."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__ + "()"

    def forward_shape(self, shape: tuple) -> tuple:
        """The output shape for an input of ``shape``."""
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        """The input shape for an output of ``shape``."""
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform (use ``Transform.inv``)."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    @property
    def sign(self) -> Any:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _InverseTransform):
            return False
        return self._inv == other._inv

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: tuple) -> tuple:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """The chain ``parts[-1](...parts[0](x))``; the parts do the caching."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComposeTransform):
            return False
        return self.parts == other.parts

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim  # the largest among the parts
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @lazy_property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @lazy_property
    def sign(self) -> Any:  # type: ignore[override]
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        inv = self._inv
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = inv
            inv._inv = self
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]  # the intermediates (free when the parts but the last are cached)
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, x_, y_ in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(x_, y_),
                                        event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape: tuple) -> tuple:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        return (type(self).__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts)
                + "\n)")


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more rightmost dims in its event:
    the same map, with those dims summed out of ``log_abs_det_jacobian``."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(result, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")

    def forward_shape(self, shape: tuple) -> tuple:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dims to ``out_shape`` (unit Jacobian)."""

    bijective = True

    def __init__(self, in_shape: tuple, out_shape: tuple, cache_size: int = 0) -> None:
        self.in_shape = Size(in_shape)
        self.out_shape = Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        batch_shape = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x.new_zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape: tuple) -> tuple:
        if len(shape) < len(self.in_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.in_shape)
        if tuple(shape[cut:]) != self.in_shape:
            raise ValueError(f"Shape mismatch: expected {Size(shape[cut:])} but got "
                             f"{self.in_shape}")
        return Size(tuple(shape[:cut]) + self.out_shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        if len(shape) < len(self.out_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.out_shape)
        if tuple(shape[cut:]) != self.out_shape:
            raise ValueError(f"Shape mismatch: expected {Size(shape[cut:])} but got "
                             f"{self.out_shape}")
        return Size(tuple(shape[:cut]) + self.in_shape)


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self) -> Any:  # type: ignore[override]
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PowerTransform):
            return False
        return bool(self.exponent.eq(other.exponent).all().item())

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: tuple) -> tuple:
        return ember.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    def inverse_shape(self, shape: tuple) -> tuple:
        return ember.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))


def _clipped_sigmoid(x: Tensor) -> Tensor:
    finfo = ember.finfo(x.dtype)
    return ember.clamp(ember.sigmoid(x), min=finfo.tiny, max=1.0 - finfo.eps)


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``, ``x = logit(y)`` (clipped away from 0 and 1)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        finfo = ember.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))`` (linear above 20, as ``F.softplus``)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)

    def _call(self, x: Tensor) -> Tensor:
        return F.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)``, with torch's stable log-det ``2 (log 2 - x - softplus(-2x))``; the
    inverse is not clamped (use ``cache_size=1`` near +-1, as torch advises)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse is the identity)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``event_dim`` makes the log-det sum over that many rightmost
    dims."""

    bijective = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, event_dim: int = 0,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for mine, theirs in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(mine, _NUMBER) and isinstance(theirs, _NUMBER):
                if mine != theirs:
                    return False
            elif not bool((mine == theirs).all().item()):
                return False
        return True

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, _NUMBER):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = x.shape
        scale = self.scale
        if isinstance(scale, _NUMBER):
            result = ember.full_like(x, math.log(abs(scale)))
        else:
            result = ember.abs(scale).log()
        if self.event_dim:
            result = result.reshape(tuple(result.size()[: -self.event_dim]) + (-1,)).sum(-1)
            shape = shape[: -self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: tuple) -> tuple:
        return ember.broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                      getattr(self.scale, "shape", ()))

    def inverse_shape(self, shape: tuple) -> tuple:
        return ember.broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                      getattr(self.scale, "shape", ()))


class CorrCholeskyTransform(Transform):
    """An unconstrained vector of length D(D-1)/2 to the Cholesky factor of a D x D
    correlation matrix (tanh, then a signed stick-breaking per row)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        x = ember.tanh(x)
        eps = ember.finfo(x.dtype).eps
        x = x.clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        # stick-breaking on the squares: y = sign(r) sqrt(z cumprod(1 - z)) = r sqrt(...)
        z = r**2
        z1m_cumprod_sqrt = (1 - z).sqrt().cumprod(-1)
        r = r + ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * F.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        y_cumsum = 1 - ember.cumsum(y * y, dim=-1)
        y_cumsum_shifted = F.pad(y_cumsum[..., :-1], [1, 0], value=1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor, intermediates: Any = None) -> Tensor:
        # the log-det of x against the flattened lower triangle of y (domain and codomain
        # have different dimensions)
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * y1m_cumsum_tril.log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape: tuple) -> tuple:
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by ``exp`` and normalisation (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape


class StickBreakingTransform(Transform):
    """Unconstrained vectors of length K-1 to the K-simplex by stick breaking (iterated
    sigmoids): bijective."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    def _call(self, x: Tensor) -> Tensor:
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        z = _clipped_sigmoid(x - offset.log())
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        # clamped: the remaining stick can round to <= 0 when y[-1] ~ 0
        sf = ember.clamp(1 - y_crop.cumsum(-1), min=ember.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        x = x - offset.log()
        # 1 - sigmoid(x) = exp(-x) sigmoid(x)
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrices to lower-triangular ones with a positive diagonal (the
    strict lower triangle kept, the diagonal exponentiated)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrices to positive-definite ones: ``L L^T`` of the
    ``LowerCholeskyTransform``."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    def _call(self, x: Tensor) -> Tensor:
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


def _check_dim(dim: int, t: Tensor, what: str) -> None:
    if not -t.dim() <= dim < t.dim():
        raise AssertionError(f"dim {dim} out of range for {what} with {t.dim()} dimensions")


class CatTransform(Transform):
    """The transforms ``tseq`` applied to consecutive slices of ``lengths`` along ``dim``, as
    ``torch.cat`` joins them."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0,
                 lengths: Sequence[int] | None = None, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        if lengths is None:
            lengths = [1] * len(self.transforms)
        self.lengths = list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, t: Tensor, what: str) -> None:
        _check_dim(self.dim, t, what)
        if t.size(self.dim) != self.length:
            raise AssertionError(f"{what}.size({self.dim}) = {t.size(self.dim)} must equal "
                                 f"length {self.length}")

    def _slices(self, t: Tensor) -> list[Tensor]:
        out, start = [], 0
        for length in self.lengths:
            out.append(t.narrow(self.dim, start, length))
            start = start + length
        return out

    def _call(self, x: Tensor) -> Tensor:
        self._check(x, "x")
        return ember.cat([t(s) for t, s in zip(self.transforms, self._slices(x))],
                         dim=self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        self._check(y, "y")
        return ember.cat([t.inv(s) for t, s in zip(self.transforms, self._slices(y))],
                         dim=self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        self._check(x, "x")
        self._check(y, "y")
        logdetjacs = []
        for trans, xs, ys in zip(self.transforms, self._slices(x), self._slices(y)):
            logdetjac = trans.log_abs_det_jacobian(xs, ys)
            if trans.event_dim < self.event_dim:
                logdetjac = _sum_rightmost(logdetjac, self.event_dim - trans.event_dim)
            logdetjacs.append(logdetjac)
        dim = self.dim
        if dim >= 0:
            dim = dim - x.dim()
        dim = dim + self.event_dim
        if dim < 0:
            return ember.cat(logdetjacs, dim=dim)
        return sum(logdetjacs)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """The transforms ``tseq`` applied to the slices along ``dim``, as ``torch.stack`` joins
    them."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _check(self, t: Tensor, what: str) -> None:
        _check_dim(self.dim, t, what)
        if t.size(self.dim) != len(self.transforms):
            raise AssertionError(f"{what}.size({self.dim}) = {t.size(self.dim)} must equal "
                                 f"len(transforms) {len(self.transforms)}")

    def _call(self, x: Tensor) -> Tensor:
        self._check(x, "x")
        return ember.stack([t(s) for s, t in zip(x.unbind(self.dim), self.transforms)],
                           dim=self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        self._check(y, "y")
        return ember.stack([t.inv(s) for s, t in zip(y.unbind(self.dim), self.transforms)],
                           dim=self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        self._check(x, "x")
        self._check(y, "y")
        return ember.stack([t.log_abs_det_jacobian(xs, ys) for xs, ys, t in
                            zip(x.unbind(self.dim), y.unbind(self.dim), self.transforms)],
                           dim=self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)`` (e.g. a Gaussian copula from a multivariate normal)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint | None:  # type: ignore[override]
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
