"""``torch.cpu.amp``: the deprecated CPU spellings of ``torch.amp``, with torch's
FutureWarnings."""

from __future__ import annotations

from .._backend import dtypes as _dt
from ..amp._deprecated import device_autocast, device_grad_scaler

__all__ = ["GradScaler", "autocast"]


autocast = device_autocast("cpu", _dt.bfloat16)
GradScaler = device_grad_scaler("cpu")
