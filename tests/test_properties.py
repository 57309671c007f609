"""Property tests against torch: hypothesis draws the shapes (mutually broadcastable pairs,
random reduction dims) and small random programs; values and gradients must match torch."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import HAS_TORCH, requires_torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_table import assert_close, nonzero, positive, tensors_of, uniform

import ember

if HAS_TORCH:
    import torch

pytestmark = requires_torch

# EMBER_PROPERTY_EXAMPLES=2000 for a deeper search than the quick default
PROPERTY = settings(max_examples=int(os.environ.get("EMBER_PROPERTY_EXAMPLES", "40")),
                    deadline=None, database=None)

FLOATS = st.sampled_from(["float32", "float64"])
NUMBERS = st.sampled_from(["float32", "float64", "int64", "int32"])


def _leaf(m, arr: np.ndarray, transpose: bool):
    """A leaf (requiring grad if floating); ``transpose`` stores it transposed."""
    if transpose and arr.ndim >= 2:
        arr = np.ascontiguousarray(np.swapaxes(arr, -1, -2)).swapaxes(-1, -2)
    t = m.from_numpy(arr.copy())
    return t.requires_grad_() if arr.dtype.kind == "f" else t


def _values_and_grads(m, fn, arrays, transposed, seed):
    leaves = [_leaf(m, a, t) for a, t in zip(arrays, transposed)]
    outs = [o for o in tensors_of(fn(m, *leaves)) if o.requires_grad]
    rng = np.random.default_rng(seed)
    ups = [m.from_numpy(rng.standard_normal(tuple(o.shape)).astype(
        o.detach().numpy().dtype)) for o in outs]
    diff = [x for x in leaves if x.requires_grad]
    grads = iter(m.autograd.grad(outs, diff, ups, allow_unused=True) if outs and diff else [])
    grads = [next(grads, None) if x.requires_grad else None for x in leaves]
    return tensors_of(fn(m, *[x.detach() for x in leaves])), grads, leaves


def check_against_torch(fn, arrays, transposed=None, seed=0):
    """``fn(m, *leaves)`` on ember and torch: same outputs, same input gradients, and each
    gradient has its own input's shape and dtype (broadcasting summed back)."""
    transposed = transposed or [False] * len(arrays)
    try:
        t_outs, t_grads, _ = _values_and_grads(torch, fn, arrays, transposed, seed)
    except (RuntimeError, IndexError, TypeError, ValueError) as err:
        with pytest.raises(type(err)):  # where torch refuses, ember must refuse alike
            _values_and_grads(ember, fn, arrays, transposed, seed)
        return
    e_outs, e_grads, e_leaves = _values_and_grads(ember, fn, arrays, transposed, seed)
    assert len(e_outs) == len(t_outs)
    for k, (e, t) in enumerate(zip(e_outs, t_outs)):
        assert_close(e, t, f"output {k}")
        assert type(e._data) is np.ndarray, f"output {k} holds a {type(e._data).__name__}"
    # gradients are computed in the outputs' dtype: a float64 input of a float32 result gets
    # a float32-accurate gradient
    least = min((t.detach().numpy().dtype for t in t_outs if t.is_floating_point()),
                key=lambda d: d.itemsize, default=None)
    for k, (x, e_g, t_g) in enumerate(zip(e_leaves, e_grads, t_grads)):
        if t_g is None:
            assert e_g is None or not e_g.numpy().any(), f"input {k}: torch gives no gradient"
            continue
        assert e_g is not None, f"input {k}: ember gives no gradient"
        assert e_g.shape == x.shape and e_g.dtype == x.dtype, f"gradient {k} shape / dtype"
        tol = least.name if least is not None and least.itemsize < e_g.itemsize else None
        assert_close(e_g, t_g, f"gradient of input {k}", grad=True, tol_dtype=tol)


# --------------------------------------------------------------------------- binary ops

BINARY = {
    "add": (lambda m, a, b: m.add(a, b, alpha=0.5), uniform, uniform),
    "sub": (lambda m, a, b: a - b, uniform, uniform),
    "rsub": (lambda m, a, b: m.rsub(a, b), uniform, uniform),
    "mul": (lambda m, a, b: a * b, uniform, uniform),
    "div": (lambda m, a, b: a / b, uniform, nonzero),
    "pow": (lambda m, a, b: a ** b, positive, uniform),
    "maximum": (lambda m, a, b: m.maximum(a, b), uniform, uniform),
    "minimum": (lambda m, a, b: m.minimum(a, b), uniform, uniform),
    "where": (lambda m, a, b: m.where(a > b, a * 2, b), uniform, uniform),
    "clamp": (lambda m, a, b: m.clamp(a, min=b), uniform, uniform),
    "clamp_max": (lambda m, a, b: a.clamp_max(b), uniform, uniform),
}


@PROPERTY
@given(name=st.sampled_from(sorted(BINARY)),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                min_side=0, max_side=3),
       dtypes=st.tuples(NUMBERS, NUMBERS), transposed=st.tuples(st.booleans(), st.booleans()),
       seed=st.integers(0, 2**16))
def test_binary_op_broadcasting_matches_torch(name, shapes, dtypes, transposed, seed):
    fn, dom_a, dom_b = BINARY[name]
    rng = np.random.default_rng(seed)
    a = np.asarray(dom_a(rng, shapes.input_shapes[0], np.dtype(dtypes[0])))
    b = np.asarray(dom_b(rng, shapes.input_shapes[1], np.dtype(dtypes[1])))
    check_against_torch(fn, [a, b], list(transposed), seed)


SCALAR_OPS = {  # name: (tensor op scalar, scalar op tensor)
    "add": (lambda x, s: x + s, lambda x, s: s + x),
    "sub": (lambda x, s: x - s, lambda x, s: s - x),
    "mul": (lambda x, s: x * s, lambda x, s: s * x),
    "div": (lambda x, s: x / s, lambda x, s: s / x),
    "pow": (lambda x, s: x ** s, lambda x, s: abs(s) ** x),
}


@PROPERTY
@given(name=st.sampled_from(sorted(SCALAR_OPS)),
       shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
       dtype=NUMBERS, scalar=st.sampled_from([2, -3, 0.5, 1.5, True]), reflected=st.booleans(),
       seed=st.integers(0, 2**16))
def test_tensor_and_python_scalar_match_torch(name, shape, dtype, scalar, reflected, seed):
    """``x op 2`` and ``2 op x``: the scalar is weak (the result keeps x's dtype)."""
    op = SCALAR_OPS[name][reflected]
    domain = positive if name in ("pow", "div") else uniform
    x = np.asarray(domain(np.random.default_rng(seed), shape, np.dtype(dtype)))
    check_against_torch(lambda m, t: op(t, scalar), [x], seed=seed)


# --------------------------------------------------------------------------- compositions

UNARY_STEPS = {
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sin": lambda x: x.sin(),
    "cos": lambda x: x.cos(),
    "neg": lambda x: -x,
    "square": lambda x: x.square(),
    "abs": lambda x: x.abs(),
    "relu": lambda x: x.relu(),
    "exp_tanh": lambda x: x.tanh().exp(),
    "log1p_abs": lambda x: (x.abs() + 1).log(),
    "sqrt": lambda x: (x * x + 1).sqrt(),
    "reciprocal": lambda x: (x * x + 0.5).reciprocal(),
    "clamp": lambda x: x.clamp(-0.5, 0.7),
    "scale": lambda x: 2.5 * x - 1,
    "pow": lambda x: (x * x + 1) ** 1.5,
    "sum_last": lambda x: x.sum(-1, keepdim=True) if x.ndim else x,
    "mean_first": lambda x: x.mean(0, keepdim=True) if x.ndim else x,
    "clone": lambda x: x.clone(),
}
BINARY_STEPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1),
    "maximum": lambda a, b: a.maximum(b),
    "where": lambda a, b: a.where(a > b, b),
}
STEP = st.tuples(st.sampled_from(sorted(UNARY_STEPS) + sorted(BINARY_STEPS)),
                 st.integers(0, 7), st.integers(0, 7))


def _program(steps):
    """A function of two inputs applying ``steps``; each step reads any earlier value."""
    def fn(m, x, y):
        values = [x, y]
        for name, i, j in steps:
            a = values[i % len(values)]
            if name in UNARY_STEPS:
                values.append(UNARY_STEPS[name](a))
            else:
                values.append(BINARY_STEPS[name](a, values[j % len(values)]))
        return values[-1]
    return fn


@PROPERTY
@given(steps=st.lists(STEP, min_size=1, max_size=6),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                min_side=1, max_side=3),
       dtype=FLOATS, transposed=st.tuples(st.booleans(), st.booleans()),
       seed=st.integers(0, 2**16))
def test_random_compositions_match_torch(steps, shapes, dtype, transposed, seed):
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(uniform(rng, s, np.dtype(dtype))) for s in shapes.input_shapes]
    check_against_torch(_program(steps), arrays, list(transposed), seed)


# --------------------------------------------------------------------------- reductions

REDUCTIONS = {
    "sum": lambda m, x, dims, keepdim: x.sum(dims, keepdim=keepdim),
    "mean": lambda m, x, dims, keepdim: m.mean(x, dims, keepdim),
    "amax": lambda m, x, dims, keepdim: x.amax(dims, keepdim),
    "amin": lambda m, x, dims, keepdim: m.amin(x, dims, keepdim),
    "norm": lambda m, x, dims, keepdim: x.norm(dim=dims, keepdim=keepdim),
    "norm1": lambda m, x, dims, keepdim: m.norm(x, 1, dims, keepdim),
    "norm3": lambda m, x, dims, keepdim: x.norm(3, dims, keepdim),
    "norm_inf": lambda m, x, dims, keepdim: x.norm(float("inf"), dims, keepdim),
}
ONE_DIM = {
    "max": lambda m, x, d, keepdim: x.max(d, keepdim),
    "min": lambda m, x, d, keepdim: m.min(x, d, keepdim=keepdim),
    "argmax": lambda m, x, d, keepdim: x.argmax(d, keepdim),
    "argmin": lambda m, x, d, keepdim: m.argmin(x, dim=d, keepdim=keepdim),
    "all": lambda m, x, d, keepdim: (x > 0).all(d, keepdim),
    "any": lambda m, x, d, keepdim: m.any(x > 0, d, keepdim),
    "sum": lambda m, x, d, keepdim: m.sum(x, d, keepdim),
    "unbind": lambda m, x, d, keepdim: x.unbind(d),
}


@st.composite
def shape_and_dims(draw):
    """A shape and a set of its dims, each written positive or negative at random."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4))
    nd = len(shape)
    if nd == 0:
        return shape, draw(st.sampled_from([(0,), (-1,), ()]))
    chosen = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd))
    return shape, tuple(d - nd if draw(st.booleans()) else d for d in chosen)


@PROPERTY
@given(name=st.sampled_from(sorted(REDUCTIONS)), shape_dims=shape_and_dims(),
       keepdim=st.booleans(), dtype=FLOATS, transposed=st.booleans(),
       seed=st.integers(0, 2**16))
def test_reductions_over_random_dims_match_torch(name, shape_dims, keepdim, dtype, transposed,
                                                 seed):
    shape, dims = shape_dims
    x = np.asarray(uniform(np.random.default_rng(seed), shape, np.dtype(dtype)))
    fn = REDUCTIONS[name]
    check_against_torch(lambda m, t: fn(m, t, dims, keepdim), [x], [transposed], seed)


@PROPERTY
@given(name=st.sampled_from(sorted(ONE_DIM)),
       shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4),
       data=st.data(), keepdim=st.booleans(), dtype=FLOATS, seed=st.integers(0, 2**16))
def test_single_dim_reductions_match_torch(name, shape, data, keepdim, dtype, seed):
    nd = max(len(shape), 1)
    d = data.draw(st.integers(-nd, nd - 1), label="dim")
    x = np.asarray(uniform(np.random.default_rng(seed), shape, np.dtype(dtype)))
    fn = ONE_DIM[name]
    check_against_torch(lambda m, t: fn(m, t, d, keepdim), [x], seed=seed)
