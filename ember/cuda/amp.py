"""``torch.cuda.amp``: the deprecated CUDA spellings of ``torch.amp``, with torch's
FutureWarnings. Without a GPU, autocast and GradScaler then warn again and disable themselves."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from .._backend import dtypes as _dt
from ..amp import autocast_mode as _am
from ..amp._deprecated import device_autocast, device_grad_scaler

__all__ = ["GradScaler", "amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd"]


def amp_definitely_not_available() -> bool:
    """True: ember has no CUDA backend."""
    return _am._cuda_unavailable()


autocast = device_autocast("cuda", _dt.float16)
GradScaler = device_grad_scaler("cuda")


def custom_fwd(fwd: Callable | None = None, *, cast_inputs: _dt.dtype | None = None):
    """Deprecated ``torch.amp.custom_fwd(..., device_type='cuda')``."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return functools.partial(_am.custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable):
    """Deprecated ``torch.amp.custom_bwd(..., device_type='cuda')``."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return functools.partial(_am.custom_bwd, device_type="cuda")(bwd)
