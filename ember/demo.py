"""``python -m ember.demo``: the classic two-layer network, fitted with autograd.

This is the program from PyTorch's "Learning PyTorch with Examples" (tensors and autograd),
run unchanged with ``import ember as torch``: random data, ``x.mm(w1).clamp(min=0).mm(w2)``,
a sum-of-squares loss, and manual gradient descent under ``no_grad``.
"""

from __future__ import annotations

import argparse
import time

import ember as torch


def train(steps: int = 500, seed: int = 0, log_every: int = 100, quiet: bool = False) -> list:
    """Fit the two-layer net; return the loss at every step."""
    torch.manual_seed(seed)
    dtype = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
    device = torch.device("cpu")
    n, d_in, hidden, d_out = 64, 1000, 100, 10

    x = torch.randn(n, d_in, device=device).type(dtype)
    y = torch.randn(n, d_out, device=device).type(dtype)
    w1 = torch.randn(d_in, hidden, device=device, requires_grad=True)
    w2 = torch.randn(hidden, d_out, device=device, requires_grad=True)

    learning_rate = 1e-6
    losses = []
    for t in range(steps):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        if not quiet and (t % log_every == log_every - 1 or t == 0):
            print(f"step {t + 1:4d}  loss {loss.item():14.2f}")
        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return losses


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print("ember two-layer net: 64 x 1000 -> 100 -> 10, manual SGD with autograd")
    losses = train(args.steps, args.seed)
    print(f"loss fell from {losses[0]:.1f} to {losses[-1]:.4f} in {len(losses)} steps "
          f"({time.perf_counter() - start:.2f} s)")


if __name__ == "__main__":
    main()
