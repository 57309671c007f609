"""Autograd semantics, checked against PyTorch: the same program runs in both libraries.

Each comparison test is written once as ``program(lib)`` and run with ``lib = ember`` and
``lib = torch``; values, gradients and graph structure must agree. Engine properties torch
has no say in (memory freed without the gc, a 1,000,000-op chain) are checked on ember alone.
"""

from __future__ import annotations

import gc
import sys
import threading
import warnings
import weakref

import numpy as np
import pytest

import ember

X3 = [1.0, -2.0, 3.0]
M23 = [[1.0, 2.0, -3.0], [0.5, -1.5, 2.5]]


def _np(t):
    if t is None:
        return None
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def assert_same(e, t, rtol=1e-5, atol=1e-6):
    """ember value ``e`` equals torch value ``t`` (tensors, None, or nested tuples/lists)."""
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t), (e, t)
        for a, b in zip(e, t):
            assert_same(a, b, rtol, atol)
        return
    if t is None:
        assert e is None, e
        return
    if isinstance(t, (str, bool)):
        assert e == t
        return
    if hasattr(t, "detach"):
        assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
        assert str(e.dtype) == str(t.dtype), (e.dtype, t.dtype)
    else:
        assert not hasattr(e, "detach"), (e, t)
    np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


def both(torch, program):
    """Run ``program(lib)`` with ember and with torch; return (ember result, torch result)."""
    return program(ember), program(torch)


def check(torch, program, **tol):
    e, t = both(torch, program)
    assert_same(e, t, **tol)
    return e, t


def node_name(fn) -> str | None:
    return None if fn is None else fn.name()


def structure(fn, depth: int = 4):
    """``grad_fn`` as nested (name, output_nr, children) tuples, to compare graph shapes."""
    if fn is None:
        return None
    if depth == 0:
        return fn.name()
    return (fn.name(), tuple((structure(c, depth - 1), nr) for c, nr in fn.next_functions))


# --------------------------------------------------------------------------- requires_grad
@pytest.mark.parametrize("expr", [
    lambda lib, a, b: a + b,
    lambda lib, a, b: a * 2,
    lambda lib, a, b: b * 2,
    lambda lib, a, b: a.exp() + b.sum(),
    lambda lib, a, b: b > 0,
    lambda lib, a, b: a.argmax(),
    lambda lib, a, b: a.long(),
    lambda lib, a, b: a.double(),
    lambda lib, a, b: a.detach(),
    lambda lib, a, b: a.data,
    lambda lib, a, b: a[0],
    lambda lib, a, b: lib.where(b > 0, a, b),
    lambda lib, a, b: b.clone(),
    lambda lib, a, b: lib.zeros_like(a),
    lambda lib, a, b: a.sign(),
], ids=["add", "mul_scalar", "const_mul", "mixed", "compare", "argmax", "to_long", "to_double",
        "detach", "data", "select", "where", "const_clone", "zeros_like", "sign"])
def test_requires_grad_is_contagious_like_torch(torch, expr):
    def program(lib):
        a = lib.tensor(X3, requires_grad=True)
        b = lib.tensor([0.5, 0.5, -1.0])
        out = expr(lib, a, b)
        return out.requires_grad, out.is_leaf, node_name(out.grad_fn)
    e, t = both(torch, program)
    assert e == t


def test_no_grad_results_do_not_require_grad(torch):
    def program(lib):
        a = lib.tensor(X3, requires_grad=True)
        with lib.no_grad():
            b = a * 2
        c = b * a
        return b.requires_grad, b.is_leaf, b.grad_fn, c.requires_grad, node_name(c.grad_fn)
    e, t = both(torch, program)
    assert e == t == (False, True, None, True, "MulBackward0")


def test_factory_requires_grad_and_int_dtype(torch):
    for lib in (ember, torch):
        assert lib.zeros(2, requires_grad=True).is_leaf
        assert lib.randn(2, 3, requires_grad=True).requires_grad
        assert not lib.ones(2).requires_grad
        assert lib.ones(2).is_leaf
        with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex "):
            lib.tensor([1, 2], requires_grad=True)
        with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype"):
            lib.tensor([1, 2]).requires_grad_()
        with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex"):
            lib.tensor([1, 2]).requires_grad = True


# --------------------------------------------------------------------------- .grad
def test_grad_is_none_before_backward_and_accumulates(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        before = x.grad
        (x * x).sum().backward()
        first = x.grad.clone()
        (x * 3).sum().backward()
        second = x.grad.clone()
        x.grad.zero_()
        zeroed = x.grad.clone()
        (x ** 3).sum().backward()
        third = x.grad.clone()
        x.grad = None
        (2 * x).sum().backward()
        return before, first, second, zeroed, third, x.grad
    check(torch, program)


def test_grad_accumulates_in_place_keeping_the_same_tensor(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        x.sum().backward()
        g = x.grad
        (x * 2).sum().backward()
        return g is x.grad, g
    e, t = both(torch, program)
    assert e[0] == t[0] is True
    assert_same(e[1], t[1])


def test_grad_assignment_checks(torch):
    for lib in (ember, torch):
        x = lib.tensor(X3, requires_grad=True)
        x.grad = lib.ones(3)
        (x * 2).sum().backward()
        np.testing.assert_allclose(_np(x.grad), [3.0, 3.0, 3.0])
        with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[4\]' "
                                               r"to a tensor of size '\[3\]'"):
            x.grad = lib.ones(4)
        with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype "
                                               "'double' to a tensor with grad_dtype 'Float'"):
            x.grad = lib.ones(3, dtype=lib.float64)
        with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
            x.grad = [1.0, 2.0, 3.0]
        del x.grad
        assert x.grad is None


def test_reading_grad_of_non_leaf_warns(torch):
    for lib in (ember, torch):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
            assert y.grad is None
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad is None
            assert x.grad is None


def test_non_leaf_grad_warning_text_matches_torch(torch):
    texts = []
    for lib in (ember, torch):
        y = lib.tensor(X3, requires_grad=True) * 2
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            _ = y.grad
        texts.append(str(rec[0].message).split(" (Triggered internally")[0])
    assert texts[0] == texts[1]


# --------------------------------------------------------------------------- graph structure
@pytest.mark.parametrize("expr", [
    lambda lib, x, w: x * w,
    lambda lib, x, w: x * 2,
    lambda lib, x, w: 2 * x,
    lambda lib, x, w: x + w,
    lambda lib, x, w: x - 1,
    lambda lib, x, w: 1 - x,
    lambda lib, x, w: x / w,
    lambda lib, x, w: 2 / x,
    lambda lib, x, w: x ** 2,
    lambda lib, x, w: 2 ** x,
    lambda lib, x, w: x ** w,
    lambda lib, x, w: -x,
    lambda lib, x, w: x.exp().log().sum(),
    lambda lib, x, w: (x * w).mean(),
    lambda lib, x, w: x.view(3, 1).t(),
    lambda lib, x, w: x.reshape(1, 3).expand(2, 3),
    lambda lib, x, w: x[1],
    lambda lib, x, w: x[1:],
    lambda lib, x, w: x[None],
    lambda lib, x, w: x[[0, 2]],
    lambda lib, x, w: x.unsqueeze(0).squeeze(0),
    lambda lib, x, w: x.relu().sigmoid().tanh(),
    lambda lib, x, w: x.clamp(min=0),
    lambda lib, x, w: x.clone(),
    lambda lib, x, w: x.double(),
    lambda lib, x, w: lib.where(w > 0, x, w),
    lambda lib, x, w: lib.maximum(x, w),
    lambda lib, x, w: x.abs().sqrt(),
    lambda lib, x, w: x.sin().cos(),
    lambda lib, x, w: x.view(1, 3).mm(w.view(3, 1)),
    lambda lib, x, w: x @ w,
    lambda lib, x, w: x.max(),
    lambda lib, x, w: x.sum(0, keepdim=True),
    lambda lib, x, w: lib.zeros(3).copy_(x),
    lambda lib, x, w: (x * 1).copy_(w),
], ids=lambda f: str(id(f)))
def test_grad_fn_names_and_next_functions_match_torch(torch, expr):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        w = lib.tensor([0.5, 2.0, -1.0])
        return structure(expr(lib, x, w).grad_fn, depth=6)
    e, t = both(torch, program)
    assert e == t


def test_next_functions_edges_and_accumulate_grad_variable(torch):
    for lib in (ember, torch):
        x = lib.tensor(X3, requires_grad=True)
        c = lib.tensor(X3)
        y = x * c
        (acc, nr), (none, nr2) = y.grad_fn.next_functions
        assert type(acc).__name__ == "AccumulateGrad"
        assert acc.variable is x and nr == 0
        assert none is None and nr2 == 0
        # one AccumulateGrad per leaf while a graph holds it
        z = x + 1
        assert z.grad_fn.next_functions[0][0] is acc
        assert x.grad_fn is None and x.is_leaf
        assert isinstance(y.grad_fn, lib.autograd.graph.Node)
        assert isinstance(acc, lib.autograd.graph.Node)
        y.grad_fn.metadata["tag"] = "mine"
        assert y.grad_fn.metadata == {"tag": "mine"}


def test_max_with_dim_has_one_differentiable_output(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        m = x.max(dim=1)
        s = m.values * 2
        return structure(s.grad_fn, 5), m.indices.requires_grad, m.indices.grad_fn
    e, t = both(torch, program)
    assert e == t


def test_unbind_is_one_node_with_an_output_per_piece(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        a, b = x.unbind(0)
        y = a * 3 + b * b
        y.sum().backward()
        return structure(y.grad_fn, 5), (a.output_nr, b.output_nr), x.grad
    e, t = both(torch, program)
    assert e[:2] == t[:2]
    assert_same(e[2], t[2])


# --------------------------------------------------------------------------- backward arguments
def test_backward_with_gradient_argument(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * x
        y.backward(lib.tensor([1.0, 0.1, 0.01]))
        return x.grad
    check(torch, program)


def test_backward_retain_graph_twice_accumulates(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        g1 = x.grad.clone()
        y.backward()
        return g1, x.grad
    check(torch, program)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_create_graph_makes_grad_differentiable(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = (x ** 3).sum()
        y.backward(create_graph=True)
        g = x.grad
        info = (g.requires_grad, node_name(g.grad_fn) is not None)
        (gx,) = lib.autograd.grad(g.sum(), x)
        return info, g, gx
    e, t = both(torch, program)
    assert e[0] == t[0]
    assert_same(e[1:], t[1:])


def test_backward_inputs_restricts_accumulation(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        w = lib.tensor([0.5, 2.0, -1.0], requires_grad=True)
        y = (x * w).sum()
        y.backward(inputs=[w])
        return x.grad, w.grad
    check(torch, program)


def test_backward_inputs_non_leaf(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        h = x * 2
        y = (h * h).sum()
        y.backward(inputs=[h], retain_graph=True)
        hg = h.grad
        y.backward(inputs=[h, x])
        return hg, h.grad, x.grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(torch, program)


def test_backward_inputs_single_tensor(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        w = lib.tensor(X3, requires_grad=True)
        (x * w).sum().backward(inputs=x)
        return x.grad, w.grad
    check(torch, program)


def test_autograd_backward_function_on_several_outputs(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        a = x * 2
        b = x ** 2
        lib.autograd.backward([a, b.sum()], [lib.tensor([1.0, 2.0, 3.0]), None])
        return x.grad
    check(torch, program)


def test_backward_on_scalar_of_integer_graph_is_not_needed(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x.sum()
        lib.autograd.backward(y, grad_tensors=lib.tensor(2.0))
        return x.grad
    check(torch, program)


def test_backward_gradient_dtype_is_cast(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        (x * 2).backward(lib.tensor([1.0, 1.0, 1.0], dtype=lib.float64))
        return x.grad
    check(torch, program)


# --------------------------------------------------------------------------- autograd.grad
def test_grad_returns_tuple_and_does_not_touch_grad(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        w = lib.tensor([0.5, 2.0, -1.0], requires_grad=True)
        y = (x * w).sum()
        gx, gw = lib.autograd.grad(y, [x, w])
        return gx, gw, x.grad, w.grad, gx.requires_grad
    check(torch, program)


def test_grad_with_grad_outputs_and_multiple_outputs(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        a = x * x
        b = x.exp()
        return lib.autograd.grad([a, b], x, grad_outputs=[lib.tensor([1.0, 2.0, 3.0]),
                                                          lib.ones(3)])
    check(torch, program)


def test_grad_allow_unused_and_materialize(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        u = lib.tensor(X3, requires_grad=True)
        y = (x * 2).sum()
        r1 = lib.autograd.grad(y, [x, u], allow_unused=True, retain_graph=True)
        r2 = lib.autograd.grad(y, [x, u], materialize_grads=True)
        return r1, r2
    check(torch, program)


def test_grad_retain_graph(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = (x.sin() * x).sum()
        g1 = lib.autograd.grad(y, x, retain_graph=True)
        g2 = lib.autograd.grad(y, x)
        return g1, g2
    check(torch, program)


def test_grad_wrt_non_leaf_and_intermediate(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        h = x.exp()
        y = (h * x).sum()
        return lib.autograd.grad(y, [h, x])
    check(torch, program)


def test_grad_wrt_one_output_of_multi_output_node(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        a, b = x.unbind(0)
        y = (a * 3 + b * b).sum()
        return lib.autograd.grad(y, [b, a, x])
    check(torch, program)


def test_grad_wrt_input_that_is_also_output(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        return lib.autograd.grad(x, x, grad_outputs=lib.ones(3))
    check(torch, program)


def test_grad_wrt_non_leaf_and_hooks_follow_torch_capture_order(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * 10)
        only_y = lib.autograd.grad((y * y).sum(), y, retain_graph=True)  # hook, then capture
        y_and_x = lib.autograd.grad((y * y).sum(), [y, x])  # capture, then hook (y runs on)
        return only_y, y_and_x
    check(torch, program)


# --------------------------------------------------------------------------- higher order
def test_second_and_third_derivative(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = (x ** 4 + x.sin() * x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        (ggg,) = lib.autograd.grad(gg.sum(), x)
        return g, gg, ggg
    check(torch, program, rtol=1e-4)


def test_hessian_vector_product(torch):
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    v = [1.0, -1.0, 0.5]

    def program(lib):
        x = lib.tensor(X3, dtype=lib.float64, requires_grad=True)
        A = lib.tensor(a)
        y = 0.5 * (x @ (A @ x)) + (x ** 3).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (hv,) = lib.autograd.grad(g, x, grad_outputs=lib.tensor(v, dtype=lib.float64))
        return hv
    e, _ = check(torch, program)
    expected = a @ np.array(v) + 6 * np.array(X3) * np.array(v)
    np.testing.assert_allclose(_np(e), expected)


def test_gradient_penalty_backward_through_create_graph(torch):
    def program(lib):
        w = lib.tensor(M23, requires_grad=True)
        x = lib.tensor([[0.3, -0.2], [1.0, 0.5], [-0.7, 0.1]], requires_grad=True)
        out = (x.mm(w).tanh() ** 2).sum()
        (gx,) = lib.autograd.grad(out, x, create_graph=True)
        penalty = (gx ** 2).sum()
        penalty.backward()
        return w.grad, x.grad
    check(torch, program, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_grads_are_private_copies_then_accumulate_in_place(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        w = lib.tensor(X3, requires_grad=True)
        ((x + w) ** 2).sum().backward(create_graph=True)
        shared = x.grad is w.grad
        gx = x.grad
        info = (gx.requires_grad, node_name(gx.grad_fn))
        (x * 3).sum().backward()  # plain backward: adds into the existing grad, in place
        same = gx is x.grad
        out = (shared, info, same, x.grad.requires_grad), x.grad, w.grad
        x.grad = w.grad = None
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = both(torch, program)
    assert e[0] == t[0] == (False, (True, "torch::autograd::CopyBackwards"), True, True)
    assert_same(e[1:], t[1:])


def test_double_backward_via_backward_create_graph(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = (x * x * x).sum()
        y.backward(create_graph=True)
        g = x.grad
        x.grad = None
        g.sum().backward()
        return g, x.grad
    check(torch, program)


def test_grad_of_grad_through_division_and_broadcast(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        b = lib.tensor([2.0, -1.0, 4.0], requires_grad=True)
        y = ((x / b) ** 2).sum()
        gx, gb = lib.autograd.grad(y, [x, b], create_graph=True)
        return lib.autograd.grad(gx.sum() + gb.sum(), [x, b])
    check(torch, program, rtol=1e-4)


# --------------------------------------------------------------------------- retain_grad
def test_retain_grad_on_non_leaf(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        z = y * y
        z.retain_grad()
        z.sum().backward()
        return y.retains_grad, x.retains_grad, y.grad, z.grad, x.grad
    check(torch, program)


def test_retain_grad_accumulates_across_backwards(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        out = (y * y).sum()
        out.backward(retain_graph=True)
        out.backward()
        return y.grad, x.grad
    check(torch, program)


def test_retain_grad_on_leaf_is_noop(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        x.retain_grad()
        x.sum().backward()
        return x.retains_grad, x.grad
    check(torch, program)


# --------------------------------------------------------------------------- tensor hooks
def test_tensor_hook_sees_and_replaces_gradient(torch):
    def program(lib):
        seen = []
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: seen.append(g.clone()))
        y.register_hook(lambda g: g * 10)
        y.register_hook(lambda g: seen.append(g.clone()))
        (y * y).sum().backward()
        return seen, x.grad
    check(torch, program)


def test_non_leaf_hook_handle_remove(torch):
    def program(lib):
        seen = []
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        h = y.register_hook(lambda g: seen.append("h") or g * 3)
        y.register_hook(lambda g: seen.append("k"))
        y.sum().backward(retain_graph=True)
        first = x.grad.clone()
        h.remove()
        h.remove()  # removing twice is harmless
        x.grad = None
        y.sum().backward()
        return seen, first, x.grad
    check(torch, program)


def test_leaf_hook_replaces_gradient_and_handle_remove(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        h = x.register_hook(lambda g: g + 100)
        (x * 2).sum().backward()
        first = x.grad.clone()
        h.remove()
        x.grad = None
        (x * 2).sum().backward()
        return first, x.grad
    check(torch, program)


def test_hook_runs_once_with_summed_gradient(torch):
    def program(lib):
        calls = []
        x = lib.tensor(X3, requires_grad=True)
        h = x * 1
        h.register_hook(lambda g: calls.append(g.clone()))
        (h * 2 + h * 3).sum().backward()
        return calls
    check(torch, program)


def test_hook_on_retained_non_leaf_changes_retained_grad(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 0 + 7)
        y.sum().backward()
        return y.grad, x.grad
    check(torch, program)


def test_hook_on_tensor_without_grad_raises(torch):
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            lib.ones(2).register_hook(lambda g: g)


def test_hooks_fire_with_autograd_grad(torch):
    def program(lib):
        seen = []
        x = lib.tensor(X3, requires_grad=True)
        x.register_hook(lambda g: seen.append(g.clone()) or g * 2)
        (g,) = lib.autograd.grad((x * 3).sum(), x)
        return seen, g
    check(torch, program)


# --------------------------------------------------------------------------- node hooks
def test_node_hooks_and_prehooks(torch):
    def program(lib):
        log = []
        x = lib.tensor(X3, requires_grad=True)
        y = x * 3
        z = y.exp().sum()
        y.grad_fn.register_prehook(lambda gout: log.append(("pre", gout[0].clone())))
        y.grad_fn.register_hook(lambda gin, gout: log.append(("post", gin[0].clone(),
                                                               gout[0].clone())))
        z.backward()
        return [entry[1:] for entry in log], [entry[0] for entry in log] == ["pre", "post"]
    check(torch, program)


def test_node_prehook_and_hook_replace_gradients(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 3
        y.grad_fn.register_prehook(lambda gout: (gout[0] * 2,))
        h = y.grad_fn.register_hook(lambda gin, gout: (gin[0] + 1, None))
        y.sum().backward(retain_graph=True)
        g1 = x.grad.clone()
        h.remove()
        x.grad = None
        y.sum().backward()
        return g1, x.grad
    check(torch, program)


def test_accumulate_grad_node_hooks(torch):
    def program(lib):
        log = []
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda gout: log.append(gout[0].clone()))
        y.sum().backward()
        return log, x.grad
    check(torch, program)


def test_post_accumulate_grad_hook(torch):
    def program(lib):
        seen = []
        x = lib.tensor(X3, requires_grad=True)
        h = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        h.remove()
        (x * 4).sum().backward()
        return seen, x.grad
    check(torch, program)


def test_post_accumulate_grad_hook_can_step_in_place(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)

        def sgd(p):
            with lib.no_grad():
                p -= 0.1 * p.grad
            p.grad = None
        x.register_post_accumulate_grad_hook(sgd)
        (x * x).sum().backward()
        return x.detach(), x.grad
    check(torch, program)


def test_post_accumulate_grad_hook_on_non_leaf_raises(torch):
    for lib in (ember, torch):
        y = lib.tensor(X3, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered "
                                               "on non-leaf tensors"):
            y.register_post_accumulate_grad_hook(lambda t: None)


# --------------------------------------------------------------------------- grad modes
def test_grad_mode_context_managers(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        out = []
        with lib.no_grad():
            out.append((x * 2).requires_grad)
            out.append(lib.is_grad_enabled())
            with lib.enable_grad():
                out.append((x * 2).requires_grad)
            out.append((x * 2).requires_grad)
        with lib.set_grad_enabled(False):
            out.append((x * 2).requires_grad)
        out.append(lib.is_grad_enabled())
        lib.set_grad_enabled(False)
        out.append((x * 2).requires_grad)
        lib.set_grad_enabled(True)
        with lib.inference_mode():
            y = x * 2
            out += [y.requires_grad, lib.is_inference_mode_enabled(), y.is_inference()]
        with lib.inference_mode(False):
            out.append((x * 2).requires_grad)
        out.append(lib.is_grad_enabled())
        return out
    e, t = both(torch, program)
    assert e == t


def test_grad_mode_decorators(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)

        @lib.no_grad()
        def f(a):
            return a * 2

        @lib.enable_grad()
        def g(a):
            return a * 2

        @lib.inference_mode()
        def h(a):
            return a * 2

        @lib.set_grad_enabled(False)
        def k(a):
            return a * 2

        with lib.no_grad():
            gr = g(x).requires_grad
        return f(x).requires_grad, gr, h(x).requires_grad, k(x).requires_grad, \
            lib.is_grad_enabled()
    e, t = both(torch, program)
    assert e == t


def test_bare_decorators(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)

        @lib.no_grad
        def f(a):
            return (a * 2).requires_grad, lib.is_grad_enabled()

        @lib.enable_grad
        def g(a):
            return (a * 2).requires_grad, lib.is_grad_enabled()

        @lib.inference_mode
        def h(a):
            return (a * 2).requires_grad, lib.is_inference_mode_enabled()

        with lib.no_grad():
            from_g = g(x)
        return f(x), from_g, h(x), lib.is_grad_enabled(), lib.is_inference_mode_enabled()
    e, t = both(torch, program)
    assert e == t == ((False, False), (True, True), (False, True), True, False)


def test_inference_mode_records_nothing_even_under_enable_grad(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        out = []
        with lib.inference_mode():
            out.append(lib.is_grad_enabled())
            with lib.enable_grad():
                out += [lib.is_grad_enabled(), (x * 2).requires_grad]
            with lib.inference_mode(False):
                out += [lib.is_grad_enabled(), (x * 2).requires_grad]
        with lib.no_grad(), lib.inference_mode(False):
            out += [lib.is_grad_enabled(), lib.is_inference_mode_enabled()]
        out.append(lib.is_grad_enabled())
        return out
    e, t = both(torch, program)
    assert e == t


def test_grad_mode_inside_backward_hooks(torch):
    def program(lib):
        seen = []
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: seen.append(lib.is_grad_enabled()))
        y.sum().backward(retain_graph=True)
        y.sum().backward(create_graph=True)
        return seen
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = both(torch, program)
    assert e == t == [False, True]


def test_no_grad_bare_decorator_and_exception_restores_mode(torch):
    for lib in (ember, torch):
        @lib.no_grad()
        def boom():
            raise ValueError("x")
        with pytest.raises(ValueError):
            boom()
        assert lib.is_grad_enabled()
        with pytest.raises(ValueError), lib.no_grad():
            raise ValueError("y")
        assert lib.is_grad_enabled()


def test_grad_mode_is_thread_local(torch):
    for lib in (ember, torch):
        result = {}

        def worker(lib=lib, result=result):
            x = lib.tensor(X3, requires_grad=True)
            result["enabled"] = lib.is_grad_enabled()
            result["rg"] = (x * 2).requires_grad

        with lib.no_grad():
            th = threading.Thread(target=worker)
            th.start()
            th.join()
            assert not lib.is_grad_enabled()
        assert result == {"enabled": True, "rg": True}


def test_backward_in_a_thread(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        th = threading.Thread(target=lambda: (x * x).sum().backward())
        th.start()
        th.join()
        return x.grad
    check(torch, program)


def _records(x) -> tuple:
    """Whether each of the op paths that test the grad mode themselves records on ``x``."""
    return ((x * 2).requires_grad, (2 * x).requires_grad, x.tanh().requires_grad,
            ember.tanh(x).requires_grad, ember.add(x, x, alpha=2).requires_grad,
            (x.double() * x).requires_grad)


def test_grad_mode_of_one_thread_leaves_the_others_recording():
    """Ops test a process-wide list first (grad_mode.threads_off, one entry per thread with
    recording off) and the thread's own mode only when it is not empty: each thread still
    sees its own mode."""
    from ember.autograd.grad_mode import threads_off
    x = ember.tensor(X3, requires_grad=True)
    entered, release, seen = threading.Event(), threading.Event(), {}

    def worker():
        with ember.no_grad():
            seen["worker"] = _records(x)
            with ember.no_grad(), ember.inference_mode():  # (nested: still one entry)
                seen["worker nested"] = len(threads_off)
            entered.set()
            release.wait(10)
        seen["worker after"] = _records(x)

    th = threading.Thread(target=worker)
    th.start()
    entered.wait(10)
    seen["main"] = _records(x)
    held = len(threads_off)
    with ember.inference_mode():
        seen["main inference"] = _records(x)
        both = len(threads_off)
    release.set()
    th.join()
    assert seen == {"worker": (False,) * 6, "worker nested": 1, "main": (True,) * 6,
                    "main inference": (False,) * 6, "worker after": (True,) * 6}
    assert (held, both, len(threads_off)) == (1, 2, 0)


def test_a_thread_ending_with_grad_off_leaves_the_others_recording():
    from ember.autograd.grad_mode import threads_off
    x = ember.tensor(X3, requires_grad=True)
    th = threading.Thread(target=lambda: ember.set_grad_enabled(False))
    th.start()
    th.join()
    try:
        assert threads_off  # (its thread's state is gone: ops read their own)
        assert _records(x) == (True,) * 6
        with ember.no_grad():
            assert _records(x) == (False,) * 6
            assert len(threads_off) == 2
        assert _records(x) == (True,) * 6
    finally:
        threads_off.pop()  # forget the ended thread for the later tests
    assert not threads_off


def test_turning_recording_on_with_no_entry_left_does_not_fail():
    """``grad_enabled`` set around ``set_enabled`` (not by ember): turning it on again works."""
    from ember.autograd.grad_mode import state, threads_off
    x = ember.tensor(X3, requires_grad=True)
    state.grad_enabled = False
    try:
        assert not threads_off and _records(x) == (True,) * 6  # (the list is tested first)
    finally:
        ember.set_grad_enabled(True)
    assert state.grad_enabled and not threads_off and _records(x) == (True,) * 6


def test_backward_restores_the_recording_flag():
    from ember.autograd.grad_mode import threads_off
    x = ember.tensor(X3, requires_grad=True)
    seen = []
    y = (x * 2).sum()
    y.grad_fn.register_hook(lambda gi, go: seen.append((len(threads_off),
                                                        ember.is_grad_enabled())))
    y.backward()
    (x * 3).sum().backward(create_graph=True)
    assert seen == [(1, False)]
    assert not threads_off and _records(x) == (True,) * 6


# --------------------------------------------------------------------------- detach and .data
def test_detach_shares_memory_and_version(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        d = y.detach()
        d[0] = 100.0
        return d.requires_grad, d.is_leaf, y.detach(), y._version, d._version
    e, t = both(torch, program)
    assert e[:2] == t[:2]
    assert_same(e[2], t[2])
    assert e[3:] == t[3:]


def test_detach_in_place_makes_a_leaf(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.detach_()
        return y.requires_grad, y.is_leaf, y.grad_fn
    e, t = both(torch, program)
    assert e == t


def test_requires_grad_false_freezes_a_leaf(torch):
    def program(lib):
        w1 = lib.tensor(X3, requires_grad=True)
        w2 = lib.tensor([0.5, 2.0, -1.0], requires_grad=True)
        w2.requires_grad_(False)
        out = (w1 * w2).sum()
        out.backward()
        return w1.grad, w2.grad, w2.requires_grad, structure(out.grad_fn)
    e, t = both(torch, program)
    assert e[3] == t[3]
    assert_same(e[:3], t[:3])


def test_dot_data_is_untracked_and_shares_memory(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * x
        x.data.mul_(10)  # not seen by autograd: no version bump, no error
        y.sum().backward()
        d = x.data
        return x.grad, d.requires_grad, x._version, x.detach()
    e, t = both(torch, program)
    assert_same(e[0], t[0])
    assert e[1:3] == t[1:3]
    assert_same(e[3], t[3])


def test_data_setter_replaces_values(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        x.data = lib.tensor([7.0, 8.0, 9.0])
        (x * x).sum().backward()
        return x.detach(), x.grad, x.requires_grad
    check(torch, program)


def test_variable_is_a_tensor(torch):
    def program(lib):
        v = lib.autograd.Variable(lib.tensor(X3), requires_grad=True)
        (v * v).sum().backward()
        return isinstance(v, lib.Tensor), v.grad
    e, t = both(torch, program)
    assert e[0] is t[0] is True
    assert_same(e[1], t[1])


# --------------------------------------------------------------------------- custom Function
def _functions(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    class MulConst(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, w):
            ctx.k = k
            ctx.save_for_backward(x, w)
            return x * w * k

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            gx = grad * w * ctx.k if ctx.needs_input_grad[0] else None
            gw = grad * x * ctx.k if ctx.needs_input_grad[2] else None
            return gx, None, gw

    class SplitTwo(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb * 3

    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    class Square(lib.autograd.Function):  # setup_context style
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    return {"Exp": Exp, "MulConst": MulConst, "SplitTwo": SplitTwo, "Identity": Identity,
            "Square": Square}


def test_custom_function_exp_saves_its_output(torch):
    def program(lib):
        Exp = _functions(lib)["Exp"]
        x = lib.tensor(X3, requires_grad=True)
        y = Exp.apply(x)
        (y * 2).sum().backward()
        return y, x.grad, y.grad_fn.name(), structure(y.grad_fn)
    e, t = both(torch, program)
    leaf = (("torch::autograd::AccumulateGrad", ()), 0)
    assert e[2:] == t[2:] == ("ExpBackward", ("ExpBackward", (leaf,)))
    assert_same(e[:2], t[:2])


def test_custom_function_output_saved_is_double_differentiable(torch):
    def program(lib):
        Exp = _functions(lib)["Exp"]
        x = lib.tensor(X3, requires_grad=True)
        (g,) = lib.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg
    check(torch, program)


def test_custom_function_non_tensor_args_and_needs_input_grad(torch):
    def program(lib):
        MulConst = _functions(lib)["MulConst"]
        x = lib.tensor(X3, requires_grad=True)
        w = lib.tensor([0.5, 2.0, -1.0])
        y = MulConst.apply(x, 3.0, w)
        needs = y.grad_fn.needs_input_grad
        y.sum().backward()
        return needs, structure(y.grad_fn), x.grad
    e, t = both(torch, program)
    assert e[:2] == t[:2]
    assert_same(e[2], t[2])


def test_custom_function_multiple_outputs(torch):
    def program(lib):
        SplitTwo = _functions(lib)["SplitTwo"]
        x = lib.tensor(X3, requires_grad=True)
        a, b = SplitTwo.apply(x)
        (a.sum() + (b * b).sum()).backward()
        return (a.grad_fn is b.grad_fn, a.output_nr, b.output_nr), x.grad
    e, t = both(torch, program)
    assert e[0] == t[0] == (True, 0, 1)
    assert_same(e[1], t[1])


def test_custom_function_one_output_unused_materializes_zeros(torch):
    def program(lib):
        SplitTwo = _functions(lib)["SplitTwo"]
        x = lib.tensor(X3, requires_grad=True)
        a, _ = SplitTwo.apply(x)
        a.sum().backward()
        return x.grad
    check(torch, program)


def test_custom_function_set_materialize_grads_false(torch):
    def program(lib):
        seen = []

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x.clone(), x.clone()

            @staticmethod
            def backward(ctx, ga, gb):
                seen.append((ga is None, gb is None))
                return ga if gb is None else ga + gb

        x = lib.tensor(X3, requires_grad=True)
        a, _ = Two.apply(x)
        (a * 2).sum().backward()
        return seen, x.grad
    e, t = both(torch, program)
    assert e[0] == t[0] == [(False, True)]
    assert_same(e[1], t[1])


def test_custom_function_returning_input_unchanged(torch):
    def program(lib):
        Identity = _functions(lib)["Identity"]
        x = lib.tensor(X3, requires_grad=True)
        y = Identity.apply(x)
        y.sum().backward()
        return (y is x, y.is_leaf, node_name(y.grad_fn), x.is_leaf), x.grad, y.detach()
    e, t = both(torch, program)
    assert e[0] == t[0]
    assert_same(e[1:], t[1:])


def test_custom_function_returning_a_view_of_an_input_keeps_its_node(torch):
    def program(lib):
        class Head(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return b[:2]

            @staticmethod
            def backward(ctx, g):
                full = lib.zeros(3)
                full[:2] = g * 5
                return None, full

        a = lib.tensor(X3, requires_grad=True)
        b = lib.tensor(X3, requires_grad=True)
        y = Head.apply(a * 1, b * 1)
        y.sum().backward()
        return y.grad_fn.name(), b.grad, a.grad
    e, t = both(torch, program)
    assert e[0] == t[0] == "HeadBackward"
    assert_same(e[1:], t[1:])


def test_custom_function_setup_context_style(torch):
    def program(lib):
        Square = _functions(lib)["Square"]
        x = lib.tensor(X3, requires_grad=True)
        y = Square.apply(x)
        y.sum().backward()
        return y.grad_fn.name(), y, x.grad
    e, t = both(torch, program)
    assert e[0] == t[0] == "SquareBackward"
    assert_same(e[1:], t[1:])


def test_custom_function_without_grad_records_nothing(torch):
    def program(lib):
        Exp = _functions(lib)["Exp"]
        y = Exp.apply(lib.tensor(X3))
        with lib.no_grad():
            z = Exp.apply(lib.tensor(X3, requires_grad=True))
        return y.requires_grad, y.grad_fn, z.requires_grad, z.grad_fn
    e, t = both(torch, program)
    assert e == t


def test_custom_function_mark_dirty(torch):
    def program(lib):
        class AddOneInPlace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        a = lib.tensor(X3, requires_grad=True)
        x = a * 1
        y = AddOneInPlace.apply(x)
        (y * y).sum().backward()
        return (y is x, x._version, node_name(x.grad_fn)), y, a.grad
    e, t = both(torch, program)
    assert e[0] == t[0]
    assert_same(e[1:], t[1:])


def test_custom_function_mark_dirty_on_view_of_non_leaf(torch):
    def program(lib):
        class DoubleInPlace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = lib.tensor(M23, requires_grad=True)
        y = x * 1
        DoubleInPlace.apply(y[0])
        (y * y).sum().backward()
        return y, x.grad, y.grad_fn.name()
    check_names_and_values(torch, program)


def test_custom_function_mark_dirty_on_leaf_raises(torch):
    for lib in (ember, torch):
        class AddOneInPlace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            AddOneInPlace.apply(lib.tensor(X3, requires_grad=True))


def test_custom_function_mark_non_differentiable(torch):
    def program(lib):
        class SortLike(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = x.argmax()
                mask = x > 0
                ctx.mark_non_differentiable(mask)
                return x * 2, mask.float(), idx

            @staticmethod
            def backward(ctx, g, gm, gi):
                return g * 2

        x = lib.tensor(X3, requires_grad=True)
        y, m, i = SortLike.apply(x)
        y.sum().backward()
        return (y.requires_grad, m.requires_grad, i.requires_grad), x.grad
    e, t = both(torch, program)
    assert e[0] == t[0]
    assert_same(e[1], t[1])


def test_custom_function_mark_non_differentiable_float_output(torch):
    def program(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                a = x * 2
                b = x * 3
                ctx.mark_non_differentiable(b)
                return a, b

            @staticmethod
            def backward(ctx, ga, gb):
                return ga * 2

        x = lib.tensor(X3, requires_grad=True)
        a, b = F.apply(x)
        a.sum().backward()
        return b.requires_grad, b.is_leaf, x.grad
    e, t = both(torch, program)
    assert e[:2] == t[:2]
    assert_same(e[2], t[2])


def test_once_differentiable(torch):
    for lib in (ember, torch):
        from_lib = lib.autograd.function.once_differentiable if lib is torch \
            else ember.autograd.once_differentiable

        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            @from_lib
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x ** 2 * g

        x = lib.tensor(X3, requires_grad=True)
        (g,) = lib.autograd.grad(Cube.apply(x).sum(), x)
        np.testing.assert_allclose(_np(g), 3 * np.array(X3) ** 2)
        (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        assert not g.requires_grad  # the incoming gradient (ones) needs no grad: nothing to wrap
        v = lib.ones(3, requires_grad=True)
        (g,) = lib.autograd.grad(Cube.apply(x), x, v, create_graph=True)
        np.testing.assert_allclose(_np(g), 3 * np.array(X3) ** 2)
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="trying to differentiate twice a function that "
                                               "was marked with @once_differentiable"):
            g.sum().backward()


def test_custom_function_in_graph_with_builtins_and_hooks(torch):
    def program(lib):
        Exp = _functions(lib)["Exp"]
        x = lib.tensor(M23, requires_grad=True)
        y = Exp.apply(x * 0.5)
        y.register_hook(lambda g: g * 2)
        (y.sum(0) * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return x.grad
    check(torch, program)


def test_custom_function_saved_tensor_freed_after_backward(torch):
    for lib in (ember, torch):
        Exp = _functions(lib)["Exp"]
        y = Exp.apply(lib.tensor(X3, requires_grad=True))
        y.sum().backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                               "time"):
            _ = y.grad_fn.saved_tensors


def test_custom_function_saved_input_modified_raises(torch):
    for lib in (ember, torch):
        MulConst = _functions(lib)["MulConst"]
        x = lib.tensor(X3, requires_grad=True)
        w = lib.tensor([0.5, 2.0, -1.0])
        y = MulConst.apply(x, 2.0, w)
        w.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_custom_function_return_none_gradient_for_tensor_input(torch):
    def program(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g, None

        a = lib.tensor(X3, requires_grad=True)
        b = lib.tensor(X3, requires_grad=True)
        F.apply(a, b).sum().backward()
        return a.grad, b.grad
    check(torch, program)


def test_function_ctx_attributes_and_saved_none(torch):
    def program(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, None)
                return a * 2

            @staticmethod
            def backward(ctx, g):
                a, none = ctx.saved_tensors
                assert none is None and a.shape == g.shape
                return g * 2, None

        a = lib.tensor(X3, requires_grad=True)
        y = F.apply(a, None)
        y.sum().backward()
        return a.grad
    check(torch, program)


# --------------------------------------------------------------------------- views
def test_views_share_memory_and_version_counter(torch):
    def program(lib):
        base = lib.zeros(2, 3)
        v = base[0]
        t = base.t()
        r = base.view(6)
        v.add_(1)
        t[2, 1] = 5.0
        return (base._version, v._version, t._version, r._version, v._base is base,
                r._base is base, t.is_contiguous()), base
    e, t = both(torch, program)
    assert e[0] == t[0]
    assert_same(e[1], t[1])


def test_view_of_view_has_root_base(torch):
    def program(lib):
        base = lib.zeros(4, 3)
        v = base[1:][0].unsqueeze(0)
        return v._base is base, v.is_contiguous(), v.storage_offset()
    e, t = both(torch, program)
    assert e == t


def test_inplace_on_view_of_non_leaf_setitem(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        w = lib.tensor(2.0, requires_grad=True)
        y = x * 1
        y[0] = 5 * w
        out = (y * lib.tensor([1.0, 2.0, 3.0])).sum()
        out.backward()
        return y, x.grad, w.grad, structure(y.grad_fn, 3)
    e, t = both(torch, program)
    assert e[3] == t[3]
    assert_same(e[:3], t[:3])


def test_inplace_mul_on_column_view(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        y = x * 1
        y[:, 1].mul_(2)
        (y * y).sum().backward()
        return y, x.grad, structure(y.grad_fn, 2)
    e, t = both(torch, program)
    assert e[2] == t[2]
    assert_same(e[:2], t[:2])


def test_inplace_on_view_then_use_view_and_base(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2  # saves only the constant: the in-place change below is allowed
        row = y[1]
        row.mul_(w)
        out = (row * row).sum() + y.sum()
        out.backward()
        # (the view's own new grad_fn is AsStridedBackward0 in torch, a replayed view in ember)
        return y, row, x.grad, w.grad, node_name(y.grad_fn)
    check_names_and_values(torch, program)


def check_names_and_values(torch, program):
    e, t = both(torch, program)
    names_e = [v for v in e if isinstance(v, str)]
    names_t = [v for v in t if isinstance(v, str)]
    assert names_e == names_t
    assert_same([v for v in e if not isinstance(v, str)],
                [v for v in t if not isinstance(v, str)], rtol=1e-4)


def test_view_taken_before_base_changed_in_place_follows_the_new_history(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 1
        v = y[:2]
        y.mul_(2)  # v's values doubled with y, so must its gradient
        (v * lib.tensor([1.0, 10.0])).sum().backward()
        return v, x.grad, v.requires_grad, v.is_leaf
    check(torch, program)


def test_sibling_view_sees_in_place_change_through_another_view(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        y = x * 1
        col = y[:, 1]
        row = y[0]
        row.mul_(3)  # changes col[0] too
        (col * col).sum().backward()
        return col, x.grad
    check(torch, program)


def test_in_place_on_a_view_taken_before_another_in_place(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 1
        v = y[1:]
        u = v[0]
        y.add_(1)
        u.mul_(5)
        v.exp_()
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return y, x.grad
    check(torch, program, rtol=1e-4)


def test_double_backward_through_in_place_ops_on_views(torch):
    def program(lib):
        x = lib.tensor(M23, dtype=lib.float64, requires_grad=True)
        y = x * 1
        y[:, 1].mul_(x[:, 0])
        y[1, :2].mul_(lib.tensor([2.0, 3.0], dtype=lib.float64))
        y[0].exp_()  # saves its output, which lives in a view (so nothing may change y after)
        (g,) = lib.autograd.grad((y ** 2).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg
    check(torch, program, rtol=1e-6)


def test_gradcheck_and_gradgradcheck_through_in_place_view_ops():
    x = ember.tensor(M23, dtype=ember.float64, requires_grad=True)

    def f(x):
        y = x * 1
        y[:, 1].mul_(x[:, 0])
        y[0].sin_()
        y[y > 1] = 0.5
        y.t()[2].exp_()
        return y
    assert ember.autograd.gradcheck(f, (x,))
    assert ember.autograd.gradgradcheck(f, (x,))


def test_retain_grad_follows_in_place_changes(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        y = x * 1
        y.retain_grad()
        v = y[1]
        v.retain_grad()
        y[0].mul_(2)
        v.mul_(3)
        (y * y).sum().backward()
        return y.grad, v.grad, x.grad
    check(torch, program)


def test_inplace_on_transposed_and_reshaped_views(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        y = x * 2
        y.t()[1].add_(lib.tensor([10.0, 20.0]))
        y.view(6)[::2].mul_(3)
        (y ** 2).sum().backward()
        return y, x.grad
    check(torch, program)


def test_setitem_with_bool_mask_records_index_put(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        y = x * 1
        y[y < 0] = 0
        (y * y).sum().backward()
        return y, x.grad, node_name(y.grad_fn)
    check_names_and_values(torch, program)


def test_setitem_with_bool_mask_and_tensor_values(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        v = lib.tensor([10.0, 20.0], requires_grad=True)
        y = x.clone()
        y[lib.tensor([True, False, True])] = v
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return y, x.grad, v.grad, node_name(y.grad_fn)
    check_names_and_values(torch, program)


def test_setitem_with_index_list(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y[[0, 2]] = lib.tensor([7.0, 8.0])
        (y * y).sum().backward()
        return y, x.grad, node_name(y.grad_fn)
    check_names_and_values(torch, program)


def test_setitem_slice_on_non_leaf_with_grad_value(torch):
    def program(lib):
        x = lib.tensor(M23, requires_grad=True)
        v = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.clone()
        y[:, 0] = v * v
        y.sum().backward()
        return y, x.grad, v.grad, node_name(y.grad_fn)
    check_names_and_values(torch, program)


def test_inplace_on_view_of_tensor_not_requiring_grad(torch):
    def program(lib):
        w = lib.tensor(3.0, requires_grad=True)
        buf = lib.zeros(3)
        buf[1] = w * 2
        (buf * buf).sum().backward()
        return buf, w.grad, buf.requires_grad, node_name(buf.grad_fn)
    check_names_and_values(torch, program)


def test_inplace_ops_on_non_leaf(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.add_(1).mul_(lib.tensor([1.0, 2.0, 3.0])).sub_(2).sigmoid_()
        y.sum().backward()
        return y, x.grad, y._version, node_name(y.grad_fn)
    e, t = both(torch, program)
    assert e[2:] == t[2:]
    assert_same(e[:2], t[:2], rtol=1e-4)


def test_augmented_assignment_on_non_leaf(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 1
        y += 2
        y *= x
        y /= 2
        y.sum().backward()
        return y, x.grad, node_name(y.grad_fn)
    check_names_and_values(torch, program)


def test_inplace_under_no_grad_on_leaf_is_allowed(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        with lib.no_grad():
            x.mul_(2)
            x[0] = 10.0
        (x * x).sum().backward()
        return x, x.grad, x._version
    e, t = both(torch, program)
    assert e[2] == t[2]
    assert_same(e[:2], t[:2])


# --------------------------------------------------------------------------- version counter
def _backward_error(program, lib) -> str:
    with pytest.raises(RuntimeError) as info:
        program(lib)
    return str(info.value)


@pytest.mark.parametrize("program", [
    lambda lib: lib.tensor(X3, requires_grad=True).exp().add_(1).sum().backward(),
    lambda lib: lib.tensor(X3, requires_grad=True).exp().exp_().sum().backward(),
    lambda lib: lib.tensor(X3, requires_grad=True).mul(2).exp_().sigmoid_().sum().backward(),
], ids=["exp_then_add_", "exp_then_exp_", "exp__then_sigmoid_"])
def test_modifying_saved_output_raises_like_torch(torch, program):
    e, t = _backward_error(program, ember), _backward_error(program, torch)
    assert e == t
    assert "has been modified by an inplace operation" in e


def test_modifying_saved_output_message(torch):
    for lib in (ember, torch):
        x = lib.tensor(X3, requires_grad=True)
        y = x.exp()
        y.add_(1)
        # torch 2.13 names the node without its "Backward0" suffix
        with pytest.raises(RuntimeError, match=r"\[torch.FloatTensor \[3\]\], which is output 0 "
                                               r"of Exp, is at version 1; expected version 0 "
                                               r"instead"):
            y.sum().backward()


def test_modifying_saved_input_raises(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        a = x * 1
        y = a.sin()  # saves a
        a.mul_(2)
        y.sum().backward()
    e = _backward_error(program, ember)
    assert e == _backward_error(program, torch)
    assert "which is output 0 of Mul, is at version 1; expected version 0 instead" in e


def test_saved_tensor_modified_through_a_detached_alias_raises(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        y = x * 2
        y.add_(1).mul_(y.detach()).exp_()  # mul_ saved y.detach(), then exp_ changed it
        y.sum().backward()
    e = _backward_error(program, ember)
    assert e == _backward_error(program, torch)
    assert "[torch.FloatTensor [3]] is at version 3; expected version 1 instead" in e


def test_inplace_on_unsaved_tensor_is_fine(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        a = x * 1
        y = a + 1  # add saves nothing
        a.mul_(2)
        z = a.relu()
        (y.sum() + z.sum()).backward()
        return x.grad
    check(torch, program)


def test_modifying_view_of_saved_tensor_raises(torch):
    for lib in (ember, torch):
        x = lib.tensor(M23, requires_grad=True)
        a = x * 1
        y = a * a
        a[0].zero_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def _saved_at_version_1(lib, which: str):
    """An op (through the one- and two-operand recording paths) saving a tensor modified
    once already, so that the version it saves is 1, not 0."""
    x = lib.tensor(X3, requires_grad=True)
    a = x * 1
    a.add_(1)
    c = lib.tensor([1.0, 2.0, 3.0])
    c.mul_(2)
    if which == "unary":
        return x, a, a.sin()
    if which == "both":
        return x, a, a * a
    return x, c, x * c  # the constant, saved crosswise


@pytest.mark.parametrize("which", ["unary", "both", "crosswise"])
def test_tensor_saved_at_a_later_version(torch, which):
    def unmodified(lib):
        x, _, y = _saved_at_version_1(lib, which)
        y.sum().backward()
        return x.grad

    def modified(lib):
        x, saved, y = _saved_at_version_1(lib, which)
        saved.mul_(3)
        y.sum().backward()

    check(torch, unmodified)
    e = _backward_error(modified, ember)
    assert e == _backward_error(modified, torch)
    assert "is at version 2; expected version 1 instead" in e


def test_modifying_constant_saved_by_mul_raises(torch):
    for lib in (ember, torch):
        x = lib.tensor(X3, requires_grad=True)
        c = lib.tensor([1.0, 2.0, 3.0])
        y = x * c
        c[0] = 4.0
        with pytest.raises(RuntimeError, match=r"\[torch.FloatTensor \[3\]\] is at version 1; "
                                               r"expected version 0 instead"):
            y.sum().backward()


def test_version_counter_values(torch):
    def program(lib):
        x = lib.zeros(3)
        vs = [x._version]
        x.add_(1)
        vs.append(x._version)
        x[0] = 2
        vs.append(x._version)
        x += 1
        vs.append(x._version)
        x.zero_()
        vs.append(x._version)
        x.fill_(2.0)
        vs.append(x._version)
        x.copy_(lib.ones(3))
        vs.append(x._version)
        y = x + 1
        vs.append(y._version)
        return vs
    e, t = both(torch, program)
    assert e == t


def test_grad_after_backward_counts_version(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        (x * 2).sum().backward()
        v0 = x.grad._version
        (x * 2).sum().backward()
        return v0, x.grad._version
    e, t = both(torch, program)
    assert e == t


# --------------------------------------------------------------------------- anomaly mode
def test_detect_anomaly_names_the_node_producing_nan(torch):
    messages = []
    for lib in (ember, torch):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
            ctx = lib.autograd.detect_anomaly()
        with ctx:
            y = x.sqrt() * 0  # sqrt'(0) * 0 = inf * 0 = nan
            with pytest.raises(RuntimeError) as info, warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                y.sum().backward()
        messages.append(str(info.value))
        assert any("Error detected in SqrtBackward0" in str(w.message) for w in rec)
        assert not lib.is_anomaly_enabled()
    assert messages[0] == messages[1] == ("Function 'SqrtBackward0' returned nan values in "
                                          "its 0th output.")


def test_set_detect_anomaly_toggles(torch):
    for lib in (ember, torch):
        with lib.autograd.set_detect_anomaly(True):
            assert lib.is_anomaly_enabled()
        assert not lib.is_anomaly_enabled()


def test_anomaly_mode_reports_forward_trace_of_failing_custom_function(torch):
    for lib in (ember, torch):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                raise ValueError("boom in backward")

        x = lib.tensor(X3, requires_grad=True)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                y = Bad.apply(x)
                with pytest.raises(ValueError, match="boom in backward"):
                    y.sum().backward()
        text = "\n".join(str(w.message) for w in rec)
        assert "Error detected in BadBackward" in text
        assert "y = Bad.apply(x)" in text


# --------------------------------------------------------------------------- gradcheck
def test_gradcheck_passes_for_correct_functions(torch):
    for lib in (ember, torch):
        x = lib.tensor(M23, dtype=lib.float64, requires_grad=True)
        w = lib.tensor([[0.3, -0.2], [1.0, 0.5], [-0.7, 0.1]], dtype=lib.float64,
                       requires_grad=True)
        assert lib.autograd.gradcheck(lambda a, b: (a.mm(b).tanh() * a.sum()), (x, w))
        assert lib.autograd.gradgradcheck(lambda a, b: (a.mm(b) ** 2).sum(1), (x, w))


def _wrong_functions(lib):
    class WrongSquare(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * g  # should be 2 * x * g

    class WrongSecondOrder(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            # right value, wrong derivative: 3 * x**2 computed through a detached square
            return 3 * (x.detach() ** 2) * g
    return WrongSquare, WrongSecondOrder


def test_gradcheck_catches_wrong_backward(torch):
    for lib in (ember, torch):
        WrongSquare, WrongSecondOrder = _wrong_functions(lib)
        x = lib.tensor(X3, dtype=lib.float64, requires_grad=True)
        error = sys.modules[lib.__name__ + ".autograd.gradcheck"].GradcheckError
        with pytest.raises(error, match="Jacobian mismatch for output 0 with respect to input 0"):
            lib.autograd.gradcheck(WrongSquare.apply, (x,))
        assert lib.autograd.gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False
        assert lib.autograd.gradcheck(WrongSecondOrder.apply, (x,))
        with pytest.raises(error):
            lib.autograd.gradgradcheck(WrongSecondOrder.apply, (x,))


def test_gradcheck_error_import_and_function_shadowing_module(torch):
    for lib in (ember, torch):
        mod = __import__(lib.__name__ + ".autograd.gradcheck", fromlist=["GradcheckError"])
        assert issubclass(mod.GradcheckError, RuntimeError)
        assert callable(lib.autograd.gradcheck) and callable(lib.autograd.gradgradcheck)
        assert not isinstance(lib.autograd.gradcheck, type(sys))


# --------------------------------------------------------------------------- engine
def test_diamond_graph_runs_each_node_once_with_summed_gradient(torch):
    def program(lib):
        calls = []
        x = lib.tensor(X3, requires_grad=True)
        h = x.exp()
        h.grad_fn.register_prehook(lambda g: calls.append(g[0].clone()))
        a = h * 2
        b = h.sin()
        c = h[1:]
        out = (a + b).sum() + c.sum() * 3
        out.backward()
        return calls, x.grad
    e, t = both(torch, program)
    assert len(e[0]) == len(t[0]) == 1
    assert_same(e, t, rtol=1e-4)


def test_engine_execution_order_matches_torch(torch):
    def program(lib):
        order = []
        x = lib.tensor(X3, requires_grad=True)
        a = x * 2
        b = x + 1
        c = a * b
        d = c.exp()
        e = (d + a).sum()
        for name, t in (("a", a), ("b", b), ("c", c), ("d", d)):
            t.grad_fn.register_prehook(lambda g, n=name: order.append(n))
        e.backward()
        return order
    e, t = both(torch, program)
    assert e == t


def test_wide_fan_in_gradients_sum(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        total = x * 0
        for k in range(50):
            total = total + x * k
        total.sum().backward()
        return x.grad
    check(torch, program)


def test_same_tensor_used_twice_in_one_op(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        (x * x).sum().backward()
        g1 = x.grad.clone()
        x.grad = None
        lib.autograd.backward([(x + x).sum(), (x * 3).sum()])
        return g1, x.grad
    check(torch, program)


def test_backward_broadcast_gradients_are_summed_to_input_shapes(torch):
    def program(lib):
        a = lib.tensor([[1.0], [2.0]], requires_grad=True)
        b = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = lib.tensor(2.0, requires_grad=True)
        ((a * b + s) ** 2).sum().backward()
        return a.grad, b.grad, s.grad
    check(torch, program)


def test_integer_and_float64_mixing_gradients_keep_input_dtype(torch):
    def program(lib):
        x = lib.tensor(X3, requires_grad=True)
        d = lib.tensor(X3, dtype=lib.float64, requires_grad=True)
        i = lib.tensor([1, 2, 3])
        out = (x * d + x * i).sum()
        out.backward()
        return out, x.grad, d.grad
    check(torch, program)


def _build_chain(x, n: int):
    enabled = gc.isenabled()
    gc.disable()  # graphs hold no cycles; this only spares the gc's repeated full scans
    try:
        y = x
        for _ in range(n):
            y = y * 1.0
        return y
    finally:
        if enabled:
            gc.enable()


def test_deep_chain_of_a_million_ops_backpropagates():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = _build_chain(x, 1_000_000)
    y.backward(ember.tensor([1.0, 3.0]))
    assert x.grad.tolist() == [1.0, 3.0]
    del y  # dropping the (freed) chain must not recurse either


def test_deep_chain_dropped_without_backward_does_not_crash():
    x = ember.tensor([1.0], requires_grad=True)
    y = _build_chain(x, 1_000_000)
    ref = weakref.ref(y.grad_fn)
    del y
    assert ref() is None


def _with_gc_disabled(fn):
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        return fn()
    finally:
        if enabled:
            gc.enable()


def test_saved_arrays_die_with_the_graph_after_backward_without_gc():
    def run():
        x = ember.tensor(X3, requires_grad=True)
        h = x * 2
        y = h.exp()  # saves its output's array
        z = (h * y).sin().sum()  # saves h, y and the product
        ref = weakref.ref(y._data)
        z.backward()
        del h, y, z
        return ref() is None, x.grad is not None
    dead, has_grad = _with_gc_disabled(run)
    assert has_grad
    assert dead


def test_backward_frees_saved_tensors_even_while_graph_is_alive():
    def run():
        x = ember.tensor(X3, requires_grad=True)
        y = x.exp()
        ref = weakref.ref(y._data)
        z = (y.detach() * 0 + y).sum()
        del y
        z.backward()
        return ref() is None
    # y's array is still reachable from y's node only through the saved output, which
    # backward released: the graph (z) is alive but the array must be gone
    assert _with_gc_disabled(run)


def test_dropped_graph_without_backward_is_freed_without_gc():
    def run():
        x = ember.tensor(X3, requires_grad=True)
        a = x.exp()
        b = (a * x).tanh()
        c, d = b.unbind(0)[:2]
        out = (c * d + a.sum()).sigmoid()
        out.retain_grad()
        out.register_hook(lambda g: g)
        refs = [weakref.ref(t._data) for t in (a, b)]
        node_refs = [weakref.ref(t.grad_fn) for t in (a, b, c, out)]
        acc_ref = weakref.ref(out.grad_fn.next_functions[0][0])
        del a, b, c, d, out
        return [r() is None for r in refs + node_refs + [acc_ref]]
    assert all(_with_gc_disabled(run))


def test_custom_function_graph_is_freed_without_gc():
    Exp = _functions(ember)["Exp"]
    SplitTwo = _functions(ember)["SplitTwo"]

    def run():
        x = ember.tensor(X3, requires_grad=True)
        y = Exp.apply(x)
        a, b = SplitTwo.apply(y)
        refs = [weakref.ref(y._data), weakref.ref(y.grad_fn), weakref.ref(a.grad_fn)]
        del y, a, b
        return [r() is None for r in refs]
    assert all(_with_gc_disabled(run))


def test_custom_function_with_dirty_and_non_differentiable_outputs_is_freed_without_gc():
    class AddOne(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            return x, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            return g

    def run():
        y = ember.tensor(X3, requires_grad=True) * 2
        out, mask = AddOne.apply(y)
        refs = [weakref.ref(y.grad_fn), weakref.ref(y._data), weakref.ref(mask._data)]
        del y, out, mask
        return [r() is None for r in refs]
    assert all(_with_gc_disabled(run))


def test_inplace_view_graph_is_freed_without_gc():
    def run():
        x = ember.tensor(M23, requires_grad=True)
        y = x.exp()
        y[0].mul_(2)
        y[:, 1] = x[:, 0] * 3
        refs = [weakref.ref(y.grad_fn), weakref.ref(y._data)]
        del y
        return [r() is None for r in refs]
    assert all(_with_gc_disabled(run))


def test_retained_graph_is_freed_when_dropped_without_gc():
    def run():
        x = ember.tensor(X3, requires_grad=True)
        y = x.exp()
        z = (y * y).sum()
        z.backward(retain_graph=True)
        (g,) = ember.autograd.grad(z, x, create_graph=True)
        refs = [weakref.ref(y._data), weakref.ref(z.grad_fn), weakref.ref(g.grad_fn)]
        del y, z, g
        return [r() is None for r in refs]
    assert all(_with_gc_disabled(run))


def test_leaf_grad_after_create_graph_is_freed_when_cleared():
    def run():
        x = ember.tensor(X3, requires_grad=True)
        (x ** 3).sum().backward(create_graph=True)
        ref = weakref.ref(x.grad.grad_fn)
        x.grad = None
        return ref() is None
    assert _with_gc_disabled(run)


def test_mark_non_differentiable_on_an_input_returned_as_is(torch):
    def run(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.mark_non_differentiable(b)
                return a, b

            @staticmethod
            def backward(ctx, ga, gb):
                return ga, gb
        a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        outs = F.apply(a, b)
        return [o.requires_grad for o in outs]
    assert run(ember) == run(torch) == [True, False]


@pytest.mark.parametrize("shape, other", [((256, 512), (512,)), ((64, 128, 8), (128, 1)),
                                          ((4096,), ())])
def test_unbroadcast_sums_alike_with_and_without_create_graph(shape, other):
    """The engine sums a broadcast input's gradient as ``Tensor.sum`` does (BLAS products
    with ones on large float arrays): the same bits whether or not the backward is recorded."""
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    y = ember.tensor(rng.standard_normal(other).astype(np.float32), requires_grad=True)
    g = ember.tensor(rng.standard_normal(shape).astype(np.float32))
    plain = ember.autograd.grad(x * y, [y], g)[0]
    recorded = ember.autograd.grad(x * y, [y], g, create_graph=True)[0]
    assert np.array_equal(plain.detach().numpy(), recorded.detach().numpy())


# --------------------------------------------------------------------------- Tensor._meta

def _meta_is_true(t) -> bool:
    """``t._meta`` is None or the entry of its array's shape and dtype."""
    m = t._meta
    return m is None or (m[1][0] == t._data.shape and m[1][1] == t._data.dtype
                         and m[0] == t._data.dtype)


_A = ember.randn(3, 4, requires_grad=True)
_ROW = ember.randn(4, requires_grad=True)
_COL = ember.randn(3, 1)


@pytest.mark.parametrize("expr", [
    "a.tanh()", "a.exp()", "ember.sin(a)", "a.abs()", "a * a", "a + 2.0", "2.0 - a",
    "a / a", "a * row", "row * a", "a * col", "a - col", "a ** 2", "a.double() * 2",
    "a * a.double()", "a.sum()", "a.mm(a.t())", "a.t().mm(a)", "a[0].dot(row)",
    "ember.matmul(a, row)", "a.reshape(12)", "a[0] * row", "a.relu()",
    "ember.where(a > 0, a, row)", "ember.atan2(a, row)", "ember.maximum(a, col)",
    "(a * 1j).abs()", "a.to(ember.bfloat16) * 2",
], ids=lambda e: e)
def test_recorded_outputs_cache_their_own_metadata(expr):
    """The metadata entry an op leaves on its output (an elementwise op's operands') is the
    output's shape and dtype: chains of ops, products and broadcasts included; and the engine,
    which reads it back from the nodes, gets torch's gradient shapes."""
    x = _A.detach().requires_grad_()
    scope = {"ember": ember, "a": x, "row": _ROW, "col": _COL}
    y = eval(expr, scope)
    assert _meta_is_true(y), expr
    z = (y * y).tanh() + 1.0
    assert _meta_is_true(z)
    z.float().sum().backward() if z.dtype != ember.complex64 else z.abs().sum().backward()
    assert x.grad.shape == x.shape


def test_replacing_data_forgets_the_cached_metadata():
    """``.data =`` (another shape or dtype), an ``out=`` that resizes its tensor and a lazy
    parameter's materialisation each replace ``_data``: what is recorded next uses the new
    array's shape and dtype, not the old one's."""
    x = ember.randn(3, requires_grad=True)
    (x * 2).sum().backward()
    assert x._meta is not None and x._meta[1][0] == (3,)
    x.data = ember.randn(2, 5, dtype=ember.float64)
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.shape == (2, 5) and x.grad.dtype == ember.float64

    out = ember.zeros(2)
    (out * 1.0).sum()  # (an op on it, caching nothing: no grad)
    ember.add(ember.ones(3, 4), 1.0, out=out)
    out.requires_grad_()
    (out * out).sum().backward()
    assert out.grad.shape == (3, 4)

    lazy = ember.nn.LazyLinear(2)
    lazy(ember.randn(5, 3)).sum().backward()
    assert lazy.weight.grad.shape == (2, 3)
