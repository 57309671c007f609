"""Backward-graph nodes: ``Node`` (what ``grad_fn`` is), ``AccumulateGrad``, saved tensors, hooks.

A node holds edges to the nodes of its inputs (``next_functions``, as ``(node, output_nr)``
pairs, ``(None, 0)`` for an input that needs no grad) and what its backward needs. It never
holds its own outputs: a saved output is kept as its array and rebuilt on unpack, so graphs
have no reference cycles and a dropped graph is freed at once, without the garbage collector.
"""

from __future__ import annotations

import itertools
import sys

from ..utils.hooks import HookDict, add_hook

_sequence = itertools.count()
next_sequence_nr = _sequence.__next__

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)

INFERENCE_SAVE_ERROR = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)


class _NodeHooks:
    __slots__ = ("post", "pre", "retain", "tensor_pre")

    def __init__(self) -> None:
        self.pre = HookDict()          # fn(grad_outputs) -> new grad_outputs | None
        self.post = HookDict()         # fn(grad_inputs, grad_outputs) -> new grad_inputs | None
        self.tensor_pre = {}           # output_nr -> HookDict of fn(grad) -> grad | None
        self.retain = {}               # output_nr -> fn(grad): retain_grad, run after the rest


class Node:
    """A function in the backward graph. ``name()`` is torch's name, e.g. ``MulBackward0``."""

    __slots__ = (
        "__weakref__",
        "_hooks",
        "_in_meta",
        "_metadata",
        "_saved",
        "_saved_out",
        "_saved_versions",
        "_sequence_nr",
        "_trace",
        "next_functions",
    )

    # a node with several outputs declares ``_num_outputs`` in its ``__slots__`` and sets it
    _num_outputs = 1
    # ``raw_backward(grad)``: the same rule on NumPy arrays, which the engine uses when it
    # records no graph (``create_graph=False``); None for a node that has only ``backward``
    raw_backward = None

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    # The engine calls this with one gradient per output (None where none flowed).
    def backward(self, *grads):
        raise NotImplementedError(f"Differentiation rule for '{self.name()}' is not implemented")

    def _release(self) -> None:
        """Free what backward needed; a second backward then raises FREED_MESSAGE."""
        self._saved = None
        self._saved_out = None

    # --- hooks (torch.autograd.graph.Node API) ---
    def _get_hooks(self) -> _NodeHooks:
        hooks = self._hooks
        if hooks is None:
            hooks = self._hooks = _NodeHooks()
        return hooks

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node runs; may return new grad_inputs."""
        return add_hook(self._get_hooks().post, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before this node runs; may return new grad_outputs."""
        return add_hook(self._get_hooks().pre, fn)

    def _register_tensor_prehook(self, output_nr: int, fn):
        hooks = self._get_hooks().tensor_pre
        registry = hooks.get(output_nr)
        if registry is None:
            registry = hooks[output_nr] = HookDict()
        return add_hook(registry, fn)

    @property
    def metadata(self) -> dict:
        """A dict for the user's own data about this node (kept with the node)."""
        try:
            return self._metadata
        except AttributeError:  # set on first use, to keep recording an op cheap
            self._metadata = {}
            return self._metadata

    # --- saved tensors ---
    def _check_saved(self) -> tuple:
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        for t, version in zip(saved, self._saved_versions):
            if version is not None and t._vc[0] != version:
                raise _modified_error(t, version)
        return saved

    def _unpack_output(self):
        saved = self._saved_out
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        data, counter, version = saved
        if counter[0] != version:
            raise _modified_error(None, version, data=data, node=self, current=counter[0])
        from .._tensor import _make_view_of_output
        return _make_view_of_output(data, self, counter)

    def saved_output_array(self):
        """The saved output's array (for ``raw_backward`` rules), checked as on unpack."""
        saved = self._saved_out
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        data, counter, version = saved
        if counter[0] != version:
            raise _modified_error(None, version, data=data, node=self, current=counter[0])
        return data


def _modified_error(t, expected: int, data=None, node=None, current=None,
                    nr: int = 0) -> RuntimeError:
    # torch names the tensor's current grad_fn (for a saved output: the node that saved it)
    # without its "Backward0" suffix: "output 0 of Exp"
    if t is not None:
        data, node, current, nr = t._data, t._grad_fn, t._vc[0], t._output_nr
    where = f", which is output {nr} of {_op_name(node)}," if node is not None else ""
    from .._backend import from_numpy_dtype
    dtype = from_numpy_dtype(data.dtype)
    shape = ", ".join(str(s) for s in data.shape)
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [torch.{dtype._legacy} [{shape}]]{where} is at version {current}; expected "
        f"version {expected} instead. Hint: enable anomaly detection to find the operation "
        "that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, "
        "check_nan=False)."
    )


def _op_name(node) -> str:
    """``ExpBackward0`` -> ``Exp``: how torch names a node in this message."""
    name = node.name()
    head, sep, tail = name.rpartition("Backward")
    return head if sep and head and (not tail or tail.isdigit()) else name


class AccumulateGrad(Node):
    """Sink for a leaf that requires grad: adds incoming gradients into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable) -> None:
        self.variable = variable
        self.next_functions = ()
        self._sequence_nr = sys.maxsize  # torch runs these as soon as they are ready
        self._in_meta = None
        self._saved = ()
        self._saved_versions = ()
        self._saved_out = None
        self._hooks = None
        self._trace = None

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"

    def _release(self) -> None:
        pass


def print_graph(output, file=None, params: dict | None = None) -> None:
    """Print the backward graph of ``output`` (a tensor, a ``grad_fn``, or a tuple/list of
    them) as an indented tree, inputs in ``next_functions`` order. A leaf shows its name
    from ``params`` (``dict(model.named_parameters())``) and its shape; a node reached again
    is marked ``[#k]`` where first drawn and referenced as ``[#k] (shown above)`` afterwards.
    Iterative, so any depth works: every 32 levels the indentation wraps to the left margin."""
    from .._tensor import Tensor

    names = {id(v): k for k, v in (params or {}).items()}
    roots = []
    for out in output if isinstance(output, (tuple, list)) else (output,):
        if isinstance(out, Tensor):
            if out.grad_fn is None:
                state = "a leaf that requires grad" if out.requires_grad else \
                    "does not require grad"
                roots.append(f"<tensor of shape {tuple(out.shape)}: no grad_fn, {state}>")
                continue
            out = out.grad_fn
        roots.append(out)

    # nodes reached along more than one edge get a reference number
    seen_once, shared, stack = set(), {}, [r for r in roots if isinstance(r, Node)]
    while stack:
        node = stack.pop()
        if id(node) in seen_once:
            shared.setdefault(id(node), 0)
            continue
        seen_once.add(id(node))
        stack.extend(n for n, _ in node.next_functions or () if n is not None)

    def label(node) -> str:
        name = type(node).__name__
        if isinstance(node, AccumulateGrad):
            var = node.variable
            shape = tuple(var.shape)
            name += f" ({names[id(var)]}: {shape})" if id(var) in names else f" ({shape})"
        return name

    write = (file if file is not None else sys.stdout).write
    refs: dict[int, int] = {}
    wrap = 32
    # (node, prefix of this line, prefix for its children, depth)
    stack = [(r, "", "", 0) for r in reversed(roots)]
    while stack:
        node, prefix, child_prefix, depth = stack.pop()
        if isinstance(node, str):
            write(node + "\n")
            continue
        text = label(node)
        key = id(node)
        if key in shared:
            if key in refs:
                write(f"{prefix}{text} [#{refs[key]}] (shown above)\n")
                continue
            refs[key] = len(refs) + 1
            text += f" [#{refs[key]}]"
        write(prefix + text + "\n")
        children = [n for n, _ in node.next_functions or () if n is not None]
        if children and (depth + 1) % wrap == 0:
            write(f"{child_prefix}└─ ... (depth {depth + 1} continues at the left margin)\n")
            stack.extend((n, "", "", depth + 1) for n in reversed(children))
            continue
        for i in range(len(children) - 1, -1, -1):
            last = i == len(children) - 1
            stack.append((children[i], child_prefix + ("└─ " if last else "├─ "),
                          child_prefix + ("   " if last else "│  "), depth + 1))
