"""Pointwise ops beyond the op table: nodes torch records as not differentiable, ``out=``,
in-place operators, and the accuracy of the NumPy-only erf family."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember


def _pair(torch, values, requires_grad=True, dtype="float64"):
    arr = np.asarray(values, dtype=dtype)
    return (ember.tensor(arr, requires_grad=requires_grad),
            torch.tensor(arr, requires_grad=requires_grad))


def _backward_error(fn, x):
    with pytest.raises((RuntimeError, NotImplementedError)) as err:
        fn(x).sum().backward()
    return err.type, str(err.value)


@pytest.mark.parametrize("name, fn", [
    ("heaviside", lambda m, x: m.heaviside(x, x)),
    ("scalar % tensor", lambda m, x: 2.5 % x),
    ("remainder(scalar, tensor)", lambda m, x: m.remainder(3, x)),
    ("asinh_", lambda m, x: x.clone().asinh_()),
    ("arcsinh_", lambda m, x: x.clone().arcsinh_()),
    ("acosh_", lambda m, x: (x + 2).acosh_()),
    ("arccosh_", lambda m, x: (x + 2).arccosh_()),
    ("atanh_", lambda m, x: (x * 0.1).atanh_()),
    ("arctanh_", lambda m, x: (x * 0.1).arctanh_()),
])
def test_not_differentiable_nodes_match_torch(name, fn, torch):
    """torch records these with a node whose backward refuses; ember records the same."""
    e, t = _pair(torch, [0.5, -1.5, 2.0, 0.0])
    e_out, t_out = fn(ember, e), fn(torch, t)
    assert e_out.requires_grad and t_out.requires_grad
    assert type(e_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    np.testing.assert_allclose(e_out.detach().cpu().numpy(), t_out.detach().cpu().numpy(), rtol=1e-12)
    assert _backward_error(lambda x: fn(ember, x), e) == \
        _backward_error(lambda x: fn(torch, x), t)


def test_positive_returns_its_input(torch):
    x, t = ember.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    assert ember.positive(x) is x and x.positive() is x
    assert torch.positive(t) is t


@pytest.mark.parametrize("fn", [
    lambda m, x, y, out: m.erf(x, out=out),
    lambda m, x, y, out: m.atan2(x, y, out=out),
    lambda m, x, y, out: m.remainder(x, y, out=out),
    lambda m, x, y, out: m.lerp(x, y, 0.25, out=out),
    lambda m, x, y, out: m.addcmul(x, x, y, value=2, out=out),
    lambda m, x, y, out: m.round(x, decimals=1, out=out),
])
def test_out_argument(fn, torch):
    rng = np.random.default_rng(0)
    xs, ys = rng.uniform(-2, 2, (3, 4)), rng.uniform(0.5, 2, (3, 4))
    e_out, t_out = ember.empty(0, dtype=ember.float64), torch.empty(0, dtype=torch.float64)
    e_res = fn(ember, ember.tensor(xs), ember.tensor(ys), e_out)
    fn(torch, torch.tensor(xs), torch.tensor(ys), t_out)
    assert e_res is e_out and tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(e_out.cpu().numpy(), t_out.cpu().numpy(), rtol=1e-12)


def test_out_refuses_when_grad_is_needed(torch):
    def run(m):
        x = m.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError) as err:
            m.exp2(x, out=m.empty(3))
        return str(err.value)
    assert run(ember) == run(torch)


def test_inplace_mod_operator_writes_into_the_tensor(torch):
    def run(m):
        x = m.tensor([5.0, -5.0, 7.5])
        alias = x
        x %= 3
        return alias, x
    (e_alias, e), (_, t) = run(ember), run(torch)
    assert e_alias is e
    np.testing.assert_array_equal(e.cpu().numpy(), t.cpu().numpy())


def test_float_power_inplace(torch):
    def run(m):
        x = m.tensor([1.5, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        y = x.clone()
        y.float_power_(m.tensor([2.0, 0.5, -1.0], dtype=m.float64))
        y.sum().backward()
        return y, x.grad
    (e_y, e_g), (t_y, t_g) = run(ember), run(torch)
    assert type(e_y.grad_fn).__name__ == type(t_y.grad_fn).__name__
    np.testing.assert_allclose(e_y.detach().cpu().numpy(), t_y.detach().cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(e_g.cpu().numpy(), t_g.cpu().numpy(), rtol=1e-12)

    def refuse(m):
        with pytest.raises(RuntimeError) as err:
            m.ones(3).float_power_(2)
        return str(err.value)
    assert refuse(ember) == refuse(torch)


# --------------------------------------------------------------------------- erf family accuracy

_GRID = np.concatenate([np.linspace(-7, 7, 20001), np.linspace(-28, 28, 561),
                        [0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e-10, 0.84375, 1.25, 2.0,
                         2.857, 6.0, 26.5, 27.2, np.inf, -np.inf, np.nan]])


@pytest.mark.parametrize("name, reference", [("erf", math.erf), ("erfc", math.erfc)])
def test_erf_erfc_float64_accuracy(name, reference):
    """Against the C library (math.erf): 1e-12 relative, however small erfc gets."""
    got = getattr(ember, name)(ember.tensor(_GRID)).cpu().numpy()
    want = np.array([reference(v) for v in _GRID])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
    assert np.array_equal(np.signbit(got[_GRID == 0]), np.signbit(want[_GRID == 0]))


def test_erf_family_matches_torch_float64(torch):
    ys = np.concatenate([np.linspace(-1, 1, 20001), 1 - np.logspace(-15, -1, 300),
                         -np.logspace(-300, -1, 300), [1.0, -1.0, 1.5, np.nan, 0.0, -0.0]])
    for name, xs in [("erf", _GRID), ("erfc", _GRID), ("erfinv", ys)]:
        got = getattr(ember, name)(ember.tensor(xs)).cpu().numpy()
        want = getattr(torch, name)(torch.tensor(xs)).cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True,
                                   err_msg=name)


def test_erfinv_inverts_erf():
    ys = np.concatenate([np.linspace(-0.999, 0.999, 4001), 1 - np.logspace(-15, -3, 200)])
    x = ember.erfinv(ember.tensor(ys))
    back = ember.erfc(x).cpu().numpy()  # erfc keeps the relative accuracy of 1 - y near y = 1
    np.testing.assert_allclose(back, 1 - ys, rtol=1e-12)


def test_erf_family_float32_matches_torch(torch):
    xs = np.linspace(-5, 5, 2001).astype(np.float32)
    ys = np.linspace(-0.99, 0.99, 2001).astype(np.float32)
    for name, v in [("erf", xs), ("erfc", xs), ("erfinv", ys)]:
        got = getattr(ember, name)(ember.from_numpy(v))
        want = getattr(torch, name)(torch.from_numpy(v))
        assert got.dtype == ember.float32
        np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=2e-6, atol=1e-7)


def test_erf_family_gradgradcheck_over_the_range():
    x = ember.tensor(np.linspace(-3.5, 3.5, 15), requires_grad=True)
    y = ember.tensor(np.linspace(-0.98, 0.98, 15), requires_grad=True)
    for fn, v in [(ember.erf, x), (ember.erfc, x), (ember.erfinv, y)]:
        assert ember.autograd.gradcheck(fn, (v,))
        assert ember.autograd.gradgradcheck(fn, (v,))


# --------------------------------------------------------------------------- properties

_finite = st.floats(-50, 50, allow_nan=False, width=64)
_divisor = st.one_of(st.floats(0.25, 9, width=64), st.floats(-9, -0.25, width=64),
                     st.integers(-7, 7).filter(bool))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(_finite, min_size=1, max_size=6), divisor=_divisor)
def test_remainder_and_fmod_follow_torch(values, divisor):
    torch = pytest.importorskip("torch")
    x = np.array(values)
    for name in ("remainder", "fmod"):
        got = getattr(ember, name)(ember.tensor(x), divisor).cpu().numpy()
        want = getattr(torch, name)(torch.tensor(x), divisor).cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
    ints = np.round(x).astype(np.int64)
    if isinstance(divisor, int):
        got = (ember.tensor(ints) % divisor).cpu().numpy()
        want = (torch.tensor(ints) % divisor).cpu().numpy()
        np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(-1e4, 1e4, allow_nan=False, width=32), min_size=1,
                       max_size=6), decimals=st.integers(-3, 4))
def test_round_decimals_follows_torch(values, decimals):
    torch = pytest.importorskip("torch")
    x = np.array(values, dtype=np.float32)
    got = ember.round(ember.from_numpy(x), decimals=decimals).cpu().numpy()
    want = torch.round(torch.from_numpy(x), decimals=decimals).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ------------------------------------------- unary float functions: function and method forms
# ``ember.tanh`` and its siblings run the op inline (``ops/_op.py``'s ``unary_function``), apart
# from ``Tensor.tanh`` (``unary_apply``): the two bodies must stay the same op
_UNARY_FUNCTIONS = sorted(
    n for n in dir(ember) if getattr(getattr(ember, n), "__code__", None) is ember.tanh.__code__)


def test_the_unary_functions_are_found():
    assert {"exp", "log", "sqrt", "tanh", "sigmoid", "erf", "acosh"} <= set(_UNARY_FUNCTIONS)


def _unary_input(name: str, dtype=np.float32):
    values = np.linspace(1.25, 2.5, 12) if name == "acosh" else np.linspace(0.05, 0.95, 12)
    return values.reshape(3, 4).astype(dtype)


@pytest.mark.parametrize("name", _UNARY_FUNCTIONS)
def test_unary_function_and_method_forms_agree(name):
    results = []
    for form in ("function", "method", "keyword", "parameter"):
        x = ember.tensor(_unary_input(name), requires_grad=True)
        if form == "function":
            y = getattr(ember, name)(x)
        elif form == "method":
            y = getattr(x, name)()
        elif form == "keyword":
            y = getattr(ember, name)(input=x)
        else:
            x = ember.nn.Parameter(x.detach())
            y = getattr(ember, name)(x)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), y.dtype, type(y.grad_fn).__name__, x.grad.numpy()))
    first = results[0]
    for other in results[1:]:
        np.testing.assert_array_equal(other[0], first[0])
        assert other[1:3] == first[1:3]
        np.testing.assert_array_equal(other[3], first[3])


@pytest.mark.parametrize("name", _UNARY_FUNCTIONS)
def test_unary_function_and_method_forms_agree_without_grad(name):
    ints = ember.tensor(np.array([[1, 2], [2, 1]]))
    assert getattr(ember, name)(ints).dtype == getattr(ints, name)().dtype == ember.float32
    x = ember.tensor(_unary_input(name, np.float64))
    out = ember.empty(3, 4, dtype=ember.float64)
    result = getattr(ember, name)(x, out=out)
    assert result is out
    np.testing.assert_array_equal(out.numpy(), getattr(x, name)().numpy())
    with ember.no_grad():
        y = getattr(ember, name)(ember.tensor(_unary_input(name), requires_grad=True))
    assert y.grad_fn is None and not y.requires_grad
