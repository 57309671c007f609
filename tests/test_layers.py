"""The basic layers against torch.nn: outputs and gradients with copied parameters (train and
eval), reprs, state_dict keys, default initialisation statistics, BatchNorm running stats."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn as enn

# --------------------------------------------------------------------------- input makers
# each returns (numpy array, requires_grad)


def f32(*shape):
    return lambda rng: (rng.standard_normal(shape).astype(np.float32), True)


def f64(*shape):
    return lambda rng: (rng.standard_normal(shape), True)


def prob(*shape):
    return lambda rng: (rng.uniform(0.05, 0.95, shape).astype(np.float32), True)


def pos(*shape):
    return lambda rng: (rng.uniform(0.2, 2.0, shape).astype(np.float32), True)


def prob_const(*shape):
    return lambda rng: (rng.uniform(0, 1, shape).astype(np.float32), False)


def idx(high, *shape):
    return lambda rng: (rng.integers(0, high, shape).astype(np.int64), False)


def sign(*shape):
    return lambda rng: (np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32), False)


def const(array):
    return lambda rng: (np.asarray(array), False)


def _pair_of(torch, arr, grad):
    t = torch.tensor(arr, requires_grad=grad)
    e = ember.tensor(arr, requires_grad=grad)
    return t, e


def _copy_params(tm, em):
    """Load torch's state (parameters and buffers) into the ember module."""
    em.load_state_dict({k: ember.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()})


def _close(a, b, tol):
    a = a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().cpu().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


def check_layer(torch, make, inputs, train=True, tol=1e-5, seed=0, clone=True):
    """Build ``make(nn)`` in torch and ember, copy torch's state, run the same inputs and compare
    outputs, input gradients and parameter gradients."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    tm = make(torch.nn)
    em = make(enn)
    _copy_params(tm, em)
    tm.train(train)
    em.train(train)
    arrays = [mk(rng) for mk in inputs]
    pairs = [_pair_of(torch, a, g) for a, g in arrays]
    # in-place layers need non-leaf inputs: feed clones (the gradient still reaches the leaf)
    t_in = [t.clone() if (clone and g) else t for (t, _), (_, g) in zip(pairs, arrays)]
    e_in = [e.clone() if (clone and g) else e for (_, e), (_, g) in zip(pairs, arrays)]
    tout = tm(*t_in)
    eout = em(*e_in)
    _close(tout, eout, tol)
    if tout.requires_grad:
        g = rng.standard_normal(tuple(tout.shape)).astype(tout.detach().cpu().numpy().dtype)
        tout.backward(torch.tensor(g))
        eout.backward(ember.tensor(g))
        for (t, e), (_, req) in zip(pairs, arrays):
            if req:
                _close(t.grad, e.grad, tol)
        eparams = dict(em.named_parameters())
        for name, p in tm.named_parameters():
            if p.grad is not None:
                assert eparams[name].grad is not None, name
                _close(p.grad, eparams[name].grad, tol)
    for name, b in tm.named_buffers():
        _close(b, dict(em.named_buffers())[name], tol)
    return tm, em


# --------------------------------------------------------------------------- the layer table
# (id, constructor taking the nn namespace, inputs, modes)

BOTH = (True, False)
LAYERS = [
    # linear
    ("Identity", lambda nn: nn.Identity(3, foo=1), [f32(2, 3)], (True,)),
    ("Linear", lambda nn: nn.Linear(5, 3), [f32(4, 5)], (True,)),
    ("Linear-3d", lambda nn: nn.Linear(5, 3), [f32(2, 4, 5)], (True,)),
    ("Linear-1d", lambda nn: nn.Linear(5, 3), [f32(5)], (True,)),
    ("Linear-nobias", lambda nn: nn.Linear(5, 3, bias=False), [f32(4, 5)], (True,)),
    ("Linear-f64", lambda nn: nn.Linear(5, 3, dtype=nn._f64), [f64(4, 5)], (True,)),
    ("Bilinear", lambda nn: nn.Bilinear(3, 4, 2), [f32(5, 3), f32(5, 4)], (True,)),
    ("Bilinear-nobias", lambda nn: nn.Bilinear(3, 4, 2, bias=False), [f32(5, 3), f32(5, 4)],
     (True,)),
    # activations
    ("ReLU", lambda nn: nn.ReLU(), [f32(3, 4)], (True,)),
    ("ReLU-inplace", lambda nn: nn.ReLU(inplace=True), [f32(3, 4)], (True,)),
    ("ReLU6", lambda nn: nn.ReLU6(), [f32(3, 4) if False else (lambda r: (
        (r.standard_normal((3, 4)) * 5).astype(np.float32), True))], (True,)),
    ("LeakyReLU", lambda nn: nn.LeakyReLU(0.2), [f32(3, 4)], (True,)),
    ("LeakyReLU-inplace", lambda nn: nn.LeakyReLU(0.2, True), [f32(3, 4)], (True,)),
    ("ELU", lambda nn: nn.ELU(alpha=0.7), [f32(3, 4)], (True,)),
    ("ELU-inplace", lambda nn: nn.ELU(inplace=True), [f32(3, 4)], (True,)),
    ("SELU", lambda nn: nn.SELU(), [f32(3, 4)], (True,)),
    ("CELU", lambda nn: nn.CELU(1.5), [f32(3, 4)], (True,)),
    ("GELU", lambda nn: nn.GELU(), [f32(3, 4)], (True,)),
    ("GELU-tanh", lambda nn: nn.GELU(approximate="tanh"), [f32(3, 4)], (True,)),
    ("SiLU", lambda nn: nn.SiLU(), [f32(3, 4)], (True,)),
    ("SiLU-inplace", lambda nn: nn.SiLU(inplace=True), [f32(3, 4)], (True,)),
    ("Mish", lambda nn: nn.Mish(), [f32(3, 4)], (True,)),
    ("Softplus", lambda nn: nn.Softplus(beta=2.0, threshold=1.0), [f32(3, 4)], (True,)),
    ("Softsign", lambda nn: nn.Softsign(), [f32(3, 4)], (True,)),
    ("Hardtanh", lambda nn: nn.Hardtanh(-0.5, 0.7), [f32(3, 4)], (True,)),
    ("Hardsigmoid", lambda nn: nn.Hardsigmoid(), [lambda r: (
        (r.standard_normal((3, 4)) * 4).astype(np.float32), True)], (True,)),
    ("Hardswish", lambda nn: nn.Hardswish(), [lambda r: (
        (r.standard_normal((3, 4)) * 4).astype(np.float32), True)], (True,)),
    ("LogSigmoid", lambda nn: nn.LogSigmoid(), [f32(3, 4)], (True,)),
    ("Tanh", lambda nn: nn.Tanh(), [f32(3, 4)], (True,)),
    ("Sigmoid", lambda nn: nn.Sigmoid(), [f32(3, 4)], (True,)),
    ("Tanhshrink", lambda nn: nn.Tanhshrink(), [f32(3, 4)], (True,)),
    ("Softshrink", lambda nn: nn.Softshrink(0.3), [f32(3, 4)], (True,)),
    ("Hardshrink", lambda nn: nn.Hardshrink(0.3), [f32(3, 4)], (True,)),
    ("Threshold", lambda nn: nn.Threshold(0.1, 20.0), [f32(3, 4)], (True,)),
    ("PReLU", lambda nn: nn.PReLU(), [f32(2, 3, 4)], (True,)),
    ("PReLU-channels", lambda nn: nn.PReLU(3, init=0.1), [f32(2, 3, 4)], (True,)),
    ("RReLU-eval", lambda nn: nn.RReLU(0.1, 0.3), [f32(3, 4)], (False,)),
    ("GLU", lambda nn: nn.GLU(), [f32(3, 4)], (True,)),
    ("GLU-dim0", lambda nn: nn.GLU(0), [f32(4, 3)], (True,)),
    ("Softmax", lambda nn: nn.Softmax(dim=1), [f32(3, 4)], (True,)),
    ("LogSoftmax", lambda nn: nn.LogSoftmax(dim=-1), [f32(3, 4)], (True,)),
    ("Softmin", lambda nn: nn.Softmin(dim=0), [f32(3, 4)], (True,)),
    ("Softmax2d", lambda nn: nn.Softmax2d(), [f32(2, 3, 4, 5)], (True,)),
    ("Softmax2d-3d", lambda nn: nn.Softmax2d(), [f32(3, 4, 5)], (True,)),
    # dropout in eval mode is the identity
    ("Dropout-eval", lambda nn: nn.Dropout(0.3), [f32(3, 4)], (False,)),
    ("Dropout-p0", lambda nn: nn.Dropout(0.0), [f32(3, 4)], (True,)),
    ("Dropout1d-eval", lambda nn: nn.Dropout1d(), [f32(2, 3, 4)], (False,)),
    ("Dropout2d-eval", lambda nn: nn.Dropout2d(), [f32(2, 3, 4, 4)], (False,)),
    ("Dropout3d-eval", lambda nn: nn.Dropout3d(), [f32(2, 3, 2, 2, 2)], (False,)),
    ("AlphaDropout-eval", lambda nn: nn.AlphaDropout(0.2), [f32(3, 4)], (False,)),
    ("FeatureAlphaDropout-eval", lambda nn: nn.FeatureAlphaDropout(0.2), [f32(2, 3, 4)],
     (False,)),
    # normalisation
    ("BatchNorm1d", lambda nn: nn.BatchNorm1d(3), [f32(5, 3)], BOTH),
    ("BatchNorm1d-3d", lambda nn: nn.BatchNorm1d(3), [f32(5, 3, 4)], BOTH),
    ("BatchNorm1d-noaffine", lambda nn: nn.BatchNorm1d(3, affine=False), [f32(5, 3)], BOTH),
    ("BatchNorm1d-nobias", lambda nn: nn.BatchNorm1d(3, bias=False), [f32(5, 3)], BOTH),
    ("BatchNorm1d-notrack", lambda nn: nn.BatchNorm1d(3, track_running_stats=False),
     [f32(5, 3)], BOTH),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(3), [f32(2, 3, 4, 5)], BOTH),
    ("BatchNorm2d-momNone", lambda nn: nn.BatchNorm2d(3, momentum=None), [f32(2, 3, 4, 5)],
     BOTH),
    ("BatchNorm3d", lambda nn: nn.BatchNorm3d(2, eps=1e-3, momentum=0.3),
     [f32(2, 2, 3, 3, 3)], BOTH),
    ("LayerNorm", lambda nn: nn.LayerNorm(4), [f32(3, 4)], (True,)),
    ("LayerNorm-2d", lambda nn: nn.LayerNorm([3, 4], eps=1e-3), [f32(2, 3, 4)], (True,)),
    ("LayerNorm-nobias", lambda nn: nn.LayerNorm(4, bias=False), [f32(3, 4)], (True,)),
    ("LayerNorm-noaffine", lambda nn: nn.LayerNorm(4, elementwise_affine=False), [f32(3, 4)],
     (True,)),
    ("GroupNorm", lambda nn: nn.GroupNorm(2, 4), [f32(3, 4, 5)], (True,)),
    ("GroupNorm-noaffine", lambda nn: nn.GroupNorm(2, 6, affine=False), [f32(3, 6, 2, 2)],
     (True,)),
    ("InstanceNorm1d", lambda nn: nn.InstanceNorm1d(3), [f32(2, 3, 5)], BOTH),
    ("InstanceNorm1d-unbatched", lambda nn: nn.InstanceNorm1d(3), [f32(3, 5)], (True,)),
    ("InstanceNorm1d-affine-track",
     lambda nn: nn.InstanceNorm1d(3, affine=True, track_running_stats=True), [f32(2, 3, 5)],
     BOTH),
    ("InstanceNorm2d", lambda nn: nn.InstanceNorm2d(3, affine=True), [f32(2, 3, 4, 4)], BOTH),
    ("InstanceNorm3d", lambda nn: nn.InstanceNorm3d(2), [f32(2, 2, 3, 3, 3)], (True,)),
    ("LocalResponseNorm", lambda nn: nn.LocalResponseNorm(3), [f32(2, 5, 4)], (True,)),
    ("LocalResponseNorm-4d", lambda nn: nn.LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0),
     [f32(2, 5, 3, 3)], (True,)),
    # embeddings
    ("Embedding", lambda nn: nn.Embedding(10, 3), [idx(10, 4, 5)], (True,)),
    ("Embedding-padding", lambda nn: nn.Embedding(10, 3, padding_idx=2), [const(
        [[2, 3, 2], [0, 9, 2]])], (True,)),
    ("Embedding-negpadding", lambda nn: nn.Embedding(10, 3, padding_idx=-1), [const(
        [[9, 3, 9], [0, 9, 2]])], (True,)),
    ("Embedding-scalefreq", lambda nn: nn.Embedding(10, 3, scale_grad_by_freq=True), [const(
        [[2, 3, 2], [0, 2, 2]])], (True,)),
    ("Embedding-maxnorm", lambda nn: nn.Embedding(10, 3, max_norm=1.0), [idx(10, 6)], (True,)),
    ("EmbeddingBag-2d", lambda nn: nn.EmbeddingBag(10, 3), [idx(10, 4, 3)], (True,)),
    ("EmbeddingBag-sum", lambda nn: nn.EmbeddingBag(10, 3, mode="sum"),
     [const([1, 2, 3, 4, 3, 3, 0, 9]), const([0, 2, 2, 5])], (True,)),
    ("EmbeddingBag-mean", lambda nn: nn.EmbeddingBag(10, 3, mode="mean"),
     [const([1, 2, 3, 4, 3, 3, 0, 9]), const([0, 2, 2, 5])], (True,)),
    ("EmbeddingBag-max", lambda nn: nn.EmbeddingBag(10, 3, mode="max"),
     [const([1, 2, 3, 4, 3, 3, 0, 9]), const([0, 2, 2, 5])], (True,)),
    ("EmbeddingBag-max-2d", lambda nn: nn.EmbeddingBag(10, 3, mode="max"), [idx(10, 4, 3)],
     (True,)),
    ("EmbeddingBag-padding", lambda nn: nn.EmbeddingBag(10, 3, mode="mean", padding_idx=3),
     [const([1, 2, 3, 4, 3, 3, 0, 9]), const([0, 2, 2, 5])], (True,)),
    ("EmbeddingBag-lastoffset",
     lambda nn: nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True),
     [const([1, 2, 3, 4, 3, 3, 0, 9]), const([0, 2, 2, 8])], (True,)),
    ("EmbeddingBag-psw", lambda nn: nn.EmbeddingBag(10, 3, mode="sum"),
     [const([1, 2, 3, 4, 3, 3, 0, 9]), const([0, 2, 2, 5]), f32(8)], (True,)),
    # misc
    ("Flatten", lambda nn: nn.Flatten(), [f32(2, 3, 4, 5)], (True,)),
    ("Flatten-args", lambda nn: nn.Flatten(0, 2), [f32(2, 3, 4, 5)], (True,)),
    ("Unflatten", lambda nn: nn.Unflatten(1, (2, 3)), [f32(4, 6, 2)], (True,)),
    ("Upsample-nearest", lambda nn: nn.Upsample(scale_factor=2), [f32(1, 2, 3, 3)], (True,)),
    ("Upsample-size-bilinear", lambda nn: nn.Upsample(size=(5, 7), mode="bilinear"),
     [f32(1, 2, 3, 3)], (True,)),
    ("Upsample-linear-ac", lambda nn: nn.Upsample(scale_factor=3, mode="linear",
                                                  align_corners=True), [f32(1, 2, 4)], (True,)),
    ("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(scale_factor=2),
     [f32(1, 2, 3, 3)], (True,)),
    ("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(size=(4, 6)),
     [f32(1, 2, 3, 3)], (True,)),
    ("PixelShuffle", lambda nn: nn.PixelShuffle(2), [f32(1, 8, 3, 3)], (True,)),
    ("PixelUnshuffle", lambda nn: nn.PixelUnshuffle(2), [f32(1, 2, 4, 6)], (True,)),
    ("ChannelShuffle", lambda nn: nn.ChannelShuffle(2), [f32(2, 6, 3)], (True,)),
    ("ZeroPad1d", lambda nn: nn.ZeroPad1d((1, 2)), [f32(2, 3, 4)], (True,)),
    ("ZeroPad2d", lambda nn: nn.ZeroPad2d(2), [f32(1, 2, 3, 3)], (True,)),
    ("ZeroPad2d-tuple", lambda nn: nn.ZeroPad2d((1, 2, 0, 3)), [f32(1, 2, 3, 3)], (True,)),
    ("ConstantPad1d", lambda nn: nn.ConstantPad1d(2, 3.5), [f32(2, 3, 4)], (True,)),
    ("ConstantPad2d", lambda nn: nn.ConstantPad2d((1, 0, 2, 1), -1.0), [f32(1, 2, 3, 3)],
     (True,)),
    ("ConstantPad3d", lambda nn: nn.ConstantPad3d(1, 0.5), [f32(1, 1, 2, 2, 2)], (True,)),
    ("ReflectionPad1d", lambda nn: nn.ReflectionPad1d((2, 1)), [f32(2, 3, 4)], (True,)),
    ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d(1), [f32(1, 2, 3, 3)], (True,)),
    ("ReplicationPad1d", lambda nn: nn.ReplicationPad1d((2, 1)), [f32(2, 3, 4)], (True,)),
    ("ReplicationPad2d", lambda nn: nn.ReplicationPad2d((1, 2, 3, 0)), [f32(1, 2, 3, 3)],
     (True,)),
    ("CircularPad1d", lambda nn: nn.CircularPad1d(1), [f32(2, 3, 4)], (True,)),
    ("CircularPad2d", lambda nn: nn.CircularPad2d((1, 2, 1, 0)), [f32(1, 2, 3, 3)], (True,)),
    ("CosineSimilarity", lambda nn: nn.CosineSimilarity(), [f32(4, 5), f32(4, 5)], (True,)),
    ("CosineSimilarity-dim", lambda nn: nn.CosineSimilarity(dim=0, eps=1e-6),
     [f32(4, 5), f32(4, 5)], (True,)),
    ("PairwiseDistance", lambda nn: nn.PairwiseDistance(), [f32(4, 5), f32(4, 5)], (True,)),
    ("PairwiseDistance-p1-keep", lambda nn: nn.PairwiseDistance(p=1.0, keepdim=True),
     [f32(4, 5), f32(4, 5)], (True,)),
    ("Fold", lambda nn: nn.Fold(output_size=(4, 5), kernel_size=2), [f32(2, 12, 12)], (True,)),
    ("Fold-stride", lambda nn: nn.Fold((5, 5), 3, padding=1, stride=2), [f32(1, 18, 9)],
     (True,)),
    ("Unfold", lambda nn: nn.Unfold(kernel_size=2), [f32(2, 3, 4, 5)], (True,)),
    ("Unfold-args", lambda nn: nn.Unfold((2, 3), dilation=2, padding=1, stride=(2, 1)),
     [f32(1, 2, 5, 6)], (True,)),
]


@pytest.fixture(autouse=True)
def _f64_alias(torch):
    """``nn._f64``: float64 in whichever namespace the constructor receives."""
    torch.nn._f64 = torch.float64
    enn._f64 = ember.float64
    yield
    del torch.nn._f64
    del enn._f64


@pytest.mark.parametrize("name,make,inputs,modes", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(torch, name, make, inputs, modes):
    for train in modes:
        check_layer(torch, make, inputs, train=train)


@pytest.mark.parametrize("name,make,inputs,modes", LAYERS, ids=[c[0] for c in LAYERS])
def test_state_dict_keys_and_shapes(torch, name, make, inputs, modes):
    tm, em = make(torch.nn), make(enn)
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(tsd) == list(esd)
    for k in tsd:
        assert tuple(tsd[k].shape) == tuple(esd[k].shape), k
        assert str(tsd[k].dtype) == str(esd[k].dtype), k
    assert [n for n, _ in tm.named_parameters()] == [n for n, _ in em.named_parameters()]
    assert [n for n, _ in tm.named_buffers()] == [n for n, _ in em.named_buffers()]


@pytest.mark.parametrize("name,make,inputs,modes", LAYERS, ids=[c[0] for c in LAYERS])
def test_repr(torch, name, make, inputs, modes):
    assert repr(make(enn)) == repr(make(torch.nn))


# --------------------------------------------------------------------------- losses

LOSSES = [
    ("MSELoss", lambda nn: nn.MSELoss(), [f32(3, 4), f32(3, 4)]),
    ("MSELoss-sum", lambda nn: nn.MSELoss(reduction="sum"), [f32(3, 4), f32(3, 4)]),
    ("MSELoss-none", lambda nn: nn.MSELoss(reduction="none"), [f32(3, 4), f32(3, 4)]),
    ("L1Loss", lambda nn: nn.L1Loss(), [f32(3, 4), f32(3, 4)]),
    ("SmoothL1Loss", lambda nn: nn.SmoothL1Loss(beta=0.5), [f32(3, 4), f32(3, 4)]),
    ("HuberLoss", lambda nn: nn.HuberLoss(delta=0.7, reduction="sum"), [f32(3, 4), f32(3, 4)]),
    ("CrossEntropyLoss", lambda nn: nn.CrossEntropyLoss(), [f32(5, 4), idx(4, 5)]),
    ("CrossEntropyLoss-opts", lambda nn: nn.CrossEntropyLoss(
        weight=nn._w4, ignore_index=1, label_smoothing=0.1),
     [f32(5, 4), idx(4, 5)]),
    ("CrossEntropyLoss-2d", lambda nn: nn.CrossEntropyLoss(reduction="none"),
     [f32(2, 4, 3, 3), idx(4, 2, 3, 3)]),
    ("CrossEntropyLoss-probs", lambda nn: nn.CrossEntropyLoss(), [f32(5, 4), prob_const(5, 4)]),
    ("NLLLoss", lambda nn: nn.NLLLoss(), [f32(5, 4), idx(4, 5)]),
    ("NLLLoss-weight", lambda nn: nn.NLLLoss(weight=nn._w4, reduction="sum"),
     [f32(5, 4), idx(4, 5)]),
    ("BCELoss", lambda nn: nn.BCELoss(), [prob(3, 4), prob_const(3, 4)]),
    ("BCELoss-weight", lambda nn: nn.BCELoss(weight=nn._w4),
     [prob(3, 4), prob_const(3, 4)]),
    ("BCEWithLogitsLoss", lambda nn: nn.BCEWithLogitsLoss(), [f32(3, 4), prob_const(3, 4)]),
    ("BCEWithLogitsLoss-pos", lambda nn: nn.BCEWithLogitsLoss(
        weight=nn._w4, pos_weight=nn._w4 * 2),
     [f32(3, 4), prob_const(3, 4)]),
    ("KLDivLoss", lambda nn: nn.KLDivLoss(reduction="batchmean"), [f32(3, 4), prob_const(3, 4)]),
    ("KLDivLoss-logtarget", lambda nn: nn.KLDivLoss(reduction="sum", log_target=True),
     [f32(3, 4), f32(3, 4)]),
    ("PoissonNLLLoss", lambda nn: nn.PoissonNLLLoss(), [f32(3, 4), pos(3, 4)]),
    ("PoissonNLLLoss-full", lambda nn: nn.PoissonNLLLoss(log_input=False, full=True),
     [pos(3, 4), pos(3, 4)]),
    ("GaussianNLLLoss", lambda nn: nn.GaussianNLLLoss(), [f32(3, 4), f32(3, 4), pos(3, 4)]),
    ("GaussianNLLLoss-full", lambda nn: nn.GaussianNLLLoss(full=True, reduction="sum"),
     [f32(3, 4), f32(3, 4), pos(3, 1)]),
    ("CosineEmbeddingLoss", lambda nn: nn.CosineEmbeddingLoss(margin=0.2),
     [f32(5, 4), f32(5, 4), sign(5)]),
    ("MarginRankingLoss", lambda nn: nn.MarginRankingLoss(margin=0.3),
     [f32(5), f32(5), sign(5)]),
    ("HingeEmbeddingLoss", lambda nn: nn.HingeEmbeddingLoss(margin=0.5),
     [f32(3, 4), sign(3, 4)]),
    ("SoftMarginLoss", lambda nn: nn.SoftMarginLoss(), [f32(3, 4), sign(3, 4)]),
    ("MultiLabelSoftMarginLoss", lambda nn: nn.MultiLabelSoftMarginLoss(
        weight=nn._w4), [f32(3, 4), prob_const(3, 4)]),
    ("MultiMarginLoss", lambda nn: nn.MultiMarginLoss(), [f32(5, 4), idx(4, 5)]),
    ("MultiMarginLoss-p2", lambda nn: nn.MultiMarginLoss(p=2, margin=0.5,
                                                         weight=nn._w4),
     [f32(5, 4), idx(4, 5)]),
    ("MultiLabelMarginLoss", lambda nn: nn.MultiLabelMarginLoss(),
     [f32(2, 4), const([[3, 0, -1, 1], [1, 2, 3, -1]])]),
    ("TripletMarginLoss", lambda nn: nn.TripletMarginLoss(margin=0.5, swap=True),
     [f32(5, 4), f32(5, 4), f32(5, 4)]),
    ("TripletMarginWithDistanceLoss", lambda nn: nn.TripletMarginWithDistanceLoss(margin=2.0),
     [f32(5, 4), f32(5, 4), f32(5, 4)]),
    ("TripletMarginWithDistanceLoss-fn", lambda nn: nn.TripletMarginWithDistanceLoss(
        distance_function=nn.CosineSimilarity(), swap=True, reduction="none"),
     [f32(5, 4), f32(5, 4), f32(5, 4)]),
]


@pytest.fixture(autouse=True)
def _w4_alias(torch):
    """``nn._w4``: a fixed 4-element weight tensor in each namespace."""
    w = np.array([0.5, 1.0, 2.0, 1.5], dtype=np.float32)
    torch.nn._w4 = torch.tensor(w)
    enn._w4 = ember.tensor(w)
    yield
    del torch.nn._w4
    del enn._w4


@pytest.mark.parametrize("name,make,inputs", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_matches_torch(torch, name, make, inputs):
    check_layer(torch, make, inputs, clone=False)


@pytest.mark.parametrize("name,make,inputs", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_repr_and_state_dict(torch, name, make, inputs):
    tm, em = make(torch.nn), make(enn)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in em.named_buffers()] == [n for n, _ in tm.named_buffers()]


def test_loss_weight_is_buffer(torch):
    w = ember.tensor([1.0, 2.0, 3.0])
    loss = enn.CrossEntropyLoss(weight=w)
    assert "weight" in loss._buffers and loss.weight is w
    assert list(loss.state_dict()) == ["weight"]
    b = enn.BCEWithLogitsLoss(pos_weight=w)
    assert list(b._buffers) == ["weight", "pos_weight"]
    assert list(b.state_dict()) == ["pos_weight"]
    assert b.to(ember.float64).pos_weight.dtype == ember.float64


def test_loss_legacy_flags_warn(torch):
    with pytest.warns(UserWarning, match="reduction='sum'"):
        loss = enn.MSELoss(size_average=False)
    assert loss.reduction == "sum"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert enn.L1Loss(reduce=False).reduction == "none"


def test_loss_constructor_errors(torch):
    for nn in (torch.nn, enn):
        with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
            nn.MultiMarginLoss(p=3)
        with pytest.raises(ValueError, match="expected margin to be greater than 0"):
            nn.TripletMarginLoss(margin=0)
        with pytest.raises(TypeError, match="delta must be a float or int"):
            nn.HuberLoss(delta="1")


# --------------------------------------------------------------------------- more reprs

REPRS = [
    lambda nn: nn.ReLU(inplace=True), lambda nn: nn.ReLU6(True), lambda nn: nn.ELU(2.0, True),
    lambda nn: nn.CELU(), lambda nn: nn.SELU(True), lambda nn: nn.SiLU(True),
    lambda nn: nn.Mish(True), lambda nn: nn.Hardswish(True), lambda nn: nn.Hardsigmoid(True),
    lambda nn: nn.LeakyReLU(), lambda nn: nn.LeakyReLU(0.1, True),
    lambda nn: nn.Hardtanh(inplace=True), lambda nn: nn.RReLU(), lambda nn: nn.RReLU(inplace=True),
    lambda nn: nn.Threshold(1, 2, True), lambda nn: nn.Softmax(), lambda nn: nn.Softmin(1),
    lambda nn: nn.GELU(), lambda nn: nn.Softplus(), lambda nn: nn.Softshrink(),
    lambda nn: nn.Dropout(), lambda nn: nn.Dropout(0.2, True), lambda nn: nn.Dropout2d(0.1),
    lambda nn: nn.AlphaDropout(), lambda nn: nn.FeatureAlphaDropout(0.3, True),
    lambda nn: nn.Embedding(5, 2, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True,
                            sparse=True),
    lambda nn: nn.EmbeddingBag(5, 2, max_norm=2.0, norm_type=3.0, mode="sum", padding_idx=1,
                               scale_grad_by_freq=True),
    lambda nn: nn.BatchNorm1d(3, momentum=None, affine=False, track_running_stats=False),
    lambda nn: nn.InstanceNorm3d(2, affine=True), lambda nn: nn.GroupNorm(1, 3, bias=False),
    lambda nn: nn.LayerNorm((2, 3), elementwise_affine=False),
    lambda nn: nn.Upsample(size=4), lambda nn: nn.Upsample(scale_factor=(2, 3), mode="bicubic"),
    lambda nn: nn.Fold(4, (2, 2), 1, 0, 2), lambda nn: nn.Unfold(3),
    lambda nn: nn.ConstantPad3d((1, 2, 3, 4, 5, 6), 1), lambda nn: nn.ZeroPad3d(1),
    lambda nn: nn.ReflectionPad3d(2), lambda nn: nn.ReplicationPad3d(1),
    lambda nn: nn.CircularPad3d(1), lambda nn: nn.Bilinear(2, 3, 4),
    lambda nn: nn.Sequential(nn.Linear(2, 3), nn.ReLU()) if hasattr(nn, "Sequential")
    else nn.Linear(2, 3),
]


@pytest.mark.parametrize("make", REPRS, ids=range(len(REPRS)))
def test_more_reprs(torch, make):
    assert repr(make(enn)) == repr(make(torch.nn))


# --------------------------------------------------------------------------- initialisation


def _stats(p):
    a = p.detach().cpu().numpy().astype(np.float64)
    return a.min(), a.max(), a.mean(), a.std()


def test_linear_init_bounds(torch):
    ember.manual_seed(0)
    m = enn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) gives 1/sqrt(fan_in)
    for p in (m.weight, m.bias):
        lo, hi, _, std = _stats(p)
        assert -bound <= lo and hi <= bound
        assert hi > 0.9 * bound and lo < -0.9 * bound
        assert abs(std - bound / math.sqrt(3)) < 0.1 * bound
    tm = torch.nn.Linear(400, 300)
    assert abs(_stats(tm.weight)[3] - _stats(m.weight)[3]) < 0.05 * bound
    assert m.weight.dtype == ember.float32 and m.weight.requires_grad


def test_linear_zero_fan_in(torch):
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        m = enn.Linear(0, 3)
    assert m.bias.detach().cpu().numpy().tolist() == [0.0, 0.0, 0.0]


def test_bilinear_init_bounds(torch):
    ember.manual_seed(0)
    m = enn.Bilinear(50, 30, 40)
    bound = 1 / math.sqrt(50)
    for p in (m.weight, m.bias):
        lo, hi, _, _ = _stats(p)
        assert -bound <= lo and hi <= bound
    assert abs(_stats(m.weight)[3] - bound / math.sqrt(3)) < 0.05 * bound


def test_reset_parameters_redraws(torch):
    ember.manual_seed(0)
    m = enn.Linear(10, 10)
    before = m.weight.detach().cpu().numpy().copy()
    weight = m.weight
    m.reset_parameters()
    assert m.weight is weight  # in place
    assert not np.array_equal(before, m.weight.detach().cpu().numpy())


def test_embedding_init(torch):
    ember.manual_seed(0)
    m = enn.Embedding(2000, 50)
    _, _, mean, std = _stats(m.weight)
    assert abs(mean) < 0.02 and abs(std - 1) < 0.02
    m = enn.Embedding(10, 4, padding_idx=3)
    assert np.all(m.weight.detach().cpu().numpy()[3] == 0)
    assert np.all(m.weight.detach().cpu().numpy()[2] != 0)
    bag = enn.EmbeddingBag(10, 4, padding_idx=-2)
    assert bag.padding_idx == 8 and np.all(bag.weight.detach().cpu().numpy()[8] == 0)


def test_norm_and_prelu_init(torch):
    for m in (enn.BatchNorm2d(4), enn.LayerNorm(4), enn.GroupNorm(2, 4),
              enn.InstanceNorm1d(4, affine=True)):
        assert m.weight.detach().cpu().numpy().tolist() == [1.0] * 4
        assert m.bias.detach().cpu().numpy().tolist() == [0.0] * 4
    bn = enn.BatchNorm1d(3)
    assert bn.running_mean.cpu().numpy().tolist() == [0.0] * 3
    assert bn.running_var.cpu().numpy().tolist() == [1.0] * 3
    assert bn.num_batches_tracked.dtype == ember.int64 and bn.num_batches_tracked.item() == 0
    assert enn.PReLU(3, init=0.1).weight.detach().cpu().numpy().tolist() == pytest.approx([0.1] * 3)


def test_factory_kwargs(torch):
    m = enn.Linear(2, 3, dtype=ember.float64)
    assert m.weight.dtype == ember.float64 and m.bias.dtype == ember.float64
    bn = enn.BatchNorm1d(3, dtype=ember.float64)
    assert bn.running_mean.dtype == ember.float64 and bn.num_batches_tracked.dtype == ember.int64
    assert enn.Embedding(3, 2, dtype=ember.float64).weight.dtype == ember.float64


# --------------------------------------------------------------------------- batch norm


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_batchnorm_running_stats_over_steps(torch, momentum, dims):
    shape = {1: (6, 3), 2: (4, 3, 2, 3), 3: (2, 3, 2, 2, 3)}[dims]
    cls = f"BatchNorm{dims}d"
    tm = getattr(torch.nn, cls)(3, momentum=momentum)
    em = getattr(enn, cls)(3, momentum=momentum)
    _copy_params(tm, em)
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
        _close(tm(torch.tensor(x)), em(ember.tensor(x)), 1e-5)
    for name in ("running_mean", "running_var"):
        _close(getattr(tm, name), getattr(em, name), 1e-5)
    assert em.num_batches_tracked.item() == tm.num_batches_tracked.item() == 4
    tm.eval()
    em.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    _close(tm(torch.tensor(x)), em(ember.tensor(x)), 1e-5)
    assert em.num_batches_tracked.item() == 4  # eval does not count


def test_batchnorm_notrack_eval_uses_batch_stats(torch):
    check_layer(torch, lambda nn: nn.BatchNorm1d(3, track_running_stats=False), [f32(5, 3)],
                train=False)


def test_batchnorm_input_dim_errors(torch):
    for nn, lib in ((torch.nn, torch), (enn, ember)):
        with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
            nn.BatchNorm2d(3)(lib.zeros(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        enn.BatchNorm1d(3)(ember.zeros(2, 3, 4, 4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        enn.BatchNorm1d(3)(ember.zeros(1, 3))


def test_batchnorm_reset_running_stats(torch):
    bn = enn.BatchNorm1d(2)
    bn(ember.randn(4, 2) * 3 + 2)
    bn.reset_running_stats()
    assert bn.running_mean.cpu().numpy().tolist() == [0.0, 0.0]
    assert bn.running_var.cpu().numpy().tolist() == [1.0, 1.0]
    assert bn.num_batches_tracked.item() == 0


def test_batchnorm_loads_state_without_num_batches_tracked(torch):
    bn = enn.BatchNorm1d(2)
    sd = {"weight": ember.ones(2), "bias": ember.zeros(2), "running_mean": ember.zeros(2),
          "running_var": ember.ones(2)}
    bn.load_state_dict(sd)
    assert "num_batches_tracked" not in sd  # the caller's dict is left alone


def test_instancenorm_running_stats(torch):
    tm = torch.nn.InstanceNorm1d(3, track_running_stats=True)
    em = enn.InstanceNorm1d(3, track_running_stats=True)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = (rng.standard_normal((2, 3, 5)) * 2 + 1).astype(np.float32)
        _close(tm(torch.tensor(x)), em(ember.tensor(x)), 1e-5)
    _close(tm.running_mean, em.running_mean, 1e-5)
    _close(tm.running_var, em.running_var, 1e-5)
    tm.eval()
    em.eval()
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    _close(tm(torch.tensor(x)), em(ember.tensor(x)), 1e-5)


def test_instancenorm_num_features_checks(torch):
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features"):
        enn.InstanceNorm1d(4, affine=True)(ember.randn(2, 3, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        enn.InstanceNorm1d(4)(ember.randn(2, 3, 5))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        enn.InstanceNorm2d(3)(ember.randn(3, 5))


def test_groupnorm_divisibility(torch):
    with pytest.raises(ValueError, match=r"num_channels \(5\) must be divisible by num_groups"):
        enn.GroupNorm(2, 5)


# --------------------------------------------------------------------------- dropout and rrelu


@pytest.mark.parametrize("cls,shape", [("Dropout", (200, 100)), ("Dropout1d", (50, 40, 6)),
                                       ("Dropout2d", (50, 40, 2, 3)),
                                       ("Dropout3d", (40, 40, 2, 2, 2))])
def test_dropout_train_statistics(torch, cls, shape):
    ember.manual_seed(0)
    m = getattr(enn, cls)(p=0.3)
    x = ember.ones(*shape, requires_grad=True)
    y = m(x)
    a = y.detach().cpu().numpy()
    assert np.all(np.isclose(a, 0) | np.isclose(a, 1 / 0.7))
    assert abs((a == 0).mean() - 0.3) < 0.05
    if cls != "Dropout":  # whole channels dropped together
        per_channel = a.reshape(shape[0], shape[1], -1)
        assert np.all(per_channel.min(-1) == per_channel.max(-1))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), a)
    m.eval()
    assert m(x) is x or np.array_equal(m(x).detach().cpu().numpy(), x.detach().cpu().numpy())


def test_alpha_dropout_train_statistics(torch):
    ember.manual_seed(0)
    x = ember.randn(400, 250)
    for m in (enn.AlphaDropout(0.2), enn.FeatureAlphaDropout(0.2)):
        y = m(x if isinstance(m, enn.AlphaDropout) else x.reshape(400, 250, 1)).detach().cpu().numpy()
        assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05
        assert not np.array_equal(y.reshape(400, 250), x.cpu().numpy())


def test_dropout_p_check(torch):
    for nn in (torch.nn, enn):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, "
                                             "but got 1.5"):
            nn.Dropout(1.5)


def test_rrelu_train_slopes(torch):
    ember.manual_seed(0)
    m = enn.RReLU(0.1, 0.3)
    x = -ember.ones(1000)
    y = m(x).cpu().numpy()
    assert np.all((-y >= 0.1 - 1e-6) & (-y <= 0.3 + 1e-6)) and y.std() > 0.02
    m.eval()
    np.testing.assert_allclose(m(x).cpu().numpy(), -0.2, rtol=1e-6)


# --------------------------------------------------------------------------- embeddings


def test_embedding_from_pretrained(torch):
    w = ember.tensor([[1.0, 2.3, 3.0], [4.0, 5.1, 6.3]])
    e = enn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad
    np.testing.assert_allclose(e(ember.tensor([1])).cpu().numpy(), [[4.0, 5.1, 6.3]], rtol=1e-6)
    e2 = enn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
    assert e2.weight.requires_grad and e2.padding_idx == 0
    assert repr(e2) == "Embedding(2, 3, padding_idx=0)"
    bag = enn.EmbeddingBag.from_pretrained(w)
    assert not bag.weight.requires_grad
    np.testing.assert_allclose(bag(ember.tensor([[1, 0]])).cpu().numpy(), [[2.5, 3.7, 4.65]],
                               rtol=1e-6)
    with pytest.raises(AssertionError, match="expected to be 2-dimensional"):
        enn.Embedding.from_pretrained(ember.ones(3))


def test_embedding_errors(torch):
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        enn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
        enn.EmbeddingBag(3, 2, padding_idx=-4)
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        enn.Embedding(3, 2, _weight=ember.ones(2, 2))
    bag = enn.EmbeddingBag(5, 2, mode="max")
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        bag(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"offsets\[0\] has to be 0"):
        bag(ember.tensor([1, 2]), ember.tensor([1]))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        bag(ember.tensor([[1, 2]]), ember.tensor([0]))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        enn.EmbeddingBag(5, 2)(ember.tensor([1, 2]), ember.tensor([0]), ember.ones(2))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        enn.EmbeddingBag(5, 2, mode="min")(ember.tensor([[1, 2]]))


def test_embedding_max_norm_renormalises_in_place(torch):
    tm = torch.nn.Embedding(6, 4, max_norm=0.5)
    em = enn.Embedding(6, 4, max_norm=0.5)
    _copy_params(tm, em)
    i = np.array([0, 2, 2, 5])
    _close(tm(torch.tensor(i)), em(ember.tensor(i)), 1e-5)
    _close(tm.weight, em.weight, 1e-5)


# --------------------------------------------------------------------------- misc behaviour


def test_unflatten_size_check(torch):
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found "
                                        "element of type float at pos 1"):
        enn.Unflatten(1, (2, 3.0))
    with pytest.raises(TypeError, match="must be a tuple of ints, but found type int"):
        enn.Unflatten(1, 2)


def test_softmax_implicit_dim_warns(torch):
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = enn.Softmax()(ember.randn(2, 3))
    np.testing.assert_allclose(y.cpu().numpy().sum(1), 1, rtol=1e-6)


def test_softmax2d_dim_check(torch):
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        enn.Softmax2d()(ember.randn(2, 3))


def test_hardtanh_bounds_check(torch):
    with pytest.raises(AssertionError, match=r"max_val \(0\) must be greater than min_val"):
        enn.Hardtanh(1, 0)


def test_identity_returns_input(torch):
    x = ember.randn(2)
    assert enn.Identity(1, 2, x=3)(x) is x


def test_channel_shuffle_errors(torch):
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups"):
        enn.ChannelShuffle(3)(ember.randn(2, 4, 5))


def test_inplace_relu_modifies_input(torch):
    x = ember.randn(3, 4)
    y = enn.ReLU(inplace=True)(x)
    assert y is x and float(x.min()) >= 0


def test_layers_exported(torch):
    for name in ("Linear", "Bilinear", "Identity", "ReLU", "Softmax2d", "PReLU", "Dropout3d",
                 "Embedding", "EmbeddingBag", "BatchNorm3d", "InstanceNorm3d", "LayerNorm",
                 "GroupNorm", "LocalResponseNorm", "CrossEntropyLoss", "TripletMarginLoss",
                 "Flatten", "Upsample", "PixelShuffle", "CircularPad2d", "Fold", "Unfold"):
        assert isinstance(getattr(enn, name), type), name
        assert hasattr(torch.nn, name)
