"""The backward engine: an iterative, dependency-counted walk of the graph (Kahn's algorithm).

1. Walk the graph from the roots (an explicit stack, no recursion) and count, for each node,
   how many edges lead into it; with ``inputs`` given, keep only nodes on a path to them.
2. Seed the roots' gradients and run nodes from a ready queue, highest sequence number first
   as torch does, once all their gradients have arrived (each node runs once, with its
   incoming gradients summed).
3. Each gradient a node returns is checked against the input it is for: broadcast shapes are
   summed back (``sum_to``, the one place unbroadcasting happens) and dtypes cast.
4. Unless ``retain_graph``, each node frees its saved tensors as soon as it has run.

Without ``create_graph`` gradients flow as arrays ("raw") and nodes run ``run_raw``; with it
they flow as Tensors through ``run``, so the backward pass is itself recorded. The choice of
rule (a fast array rule or the Tensor one) is the node's (``graph.Node.run_raw``).
"""

from __future__ import annotations

import heapq
from heapq import heappop, heappush, heappushpop

from .._backend import FLOAT_KINDS, from_numpy_dtype, generic, host, is_array, ndarray, xp_of
from .._backend.sums import sum_arrays
from .._tensor import Tensor
from .anomaly_mode import AnomalyMode, report_forward_trace
from .forward_ad import state as _fw_state
from .grad_mode import set_enabled as _set_enabled
from .grad_mode import state as _grad_state
from .graph import (
    AccumulateGrad,
    Node,
    accumulate_leaf,
    run_leaf_hooks,
    run_post_hooks,
    run_pre_hooks,
    unwrap,
    wrap,
)


def sum_to(grad, shape: tuple):
    """Sum ``grad`` (an array, or a Tensor when recording) down to ``shape``: the reverse of
    broadcasting. Raises ValueError if ``grad``'s shape does not broadcast to ``shape``."""
    gshape = grad.shape
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
        # (arrays summed as ``Tensor.sum`` sums: the same bits with and without create_graph)
        grad = grad.sum(dims, keepdim=True) if isinstance(grad, Tensor) else \
            sum_arrays(grad, tuple(dims), True)
    return grad.reshape(shape) if lead else grad


def _validate(node: Node, i: int, g, meta, raw: bool):
    """Input ``i``'s gradient ``g`` with its input's shape (unbroadcast) and dtype."""
    shape, dtype = meta
    if raw:
        if isinstance(g, Tensor):
            g = g._data
        elif isinstance(g, generic):  # NumPy gives scalars for 0-d results
            g = host.asarray(g)
    if not (is_array(g) if raw else isinstance(g, Tensor)):
        raise TypeError(f"Function {node.name()} returned an invalid gradient at index {i} - "
                        f"expected a Tensor or None, but got {type(g).__name__}")
    if g.shape != shape:
        try:
            g = sum_to(g, shape)
        except ValueError:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - got "
                f"{list(g.shape)} but expected shape compatible with {list(shape)}") from None
    gdtype = g.dtype if raw else g._data.dtype
    if gdtype != dtype:
        kind = dtype.kind
        if kind not in FLOAT_KINDS and kind != "c":
            return None  # integer inputs get no gradient
        if gdtype.kind == "c" and kind != "c":
            g = g.real  # torch: a real input's gradient is the real part of a complex one
        g = g.astype(dtype) if raw else g.to(from_numpy_dtype(dtype))
    return g


def _plan(roots: list, inputs: list | None):
    """Dependency counts of the nodes the walk must run, and for ``inputs``: the nodes they
    belong to (node -> [(output_nr, input index)]) and the set of nodes on a path to them."""
    deps: dict = {}
    stack = []
    for r in roots:
        if r not in deps:
            deps[r] = 0
            stack.append(r)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is not None:
                if child in deps:
                    deps[child] += 1
                else:
                    deps[child] = 1
                    stack.append(child)
    if inputs is None:
        return deps, None, None
    targets: dict = {}
    for k, t in enumerate(inputs):
        node, nr = t._edge()
        targets.setdefault(node, []).append((nr, k))
    # a node is needed if it is a target or a needed node is among its children: one pass over
    # the nodes in reverse topological order (Kahn's order over the counts above, reversed)
    left = dict(deps)
    topo = [r for r in deps if not left[r]]
    for node in topo:  # (grows while it is walked)
        for child, _ in node.next_functions:
            if child is not None:
                left[child] -= 1
                if not left[child]:
                    topo.append(child)
    needed: set = set()
    for node in reversed(topo):
        if node in targets or any(c in needed for c, _ in node.next_functions):
            needed.add(node)
    deps = {node: 0 for node in needed}
    for node in needed:
        for child, _ in node.next_functions:
            if child in needed:
                deps[child] += 1
    return deps, targets, needed


def run_backward(outputs: list[Tensor], grads: list[Tensor], keep_graph: bool,
                 create_graph: bool, inputs: list[Tensor] | None = None,
                 accumulate: bool = True) -> list | None:
    """Backpropagate ``grads`` from ``outputs``.

    With ``accumulate`` (``Tensor.backward``) gradients go into leaves' ``.grad`` (only
    those in ``inputs`` if given). Without it (``autograd.grad``) the gradients of ``inputs``
    are returned instead, in order, None for an input the graph does not reach.
    """
    # (gradients flow as Tensors while a forward-AD level is open: their tangents are what
    # forward-over-reverse computes)
    raw = not create_graph and not _fw_state.active
    root_edges = [t._edge() for t in outputs]
    deps, targets, needed = _plan([e[0] for e in root_edges], inputs)
    buffers: dict = {}
    for (node, nr), g in zip(root_edges, grads):
        _add_to(buffers, node, nr, g._data if raw else g)
    ready = [(-n._sequence_nr, id(n), n) for n in buffers
             if (needed is None or n in needed) and not deps[n]]
    heapq.heapify(ready)
    captured = [None] * len(inputs) if inputs is not None else None
    keep = wrap if raw else _same
    anomaly = AnomalyMode.enabled
    # a one-output node's array rule is called directly unless Node.run_raw is wrapped (the
    # profiler times nodes that way)
    direct = Node.run_raw is _RUN_RAW
    prev_mode = (_grad_state.grad_mode, _grad_state.grad_enabled)
    _grad_state.grad_mode = create_graph
    _set_enabled(create_graph)
    callbacks: list = []
    _final_callbacks.append(callbacks)
    try:
        nxt = nxt_in = None  # the node made ready last runs next, unless the queue holds a
        while ready or nxt is not None:  # later one: a chain never touches queue or buffers
            if nxt is None:
                node = heappop(ready)[2]
                grads_in = buffers.pop(node)
            elif ready and ready[0][0] <= -nxt._sequence_nr:
                buffers[nxt] = nxt_in
                node = heappushpop(ready, (-nxt._sequence_nr, id(nxt), nxt))[2]
                grads_in = buffers.pop(node)
            else:
                node, grads_in = nxt, nxt_in
            nxt = None
            hits = targets.get(node) if targets is not None else None
            if hits is not None and not accumulate and type(node) is not AccumulateGrad \
                    and any(c in needed for c, _ in node.next_functions):
                # as torch does: autograd.grad captures an input's gradient before the tensor
                # hooks when its node runs on (after them when it stops there)
                for nr, k in hits:
                    captured[k] = keep(grads_in[nr])
                hits = None
            hooks = node._hooks
            if hooks is not None:
                grads_in = run_pre_hooks(hooks, [keep(g) for g in grads_in])
                if raw:
                    grads_in = [unwrap(g) for g in grads_in]
            kind = type(node)
            if kind is AccumulateGrad:
                if hits is not None and not accumulate:
                    for _, k in hits:
                        captured[k] = run_leaf_hooks(node.variable, keep(grads_in[0]))
                elif grads_in[0] is None:
                    pass
                elif raw:
                    # handed over with the engine's references dropped (the list, and the
                    # tuple the last node returned) so accumulate_leaf may adopt it as .grad
                    # when nothing else holds it (graph._adoptable): one local, ``g``
                    g = grads_in[0]
                    grads_in[0] = grads_out = None
                    accumulate_leaf(node.variable, g, False, True)
                else:
                    accumulate_leaf(node.variable, grads_in[0], True)
                continue
            array_rule, plain_release = _KINDS.get(kind) or _kind(kind)
            if hits is not None:
                for nr, k in hits:
                    if accumulate:
                        _accumulate_non_leaf(inputs[k], keep(grads_in[nr]))
                    else:
                        captured[k] = keep(grads_in[nr])
                if not any(c in needed for c, _ in node.next_functions):
                    continue
            if anomaly:
                grads_out = _run_node(node, grads_in, raw)
            elif not raw:
                grads_out = node.run(grads_in)
            elif direct and array_rule and len(grads_in) == 1:
                # ``Node.run_raw`` inlined for a one-output node with an array rule: a frame
                # less per node of the common case
                g = grads_in[0]
                if g is None:
                    grads_out = ()
                else:
                    grads_out = node.raw_backward(g)
                    if type(grads_out) is not tuple:
                        grads_out = (grads_out,)
            else:
                grads_out = node.run_raw(grads_in)
            if hooks is not None and hooks.post:
                grads_out = run_post_hooks(hooks, tuple([keep(g) for g in grads_out]),
                                           [keep(g) for g in grads_in])
                if raw:
                    grads_out = tuple([unwrap(g) for g in grads_out])
            if not keep_graph:
                if plain_release:  # Node._release inlined
                    node._saved = node._saved_out = None
                else:
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
                    # (a Tensor, when recording, is checked by its array's shape and dtype;
                    # the dtype by identity first: NumPy's dtypes of one kind are one object)
                    if (type(g) is not ndarray or g.dtype is not m[1] or g.shape != m[0]) and \
                            (raw or g._data.shape != m[0] or g._data.dtype != m[1]):
                        g = _validate(node, i, g, m, raw)
                left = deps[child] - 1
                if not left and nxt is None and child not in buffers:
                    nxt = child  # its only gradient: handed over directly
                    if child._num_outputs == 1:
                        nxt_in = [g]
                    else:
                        nxt_in = [None] * child._num_outputs
                        nxt_in[nr] = g
                    continue
                deps[child] = left
                _add_to(buffers, child, nr, g)
                if not left:
                    if nxt is None:
                        nxt, nxt_in = child, buffers.pop(child)
                    else:
                        heappush(ready, (-child._sequence_nr, id(child), child))
        # callbacks queued during this pass run last, in order; one may queue another
        i = 0
        while i < len(callbacks):
            callbacks[i]()
            i += 1
    finally:
        _final_callbacks.pop()
        _grad_state.grad_mode = prev_mode[0]
        _set_enabled(prev_mode[1])
    return captured


_RUN_RAW = Node.run_raw
_RELEASE = Node._release

# node class -> (whether its array rule can be called directly: ``run_raw`` is Node's and it
# has a ``raw_backward``; whether its ``_release`` is Node's). NOTE: read once per node in
# place of three class-attribute reads, which Python 3.11 does not specialise (~45 ns each)
_KINDS: dict = {}


def _kind(kind: type) -> tuple:
    info = _KINDS[kind] = (kind.run_raw is _RUN_RAW and kind.raw_backward is not None,
                           kind._release is _RELEASE)
    return info

# One list of final callbacks per backward pass in progress (nested passes stack)
_final_callbacks: list[list] = []


def queue_callback(callback) -> None:
    """Run ``callback()`` when the backward pass now running has finished, before
    ``backward()`` returns (torch's ``Variable._execution_engine.queue_callback``, which
    ``DistributedDataParallel`` uses to wait for its gradient all-reduces)."""
    if not _final_callbacks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _final_callbacks[-1].append(callback)


def _same(g):
    return g


def _add_to(buffers: dict, node: Node, nr: int, g) -> None:
    """Sum ``g`` into the gradient buffer of ``node``'s output ``nr``."""
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * node._num_outputs
    if g is not None:
        old = buf[nr]
        buf[nr] = g if old is None else old + g


def _run_node(node: Node, grads_in: list, raw: bool) -> tuple:
    """``run``/``run_raw`` under anomaly detection: a failing backward reports where its node
    was made; with ``check_nan``, a NaN gradient raises."""
    try:
        out = node.run_raw(grads_in) if raw else node.run(grads_in)
    except Exception:
        report_forward_trace(node)
        raise
    if AnomalyMode.check_nan:
        for i, g in enumerate(out):
            g = unwrap(g)
            if g is not None and hasattr(g, "dtype") and g.dtype.kind in FLOAT_KINDS and \
                    xp_of(g).isnan(g).any():
                report_forward_trace(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                   f"{i}th output.")
    return out


def _accumulate_non_leaf(t: Tensor, grad: Tensor | None) -> None:
    """``backward(inputs=[non_leaf])`` stores into its ``.grad`` as retain_grad would."""
    if grad is None:
        return
    t._grad = grad.detach().clone() if t._grad is None else t._grad + grad
