"""Op-table rows for the index-based ops of ``ember/ops/gather_scatter.py``: gather/scatter and
their reductions, the index_* family, masked_select/masked_scatter, take/take_along_dim, put.

Indices are exact int64 arrays (integer arrays keep their dtype). Scatter-like writes use
indices without repeats (torch leaves which write wins unspecified); the accumulating ops
(scatter_add, scatter_reduce, index_add, index_reduce, put(accumulate=True)) use repeats.
"""

from __future__ import annotations

import numpy as np
from op_table import FLOAT, NUMERIC, OpCase, S, nc, nonzero, st, uniform


def ints(*rows, dtype=np.int64):
    return np.array(rows, dtype=dtype)


# (2, 4) indices into dim 0 of a (3, 4) input: distinct within each column
IDX = ints([0, 1, 2, 0], [2, 0, 0, 1])
# (3, 4) indices into dim 0 of a (3, 4) input, with repeats within columns
DUP = ints([0, 1, 0, 2], [0, 1, 0, 2], [2, 1, 0, 0])
# (2, 3) indices into dim 1 of a (3, 4) input, repeats within rows
DUP1 = ints([3, 0, 3], [1, 1, 1])
EMPTY = np.zeros((0, 4), np.int64)
MASK = np.array([[True, False, True, True], [False, False, True, False],
                 [True, True, False, True]])
ROW_MASK = np.array([True, False, False, True])


def _i(*v):
    return np.array(v, dtype=np.int64)


def reduce_samples(reduce: str) -> list:
    return [S((3, 4), 0, DUP, (3, 4), reduce=reduce),
            S((3, 4), 0, DUP, (3, 4), reduce=reduce, include_self=False),
            S(nc(3, 4), 1, DUP1, (2, 3), reduce=reduce),
            S((3, 4), -1, DUP1, st(2, 3), reduce=reduce, include_self=False),
            S((), 0, np.array(0), (), reduce=reduce),
            S((3, 4), 0, EMPTY, (0, 4), reduce=reduce)]


def index_reduce_samples(reduce: str) -> list:
    return [S((3, 4), 0, _i(0, 2, 0, 0), (4, 4), reduce=reduce),
            S((3, 4), 1, _i(3, 3), (3, 2), reduce=reduce, include_self=False),
            S(nc(3, 4), -1, _i(1, 0, 1), nc(3, 3), reduce=reduce),
            S((), 0, _i(0), (), reduce=reduce),
            S((3, 4), 0, _i(), (0, 4), reduce=reduce)]


# a product with zeros in self and single zeros in src at a position (torch's special case)
PROD_ZEROS = S(np.array([1.5, 0.0, 2.0, -1.0]), 0, _i(0, 0, 1, 1, 3),
               np.array([0.0, 2.0, 0.0, 1.5, 0.5]), reduce="prod")

OPS = [
    # ---- gather / take_along_dim
    OpCase("gather", lambda m, x, d, i: m.gather(x, d, i),
           [S((3, 4), 0, IDX), S((3, 4), 1, ints([3, 0], [1, 1], [0, 3])),
            S(nc(3, 4), -1, ints([1, 1, 2, 3, 0])), S((3, 4), 1, ints([1, 2])),
            S(st(2, 3, 4), 1, np.zeros((2, 2, 4), np.int64) + _i(0, 2, 1, 2)),
            S((), 0, np.array(0)), S((), 0, _i(0, 0)), S((3, 4), 1, np.zeros((3, 0), np.int64)),
            S((3, 4), 0, IDX.astype(np.int32)), S((0, 3), 1, np.zeros((0, 2), np.int64))],
           NUMERIC),
    OpCase("gather_method", lambda m, x, i: x.gather(1, i, sparse_grad=False),
           [S((3, 4), DUP1)], NUMERIC),
    OpCase("take_along_dim", lambda m, x, i, **kw: m.take_along_dim(x, i, **kw),
           [S((3, 4), ints([0], [1], [2]), dim=1), S((3, 4), ints([0, 11, 5, 5])),
            S(nc(3, 4), ints([2, 2], [-1, 0], [3, -4]), dim=1), S((3, 4), ints([5, 0, 7]), dim=1),
            S((3, 4), ints([0, 1]), dim=1), S((3, 1), np.zeros((2, 5), np.int64), dim=0),
            S((3, 4), ints([0], [1], [-1]), dim=-1),
            S((), np.array(0)), S((2, 3), np.zeros((2, 0), np.int64), dim=1)], NUMERIC),
    OpCase("take_along_dim_method", lambda m, x, i: x.take_along_dim(i, 0),
           [S((3, 4), IDX)], NUMERIC),
    # ---- scatter
    OpCase("scatter", lambda m, x, d, i, s: m.scatter(x, d, i, s),
           [S((3, 4), 0, IDX, (2, 4)), S(nc(3, 4), 1, ints([3, 0], [1, 2]), (2, 2)),
            S((3, 4), -1, ints([2, 0, 1]), st(1, 3)), S((), 0, np.array(0), ()),
            S((), 0, _i(0), (1,)), S((3, 4), 0, EMPTY, (0, 4))], NUMERIC),
    OpCase("scatter_method", lambda m, x, i, s: x.scatter(dim=0, index=i, src=s),
           [S((3, 4), IDX, (2, 4))]),
    # src larger than the index: only its first part is read (its gradient torch refuses)
    OpCase("scatter_large_src", lambda m, x, i, s: x.scatter(0, i, s),
           [S((3, 4), IDX, (5, 6))], NUMERIC, grad=False),
    OpCase("scatter_value", lambda m, x, d, i: x.scatter(d, i, -1.5),
           [S((3, 4), 0, IDX), S(nc(3, 4), 1, DUP1), S((), 0, np.array(0)),
            S((3, 4), 0, EMPTY)], NUMERIC),
    OpCase("scatter_value_kw", lambda m, x, i: m.scatter(x, 0, i, value=2),
           [S((3, 4), IDX)], NUMERIC),
    # the legacy reduce argument: torch records it as not differentiable; values only
    OpCase("scatter_reduce_legacy", lambda m, x, i, s, **kw: x.scatter(0, i, s, **kw),
           [S((3, 4), DUP, (3, 4), reduce="add"), S((3, 4), DUP, (3, 4), reduce="multiply"),
            S((3, 4), DUP, 2.0, reduce="multiply"), S((3, 4), DUP, 1, reduce="add")],
           NUMERIC, grad=False),
    OpCase("scatter_add", lambda m, x, d, i, s: m.scatter_add(x, d, i, s),
           [S((3, 4), 0, DUP, (3, 4)), S(nc(3, 4), 1, DUP1, (2, 3)),
            S((3, 4), 1, DUP1, st(2, 3)), S((), 0, np.array(0), ()),
            S((3, 4), 0, EMPTY, (0, 4)), S((3, 4), 0, IDX.astype(np.int32), (2, 4))], NUMERIC),
    OpCase("scatter_add_method", lambda m, x, i, s: x.scatter_add(0, i, s),
           [S((3, 4), DUP, (3, 4))]),
    *[OpCase(f"scatter_reduce_{r}",
             lambda m, x, d, i, s, **kw: m.scatter_reduce(x, d, i, s, **kw),
             reduce_samples(r) + ([PROD_ZEROS] if r == "prod" else []),
             NUMERIC, domain=nonzero if r == "prod" else uniform)
      for r in ("sum", "prod", "mean", "amax", "amin")],
    # torch's forward also takes 'max' and 'min' (as amax, amin), but has no derivative for them
    OpCase("scatter_reduce_max_min", lambda m, x, i, s, **kw: x.scatter_reduce(0, i, s, **kw),
           [S((3, 4), DUP, (3, 4), reduce="max"),
            S((3, 4), DUP, (3, 4), reduce="min", include_self=False)], NUMERIC, grad=False),
    OpCase("scatter_reduce_method", lambda m, x, i, s: x.scatter_reduce(0, i, s, "amax",
                                                                        include_self=False),
           [S((3, 4), DUP, (3, 4))], NUMERIC),
    # ---- index_*
    OpCase("index_select", lambda m, x, d, i: m.index_select(x, d, i),
           [S((3, 4), 0, _i(0, 2, 2)), S(nc(3, 4), 1, _i(3, 0)), S((3, 4), -1, np.array(1)),
            S((), 0, _i(0)), S((), 0, np.array(0)), S((3, 4), 0, _i()),
            S((3, 4), 1, _i(1, 1).astype(np.int32)), S(st(2, 3, 4), 2, _i(1, 0, 1))], NUMERIC),
    OpCase("index_select_method", lambda m, x, i: x.index_select(0, i), [S((3, 4), _i(2, 2))],
           NUMERIC),
    OpCase("index_add", lambda m, x, d, i, s: m.index_add(x, d, i, s),
           [S((3, 4), 0, _i(0, 2, 2), (3, 4)), S((3, 4), 1, _i(3, 0), nc(3, 2)),
            S(st(3, 4), 1, _i(3, 3, 3), (3, 3)), S((), 0, _i(0), ()), S((), 0, np.array(0), ()),
            S((3, 4), 0, _i(), (0, 4)), S((3, 4), 0, _i(1, 1).astype(np.int32), (2, 4))],
           NUMERIC),
    OpCase("index_add_alpha", lambda m, x, i, s, **kw: x.index_add(0, i, s, **kw),
           [S((3, 4), _i(0, 2, 2), (3, 4), alpha=2), S((3, 4), _i(1), (1, 4), alpha=-0.5)]),
    OpCase("index_copy", lambda m, x, d, i, s: m.index_copy(x, d, i, s),
           [S((3, 4), 0, _i(2, 0), (2, 4)), S(nc(3, 4), 1, _i(1, 3, 0), (3, 3)),
            S((3, 4), 1, np.array(2), (3, 1)), S((), 0, _i(0), ()), S((3,), 0, _i(1), ()),
            S((3, 4), 0, _i(), (0, 4))], NUMERIC),
    OpCase("index_copy_method", lambda m, x, i, s: x.index_copy(1, i, s),
           [S((3, 4), _i(3, 1), st(3, 2))], NUMERIC),
    OpCase("index_fill", lambda m, x, d, i: m.index_fill(x, d, i, 1.5),
           [S((3, 4), 0, _i(0, 2)), S(nc(3, 4), 1, _i(1, -1, 1)), S((3, 4), 1, np.array(2)),
            S((), 0, np.array(0)), S((3, 4), 0, _i())], NUMERIC),
    OpCase("index_fill_int_value", lambda m, x, i: x.index_fill(0, i, -2), [S((3, 4), _i(1))],
           NUMERIC),
    OpCase("index_fill_tensor_value", lambda m, x, i, v: x.index_fill(1, i, v),
           [S((3, 4), _i(1, 3, 1), ()), S(nc(3, 4), _i(0), ()), S((3, 4), _i(), ())],
           NUMERIC),
    *[OpCase(f"index_reduce_{r}",
             lambda m, x, d, i, s, **kw: m.index_reduce(x, d, i, s, **kw),
             index_reduce_samples(r), NUMERIC, domain=nonzero if r == "prod" else uniform)
      for r in ("prod", "mean", "amax", "amin")],
    OpCase("index_reduce_method", lambda m, x, i, s: x.index_reduce(0, i, s, "mean",
                                                                    include_self=False),
           [S((3, 4), _i(2, 2, 0), (3, 4))], NUMERIC),
    # ---- masked
    OpCase("masked_select", lambda m, x, mask: m.masked_select(x, mask),
           [S((3, 4), MASK), S(nc(3, 4), MASK), S((4,), MASK), S((3, 4), ROW_MASK),
            S((3, 1), ROW_MASK), S((), np.array(True)), S((), np.array(False)),
            S((0, 4), ROW_MASK), S(st(3, 4), np.zeros((3, 4), bool))], NUMERIC),
    OpCase("masked_select_method", lambda m, x, mask: x.masked_select(mask),
           [S((3, 4), MASK)], NUMERIC),
    OpCase("masked_scatter", lambda m, x, mask, s: m.masked_scatter(x, mask, s),
           [S((3, 4), MASK, (3, 4)), S(nc(3, 4), MASK, (7,)), S((4,), MASK, (2, 5)),
            S((3, 4), ROW_MASK, st(2, 3)), S((), np.array(True), ()),
            S((), np.array(False), (2,)), S((0, 4), ROW_MASK, (0,))], NUMERIC),
    OpCase("masked_scatter_method", lambda m, x, mask, s: x.masked_scatter(mask, s),
           [S((3, 4), MASK, (4, 4))], NUMERIC),
    # ---- take / put
    OpCase("take", lambda m, x, i: m.take(x, i),
           [S((3, 4), ints([0, 11], [11, -12])), S(nc(3, 4), _i(1, 4, 4, 7)),
            S((), np.array(0)), S((), _i(-1, 0)), S((3, 4), _i()), S((0, 2), _i())], NUMERIC),
    OpCase("take_method", lambda m, x, i: x.take(i), [S(st(2, 3), _i(5, 0))], NUMERIC),
    OpCase("put", lambda m, x, i, s, **kw: m.put(x, i, s, **kw),
           [S((3, 4), _i(0, 5), (2,)), S(nc(3, 4), ints([1, 2], [3, -1]), (4,)),
            S((3, 4), _i(0, 0, -1), (3,), accumulate=True),
            S((3, 4), ints([2, 2], [2, 2]), (2, 2), accumulate=True),
            S((), np.array(0), ()), S((), _i(0), (1,), accumulate=True), S((3, 4), _i(), (0,))],
           NUMERIC),
    OpCase("put_method", lambda m, x, i, s: x.put(i, s, True), [S((3, 4), _i(1, 1), (2,))],
           NUMERIC),
    # ---- in-place forms (on a non-leaf, so the history is rewritten)
    OpCase("scatter_", lambda m, x, i, s: (x * 1).scatter_(0, i, s), [S((3, 4), IDX, (2, 4))],
           NUMERIC),
    OpCase("scatter_value_", lambda m, x, i: (x * 1).scatter_(0, i, 0.5), [S((3, 4), IDX)],
           NUMERIC),
    OpCase("scatter_add_", lambda m, x, i, s: (x * 1).scatter_add_(0, i, s),
           [S((3, 4), DUP, (3, 4))], NUMERIC),
    OpCase("scatter_reduce_", lambda m, x, i, s: (x * 1).scatter_reduce_(0, i, s, "mean"),
           [S((3, 4), DUP, (3, 4))], NUMERIC),
    OpCase("index_add_", lambda m, x, i, s: (x * 1).index_add_(1, i, s, alpha=2),
           [S((3, 4), _i(0, 0), (3, 2))], NUMERIC),
    OpCase("index_copy_", lambda m, x, i, s: (x * 1).index_copy_(0, i, s),
           [S((3, 4), _i(1), (1, 4))], NUMERIC),
    OpCase("index_fill_", lambda m, x, i: (x * 1).index_fill_(0, i, 3), [S((3, 4), _i(1))],
           NUMERIC),
    OpCase("index_reduce_", lambda m, x, i, s: (x * 1).index_reduce_(0, i, s, "amin"),
           [S((3, 4), _i(1, 1), (2, 4))], NUMERIC),
    OpCase("masked_scatter_", lambda m, x, mask, s: (x * 1).masked_scatter_(mask, s),
           [S((3, 4), MASK, (3, 4)), S((3, 4), ROW_MASK, (6,))], NUMERIC),
    OpCase("put_", lambda m, x, i, s: (x * 1).put_(i, s, accumulate=True),
           [S((3, 4), _i(3, 3), (2,))], NUMERIC),
    OpCase("scatter_on_view_", lambda m, x, i, s: (x * 1)[1:].scatter_(1, i, s),
           [S((3, 4), ints([3, 0], [1, 2]), (2, 2))], FLOAT,
           node=False),  # torch names the view's new node AsStridedBackward0, ember the slice
    # ---- refusals: torch's exception type and message
    OpCase("refuse_gather", lambda m, x, d, i: x.gather(d, i),
           [S((3, 4), 0, ints([5, 7])), S((3, 4), 1, ints([1, 7], [5, 9])),
            S((3, 4), 0, ints([-1])), S((3, 4), 0, np.array([[0.0]])),
            S((3, 4), 0, _i(0)), S((3, 4), 0, np.zeros((4, 5), np.int64)),
            S((3, 4), 2, IDX), S((), 0, _i(1)), S((0, 3), 0, np.zeros((1, 2), np.int64)),
            S((3, 4), 0, IDX.astype(np.int16))], grad=False),
    OpCase("refuse_scatter", lambda m, x, d, i, s: x.scatter(d, i, s),
           [S((3, 4), 0, ints([5]), (1, 1)), S((3, 4), 0, np.array([[0.0]]), (1, 1)),
            S((3, 4), 0, IDX, (1, 1)), S((3, 4), 0, np.zeros((2, 5), np.int64), (3, 5)),
            S((3, 4), 0, _i(0), (3, 4)), S((3, 4), 0, ints([0]), (1, 1, 1)),
            S((3, 4), 0, np.zeros((2, 5), np.int64), 1.0), S((), 0, _i(1), 5.0)], grad=False),
    OpCase("refuse_scatter_dtype", lambda m, x, i, s: x.scatter(0, i, s.double()),
           [S((3, 4), IDX, (2, 4))], grad=False),
    OpCase("refuse_scatter_add_dtype", lambda m, x, i, s: x.scatter_add(0, i, s.double()),
           [S((3, 4), IDX, (2, 4))], grad=False),
    OpCase("refuse_scatter_reduce", lambda m, x, i, s, **kw: x.scatter_reduce(0, i, s, **kw),
           [S((3, 4), IDX, (2, 4), reduce="maximum"), S((3, 4), IDX + 3, (2, 4), reduce="sum"),
            S((3, 4), IDX, (2, 4), reduce="add")], grad=False),
    OpCase("refuse_scatter_legacy_reduce", lambda m, x, i, s: x.scatter(0, i, s, reduce="mean"),
           [S((3, 4), IDX, (2, 4))], grad=False),
    OpCase("refuse_scatter_add", lambda m, x, d, i, s: x.scatter_add(d, i, s),
           [S((3, 4), 1, ints([7]), (1, 1)), S((3, 4), 1, ints([-1]), (1, 1)),
            S((3, 4), 0, IDX, (1, 1)), S((3, 4), 0, IDX.astype(np.int16), (2, 4))], grad=False),
    OpCase("refuse_index_select", lambda m, x, d, i: x.index_select(d, i),
           [S((3, 4), 0, ints([0, 2])), S((3, 4), 0, _i(3)), S((3, 4), 0, _i(-1)),
            S((3, 4), 0, np.array([0.0])), S((3, 4), 0, _i(0).astype(np.int16)),
            S((), 0, _i(0, 0)), S((3, 4), 2, _i(0))], grad=False),
    OpCase("refuse_index_add", lambda m, x, d, i, s: x.index_add(d, i, s),
           [S((3, 4), 0, _i(0, 5, 2), (3, 4)), S((3, 4), 0, _i(0, -1, 2), (3, 4)),
            S((3, 4), 0, _i(0, 1, 2), (3, 5)), S((3, 4), 0, _i(0, 1, 2), (2, 4)),
            S((3, 4), 0, _i(0).astype(np.int16), (1, 4)), S((3, 4), 0, ints([0]), (1, 4)),
            S((3, 4), 0, _i(0), (4,)), S((3,), 0, _i(0), ()), S((), 0, np.array(0), (1,)),
            S((3, 4), 0, np.array([0.0]), (1, 4))], grad=False),
    OpCase("refuse_index_add_dtype", lambda m, x, i, s: x.index_add(0, i, s.double()),
           [S((3, 4), _i(0), (1, 4))], grad=False),
    OpCase("refuse_index_copy", lambda m, x, d, i, s: x.index_copy(d, i, s),
           [S((3, 4), 0, _i(0).astype(np.int32), (1, 4)), S((3, 4), 0, _i(0, 4), (2, 4)),
            S((3, 4), 0, _i(-1), (1, 4)), S((3, 4), 0, _i(0), (1, 5)),
            S((3, 4), 0, _i(0), (2, 4)), S((3, 4), 0, ints([0]), (1, 4)),
            S((3, 4), 0, _i(0), (4,)), S((3, 4, 5), 1, _i(0), (3, 1, 6))], grad=False),
    OpCase("refuse_index_copy_dtype", lambda m, x, i, s: x.index_copy(0, i, s.double()),
           [S((3, 4), _i(0), (1, 4))], grad=False),
    OpCase("refuse_index_fill", lambda m, x, d, i, v: x.index_fill(d, i, v),
           [S((3, 4), 0, _i(0).astype(np.int32), 1.0), S((3, 4), 0, _i(0, 4), 1.0),
            S((3, 4), 0, _i(-4), 1.0), S((3, 4), 0, ints([0]), 1.0),
            S((3, 4), 0, _i(0), (1,))], grad=False),
    OpCase("refuse_index_reduce", lambda m, x, i, s, **kw: x.index_reduce(0, i, s, **kw),
           [S((3, 4), _i(0), (1, 4), reduce="sum"), S((3, 4), _i(4), (1, 4), reduce="prod"),
            S((3, 4), _i(0), (1, 5), reduce="prod"), S((3, 4), _i(0), (2, 4), reduce="mean"),
            S((3, 4), ints([0]), (1, 4), reduce="amax"),
            S((3, 4), np.array([0.0]), (1, 4), reduce="amin")], grad=False),
    OpCase("refuse_masked_select", lambda m, x, mask: x.masked_select(mask),
           [S((3, 4), MASK.astype(np.uint8)), S((3, 4), np.ones(3, bool)),
            S((3, 4), np.ones((2, 4), bool))], grad=False),
    OpCase("refuse_masked_scatter", lambda m, x, mask, s: x.masked_scatter(mask, s),
           [S((3, 4), MASK.astype(np.uint8), (12,)), S((3, 4), MASK, (2,)),
            S((3, 4), np.ones((3, 5), bool), (20,))], grad=False),
    OpCase("refuse_masked_scatter_dtype", lambda m, x, mask, s: x.masked_scatter(mask,
                                                                                  s.double()),
           [S((3, 4), MASK, (12,))], grad=False),
    OpCase("refuse_take", lambda m, x, i: x.take(i),
           [S((3, 4), _i(12)), S((3, 4), _i(-13)), S((3, 4), _i(1).astype(np.int32)),
            S((0,), _i(0)), S((3, 4), np.array([0.0]))], grad=False),
    OpCase("refuse_take_along_dim", lambda m, x, i, **kw: x.take_along_dim(i, **kw),
           [S((3, 4), ints([0], [1], [2]).astype(np.int32), dim=1),
            S((3, 4), np.zeros((2, 1, 1), np.int64), dim=1), S((3, 4), _i(0), dim=1),
            S((3, 4), ints([0, 0], [0, 0]), dim=0), S((3, 4), ints([0]), dim=2),
            S((3, 4), _i(-1)), S((), np.array(0), dim=0)], grad=False),
    OpCase("refuse_put", lambda m, x, i, s: x.put(i, s),
           [S((3, 4), _i(0, 12), (2,)), S((3, 4), _i(0, 1), (3,)),
            S((3, 4), _i(0).astype(np.int32), (1,)), S((3, 4), np.array([0.0]), (1,))],
           grad=False),
    OpCase("refuse_put_dtype", lambda m, x, i, s: x.put(i, s.double()), [S((3, 4), _i(0), (1,))],
           grad=False),
]
