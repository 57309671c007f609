"""One registration per op: its function, method, in-place and operator forms, and aliases.

An op module declares each public op once, where it is defined::

    @register(inplace=True, aliases=("absolute",), operators=("__abs__",))
    def abs(input: Tensor) -> Tensor:
        return apply1(AbsBackward0, input)

and everything else derives from that: ``ember.abs`` and ``ember.absolute``, ``Tensor.abs``
and ``Tensor.absolute``, ``Tensor.abs_``/``absolute_`` (through the one in-place mechanism,
``ops/inplace.py``), ``Tensor.__abs__``, and torch's NumPy-style keyword aliases (``axis=``
for ``dim=``, ``keepdims=`` for ``keepdim=``), which torch's argument parser accepts for every
op with those arguments. ``bind`` installs the Tensor forms once all op modules are loaded;
``exports`` lists the ``ember.X`` names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

# torch's argument parser accepts these NumPy spellings for every op that has the argument
KEYWORD_ALIASES = {"axis": "dim", "keepdims": "keepdim"}


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
    """

    __slots__ = ("aliases", "export", "fn", "inplace", "method", "name", "operators")

    def __init__(self, name: str, fn: Callable, method: bool | Callable = True,
                 inplace: bool | Callable = False, aliases: tuple = (), operators: tuple = (),
                 export: bool = True) -> None:
        self.name, self.fn, self.method, self.inplace = name, fn, method, inplace
        self.aliases, self.operators, self.export = aliases, operators, export

    def __repr__(self) -> str:
        return f"OpInfo({self.name!r}, {self.fn.__module__}.{self.fn.__qualname__})"

    @property
    def public(self) -> Callable:
        """The function as users call it: with torch's keyword aliases where it takes them."""
        return _with_keyword_aliases(self.fn)


REGISTRY: dict[str, OpInfo] = {}


def register(fn: Callable | None = None, *, name: str | None = None,
             method: bool | Callable = True, inplace: bool | Callable = False,
             aliases: tuple = (), operators: tuple = (), export: bool = True):
    """Declare ``fn`` as an op (a decorator, bare or with arguments); returns ``fn`` unchanged,
    so calls inside ember pay nothing for the registration."""

    def deco(f: Callable) -> Callable:
        key = name or f.__name__
        if key in REGISTRY and REGISTRY[key].fn is not f:
            raise RuntimeError(f"op {key!r} is registered twice ({REGISTRY[key].fn.__module__} "
                               f"and {f.__module__})")
        REGISTRY[key] = OpInfo(key, f, method, inplace, tuple(aliases), tuple(operators), export)
        return f

    return deco(fn) if fn is not None else deco


def _with_keyword_aliases(fn: Callable) -> Callable:
    """``fn`` accepting ``axis=``/``keepdims=`` for its ``dim``/``keepdim`` arguments."""
    cached = _ALIASED.get(fn)
    if cached is not None:
        return cached
    code = getattr(fn, "__code__", None)  # (inspect.signature costs ms over all ops at import)
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount] if code else ()
    renames = {a: p for a, p in KEYWORD_ALIASES.items() if p in params and a not in params}
    if not renames:
        _ALIASED[fn] = fn
        return fn

    @functools.wraps(fn)
    def aliased(*args, **kwargs):
        if kwargs:
            for alias, real in renames.items():
                if alias in kwargs:
                    if real in kwargs:
                        raise TypeError(f"{fn.__name__}() got both '{real}' and its alias "
                                        f"'{alias}'")
                    kwargs[real] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    _ALIASED[fn] = aliased
    return aliased


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
            meth = info.public if info.method is True else _with_keyword_aliases(info.method)
            for n in names:
                setattr(tensor_cls, n, meth)
        if info.inplace:
            for n in names:
                meth = inplace_form(info.fn, n + "_") if info.inplace is True else info.inplace
                setattr(tensor_cls, n + "_", meth)
        for dunder in info.operators:
            if dunder.startswith("__i") and dunder not in ("__index__", "__int__", "__invert__"):
                setattr(tensor_cls, dunder, inplace_form(info.fn, dunder))
            else:
                setattr(tensor_cls, dunder, info.fn)
