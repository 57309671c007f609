"""``torch._dynamo.exc``: the errors of ``torch.compile``."""

from __future__ import annotations

from .._capture.errors import Unsupported

__all__ = ["Unsupported"]
