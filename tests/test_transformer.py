"""F.scaled_dot_product_attention, nn.MultiheadAttention and the Transformer layers against
torch: outputs and gradients with copied state_dicts (dropout 0 or eval), masks, batch_first
both ways, reprs, state_dict keys, default init and errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember import nn

RTOL, ATOL = 1e-4, 1e-5


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _load(em, tm):
    em.load_state_dict({k: ember.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()})


def _t(torch, a, grad=False):
    if a is None:
        return None
    return torch.tensor(a, requires_grad=grad and a.dtype.kind == "f")


def _e(a, grad=False):
    if a is None:
        return None
    return ember.tensor(a, requires_grad=grad and a.dtype.kind == "f")


def _close(e, t, what=""):
    assert tuple(e.shape) == tuple(t.shape), what
    np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().cpu().numpy(), rtol=RTOL, atol=ATOL,
                               err_msg=what)


def _compare(torch, tm, em, arrays, call, grad=True, seed=7):
    """Run ``call(module, *inputs)`` in both; compare outputs, then input and parameter
    gradients of a random projection of the first output."""
    tins = [_t(torch, a, grad) for a in arrays]
    eins = [_e(a, grad) for a in arrays]
    tout, eout = call(tm, *tins), call(em, *eins)
    touts = tout if isinstance(tout, tuple) else (tout,)
    eouts = eout if isinstance(eout, tuple) else (eout,)
    assert len(touts) == len(eouts)
    for i, (e, t) in enumerate(zip(eouts, touts)):
        if t is None:
            assert e is None
        else:
            _close(e, t, f"output {i}")
    if not grad:
        return
    g = _rand(tuple(touts[0].shape), seed)
    touts[0].backward(torch.tensor(g))
    eouts[0].backward(ember.tensor(g))
    for i, (e, t) in enumerate(zip(eins, tins)):
        if t is not None and t.requires_grad:
            if t.grad is None:  # an input the call did not use
                assert e.grad is None, f"grad of input {i}"
            else:
                _close(e.grad, t.grad, f"grad of input {i}")
    tparams = dict(tm.named_parameters())
    for k, p in em.named_parameters():
        tg = tparams[k].grad
        if tg is None:
            assert p.grad is None or not p.grad.detach().cpu().numpy().any(), k
        else:
            _close(p.grad, tg, f"grad of {k}")


def _pair(torch, name, *args, **kwargs):
    """torch and ember modules built alike, ember holding torch's parameters."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = getattr(torch.nn, name)(*args, **kwargs)
        em = getattr(nn, name)(*args, **_ember_kwargs(kwargs))
    assert repr(em) == repr(tm)
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    _load(em, tm)
    return tm, em


def _ember_kwargs(kwargs):
    out = dict(kwargs)
    act = out.get("activation")
    if act is not None and not isinstance(act, str):  # a torch callable: use ember's twin
        out["activation"] = _EMBER_ACT[act.__name__ if callable(act) and
                                       hasattr(act, "__name__") else type(act).__name__]
    return out


_EMBER_ACT = {"gelu": EF.gelu, "silu": EF.silu, "relu": EF.relu, "GELU": nn.GELU(),
              "Tanh": nn.Tanh()}


# --------------------------------------------------------------------------- sdpa

def _sdpa_case(torch, q, k, v, mask=None, **kw):
    def call(_, tq, tk, tv, tmask=None):
        f = (torch.nn.functional.scaled_dot_product_attention if isinstance(tq, torch.Tensor)
             else EF.scaled_dot_product_attention)
        return f(tq, tk, tv, attn_mask=tmask, **kw)
    dummy = torch.nn.Module(), nn.Module()
    _compare(torch, dummy[0], dummy[1], [q, k, v] + ([mask] if mask is not None else []), call)


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.3},
                                {"is_causal": True, "scale": 2.0}])
@pytest.mark.parametrize("shapes", [((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)),
                                    ((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8)),
                                    ((6, 4), (3, 4), (3, 2)),  # unbatched
                                    ((2, 3, 4, 8), (2, 1, 5, 8), (2, 1, 5, 6)),  # broadcast
                                    ((2, 4, 8), (2, 5, 8), (2, 5, 6))])
def test_sdpa_matches_torch(torch, shapes, kw):
    q, k, v = (_rand(s, i) for i, s in enumerate(shapes))
    _sdpa_case(torch, q, k, v, **kw)


@pytest.mark.parametrize("mask_shape", [(4, 5), (1, 4, 5), (2, 1, 4, 5), (2, 3, 4, 5), (1, 5)])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_masks_match_torch(torch, mask_shape, kind):
    q, k, v = _rand((2, 3, 4, 8), 0), _rand((2, 3, 5, 8), 1), _rand((2, 3, 5, 6), 2)
    keep = np.random.default_rng(3).random(mask_shape) > 0.3
    keep[..., 0] = True  # no row fully masked here
    mask = keep if kind == "bool" else np.where(keep, _rand(mask_shape, 4), -np.inf
                                                ).astype(np.float32)
    _sdpa_case(torch, q, k, v, mask)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_fully_masked_row_gives_zeros_as_torch(torch, kind):
    q, k, v = _rand((2, 4, 8), 0), _rand((2, 5, 8), 1), _rand((2, 5, 6), 2)
    keep = np.ones((4, 5), bool)
    keep[1] = False
    mask = keep if kind == "bool" else np.where(keep, 0.0, -np.inf).astype(np.float32)
    _sdpa_case(torch, q, k, v, mask)
    out = EF.scaled_dot_product_attention(_e(q), _e(k), _e(v), attn_mask=_e(mask))
    assert not out.cpu().numpy()[:, 1].any()


def test_sdpa_float_mask_gradient(torch):
    q, k, v = _rand((2, 4, 8), 0), _rand((2, 5, 8), 1), _rand((2, 5, 6), 2)
    _sdpa_case(torch, q, k, v, _rand((4, 5), 3))  # the mask gets a gradient too


def test_sdpa_gqa(torch):
    q, k, v = _rand((2, 6, 4, 8), 0), _rand((2, 2, 5, 8), 1), _rand((2, 3, 5, 6), 2)
    _sdpa_case(torch, q, k, v, enable_gqa=True)


def test_sdpa_bool_mask_semantics():
    """True takes part: masking all but key j makes every query return v[j]."""
    q, k, v = _rand((3, 4), 0), _rand((5, 4), 1), _rand((5, 2), 2)
    mask = np.zeros((3, 5), bool)
    mask[:, 2] = True
    out = EF.scaled_dot_product_attention(_e(q), _e(k), _e(v), attn_mask=_e(mask))
    np.testing.assert_allclose(out.cpu().numpy(), np.broadcast_to(v[2], (3, 2)), rtol=1e-6)


def test_sdpa_dropout_statistics():
    ember.manual_seed(0)
    q, k = _e(np.zeros((64, 16, 4), np.float32)), _e(np.zeros((64, 16, 4), np.float32))
    v = ember.ones(64, 16, 1)
    out = EF.scaled_dot_product_attention(q, k, v, dropout_p=0.25).cpu().numpy()
    assert abs(out.mean() - 1.0) < 0.05  # uniform weights 1/16, kept ones scaled by 4/3
    assert np.allclose(np.unique(np.round(out * 16 * 0.75)) % 1, 0, atol=1e-4)
    np.testing.assert_allclose(EF.scaled_dot_product_attention(q, k, v).cpu().numpy(), 1.0, rtol=1e-6)


@pytest.mark.parametrize("case", ["causal_and_mask", "dtype", "mask_dtype_int",
                                  "mask_dtype_double", "dim", "gqa"])
def test_sdpa_errors_match_torch(torch, case):
    q, k, v = _rand((2, 3, 4, 8), 0), _rand((2, 3, 5, 8), 1), _rand((2, 3, 5, 6), 2)
    mask, kw = None, {}
    if case == "causal_and_mask":
        mask, kw = np.ones((4, 5), bool), {"is_causal": True}
    elif case == "dtype":
        k = k.astype(np.float64)
    elif case == "mask_dtype_int":
        mask = np.ones((4, 5), np.int64)
    elif case == "mask_dtype_double":
        mask = np.ones((4, 5), np.float64)
    elif case == "dim":
        q, k, v = q[0, 0, 0], k[0, 0, 0], v[0, 0, 0]
    elif case == "gqa":
        k, v, kw = k[:, :2], v[:, :2], {"enable_gqa": True}
    with pytest.raises(RuntimeError) as te:
        torch.nn.functional.scaled_dot_product_attention(_t(torch, q), _t(torch, k),
                                                         _t(torch, v), _t(torch, mask), **kw)
    with pytest.raises(RuntimeError) as ee:
        EF.scaled_dot_product_attention(_e(q), _e(k), _e(v), _e(mask), **kw)
    assert str(ee.value) == str(te.value)


# --------------------------------------------------------------------------- MultiheadAttention

def _mha_call(q_is_kv="separate", **fwd):
    def call(m, q, k, v, *masks):
        kwargs = dict(fwd)
        names = [n for n in ("key_padding_mask", "attn_mask") if n in fwd and fwd[n] == "given"]
        for n, msk in zip(names, masks):
            kwargs[n] = msk
        if q_is_kv == "self":
            k = v = q
        elif q_is_kv == "kv":
            v = k
        return m(q, k, v, **kwargs)
    return call


def _mha_inputs(L, S, N, E, kdim, vdim, batch_first, batched=True):
    if not batched:
        return [_rand((L, E), 0), _rand((S, kdim), 1), _rand((S, vdim), 2)]
    lead = (lambda n, s: (n, s)) if batch_first else (lambda n, s: (s, n))
    return [_rand((*lead(N, L), E), 0), _rand((*lead(N, S), kdim), 1),
            _rand((*lead(N, S), vdim), 2)]


MHA_CONFIGS = [
    {},
    {"batch_first": True},
    {"bias": False},
    {"kdim": 3, "vdim": 5},
    {"kdim": 3, "vdim": 5, "batch_first": True, "bias": False},
    {"add_bias_kv": True},
    {"add_zero_attn": True, "batch_first": True},
    {"add_bias_kv": True, "add_zero_attn": True, "kdim": 6, "vdim": 4},
]


@pytest.mark.parametrize("cfg", MHA_CONFIGS)
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_mha_matches_torch(torch, cfg, need_weights, average):
    torch.manual_seed(0)
    tm, em = _pair(torch, "MultiheadAttention", 8, 2, **cfg)
    E, kdim, vdim = 8, cfg.get("kdim", 8), cfg.get("vdim", 8)
    arrays = _mha_inputs(4, 5, 3, E, kdim, vdim, cfg.get("batch_first", False))
    _compare(torch, tm, em, arrays, _mha_call(need_weights=need_weights,
                                              average_attn_weights=average))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mode", ["self", "kv"])
def test_mha_self_attention_paths(torch, batch_first, mode):
    """query is key is value (one packed projection) and key is value (two)."""
    tm, em = _pair(torch, "MultiheadAttention", 8, 4, batch_first=batch_first)
    arrays = _mha_inputs(5, 5, 2, 8, 8, 8, batch_first)
    for nw in (True, False):
        _compare(torch, tm, em, arrays, _mha_call(mode, need_weights=nw))
        tm.zero_grad()
        em.zero_grad()


@pytest.mark.parametrize("cfg", [{}, {"kdim": 3, "vdim": 5}, {"add_bias_kv": True}])
def test_mha_unbatched(torch, cfg):
    tm, em = _pair(torch, "MultiheadAttention", 8, 2, batch_first=True, **cfg)
    arrays = _mha_inputs(4, 5, None, 8, cfg.get("kdim", 8), cfg.get("vdim", 8), True, False)
    kpm = np.array([False, True, False, False, True])
    am = np.random.default_rng(5).random((2, 4, 5)) > 0.7
    am[..., 0] = False
    for nw in (True, False):
        _compare(torch, tm, em, arrays + [kpm, am],
                 _mha_call(need_weights=nw, key_padding_mask="given", attn_mask="given"))
        tm.zero_grad()
        em.zero_grad()


def _masks(kind, N, heads, L, S, seed=3):
    rng = np.random.default_rng(seed)
    kpm = rng.random((N, S)) > 0.6
    kpm[:, 0] = False
    am2 = rng.random((L, S)) > 0.6
    am2[:, 0] = False
    am3 = rng.random((N * heads, L, S)) > 0.6
    am3[..., 0] = False
    if kind == "float":
        kpm, am2, am3 = (np.where(m, -np.inf, rng.standard_normal(m.shape)).astype(np.float32)
                         for m in (kpm, am2, am3))
    return kpm, am2, am3


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("which", ["kpm", "am2", "am3", "kpm+am2", "kpm+am3"])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_masks_match_torch(torch, kind, which, need_weights, batch_first):
    tm, em = _pair(torch, "MultiheadAttention", 8, 2, batch_first=batch_first)
    arrays = _mha_inputs(4, 5, 3, 8, 8, 8, batch_first)
    kpm, am2, am3 = _masks(kind, 3, 2, 4, 5)
    fwd, masks = {"need_weights": need_weights}, []
    if "kpm" in which:
        fwd["key_padding_mask"] = "given"
        masks.append(kpm)
    if "am" in which:
        fwd["attn_mask"] = "given"
        masks.append(am2 if "am2" in which else am3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compare(torch, tm, em, arrays + masks, _mha_call(**fwd))


def test_mha_bool_mask_true_means_masked_out():
    m = nn.MultiheadAttention(4, 1)
    q, k = _e(_rand((3, 1, 4), 0)), _e(_rand((5, 1, 4), 1))
    kpm = ember.tensor([[True, True, False, True, True]])
    _, w = m(q, k, k, key_padding_mask=kpm)
    np.testing.assert_allclose(w.detach().cpu().numpy()[0, :, 2], 1.0, rtol=1e-6)


def test_mha_fully_masked_row_nan_with_weights_zero_without(torch):
    tm, em = _pair(torch, "MultiheadAttention", 8, 2)
    x = _rand((4, 1, 8))
    am = np.zeros((4, 4), bool)
    am[1] = True
    for nw in (True, False):
        to = tm(_t(torch, x), _t(torch, x), _t(torch, x), attn_mask=_t(torch, am),
                need_weights=nw)[0].detach().cpu().numpy()
        eo = em(_e(x), _e(x), _e(x), attn_mask=_e(am), need_weights=nw)[0].detach().cpu().numpy()
        np.testing.assert_array_equal(np.isnan(eo), np.isnan(to))
        np.testing.assert_allclose(eo, to, rtol=RTOL, atol=ATOL)


def test_mha_is_causal(torch):
    tm, em = _pair(torch, "MultiheadAttention", 8, 2, batch_first=True)
    x = _rand((2, 5, 8))
    causal = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
    for nw in (True, False):
        _compare(torch, tm, em, [x, x, x, causal],
                 _mha_call("self", need_weights=nw, attn_mask="given", is_causal=True))
        tm.zero_grad()
        em.zero_grad()
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        em(_e(x), _e(x), _e(x), is_causal=True)


def test_mha_eval_and_dropout(torch):
    ember.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = _e(_rand((6, 2, 8)))
    a, b = m(x, x, x)[0], m(x, x, x)[0]
    assert not np.allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x, x, x)[0].detach().cpu().numpy(),
                                  m(x, x, x)[0].detach().cpu().numpy())


def test_mha_default_init(torch):
    E = 64
    m = nn.MultiheadAttention(E, 4)
    w = m.in_proj_weight.detach().cpu().numpy()
    bound = math.sqrt(6.0 / (E + 3 * E))  # xavier_uniform_ on the (3E, E) weight
    assert np.abs(w).max() <= bound + 1e-7 and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert not m.in_proj_bias.detach().cpu().numpy().any()
    assert not m.out_proj.bias.detach().cpu().numpy().any()
    ow = m.out_proj.weight.detach().cpu().numpy()  # Linear's kaiming_uniform_(a=sqrt(5))
    assert np.abs(ow).max() <= 1 / math.sqrt(E) + 1e-7
    m2 = nn.MultiheadAttention(E, 4, kdim=16, vdim=32, add_bias_kv=True)
    kb = math.sqrt(6.0 / (E + 16))
    assert np.abs(m2.k_proj_weight.detach().cpu().numpy()).max() <= kb + 1e-7
    assert np.abs(m2.k_proj_weight.detach().cpu().numpy()).max() > 0.9 * kb
    assert m2.bias_k.detach().cpu().numpy().any() and m2.bias_v.detach().cpu().numpy().any()


def test_mha_attributes_and_registry(torch):
    for cfg in MHA_CONFIGS:
        tm, em = torch.nn.MultiheadAttention(8, 2, **cfg), nn.MultiheadAttention(8, 2, **cfg)
        for a in ("embed_dim", "kdim", "vdim", "_qkv_same_embed_dim", "num_heads", "dropout",
                  "batch_first", "head_dim", "add_zero_attn"):
            assert getattr(em, a) == getattr(tm, a), a
        assert [k for k, _ in em.named_parameters()] == [k for k, _ in tm.named_parameters()]
        assert list(em._parameters) == list(tm._parameters)
        assert type(em.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
        assert isinstance(em.out_proj, nn.Linear)


@pytest.mark.parametrize("args,exc", [((8, 3), AssertionError), ((0, 2), ValueError),
                                      ((8, -1), ValueError)])
def test_mha_constructor_errors(torch, args, exc):
    with pytest.raises(exc) as te:
        torch.nn.MultiheadAttention(*args)
    with pytest.raises(exc) as ee:
        nn.MultiheadAttention(*args)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("case", ["2d_mask_shape", "3d_mask_shape", "kpm_dim", "query_dim",
                                  "embed", "int_mask"])
def test_mha_forward_errors_match_torch(torch, case):
    tm = torch.nn.MultiheadAttention(8, 2)
    em = nn.MultiheadAttention(8, 2)
    x, kw = _rand((4, 3, 8)), {}
    if case == "2d_mask_shape":
        kw["attn_mask"] = np.zeros((4, 4), bool)
        x2 = _rand((5, 3, 8))
    elif case == "3d_mask_shape":
        kw["attn_mask"] = np.zeros((5, 4, 4), bool)
    elif case == "kpm_dim":
        kw["key_padding_mask"] = np.zeros((3,), bool)
    elif case == "query_dim":
        x = _rand((2, 4, 3, 8))
    elif case == "embed":
        x = _rand((4, 3, 6))
    elif case == "int_mask":
        kw["attn_mask"] = np.zeros((4, 4), np.int64)
    k = x2 if case == "2d_mask_shape" else x
    with pytest.raises(Exception) as te:
        tm(_t(torch, x), _t(torch, k), _t(torch, k), **{n: _t(torch, a) for n, a in kw.items()})
    with pytest.raises(Exception) as ee:
        em(_e(x), _e(k), _e(k), **{n: _e(a) for n, a in kw.items()})
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


# --------------------------------------------------------------------------- Transformer layers

ENC_CONFIGS = [
    {},
    {"batch_first": True},
    {"norm_first": True},
    {"activation": "gelu", "batch_first": True},
    {"bias": False, "norm_first": True},
    {"layer_norm_eps": 1e-3, "activation": "silu_fn"},
    {"activation": "GELU_module"},
]


def _resolve(torch, cfg):
    cfg = dict(cfg)
    act = cfg.get("activation")
    if act == "silu_fn":
        cfg["activation"] = torch.nn.functional.silu
    elif act == "GELU_module":
        cfg["activation"] = torch.nn.GELU()
    return cfg


def _seq(N, L, E, batch_first, seed=0):
    return _rand((N, L, E) if batch_first else (L, N, E), seed)


@pytest.mark.parametrize("cfg", ENC_CONFIGS)
def test_encoder_layer_matches_torch(torch, cfg):
    torch.manual_seed(0)
    cfg = _resolve(torch, cfg)
    tm, em = _pair(torch, "TransformerEncoderLayer", 8, 2, 16, 0.0, **cfg)
    assert em.activation_relu_or_gelu == tm.activation_relu_or_gelu
    x = _seq(3, 5, 8, cfg.get("batch_first", False))
    _compare(torch, tm, em, [x], lambda m, s: m(s))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_encoder_layer_masks(torch, batch_first, kind):
    tm, em = _pair(torch, "TransformerEncoderLayer", 8, 2, 16, 0.1, batch_first=batch_first)
    tm.eval()
    em.eval()
    kpm, am, _ = _masks(kind, 3, 2, 5, 5)
    x = _seq(3, 5, 8, batch_first)
    _compare(torch, tm, em, [x, am, kpm],
             lambda m, s, a, k: m(s, src_mask=a, src_key_padding_mask=k))
    _compare(torch, tm, em, [x, kpm], lambda m, s, k: m(s, src_key_padding_mask=k), grad=False)


def test_encoder_layer_unbatched(torch):
    tm, em = _pair(torch, "TransformerEncoderLayer", 8, 2, 16, 0.0)
    _compare(torch, tm, em, [_rand((5, 8))], lambda m, s: m(s))


@pytest.mark.filterwarnings("ignore:Support for mismatched")  # bool padding, float mask
@pytest.mark.parametrize("cfg", [{}, {"batch_first": True, "norm_first": True},
                                 {"activation": "gelu", "bias": False}])
@pytest.mark.parametrize("with_norm", [False, True])
def test_encoder_matches_torch(torch, cfg, with_norm):
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, **cfg)
        tm = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8) if with_norm
                                         else None)
        el = nn.TransformerEncoderLayer(8, 2, 16, 0.0, **cfg)
        em = nn.TransformerEncoder(el, 2, norm=nn.LayerNorm(8) if with_norm else None)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    # layers are deep copies: distinct parameters, equal values at construction
    ps = [dict(layer.named_parameters()) for layer in em.layers]
    assert ps[0]["linear1.weight"] is not ps[1]["linear1.weight"]
    np.testing.assert_array_equal(ps[0]["linear1.weight"].detach().cpu().numpy(),
                                  ps[1]["linear1.weight"].detach().cpu().numpy())
    with torch.no_grad():  # make the layers differ so a mix-up would show
        for p in tm.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    _load(em, tm)
    bf = cfg.get("batch_first", False)
    x = _seq(2, 5, 8, bf)
    kpm, _, _ = _masks("bool", 2, 2, 5, 5)
    causal = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
    _compare(torch, tm, em, [x], lambda m, s: m(s))
    tm.zero_grad()
    em.zero_grad()
    _compare(torch, tm, em, [x, causal, kpm],
             lambda m, s, a, k: m(s, mask=a, src_key_padding_mask=k))
    tm.zero_grad()
    em.zero_grad()
    _compare(torch, tm, em, [x, causal], lambda m, s, a: m(s, mask=a, is_causal=True))


def test_encoder_nested_tensor_warning(torch):
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    with pytest.warns(UserWarning) as rec:
        enc = nn.TransformerEncoder(layer, 2)
    with pytest.warns(UserWarning) as trec:
        torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16), 2)
    assert str(rec[0].message) == str(trec[0].message)
    assert enc.use_nested_tensor is False and enc.enable_nested_tensor is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
    assert enc.use_nested_tensor is True


@pytest.mark.parametrize("cfg", ENC_CONFIGS)
def test_decoder_layer_matches_torch(torch, cfg):
    torch.manual_seed(0)
    cfg = _resolve(torch, cfg)
    tm, em = _pair(torch, "TransformerDecoderLayer", 8, 2, 16, 0.0, **cfg)
    bf = cfg.get("batch_first", False)
    tgt, mem = _seq(3, 4, 8, bf, 0), _seq(3, 6, 8, bf, 1)
    _compare(torch, tm, em, [tgt, mem], lambda m, t, s: m(t, s))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_decoder_layer_masks(torch, batch_first, kind):
    tm, em = _pair(torch, "TransformerDecoderLayer", 8, 2, 16, 0.1, batch_first=batch_first)
    tm.eval()
    em.eval()
    tgt, mem = _seq(3, 4, 8, batch_first, 0), _seq(3, 6, 8, batch_first, 1)
    tkpm, tam, _ = _masks(kind, 3, 2, 4, 4, seed=1)
    mkpm, mam, _ = _masks(kind, 3, 2, 4, 6, seed=2)

    def call(m, t, s, a, b, c, d):
        return m(t, s, tgt_mask=a, memory_mask=b, tgt_key_padding_mask=c,
                 memory_key_padding_mask=d)
    _compare(torch, tm, em, [tgt, mem, tam, mam, tkpm, mkpm], call)


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_matches_torch(torch, batch_first):
    torch.manual_seed(2)
    tl = torch.nn.TransformerDecoderLayer(8, 2, 16, 0.0, batch_first=batch_first)
    tm = torch.nn.TransformerDecoder(tl, 2, norm=torch.nn.LayerNorm(8))
    em = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, 0.0,
                                                          batch_first=batch_first),
                               2, norm=nn.LayerNorm(8))
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    _load(em, tm)
    tgt, mem = _seq(2, 4, 8, batch_first, 0), _seq(2, 6, 8, batch_first, 1)
    causal = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    _compare(torch, tm, em, [tgt, mem, causal], lambda m, t, s, a: m(t, s, tgt_mask=a))
    tm.zero_grad()
    em.zero_grad()
    _compare(torch, tm, em, [tgt, mem, causal],
             lambda m, t, s, a: m(t, s, tgt_mask=a, tgt_is_causal=True))


@pytest.mark.parametrize("cfg", [{}, {"batch_first": True, "norm_first": True},
                                 {"activation": "gelu", "bias": False}])
def test_transformer_matches_torch(torch, cfg):
    torch.manual_seed(3)
    tm, em = _pair(torch, "Transformer", 8, 2, 2, 1, 16, 0.0, **cfg)
    bf = cfg.get("batch_first", False)
    src, tgt = _seq(2, 6, 8, bf, 0), _seq(2, 4, 8, bf, 1)
    causal = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    kpm, _, _ = _masks("bool", 2, 2, 6, 6)

    def call(m, s, t, a, k):
        return m(s, t, tgt_mask=a, src_key_padding_mask=k, memory_key_padding_mask=k)
    _compare(torch, tm, em, [src, tgt, causal, kpm], call)


def test_transformer_default_init_and_attributes(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = nn.Transformer(32, 4, 1, 1, 64)
        tm = torch.nn.Transformer(32, 4, 1, 1, 64)
    assert repr(em) == repr(tm)
    assert (em.d_model, em.nhead, em.batch_first) == (tm.d_model, tm.nhead, tm.batch_first)
    # every matrix re-drawn with xavier_uniform_: linear1.weight bound sqrt(6 / (32 + 64))
    w = em.encoder.layers[0].linear1.weight.detach().cpu().numpy()
    bound = math.sqrt(6 / (32 + 64))
    assert np.abs(w).max() <= bound + 1e-7 and np.abs(w).max() > 0.9 * bound
    ow = em.decoder.layers[0].multihead_attn.out_proj.weight.detach().cpu().numpy()
    assert np.abs(ow).max() > 1 / math.sqrt(32)  # beyond Linear's bound: re-drawn
    assert not em.encoder.layers[0].self_attn.in_proj_bias.detach().cpu().numpy().any()


def test_transformer_errors(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em, tm = nn.Transformer(8, 2, 1, 1, 16), torch.nn.Transformer(8, 2, 1, 1, 16)
    for s, t in [((5, 2, 8), (4, 3, 8)), ((5, 2, 8), (4, 2, 6))]:
        with pytest.raises(RuntimeError) as te:
            tm(torch.zeros(s), torch.zeros(t))
        with pytest.raises(RuntimeError) as ee:
            em(ember.zeros(s), ember.zeros(t))
        assert str(ee.value) == str(te.value)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_generate_square_subsequent_mask(torch):
    for sz in (1, 4):
        np.testing.assert_array_equal(nn.Transformer.generate_square_subsequent_mask(sz).cpu().numpy(),
                                      torch.nn.Transformer.generate_square_subsequent_mask(sz)
                                      .cpu().numpy())
    m = nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64)
    assert m.dtype == ember.float64


def test_state_dict_round_trip_into_torch(torch):
    """ember's state_dict loads into torch and gives torch's outputs."""
    em = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
    tm.load_state_dict({k: torch.tensor(v.detach().cpu().numpy()) for k, v in em.state_dict().items()})
    x = _rand((2, 5, 8))
    with torch.no_grad():
        tm.train()  # the reference path
        ty = tm(torch.tensor(x))
    _close(em(_e(x)), ty)


def test_encoder_layer_dropout_train_vs_eval():
    ember.manual_seed(0)
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = _e(_rand((5, 2, 8)))
    assert not np.allclose(m(x).detach().cpu().numpy(), m(x).detach().cpu().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), m(x).detach().cpu().numpy())


@pytest.mark.parametrize("with_norm", [False, True])
@pytest.mark.parametrize("pad_row", [[0, 0, 0, 1, 1], [0, 1, 0, 1, 1]])
def test_encoder_inference_matches_torch_fast_paths(torch, with_norm, pad_row):
    """eval + no_grad: torch takes its native/nested-tensor paths, whose padded outputs are
    zeros when the padding is left-aligned; ember gives the same numbers."""
    torch.manual_seed(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
            norm=torch.nn.LayerNorm(8) if with_norm else None).eval()
        em = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                   norm=nn.LayerNorm(8) if with_norm else None).eval()
        _load(em, tm)
        x = _rand((2, 5, 8))
        kpm = np.zeros((2, 5), bool)
        kpm[0] = pad_row
        with torch.no_grad():
            ty = tm(_t(torch, x), src_key_padding_mask=_t(torch, kpm))
            ty_mha = tm.layers[0].self_attn(*[_t(torch, x)] * 3)[0]
        with ember.no_grad():
            ey = em(_e(x), src_key_padding_mask=_e(kpm))
            ey_mha = em.layers[0].self_attn(*[_e(x)] * 3)[0]
    _close(ey, ty)
    _close(ey_mha, ty_mha)
