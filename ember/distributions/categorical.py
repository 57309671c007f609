"""``torch.distributions.Categorical``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _size, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Integers ``0 .. K-1`` with probabilities ``probs`` (normalised over the last dim) or
    ``softmax(logits)``; the leading dims of the parameter are the batch. Sampling draws
    with ``ember.multinomial``, as torch's does with ``torch.multinomial``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            # normalised log-probabilities
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.ndimension() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Categorical | None = None) -> Categorical:
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = _size(batch_shape)
        param_shape = batch_shape + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        """NaN: categories have no mean (as torch)."""
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        sample_shape = _size(sample_shape)
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        samples_2d = ember.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        min_real = ember.finfo(self.logits.dtype).min
        logits = ember.clamp(self.logits, min=min_real)  # -inf logits of 0 probs: 0 * min
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = ember.arange(self._num_events, dtype=ember.long, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
