"""ember.distributions against torch.distributions.

Everything deterministic (shapes, moments, log_prob, entropy, cdf, icdf, KL, transforms,
constraints, validation errors, and the gradients of all of them) is compared with torch on the
same float64 inputs. Samples come from ember's generators (not torch's stream), so they are
tested statistically with fixed seeds: shapes, support, means, and reparameterized gradients
against their analytic expectations; the implicit gamma gradient against finite differences
of the gamma quantile.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import requires_torch

import ember
import ember.distributions as D
from ember.distributions import constraints, transforms

try:
    import torch
    import torch.distributions as TD
except ImportError:  # the oracle is absent: the comparisons skip (requires_torch)
    torch = TD = None


# --------------------------------------------------------------------------- helpers


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def assert_close(e, t, rtol=1e-6, atol=1e-9) -> None:
    """ember vs torch values (NaN and inf in the same places)."""
    np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol, equal_nan=True)


def attempt(fn):
    """("ok", value) or ("raises", exception type name): ember and torch must agree."""
    try:
        return "ok", fn()
    except (NotImplementedError, ValueError) as err:
        return "raises", type(err).__name__


def tensors(arrays: dict, grad: bool = True):
    """The same float64 parameters as ember and as torch tensors."""
    e = {k: ember.tensor(v, requires_grad=grad and v.dtype.kind == "f")
         for k, v in arrays.items()}
    t = {k: torch.tensor(v, requires_grad=grad and v.dtype.kind == "f")
         for k, v in arrays.items()}
    return e, t


def _pos(lo=0.5, hi=2.0):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def _real(rng, shape):
    return rng.normal(size=shape)


def _unit(rng, shape):
    return rng.uniform(0.1, 0.9, shape)


def _simplex(k=4):
    def make(rng, shape):
        p = rng.uniform(0.2, 1.0, tuple(shape) + (k,))
        return p / p.sum(-1, keepdims=True)
    return make


def _logits(k=4):
    return lambda rng, shape: rng.normal(size=tuple(shape) + (k,))


def _tril(n=3):
    def make(rng, shape):
        a = rng.normal(size=tuple(shape) + (n, n)) * 0.3
        return np.tril(a, -1) + np.eye(n) * rng.uniform(0.5, 1.5, tuple(shape) + (n,))[..., None]
    return make


def _spd(n=3):
    def make(rng, shape):
        L = _tril(n)(rng, shape)
        return L @ np.swapaxes(L, -1, -2) + 0.1 * np.eye(n)
    return make


class Case:
    """One distribution family: how to build it in either library, its parameters (sampler
    per parameter, with the event dims it adds) and the values it scores."""

    def __init__(self, name, build, params, value, event=(), **flags):
        self.name, self.build, self.params, self.value, self.event = (
            name, build, params, value, event)
        self.flags = flags

    def __repr__(self) -> str:
        return self.name


def _values_real(rng, shape, p):
    return rng.normal(size=shape)


def _values_pos(rng, shape, p):
    return rng.uniform(0.1, 3.0, shape)


def _values_unit(rng, shape, p):
    return rng.uniform(0.05, 0.95, shape)


def _values_bool(rng, shape, p):
    return rng.integers(0, 2, shape).astype(np.float64)


def _values_count(rng, shape, p):
    return rng.integers(0, 6, shape).astype(np.float64)


def _values_index(rng, shape, p):
    return rng.integers(0, 4, shape)


def _values_onehot(rng, shape, p):
    return np.eye(4)[rng.integers(0, 4, shape[:-1])]


def _values_simplex(rng, shape, p):
    v = rng.uniform(0.1, 1.0, shape)
    return v / v.sum(-1, keepdims=True)


def _values_uniform(rng, shape, p):
    u = rng.uniform(0, 1, shape)
    return p["low"] + u * (p["high"] - p["low"])


def _values_pareto(rng, shape, p):
    return p["scale"] * (1 + rng.uniform(0.01, 3.0, shape))


CASES = [
    Case("Normal", lambda m, p: m.Normal(p["loc"], p["scale"]),
         {"loc": _real, "scale": _pos()}, _values_real, cdf=True, icdf=True),
    Case("Bernoulli(probs)", lambda m, p: m.Bernoulli(probs=p["probs"]),
         {"probs": _unit}, _values_bool),
    Case("Bernoulli(logits)", lambda m, p: m.Bernoulli(logits=p["logits"]),
         {"logits": _real}, _values_bool),
    Case("Categorical(probs)", lambda m, p: m.Categorical(probs=p["probs"]),
         {"probs": _simplex()}, _values_index),
    Case("Categorical(logits)", lambda m, p: m.Categorical(logits=p["logits"]),
         {"logits": _logits()}, _values_index),
    Case("OneHotCategorical", lambda m, p: m.OneHotCategorical(logits=p["logits"]),
         {"logits": _logits()}, _values_onehot, event=(4,)),
    Case("MultivariateNormal(scale_tril)",
         lambda m, p: m.MultivariateNormal(p["loc"], scale_tril=p["scale_tril"]),
         {"loc": lambda r, s: r.normal(size=tuple(s) + (3,)), "scale_tril": _tril()},
         _values_real, event=(3,)),
    Case("MultivariateNormal(covariance)",
         lambda m, p: m.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
         {"loc": lambda r, s: r.normal(size=tuple(s) + (3,)), "cov": _spd()},
         _values_real, event=(3,)),
    Case("MultivariateNormal(precision)",
         lambda m, p: m.MultivariateNormal(p["loc"], precision_matrix=p["prec"]),
         {"loc": lambda r, s: r.normal(size=tuple(s) + (3,)), "prec": _spd()},
         _values_real, event=(3,)),
    Case("Uniform", lambda m, p: m.Uniform(p["low"], p["low"] + p["width"]),
         {"low": _real, "width": _pos()}, None, cdf=True, icdf=True),
    Case("Beta", lambda m, p: m.Beta(p["a"], p["b"]), {"a": _pos(), "b": _pos()},
         _values_unit, special=True),
    Case("Gamma", lambda m, p: m.Gamma(p["concentration"], p["rate"]),
         {"concentration": _pos(), "rate": _pos()}, _values_pos, special=True, cdf=True),
    Case("Dirichlet", lambda m, p: m.Dirichlet(p["concentration"]),
         {"concentration": lambda r, s: r.uniform(0.5, 2.0, tuple(s) + (3,))},
         _values_simplex, event=(3,), special=True),
    Case("Exponential", lambda m, p: m.Exponential(p["rate"]), {"rate": _pos()},
         _values_pos, cdf=True, icdf=True),
    Case("Laplace", lambda m, p: m.Laplace(p["loc"], p["scale"]),
         {"loc": _real, "scale": _pos()}, _values_real, cdf=True, icdf=True),
    Case("Poisson", lambda m, p: m.Poisson(p["rate"]), {"rate": _pos(0.5, 4.0)},
         _values_count, special=True),
    Case("Independent(Normal)", lambda m, p: m.Independent(m.Normal(p["loc"], p["scale"]), 1),
         {"loc": lambda r, s: r.normal(size=tuple(s) + (2,)),
          "scale": lambda r, s: r.uniform(0.5, 2, tuple(s) + (2,))}, _values_real, event=(2,)),
    Case("LogNormal", lambda m, p: m.LogNormal(p["loc"], p["scale"]),
         {"loc": _real, "scale": _pos()}, _values_pos, cdf=True, icdf=True),
    Case("TransformedDistribution(tanh)",
         lambda m, p: m.TransformedDistribution(
             m.Normal(p["loc"], p["scale"]),
             [m.AffineTransform(0.5, 2.0), m.TanhTransform(), m.AffineTransform(1.0, -3.0)]),
         {"loc": _real, "scale": _pos()}, lambda r, s, p: r.uniform(-1.9, 3.9, s),
         cdf=True, icdf=True),
    Case("Cauchy", lambda m, p: m.Cauchy(p["loc"], p["scale"]),
         {"loc": _real, "scale": _pos()}, _values_real, cdf=True, icdf=True),
    Case("Chi2", lambda m, p: m.Chi2(p["df"]), {"df": _pos(1.0, 5.0)}, _values_pos,
         special=True),
    Case("Geometric", lambda m, p: m.Geometric(probs=p["probs"]), {"probs": _unit},
         _values_count),
    Case("Gumbel", lambda m, p: m.Gumbel(p["loc"], p["scale"]),
         {"loc": _real, "scale": _pos()}, _values_real, cdf=True, icdf=True),
    Case("HalfNormal", lambda m, p: m.HalfNormal(p["scale"]), {"scale": _pos()},
         _values_pos, cdf=True, icdf=True),
    Case("Pareto", lambda m, p: m.Pareto(p["scale"], p["alpha"]),
         {"scale": _pos(), "alpha": _pos(2.5, 4.0)}, _values_pareto, cdf=True),
    Case("StudentT", lambda m, p: m.StudentT(p["df"], p["loc"], p["scale"]),
         {"df": _pos(0.5, 5.0), "loc": _real, "scale": _pos()}, _values_real, special=True),
]

# parameter batch shapes: (), (3,), (2, 3), and the first parameter broadcasting against the
# others ((2, 1) with (3,))
SHAPES = {"scalar": None, "vector": (3,), "matrix": (2, 3), "broadcast": ((2, 1), (3,))}


def _has_special() -> bool:
    return hasattr(ember, "lgamma") and hasattr(ember, "digamma")


def _make_params(case, shape_key, seed=0):
    rng = np.random.default_rng(seed)
    spec = SHAPES[shape_key]
    out = {}
    for i, (name, sampler) in enumerate(case.params.items()):
        if spec is None:
            shape = ()
        elif isinstance(spec[0], tuple):
            shape = spec[0] if i == 0 else spec[1]
        else:
            shape = spec
        out[name] = np.asarray(sampler(rng, shape), dtype=np.float64)
    return out


def _value_for(case, dist_t, params, seed=1):
    """A value of shape (4,) + batch_shape + event_shape inside the support."""
    rng = np.random.default_rng(seed)
    shape = (4,) + tuple(dist_t.batch_shape) + tuple(dist_t.event_shape)
    if case.value is None:  # Uniform: inside [low, high) of each batch entry
        low = params["low"]
        high = params["low"] + params["width"]
        return _values_uniform(rng, shape, {"low": low, "high": high})
    if case.name == "Pareto":
        return _values_pareto(rng, shape, {"scale": np.broadcast_to(
            params["scale"], tuple(dist_t.batch_shape))})
    return case.value(rng, shape, params)


def _properties(d, value, quantiles):
    return {
        "batch_shape": lambda: tuple(d.batch_shape),
        "event_shape": lambda: tuple(d.event_shape),
        "mean": lambda: d.mean,
        "variance": lambda: d.variance,
        "stddev": lambda: d.stddev,
        "mode": lambda: d.mode,
        "entropy": lambda: d.entropy(),
        "perplexity": lambda: d.perplexity(),
        "log_prob": lambda: d.log_prob(value),
        "cdf": lambda: d.cdf(value),
        "icdf": lambda: d.icdf(quantiles),
        "enumerate_support": lambda: d.enumerate_support(),
        "enumerate_support(expand=False)": lambda: d.enumerate_support(expand=False),
    }


@requires_torch
@pytest.mark.parametrize("shape_key", list(SHAPES))
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_matches_torch(case, shape_key):
    """Shapes, moments, log_prob, entropy, cdf, icdf, enumerate_support and their gradients
    with respect to every parameter equal torch's (or both raise the same error)."""
    if case.flags.get("special") and not _has_special():
        pytest.skip("ember.lgamma/digamma are not available yet")
    params = _make_params(case, shape_key)
    pe, pt = tensors(params)
    de, dt = case.build(D, pe), case.build(TD, pt)
    value = _value_for(case, dt, params)
    ve = ember.tensor(value)
    vt = torch.tensor(value)
    q = np.random.default_rng(2).uniform(0.05, 0.95, (4,) + tuple(dt.batch_shape))
    qe, qt = ember.tensor(q), torch.tensor(q)
    if case.name.startswith(("Categorical", "OneHot")):
        ve = ve.long() if case.name.startswith("Categorical") else ve
        vt = vt.long() if case.name.startswith("Categorical") else vt
    props_e, props_t = _properties(de, ve, qe), _properties(dt, vt, qt)
    objective_e, objective_t = [], []
    for name in props_e:
        got, want = attempt(props_e[name]), attempt(props_t[name])
        assert got[0] == want[0], f"{name}: ember {got}, torch {want}"
        if got[0] == "raises":
            assert got[1] == want[1], name
            continue
        e, t = got[1], want[1]
        if isinstance(t, tuple):
            assert e == t, name
            continue
        assert tuple(e.shape) == tuple(t.shape), name
        assert str(e.dtype) == str(t.dtype), name
        assert_close(e, t)
        if name == "cdf" and case.flags.get("special"):
            continue  # torch does not differentiate gammainc in its first argument
        if t.requires_grad and torch.isfinite(t).all():
            objective_e.append(e.sum())
            objective_t.append(t.sum())
    assert objective_t, "nothing differentiable to compare"
    sum(objective_e).backward()
    sum(objective_t).backward()
    for k in pe:
        if pt[k].grad is None:
            assert pe[k].grad is None or not _np(pe[k].grad).any(), k
        else:
            assert_close(pe[k].grad, pt[k].grad)


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_expand_matches_torch(case):
    """``expand`` gives torch's batch shape and the same log-probabilities, validation
    setting kept."""
    if case.flags.get("special") and not _has_special():
        pytest.skip("ember.lgamma/digamma are not available yet")
    params = _make_params(case, "vector")
    pe, pt = tensors(params, grad=False)
    de = case.build(D, pe).expand((2, 3))
    dt = case.build(TD, pt).expand((2, 3))
    assert tuple(de.batch_shape) == tuple(dt.batch_shape) == (2, 3)
    assert tuple(de.event_shape) == tuple(dt.event_shape)
    assert type(de) is getattr(D, type(dt).__name__)
    assert de._validate_args == dt._validate_args
    value = _value_for(case, dt, {k: np.broadcast_to(v, (2,) + v.shape)
                                  for k, v in params.items()})
    ve, vt = ember.tensor(value), torch.tensor(value)
    if case.name.startswith("Categorical"):
        ve, vt = ve.long(), vt.long()
    assert_close(de.log_prob(ve), dt.log_prob(vt))


# --------------------------------------------------------------------------- sampling


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_sample_shapes_support_and_mean(case):
    """Samples have shape sample_shape + batch_shape + event_shape, lie in the support, are
    reproducible under a seed, and their mean matches the distribution's (6 standard
    errors)."""
    if case.flags.get("special") and not _has_special():
        pytest.skip("ember.lgamma/digamma are not available yet")
    params = _make_params(case, "vector")
    if case.name == "StudentT":  # a finite variance needs df > 2
        params["df"] = np.array([3.0, 4.0, 5.0])
    d = case.build(D, {k: ember.tensor(v) for k, v in params.items()})
    assert tuple(d.sample().shape) == tuple(d.batch_shape) + tuple(d.event_shape)
    assert tuple(d.sample((2, 5)).shape) == (2, 5) + tuple(d.batch_shape) + tuple(d.event_shape)
    ember.manual_seed(1234)
    n = 4000
    x = d.sample((n,))
    ember.manual_seed(1234)
    np.testing.assert_array_equal(_np(d.sample((n,))), _np(x))  # deterministic under a seed
    assert not x.requires_grad
    if case.name != "TransformedDistribution(tanh)":  # (tanh rounds to +-1 in the tails)
        assert bool(d.support.check(x).all()), case
    try:
        mean, var = _np(d.mean), _np(d.variance)
    except NotImplementedError:
        return
    if case.name in ("Cauchy",) or not np.isfinite(var).all() or np.isnan(mean).any():
        return
    stderr = np.sqrt(var / n)
    err = np.abs(_np(x).astype(np.float64).mean(0) - mean)
    assert (err <= 6 * stderr + 1e-12).all(), (err, stderr)
    if d.has_rsample:
        ember.manual_seed(1234)
        assert tuple(d.rsample((3,)).shape) == (3,) + tuple(d.batch_shape) + tuple(
            d.event_shape)


def test_sample_variance_normal_gamma_poisson():
    """Second moments of the samplers ember adds (gamma and Poisson kernels) and of the
    normal one."""
    ember.manual_seed(0)
    n = 40000
    for d, var in [(D.Normal(ember.tensor(1.0), ember.tensor(2.0)), 4.0),
                   (D.Poisson(ember.tensor(3.5)), 3.5)] + (
                      [(D.Gamma(ember.tensor(2.5), ember.tensor(0.5)), 10.0)]
                      if _has_special() else []):
        x = _np(d.sample((n,)))
        assert abs(x.var() - var) < 0.05 * var, (d, x.var(), var)
    g = _np(D.Gamma(ember.tensor([0.05, 1.0, 30.0]), ember.tensor(1.0), validate_args=False)
            .sample((n,)))
    np.testing.assert_allclose(g.mean(0), [0.05, 1.0, 30.0], rtol=0.05)
    assert (g > 0).all()  # tiny shapes underflow: clamped to the smallest normal number


@pytest.mark.parametrize("make, grads", [
    # the pathwise derivative of E[x] (= the mean) with respect to each parameter
    (lambda: D.Normal(ember.tensor(0.5, requires_grad=True),
                      ember.tensor(2.0, requires_grad=True)), [1.0, 0.0]),
    (lambda: D.Uniform(ember.tensor(-1.0, requires_grad=True),
                       ember.tensor(3.0, requires_grad=True)), [0.5, 0.5]),
    (lambda: D.Exponential(ember.tensor(2.0, requires_grad=True)), [-0.25]),
    (lambda: D.Laplace(ember.tensor(0.5, requires_grad=True),
                       ember.tensor(2.0, requires_grad=True)), [1.0, 0.0]),
    (lambda: D.LogNormal(ember.tensor(0.1, requires_grad=True),
                         ember.tensor(0.5, requires_grad=True)),
     [math.exp(0.1 + 0.125), 0.5 * math.exp(0.1 + 0.125)]),
    (lambda: D.Gamma(ember.tensor(2.0, requires_grad=True),
                     ember.tensor(4.0, requires_grad=True)), [0.25, -2.0 / 16]),
    (lambda: D.Beta(ember.tensor(2.0, requires_grad=True),
                    ember.tensor(3.0, requires_grad=True)), [3 / 25, -2 / 25]),
    (lambda: D.Gumbel(ember.tensor(0.5, requires_grad=True),
                      ember.tensor(2.0, requires_grad=True)), [1.0, 0.5772156649015329]),
    (lambda: D.StudentT(ember.tensor(5.0, requires_grad=True),
                        ember.tensor(0.5, requires_grad=True),
                        ember.tensor(2.0, requires_grad=True)), [0.0, 1.0, 0.0]),
], ids=["Normal", "Uniform", "Exponential", "Laplace", "LogNormal", "Gamma", "Beta", "Gumbel",
        "StudentT"])
def test_rsample_gradient_is_pathwise(make, grads):
    """d/dtheta of the sample mean of rsample draws estimates d E[x] / d theta (the analytic
    derivative of the mean) within a few standard errors."""
    d = make()
    if isinstance(d, (D.Gamma, D.Beta, D.StudentT)) and not _has_special():
        pytest.skip("ember.lgamma/digamma are not available yet")
    ember.manual_seed(7)
    x = d.rsample((20000,))
    assert x.requires_grad
    g = ember.autograd.grad(x.mean(), _leaves(d))
    np.testing.assert_allclose([float(v) for v in g], grads, atol=0.04, rtol=0.04)


def _leaves(d):
    """The leaf parameters a distribution was built from, in constructor order."""
    seen, out = set(), []

    def visit(obj, depth=0):
        if depth > 3:
            return
        for v in vars(obj).values():
            if isinstance(v, ember.Tensor):
                for leaf in _graph_leaves(v):
                    if id(leaf) not in seen:
                        seen.add(id(leaf))
                        out.append(leaf)
            elif isinstance(v, D.Distribution):
                visit(v, depth + 1)
    visit(d)
    return out


def _graph_leaves(t):
    if t.grad_fn is None:
        return [t] if t.requires_grad else []
    stack, leaves, seen = [t.grad_fn], [], set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            leaves.append(var)
        stack.extend(f for f, _ in fn.next_functions)
    return leaves[::-1]


def test_mvn_rsample_gradient():
    """MultivariateNormal.rsample = loc + L eps: d x_i / d L_ij = eps_j (eps recovered from x;
    the product reads all of L, as torch's does)."""
    loc = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    L = ember.tensor([[1.0, 0.0], [0.3, 0.7]], dtype=ember.float64, requires_grad=True)
    d = D.MultivariateNormal(loc, scale_tril=L)
    ember.manual_seed(3)
    x = d.rsample((5,))
    w = ember.tensor(np.arange(10.0).reshape(5, 2))
    (x * w).sum().backward()
    eps = np.linalg.solve(_np(L), (_np(x) - _np(loc)).T).T
    np.testing.assert_allclose(_np(loc.grad), _np(w).sum(0))
    np.testing.assert_allclose(_np(L.grad), _np(w).T @ eps, atol=1e-12)


# --------------------------------------------------------------------------- gamma gradient


def test_standard_gamma_grad_matches_quantile_finite_differences():
    """The implicit gradient dx/dalpha = -(dCDF/dalpha) / pdf equals the derivative of the
    gamma quantile at fixed probability, to ~1e-8 (central differences of scipy's
    gammaincinv), across small, moderate and large shapes and both tails."""
    sc = pytest.importorskip("scipy.special")
    from ember.distributions._ops import _standard_gamma_grad

    alpha = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 30.0, 250.0, 4000.0])
    probs = np.array([1e-4, 0.01, 0.3, 0.5, 0.8, 0.999])  # (scipy's quantile loses digits below)
    a, p = np.meshgrid(alpha, probs)
    x = sc.gammaincinv(a, p)
    h = 1e-5 * a
    want = (sc.gammaincinv(a + h, p) - sc.gammaincinv(a - h, p)) / (2 * h)
    got = _np(_standard_gamma_grad(ember.tensor(a), ember.tensor(x)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


@requires_torch
def test_standard_gamma_grad_close_to_torch_and_gammainc_matches():
    """torch's gradient is a piecewise approximation (~1e-3): ember's agrees to it; the gamma
    CDF equals torch.special.gammainc."""
    from ember.distributions._ops import _standard_gamma_grad, gammainc

    rng = np.random.default_rng(0)
    a = rng.uniform(0.1, 20.0, 200)
    x = rng.gamma(a)
    got = _np(_standard_gamma_grad(ember.tensor(a), ember.tensor(x)))
    want = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=5e-3, atol=1e-6)
    assert_close(gammainc(ember.tensor(a), ember.tensor(x)),
                 torch.special.gammainc(torch.tensor(a), torch.tensor(x)), rtol=1e-10)


def test_gammainc_gradients():
    """gammainc's derivative in x is the density; in a (which torch does not implement), it
    matches central differences."""
    sc = pytest.importorskip("scipy.special")
    if not _has_special():
        pytest.skip("ember.lgamma/digamma are not available yet")
    from ember.distributions._ops import gammainc

    a = ember.tensor([0.3, 2.0, 15.0], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([0.2, 2.5, 12.0], dtype=ember.float64, requires_grad=True)
    gammainc(a, x).sum().backward()
    an, xn = _np(a), _np(x)
    np.testing.assert_allclose(_np(x.grad), np.exp((an - 1) * np.log(xn) - xn - sc.gammaln(an)),
                               rtol=1e-10)
    h = 1e-6
    fd = (sc.gammainc(an + h, xn) - sc.gammainc(an - h, xn)) / (2 * h)
    np.testing.assert_allclose(_np(a.grad), fd, rtol=1e-6)


def test_gamma_rsample_gradient_chain():
    """Gamma(c, r).rsample() = standard_gamma(c) / r, differentiated through both; Dirichlet
    and Beta draws carry the same implicit gradient through the normalisation."""
    if not _has_special():
        pytest.skip("ember.lgamma/digamma are not available yet")
    from ember.distributions._ops import _standard_gamma_grad

    c = ember.tensor([0.7, 3.0], dtype=ember.float64, requires_grad=True)
    r = ember.tensor([2.0, 0.5], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(11)
    x = D.Gamma(c, r).rsample((3,))
    x.sum().backward()
    z = x.detach() * r.detach()  # the standard draws
    dz = _np(_standard_gamma_grad(c.detach().expand(3, 2), z))
    np.testing.assert_allclose(_np(c.grad), (dz / _np(r)).sum(0), rtol=1e-10)
    np.testing.assert_allclose(_np(r.grad), (-_np(x) / _np(r)).sum(0), rtol=1e-10)
    conc = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    y = D.Dirichlet(conc).rsample((4,))
    assert y.requires_grad and np.allclose(_np(y).sum(-1), 1.0)
    y[:, 0].sum().backward()
    assert np.isfinite(_np(conc.grad)).all()


# --------------------------------------------------------------------------- validation


def _message(fn):
    try:
        fn()
    except Exception as err:  # noqa: BLE001 (the type is compared too)
        return type(err).__name__, str(err)
    return None


INVALID = [
    ("Normal scale", lambda m, t: m.Normal(t([0.0, 1.0]), t([1.0, -1.0]))),
    ("Normal scalar scale", lambda m, t: m.Normal(0.0, -1.0)),
    ("Bernoulli probs", lambda m, t: m.Bernoulli(t([0.3, 1.5]))),
    ("Bernoulli both", lambda m, t: m.Bernoulli(probs=t([0.3]), logits=t([0.1]))),
    ("Categorical probs", lambda m, t: m.Categorical(t([0.3, -0.2, 0.9]))),
    ("Categorical 0-d", lambda m, t: m.Categorical(logits=t(1.0))),
    ("Uniform bounds", lambda m, t: m.Uniform(t(2.0), t(1.0))),
    ("Dirichlet", lambda m, t: m.Dirichlet(t([1.0, -2.0]))),
    ("Exponential", lambda m, t: m.Exponential(t([0.0, 1.0]))),
    ("Poisson", lambda m, t: m.Poisson(t([-1.0]))),
    ("Laplace", lambda m, t: m.Laplace(t(0.0), t(0.0))),
    ("MVN not positive definite",
     lambda m, t: m.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]]))),
    ("MVN two matrices",
     lambda m, t: m.MultivariateNormal(t([0.0]), t([[1.0]]), scale_tril=t([[1.0]]))),
    ("MVN scale_tril", lambda m, t: m.MultivariateNormal(t([0.0, 0.0]),
                                                         scale_tril=t([[1.0, 1.0], [0, 1.0]]))),
    ("MVN loc 0-d", lambda m, t: m.MultivariateNormal(t(0.0), t([[1.0]]))),
    ("Independent", lambda m, t: m.Independent(m.Normal(t([0.0]), t([1.0])), 2)),
    ("Geometric probs", lambda m, t: m.Geometric(t([0.0, 0.5]))),
    ("Normal log_prob nan", lambda m, t: m.Normal(0.0, 1.0).log_prob(t(float("nan")))),
    ("Normal log_prob not tensor", lambda m, t: m.Normal(0.0, 1.0).log_prob(1.0)),
    ("Normal event mismatch", lambda m, t: m.Normal(t([0.0, 1.0]), 1.0).log_prob(t([1.0] * 3))),
    ("MVN event mismatch", lambda m, t: m.MultivariateNormal(
        t([0.0, 0.0]), t([[1.0, 0.0], [0.0, 1.0]])).log_prob(t([1.0, 2.0, 3.0]))),
    ("Bernoulli support", lambda m, t: m.Bernoulli(t([0.5])).log_prob(t([0.5]))),
    ("Categorical support", lambda m, t: m.Categorical(t([0.5, 0.5])).log_prob(t(2))),
    ("Uniform support", lambda m, t: m.Uniform(t([0.0]), t([1.0])).log_prob(t([1.5]))),
    ("Dirichlet support", lambda m, t: m.Dirichlet(t([1.0, 1.0])).log_prob(t([0.3, 0.3]))),
    ("Exponential support", lambda m, t: m.Exponential(t(1.0)).log_prob(t(-1.0))),
    ("Poisson support", lambda m, t: m.Poisson(t(1.0)).log_prob(t(0.5))),
    ("OneHot support", lambda m, t: m.OneHotCategorical(t([0.5, 0.5])).log_prob(t([1., 1.]))),
]


@requires_torch
@pytest.mark.parametrize("name, make", INVALID, ids=[n for n, _ in INVALID])
def test_validation_errors_match_torch(name, make):
    """Invalid parameters and values raise torch's exception with torch's message."""
    def ember_t(v):
        return ember.tensor(v)

    def torch_t(v):
        return torch.tensor(v)

    got = _message(lambda: make(D, ember_t))
    want = _message(lambda: make(TD, torch_t))
    assert want is not None and got is not None
    device = str(ember.get_default_device())  # (tensors print their device off the CPU)
    assert (got[0], got[1].replace(f", device='{device}'", "")) == want


def test_validate_args_false_and_default_switch():
    """validate_args=False skips the checks; set_default_validate_args switches the default
    (and refuses non-bools, as torch)."""
    d = D.Normal(ember.tensor(0.0), ember.tensor(-1.0), validate_args=False)
    assert math.isnan(d.log_prob(ember.tensor(0.0)).item())
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(0.0, -1.0)
        assert D.Normal(0.0, 1.0).expand((2,))._validate_args is False
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


# --------------------------------------------------------------------------- KL


KL_PAIRS = [
    ("Bernoulli", "Bernoulli"), ("Beta", "Beta"), ("Categorical", "Categorical"),
    ("Dirichlet", "Dirichlet"), ("Exponential", "Exponential"), ("Gamma", "Gamma"),
    ("Laplace", "Laplace"), ("MultivariateNormal", "MultivariateNormal"), ("Normal", "Normal"),
    ("OneHotCategorical", "OneHotCategorical"), ("Poisson", "Poisson"),
    ("LogNormal", "LogNormal"), ("Uniform", "Uniform"), ("Independent", "Independent"),
    ("Cauchy", "Cauchy"), ("Geometric", "Geometric"), ("Gumbel", "Gumbel"),
    ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"), ("Chi2", "Chi2"),
    ("Bernoulli", "Poisson"), ("Beta", "Exponential"), ("Beta", "Gamma"), ("Beta", "Normal"),
    ("Beta", "Uniform"), ("Beta", "Pareto"), ("Exponential", "Beta"), ("Exponential", "Gamma"),
    ("Exponential", "Normal"), ("Exponential", "Uniform"), ("Exponential", "Gumbel"),
    ("Exponential", "Pareto"), ("Gamma", "Beta"), ("Gamma", "Exponential"),
    ("Gamma", "Normal"), ("Gamma", "Uniform"), ("Gamma", "Gumbel"), ("Gamma", "Pareto"),
    ("Laplace", "Normal"), ("Laplace", "Beta"), ("Laplace", "Uniform"), ("Laplace", "Pareto"),
    ("Normal", "Laplace"), ("Normal", "Gamma"), ("Normal", "Gumbel"), ("Normal", "Pareto"),
    ("Gumbel", "Normal"), ("Gumbel", "Gamma"), ("Pareto", "Exponential"),
    ("Pareto", "Gamma"), ("Pareto", "Normal"), ("Pareto", "Uniform"), ("Poisson", "Bernoulli"),
    ("Uniform", "Beta"), ("Uniform", "Exponential"), ("Uniform", "Gamma"),
    ("Uniform", "Normal"), ("Uniform", "Gumbel"), ("Uniform", "Pareto"), ("Chi2", "Gamma"),
]

# two parameter sets per family (batch (3,)): p's and q's; chosen so that Uniform-Uniform and
# Uniform-Beta include both finite and infinite entries
KL_PARAMS = {
    "Bernoulli": [lambda m, t: m.Bernoulli(t([0.2, 0.5, 0.9])),
                  lambda m, t: m.Bernoulli(logits=t([0.3, -1.0, 2.0]))],
    "Beta": [lambda m, t: m.Beta(t([0.5, 2.0, 3.0]), t([1.5, 1.0, 4.0])),
             lambda m, t: m.Beta(t([1.0, 2.5, 0.7]), t([2.0, 0.5, 1.0]))],
    "Categorical": [lambda m, t: m.Categorical(t([[0.2, 0.3, 0.5]] * 3)),
                    lambda m, t: m.Categorical(logits=t([[0.1, 0.5, -1.0], [1.0, 0.0, 0.0],
                                                         [2.0, -2.0, 0.5]]))],
    "OneHotCategorical": [lambda m, t: m.OneHotCategorical(t([[0.2, 0.3, 0.5]] * 3)),
                          lambda m, t: m.OneHotCategorical(logits=t([[0.1, 0.5, -1.0]] * 3))],
    "Dirichlet": [lambda m, t: m.Dirichlet(t([[0.5, 2.0, 3.0]] * 3)),
                  lambda m, t: m.Dirichlet(t([[1.0, 1.5, 0.7], [2.0, 2.0, 2.0],
                                              [0.3, 4.0, 1.0]]))],
    "Exponential": [lambda m, t: m.Exponential(t([0.5, 1.0, 3.0])),
                    lambda m, t: m.Exponential(t([2.0, 0.7, 1.0]))],
    "Gamma": [lambda m, t: m.Gamma(t([0.5, 2.0, 3.0]), t([1.5, 1.0, 4.0])),
              lambda m, t: m.Gamma(t([1.0, 2.5, 0.7]), t([2.0, 0.5, 1.0]))],
    "Chi2": [lambda m, t: m.Chi2(t([0.5, 2.0, 3.0])), lambda m, t: m.Chi2(t([1.0, 2.5, 7.0]))],
    "Laplace": [lambda m, t: m.Laplace(t([0.0, 1.0, -1.0]), t([1.0, 0.5, 2.0])),
                lambda m, t: m.Laplace(t([0.5, 0.0, 2.0]), t([2.0, 1.0, 0.3]))],
    "Normal": [lambda m, t: m.Normal(t([0.0, 1.0, -1.0]), t([1.0, 0.5, 2.0])),
               lambda m, t: m.Normal(t([0.5, 0.0, 2.0]), t([2.0, 1.0, 0.3]))],
    "LogNormal": [lambda m, t: m.LogNormal(t([0.0, 1.0, -1.0]), t([1.0, 0.5, 2.0])),
                  lambda m, t: m.LogNormal(t([0.5, 0.0, 2.0]), t([2.0, 1.0, 0.3]))],
    "HalfNormal": [lambda m, t: m.HalfNormal(t([1.0, 0.5, 2.0])),
                   lambda m, t: m.HalfNormal(t([2.0, 1.0, 0.3]))],
    "Cauchy": [lambda m, t: m.Cauchy(t([0.0, 1.0, -1.0]), t([1.0, 0.5, 2.0])),
               lambda m, t: m.Cauchy(t([0.5, 0.0, 2.0]), t([2.0, 1.0, 0.3]))],
    "Gumbel": [lambda m, t: m.Gumbel(t([0.0, 1.0, -1.0]), t([1.0, 0.5, 2.0])),
               lambda m, t: m.Gumbel(t([0.5, 0.0, 2.0]), t([2.0, 1.0, 0.3]))],
    "Geometric": [lambda m, t: m.Geometric(t([0.2, 0.5, 0.9])),
                  lambda m, t: m.Geometric(t([0.6, 0.1, 0.3]))],
    "Pareto": [lambda m, t: m.Pareto(t([1.0, 0.5, 2.0]), t([3.0, 1.5, 0.7])),
               lambda m, t: m.Pareto(t([0.5, 1.0, 1.0]), t([2.5, 2.0, 3.0]))],
    "Poisson": [lambda m, t: m.Poisson(t([0.5, 2.0, 3.0])),
                lambda m, t: m.Poisson(t([1.0, 2.5, 0.7]))],
    "Uniform": [lambda m, t: m.Uniform(t([0.1, 0.0, 0.3]), t([0.6, 1.0, 0.9])),
                lambda m, t: m.Uniform(t([0.0, 0.2, -1.0]), t([1.0, 0.9, 2.0]))],
    "MultivariateNormal": [
        lambda m, t: m.MultivariateNormal(t([[0.0, 1.0]] * 3),
                                          scale_tril=t([[1.0, 0.0], [0.5, 2.0]])),
        lambda m, t: m.MultivariateNormal(t([[1.0, -1.0], [0.0, 0.0], [2.0, 0.5]]),
                                          t([[2.0, 0.3], [0.3, 0.5]]))],
    "Independent": [
        lambda m, t: m.Independent(m.Normal(t([[0.0, 1.0]] * 3), t([[1.0, 0.5]] * 3)), 1),
        lambda m, t: m.Independent(m.Normal(t([[0.5, 0.0]] * 3), t([[2.0, 1.0]] * 3)), 1)],
}

SPECIAL_FAMILIES = {"Beta", "Dirichlet", "Gamma", "Chi2", "Gumbel", "Poisson"}


@requires_torch
@pytest.mark.parametrize("p_name, q_name", KL_PAIRS, ids=[f"{p}-{q}" for p, q in KL_PAIRS])
def test_kl_divergence_matches_torch(p_name, q_name):
    """kl_divergence and its gradients with respect to both distributions' parameters."""
    if {p_name, q_name} & SPECIAL_FAMILIES and not _has_special():
        pytest.skip("ember.lgamma/digamma are not available yet")
    leaves_e, leaves_t = [], []

    def maker(lib, store):
        def t(v):
            x = lib.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)
            store.append(x)
            return x
        return t

    mods = ((D, ember, leaves_e), (TD, torch, leaves_t))
    e_p, t_p = (KL_PARAMS[p_name][0](m, maker(lib, s)) for m, lib, s in mods)
    e_q, t_q = (KL_PARAMS[q_name][1](m, maker(lib, s)) for m, lib, s in mods)
    ke, kt = D.kl_divergence(e_p, e_q), TD.kl_divergence(t_p, t_q)
    assert tuple(ke.shape) == tuple(kt.shape)
    assert_close(ke, kt)
    finite = torch.isfinite(kt)
    if finite.any() and kt.requires_grad:
        ke[ember.tensor(finite.numpy())].sum().backward()
        kt[finite].sum().backward()
        for le, lt in zip(leaves_e, leaves_t):
            if lt.grad is None:
                assert le.grad is None or not _np(le.grad).any()
            else:
                assert_close(le.grad, lt.grad)


@requires_torch
@pytest.mark.parametrize("p, q", [
    (lambda m, t: m.Categorical(t([0.5, 0.5])), lambda m, t: m.Normal(0.0, 1.0)),
    (lambda m, t: m.Normal(0.0, 1.0), lambda m, t: m.Poisson(t(1.0))),  # two exp. families
    (lambda m, t: m.Normal(0.0, 1.0), lambda m, t: m.Cauchy(0.0, 1.0)),
    (lambda m, t: m.MultivariateNormal(t([0.0]), t([[1.0]])),
     lambda m, t: m.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.0], [0.0, 1.0]]))),
], ids=["no rule", "exp-family cross", "Normal-Cauchy", "MVN event shapes"])
def test_kl_missing_pairs_raise_as_torch(p, q):
    def kl(m, lib):
        def t(v):
            return lib.tensor(v)
        return m.kl_divergence(p(m, t), q(m, t))

    assert _message(lambda: kl(D, ember)) == _message(lambda: kl(TD, torch)) is not None


def test_register_kl_dispatch_memo_and_ambiguity():
    """register_kl takes precedence by subclass; a tie warns as torch's does."""
    class MyNormal(D.Normal):
        pass

    class MyLaplace(D.Laplace):
        pass

    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    base = D.kl_divergence(D.Normal(0.0, 1.0), q)
    assert_close(D.kl_divergence(p, q), base)  # inherited from (Normal, Normal)

    @D.register_kl(MyNormal, D.Normal)
    def _kl_mine(p, q):
        return ember.tensor(42.0)

    try:
        assert D.kl_divergence(p, q).item() == 42.0  # the memo was cleared
        assert_close(D.kl_divergence(D.Normal(0.0, 1.0), q), base)

        @D.register_kl(D.Normal, MyLaplace)
        def _kl_a(p, q):
            return ember.tensor(1.0)

        @D.register_kl(MyNormal, D.Laplace)
        def _kl_b(p, q):
            return ember.tensor(2.0)

        with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):
            D.kl_divergence(p, MyLaplace(0.0, 1.0))
    finally:
        from ember.distributions import kl as kl_module
        for key in [(MyNormal, D.Normal), (D.Normal, MyLaplace), (MyNormal, D.Laplace)]:
            kl_module._KL_REGISTRY.pop(key, None)
        kl_module._KL_MEMOIZE.clear()


# --------------------------------------------------------------------------- transforms


TRANSFORMS = [
    ("Exp", lambda m, t: m.ExpTransform(), (2, 3)),
    ("Affine", lambda m, t: m.AffineTransform(t([1.0, -2.0, 0.5]), t([2.0, 0.5, -3.0])), (2, 3)),
    ("Affine event_dim", lambda m, t: m.AffineTransform(1.0, t([2.0, 0.5, 3.0]), event_dim=1),
     (2, 3)),
    ("Sigmoid", lambda m, t: m.SigmoidTransform(), (2, 3)),
    ("Tanh", lambda m, t: m.TanhTransform(), (2, 3)),
    ("Softplus", lambda m, t: m.SoftplusTransform(), (2, 3)),
    ("Power", lambda m, t: m.PowerTransform(t(2.5)), (2, 3)),
    ("StickBreaking", lambda m, t: m.StickBreakingTransform(), (2, 3)),
    ("Softmax", lambda m, t: m.SoftmaxTransform(), (2, 3)),
    ("LowerCholesky", lambda m, t: m.LowerCholeskyTransform(), (2, 3, 3)),
    ("PositiveDefinite", lambda m, t: m.PositiveDefiniteTransform(), (2, 3, 3)),
    ("CorrCholesky", lambda m, t: m.CorrCholeskyTransform(), (2, 6)),
    ("Reshape", lambda m, t: m.ReshapeTransform((2, 3), (3, 2)), (4, 2, 3)),
    ("Independent", lambda m, t: m.IndependentTransform(m.ExpTransform(), 1), (2, 3)),
    ("Compose", lambda m, t: m.ComposeTransform(
        [m.AffineTransform(0.5, 2.0), m.SigmoidTransform(), m.PowerTransform(t(0.5))]), (2, 3)),
    ("Inverse", lambda m, t: m.ExpTransform().inv, (2, 3)),
    ("Cat", lambda m, t: m.CatTransform([m.ExpTransform(), m.AffineTransform(1.0, 2.0)], 1,
                                         [2, 1]), (2, 3)),
    ("Stack", lambda m, t: m.StackTransform([m.ExpTransform(), m.TanhTransform(),
                                             m.AffineTransform(1.0, 2.0)], 1), (2, 3)),
    ("Abs", lambda m, t: m.AbsTransform(), (2, 3)),
]


@requires_torch
@pytest.mark.parametrize("name, make, shape", TRANSFORMS, ids=[n for n, _, _ in TRANSFORMS])
def test_transforms_match_torch(name, make, shape):
    """Forward, inverse, log_abs_det_jacobian (and their gradients), shapes, event dims,
    bijectivity and sign agree with torch's; ``t.inv.inv is t``."""
    x = np.random.default_rng(0).uniform(0.2, 1.5, shape)
    te = make(D, lambda v: ember.tensor(v, dtype=ember.float64))
    tt = make(TD, lambda v: torch.tensor(v, dtype=torch.float64))
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ye, yt = te(xe), tt(xt)
    assert_close(ye, yt)
    assert te.inv.inv is te
    assert te.bijective == tt.bijective
    assert repr(te.domain) == repr(tt.domain) and repr(te.codomain) == repr(tt.codomain)
    assert tuple(te.forward_shape(shape)) == tuple(tt.forward_shape(shape))
    assert tuple(te.inverse_shape(tuple(yt.shape))) == tuple(tt.inverse_shape(yt.shape))
    sign_e, sign_t = attempt(lambda: te.sign), attempt(lambda: tt.sign)
    assert sign_e[0] == sign_t[0]
    if sign_e[0] == "ok":
        assert_close(sign_e[1], sign_t[1])
    assert_close(te.inv(ye.detach()), tt.inv(yt.detach()))
    got, want = attempt(lambda: te.log_abs_det_jacobian(xe, ye)), attempt(
        lambda: tt.log_abs_det_jacobian(xt, yt))
    assert got[0] == want[0]
    total_e, total_t = ye.sum(), yt.sum()
    if got[0] == "ok":
        assert_close(got[1], want[1])
        total_e, total_t = total_e + got[1].sum(), total_t + want[1].sum()
    total_e.backward()
    total_t.backward()
    assert_close(xe.grad, xt.grad)


def test_transform_cache_and_equality():
    t = transforms.ExpTransform(cache_size=1)
    x = ember.tensor([0.5])
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert transforms.ExpTransform() == transforms.ExpTransform()
    assert transforms.AffineTransform(1.0, 2.0) == transforms.AffineTransform(1.0, 2.0)
    assert transforms.AffineTransform(1.0, 2.0) != transforms.AffineTransform(1.0, 3.0)
    assert transforms.ExpTransform().inv == transforms.ExpTransform().inv
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        transforms.ExpTransform(cache_size=2)


CONSTRAINTS = [
    ("real", lambda c: c.real), ("positive", lambda c: c.positive),
    ("nonnegative", lambda c: c.nonnegative), ("unit_interval", lambda c: c.unit_interval),
    ("greater_than", lambda c: c.greater_than(1.5)),
    ("greater_than_eq", lambda c: c.greater_than_eq(-1.0)),
    ("less_than", lambda c: c.less_than(2.0)), ("interval", lambda c: c.interval(-1.0, 3.0)),
    ("half_open_interval", lambda c: c.half_open_interval(-1.0, 3.0)),
    ("simplex", lambda c: c.simplex), ("real_vector", lambda c: c.real_vector),
    ("independent", lambda c: c.independent(c.positive, 1)),
    ("lower_cholesky", lambda c: c.lower_cholesky),
    ("positive_definite", lambda c: c.positive_definite),
    ("corr_cholesky", lambda c: c.corr_cholesky),
]


@requires_torch
@pytest.mark.parametrize("name, make", CONSTRAINTS, ids=[n for n, _ in CONSTRAINTS])
def test_biject_to_and_transform_to_match_torch(name, make):
    """biject_to/transform_to pick torch's transform for each constraint; it maps
    unconstrained reals into the region (checked by the constraint itself)."""
    ce, ct = make(constraints), make(TD.constraints)
    assert repr(ce) == repr(ct)
    assert ce.event_dim == ct.event_dim and ce.is_discrete == ct.is_discrete
    shape = {0: (2, 3), 1: (2, 3), 2: (2, 3, 3)}[ce.event_dim]
    if name == "corr_cholesky":
        shape = (2, 3)
    x = np.random.default_rng(0).normal(size=shape)
    for reg_e, reg_t in ((D.biject_to, TD.biject_to), (D.transform_to, TD.transform_to)):
        got = attempt(lambda reg_e=reg_e: reg_e(ce))
        want = attempt(lambda reg_t=reg_t: reg_t(ct))
        assert got[0] == want[0]
        if got[0] == "raises":
            continue
        te, tt = got[1], want[1]
        assert repr(te) == repr(tt)
        ye, yt = te(ember.tensor(x)), tt(torch.tensor(x))
        assert_close(ye, yt)
        assert bool(ce.check(ye).all())
        assert_close(ce.check(ye), ct.check(yt))


@requires_torch
def test_constraint_checks_match_torch():
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.normal(size=8) * 2, [0.0, 1.0, np.nan, np.inf]])
    pairs = [(c, make) for c, make in CONSTRAINTS if make(constraints).event_dim == 0]
    pairs += [("boolean", lambda c: c.boolean), ("nonnegative_integer",
                                                 lambda c: c.nonnegative_integer),
              ("integer_interval", lambda c: c.integer_interval(0, 3)),
              ("positive_integer", lambda c: c.positive_integer)]
    for name, make in pairs:
        assert_close(make(constraints).check(ember.tensor(v)),
                     make(TD.constraints).check(torch.tensor(v))), name
    mats = [np.array([[1.0, 0.0], [0.5, 2.0]]), np.array([[1.0, 0.3], [0.5, 2.0]]),
            np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([[1.0, 2.0], [2.0, 1.0]])]
    m = np.stack(mats)
    for name in ("lower_cholesky", "lower_triangular", "positive_definite",
                 "positive_semidefinite", "symmetric", "square"):
        assert_close(getattr(constraints, name).check(ember.tensor(m)),
                     getattr(TD.constraints, name).check(torch.tensor(m)))
    s = np.array([[0.2, 0.8], [0.5, 0.6], [1.0, 0.0], [-0.1, 1.1]])
    for name in ("simplex", "one_hot"):
        assert_close(getattr(constraints, name).check(ember.tensor(s)),
                     getattr(TD.constraints, name).check(torch.tensor(s)))
    assert constraints.is_dependent(constraints.dependent)
    with pytest.raises(ValueError, match="Cannot determine validity"):
        constraints.dependent.check(ember.tensor(1.0))
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(constraints.boolean)


# --------------------------------------------------------------------------- utils


@requires_torch
def test_utils_match_torch():
    from torch.distributions import utils as tu

    from ember.distributions import utils as eu
    x = np.random.default_rng(0).normal(size=(2, 4))
    for binary in (False, True):
        assert_close(eu.logits_to_probs(ember.tensor(x), binary),
                     tu.logits_to_probs(torch.tensor(x), binary))
        p = 1 / (1 + np.exp(-x))
        assert_close(eu.probs_to_logits(ember.tensor(p), binary),
                     tu.probs_to_logits(torch.tensor(p), binary))
    a, b = eu.broadcast_all(ember.tensor([1.0, 2.0], dtype=ember.float64), 3.0)
    assert tuple(b.shape) == (2,) and b.dtype == ember.float64
    a, b = eu.broadcast_all(1.0, 2)
    assert a.dtype == ember.get_default_dtype() and tuple(a.shape) == ()
    with pytest.raises(ValueError, match="Input arguments must all be instances of Number"):
        eu.broadcast_all("a")
    vec = np.arange(6.0)
    mat_e = eu.vec_to_tril_matrix(ember.tensor(vec))
    assert_close(mat_e, tu.vec_to_tril_matrix(torch.tensor(vec)))
    assert_close(eu.tril_matrix_to_vec(mat_e), vec)
    assert_close(eu.vec_to_tril_matrix(ember.tensor(vec[:3]), diag=-1),
                 tu.vec_to_tril_matrix(torch.tensor(vec[:3]), diag=-1))

    class Thing:
        calls = 0

        @eu.lazy_property
        def value(self):
            Thing.calls += 1
            return 5

    thing = Thing()
    assert thing.value == 5 and thing.value == 5 and Thing.calls == 1
    assert isinstance(Thing.value, property)


def test_lazy_parameters_and_repr():
    d = D.Bernoulli(logits=ember.tensor([0.0, 2.0]))
    assert "probs" not in d.__dict__
    np.testing.assert_allclose(_np(d.probs), 1 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-6)
    assert "probs" in d.__dict__
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(D.Normal(ember.zeros(2), 1.0)) == ("Normal(loc: torch.Size([2]), "
                                                   "scale: torch.Size([2]))")


@pytest.mark.parametrize("name", ["Binomial", "Wishart", "LKJCholesky", "VonMises",
                                  "LowRankMultivariateNormal", "MixtureSameFamily"])
def test_missing_distributions_raise_clearly(name):
    cls = getattr(D, name)
    assert issubclass(cls, D.Distribution)
    with pytest.raises(NotImplementedError, match=f"torch.distributions.{name} is not "
                                                  "implemented in ember"):
        cls(ember.tensor(1.0))


@requires_torch
def test_names_match_torch():
    """Every public name of torch.distributions exists in ember.distributions."""
    assert set(TD.__all__) <= set(D.__all__)
    for name in TD.__all__:
        assert hasattr(D, name), name
    assert ember.distributions is D


# --------------------------------------------------------------------------- training steps


@requires_torch
def test_vae_step_matches_torch():
    """A VAE step: encoder -> Normal(mu, sigma).rsample() -> decoder, loss = reconstruction +
    KL(q || N(0, 1)); the gradients equal torch's for the same draw (the noise ember drew is
    recovered from its sample and given to torch)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 5))
    weights = {"enc_mu": rng.normal(size=(5, 2)) * 0.3, "enc_logvar": rng.normal(size=(5, 2)) * 0.3,
               "dec": rng.normal(size=(2, 5)) * 0.3}
    we, wt = tensors(weights)

    def encode(lib, w, xx):
        mu = xx @ w["enc_mu"]
        std = lib.exp(0.5 * (xx @ w["enc_logvar"]))
        return mu, std

    xe, xt = ember.tensor(x), torch.tensor(x)
    mu_e, std_e = encode(ember, we, xe)
    q_e = D.Normal(mu_e, std_e)
    ember.manual_seed(0)
    z_e = q_e.rsample()
    eps = ((z_e - mu_e) / std_e).detach()
    loss_e = ((z_e @ we["dec"] - xe) ** 2).sum(-1).mean() + D.kl_divergence(
        q_e, D.Normal(ember.zeros_like(mu_e), ember.ones_like(std_e))).sum(-1).mean()
    loss_e.backward()

    mu_t, std_t = encode(torch, wt, xt)
    q_t = TD.Normal(mu_t, std_t)
    z_t = mu_t + std_t * torch.tensor(_np(eps))
    loss_t = ((z_t @ wt["dec"] - xt) ** 2).sum(-1).mean() + TD.kl_divergence(
        q_t, TD.Normal(torch.zeros_like(mu_t), torch.ones_like(std_t))).sum(-1).mean()
    loss_t.backward()
    assert_close(loss_e, loss_t)
    for k in weights:
        assert_close(we[k].grad, wt[k].grad)


@requires_torch
def test_reinforce_step_matches_torch():
    """A policy-gradient step: Categorical(logits=policy(obs)), loss = -(log_prob(actions) *
    advantages).mean() - 0.01 * entropy; same gradients as torch for the same actions."""
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(16, 4))
    weights = {"w": rng.normal(size=(4, 3)) * 0.5, "b": rng.normal(size=3) * 0.1}
    actions = rng.integers(0, 3, 16)
    adv = rng.normal(size=16)
    we, wt = tensors(weights)
    pe = D.Categorical(logits=ember.tensor(obs) @ we["w"] + we["b"])
    pt = TD.Categorical(logits=torch.tensor(obs) @ wt["w"] + wt["b"])
    sampled = pe.sample()
    assert tuple(sampled.shape) == (16,) and sampled.dtype == ember.int64
    le = -(pe.log_prob(ember.tensor(actions)) * ember.tensor(adv)).mean() - 0.01 * pe.entropy(
    ).mean()
    lt = -(pt.log_prob(torch.tensor(actions)) * torch.tensor(adv)).mean() - 0.01 * pt.entropy(
    ).mean()
    le.backward()
    lt.backward()
    assert_close(le, lt)
    for k in weights:
        assert_close(we[k].grad, wt[k].grad)


@requires_torch
def test_straight_through_gradient_matches_torch():
    """OneHotCategoricalStraightThrough.rsample is the one-hot draw plus probs - probs.detach():
    its gradient does not depend on the draw, so it equals torch's exactly."""
    logits = np.random.default_rng(3).normal(size=(2, 4))
    w = np.arange(8.0).reshape(2, 4)
    le, lt = ember.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    xe = D.OneHotCategoricalStraightThrough(logits=le).rsample()
    xt = TD.OneHotCategoricalStraightThrough(logits=lt).rsample()
    assert bool(constraints.one_hot.check(xe.detach()).all())
    (xe * ember.tensor(w)).sum().backward()
    (xt * torch.tensor(w)).sum().backward()
    assert_close(le.grad, lt.grad)


def test_independent_and_transformed_rsample_keep_gradients():
    loc = ember.zeros(2, 3, requires_grad=True)
    d = D.Independent(D.Normal(loc, 1.0), 2)
    assert d.has_rsample and tuple(d.batch_shape) == () and tuple(d.event_shape) == (2, 3)
    d.rsample((4,)).sum().backward()
    np.testing.assert_allclose(_np(loc.grad), 4.0)
    scale = ember.tensor(0.5, requires_grad=True)
    y = D.LogNormal(0.0, scale).rsample((5,))
    assert bool((y > 0).all())
    y.log().sum().backward()  # log y = 0 + scale * eps
    assert abs(scale.grad.item() - (_np(y.log()) / 0.5).sum()) < 1e-5
    with pytest.warns(FutureWarning):
        assert tuple(D.Normal(0.0, 1.0).sample_n(3).shape) == (3,)


def test_exp_family_entropy_fallback_matches_closed_form():
    """ExponentialFamily.entropy (Bregman divergence by autograd) equals the closed forms."""
    loc, scale = ember.tensor([0.0, 1.0]), ember.tensor([0.5, 2.0])
    d = D.Normal(loc, scale)
    np.testing.assert_allclose(_np(D.ExponentialFamily.entropy(d)), _np(d.entropy()), rtol=1e-5)
    e = D.Exponential(ember.tensor([0.5, 3.0]))
    np.testing.assert_allclose(_np(D.ExponentialFamily.entropy(e)), _np(e.entropy()), rtol=1e-5)


def test_no_warnings_on_common_paths():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = D.Normal(ember.zeros(3), ember.ones(3))
        d.log_prob(d.sample((2,)))
        D.kl_divergence(d, d)
