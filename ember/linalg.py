"""``ember.linalg``: torch.linalg's functions (norms, solves and decompositions) with gradients."""

from __future__ import annotations

from .ops.reduction import linalg_vector_norm as vector_norm

__all__ = ["vector_norm"]
