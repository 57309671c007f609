"""The only place ember chooses its array library.

Everything array-related (dtypes, promotion, devices) goes through this package, so a
GPU backend later plugs in here (``get_array_module`` in the manner of Chainer/CuPy).
"""

from __future__ import annotations

import numpy as np

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

xp = np


def get_array_module(*arrays: object):
    """Return the array module (numpy today; cupy once a GPU backend exists)."""
    return np


__all__ = [
    "DTYPES",
    "device",
    "dtype",
    "from_numpy_dtype",
    "get_array_module",
    "get_default_dtype",
    "np",
    "promote_types",
    "result_type",
    "set_default_dtype",
    "to_dtype",
    "xp",
]
