"""``ember.backends.mkldnn``: oneDNN's switches. ember does not use oneDNN (NumPy computes),
so ``is_available()`` is False; the flags keep torch's defaults and checks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ._flags import Flag, FlagModule, allow_mutation, install, precision_flag

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2


def is_available() -> bool:
    """False: ember is not built on oneDNN (MKL-DNN)."""
    return False


def is_acl_available() -> bool:
    """False: no oneDNN, so no oneDNN + ACL."""
    return False


class verbose:
    """``torch.backends.mkldnn.verbose(level)``: a context manager that does nothing here, as
    there are no oneDNN kernels to log (torch would print oneDNN's verbose lines)."""

    def __init__(self, level: int) -> None:
        self.level = level

    def __enter__(self):
        return None if self.level == VERBOSE_OFF else self

    def __exit__(self, *exc_info) -> bool:
        return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none") -> tuple:
    """Set the given flags (None leaves one as is) and return the previous ones, as torch."""
    orig = (_module.enabled, _module.deterministic, _module.allow_tf32, _module.fp32_precision)
    for name, value in (("enabled", _enabled), ("deterministic", _deterministic),
                        ("allow_tf32", _allow_tf32), ("fp32_precision", _fp32_precision)):
        if value is not None:
            setattr(_module, name, value)
    return orig


@contextmanager
def flags(enabled: bool = False, deterministic: bool = False, allow_tf32: bool = True,
          fp32_precision: str = "none") -> Iterator[None]:
    """``torch.backends.mkldnn.flags``: set the flags for the block (arguments left out take
    their defaults, ``enabled=False`` included, as in torch), then restore them."""
    with allow_mutation():
        orig = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        with allow_mutation():
            set_flags(*orig)


class _MkldnnModule(FlagModule):
    enabled = Flag(True, "set_enabled_mkldnn")
    deterministic = Flag(False, "set_deterministic_mkldnn")
    # torch 2.13 reports None until it is set (its legacy and new TF32 settings disagree)
    allow_tf32 = Flag(None, "set_allow_tf32_onednn")
    fp32_precision = precision_flag()


_module = install(__name__, _MkldnnModule)
