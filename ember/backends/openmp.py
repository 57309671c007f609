"""``ember.backends.openmp``."""

from __future__ import annotations


def is_available() -> bool:
    """False: ember itself is not built with OpenMP (NumPy's BLAS keeps its own thread pool,
    which ``ember.set_num_threads`` sizes)."""
    return False
