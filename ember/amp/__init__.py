"""``torch.amp``: automatic mixed precision (``autocast`` regions and ``GradScaler``).

ember's ops import ``_state`` to test one flag, so this package loads with ember; the
``GradScaler`` module loads on first use.
"""

from __future__ import annotations

from .autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]


def __getattr__(name: str):
    if name in ("GradScaler", "OptState"):
        from . import grad_scaler  # lazy: only training loops that scale losses need it
        return getattr(grad_scaler, name)
    raise AttributeError(f"module 'ember.amp' has no attribute '{name}'")
