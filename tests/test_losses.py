"""Loss functions beyond the op table: signatures, stability at extreme logits, ctc_loss."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from conftest import requires_torch

import ember
import ember.nn.functional as F
from ember.nn.functional import loss as loss_module


@requires_torch
@pytest.mark.parametrize("name", loss_module.__all__)
def test_signature_matches_torch(name, torch):
    """Same parameter names, order and defaults as torch.nn.functional."""
    def params(fn):
        return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]

    assert params(getattr(F, name)) == params(getattr(torch.nn.functional, name))


def test_cross_entropy_stable_for_huge_logits():
    x = ember.tensor([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4]], requires_grad=True)
    loss = F.cross_entropy(x, ember.tensor([1, 2]))
    loss.backward()
    assert np.isclose(loss.item(), 1e4)  # 2e4 for the first sample, 0 for the second, mean
    assert np.isfinite(x.grad.cpu().numpy()).all()


def test_bce_with_logits_stable_for_huge_logits():
    x = ember.tensor([-1e4, 1e4], requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, ember.tensor([1.0, 0.0]), reduction="sum")
    loss.backward()
    assert np.isclose(loss.item(), 2e4)
    np.testing.assert_allclose(x.grad.cpu().numpy(), [-1.0, 1.0])


def test_binary_cross_entropy_clamps_log():
    """torch clamps each log at -100, so a confident wrong answer costs 100, not inf."""
    loss = F.binary_cross_entropy(ember.tensor([0.0, 1.0]), ember.tensor([1.0, 0.0]),
                                  reduction="none")
    np.testing.assert_allclose(loss.cpu().numpy(), [100.0, 100.0])


def test_nll_mean_divides_by_weights_of_kept_targets():
    logp = ember.tensor([[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]])
    w = ember.tensor([1.0, 2.0, 3.0])
    loss = F.nll_loss(logp, ember.tensor([0, 2, 1]), weight=w, ignore_index=1)
    assert np.isclose(loss.item(), (1 * 1.0 + 3 * 6.0) / (1 + 3))


def test_ctc_loss_not_implemented():
    with pytest.raises(NotImplementedError, match="ctc_loss is not implemented"):
        F.ctc_loss(ember.zeros(5, 1, 3), ember.tensor([[1, 2]]), ember.tensor([5]),
                   ember.tensor([2]))
