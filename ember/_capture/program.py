"""A captured trace as a straight-line Python function of array kernels.

``Program`` takes the recorder's kernels (``_backend/trace.py``) between two points, the
references given as arguments and those to return, and generates one Python function: a
line per kernel, every array a local variable, every other value (the kernel itself, a shape,
a dtype, an external array such as a parameter) a closure constant. Before that it

* drops kernels whose results nothing uses (dead code; kernels that write in place stay);
* hoists views of external arrays (``W.T``, a reshape of a parameter): they are taken once,
  at build time, since guards make sure the external array is the same object at every call;
* gives each ufunc whose result does not outlive the call a buffer of its own, allocated once,
  to compute into with ``out=`` (no allocation per call).

Replay then runs no Tensor, graph node, version counter or dispatch code: only the kernels.
"""

from __future__ import annotations

import operator

from .._backend import host, ndarray, trace

_VIEW_FNS = frozenset({"ndarray.reshape", "ndarray.transpose", "ndarray.T", "ndarray.mT",
                       "ndarray.__getitem__", "ndarray.swapaxes", "ndarray.squeeze",
                       "ndarray.ravel", "ndarray.view", "ndarray.diagonal", "ndarray.real",
                       "ndarray.imag", "numpy.broadcast_to", "numpy.expand_dims",
                       "numpy.moveaxis", "numpy.transpose", "numpy.reshape", "numpy.squeeze",
                       "numpy.swapaxes", "numpy.asarray", "numpy.ascontiguousarray",
                       "numpy.asanyarray"})


USE_BUFFERS = True


def _refs_in(x, acc: list) -> list:
    """The ``Ref``s inside an argument template, appended to ``acc``."""
    t = type(x)
    if t is trace.Ref:
        acc.append(x.i)
    elif t is tuple or t is list:
        for v in x:
            _refs_in(v, acc)
    elif t is dict:
        for v in x.values():
            _refs_in(v, acc)
    return acc


def uses(instr) -> list:
    return _refs_in(instr.kwargs, _refs_in(instr.args, []))


def _root(values: list, ids: dict, i: int) -> int:
    """The reference whose array owns the memory of reference ``i`` (itself if none)."""
    b = getattr(values[i], "base", None)
    root = i
    while b is not None:
        j = ids.get(id(b))
        if j is not None:
            root = j
        b = getattr(b, "base", None)
    return root


class Program:
    """Straight-line code for ``instrs`` (see the module docstring): ``fn(*args)`` returns the
    arrays of ``results`` in order."""

    def __init__(self, rec, instrs: list, args: list[int], results: list[int],
                 keep_alive: set[int] = frozenset(), optimize: bool = True) -> None:
        self.rec = rec
        values = rec.values
        refs = rec.refs
        plain_ids = {id(v): i for i, v in enumerate(values) if isinstance(v, ndarray)}
        defined = set(args)
        for ins in instrs:
            defined.update(ins.outs)
        # -- dead code: walk back from the results and the kernels that write in place
        live = set(results)
        kept = []
        escaping_roots = {_root(values, plain_ids, i) for i in list(results) + list(keep_alive)}
        for ins in reversed(instrs):
            if ins.writes or ins.fn is trace._expect or any(o in live for o in ins.outs) \
                    or not optimize:
                kept.append(ins)
                live.update(uses(ins))
                for w in ins.writes:
                    live.add(w.i)
        kept.reverse()
        # a write into a view reaches its base: everything a kept write aliases stays live
        self.instrs = kept
        # -- hoisting views of externals
        hoisted: dict[int, object] = {}
        body = []
        for ins in kept:
            if optimize and ins.name in _VIEW_FNS and not ins.writes and ins.shape == "one" \
                    and _hoistable(ins, refs, hoisted, values):
                hoisted[ins.outs[0]] = values[ins.outs[0]]
                continue
            body.append(ins)
        # -- out= buffers for ufunc results that stay inside the call
        buffers: dict[int, object] = {}
        if optimize and USE_BUFFERS:
            for ins in body:
                if type(ins.fn) is host.ufunc and ins.shape == "one" and "out" not in ins.kwargs \
                        and not getattr(ins, "scalar", False):
                    o = ins.outs[0]
                    v = values[o]
                    if _root(values, plain_ids, o) in escaping_roots or o in keep_alive:
                        continue
                    if not isinstance(v, ndarray) or v.base is not None:
                        continue
                    buffers[o] = host.empty_like(v)
            # a result must not be a buffer if a view of it escapes
            for o in list(buffers):
                if o in escaping_roots:
                    del buffers[o]
        self.hoisted = hoisted
        self.buffers = buffers
        self.body = body
        self.args = list(args)
        self.results = list(results)
        self.fn = self._generate(values, refs, defined)

    def _generate(self, values, refs, defined: set):
        consts: list = []
        const_ids: dict[int, str] = {}

        def const(obj) -> str:
            name = const_ids.get(id(obj))
            if name is None:
                name = f"c{len(consts)}"
                const_ids[id(obj)] = name
                consts.append(obj)
            return name

        bound: dict[int, str] = {}

        def ref(i: int) -> str:
            if i in self.hoisted:
                if i not in bound:
                    bound[i] = const(self.hoisted[i])
                return bound[i]
            kind = refs[i].kind
            if kind in ("ext",) and i not in defined:
                if i not in bound:
                    bound[i] = const(values[i])
                return bound[i]
            if i not in defined:
                raise RuntimeError(f"ember.compile: value %{i} ({kind}) is used by the "
                                   "captured program but never defined in it")
            return f"v{i}"

        def expr(x) -> str:
            t = type(x)
            if t is trace.Ref:
                return ref(x.i)
            if t is tuple:
                inner = ", ".join(expr(v) for v in x)
                return f"({inner},)" if x else "()"
            if t is list:
                return "[" + ", ".join(expr(v) for v in x) + "]"
            if x is None or x is True or x is False:
                return repr(x)
            if t is int and -(2 ** 31) < x < 2 ** 31:
                return repr(x)
            return const(x)

        lines = []
        for ins in self.body:
            parts = [expr(a) for a in ins.args]
            kw = dict(ins.kwargs)
            if ins.outs and ins.outs[0] in self.buffers:
                parts_kw = [f"{k}={expr(v)}" for k, v in kw.items()]
                parts_kw.append(f"out={const(self.buffers[ins.outs[0]])}")
            else:
                parts_kw = [f"{k}={expr(v)}" for k, v in kw.items()]
            call = f"{const(ins.fn)}({', '.join(parts + parts_kw)})"
            if getattr(ins, "scalar", False):
                call = f"{const(_asarray)}({call})"
            if ins.shape == "one" and ins.outs:
                lines.append(f"    v{ins.outs[0]} = {call}")
            elif ins.shape == "tuple" and ins.outs:
                names = ", ".join(f"v{o}" for o in ins.outs)
                if getattr(ins, "scalar", False):
                    lines.append(f"    {names}, = map({const(_asarray)}, {call[len(const(_asarray)) + 1:-1]})")
                else:
                    lines.append(f"    {names}, = {call}")
            else:
                lines.append(f"    {call}")
        rets = ", ".join(ref(r) for r in self.results)
        lines.append(f"    return ({rets},)" if self.results else "    return ()")
        params = ", ".join(f"v{a}" for a in self.args)
        head = [f"def _make({', '.join(f'c{i}' for i in range(len(consts)))}):",
                f"  def replay({params}):"]
        src = "\n".join(head + ["  " + ln for ln in lines] + ["  return replay"])
        self.source = src
        ns: dict = {}
        exec(compile(src, "<ember.compile>", "exec"), ns)  # noqa: S102 - generated here
        return ns["_make"](*consts)

    def __call__(self, *args):
        return self.fn(*args)


def _asarray(x):
    return x if type(x) is ndarray else host.asarray(x)


def _hoistable(ins, refs, hoisted: dict, values) -> bool:
    """Whether a view kernel depends only on external arrays (and hoisted views of them)."""
    rs = uses(ins)
    if not rs:
        return False
    for i in rs:
        if i not in hoisted and refs[i].kind != "ext":
            return False
    if ins.name == "ndarray.__getitem__" and len(rs) != 1:
        return False  # an index array: a gather, not a view
    out = values[ins.outs[0]]
    return isinstance(out, ndarray) and out.base is not None


__all__ = ["Program", "operator"]
