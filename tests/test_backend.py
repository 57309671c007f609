"""The backend seam: the strict array behaves like CuPy's where a seam violation would show,
tensors know their device from their array, and moves between devices are explicit copies."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from conftest import TEST_DEVICE

import ember
from ember._backend import device_of, module_for_device, to_device_array, xp_of
from ember._backend.device import STRICT

xp = module_for_device(STRICT)
NO_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
               "construct a NumPy array explicitly.")

# --------------------------------------------------------------------------- the strict array


def test_strict_array_refuses_implicit_conversion_to_numpy():
    a = xp.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match=r"Please use `\.get\(\)`") as err:
        np.asarray(a)
    assert str(err.value) == NO_IMPLICIT
    host = a.get()
    assert type(host) is np.ndarray and host.tolist() == [1.0, 2.0]
    host[0] = 9  # a copy
    assert a[0].item() == 1.0


@pytest.mark.parametrize("mix", [
    lambda a, h: a + h, lambda a, h: h + a, lambda a, h: a * h, lambda a, h: a < h,
    lambda a, h: xp.exp(h), lambda a, h: xp.concatenate([a, h]), lambda a, h: xp.where(a > 0, a, h),
    lambda a, h: xp.einsum("i,i->", a, h),
], ids=["add", "radd", "mul", "lt", "exp", "concatenate", "where", "einsum"])
def test_mixing_with_a_host_array_raises_as_cupy(mix):
    a, h = xp.ones(3), np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        mix(a, h)


def test_in_place_mixing_raises_too():
    a = xp.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        a += np.ones(3)


@pytest.mark.parametrize("call", [lambda a: np.exp(a), lambda a: np.concatenate([a, a]),
                                  lambda a: np.add.reduce(a)], ids=["ufunc", "function", "reduce"])
def test_numpy_refuses_strict_arrays(call):
    # NOTE: CuPy would dispatch these to itself; refusing shows a kernel that bypassed xp
    with pytest.raises(TypeError):
        call(xp.ones(3))


def test_scalars_and_zero_dim_host_arrays_mix_fine():
    a = xp.asarray([1.0, 2.0])
    for b in (2, 2.0, np.float32(2), np.array(2.0), np.int64(2)):
        assert (a * b).get().tolist() == [2.0, 4.0] and (b * a).get().tolist() == [2.0, 4.0]
    assert type(a * np.float32(2)) is xp.ndarray


def test_views_share_memory():
    a = xp.zeros((3, 4))
    a[1][2] = 5.0  # a row is a view
    a.T[0, 2] = 7.0
    a.reshape(12)[11] = 1.0
    xp.lib.stride_tricks.as_strided(a, (3,), (8 * 5,))[1] = 3.0  # the diagonal
    assert a.get()[1, 2] == 5.0 and a.get()[2, 0] == 7.0 and a.get()[2, 3] == 1.0
    assert a.get()[1, 1] == 3.0
    a[:, 0] = np.array([1.0, 2.0, 3.0])  # host values in setitem: accepted, as CuPy does
    assert a.get()[:, 0].tolist() == [1.0, 2.0, 3.0]


def test_reductions_return_zero_dim_arrays_and_protocols_work():
    a = xp.asarray(np.arange(6.0).reshape(2, 3))
    s = a.sum()
    assert type(s) is xp.ndarray and s.ndim == 0 and s.item() == 15.0
    assert float(s) == 15.0 and int(a[1, 1]) == 4 and [0, 1, 2][a[0, 1].astype(np.int64)] == 1
    assert len(a) == 2 and [r.tolist() for r in a] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert bool(a[0, 1]) and a.shape == (2, 3) and a.dtype == np.float64 and a.ndim == 2
    assert a.strides == (24, 8) and a.flags.c_contiguous and a.itemsize == 8 and a.size == 6
    assert type(xp.add.reduce(a, axis=0)) is xp.ndarray
    assert repr(a) == repr(np.arange(6.0).reshape(2, 3))


def test_module_mirrors_numpy():
    assert xp.float32 is np.float32 and xp.ndarray is type(xp.zeros(1)) and xp.pi == np.pi
    a = xp.asarray(np.eye(3) * 2)
    for r in (xp.linalg.inv(a), xp.fft.fft(a).real, xp.einsum("ii->i", a), xp.exp(a),
              xp.lib.stride_tricks.sliding_window_view(a, 2, axis=1), xp.where(a > 0)[0],
              xp.linalg.eigh(a).eigenvalues):
        assert type(r) is xp.ndarray
    assert xp.asarray(a) is a and xp.asarray(a, dtype=np.float32).dtype == np.float32
    assert xp_of(a) is xp and xp_of(np.ones(1)) is np


def test_strict_arrays_pickle():
    a = xp.asarray([1.0, 2.0])
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is xp.ndarray and b.get().tolist() == [1.0, 2.0]


def test_importing_ember_does_not_load_the_strict_backend():
    code = "import sys, ember; print('ember._backend.strict' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- devices


def test_device_is_derived_from_the_array():
    c, s = ember.tensor([1.0], device="cpu"), ember.tensor([1.0], device="strict")
    assert c.device == ember.device("cpu") and c.is_cpu and type(c._data) is np.ndarray
    assert s.device == ember.device("strict") and not s.is_cpu and not s.is_cuda
    assert type(s._data) is xp.ndarray and repr(s.device) == "device(type='strict')"
    assert device_of(s._data) == s.device and str(s.device) == "strict"


def test_to_and_cpu_are_copies_and_round_trip():
    c = ember.tensor([1.0, 2.0], device="cpu")
    s = c.to("strict")
    assert s.device.type == "strict" and s.to("strict") is s and c.cpu() is c
    s[0] = 5.0
    assert c[0].item() == 1.0  # a copy
    back = s.cpu()
    assert back.device.type == "cpu" and back.tolist() == [5.0, 2.0]
    assert s.to(ember.device("cpu"), ember.float64).dtype is ember.float64
    assert c.to(s).device == s.device and s.to(c).device == c.device
    assert c.to(device="strict", dtype=ember.int64).dtype is ember.int64


def test_to_device_is_differentiable_as_torch(torch):
    for lib, dev in ((ember, "strict"), (torch, "meta")):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True, device="cpu")
        y = x.to(dev)
        assert type(y.grad_fn).__name__ == "ToCopyBackward0" and y.requires_grad
        assert y.grad_fn.next_functions[0][0] is not None
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True, device="cpu")
    y = x.to("strict") * ember.tensor([2.0, 3.0, 4.0], device="strict")
    y.backward(ember.ones(3, device="strict"))
    assert x.grad.device.type == "cpu" and x.grad.tolist() == [2.0, 3.0, 4.0]
    s = ember.tensor([1.0, 2.0], device="strict", requires_grad=True)
    (g,) = ember.autograd.grad(s.cpu().exp(), s, ember.ones(2, device="cpu"),
                               create_graph=True)
    assert g.device.type == "strict" and g.grad_fn is not None
    assert np.allclose(g.cpu().detach().numpy(), np.exp([1.0, 2.0]))
    x = ember.tensor([1.0], requires_grad=True, device="cpu")
    assert not x.to("strict", ember.int64).requires_grad


def test_numpy_refuses_a_device_tensor_with_torchs_message():
    s = ember.tensor([1.0, 2.0], device="strict")
    msg = ("can't convert strict device type tensor to numpy. Use Tensor.cpu() to copy the "
           "tensor to host memory first.")
    with pytest.raises(TypeError) as err:
        s.numpy()
    assert str(err.value) == msg
    with pytest.raises(TypeError, match="can't convert strict device type tensor"):
        np.asarray(s)
    assert s.numpy(force=True).tolist() == [1.0, 2.0] and s.cpu().numpy().tolist() == [1.0, 2.0]


def test_python_conversions_of_a_device_tensor():
    s = ember.tensor([[1.5, 2.0]], device="strict")
    assert s.tolist() == [[1.5, 2.0]] and s[0, 0].item() == 1.5 and float(s[0, 0]) == 1.5
    assert int(s[0, 1]) == 2 and bool(s[0, 0]) and f"{s[0, 0]:.1f}" == "1.5"
    assert [0, 1, 2][ember.tensor(2, device="strict")] == 2


def test_printing_shows_the_device_as_torch_does_for_cuda():
    # torch: tensor([1., 2.], device='cuda:0', dtype=torch.float64, requires_grad=True)
    assert repr(ember.tensor([1.0, 2.0], device="strict")) == "tensor([1., 2.], device='strict')"
    s = ember.tensor([1.0, 2.0], device="strict", dtype=ember.float64, requires_grad=True)
    assert repr(s) == ("tensor([1., 2.], device='strict', dtype=torch.float64, "
                       "requires_grad=True)")
    assert repr(ember.zeros(2, 0, device="strict")) == "tensor([], device='strict', size=(2, 0))"
    assert repr(ember.tensor([1.0], device="cpu")) == "tensor([1.])"


def test_default_device_is_honoured_by_factories():
    assert ember.get_default_device() == TEST_DEVICE  # cpu unless EMBER_TEST_DEVICE says
    ember.set_default_device("strict")
    assert ember.get_default_device() == ember.device("strict")
    made = [ember.tensor([1.0]), ember.zeros(2), ember.ones(2), ember.empty(2), ember.full((2,), 3),
            ember.arange(3), ember.linspace(0, 1, 3), ember.logspace(0, 1, 3), ember.eye(2),
            ember.rand(2), ember.randn(2), ember.randint(3, (2,)), ember.randperm(3),
            ember.as_tensor(np.ones(2)), ember.scalar_tensor(1.0), ember.Tensor(2, 3)]
    assert all(t.device.type == "strict" for t in made)
    assert ember.from_numpy(np.ones(2)).device.type == "cpu"  # as torch: always the CPU
    c = ember.zeros(2, device="cpu")
    assert c.device.type == "cpu" and ember.zeros_like(c).device.type == "cpu"
    assert all(f(c).device.type == "cpu" for f in (ember.ones_like, ember.rand_like,
                                                     ember.randn_like, ember.empty_like))
    assert ember.zeros_like(c, device="strict").device.type == "strict"
    ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu") and ember.zeros(1).is_cpu


def test_random_draws_are_the_same_on_every_device():
    ember.manual_seed(7)
    a = ember.randn(5, device="strict")
    ember.manual_seed(7)
    assert a.cpu().tolist() == ember.randn(5, device="cpu").tolist()


def test_cuda_is_still_unavailable():
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.zeros(2, device="cuda")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.set_default_device("cuda")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.tensor([1.0]).to("cuda")


def test_tensors_pickle_on_their_device():
    s = pickle.loads(pickle.dumps(ember.tensor([1.0, 2.0], device="strict")))
    assert s.device.type == "strict" and s.tolist() == [1.0, 2.0]


def test_to_device_array_copies_only_across_devices():
    h = np.ones(2)
    assert to_device_array(h, ember.device("cpu")) is h
    s = to_device_array(h, STRICT)
    assert type(s) is xp.ndarray and to_device_array(s, STRICT) is s
    assert type(to_device_array(s, ember.device("cpu"))) is np.ndarray


def test_mixing_devices_in_an_op_raises_naming_both():
    c, s = ember.ones(3, device="cpu"), ember.ones(3, device="strict")
    for a, b in ((c, s), (s, c)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, "
                                               "but found at least two devices, ") as err:
            a + b
        assert "cpu" in str(err.value) and "strict" in str(err.value)
    assert (ember.tensor(2.0, device="cpu") * s).device.type == "strict"  # CPU scalars mix


def test_module_to_device_moves_parameters_buffers_and_grads():
    m = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.BatchNorm1d(2))
    assert m.to("strict") is m
    assert {p.device.type for p in m.parameters()} == {"strict"}
    assert {b.device.type for b in m.buffers()} == {"strict"}
    m(ember.ones(4, 3, device="strict")).sum().backward()
    ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9).step()
    m.cpu()
    assert {p.device.type for p in m.parameters()} == {"cpu"}
    assert {p.grad.device.type for p in m.parameters()} == {"cpu"}
    m.to("strict", ember.float64)
    assert {(p.device.type, p.dtype) for p in m.parameters()} == {("strict", ember.float64)}


def test_allocator_keeps_freed_arrays_unless_opted_out():
    """ember tunes glibc's mallopt at import (ember/_backend/memory.py); EMBER_MALLOPT=0 opts
    out. Where glibc is absent, nothing is applied."""
    import os
    import subprocess
    import sys

    from ember._backend.memory import keep_freed_memory

    code = "from ember._backend.memory import keep_freed_memory as k; print(k())"
    env = dict(os.environ, EMBER_MALLOPT="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "False"
    glibc = sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION") is not None
    assert keep_freed_memory() is glibc


# --------------------------------------------------------------------------- weak_scalar

_WEAK_VALUES = [0.1, 1 / 3, 2.0, 2, -1, 7, 1e-45, 1e-8, 65504.0, 0.5, -2.5, 1e-320, 123456789,
                2 ** 31, 3.3e-5, True]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_weak_scalar_computes_what_the_python_number_does_bit_for_bit(dtype):
    """NumPy 2 casts a weak Python scalar to the array's dtype: the cached 0-d array stands in
    for it with the same bits out, on either side of each arithmetic operator ember's ops and
    rules use it with."""
    import operator
    import warnings

    from ember._backend import weak_scalar

    dt = np.dtype(dtype)
    a = (np.random.default_rng(0).standard_normal(64) * 10).astype(dt)
    a[:4] = [0.0, -0.0, np.inf, np.nan]
    ops = (operator.add, operator.sub, operator.mul, operator.truediv, np.maximum, operator.lt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in _WEAK_VALUES:
            w = weak_scalar(v, dt)
            if abs(v) > float(np.finfo(dt).max):
                assert w is v
                continue
            assert isinstance(w, np.ndarray) and w.ndim == 0 and w.dtype == dt
            assert not w.flags.writeable
            for op in ops:
                for got, want in ((op(a, w), op(a, v)), (op(w, a), op(v, a))):
                    assert got.dtype == want.dtype, (v, op)
                    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (v, op)


def test_weak_scalar_leaves_what_it_cannot_stand_for():
    from ember._backend import _SCALAR_ARRAYS, weak_scalar

    f32 = np.dtype("float32")
    for v in (0.0, -0.0, 0, float("nan"), float("inf"), -float("inf"), 10 ** 400, 1e39):
        assert weak_scalar(v, f32) is v  # (a cache key would lose -0.0's sign; nan != nan)
    assert weak_scalar(3, np.dtype("int64")) == 3 and weak_scalar(2.5, np.dtype("complex64")) == 2.5
    assert weak_scalar(0.25, f32) is weak_scalar(0.25, f32)  # shared
    for k in range(3000):
        weak_scalar(k + 0.5, f32)
    assert len(_SCALAR_ARRAYS) <= 1024  # bounded


# --------------------------------------------------------------------------- matrix_product

# (rows, inner, columns) of ``x @ w.T``: computed swapped (float32), as an outer product of
# vectors (inner size 1), or as NumPy's plain product
_SWAPPED = [(8, 64, 256), (16, 128, 300), (48, 784, 512), (64, 256, 256), (128, 784, 512)]
_OUTER = [(512, 1, 784), (64, 1, 64)]
_DIRECT = [(1, 128, 512), (4, 128, 512), (64, 128, 512), (128, 256, 512), (200, 784, 512),
           (16, 32, 512), (16, 128, 100), (8, 1, 8)]


class _SpyNumpy:
    """``numpy`` for ``_backend``'s functions, recording which of its products they call."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return getattr(np, name)

    def matmul(self, *args, **kwargs):
        self.calls.append("matmul")
        return np.matmul(*args, **kwargs)

    def einsum(self, *args, **kwargs):
        self.calls.append("einsum")
        return np.einsum(*args, **kwargs)


@pytest.mark.parametrize("shape", _SWAPPED + _OUTER + _DIRECT, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_product_takes_the_fast_form_for_its_shapes(monkeypatch, shape, dtype):
    """``x @ w.T`` of 8 to 128 rows is computed as ``(w @ x.T).T`` (float32 only), an outer
    product as one of vectors; the result is the product ``a @ b`` computes, C-ordered,
    either way (bit for bit for the outer product, a single multiply per element)."""
    import ember._backend as backend

    m, k, n = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k)).astype(dtype)
    w = rng.standard_normal((n, k)).astype(dtype)
    if k == 1:
        x[:3, 0] = [-0.0, np.inf, 2.0]
        w[:3, 0] = [5.0, 3.0, -0.0]
    spy = _SpyNumpy()
    monkeypatch.setattr(backend, "numpy", spy)
    with np.errstate(invalid="ignore"):  # (inf * 0 in the plain product of (8, 1, 8))
        got = backend.matrix_product(x, w.T)
    expected = ["matmul"] if shape in _SWAPPED and dtype == "float32" else \
        ["einsum"] if shape in _OUTER else []
    assert spy.calls == expected
    assert got.dtype == x.dtype and got.shape == (m, n) and got.flags.c_contiguous
    with np.errstate(invalid="ignore"):
        want = x @ w.T
    if k == 1:
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # a C-ordered right operand, or a left one not C-ordered: the plain product
    if k > 1:
        spy.calls = []
        for a, b in ((x, np.ascontiguousarray(w.T)), (np.asfortranarray(x), w.T)):
            np.testing.assert_allclose(backend.matrix_product(a, b), want, rtol=1e-5, atol=1e-5)
        assert spy.calls == []


@pytest.mark.parametrize("shape", [(1, 784, 512), *_SWAPPED[:2]], ids=str)
def test_linear_of_few_rows_matches_torch(torch, shape):
    """F.linear (with and without bias, recorded and not) and ``x @ w.t()`` where
    ``matrix_product`` takes another form (batch 1: the weight's gradient is an outer
    product): values and gradients as torch's."""
    m, k, n = shape
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,), (m, n))]
    results = []
    for lib in (ember, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays[:3])
        g = lib.tensor(arrays[3])
        outs = [lib.nn.functional.linear(x, w, b), lib.nn.functional.linear(x, w), x @ w.t()]
        lib.autograd.backward(outs, [g, g, g])
        with lib.no_grad():
            plain = lib.nn.functional.linear(x, w, b)
        results.append([t.detach().cpu().numpy() for t in outs + [plain, x.grad, w.grad, b.grad]])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("wanted", ["both", "matrix", "vector"])
@pytest.mark.parametrize("through_sum", [False, True], ids=["grad", "sum"])
def test_mv_gradients_match_torch(torch, dtype, wanted, through_sum):
    """mv's array backward (the matrix's gradient an outer product): as torch's, for each
    operand needing a gradient alone and both, from a given gradient and from ``sum()``'s
    (a stride-0 array)."""
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((256, 512), (512,), (256,))]
    results = []
    for lib in (ember, torch):
        m = lib.tensor(arrays[0], requires_grad=wanted in ("both", "matrix"))
        v = lib.tensor(arrays[1], requires_grad=wanted in ("both", "vector"))
        if through_sum:
            (m @ v).sum().backward()
        else:
            (m @ v).backward(lib.tensor(arrays[2]))
        results.append([t.grad.cpu().numpy() if t.requires_grad else None for t in (m, v)])
    for got, want in zip(*results):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


# --------------------------------------------------------------------------- expand_array

@pytest.mark.parametrize("src,shape", [((), (64, 10)), ((1, 10), (64, 10)), ((3, 1), (3, 5)),
                                       ((), (0, 4)), ((), (128, 128)), ((), (129, 128)),
                                       ((1,), (40000,))])
def test_expand_array_is_broadcast_to_written_out_when_small(src, shape):
    """``expand_array`` gives ``broadcast_to``'s values bit for bit (nan, -0.0 and inf too);
    up to 16,384 elements as a new contiguous, writable array, beyond that as the read-only
    broadcast view (no copy)."""
    import ember._backend as backend

    values = np.array([np.nan, -0.0, np.inf, 1.5, -2.0, 3.0, 7.0, 0.25, 9.0, -1.0], np.float32)
    a = values[:int(np.prod(src))].reshape(src)
    got = backend.expand_array(a, shape)
    want = np.broadcast_to(a, shape)
    assert got.shape == shape and got.dtype == a.dtype
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    small = int(np.prod(shape)) <= 16384
    assert got.flags.c_contiguous == small or got.size == 0
    assert got.flags.writeable == small
    assert np.shares_memory(got, a) == (not small and got.size > 0)


def test_sum_and_mean_gradients_of_a_small_leaf_accumulate():
    """``x.sum()``'s gradient (written out, no longer a broadcast view) becomes a writable
    ``x.grad``; ``mean``'s backward then adds into that same tensor, as torch."""
    x = ember.zeros(64, 10, requires_grad=True)
    x.sum().backward()
    g = x.grad
    assert g.shape == (64, 10) and bool((g == 1).all())
    assert g._data.flags.writeable and g._data.flags.c_contiguous
    x.mean().backward()
    assert x.grad is g
    np.testing.assert_array_equal(g.cpu().numpy(), np.full((64, 10), 1 + 1 / 640, np.float32))


# --------------------------------------------------------------------------- errstate

def test_errstate_classes_ignore_their_errors_and_keep_the_callers_others():
    """``ignore_divide_invalid()`` and the rest are ``numpy.errstate(...="ignore")``: inside,
    those errors pass quietly even under ``seterr(all="raise")``, the caller's settings for
    the other errors stay, and the state comes back on leaving, also after an exception."""
    from ember._backend import errstate

    one, zero, big = np.float64(1.0), np.float64(0.0), np.float64(1e308)
    with np.errstate(all="raise"):
        before = np.geterr()
        with errstate.ignore_divide_invalid():
            assert np.isinf(one / zero) and np.isnan(zero / zero)
            with pytest.raises(FloatingPointError, match="overflow"):
                big * big  # over: still the caller's "raise"
            with errstate.ignore_over():  # nested: adds to the enclosing state
                assert np.isinf(big * big) and np.isinf(one / zero)
            with pytest.raises(FloatingPointError):
                big * big
        assert np.geterr() == before
        with pytest.raises(FloatingPointError):
            one / zero
        with pytest.raises(KeyError), errstate.ignore_all():
            raise KeyError
        assert np.geterr() == before
        for name in ("all", "divide", "divide_invalid", "divide_over", "divide_invalid_over",
                     "invalid", "invalid_over", "over", "under"):
            with getattr(errstate, f"ignore_{name}")():
                state = np.geterr()
            want = {k: "ignore" if name == "all" or k in name.split("_") else "raise"
                    for k in before}
            assert state == want, name


def test_errstate_quietly_decorates_and_ops_stay_quiet_under_raise():
    """``quietly`` runs a function inside the state; ember's ops that expect 0/0 and log(0)
    give torch's inf/nan under a user's ``seterr(all="raise")``."""
    from ember._backend.errstate import ignore_divide, quietly

    @quietly(ignore_divide)
    def reciprocal(x):
        return 1.0 / x

    with np.errstate(all="raise"):
        assert np.isinf(reciprocal(np.float64(0.0)))
        with pytest.raises(FloatingPointError):
            np.float64(1.0) / np.float64(0.0)
        q = ember.tensor([1.0, 0.0, -1.0]) / ember.tensor([0.0, 0.0, 0.0])
        assert q.tolist()[0] == float("inf") and q.tolist()[2] == float("-inf")
        assert np.isnan(q.tolist()[1])
        assert ember.log(ember.tensor([0.0])).item() == float("-inf")
        assert np.isnan(ember.sqrt(ember.tensor([-1.0])).item())
