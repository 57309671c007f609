"""``ember.backends.cuda``: the CUDA switches, as a torch build without CUDA reports them.

ember has no CUDA backend: ``is_built()`` is False. The cuBLAS (``matmul``) and attention
(``*_sdp``) flags keep torch's defaults and checks so that scripts setting them run; ember's
CPU kernels do not read them (float32 matmuls are always computed in float32).
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from ._flags import FP32_PRECISIONS, bool_check


def is_built() -> bool:
    """False: ember is not built with CUDA (``torch.backends.cuda.is_built()``)."""
    return False


class cuBLASModule:
    """``torch.backends.cuda.matmul``: ``allow_tf32``, ``allow_fp16_reduced_precision_reduction``
    and friends, with torch's defaults; unknown names raise ``AttributeError`` as in torch."""

    _defaults: ClassVar[dict[str, bool | str]] = {
        "allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
        "allow_fp16_reduced_precision_reduction_split_k": True,
        "allow_bf16_reduced_precision_reduction": True,
        "allow_bf16_reduced_precision_reduction_split_k": True,
        "allow_fp16_accumulation": False, "fp32_precision": "none"}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._defaults))

    @staticmethod
    def _parse_reduction_setting(value: Any, attr_name: str) -> tuple[bool, bool]:
        """A bool, or (allow_reduced_precision[, allow_splitk]), checked as torch does."""
        def ensure_bool(obj: Any, which: str) -> bool:
            if isinstance(obj, bool):
                return obj
            raise TypeError(f"{attr_name} expects a bool for {which}, but got {type(obj)!r}")

        if isinstance(value, bool):
            return value, True
        if isinstance(value, (list, tuple)):
            if not value:
                raise TypeError(f"{attr_name} expects at least one boolean argument")
            if len(value) > 2:
                raise TypeError(f"{attr_name} expects at most two boolean arguments")
            allow = ensure_bool(value[0], "allow_reduced_precision")
            return allow, ensure_bool(value[1], "allow_splitk") if len(value) == 2 else True
        raise TypeError(f"{attr_name} expects a bool or a tuple/list of bools, but got "
                        f"{type(value)!r}")

    def __getattr__(self, name: str):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError("Unknown attribute " + name) from None

    def __setattr__(self, name: str, value) -> None:
        values = self._values
        if name in ("allow_tf32", "allow_fp16_accumulation"):
            values[name] = bool_check(f"set_{name}_cublas", value)
        elif name in ("allow_fp16_reduced_precision_reduction",
                      "allow_bf16_reduced_precision_reduction"):
            allow, splitk = self._parse_reduction_setting(value, name)
            if allow and not splitk:
                raise RuntimeError("allow_splitk=False is not supported when reduced "
                                   "precision reductions are enabled")
            values[name], values[name + "_split_k"] = allow, splitk
        elif name == "fp32_precision":
            if value not in FP32_PRECISIONS:
                raise RuntimeError(f"Unknown precision: {value}")
            values[name] = value
        else:
            raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()


class cuFFTPlanCacheManager:
    """``torch.backends.cuda.cufft_plan_cache``: every use needs a CUDA device, so every use
    raises torch's ``AssertionError`` (``Torch not compiled with CUDA enabled``)."""

    def __getitem__(self, device):
        raise AssertionError("Torch not compiled with CUDA enabled")

    def __getattr__(self, name: str):
        return self[None]


cufft_plan_cache = cuFFTPlanCacheManager()


class _LinalgBackend(enum.Enum):
    Default = 0
    Cusolver = 1
    Magma = 2


class _BlasBackend(enum.Enum):
    Default = 0
    Cublas = 1
    Cublaslt = 2
    Ck = 3


_LinalgBackends = {"default": _LinalgBackend.Default, "cusolver": _LinalgBackend.Cusolver,
                   "magma": _LinalgBackend.Magma}
_BlasBackends = {"default": _BlasBackend.Default, "cublas": _BlasBackend.Cublas,
                 "hipblas": _BlasBackend.Cublas, "cublaslt": _BlasBackend.Cublaslt,
                 "hipblaslt": _BlasBackend.Cublaslt, "ck": _BlasBackend.Ck}
# torch's initial values on a CPU build
_preferred = {"linalg": _LinalgBackend.Default, "blas": _BlasBackend.Cublas}


def _prefer(kind: str, table: dict, enum_type: type, backend) -> Any:
    if backend is None:
        pass
    elif isinstance(backend, str):
        if backend not in table:
            raise RuntimeError(f"Unknown input value. Choose from: {', '.join(table)}.")
        _preferred[kind] = table[backend]
    elif isinstance(backend, enum_type):
        _preferred[kind] = backend
    else:
        raise RuntimeError("Unknown input value type.")
    return _preferred[kind]


def preferred_linalg_library(backend: str | _LinalgBackend | None = None) -> _LinalgBackend:
    """``torch.backends.cuda.preferred_linalg_library``: record (and return) the preference;
    ember's linear algebra is NumPy's LAPACK either way."""
    return _prefer("linalg", _LinalgBackends, _LinalgBackend, backend)


def preferred_blas_library(backend: str | _BlasBackend | None = None) -> _BlasBackend:
    """``torch.backends.cuda.preferred_blas_library``: record (and return) the preference."""
    return _prefer("blas", _BlasBackends, _BlasBackend, backend)


# scaled-dot-product-attention kernels: all enabled by default, as in torch
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
        "fp16_bf16_reduction_math": False}


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool_check("set_sdp_use_flash", enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool_check("set_sdp_use_mem_efficient", enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool_check("set_sdp_use_math", enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool_check("set_sdp_use_cudnn", enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    return _sdp["fp16_bf16_reduction_math"]


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    _sdp["fp16_bf16_reduction_math"] = bool_check(
        "set_math_sdp_allow_fp16_bf16_reduction", enabled)


def is_flash_attention_available() -> bool:
    """False: FlashAttention needs CUDA."""
    return False


def is_ck_sdpa_available() -> bool:
    """False: composable_kernel needs ROCm."""
    return False


def can_use_flash_attention(params, debug: bool = False) -> bool:
    return False


def can_use_efficient_attention(params, debug: bool = False) -> bool:
    return False


def can_use_cudnn_attention(params, debug: bool = False) -> bool:
    return False


@contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[None]:
    """Deprecated in torch (``FutureWarning``): set the four attention flags for a block."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    previous = dict(_sdp)
    enable_flash_sdp(enable_flash)
    enable_math_sdp(enable_math)
    enable_mem_efficient_sdp(enable_mem_efficient)
    enable_cudnn_sdp(enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(previous)
