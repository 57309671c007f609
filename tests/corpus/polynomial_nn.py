"""pytorch.org "Learning PyTorch with Examples": fitting sin(x) with a third-order polynomial,
as nn.Sequential with RMSprop, then as a custom nn.Module, checkpointed and resumed."""

import math
import os
import sys
import tempfile

import torch

from _corpus import report

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
dtype = torch.float

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
with torch.no_grad():
    model[0].weight.copy_(torch.tensor([[0.1, -0.2, 0.05]]))
    model[0].bias.fill_(0.0)
loss_fn = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
losses = []
for t in range(200):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 50 == 49:
        losses.append(loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
linear_layer = model[0]
fit = [linear_layer.bias.item()] + [linear_layer.weight[:, i].item() for i in range(3)]


class Polynomial3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(0.1))
        self.b = torch.nn.Parameter(torch.tensor(-0.1))
        self.c = torch.nn.Parameter(torch.tensor(0.2))
        self.d = torch.nn.Parameter(torch.tensor(-0.05))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

    def string(self):
        return f"y = {self.a.item():.4f} + {self.b.item():.4f} x + {self.c.item():.4f} x^2 + {self.d.item():.4f} x^3"


def train(model, optimizer, steps):
    criterion = torch.nn.MSELoss(reduction="sum")
    for t in range(steps):
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


poly = Polynomial3().to(device)
opt = torch.optim.SGD(poly.parameters(), lr=1e-6, momentum=0.5)
first = train(poly, opt, 100)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "poly.pt")
    torch.save({"epoch": 100, "model_state_dict": poly.state_dict(),
                "optimizer_state_dict": opt.state_dict(), "loss": first}, path)
    resumed = Polynomial3()
    resumed_opt = torch.optim.SGD(resumed.parameters(), lr=1e-6, momentum=0.5)
    checkpoint = torch.load(path, weights_only=True)
    resumed.load_state_dict(checkpoint["model_state_dict"])
    resumed_opt.load_state_dict(checkpoint["optimizer_state_dict"])
    torch.save(resumed, os.path.join(tmp, "whole.pt"))
    with torch.serialization.safe_globals([Polynomial3]):
        whole = torch.load(os.path.join(tmp, "whole.pt"))
after_resume = train(resumed, resumed_opt, 100)
uninterrupted = train(poly, opt, 100)
with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
    amp_pred = model(xx[:5])

report(losses=losses, fit=fit, first=first, after_resume=after_resume,
       uninterrupted=uninterrupted, result=poly.string(), whole=whole.string(),
       amp_dtype=str(amp_pred.dtype), amp_pred=amp_pred, argv=sys.argv[1:])
