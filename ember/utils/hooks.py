"""``RemovableHandle``: what every ``register_*hook`` returns, as in ``torch.utils.hooks``."""

from __future__ import annotations

import itertools
import weakref

_next_id = itertools.count()


class RemovableHandle:
    """Removes the hook it was returned for from its registry when ``remove()`` is called."""

    __slots__ = ("__weakref__", "_registry", "id")

    def __init__(self, registry: HookDict) -> None:
        self.id = next(_next_id)
        self._registry = weakref.ref(registry)

    def remove(self) -> None:
        registry = self._registry()
        if registry is not None:
            registry.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class HookDict(dict):
    """A dict that can be weakly referenced, so handles don't keep their registry alive."""

    __slots__ = ("__weakref__",)


def add_hook(registry: HookDict, fn) -> RemovableHandle:
    """Append ``fn`` to ``registry`` (insertion-ordered) and return its removal handle."""
    if not callable(fn):
        raise TypeError(f"hook must be callable, but got {type(fn).__name__}")
    handle = RemovableHandle(registry)
    registry[handle.id] = fn
    return handle
