"""Higher-order gradients: grad of grad, Hessian-vector products and a gradient penalty.

``torch.autograd.grad(..., create_graph=True)`` returns gradients that are themselves part of
the graph, so they can be differentiated again. This example

1. takes the first, second and third derivatives of ``x ** 3`` and of ``sin``;
2. computes a Hessian-vector product by double backprop and checks it against the full Hessian
   from ``torch.autograd.functional.hessian``;
3. trains a small critic with a WGAN-GP style gradient penalty, ``(||d critic / d x|| - 1)^2``,
   whose own gradient needs the second derivative of the network.

Run with ``python examples/higher_order_gradients.py``.
"""

from __future__ import annotations

import argparse

import ember as torch
from ember import nn, optim


def derivatives() -> None:
    print("# Grad of grad")
    x = torch.tensor(2.0, requires_grad=True)
    y = x ** 3
    (dy,) = torch.autograd.grad(y, x, create_graph=True)     # 3x^2 = 12
    (d2y,) = torch.autograd.grad(dy, x, create_graph=True)   # 6x = 12
    (d3y,) = torch.autograd.grad(d2y, x)                     # 6
    print(f"y = x**3 at x = 2: dy/dx = {dy.item()}, d2y/dx2 = {d2y.item()}, "
          f"d3y/dx3 = {d3y.item()}")
    print("dy has a grad_fn, so it can be differentiated again:", dy.grad_fn)

    x = torch.linspace(0, 3, 4, requires_grad=True)
    g = x.sin()
    derivs = []
    for _ in range(4):
        (g,) = torch.autograd.grad(g.sum(), x, create_graph=True)
        derivs.append(g)
    print("x             :", x.detach())
    print("d/dx   sin x  :", derivs[0].detach(), " (cos x)")
    print("d2/dx2 sin x  :", derivs[1].detach(), " (-sin x)")
    print("d4/dx4 sin x  :", derivs[3].detach(), " (sin x again)")
    print("4th derivative equals sin:", torch.allclose(derivs[3], x.sin(), atol=1e-6))


def hessian_vector_product() -> None:
    print("\n# Hessian-vector product by double backprop")
    torch.manual_seed(0)
    A = torch.randn(5, 5)
    A = A @ A.T  # symmetric

    def f(w):
        return 0.5 * w @ A @ w + w.pow(4).sum()  # Hessian: A + 12 diag(w^2)

    w = torch.randn(5, requires_grad=True)
    v = torch.randn(5)
    (g,) = torch.autograd.grad(f(w), w, create_graph=True)
    (hvp,) = torch.autograd.grad(g @ v, w)      # d/dw (grad f . v) = H v
    H = torch.autograd.functional.hessian(f, w.detach())
    print("Hv by double backprop:", hvp)
    print("H @ v from the Hessian:", H @ v)
    print("H equals A + 12 diag(w^2):", torch.allclose(H, A + 12 * torch.diag(w.detach() ** 2),
                                                     atol=1e-4))
    print("Hv matches:", torch.allclose(hvp, H @ v, atol=1e-4))


def gradient_penalty(steps: int) -> None:
    print("\n# Gradient penalty (WGAN-GP style): push ||d critic(x) / dx|| towards 1")
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                           nn.Linear(32, 1))
    optimizer = optim.Adam(critic.parameters(), lr=1e-2)
    x = torch.randn(128, 2)

    def penalty() -> torch.Tensor:
        xi = x.clone().requires_grad_(True)
        out = critic(xi)
        # create_graph=True: the penalty depends on the gradient, and we backprop through it.
        (grad,) = torch.autograd.grad(out.sum(), xi, create_graph=True)
        return (grad.norm(dim=1) - 1).pow(2).mean()

    first = None
    for step in range(steps):
        optimizer.zero_grad()
        loss = penalty()
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
        if step % 25 == 0 or step == steps - 1:
            print(f"step {step:4d}  gradient penalty {loss.item():.6f}")
    print(f"penalty fell from {first:.6f} to {loss.item():.6f} in {steps} steps")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150, help="gradient-penalty steps")
    parser.add_argument("--fast", action="store_true", help="20 gradient-penalty steps")
    args = parser.parse_args(argv)
    derivatives()
    hessian_vector_product()
    gradient_penalty(20 if args.fast else args.steps)


if __name__ == "__main__":
    main()
