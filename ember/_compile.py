"""``ember.compile``: ``torch.compile``'s API over ember's capture and replay.

``compile`` checks its arguments as torch does and returns a ``Compiled`` callable
(``_capture/compiled.py``): calls are captured once per signature as a flat program of array
kernels and replayed without per-op Python. For a module it returns an ``OptimizedModule``
that wraps it as torch's does (its ``state_dict`` keys start with ``_orig_mod.``, its
attributes are the wrapped module's, ``_orig_mod`` is the module). Every backend name runs
ember's capture; a callable ``backend`` is accepted and never called: ember hands no FX graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .nn.modules.module import Module

__all__ = ["InvalidBackend", "OptimizedModule", "compile"]

# torch 2.13's registered backends: list_backends() and the ones it hides (debug/experimental)
_BACKENDS = frozenset({"cudagraphs", "inductor", "openxla", "tvm"})
_DEBUG_BACKENDS = frozenset({
    "aot_eager", "aot_eager_decomp_partition", "aot_eager_decomp_partition_crossref",
    "aot_eager_decomp_partition_with_mode", "aot_eager_default_partitioner", "aot_ts",
    "dynamo_accuracy_minifier_backend", "dynamo_minifier_backend", "eager", "eager_debug",
    "eager_noexcept", "invoke_subgraph", "non_leaf_compile_error_TESTING_ONLY", "openxla_eval",
    "pre_dispatch_eager", "relu_accuracy_error_TESTING_ONLY", "relu_compile_error_TESTING_ONLY",
    "relu_runtime_error_TESTING_ONLY", "ts"})
_INDUCTOR_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
                   "max-autotune")


class InvalidBackend(RuntimeError):
    """``torch._dynamo.exc.InvalidBackend``: ``backend`` names no registered backend."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")


def check_backend(backend: str | Callable) -> str | Callable:
    if isinstance(backend, str) and backend not in _BACKENDS | _DEBUG_BACKENDS:
        raise InvalidBackend(backend)
    return backend


class OptimizedModule(Module):
    """What ``compile(module)`` returns, as torch's ``OptimizedModule``: ``forward`` calls the
    wrapped module (its hooks included), attribute reads and writes go to it, and it is
    registered as the child ``_orig_mod``."""

    _opt_mod_attributes = frozenset({"_orig_mod", "forward", "__dict__",
                                     "_super_module_initialized", "_compiled"})

    def __init__(self, mod: Module, compiled: Callable | None = None) -> None:
        # first: attribute access on self reaches _orig_mod (as in torch)
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_super_module_initialized", False)
        object.__setattr__(self, "_compiled", compiled if compiled is not None else mod)
        super().__init__()
        self._super_module_initialized = True
        self._orig_mod = mod  # now registered as a child (the state_dict prefix)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled(*args, **kwargs)

    def explain(self, *args: Any, **kwargs: Any):
        """The graphs and graph breaks of one call (``torch._dynamo.explain``'s output)."""
        return self._compiled.explain(*args, **kwargs)

    @property
    def training(self) -> bool:
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        self._orig_mod.training = value

    def __len__(self) -> int:
        try:
            return len(self._orig_mod)
        except TypeError:
            raise TypeError(f"{type(self._orig_mod).__name__} does not support len()") from None

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __dir__(self) -> list[str]:
        names = self._orig_mod.__dir__()
        return names + [n for n in super().__dir__() if n not in names]

    def __reduce__(self):
        return (type(self), (self._orig_mod, self._compiled))


def compile(model: Callable | None = None, *, fullgraph: bool = False,
            dynamic: bool | None = None, backend: str | Callable | None = None,
            mode: str | None = None, options: dict[str, Any] | None = None,
            name: str | None = None, disable: bool = False, recompile_limit: int | None = None,
            isolate_recompiles: bool = False, shapes_spec: Any = None) -> Callable:
    """``torch.compile``: checks the arguments as torch does and returns a ``Compiled``
    callable for a function, an ``OptimizedModule`` around one for a module, ``model`` itself
    with ``disable=True``. Without ``model`` it is a decorator. Every ``backend``/``mode``
    runs ember's capture and replay; shapes are always specialized (``dynamic`` accepted)."""
    if backend is None:
        from .compiler import get_default_backend  # lazy: compiler imports this module
        backend = get_default_backend()
    if model is None:
        def decorator(model: Callable) -> Callable:
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, name=name, disable=disable,
                           recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
        return decorator
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    check_backend(backend)
    if backend == "inductor" and mode is not None and mode not in _INDUCTOR_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(_INDUCTOR_MODES)}")
    if disable:
        return model
    from ._capture.compiled import Compiled  # lazy: capture loads on first compile

    if isinstance(model, Module):
        return OptimizedModule(model, Compiled(model, fullgraph=fullgraph, dynamic=dynamic,
                                               mode=mode, recompile_limit=recompile_limit))
    if not callable(model):
        raise AssertionError(  # noqa: TRY004 - torch's exception type
            f"A callable function is expected, but {type(model)} is provided.")
    return Compiled(model, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                    recompile_limit=recompile_limit)
