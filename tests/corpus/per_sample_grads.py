"""Per-sample gradients, in the style of pytorch.org's "Per-sample-gradients" tutorial:
``vmap(grad(...))`` over a batch with ``functional_call``, checked against a loop."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from _corpus import init_, labels, report, sines


class SimpleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 4)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return F.log_softmax(self.fc3(x), dim=-1)


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


model = init_(SimpleNet())
batch_size = 16
data = sines(batch_size, 20)
targets = labels(batch_size, 4)


def compute_grad(sample, target):
    sample = sample.unsqueeze(0)
    target = target.unsqueeze(0)
    prediction = model(sample)
    loss = loss_fn(prediction, target)
    return torch.autograd.grad(loss, list(model.parameters()))


per_sample_grads_loop = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
per_sample_grads_loop = list(zip(*per_sample_grads_loop))
per_sample_grads_loop = [torch.stack(shards) for shards in per_sample_grads_loop]

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    return loss_fn(predictions, targets)


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads_loop, ft_per_sample_grads.values()):
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=1e-6, rtol=1e-5)

report(**{f"grad_{k}": v.sum(0) for k, v in ft_per_sample_grads.items()},
       norms=torch.stack([g.flatten(1).norm(dim=1) for g in ft_per_sample_grads.values()]))
