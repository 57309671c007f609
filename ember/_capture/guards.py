"""Guards of ``ember.compile``: what a capture depends on besides its inputs, and what a call
may change that a replay would not.

* ``modules_of``/``reference_guards``: the modules a call can reach (its arguments, bound
  ``self``, closure and the globals its code names) and, by identity, the tensors, modules and
  optimizers those names and the modules' parameters, buffers and submodules are;
* ``hyperparameters``/``optimizers_of``: the optimizers' settings (an LR scheduler's new rate
  means a new capture);
* ``python_state``/``what_changed``: the Python values the call reaches by name, snapshot before
  and after a captured call: a change is Python work a replay would not redo, a graph break.
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from .capture import Capture

__all__ = ["hyperparameters", "modules_of", "optimizer_state", "optimizers_of", "python_state",
           "reference_guards", "settings_changed", "what_changed"]


def modules_of(fn, leaves: list) -> list:
    """Modules whose ``training`` flags a call of ``fn`` may read: in its arguments, bound
    ``self``, closure and the globals its code names (one level, as dynamo's guards see)."""
    from ..nn.modules.module import Module

    found: dict[int, Any] = {}

    def add(obj) -> None:
        if isinstance(obj, Module) and id(obj) not in found:
            for m in obj.modules():
                found[id(m)] = m

    for x in leaves:
        add(x)
    target = getattr(fn, "__func__", fn)
    add(getattr(fn, "__self__", None))
    add(fn)
    code = getattr(target, "__code__", None)
    if code is not None:
        for cell in getattr(target, "__closure__", None) or ():
            try:
                add(cell.cell_contents)
            except ValueError:
                pass
        g = getattr(target, "__globals__", {})
        for name in code.co_names:
            add(g.get(name))
    return list(found.values())


def hyperparameters() -> dict:
    """Every optimizer's param-group settings (Python numbers and the like): compared before
    and after a captured call, and guarded on later calls."""
    from ..optim.optimizer import _INSTANCES

    out = {}
    for opt in list(_INSTANCES):
        out[id(opt)] = [tuple((k, v) for k, v in group.items() if k != "params"
                              and isinstance(v, (int, float, bool, tuple, str, type(None))))
                        for group in opt.param_groups]
    return out


def reference_guards(fn, modules: list) -> tuple[list, list]:
    """Guards on which objects the call reaches (see ``Entry.ref_guards``)."""
    from ..nn.modules.module import Module
    from ..optim.optimizer import Optimizer

    kinds = (Tensor, Module, Optimizer)
    refs = []
    cells = []
    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if code is not None:
        g = getattr(target, "__globals__", {})
        for name in sorted(_code_names(code, set())):
            v = g.get(name)
            if isinstance(v, kinds):
                refs.append((g, name, v))
        for cell in getattr(target, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if isinstance(v, kinds):
                cells.append((cell, v))
    for m in modules:
        for d in (m._parameters, m._buffers, m._modules):
            for k, v in d.items():
                refs.append((d, k, v))
    return refs, cells


def _code_names(code, acc: set) -> set:
    """The global names ``code`` and the functions defined in it read."""
    acc.update(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            _code_names(c, acc)
    return acc


def _snapshot(v):
    """What a Python value is now, to notice a change: identity, and the items of a list,
    dict or set (by identity), and a module's plain attributes."""
    from ..nn.modules.module import Module

    t = type(v)
    if t is list or t is tuple:
        return (id(v), tuple(map(id, v))) if len(v) <= 1000 else (id(v), len(v))
    if t is dict:
        return (id(v), tuple((k, id(x)) for k, x in v.items())) if len(v) <= 1000 \
            else (id(v), len(v))
    if t is set:
        return (id(v), len(v))
    if isinstance(v, Module):
        return (id(v), tuple((k, id(x)) for k, x in v.__dict__.items()
                             if isinstance(x, (int, float, str, bool, type(None), list, dict))))
    return (id(v),)


def python_state(fn, leaves: list) -> dict:
    """The Python values a call of ``fn`` can change that a replay would not: the globals its
    code names, its closure, the modules it calls (their plain attributes, such as a step
    counter) and the lists and dicts passed to it."""
    out: dict = {}
    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if code is not None:
        g = getattr(target, "__globals__", {})
        for name in _code_names(code, set()):
            if name in g:
                out[name] = _snapshot(g[name])
        for name, cell in zip(code.co_freevars, getattr(target, "__closure__", None) or ()):
            try:
                out[name] = _snapshot(cell.cell_contents)
            except ValueError:
                pass
    for m in modules_of(fn, leaves):
        out[f"{type(m).__name__} attributes"] = _snapshot(m)
    for k, x in enumerate(leaves):
        if type(x) in (list, dict, set):
            out[f"argument {k}"] = _snapshot(x)
    return out


def what_changed(before: dict, after: dict) -> str:
    names = [k for k, v in before.items() if after.get(k) != v]
    return ", ".join(names[:3])


def settings_changed(before: dict, cap: Capture) -> bool:
    """Whether an optimizer the call used has other settings now than ``before``."""
    now = hyperparameters()
    for opt in optimizers_of(set(cap.ext_tensors)):
        a, b = before.get(id(opt)), now.get(id(opt))
        if a is not b and a != b:
            return True
    return False


def optimizer_state() -> dict:
    """A shallow copy of every optimizer's state (what a fullgraph error puts back)."""
    from ..optim.optimizer import _INSTANCES

    return {opt: {p: dict(st) for p, st in opt.state.items()} for opt in list(_INSTANCES)}


def optimizers_of(touched: set) -> list:
    from ..optim.optimizer import _INSTANCES

    out = []
    for opt in list(_INSTANCES):
        for group in opt.param_groups:
            if any(id(p) in touched for p in group["params"]):
                out.append(opt)
                break
    return out
