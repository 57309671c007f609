"""nn.functional: Pooling: max/avg pool 1d/2d, adaptive pools."""

from __future__ import annotations

__all__: list[str] = []
