"""One capture: run a call eagerly while recording its kernels and what it did to tensors.

``Capture`` makes every ``Tensor`` the call touches known to the recorder, by putting
properties in place of ``Tensor``'s ``_data``, ``_grad`` and ``_vc`` slots for the length of
the call:

* a tensor's array read for the first time is an *external* (a parameter, a gradient, an
  optimizer's state): the tensor keeps a traced view of it for the call, and the original is
  put back afterwards. Guards check, on later calls, that the tensor still holds that array;
* an array stored into a tensor (every tensor an op makes, a new ``.grad``) is recorded, so the
  tensors still alive after the call, and the arrays they hold, are known: replaying sets the
  same arrays, recomputed, into the same tensor objects (``effects``);
* the first read of ``.grad`` is guarded (``None`` or that very tensor: the engine accumulates
  or adopts accordingly); the last write is an effect;
* a version counter's change is an effect, so in-place updates stay visible to autograd.

NumPy's random draws go through the recorder too (``Generator._rng``), so a replay draws from
the same stream as eager would.
"""

from __future__ import annotations

import weakref

from .. import random as _random
from .._backend import ndarray, trace
from .._tensor import Tensor

_DATA = Tensor.__dict__["_data"]
_GRAD = Tensor.__dict__["_grad"]
_VC = Tensor.__dict__["_vc"]
_RNG = _random.Generator.__dict__["_rng"]
_MISSING = object()


class _RngProxy:
    """``Generator._rng`` while capturing: each draw is a recorded kernel that asks the
    ember generator for its NumPy generator when it runs (``manual_seed`` replaces it)."""

    __slots__ = ("_cap", "_gen")

    def __init__(self, cap: Capture, gen) -> None:
        self._cap = cap
        self._gen = gen

    def __getattr__(self, name: str):
        gen = self._gen
        rec = self._cap.rec
        rec.busy += 1  # a generator made now (after manual_seed) is no kernel of the call
        try:
            real = _RNG.__get__(gen)
        finally:
            rec.busy -= 1
        attr = getattr(real, name)
        if not callable(attr) or name == "bit_generator":
            return attr
        self._cap.rng_used(gen)

        def draw(*args, **kwargs):
            if rec.busy:
                return attr(*args, **kwargs)
            return rec.call(_Draw(gen, name), args, kwargs, f"rng.{name}")

        return draw


class _Draw:
    """A random draw as a kernel: ``gen``'s current NumPy generator's method ``name``."""

    __slots__ = ("gen", "name")

    def __init__(self, gen, name: str) -> None:
        self.gen = gen
        self.name = name

    def __call__(self, *args, **kwargs):
        return getattr(_RNG.__get__(self.gen), self.name)(*args, **kwargs)


def rng_state(gen):
    bits = gen._bits
    return (gen._seed, None if bits is None else bits.bit_generator.state)


def set_rng_state(gen, st) -> None:
    seed, bits = st
    gen._seed = seed
    if bits is None:
        gen._bits = None
    else:
        _RNG.__get__(gen).bit_generator.state = bits


class Capture:
    """Record one call (see the module docstring); use as a context manager around it."""

    def __init__(self, fullgraph: bool = False) -> None:
        self.rec = trace.Recorder()
        self.ext_tensors: dict[int, list] = {}  # id -> [tensor, original array]
        # the tensors made during the call, by id, as weak references (an id may be reused
        # once a tensor dies: ``is_created`` checks the reference too)
        self.created: dict[int, weakref.ref] = {}
        self.grad_reads: dict[int, tuple] = {}  # id -> (tensor, value at first read)
        self.grad_writes: dict[int, tuple] = {}  # id -> (tensor, last value written)
        self.vcs: dict[int, list] = {}  # id(counter) -> [counter, value at first read]
        self.new_vcs: set[int] = set()
        self.rngs: dict[int, tuple] = {}  # id -> (generator, state before its first draw)
        self.inputs: list = []  # [tensor, original array]
        self.backward_runs = 0
        self.fullgraph = fullgraph

    # -- inputs --------------------------------------------------------------------------
    def add_input(self, t: Tensor) -> None:
        a = _DATA.__get__(t, Tensor)
        if isinstance(a, trace._generic):  # a NumPy scalar some op left: the 0-d array it is
            a = trace._asarray(a)
            _DATA.__set__(t, a)
        if type(a) is trace.Traced:
            raise RuntimeError("ember.compile: an input is already being captured")
        self.inputs.append([t, a])
        self.ext_tensors[id(t)] = [t, a, "input"]
        _DATA.__set__(t, self.rec.input(a))

    def rng_used(self, gen) -> None:
        if id(gen) not in self.rngs:
            self.rngs[id(gen)] = (gen, rng_state(gen))

    # -- the slot properties --------------------------------------------------------------
    def _install(self) -> None:
        cap = self
        rec = self.rec
        ext_tensors = self.ext_tensors
        created = self.created

        def is_created(t) -> bool:
            w = created.get(id(t))
            return w is not None and w() is t

        def get_data(t):
            a = _DATA.__get__(t, Tensor)
            if rec.busy:
                return a
            if type(a) is trace.Traced:
                if id(a) in rec.ids:
                    return a
                a = a.base  # left by an earlier capture: the plain array it views
                _DATA.__set__(t, a)
            if id(t) not in ext_tensors and not is_created(t):
                if isinstance(a, trace._generic):  # (see add_input)
                    a = trace._asarray(a)
                    _DATA.__set__(t, a)
                v = rec.external(a)
                ext_tensors[id(t)] = [t, a, "ext"]
                _DATA.__set__(t, v)
                return v
            if type(a) is ndarray:  # a plain array stored into a tensor: one that existed
                v = rec.external(a)  # before the call (anything made during it is traced)
                _DATA.__set__(t, v)
                return v
            return a

        def set_data(t, value):
            tid = id(t)
            if tid not in ext_tensors and not is_created(t):
                try:
                    old = _DATA.__get__(t, Tensor)
                except AttributeError:
                    old = _MISSING
                if old is _MISSING or type(old) is trace.Traced:
                    created[tid] = weakref.ref(t)
                else:
                    ext_tensors[tid] = [t, old, "ext"]
                    rec.external(old)
            _DATA.__set__(t, value)

        def get_grad(t):
            g = _GRAD.__get__(t, Tensor)
            tid = id(t)
            if tid not in cap.grad_reads and tid not in cap.grad_writes \
                    and not is_created(t):
                cap.grad_reads[tid] = (t, g)
            return g

        def set_grad(t, value):
            tid = id(t)
            if tid not in cap.grad_reads and tid not in cap.grad_writes \
                    and not is_created(t):
                try:
                    cap.grad_reads[tid] = (t, _GRAD.__get__(t, Tensor))
                except AttributeError:
                    pass
            if not is_created(t):
                cap.grad_writes[tid] = (t, value)
            _GRAD.__set__(t, value)

        def get_vc(t):
            vc = _VC.__get__(t, Tensor)
            k = id(vc)
            if k not in cap.vcs and k not in cap.new_vcs:
                cap.vcs[k] = [vc, vc[0]]
            return vc

        def set_vc(t, value):
            cap.new_vcs.add(id(value))
            _VC.__set__(t, value)

        def get_rng(gen):
            return _RngProxy(cap, gen)

        Tensor._data = property(get_data, set_data)
        Tensor._grad = property(get_grad, set_grad)
        Tensor._vc = property(get_vc, set_vc)
        _random.Generator._rng = property(get_rng)

    def _uninstall(self) -> None:
        Tensor._data = _DATA
        Tensor._grad = _GRAD
        Tensor._vc = _VC
        _random.Generator._rng = _RNG

    def __enter__(self):  # -> Capture
        from ..autograd import engine

        self._engine = engine
        self._run_backward = engine.run_backward
        cap = self

        def run_backward(*args, **kwargs):
            cap.backward_runs += 1
            return cap._run_backward(*args, **kwargs)

        engine.run_backward = run_backward
        self._install()
        trace.start(self.rec)
        return self

    def __exit__(self, *exc) -> None:
        trace.stop()
        self._uninstall()
        self._engine.run_backward = self._run_backward

    # -- after the call -----------------------------------------------------------------------
    def alive_created(self) -> list:
        out = []
        for w in self.created.values():
            t = w()
            if t is not None:
                out.append(t)
        return out

    def restore(self) -> None:
        """Put plain arrays back into every tensor the call touched (capture is over)."""
        rec = self.rec
        for t, orig, _ in self.ext_tensors.values():
            a = _DATA.__get__(t, Tensor)
            if type(a) is trace.Traced:
                i = rec.ids.get(id(a))
                _DATA.__set__(t, rec.values[i] if i is not None else a.view(ndarray))
        for t in self.alive_created():
            try:
                a = _DATA.__get__(t, Tensor)
            except AttributeError:
                continue
            if type(a) is trace.Traced:
                i = rec.ids.get(id(a))
                _DATA.__set__(t, rec.values[i] if i is not None else a.view(ndarray))

