"""Process groups: the default group that ``init_process_group`` makes, and ``new_group``.

Each ``ProcessGroup`` owns an MPI communicator of its own (a ``Dup`` of ``COMM_WORLD``, or a
sub-communicator for ``new_group``), so ember's collectives never interleave with messages a
program sends through mpi4py itself. Ranks passed to collectives (``src``, ``dst``) are global
ranks, as in torch; ``group_src``/``group_dst`` name a rank within the group.
"""

from __future__ import annotations

import os
from datetime import timedelta

from . import _mpi

# torch's default collective timeout for CPU backends
default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """A backend name (``torch.distributed.Backend``). ember runs every CPU backend on MPI."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    def __new__(cls, name: str) -> str:
        if not isinstance(name, str):  # torch's error type for this check
            raise ValueError(  # noqa: TRY004
                f"Backend constructor parameter must be string-ish, got {name!r}")
        return str.__new__(cls, name.lower())


class ProcessGroup:
    """A group of ranks and the MPI communicator that joins them (``torch.distributed.ProcessGroup``).

    ``rank()``/``size()`` are this process's rank within the group and the group's size.
    """

    def __init__(self, comm, ranks: list[int], name: str, backend: str,
                 timeout: timedelta) -> None:
        self._comm = comm
        self._ranks = list(ranks)  # global ranks, by group rank
        self._index = {g: i for i, g in enumerate(self._ranks)}
        self._name = name
        self._backend = backend
        self._timeout = timeout

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        return self._backend

    @property
    def group_name(self) -> str:
        return self._name

    def _group_rank(self, global_rank: int, what: str) -> int:
        try:
            return self._index[global_rank]
        except (KeyError, TypeError):
            raise ValueError(f"{what}: global rank {global_rank} is not part of group "
                             f"{self._name!r} (its ranks are {self._ranks})") from None

    def __repr__(self) -> str:
        return f"<ember.distributed.ProcessGroup {self._name!r} ranks={self._ranks}>"


class GroupMember:
    """torch's markers: ``WORLD`` is the default group once initialized, and ``new_group``
    returns ``NON_GROUP_MEMBER`` on ranks outside the new group."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


class group:  # torch's name
    """``torch.distributed.group.WORLD``: the default process group, None before init."""

    WORLD: ProcessGroup | None = None


class _World:
    """The package's state: the default group, every live group, and the ``new_group`` count."""

    def __init__(self) -> None:
        self.default: ProcessGroup | None = None
        self.backend = ""
        self.groups: list[ProcessGroup] = []
        self.next_id = 0


_world = _World()

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


def _set_default(pg: ProcessGroup | None) -> None:
    _world.default = GroupMember.WORLD = group.WORLD = pg


def is_initialized() -> bool:
    """Whether the default process group has been initialized."""
    return _world.default is not None


def default_group() -> ProcessGroup:
    """The default group, or torch's ``ValueError`` when ``init_process_group`` has not run."""
    pg = _world.default
    if pg is None:
        raise ValueError(_NOT_INITIALIZED)
    return pg


def resolve(grp) -> ProcessGroup | None:
    """The group a collective runs on: the default for None; None for a non-member."""
    if grp is None:
        return default_group()
    if grp is GroupMember.NON_GROUP_MEMBER or (isinstance(grp, int) and grp == -100):
        default_group()
        return None
    if not isinstance(grp, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup (from init_process_group or new_group), "
                        f"got {type(grp).__name__}")
    return grp


def _check_timeout(timeout) -> None:
    if not isinstance(timeout, timedelta):
        raise TypeError("Expected timeout argument to be of type datetime.timedelta, got "
                        f"{timeout}")


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job's processes into the default group (``torch.distributed.init_process_group``).

    The processes are MPI's: start them with ``mpiexec -n N python train.py`` or
    ``python -m ember.distributed.run --nproc-per-node N train.py``. ``backend`` may be None,
    ``"mpi"`` or ``"gloo"`` (torch's CPU default, run on MPI here). ``world_size``/``rank``,
    and torchrun's ``WORLD_SIZE``/``RANK`` environment variables, are checked against MPI's,
    so a mismatch is an error rather than a hang. ``init_method`` and ``store`` are accepted for
    compatibility: MPI has already brought the processes together.
    """
    if _world.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if timeout is not None:
        _check_timeout(timeout)
    name = _backend_name(backend)
    MPI = _mpi.mpi()
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    _check_layout("world_size", world_size, size, me, "argument")
    _check_layout("rank", rank, me, me, "argument")
    env_size, env_rank = _mpi.env_int("WORLD_SIZE"), _mpi.env_int("RANK")
    if env_size is not None:
        _check_layout("WORLD_SIZE", env_size, size, me, "environment variable")
    if env_rank is not None and size > 1:
        _check_layout("RANK", env_rank, me, me, "environment variable")
    _mpi.abort_on_uncaught_exception()
    pg = ProcessGroup(world.Dup(), list(range(size)), group_name or "default_pg", name,
                      timeout or default_pg_timeout)
    _world.backend = name
    _world.groups = [pg]
    _set_default(pg)


def _backend_name(backend) -> str:
    if backend is None:
        return Backend.GLOO
    name = str(backend).lower()
    # torch's "cpu:gloo,cuda:nccl" form: ember has CPU devices only
    if ":" in name:
        pairs = dict(p.split(":", 1) for p in name.split(",") if ":" in p)
        name = pairs.get("cpu", next(iter(pairs.values())))
    if name in (Backend.GLOO, Backend.MPI):
        return name
    if name in (Backend.NCCL, Backend.XCCL):
        raise RuntimeError(f"init_process_group: backend {name!r} needs GPUs, and ember runs "
                           "on the CPU. Use backend='gloo' (torch's CPU backend, which ember "
                           "runs on MPI) or backend='mpi'")
    raise ValueError(f"init_process_group: unknown backend {backend!r}; ember runs 'gloo' and "
                     "'mpi' (both on MPI)")


def _check_layout(what: str, given: int, actual: int, me: int, kind: str) -> None:
    if given is None or given == -1 or given == actual:
        return
    if what in ("world_size", "WORLD_SIZE") and actual == 1:
        raise RuntimeError(
            f"init_process_group: {kind} {what}={given} but this process was started alone, "
            "not by MPI. ember's distributed processes are MPI's: launch with "
            f"`mpiexec -n {given} python SCRIPT` or "
            f"`python -m ember.distributed.run --nproc-per-node {given} SCRIPT`")
    raise ValueError(f"init_process_group: {kind} {what}={given}, but MPI started this process "
                     f"as {'rank' if 'rank' in what.lower() else 'world size'} {actual} "
                     f"(rank {me}); ember takes the layout from MPI, so they must agree")


def destroy_process_group(grp: ProcessGroup | None = None) -> None:
    """Free ``grp``'s communicator, or every group's (and de-initialize) for None or WORLD."""
    if grp is GroupMember.NON_GROUP_MEMBER:
        return
    if grp is None or grp is _world.default:
        for pg in _world.groups:
            _free(pg)
        _world.groups = []
        _set_default(None)
        return
    if grp not in _world.groups:
        raise ValueError("Invalid process group specified")
    _world.groups.remove(grp)
    _free(grp)


def _free(pg: ProcessGroup) -> None:
    comm, pg._comm = pg._comm, None
    if comm is not None:
        comm.Free()


def new_group(ranks=None, timeout: timedelta | None = None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id=None, sort_ranks: bool = True):
    """A group of some of the ranks (``torch.distributed.new_group``).

    Members get a ``ProcessGroup``; other ranks get ``GroupMember.NON_GROUP_MEMBER``, on which
    collectives do nothing. Only the members take part in making it (MPI's
    ``Comm.Create_group``), so ``use_local_synchronization`` holds either way.
    """
    world = default_group()
    if timeout is not None:
        _check_timeout(timeout)
    size = world.size()
    if ranks is None or len(ranks) == 0:
        ranks = list(range(size))
    ranks = [int(r) for r in ranks]
    if sort_ranks:
        ranks = sorted(ranks)
    for r in ranks:
        if r < 0 or r >= size:
            raise ValueError("The new group's rank should be within the world_size set by "
                             f"init_process_group (got rank {r}, world size {size})")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} list a rank more than once")
    _world.next_id += 1  # every rank counts every new_group call, members or not
    name = group_desc or str(_world.next_id)
    if world.rank() not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    comm = world._comm.Create_group(world._comm.Get_group().Incl(ranks), tag=_world.next_id)
    pg = ProcessGroup(comm, ranks, name, _backend_name(backend) if backend else _world.backend,
                      timeout or world._timeout)
    _world.groups.append(pg)
    return pg


def get_rank(grp: ProcessGroup | None = None) -> int:
    """This process's rank in ``grp`` (the default group for None); -1 for a non-member."""
    pg = resolve(grp)
    return -1 if pg is None else pg.rank()


def get_world_size(grp: ProcessGroup | None = None) -> int:
    """The number of processes in ``grp`` (the default group for None); -1 for a non-member."""
    pg = resolve(grp)
    return -1 if pg is None else pg.size()


def get_backend(grp: ProcessGroup | None = None) -> str:
    """The backend name the group was made with (``"gloo"`` or ``"mpi"``; both run on MPI)."""
    pg = resolve(grp)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return Backend(pg._backend)


def get_process_group_ranks(grp: ProcessGroup | None) -> list[int]:
    """The global ranks of ``grp``'s members, in group-rank order."""
    pg = resolve(grp)
    return list(pg._ranks) if pg is not None else []


def get_global_rank(grp: ProcessGroup, group_rank: int) -> int:
    """The global rank of ``grp``'s member ``group_rank``."""
    pg = resolve(grp)
    if pg is None or not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {grp}")
    return pg._ranks[group_rank]


def get_group_rank(grp: ProcessGroup, global_rank: int) -> int:
    """The rank within ``grp`` of the process with global rank ``global_rank``."""
    pg = resolve(grp)
    if pg is None or global_rank not in pg._index:
        raise ValueError(f"Global rank {global_rank} is not part of group {grp}")
    return pg._index[global_rank]


def is_torchelastic_launched() -> bool:
    """Whether a torchrun-style launcher started this process (it sets TORCHELASTIC_RUN_ID)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None
