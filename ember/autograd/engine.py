"""The backward engine: an iterative, dependency-counted walk of the graph.

1. Walk the graph from the roots (an explicit stack, no recursion) and count, for each node,
   how many edges lead into it; with ``inputs`` given, keep only nodes on a path to them.
2. Seed the roots' input buffers and run nodes from a ready queue, highest sequence number
   first as torch does, once all their gradients have arrived (so each node runs once, with
   its incoming gradients summed).
3. Each gradient a node returns is checked against the input it is for: broadcast shapes are
   summed back (``sum_to``, the one place unbroadcasting happens) and dtypes cast.
4. Unless ``retain_graph``, each node frees its saved tensors as soon as it has run.
"""

from __future__ import annotations

import heapq

import numpy as np

from .._tensor import Tensor, _make
from .anomaly_mode import AnomalyMode, report_forward_trace
from .grad_mode import state as _grad_state
from .graph import AccumulateGrad, Node


def sum_to(grad: Tensor, shape: tuple) -> Tensor:
    """Sum ``grad`` down to ``shape`` (the reverse of broadcasting); differentiable."""
    gshape = grad._data.shape
    lead = len(gshape) - len(shape)
    if lead < 0:
        return grad.reshape(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        g = gshape[lead + i]
        if s == 1 and g != 1:
            dims.append(lead + i)
        elif s != g:
            raise ValueError("not broadcastable")
    if dims:
        grad = grad.sum(dims, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad


def _validate(node: Node, i: int, grad: Tensor, meta) -> Tensor:
    shape, dtype = meta
    if not isinstance(grad, Tensor):
        raise TypeError(f"Function {node.name()} returned an invalid gradient at index {i} - "
                        f"expected a Tensor or None, but got {type(grad).__name__}")
    if grad._data.shape != shape:
        try:
            grad = sum_to(grad, shape)
        except ValueError:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - got "
                f"{list(grad._data.shape)} but expected shape compatible with {list(shape)}"
            ) from None
    if grad._data.dtype != dtype:
        if dtype.kind != "f":
            return None  # integer inputs get no gradient
        grad = grad.to(_np_to_dtype(dtype))
    return grad


def _np_to_dtype(np_dtype):
    from .._backend import from_numpy_dtype
    return from_numpy_dtype(np_dtype)


def _collect(roots: list[Node]) -> list[Node]:
    """All nodes reachable from ``roots``, children listed before parents (post-order)."""
    order: list[Node] = []
    seen: set[int] = set()
    stack = [(r, False) for r in roots]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                stack.append((child, False))
    return order


def _count_deps(roots: list[Node]) -> dict[int, int]:
    """For every node reachable from ``roots``: how many edges lead into it (one pass)."""
    deps: dict[int, int] = {}
    seen: set[int] = set()
    stack = []
    for r in roots:
        if id(r) not in seen:
            seen.add(id(r))
            stack.append(r)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                cid = id(child)
                deps[cid] = deps.get(cid, 0) + 1
                if cid not in seen:
                    seen.add(cid)
                    stack.append(child)
    return deps


def _num_outputs(node: Node) -> int:
    return getattr(node, "_num_outputs", 1)


def run_backward(outputs: list[Tensor], grads: list[Tensor], keep_graph: bool,
                 create_graph: bool, inputs: list[Tensor] | None = None,
                 accumulate: bool = True) -> list | None:
    """Backpropagate ``grads`` from ``outputs``.

    With ``accumulate`` (``Tensor.backward``) gradients go into leaves' ``.grad`` (only those
    in ``inputs`` if given). Without it (``autograd.grad``) the gradients of ``inputs`` are
    returned instead, in order, None for an input the graph does not reach.
    """
    root_edges = [t._edge() for t in outputs]
    roots = [e[0] for e in root_edges]

    targets: dict[int, list[tuple[int, int]]] = {}  # id(node) -> [(output_nr, input index)]
    if inputs is not None:
        order = _collect(roots)
        for k, t in enumerate(inputs):
            node, nr = t._edge()
            targets.setdefault(id(node), []).append((nr, k))
        needed: set[int] | None = set()
        for node in order:  # children first
            if id(node) in targets or any(c is not None and id(c) in needed
                                          for c, _ in node.next_functions):
                needed.add(id(node))
        deps: dict[int, int] = {}
        for node in order:
            if id(node) not in needed:
                continue
            for child, _ in node.next_functions:
                if child is not None and id(child) in needed:
                    deps[id(child)] = deps.get(id(child), 0) + 1
        del order
    else:
        needed = None
        deps = _count_deps(roots)

    buffers: dict[int, list] = {}
    for node, (_, nr), g in zip(roots, root_edges, grads):
        buf = buffers.get(id(node))
        if buf is None:
            buf = buffers[id(node)] = [None] * _num_outputs(node)
        buf[nr] = g if buf[nr] is None else buf[nr] + g

    captured: list = [None] * len(inputs) if inputs is not None else None
    ready: list = []
    queued: set[int] = set()
    for node in roots:
        if id(node) not in queued and deps.get(id(node), 0) == 0 and (
                needed is None or id(node) in needed):
            queued.add(id(node))
            heapq.heappush(ready, (-node._sequence_nr, id(node), node))

    heappop, heappush = heapq.heappop, heapq.heappush
    prev_mode = (_grad_state.grad_mode, _grad_state.grad_enabled)
    _grad_state.grad_mode = _grad_state.grad_enabled = create_graph
    try:
        while ready:
            node = heappop(ready)[2]
            grads_in = buffers.pop(id(node))
            hits = targets.get(id(node)) if needed is not None else None
            goes_on = True
            if hits is not None and type(node) is not AccumulateGrad:
                goes_on = any(c is not None and id(c) in needed for c, _ in node.next_functions)
                if goes_on and not accumulate:
                    # as torch does: autograd.grad captures an input's gradient before the
                    # tensor hooks when its node runs on (after them when it stops there)
                    for nr, k in hits:
                        captured[k] = grads_in[nr]
                    hits = None
            hooks = node._hooks
            if hooks is not None:
                grads_in = _run_pre_hooks(node, hooks, grads_in)
            if type(node) is AccumulateGrad:
                g = grads_in[0]
                if hits is not None and not accumulate:
                    for _, k in hits:
                        captured[k] = _run_leaf_hooks(node.variable, g)
                elif g is not None:
                    _accumulate(node.variable, g, create_graph)
                continue
            if hits is not None:
                for nr, k in hits:
                    if accumulate:
                        _accumulate_non_leaf(inputs[k], grads_in[nr])
                    else:
                        captured[k] = grads_in[nr]
            if not goes_on:
                continue
            grads_out = _call(node, grads_in)
            if hooks is not None and hooks.post:
                for fn in list(hooks.post.values()):
                    res = fn(grads_out, tuple(grads_in))
                    if res is not None:
                        grads_out = tuple(res)
            if not keep_graph:
                node._release()
            meta = node._in_meta
            n_out = len(grads_out)
            for i, (child, nr) in enumerate(node.next_functions):
                if child is None:
                    continue
                cid = id(child)
                if needed is not None and cid not in needed:
                    continue
                g = grads_out[i] if i < n_out else None
                if g is not None:
                    if meta is not None:
                        m = meta[i]
                        if m is not None and (g._data.shape != m[0] or g._data.dtype != m[1]):
                            g = _validate(node, i, g, m)
                    if g is not None:
                        buf = buffers.get(cid)
                        if buf is None:
                            buf = buffers[cid] = [None] * _num_outputs(child)
                        buf[nr] = g if buf[nr] is None else buf[nr] + g
                left = deps[cid] - 1
                deps[cid] = left
                if left == 0:
                    if cid not in buffers:
                        buffers[cid] = [None] * _num_outputs(child)
                    heappush(ready, (-child._sequence_nr, cid, child))
    finally:
        _grad_state.grad_mode, _grad_state.grad_enabled = prev_mode
    return captured


def _call(node: Node, grads_in: list) -> tuple:
    if AnomalyMode.enabled:
        try:
            out = node.backward(*grads_in)
        except Exception:
            report_forward_trace(node)
            raise
        out = out if type(out) is tuple else (out,)
        if AnomalyMode.check_nan:
            for i, g in enumerate(out):
                if isinstance(g, Tensor) and np.isnan(g._data).any():
                    report_forward_trace(node)
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                       f"{i}th output.")
        return out
    if len(grads_in) == 1:
        g = grads_in[0]
        if g is None:
            return ()
        out = node.backward(g)
    else:
        out = node.backward(*grads_in)
    return out if type(out) is tuple else (out,)


def _checked_hook_result(fn, grad: Tensor, res) -> Tensor:
    """A tensor hook's replacement gradient, refused (as torch does) if it changes kind."""
    if not isinstance(res, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(res).__name__}'")
    name = getattr(fn, "__name__", repr(fn))
    if res._data.shape != grad._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if res._data.dtype != grad._data.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {grad.type()} "
                           f"got {res.type()})")
    return res


def _run_pre_hooks(node: Node, hooks, grads_in: list) -> list:
    for nr, registry in hooks.tensor_pre.items():
        for fn in list(registry.values()):
            g = grads_in[nr]
            if g is None:
                break
            res = fn(g)
            if res is not None:
                grads_in[nr] = _checked_hook_result(fn, g, res)
    for nr, fn in hooks.retain.items():
        if grads_in[nr] is not None:
            fn(grads_in[nr])
    for fn in list(hooks.pre.values()):
        res = fn(tuple(grads_in))
        if res is not None:
            grads_in = list(res)
    return grads_in


def _run_leaf_hooks(var: Tensor, grad: Tensor | None) -> Tensor | None:
    extra = var._extra
    if grad is not None and extra is not None and extra.hooks:
        for fn in list(extra.hooks.values()):
            res = fn(grad)
            if res is not None:
                grad = _checked_hook_result(fn, grad, res)
    return grad


def _accumulate(var: Tensor, grad: Tensor, create_graph: bool) -> None:
    """AccumulateGrad: run the leaf's hooks, then add into ``var.grad`` (torch's rules)."""
    grad = _run_leaf_hooks(var, grad)
    old = var._grad
    if old is None:
        # a private copy (the same gradient may reach several leaves): with create_graph, a
        # differentiable one, CopyBackwards as in torch
        if create_graph and grad._requires_grad:
            from ..ops.inplace import CopyBackwards
            var._grad = CopyBackwards.apply(_make(np.empty_like(grad._data)), grad)
        else:
            var._grad = _make(np.array(grad._data, copy=True))
    elif create_graph or not old._data.flags.writeable:
        var._grad = old + grad
    else:  # in place, as torch does outside create_graph (even into a grad that has history)
        np.add(old._data, grad._data, out=old._data, casting="unsafe")
        old._vc[0] += 1
    extra = var._extra
    if extra is not None and extra.post_acc_hooks:
        for fn in list(extra.post_acc_hooks.values()):
            fn(var)


def _accumulate_non_leaf(t: Tensor, grad: Tensor | None) -> None:
    """``backward(inputs=[non_leaf])`` stores into its ``.grad`` as retain_grad would."""
    if grad is None:
        return
    t._grad = grad.detach().clone() if t._grad is None else t._grad + grad
