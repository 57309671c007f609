"""``torch.autocast`` / ``torch.amp.autocast``: regions where ops run in lower precision.

Inside an enabled CPU region, the ops on torch's CPU lower-precision list (mm, matmul, bmm,
addmm, baddbmm, addbmm, linear, the convolutions, prelu, scaled_dot_product_attention) cast
their floating inputs (but float64) to the autocast dtype, bfloat16 unless told otherwise; the
ops on torch's float32 list (the losses, ...) cast them to float32; other ops run on what they
get, promoting as usual. The casts are ordinary differentiable ``to`` calls, so gradients reach
float32 parameters as float32.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._backend import dtypes as _dt
from . import _state

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_SUPPORTED_DTYPES = (_dt.bfloat16, _dt.float16)


def _check_device(device_type: str) -> str:
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError("Expected one of " + ", ".join(_DEVICE_TYPES)
                           + f" device type at start of device string: {device_type}")
    if device_type not in _state.dtypes:
        raise RuntimeError("unsupported scalarType")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """``torch.amp.is_autocast_available``: whether autocast knows ``device_type``."""
    return device_type in _state.dtypes


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """``torch.is_autocast_enabled(device_type)``; with no argument torch answers for CUDA."""
    return _state.enabled.get(_check_device(device_type), False)


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """``torch.set_autocast_enabled(device_type, enabled)``."""
    _state.enabled[_check_device(device_type)] = bool(enabled)
    _state.active = _state.enabled.get("cpu", False)


def get_autocast_dtype(device_type: str) -> _dt.dtype:
    """``torch.get_autocast_dtype(device_type)``: bfloat16 for CPU, float16 for CUDA unless a
    region set another."""
    return _state.dtypes[_check_device(device_type)]


def set_autocast_dtype(device_type: str, dtype: _dt.dtype) -> None:
    """``torch.set_autocast_dtype(device_type, dtype)``."""
    _state.dtypes[_check_device(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _state.clear_cache()


def autocast_increment_nesting() -> int:
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    _state.nesting -= 1
    return _state.nesting


def _cuda_unavailable() -> bool:
    from .. import cuda  # lazy: ember.cuda is only asked when a CUDA region or scaler is made
    return not cuda.is_available()


class autocast:
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context
    manager and decorator, with torch's checks and warnings (CUDA regions disable themselves
    without a GPU; CPU regions accept bfloat16 and float16 only)."""

    def __init__(self, device_type: str, dtype: _dt.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        _check_device_arg(device_type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError("User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else cache_enabled
        if enabled:
            name = device_type.upper()
            if device_type == "cuda":
                if _cuda_unavailable():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in _SUPPORTED_DTYPES:
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              + ", ".join(map(str, _SUPPORTED_DTYPES)) + " currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = _state.cache_enabled
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        _state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, *exc: object) -> bool:
        if autocast_decrement_nesting() == 0:
            _state.clear_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        _state.cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cast(value: Any, device_type: str, dtype: _dt.dtype) -> Any:
    """``torch.amp.autocast_mode._cast``: floating tensors (not float64) in ``value``, walked
    through mappings and iterables, cast to ``dtype``."""
    from .._tensor import Tensor  # lazy: ember.amp is imported by the ops, before Tensor's users
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not _dt.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)) or hasattr(value, "__array_interface__"):
        return value
    if isinstance(value, Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, Iterable):
        items = (_cast(v, device_type, dtype) for v in value)
        return type(value)(items) if isinstance(value, (list, tuple)) else items
    return value


def _check_device_arg(device_type: Any) -> None:
    if not isinstance(device_type, str):
        raise ValueError(  # noqa: TRY004 (torch's type)
            f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd: Callable | None = None, *, device_type: str,
               cast_inputs: _dt.dtype | None = None) -> Callable:
    """``torch.amp.custom_fwd``: for a custom Function's ``forward``; with ``cast_inputs``, in
    an enabled region, casts floating tensor inputs and runs ``forward`` with autocast off."""
    _check_device_arg(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """``torch.amp.custom_bwd``: runs ``backward`` with the autocast state ``forward`` had."""
    _check_device_arg(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
