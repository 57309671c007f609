"""Op-table rows for ember/ops/special.py and the ``torch.special`` namespace: the gamma family
(function, method and in-place forms), the Bessel functions, erfcx and the normal CDF, entr,
xlog1py, zeta, the incomplete gamma functions and the orthogonal polynomials.

Rows of the functions ember takes from SciPy (the ``ember[special]`` extra) are left out when
SciPy is not installed; tests/test_special.py checks the error those functions raise then.
"""

from __future__ import annotations

import importlib.util

import numpy as np
from op_table import F32, FLOAT, NUMERIC, UNARY, OpCase, S, Spec, nc, positive, st, uniform

HAS_SCIPY = importlib.util.find_spec("scipy") is not None

# --------------------------------------------------------------------------- value domains


def off_poles(rng, shape, dtype):
    """Either sign, at least 0.2 from every integer: away from the poles of the gamma family
    (and from 0, where the Bessel rows' i1e has a kink)."""
    if dtype.kind == "f":
        whole = rng.integers(-3, 3, shape)
        return (whole + rng.uniform(0.2, 0.8, shape)).astype(dtype)
    return rng.integers(1, 6, shape).astype(dtype)


def _interval(lo: float, hi: float):
    def domain(rng, shape, dtype):
        if dtype.kind == "f":
            return rng.uniform(lo, hi, shape).astype(dtype)
        return rng.integers(max(int(np.ceil(lo)), 1), int(hi) + 1, shape).astype(dtype)
    domain.__name__ = f"in_{lo}_{hi}"
    return domain


prob = _interval(0.05, 0.95)          # ndtri
wide = _interval(-6.0, 6.0)           # erfcx, log_ndtr, the Bessel functions
orders = _interval(1.5, 4.0)          # zeta's s > 1
above_minus_one = _interval(-0.7, 2.0)  # xlog1py's other

# the tails, the edges and the special values (forward only: torch's values there)
EDGES = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -2.5, 1e-30, 1e-300, 30.0, -30.0,
                  100.0, -100.0, 1e20, -1e20, np.inf, -np.inf, np.nan])


def _fn(name: str):
    return lambda m, *args, **kw: getattr(m, name)(*args, **kw)


def _special(name: str):
    return lambda m, *args, **kw: getattr(m.special, name)(*args, **kw)


def _method(name: str):
    return lambda m, x, *args, **kw: getattr(x, name)(*args, **kw)


def _inplace(name: str):
    return lambda m, x, *args, **kw: getattr(x.clone(), name + "_")(*args, **kw)


# --------------------------------------------------------------------------- the gamma family

OPS: list[OpCase] = []
for _name in ("lgamma", "digamma", "i0"):
    OPS += [
        OpCase(_name, _fn(_name), UNARY, NUMERIC, domain=off_poles),
        OpCase(f"{_name}_method", _method(_name), UNARY[:2], F32, domain=off_poles),
        OpCase(f"{_name}_inplace", _inplace(_name), [S((3, 4)), S(nc(3, 4))],
               ("float32", "int64"), domain=off_poles),
    ]
OPS += [
    OpCase("polygamma", lambda m, x, n: m.polygamma(n, x),
           [S((3, 4), 0), S((3, 4), 1), S(nc(3, 4), 2), S((), 3), S((0, 2), 1),
            S(st(2, 3), 4)], NUMERIC, domain=off_poles),
    OpCase("polygamma_method", lambda m, x, n: x.polygamma(n), [S((3, 4), 1), S((), 2)], F32,
           domain=off_poles),
    OpCase("polygamma_inplace", lambda m, x, n: x.clone().polygamma_(n),
           [S((3, 4), 1), S(nc(3, 4), 0)], ("float32", "int64"), domain=off_poles),
    OpCase("polygamma_keyword", lambda m, x: m.polygamma(n=2, input=x), [S((3,))],
           domain=off_poles),
    OpCase("mvlgamma", lambda m, x, p: m.mvlgamma(x, p),
           [S((3, 4), 1), S(nc(3, 4), 2), S((), 3), S((0, 2), 2), S((2, 3), 5)], NUMERIC,
           domain=_interval(2.6, 5.0)),
    OpCase("mvlgamma_method", lambda m, x: x.mvlgamma(p=2), [S((3, 4))], F32,
           domain=_interval(1.0, 4.0)),
    OpCase("mvlgamma_inplace", lambda m, x: x.clone().mvlgamma_(3), [S((3, 4))],
           ("float32", "int64"), domain=_interval(1.5, 4.0)),
    OpCase("multigammaln", lambda m, x: m.special.multigammaln(x, 3), [S((3, 4))], FLOAT,
           domain=_interval(1.5, 4.0)),
    OpCase("gammaln_psi", lambda m, x: m.special.gammaln(x) * m.special.psi(x),
           UNARY[:3], FLOAT, domain=off_poles),
    OpCase("special_polygamma_digamma", lambda m, x: m.special.polygamma(1, m.special.digamma(x)),
           [S((3, 4))], FLOAT, domain=_interval(2.0, 5.0)),
    # the poles, the zeros of lgamma and digamma, and huge, tiny and non-finite arguments
    # (polygamma(1, .) is left out at the negative integers: torch's reflection gives a
    # large finite number there, ember inf; see tests/test_special.py)
    OpCase("gamma_family_edges", lambda m, x: m.stack([
        m.lgamma(x), m.digamma(x), m.polygamma(2, x), m.polygamma(3, x), m.i0(x)]),
        [S(np.concatenate([EDGES, [1.4616321449683622, -3.0, -2.7476826467, 171.5, 5e-324]]))],
        FLOAT, grad=False),
    OpCase("trigamma_edges", lambda m, x: m.polygamma(1, x),
           [S(np.array([0.0, -0.0, 1e-300, 0.5, -0.5, 1.5, 1e10, np.inf, -np.inf, np.nan]))],
           FLOAT, grad=False),
    OpCase("lgamma_negative", lambda m, x: m.lgamma(x),
           [S(np.array([-0.5, -1.5, -2.25, -3.75, -10.1, -100.5, -1e5 - 0.5]))], FLOAT),
    # refusals, in torch's words
    OpCase("refuse_polygamma_negative_order", lambda m, x: m.polygamma(-1, x), [S((3,))],
           grad=False),
    OpCase("refuse_polygamma_float_order", lambda m, x: m.polygamma(1.0, x), [S((3,))],
           grad=False),
    OpCase("refuse_mvlgamma_p", lambda m, x: m.mvlgamma(x, 0), [S((3,))], grad=False),
    OpCase("refuse_mvlgamma_float_p", lambda m, x: m.mvlgamma(x, 2.0), [S((3,))], grad=False),
    OpCase("refuse_mvlgamma_bool", lambda m, x: m.mvlgamma(x, 2), [S(np.array([True]))],
           grad=False),
    OpCase("refuse_gamma_not_tensor", lambda m, **kw: kw["fn"](m)(1.5),
           [S(fn=lambda m: m.lgamma), S(fn=lambda m: m.digamma), S(fn=lambda m: m.i0),
            S(fn=lambda m: m.special.erfcx), S(fn=lambda m: m.special.i1e),
            S(fn=lambda m: m.special.entr), S(fn=lambda m: m.special.ndtr)], grad=False),
    OpCase("refuse_polygamma_not_tensor", lambda m: m.polygamma(1, 1.5), [S()], grad=False),
]

# --------------------------------------------------------------------------- Bessel I, erfcx, ...

_BESSEL = [S((3, 4)), S(()), S((0, 3)), S(nc(3, 4)), S(st(2, 3)), S((2, 1, 3))]
OPS += [
    # (torch's ndtr is a composite ending in MulBackward1, ember's a primitive: see its NOTE)
    OpCase(f"special_{_name}", _special(_name), _BESSEL, NUMERIC, domain=dom,
           node=_name != "ndtr")
    for _name, dom in [("i0", uniform), ("i0e", off_poles), ("i1", wide), ("i1e", off_poles),
                       ("erfcx", wide), ("log_ndtr", wide), ("ndtr", wide), ("entr", positive),
                       ("expit", uniform), ("erf", uniform), ("erfc", uniform),
                       ("exp2", uniform), ("expm1", uniform), ("log1p", positive),
                       ("sinc", uniform)]
]
OPS += [
    OpCase("special_i0e_i1e_large", lambda m, x: m.stack([m.special.i0e(x), m.special.i1e(x)]),
           [S(np.array([-40.0, -25.0, -19.5, 20.5, 35.0, 300.0]))], FLOAT),
    OpCase("special_i1_at_zero", lambda m, x: m.special.i1(x) + m.special.i1e(x),
           [S(np.array([0.0, 1.0, -2.0]), gradcheck=False)], FLOAT),
    OpCase("special_bessel_i_edges", lambda m, x: m.stack([
        m.special.i0(x), m.special.i0e(x), m.special.i1(x), m.special.i1e(x),
        m.special.modified_bessel_i0(x), m.special.modified_bessel_i1(x),
        m.special.spherical_bessel_j0(x)]),
        [S(np.concatenate([EDGES, [700.0, -700.0, 720.0, 8.0, -8.5]]))], FLOAT, grad=False),
    OpCase("special_erfcx_log_ndtr_edges", lambda m, x: m.stack([
        m.special.erfcx(x), m.special.log_ndtr(x), m.special.ndtr(x), m.special.entr(x)]),
        [S(np.concatenate([EDGES, [-26.5, -27.0, 1e38, -1e38, -38.0, 8.0, 40.0]]))],
        FLOAT, grad=False),
    OpCase("special_ndtr_tails", lambda m, x: m.special.ndtr(x),
           [S(np.array([-8.0, -5.0, -3.0, 0.0, 3.0, 5.0, 8.0]))], FLOAT, node=False),
    OpCase("special_log_ndtr_tails", lambda m, x: m.special.log_ndtr(x),
           [S(np.array([-30.0, -10.0, -1.5, -1.0, -0.5, 3.0, 7.0]))], FLOAT),
    OpCase("special_entr_zero", lambda m, x: m.special.entr(x),
           [S(np.array([0.0, 0.5, 1.0, 2.0, -1.0]), gradcheck=False)], FLOAT),
    OpCase("special_expit_logit", lambda m, x: m.special.logit(m.special.expit(x), eps=1e-6),
           [S((3, 4))], FLOAT),
    OpCase("special_round", lambda m, x, **kw: m.special.round(x, **kw),
           [S((3, 4)), S((3, 4), decimals=1)], FLOAT, domain=wide),
    OpCase("special_softmax", lambda m, x: m.special.softmax(x, 1), [S((3, 4))], FLOAT),
    OpCase("special_log_softmax", lambda m, x: m.special.log_softmax(x, dim=0, dtype=m.float64),
           [S((3, 4))], F32),
    OpCase("special_logsumexp", lambda m, x, **kw: m.special.logsumexp(x, **kw),
           [S((3, 4), dim=1), S((2, 3, 4), dim=(0, 2), keepdim=True)], FLOAT),
    OpCase("special_xlogy", lambda m, x, y: m.special.xlogy(x, y),
           [S((3, 4), Spec((3, 4), domain=positive))], FLOAT),
    OpCase("special_erfinv", lambda m, x: m.special.erfinv(x), [S((3, 4))], FLOAT,
           domain=_interval(-0.9, 0.9)),
    OpCase("refuse_special_softmax_no_dim", lambda m, x: m.special.softmax(x), [S((3,))],
           grad=False),
]

# --------------------------------------------------------------------------- xlog1py, zeta

_Y = Spec((3, 4), domain=above_minus_one)
OPS += [
    OpCase("special_xlog1py", lambda m, x, y: m.special.xlog1py(x, y),
           [S((3, 4), _Y), S((3, 4), Spec((4,), domain=above_minus_one)),
            S((2, 1, 4), Spec((3, 1), domain=above_minus_one)), S((), _Y),
            S(nc(3, 4), _Y), S((0, 3), Spec((3,), domain=above_minus_one))], NUMERIC),
    OpCase("special_xlog1py_scalar_other", lambda m, x, y: m.special.xlog1py(x, y),
           [S((3, 4), 2.5), S((), 3), S(nc(3, 4), -0.5)], NUMERIC),
    OpCase("special_xlog1py_scalar_self", lambda m, x, y: m.special.xlog1py(x, y),
           [S(2.5, _Y), S(-3, Spec((), domain=above_minus_one)), S(0.0, _Y)], NUMERIC),
    OpCase("special_xlog1py_zeros", lambda m, x, y: m.special.xlog1py(x, y),
           [S(np.array([0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 1.0, 0.0]),
              np.array([-1.0, np.nan, -2.0, 2.0, -1.0, np.nan, -2.0, np.inf]),
              gradcheck=False)], FLOAT),
    OpCase("refuse_special_xlog1py_numbers", lambda m: m.special.xlog1py(2, 3.0), [S()],
           grad=False),
    # torch differentiates zeta in q (other) only: its rows ask no gradient of s
    OpCase("special_zeta", lambda m, s, q: m.special.zeta(s, q),
           [S(Spec((3, 4), domain=orders), Spec((3, 4), domain=positive)),
            S(Spec((4,), domain=orders), Spec((3, 4), domain=positive)),
            S(Spec((), domain=orders), nc(3, 4, domain=positive)),
            S(Spec((0, 3), domain=orders), Spec((3,), domain=positive))],
           NUMERIC, grad_args=(1,)),
    OpCase("special_zeta_scalar_self", lambda m, s, q: m.special.zeta(s, q),
           [S(2.5, Spec((3, 4), domain=positive)), S(3, Spec((), domain=positive))], NUMERIC),
    OpCase("special_zeta_scalar_other", lambda m, s, q: m.special.zeta(s, q),
           [S(Spec((3, 4), domain=orders), 2.5), S(Spec((3,), domain=orders), 1)], NUMERIC,
           grad=False),
    OpCase("special_zeta_edges", lambda m, s, q: m.special.zeta(s, q),
           [S(np.array([1.0, 0.5, 2.0, 2.0, 2.0, 3.0, 2.5, 2.0, np.inf, 2.0, np.nan, 4.0, 2.0,
                        30.0, 1.5]),
              np.array([1.0, 1.0, 0.0, -1.0, -1.5, -1.5, -1.5, np.inf, 2.0, -np.inf, 1.0,
                        -7.25, 1e-300, 0.5, 1e10]))], FLOAT, grad=False),
    OpCase("refuse_special_zeta_numbers", lambda m: m.special.zeta(2.0, 3.0), [S()],
           grad=False),
]

# --------------------------------------------------------------------------- orthogonal polynomials

_POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
# every degree from -1 to 14 at the ends of the intervals and inside and outside them (x = NaN
# is left out: torch returns an uninitialised value there, ember NaN)
_PX, _PN = np.meshgrid(np.array([-1.5, -1.0, -0.75, -0.2, 0.0, 0.3, 0.5, 0.9, 1.0, 2.0, np.inf]),
                       np.arange(-1.0, 15.0))
OPS += [
    OpCase(f"special_{_name}", _special(_name),
           [S(_PX.ravel(), _PN.ravel()), S((3, 4), 3), S(0.5, np.array([0, 1, 2, 7, 12])),
            S((2, 3), np.array([[2], [9]])), S((3,), 4.7)],
           ("float32", "float64"), grad=False)
    for _name in _POLYNOMIALS
]
OPS += [
    OpCase("special_polynomial_integer_inputs",
           lambda m, x, n: m.special.legendre_polynomial_p(x, n),
           [S(np.array([-2, 0, 1, 3]), np.array([0, 1, 2, 3]))], grad=False),
    OpCase("refuse_special_polynomial_numbers",
           lambda m: m.special.chebyshev_polynomial_t(0.5, 3), [S()], grad=False),
]

# --------------------------------------------------------------------------- through SciPy

# (these refusals need no SciPy: igamma and igammac keep a row without it)
OPS += [
    OpCase("refuse_igamma_integers", lambda m, a, x: m.igamma(a, x),
           [S((3,), (3,))], ("int64",), grad=False, domain=positive),
    OpCase("refuse_igammac_integers", lambda m, a, x: m.igammac(a, x),
           [S((3,), (3,)), S(np.array([True]), np.array([False]))], ("int64",), grad=False,
           domain=positive),
]

if HAS_SCIPY:
    OPS += [
        OpCase("special_ndtri", _special("ndtri"), _BESSEL, FLOAT, domain=prob),
        OpCase("special_ndtri_edges", _special("ndtri"),
               [S(np.array([0.0, -0.0, 1.0, 0.5, 1e-300, 1 - 1e-16, 2.0, -1.0, np.nan]))],
               FLOAT, grad=False),
        OpCase("igamma", lambda m, a, x: m.igamma(a, x),
               [S(Spec((3, 4), domain=positive), Spec((3, 4), domain=positive)),
                S(Spec((4,), domain=positive), Spec((3, 4), domain=positive))],
               FLOAT, grad_args=(1,)),
        OpCase("igammac", lambda m, a, x: m.igammac(a, x),
               [S(Spec((3, 4), domain=positive), Spec((3, 4), domain=positive))], FLOAT,
               grad_args=(1,)),
        OpCase("igamma_method", lambda m, a, x: a.igamma(x), [S((3, 4), (3, 4))], F32,
               domain=positive, grad_args=(1,)),
        OpCase("igammac_method", lambda m, a, x: a.igammac(x), [S((3, 4), (3, 4))], F32,
               domain=positive, grad_args=(1,)),
        OpCase("igamma_inplace", lambda m, a, x: a.clone().igamma_(x), [S((3, 4), (4,))], F32,
               domain=positive, grad=False),
        OpCase("igammac_inplace", lambda m, a, x: a.clone().igammac_(x), [S((3, 4), (4,))],
               F32, domain=positive, grad=False),
        OpCase("special_gammainc", lambda m, a, x: m.special.gammainc(a, x),
               [S((3, 4), (3, 4)), S(np.array([0.5, 1.5, 2.0, 3.0]),
                                     np.array([0.0, 1.0, 2.0, 50.0]), gradcheck=False)],
               FLOAT,
               domain=positive, grad_args=(1,)),
        OpCase("special_gammaincc", lambda m, a, x: m.special.gammaincc(a, x),
               [S((3, 4), (3, 4))], FLOAT, domain=positive, grad_args=(1,)),
        OpCase("refuse_special_gammainc_number", lambda m, a: m.special.gammainc(a, 2.0),
               [S((3,))], grad=False),
    ]
    # (torch's float64 J0, J1 and Ai are off by up to 4e-7 past |x| = 5, and Ai below -2)
    for _name, dom in [("bessel_j0", _interval(-4.5, 4.5)), ("bessel_j1", _interval(-4.5, 4.5)),
                       ("bessel_y0", positive),
                       ("bessel_y1", positive), ("modified_bessel_k0", positive),
                       ("modified_bessel_k1", positive), ("scaled_modified_bessel_k0", positive),
                       ("scaled_modified_bessel_k1", positive),
                       ("airy_ai", _interval(-1.9, 6.0)),
                       ("modified_bessel_i0", wide), ("modified_bessel_i1", wide),
                       ("spherical_bessel_j0", wide)]:
        OPS.append(OpCase(f"special_{_name}", _special(_name), _BESSEL, NUMERIC, domain=dom,
                          grad=False))
    OPS.append(OpCase("special_scipy_edges", lambda m, x: m.stack([
        m.special.bessel_j0(x), m.special.bessel_j1(x), m.special.bessel_y0(x),
        m.special.bessel_y1(x), m.special.modified_bessel_k0(x), m.special.modified_bessel_k1(x),
        m.special.scaled_modified_bessel_k0(x), m.special.scaled_modified_bessel_k1(x),
        m.special.airy_ai(x)]),
        [S(np.array([0.0, -0.0, 1e-300, 0.5, -0.5, 1.0, -1.0, 4.0, -4.0, 30.0, 700.0, 800.0,
                     np.inf, -np.inf, np.nan]))], FLOAT, grad=False))
