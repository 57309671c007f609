"""``torch.distributions.Uniform``."""

from __future__ import annotations

import ember

from .._tensor import Size, Tensor
from . import constraints
from .distribution import Distribution

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform on the half-open interval ``[low, high)``; ``rsample`` is
    ``low + u * (high - low)`` with ``u ~ U[0, 1)`` (reparameterized)."""

    has_rsample = True

    def __init__(self, low: Tensor | float, high: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self._set_params(validate_args, low=low, high=high)

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def expand(self, batch_shape: tuple, _instance: Uniform | None = None) -> Uniform:
        return self._expand_params(Uniform, batch_shape, _instance, "low", "high")

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return float("nan") * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        rand = ember.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return ember.log(lb.mul(ub)) - ember.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return ember.log(self.high - self.low)
