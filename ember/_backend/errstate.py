"""Floating-point error states for kernels: ``numpy.errstate`` for the flag sets the ops use,
at about half its cost.

A kernel that expects 0/0, log(0), inf * 0 or overflow (torch computes them quietly) runs
inside one of these, so NumPy neither warns nor, under a user's ``numpy.seterr(all="raise")``,
raises::

    with ignore_divide_invalid():
        return a / b

    @quietly(ignore_invalid_over)
    def raw_backward(self, grad): ...

NOTE: ``numpy.errstate`` costs ~0.9 µs to enter and leave (NumPy 2.4: a Python ``__init__``
over keyword arguments, then ``__enter__``), as much as the ufunc it guards on small tensors:
``x / y`` of 16 elements took 2.1 µs, against torch's 1.1. These classes hold their flags as
class data and enter with one ``_make_extobj`` call (which starts from the current state, as
``errstate`` does: a user's settings for the other errors stay) and one ``ContextVar.set``:
~0.45 µs. They rely on NumPy 2's private context variable; without it they are
``numpy.errstate`` itself.
"""

from __future__ import annotations

import functools

import numpy

try:  # NumPy 2: the error state is a context variable holding an opaque object
    from numpy._core.umath import _extobj_contextvar, _make_extobj
except ImportError:  # pragma: no cover - NumPy without them: numpy.errstate, as it is
    _extobj_contextvar = _make_extobj = None


def _ignoring(*kinds: str):
    """The context manager class that ignores NumPy's floating-point errors of ``kinds``: one
    instance a use (the token it holds belongs to that use, so nested and concurrent uses
    each have their own)."""
    flags = {kind: "ignore" for kind in kinds}
    if _extobj_contextvar is None:  # pragma: no cover
        return functools.partial(numpy.errstate, **flags)
    # (closures over C callables: no attribute lookups and no ``**`` unpacking per use)
    make, set_state, reset = (functools.partial(_make_extobj, **flags), _extobj_contextvar.set,
                              _extobj_contextvar.reset)

    def __enter__(self) -> None:
        self._token = set_state(make())

    def __exit__(self, *exc) -> None:
        reset(self._token)

    return type(f"ignore_{'_'.join(kinds)}", (), {"__slots__": ("_token",),
                                                   "__enter__": __enter__,
                                                   "__exit__": __exit__})


ignore_all = _ignoring("all")
ignore_divide = _ignoring("divide")
ignore_divide_invalid = _ignoring("divide", "invalid")
ignore_divide_over = _ignoring("divide", "over")
ignore_divide_invalid_over = _ignoring("divide", "invalid", "over")
ignore_invalid = _ignoring("invalid")
ignore_invalid_over = _ignoring("invalid", "over")
ignore_over = _ignoring("over")
ignore_under = _ignoring("under")


def quietly(state):
    """A decorator running the function inside ``state()`` (one of the classes above), as
    ``@numpy.errstate(...)`` does."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with state():
                return fn(*args, **kwargs)

        return wrapper

    return decorate
