"""nn.functional: linear and bilinear."""

from __future__ import annotations

__all__: list[str] = []
