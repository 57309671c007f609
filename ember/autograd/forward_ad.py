"""Forward-mode AD (``torch.autograd.forward_ad``): dual tensors carry a tangent through ops.

Inside ``with dual_level():``, ``make_dual(x, v)`` gives a tensor whose tangent is ``v``;
every op on dual tensors computes its output's tangent, the Jacobian-vector product, right
after its forward; ``unpack_dual(y)`` returns ``(primal, tangent)``. Leaving the level drops
every tangent. As in torch, one level at a time, and grad mode does not affect tangents.

Where each op's tangent comes from (``propagate``):

* the op class's own ``jvp(tangents, inputs, out)``, declared beside its ``forward`` and
  ``backward`` in ``ember/ops`` (the fast rules: arithmetic, the common unary functions,
  matmul, reductions, views);
* otherwise the rule is derived from the op's declared ``backward``, which is linear in its
  incoming gradient ``u``: with ``g_i(u) = J_i^T u``, the tangent ``sum_i J_i t_i`` is the
  gradient with respect to ``u`` of ``sum_i <g_i(u), t_i>``. The backward rules are written in
  ember ops, so this is exact, and differentiable again (forward-over-reverse, reverse over
  forward). It costs two small backward passes per op.
* An op whose backward is not differentiable (``once_differentiable``) has no rule; using it
  on dual tensors raises an error naming the op.

Composite ops (``F.softmax``, ``nn`` layers) get their tangents by composition, op by op.
"""

from __future__ import annotations

import weakref
from collections import namedtuple

from .._backend import FLOAT_KINDS, xp_of
from .._tensor import Tensor, _make
from .grad_mode import _DecoratorContextManager, enable_grad
from .grad_mode import state as _grad_state

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]


class _State:
    """``active``: a dual level is open (the op paths test this one flag); ``tensors``: weak
    references to every tensor given a tangent, cleared when the level closes."""

    __slots__ = ("active", "level", "tensors")

    def __init__(self) -> None:
        self.active = False
        self.level = -1
        self.tensors: list = []


state = _State()

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level() -> int:
    """Open a forward-AD level (torch's ``enter_dual_level``); its number, 0."""
    if state.level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    state.level = 0
    state.active = True
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the level: every tangent made inside it is dropped."""
    if state.level < 0:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    if level is not None and level != state.level:
        raise RuntimeError(f"Trying to exit forward AD level {level}, but the current level is "
                           f"{state.level}")
    for ref in state.tensors:
        t = ref()
        if t is not None and t._extra is not None:
            t._extra.tangent = None
    state.tensors = []
    _OUTPUT_TANGENTS.clear()
    state.level = -1
    state.active = False


class dual_level(_DecoratorContextManager):
    """``with dual_level():`` the scope in which dual tensors exist (a decorator too)."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _check_level(level, what: str) -> None:
    if state.level < 0:
        raise RuntimeError(f"To {what}, you need to be inside a dual level context manager; "
                           "use `with torch.autograd.forward_ad.dual_level():`")
    if level is not None and level != state.level:
        raise RuntimeError(f"forward AD level {level} does not exist (the current level is "
                           f"{state.level})")


def tangent_of(t) -> Tensor | None:
    """``t``'s tangent at the current level (None: none, or ``t`` is not a Tensor)."""
    if not isinstance(t, Tensor):
        return None
    extra = t._extra
    return None if extra is None else extra.tangent


def set_tangent(t: Tensor, tangent: Tensor | None) -> None:
    """Give ``t`` a tangent for the rest of the level (None removes it)."""
    if tangent is None:
        if t._extra is not None:
            t._extra.tangent = None
        return
    extra = t._get_extra()
    if extra.tangent is None:
        state.tensors.append(weakref.ref(t))
    extra.tangent = tangent


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` whose tangent is ``tangent`` (torch's ``make_dual``).

    The view is differentiable with respect to ``tensor`` (reverse mode sees through it), and
    the tangent must have ``tensor``'s shape and a floating dtype.
    """
    _check_level(level, "create a dual Tensor")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual: expected Tensors for the primal and the tangent, got "
                        f"{type(tensor).__name__} and {type(tangent).__name__}")
    if tensor._data.dtype.kind not in FLOAT_KINDS + "c":
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if tangent._data.dtype.kind not in FLOAT_KINDS + "c":
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    state.active = False  # the view itself must not pick up ``tensor``'s own tangent
    try:
        dual = tensor.view_as(tensor)
    finally:
        state.active = True
    if tangent.dtype != tensor.dtype:
        tangent = tangent.to(tensor.dtype)
    set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of a dual tensor: the primal a view without the tangent, the
    tangent None for a tensor that has none (torch's ``unpack_dual``)."""
    if state.level < 0 or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    _check_level(level, "unpack a dual Tensor")
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    state.active = False
    try:
        primal = tensor.view_as(tensor)
    finally:
        state.active = True
    return UnpackedDualTensor(primal, tangent)


# ----------------------------------------------------------------------------- propagation
def propagate(node, inputs, outputs, params: tuple = ()) -> None:
    """Give the ``outputs`` of ``node`` (run on ``inputs`` with ``params``) their tangents, if
    any input has one. Called by the op paths of ``ember/ops/_op.py`` while a level is open.
    A ``linear`` one-input op (views, shape ops) maps its tangent as it maps its input."""
    tangents = [tangent_of(x) for x in inputs]
    if all(t is None for t in tangents):
        return
    single = isinstance(outputs, Tensor)
    outs = (outputs,) if single else tuple(outputs)
    if not outs:
        return
    rule = getattr(node, "jvp", None)
    state.active = False  # the rule's own ops carry no tangents of their own
    try:
        if rule is not None:
            result = rule(tangents, inputs, outputs)
        elif getattr(node, "linear", False) and len(inputs) == 1:
            from ..ops._op import apply1  # (ops build on autograd)
            try:
                result = apply1(type(node), tangents[0], *params)
            except RuntimeError:  # a view the tangent's strides don't allow: torch gives
                result = apply1(type(node), tangents[0].contiguous(), *params)  # its own
        else:
            result = _transposed_backward(node, inputs, tangents, outs)
    finally:
        state.active = True
    results = (result,) if single or not isinstance(result, (tuple, list)) else tuple(result)
    for o, t in zip(outs, results):
        if t is None or not isinstance(o, Tensor) or o._data.dtype.kind not in FLOAT_KINDS + "c":
            continue
        if not isinstance(t, Tensor):
            t = _make(t)
        if t._data.dtype != o._data.dtype:
            t = t.to(o.dtype)
        if tuple(t.shape) != tuple(o.shape):
            t = t.expand(o.shape).contiguous() if t._data.ndim <= o._data.ndim else t
        set_tangent(o, t)
        if single and o._grad_fn is node and node._saved_out is not None:
            _OUTPUT_TANGENTS[node] = t


# the tangent of a recorded node's output, for backward rules that rebuild their saved output
# (``Node._rebuild_output``): forward-over-reverse needs it
_OUTPUT_TANGENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _no_rule(node) -> RuntimeError:
    return RuntimeError(f"Trying to use forward AD with {type(node).__name__} that does not "
                        "support it because it has not been implemented yet (its backward is "
                        "not differentiable, so no forward rule can be derived from it).")


def _transposed_backward(node, inputs, tangents, outs):
    """The tangent of ``node``'s outputs from its backward rule (see the module docstring)."""
    from .api import grad as _grad
    from .engine import sum_to

    if type(node).backward is None or getattr(type(node), "_once_differentiable", False):
        raise _no_rule(node)
    grad_on = _grad_state.grad_enabled  # (what grad mode the op ran in, before enable_grad)
    recorded = any(isinstance(o, Tensor) and o._grad_fn is node for o in outs)
    n = _prepare(node, inputs, tangents, outs, recorded)
    floating = [isinstance(o, Tensor) and o._data.dtype.kind in FLOAT_KINDS + "c" for o in outs]
    with enable_grad():
        us = [_make(xp_of(o._data).zeros(o._data.shape, dtype=o._data.dtype)).requires_grad_()
              if f else None for o, f in zip(outs, floating)]
        try:
            grads = n.run(us)
        except NotImplementedError:
            raise _no_rule(node) from None
        if not isinstance(grads, tuple):
            grads = (grads,)
        total = None
        for g, x, t in zip(grads, inputs, tangents):
            if g is None or t is None:
                continue
            if not isinstance(g, Tensor):
                continue
            g = sum_to(g, tuple(x.shape)) if tuple(g.shape) != tuple(x.shape) else g
            if g._data.dtype.kind == "c" or t._data.dtype.kind == "c":
                # complex: backward is the adjoint for <a, b> = Re(sum(conj(a) * b)), so the
                # tangent is the gradient in u of Re(sum(conj(g(u)) * t)) (torch's convention)
                term = (g.conj() * t).sum().real
            else:
                term = (g * t).sum()
            total = term if total is None else total + term
        if total is None or not total.requires_grad:  # no input's tangent reaches out
            out = [_zeros(o) if f else None for o, f in zip(outs, floating)]
            return tuple(out) if len(outs) > 1 else out[0]
        keep = grad_on and (any(t is not None and t.requires_grad for t in tangents) or
                            any(isinstance(x, Tensor) and x.requires_grad for x in inputs))
        leaves = [u for u in us if u is not None]
        jts = iter(_grad(total, leaves, create_graph=keep, allow_unused=True))
    out = []
    for o, f in zip(outs, floating):
        jt = next(jts) if f else None
        out.append(_zeros(o) if f and jt is None else jt)
    return tuple(out) if len(outs) > 1 else out[0]


def _zeros(o: Tensor) -> Tensor:
    return _make(xp_of(o._data).zeros(o._data.shape, dtype=o._data.dtype))


class _Marker:
    """Stands in for a next function: makes ``needs_grad(i)`` true for the inputs with a
    tangent or a gradient, so the backward rule computes their terms. A dead end to the
    engine (a rule that reads the node's saved output links back to the node)."""

    __slots__ = ()
    next_functions = ()
    _sequence_nr = -1
    _hooks = None
    _num_outputs = 1


_MARK = (_Marker(), 0)
_NO = (None, 0)


def _prepare(node, inputs, tangents, outs, recorded: bool):
    """The node to run backward on: a copy of a recorded node (its graph stays as it was), or
    the unrecorded node itself, given the saved tensors its rule reads."""
    import copy

    from .record import meta_entry, save

    if recorded:
        n = copy.copy(node)
    else:
        n = node
        save(n, tuple([inputs[i] for i in getattr(node, "save_inputs", ())]))
        n._in_meta = tuple(meta_entry(x._data.shape, x._data.dtype)[1]
                           if isinstance(x, Tensor) else None for x in inputs)
        first = outs[0]
        n._saved_out = (first._data, first._vc, first._vc[0]) \
            if getattr(node, "save_output", False) and isinstance(first, Tensor) else None
    # a recorded node keeps its real edges, so the tangent stays differentiable with respect to
    # the primal inputs (reverse over forward) through the rule's saved tensors and output
    edges = node.next_functions if recorded else (_NO,) * len(inputs)
    n.next_functions = tuple(
        e if e[0] is not None else
        _MARK if isinstance(x, Tensor) and t is not None and
        x._data.dtype.kind in FLOAT_KINDS + "c" else _NO
        for x, t, e in zip(inputs, tangents, edges))
    return n
