"""Forward-mode AD (``torch.autograd.forward_ad``): the API, its errors, forward-over-reverse,
reverse-over-forward, custom Functions, in-place ops on dual tensors, and the forward-mode
``autograd.functional`` entry points, each against torch. Every op's tangent is checked in
``test_ops.py`` (``test_forward_mode_*``)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_torch

import ember
import ember.autograd.forward_ad as fwAD
from ember.ops._op import Op, apply1


def _np(t):
    return t.detach().cpu().numpy()


def _close(e, t, tol=1e-10):
    np.testing.assert_allclose(_np(e), t.detach().numpy(), rtol=tol, atol=tol)


def _dual_run(m, fn, xs, vs):
    fw = m.autograd.forward_ad
    with fw.dual_level():
        duals = [fw.make_dual(m.tensor(x), m.tensor(v)) for x, v in zip(xs, vs)]
        out = fn(m, *duals)
        return fw.unpack_dual(out)


RNG = np.random.default_rng(0)


# ---------------------------------------------------------------------------------- the API
def test_make_dual_and_unpack_dual():
    x, v = ember.randn(3, dtype=ember.float64), ember.randn(3, dtype=ember.float64)
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, v)
        primal, tangent = fwAD.unpack_dual(d)
        assert tangent is v
        assert ember.equal(primal, x) and primal.data_ptr() == x.data_ptr()  # views
        assert fwAD.unpack_dual(primal).tangent is None  # the primal carries no tangent
        assert fwAD.unpack_dual(x).tangent is None
        y = d * 3
    # leaving the level drops every tangent
    assert fwAD.unpack_dual(y).tangent is None
    assert fwAD.unpack_dual(d).tangent is None
    assert isinstance(fwAD.unpack_dual(y), fwAD.UnpackedDualTensor)


def test_dual_level_is_a_decorator():
    @fwAD.dual_level()
    def f(x, v):
        return fwAD.unpack_dual(fwAD.make_dual(x, v).exp()).tangent

    x = ember.zeros(2)
    assert ember.equal(f(x, ember.ones(2)), ember.ones(2))


@requires_torch
def test_errors_like_torch(torch):
    import torch.autograd.forward_ad as tfw
    with pytest.raises(RuntimeError, match="dual level"):
        fwAD.make_dual(ember.zeros(2), ember.zeros(2))
    with fwAD.dual_level(), tfw.dual_level():
        with pytest.raises(RuntimeError) as t_err:
            tfw.make_dual(torch.zeros(2), torch.zeros(3))
        with pytest.raises(RuntimeError) as e_err:
            fwAD.make_dual(ember.zeros(2), ember.zeros(3))
        assert str(e_err.value) == str(t_err.value)
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(ValueError, match="floating point"):
            fwAD.make_dual(ember.zeros(2, dtype=ember.int64), ember.zeros(2))


def test_an_op_without_a_rule_names_itself():
    class NoRuleBackward0(Op):  # a backward that is not implemented: no rule to derive
        __slots__ = ()

        def forward(self, a):
            return a * 2

    with fwAD.dual_level():
        d = fwAD.make_dual(ember.ones(2), ember.ones(2))
        with pytest.raises(RuntimeError, match="NoRuleBackward0"):
            apply1(NoRuleBackward0, d)
        assert ember.equal(apply1(NoRuleBackward0, ember.ones(2)), ember.full((2,), 2.0))


def test_grad_mode_does_not_affect_tangents():
    with fwAD.dual_level(), ember.no_grad():
        d = fwAD.make_dual(ember.zeros(3), ember.ones(3))
        assert ember.equal(fwAD.unpack_dual(d.sin()).tangent, ember.ones(3))


# ------------------------------------------------------------------- higher order, mixed modes
@requires_torch
@pytest.mark.parametrize("create_graph", [True, False])
def test_forward_over_reverse_hessian_vector_product(torch, create_graph):
    def f(m, x):
        return (x.exp() * x.tanh()).sin().sum() + (x @ x) ** 2 + x.sigmoid().prod()

    x, v = RNG.standard_normal(5), RNG.standard_normal(5)
    res = []
    for m in (ember, torch):
        fw = m.autograd.forward_ad
        x0 = m.tensor(x).requires_grad_()
        with fw.dual_level():
            d = fw.make_dual(x0, m.tensor(v))
            g, = m.autograd.grad(f(m, d), d, create_graph=create_graph)
            res.append(fw.unpack_dual(g).tangent)
    _close(res[0], res[1])


@requires_torch
def test_reverse_over_forward(torch):
    def f(m, x, w):
        return ((x @ w).tanh() * x.sum()).sin().sum() + (x @ w).sigmoid().prod()

    x, w, v = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4)), RNG.standard_normal((2, 3))
    res = []
    for m in (ember, torch):
        fw = m.autograd.forward_ad
        x0, w0 = m.tensor(x).requires_grad_(), m.tensor(w).requires_grad_()
        with fw.dual_level():
            jv = fw.unpack_dual(f(m, fw.make_dual(x0, m.tensor(v)), w0)).tangent
        res.append(m.autograd.grad(jv, (x0, w0)))
    for e, t in zip(*res):
        _close(e, t)


@requires_torch
def test_tangents_through_an_nn_module(torch):
    """The pytorch.org forward-mode tutorial's module example: parameters replaced by duals."""
    outs = []
    values = [RNG.standard_normal(s) for s in ((4, 5), (4,), (3, 4), (3,))]
    for m in (ember, torch):
        model = m.nn.Sequential(m.nn.Linear(5, 4), m.nn.Tanh(), m.nn.Linear(4, 3))
        for p, a in zip(model.parameters(), values):
            p.data.copy_(m.tensor(a, dtype=m.float32))
        x = m.tensor(np.linspace(-1, 1, 10).reshape(2, 5), dtype=m.float32)
        tangents = {n: m.ones_like(p) * 0.5 for n, p in model.named_parameters()}
        fw = m.autograd.forward_ad
        with fw.dual_level():
            for name, p in list(model.named_parameters()):
                mod_name, _, attr = name.rpartition(".")
                mod = model.get_submodule(mod_name)
                delattr(mod, attr)
                setattr(mod, attr, fw.make_dual(p, tangents[name]))
            outs.append(fw.unpack_dual(model(x)).tangent)
    _close(outs[0], outs[1], tol=1e-5)


# ------------------------------------------------------------------------- custom Functions
class _Exp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_forward(y)
        ctx.y = y
        return y

    @staticmethod
    def backward(ctx, g):
        return g * ctx.y

    @staticmethod
    def jvp(ctx, t):
        return t * ctx.y


class _NoJvp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_jvp():
    x, v = ember.randn(4, dtype=ember.float64), ember.randn(4, dtype=ember.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        out = _Exp.apply(d)
        assert ember.allclose(fwAD.unpack_dual(out).tangent, v * x.exp())
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            _NoJvp.apply(d)
    assert ember.equal(_NoJvp.apply(x), x * 2)  # without tangents, no jvp needed


# ----------------------------------------------------------------------------- in-place ops
@requires_torch
def test_in_place_ops_on_duals_and_their_views(torch):
    def f(m, x):
        y = x.clone()
        y.mul_(2)
        y[1:].add_(y[:-1].sin())  # an in-place op on a view writes through to the base
        y.unsqueeze(0)[0, 0].mul_(3.0)
        return y

    x, v = RNG.standard_normal(5), RNG.standard_normal(5)
    e, t = _dual_run(ember, f, [x], [v]), _dual_run(torch, f, [x], [v])
    _close(e.primal, t.primal)
    _close(e.tangent, t.tangent)


# ------------------------------------------------------------------- autograd.functional
@requires_torch
def test_jacobian_forward_mode(torch):
    def f(m):
        return lambda x, y: ((x.sin() * y[:3]).tanh(), (x @ x) * y)

    x, y = RNG.standard_normal(3), RNG.standard_normal(4)
    e = ember.autograd.functional.jacobian(f(ember), (ember.tensor(x), ember.tensor(y)),
                                           strategy="forward-mode", vectorize=True)
    t = torch.autograd.functional.jacobian(f(torch), (torch.tensor(x), torch.tensor(y)),
                                           strategy="forward-mode", vectorize=True)
    for row_e, row_t in zip(e, t):
        for a, b in zip(row_e, row_t):
            assert tuple(a.shape) == tuple(b.shape)
            _close(a, b)


@requires_torch
def test_hessian_forward_over_reverse(torch):
    def g(x):
        return (x.sin() ** 2).sum() * x.exp().sum()

    x = RNG.standard_normal(4)
    e = ember.autograd.functional.hessian(g, ember.tensor(x), vectorize=True,
                                          outer_jacobian_strategy="forward-mode")
    t = torch.autograd.functional.hessian(g, torch.tensor(x), vectorize=True,
                                          outer_jacobian_strategy="forward-mode")
    _close(e, t)


@requires_torch
@pytest.mark.parametrize("kwargs", [
    {"strategy": "sideways"},
    {"strategy": "forward-mode"},
    {"strategy": "forward-mode", "vectorize": True, "create_graph": True},
    {"strategy": "forward-mode", "vectorize": True, "strict": True},
])
def test_jacobian_strategy_errors_like_torch(torch, kwargs):
    x = np.ones(2)
    with pytest.raises(Exception) as t_err:
        torch.autograd.functional.jacobian(lambda a: a * 2, torch.tensor(x), **kwargs)
    with pytest.raises(type(t_err.value)) as e_err:
        ember.autograd.functional.jacobian(lambda a: a * 2, ember.tensor(x), **kwargs)
    assert str(e_err.value) == str(t_err.value)
