"""Array-level capture for ``ember.compile``: every NumPy kernel a call runs, as a flat program.

While a ``Recorder`` is active, the arrays a traced call computes on are ``Traced`` arrays: an
``ndarray`` subclass that computes exactly as NumPy does and records each kernel it takes part
in (ufuncs and their methods through ``__array_ufunc__``, NumPy functions through
``__array_function__``, and the ndarray methods NumPy does not dispatch, overridden here).
NumPy's allocation functions and conversions are swapped for recording ones during capture, so
an array made inside the call is traced too. What the recorder keeps per kernel is the
callable, its arguments with every array replaced by a reference (``Ref``), and references for
what it returns: ``program.py`` turns that into straight-line Python.

An array reaches the trace in one of four ways, its reference's ``kind``:

* ``"input"``: an argument of the compiled call, given anew on each replay;
* ``"ext"``: an array that existed before the call (a parameter, optimizer state, a scratch
  buffer), read and written in place by reference, as eager code would;
* ``"res"``: the result of a recorded kernel;
* ``"sym"``: a Python float computed from traced data (``symbolic``), for the step counters
  optimizers turn into bias corrections.

Anything the recorder cannot follow ends capture with a ``GraphBreak`` naming why: a Python
value read from traced data (``float()``, ``bool()``, ``.item()``, ``.tolist()``, printing),
an array made from a traced one by a path NumPy does not dispatch, or an unknown method.
Nothing is ever guessed: the caller then runs the call eagerly.
"""

from __future__ import annotations

import operator
import sys

import numpy

__all__ = ["Diverged", "GraphBreak", "Recorder", "Ref", "Traced", "graph_break", "plain",
           "symbolic"]

ndarray = numpy.ndarray
_generic = numpy.generic
# NumPy's own functions, kept before capture swaps them for recording ones (``start``)
_asarray = numpy.asarray
ones_like = numpy.ones_like
ones = numpy.ones


class GraphBreak(Exception):
    """Capture cannot follow the call past this point: ``reason`` says why, ``where`` is the
    user's source line (``file:line``) that led to it."""

    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.where = where


class Ref:
    """A value of the trace: ``kind`` (see the module docstring) and its index."""

    __slots__ = ("i", "kind")

    def __init__(self, i: int, kind: str) -> None:
        self.i = i
        self.kind = kind

    def __repr__(self) -> str:
        return f"%{self.i}"


class _State:
    __slots__ = ("rec",)

    def __init__(self) -> None:
        self.rec: Recorder | None = None


state = _State()


def _from_ember(f) -> bool:
    """Whether frame ``f`` (or, past ``Tensor``'s own dunders such as ``__bool__``, its
    caller) runs ember's own code, not the user's."""
    while f is not None and f.f_globals.get("__name__") in ("ember._backend.trace",
                                                             "ember._tensor"):
        f = f.f_back
    name = f.f_globals.get("__name__", "") if f is not None else ""
    return name == "ember" or name.startswith("ember.")


def user_frame() -> str:
    """``file:line`` of the innermost frame outside ember: where a graph break came from."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_globals.get("__name__", "")
        if not (name == "ember" or name.startswith(("ember.", "numpy"))):
            return f"{f.f_code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


class Instr:
    """One recorded kernel: ``fn(*args, **kwargs)``; ``outs`` are the references it defines
    (one per array returned; ``None`` where it returns ``out=``'s array), ``shape`` says how
    the result unpacks (``"one"``, ``"tuple"``, or ``"none"`` when it is not used),
    ``writes`` the references it changes in place."""

    __slots__ = ("args", "fn", "kwargs", "name", "outs", "scalar", "shape", "where", "writes")

    def __init__(self, fn, args, kwargs, name: str) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.name = name
        self.outs: list = []
        self.scalar = False  # NumPy returned a scalar (0-d inputs): replay makes it an array
        self.where = ""  # the user's source line (checks)
        self.shape = "none"
        self.writes: list = []

    def __repr__(self) -> str:
        return f"{self.outs} = {self.name}{self.args!r} {self.kwargs or ''}"


class Recorder:
    """The trace being recorded (see the module docstring)."""

    def __init__(self) -> None:
        self.instrs: list[Instr] = []
        self.values: list = []  # ref index -> the plain array (or float) it stood for
        self.refs: list[Ref] = []
        self.ids: dict[int, int] = {}  # id(Traced or plain array) -> ref index
        self.keep: list = []  # the Traced arrays, kept alive so their ids stay theirs
        self.ext_snap: dict[int, object] = {}  # ext ref -> a copy of its content on entry
        self.inputs: list[int] = []
        self.busy = 0  # > 0 while a recorded kernel runs: nested NumPy calls are its own
        self.dead = False  # a graph break happened: the rest of the call runs unrecorded
        self.fullgraph = False
        self.broken: GraphBreak | None = None
        self.ext_views: dict[int, Traced] = {}
        # results NumPy returned as scalars: kernels get them back as scalars, so arithmetic
        # rounds as eager's does (a float32 scalar ** 1/3 is not a 0-d array's)
        self.scalars: set[int] = set()
        self.ext_written = False  # an external changed in place so far (see ``check``)

    # -- references ------------------------------------------------------------------------
    def _new(self, plain, kind: str) -> Traced:
        self.busy += 1
        try:
            t = plain.view(Traced)
        finally:
            self.busy -= 1
        i = len(self.values)
        self.values.append(plain)
        self.refs.append(Ref(i, kind))
        self.ids[id(t)] = i
        self.ids.setdefault(id(plain), i)
        self.keep.append(t)
        return t

    def input(self, plain, snapshot: bool = True) -> Traced:
        t = self._new(plain, "input")
        i = self.ids[id(t)]
        self.inputs.append(i)
        if snapshot:  # put back before a check replay, as externals are
            self.ext_snap[i] = ndarray.copy(plain)
        return t

    def external(self, plain) -> Traced:
        """A Traced view of an array that existed before the call (``plain``), one per array:
        its content on entry is kept for checking a replay against eager (``ext_snap``)."""
        t = self.ext_views.get(id(plain))
        if t is not None:
            return t
        if not isinstance(plain, ndarray):
            self.fail(f"arrays of another backend ({type(plain).__name__}): ember.compile "
                      "captures NumPy (CPU) arrays")
        t = self._new(plain, "ext")
        i = self.ids[id(t)]
        self.ids[id(plain)] = i
        self.ext_views[id(plain)] = t
        self.keep.append(plain)
        self.ext_snap[i] = ndarray.copy(plain)
        return t

    def ref_of(self, x) -> Ref:
        """The reference of an array argument (Traced, or plain: an external)."""
        if type(x) is Traced:
            i = self.ids.get(id(x))
            if i is None:
                if x.__dict__.get("_untraced") or not isinstance(x.base, ndarray):
                    self.fail("an array made from a traced one by an ndarray method that "
                              "ember does not capture")
                # a traced array kept from an earlier capture (a scratch buffer): the plain
                # array it views is an external of this one
                return self.ref_of(x.base)
            return self.refs[i]
        i = self.ids.get(id(x))
        if i is not None:
            return self.refs[i]
        b = x.base
        while b is not None:
            if type(b) is Traced:
                self.fail("an array that shares memory with a traced one, made outside "
                          "NumPy's dispatch (numpy.asarray of a traced array?)")
            b = getattr(b, "base", None)
        t = self.external(x)
        return self.refs[self.ids[id(t)]]

    def fail(self, reason: str):
        """A graph break: recorded; with ``fullgraph`` raised as a ``GraphBreak`` to the user,
        else recording stops here (``dead``) and the call goes on eagerly: the caller catches
        ``_Stop`` and computes without recording."""
        brk = GraphBreak(reason, user_frame())
        if self.broken is None:
            self.broken = brk
        self.dead = True
        if self.fullgraph:
            raise brk
        raise _Stop(brk)

    # -- arguments -------------------------------------------------------------------------
    def template(self, x):
        """``x`` with every array replaced by its reference; plain values stay as they are."""
        t = type(x)
        if t is Traced or t is ndarray:
            return self.ref_of(x)
        if t is SymFloat:
            return self.refs[x._ref]
        if t is tuple or t is list:
            items = [self.template(v) for v in x]
            return items if t is list else tuple(items)
        if t is dict:
            return {k: self.template(v) for k, v in x.items()}
        if isinstance(x, ndarray) or (hasattr(x, "__array_interface__")
                                      and not isinstance(x, (_generic, type))):
            # another subclass (a masked array), or an object NumPy reads memory through
            self.fail(f"a {t.__name__} array in a traced kernel")
        return x

    def plain(self, x):
        """``x`` with Traced arrays as the plain arrays they view, to run the kernel."""
        t = type(x)
        if t is Traced:
            i = self.ids.get(id(x))
            if i is None:
                return x.base  # (an earlier capture's)
            if i in self.scalars:  # NumPy gave a scalar here: compute as on one (NEP 50)
                return self.values[i][()]
            return self.values[i]
        if t is SymFloat:
            return float.__float__(x)
        if t is tuple or t is list:
            items = [self.plain(v) for v in x]
            return items if t is list else tuple(items)
        if t is dict:
            return {k: self.plain(v) for k, v in x.items()}
        return x

    # -- recording -------------------------------------------------------------------------
    def call(self, fn, args: tuple, kwargs: dict, name: str, writes=()):
        """Run ``fn`` on the plain arrays behind ``args``/``kwargs`` and record it (after a
        graph break: just run it)."""
        if self.dead:
            return fn(*_strip(args), **_strip(kwargs))
        try:
            instr = Instr(fn, self.template(args), self.template(kwargs), name)
            instr.writes = [self.ref_of(w) for w in writes]
        except _Stop:
            return fn(*_strip(args), **_strip(kwargs))
        if not self.ext_written:
            self.ext_written = any(self._external_memory(r.i) for r in instr.writes)
        self.busy += 1
        try:
            result = fn(*self.plain(args), **self.plain(kwargs))
        finally:
            self.busy -= 1
        self.instrs.append(instr)
        return self.wrap(instr, result, writes)

    def wrap(self, instr: Instr, result, writes=()):
        """Traced arrays (with new references) for what a kernel returned."""
        if result is None:
            return None
        for w in writes:  # a kernel returning its out= array: the caller's Traced one
            if result is w or result is self.values[self.ids.get(id(w), 0)]:
                instr.shape = "none"
                return w
        t = type(result)
        if t is ndarray or isinstance(result, _generic):
            if t is not ndarray:
                result = _asarray(result)
                instr.scalar = True
            out = self._new(result, "res")
            instr.outs = [self.ids[id(out)]]
            if instr.scalar:
                self.scalars.add(instr.outs[0])
            instr.shape = "one"
            return out
        if t is tuple or t is list or (isinstance(result, tuple) and hasattr(result, "_fields")):
            items = []
            for r in result:
                if type(r) is ndarray or isinstance(r, _generic):
                    o = self._new(_asarray(r), "res")
                    instr.outs.append(self.ids[id(o)])
                    if type(r) is not ndarray:
                        instr.scalar = True
                        self.scalars.add(instr.outs[-1])
                    items.append(o)
                else:
                    self.fail(f"{instr.name} returned a {type(r).__name__} inside a tuple")
            instr.shape = "tuple"
            return type(result)(*items) if hasattr(result, "_fields") else t(items)
        return result  # a Python value (metadata): the caller decides whether that is allowed

    def _external_memory(self, i: int) -> bool:
        """Whether reference ``i`` is (a view of) an external array."""
        if self.refs[i].kind == "ext":
            return True
        b = self.values[i].base
        while b is not None:
            j = self.ids.get(id(b))
            if j is not None and self.refs[j].kind == "ext":
                return True
            b = getattr(b, "base", None)
        return self.refs[i].kind == "input"

    def check(self, x, what: str) -> bool:
        """``bool(x)`` for traced data, as a check the replay repeats: the replay stops before
        anything external has changed and reruns the call eagerly if the value differs
        (argument validation). A check made after an in-place change of state is recorded as
        ``late``: the program moves it, with what it is computed from, to the start
        (``program.hoist_checks``) if that does not depend on the change; else the capture is
        not used. With ``fullgraph`` a check is a graph break, as in torch."""
        if self.fullgraph and not _from_ember(sys._getframe(2)):
            # the user's own control flow: a break in torch too (ember's argument checks,
            # which torch makes inside its kernels, stay checks)
            self.fail(f"Python control flow on a value computed from tensors ({what})")
        ref = self.ref_of(x)
        value = bool(self.values[ref.i])
        instr = Instr(_expect, (ref, value), {}, "check-late" if self.ext_written else "check")
        instr.where = user_frame()
        self.instrs.append(instr)
        return value

    def symbolic(self, x) -> SymFloat:
        """The Python float of a one-element traced array, as a ``SymFloat`` that keeps
        recording the arithmetic done on it."""
        ref = self.ref_of(x)
        value = self.values[ref.i].item()
        return self._sym(_item, (ref,), value)

    def _sym(self, fn, args, value) -> SymFloat:
        instr = Instr(fn, args, {}, getattr(fn, "__name__", "scalar"))
        i = len(self.values)
        self.values.append(value)
        self.refs.append(Ref(i, "sym"))
        instr.outs = [i]
        instr.shape = "one"
        self.instrs.append(instr)
        s = SymFloat(value)
        s._ref = i
        self.keep.append(s)
        return s


def _item(a) -> float:
    return a.item()


class Diverged(Exception):
    """A replay met a check whose value differs from the captured one (see ``check``)."""


def _expect(a, value: bool) -> None:
    if bool(a) is not value:
        raise Diverged


class _Stop(BaseException):
    """Unwinds the traced call at a graph break (BaseException: no ``except Exception`` in
    library code swallows it)."""

    def __init__(self, brk: GraphBreak) -> None:
        super().__init__(brk.reason)
        self.brk = brk


def _scalar_arg(rec: Recorder, v):
    if type(v) is SymFloat:
        return rec.refs[v._ref], float.__float__(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v, v
    if type(v) is Traced or isinstance(v, ndarray):
        rec.fail("arithmetic between a traced float and an array outside NumPy")
    raise TypeError


class SymFloat(float):
    """A float computed from traced data: its value now, and how to recompute it on replay."""

    _ref: int

    def _op(self, fn, other, swap: bool = False):
        rec = state.rec
        if rec is None or rec.dead:
            a, b = float.__float__(self), other
            if type(b) is SymFloat:
                b = float.__float__(b)
            return fn(b, a) if swap else fn(a, b)
        try:
            oref, oval = _scalar_arg(rec, other)
        except TypeError:
            return NotImplemented
        except _Stop:
            return self._op(fn, other, swap)
        me = rec.refs[self._ref]
        sval = float.__float__(self)
        args, vals = ((oref, me), (oval, sval)) if swap else ((me, oref), (sval, oval))
        return rec._sym(fn, args, fn(*vals))

    def __add__(self, o):
        return self._op(operator.add, o)

    def __radd__(self, o):
        return self._op(operator.add, o, True)

    def __sub__(self, o):
        return self._op(operator.sub, o)

    def __rsub__(self, o):
        return self._op(operator.sub, o, True)

    def __mul__(self, o):
        return self._op(operator.mul, o)

    def __rmul__(self, o):
        return self._op(operator.mul, o, True)

    def __truediv__(self, o):
        return self._op(operator.truediv, o)

    def __rtruediv__(self, o):
        return self._op(operator.truediv, o, True)

    def __pow__(self, o):
        return self._op(operator.pow, o)

    def __rpow__(self, o):
        return self._op(operator.pow, o, True)

    def __neg__(self):
        rec = state.rec
        if rec is None or rec.dead:
            return -float.__float__(self)
        return rec._sym(operator.neg, (rec.refs[self._ref],), -float.__float__(self))

    def _decide(self, what: str):
        rec = state.rec
        if rec is not None and not rec.busy and not rec.dead:
            try:
                rec.fail(f"Python control flow on a value computed from tensors ({what})")
            except _Stop:
                pass

    def __bool__(self):
        self._decide("bool()")
        return float.__float__(self) != 0

    def __lt__(self, o):
        self._decide("<")
        return float.__float__(self) < o

    def __le__(self, o):
        self._decide("<=")
        return float.__float__(self) <= o

    def __gt__(self, o):
        self._decide(">")
        return float.__float__(self) > o

    def __ge__(self, o):
        self._decide(">=")
        return float.__float__(self) >= o

    def __eq__(self, o):
        self._decide("==")
        return float.__float__(self) == o

    def __ne__(self, o):
        self._decide("!=")
        return float.__float__(self) != o

    def __hash__(self):  # a dict lookup on it (a cache) would bake its value in
        self._decide("hash()")
        return float.__hash__(self)

    def __int__(self):
        self._decide("int()")
        return int(float.__float__(self))

    def __float__(self):  # a plain float would drop the recorded arithmetic: a break
        self._decide("float()")
        return float.__float__(self)

    def __round__(self, n=None):
        self._decide("round()")
        return round(float.__float__(self), n)

    def __format__(self, spec):
        self._decide("formatting")
        return format(float.__float__(self), spec)

    def __repr__(self):
        self._decide("repr()")
        return repr(float.__float__(self))

    __str__ = __repr__


def graph_break(reason: str) -> None:
    """End capture here if a call is being captured (a Python hook, a function marked
    ``torch.compiler.disable``: code whose effects a replay would not repeat); the call goes
    on eagerly. With ``fullgraph`` it raises ``GraphBreak``."""
    rec = state.rec
    if rec is not None and not rec.busy and not rec.dead:
        try:
            rec.fail(reason)
        except _Stop:
            pass


def symbolic(x) -> float:
    """``float(x)`` for a one-element array: a ``SymFloat`` while capturing (so a step counter
    read as a Python number stays part of the trace), a plain float otherwise."""
    rec = state.rec
    if rec is not None and type(x) is Traced and not rec.busy and not rec.dead:
        try:
            return rec.symbolic(x)
        except _Stop:
            pass
    return (_pv(x) if type(x) is Traced else x).item()


# -- the traced array ------------------------------------------------------------------------

# ndarray methods NumPy does not dispatch that compute from the data: recorded as kernels
_METHODS = ("__getitem__", "argmax", "argmin", "argsort", "astype", "choose", "compress",
            "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten", "max", "min", "nonzero",
            "prod", "ptp", "ravel", "repeat", "reshape", "round", "searchsorted", "squeeze",
            "std", "sum", "mean", "var", "any", "all", "swapaxes", "take", "trace", "transpose",
            "view", "conj", "conjugate", "clip", "__copy__", "__deepcopy__", "byteswap",
            "__array__", "partition", "argpartition")
# ndarray methods that change the array in place
_INPLACE = ("__setitem__", "fill", "sort", "put", "itemset", "resize", "setfield", "partition")
# ndarray methods that hand a Python value computed from the data to the caller
_ESCAPES = ("item", "tolist", "tobytes", "tofile", "dump", "dumps", "__bool__", "__float__",
            "__int__", "__index__", "__complex__", "__reduce__", "__reduce_ex__", "__repr__",
            "__str__", "__format__", "__iter__", "__contains__", "__buffer__", "__array__")


class Traced(ndarray):
    """An array whose kernels are recorded while a ``Recorder`` is active (see the module
    docstring). With none active it computes as a plain ndarray, and its results are plain."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        rec = state.rec
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        if rec is None or rec.busy or rec.dead:
            return fn(*_strip(inputs), **_strip(kwargs))
        out = kwargs.get("out")
        writes = ()
        if out is not None:
            writes = tuple(o for o in (out if type(out) is tuple else (out,)) if o is not None)
        if method == "at":
            writes = (inputs[0],)
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        result = rec.call(fn, inputs, kwargs, name, writes)
        if type(out) is tuple and len(out) == 1 and result is None:
            return out[0]
        return result

    def __array_function__(self, func, types, args, kwargs):
        rec = state.rec
        if rec is None or rec.busy or rec.dead:
            return func(*_strip(args), **_strip(kwargs))
        name = getattr(func, "__name__", "function")
        writes = ()
        if name in _FN_WRITES:
            writes = tuple(_FN_WRITES[name](args, kwargs))
        elif "out" in kwargs and kwargs["out"] is not None:
            writes = (kwargs["out"],)
        result = rec.call(func, args, kwargs, f"numpy.{name}", writes)
        if result is not None and not isinstance(result, (ndarray, tuple, list)) \
                and name not in _FN_META and not rec.dead:
            try:
                rec.fail(f"numpy.{name} gives a Python value computed from tensors")
            except _Stop:
                pass
        return result

    def __array_finalize__(self, obj) -> None:
        # made by an ndarray method that is not recorded, while capturing: never to be used
        # as an input of a recorded kernel (``ref_of``)
        rec = state.rec
        if rec is not None and not rec.busy:
            self.__dict__["_untraced"] = True


_PLAIN_VIEW = ndarray.view


def _pv(x):
    return _PLAIN_VIEW(x, ndarray)


def _strip(x):
    """``x`` with Traced arrays as plain views (no recorder: they compute as NumPy does)."""
    t = type(x)
    if t is Traced:
        return _pv(x)
    if t is tuple or t is list:
        return t(_strip(v) for v in x)
    if t is dict:
        return {k: _strip(v) for k, v in x.items()}
    return x


# NumPy functions whose result is metadata, not data (a shape, a dtype)
_FN_META = frozenset({"shape", "ndim", "size", "result_type", "may_share_memory",
                      "shares_memory", "iscomplexobj", "isrealobj", "min_scalar_type",
                      "can_cast", "broadcast_shapes", "isscalar", "ravel_multi_index"})
# NumPy functions that write into an argument
_FN_WRITES = {
    "copyto": lambda a, k: [a[0] if a else k["dst"]],
    "put": lambda a, k: [a[0]],
    "place": lambda a, k: [a[0]],
    "putmask": lambda a, k: [a[0]],
    "fill_diagonal": lambda a, k: [a[0]],
    "put_along_axis": lambda a, k: [a[0]],
}


def _method(name: str, writes: bool):
    base = getattr(ndarray, name)

    def method(self, *args, **kwargs):
        rec = state.rec
        if rec is None or rec.busy or rec.dead:
            return base(_pv(self), *_strip(args), **_strip(kwargs))
        if name == "__array__":  # numpy.asarray(traced) and the like: the traced array
            return self
        w = (self,) if writes else ()
        if name in ("sum", "max", "min", "mean", "prod", "any", "all", "std", "var") \
                and kwargs.get("out") is not None:
            w = (kwargs["out"],)
        fn = base if rec.ids.get(id(self)) not in rec.scalars else _scalar_method(name)
        result = rec.call(fn, (self, *args), kwargs, f"ndarray.{name}", w)
        if writes and result is None:
            return None
        return result

    method.__name__ = name
    return method


_SCALAR_METHODS: dict = {}


def _scalar_method(name: str):
    """``x.name(...)`` for a value NumPy gave as a scalar (its own method, not ndarray's)."""
    fn = _SCALAR_METHODS.get(name)
    if fn is None:
        def call(x, *args, **kwargs):
            return getattr(x, name)(*args, **kwargs)

        call.__name__ = name
        fn = _SCALAR_METHODS[name] = call
    return fn


def _scalar_operator(name: str, op):
    """A Python operator on a value NumPy gave as a scalar: recorded as the operator, so it
    computes with NumPy's scalar arithmetic as eager code did (which rounds differently from
    a 0-d array's ufunc loop for some operations, such as a float32 ``** (1/3)``)."""
    base = getattr(ndarray, name)

    def method(self, *other):
        rec = state.rec
        if rec is not None and not rec.busy and not rec.dead \
                and rec.ids.get(id(self)) in rec.scalars:
            return rec.call(op, (self, *other), {}, f"operator.{op.__name__}")
        return base(self, *other)

    method.__name__ = name
    return method


def _escape(name: str):
    base = getattr(ndarray, name)

    def method(self, *args, **kwargs):
        rec = state.rec
        if rec is not None and not rec.busy and not rec.dead:
            try:
                if name == "__bool__":
                    return rec.check(self, "bool()")
                what = name.strip("_")
                rec.fail(f"Tensor data read as a Python value ({what}()): data-dependent "
                         "control flow or output")
            except _Stop:
                pass
        return base(_pv(self), *_strip(args), **_strip(kwargs))

    method.__name__ = name
    return method


_SWAPPED = {"__radd__": operator.add, "__rsub__": operator.sub, "__rmul__": operator.mul,
            "__rtruediv__": operator.truediv, "__rpow__": operator.pow,
            "__rfloordiv__": operator.floordiv, "__rmod__": operator.mod}


def _reflected(op):
    def swapped(a, b):
        return op(b, a)

    swapped.__name__ = f"r{op.__name__}"
    return swapped


for _n, _op in (("__add__", operator.add), ("__sub__", operator.sub), ("__mul__", operator.mul),
                ("__truediv__", operator.truediv), ("__pow__", operator.pow),
                ("__floordiv__", operator.floordiv), ("__mod__", operator.mod),
                ("__neg__", operator.neg), ("__abs__", operator.abs)):
    setattr(Traced, _n, _scalar_operator(_n, _op))
for _n, _op in _SWAPPED.items():
    setattr(Traced, _n, _scalar_operator(_n, _reflected(_op)))

for _n in _METHODS:
    if hasattr(ndarray, _n) and _n != "__array__":
        setattr(Traced, _n, _method(_n, False))
for _n in _INPLACE:
    if hasattr(ndarray, _n):
        setattr(Traced, _n, _method(_n, True))
for _n in _ESCAPES:
    if hasattr(ndarray, _n) and _n != "__array__":
        setattr(Traced, _n, _escape(_n))


def _prop(name: str):
    base = getattr(ndarray, name)

    def get(self):
        rec = state.rec
        if rec is None or rec.busy or rec.dead:
            return base.__get__(_pv(self))
        return rec.call(base.__get__, (self,), {}, f"ndarray.{name}")

    def set_(self, value):
        rec = state.rec
        if rec is None or rec.busy or rec.dead:
            base.__set__(_pv(self), _strip(value))
            return
        rec.call(base.__set__, (self, value), {}, f"ndarray.{name}=", (self,))

    return property(get, set_)


from . import AS_ARRAY_HOOKS, HOST_ARRAYS


def _as_array(x):
    """``as_array`` of a traced array: where it stands for a NumPy scalar, the 0-d array that
    eager code makes of it (recorded, so that replays make it too)."""
    rec = state.rec
    if rec is None or rec.busy or rec.dead or rec.ids.get(id(x)) not in rec.scalars:
        return x
    return rec.call(_asarray, (x,), {}, "numpy.asarray")


HOST_ARRAYS.add(Traced)
AS_ARRAY_HOOKS[Traced] = _as_array

Traced.T = _prop("T")
Traced.real = _prop("real")
Traced.imag = _prop("imag")
Traced.mT = _prop("mT")


# -- NumPy functions that make arrays, recorded while capturing -------------------------------

_ALLOCATORS = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
               "full_like", "array", "asarray", "asanyarray", "ascontiguousarray",
               "asfortranarray", "arange", "eye", "identity", "frombuffer", "fromiter", "tri",
               "linspace", "require", "concatenate", "stack")
_originals: dict = {}


def _recording(name: str, orig):
    def fn(*args, **kwargs):
        rec = state.rec
        if rec is None or rec.busy or rec.dead:
            return orig(*args, **kwargs)
        return rec.call(orig, args, kwargs, f"numpy.{name}")

    fn.__name__ = name
    fn.__wrapped__ = orig
    return fn


_STRIDE_TRICKS = numpy.lib.stride_tricks
# NumPy functions outside the top-level namespace that make views NumPy does not dispatch
# (``as_strided`` builds its view through ``numpy.asarray`` of a stand-in object)
_NESTED = ((_STRIDE_TRICKS, "as_strided"),)
_nested_originals: dict = {}


def start(rec: Recorder) -> None:
    """Make ``rec`` the active recorder and route NumPy's array makers through it."""
    state.rec = rec
    if not _originals:
        for name in _ALLOCATORS:
            _originals[name] = getattr(numpy, name)
        for mod, name in _NESTED:
            _nested_originals[(mod, name)] = getattr(mod, name)
    for name, orig in _originals.items():
        setattr(numpy, name, _recording(name, orig))
    for (mod, name), orig in _nested_originals.items():
        setattr(mod, name, _recording(name, orig))


def stop() -> None:
    """No recorder active; NumPy as it was."""
    state.rec = None
    for name, orig in _originals.items():
        setattr(numpy, name, orig)
    for (mod, name), orig in _nested_originals.items():
        setattr(mod, name, orig)


def kept(maxsize: int):
    """``functools.lru_cache(maxsize)`` for a function that builds host arrays from its
    arguments, bypassed while a capture is active: arrays made then are traced ones, which a
    cache would keep past the capture."""
    import functools

    def decorate(build):
        cached = functools.lru_cache(maxsize=maxsize)(build)

        @functools.wraps(build)
        def get(*args):
            return build(*args) if state.rec is not None else cached(*args)

        get.cache_clear = cached.cache_clear
        return get

    return decorate


def plain(x):
    """The plain ndarray behind ``x`` (a Traced array's view; anything else as it is)."""
    rec = state.rec
    if type(x) is Traced:
        if rec is not None:
            i = rec.ids.get(id(x))
            if i is not None:
                return rec.values[i]
        return _pv(x)
    return x

