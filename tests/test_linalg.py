"""torch.linalg behaviour the op table cannot express: LinAlgError messages for singular and
non-positive-definite inputs, named result tuples, decompositions' reconstructions and shapes,
and the errors torch raises when differentiating QR where it is not differentiable."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_torch

import ember

SINGULAR = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
NOT_PD = np.diag([1.0, -1, 1])


def _both(torch, fn):
    """The messages torch and ember raise for ``fn(module)``; both must raise RuntimeErrors."""
    with pytest.raises(RuntimeError) as t_err:
        fn(torch)
    with pytest.raises(RuntimeError) as e_err:
        fn(ember)
    assert isinstance(e_err.value, ember.linalg.LinAlgError)
    return str(e_err.value), str(t_err.value)


@requires_torch
@pytest.mark.parametrize("name, fn", [
    ("inv", lambda m: m.linalg.inv(m.tensor(SINGULAR))),
    ("inv_batched", lambda m: m.linalg.inv(m.stack([m.eye(3, dtype=m.float64),
                                                    m.tensor(SINGULAR)]))),
    ("inverse", lambda m: m.inverse(m.tensor(SINGULAR))),
    ("matrix_power_negative", lambda m: m.linalg.matrix_power(m.tensor(SINGULAR), -2)),
    ("solve", lambda m: m.linalg.solve(m.tensor(SINGULAR), m.ones(3, dtype=m.float64))),
    ("cholesky", lambda m: m.linalg.cholesky(m.tensor(NOT_PD))),
    ("cholesky_first_minor", lambda m: m.linalg.cholesky(-m.eye(3))),
    ("cholesky_batched", lambda m: m.linalg.cholesky(m.stack([m.eye(3), -m.eye(3)]))),
])
def test_linalg_error_messages_match_torch(torch, name, fn):
    e_msg, t_msg = _both(torch, fn)
    assert e_msg == t_msg


def test_linalg_error_is_runtime_error():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)


@requires_torch
def test_slogdet_of_singular_matrix(torch):
    e = ember.linalg.slogdet(ember.tensor(SINGULAR))
    t = torch.linalg.slogdet(torch.tensor(SINGULAR))
    assert e.sign.item() == t.sign.item() == 0
    assert e.logabsdet.item() == t.logabsdet.item() == -np.inf


@requires_torch
@pytest.mark.parametrize("call, fields", [
    (lambda m, a: m.linalg.svd(a), ("U", "S", "Vh")),
    (lambda m, a: m.svd(a), ("U", "S", "V")),
    (lambda m, a: m.linalg.qr(a), ("Q", "R")),
    (lambda m, a: m.linalg.eigh(a @ a.mT), ("eigenvalues", "eigenvectors")),
    (lambda m, a: m.linalg.slogdet(a), ("sign", "logabsdet")),
    (lambda m, a: m.slogdet(a), ("sign", "logabsdet")),
    (lambda m, a: m.linalg.lstsq(a, a), ("solution", "residuals", "rank", "singular_values")),
])
def test_named_tuples_match_torch(torch, call, fields):
    x = np.random.default_rng(0).standard_normal((3, 3))
    e, t = call(ember, ember.tensor(x)), call(torch, torch.tensor(x))
    assert type(e).__name__ == type(t).__name__
    assert e._fields == fields and len(t) == len(fields)
    for k, f in enumerate(fields):  # torch's structseqs have no _fields: name each one
        assert getattr(e, f) is e[k]
        assert tuple(getattr(e, f).shape) == tuple(getattr(t, f).shape)


@requires_torch
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_reconstructs_and_matches_torch_shapes(torch, shape, full):
    x = np.random.default_rng(1).standard_normal(shape)
    U, S, Vh = ember.linalg.svd(ember.tensor(x), full_matrices=full)
    tU, tS, tVh = torch.linalg.svd(torch.tensor(x), full_matrices=full)
    assert (U.shape, S.shape, Vh.shape) == (tU.shape, tS.shape, tVh.shape)
    k = S.shape[-1]
    recon = (U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :]
    np.testing.assert_allclose(recon.numpy(), x, atol=1e-12)
    np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-12)


@requires_torch
def test_legacy_svd_returns_v(torch):
    x = np.random.default_rng(2).standard_normal((4, 3))
    U, S, V = ember.svd(ember.tensor(x), some=False)
    assert tuple(U.shape) == tuple(torch.svd(torch.tensor(x), some=False).U.shape) == (4, 4)
    np.testing.assert_allclose(((U[:, :3] * S) @ V.mT).numpy(), x, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("mode, shape", [("r", (4, 3)), ("complete", (4, 3))])
def test_qr_not_differentiable_raises_like_torch(torch, mode, shape):
    x = np.random.default_rng(3).standard_normal(shape)
    msgs = []
    for m in (torch, ember):
        a = m.tensor(x, requires_grad=True)
        _q, r = m.linalg.qr(a, mode=mode)
        with pytest.raises(RuntimeError) as err:
            r.sum().backward()
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1]


def test_einsum_result_does_not_alias_its_input():
    x = ember.ones(2, 3)
    y = ember.einsum("ij->ji", x)
    y.add_(1)
    assert x.sum().item() == 6


@requires_torch
def test_einsum_many_operands_gradients_match_torch(torch):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in [(2, 3), (3, 4), (4, 5), (5, 2)]]
    grads = []
    for m in (torch, ember):
        ts = [m.tensor(a, requires_grad=True) for a in arrays]
        m.einsum("ab,bc,cd,de->ae", *ts).sum().backward()
        grads.append([t.grad.numpy() for t in ts])
    for e, t in zip(grads[1], grads[0]):
        np.testing.assert_allclose(e, t, rtol=1e-12)


@requires_torch
def test_cross_default_dim_warns_like_torch(torch):
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        ember.cross(ember.ones(3, 3), ember.ones(3, 3))
