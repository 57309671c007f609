"""``torch.distributions.constraint_registry``: from a constraint to a transform that maps
unconstrained reals onto it.

``biject_to(c)`` gives a bijection (for HMC-style samplers, whose log-densities need the
Jacobian); ``transform_to(c)`` gives any map onto the region (for optimizing a constrained
parameter through an unconstrained one), e.g.::

    unconstrained = torch.zeros(3, requires_grad=True)
    scale = transform_to(constraints.positive)(unconstrained)

Both are ``ConstraintRegistry`` objects: ``register(constraint_class, factory)`` adds a
constraint (class or singleton instance); a lookup of an unregistered constraint raises
``NotImplementedError`` as torch's does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

_NUMBER = (int, float, bool)


class ConstraintRegistry:
    """A registry of factories: constraint class -> (constraint -> Transform)."""

    def __init__(self) -> None:
        self._registry: dict[type, Callable] = {}
        super().__init__()

    def register(self, constraint: Any, factory: Callable | None = None) -> Any:
        """Register ``factory`` for a ``Constraint`` subclass (or a singleton instance's
        class); usable as a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                              constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> transforms.Transform:
        """The transform for ``constraint`` (looked up by its exact class)."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint: Any) -> transforms.Transform:
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: Any) -> transforms.Transform:
    return transforms.IndependentTransform(biject_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: Any) -> transforms.Transform:
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


@biject_to.register(constraints.positive)
@biject_to.register(constraints.nonnegative)
@transform_to.register(constraints.positive)
@transform_to.register(constraints.nonnegative)
def _transform_to_positive(constraint: Any) -> transforms.Transform:
    return transforms.ExpTransform()


@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint: Any) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint: Any) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint: Any) -> transforms.Transform:
    lower_is_0 = isinstance(constraint.lower_bound, _NUMBER) and constraint.lower_bound == 0
    upper_is_1 = isinstance(constraint.upper_bound, _NUMBER) and constraint.upper_bound == 1
    if lower_is_0 and upper_is_1:  # the unit interval
        return transforms.SigmoidTransform()
    loc = constraint.lower_bound
    scale = constraint.upper_bound - constraint.lower_bound
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(loc, scale)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: Any) -> transforms.Transform:
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: Any) -> transforms.Transform:
    return transforms.SoftmaxTransform()


# torch has no bijection onto lower Cholesky factors either
@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: Any) -> transforms.Transform:
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint: Any) -> transforms.Transform:
    return transforms.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint: Any) -> transforms.Transform:
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint: Any) -> transforms.Transform:
    return transforms.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim,
                                   constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint: Any) -> transforms.Transform:
    return transforms.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim,
                                   constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint: Any) -> transforms.Transform:
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint: Any) -> transforms.Transform:
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq],
                                     constraint.dim)
