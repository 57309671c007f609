"""The primitives the distributions need beyond ember's ops: torch's ``_standard_gamma`` (a
gamma draw, differentiable in its shape by implicit reparameterization), its gradient
``_standard_gamma_grad``, ``poisson`` draws and the gamma CDF ``gammainc``. Kernels live in
``ember/_backend/random_dists.py``.
"""

from __future__ import annotations

from .._backend import random_dists as _kernels
from .._tensor import Tensor, _make
from ..ops._op import Op, apply1
from ..random import Generator, rng

__all__ = ["_poisson", "_standard_gamma", "_standard_gamma_grad", "gammainc"]


class StandardGammaBackward0(Op):
    """_standard_gamma(alpha): x ~ Gamma(alpha, 1); dx/dalpha = -(dCDF/dalpha) / pdf at x.

    NOTE: the gradient factor is computed on arrays and enters backward as a constant, so a
    second derivative through it is zero, where torch refuses one ("derivative for
    _standard_gamma_grad is not implemented").
    """

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, alpha, gen):
        return _kernels.standard_gamma(gen, alpha)

    def backward(self, grad):
        (alpha,) = self.saved()
        x = self.saved_output()
        return grad * _make(_kernels.standard_gamma_grad(alpha._data, x._data))


def _standard_gamma(alpha: Tensor, generator: Generator | None = None) -> Tensor:
    """``torch._standard_gamma``: one draw of Gamma(alpha, 1) per element of ``alpha``
    (clamped to the dtype's smallest normal number), reparameterized: the draw's gradient with
    respect to ``alpha`` is the implicit one, -(dCDF/dalpha) / pdf."""
    return apply1(StandardGammaBackward0, alpha, rng(generator))


def _standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """``torch._standard_gamma_grad``: dx/dalpha for draws ``x`` of Gamma(alpha, 1). ember's
    is accurate to float64 rounding (series and continued fraction of the incomplete gamma
    function, differentiated in alpha); torch's is a piecewise approximation (~1e-3)."""
    return _make(_kernels.standard_gamma_grad(alpha._data, x._data))


class PoissonBackward0(Op):
    """poisson(rate): the draw does not depend differentiably on the rate (zero gradient, as
    in torch)."""

    __slots__ = ()

    def forward(self, rate, gen):
        return _kernels.poisson(gen, rate)

    def backward(self, grad):
        return grad * 0


def _poisson(rate: Tensor, generator: Generator | None = None) -> Tensor:
    """``torch.poisson``: one Poisson(rate) draw per element, as floats of rate's dtype."""
    return apply1(PoissonBackward0, rate, rng(generator))


class IgammaBackward0(Op):
    """gammainc(a, x) = P(a, x), the regularized lower incomplete gamma function.

    d/dx = pdf(x; a) = x^(a-1) e^-x / Gamma(a) (differentiable again); d/da =
    -pdf * _standard_gamma_grad(a, x), which torch does not implement (it raises).
    """

    __slots__ = ()
    save_inputs = (0, 1)

    def forward(self, a, x):
        return _kernels.gamma_cdf(a, x)

    def backward(self, grad):
        import ember  # the special functions are ember ops

        a, x = self.saved()
        pdf = ember.exp(ember.xlogy(a - 1, x) - x - ember.lgamma(a))
        grad_a = grad_x = None
        if self.needs_grad(0):
            dx_da = _make(_kernels.standard_gamma_grad(a._data, x._data))
            grad_a = -grad * pdf * dx_da
        if self.needs_grad(1):
            grad_x = grad * pdf
        return grad_a, grad_x


def gammainc(input: Tensor, other: Tensor) -> Tensor:
    """``torch.special.gammainc``: the regularized lower incomplete gamma function P(a, x),
    differentiable in both arguments (torch: in ``other`` only)."""
    return IgammaBackward0.apply(input, other)
