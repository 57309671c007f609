"""ember.utils.checkpoint: real recomputation (intermediates freed, recomputed in backward),
gradients equal to the plain run and to torch's, dropout masks replayed, torch's warnings."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

import ember
import ember.nn as enn
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")

VARIANTS = [True, False]


def block(T, lin_w, x, scale=1.0):
    h = T.tanh(x @ lin_w)
    return h * scale, (h * h).sum()


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_gradients_match_plain_run_and_torch(reentrant):
    rng = np.random.default_rng(0)
    w0, x0 = rng.standard_normal((4, 4)), rng.standard_normal((3, 4))
    grads = {}
    for T, ckpt in ((ember, checkpoint), (torch, torch.utils.checkpoint.checkpoint)):
        w = T.tensor(w0, requires_grad=True)
        x = T.tensor(x0, requires_grad=True)
        a, b = ckpt(block, T, w, x, use_reentrant=reentrant)
        (a.sum() + b).backward()
        grads[T.__name__] = (x.grad.numpy(), w.grad.numpy())
    w = ember.tensor(w0, requires_grad=True)
    x = ember.tensor(x0, requires_grad=True)
    a, b = block(ember, w, x)
    (a.sum() + b).backward()
    for got in grads.values():
        np.testing.assert_allclose(got[0], x.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(got[1], w.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_intermediates_are_not_kept_and_recomputed(reentrant):
    calls, refs = [], []

    def fn(x):
        calls.append(1)
        h = x.exp()
        refs.append(weakref.ref(h))
        return h.sin()

    x = ember.randn(5, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=reentrant)
    assert refs[0]() is None  # the forward kept no intermediate
    assert y.grad_fn._saved[0] is x or y.grad_fn.saved_tensors[0] is x  # only the input saved
    y.sum().backward()
    assert len(calls) == 2  # forward, then the recomputation in backward
    ember.testing.assert_close(x.grad, x.detach().exp() * x.detach().exp().cos())


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_dropout_mask_is_replayed(reentrant):
    def fn(x):
        return ember.nn.functional.dropout(x * 2, p=0.5, training=True)

    x = ember.ones(1000, requires_grad=True)
    ember.manual_seed(3)
    y = checkpoint(fn, x, use_reentrant=reentrant)
    after = ember.rand(3)
    y.sum().backward()
    # the gradient is the forward's mask times the scale: the recomputation drew the same mask
    ember.testing.assert_close(x.grad, (y.detach() != 0).float() * 4.0)
    ember.manual_seed(3)
    fn(x.detach())
    ember.testing.assert_close(ember.rand(3), after)  # backward left the RNG where it was


def test_preserve_rng_state_false_draws_a_new_mask():
    x = ember.ones(1000, requires_grad=True)
    ember.manual_seed(3)
    y = checkpoint(lambda t: ember.nn.functional.dropout(t, 0.5, True), x, use_reentrant=True,
                   preserve_rng_state=False)
    y.sum().backward()
    assert not ember.equal(x.grad, (y.detach() != 0).float() * 2.0)


def test_non_reentrant_kwargs_and_multiple_outputs():
    x = ember.randn(3, 4, requires_grad=True)
    w = ember.randn(4, 4, requires_grad=True)
    a, b = checkpoint(block, ember, w, x, scale=3.0, use_reentrant=False)
    (a.sum() + b).backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    a, b = block(ember, w, x, scale=3.0)
    (a.sum() + b).backward()
    ember.testing.assert_close(gx, x.grad)
    ember.testing.assert_close(gw, w.grad)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_module_parameters_get_gradients(reentrant):
    lin = enn.Linear(4, 3)
    x = ember.randn(2, 4, requires_grad=True)
    checkpoint(lin, x, use_reentrant=reentrant).sum().backward()
    expected = lin.weight.grad.clone()
    lin.zero_grad()
    lin(x).sum().backward()
    ember.testing.assert_close(expected, lin.weight.grad)


def test_inputs_without_grad():
    lin = enn.Linear(4, 3)
    x = ember.randn(2, 4)
    y = checkpoint(lin, x, use_reentrant=False)  # parameters still get gradients
    y.sum().backward()
    assert lin.weight.grad is not None
    (g,) = ember.autograd.grad(checkpoint(lin, x, use_reentrant=False).sum(), lin.bias)
    ember.testing.assert_close(g, ember.full((3,), 2.0))
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(lin, x, use_reentrant=True)
    assert not y.requires_grad  # torch's reentrant pitfall, followed


def test_checkpoint_sequential_matches_plain():
    ember.manual_seed(0)
    seq = enn.Sequential(enn.Linear(4, 8), enn.Tanh(), enn.Linear(8, 8), enn.Tanh(),
                         enn.Linear(8, 2))
    x = ember.randn(3, 4, requires_grad=True)
    for reentrant in VARIANTS:
        y = checkpoint_sequential(seq, 2, x, use_reentrant=reentrant)
        y.sum().backward()
        got = (x.grad.clone(), seq[0].weight.grad.clone())
        x.grad = None
        seq.zero_grad()
        seq(x).sum().backward()
        ember.testing.assert_close(got[0], x.grad)
        ember.testing.assert_close(got[1], seq[0].weight.grad)
        x.grad = None
        seq.zero_grad()


def test_warnings_and_errors_follow_torch():
    x = ember.randn(2, requires_grad=True)
    tx = torch.randn(2, requires_grad=True)
    for T, ckpt, t in ((ember, checkpoint, x), (torch, torch.utils.checkpoint.checkpoint, tx)):
        with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
            ckpt(T.sin, t)
    for ckpt, t in ((checkpoint, x), (torch.utils.checkpoint.checkpoint, tx)):
        with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
            ckpt(lambda a, foo: a, t, foo=1, use_reentrant=True)
        with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only"):
            ckpt(lambda a: a, t, use_reentrant=True, debug=True)


def test_determinism_check_catches_a_different_recomputation():
    state = {"n": 3}

    def fn(x):
        state["n"] += 1
        return x[: state["n"]] * 2

    x = ember.randn(8, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        y.sum().backward()
