"""autograd.functional (jacobian, hessian, vjp, jvp, hvp) and cat/stack against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.functional as F

X = np.random.default_rng(0).standard_normal(3)


def _close(e, t):
    if isinstance(e, tuple):
        assert isinstance(t, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            _close(a, b)
        return
    np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().cpu().numpy(), rtol=1e-10, atol=1e-12)


def _cubic(lib):
    return lambda x: (x ** 3).sum() * x[0]


def test_jacobian_of_two_outputs_two_inputs(torch):
    def f(lib):
        return lambda a, b: ((a * b).exp(), a.sin())
    e = F.jacobian(f(ember), (ember.tensor(X), ember.tensor(X)))
    t = torch.autograd.functional.jacobian(f(torch), (torch.tensor(X), torch.tensor(X)))
    _close(e, t)


def test_hessian_vjp_jvp_hvp_match_torch(torch):
    tf = torch.autograd.functional
    _close(F.hessian(_cubic(ember), ember.tensor(X)), tf.hessian(_cubic(torch), torch.tensor(X)))
    v_e, v_t = ember.ones(3, dtype=ember.float64), torch.ones(3, dtype=torch.float64)

    def g(x):
        return x.exp() * x
    _close(F.vjp(g, ember.tensor(X), v_e), tf.vjp(g, torch.tensor(X), v_t))
    _close(F.jvp(g, ember.tensor(X), v_e), tf.jvp(g, torch.tensor(X), v_t))
    _close(F.hvp(_cubic(ember), ember.tensor(X), v_e), tf.hvp(_cubic(torch), torch.tensor(X), v_t))
    _close(F.vhp(_cubic(ember), ember.tensor(X), v_e), tf.vhp(_cubic(torch), torch.tensor(X), v_t))


def test_jacobian_create_graph_is_differentiable():
    x = ember.tensor(X, requires_grad=True)
    j = F.jacobian(lambda a: a ** 3, x, create_graph=True)
    j.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 6 * X)


def test_vjp_without_v_needs_a_scalar_output():
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.vjp(lambda a: a * 2, ember.tensor(X))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_and_stack_match_torch(torch, dim):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    for name in ("cat", "stack"):
        ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        eo, to = getattr(ember, name)([ea, eb * 2], dim), getattr(torch, name)([ta, tb * 2], dim)
        assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__
        np.testing.assert_allclose(eo.detach().cpu().numpy(), to.detach().cpu().numpy())
        w = rng.standard_normal(tuple(to.shape))
        (eo * ember.tensor(w)).sum().backward()
        (to * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(ea.grad.cpu().numpy(), ta.grad.cpu().numpy())
        np.testing.assert_allclose(eb.grad.cpu().numpy(), tb.grad.cpu().numpy())


def test_cat_and_stack_gradcheck_and_errors():
    a = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, 1, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda x, y: ember.cat([x, y * y], 1), (a, b))
    assert ember.autograd.gradgradcheck(lambda x: ember.stack([x, x.exp()], 2), (a,))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        ember.cat([a, b])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([a, b])
    assert ember.cat([ember.zeros(2), ember.ones(1, dtype=ember.float64)]).dtype is ember.float64
