"""``ember.accelerator``: torch's device-generic accelerator API on a machine without one.

ember computes on the CPU (CPU is not an accelerator in torch's sense), so this answers as
torch 2.13 does with no GPU: ``is_available()`` is False, ``current_accelerator()`` is None,
``device_count()`` is 0, and everything that needs a device raises torch's ``RuntimeError``.
``device_index(None)`` is the one context manager that works (it switches nothing).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Graph", "current_accelerator", "current_device_idx", "current_device_index", "current_stream",
    "device_count", "device_index", "empty_cache", "empty_host_cache", "get_device_capability",
    "get_memory_info", "is_available", "max_memory_allocated", "max_memory_reserved",
    "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
    "reset_peak_memory_stats", "set_device_idx", "set_device_index", "set_stream", "synchronize",
]


def _no_accelerator() -> RuntimeError:
    return RuntimeError("Cannot access accelerator device when none is available.")


def is_available() -> bool:
    """False: no accelerator (``torch.accelerator.is_available`` without a GPU)."""
    return False


def device_count() -> int:
    """0 accelerator devices."""
    return 0


def current_accelerator(check_available: bool = False):
    """None: there is no accelerator, available or not."""


def current_device_index() -> int:
    raise _no_accelerator()


def set_device_index(device, /) -> None:
    raise _no_accelerator()


def current_device_idx() -> int:
    """Deprecated alias of ``current_device_index`` (``FutureWarning``, as in torch)."""
    _warn_renamed("current_device_index")
    return current_device_index()


def set_device_idx(device, /) -> None:
    """Deprecated alias of ``set_device_index`` (``FutureWarning``, as in torch)."""
    _warn_renamed("set_device_index")
    set_device_index(device)


def _warn_renamed(new: str) -> None:
    import warnings
    warnings.warn(f"Use `{new}` instead.", FutureWarning, stacklevel=3)


def current_stream(device=None, /):
    raise _no_accelerator()


def set_stream(stream) -> None:
    raise _no_accelerator()


def synchronize(device=None, /) -> None:
    raise _no_accelerator()


def get_device_capability(device=None, /) -> dict[str, Any]:
    raise _no_accelerator()


def empty_cache() -> None:
    raise _no_accelerator()


def empty_host_cache() -> None:
    raise _no_accelerator()


def get_memory_info(device_index=None, /) -> tuple[int, int]:
    raise _no_accelerator()


def memory_stats(device_index=None, /) -> dict[str, Any]:
    raise _no_accelerator()


def memory_allocated(device_index=None, /) -> int:
    raise _no_accelerator()


def max_memory_allocated(device_index=None, /) -> int:
    raise _no_accelerator()


def memory_reserved(device_index=None, /) -> int:
    raise _no_accelerator()


def max_memory_reserved(device_index=None, /) -> int:
    raise _no_accelerator()


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    raise _no_accelerator()


def reset_peak_memory_stats(device_index=None, /) -> None:
    raise _no_accelerator()


class device_index:
    """``with torch.accelerator.device_index(i):``: with ``None`` it switches nothing; any
    index raises on entry, as torch does without an accelerator."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device

    def __enter__(self) -> None:
        if self.idx is not None:
            raise _no_accelerator()

    def __exit__(self, *exc_info: object) -> None:
        return None


class Graph:
    """Accelerator graph capture: needs an accelerator, so constructing one raises."""

    def __init__(self, keep_graph: bool = False, *, pool=None,
                 capture_error_mode: str = "default") -> None:
        raise _no_accelerator()
