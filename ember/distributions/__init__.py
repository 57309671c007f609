"""``torch.distributions`` for ember: probability distributions over ember's ops, with
torch's API, shapes, constraints, validation messages, transforms and KL registry.

Sampling draws from ember's generators (``ember.manual_seed``, ``ember.Generator``), so the
numbers differ from torch's for the same seed; everything deterministic (``log_prob``,
``entropy``, ``cdf``, ``icdf``, moments, ``kl_divergence`` and their gradients) matches
torch. See ``docs/distributions.md``.
"""

from __future__ import annotations

from . import constraints, kl, transforms, utils
from ._missing import (
    Binomial,
    ContinuousBernoulli,
    FisherSnedecor,
    GeneralizedPareto,
    HalfCauchy,
    InverseGamma,
    Kumaraswamy,
    LKJCholesky,
    LogisticNormal,
    LowRankMultivariateNormal,
    MixtureSameFamily,
    Multinomial,
    NegativeBinomial,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
    VonMises,
    Weibull,
    Wishart,
)
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *
from .uniform import Uniform

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
    "CatTransform",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ComposeTransform",
    "ContinuousBernoulli",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "Dirichlet",
    "Distribution",
    "ExpTransform",
    "Exponential",
    "ExponentialFamily",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "IndependentTransform",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "LowerCholeskyTransform",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "StudentT",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "identity_transform",
    "kl_divergence",
    "register_kl",
    "transform_to",
]
