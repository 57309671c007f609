"""``ember.nn.functional``: torch.nn.functional's ops, each with its derivative.

Grouped by area in the modules of this package; everything is re-exported here, so
``import ember.nn.functional as F`` gives ``F.relu``, ``F.conv2d``, ``F.cross_entropy``, ...
"""

from __future__ import annotations

import importlib as _importlib

_AREAS = ("activation", "linear", "normalization", "loss", "conv", "pooling", "sparse",
          "distance", "dropout", "vision", "attention")

for _area in _AREAS:
    _mod = _importlib.import_module("." + _area, __name__)
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
del _area, _mod
