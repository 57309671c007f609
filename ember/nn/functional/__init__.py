"""``ember.nn.functional``: torch.nn.functional's ops, each with its derivative.

The primitives (one ``Op`` each: conv, pooling, normalization, losses, activations, ...) live in
``ember.ops``; the modules of this package gather them by area with the composites built from
them, and everything is collected here, so ``import ember.nn.functional as F`` gives
``F.relu``, ``F.conv2d``, ``F.cross_entropy``, ...
"""

from __future__ import annotations

import importlib as _importlib

_AREAS = (".activation", ".linear", ".normalization", ".loss", ".pooling", ".distance",
          ".dropout", ".attention", ".vision",
          # areas with no composites: F.* straight from their op modules
          "ember.ops.conv", "ember.ops.vision", "ember.ops.embeddings")

for _area in _AREAS:
    _mod = _importlib.import_module(_area, __name__)
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
del _area, _mod
