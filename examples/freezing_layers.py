"""Freezing layers: ``requires_grad_(False)`` keeps a layer's weights fixed while others train.

The usual fine-tuning recipe: freeze the first layer of a small network with
``layer.requires_grad_(False)``, hand the optimizer only the parameters that still require
grad, train, and check that the frozen weights are bit-for-bit unchanged while the trainable
ones moved. Run with ``python examples/freezing_layers.py``.
"""

from __future__ import annotations

import argparse

import ember as torch
from ember import nn, optim


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--fast", action="store_true", help="train for 30 steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps = 30 if args.fast else args.steps
    torch.manual_seed(args.seed)

    model = nn.Sequential(
        nn.Linear(20, 64),  # the "pretrained" feature extractor we freeze
        nn.ReLU(),
        nn.Linear(64, 32),
        nn.ReLU(),
        nn.Linear(32, 1),   # the head we fine-tune
    )
    x = torch.randn(256, 20)
    y = (x[:, :5].sum(dim=1, keepdim=True) > 0).float()

    # Freeze the first layer: its parameters stop requiring grad.
    model[0].requires_grad_(False)
    for name, p in model.named_parameters():
        print(f"{name:10s} requires_grad={p.requires_grad}")

    trainable = [p for p in model.parameters() if p.requires_grad]
    n_total = sum(p.numel() for p in model.parameters())
    n_trainable = sum(p.numel() for p in trainable)
    print(f"trainable parameters: {n_trainable} of {n_total}")

    optimizer = optim.SGD(trainable, lr=0.1, momentum=0.9)
    loss_fn = nn.BCEWithLogitsLoss()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}

    first = None
    for step in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}")

    print(f"model[0].weight.grad is {model[0].weight.grad}  (frozen: never computed)")
    for name, p in model.named_parameters():
        changed = not torch.equal(p, before[name])
        print(f"{name:10s} changed={changed}")
    frozen_ok = all(torch.equal(p, before[n]) for n, p in model.named_parameters()
                    if n.startswith("0."))
    trained_ok = all(not torch.equal(p, before[n]) for n, p in model.named_parameters()
                     if not n.startswith("0."))
    print(f"frozen layer unchanged: {frozen_ok}; other layers updated: {trained_ok}")
    accuracy = ((model(x) > 0).float() == y).float().mean().item()
    print(f"loss fell from {first:.4f} to {loss.item():.4f} in {steps} steps "
          f"(train accuracy {accuracy:.1%})")


if __name__ == "__main__":
    main()
