"""ember.nn.functional behaviour the op table can't compare value for value with torch: the
random ops (dropout family, rrelu in training), in-place side effects (running statistics,
embedding's max_norm), refusals torch raises as AssertionError, numerics at extreme inputs,
and the top-level aliases ``import ember`` alone provides."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import requires_torch

import ember
import ember.nn.functional as F

# --------------------------------------------------------------------------- dropout


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_dropout_zeroes_a_fraction_p_and_scales_the_rest(p):
    ember.manual_seed(0)
    x = ember.ones(200, 100, requires_grad=True)
    y = F.dropout(x, p)
    d = y.detach().cpu().numpy()
    kept = d != 0
    assert abs(1 - kept.mean() - p) < 0.02
    np.testing.assert_allclose(d[kept], 1 / (1 - p), rtol=1e-6)
    y.sum().backward()  # the gradient is the same mask, scaled
    np.testing.assert_allclose(x.grad.cpu().numpy(), d, rtol=1e-6)


def test_dropout_is_reproducible_with_manual_seed():
    x = ember.randn(5, 6)
    ember.manual_seed(3)
    a = F.dropout(x, 0.5)
    ember.manual_seed(3)
    b = F.dropout(x, 0.5)
    assert ember.equal(a, b)
    assert not ember.equal(a, F.dropout(x, 0.5))


def test_dropout_identity_when_not_training_or_p_zero():
    x = ember.randn(3, 4)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.alpha_dropout(x, 0.5) is x  # alpha_dropout's training defaults to False
    assert F.dropout(ember.empty(0, 3), 0.5) is not None


def test_dropout_inplace_writes_into_input():
    ember.manual_seed(1)
    x = ember.ones(50, 50)
    v = x._version
    y = F.dropout(x, 0.5, inplace=True)
    assert y is x
    assert x._version > v
    assert set(np.unique(x.cpu().numpy())) == {0.0, 2.0}


def test_dropout_inplace_on_leaf_requiring_grad_is_refused(torch):
    with pytest.raises(RuntimeError) as t_err:
        torch.nn.functional.dropout(torch.ones(3, requires_grad=True), 0.5, inplace=True)
    with pytest.raises(RuntimeError) as e_err:
        F.dropout(ember.ones(3, requires_grad=True), 0.5, inplace=True)
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("fn, shape, lead", [(F.dropout1d, (8, 16, 5), 2),
                                             (F.dropout1d, (16, 5), 1),
                                             (F.dropout2d, (8, 16, 3, 3), 2),
                                             (F.dropout3d, (4, 16, 2, 2, 2), 2),
                                             (F.dropout3d, (16, 2, 2, 2), 1)])
def test_channel_dropout_zeroes_whole_channels(fn, shape, lead):
    """``lead``: the dims indexing channels (N, C batched; C unbatched)."""
    ember.manual_seed(0)
    y = fn(ember.ones(*shape), 0.5).cpu().numpy()
    per_channel = y.reshape(int(np.prod(shape[:lead])), -1)
    zeroed = (per_channel == 0).all(1)
    assert np.all(zeroed | (per_channel == 2).all(1))
    assert 0 < zeroed.mean() < 1


def test_channel_dropout_inplace_unbatched():
    ember.manual_seed(0)
    x = ember.ones(16, 5)
    F.dropout1d(x, 0.5, inplace=True)
    d = x.cpu().numpy()
    assert x.shape == (16, 5)
    assert np.all((d == 0).all(1) | (d == 2).all(1))


def test_alpha_dropout_keeps_zero_mean_unit_variance():
    ember.manual_seed(0)
    x = ember.randn(400, 500)
    y = F.alpha_dropout(x, 0.3, training=True).cpu().numpy()
    assert abs(y.mean()) < 0.02
    assert abs(y.std() - 1) < 0.02
    # dropped units take selu's negative saturation value, mapped by the affine correction
    alpha_p = -1.7580993408473766
    a = 1 / math.sqrt((alpha_p ** 2 * 0.3 + 1) * 0.7)
    dropped = a * alpha_p + (-alpha_p) * a * 0.3
    assert np.isclose(y, dropped, atol=1e-5).mean() == pytest.approx(0.3, abs=0.01)


def test_feature_alpha_dropout_is_per_channel():
    ember.manual_seed(0)
    y = F.feature_alpha_dropout(ember.zeros(8, 32, 4), 0.5, training=True).cpu().numpy()
    assert np.all(y.min(2) == y.max(2))


def test_dropout_integer_input_refused_like_torch(torch):
    with pytest.raises(RuntimeError) as t_err:
        torch.nn.functional.dropout(torch.arange(4), 0.5)
    with pytest.raises(RuntimeError) as e_err:
        F.dropout(ember.arange(4), 0.5)
    assert str(e_err.value) == str(t_err.value)


# --------------------------------------------------------------------------- rrelu


def test_rrelu_training_draws_slopes_between_the_bounds():
    ember.manual_seed(0)
    x = ember.cat([-ember.rand(1000) - 0.1, ember.rand(1000) + 0.1]).requires_grad_()
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = (y / x).detach().cpu().numpy()
    assert np.all((slope[:1000] >= 0.1) & (slope[:1000] <= 0.3))
    assert slope[:1000].std() > 0.03
    np.testing.assert_array_equal(slope[1000:], 1.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), slope, rtol=1e-5)
    assert type(y.grad_fn).__name__ == "RreluWithNoiseBackward0"


# --------------------------------------------------------------------------- embedding


@requires_torch
def test_embedding_max_norm_renormalises_weight_in_place(torch):
    w = np.random.default_rng(0).normal(size=(6, 3)) * 2
    idx = np.array([[0, 2], [2, 5]])
    tw, ew = torch.tensor(w), ember.tensor(w)
    v = ew._version
    t_out = torch.nn.functional.embedding(torch.tensor(idx), tw, max_norm=1.0)
    e_out = F.embedding(ember.tensor(idx), ew, max_norm=1.0)
    np.testing.assert_allclose(ew.cpu().numpy(), tw.cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(e_out.cpu().numpy(), t_out.cpu().numpy(), rtol=1e-12)
    assert ew._version > v
    np.testing.assert_array_equal(ew.cpu().numpy()[[1, 3, 4]], w[[1, 3, 4]])  # unused rows kept


def test_embedding_padding_row_gets_no_gradient():
    w = ember.randn(4, 3, requires_grad=True)
    F.embedding(ember.tensor([0, 2, 2, 1]), w, padding_idx=2).sum().backward()
    g = w.grad.cpu().numpy()
    np.testing.assert_array_equal(g[2], 0)
    np.testing.assert_array_equal(g[[0, 1]], 1)
    np.testing.assert_array_equal(g[3], 0)


@pytest.mark.parametrize("padding_idx", [4, -5])
def test_embedding_padding_idx_out_of_range(padding_idx):
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(ember.tensor([1]), ember.randn(4, 3), padding_idx=padding_idx)


def test_embedding_double_backward():
    w = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    idx = ember.tensor([[0, 2], [2, 3]])
    assert ember.autograd.gradgradcheck(
        lambda w: F.embedding(idx, w) ** 2, [w])


# --------------------------------------------------------------------------- batch norm


@requires_torch
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6)])
def test_batch_norm_updates_running_stats_like_torch(shape, torch):
    x = np.random.default_rng(1).normal(size=shape)
    stats = {}
    for m, f in ((torch, torch.nn.functional), (ember, F)):
        rm, rv = m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64)
        for _ in range(3):
            f.batch_norm(m.tensor(x), rm, rv, training=True, momentum=0.2)
        eval_out = f.batch_norm(m.tensor(x), rm, rv, training=False)
        stats[m.__name__] = (rm.cpu().numpy(), rv.cpu().numpy(), eval_out.cpu().numpy(), rm._version)
    for a, b in zip(stats["ember"], stats["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# --------------------------------------------------------------------------- numerics


def test_softmax_family_stable_for_huge_inputs():
    x = ember.tensor([[1e4, -1e4, 0.0], [1e4, 1e4, 1e4]], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = F.softmax(x, 1)
        ls = F.log_softmax(x, 1)
        sp = F.softplus(x)
        lsig = F.logsigmoid(x)
    for t in (s, ls, sp, lsig):
        assert np.isfinite(t.detach().cpu().numpy()).all()
    np.testing.assert_allclose(ls.detach().cpu().numpy()[0], [0, -2e4, -1e4])
    np.testing.assert_allclose(sp.detach().cpu().numpy()[0], [1e4, 0, math.log(2)])
    np.testing.assert_allclose(lsig.detach().cpu().numpy()[0], [0, -1e4, -math.log(2)])


def test_gelu_uses_an_accurate_erf():
    x = np.linspace(-8, 8, 1601)
    ref = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x]
    out = F.gelu(ember.tensor(x)).cpu().numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-13, atol=5e-15)  # 1 + erf cancels


def test_softmax_implicit_dim_warns_and_picks_torchs_dim():
    x = ember.randn(2, 3, 4)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = F.softmax(x)
    np.testing.assert_allclose(y.sum(0).cpu().numpy(), 1, rtol=1e-6)  # 3-d: dim 0, as torch


def test_import_ember_alone_provides_softmax_aliases():
    code = ("import ember; x = ember.randn(2, 3); "
            "assert ember.softmax(x, 1).shape == (2, 3); "
            "assert x.softmax(0).grad_fn is None and x.log_softmax(-1).shape == (2, 3); "
            "assert ember.log_softmax(x, dim=0, dtype=ember.float64).dtype == ember.float64")
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(__file__).resolve().parent.parent)
