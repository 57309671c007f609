"""Index-based ops: index_select, gather, scatter/scatter_add/scatter_reduce, index_add/index_copy/index_fill, masked_select/masked_scatter, take, take_along_dim."""

from __future__ import annotations

__all__: list[str] = []  # exported as ember.<name>
METHODS: dict = {}  # Tensor method name -> function
INPLACE: tuple = ()  # method names that also get an in-place form name_
