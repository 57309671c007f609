"""A small CNN classifying scikit-learn's 8x8 handwritten digits.

The standard PyTorch training loop: a ``Dataset`` of tensors, a shuffling ``DataLoader``, an
``nn.Module`` with two conv/pool stages and a linear head, cross-entropy, Adam, ``model.train()``
and ``model.eval()`` with ``torch.no_grad()`` for evaluation, and ``state_dict`` saved and
reloaded. The data set (1,797 images) ships with scikit-learn, an optional dependency:
``pip install scikit-learn`` (or ``pip install ".[demo]"``).
Run with ``python examples/digits_cnn.py``.
"""

from __future__ import annotations

import argparse
import io
import sys
import time

import ember as torch
import ember.nn.functional as F
from ember import nn
from ember.utils.data import DataLoader, TensorDataset


class DigitsCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)   # 8x8 -> 8x8
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)  # 4x4 -> 4x4
        self.dropout = nn.Dropout(0.25)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)   # -> 16 x 4 x 4
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)   # -> 32 x 2 x 2
        x = torch.flatten(x, 1)
        return self.fc(self.dropout(x))


def load_data(seed: int):
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("digits_cnn.py needs scikit-learn for its data set: pip install scikit-learn "
                 "(or pip install \".[demo]\")")
    digits = load_digits()
    images = digits.images.astype("float32") / 16.0   # pixel values 0..16 -> 0..1
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.25, random_state=seed, stratify=digits.target)
    # unsqueeze(1) adds the channel dimension: (N, 8, 8) -> (N, 1, 8, 8)
    return (TensorDataset(torch.from_numpy(x_train).unsqueeze(1), torch.from_numpy(y_train).long()),
            TensorDataset(torch.from_numpy(x_test).unsqueeze(1), torch.from_numpy(y_test).long()))


def evaluate(model: nn.Module, loader: DataLoader) -> tuple[float, float]:
    model.eval()
    total_loss, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            total_loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(dim=1) == y).sum().item()
            n += len(y)
    return total_loss / n, correct / n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--fast", action="store_true", help="one epoch")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    epochs = 1 if args.fast else args.epochs
    torch.manual_seed(args.seed)

    train_set, test_set = load_data(args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)
    print(f"digits: {len(train_set)} training and {len(test_set)} test images of 8x8 pixels")

    model = DigitsCNN()
    print(model)
    print(f"parameters: {sum(p.numel() for p in model.parameters())}")
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    loss0, acc0 = evaluate(model, test_loader)
    print(f"before training: test loss {loss0:.4f}, accuracy {acc0:.1%}")
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        running, seen = 0.0, 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item() * len(y)
            seen += len(y)
        test_loss, test_acc = evaluate(model, test_loader)
        print(f"epoch {epoch}: train loss {running / seen:.4f}, test loss {test_loss:.4f}, "
              f"test accuracy {test_acc:.1%}")
    print(f"trained {epochs} epoch(s) in {time.perf_counter() - start:.1f} s")

    # Save and reload the weights, as one would with torch.save / torch.load.
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    restored = DigitsCNN()
    restored.load_state_dict(torch.load(buffer))
    print(f"reloaded state_dict gives the same accuracy: "
          f"{evaluate(restored, test_loader)[1] == test_acc}")
    print(f"test loss fell from {loss0:.4f} to {test_loss:.4f}; accuracy {test_acc:.1%}")


if __name__ == "__main__":
    main()
