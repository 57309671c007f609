"""A two-layer network with hand-written forward and backward passes, on tensors only.

This is "PyTorch: Tensors" from PyTorch's "Learning PyTorch with Examples": a fully connected
ReLU network with one hidden layer, trained to fit random data by minimising the squared
Euclidean distance between its output and the target. No autograd: the backward pass is
computed by hand with tensor operations. Run with ``python examples/two_layer_net_by_hand.py``.
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

    # Create random input and output data
    x = torch.randn(N, D_in, device=device, dtype=dtype)
    y = torch.randn(N, D_out, device=device, dtype=dtype)

    # Randomly initialize weights
    w1 = torch.randn(D_in, H, device=device, dtype=dtype)
    w2 = torch.randn(H, D_out, device=device, dtype=dtype)

    learning_rate = 1e-6
    first = None
    for t in range(steps):
        # Forward pass: compute predicted y
        h = x.mm(w1)
        h_relu = h.clamp(min=0)
        y_pred = h_relu.mm(w2)

        # Compute and print loss
        loss = (y_pred - y).pow(2).sum().item()
        first = loss if first is None else first
        if t % 100 == 99 or t == 0 or t == steps - 1:
            print(t, loss)

        # Backprop to compute gradients of w1 and w2 with respect to loss
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.t().mm(grad_y_pred)
        grad_h_relu = grad_y_pred.mm(w2.t())
        grad_h = grad_h_relu.clone()
        grad_h[h < 0] = 0
        grad_w1 = x.t().mm(grad_h)

        # Update weights using gradient descent
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2

    print(f"loss fell from {first:.1f} to {loss:.4f} in {steps} steps")
    return loss


if __name__ == "__main__":
    main()
