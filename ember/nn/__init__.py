"""``ember.nn``: neural-network building blocks, as ``torch.nn``.

``Module`` and the layers live in ``modules/`` (one file per family), the differentiable ops in
``functional/``, weight initialisation in ``init``, and helpers in ``utils``.
"""

from __future__ import annotations

from . import functional, init, parallel, utils
from .modules import *  # noqa: F403
from .parallel import DataParallel
from .parameter import Parameter
