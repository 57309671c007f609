"""Autocast state and the casts ops run under it (``at::autocast``'s role, in Python).

Ops on torch's CPU autocast lists start with one global test, ``if _state.active:``, so an
op pays a single attribute load while autocast is off. ``active`` is True only while CPU
autocast is enabled: ember's tensors live on the CPU, and CUDA autocast disables itself here
as torch's does without a GPU. Unlike torch's, the state is per process, not per thread.
"""

from __future__ import annotations

from .._backend import dtypes as _dt
from ..autograd.grad_mode import state as _grad_state

active = False  # CPU autocast is on: the flag the ops test
enabled: dict = {}  # device type -> bool, for is_autocast_enabled
dtypes: dict = {"cpu": _dt.bfloat16, "cuda": _dt.float16, "mps": _dt.float16,
                "xpu": _dt.bfloat16, "hpu": _dt.bfloat16}
cache_enabled = True
nesting = 0
# casts of leaf tensors that require grad (weights), reused for the rest of the outermost
# autocast region as torch's cast cache does: id -> (source, cast)
_cache: dict = {}


def _cast(t, dtype):
    """``t`` cast to ``dtype`` if autocast may cast it: a floating CPU tensor that is not
    float64 (torch's ``is_eligible``); anything else passes unchanged."""
    d = t.dtype
    if d is dtype or not d.is_floating_point or d is _dt.float64 or t.device.type != "cpu":
        return t
    # torch caches float32 weights' lower-precision casts; a cast made under no_grad has no
    # graph, so (unlike torch) it is not cached for later use with grad
    if (cache_enabled and d is _dt.float32 and dtype is not _dt.float32 and t.is_leaf
            and t.requires_grad and _grad_state.grad_mode):
        hit = _cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1].dtype is dtype:
            return hit[1]
        out = t.to(dtype)
        _cache[id(t)] = (t, out)
        return out
    return t.to(dtype)


def lower(*tensors):
    """Inputs of an op on the lower-precision list, cast to the autocast dtype (``None`` and
    non-tensors pass)."""
    dtype = dtypes["cpu"]
    return tuple(_cast(t, dtype) if hasattr(t, "_data") else t for t in tensors)


def fp32(*tensors):
    """Inputs of an op on the float32 list, cast to float32."""
    return tuple(_cast(t, _dt.float32) if hasattr(t, "_data") else t for t in tensors)


def clear_cache() -> None:
    _cache.clear()
