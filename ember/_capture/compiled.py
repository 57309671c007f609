"""``Compiled``: what ``ember.compile`` returns for a function: capture once, replay after.

Per call signature (tensor arguments' shapes, dtypes and ``requires_grad``, other arguments'
values, grad mode) the first call runs eagerly: it builds optimizer state, gradients and lazy
modules as eager code does. The second captures (``capture.py``) and checks the capture by
replaying it against the eager result of the same call, from the same state: a replay that
differs is never used. Later calls whose guards hold replay it.

What a replay is depends on the capture:

* **whole step** (the call ran ``backward()`` itself, or grad mode is off): one program, from
  the inputs to the outputs and to everything the call changed (parameters, gradients,
  optimizer state, buffers);
* **forward with a backward to come** (outputs require grad): the call's backward is captured
  too, at capture time, as ``autograd.grad`` of the outputs with respect to every tensor that
  requires grad; a replay returns outputs whose ``grad_fn`` is one ``CompiledFunctionBackward``
  node, whose backward replays that program.

A call that meets a graph break runs eagerly from the break on; its signature then stays eager
(``fullgraph=True`` raises instead), and ``explain`` lists the breaks.
"""

from __future__ import annotations

import functools
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from .._backend import dtypes as _dt
from .._backend import host, ndarray, trace
from .._tensor import Tensor, _make
from ..amp import _state as _amp
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..autograd.grad_mode import state as _grad_state
from ..compiler import _stance
from ..func._pytree import tree_flatten, tree_unflatten
from .capture import Capture, rng_state, set_rng_state
from .errors import Unsupported
from .guards import (
    hyperparameters,
    modules_of,
    optimizer_state,
    optimizers_of,
    python_state,
    reference_guards,
    settings_changed,
    what_changed,
)
from .program import CheckError, Program, hoist_checks, uses

_ALL: weakref.WeakSet = weakref.WeakSet()  # every Compiled, for ``torch.compiler.reset``


def reset_all() -> None:
    """Forget every capture (``torch.compiler.reset``/``torch._dynamo.reset``)."""
    for c in list(_ALL):
        c.reset()


class _Routing:
    """While a broken call runs eagerly, the modules it calls are compiled on their own."""

    __slots__ = ("depth",)

    def __init__(self) -> None:
        self.depth = 0


_routing = _Routing()




class BreakInfo:
    """One graph break: why, and the user's source line (torch's ``GraphCompilationReason``:
    ``reason`` and ``user_stack``)."""

    __slots__ = ("reason", "where")

    def __init__(self, reason: str, where: str) -> None:
        self.reason = reason
        self.where = where

    @property
    def user_stack(self) -> list[str]:
        return [self.where]

    def __repr__(self) -> str:
        return f"GraphBreak(reason={self.reason!r}, where={self.where!r})"


class Stats:
    """What compiling cost and gave: captures, replays, eager calls, times."""

    def __init__(self) -> None:
        self.captures = 0
        self.replays = 0
        self.eager_calls = 0
        self.recaptures = 0
        self.capture_seconds = 0.0
        self.kernels = 0

    def __repr__(self) -> str:
        return (f"Stats(captures={self.captures}, replays={self.replays}, "
                f"eager_calls={self.eager_calls}, recaptures={self.recaptures}, "
                f"kernels={self.kernels}, capture_seconds={self.capture_seconds:.4f})")


class CompiledFunction(Function):
    """The node of a compiled forward: its backward replays the captured backward program
    (``CompiledFunctionBackward``, as torch names it)."""

    @staticmethod
    def forward(ctx, entry, inputs, *diff_inputs):
        outs, saved = entry.run_forward(inputs)
        ctx.entry = entry
        ctx.saved = saved
        ctx.diff_inputs = diff_inputs
        result = tuple([_make(_array(o)) for o in outs])
        pos = entry.diff_pos
        if len(pos) != len(result):  # indices and the like: outside the graph, as in eager
            ctx.mark_non_differentiable(*[r for k, r in enumerate(result) if k not in pos])
        return result

    @staticmethod
    def backward(ctx, *grads):
        entry = ctx.entry
        # upstream gradients in the layout the backward was captured with (C order)
        arrays = [_contiguous(grads[k]._data) for k in entry.diff_pos]
        try:
            out = entry.bwd.fn(*arrays, *(ctx.saved or ()))
        except trace.Diverged:
            raise RuntimeError("ember.compile: a value check in a compiled backward came out "
                               "differently than when it was captured; call "
                               "torch.compiler.reset() or run this model eagerly") from None
        result = [None, None]
        k = 0
        # with create_graph the gradients are right but carry a node that refuses a backward
        # through them: torch's DelayedError for compiled graphs
        delayed = _grad_state.grad_enabled
        for has in entry.grad_slots:
            if has:
                g = _make(out[k])
                if delayed:
                    g = DelayedError.apply(g, *ctx.diff_inputs)
                result.append(g)
                k += 1
            else:
                result.append(None)
        return tuple(result)


def _array(a):
    """A NumPy scalar a replay made (as eager NumPy does) as the 0-d array a tensor holds."""
    return a if type(a) is ndarray else host.asarray(a)


def _contiguous(a):
    return a if a.flags.c_contiguous else host.ascontiguousarray(a)


class DelayedError(Function):
    """The gradient of a compiled graph taken with ``create_graph=True``: its own backward
    raises torch's error (``DelayedErrorBackward``)."""

    @staticmethod
    def forward(ctx, value, *anchors):
        return value.detach().clone() if hasattr(value, "detach") else value

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("torch.compile with aot_autograd does not currently support double "
                           "backward")


class Entry:
    """One captured graph: its guards, programs and effects."""

    def __init__(self) -> None:
        self.broken: BreakInfo | None = None
        self.eager_reason: str | None = None
        self.fwd: Program | None = None
        self.bwd: Program | None = None
        self.ext_guards: list = []  # (tensor, array, requires_grad)
        self.grad_guards: list = []  # (tensor, grad)
        self.module_guards: list = []  # (module, training)
        # (dict, key, object): the tensors, modules and optimizers the function's globals and
        # its modules' parameters/buffers/submodules are, by identity (a rebinding recaptures)
        self.ref_guards: list = []
        self.cell_guards: list = []  # (closure cell, object)
        self.scalar_guards: list = []  # (dict, key, value): optimizer hyperparameters
        self.data_effects: list = []  # (tensor, index into the program's results)
        self.grad_effects: list = []  # (tensor, value)
        self.vc_effects: list = []  # (counter list, delta)
        # the same for the tensors passed in, by position: they are new objects every call
        self.input_grad_guards: list = []  # (k, grad was None)
        self.input_grad_effects: list = []  # (k, index into the results, or None)
        self.input_vc_effects: list = []  # (k, delta)
        self.n_out = 0
        self.out_spec = None
        self.out_leaves: list = []  # ("res", k) | ("obj", obj) | ("input", i) | ("diff", j)
        self.diff = False
        self.grad_slots: list = []
        self.diff_inputs: list = []  # (True, input position) or (False, tensor)
        self.diff_pos: list = []  # the outputs (among the results) that are differentiable
        self.n_saved = 0
        self._args: list = []  # the tensors passed to the call being replayed

    def guards_hold(self) -> bool:
        for t, a, rg in self.ext_guards:
            if t._data is not a or t._requires_grad is not rg:
                return False
        for t, g, same in self.grad_guards:
            cur = t._grad
            if (cur is None) is not (g is None) or (same and cur is not g):
                return False
        for m, training in self.module_guards:
            if m.training is not training:
                return False
        for d, k, v in self.ref_guards:
            if d.get(k) is not v:
                return False
        for cell, v in self.cell_guards:
            if cell.cell_contents is not v:
                return False
        for d, k, v in self.scalar_guards:
            if d.get(k) != v:
                return False
        return True

    def run_forward(self, inputs: list):
        res = self.fwd.fn(*inputs)
        for t, k in self.data_effects:
            t._data = _array(res[k])
            t._meta = None
        for t, g in self.grad_effects:
            t._grad = g
        for vc, d in self.vc_effects:
            vc[0] += d
        n = self.n_out
        saved = res[len(res) - self.n_saved:] if self.n_saved else None
        if self.input_grad_effects or self.input_vc_effects:
            args_tensors = self._args
            for k, j in self.input_grad_effects:
                args_tensors[k]._grad = None if j is None else _make(_array(res[j]))
            for k, d in self.input_vc_effects:
                args_tensors[k]._vc[0] += d
        return res[:n], saved

    def run(self, args_tensors: list) -> Any:
        self._args = args_tensors
        inputs = [t._data for t in args_tensors]
        if self.input_grad_guards:
            for k, was_none in self.input_grad_guards:
                if (args_tensors[k]._grad is None) is not was_none:
                    raise trace.Diverged
        if self.diff:
            outs = CompiledFunction.apply(self, inputs, *[
                args_tensors[v] if k else v for k, v in self.diff_inputs])
            if type(outs) is not tuple:
                outs = (outs,)
        else:
            outs, _ = self.run_forward(inputs)
        leaves = []
        for kind, v in self.out_leaves:
            if kind == "res":
                leaves.append(outs[v] if self.diff else _make(_array(outs[v])))
            elif kind == "input":
                leaves.append(args_tensors[v])
            else:
                leaves.append(v)
        return tree_unflatten(leaves, self.out_spec)


def _signature(leaves: list) -> tuple:
    """The cache key of a call: what a capture specializes on (tensor arguments' shapes,
    dtypes, strides and requires_grad; other arguments' values), and the global modes ops
    read: grad and inference mode, CPU autocast and its dtype, the default dtype."""
    key = [_grad_state.grad_enabled, _grad_state.inference,
           _amp.active and _amp.dtypes["cpu"], _dt.get_default_dtype()]
    for x in leaves:
        if isinstance(x, Tensor):
            d = x._data
            key.append((d.shape, d.dtype, x._requires_grad, d.strides))
        elif x is None or isinstance(x, (bool, int, float, str)):
            key.append((type(x), x))
        else:
            key.append(("id", id(x)))
    return tuple(key)


def _same(a, b) -> bool:
    a, b = host.asarray(a), host.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(host.array_equal(a, b, equal_nan=True))
    return bool(host.array_equal(a, b))


class Compiled:
    """A compiled callable (see the module docstring)."""

    def __init__(self, fn: Callable, *, fullgraph: bool = False, dynamic: bool | None = None,
                 mode: str | None = None, recompile_limit: int | None = None,
                 nested: bool = False) -> None:
        self.fn = fn
        self.nested = nested  # a module compiled on its own inside a broken call
        self.children: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        _ALL.add(self)
        self.fullgraph = fullgraph
        self.mode = mode
        self.dynamic = dynamic
        if recompile_limit is None:
            from .._dynamo import config
            recompile_limit = min(config.recompile_limit, config.cache_size_limit)
        self.limit = recompile_limit
        self.entries: dict[tuple, list[Entry]] = {}
        self.seen: dict[tuple, int] = {}
        self.breaks: list[BreakInfo] = []
        self.stats = Stats()
        self._warned = False
        functools.update_wrapper(self, fn)

    def __reduce__(self):
        """Pickled and copied as the function and options: the copy captures anew."""
        return (_rebuild, (self.fn, self.fullgraph, self.mode, self.limit, self.nested))

    def reset(self) -> None:
        """Forget this callable's captures and breaks."""
        self.entries.clear()
        self.seen.clear()
        self.breaks.clear()
        self.children = weakref.WeakKeyDictionary()
        self._warned = False

    # -- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if trace.state.rec is not None or _stance["stance"] == "force_eager":
            return self.fn(*args, **kwargs)  # (inside another capture: part of that one)
        leaves, _ = tree_flatten((args, kwargs))
        key = _signature(leaves)
        entries = self.entries.get(key)
        if entries:
            for e in entries:
                if e.broken is not None:
                    self.stats.eager_calls += 1
                    return self._run_broken(args, kwargs)
                if e.eager_reason is not None:
                    self.stats.eager_calls += 1
                    return self.fn(*args, **kwargs)
                if e.guards_hold():
                    self.stats.replays += 1
                    try:
                        return e.run([x for x in leaves if isinstance(x, Tensor)])
                    except trace.Diverged:
                        self.stats.eager_calls += 1
                        return self.fn(*args, **kwargs)
        stance = _stance["stance"]
        if stance != "default" and self.entries:  # a new capture would be a recompile
            if stance == "fail_on_recompile":
                code = getattr(self.fn, "__code__", None)
                raise RuntimeError("Detected recompile when torch.compile stance is "
                                   "'fail_on_recompile'. filename: "
                                   f"'{getattr(code, 'co_filename', '?')}', function name: "
                                   f"'{getattr(self.fn, '__name__', '?')}'")
            if stance == "eager_on_recompile":
                self.stats.eager_calls += 1
                return self.fn(*args, **kwargs)
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        if n == 0:  # the first call runs eagerly (it makes optimizer state, .grad, lazy
            # parameters), traced only to find graph breaks (fullgraph raises here)
            return self._capture(key, args, kwargs, leaves, build=False)
        if entries and len(entries) >= self.limit:
            if entries and len(entries) >= self.limit and not self._warned:
                self._warned = True
                warnings.warn(f"ember.compile: {getattr(self.fn, '__name__', 'function')} hit "
                              f"the recompile limit ({self.limit}): guards failed "
                              f"{self.limit} times for one signature; running eagerly from "
                              "now on", stacklevel=2)
            self.stats.eager_calls += 1
            return self.fn(*args, **kwargs)
        if entries:
            self.stats.recaptures += 1
        return self._capture(key, args, kwargs, leaves)

    def _run_broken(self, args, kwargs):
        """A call whose capture broke: run it eagerly, each module it calls compiled on its
        own (capture resumes after the break, module by module)."""
        if self.nested or _routing.depth:
            return self.fn(*args, **kwargs)
        from ..nn.modules.module import Module

        call = Module.__call__
        top = self.fn
        children = self.children

        def route(mod, *a, **k):
            if mod is top or _routing.depth:
                return call(mod, *a, **k)
            c = children.get(mod)
            if c is None:
                c = children[mod] = Compiled(mod, fullgraph=False, nested=True,
                                             recompile_limit=self.limit)
            _routing.depth += 1
            try:
                return c(*a, **k)
            finally:
                _routing.depth -= 1

        Module.__call__ = route
        try:
            return self.fn(*args, **kwargs)
        finally:
            Module.__call__ = call

    # -- capturing -------------------------------------------------------------------------
    def _capture(self, key, args, kwargs, leaves, build: bool = True):
        t0 = time.perf_counter()
        entry = Entry()
        tensors = [x for x in leaves if isinstance(x, Tensor)]
        if build:
            self.stats.captures += 1
        else:
            self.stats.eager_calls += 1
        out = self._capture_into(entry, args, kwargs, leaves, tensors, build)
        if build or entry.broken is not None:
            self.entries.setdefault(key, []).append(entry)
        self.stats.capture_seconds += time.perf_counter() - t0
        return out

    def _capture_into(self, entry: Entry, args, kwargs, leaves, tensors, build: bool):
        if len({id(t) for t in tensors}) != len(tensors):
            entry.eager_reason = "the same tensor is passed twice"
            return self.fn(*args, **kwargs)
        if any(type(t._data) is not ndarray for t in tensors):
            entry.eager_reason = ("ember.compile captures NumPy (CPU) arrays; the inputs are "
                                  "on another device")
            return self.fn(*args, **kwargs)
        cap = Capture()
        hyper = hyperparameters()  # the optimizers' settings as the call starts
        py_state = python_state(self.fn, leaves)
        opt_state = optimizer_state() if self.fullgraph else None
        rec = cap.rec
        rec.fullgraph = self.fullgraph
        from ..random import default_generator
        cap.rng_used(default_generator)
        grad_on = _grad_state.grad_enabled
        diff_outs: list = []
        diff_inputs: list = []
        grads = None
        out = None
        brk = None
        split = None
        gos_refs: list = []
        try:
            with cap:
                for t in tensors:
                    cap.add_input(t)
                try:
                    out = self.fn(*args, **kwargs)
                    out_leaves, out_spec = tree_flatten(out)
                    if grad_on and cap.backward_runs == 0 and not rec.dead and build:
                        diff_outs = [t for t in out_leaves if isinstance(t, Tensor)
                                     and t._requires_grad and t._grad_fn is not None
                                     and id(t) not in cap.ext_tensors]
                    split = len(rec.instrs)
                    if diff_outs:
                        diff_inputs = [t for t, _, _ in cap.ext_tensors.values()
                                       if t._requires_grad]
                        gos = []
                        for t in diff_outs:
                            a = trace.plain(t._data)
                            g = rec.input(trace.ones(a.shape, a.dtype), snapshot=False)
                            gos_refs.append(rec.ids[id(g)])
                            gos.append(_make(g))
                        from ..autograd import grad as _grad
                        grads = _grad(diff_outs, diff_inputs, gos, retain_graph=True,
                                      allow_unused=True)
                        del gos, g
                except trace.GraphBreak as gb:
                    brk = gb
                if brk is None and not rec.dead and settings_changed(hyper, cap):
                    # an LR scheduler stepped inside: Python state a replay would not change
                    trace.graph_break("the call changes an optimizer's settings (an LR "
                                      "scheduler stepped inside the compiled function?)")
                if brk is None and not rec.dead:
                    changed = what_changed(py_state, python_state(self.fn, leaves))
                    if changed:
                        trace.graph_break(f"the call changes Python state ({changed}): a "
                                          "replay runs no Python, so it would not")
        finally:
            cap.restore()
        if brk is not None:  # fullgraph: undo what the call changed, then raise
            self._undo(cap, full=True, opt_state=opt_state)
            self.breaks.append(BreakInfo(brk.reason, brk.where))
            entry.broken = self.breaks[-1]
            raise Unsupported(f"ember.compile(fullgraph=True): graph break at {brk.where}: "
                              f"{brk.reason}")
        if rec.broken is not None:
            info = BreakInfo(rec.broken.reason, rec.broken.where)
            self.breaks.append(info)
            entry.broken = info
            return out
        if not build:
            return out
        held = {"out": out, "out_leaves": out_leaves, "diff_outs": diff_outs, "grads": grads,
                "hyper": hyper}
        del out, out_leaves, diff_outs, grads
        try:
            return self._build(entry, cap, held, out_spec, split, diff_inputs, gos_refs,
                               leaves, tensors)
        except _Broken as b:  # found when building the program: a graph break all the same
            info = BreakInfo(b.reason, b.where)
            self.breaks.append(info)
            entry.broken = info
            return held["out"]
        except _Eager as e:
            entry.eager_reason = str(e)
            warnings.warn(f"ember.compile: running {getattr(self.fn, '__name__', 'function')} "
                          f"eagerly: {e}", stacklevel=4)
            return held["out"]

    def _undo(self, cap: Capture, full: bool = False, opt_state: dict | None = None) -> None:
        """Put back what the call changed: arrays that existed before it, random generators,
        and (``full``, for a fullgraph error) tensors' arrays, ``.grad``, version counters and
        optimizer state."""
        rec = cap.rec
        for i, snap in rec.ext_snap.items():
            if rec.values[i].flags.writeable:  # (a read-only one was only read)
                host.copyto(rec.values[i], snap)
        for gen, st in cap.rngs.values():
            set_rng_state(gen, st)
        if not full:
            return
        for t, orig, _ in cap.ext_tensors.values():
            t._data = orig
            t._meta = None
        for t, g in cap.grad_reads.values():
            t._grad = g
        for vc, v0 in cap.vcs.values():
            vc[0] = v0
        for opt, state in (opt_state or {}).items():
            opt.state.clear()
            opt.state.update(state)

    def _build(self, entry: Entry, cap: Capture, held: dict, out_spec, split, diff_inputs,
               gos_refs, leaves, tensors):
        rec = cap.rec
        out_leaves = held["out_leaves"]
        diff_outs = held["diff_outs"]
        grads = held["grads"]
        ids = rec.ids
        values = rec.values

        def ref_of(t: Tensor) -> int:
            a = t._data
            i = ids.get(id(a))
            if i is None:
                raise _Eager("a tensor holds an array the capture did not follow")
            return i

        input_ids = {id(t): k for k, t in enumerate(tensors)}
        # outputs
        results: list[int] = []
        out_kinds = []
        diff_ids = {id(t) for t in diff_outs}
        for x in out_leaves:
            if isinstance(x, Tensor):
                if id(x) in input_ids:
                    out_kinds.append(("input", input_ids[id(x)]))
                elif id(x) in cap.ext_tensors and cap.ext_tensors[id(x)][2] == "ext" \
                        and id(x) not in diff_ids:
                    out_kinds.append(("obj", x))
                else:
                    out_kinds.append(("res", len(results)))
                    results.append(ref_of(x))
            elif isinstance(x, (trace.Traced, trace.SymFloat)):
                raise _Eager("the function returns an array or number computed from tensors")
            else:
                out_kinds.append(("obj", x))
        n_out = len(results)
        res_ids = [id(x) for x in out_leaves if isinstance(x, Tensor)
                   and not (id(x) in input_ids or (id(x) in cap.ext_tensors
                                                   and cap.ext_tensors[id(x)][2] == "ext"))]
        entry.diff_pos = [k for k, tid in enumerate(res_ids) if tid in diff_ids]
        # effects on tensors that existed before the call
        data_effects = []
        for tid, (t, orig, kind) in cap.ext_tensors.items():
            i = ids.get(id(t._data))
            if t._data is orig:
                continue
            if kind == "input":
                raise _Eager("the function replaces an input tensor's data")
            if i is None:
                raise _Eager("a tensor's data was replaced by an array the capture did not "
                             "follow")
            data_effects.append((t, i))
        # tensors made during the call and still alive (a new .grad, a stored activation); the
        # eager outputs (and their graph) are let go first, unless the capture is not used
        out_objs = {id(x) for x in out_leaves if isinstance(x, Tensor)}
        grad_ids = {id(g) for g in (grads or ()) if g is not None}
        in_graph = _graph_saved_ids(diff_outs)
        for t in cap.alive_created():
            if id(t) in out_objs or id(t) in grad_ids or id(t) in in_graph:
                continue
            i = ids.get(id(t._data))
            if i is None:
                continue
            data_effects.append((t, i))
        # .grad of the tensors passed in: set on each call's own tensors, as new tensors
        input_grads = {}
        for tid, (t, v) in cap.grad_writes.items():
            if tid in input_ids:
                input_grads[input_ids[tid]] = v
        input_grad_objs = {id(v) for v in input_grads.values() if v is not None}
        data_effects = [(t, i) for t, i in data_effects if id(t) not in input_grad_objs]
        effect_refs = [i for _, i in data_effects]
        entry.data_effects = [(t, n_out + k) for k, (t, _) in enumerate(data_effects)]
        for k, v in input_grads.items():
            if v is None:
                entry.input_grad_effects.append((k, None))
            else:
                entry.input_grad_effects.append((k, n_out + len(effect_refs)))
                effect_refs.append(ref_of(v))
        entry.grad_effects = [(t, v) for tid, (t, v) in cap.grad_writes.items()
                              if tid not in input_ids]
        input_vcs = {id(t._vc): k for k, t in enumerate(tensors)}
        for vc, v0 in cap.vcs.values():
            if vc[0] != v0:
                if id(vc) in input_vcs:
                    entry.input_vc_effects.append((input_vcs[id(vc)], vc[0] - v0))
                else:
                    entry.vc_effects.append((vc, vc[0] - v0))
        # guards
        entry.ext_guards = [(t, orig, t._requires_grad)
                            for t, orig, kind in cap.ext_tensors.values() if kind == "ext"
                            and t._data is orig]
        entry.grad_guards = [(t, g, g is not None and id(g) in cap.ext_tensors)
                             for tid, (t, g) in cap.grad_reads.items() if tid not in input_ids]
        entry.input_grad_guards = [(input_ids[tid], g is None)
                                   for tid, (t, g) in cap.grad_reads.items() if tid in input_ids]
        touched = set(cap.ext_tensors)
        hyper = held["hyper"]
        for opt in optimizers_of(touched):
            for group, settings in zip(opt.param_groups, hyper.get(id(opt), ())):
                for k, v in settings:
                    entry.scalar_guards.append((group, k, v))
        modules = modules_of(self.fn, leaves)
        entry.module_guards = [(m, m.training) for m in modules]
        entry.ref_guards, entry.cell_guards = reference_guards(self.fn, modules)
        # programs
        input_refs = list(rec.inputs[:len(tensors)])
        entry.n_out = n_out
        entry.out_spec = out_spec
        entry.out_leaves = out_kinds
        try:
            fwd_part = hoist_checks(rec, rec.instrs[:split])
        except CheckError as e:
            raise _Broken(str(e), e.where) from None
        if diff_outs:
            fwd_instrs = fwd_part
            bwd_instrs = rec.instrs[split:]
            if any(ins.fn is trace._expect for ins in bwd_instrs):
                raise _Eager("its backward checks tensor values in Python, which a replayed "
                             "backward could not redo eagerly")
            grad_refs = []
            entry.grad_slots = []
            for g in grads:
                if g is None:
                    entry.grad_slots.append(False)
                else:
                    entry.grad_slots.append(True)
                    grad_refs.append(ref_of(g))
            fwd_defined = set(input_refs)
            for ins in fwd_instrs:
                fwd_defined.update(ins.outs)
            needed = set()
            bwd_defined = set(gos_refs)
            for ins in bwd_instrs:
                for i in uses(ins):
                    if i in fwd_defined and i not in bwd_defined:
                        needed.add(i)
                bwd_defined.update(ins.outs)
            needed.update(i for i in grad_refs if i in fwd_defined)
            saved = sorted(needed)
            entry.bwd = Program(rec, bwd_instrs, gos_refs + saved, grad_refs)
            # the backward program may not need all of them once dead code is gone
            used = set()
            for ins in entry.bwd.body:
                used.update(uses(ins))
            used.update(grad_refs)
            saved = [i for i in saved if i in used]
            entry.bwd = Program(rec, bwd_instrs, gos_refs + saved, grad_refs)
            entry.fwd = Program(rec, fwd_instrs, input_refs, results + effect_refs + saved,
                                keep_alive=set(saved))
            entry.n_saved = len(saved)
            entry.diff = True
            # the tensors passed in are new every call: those by position, the rest by object
            entry.diff_inputs = [(True, input_ids[id(t)]) if id(t) in input_ids else (False, t)
                                 for t in diff_inputs]
            self.stats.kernels += len(entry.fwd.body) + len(entry.bwd.body)
        else:
            entry.fwd = Program(rec, fwd_part, input_refs, results + effect_refs)
            self.stats.kernels += len(entry.fwd.body)
        # check the capture: replay the call from the same state and compare with eager
        reason = self._verify(entry, cap, tensors, results, effect_refs, diff_outs, grads)
        if reason is not None:
            raise _Eager(f"replaying the captured graph differs from eager ({reason})")
        # the eager results were checked equal: return them (the replay's for a forward, so
        # that its backward is the compiled one)
        if diff_outs:  # back to the state before the call, then the replay makes its effects
            self._undo(cap)
            return entry.run(tensors)
        leaves_out = []
        for kind, v in out_kinds:
            if kind == "res":
                leaves_out.append(_make(values[results[v]]))
            elif kind == "input":
                leaves_out.append(tensors[v])
            else:
                leaves_out.append(v)
        return tree_unflatten(leaves_out, out_spec)

    def _verify(self, entry: Entry, cap: Capture, tensors, results, effect_refs, diff_outs,
                grads) -> str | None:
        rec = cap.rec
        values = rec.values
        # (read-only arrays, e.g. the kept vectors of ones of ``_backend.sums``, are only read)
        post = {i: values[i].copy() for i in rec.ext_snap if values[i].flags.writeable}
        rng_post = {k: rng_state(gen) for k, (gen, _) in cap.rngs.items()}
        self._undo(cap)
        eager_vals = [values[i] for i in results + effect_refs]
        try:
            with no_grad():
                res = entry.fwd.fn(*[t._data for t in tensors])
                bres = None
                if diff_outs:
                    saved = res[len(res) - entry.n_saved:] if entry.n_saved else ()
                    gos = [host.ones_like(values[i]) for i in entry.bwd.args[:len(diff_outs)]]
                    bres = entry.bwd.fn(*gos, *saved)
        except trace.Diverged:
            return "a check on tensor values came out differently"
        except Exception as e:  # noqa: BLE001 - reported, and the call stays eager
            return f"{type(e).__name__}: {e}"
        finally:
            changed = []
            for i, p in post.items():
                if not _same(values[i], p):
                    changed.append(i)
                host.copyto(values[i], p)
            rng_now = {k: rng_state(gen) for k, (gen, _) in cap.rngs.items()}
            for k, (gen, _) in cap.rngs.items():
                set_rng_state(gen, rng_post[k])
        if changed:
            return f"{len(changed)} state arrays end differently"
        for k, v in enumerate(eager_vals):
            if not _same(res[k], v):
                return f"result {k} differs"
        if bres is not None:
            eager_grads = [g._data for g in grads if g is not None]
            for k, v in enumerate(eager_grads):
                if not _same(bres[k], v):
                    return f"gradient {k} differs"
        if rng_now != rng_post:
            return "the random number generator ends in another state"
        return None

    # -- explain ---------------------------------------------------------------------------
    def explain(self, *args, **kwargs) -> ExplainOutput:
        """Capture a call (without replaying it) and report the graphs and breaks, like
        ``torch._dynamo.explain``."""
        probe = Compiled(self.fn, fullgraph=False)
        probe.seen[_signature(tree_flatten((args, kwargs))[0])] = 1  # skip the warm-up
        probe(*args, **kwargs)
        return ExplainOutput(probe)


def _graph_saved_ids(roots: list) -> set:
    """The ids of the tensors the autograd graph of ``roots`` saves for its backward: alive
    only for the eager graph of the capture call, they are no effect of the call."""
    seen: set = set()
    out: set = set()
    stack = [t._grad_fn for t in roots if t._grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for s in getattr(node, "_saved", None) or ():
            if isinstance(s, Tensor):
                out.add(id(s))
        for nxt, _ in getattr(node, "next_functions", ()) or ():
            if nxt is not None:
                stack.append(nxt)
    return out


def _rebuild(fn, fullgraph, mode, limit, nested) -> Compiled:
    return Compiled(fn, fullgraph=fullgraph, mode=mode, recompile_limit=limit, nested=nested)


class _Broken(Exception):
    """A graph break found when the program is built (a late check that cannot move)."""

    def __init__(self, reason: str, where: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.where = where


class _Eager(Exception):
    """This capture cannot be replayed (the message says why): the signature runs eagerly."""


class ExplainOutput:
    """``torch._dynamo.explain``'s result: graph and break counts, the breaks with their
    reasons and source lines, and the captured programs' kernel counts."""

    def __init__(self, c: Compiled) -> None:
        entries = [e for es in c.entries.values() for e in es]
        self.graphs = [e for e in entries if e.fwd is not None]
        self.graph_count = len(self.graphs)
        self.break_reasons = list(c.breaks)
        self.graph_break_count = len(c.breaks)
        self.eager_reasons = [e.eager_reason for e in entries if e.eager_reason]
        self.op_count = sum(len(e.fwd.body) + (len(e.bwd.body) if e.bwd else 0)
                            for e in self.graphs)

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            for k, b in enumerate(self.break_reasons, 1):
                lines.append(f"  Break Reason {k}:")
                lines.append(f"    Reason: {b.reason}")
                lines.append(f"    User Stack: {b.where}")
        for r in self.eager_reasons:
            lines.append(f"Not replayed: {r}")
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn: Callable, *extra_args, **extra_kwargs):
    """``torch._dynamo.explain(fn)(*args)``: the ``ExplainOutput`` of one captured call."""
    if isinstance(fn, Compiled):
        fn = fn.fn

    def run(*args, **kwargs):
        return Compiled(fn).explain(*args, **kwargs)

    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run

