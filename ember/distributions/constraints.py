"""``torch.distributions.constraints``: the regions a parameter or a sample must lie in.

A constraint's ``check(value)`` returns a bool tensor of ``sample_shape + batch_shape`` (the
``event_dim`` rightmost dims reduced); ``event_dim`` and ``is_discrete`` describe it. The names
and reprs are torch's (``GreaterThan(lower_bound=0.0)``, ``Simplex()``, ...), so validation
errors read the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember

from .._tensor import Tensor
from .utils import _fmt

__all__ = [
    "Constraint",
    "MixtureSameFamilyConstraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]


class Constraint:
    """Base of the constraints: ``check(value)`` says which events of ``value`` satisfy it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for parameters whose support depends on other parameters: it cannot be
    checked (``check`` raises), and ``is_discrete``/``event_dim`` are known only if given."""

    def __init__(self, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> _Dependent:
        """``constraints.dependent(is_discrete=True, event_dim=1)``."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a dependent one (validation skips those)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """``@constraints.dependent_property``: a property on instances (the support computed from
    the parameters), a dependent constraint on the class."""

    def __init__(self, fn: Callable[..., Any] | None = None, *,
                 is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:  # type: ignore[override]
        """``@constraints.dependent_property(is_discrete=True, event_dim=1)``."""
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` over events that take ``reinterpreted_batch_ndims`` more rightmost
    dims: an event is valid when all its entries are."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(  # noqa: TRY004 (torch's exception)
                f"base_constraint must be a Constraint, got {type(base_constraint).__name__}")
        if not isinstance(reinterpreted_batch_ndims, int):
            raise AssertionError(  # noqa: TRY004 (torch's exception)
                "reinterpreted_batch_ndims must be an int, got "
                f"{type(reinterpreted_batch_ndims).__name__}")
        if reinterpreted_batch_ndims < 0:
            raise AssertionError("reinterpreted_batch_ndims must be >= 0, got "
                                 f"{reinterpreted_batch_ndims}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        keep = result.dim() - self.reinterpreted_batch_ndims
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return (f"{type(self).__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class MixtureSameFamilyConstraint(Constraint):
    """The constraint of a mixture's samples: the component constraint with the mixture's
    rightmost batch dim added back before checking."""

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(  # noqa: TRY004 (torch's exception)
                f"base_constraint must be a Constraint, got {type(base_constraint).__name__}")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_constraint!r})"


class _Boolean(Constraint):
    """The two values {0, 1}."""

    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors."""

    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & value.sum(-1).eq(1)


class _IntegerInterval(Constraint):
    """Integers in ``[lower_bound, upper_bound]``."""

    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (f"{type(self).__name__[1:]}(lower_bound={_fmt(self.lower_bound)}, "
                f"upper_bound={_fmt(self.upper_bound)})")


class _IntegerLessThan(Constraint):
    """Integers in ``(-inf, upper_bound]``."""

    is_discrete = True

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{type(self).__name__[1:]}(upper_bound={_fmt(self.upper_bound)})"


class _IntegerGreaterThan(Constraint):
    """Integers in ``[lower_bound, inf)``."""

    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"{type(self).__name__[1:]}(lower_bound={_fmt(self.lower_bound)})"


class _Real(Constraint):
    """The extended real line ``[-inf, inf]`` (NaN is outside)."""

    def check(self, value: Tensor) -> Tensor:
        return value == value  # noqa: PLR0124 (NaN is unequal to itself)


class _GreaterThan(Constraint):
    """The half line ``(lower_bound, inf]``."""

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"{type(self).__name__[1:]}(lower_bound={_fmt(self.lower_bound)})"


class _GreaterThanEq(Constraint):
    """The half line ``[lower_bound, inf)``."""

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return f"{type(self).__name__[1:]}(lower_bound={_fmt(self.lower_bound)})"


class _LessThan(Constraint):
    """The half line ``[-inf, upper_bound)``."""

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{type(self).__name__[1:]}(upper_bound={_fmt(self.upper_bound)})"


class _Interval(Constraint):
    """The closed interval ``[lower_bound, upper_bound]``."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (f"{type(self).__name__[1:]}(lower_bound={_fmt(self.lower_bound)}, "
                f"upper_bound={_fmt(self.upper_bound)})")


class _HalfOpenInterval(Constraint):
    """The interval ``[lower_bound, upper_bound)``."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return (f"{type(self).__name__[1:]}(lower_bound={_fmt(self.lower_bound)}, "
                f"upper_bound={_fmt(self.upper_bound)})")


class _Simplex(Constraint):
    """The unit simplex over the last dim: ``x >= 0`` and ``x.sum(-1) == 1`` (to 1e-6)."""

    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return ember.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative integer counts summing to at most ``upper_bound`` (torch checks this weaker
    condition too)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, x: Tensor) -> Tensor:
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


def _is_lower_triangular(value: Tensor) -> Tensor:
    return (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _is_lower_triangular(value)


class _LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return _is_lower_triangular(value) & positive_diagonal


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: rows of unit length."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        tol = ember.finfo(value.dtype).eps * value.size(-1) * 10  # torch's fudge factor
        row_norm = ember.linalg.vector_norm(value.detach(), dim=-1)
        unit_row_norm = (row_norm - 1.0).abs().le(tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_row_norm


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return ember.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                          dtype=ember.bool, device=value.device)


class _Symmetric(_Square):
    """Symmetric square matrices (to ``atol=1e-6``)."""

    def check(self, value: Tensor) -> Tensor:
        square_check = super().check(value)
        if not square_check.all():
            return square_check
        return ember.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric matrices with nonnegative eigenvalues."""

    def check(self, value: Tensor) -> Tensor:
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return ember.linalg.eigvalsh(value).ge(0).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric matrices with positive eigenvalues (torch asks whether a Cholesky
    factorization succeeds; ember, whether the smallest eigenvalue is positive)."""

    def check(self, value: Tensor) -> Tensor:
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return ember.linalg.eigvalsh(value).gt(0).all(-1)


class _Cat(Constraint):
    """The constraints ``cseq`` applied to consecutive slices of ``lengths`` along ``dim``,
    as ``torch.cat`` joins them."""

    def __init__(self, cseq, dim: int = 0, lengths=None) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        if lengths is None:
            lengths = [1] * len(self.cseq)
        self.lengths = list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq "
                                 f"({len(self.cseq)})")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        if not -value.dim() <= self.dim < value.dim():
            raise AssertionError(f"dim {self.dim} out of range for value with {value.dim()} "
                                 "dimensions")
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start = start + length
        return ember.cat(checks, self.dim)


class _Stack(Constraint):
    """The constraints ``cseq`` applied to the slices along ``dim``, as ``torch.stack``
    joins them."""

    def __init__(self, cseq, dim: int = 0) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value: Tensor) -> Tensor:
        if not -value.dim() <= self.dim < value.dim():
            raise AssertionError(f"dim {self.dim} out of range for value with {value.dim()} "
                                 "dimensions")
        slices = value.unbind(self.dim)
        return ember.stack([c.check(v) for v, c in zip(slices, self.cseq)], self.dim)


# the public interface: instances for the fixed regions, classes for the parametrised ones
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
