"""``ember.special``: torch.special's functions, each with torch's gradient where torch has one.

The gamma family, erfcx, log_ndtr, zeta, entr, xlog1py and the modified Bessel functions of
order 0 and 1 are computed by ember itself (``ember/_backend/special.py``), to float64
precision; ``ndtri``, ``gammainc``/``gammaincc`` and the Bessel J, Y and K functions and
Airy's Ai come from SciPy, the optional extra ``pip install "ember[special]"``: without it
they raise a RuntimeError saying so. See docs/special.md.

The rest re-exports the torch namespace's ops, as torch.special does (``special.expit`` is
``sigmoid``, ``special.gammaln`` is ``lgamma``, ``special.psi`` is ``digamma``...).
"""

from __future__ import annotations

from .._tensor import Tensor
from ..ops import (
    digamma,
    erf,
    erfc,
    erfinv,
    exp2,
    expm1,
    i0,
    lgamma,
    log1p,
    logit,
    mvlgamma,
    polygamma,
    sinc,
    xlogy,
)
from ..ops import sigmoid as expit
from ..ops.activation import log_softmax as _log_softmax
from ..ops.activation import softmax as _softmax
from ..ops.arithmetic import _maybe_out
from ..ops.reductions import logsumexp as _logsumexp
from ..ops.special import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    entr,
    erfcx,
    gammainc,
    gammaincc,
    hermite_polynomial_h,
    hermite_polynomial_he,
    i0e,
    i1,
    i1e,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    log_ndtr,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    ndtr,
    ndtri,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
    spherical_bessel_j0,
    xlog1py,
    zeta,
)
from ..ops.unary import round as _round

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

gammaln = lgamma
psi = digamma


def multigammaln(input: Tensor, p: int, *, out=None) -> Tensor:
    """``torch.special.multigammaln``: ``torch.mvlgamma``."""
    return mvlgamma(input, p, out=out)


def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:
    """``torch.special.round``: ``torch.round`` with ``decimals`` (0 by default, so its node is
    ``RoundBackward1``, as torch's)."""
    return _round(input, decimals=decimals, out=out)


_REQUIRED = object()


def _dim(name: str, dim):
    if dim is _REQUIRED:
        raise TypeError(f'special_{name}() missing 1 required positional arguments: "dim"')
    return dim


def softmax(input: Tensor, dim: int = _REQUIRED, *, dtype=None) -> Tensor:
    """``torch.special.softmax``: ``dim`` is required."""
    return _softmax(input, _dim("softmax", dim), dtype=dtype)


def log_softmax(input: Tensor, dim: int = _REQUIRED, *, dtype=None) -> Tensor:
    """``torch.special.log_softmax``: ``dim`` is required."""
    return _log_softmax(input, _dim("log_softmax", dim), dtype=dtype)


def logsumexp(input: Tensor, dim=_REQUIRED, keepdim: bool = False, *, out=None) -> Tensor:
    """``torch.special.logsumexp``: ``dim`` is required."""
    return _maybe_out(_logsumexp(input, _dim("logsumexp", dim), keepdim), out)
