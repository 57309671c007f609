"""The shape-specific fast paths of conv and max pool against torch: the shifted-rows im2col
and col2im of stride-1 convolutions whose output is as wide as their input (with the bias
folded into the matmul, and the input gradient computed a few samples at a time), and the
flat one-axis-at-a-time max pool of windows that tile the input. Each case is checked on
shapes that take the fast path and on neighbours that do not."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_torch

import ember
import ember.nn.functional as EF

pytestmark = requires_torch


def _grads(m, fn, arrays, seed):
    leaves = [m.tensor(a, requires_grad=True) for a in arrays]
    out = fn(m, *leaves)
    out.backward(m.tensor(seed))
    return out, [t.grad for t in leaves]


def _assert_close(e, t, err_msg=""):
    t = t.detach().numpy()
    scale = float(np.abs(t).max(initial=1.0))  # float32 sums of many terms: absolute slack
    np.testing.assert_allclose(e.detach().cpu().numpy(), t, rtol=1e-4, atol=1e-5 * scale,
                               err_msg=err_msg)


def _assert_like_torch(torch, fn, arrays):
    """fn(module, *leaves) in ember and torch: equal values and gradients of every leaf, to
    float32 rounding."""
    t_out = fn(torch, *[torch.tensor(a) for a in arrays])
    seed = np.random.default_rng(7).standard_normal(tuple(t_out.shape)).astype(arrays[0].dtype)
    e_out, e_grads = _grads(ember, fn, arrays, seed)
    t_out, t_grads = _grads(torch, fn, arrays, seed)
    _assert_close(e_out, t_out)
    for k, (e, t) in enumerate(zip(e_grads, t_grads)):
        _assert_close(e, t, f"gradient of leaf {k}")


# (input shape, weight shape, conv2d keywords): the first group takes the shifted path
SHIFTED = [
    ((4, 3, 9, 8), (5, 3, 3, 3), {"padding": 1}),
    ((2, 2, 7, 6), (3, 2, 5, 5), {"padding": 2}),
    ((2, 2, 7, 6), (3, 2, 3, 5), {"padding": (1, 2)}),
    ((2, 2, 6, 7), (3, 2, 3, 3), {"padding": (0, 1)}),            # fewer output rows
    ((2, 2, 8, 9), (3, 2, 3, 3), {"padding": 2, "dilation": 2}),
    ((2, 2, 6, 7), (3, 2, 2, 4), {"padding": "same"}),            # uneven padding
    ((2, 4, 5, 6), (6, 2, 3, 3), {"padding": 1, "groups": 2}),    # no bias fold
    ((2, 2, 2, 3), (3, 2, 5, 7), {"padding": (2, 3)}),            # taps only in the padding
    ((2, 3, 4, 1), (2, 3, 3, 1), {"padding": (1, 0)}),            # one column
    ((20, 16, 14, 14), (32, 16, 3, 3), {"padding": 1}),           # several d/dinput chunks
]
OTHERS = [
    ((2, 3, 9, 8), (4, 3, 3, 3), {"padding": 1, "stride": 2}),
    ((2, 3, 9, 8), (4, 3, 3, 3), {}),                             # narrower output
    ((2, 3, 9, 8), (4, 3, 3, 3), {"padding": 1, "stride": (1, 2)}),
    ((2, 3, 9, 8), (4, 3, 1, 1), {}),                             # 1x1: no im2col
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("xs, ws, kw", SHIFTED + OTHERS, ids=[
    f"{'shifted' if k < len(SHIFTED) else 'other'}{k}" for k in range(len(SHIFTED + OTHERS))])
def test_conv2d_paths_match_torch(torch, xs, ws, kw, bias):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(xs).astype(np.float32),
              rng.standard_normal(ws).astype(np.float32)]
    if bias:
        arrays.append(rng.standard_normal(ws[0]).astype(np.float32))
    _assert_like_torch(torch, lambda m, *t: m.nn.functional.conv2d(*t, **kw), arrays)


def test_conv2d_shifted_path_on_a_strided_input(torch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)

    def fn(m, x, w):
        return m.nn.functional.conv2d(x.transpose(0, 1), w, padding=1)
    _assert_like_torch(torch, fn, [x, w])


@pytest.mark.parametrize("kw", [{"padding": 1}, {"padding": 1, "stride": 2},
                                {"padding": 2, "dilation": 2}])
def test_conv_transpose2d_paths_match_torch(torch, kw):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((3, 4, 6, 5)).astype(np.float32),
              rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
              rng.standard_normal(3).astype(np.float32)]
    _assert_like_torch(torch, lambda m, *t: m.nn.functional.conv_transpose2d(*t, **kw), arrays)


@pytest.mark.parametrize("xs, ws, kw", [SHIFTED[0], SHIFTED[3], SHIFTED[5], OTHERS[0]])
def test_conv2d_paths_gradcheck_float64(xs, ws, kw):
    rng = np.random.default_rng(3)
    xs = (2,) + xs[1:]
    leaves = [ember.tensor(rng.standard_normal(s), requires_grad=True)
              for s in (xs, ws, (ws[0],))]
    fn = lambda x, w, b: EF.conv2d(x, w, b, **kw)
    assert ember.autograd.gradcheck(fn, leaves)
    assert ember.autograd.gradgradcheck(fn, leaves)


# --------------------------------------------------------------------------- max pool

POOLS = [
    ("max_pool2d", (3, 4, 8, 6), {"kernel_size": 2}),               # tiling: the flat path
    ("max_pool2d", (2, 3, 9, 6), {"kernel_size": 3}),
    ("max_pool2d", (2, 3, 8, 6), {"kernel_size": (4, 2)}),
    ("max_pool2d", (3, 8, 6), {"kernel_size": (1, 3)}),             # unbatched
    ("max_pool1d", (2, 3, 12), {"kernel_size": 3}),
    ("max_pool3d", (2, 2, 4, 6, 8), {"kernel_size": 2}),
    ("max_pool3d", (2, 2, 4, 6, 8), {"kernel_size": (1, 2, 4)}),
    ("max_pool2d", (2, 3, 9, 6), {"kernel_size": 2}),               # a remainder row
    ("max_pool2d", (2, 3, 8, 6), {"kernel_size": 2, "stride": 1}),  # overlapping windows
    ("max_pool2d", (2, 3, 8, 6), {"kernel_size": 2, "padding": 1}),
]


@pytest.mark.parametrize("name, xs, kw", POOLS, ids=[f"{p[0]}-{k}" for k, p in
                                                      enumerate(POOLS)])
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
def test_max_pool_paths_match_torch_exactly(torch, name, xs, kw, ties):
    """Values, indices and the gradient (routed whole to torch's first maximum) bit for bit
    (to rounding where overlapping windows sum gradients); with ``ties`` the input takes 3
    values, so most windows hold several maxima."""
    rng = np.random.default_rng(4)
    x = (rng.integers(0, 3, xs) if ties else rng.standard_normal(xs)).astype(np.float32)
    e_x = ember.tensor(x, requires_grad=True)
    t_x = torch.tensor(x, requires_grad=True)
    e_y, e_i = getattr(EF, name)(e_x, return_indices=True, **kw)
    t_y, t_i = getattr(torch.nn.functional, name)(t_x, return_indices=True, **kw)
    seed = rng.standard_normal(tuple(t_y.shape)).astype(np.float32)
    e_y.backward(ember.tensor(seed))
    t_y.backward(torch.tensor(seed))
    np.testing.assert_array_equal(e_y.detach().cpu().numpy(), t_y.detach().numpy())
    np.testing.assert_array_equal(e_i.cpu().numpy(), t_i.numpy())
    if "stride" in kw:  # the overlapping case
        np.testing.assert_allclose(e_x.grad.cpu().numpy(), t_x.grad.numpy(), rtol=1e-6)
    else:
        np.testing.assert_array_equal(e_x.grad.cpu().numpy(), t_x.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_max_pool2d_tiling_path_other_dtypes(torch, dtype):
    x = np.random.default_rng(5).integers(-3, 4, (2, 3, 6, 8)).astype(dtype)
    e_y, e_i = EF.max_pool2d(ember.tensor(x), 2, return_indices=True)
    t_y, t_i = torch.nn.functional.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(e_y.cpu().numpy(), t_y.numpy())
    np.testing.assert_array_equal(e_i.cpu().numpy(), t_i.numpy())


def test_max_pool2d_tiling_path_nan_wins(torch):
    x = np.random.default_rng(6).standard_normal((2, 3, 4, 6)).astype(np.float32)
    x[0, 1, 2, 3] = x[1, 2, 0, 0] = x[1, 2, 1, 1] = np.nan
    e_x = ember.tensor(x, requires_grad=True)
    t_x = torch.tensor(x, requires_grad=True)
    e_y, e_i = EF.max_pool2d(e_x, 2, return_indices=True)
    t_y, t_i = torch.nn.functional.max_pool2d(t_x, 2, return_indices=True)
    e_y.sum().backward()
    t_y.sum().backward()
    np.testing.assert_array_equal(e_y.detach().cpu().numpy(), t_y.detach().numpy())
    np.testing.assert_array_equal(e_i.cpu().numpy(), t_i.numpy())
    np.testing.assert_array_equal(e_x.grad.cpu().numpy(), t_x.grad.numpy())


def test_max_pool2d_tiling_path_double_backward(torch):
    x = np.random.default_rng(8).standard_normal((2, 3, 4, 6))
    leaves = [ember.tensor(x, requires_grad=True)]
    assert ember.autograd.gradcheck(lambda a: EF.max_pool2d(a, 2), leaves)
    assert ember.autograd.gradgradcheck(lambda a: EF.max_pool2d(a, 2), leaves)
