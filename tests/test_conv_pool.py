"""Convolution and pooling behaviours beyond the op table: second derivatives against torch's,
torch's NaN and tie rules in max pools, the im2col cache under retain_graph, and a whole
small CNN step against torch."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_torch

import ember
import ember.nn.functional as EF

pytestmark = requires_torch


def _pair(torch, *arrays):
    return ([ember.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _second_order(m, fn, leaves):
    """d/dleaves of sum(grad(fn)^2 * 0.5) + sum(out): exercises every double-backward edge."""
    out = fn(*leaves)
    grads = m.autograd.grad(out.pow(2).sum(), leaves, create_graph=True)
    total = sum((g * g).sum() for g in grads) + out.sum()
    return m.autograd.grad(total, leaves)


CONV_CASES = [
    ("conv2d", (2, 4, 6, 5), (6, 2, 3, 2), {"stride": (2, 1), "padding": 1, "dilation": (1, 2),
                                                "groups": 2}),
    ("conv1d", (2, 3, 7), (2, 3, 3), {"padding": "same"}),
    ("conv_transpose2d", (2, 4, 3, 4), (4, 3, 3, 2), {"stride": 2, "padding": 1,
                                                          "output_padding": (1, 0), "groups": 2}),
    ("conv_transpose1d", (1, 2, 5), (2, 3, 2), {"stride": 3, "dilation": 2, "output_padding": 1}),
]


@pytest.mark.parametrize("name, xs, ws, kw", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv_second_derivatives_match_torch(torch, name, xs, ws, kw):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    e_leaves, t_leaves = _pair(torch, x, w)
    e = _second_order(ember, lambda a, b: getattr(EF, name)(a, b, **kw), e_leaves)
    t = _second_order(torch, lambda a, b: getattr(torch.nn.functional, name)(a, b, **kw),
                      t_leaves)
    for eg, tg in zip(e, t):
        np.testing.assert_allclose(eg.cpu().numpy(), tg.cpu().numpy(), rtol=1e-10, atol=1e-10)


def test_conv_backward_twice_with_retained_graph():
    """The im2col columns kept for d/dweight are used once; a second pass recomputes them."""
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((2, 3, 5, 5)))
    w = ember.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
    y = EF.conv2d(x, w, padding=1).sum()
    (g1,) = ember.autograd.grad(y, [w], retain_graph=True)
    (g2,) = ember.autograd.grad(y, [w])
    np.testing.assert_array_equal(g1.cpu().numpy(), g2.cpu().numpy())


def test_max_pool_nan_and_ties_follow_torch(torch):
    a = np.array([[[[1.0, np.nan, 2.0, np.nan], [3.0, 3.0, 0.0, 5.0],
                    [2.0, 2.0, 7.0, 7.0], [2.0, 2.0, 7.0, 7.0]]]])
    for kw in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1}):
        e_val, e_idx = EF.max_pool2d(ember.tensor(a), return_indices=True, **kw)
        t_val, t_idx = torch.nn.functional.max_pool2d(torch.tensor(a), return_indices=True,
                                                      **kw)
        np.testing.assert_array_equal(e_val.cpu().numpy(), t_val.cpu().numpy())
        np.testing.assert_array_equal(e_idx.cpu().numpy(), t_idx.cpu().numpy())


def test_small_cnn_step_matches_torch(torch):
    """The benchmark's network (conv-relu-pool twice, linear, cross-entropy) in float32:
    loss and every weight gradient agree with torch."""
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.3
              for s in [(16, 1, 3, 3), (16,), (32, 16, 3, 3), (32,), (10, 1568), (10,)]]
    images = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 8)]

    def loss(m, F, params):
        w1, b1, w2, b2, w3, b3 = params
        x = F.max_pool2d(m.relu(F.conv2d(m.tensor(images), w1, b1, padding=1)), 2)
        x = F.max_pool2d(m.relu(F.conv2d(x, w2, b2, padding=1)), 2)
        logits = x.reshape(x.shape[0], -1) @ w3.t() + b3
        shifted = logits - logits.amax(1, keepdim=True)
        logp = shifted - shifted.exp().sum(1, keepdim=True).log()
        return -(logp * m.tensor(onehot)).sum() / 8

    e_params, t_params = _pair(torch, *arrays)
    e_loss, t_loss = loss(ember, EF, e_params), loss(torch, torch.nn.functional, t_params)
    np.testing.assert_allclose(e_loss.item(), t_loss.item(), rtol=1e-5)
    e_grads = ember.autograd.grad(e_loss, e_params)
    t_grads = torch.autograd.grad(t_loss, t_params)
    for eg, tg in zip(e_grads, t_grads):
        np.testing.assert_allclose(eg.cpu().numpy(), tg.cpu().numpy(), rtol=1e-4, atol=1e-5)


def test_pool_indices_are_int64_tuples():
    x = ember.randn(1, 2, 5, 5)
    for out in (EF.max_pool2d(x, 2, return_indices=True),
                EF.adaptive_max_pool2d(x, 3, return_indices=True),
                EF.max_pool1d(x[0], 2, return_indices=True)):
        assert type(out) is tuple and out[1].dtype == ember.int64
        assert not out[1].requires_grad
