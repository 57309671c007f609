"""``ember.nn.parallel``: ``DataParallel`` as torch runs it on a machine without GPUs.

With no accelerator torch's ``DataParallel`` keeps ``device_ids = []`` and its forward calls
the wrapped module directly; ember always runs that way. ``data_parallel`` (the functional
form) raises torch's ``RuntimeError`` there, and so it does here. ``DistributedDataParallel``
runs one replica per MPI process (see ``distributed.py``).
"""

from __future__ import annotations

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]

_NOT_YET = {"replicate", "scatter", "parallel_apply", "gather"}


def __getattr__(name: str):
    if name in _NOT_YET:  # torch's single-process multi-device helpers
        raise AttributeError(f"module 'ember.nn.parallel' has no attribute '{name}': it spreads "
                             f"work over several devices of one process, and ember has one "
                             f"device; use DistributedDataParallel across processes")
    raise AttributeError(f"module 'ember.nn.parallel' has no attribute '{name}'")
