"""Statistical reductions: prod, std/var (correction), var_mean/std_mean, logsumexp, count_nonzero, nansum/nanmean."""

from __future__ import annotations

__all__: list[str] = []  # exported as ember.<name>
METHODS: dict = {}  # Tensor method name -> function
INPLACE: tuple = ()  # method names that also get an in-place form name_
