"""The op library: one module per concept, each op registered once where it is defined.

Importing the concept modules runs their ``@register`` declarations (``_registry.py``);
``_registry.exports()`` gives the ``ember.X`` names and ``_registry.bind`` derives the method
form (``t.X``), the in-place form (``t.X_``, through the one in-place mechanism of
``inplace.py``), the operators and the aliases. ``ops/linalg.py`` (torch.linalg's primitives) is
loaded by ``ember.linalg``.
"""

from __future__ import annotations

from .._tensor import Tensor

# importing each concept module runs its registrations (nn primitives included: torch.conv2d)
from . import (
    _registry,
    activation,
    arithmetic,
    comparison,
    complex,
    conv,
    creation,
    distance,
    embeddings,
    indexing,
    inplace,
    losses,
    normalization,
    pooling,
    products,
    reductions,
    sampling,
    scans,
    shape,
    sorting,
    special,
    unary,
    vision,
)
from .inplace import inplace as _inplace


def _inplace_method(fn, name: str | None = None):
    def method(self, *args, **kwargs):
        return _inplace(self, fn, *args, **kwargs)
    method.__name__ = method.__qualname__ = name or fn.__name__ + "_"
    method.__doc__ = f"In-place form of ``{fn.__name__}``."
    return method


globals().update(_registry.exports())
__all__ = list(_registry.exports())  # ``from ember.ops import *``: the ops, not the modules
_registry.bind(Tensor, _inplace_method)
