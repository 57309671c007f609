"""``torch.distributions.MultivariateNormal``."""

from __future__ import annotations

import math
from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _size, _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix-vector products with broadcasting batch dims."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _tril_inverse(L: Tensor) -> Tensor:
    """The inverse of a (batch of) lower-triangular matrices, kept lower triangular.

    NOTE: ember has no ``linalg.solve_triangular`` yet, so this is a general solve against
    the identity (the same result to rounding; the triangle re-imposed). Only L's lower
    triangle is read, as a triangular solve reads it, so the upper one gets no gradient.
    """
    L = L.tril()
    eye = ember.eye(L.shape[-1], dtype=L.dtype, device=L.device)
    return ember.linalg.solve(L, eye.expand(L.shape)).tril()


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """The squared Mahalanobis distance ``x^T M^-1 x`` for ``M = L L^T``, with the batch dims
    of ``bL`` broadcasting against those of ``bx``: ``|L^-1 x|^2``. (torch reshapes x to
    solve once per L; ember inverts each L once and broadcasts a matmul over x.)"""
    return _batch_mv(_tril_inverse(bL), bx).pow(2).sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    """The lower Cholesky factor of ``P^-1`` without inverting P: with ``flip(P) = Lf Lf^T``,
    ``P^-1 = L L^T`` for ``L = (flip(Lf)^T)^-1``, which is lower triangular."""
    Lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))
    L_inv = ember.transpose(ember.flip(Lf, (-2, -1)), -2, -1)
    return _tril_inverse(L_inv)


class MultivariateNormal(Distribution):
    """The multivariate normal with mean ``loc`` and exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (a lower Cholesky factor of the covariance, the
    cheapest: every computation goes through it)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if ((covariance_matrix is not None) + (scale_tril is not None)
                + (precision_matrix is not None)) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        if scale_tril is not None:
            if scale_tril.dim() < 2:
                raise ValueError("scale_tril matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            batch_shape = ember.broadcast_shapes(scale_tril.shape[:-2], loc.shape[:-1])
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (-1, -1))
        elif covariance_matrix is not None:
            if covariance_matrix.dim() < 2:
                raise ValueError("covariance_matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            batch_shape = ember.broadcast_shapes(covariance_matrix.shape[:-2], loc.shape[:-1])
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (-1, -1))
        else:
            if precision_matrix.dim() < 2:
                raise ValueError("precision_matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            batch_shape = ember.broadcast_shapes(precision_matrix.shape[:-2], loc.shape[:-1])
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (-1, -1))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: tuple,
               _instance: MultivariateNormal | None = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = _size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L_inv = _tril_inverse(self._unbroadcasted_scale_tril)
        return ember.matmul(L_inv.mT, L_inv).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (self._unbroadcasted_scale_tril.pow(2).sum(-1)
                .expand(tuple(self._batch_shape) + tuple(self._event_shape)))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self) -> Tensor:
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)
