"""Rows for the reductions beyond sum/mean/max/min/norm: stats, scans and order statistics."""

from __future__ import annotations

import numpy as np
from op_table import FLOAT, KINKS, NUMERIC, TIES, OpCase, S, distinct, nc, st

NAN = float("nan")
INF = float("inf")
# a row with one zero, a row with two, a row with none: products' gradients at zeros
ZEROS = np.array([[1.5, 0.0, -2.0, 0.5], [0.0, 1.0, 0.0, -1.5], [2.0, 0.5, -1.0, 1.25]])
NANS = np.array([[1.0, NAN, 2.0, -0.5], [NAN, NAN, 0.5, 1.5], [0.25, NAN, -1.0, NAN]])
NAN_ROWS = np.array([[1.0, NAN, 3.0, NAN, 2.0], [0.5, -1.0, 2.0, 1.5, 0.0]])
REPEATS = np.array([[2.0, 1.0, 2.0, 1.0, 3.0], [4.0, 5.0, 4.0, 3.0, 5.0],
                    [0.0, 0.0, 1.0, 1.0, 1.0]])
HUGE = np.array([[1e4, -1e4, 5e3], [1e4, 1e4, -3.0]])
UNIQ = np.array([[3.0, 1.0, 2.0], [1.0, 3.0, 3.0], [3.0, 1.0, 2.0], [0.0, 1.0, 2.0]])


def _var_rows(name, op):
    """var/std: torch's three calling forms, corrections, and dof <= 0 (a warning, nan/inf)."""
    fn = lambda m, x, *a, **kw: getattr(m, op)(x, *a, **kw)
    return [
        OpCase(name, fn, [
            S((3, 4)), S(nc(3, 4)), S((2, 3, 4)), S((3, 4), dim=0), S((3, 4), dim=-1),
            S((3, 4), dim=1, keepdim=True), S((2, 3, 4), dim=(-1, 0), keepdim=True),
            S(st(2, 3, 4), dim=1), S((3, 4), 1, False), S((3, 4), 0, True, True),
            S((3, 4), correction=0), S((2, 3, 4), dim=(0, 2), correction=2, keepdim=True),
            # no degrees of freedom left: nan or inf, and torch's warning
            S((), gradcheck=False), S((), dim=0, gradcheck=False),
            S((1, 3), dim=0, gradcheck=False), S((3, 4), dim=1, correction=4, gradcheck=False),
            S((0, 3), dim=0), S((0, 3), dim=1)], FLOAT),
        OpCase(f"{name}_unbiased_only", lambda m, x, u: getattr(x, op)(u),
               [S((3, 4), False), S(nc(3, 4), True)]),
    ]


OPS = [
    # ---- prod
    OpCase("prod", lambda m, x, **kw: m.prod(x, **kw),
           [S((3, 4)), S(nc(3, 4)), S(()), S((0, 3)), S((2, 3, 2))], NUMERIC + ("bool",)),
    OpCase("prod_dim", lambda m, x, *a, **kw: x.prod(*a, **kw),
           [S((3, 4), 1), S((3, 4), -2, keepdim=True), S((), 0), S((0, 3), 1), S((0, 3), 0),
            S(st(2, 3, 4), 2), S((3, 1), 1)], NUMERIC + ("bool",)),
    OpCase("prod_zeros", lambda m, x, *a, **kw: m.prod(x, *a, **kw),
           [S(ZEROS), S(ZEROS, 1), S(ZEROS, 0, keepdim=True), S(ZEROS[1]), S(ZEROS[0])],
           FLOAT),
    OpCase("prod_dtype", lambda m, x, *a: m.prod(x, *a, dtype=m.float64),
           [S((3, 4)), S((3, 4), 1)], ("int64", "float32")),
    # ---- var / std and their mean pairs
    *_var_rows("var", "var"),
    *_var_rows("std", "std"),
    OpCase("std_zero", lambda m, x, **kw: x.std(**kw),  # torch: no gradient where std is 0
           [S(np.zeros((2, 3)), dim=1, gradcheck=False), S(np.ones(4), gradcheck=False)],
           FLOAT),
    OpCase("var_mean", lambda m, x, *a, **kw: m.var_mean(x, *a, **kw),
           [S((3, 4)), S((3, 4), 1), S((2, 3, 4), dim=(0, 2), keepdim=True, correction=0),
            S((3, 4), 0, False), S((), gradcheck=False), S((0, 3), dim=1)], FLOAT),
    OpCase("std_mean", lambda m, x, *a, **kw: m.std_mean(x, *a, **kw),
           [S((3, 4)), S((3, 4), 1), S(nc(3, 4), dim=0, keepdim=True), S((3, 4), True),
            S((2, 3, 4), dim=-1, correction=2)], FLOAT),
    OpCase("var_mean_only_mean_used", lambda m, x: m.var_mean(x, 1)[1] * 2, [S((3, 4))],
           FLOAT),
    # ---- logsumexp
    OpCase("logsumexp", lambda m, x, *a, **kw: m.logsumexp(x, *a, **kw),
           [S((3, 4), 1), S((3, 4), dim=(0, 1)), S((2, 3, 4), -1, keepdim=True), S((), 0),
            S((0, 3), 0), S((0, 3), 1), S(nc(3, 4), 0)], NUMERIC),
    OpCase("logsumexp_large", lambda m, x, d: x.logsumexp(d),
           [S(HUGE, 1), S(HUGE, 0), S(HUGE * -1, 1)], FLOAT),
    OpCase("logsumexp_infinite", lambda m, x, d: x.logsumexp(d),
           [S(np.array([[INF, 1.0, -INF], [-INF, -INF, -INF]]), 1, gradcheck=False)], FLOAT),
    # ---- counts and NaN-aware reductions
    OpCase("count_nonzero", lambda m, x, *a, **kw: m.count_nonzero(x, *a, **kw),
           [S(KINKS), S(KINKS, 1), S(KINKS, dim=(0, 1)), S(KINKS, -2), S((0, 3), 0), S(())],
           NUMERIC + ("bool",), grad=False),
    OpCase("nansum", lambda m, x, *a, **kw: m.nansum(x, *a, **kw),
           [S(NANS), S(NANS, 1), S(NANS, 0, keepdim=True), S(NANS, dim=(0, 1)), S(()),
            S((0, 3), 1), S(nc(3, 4))], FLOAT),
    OpCase("nansum_int", lambda m, x, *a: x.nansum(*a), [S((3, 4)), S((3, 4), 1)],
           ("int64", "int32", "bool"), grad=False),
    OpCase("nanmean", lambda m, x, *a, **kw: x.nanmean(*a, **kw),
           [S(NANS), S(NANS, 1), S(NANS, 0, keepdim=True, gradcheck=False), S((3, 4)),
            S((2, 3, 4), dim=(0, 2)),
            S((0, 3), 0)], FLOAT),
    # ---- scans
    OpCase("cumsum", lambda m, x, d: m.cumsum(x, d),
           [S((3, 4), 1), S((3, 4), -2), S((), 0), S((0, 3), 0), S(nc(3, 4), 0),
            S(st(2, 3, 4), 2)], NUMERIC + ("bool", "uint8")),
    OpCase("cumsum_dtype", lambda m, x: x.cumsum(0, dtype=m.float64), [S((3, 4))], NUMERIC),
    OpCase("cumprod", lambda m, x, d: x.cumprod(d),
           [S((3, 4), 1), S((), 0), S((0, 3), 1), S(nc(3, 4), 0), S((2, 3, 4), -1),
            S((3, 1), 1)], NUMERIC),
    OpCase("cumprod_zeros", lambda m, x, d: m.cumprod(x, d),
           [S(ZEROS, 1), S(ZEROS, 0), S(ZEROS[1], 0)], FLOAT),
    OpCase("cummax", lambda m, x, d: m.cummax(x, d),
           [S((3, 4), 1), S((3, 4), 0), S((), 0), S((0, 3), 1), S(nc(3, 4), -1),
            S(TIES, 1, gradcheck=False)], NUMERIC, domain=distinct),
    OpCase("cummin", lambda m, x, d: x.cummin(d),
           [S((3, 4), 1), S((2, 3, 4), 1), S(TIES, 1, gradcheck=False)], NUMERIC,
           domain=distinct),
    # ---- sorting
    OpCase("sort", lambda m, x, *a, **kw: m.sort(x, *a, **kw),
           [S((3, 4)), S((3, 4), 0), S((3, 4), dim=1, descending=True), S((), 0),
            S((0, 3), 0), S(nc(3, 4), -1), S(st(2, 3, 4), 1, True),
            S(TIES, dim=1, stable=True, gradcheck=False),
            S(TIES, dim=1, descending=True, stable=True, gradcheck=False)],
           NUMERIC, domain=distinct),
    # NaN: propagated by the running extremes, sorted above every number, median's result
    OpCase("nan_ordering", lambda m, x, op, *a, **kw: getattr(m, op)(x, *a, **kw),
           [S(NAN_ROWS, "cummax", 1, gradcheck=False), S(NAN_ROWS, "cummin", 1, gradcheck=False),
            S(NAN_ROWS, "sort", gradcheck=False),
            S(NAN_ROWS, "sort", descending=True, gradcheck=False),
            S(NAN_ROWS, "argsort", 1, gradcheck=False), S(NAN_ROWS, "median", gradcheck=False),
            S(NAN_ROWS, "median", 1, gradcheck=False), S(NAN_ROWS, "topk", 2, gradcheck=False)],
           FLOAT),
    OpCase("sort_bool", lambda m, x: x.sort(stable=True),
           [S(np.array([True, False, True, False]))], ("bool",), grad=False),
    OpCase("argsort", lambda m, x, *a, **kw: m.argsort(x, *a, **kw),
           [S((3, 4)), S((3, 4), 0, True), S(TIES, stable=True),
            S(TIES, dim=1, descending=True, stable=True),
            S(())], NUMERIC, grad=False, domain=distinct),
    OpCase("msort", lambda m, x: m.msort(x), [S((3, 4)), S(()), S(nc(3, 4))], NUMERIC,
           domain=distinct),
    OpCase("topk", lambda m, x, *a, **kw: m.topk(x, *a, **kw),
           [S((3, 4), 2), S((3, 4), 2, dim=0, largest=False), S((3, 4), 0), S((), 1),
            S((2, 3, 4), 3, 1), S(nc(3, 4), 4, largest=False), S((0, 3), 0, 0)],
           NUMERIC, domain=distinct),  # (torch's order among ties is unspecified)
    OpCase("kthvalue", lambda m, x, *a, **kw: x.kthvalue(*a, **kw),
           [S((3, 4), 2), S((3, 4), 1, 0, keepdim=True), S((), 1), S(nc(3, 4), 3),
            S((2, 3, 4), 3, dim=-1)], NUMERIC, domain=distinct),
    OpCase("median", lambda m, x: m.median(x),
           [S((3, 4)), S((5,)), S(()), S(nc(3, 4)), S(TIES, gradcheck=False), S((0, 3))],
           NUMERIC, domain=distinct),
    OpCase("median_dim", lambda m, x, *a, **kw: x.median(*a, **kw),
           [S((3, 4), 1), S((3, 4), 0, keepdim=True), S((), 0), S((0, 3), 1),
            S((2, 3, 5), -1)], NUMERIC, domain=distinct),
    OpCase("nanmedian", lambda m, x: x.nanmedian(),
           [S((3, 4)), S(NANS, gradcheck=False), S(np.array([NAN, NAN]), gradcheck=False),
            S(())], FLOAT, domain=distinct),
    OpCase("nanmedian_dim", lambda m, x, *a, **kw: m.nanmedian(x, *a, **kw),
           [S((3, 4), 1), S(NAN_ROWS, 1, gradcheck=False), S(NANS, 0, gradcheck=False),
            S(NANS, 1, keepdim=True, gradcheck=False), S((), 0)], FLOAT, domain=distinct),
    OpCase("mode", lambda m, x, *a, **kw: m.mode(x, *a, **kw),
           [S((3, 4)), S((3, 4), 0), S((), 0), S((0, 3), 1),
            S(REPEATS, gradcheck=False), S(REPEATS, 0, keepdim=True, gradcheck=False)],
           NUMERIC, domain=distinct),
    OpCase("mode_int_repeats", lambda m, x, *a: x.mode(*a), [S((4, 6)), S((4, 6), 0)],
           ("int64", "uint8"), grad=False),
    OpCase("unique", lambda m, x, **kw: m.unique(x, **kw),
           [S(UNIQ), S(UNIQ, return_inverse=True), S(UNIQ, return_counts=True),
            S(UNIQ, sorted=False, return_inverse=True, return_counts=True),
            S(UNIQ, dim=0, return_inverse=True, return_counts=True),
            S(UNIQ, dim=1, return_inverse=True), S(UNIQ, dim=-1), S(()), S((0, 3)),
            S((0, 3), dim=0, return_counts=True)], NUMERIC, grad=False),
    OpCase("unique_method", lambda m, x: x.unique(return_counts=True), [S((3, 4))],
           ("int64", "bool"), grad=False),
    OpCase("aminmax", lambda m, x, **kw: m.aminmax(x, **kw),
           [S((3, 4)), S((3, 4), dim=1), S((3, 4), dim=0, keepdim=True), S((), dim=0),
            S((3, 4), keepdim=True), S(nc(3, 4), dim=-1), S(TIES, gradcheck=False),
            S(TIES, dim=1, gradcheck=False)], NUMERIC, domain=distinct),
    OpCase("aminmax_one_output_used", lambda m, x: x.aminmax(dim=0).max * 3, [S((3, 4))],
           domain=distinct),
    # ---- refusals: torch's exception types and messages
    OpCase("refuse_var_int", lambda m, x: x.var(), [S((3,))], ("int64",), grad=False),
    OpCase("refuse_nanmean_int", lambda m, x: x.nanmean(), [S((3,))], ("int64",), grad=False),
    OpCase("refuse_topk_k", lambda m, x, k: x.topk(k), [S((3,), 4), S((3,), -1), S((2, 0), 1)],
           grad=False),
    OpCase("refuse_kthvalue_k", lambda m, x, k: x.kthvalue(k), [S((3,), 4), S((3,), 0)],
           grad=False),
    OpCase("refuse_empty_dim", lambda m, x, op: getattr(x, op)(1),
           [S((2, 0), "kthvalue"), S((2, 0), "median"), S((2, 0), "nanmedian")], grad=False),
    OpCase("refuse_aminmax_empty", lambda m, x, **kw: x.aminmax(**kw),
           [S((0, 3)), S((0, 3), dim=0)], grad=False),
    OpCase("refuse_unique_dim", lambda m, x, d: m.unique(x, dim=d), [S((), 0), S((2, 0), 0)],
           grad=False),
    OpCase("refuse_scan_dim", lambda m, x, op: getattr(m, op)(x, 2),
           [S((3, 4), "cumsum"), S((3, 4), "cumprod"), S((3,), "cummax"), S((), "cummin")],
           grad=False),
    OpCase("refuse_sort_dim", lambda m, x, op: getattr(x, op)(-3),
           [S((3, 4), "sort"), S((3, 4), "argsort"), S((3, 4), "logsumexp")], grad=False),
]

# ---- counting and searching: bincount, histc (reductions.py), searchsorted, bucketize
# (sorting.py), cdist (distance.py)
_COUNTS = np.array([1, 1, 3, 0, 7, 3])
_SORTED = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
_SORTED_ROWS = np.array([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])
_PROBES = np.array([[3.0, 6.0, 9.0, 0.0], [3.0, 10.0, 1.0, NAN]])
_HIST = np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 1.5, -1.0, NAN]])
OPS += [
    OpCase("bincount", lambda m, x, *a, **kw: m.bincount(x, *a, **kw),
           [S(_COUNTS), S(_COUNTS, minlength=10), S(_COUNTS, np.linspace(0.5, 3.0, 6)),
            S(_COUNTS, np.arange(6), minlength=2), S(np.zeros(0, np.int64)),
            S(_COUNTS.astype(np.uint8)), S(_COUNTS.astype(np.int32), np.ones(6, bool))],
           FLOAT, grad=False, node=False),
    OpCase("bincount_method", lambda m, x, w: x.bincount(w), [S(_COUNTS, (6,))], FLOAT,
           grad=False, node=False),
    OpCase("refuse_bincount", lambda m, x, *a, **kw: m.bincount(x, *a, **kw),
           [S(np.array([-1, 2])), S(np.array([[1]])), S((3,)), S(_COUNTS, (5,)),
            S(_COUNTS, minlength=-1)], grad=False),
    OpCase("histc", lambda m, x, *a, **kw: m.histc(x, *a, **kw),
           [S((3, 4)), S((3, 4), bins=4), S(_HIST, 3, 1, 2), S(_HIST[:1], bins=3),
            S(np.ones(3), bins=3), S(np.zeros(0), bins=2), S(nc(3, 4), 5, -1.0, 1.0)],
           FLOAT, grad=False, node=False),
    OpCase("histc_method", lambda m, x: x.histc(6, max=2.0), [S((3, 4))], grad=False,
           node=False),
    OpCase("refuse_histc", lambda m, x, **kw: m.histc(x, **kw),
           [S(np.array([1.0, INF])), S((3,), min=3, max=1), S((3,), bins=0),
            S(np.array([1, 2]))], grad=False),
    OpCase("searchsorted", lambda m, s, x, **kw: m.searchsorted(s, x, **kw),
           [S(_SORTED, _PROBES), S(_SORTED, _PROBES, right=True), S(_SORTED, _PROBES,
                                                                     side="right"),
            S(_SORTED, 3.0), S(_SORTED, _PROBES, out_int32=True),
            S(_SORTED_ROWS, _PROBES[:, :2]), S(_SORTED_ROWS, _PROBES[:, :2], side="right"),
            S(_SORTED.astype(np.int64), _PROBES), S(_SORTED, np.zeros((0, 2)))],
           NUMERIC, grad=False),
    OpCase("searchsorted_sorter", lambda m, s, x, i: m.searchsorted(s, x, sorter=i),
           [S(np.array([5.0, 1.0, 3.0]), _PROBES, np.array([1, 2, 0])),
            S(_SORTED_ROWS[:, ::-1], _PROBES[:, :2], np.array([[2, 1, 0], [2, 1, 0]]))],
           NUMERIC, grad=False),
    OpCase("refuse_searchsorted", lambda m, s, x, **kw: m.searchsorted(s, x, **kw),
           [S(_SORTED, _PROBES, side="left", right=True), S(_SORTED, _PROBES, side="x"),
            S(_SORTED_ROWS, np.ones(3)), S(_SORTED_ROWS, 1.0)], grad=False),
    OpCase("bucketize", lambda m, x, b, **kw: m.bucketize(x, b, **kw),
           [S(_PROBES, _SORTED), S(_PROBES, _SORTED, right=True), S(2.5, _SORTED),
            S((3, 4), _SORTED, out_int32=True), S(np.zeros(0), _SORTED)], NUMERIC, grad=False),
    OpCase("refuse_bucketize", lambda m, x, b: m.bucketize(x, b),
           [S(_PROBES, _SORTED_ROWS)], grad=False),
    # p = 2 with more than 25 rows (or use_mm_for_euclid_dist) goes through a matrix product,
    # as in torch (its node is then a view's)
    OpCase("cdist", lambda m, a, b, **kw: m.cdist(a, b, **kw),
           [S((3, 4), (5, 4)), S((2, 3, 4), (2, 5, 4), p=1.0), S((2, 1, 3, 4), (5, 2, 4), p=3),
            S((3, 4), (2, 4), p=0.0), S((3, 4), (2, 4), p=INF), S((3, 4), (2, 4), p=0.5),
            S(nc(4, 3), (2, 3), p=1.5), S((30, 3), (4, 3)),
            S((3, 4), (2, 4), compute_mode="use_mm_for_euclid_dist"),
            S((3, 4), (2, 4), compute_mode="donot_use_mm_for_euclid_dist"),
            S((0, 3), (2, 3)), S((3, 0), (2, 0))], FLOAT),
    OpCase("refuse_cdist", lambda m, a, b, **kw: m.cdist(a, b, **kw),
           [S((4,), (3, 4)), S((3, 4), (3, 5)), S((3, 4), (3, 4), p=-1.0),
            S((2, 3, 4), (3, 3, 4)), S((3, 4), (3, 4), compute_mode="x")], grad=False),
    OpCase("refuse_cdist_dtype", lambda m, a, b: m.cdist(a, b.double()), [S((3, 4), (3, 4))],
           grad=False),
    OpCase("refuse_cdist_int", lambda m, a, b: m.cdist(a.long(), b), [S((3, 4), (3, 4))],
           grad=False),
    # argmax/argmin and max/min of an empty tensor or over an empty dim
    OpCase("refuse_arg_extreme_empty", lambda m, x, op, *a: getattr(m, op)(x, *a),
           [S((0,), "argmax"), S((2, 0), "argmin"), S((2, 0), "argmax", 1),
            S((0, 3), "argmin", -2), S((0,), "max"), S((0, 3), "min"), S((2, 0), "max", 1),
            S((0,), "min", 0)], grad=False),
    OpCase("arg_extreme_keepdim", lambda m, x, op, *a, **kw: getattr(m, op)(x, *a, **kw),
           [S((3, 4), "argmax", keepdim=True), S((), "argmin", 0), S((), "argmax"),
            S((2, 0), "argmax", 0), S((3, 4), "argmin", 1, keepdim=True)], NUMERIC,
           grad=False, domain=distinct),
]
