"""nn.functional: cosine_similarity and pairwise_distance."""

from __future__ import annotations

__all__: list[str] = []
