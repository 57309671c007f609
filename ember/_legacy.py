"""Torch's legacy tensor types: ``FloatTensor([1, 2])``, ``LongTensor(3)``, ``x.type(FloatTensor)``,
``isinstance(x, FloatTensor)``, and the ``cuda.FloatTensor`` names the tutorials refer to."""

from __future__ import annotations

from ._backend import dtypes as _dt
from ._tensor import Tensor


class _LegacyTensorMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and not cls.is_cuda

    def __call__(cls, *args, **kwargs):
        if cls.is_cuda:
            raise AssertionError("Torch not compiled with CUDA enabled: ember has no GPU "
                                 "backend yet (ember.cuda.is_available() is False)")
        if "dtype" in kwargs:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument 'dtype'")
        return Tensor.__new__(Tensor, *args, dtype=cls.dtype, **kwargs)

    def __repr__(cls) -> str:
        return f"<class '{cls.__module_name__}.{cls.__name__}'>"


def _make_types(module_name: str, is_cuda: bool) -> dict:
    types = {}
    for d in _dt.DTYPES:
        types[d._legacy] = _LegacyTensorMeta(
            d._legacy, (), {"dtype": d, "is_cuda": is_cuda, "__module_name__": module_name})
    return types


CPU_TYPES = _make_types("torch", False)
CUDA_TYPES = _make_types("torch.cuda", True)
