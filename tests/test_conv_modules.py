"""nn.Conv*/ConvTranspose* and the pooling layers against torch: outputs and gradients with
copied state_dicts, reprs, state_dict keys, default init and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn

# torch and ember both warn about 'same' padding with an even kernel; the tests use it on purpose
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")


def _load(em, tm):
    em.load_state_dict({k: ember.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()})


def _check_layer(torch, name, args, kwargs, shape, fwd_kwargs=None, rtol=1e-5, atol=1e-5,
                 seed=0):
    """Same layer in both libraries with torch's parameters; compare y, dx and dparams."""
    torch.manual_seed(seed)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    em = getattr(nn, name)(*args, **kwargs)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    _load(em, tm)
    xn = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    tx = torch.tensor(xn, requires_grad=True)
    ex = ember.tensor(xn, requires_grad=True)
    fwd_kwargs = fwd_kwargs or {}
    ty, ey = tm(tx, **fwd_kwargs), em(ex, **fwd_kwargs)
    if isinstance(ty, tuple):
        assert isinstance(ey, tuple)
        np.testing.assert_array_equal(ey[1].cpu().numpy(), ty[1].cpu().numpy())
        assert ey[1].dtype == ember.int64
        ty, ey = ty[0], ey[0]
    assert tuple(ey.shape) == tuple(ty.shape)
    np.testing.assert_allclose(ey.detach().cpu().numpy(), ty.detach().cpu().numpy(), rtol=rtol, atol=atol)
    gn = np.random.default_rng(seed + 1).standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(gn))
    ey.backward(ember.tensor(gn))
    np.testing.assert_allclose(ex.grad.cpu().numpy(), tx.grad.cpu().numpy(), rtol=rtol, atol=atol)
    tparams = dict(tm.named_parameters())
    for k, p in em.named_parameters():
        np.testing.assert_allclose(p.grad.cpu().numpy(), tparams[k].grad.cpu().numpy(), rtol=rtol,
                                   atol=atol, err_msg=k)
    return em, tm


CONV_CASES = [
    ("Conv1d", (3, 4, 3), {}, (2, 3, 10)),
    ("Conv1d", (3, 4, 3), {}, (3, 10)),  # unbatched
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}, (2, 4, 11)),
    ("Conv1d", (3, 4, 4), {"padding": "same", "dilation": 1}, (2, 3, 9)),
    ("Conv1d", (3, 4, 3), {"padding": "valid", "bias": False}, (2, 3, 9)),
    ("Conv1d", (3, 4, 3), {"padding": 2, "padding_mode": "reflect"}, (2, 3, 9)),
    ("Conv1d", (3, 4, 3), {"padding": 1, "padding_mode": "replicate"}, (2, 3, 9)),
    ("Conv1d", (3, 4, 3), {"padding": 2, "padding_mode": "circular"}, (2, 3, 9)),
    ("Conv1d", (3, 4, 4), {"padding": "same", "padding_mode": "circular"}, (2, 3, 9)),
    ("Conv2d", (3, 5, 3), {}, (2, 3, 8, 7)),
    ("Conv2d", (3, 5, 3), {}, (3, 8, 7)),
    ("Conv2d", (4, 8, (3, 2)), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2),
                                "groups": 4}, (2, 4, 9, 8)),
    ("Conv2d", (3, 5, (3, 4)), {"padding": "same", "dilation": (2, 1)}, (2, 3, 8, 7)),
    ("Conv2d", (3, 5, 3), {"padding": (1, 2), "padding_mode": "reflect"}, (2, 3, 8, 7)),
    ("Conv2d", (3, 5, 3), {"padding": 1, "padding_mode": "replicate", "bias": False},
     (2, 3, 6, 7)),
    ("Conv2d", (3, 5, 3), {"padding": (2, 1), "padding_mode": "circular"}, (2, 3, 6, 7)),
    ("Conv2d", (3, 5, 3), {"padding": "same", "padding_mode": "reflect"}, (2, 3, 6, 7)),
    ("Conv3d", (2, 4, 3), {}, (2, 2, 5, 6, 5)),
    ("Conv3d", (2, 4, (2, 3, 1)), {"stride": (1, 2, 1), "padding": 1, "groups": 2},
     (1, 2, 5, 6, 5)),
    ("Conv3d", (2, 4, 3), {"padding": 1, "padding_mode": "replicate"}, (1, 2, 4, 5, 4)),
    ("Conv3d", (2, 4, 3), {"padding": 1, "padding_mode": "circular"}, (1, 2, 4, 5, 4)),
    ("Conv3d", (2, 4, 3), {"padding": "same"}, (2, 4, 4, 4)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", CONV_CASES)
def test_conv_matches_torch(torch, name, args, kwargs, shape):
    _check_layer(torch, name, args, kwargs, shape)


CONV_T_CASES = [
    ("ConvTranspose1d", (3, 4, 3), {}, (2, 3, 6), None),
    ("ConvTranspose1d", (3, 4, 3), {}, (3, 6), None),
    ("ConvTranspose1d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1,
                                    "groups": 2, "dilation": 1}, (2, 4, 5), None),
    ("ConvTranspose1d", (3, 4, 3), {"stride": 3, "bias": False, "dilation": 2}, (2, 3, 5),
     None),
    ("ConvTranspose1d", (3, 4, 3), {"stride": 2}, (2, 3, 5), {"output_size": [12]}),
    ("ConvTranspose1d", (3, 4, 3), {"stride": 2}, (3, 5), {"output_size": [4, 12]}),
    ("ConvTranspose2d", (3, 5, 3), {}, (2, 3, 4, 5), None),
    ("ConvTranspose2d", (4, 6, (3, 2)), {"stride": (2, 3), "padding": (1, 0),
                                         "output_padding": (1, 2), "groups": 2},
     (2, 4, 4, 3), None),
    ("ConvTranspose2d", (3, 5, 3), {"stride": 2, "padding": 1}, (2, 3, 4, 5),
     {"output_size": (8, 10)}),
    ("ConvTranspose2d", (3, 5, 3), {"stride": 2, "padding": 1}, (2, 3, 4, 5),
     {"output_size": (2, 5, 7, 9)}),
    ("ConvTranspose2d", (3, 5, 2), {"dilation": 2, "bias": False}, (3, 4, 5), None),
    ("ConvTranspose3d", (2, 4, 3), {}, (1, 2, 3, 4, 3), None),
    ("ConvTranspose3d", (2, 4, (2, 3, 2)), {"stride": 2, "output_padding": (1, 0, 1),
                                            "padding": (0, 1, 0)}, (2, 2, 3, 2, 3), None),
    ("ConvTranspose3d", (2, 4, 3), {"stride": 2}, (1, 2, 3, 3, 3),
     {"output_size": (8, 7, 8)}),
]


@pytest.mark.parametrize("name,args,kwargs,shape,fwd", CONV_T_CASES)
def test_conv_transpose_matches_torch(torch, name, args, kwargs, shape, fwd):
    _check_layer(torch, name, args, kwargs, shape, fwd_kwargs=fwd)


def test_conv_double_precision(torch):
    tm = torch.nn.Conv2d(2, 3, 3, dtype=torch.float64)
    em = nn.Conv2d(2, 3, 3, dtype=ember.float64)
    assert em.weight.dtype == ember.float64 and em.bias.dtype == ember.float64
    _load(em, tm)
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 5))
    np.testing.assert_allclose(em(ember.tensor(x)).detach().cpu().numpy(),
                               tm(torch.tensor(x)).detach().cpu().numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,args,kwargs", [
    ("Conv1d", (3, 4, 5), {}),
    ("Conv2d", (6, 9, (3, 2)), {"groups": 3}),
    ("Conv3d", (2, 8, 3), {"stride": 2, "padding": 1}),
    ("ConvTranspose2d", (6, 4, 3), {"groups": 2}),
    ("ConvTranspose1d", (3, 8, 3), {}),
])
def test_conv_attributes_shapes_and_params(torch, name, args, kwargs):
    tm = getattr(torch.nn, name)(*args, **kwargs)
    em = getattr(nn, name)(*args, **kwargs)
    for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                 "transposed", "output_padding", "groups", "padding_mode",
                 "_reversed_padding_repeated_twice"):
        assert tuple(_as_tuple(getattr(em, attr))) == tuple(_as_tuple(getattr(tm, attr))), attr
    assert [(k, tuple(p.shape)) for k, p in em.named_parameters()] == \
        [(k, tuple(p.shape)) for k, p in tm.named_parameters()]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in em.parameters())


def _as_tuple(v):
    return v if isinstance(v, (tuple, list)) else (v,)


@pytest.mark.parametrize("name,args", [
    ("Conv2d", (16, 32, 3)),
    ("Conv1d", (8, 64, 5)),
    ("ConvTranspose2d", (16, 32, 3)),  # fan_in of a transposed weight is out/groups * k
    ("Conv2d", (16, 32, 3, 1, 0, 1, 4)),
])
def test_conv_default_init_is_torchs(torch, name, args):
    em = getattr(nn, name)(*args)
    tm = getattr(torch.nn, name)(*args)
    w = em.weight.detach().cpu().numpy()
    fan_in = tm.weight.shape[1] * math.prod(tm.weight.shape[2:])
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)): gain*sqrt(3/fan_in)
    assert np.abs(w).max() <= bound + 1e-7
    assert np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    b = em.bias.detach().cpu().numpy()
    assert np.abs(b).max() <= bound + 1e-7
    assert np.abs(tm.bias.detach().cpu().numpy()).max() <= bound + 1e-7


def test_conv_padding_mode_repr(torch):
    for kwargs in ({"padding": 1, "padding_mode": "reflect"}, {"padding": "same"},
                   {"padding": "valid", "dilation": 2}, {"stride": 2, "bias": False}):
        assert repr(nn.Conv2d(2, 3, 3, **kwargs)) == repr(torch.nn.Conv2d(2, 3, 3, **kwargs))


@pytest.mark.parametrize("name,args,kwargs", [
    ("Conv2d", (3, 4, 3), {"groups": 0}),
    ("Conv2d", (3, 4, 3), {"groups": 2}),
    ("Conv2d", (4, 3, 3), {"groups": 2}),
    ("Conv2d", (3, 4, 3), {"padding": "full"}),
    ("Conv2d", (3, 4, 3), {"padding": "same", "stride": 2}),
    ("Conv2d", (3, 4, 3), {"padding_mode": "mirror"}),
    ("ConvTranspose2d", (3, 4, 3), {"padding_mode": "reflect"}),
])
def test_conv_constructor_errors(torch, name, args, kwargs):
    with pytest.raises(ValueError) as te:
        getattr(torch.nn, name)(*args, **kwargs)
    with pytest.raises(ValueError) as ee:
        getattr(nn, name)(*args, **kwargs)
    assert _sorted_sets(str(ee.value)) == _sorted_sets(str(te.value))


def _sorted_sets(msg: str) -> str:
    """A message with each printed set's items sorted: set order varies with str hashing."""
    import re
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}",
                  msg)


def test_conv_transpose_output_size_errors(torch):
    tm, em = torch.nn.ConvTranspose2d(3, 4, 3, stride=2), nn.ConvTranspose2d(3, 4, 3, stride=2)
    x = np.zeros((1, 3, 4, 4), np.float32)
    for size in ([20, 20], [9, 9, 9]):
        with pytest.raises(ValueError) as te:
            tm(torch.tensor(x), output_size=size)
        with pytest.raises(ValueError) as ee:
            em(ember.tensor(x), output_size=size)
        assert str(ee.value) == str(te.value)


def test_conv_wrong_channels_error(torch):
    x = np.zeros((1, 2, 5, 5), np.float32)
    with pytest.raises(RuntimeError) as te:
        torch.nn.Conv2d(3, 4, 3)(torch.tensor(x))
    with pytest.raises(RuntimeError) as ee:
        nn.Conv2d(3, 4, 3)(ember.tensor(x))
    assert str(ee.value) == str(te.value)


# --------------------------------------------------------------------------- pooling

POOL_CASES = [
    ("MaxPool1d", (3,), {}, (2, 3, 10)),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True},
     (2, 3, 11)),
    ("MaxPool1d", (2,), {"return_indices": True}, (3, 9)),
    ("MaxPool2d", (2,), {}, (2, 3, 8, 8)),
    ("MaxPool2d", ((3, 2),), {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2),
                              "ceil_mode": True}, (2, 3, 9, 8)),
    ("MaxPool2d", (3,), {"stride": 2, "return_indices": True}, (2, 3, 9, 8)),
    ("MaxPool2d", (2,), {"return_indices": True}, (3, 6, 6)),
    ("AvgPool1d", (3,), {}, (2, 3, 10)),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True,
                         "count_include_pad": False}, (2, 3, 10)),
    ("AvgPool2d", (2,), {}, (2, 3, 8, 8)),
    ("AvgPool2d", ((3, 2),), {"stride": (2, 1), "padding": (1, 1), "ceil_mode": True,
                              "count_include_pad": False}, (2, 3, 9, 8)),
    ("AvgPool2d", (3,), {"padding": 1, "divisor_override": 2}, (3, 7, 7)),
    ("LPPool1d", (2, 3), {}, (2, 3, 9)),
    ("LPPool1d", (3, 2), {"stride": 1}, (2, 3, 9)),
    ("LPPool2d", (2, 2), {}, (2, 3, 8, 8)),
    ("LPPool2d", (1.5, (3, 2)), {"stride": (2, 1), "ceil_mode": True}, (2, 3, 9, 8)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 10)),
    ("AdaptiveAvgPool2d", ((3, 4),), {}, (2, 3, 8, 9)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 8, 9)),
    ("AdaptiveAvgPool2d", ((None, 3),), {}, (3, 8, 9)),
    ("AdaptiveMaxPool1d", (4,), {}, (2, 3, 10)),
    ("AdaptiveMaxPool1d", (3,), {"return_indices": True}, (2, 3, 10)),
    ("AdaptiveMaxPool2d", ((3, 4),), {}, (2, 3, 8, 9)),
    ("AdaptiveMaxPool2d", (2,), {"return_indices": True}, (2, 3, 7, 5)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", POOL_CASES)
def test_pool_matches_torch(torch, name, args, kwargs, shape):
    _check_layer(torch, name, args, kwargs, shape)


def test_pool_attributes(torch):
    for name, args, kwargs in [("MaxPool2d", (3,), {}), ("AvgPool1d", (3,), {}),
                               ("AvgPool2d", (3,), {"stride": 1}),
                               ("AvgPool1d", (2,), {"stride": 1, "padding": 1}),
                               ("LPPool2d", (2, 3), {})]:
        tm, em = getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)
        for attr in ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                     "norm_type", "dilation", "return_indices", "divisor_override"):
            assert getattr(em, attr, "missing") == getattr(tm, attr, "missing"), (name, attr)
        assert list(em.state_dict()) == [] and list(em.parameters()) == []
