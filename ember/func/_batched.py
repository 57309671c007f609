"""vmap's machinery: ``BatchedTensor``, the vmap levels, and the dispatch of ops to batching rules.

Inside ``vmap``, a batched input is a ``BatchedTensor``: a ``Tensor`` subclass that wraps an
ordinary ember tensor, its *physical value*, whose leading dimensions are the batch dimensions of
the vmap levels it is batched over (outermost first), followed by its *logical* dimensions, the
ones the function sees (``x.shape``, ``x.dim()``). Nested vmaps add leading dimensions to one
physical value (no tensor wraps another), so every batching rule works on plain tensors with
``nb`` leading batch dimensions.

Every op on a BatchedTensor is dispatched by name (``dispatch``) to a *batching rule*
(``RULES``, filled in ``_rules.py``): the rule calls the op once on the physical values, with its
dimension arguments shifted past the batch dimensions or its operands' batch dimensions aligned
(size 1 where an operand is not batched at a level, so broadcasting does the rest). That is what
torch's functorch does in C++; here the dispatch points are

* every method and operator of ``BatchedTensor`` (generated from ``Tensor``'s), and
* the functions of the ``ember``, ``ember.nn.functional``, ``ember.special`` and
  ``ember.linalg`` namespaces, which vmap swaps for dispatching wrappers while it runs
  (``patch_namespaces``; a function imported by name before the vmap is not swapped).

An op without a rule falls back to a Python loop over the examples (``loop_fallback``): it runs
once per example on plain slices and the results are stacked. Each fallback is counted in
``FALLBACKS`` and warned about once per op, in torch's words. A BatchedTensor that reaches
ember's internals some other way (an op reads its array) raises ``Unbatchable``, which the
dispatcher, or else vmap itself, turns into the same loop (vmap then loops over the whole
function: see docs/func.md).
"""

from __future__ import annotations

import itertools
import sys
import warnings
from collections import Counter
from collections.abc import Callable

from .._tensor import Size, Tensor

_new = object.__new__


# ----------------------------------------------------------------------------- the levels
class Level:
    """One running vmap: its id (ids grow with nesting, so sorting ids sorts by nesting), its
    batch size and its randomness mode."""

    __slots__ = ("id", "randomness", "size")

    def __init__(self, size: int, randomness: str) -> None:
        self.id = next(_IDS)
        self.size = size
        self.randomness = randomness


_IDS = itertools.count(1)
STACK: list[Level] = []  # the running vmaps, outermost first
SIZES: dict[int, int] = {}  # level id -> batch size, for the running levels

# op name -> how many times it ran through the per-example loop (see ``loop_fallback``)
FALLBACKS: Counter = Counter()
_WARNED: set = set()


def push_level(size: int, randomness: str) -> Level:
    level = Level(size, randomness)
    if not STACK:
        patch_namespaces()
    STACK.append(level)
    SIZES[level.id] = size
    return level


def pop_level(level: Level) -> None:
    STACK.remove(level)
    SIZES.pop(level.id, None)
    if not STACK:
        unpatch_namespaces()


# ----------------------------------------------------------------------------- the errors
class Unbatchable(Exception):
    """An op reached a BatchedTensor's array: it ran on a BatchedTensor without a batching rule.

    Not an error users see: the dispatcher (or vmap) catches it and loops over the examples.
    """

    def __init__(self, op: str) -> None:
        super().__init__(f"{op} has no batching rule")
        self.op = op


ITEM_ERROR = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap "
              "over calling .item() on a Tensor, please try to rewrite what you're doing with "
              "other operations. If error is occurring somewhere inside PyTorch internals, "
              "please file a bug report.")
CONTROL_FLOW_ERROR = ("vmap: It looks like you're attempting to use a Tensor in some "
                      "data-dependent control flow. We don't support that yet, please file an "
                      "issue at https://github.com/pytorch/pytorch/issues .")
INPLACE_ERROR = ("vmap: {op}(self, *extra_args) is not possible because there exists a Tensor "
                 "`other` in extra_args that has more elements than `self`. This happened due "
                 "to `other` being vmapped over but `self` not being vmapped over in a vmap. "
                 "Please try to use out-of-place operators instead of inplace arithmetic. If "
                 "said operator is being called inside the PyTorch framework, please file a "
                 "bug report instead.")
RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use "
                "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                "operation out of vmap")
BACKWARD_ERROR = ("backward() called inside a functorch transform. This is not supported, please "
                  "use functorch.grad or functorch.vjp instead or call backward() outside of "
                  "functorch transforms.")


class DataDependentError(RuntimeError):
    """torch's error for ``.item()`` or ``bool()`` of a BatchedTensor. Raised inside an ember
    function that has no rule (a check on its argument's values), it sends that function to
    the per-example loop instead."""


def dynamic_shape_error(op: str) -> RuntimeError:
    return RuntimeError(f"vmap: We do not support batching operators that can output dynamic "
                        f"shape. Attempted to vmap over aten::{op}. Please file an issue at "
                        "https://github.com/pytorch/pytorch/issues if you need this feature.")


# ----------------------------------------------------------------------------- BatchedTensor
def _read_array(self) -> None:
    if not STACK or self._levels[-1] not in SIZES:
        raise RuntimeError("vmap: a BatchedTensor was used after the vmap that made it returned "
                           "(it was stored outside the function, or returned in a container "
                           "vmap does not unwrap)")
    raise Unbatchable(sys._getframe(1).f_code.co_name)


class BatchedTensor(Tensor):
    """A tensor inside vmap: ``_value`` (a plain Tensor) holds the examples, its leading
    ``len(_levels)`` dimensions being the batch dimensions of the vmap levels ``_levels``.

    Reading ``_data`` (what every ember kernel does) raises ``Unbatchable``: an op only ever
    sees the physical value, through a batching rule or the per-example loop.
    """

    __slots__ = ("_levels", "_value")

    _data = property(_read_array)

    # ---------------------------------------------------------------- logical metadata
    @property
    def shape(self) -> Size:
        return Size(self._value.shape[len(self._levels):])

    def size(self, dim: int | None = None):
        shape = self._value.shape[len(self._levels):]
        if dim is None:
            return Size(shape)
        return shape[_wrap(dim, len(shape), "size")]

    @property
    def ndim(self) -> int:
        return self._value.ndim - len(self._levels)

    def dim(self) -> int:
        return self._value.ndim - len(self._levels)

    ndimension = dim

    def numel(self) -> int:
        n = 1
        for s in self._value.shape[len(self._levels):]:
            n *= s
        return n

    nelement = numel

    def stride(self, dim: int | None = None):
        strides = self._value.stride()[len(self._levels):]
        return strides if dim is None else strides[_wrap(dim, len(strides), "stride")]

    @property
    def nbytes(self) -> int:
        return self.numel() * self._value.element_size()

    def __len__(self) -> int:
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        value = "\n".join("    " + line for line in repr(self._value).splitlines())
        return f"BatchedTensor(lvl={self._levels[-1]}, bdim=0, value=\n{value}\n)"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    # ---------------------------------------------------------------- autograd state
    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._value.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> BatchedTensor:
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._value.is_leaf

    @property
    def grad(self):
        return None

    @property
    def data(self) -> Tensor:
        return wrap(self._value.data, self._levels)

    def detach(self) -> Tensor:
        return wrap(self._value.detach(), self._levels)

    def backward(self, *args, **kwargs) -> None:
        raise RuntimeError(BACKWARD_ERROR)

    # ---------------------------------------------------------------- data-dependent
    def item(self):
        raise DataDependentError(ITEM_ERROR)

    tolist = numpy = __float__ = __int__ = __index__ = __complex__ = item

    def __bool__(self) -> bool:
        raise DataDependentError(CONTROL_FLOW_ERROR)

    def __array__(self, *args, **kwargs):
        raise DataDependentError(ITEM_ERROR)

    def __reduce_ex__(self, protocol):
        raise RuntimeError("vmap: a BatchedTensor cannot be pickled or saved")

    def __deepcopy__(self, memo):
        return wrap(self._value.clone(), self._levels)


_PASSTHROUGH_PROPERTIES = ("dtype", "device", "is_cuda", "is_xpu", "is_mps", "is_cpu", "layout",
                           "is_sparse", "is_quantized", "is_meta", "itemsize", "output_nr",
                           "_version", "retains_grad", "name")
_PASSTHROUGH_METHODS = ("is_floating_point", "is_complex", "is_signed", "element_size",
                        "is_contiguous", "storage_offset", "data_ptr", "untyped_storage",
                        "is_inference", "_is_view", "_get_extra", "_check_host",
                        "register_hook", "retain_grad", "register_post_accumulate_grad_hook")


def _value_property(name: str) -> property:
    return property(lambda self: getattr(self._value, name))


def _value_method(name: str) -> Callable:
    def method(self, *args, **kwargs):
        return getattr(self._value, name)(*args, **kwargs)
    method.__name__ = name
    return method


for _name in _PASSTHROUGH_PROPERTIES:
    setattr(BatchedTensor, _name, _value_property(_name))
for _name in _PASSTHROUGH_METHODS:
    setattr(BatchedTensor, _name, _value_method(_name))


def _wrap(dim: int, ndim: int, what: str) -> int:
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return dim % max(ndim, 1)


_VC = [0]


def wrap(value: Tensor, levels: tuple) -> Tensor:
    """``value`` as a BatchedTensor over ``levels`` (its leading dims); itself if none."""
    if not levels:
        return value
    t = _new(BatchedTensor)
    t._value = value
    t._levels = levels
    t._grad_fn = None
    t._requires_grad = False
    t._output_nr = 0
    t._vc = _VC
    t._grad = t._base = t._view = t._acc = t._extra = t._meta = None
    return t


def wrap_output(out, levels: tuple):
    """Wrap every Tensor of an op's result (a Tensor, or a tuple/list/namedtuple of them)."""
    if isinstance(out, Tensor):
        return wrap(out, levels) if levels else out
    if isinstance(out, (tuple, list)):
        items = [wrap(o, levels) if isinstance(o, Tensor) and levels else o for o in out]
        if hasattr(type(out), "_fields"):
            return type(out)(*items)
        return type(out)(items)
    return out


# ----------------------------------------------------------------------------- alignment
def levels_of(x) -> tuple:
    return x._levels if type(x) is BatchedTensor else ()


def value_of(x):
    return x._value if type(x) is BatchedTensor else x


def logical_ndim(x) -> int:
    if type(x) is BatchedTensor:
        return x._value.ndim - len(x._levels)
    return x.ndim


def union(*level_tuples: tuple) -> tuple:
    out: set = set()
    for lv in level_tuples:
        out.update(lv)
    return tuple(sorted(out))


def align(x, levels: tuple, nd: int | None = None) -> Tensor:
    """The physical value of ``x`` with one leading dim per level of ``levels`` (size 1 where
    ``x`` is not batched at that level) and its logical dims left-padded with size-1 dims to
    ``nd`` of them: ready to broadcast against other operands aligned the same way."""
    if type(x) is BatchedTensor:
        v, have = x._value, x._levels
    else:
        v, have = x, ()
    shape = v.shape
    lnd = len(shape) - len(have)
    pad = 0 if nd is None or nd <= lnd else nd - lnd
    if have == levels and not pad:
        return v
    new = []
    j = 0
    for lv in levels:
        if j < len(have) and have[j] == lv:
            new.append(shape[j])
            j += 1
        else:
            new.append(1)
    if j != len(have):
        raise RuntimeError("vmap: internal error: an operand is batched at a level the op "
                           "does not run over")
    new.extend((1,) * pad)
    new.extend(shape[len(have):])
    return v.reshape(new)


def expand_to(x, levels: tuple, nd: int | None = None) -> Tensor:
    """``align``, then the size-1 batch dims expanded to the levels' batch sizes (a view)."""
    v = align(x, levels, nd)
    sizes = [SIZES[lv] for lv in levels]
    if tuple(v.shape[:len(levels)]) == tuple(sizes):
        return v
    return v.expand(*sizes, *v.shape[len(levels):])


def batch_sizes(levels: tuple) -> list[int]:
    return [SIZES[lv] for lv in levels]


# ----------------------------------------------------------------------------- dispatch
RULES: dict[str, Callable] = {}  # op key -> rule(fn, args, kwargs), filled by _rules.py
RANDOM: set = set()  # op keys of random ops (their rule runs even without batched operands)


def rule(*keys: str):
    """Register a batching rule for the op keys ``keys`` (a decorator)."""
    def deco(fn: Callable) -> Callable:
        for k in keys:
            RULES[k] = fn
        return fn
    return deco


def has_batched(args, kwargs) -> bool:
    for a in args:
        if type(a) is BatchedTensor:
            return True
        if type(a) in (list, tuple) and any(type(b) is BatchedTensor for b in a):
            return True
    if kwargs:
        for a in kwargs.values():
            if type(a) is BatchedTensor:
                return True
            if type(a) in (list, tuple) and any(type(b) is BatchedTensor for b in a):
                return True
    return False


def dispatch(key: str, fn: Callable, args: tuple, kwargs: dict):
    """Run op ``key`` (``fn``) on arguments that hold BatchedTensors: its rule, else the loop."""
    r = RULES.get(key)
    if r is not None:
        return r(fn, args, kwargs)
    try:  # a composite (say an ``F`` function written with methods) batches op by op
        return fn(*args, **kwargs)
    except (Unbatchable, DataDependentError):  # it reached an array, or checked values
        pass
    return loop_fallback(key, fn, args, kwargs)


def note_fallback(op: str) -> None:
    """Count one per-example loop for ``op`` and warn once per op, in torch's words."""
    FALLBACKS[op] += 1
    if op not in _WARNED:
        _WARNED.add(op)
        warnings.warn(f"There is a performance drop because we have not yet implemented the "
                      f"batching rule for {op}: vmap runs it once per example in a Python loop "
                      "(see docs/func.md). Please file us an issue so that we can prioritize "
                      "its implementation.", UserWarning, stacklevel=4)


def _slices(x, levels: tuple) -> list:
    """The plain per-example slices of ``x`` over ``levels`` (views of its physical value,
    broadcast where ``x`` is not batched at a level), in row-major order."""
    v = expand_to(x, levels)
    nb = len(levels)
    sizes = v.shape[:nb]
    return [v[idx] for idx in itertools.product(*[range(s) for s in sizes])] if nb else [v]


def loop_fallback(key: str, fn: Callable, args: tuple, kwargs: dict):
    """Run ``fn`` once per example, on plain slices, and stack the results: the batching rule
    of last resort (counted in ``FALLBACKS``)."""
    from ..ops.shape import stack

    note_fallback(key)
    batched = [a for a in itertools.chain(args, kwargs.values()) if type(a) is BatchedTensor]
    for a in args:
        if type(a) in (list, tuple):
            batched.extend(b for b in a if type(b) is BatchedTensor)
    levels = union(*[b._levels for b in batched])
    inplace = key.endswith("_") and not key.endswith("__") or key.startswith("__i")
    if inplace and levels_of(args[0] if args else None) != levels:
        raise RuntimeError(INPLACE_ERROR.format(op=key))
    sizes = batch_sizes(levels)
    n = 1
    for s in sizes:
        n *= s
    slices: dict[int, list] = {}

    def per_example(a, i):
        if type(a) is BatchedTensor:
            s = slices.get(id(a))
            if s is None:
                s = slices[id(a)] = _slices(a, levels)
            return s[i]
        if type(a) in (list, tuple) and any(type(b) is BatchedTensor for b in a):
            return type(a)(per_example(b, i) for b in a)
        return a

    results = []
    for i in range(n):
        results.append(fn(*[per_example(a, i) for a in args],
                          **{k: per_example(v, i) for k, v in kwargs.items()}))
    if inplace:
        return args[0]
    first = results[0]

    def stacked(items):
        out = stack(list(items))
        return wrap(out.reshape(*sizes, *out.shape[1:]), levels)

    if isinstance(first, Tensor):
        return stacked(results)
    if isinstance(first, (tuple, list)) and all(isinstance(r, Tensor) for r in first):
        parts = [stacked(r[j] for r in results) for j in range(len(first))]
        if hasattr(type(first), "_fields"):
            return type(first)(*parts)
        return type(first)(parts)
    if first is None or all(r == first for r in results):
        return first
    raise RuntimeError(CONTROL_FLOW_ERROR)


# ----------------------------------------------------------------------------- methods
def _canonical_names() -> dict[str, str]:
    """Every spelling of an op (aliases, in-place forms, operators) -> the op's key: its
    registry name, ``name_`` for its in-place form."""
    from ..ops._registry import REGISTRY

    canon: dict[str, str] = {}
    for info in REGISTRY.values():
        for n in (info.name, *info.aliases):
            canon.setdefault(n, info.name)
            if info.inplace:
                canon.setdefault(n + "_", info.name + "_")
        for d in info.operators:
            if d.startswith("__i") and d not in ("__index__", "__int__", "__invert__"):
                canon[d] = info.name + "_"
            else:
                canon[d] = info.name
    # keep the operators whose rule cares about the operand order under their own names
    for d in ("__rmatmul__", "__rsub__", "__rtruediv__", "__rfloordiv__", "__rpow__",
              "__rmod__", "__getitem__", "__setitem__"):
        canon[d] = d
    return canon


CANON: dict[str, str] = {}
_EXPLICIT = frozenset(n for n, v in vars(BatchedTensor).items())


def _method(name: str, key: str) -> Callable:
    fn = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        return dispatch(key, fn, (self, *args), kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``Tensor.{name}`` inside vmap: dispatched to its batching rule."
    return method


_SKIP = frozenset(("__new__", "__init__", "__getattribute__", "__setattr__", "__delattr__",
                   "__init_subclass__", "__subclasshook__", "__class__", "__slots__",
                   "__weakref__", "__module__", "__doc__", "__dict__", "_legacy_dtype",
                   "__array_priority__", "__sizeof__", "_replay_view", "_accumulator", "_edge",
                   "_storage_root", "__array_wrap__", "detach_", "cpu", "cuda"))


_METHODS_KEY: list = [None]


def install_methods() -> None:
    """Give BatchedTensor a dispatching method for every computing method of Tensor (again
    after ops modules loaded later, e.g. ``ember.linalg``, added methods to Tensor)."""
    if not CANON:
        CANON.update(_canonical_names())
    if _METHODS_KEY[0] == len(vars(Tensor)):
        return
    _METHODS_KEY[0] = len(vars(Tensor))
    for name, attr in list(vars(Tensor).items()):
        if name in _EXPLICIT or name in _SKIP or name in BatchedTensor.__dict__:
            continue
        if isinstance(attr, property):
            if name in ("T", "mT", "H", "mH"):
                key = name

                def prop(self, _key=key):
                    return dispatch(_key, lambda t: getattr(t, _key), (self,), {})
                setattr(BatchedTensor, name, property(prop))
            continue
        if not callable(attr) or isinstance(attr, (classmethod, staticmethod, type)):
            continue
        setattr(BatchedTensor, name, _method(name, CANON.get(name, name)))


# ----------------------------------------------------------------------------- namespaces
_NAMESPACES: list = []


def _namespaces() -> list[tuple[object, str]]:
    if _NAMESPACES:
        return _NAMESPACES
    import importlib

    import ember

    out = [(ember, "")]
    for name, prefix in (("ember.nn.functional", "F."), ("ember.special", "special."),
                         ("ember.linalg", "linalg."), ("ember.fft", "fft.")):
        try:  # loaded now, so that a first use inside the vmapped function finds them swapped
            out.append((importlib.import_module(name), prefix))
        except ImportError:
            pass
    _NAMESPACES.extend(out)
    return out


def _dispatching(key: str, fn: Callable, public: bool = True) -> Callable:
    """``fn`` dispatching to its rule when an argument is batched. A random op called by the
    user (``public``) goes to its rule even without one (vmap's ``randomness``); inside ember
    (a rule's own kernel drawing its noise) it runs as it is."""
    random = public and key in RANDOM

    def wrapper(*args, **kwargs):
        if has_batched(args, kwargs) or (random and STACK):
            return dispatch(key, fn, args, kwargs)
        return fn(*args, **kwargs)

    wrapper.__name__ = getattr(fn, "__name__", key)
    wrapper.__qualname__ = getattr(fn, "__qualname__", key)
    wrapper.__doc__ = getattr(fn, "__doc__", None)
    wrapper.__wrapped__ = fn
    wrapper._ember_vmap_original = fn
    return wrapper


def _internal_form(w: Callable) -> Callable:
    """The wrapper ember's own modules get: no randomness check (see ``_dispatching``)."""
    inner = _INTERNAL.get(w)
    if inner is None:
        fn = w._ember_vmap_original
        key = _KEYS[w]
        inner = _INTERNAL[w] = w if key not in RANDOM else _dispatching(key, fn, public=False)
    return inner


_INTERNAL: dict = {}
_KEYS: dict = {}  # wrapper -> its op key


# where op functions are defined (a namespace's other callables are helpers it imported)
_OP_MODULES = ("ember.ops.", "ember.nn.functional", "ember.special", "ember.linalg",
               "ember.fft")


_SITES: list = []  # (holder, name, original, wrapper): every place vmap swaps
_SITES_KEY: list = [None]
# the same grouped for a fast swap: (module dict, {name: wrapper}, {name: original}), and
# (class, name, original, wrapper) for class attributes
_DICT_SWAPS: list = []
_CLASS_SWAPS: list = []
_PATCHED: list = [False]


def _sites() -> list:
    """Every place that holds an op function by name: the public namespaces (``ember.X``,
    ``F.X``, ``ember.special.X``, ``ember.linalg.X``, ``ember.fft.X``), and, inside ember,
    module globals (``from ..ops.conv import conv2d``) and class attributes (``_fn =
    staticmethod(F.conv2d)``), so that a layer calling an op it imported still reaches the op's
    rule. Found once per set of loaded modules and methods."""
    install_methods()
    namespaces = _namespaces()
    key = (len(sys.modules), tuple(len(m.__dict__) for m, _ in namespaces))
    if _SITES_KEY[0] == key:
        return _SITES
    mods = [m for n, m in list(sys.modules.items())
            if m is not None and n.startswith("ember.") and not n.startswith("ember.func")
            and not n.startswith("ember._backend")]
    _SITES.clear()
    from ..ops._registry import REGISTRY

    registered: dict = {}  # a registered op's function (and its public form) -> its name
    for info in REGISTRY.values():
        registered.setdefault(info.fn, info.name)
        registered.setdefault(info.public, info.name)
    for fn, name in registered.items():
        if fn not in _BY_ORIGINAL:
            _BY_ORIGINAL[fn] = _dispatching(name, fn)
            _KEYS[_BY_ORIGINAL[fn]] = name
    for module, prefix in namespaces:
        d = module.__dict__
        for name, fn in list(d.items()):
            if name.startswith("_") or not callable(fn) or isinstance(fn, type):
                continue
            try:
                w = _BY_ORIGINAL.get(fn)  # a registered op, or one seen under another name
            except TypeError:
                continue
            if w is None:
                key_ = prefix + name if prefix else CANON.get(name, name)
                mod = getattr(fn, "__module__", None) or ""
                public = mod.startswith(_OP_MODULES) and mod.rpartition(".")[2][:1] != "_"
                if not public and key_ not in RULES:
                    continue  # not an op: a helper a namespace imported, a class, a module
                w = _BY_ORIGINAL[fn] = _dispatching(key_, fn)
                _KEYS[w] = key_
            _SITES.append((d, name, fn, w))
    namespace_dicts = {id(m.__dict__) for m, _ in namespaces}
    for m in mods:
        d = getattr(m, "__dict__", None)
        if not d or id(d) in namespace_dicts:
            continue
        for name, v in list(d.items()):
            try:
                w = _BY_ORIGINAL.get(v)
            except TypeError:
                continue
            if w is not None:
                _SITES.append((d, name, v, _internal_form(w)))
            elif isinstance(v, type) and v.__module__ == m.__name__:
                for an, av in list(vars(v).items()):
                    if isinstance(av, staticmethod):
                        try:
                            w = _BY_ORIGINAL.get(av.__func__)
                        except TypeError:
                            continue
                        if w is not None:
                            _SITES.append((v, an, av, staticmethod(_internal_form(w))))
    _DICT_SWAPS.clear()
    _CLASS_SWAPS.clear()
    groups: dict = {}
    for holder, name, fn, w in _SITES:
        if isinstance(holder, dict):
            g = groups.get(id(holder))
            if g is None:
                g = groups[id(holder)] = (holder, {}, {})
                _DICT_SWAPS.append(g)
            g[1][name] = w
            g[2][name] = fn
        else:
            _CLASS_SWAPS.append((holder, name, fn, w))
    _SITES_KEY[0] = key
    return _SITES


def patch_namespaces() -> None:
    """Swap the op functions for dispatching wrappers (``_sites``), undone by
    ``unpatch_namespaces`` when the outermost vmap returns."""
    _sites()
    for d, wrappers, _ in _DICT_SWAPS:
        d.update(wrappers)
    for cls, name, _, w in _CLASS_SWAPS:
        setattr(cls, name, w)
    _PATCHED[0] = True


def unpatch_namespaces() -> None:
    if not _PATCHED[0]:
        return
    for d, _, originals in _DICT_SWAPS:
        d.update(originals)
    for cls, name, fn, _ in _CLASS_SWAPS:
        setattr(cls, name, fn)
    _PATCHED[0] = False


_BY_ORIGINAL: dict = {}  # an op function -> its dispatching wrapper


def dispatching_form(fn: Callable) -> Callable:
    """The dispatching wrapper of an op function (``vmap(torch.dot)`` passes the function
    itself, taken before vmap swapped the namespace); ``fn`` itself otherwise."""
    try:
        return _BY_ORIGINAL.get(fn, fn)
    except TypeError:  # unhashable callable
        return fn
