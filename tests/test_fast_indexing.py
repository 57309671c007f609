"""The host fast paths of the index-driven ops against torch, on shapes that take each path and
on neighbours that do not:

* ``indexing.added_at`` (the backward of ``x[key]``, gather, embedding, cummax): keys without
  integer arrays assign; integer arrays after full slices add rows, by ``add.at`` on the flat
  index or by ``_add_rows`` (sorted rows added in layers, or pairwise for long runs); any
  other key keeps ``add.at``.
  Repeated, negative and broadcast indices must accumulate.
* ``topk``: k argmax/argmin picks (k <= 16) with a fallback where a sentinel or NaN is picked,
  else a partition to the k-th value; ties in index order, NaN largest.
* ``cumsum`` and its backward: blocked triangular matmuls for float32/float64 scans of 16384
  elements or more (the raw and the Tensor backward agree bit for bit).
* ``AxisMap``'s cached maps (interpolate, average and adaptive average pools), NaN and inf
  kept to the windows that hold them.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(1234)


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else t.detach().numpy()


def _assert_close(e, t, err_msg="", rtol=1e-5):
    t = _np(t)
    scale = float(np.abs(t).max(initial=1.0))  # sums of many terms: absolute slack
    atol = (1e-5 if t.dtype == np.float32 else 1e-12) * scale
    np.testing.assert_allclose(_np(e), t, rtol=rtol, atol=atol, err_msg=err_msg)


def _run(m, fn, arrays, diff, seed):
    """fn(m, *tensors) and the gradients of the ``diff`` positions for the upstream ``seed``."""
    ts = [m.tensor(a, requires_grad=k in diff and a.dtype.kind == "f")
          for k, a in enumerate(arrays)]
    out = fn(m, *ts)
    if seed is not None:
        out.backward(m.tensor(seed))
    return out, [ts[k].grad for k in diff]


def _like_torch(torch, fn, *arrays, diff=(0,)):
    """fn in ember and torch: equal values and gradients of the ``diff`` inputs, to rounding."""
    t_out = fn(torch, *[torch.tensor(a) for a in arrays])
    seed = RNG.standard_normal(tuple(t_out.shape)).astype(t_out.numpy().dtype)
    e_out, e_grads = _run(ember, fn, arrays, diff, seed)
    t_out, t_grads = _run(torch, fn, arrays, diff, seed)
    _assert_close(e_out, t_out, "values")
    for k, e, t in zip(diff, e_grads, t_grads):
        _assert_close(e, t, f"gradient of input {k}")


def _second_order_like_torch(torch, fn, x, *rest):
    """d/dx of <d fn/dx, c> (create_graph), and d/dv where v is the upstream gradient."""
    results = []
    for m in (ember, torch):
        xt = m.tensor(x, requires_grad=True)
        out = fn(m, xt, *[m.tensor(r) for r in rest])
        v = m.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(x.dtype),
                     requires_grad=True)
        (g,) = m.autograd.grad(out, xt, v, create_graph=True)
        c = m.tensor(np.cos(np.arange(g.numel())).reshape(tuple(g.shape)).astype(x.dtype))
        ((g * g * c).sum()).backward()
        results.append((xt.grad, v.grad))
    for e, t in zip(*results):
        _assert_close(e, t, "second order")


# --------------------------------------------------------------------------- x[key] backward

def _rows(n, size, *, negative=False, repeats=True):
    idx = RNG.integers(0, size, n) if repeats else RNG.permutation(size)[:n]
    if negative:
        idx = np.where(RNG.random(n) < 0.5, idx - size, idx)
    return idx.astype(np.int64)


RUN_LENGTHS = np.repeat(np.arange(12), np.arange(1, 13))  # runs of 1 to 12 equal indices

INDEX_KEYS = {
    # name: (x shape, key builder) -- the rows path (tree: rows of >= 64 elements, >= 32768 in
    # all), the flat add.at path, leading slices (p > 1), several arrays, an Ellipsis
    "rows_tree": ((256, 512), lambda: (_rows(64, 256),)),
    "rows_tree_negative": ((256, 512), lambda: (_rows(80, 256, negative=True),)),
    "rows_tree_one_target": ((40, 128), lambda: (np.full(300, 7),)),
    "rows_tree_runs": ((20, 512), lambda: (RNG.permutation(RUN_LENGTHS),)),
    "rows_tree_unique": ((256, 512), lambda: (_rows(100, 256, repeats=False),)),
    "rows_flat": ((50, 8), lambda: (_rows(200, 50, negative=True),)),
    "rows_flat_2d_index": ((30, 5, 4), lambda: (_rows(24, 30).reshape(4, 6),)),
    "rows_just_below_tree": ((100, 128), lambda: (_rows(255, 100),)),
    "slices_then_rows_tree": ((4, 50, 128), lambda: (slice(None), _rows(300, 50))),
    "slices_then_rows_flat": ((6, 40), lambda: (slice(None), _rows(90, 40, negative=True))),
    "two_arrays_broadcast_tree": ((10, 20, 128),
                                  lambda: (_rows(30, 10).reshape(30, 1), _rows(20, 20)[None])),
    "two_arrays_flat": ((10, 20, 6), lambda: (_rows(5, 10)[:, None], _rows(7, 20)[None])),
    "ellipsis_last_axis": ((4, 6, 50), lambda: (Ellipsis, _rows(70, 50, negative=True))),
    "all_dims_elementwise": ((30, 40), lambda: (_rows(500, 30), _rows(500, 40))),
    "int32_index": ((64, 256), lambda: (_rows(200, 64).astype(np.int32),)),
    # keys the fast paths leave to add.at, or assign (no integer array)
    "int_then_array": ((5, 60, 7), lambda: (2, _rows(90, 60))),
    "array_slice_array": ((8, 3, 9), lambda: (_rows(10, 8), slice(None), _rows(10, 9))),
    "step_slice_then_array": ((6, 50), lambda: (slice(None, None, 2), _rows(70, 50))),
    "mask": ((40, 30), lambda: (RNG.random((40, 30)) < 0.3,)),
    "mask_rows_then_slice": ((40, 64), lambda: (RNG.random(40) < 0.5, slice(1, None))),
    "mask_and_array": ((40, 30), lambda: (RNG.random(40) < 0.5, np.int64(3))),
}


def _key(m, key):
    return tuple(m.tensor(k) if isinstance(k, np.ndarray) else k for k in key)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", INDEX_KEYS)
def test_getitem_gradient_accumulates_like_torch(torch, name, dtype):
    shape, build = INDEX_KEYS[name]
    key = build()
    x = RNG.standard_normal(shape).astype(dtype)
    _like_torch(torch, lambda m, t: t[_key(m, key)], x)


def test_getitem_gradient_of_non_contiguous_input(torch):
    x = RNG.standard_normal((512, 256)).astype(np.float32)
    idx = _rows(90, 256, negative=True)
    _like_torch(torch, lambda m, t: t.t()[m.tensor(idx)] * 2, x)
    _like_torch(torch, lambda m, t: t[::2][m.tensor(idx)], x)


def test_getitem_double_backward(torch):
    x = RNG.standard_normal((40, 128))
    idx = _rows(400, 40)
    _second_order_like_torch(torch, lambda m, t, i: t[i] * t[i], x, idx)


def test_index_select_gather_and_masked_select_backward(torch):
    x = RNG.standard_normal((60, 96)).astype(np.float32)
    idx = _rows(500, 60)
    _like_torch(torch, lambda m, t: t.index_select(0, m.tensor(idx)), x)
    cols = _rows(300, 96)
    _like_torch(torch, lambda m, t: t.index_select(1, m.tensor(cols)), x)
    g_idx = RNG.integers(0, 96, (60, 200))
    _like_torch(torch, lambda m, t: t.gather(1, m.tensor(g_idx)), x)
    mask = RNG.random((60, 96)) < 0.4
    _like_torch(torch, lambda m, t: t.masked_select(m.tensor(mask)), x)


def test_value_selecting_backwards_like_torch(torch):
    x = RNG.standard_normal((64, 300)).astype(np.float32)
    _like_torch(torch, lambda m, t: t.max(1).values, x)
    _like_torch(torch, lambda m, t: t.sort(0).values, x)
    _like_torch(torch, lambda m, t: t.kthvalue(7, 1).values, x)
    ties = np.round(RNG.standard_normal((32, 400)) * 2)  # cummax: repeated indices add up
    _like_torch(torch, lambda m, t: m.cummax(t, 1).values, ties)
    _like_torch(torch, lambda m, t: m.cummin(t, 0).values, ties.astype(np.float32))


# --------------------------------------------------------------------------- embedding

EMBEDDINGS = {
    # name: (num, dim, index shape, F.embedding keywords)
    "tree": (1000, 128, (32, 64), {}),
    "tree_few_rows": (10, 128, (32, 64), {}),
    "flat_narrow": (1000, 16, (32, 64), {}),
    "flat_few_indices": (1000, 128, (3, 5), {}),
    "padding_idx": (50, 128, (32, 64), {"padding_idx": 3}),
    "negative_padding_idx": (50, 64, (16, 64), {"padding_idx": -1}),
    "scale_grad_by_freq": (30, 128, (32, 64), {"scale_grad_by_freq": True}),
    "padding_and_freq": (30, 16, (32, 64), {"scale_grad_by_freq": True, "padding_idx": 0}),
    "one_dim_index": (100, 256, (700,), {}),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", EMBEDDINGS)
def test_embedding_weight_gradient_like_torch(torch, name, dtype):
    num, dim, shape, kw = EMBEDDINGS[name]
    w = RNG.standard_normal((num, dim)).astype(dtype)
    idx = RNG.integers(0, num, shape)
    if "padding_idx" in kw:
        idx.flat[::7] = kw["padding_idx"] % num
    _like_torch(torch, lambda m, t, i: m.nn.functional.embedding(i, t, **kw), w, idx)


def test_embedding_of_non_contiguous_weight(torch):
    w = RNG.standard_normal((128, 1000)).astype(np.float32)
    idx = RNG.integers(0, 1000, (32, 64))
    _like_torch(torch, lambda m, t, i: m.nn.functional.embedding(i, t.t()) * 3, w, idx)


def test_embedding_max_norm_renorms_the_rows_used(torch):
    w = (RNG.standard_normal((200, 96)) * 3).astype(np.float32)
    idx = RNG.integers(0, 200, (16, 40))
    outs = []
    for m in (ember, torch):
        wt = m.tensor(w.copy(), requires_grad=True)
        out = m.nn.functional.embedding(m.tensor(idx), wt, max_norm=1.5)
        out.backward(m.tensor(np.ones(out.shape, np.float32)))
        outs.append((out, wt.detach(), wt.grad))
    for e, t in zip(*outs):
        _assert_close(e, t)


def test_embedding_double_backward(torch):
    w = RNG.standard_normal((30, 64))
    idx = RNG.integers(0, 30, (20, 40))
    _second_order_like_torch(torch, lambda m, t, i: m.nn.functional.embedding(i, t) ** 2, w, idx)


# --------------------------------------------------------------------------- topk

def _stable_topk(a, k, dim, largest):
    """ember's documented order: sort's (stable, NaN largest), the first k."""
    if largest:
        n = a.shape[dim]
        order = n - 1 - np.flip(np.flip(a, dim).argsort(axis=dim, kind="stable"), dim)
    else:
        order = a.argsort(axis=dim, kind="stable")
    return np.take(order, np.arange(k), axis=dim)


def _check_topk(torch, a, k, dim=-1, largest=True):
    """Values equal torch's (NaN too); indices are ember's stable order and select them."""
    e = ember.tensor(a).topk(k, dim, largest=largest)
    t = torch.tensor(a).topk(k, dim, largest=largest)
    np.testing.assert_array_equal(_np(e.values), _np(t.values))
    np.testing.assert_array_equal(_np(e.indices), _stable_topk(a, k, dim, largest))
    assert e.indices.dtype == ember.int64


# shapes and k that take the picks path (k <= 16), the partition (k > 16), and edges
TOPK = [((256, 512), 5, -1), ((256, 512), 16, 0), ((256, 512), 17, -1), ((64, 300), 40, 1),
        ((3, 7, 9), 4, 1), ((5, 6), 6, 1), ((5, 6), 0, 1), ((1000,), 1, 0), ((2, 3, 40), 39, -1)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape, k, dim", TOPK)
def test_topk_distinct_values_like_torch(torch, shape, k, dim, largest, dtype):
    a = RNG.permutation(np.prod(shape)).reshape(shape).astype(dtype)  # no ties
    e = ember.tensor(a).topk(k, dim, largest=largest)
    t = torch.tensor(a).topk(k, dim, largest=largest)
    np.testing.assert_array_equal(_np(e.values), _np(t.values))
    np.testing.assert_array_equal(_np(e.indices), _np(t.indices))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape, k, dim", TOPK)
def test_topk_ties_in_index_order(torch, shape, k, dim, largest):
    a = RNG.integers(-3, 4, shape).astype(np.float32)  # many ties across the k-th place
    _check_topk(torch, a, k, dim, largest)
    _check_topk(torch, a.astype(np.int64), k, dim, largest)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 3, 10, 30])
def test_topk_nan_is_largest(torch, k, largest):
    a = RNG.integers(-2, 3, (40, 64)).astype(np.float64)
    a[RNG.random(a.shape) < 0.2] = np.nan
    a[5] = np.nan  # a row of NaN only
    a[6, :60] = np.nan  # the k-th place among NaNs or just after them
    _check_topk(torch, a, k, 1, largest)
    _check_topk(torch, a.T.copy(), k, 0, largest)


@pytest.mark.parametrize("k", [2, 12, 20])
def test_topk_sentinel_values_fall_back(torch, k):
    """Rows of -inf (argmax's sentinel) or +inf (argmin's), and the integer extremes: a
    repeated pick would be wrong, the fallback must see it."""
    a = RNG.standard_normal((30, 50))
    a[:, 5:] = -np.inf
    a[3] = -np.inf
    _check_topk(torch, a, k, 1, True)
    _check_topk(torch, -a, k, 1, False)
    info = np.iinfo(np.int64)
    b = np.full((30, 50), info.min, dtype=np.int64)
    b[:, :3] = RNG.integers(-5, 5, (30, 3))
    _check_topk(torch, b, k, 1, True)
    _check_topk(torch, np.where(b == info.min, info.max, b), k, 1, False)


def test_topk_unsorted_selects_torchs_set(torch):
    a = RNG.permutation(256 * 512).reshape(256, 512).astype(np.float32)
    for k, largest in ((5, True), (40, False)):
        e = ember.tensor(a).topk(k, 1, largest=largest, sorted=False)
        t = torch.tensor(a).topk(k, 1, largest=largest, sorted=False)
        np.testing.assert_array_equal(np.sort(_np(e.values), 1), np.sort(_np(t.values), 1))
        np.testing.assert_array_equal(np.sort(_np(e.indices), 1), np.sort(_np(t.indices), 1))


def test_topk_of_non_contiguous_input(torch):
    a = RNG.standard_normal((300, 200)).astype(np.float32)
    for k in (3, 25):
        e = ember.tensor(a).t()[:, ::2].topk(k, 0)
        t = torch.tensor(a).t()[:, ::2].topk(k, 0)
        np.testing.assert_array_equal(_np(e.values), _np(t.values))
        np.testing.assert_array_equal(_np(e.indices), _np(t.indices))


@pytest.mark.parametrize("k, largest", [(5, True), (5, False), (40, True)])
def test_topk_gradient_like_torch(torch, k, largest):
    x = RNG.standard_normal((64, 300)).astype(np.float32)
    _like_torch(torch, lambda m, t: t.topk(k, -1, largest=largest).values * 2, x)
    _like_torch(torch, lambda m, t: t.topk(k, 0, largest=largest).values, x.astype(np.float64))


# --------------------------------------------------------------------------- cumsum

CUMSUMS = [((16, 64, 256), -1), ((16, 64, 256), 0), ((16, 64, 256), 1), ((4, 70000), 1),
           ((3, 1000, 17), 1), ((20000,), 0), ((100, 37), 1), ((2000, 9), 0), ((64, 300, 8), 1)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, dim", CUMSUMS)
def test_cumsum_and_gradient_like_torch(torch, shape, dim, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    _like_torch(torch, lambda m, t: t.cumsum(dim), x)


def test_cumsum_of_non_contiguous_input_and_dtype(torch):
    x = RNG.standard_normal((300, 200)).astype(np.float32)
    _like_torch(torch, lambda m, t: t.t().cumsum(1), x)
    _like_torch(torch, lambda m, t: t.flip(1)[::2].cumsum(0), x)
    _like_torch(torch, lambda m, t: t.cumsum(0, dtype=m.float64), x)
    ints = RNG.integers(-5, 5, (200, 300))
    for m_out in (ember, torch):
        assert m_out.tensor(ints).cumsum(1, dtype=m_out.float32).dtype == m_out.float32
    np.testing.assert_allclose(_np(ember.tensor(ints).cumsum(1, dtype=ember.float32)),
                               _np(torch.tensor(ints).cumsum(1, dtype=torch.float32)))


def test_cumsum_raw_and_tensor_backward_agree_bit_for_bit():
    x = ember.tensor(RNG.standard_normal((16, 64, 256)).astype(np.float32), requires_grad=True)
    out = x.cumsum(2)
    seed = ember.tensor(RNG.standard_normal((16, 64, 256)).astype(np.float32))
    (raw,) = ember.autograd.grad(out, x, seed, retain_graph=True)
    (rule,) = ember.autograd.grad(out, x, seed, create_graph=True)
    np.testing.assert_array_equal(_np(raw), _np(rule))


def test_cumsum_and_cumprod_double_backward(torch):
    x = RNG.standard_normal((8, 3000))
    _second_order_like_torch(torch, lambda m, t: t.cumsum(1) ** 2, x)
    _like_torch(torch, lambda m, t: t.cumprod(1), RNG.uniform(0.9, 1.1, (8, 3000)))


# --------------------------------------------------------------------------- separable maps

MAPS = {
    # name: (input shape, fn)
    "bilinear_x2": ((8, 16, 14, 14),
                    lambda m, t: m.nn.functional.interpolate(t, scale_factor=2, mode="bilinear",
                                                             align_corners=False)),
    "bilinear_align_corners": ((2, 3, 20, 33), lambda m, t: m.nn.functional.interpolate(
        t, size=(41, 50), mode="bilinear", align_corners=True)),
    "bilinear_taps_beyond_limit": ((2, 3, 64, 100), lambda m, t: m.nn.functional.interpolate(
        t, scale_factor=2, mode="bilinear")),
    "bicubic": ((2, 3, 30, 30), lambda m, t: m.nn.functional.interpolate(
        t, size=(45, 61), mode="bicubic", align_corners=False)),
    "linear_1d": ((4, 5, 40), lambda m, t: m.nn.functional.interpolate(
        t, scale_factor=1.7, mode="linear")),
    "trilinear": ((2, 2, 6, 7, 8), lambda m, t: m.nn.functional.interpolate(
        t, scale_factor=2, mode="trilinear")),
    "nearest": ((2, 3, 14, 14), lambda m, t: m.nn.functional.interpolate(t, scale_factor=2)),
    "adaptive_avg_5": ((32, 16, 28, 28), lambda m, t: m.nn.functional.adaptive_avg_pool2d(t, 5)),
    "adaptive_avg_7": ((8, 16, 28, 28), lambda m, t: m.nn.functional.adaptive_avg_pool2d(t, 7)),
    "adaptive_avg_1": ((32, 16, 28, 28), lambda m, t: m.nn.functional.adaptive_avg_pool2d(t, 1)),
    "adaptive_avg_wide": ((2, 3, 9, 300), lambda m, t: m.nn.functional.adaptive_avg_pool2d(
        t, (4, 6))),
    "avg_pool_padded": ((4, 5, 28, 28), lambda m, t: m.nn.functional.avg_pool2d(
        t, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    "avg_pool_taps_beyond_limit": ((2, 3, 64, 80), lambda m, t: m.nn.functional.avg_pool2d(
        t, 2)),
    "reflect_pad": ((2, 3, 10, 12), lambda m, t: m.nn.functional.pad(t, (2, 3, 1, 2),
                                                                       mode="reflect")),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", MAPS)
def test_separable_maps_like_torch(torch, name, dtype):
    shape, fn = MAPS[name]
    _like_torch(torch, fn, RNG.standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("name", ["bilinear_x2", "adaptive_avg_5", "avg_pool_padded"])
def test_separable_maps_keep_nan_and_inf_to_their_windows(torch, name):
    """A NaN or inf reaches only the outputs whose window holds it, as torch's (a dense
    matmul of the map would spread it along the whole axis: 0 * nan is nan)."""
    shape, fn = MAPS[name]
    x = RNG.standard_normal(shape).astype(np.float32)
    x[0, 0, 3, 4], x[-1, -1, -2, 1] = np.nan, np.inf
    seed = RNG.standard_normal(tuple(fn(torch, torch.tensor(x)).shape)).astype(np.float32)
    (e_out, (e_grad,)), (t_out, (t_grad,)) = (_run(m, fn, [x], (0,), seed) for m in (ember, torch))
    for e, t in ((e_out, t_out), (e_grad, t_grad)):
        e, t = e.detach().cpu().numpy(), t.detach().numpy()
        assert np.array_equal(np.isnan(e), np.isnan(t)) and np.array_equal(np.isinf(e), np.isinf(t))
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


def test_separable_maps_of_non_contiguous_input(torch):
    x = RNG.standard_normal((8, 16, 14, 14)).astype(np.float32)
    _like_torch(torch, lambda m, t: m.nn.functional.interpolate(
        t.transpose(2, 3), scale_factor=2, mode="bilinear"), x)
    _like_torch(torch, lambda m, t: m.nn.functional.adaptive_avg_pool2d(
        t.permute(0, 1, 3, 2)[..., 1:], 5), x)


def test_separable_maps_double_backward(torch):
    x = RNG.standard_normal((2, 3, 10, 12))
    _second_order_like_torch(torch, lambda m, t: m.nn.functional.interpolate(
        t, scale_factor=2, mode="bilinear") ** 2, x)
    _second_order_like_torch(torch, lambda m, t: m.nn.functional.adaptive_avg_pool2d(
        t, 4) ** 2, x)
