"""Module backward hooks (``register_full_backward_hook`` / ``register_full_backward_pre_hook``).

As torch's ``BackwardHook``: the module's tensor inputs and outputs pass through identity
autograd Functions. When the gradients w.r.t. the outputs arrive, the output node runs the
pre-hooks ``hook(module, grad_output)`` (which may return new grad_output); when the
gradients w.r.t. the inputs are computed, the input node runs the hooks
``hook(module, grad_input, grad_output)`` (which may return new grad_input).
"""

from __future__ import annotations

import warnings

from ..._tensor import Tensor, _make
from ...autograd.function import Function
from ...autograd.grad_mode import state as _grad_state

__all__ = ["finish_backward_hooks", "setup_backward_hooks"]


class _BackwardHookState:
    """One module call's bookkeeping: tuples are padded with None for non-tensor positions."""

    __slots__ = ("grad_outputs", "hooks", "input_index", "module", "n_inputs", "n_outputs",
                 "output_index", "pre_hooks")

    def __init__(self, module, hooks: list, pre_hooks: list) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_index = self.output_index = None


def _pack(indices, values, size: int) -> tuple:
    out = [None] * size
    for i, v in zip(indices, values):
        out[i] = v
    return tuple(out)


def _alias(tensors: tuple, ctx) -> tuple:
    """Fresh aliases of ``tensors`` (same data and version counter); those that need no grad
    are marked non-differentiable, so wrapping a module changes no ``requires_grad``."""
    out = []
    for t in tensors:
        a = _make(t._data)
        a._vc = t._vc
        out.append(a)
    ctx.mark_non_differentiable(*[a for a, t in zip(out, tensors) if not t._requires_grad])
    return tuple(out)


class BackwardHookFunction(Function):
    """Identity on the module's inputs; its backward runs the full backward hooks."""

    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        return _alias(tensors, ctx)

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        if state.grad_outputs is None:  # the output node never ran (or hooks already fired)
            return (None, *grads)
        res = _pack(state.input_index, grads, state.n_inputs)
        for hook in state.hooks:
            out = hook(state.module, res, state.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        state.grad_outputs = None
        return (None, *(res[i] for i in state.input_index))


class BackwardHookOutputFunction(Function):
    """Identity on the module's outputs; its backward runs the backward pre-hooks and keeps
    grad_output for the full hooks."""

    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        ctx.set_materialize_grads(False)  # hooks see None for an output that got no gradient
        return _alias(tensors, ctx)

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        state.grad_outputs = _pack(state.output_index, grads, state.n_outputs)
        if state.pre_hooks:
            expected = len(state.grad_outputs)
            for hook in state.pre_hooks:
                out = hook(state.module, state.grad_outputs)
                if out is None:
                    continue
                if len(out) != expected:
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(out)}, but expected {expected}")
                state.grad_outputs = out
        local = state.grad_outputs
        if state.input_index is None:
            warnings.warn("Full backward hook is firing when gradients are computed with respect "
                          "to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=2)
            grad_inputs = (None,) * state.n_inputs
            for hook in state.hooks:
                res = hook(state.module, grad_inputs, state.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            state.grad_outputs = None
        return (None, *(local[i] for i in state.output_index))


def _apply_on_tensors(fn_cls, state, args: tuple):
    """Pass the tensors among ``args`` through ``fn_cls``; (new args, their indices) or
    (args, None) when none requires grad (or grad mode is off)."""
    idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    if not (_grad_state.grad_enabled and any(args[i]._requires_grad for i in idx)):
        return args, None
    new = fn_cls.apply(state, *(args[i] for i in idx))
    out = list(args)
    for i, t in zip(idx, new):
        out[i] = t
    return (tuple(out) if type(args) is tuple else type(args)(*out)), idx


def setup_backward_hooks(module, args: tuple, hooks: list | None = None,
                         pre_hooks: list | None = None):
    """Wrap ``args`` (the module's positional inputs); returns (state, new args)."""
    if hooks is None:
        hooks = list(module._backward_hooks.values()) if module._is_full_backward_hook else []
    if pre_hooks is None:
        pre_hooks = list(module._backward_pre_hooks.values())
    state = _BackwardHookState(module, hooks, pre_hooks)
    args, state.input_index = _apply_on_tensors(BackwardHookFunction, state, args)
    state.n_inputs = len(args)
    return state, args


def finish_backward_hooks(state: _BackwardHookState, result):
    """Wrap the module's output (a tensor or a tuple of them); returns the new output."""
    if not isinstance(result, (Tensor, tuple)):
        warnings.warn("For backward hooks to be called, module output should be a Tensor or a "
                      f"tuple of Tensors but received {type(result)}", stacklevel=3)
    is_tuple = isinstance(result, tuple)
    outs = result if is_tuple else (result,)
    outs, state.output_index = _apply_on_tensors(BackwardHookOutputFunction, state, outs)
    state.n_outputs = len(outs)
    return outs if is_tuple else outs[0]
