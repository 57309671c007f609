"""``ember.backends.mps``: Apple's Metal backend, which ember does not have."""

from __future__ import annotations


def is_built() -> bool:
    """False: ember is not built with MPS."""
    return False


def is_available() -> bool:
    """False: no MPS device (ember computes on the CPU)."""
    return False


def _no_mps(what: str):
    raise RuntimeError(f"Cannot execute {what} without MPS backend.")


def is_macos_or_newer(major: int, minor: int) -> bool:
    """Raises ``RuntimeError`` without MPS, as in torch."""
    _no_mps("isOnMacOSorNewer()")


def is_macos13_or_newer(minor: int = 0) -> bool:
    return is_macos_or_newer(13, minor)


def get_name() -> str:
    _no_mps("get_name()")


def get_core_count() -> int:
    _no_mps("get_core_count()")
