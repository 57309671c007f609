"""ember.testing (assert_close, make_tensor, assert_allclose) and ember.random.fork_rng, checked
against torch 2.13: the same inputs must pass or fail with the same exception and message."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_allclose, assert_close, make_tensor

torch = pytest.importorskip("torch")

nan, inf = float("nan"), float("inf")

# (inputs built from a namespace T, assert_close options): each is run under torch and ember
CASES = {
    "one_of_four": (lambda T: (T.tensor([1., 2., 3., 4.]), T.tensor([1., 2., 3., 4.1])), {}),
    "two_d_index": (lambda T: (T.tensor([[1., 2.], [3., 4.]]), T.tensor([[1.5, 2.], [3., 0.]])),
                    {}),
    "ints_exact": (lambda T: (T.tensor([1, 2, 3]), T.tensor([1, 5, 3])), {}),
    "bools": (lambda T: (T.tensor([[True, False]]), T.tensor([[True, True]])), {}),
    "shape": (lambda T: (T.tensor([1., 2.]), T.tensor([1., 2., 3.])), {}),
    "dtype": (lambda T: (T.tensor([1., 2.]), T.tensor([1., 2.], dtype=T.float64)), {}),
    "dtype_unchecked": (lambda T: (T.tensor([1., 2.]), T.tensor([1., 2.1], dtype=T.float64)),
                        {"check_dtype": False}),
    "stride": (lambda T: (T.zeros(2, 3), T.zeros(3, 2).t()), {"check_stride": True}),
    "stride_unchecked": (lambda T: (T.zeros(2, 3), T.zeros(3, 2).t()), {}),
    "zero_dim": (lambda T: (T.tensor(1.), T.tensor(1.5)), {}),
    "floats": (lambda T: (1.0, 1.1), {}),
    "ints": (lambda T: (1, 2), {}),
    "bool_scalars": (lambda T: (True, False), {}),
    "none": (lambda T: (None, 1), {}),
    "seq_length": (lambda T: ([T.tensor([1.])], [T.tensor([1.]), T.tensor([2.])]), {}),
    "mapping_item": (lambda T: ({"a": T.tensor([1.]), "b": T.tensor([2.])},
                                {"a": T.tensor([1.]), "b": T.tensor([2.5])}), {}),
    "mapping_keys": (lambda T: ({"a": 1}, {"b": 1}), {}),
    "tuple_of_numbers": (lambda T: ((1, 2.0), (1, 2.5)), {}),
    "equality": (lambda T: (T.tensor([1., 2.]), T.tensor([1., 2.1])), {"rtol": 0, "atol": 0}),
    "only_rtol": (lambda T: (T.tensor([1., 2.]), T.tensor([1., 2.1])), {"rtol": 0.1}),
    "loose": (lambda T: (T.tensor([1., 2.]), T.tensor([1., 2.1])), {"rtol": 0.1, "atol": 0}),
    "msg_str": (lambda T: (T.tensor([1., 2.]), T.tensor([1., 2.1])), {"msg": "custom"}),
    "msg_callable": (lambda T: ([T.tensor([1., 2.])], [T.tensor([1., 2.1])]),
                     {"msg": lambda m: f"Header\n\n{m}\n\nFooter"}),
    "nan": (lambda T: (T.tensor([nan, 1.]), T.tensor([nan, 1.])), {}),
    "nan_equal": (lambda T: (T.tensor([nan, 1.]), T.tensor([nan, 1.])), {"equal_nan": True}),
    "atol_float32": (lambda T: (T.tensor([0., 1.]), T.tensor([1e-6, 1.])), {}),
    "rtol_float32": (lambda T: (T.tensor([0., 1.]), T.tensor([0., 1.0001])), {}),
    "float16": (lambda T: (T.tensor([1., 2.], dtype=T.float16),
                           T.tensor([1., 2.01], dtype=T.float16)), {}),
    "float64": (lambda T: (T.tensor([1., 2.], dtype=T.float64),
                           T.tensor([1., 2.0000001], dtype=T.float64)), {}),
    "inf": (lambda T: (T.tensor([inf, 1.]), T.tensor([1., 1.])), {}),
    "zero_expected": (lambda T: (T.tensor([0., 1.]), T.tensor([0., 0.])), {}),
    "numpy_arrays": (lambda T: (np.array([1., 2.]), np.array([1., 2.5])), {}),
    "numpy_vs_tensor": (lambda T: (np.array([1., 2.]), T.tensor([1., 2.])), {}),
}


def outcome(T, build, options) -> str:
    actual, expected = build(T)
    try:
        T.testing.assert_close(actual, expected, **options)
    except Exception as e:  # noqa: BLE001 (the outcome is compared, whatever it is)
        # the type names differ only in the module: torch.Tensor vs ember._tensor.Tensor
        return f"{type(e).__name__}: {e}".replace("ember._tensor.Tensor", "torch.Tensor")
    return "passed"


@pytest.mark.parametrize("case", CASES)
def test_assert_close_outcome_and_message_match_torch(case):
    build, options = CASES[case]
    assert outcome(ember, build, options) == outcome(torch, build, options)


def test_mismatch_message_format():
    with pytest.raises(AssertionError) as info:
        assert_close(ember.tensor([1., 2., 3., 4.]), ember.tensor([1., 2., 3., 4.5]))
    assert str(info.value).startswith(
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 0.5 at index (3,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.1111111")


def test_default_tolerances_per_dtype():
    assert_close(ember.tensor([1.0]), ember.tensor([1.0 + 1e-6]))  # within float32's
    with pytest.raises(AssertionError):
        assert_close(ember.tensor([1.0], dtype=ember.float64),
                     ember.tensor([1.0 + 1e-6], dtype=ember.float64))
    assert_close(ember.tensor([1.0], dtype=ember.float16),
                 ember.tensor([1.0009765625], dtype=ember.float16))


def test_tensors_requiring_grad_compare_by_value():
    x = ember.ones(3, requires_grad=True)
    assert_close(x * 2, ember.full((3,), 2.0))


def test_assert_allclose_is_deprecated_and_loose():
    with pytest.warns(FutureWarning, match="assert_allclose"):
        assert_allclose(ember.tensor([1.0]), [1.00001])  # 1e-4 relative: passes
    with warnings.catch_warnings(), pytest.raises(AssertionError):
        warnings.simplefilter("ignore")
        assert_allclose(ember.tensor([1.0]), [1.01])


@pytest.mark.parametrize("dtype,low,high", [
    ("float32", -9, 9), ("float64", -9, 9), ("int64", -9, 10), ("uint8", 0, 10),
    ("int8", -9, 10), ("bool", 0, 2)])
def test_make_tensor_default_ranges(dtype, low, high):
    t = make_tensor(200, dtype=getattr(ember, dtype), device="cpu")
    assert t.shape == (200,) and t.dtype == getattr(ember, dtype)
    v = t.numpy().astype(float)
    assert v.min() >= low and v.max() < high


def test_make_tensor_options():
    t = make_tensor((3, 4), dtype=ember.float32, device="cpu", low=-1, high=1,
                    requires_grad=True, noncontiguous=True, exclude_zero=True)
    assert t.shape == (3, 4) and not t.is_contiguous() and t.requires_grad
    assert (t.abs() > 0).all() and (t >= -1).all() and (t < 1).all()
    z = make_tensor(50, dtype=ember.int64, device="cpu", low=0, high=2, exclude_zero=True)
    assert (z == 1).all()


@pytest.mark.parametrize("kwargs", [{"low": 2, "high": 1}, {"low": nan},
                                    {"requires_grad": True, "dtype": "int64"}])
def test_make_tensor_errors_match_torch(kwargs):
    def message(T):
        kw = {"dtype": T.float32, **kwargs}
        if isinstance(kw["dtype"], str):
            kw["dtype"] = getattr(T, kw["dtype"])
        with pytest.raises(ValueError) as info:
            T.testing.make_tensor(2, device="cpu", **kw)
        return str(info.value)
    assert message(ember) == message(torch)


# ------------------------------------------------------------------------------ ember.random

def test_fork_rng_restores_the_state_and_the_sequence():
    ember.manual_seed(0)
    expected = [ember.rand(3) for _ in range(2)]
    ember.manual_seed(0)
    first = ember.rand(3)
    with ember.random.fork_rng():
        inside = ember.rand(3)
        ember.rand(100)
    after = ember.rand(3)
    assert ember.equal(first, expected[0]) and ember.equal(after, expected[1])
    assert ember.equal(inside, expected[1])  # the fork starts from the same state


def test_fork_rng_disabled_and_reseeded_inside():
    ember.manual_seed(1)
    with ember.random.fork_rng(enabled=False):
        ember.rand(3)
    a = ember.rand(3)
    ember.manual_seed(1)
    ember.rand(3)
    assert ember.equal(a, ember.rand(3))
    state = ember.get_rng_state()
    with ember.random.fork_rng(devices=[], device_type="cpu"):
        ember.manual_seed(123)
    assert ember.equal(ember.get_rng_state(), state)


def test_fork_rng_unknown_device_type_matches_torch():
    def message(T):
        with pytest.raises(RuntimeError) as info, T.random.fork_rng(device_type="foo"):
            pass
        return str(info.value)
    assert message(ember) == message(torch)


def test_random_module_has_torch_random_functions():
    names = {"fork_rng", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
             "default_generator", "Generator", "thread_safe_generator"}
    assert names <= set(dir(torch.random)) and all(hasattr(ember.random, n) for n in names)
    assert ember.random.thread_safe_generator() is None
