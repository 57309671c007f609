"""``ember.cuda``: present so CUDA-aware PyTorch code runs; ember has no GPU backend yet."""

from __future__ import annotations

import importlib

from .._legacy import CUDA_TYPES

globals().update(CUDA_TYPES)


def is_available() -> bool:
    """False: ember computes on the CPU only (for now)."""
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def _no_cuda(*args, **kwargs):
    raise AssertionError("Torch not compiled with CUDA enabled: ember has no GPU backend yet "
                         "(ember.cuda.is_available() is False)")


current_device = get_device_name = get_device_properties = set_device = _no_cuda


def manual_seed(seed: int) -> None:
    """No-op without a GPU, as in torch."""


def manual_seed_all(seed: int) -> None:
    """No-op without a GPU, as in torch."""


def synchronize(device=None) -> None:
    """No-op without a GPU."""


def empty_cache() -> None:
    """No-op without a GPU."""


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: there is no CUDA device."""
    return False


def __getattr__(name: str):
    if name == "amp":  # lazy: torch.cuda.amp is only its deprecated aliases
        return importlib.import_module(__name__ + ".amp")
    raise AttributeError(f"module 'ember.cuda' has no attribute '{name}'")
