"""Layers and functions added with the 3-d pools, max unpooling, grid_sample/affine_grid and
bicubic resizing, against torch: the same inputs through ``torch.nn`` and ``ember.nn`` give the
same outputs, indices and gradients, the same reprs, and the same refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F


def _pair(torch, shape, seed=0, distinct=False):
    """The same float32 input as a torch and an ember leaf."""
    rng = np.random.default_rng(seed)
    if distinct:  # no ties, so the max pools pick one element
        xn = (rng.permutation(int(np.prod(shape))) * 0.25).reshape(shape).astype(np.float32)
    else:
        xn = rng.standard_normal(shape).astype(np.float32)
    return torch.tensor(xn, requires_grad=True), ember.tensor(xn, requires_grad=True)


def _same(e, t, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().cpu().numpy(), rtol=rtol,
                               atol=atol)


def _backward_both(torch, ty, ey, txs, exs):
    """Backpropagate the same random seed through both outputs; compare the input grads."""
    g = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(np.float32)
    tg = torch.autograd.grad(ty, txs, torch.tensor(g))
    eg = ember.autograd.grad(ey, exs, ember.tensor(g))
    for e, t in zip(eg, tg):
        _same(e, t, rtol=1e-4, atol=1e-5)


POOL_LAYERS = [
    ("MaxPool3d", (2,), {}, (2, 3, 4, 6, 5)),
    ("MaxPool3d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (1, 2, 5, 5, 4)),
    ("MaxPool3d", ((2, 1, 2),), {"dilation": (1, 2, 1), "return_indices": True},
     (2, 2, 4, 5, 6)),
    ("AvgPool3d", (2,), {}, (2, 3, 4, 6, 5)),
    ("AvgPool3d", (3, 2, 1), {"count_include_pad": False, "ceil_mode": True}, (3, 5, 4, 5)),
    ("AvgPool3d", ((2, 3, 2),), {"divisor_override": 5}, (1, 2, 4, 6, 5)),
    ("AdaptiveMaxPool3d", ((2, 3, None),), {"return_indices": True}, (2, 2, 5, 7, 3)),
    ("AdaptiveMaxPool3d", (1,), {}, (2, 4, 3, 5)),
    ("AdaptiveAvgPool3d", ((3, 2, 4),), {}, (2, 2, 5, 7, 6)),
    ("AdaptiveAvgPool3d", (1,), {}, (2, 2, 5, 7, 6)),
    ("LPPool3d", (2, 2), {}, (2, 2, 4, 4, 6)),
    ("LPPool3d", (1.5, (2, 3, 2)), {"stride": 1, "ceil_mode": True}, (1, 2, 4, 5, 3)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", POOL_LAYERS)
def test_pool3d_layers_match_torch(torch, name, args, kwargs, shape):
    tm, em = getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)
    assert repr(em) == repr(tm)
    tx, ex = _pair(torch, shape, distinct=True)
    if name == "LPPool3d":  # fractional powers want positive inputs
        tx, ex = (tx.detach().abs() + 0.5).requires_grad_(), (ex.detach().abs() + 0.5)
        ex.requires_grad_()
    ty, ey = tm(tx), em(ex)
    if isinstance(ty, tuple):
        np.testing.assert_array_equal(ey[1].cpu().numpy(), ty[1].cpu().numpy())
        assert ey[1].dtype == ember.int64
        ty, ey = ty[0], ey[0]
    _same(ey, ty)
    _backward_both(torch, ty, ey, [tx], [ex])


@pytest.mark.parametrize("nd, shape, kwargs", [
    (1, (2, 3, 8), {"kernel_size": 2}),
    (1, (3, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (2, (2, 3, 6, 4), {"kernel_size": 2}),
    (2, (1, 2, 7, 5), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (3, (2, 2, 4, 6, 4), {"kernel_size": 2}),
    (3, (2, 5, 4, 6), {"kernel_size": (1, 2, 3), "stride": (1, 2, 3)}),
])
def test_max_unpool_layers_invert_max_pool_as_torch(torch, nd, shape, kwargs):
    """MaxPool with indices then MaxUnpool (to the input size): the maxima back in place,
    zeros elsewhere, and the gradient through both, as torch."""
    tp = getattr(torch.nn, f"MaxPool{nd}d")(return_indices=True, **kwargs)
    ep = getattr(nn, f"MaxPool{nd}d")(return_indices=True, **kwargs)
    tu, eu = getattr(torch.nn, f"MaxUnpool{nd}d")(**kwargs), getattr(nn, f"MaxUnpool{nd}d")(**kwargs)
    assert repr(eu) == repr(tu)
    tx, ex = _pair(torch, shape, distinct=True)
    size = list(shape[-nd:])
    ty, ey = tu(*tp(tx), output_size=size), eu(*ep(ex), output_size=size)
    assert tuple(ey.shape) == tuple(ty.shape)
    _same(ey, ty)
    _backward_both(torch, ty, ey, [tx], [ex])


def test_max_unpool_backward_gathers_at_the_indices(torch):
    """d/dinput of max_unpool2d is the output gradient read at each index; twice
    differentiable (the gather's derivative scatters back)."""
    idx = np.array([[[[0, 3], [9, 14]]]])
    x = ember.tensor(np.arange(1.0, 5.0).reshape(1, 1, 2, 2), requires_grad=True)
    y = F.max_unpool2d(x, ember.tensor(idx), 2)
    assert y.grad_fn.name() == "MaxUnpool2DBackward0"
    g = ember.arange(16.0).reshape(1, 1, 4, 4).requires_grad_()
    (dx,) = ember.autograd.grad(y, x, g, create_graph=True)
    np.testing.assert_array_equal(dx.detach().cpu().numpy().ravel(), [0.0, 3.0, 9.0, 14.0])
    (dg,) = ember.autograd.grad(dx.sum(), g)
    assert dg.cpu().numpy().ravel()[[0, 3, 9, 14]].tolist() == [1.0] * 4 and dg.sum().item() == 4.0
    assert ember.autograd.gradgradcheck(
        lambda t: F.max_unpool2d(t, ember.tensor(idx), 2),
        [ember.tensor(np.random.default_rng(0).standard_normal((1, 1, 2, 2)),
                      requires_grad=True)])


def test_max_unpool_layer_refuses_as_torch(torch):
    tu, eu = torch.nn.MaxUnpool2d(2), nn.MaxUnpool2d(2)
    x = np.ones((1, 1, 2, 2), np.float32)
    idx = np.array([[[[0, 3], [9, 14]]]])
    with pytest.raises(ValueError) as t_err:
        tu(torch.tensor(x), torch.tensor(idx), output_size=[9, 9])
    with pytest.raises(ValueError) as e_err:
        eu(ember.tensor(x), ember.tensor(idx), output_size=[9, 9])
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch_in_input_and_grid(torch, mode, padding_mode, align_corners):
    tx, ex = _pair(torch, (2, 3, 5, 6))
    rng = np.random.default_rng(2)
    gn = rng.uniform(-1.4, 1.4, (2, 4, 3, 2)).astype(np.float32)
    tg, eg = torch.tensor(gn, requires_grad=True), ember.tensor(gn, requires_grad=True)
    kw = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    ty, ey = torch.nn.functional.grid_sample(tx, tg, **kw), F.grid_sample(ex, eg, **kw)
    _same(ey, ty)
    _backward_both(torch, ty, ey, [tx, tg], [ex, eg])


def test_grid_sample_5d_trilinear_matches_torch(torch):
    tx, ex = _pair(torch, (2, 2, 4, 3, 5))
    gn = np.random.default_rng(3).uniform(-1.2, 1.2, (2, 3, 2, 2, 3)).astype(np.float32)
    tg, eg = torch.tensor(gn, requires_grad=True), ember.tensor(gn, requires_grad=True)
    ty = torch.nn.functional.grid_sample(tx, tg, padding_mode="border", align_corners=False)
    ey = F.grid_sample(ex, eg, padding_mode="border", align_corners=False)
    _same(ey, ty)
    _backward_both(torch, ty, ey, [tx, tg], [ex, eg])


def test_grid_sample_identity_grid_reproduces_the_input():
    """affine_grid of the identity, sampled with the same align_corners, is the input."""
    x = ember.randn(1, 2, 4, 5)
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    for ac in (False, True):
        grid = F.affine_grid(theta, [1, 2, 4, 5], align_corners=ac)
        np.testing.assert_allclose(F.grid_sample(x, grid, align_corners=ac).cpu().numpy(),
                                   x.cpu().numpy(), atol=1e-6)


def test_grid_sample_and_affine_grid_warn_without_align_corners(torch):
    x, grid = ember.randn(1, 1, 3, 3), ember.zeros(1, 2, 2, 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, grid)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(ember.zeros(1, 2, 3), [1, 1, 3, 3])


def test_spatial_transformer_step_matches_torch(torch):
    """theta -> affine_grid -> grid_sample -> loss: the gradient reaches theta as in torch."""
    th_n = np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, -0.2]]] * 2, np.float32)
    tt, et = torch.tensor(th_n, requires_grad=True), ember.tensor(th_n, requires_grad=True)
    tx, ex = _pair(torch, (2, 3, 6, 5))
    ty = torch.nn.functional.grid_sample(
        tx, torch.nn.functional.affine_grid(tt, [2, 3, 4, 4], align_corners=False),
        align_corners=False)
    ey = F.grid_sample(ex, F.affine_grid(et, [2, 3, 4, 4], align_corners=False),
                       align_corners=False)
    _same(ey, ty)
    _backward_both(torch, ty, ey, [tx, tt], [ex, et])


@pytest.mark.parametrize("kwargs", [{"scale_factor": 2}, {"size": (7, 3)},
                                    {"scale_factor": 1.5, "align_corners": True}])
def test_upsample_layer_bicubic_matches_torch(torch, kwargs):
    tm = torch.nn.Upsample(mode="bicubic", **kwargs)
    em = nn.Upsample(mode="bicubic", **kwargs)
    assert repr(em) == repr(tm)
    tx, ex = _pair(torch, (2, 3, 4, 5))
    ty, ey = tm(tx), em(ex)
    assert ey.grad_fn.name() == ty.grad_fn.name() == "UpsampleBicubic2DBackward0"
    _same(ey, ty)
    _backward_both(torch, ty, ey, [tx], [ex])


def test_interpolate_antialias_is_refused_by_name():
    x = ember.randn(1, 1, 4, 4)
    for mode in ("bilinear", "bicubic"):
        with pytest.raises(NotImplementedError, match="antialias=True"):
            F.interpolate(x, size=(2, 2), mode=mode, antialias=True)


def test_functional_tanh_and_sigmoid_are_torchs(torch):
    x = ember.tensor([-2.0, 0.0, 3.0])
    _same(F.sigmoid(x), torch.sigmoid(torch.tensor([-2.0, 0.0, 3.0])))
    _same(F.tanh(x), torch.tanh(torch.tensor([-2.0, 0.0, 3.0])))


def test_upsample_spellings_warn_deprecated(torch):
    x = ember.randn(1, 1, 2, 2)
    for fn in (F.upsample, F.upsample_nearest, F.upsample_bilinear):
        with pytest.warns(UserWarning, match="is deprecated"):
            fn(x, scale_factor=2)


def test_gumbel_softmax_samples_a_simplex_and_hard_is_one_hot_straight_through():
    ember.manual_seed(0)
    logits = ember.randn(64, 5, requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().cpu().numpy(), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.detach().cpu().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    (g,) = ember.autograd.grad((hard * ember.arange(5.0)).sum(), logits)
    assert np.abs(g.cpu().numpy()).sum() > 0  # the soft sample's gradient passes through
    # a much larger logit wins almost always
    big = ember.tensor([[0.0, 0.0, 8.0]] * 200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        picks = F.gumbel_softmax(big, hard=True).argmax(-1).cpu().numpy()
    assert (picks == 2).mean() > 0.95
