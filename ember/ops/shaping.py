"""Shape and movement: repeat, repeat_interleave, tile, split, chunk, hstack/vstack, narrow, flip, roll, rot90, diagonal, trace, tril/triu, diag, diag_embed, meshgrid."""

from __future__ import annotations

__all__: list[str] = []  # exported as ember.<name>
METHODS: dict = {}  # Tensor method name -> function
INPLACE: tuple = ()  # method names that also get an in-place form name_
