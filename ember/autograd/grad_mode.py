"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Like torch, the mode is thread-local, and each switch works both as a context manager and
as a decorator.
"""

from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    grad_enabled = True
    inference = False


state = _GradState()


def is_grad_enabled() -> bool:
    """True when operations are recorded for autograd on this thread."""
    return state.grad_enabled


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


class no_grad(_DecoratorContextManager):
    """Disable gradient recording: results of ops do not require grad."""

    def __init__(self) -> None:
        self.prev = True

    def __enter__(self) -> None:
        self.prev = state.grad_enabled
        state.grad_enabled = False

    def __exit__(self, *exc) -> None:
        state.grad_enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording inside a ``no_grad`` block."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = state.grad_enabled
        state.grad_enabled = True

    def __exit__(self, *exc) -> None:
        state.grad_enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode now (as a function call) or for a ``with`` block (restored on exit)."""

    def __init__(self, mode: bool) -> None:
        self.prev = state.grad_enabled
        self.mode = bool(mode)
        state.grad_enabled = self.mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        state.grad_enabled = self.prev

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):
    """``no_grad`` that also marks new tensors as inference tensors, as torch does.

    Inference tensors cannot later be saved for backward; ``clone()`` one outside the block to
    get a normal tensor.
    """

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self.prev = (True, False)

    def __enter__(self) -> None:
        self.prev = (state.grad_enabled, state.inference)
        if self.mode:
            state.grad_enabled = False
            state.inference = True
        else:
            state.inference = False

    def __exit__(self, *exc) -> None:
        state.grad_enabled, state.inference = self.prev

    def clone(self):
        return type(self)(self.mode)

    def __call__(self, func):
        if isinstance(func, bool):  # @inference_mode(False) style is handled by __init__
            return type(self)(func)
        return super().__call__(func)
