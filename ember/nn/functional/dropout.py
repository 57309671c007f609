"""nn.functional: dropout and its variants (training flag)."""

from __future__ import annotations

__all__: list[str] = []
