"""``torch.distributions.Dirichlet``."""

from __future__ import annotations

from typing import ClassVar

import ember

from .._tensor import Tensor
from ..nn import functional as F
from . import constraints
from ._ops import _standard_gamma
from .exp_family import ExponentialFamily
from .utils import _size

__all__ = ["Dirichlet"]


def _sample_dirichlet(concentration: Tensor) -> Tensor:
    """Dirichlet draws as normalised gamma draws, ``G / G.sum(-1)`` with ``G_i ~
    Gamma(concentration_i)``: reparameterized through each gamma's implicit gradient.

    NOTE: torch's ``_Dirichlet`` backward differentiates each coordinate's Beta marginal
    instead (a different, also unbiased, per-sample gradient); ember's follows from the
    gamma one by the chain rule, so it needs no second special-function kernel.
    """
    # in float64, so that draws of tiny concentrations that would underflow float32 (and
    # clamp to its smallest normal number) keep their ratios
    gammas = _standard_gamma(concentration.to(ember.float64))
    return (gammas / gammas.sum(-1, keepdim=True)).to(concentration.dtype)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex of the last dim of ``concentration``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Dirichlet | None = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = _size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: tuple = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return _sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration - 1.0, value).sum(-1)
                + ember.lgamma(self.concentration.sum(-1))
                - ember.lgamma(self.concentration).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Tensor:
        """``(c - 1) / sum(c - 1)`` (clamped at 0); where every ``c < 1``, the one-hot vector
        of the largest, as torch."""
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        one_hot = F.one_hot(mode.argmax(dim=-1), concentrationm1.shape[-1]).to(mode)
        return ember.where(mask, one_hot, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (ember.lgamma(self.concentration).sum(-1) - ember.lgamma(a0)
                - (k - a0) * ember.digamma(a0)
                - ((self.concentration - 1.0) * ember.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return ember.lgamma(x).sum(-1) - ember.lgamma(x.sum(-1))
