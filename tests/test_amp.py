"""Autocast and GradScaler, compared with torch 2.13 step by step."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn as enn
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
pytest.importorskip("ml_dtypes")
import torch.nn.functional as TF



def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [(x.category, str(x.message)) for x in w]


# --------------------------------------------------------------------------- the state API

def test_region_sets_and_restores_state_as_torch():
    for lib in (ember, torch):
        assert not lib.is_autocast_enabled("cpu")
        assert lib.get_autocast_dtype("cpu") is lib.bfloat16
        with lib.autocast("cpu"):
            assert lib.is_autocast_enabled("cpu")
            assert not lib.is_autocast_enabled()  # no argument: CUDA's state
            with lib.autocast("cpu", enabled=False):
                assert not lib.is_autocast_enabled("cpu")
            with lib.autocast("cpu", dtype=lib.float16):
                assert lib.get_autocast_dtype("cpu") is lib.float16
            assert lib.get_autocast_dtype("cpu") is lib.bfloat16
            assert lib.is_autocast_enabled("cpu")
        assert not lib.is_autocast_enabled("cpu")
        assert lib.get_autocast_dtype("cuda") is lib.float16


def test_amp_namespace_and_decorator():
    assert ember.amp.autocast is ember.autocast
    assert ember.amp.is_autocast_available("cpu") == torch.amp.is_autocast_available("cpu")

    @ember.autocast("cpu")
    def inside():
        return ember.is_autocast_enabled("cpu")
    assert inside() and not ember.is_autocast_enabled("cpu")


@pytest.mark.parametrize("call", [
    lambda lib: lib.autocast(1),
    lambda lib: lib.autocast("cpu")(3),
    lambda lib: lib.is_autocast_enabled("foo"),
])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(type(te.value)) as ee:
        call(ember)
    assert str(ee.value) == str(te.value)


def test_unsupported_cpu_dtype_warns_and_disables_as_torch():
    def run(lib):
        with lib.autocast("cpu", dtype=lib.float64):
            return lib.is_autocast_enabled("cpu")
    (t_on, t_w), (e_on, e_w) = _warnings_of(lambda: run(torch)), _warnings_of(lambda: run(ember))
    assert t_on is e_on is False
    assert e_w == t_w


def test_cuda_autocast_warns_and_disables_without_a_gpu():
    def run(lib):
        with lib.autocast("cuda"):
            return lib.is_autocast_enabled("cuda")
    (t_on, t_w), (e_on, e_w) = _warnings_of(lambda: run(torch)), _warnings_of(lambda: run(ember))
    assert t_on is e_on is False and e_w == t_w


@pytest.mark.parametrize("make", [lambda lib: lib.cuda.amp.autocast(),
                                  lambda lib: lib.cpu.amp.autocast(),
                                  lambda lib: lib.cuda.amp.GradScaler(),
                                  lambda lib: lib.cpu.amp.GradScaler()])
def test_deprecated_spellings_warn_as_torch(make):
    import ember.cpu  # torch.cpu is always loaded; ember.cpu on first use
    (t_obj, t_w), (e_obj, e_w) = (_warnings_of(lambda: make(torch)),
                                  _warnings_of(lambda: make(ember)))
    assert e_w == t_w
    assert type(e_obj).__name__ == type(t_obj).__name__


# --------------------------------------------------------------------------- casting

def _pair(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def test_lower_precision_ops_compute_on_bfloat16_inputs():
    (ex, tx), (ew, tw) = _pair(4, 8), _pair(8, 3, seed=1)
    full_precision = (ex @ ew).detach().numpy()
    with ember.autocast("cpu"), torch.autocast("cpu"):
        for name, e, t in [("mm", ember.mm(ex, ew), torch.mm(tx, tw)),
                           ("matmul", ex @ ew, tx @ tw),
                           ("linear", EF.linear(ex, ew.t()), TF.linear(tx, tw.t()))]:
            np.testing.assert_allclose(e.detach().float().numpy(), t.detach().float().numpy(),
                                       rtol=2 ** -7, atol=2e-2, err_msg=name)
            # the inputs were rounded: the float32 product differs from the float32 result
            assert not np.allclose(e.detach().float().numpy(), full_precision, rtol=1e-6,
                                   atol=0)


def test_float64_inputs_are_not_cast():
    a = ember.tensor(np.random.default_rng(2).standard_normal((3, 3)))
    with ember.autocast("cpu"):
        out = ember.mm(a, a)
    assert out.dtype is ember.float64
    np.testing.assert_array_equal(out.numpy(), a.numpy() @ a.numpy())


def test_disabled_region_leaves_ops_alone():
    (ex, _), (ew, _) = _pair(4, 8), _pair(8, 3, seed=1)
    with ember.autocast("cpu"), ember.autocast("cpu", enabled=False):
        out = ex @ ew
    assert out.dtype is ember.float32
    np.testing.assert_array_equal(out.detach().numpy(), (ex @ ew).detach().numpy())


@pytest.mark.parametrize("op", ["mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "linear",
                                "conv1d", "conv2d", "conv_transpose2d", "sdpa", "prelu"])
def test_output_dtypes_match_torch(op):
    x = np.random.default_rng(3).standard_normal((2, 4, 4)).astype(np.float32)

    def run(lib, F):
        t = lib.tensor(x)
        m = t[0]
        calls = {
            "mm": lambda: lib.mm(m, m), "bmm": lambda: lib.bmm(t, t), "matmul": lambda: t @ t,
            "addmm": lambda: lib.addmm(m, m, m), "baddbmm": lambda: lib.baddbmm(t, t, t),
            "addbmm": lambda: lib.addbmm(m, t, t), "linear": lambda: F.linear(m, m, m[0]),
            "conv1d": lambda: F.conv1d(t, t), "conv2d": lambda: F.conv2d(t[None], t[None, :, :2, :2]),
            "conv_transpose2d": lambda: F.conv_transpose2d(t[None], t[:, None]),
            "sdpa": lambda: F.scaled_dot_product_attention(t, t, t),
            "prelu": lambda: F.prelu(m, lib.tensor([0.25])),
        }
        with lib.autocast("cpu"):
            return calls[op]()
    e, t = run(ember, EF), run(torch, TF)
    assert repr(e.dtype) == repr(t.dtype)
    np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=2 ** -6, atol=5e-2)


class _MLP:
    def __init__(self, lib, nn, weights):
        self.l1, self.l2 = nn.Linear(6, 16), nn.Linear(16, 3)
        with lib.no_grad():
            for p, w in zip((self.l1.weight, self.l1.bias, self.l2.weight, self.l2.bias),
                            weights):
                p.copy_(lib.tensor(w))

    def params(self):
        return [self.l1.weight, self.l1.bias, self.l2.weight, self.l2.bias]

    def __call__(self, x):
        return self.l2(self.l1(x).relu())


def test_mlp_forward_backward_under_autocast_matches_torch():
    rng = np.random.default_rng(4)
    weights = [rng.standard_normal(s).astype(np.float32) * 0.3
               for s in ((16, 6), (16,), (3, 16), (3,))]
    x = rng.standard_normal((5, 6)).astype(np.float32)
    target = rng.standard_normal((5, 3)).astype(np.float32)
    results = {}
    for lib, nn, F in ((ember, enn, EF), (torch, torch.nn, TF)):
        net = _MLP(lib, nn, weights)
        with lib.autocast("cpu"):
            out = net(lib.tensor(x))
            loss = F.mse_loss(out.float(), lib.tensor(target))
        loss.backward()
        results[lib.__name__] = (out, loss, [p.grad for p in net.params()])
    (eo, el, eg), (to, tl, tg) = results["ember"], results["torch"]
    assert repr(eo.dtype) == repr(to.dtype) == "torch.bfloat16"
    np.testing.assert_allclose(eo.detach().float().numpy(), to.detach().float().numpy(),
                               rtol=2 ** -6, atol=2e-2)
    np.testing.assert_allclose(el.item(), tl.item(), rtol=2e-2)
    for e, t in zip(eg, tg):
        assert repr(e.dtype) == repr(t.dtype) == "torch.float32"
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=5e-2, atol=2e-2)


def test_weight_cast_is_reused_within_a_region():
    w = ember.randn(4, 4, requires_grad=True)
    x = ember.randn(4, 4)
    with ember.autocast("cpu"):
        a = ember.mm(x, w)
        b = ember.mm(x, w)
    # one ToCopy node feeds both products, as with torch's cast cache
    assert a.grad_fn.next_functions[1][0] is b.grad_fn.next_functions[1][0]
    with ember.autocast("cpu", cache_enabled=False):
        c, d = ember.mm(x, w), ember.mm(x, w)
    assert c.grad_fn.next_functions[1][0] is not d.grad_fn.next_functions[1][0]


def test_custom_fwd_casts_inputs_and_runs_without_autocast():
    seen = {}

    class Square(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, x):
            seen["dtype"] = x.dtype
            seen["enabled"] = ember.is_autocast_enabled("cpu")
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd_enabled"] = ember.is_autocast_enabled("cpu")
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autocast("cpu"):
        y = Square.apply(x.to(ember.float16))
    y.sum().backward()
    assert seen == {"dtype": ember.float32, "enabled": False, "bwd_enabled": False}
    assert x.grad.tolist() == [2.0, 4.0]


# --------------------------------------------------------------------------- GradScaler

def test_cuda_scaler_without_gpu_is_disabled_as_torch():
    (t, t_w), (e, e_w) = (_warnings_of(lambda: torch.amp.GradScaler()),
                          _warnings_of(lambda: ember.amp.GradScaler()))
    assert e_w == t_w
    assert e.is_enabled() is t.is_enabled() is False
    assert e.get_scale() == t.get_scale() == 1.0
    assert e.state_dict() == t.state_dict() == {}
    loss = ember.tensor(3.0)
    assert e.scale(loss) is loss
    p = ember.nn.Parameter(ember.tensor([1.0]))
    p.grad = ember.tensor([0.5])
    opt = ember.optim.SGD([p], lr=1.0)
    e.step(opt)
    e.update()
    assert p.tolist() == [0.5]


def _scaled_loop(lib, nn, scaler, weights, batches, inf_at):
    lin = nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(weights[0]))
        lin.bias.copy_(lib.tensor(weights[1]))
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    trace = []
    for i, (x, y) in enumerate(batches):
        opt.zero_grad()
        out = lin(lib.tensor(x))
        loss = ((out - lib.tensor(y)) ** 2).mean()
        scaled = scaler.scale(loss)
        scaled.backward()
        if i in inf_at:
            lin.weight.grad[0, 0] = float("inf") if i % 2 else float("nan")
        scaler.unscale_(opt)
        grads = lin.weight.grad.clone()
        scaler.step(opt)
        scaler.update()
        trace.append((scaled.item(), scaler.get_scale(), scaler._get_growth_tracker(),
                      grads.numpy().copy(), lin.weight.detach().numpy().copy()))
    return trace, scaler.state_dict()


def test_cpu_scaler_loop_matches_torch_step_by_step():
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal((2, 3)).astype(np.float32), np.zeros(2, np.float32)]
    batches = [(rng.standard_normal((4, 3)).astype(np.float32),
                rng.standard_normal((4, 2)).astype(np.float32)) for _ in range(9)]
    kw = {"init_scale": 2.0 ** 10, "growth_interval": 3}
    et, es = _scaled_loop(ember, enn, ember.amp.GradScaler("cpu", **kw), weights, batches,
                          {2, 5})
    tt, ts = _scaled_loop(torch, torch.nn, torch.amp.GradScaler("cpu", **kw), weights, batches,
                          {2, 5})
    assert es == ts
    for i, (e, t) in enumerate(zip(et, tt)):
        assert e[1:3] == t[1:3], i  # scale and growth tracker after update
        np.testing.assert_allclose(e[0], t[0], rtol=2e-2, err_msg=str(i))
        np.testing.assert_allclose(e[3], t[3], rtol=5e-2, atol=1e-2, err_msg=str(i))
        np.testing.assert_allclose(e[4], t[4], rtol=5e-2, atol=1e-2, err_msg=str(i))
    # the injected inf/NaN steps were skipped: weights unchanged there, scale halved
    assert np.array_equal(et[2][4], et[1][4]) and et[2][1] == et[1][1] / 2


def test_scaler_growth_backoff_and_state_dict_round_trip():
    s = ember.amp.GradScaler("cpu", init_scale=4.0, growth_factor=3.0, backoff_factor=0.25,
                             growth_interval=2)
    r = torch.amp.GradScaler("cpu", init_scale=4.0, growth_factor=3.0, backoff_factor=0.25,
                             growth_interval=2)
    for lib, sc in ((ember, s), (torch, r)):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        for bad in (False, False, True, False):
            sc.scale(p.sum()).backward()
            if bad:
                p.grad[0] = float("inf")
            sc.step(opt)
            sc.update()
            opt.zero_grad()
    assert s.state_dict() == r.state_dict()
    fresh = ember.amp.GradScaler("cpu")
    fresh.load_state_dict(s.state_dict())
    assert fresh.get_scale() == s.get_scale() and fresh.state_dict() == s.state_dict()
    s.update(8.0)
    assert s.get_scale() == 8.0


def test_scaler_misuse_errors_match_torch():
    for lib in (ember, torch):
        sc = lib.amp.GradScaler("cpu")
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
            sc.step(opt)
        sc.scale(p.sum()).backward()
        sc.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            sc.unscale_(opt)
        sc.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            sc.step(opt)
        with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
            lib.amp.GradScaler("cpu", growth_factor=1.0)


def test_lstm_runs_in_bfloat16_under_autocast_and_gru_does_not_as_torch():
    outs = {}
    for lib in (ember, torch):
        lstm, gru = lib.nn.LSTM(4, 3, num_layers=2), lib.nn.GRU(4, 3)
        with lib.no_grad():
            for i, p in enumerate([*lstm.parameters(), *gru.parameters()]):
                p.copy_(lib.tensor(np.sin(np.arange(p.numel()) + i).reshape(p.shape)
                                   .astype(np.float32)))
        x = lib.tensor(np.cos(np.arange(24)).reshape(3, 2, 4).astype(np.float32))
        with lib.autocast("cpu"):
            out, (h, c) = lstm(x)
            gout, _ = gru(x)
        out.float().sum().backward()
        assert (out.dtype, h.dtype, c.dtype) == (lib.bfloat16,) * 3
        assert gout.dtype is lib.float32
        assert lstm.weight_ih_l0.grad.dtype is lib.float32
        outs[lib] = (out.float().detach().numpy(), lstm.weight_ih_l0.grad.numpy())
    for e, t in zip(outs[ember], outs[torch]):
        np.testing.assert_allclose(e, t, rtol=2e-2, atol=2e-2)
