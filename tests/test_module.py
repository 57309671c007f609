"""``nn.Module``, the containers, module hooks and ``nn.utils`` against torch.

Each behaviour is written once as a function of the library (``torch`` or ``ember``) and the
two runs are compared: reprs, names, messages, values and gradients.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as enn

# ---------------------------------------------------------------------------- helpers


def _classes(lib):
    """Small modules defined the same way for either library (no layer dependencies)."""
    nn = lib.nn

    class Scale(nn.Module):
        def __init__(self, a):
            super().__init__()
            self.a = a

        def extra_repr(self):
            return f"a={self.a}"

        def forward(self, x):
            return x * self.a

    class Lin(nn.Module):
        def __init__(self, n_in, n_out, bias=True):
            super().__init__()
            self.weight = nn.Parameter(lib.arange(n_in * n_out, dtype=lib.float32)
                                       .reshape(n_out, n_in) / 10)
            self.bias = nn.Parameter(lib.ones(n_out)) if bias else None
            self.register_buffer("calls", lib.zeros(()))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)

        def forward(self, x):
            y = x @ self.weight.t()
            return y + self.bias if self.bias is not None else y

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(Lin(3, 4), Scale(2), Lin(4, 2, bias=False))
            self.heads = nn.ModuleList([Lin(2, 1), Lin(2, 1)])
            self.table = nn.ModuleDict({"b": Scale(3), "a": Lin(2, 2)})
            self.extra = nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(3)])
            self.named = nn.ParameterDict({"z": lib.ones(1), "y": nn.Parameter(lib.zeros(2))})

        def forward(self, x):
            h = self.body(x)
            return sum(head(h) for head in self.heads) + self.table["a"](h).sum()

    return Scale, Lin, Net


def _both(torch, fn):
    """Run ``fn(lib)`` for torch and for ember."""
    return fn(torch), fn(ember)


def _np(t):
    return t.detach().cpu().numpy()


def _same_text(t, e):
    assert str(e).replace("ember", "torch") == str(t)


# ---------------------------------------------------------------------------- containers

def _container_reprs(lib):
    nn = lib.nn
    Scale, _, Net = _classes(lib)
    out = []
    ml = nn.ModuleList([Scale(2) for _ in range(3)] + [Scale(3), Scale(2)])
    out += [ml, ml[-1], ml[1:3], len(ml), nn.ModuleList(), nn.Sequential()]
    s = nn.Sequential(Scale(1), Scale(2), Scale(3), Scale(4))
    out += [s, s[1:], s[-1], s[::2], s[-2], len(s)]
    s2 = s + nn.Sequential(Scale(5))
    s2.insert(-1, Scale(9))
    s2.append(Scale(10))
    s2.extend([Scale(11)])
    out += [s2.pop(0), s2.pop(-1), s2]
    del s2[1:3]
    out += [s2]
    s2[-1] = Scale(12)
    del s2[0]
    out += [s2, nn.Sequential(OrderedDict([("x", Scale(1)), ("y", Scale(2))]))]
    out += [nn.Sequential(Scale(1), Scale(2)) * 2, 2 * nn.Sequential(Scale(1))]
    s3 = nn.Sequential(Scale(1))
    s3 += nn.Sequential(Scale(2))
    s3 *= 2
    out += [s3]
    out += [nn.ModuleDict({"b": Scale(1), "a": Scale(2)}), nn.ModuleDict([("z", Scale(1))])]
    md = nn.ModuleDict({"b": Scale(1)})
    md.update([("c", Scale(2))])
    md["a"] = Scale(3)
    out += [md, list(md.keys()), md.pop("b"), "b" in md, len(md)]
    ml2 = nn.ModuleList([Scale(0)])
    ml2 += [Scale(1)]
    ml2.insert(0, Scale(-1))
    ml2.append(Scale(2)).extend([Scale(3)])
    del ml2[1]
    out += [ml2, ml2 + nn.ModuleList([Scale(7)]), ml2.pop(-1), ml2]
    pl = nn.ParameterList([nn.Parameter(lib.ones(2, 3)), lib.ones(3), 5,
                           nn.Parameter(lib.ones(2, dtype=lib.float64))])
    out += [pl, [n for n, _ in pl.named_parameters()], pl[2], len(pl), pl[1:], pl[-1].shape]
    pl.append(lib.zeros(1))
    pl[0] = lib.zeros(4)
    out += [pl, type(pl[0]).__name__]
    pd = nn.ParameterDict({"b": nn.Parameter(lib.ones(2)), "a": lib.ones(3, 4), "c": "x"})
    out += [pd, [n for n, _ in pd.named_parameters()], list(pd.keys()), type(pd["a"]).__name__]
    out += [pd.pop("a").shape, "a" in pd, len(pd), pd.get("zz", 3), pd.setdefault("d", 1)]
    out += [pd.copy(), pd.popitem()[0], list(reversed(pd)), pd | nn.ParameterDict({"q": 2})]
    pd2 = nn.ParameterDict(OrderedDict([("z", lib.ones(1)), ("a", lib.ones(1))]))
    out += [pd2, list(pd2.fromkeys(["u", "v"], 0).items())]
    out += [Net()]
    return [repr(o) for o in out]


def test_container_semantics_and_reprs_match_torch(torch):
    t, e = _both(torch, _container_reprs)
    assert len(t) == len(e)
    for a, b in zip(t, e):
        _same_text(a, b)


def _container_errors(lib):
    nn = lib.nn
    Scale, _, _ = _classes(lib)
    s = nn.Sequential(Scale(1), Scale(2))
    ml = nn.ModuleList([Scale(1)])
    pd = nn.ParameterDict()
    cases = [lambda: ml[7], lambda: ml[-2], lambda: s[-7], lambda: s[2], lambda: nn.ModuleList(3),
             lambda: s + ml, lambda: s * 0, lambda: s * 1.5, lambda: nn.ParameterList()(1),
             lambda: pd["q"], lambda: nn.Sequential().insert(3, Scale(1)),
             lambda: pd.__setitem__(3, 1), lambda: nn.ParameterList().extend(lib.ones(2)),
             lambda: nn.ModuleDict([("a", Scale(1), 3)]), lambda: nn.ModuleDict(5),
             lambda: nn.Sequential().pop(0), lambda: ml.append(3), lambda: nn.ParameterDict()(1)]
    out = []
    for case in cases:
        try:
            case()
            out.append("no error")
        except Exception as err:  # noqa: BLE001 - comparing errors
            out.append(f"{type(err).__name__}: {err}")
    return out


def test_container_errors_match_torch(torch):
    t, e = _both(torch, _container_errors)
    for a, b in zip(t, e):
        _same_text(a, b)


def test_sequential_forward_and_grad(torch):
    def run(lib):
        _, Lin, _ = _classes(lib)
        nn = lib.nn
        net = nn.Sequential(Lin(3, 4), Lin(4, 2))
        x = lib.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 2.0]], requires_grad=True)
        net(x).pow(2).sum().backward()
        return [net(x), x.grad, net[0].weight.grad, net[-1].bias.grad]
    for a, b in zip(*_both(torch, run)):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6)


def test_dir_hides_numeric_names():
    s = enn.Sequential(enn.Module(), enn.Module())
    assert "0" not in dir(s) and "forward" in dir(s)


# ---------------------------------------------------------------------------- registries

def test_parameter_buffer_module_names_match_torch(torch):
    def run(lib):
        net = _classes(lib)[2]()
        return ([n for n, _ in net.named_parameters()], [n for n, _ in net.named_buffers()],
                [n for n, _ in net.named_modules()], [n for n, _ in net.named_children()],
                list(net.state_dict().keys()), [tuple(p.shape) for p in net.parameters()],
                [n for n, _ in net.named_parameters(prefix="m", recurse=False)],
                list(net.state_dict(prefix="p.", keep_vars=True)))
    t, e = _both(torch, run)
    assert t == e


def test_shared_parameters_and_remove_duplicate(torch):
    def run(lib):
        Scale, Lin, _ = _classes(lib)
        nn = lib.nn
        a = Lin(2, 2)
        net = nn.Sequential(a, Scale(1), a)
        net.extra = nn.Module()
        net.extra.w = a.weight  # the same Parameter under a second name
        return ([n for n, _ in net.named_parameters()],
                [n for n, _ in net.named_parameters(remove_duplicate=False)],
                [n for n, _ in net.named_modules(remove_duplicate=False)],
                [n for n, _ in net.named_buffers(remove_duplicate=False)],
                len(list(net.parameters())), list(net.state_dict()))
    t, e = _both(torch, run)
    assert t == e


def test_get_and_set_submodule(torch):
    def run(lib):
        net = _classes(lib)[2]()
        Scale = _classes(lib)[0]
        out = [net.get_submodule("body.1"), net.get_parameter("body.0.weight").shape,
               net.get_buffer("body.0.calls").shape]
        net.set_submodule("body.1", Scale(5))
        out.append(net.body)
        for bad in (lambda: net.get_submodule("body.9"), lambda: net.get_parameter("body.0.x"),
                    lambda: net.set_submodule("", Scale(1)),
                    lambda: net.set_submodule("body.0.weight", Scale(1)),
                    lambda: net.set_submodule("body.q", Scale(1), strict=True)):
            try:
                bad()
            except Exception as err:  # noqa: BLE001 - comparing errors
                out.append(f"{type(err).__name__}: {err}")
        return [repr(o) for o in out]
    for a, b in zip(*_both(torch, run)):
        _same_text(a, b)


def test_module_init_rejects_arguments(torch):
    for lib in (torch, ember):
        with pytest.raises(TypeError) as t_err:
            lib.nn.Module(3)
        with pytest.raises(TypeError) as k_err:
            lib.nn.Module(a=3)
        if lib is torch:
            expected = (str(t_err.value), str(k_err.value))
        else:
            assert (str(t_err.value), str(k_err.value)) == expected


# ---------------------------------------------------------------------------- state dict

def _state_dict_cases(lib):
    nn = lib.nn
    _, Lin, Net = _classes(lib)
    net = Net()
    sd = net.state_dict()
    out = [repr(net.load_state_dict(sd)), str(net.load_state_dict(sd))]
    partial = {k: v for k, v in sd.items() if not k.startswith("body.0")}
    partial["body.9.weight"] = lib.ones(1)
    partial["stray"] = lib.ones(1)
    out.append(repr(net.load_state_dict(partial, strict=False)))
    res = net.load_state_dict(partial, strict=False)
    out.append((res.missing_keys, res.unexpected_keys, list(res)))
    for bad in (partial, {**sd, "body.0.weight": lib.ones(5, 5)},
                {**sd, "body.2.weight": 3}, [1, 2]):
        try:
            net.load_state_dict(bad)
            out.append("no error")
        except Exception as err:  # noqa: BLE001 - comparing errors
            out.append(f"{type(err).__name__}: {err}")
    # non-strict still reports size mismatches
    try:
        net.load_state_dict({"body.0.bias": lib.ones(7)}, strict=False)
    except RuntimeError as err:
        out.append(str(err))
    # 0-d parameter loaded from a 1-element vector
    m = nn.Module()
    m.s = nn.Parameter(lib.zeros(()))
    m.load_state_dict({"s": lib.tensor([4.0])})
    out.append(float(m.s.detach()))
    # assign=True takes the tensors and keeps requires_grad
    lin = Lin(2, 2)
    new_w = lib.full((2, 2), 7.0)
    lin.load_state_dict({"weight": new_w, "bias": lib.zeros(2), "calls": lib.ones(())},
                        assign=True)
    out.append((type(lin.weight).__name__, lin.weight.requires_grad,
                float(lin.weight.detach().sum()), float(lin.calls)))
    return out


def test_load_state_dict_matches_torch(torch):
    t, e = _both(torch, _state_dict_cases)
    assert len(t) == len(e)
    for a, b in zip(t, e):
        _same_text(a, b)


def test_load_state_dict_values_from_torch(torch):
    tnet, enet = _classes(torch)[2](), _classes(ember)[2]()
    with torch.no_grad():
        for p in tnet.parameters():
            p.normal_()
    enet.load_state_dict({k: ember.tensor(v.detach().cpu().numpy()) for k, v in
                          tnet.state_dict().items()})
    for (tn, tp), (en, ep) in zip(tnet.named_parameters(), enet.named_parameters()):
        assert tn == en
        np.testing.assert_array_equal(_np(ep), _np(tp))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(_np(enet(ember.tensor(x))), _np(tnet(torch.tensor(x))),
                               rtol=1e-5, atol=1e-6)


def test_state_dict_metadata_and_hooks(torch):
    def run(lib):
        net = _classes(lib)[2]()
        log = []
        net.body.register_state_dict_pre_hook(lambda m, prefix, keep: log.append(("pre", prefix)))
        net.body.register_state_dict_post_hook(
            lambda m, sd, prefix, meta: log.append(("post", prefix, len(sd))))
        net.body.register_load_state_dict_pre_hook(
            lambda m, sd, prefix, *rest: log.append(("lpre", prefix)))
        net.register_load_state_dict_post_hook(
            lambda m, keys: log.append(("lpost", list(keys.missing_keys))))
        sd = net.state_dict()
        meta = dict(sd._metadata)
        net.load_state_dict(sd)
        h = net.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.clear())
        res = net.load_state_dict({}, strict=True)
        h.remove()
        return log, meta, repr(res)
    t, e = _both(torch, run)
    assert t == e


def test_extra_state_round_trip(torch):
    def run(lib):
        class WithExtra(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.value = 1

            def get_extra_state(self):
                return {"value": self.value}

            def set_extra_state(self, state):
                self.value = state["value"]

        a, b = WithExtra(), WithExtra()
        a.value = 5
        sd = a.state_dict()
        b.load_state_dict(sd)
        try:
            b.load_state_dict({})
        except RuntimeError as err:
            msg = str(err)
        return list(sd), b.value, msg
    t, e = _both(torch, run)
    assert t == e


# ---------------------------------------------------------------------------- modes, grads

def test_zero_grad_requires_grad_apply_train(torch):
    def run(lib):
        net = _classes(lib)[2]()
        x = lib.ones(2, 3)
        net(x).sum().backward()
        out = [[p.grad is None for p in net.parameters()]]
        net.zero_grad(set_to_none=False)
        out.append([None if p.grad is None else float(p.grad.abs().sum())
                    for p in net.parameters()])
        net.zero_grad()
        out.append([p.grad is None for p in net.parameters()])
        assert net.requires_grad_(False) is net
        out.append([p.requires_grad for p in net.parameters()])
        net.body.requires_grad_()
        out.append([p.requires_grad for p in net.parameters()])
        order = []
        assert net.apply(lambda m: order.append(type(m).__name__)) is net
        out.append(order)
        net.eval()
        out.append([m.training for m in net.modules()])
        net.body.train()
        out.append([m.training for m in net.modules()])
        try:
            net.train("yes")
        except ValueError as err:
            out.append(str(err))
        return out
    t, e = _both(torch, run)
    assert t == e


def test_to_double_and_float(torch):
    def run(lib):
        net = _classes(lib)[2]()
        net.double()
        out = [str(p.dtype) for p in net.parameters()] + [str(net.body[0].calls.dtype)]
        net.to(lib.float32)
        out += [str(p.dtype) for p in net.parameters()]
        return out
    t, e = _both(torch, run)
    assert t == e


# ---------------------------------------------------------------------------- forward hooks

def test_forward_hooks_order_kwargs_and_global(torch):
    def run(lib):
        nn = lib.nn
        Scale = _classes(lib)[0]
        m = Scale(2)
        log = []
        h1 = m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,), prepend=True)
        m.register_forward_pre_hook(lambda mod, args, kw: log.append(("kw", sorted(kw))) or
                                    (args, kw), with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: out * 10)
        m.register_forward_hook(lambda mod, args, kw, out: log.append(("fwkw", float(out.sum()))),
                                with_kwargs=True)
        g = nn.modules.module.register_module_forward_hook(
            lambda mod, args, out: log.append(("global", type(mod).__name__)))
        gp = nn.modules.module.register_module_forward_pre_hook(
            lambda mod, args: log.append("gpre"))
        try:
            y = m(lib.ones(2))
            h1.remove()
            y2 = m(lib.ones(2))
        finally:
            g.remove()
            gp.remove()
        m(lib.ones(1))
        return log, _np(y).tolist(), _np(y2).tolist()
    t, e = _both(torch, run)
    assert t == e


def test_always_call_forward_hook_runs_on_error(torch):
    def run(lib):
        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")
        m = Boom()
        log = []
        m.register_forward_hook(lambda mod, args, out: log.append(("always", out)),
                                always_call=True)
        m.register_forward_hook(lambda mod, args, out: log.append("normal"))
        with pytest.raises(ValueError, match="boom"):
            m(lib.ones(1))
        return log
    t, e = _both(torch, run)
    assert t == e


def test_pre_hook_with_kwargs_bad_return(torch):
    def run(lib):
        m = _classes(lib)[0](1)
        m.register_forward_pre_hook(lambda mod, a, k: 3, with_kwargs=True)
        with pytest.raises(RuntimeError) as err:
            m(lib.ones(1))
        return str(err.value)
    t, e = _both(torch, run)
    assert t == e


# ---------------------------------------------------------------------------- backward hooks

def _fmt(grads):
    return tuple(None if g is None else [round(float(v), 4) for v in _np(g).reshape(-1)]
                 for g in grads)


def _backward_hook_cases(lib):
    nn = lib.nn
    log = []

    class Two(nn.Module):
        def forward(self, x, y, k=2):
            return x * y * k, x + 1, (x * 0).sum() > 5

    m = Two()
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", _fmt(go))))
    h = m.register_full_backward_hook(lambda mod, gi, go: log.append(("full", _fmt(gi),
                                                                      _fmt(go))))
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.tensor([3.0, 4.0])
    a, b, c = m(x, y)
    log.append(("req", a.requires_grad, b.requires_grad, c.requires_grad))
    a.sum().backward()
    log.append(_fmt([x.grad]))
    x.grad = None
    y.requires_grad_()
    a, b, c = m(x, y, k=3)
    (a.sum() + 3 * b.sum()).backward()
    log.append(_fmt([x.grad, y.grad]))
    h.remove()

    class Sq(nn.Module):
        def forward(self, x):
            return x * x

    s = Sq()
    s.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10,))
    s.register_full_backward_hook(lambda mod, gi, go: log.append(("f", _fmt(gi), _fmt(go)))
                                  or (gi[0] + 1,))
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    s(x).sum().backward()
    log.append(_fmt([x.grad]))
    # a module whose inputs need no grad: the hook fires at the outputs, with a warning
    p = lib.tensor([2.0], requires_grad=True)

    class P(nn.Module):
        def forward(self, x):
            return x * p

    q = P()
    q.register_full_backward_hook(lambda mod, gi, go: log.append(("noinp", _fmt(gi), _fmt(go))))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        q(lib.tensor([1.0, 2.0])).sum().backward()
    log.append((_fmt([p.grad]), [str(x.message)[:70] for x in w]))
    for hook_kind, bad in (("full", lambda mod, gi, go: (gi[0], gi[0])),
                           ("pre", lambda mod, go: (go[0], go[0]))):
        s2 = Sq()
        if hook_kind == "full":
            s2.register_full_backward_hook(bad)
        else:
            s2.register_full_backward_pre_hook(bad)
        try:
            s2(lib.tensor([1.0], requires_grad=True)).sum().backward()
        except RuntimeError as err:
            log.append(str(err))
    with lib.no_grad():
        log.append(s(lib.tensor([1.0], requires_grad=True)).requires_grad)
    seq = nn.Sequential(Sq(), Sq())
    for i, mm in enumerate(seq):
        mm.register_full_backward_hook(lambda mod, gi, go, i=i: log.append((i, _fmt(gi),
                                                                           _fmt(go))))
    seq.register_full_backward_hook(lambda mod, gi, go: log.append(("seq", _fmt(gi), _fmt(go))))
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    seq(x).sum().backward()

    class Id(nn.Module):
        def forward(self, x):
            return x

    i_ = Id()
    i_.register_full_backward_hook(lambda mod, gi, go: log.append(("id", _fmt(gi), _fmt(go))))
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (i_(x) * 3).sum().backward()
    log.append(_fmt([x.grad]))
    # global full backward hooks run before the module's own
    g = nn.modules.module.register_module_full_backward_hook(
        lambda mod, gi, go: log.append(("global", type(mod).__name__)))
    gp = nn.modules.module.register_module_full_backward_pre_hook(
        lambda mod, go: log.append(("gpre", type(mod).__name__)))
    try:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        s(x).sum().backward()
    finally:
        g.remove()
        gp.remove()
    # mixing with the deprecated non-full hooks is refused
    try:
        s.register_backward_hook(lambda *a: None)
    except RuntimeError as err:
        log.append(str(err))
    return log


def test_full_backward_hooks_match_torch(torch):
    t, e = _both(torch, _backward_hook_cases)
    assert len(t) == len(e)
    for a, b in zip(t, e):
        assert a == b


def test_backward_hooks_grads_into_linear_weights(torch):
    def run(lib):
        _, Lin, _ = _classes(lib)
        lin = Lin(3, 2)
        seen = []
        lin.register_full_backward_hook(lambda mod, gi, go: seen.append(_fmt(gi + go)) or
                                        (gi[0] * 0.5,))
        x = lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        lin(x).pow(2).sum().backward()
        return seen, _fmt([x.grad, lin.weight.grad, lin.bias.grad])
    t, e = _both(torch, run)
    assert t == e


# ---------------------------------------------------------------------------- copy / pickle

PScale, PLin, PNet = _classes(ember)  # module level, so pickle can find them by name
for _cls, _name in ((PScale, "PScale"), (PLin, "PLin"), (PNet, "PNet")):
    _cls.__qualname__ = _name

def test_deepcopy_and_pickle_keep_structure_and_sharing():
    net = PNet()
    net.tied = net.body[0]  # a module registered twice
    net(ember.ones(2, 3)).sum().backward()
    for clone in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert repr(clone) == repr(net)
        assert clone.tied is clone.body[0]
        assert list(clone.state_dict()) == list(net.state_dict())
        for (n1, p1), (n2, p2) in zip(net.named_parameters(), clone.named_parameters()):
            assert n1 == n2 and p2 is not p1 and isinstance(p2, enn.Parameter)
            np.testing.assert_array_equal(_np(p1), _np(p2))
            assert p2.requires_grad == p1.requires_grad
        with ember.no_grad():
            clone.body[0].weight.add_(1.0)
        assert not np.array_equal(_np(clone.body[0].weight), _np(net.body[0].weight))
        x = ember.ones(2, 3)
        assert clone(x).shape == net(x).shape
        clone.register_forward_hook(lambda m, a, o: o)  # registries survive the round trip


def test_setstate_fills_missing_registries():
    m = enn.Module()
    state = m.__getstate__()
    for key in ("_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_pre_hooks",
                "_is_full_backward_hook"):
        del state[key]
    fresh = enn.Module.__new__(enn.Module)
    fresh.__setstate__(state)
    fresh.state_dict()
    fresh.load_state_dict({})


# ---------------------------------------------------------------------------- nn.utils

def _grads_model(lib, seed=0):
    rng = np.random.default_rng(seed)
    ps = [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(np.float32)))
          for s in [(3, 4), (5,), (2, 2, 2)]]
    for p in ps:
        p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 3)
    ps.append(lib.nn.Parameter(lib.ones(2)))  # no grad: skipped
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1, 0.5, 3, float("inf"), "inf"])
@pytest.mark.parametrize("max_norm", [0.1, 1000.0])
def test_clip_grad_norm_matches_torch(torch, norm_type, max_norm):
    def run(lib):
        ps = _grads_model(lib)
        total = lib.nn.utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type, foreach=None)
        return [total] + [p.grad for p in ps[:3]]
    for a, b in zip(*_both(torch, run)):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-5, atol=1e-7)
        assert str(b.dtype) == str(a.dtype) and b.shape == a.shape


def test_clip_grad_norm_single_tensor_empty_and_nonfinite(torch):
    def run(lib):
        utils = lib.nn.utils
        p = lib.nn.Parameter(lib.ones(3))
        p.grad = lib.full((3,), 4.0)
        out = [float(utils.clip_grad_norm_(p, 1.0)), _np(p.grad).tolist()]
        out.append(float(utils.clip_grad_norm_([], 1.0)))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            utils.clip_grad_norm_((q for q in []), 1.0)
        out.append(str(w[0].message))
        p.grad = lib.tensor([1.0, float("nan"), 2.0])
        with pytest.raises(RuntimeError) as err:
            utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
        out.append(str(err.value))
        out.append(float(utils.get_total_norm([lib.ones(4), lib.ones(5)], 2.0)))
        return out
    t, e = _both(torch, run)
    assert str(t) == str(e)


def test_clip_grad_value_matches_torch(torch):
    def run(lib):
        ps = _grads_model(lib)
        assert lib.nn.utils.clip_grad_value_(ps, 1.5) is None
        lib.nn.utils.clip_grad_value_(ps[0], 0.5)
        return [p.grad for p in ps[:3]]
    for a, b in zip(*_both(torch, run)):
        np.testing.assert_array_equal(_np(b), _np(a))


def test_parameters_vector_round_trip(torch):
    def run(lib):
        ps = _grads_model(lib)[:3]
        vec = lib.nn.utils.parameters_to_vector(ps)
        (vec * lib.arange(vec.numel(), dtype=lib.float32)).sum().backward()
        new = lib.arange(vec.numel(), dtype=lib.float32)
        lib.nn.utils.vector_to_parameters(new, ps)
        try:
            lib.nn.utils.vector_to_parameters([1.0], ps)
        except TypeError as err:
            msg = str(err)
        return [vec] + [p.grad for p in ps] + [p.detach() for p in ps], msg
    (t, tm), (e, em) = _both(torch, run)
    for a, b in zip(t, e):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6)
        assert b.shape == a.shape
    assert tm == em.replace("list", "list")


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(torch, batch_first, padding_side):
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal((n, 2, 3)).astype(np.float32) for n in (2, 5, 3)]

    def run(lib):
        xs = [lib.tensor(s, requires_grad=True) for s in seqs]
        out = lib.nn.utils.rnn.pad_sequence(xs, batch_first=batch_first, padding_value=-1.5,
                                            padding_side=padding_side)
        (out * lib.arange(out.numel(), dtype=lib.float32).reshape(out.shape)).sum().backward()
        return [out] + [x.grad for x in xs]
    for a, b in zip(*_both(torch, run)):
        np.testing.assert_array_equal(_np(b), _np(a))


def test_pad_sequence_errors(torch):
    def run(lib):
        pad = lib.nn.utils.rnn.pad_sequence
        out = []
        for case in (lambda: pad([]), lambda: pad([lib.ones(2)], padding_side="mid"),
                     lambda: pad(3), lambda: pad([lib.ones(2, 3), lib.ones(2, 4)])):
            try:
                case()
            except RuntimeError as err:
                out.append(str(err))
        return out
    t, e = _both(torch, run)
    assert t == e


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_packed_match_torch(torch, enforce_sorted, batch_first):
    rng = np.random.default_rng(2)
    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 3]
    padded = rng.standard_normal((4, 6, 3) if batch_first else (6, 4, 3)).astype(np.float32)

    def run(lib):
        rnn = lib.nn.utils.rnn
        x = lib.tensor(padded, requires_grad=True)
        packed = rnn.pack_padded_sequence(x, lib.tensor(lengths), batch_first=batch_first,
                                          enforce_sorted=enforce_sorted)
        out, lens = rnn.pad_packed_sequence(packed, batch_first=batch_first, padding_value=9.0,
                                            total_length=7)
        weights = lib.arange(out.numel(), dtype=lib.float32).reshape(out.shape)
        (out * weights).sum().backward()
        seqs = rnn.unpack_sequence(packed)
        res = [packed.data, packed.batch_sizes, out, lens, x.grad] + seqs
        if not enforce_sorted:
            res += [packed.sorted_indices, packed.unsorted_indices]
        return res
    t, e = _both(torch, run)
    assert len(t) == len(e)
    for a, b in zip(t, e):
        np.testing.assert_array_equal(_np(b), _np(a))
        assert str(b.dtype) == str(a.dtype)


def test_pack_sequence_and_errors(torch):
    def run(lib):
        rnn = lib.nn.utils.rnn
        seqs = [lib.ones(3, 2), 2 * lib.ones(1, 2), 3 * lib.ones(2, 2)]
        p = rnn.pack_sequence(seqs, enforce_sorted=False)
        out = [_np(p.data).tolist(), _np(p.batch_sizes).tolist(), type(p).__name__,
               [tuple(s.shape) for s in rnn.unpack_sequence(p)], p._fields]
        for case in (lambda: rnn.pack_padded_sequence(lib.ones(3, 2), [1, 2]),
                     lambda: rnn.pack_padded_sequence(lib.ones(3, 2), [2, 0]),
                     lambda: rnn.pack_padded_sequence(lib.ones(3, 2), [3, 2, 1]),
                     lambda: rnn.pad_packed_sequence(p, total_length=1),
                     lambda: rnn.pack_sequence(seqs)):
            try:
                case()
            except (RuntimeError, ValueError) as err:
                out.append(f"{type(err).__name__}: {err}")
        return out
    t, e = _both(torch, run)
    assert t == e


def test_unpad_sequence(torch):
    def run(lib):
        rnn = lib.nn.utils.rnn
        seqs = [lib.arange(3.0), lib.arange(1.0), lib.arange(2.0)]
        padded = rnn.pad_sequence(seqs, batch_first=True)
        return [_np(s).tolist() for s in rnn.unpad_sequence(padded, lib.tensor([3, 1, 2]),
                                                            batch_first=True)]
    t, e = _both(torch, run)
    assert t == e


def test_namespaces_importable():
    from ember import nn
    assert nn.init.xavier_uniform_ is not None
    assert nn.utils.clip_grad_norm_ is not None and nn.utils.rnn.pad_sequence is not None
    assert nn.modules.module.register_module_forward_hook is not None
