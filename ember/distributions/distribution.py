"""``torch.distributions.Distribution``: the base class, with torch's shapes, argument and
sample validation (same ``ValueError`` messages) and ``set_default_validate_args``."""

from __future__ import annotations

import warnings
from typing import Any

import ember

from .._tensor import Size, Tensor
from . import constraints
from .utils import _NUMBER, _fmt, _size, broadcast_all, lazy_property

__all__ = ["Distribution"]


def _param_repr(value: Any) -> str:
    """A parameter as torch's ``Distribution.__repr__`` prints it: the value of a one-element
    tensor (a 0-d one formats as its number, as torch's ``Tensor.__format__`` does), the
    size of a bigger one."""
    return repr(value.size()) if value.numel() != 1 else _fmt(value)


class Distribution:
    """The abstract base of probability distributions (``torch.distributions.Distribution``).

    Args:
        batch_shape: the shape over which parameters are batched.
        event_shape: the shape of a single sample (without batching).
        validate_args: check the parameters (now) and the values scored (later) against their
            constraints; None takes the class default (``set_default_validate_args``), which
            is on unless Python runs with ``-O``, as in torch.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn validation on or off for distributions created without ``validate_args``."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: tuple = Size(), event_shape: tuple = Size(),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # not constructed (e.g. probs of a logits-parametrised one)
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n"
                        f"{_fmt(value)}")
        super().__init__()

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Distribution:
        """A new distribution with its parameters expanded (not copied) to ``batch_shape``;
        arguments are not validated again."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """The constraint each tensor argument must satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint | None:
        """The constraint the distribution's values satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        """A ``sample_shape``-shaped batch of samples, not differentiable."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        """A ``sample_shape``-shaped batch of reparameterized samples: differentiable with
        respect to the parameters (where ``has_rsample``)."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """Deprecated in torch: ``sample((n,))``."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """All values of a discrete distribution along dim 0: ``(cardinality,) + batch_shape +
        event_shape`` (batch dims of size 1 unless ``expand``)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, of shape ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy)``."""
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape: tuple = Size()) -> Size:
        """``sample_shape + batch_shape + event_shape``."""
        return Size(tuple(sample_shape) + self._batch_shape + self._event_shape)

    def _validate_sample(self, value: Tensor) -> None:
        """Check a value to score: a Tensor whose rightmost dims match ``event_shape``, that
        broadcasts with ``batch_shape``, and lies in the support (torch's messages)."""
        if not isinstance(value, Tensor):
            raise ValueError(  # noqa: TRY004 (torch's exception)
                "The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = Size(self._batch_shape + self._event_shape)
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if support is None:
            raise AssertionError("support is unexpectedly None")
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{_fmt(value)}")

    def _set_params(self, validate_args: bool | None, **params) -> None:
        """Store ``params`` broadcast against each other (``broadcast_all``) and take their
        shape as the batch shape: empty when every one is a Python number, as torch's
        location-scale families do."""
        values = broadcast_all(*params.values())
        for name, value in zip(params, values):
            setattr(self, name, value)
        numbers = all(isinstance(p, _NUMBER) for p in params.values())
        Distribution.__init__(self, Size() if numbers else values[0].size(),
                              validate_args=validate_args)

    def _expand_params(self, cls: type, batch_shape: tuple, _instance, *names: str) -> Any:
        """``expand`` for a distribution whose state is the parameters ``names``: a new
        instance (of ``cls``) with each of them expanded to ``batch_shape``."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = _size(batch_shape)
        for name in names:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {_param_repr(self.__dict__[p])}" for p in param_names)
        return f"{self.__class__.__name__}({args})"
