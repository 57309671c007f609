"""``ember.compiler``: torch.compiler's API for code that runs eagerly.

ember never compiles (``ember.compile`` returns an eager wrapper), so ``is_compiling()`` is
always False and the decorators return what they decorate: code marked for the compiler
runs exactly as it would without the marks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ._compile import compile  # torch.compiler.compile is torch.compile

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
           "disable", "get_default_backend", "is_compiling", "is_dynamo_compiling",
           "is_exporting", "list_backends", "reset", "set_default_backend", "set_stance",
           "substitute_in_graph", "wrap_numpy"]

_F = TypeVar("_F", bound=Callable)
_default_backend: dict[str, Any] = {"backend": "inductor"}
_stance = {"stance": "default"}


def is_compiling() -> bool:
    """False: nothing in ember runs under a compiler."""
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False


def reset() -> None:
    """Clears compiled code in torch; ember keeps none, so there is nothing to clear."""


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """``@torch.compiler.disable`` (bare or with arguments): the function itself, which ember
    runs eagerly anyway."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn: _F) -> _F:
    return fn


def assume_constant_result(fn: _F) -> _F:
    return fn


def substitute_in_graph(original_fn: Callable, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False) -> Callable[[_F], _F]:
    """A decorator that registers a traceable stand-in for ``original_fn``; eagerly the
    original is always called, so the decorated function is returned unchanged."""
    return lambda fn: fn


def wrap_numpy(fn: _F) -> _F:
    """``torch.compiler.wrap_numpy``: a function on NumPy arrays made to take and return
    tensors."""
    import functools

    from ._tensor import Tensor

    def to_array(x):
        return x.numpy() if isinstance(x, Tensor) else x

    def to_tensor(x):
        from ._backend import is_array
        from .ops.creation import from_numpy
        if isinstance(x, (tuple, list)):
            return type(x)(to_tensor(v) for v in x)
        return from_numpy(x) if is_array(x) else x

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        args = [to_array(a) for a in args]
        kwargs = {k: to_array(v) for k, v in kwargs.items()}
        return to_tensor(fn(*args, **kwargs))

    return wrapped


def nested_compile_region(fn=None, **kwargs):
    return (lambda f: f) if fn is None else fn


def cudagraph_mark_step_begin() -> None:
    """No CUDA graphs: nothing to mark."""


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """torch 2.13's backend names (``torch.compiler.list_backends()``); ember accepts each and
    runs eagerly."""
    from ._compile import _BACKENDS, _DEBUG_BACKENDS
    return sorted(_BACKENDS if exclude_tags else _BACKENDS | _DEBUG_BACKENDS)


def set_default_backend(backend: str | Callable | None) -> None:
    """Record the backend ``compile`` names by default (torch checks it only when compiling)."""
    _default_backend["backend"] = "inductor" if backend is None else backend


def get_default_backend() -> str | Callable:
    return _default_backend["backend"]


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
               force_backend=None):
    """Record the stance (torch: whether compiled code is used); every stance runs eagerly
    here. Usable as a context manager or decorator, as in torch."""
    import contextlib

    previous = _stance["stance"]
    _stance["stance"] = stance

    @contextlib.contextmanager
    def restore():
        try:
            yield
        finally:
            _stance["stance"] = previous

    return restore()

