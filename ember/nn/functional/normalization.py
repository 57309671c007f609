"""nn.functional: batch_norm, layer_norm, group_norm, instance_norm, normalize."""

from __future__ import annotations

__all__: list[str] = []
