"""Tensor factories: tensor, as_tensor, from_numpy, zeros/ones/full/empty(+_like), eye,
arange, linspace, rand/randn/randint(+_like), with torch's dtype inference and arguments;
the ``Tensor.new_*`` methods; and ``to_device_copy``, the differentiable move between devices behind ``Tensor.to``.

Without ``device=`` a factory uses the default device (``set_default_device``); a ``*_like``
uses its input's. Values computed on the host (data, ranges, random draws) are copied over.
"""

from __future__ import annotations

import math
import warnings

from .._backend import (
    FLOAT_KINDS,
    device_of,
    host,
    is_array,
    module_for_device,
    ndarray,
    to_device_array,
)
from .._backend import dtypes as _dt
from .._backend.device import device as _device
from .._backend.device import to_device
from .._tensor import REQUIRES_GRAD_DTYPE_ERROR, Size, Tensor, _as_array, _make
from ..random import rng
from ._op import Op, apply1
from ._registry import register


def _finish(data: ndarray, requires_grad: bool, device=None) -> Tensor:
    """The new tensor: ``data`` on ``device`` (None: the default device), copied if elsewhere."""
    t = _make(to_device_array(data, to_device(device)))
    if requires_grad:
        if data.dtype.kind not in FLOAT_KINDS and data.dtype.kind != "c":
            raise RuntimeError(REQUIRES_GRAD_DTYPE_ERROR[0].upper() + REQUIRES_GRAD_DTYPE_ERROR[1:])
        t._requires_grad = True
    return t


def _size(size, op: str) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s.item())
        if not isinstance(s, (int, host.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): argument 'size' (position 1) must be tuple of ints, but "
                            f"found element of type {type(s).__name__} at pos {len(out)}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _float_dtype(dtype) -> host.dtype:
    return _dt.to_dtype(dtype).np if dtype is not None else _dt.get_default_dtype().np


@register(method=False)
def tensor(data, *, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """``torch.tensor``: copy ``data`` (Python floats become float32, ints int64)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
    arr = _as_array(data, _dt.to_dtype(dtype) if dtype is not None else None)
    return _finish(arr, requires_grad, device)


@register(method=False)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``torch.as_tensor``: share memory with a Tensor or ndarray when no conversion is needed."""
    dt = _dt.to_dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        data = data if dt is None else data.to(dt)
        return data if device is None else data.to(device)
    if is_array(data) and (dt is None or dt.np == data.dtype):
        _dt.from_numpy_dtype(data.dtype)
        return _finish(data, False, device)
    return _finish(_as_array(data, dt), False, device)


@register(method=False)
def from_numpy(ndarray: ndarray) -> Tensor:
    """``torch.from_numpy``: a CPU tensor sharing the array's memory (changes show in both)."""
    if not isinstance(ndarray, host.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dt.from_numpy_dtype(ndarray.dtype)
    return _make(ndarray)


def _filled(size, fill, dtype, device, requires_grad, op):
    shape = _size(size, op)
    xp = module_for_device(to_device(device))
    return _finish(xp.full(shape, fill, dtype=_float_dtype(dtype)), requires_grad, device)


@register(method=False)
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """``torch.zeros``."""
    return _filled(size, 0, dtype, device, requires_grad, "zeros")


@register(method=False)
def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """``torch.ones``."""
    return _filled(size, 1, dtype, device, requires_grad, "ones")


@register(method=False)
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None) -> Tensor:
    """``torch.empty``: uninitialised memory."""
    shape = _size(size, "empty")
    xp = module_for_device(to_device(device))
    return _finish(xp.empty(shape, dtype=_float_dtype(dtype)), requires_grad, device)


@register(method=False)
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False) -> Tensor:
    """``torch.full``: dtype inferred from ``fill_value`` (bool, int64 or the default float)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = _dt._scalar_dtype(fill_value)
    shape = _size((size,), "full")
    xp = module_for_device(to_device(device))
    return _finish(xp.full(shape, fill_value, dtype=_dt.to_dtype(dtype).np), requires_grad,
                   device)


def _like(input: Tensor, dtype, device, fill, requires_grad) -> Tensor:
    """A ``*_like`` tensor: the input's shape, and its dtype and device unless given."""
    dev = device_of(input._data) if device is None else to_device(device)
    dt = _dt.to_dtype(dtype).np if dtype is not None else input._data.dtype
    xp = module_for_device(dev)
    shape = input._data.shape
    data = xp.empty(shape, dtype=dt) if fill is None else xp.full(shape, fill, dtype=dt)
    return _finish(data, requires_grad, dev)


@register(method=False)
def zeros_like(input: Tensor, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    return _like(input, dtype, device, 0, requires_grad)


@register(method=False)
def ones_like(input: Tensor, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    return _like(input, dtype, device, 1, requires_grad)


@register(method=False)
def empty_like(input: Tensor, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    return _like(input, dtype, device, None, requires_grad)


@register(method=False)
def full_like(input: Tensor, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=None) -> Tensor:
    return _like(input, dtype, device, fill_value, requires_grad)


@register(method=False)
def eye(n: int, m: int | None = None, *, out=None, dtype=None, layout=None, device=None,
        requires_grad=False) -> Tensor:
    """``torch.eye``: an n x m identity matrix."""
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    xp = module_for_device(to_device(device))
    return _finish(xp.eye(n, n if m is None else m, dtype=_float_dtype(dtype)), requires_grad,
                   device)


@register(method=False)
def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """``torch.arange``: int64 for integer arguments, else the default float dtype."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dt = host.int64 if all(isinstance(v, int) for v in vals) else _dt.get_default_dtype().np
    else:
        dt = _dt.to_dtype(dtype).np
    n = max(math.ceil((end - start) / step), 0)
    data = (start + step * host.arange(n, dtype=host.float64)) if host.dtype(dt).kind in FLOAT_KINDS \
        else host.arange(start, end, step)
    return _finish(host.asarray(data).astype(dt), requires_grad, device)


@register(method=False)
def linspace(start, end, steps: int, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """``torch.linspace``, computed as torch does (symmetric halves in the output dtype)."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _float_dtype(dtype)
    if host.dtype(dt).kind not in FLOAT_KINDS:
        data = host.linspace(start, end, steps).astype(dt)
        return _finish(data, requires_grad, device)
    s, e = dt.type(start), dt.type(end)
    if steps == 1:
        return _finish(host.array([s], dtype=dt), requires_grad, device)
    step = (e - s) / dt.type(steps - 1)
    idx = host.arange(steps)
    half = steps // 2
    # NOTE: torch's kernel computes start + step*i (first half) and end - step*(n-1-i) (second
    # half) with fused multiply-adds; computing in float64 and rounding once emulates that.
    wide = host.float64 if dt != host.float64 else host.longdouble
    lo = wide(s) + wide(step) * idx[:half]
    hi = wide(e) - wide(step) * (steps - idx[half:] - 1)
    return _finish(host.concatenate([lo, hi]).astype(dt), requires_grad, device)


@register(method=False)
def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    lin = linspace(start, end, steps, dtype=dtype, device="cpu")
    return _finish(host.power(base, lin._data).astype(lin._data.dtype), requires_grad, device)


def _random_floats(kind: str, size, generator, dtype, device, requires_grad, op):
    shape = _size(size, op)
    dt = _float_dtype(dtype)
    if host.dtype(dt).kind == "c":
        # torch: real and imaginary parts drawn independently; randn's each with variance 1/2
        # (so E|z|^2 = 1), rand's each uniform on [0, 1)
        real_dt = host.float32 if dt == host.complex64 else host.float64
        gen = rng(generator)
        pairs = gen.standard_normal((*shape, 2), dtype=real_dt) * real_dt(0.5 ** 0.5) \
            if kind == "n" else gen.random((*shape, 2), dtype=real_dt)
        return _finish(pairs.view(dt)[..., 0], requires_grad, device)
    if host.dtype(dt).kind not in FLOAT_KINDS:
        raise RuntimeError(f"\"{'normal' if kind == 'n' else 'uniform'}_kernel_cpu\" not "
                           f"implemented for '{_dt.from_numpy_dtype(dt)._legacy[:-6]}'")
    gen = rng(generator)
    work = dt if dt in (host.float32, host.float64) else host.float32
    data = gen.standard_normal(shape, dtype=work) if kind == "n" else gen.random(shape,
                                                                                 dtype=work)
    return _finish(data.astype(dt, copy=False), requires_grad, device)


@register(method=False)
def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False) -> Tensor:
    """``torch.rand``: uniform on [0, 1)."""
    return _random_floats("u", size, generator, dtype, device, requires_grad, "rand")


@register(method=False)
def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False) -> Tensor:
    """``torch.randn``: standard normal."""
    return _random_floats("n", size, generator, dtype, device, requires_grad, "randn")


@register(method=False)
def randint(*args, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, size=None, low=None, high=None) -> Tensor:
    """``torch.randint(high, size)`` or ``torch.randint(low, high, size)``: int64 by default."""
    args = list(args)
    if high is not None:  # keyword form: randint(low=0, high=5, size=(3,))
        args = [0 if low is None else low, high] + args
    if size is None:
        if not args or not isinstance(args[-1], (tuple, list, Size)):
            raise TypeError("randint() missing required argument 'size'")
        size = args.pop()
    if len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    shape = _size((size,), "randint")
    dt = _dt.to_dtype(dtype).np if dtype is not None else host.int64
    data = rng(generator).integers(low, high, shape, dtype=host.int64).astype(dt)
    return _finish(data, requires_grad, device)


@register(method=False)
def rand_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    return rand(input._data.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
                device=input.device if device is None else device)


@register(method=False)
def randn_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    return randn(input._data.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
                 device=input.device if device is None else device)


@register(method=False)
def randint_like(input: Tensor, low=0, high=None, *, dtype=None, device=None,
                 requires_grad=False, memory_format=None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, input._data.shape, dtype=dtype or input.dtype,
                   device=input.device if device is None else device)


@register(method=False)
def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    dt = _dt.to_dtype(dtype).np if dtype is not None else host.int64
    return _finish(rng(generator).permutation(n).astype(dt), requires_grad, device)


@register(method=False)
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _finish(host.asarray(s, dtype=_float_dtype(dtype)), requires_grad, device)



# --------------------------------------------------------------------------- Tensor.new_*
# torch's defaults: ``self``'s dtype and device


@register(export=False)
def new_tensor(self: Tensor, data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``Tensor.new_tensor``: ``tensor(data)`` with ``self``'s dtype and device by default."""
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


@register(export=False)
def new_zeros(self: Tensor, *size, dtype=None, device=None, requires_grad=False,
              **kwargs) -> Tensor:
    """``Tensor.new_zeros``: ``zeros(size)`` with ``self``'s dtype and device by default."""
    return zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad, **kwargs)


@register(export=False)
def new_ones(self: Tensor, *size, dtype=None, device=None, requires_grad=False,
             **kwargs) -> Tensor:
    """``Tensor.new_ones``: ``ones(size)`` with ``self``'s dtype and device by default."""
    return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad, **kwargs)


@register(export=False)
def new_empty(self: Tensor, *size, dtype=None, device=None, requires_grad=False,
              **kwargs) -> Tensor:
    """``Tensor.new_empty``: ``empty(size)`` with ``self``'s dtype and device by default."""
    return empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad, **kwargs)


@register(export=False)
def new_full(self: Tensor, size, fill_value, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``Tensor.new_full``: ``full(size, fill_value)`` with ``self``'s dtype and device by
    default."""
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


class ToCopyBackward0(Op):  # (creation.py: a linear op, complex_ok by module)
    """``to(device)``: a copy onto another device; the gradient goes back to the input's."""

    __slots__ = ("_src",)

    def forward(self, a, dev: _device, np_dtype):
        self._src = device_of(a)
        out = to_device_array(a, dev)
        return out if np_dtype is None or out.dtype == np_dtype else out.astype(np_dtype)

    def backward(self, grad):
        return to_device_copy(grad, self._src)  # the engine casts back to the input's dtype


def to_device_copy(input: Tensor, dev: _device, dtype: _dt.dtype | None = None) -> Tensor:
    """``input.to(dev, dtype)`` to another device: an explicit copy, differentiable as torch's
    (``ToCopyBackward0``); the result requires grad only if floating."""
    out = apply1(ToCopyBackward0, input, dev, None if dtype is None else dtype.np)
    if out._grad_fn is not None and out._data.dtype.kind not in FLOAT_KINDS and \
            out._data.dtype.kind != "c":
        out._grad_fn = None
        out._requires_grad = False
    return out
