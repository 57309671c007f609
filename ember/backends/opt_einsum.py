"""``ember.backends.opt_einsum``: whether the ``opt_einsum`` package is installed, and the
``enabled``/``strategy`` flags with torch's defaults (``enabled`` is ``is_available()``,
``strategy`` is ``'auto'`` when it is, else None). ember's einsum does not consult them."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from ._flags import allow_mutation


@lru_cache
def is_available() -> bool:
    """Whether ``opt_einsum`` is installed (looked up, not imported)."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum() -> Any:
    """The ``opt_einsum`` package if it is installed, else None."""
    return importlib.import_module("opt_einsum") if is_available() else None


# plain attributes: torch 2.13 does not check bare assignment to these two either
enabled = is_available()
strategy = "auto" if is_available() else None


def _set_enabled(_enabled: bool) -> None:
    global enabled
    if not is_available() and _enabled:
        raise ValueError(
            f"opt_einsum is not available, so setting `enabled` to {_enabled} will not reap "
            "the benefits of calculating an optimal path for einsum. torch.einsum will "
            "fall back to contracting from left to right. To enable this optimal path "
            "calculation, please install opt-einsum.")
    enabled = _enabled


def _set_strategy(_strategy: str) -> None:
    global strategy
    if not is_available():
        raise ValueError(
            f"opt_einsum is not available, so setting `strategy` to {_strategy} will not be "
            "meaningful. torch.einsum will bypass path calculation and simply contract from "
            "left to right. Please install opt_einsum or unset `strategy`.")
    if not enabled:
        raise ValueError(
            f"opt_einsum is not enabled, so setting a `strategy` to {_strategy} will not be "
            "meaningful. torch.einsum will bypass path calculation and simply contract from "
            "left to right. Please set `enabled` to `True` as well or unset `strategy`.")
    if _strategy not in ("auto", "greedy", "optimal"):
        raise ValueError("`strategy` must be one of the following: [auto, greedy, optimal] "
                         f"but is {_strategy}")
    strategy = _strategy


def set_flags(_enabled=None, _strategy=None) -> tuple:
    """Set the given flags (checked as torch does) and return the previous ones."""
    orig = (enabled, strategy if is_available() else None)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return orig


@contextmanager
def flags(enabled: bool | None = None, strategy: str | None = None) -> Iterator[None]:
    """``torch.backends.opt_einsum.flags``: set the flags for a block, then restore them."""
    with allow_mutation():
        orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        with allow_mutation():
            set_flags(*orig)
