"""The classic PyTorch tutorials' autograd cells, run with ``import ember as torch``.

Each cell is written once as a function of ``torch`` (the module) and run with ember and with
PyTorch: what it prints must match (object addresses aside) and its numbers must agree. The
training loops start from the same NumPy-generated weights in both libraries, so their losses
must agree step for step to float32 tolerance.
"""

from __future__ import annotations

import contextlib
import io
import math
import re

import numpy as np
import pytest

import ember


def _printed(cell, lib) -> str:
    """What ``cell(lib)`` prints, with object addresses masked."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cell(lib)
    return re.sub(r"0x[0-9a-f]+", "0x...", out.getvalue())


def _same_printout(torch, cell) -> str:
    e, t = _printed(cell, ember), _printed(cell, torch)
    assert e == t
    return e


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_torch():
    """Torch's thread pool spins when the CPUs are shared (tests run in parallel): one thread."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --------------------------------------------------------------------------- 60-minute blitz
def _blitz_autograd(torch):
    x = torch.ones(2, 2, requires_grad=True)
    print(x)
    y = x + 2
    print(y)
    print(y.grad_fn)
    z = y * y * 3
    out = z.mean()
    print(z, out)
    out.backward()
    print(x.grad)


def test_blitz_autograd_cells_print_like_torch(torch):
    text = _same_printout(torch, _blitz_autograd)
    assert "tensor(27., grad_fn=<MeanBackward0>)" in text
    assert "<AddBackward0 object at 0x...>" in text
    assert text.endswith("tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])\n")


def test_blitz_requires_grad_flag_cell(torch):
    a_np = np.array([[0.3, -1.2], [2.0, 0.7]], dtype=np.float32)

    def cell(torch):
        a = torch.tensor(a_np)
        a = ((a * 3) / (a - 1))
        print(a.requires_grad)
        a.requires_grad_(True)
        print(a.requires_grad)
        b = (a * a).sum()
        print(b.grad_fn)
    assert _same_printout(torch, cell) == "False\nTrue\n<SumBackward0 object at 0x...>\n"


def test_blitz_vector_jacobian_product_cell(torch):
    x_np = np.array([0.4, -1.3, 0.8], dtype=np.float32)

    def cell(torch):
        x = torch.tensor(x_np, requires_grad=True)
        y = x * 2
        while y.data.norm() < 1000:
            y = y * 2
        print(y)
        v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
        y.backward(v)
        print(x.grad)
        print(x.requires_grad)
        print((x ** 2).requires_grad)
        with torch.no_grad():
            print((x ** 2).requires_grad)
        y = x.detach()
        print(y.requires_grad)
        print(x.eq(y).all())
    text = _same_printout(torch, cell)
    assert "grad_fn=<MulBackward0>" in text
    assert text.endswith("True\nTrue\nFalse\nFalse\ntensor(True)\n")


def test_cube_derivative_at_one(torch):
    def cell(torch):
        x = torch.tensor(1.0, requires_grad=True)
        y = x ** 3
        y.backward()
        print(x.grad)
    assert _same_printout(torch, cell) == "tensor(3.)\n"


# --------------------------------------------------------------------------- autograd basics
def test_autograd_basics_retain_graph_accumulation(torch):
    def cell(torch):
        inp = torch.eye(4, 5, requires_grad=True)
        out = (inp + 1).pow(2).t()
        out.backward(torch.ones_like(out), retain_graph=True)
        print(f"First call\n{inp.grad}")
        out.backward(torch.ones_like(out), retain_graph=True)
        print(f"\nSecond call\n{inp.grad}")
        inp.grad.zero_()
        out.backward(torch.ones_like(out), retain_graph=True)
        print(f"\nCall after zeroing gradients\n{inp.grad}")
    text = _same_printout(torch, cell)
    first, second, zeroed = text.rstrip("\n").split("\n\n")
    assert "[4., 2., 2., 2., 2.]" in first and "[2., 4., 2., 2., 2.]" in first
    assert "[8., 4., 4., 4., 4.]" in second
    assert zeroed.replace("Call after zeroing gradients", "First call") == first


def test_autograd_basics_computational_graph(torch):
    w_np = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    b_np = np.array([0.1, -0.2, 0.3], dtype=np.float32)

    def cell(torch):
        x = torch.ones(5)  # input tensor
        y = torch.zeros(3)  # expected output
        w = torch.tensor(w_np, requires_grad=True)
        b = torch.tensor(b_np, requires_grad=True)
        z = torch.matmul(x, w) + b
        # binary_cross_entropy_with_logits(z, y), written out
        loss = (z.clamp(min=0) - z * y + (1 + (-z.abs()).exp()).log()).mean()
        print(f"Gradient function for z = {z.grad_fn}")
        print(f"Gradient function for loss = {loss.grad_fn}")
        loss.backward()
        print(w.grad)
        print(b.grad)
        z = torch.matmul(x, w) + b
        print(z.requires_grad)
        with torch.no_grad():
            z = torch.matmul(x, w) + b
        print(z.requires_grad)
        z = torch.matmul(x, w) + b
        z_det = z.detach()
        print(z_det.requires_grad)
    text = _same_printout(torch, cell)
    assert "Gradient function for z = <AddBackward0 object at 0x...>" in text
    assert "Gradient function for loss = <MeanBackward0 object at 0x...>" in text
    assert text.endswith("True\nFalse\nFalse\n")


# --------------------------------------------------------------------------- learning with examples
N, D_IN, H, D_OUT = 64, 1000, 100, 10


@pytest.fixture(scope="module")
def net_data():
    """The two-layer-net tutorial's random data, made once in NumPy for both libraries."""
    rng = np.random.default_rng(1)
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in
            [("x", (N, D_IN)), ("y", (N, D_OUT)), ("w1", (D_IN, H)), ("w2", (H, D_OUT))]}


def _two_layer_net_by_hand(torch, data, steps):
    x, y = torch.tensor(data["x"]), torch.tensor(data["y"])
    w1, w2 = torch.tensor(data["w1"]), torch.tensor(data["w2"])
    learning_rate = 1e-6
    losses = []
    for _ in range(steps):
        h = x.mm(w1)
        h_relu = h.clamp(min=0)
        y_pred = h_relu.mm(w2)
        loss = (y_pred - y).pow(2).sum().item()
        losses.append(loss)
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.t().mm(grad_y_pred)
        grad_h_relu = grad_y_pred.mm(w2.t())
        grad_h = grad_h_relu.clone()
        grad_h[h < 0] = 0
        grad_w1 = x.t().mm(grad_h)
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2
    return np.array(losses), w1, w2


def _two_layer_net_autograd(torch, data, steps, relu=None, freeze_w2=False):
    x, y = torch.tensor(data["x"]), torch.tensor(data["y"])
    w1 = torch.tensor(data["w1"], requires_grad=True)
    w2 = torch.tensor(data["w2"], requires_grad=True)
    if freeze_w2:
        w2.requires_grad_(False)
    learning_rate = 1e-6
    losses = []
    for _ in range(steps):
        if relu is None:
            y_pred = x.mm(w1).clamp(min=0).mm(w2)
        else:
            y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            if not freeze_w2:
                w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            if not freeze_w2:
                w2.grad.zero_()
    return np.array(losses), w1, w2


def _my_relu(torch):
    class MyReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input
    return MyReLU.apply


def _assert_training_matches(e_losses, t_losses):
    assert e_losses[-1] < 1e-3 * e_losses[0]  # the loss falls
    # float32 agreement; once the loss has fallen a million-fold it is the small difference
    # of large sums, so its last digits are rounding noise: hence the absolute term
    np.testing.assert_allclose(e_losses, t_losses, rtol=3e-4, atol=1e-4)


def test_two_layer_net_with_tensors_by_hand(torch, net_data):
    e_losses, e_w1, e_w2 = _two_layer_net_by_hand(ember, net_data, 500)
    t_losses, t_w1, t_w2 = _two_layer_net_by_hand(torch, net_data, 500)
    _assert_training_matches(e_losses, t_losses)
    np.testing.assert_allclose(e_w1.numpy(), t_w1.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(e_w2.numpy(), t_w2.numpy(), rtol=1e-4, atol=1e-5)


def test_two_layer_net_with_autograd(torch, net_data):
    e_losses, e_w1, e_w2 = _two_layer_net_autograd(ember, net_data, 500)
    t_losses, t_w1, t_w2 = _two_layer_net_autograd(torch, net_data, 500)
    _assert_training_matches(e_losses, t_losses)
    np.testing.assert_allclose(e_w1.detach().numpy(), t_w1.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(e_w2.detach().numpy(), t_w2.detach().numpy(), rtol=1e-4,
                               atol=1e-5)


def test_autograd_and_by_hand_nets_agree(net_data):
    by_hand, _, _ = _two_layer_net_by_hand(ember, net_data, 30)
    auto, _, _ = _two_layer_net_autograd(ember, net_data, 30)
    np.testing.assert_allclose(auto, by_hand, rtol=1e-5)


def test_two_layer_net_with_custom_relu_function(torch, net_data):
    e_losses, _, _ = _two_layer_net_autograd(ember, net_data, 60, relu=_my_relu(ember))
    t_losses, _, _ = _two_layer_net_autograd(torch, net_data, 60, relu=_my_relu(torch))
    _assert_training_matches(e_losses, t_losses)
    plain, _, _ = _two_layer_net_autograd(ember, net_data, 60)
    np.testing.assert_allclose(e_losses, plain, rtol=1e-5)


def test_freezing_the_second_layer(torch, net_data):
    for lib in (ember, torch):
        losses, w1, w2 = _two_layer_net_autograd(lib, net_data, 40, freeze_w2=True)
        assert losses[-1] < losses[0]
        np.testing.assert_array_equal(w2.numpy(), net_data["w2"])  # unchanged
        assert w2.grad is None and not w2.requires_grad
        assert w1.grad is not None
        assert not np.array_equal(w1.detach().numpy(), net_data["w1"])
    e_losses, _, _ = _two_layer_net_autograd(ember, net_data, 40, freeze_w2=True)
    t_losses, _, _ = _two_layer_net_autograd(torch, net_data, 40, freeze_w2=True)
    np.testing.assert_allclose(e_losses, t_losses, rtol=2e-4)


# --------------------------------------------------------------------------- polynomial fits
COEFFS = np.array([0.2, -0.4, 0.1, 0.3], dtype=np.float32)  # "random" initial a, b, c, d


def _fit_sin_polynomial(torch, steps):
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    a, b, c, d = (torch.tensor(v, requires_grad=True) for v in COEFFS)
    learning_rate = 1e-6
    losses = []
    for _ in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return np.array(losses), [t.item() for t in (a, b, c, d)]


def test_polynomial_fit_of_sin_with_grad_none(torch):
    e_losses, e_coef = _fit_sin_polynomial(ember, 2000)
    t_losses, t_coef = _fit_sin_polynomial(torch, 2000)
    assert e_losses[-1] < 0.1 * e_losses[0]
    np.testing.assert_allclose(e_losses, t_losses, rtol=2e-4)
    np.testing.assert_allclose(e_coef, t_coef, rtol=1e-3, atol=1e-5)


def _legendre(torch):
    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)
    return LegendrePolynomial3


def _fit_legendre(torch, steps):
    LegendrePolynomial3 = _legendre(torch)  # the tutorial's name
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    a = torch.full((), 0.0, requires_grad=True)
    b = torch.full((), -1.0, requires_grad=True)
    c = torch.full((), 0.0, requires_grad=True)
    d = torch.full((), 0.3, requires_grad=True)
    learning_rate = 5e-6
    losses = []
    for _ in range(steps):
        P3 = LegendrePolynomial3.apply  # the tutorial's name
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return np.array(losses), [t.item() for t in (a, b, c, d)], y_pred.grad_fn.name()


def test_legendre_polynomial_custom_function(torch):
    e_losses, e_coef, e_name = _fit_legendre(ember, 2000)
    t_losses, t_coef, t_name = _fit_legendre(torch, 2000)
    assert e_name == t_name == "AddBackward0"
    assert e_losses[-1] < 0.5 * e_losses[0]
    np.testing.assert_allclose(e_losses, t_losses, rtol=2e-4)
    np.testing.assert_allclose(e_coef, t_coef, rtol=1e-3, atol=1e-5)


def test_legendre_function_passes_gradcheck(torch):
    for lib in (ember, torch):
        x = lib.tensor([-0.9, 0.1, 0.7], dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradcheck(_legendre(lib).apply, (x,))
