"""``torch.distributions.Gumbel``."""

from __future__ import annotations

import math
from typing import ClassVar

import ember

from .._tensor import Tensor
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import _NUMBER, broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """The Gumbel distribution with location ``loc`` and scale ``scale``: ``loc - scale *
    log(-log U)`` for ``U`` uniform, as a ``TransformedDistribution`` (so ``rsample`` is
    reparameterized)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = ember.finfo(self.loc.dtype)
        if isinstance(loc, _NUMBER) and isinstance(scale, _NUMBER):
            base_dist = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(ember.full_like(self.loc, finfo.tiny),
                                ember.full_like(self.loc, 1 - finfo.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv,
                      AffineTransform(loc=0, scale=-ember.ones_like(self.scale)),
                      ExpTransform().inv,
                      AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Gumbel | None = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + euler_constant)
