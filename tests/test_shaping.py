"""Shape ops' view semantics, and the random samplers: shapes, dtypes, ranges, moments over
many draws, reproducibility under ``manual_seed`` and a ``Generator``."""

from __future__ import annotations

import numpy as np
import pytest

import ember

N = 200_000  # draws for the moment checks: standard errors ~ 1 / sqrt(N) ~ 0.002


# --------------------------------------------------------------------------- views


@pytest.mark.parametrize("make", [
    lambda m, x: x.diagonal(),
    lambda m, x: m.diagonal(x, -1),
    lambda m, x: x.narrow(1, 1, 2),
    lambda m, x: x.split(2)[1],
    lambda m, x: x.split([1, 3], 1)[1],
    lambda m, x: x.chunk(2, 1)[0],
    lambda m, x: x.tensor_split(2)[1],
    lambda m, x: x.ravel(),
    lambda m, x: m.atleast_3d(x),
    lambda m, x: x.repeat_interleave(2, dim=0),
], ids=["diagonal", "diagonal_offset", "narrow", "split", "split_sizes", "chunk",
        "tensor_split", "ravel", "atleast_3d", "repeat_interleave"])
def test_view_ops_write_through_as_in_torch(make, torch):
    """Writing into the result reaches the input exactly where torch's does."""
    res = []
    for m in (ember, torch):
        x = m.arange(12.0).reshape(3, 4).clone()
        v = make(m, x)
        with m.no_grad():
            v.add_(100)
        res.append((x.cpu().numpy().copy(), v._is_view(), x._version))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    assert res[0][1:] == res[1][1:]


def test_diagonal_view_in_place_rewrites_base_history(torch):
    res = []
    for m in (ember, torch):
        a = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], requires_grad=True)
        y = a * 2
        d = y.diagonal(1)
        d.mul_(a[0, :2])
        y.sum().backward()
        res.append((y.detach().cpu().numpy().copy(), a.grad.cpu().numpy().copy(),
                    type(y.grad_fn).__name__))
    np.testing.assert_allclose(res[0][0], res[1][0])
    np.testing.assert_allclose(res[0][1], res[1][1])
    assert res[0][2] == res[1][2] == "CopySlices"


def test_split_view_writes_reach_the_base_under_no_grad():
    x = ember.zeros(3, 4)
    with ember.no_grad():
        a, b = x.split([1, 2])
        a.fill_(1)
        b[1].fill_(2)
    np.testing.assert_array_equal(x.cpu().numpy(), [[1] * 4, [0] * 4, [2] * 4])
    assert a._version == b._version == x._version == 2


def test_narrow_in_place_gradient_matches_torch(torch):
    out = []
    for m in (ember, torch):
        a = m.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]], requires_grad=True)
        y = a * 3
        y.narrow(1, 1, 2).pow_(2)
        (y * m.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        out.append(a.grad.cpu().numpy().copy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda x: x.flip(0), lambda x: x.roll(1), lambda x: x.rot90(), lambda x: x.rot90(0),
    lambda x: x.tril(), lambda x: x.repeat(1, 1),
], ids=["flip", "roll", "rot90", "rot90_0", "tril", "repeat"])
def test_flip_roll_rot90_return_copies(make):
    x = ember.arange(6.0).reshape(2, 3)
    y = make(x)
    before = y.cpu().numpy().copy()
    x.add_(1)  # a copy does not see writes to its input
    assert not y._is_view()
    np.testing.assert_array_equal(y.cpu().numpy(), before)


def test_meshgrid_without_indexing_warns_as_torch():
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        ember.meshgrid(ember.arange(2), ember.arange(3))


def test_meshgrid_refuses_matrices():
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor in the tensor list"):
        ember.meshgrid(ember.zeros(2, 2), indexing="ij")


def test_split_gradient_with_unused_pieces(torch):
    out = []
    for m in (ember, torch):
        a = m.arange(10.0, requires_grad=True)
        p = a.split(3)
        (p[1] * 2 + p[3] * 3).sum().backward()
        out.append(a.grad.cpu().numpy().copy())
    np.testing.assert_array_equal(out[0], out[1])


def test_tril_triu_in_place(torch):
    out = []
    for m in (ember, torch):
        a = m.arange(1.0, 10.0).reshape(3, 3).requires_grad_()
        y = a * 1
        y.tril_(-1).triu_(-1)
        y.sum().backward()
        out.append((y.detach().cpu().numpy().copy(), a.grad.cpu().numpy().copy()))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


# --------------------------------------------------------------------------- random sampling


def _moments(t):
    a = t.cpu().numpy().astype(np.float64).ravel()
    return a.mean(), a.std()


def test_normal_overloads_shapes_dtypes_and_moments():
    ember.manual_seed(0)
    mu = ember.full((N,), 2.0)
    m, s = _moments(ember.normal(mu, 3.0))
    assert abs(m - 2.0) < 0.03 and abs(s - 3.0) < 0.03
    m, s = _moments(ember.normal(-1.0, ember.full((N,), 0.5, dtype=ember.float64)))
    assert abs(m + 1.0) < 0.01 and abs(s - 0.5) < 0.01
    out = ember.normal(ember.zeros(3, 1, dtype=ember.float64), ember.ones(4))
    assert out.shape == (3, 4) and out.dtype == ember.float64
    out = ember.normal(0.5, 2.0, (N,), dtype=ember.float64)
    assert out.dtype == ember.float64
    m, s = _moments(out)
    assert abs(m - 0.5) < 0.03 and abs(s - 2.0) < 0.03
    assert ember.normal(0.0, 1.0, size=(2, 3), requires_grad=True).requires_grad


def test_bernoulli_moments_and_values():
    ember.manual_seed(1)
    p = ember.rand(N)
    b = ember.bernoulli(p)
    assert b.dtype == ember.float32 and set(np.unique(b.cpu().numpy())) <= {0.0, 1.0}
    # E[b - p] = 0 with variance E[p(1 - p)] = 1/6 per draw
    assert abs((b - p).mean().item()) < 5 * (1 / 6 / N) ** 0.5
    assert abs(ember.bernoulli(ember.zeros(N, dtype=ember.float64), 0.25).mean().item()
               - 0.25) < 0.01


def test_multinomial_with_replacement_frequencies():
    ember.manual_seed(2)
    w = ember.tensor([[1.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 5.0]])
    s = ember.multinomial(w, N // 10, replacement=True)
    assert s.shape == (2, N // 10) and s.dtype == ember.int64
    f0 = np.bincount(s[0].cpu().numpy(), minlength=4) / s.shape[1]
    f1 = np.bincount(s[1].cpu().numpy(), minlength=4) / s.shape[1]
    np.testing.assert_allclose(f0, [0.125, 0, 0.375, 0.5], atol=0.01)
    np.testing.assert_allclose(f1, [0, 0.5, 0, 0.5], atol=0.01)
    assert f0[1] == 0 and f1[0] == f1[2] == 0


def test_multinomial_without_replacement_draws_distinct_categories_by_weight():
    ember.manual_seed(3)
    w = ember.tensor([1.0, 2.0, 0.0, 7.0]).expand(20_000, 4)
    s = ember.multinomial(w, 3).cpu().numpy()
    assert all(len(set(r)) == 3 for r in s[:100])
    assert not (s == 2).any()  # zero weight, never needed: 3 categories have weight
    first = np.bincount(s[:, 0], minlength=4) / len(s)
    np.testing.assert_allclose(first, [0.1, 0.2, 0.0, 0.7], atol=0.015)
    # the second pick follows the weights left after the first: P(second = 0) =
    # 0.2 * 1/8 + 0.7 * 1/3
    second = np.bincount(s[:, 1], minlength=4) / len(s)
    assert abs(second[0] - (0.2 / 8 + 0.7 / 3)) < 0.015
    # all categories, zero weights last
    all4 = ember.multinomial(ember.tensor([0.0, 1.0, 0.0, 1.0]), 4).cpu().numpy()
    assert set(all4[:2]) == {1, 3} and set(all4[2:]) == {0, 2}


def test_in_place_samplers_ranges_and_moments():
    ember.manual_seed(4)
    x = ember.empty(N)
    assert x.uniform_(-2.0, 3.0) is x
    a = x.cpu().numpy()
    assert a.min() >= -2.0 and a.max() < 3.0 and abs(a.mean() - 0.5) < 0.02
    m, s = _moments(x.normal_(1.0, 2.0))
    assert abs(m - 1.0) < 0.02 and abs(s - 2.0) < 0.02
    m, s = _moments(x.exponential_(4.0))
    assert x.cpu().numpy().min() >= 0 and abs(m - 0.25) < 0.005 and abs(s - 0.25) < 0.005
    assert abs(x.bernoulli_(0.3).mean().item() - 0.3) < 0.01
    p = ember.tensor([0.0, 1.0, 0.5]).expand(N // 3, 3)
    y = ember.empty(N // 3, 3, dtype=ember.float64).bernoulli_(p)
    np.testing.assert_allclose(y.mean(0).cpu().numpy(), [0.0, 1.0, 0.5], atol=0.01)


@pytest.mark.parametrize("dtype, high", [("float32", 2 ** 24), ("float64", 2 ** 53),
                                         ("int64", 2 ** 63 - 1), ("int32", 2 ** 31 - 1),
                                         ("uint8", 255), ("bool", 1), ("int8", 127)])
def test_random_default_range_per_dtype(dtype, high):
    ember.manual_seed(5)
    x = ember.empty(10_000, dtype=getattr(ember, dtype)).random_()
    a = x.cpu().numpy().astype(np.float64)
    assert a.min() >= 0 and a.max() <= high and a.max() > high * 0.9
    assert (a == np.round(a)).all()


def test_random_from_to():
    ember.manual_seed(6)
    a = ember.empty(10_000, dtype=ember.int64).random_(-3, 4).cpu().numpy()
    assert set(np.unique(a)) == set(range(-3, 4))
    a = ember.empty(10_000).random_(5).cpu().numpy()
    assert set(np.unique(a)) == {0.0, 1.0, 2.0, 3.0, 4.0}
    a = ember.empty(1000, dtype=ember.uint8).random_(250, None).cpu().numpy()
    assert a.min() >= 250 and a.max() <= 255


def test_in_place_sampler_on_a_view_writes_the_base():
    ember.manual_seed(7)
    x = ember.zeros(4, 5)
    x[1:3].uniform_(1.0, 2.0)
    a = x.cpu().numpy()
    assert (a[[0, 3]] == 0).all() and (a[1:3] >= 1).all()
    x.diagonal().fill_(-1.0)
    assert (np.diag(x.cpu().numpy()) == -1).all()


SAMPLERS = [
    lambda g: ember.normal(ember.zeros(5), 1.0, generator=g),
    lambda g: ember.normal(0.0, ember.ones(5), generator=g),
    lambda g: ember.normal(ember.zeros(5), ember.ones(5), generator=g),
    lambda g: ember.normal(0.0, 1.0, (5,), generator=g),
    lambda g: ember.bernoulli(ember.full((50,), 0.5), generator=g),
    lambda g: ember.bernoulli(ember.zeros(50), 0.5, generator=g),
    lambda g: ember.multinomial(ember.ones(2, 10), 5, generator=g),
    lambda g: ember.multinomial(ember.ones(10), 5, True, generator=g),
    lambda g: ember.empty(5).uniform_(generator=g),
    lambda g: ember.empty(5).normal_(generator=g),
    lambda g: ember.empty(5).exponential_(generator=g),
    lambda g: ember.empty(50).bernoulli_(generator=g),
    lambda g: ember.empty(50).bernoulli_(ember.full((50,), 0.5), generator=g),
    lambda g: ember.empty(5).random_(generator=g),
    lambda g: ember.empty(5).random_(10, generator=g),
]


@pytest.mark.parametrize("sample", SAMPLERS)
def test_samplers_are_reproducible_under_manual_seed_and_a_generator(sample):
    ember.manual_seed(123)
    a = sample(None).cpu().numpy()
    ember.manual_seed(123)
    b = sample(None).cpu().numpy()
    np.testing.assert_array_equal(a, b)
    c = sample(None).cpu().numpy()  # the stream moves on
    assert not np.array_equal(a, c)
    g = ember.Generator().manual_seed(99)
    ember.manual_seed(1)
    d = sample(g).cpu().numpy()
    ember.manual_seed(2)  # the default stream does not affect a generator's
    e = sample(ember.Generator().manual_seed(99)).cpu().numpy()
    np.testing.assert_array_equal(d, e)


def test_generator_state_round_trip():
    g = ember.Generator().manual_seed(5)
    state = g.get_state()
    a = ember.normal(0.0, 1.0, (4,), generator=g)
    g.set_state(state)
    b = ember.normal(0.0, 1.0, (4,), generator=g)
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())


def test_normal_gradient_is_zero_as_in_torch(torch):
    for m in (ember, torch):
        mu = m.zeros(3, requires_grad=True)
        sd = m.ones(3, requires_grad=True)
        out = m.normal(mu, sd)
        g = m.autograd.grad(out.sum(), [mu, sd])
        assert type(out.grad_fn).__name__ == "NormalBackward3"
        assert all((t == 0).all() for t in g)


def test_bernoulli_with_float_p_has_no_derivative(torch):
    for m in (ember, torch):
        x = m.rand(3, requires_grad=True)
        y = m.bernoulli(x, 0.5)
        assert type(y.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not "
                                               "implemented"):
            y.sum().backward()


@pytest.mark.parametrize("make", [
    lambda y: y.split(2)[1], lambda y: y.split([1, 3])[0], lambda y: y.unbind()[2],
    lambda y: y.chunk(2)[0], lambda y: y.split(2)[1][0], lambda y: y.split(2)[1].t(),
], ids=["split", "split_with_sizes", "unbind", "chunk", "select_of_split", "t_of_split"])
def test_in_place_on_multi_output_views_is_refused_as_in_torch(make, torch):
    msgs = []
    for m in (ember, torch):
        y = m.rand(4, 3, requires_grad=True) * 1
        with pytest.raises(RuntimeError) as err:
            make(y).add_(1)
        msgs.append(str(err.value))
        with m.no_grad():  # allowed without grad, and written through
            make(y).fill_(7)
        assert (y == 7).any()
        z = m.zeros(4, 3)  # allowed on tensors that do not require grad
        make(z).add_(1)
        assert z.sum() > 0
    assert msgs[0] == msgs[1]
