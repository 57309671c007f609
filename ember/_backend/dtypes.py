"""Torch dtypes over NumPy dtypes, and torch's type-promotion rules.

Promotion follows ``torch.result_type``: operands fall into three tiers (tensors with
dimensions, zero-dim tensors, Python scalars) and a lower tier only matters when it is of a
higher *category* (bool < integer < floating) than the tiers above it. A Python float meeting
an integer tensor gives the default dtype (float32), not NumPy's float64.
"""

from __future__ import annotations

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
        return self

    def to_complex(self) -> dtype:
        raise NotImplementedError("complex dtypes are not supported by ember yet")


bool_ = dtype("bool", np.bool_, 0, "BoolTensor")
uint8 = dtype("uint8", np.uint8, 1, "ByteTensor")
int8 = dtype("int8", np.int8, 1, "CharTensor")
int16 = dtype("int16", np.int16, 1, "ShortTensor")
int32 = dtype("int32", np.int32, 1, "IntTensor")
int64 = dtype("int64", np.int64, 1, "LongTensor")
float16 = dtype("float16", np.float16, 2, "HalfTensor")
float32 = dtype("float32", np.float32, 2, "FloatTensor")
float64 = dtype("float64", np.float64, 2, "DoubleTensor")

DTYPES: tuple[dtype, ...] = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)

# torch's aliases: torch.float is float32, torch.long is int64, ...
ALIASES: dict[str, dtype] = {
    "bool": bool_, "uint8": uint8, "int8": int8, "int16": int16, "short": int16,
    "int32": int32, "int": int32, "int64": int64, "long": int64, "float16": float16,
    "half": float16, "float32": float32, "float": float32, "float64": float64,
    "double": float64,
}

_FROM_NP: dict[np.dtype, dtype] = {d.np: d for d in DTYPES}

_default_float = float32


def from_numpy_dtype(np_dtype) -> dtype:
    """Map a NumPy dtype to ember's; raise TypeError for ones torch has no equivalent of."""
    try:
        return _FROM_NP[np_dtype]
    except KeyError:
        pass
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types "
            "are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
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
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        return a if a.itemsize >= b.itemsize else b
    return _FROM_NP[np.promote_types(a.np, b.np)]


def _combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._category >= 2:
        return higher
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
    if isinstance(value, complex):
        raise NotImplementedError("complex scalars are not supported by ember yet")
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
