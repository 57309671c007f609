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

from .._backend import host, ndarray, trace

_VIEW_FNS = frozenset({"ndarray.reshape", "ndarray.transpose", "ndarray.T", "ndarray.mT",
                       "ndarray.__getitem__", "ndarray.swapaxes", "ndarray.squeeze",
                       "ndarray.ravel", "ndarray.view", "ndarray.diagonal", "ndarray.real",
                       "ndarray.imag", "numpy.broadcast_to", "numpy.expand_dims",
                       "numpy.moveaxis", "numpy.transpose", "numpy.reshape", "numpy.squeeze",
                       "numpy.swapaxes", "numpy.asarray", "numpy.ascontiguousarray",
                       "numpy.asanyarray"})


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


def _first_refs(values: list) -> dict[int, int]:
    """id(array) -> the first reference standing for it (a kernel such as ``asarray`` may
    hand back the very array it was given: those references are one array)."""
    out: dict[int, int] = {}
    for i, v in enumerate(values):
        if isinstance(v, ndarray):
            out.setdefault(id(v), i)
    return out


def _root(values: list, ids: dict, i: int) -> int:
    """The reference whose array owns the memory of reference ``i`` (itself if none)."""
    b = getattr(values[i], "base", None)
    root = ids.get(id(values[i]), i)
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
        # (the recorder is not kept: its captured arrays would outlive the capture)
        values = rec.values
        refs = rec.refs
        plain_ids = _first_refs(values)
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
        self.instrs = kept
        # -- constants folded, views of externals hoisted, common subexpressions shared
        written = {_root(values, plain_ids, w.i) for ins in kept for w in ins.writes}
        hoisted: dict[int, object] = {}
        alias: dict[int, int] = {}
        body = []
        seen: dict = {}
        constant: set[int] = set()
        version: dict[int, int] = {}  # root -> how many writes so far
        for ins in kept:
            if optimize and not ins.writes and ins.outs and _pure(ins):
                rs = [alias.get(i, i) for i in uses(ins)]
                roots = [_root(values, plain_ids, o) for o in ins.outs]
                fixed = not any(r in written or r in escaping_roots for r in roots)
                if fixed and all(i in constant for i in rs):
                    # made from Python values alone (an index range, a zero to compare with)
                    # and never written: the captured value serves every call
                    for o in ins.outs:
                        hoisted[o] = values[o]
                        constant.add(o)
                    continue
                if ins.name in _VIEW_FNS and ins.shape == "one" \
                        and _hoistable(ins, refs, hoisted, values, rs):
                    # a view of an external array: the same view of the same array every call
                    # (guards check the array is the same object)
                    hoisted[ins.outs[0]] = values[ins.outs[0]]
                    continue
                if fixed:
                    key = (ins.name, id(ins.fn), _key(ins.args, alias, version, values,
                                                       plain_ids),
                           _key(ins.kwargs, alias, version, values, plain_ids))
                    prev = seen.get(key)
                    if prev is not None and len(prev) == len(ins.outs):
                        for o, p in zip(ins.outs, prev):
                            alias[o] = p
                        continue
                    seen[key] = list(ins.outs)
            for w in ins.writes:
                r = _root(values, plain_ids, w.i)
                version[r] = version.get(r, 0) + 1
            body.append(ins)
        self.alias = alias
        def root(i: int) -> int:
            return _root(values, plain_ids, alias.get(i, i))

        # -- a ufunc computed into a temporary that is then copied into an array (what an
        # in-place tensor op does: ``w.sub_(d)`` is ``copyto(w, w - d)``) computes into that
        # array directly: one pass, not two
        if optimize:
            body = _fuse_copyto(body, values, alias, root, written)
        # -- copies of arrays that nothing reads afterwards (the engine's private copy of a
        # gradient, which eager code avoids by counting references) are the array itself
        if optimize:
            made = {o for ins in body for o in ins.outs}
            last = _last_uses(body, root)
            elided = []
            for k, ins in enumerate(body):
                rs = uses(ins)
                if ins.name == "ndarray.copy" and len(rs) == 1 and len(ins.args) == 1 \
                        and not ins.kwargs and ins.shape == "one":
                    r = alias.get(rs[0], rs[0])
                    big = root(r)
                    v = values[r]
                    if big in made and refs[big].kind == "res" and big not in hoisted \
                            and last.get(big) == k and isinstance(v, ndarray) \
                            and v.flags.c_contiguous and big not in written \
                            and root(ins.outs[0]) not in written:
                        alias[ins.outs[0]] = r
                        elided.append(k)
            if elided:
                drop = set(elided)
                body = [ins for k, ins in enumerate(body) if k not in drop]
            escaping_roots = {root(i) for i in list(results) + list(keep_alive)}
        # -- out= buffers for ufunc results that stay inside the call (and whose shape is the
        # same on every call: not after a boolean mask or nonzero). A buffer serves one result
        # after another once the last one is no longer read (liveness over the program, as a
        # register allocator): the working set stays as small as eager code's, which reuses
        # freed memory, and nothing is allocated per call.
        buffers: dict[int, object] = {}
        if optimize:
            dynamic = _dynamic_shapes(kept, values)
            dynamic |= {o for o, a in alias.items() if a in dynamic}
            last = _last_uses(body, root)
            pool: dict[tuple, list] = {}
            owned: dict[int, list] = {}  # body index -> buffers free after it
            for k, ins in enumerate(body):
                if type(ins.fn) is host.ufunc and ins.shape == "one" and "out" not in ins.kwargs \
                        and not getattr(ins, "scalar", False) and ins.outs[0] not in dynamic:
                    o = ins.outs[0]
                    v = values[o]
                    if isinstance(v, ndarray) and v.base is None and o not in keep_alive \
                            and root(o) == o and o not in escaping_roots:
                        key = (v.shape, v.dtype.str, v.strides)
                        free = pool.get(key)
                        buffers[o] = free.pop() if free else host.empty_like(v)
                        owned.setdefault(last.get(o, k), []).append((key, buffers[o]))
                for key, buf in owned.pop(k, ()):
                    pool.setdefault(key, []).append(buf)
        self.hoisted = hoisted
        self.buffers = buffers
        self.body = body
        self.args = list(args)
        self.results = list(results)
        self.fn = self._generate(values, refs, defined)

    def _generate(self, values, refs, defined: set):
        alias = self.alias
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
            i = alias.get(i, i)
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
            # (a kernel NumPy answers with a scalar gives one here too, as in eager code)
            call = f"{const(ins.fn)}({', '.join(parts + parts_kw)})"
            if ins.shape == "one" and ins.outs:
                lines.append(f"    v{ins.outs[0]} = {call}")
            elif ins.shape == "tuple" and ins.outs:
                names = ", ".join(f"v{o}" for o in ins.outs)
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


class CheckError(ValueError):
    """A late check that cannot move to the front (``hoist_checks``); ``where`` is its line."""

    def __init__(self, reason: str, where: str) -> None:
        super().__init__(reason)
        self.where = where


def hoist_checks(rec, instrs: list) -> list:
    """``instrs`` with each late check (``Recorder.check``) moved to the front, together with
    the kernels its value comes from (and those that wrote into their arrays before it), so
    that a replay whose check fails has changed nothing yet. Raises ``ValueError`` when that
    would change a value: the check reads external state, or an input written in place, or
    what it comes from writes outside itself or draws random numbers."""
    if not any(ins.name == "check-late" for ins in instrs):
        return instrs
    values = rec.values
    plain_ids = _first_refs(values)
    producer = {o: k for k, ins in enumerate(instrs) for o in ins.outs}
    writers: dict[int, list[int]] = {}
    for k, ins in enumerate(instrs):
        for w in ins.writes:
            writers.setdefault(_root(values, plain_ids, w.i), []).append(k)
    moved: set[int] = set()
    for k, ins in enumerate(instrs):
        if ins.name != "check-late":
            continue
        cone = {k}
        roots: set[int] = set()
        stack = [k]
        while stack:
            for i in uses(instrs[stack.pop()]):
                r = _root(values, plain_ids, i)
                kind = rec.refs[r].kind
                if kind in ("ext", "input") and any(j < k for j in writers.get(r, ())):
                    raise CheckError("Python control flow on a value computed from tensors "
                                     "(bool()) after the call changed them in place", ins.where)
                if kind == "res":
                    roots.add(r)
                for j in (producer.get(i), producer.get(r), *writers.get(r, ())):
                    if j is not None and j < k and j not in cone:
                        if not _pure(instrs[j]):
                            raise CheckError("Python control flow on random numbers drawn in "
                                             "the call (bool())", ins.where)
                        cone.add(j)
                        stack.append(j)
        for j in cone:  # what the cone writes must be its own arrays
            for w in instrs[j].writes:
                if _root(values, plain_ids, w.i) not in roots:
                    raise CheckError("Python control flow on a value computed from tensors "
                                     "(bool()) after the call changed state in place",
                                     ins.where)
        moved |= cone
    front = [ins for k, ins in enumerate(instrs) if k in moved]
    return front + [ins for k, ins in enumerate(instrs) if k not in moved]


# kernels whose result's shape depends on the data
_DATA_SHAPED = frozenset({"ndarray.nonzero", "numpy.nonzero", "numpy.unique", "numpy.argwhere",
                          "numpy.flatnonzero", "numpy.extract", "ndarray.compress",
                          "numpy.compress", "numpy.bincount", "numpy.histogram",
                          "numpy.unique_values", "numpy.unique_counts", "numpy.unique_inverse",
                          "numpy.unique_all", "numpy.trim_zeros", "numpy.arange",
                          "numpy.linspace", "numpy.repeat", "ndarray.repeat"})


def _fuse_copyto(body: list, values, alias: dict, root, written: set) -> list:
    """``t = ufunc(..); copyto(dst, t)`` as ``ufunc(.., out=dst)`` where nothing else reads
    ``t`` and ``t`` has ``dst``'s shape and dtype (see ``Program``)."""
    last = _last_uses(body, root)
    out = []
    k = 0
    n = len(body)
    while k < n:
        a = body[k]
        b = body[k + 1] if k + 1 < n else None
        if b is not None and b.name == "numpy.copyto" and type(a.fn) is host.ufunc \
                and a.shape == "one" and "out" not in a.kwargs and not a.writes \
                and len(b.args) == 2 and type(b.args[0]) is trace.Ref \
                and type(b.args[1]) is trace.Ref and set(b.kwargs) <= {"casting"}:
            t = alias.get(b.args[1].i, b.args[1].i)
            dst = b.args[0]
            tv, dv = values[t], values[alias.get(dst.i, dst.i)]
            if t == a.outs[0] and last.get(root(t)) == k + 1 and root(t) == t \
                    and root(t) not in written and isinstance(tv, ndarray) \
                    and isinstance(dv, ndarray) and tv.shape == dv.shape \
                    and tv.dtype == dv.dtype:
                fused = trace.Instr(a.fn, a.args, dict(a.kwargs, out=dst), a.name)
                fused.writes = [dst]
                fused.shape = "none"
                alias[t] = alias.get(dst.i, dst.i)
                out.append(fused)
                k += 2
                continue
        if b is not None and b.name == "numpy.copyto" and a.name in _ZEROS \
                and a.shape == "one" and not a.writes and len(b.args) == 2 \
                and type(b.args[0]) is trace.Ref and type(b.args[1]) is trace.Ref \
                and set(b.kwargs) <= {"casting"}:
            # ``x.zero_()``: zeros made, then copied in: a fill
            t = alias.get(b.args[1].i, b.args[1].i)
            dst = b.args[0]
            tv, dv = values[t], values[alias.get(dst.i, dst.i)]
            if t == a.outs[0] and last.get(root(t)) == k + 1 and isinstance(tv, ndarray) \
                    and isinstance(dv, ndarray) and tv.shape == dv.shape \
                    and tv.dtype == dv.dtype and not tv.any():
                fill = trace.Instr(ndarray.fill, (dst, 0), {}, "ndarray.fill")
                fill.writes = [dst]
                out.append(fill)
                k += 2
                continue
        out.append(a)
        k += 1
    return out


_ZEROS = frozenset({"numpy.zeros_like", "numpy.zeros"})


def _last_uses(body: list, root) -> dict[int, int]:
    """For each array (by the reference owning its memory), the index of the last kernel in
    ``body`` that reads or writes it."""
    last: dict[int, int] = {}
    for k, ins in enumerate(body):
        for i in uses(ins):
            last[root(i)] = k
        for o in ins.outs:
            last.setdefault(root(o), k)
    return last


def _dynamic_shapes(instrs: list, values) -> set[int]:
    """The references whose shape may differ from call to call under the same guards: results
    of data-shaped kernels, of boolean-mask indexing and of ``where(cond)``, and everything
    computed from them."""
    dynamic: set[int] = set()
    for ins in instrs:
        rs = uses(ins)
        dyn = any(i in dynamic for i in rs) or ins.name in _DATA_SHAPED
        if not dyn and ins.name == "ndarray.__getitem__":
            dyn = any(getattr(values[i], "dtype", None) is not None
                      and values[i].dtype.kind == "b" for i in rs[1:])
        if not dyn and ins.name == "numpy.where" and len(ins.args) == 1:
            dyn = True
        if dyn:
            dynamic.update(ins.outs)
    return dynamic


def _pure(ins) -> bool:
    """Whether a kernel's result depends on its arguments alone (no draw, no check, no
    fresh array whose identity matters: those are only folded when never written)."""
    return ins.fn is not trace._expect and type(ins.fn).__name__ != "_Draw"


def _key(x, alias: dict, version: dict, values, plain_ids):
    """A hashable image of an argument template: references (through ``alias``) with the
    write count of the memory they view, constants by type and repr."""
    t = type(x)
    if t is trace.Ref:
        i = alias.get(x.i, x.i)
        r = _root(values, plain_ids, i)
        return ("r", i, version.get(r, 0))
    if t is tuple or t is list:
        return (t.__name__,) + tuple(_key(v, alias, version, values, plain_ids) for v in x)
    if t is dict:
        return ("d",) + tuple((k, _key(v, alias, version, values, plain_ids))
                              for k, v in sorted(x.items()))
    return (t.__name__, repr(x))


def _hoistable(ins, refs, hoisted: dict, values, rs=None) -> bool:
    """Whether a view kernel depends only on external arrays (and hoisted views of them)."""
    rs = uses(ins) if rs is None else rs
    if not rs:
        return False
    for i in rs:
        if i not in hoisted and refs[i].kind != "ext":
            return False
    if ins.name == "ndarray.__getitem__" and len(rs) != 1:
        return False  # an index array: a gather, not a view
    out = values[ins.outs[0]]
    return isinstance(out, ndarray) and out.base is not None


__all__ = ["CheckError", "Program", "hoist_checks", "uses"]
