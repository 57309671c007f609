"""nn.RNN / LSTM / GRU and their cells against torch: outputs, final states and gradients
(inputs, initial states, every parameter) with torch's parameters copied in."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

RTOL, ATOL = 1e-4, 1e-5

# torch's own note that its LSTM-with-projection falls back from oneDNN
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections:UserWarning")


def _copy_params(tm, em):
    em.load_state_dict({k: ember.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()})


def _close(e, t, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(e.detach().cpu().numpy() if hasattr(e, "detach") else e,
                               t.detach().cpu().numpy(), rtol=rtol, atol=atol)


def _leaf(torch, arr):
    return (ember.tensor(arr, requires_grad=True),
            torch.tensor(arr, requires_grad=True))


def _states(torch, rng, shapes):
    return [_leaf(torch, rng.standard_normal(s).astype(np.float32)) for s in shapes]


def _weighted_sum(outs, weights):
    total = None
    for o, w in zip(outs, weights):
        term = (o * w).sum()
        total = term if total is None else total + term
    return total


def _check_same(torch, tm, em, args_e, args_t, leaves, rng):
    """Run both, compare outputs, then backward a random weighting of every output and
    compare the gradients of ``leaves`` (ember, torch) pairs and of all parameters."""
    out_e, out_t = em(*args_e), tm(*args_t)
    flat_e = list(_flatten(out_e))
    flat_t = list(_flatten(out_t))
    assert len(flat_e) == len(flat_t)
    for e, t in zip(flat_e, flat_t):
        assert tuple(e.shape) == tuple(t.shape)
        _close(e, t)
    weights = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for t in flat_t]
    _weighted_sum(flat_e, [ember.tensor(w) for w in weights]).backward()
    _weighted_sum(flat_t, [torch.tensor(w) for w in weights]).backward()
    for e, t in leaves:
        _close(e.grad, t.grad)
    named_t = dict(tm.named_parameters())
    names_e = [n for n, _ in em.named_parameters()]
    assert names_e == list(named_t)
    for name, p in em.named_parameters():
        _close(p.grad, named_t[name].grad, atol=1e-4)


def _flatten(out):
    if isinstance(out, (tuple, list)):
        for o in out:
            yield from _flatten(o)
    else:
        yield out


# --------------------------------------------------------------------------- full layers

MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {}),
         ("LSTM", {"proj_size": 3})]
MODE_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru", "lstm_proj"]


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_layer_matches_torch(torch, mode, extra, num_layers, bidirectional, batch_first):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    kw = dict(num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first,
              **extra)
    tm = getattr(torch.nn, mode)(4, 5, **kw)
    em = getattr(nn, mode)(4, 5, **kw)
    _copy_params(tm, em)
    T, B = 6, 3
    shape = (B, T, 4) if batch_first else (T, B, 4)
    x = _leaf(torch, rng.standard_normal(shape).astype(np.float32))
    dirs = 2 if bidirectional else 1
    h_size = extra.get("proj_size", 5)
    if mode == "LSTM":
        (h0, c0) = _states(torch, rng, [(num_layers * dirs, B, h_size),
                                        (num_layers * dirs, B, 5)])
        args_e, args_t = (x[0], (h0[0], c0[0])), (x[1], (h0[1], c0[1]))
        leaves = [x, h0, c0]
    else:
        (h0,) = _states(torch, rng, [(num_layers * dirs, B, 5)])
        args_e, args_t = (x[0], h0[0]), (x[1], h0[1])
        leaves = [x, h0]
    _check_same(torch, tm, em, args_e, args_t, leaves, rng)


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
def test_layer_without_bias_and_default_state(torch, mode, extra):
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    tm = getattr(torch.nn, mode)(3, 6, num_layers=2, bias=False, bidirectional=True, **extra)
    em = getattr(nn, mode)(3, 6, num_layers=2, bias=False, bidirectional=True, **extra)
    _copy_params(tm, em)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = _leaf(torch, rng.standard_normal((5, 2, 3)).astype(np.float32))
    _check_same(torch, tm, em, (x[0],), (x[1],), [x], rng)


@pytest.mark.parametrize("mode,extra", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_unbatched_input(torch, mode, extra, batch_first):
    torch.manual_seed(2)
    rng = np.random.default_rng(2)
    kw = dict(num_layers=2, bidirectional=True, batch_first=batch_first, **extra)
    tm = getattr(torch.nn, mode)(4, 5, **kw)
    em = getattr(nn, mode)(4, 5, **kw)
    _copy_params(tm, em)
    x = _leaf(torch, rng.standard_normal((7, 4)).astype(np.float32))
    h_size = extra.get("proj_size", 5)
    if mode == "LSTM":
        h0, c0 = _states(torch, rng, [(4, h_size), (4, 5)])
        args_e, args_t, leaves = (x[0], (h0[0], c0[0])), (x[1], (h0[1], c0[1])), [x, h0, c0]
    else:
        (h0,) = _states(torch, rng, [(4, 5)])
        args_e, args_t, leaves = (x[0], h0[0]), (x[1], h0[1]), [x, h0]
    _check_same(torch, tm, em, args_e, args_t, leaves, rng)
    # and without initial states
    out_e, out_t = em(x[0]), tm(x[1])
    for e, t in zip(_flatten(out_e), _flatten(out_t)):
        assert tuple(e.shape) == tuple(t.shape)
        _close(e, t)


def test_lstm_dropout_eval_is_deterministic_and_matches_torch(torch):
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    tm = torch.nn.LSTM(4, 8, num_layers=2, dropout=0.5).eval()
    em = nn.LSTM(4, 8, num_layers=2, dropout=0.5).eval()
    _copy_params(tm, em)
    x = _leaf(torch, rng.standard_normal((5, 2, 4)).astype(np.float32))
    _check_same(torch, tm, em, (x[0],), (x[1],), [x], rng)


def test_dropout_between_layers_in_training(torch):
    # p=1 zeroes the second layer's input: deterministic, and torch does the same
    torch.manual_seed(4)
    rng = np.random.default_rng(4)
    tm = torch.nn.GRU(4, 6, num_layers=2, dropout=1.0)
    em = nn.GRU(4, 6, num_layers=2, dropout=1.0)
    _copy_params(tm, em)
    x = _leaf(torch, rng.standard_normal((5, 2, 4)).astype(np.float32))
    _check_same(torch, tm, em, (x[0],), (x[1],), [x], rng)
    # p=0.5: the last layer's output changes from call to call; eval mode does not
    em = nn.LSTM(4, 6, num_layers=3, dropout=0.5)
    xe = ember.randn(5, 2, 4)
    a, b = em(xe)[0], em(xe)[0]
    assert not np.allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    em.eval()
    assert np.array_equal(em(xe)[0].detach().cpu().numpy(), em(xe)[0].detach().cpu().numpy())


def test_float64(torch):
    torch.manual_seed(5)
    tm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
    em = nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
    _copy_params(tm, em)
    x = np.random.default_rng(5).standard_normal((4, 2, 3))
    out_e, (h_e, c_e) = em(ember.tensor(x))
    out_t, (h_t, c_t) = tm(torch.tensor(x))
    assert out_e.dtype == ember.float64
    np.testing.assert_allclose(out_e.detach().cpu().numpy(), out_t.detach().cpu().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h_e.detach().cpu().numpy(), h_t.detach().cpu().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c_e.detach().cpu().numpy(), c_t.detach().cpu().numpy(), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- cells

CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
         ("GRUCell", {})]
CELL_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru"]


@pytest.mark.parametrize("cell,extra", CELLS, ids=CELL_IDS)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_cell_matches_torch(torch, cell, extra, bias, batched):
    torch.manual_seed(6)
    rng = np.random.default_rng(6)
    tm = getattr(torch.nn, cell)(4, 5, bias=bias, **extra)
    em = getattr(nn, cell)(4, 5, bias=bias, **extra)
    _copy_params(tm, em)
    lead = (3,) if batched else ()
    x = _leaf(torch, rng.standard_normal(lead + (4,)).astype(np.float32))
    if cell == "LSTMCell":
        h0, c0 = _states(torch, rng, [lead + (5,), lead + (5,)])
        args_e, args_t, leaves = (x[0], (h0[0], c0[0])), (x[1], (h0[1], c0[1])), [x, h0, c0]
    else:
        (h0,) = _states(torch, rng, [lead + (5,)])
        args_e, args_t, leaves = (x[0], h0[0]), (x[1], h0[1]), [x, h0]
    _check_same(torch, tm, em, args_e, args_t, leaves, rng)
    out_e, out_t = em(x[0]), tm(x[1])  # default zero state
    for e, t in zip(_flatten(out_e), _flatten(out_t)):
        assert tuple(e.shape) == tuple(t.shape)
        _close(e, t)


def test_cell_unrolled_over_time_matches_layer(torch):
    """An LSTMCell stepped by hand gives nn.LSTM's outputs with the same weights."""
    torch.manual_seed(7)
    layer = nn.LSTM(3, 4)
    cell = nn.LSTMCell(3, 4)
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = ember.randn(5, 2, 3)
    out, (h_n, c_n) = layer(x)
    h = c = ember.zeros(2, 4)
    for t in range(5):
        h, c = cell(x[t], (h, c))
        np.testing.assert_allclose(h.detach().cpu().numpy(), out[t].detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.detach().cpu().numpy(), h_n[0].detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.detach().cpu().numpy(), c_n[0].detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- structure


@pytest.mark.parametrize("mode,kw", [
    ("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 3}),
    ("LSTM", {"num_layers": 2, "batch_first": True}),
    ("LSTM", {"proj_size": 5, "num_layers": 2, "bias": False, "dropout": 0.5,
              "bidirectional": True}),
    ("GRU", {"bidirectional": True, "dropout": 0.25, "num_layers": 2}),
])
def test_parameters_repr_and_flat_weights_match_torch(torch, mode, kw):
    tm = getattr(torch.nn, mode)(10, 20, **kw)
    em = getattr(nn, mode)(10, 20, **kw)
    assert repr(em) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in em.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert em._flat_weights_names == tm._flat_weights_names
    assert em._all_weights == tm._all_weights
    assert [[tuple(p.shape) for p in ps] for ps in em.all_weights] == \
        [[tuple(p.shape) for p in ps] for ps in tm.all_weights]
    assert all(a is b for a, b in zip(em._flat_weights, em.parameters()))
    assert em.flatten_parameters() is None
    for attr in ("mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                 "dropout", "bidirectional", "proj_size"):
        assert getattr(em, attr) == getattr(tm, attr), attr
    # state dicts interchange both ways
    tm.load_state_dict({k: torch.tensor(v.cpu().numpy()) for k, v in em.state_dict().items()})


@pytest.mark.parametrize("cell,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu",
                                                                    "bias": False}),
                                     ("LSTMCell", {}), ("GRUCell", {"bias": False})])
def test_cell_parameters_and_repr_match_torch(torch, cell, kw):
    tm = getattr(torch.nn, cell)(10, 20, **kw)
    em = getattr(nn, cell)(10, 20, **kw)
    assert repr(em) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in em.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    if not kw.get("bias", True):
        assert em.bias_ih is None and em.bias_hh is None


@pytest.mark.parametrize("make", [lambda: nn.LSTM(8, 64, num_layers=2, bidirectional=True),
                                  lambda: nn.GRUCell(8, 64)])
def test_default_init_is_uniform_over_one_over_sqrt_hidden(make):
    m = make()
    bound = 1 / math.sqrt(64)
    values = np.concatenate([p.detach().cpu().numpy().ravel() for p in m.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert abs(values.mean()) < 0.05 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.05 * bound  # U(-a, a): std a/sqrt(3)
    for p in m.parameters():  # every tensor is drawn, none left at zero
        assert p.detach().cpu().numpy().std() > 0.3 * bound
    before = [p.detach().cpu().numpy().copy() for p in m.parameters()]
    m.reset_parameters()
    assert not any(np.array_equal(b, p.detach().cpu().numpy()) for b, p in zip(before, m.parameters()))


def test_constructor_errors_match_torch(torch):
    cases = [
        ("RNN", (3, 4), {"nonlinearity": "sigmoid"}),
        ("GRU", (3, 4), {"proj_size": 2}),
        ("RNN", (3, 4), {"proj_size": 2}),
        ("LSTM", (3, 4), {"proj_size": 4}),
        ("LSTM", (3, 4), {"proj_size": -1}),
        ("LSTM", (0, 4), {}),
        ("LSTM", (3, 0), {}),
        ("LSTM", (3.0, 4), {}),
        ("LSTM", (3, 4), {"num_layers": 0}),
        ("LSTM", (3, 4), {"dropout": 1.5}),
        ("LSTM", (3, 4), {"dropout": True}),
        ("LSTM", (3, 4), {"bias": 1}),
        ("LSTM", (3, 4), {"batch_first": None}),
    ]
    for mode, args, kw in cases:
        with pytest.raises(Exception) as te:
            getattr(torch.nn, mode)(*args, **kw)
        with pytest.raises(type(te.value)) as ee:
            getattr(nn, mode)(*args, **kw)
        assert str(ee.value) == str(te.value), (mode, args, kw)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)


def _same_error(torch, make_t, make_e, call):
    with pytest.raises(Exception) as te:
        call(torch, make_t)
    with pytest.raises(type(te.value)) as ee:
        call(ember, make_e)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("mode,call", [
    ("LSTM", lambda lib, m: m(lib.zeros(5, 2, 7))),
    ("GRU", lambda lib, m: m(lib.zeros(5, 2, 7))),
    ("RNN", lambda lib, m: m(lib.zeros(5, 2, 3, 1))),
    ("LSTM", lambda lib, m: m(lib.zeros(5, 2, 3, 1))),
    ("GRU", lambda lib, m: m(lib.zeros(3))),
    ("RNN", lambda lib, m: m(lib.zeros(5, 2, 3), lib.zeros(1, 3, 4))),
    ("RNN", lambda lib, m: m(lib.zeros(5, 2, 3), lib.zeros(1, 2, 5))),
    ("RNN", lambda lib, m: m(lib.zeros(5, 2, 3), lib.zeros(2, 4))),
    ("GRU", lambda lib, m: m(lib.zeros(5, 3), lib.zeros(1, 1, 4))),
    ("LSTM", lambda lib, m: m(lib.zeros(5, 2, 3), (lib.zeros(1, 3, 4), lib.zeros(1, 2, 4)))),
    ("LSTM", lambda lib, m: m(lib.zeros(5, 2, 3), (lib.zeros(1, 2, 4), lib.zeros(1, 2, 5)))),
    ("LSTM", lambda lib, m: m(lib.zeros(5, 2, 3), (lib.zeros(2, 4), lib.zeros(1, 2, 4)))),
    ("LSTM", lambda lib, m: m(lib.zeros(5, 3), (lib.zeros(1, 1, 4), lib.zeros(1, 4)))),
    ("LSTM", lambda lib, m: m(lib.zeros(5, 2, 3, dtype=lib.float64))),
])
def test_forward_errors_match_torch(torch, mode, call):
    _same_error(torch, getattr(torch.nn, mode)(3, 4), getattr(nn, mode)(3, 4), call)


@pytest.mark.parametrize("cell,call", [
    ("RNNCell", lambda lib, m: m(lib.zeros(2, 5))),
    ("RNNCell", lambda lib, m: m(lib.zeros(2, 3), lib.zeros(3, 4))),
    ("RNNCell", lambda lib, m: m(lib.zeros(2, 3, 1))),
    ("RNNCell", lambda lib, m: m(lib.zeros(2, 3), lib.zeros(2, 4, 1))),
    ("GRUCell", lambda lib, m: m(lib.zeros(2, 3), lib.zeros(2, 5))),
    ("GRUCell", lambda lib, m: m(lib.zeros(2, 3, 1))),
    ("LSTMCell", lambda lib, m: m(lib.zeros(2, 3), (lib.zeros(3, 4), lib.zeros(2, 4)))),
    ("LSTMCell", lambda lib, m: m(lib.zeros(2, 3), (lib.zeros(2, 4), lib.zeros(2, 5)))),
    ("LSTMCell", lambda lib, m: m(lib.zeros(2, 3), (lib.zeros(2, 4), lib.zeros(2, 4, 1)))),
])
def test_cell_errors_match_torch(torch, cell, call):
    _same_error(torch, getattr(torch.nn, cell)(3, 4), getattr(nn, cell)(3, 4), call)


def test_packed_sequence_input_is_refused_clearly():
    m = nn.LSTM(3, 4)
    try:
        from ember.nn.utils.rnn import pack_padded_sequence
    except ImportError:
        with pytest.raises(TypeError, match="expected input to be a Tensor"):
            m((ember.zeros(5, 2, 3), ember.tensor([5, 5])))
        return
    packed = pack_padded_sequence(ember.zeros(5, 2, 3), ember.tensor([5, 3]))
    with pytest.raises(NotImplementedError, match="PackedSequence"):
        m(packed)


def test_pickle_and_to_keep_working():
    m = nn.LSTM(3, 4, num_layers=2)
    m2 = pickle.loads(pickle.dumps(m))
    x = ember.randn(5, 2, 3)
    np.testing.assert_array_equal(m(x)[0].detach().cpu().numpy(), m2(x)[0].detach().cpu().numpy())
    m.double()
    assert m.weight_ih_l0.dtype == ember.float64
    assert m._flat_weights[0] is m.weight_ih_l0
    assert m(x.double())[0].dtype == ember.float64


# --------------------------------------------------------------------------- end to end


def test_lstm_training_matches_torch(torch):
    """nn.LSTM(8, 16) + a linear head, 100 SGD steps from the same weights, in both."""
    torch.manual_seed(8)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((10, 4, 8)).astype(np.float32)
    target = np.sin(np.cumsum(x[..., 0], axis=0)).astype(np.float32)[..., None]  # (10, 4, 1)
    t_lstm = torch.nn.LSTM(8, 16)
    t_w = torch.nn.Parameter(torch.randn(1, 16) * 0.25)
    t_b = torch.nn.Parameter(torch.zeros(1))
    e_lstm = nn.LSTM(8, 16)
    _copy_params(t_lstm, e_lstm)
    e_w = nn.Parameter(ember.tensor(t_w.detach().cpu().numpy()))
    e_b = nn.Parameter(ember.tensor(t_b.detach().cpu().numpy()))

    def train(lib, lstm, w, b, lin):
        params = list(lstm.parameters()) + [w, b]
        xs, ys = lib.tensor(x), lib.tensor(target)
        losses = []
        for _ in range(100):
            out, _ = lstm(xs)
            loss = ((lin(out, w, b) - ys) ** 2).mean()
            for p in params:
                p.grad = None
            loss.backward()
            with lib.no_grad():
                for p in params:
                    p -= 0.5 * p.grad
            losses.append(loss.item())
        return losses

    le = train(ember, e_lstm, e_w, e_b, F.linear)
    lt = train(torch, t_lstm, t_w, t_b, torch.nn.functional.linear)
    assert lt[-1] < 0.5 * lt[0]  # it learned something
    np.testing.assert_allclose(le, lt, rtol=1e-3, atol=1e-5)
    for name, p in e_lstm.named_parameters():
        _close(p, dict(t_lstm.named_parameters())[name], rtol=1e-3, atol=1e-4)

