"""The backend seam: the only package of ember that imports NumPy.

Every other module gets its array module from here, in the manner of Chainer's and CuPy's
``get_array_module``:

* ``xp_of(*arrays)`` is the array module that computes on those arrays: ``numpy`` for NumPy
  arrays, the ``strict`` stand-in's module for its arrays (see ``strict.py``), CuPy later.
  Kernels call it on their inputs and use ``xp.exp``/``xp.zeros``/... so the same kernel runs
  on any backend. Array *methods* and operators (``a.sum()``, ``a * b``) need no ``xp``.
* ``host`` is NumPy itself, for host-side values only: dtype objects (``host.float32``),
  constants (``host.inf``), and small computations on Python data (shapes, index lists) that
  never meet a tensor's array. Data that meets a tensor's array must come from ``xp``.
* ``is_array(x)`` / ``ARRAY_TYPES``: the array types of every backend (use instead of
  ``isinstance(x, np.ndarray)``).
"""

from __future__ import annotations

import numpy

from .device import device
from .dtypes import (
    DTYPES,
    dtype,
    from_numpy_dtype,
    get_default_dtype,
    promote_types,
    result_type,
    set_default_dtype,
    to_dtype,
)

host = numpy
ndarray = numpy.ndarray
generic = numpy.generic

# Array types of every loaded backend -> (array module, device type). Backends add themselves.
ARRAY_TYPES: tuple = (numpy.ndarray,)
_MODULES: dict = {numpy.ndarray: numpy}


def register_array_type(array_type: type, module) -> None:
    """Make ``xp_of``/``is_array`` know a backend's array type (done by ``strict`` on import)."""
    global ARRAY_TYPES
    _MODULES[array_type] = module
    if array_type not in ARRAY_TYPES:
        ARRAY_TYPES = ARRAY_TYPES + (array_type,)


def xp_of(*arrays: object):
    """The array module that computes on ``arrays``: the first backend array's module.

    NumPy when none of them is a backend array (Python scalars, lists, NumPy scalars).
    """
    for a in arrays:
        m = _MODULES.get(type(a))
        if m is not None:
            return m
    return numpy


get_array_module = xp_of  # Chainer's and CuPy's name


def is_array(x: object) -> bool:
    """Whether ``x`` is an array of some backend (NumPy's ndarray or a device array)."""
    return type(x) in _MODULES or isinstance(x, ARRAY_TYPES)


__all__ = [
    "ARRAY_TYPES",
    "DTYPES",
    "device",
    "dtype",
    "from_numpy_dtype",
    "generic",
    "get_array_module",
    "get_default_dtype",
    "host",
    "is_array",
    "ndarray",
    "promote_types",
    "register_array_type",
    "result_type",
    "set_default_dtype",
    "to_dtype",
    "xp_of",
]
