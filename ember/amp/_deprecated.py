"""The deprecated ``torch.cpu.amp`` / ``torch.cuda.amp`` spellings of ``autocast`` and
``GradScaler``: the ``torch.amp`` classes bound to one device, warning as torch does."""

from __future__ import annotations

import warnings

from .._backend import dtypes as _dt
from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def _warn(device: str, name: str) -> None:
    warnings.warn(f"`torch.{device}.amp.{name}(args...)` is deprecated. Please use "
                  f"`torch.amp.{name}('{device}', args...)` instead.", FutureWarning,
                  stacklevel=3)


def device_autocast(device: str, default_dtype: _dt.dtype) -> type:
    """``torch.<device>.amp.autocast(enabled=True, dtype=<default_dtype>,
    cache_enabled=True)``: a subclass of ``torch.amp.autocast``."""

    class autocast(_autocast):
        def __init__(self, enabled: bool = True, dtype: _dt.dtype = default_dtype,
                     cache_enabled: bool = True) -> None:
            _warn(device, "autocast")
            super().__init__(device, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    autocast.__module__, autocast.__qualname__ = f"ember.{device}.amp", "autocast"
    autocast.__doc__ = (f"``torch.{device}.amp.autocast(enabled=True, "
                        f"dtype={default_dtype!r}, cache_enabled=True)``: deprecated.")
    return autocast


def device_grad_scaler(device: str) -> type:
    """``torch.<device>.amp.GradScaler(...)``: ``torch.amp.GradScaler('<device>', ...)``."""

    class GradScaler(_GradScaler):
        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            _warn(device, "GradScaler")
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    GradScaler.__module__, GradScaler.__qualname__ = f"ember.{device}.amp", "GradScaler"
    GradScaler.__doc__ = f"``torch.{device}.amp.GradScaler(...)``: deprecated."
    return GradScaler
