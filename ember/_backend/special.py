"""Array kernels of ``ember.special``: gamma-family, Hurwitz zeta, erfcx, log_ndtr, the modified
Bessel functions of order 0 and 1, entr and xlog1py, written out here; and the few functions
whose hand-written forms would be long, from SciPy (the optional extra ``ember[special]``).

Every hand-written kernel takes a float64 array (of any backend: it takes its array module
from its input through ``xp_of``) and returns a float64 array; the ops layer
(``ember/ops/special.py``) casts in and out. The algorithms are the textbook ones, chosen to
be short and accurate to float64 precision (a few ulp, see docs/special.md):

* ``lgamma`` and ``digamma``: the Taylor series about 2, whose coefficients are zeta(k) - 1,
  on a window of width 1 around their awkward zeros (1 and 2 for lgamma, 1.4616 for digamma),
  reached by the recurrence from (0, 10); Stirling's series from 10 up; the reflection
  formula for negative non-integers. Special values follow torch (glibc's ``lgamma`` and
  torch's ``calc_digamma``): inf at lgamma's poles, -inf/+inf at digamma(+0/-0), NaN at the
  negative integers.
* ``zeta``: Cephes' Hurwitz zeta as torch has it (direct sum to q + 9, then Euler-Maclaurin
  with its early exits), so its special values and NaN cases are torch's; a negative
  non-integer q with an integer s goes through the sum over the negative terms first.
* ``erfcx``: the series of erf for x < 1, the Laplace continued fraction above.
* ``bessel_i``: the power series for |x| <= 20, Hankel's asymptotic series above (both
  converge to 1e-17 there).

SciPy (imported on first use of such a function, never at ``import ember``) provides
``ndtri``, the Bessel functions J0/J1/Y0/Y1 and K0/K1, Airy's Ai and the regularised
incomplete gamma functions. Without SciPy they raise ``RuntimeError`` naming the extra.
"""

from __future__ import annotations

import functools
import math

from . import device_of, host, to_device_array, to_host, xp_of
from .errstate import (
    ignore_all,
    ignore_divide,
    ignore_divide_invalid,
    ignore_divide_over,
    ignore_invalid,
    ignore_invalid_over,
    ignore_over,
)

_INF = math.inf
_NAN = math.nan
_MACHEP = 1.11022302462515654042e-16  # Cephes' (and torch's zeta's) 2**-53
_EULER = 0.57721566490153286061
_HALF_LOG_2PI = 0.91893853320467274178
_SQRT_PI = math.sqrt(math.pi)


def _exp_square(x, sign: float = 1.0):
    """exp(sign * x*x) of a float64 array (``sign`` a power of 2), without the rounding error
    of x*x: x is split into a 26-bit head and a tail, x*x = head**2 + tail (x + head) with
    head**2 exact, so the relative error is ~1 ulp, not x**2 ulp."""
    xp = xp_of(x)
    head = (x.view(host.int64) & ~((1 << 27) - 1)).view(host.float64)
    tail = x - head
    with ignore_invalid_over():
        out = xp.exp(sign * head * head) * xp.exp(sign * tail * (x + head))
    # past 1e154 (inf included) x*x overflows: exp(+inf) or exp(-inf), not inf * 0
    return xp.where(xp.abs(x) > 1e154, _INF if sign > 0 else 0.0, out)


def _apply(out, mask, fn, *arrays):
    """``out[mask] = fn(*(a[mask] for a in arrays))``, skipped when nothing is selected."""
    if mask.any():
        out[mask] = fn(*[a[mask] for a in arrays])


# --------------------------------------------------------------------------- Hurwitz zeta

# Cephes' Euler-Maclaurin denominators: (2k)! / B_2k
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta_positive(s, q):
    """Hurwitz zeta(s, q) for q > 0 (s > 1 or NaN): Cephes' algorithm as torch runs it.

    The sum of (q + k)**-s up to a = q + N > 9 (N >= 9), then the Euler-Maclaurin tail at a;
    each element stops adding once its next term is below MACHEP of its sum, as Cephes does
    (the asymptotic tail diverges if summed on regardless).
    """
    xp = xp_of(s)
    with ignore_all():
        total = xp.power(q, -s)
        done = xp.zeros(s.shape, dtype=bool)
        steps = xp.fmax(9.0, xp.floor(9.0 - q) + 1.0)  # Cephes: i < 9 or a <= 9
        a = q.copy()
        b = xp.zeros_like(s)
        for i in range(1, int(steps.max()) + 1 if steps.size else 0):
            live = ~done & (steps >= i)
            a = xp.where(live, a + 1.0, a)
            b = xp.where(live, xp.power(a, -s), b)
            total = xp.where(live, total + b, total)
            done |= live & (-_MACHEP * total < b) & (b < _MACHEP * total)
        w = a
        total = xp.where(done, total, total + b * w / (s - 1.0) - 0.5 * b)
        fac = xp.ones_like(s)
        k = 0.0
        for coef in _ZETA_A:
            fac = fac * (s + k)
            b = b / w
            t = fac * b / coef
            total = xp.where(done, total, total + t)
            done |= xp.abs(t / total) < _MACHEP
            k += 1.0
            fac = fac * (s + k)
            b = b / w
            k += 1.0
    return total


def zeta(s, q):
    """Hurwitz zeta(s, q) = sum over k >= 0 of (q + k)**-s, as torch's ``special.zeta``.

    torch's special values: inf at s == 1 and at q a non-positive integer; NaN for s < 1, and
    for q < 0 with s not an integer; zeta(s, inf) is NaN (Cephes' tail is 0 * inf there).
    For q < 0 (s an integer) the negative terms are summed in closed form: with m = ceil(-q)
    and f = -(q + m - 1) in (0, 1], they are (-1)**s (zeta(s, f) - zeta(s, f + m)).
    """
    xp = xp_of(s, q)
    s, q = xp.broadcast_arrays(s, q)
    out = xp.full(s.shape, _NAN)
    with ignore_invalid():
        pole = (s == 1.0) | ((q <= 0) & (q == xp.floor(q)))
        nan = (s < 1.0) | ((q <= 0) & (s != xp.floor(s)))
        regular = ~pole & ~nan
        positive = regular & ~(q < 0)
        negative = regular & (q < 0)
    out[pole] = _INF
    _apply(out, positive, _zeta_positive, s, q)
    _apply(out, negative, _zeta_negative_q, s, q)
    return out


def _zeta_negative_q(s, q):
    """zeta(s, q) for q < 0 not an integer, s an integer: the m = ceil(-q) negative terms
    (q + k)**-s, then zeta(s, q + m). The negative terms are summed one by one as torch does
    when m <= 64; past that, in closed form: with f = -(q + m - 1) in (0, 1) they are
    (-1)**s (zeta(s, f) - zeta(s, f + m))."""
    xp = xp_of(s)
    m = xp.ceil(-q)
    out = xp.empty_like(s)
    with ignore_all():
        tail = _zeta_positive(s, q + m)
        near = m <= 64
        if near.any():
            sn, qn, mn = s[near], q[near], m[near]
            terms = xp.zeros_like(sn)
            for k in range(int(mn.max())):
                terms = xp.where(mn > k, terms + xp.power(qn + k, -sn), terms)
            out[near] = terms
        far = ~near
        if far.any():
            sf, qf, mf = s[far], q[far], m[far]
            f = -(qf + mf - 1.0)
            sign = xp.where(xp.fmod(sf, 2.0) == 0, 1.0, -1.0)
            out[far] = sign * (_zeta_positive(sf, f) - _zeta_positive(sf, f + mf))
        return out + tail


# --------------------------------------------------------------------------- lgamma, digamma

_ASYMPTOTIC = 10.0
# Stirling: B_2k / (2k (2k - 1)) and digamma's B_2k / 2k, k = 1..8
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400)
_DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12,
                       -3617 / 8160)
# digamma's positive zero, as a sum of two doubles
_PSI_ROOT_HI, _PSI_ROOT_LO = 1.4616321449683622, 9.549995429965697e-17


@functools.lru_cache(maxsize=1)
def _zeta_minus_one() -> tuple:
    """zeta(k) - 1 = zeta(k, 2) for k = 2..31: lgamma's Taylor coefficients about 2."""
    k = host.arange(2.0, 32.0)
    return tuple(float(v) for v in _zeta_positive(k, host.full(k.shape, 2.0)))


@functools.lru_cache(maxsize=1)
def _digamma_root_coefficients() -> tuple:
    """(-1)**(k+1) zeta(k + 1, x0) for k = 1..40: digamma's Taylor coefficients about its
    zero x0 (radius x0: |z| <= 0.5 converges as 0.34**k)."""
    k = host.arange(2.0, 42.0)
    z = _zeta_positive(k, host.full(k.shape, _PSI_ROOT_HI))
    return tuple(float(v) * (1 if i % 2 == 0 else -1) for i, v in enumerate(z))


def _shifted(x, low: float):
    """x = u + shift with u in [low, low + 1): (shift, the factors of the recurrence between
    Gamma(u) and Gamma(x), as an array of products or sums taken by the caller)."""
    xp = xp_of(x)
    shift = xp.floor(x - low)
    return shift, int(xp.abs(shift).max()) if shift.size else 0


def _lgamma_stirling(x):
    xp = xp_of(x)
    with ignore_invalid_over():
        r = 1.0 / (x * x)
        series = xp.zeros_like(x)
        for coef in reversed(_STIRLING):
            series = series * r + coef
        return (x - 0.5) * xp.log(x) - x + _HALF_LOG_2PI + series / x


def _lgamma_positive(x):
    """lgamma for finite x > 0. Below 10: lgamma(2 + z) = (1 - gamma) z + sum_k>=2 (-1)**k
    (zeta(k) - 1) / k z**k on z in [-0.5, 0.5) (its zeros at z = -1, 0 stay accurate: z is
    formed exactly as x - (shift + 2)), reached with Gamma(x + 1) = x Gamma(x). Stirling's
    series from 10 up."""
    xp = xp_of(x)
    out = xp.empty_like(x)
    big = x >= _ASYMPTOTIC
    _apply(out, big, _lgamma_stirling, x)
    small = ~big
    if small.any():
        v = x[small]
        shift, steps = _shifted(v, 1.5)
        z = v - (shift + 2.0)
        prod = xp.ones_like(v)
        for j in range(1, steps + 1):  # Gamma(v) = Gamma(u) (v-1)...(u), or / v (v+1)...(u-1)
            prod = xp.where(shift >= j, prod * (v - j), prod)
            prod = xp.where(-shift >= j, prod * (v + (j - 1)), prod)
        with ignore_divide():
            logprod = xp.log(prod)
        c = _zeta_minus_one()
        acc = xp.zeros_like(z)
        for k in range(31, 1, -1):  # Horner from z**31 ((1/4)**30: past float64) down to z**2
            acc = acc * z + (-1) ** k * c[k - 2] / k
        out[small] = (acc * z + (1.0 - _EULER)) * z + xp.where(shift >= 0, logprod, -logprod)
    return out


def _sinpi_abs(x):
    """|sin(pi x)| with x reduced exactly first (x - round(x) is exact)."""
    xp = xp_of(x)
    return xp.abs(xp.sin(math.pi * (x - xp.round(x))))


def lgamma(x):
    """log|Gamma(x)|, as torch's ``lgamma`` (glibc's): inf at 0, -0, the negative integers and
    +-inf; NaN for NaN. Negative non-integers by reflection,
    lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)."""
    xp = xp_of(x)
    out = xp.full(x.shape, _NAN)
    with ignore_invalid():
        inf = xp.isinf(x) | ((x <= 0) & (x == xp.floor(x)))
        pos = (x > 0) & ~inf
        neg = (x < 0) & ~inf
    out[inf] = _INF
    _apply(out, pos, _lgamma_positive, x)

    def reflect(v):
        with ignore_divide():
            return xp.log(math.pi / _sinpi_abs(v)) - _lgamma_positive(1.0 - v)

    _apply(out, neg, reflect, x)
    return out


def _digamma_asymptotic(x):
    xp = xp_of(x)
    with ignore_over():
        r = 1.0 / (x * x)
        series = xp.zeros_like(x)
        for coef in reversed(_DIGAMMA_ASYMPTOTIC):
            series = series * r + coef
        return xp.log(x) - 0.5 / x - series * r


def _digamma_positive(x):
    """digamma for finite x > 0. Below 10: its Taylor series about its zero x0 = 1.4616...
    (so relative precision holds next to the zero), on [x0 - 0.5, x0 + 0.5), reached with
    psi(x + 1) = psi(x) + 1/x. The asymptotic series from 10 up."""
    xp = xp_of(x)
    out = xp.empty_like(x)
    big = x >= _ASYMPTOTIC
    _apply(out, big, _digamma_asymptotic, x)
    small = ~big
    if small.any():
        v = x[small]
        shift, steps = _shifted(v, _PSI_ROOT_HI - 0.5)
        z = ((v - shift) - _PSI_ROOT_HI) - _PSI_ROOT_LO
        acc = xp.zeros_like(v)
        with ignore_divide_over():
            for j in range(1, steps + 1):  # psi(v) = psi(u) + 1/(v-1) + ... + 1/u, or minus
                acc = xp.where(shift >= j, acc + 1.0 / (v - j), acc)
                acc = xp.where(-shift >= j, acc - 1.0 / (v + (j - 1)), acc)
        series = xp.zeros_like(v)
        for c in reversed(_digamma_root_coefficients()):
            series = (series + c) * z
        out[small] = series + acc
    return out


def digamma(x):
    """psi(x) = d/dx lgamma(x), as torch's ``calc_digamma``: -inf at +0 and +inf at -0
    (copysign(inf, -x)), NaN at the negative integers and -inf, inf at inf; negative
    non-integers by reflection, psi(x) = psi(1 - x) - pi / tan(pi frac(x))."""
    xp = xp_of(x)
    out = xp.full(x.shape, _NAN)
    with ignore_invalid():
        zero = x == 0
        pos = (x > 0) & ~xp.isinf(x)
        neg = (x < 0) & (x != xp.trunc(x))
    out[zero] = xp.copysign(xp.full(x.shape, _INF), -x)[zero]
    out[x == _INF] = _INF
    _apply(out, pos, _digamma_positive, x)

    def reflect(v):
        frac = v - xp.trunc(v)
        return _digamma_positive(1.0 - v) - math.pi / xp.tan(math.pi * frac)

    _apply(out, neg, reflect, x)
    return out


def polygamma(n: int, x):
    """The n-th derivative of digamma: digamma for n = 0, else
    (-1)**(n+1) n! zeta(n + 1, x), as torch computes it.

    For n = 1 torch has its own trigamma series; its special values are kept (0 at inf, NaN at
    -inf), but the poles at the non-positive integers give inf, where torch's reflection
    formula gives a large finite number (pi**2 / sin(pi x)**2 with sin(pi x) ~ 1e-16).
    """
    if n == 0:
        return digamma(x)
    xp = xp_of(x)
    z = zeta(xp.full(x.shape, float(n + 1)), x)
    try:
        fact = float(math.factorial(n))
    except OverflowError:
        fact = _INF
    with ignore_invalid_over():
        out = (1.0 if n % 2 else -1.0) * fact * z
    if n == 1:
        out = xp.where(x == _INF, 0.0, xp.where(x == -_INF, _NAN, out))
    return out


# --------------------------------------------------------------------------- erfcx, log_ndtr

_ERFCX_SPLIT = 1.0
_SERIES_TERMS = 40


def _erfcx_small(x):
    """erfcx = exp(x**2) - 2/sqrt(pi) * exp(x**2) erf(x), whose second term is the series
    x * sum_k (2x**2)**k / (2k+1)!!; |x| < 1, where the difference loses under 3 bits."""
    x2 = 2.0 * x * x
    term = x.copy()
    total = x.copy()
    for k in range(1, _SERIES_TERMS):
        term = term * (x2 / (2 * k + 1))
        total = total + term
    return _exp_square(x) - (2.0 / _SQRT_PI) * total


def _erfcx_fraction(x, depth: int):
    """erfcx(x) = 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))), x >= 1."""
    t = x.copy()
    with ignore_invalid():
        for k in range(depth, 0, -1):
            t = x + (0.5 * k) / t
    return 1.0 / (_SQRT_PI * t)


def _erfcx_nonneg(x):
    xp = xp_of(x)
    out = xp.empty_like(x)
    small = x < _ERFCX_SPLIT
    mid = (x >= _ERFCX_SPLIT) & (x < 2.0)
    _apply(out, small, _erfcx_small, x)
    _apply(out, mid, lambda v: _erfcx_fraction(v, 250), x)  # converges slowest near 1
    _apply(out, ~small & ~mid, lambda v: _erfcx_fraction(v, 60), x)
    return out


def erfcx(x):
    """The scaled complementary error function exp(x**2) erfc(x), as torch's: 2 exp(x**2) -
    erfcx(-x) for x < 0 (overflowing to inf below -26.6), 0 at inf, NaN for NaN."""
    xp = xp_of(x)
    out = xp.full(x.shape, _NAN)
    with ignore_invalid():
        nonneg = x >= 0
        neg = x < 0
    _apply(out, nonneg, _erfcx_nonneg, x)

    def reflect(v):
        with ignore_invalid_over():
            e = _exp_square(v)
            return xp.where(xp.isinf(e), _INF, 2.0 * e - _erfcx_nonneg(-v))

    _apply(out, neg, reflect, x)
    return out


def _normal_tail(x):
    """ndtr(-|x|) = erfc(|x| / sqrt 2) / 2 = exp(-x**2 / 2) erfcx(|x| / sqrt 2) / 2, with
    exp(-x**2 / 2) from x itself (no rounding of x / sqrt 2 squared): a few ulp, even where
    one ulp of x moves the tail by x**2 ulp."""
    xp = xp_of(x)
    ax = xp.abs(x)
    with ignore_invalid_over():
        scaled = _erfcx_nonneg(xp.where(xp.isnan(ax), 0.0, ax) * (1.0 / math.sqrt(2.0)))
        return xp.where(xp.isnan(x), _NAN, 0.5 * _exp_square(ax, -0.5) * scaled)


def ndtr(x):
    """The standard normal CDF, to relative precision in both tails (torch's is
    (1 + erf(x / sqrt 2)) / 2, which rounds to 0 below -8.3: SciPy's values)."""
    xp = xp_of(x)
    tail = _normal_tail(x)
    return xp.where(x < 0, tail, 1.0 - tail)


def log_ndtr(x):
    """log of the standard normal CDF, as torch's ``calc_log_ndtr`` splits it: with
    t = -x / sqrt 2, log(erfcx(t) / 2) - x**2 / 2 below -1, else log1p(-ndtr(-x))."""
    xp = xp_of(x)
    out = xp.full(x.shape, _NAN)
    with ignore_invalid():
        left = x < -1.0
        mid = (x >= -1.0) & (x < 0)
        right = x >= 0
    with ignore_divide_over():
        _apply(out, left, lambda v: xp.log(
            _erfcx_nonneg(v * (-1.0 / math.sqrt(2.0))) / 2.0) - v * v * 0.5, x)
        _apply(out, mid, lambda v: xp.log(_normal_tail(v)), x)
        _apply(out, right, lambda v: xp.log1p(-_normal_tail(v)), x)
    return out


# --------------------------------------------------------------------------- entr, xlog1py


def entr(x):
    """Elementwise entropy -x log(x), as torch: 0 at 0, -inf for x < 0, NaN for NaN."""
    xp = xp_of(x)
    with ignore_divide_invalid():
        out = -x * xp.log(x)
        out = xp.where(x == 0, 0.0, out)
        return xp.where(x < 0, -_INF, out)


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is NaN), as torch's ``special.xlog1py``."""
    xp = xp_of(x, y)
    with ignore_divide_invalid():
        out = x * xp.log1p(y)
    return xp.where((x == 0) & ~xp.isnan(y), xp.zeros((), out.dtype), out)


# --------------------------------------------------------------------------- modified Bessel I

_BESSEL_SPLIT = 20.0
_BESSEL_SERIES_TERMS = 60  # (x**2/4)**k / (k!)**2 at x = 20, k = 60: e**-100 of the sum


@functools.lru_cache(maxsize=2)
def _hankel_coefficients(order: int) -> tuple:
    """Coefficients of I_v(x) ~ e**x / sqrt(2 pi x) * sum_k c_k / x**k (v = 0, 1), k < 40:
    c_k = prod_j ((2j - 1)**2 - 4 v**2) / (8 j)."""
    out, c = [1.0], 1.0
    for j in range(1, 40):
        c *= ((2 * j - 1) ** 2 - 4 * order * order) / (8 * j)
        out.append(c)
    return tuple(out)


def _bessel_i_series(ax, order: int):
    """I_0 or I_1 of |x| <= 20: sum_k (x**2/4)**k / (k! (k + v)!) times (x/2)**v."""
    y = 0.25 * ax * ax
    term = xp_of(ax).ones_like(ax)
    total = term.copy()
    for k in range(1, _BESSEL_SERIES_TERMS):
        term = term * (y / (k * (k + order)))
        total = total + term
    return total * (0.5 * ax) if order else total


def _bessel_i_scaled_asymptotic(ax, order: int):
    """exp(-x) I_v(x) for x > 20 from Hankel's expansion (its terms fall below e**-37)."""
    xp = xp_of(ax)
    r = 1.0 / ax
    acc = xp.zeros_like(ax)
    for c in reversed(_hankel_coefficients(order)):
        acc = acc * r + c
    with ignore_invalid():
        return acc / xp.sqrt(2.0 * math.pi * ax)


def bessel_i(x, order: int, scaled: bool):
    """The modified Bessel function I_0 or I_1 of x, or exp(-|x|) times it (``scaled``).

    I_0 is even and I_1 odd. Unscaled, above 20 it is exp(|x|) times the scaled form, so it
    overflows to inf past ~713 and is NaN at +-inf, as torch's i0 and i1 (Cephes') are.
    """
    xp = xp_of(x)
    ax = xp.abs(x)
    out = xp.full(x.shape, _NAN)
    with ignore_invalid():
        small = ax <= _BESSEL_SPLIT
        large = ax > _BESSEL_SPLIT

    def series(v):
        s = _bessel_i_series(v, order)
        return s * xp.exp(-v) if scaled else s

    def asymptotic(v):
        s = _bessel_i_scaled_asymptotic(v, order)
        if scaled:
            return s
        with ignore_invalid_over():
            return xp.exp(v) * s

    _apply(out, small, series, ax)
    _apply(out, large, asymptotic, ax)
    if order:
        out = xp.where(xp.signbit(x), -out, out)
    return out


def spherical_bessel_j0(x):
    """sin(x) / x, 1 at 0 and 0 at +-inf (torch's ``special.spherical_bessel_j0``)."""
    xp = xp_of(x)
    with ignore_divide_invalid():
        out = xp.sin(x) / x
    out = xp.where(x == 0, 1.0, out)
    return xp.where(xp.isinf(x), 0.0, out)


# --------------------------------------------------------------------------- through SciPy

SCIPY_MISSING = ('torch.special.{name} needs SciPy in ember, which is not installed: install '
                 'the optional extra with pip install "ember[special]" (or pip install scipy)')


def _scipy_special(name: str):
    try:
        import scipy.special
    except ImportError:
        raise RuntimeError(SCIPY_MISSING.format(name=name)) from None
    return scipy.special


def _through_scipy(name: str, fn, *arrays):
    """``fn`` of scipy.special on host copies of ``arrays``, the result back on their device
    (an explicit copy when they live on another backend, as ``.get()`` makes)."""
    sp = _scipy_special(name)
    host_arrays = [to_host(a) for a in arrays]
    with ignore_all():
        out = host.asarray(fn(sp, *host_arrays), dtype=host.float64)
    return to_device_array(out, device_of(arrays[0]))


def ndtri(p):
    """The inverse of the standard normal CDF (SciPy's ``ndtri``: -inf at 0, inf at 1)."""
    return _through_scipy("ndtri", lambda sp, v: sp.ndtri(v), p)


def bessel_j0(x):
    return _through_scipy("bessel_j0", lambda sp, v: sp.j0(v), x)


def bessel_j1(x):
    return _through_scipy("bessel_j1", lambda sp, v: sp.j1(v), x)


def bessel_y0(x):
    return _through_scipy("bessel_y0", lambda sp, v: sp.y0(v), x)


def bessel_y1(x):
    return _through_scipy("bessel_y1", lambda sp, v: sp.y1(v), x)


def modified_bessel_k0(x):
    return _through_scipy("modified_bessel_k0", lambda sp, v: sp.k0(v), x)


def modified_bessel_k1(x):
    return _through_scipy("modified_bessel_k1", lambda sp, v: sp.k1(v), x)


def scaled_modified_bessel_k0(x):
    return _through_scipy("scaled_modified_bessel_k0", lambda sp, v: sp.k0e(v), x)


def scaled_modified_bessel_k1(x):
    return _through_scipy("scaled_modified_bessel_k1", lambda sp, v: sp.k1e(v), x)


def airy_ai(x):
    """Airy's Ai; as torch's, 0 above 103.9 (SciPy gives NaN far out, where Ai underflows)
    and NaN at +-inf."""
    def ai(sp, v):
        return host.where(host.isinf(v), _NAN, host.where(v > 103.892, 0.0, sp.airy(v)[0]))
    return _through_scipy("airy_ai", ai, x)


def gammainc(a, x):
    """The regularised lower incomplete gamma function P(a, x) (torch's ``igamma``)."""
    return _through_scipy("gammainc", lambda sp, u, v: sp.gammainc(u, v), a, x)


def gammaincc(a, x):
    """The regularised upper incomplete gamma function Q(a, x) (torch's ``igammac``)."""
    return _through_scipy("gammaincc", lambda sp, u, v: sp.gammaincc(u, v), a, x)


# --------------------------------------------------------------------------- orthogonal polynomials

# Chebyshev kind -> the degree past which torch uses the trigonometric form inside (-1, 1)
_CHEBYSHEV = {"t": 6, "u": 8, "v": 8, "w": 8}
_SHIFTED_CHEBYSHEV = {"t": 6, "u": 6, "v": 6, "w": 4}


def _degree(n):
    """torch's ``static_cast<int64_t>(n)``: truncated; NaN and values past int64 become its
    minimum (x86's conversion result), so they give the n < 0 value, 0."""
    xp = xp_of(n)
    with ignore_invalid():
        valid = xp.isfinite(n) & (xp.abs(n) < 2.0 ** 63)
    return xp.trunc(xp.where(valid, n, -1.0))


def _recurrence(first, step, k, active):
    """P_k by its three-term recurrence P_j = step(j, P_{j-1}, P_{j-2}) from P_0 = 1 and
    P_1 = ``first``, for the elements in ``active`` (others are left 1)."""
    xp = xp_of(k)
    p = xp.ones_like(first)
    q = first
    out = xp.where(k == 1, first, p)
    top = int(k[active].max()) if active.any() else 0
    with ignore_all():
        for j in range(2, top + 1):
            p, q = q, step(j, q, p)
            out = xp.where(k == j, q, out)
    return out


def _chebyshev(kind: str, y, k, threshold: int, shifted: bool):
    """Chebyshev T, U, V or W of degree k at y (y = 2x - 1 for the shifted ones), with
    torch's special values at y = +-1 and its trigonometric form for |y| < 1 past
    ``threshold``."""
    xp = xp_of(y)
    first = {"t": y, "u": y + y, "v": y + y - 1.0, "w": y + y + 1.0}[kind]
    even = xp.fmod(k, 2.0) == 0
    odd_sign = xp.where(even, 1.0, -1.0)
    trig = (k > threshold) & (xp.abs(y) < 1.0)
    with ignore_all():
        theta = xp.arccos(xp.where(trig, y, 0.0))
        if kind == "t":
            edge = xp.where(y > 0, 1.0, odd_sign)
            form = xp.cos(k * theta)
        elif kind == "u":
            edge = xp.where(y > 0, k + 1.0, odd_sign * (k + 1.0))
            s = xp.sin(theta)
            form = xp.where(s != 0, xp.sin((k + 1) * theta) / s,
                            (k + 1) * xp.cos((k + 1) * theta) / y)
        elif kind == "v":
            edge = xp.where(y > 0, 1.0, odd_sign * (2 * k + 1))
            form = xp.where(xp.sin(theta / 2) != 1,
                            xp.cos((k + 0.5) * theta) / xp.cos(theta / 2),
                            odd_sign * (2 * k + 1))
        else:
            edge = xp.where(y > 0, 2 * k + 1, odd_sign)
            at_one = odd_sign if shifted else xp.where(y > 0, 2 * k + 1, odd_sign)
            form = xp.where(xp.cos(theta / 2) != 1,
                            xp.sin((k + 0.5) * theta) / xp.sin(theta / 2), at_one)
    rec = _recurrence(first, lambda j, q, p: (y + y) * q - p, k,
                      ~trig & (xp.abs(y) != 1.0) & (k >= 2))
    out = xp.where(trig, form, rec)
    return xp.where(xp.abs(y) == 1.0, edge, out)


def orthogonal_polynomial(kind: str, x, n):
    """The polynomial ``kind`` of degree n at x, as torch's ``special.<kind>_polynomial_*``:
    0 for n < 0; torch's exact values at the ends of the interval; its three-term
    recurrences (and, for Chebyshev's inside (-1, 1) at high degree, the trigonometric
    forms), so the values agree with torch's to rounding.

    ``kind``: "chebyshev_t" .. "chebyshev_w", "shifted_chebyshev_t" .. "_w", "hermite_h",
    "hermite_he", "laguerre_l", "legendre_p".
    """
    xp = xp_of(x, n)
    x, n = xp.broadcast_arrays(x, n)
    k = _degree(n)
    family, _, letter = kind.rpartition("_")
    with ignore_all():
        if family == "chebyshev":
            out = _chebyshev(letter, x, k, _CHEBYSHEV[letter], False)
        elif family == "shifted_chebyshev":
            out = _chebyshev(letter, x + x - 1.0, k, _SHIFTED_CHEBYSHEV[letter], True)
        elif kind == "hermite_h":
            out = _recurrence(x + x, lambda j, q, p: (x + x) * q - (2 * j - 2) * p, k, k >= 2)
        elif kind == "hermite_he":
            out = _recurrence(x, lambda j, q, p: x * q - (j - 1) * p, k, k >= 2)
        elif kind == "laguerre_l":
            out = _recurrence(1.0 - x, lambda j, q, p: (((2 * j - 2) + (1.0 - x)) * q
                                                        - (j - 1) * p) / j, k, k >= 2)
            out = xp.where(x == 0, 1.0, out)
        elif kind == "legendre_p":
            out = _recurrence(x, lambda j, q, p: ((2 * j - 1) * x * q - (j - 1) * p) / j, k,
                              (k >= 2) & (xp.abs(x) != 1.0))
            edge = xp.where((x > 0) | (xp.fmod(k, 2.0) == 0), 1.0, -1.0)
            out = xp.where(xp.abs(x) == 1.0, edge, out)
        else:
            raise ValueError(f"unknown polynomial {kind!r}")
    return xp.where(k < 0, 0.0, out)
