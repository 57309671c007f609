"""``ember.jit``: TorchScript's API, as torch behaves with TorchScript disabled.

ember has no TorchScript compiler. Its ``script`` and ``trace`` do what torch does under
``PYTORCH_JIT=0``: they return the function or module itself, which then runs eagerly, with
the same results (and the same gradients) as before; there is no graph, so a traced function
keeps its data-dependent control flow. The decorators (``ignore``, ``unused``, ``export``,
``interface``, ``script_method``) return what they decorate. Serialising TorchScript
(``save``, ``load``, ``ScriptModule.save``) raises ``NotImplementedError``: save the weights
with ``ember.save(model.state_dict(), path)``.
"""

from __future__ import annotations

import collections.abc
import contextlib
import types
import typing
import warnings
from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar

from .nn.modules.module import Module

__all__ = ["Attribute", "CompilationUnit", "Error", "Final", "Future", "ScriptFunction",
           "ScriptModule", "annotate", "enable_onednn_fusion", "export", "export_opnames",
           "fork", "freeze", "ignore", "interface", "is_scripting", "is_tracing", "isinstance",
           "load", "onednn_fusion_enabled", "optimize_for_inference", "save", "script",
           "script_if_tracing", "script_method", "set_fusion_strategy", "strict_fusion",
           "trace", "trace_module", "unused", "wait"]

_T = TypeVar("_T")
_builtin_isinstance = isinstance


def _deprecated(name: str, instead: str = "switch to `torch.compile` or `torch.export`") -> None:
    """torch 2.13 deprecates TorchScript: the same ``DeprecationWarning``, in its words."""
    warnings.warn(f"`torch.jit.{name}` is deprecated. Please {instead}.", DeprecationWarning,
                  stacklevel=3)


def _no_torchscript(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: TorchScript is not supported by ember (ember.jit.script and ember.jit.trace "
        "return the eager function or module). To keep a model, save its weights with "
        "ember.save(model.state_dict(), path) and rebuild it with load_state_dict.")


class Error(RuntimeError):
    """``torch.jit.Error``: what a TorchScript ``raise`` becomes (never raised by ember)."""


def script(obj: _T, optimize=None, _frames_up: int = 0, _rcb=None,
           example_inputs=None) -> _T:
    """Return ``obj`` itself, as ``torch.jit.script`` does under ``PYTORCH_JIT=0``: a module
    or function that runs eagerly, with identical results."""
    return obj


def trace(func: _T, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs: bool = True) -> _T:
    """Return ``func`` itself, as ``torch.jit.trace`` does under ``PYTORCH_JIT=0``. Unlike a
    real trace, Python control flow still follows the data at each call."""
    _deprecated("trace")
    return func


def trace_module(mod: _T, inputs, optimize=None, check_trace: bool = True, check_inputs=None,
                 check_tolerance: float = 1e-5, strict: bool = True,
                 _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg: bool = False, _store_inputs: bool = True) -> _T:
    """Return ``mod`` itself (``torch.jit.trace_module`` under ``PYTORCH_JIT=0``)."""
    _deprecated("trace_module")
    return mod


def script_if_tracing(fn: _T) -> _T:
    return fn


def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore`` and ``@torch.jit.ignore(drop=True)``: the function, unchanged."""
    if callable(drop):  # used bare: @ignore
        return drop
    return lambda fn: fn


def unused(fn: _T) -> _T:
    return fn


def export(fn: _T) -> _T:
    return fn


def interface(obj: _T) -> _T:
    return obj


def script_method(fn: _T) -> _T:
    _deprecated("script_method")
    return fn


def is_scripting() -> bool:
    """False: code always runs eagerly in ember."""
    return False


def is_tracing() -> bool:
    """False: ember never traces."""
    return False


def annotate(the_type, the_value):
    """``torch.jit.annotate``: the value (the type is for the TorchScript compiler)."""
    return the_value


def Attribute(value, type):  # torch's name and signature
    """``torch.jit.Attribute(value, type)``: the value, as in torch with TorchScript off."""
    return value


class ScriptModule(Module):
    """The TorchScript module base, as torch defines it with TorchScript off: an ordinary
    ``nn.Module``, so ``class M(torch.jit.ScriptModule)`` with ``@script_method`` works."""

    def save(self, f, **kwargs) -> None:
        raise _no_torchscript("ScriptModule.save")


RecursiveScriptModule = ScriptModule


class ScriptFunction:
    """The type of a scripted function. ember never makes one (``script`` returns the
    function), so ``isinstance(f, ember.jit.ScriptFunction)`` is False."""

    def __init__(self, *args, **kwargs) -> None:
        raise _no_torchscript("ember.jit.ScriptFunction")


class CompilationUnit:
    def __init__(self, lang: str | None = None, _frames_up: int = 0) -> None:
        raise _no_torchscript("ember.jit.CompilationUnit")


def save(m, f, _extra_files=None) -> None:
    raise _no_torchscript("ember.jit.save")


def load(f, map_location=None, _extra_files=None, _restore_shapes: bool = False):
    raise _no_torchscript("ember.jit.load")


def export_opnames(m) -> list[str]:
    raise _no_torchscript("ember.jit.export_opnames")


def freeze(mod: _T, preserved_attrs: list[str] | None = None,
           optimize_numerics: bool = True) -> _T:
    """``torch.jit.freeze``: the module itself (nothing to inline eagerly); like torch, only
    for a module in eval mode."""
    _deprecated("freeze", "use `torch.compile` instead")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


def optimize_for_inference(mod: _T, other_methods: list[str] | None = None) -> _T:
    """``torch.jit.optimize_for_inference``: puts the module in eval mode and returns it."""
    return mod.eval()


_fusion_strategy: list[tuple[str, int]] = [("STATIC", 2), ("DYNAMIC", 10)]
_onednn_fusion = {"enabled": False}


def set_fusion_strategy(strategy: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Record the fusion strategy; returns the previous one, as torch."""
    global _fusion_strategy
    previous, _fusion_strategy = _fusion_strategy, list(strategy)
    return previous


def enable_onednn_fusion(enabled: bool) -> None:
    _onednn_fusion["enabled"] = enabled


def onednn_fusion_enabled() -> bool:
    return _onednn_fusion["enabled"]


@contextlib.contextmanager
def strict_fusion() -> Iterator[None]:
    """No fusion happens eagerly, so there is nothing to check."""
    yield


class Future:
    """``torch.jit.Future`` of ``fork``: the work already done (ember runs it at once)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    def value(self) -> Any:
        return self._value

    def done(self) -> bool:
        return True


def fork(func: Callable, *args, **kwargs) -> Future:
    """``torch.jit.fork``: runs ``func`` now (eagerly, as torch does outside TorchScript)."""
    _deprecated("fork", "use `torch.compile` instead")
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    return future.wait()


def isinstance(obj, target_type) -> bool:  # torch's name (the builtin: _builtin_isinstance)
    """``torch.jit.isinstance``: ``isinstance`` that also checks the contents of ``list[int]``,
    ``dict[str, Tensor]``, ``tuple[...]`` and ``Optional[...]``, as torch does eagerly."""
    origin = typing.get_origin(target_type)
    args = typing.get_args(target_type)
    if origin is None:
        bare = (list, dict, tuple, typing.List, typing.Dict, typing.Tuple)  # noqa: UP006
        if target_type in bare:
            name = getattr(target_type, "_name", None) or target_type.__name__
            if name.lower() == "dict":
                raise RuntimeError(f"Attempted to use {name} without contained types. Please "
                                   f"add contained type, e.g. {name}[int, int]")
            raise RuntimeError(f"Attempted to use {name} without a contained type. Please add "
                               f"a contained type, e.g. {name}[int]")
        return target_type is Any or _builtin_isinstance(obj, target_type)
    if origin in (typing.Union, types.UnionType):
        return any(isinstance(obj, arg) for arg in args)
    if origin is list:
        return _builtin_isinstance(obj, list) and all(isinstance(x, args[0]) for x in obj)
    if origin is dict:
        return _builtin_isinstance(obj, dict) and all(
            isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        return (_builtin_isinstance(obj, tuple) and len(obj) == len(args)
                and all(isinstance(x, t) for x, t in zip(obj, args)))
    if _builtin_isinstance(origin, type) and issubclass(origin, collections.abc.Collection):
        return _builtin_isinstance(obj, origin)
    return _builtin_isinstance(obj, origin)
