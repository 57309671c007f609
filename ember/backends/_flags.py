"""Typed flag attributes for ``ember.backends.<name>`` modules, as torch's ``ContextProp``.

torch checks each flag in its C++ setter (``torch.backends.cudnn.enabled = 1`` raises
``RuntimeError: set_enabled_cudnn expects a bool, but got int``) and refuses bare assignment
after ``torch.backends.disable_global_flags()``. A module opts in by switching its class to
a ``FlagModule`` subclass that declares its flags; the values live in the module's globals
under ``_<name>``, so the module's own functions read them as plain globals.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager

# torch.backends.disable_global_flags(): bare assignment refused, flags() still allowed
_state = {"frozen": False}


def disable_global_flags() -> None:
    """``torch.backends.disable_global_flags``: refuse ``flag = value`` outside ``flags()``."""
    _state["frozen"] = True


def flags_frozen() -> bool:
    """``torch.backends.flags_frozen``."""
    return _state["frozen"]


@contextmanager
def allow_mutation() -> Iterator[None]:
    """What the ``flags()`` context managers set their flags under."""
    old = _state["frozen"]
    _state["frozen"] = False
    try:
        yield
    finally:
        _state["frozen"] = old


class Flag:
    """A module attribute checked on assignment: a bool (``setter`` names torch's C++ setter,
    for its error message) or one of ``choices`` (``unknown`` formats the error)."""

    def __init__(self, default, setter: str = "", choices: tuple[str, ...] = (),
                 unknown: str = "") -> None:
        self.default, self.setter, self.choices, self.unknown = default, setter, choices, unknown

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = "_" + name

    def __get__(self, module, owner=None):
        if module is None:
            return self
        return module.__dict__.get(self.key, self.default)

    def __set__(self, module, value) -> None:
        if flags_frozen():
            raise RuntimeError(f"not allowed to set {module.__name__} flags after "
                               "disable_global_flags; please use flags() context manager "
                               "instead")
        module.__dict__[self.key] = self.check(value)

    def check(self, value):
        if self.choices:
            if value not in self.choices:
                raise RuntimeError(self.unknown.format(value=value))
        elif not isinstance(value, bool):
            bool_check(self.setter, value)
        return value


class FlagModule(types.ModuleType):
    """Base for modules with ``Flag`` attributes (see the module docstring)."""


def install(module_name: str, cls: type[FlagModule]) -> FlagModule:
    """Give the module ``module_name`` the flag class ``cls``; returns the module."""
    module = sys.modules[module_name]
    module.__class__ = cls
    return module


# fp32_precision: torch's newer TF32 API; ember computes in the dtype asked for, so the value
# is recorded only
FP32_PRECISIONS = ("none", "ieee", "tf32", "bf16")


def precision_flag() -> Flag:
    return Flag("none", choices=FP32_PRECISIONS, unknown="Unknown precision: {value}")


def bool_check(name: str, value) -> bool:
    """torch's check for the ``enable_*`` functions' bool argument."""
    if not isinstance(value, bool):
        raise RuntimeError(  # noqa: TRY004 - torch raises RuntimeError here
            f"{name} expects a bool, but got {type(value).__name__}")
    return value
