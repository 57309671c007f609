"""``torch.distributions.Poisson``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from ._ops import _poisson
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Counts with mass ``rate^k e^-rate / k!``; samples are floats of the rate's dtype."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, rate=rate)

    def expand(self, batch_shape: tuple, _instance: Poisson | None = None) -> Poisson:
        return self._expand_params(Poisson, batch_shape, _instance, "rate")

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return _poisson(self.rate.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - ember.lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (ember.log(self.rate),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return ember.exp(x)
