"""Autograd basics: the cells of PyTorch's "Autograd: Automatic Differentiation" tutorial.

Run with ``python examples/autograd_basics.py``. It shows ``requires_grad``, ``grad_fn``,
``backward``, vector-Jacobian products, ``torch.no_grad`` and ``detach``, printing what the
PyTorch tutorial prints. Only ``import ember as torch`` differs from the PyTorch original.
"""

from __future__ import annotations

import argparse

import ember as torch


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="accepted for symmetry; already fast")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)

    print("# Tensors that track history")
    x = torch.ones(2, 2, requires_grad=True)
    print(x)
    y = x + 2
    print(y)
    print(y.grad_fn)  # y was created by an operation, so it has a grad_fn
    z = y * y * 3
    out = z.mean()
    print(z, out)

    print("\n# requires_grad_ changes the flag in place")
    a = torch.randn(2, 2)
    a = ((a * 3) / (a - 1))
    print(a.requires_grad)
    a.requires_grad_(True)
    print(a.requires_grad)
    b = (a * a).sum()
    print(b.grad_fn)

    print("\n# Gradients: out.backward() computes d(out)/dx")
    out.backward()
    print(x.grad)  # d(out)/dx = 3 * (x + 2) / 2 = 4.5

    print("\n# The graph behind a result")
    print(out.grad_fn)
    print(out.grad_fn.next_functions)
    print(out.grad_fn.next_functions[0][0].next_functions)

    print("\n# Vector-Jacobian product: y is not a scalar, so pass v to backward")
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    print(y)
    v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
    y.backward(v)
    print(x.grad)
    scale = (y / x).detach()[0]
    print(f"y = x * {int(scale.item())}, so x.grad == v * {int(scale.item())}:",
          torch.allclose(x.grad, v * scale))

    print("\n# Stop tracking history with torch.no_grad()")
    print(x.requires_grad)
    print((x ** 2).requires_grad)
    with torch.no_grad():
        print((x ** 2).requires_grad)

    print("\n# .detach() gives a tensor with the same content that does not require grad")
    print(x.requires_grad)
    y = x.detach()
    print(y.requires_grad)
    print(x.eq(y).all())

    print("\n# Gradients accumulate: zero them between backward passes")
    w = torch.ones(3, requires_grad=True)
    for step in range(3):
        (w * 2).sum().backward()
        print(f"after backward {step + 1}: w.grad = {w.grad}")
    w.grad.zero_()
    print("after w.grad.zero_():", w.grad)


if __name__ == "__main__":
    main()
