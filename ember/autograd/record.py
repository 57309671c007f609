"""The one way into the graph: ``link`` a node to its inputs, ``save`` what its backward
needs, ``emit`` its outputs.

Built-in ops (``Op.apply``, multi-output ops, view ops) and user ``autograd.Function``s all
record through these three calls, so this is the single place where forward-mode tangents,
graph capture and device checks plug in::

    link(node, inputs)                 # edges to the inputs' nodes, their shapes/dtypes
    save(node, (x, w))                 # saved tensors, version-checked on unpack
    outs = emit(node, [y, indices], differentiable=(True, False))

``differentiable[i]``: True (the default) links output i to the node, False leaves it out of
the graph (indices, masks), None leaves it exactly as it is (a Function's non-tensor output).

``emit`` wraps output arrays as Tensors (or adopts Tensors a Function returned) whose
``grad_fn`` is the node; ``view_of=`` makes outputs views of an input (sharing its version
counter, with the view chain an in-place op on them replays). The node never holds its own
outputs: a saved output is kept as ``(array, version counter, output_nr)``, so graphs have no
reference cycles and a dropped graph is freed at once.

NOTE: ``Op.apply``'s unary and binary forms (``ops/_op.py``) inline ``link``+``save``+``emit``
for one output: recording is the per-op cost that dominates small tensors. Routing them through
``record_op`` instead measured 2.10 vs 1.86 µs/op forward and 3.62 vs 3.33 µs/op forward+backward
(the 1,000-op chain of ``benchmarks/overhead.py``, best of 30, 3 runs each).
"""

from __future__ import annotations

from .._tensor import Tensor, _make
from .anomaly_mode import AnomalyMode, capture_trace
from .graph import INFERENCE_SAVE_ERROR, SEQUENCE, Node

_new = object.__new__
NO_EDGE = (None, 0)

# (shape, dtype) pairs shared between nodes, by shape: ``shape -> (dtype, pair, (pair,),
# (pair, pair), (pair, None), (None, pair))``, the node metadata tuples of one- and two-input
# ops. NOTE: a deep chain of ``y * c`` kept 9 objects (524 bytes) per node, 3 of them its
# ``_in_meta``; shared, it keeps 6 (364 bytes) and the collector traverses fewer of them. A
# dtype other than the entry's replaces it (correct, just not shared); the cache is cleared
# when it reaches ``_META_MAX`` shapes.
_META: dict = {}
_META_MAX = 512


def meta_entry(shape: tuple, dtype) -> tuple:
    """The shared metadata entry for an input of ``shape`` and ``dtype`` (see ``_META``)."""
    entry = _META.get(shape)
    if entry is None or entry[0] is not dtype:
        pair = (shape, dtype)
        entry = (dtype, pair, (pair,), (pair, pair), (pair, None), (None, pair))
        if len(_META) >= _META_MAX:
            _META.clear()
        _META[shape] = entry
    return entry


def link(node: Node, inputs) -> None:
    """Connect ``node`` to the graph of ``inputs`` (Tensors, or other values, which get no
    edge): ``next_functions`` in input order, each input's (shape, dtype) for the engine's
    unbroadcasting, a sequence number (the engine runs later nodes first), no hooks yet."""
    edges = []
    meta = []
    for x in inputs:
        if isinstance(x, Tensor):
            edges.append(x._edge())
            entry = x._meta  # (cached on the tensor: see Tensor's docstring)
            if entry is None:
                d = x._data
                entry = x._meta = meta_entry(d.shape, d.dtype)
            meta.append(entry[1])
        else:
            edges.append(NO_EDGE)
            meta.append(None)
    node.next_functions = tuple(edges)
    node._in_meta = tuple(meta)
    node._sequence_nr = next(SEQUENCE)
    node._hooks = None
    if AnomalyMode.enabled:  # (else ``_trace`` stays unset: its reader takes it as None)
        node._trace = capture_trace()


def save(node: Node, tensors: tuple, outputs: tuple = ()) -> None:
    """Keep ``tensors`` (Tensors, None, or other values) for ``node``'s backward with their
    versions; one of ``outputs`` (the node's own, already emitted) is kept as its array and
    counter, not as the Tensor, which would hold the node in a cycle."""
    saved = []
    versions = []
    for t in tensors:
        if not isinstance(t, Tensor):
            saved.append(t)
            versions.append(None)
            continue
        if t._grad_fn is node and outputs and any(t is o for o in outputs):
            saved.append((t._data, t._vc, t._output_nr))
        else:
            if t._extra is not None and t._extra.inference:
                raise RuntimeError(INFERENCE_SAVE_ERROR)
            saved.append(t)
        versions.append(t._vc[0])
    node._saved = tuple(saved)
    node._saved_versions = tuple(versions)


def _output(node: Node, data, nr: int) -> Tensor:
    t = _new(Tensor)
    t._data = data
    t._grad_fn = node
    t._requires_grad = True
    t._output_nr = nr
    t._vc = [0]
    t._grad = t._base = t._view = t._acc = t._extra = t._meta = None
    return t


def emit(node: Node, outputs, differentiable=None, view_of: Tensor | None = None,
         view_steps=None) -> list:
    """The node's outputs as Tensors: ``outputs`` are arrays (wrapped) or Tensors (adopted,
    for ``autograd.Function``). ``differentiable[i]`` False leaves output i out of the graph
    (indices, masks). ``view_of``: the outputs are views of that input, made by the view
    steps ``view_steps[i]`` (``(node class, params)``), sharing its version counter."""
    n = len(outputs)
    if n != 1 or not isinstance(type(node)._num_outputs, int):  # (a slot on multi-output nodes)
        node._num_outputs = n
    result = []
    for i, o in enumerate(outputs):
        diff = True if differentiable is None else differentiable[i]
        if diff is None:  # left as it is (a Function's non-tensor output, a rebased view)
            result.append(o)
        elif isinstance(o, Tensor):
            if diff:
                o._grad_fn = node
                o._output_nr = i
                o._requires_grad = True
                o._view = None  # a view made in forward: its history is this node now
            else:
                o._requires_grad = False
            result.append(o)
        else:
            result.append(_output(node, o, i) if diff else _make(o))
    if view_of is not None:
        for t, step in zip(result, view_steps):
            mark_view(t, view_of, step)
    if getattr(node, "save_output", False):
        first = result[0]
        node._saved_out = (first._data, first._vc, 0)
    else:
        node._saved_out = None
    return result


def mark_view(out: Tensor, input: Tensor, step) -> None:
    """Make ``out`` a view of ``input`` by the view op ``step`` = (node class, params): it shares
    the root base's version counter, and an in-place op on it can replay the chain."""
    base = input._base
    out._base = input if base is None else base
    out._vc = input._vc
    out._view = (step,) if base is None else input._view + (step,)


def record(node: Node, inputs, outputs, saved: tuple = (), differentiable=None,
           view_of: Tensor | None = None, view_steps=None) -> list:
    """``link`` + ``save`` + ``emit``: a built-in op's whole recording in one call."""
    link(node, inputs)
    if saved:
        save(node, saved)
    else:
        node._saved = node._saved_versions = ()
    return emit(node, outputs, differentiable, view_of, view_steps)


def device_mismatch(inputs) -> RuntimeError | None:
    """Torch's error when ``inputs`` hold tensors on different devices (None if they don't).
    A 0-d CPU tensor mixes with any device, as in torch. Called when a kernel has failed, so
    it costs nothing on the way through."""
    devices = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.device
            if d.type == "cpu" and not x._data.ndim:
                continue
            if d not in devices:
                devices.append(d)
    if len(devices) < 2:
        return None
    return RuntimeError("Expected all tensors to be on the same device, but found at least two "
                        f"devices, {devices[0]} and {devices[1]}!")


def needs_recording(inputs, grad_enabled: bool) -> bool:
    """Whether an op on ``inputs`` must be recorded: grad mode on and a Tensor requiring grad."""
    if not grad_enabled:
        return False
    for x in inputs:
        if isinstance(x, Tensor) and x._requires_grad:
            return True
    return False

