"""Fine-tuning in the style of the transfer-learning tutorial: a frozen feature extractor, a new
head, per-group learning rates, a scheduler, a full training checkpoint saved mid-way and resumed
in a fresh model, and the best model kept with copy.deepcopy and saved whole."""

import copy
import os
import tempfile

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, TensorDataset

from _corpus import init_, labels, report, sines

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
torch.backends.cudnn.benchmark = True


def backbone():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(),
    )


class FineTuned(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.features = backbone()
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))


def make(frozen=True):
    model = init_(FineTuned())
    if frozen:
        for param in model.features.parameters():
            param.requires_grad = False
        model.features[0].requires_grad_(True)  # fine-tune the first conv only
    return model.to(device)


def optimizer_for(model):
    return optim.SGD([
        {"params": model.features[0].parameters(), "lr": 1e-3},
        {"params": model.fc.parameters()},
    ], lr=1e-2, momentum=0.9, weight_decay=1e-4)


loader = DataLoader(TensorDataset(sines(24, 3, 8, 8), labels(24, 3)), batch_size=8)
val = (sines(8, 3, 8, 8, phase=4.0), labels(8, 3, phase=4.0))
criterion = nn.CrossEntropyLoss()


def run_epoch(model, optimizer):
    model.train()
    total = 0.0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        with torch.set_grad_enabled(True):
            outputs = model(inputs)
            _, preds = torch.max(outputs, 1)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
        total += loss.item() * inputs.size(0)
    return total / len(loader.dataset)


def evaluate(model):
    model.eval()
    with torch.no_grad():
        out = model(val[0])
        return criterion(out, val[1]).item()


model = make()
optimizer = optimizer_for(model)
scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
best_loss, best_model_wts, history = float("inf"), None, []
with tempfile.TemporaryDirectory() as tmp:
    ckpt = os.path.join(tmp, "checkpoint.tar")
    for epoch in range(4):
        history.append(run_epoch(model, optimizer))
        scheduler.step()
        val_loss = evaluate(model)
        if val_loss < best_loss:
            best_loss, best_model_wts = val_loss, copy.deepcopy(model.state_dict())
        if epoch == 1:
            torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                        "optimizer_state_dict": optimizer.state_dict(),
                        "scheduler_state_dict": scheduler.state_dict()}, ckpt)

    resumed = make()
    resumed_opt = optimizer_for(resumed)
    resumed_sched = lr_scheduler.StepLR(resumed_opt, step_size=2, gamma=0.1)
    checkpoint = torch.load(ckpt, weights_only=True)
    resumed.load_state_dict(checkpoint["model_state_dict"])
    resumed_opt.load_state_dict(checkpoint["optimizer_state_dict"])
    resumed_sched.load_state_dict(checkpoint["scheduler_state_dict"])
    resumed_history = []
    for epoch in range(checkpoint["epoch"] + 1, 4):
        resumed_history.append(run_epoch(resumed, resumed_opt))
        resumed_sched.step()

    model.load_state_dict(best_model_wts)
    torch.save(model, os.path.join(tmp, "best.pt"))
    torch.serialization.add_safe_globals([FineTuned])
    best = torch.load(os.path.join(tmp, "best.pt"), weights_only=False)

frozen_unchanged = torch.equal(model.features[1].weight, make().features[1].weight)
with torch.no_grad(), torch.autocast(device_type=device.type, dtype=torch.bfloat16):
    amp_out = best.eval()(val[0][:2])
report(history=history, resumed_history=resumed_history, best_loss=best_loss,
       lrs=[g["lr"] for g in resumed_opt.param_groups], frozen_unchanged=frozen_unchanged,
       running_mean=model.features[1].running_mean, trainable=sum(p.requires_grad for p in model.parameters()),
       amp_dtype=str(amp_out.dtype), amp_out=amp_out, best_type=type(best).__name__)
