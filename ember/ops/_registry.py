"""One registration per op: its function, method, in-place and operator forms, and aliases.

An op module declares each public op once, where it is defined::

    @register(inplace=True, aliases=("absolute",), operators=("__abs__",))
    def abs(input: Tensor) -> Tensor:
        return apply1(AbsBackward0, input)

and everything else derives from that: ``ember.abs`` and ``ember.absolute``, ``Tensor.abs``
and ``Tensor.absolute``, ``Tensor.abs_``/``absolute_`` (through the one in-place mechanism,
``ops/inplace.py``), ``Tensor.__abs__``, and torch's NumPy-style keyword aliases (``axis=``
for ``dim=``, ``keepdims=`` for ``keepdim=``, ``x=``/``a=``/``x1=`` for ``input=``, ``x2=`` for
``other=``), which torch's argument parser accepts for every op with those arguments, and
varargs by name (``flip(x, dims=(0,))``). ``bind`` installs the Tensor forms once all op modules are loaded;
``exports`` lists the ``ember.X`` names.
"""

from __future__ import annotations

from collections.abc import Callable

# torch's argument parser accepts these NumPy spellings for every op that has the argument
# (``numpy_compatibility_arg_names`` in torch/csrc/utils/python_arg_parser.cpp)
KEYWORD_ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input",
                   "x1": "input", "x2": "other"}


class OpInfo:
    """What one registration declares (see the module docstring).

    fn         the function form, ``ember.<name>``; with ``export=False`` only a method
    method     True: ``Tensor.<name>`` is ``fn``; a callable: the method form differs (its
               first argument is the tensor); False: no method
    inplace    True: ``Tensor.<name>_`` runs ``fn`` through the in-place mechanism; a callable:
               its own in-place method; False: none
    aliases    other names of the same op, each with every form the op has
    operators  dunder methods bound to ``fn`` (``__add__``); ``__iadd__``-style names run it
               in place
    operator   what the operators that are not in-place bind to instead of ``fn``: the op's
               own ``apply`` where ``fn`` only handles what an operator is never given
               (keywords, ``out=``, a non-tensor first operand); None: ``fn``
    """

    __slots__ = ("aliases", "export", "fn", "inplace", "method", "name", "operator",
                 "operators")

    def __init__(self, name: str, fn: Callable, method: bool | Callable = True,
                 inplace: bool | Callable = False, aliases: tuple = (), operators: tuple = (),
                 export: bool = True, operator: Callable | None = None) -> None:
        self.name, self.fn, self.method, self.inplace = name, fn, method, inplace
        self.aliases, self.operators, self.export = aliases, operators, export
        self.operator = operator

    def __repr__(self) -> str:
        return f"OpInfo({self.name!r}, {self.fn.__module__}.{self.fn.__qualname__})"

    @property
    def public(self) -> Callable:
        """The function as users call it: with torch's keyword aliases where it takes them."""
        return _with_keyword_aliases(self.fn)

    @property
    def public_method(self) -> Callable:
        """The method form as users call it (the tensor is ``self``: no ``input`` alias)."""
        return _with_keyword_aliases(self.fn if self.method is True else self.method, True)


REGISTRY: dict[str, OpInfo] = {}


def _none_aware(fn: Callable) -> Callable:
    """``==``/``!=`` with ``None`` on the right: Python's identity answer, as torch's Tensor
    gives (``t == None`` is False, so ``[t] == [None]`` works); other operands as ``fn``."""
    def op(self, other):
        if other is None:
            return NotImplemented
        return fn(self, other)

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    op.__wrapped__ = fn
    return op


def register(fn: Callable | None = None, *, name: str | None = None,
             method: bool | Callable = True, inplace: bool | Callable = False,
             aliases: tuple = (), operators: tuple = (), export: bool = True,
             operator: Callable | None = None):
    """Declare ``fn`` as an op (a decorator, bare or with arguments); returns ``fn`` unchanged,
    so calls inside ember pay nothing for the registration."""

    def deco(f: Callable) -> Callable:
        key = name or f.__name__
        if key in REGISTRY:
            if REGISTRY[key].fn is f:
                return f  # the same function again: its declaration stands
            raise RuntimeError(f"op {key!r} is registered twice ({REGISTRY[key].fn.__module__} "
                               f"and {f.__module__})")
        REGISTRY[key] = OpInfo(key, f, method, inplace, tuple(aliases), tuple(operators), export,
                               operator)
        return f

    return deco(fn) if fn is not None else deco


def _with_keyword_aliases(fn: Callable, method: bool = False) -> Callable:
    """``fn`` accepting torch's keyword spellings: the NumPy names of ``KEYWORD_ALIASES`` for
    the parameters it has, and its ``*varargs`` by name (``flip(x, dims=(0,))``,
    ``x.view(size=(2, 3))``). For a method the tensor itself is ``self``: no alias for it.

    NOTE: ``fn`` itself when it has none of these: the wrapper costs a call frame (~0.1 µs),
    which only its keyword path (``_bind_keywords``) adds to."""
    key = (fn, method)
    cached = _ALIASED.get(key)
    if cached is not None:
        return cached
    code = getattr(fn, "__code__", None)  # (inspect.signature costs ms over all ops at import)
    if code is None:
        _ALIASED[key] = fn
        return fn
    n = code.co_argcount + code.co_kwonlyargcount
    params = code.co_varnames[:n]
    varargs = code.co_varnames[n] if code.co_flags & _CO_VARARGS else None
    skip = params[:1] if method else ()
    renames = {a: p for a, p in KEYWORD_ALIASES.items()
               if p in params and p not in skip and a not in params}
    if not renames and varargs is None:
        _ALIASED[key] = fn
        return fn
    positions = {p: i for i, p in enumerate(params[:code.co_argcount])}
    name = fn.__name__

    def aliased(*args, **kwargs):
        if kwargs:
            args, kwargs = _bind_keywords(name, args, kwargs, renames, positions, varargs)
            return fn(*args, **kwargs)
        return fn(*args)

    # functools.wraps' attributes, set directly: it costs 3x as much, ~370 times at import
    aliased.__name__, aliased.__qualname__, aliased.__doc__ = name, fn.__qualname__, fn.__doc__
    aliased.__module__, aliased.__wrapped__ = fn.__module__, fn
    aliased.__annotations__ = fn.__annotations__
    _ALIASED[key] = aliased
    return aliased


def _bind_keywords(name: str, args: tuple, kwargs: dict, renames: dict, positions: dict,
                   varargs: str | None) -> tuple[tuple, dict]:
    """The keyword path of an aliased op: aliases renamed, varargs given by name moved to the
    positional ones. A parameter given twice is torch's TypeError (it names the alias)."""
    taken: dict = {}  # real name -> the alias that gave it
    for alias, real in renames.items():
        if alias in kwargs:
            if real in kwargs or len(args) > positions.get(real, len(args)):
                # torch's parser keeps the last spelling and reports the one before it
                raise TypeError(f"{name}() got an unexpected keyword argument "
                                f"'{taken.get(real, alias)}'")
            kwargs[real] = kwargs.pop(alias)
            taken[real] = alias
    if varargs is not None and varargs in kwargs:
        if len(args) > len(positions):
            raise TypeError(f"{name}() got multiple values for argument '{varargs}'")
        value = kwargs.pop(varargs)
        rest = [kwargs.pop(p) for p in tuple(positions)[len(args):] if p in kwargs]
        if len(args) + len(rest) < len(positions):
            missing = tuple(positions)[len(args) + len(rest)]
            raise TypeError(f"{name}() missing required argument '{missing}'")
        args = (*args, *rest, value)
    return args, kwargs


_CO_VARARGS = 0x04
_ALIASED: dict = {}


def exports() -> dict[str, Callable]:
    """``ember.X`` name -> function, for every exported op and alias."""
    out = {}
    for info in REGISTRY.values():
        if info.export:
            fn = info.public
            for n in (info.name, *info.aliases):
                out[n] = fn
    return out


def bind(tensor_cls: type, inplace_form: Callable[[Callable, str], Callable]) -> None:
    """Install every registered op's method, in-place and operator forms on ``tensor_cls``.

    ``inplace_form(fn, name)`` builds ``Tensor.<name>_`` from a function (the in-place
    mechanism of ``ops/inplace.py``).
    """
    for info in REGISTRY.values():
        names = (info.name, *info.aliases)
        if info.method:
            meth = info.public_method
            for n in names:
                setattr(tensor_cls, n, meth)
        if info.inplace:
            for n in names:
                meth = inplace_form(info.fn, n + "_") if info.inplace is True else info.inplace
                setattr(tensor_cls, n + "_", meth)
        for dunder in info.operators:
            if dunder.startswith("__i") and dunder not in ("__index__", "__int__", "__invert__"):
                setattr(tensor_cls, dunder, inplace_form(info.fn, dunder))
            elif dunder in ("__eq__", "__ne__"):
                setattr(tensor_cls, dunder, _none_aware(info.fn))
            else:
                setattr(tensor_cls, dunder, info.operator or info.fn)
