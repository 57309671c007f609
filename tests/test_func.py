"""``ember.func`` against ``torch.func``: each transform on the same functions and inputs, their
nesting, argnums/has_aux, pytrees, errors in torch's words, vmap's in_dims/out_dims/nesting/
chunk_size/randomness and its batching rules, per-sample gradients against a loop, and the
pytorch.org tutorials "Per-sample-gradients", "Jacobians, Hessians, hvp, vhp, and more",
"Model ensembling" and "Neural Tangent Kernels" run with both libraries."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import ember
import ember.func as efunc

RNG = np.random.default_rng(0)


def arr(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ints(high: int, *shape) -> np.ndarray:
    return RNG.integers(0, high, shape)


def _to(lib, a):
    """numpy inputs (nested in tuples, lists, dicts) as ``lib``'s tensors."""
    if isinstance(a, np.ndarray):
        return lib.tensor(a)
    if isinstance(a, (list, tuple)):
        return type(a)(_to(lib, x) for x in a)
    if isinstance(a, dict):
        return {k: _to(lib, v) for k, v in a.items()}
    return a


def _np(x):
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return x.detach().cpu().numpy()
    if isinstance(x, (list, tuple)):
        return [_np(y) for y in x]
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    return x


def _assert_same(e, t, tol: float) -> None:
    if isinstance(t, list):
        assert isinstance(e, list) and len(e) == len(t)
        for a, b in zip(e, t):
            _assert_same(a, b, tol)
    elif isinstance(t, dict):
        assert e.keys() == t.keys()
        for k in t:
            _assert_same(e[k], t[k], tol)
    elif isinstance(t, np.ndarray):
        assert e.shape == t.shape and e.dtype == t.dtype
        np.testing.assert_allclose(e, t, rtol=tol, atol=tol)
    else:
        assert e == t


def check(torch, make, *args, tol: float = 1e-4, fallbacks: bool = False):
    """``make(lib, func)`` with ember and with torch on the same inputs: the same values. Unless
    ``fallbacks``, ember must batch every op (no per-example loop)."""
    expected = _np(make(torch, torch.func)(*_to(torch, args)))
    before = sum(efunc.vmap_fallback_counts.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _np(make(ember, efunc)(*_to(ember, args)))
    _assert_same(got, expected, tol)
    if not fallbacks:
        assert sum(efunc.vmap_fallback_counts.values()) == before, \
            dict(efunc.vmap_fallback_counts)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    try:
        import torch
    except ImportError:
        yield
        return
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# ------------------------------------------------------------------------- vmap batching rules
def F(lib):
    return lib.nn.functional


VMAP = {
    "elementwise": (lambda L, f: f.vmap(lambda x: (x * 2).exp().sin() + x.sum()), (arr(4, 3),)),
    "plain operand of higher rank": (lambda L, f: f.vmap(lambda x, y: x + y, in_dims=(0, None)),
                                     (arr(3, 4), arr(2, 4))),
    "0-dim operand keeps torch's promotion": (
        lambda L, f: f.vmap(lambda a, b: a * b, in_dims=(0, None)),
        (RNG.standard_normal(3), arr(4))),
    "sum over a dim": (lambda L, f: f.vmap(lambda x: x.sum(0)), (arr(4, 3, 2),)),
    "sum of everything": (lambda L, f: f.vmap(lambda x: x.sum()), (arr(4, 3, 2),)),
    "mean keepdim": (lambda L, f: f.vmap(lambda x: x.mean(-1, keepdim=True)), (arr(4, 3, 2),)),
    "reduction of a 0-dim example": (lambda L, f: f.vmap(lambda x: x.sum(0)), (arr(4),)),
    "std, var, norm": (lambda L, f: f.vmap(lambda x: (x.std(1), x.var(), x.norm(),
                                                     x.norm(p=1, dim=1))), (arr(4, 3, 2),)),
    "max and argmax": (lambda L, f: f.vmap(lambda x: (x.max(0), x.max(), x.argmax(),
                                                     x.amin(-1))), (arr(4, 3, 2),)),
    "softmax and log_softmax": (lambda L, f: f.vmap(lambda x: (L.softmax(x, -1),
                                                               F(L).log_softmax(x, dim=0))),
                                (arr(4, 3, 5),)),
    "sort, topk, cumsum": (lambda L, f: f.vmap(lambda x: (x.sort(0), x.topk(2), x.cumsum(1))),
                           (arr(4, 3, 5),)),
    "transpose, T, mT, permute": (lambda L, f: f.vmap(lambda x: (x.transpose(0, 1), x[0].T,
                                                                 x.mT, x.permute(2, 0, 1))),
                                  (arr(4, 3, 5, 2),)),
    "view, reshape, flatten": (lambda L, f: f.vmap(lambda x: (x.view(-1), x.reshape(5, 3),
                                                              x.flatten())), (arr(4, 3, 5),)),
    "squeeze, unsqueeze, expand": (lambda L, f: f.vmap(lambda x: (x.squeeze(), x.unsqueeze(-1),
                                                                  x.expand(2, 1, 3))),
                                   (arr(4, 1, 3),)),
    "cat and stack with an unbatched operand": (
        lambda L, f: f.vmap(lambda x, y: (L.cat([x, y], 0), L.stack([x, y[:3]], 1)),
                            in_dims=(0, None)), (arr(4, 3), arr(5))),
    "unbind and split": (lambda L, f: f.vmap(lambda x: (x.unbind(1), x.split(1, dim=1))),
                         (arr(4, 3, 2),)),
    "len and iteration": (lambda L, f: f.vmap(lambda x: sum(r for r in x) * len(x)),
                          (arr(4, 3, 2),)),
    "indexing: ints and slices": (lambda L, f: f.vmap(lambda x: (x[1], x[:, 1:], x[..., 0])),
                                  (arr(4, 3, 2),)),
    "indexing: an unbatched index": (lambda L, f: f.vmap(lambda x, i: x[i], in_dims=(0, None)),
                                     (arr(4, 3, 2), np.array([0, 2, 2]))),
    "indexing: a batched index": (lambda L, f: f.vmap(lambda x, i: (x[i], x[:, i])),
                                  (arr(4, 3, 3), ints(3, 4, 2))),
    "indexing: non-adjacent indices": (lambda L, f: f.vmap(lambda x, i: x[i, :, i]),
                                       (arr(4, 3, 5, 3), ints(3, 4, 2))),
    "setitem": (lambda L, f: f.vmap(_setitem), (arr(4, 3, 2), arr(4, 2))),
    "in-place with an unbatched operand": (lambda L, f: f.vmap(lambda x, y: x.clone().add_(y),
                                                               in_dims=(0, None)),
                                           (arr(4, 3), arr(3))),
    "gather and index_select": (lambda L, f: f.vmap(lambda x, i: (x.gather(1, i),
                                                                  x.index_select(1, i[0]))),
                                (arr(4, 3, 5), ints(5, 4, 3, 2))),
    "where and clamp": (lambda L, f: f.vmap(lambda x, m: (L.where(x > 0, x, 0.),
                                                          x.clamp(min=m))), (arr(4, 3), arr(4))),
    "matmul: example @ plain matrix": (lambda L, f: f.vmap(lambda x, w: x @ w,
                                                           in_dims=(0, None)),
                                       (arr(5, 3), arr(3, 4))),
    "matmul: plain matrix @ example": (lambda L, f: f.vmap(lambda w, x: w @ x,
                                                           in_dims=(None, 0)),
                                       (arr(4, 3), arr(5, 3))),
    "matmul: both batched, broadcast": (lambda L, f: f.vmap(lambda a, b: a @ b,
                                                            in_dims=(0, None)),
                                        (arr(5, 2, 3), arr(7, 3, 4))),
    "torch.dot, torch.mm passed to vmap": (
        lambda L, f: lambda a, b, m, w: (f.vmap(L.dot)(a, b),
                                         f.vmap(L.mm, in_dims=(0, None))(m, w)),
        (arr(5, 3), arr(5, 3), arr(5, 2, 3), arr(3, 4))),
    "outer, addmm": (lambda L, f: f.vmap(lambda a, b, m: (L.outer(a, b), L.addmm(m, a[:, None],
                                                                                  b[None]))),
                     (arr(4, 3), arr(4, 2), arr(4, 3, 2))),
    "einsum": (lambda L, f: f.vmap(lambda a, b: (L.einsum("ij,jk->ik", a, b),
                                                 L.einsum("ij,jk", a, b))),
               (arr(4, 2, 3), arr(4, 3, 5))),
    "linear": (lambda L, f: f.vmap(lambda x, w, b: F(L).linear(x, w, b), in_dims=(0, None, None)),
               (arr(5, 3), arr(4, 3), arr(4))),
    "linear with batched weights": (lambda L, f: f.vmap(lambda x, w, b: F(L).linear(x, w, b),
                                                        in_dims=(None, 0, 0)),
                                    (arr(2, 3), arr(5, 4, 3), arr(5, 4))),
    "conv2d": (lambda L, f: f.vmap(lambda x, w: F(L).conv2d(x, w, padding=1), in_dims=(0, None)),
               (arr(3, 2, 4, 6, 6), arr(5, 4, 3, 3))),
    "conv2d with batched weights and groups": (
        lambda L, f: f.vmap(lambda x, w, b: F(L).conv2d(x, w, b, groups=2)),
        (arr(3, 2, 4, 6, 6), arr(3, 6, 2, 3, 3), arr(3, 6))),
    "pooling, interpolate, pad": (
        lambda L, f: f.vmap(lambda x: (F(L).max_pool2d(x, 2), F(L).avg_pool2d(x, 3),
                                       F(L).interpolate(x, scale_factor=2),
                                       F(L).pad(x, (1, 2)),
                                       F(L).pad(x[0], (1, 1), mode="reflect"))),
        (arr(3, 2, 4, 6, 6),)),
    "layer_norm, group_norm, batch_norm": (
        lambda L, f: f.vmap(lambda x, w: (F(L).layer_norm(x, (5,), w[0]),
                                          F(L).group_norm(x, 2, w[0, :4]),
                                          F(L).batch_norm(x, None, None, training=True))),
        (arr(3, 2, 4, 5), arr(3, 2, 5))),
    "embedding": (lambda L, f: f.vmap(lambda i, w: F(L).embedding(i, w), in_dims=(0, None)),
                  (ints(4, 3, 2), arr(4, 3))),
    "scaled_dot_product_attention": (
        lambda L, f: f.vmap(F(L).scaled_dot_product_attention),
        (arr(4, 3, 5), arr(4, 6, 5), arr(4, 6, 2))),
    "losses": (lambda L, f: f.vmap(lambda x, y, p: (
        F(L).mse_loss(x, y), F(L).l1_loss(x, y, reduction="sum"), F(L).smooth_l1_loss(x, y),
        F(L).binary_cross_entropy_with_logits(x, p), F(L).kl_div(x, p, reduction="batchmean"))),
        (arr(4, 3, 2), arr(4, 3, 2), np.abs(arr(4, 3, 2)) % 1)),
    "cross_entropy and nll_loss": (
        lambda L, f: f.vmap(lambda x, t, w: (
            F(L).cross_entropy(x, t), F(L).cross_entropy(x[0], t[0]),
            F(L).cross_entropy(x, t, weight=w, ignore_index=1),
            F(L).cross_entropy(x, t, label_smoothing=0.1), F(L).nll_loss(x, t, reduction="sum"),
            F(L).cross_entropy(x, x.softmax(-1))), in_dims=(0, 0, None)),
        (arr(4, 5, 3), ints(3, 4, 5), np.abs(arr(3)))),
    "one_hot, new_zeros, zeros_like": (
        lambda L, f: f.vmap(lambda i, x: (F(L).one_hot(i, 4), x.new_zeros(2) + x[0],
                                          L.zeros_like(x) + 1)),
        (ints(4, 3, 2), arr(3, 5))),
    "dict inputs with per-key in_dims": (
        lambda L, f: f.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": None},)),
        ({"a": arr(4, 3), "b": arr(3)},)),
    "in_dims and out_dims": (lambda L, f: f.vmap(lambda x: (x * 2, x.sum()), in_dims=1,
                                                 out_dims=(1, 0)), (arr(3, 4, 5),)),
    "out_dims None and an unbatched output": (
        lambda L, f: f.vmap(lambda x: (x, 3, L.ones(2)), out_dims=(0, None, 0)), (arr(4, 3),)),
    "nested vmap": (lambda L, f: f.vmap(f.vmap(lambda x, y: x * y + x.sum()), in_dims=(0, None)),
                    (arr(3, 4, 5), arr(4, 5))),
    "nested vmap, matmul": (lambda L, f: f.vmap(f.vmap(lambda a, b: a @ b, in_dims=(0, None)),
                                                in_dims=(None, 0)), (arr(4, 3), arr(2, 3, 5))),
    "chunk_size": (lambda L, f: f.vmap(lambda x: (x.sin().sum(), x * 2), chunk_size=3),
                   (arr(8, 5),)),
}


def _setitem(x, y):
    z = x.clone()
    z[1:, 0] = y
    z[0] = 7.0
    return z


@pytest.mark.parametrize("case", list(VMAP))
def test_vmap_matches_torch(torch, case):
    make, args = VMAP[case]
    check(torch, make, *args)


def test_vmap_rules_that_torch_lacks_match_a_loop():
    """Batched weights for embedding, label smoothing with class weights (torch's vmap
    refuses both): ember's rules against a loop over the examples."""
    i, w = ember.tensor(ints(4, 3, 2)), ember.tensor(arr(3, 4, 3))
    out = efunc.vmap(F(ember).embedding)(i, w)
    assert ember.allclose(out, ember.stack([F(ember).embedding(a, b) for a, b in zip(i, w)]))
    x, t, cw = ember.tensor(arr(4, 5, 3)), ember.tensor(ints(3, 4, 5)), ember.tensor(arr(3) ** 2)

    def loss(a, b):
        return F(ember).cross_entropy(a, b, weight=cw, label_smoothing=0.2)

    expected = ember.stack([loss(a, b) for a, b in zip(x, t)])
    assert ember.allclose(efunc.vmap(loss)(x, t), expected, atol=1e-6)


def test_vmap_of_an_op_without_a_rule_loops_and_says_so():
    before = efunc.vmap_fallback_counts["kron"]
    x, y = ember.tensor(arr(4, 2)), ember.tensor(arr(4, 3))
    efunc._batched._WARNED.discard("kron")
    with pytest.warns(UserWarning, match="performance drop .* batching rule for kron"):
        out = efunc.vmap(ember.kron)(x, y)
    assert efunc.vmap_fallback_counts["kron"] == before + 1
    assert ember.allclose(out, ember.stack([ember.kron(a, b) for a, b in zip(x, y)]))


def test_vmap_of_an_op_reached_outside_a_dispatcher_loops_over_the_function(torch):
    kron = ember.kron  # taken before vmap swaps the namespace: no dispatch
    x, y = ember.randn(4, 2), ember.randn(4, 3)
    efunc._batched._WARNED.clear()
    with pytest.warns(UserWarning, match="batching rule for kron .*once per example"):
        out = efunc.vmap(lambda a, b: kron(a, b) + 1)(x, y)
    expected = ember.stack([ember.kron(a, b) + 1 for a, b in zip(x, y)])
    assert ember.allclose(out, expected)
    assert ember.kron is kron  # the namespaces are restored


# ------------------------------------------------------------------------- vmap randomness
def test_vmap_random_op_in_error_mode_raises_torch_error(torch):
    for lib, f in ((torch, torch.func), (ember, efunc)):
        for fn in (lambda x, lib=lib: x + lib.randn(3), lambda x, lib=lib: F(lib).dropout(x)):
            with pytest.raises(RuntimeError, match="called random operation while in "
                               "randomness error mode"):
                f.vmap(fn)(lib.ones(4, 3))
    assert efunc.vmap(lambda x: F(ember).dropout(x, training=False))(ember.ones(4, 3)).shape \
        == (4, 3)


@pytest.mark.parametrize("op", ["randn", "rand_like", "dropout", "bernoulli", "uniform_",
                                "randint"])
def test_vmap_randomness_different_and_same(op):
    fns = {
        "randn": lambda x: x + ember.randn(50),
        "rand_like": lambda x: ember.rand_like(x),
        "dropout": lambda x: F(ember).dropout(x, 0.5),
        "bernoulli": lambda x: ember.bernoulli(x * 0.5),
        "uniform_": lambda x: x.clone().uniform_(),
        "randint": lambda x: ember.randint(0, 1000, (50,)) + x,
    }
    x = ember.ones(4, 50)
    different = efunc.vmap(fns[op], randomness="different")(x)
    same = efunc.vmap(fns[op], randomness="same")(x)
    assert different.shape == same.shape == (4, 50)
    assert bool((different[0] != different[1]).any())
    assert bool((same[0] == same[1]).all()) and bool((same[0] == same[3]).all())


def test_vmap_same_randomness_is_the_same_across_chunks():
    out = efunc.vmap(lambda x: x * ember.randn(3), randomness="same", chunk_size=2)(
        ember.ones(5, 3))
    assert bool((out == out[0]).all())


# ------------------------------------------------------------------------- vmap errors
def _error(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - compared as type and text
        return type(exc), str(exc)
    return None


def named_fn(x, y=None):
    return x


VMAP_ERRORS = {
    "in_dims not int or tuple": lambda L, f: f.vmap(named_fn, in_dims=0.5)(L.ones(2, 3)),
    "in_dim not int": lambda L, f: f.vmap(named_fn, in_dims=(1.5,))(L.ones(2, 3)),
    "in_dim on a non-tensor": lambda L, f: f.vmap(named_fn, in_dims=(0,))(3.0),
    "in_dim out of range": lambda L, f: f.vmap(named_fn, in_dims=1)(L.ones(3)),
    "nothing to vmap over": lambda L, f: f.vmap(named_fn, in_dims=(None,))(L.ones(2)),
    "no inputs": lambda L, f: f.vmap(named_fn)(),
    "in_dims structure": lambda L, f: f.vmap(named_fn, in_dims=(0, 0))(L.ones(2)),
    "batch sizes differ": lambda L, f: f.vmap(named_fn)(L.ones(3), L.ones(4)),
    "bad randomness": lambda L, f: f.vmap(named_fn, randomness="foo")(L.ones(3)),
    "bad chunk_size": lambda L, f: f.vmap(named_fn, chunk_size=0)(L.ones(3)),
    "bad out_dims": lambda L, f: f.vmap(named_fn, out_dims="a")(L.ones(2)),
    "out_dims structure": lambda L, f: f.vmap(named_fn, out_dims=(0, 1))(L.ones(3, 2)),
    "non-tensor output": lambda L, f: f.vmap(lambda x: 3)(L.ones(3, 2)),
    "batched output with out_dims None": lambda L, f: f.vmap(named_fn, out_dims=None)(L.ones(2)),
    "item": lambda L, f: f.vmap(lambda x: x.item())(L.ones(2)),
    "float()": lambda L, f: f.vmap(lambda x: float(x))(L.ones(2)),
    "control flow": lambda L, f: f.vmap(lambda x: x if x > 0 else -x)(L.ones(2)),
    "nonzero": lambda L, f: f.vmap(lambda x: x.nonzero())(L.ones(2, 3)),
    "masked_select over a batched mask": lambda L, f: f.vmap(lambda x: x.masked_select(x > 0))(
        L.ones(2, 3)),
    "backward inside vmap": lambda L, f: f.vmap(lambda x: x.backward())(L.ones(2, 3)),
    "batch norm training with unbatched running stats": lambda L, f: f.vmap(
        L.nn.BatchNorm1d(3))(L.ones(4, 2, 3)),
    "in-place into a less batched tensor": lambda L, f: f.vmap(
        lambda a: f.vmap(lambda b: a.copy_(b))(L.ones(4, 3)))(L.ones(2, 3)),
}


@pytest.mark.parametrize("case", list(VMAP_ERRORS))
def test_vmap_errors_match_torch(torch, case):
    make = VMAP_ERRORS[case]
    expected = _error(lambda: make(torch, torch.func))
    got = _error(lambda: make(ember, efunc))
    assert expected is not None
    assert got == expected


# ------------------------------------------------------------------------- autodiff transforms
def loss3(x):
    return (x.sin() * x.sum()).sum()


def vec3(x):
    return x.sin() * x.sum()


TRANSFORMS = {
    "grad": (lambda L, f: f.grad(loss3), (arr(3),)),
    "grad_and_value": (lambda L, f: f.grad_and_value(loss3), (arr(3),)),
    "grad argnums tuple": (lambda L, f: f.grad(lambda x, y: (x * y.exp()).sum(),
                                               argnums=(0, 1)), (arr(3), arr(3))),
    "grad argnums negative": (lambda L, f: f.grad(lambda x, y: (x * y.exp()).sum(),
                                                  argnums=-1), (arr(3), arr(3))),
    "grad has_aux": (lambda L, f: f.grad(lambda x: ((x ** 3).sum(), {"sq": x ** 2}),
                                         has_aux=True), (arr(3),)),
    "grad_and_value has_aux": (lambda L, f: f.grad_and_value(lambda x: ((x ** 3).sum(), x.cos()),
                                                             has_aux=True), (arr(3),)),
    "grad of a pytree": (lambda L, f: f.grad(lambda p: (p["w"] * p["b"][0]).sum()
                                             + p["b"][1].sum()),
                         ({"w": arr(3), "b": [arr(3), arr(2)]},)),
    "grad(grad)": (lambda L, f: f.grad(f.grad(lambda x: x.sin() * x ** 2)),
                   (np.array(0.7, np.float32),)),
    "grad of a grad": (lambda L, f: f.grad(lambda x: f.grad(lambda y: (y ** 3).sum())(x).sum()),
                       (arr(3),)),
    "grad closing over the outer input": (
        lambda L, f: f.grad(lambda x: f.grad(lambda y: (x * y).sin().sum())(x * 2).sum()),
        (arr(3),)),
    "vjp": (lambda L, f: lambda x: f.vjp(vec3, x)[1](L.ones(3)), (arr(3),)),
    "vjp of several outputs and inputs": (
        lambda L, f: lambda x, y: f.vjp(lambda a, b: (a * b, a.sum()), x, y)[1](
            (L.ones(3), L.tensor(2.0))), (arr(3), arr(3))),
    "vjp has_aux": (lambda L, f: lambda x: f.vjp(lambda x: (x.sin(), x.cos()), x,
                                                 has_aux=True)[2], (arr(3),)),
    "jvp": (lambda L, f: lambda x, t: f.jvp(vec3, (x,), (t,)), (arr(3), arr(3))),
    "jvp has_aux": (lambda L, f: lambda x, t: f.jvp(lambda x: (x.sin(), x.cos()), (x,), (t,),
                                                    has_aux=True), (arr(3), arr(3))),
    "jvp of two inputs": (lambda L, f: lambda a, b, t, u: f.jvp(lambda a, b: a @ b, (a, b),
                                                                (t, u)),
                          (arr(2, 3), arr(3, 4), arr(2, 3), arr(3, 4))),
    "linearize": (lambda L, f: lambda x, t: f.linearize(vec3, x)[1](t), (arr(3), arr(3))),
    "jacrev": (lambda L, f: f.jacrev(vec3), (arr(3),)),
    "jacrev of a matrix function": (lambda L, f: f.jacrev(lambda x: x @ x.T), (arr(2, 3),)),
    "jacrev argnums and several outputs": (
        lambda L, f: f.jacrev(lambda x, y: (x * y, x.sum()), argnums=(0, 1)), (arr(3), arr(3))),
    "jacrev chunk_size": (lambda L, f: lambda x: (f.jacrev(vec3, chunk_size=2)(x),
                                                  f.jacrev(vec3, chunk_size=1)(x)), (arr(5),)),
    "jacrev has_aux": (lambda L, f: f.jacrev(lambda x: (x.sin(), x.cos()), has_aux=True),
                       (arr(3),)),
    "jacfwd": (lambda L, f: f.jacfwd(vec3), (arr(3),)),
    "jacfwd argnums": (lambda L, f: f.jacfwd(lambda x, y: x * y.sum(), argnums=(0, 1)),
                       (arr(3), arr(2))),
    "jacfwd has_aux": (lambda L, f: f.jacfwd(lambda x: (x.sin(), x.cos()), has_aux=True),
                       (arr(3),)),
    "hessian": (lambda L, f: f.hessian(loss3), (arr(3),)),
    "hessian argnums": (lambda L, f: f.hessian(lambda x, y: (x.exp() * y).sum(), argnums=(0, 1)),
                        (arr(3), arr(3))),
    "jacrev(jacrev)": (lambda L, f: f.jacrev(f.jacrev(loss3)), (arr(3),)),
    "jacfwd(jacfwd)": (lambda L, f: f.jacfwd(f.jacfwd(loss3)), (arr(3),)),
    "jacrev(jacfwd)": (lambda L, f: f.jacrev(f.jacfwd(vec3)), (arr(3),)),
    "jacfwd(jacrev) of a vector function": (lambda L, f: f.jacfwd(f.jacrev(vec3)), (arr(3),)),
    "vmap(grad)": (lambda L, f: f.vmap(f.grad(loss3)), (arr(4, 3),)),
    "vmap(grad) over the data only": (
        lambda L, f: f.vmap(f.grad(lambda w, x: ((x @ w) ** 2).sum()), in_dims=(None, 0)),
        (arr(3, 2), arr(5, 3))),
    "vmap(jacrev), vmap(jacfwd), vmap(hessian)": (
        lambda L, f: lambda x: (f.vmap(f.jacrev(vec3))(x), f.vmap(f.jacfwd(vec3))(x),
                                f.vmap(f.hessian(loss3))(x)), (arr(4, 3),)),
    "grad(vmap)": (lambda L, f: f.grad(lambda x: f.vmap(lambda r: r.sin().sum())(x).sum()),
                   (arr(4, 3),)),
    "jvp(vmap) and vmap(jvp)": (
        lambda L, f: lambda x, t: (f.jvp(f.vmap(vec3), (x,), (t,)),
                                   f.vmap(lambda a, b: f.jvp(vec3, (a,), (b,)))(x, t)),
        (arr(4, 3), arr(4, 3))),
    "vmap(vjp) and vmap(vjp_fn)": (
        lambda L, f: lambda x, c: (f.vmap(lambda a, b: f.vjp(vec3, a)[1](b))(x, c),
                                   f.vmap(f.vjp(vec3, x[0])[1])(c)), (arr(4, 3), arr(4, 3))),
    "reverse over forward: grad(jvp)": (
        lambda L, f: f.grad(lambda x: f.jvp(vec3, (x,), (L.ones(3),))[1].sum()), (arr(3),)),
    "forward over reverse: jvp(grad)": (
        lambda L, f: lambda x, t: f.jvp(f.grad(loss3), (x,), (t,)), (arr(3), arr(3))),
    "jvp(jvp)": (lambda L, f: lambda x, t, u: f.jvp(lambda y: f.jvp(vec3, (y,), (t,))[1], (x,),
                                                    (u,)), (arr(3), arr(3), arr(3))),
}


@pytest.mark.parametrize("case", list(TRANSFORMS))
def test_transform_matches_torch(torch, case):
    make, args = TRANSFORMS[case]
    check(torch, make, *args)


def test_grad_result_requires_grad_only_when_something_outside_needs_it():
    x = ember.randn(3)
    xr = ember.randn(3, requires_grad=True)
    square = efunc.grad(lambda t: (t ** 2).sum())
    assert not square(x).requires_grad  # torch: inputs that don't require grad are fine
    assert square(xr).requires_grad  # differentiable through the ordinary autograd
    with ember.no_grad():
        assert not square(xr).requires_grad
    w = ember.randn(3, requires_grad=True)
    g = efunc.grad(lambda t: (t * t * w).sum())(x)  # a closed-over parameter
    assert g.requires_grad
    g.sum().backward()
    assert ember.allclose(w.grad, 2 * x)
    assert efunc.grad_and_value(lambda t: t.sum() * 2)(x)[0].tolist() == [2.0, 2.0, 2.0]


def test_grad_runs_with_grad_mode_on_inside_no_grad(torch):
    for lib, f in ((torch, torch.func), (ember, efunc)):
        with lib.no_grad():
            g = f.grad(lambda t: (t ** 3).sum())(lib.ones(2))
        assert g.tolist() == [3.0, 3.0]


TRANSFORM_ERRORS = {
    "grad of a non-scalar": lambda L, f: f.grad(lambda x: x ** 2)(L.ones(3)),
    "grad of a non-tensor": lambda L, f: f.grad(lambda x: 3.0)(L.ones(3)),
    "grad has_aux without a pair": lambda L, f: f.grad(lambda x: x.sum(), has_aux=True)(
        L.ones(3)),
    "grad of a float input": lambda L, f: f.grad(lambda x: x * 2)(3.0),
    "argnum out of range": lambda L, f: f.grad(lambda x, y: (x * y).sum(), argnums=2)(
        L.ones(2), L.ones(2)),
    "argnums repeated": lambda L, f: f.grad(lambda x, y: (x * y).sum(), argnums=(0, 0))(
        L.ones(2), L.ones(2)),
    "argnums empty": lambda L, f: f.grad(lambda x, y: (x * y).sum(), argnums=())(
        L.ones(2), L.ones(2)),
    "argnums not int": lambda L, f: f.grad(lambda x: x.sum(), argnums=[0])(L.ones(2)),
    "jvp primals not a tuple": lambda L, f: f.jvp(lambda x: x, L.ones(2), L.ones(2)),
    "jvp structures differ": lambda L, f: f.jvp(lambda x: x, (L.ones(2),),
                                                (L.ones(2), L.ones(2))),
    "jvp strict": lambda L, f: f.jvp(lambda x: L.ones(2), (L.ones(2),), (L.ones(2),),
                                     strict=True),
    "vjp cotangent structure": lambda L, f: f.vjp(lambda x: x, L.ones(2))[1](
        (L.ones(2), L.ones(2))),
    "vjp of an integer output": lambda L, f: f.vjp(lambda x: x.long(), L.ones(2)),
    "vjp has_aux without a pair": lambda L, f: f.vjp(lambda x: x, L.ones(2), has_aux=True),
    "jacrev chunk_size": lambda L, f: f.jacrev(lambda x: x, chunk_size=0)(L.ones(2)),
}


@pytest.mark.parametrize("case", list(TRANSFORM_ERRORS))
def test_transform_errors_match_torch(torch, case):
    make = TRANSFORM_ERRORS[case]
    expected = _error(lambda: make(torch, torch.func))
    got = _error(lambda: make(ember, efunc))
    assert expected is not None
    assert got == expected


# ------------------------------------------------------------------------- modules
def _mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(20, 32), nn.Linear(32, 32), nn.Linear(32, 10)

        def forward(self, x):
            return self.fc3(lib.tanh(self.fc2(lib.relu(self.fc1(x)))))

    return MLP()


MLP_WEIGHTS = {"fc1.weight": arr(32, 20) * 0.2, "fc1.bias": arr(32) * 0.1,
               "fc2.weight": arr(32, 32) * 0.2, "fc2.bias": arr(32) * 0.1,
               "fc3.weight": arr(10, 32) * 0.2, "fc3.bias": arr(10) * 0.1}


def _per_sample_grads(lib, f):
    """The "Per-sample-gradients" tutorial's recipe: vmap(grad(loss)) via functional_call."""
    model = _mlp(lib)

    def compute_loss(params, sample, target):
        predictions = f.functional_call(model, params, (sample.unsqueeze(0),))
        return F(lib).cross_entropy(predictions, target.unsqueeze(0))

    return f.vmap(f.grad(compute_loss), in_dims=(None, 0, 0))


def _loop_grads(lib, f):
    model = _mlp(lib)

    def run(params, data, targets):
        rows = []
        for i in range(data.shape[0]):
            leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
            loss = F(lib).cross_entropy(f.functional_call(model, leaves, (data[i:i + 1],)),
                                        targets[i:i + 1])
            rows.append(lib.autograd.grad(loss, list(leaves.values())))
        return {k: lib.stack([r[j] for r in rows]) for j, k in enumerate(params)}

    return run


def test_per_sample_gradients_match_torch_and_a_loop(torch):
    data, targets = arr(32, 20), ints(10, 32)
    check(torch, _per_sample_grads, MLP_WEIGHTS, data, targets)  # batched: no fallback
    params = _to(ember, MLP_WEIGHTS)
    batched = _per_sample_grads(ember, efunc)(params, ember.tensor(data), ember.tensor(targets))
    looped = _loop_grads(ember, efunc)(params, ember.tensor(data), ember.tensor(targets))
    for k in params:
        assert batched[k].shape == (32, *params[k].shape)
        np.testing.assert_allclose(_np(batched[k]), _np(looped[k]), atol=1e-6)


def _cnn_per_sample_grads(lib, f):
    """pytorch.org "Per-sample-gradients": its CNN (smaller), vmap(grad) of an nll_loss."""
    nn, fn = lib.nn, lib.nn.functional

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 8, 3, 1), nn.Conv2d(8, 16, 3, 1)
            self.fc1, self.fc2 = nn.Linear(16 * 5 * 5, 32), nn.Linear(32, 10)

        def forward(self, x):
            x = fn.relu(self.conv2(fn.relu(self.conv1(x))))
            x = lib.flatten(fn.max_pool2d(x, 2), 1)
            return fn.log_softmax(self.fc2(fn.relu(self.fc1(x))), dim=1)

    model = SimpleCNN()

    def run(weights, data, targets):
        with lib.no_grad():
            for k, p in model.named_parameters():
                p.copy_(weights[k])
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            predictions = f.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return fn.nll_loss(predictions, target.unsqueeze(0))

        return f.vmap(f.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data,
                                                                         targets)

    return run


def test_tutorial_per_sample_gradients_cnn(torch):
    weights = {"conv1.weight": arr(8, 1, 3, 3) * 0.3, "conv1.bias": arr(8) * 0.1,
               "conv2.weight": arr(16, 8, 3, 3) * 0.1, "conv2.bias": arr(16) * 0.1,
               "fc1.weight": arr(32, 400) * 0.05, "fc1.bias": arr(32) * 0.1,
               "fc2.weight": arr(10, 32) * 0.2, "fc2.bias": arr(10) * 0.1}
    check(torch, _cnn_per_sample_grads, weights, arr(8, 1, 14, 14), ints(10, 8))


def _attention(lib, f):
    m = lib.nn.MultiheadAttention(6, 2, batch_first=True)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.arange(p.numel()).reshape(p.shape) * 0.001 + 0.1)
    return lambda x: f.vmap(lambda q: m(q, q, q)[0])(x)


def test_vmap_of_multihead_attention_batches_op_by_op(torch):
    check(torch, _attention, arr(3, 2, 5, 6))


def test_per_sample_gradients_of_mse_with_dropout_off(torch):
    def make(lib, f):
        model = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.Dropout(0.5), lib.nn.Tanh(),
                                  lib.nn.Linear(8, 1)).eval()

        def loss(p, x, y):
            return F(lib).mse_loss(f.functional_call(model, p, (x,)), y)

        return f.vmap(f.grad(loss), in_dims=(None, 0, 0))

    w = {"0.weight": arr(8, 6), "0.bias": arr(8), "3.weight": arr(1, 8), "3.bias": arr(1)}
    check(torch, make, w, arr(16, 6), arr(16, 1))


def test_functional_call_swaps_and_restores(torch):
    for lib, f in ((torch, torch.func), (ember, efunc)):
        m = lib.nn.Linear(3, 2)
        w = m.weight
        x = lib.ones(1, 3)
        out = f.functional_call(m, {"weight": lib.zeros(2, 3), "bias": lib.ones(2)}, x)
        assert out.tolist() == [[1.0, 1.0]]
        assert m.weight is w
        out = f.functional_call(m, ({"weight": lib.zeros(2, 3)}, {"bias": lib.ones(2) * 2}),
                                args=(x,))
        assert out.tolist() == [[2.0, 2.0]]

        class Boom(lib.nn.Module):
            def __init__(self, lin):
                super().__init__()
                self.lin = lin

            def forward(self, x):
                raise ValueError("boom")

        b = Boom(lib.nn.Linear(2, 2))
        orig = b.lin.weight
        with pytest.raises(ValueError, match="boom"):
            f.functional_call(b, {"lin.weight": lib.zeros(2, 2)}, (x,))
        assert b.lin.weight is orig


def test_functional_call_tie_weights_and_strict_match_torch(torch):
    w = arr(2, 2)

    def build(lib):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2, bias=False), lib.nn.Linear(2, 2, bias=False))
        with lib.no_grad():
            m[0].weight.copy_(lib.tensor(w))
        m[1].weight = m[0].weight
        return m

    cases = {
        "tied": lambda L, f: f.functional_call(build(L), {"0.weight": L.ones(2, 2)},
                                               (L.ones(1, 2),)),
        "untied": lambda L, f: f.functional_call(build(L), {"0.weight": L.ones(2, 2)},
                                                 (L.ones(1, 2),), tie_weights=False),
    }
    for make in cases.values():
        check(torch, lambda L, f, make=make: lambda: make(L, f))
    errors = {
        "tied values differ": lambda L, f: f.functional_call(
            build(L), {"0.weight": L.ones(2, 2), "1.weight": L.zeros(2, 2)}, (L.ones(1, 2),)),
        "strict": lambda L, f: f.functional_call(L.nn.Linear(2, 2), {"weight": L.ones(2, 2),
                                                                     "extra": L.ones(1)},
                                                 (L.ones(1, 2),), strict=True),
        "repeated keys": lambda L, f: f.functional_call(
            L.nn.Linear(2, 2), ({"weight": L.ones(2, 2)}, {"weight": L.ones(2, 2)}),
            (L.ones(1, 2),)),
        "not a dict": lambda L, f: f.functional_call(L.nn.Linear(2, 2), 3, (L.ones(1, 2),)),
    }
    for make in errors.values():
        expected = _error(lambda make=make: make(torch, torch.func))
        assert expected is not None
        assert _error(lambda make=make: make(ember, efunc)) == expected


def test_stack_module_state_matches_torch(torch):
    for lib, f in ((torch, torch.func), (ember, efunc)):
        models = [lib.nn.BatchNorm1d(3) for _ in range(4)]
        params, buffers = f.stack_module_state(models)
        assert set(params) == {"weight", "bias"}
        assert set(buffers) == {"running_mean", "running_var", "num_batches_tracked"}
        assert params["weight"].shape == (4, 3) and params["weight"].requires_grad
        assert params["weight"].is_leaf and not buffers["running_mean"].requires_grad
        with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
            f.stack_module_state([])
        with pytest.raises(RuntimeError, match="same training/eval mode"):
            f.stack_module_state([lib.nn.Linear(1, 1), lib.nn.Linear(1, 1).eval()])


# ------------------------------------------------------------------------- the tutorials
def _ensembling(lib, f):
    """pytorch.org "Model ensembling": stack_module_state + vmap + functional_call."""
    nn = lib.nn

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(784, 64), nn.Linear(64, 64), nn.Linear(64, 10)

        def forward(self, x):
            x = x.flatten(1)
            x = F(lib).relu(self.fc1(x))
            x = F(lib).relu(self.fc2(x))
            return self.fc3(x)

    def run(weights, minibatches, minibatch):
        models = []
        for w in weights:
            m = SimpleMLP()
            with lib.no_grad():
                for k, p in m.named_parameters():
                    p.copy_(w[k])
            models.append(m)
        loop = [model(mb) for model, mb in zip(models, minibatches)]
        params, buffers = f.stack_module_state(models)
        # the tutorial moves this copy to the 'meta' device, which ember lacks
        base_model = copy.deepcopy(models[0])
        if lib is not ember:
            base_model = base_model.to("meta")

        def fmodel(params, buffers, x):
            return f.functional_call(base_model, (params, buffers), (x,))

        return (f.vmap(fmodel)(params, buffers, minibatches),
                f.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch),
                lib.stack(loop))

    return run


def test_tutorial_model_ensembling(torch):
    shapes = {"fc1.weight": (64, 784), "fc1.bias": (64,), "fc2.weight": (64, 64),
              "fc2.bias": (64,), "fc3.weight": (10, 64), "fc3.bias": (10,)}
    weights = [{k: arr(*s) * 0.05 for k, s in shapes.items()} for _ in range(4)]
    check(torch, _ensembling, weights, arr(4, 8, 1, 28, 28), arr(8, 1, 28, 28), tol=1e-4)


def _jacobians_tutorial(lib, f):
    """pytorch.org "Jacobians, Hessians, hvp, vhp, and more: composing function transforms"."""
    def predict(weight, bias, x):
        return F(lib).linear(x, weight, bias).tanh()

    def run(weight, bias, x, unit_vectors):
        xp = x.clone().requires_grad_()
        rows = [lib.autograd.grad(predict(weight, bias, xp), xp, vec)[0] for vec in unit_vectors]
        jacobian = lib.stack(rows)
        ft_jacobian = f.jacrev(predict, argnums=2)(weight, bias, x)
        ft_jac_w, ft_jac_b = f.jacrev(predict, argnums=(0, 1))(weight, bias, x)
        jacfwd = f.jacfwd(predict, argnums=2)(weight, bias, x)
        hess_api = f.hessian(predict, argnums=2)(weight, bias, x)
        hess_fwdfwd = f.jacfwd(f.jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)

        def predict_with_output_summed(weight, bias, x):
            return predict(weight, bias, x).sum(0)

        batch_x = x.unsqueeze(0).expand(6, -1) * lib.arange(1, 7).unsqueeze(1)
        batch_jac = f.jacrev(predict_with_output_summed, argnums=2)(weight, bias,
                                                                    batch_x).movedim(1, 0)
        batch_jac2 = f.vmap(f.jacrev(predict), in_dims=(None, None, 0))(weight, bias, batch_x)

        def hvp(fn, primals, tangents):
            return f.jvp(f.grad(fn), primals, tangents)[1]

        def vhp(fn, x, v):
            return f.vjp(f.grad(fn), x)[1](v)

        def g(x):
            return x.sin().sum()

        return (jacobian, ft_jacobian, ft_jac_w, ft_jac_b, jacfwd, hess_api, hess_fwdfwd,
                batch_jac, batch_jac2, hvp(g, (x,), (lib.ones_like(x),)),
                vhp(g, x, lib.ones_like(x)))

    return run


def test_tutorial_jacobians_hessians_hvp_vhp(torch):
    d = 12
    check(torch, _jacobians_tutorial, arr(d, d), arr(d), arr(d), np.eye(d, dtype=np.float32))


def _ntk(lib, f):
    """pytorch.org "Neural Tangent Kernels", on a smaller CNN."""
    nn = lib.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(3, 8, (3, 3)), nn.Conv2d(8, 8, (3, 3))
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            x = self.conv1(x).relu()
            x = self.conv2(x).relu()
            return self.fc(x.mean((2, 3)))

    def run(weights, x_train, x_test):
        net = CNN()
        with lib.no_grad():
            for k, p in net.named_parameters():
                p.copy_(weights[k])
        params = {k: v.detach() for k, v in net.named_parameters()}

        def fnet_single(params, x):
            return f.functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

        def ntk_jacobian_contraction(params, x1, x2):
            jac1 = f.vmap(f.jacrev(fnet_single), (None, 0))(params, x1)
            jac1 = [j.flatten(2) for j in jac1.values()]
            jac2 = f.vmap(f.jacrev(fnet_single), (None, 0))(params, x2)
            jac2 = [j.flatten(2) for j in jac2.values()]
            return lib.stack([lib.einsum("Naf,Mbf->NMab", j1, j2)
                              for j1, j2 in zip(jac1, jac2)]).sum(0)

        def ntk_vps(params, x1, x2):
            def get_ntk(x1, x2):
                def func_x1(params):
                    return fnet_single(params, x1)

                def func_x2(params):
                    return fnet_single(params, x2)

                output, vjp_fn = f.vjp(func_x1, params)

                def get_ntk_slice(vec):
                    return f.jvp(func_x2, (params,), vjp_fn(vec))[1]

                basis = lib.eye(output.numel(), dtype=output.dtype).view(output.numel(), -1)
                return f.vmap(get_ntk_slice)(basis)

            return f.vmap(f.vmap(get_ntk, (None, 0)), (0, None))(x1, x2)

        return ntk_jacobian_contraction(params, x_train, x_test), ntk_vps(params, x_train,
                                                                          x_test)

    return run


def test_tutorial_neural_tangent_kernels(torch):
    weights = {"conv1.weight": arr(8, 3, 3, 3) * 0.3, "conv1.bias": arr(8) * 0.1,
               "conv2.weight": arr(8, 8, 3, 3) * 0.2, "conv2.bias": arr(8) * 0.1,
               "fc.weight": arr(10, 8) * 0.3, "fc.bias": arr(10) * 0.1}
    check(torch, _ntk, weights, arr(3, 3, 8, 8), arr(2, 3, 8, 8), tol=1e-4)


def test_torch_func_under_the_alias():
    """``import torch.func`` in a script run with ``python -m ember`` is ember.func (a
    subprocess: the alias refuses once the real torch is imported)."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import ember; ember.alias_torch(); import torch; from torch.func import vmap, grad;"
            " import ember.func as f; assert vmap is f.vmap and torch.func is f;"
            " print(vmap(grad(lambda x: (x ** 2).sum()))(torch.ones(2, 3)).tolist())")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]"


def test_per_sample_grads_benchmark_runs_with_ember_alone(monkeypatch):
    """``benchmarks/per_sample_grads.py`` in its smallest mode: batched, and equal to its loop."""
    import importlib
    import sys
    from pathlib import Path

    monkeypatch.setenv("EMBER_BENCH_LIBS", "ember")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "benchmarks"))
    bench = importlib.import_module("per_sample_grads")
    try:
        result = bench.collect(repeats=1, threads=1, quick=True, examples=8)
    finally:
        sys.modules.pop("per_sample_grads", None)
    run = result["runs"]["ember"][0]
    assert run["fallbacks"] == 0 and run["diff"] < 1e-6
    assert [r["key"] for r in result["rows"]] == ["psg_vmap", "psg_loop"]
    assert "| vmap(grad(loss)), all examples (ms) |" in bench.markdown(result)
