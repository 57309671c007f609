"""In-place arithmetic with no graph to record computes straight into the tensor's array
(``ops/inplace.py``'s direct kernels): the same values as the general way, bit for bit, the
version counter bumped, and every case the direct kernels do not take still going the general
way, with torch's errors."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)

CASES = [
    # (method, operand maker, kwargs)
    ("add_", lambda a: a[::-1].copy(), {}),
    ("sub_", lambda a: a[::-1].copy(), {}),
    ("mul_", lambda a: a[::-1].copy(), {}),
    ("div_", lambda a: a[::-1].copy(), {}),
    ("add_", lambda a: 0.3, {}),
    ("sub_", lambda a: 3, {}),
    ("mul_", lambda a: 1e-3, {}),
    ("div_", lambda a: 7, {}),
    ("add_", lambda a: a[::-1].copy(), {"alpha": 1}),
    ("sub_", lambda a: a[::-1].copy(), {"alpha": 2.5}),  # not direct: the general way
    ("div_", lambda a: a[::-1].copy(), {"rounding_mode": None}),
    ("div_", lambda a: a[::-1].copy(), {"rounding_mode": "floor"}),  # general way
    ("add_", lambda a: a[:1].copy(), {}),                # broadcast operand
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("method,make,kwargs", CASES)
@pytest.mark.parametrize("grad_mode", ["no_grad", "enabled"])
def test_direct_inplace_equals_torch_and_bumps_version(method, make, kwargs, dtype, grad_mode):
    a = rng.standard_normal((3, 5)).astype(dtype)
    b = make(a)
    results = []
    for lib in (ember, torch):
        x = lib.tensor(a.copy())
        other = lib.tensor(b) if isinstance(b, np.ndarray) else b
        alias = x.view(15)  # a view sees the write and shares the version counter
        before = x._version
        ctx = lib.no_grad() if grad_mode == "no_grad" else lib.enable_grad()
        with ctx:
            out = getattr(x, method)(other, **kwargs)
        assert out is x
        assert x._version == before + 1 and alias._version == x._version
        assert np.array_equal(alias.numpy(), x.numpy().reshape(15))
        results.append(x.numpy())
    assert results[0].dtype == results[1].dtype
    rtol = {np.float16: 1e-3, np.float32: 1e-5, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(results[0], results[1], rtol=rtol)


@pytest.mark.parametrize("method,make,kwargs", CASES)
def test_direct_inplace_is_bitwise_the_general_way(method, make, kwargs):
    """The general way (an ember op, then a copy in) is what a grad-recording call computes:
    the direct kernel must agree with it bit for bit."""
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = make(a)
    other = ember.tensor(b) if isinstance(b, np.ndarray) else b
    x = ember.tensor(a.copy())
    with ember.no_grad():
        getattr(x, method)(other, **kwargs)
    y = ember.tensor(a.copy(), requires_grad=True).clone()  # a non-leaf: the graph way
    getattr(y, method)(other, **kwargs)
    assert y.grad_fn is not None
    assert np.array_equal(x.numpy(), y.detach().numpy())


def test_operators_and_zero_take_the_direct_way(monkeypatch):
    import ember.ops.inplace as inplace_module

    def general_way(*args):
        raise AssertionError("went the general way (a new array copied in)")

    monkeypatch.setattr(inplace_module, "_write", general_way)
    w = ember.ones(1000, 100, requires_grad=True)
    w.grad = ember.full((1000, 100), 2.0)
    data, grad_data = w._data, w.grad._data
    with ember.no_grad():
        w -= 0.5 * w.grad
        w *= 2
        w += 1
        w /= 4
        w.grad.zero_()
    assert w._data is data and w.grad._data is grad_data  # written where they were
    assert np.all(w.detach().numpy() == 0.25) and np.all(w.grad.numpy() == 0)
    assert w._version == 4 and w.grad._version == 1
    assert w.requires_grad and w.grad_fn is None


def test_cases_not_taken_keep_torch_errors_and_semantics():
    x = ember.zeros(3)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                            r"broadcast shape \[2, 3\]"):
        x.add_(ember.ones(2, 3))
    assert x._version == 0 and np.all(x.numpy() == 0)
    e = ember.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.add_(1.0)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.zero_()
    with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
        x.add_(ember.ones(3), alpha=True)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
        x.sub_(True)
    i = ember.arange(3)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        i.div_(2)
    # a float64 operand on a float32 tensor: cast back to float32 as torch does
    x.add_(ember.tensor([0.1, 0.2, 0.3], dtype=ember.float64))
    assert x.dtype == ember.float32
    np.testing.assert_array_equal(x.numpy(), np.array([0.1, 0.2, 0.3], np.float32))


def test_direct_division_by_zero_warns_nothing():
    x = ember.tensor([1.0, 0.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.div_(0.0)
    assert np.isposinf(x[0].item()) and np.isnan(x[1].item()) and np.isneginf(x[2].item())


def test_leaf_that_requires_grad_still_refused_with_grad_enabled():
    w = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        w.add_(1.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        w.zero_()
