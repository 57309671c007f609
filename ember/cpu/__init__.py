"""``torch.cpu``: the CPU device module (always available) and its deprecated ``amp``."""

from __future__ import annotations

import importlib
from contextlib import AbstractContextManager, nullcontext


def is_available() -> bool:
    """True, as torch: there is always a CPU."""
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    """No-op, as torch: there is one CPU device."""


def is_initialized() -> bool:
    return True


def synchronize(device=None) -> None:
    """No-op: CPU work is synchronous."""


def stream(stream=None) -> AbstractContextManager:
    """A no-op context, as torch's CPU streams are."""
    return nullcontext()


def __getattr__(name: str):
    if name == "amp":  # lazy: torch.cpu.amp is only its deprecated aliases
        return importlib.import_module(__name__ + ".amp")
    raise AttributeError(f"module 'ember.cpu' has no attribute '{name}'")
