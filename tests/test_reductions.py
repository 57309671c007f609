"""Reductions beyond the op table's reach: second derivatives at zeros, ties, unspecified
orders, result types, and ops torch records without a derivative."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_torch

import ember

ZEROS = np.array([[1.5, 0.0, -2.0, 0.5], [0.0, 1.0, 0.0, -1.5], [2.0, 0.5, -1.0, 1.25],
                  [0.0, 0.0, 0.0, 3.0]])


def _second_derivative(m, fn, data: np.ndarray, seed: int = 0):
    """d/dx <v, d/dx <w, fn(x)>> for fixed random v, w: a Hessian-vector product."""
    rng = np.random.default_rng(seed)
    x = m.from_numpy(data.copy()).requires_grad_()
    out = fn(x)
    w = m.from_numpy(rng.standard_normal(tuple(out.shape)))
    (g,) = m.autograd.grad(out, x, w, create_graph=True)
    v = m.from_numpy(rng.standard_normal(data.shape))
    (h,) = m.autograd.grad(g, x, v)
    return g.detach().cpu().numpy(), h.cpu().numpy()


@requires_torch
@pytest.mark.parametrize("name, fn", [
    ("cumprod dim 1", lambda x: x.cumprod(1)),
    ("cumprod dim 0", lambda x: x.cumprod(0)),
    ("prod dim 1", lambda x: x.prod(1)),
    ("prod dim 0 keepdim", lambda x: x.prod(0, keepdim=True)),
    ("prod all", lambda x: x.prod()),
])
def test_products_first_and_second_derivatives_at_zeros_match_torch(name, fn, torch):
    e_g, e_h = _second_derivative(ember, fn, ZEROS)
    t_g, t_h = _second_derivative(torch, fn, ZEROS)
    np.testing.assert_allclose(e_g, t_g, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(e_h, t_h, rtol=1e-12, atol=1e-12)


@requires_torch
def test_ties_pick_torchs_indices(torch):
    """Where torch's choice among equal values is deterministic, ember makes the same one."""
    rng = np.random.default_rng(0)
    data = rng.integers(0, 4, (6, 9)).astype(np.float64)
    e, t = ember.from_numpy(data), torch.from_numpy(data)
    for op, args in [("cummax", (1,)), ("cummin", (0,)), ("mode", (1,)), ("mode", (0,))]:
        ev, ei = getattr(e, op)(*args)
        tv, ti = getattr(t, op)(*args)
        np.testing.assert_array_equal(ev.cpu().numpy(), tv.cpu().numpy(), err_msg=op)
        np.testing.assert_array_equal(ei.cpu().numpy(), ti.cpu().numpy(), err_msg=op)
    for descending in (False, True):
        es = e.sort(dim=1, descending=descending, stable=True)
        ts = t.sort(dim=1, descending=descending, stable=True)
        np.testing.assert_array_equal(es.indices.cpu().numpy(), ts.indices.cpu().numpy())
    # median, kthvalue: torch's index among ties is unspecified, the value is not
    np.testing.assert_array_equal(e.median(1).values.cpu().numpy(), t.median(1).values.cpu().numpy())
    np.testing.assert_array_equal(e.kthvalue(4, 0).values.cpu().numpy(),
                                  t.kthvalue(4, 0).values.cpu().numpy())
    assert float(e.median()) == float(t.median())


@requires_torch
def test_topk_unsorted_selects_the_same_elements(torch):
    data = np.random.default_rng(1).permutation(20).reshape(4, 5).astype(np.float32)
    e = ember.from_numpy(data).topk(3, 1, sorted=False)
    t = torch.from_numpy(data).topk(3, 1, sorted=False)
    np.testing.assert_array_equal(np.sort(e.values.cpu().numpy(), 1), np.sort(t.values.cpu().numpy(), 1))
    np.testing.assert_array_equal(np.sort(e.indices.cpu().numpy(), 1), np.sort(t.indices.cpu().numpy(), 1))


def test_logsumexp_is_finite_for_large_inputs():
    x = ember.tensor([[1e4, 1e4, -1e4], [-1e4, -1e4 - 1.0, -2e4]])
    out = x.logsumexp(1)
    assert np.isfinite(out.cpu().numpy()).all()
    np.testing.assert_allclose(out.cpu().numpy(), [1e4 + np.log(2), -1e4 + np.log1p(np.exp(-1.0))],
                               rtol=1e-6)


@requires_torch
def test_result_types_are_torchs(torch):
    x = ember.tensor([[3.0, 1.0], [2.0, 4.0]])
    for op, args in [("sort", ()), ("topk", (1,)), ("kthvalue", (1,)), ("median", (0,)),
                     ("nanmedian", (0,)), ("mode", ()), ("cummax", (0,)), ("cummin", (1,))]:
        out = getattr(x, op)(*args)
        assert type(out).__module__ == "torch.return_types"
        assert type(out).__name__ == op
        assert out._fields == ("values", "indices")
    assert x.aminmax()._fields == ("min", "max")
    assert type(ember.var_mean(x)) is tuple and type(ember.std_mean(x, 0)) is tuple


@requires_torch
def test_std_var_calling_forms_match_torch(torch):
    data = np.random.default_rng(2).standard_normal((3, 4))
    e, t = ember.from_numpy(data), torch.from_numpy(data)
    for call in [lambda m, x: x.std(False), lambda m, x: m.var(x, 1, False, True),
                 lambda m, x: x.var(dim=0, unbiased=True), lambda m, x: x.std(1, correction=0),
                 lambda m, x: m.std_mean(x, 1, True)[0], lambda m, x: x.var(correction=2.5)]:
        np.testing.assert_allclose(call(ember, e).cpu().numpy(), call(torch, t).cpu().numpy(), rtol=1e-12)


@requires_torch
def test_unique_records_a_node_without_derivative(torch):
    for dim, name, op in [(None, "Unique2Backward0", "_unique2"),
                          (0, "UniqueDimBackward0", "unique_dim")]:
        x = ember.tensor([[1.0, 2.0], [1.0, 2.0]], requires_grad=True)
        out = ember.unique(x, dim=dim)
        assert type(out.grad_fn).__name__ == name
        with pytest.raises(NotImplementedError,
                           match=f"the derivative for '{op}' is not implemented."):
            out.sum().backward()


def test_var_mean_gradients_add_up():
    x = ember.tensor([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]], dtype=ember.float64,
                     requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.var_mean(t, 1), [x])
    assert ember.autograd.gradgradcheck(lambda t: ember.std_mean(t, 0), [x])
    assert ember.autograd.gradgradcheck(lambda t: ember.aminmax(t, dim=1), [x])


def test_in_place_scans():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    x.cumsum_(0)
    np.testing.assert_array_equal(x.cpu().numpy(), [[1.0, 2.0], [4.0, 6.0]])
    x.cumprod_(1)
    np.testing.assert_array_equal(x.cpu().numpy(), [[1.0, 2.0], [4.0, 24.0]])
