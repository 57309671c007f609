"""``gradcheck`` / ``gradgradcheck``: compare autograd with central finite differences.

As in torch: every float64 input that requires grad is perturbed by ``eps`` element by
element (numerical Jacobian), the analytical Jacobian is built one output element at a time
with ``autograd.grad``, and the two must agree within ``atol + rtol * |numerical|``.
"""

from __future__ import annotations

import warnings

from .._backend import host, to_host, xp_of
from .._tensor import Tensor, _make
from .api import grad as autograd_grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the Jacobians disagree (a RuntimeError, as in torch)."""


def _as_tuple(x) -> tuple:
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _diff_inputs(inputs: tuple) -> list[tuple[int, Tensor]]:
    return [(i, t) for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(func, inputs) -> tuple:
    return tuple(o for o in _as_tuple(func(*inputs)))


def _as_float64(array):
    """A host float64 copy of ``array`` as a flat row of the Jacobian."""
    return host.asarray(to_host(array), dtype=host.float64).reshape(-1)


def _numerical_jacobians(func, inputs, eps: float) -> list:
    """jac[i][j]: d output j / d input i, shape (input numel, output numel)."""
    diff = _diff_inputs(inputs)
    outs = _outputs(func, inputs)  # not under no_grad: func may itself call autograd
    jacs = [[host.zeros((t.numel(), o.numel())) for o in outs] for _, t in diff]
    for k, (_, t) in enumerate(diff):
        flat = t._data.reshape(-1)  # a view when contiguous; else perturb via a copy below
        contiguous = xp_of(t._data).shares_memory(flat, t._data)
        for e in range(t.numel()):
            orig = flat[e]
            vals = []
            for sign in (1, -1):
                if contiguous:
                    flat[e] = orig + sign * eps
                else:
                    idx = host.unravel_index(e, t._data.shape)
                    t._data[idx] = orig + sign * eps
                vals.append([_as_float64(o._data).copy() for o in _outputs(func, inputs)])
            if contiguous:
                flat[e] = orig
            else:
                t._data[host.unravel_index(e, t._data.shape)] = orig
            for j in range(len(outs)):
                jacs[k][j][e] = (vals[0][j] - vals[1][j]) / (2 * eps)
    return jacs


def _analytical_jacobians(func, inputs, nondet_tol: float = 0.0):
    diff = _diff_inputs(inputs)
    outs = _outputs(func, inputs)
    jacs = [[host.zeros((t.numel(), o.numel())) for o in outs] for _, t in diff]
    tensors = [t for _, t in diff]
    for j, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for e in range(o.numel()):
            seed = xp_of(o._data).zeros(o._data.size, dtype=o._data.dtype)
            seed[e] = 1
            grads = autograd_grad(o, tensors, _make(seed.reshape(o._data.shape)),
                                  retain_graph=True, allow_unused=True)
            for k, g in enumerate(grads):
                if g is not None:
                    jacs[k][j][:, e] = _as_float64(g._data)
    return outs, jacs


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked=None) -> bool:
    """``torch.autograd.gradcheck``: True if analytical and numerical Jacobians agree."""
    inputs = _as_tuple(inputs)
    diff = _diff_inputs(inputs)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for _, t in diff:
        if t.dtype.name != "float64":
            warnings.warn(f"Input #{inputs.index(t)} requires gradient and is not a double "
                          "precision floating point. This check will likely fail if all the "
                          "inputs are not of double precision floating point. ", UserWarning,
                          stacklevel=2)
    outs, analytical = _analytical_jacobians(func, inputs)
    numerical = _numerical_jacobians(func, inputs, eps)
    for k, (i, _) in enumerate(diff):
        for j in range(len(outs)):
            a, n = analytical[k][j], numerical[k][j]
            if not host.allclose(a, n, rtol=rtol, atol=atol):
                msg = (f"Jacobian mismatch for output {j} with respect to input {i},\n"
                       f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def _fmt(m) -> str:
    from .._tensor_str import tensor_repr  # lazy: printing loads on first use
    return tensor_repr(_make(m))


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """``torch.autograd.gradgradcheck``: gradcheck of the first derivative (second order)."""
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = host.random.default_rng(0)  # drawn on the host, then copied to each output's device
        grad_outputs = tuple(
            _make(xp_of(o._data).asarray(rng.standard_normal(o._data.shape).astype(
                o._data.dtype, copy=False))).requires_grad_(True)
            for o in outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, _ in _diff_inputs(inputs)]

    def first_derivative(*args):
        ins, gos = args[:n_in], args[n_in:]
        os = _outputs(func, ins)
        pairs = [(o, g) for o, g in zip(os, gos) if o.requires_grad]
        grads = autograd_grad([o for o, _ in pairs], [ins[i] for i in diff_idx],
                              [g for _, g in pairs], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
