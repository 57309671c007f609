"""Tensor basics against torch: construction, dtypes, properties, conversions, printing.

Tensors are made on the default device (``EMBER_TEST_DEVICE``) and compared through
``.cpu()``; tests of CPU-only behaviour (memory shared with NumPy) ask for ``device="cpu"``."""

from __future__ import annotations

import numpy as np
import pytest

import ember

# --------------------------------------------------------------------------- construction


@pytest.mark.parametrize("data", [
    [1.0, 2.0], [1, 2], [True, False], 3.5, 7, [[1, 2], [3, 4.5]], [], [[]],
    np.array([1.0, 2.0]), np.array([1, 2], dtype=np.int32), np.float64(2.0),
    np.array([1, 2], dtype=np.uint8),
    # NumPy scalars nested in lists keep their dtype, Python numbers take torch's defaults
    [1.0, np.float64(2)], [[1.0], [np.float64(2)]], [np.float32(1), 2.0], (1 + 2j, 3),
    [[np.complex128(1)], [2j]], ((1, 2), [3, 4]), [[0.5] * 64] * 64,
])
def test_tensor_infers_torch_dtype_and_values(torch, data):
    e, t = ember.tensor(data), torch.tensor(data)
    assert repr(e.dtype) == repr(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.cpu().numpy(), t.numpy())


def test_tensor_explicit_dtype_and_requires_grad():
    e = ember.tensor([1, 2], dtype=ember.float64, requires_grad=True)
    assert e.dtype is ember.float64 and e.requires_grad and e.is_leaf


def test_tensor_copies_but_from_numpy_shares_memory():
    a = np.zeros(3, dtype=np.float32)
    copied, shared = ember.tensor(a), ember.from_numpy(a)
    a[0] = 5
    assert copied[0].item() == 0 and shared[0].item() == 5
    shared[1] = 7
    assert a[1] == 7
    assert ember.from_numpy(np.zeros(2)).dtype is ember.float64


def test_as_tensor_shares_when_possible():
    a = np.arange(3.0)
    t = ember.as_tensor(a, device="cpu")
    a[0] = 9
    assert t[0].item() == 9
    assert ember.as_tensor([1, 2]).dtype is ember.int64


def test_from_numpy_rejects_non_arrays():
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])


@pytest.mark.parametrize("name,args,kwargs", [
    ("zeros", (2, 3), {}), ("ones", ((2, 3),), {}), ("zeros", ([4],), {"dtype": "int32"}),
    ("full", ((2, 2), 1.5), {}), ("full", ((2,), 3), {}), ("full", ((2,), True), {}),
    ("eye", (3,), {}), ("eye", (2, 4), {}), ("arange", (5,), {}), ("arange", (1, 4, 0.5), {}),
    ("arange", (0.0, 1.0, 0.1), {}), ("arange", (10, 0, -3), {}), ("linspace", (-3.14, 3.14, 7), {}),
    ("linspace", (0, 1, 2000), {}), ("linspace", (0, 1, 1), {}), ("empty", (0, 3), {}),
])
def test_factories_match_torch(torch, name, args, kwargs):
    tk = {k: getattr(torch, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    ek = {k: getattr(ember, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    t, e = getattr(torch, name)(*args, **tk), getattr(ember, name)(*args, **ek)
    assert repr(e.dtype) == repr(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    if name != "empty":
        np.testing.assert_array_equal(e.cpu().numpy(), t.numpy())


def test_like_factories_keep_dtype_and_shape():
    x = ember.ones(2, 3, dtype=ember.float64)
    for fn in (ember.zeros_like, ember.ones_like, ember.empty_like, ember.rand_like,
               ember.randn_like):
        y = fn(x)
        assert y.shape == (2, 3) and y.dtype is ember.float64
    assert ember.full_like(x, 7).sum().item() == 42
    assert ember.zeros_like(x, dtype=ember.int64).dtype is ember.int64


def test_factories_require_grad_only_for_floats():
    assert ember.zeros(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        ember.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        ember.arange(3, requires_grad=True)


def test_random_is_seeded_and_generators_are_independent():
    ember.manual_seed(3)
    a = ember.randn(4)
    ember.manual_seed(3)
    assert ember.equal(a, ember.randn(4))
    g = ember.Generator().manual_seed(3)
    assert ember.equal(ember.randn(4, generator=g), a)
    u = ember.rand(1000)
    assert 0 <= u.min().item() and u.max().item() < 1 and u.dtype is ember.float32
    r = ember.randint(2, 5, (100,))
    assert r.dtype is ember.int64 and r.min().item() >= 2 and r.max().item() <= 4
    assert ember.randint(3, (2, 2)).shape == (2, 2)
    assert ember.randn(()).shape == ()
    state = ember.get_rng_state()
    x = ember.rand(3)
    ember.set_rng_state(state)
    assert ember.equal(ember.rand(3), x)


def test_legacy_constructors_and_types():
    t = ember.Tensor(3, 5)
    assert t.shape == (3, 5) and t.dtype is ember.float32
    assert ember.Tensor([1, 2]).dtype is ember.float32
    assert ember.FloatTensor([1, 2]).dtype is ember.float32
    assert ember.LongTensor([1, 2]).dtype is ember.int64
    assert ember.DoubleTensor(2).shape == (2,)
    x = ember.randn(2)
    assert isinstance(x, ember.FloatTensor) and not isinstance(x, ember.LongTensor)
    assert x.type() == "torch.FloatTensor"
    assert x.type(ember.DoubleTensor).dtype is ember.float64
    assert x.type("torch.LongTensor").dtype is ember.int64
    assert isinstance(ember.Tensor(2), ember.Tensor)


def test_cuda_idiom_from_the_tutorials_runs_on_cpu():
    dtype = ember.cuda.FloatTensor if ember.cuda.is_available() else ember.FloatTensor
    x = ember.randn(4, 3).type(dtype)
    assert x.dtype is ember.float32 and x.device == ember.get_default_device()
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        x.to("cuda")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.cuda.FloatTensor([1.0])


# --------------------------------------------------------------------------- properties


def test_shape_size_dim_numel():
    x = ember.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and repr(x.shape) == "torch.Size([2, 3, 4])"
    assert x.size() == x.shape and x.size(1) == 3 and x.size(-1) == 4
    assert x.dim() == x.ndim == 3 and x.numel() == 24 and len(x) == 2
    assert x.stride() == (12, 4, 1) and x.is_contiguous()
    assert x.transpose(0, 2).stride() == (1, 4, 12) and not x.transpose(0, 2).is_contiguous()
    assert x.element_size() == 4 and x.device == ember.get_default_device()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)


def test_dtype_conversions():
    x = ember.tensor([1.7, -2.2], device="cpu")
    assert x.double().dtype is ember.float64 and x.long().tolist() == [1, -2]
    assert x.int().dtype is ember.int32 and x.half().dtype is ember.float16
    assert x.bool().tolist() == [True, True] and x.float() is x
    assert x.to(ember.float64).dtype is ember.float64 and x.to("cpu") is x
    assert x.to(ember.zeros(1, dtype=ember.int64)).dtype is ember.int64
    assert x.to("cpu", ember.float64).dtype is ember.float64
    assert x.cpu() is x
    assert ember.float is ember.float32 and ember.long is ember.int64 and ember.double is ember.float64
    assert repr(ember.float32) == "torch.float32"
    assert ember.float32.is_floating_point and not ember.int64.is_floating_point


def test_item_tolist_bool_float_index():
    assert ember.tensor(3.5).item() == 3.5 and isinstance(ember.tensor(3).item(), int)
    assert ember.tensor([[1, 2]]).tolist() == [[1, 2]]
    assert float(ember.tensor([2.5])) == 2.5 and int(ember.tensor(3.9)) == 3
    assert [10, 20, 30][ember.tensor(1)] == 20
    assert bool(ember.tensor([1])) and not bool(ember.tensor(0.0))
    assert f"{ember.tensor(3.14159):.2f}" == "3.14"
    assert [t.item() for t in ember.tensor([1, 2, 3])] == [1, 2, 3]


def test_views_share_memory_and_version_counter():
    base = ember.zeros(3, 4, device="cpu")
    for v in (base.view(12), base.reshape(4, 3), base.transpose(0, 1), base.t(), base.T,
              base.permute(1, 0), base.unsqueeze(0), base[None].squeeze(0), base.flatten(),
              base[1], base[:, 1:3], base[::2], base.view(3, 4).expand(2, 3, 4)):
        assert np.shares_memory(v.numpy(), base.numpy())
    v = base[1]
    v.fill_(2.0)
    assert base.sum().item() == 8.0
    assert base._version == v._version  # shared counter object


def test_data_shares_storage_without_history():
    x = ember.ones(3, requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.is_leaf
    d[0] = 5
    assert x[0].item() == 5
    y = x * 2
    assert y.data.grad_fn is None


# --------------------------------------------------------------------------- printing


def _printing_cases(torch_or_ember):
    t = torch_or_ember
    return [
        t.tensor([1.0, 2.0, 3.0]),
        t.tensor([1.0, 2.0, 3.0], dtype=t.float64),
        t.tensor([1.5, -2.25, 3.0]),
        t.tensor(6.0),
        t.tensor([1, 2, 3]),
        t.tensor([True, False]),
        t.tensor([1e-5, 1.0]),
        t.tensor([1e10, 1.0]),
        t.tensor([[0.1234567, 12.5], [-3.0, 100.0]]),
        t.tensor([1, 2], dtype=t.int32),
        t.tensor([]),
        t.zeros(2, 0),
        t.arange(2000, dtype=t.float32).reshape(40, 50),
        t.arange(10000),
        t.tensor([float("nan"), float("inf"), 1.0]),
        t.tensor([float("nan"), float("-inf"), 1.5]),
        t.tensor([0.0, 0.0]),
        t.tensor(3.0, dtype=t.float16),
        t.linspace(0, 1, 25),
        t.zeros(2, 3, 4),
        t.tensor(-0.5),
        t.tensor([123456.789, 0.001]),
    ]


@pytest.fixture
def on_cpu():
    """Printing is compared on the CPU: torch (the oracle) has no other device here; the
    ``device='strict'`` suffix is tested in test_backend.py."""
    ember.set_default_device("cpu")


def test_repr_matches_torch(torch, on_cpu):
    for e, t in zip(_printing_cases(ember), _printing_cases(torch)):
        assert repr(e) == repr(t)


def test_repr_autograd_suffixes_match_torch(torch, on_cpu):
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = (x * 2).sum()
        z = lib.tensor(2.0, requires_grad=True) * 3
        lib.out = (repr(x), repr(y), repr(z), repr(x.detach()))
    assert ember.out == torch.out
    assert ember.out[0] == "tensor([1., 2., 3.], dtype=torch.float64, requires_grad=True)"
    assert ember.out[2] == "tensor(6., grad_fn=<MulBackward0>)"


# --------------------------------------------------------------------------- grad modes on tensors


def test_requires_grad_only_on_floating_leaves():
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ember.tensor([1, 2]).requires_grad_()
    y = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad_(False)


def test_floating_point_edge_cases_do_not_warn_but_users_numpy_still_does():
    import subprocess
    import sys
    code = ("import ember\nx = ember.tensor([0.0, 1.0])\n"
            "print((x * float('inf'))[0].item(), x.log()[0].item(), (1 / x)[0].item())")
    out = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                         text=True, check=True)
    assert out.stdout.split() == ["nan", "-inf", "inf"] and out.stderr == ""
    with pytest.warns(RuntimeWarning):
        np.array([0.0]) * np.inf
