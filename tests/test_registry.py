"""The op registry (``ember/ops/_registry.py``): every registered op has an op-table row, and
each registration gives exactly the forms it declares (function, method, in-place, aliases,
operators, torch's ``axis=``/``keepdims=`` keywords)."""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from op_table import OPS, Input, materialize

import ember
from ember.ops._registry import REGISTRY, register

TESTS = Path(__file__).resolve().parent
TABLE_FILES = {str(TESTS / "op_table.py")} | {str(p) for p in (TESTS / "op_tables").glob("*.py")}

# Registered ops with no op-table row yet, each with the reason. Keep it short: a new
# registration needs a row (tests/op_table.py or tests/op_tables/), not an entry here.
_FACTORY = "a factory (no tensor input for a row to compare): tests/test_tensor.py"
_RANDOM = "random draws differ from torch's: checked by distribution, not in the op table"
NOT_IN_TABLE = {
    # ops/creation.py
    **dict.fromkeys(("arange", "as_tensor", "empty", "empty_like", "full_like", "linspace",
                     "logspace", "ones_like", "zeros_like", "scalar_tensor", "new_empty",
                     "new_full", "new_ones", "new_tensor", "new_zeros"), _FACTORY),
    # ops/sampling.py
    **dict.fromkeys(("rand", "rand_like", "randint", "randint_like", "randn", "randn_like",
                     "randperm", "exponential_"), _RANDOM),
    # ops/inplace.py: the in-place mechanism itself, tested in tests/test_autograd.py
    "copy_": "tests/test_autograd.py", "fill_": "tests/test_autograd.py",
    "zero_": "tests/test_autograd.py",
    # ops/shape.py, ops/indexing.py, ops/products.py (TODO: rows; tested in test_shaping.py etc.)
    "broadcast_shapes": "shapes in, a shape out",
    "setitem": "tests/test_autograd.py (x[i] = v)", "rmatmul": "the ``2 @ x`` operator only",
    "_replay_view": "internal (a view's grad_fn after an in-place change): test_autograd.py",
}


def _forms(info) -> list[tuple[object, str]]:
    """(owner, attribute) of every form a registration installs: ember.X, Tensor.X, X_, dunders."""
    names = (info.name, *info.aliases)
    forms = [(ember, n) for n in names] if info.export else []
    if info.method:
        forms += [(ember.Tensor, n) for n in names]
    if info.inplace:
        forms += [(ember.Tensor, n + "_") for n in names]
    forms += [(ember.Tensor, d) for d in info.operators]
    return forms


def _counting(fn, key: str, called: set):
    """``fn``, recording ``key`` when called straight from an op-table row (not from inside
    another op, so an op used only as a building block does not count as tested)."""

    def counted(*args, **kwargs):
        if sys._getframe(1).f_code.co_filename in TABLE_FILES:
            called.add(key)
        return fn(*args, **kwargs)

    counted.__name__ = getattr(fn, "__name__", key)
    return counted


def _run_forward_once(case) -> None:
    sample = case.samples[0]
    inputs = materialize(case, 0, sample, case.dtypes[0])
    args = [a.tensor(ember) if isinstance(a, Input) else a for a in inputs]
    # error samples (ember refusing as torch does) still call the op: their errors don't matter
    with warnings.catch_warnings(), contextlib.suppress(Exception):
        warnings.simplefilter("ignore")
        case.fn(ember, *args, **sample.kwargs)


# torch's other namespaces that re-export ops (``F.conv2d`` is ``torch.conv2d``): a row calling
# the op there counts too
NAMESPACES = (ember.nn.functional, ember.linalg)


def test_every_registered_op_has_an_op_table_row(monkeypatch):
    called: set[str] = set()
    for key, info in REGISTRY.items():
        for owner, attr in _forms(info):
            fn = owner.__dict__.get(attr) if owner is ember.Tensor else getattr(owner, attr, None)
            if fn is not None:
                monkeypatch.setattr(owner, attr, _counting(fn, key, called))
        for ns in NAMESPACES:
            for attr, value in list(vars(ns).items()):
                if value is info.fn or value is info.public:
                    monkeypatch.setattr(ns, attr, _counting(value, key, called))
    for case in OPS:
        _run_forward_once(case)
    missing = sorted(set(REGISTRY) - called - set(NOT_IN_TABLE))
    assert not missing, f"registered ops with no op-table row: {missing}"
    stale = sorted(set(NOT_IN_TABLE) & called)
    assert not stale, f"NOT_IN_TABLE entries that now have rows (remove them): {stale}"
    unknown = sorted(set(NOT_IN_TABLE) - set(REGISTRY))
    assert not unknown, f"NOT_IN_TABLE entries that are not registered: {unknown}"


# --------------------------------------------------------------------------- registration semantics


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_registration_installs_its_forms(key):
    info = REGISTRY[key]
    names = (info.name, *info.aliases)
    for n in names:
        if info.export:
            assert getattr(ember, n) is info.public, f"ember.{n}"
        else:
            assert not hasattr(ember, n), f"ember.{n} (registered with export=False)"
        if info.method:
            assert ember.Tensor.__dict__[n] is info.public_method, f"Tensor.{n}"
        if info.inplace is True:
            assert ember.Tensor.__dict__[n + "_"].__name__ == n + "_", f"Tensor.{n}_"
        elif info.inplace:
            assert ember.Tensor.__dict__[n + "_"] is info.inplace, f"Tensor.{n}_"
    for dunder in info.operators:
        bound = ember.Tensor.__dict__[dunder]
        if dunder.startswith("__i") and dunder != "__invert__":
            assert bound.__name__ == dunder, f"Tensor.{dunder} (in place)"
        else:
            # (== and != hand None to Python, as torch's Tensor does: a wrapper around fn)
            assert getattr(bound, "__wrapped__", bound) is (info.operator or info.fn), \
                f"Tensor.{dunder}"


@pytest.mark.parametrize("key", sorted(k for k, i in REGISTRY.items() if i.operator))
def test_operator_form_is_the_function_form(key):
    """An op whose operators bind its ``apply`` (``operator=``) computes what its function
    does, for every kind of operand an operator meets: scalars and arrays on either side,
    mixed dtypes, broadcasting, gradients and torch's errors."""
    info = REGISTRY[key]
    fn = info.fn
    rng = np.random.default_rng(0)
    a = ember.tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    b = ember.tensor(rng.standard_normal(3).astype(np.float64))
    i = ember.arange(1, 4)
    cases = [(a, b), (a, 2), (a, 0.5), (a, True), (i, 2), (i, i), (a, i), (i, a),
             (a, b.numpy()), (a, np.float64(1.5))]
    for dunder in info.operators:
        if dunder.startswith("__i"):
            continue
        for x, y in cases:
            got = getattr(x, dunder)(y)
            want = fn(y, x) if dunder.startswith("__r") else fn(x, y)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got.detach().numpy(), want.detach().numpy(), equal_nan=True)
            assert type(got.grad_fn) is type(want.grad_fn)
        with pytest.raises(RuntimeError) as e1:
            getattr(a, dunder)(ember.ones(4))
        with pytest.raises(RuntimeError) as e2:
            fn(a, ember.ones(4))
        assert str(e1.value) == str(e2.value)


def test_method_false_means_no_method():
    """torch has no ``Tensor.rsub`` nor ``Tensor.var_mean``: neither has ember."""
    for name in ("rsub", "var_mean", "std_mean"):
        assert REGISTRY[name].method is False
        assert not hasattr(ember.Tensor, name)
        assert hasattr(ember, name)


def test_registering_a_name_twice_raises():
    before = dict(REGISTRY)
    with pytest.raises(RuntimeError, match="'add' is registered twice"):
        register(name="add")(lambda input, other: input)
    with pytest.raises(RuntimeError, match="'sum' is registered twice"):
        @register
        def sum(input):  # noqa: A001 - the clash is the point
            return input
    assert REGISTRY == before
    info = REGISTRY["add"]
    assert register(REGISTRY["add"].fn) is REGISTRY["add"].fn  # the same function again: no-op
    assert REGISTRY["add"] is info and info.operator is not None  # its declaration stands


def test_axis_and_keepdims_aliases(torch):
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x, t = ember.tensor(a), torch.tensor(a)
    m_x = {ember: x, torch: t}
    for name in ("sum", "mean", "amax", "prod", "std", "logsumexp"):
        e_out = getattr(ember, name)(x, axis=0, keepdims=True)
        t_out = getattr(torch, name)(t, axis=0, keepdims=True)
        np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), rtol=1e-6, err_msg=name)
        m_out = getattr(x, name)(axis=1, keepdims=True)
        np.testing.assert_allclose(m_out.numpy(), getattr(t, name)(axis=1, keepdims=True).numpy(),
                                   rtol=1e-6, err_msg=f"Tensor.{name}")
    values, indices = ember.max(x, axis=1, keepdims=True)
    assert values.shape == (3, 1) and indices.tolist() == [[3], [3], [3]]
    for call in (lambda m: m.sum(m_x[m], dim=0, axis=0), lambda m: m.sum(m_x[m], 0, axis=0),
                 lambda m: m_x[m].sum(1, keepdim=True, keepdims=True)):
        with pytest.raises(TypeError) as t_err:
            call(torch)
        with pytest.raises(TypeError, match="got an unexpected keyword argument") as e_err:
            call(ember)
        assert str(e_err.value) == str(t_err.value)


def test_aliases_are_the_same_op():
    x = ember.tensor([-1.5, 0.5, 2.0])
    assert ember.absolute is ember.abs and ember.Tensor.absolute is ember.Tensor.abs
    assert ember.clip is ember.clamp and ember.arcsin is ember.asin
    assert ember.greater(x, 0).tolist() == [False, True, True]
    y = x.clone()
    assert y.absolute_() is y and y.tolist() == [1.5, 0.5, 2.0]


def test_operator_forms(torch):
    a = np.array([[1.0, -2.0], [4.0, 0.5]], dtype=np.float32)
    x, t = ember.tensor(a), torch.tensor(a)
    for fn in (lambda m: 2 / m, lambda m: 3 // m, lambda m: 2 ** m, lambda m: 3 % m, lambda m: -m,
               lambda m: abs(m), lambda m: 1 - m, lambda m: m == 1.0, lambda m: 2 * m + 1):
        np.testing.assert_allclose(fn(x).numpy(), fn(t).numpy(), rtol=1e-6)
    assert +x is x
    b = ember.tensor([True, False])
    assert (~b).tolist() == [False, True]
    assert (~ember.tensor([1, 2])).tolist() == [-2, -3]
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor"):
        +b  # noqa: B018 - as torch: positive refuses bool


def test_inplace_forms_write_into_self():
    x = ember.tensor([1.0, 4.0, 9.0])
    y = x
    version = x._version
    x += 1
    assert x is y and x.tolist() == [2.0, 5.0, 10.0] and x._version > version
    assert x.sqrt_() is x
    with pytest.raises(RuntimeError, match="float_power_ has dtype Float"):
        x.float_power_(2)
    z = ember.tensor([2.0, 3.0], dtype=ember.float64)
    assert z.float_power_(2) is z and z.tolist() == [4.0, 9.0]
    w = ember.tensor([0.5, 0.25])
    assert w.where(w > 0.3, ember.tensor(0.0)).tolist() == [0.5, 0.0]


def test_comparing_with_none_is_pythons_answer_as_in_torch(torch):
    """``t == None`` is False and ``t != None`` True (torch's Tensor returns NotImplemented),
    so ``[t] == [None]`` and ``x in (None, t)`` work; the functions still refuse None."""
    t = ember.ones(2)
    assert (t == None) is False and (t != None) is True  # noqa: E711 - what is tested
    assert ([t] == [None]) is False
    assert (torch.ones(2) == None) is False  # noqa: E711
    with pytest.raises(TypeError):
        ember.eq(t, None)
