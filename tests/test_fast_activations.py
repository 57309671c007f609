"""The fast kernels of erf/erfc, GELU, SiLU and the sigmoid family, and softmax: erf and erfc in
float64 against the C library to a few ulp over the whole range (tails down to underflow,
signed zeros, infinities, NaN); float32 erf/erfc, and values and gradients of the activations
in float32 and float64, against torch on large tensors that hold extreme values."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F


def _ulps(got, want):
    """|got - want| in units of the spacing of float64 at ``want`` (5e-324 below the normals)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    spacing = np.spacing(np.abs(want))
    return np.where(got == want, 0.0, np.abs(got - want) / spacing)


_RNG = np.random.default_rng(1234)
_DENSE = np.concatenate([
    np.linspace(-7, 7, 140001),                      # through every region boundary
    np.linspace(-27.5, 27.5, 55001),                 # erfc's tail, down to underflow at 26.55
    np.linspace(26.0, 26.7, 7001),                   # subnormal erfc
    _RNG.uniform(-6, 6, 50000),
    np.nextafter([0.5, 2.0, -0.5, -2.0], 0), np.nextafter([0.5, 2.0, -0.5, -2.0], 9),
    np.geomspace(1e-300, 0.5, 4000), -np.geomspace(1e-300, 0.5, 4000),
    [5e-324, -5e-324, 1e-310, 0.49999999999999994, 0.5, 1.9999999999999998, 2.0],
])


@pytest.mark.parametrize("name, reference, bound", [("erf", math.erf, 2), ("erfc", math.erfc, 6)])
def test_erf_erfc_float64_ulps_from_the_c_library(name, reference, bound):
    """float64 erf/erfc within a few ulp of math.erf/math.erfc (themselves within ~1 ulp):
    erfc relative to its own size however small it gets."""
    got = getattr(ember, name)(ember.tensor(_DENSE)).numpy()
    want = np.array([reference(v) for v in _DENSE])
    ulps = _ulps(got, want)
    worst = int(np.argmax(ulps))
    assert ulps.max() <= bound, f"{name}({_DENSE[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"
    assert ulps.mean() < 0.5


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_erf_erfc_special_values(name):
    xs = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0, 1e300, -1e300])
    got = getattr(ember, name)(ember.tensor(xs)).numpy()
    want = np.array([getattr(math, name)(v) for v in xs])
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got[:2]), np.signbit(want[:2]))  # erf(-0) is -0


def test_erf_erfc_keep_shape_and_layout():
    x = np.linspace(-4, 4, 24).reshape(2, 3, 4).transpose(2, 0, 1)  # not contiguous
    for name in ("erf", "erfc"):
        got = getattr(ember, name)(ember.tensor(x)).numpy()
        assert got.shape == x.shape
        assert _ulps(got, np.vectorize(getattr(math, name))(x)).max() <= 2
        scalar = getattr(ember, name)(ember.tensor(0.75, dtype=ember.float64)).numpy()
        assert scalar.shape == () and float(_ulps(scalar, getattr(math, name)(0.75))) <= 2


def _float32_grid():
    return np.concatenate([np.linspace(-11, 11, 400001), np.geomspace(1e-30, 4, 2000),
                           -np.geomspace(1e-30, 4, 2000)]).astype(np.float32)


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_erf_erfc_float32_match_torch(torch, name):
    """float32 within one rounding of torch's (its erf and erfc are within ~1 ulp of exact):
    erfc relative to its size down to float32's subnormals."""
    xs = _float32_grid()
    got = getattr(ember, name)(ember.tensor(xs)).numpy().astype(np.float64)
    want = getattr(torch, name)(torch.tensor(xs)).numpy().astype(np.float64)
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert (np.abs(got - want) / spacing).max() <= 2


def _extreme(dtype, shape=(64, 1030)):
    """A large tensor of N(0, 9) values with extremes spread through it."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape) * 3
    special = [0.0, -0.0, 30.0, -30.0, 1e4, -1e4, 5.65, -5.65, 5.66, -5.66, 88.0, -88.0,
               np.inf, -np.inf, np.nan]
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, len(special) * 20, replace=False)] = np.repeat(special, 20)
    return x.astype(dtype)


def _compare(torch, fn_e, fn_t, x, rtol, atol):
    """Values and gradients (for a random upstream gradient) of ember and torch; ember quiet
    about the infinities and NaNs in x, as torch."""
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yt = fn_t(t)
    g = np.random.default_rng(3).standard_normal(tuple(yt.shape)).astype(x.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ye = fn_e(e)
        ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg="values")
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg="gradients")


# float64: 1e-13 absolute where a derivative cancels to ~0 (gelu's tanh form far left)
_TOL = {"float32": (2e-6, 1e-6), "float64": (1e-12, 1e-13)}
_ACTIVATIONS = [
    ("gelu", lambda F: F.gelu),
    ("gelu_tanh", lambda F: lambda x: F.gelu(x, approximate="tanh")),
    ("silu", lambda F: F.silu),
    ("mish", lambda F: F.mish),
    ("softplus", lambda F: F.softplus),
    ("softplus_beta", lambda F: lambda x: F.softplus(x, beta=2.0, threshold=5.0)),
    ("logsigmoid", lambda F: F.logsigmoid),
    ("elu", lambda F: F.elu),
    ("selu", lambda F: F.selu),
    ("celu", lambda F: lambda x: F.celu(x, 0.5)),
    ("hardswish", lambda F: F.hardswish),
    ("hardsigmoid", lambda F: F.hardsigmoid),
    ("glu", lambda F: F.glu),
    ("sigmoid", lambda F: lambda x: x.sigmoid()),
    ("leaky_relu", lambda F: lambda x: F.leaky_relu(x, 0.1)),
    ("rrelu_eval", lambda F: F.rrelu),
    ("threshold", lambda F: lambda x: F.threshold(x, 0.5, -2.0)),
    ("hardtanh", lambda F: F.hardtanh),
    ("relu6", lambda F: F.relu6),
    ("hardshrink", lambda F: F.hardshrink),
    ("softshrink", lambda F: F.softshrink),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, make", _ACTIVATIONS, ids=[a[0] for a in _ACTIVATIONS])
def test_activation_matches_torch_on_extremes(torch, name, make, dtype):
    rtol, atol = _TOL[dtype]
    x = _extreme(dtype)
    if name == "gelu" and dtype == "float32":
        x[x == np.inf] = 1e30  # torch's float32 kernel gives nan at +inf (its float64 inf)
        # where 1 + erf(x / sqrt 2) cancels, torch's value is up to 3.4e-7 |x| from the exact
        # one, ember's 1.7e-7 |x| (test_gelu_float32_within_the_rounding_of_its_formula);
        # gradients alike, times the upstream gradient
        atol = 4e-6
    if name == "gelu_tanh" and dtype == "float32":
        # where tanh(inner) rounds to -1 NumPy's float32 tanh can be 1 ulp short of it, which
        # x (1 - t^2) d inner/dx scales to ~1e-6 (torch: 0; exact: ~3e-7), times the upstream
        # gradient
        atol = 4e-6
    if name == "hardswish":
        x[np.isnan(x)] = 0.5  # torch's gradient at nan is nan, ember's 0 (as at x <= -3)
    if name == "hardsigmoid" and dtype == "float64":
        rtol = 1e-7  # torch's float64 gradient is grad * float32(1/6)
    _compare(torch, make(F), make(torch.nn.functional), x, rtol, atol)


def test_gelu_float64_is_x_times_the_normal_cdf():
    """x * erfc(-x sqrt(1/2)) / 2 to a few ulp (math.erfc on the same rounded argument), also
    in the left tail, where torch's 1 + erf(x sqrt(1/2)) cancels to 0 below x = -8.3."""
    xs = np.concatenate([np.linspace(-38, 12, 50001), [0.0, -0.0]])
    got = F.gelu(ember.tensor(xs)).numpy()
    want = np.array([v * (0.5 * math.erfc(v * -math.sqrt(0.5))) for v in xs])
    # erfc within 6 ulp, and the product; where Phi is subnormal, its precision times |x|
    ok = (_ulps(got, want) <= 7) | (np.abs(got - want) <= 16 * 38 * 5e-324)
    assert ok.all(), xs[~ok]
    assert got[xs < -30].max() < 0  # not flushed to 0


def test_gelu_float32_within_the_rounding_of_its_formula(torch):
    """float32 x * Phi(x) against the exact value: where 0.5 (1 + erf) cancels, the error is
    that of Phi at the scale of 1/2 (a few 3e-8) times |x| (torch's own: up to 3.4e-7 |x|);
    above, ~1e-7."""
    xs = np.linspace(-12, 12, 240001).astype(np.float32)
    got = F.gelu(ember.tensor(xs)).numpy().astype(np.float64)
    want = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in xs.astype(np.float64)])
    err = np.abs(got - want)
    assert (err <= 2e-7 * np.abs(xs) + 2.5e-7 * np.abs(want)).all()
    torch_err = np.abs(torch.nn.functional.gelu(torch.tensor(xs)).numpy() - want)
    assert err.max() <= 2 * torch_err.max()


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_double_backward_matches_torch(torch, approximate):
    x = np.random.default_rng(5).standard_normal((40, 7)) * 3
    def second(m):
        t = m.tensor(x, requires_grad=True)
        (g,) = m.autograd.grad(m.nn.functional.gelu(t, approximate=approximate).sum(), t,
                               create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), t)
        return g.detach().numpy(), gg.numpy()
    for e, t in zip(second(ember), second(torch)):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-13)


def test_gelu_double_backward_node_is_torchs():
    t = ember.tensor(np.linspace(-2, 2, 5), requires_grad=True)
    (g,) = ember.autograd.grad(F.gelu(t).sum(), t, create_graph=True)
    assert type(g.grad_fn).__name__ == "GeluBackwardBackward0"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_matches_torch_on_extremes(torch, dtype, log, dim):
    x = _extreme(dtype, (96, 257))
    x[np.isnan(x)] = 0.0
    x[np.isinf(x)] = 50.0
    x[:, 3] = -1e4  # a column far below the rest
    x[5] = 1e4      # a row of equal large values
    name = "log_softmax" if log else "softmax"
    rtol, atol = _TOL[dtype]
    _compare(torch, lambda v: getattr(F, name)(v, dim),
             lambda v: getattr(torch.nn.functional, name)(v, dim), x, rtol, atol)


def test_sigmoid_family_saturate_without_overflow_warnings():
    x = ember.tensor(np.array([-1e4, -100.0, 100.0, 1e4], np.float32), requires_grad=True)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for f in (F.silu, F.mish, F.softplus, F.logsigmoid, F.elu, F.glu):
            y = f(x)
            y.sum().backward()


def test_gelu_float32_saturates_exactly(torch):
    """Past the end of the float32 fit Phi is exactly 0 or 1, as torch's 1 + erf rounds."""
    x = np.array([-1e4, -30.0, -5.7, 5.7, 30.0, 1e4, 3e38], np.float32)
    e = ember.tensor(x, requires_grad=True)
    y = F.gelu(e)
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), np.where(x > 0, x, 0.0))
    far = np.abs(x) > 10  # (at 5.7, x * phi(x) is still 2e-7)
    np.testing.assert_array_equal(e.grad.numpy()[far], np.where(x > 0, 1.0, 0.0)[far])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name, make", _ACTIVATIONS, ids=[a[0] for a in _ACTIVATIONS])
def test_activation_keeps_low_precision_dtypes(torch, name, make, dtype):
    x = np.linspace(-8, 8, 64)
    e = ember.tensor(x, dtype=getattr(ember, dtype), requires_grad=True)
    t = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    ye, yt = make(F)(e), make(torch.nn.functional)(t)
    ye.sum().backward()
    yt.sum().backward()
    assert ye.dtype == e.dtype and e.grad.dtype == e.dtype
    # (torch computes these in float32 and rounds once; ember mostly in the dtype itself)
    np.testing.assert_allclose(ye.detach().float().numpy(), yt.detach().float().numpy(),
                               rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(e.grad.float().numpy(), t.grad.float().numpy(), rtol=2e-2,
                               atol=2e-2)
