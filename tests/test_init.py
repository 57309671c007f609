"""``ember.nn.init`` against ``torch.nn.init``: gains, fans, errors exactly; random fills by
their bounds and statistics (ember's RNG gives other numbers than torch's)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from ember import nn

init = nn.init

GAINS = [("linear", None), ("conv1d", None), ("conv_transpose3d", None), ("sigmoid", None),
         ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
         ("leaky_relu", 3), ("selu", None)]


@pytest.mark.parametrize("nonlinearity,param", GAINS)
def test_calculate_gain_matches_torch(torch, nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(
        nonlinearity, param)


@pytest.mark.parametrize("args,match", [(("foo",), "Unsupported nonlinearity foo"),
                                        (("leaky_relu", True), "negative_slope True not a valid"),
                                        (("leaky_relu", "x"), "negative_slope x not a valid")])
def test_calculate_gain_errors(args, match):
    with pytest.raises(ValueError, match=match):
        init.calculate_gain(*args)


@pytest.mark.parametrize("shape", [(3, 4), (5, 2, 3), (6, 4, 3, 2), (2, 3, 1, 2, 2), (0, 3)])
def test_fan_in_and_fan_out_matches_torch(torch, shape):
    assert init._calculate_fan_in_and_fan_out(ember.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


@pytest.mark.parametrize("fn", ["xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                                "kaiming_normal_"])
def test_fan_needs_two_dims(fn):
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor "
                                         "with fewer than 2 dimensions"):
        getattr(init, fn)(ember.empty(3))


def test_bad_mode():
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(ember.empty(3, 4), mode="fan_avg")


def _std(t):
    return float(np.std(t.detach().cpu().numpy()))


def test_in_place_under_no_grad_and_returns_tensor():
    w = nn.Parameter(ember.empty(30, 20))
    for fn, args in [(init.uniform_, ()), (init.normal_, ()), (init.constant_, (0.5,)),
                     (init.ones_, ()), (init.zeros_, ()), (init.eye_, ()),
                     (init.xavier_uniform_, ()), (init.xavier_normal_, ()),
                     (init.kaiming_uniform_, ()), (init.kaiming_normal_, ()),
                     (init.trunc_normal_, ()), (init.orthogonal_, ()), (init.sparse_, (0.5,))]:
        out = fn(w, *args)
        assert out is w and w.grad_fn is None and w.requires_grad and w.is_leaf, fn.__name__


def test_simple_fills():
    w = ember.empty(4, 5)
    assert (init.constant_(w, 0.3).cpu().numpy() == np.float32(0.3)).all()
    assert (init.ones_(w).cpu().numpy() == 1).all()
    assert (init.zeros_(w).cpu().numpy() == 0).all()
    init.uniform_(w, -2, -1)
    assert ((w.cpu().numpy() >= -2) & (w.cpu().numpy() < -1)).all()


def test_float64_keeps_dtype():
    w = ember.empty(10, 10, dtype=ember.float64)
    for fn in (init.xavier_uniform_, init.kaiming_normal_, init.trunc_normal_, init.orthogonal_):
        assert fn(w).dtype == ember.float64


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_eye_matches_torch(torch, shape):
    np.testing.assert_array_equal(init.eye_(ember.empty(*shape)).cpu().numpy(),
                                  torch.nn.init.eye_(torch.empty(*shape)).cpu().numpy())


def test_eye_needs_2d():
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(2, 2, 2))


@pytest.mark.parametrize("shape,groups", [((4, 3, 5), 1), ((6, 4, 3, 3), 2), ((4, 2, 3, 3, 3), 1),
                                          ((6, 2, 3, 4), 3), ((2, 5, 3), 1)])
def test_dirac_matches_torch(torch, shape, groups):
    np.testing.assert_array_equal(init.dirac_(ember.empty(*shape), groups).cpu().numpy(),
                                  torch.nn.init.dirac_(torch.empty(*shape), groups).cpu().numpy())


def test_dirac_errors():
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(ember.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(ember.empty(5, 2, 3), groups=2)


def test_xavier_uniform_bounds_and_std():
    w = init.xavier_uniform_(ember.empty(400, 300), gain=2.0)
    a = 2.0 * math.sqrt(6.0 / 700)
    assert np.abs(w.cpu().numpy()).max() <= a
    assert _std(w) == pytest.approx(a / math.sqrt(3), rel=0.03)


def test_xavier_normal_std():
    w = init.xavier_normal_(ember.empty(400, 30, 3))
    assert _std(w) == pytest.approx(math.sqrt(2.0 / (30 * 3 + 400 * 3)), rel=0.03)


@pytest.mark.parametrize("mode,nonlinearity,a", [("fan_in", "leaky_relu", 0),
                                                 ("fan_out", "relu", 0),
                                                 ("fan_in", "leaky_relu", math.sqrt(5)),
                                                 ("FAN_OUT", "tanh", 0)])
def test_kaiming_matches_torch_statistics(torch, mode, nonlinearity, a):
    shape = (300, 40, 3)
    fan = 40 * 3 if mode.lower() == "fan_in" else 300 * 3
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    u = init.kaiming_uniform_(ember.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity)
    assert np.abs(u.cpu().numpy()).max() <= math.sqrt(3) * std
    assert _std(u) == pytest.approx(std, rel=0.03)
    ref = torch.nn.init.kaiming_uniform_(torch.empty(*shape), a=a, mode=mode,
                                         nonlinearity=nonlinearity)
    assert _std(u) == pytest.approx(float(ref.std()), rel=0.05)
    n = init.kaiming_normal_(ember.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity)
    assert _std(n) == pytest.approx(std, rel=0.03)


def test_kaiming_zero_element_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(ember.empty(0, 3))


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04),
                                          (1.0, 2.0, 1.5, 1.7), (0.0, 1.0, 2.0, 3.0)])
def test_trunc_normal_bounds_and_mean(torch, mean, std, a, b):
    w = init.trunc_normal_(ember.empty(200, 100), mean, std, a, b)
    ref = torch.nn.init.trunc_normal_(torch.empty(200, 100), mean, std, a, b).cpu().numpy()
    x = w.cpu().numpy()
    assert x.min() >= a and x.max() <= b
    assert x.mean() == pytest.approx(ref.mean(), abs=0.02 * (b - a))
    assert x.std() == pytest.approx(ref.std(), rel=0.05)


def test_trunc_normal_warns_far_mean():
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(ember.empty(3, 3), mean=10.0, a=-1, b=1)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (6, 2, 2), (4, 4)])
def test_orthogonal(shape):
    w = init.orthogonal_(ember.empty(*shape), gain=2.0).cpu().numpy().reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-5)


def test_orthogonal_needs_2d():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(ember.empty(3))


def test_sparse_zero_count_per_column():
    w = init.sparse_(ember.empty(10, 7), sparsity=0.25, std=0.5).cpu().numpy()
    assert ((w == 0).sum(0) == math.ceil(0.25 * 10)).all()
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(ember.empty(2, 2, 2), 0.1)


def test_generator_makes_fills_reproducible():
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_,
               init.trunc_normal_, init.orthogonal_):
        a = fn(ember.empty(5, 6), generator=ember.Generator().manual_seed(3)).cpu().numpy()
        b = fn(ember.empty(5, 6), generator=ember.Generator().manual_seed(3)).cpu().numpy()
        c = fn(ember.empty(5, 6), generator=ember.Generator().manual_seed(4)).cpu().numpy()
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c), fn.__name__


def test_manual_seed_drives_default_generator():
    ember.manual_seed(11)
    a = init.kaiming_uniform_(ember.empty(4, 4)).cpu().numpy()
    ember.manual_seed(11)
    np.testing.assert_array_equal(a, init.kaiming_uniform_(ember.empty(4, 4)).cpu().numpy())


def test_deprecated_aliases_warn():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        init.xavier_uniform(ember.empty(2, 3))
    assert "`nn.init.xavier_uniform` is now deprecated in favor of `nn.init.xavier_uniform_`." \
        in str(w[0].message)
    assert w[0].category is FutureWarning


def test_public_names_match_torch(torch):
    public = {n for n in dir(torch.nn.init) if not n.startswith("_") and n.islower()
              and callable(getattr(torch.nn.init, n)) and n not in ("warnings", "math", "torch")}
    assert public <= set(dir(init))
