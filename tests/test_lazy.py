"""Lazy modules and uninitialised parameters, checked against torch 2.13."""

import copy
import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.parameter import (
    Parameter,
    UninitializedBuffer,
    UninitializedParameter,
    is_lazy,
)

torch = pytest.importorskip("torch")


def _e(t):
    return ember.tensor(t.detach().cpu().numpy())


def _copy_params(src_torch, dst_ember):
    """Same values in ember as in torch, by name (parameters and buffers)."""
    with ember.no_grad():
        for name, t in list(src_torch.named_parameters()) + list(src_torch.named_buffers()):
            _get(dst_ember, name).copy_(_e(t))


def _get(module, dotted):
    *path, last = dotted.split(".")
    for p in path:
        module = getattr(module, p)
    return getattr(module, last)


# ---------------------------------------------------------------------- the uninitialised tensor
def test_uninitialized_parameter_is_a_parameter_with_torchs_errors():
    p = UninitializedParameter()
    assert isinstance(p, Parameter) and is_lazy(p)
    assert repr(p) == "<UninitializedParameter>"
    assert p.requires_grad and p.dtype == ember.float32
    assert p.size() == (0,)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        p.shape  # noqa: B018
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter in"):
        p.numel()
    with pytest.raises(ValueError, match="torch.nn.parameter.UninitializedParameter"):
        p + 1
    tp = torch.nn.parameter.UninitializedParameter()
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        tp.shape  # noqa: B018


def test_materialize_turns_it_into_the_class_to_become():
    p = UninitializedParameter(dtype=ember.float64)
    p.materialize((2, 3))
    assert type(p) is Parameter and p.shape == (2, 3) and p.dtype == ember.float64
    assert p.requires_grad and p.is_leaf
    b = UninitializedBuffer()
    assert not b.requires_grad and repr(b) == "<UninitializedBuffer>"
    b.materialize((4,))
    assert type(b) is ember.Tensor and b.shape == (4,)


def test_moving_an_uninitialized_parameter_keeps_it_uninitialized():
    p = UninitializedParameter()
    q = p.double()
    assert is_lazy(q) and q.dtype == ember.float64
    assert copy.deepcopy(p) is not p and is_lazy(copy.deepcopy(p))


# ---------------------------------------------------------------------- LazyLinear
def test_lazy_linear_before_the_first_forward_matches_torch():
    m, tm = nn.LazyLinear(3), torch.nn.LazyLinear(3)
    assert repr(m) == repr(tm) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert m.has_uninitialized_params() and tm.has_uninitialized_params()
    sd, tsd = m.state_dict(), tm.state_dict()
    assert list(sd) == list(tsd) == ["weight", "bias"]
    assert all(is_lazy(v) for v in sd.values())
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]


def test_lazy_linear_materializes_on_first_forward_and_becomes_linear():
    ember.manual_seed(0)
    m = nn.LazyLinear(5)
    x = ember.randn(2, 7)
    m(x)
    assert type(m) is nn.Linear and not hasattr(m, "has_uninitialized_params")
    assert m.in_features == 7 and m.weight.shape == (5, 7) and m.bias.shape == (5,)
    assert repr(m) == "Linear(in_features=7, out_features=5, bias=True)"
    assert type(m.weight) is Parameter
    # the non-lazy initialisation: kaiming_uniform(a=sqrt(5)) -> U(-1/sqrt(fan_in), ...)
    bound = 1 / math.sqrt(7)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert float(m.weight.std()) > 0.1 * bound
    assert not m._forward_pre_hooks and not m._load_state_dict_pre_hooks


def test_lazy_linear_trains_like_torch_with_an_optimizer_made_after_the_dry_run():
    m, tm = nn.LazyLinear(3), torch.nn.LazyLinear(3)
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    m(ember.tensor(x))
    tm(torch.tensor(x))
    _copy_params(tm, m)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        topt.zero_grad()
        m(ember.tensor(x)).pow(2).sum().backward()
        tm(torch.tensor(x)).pow(2).sum().backward()
        np.testing.assert_allclose(m.weight.grad.cpu().numpy(), tm.weight.grad.cpu().numpy(), rtol=1e-4,
                                   atol=1e-5)
        opt.step()
        topt.step()
    np.testing.assert_allclose(m.weight.detach().cpu().numpy(), tm.weight.detach().cpu().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.bias.detach().cpu().numpy(), tm.bias.detach().cpu().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_lazy_linear_without_bias_and_with_dtype():
    m = nn.LazyLinear(2, bias=False, dtype=ember.float64)
    assert m.bias is None
    m(ember.randn(3, 4, dtype=ember.float64))
    assert m.weight.dtype == ember.float64 and m.bias is None


def test_module_to_changes_the_dtype_of_uninitialized_parameters():
    m = nn.LazyLinear(2).double()
    assert is_lazy(m.weight) and m.weight.dtype == ember.float64
    m(ember.randn(3, 4, dtype=ember.float64))
    assert m.weight.dtype == ember.float64


# ---------------------------------------------------------------------- state dict
def test_loading_a_materialized_state_dict_into_a_lazy_module():
    src = nn.Linear(4, 3)
    m, tm = nn.LazyLinear(3), torch.nn.LazyLinear(3)
    assert str(m.load_state_dict(src.state_dict())) == "<All keys matched successfully>"
    tm.load_state_dict(torch.nn.Linear(4, 3).state_dict())
    # materialised but still lazy until forward, as torch
    assert type(m) is nn.LazyLinear and type(tm) is torch.nn.LazyLinear
    assert not m.has_uninitialized_params() and not tm.has_uninitialized_params()
    np.testing.assert_array_equal(m.weight.detach().cpu().numpy(), src.weight.detach().cpu().numpy())
    m(ember.randn(2, 4))
    assert type(m) is nn.Linear


def test_loading_a_lazy_state_dict_into_a_linear_raises_torchs_error():
    with pytest.raises(RuntimeError, match="Can't access the shape") as e:
        nn.Linear(4, 3).load_state_dict(nn.LazyLinear(3).state_dict())
    with pytest.raises(RuntimeError) as te:
        torch.nn.Linear(4, 3).load_state_dict(torch.nn.LazyLinear(3).state_dict())
    assert str(e.value) == str(te.value)


def test_loading_a_lazy_state_dict_into_a_lazy_module_keeps_it_lazy():
    m = nn.LazyLinear(3)
    assert str(m.load_state_dict(nn.LazyLinear(3).state_dict())) == \
        "<All keys matched successfully>"
    assert m.has_uninitialized_params()


def test_deepcopy_of_a_lazy_module():
    m = copy.deepcopy(nn.LazyLinear(3))
    assert m.has_uninitialized_params()
    m(ember.randn(1, 2))
    assert m.weight.shape == (3, 2)


# ---------------------------------------------------------------------- conv and norm layers
@pytest.mark.parametrize("name, shape, kwargs", [
    ("Conv1d", (2, 3, 9), {"kernel_size": 3}),
    ("Conv2d", (2, 3, 8, 8), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("Conv2d", (3, 8, 8), {"kernel_size": 3, "groups": 3}),
    ("Conv3d", (1, 2, 5, 5, 5), {"kernel_size": 2}),
    ("ConvTranspose1d", (2, 3, 6), {"kernel_size": 3, "stride": 2}),
    ("ConvTranspose2d", (2, 4, 5, 5), {"kernel_size": 3, "groups": 2}),
    ("ConvTranspose3d", (1, 2, 3, 3, 3), {"kernel_size": 2}),
])
def test_lazy_conv_matches_torch(name, shape, kwargs):
    m = getattr(nn, "Lazy" + name)(6, **kwargs)
    tm = getattr(torch.nn, "Lazy" + name)(6, **kwargs)
    assert repr(m) == repr(tm)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    m(ember.tensor(x))
    tm(torch.tensor(x))
    assert type(m) is getattr(nn, name)
    assert repr(m) == repr(tm)
    assert m.weight.shape == tuple(tm.weight.shape) and m.bias.shape == tuple(tm.bias.shape)
    _copy_params(tm, m)
    np.testing.assert_allclose(m(ember.tensor(x)).detach().cpu().numpy(),
                               tm(torch.tensor(x)).detach().cpu().numpy(), rtol=1e-4, atol=1e-5)


def test_lazy_conv_rejects_a_wrong_input_rank_like_torch():
    with pytest.raises(RuntimeError) as e:
        nn.LazyConv2d(4, 3)(ember.randn(2, 3))
    with pytest.raises(RuntimeError) as te:
        torch.nn.LazyConv2d(4, 3)(torch.randn(2, 3))
    assert str(e.value) == str(te.value)


@pytest.mark.parametrize("name, shape", [("BatchNorm1d", (4, 5)), ("BatchNorm1d", (4, 5, 3)),
                                         ("BatchNorm2d", (3, 2, 4, 4)),
                                         ("BatchNorm3d", (2, 3, 2, 2, 2)),
                                         ("InstanceNorm1d", (2, 3, 6)),
                                         ("InstanceNorm2d", (2, 3, 4, 4))])
def test_lazy_norm_matches_torch(name, shape):
    m, tm = getattr(nn, "Lazy" + name)(), getattr(torch.nn, "Lazy" + name)()
    assert repr(m) == repr(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    y, ty = m(ember.tensor(x)), tm(torch.tensor(x))
    assert type(m) is getattr(nn, name) and repr(m) == repr(tm)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ty.detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    sd, tsd = m.state_dict(), tm.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        np.testing.assert_allclose(sd[k].cpu().numpy(), tsd[k].cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_lazy_batchnorm_without_affine_or_stats():
    m = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    tm = torch.nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    assert list(m.state_dict()) == list(tm.state_dict()) == []
    m(ember.randn(4, 3))
    assert type(m) is nn.BatchNorm1d and m.weight is None and m.running_mean is None


def test_weight_norm_refuses_an_uninitialized_parameter():
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="uninitialized"):
        nn.utils.weight_norm(nn.LazyLinear(3))


def test_initialize_parameters_must_be_defined():
    class Half(nn.modules.lazy.LazyModuleMixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.w = UninitializedParameter()

        def forward(self, x):
            return x

    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented "
                                                  "for Half"):
        Half()(ember.randn(2))
