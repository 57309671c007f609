"""``ember.utils.data`` against ``torch.utils.data``.

Non-random behaviour (datasets, sequential loading, batching, collation, errors) is compared
with torch exactly. ember's random streams are NumPy's, so shuffled orders are checked by
construction (permutations, ranges, reproducibility with seeds and generators) and statistically.
"""

from __future__ import annotations

import collections
import math
import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)

Point = collections.namedtuple("Point", ["x", "y"])


# --- helpers ---------------------------------------------------------------------------------

def same(e, t, torch) -> None:
    """Assert that an ember structure equals a torch one: types, dtypes, shapes, values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"expected a tensor, got {type(e)}"
        assert str(e.dtype) == str(t.dtype)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_array_equal(e.cpu().numpy(), t.cpu().numpy())
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t)
        for k in t:
            same(e[k], t[k], torch)
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), (type(e), type(t))
        for a, b in zip(e, t):
            same(a, b, torch)
    else:
        assert type(e) is type(t) and e == t


def to_torch(x, torch):
    """The same sample structure with ember tensors replaced by torch tensors."""
    if isinstance(x, ember.Tensor):
        return torch.from_numpy(x.cpu().numpy().copy())
    if isinstance(x, dict):
        return {k: to_torch(v, torch) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(to_torch(v, torch) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch(v, torch) for v in x)
    return x


def raises_like(torch_fn, ember_fn):
    """Both raise the same exception type with the same message."""
    with pytest.raises(Exception) as t_err:
        torch_fn()
    with pytest.raises(t_err.type) as e_err:
        ember_fn()
    assert str(e_err.value) == str(t_err.value)


def both_datasets(torch, items):
    """A plain map-style dataset in each library over the same (ember-built) items."""

    class EmberDS(Dataset):
        def __getitem__(self, i):
            return items[i]

        def __len__(self):
            return len(items)

    class TorchDS(torch.utils.data.Dataset):
        def __getitem__(self, i):
            return to_torch(items[i], torch)

        def __len__(self):
            return len(items)

    return EmberDS(), TorchDS()


class Range(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = math.ceil((self.end - self.start) / info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))

    def __len__(self):
        return self.end - self.start


class Squares(Dataset):
    def __getitem__(self, i):
        return {"i": i, "sq": ember.tensor([float(i * i)])}

    def __len__(self):
        return 10


class Failing(Dataset):
    def __getitem__(self, i):
        if i == 3:
            raise KeyError("bad index 3")
        return i

    def __len__(self):
        return 6


# --- datasets --------------------------------------------------------------------------------

def test_tensor_dataset_indexes_along_first_dim():
    x, y = ember.arange(12.0).reshape(6, 2), ember.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    np.testing.assert_array_equal(a.cpu().numpy(), [8.0, 9.0])
    assert b.item() == 4
    assert ds.tensors[0] is x


def test_tensor_dataset_size_mismatch(torch):
    raises_like(lambda: torch.utils.data.TensorDataset(torch.zeros(3), torch.zeros(4)),
                lambda: TensorDataset(ember.zeros(3), ember.zeros(4)))


def test_base_dataset_getitem_not_implemented(torch):
    raises_like(lambda: torch.utils.data.Dataset()[0], lambda: Dataset()[0])


def test_dataset_add_is_concat_with_cumulative_sizes(torch):
    a, b, c = TensorDataset(ember.arange(3)), TensorDataset(ember.arange(10, 15)), \
        TensorDataset(ember.arange(20, 22))
    ta, tb, tc = (torch.utils.data.TensorDataset(torch.arange(3)),
                  torch.utils.data.TensorDataset(torch.arange(10, 15)),
                  torch.utils.data.TensorDataset(torch.arange(20, 22)))
    cat, tcat = a + b + c, ta + tb + tc
    assert isinstance(a + b, ConcatDataset)
    assert (a + b).cumulative_sizes == (ta + tb).cumulative_sizes == [3, 8]
    flat = ConcatDataset([a, b, c])
    assert flat.cumulative_sizes == torch.utils.data.ConcatDataset([ta, tb, tc]).cumulative_sizes
    assert len(cat) == len(tcat) == 10
    for i in range(-10, 10):
        assert cat[i][0].item() == tcat[i][0].item()
        assert flat[i][0].item() == tcat[i][0].item()
    raises_like(lambda: tcat[-11], lambda: cat[-11])
    raises_like(lambda: torch.utils.data.ConcatDataset([]), lambda: ConcatDataset([]))


def test_concat_rejects_iterable_and_chain_joins_streams(torch):
    raises_like(lambda: torch.utils.data.IterableDataset(), lambda: IterableDataset())
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Range(0, 2)])
    chained = Range(0, 3) + Range(10, 12)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 2, 10, 11]
    assert len(chained) == 5


def test_subset_and_getitems():
    base = TensorDataset(ember.arange(10) * 10)
    sub = Subset(base, [7, 2, 5])
    assert len(sub) == 3
    assert sub[0][0].item() == 70
    assert [s[0].item() for s in sub.__getitems__([2, 0])] == [50, 70]


def test_subset_subclass_overriding_getitem_only(torch):
    def make(base):
        class MySubset(base):
            def __getitem__(self, i):
                return 0
        return MySubset

    raises_like(lambda: make(torch.utils.data.Subset)([1, 2], [0]),
                lambda: make(Subset)([1, 2], [0]))


def test_stack_dataset_tuple_and_dict(torch):
    a, b = TensorDataset(ember.arange(4)), Squares()
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, b)
    s = StackDataset(a, a)
    assert len(s) == 4 and s[2][1][0].item() == 2
    d = StackDataset(left=a, right=a)
    assert list(d[1]) == ["left", "right"]
    raises_like(lambda: torch.utils.data.StackDataset(), lambda: StackDataset())
    raises_like(lambda: torch.utils.data.StackDataset([1], x=[1]),
                lambda: StackDataset([1], x=[1]))


@pytest.mark.parametrize("n, lengths", [(10, [3, 7]), (10, [0.3, 0.3, 0.4]), (11, [0.5, 0.5]),
                                        (7, [0.2, 0.3, 0.5]), (30, [0.1] * 10), (5, [5, 0])])
def test_random_split_lengths_match_torch(torch, n, lengths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_parts = torch.utils.data.random_split(range(n), lengths)
        e_parts = random_split(range(n), lengths, generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in e_parts] == [len(p) for p in t_parts]
    indices = sorted(i for p in e_parts for i in p.indices)
    assert indices == list(range(n))  # disjoint and covering
    assert all(isinstance(p, Subset) for p in e_parts)


def test_random_split_reproducible_with_generator_and_manual_seed():
    def split(gen=None):
        args = {} if gen is None else {"generator": gen}
        return [p.indices for p in random_split(range(50), [0.5, 0.5], **args)]

    assert split(ember.Generator().manual_seed(3)) == split(ember.Generator().manual_seed(3))
    assert split(ember.Generator().manual_seed(3)) != split(ember.Generator().manual_seed(4))
    ember.manual_seed(11)
    first = split()
    ember.manual_seed(11)
    assert split() == first


def test_random_split_errors_and_warnings(torch):
    raises_like(lambda: torch.utils.data.random_split(range(10), [3, 3]),
                lambda: random_split(range(10), [3, 3]))
    raises_like(lambda: torch.utils.data.random_split(range(10), [1.5, -0.5]),
                lambda: random_split(range(10), [1.5, -0.5]))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [1.0, 0.0])


# --- samplers --------------------------------------------------------------------------------

def test_sequential_sampler(torch):
    assert list(SequentialSampler(range(7))) == list(torch.utils.data.SequentialSampler(range(7)))
    assert len(SequentialSampler(range(7))) == 7


@pytest.mark.parametrize("n, batch_size, drop_last", [(10, 3, False), (10, 3, True),
                                                       (9, 3, True), (2, 5, False),
                                                       (2, 5, True), (0, 2, False)])
def test_batch_sampler_matches_torch(torch, n, batch_size, drop_last):
    e = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    t = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)), batch_size,
                                      drop_last)
    assert list(e) == list(t)
    assert len(e) == len(t)


def test_batch_sampler_errors(torch):
    for bs, dl in ((0, False), (2.0, False), (True, False), (2, 1)):
        raises_like(lambda bs=bs, dl=dl: torch.utils.data.BatchSampler(range(3), bs, dl),
                    lambda bs=bs, dl=dl: BatchSampler(range(3), bs, dl))


def test_random_sampler_is_a_permutation_and_reproducible():
    g = ember.Generator().manual_seed(0)
    s = RandomSampler(range(20), generator=g)
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(20))
    assert first != second  # the generator advances between passes
    again = RandomSampler(range(20), generator=ember.Generator().manual_seed(0))
    assert list(again) == first
    ember.manual_seed(5)
    unseeded = list(RandomSampler(range(20)))
    ember.manual_seed(5)
    assert list(RandomSampler(range(20))) == unseeded


def test_random_sampler_num_samples_without_replacement():
    s = RandomSampler(range(5), num_samples=12, generator=ember.Generator().manual_seed(1))
    out = list(s)
    assert len(out) == len(s) == 12
    assert sorted(out[:5]) == sorted(out[5:10]) == list(range(5))  # whole permutations first
    assert len(set(out[10:])) == 2


def test_random_sampler_with_replacement():
    s = RandomSampler(range(4), replacement=True, num_samples=1000,
                      generator=ember.Generator().manual_seed(2))
    out = list(s)
    assert len(out) == 1000 and set(out) == {0, 1, 2, 3}
    counts = np.bincount(out, minlength=4)
    assert np.all(np.abs(counts - 250) < 5 * math.sqrt(1000 * 0.25 * 0.75))


def test_random_sampler_is_uniform_over_positions():
    # each element lands in each position about equally often over many passes
    n, passes = 5, 4000
    s = RandomSampler(range(n), generator=ember.Generator().manual_seed(7))
    counts = np.zeros((n, n))
    for _ in range(passes):
        for pos, v in enumerate(s):
            counts[v, pos] += 1
    expected = passes / n
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 60  # (n-1)^2 = 16 degrees of freedom: p < 1e-6 beyond 60


def test_random_sampler_errors(torch):
    raises_like(lambda: torch.utils.data.RandomSampler(range(3), replacement=1),
                lambda: RandomSampler(range(3), replacement=1))
    raises_like(lambda: torch.utils.data.RandomSampler(range(3), num_samples=0),
                lambda: RandomSampler(range(3), num_samples=0))
    raises_like(lambda: torch.utils.data.RandomSampler([]), lambda: RandomSampler([]))


def test_subset_random_sampler():
    idx = [3, 9, 4, 12]
    s = SubsetRandomSampler(idx, generator=ember.Generator().manual_seed(0))
    assert sorted(s) == sorted(idx) and len(s) == 4


def test_weighted_random_sampler_frequencies():
    w = [0.0, 1.0, 3.0]
    s = WeightedRandomSampler(w, 4000, generator=ember.Generator().manual_seed(0))
    out = list(s)
    assert len(out) == len(s) == 4000 and 0 not in out
    frac = out.count(2) / 4000
    assert abs(frac - 0.75) < 5 * math.sqrt(0.75 * 0.25 / 4000)
    no_rep = list(WeightedRandomSampler([1, 1, 1, 1, 5], 5, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3, 4]
    assert str(s.weights.dtype) == "torch.float64"


def test_weighted_random_sampler_errors(torch):
    for args in (([1.0, 2.0], 0), ([1.0, 2.0], True), ([1.0, 2.0], 2, 1), ([[1.0], [2.0]], 2)):
        raises_like(lambda a=args: torch.utils.data.WeightedRandomSampler(*a),
                    lambda a=args: WeightedRandomSampler(*a))


# --- collation -------------------------------------------------------------------------------

COLLATE_CASES = {
    "ints": lambda lib: [0, 1, 2, 3],
    "floats": lambda lib: [0.5, 1.0, -2.0],
    "bools": lambda lib: [True, False],
    "strings": lambda lib: ["a", "b"],
    "bytes": lambda lib: [b"a", b"b"],
    "tensors": lambda lib: [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
    "int_tensors": lambda lib: [lib.tensor(1), lib.tensor(2)],
    "np_arrays": lambda lib: [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    "np_int_arrays": lambda lib: [np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)],
    "np_scalars": lambda lib: [np.float32(1.5), np.float32(2.5)],
    "np_int_scalars": lambda lib: [np.int64(1), np.int64(2)],
    "np_bools": lambda lib: [np.bool_(True), np.bool_(False)],
    "tuples": lambda lib: [(0, 1.0, "a"), (2, 3.0, "b")],
    "lists": lambda lib: [[0, 1], [2, 3]],
    "dicts": lambda lib: [{"A": 0, "B": lib.tensor([1.0])}, {"A": 100, "B": lib.tensor([2.0])}],
    "namedtuples": lambda lib: [Point(0, 0.0), Point(1, 1.0)],
    "nested": lambda lib: [{"x": (lib.tensor([1, 2]), [1.0, 2]), "y": "s"},
                           {"x": (lib.tensor([3, 4]), [3.0, 4]), "y": "t"}],
}


@pytest.mark.parametrize("case", sorted(COLLATE_CASES))
def test_default_collate_matches_torch(torch, case):
    make = COLLATE_CASES[case]
    same(default_collate(make(ember)), torch.utils.data.default_collate(make(torch)), torch)


@pytest.mark.parametrize("case", sorted(COLLATE_CASES))
def test_default_convert_matches_torch(torch, case):
    make = COLLATE_CASES[case]
    for e, t in zip(make(ember), make(torch)):
        same(default_convert(e), torch.utils.data.default_convert(t), torch)


def test_default_collate_errors(torch):
    for batch in ([object(), object()], [[1, 2], [3]],
                  [np.array(["a"]), np.array(["b"])]):
        raises_like(lambda b=batch: torch.utils.data.default_collate(b),
                    lambda b=batch: default_collate(b))


def test_default_convert_leaves_string_arrays():
    a = np.array(["x", "y"])
    assert default_convert(a) is a


# --- DataLoader: deterministic loading compared with torch -----------------------------------

def loaders(torch, items, **kwargs):
    e_ds, t_ds = both_datasets(torch, items)
    return DataLoader(e_ds, **kwargs), torch.utils.data.DataLoader(t_ds, **kwargs)


ITEMS = [(ember.tensor([float(i), -float(i)]), i, float(i) / 2) for i in range(10)]


@pytest.mark.parametrize("kwargs", [{}, {"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                                    {"batch_size": 4}, {"batch_size": None},
                                    {"batch_size": 20}, {"sampler": [9, 0, 4]},
                                    {"batch_size": 2, "sampler": range(9, -1, -1)},
                                    {"batch_sampler": [[0, 1, 2], [5], [9, 8]]},
                                    {"batch_size": 5, "collate_fn": lambda b: len(b)}])
def test_dataloader_matches_torch(torch, kwargs):
    e, t = loaders(torch, ITEMS, **kwargs)
    assert len(e) == len(t)
    e_batches, t_batches = list(e), list(t)
    assert len(e_batches) == len(t_batches)
    for eb, tb in zip(e_batches, t_batches):
        same(eb, tb, torch)


def test_dataloader_tensor_dataset(torch):
    x = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    y = np.arange(10)
    e = DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y)), batch_size=4)
    t = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=4)
    for eb, tb in zip(e, t, strict=True):
        same(eb, tb, torch)


def test_dataloader_dict_samples_and_getitems(torch):
    calls = []

    class Batched(Squares):
        def __getitems__(self, indices):
            calls.append(list(indices))
            return [self[i] for i in indices]

    batches = list(DataLoader(Batched(), batch_size=4))
    assert calls == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(batches[0]) == ["i", "sq"]
    np.testing.assert_array_equal(batches[2]["i"].cpu().numpy(), [8, 9])
    assert tuple(batches[2]["sq"].shape) == (2, 1)


@pytest.mark.parametrize("kwargs", [{}, {"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                                    {"batch_size": None}, {"batch_size": 7}])
def test_dataloader_iterable_dataset_matches_torch(torch, kwargs):
    class TRange(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3, 10))

        def __len__(self):
            return 7

    e = DataLoader(Range(3, 10), **kwargs)
    t = torch.utils.data.DataLoader(TRange(), **kwargs)
    assert len(e) == len(t)
    for eb, tb in zip(e, t, strict=True):
        same(eb, tb, torch)


def test_dataloader_iterable_len_warning():
    class Long(Range):
        def __len__(self):
            return 2

    loader = DataLoader(Long(0, 4))
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(loader)


def test_dataloader_argument_errors(torch):
    tds, eds = torch.utils.data.TensorDataset(torch.arange(4)), TensorDataset(ember.arange(4))
    eiter = Range(0, 3)
    for kwargs in ({"num_workers": -1}, {"timeout": -1}, {"prefetch_factor": 2},
                   {"num_workers": 1, "prefetch_factor": -1}, {"persistent_workers": True},
                   {"sampler": [0, 1], "shuffle": True},
                   {"batch_sampler": [[0]], "batch_size": 2},
                   {"batch_sampler": [[0]], "drop_last": True},
                   {"batch_size": None, "drop_last": True},
                   {"multiprocessing_context": "spawn"},
                   {"num_workers": 1, "multiprocessing_context": "nope"}):
        raises_like(lambda kw=kwargs: torch.utils.data.DataLoader(tds, **kw),
                    lambda kw=kwargs: DataLoader(eds, **kw))
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got "
                       "shuffle=True"):
        DataLoader(eiter, shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(eiter, sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(eiter, batch_sampler=[[0]])
    tl, el = torch.utils.data.DataLoader(tds), DataLoader(eds)
    raises_like(lambda: setattr(tl, "batch_size", 3), lambda: setattr(el, "batch_size", 3))
    el.num_workers = 0  # other attributes stay settable


def test_dataloader_pin_memory_warns_without_accelerator():
    with pytest.warns(UserWarning, match="no accelerator is found"):
        batches = list(DataLoader(TensorDataset(ember.arange(4)), batch_size=2, pin_memory=True))
    assert len(batches) == 2


# --- DataLoader: shuffling -------------------------------------------------------------------

def epoch_order(loader):
    return [v for (b,) in loader for v in b.tolist()]


def test_shuffle_gives_a_new_permutation_each_epoch():
    loader = DataLoader(TensorDataset(ember.arange(32)), batch_size=5, shuffle=True)
    assert len(loader) == 7
    a, b = epoch_order(loader), epoch_order(loader)
    assert sorted(a) == sorted(b) == list(range(32))
    assert a != b


def test_shuffle_reproducible_with_generator_and_manual_seed():
    ds = TensorDataset(ember.arange(32))

    def run(gen=None):
        return epoch_order(DataLoader(ds, batch_size=4, shuffle=True, generator=gen))

    assert run(ember.Generator().manual_seed(1)) == run(ember.Generator().manual_seed(1))
    assert run(ember.Generator().manual_seed(1)) != run(ember.Generator().manual_seed(2))
    ember.manual_seed(123)
    first = run()
    ember.manual_seed(123)
    assert run() == first


def test_shuffle_drop_last_keeps_full_batches():
    loader = DataLoader(TensorDataset(ember.arange(10)), batch_size=4, shuffle=True,
                        drop_last=True)
    batches = [b.tolist() for (b,) in loader]
    assert len(batches) == len(loader) == 2 and all(len(b) == 4 for b in batches)
    assert len(set(batches[0] + batches[1])) == 8


# --- DataLoader: worker processes ------------------------------------------------------------

def test_workers_give_the_single_process_batches_in_order():
    ds = TensorDataset(ember.arange(20.0).reshape(10, 2), ember.arange(10))
    single = list(DataLoader(ds, batch_size=3))
    multi = list(DataLoader(ds, batch_size=3, num_workers=2))
    assert len(single) == len(multi) == 4
    for (a, b), (c, d) in zip(single, multi):
        np.testing.assert_array_equal(a.cpu().numpy(), c.cpu().numpy())
        np.testing.assert_array_equal(b.cpu().numpy(), d.cpu().numpy())


def _record_worker(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    info.dataset.tag = worker_id


class Tagged(Dataset):
    tag = None

    def __getitem__(self, i):
        info = get_worker_info()
        return (i, self.tag, info.id, info.seed)

    def __len__(self):
        return 8


def test_workers_info_init_fn_and_seeds():
    assert get_worker_info() is None
    out = list(DataLoader(Tagged(), batch_size=None, num_workers=2, worker_init_fn=_record_worker,
                          generator=ember.Generator().manual_seed(0)))
    assert [o[0] for o in out] == list(range(8))
    assert all(o[1] == o[2] for o in out)  # worker_init_fn ran in each worker on its copy
    assert {o[2] for o in out} == {0, 1}
    seeds = {o[2]: o[3] for o in out}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker_id
    assert Tagged.tag is None


def test_workers_split_an_iterable_dataset():
    out = [b.tolist() for b in DataLoader(Range(0, 10), batch_size=2, num_workers=2)]
    assert sorted(v for b in out for v in b) == list(range(10))
    assert out[0] == [0, 1] and out[1] == [5, 6]  # batches alternate between the workers


def test_worker_exception_is_reraised_with_its_traceback():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(Failing(), batch_size=2, num_workers=2))


def test_persistent_workers_across_epochs_with_shuffle():
    ds = TensorDataset(ember.arange(12))
    loader = DataLoader(ds, batch_size=5, shuffle=True, num_workers=2, persistent_workers=True,
                        generator=ember.Generator().manual_seed(0))
    epochs = [epoch_order(loader) for _ in range(3)]
    assert all(sorted(e) == list(range(12)) for e in epochs)
    assert epochs[0] != epochs[1]
    it = loader._iterator
    assert it is not None and all(w.is_alive() for w in it._workers)
    it._shutdown_workers()
    assert not any(w.is_alive() for w in it._workers)


# --- a TensorDataset's batches, fetched as rows -----------------------------------------------

class _SampleBySample(TensorDataset):
    """A TensorDataset the DataLoader reads sample by sample (a subclass: no row fetch)."""


@pytest.mark.parametrize("batch_size, drop_last", [(4, False), (4, True), (5, False), (1, False)])
def test_tensor_dataset_batches_as_torch(torch, batch_size, drop_last):
    """Batches of a TensorDataset (fetched as rows at the batch's indices) as torch's: a list
    of stacked tensors, dtypes, shapes and values; and as the sample-by-sample path's."""
    x = np.arange(66, dtype=np.float32).reshape(11, 2, 3)
    y = np.arange(11) % 3
    loaders = [
        ember.utils.data.DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y)),
                                    batch_size=batch_size, drop_last=drop_last),
        ember.utils.data.DataLoader(_SampleBySample(ember.tensor(x), ember.tensor(y)),
                                    batch_size=batch_size, drop_last=drop_last),
    ]
    want = list(torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
        batch_size=batch_size, drop_last=drop_last))
    for loader in loaders:
        got = list(loader)
        assert len(got) == len(want)
        for e, t in zip(got, want):
            same(e, t, torch)


def test_tensor_dataset_rows_follow_the_sampler():
    """Shuffled, with a sampler drawing repeats, or a tensor that requires grad (sample by
    sample, as torch, so the batch's history is the stack's): the rows at the sampler's
    indices."""
    x = ember.arange(40.0).reshape(20, 2)
    ds = TensorDataset(x, ember.arange(20))
    gen = ember.Generator().manual_seed(3)
    batches = list(DataLoader(ds, batch_size=6, shuffle=True, generator=gen))
    order = [int(i) for b in batches for i in b[1]]
    assert sorted(order) == list(range(20))
    for xb, yb in batches:
        np.testing.assert_array_equal(xb.numpy(), x.numpy()[yb.numpy()])
    sampler = [[0, 0, 19, 3]]
    (xb, yb), = DataLoader(ds, batch_sampler=sampler)
    assert yb.tolist() == [0, 0, 19, 3] and xb.tolist() == [[0, 1], [0, 1], [38, 39], [6, 7]]
    w = ember.arange(6.0).reshape(3, 2).requires_grad_()
    (wb,), = DataLoader(TensorDataset(w), batch_size=3)
    assert wb.grad_fn.name() == "StackBackward0"


def test_tensor_dataset_batches_skip_the_samples(monkeypatch):
    """A plain TensorDataset under default_collate is read as rows, not sample by sample."""
    def no_samples(self, index):
        raise AssertionError("read sample by sample")

    monkeypatch.setattr(TensorDataset, "__getitem__", no_samples)
    (xb,), = DataLoader(TensorDataset(ember.arange(5.0)), batch_size=5)
    assert xb.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
