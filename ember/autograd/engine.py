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
from heapq import heappushpop

import numpy as np

from .._tensor import Tensor, _make
from .anomaly_mode import AnomalyMode, report_forward_trace
from .grad_mode import state as _grad_state
from .graph import AccumulateGrad, Node

_ndarray = np.ndarray


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
    seen: set[Node] = set()
    stack = [(r, False) for r in roots]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                stack.append((child, False))
    return order


def _count_deps(roots: list[Node]) -> dict[Node, int]:
    """For every node reachable from ``roots``: how many edges lead into it (one pass).

    A node is in the dict once it has been reached (the roots start at 0), so the dict is
    also the walk's "seen" set.
    """
    deps: dict[Node, int] = {}
    stack = []
    for r in roots:
        if r not in deps:
            deps[r] = 0
            stack.append(r)
    get = deps.get
    push = stack.append
    pop = stack.pop
    while stack:
        for child, _ in pop().next_functions:
            if child is not None:
                n = get(child)
                if n is None:
                    deps[child] = 1
                    push(child)
                else:
                    deps[child] = n + 1
    return deps


def _wrap(g) -> Tensor | None:
    """A raw gradient (array, NumPy scalar or None) as a Tensor, for hooks and Tensor rules."""
    if g is None:
        return None
    return _make(g if type(g) is _ndarray else np.asarray(g))


def _unwrap(g):
    return g._data if isinstance(g, Tensor) else g


def _validate_raw(node: Node, i: int, g, meta):
    """``_validate`` for a raw gradient: its type, shape (unbroadcast) and dtype."""
    if type(g) is not _ndarray:
        if isinstance(g, np.generic):  # NumPy gives scalars for 0-d results
            g = np.asarray(g)
        elif isinstance(g, Tensor):
            g = g._data
    if type(g) is _ndarray and g.shape == meta[0] and g.dtype == meta[1]:
        return g
    g = _validate(node, i, g if type(g) is not _ndarray else _make(g), meta)
    return None if g is None else g._data


def run_backward(outputs: list[Tensor], grads: list[Tensor], keep_graph: bool,
                 create_graph: bool, inputs: list[Tensor] | None = None,
                 accumulate: bool = True) -> list | None:
    """Backpropagate ``grads`` from ``outputs``.

    With ``accumulate`` (``Tensor.backward``) gradients go into leaves' ``.grad`` (only those
    in ``inputs`` if given). Without it (``autograd.grad``) the gradients of ``inputs`` are
    returned instead, in order, None for an input the graph does not reach.

    Without ``create_graph`` no graph of the backward pass is recorded, and gradients flow as
    NumPy arrays ("raw"): a node with a ``raw_backward`` rule runs it on them directly; others
    get them wrapped as Tensors. Hooks, captured gradients and ``.grad`` always see Tensors.
    """
    raw = not create_graph
    root_edges = [t._edge() for t in outputs]
    roots = [e[0] for e in root_edges]

    targets: dict | None = None  # node -> [(output_nr, input index)]
    needed: set | None = None
    if inputs is not None:
        order = _collect(roots)
        targets = {}
        for k, t in enumerate(inputs):
            node, nr = t._edge()
            targets.setdefault(node, []).append((nr, k))
        needed = set()
        for node in order:  # children first
            if node in targets or any(c is not None and c in needed
                                      for c, _ in node.next_functions):
                needed.add(node)
        deps: dict = {}
        for node in order:
            if node not in needed:
                continue
            for child, _ in node.next_functions:
                if child is not None and child in needed:
                    deps[child] = deps.get(child, 0) + 1
        del order
    else:
        deps = _count_deps(roots)

    buffers: dict = {}
    for node, (_, nr), g in zip(roots, root_edges, grads):
        if raw:
            g = g._data
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._num_outputs
        buf[nr] = g if buf[nr] is None else buf[nr] + g

    captured: list = [None] * len(inputs) if inputs is not None else None
    ready: list = []
    queued: set = set()
    for node in roots:
        if node not in queued and deps.get(node, 0) == 0 and (needed is None or node in needed):
            queued.add(node)
            heapq.heappush(ready, (-node._sequence_nr, id(node), node))

    heappop, heappush = heapq.heappop, heapq.heappush
    use_raw_rules = raw and not AnomalyMode.enabled
    # The node that became ready last, with its gradients: it runs next (without going
    # through ``buffers`` and the heap) unless the heap holds a later one.
    nxt = nxt_in = None
    prev_mode = (_grad_state.grad_mode, _grad_state.grad_enabled)
    _grad_state.grad_mode = _grad_state.grad_enabled = create_graph
    try:
        while True:
            if nxt is not None:
                if ready and ready[0][0] <= -nxt._sequence_nr:
                    buffers[nxt] = nxt_in
                    node = heappushpop(ready, (-nxt._sequence_nr, id(nxt), nxt))[2]
                    grads_in = buffers.pop(node)
                else:
                    node = nxt
                    grads_in = nxt_in
                nxt = None
            elif ready:
                node = heappop(ready)[2]
                grads_in = buffers.pop(node)
            else:
                break
            hits = None
            goes_on = True
            if targets is not None:
                hits = targets.get(node)
                if hits is not None and type(node) is not AccumulateGrad:
                    goes_on = any(c is not None and c in needed for c, _ in node.next_functions)
                    if goes_on and not accumulate:
                        # as torch does: autograd.grad captures an input's gradient before the
                        # tensor hooks when its node runs on (after them when it stops there)
                        for nr, k in hits:
                            captured[k] = _wrap(grads_in[nr]) if raw else grads_in[nr]
                        hits = None
            hooks = node._hooks
            if hooks is not None:
                if raw:
                    grads_in = [_unwrap(g) for g in
                                _run_pre_hooks(node, hooks, [_wrap(g) for g in grads_in])]
                else:
                    grads_in = _run_pre_hooks(node, hooks, grads_in)
            if type(node) is AccumulateGrad:
                g = grads_in[0]
                if hits is not None and not accumulate:
                    for _, k in hits:
                        captured[k] = _run_leaf_hooks(node.variable, _wrap(g) if raw else g)
                elif g is not None:
                    _accumulate(node.variable, g, create_graph)
                continue
            if hits is not None:
                for nr, k in hits:
                    g = _wrap(grads_in[nr]) if raw else grads_in[nr]
                    if accumulate:
                        _accumulate_non_leaf(inputs[k], g)
                    else:
                        captured[k] = g
                if not goes_on:
                    continue
            fast = node.raw_backward if use_raw_rules else None
            if fast is not None and len(grads_in) == 1:
                g = grads_in[0]
                grads_out = () if g is None else fast(g)
                if type(grads_out) is not tuple:
                    grads_out = (grads_out,)
            else:
                grads_out = _call(node, grads_in, raw)
            if hooks is not None and hooks.post:
                grads_out = _run_post_hooks(hooks, grads_out, grads_in, raw)
            if not keep_graph:
                node._release()
            meta = node._in_meta
            n_out = len(grads_out)
            i = -1
            for child, nr in node.next_functions:
                i += 1
                if child is None or (needed is not None and child not in needed):
                    continue
                g = grads_out[i] if i < n_out else None
                if g is not None:
                    m = meta[i]
                    if raw:
                        if type(g) is not _ndarray or g.shape != m[0] or g.dtype != m[1]:
                            g = _validate_raw(node, i, g, m)
                    elif g._data.shape != m[0] or g._data.dtype != m[1]:
                        g = _validate(node, i, g, m)
                left = deps[child] - 1
                if left == 0 and nxt is None and child not in buffers:
                    # its only gradient (the common case, a chain): hand it over directly
                    nxt = child
                    if child._num_outputs == 1:
                        nxt_in = [g]
                    else:
                        nxt_in = [None] * child._num_outputs
                        nxt_in[nr] = g
                    continue
                deps[child] = left
                if g is not None:
                    buf = buffers.get(child)
                    if buf is None:
                        buffers[child] = buf = [None] * child._num_outputs
                        buf[nr] = g
                    else:
                        old = buf[nr]
                        buf[nr] = g if old is None else old + g
                if left == 0:
                    if nxt is None:
                        nxt = child
                        nxt_in = buffers.pop(child, None) or [None] * child._num_outputs
                    else:
                        if child not in buffers:
                            buffers[child] = [None] * child._num_outputs
                        heappush(ready, (-child._sequence_nr, id(child), child))
    finally:
        _grad_state.grad_mode, _grad_state.grad_enabled = prev_mode
    return captured


def _call(node: Node, grads_in: list, raw: bool) -> tuple:
    """Run ``node``'s backward on ``grads_in`` (raw arrays when ``raw``): the general path."""
    if raw:
        fast = node.raw_backward
        if fast is None or len(grads_in) != 1:
            grads_in = [_wrap(g) for g in grads_in]
    if AnomalyMode.enabled:
        try:
            out = _call_rule(node, grads_in, raw)
        except Exception:
            report_forward_trace(node)
            raise
        if AnomalyMode.check_nan:
            for i, g in enumerate(out):
                if isinstance(g, Tensor):
                    g = g._data
                if isinstance(g, (_ndarray, np.generic)) and np.isnan(g).any():
                    report_forward_trace(node)
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                       f"{i}th output.")
        return out
    return _call_rule(node, grads_in, raw)


def _call_rule(node: Node, grads_in: list, raw: bool) -> tuple:
    if len(grads_in) == 1:
        g = grads_in[0]
        if g is None:
            return ()
        if raw:
            fast = node.raw_backward
            if fast is not None:
                out = fast(g)
                return out if type(out) is tuple else (out,)
        out = node.backward(g)
    else:
        out = node.backward(*grads_in)
    if type(out) is not tuple:
        out = (out,)
    if raw:
        out = tuple([_unwrap(g) for g in out])
    return out


def _run_post_hooks(hooks, grads_out: tuple, grads_in: list, raw: bool) -> tuple:
    if raw:
        grads_out = tuple([_wrap(g) for g in grads_out])
        grads_in = [_wrap(g) for g in grads_in]
    for fn in list(hooks.post.values()):
        res = fn(grads_out, tuple(grads_in))
        if res is not None:
            grads_out = tuple(res)
    if raw:
        grads_out = tuple([_unwrap(g) for g in grads_out])
    return grads_out


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


def _accumulate(var: Tensor, grad, create_graph: bool) -> None:
    """AccumulateGrad: run the leaf's hooks, then add into ``var.grad`` (torch's rules).

    ``grad`` is a Tensor with ``create_graph``, else a raw array (see ``run_backward``).
    """
    extra = var._extra
    if create_graph:
        grad = _run_leaf_hooks(var, grad)
    elif extra is not None and extra.hooks:
        grad = _run_leaf_hooks(var, _wrap(grad))._data
    old = var._grad
    if old is None:
        # a private copy (the same gradient may reach several leaves): with create_graph, a
        # differentiable one, CopyBackwards as in torch
        if not create_graph:
            var._grad = _make(np.array(grad, copy=True))
        elif grad._requires_grad:
            from ..ops.inplace import CopyBackwards
            var._grad = CopyBackwards.apply(_make(np.empty_like(grad._data)), grad)
        else:
            var._grad = _make(np.array(grad._data, copy=True))
    elif create_graph:
        var._grad = old + grad
    elif not old._data.flags.writeable:
        var._grad = _make(np.asarray(old._data + grad))
    else:  # in place, as torch does outside create_graph (even into a grad that has history)
        np.add(old._data, grad, out=old._data, casting="unsafe")
        old._vc[0] += 1
    if extra is not None and extra.post_acc_hooks:
        for fn in list(extra.post_acc_hooks.values()):
            fn(var)


def _accumulate_non_leaf(t: Tensor, grad: Tensor | None) -> None:
    """``backward(inputs=[non_leaf])`` stores into its ``.grad`` as retain_grad would."""
    if grad is None:
        return
    t._grad = grad.detach().clone() if t._grad is None else t._grad + grad
