"""torch.linalg's primitives: inverse, det, slogdet, solve, cholesky, cholesky_solve, qr, svd,
eigh, pinv and lstsq, each an ``Op`` with its derivative; ``ember.linalg`` (torch.linalg's
namespace) exports them beside the composites built from them (norms, ranks, powers, logdet).

Every function is batched over leading dims. Derivatives are written with ember ops (matmul,
``solve``, ``inv``), so double backward works; the decompositions' rules read the op's own
outputs back as outputs of its node, as torch's derivatives.yaml does.
"""

from __future__ import annotations

from collections import namedtuple

from .._backend import FLOAT_KINDS, host, xp_of
from .._tensor import Tensor, _make
from ..autograd.forward_ad import propagate as propagate_tangents
from ..autograd.grad_mode import state as _grad_state
from ..autograd.record import needs_recording, record
from ._op import Op, is_dual
from .arithmetic import scalar_name
from .products import matmul
from .shape import cat


class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a singular or non-positive-definite input (a RuntimeError,
    as in torch)."""


def _named(name: str, fields: list):
    t = namedtuple(name, fields)
    t.__module__ = "torch.return_types"
    return t


slogdet_result = _named("linalg_slogdet", ["sign", "logabsdet"])
qr_result = _named("linalg_qr", ["Q", "R"])
svd_result = _named("linalg_svd", ["U", "S", "Vh"])
eigh_result = _named("linalg_eigh", ["eigenvalues", "eigenvectors"])
lstsq_result = _named("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


# --------------------------------------------------------------------------- checks and helpers

def _check(A: Tensor, fname: str, square: bool = True, floating: bool = True) -> None:
    """torch's checks, in its order: at least 2-d, square, floating point."""
    a = A._data
    if a.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor A must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{fname}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if floating and a.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as input. "
                           f"Got {scalar_name(A.dtype)}")


def _eye(n: int, like: Tensor) -> Tensor:
    return _make(xp_of(like._data).eye(n, dtype=like._data.dtype))


def _diag_embed(v: Tensor) -> Tensor:
    return v.unsqueeze(-1) * _eye(v._data.shape[-1], v)


def _lower_half_diag(X: Tensor) -> Tensor:
    """tril(X) with its diagonal halved (the Cholesky rule's Phi)."""
    n, xp, dt = X._data.shape[-1], xp_of(X._data), X._data.dtype
    mask = xp.tril(xp.ones((n, n), dtype=dt)) - 0.5 * xp.eye(n, dtype=dt)
    return X * _make(mask)


def _batch_prefix(a, flat_index: int) -> str:
    return f"(Batch element {flat_index}): " if a.ndim > 2 else ""


def _zero_pivot(m) -> int:
    """1-based index of LU's first zero pivot (partial pivoting, as LAPACK's getrf); 0 if none."""
    xp = xp_of(m)
    u = m.copy()
    n = u.shape[0]
    for k in range(n):  # error path only: one pass per column, each row update vectorised
        p = k + int(abs(u[k:, k]).argmax())
        if u[p, k] == 0:
            return k + 1
        u[[k, p]] = u[[p, k]]
        u[k + 1:, k:] -= xp.outer(u[k + 1:, k] / u[k, k], u[k, k:])
    return 0


def _singular_error(a, fname: str) -> LinAlgError:
    xp, n = xp_of(a), a.shape[-1]
    flat = a.reshape(-1, n, n)
    for b, m in enumerate(flat):
        try:
            xp.linalg.inv(m)
        except host.linalg.LinAlgError:
            k = _zero_pivot(m) or n
            return LinAlgError(f"{fname}: {_batch_prefix(a, b)}The diagonal element {k} is zero, "
                               "the inversion could not be completed because the input matrix "
                               "is singular.")
    return LinAlgError(f"{fname}: The input matrix is singular.")


def _inv_array(a, fname: str = "linalg.inv"):
    xp = xp_of(a)
    if a.size == 0:
        return xp.empty_like(a)
    try:
        with xp.errstate(all="ignore"):
            return xp.linalg.inv(a)
    except host.linalg.LinAlgError:
        raise _singular_error(a, fname) from None


class _MultiOutputOp(Op):
    """An op with several outputs; ``output(k)`` rebuilds output k as an output of this node."""

    __slots__ = ("_num_outputs", "outs")

    def output(self, k: int) -> Tensor:
        t = _make(self.outs[k], self)
        t._output_nr = k
        return t


def _apply_multi(cls, inputs: tuple, params: tuple = (), differentiable=None) -> list:
    """Run a multi-output op; outputs listed in ``differentiable`` (default all) get the node."""
    node = object.__new__(cls)
    asarray = xp_of(inputs[0]._data).asarray  # (NumPy scalars become 0-d arrays)
    outs = tuple(asarray(o) for o in node.forward(*[x._data for x in inputs], *params))
    if needs_recording(inputs, _grad_state.grad_enabled):
        node.outs = outs
        diff = [k == 0 or differentiable is None or k in differentiable for k in range(len(outs))]
        result = record(node, inputs, outs, tuple([inputs[i] for i in node.save_inputs]), diff)
    else:
        result = [_make(o) for o in outs]
    if is_dual(*inputs):
        node.outs = outs
        propagate_tangents(node, inputs, tuple(result))
    return result


def _needs_grad(*ts: Tensor) -> bool:
    """Whether the op must run through its node: for a gradient, or a forward-AD tangent."""
    return (_grad_state.grad_enabled and any(t._requires_grad for t in ts)) or is_dual(*ts)


# --------------------------------------------------------------------------- inverse, det

class LinalgInvExBackward0(Op):
    """inv(A): d/dA = -inv^T @ grad @ inv^T."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        return _inv_array(a)

    def backward(self, grad):
        ainv_t = self.saved_output().mT
        return -matmul(matmul(ainv_t, grad), ainv_t)


def inv(A: Tensor) -> Tensor:
    """``torch.linalg.inv``; a singular input raises torch's LinAlgError message."""
    _check(A, "linalg.inv")
    return LinalgInvExBackward0.apply(A)


class LinalgDetBackward0(Op):
    """det(A): d/dA = grad * det(A) * inv(A)^T.

    NOTE: torch goes through an SVD for singular A; here the rule needs A invertible.
    """

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a):
        xp = xp_of(a)
        if a.shape[-1] == 0:
            return xp.ones(a.shape[:-2], dtype=a.dtype)
        return xp.linalg.det(a)

    def backward(self, grad):
        (A,) = self.saved()
        scale = (grad * self.saved_output()).unsqueeze(-1).unsqueeze(-1)
        return scale * inv(A).mT


def det(A: Tensor) -> Tensor:
    """``torch.linalg.det``."""
    _check(A, "linalg.det")
    return LinalgDetBackward0.apply(A)


class LinalgSlogdetBackward0(_MultiOutputOp):
    """slogdet(A) = (sign, log|det A|): d/dA = grad_logabsdet * inv(A)^T (sign is flat)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        xp = xp_of(a)
        if a.shape[-1] == 0:
            one = xp.ones(a.shape[:-2], dtype=a.dtype)
            return one, xp.zeros_like(one)
        sign, logabs = xp.linalg.slogdet(a)
        return sign.astype(a.dtype, copy=False), logabs.astype(a.dtype, copy=False)

    def backward(self, g_sign, g_logabs):
        if g_logabs is None:
            return (None,)
        (A,) = self.saved()
        return g_logabs.unsqueeze(-1).unsqueeze(-1) * inv(A).mT


def slogdet(A: Tensor):
    """``torch.linalg.slogdet``: named tuple (sign, logabsdet)."""
    _check(A, "linalg.slogdet")
    return slogdet_result(*_apply_multi(LinalgSlogdetBackward0, (A,)))


# --------------------------------------------------------------------------- solve

def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """torch's rule: B is a (batch of) vector(s) if 1-d, or if its shape is A's minus the last."""
    a, b = A._data, B._data
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


def _solve_array(a, b, vector: bool = False):
    xp = xp_of(a)
    bb = b[..., None] if vector else b
    try:
        with xp.errstate(all="ignore"):
            x = xp.linalg.solve(a, bb) if a.size and bb.size else \
                xp.zeros(host.broadcast_shapes(a.shape[:-2], bb.shape[:-2]) + bb.shape[-2:],
                         dtype=a.dtype)
    except host.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is "
                          "singular.") from None
    return x[..., 0] if vector else x


class LinalgSolveExBackward0(Op):
    """X = solve(A, B): d/dB = solve(A^T, grad), d/dA = -d/dB @ X^T.
    With left=False (X A = B): d/dB = solve(A^T, grad, left=False), d/dA = -X^T @ d/dB."""

    __slots__ = ("left", "vector")
    save_inputs = (0,)
    save_output = True

    def forward(self, a, b, vector, left=True):
        self.vector, self.left = vector, left
        if not left:  # X A = B is A^T X^T = B^T
            return _solve_array(a.swapaxes(-1, -2), b.swapaxes(-1, -2)).swapaxes(-1, -2)
        return _solve_array(a, b, vector)

    def backward(self, grad):
        (A,) = self.saved()
        gB = LinalgSolveExBackward0.apply(A.mT, grad, params=(self.vector, self.left))
        gA = None
        if self.needs_grad(0):
            X = self.saved_output()
            if not self.left:
                gA = -matmul(X.mT, gB)
            elif self.vector:
                gA = -(gB.unsqueeze(-1) * X.unsqueeze(-2))
            else:
                gA = -matmul(gB, X.mT)
        return gA, (gB if self.needs_grad(1) else None)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """``torch.linalg.solve``: X with A X = B (``left=False``: X A = B)."""
    _check(A, "linalg.solve")
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {scalar_name(A.dtype)} and B of type "
                           f"{scalar_name(B.dtype)} instead")
    vector = _is_vector_rhs(A, B)
    n, b = A._data.shape[-1], B._data.shape
    rows, cols = (b[-1], 1) if vector else (b[-2], b[-1])
    if (rows if left else cols) != n or (vector and not left):
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX' if left else 'XA'} = B ({n}x{n} and {rows}x{cols})")
    return LinalgSolveExBackward0.apply(A, B, params=(vector, left))


# --------------------------------------------------------------------------- cholesky

def _not_pd_order(m) -> int:
    """The order of the first leading minor that is not positive-definite (lower triangle)."""
    xp = xp_of(m)
    low = xp.tril(m)
    sym = low + xp.tril(m, -1).T
    for k in range(1, m.shape[-1] + 1):
        try:
            xp.linalg.cholesky(sym[:k, :k])
        except host.linalg.LinAlgError:
            return k
    return m.shape[-1]


class LinalgCholeskyExBackward0(Op):
    """L = cholesky(A): d/dA = sym(L^-T Phi(L^T grad) L^-1), Phi = tril with half diagonal."""

    __slots__ = ("upper",)
    save_output = True

    def forward(self, a, upper):
        self.upper = upper
        xp = xp_of(a)
        try:
            return xp.linalg.cholesky(a, upper=upper) if a.size else a.copy()
        except host.linalg.LinAlgError:
            n = a.shape[-1]
            for b, m in enumerate(a.reshape(-1, n, n)):
                try:
                    xp.linalg.cholesky(m)
                except host.linalg.LinAlgError:
                    raise LinAlgError(
                        f"linalg.cholesky: {_batch_prefix(a, b)}The factorization could not be "
                        "completed because the input is not positive-definite (the leading minor "
                        f"of order {_not_pd_order(m)} is not positive-definite).") from None
            raise

    def backward(self, grad):
        L = self.saved_output()
        if self.upper:
            L, grad = L.mT, grad.mT
        L_inv = inv(L)
        gA = matmul(matmul(L_inv.mT, _lower_half_diag(matmul(L.mT, grad))), L_inv)
        return (gA + gA.mT) * 0.5


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """``torch.linalg.cholesky``: lower L with A = L L^T (``upper``: U = L^T)."""
    _check(A, "linalg.cholesky")
    return LinalgCholeskyExBackward0.apply(A, params=(upper,))


class CholeskySolveBackward0(Op):
    """X = cholesky_solve(B, L) = (L L^T)^-1 B: d/dB = cholesky_solve(grad, L),
    d/dL = -(gB X^T + X gB^T) L."""

    __slots__ = ("upper",)
    save_inputs = (1,)
    save_output = True

    def forward(self, b, f, upper):
        self.upper = upper
        xp = xp_of(f)
        low = f.swapaxes(-1, -2) if upper else f
        with xp.errstate(all="ignore"):
            y = xp.linalg.solve(low, b)
            return xp.linalg.solve(low.swapaxes(-1, -2), y)

    def backward(self, grad):
        (F,) = self.saved()
        gB = CholeskySolveBackward0.apply(grad, F, params=(self.upper,))
        gF = None
        if self.needs_grad(1):
            X = self.saved_output()
            common = matmul(gB, X.mT)
            common = common + common.mT
            gF = -matmul(F, common) if self.upper else -matmul(common, F)
        return (gB if self.needs_grad(0) else None), gF


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky_solve``: X with (L L^T) X = B, given the Cholesky factor L."""
    for name, t in (("b", B), ("u", L)):
        if t._data.ndim < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has "
                               f"{t._data.ndim} dimensions instead")
    if B._data.dtype != L._data.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{scalar_name(B.dtype)} and A of type {scalar_name(L.dtype)} instead.")
    return CholeskySolveBackward0.apply(B, L, params=(upper,))


# --------------------------------------------------------------------------- qr

class LinalgQrBackward0(_MultiOutputOp):
    """A = QR: for m >= n, d/dA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q; for m < n
    the square block [X | Y] = Q [U | V] reduces to it with gQ + Y gV^T."""

    __slots__ = ("mode",)
    save_inputs = (0,)

    def forward(self, a, mode):
        self.mode = mode
        xp = xp_of(a)
        if mode == "r":
            return xp.empty((0,), dtype=a.dtype), xp.linalg.qr(a, mode="r")
        q, r = xp.linalg.qr(a, mode=mode)
        return q, r

    def backward(self, gQ, gR):
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                               "going to differentiate through linalg.qr.")
        Q, R = self.output(0), self.output(1)
        m, n = Q._data.shape[-2], R._data.shape[-1]
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        if m >= n:
            return _qr_square_backward(gQ, gR, Q, R)
        Y = self.saved()[0][..., m:]
        U, gU = R[..., :m], (gR[..., :m] if gR is not None else None)
        gV = gR[..., m:] if gR is not None else None
        if gV is not None:
            gQ = matmul(Y, gV.mT) if gQ is None else gQ + matmul(Y, gV.mT)
        gX = _qr_square_backward(gQ, gU, Q, U)
        gY = matmul(Q, gV) if gV is not None else \
            _make(xp_of(Y._data).zeros(Y._data.shape, Y._data.dtype))
        return cat([gX, gY], -1)


def _qr_square_backward(gQ, gR, Q: Tensor, R: Tensor) -> Tensor:
    if gR is not None:
        M = matmul(R, gR.mT)
        if gQ is not None:
            M = M - matmul(gQ.mT, Q)
    else:
        M = -matmul(gQ.mT, Q)
    n = M._data.shape[-1]
    xp = xp_of(M._data)
    low = xp.tril(xp.ones((n, n), dtype=M._data.dtype), -1)
    strict = M * _make(low)
    sym = strict + strict.mT + M * _eye(n, M)
    B = matmul(Q, sym)
    if gQ is not None:
        B = B + gQ
    return solve(R, B.mT).mT  # B R^-T


def qr(A: Tensor, mode: str = "reduced"):
    """``torch.linalg.qr``: named tuple (Q, R); ``mode`` 'reduced', 'complete' or 'r'."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    _check(A, "linalg.qr", square=False)
    return qr_result(*_apply_multi(LinalgQrBackward0, (A,), (mode,)))


# --------------------------------------------------------------------------- svd, eigh

class LinalgSvdBackward0(_MultiOutputOp):
    """A = U diag(S) Vh (torch's svd_backward, real case):
    gA = U [(skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS)] Vh, E_ij = S_j^2 - S_i^2, plus
    the terms for the columns of U (or rows of Vh) outside the span when m != n."""

    __slots__ = ("full",)

    def forward(self, a, full, compute_uv):
        self.full = full
        xp = xp_of(a)
        if not compute_uv:
            return (xp.linalg.svd(a, compute_uv=False),)
        u, s, vh = xp.linalg.svd(a, full_matrices=full)
        return u, s, vh

    def backward(self, gU, gS, gVh):
        U, S, Vh = self.output(0), self.output(1), self.output(2)
        m, n = U._data.shape[-2], Vh._data.shape[-1]
        k = S._data.shape[-1]
        if self.full:
            U, Vh = U[..., :k], Vh[..., :k, :]
            gU = gU[..., :k] if gU is not None else None
            gVh = gVh[..., :k, :] if gVh is not None else None
        if gU is None and gVh is None:
            if gS is None:
                return (None,)
            return matmul(U * gS.unsqueeze(-2), Vh)
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye(k, S)
        if gU is not None:
            UhgU = matmul(U.mT, gU)
            skU = (UhgU - UhgU.mT) * S.unsqueeze(-2)
        if gVh is not None:
            VhgV = matmul(Vh, gVh.mT)
            skV = S.unsqueeze(-1) * (VhgV - VhgV.mT)
        gA = (skU + skV if gU is not None and gVh is not None else
              skU if gU is not None else skV) / E
        if gS is not None:
            gA = gA + _diag_embed(gS)
        if m > k and gU is not None:
            gA = matmul(U, gA)
            gUSinv = gU / S.unsqueeze(-2)
            gA = gA + gUSinv - matmul(U, matmul(U.mT, gUSinv))
            return matmul(gA, Vh)
        if n > k and gVh is not None:
            gA = matmul(gA, Vh)
            gVhSinv = gVh / S.unsqueeze(-1)
            gA = gA + gVhSinv - matmul(matmul(gVhSinv, Vh.mT), Vh)
            return matmul(U, gA)
        return matmul(U, matmul(gA, Vh))


def svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """``torch.linalg.svd``: named tuple (U, S, Vh)."""
    _check(A, "linalg.svd", square=False)
    return svd_result(*_apply_multi(LinalgSvdBackward0, (A,), (full_matrices, True)))


def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """``torch.linalg.svdvals``: the singular values, descending."""
    _check(A, "linalg.svdvals", square=False)
    if _needs_grad(A):  # the derivative needs U and Vh: one SVD node, as torch records
        return _apply_multi(LinalgSvdBackward0, (A,), (False, True))[1]
    return _make(xp_of(A._data).linalg.svd(A._data, compute_uv=False))


class LinalgEighBackward0(_MultiOutputOp):
    """A = V diag(L) V^T: gA = V (diag(gL) + skew(V^T gV) / 2 / E) V^T, E_ij = L_j - L_i."""

    __slots__ = ()

    def forward(self, a, uplo, compute_v):
        xp = xp_of(a)
        if not compute_v:
            return (xp.linalg.eigvalsh(a, UPLO=uplo),)
        w, v = xp.linalg.eigh(a, UPLO=uplo)
        return w, v

    def backward(self, gL, gV):
        L, V = self.output(0), self.output(1)
        if gV is None:
            if gL is None:
                return (None,)
            return matmul(V * gL.unsqueeze(-2), V.mT)
        n = L._data.shape[-1]
        VhgV = matmul(V.mT, gV)
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + _eye(n, L)
        inner = (VhgV - VhgV.mT) * 0.5 / E
        if gL is not None:
            inner = inner + _diag_embed(gL)
        return matmul(V, matmul(inner, V.mT))


def _check_uplo(UPLO: str) -> None:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A: Tensor, UPLO: str = "L"):
    """``torch.linalg.eigh``: named tuple (eigenvalues ascending, eigenvectors)."""
    _check(A, "linalg.eigh")
    _check_uplo(UPLO)
    return eigh_result(*_apply_multi(LinalgEighBackward0, (A,), (UPLO, True)))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """``torch.linalg.eigvalsh``: the eigenvalues of a symmetric matrix, ascending."""
    _check(A, "linalg.eigvalsh")
    _check_uplo(UPLO)
    if _needs_grad(A):
        return _apply_multi(LinalgEighBackward0, (A,), (UPLO, True))[0]
    return _make(xp_of(A._data).linalg.eigvalsh(A._data, UPLO=UPLO))


# --------------------------------------------------------------------------- pinv, lstsq

def _tolerance(s, shape: tuple, atol, rtol):
    """max(atol, rtol * largest singular value), with torch's defaults for missing ones."""
    xp = xp_of(s)
    if isinstance(atol, Tensor):
        atol = atol._data
    if isinstance(rtol, Tensor):
        rtol = rtol._data
    if rtol is None:
        rtol = 0.0 if (atol is not None and bool((xp.asarray(atol) > 0).any())) else \
            host.finfo(s.dtype).eps * max(shape[-2:])
    if atol is None:
        atol = 0.0
    smax = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,),
                                                                         s.dtype)
    atol = xp.asarray(atol)[..., None] if getattr(atol, "ndim", 0) else atol
    rtol = xp.asarray(rtol)[..., None] if getattr(rtol, "ndim", 0) else rtol
    return xp.maximum(atol, rtol * smax)


def _pinv_array(a, atol, rtol):
    xp = xp_of(a)
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    keep = s > _tolerance(s, a.shape, atol, rtol)
    with xp.errstate(divide="ignore"):
        s_inv = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(a.dtype)
    return (vh.swapaxes(-1, -2) * s_inv[..., None, :]) @ u.swapaxes(-1, -2)


def _pinv_backward(grad: Tensor, pinvA: Tensor, A: Tensor) -> Tensor:
    """torch's pinv_backward (real case), arranged for the smaller of m and n."""
    m, n = A._data.shape[-2:]
    pinvAh, gradh = pinvA.mT, grad.mT
    if m <= n:
        K = matmul(gradh, pinvA)
        KpinvAh = matmul(K, pinvAh)
        return (-matmul(pinvA, K).mT + KpinvAh - matmul(matmul(A, pinvA), KpinvAh)
                + matmul(matmul(pinvAh, pinvA), gradh - matmul(K, A)))
    K = matmul(pinvA, gradh)
    pinvAhK = matmul(pinvAh, K)
    return (-matmul(K, pinvA).mT + matmul(matmul(gradh - matmul(A, K), pinvA), pinvAh)
            + pinvAhK - matmul(matmul(pinvAhK, pinvA), A))


class LinalgPinvBackward0(Op):
    """pinv(A) through the SVD, singular values below max(atol, rtol * s_max) dropped."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a, atol, rtol, hermitian):
        if a.size == 0:
            return xp_of(a).zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), dtype=a.dtype)
        return _pinv_array(a, atol, rtol)

    def backward(self, grad):
        (A,) = self.saved()
        return _pinv_backward(grad, self.saved_output(), A)


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """``torch.linalg.pinv``: the Moore-Penrose pseudo-inverse."""
    if A._data.ndim < 2 or A._data.dtype.kind not in FLOAT_KINDS:
        shape = ", ".join(map(str, A._data.shape))
        raise RuntimeError(f"linalg.pinv({scalar_name(A.dtype)}{{[{shape}]}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble "
                           "types")
    return LinalgPinvBackward0.apply(A, params=(atol, rtol, hermitian))


class LinalgLstsqBackward0(_MultiOutputOp):
    """(solution, residuals) of lstsq; solution = pinv(A) B: d/dB = pinv(A)^T grad, d/dA
    through pinv's rule with grad @ B^T (torch's linalg_lstsq_backward; residuals' gradient is
    not propagated, as in torch)."""

    __slots__ = ("vector",)
    save_inputs = (0, 1)

    def forward(self, a, b, vector, rcond, want_residuals):
        self.vector = vector
        xp = xp_of(a)
        bb = b[..., None] if vector else b
        x = _pinv_array(a, None, rcond) @ bb if a.size else \
            xp.zeros(a.shape[:-2] + (a.shape[-1], bb.shape[-1]), dtype=a.dtype)
        residuals = xp.zeros((0,), dtype=a.dtype)
        if want_residuals:
            r = a @ x - bb
            residuals = (r * r).sum(axis=-2)
            residuals = residuals[..., 0] if vector else residuals
        return (x[..., 0] if vector else x), residuals

    def backward(self, grad, g_residuals=None):
        if grad is None:
            return (None,)
        A, B = self.saved()
        if self.vector:
            grad, B = grad.unsqueeze(-1), B.unsqueeze(-1)
        pinvA = pinv(A)
        gA = _pinv_backward(matmul(grad, B.mT), pinvA, A) if self.needs_grad(0) else None
        gB = None
        if self.needs_grad(1):
            gB = matmul(pinvA.mT, grad)
            if self.vector:
                gB = gB.squeeze(-1)
        return gA, gB


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """``torch.linalg.lstsq``: named tuple (solution, residuals, rank, singular_values), filled
    as torch's default CPU driver 'gelsy' does (residuals and singular values empty)."""
    a, b = A._data, B._data
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if b.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if a.dtype != b.dtype:
        raise RuntimeError("torch.linalg.lstsq: Expected input and other to have the same dtype, "
                           f"but got input's dtype {scalar_name(A.dtype)} and other's dtype "
                           f"{scalar_name(B.dtype)}")
    vector = b.ndim == a.ndim - 1
    if (b.shape[-1] if vector else b.shape[-2]) != a.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)"
                           if not vector else
                           "torch.linalg.lstsq: input.size(-2) should match other.size(-1)")
    driver = driver or "gelsy"
    if rcond is None:
        rcond = host.finfo(a.dtype).eps * max(a.shape[-2:])
    xp = xp_of(a)
    s = xp.linalg.svd(a, compute_uv=False) if a.size else xp.zeros(a.shape[:-2] + (0,), a.dtype)
    rank = xp.asarray((s > _tolerance(s, a.shape, 0.0, rcond)).sum(axis=-1), dtype=host.int64)
    m, n = a.shape[-2:]
    want_residuals = driver != "gelsy" and m > n and bool((rank == n).all())
    X, residuals = _apply_multi(LinalgLstsqBackward0, (A, B), (vector, rcond, want_residuals))
    svals = s if driver in ("gelsd", "gelss") else xp.zeros((0,), dtype=a.dtype)
    if driver == "gels":
        rank = xp.zeros((0,), dtype=host.int64)
    return lstsq_result(X, residuals, _make(rank), _make(svals))
