"""pytorch.org "Automatic Differentiation with torch.autograd" and "A Gentle Introduction to
torch.autograd": gradients, no_grad/detach, vector-Jacobian products, accumulation."""

import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

from _corpus import report, sines

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.backends.cudnn.enabled = True

x = torch.ones(5)
y = torch.zeros(3)
w = sines(5, 3).requires_grad_()
b = sines(3, phase=1.0).requires_grad_()
z = torch.matmul(x, w) + b
loss = F.binary_cross_entropy_with_logits(z, y)
grad_fn_name = type(z.grad_fn).__name__
loss.backward()
w_grad, b_grad = w.grad.clone(), b.grad.clone()

z = torch.matmul(x, w) + b
with torch.no_grad():
    z_ng = torch.matmul(x, w) + b
z_det = z.detach()

inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
first = inp.grad.clone()
out.backward(torch.ones_like(out))
second = inp.grad.clone()
inp.grad.zero_()
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out))
zeroed = inp.grad.clone()

a = torch.tensor([2., 3.], requires_grad=True)
b2 = torch.tensor([6., 4.], requires_grad=True)
Q = 3 * a ** 3 - b2 ** 2
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)

u = sines(3, phase=0.3).requires_grad_()
(gu,) = torch.autograd.grad((u ** 3).sum(), u, create_graph=True)
(ggu,) = torch.autograd.grad(gu.sum(), u)

# a model trained for a few steps under the usual boilerplate, checkpointed and saved whole
model = nn.Sequential(nn.Linear(5, 3), nn.Tanh(), nn.Linear(3, 1)).to(device)
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(sines(*p.shape, scale=0.4, phase=i))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
xs, ys = sines(8, 5), sines(8, 1, phase=2.0)
losses = []
for step in range(5):
    opt.zero_grad()
    with torch.autocast(device_type=device, enabled=False):
        l = F.mse_loss(model(xs), ys)
    l.backward()
    opt.step()
    losses.append(l.item())
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "ckpt.pt")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    ck = torch.load(path, weights_only=True)
    torch.save(model, os.path.join(tmp, "model.pt"))
    whole = torch.load(os.path.join(tmp, "model.pt"), weights_only=False)
momentum_buffers = [s["momentum_buffer"] for s in ck["opt"]["state"].values()]

report(w_grad=w_grad, b_grad=b_grad, grad_fn_name=grad_fn_name, requires_grad=z.requires_grad,
       no_grad_requires=z_ng.requires_grad, detached_requires=z_det.requires_grad, first=first,
       second=second, zeroed=zeroed, a_grad=a.grad, b2_grad=b2.grad,
       check=(9 * a ** 2 == a.grad).tolist(), gu=gu, ggu=ggu, losses=losses,
       momentum_buffers=momentum_buffers, whole_out=whole(xs), whole_type=type(whole).__name__)
