"""ember: a PyTorch-compatible autograd library on NumPy. ``import ember as torch``."""

from __future__ import annotations

import importlib
import warnings as _warnings

from . import _threads  # first: it sizes NumPy's BLAS pool before NumPy loads (see there)
from . import (
    _backend,
    autograd,  # before _tensor: autograd/__init__ imports it (no import cycle then)
    cuda,
)
from ._backend import device, get_default_device, set_default_device
from ._backend.dtypes import (
    bool_ as bool,
)
from ._backend.dtypes import (
    complex64,
    complex128,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from ._backend.dtypes import (
    complex64 as cfloat,
)
from ._backend.dtypes import (
    complex128 as cdouble,
)
from ._backend.dtypes import (
    float16 as half,
)
from ._backend.dtypes import (
    float32 as float,
)
from ._backend.dtypes import (
    float64 as double,
)
from ._backend.dtypes import (
    int16 as short,
)
from ._backend.dtypes import (
    int32 as int,
)
from ._backend.dtypes import (
    int64 as long,
)
from ._backend.dtypes import (
    result_type as _result_type,
)
from ._legacy import CPU_TYPES as _CPU_TYPES
from ._tensor import Size, Tensor
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .ops import *
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__version__ = "0.1.0"

# NumPy warns on floating-point edge cases (0 * inf, log(0)); torch never does. Silence those
# warnings where ember's own code triggers them only: no cost per op, users' NumPy untouched.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\.")

globals().update(_CPU_TYPES)  # FloatTensor, LongTensor, ...


def is_tensor(obj) -> bool:
    """``torch.is_tensor``."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    return input.numel()


def result_type(tensor1, tensor2) -> dtype:
    """``torch.result_type``: the dtype an op on these operands produces."""
    return _result_type(tensor1, tensor2)


def can_cast(from_, to) -> bool:
    if from_.is_floating_point and not to.is_floating_point:
        return False
    return not (from_ is not bool and to is bool)


def show_config() -> str:
    """Print and return ember's version, Python, NumPy and its BLAS/LAPACK, the devices and the
    optional packages installed (``torch.__config__.show()``'s role). Paste it into bug reports."""
    from ._config import show_config as _show_config  # lazy: platform probing, rarely used
    return _show_config()


def set_printoptions(*args, **kwargs) -> None:
    from ._tensor_str import set_printoptions as _set  # lazy: printing loads on first use
    _set(*args, **kwargs)


# torch's namespaces that a script touches, loaded on first use (keeps ``import ember`` light)
_SUBMODULES = frozenset((
    "nn", "optim", "utils", "testing", "linalg", "viz", "backends", "accelerator", "amp", "jit",
    "onnx", "hub", "multiprocessing", "profiler", "serialization", "compiler", "cpu",
    "distributed", "distributions", "special", "fft", "func", "_dynamo",
))

# top-level names defined in a lazily loaded module: name -> module
_LAZY_NAMES = {
    "save": ".serialization", "load": ".serialization", "save_safetensors": ".serialization",
    "load_safetensors": ".serialization",
    "alias_torch": "._alias",
    "set_num_threads": "._threads", "get_num_threads": "._threads",
    "set_num_interop_threads": "._threads", "get_num_interop_threads": "._threads",
    "compile": "._compile", "vmap": ".func",  # torch.vmap is torch.func.vmap
    "use_deterministic_algorithms": "._determinism",
    "are_deterministic_algorithms_enabled": "._determinism",
    "is_deterministic_algorithms_warn_only_enabled": "._determinism",
    "set_deterministic_debug_mode": "._determinism",
    "get_deterministic_debug_mode": "._determinism",
    "autocast": ".amp", "is_autocast_enabled": ".amp", "get_autocast_dtype": ".amp",
    "finfo": "._backend.dtypes", "iinfo": "._backend.dtypes", "bfloat16": "._backend.dtypes",
}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    module = _LAZY_NAMES.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
