"""The array kernels of layer_norm, group_norm and batch_norm, the BLAS sums of sum/mean/vector_norm, the
array rule of mse_loss and the unmasked path of nll_loss, against torch: values and gradients
in float32 and float64 on shapes that take each fast path (many rows, C-contiguous float
arrays of 4096 elements or more, targets all in range) and on neighbours that do not (few
rows, non-contiguous inputs, non-consecutive dims, ignored targets, weights)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

FLOATS = ("float32", "float64")


def _tol(dtype: str) -> dict:
    return {"rtol": 2e-4, "atol": 2e-5} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-10}


def _close(e, t, dtype: str, what: str = "") -> None:
    t = t.detach().numpy()
    e = e.detach().numpy()
    assert e.shape == t.shape and e.dtype == t.dtype, what
    scale = float(np.abs(t).max(initial=1.0))  # float32 sums of many terms: absolute slack
    tol = _tol(dtype)
    np.testing.assert_allclose(e, t, rtol=tol["rtol"], atol=tol["atol"] * scale, err_msg=what)


def _check(torch, fn, arrays, dtype, grads=True, seed_kind="random", const=()) -> None:
    """fn(module, *leaves) in ember and torch: equal values and gradients of each float leaf
    (arrays of other dtypes, and those at the positions ``const``, are passed as constant
    tensors, None as None)."""
    def leaves(m):
        out = []
        for k, a in enumerate(arrays):
            if a is None:
                out.append(None)
            elif a.dtype.kind == "f":
                out.append(m.tensor(a.astype(dtype), requires_grad=grads and k not in const))
            else:
                out.append(m.tensor(a))
        return out

    e_in, t_in = leaves(ember), leaves(torch)
    e_out, t_out = fn(ember, *e_in), fn(torch, *t_in)
    _close(e_out, t_out, dtype, "value")
    if not grads:
        return
    if seed_kind == "sum":  # the gradient of a sum: an array of strides 0
        e_out.sum().backward()
        t_out.sum().backward()
    else:
        seed = np.random.default_rng(3).standard_normal(tuple(t_out.shape)).astype(dtype)
        e_out.backward(ember.tensor(seed))
        t_out.backward(torch.tensor(seed))
    for k, (e, t) in enumerate(zip(e_in, t_in)):
        if t is not None and t.requires_grad:
            if t.grad is None:
                assert e.grad is None, f"gradient of input {k}"
                continue
            _close(e.grad, t.grad, dtype, f"gradient of input {k}")


def _raw_and_rules_agree(fn, arrays, dtype) -> None:
    """The engine's array rules (no create_graph) and the Tensor rules (create_graph) give
    the same gradients, bit for bit."""
    xs = [None if a is None else ember.tensor(a.astype(dtype), requires_grad=True)
          if a.dtype.kind == "f" else ember.tensor(a) for a in arrays]
    out = fn(ember, *xs)
    seed = ember.tensor(np.random.default_rng(5).standard_normal(tuple(out.shape))
                        .astype(dtype))
    leaves = [x for x in xs if x is not None and x.requires_grad]
    raw = ember.autograd.grad(out, leaves, seed, retain_graph=True)
    rules = ember.autograd.grad(out, leaves, seed, create_graph=True)
    for r, t in zip(raw, rules):
        np.testing.assert_array_equal(r.detach().numpy(), t.detach().numpy())


def _rand(*shape, seed=0, loc=0.0):
    return np.random.default_rng(seed).standard_normal(shape) + loc


# --------------------------------------------------------------------------- layer_norm

LN_CASES = [
    # (input shape, normalized_shape): many rows (weight by a BLAS outer product), few rows,
    # several normalised dims, one row, a 1-d input
    ((16, 64, 256), (256,)),
    ((4, 8, 32), (8, 32)),
    ((3, 5), (5,)),
    ((2, 3, 4), (3, 4)),
    ((1, 300), (300,)),
    ((7,), (7,)),
    ((130, 40), (40,)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, ns", LN_CASES)
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_layer_norm_matches_torch(torch, shape, ns, affine, dtype):
    w = _rand(*ns, seed=1) if affine in ("both", "weight") else None
    b = _rand(*ns, seed=2) if affine in ("both", "bias") else None
    _check(torch, lambda m, x, w, b: m.nn.functional.layer_norm(x, ns, w, b, eps=1e-3),
           [_rand(*shape, loc=3.0), w, b], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm_non_contiguous_input_and_sum_gradient(torch, dtype):
    fn = lambda m, x, w, b: m.nn.functional.layer_norm(x.transpose(0, 1), (96,), w, b)
    arrays = [_rand(80, 70, 96), _rand(96, seed=1), _rand(96, seed=2)]
    _check(torch, fn, arrays, dtype)
    _check(torch, fn, arrays, dtype, seed_kind="sum")


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm_module_and_empty_batch(torch, dtype):
    _check(torch, lambda m, x: m.nn.LayerNorm(64).to(getattr(m, dtype))(x),
           [_rand(100, 64)], dtype, seed_kind="sum")
    _check(torch, lambda m, x, w, b: m.nn.functional.layer_norm(x, (4,), w, b),
           [_rand(0, 4), _rand(4, seed=1), _rand(4, seed=2)], dtype)


@pytest.mark.parametrize("shape, ns", [((70, 64), (64,)), ((3, 4), (4,))])
def test_layer_norm_array_rule_is_the_tensor_rule(shape, ns):
    _raw_and_rules_agree(lambda m, x, w, b: m.nn.functional.layer_norm(x, ns, w, b),
                         [_rand(*shape), _rand(*ns, seed=1), _rand(*ns, seed=2)], "float32")


def test_layer_norm_double_backward(torch):
    x = _rand(65, 64)
    w = _rand(64, seed=1)

    def second(m):
        xs = m.tensor(x, requires_grad=True)
        ws = m.tensor(w, requires_grad=True)
        y = m.nn.functional.layer_norm(xs, (64,), ws, None)
        (gx, gw) = m.autograd.grad((y * y.detach().sin()).sum(), (xs, ws), create_graph=True)
        return m.autograd.grad((gx * gx).sum() + gw.sum(), (xs, ws))

    for e, t in zip(second(ember), second(torch)):
        _close(e, t, "float64")


def test_layer_norm_gradgradcheck():
    x = ember.tensor(_rand(66, 4), requires_grad=True)
    w = ember.tensor(_rand(4, seed=1), requires_grad=True)
    b = ember.tensor(_rand(4, seed=2), requires_grad=True)
    fn = lambda x, w, b: ember.nn.functional.layer_norm(x, (4,), w, b)
    assert ember.autograd.gradcheck(fn, (x, w, b))
    assert ember.autograd.gradgradcheck(fn, (x, w, b))


def test_layer_norm_large_mean_is_stable(torch):
    """Two passes (centre, then the variance): no cancellation for rows far from 0."""
    x = (_rand(64, 128) + 3e3).astype(np.float32)  # (one pass, E[x^2] - mean^2, is 50% off)
    e = ember.nn.functional.layer_norm(ember.tensor(x), (128,)).numpy()
    t = torch.nn.functional.layer_norm(torch.tensor(x), (128,)).numpy()
    np.testing.assert_allclose(e, t, atol=2e-3)


# --------------------------------------------------------------------------- group_norm

GN_CASES = [
    ((32, 16, 28, 28), 4), ((2, 6, 5), 3), ((4, 8), 2), ((3, 6, 2, 2), 1), ((3, 6, 2, 2), 6),
    ((70, 4, 16), 2),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, groups", GN_CASES)
@pytest.mark.parametrize("affine", ["both", "weight", "none"])  # (torch's backward fails
def test_group_norm_matches_torch(torch, shape, groups, affine, dtype):  # for a bias alone)
    c = shape[1]
    w = _rand(c, seed=1) if affine in ("both", "weight") else None
    b = _rand(c, seed=2) if affine in ("both", "bias") else None
    _check(torch, lambda m, x, w, b: m.nn.functional.group_norm(x, groups, w, b, eps=1e-3),
           [_rand(*shape, loc=-2.0), w, b], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_group_norm_non_contiguous_and_sum_gradient(torch, dtype):
    fn = lambda m, x, w, b: m.nn.functional.group_norm(x.transpose(2, 3), 2, w, b)
    arrays = [_rand(8, 4, 10, 12), _rand(4, seed=1), _rand(4, seed=2)]
    _check(torch, fn, arrays, dtype)
    _check(torch, fn, arrays, dtype, seed_kind="sum")


def test_group_norm_empty_spatial(torch):
    _check(torch, lambda m, x, w, b: m.nn.functional.group_norm(x, 2, w, b),
           [_rand(2, 4, 0), _rand(4, seed=1), _rand(4, seed=2)], "float32")


def test_group_norm_array_rule_is_the_tensor_rule():
    _raw_and_rules_agree(lambda m, x, w, b: m.nn.functional.group_norm(x, 2, w, b),
                         [_rand(8, 4, 30), _rand(4, seed=1), _rand(4, seed=2)], "float32")


def test_group_norm_gradgradcheck():
    x = ember.tensor(_rand(3, 4, 5), requires_grad=True)
    w = ember.tensor(_rand(4, seed=1), requires_grad=True)
    b = ember.tensor(_rand(4, seed=2), requires_grad=True)
    fn = lambda x, w, b: ember.nn.functional.group_norm(x, 2, w, b)
    assert ember.autograd.gradcheck(fn, (x, w, b))
    assert ember.autograd.gradgradcheck(fn, (x, w, b))


# --------------------------------------------------------------------------- batch_norm


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(32, 16, 28, 28), (8, 3), (70, 6), (5, 4, 7), (4, 3, 1, 1)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_matches_torch(torch, shape, training, affine, dtype):
    c = shape[1]
    w, b = (_rand(c, seed=1), _rand(c, seed=2)) if affine else (None, None)
    stats = {}

    def fn(m, x, w, b):
        rm = m.tensor(_rand(c, seed=3).astype(dtype))
        rv = m.tensor((np.random.default_rng(4).random(c) + 0.5).astype(dtype))
        out = m.nn.functional.batch_norm(x, rm, rv, w, b, training=training, eps=1e-3)
        stats[m.__name__] = (rm, rv)
        return out

    _check(torch, fn, [_rand(*shape, loc=1.5), w, b], dtype)
    for e, t in zip(stats["ember"], stats["torch"]):  # the running statistics updated alike
        _close(e, t, dtype, "running statistics")


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_array_rule_is_the_tensor_rule(training):
    def fn(m, x, w, b):
        rm, rv = m.zeros(4, dtype=m.float32), m.ones(4, dtype=m.float32)
        return m.nn.functional.batch_norm(x, rm, rv, w, b, training=training)

    _raw_and_rules_agree(fn, [_rand(8, 4, 30), _rand(4, seed=1), _rand(4, seed=2)], "float32")


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradgradcheck(training):
    x = ember.tensor(_rand(3, 4, 5), requires_grad=True)
    w = ember.tensor(_rand(4, seed=1), requires_grad=True)
    b = ember.tensor(_rand(4, seed=2), requires_grad=True)

    def fn(x, w, b):
        rm, rv = ember.zeros(4, dtype=ember.float64), ember.ones(4, dtype=ember.float64)
        return ember.nn.functional.batch_norm(x, rm, rv, w, b, training=training)

    assert ember.autograd.gradcheck(fn, (x, w, b))
    assert ember.autograd.gradgradcheck(fn, (x, w, b))


# --------------------------------------------------------------------------- sum, mean, norm

SUM_CASES = [
    ((16, 64, 256), None), ((16, 64, 256), 1), ((16, 64, 256), 2), ((16, 64, 256), (0, 1)),
    ((16, 64, 256), (1, 2)), ((16, 64, 256), 0), ((16, 64, 256), (0, 2)),  # not consecutive
    ((3, 10007), None), ((3, 10007), 1), ((10007, 3), 0), ((5000,), 0), ((64, 64, 2), 1),
    ((5, 5), 1), ((0, 5000), 1), ((2, 4096), -1), ((4096, 1), 1), ((20000, 3), 1),
    ((20000, 3), 0), ((8, 1000, 64), 1),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, dim", SUM_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_and_mean_match_torch(torch, shape, dim, keepdim, dtype):
    x = _rand(*shape, loc=1.0)
    if dim is None and not keepdim:
        _check(torch, lambda m, x: m.sum(x), [x], dtype)
        _check(torch, lambda m, x: m.mean(x), [x], dtype)
    else:
        d = tuple(range(len(shape))) if dim is None else dim
        _check(torch, lambda m, x: x.sum(d, keepdim=keepdim), [x], dtype)
        _check(torch, lambda m, x: x.mean(d, keepdim=keepdim), [x], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sum_of_non_contiguous_and_integer_tensors(torch, dtype):
    _check(torch, lambda m, x: x.t().sum(0), [_rand(300, 200)], dtype)
    _check(torch, lambda m, x: x[:, ::2].mean(1), [_rand(300, 200)], dtype)
    ints = np.arange(20000, dtype=np.int64).reshape(100, 200)
    assert (ember.tensor(ints).sum(1).numpy() == torch.tensor(ints).sum(1).numpy()).all()


def test_sum_keeps_nan_and_inf(torch):
    x = _rand(64, 128).astype(np.float32)
    x[3, 5], x[10, 1] = np.nan, np.inf
    x[20, 2], x[20, 3] = np.inf, -np.inf
    for fn in (lambda m, x: x.sum(1), lambda m, x: x.mean(0), lambda m, x: x.sum()):
        e, t = fn(ember, ember.tensor(x)), fn(torch, torch.tensor(x))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-4)


def test_sum_with_dtype_argument(torch):
    x = _rand(100, 100).astype(np.float32)
    _close(ember.tensor(x).sum(1, dtype=ember.float64), torch.tensor(x).sum(1, dtype=torch.float64),
           "float64")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, dim, keepdim", [((256, 256), None, False), ((10007,), None, False),
                                                 ((64, 100), 1, False), ((64, 100), None, True),
                                                 ((5, 3), None, False)])
def test_vector_norm_matches_torch(torch, shape, dim, keepdim, dtype):
    _check(torch, lambda m, x: m.linalg.vector_norm(x, 2, dim, keepdim), [_rand(*shape)], dtype)


def test_clip_grad_norm_matches_torch(torch):
    total = []
    for m in (ember, torch):
        ps = [m.tensor(_rand(256, 256, seed=1).astype(np.float32), requires_grad=True),
              m.tensor(_rand(256, seed=2).astype(np.float32), requires_grad=True)]
        for p, s in zip(ps, (3, 4)):
            p.grad = m.tensor(_rand(*p.shape, seed=s).astype(np.float32))
        total.append((m.nn.utils.clip_grad_norm_(ps, 1.0), [p.grad for p in ps]))
    (e_n, e_g), (t_n, t_g) = total
    _close(e_n, t_n, "float32")
    for e, t in zip(e_g, t_g):
        _close(e, t, "float32")


# --------------------------------------------------------------------------- mse, nll, cross_entropy


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", [((256, 512), (256, 512)), ((3, 4), (3, 4)),
                                    ((64, 100), (100,)), ((0, 5000), (0, 5000))])
def test_mse_loss_matches_torch(torch, shapes, reduction, dtype):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the size warning of a broadcast target)
        _check(torch, lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction=reduction),
               [_rand(*shapes[0]), _rand(*shapes[1], seed=1)], dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_array_rule_is_the_tensor_rule(reduction):
    _raw_and_rules_agree(lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction=reduction),
                         [_rand(70, 80), _rand(70, 80, seed=1)], "float32")


def _targets(n, c, seed=0):
    return np.random.default_rng(seed).integers(0, c, n).astype(np.int64)


NLL_CASES = [
    {}, {"reduction": "sum"}, {"reduction": "none"},
    {"ignore_index": 3}, {"ignore_index": 0, "reduction": "none"},  # ignored targets present
    {"ignore_index": 1000}, {"ignore_index": -1},  # out of the targets' range: no mask
    {"weight": True}, {"weight": True, "reduction": "sum"}, {"weight": True, "ignore_index": 2},
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kw", NLL_CASES)
@pytest.mark.parametrize("shape", [(256, 512), (7, 5)])
def test_nll_and_cross_entropy_match_torch(torch, shape, kw, dtype):
    kw = dict(kw)
    t = _targets(shape[0], shape[1])
    t[:3] = [0, 2, 3]  # some targets that ignore_index names
    x = _rand(*shape)
    w = _rand(shape[1], seed=4) ** 2 if kw.pop("weight", False) else None
    for name in ("nll_loss", "cross_entropy"):
        _check(torch, lambda m, x, t, w, name=name: getattr(m.nn.functional, name)(x, t, w, **kw),
               [x, t, w], dtype, const=(2,))


@pytest.mark.parametrize("dtype", FLOATS)
def test_cross_entropy_other_targets_match_torch(torch, dtype):
    x = _rand(64, 10)
    t = _targets(64, 10)
    ce = lambda m, x, t, **kw: m.nn.functional.cross_entropy(x, t, **kw)
    _check(torch, lambda m, x, t: ce(m, x, t, label_smoothing=0.2), [x, t], dtype)
    _check(torch, lambda m, x, t: ce(m, x, t, label_smoothing=0.1, ignore_index=3), [x, t],
           dtype)
    _check(torch, lambda m, x, t: ce(m, x, t), [x, t.astype(np.uint8)], dtype)  # byte targets
    probs = np.random.default_rng(1).dirichlet(np.ones(10), 64)
    _check(torch, lambda m, x, p: ce(m, x, p.detach()), [x, probs], dtype)
    _check(torch, lambda m, x, t: ce(m, x, t), [_rand(4, 10, 3, 2), _targets(24, 10)
                                                 .reshape(4, 3, 2)], dtype)
    _check(torch, lambda m, x, t: ce(m, x, t), [_rand(10), np.array(4)], dtype)
    _check(torch, lambda m, x, t: ce(m, x.t(), t), [_rand(10, 64), t], dtype)  # non-contiguous


def test_nll_out_of_range_target_raises():
    x = ember.tensor(_rand(4, 5).astype(np.float32))
    for bad in (5, -2):
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
            ember.nn.functional.nll_loss(x, ember.tensor(np.array([0, 1, bad, 2])))
