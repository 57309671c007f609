"""Backward-graph nodes: ``Node`` (what ``grad_fn`` is), ``AccumulateGrad``, saved tensors, hooks.

A node holds edges to the nodes of its inputs (``next_functions``, as ``(node, output_nr)``
pairs, ``(None, 0)`` for an input that needs no grad) and what its backward needs. It never
holds its own outputs: a saved output is kept as its array and rebuilt on unpack, so graphs
have no reference cycles and a dropped graph is freed at once, without the garbage collector.
Nodes are linked into the graph by ``record.py``, the one recording path.

The engine calls ``node.run(grads)`` (Tensors in and out, while recording a graph of the
backward pass) or ``node.run_raw(grads)`` (arrays in and out, no graph): the default wraps
the arrays as Tensors around ``backward``; an op with a ``raw_backward`` rule skips that.
"""

from __future__ import annotations

import itertools
import sys

from .._backend import as_array, from_numpy_dtype, host, ndarray
from .._backend import trace as _trace
from .. import _tensor as _tensor_module
from .._tensor import Tensor, _make
from ..utils.hooks import HookDict, add_hook
from .forward_ad import _OUTPUT_TANGENTS, set_tangent
from .forward_ad import state as _fw_state

# the nodes' creation order: a node's number is ``next(SEQUENCE)`` (NOTE: the builtin ``next``
# costs ~24 ns a call against ~36 for the bound ``__next__`` wrapper)
SEQUENCE = itertools.count()

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

    # One gradient per output (None where none flowed) in, one per input out.
    def backward(self, *grads):
        raise NotImplementedError(f"Differentiation rule for '{self.name()}' is not implemented")

    def run(self, grads: list) -> tuple:
        """``backward`` on Tensor gradients, as a tuple (empty if no gradient reached a
        single-output node)."""
        if len(grads) == 1:
            g = grads[0]
            if g is None:
                return ()
            out = self.backward(g)
        else:
            out = self.backward(*grads)
        return out if type(out) is tuple else (out,)

    def run_raw(self, grads: list) -> tuple:
        """``run`` on arrays, arrays out: the engine's path when it records no graph."""
        # NOTE: tested on the class and called as a method: ``self.raw_backward`` as a value
        # makes a bound method (~380 instructions, callgrind, against ~140 for the class read)
        if len(grads) == 1 and type(self).raw_backward is not None:
            g = grads[0]
            if g is None:
                return ()
            out = self.raw_backward(g)
            return out if type(out) is tuple else (out,)
        out = self.run([wrap(g) for g in grads])
        return tuple([g._data if isinstance(g, Tensor) else g for g in out])

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
        """The saved tensors, each checked against its version when saved. A saved output of
        this node (kept as ``(array, counter, output_nr)``, see ``record.save``) is rebuilt."""
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        versions = self._saved_versions
        if len(saved) == 2:
            # NOTE: the two-tensor case unrolled (mul, mm, ...): ~270 -> ~110 ns a call
            a, b = saved
            va, vb = versions
            if (va is None or (type(a) is not tuple and a._vc[0] == va)) and \
                    (vb is None or (type(b) is not tuple and b._vc[0] == vb)):
                return saved
        rebuilt = False
        for t, version in zip(saved, versions):
            if version is None:
                continue
            if type(t) is tuple:
                rebuilt = True
                data, counter, nr = t
                if counter[0] != version:
                    raise _modified_error(None, version, data=data, node=self,
                                          current=counter[0], nr=nr)
            elif t._vc[0] != version:
                raise _modified_error(t, version)
        if rebuilt:
            return tuple([self._rebuild_output(*t) if type(t) is tuple else t for t in saved])
        return saved

    def _rebuild_output(self, data, counter: list, nr: int) -> Tensor:
        t = _make(data, self)
        t._vc = counter
        t._output_nr = nr
        if _fw_state.active and nr == 0:  # forward-over-reverse: the output's tangent too
            tangent = _OUTPUT_TANGENTS.get(self)
            if tangent is not None:
                set_tangent(t, tangent)
        return t

    def _unpack_output(self):
        saved = self._saved_out
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        data, counter, version = saved
        if counter[0] != version:
            raise _modified_error(None, version, data=data, node=self, current=counter[0])
        return self._rebuild_output(data, counter, 0)

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


_tensor_module._accumulate_grad[0] = AccumulateGrad


def wrap(g) -> Tensor | None:
    """A raw gradient (an array, a NumPy scalar or None) as a Tensor, for ``backward`` rules
    and hooks."""
    if g is None or isinstance(g, Tensor):
        return g
    return _make(as_array(g))


def unwrap(g):
    return g._data if isinstance(g, Tensor) else g


# --------------------------------------------------------------------------- hooks


def checked_hook_result(fn, grad: Tensor, res) -> Tensor:
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


def run_pre_hooks(hooks: _NodeHooks, grads_in: list) -> list:
    """Tensor hooks on each output's gradient, retain_grad, then the node's pre-hooks."""
    if _trace.state.rec is not None and (any(hooks.tensor_pre.values()) or hooks.pre):
        _trace.graph_break("a Python hook on a gradient (Tensor.register_hook or a node "
                           "pre-hook) runs in backward")
    for nr, registry in hooks.tensor_pre.items():
        for fn in list(registry.values()):
            g = grads_in[nr]
            if g is None:
                break
            res = fn(g)
            if res is not None:
                grads_in[nr] = checked_hook_result(fn, g, res)
    for nr, fn in hooks.retain.items():
        if grads_in[nr] is not None:
            fn(grads_in[nr])
    for fn in list(hooks.pre.values()):
        res = fn(tuple(grads_in))
        if res is not None:
            grads_in = list(res)
    return grads_in


def run_post_hooks(hooks: _NodeHooks, grads_out: tuple, grads_in: list) -> tuple:
    if _trace.state.rec is not None and hooks.post:
        _trace.graph_break("a Python hook on a graph node (Node.register_hook) runs in backward")
    for fn in list(hooks.post.values()):
        res = fn(grads_out, tuple(grads_in))
        if res is not None:
            grads_out = tuple(res)
    return grads_out


def run_leaf_hooks(var: Tensor, grad: Tensor | None) -> Tensor | None:
    extra = var._extra
    if grad is not None and extra is not None and extra.hooks:
        if _trace.state.rec is not None:
            _trace.graph_break("a Python hook on a leaf's gradient (Tensor.register_hook) runs "
                               "in backward")
        for fn in list(extra.hooks.values()):
            res = fn(grad)
            if res is not None:
                grad = checked_hook_result(fn, grad, res)
    return grad


def _refs(a) -> int:
    return sys.getrefcount(a)


def _probe(a) -> tuple:  # _adoptable's pattern of references, for _calibrate
    b = a.base
    return _refs(a), _refs(b)


def _handed_over(grad) -> tuple:  # accumulate_leaf's frame
    return _probe(grad)


def _calibrate() -> tuple:
    g = host.empty(1).reshape(1)  # the engine's one local, a view of an array no one holds
    return _handed_over(g)


# The references a gradient the engine hands over has when nothing else holds it: the engine's
# local, the parameters of accumulate_leaf, _adoptable and _refs, and getrefcount's argument
# (5); for its base: _adoptable's local, _refs' parameter, getrefcount's argument and the
# view's ``base`` (4). The same call chain, measured here, must give just that (CPython 3.11);
# an interpreter that counts otherwise (borrowed stack references) disables adoption rather
# than guess.
_ADOPT_REFS, _ADOPT_BASE_REFS = (5, 4) if _calibrate() == (5, 4) else (0, 0)


def _adoptable(a, var: Tensor) -> bool:
    """Whether ``a``, a gradient the engine handed over with only its own reference
    (``owned``), can become ``var.grad`` as it is: what torch's AccumulateGrad checks with
    ``use_count() == 1`` and the layout contract.

    NOTE: this skips a copy of every parameter's gradient on every step. MLP 784-512-256-10,
    Adam, batch 128, 1 thread, in-process interleaved minima: 4.81 -> 4.59 and 5.13 -> 4.86
    ms a step (two runs); benchmarks/mlp.py peak RSS growth 3.3 -> 1.0 MiB.

    ``a`` qualifies when it is C-contiguous (what ``.copy()`` would make), writeable (later
    backwards add into it in place), has ``var``'s shape and dtype, and no Python reference
    beyond the engine's: any other holder (a tensor's
    ``_data``, a saved tensor, the other side of an add that returned one gradient twice, a
    hook's stash, a view of it, whose ``base`` is ``a``) raises ``sys.getrefcount``, and the
    copy is made as before. Its memory must be its own (``base is None``, ``owndata``) or, as
    for a transpose's backward (``g.T`` of a fresh ``matmul``) or ``sum_to``'s reshape of a
    keepdims sum, all of the memory of a ``base`` that owns it and that nothing else holds
    (same byte count, so a contiguous ``a`` covers all of it; any other view would hold it).
    """
    if not (type(a) is ndarray and a.flags.c_contiguous and a.flags.writeable
            and a.shape == var._data.shape and a.dtype == var._data.dtype
            and _refs(a) <= _ADOPT_REFS):
        return False
    b = a.base
    if b is None:
        return a.flags.owndata
    return type(b) is ndarray and b.base is None and b.flags.owndata \
        and b.nbytes == a.nbytes and _refs(b) <= _ADOPT_BASE_REFS


def accumulate_leaf(var: Tensor, grad, create_graph: bool, owned: bool = False) -> None:
    """What AccumulateGrad does: run the leaf's hooks, then add into ``var.grad`` (torch's
    rules). ``grad`` is a Tensor with ``create_graph``, else a raw array. ``owned``: the
    engine holds ``grad`` by one local and nothing else of its own (no list, buffer or
    tuple), so that ``_adoptable`` can count the references."""
    extra = var._extra
    if create_graph:
        grad = run_leaf_hooks(var, grad)
    elif extra is not None and extra.hooks:
        grad = run_leaf_hooks(var, wrap(grad))._data
        owned = False  # a hook may return a tensor it keeps: don't count on references
    old = var._grad
    if old is None:
        # a private copy (the same gradient may reach several leaves) unless the engine's own
        # array is free to take; with create_graph, a differentiable one, CopyBackwards as in
        # torch
        if not create_graph:
            var._grad = _make(grad if owned and _adoptable(grad, var) else grad.copy())
        elif grad._requires_grad:
            var._grad = _make(grad._data.copy()).copy_(grad)
        else:
            var._grad = _make(grad._data.copy())
    elif create_graph:
        var._grad = old + grad
    elif not old._data.flags.writeable:
        var._grad = wrap(old._data + grad)
    else:  # in place, as torch does outside create_graph (even into a grad that has history)
        old._data += grad
        old._vc[0] += 1
    if extra is not None and extra.post_acc_hooks:
        if _trace.state.rec is not None:
            _trace.graph_break("a post-accumulate-grad hook runs in backward "
                               "(Tensor.register_post_accumulate_grad_hook)")
        for fn in list(extra.post_acc_hooks.values()):
            fn(var)
