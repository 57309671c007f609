"""Index-based ops beyond the op table: errors raised in backward, warnings, ``out=``, the
adjoint identities between gather and scatter_add, and vectorised speed on large indices."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember


def _backward_error(m, program) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = program(m)
        with pytest.raises(RuntimeError) as err:
            out.sum().backward()
    return err.value


BACKWARD_REFUSALS = {
    # torch records the legacy reduce form as not differentiable
    "scatter_legacy_reduce": lambda m: m.ones(3, requires_grad=True).scatter(
        0, m.tensor([0, 0]), m.tensor([1.0, 2.0]), reduce="add"),
    # 'max' works forward but has no derivative
    "scatter_reduce_max": lambda m: m.ones(3, requires_grad=True).scatter_reduce(
        0, m.tensor([0, 0]), m.tensor([1.0, 2.0]), "max"),
    # a src larger than the index: its gradient has the index's shape
    "scatter_add_large_src": lambda m: m.ones(3, 4).scatter_add(
        0, m.tensor([[0, 1]]), m.ones(2, 3, requires_grad=True)),
}


@pytest.mark.parametrize("name", BACKWARD_REFUSALS)
def test_backward_refusals_match_torch(torch, name):
    program = BACKWARD_REFUSALS[name]
    e, t = _backward_error(ember, program), _backward_error(torch, program)
    assert str(e) == str(t)


def test_legacy_reduce_records_not_implemented_node(torch):
    for m in (ember, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = m.zeros(3, requires_grad=True).scatter(0, m.tensor([1]), m.tensor([2.0]),
                                                         reduce="multiply")
        assert type(out.grad_fn).__name__ == "NotImplemented"
        if m is ember:  # torch warns once per process
            assert any("deprecated" in str(x.message) for x in w)


def test_index_reduce_warns_beta():
    with pytest.warns(UserWarning, match="index_reduce\\(\\) is in beta"):
        ember.zeros(3).index_reduce(0, ember.tensor([0]), ember.ones(1), "prod")


@pytest.mark.parametrize("op", ["gather", "index_select", "masked_select", "take_along_dim"])
def test_out_argument(torch, op):
    def run(m):
        x = m.tensor(np.arange(12.0).reshape(3, 4))
        out = m.empty(0, dtype=m.float64)
        args = {"gather": (1, m.tensor([[0, 0], [1, 3], [2, 2]])),
                "index_select": (0, m.tensor([2, 0])),
                "masked_select": (x > 4,),
                "take_along_dim": (m.tensor([[1], [0], [3]]), 1)}[op]
        res = getattr(m, op)(x, *args, out=out)
        assert res is out
        return out.cpu().numpy()
    np.testing.assert_array_equal(run(ember), run(torch))


@pytest.mark.parametrize("op", ["gather", "index_select", "masked_select", "take_along_dim"])
def test_out_argument_of_another_dtype_is_refused(torch, op):
    def run(m):
        x = m.tensor(np.arange(12.0).reshape(3, 4))
        args = {"gather": (1, m.tensor([[0]])), "index_select": (0, m.tensor([2])),
                "masked_select": (x > 4,), "take_along_dim": (m.tensor([[1]]), 1)}[op]
        with pytest.raises(RuntimeError) as err:
            getattr(m, op)(x, *args, out=m.empty(0))
        return str(err.value)
    assert run(ember) == run(torch)


def test_repeated_indices_accumulate_in_every_gradient():
    x = ember.zeros(4, requires_grad=True)
    idx = ember.tensor([1, 1, 1, 3])
    (x.gather(0, idx).sum() + x.index_select(0, idx).sum() + x.take(idx).sum()
     + x.take_along_dim(idx).sum()).backward()
    assert x.grad.tolist() == [0.0, 12.0, 0.0, 4.0]


def test_max_min_by_dim_keep_their_gradients():
    x = ember.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], requires_grad=True)
    (x.max(1).values.sum() + x.min(0).values.sum()).backward()
    assert x.grad.tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 5), st.integers(0, 1),
       st.integers(0, 2**31 - 1))
def test_gather_and_scatter_add_are_adjoint(rows, cols, k, dim, seed):
    """<gather(x, i), y> == <x, scatter_add(0, i, y)>: each op's derivative is the other."""
    rng = np.random.default_rng(seed)
    shape = (rows, cols)
    ishape = (k, cols) if dim == 0 else (rows, k)
    idx = ember.tensor(rng.integers(0, shape[dim], ishape))
    x = ember.tensor(rng.standard_normal(shape))
    y = ember.tensor(rng.standard_normal(ishape))
    lhs = (x.gather(dim, idx) * y).sum().item()
    rhs = (x * ember.zeros(shape, dtype=ember.float64).scatter_add(dim, idx, y)).sum().item()
    assert lhs == pytest.approx(rhs)


def test_large_indices_are_vectorised():
    """A million repeated indices: forward and backward stay well under a second."""
    x = ember.randn(1000, 100, requires_grad=True)
    idx = ember.tensor(np.random.default_rng(0).integers(0, 1000, (10000, 100)))
    start = time.perf_counter()
    x.gather(0, idx).sum().backward()
    ember.zeros(1000, 100).scatter_reduce(0, idx, ember.ones(10000, 100), "amax")
    assert time.perf_counter() - start < 3.0
    assert x.grad.sum().item() == pytest.approx(1e6)
