"""nn.functional: pad, unfold/fold, interpolate."""

from __future__ import annotations

__all__: list[str] = []
