"""torch's distributions that ember does not implement yet.

Each name exists (so ``isinstance`` checks, ``register_kl`` decorations and imports in ported
code keep working) as a ``Distribution`` subclass whose constructor raises
``NotImplementedError`` naming what to use instead. ``docs/distributions.md`` lists them.
"""

from __future__ import annotations

from typing import Any

from .distribution import Distribution

MISSING = (
    "Binomial", "ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "HalfCauchy",
    "InverseGamma", "Kumaraswamy", "LKJCholesky", "LogisticNormal",
    "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial", "NegativeBinomial",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "VonMises", "Weibull", "Wishart",
)


def _refuse(self: Distribution, *args: Any, **kwargs: Any) -> None:
    name = type(self).__name__
    raise NotImplementedError(
        f"torch.distributions.{name} is not implemented in ember yet. The implemented "
        "distributions are listed in docs/distributions.md; a TransformedDistribution of "
        "one of them, or a Distribution subclass of your own, can often stand in.")


def _missing_class(name: str) -> type:
    return type(name, (Distribution,), {
        "__init__": _refuse,
        "__doc__": f"``torch.distributions.{name}``: not implemented in ember yet (its "
                   "constructor raises NotImplementedError).",
        "__module__": __name__,
    })


globals().update({name: _missing_class(name) for name in MISSING})
