"""``torch._dynamo``: the names training scripts use, over ember's capture (``ember.compile``).

``explain(fn)(*args)`` captures one call and reports its graphs and graph breaks, each break
with its reason and source line; ``reset()`` forgets every capture; ``config`` holds the
recompile limit; ``graph_break()`` ends a capture on purpose; ``exc.Unsupported`` is what
``fullgraph=True`` raises at a break.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import config, exc
from .exc import Unsupported

__all__ = ["config", "disable", "exc", "explain", "graph_break", "is_compiling",
           "list_backends", "mark_dynamic", "mark_static", "maybe_mark_dynamic", "reset"]


def explain(f: Callable, *extra_args: Any, **extra_kwargs: Any):
    """``torch._dynamo.explain(f)(*args, **kwargs)``: capture one call of ``f`` and return
    an ``ExplainOutput`` (graph count, graph break count and reasons, op count)."""
    from .._capture.compiled import explain as _explain
    return _explain(f, *extra_args, **extra_kwargs)


def reset() -> None:
    """Forget every capture: compiled callables capture anew."""
    from .._capture.compiled import reset_all
    reset_all()


def graph_break() -> None:
    """End the capture here (``torch._dynamo.graph_break``): the rest of the call runs
    eagerly."""
    from .._backend.trace import graph_break as _gb
    _gb("torch._dynamo.graph_break() called")


def is_compiling() -> bool:
    from ..compiler import is_compiling as _ic
    return _ic()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    from ..compiler import disable as _disable
    return _disable(fn, recursive, reason=reason)


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    from ..compiler import list_backends as _lb
    return _lb(exclude_tags)


def mark_dynamic(t, index, **kwargs) -> None:
    """Accepted: ember captures one program per input shape (guards include every shape), so
    a dimension is never symbolic."""


mark_static = maybe_mark_dynamic = mark_dynamic

_ = Unsupported
