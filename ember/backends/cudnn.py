"""``ember.backends.cudnn``: cuDNN's switches, as a torch build without cuDNN reports them.

ember computes on the CPU with NumPy, so cuDNN is never available and its kernels are never
chosen. The flags still exist, with torch's defaults and checks, because training scripts set
them (``cudnn.benchmark = True``, ``cudnn.deterministic = True``) before anything else.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ._flags import Flag, FlagModule, allow_mutation, install, precision_flag

# torch has no cuDNN: no benchmark limit either (torch keeps it None, and unchecked)
benchmark_limit = None


def is_available() -> bool:
    """False: ember has no cuDNN (``torch.backends.cudnn.is_available()`` without it)."""
    return False


def version() -> int | None:
    """None, as torch returns without cuDNN."""
    return None


def is_acceptable(tensor) -> bool:
    """False: cuDNN never takes a tensor here (torch: only enabled, CUDA, float tensors)."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None, _fp32_precision="none", _depthwise_kernel=None) -> tuple:
    """Set the given flags (None leaves one as is) and return the previous ones, as torch."""
    orig = (_module.enabled, _module.benchmark, None, _module.deterministic,
            _module.allow_tf32, _module.fp32_precision, _module.depthwise_kernel)
    for name, value in (("enabled", _enabled), ("benchmark", _benchmark),
                        ("deterministic", _deterministic), ("allow_tf32", _allow_tf32),
                        ("fp32_precision", _fp32_precision),
                        ("depthwise_kernel", _depthwise_kernel)):
        if value is not None:
            setattr(_module, name, value)
    return orig


@contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True, fp32_precision: str = "none",
          depthwise_kernel: str = "auto") -> Iterator[None]:
    """``torch.backends.cudnn.flags``: set all the flags for the block, then restore them.

    As in torch, an argument left out takes its default here (``enabled=False``), not the
    current value."""
    with allow_mutation():
        orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
                         fp32_precision, depthwise_kernel)
    try:
        yield
    finally:
        with allow_mutation():
            set_flags(*orig)


class _CudnnModule(FlagModule):
    enabled = Flag(True, "set_enabled_cudnn")
    benchmark = Flag(False, "set_benchmark_cudnn")
    deterministic = Flag(False, "set_deterministic_cudnn")
    allow_tf32 = Flag(True, "set_allow_tf32_cublas")  # torch's message names cublas too
    fp32_precision = precision_flag()
    depthwise_kernel = Flag("auto", choices=("auto", "cudnn", "native"),
                            unknown="Unknown cuDNN depthwise kernel mode: {value}. "
                                    "Expected one of: auto, cudnn, native")


_module = install(__name__, _CudnnModule)
