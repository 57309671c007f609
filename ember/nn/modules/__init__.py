"""``ember.nn.modules``: Module and the layers, one file per family.

Each module file here lists its public classes in ``__all__``; all are re-exported by
``ember.nn``.
"""

from __future__ import annotations

import importlib as _importlib

# families of layers, one file each (module.py holds the Module base)
_FAMILIES = ("module", "container", "linear", "activation", "conv", "pooling", "normalization",
             "dropout", "sparse", "loss", "rnn", "transformer", "misc", "lazy")

__all__: list[str] = []
for _family in _FAMILIES:
    try:
        _mod = _importlib.import_module("." + _family, __name__)
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_family}":
            raise
        continue
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
        __all__.append(_name)
