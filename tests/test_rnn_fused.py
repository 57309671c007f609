"""The fused recurrent layer op (``ember/ops/rnn.py``): one graph node per layer and direction,
checked against the per-step ember-op path (float64, to rounding) and against torch (float32
and float64): outputs, final states and every gradient; double backward; graph shape;
saved-tensor checks."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.ops.rnn import rnn_layer

pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections:UserWarning")

MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {}),
         ("LSTM", {"proj_size": 3})]
MODE_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru", "lstm_proj"]
FUSED_NODES = ("MkldnnRnnLayerBackward0", "GruLayerBackward0", "RnnLayerBackward0")


def _module(mode, extra, dtype=ember.float64, **kw):
    ember.manual_seed(0)
    return getattr(nn, mode)(4, 5, dtype=dtype, **{**extra, **kw})


def _states(mode, m, batch, rng, dtype=np.float64):
    """Initial states as leaves (h0, or (h0, c0) for LSTM)."""
    dirs = 2 if m.bidirectional else 1
    h_size = m.proj_size or m.hidden_size
    h0 = ember.tensor(rng.standard_normal((m.num_layers * dirs, batch, h_size)).astype(dtype),
                      requires_grad=True)
    if mode != "LSTM":
        return h0, [h0]
    c0 = ember.tensor(rng.standard_normal((m.num_layers * dirs, batch, m.hidden_size))
                      .astype(dtype), requires_grad=True)
    return (h0, c0), [h0, c0]


def _flat(out):
    o, h = out
    return [o, *h] if isinstance(h, tuple) else [o, h]


def _run(m, x, hx, leaves, fused, weights, which=None):
    """Forward with the fused or the per-step path, backward a fixed weighting of the chosen
    outputs; returns the outputs and the gradients of ``leaves`` and the parameters."""
    m._fused = fused
    for t in [*leaves, *m.parameters()]:
        t.grad = None
    outs = _flat(m(x) if hx is None else m(x, hx))
    loss = None
    for k, (o, w) in enumerate(zip(outs, weights)):
        if which is None or k in which:
            term = (o * ember.tensor(w)).sum()
            loss = term if loss is None else loss + term
    loss.backward()
    grads = [None if t.grad is None else t.grad.cpu().numpy() for t in [*leaves, *m.parameters()]]
    return [o.detach().cpu().numpy() for o in outs], grads


def _assert_all_close(a, b, rtol, atol):
    for u, v in zip(a, b, strict=True):
        if u is None or v is None:
            assert u is None and v is None
        else:
            np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- fused == per-step


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("num_layers", [1, 3])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_fused_matches_per_step_path_in_float64(mode, extra, num_layers, bidirectional, bias,
                                                batch_first):
    rng = np.random.default_rng(num_layers + 2 * bidirectional + 4 * bias)
    m = _module(mode, extra, num_layers=num_layers, bidirectional=bidirectional, bias=bias,
                batch_first=batch_first)
    T, B = 5, 3
    x = ember.tensor(rng.standard_normal((B, T, 4) if batch_first else (T, B, 4)),
                     requires_grad=True)
    hx, states = _states(mode, m, B, rng)
    shapes = [tuple(o.shape) for o in _flat(m(x, hx))]
    weights = [rng.standard_normal(s) for s in shapes]
    fused = _run(m, x, hx, [x, *states], True, weights)
    step = _run(m, x, hx, [x, *states], False, weights)
    _assert_all_close(fused[0] + fused[1], step[0] + step[1], rtol=1e-12, atol=1e-12)


SOME_OUTPUTS = [(m, e, w) for (m, e) in MODES for w in [(0,), (1,), (2,), (1, 2)]
                if m == "LSTM" or 2 not in w]


@pytest.mark.parametrize("mode,extra,which", SOME_OUTPUTS)
def test_gradient_of_some_outputs_only(mode, extra, which):
    """Outputs that get no gradient (None in the node's backward) are handled as zeros."""
    rng = np.random.default_rng(7)
    m = _module(mode, extra, num_layers=2, bidirectional=True)
    x = ember.tensor(rng.standard_normal((4, 2, 4)), requires_grad=True)
    hx, states = _states(mode, m, 2, rng)
    shapes = [tuple(o.shape) for o in _flat(m(x, hx))]
    weights = [rng.standard_normal(s) for s in shapes]
    fused = _run(m, x, hx, [x, *states], True, weights, which)
    step = _run(m, x, hx, [x, *states], False, weights, which)
    _assert_all_close(fused[1], step[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
def test_default_state_unbatched_and_dropout_match_per_step_path(mode, extra):
    rng = np.random.default_rng(3)
    m = _module(mode, extra, num_layers=3, dropout=0.4, bidirectional=True)
    m.train()
    x = ember.tensor(rng.standard_normal((6, 4)), requires_grad=True)  # unbatched, no state
    shapes = [tuple(o.shape) for o in _flat(m(x))]
    weights = [rng.standard_normal(s) for s in shapes]
    ember.manual_seed(11)  # the same dropout masks for both paths
    fused = _run(m, x, None, [x], True, weights)
    ember.manual_seed(11)
    step = _run(m, x, None, [x], False, weights)
    _assert_all_close(fused[0] + fused[1], step[0] + step[1], rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- against torch


def _torch_pair(torch, mode, extra, dtype, **kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(4, 5, **extra, **kw).to(dtype)
    em = getattr(nn, mode)(4, 5, **extra, **kw, dtype=getattr(ember, str(dtype)[6:]))
    em.load_state_dict({k: ember.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()})
    return tm, em


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("config", [{"num_layers": 1}, {"num_layers": 2, "bidirectional": True},
                                    {"num_layers": 2, "batch_first": True, "bias": False}],
                         ids=["one_layer", "two_bi", "two_batch_first_nobias"])
def test_fused_layer_matches_torch(torch, mode, extra, precision, config):
    tdtype = getattr(torch, precision)
    tm, em = _torch_pair(torch, mode, extra, tdtype, **config)
    rng = np.random.default_rng(5)
    T, B = 7, 3
    shape = (B, T, 4) if config.get("batch_first") else (T, B, 4)
    xa = rng.standard_normal(shape).astype(precision)
    dirs = 2 if config.get("bidirectional") else 1
    h_size = extra.get("proj_size", 5)
    sa = [rng.standard_normal((config["num_layers"] * dirs, B, s)).astype(precision)
          for s in ([h_size, 5] if mode == "LSTM" else [h_size])]
    xe, xt = ember.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    se = [ember.tensor(s, requires_grad=True) for s in sa]
    st = [torch.tensor(s, requires_grad=True) for s in sa]
    he = tuple(se) if mode == "LSTM" else se[0]
    ht = tuple(st) if mode == "LSTM" else st[0]
    oe, ot = _flat(em(xe, he)), _flat(tm(xt, ht))
    rtol, atol = (1e-4, 1e-5) if precision == "float32" else (1e-10, 1e-12)
    for e, t in zip(oe, ot, strict=True):
        np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().cpu().numpy(), rtol=rtol, atol=atol)
    weights = [rng.standard_normal(tuple(t.shape)).astype(precision) for t in ot]
    sum((e * ember.tensor(w)).sum() for e, w in zip(oe, weights)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(ot, weights)).backward()
    for e, t in zip([xe, *se], [xt, *st]):
        np.testing.assert_allclose(e.grad.cpu().numpy(), t.grad.cpu().numpy(), rtol=rtol, atol=atol)
    tp = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp[name].grad.cpu().numpy(), rtol=rtol,
                                   atol=10 * atol, err_msg=name)


@pytest.mark.parametrize("extra", [{}, {"proj_size": 3}], ids=["lstm", "lstm_proj"])
@pytest.mark.parametrize("which", [None, (1, 2)], ids=["all_outputs", "final_states_only"])
def test_lstm_matches_torch_over_several_backward_blocks(torch, extra, which):
    """LSTM's backward runs over blocks of ``CHUNK`` time steps: a sequence of two and a bit
    blocks, both directions, gradients from every output or from the final states alone."""
    from ember.ops.rnn import MkldnnRnnLayerBackward0

    tm, em = _torch_pair(torch, "LSTM", extra, torch.float64, bidirectional=True)
    rng = np.random.default_rng(6)
    T, B = 2 * MkldnnRnnLayerBackward0.CHUNK + 3, 3
    xa = rng.standard_normal((T, B, 4))
    sa = [rng.standard_normal((2, B, s)) for s in (extra.get("proj_size", 5), 5)]
    xe, xt = ember.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    se = [ember.tensor(s, requires_grad=True) for s in sa]
    st = [torch.tensor(s, requires_grad=True) for s in sa]
    oe, ot = _flat(em(xe, tuple(se))), _flat(tm(xt, tuple(st)))
    for e, t in zip(oe, ot, strict=True):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = [rng.standard_normal(tuple(t.shape)) for t in ot]
    keep = range(3) if which is None else which
    sum((oe[k] * ember.tensor(weights[k])).sum() for k in keep).backward()
    sum((ot[k] * torch.tensor(weights[k])).sum() for k in keep).backward()
    for e, t in zip([xe, *se], [xt, *st]):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    tp = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), rtol=1e-10,
                                   atol=1e-11, err_msg=name)


def test_lstm_node_is_torchs_and_one_per_layer_and_direction(torch):
    """torch's CPU LSTM records one MkldnnRnnLayerBackward0 per layer and direction, joined
    by CatBackward0 for bidirectional layers; ember's graph has the same shape."""
    x = ember.randn(5, 2, 4)
    out, _ = nn.LSTM(4, 5)(x)
    t_out, _ = torch.nn.LSTM(4, 5)(torch.randn(5, 2, 4))
    assert out.grad_fn.name() == t_out.grad_fn.name() == "MkldnnRnnLayerBackward0"
    m = nn.LSTM(4, 5, num_layers=3, bidirectional=True)
    out, _ = m(x)
    nodes, stack, seen = [], [out.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        nodes.append(n.name())
        stack.extend(c for c, _ in n.next_functions)
    assert nodes.count("MkldnnRnnLayerBackward0") == 6
    assert out.grad_fn.name() == "CatBackward0"


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
def test_one_fused_node_per_layer(mode, extra):
    m = _module(mode, extra, num_layers=2)
    out = _flat(m(ember.randn(6, 2, 4, dtype=ember.float64)))[0]
    node = out.grad_fn
    assert node.name() in FUSED_NODES
    below = node.next_functions[0][0]
    assert below.name() == node.name()  # layer 2 feeds straight from layer 1's node
    weights = [n.name() for n, _ in node.next_functions[3:5]]
    assert weights == ["torch::autograd::AccumulateGrad"] * 2


# --------------------------------------------------------------------------- double backward


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_gradcheck_and_gradgradcheck_of_the_layer_op(mode, extra, reverse):
    rng = np.random.default_rng(2)
    hidden, size = 3, (2 if extra.get("proj_size") else 3)
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hidden
    cell = "RNN_RELU" if extra.get("nonlinearity") == "relu" else mode
    if cell == "RNN":
        cell = "RNN_TANH"

    def leaf(*shape):
        return ember.tensor(rng.standard_normal(shape) * 0.7, requires_grad=True)

    x, h0, c0 = leaf(3, 2, 2), leaf(2, size), leaf(2, hidden)
    w_ih, w_hh, b_ih, b_hh = leaf(gates, 2), leaf(gates, size), leaf(gates), leaf(gates)
    w_hr = leaf(size, hidden) if extra.get("proj_size") else None

    def f(x, h0, c0, w_ih, w_hh, b_ih, b_hh, *w_hr):
        out = rnn_layer(cell, x, h0, c0 if cell == "LSTM" else None, w_ih, w_hh, b_ih, b_hh,
                        w_hr[0] if w_hr else None, reverse)
        return tuple(o for o in out if o is not None)

    inputs = (x, h0, c0, w_ih, w_hh, b_ih, b_hh) + ((w_hr,) if w_hr is not None else ())
    assert f(*inputs)[0].grad_fn.name() in FUSED_NODES
    assert ember.autograd.gradcheck(f, inputs)
    assert ember.autograd.gradgradcheck(f, inputs)


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
def test_second_order_gradients_match_per_step_path(mode, extra):
    rng = np.random.default_rng(4)
    m = _module(mode, extra, num_layers=2, bidirectional=True)
    x = ember.tensor(rng.standard_normal((4, 2, 4)), requires_grad=True)
    results = []
    for fused in (True, False):
        m._fused = fused
        params = list(m.parameters())
        outs = _flat(m(x))
        loss = sum((o * o).sum() for o in outs)
        grads = ember.autograd.grad(loss, [x, *params], create_graph=True)
        penalty = sum((g * g).sum() for g in grads)
        results.append([g.detach().cpu().numpy() for g in grads]
                       + [g.cpu().numpy() for g in ember.autograd.grad(penalty, [x, *params])])
    _assert_all_close(results[0], results[1], rtol=1e-10, atol=1e-12)


def test_leaf_hooks_run_once_with_create_graph():
    """The recomputation behind create_graph=True does not run a leaf's hooks itself."""
    m = _module("LSTM", {})
    calls = []
    m.weight_hh_l0.register_hook(lambda g: calls.append(1) or g * 2)
    x = ember.randn(3, 2, 4, dtype=ember.float64)
    grads = []
    for fused in (True, False):
        m._fused = fused
        m.zero_grad()
        out, _ = m(x)
        out.sum().backward(create_graph=True)
        grads.append(m.weight_hh_l0.grad.detach().cpu().numpy())
    assert len(calls) == 2
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- graph behaviour


def test_no_grad_forward_records_nothing_and_matches():
    m = _module("LSTM", {}, num_layers=2)
    x = ember.randn(5, 2, 4, dtype=ember.float64)
    with ember.no_grad():
        out, (h, c) = m(x)
    assert out.grad_fn is None and not out.requires_grad
    out2, (h2, c2) = m(x)
    for a, b in ((out, out2), (h, h2), (c, c2)):
        np.testing.assert_array_equal(a.cpu().numpy(), b.detach().cpu().numpy())


def test_backward_twice_needs_retain_graph_and_gives_the_same_gradients():
    m = _module("GRU", {})
    x = ember.randn(5, 2, 4, dtype=ember.float64, requires_grad=True)
    out, h = m(x)
    loss = out.sum() + h.sum()
    loss.backward(retain_graph=True)
    first = x.grad.cpu().numpy().copy()
    x.grad = None
    loss.backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), first)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        loss.backward()


def test_modifying_the_output_in_place_is_caught(torch):
    m = _module("LSTM", {})
    out, _ = m(ember.randn(5, 2, 4, dtype=ember.float64))
    out.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_empty_sequence_error_matches_torch(torch):
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
        torch.nn.LSTM(3, 4)(torch.randn(0, 2, 3))
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        nn.LSTM(3, 4)(ember.randn(0, 2, 3))


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
def test_empty_batch(torch, mode, extra):
    out = _flat(_module(mode, extra)(ember.randn(5, 0, 4, dtype=ember.float64)))
    t_out = _flat(getattr(torch.nn, mode)(4, 5, **extra)(torch.randn(5, 0, 4)))
    assert [tuple(o.shape) for o in out] == [tuple(o.shape) for o in t_out]
