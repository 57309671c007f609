"""``torch.distributions.Exponential``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution with ``rate`` (mean ``1 / rate``); ``rsample`` is
    ``E / rate`` with ``E ~ Exp(1)`` (reparameterized)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, rate=rate)

    def expand(self, batch_shape: tuple, _instance: Exponential | None = None) -> Exponential:
        return self._expand_params(Exponential, batch_shape, _instance, "rate")

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return ember.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        draws = ember.empty(shape, dtype=self.rate.dtype, device=self.rate.device)
        return draws.exponential_() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ember.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -ember.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - ember.log(self.rate)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -ember.log(-x)
