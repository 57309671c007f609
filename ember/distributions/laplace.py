"""``torch.distributions.Laplace``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from .distribution import Distribution

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace distribution with location ``loc`` and scale ``scale``; ``rsample``
    inverts the CDF at a uniform draw (reparameterized)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self._set_params(validate_args, loc=loc, scale=scale)

    def expand(self, batch_shape: tuple, _instance: Laplace | None = None) -> Laplace:
        return self._expand_params(Laplace, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2**0.5) * self.scale

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        finfo = ember.finfo(self.loc.dtype)
        u = ember.empty(shape, dtype=self.loc.dtype, device=self.loc.device)
        u = u.uniform_(finfo.eps - 1, 1)  # (-1, 1): |u| < 1 keeps log1p(-|u|) finite
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - ember.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ember.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self) -> Tensor:
        return 1 + ember.log(2 * self.scale)
