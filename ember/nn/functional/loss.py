"""nn.functional: Loss functions: mse, l1, smooth_l1, huber, cross_entropy, nll, binary cross-entropy (with logits), kl_div, and the margin/embedding losses."""

from __future__ import annotations

__all__: list[str] = []
