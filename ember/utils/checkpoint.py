"""``ember.utils.checkpoint``: activation checkpointing (``checkpoint``, ``checkpoint_sequential``).

The checkpointed function runs under no_grad, so none of its intermediates are kept: only its
inputs are saved. In backward it runs again with grad enabled (with the RNG state of the first
run when ``preserve_rng_state``, so dropout draws the same masks) and its gradients are taken
through that recomputed graph.

ember has no ``saved_tensors_hooks``, so both variants are one custom ``autograd.Function``:

* ``use_reentrant=True`` is torch's reentrant variant, line for line: positional tensor inputs
  only, and backward calls ``autograd.backward`` on the recomputed outputs, so gradients of
  tensors the function closes over (parameters) are accumulated into their ``.grad`` directly.
* ``use_reentrant=False`` adds what torch's non-reentrant variant offers: keyword arguments,
  ``context_fn`` and ``determinism_check``, and outputs that require grad when only parameters
  do. The parameters of a module that is ``function`` (or owns the bound method, or sits in the
  function's closure or globals) become inputs of the node, so their gradients flow through the engine
  (``autograd.grad`` and hooks work for them); other leaves the recomputation reaches get their
  gradient accumulated into ``.grad``. ``debug`` is accepted and ignored.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .._tensor import Tensor
from ..autograd import Function, enable_grad, no_grad
from ..autograd.graph import AccumulateGrad
from ..random import fork_rng, get_rng_state, set_rng_state

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential", "detach_variable",
           "noop_context_fn"]

_DEFAULT_DETERMINISM_MODE = "default"


class CheckpointError(RuntimeError):
    """Raised when the recomputation differs from the original forward (torch's name)."""


def noop_context_fn() -> tuple[contextlib.AbstractContextManager, contextlib.AbstractContextManager]:
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """``torch.utils.checkpoint.detach_variable``: tensors detached, ``requires_grad`` kept."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "  # noqa: TRY004 (torch raises RuntimeError)
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class _Recipe:
    """What backward needs to run the function again (kept on the node, not as tensors)."""

    __slots__ = ("args", "check", "fn", "kwargs", "meta", "n_args", "recompute_ctx",
                 "rng_state")


def _rebuild(recipe: _Recipe, tensors: tuple) -> tuple[tuple, dict]:
    """The call's args and kwargs with the saved tensors put back (detached)."""
    it = iter(detach_variable(tuple(tensors)))
    args = tuple(next(it) if a is _TENSOR else a for a in recipe.args)
    kwargs = {k: next(it) if v is _TENSOR else v for k, v in recipe.kwargs.items()}
    return args, kwargs


_TENSOR = object()  # placeholder for a tensor argument in a _Recipe


def _recompute(ctx, tensors: tuple):
    recipe = ctx.recipe
    args, kwargs = _rebuild(recipe, tensors)
    with fork_rng(enabled=recipe.rng_state is not None):
        if recipe.rng_state is not None:
            set_rng_state(recipe.rng_state)
        with enable_grad(), recipe.recompute_ctx:
            outputs = recipe.fn(*args, **kwargs)
    return args, kwargs, outputs


class _ReentrantCheckpoint(Function):
    """torch's ``CheckpointFunction``."""

    @staticmethod
    def forward(ctx, recipe: _Recipe, *tensors):
        check_backward_validity(tensors)
        ctx.recipe = recipe
        ctx.save_for_backward(*tensors)
        args, kwargs = _rebuild(recipe, tensors)
        with no_grad():
            return recipe.fn(*args, **kwargs)

    @staticmethod
    def backward(ctx, *grads):
        args, _, outputs = _recompute(ctx, ctx.saved_tensors)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad = [(o, g) for o, g in zip(outputs, grads)
                     if isinstance(o, Tensor) and o.requires_grad]
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        from ..autograd import backward  # (package attribute: ``ember.autograd.backward``)
        backward([o for o, _ in with_grad], [g for _, g in with_grad])
        return (None, *(a.grad for a in args if isinstance(a, Tensor)))


class _Checkpoint(Function):
    """The non-reentrant variant: gradients returned through the engine (see the docstring)."""

    @staticmethod
    def forward(ctx, recipe: _Recipe, *tensors):
        ctx.recipe = recipe
        ctx.save_for_backward(*tensors)
        args, kwargs = _rebuild(recipe, tensors[:recipe.n_args])
        forward_ctx, recipe.recompute_ctx = recipe.recompute_ctx
        with no_grad(), forward_ctx:
            outputs = recipe.fn(*args, **kwargs)
        recipe.meta = _metadata(outputs) if recipe.check else None
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        recipe = ctx.recipe
        saved = ctx.saved_tensors
        higher_order = _grad_enabled()
        args, kwargs, outputs = _recompute(ctx, saved[:recipe.n_args])
        if recipe.meta is not None and _metadata(outputs) != recipe.meta:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values have different metadata than during "
                f"the original forward pass.\noriginal: {recipe.meta}\nrecomputed: "
                f"{_metadata(outputs)}")
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        inputs = [t for t in (*args, *kwargs.values()) if isinstance(t, Tensor)]
        targets = [t for t in (*inputs, *saved[recipe.n_args:]) if t.requires_grad]
        extra = _other_leaves([o for o, _ in pairs], targets)
        result: dict[int, Any] = {}
        if pairs and (targets or extra):
            from ..autograd import grad
            got = grad([o for o, _ in pairs], [*targets, *extra], [g for _, g in pairs],
                       allow_unused=True, create_graph=higher_order)
            result = {id(t): g for t, g in zip(targets, got)}
            for leaf, g in zip(extra, got[len(targets):]):  # closed-over leaves: accumulated
                if g is not None:
                    leaf.grad = g if leaf.grad is None else leaf.grad + g
        flat = (*inputs, *saved[recipe.n_args:])
        return (None, *(result.get(id(t)) for t in flat))


def _grad_enabled() -> bool:
    from ..autograd import is_grad_enabled
    return is_grad_enabled()


def _metadata(outputs) -> tuple | None:
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    return tuple((tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor) else None
                 for o in outs)


def _other_leaves(outputs: list, known: list) -> list:
    """Leaves requiring grad that the recomputed graph reaches besides ``known`` (iterative)."""
    known_ids = {id(t) for t in known}
    seen, found, stack = set(), [], [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in known_ids:
                found.append(node.variable)
            continue
        stack.extend(fn for fn, _ in node.next_functions)
    return found


def _module_params(function) -> list:
    """Parameters (requiring grad) of the modules ``function`` is, is a method of, closes over
    or names as globals: the non-reentrant variant links them so their gradients flow through
    the engine."""
    from ..nn import Module  # (nn loads on first use: a checkpoint user has it loaded)
    owners = [function, getattr(function, "__self__", None)]
    code, globals_ = getattr(function, "__code__", None), getattr(function, "__globals__", {})
    if code is not None:
        owners += [globals_.get(name) for name in code.co_names]
    for cell in getattr(function, "__closure__", None) or ():
        if _filled(cell):  # a module, or a list of them (checkpoint_sequential's segments)
            c = cell.cell_contents
            owners.extend(c if isinstance(c, (list, tuple)) else (c,))
    seen, params = set(), []
    for owner in owners:
        if isinstance(owner, Module):
            for p in owner.parameters():
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
    return params


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn,
               determinism_check: str = _DEFAULT_DETERMINISM_MODE, debug: bool = False,
               early_stop: bool = True, **kwargs):
    """``torch.utils.checkpoint.checkpoint``: ``function(*args, **kwargs)`` without keeping its
    intermediates; backward recomputes them. Warns, as torch 2.13 does, when ``use_reentrant``
    is not passed, and then uses the reentrant variant (torch's default)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    recipe = _Recipe()
    recipe.fn = function
    recipe.rng_state = get_rng_state() if preserve else None
    recipe.args = tuple(_TENSOR if isinstance(a, Tensor) else a for a in args)
    recipe.kwargs = {k: _TENSOR if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    recipe.n_args = len(tensors)
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        recipe.recompute_ctx = contextlib.nullcontext()
        return _ReentrantCheckpoint.apply(recipe, *tensors)
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    recipe.check = determinism_check == "default"
    recipe.recompute_ctx = context_fn()  # (forward, recompute); forward takes its own
    return _Checkpoint.apply(recipe, *tensors, *_module_params(function))


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """``torch.utils.checkpoint.checkpoint_sequential``: run ``functions`` (a list or an
    ``nn.Sequential``) in ``segments`` chunks, checkpointing all but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start: int, end: int, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
