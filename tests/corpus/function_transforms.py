"""Jacobians, Hessians, hvp and vhp by composing function transforms, in the style of
pytorch.org's tutorial of that name: jacrev, jacfwd, vmap, hessian and jvp-of-grad."""

import torch
import torch.nn.functional as F
from torch.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

from _corpus import report, sines


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


D = 8
weight = sines(D, D, scale=0.4, dtype=torch.float64)
bias = sines(D, scale=0.3, phase=1.0, dtype=torch.float64)
x = sines(D, phase=2.0, dtype=torch.float64)

jacobian = jacrev(predict, argnums=2)(weight, bias, x)
jacobian_fwd = jacfwd(predict, argnums=2)(weight, bias, x)
assert torch.allclose(jacobian, jacobian_fwd)

ft_jacobian, ft_jacobian_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)

batch_size = 4
xs = sines(batch_size, D, phase=3.0, dtype=torch.float64)
compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
batch_jacobian0 = compute_batch_jacobian(weight, bias, xs)


def predict_with_output_summed(weight, bias, x):
    return predict(weight, bias, x).sum(0)


batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, xs).movedim(1, 0)
assert torch.allclose(batch_jacobian0, batch_jacobian1)

hess_api = hessian(predict, argnums=2)(weight, bias, x)
hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
assert torch.allclose(hess_api, hess_fwdfwd)
assert torch.allclose(hess_api, hess_revrev)


def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def f(x):
    return x.sin().sum()


v = sines(D, phase=4.0, dtype=torch.float64)
hvp_result = hvp(f, (x,), (v,))
_, vjp_fn = vjp(grad(f), x)
(vhp_result,) = vjp_fn(v)

report(jacobian=jacobian, jacobian_weight=ft_jacobian.sum((0, 1)), jacobian_bias=ft_jacobian_bias,
       batch_jacobian=batch_jacobian0, hessian=hess_api.sum(0), hvp=hvp_result, vhp=vhp_result)
