"""Custom differentiable functions: ``ember.autograd.Function`` with torch's ``ctx`` API.

Subclassing ``Function`` creates a node class named ``<Name>Backward``; ``apply`` runs
``forward`` under no_grad, and the node is the ``ctx``: ``save_for_backward``,
``saved_tensors``, ``needs_input_grad``, ``mark_dirty``, ``mark_non_differentiable``,
``set_materialize_grads``. The engine runs these nodes exactly like built-in ops.
"""

from __future__ import annotations

import functools

from .._backend import FLOAT_KINDS, host, xp_of
from .._tensor import Tensor, _make
from .anomaly_mode import AnomalyMode, capture_trace
from .forward_ad import set_tangent, tangent_of
from .forward_ad import state as _fw_state
from .grad_mode import no_grad
from .grad_mode import state as _grad_state
from .graph import Node
from .record import emit, link, save


class FunctionCtx:
    """What ``forward`` can tell ``backward`` (also usable on its own, as in torch)."""

    def save_for_backward(self, *tensors) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one call of a custom Function."""

    _forward_cls: type = None

    def name(self) -> str:
        return type(self).__name__

    @property
    def saved_tensors(self) -> tuple:
        return self._check_saved()

    @property
    def saved_variables(self) -> tuple:
        return self.saved_tensors

    def backward(self, *grads):
        if self.materialize_grads:
            grads = tuple(_make(xp_of(like).zeros(m[0], dtype=m[1])) if g is None else g
                          for g, (m, like) in zip(grads, self._out_meta))
        result = self._forward_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self.needs_input_grad)
        if len(result) != n:
            if len(result) > n and all(r is None for r in result[n:]):
                result = result[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n}, got {len(result)})")
        for g in result:
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
        return tuple(result[i] for i in self._tensor_args)

    def _release(self) -> None:
        self._saved = None


class FunctionMeta(type):
    """Gives each Function subclass its own node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": cls.__module__})
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base for custom ops: define static ``forward(ctx, ...)`` and ``backward(ctx, *grads)``.

    ``forward`` may instead take only the inputs, with a static ``setup_context(ctx, inputs,
    output)`` filling the ctx (torch 2's style).
    """

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """The forward-mode rule: output tangents from input tangents (torch's ``jvp``)."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and, if any tensor input requires grad, record this function's node."""
        node = cls._backward_cls.__new__(cls._backward_cls)
        grad_on = _grad_state.grad_enabled
        needs = tuple(grad_on and isinstance(a, Tensor) and a._requires_grad for a in args)
        node.needs_input_grad = needs
        node._to_save = ()
        node._dirty = ()
        node._non_differentiable = ()
        node.materialize_grads = True
        node._hooks = None
        node._saved = ()
        node._saved_versions = ()
        node._saved_out = None
        uses_setup = cls.setup_context is not Function.setup_context
        # forward mode: forward runs on the primals only, and ``jvp`` gives the tangents
        dual = _fw_state.active and any(tangent_of(a) is not None for a in args)
        if dual:
            _fw_state.active = False
        try:
            with no_grad():
                if uses_setup:
                    output = cls.forward(*args, **kwargs)
                    cls.setup_context(node, args, output)
                else:
                    output = cls.forward(node, *args, **kwargs)
        finally:
            if dual:
                _fw_state.active = True
        is_tuple = isinstance(output, tuple)
        outputs = list(output) if is_tuple else [output]
        recording = any(needs)
        dirty = {id(t) for t in node._dirty}
        non_diff = {id(t) for t in node._non_differentiable}
        arg_ids = {id(a) for a in args if isinstance(a, Tensor)}

        if recording:
            node._tensor_args = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
            link(node, [args[i] for i in node._tensor_args])
            node._trace = capture_trace(2) if AnomalyMode.enabled else None
            # (shape, dtype) and an array of the backend, to materialize missing gradients
            node._out_meta = [((o._data.shape, o._data.dtype), o._data) if isinstance(o, Tensor)
                              else (((), host.float32), None) for o in outputs]

        differentiable = []
        for i, o in enumerate(outputs):
            if not isinstance(o, Tensor):
                differentiable.append(None)  # returned as is
                continue
            if id(o) in dirty:
                if recording and o._requires_grad and o._grad_fn is None and grad_on:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                       "in-place operation.")
                base = o._base
                if grad_on and base is not None and base._requires_grad \
                        and base._grad_fn is None:
                    raise RuntimeError("a view of a leaf Variable that requires grad is being "
                                       "used in an in-place operation.")
                o._vc[0] += 1
            elif id(o) in arg_ids:
                alias = _make(o._data)  # torch returns a view of an input returned as is
                alias._vc = o._vc
                if id(o) in non_diff:
                    non_diff.add(id(alias))
                o = outputs[i] = alias
            diff = recording and id(o) not in non_diff and o._data.dtype.kind in FLOAT_KINDS
            if diff and id(o) in dirty and o._base is not None and o._view is not None:
                from ..ops.inplace import rebase_view  # cycle: ops builds on autograd
                rebase_view(o, node, i)
                diff = None  # linked by rebase_view
            differentiable.append(diff)

        if recording:
            emit(node, outputs, differentiable)
            save(node, node._to_save, tuple(outputs))
        else:
            for o in outputs:
                if isinstance(o, Tensor) and id(o) in non_diff:
                    o._requires_grad = False
            node._saved = tuple(node._to_save)
            node._saved_versions = tuple(t._vc[0] if isinstance(t, Tensor) else None
                                         for t in node._to_save)
        if dual:
            _function_jvp(cls, node, args, outputs)
        # the node must not hold its outputs (a reference cycle): drop what forward handed it
        node._to_save = node._dirty = node._non_differentiable = ()
        node._saved_for_forward = ()
        return tuple(outputs) if is_tuple else outputs[0]


def _function_jvp(cls, node, args, outputs: list) -> None:
    """Give a custom Function's outputs the tangents its ``jvp`` computes."""
    tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    _fw_state.active = False
    try:
        result = cls.jvp(node, *tangents)
    finally:
        _fw_state.active = True
    results = result if isinstance(result, tuple) else (result,)
    if len(results) != len(outputs):
        raise RuntimeError(f"{cls.__name__}.jvp returned {len(results)} tangents, but forward "
                           f"returned {len(outputs)} outputs")
    for o, t in zip(outputs, results):
        if isinstance(o, Tensor) and isinstance(t, Tensor):
            set_tangent(o, t)


class InplaceFunction(Function):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


class _DelayedError(Function):
    """Stands in for the gradient of a once_differentiable backward: differentiating it fails."""

    @staticmethod
    def forward(ctx, msg, output, *grad_inputs):
        ctx.msg = msg
        return output.clone()

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.msg)


def once_differentiable(fn):
    """Run ``backward`` under no_grad; its results cannot be differentiated again."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _grad_state.grad_enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        msg = ("trying to differentiate twice a function that was marked with "
               "@once_differentiable")
        links = [a for a in args if isinstance(a, Tensor) and a._requires_grad]
        wrapped = tuple(_DelayedError.apply(msg, o, *links) if isinstance(o, Tensor) else o
                        for o in outs)
        return wrapped[0] if single else wrapped

    return wrapper
