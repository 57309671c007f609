"""bfloat16 plumbing, finfo/iinfo, compared with torch 2.13."""

import sys

import numpy as np
import pytest

import ember
from ember._backend import dtypes as _dt

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")


VALUES = [1.5, 2.25, 3.0e5, 1 / 3, -0.1, 1e-5, 65504.0, 1e38, 3.3e38]


def test_dtype_attributes_match_torch():
    d = ember.bfloat16
    assert repr(d) == repr(torch.bfloat16) == "torch.bfloat16"
    assert d.itemsize == torch.bfloat16.itemsize == 2
    assert d.is_floating_point and d.is_signed and not d.is_complex
    assert _dt.to_dtype("bfloat16") is d and _dt.to_dtype("torch.bfloat16") is d
    assert _dt.to_dtype("BFloat16Tensor") is d


def test_import_does_not_load_ml_dtypes():
    import subprocess
    code = ("import sys, ember; ember.bfloat16; ember.finfo(ember.bfloat16); "
            "ember.get_autocast_dtype('cpu'); print('ml_dtypes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_creation_rounds_to_nearest_even_as_torch():
    t = ember.tensor(VALUES, dtype=ember.bfloat16)
    ref = torch.tensor(VALUES, dtype=torch.bfloat16)
    assert t.dtype is ember.bfloat16
    np.testing.assert_array_equal(t.float().numpy(), ref.float().numpy())
    # ties: 1 + 2**-8 lies halfway between 1 and 1 + 2**-7 -> even (1.0); 1 + 3 * 2**-8 -> up
    ties = [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8)]
    np.testing.assert_array_equal(
        ember.tensor(ties).to(ember.bfloat16).float().numpy(),
        torch.tensor(ties).to(torch.bfloat16).float().numpy())


def test_to_and_back():
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    e = ember.tensor(x).to(ember.bfloat16)
    r = torch.tensor(x).to(torch.bfloat16)
    assert e.dtype is ember.bfloat16 and e.element_size() == 2
    np.testing.assert_array_equal(e.float().numpy(), r.float().numpy())
    np.testing.assert_array_equal(e.to(ember.float64).numpy(), r.double().numpy())
    assert e.to(ember.int64).tolist() == r.long().tolist()
    assert ember.tensor([1, 2]).to(ember.bfloat16).float().tolist() == [1.0, 2.0]
    assert e.type() == r.type() == "torch.BFloat16Tensor"


def test_ml_dtypes_array_becomes_a_bfloat16_tensor():
    a = np.array([1.0, 2.5], dtype=ml_dtypes.bfloat16)
    assert ember.tensor(a).dtype is ember.bfloat16
    assert ember.from_numpy(a).dtype is ember.bfloat16


@pytest.mark.parametrize("a, b", [
    ("bfloat16", "float16"), ("bfloat16", "float32"), ("bfloat16", "float64"),
    ("bfloat16", "int64"), ("bfloat16", "int8"), ("bfloat16", "bool"), ("uint8", "bfloat16"),
    ("bfloat16", "bfloat16"), ("float16", "bfloat16"),
])
def test_promote_types_matches_torch(a, b):
    got = ember.promote_types(getattr(ember, a if a != "bool" else "bool"),
                              getattr(ember, b if b != "bool" else "bool"))
    assert repr(got) == repr(torch.promote_types(getattr(torch, a), getattr(torch, b)))


def test_result_type_with_scalars_matches_torch():
    e = ember.ones(3, dtype=ember.bfloat16)
    r = torch.ones(3, dtype=torch.bfloat16)
    for other in (2, 2.5, True, ember.tensor(1.0), ember.ones(3, dtype=ember.float16)):
        tother = torch.tensor(other.tolist(), dtype=getattr(torch, other.dtype.name)) \
            if isinstance(other, ember.Tensor) else other
        assert repr(ember.result_type(e, other)) == repr(torch.result_type(r, tother))


def test_elementwise_same_dtype_values_match_torch():
    x = np.random.default_rng(1).standard_normal(257).astype(np.float32)
    y = np.random.default_rng(2).standard_normal(257).astype(np.float32)
    ex, ey = ember.tensor(x).to(ember.bfloat16), ember.tensor(y).to(ember.bfloat16)
    tx, ty = torch.tensor(x).bfloat16(), torch.tensor(y).bfloat16()
    for name, ef, tf in [("add", ex + ey, tx + ty), ("mul", ex * ey, tx * ty),
                         ("sub", ex - ey, tx - ty),
                         ("relu", ex.relu(), tx.relu()), ("neg", -ex, -tx)]:
        assert ef.dtype is ember.bfloat16, name
        np.testing.assert_allclose(ef.float().numpy(), tf.float().numpy(), rtol=2 ** -8,
                                   err_msg=name)


def test_ops_that_numpy_widens_stay_bfloat16_with_torchs_values():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    ex, ew = ember.tensor(x).to(ember.bfloat16), ember.tensor(w).to(ember.bfloat16)
    tx, tw = torch.tensor(x).bfloat16(), torch.tensor(w).bfloat16()
    for name, ef, tf in [("div", ex / (ex + 8), tx / (tx + 8)), ("mul_scalar", ex * 0.1, tx * 0.1),
                         ("matmul", ex @ ew, tx @ tw), ("sum", ex.sum(), tx.sum()),
                         ("mean", ex.mean(1), tx.mean(1)), ("exp", ex.exp(), tx.exp()),
                         ("tanh", ex.tanh(), tx.tanh())]:
        assert ef.dtype is ember.bfloat16, name
        np.testing.assert_allclose(ef.float().numpy(), tf.float().numpy(), rtol=2 ** -7,
                                   atol=1e-2, err_msg=name)


def test_bfloat16_prints_as_torch():
    vals = [[1.5, 2.25], [299008.0, 1 / 3]]
    assert repr(ember.tensor(vals, dtype=ember.bfloat16)) == \
        repr(torch.tensor(vals, dtype=torch.bfloat16))
    assert repr(ember.tensor(1 / 3, dtype=ember.bfloat16)) == \
        repr(torch.tensor(1 / 3, dtype=torch.bfloat16))


def test_bfloat16_leaf_requires_grad_and_backward():
    x = np.random.default_rng(3).standard_normal(6).astype(np.float32)
    e = ember.tensor(x, dtype=ember.bfloat16, requires_grad=True)
    t = torch.tensor(x, dtype=torch.bfloat16, requires_grad=True)
    assert e.is_floating_point()
    (e * e).sum().backward()
    (t * t).sum().backward()
    assert e.grad.dtype is ember.bfloat16
    np.testing.assert_allclose(e.grad.float().numpy(), t.grad.float().numpy(), rtol=2 ** -7)


def test_grad_through_cast_reaches_float32_leaf():
    x = np.random.default_rng(4).standard_normal(5).astype(np.float32)
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    (e.to(ember.bfloat16) * 3).float().sum().backward()
    (t.to(torch.bfloat16) * 3).float().sum().backward()
    assert e.grad.dtype is ember.float32
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_missing_ml_dtypes_names_the_extra(monkeypatch):
    monkeypatch.setattr(_dt, "_bfloat16_np", None)
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes -> ImportError
    with pytest.raises(ImportError, match=r"pip install ember\[bfloat16\]"):
        ember.zeros(2, dtype=ember.bfloat16)
    # the rest of ember does not need it
    assert ember.finfo(ember.bfloat16).eps == 2 ** -7
    assert ember.ones(2).sum().item() == 2.0


# --------------------------------------------------------------------------- finfo / iinfo

@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
        assert type(getattr(e, attr)) is type(getattr(t, attr)), attr
    assert repr(e) == repr(t)


def test_finfo_default_and_python_float():
    assert ember.finfo().dtype == torch.finfo().dtype == "float32"
    assert ember.finfo(float).dtype == torch.finfo(float).dtype == "float64"
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.finfo().dtype == "float64"
    finally:
        ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    e, t = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert repr(e) == repr(t)


@pytest.mark.parametrize("fn, arg", [("finfo", "int32"), ("finfo", "bool"), ("iinfo", "float32"),
                                     ("iinfo", "bool"), ("iinfo", "bfloat16")])
def test_info_type_errors_match_torch(fn, arg):
    with pytest.raises(TypeError) as te:
        getattr(torch, fn)(getattr(torch, arg))
    with pytest.raises(TypeError) as ee:
        getattr(ember, fn)(getattr(ember, arg))
    assert str(ee.value) == str(te.value)


def test_finfo_rejects_a_string_as_torch():
    with pytest.raises(TypeError) as te:
        torch.finfo("float32")
    with pytest.raises(TypeError) as ee:
        ember.finfo("float32")
    assert str(ee.value) == str(te.value)
