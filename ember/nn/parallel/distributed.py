"""``DistributedDataParallel``: one model replica per process, gradients averaged over MPI.

As in torch, the replicas start equal (rank 0's parameters and buffers are broadcast at
construction), each rank runs forward and backward on its own batch, and backward averages
the gradients across ranks so every optimizer step is the same everywhere.

The averaging overlaps backward the way torch's reducer does:

* Parameters are put into buckets in reverse registration order (the order their gradients
  tend to arrive), the first bucket capped at 1 MiB and the rest at ``bucket_cap_mb``
  (25 MiB by default), one dtype per bucket.
* A post-accumulate-grad hook on each parameter marks it ready. When every parameter of a
  bucket is ready, its gradients are copied into the bucket's flat buffer and a non-blocking
  ``MPI_Iallreduce`` starts, while backward goes on computing earlier layers. Buckets start in
  index order on every rank, because MPI needs the same collective order everywhere.
* A callback queued on the engine runs when backward finishes: it starts any bucket still
  waiting (with ``find_unused_parameters``, unused parameters count as zeros), waits for every
  all-reduce and writes the averages into ``.grad``, all before ``backward()`` returns.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref

from ..._backend import device_of, host, ndarray, to_device_array, to_host
from ..._tensor import _make
from ...autograd import engine
from ...autograd.grad_mode import is_grad_enabled
from ...distributed import _group, _mpi
from ...distributed.collectives import Work
from ..modules.module import Module

_MIB = 1024 * 1024
_FIRST_BUCKET_BYTES = _MIB  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES


class _Bucket:
    """Parameters (by index) whose gradients travel in one all-reduce, and its flat buffer."""

    __slots__ = ("buffer", "offsets", "params", "pending", "work")

    def __init__(self, params: list[int], sizes: list[int], dtype) -> None:
        self.params = params
        self.offsets = [sum(sizes[:k]) for k in range(len(sizes) + 1)]
        self.buffer = host.empty(self.offsets[-1], dtype=dtype)
        self.pending = len(params)
        self.work = None


class DistributedDataParallel(Module):
    """torch's ``nn.parallel.DistributedDataParallel`` for CPU modules, on MPI.

    ``module`` is the wrapped model (``state_dict`` keys get torch's ``module.`` prefix).
    ``no_sync()`` accumulates gradients locally; ``find_unused_parameters=True`` lets a
    forward pass leave parameters out of the loss. ``device_ids``/``output_device`` must be
    None (CPU), as torch requires for CPU modules. ``gradient_as_bucket_view`` and
    ``static_graph`` are accepted; gradients are always copied out of the buckets.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool | None = None, init_sync: bool = True,
                 process_group=None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params: bool = False, bucket_cap_mb_list=None,
                 batched_grad_copy: bool = False,
                 forward_sync_buffers: bool | None = None) -> None:
        super().__init__()
        if device_mesh is not None or mixed_precision is not None or \
                delay_all_reduce_named_params is not None:
            raise NotImplementedError("DistributedDataParallel: device_mesh, mixed_precision "
                                      "and delay_all_reduce_named_params are not supported by "
                                      "ember")
        self.process_group = _group.resolve(process_group)
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self.parameters_to_ignore = ignore
        named = [(n, p) for n, p in module.named_parameters() if n not in ignore]
        if not any(p.requires_grad for _, p in named):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        if device_ids or output_device:  # (torch's test: output_device=0 passes)
            devices = {p.device for _, p in named}
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters "
                f"{devices}.")
        if broadcast_buffers is not None:
            warnings.warn(
                "Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                "`broadcast_buffers` is deprecated and its value is ignored when "
                "`forward_sync_buffers` is provided." if forward_sync_buffers is not None else
                "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. "
                "IMPORTANT: unlike `broadcast_buffers=False`, `forward_sync_buffers=False` still "
                "syncs buffers at init. If you rely on buffers NOT being synced at init (e.g. "
                "rank-local buffers), keep using `broadcast_buffers=False` until "
                "`init_sync_buffers` is available.", FutureWarning, stacklevel=2)
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module "
                          "is deprecated. Please avoid using it.", FutureWarning, stacklevel=2)
        if forward_sync_buffers is not None:  # as torch: buffers are still synced at init
            self.forward_sync_buffers, init_buffers = forward_sync_buffers, True
        else:
            self.forward_sync_buffers = init_buffers = \
                True if broadcast_buffers is None else broadcast_buffers
        self.module = module
        self.device_ids = self.output_device = None
        self.dim = dim
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * _MIB)
        self._world = self.process_group.size()
        if init_sync and self._world > 1:
            _broadcast_coalesced([p for _, p in named] +
                                 ([b for n, b in module.named_buffers() if n not in ignore]
                                  if init_buffers else []), self.process_group)
        trainable = [(n, p) for n, p in named if p.requires_grad]
        self._names = [n for n, _ in trainable]
        self._params = [p for _, p in trainable]
        self._buckets = self._assign_buckets()
        self._bucket_of = [0] * len(self._params)
        for b, bucket in enumerate(self._buckets):
            for i in bucket.params:
                self._bucket_of[i] = b
        self._reset()
        self._unreduced: list[str] = []
        ref = weakref.ref(self)  # the parameters' hooks must not keep the wrapper alive
        self._hook_handles = [p.register_post_accumulate_grad_hook(_grad_ready_hook(ref, i))
                              for i, p in enumerate(self._params)]

    @property
    def broadcast_buffers(self) -> bool:
        """torch's deprecated name for ``forward_sync_buffers``."""
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    # -------------------------------------------------------------------- buckets
    def _assign_buckets(self) -> list[_Bucket]:
        """Reverse registration order, one dtype per bucket, the first capped at 1 MiB."""
        buckets: list[_Bucket] = []
        open_: dict = {}  # dtype -> (indices, sizes, bytes)
        cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        for i in reversed(range(len(self._params))):
            arr = self._params[i]._data
            idx, sizes, nbytes = open_.setdefault(arr.dtype, ([], [], [0]))
            idx.append(i)
            sizes.append(arr.size)
            nbytes[0] += arr.nbytes
            if nbytes[0] >= cap:
                buckets.append(_Bucket(idx, sizes, arr.dtype))
                del open_[arr.dtype]
                cap = self.bucket_bytes_cap
        for dtype, (idx, sizes, _) in open_.items():
            buckets.append(_Bucket(idx, sizes, dtype))
        return buckets

    def _reset(self, armed: bool = False) -> None:
        # armed: a forward with gradient sync on has run since the last reduction; as in
        # torch, only the first backward after such a forward is averaged
        self._armed = armed
        self._ready = [False] * len(self._params)
        for bucket in self._buckets:
            bucket.pending = len(bucket.params)
            bucket.work = None
        self._next_bucket = 0
        self._in_backward = False

    def _grad_ready(self, i: int) -> None:
        if not self._armed or self._ready[i]:
            return
        if not self._in_backward:
            self._in_backward = True
            engine.queue_callback(self._finish_reduction)
        self._ready[i] = True
        bucket = self._buckets[self._bucket_of[i]]
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready()
        elif self._next_bucket:
            self._buckets[self._next_bucket - 1].work.is_completed()  # moves MPI along

    def _launch_ready(self) -> None:
        buckets = self._buckets
        while self._next_bucket < len(buckets) and buckets[self._next_bucket].pending == 0:
            self._launch(buckets[self._next_bucket])
            self._next_bucket += 1

    def _launch(self, bucket: _Bucket) -> None:
        buf, offs = bucket.buffer, bucket.offsets
        for k, i in enumerate(bucket.params):
            grad = self._params[i].grad
            if grad is None:
                buf[offs[k]:offs[k + 1]] = 0
            else:
                buf[offs[k]:offs[k + 1]] = to_host(grad._data).reshape(-1)
        comm = self.process_group._comm
        bucket.work = Work([comm.Iallreduce(_mpi.mpi().IN_PLACE, buf)])

    def _finish_reduction(self) -> None:
        """End of backward: start what is left, wait for it all, write the averages."""
        try:
            unused = [i for i, r in enumerate(self._ready) if not r]
            if unused and not self.find_unused_parameters:
                # torch reports this at the next forward; the reductions started are finished
                self._unreduced = [self._names[i] for i in unused]
                launched = self._buckets[:self._next_bucket]
            else:
                for i in unused:
                    self._buckets[self._bucket_of[i]].pending -= 1
                self._launch_ready()
                launched = self._buckets
            used = self._globally_used(unused) if self.find_unused_parameters else None
            scale = 1.0 / self._world
            for bucket in launched:
                bucket.work.wait()
                buf, offs = bucket.buffer, bucket.offsets
                for k, i in enumerate(bucket.params):
                    p = self._params[i]
                    if used is not None and not used[i]:
                        continue  # unused on every rank: its .grad stays as it was
                    avg = buf[offs[k]:offs[k + 1]].reshape(p._data.shape)
                    g = p.grad
                    if g is not None and type(g._data) is ndarray and g._data.flags.writeable:
                        host.multiply(avg, scale, out=g._data)  # in place, as torch's
                        g._vc[0] += 1
                    else:
                        p.grad = _make(to_device_array(avg * scale, device_of(p._data)))
        finally:
            self._reset()

    def _globally_used(self, unused: list[int]) -> list[bool]:
        """Which parameters received a gradient on some rank (an all-reduce of flags)."""
        flags = host.ones(len(self._params), dtype=host.int32)
        flags[unused] = 0
        self.process_group._comm.Allreduce(_mpi.mpi().IN_PLACE, flags, op=_mpi.mpi().MAX)
        return [bool(f) for f in flags]

    # -------------------------------------------------------------------- forward
    def forward(self, *inputs, **kwargs):
        if self._unreduced:
            names, self._unreduced = self._unreduced, []
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss.\nParameters which did not "
                f"receive grad for rank {self.process_group.rank()}: {', '.join(names)}")
        if self.forward_sync_buffers and self._world > 1 and \
                self.require_forward_param_sync:
            buffers = [b for n, b in self.module.named_buffers()
                       if n not in self.parameters_to_ignore]
            if buffers:
                _broadcast_coalesced(buffers, self.process_group)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._reset(armed=True)
            sync_next = True
        else:  # as torch: a forward under no_grad or no_sync skips the next buffer sync
            sync_next = False
        out = self.module(*inputs, **kwargs)
        self.require_forward_param_sync = sync_next
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without all-reducing them; the
        backward of the first forward run outside it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def join(self, *args, **kwargs):
        raise NotImplementedError("DistributedDataParallel.join (uneven numbers of batches per "
                                  "rank) is not supported by ember; give every rank the same "
                                  "number of batches, e.g. with DistributedSampler")

    def register_comm_hook(self, state, hook) -> None:
        raise NotImplementedError("DistributedDataParallel.register_comm_hook is not supported "
                                  "by ember: gradients are always averaged with an all-reduce")

    def _get_ddp_logging_data(self) -> dict:
        return {"bucket_sizes": [b.offsets[-1] * b.buffer.itemsize for b in self._buckets],
                "world_size": self._world, "find_unused_parameters":
                self.find_unused_parameters}


def _grad_ready_hook(ref, i: int):
    def hook(param) -> None:
        ddp = ref()
        if ddp is not None:
            ddp._grad_ready(i)
    return hook


def _broadcast_coalesced(tensors: list, pg) -> None:
    """Broadcast ``tensors`` from the group's rank 0, one message per dtype."""
    by_dtype: dict = {}
    for t in tensors:
        by_dtype.setdefault(t._data.dtype, []).append(t)
    for dtype, ts in by_dtype.items():
        flat = host.concatenate([to_host(t._data).reshape(-1) for t in ts])
        pg._comm.Bcast(flat.view(host.uint16) if dtype.kind == "V" else flat, root=0)
        start = 0
        for t in ts:
            a = t._data
            a[...] = to_device_array(flat[start:start + a.size].reshape(a.shape), device_of(a))
            t._vc[0] += 1
            start += a.size
