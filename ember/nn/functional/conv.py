"""nn.functional: Convolutions: conv1d/2d/3d and conv_transpose1d/2d via im2col and one matmul."""

from __future__ import annotations

__all__: list[str] = []
