"""Torch dtypes over NumPy dtypes, and torch's type-promotion rules.

Promotion follows ``torch.result_type``: operands fall into three tiers (tensors with
dimensions, zero-dim tensors, Python scalars) and a lower tier only matters when it is of a
higher *category* (bool < integer < floating < complex) than the tiers above it. A Python float
meeting an integer tensor gives the default dtype (float32), not NumPy's float64; a Python
complex gives the complex dtype paired with the default dtype (complex64 for float32), and a
complex operand of a lower tier meeting a floating tensor gives that tensor's complex pair
(float64 tensor + 1j -> complex128), as torch does. (torch's complex32 is not here: float16
pairs with complex64.)

``bfloat16`` is stored as ``ml_dtypes.bfloat16`` arrays (the optional extra ``ember[bfloat16]``).
ml_dtypes is imported the first time a bfloat16 array is made, not at ``import ember``; its
NumPy dtype has kind ``'V'``, so code that asks "is this floating?" of an array's dtype uses
``FLOAT_KINDS`` (no other ``'V'`` dtype ever reaches a tensor: ``from_numpy_dtype`` rejects them).
"""

from __future__ import annotations

import math

import numpy as np


class dtype:
    """A torch-style dtype: ``ember.float32`` prints as ``torch.float32``."""

    __slots__ = (
        "_category",
        "_legacy",
        "is_complex",
        "is_floating_point",
        "is_signed",
        "itemsize",
        "name",
        "np",
    )

    def __init__(self, name: str, np_dtype, category: int, legacy: str):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = self.np.kind in "ifc"
        self._category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self._legacy = legacy

    def __repr__(self) -> str:
        return "torch." + self.name

    def __reduce__(self):
        return (to_dtype, (self.name,))

    def to_real(self) -> dtype:
        """``torch.dtype.to_real``: complex64 -> float32, complex128 -> float64, else self."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """``torch.dtype.to_complex``: float32 (or lower) -> complex64, float64 -> complex128."""
        if self._category == 3:
            return self
        if self is float64:
            return complex128
        if self._category == 2:
            return complex64
        raise RuntimeError(f"to_complex is only supported for floating point types, got {self}")


class _LazyDtype(dtype):
    """A dtype whose NumPy dtype comes from an optional package, loaded on first use."""

    __slots__ = ()

    def __init__(self, name: str, itemsize: int, legacy: str):
        self.name = name
        self.itemsize = itemsize
        self.is_floating_point = True
        self.is_complex = False
        self.is_signed = True
        self._category = 2
        self._legacy = legacy

    @property
    def np(self) -> np.dtype:  # shadows the slot: the NumPy dtype is made on first access
        return _bfloat16_numpy()


bool_ = dtype("bool", np.bool_, 0, "BoolTensor")
uint8 = dtype("uint8", np.uint8, 1, "ByteTensor")
int8 = dtype("int8", np.int8, 1, "CharTensor")
int16 = dtype("int16", np.int16, 1, "ShortTensor")
int32 = dtype("int32", np.int32, 1, "IntTensor")
int64 = dtype("int64", np.int64, 1, "LongTensor")
float16 = dtype("float16", np.float16, 2, "HalfTensor")
float32 = dtype("float32", np.float32, 2, "FloatTensor")
float64 = dtype("float64", np.float64, 2, "DoubleTensor")
bfloat16 = _LazyDtype("bfloat16", 2, "BFloat16Tensor")
complex64 = dtype("complex64", np.complex64, 3, "ComplexFloatTensor")
complex128 = dtype("complex128", np.complex128, 3, "ComplexDoubleTensor")

DTYPES: tuple[dtype, ...] = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32,
                             float64, complex64, complex128)
_TO_REAL = {complex64: float32, complex128: float64}

# Array dtype kinds that are floating: ml_dtypes' bfloat16 has kind 'V' (see the module docstring)
FLOAT_KINDS = "fV"
# Array dtype kinds that can require gradients: floating and complex (torch's rule)
DIFF_KINDS = "fVc"

# torch's aliases: torch.float is float32, torch.long is int64, ...
ALIASES: dict[str, dtype] = {
    "bool": bool_, "uint8": uint8, "int8": int8, "int16": int16, "short": int16,
    "int32": int32, "int": int32, "int64": int64, "long": int64, "float16": float16,
    "half": float16, "float32": float32, "float": float32, "float64": float64,
    "double": float64, "bfloat16": bfloat16, "complex64": complex64, "cfloat": complex64,
    "complex128": complex128, "cdouble": complex128,
}

_FROM_NP: dict[np.dtype, dtype] = {d.np: d for d in DTYPES if d is not bfloat16}
_bfloat16_np: np.dtype | None = None
BFLOAT16_INSTALL_HINT = (
    "bfloat16 tensors need the ml_dtypes package, which is not installed: "
    "pip install ember[bfloat16] (or pip install ml_dtypes)")


def _bfloat16_numpy() -> np.dtype:
    """ml_dtypes' bfloat16 NumPy dtype, importing ml_dtypes the first time (keeps ``import ember``
    light and the core usable with NumPy alone)."""
    global _bfloat16_np
    if _bfloat16_np is None:
        try:
            import ml_dtypes
        except ImportError:
            raise ModuleNotFoundError(BFLOAT16_INSTALL_HINT) from None
        _bfloat16_np = np.dtype(ml_dtypes.bfloat16)
        _FROM_NP[_bfloat16_np] = bfloat16
    return _bfloat16_np

_default_float = float32


def from_numpy_dtype(np_dtype) -> dtype:
    """Map a NumPy dtype to ember's; raise TypeError for ones torch has no equivalent of."""
    try:
        return _FROM_NP[np_dtype]
    except KeyError:
        pass
    try:
        d = np.dtype(np_dtype)
        if d.name == "bfloat16" and d.kind == "V":  # an ml_dtypes array met before ember.bfloat16
            _bfloat16_numpy()
        return _FROM_NP[d]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types "
            "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
            "uint8, and bool."
        ) from None


def to_dtype(value) -> dtype:
    """Accept an ember dtype, a torch-style name ('float32'), a NumPy dtype or a Python type."""
    if isinstance(value, dtype):
        return value
    if value is float:
        return _default_float
    if value is int:
        return int64
    if value is bool:
        return bool_
    if value is complex:
        return _default_float.to_complex()
    if isinstance(value, str):
        name = value.removeprefix("torch.")
        if name in ALIASES:
            return ALIASES[name]
        for d in DTYPES:
            if name == d._legacy:
                return d
    dt = getattr(value, "dtype", None)  # e.g. a legacy tensor type such as ember.FloatTensor
    if isinstance(dt, dtype):
        return dt
    try:
        return from_numpy_dtype(np.dtype(value))
    except TypeError:
        raise TypeError(f"expected a dtype such as ember.float32, but got {value!r}") from None


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(d) -> None:
    """Set the default floating dtype, as ``torch.set_default_dtype`` does."""
    global _default_float
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def promote_types(a: dtype, b: dtype) -> dtype:
    """``torch.promote_types``: the smallest dtype both can be cast to safely."""
    if a is b:
        return a
    ca, cb = a._category, b._category
    if ca != cb and (ca < 2 or cb < 2):
        return a if ca > cb else b
    if ca == 2 and cb == 2:
        if a.itemsize == b.itemsize:  # float16 with bfloat16: neither holds the other
            return float32
        return a if a.itemsize > b.itemsize else b
    if ca != cb:  # a complex and a floating dtype: the complex one wide enough for both
        c, f = (a, b) if ca == 3 else (b, a)
        return complex128 if c is complex128 or f is float64 else complex64
    return _FROM_NP[np.promote_types(a.np, b.np)]


def _combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._category == 3:
        return higher
    if higher._category == 2:
        # torch: a complex operand of a lower tier still makes the result complex, at the
        # precision of the higher tier's floating dtype (float64 tensor + 1j -> complex128)
        return higher.to_complex() if lower._category == 3 else higher
    if higher is bool_ or lower._category >= 2:
        return promote_types(higher, lower)
    return higher


def _scalar_dtype(value) -> dtype:
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return _default_float
    if isinstance(value, complex):  # torch: the complex dtype paired with the default dtype
        return _default_float.to_complex()
    raise TypeError(f"expected a Tensor or a Python number, but got {type(value).__name__}")


def result_type(*operands) -> dtype:
    """``torch.result_type`` over tensors (anything with ``.dtype`` and ``.ndim``) and scalars."""
    dim = zero = wrapped = None
    for op in operands:
        d = getattr(op, "dtype", None)
        if isinstance(d, dtype):
            if op.ndim:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        else:
            d = _scalar_dtype(op)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine_categories(dim, _combine_categories(zero, wrapped))


# --------------------------------------------------------------------------- finfo / iinfo

def _dtype_arg(api: str, value) -> dtype:
    if value is float:  # torch maps the Python type to double
        return float64
    if value is int:
        return int64
    if not isinstance(value, dtype):
        raise TypeError(f"{api}(): argument 'type' (position 1) must be torch.dtype, "
                        f"not {type(value).__name__}")
    return value


class finfo:
    """``torch.finfo``: the numerical limits of a floating dtype (the default dtype if none),
    as Python floats; bfloat16's are computed here, so no ml_dtypes is needed."""

    __slots__ = ("bits", "dtype", "eps", "max", "min", "resolution", "smallest_normal", "tiny")

    def __init__(self, type: dtype | None = None) -> None:
        d = _default_float if type is None else _dtype_arg("finfo", type)
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        if d is bfloat16:  # 8 exponent bits like float32, 7 explicit mantissa bits
            eps, tiny, maximum, bits = 2.0 ** -7, 2.0 ** -126, (2 - 2.0 ** -7) * 2.0 ** 127, 16
            resolution = 10.0 ** -math.floor(-math.log10(eps))
        else:
            info = np.finfo(d.np)
            eps, tiny, maximum = float(info.eps), float(info.tiny), float(info.max)
            bits, resolution = info.bits, 10.0 ** -info.precision  # a Python float, as torch
        self.bits = bits
        self.eps = eps
        self.max = maximum
        self.min = -maximum
        self.tiny = self.smallest_normal = tiny
        self.resolution = resolution
        self.dtype = d.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    __hash__ = None  # torch.finfo is unhashable too

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """``torch.iinfo``: the limits of an integer dtype, as Python ints."""

    __slots__ = ("bits", "dtype", "max", "min")

    def __init__(self, type: dtype) -> None:
        d = _dtype_arg("iinfo", type)
        if d is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d._category != 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(d.np)
        self.bits = info.bits
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = d.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    __hash__ = None

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
