"""The two-layer network again, with autograd computing the backward pass.

This is "PyTorch: Tensors and autograd" from PyTorch's "Learning PyTorch with Examples": the
weights are created with ``requires_grad=True``, ``loss.backward()`` fills their ``.grad``, and
the update runs under ``torch.no_grad()``. Run with ``python examples/two_layer_net_autograd.py``.
"""

from __future__ import annotations

import argparse

import ember as torch


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--fast", action="store_true", help="train for 50 steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps = 50 if args.fast else args.steps
    torch.manual_seed(args.seed)

    dtype = torch.float
    device = torch.device("cpu")

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10

    # Random tensors for input and output; they do not need gradients.
    x = torch.randn(N, D_in, device=device, dtype=dtype)
    y = torch.randn(N, D_out, device=device, dtype=dtype)

    # Random tensors for the weights; requires_grad=True asks autograd for their gradients.
    w1 = torch.randn(D_in, H, device=device, dtype=dtype, requires_grad=True)
    w2 = torch.randn(H, D_out, device=device, dtype=dtype, requires_grad=True)

    learning_rate = 1e-6
    first = None
    for t in range(steps):
        # Forward pass: the same operations as by hand, but no intermediate values are kept
        # for the backward pass: autograd records what it needs.
        y_pred = x.mm(w1).clamp(min=0).mm(w2)

        # loss is a 0-dim tensor; loss.item() gets its value as a Python number.
        loss = (y_pred - y).pow(2).sum()
        first = loss.item() if first is None else first
        if t % 100 == 99 or t == 0 or t == steps - 1:
            print(t, loss.item())

        # Backward pass: gradient of loss with respect to every tensor with requires_grad=True.
        loss.backward()

        # Update the weights by hand: wrapped in torch.no_grad() since the weights require
        # grad but the update itself must not be tracked.
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad

            # Zero the gradients after updating them, since backward() accumulates.
            w1.grad.zero_()
            w2.grad.zero_()

    print(f"loss fell from {first:.1f} to {loss.item():.4f} in {steps} steps")
    return loss.item()


if __name__ == "__main__":
    main()
