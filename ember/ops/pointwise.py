"""Pointwise math beyond the core: exp2/expm1/log2/log10/log1p, inverse and hyperbolic trigonometry, erf family, rounding, remainder/fmod, lerp/addcmul/addcdiv, hypot, logaddexp, nan_to_num, ..."""

from __future__ import annotations

__all__: list[str] = []  # exported as ember.<name>
METHODS: dict = {}  # Tensor method name -> function
INPLACE: tuple = ()  # method names that also get an in-place form name_
