"""``DataLoader``, as ``torch.utils.data.DataLoader``: batches from a dataset, in sampler order.

Single-process loading (``num_workers=0``, the default) follows torch step for step: the
sampler (or ``BatchSampler``) yields indices, a fetcher reads the samples (through
``dataset.__getitems__`` when the dataset has one) and ``collate_fn`` assembles the batch.

``num_workers > 0`` is real multi-process loading with torch's design: ``num_workers`` worker
processes (``multiprocessing_context``, else Python's default start method), one index queue
each and a shared result queue; batches are handed out round-robin, ``prefetch_factor`` per
worker ahead, and yielded in sampler order. Each worker sets ``get_worker_info()``, seeds
``random``, NumPy's legacy global RNG and ember's default generator with ``base_seed +
worker_id``, limits NumPy's BLAS to one thread (torch's ``set_num_threads(1)`` in workers; see
``ember/_threads.py``), then calls ``worker_init_fn(worker_id)``. An exception in a worker is
raised again in the main process with the worker's traceback. An ``IterableDataset`` is
iterated by every worker (each has its own copy: split the stream with ``get_worker_info()``,
as in torch). ``persistent_workers=True`` keeps the workers alive between epochs. Batches
travel through pickling (no shared memory), so the dataset, samples and ``collate_fn`` must
pickle under the ``spawn`` start method. ``pin_memory`` is accepted and, with no accelerator,
warns as torch does and has no effect.

Shuffling draws from ember's generators (NumPy's PCG64): orders are reproducible with
``ember.manual_seed`` or ``generator=``, but differ from torch's for the same seed.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import queue
import random
import sys
import traceback
import warnings
from dataclasses import dataclass
from typing import Any

from ... import _threads, cuda
from ... import random as ember_random
from ..._backend import host
from ..._backend.dtypes import int64
from ...ops.creation import empty
from ._collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


# ---------------------------------------------------------------------------------------------
# worker information
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker process."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's ``id``, ``num_workers``, ``seed`` and ``dataset`` copy; ``None``
    in the main process."""
    return _worker_info


# ---------------------------------------------------------------------------------------------
# fetchers: from (batches of) indices to collated data, shared by both iterators
# ---------------------------------------------------------------------------------------------

class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        # a plain TensorDataset batched by default_collate: each batch is its tensors' rows at
        # the indices, in one indexing op each (what stacking the samples gives, the same
        # values, dtypes and shapes: a list, as default_collate makes of tuples). NOTE: 16
        # batches of 32 rows (512 x 32 float32 and int64 labels) took 4.4 ms a pass sample by
        # sample (torch: 1.7 ms), each ``t[i]`` a view op with its own Python overhead
        self.rows_at = type(dataset) is TensorDataset and collate_fn is default_collate and \
            auto_collation

    def fetch(self, possibly_batched_index):
        if self.rows_at and not any(t.requires_grad for t in self.dataset.tensors):
            index = list(possibly_batched_index)
            return [t[index] for t in self.dataset.tensors]
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            if getitems:
                data = getitems(possibly_batched_index)
            else:
                data = [self.dataset[idx] for idx in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


class _InfiniteConstantSampler(Sampler):
    """``itertools.repeat(None)``: the sampler of an ``IterableDataset``."""

    def __iter__(self):
        while True:
            yield None


# ---------------------------------------------------------------------------------------------
# DataLoader
# ---------------------------------------------------------------------------------------------

class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` (``None``: one sample at a time,
    no batch dimension), in sampler order, assembling each batch with ``collate_fn``."""

    __initialized = False

    def __init__(self, dataset: Dataset, batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler=None, batch_sampler=None,
                 num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid_start_methods = multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid_start_methods:
                        raise ValueError(
                            "multiprocessing_context option should specify a valid start method "
                            f"in {valid_start_methods!r}, but got "
                            f"multiprocessing_context={multiprocessing_context!r}")
                    multiprocessing_context = multiprocessing.get_context(
                        multiprocessing_context)
                if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                    raise TypeError("multiprocessing_context option should be a valid context "
                                    "object or a string specifying the start method, but got "
                                    f"multiprocessing_context={multiprocessing_context}")
            else:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                           "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


# ---------------------------------------------------------------------------------------------
# iterators
# ---------------------------------------------------------------------------------------------

class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory:
            if not cuda.is_available():
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                              "then device pinned memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # torch draws the workers' base seed here, from the loader's generator, every epoch
        self._base_seed = empty((), dtype=int64).random_(generator=loader.generator).item()
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable
                and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            warn_msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                        f"{self._IterableDataset_len_called}(when accessing len(dataloader)), "
                        f"but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                warn_msg += ("For multiprocessing data-loading, this could be caused by not "
                             "properly configuring the IterableDataset replica at each worker.")
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        return self._dataset_fetcher.fetch(index)  # may raise StopIteration


# --- multi-process loading -------------------------------------------------------------------

_POLL_S = 5.0  # how often a blocked side checks that the other side is still alive


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, where: str) -> None:
        exc_type, exc, _ = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001  an exception type whose constructor wants other arguments
            raise RuntimeError(msg) from None
        raise exception


class _IterableDatasetStopIteration:
    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at a new epoch: rebuild the fetcher, acknowledge."""


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, parent_pid):
    global _worker_info
    # as torch's set_num_threads(1) here: num_workers full BLAS pools would oversubscribe the
    # CPUs; before worker_init_fn, which may raise it again
    _threads.limit_worker_threads()
    seed = base_seed + worker_id
    random.seed(seed)
    ember_random.manual_seed(seed)
    host.random.seed(seed % 2**32)  # NumPy's global generator, as torch seeds it
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    init_exception = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn,
                                              drop_last)
    except Exception:  # noqa: BLE001 (carried to the main process)
        init_exception = _ExceptionWrapper(f"in DataLoader worker process {worker_id}")
    iteration_end = False
    try:
        while True:
            try:
                r = index_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if os.getppid() != parent_pid:  # the main process died: stop
                    break
                continue
            if r is None:  # shutdown
                break
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                if init_exception is None:
                    fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                          collate_fn, drop_last)
                continue
            if iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:  # noqa: BLE001 (carried to the main process)
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = _ExceptionWrapper(f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data
    except KeyboardInterrupt:
        pass
    data_queue.cancel_join_thread()
    data_queue.close()


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        ctx = loader.multiprocessing_context or multiprocessing
        self._worker_init_fn = loader.worker_init_fn
        self._data_queue = ctx.Queue()
        self._index_queues = []
        self._workers = []
        self._shutdown = False
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, daemon=True, args=(
                self._dataset_kind, self._dataset, index_queue, self._data_queue,
                self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                self._worker_init_fn, i, self._num_workers, os.getpid()))
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # next task to send to a worker
        self._rcvd_idx = 0  # next task to yield
        self._task_info = {}  # task -> (worker,) while pending, (worker, data) once out of order
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: rebuild their fetchers, wait for the acks
            for q in self._index_queues:
                q.put(_ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, round-robin
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                break
        else:
            return  # no active worker left
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        waited = 0.0
        while True:
            poll = min(_POLL_S, self._timeout) if self._timeout > 0 else _POLL_S
            try:
                return self._data_queue.get(timeout=poll)
            except queue.Empty:
                waited += poll
                dead = [str(w.pid) for w in self._workers if not w.is_alive()]
                if dead:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(dead)}) exited "
                                       "unexpectedly") from None
                if self._timeout > 0 and waited >= self._timeout:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} "
                                       "seconds") from None

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:  # skip tasks of exhausted workers
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier, out of order
                data = self._task_info.pop(self._rcvd_idx)[1]
                return self._process_data(data)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                return self._process_data(data)

    def _process_data(self, data):
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=_POLL_S)
            if w.is_alive():
                w.terminate()
        for q in self._index_queues:
            q.cancel_join_thread()
            q.close()
        self._data_queue.cancel_join_thread()
        self._data_queue.close()

    def __del__(self) -> None:
        if getattr(self, "_workers", None) is not None:
            self._shutdown_workers()
