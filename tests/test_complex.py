"""Complex dtypes against torch: creation, names, promotion, printing, views, arithmetic,
gradients (torch's conjugate-Wirtinger convention) and forward-mode tangents."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the oracle: these tests compare with torch

import ember

RNG = np.random.default_rng(0)


def _c(*shape) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _np(t) -> np.ndarray:
    return t.detach().resolve_conj().numpy()


def _tol(dtype: str) -> float:
    return 1e-4 if dtype == "complex64" else 1e-10


# ------------------------------------------------------------------ dtypes, names, creation


def test_dtype_names_and_pairs():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert repr(ember.complex64) == "torch.complex64"
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point
    assert ember.float32.to_complex() is ember.complex64
    assert ember.float64.to_complex() is ember.complex128
    assert ember.complex128.to_real() is ember.float64


def test_creation_matches_torch():
    for m in (torch, ember):
        assert m.tensor([1 + 2j]).dtype == m.complex64
        assert m.tensor([1 + 2j], dtype=m.cdouble).dtype == m.complex128
        assert m.tensor(np.array([1 + 2j])).dtype == m.complex128
        assert m.randn(3, dtype=m.cfloat).dtype == m.complex64
        assert m.zeros(2, dtype=m.cdouble).is_complex()
    z = ember.complex(ember.tensor([1.0, 2.0]), ember.tensor([3.0, -4.0]))
    assert z.tolist() == [1 + 3j, 2 - 4j]
    p = ember.polar(ember.tensor([2.0]), ember.tensor([0.5]))
    assert np.allclose(p.numpy(), torch.polar(torch.tensor([2.0]), torch.tensor([0.5])).numpy())
    assert ember.tensor(1 - 2j).item() == 1 - 2j
    assert isinstance(ember.tensor([1j]).sum().item(), complex)


def test_randn_complex_has_unit_variance():
    z = ember.randn(20000, dtype=ember.cdouble)
    assert abs((z.abs() ** 2).mean().item() - 1) < 0.05
    assert abs(z.real.var().item() - 0.5) < 0.05


def test_numpy_round_trip_shares_memory():
    a = np.array([1 + 1j, 2 - 2j], dtype=np.complex64)
    t = ember.from_numpy(a)
    assert t.dtype == ember.complex64
    a[0] = 5j
    assert t[0].item() == 5j and t.numpy() is a


@pytest.mark.parametrize("make", [
    lambda m: (m.ones(2), 1j), lambda m: (m.ones(2, dtype=m.float64), 1j),
    lambda m: (m.ones(2), m.ones(2, dtype=m.cfloat)),
    lambda m: (m.ones(2, dtype=m.float64), m.ones(2, dtype=m.cfloat)),
    lambda m: (m.ones(2, dtype=m.float64), m.tensor(1j)),
    lambda m: (m.ones(2, dtype=m.int64), 2j), lambda m: (m.tensor(1.0), m.ones(2, dtype=m.cfloat)),
    lambda m: (m.ones(2, dtype=m.cfloat), m.ones(2, dtype=m.cdouble)),
    lambda m: (m.tensor(1j), m.ones(2, dtype=m.float64)), lambda m: (m.ones(2, dtype=m.half), 1j),
])
def test_result_type_table(make):
    te, ee = make(torch), make(ember)
    expected = torch.result_type(*te)
    if expected == torch.complex32:  # ember has no complex32: float16 pairs with complex64
        expected = torch.complex64
    assert repr(ember.result_type(*ee)) == repr(expected)
    if te[0].dtype != torch.half:
        assert repr((ee[0] + ee[1]).dtype) == repr((te[0] + te[1]).dtype)


def test_promote_types():
    for a, b in [("float32", "complex64"), ("float64", "complex64"), ("complex64", "complex128"),
                 ("int64", "complex64"), ("bool", "complex128"), ("bfloat16", "complex64")]:
        assert repr(ember.promote_types(getattr(ember, a), getattr(ember, b))) == \
            repr(torch.promote_types(getattr(torch, a), getattr(torch, b)))


# -------------------------------------------------------------------------------- printing


@pytest.mark.parametrize("values", [
    [1 + 2j, 3 - 1j], 1.5 - 2j, [1e-5 + 1j, 100 - 3j], [-0.0 - 0.0j, float("nan") + 1j],
    [[1.25 + 1j, 2 - 3.5j], [0.001 + 0j, 7j]], [1e10 + 1j], 0j, list(np.arange(30) * (1 + 0.5j)),
])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_repr_matches_torch(values, dtype):
    assert repr(ember.tensor(values, dtype=getattr(ember, dtype))) == \
        repr(torch.tensor(values, dtype=getattr(torch, dtype)))


def test_repr_with_grad_fn():
    e = ember.tensor([1 + 2j], requires_grad=True)
    t = torch.tensor([1 + 2j], requires_grad=True)
    assert repr(e) == repr(t) and repr(e * 2) == repr(t * 2)


# --------------------------------------------------------------------------- views, conj


def test_real_imag_are_writable_views():
    for m in (torch, ember):
        z = m.tensor([1 + 2j, 3 - 4j])
        z.real[0] = 10.0
        z.imag.mul_(2)
        assert z.tolist() == [10 + 4j, 3 - 8j]
        assert m.view_as_real(z).tolist() == [[10.0, 4.0], [3.0, -8.0]]
        r = m.view_as_real(z)
        r[1, 0] = -1.0
        assert z[1].item() == -1 - 8j
        c = m.view_as_complex(m.tensor([[1.0, 2.0], [3.0, 4.0]]))
        assert c.tolist() == [1 + 2j, 3 + 4j]
        x = m.ones(2)
        assert x.real is x


def test_conj_is_materialised():
    z = ember.tensor([1 + 2j])
    c = z.conj()
    assert c.item() == 1 - 2j and not c.is_conj() and c.resolve_conj() is c
    assert ember.conj_physical(z).item() == 1 - 2j
    x = ember.ones(2)
    assert x.conj() is x


def test_view_errors_match_torch():
    for fn in (lambda m: m.view_as_complex(m.ones(3, 3)),
               lambda m: m.view_as_complex(m.ones(2, 4)[:, ::2]),
               lambda m: m.view_as_real(m.ones(2)),
               lambda m: m.ones(2).imag):
        with pytest.raises(RuntimeError) as te:
            fn(torch)
        with pytest.raises(RuntimeError) as ee:
            fn(ember)
        assert str(ee.value).split(".")[0] in str(te.value)


# ---------------------------------------------------------------------- values and gradients

FNS = {
    "add": lambda m, a, b: a + b * 2, "sub": lambda m, a, b: a - b, "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b, "pow": lambda m, a, b: a ** 3 + b ** 0.5,
    "exp": lambda m, a, b: m.exp(a) * b, "log_sqrt": lambda m, a, b: m.log(a) + m.sqrt(b),
    "sin_cos": lambda m, a, b: m.sin(a) * m.cos(b), "tanh": lambda m, a, b: m.tanh(a) - b,
    "neg": lambda m, a, b: -a * b, "abs": lambda m, a, b: m.abs(a) * b,
    "angle": lambda m, a, b: m.angle(a) * b, "real_imag": lambda m, a, b: a.real * b + a.imag,
    "conj": lambda m, a, b: a.conj() * b, "conj_physical": lambda m, a, b: m.conj_physical(a) * b,
    "matmul": lambda m, a, b: a @ b, "mm": lambda m, a, b: m.mm(a, b.t()),
    "bmm": lambda m, a, b: m.bmm(a[None], b[None])[0], "mv": lambda m, a, b: m.mv(a, b[0]),
    "sum_mean": lambda m, a, b: a.sum(0) * b + a.mean() + b.mean(1, keepdim=True),
    "view_as_real": lambda m, a, b: m.view_as_complex(m.view_as_real(a * b) * 2),
    "complex": lambda m, a, b: m.complex(a.real, b.imag) * a,
    "polar": lambda m, a, b: m.polar(a.abs(), b.angle()),
    "scalars": lambda m, a, b: (a * (1 + 2j) + 2j) / (1 - 1j) - 3j * b,
    "to_real_parts": lambda m, a, b: a.real * b + a.imag.exp() * (1 + 1j),
    "shapes": lambda m, a, b: a.reshape(9).view(3, 3).transpose(0, 1)[1:, ::2] * b[:2, :2],
    "cat": lambda m, a, b: m.cat([a, b], 0).sum(0),
}


@pytest.mark.parametrize("name", list(FNS))
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_values_and_gradients_match_torch(name, dtype):
    za, zb, g = _c(3, 3), _c(3, 3), _c(3, 3)
    results = []
    for m in (torch, ember):
        a = m.tensor(za.astype(dtype), requires_grad=True)
        b = m.tensor(zb.astype(dtype), requires_grad=True)
        y = FNS[name](m, a, b)
        gy = g.reshape(-1)[:y.numel()].reshape(tuple(y.shape))
        gy = m.tensor(gy if y.is_complex() else gy.real, dtype=y.dtype)
        ga, gb = m.autograd.grad(y, (a, b), gy, allow_unused=True)
        results.append((y, ga, gb))
    for t, e in zip(*results):
        if t is None:
            assert e is None
            continue
        assert repr(e.dtype) == repr(t.dtype)
        np.testing.assert_allclose(_np(e), _np(t), rtol=_tol(dtype), atol=_tol(dtype))


def test_real_input_gets_real_part_of_complex_gradient():
    # torch: a real input's gradient is the real part of the complex one that reaches it
    xs, ws = RNG.standard_normal(4), _c(4)
    results = []
    for m in (torch, ember):
        x = m.tensor(xs, requires_grad=True)
        w = m.tensor(ws, requires_grad=True)
        y = (x * w).exp().sum()
        gx, gw = m.autograd.grad(y, (x, w), m.tensor(0.5 - 1j, dtype=m.complex128))
        results.append((gx, gw))
    (tx, tw), (ex, ew) = results
    assert ex.dtype == ember.float64
    np.testing.assert_allclose(ex.numpy(), tx.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ew.numpy(), _np(tw), rtol=1e-10)


def _finite_difference_grad(f, z: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """dL/dRe(z) + i dL/dIm(z) of a real-valued f, by central differences (torch's convention)."""
    out = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        for unit in (1, 1j):
            zp, zm = z.copy(), z.copy()
            zp[i] += eps * unit
            zm[i] -= eps * unit
            out[i] += unit * (f(zp) - f(zm)) / (2 * eps)
    return out


@pytest.mark.parametrize("name", ["mul", "div", "exp", "log_sqrt", "tanh", "abs", "angle",
                                  "polar", "matmul", "view_as_real"])
def test_gradients_match_finite_differences(name):
    za, zb = _c(3, 3), _c(3, 3)
    wr = _c(3, 3)

    def loss(z):
        y = FNS[name](ember, ember.tensor(z), ember.tensor(zb))
        y = y if y.is_complex() else ember.complex(y, y * 0)
        return float((y * ember.tensor(wr)).real.sum().item())

    a = ember.tensor(za, requires_grad=True)
    y = FNS[name](ember, a, ember.tensor(zb))
    y = y if y.is_complex() else ember.complex(y, y * 0)
    (ga,) = ember.autograd.grad((y * ember.tensor(wr)).real.sum(), a)
    np.testing.assert_allclose(ga.numpy(), _finite_difference_grad(loss, za), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("name", ["mul", "div", "exp", "tanh", "abs", "angle", "real_imag",
                                  "conj", "complex", "view_as_real", "polar", "matmul"])
def test_forward_mode_matches_torch(name):
    za, zb, ta = _c(3, 3), _c(3, 3), _c(3, 3)
    results = []
    for m in (torch, ember):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            a = fw.make_dual(m.tensor(za), m.tensor(ta))
            y = FNS[name](m, a, m.tensor(zb))
            results.append(_np(fw.unpack_dual(y).tangent))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-10, atol=1e-12)


def test_isclose_allclose_and_item():
    a = ember.tensor([1 + 1j, 2 + 2j])
    assert ember.allclose(a, a + 1e-9j)
    assert ember.isclose(a, ember.tensor([1 + 1j, 2 + 3j])).tolist() == [True, False]


def test_ops_not_complex_aware_raise_clearly():
    z = ember.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="sigmoid does not support complex tensors yet in "
                                           "ember"):
        ember.sigmoid(z)
    with pytest.raises(RuntimeError, match="does not support complex tensors yet in ember"):
        ember.cumsum(z, 0)


def test_implicit_grad_needs_real_output():
    z = ember.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (z * 2).sum().backward()
    z.abs().sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [(1 + 1j) / np.sqrt(2)], rtol=1e-6)


@pytest.mark.parametrize("name, kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1}), ("RMSprop", {"lr": 0.01}),
    ("Adagrad", {"lr": 0.1}), ("Adam", {"lr": 0.05, "amsgrad": True, "maximize": True})])
def test_optimizers_update_complex_parameters_like_torch(name, kwargs):
    """torch's optimizers update a complex parameter's real and imaginary parts as independent
    numbers (``view_as_real``); the state stays complex."""
    torch = pytest.importorskip("torch")
    values = np.array([1 + 2j, -0.5 + 0.1j, 3 - 1j])
    res = []
    for m in (ember, torch):
        p = m.nn.Parameter(m.tensor(values, dtype=m.complex64))
        opt = getattr(m.optim, name)([p], **kwargs)
        for _ in range(3):
            opt.zero_grad()
            loss = ((p * p.conj()).real * m.tensor([1.0, 2.0, 3.0])).sum() + (p.real * p.imag).sum()
            loss.backward()
            opt.step()
        res.append((p.detach().numpy().copy(), opt.state_dict()["state"][0]))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-6, atol=1e-6)
    for k, t_v in res[1][1].items():
        e_v = res[0][1][k]
        if isinstance(t_v, torch.Tensor) and t_v.is_complex():
            assert e_v.dtype == ember.complex64 and tuple(e_v.shape) == tuple(t_v.shape), k
            np.testing.assert_allclose(e_v.numpy(), t_v.numpy(), rtol=1e-5, atol=1e-6)
