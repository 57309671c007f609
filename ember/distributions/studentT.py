# ruff: noqa: N999  (torch names this module studentT)
"""``torch.distributions.StudentT``."""

from __future__ import annotations

import math
from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _size, _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``;
    ``rsample`` is ``loc + scale * X / sqrt(Z / df)`` with ``X ~ N(0, 1)`` and ``Z ~
    Chi2(df)``, reparameterized in all three parameters."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "df": constraints.positive, "loc": constraints.real,
        "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Tensor | float, loc: Tensor | float = 0.0,
                 scale: Tensor | float = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: StudentT | None = None) -> StudentT:
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = _size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """``loc`` where ``df > 1``, else NaN."""
        return ember.where(self.df <= 1, float("nan"), self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """``scale^2 df / (df - 2)`` where ``df > 2``, inf for ``1 < df <= 2``, else NaN."""
        df = ember.where(self.df > 2, self.df, 3.0)  # no inf (nor NaN gradient) where unused
        finite = self.scale.pow(2) * df / (df - 2)
        m = ember.where(self.df > 2, finite, self.df)
        m = ember.where((self.df <= 2) & (self.df > 1), float("inf"), m)
        return ember.where(self.df <= 1, float("nan"), m)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * ember.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + ember.lgamma(0.5 * self.df) - ember.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ember.log1p(y**2.0 / self.df) - Z

    def entropy(self) -> Tensor:
        lbeta = (ember.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - ember.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (ember.digamma(0.5 * (self.df + 1))
                                         - ember.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
