"""Every op in ``op_table.OPS`` against torch (values, dtypes, shapes, grad_fn names and
gradients), then gradcheck and gradgradcheck in float64; and torch's type promotion."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import requires_torch
from op_table import OPS, Input, assert_close, materialize, tensors_of

import ember

VALUE_CASES = [pytest.param(c, i, s, d, id=f"{c.name}-{i}-{d}")
               for c in OPS for i, s in enumerate(c.samples) for d in c.dtypes]


def _array_type() -> type:
    """The array type of tensors on the default device (``EMBER_TEST_DEVICE``)."""
    return type(ember.empty(0)._data)


def _diff_positions(case, inputs) -> list[int]:
    """Inputs that require grad: the floating tensor inputs of a differentiable op."""
    if not case.grad:
        return []
    return [k for k, a in enumerate(inputs)
            if isinstance(a, Input) and a.base.dtype.kind == "f"
            and (case.grad_args is None or k in case.grad_args)]


def _node_and_edges(node):
    """A grad_fn's name and which of its edges lead somewhere, e.g. ('MulBackward0',
    [True, False]) for ``x * 2``: an edge for an input torch does not count (a scalar, a
    condition) shows here. The children's names are not compared: torch records some ops as
    chains (``x[::2, 1::2]`` is two SliceBackward0) where ember records one node."""
    if node is None:
        return None
    return type(node).__name__, [c is not None for c, _ in node.next_functions]


def _user_warnings(records) -> list[str]:
    """The warnings a user sees, without torch's "(Triggered internally at ...)" suffix;
    NumPy's floating-point RuntimeWarnings are not torch's behaviour and not compared."""
    return [str(w.message).split(" (Triggered internally")[0] for w in records
            if not issubclass(w.category, RuntimeWarning)]


def _run(m, case, inputs, diff, kwargs):
    args = [a.tensor(m, k in diff) if isinstance(a, Input) else a for k, a in enumerate(inputs)]
    return args, case.fn(m, *args, **kwargs)


@pytest.mark.parametrize("case, i, sample, dtype", VALUE_CASES)
def test_op_matches_torch(case, i, sample, dtype, torch):
    """Forward values, dtype, shape, requires_grad, view-ness and grad_fn name; then the input
    gradients for a random upstream gradient."""
    inputs = materialize(case, i, sample, dtype)
    diff = _diff_positions(case, inputs)
    try:
        with warnings.catch_warnings(record=True) as t_warned:
            warnings.simplefilter("always")
            t_args, t_out = _run(torch, case, inputs, diff, sample.kwargs)
    except (RuntimeError, TypeError, IndexError, ValueError) as err:
        with pytest.raises(type(err)) as e_err:  # where torch refuses, ember must refuse alike
            _run(ember, case, inputs, diff, sample.kwargs)
        assert str(e_err.value) == str(err)
        return
    with warnings.catch_warnings(record=True) as e_warned:
        warnings.simplefilter("always")
        e_args, e_out = _run(ember, case, inputs, diff, sample.kwargs)
    # torch warns once per process, so ember may warn where torch stayed quiet
    assert set(_user_warnings(t_warned)) <= set(_user_warnings(e_warned))

    e_outs, t_outs = tensors_of(e_out), tensors_of(t_out)
    assert type(e_out).__name__ == type(t_out).__name__ or not isinstance(t_out, tuple)
    assert len(e_outs) == len(t_outs)
    for k, (e, t) in enumerate(zip(e_outs, t_outs)):
        assert_close(e, t, f"output {k}")
        if not isinstance(t, torch.Tensor):
            continue
        assert type(e._data) is _array_type(), f"output {k} holds a {type(e._data).__name__}"
        assert e.requires_grad == t.requires_grad, f"output {k} requires_grad"
        if case.node:
            e_node, t_node = _node_and_edges(e.grad_fn), _node_and_edges(t.grad_fn)
            assert e_node == t_node, f"output {k} grad_fn: ember {e_node}, torch {t_node}"
        assert e._is_view() == t._is_view(), f"output {k} is a view: torch {t._is_view()}"

    pairs = [(e, t) for e, t in zip(e_outs, t_outs)
             if isinstance(t, torch.Tensor) and t.requires_grad]
    if not pairs:
        return
    rng = np.random.default_rng(case.seed(i) + 1)
    seeds = [rng.standard_normal(tuple(t.shape)).astype(t.detach().cpu().numpy().dtype)
             for _, t in pairs]
    t_grads = torch.autograd.grad([t for _, t in pairs], [t_args[k] for k in diff],
                                  [torch.from_numpy(g.copy()) for g in seeds],
                                  allow_unused=True)
    e_grads = ember.autograd.grad([e for e, _ in pairs], [e_args[k] for k in diff],
                                  [ember.tensor(g) for g in seeds],
                                  allow_unused=True)
    for k, e_g, t_g in zip(diff, e_grads, t_grads):
        if t_g is None:
            assert e_g is None or not e_g.detach().cpu().numpy().any(), \
                f"input {k}: torch gives None"
            continue
        assert e_g is not None, f"input {k}: ember gives no gradient"
        assert_close(e_g, t_g, f"gradient of input {k}", grad=True)


# ops whose first derivative uses another formula when it is to be differentiated, as torch's
GRAD_MODE_FORMULAS = {"cumprod_zeros"}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case, i, sample, dtype", [
    p for p in VALUE_CASES if p.values[0].grad and p.values[0].name not in GRAD_MODE_FORMULAS])
def test_raw_backward_matches_tensor_rules(case, i, sample, dtype):
    """Without create_graph the engine runs nodes' ``raw_backward`` rules on arrays; with it,
    their differentiable Tensor rules: both paths must give the same gradients, bit for bit."""
    inputs = materialize(case, i, sample, dtype)
    diff = _diff_positions(case, inputs)
    if not diff:
        return
    try:
        args, out = _run(ember, case, inputs, diff, sample.kwargs)
    except (RuntimeError, TypeError, IndexError, ValueError):
        return
    outs = [o for o in tensors_of(out) if isinstance(o, ember.Tensor) and o.requires_grad]
    if not outs:
        return
    rng = np.random.default_rng(case.seed(i) + 1)
    seeds = [ember.tensor(rng.standard_normal(tuple(o.shape)).astype(o._data.dtype))
             for o in outs]
    leaves = [args[k] for k in diff]
    raw = ember.autograd.grad(outs, leaves, seeds, retain_graph=True, allow_unused=True)
    rules = ember.autograd.grad(outs, leaves, seeds, create_graph=True, allow_unused=True)
    for k, r, t in zip(diff, raw, rules):
        assert (r is None) == (t is None), f"input {k}"
        if r is not None:
            assert r.dtype == t.dtype and r.shape == t.shape, f"input {k}"
            np.testing.assert_array_equal(r.detach().cpu().numpy(),
                                          t.detach().cpu().numpy(),
                                          err_msg=f"gradient of input {k}")


def _gradcheck_params(second_order: bool) -> list:
    out = []
    for c in OPS:
        if not (c.grad and c.gradcheck and (c.gradgrad or not second_order)):
            continue
        for i, s in enumerate(c.samples):
            inputs = materialize(c, i, s, "float64")
            if (s.gradcheck and _diff_positions(c, inputs)
                    and all(a.base.size for a in inputs if isinstance(a, Input))):
                out.append(pytest.param(c, i, s, id=f"{c.name}-{i}"))
    return out


def _checked_fn(case, inputs, sample):
    """(function of the differentiable inputs, those inputs) for gradcheck, in float64."""
    diff = _diff_positions(case, inputs)
    leaves = [inputs[k].tensor(ember, True) for k in diff]
    fixed = {k: (a.tensor(ember) if isinstance(a, Input) else a) for k, a in enumerate(inputs)
             if k not in diff}

    def fn(*xs):
        args = [fixed[k] if k in fixed else xs[diff.index(k)] for k in range(len(inputs))]
        outs = tensors_of(case.fn(ember, *args, **sample.kwargs))
        return tuple(o for o in outs if o.dtype.is_floating_point)

    return fn, leaves


_T_DEPRECATED = pytest.mark.filterwarnings("ignore:.*x.T. on tensors", "ignore:Tensor.T is")


@_T_DEPRECATED
@pytest.mark.parametrize("case, i, sample", _gradcheck_params(second_order=False))
def test_gradcheck(case, i, sample):
    fn, leaves = _checked_fn(case, materialize(case, i, sample, "float64"), sample)
    assert ember.autograd.gradcheck(fn, leaves)


@_T_DEPRECATED
@pytest.mark.parametrize("case, i, sample", _gradcheck_params(second_order=True))
def test_gradgradcheck(case, i, sample):
    fn, leaves = _checked_fn(case, materialize(case, i, sample, "float64"), sample)
    assert ember.autograd.gradgradcheck(fn, leaves)


# --------------------------------------------------------------------------- forward mode


def _forward_params() -> list:
    out = []
    for c in OPS:
        if not c.grad:
            continue
        for i, s in enumerate(c.samples):
            inputs = materialize(c, i, s, "float64")
            if _diff_positions(c, inputs):
                out.append(pytest.param(c, i, s, id=f"{c.name}-{i}"))
    return out


FORWARD_CASES = _forward_params()


def _jvp(m, case, inputs, diff, kwargs, tangents):
    """Outputs and their tangents, with the differentiable inputs made dual."""
    fw = m.autograd.forward_ad
    with fw.dual_level():
        args = [a.tensor(m) if isinstance(a, Input) else a for a in inputs]
        for k, t in zip(diff, tangents):
            args[k] = fw.make_dual(args[k], m.from_numpy(t.copy()).to(args[k].device))
        outs = tensors_of(case.fn(m, *args, **kwargs))
        return [(o, fw.unpack_dual(o).tangent) if isinstance(o, m.Tensor) else (o, None)
                for o in outs]


def _tangents(case, i, inputs, diff) -> list:
    rng = np.random.default_rng(case.seed(i) + 2)
    return [rng.standard_normal(inputs[k].spec.shape) for k in diff]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case, i, sample", FORWARD_CASES)
def test_forward_mode_matches_torch(case, i, sample, torch):
    """Each op's tangent (its Jacobian-vector product) under forward-mode AD, in float64,
    against torch's ``forward_ad`` for the same random tangents. Where torch has no forward
    rule (it raises, or gives no tangent), the finite-difference test below still checks
    ember's. Samples at kinks, ties and singular points (``gradcheck=False``) are skipped:
    there torch's own forward and backward formulas disagree."""
    inputs = materialize(case, i, sample, "float64")
    diff = _diff_positions(case, inputs)
    if not all(inputs[k].base.size for k in diff):
        return  # outputs of empty inputs are constants: ember's tangent is 0, torch's varies
    tangents = _tangents(case, i, inputs, diff)
    try:
        t_res = _jvp(torch, case, inputs, diff, sample.kwargs, tangents)
    except (RuntimeError, TypeError, IndexError, ValueError, NotImplementedError):
        return
    e_res = _jvp(ember, case, inputs, diff, sample.kwargs, tangents)
    assert len(e_res) == len(t_res)
    for k, ((e, e_t), (t, t_t)) in enumerate(zip(e_res, t_res)):
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
            continue
        if t_t is None or not sample.gradcheck:
            continue
        assert e_t is not None, f"output {k}: ember gives no tangent"
        if t_t._is_zerotensor():
            t_t = torch.zeros_like(t)
        assert_close(e_t, t_t, f"tangent of output {k}", grad=True)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case, i, sample", [p for p in FORWARD_CASES
                                             if p.values[2].gradcheck and p.values[0].gradcheck])
def test_forward_mode_finite_differences(case, i, sample):
    """Each tangent against central differences along the same direction, in float64."""
    inputs = materialize(case, i, sample, "float64")
    if not all(a.base.size for a in inputs if isinstance(a, Input)):
        return
    diff = _diff_positions(case, inputs)
    tangents = _tangents(case, i, inputs, diff)
    res = _jvp(ember, case, inputs, diff, sample.kwargs, tangents)
    eps = 1e-6

    def at(sign):
        args = [a.tensor(ember) if isinstance(a, Input) else a for a in inputs]
        for k, t in zip(diff, tangents):
            args[k] = args[k] + sign * eps * ember.from_numpy(t.copy()).to(args[k].device)
        return tensors_of(case.fn(ember, *args, **sample.kwargs))

    plus, minus = at(1), at(-1)
    for k, ((o, tangent), p, q) in enumerate(zip(res, plus, minus)):
        if not isinstance(o, ember.Tensor) or not o.dtype.is_floating_point:
            continue
        numeric = (p.detach().cpu().numpy() - q.detach().cpu().numpy()) / (2 * eps)
        got = np.zeros_like(numeric) if tangent is None else tangent.detach().cpu().numpy()
        np.testing.assert_allclose(got, numeric, rtol=1e-4, atol=1e-5,
                                   err_msg=f"tangent of output {k}")


# --------------------------------------------------------------------------- type promotion


def _operand(m, spec):
    """``spec``: a Python number, or (dtype name, shape) for a tensor of ones-ish values."""
    if not isinstance(spec, tuple):
        return spec
    name, shape = spec
    return m.tensor(np.full(shape, 3 if name != "bool" else True, dtype=name))


PROMOTIONS = [
    ("int64 * float", ("int64", (3,)), 2.5, "mul"),
    ("int32 * float", ("int32", (3,)), 2.5, "mul"),
    ("float32 + float", ("float32", (3,)), 1.5, "add"),
    ("float32 + int", ("float32", (3,)), 2, "add"),
    ("float16 + float", ("float16", (3,)), 1.5, "add"),
    ("float32 + float64", ("float32", (3,)), ("float64", (3,)), "add"),
    ("float32 1-d + float64 0-d", ("float32", (3,)), ("float64", ()), "add"),
    ("float32 0-d + float64 0-d", ("float32", ()), ("float64", ()), "add"),
    ("int64 1-d + float32 0-d", ("int64", (3,)), ("float32", ()), "add"),
    ("int32 + int64", ("int32", (3,)), ("int64", (3,)), "add"),
    ("int32 1-d + int64 0-d", ("int32", (3,)), ("int64", ()), "add"),
    ("int32 + int", ("int32", (3,)), 7, "add"),
    ("uint8 + int8", ("uint8", (3,)), ("int8", (3,)), "add"),
    ("uint8 + int", ("uint8", (3,)), 1, "add"),
    ("bool + int64", ("bool", (3,)), ("int64", (3,)), "add"),
    ("bool + int", ("bool", (3,)), 2, "add"),
    ("bool + float", ("bool", (3,)), 0.5, "mul"),
    ("bool + bool", ("bool", (3,)), ("bool", (3,)), "add"),
    ("float16 + int64", ("float16", (3,)), ("int64", (3,)), "add"),
    ("float16 * float32 0-d", ("float16", (3,)), ("float32", ()), "mul"),
    ("int / int", ("int64", (3,)), ("int64", (3,)), "div"),
    ("int / python int", ("int32", (3,)), 2, "div"),
    ("python int / int", 2, ("int64", (3,)), "div"),
    ("uint8 - int8", ("uint8", (3,)), ("int8", (3,)), "sub"),
    ("int ** float", ("int64", (3,)), 0.5, "pow"),
    ("float ** int tensor", ("float32", (3,)), ("int64", (3,)), "pow"),
    ("int64 max float32", ("int64", (3,)), ("float32", (3,)), "maximum"),
    ("int8 where float64 0-d", ("int8", (3,)), ("float64", ()), "where"),
    ("int > float", ("int64", (3,)), 2.5, "gt"),
    ("float32 == float64", ("float32", (3,)), ("float64", (3,)), "eq"),
    ("uint8 < int8", ("uint8", (3,)), ("int8", (3,)), "lt"),
    ("bool == int", ("bool", (3,)), 1, "eq"),
    ("float16 >= int64", ("float16", (3,)), ("int64", (3,)), "ge"),
    ("int32 & int64", ("int32", (3,)), ("int64", (3,)), "bitwise_and"),
]


@requires_torch
@pytest.mark.parametrize("a, b, op", [pytest.param(a, b, op, id=name)
                                      for name, a, b, op in PROMOTIONS])
def test_type_promotion_matches_torch(a, b, op, torch):
    def run(m):
        x, y = _operand(m, a), _operand(m, b)
        if op == "where":
            return m.where(m.tensor(np.array([True, False, True])), x, y)
        if not isinstance(x, (m.Tensor,)):
            return {"div": lambda: x / y, "sub": lambda: x - y}[op]()
        return getattr(m, op)(x, y)

    e, t = run(ember), run(torch)
    assert_close(e, t, "result")


@requires_torch
@pytest.mark.parametrize("a, b", [(a, b) for _, a, b, _ in PROMOTIONS
                                  if isinstance(a, tuple) and isinstance(b, tuple)])
def test_result_type_matches_torch(a, b, torch):
    e = ember.result_type(_operand(ember, a), _operand(ember, b))
    t = torch.result_type(_operand(torch, a), _operand(torch, b))
    assert repr(e) == repr(t)
