"""``torch.distributions.Cauchy``."""

from __future__ import annotations

import math
from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from .distribution import Distribution

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half width ``scale``;
    ``rsample`` inverts the CDF at a uniform draw (reparameterized)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self._set_params(validate_args, loc=loc, scale=scale)

    def expand(self, batch_shape: tuple, _instance: Cauchy | None = None) -> Cauchy:
        return self._expand_params(Cauchy, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        return ember.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype,
                          device=self.loc.device)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return ember.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype,
                          device=self.loc.device)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        eps = ember.tan(math.pi * (u - 0.5))  # a standard Cauchy draw (Tensor.cauchy_'s)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ember.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return ember.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
