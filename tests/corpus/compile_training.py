"""torch.compile in the two ways training scripts use it, written as the PyTorch tutorials do:
``model = torch.compile(model)`` with an eager loss, backward and step, and a whole training
step under ``@torch.compile`` (forward, backward, ``optimizer.step()``, ``zero_grad()``) with
``.item()`` logging outside and an LR scheduler stepped between calls. ``backend="eager"``
keeps PyTorch's run free of a C compiler; ember captures and replays whatever the backend."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from _corpus import init_, labels, report, sines


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


x = sines(32, 8)
y = labels(32, 4)
x_eval = sines(16, 8, phase=1.0)

# 1. a compiled module in the usual loop
model = init_(Net())
compiled = torch.compile(model, backend="eager")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
module_losses = []
for epoch in range(12):
    optimizer.zero_grad()
    loss = F.cross_entropy(compiled(x), y)
    loss.backward()
    optimizer.step()
    if epoch % 3 == 2:
        module_losses.append(loss.item())
compiled.eval()
with torch.no_grad():
    eval_logits = compiled(x_eval)

# 2. the whole step compiled, the schedule outside it
model2 = init_(Net(), scale=0.5)
optimizer2 = torch.optim.SGD(model2.parameters(), lr=0.2, momentum=0.9, nesterov=True)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer2, step_size=4, gamma=0.5)


@torch.compile(backend="eager")
def train_step(inputs, targets):
    optimizer2.zero_grad()
    loss = F.cross_entropy(model2(inputs), targets, label_smoothing=0.1)
    loss.backward()
    optimizer2.step()
    return loss


step_losses = []
for step in range(12):
    step_losses.append(train_step(x, y).item())
    scheduler.step()

report(module_losses=module_losses, eval_logits=eval_logits, step_losses=step_losses,
       fc1_weight=model2.fc1.weight, momentum=optimizer2.state[model2.fc2.weight]["momentum_buffer"],
       lr=optimizer2.param_groups[0]["lr"],
       state_keys=sorted(compiled.state_dict())[:3])
