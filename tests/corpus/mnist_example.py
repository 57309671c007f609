"""pytorch/examples mnist/main.py: argparse, Adadelta with StepLR, dropout, log_softmax and
nll_loss, the device boilerplate and --save-model; on synthetic 28x28 digits."""

import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

from _corpus import init_, labels, report, sines


class Net(nn.Module):
    def __init__(self, dropout):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(2 * dropout)
        self.fc1 = nn.Linear(2304, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    losses = []
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
    return losses


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    return test_loss, correct


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--dropout", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=2)
    parser.add_argument("--save-model", action="store_true")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    torch.manual_seed(args.seed)
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = {"batch_size": 32}
    if use_accel:
        accel_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
        train_kwargs.update(accel_kwargs)

    train_loader = DataLoader(TensorDataset(sines(64, 1, 28, 28), labels(64, 10)), **train_kwargs)
    test_loader = DataLoader(TensorDataset(sines(32, 1, 28, 28, phase=2.0), labels(32, 10, 1.0)),
                             **test_kwargs)

    model = init_(Net(args.dropout)).to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    losses, lrs = [], []
    for epoch in range(1, args.epochs + 1):
        losses += train(args, model, device, train_loader, optimizer, epoch)
        lrs.append(scheduler.get_last_lr()[0])
        scheduler.step()
    test_loss, correct = test(model, device, test_loader)

    with tempfile.TemporaryDirectory() as tmp:
        if args.save_model:
            torch.save(model.state_dict(), os.path.join(tmp, "mnist_cnn.pt"))
            torch.save(model, os.path.join(tmp, "mnist_whole.pt"))
            with torch.serialization.safe_globals([Net]):
                reloaded = torch.load(os.path.join(tmp, "mnist_whole.pt"), weights_only=False)
            state = torch.load(os.path.join(tmp, "mnist_cnn.pt"), weights_only=True)
            saved = sorted(state)
        else:
            reloaded, saved = model, []
    data, _ = next(iter(test_loader))
    with torch.no_grad(), torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        amp_out = reloaded.eval()(data[:2])
    report(losses=losses, lrs=lrs, test_loss=test_loss, correct=correct, saved=saved,
           amp_dtype=str(amp_out.dtype), amp_out=amp_out)


if __name__ == "__main__":
    main()
