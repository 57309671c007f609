"""Collectives and point-to-point messages on MPI (``torch.distributed``'s functions).

Every operation is issued as a non-blocking MPI call and wrapped in a ``Work``; with
``async_op=False`` it is waited for at once. A tensor whose data is a contiguous host array is
handed to MPI as it is, without a copy; other tensors go through a contiguous copy that is
written back when the work completes. Collectives are not recorded by autograd (as in torch)
but do count as in-place changes of the tensors they write.

Reductions follow torch: ``AVG`` sums and divides (floating and complex tensors only),
``MIN``/``MAX`` are refused on complex tensors, and bool tensors reduce logically. float16
reduces in MPI's float16; bfloat16, which MPI lacks, reduces in float32 and is rounded back.
"""

from __future__ import annotations

import enum
import pickle
import time
from datetime import timedelta

from .._backend import device_of, host, ndarray, to_device_array, to_host
from .._tensor import Tensor
from . import _mpi
from ._group import GroupMember, ProcessGroup, resolve

__all__ = [
    "P2POp", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "all_gather_single", "all_reduce", "all_to_all", "all_to_all_single", "barrier",
    "batch_isend_irecv", "broadcast", "broadcast_object_list", "gather", "gather_object",
    "irecv", "isend", "monitored_barrier", "recv", "recv_object_list", "reduce",
    "reduce_scatter", "reduce_scatter_single", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send", "send_object_list",
]


class _RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"RedOpType.{self.name}"


class ReduceOp:
    """torch's reduction kinds: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``,
    ``BAND``, ``BOR``, ``BXOR`` (each a ``ReduceOp.RedOpType``)."""

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM
    UNUSED = _RedOpType.UNUSED


def _mpi_op(op, kind: str, opname: str):
    """The MPI operation for ``op`` on arrays of dtype kind ``kind``."""
    MPI = _mpi.mpi()
    try:
        op = _RedOpType(op)
    except ValueError:
        raise ValueError(f"{opname}: op must be a torch.distributed.ReduceOp, got {op!r}") \
            from None
    if op is _RedOpType.PREMUL_SUM or op is _RedOpType.UNUSED:
        raise NotImplementedError(f"{opname}: ReduceOp.{op.name} (NCCL's pre-multiplied sum) "
                                  "is not supported by ember's MPI backend")
    if kind == "c" and op in (_RedOpType.MIN, _RedOpType.MAX, _RedOpType.BAND, _RedOpType.BOR,
                              _RedOpType.BXOR):
        raise ValueError(f"{opname} does not support {op} on complex tensors")
    if op is _RedOpType.AVG and kind not in "fcV":
        raise ValueError(f"{opname}: ReduceOp.AVG needs a floating point or complex tensor "
                         "(it divides by the group size); sum with ReduceOp.SUM instead")
    if op in (_RedOpType.BAND, _RedOpType.BOR, _RedOpType.BXOR) and kind not in "biu":
        raise ValueError(f"{opname}: bitwise {op} needs an integer or bool tensor")
    if kind == "b":  # MPI reduces C bools with logical operations only
        return {_RedOpType.SUM: MPI.LOR, _RedOpType.MAX: MPI.LOR, _RedOpType.BOR: MPI.LOR,
                _RedOpType.PRODUCT: MPI.LAND, _RedOpType.MIN: MPI.LAND,
                _RedOpType.BAND: MPI.LAND, _RedOpType.BXOR: MPI.LXOR}[op]
    return {_RedOpType.SUM: MPI.SUM, _RedOpType.AVG: MPI.SUM, _RedOpType.PRODUCT: MPI.PROD,
            _RedOpType.MIN: MPI.MIN, _RedOpType.MAX: MPI.MAX, _RedOpType.BAND: MPI.BAND,
            _RedOpType.BOR: MPI.BOR, _RedOpType.BXOR: MPI.BXOR}[op]


# ---------------------------------------------------------------------------------- buffers
def _is_bf16(a) -> bool:
    return a.dtype.kind == "V"


def _wire(a):
    """``a`` as MPI can move it: bfloat16's bytes travel as uint16."""
    return a.view(host.uint16) if _is_bf16(a) else a


def _source(t: Tensor, reduce: bool = False):
    """An array MPI reads ``t`` from: its own data when that is contiguous host memory."""
    a = t._data
    if type(a) is not ndarray or not a.flags.c_contiguous:
        a = host.ascontiguousarray(to_host(a))
    if reduce and _is_bf16(a):
        return a.astype(host.float32)
    return _wire(a)


def _target(t: Tensor, reduce: bool = False):
    """An array MPI writes ``t``'s result into, and whether it is ``t``'s own memory: it is
    when ``t``'s data is contiguous host memory that needs no widening; otherwise it is a
    scratch array that ``_store`` copies into ``t`` on completion."""
    a = t._data
    if type(a) is ndarray and a.flags.c_contiguous and not (reduce and _is_bf16(a)):
        return _wire(a), True
    return _wire(host.empty(a.shape, dtype=host.float32 if reduce and _is_bf16(a) else a.dtype)), \
        False


def _store(t: Tensor, buf, own: bool = False) -> None:
    """Make ``buf`` ``t``'s new values (unless MPI wrote into ``t`` itself) and count the
    in-place change."""
    a = t._data
    if not own:
        if buf.dtype != a.dtype:
            buf = buf.view(a.dtype) if buf.dtype == host.uint16 and _is_bf16(a) \
                else buf.astype(a.dtype)
        a[...] = to_device_array(buf.reshape(a.shape), device_of(a))
    t._vc[0] += 1


def _empty(n: int, like):
    """A flat receive buffer of ``n`` elements of ``like``'s (wire) dtype."""
    return host.empty(n, dtype=like.dtype)


def _check_tensor(t, name: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")


def _check_tensor_list(ts, name: str) -> None:
    if not isinstance(ts, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(ts)} instead.")
    if not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(ts)} with elements of "
                        f"type {[type(t) for t in ts]}.")


def _same_dtype(opname: str, tensors) -> None:
    first = None
    for t in tensors:
        if first is None:
            first = t.dtype
        elif t.dtype != first:
            raise ValueError(f"{opname}: Invalid usage of tensors with different dtypes. Found "
                             f"{first} and {t.dtype}")


def _count(pg: ProcessGroup, opname: str, what: str, tensors, expected: int) -> None:
    if len(tensors) != expected:
        raise ValueError(f"{opname}: {what} must hold one tensor per rank of the group "
                         f"({expected}), got {len(tensors)}")


# ------------------------------------------------------------------------------------- Work
class Work:
    """A handle on an operation in flight (torch's ``Work``): ``wait()``, ``is_completed()``.

    Outputs are final once ``wait()`` returns (or ``is_completed()`` says True). The
    finishing step (writing back copies, dividing for AVG) runs once, on completion.
    """

    __slots__ = ("_done", "_exc", "_finish", "_outputs", "_requests", "_source", "_status")

    def __init__(self, requests: list, finish=None, outputs=(), status=None) -> None:
        self._requests = requests
        self._finish = finish
        self._outputs = list(outputs)
        self._status = status
        self._source = -1
        self._done = False
        self._exc = None

    def _complete(self) -> None:
        self._done = True
        self._requests = []
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until the operation has completed; True. With ``timeout``, raise
        ``RuntimeError`` if it has not completed by then."""
        if self._done:
            return True
        MPI = _mpi.mpi()
        if timeout is None:
            if self._status is not None:
                MPI.Request.Waitall(self._requests, [self._status])
            else:
                MPI.Request.Waitall(self._requests)
        else:
            deadline = time.monotonic() + _seconds(timeout)
            while not self._test(MPI):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Work.wait: the operation did not complete within "
                                       f"{timeout}")
                time.sleep(0.0005)
            return True
        self._complete()
        return True

    def _test(self, MPI) -> bool:
        done = MPI.Request.Testall(self._requests, [self._status]) if self._status is not None \
            else MPI.Request.Testall(self._requests)
        if done:
            self._complete()
        return done

    def is_completed(self) -> bool:
        """Whether the operation has finished (polls MPI, which also moves it along)."""
        return self._done or self._test(_mpi.mpi())

    def is_success(self) -> bool:
        return self.is_completed() and self._exc is None

    def exception(self):
        return self._exc

    def result(self) -> list[Tensor]:
        """The tensors the operation wrote."""
        self.wait()
        return self._outputs

    def source_rank(self) -> int:
        """The global rank a completed ``irecv`` received from."""
        self.wait()
        return self._source

    def synchronize(self) -> None:
        self.wait()

    def get_future(self):
        raise NotImplementedError("Work.get_future (torch.futures) is not supported by ember; "
                                  "call work.wait() and then use the output tensors")


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


def _run(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def _not_member(opname: str) -> None:
    import warnings
    rank = -1 if GroupMember.WORLD is None else GroupMember.WORLD.rank()
    warnings.warn(f"Running {opname} on global rank {rank} which does not belong to the given "
                  "group.", stacklevel=3)


def _root(pg: ProcessGroup, global_rank, group_rank, opname: str, what: str) -> int:
    """The group rank of a collective's root, from a global rank or ``group_src``/``_dst``."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError(f"{opname}: can't specify both {what} and group_{what}")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{opname}: group_{what}={group_rank} is not a rank of a group of "
                             f"size {pg.size()}")
        return group_rank
    if global_rank is None:
        if what == "src" and opname in ("recv", "irecv", "recv_object_list"):
            return -1
        raise ValueError(f"{opname}: Must specify {what} or group_{what}")
    return pg._group_rank(global_rank, opname)


def _avg(pg: ProcessGroup, op, buf) -> None:
    if op == _RedOpType.AVG:
        buf /= pg.size()


# ------------------------------------------------------------------------------ collectives
def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group in place; every rank gets the result."""
    _check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_reduce")
    mop = _mpi_op(op, tensor._data.dtype.kind, "all_reduce")
    buf, own = _target(tensor, reduce=True)
    if not own:
        buf[...] = _source(tensor, reduce=True).reshape(buf.shape)
    req = pg._comm.Iallreduce(_mpi.mpi().IN_PLACE, buf, op=mop)

    def finish():
        _avg(pg, op, buf)
        _store(tensor, buf, own)
    return _run(Work([req], finish, [tensor]), async_op)


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copy ``tensor`` from rank ``src`` into ``tensor`` on every rank of the group."""
    _check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("broadcast")
    root = _root(pg, src, group_src, "broadcast", "src")
    buf, own = _target(tensor)
    if pg.rank() == root and not own:
        buf[...] = _source(tensor).reshape(buf.shape)
    req = pg._comm.Ibcast(buf, root=root)
    return _run(Work([req], lambda: _store(tensor, buf, own), [tensor]), async_op)


def reduce(tensor: Tensor, dst: int | None = None, op=ReduceOp.SUM, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """Reduce ``tensor`` across the group into ``tensor`` on rank ``dst`` only (the other
    ranks' tensors are left as they were)."""
    _check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("reduce")
    root = _root(pg, dst, group_dst, "reduce", "dst")
    mop = _mpi_op(op, tensor._data.dtype.kind, "reduce")
    if pg.rank() == root:
        recv, own = _target(tensor, reduce=True)
        send = _mpi.mpi().IN_PLACE if own else _source(tensor, reduce=True)

        def finish():
            _avg(pg, op, recv)
            _store(tensor, recv, own)
        req = pg._comm.Ireduce(send, recv, op=mop, root=root)
        return _run(Work([req], finish, [tensor]), async_op)
    req = pg._comm.Ireduce(_source(tensor, reduce=True), None, op=mop, root=root)
    return _run(Work([req], None, [tensor]), async_op)


def _layout(outputs) -> tuple[list[int], list[int]]:
    """The element counts and offsets of one tensor per rank in a flat buffer."""
    counts = [t.numel() for t in outputs]
    displs = [sum(counts[:i]) for i in range(len(counts))]
    return counts, displs


def _scatter_out(outputs, flat, counts, displs) -> None:
    for t, c, d in zip(outputs, counts, displs):
        _store(t, flat[d:d + c])


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group=None, async_op: bool = False):
    """Gather every rank's ``tensor`` into ``tensor_list`` (one per rank; sizes may differ)."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_gather")
    _count(pg, "all_gather", "tensor_list", tensor_list, pg.size())
    _same_dtype("all_gather", [*tensor_list, tensor])
    me = pg.rank()
    if tensor_list[me].numel() != tensor.numel():
        raise ValueError(f"all_gather: tensor_list[{me}] has {tensor_list[me].numel()} elements "
                         f"but this rank's tensor has {tensor.numel()}")
    counts, displs = _layout(tensor_list)
    send = _source(tensor)
    flat = _empty(sum(counts), send)
    req = pg._comm.Iallgatherv(send.reshape(-1), [flat, counts, displs, None])
    return _run(Work([req], lambda: _scatter_out(tensor_list, flat, counts, displs),
                     tensor_list), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None,
                           async_op: bool = False):
    """Gather every rank's ``input_tensor`` into ``output_tensor``, concatenated along dim 0
    (or stacked: ``output_tensor`` may have shape ``(world_size, *input.shape)``)."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_gather_into_tensor")
    _same_dtype("all_gather_into_tensor", [output_tensor, input_tensor])
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise ValueError("all_gather_into_tensor: output tensor size must be equal to "
                         f"world_size times input tensor size (output {tuple(output_tensor.shape)}"
                         f", input {tuple(input_tensor.shape)}, world size {pg.size()})")
    send = _source(input_tensor)
    recv, own = _target(output_tensor)
    req = pg._comm.Iallgather(send.reshape(-1), recv.reshape(-1))
    return _run(Work([req], lambda: _store(output_tensor, recv, own), [output_tensor]),
                async_op)


all_gather_single = all_gather_into_tensor


def reduce_scatter(output: Tensor, input_list: list[Tensor], op=ReduceOp.SUM, group=None,
                   async_op: bool = False):
    """Reduce ``input_list`` (one tensor per rank) across the group; rank i gets the reduction
    of every rank's ``input_list[i]`` in ``output``."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    pg = resolve(group)
    if pg is None:
        return _not_member("reduce_scatter")
    _count(pg, "reduce_scatter", "input_list", input_list, pg.size())
    _same_dtype("reduce_scatter", [output, *input_list])
    if input_list[pg.rank()].numel() != output.numel():
        raise ValueError(f"reduce_scatter: input_list[{pg.rank()}] has "
                         f"{input_list[pg.rank()].numel()} elements but output has "
                         f"{output.numel()}")
    mop = _mpi_op(op, output._data.dtype.kind, "reduce_scatter")
    parts = [_source(t, reduce=True).reshape(-1) for t in input_list]
    send = host.concatenate(parts) if parts else None
    counts = [t.numel() for t in input_list]
    recv, own = _target(output, reduce=True)
    req = pg._comm.Ireduce_scatter(send, recv.reshape(-1), counts, op=mop)

    def finish():
        _avg(pg, op, recv)
        _store(output, recv, own)
    return _run(Work([req], finish, [output]), async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op=ReduceOp.SUM, group=None,
                          async_op: bool = False):
    """Reduce ``input`` across the group and give rank i the i-th of ``world_size`` equal
    chunks (along dim 0, or of a stacked ``(world_size, *output.shape)`` input)."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = resolve(group)
    if pg is None:
        return _not_member("reduce_scatter_tensor")
    _same_dtype("reduce_scatter_tensor", [output, input])
    if input.numel() != pg.size() * output.numel():
        raise ValueError("reduce_scatter_tensor: input tensor must be the same size as output "
                         f"size times world size (input {tuple(input.shape)}, output "
                         f"{tuple(output.shape)}, world size {pg.size()})")
    mop = _mpi_op(op, output._data.dtype.kind, "reduce_scatter_tensor")
    send = _source(input, reduce=True)
    recv, own = _target(output, reduce=True)
    req = pg._comm.Ireduce_scatter_block(send.reshape(-1), recv.reshape(-1), op=mop)

    def finish():
        _avg(pg, op, recv)
        _store(output, recv, own)
    return _run(Work([req], finish, [output]), async_op)


reduce_scatter_single = reduce_scatter_tensor


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group=None, async_op: bool = False, group_dst: int | None = None):
    """Gather every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (default 0)."""
    _check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("gather")
    if dst is None and group_dst is None:
        group_dst = 0
    root = _root(pg, dst, group_dst, "gather", "dst")
    send = _source(tensor).reshape(-1)
    if pg.rank() != root:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                             "ranks.")
        req = pg._comm.Igatherv(send, None, root=root)
        return _run(Work([req]), async_op)
    if not gather_list:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    _check_tensor_list(gather_list, "gather_list")
    _count(pg, "gather", "gather_list", gather_list, pg.size())
    _same_dtype("gather", [tensor, *gather_list])
    if gather_list[root].numel() != tensor.numel():  # MPI would truncate it silently
        raise ValueError(f"gather: gather_list[{root}] has {gather_list[root].numel()} elements "
                         f"but this rank's tensor has {tensor.numel()}")
    counts, displs = _layout(gather_list)
    flat = _empty(sum(counts), send)
    req = pg._comm.Igatherv(send, [flat, counts, displs, None], root=root)
    return _run(Work([req], lambda: _scatter_out(gather_list, flat, counts, displs),
                     gather_list), async_op)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group=None, async_op: bool = False, group_src: int | None = None):
    """Give rank i the i-th tensor of ``scatter_list`` on rank ``src`` (default 0), in
    ``tensor``."""
    _check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("scatter")
    if src is None and group_src is None:
        group_src = 0
    root = _root(pg, src, group_src, "scatter", "src")
    recv, own = _target(tensor)
    if pg.rank() != root:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source "
                             "ranks.")
        req = pg._comm.Iscatterv(None, recv.reshape(-1), root=root)
        return _run(Work([req], lambda: _store(tensor, recv, own), [tensor]), async_op)
    if not scatter_list:
        raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
    _check_tensor_list(scatter_list, "scatter_list")
    _count(pg, "scatter", "scatter_list", scatter_list, pg.size())
    _same_dtype("scatter", [tensor, *scatter_list])
    counts = [t.numel() for t in scatter_list]
    if counts[root] != tensor.numel():
        raise ValueError(f"scatter: scatter_list[{root}] has {counts[root]} elements but "
                         f"tensor has {tensor.numel()}")
    displs = [sum(counts[:i]) for i in range(len(counts))]
    flat = host.concatenate([_source(t).reshape(-1) for t in scatter_list])
    req = pg._comm.Iscatterv([flat, counts, displs, None], recv.reshape(-1), root=root)
    return _run(Work([req], lambda: _store(tensor, recv, own), [tensor]), async_op)


def all_to_all(output_tensor_list: list[Tensor], input_tensor_list: list[Tensor], group=None,
               async_op: bool = False):
    """Send ``input_tensor_list[j]`` to rank j; receive rank j's into
    ``output_tensor_list[j]``."""
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_to_all")
    _count(pg, "all_to_all", "input_tensor_list", input_tensor_list, pg.size())
    _count(pg, "all_to_all", "output_tensor_list", output_tensor_list, pg.size())
    _same_dtype("all_to_all", [*output_tensor_list, *input_tensor_list])
    s_counts = [t.numel() for t in input_tensor_list]
    s_displs = [sum(s_counts[:i]) for i in range(len(s_counts))]
    r_counts = [t.numel() for t in output_tensor_list]
    r_displs = [sum(r_counts[:i]) for i in range(len(r_counts))]
    send = host.concatenate([_source(t).reshape(-1) for t in input_tensor_list])
    flat = _empty(sum(r_counts), send)
    req = pg._comm.Ialltoallv([send, s_counts, s_displs, None],
                              [flat, r_counts, r_displs, None])
    return _run(Work([req], lambda: _scatter_out(output_tensor_list, flat, r_counts, r_displs),
                     output_tensor_list), async_op)


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes=None,
                      input_split_sizes=None, group=None, async_op: bool = False):
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``) and send part j to
    rank j; the parts received are concatenated into ``output`` in rank order."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_to_all_single")
    _same_dtype("all_to_all_single", [output, input])
    n = pg.size()
    s_counts = _splits(input, input_split_sizes, n, "input")
    r_counts = _splits(output, output_split_sizes, n, "output")
    s_displs = [sum(s_counts[:i]) for i in range(n)]
    r_displs = [sum(r_counts[:i]) for i in range(n)]
    send = _source(input).reshape(-1)
    recv, own = _target(output)
    req = pg._comm.Ialltoallv([send, s_counts, s_displs, None],
                              [recv.reshape(-1), r_counts, r_displs, None])
    return _run(Work([req], lambda: _store(output, recv, own), [output]), async_op)


def _splits(t: Tensor, sizes, n: int, name: str) -> list[int]:
    rows = t.shape[0] if t.dim() else 1
    row = t.numel() // rows if rows else 0
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise ValueError(f"all_to_all_single: the {name}'s first dimension ({rows}) must "
                             f"divide evenly by the group size ({n}) without {name}_split_sizes")
        return [rows // n * row] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows:
        raise ValueError(f"all_to_all_single: {name}_split_sizes {sizes} must have one entry per "
                         f"rank ({n}) summing to the first dimension ({rows})")
    return [s * row for s in sizes]


def barrier(group=GroupMember.WORLD, async_op: bool = False, device_ids=None,
            timeout: timedelta | None = None):
    """Wait until every rank of the group has reached the barrier."""
    pg = resolve(group)
    if pg is None:
        return _not_member("barrier")
    work = Work([pg._comm.Ibarrier()])
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group=GroupMember.WORLD, timeout: timedelta | None = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not arrive within ``timeout``
    (``torch.distributed.monitored_barrier``: rank 0 hears from every other rank, then
    answers each)."""
    pg = resolve(group)
    if pg is None:
        return _not_member("monitored_barrier")
    seconds = _seconds(timeout if timeout is not None else pg._timeout)
    comm, tag = pg._comm, 0x7E3B
    token = host.zeros(1, dtype=host.int8)
    if pg.rank() != 0:
        comm.Send(token, dest=0, tag=tag)
        Work([comm.Irecv(token, source=0, tag=tag)]).wait(timedelta(seconds=seconds))
        return None
    pending = {r: comm.Irecv(host.zeros(1, dtype=host.int8), source=r, tag=tag)
               for r in range(1, pg.size())}
    deadline = time.monotonic() + seconds
    while pending and time.monotonic() < deadline:
        for r in [r for r, req in pending.items() if req.Test()]:
            del pending[r]
        time.sleep(0.0005)
    if pending:
        late = sorted(pg._ranks[r] for r in pending)
        if wait_all_ranks:
            raise RuntimeError(f"Ranks {', '.join(map(str, late))} failed to pass "
                               f"monitoredBarrier in {timedelta(seconds=seconds)}")
        raise RuntimeError(f"Rank {late[0]} failed to pass monitoredBarrier in "
                           f"{timedelta(seconds=seconds)}")
    for r in range(1, pg.size()):
        comm.Send(token, dest=r, tag=tag)
    return None


# ------------------------------------------------------------------------ point to point
def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Send ``tensor`` to rank ``dst`` without waiting; don't change it until ``wait()``."""
    _check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        _not_member("isend")
        return None
    peer = _root(pg, dst, group_dst, "isend", "dst")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as "
                         "the rank of the current process.")
    send = _source(tensor)
    req = pg._comm.Isend(send, dest=peer, tag=tag)
    return Work([req], None, [tensor])  # (the request keeps a copied send buffer alive)


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Receive into ``tensor`` from rank ``src`` (any rank if None) without waiting."""
    _check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        _not_member("irecv")
        return None
    MPI = _mpi.mpi()
    peer = _root(pg, src, group_src, "irecv", "src")
    recv, own = _target(tensor)
    status = MPI.Status()
    req = pg._comm.Irecv(recv, source=MPI.ANY_SOURCE if peer < 0 else peer, tag=tag)
    work = Work([req], None, [tensor], status)

    def finish():
        work._source = pg._ranks[status.Get_source()]
        _store(tensor, recv, own)
    work._finish = finish
    return work


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it is sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank if None); the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    return work.source_rank()


class P2POp:
    """One send or receive for ``batch_isend_irecv`` (``torch.distributed.P2POp``)."""

    def __init__(self, op, tensor: Tensor, peer: int | None = None, group=None, tag: int = 0,
                 group_peer: int | None = None) -> None:
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        _check_tensor(tensor, "tensor")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Start every send and receive of the list; one ``Work`` per operation, in order."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return [w for w in works if w is not None]


# ----------------------------------------------------------------------- Python objects
def _obj_group(group, opname: str):
    pg = resolve(group)
    if pg is None:
        _not_member(opname)
    return pg


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace ``object_list``'s items on every rank with those of rank ``src`` (pickled)."""
    pg = _obj_group(group, "broadcast_object_list")
    if pg is None:
        return
    if src is None and group_src is None:
        group_src = 0
    root = _root(pg, src, group_src, "broadcast_object_list", "src")
    objs = pg._comm.bcast(list(object_list) if pg.rank() == root else None, root=root)
    if len(objs) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {pg._ranks[root]} sent {len(objs)} "
                         f"objects into a list of {len(object_list)}; the lists must be the "
                         "same length on every rank")
    object_list[:] = objs


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Fill ``object_list`` (one slot per rank) with every rank's ``obj``."""
    pg = _obj_group(group, "all_gather_object")
    if pg is None:
        return
    _count(pg, "all_gather_object", "object_list", object_list, pg.size())
    object_list[:] = pg._comm.allgather(obj)


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None,
                  group=None, group_dst: int | None = None) -> None:
    """Gather every rank's ``obj`` into ``object_gather_list`` on rank ``dst`` (default 0)."""
    pg = _obj_group(group, "gather_object")
    if pg is None:
        return
    if dst is None and group_dst is None:
        group_dst = 0
    root = _root(pg, dst, group_dst, "gather_object", "dst")
    if pg.rank() == root:
        if object_gather_list is None:
            raise ValueError("Argument ``object_gather_list`` must be specified on destination "
                             "rank.")
        _count(pg, "gather_object", "object_gather_list", object_gather_list, pg.size())
    got = pg._comm.gather(obj, root=root)
    if pg.rank() == root:
        object_gather_list[:] = got


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list=None,
                        src: int | None = None, group=None, group_src: int | None = None) -> None:
    """Put rank i's object from ``scatter_object_input_list`` on rank ``src`` into
    ``scatter_object_output_list[0]`` on rank i."""
    pg = _obj_group(group, "scatter_object_list")
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    if src is None and group_src is None:
        group_src = 0
    root = _root(pg, src, group_src, "scatter_object_list", "src")
    items = None
    if pg.rank() == root:
        _count(pg, "scatter_object_list", "scatter_object_input_list",
               scatter_object_input_list or [], pg.size())
        items = list(scatter_object_input_list)
    scatter_object_output_list[0] = pg._comm.scatter(items, root=root)


def send_object_list(object_list: list, dst: int | None = None, group=None, device=None,
                     group_dst: int | None = None, use_batch: bool = False) -> None:
    """Send the objects of ``object_list`` to rank ``dst`` (pickled)."""
    pg = _obj_group(group, "send_object_list")
    if pg is None:
        return
    peer = _root(pg, dst, group_dst, "send_object_list", "dst")
    pg._comm.send(pickle.dumps(list(object_list)), dest=peer, tag=0x0B7)


def recv_object_list(object_list: list, src: int | None = None, group=None, device=None,
                     group_src: int | None = None, use_batch: bool = False) -> int:
    """Receive objects from rank ``src`` (any if None) into ``object_list``; the sender's
    rank."""
    pg = _obj_group(group, "recv_object_list")
    if pg is None:
        return -1
    MPI = _mpi.mpi()
    peer = _root(pg, src, group_src, "recv_object_list", "src")
    status = MPI.Status()
    data = pg._comm.recv(source=MPI.ANY_SOURCE if peer < 0 else peer, tag=0x0B7, status=status)
    objs = pickle.loads(data)
    object_list[:len(objs)] = objs
    return pg._ranks[status.Get_source()]

