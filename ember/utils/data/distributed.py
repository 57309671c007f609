"""``DistributedSampler``, as ``torch.utils.data.distributed``: each replica's share of a dataset.

Every replica builds the same index list (shuffled with the same seed and epoch), pads or trims it
to a multiple of ``num_replicas``, and keeps every ``num_replicas``-th index from ``rank`` on.
Un-shuffled orders are torch's exactly; shuffled orders come from ember's generators (NumPy's
PCG64), so they are reproducible and agree across ranks, but are not the orders torch gives.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sized

from ... import random as _random
from ...ops.creation import randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Restricts loading to the indices of one replica (``rank``) of ``num_replicas``.

    Follows ``torch.utils.data.DistributedSampler``: without ``drop_last``, each replica gets
    ``ceil(len(dataset) / num_replicas)`` indices and the list is padded by repeating indices
    from its start; with ``drop_last``, each gets ``len(dataset) // num_replicas`` and the tail is
    dropped. ``num_replicas`` and ``rank`` default to the default process group's world size and
    rank. With ``shuffle``, the order is a permutation drawn from a generator seeded with
    ``seed + epoch``: call :meth:`set_epoch` before each epoch to get a new order.
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            # imported here, not at module level: ember.utils.data must not load the MPI layer
            from ... import distributed as dist
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        # torch writes ceil((len - num_replicas) / num_replicas) for drop_last when len is not a
        # multiple of num_replicas: that is len // num_replicas, in exact integer arithmetic.
        n = len(dataset)
        self.num_samples = n // num_replicas if drop_last else -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:  # the same seed and epoch give every rank the same permutation
            generator = _random.Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        elif n < self.total_size:  # pad by repeating the list from its start, as often as needed
            indices = list(itertools.islice(itertools.cycle(indices), self.total_size))
        if len(indices) != self.total_size:  # the dataset changed size since __init__
            raise AssertionError(f"Number of indices ({len(indices)}) does not match "
                                 f"total_size ({self.total_size})")
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that, with ``seed``, seeds the shuffle (``torch``'s ``set_epoch``).

        With ``shuffle=True`` this gives every replica the same new order for this epoch;
        without it, every epoch yields the same order.
        """
        self.epoch = epoch
