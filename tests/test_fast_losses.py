"""The array kernels of binary_cross_entropy_with_logits, soft_margin_loss, smooth_l1_loss and
huber_loss (ember/ops/losses.py), against torch: values and gradients in float32 and float64
on inputs that take each fast path (host arrays; for smooth_l1/huber's BLAS sums, C-contiguous
float arrays of 4096 elements or more) and their neighbours (0-d and small inputs, transposed
inputs, broadcast targets, weights, pos_weight, a target that needs a gradient, extreme
logits); the array rules (no create_graph) against the Tensor rules, bit for bit; and double
backward by gradgradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import ember

# (the broadcast targets below are meant: torch and ember warn of them)
pytestmark = pytest.mark.filterwarnings("ignore:Using a target size")

FLOATS = ("float32", "float64")
REDUCTIONS = ("none", "mean", "sum")


def _tol(dtype: str) -> dict:
    return {"rtol": 2e-4, "atol": 2e-5} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-10}


def _close(e, t, dtype: str, what: str = "") -> None:
    t = t.detach().cpu().numpy()
    e = e.detach().cpu().numpy()
    assert e.shape == t.shape and e.dtype == t.dtype, what
    scale = float(np.abs(t).max(initial=1.0))  # float32 sums of many terms: absolute slack
    tol = _tol(dtype)
    np.testing.assert_allclose(e, t, rtol=tol["rtol"], atol=tol["atol"] * scale, err_msg=what)


def _leaves(m, arrays, dtype, grad):
    """Tensors of ``arrays`` in ``dtype`` (None stays None); float ones at the positions in
    ``grad`` require a gradient; integer arrays keep their dtype."""
    out = []
    for k, a in enumerate(arrays):
        if a is None:
            out.append(None)
        elif a.dtype.kind == "f":
            out.append(m.tensor(a.astype(dtype), requires_grad=k in grad))
        else:
            out.append(m.tensor(a))
    return out


def _check(torch, fn, arrays, dtype, grad=(0,)) -> None:
    """fn(module, *tensors) in ember and torch: equal values and equal gradients of the inputs
    at the positions ``grad``; then the engine's array rules against the Tensor rules."""
    e_in, t_in = _leaves(ember, arrays, dtype, grad), _leaves(torch, arrays, dtype, grad)
    e_out, t_out = fn(ember, *e_in), fn(torch, *t_in)
    _close(e_out, t_out, dtype, "value")
    seed = np.random.default_rng(3).standard_normal(tuple(t_out.shape)).astype(dtype)
    e_out.backward(ember.tensor(seed))
    t_out.backward(torch.tensor(seed))
    for k in grad:
        _close(e_in[k].grad, t_in[k].grad, dtype, f"gradient of input {k}")
    _raw_and_rules_agree(fn, arrays, dtype, grad)


def _raw_and_rules_agree(fn, arrays, dtype, grad) -> None:
    """The engine's array rules (no create_graph) and the Tensor rules (create_graph) give
    the same gradients, bit for bit; a broadcast input's to within rounding (the engine's own
    sum over the broadcast dims differs in its last bits between its two paths, for an
    ``x - y`` alone as well: not the losses' rules)."""
    xs = _leaves(ember, arrays, dtype, grad)
    out = fn(ember, *xs)
    seed = ember.tensor(np.random.default_rng(5).standard_normal(tuple(out.shape))
                        .astype(dtype))
    leaves = [xs[k] for k in grad]
    raw = ember.autograd.grad(out, leaves, seed, retain_graph=True)
    rules = ember.autograd.grad(out, leaves, seed, create_graph=True)
    for r, t in zip(raw, rules):
        if r.shape == out.shape or out.dim() == 0 and r.shape == xs[0].shape:
            np.testing.assert_array_equal(r.detach().cpu().numpy(), t.detach().cpu().numpy())
        else:
            t = t.detach().cpu().numpy()
            tol = 1e-5 if dtype == "float32" else 1e-13
            np.testing.assert_allclose(r.detach().cpu().numpy(), t, rtol=tol,
                                       atol=tol * float(np.abs(t).max(initial=1.0)))


def _rand(*shape, seed=0, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def _bits(*shape, seed=1):
    return (np.random.default_rng(seed).random(shape) > 0.5).astype(np.float64)


def _signs(*shape, seed=2):
    return np.where(np.random.default_rng(seed).random(shape) > 0.5, 1.0, -1.0)


def _extreme_logits(*shape, seed=0):
    """Logits from -100 to 100 with the extremes and zero in every row."""
    x = _rand(*shape, seed=seed, scale=30.0)
    x[..., 0], x[..., 1], x[..., 2] = 100.0, -100.0, 0.0
    if shape[-1] > 4:
        x[..., 3], x[..., 4] = 20.0, -20.0
    return x


# --------------------------------------------------------------------------- bce with logits

def _bce(reduction, **kw):
    return lambda m, x, t, w=None, pw=None: m.nn.functional.binary_cross_entropy_with_logits(
        x, t, weight=w, pos_weight=pw, reduction=reduction, **kw)


BCE_SHAPES = [(256, 512), (3, 4), (7,), ()]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", BCE_SHAPES)
def test_bce_with_logits_matches_torch(torch, shape, reduction, dtype):
    _check(torch, _bce(reduction), [_rand(*shape, scale=3.0), _bits(*shape)], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_extreme_logits_and_soft_targets(torch, reduction, dtype):
    x = _extreme_logits(64, 80)
    _check(torch, _bce(reduction), [x, _bits(64, 80)], dtype)
    soft = np.random.default_rng(4).random((64, 80))
    _check(torch, _bce(reduction), [x, soft], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("wshape, pwshape", [
    ((256, 512), None), ((512,), None), ((256, 1), None),    # weight, full and broadcast
    (None, (512,)), (None, (256, 512)), (None, (1,)),        # pos_weight
    ((512,), (512,)), ((256, 1), (512,)),                    # both
])
def test_bce_with_logits_weight_and_pos_weight(torch, wshape, pwshape, reduction, dtype):
    w = None if wshape is None else np.abs(_rand(*wshape, seed=6)) + 0.1
    pw = None if pwshape is None else np.abs(_rand(*pwshape, seed=7)) * 2 + 0.1
    x = _extreme_logits(256, 512)
    _check(torch, _bce(reduction), [x, _bits(256, 512), w, pw], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("pw", [False, True])
def test_bce_with_logits_target_gradient(torch, pw, dtype):
    """A target that needs a gradient takes the Tensor rules for both gradients."""
    pos = np.abs(_rand(40, seed=7)) + 0.5 if pw else None
    _check(torch, _bce("mean"), [_rand(30, 40, scale=4.0), np.random.default_rng(1)
                                 .random((30, 40)), None, pos], dtype, grad=(0, 1))


def test_bce_with_logits_is_exact_where_the_loss_is_tiny():
    """max(x, 0) - t x + log1p(exp(-|x|)): no overflow at |x| = 100, and no cancellation
    where torch's (1 - t) x - log_sigmoid(x) gives 0 (t = 0, x = -20)."""
    x = np.array([100.0, -100.0, -20.0, 20.0, 30.0, -30.0, 0.0])
    t = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    want = np.maximum(x, 0) - t * x + np.log1p(np.exp(-np.abs(x)))
    for dtype in FLOATS:
        got = ember.nn.functional.binary_cross_entropy_with_logits(
            ember.tensor(x.astype(dtype)), ember.tensor(t.astype(dtype)), reduction="none")
        # (float32's e**-100 is subnormal: an absolute slack of a few of its steps)
        tol = {"rtol": 1e-6, "atol": 1e-44} if dtype == "float32" else {"rtol": 1e-14}
        np.testing.assert_allclose(got.cpu().numpy(), want, **tol)


def test_bce_with_logits_double_backward():
    x = ember.tensor(_extreme_logits(3, 6) / 20, requires_grad=True)
    t = ember.tensor(np.random.default_rng(1).random((3, 6)), requires_grad=True)
    pw = ember.tensor(np.abs(_rand(6, seed=7)) + 0.5)
    w = ember.tensor(np.abs(_rand(3, 1, seed=6)) + 0.5)
    for kw in ({}, {"pos_weight": pw}, {"weight": w, "pos_weight": pw}):
        fn = lambda x, t, kw=kw: ember.nn.functional.binary_cross_entropy_with_logits(
            x, t, reduction="sum", **kw)
        assert ember.autograd.gradcheck(fn, (x, t))
        assert ember.autograd.gradgradcheck(fn, (x, t))


# --------------------------------------------------------------------------- soft margin

def _soft_margin(reduction):
    return lambda m, x, y: m.nn.functional.soft_margin_loss(x, y, reduction=reduction)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("xshape, yshape", [((256, 512), (256, 512)), ((256, 512), (512,)),
                                            ((3, 4), (3, 4)), ((5,), (5,)), ((), ())])
def test_soft_margin_matches_torch(torch, xshape, yshape, reduction, dtype):
    _check(torch, _soft_margin(reduction), [_rand(*xshape, scale=3.0), _signs(*yshape)], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_soft_margin_integer_target(torch, dtype):
    _check(torch, _soft_margin("mean"), [_rand(30, 40), _signs(30, 40).astype(np.int64)], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_soft_margin_extreme_margins_do_not_overflow(torch, dtype):
    """log(1 + exp(-y x)) at y x = -100 is 100 (torch's log1p(exp(..)) is inf in float32):
    compared with torch in float64; the gradient is -y there, exactly."""
    x = np.array([100.0, -100.0, 100.0, -100.0, 0.0, 20.0, -20.0])
    y = np.array([1.0, 1.0, -1.0, -1.0, 1.0, -1.0, -1.0])
    e_x = ember.tensor(x.astype(dtype), requires_grad=True)
    loss = ember.nn.functional.soft_margin_loss(e_x, ember.tensor(y.astype(dtype)),
                                                reduction="none")
    want = torch.nn.functional.soft_margin_loss(torch.tensor(x), torch.tensor(y),
                                                reduction="none").cpu().numpy()
    np.testing.assert_allclose(loss.detach().cpu().numpy(), want, rtol=1e-6, atol=1e-44)
    loss.sum().backward()
    # (float32's sigmoid(-100) is 0, not e**-100, in ember as in torch)
    np.testing.assert_allclose(e_x.grad.cpu().numpy(), -y / (1 + np.exp(y * x)), rtol=1e-6,
                               atol=1e-43)


def test_soft_margin_double_backward():
    x = ember.tensor(_rand(3, 5, scale=2.0), requires_grad=True)
    y = ember.tensor(_signs(3, 5))
    fn = lambda x: ember.nn.functional.soft_margin_loss(x, y, reduction="sum")
    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))


# --------------------------------------------------------------------------- smooth_l1, huber

def _smooth_l1(reduction, beta):
    return lambda m, x, y: m.nn.functional.smooth_l1_loss(x, y, reduction=reduction, beta=beta)


def _huber(reduction, delta):
    return lambda m, x, y: m.nn.functional.huber_loss(x, y, reduction=reduction, delta=delta)


PAIRS = [((256, 512), (256, 512)), ((256, 512), (512,)), ((256, 512), (256, 1)),
         ((3, 4), (3, 4)), ((64, 64), (64, 64)), ((7,), ()), ((), ())]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.5, 2.0, 0.3, 0.0, 1e-12, 1e-50])
@pytest.mark.parametrize("xshape, yshape", PAIRS)
def test_smooth_l1_matches_torch(torch, xshape, yshape, beta, reduction, dtype):
    _check(torch, _smooth_l1(reduction, beta),
           [_rand(*xshape, scale=2.0), _rand(*yshape, seed=1)], dtype, grad=(0, 1))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.5, 2.0, 0.3])
@pytest.mark.parametrize("xshape, yshape", PAIRS)
def test_huber_matches_torch(torch, xshape, yshape, delta, reduction, dtype):
    _check(torch, _huber(reduction, delta),
           [_rand(*xshape, scale=2.0), _rand(*yshape, seed=1)], dtype, grad=(0, 1))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_smooth_l1_and_huber_non_contiguous_and_target_without_grad(torch, reduction, dtype):
    """A transposed difference (not C-contiguous: the elementwise path, then reduced), and the
    target constant (only the input's array rule runs)."""
    fns = [lambda m, x, y: m.nn.functional.smooth_l1_loss(x.t(), y.t(), reduction=reduction,
                                                          beta=0.7),
           lambda m, x, y: m.nn.functional.huber_loss(x.t(), y.t(), reduction=reduction,
                                                      delta=0.7)]
    for fn in fns:
        _check(torch, fn, [_rand(128, 96, scale=2.0), _rand(128, 96, seed=1)], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_smooth_l1_and_huber_at_the_threshold(torch, reduction, dtype):
    """Differences of exactly +-beta / +-delta (and 0), where the two pieces meet: the
    derivative there is sign(d) (smooth_l1) and +-delta (huber), as torch."""
    d = np.tile(np.array([0.5, -0.5, 0.0, 0.25, -0.75, 2.0, -2.0, 0.5]), (64, 64))
    y = np.round(_rand(64, 512, seed=1) * 64) / 64  # (multiples of 1/64: x - y is exact)
    x = y + d
    assert np.array_equal(x.astype(dtype) - y.astype(dtype), d.astype(dtype))
    _check(torch, _smooth_l1(reduction, 0.5), [x, y], dtype, grad=(0, 1))
    _check(torch, _huber(reduction, 0.5), [x, y], dtype, grad=(0, 1))


@pytest.mark.parametrize("dtype", FLOATS)
def test_smooth_l1_and_huber_keep_inf_and_nan(torch, dtype):
    x = _rand(64, 128, scale=2.0)
    x[0, 0], x[1, 5], x[3, 7] = np.inf, -np.inf, 1.0
    y = _rand(64, 128, seed=1)
    for fn in (_smooth_l1, _huber):
        for red in REDUCTIONS:
            e = fn(red, 0.5)(ember, ember.tensor(x.astype(dtype)), ember.tensor(y.astype(dtype)))
            t = fn(red, 0.5)(torch, torch.tensor(x.astype(dtype)), torch.tensor(y.astype(dtype)))
            np.testing.assert_allclose(e.cpu().numpy(), t.cpu().numpy(), rtol=2e-4)
        x2 = x.copy()
        x2[2, 2] = np.nan
        e = fn("sum", 0.5)(ember, ember.tensor(x2.astype(dtype)), ember.tensor(y.astype(dtype)))
        assert np.isnan(e.item())


def test_smooth_l1_and_huber_double_backward():
    # differences away from the threshold (the second derivative jumps there)
    x = ember.tensor(np.array([[0.1, -0.2, 1.5, -2.5], [0.7, 3.0, -0.05, 0.4]]),
                     requires_grad=True)
    y = ember.tensor(np.zeros((2, 4)), requires_grad=True)
    for fn in (lambda x, y: ember.nn.functional.smooth_l1_loss(x, y, beta=0.9),
               lambda x, y: ember.nn.functional.huber_loss(x, y, delta=0.9, reduction="sum")):
        assert ember.autograd.gradcheck(fn, (x, y))
        assert ember.autograd.gradgradcheck(fn, (x, y))
