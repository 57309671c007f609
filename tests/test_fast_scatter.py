"""The fast paths of the scatter-style ops against torch, on shapes that take each path and on
neighbours that do not:

* ``indexing.add_at`` (index_add's forward, scatter_add's, and every backward that accumulates
  at a key): rows added in layers of distinct targets (runs of at most 8 repeats), by sorted
  pairwise sums (longer runs), or by ``add.at`` on a flat index (short rows; 1-d keys);
  across leading dims too (index_add on a middle dim).
* gather, scatter_add and the backward of max/min/sort by dim (``ValueSelectingReduction``)
  key the input read as 1-d (``_flat_key``), not an open grid.
* ``one_hot`` writes ones at flat positions; ``t[int]`` / ``t[slices]`` skip the general key
  checks; constant ``pad`` fills borders of an empty result.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(4321)
DTYPES = ("float32", "float64")


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else t.detach().numpy()


def _assert_close(e, t, err_msg=""):
    t = _np(t)
    scale = float(np.abs(t).max(initial=1.0))
    atol = (1e-5 if t.dtype == np.float32 else 1e-12) * scale
    np.testing.assert_allclose(_np(e), t, rtol=1e-5, atol=atol, err_msg=err_msg)
    assert str(_np(e).dtype) == str(t.dtype), err_msg


def _like_torch(torch, fn, *arrays, diff=(0,)):
    """fn in ember and torch on the same arrays: equal values, and equal gradients of the
    float inputs at the ``diff`` positions for the same upstream gradient."""
    results = []
    seed = None
    for m in (torch, ember):
        ts = [m.tensor(a, requires_grad=k in diff and a.dtype.kind == "f")
              for k, a in enumerate(arrays)]
        out = fn(m, *ts)
        grads = []
        if out.dtype.is_floating_point and any(ts[k].requires_grad for k in diff):
            if seed is None:
                seed = RNG.standard_normal(tuple(out.shape)).astype(_np(out).dtype)
            out.backward(m.tensor(seed))
            grads = [ts[k].grad for k in diff if ts[k].requires_grad]
        results.append((out, grads))
    (t_out, t_grads), (e_out, e_grads) = results
    _assert_close(e_out, t_out, "values")
    assert len(e_grads) == len(t_grads)
    for k, (e, t) in enumerate(zip(e_grads, t_grads)):
        _assert_close(e, t, f"gradient {k}")


def _randn(*shape, dtype="float64"):
    return RNG.standard_normal(shape).astype(dtype)


def _errors_alike(torch, fn, *arrays):
    """fn raises the same exception type and message in ember and torch."""
    with pytest.raises(Exception) as t_err:
        fn(torch, *[torch.tensor(a) for a in arrays])
    with pytest.raises(type(t_err.value)) as e_err:
        fn(ember, *[ember.tensor(a) for a in arrays])
    assert str(e_err.value) == str(t_err.value)


# --------------------------------------------------------------------------- index_add

# (input shape, dim, index): rows of 512 with repeats of at most 8 (layers), a run of 40
# (pairwise sums), no repeats, short rows (flat add.at), a middle and the last dim, 0-d
INDEX_ADD_CASES = [
    ((256, 512), 0, RNG.integers(0, 256, 256)),
    ((64, 96), 0, np.r_[np.full(40, 3), RNG.integers(0, 64, 30)]),
    ((64, 96), 0, RNG.permutation(64)),
    ((300, 128), 0, RNG.permutation(300)),
    ((50, 7), 0, RNG.integers(0, 50, 120)),
    ((3, 40, 70), 1, RNG.integers(0, 40, 60)),
    ((3, 40, 70), 1, np.r_[np.full(20, 39), np.zeros(5, int)]),
    ((6, 9, 5), -1, RNG.integers(0, 5, 11)),
    ((), 0, np.array([0])),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(INDEX_ADD_CASES)))
@pytest.mark.parametrize("alpha", [1, 2.5])
def test_index_add_matches_torch(torch, case, dtype, alpha):
    shape, dim, idx = INDEX_ADD_CASES[case]
    src_shape = list(shape) or [1]
    src_shape[dim] = idx.size
    src = _randn(*src_shape, dtype=dtype)
    if not shape:
        src = src.reshape(())
    x = _randn(*shape, dtype=dtype)
    _like_torch(torch, lambda m, x, i, s: m.index_add(x, dim, i, s, alpha=alpha),
                x, idx, src, diff=(0, 2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_add_in_place_and_method_match_torch(torch, dtype):
    idx = np.r_[RNG.integers(0, 100, 150), np.full(12, 7)]
    x, src = _randn(100, 128, dtype=dtype), _randn(idx.size, 128, dtype=dtype)

    def fn(m, x, i, s):
        y = x * 1
        y.index_add_(0, i, s, alpha=-0.5)
        return y.index_add(0, i, s)
    _like_torch(torch, fn, x, idx, src, diff=(0, 2))


def test_index_add_integers_and_int32_index_match_torch(torch):
    idx = RNG.integers(0, 30, 90).astype(np.int32)
    x = RNG.integers(-9, 9, (30, 80))
    src = RNG.integers(-9, 9, (90, 80))
    _like_torch(torch, lambda m, x, i, s: x.index_add(0, i, s, alpha=3), x, idx, src, diff=())


def test_index_add_double_backward_matches_torch(torch):
    idx = RNG.integers(0, 5, 8)
    x, src = _randn(5, 3), _randn(8, 3)
    for m in (ember, torch):
        xt, st = m.tensor(x, requires_grad=True), m.tensor(src, requires_grad=True)
        assert m.autograd.gradgradcheck(
            lambda a, b, m=m: (a.index_add(0, m.tensor(idx), b, alpha=2.0) ** 2), (xt, st))
    # second order on rows long enough for the row sums (a backward of a backward)
    idx = np.r_[RNG.integers(0, 20, 200), np.full(10, 4)]
    x, src, c = _randn(20, 300), _randn(210, 300), _randn(210, 300)
    grads = []
    for m in (torch, ember):
        xt, st = m.tensor(x, requires_grad=True), m.tensor(src, requires_grad=True)
        y = xt.index_add(0, m.tensor(idx), st, alpha=2.0)
        (g,) = m.autograd.grad((y ** 2).sum(), st, create_graph=True)
        (g * m.tensor(c)).sum().backward()
        grads.append((g, xt.grad, st.grad))
    for t, e in zip(*grads):
        _assert_close(e, t)


def test_index_add_errors_match_torch(torch):
    x, src = _randn(5, 4), _randn(3, 4)
    _errors_alike(torch, lambda m, x, s: x.index_add(0, m.tensor([0, 5, 1]), s), x, src)
    _errors_alike(torch, lambda m, x, s: x.index_add(0, m.tensor([0, 1]), s), x, src)
    _errors_alike(torch, lambda m, x, s: x.index_add(0, m.tensor([0.0, 1, 2]), s), x, src)


# --------------------------------------------------------------------------- one_hot

@pytest.mark.parametrize("shape,num", [((1000,), 256), ((4, 6), -1), ((0,), 3), ((), 5),
                                       ((3, 0, 2), 4)])
def test_one_hot_matches_torch(torch, shape, num):
    idx = RNG.integers(0, 5 if num == -1 else num, shape) if num else np.zeros(shape, int)
    t = torch.nn.functional.one_hot(torch.tensor(idx), num)
    e = ember.nn.functional.one_hot(ember.tensor(idx), num)
    assert e.dtype == ember.int64 and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(_np(e), _np(t))


def test_one_hot_errors_match_torch(torch):
    for idx, num in [([0, 3], 3), ([-1, 0], 3), ([], -1)]:
        _errors_alike(torch, lambda m, i, num=num: m.nn.functional.one_hot(i, num),
                      np.array(idx, dtype=np.int64))


# --------------------------------------------------------------------------- gather

# (input shape, dim, index shape, index high): index as large as input, smaller in other
# dims (the flat key must use input's strides), duplicates, the first, last and negative dim
GATHER_CASES = [
    ((256, 512), 1, (256, 8), 512),
    ((256, 512), 0, (30, 512), 256),
    ((5, 6, 7), 1, (3, 9, 4), 6),
    ((5, 6, 7), -1, (5, 2, 7), 7),
    ((5, 6, 7), 0, (8, 6, 1), 5),
    ((9,), 0, (20,), 9),
    ((), 0, (), 1),
    ((4, 0, 3), 2, (4, 0, 2), 3),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(GATHER_CASES)))
def test_gather_matches_torch(torch, case, dtype):
    shape, dim, ishape, high = GATHER_CASES[case]
    idx = RNG.integers(0, high, ishape)
    _like_torch(torch, lambda m, x, i: x.gather(dim, i), _randn(*shape, dtype=dtype), idx)


@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_take_along_dim_matches_torch(torch, dim):
    idx = RNG.integers(-5, 5, (5, 1, 7)) if dim is not None else RNG.integers(0, 60, (9,))
    _like_torch(torch, lambda m, x, i: m.take_along_dim(x, i, dim), _randn(5, 6, 7), idx)


def test_gather_and_scatter_add_on_transposed_inputs_match_torch(torch):
    idx = RNG.integers(0, 6, (7, 4))
    x, src = _randn(6, 7), _randn(7, 4)
    _like_torch(torch, lambda m, x, i: x.t().gather(1, i), x, idx)
    _like_torch(torch, lambda m, x, i, s: x.t().scatter_add(1, i, s.t().t()), x, idx, src,
                diff=(0, 2))


def test_gather_double_backward_matches_torch(torch):
    idx = RNG.integers(0, 6, (3, 9, 4))
    x = _randn(5, 6, 7)
    for m in (ember, torch):
        xt = m.tensor(x, requires_grad=True)
        assert m.autograd.gradgradcheck(lambda a, m=m: a.gather(1, m.tensor(idx)) ** 2, (xt,))


def test_gather_errors_match_torch(torch):
    x = _randn(4, 5)
    _errors_alike(torch, lambda m, x: x.gather(1, m.tensor([[0, 5]])), x)
    _errors_alike(torch, lambda m, x: x.gather(1, m.tensor([[0, -1]])), x)
    _errors_alike(torch, lambda m, x: x.gather(1, m.tensor([0, 1])), x)


# --------------------------------------------------------------------------- scatter_add

SCATTER_ADD_CASES = [
    ((256, 512), 1, (256, 8), (256, 8)),
    ((256, 512), 0, (300, 512), (300, 512)),
    ((5, 6, 7), 1, (3, 9, 4), (3, 9, 4)),
    ((5, 6, 7), 1, (3, 9, 4), (4, 10, 5)),  # src larger than index: only its first part
    ((5, 6, 7), -1, (5, 6, 20), (5, 6, 20)),
    ((9,), 0, (20,), (20,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(SCATTER_ADD_CASES)))
def test_scatter_add_matches_torch(torch, case, dtype):
    shape, dim, ishape, sshape = SCATTER_ADD_CASES[case]
    idx = RNG.integers(0, shape[dim], ishape)  # many repeats
    x, src = _randn(*shape, dtype=dtype), _randn(*sshape, dtype=dtype)
    diff = (0, 2) if sshape == ishape else (0,)  # (torch can't differentiate a larger src)
    _like_torch(torch, lambda m, x, i, s: x.scatter_add(dim, i, s), x, idx, src, diff=diff)

    def in_place(m, x, i, s):
        y = x * 1
        return y.scatter_add_(dim, i, s)
    _like_torch(torch, in_place, x, idx, src, diff=diff)


def test_scatter_add_0d_and_double_backward_match_torch(torch):
    _like_torch(torch, lambda m, x, i, s: x.scatter_add(0, i, s), _randn(), np.array(0),
                _randn(), diff=(0, 2))
    idx = RNG.integers(0, 6, (3, 9, 4))
    x, src = _randn(5, 6, 7), _randn(3, 9, 4)
    for m in (ember, torch):
        xt, st = m.tensor(x, requires_grad=True), m.tensor(src, requires_grad=True)
        assert m.autograd.gradgradcheck(lambda a, b, m=m: a.scatter_add(1, m.tensor(idx), b) ** 2,
                                        (xt, st))


def test_scatter_add_errors_match_torch(torch):
    x, src = _randn(4, 5), _randn(1, 2)
    _errors_alike(torch, lambda m, x, s: x.scatter_add(1, m.tensor([[0, 5]]), s), x, src)
    _errors_alike(torch, lambda m, x, s: x.scatter_add(1, m.tensor([[0, 1, 2]]), s), x, src)


# ----------------------------------------------- max/min/sort by dim (value-selecting backward)

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [
    lambda m, x: x.max(1).values,
    lambda m, x: x.min(-1, keepdim=True).values,
    lambda m, x: x.sort(0).values,
    lambda m, x: x.topk(3, dim=2).values,
    lambda m, x: x.cummax(1).values,  # repeats: accumulates
    lambda m, x: x.cummin(0).values,
])
def test_value_selecting_backward_matches_torch(torch, fn, dtype):
    _like_torch(torch, fn, _randn(5, 6, 7, dtype=dtype))


def test_value_selecting_backward_0d_and_double_backward_match_torch(torch):
    _like_torch(torch, lambda m, x: x.max(0).values, _randn())
    _like_torch(torch, lambda m, x: x.cummax(0).values, _randn())
    x = _randn(4, 5, 6)
    for m in (ember, torch):
        xt = m.tensor(x, requires_grad=True)
        assert m.autograd.gradgradcheck(lambda a: a.cummax(-1).values ** 2, (xt,))


# --------------------------------------------------------------------------- basic indexing

BASIC_KEYS = [0, -1, 3, slice(1, None), slice(None), slice(None, None, 2), (), (1,), (1, 2),
              (-2, slice(1, 4)), (slice(None), 1), (slice(None), slice(1, None)),
              (slice(0, 3, 2), -1, slice(None)), (0, 0, 0)]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=repr)
def test_basic_getitem_matches_torch(torch, key):
    x = _randn(4, 5, 6)
    _like_torch(torch, lambda m, x: x[key] * 1, x)
    t, e = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    assert type(e[key].grad_fn).__name__ == type(t[key].grad_fn).__name__
    with ember.no_grad():  # a view: writes reach the base
        e[key].mul_(0)
    with torch.no_grad():
        t[key].mul_(0)
    np.testing.assert_array_equal(_np(e), _np(t))


@pytest.mark.parametrize("key", [4, -5, (0, 5), (slice(None), slice(None), 6), (0, 0, 0, 0),
                                 slice(None, None, 0), (slice(None), slice(0, 2, -1))],
                         ids=repr)
def test_basic_getitem_errors_match_torch(torch, key):
    _errors_alike(torch, lambda m, x: x[key], _randn(4, 5, 6))


def test_getitem_keys_outside_the_fast_path_match_torch(torch):
    x = _randn(4, 5)
    for key in [True, (Ellipsis, 1), (None, 1), (np.int64(1),), (slice(np.int64(1), None),),
                [1, 1, 3], (slice(None), [0, 4])]:
        _like_torch(torch, lambda m, x, key=key: x[key] * 1, x)
    t = torch.tensor(x)
    e = ember.tensor(x)
    for key in [(slice(t.new_tensor(1, dtype=torch.int64), None),)]:
        ekey = (slice(ember.tensor(1), None),)
        np.testing.assert_array_equal(_np(e[ekey]), _np(t[key]))


# --------------------------------------------------------------------------- constant pad

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pad,value", [((1, 1, 2, 2), None), ((0, 3), 1.5),
                                       ((2, 0, 0, 1, 1, 1), -2.0), ((-1, 2, 1, -2), None),
                                       ((-2, -1), 0.0), ((), None)])
def test_constant_pad_matches_torch(torch, pad, value, dtype):
    x = _randn(3, 5, 6, dtype=dtype)
    _like_torch(torch, lambda m, x: m.nn.functional.pad(x, pad, value=value), x)


def test_constant_pad_integers_and_double_backward_match_torch(torch):
    x = RNG.integers(-5, 5, (2, 3, 4))
    _like_torch(torch, lambda m, x: m.nn.functional.pad(x, (1, 2, 0, 1), value=7), x, diff=())
    x = _randn(2, 3, 4)
    for m in (ember, torch):
        xt = m.tensor(x, requires_grad=True)
        assert m.autograd.gradgradcheck(
            lambda a, m=m: m.nn.functional.pad(a, (1, -1, 2, 0), value=0.5) ** 2, (xt,))
