"""The backend seam: the only package of ember that imports NumPy.

Every other module gets its array module from here, in the manner of Chainer's and CuPy's
``get_array_module``:

* ``xp_of(*arrays)`` is the array module that computes on those arrays: ``numpy`` for NumPy
  arrays, the ``strict`` stand-in's module for its arrays (see ``strict.py``), CuPy later.
  Kernels call it on their inputs and use ``xp.exp``/``xp.zeros``/... so the same kernel runs
  on any backend. Array *methods* and operators (``a.sum()``, ``a * b``) need no ``xp``.
* ``host`` is NumPy itself, for host-side values only: dtype objects (``host.float32``),
  constants (``host.inf``), and small computations on Python data (shapes, index lists) that
  never meet a tensor's array. Data that meets a tensor's array must come from ``xp``.
* ``is_array(x)`` / ``ARRAY_TYPES``: the array types of every backend (use instead of
  ``isinstance(x, np.ndarray)``).
* Devices: ``device_of(array)`` (a Tensor's device is its array's), ``module_for_device(dev)``
  (the ``xp`` that creates arrays there), ``to_device_array(array, dev)`` (an explicit copy
  when the device changes) and ``to_host(array)`` (a NumPy array, copied off a device).
"""

from __future__ import annotations

import numpy

from .device import CPU, device, get_default_device, set_default_device, to_device
from .dtypes import (
    DIFF_KINDS,
    DTYPES,
    FLOAT_KINDS,
    dtype,
    from_numpy_dtype,
    get_default_dtype,
    promote_types,
    result_type,
    set_default_dtype,
    to_dtype,
)
from .memory import keep_freed_memory

keep_freed_memory()  # see memory.py: freed arrays stay in the heap for the next step

host = numpy
ndarray = numpy.ndarray
generic = numpy.generic
# NumPy's ndarray and its subclasses that compute on the host like it (the traced arrays of
# ``ember.compile``'s capture, added by ``trace.py``): what host-only fast paths accept
HOST_ARRAYS: set = {ndarray}

# Array types of every loaded backend -> array module, and -> device. Backends add themselves.
ARRAY_TYPES: tuple = (numpy.ndarray,)
_MODULES: dict = {numpy.ndarray: numpy}
_DEVICES: dict = {numpy.ndarray: CPU}


def register_array_type(array_type: type, module, dev: device = CPU) -> None:
    """Make ``xp_of``/``is_array``/``device_of`` know a backend's array type (done by
    ``strict`` on import)."""
    global ARRAY_TYPES
    _MODULES[array_type] = module
    _DEVICES[array_type] = dev
    if array_type not in ARRAY_TYPES:
        ARRAY_TYPES = ARRAY_TYPES + (array_type,)


def xp_of(*arrays: object):
    """The array module that computes on ``arrays``: the first backend array's module.

    NumPy when none of them is a backend array (Python scalars, lists, NumPy scalars).
    """
    for a in arrays:
        m = _MODULES.get(type(a))
        if m is not None:
            return m
    return numpy


get_array_module = xp_of  # Chainer's and CuPy's name


def as_array(x: object):
    """``x`` as an array: backend arrays pass as they are; NumPy scalars (which NumPy returns
    for 0-d results) and Python values become host arrays."""
    t = type(x)
    if t in _MODULES:
        return x
    hook = AS_ARRAY_HOOKS.get(t)
    if hook is not None:
        return hook(x)
    if isinstance(x, ARRAY_TYPES):
        return x
    return numpy.asarray(x)


# (value, dtype) -> a shared read-only 0-d host array (``weak_scalar``)
_SCALAR_ARRAYS: dict = {}


def weak_scalar(value, dtype):
    """A Python float or int ``value`` as a shared, read-only 0-d host array of the floating
    ``dtype``: what NumPy 2 computes with in place of the Python number (NEP 50 casts a weak
    Python scalar to the array's dtype first), the same bits, in about half the time: a ufunc
    call on 16 float32 elements with a Python scalar operand costs ~570 ns, with a 0-d array
    ~290. Zero (whose sign a cache key would lose), nan, values beyond the dtype's range, and
    other dtypes give ``value`` back."""
    key = (value, dtype)
    a = _SCALAR_ARRAYS.get(key)
    if a is not None:
        return a
    if not value or dtype.kind != "f" or not abs(value) <= float(numpy.finfo(dtype).max):
        return value  # (nan and inf fail the comparison too)
    if len(_SCALAR_ARRAYS) >= 1024:
        _SCALAR_ARRAYS.clear()
    a = numpy.array(value, dtype)
    a.flags.writeable = False
    _SCALAR_ARRAYS[key] = a
    return a


_F32 = numpy.dtype(numpy.float32)
_F64 = numpy.dtype(numpy.float64)
# ``matrix_product``'s swapped form: (most rows, least inner size) it was faster for
_SWAPPED = ((48, 64), (96, 256), (128, 512))


def matrix_product(a, b):
    """``a @ b`` for two matrices, the same products and sums, with two shapes NumPy's
    OpenBLAS is slow at computed another way (NOTE: single-threaded figures, float32):

    * an outer product (inner size 1: a weight's gradient at batch 1) as a product of
      vectors: (512, 1) @ (1, 784) took 460 µs as a GEMM, 70 µs so;
    * a product of 8 to 128 rows by a transposed matrix (``x @ weight.T``: F.linear's) as
      ``(w @ x.T).T`` copied C-ordered: (8, 1024) @ (1024, 1024).T took 780 µs, against 355
      this way (torch's linear: 374); (32, 784) by (512, 784).T 435 against 307, (128, 784)
      by (512, 784).T 1146 against 1078. The copy is M x N elements against the M x N x K
      multiply-adds, so the gain needs K to grow with M (``_SWAPPED``); fewer rows, more, or
      fewer than 256 columns were no faster, and float64's GEMM showed no such gap."""
    if type(a) is ndarray and type(b) is ndarray and a.ndim == 2 and b.ndim == 2:
        m, k = a.shape
        n = b.shape[1]
        if k == 1:
            if m * n >= 4096 and a.dtype is b.dtype and (a.dtype is _F32 or a.dtype is _F64):
                return numpy.einsum("i,j->ij", a[:, 0], b[0])
        elif 8 <= m <= 128 and n >= 256 and k >= 64 and a.dtype is _F32 and \
                b.dtype is _F32 and a.strides == (4 * k, 4) and b.strides == (4, 4 * k):
            for rows, inner in _SWAPPED:
                if m <= rows:
                    if k >= inner:
                        return numpy.matmul(b.T, a.T).T.copy()
                    break
    return a @ b


# ``expand_array``: results of at most this many elements are written out
_WRITE_OUT_MAX = 16384


def expand_array(a, shape: tuple):
    """``a`` broadcast to ``shape`` (a reduction's gradient expanded back over its input), the
    same values as ``broadcast_to``. NOTE: NumPy's ``broadcast_to`` is a Python function of
    ~2.4 µs whatever the size; a small result is cheaper written out (``empty`` + ``copyto``:
    0.7 µs at 640 float32 elements, 1.8 at 16,384, 5.2 at 65,536), and is then a contiguous,
    writable array that the next rule computes on faster and that ``AccumulateGrad`` can take
    as a leaf's ``.grad`` without copying it. A larger result stays a read-only view."""
    n = 1
    for s in shape:
        n *= s
    xp = xp_of(a)
    if n > _WRITE_OUT_MAX:
        return xp.broadcast_to(a, shape)
    out = xp.empty(shape, dtype=a.dtype)
    xp.copyto(out, a)
    return out


# array type -> what ``as_array`` makes of one (the traced arrays of ``ember.compile``: one
# standing for a NumPy scalar becomes the 0-d array eager code gets here; see trace.py)
AS_ARRAY_HOOKS: dict = {}


def is_array(x: object) -> bool:
    """Whether ``x`` is an array of some backend (NumPy's ndarray or a device array)."""
    return type(x) in _MODULES or isinstance(x, ARRAY_TYPES)


def device_of(array: object) -> device:
    """The device an array lives on (a NumPy array, or anything not a device array: cpu)."""
    return _DEVICES.get(type(array), CPU)


def module_for_device(dev: device):
    """The array module that creates arrays on ``dev`` (a resolved device, see ``to_device``)."""
    if dev.type == "cpu":
        return numpy
    from . import strict  # lazy: ``import ember`` does not pay for the strict backend
    return strict.module


def to_device_array(array, dev: device):
    """``array`` on ``dev``: itself if already there, else an explicit copy (via the host)."""
    if _DEVICES.get(type(array), CPU) == dev:
        return array
    if dev.type == "cpu":
        return array.get()
    return module_for_device(dev).asarray(to_host(array))


def to_host(array) -> numpy.ndarray:
    """A NumPy array: ``array`` itself if it is one, else a host copy (``cupy``'s ``.get()``)."""
    return array if isinstance(array, numpy.ndarray) else array.get()


def data_ptr(array) -> int:
    """The address of an array's first element (CuPy's ``array.data.ptr``)."""
    if isinstance(array, numpy.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr


__all__ = [
    "ARRAY_TYPES",
    "CPU",
    "DIFF_KINDS",
    "DTYPES",
    "FLOAT_KINDS",
    "as_array",
    "data_ptr",
    "device",
    "device_of",
    "dtype",
    "from_numpy_dtype",
    "generic",
    "get_array_module",
    "get_default_device",
    "get_default_dtype",
    "host",
    "is_array",
    "matrix_product",
    "module_for_device",
    "ndarray",
    "promote_types",
    "register_array_type",
    "result_type",
    "set_default_device",
    "set_default_dtype",
    "to_device",
    "to_device_array",
    "to_dtype",
    "to_host",
    "weak_scalar",
    "xp_of",
]
