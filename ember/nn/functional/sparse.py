"""nn.functional: embedding and one_hot."""

from __future__ import annotations

__all__: list[str] = []
