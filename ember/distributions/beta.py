"""``torch.distributions.Beta``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Tensor
from . import constraints
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .utils import _NUMBER, _size, broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """The beta distribution with ``concentration1`` (alpha) and ``concentration0`` (beta):
    a two-category ``Dirichlet`` over ``(x, 1 - x)``, so sampling is reparameterized."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        if isinstance(concentration1, _NUMBER) and isinstance(concentration0, _NUMBER):
            both = ember.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = ember.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Beta | None = None) -> Beta:
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = _size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: tuple = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ember.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.lgamma(x) + ember.lgamma(y) - ember.lgamma(x + y)
