"""Scans along a dim: cumsum, cumprod, cummax/cummin."""

from __future__ import annotations

__all__: list[str] = []  # exported as ember.<name>
METHODS: dict = {}  # Tensor method name -> function
INPLACE: tuple = ()  # method names that also get an in-place form name_
