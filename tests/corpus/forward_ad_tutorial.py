"""Forward-mode AD, in the style of pytorch.org's "Forward-mode Automatic Differentiation"
tutorial: dual tensors, Jacobian-vector products of a function and of a module's parameters,
a custom Function with a jvp rule, and a Hessian-vector product by forward-over-reverse."""

import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
import torch.nn.functional as F

from _corpus import init_, report, sines

primal = sines(10, 10, dtype=torch.float64)
tangent = sines(10, 10, phase=1.0, dtype=torch.float64)


def fn(x, y):
    return x ** 2 + y ** 2


# the basics: make_dual, run the function, unpack_dual
with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    assert fwAD.unpack_dual(dual_input).tangent is tangent
    plain_tensor = sines(10, 10, phase=2.0, dtype=torch.float64)
    dual_output = fn(dual_input, plain_tensor)
    jvp = fwAD.unpack_dual(dual_output).tangent
assert fwAD.unpack_dual(dual_output).tangent is None  # tangents end with the level

# a module's parameters as dual tensors (the tutorial's pattern before torch.func)
model = init_(nn.Linear(5, 5))
inp = sines(16, 5, phase=0.3)
params = {name: p for name, p in model.named_parameters()}
tangents = {name: sines(*p.shape, phase=0.7) for name, p in params.items()}
with fwAD.dual_level():
    for name, p in params.items():
        delattr(model, name)
        setattr(model, name, fwAD.make_dual(p, tangents[name]))
    out = model(inp)
    module_jvp = fwAD.unpack_dual(out).tangent


# a custom Function with its own forward-mode rule
class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gI):
        gO = gI * ctx.result
        del ctx.result
        return gO


fn_apply = Fn.apply
x = sines(10, dtype=torch.float64)
t = sines(10, phase=1.0, dtype=torch.float64)
with fwAD.dual_level():
    dual_out = fn_apply(fwAD.make_dual(x, t))
    custom_jvp = fwAD.unpack_dual(dual_out).tangent

# a Hessian-vector product: forward mode over reverse mode
w = sines(8, dtype=torch.float64).requires_grad_()
v = sines(8, phase=0.4, dtype=torch.float64)
with fwAD.dual_level():
    wd = fwAD.make_dual(w, v)
    loss = (torch.tanh(wd) * wd.exp()).sum() + F.softplus(wd @ wd)
    (g,) = torch.autograd.grad(loss, wd, create_graph=True)
    hvp = fwAD.unpack_dual(g).tangent

report(jvp=jvp, module_jvp=module_jvp, custom_jvp=custom_jvp, hvp=hvp,
       expected_jvp=2 * primal * tangent)
