"""pytorch.org "Learning PyTorch with Examples: Defining new autograd Functions" and "Extending
PyTorch": LegendrePolynomial3, a custom linear Function checked with gradcheck, and a module that
wraps a Function, trained, checkpointed and saved whole."""

import io
import math

import torch
from torch.autograd import Function, gradcheck

from _corpus import report, sines


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class LinearFunction(Function):
    @staticmethod
    def forward(input, weight, bias):
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class Linear(torch.nn.Module):
    def __init__(self, input_features, output_features):
        super().__init__()
        self.weight = torch.nn.Parameter(sines(output_features, input_features, scale=0.3))
        self.bias = torch.nn.Parameter(torch.zeros(output_features))

    def forward(self, input):
        return LinearFunction.apply(input, self.weight, self.bias)


dtype = torch.float
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
torch.backends.cudnn.deterministic = True

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)
a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
learning_rate = 5e-6
legendre_losses = []
for t in range(300):
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        legendre_losses.append(loss.item())
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

inputs = (sines(4, 3, dtype=torch.double).requires_grad_(),
          sines(2, 3, phase=1.0, dtype=torch.double).requires_grad_(),
          sines(2, phase=2.0, dtype=torch.double).requires_grad_())
grad_ok = gradcheck(LinearFunction.apply, inputs, eps=1e-6, atol=1e-4)

layer = Linear(3, 2)
opt = torch.optim.Adam(layer.parameters(), lr=0.05)
xs, ys = sines(16, 3), sines(16, 2, phase=1.5)
losses = []
for step in range(10):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(layer(xs), ys)
    loss.backward()
    opt.step()
    losses.append(loss.item())
buf = io.BytesIO()
torch.save({"layer": layer.state_dict(), "opt": opt.state_dict()}, buf)
buf.seek(0)
restored = torch.load(buf)
buf = io.BytesIO()
torch.save(layer, buf)
buf.seek(0)
torch.serialization.add_safe_globals([Linear])
whole = torch.load(buf)
with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
    amp = torch.mm(xs[:2], whole.weight.t())

report(legendre_losses=legendre_losses, coeffs=[a.item(), b.item(), c.item(), d.item()],
       grad_ok=grad_ok, losses=losses, restored_bias=restored["layer"]["bias"],
       whole_out=whole(xs[:3]), amp_dtype=str(amp.dtype), amp=amp)
