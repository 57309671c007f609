"""``torch.distributions.Normal``."""

from __future__ import annotations

import math
from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _NUMBER, _standard_normal

__all__ = ["Normal"]


class Normal(ExponentialFamily):
    """The normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    ``rsample`` is ``loc + eps * scale`` with ``eps ~ N(0, 1)`` (reparameterized).
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self._set_params(validate_args, loc=loc, scale=scale)

    def expand(self, batch_shape: tuple, _instance: Normal | None = None) -> Normal:
        return self._expand_params(Normal, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        log_scale = (math.log(self.scale) if isinstance(self.scale, _NUMBER)
                     else self.scale.log())
        return (-((value - self.loc) ** 2) / (2 * var) - log_scale
                - math.log(math.sqrt(2 * math.pi)))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ember.erf((value - self.loc) * self.scale.reciprocal()
                                    / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * ember.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + ember.log(self.scale)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return -0.25 * x.pow(2) / y + 0.5 * ember.log(-math.pi / y)
