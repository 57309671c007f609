"""``torch.distributions.Bernoulli``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from ..nn import functional as F
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _NUMBER, _size, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


class Bernoulli(ExponentialFamily):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0: give exactly one of
    ``probs`` and ``logits``; the other is derived on first use."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, _NUMBER)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, _NUMBER)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = Size() if is_scalar else self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Bernoulli | None = None) -> Bernoulli:
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = _size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where ``probs > 0.5``, 0 below, NaN at exactly 0.5 (as torch)."""
        mode = (self.probs >= 0.5).to(self.probs)
        return ember.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = ember.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (ember.logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return ember.log1p(ember.exp(x))
