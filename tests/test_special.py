"""``ember.special`` and the gamma family: precision over wide ranges (against mpmath, SciPy and
torch), torch's special values and dtypes, the gradients torch has and refuses, what SciPy
provides (and the error without it), and the namespace as ``torch.special`` under the alias.

The op table (tests/op_tables/special.py) compares values, nodes and gradients with torch on
ordinary inputs and runs gradcheck and gradgradcheck; this file checks what it cannot.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import requires_torch

import ember

ROOT = Path(__file__).resolve().parent.parent
HAS_SCIPY = importlib.util.find_spec("scipy") is not None
requires_scipy = pytest.mark.skipif(not HAS_SCIPY, reason="SciPy (ember[special]) is absent")
S = ember.special


def _rng(seed: int = 0):
    return np.random.default_rng(seed)


def _e(values, dtype="float64"):
    return ember.tensor(np.asarray(values, dtype=dtype))


def _rel_err(actual, expected):
    """|actual - expected| / |expected|, 0 where both agree exactly (infinities, NaNs too)."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    with np.errstate(all="ignore"):
        err = np.abs(actual - expected) / np.abs(expected)
    err[(actual == expected) | (np.isnan(actual) & np.isnan(expected))] = 0.0
    return err


# --------------------------------------------------------------------------- float64 precision
# against mpmath at 40 digits (torch's oracle is only as good as its float64 kernels)


def _mp():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    return mpmath


def _sample(seed: int, *ranges, n: int = 150) -> np.ndarray:
    rng = _rng(seed)
    parts = []
    for lo, hi in ranges:
        if lo > 0 and hi / lo > 1e3:  # log-uniform over decades
            parts.append(10 ** rng.uniform(np.log10(lo), np.log10(hi), n))
        else:
            parts.append(rng.uniform(lo, hi, n))
    return np.concatenate(parts)


PRECISION = [
    # name, ember function, mpmath reference, ranges, relative tolerance
    ("lgamma", ember.lgamma, lambda m, v: m.log(abs(m.gamma(v))),
     [(1e-8, 0.5), (0.5, 2.5), (2.5, 10), (10, 1e6), (1e6, 1e250), (-0.5, -0.01)], 2e-15),
    ("lgamma_near_zeros_of_x_minus_1_2", ember.lgamma, lambda m, v: m.log(abs(m.gamma(v))),
     [(0.999, 1.001), (1.999, 2.001)], 2e-15),
    ("digamma", ember.digamma, lambda m, v: m.digamma(v),
     [(1e-8, 0.5), (0.5, 2.5), (2.5, 10), (10, 1e6), (1e6, 1e250)], 2e-15),
    ("digamma_near_its_zero", ember.digamma, lambda m, v: m.digamma(v),
     [(1.4615, 1.4617)], 2e-15),
    ("trigamma", lambda t: ember.polygamma(1, t), lambda m, v: m.polygamma(1, v),
     [(1e-3, 1), (1, 30), (30, 1e8), (-9.9, -0.1)], 2e-15),
    ("polygamma_3", lambda t: ember.polygamma(3, t), lambda m, v: m.polygamma(3, v),
     [(1e-2, 1), (1, 30), (30, 1e5)], 2e-15),
    ("erfcx", S.erfcx, lambda m, v: m.exp(m.mpf(v) ** 2) * m.erfc(v),
     [(-26, 0), (0, 1), (1, 2), (2, 30), (30, 1e6)], 5e-15),
    ("log_ndtr", S.log_ndtr, lambda m, v: m.log(m.ncdf(v)) if v < 0 else m.log1p(-m.ncdf(-v)),
     [(-1e5, -40), (-40, -1), (-1, 1), (1, 8), (8, 37)], 5e-15),
    ("ndtr", S.ndtr, lambda m, v: m.ncdf(v), [(-37, -1), (-1, 8)], 5e-15),
    ("i0", S.i0, lambda m, v: m.besseli(0, v), [(-40, 40), (40, 700)], 3e-15),
    ("i0e", S.i0e, lambda m, v: m.besseli(0, v) * m.exp(-abs(m.mpf(v))),
     [(-40, 40), (40, 1e6)], 3e-15),
    ("i1", S.i1, lambda m, v: m.besseli(1, v), [(-40, 40), (40, 700)], 3e-15),
    ("i1e", S.i1e, lambda m, v: m.besseli(1, v) * m.exp(-abs(m.mpf(v))),
     [(-40, 40), (40, 1e6)], 3e-15),
    ("entr", S.entr, lambda m, v: -m.mpf(v) * m.log(v), [(1e-300, 1e-5), (1e-5, 1e5)], 2e-15),
]


@pytest.mark.parametrize("name, fn, ref, ranges, rtol", PRECISION, ids=[p[0] for p in PRECISION])
def test_float64_precision_against_mpmath(name, fn, ref, ranges, rtol):
    m = _mp()
    x = _sample(len(name), *ranges)
    expected = np.array([float(ref(m, float(v))) for v in x])
    err = _rel_err(fn(_e(x)).cpu().numpy(), expected)
    assert err.max() <= rtol, f"{name}: worst {err.max():.2e} at x = {x[err.argmax()]!r}"


def test_lgamma_negative_axis_is_accurate_to_float64_in_absolute_terms():
    """Near lgamma's zeros on the negative axis the reflection formula loses relative, not
    absolute, precision (as any formula through log(pi / sin(pi x)) does)."""
    m = _mp()
    x = _sample(3, (-30, -0.01), n=300)
    expected = np.array([float(m.log(abs(m.gamma(v)))) for v in x])
    err = np.abs(ember.lgamma(_e(x)).cpu().numpy() - expected) / np.maximum(1, np.abs(expected))
    assert err.max() < 4e-15


def test_hurwitz_zeta_precision_against_mpmath():
    m = _mp()
    m.mp.dps = 60
    rng = _rng(7)
    s = rng.uniform(1.05, 12, 200)
    q = np.concatenate([rng.uniform(0.01, 30, 150), -rng.uniform(0.1, 30, 50)])
    s[150:] = np.maximum(np.round(s[150:]), 2)  # a negative q needs an integer s
    expected = np.array([float(m.re(m.zeta(a, b))) for a, b in zip(s, q)])
    actual = S.zeta(_e(s), _e(q)).cpu().numpy()
    assert np.isfinite(actual).all()
    err = np.abs(actual - expected) / np.abs(expected)
    # the negative-q sums cancel where zeta(s, q) crosses 0: compare on the terms' scale there
    scale = np.maximum(np.abs(expected), np.where(q < 0, np.abs(q - np.round(q)) ** -s, 0))
    assert (np.abs(actual - expected) / scale).max() < 1e-14
    assert np.median(err) < 3e-16


# --------------------------------------------------------------------------- against SciPy, wide


@requires_scipy
@pytest.mark.parametrize("name, ours, theirs, lo, hi, rtol", [
    ("lgamma", ember.lgamma, "gammaln", 1e-300, 1e300, 1e-15),
    ("digamma", ember.digamma, "psi", 1e-300, 1e300, 1e-15),
    ("zeta", lambda t: S.zeta(3.5, t), lambda sp, v: sp.zeta(3.5, v), 1e-3, 1e15, 1e-15),
    ("erfcx", S.erfcx, "erfcx", 1e-300, 1e300, 1e-14),
    ("i0e", S.i0e, "i0e", 1e-300, 1e300, 2e-15),
    ("i1e", S.i1e, "i1e", 1e-300, 1e300, 2e-15),
    ("log_ndtr", lambda t: S.log_ndtr(-t), lambda sp, v: sp.log_ndtr(-v), 1e-300, 1e150, 1e-14),
])
def test_matches_scipy_over_all_magnitudes(name, ours, theirs, lo, hi, rtol):
    import scipy.special as sp
    x = 10 ** _rng(1).uniform(np.log10(lo), np.log10(hi), 3000)
    expected = getattr(sp, theirs)(x) if isinstance(theirs, str) else theirs(sp, x)
    err = _rel_err(ours(_e(x)).cpu().numpy(), expected)
    assert err.max() <= rtol, f"{name}: worst {err.max():.2e} at x = {x[err.argmax()]!r}"


@requires_scipy
def test_polygamma_matches_scipy_for_many_orders():
    import scipy.special as sp
    x = np.concatenate([_rng(2).uniform(0.05, 40, 400), 10 ** _rng(3).uniform(2, 12, 100)])
    for n in range(12):
        err = _rel_err(ember.polygamma(n, _e(x)).cpu().numpy(), sp.polygamma(n, x))
        assert err.max() < 2e-14, f"polygamma({n}): worst {err.max():.2e}"


@requires_scipy
def test_ndtri_inverts_ndtr_and_log_ndtr():
    p = np.concatenate([10 ** _rng(4).uniform(-300, -1, 200), _rng(5).uniform(0.01, 0.99, 200)])
    x = S.ndtri(_e(p))
    # (ndtr's condition number is ~x**2: 1e3 at p = 1e-300; SciPy's ndtri is good to ~10 ulp)
    rtol = 1e-14 * (4 + x.cpu().numpy() ** 2)
    assert (_rel_err(S.ndtr(x).cpu().numpy(), p) <= rtol).all()
    assert (_rel_err(S.log_ndtr(x).cpu().numpy(), np.log(p)) <= rtol).all()


# --------------------------------------------------------------------------- torch's values


# torch computes float32 in float32 (ember in float64, rounded once): where torch's float32
# loses bits, the comparison allows for it
_TORCH_FLOAT32 = {"digamma": {"rtol": 2e-6, "atol": 1e-6},  # next to its zeros
                  "special.erfcx": {"rtol": 2e-5},  # exp(x * x) for x < 0
                  "special.log_ndtr": {"rtol": 2e-5, "atol": 1e-40},  # its right tail
                  "special.ndtr": {"rtol": 2e-5, "atol": 2e-7}}  # 1 + erf(x): 0 below -5.4
_TORCH_FLOAT64_ATOL = {"special.ndtr": 2e-16,  # torch's is 1 + erf: a few 1e-17 off
                       "special.log_ndtr": 1e-300}  # (subnormal results)


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["lgamma", "digamma", "i0", "special.i0e", "special.i1",
                                  "special.i1e", "special.erfcx", "special.log_ndtr",
                                  "special.entr", "special.ndtr"])
def test_wide_ranges_match_torch(name, dtype, torch):
    rng = _rng(9)
    x = np.concatenate([rng.uniform(-60, 60, 2000), 10 ** rng.uniform(-30, 30, 500),
                        -(10 ** rng.uniform(-30, 30, 500))]).astype(dtype)
    if name in ("lgamma", "digamma"):  # off the poles, where the next float is another world
        x = x[np.abs(x - np.round(x)) > 1e-3]
    if name in ("i0", "special.i1") and dtype == "float32":
        x = x[np.abs(x) < 85]  # torch's float32 exp(x) overflows first (i0(91) is 1.7e38)

    def call(m, t):
        return (getattr(m.special, name[8:]) if name.startswith("special.") else
                getattr(m, name))(t)

    with np.errstate(all="ignore"):
        expected = call(torch, torch.from_numpy(x)).cpu().numpy()
    actual = call(ember, ember.from_numpy(x)).cpu().numpy()
    assert actual.dtype == expected.dtype
    if dtype == "float32":
        tol = _TORCH_FLOAT32.get(name, {"rtol": 2e-6})
    else:
        tol = {"rtol": 1e-12, "atol": _TORCH_FLOAT64_ATOL.get(name, 0)}
    np.testing.assert_allclose(actual, expected, equal_nan=True, **tol)


@requires_torch
def test_special_values_match_torch(torch):
    inf, nan = np.inf, np.nan
    x = np.array([0.0, -0.0, -1.0, -2.0, -1e20, inf, -inf, nan, 1e-300, 1e300, 1e-310])
    for op in (lambda m, t: m.lgamma(t), lambda m, t: m.digamma(t),
               lambda m, t: m.polygamma(2, t), lambda m, t: m.polygamma(5, t),
               lambda m, t: m.special.erfcx(t), lambda m, t: m.special.log_ndtr(t),
               lambda m, t: m.special.entr(t), lambda m, t: m.special.i0e(t),
               lambda m, t: m.special.i1e(t), lambda m, t: m.special.i1(t),
               lambda m, t: m.i0(t)):
        with np.errstate(all="ignore"):
            expected = op(torch, torch.from_numpy(x)).cpu().numpy()
        np.testing.assert_allclose(op(ember, ember.from_numpy(x)).cpu().numpy(), expected,
                                   rtol=1e-15, atol=0, equal_nan=True)


def test_digamma_signed_zero_and_lgamma_poles():
    np.testing.assert_array_equal(ember.digamma(_e([0.0, -0.0])).cpu().numpy(),
                                  [-np.inf, np.inf])
    poles = _e([0.0, -0.0, -1.0, -7.0, -np.inf, np.inf])
    assert np.isposinf(ember.lgamma(poles).cpu().numpy()).all()


@requires_torch
def test_trigamma_poles_are_inf_where_torch_rounds_to_a_large_number(torch):
    """torch's trigamma reflects with pi**2 / sin(pi x)**2, and sin(pi x) is ~1e-16, not 0, at
    the negative integers: a large finite value. ember gives the pole's inf (as SciPy)."""
    x = np.array([-1.0, -2.0, -5.0])
    assert np.isposinf(ember.polygamma(1, _e(x)).cpu().numpy()).all()
    assert (torch.polygamma(1, torch.from_numpy(x)).cpu().numpy() > 1e30).all()
    # elsewhere they agree, at torch's precision (its trigamma series stops at 1e-10)
    y = _rng(1).uniform(-10, 10, 200)
    np.testing.assert_allclose(ember.polygamma(1, _e(y)).cpu().numpy(),
                               torch.polygamma(1, torch.from_numpy(y)).cpu().numpy(), rtol=1e-8)


@requires_torch
def test_ndtr_keeps_relative_precision_in_the_left_tail(torch):
    """torch's ndtr is (1 + erf(x / sqrt 2)) / 2, 0 below -8.3; ember's 0.5 erfc(-x / sqrt 2)."""
    x = np.array([-10.0, -20.0, -37.0])
    assert (torch.special.ndtr(torch.from_numpy(x)).cpu().numpy() == 0).all()
    m = _mp()
    expected = [float(m.ncdf(v)) for v in x]
    np.testing.assert_allclose(S.ndtr(_e(x)).cpu().numpy(), expected, rtol=1e-13)


@requires_torch
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_and_bool_inputs_give_the_default_float(dtype, torch):
    values = np.array([1, 2, 3, 0]).astype(dtype)
    ops = [lambda m, t: m.lgamma(t), lambda m, t: m.digamma(t), lambda m, t: m.polygamma(1, t),
           lambda m, t: m.i0(t), lambda m, t: m.special.i1e(t), lambda m, t: m.special.erfcx(t),
           lambda m, t: m.special.ndtr(t), lambda m, t: m.special.log_ndtr(t),
           lambda m, t: m.special.entr(t), lambda m, t: m.special.xlog1py(t, t),
           lambda m, t: m.special.zeta(t + 2, t + 1), lambda m, t: m.special.expit(t),
           lambda m, t: m.special.spherical_bessel_j0(t),
           lambda m, t: m.special.hermite_polynomial_h(t, 3)]
    if dtype != "bool":
        ops.append(lambda m, t: m.mvlgamma(t + 2, 2))
    for default in (ember.float32, ember.float64):
        ember.set_default_dtype(default)
        torch.set_default_dtype(getattr(torch, repr(default).removeprefix("torch.")))
        try:
            for op in ops:
                with np.errstate(all="ignore"):
                    t = op(torch, torch.from_numpy(values))
                e = op(ember, ember.from_numpy(values))
                assert repr(e.dtype) == repr(t.dtype)
                np.testing.assert_allclose(e.cpu().numpy(), t.cpu().numpy(), rtol=2e-6,
                                           equal_nan=True)
        finally:
            ember.set_default_dtype(ember.float32)
            torch.set_default_dtype(torch.float32)


@requires_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_inputs_keep_their_dtype(dtype, torch):
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    x = np.array([0.3, 1.5, 2.5, 7.0, -1.5])
    for op in (lambda m, t: m.lgamma(t), lambda m, t: m.digamma(t), lambda m, t: m.i0(t),
               lambda m, t: m.special.i0e(t), lambda m, t: m.special.entr(t.abs())):
        t = op(torch, torch.from_numpy(x).to(getattr(torch, dtype)))
        e = op(ember, ember.from_numpy(x).to(getattr(ember, dtype)))
        assert repr(e.dtype) == repr(t.dtype)
        # (torch's bfloat16 i0e is 2 ulp off at 1.5: a bfloat16 ulp is 2**-8 relative)
        np.testing.assert_allclose(e.float().cpu().numpy(), t.float().cpu().numpy(), rtol=2e-2)


@requires_torch
def test_orthogonal_polynomials_at_high_degree_match_torch(torch):
    x = np.linspace(-1.2, 1.2, 49)
    n = np.arange(0, 40.0)
    X, N = (a.ravel() for a in np.meshgrid(x, n))
    for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                 "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                 "shifted_chebyshev_polynomial_w", "legendre_polynomial_p",
                 "hermite_polynomial_he", "laguerre_polynomial_l"):
        expected = getattr(torch.special, name)(torch.from_numpy(X), torch.from_numpy(N))
        actual = getattr(S, name)(_e(X), _e(N)).cpu().numpy()
        np.testing.assert_allclose(actual, expected.cpu().numpy(), rtol=1e-9, atol=1e-9,
                                   err_msg=name)


def test_orthogonal_polynomials_are_nan_at_nan_and_0_at_negative_degree():
    """(torch returns an uninitialised value at x = NaN; ember NaN.)"""
    x, n = _e([np.nan, np.nan, 0.5, 0.5]), _e([0.0, 5.0, -1.0, np.nan])
    out = S.chebyshev_polynomial_u(x, n).cpu().numpy()
    np.testing.assert_array_equal(out, [1.0, np.nan, 0.0, 0.0])


# --------------------------------------------------------------------------- gradients


@requires_torch
def test_third_derivative_of_lgamma_matches_torch(torch):
    """lgamma -> digamma -> polygamma(1) -> polygamma(2): every derivative is an ember op."""
    x = np.array([0.3, 1.7, 4.5, -2.5])
    grads = []
    for m in (ember, torch):
        t = m.tensor(x, requires_grad=True)
        y = m.lgamma(t).sum()
        out = []
        for _ in range(3):
            (y,) = m.autograd.grad(y, t, create_graph=True)
            out.append(y.detach().cpu().numpy().copy())
            y = y.sum()
        grads.append(out)
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-9)


@requires_torch
def test_bessel_gradients_at_zero_and_far_out_match_torch(torch):
    x = np.array([0.0, -0.0, 1e-20, 3.0, -25.0, 200.0])
    for name in ("i0", "i0e", "i1", "i1e"):
        grads = []
        for m in (ember, torch):
            t = m.tensor(x, requires_grad=True)
            (g,) = m.autograd.grad(getattr(m.special, name)(t).sum(), t)
            grads.append(g.cpu().numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-300, err_msg=name)


@requires_torch
def test_no_derivative_where_torch_has_none(torch):
    """zeta in its first argument, igamma/igammac in theirs: torch's NotImplementedError,
    raised when backward reaches them; the Bessel J/Y/K functions, Ai and the polynomials
    return tensors that do not require grad."""
    s, q = ember.tensor([2.5, 3.0], requires_grad=True), ember.tensor([1.5, 2.0])
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        S.zeta(s, q).sum().backward()
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        S.zeta(s, 2.0).sum().backward()
    x = ember.tensor([0.5, 2.0], requires_grad=True)
    fns = [S.spherical_bessel_j0, S.modified_bessel_i0, S.modified_bessel_i1,
           lambda t: S.legendre_polynomial_p(t, 3), lambda t: S.hermite_polynomial_h(t, x)]
    if HAS_SCIPY:
        fns += [S.bessel_j0, S.bessel_j1, S.bessel_y0, S.bessel_y1, S.modified_bessel_k0,
                S.modified_bessel_k1, S.scaled_modified_bessel_k0, S.scaled_modified_bessel_k1,
                S.airy_ai]
        with pytest.raises(NotImplementedError, match="'igamma: input' is not implemented"):
            ember.igamma(x, x.detach()).sum().backward()
        with pytest.raises(NotImplementedError, match="'igammac: input' is not implemented"):
            S.gammaincc(x, x.detach()).sum().backward()
    for fn in fns:
        out = fn(x)
        assert not out.requires_grad and out.grad_fn is None


def test_zeta_is_differentiable_in_q():
    q = ember.tensor([0.5, 1.5, 7.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: S.zeta(3.0, t), (q,))
    assert ember.autograd.gradgradcheck(lambda t: S.zeta(ember.tensor([2.5, 3.0, 4.0],
                                                                      dtype=ember.float64), t),
                                        (q,))


# --------------------------------------------------------------------------- forms and errors


def test_out_and_inplace_forms():
    x = _e([0.5, 1.5, 2.5])
    out = ember.empty(3, dtype=ember.float64)
    assert ember.lgamma(x, out=out) is out
    np.testing.assert_allclose(out.cpu().numpy(), ember.lgamma(x).cpu().numpy())
    assert S.erfcx(x, out=out) is out
    y = x.clone()
    assert y.polygamma_(2) is y
    np.testing.assert_allclose(y.cpu().numpy(), ember.polygamma(2, x).cpu().numpy())
    for name in ("lgamma_", "digamma_", "i0_"):
        z = x.clone()
        getattr(z, name)()
        np.testing.assert_allclose(z.cpu().numpy(), getattr(ember, name[:-1])(x).cpu().numpy())
    z = x.clone().add_(2).mvlgamma_(3)
    np.testing.assert_allclose(z.cpu().numpy(), ember.mvlgamma(x + 2, 3).cpu().numpy())


@requires_torch
def test_mvlgamma_refusals_match_torch(torch):
    for call in (lambda m: m.tensor([1, 2]).mvlgamma_(2),
                 lambda m: m.mvlgamma(m.tensor([2.5]), 2, out=m.tensor([1, 2]))):
        with pytest.raises(RuntimeError) as t_err:
            call(torch)
        with pytest.raises(RuntimeError) as e_err:
            call(ember)
        assert str(e_err.value) == str(t_err.value)


def test_scipy_backed_functions_name_the_extra_when_scipy_is_absent(monkeypatch):
    for mod in [m for m in sys.modules if m == "scipy" or m.startswith("scipy.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "scipy", None)  # `import scipy` now raises ImportError
    x = _e([0.25, 0.5])
    calls = {"ndtri": lambda: S.ndtri(x), "bessel_j0": lambda: S.bessel_j0(x),
             "bessel_y1": lambda: S.bessel_y1(x), "airy_ai": lambda: S.airy_ai(x),
             "modified_bessel_k0": lambda: S.modified_bessel_k0(x),
             "scaled_modified_bessel_k1": lambda: S.scaled_modified_bessel_k1(x),
             "gammainc": lambda: S.gammainc(x, x), "gammaincc": lambda: ember.igammac(x, x)}
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match=r'pip install "ember\[special\]"') as err:
            call()
        assert f"torch.special.{name}" in str(err.value)
    # what ember computes itself needs no SciPy
    for fn in (ember.lgamma, ember.digamma, S.erfcx, S.log_ndtr, S.i1e, S.ndtr,
               lambda t: S.zeta(2.0, t), lambda t: ember.polygamma(3, t)):
        assert np.isfinite(fn(x).cpu().numpy()).all()


@requires_scipy
def test_scipy_results_stay_on_the_inputs_device():
    x = ember.tensor([0.25, 0.5], dtype=ember.float64, device="strict")
    for fn in (S.ndtri, S.bessel_j0, lambda t: S.gammainc(t, t)):
        out = fn(x)
        assert out.device == x.device and type(out._data) is type(x._data)
    assert ember.lgamma(x).device == x.device


@requires_torch
def test_namespace_covers_torch_special(torch):
    internal = {"Tensor", "torch", "common_args", "multi_dim_common"}
    names = {n for n in dir(torch.special) if not n.startswith("_")} - internal
    missing = sorted(n for n in names if not callable(getattr(S, n, None)))
    assert not missing, f"torch.special functions missing from ember.special: {missing}"
    assert set(S.__all__) == names
    # the re-exports are the torch namespace's own functions, as in torch
    assert S.expit is ember.sigmoid and S.gammaln is ember.lgamma and S.psi is ember.digamma
    assert S.erf is ember.erf and S.xlogy is ember.xlogy and S.i0 is ember.i0


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_ember_loads_neither_the_namespace_nor_scipy():
    out = _run("""
        import sys, ember
        print('ember.special' in sys.modules, 'scipy' in sys.modules)
        ember.special.gammaln(ember.tensor([2.5]))
        print('scipy' in sys.modules)
    """)
    assert out.split() == ["False", "False", "False"]


def test_torch_special_resolves_under_the_alias():
    out = _run("""
        import ember
        ember.alias_torch()
        import torch
        import torch.special
        from torch.special import gammaln, zeta
        x = torch.tensor([0.5, 3.0], requires_grad=True)
        y = torch.special.digamma(x) + gammaln(x) + zeta(2.0, x)
        y.sum().backward()
        print(torch.special is ember.special, type(y.grad_fn).__name__, x.grad is not None)
    """)
    assert out.split() == ["True", "AddBackward0", "True"]
