"""Rows for products (addmm, einsum, tensordot, kron, cross, multi_dot, ...) and torch.linalg.

Matrices that must be invertible come from ``wellcond`` (diagonally dominant); symmetric or
positive-definite inputs are built inside ``fn`` (``x + x.mT``, ``x @ x.mT + 3 I``), so
gradcheck perturbs a free matrix and the op sees a valid one, as torch's own OpInfos do. The
SVD's and eigh's vectors are unique only up to sign: rows compare sign-invariant functions of
them (``U.abs()``, ``U diag(S) Vh``), as torch's tests do.
"""

from __future__ import annotations

import numpy as np
from op_table import F32, FLOAT, NUMERIC, OpCase, S, Spec, nc, st

F64 = ("float64",)
INF = float("inf")


def wellcond(rng, shape, dtype):
    """Square matrices in [-1, 1) plus n on the diagonal: far from singular."""
    x = rng.uniform(-1, 1, shape)
    n = shape[-1]
    return (x + n * np.eye(n)).astype(dtype)


def wc(*shape) -> Spec:
    return Spec(tuple(shape), "c", wellcond)


def wc_nc(*shape) -> Spec:
    return Spec(tuple(shape), "T", wellcond)


def _spd(m, x):
    """A symmetric positive-definite matrix made from any square ``x``."""
    n = x.shape[-1]
    return x @ x.mT + 3 * m.eye(n, dtype=x.dtype)


def _sym(m, x):
    return x + x.mT


def _svd_invariants(m, x, **kw):
    """The singular values and sign-invariant functions of the singular vectors."""
    U, S, Vh = m.linalg.svd(x, **kw)
    return S, U.abs(), Vh.abs(), (U * S.unsqueeze(-2)) @ Vh


def _legacy_svd_invariants(m, x):
    U, S, V = m.svd(x)
    return S, U.abs(), V.abs()


def _eigh_invariants(m, x, **kw):
    L, V = m.linalg.eigh(_sym(m, x), **kw)
    return L, V.abs(), (V * L.unsqueeze(-2) ** 2) @ V.mT


def _copied(fn):
    """``fn`` with its result cloned: torch returns einsum's and tensordot's results as views of
    the bmm it folds them to (``_is_view()`` True), an artefact ember's one node has not."""
    return lambda m, *a, **kw: fn(m, *a, **kw).clone()


_MATS = [S(wc(3, 3)), S(wc(2, 3, 3)), S(wc_nc(4, 4)), S(wc(1, 2, 2))]

OPS = [
    # ---- products of vectors and matrices
    OpCase("vdot", lambda m, a, b: m.vdot(a, b), [S((4,), (4,)), S(st(5), (5,)), S((0,), (0,))],
           NUMERIC),
    OpCase("outer", lambda m, a, b: m.outer(a, b),
           [S((3,), (4,)), S(st(3), (2,)), S((0,), (3,))], NUMERIC),
    OpCase("ger", lambda m, a, b: a.ger(b), [S((3,), (4,))]),
    OpCase("inner", _copied(lambda m, a, b: m.inner(a, b)),
           [S((3, 4), (2, 4)), S((4,), (4,)), S((), (2, 3)), S((2, 3, 4), (4,)),
            S(nc(3, 4), (5, 4))], NUMERIC, node=False),
    OpCase("addmm", lambda m, x, a, b, **kw: m.addmm(x, a, b, **kw),
           [S((3, 2), (3, 4), (4, 2)), S((2,), (3, 4), (4, 2), beta=0.5, alpha=2),
            S((), (3, 4), (4, 2), alpha=-1), S((3, 1), nc(3, 4), st(4, 2), beta=0),
            S((3, 2), (3, 0), (0, 2)), S(np.full((3, 2), np.nan), (3, 4), (4, 2), beta=0,
                                         gradcheck=False)], FLOAT),
    OpCase("addmm_int", lambda m, x, a, b: x.addmm(a, b, beta=2, alpha=3),
           [S((3, 2), (3, 4), (4, 2))], ("int64",)),
    OpCase("addmm_", lambda m, x, a, b: x.clone().addmm_(a, b, alpha=0.5),
           [S((3, 2), (3, 4), (4, 2))]),
    OpCase("addmv", lambda m, x, a, v, **kw: m.addmv(x, a, v, **kw),
           [S((3,), (3, 4), (4,)), S((), nc(3, 4), (4,), beta=2, alpha=0.5),
            S((1,), (3, 4), st(4), beta=0)], FLOAT),
    OpCase("addmv_", lambda m, x, a, v: x.clone().addmv_(a, v, beta=-1), [S((3,), (3, 4), (4,))]),
    OpCase("addr", lambda m, x, a, b, **kw: m.addr(x, a, b, **kw),
           [S((3, 4), (3,), (4,)), S((4,), (3,), (4,), beta=0.5, alpha=2), S((), st(3), (2,))],
           NUMERIC),
    OpCase("addr_", lambda m, x, a, b: x.clone().addr_(a, b, alpha=2), [S((3, 4), (3,), (4,))]),
    OpCase("baddbmm", lambda m, x, a, b, **kw: m.baddbmm(x, a, b, **kw),
           [S((2, 3, 2), (2, 3, 4), (2, 4, 2)), S((3, 2), (2, 3, 4), (2, 4, 2), beta=0.5,
                                                   alpha=2),
            S((), nc(2, 3, 4), (2, 4, 2), beta=0)], FLOAT),
    OpCase("baddbmm_", lambda m, x, a, b: x.clone().baddbmm_(a, b, alpha=2),
           [S((2, 3, 2), (2, 3, 4), (2, 4, 2))]),
    OpCase("addbmm", lambda m, x, a, b, **kw: m.addbmm(x, a, b, **kw),
           [S((3, 2), (2, 3, 4), (2, 4, 2)), S((2,), (2, 3, 4), (2, 4, 2), beta=0.5, alpha=2),
            S((3, 2), (0, 3, 4), (0, 4, 2))], FLOAT),
    OpCase("addbmm_", lambda m, x, a, b: x.clone().addbmm_(a, b, beta=2),
           [S((3, 2), (2, 3, 4), (2, 4, 2))]),
    # ---- einsum and tensordot: torch records the bmm/permute/view chain it folds to
    OpCase("einsum", _copied(lambda m, eq, *ops: m.einsum(eq, *ops)),
           [S("ij,jk->ik", (3, 4), (4, 2)), S("bij,bjk->bik", (2, 3, 4), nc(2, 4, 5)),
            S("...ij,...jk", (2, 1, 3, 4), (5, 4, 2)), S("ii", (3, 3)), S("iij,j->ij", (3, 3, 4),
                                                                          (4,)),
            S("i,j->ij", (3,), st(4)), S("ij->", (3, 4)), S("ij,ij->i", (3, 4), (3, 4)),
            S("bn,anm,bm->ba", (2, 3), (4, 3, 5), (2, 5)), S("i,i", (4,), (4,)),
            S("ij,ij->ij", (1, 3), (2, 3)), S("ij,jk->ik", (0, 3), (3, 2)),
            S(",ij->ij", (), (2, 3)), S("bA,Ac", (2, 3), (3, 4)),
            S("i j , j k -> k i", nc(3, 4), (4, 2)), S("ij->j", (3, 4)),
            S("...i,...i->...", (2, 3), (3,)), S("ijk,ikj->j", (2, 3, 3), (2, 3, 3))],
           NUMERIC, node=False),
    OpCase("einsum_list", _copied(lambda m, a, b: m.einsum("ij,jk", [a, b])),
           [S((3, 4), (4, 2))],
           node=False),
    OpCase("tensordot", _copied(lambda m, a, b, **kw: m.tensordot(a, b, **kw)),
           [S((2, 3, 4), (3, 4, 5)), S((3, 2, 4), (2, 3, 5), dims=([1, 0], [0, 1])),
            S((2, 3), (4,), dims=0), S(nc(3, 4), (4, 2), dims=1),
            S((2, 3, 4), (4, 3), dims=([-1, 1], [0, 1]))], NUMERIC, node=False),
    OpCase("kron", _copied(lambda m, a, b: m.kron(a, b)),
           [S((2, 3), (4, 2)), S((2,), (3, 1, 2)), S((), (3,))], NUMERIC,
           node=False),
    OpCase("linalg_cross", lambda m, a, b, **kw: m.linalg.cross(a, b, **kw),
           [S((4, 3), (4, 3)), S((4, 1, 3), (1, 2, 3)), S((3, 4), nc(3, 4), dim=0),
            S((3,), (3,))], NUMERIC),
    OpCase("cross", lambda m, a, b: m.cross(a, b, dim=1), [S((2, 3), (2, 3))]),
    OpCase("cross_default_dim", lambda m, a, b: a.cross(b), [S((2, 3, 3), (2, 3, 3))]),
    OpCase("multi_dot", _copied(lambda m, *ts: m.linalg.multi_dot(ts)),
           [S((3, 4), (4, 5), (5, 2)), S((4,), (4, 5), (5, 2), (2,)), S((3, 4), (4,)),
            S((6, 2), (2, 5), (5, 3), (3, 4))], node=False),
    OpCase("chain_matmul", _copied(lambda m, *ts: m.chain_matmul(*ts)),
           [S((3, 4), (4, 5), (5, 2)), S((3, 4),)], node=False),
    # ---- inverses, determinants, solves
    OpCase("linalg_inv", lambda m, x: m.linalg.inv(x), _MATS + [S((0, 3, 3))], FLOAT),
    OpCase("inverse", lambda m, x: x.inverse(), [S(wc(3, 3))]),
    OpCase("linalg_det", lambda m, x: m.linalg.det(x), _MATS + [S(wc(0, 0))], FLOAT),
    OpCase("det", lambda m, x: m.det(x), [S(wc(3, 3)), S((2, 2))]),
    OpCase("linalg_slogdet", lambda m, x: m.linalg.slogdet(x), _MATS),
    OpCase("slogdet", lambda m, x: x.slogdet(), [S(wc(2, 3, 3))]),
    OpCase("logdet", lambda m, x: m.logdet(_spd(m, x)), [S((3, 3)), S((2, 2, 2))]),
    OpCase("logdet_negative", lambda m, x: m.logdet(-x), [S(wc(3, 3))], gradcheck=False),
    OpCase("linalg_solve", lambda m, a, b, **kw: m.linalg.solve(a, b, **kw),
           [S(wc(3, 3), (3,)), S(wc(3, 3), (3, 2)), S(wc(2, 3, 3), (3,)), S(wc(2, 3, 3), (2, 3)),
            S(wc(2, 3, 3), (3, 2)), S(wc(3, 3), (2, 3, 4)), S(wc_nc(3, 3), st(3, 2)),
            S(wc(3, 3), (2, 3), left=False)], FLOAT),
    OpCase("linalg_cholesky", lambda m, x, **kw: m.linalg.cholesky(_spd(m, x), **kw),
           [S((3, 3)), S((2, 3, 3)), S(nc(3, 3), upper=True)], FLOAT),
    OpCase("cholesky_solve", lambda m, b, x, **kw: m.cholesky_solve(
        b, m.linalg.cholesky(_spd(m, x), upper=kw.get("upper", False)), **kw),
        [S((3, 2), (3, 3)), S((2, 3, 1), (2, 3, 3), upper=True), S((3, 4), (3, 3))], F64),
    # ---- decompositions
    OpCase("linalg_qr", lambda m, x, **kw: m.linalg.qr(x, **kw),
           [S((4, 3)), S((3, 3)), S((3, 5)), S((2, 4, 3)), S((3, 5), mode="complete"),
            S(nc(4, 3))], FLOAT),
    OpCase("linalg_qr_nodiff", lambda m, x, **kw: m.linalg.qr(x, **kw),
           [S((4, 3), mode="complete"), S((4, 3), mode="r")], FLOAT, grad=False),
    OpCase("linalg_svd", _svd_invariants,
           [S((3, 3)), S((4, 3), full_matrices=False), S((3, 5), full_matrices=False),
            S(nc(3, 3))], F64),
    # batched: torch records the batched matmul of the last output as a fold (UnsafeView)
    OpCase("linalg_svd_batched", _svd_invariants, [S((2, 3, 4), full_matrices=False)], F64,
           node=False),
    OpCase("linalg_svd_full", lambda m, x: m.linalg.svd(x)[1], [S((4, 3)), S((3, 5))], F64),
    OpCase("svd_legacy", _legacy_svd_invariants,
           [S((4, 3)), S((3, 3))], F64),
    OpCase("linalg_svdvals", lambda m, x: m.linalg.svdvals(x),
           [S((3, 4)), S((4, 3)), S((2, 3, 3)), S(nc(3, 3))], FLOAT),
    OpCase("linalg_eigh", _eigh_invariants, [S((3, 3)), S((3, 3), UPLO="U")], F64),
    OpCase("linalg_eigh_batched", _eigh_invariants, [S((2, 4, 4))], F64, node=False),
    OpCase("linalg_eigvalsh", lambda m, x, **kw: m.linalg.eigvalsh(_sym(m, x), **kw),
           [S((3, 3)), S((2, 4, 4)), S(nc(3, 3), UPLO="U")], FLOAT),
    OpCase("linalg_pinv", lambda m, x, **kw: m.linalg.pinv(x, **kw),
           [S((3, 4)), S((4, 3)), S(wc(3, 3)), S((2, 3, 4)), S(nc(4, 3), rtol=1e-3)], F64),
    OpCase("linalg_pinv_hermitian", lambda m, x: m.linalg.pinv(_spd(m, x), hermitian=True),
           [S((3, 3))], F64),
    OpCase("pinverse", lambda m, x: x.pinverse(), [S((3, 4))], F64),
    OpCase("linalg_lstsq", lambda m, a, b: m.linalg.lstsq(a, b),
           [S((5, 3), (5, 2)), S((5, 3), (5,)), S((2, 5, 3), (2, 5, 2)), S(wc(3, 3), (3, 1))],
           F64),
    OpCase("linalg_lstsq_solution", lambda m, a, b: m.linalg.lstsq(a, b).solution,
           [S((2, 4, 3), (2, 4))], F64),
    # ---- powers, ranks
    OpCase("linalg_matrix_power", lambda m, x, n: m.linalg.matrix_power(x, n),
           [S(wc(3, 3), 2), S(wc(3, 3), 3), S(wc(3, 3), 5), S(wc(3, 3), 6), S(wc(3, 3), 1),
            S(wc(3, 3), -1), S(wc(3, 3), -3)], FLOAT),
    OpCase("linalg_matrix_power_0", lambda m, x: m.linalg.matrix_power(x, 0),
           [S(wc(3, 3)), S(wc(2, 2, 2))], FLOAT),
    OpCase("matrix_power_batched", lambda m, x, n: x.matrix_power(n),
           [S(wc(2, 3, 3), 4), S(wc(2, 3, 3), -2)], FLOAT, node=False),
    OpCase("matrix_power_int", lambda m, x: m.matrix_power(x, 3), [S((3, 3))], ("int64",)),
    OpCase("linalg_matrix_rank", lambda m, x, **kw: m.linalg.matrix_rank(x, **kw),
           [S((3, 4)), S(np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])), S((2, 3, 3)),
            S((3, 4), atol=1.0), S((3, 4), rtol=0.5), S(np.diag([1.0, 1e-3, 0])),
            S(np.diag([1.0, -2, 0]), hermitian=True), S((3, 3), tol=0.5)], FLOAT, grad=False),
    # ---- norms
    OpCase("linalg_matrix_norm", lambda m, x, **kw: m.linalg.matrix_norm(x, **kw),
           [S((3, 4)), S((3, 4), ord="nuc"), S((3, 4), ord=1), S((3, 4), ord=-1),
            S((3, 4), ord=2), S((4, 3), ord=-2), S((3, 4), ord=INF), S((3, 4), ord=-INF),
            S((2, 3, 4), ord=1, dim=(0, 2)), S((2, 3, 4), ord=INF, dim=(2, 0), keepdim=True),
            S((2, 3, 4), ord="nuc", dim=(0, -1), keepdim=True), S(nc(3, 4), ord=2),
            S((2, 3, 4), ord="fro", dim=(1, 2), keepdim=True)], FLOAT),
    OpCase("linalg_norm", lambda m, x, *a, **kw: m.linalg.norm(x, *a, **kw),
           [S((3, 4)), S((2, 3, 4)), S((4,), 1), S((4,), INF), S((3, 4), "nuc"),
            S((3, 4), 2), S((3, 4), -1), S((2, 3, 4), dim=1), S((2, 3, 4), 3, dim=(2,)),
            S((2, 3, 4), dim=(0, 1)), S((2, 3, 4), INF, dim=(1, 2), keepdim=True)], F32),
    OpCase("linalg_norm_dtype", lambda m, x: m.linalg.norm(x, dtype=m.float64), [S((3, 4))]),
    OpCase("linalg_vector_norm", lambda m, x, *a, **kw: m.linalg.vector_norm(x, *a, **kw),
           [S((3, 4)), S((3, 4), 1, dim=0), S((2, 3, 4), 3, dim=(0, 2), keepdim=True)]),
]


def _refusals():
    """Invalid calls: torch's exception type and message (singular inputs: test_linalg.py)."""
    def o(m, *shape, dtype=None):
        return m.ones(*shape, dtype=dtype)

    cases = {
        "inv_nonsquare": lambda m: m.linalg.inv(o(m, 2, 3)),
        "inv_1d": lambda m: m.linalg.inv(o(m, 3)),
        "inv_int": lambda m: m.linalg.inv(o(m, 3, 3, dtype=m.int64)),
        "det_nonsquare": lambda m: m.linalg.det(o(m, 2, 3)),
        "slogdet_1d": lambda m: m.linalg.slogdet(o(m, 3)),
        "logdet_nonsquare": lambda m: m.logdet(o(m, 2, 3)),
        "solve_shapes": lambda m: m.linalg.solve(m.eye(3), o(m, 4)),
        "solve_shapes_matrix": lambda m: m.linalg.solve(m.eye(3), o(m, 4, 2)),
        "solve_nonsquare": lambda m: m.linalg.solve(o(m, 3, 2), o(m, 3)),
        "solve_dtype": lambda m: m.linalg.solve(m.eye(3), o(m, 3, dtype=m.float64)),
        "solve_int": lambda m: m.linalg.solve(o(m, 3, 3, dtype=m.int64), o(m, 3, dtype=m.int64)),
        "cholesky_nonsquare": lambda m: m.linalg.cholesky(o(m, 2, 3)),
        "cholesky_int": lambda m: m.linalg.cholesky(o(m, 3, 3, dtype=m.int64)),
        "qr_mode": lambda m: m.linalg.qr(o(m, 2, 3), mode="foo"),
        "qr_1d": lambda m: m.linalg.qr(o(m, 3)),
        "svd_1d": lambda m: m.linalg.svd(o(m, 3)),
        "svd_int": lambda m: m.linalg.svd(o(m, 3, 3, dtype=m.int64)),
        "eigh_nonsquare": lambda m: m.linalg.eigh(o(m, 2, 3)),
        "eigh_uplo": lambda m: m.linalg.eigh(m.eye(3), UPLO="X"),
        "pinv_int": lambda m: m.linalg.pinv(o(m, 3, 3, dtype=m.int64)),
        "lstsq_shapes": lambda m: m.linalg.lstsq(o(m, 3, 2), o(m, 4, 2)),
        "lstsq_dtype": lambda m: m.linalg.lstsq(o(m, 3, 2), o(m, 3, 2, dtype=m.float64)),
        "lstsq_1d": lambda m: m.linalg.lstsq(o(m, 3), o(m, 3)),
        "matrix_power_nonsquare": lambda m: m.linalg.matrix_power(o(m, 2, 3), 2),
        "matrix_power_int_negative": lambda m: m.linalg.matrix_power(
            m.eye(3, dtype=m.int64), -1),
        "matrix_rank_int": lambda m: m.linalg.matrix_rank(o(m, 3, 3, dtype=m.int64)),
        "matrix_norm_ord": lambda m: m.linalg.matrix_norm(o(m, 3, 3), 3),
        "matrix_norm_str": lambda m: m.linalg.matrix_norm(o(m, 3, 3), "foo"),
        "matrix_norm_1d": lambda m: m.linalg.matrix_norm(o(m, 3)),
        "matrix_norm_same_dims": lambda m: m.linalg.matrix_norm(o(m, 3, 3), dim=(0, 0)),
        "matrix_norm_one_dim": lambda m: m.linalg.matrix_norm(o(m, 3, 3), dim=(0,)),
        "norm_3d_ord": lambda m: m.linalg.norm(o(m, 2, 3, 3), "fro"),
        "norm_3_dims": lambda m: m.linalg.norm(o(m, 3, 3, 3), dim=(0, 1, 2)),
        "norm_vector_fro": lambda m: m.linalg.norm(o(m, 3), "fro"),
        "norm_int": lambda m: m.linalg.norm(o(m, 3, 3, dtype=m.int64)),
        "cross_length": lambda m: m.linalg.cross(o(m, 3, 2), o(m, 3, 2)),
        "cross_dim_length": lambda m: m.cross(o(m, 3, 2), o(m, 3, 2), dim=1),
        "cross_ndim": lambda m: m.linalg.cross(o(m, 4, 1, 3), o(m, 2, 3)),
        "cross_dtype": lambda m: m.linalg.cross(o(m, 3), o(m, 3, dtype=m.float64)),
        "cross_dim_range": lambda m: m.linalg.cross(o(m, 3), o(m, 3), dim=1),
        "einsum_dtype": lambda m: m.einsum("i,i->", o(m, 3), o(m, 3, dtype=m.float64)),
        "einsum_few": lambda m: m.einsum("ij,jk->ik", o(m, 2, 3)),
        "einsum_more": lambda m: m.einsum("ij->i", o(m, 2, 3), o(m, 2)),
        "einsum_size": lambda m: m.einsum("ij,jk->ik", o(m, 2, 3), o(m, 4, 2)),
        "einsum_ndim": lambda m: m.einsum("ijk->i", o(m, 2, 3)),
        "einsum_ellipsis_ndim": lambda m: m.einsum("ijk...->i", o(m, 2, 3)),
        "einsum_char": lambda m: m.einsum("i1->i", o(m, 2, 3)),
        "einsum_two_ellipses": lambda m: m.einsum("...i...->i", o(m, 2, 3)),
        "einsum_output_unknown": lambda m: m.einsum("ij->k", o(m, 2, 3)),
        "einsum_output_repeated": lambda m: m.einsum("ij->ii", o(m, 2, 3)),
        "tensordot_sizes": lambda m: m.tensordot(o(m, 2, 3, 4), o(m, 4, 4, 5), dims=2),
        "tensordot_negative": lambda m: m.tensordot(o(m, 2, 3), o(m, 3, 2), dims=-1),
        "tensordot_too_many": lambda m: m.tensordot(o(m, 2, 3), o(m, 3, 2), dims=3),
        "tensordot_lengths": lambda m: m.tensordot(o(m, 2, 3), o(m, 3, 2), dims=([0, 1], [1])),
        "tensordot_dtype": lambda m: m.tensordot(o(m, 2, 3), o(m, 3, 2, dtype=m.float64), 1),
        "multi_dot_one": lambda m: m.linalg.multi_dot([o(m, 2, 2)]),
        "multi_dot_first_3d": lambda m: m.linalg.multi_dot([o(m, 2, 2, 2), o(m, 2, 2)]),
        "multi_dot_last_3d": lambda m: m.linalg.multi_dot([o(m, 2, 2), o(m, 2, 2, 2)]),
        "multi_dot_middle_1d": lambda m: m.linalg.multi_dot([o(m, 2, 2), o(m, 2), o(m, 2, 2)]),
        "multi_dot_shapes": lambda m: m.linalg.multi_dot([o(m, 2, 3), o(m, 3, 2), o(m, 3, 2)]),
        "multi_dot_dtype": lambda m: m.linalg.multi_dot([o(m, 2, 3),
                                                         o(m, 3, 2, dtype=m.float64)]),
        "addmm_dtype": lambda m: m.addmm(o(m, 2, 2, dtype=m.float64), o(m, 2, 3), o(m, 3, 2)),
        "addmm_1d": lambda m: m.addmm(o(m, 2, 2), o(m, 3), o(m, 3, 2)),
        "addmm_shapes": lambda m: m.addmm(o(m, 2, 2), o(m, 2, 3), o(m, 4, 2)),
        "addmm_input": lambda m: m.addmm(o(m, 3), o(m, 2, 3), o(m, 3, 2)),
        "addmv_vec": lambda m: m.addmv(o(m, 2), o(m, 2, 3), o(m, 4)),
        "addmv_input": lambda m: m.addmv(o(m, 3), o(m, 2, 3), o(m, 3)),
        "addr_2d": lambda m: m.addr(o(m, 2, 2), o(m, 2, 3), o(m, 3)),
        "addr_input": lambda m: m.addr(o(m, 3, 3), o(m, 2), o(m, 3)),
        "baddbmm_shapes": lambda m: m.baddbmm(o(m, 2, 2, 2), o(m, 2, 2, 3), o(m, 3, 3, 2)),
        "addbmm_shapes": lambda m: m.addbmm(o(m, 2, 2), o(m, 2, 2, 3), o(m, 2, 4, 2)),
        "vdot_2d": lambda m: m.vdot(o(m, 2, 2), o(m, 2, 2)),
        "vdot_dtype": lambda m: m.vdot(o(m, 3), o(m, 3, dtype=m.float64)),
        "vdot_size": lambda m: m.vdot(o(m, 3), o(m, 4)),
        "outer_2d": lambda m: m.outer(o(m, 2, 2), o(m, 2)),
        "inner_shapes": lambda m: m.inner(o(m, 2, 3), o(m, 2, 4)),
        "chain_matmul_1d": lambda m: m.chain_matmul(o(m, 3), o(m, 3, 2)),
    }
    return OpCase("refuse_linalg", lambda m, k: cases[k](m), [S(k) for k in cases], F32,
                  grad=False)


OPS.append(_refusals())
