"""``torch.distributions.OneHotCategorical`` and ``OneHotCategoricalStraightThrough``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Size, Tensor
from ..nn import functional as F
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .utils import _size

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(Distribution):
    """A ``Categorical`` whose samples are one-hot vectors of length ``probs.size(-1)``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple,
               _instance: OneHotCategorical | None = None) -> OneHotCategorical:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = _size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape,
                                               validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        mode = probs.argmax(dim=-1)
        return F.one_hot(mode, num_classes=probs.shape[-1]).to(probs)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(_size(sample_shape))
        return F.one_hot(indices, self._categorical._num_events).to(probs.detach())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` with the straight-through gradient estimator (Bengio et al.,
    2013): ``rsample`` is the one-hot sample plus ``probs - probs.detach()``."""

    has_rsample = True

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
