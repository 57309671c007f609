"""End to end: a small CNN trained for 200 SGD steps in ember and in torch from the same weights.

The data (three classes of 8x8 images: a bright band at the top, the middle or the bottom,
plus noise) is made here with NumPy. Both libraries get identical initial weights and the same
mini-batches in the same order (a non-shuffling ``DataLoader`` over a ``TensorDataset``), so
their loss curves and final weights must agree to float32 round-off accumulated over training.

Two versions: one built from ``nn`` modules with ``optim.SGD`` (momentum), and one from
functional ops on plain leaf tensors with a hand-written SGD step.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember

STEPS = 200
BATCH = 32


def make_data(n=96, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    images = 1.0 * rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    for i, k in enumerate(labels):
        images[i, 0, 3 * k:3 * k + 2, :] += 0.6
    return images.astype(np.float32), labels.astype(np.int64)


def initial_weights(seed=1):
    rng = np.random.default_rng(seed)

    def uniform(shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return {"features.0.weight": uniform((4, 1, 3, 3), 9), "features.0.bias": uniform(4, 9),
            "classifier.weight": uniform((3, 64), 64), "classifier.bias": uniform(3, 64)}


def batches(lib, images, labels):
    """The mini-batches, in order, from the library's own non-shuffling DataLoader."""
    data = importlib.import_module(lib.__name__ + ".utils.data")
    loader = data.DataLoader(data.TensorDataset(lib.tensor(images), lib.tensor(labels)),
                             batch_size=BATCH)
    step = 0
    while True:
        for x, y in loader:
            if step == STEPS:
                return
            step += 1
            yield x, y


def train_modules(lib, images, labels, weights):
    nn = importlib.import_module(lib.__name__ + ".nn")
    optim = importlib.import_module(lib.__name__ + ".optim")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
                                          nn.MaxPool2d(2))
            self.classifier = nn.Linear(64, 3)

        def forward(self, x):
            return self.classifier(self.features(x).flatten(1))

    model = Net()
    model.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    opt = optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for x, y in batches(lib, images, labels):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    final = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    return np.array(losses), final


def train_functional(lib, images, labels, weights):
    F = importlib.import_module(lib.__name__ + ".nn.functional")
    params = {k: lib.tensor(v, requires_grad=True) for k, v in weights.items()}
    lr = 0.1
    losses = []
    for x, y in batches(lib, images, labels):
        h = F.conv2d(x, params["features.0.weight"], params["features.0.bias"], padding=1)
        h = F.max_pool2d(F.relu(h), 2).flatten(1)
        logits = F.linear(h, params["classifier.weight"], params["classifier.bias"])
        loss = F.cross_entropy(logits, y)
        loss.backward()
        with lib.no_grad():
            for p in params.values():
                p -= lr * p.grad
                p.grad = None
        losses.append(loss.item())
    return np.array(losses), {k: v.detach().numpy().copy() for k, v in params.items()}


def check_agreement(e_losses, e_final, t_losses, t_final):
    assert len(e_losses) == len(t_losses) == STEPS
    assert t_losses[-10:].mean() < 0.5 * t_losses[:3].mean()  # it really trains
    np.testing.assert_allclose(e_losses[0], t_losses[0], rtol=1e-5)
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(e_losses[-1], t_losses[-1], rtol=1e-4, atol=1e-6)
    for k in t_final:
        np.testing.assert_allclose(e_final[k], t_final[k], rtol=1e-3, atol=1e-4, err_msg=k)


def test_cnn_modules_sgd_momentum_matches_torch(torch):
    nn = importlib.import_module("ember.nn")
    missing = [n for n in ("Conv2d", "ReLU", "MaxPool2d", "Linear", "Sequential",
                           "CrossEntropyLoss") if not hasattr(nn, n)]
    if missing or importlib.util.find_spec("ember.optim") is None:
        pytest.skip(f"ember.nn/optim not complete yet: missing {missing or 'ember.optim'}")
    images, labels = make_data()
    weights = initial_weights()
    torch.manual_seed(0)
    check_agreement(*train_modules(ember, images, labels, weights),
                    *train_modules(torch, images, labels, weights))


def test_cnn_functional_sgd_matches_torch(torch):
    images, labels = make_data()
    weights = initial_weights()
    check_agreement(*train_functional(ember, images, labels, weights),
                    *train_functional(torch, images, labels, weights))
