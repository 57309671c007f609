"""``ember.compiler``: torch.compiler's API over ember's capture (``ember.compile``).

``is_compiling()`` is True while a call is being captured; ``disable`` keeps a function out of
every capture (a graph break). The hints for torch's tracer (``allow_in_graph``,
``assume_constant_result``, ``substitute_in_graph``) return what they decorate: ember's capture
records array kernels, so Python-level hints change nothing.
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
    """True while ``ember.compile`` captures a call (torch: while dynamo traces), else False."""
    from ._backend.trace import state
    return state.rec is not None and not state.rec.dead


def is_dynamo_compiling() -> bool:
    return is_compiling()


def is_exporting() -> bool:
    return False


def reset() -> None:
    """``torch.compiler.reset``: forget every capture, so each compiled callable captures
    anew on its next calls."""
    from ._capture.compiled import reset_all
    reset_all()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """``@torch.compiler.disable`` (bare or with arguments): calls of ``fn`` are never
    captured. Inside a compiled call one ends the capture (a graph break, with ``reason``),
    so that ``fn`` runs eagerly on every call, its Python effects included."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    import functools

    from ._backend.trace import graph_break

    why = f"a function marked torch.compiler.disable ({getattr(fn, '__qualname__', fn)})"
    if reason:
        why += f": {reason}"

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        graph_break(why)
        return fn(*args, **kwargs)

    eager._torchdynamo_disable = True
    return eager


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
    runs its own capture and replay for all of them."""
    from ._compile import _BACKENDS, _DEBUG_BACKENDS
    return sorted(_BACKENDS if exclude_tags else _BACKENDS | _DEBUG_BACKENDS)


def set_default_backend(backend: str | Callable | None) -> None:
    """Record the backend ``compile`` names by default (torch checks it only when compiling)."""
    _default_backend["backend"] = "inductor" if backend is None else backend


def get_default_backend() -> str | Callable:
    return _default_backend["backend"]


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
               force_backend=None):
    """``torch.compiler.set_stance``: ``"force_eager"`` runs compiled callables eagerly,
    ``"eager_on_recompile"`` runs eagerly where a new capture would be needed,
    ``"fail_on_recompile"`` raises there; ``"default"`` captures and replays. Usable as a
    context manager or decorator, as in torch."""
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

