"""``torch.distributions.ExponentialFamily``: densities ``exp(<t(x), theta> - F(theta) +
k(x))``, whose entropy and same-family KL divergence follow from the log normalizer ``F`` by
automatic differentiation (Bregman divergences)."""

from __future__ import annotations

import ember

from .._tensor import Tensor
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """The base of exponential-family distributions: subclasses give ``_natural_params``,
    ``_log_normalizer`` and ``_mean_carrier_measure``."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy from the Bregman divergence of the log normalizer (torch's fallback for
        families without a closed form)."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for nparam, g in zip(nparams, gradients):
            result = result - (nparam * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
