"""pytorch.org "Learn the Basics: Quickstart", on synthetic 28x28 images instead of FashionMNIST."""

import os
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _corpus import init_, labels, report, sines

device = (
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)
print(f"Using {device} device")
torch.backends.cudnn.benchmark = True

training_data = TensorDataset(sines(96, 1, 28, 28), labels(96, 10))
test_data = TensorDataset(sines(32, 1, 28, 28, phase=1.0), labels(32, 10, phase=2.0))
batch_size = 16
train_dataloader = DataLoader(training_data, batch_size=batch_size)
test_dataloader = DataLoader(test_data, batch_size=batch_size)

for X, y in test_dataloader:
    print(f"Shape of X [N, C, H, W]: {X.shape}")
    print(f"Shape of y: {y.shape} {y.dtype}")
    break


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = init_(NeuralNetwork()).to(device)
print(model)

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)


def train(dataloader, model, loss_fn, optimizer):
    model.train()
    losses = []
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def test(dataloader, model, loss_fn):
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    return test_loss / num_batches, correct


losses = []
for t in range(3):
    losses += train(train_dataloader, model, loss_fn, optimizer)
test_loss, correct = test(test_dataloader, model, loss_fn)

with tempfile.TemporaryDirectory() as tmp:
    torch.save(model.state_dict(), os.path.join(tmp, "model.pth"))
    model2 = NeuralNetwork().to(device)
    model2.load_state_dict(torch.load(os.path.join(tmp, "model.pth"), weights_only=True))
    # the whole model, pickled: its class must be allowlisted to load
    torch.save(model, os.path.join(tmp, "whole.pth"))
    torch.serialization.add_safe_globals([NeuralNetwork])
    model3 = torch.load(os.path.join(tmp, "whole.pth"), weights_only=False)

x = test_data[0][0].unsqueeze(0)
with torch.no_grad():
    same2 = torch.equal(model2.eval()(x), model(x))
    same3 = torch.equal(model3.eval()(x), model(x))
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        amp_logits = model(x)

classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
report(losses=losses, test_loss=test_loss, correct=correct, same2=same2, same3=same3,
       amp_dtype=str(amp_logits.dtype), amp_logits=amp_logits,
       predicted=classes[model(x).argmax(1).item()], type3=type(model3).__name__)
