"""Per-op timing that costs nothing when off: timed wrappers swapped in while a profiler
records, and the original functions put back when it stops.

While recording, every registered op (``ops/_registry.py``'s ``REGISTRY``: function, method,
in-place and operator forms) and every ``nn.functional`` function is replaced by a timed
wrapper wherever a loaded ember module or ``Tensor`` holds it: the ``ember`` namespace,
``ember.nn.functional``, the op modules' globals (so ops that composites call inside ember are
seen too, nested under their caller, as torch shows ``aten::mm`` under ``aten::matmul``), and
``Tensor``'s methods and operators. Backward nodes are timed by wrapping ``Node.run_raw`` and
``Node.run``. Calls not seen: functions a module bound under another name before the profiler
started in a container or closure (not a module global), and code in modules loaded while
recording (they hold the originals).
"""

from __future__ import annotations

import sys
import time
import traceback
from types import FunctionType

from ._events import FunctionEvent

_clock = time.perf_counter_ns


class Recorder:
    """The events of one recording: a stack of open ranges and every closed one."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool) -> None:
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack = with_stack
        self.events: list[FunctionEvent] = []
        self.stack: list[FunctionEvent] = []

    def begin(self, name: str, args=None, kwargs=None,
              user_annotation: bool = False) -> FunctionEvent:
        parent = self.stack[-1] if self.stack else None
        shapes = _shapes(args, kwargs) if self.record_shapes and args is not None else None
        stack = _user_stack() if self.with_stack else None
        evt = FunctionEvent(len(self.events), name, 0, parent, shapes, stack, user_annotation)
        self.events.append(evt)
        if parent is not None:
            parent.cpu_children.append(evt)
        self.stack.append(evt)
        evt._start_ns = evt._end_ns = _clock()  # last: the bookkeeping is not the op's time
        return evt

    def end(self, evt: FunctionEvent, result=None) -> None:
        evt._end_ns = _clock()
        if self.profile_memory and result is not None:
            evt.cpu_memory_usage = _nbytes(result)
        stack = self.stack
        while stack:  # (an exception may leave inner ranges open: close them with this one)
            if stack.pop() is evt:
                break


def _shapes(args, kwargs) -> list:
    from .._tensor import Tensor
    values = [*args, *(kwargs or {}).values()]
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in values]


def _nbytes(result) -> int:
    from .._tensor import Tensor
    items = result if isinstance(result, (tuple, list)) else (result,)
    return sum(r._data.nbytes for r in items if isinstance(r, Tensor))


def _user_stack() -> list[str]:
    """The caller's frames outside ember, innermost first (torch's ``with_stack`` entries)."""
    frames = [f for f in traceback.extract_stack()[:-3] if "/ember/" not in f.filename]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)]


class _State:
    recorder: Recorder | None = None


state = _State()


def _timed(fn, name: str):
    def timed(*args, **kwargs):
        rec = state.recorder
        # (an F.relu composite calling the op relu: one aten::relu, as torch shows)
        if rec is None or (rec.stack and rec.stack[-1].name == name):
            return fn(*args, **kwargs)
        evt = rec.begin(name, args, kwargs)
        result = None
        try:
            result = fn(*args, **kwargs)
            return result
        finally:
            rec.end(evt, result)

    timed.__name__, timed.__qualname__ = fn.__name__, fn.__qualname__
    timed.__doc__, timed.__module__ = fn.__doc__, fn.__module__
    timed.__wrapped__ = fn
    return timed


def _timed_node(method, raw: bool):
    def run(self, grads):
        rec = state.recorder
        # run_raw falls back to run: one event per node
        if rec is None or (not raw and rec.stack and rec.stack[-1].name == _node_key(self)):
            return method(self, grads)
        evt = rec.begin(_node_key(self))
        try:
            return method(self, grads)
        finally:
            rec.end(evt)
    run.__name__ = method.__name__
    run.__wrapped__ = method
    return run


def _node_key(node) -> str:
    return "autograd::engine::evaluate_function: " + node.name()


def _targets() -> dict[int, tuple]:
    """id(function) -> (function, profiler name) for every op form and nn.functional function."""
    from ..ops._registry import REGISTRY, _with_keyword_aliases
    found: dict[int, tuple] = {}

    def add(fn, name: str) -> None:
        if isinstance(fn, FunctionType) and id(fn) not in found:
            found[id(fn)] = (fn, name)

    for info in REGISTRY.values():
        name = "aten::" + info.name.strip("_")
        add(info.fn, name)
        add(info.public, name)
        if info.operator is not None:  # what ``x + y`` runs (``register(operator=...)``)
            add(info.operator, name)
        if callable(info.method):
            add(info.method, name)
            add(_with_keyword_aliases(info.method), name)
        if callable(info.inplace):
            add(info.inplace, name + "_")
    functional = sys.modules.get("ember.nn.functional")
    if functional is not None:
        for key, fn in vars(functional).items():
            if isinstance(fn, FunctionType) and not key.startswith("_") \
                    and fn.__module__.startswith("ember."):
                add(fn, "aten::" + key)
    return found


def _method_names() -> dict[str, str]:
    """Tensor attribute -> profiler name, for methods found by name: the in-place forms
    ``bind`` built (``add_``, ``__iadd__``: new closures) and methods an op module rebound
    after ``bind``."""
    from ..ops._registry import REGISTRY
    names = {}
    for info in REGISTRY.values():
        base = info.name.strip("_")
        if info.method:
            for n in (info.name, *info.aliases):
                names[n] = f"aten::{base}"
        if info.inplace is True:
            for n in (info.name, *info.aliases):
                names[n + "_"] = f"aten::{n.strip('_')}_"
        for dunder in info.operators:
            if dunder.startswith("__i") and dunder not in ("__index__", "__int__", "__invert__"):
                names[dunder] = f"aten::{base}_"
    return names


class Patches:
    """The swapped-in wrappers of one recording, and how to put the originals back."""

    def __init__(self) -> None:
        self._undo: list[tuple] = []

    def install(self) -> None:
        from .._tensor import Tensor
        from ..autograd.graph import Node
        targets = _targets()
        wrappers: dict[int, FunctionType] = {}

        def wrapper(fn, name):
            w = wrappers.get(id(fn))
            if w is None:
                w = wrappers[id(fn)] = _timed(fn, name)
            return w

        for mod_name, module in list(sys.modules.items()):
            if module is None or not (mod_name == "ember" or mod_name.startswith("ember.")) \
                    or mod_name.startswith(("ember.profiler", "ember.testing")):
                continue
            d = vars(module)
            for key, value in list(d.items()):
                hit = targets.get(id(value))
                if hit is not None and hit[0] is value:
                    self._undo.append((d, key, value))
                    d[key] = wrapper(value, hit[1])
        by_name = _method_names()
        for key, value in list(vars(Tensor).items()):
            if not isinstance(value, FunctionType):
                continue
            hit = targets.get(id(value))
            name = hit[1] if hit is not None and hit[0] is value else (
                by_name.get(key) if value.__module__.startswith("ember.ops") else None)
            if name is not None:
                self._undo.append((Tensor, key, value))
                setattr(Tensor, key, wrapper(value, name))
        for key, raw in (("run_raw", True), ("run", False)):
            original = vars(Node)[key]
            self._undo.append((Node, key, original))
            setattr(Node, key, _timed_node(original, raw))

    def uninstall(self) -> None:
        for owner, key, value in reversed(self._undo):
            if isinstance(owner, dict):
                owner[key] = value
            else:
                setattr(owner, key, value)
        self._undo.clear()
