"""ember: a PyTorch-compatible autograd library on NumPy. ``import ember as torch``."""

from __future__ import annotations

import warnings as _warnings

from . import _backend
from . import autograd  # before _tensor: autograd/__init__ imports it (no import cycle then)
from ._backend import device
from ._backend.dtypes import (
    get_default_dtype,
    promote_types,
    result_type as _result_type,
    set_default_dtype,
)
from ._backend.dtypes import (  # noqa: F401 - the torch dtype names
    bool_ as bool,
    float16,
    float16 as half,
    float32,
    float32 as float,
    float64,
    float64 as double,
    int8,
    int16,
    int16 as short,
    int32,
    int32 as int,
    int64,
    int64 as long,
    uint8,
)
from ._backend.dtypes import dtype
from ._legacy import CPU_TYPES as _CPU_TYPES
from ._tensor import Size, Tensor
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .ops import *  # noqa: F403
from .ops import (  # noqa: F401
    abs, absolute, add, all, allclose, amax, any, argmax, argmin, bitwise_and, bitwise_not,
    bitwise_or, bitwise_xor, bmm, broadcast_shapes, broadcast_tensors, broadcast_to, clamp,
    clamp_max, clamp_min, clip, clone, cos, div, divide, dot, eq, equal, exp, expand,
    flatten, floor_divide, ge, greater, greater_equal, gt, isclose, isfinite, isinf, isnan,
    le, less, less_equal, log, logical_and, logical_not, logical_or, logical_xor, lt, masked_fill,
    matmul, max, maximum, mean, min, minimum, mm, movedim, moveaxis, mul, multiply, mv, ne,
    neg, negative, nonzero, norm, not_equal, permute, pow, reciprocal, relu, reshape, rsub,
    sigmoid, sign, sin, sqrt, square, squeeze, sub, subtract, sum, swapaxes, swapdims, t,
    tanh, transpose, true_divide, unbind, unflatten, unsqueeze, where,
)
from .ops.creation import (  # noqa: F401
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace, logspace,
    ones, ones_like, rand, rand_like, randint, randint_like, randn, randn_like, randperm,
    scalar_tensor, tensor, zeros, zeros_like,
)
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from . import cuda

__version__ = "0.1.0"

# NumPy warns on floating-point edge cases (0 * inf, log(0)); torch never does. Silence those
# warnings where ember's own code triggers them only: no cost per op, users' NumPy untouched.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\.")

globals().update(_CPU_TYPES)  # FloatTensor, LongTensor, ...

float32.__class__  # keep the dtype names above from being flagged as unused


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


def set_printoptions(*args, **kwargs) -> None:
    from ._tensor_str import set_printoptions as _set
    _set(*args, **kwargs)


def __getattr__(name: str):
    # rarely used submodules load on first use, keeping ``import ember`` fast
    import importlib
    if name in ("nn", "optim", "utils", "testing", "linalg"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
