"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Like torch, the mode is thread-local, and each switch works both as a context manager and
as a decorator.
"""

from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    def __init__(self) -> None:
        # NOTE: set per thread (threading.local runs __init__ in each thread on first use), not
        # as class defaults: a read that finds the thread's own attribute costs ~42 ns, one
        # falling back to the class ~58 ns, and every op reads ``grad_enabled``
        self.grad_mode = True      # the grad mode users set and read (is_grad_enabled)
        self.inference = False
        self.grad_enabled = True   # whether ops record: grad mode outside inference mode


state = _GradState()


# One entry per thread whose ops do not record (``grad_enabled`` False). An op tests
# ``not threads_off or state.grad_enabled``: while every thread records (training outside
# ``no_grad``) that is one read of a module list's length instead of its thread's state.
# NOTE: a ``threading.local`` read costs ~42 ns against ~10, ~2% of a recorded small op
# (benchmarks/overhead.py). ``append`` and ``pop`` are single, atomic operations on the list, so
# it needs no lock: each thread adds an entry when it turns recording off and takes one when
# it turns it back on. A thread that ends with recording off leaves its entry: ops then read
# their own thread's state, as correct and as fast as before. Mutated in place, never rebound.
threads_off: list = []


def set_enabled(enabled: bool) -> None:
    """Set whether ops record in this thread (``state.grad_enabled``), keeping ``threads_off``
    right. Every change of ``grad_enabled`` goes through here."""
    local = state
    if enabled:
        if not local.grad_enabled:
            local.grad_enabled = True
            if threads_off:  # (empty only if something set ``grad_enabled`` around this)
                threads_off.pop()
    elif local.grad_enabled:
        threads_off.append(None)
        local.grad_enabled = False


def _set_grad_mode(mode: bool) -> None:
    state.grad_mode = mode
    set_enabled(mode and not state.inference)


def is_grad_enabled() -> bool:
    """The grad mode of this thread (ops record when it is on, outside inference mode)."""
    return state.grad_mode


def is_inference_mode_enabled() -> bool:
    return state.inference


class _DecoratorContextManager:
    """Base that lets a context manager also decorate a function (a fresh instance per call)."""

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"{type(self).__name__} expects a function to decorate, got {func!r}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator, ``@no_grad``, as in torch."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording: results of ops do not require grad."""

    def __init__(self) -> None:
        self.prev = True

    def __enter__(self) -> None:
        self.prev = state.grad_mode
        _set_grad_mode(False)

    def __exit__(self, *exc) -> None:
        _set_grad_mode(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording inside a ``no_grad`` block (not inside inference mode)."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = state.grad_mode
        _set_grad_mode(True)

    def __exit__(self, *exc) -> None:
        _set_grad_mode(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode now (as a function call) or for a ``with`` block (restored on exit)."""

    def __init__(self, mode: bool) -> None:
        self.prev = state.grad_mode
        self.mode = bool(mode)
        _set_grad_mode(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _set_grad_mode(self.prev)

    def __call__(self, func):
        # as a decorator (``@set_grad_enabled(False)``) it must not change the mode at import
        _set_grad_mode(self.prev)
        return super().__call__(func)

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):
    """``no_grad`` that also marks new tensors as inference tensors, as torch does.

    Nothing records inside it, even under ``enable_grad``. Inference tensors cannot later be
    saved for backward; ``clone()`` one outside the block to get a normal tensor.
    ``inference_mode(False)`` turns inference mode off and grad mode on for its block.
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # bare ``@inference_mode``

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self.prev = (True, False)

    def __enter__(self) -> None:
        self.prev = (state.grad_mode, state.inference)
        state.inference = self.mode
        _set_grad_mode(not self.mode)

    def __exit__(self, *exc) -> None:
        state.inference = self.prev[1]
        _set_grad_mode(self.prev[0])

    def clone(self):
        return type(self)(self.mode)
