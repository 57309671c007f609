"""``ember.distributed``: ``torch.distributed`` on MPI.

Processes are MPI's: start a job with ``mpiexec -n 4 python train.py`` or with the
torchrun-compatible ``python -m ember.distributed.run --nproc-per-node 4 train.py``, then
``init_process_group("gloo")`` (torch's CPU backend; ``"mpi"`` works too) joins them.
Collectives (``all_reduce``, ``broadcast``, ``all_gather``, ...) take the same arguments as
torch's and return a ``Work`` with ``async_op=True``. The MPI library comes from PyPI:
``pip install "ember[mpi]"`` installs mpi4py and the ``mpich`` wheel. Importing this package
does not load MPI; ``is_available()`` says whether it can be.
"""

from __future__ import annotations

from . import _mpi
from ._group import (
    Backend,
    GroupMember,
    ProcessGroup,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_initialized,
    is_torchelastic_launched,
    new_group,
)
from .collectives import (
    P2POp,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_gather_single,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    broadcast_object_list,
    gather,
    gather_object,
    irecv,
    isend,
    monitored_barrier,
    recv,
    recv_object_list,
    reduce,
    reduce_scatter,
    reduce_scatter_single,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
    send_object_list,
)

reduce_op = ReduceOp  # torch's deprecated name


def is_available() -> bool:
    """Whether collectives can run here: mpi4py (``ember[mpi]``) is installed."""
    return _mpi.available()


def is_mpi_available() -> bool:
    return _mpi.available()


def is_gloo_available() -> bool:
    """True where MPI is: ember runs torch's "gloo" backend on MPI."""
    return _mpi.available()


def is_nccl_available() -> bool:
    return False


def is_ucc_available() -> bool:
    return False


def is_xccl_available() -> bool:
    return False


__all__ = [
    "Backend", "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work", "all_gather",
    "all_gather_into_tensor", "all_gather_object", "all_gather_single", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size",
    "group", "init_process_group", "irecv", "is_available", "is_gloo_available", "is_initialized",
    "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "is_ucc_available",
    "is_xccl_available", "isend", "monitored_barrier", "new_group", "recv", "recv_object_list",
    "reduce", "reduce_op", "reduce_scatter", "reduce_scatter_single", "reduce_scatter_tensor",
    "scatter", "scatter_object_list", "send", "send_object_list",
]
