"""``torch.distributions.Gamma``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from ._ops import _standard_gamma, gammainc
from .exp_family import ExponentialFamily

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and ``rate`` (1 / scale).

    ``rsample`` is ``_standard_gamma(concentration) / rate``, reparameterized in both
    parameters: the standard draw's gradient in its shape is the implicit one,
    ``-(dCDF/dconcentration) / pdf``, as in torch.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Tensor | float, rate: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self._set_params(validate_args, concentration=concentration, rate=rate)

    def expand(self, batch_shape: tuple, _instance: Gamma | None = None) -> Gamma:
        return self._expand_params(Gamma, batch_shape, _instance, "concentration", "rate")

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        with ember.no_grad():  # keep draws positive (torch clamps in place, unrecorded)
            value.detach().clamp_(min=ember.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value: Tensor | float) -> Tensor:
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration, self.rate)
                + ember.xlogy(self.concentration - 1, value)
                - self.rate * value - ember.lgamma(self.concentration))

    def entropy(self) -> Tensor:
        return (self.concentration - ember.log(self.rate) + ember.lgamma(self.concentration)
                + (1.0 - self.concentration) * ember.digamma(self.concentration))

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)
