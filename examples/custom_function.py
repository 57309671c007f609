"""Custom autograd functions: ``MyReLU`` and ``LegendrePolynomial3`` as ``torch.autograd.Function``.

From PyTorch's "Learning PyTorch with Examples" ("PyTorch: Defining new autograd functions"):
a subclass of ``torch.autograd.Function`` implements ``forward`` and ``backward`` as static
methods, saves what backward needs with ``ctx.save_for_backward``, and is called through
``.apply``. Part 1 trains the two-layer ReLU net with ``MyReLU``; part 2 fits ``sin(x)`` on
[-pi, pi] with ``y = a + b * P3(c + d * x)``, where ``P3`` is the Legendre polynomial of degree 3.
Run with ``python examples/custom_function.py``.
"""

from __future__ import annotations

import argparse
import math

import ember as torch


class MyReLU(torch.autograd.Function):
    """ReLU with a hand-written backward."""

    @staticmethod
    def forward(ctx, input):
        # ctx stashes what backward needs; save tensors with ctx.save_for_backward.
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        # grad_output is d(loss)/d(output); return d(loss)/d(input).
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


class LegendrePolynomial3(torch.autograd.Function):
    """P3(x) = (5x^3 - 3x) / 2, with derivative P3'(x) = 3(5x^2 - 1) / 2."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


def train_relu_net(steps: int) -> tuple[float, float]:
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in)
    y = torch.randn(N, D_out)
    w1 = torch.randn(D_in, H, requires_grad=True)
    w2 = torch.randn(H, D_out, requires_grad=True)

    learning_rate = 1e-6
    first = None
    for t in range(steps):
        relu = MyReLU.apply  # call the Function through apply
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        first = loss.item() if first is None else first
        if t % 100 == 99 or t == 0 or t == steps - 1:
            print(t, loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    print(f"y_pred.grad_fn is {type(y_pred.grad_fn).__name__}; "
          f"relu(...).grad_fn is {type(relu(x[:1].mm(w1)).grad_fn).__name__}")
    return first, loss.item()


def fit_legendre(steps: int) -> tuple[float, float]:
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = torch.sin(x)

    # The weights need initialising close enough to the answer for the fit to converge.
    a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=dtype, requires_grad=True)

    learning_rate = 5e-6
    first = None
    for t in range(steps):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        first = loss.item() if first is None else first
        if t % 100 == 99 or t == 0 or t == steps - 1:
            print(t, loss.item())
        loss.backward()
        with torch.no_grad():
            for w in (a, b, c, d):
                w -= learning_rate * w.grad
                w.grad = None
    print(f"Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)")
    return first, loss.item()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="steps of the ReLU net")
    parser.add_argument("--legendre-steps", type=int, default=2000)
    parser.add_argument("--fast", action="store_true", help="50 and 200 steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps, legendre_steps = (50, 200) if args.fast else (args.steps, args.legendre_steps)
    torch.manual_seed(args.seed)

    print("# Part 1: two-layer net with MyReLU")
    first, last = train_relu_net(steps)
    print(f"relu net: loss fell from {first:.1f} to {last:.4f} in {steps} steps")

    print("\n# Part 2: fit sin(x) with a + b * P3(c + d * x)")
    first, last = fit_legendre(legendre_steps)
    print(f"legendre fit: loss fell from {first:.1f} to {last:.4f} in {legendre_steps} steps")


if __name__ == "__main__":
    main()
