"""Kernels for ``ember.distributions``: gamma and Poisson draws, and the gamma CDF with its
derivative in the shape parameter (the implicit reparameterization gradient of a gamma draw).

Draws come from the host generator (``numpy.random.Generator``, see ``ember/random.py``) and
move to the parameter's backend, as the other samplers do. The CDF kernels take their array
module from their inputs, so they run on any backend; they compute in float64 and return the
input's dtype.

The gamma CDF ``P(a, x)`` and ``dP/da`` come from one pass over the classic expansions: the
power series of the lower incomplete gamma function where ``x < max(a, 1)`` and the continued
fraction of the upper one elsewhere, both differentiated in ``a`` term by term (forward mode),
so that ``dx/da = -(dP/da) / pdf(x)`` is accurate to float64 rounding (within ~1e-13 of
mpmath for a from 0.01 to 1e5 and tail probabilities down to 1e-30), where torch's
``_standard_gamma_grad`` is a piecewise approximation (~1e-3).
"""

from __future__ import annotations

import numpy

from . import to_host, xp_of
from .special import digamma, lgamma  # float64 kernels (those of ember.lgamma/digamma)

_EPS = numpy.finfo(numpy.float64).eps
_BIG = 2.0 ** 400  # rescaling threshold for the continued fraction's convergents
_MAX_ITER = 200_000  # enough for a ~ 1e8 (the expansions take ~ 9 sqrt(a) terms near x ~ a)


# --------------------------------------------------------------------------- draws


def standard_gamma(gen, alpha):
    """Draws of Gamma(alpha, 1), one per element of ``alpha``, in alpha's dtype.

    Draws that underflow (tiny ``alpha``) are clamped to the dtype's smallest normal number,
    as torch clamps them, so that log-densities and gradients stay finite.
    """
    xp = xp_of(alpha)
    host_alpha = to_host(alpha).astype(numpy.float64)
    with numpy.errstate(invalid="ignore"):
        draw = gen.standard_gamma(numpy.where(host_alpha > 0, host_alpha, 1.0))
    draw = numpy.where(host_alpha > 0, draw, numpy.nan)
    tiny = numpy.finfo(alpha.dtype).tiny
    return xp.asarray(numpy.maximum(draw, tiny).astype(alpha.dtype))


def poisson(gen, rate):
    """Draws of Poisson(rate), one per element of ``rate``, as floats of rate's dtype (torch's
    ``torch.poisson``)."""
    host_rate = to_host(rate).astype(numpy.float64)
    return xp_of(rate).asarray(gen.poisson(host_rate).astype(rate.dtype))


# --------------------------------------------------------------------------- the gamma CDF


def _lower_series(xp, a, x):
    """S = sum_n t_n and dS = sum_n dt_n/da, t_n = x^n / ((a+1)...(a+n)): the power series of
    the lower incomplete gamma function, P(a, x) = x^a e^-x S / Gamma(a+1)."""
    total = xp.ones_like(a)
    dtotal = xp.zeros_like(a)
    term, dlog_term = xp.ones_like(a), xp.zeros_like(a)  # t_n and d log t_n / da
    active = xp.arange(a.size)
    aa, xx, s, ds = a, x, total.copy(), dtotal.copy()
    n = 0
    while active.size and n < _MAX_ITER:
        n += 1
        ap = aa + n
        term = term * (xx / ap)
        dlog_term = dlog_term - 1 / ap
        s = s + term
        ds = ds + term * dlog_term
        done = (term <= _EPS * s) & (xp.abs(term * dlog_term) <= _EPS * xp.abs(ds))
        if done.any():
            total[active[done]] = s[done]
            dtotal[active[done]] = ds[done]
            keep = ~done
            active, aa, xx, s, ds = active[keep], aa[keep], xx[keep], s[keep], ds[keep]
            term, dlog_term = term[keep], dlog_term[keep]
    total[active], dtotal[active] = s, ds
    return total, dtotal


def _upper_fraction(xp, a, x):
    """F and dF/da for the continued fraction of the upper incomplete gamma function,
    Q(a, x) = x^a e^-x F / Gamma(a), evaluated by its convergents p_k / q_k (rescaled when
    they grow large), with the convergents' derivatives in ``a`` carried alongside."""
    y = 1 - a
    z = x + y + 1
    p2, q2, p1, q1 = xp.ones_like(a), x.copy(), x + 1, z * x
    dp2, dq2, dp1, dq1 = xp.zeros_like(a), xp.zeros_like(a), xp.zeros_like(a), -x
    frac = p1 / q1
    dfrac = (dp1 - frac * dq1) / q1
    out, dout = frac.copy(), dfrac.copy()
    active = xp.arange(a.size)
    k = 0
    while active.size and k < _MAX_ITER:
        k += 1
        y = y + 1
        z = z + 2
        yc = y * k
        p = p1 * z - p2 * yc
        q = q1 * z - q2 * yc
        dp = dp1 * z - p1 - dp2 * yc + p2 * k  # d/da of y is -1, of z is -1
        dq = dq1 * z - q1 - dq2 * yc + q2 * k
        ok = q != 0
        safe_q = xp.where(ok, q, 1.0)
        r = xp.where(ok, p / safe_q, frac)
        dr = xp.where(ok, (dp - r * dq) / safe_q, dfrac)
        done = ok & (xp.abs(frac - r) <= _EPS * xp.abs(r)) & (
            xp.abs(dfrac - dr) <= _EPS * xp.abs(dr))
        frac, dfrac = r, dr
        p2, q2, p1, q1, dp2, dq2, dp1, dq1 = p1, q1, p, q, dp1, dq1, dp, dq
        big = xp.abs(p) > _BIG
        if big.any():
            scale = xp.where(big, 1 / _BIG, 1.0)
            p2, q2, p1, q1 = p2 * scale, q2 * scale, p1 * scale, q1 * scale
            dp2, dq2, dp1, dq1 = dp2 * scale, dq2 * scale, dp1 * scale, dq1 * scale
        if done.any():
            out[active[done]] = frac[done]
            dout[active[done]] = dfrac[done]
            keep = ~done
            active = active[keep]
            y, z, frac, dfrac = y[keep], z[keep], frac[keep], dfrac[keep]
            p2, q2, p1, q1 = p2[keep], q2[keep], p1[keep], q1[keep]
            dp2, dq2, dp1, dq1 = dp2[keep], dq2[keep], dp1[keep], dq1[keep]
    out[active], dout[active] = frac, dfrac
    return out, dout


def _gamma_cdf_parts(a, x, want_cdf: bool, want_grad: bool):
    """P(a, x) and/or dx/da = -(dP/da) / pdf(x) on broadcast float64 arrays (flat)."""
    xp = xp_of(a, x)
    shape = numpy.broadcast_shapes(a.shape, x.shape)
    a = xp.broadcast_to(a.astype(numpy.float64), shape).ravel()
    x = xp.broadcast_to(x.astype(numpy.float64), shape).ravel()
    cdf = xp.full(a.shape, numpy.nan)
    grad = xp.full(a.shape, numpy.nan)
    valid = (a > 0) & (x >= 0) & xp.isfinite(a)
    zero = valid & (x == 0)
    cdf[zero], grad[zero] = 0.0, 0.0
    inf = valid & xp.isinf(x)
    cdf[inf], grad[inf] = 1.0, 0.0
    finite = valid & (x > 0) & xp.isfinite(x)
    lower = xp.nonzero(finite & ((x < 1) | (x < a)))[0]
    upper = xp.nonzero(finite & ~((x < 1) | (x < a)))[0]
    if lower.size:
        al, xl = a[lower], x[lower]
        s, ds = _lower_series(xp, al, xl)
        if want_cdf:
            cdf[lower] = xp.exp(al * xp.log(xl) - xl - lgamma(al + 1)) * s
        if want_grad:
            grad[lower] = -(xl / al) * (s * (xp.log(xl) - digamma(al + 1)) + ds)
    if upper.size:
        au, xu = a[upper], x[upper]
        f, df = _upper_fraction(xp, au, xu)
        if want_cdf:
            cdf[upper] = 1 - xp.exp(au * xp.log(xu) - xu - lgamma(au)) * f
        if want_grad:
            grad[upper] = xu * (f * (xp.log(xu) - digamma(au)) + df)
    return cdf.reshape(shape), grad.reshape(shape)


def gamma_cdf(a, x):
    """The regularized lower incomplete gamma function P(a, x) (``torch.special.gammainc``),
    in the result dtype of ``a`` and ``x``."""
    out = _gamma_cdf_parts(a, x, True, False)[0]
    return out.astype(numpy.result_type(a.dtype, x.dtype))


def standard_gamma_grad(alpha, x):
    """dx/dalpha for a draw x of Gamma(alpha, 1), by implicit differentiation of its CDF:
    -(dP(alpha, x)/dalpha) / pdf(x; alpha). The role of torch's ``_standard_gamma_grad``."""
    out = _gamma_cdf_parts(alpha, x, False, True)[1]
    return out.astype(numpy.result_type(alpha.dtype, x.dtype))
