"""``ember.backends``: torch's backend switches, as a CPU-only torch build reports them.

ember computes with NumPy on the CPU, so ``cudnn``, ``cuda`` (``is_built``), ``mps``,
``mkldnn`` and ``openmp`` report unavailable; their flags exist with torch's defaults and
checks so that scripts which set them run unchanged. See docs/namespaces.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from . import cpu, cuda, cudnn, mha, mkldnn, mps, openmp, opt_einsum
from ._flags import (
    Flag,
    FlagModule,
    allow_mutation,
    disable_global_flags,
    flags_frozen,
    install,
    precision_flag,
)

__all__ = ["cpu", "cuda", "cudnn", "disable_global_flags", "flags", "flags_frozen", "mha",
           "mkldnn", "mps", "openmp", "opt_einsum"]


def set_flags(_fp32_precision: str | None = "none") -> tuple:
    orig = (_module.fp32_precision,)
    if _fp32_precision is not None:
        _module.fp32_precision = _fp32_precision
    return orig


@contextmanager
def flags(fp32_precision: str = "none") -> Iterator[None]:
    """``torch.backends.flags``: the generic ``fp32_precision`` for a block."""
    with allow_mutation():
        orig = set_flags(fp32_precision)
    try:
        yield
    finally:
        with allow_mutation():
            set_flags(*orig)


class _GenericModule(FlagModule):
    fp32_precision = precision_flag()


_module = install(__name__, _GenericModule)
del Flag, FlagModule, install, precision_flag
