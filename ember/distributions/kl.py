"""``torch.distributions.kl``: ``kl_divergence(p, q)`` and its registry, ``register_kl``.

Lookup finds the most specific registered ``(type_p, type_q)`` pair by subclass order (with
torch's ``RuntimeWarning`` when the left and right orders disagree) and memoizes it. Pairs
with no rule raise torch's ``NotImplementedError``; two different exponential families meet
the ``(ExponentialFamily, ExponentialFamily)`` rule, which refuses them as torch's does.

The closed forms are torch's, for every pair of the distributions ember implements. Where
torch assigns ``inf`` into a tensor through a mask, ember uses ``where`` (the same values
and the same zero gradient at those entries).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import total_ordering

import ember

from .._tensor import Tensor
from ..nn import functional as F
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis, _tril_inverse
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost
from .utils import euler_constant as _euler_gamma

__all__ = ["kl_divergence", "register_kl"]

# the source of truth: a few general (type, type) pairs -> functions
_KL_REGISTRY: dict[tuple[type, type], Callable] = {}
# memoized lookups: many specific (type, type) pairs -> functions
_KL_MEMOIZE: dict[tuple[type, type], Callable] = {}

_INF = float("inf")


def register_kl(type_p: type, type_q: type) -> Callable:
    """Decorator registering ``fun(p, q)`` as ``kl_divergence`` for that pair of types.

    Lookup takes the most specific match by subclass; when two matches tie (``(BaseP,
    DerivedQ)`` and ``(DerivedP, BaseQ)``), register the most specific pair to settle it.
    """
    if not isinstance(type_p, type) and issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) and issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # the lookup order may have changed
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered pair, ordered lexicographically by subclass."""

    __slots__ = ["types"]

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return self.types == other.types

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Callable:
    """The most specific registered match (assuming single inheritance)."""
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=2)
    return left_fun


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, batched over the batch shape.

    Raises:
        NotImplementedError: no rule is registered for the pair (see ``register_kl``).
    """
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


def _infinite_like(tensor: Tensor) -> Tensor:
    return ember.full_like(tensor, _INF)


def _x_log_x(tensor: Tensor) -> Tensor:
    """``x log x``, 0 at 0."""
    return ember.xlogy(tensor, tensor)


def _batch_trace_XXT(bmat: Tensor) -> Tensor:
    """``trace(X X^T)`` over trailing matrix dims."""
    n, m = bmat.size(-1), bmat.size(-2)
    return bmat.reshape(-1, m * n).pow(2).sum(-1).reshape(bmat.shape[:-2])


# --------------------------------------------------------------------------- same families


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = ember.where(p.probs == 0, 0.0, ember.where(q.probs == 0, _INF, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = ember.where(p.probs == 1, 0.0, ember.where(q.probs == 1, _INF, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    lg, dg = ember.lgamma, ember.digamma
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = lg(q.concentration1) + lg(q.concentration0) + lg(sum_params_p)
    t2 = lg(p.concentration1) + lg(p.concentration0) + lg(sum_params_q)
    t3 = (p.concentration1 - q.concentration1) * dg(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * dg(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * dg(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = ember.where((q.probs == 0).expand_as(t), _INF, t)
    t = ember.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = ember.lgamma(sum_p_concentration) - ember.lgamma(sum_q_concentration)
    t2 = (ember.lgamma(p.concentration) - ember.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = ember.digamma(p.concentration) - ember.digamma(sum_p_concentration).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log normalizer, for one family."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot                             be computed "
                                  "using Bregman divergences")
    p_nparams = [nparam.detach().requires_grad_() for nparam in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = ember.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ember.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * ember.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal,
                                              q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with                "
                         "          different event shapes cannot be computed")
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    n = p.event_shape[0]
    term2 = _batch_trace_XXT(ember.matmul(_tril_inverse(q_tril), p_tril))  # tr(Sq^-1 Sp)
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical,
                                            q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution,
                                q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return ember.where((q.low > p.low) | (q.high < p.high), _INF, result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


# --------------------------------------------------------------------------- different families


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return (-p.entropy() - q.rate.log()
            + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0)))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    t1 = -p.entropy()
    t2 = ember.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (ember.digamma(p.concentration1)
                                  - ember.digamma(p.concentration1 + p.concentration0))
    t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
    return t1 + t2 - t3 + t4


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    E_beta = p.concentration1 / (p.concentration1 + p.concentration0)
    var_normal = q.scale.pow(2)
    t1 = -p.entropy()
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    t3 = (E_beta * (1 - E_beta) / (p.concentration1 + p.concentration0 + 1)
          + E_beta.pow(2)) * 0.5
    t4 = q.loc * E_beta
    t5 = q.loc.pow(2) * 0.5
    return t1 + t2 + (t3 - t4 + t5) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    outside = (q.low > p.support.lower_bound) | (q.high < p.support.upper_bound)
    return ember.where(outside, _INF, result)


@register_kl(Exponential, Beta)
@register_kl(Exponential, Uniform)
def _kl_exponential_infinity(p: Exponential, q: Distribution) -> Tensor:
    return _infinite_like(p.rate)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    t1 = -q.concentration * ember.log(ratio)
    return (t1 + ratio + ember.lgamma(q.concentration) + q.concentration * _euler_gamma
            - (1 + _euler_gamma))


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    var_normal = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * ember.log(rate_sqr * var_normal * 2 * math.pi)
    t2 = rate_sqr.reciprocal()
    t3 = q.loc / p.rate
    t4 = q.loc.pow(2) * 0.5
    return t1 - 1 + (t2 - t3 + t4) / var_normal


@register_kl(Gamma, Beta)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p: Gamma, q: Distribution) -> Tensor:
    return _infinite_like(p.concentration)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    var_normal = q.scale.pow(2)
    beta_sqr = p.rate.pow(2)
    t1 = (0.5 * ember.log(beta_sqr * var_normal * 2 * math.pi) - p.concentration
          - ember.lgamma(p.concentration))
    t2 = 0.5 * (p.concentration.pow(2) + p.concentration) / beta_sqr
    t3 = q.loc * p.concentration / p.rate
    t4 = 0.5 * q.loc.pow(2)
    return (t1 + (p.concentration - 1) * ember.digamma(p.concentration)
            + (t2 - t3 + t4) / var_normal)


@register_kl(Laplace, Beta)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Uniform)
def _kl_laplace_infinity(p: Laplace, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    var_normal = q.scale.pow(2)
    scale_sqr_var_ratio = p.scale.pow(2) / var_normal
    t1 = 0.5 * ember.log(2 * scale_sqr_var_ratio / math.pi)
    t2 = 0.5 * p.loc.pow(2)
    t3 = p.loc * q.loc
    t4 = 0.5 * q.loc.pow(2)
    return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1


@register_kl(Normal, Beta)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p: Normal, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = ember.log(scale_ratio)
    t2 = math.sqrt(2 / math.pi) * p.scale * ember.exp(-0.5 * loc_diff_scale_ratio.pow(2))
    t3 = loc_diff * ember.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Poisson, Bernoulli)
def _kl_poisson_infinity(p: Poisson, q: Distribution) -> Tensor:
    return _infinite_like(p.rate)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    common_term = p.high - p.low
    t1 = ember.log(common_term)
    t2 = ((q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - common_term)
          / common_term)
    t3 = ((q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + common_term)
          / common_term)
    t4 = (ember.lgamma(q.concentration1) + ember.lgamma(q.concentration0)
          - ember.lgamma(q.concentration1 + q.concentration0))
    result = t3 + t4 - t1 - t2
    outside = (p.high > q.support.upper_bound) | (p.low < q.support.lower_bound)
    return ember.where(outside, _INF, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponetial(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return ember.where(p.low < q.support.lower_bound, _INF, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    common_term = p.high - p.low
    t1 = common_term.log()
    t2 = ember.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = ((1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - common_term)
          / common_term)
    t4 = q.rate * (p.high + p.low) / 2
    result = -t1 + t2 + t3 + t4
    return ember.where(p.low < q.support.lower_bound, _INF, result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    common_term = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
    t2 = common_term.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


# --------------------------------------------------------------------------- the further families


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _euler_gamma
    t3 = ember.exp(ct2 + ember.lgamma(1 + ct1) - ct3)
    return t1 + t2 + t3 - (1 + _euler_gamma)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    t1 = q.alpha * scale_ratio.log()
    t2 = -alpha_ratio.log()
    result = t1 + t2 + alpha_ratio - 1
    return ember.where(p.support.lower_bound < q.support.lower_bound, _INF, result)


@register_kl(Beta, Pareto)
def _kl_beta_infinity(p: Beta, q: Pareto) -> Tensor:
    return _infinite_like(p.concentration1)


@register_kl(Exponential, Pareto)
def _kl_exponential_pareto(p: Exponential, q: Pareto) -> Tensor:
    return _infinite_like(p.rate)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    scale_rate_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = scale_rate_prod.log() - 1
    t2 = ember.exp(loc_scale_ratio) * scale_rate_prod / (scale_rate_prod + 1)
    t3 = scale_rate_prod.reciprocal()
    return t1 - loc_scale_ratio + t2 + t3


@register_kl(Gamma, Pareto)
def _kl_gamma_pareto(p: Gamma, q: Pareto) -> Tensor:
    return _infinite_like(p.concentration)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    beta_scale_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = ((p.concentration - 1) * ember.digamma(p.concentration)
          - ember.lgamma(p.concentration) - p.concentration)
    t2 = beta_scale_prod.log() + p.concentration / beta_scale_prod
    t3 = (ember.exp(loc_scale_ratio) * (1 + beta_scale_prod.reciprocal()).pow(-p.concentration)
          - loc_scale_ratio)
    return t1 + t2 + t3


@register_kl(Gumbel, Beta)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Gamma)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
def _kl_gumbel_infinity(p: Gumbel, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    param_ratio = p.scale / q.scale
    t1 = (param_ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * param_ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _euler_gamma - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_euler_gamma + 1)


@register_kl(Laplace, Pareto)
def _kl_laplace_pareto(p: Laplace, q: Pareto) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Normal, Pareto)
def _kl_normal_pareto(p: Normal, q: Pareto) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_scale_ratio = p.loc / q.scale
    var_scale_sqr_ratio = (p.scale / q.scale).pow(2)
    loc_scale_ratio = q.loc / q.scale
    t1 = var_scale_sqr_ratio.log() * 0.5
    t2 = mean_scale_ratio - loc_scale_ratio
    t3 = ember.exp(-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio)
    return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Pareto, Beta)
@register_kl(Pareto, Uniform)
def _kl_pareto_infinity(p: Pareto, q: Distribution) -> Tensor:
    return _infinite_like(p.scale)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    scale_rate_prod = p.scale * q.rate
    t1 = (p.alpha / scale_rate_prod).log()
    t2 = p.alpha.reciprocal()
    t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
    result = t1 - t2 + t3 - 1
    return ember.where(p.alpha <= 1, _INF, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    common_term = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common_term
    t2 = ember.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common_term
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = t1 + t2 + t3 + t4 - 1
    return ember.where(p.alpha <= 1, _INF, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    var_normal = 2 * q.scale.pow(2)
    common_term = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t2 = p.alpha.reciprocal()
    t3 = p.alpha * common_term.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common_term - q.loc).pow(2)
    result = t1 - t2 + (t3 + t4) / var_normal - 1
    return ember.where(p.alpha <= 2, _INF, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    common_term = q.scale / (p.high - p.low)
    high_loc_diff = (p.high - q.loc) / q.scale
    low_loc_diff = (p.low - q.loc) / q.scale
    t1 = common_term.log() + 0.5 * (high_loc_diff + low_loc_diff)
    t2 = common_term * (ember.exp(-high_loc_diff) - ember.exp(-low_loc_diff))
    return t1 - t2


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    support_uniform = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * support_uniform).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - support_uniform) / support_uniform
    result = t2 * (q.alpha + 1) - t1
    return ember.where(p.low < q.support.lower_bound, _INF, result)
