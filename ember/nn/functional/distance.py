"""nn.functional distances: cosine_similarity, pairwise_distance, pdist from
``ember.ops.distance``; normalize, a composite.
"""

from __future__ import annotations

from ..._tensor import Tensor
from ...ops._op import write_out
from ...ops.distance import cosine_similarity, pairwise_distance, pdist

__all__ = ["cosine_similarity", "normalize", "pairwise_distance", "pdist"]


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``F.normalize``: input / max(||input||_p over dim, eps)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    result = input / denom
    if out is not None:
        return write_out(out, result)
    return result
