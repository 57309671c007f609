"""Train a small CNN on Fashion-MNIST with ember, printing test accuracy after each epoch.

The data is read from local files (ember never downloads). On Debian or Ubuntu:

    sudo apt-get install dataset-fashion-mnist     # -> /usr/share/datasets/fashion-mnist

elsewhere put the four files from https://github.com/zalandoresearch/fashion-mnist
(train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz,
t10k-labels-idx1-ubyte.gz) in a folder and pass ``--root FOLDER`` (a folder torchvision filled,
``FOLDER/FashionMNIST/raw/``, works too). Then:

    python examples/fashion_mnist_cnn.py --limit 5000 --epochs 2   # a quick run
    python examples/fashion_mnist_cnn.py                           # all 60,000 images

The code is plain PyTorch: replace ``import ember as torch`` with ``import torch`` and the
dataset with ``torchvision.datasets.FashionMNIST`` (plus ``transforms.ToTensor()``).
"""

from __future__ import annotations

import argparse
import sys
import time

import ember as torch
from ember import nn
from ember.utils.data import DataLoader, FashionMNIST, Subset

DEFAULT_ROOT = "/usr/share/datasets/fashion-mnist"


def to_float_image(img):
    """``transforms.ToTensor()`` for ember's images: uint8 (28, 28) -> float (1, 28, 28) in [0, 1]."""
    return img.float().div(255).unsqueeze(0)


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 8 x 14 x 14
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 7 x 7
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 7 * 7, 64), nn.ReLU(),
                                        nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model, loader) -> float:
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
            total += labels.numel()
    model.train()
    return correct / total


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="folder with the IDX files")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None,
                        help="train on the first LIMIT training images only")
    parser.add_argument("--test-limit", type=int, default=None,
                        help="evaluate on the first TEST_LIMIT test images only")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    try:
        train_set = FashionMNIST(args.root, train=True, transform=to_float_image)
        test_set = FashionMNIST(args.root, train=False, transform=to_float_image)
    except FileNotFoundError as err:
        sys.exit(f"error: {err}")
    if args.limit is not None:
        train_set = Subset(train_set, range(min(args.limit, len(train_set))))
    if args.test_limit is not None:
        test_set = Subset(test_set, range(min(args.test_limit, len(test_set))))

    torch.manual_seed(args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)
    model = SmallCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    print(f"training on {len(train_set)} images, testing on {len(test_set)}")

    for epoch in range(1, args.epochs + 1):
        start, running, batches = time.perf_counter(), 0.0, 0
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            running += loss.item()
            batches += 1
        accuracy = evaluate(model, test_loader)
        print(f"epoch {epoch}: train loss {running / batches:.4f}, "
              f"test accuracy {accuracy:.2%} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
