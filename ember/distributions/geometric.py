"""``torch.distributions.Geometric``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from ..nn import functional as F
from . import constraints
from .distribution import Distribution
from .utils import (
    _NUMBER,
    _fmt,
    _size,
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Geometric"]


class Geometric(Distribution):
    """The number of failures before the first success of Bernoulli(``probs``) trials:
    ``P(X = k) = (1 - p)^k p`` for ``k = 0, 1, ...`` (``Tensor.geometric_`` counts trials)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        probs_or_logits = probs if probs is not None else logits
        batch_shape = (Size() if isinstance(probs_or_logits, _NUMBER)
                       else probs_or_logits.size())
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter probs ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to be positive but "
                    f"found invalid values:\n{_fmt(value.detach()[~valid])}")

    def expand(self, batch_shape: tuple, _instance: Geometric | None = None) -> Geometric:
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = _size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return ember.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        tiny = ember.finfo(self.probs.dtype).tiny
        with ember.no_grad():
            u = ember.empty(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = ember.where((probs == 1) & (value == 0), 0.0, probs)  # 0 * log(0) = 0
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return (F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
                / self.probs)
