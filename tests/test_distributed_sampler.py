"""``ember.utils.data.DistributedSampler`` against ``torch.utils.data.DistributedSampler``.

Un-shuffled orders, lengths and padding are compared with torch exactly. ember's random streams
are NumPy's, so shuffled orders are checked by construction: every rank draws the same
permutation for a seed and epoch, and the ranks together cover it, padded as torch pads.
"""

from __future__ import annotations

import importlib
import itertools
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
from conftest import requires_torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset

ROOT = Path(__file__).resolve().parent.parent

LENGTHS = [0, 1, 2, 3, 5, 7, 8, 9, 12, 16, 17]
REPLICAS = [1, 2, 3, 4, 8]


def per_rank(n: int, num_replicas: int, **kwargs) -> list[list[int]]:
    """Each rank's indices for a dataset of length ``n``."""
    return [list(DistributedSampler(range(n), num_replicas=num_replicas, rank=rank, **kwargs))
            for rank in range(num_replicas)]


def interleave(lists: list[list[int]]) -> list[int]:
    """The full index list the ranks were cut from: rank ``r`` holds ``full[r::num_replicas]``."""
    return [i for group in zip(*lists) for i in group]


def same_as_torch(torch, n: int, num_replicas: int, rank: int, **kwargs) -> None:
    mine = DistributedSampler(range(n), num_replicas=num_replicas, rank=rank, **kwargs)
    theirs = torch.utils.data.DistributedSampler(range(n), num_replicas=num_replicas, rank=rank,
                                                 **kwargs)
    assert (len(mine), mine.num_samples, mine.total_size) == (
        len(theirs), theirs.num_samples, theirs.total_size)
    if not kwargs.get("shuffle", True):
        assert list(mine) == list(theirs)


# --- unshuffled: exactly torch's ---------------------------------------------------------------

@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("num_replicas", REPLICAS)
@pytest.mark.parametrize("n", LENGTHS)
def test_unshuffled_indices_match_torch(torch, n, num_replicas, drop_last):
    for rank in range(num_replicas):
        same_as_torch(torch, n, num_replicas, rank, shuffle=False, drop_last=drop_last)


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("num_replicas", REPLICAS)
@pytest.mark.parametrize("n", LENGTHS)
def test_shuffled_lengths_match_torch(torch, n, num_replicas, drop_last):
    for rank in range(num_replicas):
        same_as_torch(torch, n, num_replicas, rank, shuffle=True, drop_last=drop_last)


def test_padding_repeats_the_list_when_it_is_shorter_than_the_padding(torch):
    # 2 indices over 7 replicas: 5 padding indices, the list repeated 3 times over
    assert interleave(per_rank(2, 7, shuffle=False)) == [0, 1, 0, 1, 0, 1, 0]
    same_as_torch(torch, 2, 7, 6, shuffle=False)


def test_drop_last_drops_the_tail_and_empty_datasets_give_nothing():
    assert per_rank(7, 3, shuffle=False, drop_last=True) == [[0, 3], [1, 4], [2, 5]]
    assert per_rank(2, 4, shuffle=False, drop_last=True) == [[], [], [], []]
    assert per_rank(0, 3, shuffle=False) == [[], [], []]


@requires_torch
@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 300), num_replicas=st.integers(1, 40), data=st.data(),
       drop_last=st.booleans(), shuffle=st.booleans())
def test_size_math_matches_torch(n, num_replicas, data, drop_last, shuffle):
    import torch
    rank = data.draw(st.integers(0, num_replicas - 1), label="rank")
    same_as_torch(torch, n, num_replicas, rank, shuffle=shuffle, drop_last=drop_last)


# --- shuffled: the same permutation on every rank ----------------------------------------------

@pytest.mark.parametrize("num_replicas", [1, 3, 4, 7])
@pytest.mark.parametrize("n", [1, 5, 12, 30])
def test_shuffled_ranks_cover_one_permutation_padded_as_torch_pads(n, num_replicas):
    full = interleave(per_rank(n, num_replicas, seed=3))
    perm = full[:n]
    assert sorted(perm) == list(range(n))  # every index at least once
    assert full == list(itertools.islice(itertools.cycle(perm), len(full)))  # torch's padding
    if n % num_replicas == 0:  # no padding: the ranks are disjoint
        assert len(full) == n


@pytest.mark.parametrize("num_replicas", [2, 3, 4])
def test_shuffled_drop_last_keeps_a_prefix_of_one_permutation(num_replicas):
    full = interleave(per_rank(11, num_replicas, seed=5, drop_last=True))
    assert len(full) == 11 // num_replicas * num_replicas
    assert len(set(full)) == len(full) and set(full) <= set(range(11))


def test_every_rank_draws_the_same_permutation_for_a_seed_and_epoch():
    samplers = [DistributedSampler(range(40), num_replicas=1, rank=0, seed=9) for _ in range(3)]
    for s in samplers:
        s.set_epoch(4)
    orders = [list(s) for s in samplers]
    assert orders[0] == orders[1] == orders[2]
    assert sorted(orders[0]) == list(range(40)) and orders[0] != list(range(40))


def test_set_epoch_changes_the_order_and_repeats_it_for_the_same_epoch():
    sampler = DistributedSampler(range(50), num_replicas=2, rank=1)
    first = list(sampler)
    assert list(sampler) == first  # no set_epoch: the same order every pass
    sampler.set_epoch(1)
    assert list(sampler) != first
    sampler.set_epoch(0)
    assert list(sampler) == first


def test_different_seeds_give_different_orders():
    orders = {seed: tuple(DistributedSampler(range(50), num_replicas=1, rank=0, seed=seed))
              for seed in range(4)}
    assert len(set(orders.values())) == 4


def test_shuffling_leaves_the_global_generator_alone():
    ember.manual_seed(0)
    expected = ember.rand(3).tolist()
    ember.manual_seed(0)
    list(DistributedSampler(range(20), num_replicas=2, rank=0))
    assert ember.rand(3).tolist() == expected


# --- with DataLoader ---------------------------------------------------------------------------

def test_dataloader_batches_match_torch_unshuffled(torch):
    for rank in range(3):
        mine = DataLoader(TensorDataset(ember.arange(10)), batch_size=2, sampler=DistributedSampler(
            range(10), num_replicas=3, rank=rank, shuffle=False))
        theirs = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.arange(10)), batch_size=2,
            sampler=torch.utils.data.DistributedSampler(range(10), num_replicas=3, rank=rank,
                                                        shuffle=False))
        assert [b.tolist() for (b,) in mine] == [b.tolist() for (b,) in theirs]
        assert len(mine) == len(theirs)


def test_dataloader_follows_the_shuffled_sampler_each_epoch():
    dataset = TensorDataset(ember.arange(100, 121))
    sampler = DistributedSampler(dataset, num_replicas=4, rank=2, seed=1)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        loaded = [x for (batch,) in loader for x in batch.tolist()]
        assert loaded == [100 + i for i in sampler]
        assert len(loaded) == len(sampler) == 6


# --- errors and defaults -----------------------------------------------------------------------

@pytest.mark.parametrize(("num_replicas", "rank"), [(4, 4), (4, -1), (1, 2), (0, 0)])
def test_invalid_rank_raises_torchs_error(torch, num_replicas, rank):
    with pytest.raises(ValueError, match=r"should be in the interval") as theirs:
        torch.utils.data.DistributedSampler(range(5), num_replicas=num_replicas, rank=rank)
    with pytest.raises(ValueError) as mine:
        DistributedSampler(range(5), num_replicas=num_replicas, rank=rank)
    assert str(mine.value) == str(theirs.value)
    assert str(mine.value) == (f"Invalid rank {rank}, rank should be in the interval "
                               f"[0, {num_replicas - 1}]")


def test_a_dataset_that_changed_size_is_an_error(torch):
    for make in (DistributedSampler, torch.utils.data.DistributedSampler):
        data = list(range(5))
        sampler = make(data, num_replicas=2, rank=0, shuffle=False)
        data.extend([5, 6])
        with pytest.raises(AssertionError, match="does not match total_size"):
            iter(sampler)


@pytest.fixture
def fake_dist(monkeypatch):
    """A stand-in ``ember.distributed``: world size 4, rank 3, available unless switched off."""
    fake = types.SimpleNamespace(is_available=lambda: True, get_world_size=lambda: 4,
                                 get_rank=lambda: 3)
    monkeypatch.setitem(sys.modules, "ember.distributed", fake)
    monkeypatch.setattr(ember, "distributed", fake, raising=False)
    return fake


def test_defaults_come_from_the_process_group(fake_dist):
    assert list(DistributedSampler(range(10), shuffle=False)) == [3, 7, 1]
    sampler = DistributedSampler(range(10), rank=0, shuffle=False)
    assert (sampler.num_replicas, sampler.rank) == (4, 0)
    sampler = DistributedSampler(range(10), num_replicas=8, shuffle=False)
    assert (sampler.num_replicas, sampler.rank) == (8, 3)


def test_defaults_without_the_distributed_package_raise(fake_dist):
    fake_dist.is_available = lambda: False
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        DistributedSampler(range(10))
    DistributedSampler(range(10), num_replicas=2, rank=0)  # explicit values need no package


def test_defaults_need_an_initialized_process_group(torch):
    try:
        dist = importlib.import_module("ember.distributed")
    except ImportError:
        dist = None
    if not hasattr(dist, "get_world_size"):
        pytest.skip("ember.distributed is not there yet")
    if not dist.is_available():
        with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
            DistributedSampler(range(5))
        return
    if dist.is_initialized():
        pytest.skip("a process group is initialized in this process")
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DistributedSampler(range(5))
    with pytest.raises(ValueError) as mine:
        DistributedSampler(range(5))
    assert str(mine.value) == str(theirs.value)
    assert "Default process group has not been initialized" in str(mine.value)


# --- imports -----------------------------------------------------------------------------------

def run_python(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_importing_data_does_not_load_ember_distributed():
    run_python("-c", textwrap.dedent("""
        import sys
        import ember.utils.data
        from ember.utils.data.distributed import DistributedSampler
        assert DistributedSampler is ember.utils.data.DistributedSampler
        assert ember.utils.data.distributed.DistributedSampler is DistributedSampler
        list(DistributedSampler(range(5), num_replicas=2, rank=0))
        loaded = [m for m in ("ember.distributed", "mpi4py") if m in sys.modules]
        assert not loaded, loaded
    """))


def test_torch_alias_imports_the_sampler():
    proc = run_python("-m", "ember", "-c", textwrap.dedent("""
        import ember
        from torch.utils.data.distributed import DistributedSampler
        from torch.utils.data import DistributedSampler as Exported
        import torch.utils.data.distributed
        assert DistributedSampler is Exported is ember.utils.data.DistributedSampler
        assert torch.utils.data.distributed is ember.utils.data.distributed
        print(list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False)))
    """))
    assert proc.stdout.strip() == "[1, 3, 0]"
