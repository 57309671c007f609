"""``torch.autograd.backward`` and ``torch.autograd.grad``: check the arguments as torch does,
then run the engine. A module of its own so that ``gradcheck`` and ``functional`` import
``grad`` from here, not from the package that imports them."""

from __future__ import annotations

from .._backend import FLOAT_KINDS, xp_of
from .._tensor import Tensor, _make


def _as_tuple(x) -> tuple:
    if isinstance(x, Tensor):
        return (x,)
    if x is None:
        return ()
    return tuple(x)


def _make_grads(outputs: tuple, grads: tuple, create_graph: bool) -> list:
    """Check user-given output gradients, or create ones for scalar outputs (torch's rules)."""
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad requires one gradient per output: got {len(grads)} gradients "
                           f"for {len(outputs)} outputs")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if o._requires_grad:
                if o._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if o._data.dtype.kind not in FLOAT_KINDS:
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {o.dtype}")
            g = _make(xp_of(o._data).ones(o._data.shape, dtype=o._data.dtype))
        elif not isinstance(g, Tensor):
            if isinstance(g, (int, float)):
                g = _make(xp_of(o._data).full(o._data.shape, g, dtype=o._data.dtype))
            else:
                raise TypeError(f"gradients can be either Tensors or None, but got "
                                f"{type(g).__name__}")
        else:
            if g._data.shape != o._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape} and output[{i}] has a shape of {o.shape}.")
            if g._data.dtype != o._data.dtype and o._data.dtype.kind in FLOAT_KINDS:
                g = g.to(o.dtype)
        out.append(g)
    return out


def _not_a_tensor_error(obj) -> RuntimeError:
    # torch raises RuntimeError (not TypeError) for this
    return RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                        f"{type(obj).__name__}")


def _check_outputs(outputs: tuple) -> None:
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            raise TypeError(f"backward expects Tensors as outputs, but element {i} is a "
                            f"{type(o).__name__}")
        if not o._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables=None, inputs=None) -> None:
    """``torch.autograd.backward``: accumulate gradients of ``tensors`` into leaves' ``.grad``."""
    from .engine import run_backward  # lazy: the engine loads on first backward (import time)
    outputs = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(outputs)
    if isinstance(grad_tensors, Tensor) or grad_tensors is None:
        pass
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_tuple(inputs) if inputs is not None else None
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    _check_outputs(outputs)
    grads = _make_grads(outputs, grads, create_graph)
    if inputs is not None:
        for t in inputs:
            if not isinstance(t, Tensor):
                raise _not_a_tensor_error(t)
            if not t._requires_grad:  # torch's wording: it retains grads of non-leaf inputs
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    run_backward(list(outputs), grads, retain_graph, create_graph,
                 list(inputs) if inputs is not None else None, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """``torch.autograd.grad``: the gradients of ``outputs`` w.r.t. ``inputs``, as a tuple."""
    from .engine import run_backward  # lazy: the engine loads on first backward (import time)
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) is not supported by "
                                  "ember yet")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError("grad requires non-empty inputs.")
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    if retain_graph is None:
        retain_graph = create_graph
    _check_outputs(outs)
    for t in ins:
        if not isinstance(t, Tensor):
            raise _not_a_tensor_error(t)
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _make_grads(outs, grads, create_graph)
    result = run_backward(list(outs), grads, retain_graph, create_graph, list(ins),
                          accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(ins, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
            if materialize_grads:
                g = _make(xp_of(t._data).zeros(t._data.shape, dtype=t._data.dtype))
        elif not create_graph and g._requires_grad:
            g = g.detach()
        out.append(g)
    return tuple(out)
