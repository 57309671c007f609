"""In-place ops: one mechanism for every ``x.op_(...)``, ``x += y`` and ``x[key] = v``.

An in-place op runs the out-of-place op (on a snapshot of ``x`` when a graph is recorded,
so the node saves the old values), writes the result into ``x``'s memory, bumps the version
counter shared by ``x`` and its views, and makes the new node ``x``'s history. When ``x`` is a
view, the base's history is rewritten with ``CopySlices`` and the view is replayed on top,
as torch does.
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _make
from ..autograd.grad_mode import state as _grad_state
from ._op import Op, _record
from .views import replay_view, replay_view_array

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_ERROR = "a view of a leaf Variable that requires grad is being used in an in-place operation."
INFERENCE_ERROR = ("Inplace update to inference tensor outside InferenceMode is not allowed. You "
                   "can make a clone to get a normal tensor before doing inplace update. See "
                   "https://github.com/pytorch/rfcs/pull/17 for more details.")


def check_inplace(self: Tensor) -> None:
    """Torch's refusals: leaves that require grad (and their views), inference tensors."""
    if _grad_state.grad_enabled:
        if self._requires_grad and self._grad_fn is None:
            raise RuntimeError(LEAF_ERROR)
        base = self._base
        if base is not None and base._requires_grad and base._grad_fn is None:
            raise RuntimeError(VIEW_OF_LEAF_ERROR)
    if self._extra is not None and self._extra.inference and not _grad_state.inference:
        raise RuntimeError(INFERENCE_ERROR)


def _snapshot(self: Tensor) -> Tensor:
    """A tensor with ``self``'s history and a private copy of its values."""
    s = _make(self._data.copy())
    s._grad_fn = self._grad_fn
    s._output_nr = self._output_nr
    s._requires_grad = self._requires_grad
    s._acc = self._acc
    return s


def _check_cast(self: Tensor, result: np.ndarray, name: str) -> None:
    src, dst = result.dtype, self._data.dtype
    if src == dst:
        return
    if (src.kind == "f" and dst.kind in "iub") or (src.kind in "iu" and dst.kind == "b"):
        from .._backend import from_numpy_dtype
        raise RuntimeError(f"result type {from_numpy_dtype(src).name.capitalize()} can't be cast "
                           f"to the desired output type "
                           f"{from_numpy_dtype(dst)._legacy.replace('Tensor', '')}")


def _write(self: Tensor, result: np.ndarray, name: str) -> None:
    if result.shape != self._data.shape:
        try:
            np.broadcast_to(result, self._data.shape)
        except ValueError:
            raise RuntimeError(
                f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                f"{list(np.broadcast_shapes(result.shape, self._data.shape))}") from None
    _check_cast(self, result, name)
    try:
        np.copyto(self._data, result, casting="unsafe")
    except ValueError as e:
        if "read-only" in str(e):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location. Please clone() the tensor before performing the "
                "operation.") from None
        raise
    self._version[0] += 1


def inplace(self: Tensor, fn, *args, **kwargs) -> Tensor:
    """Run ``fn(self, *args)`` and store the result in ``self`` (see the module docstring)."""
    check_inplace(self)
    if not _grad_state.grad_enabled:
        result = fn(self, *args, **kwargs)
        _write(self, result._data, getattr(fn, "__name__", "op"))
        return self
    needs_graph = self._requires_grad or any(
        isinstance(a, Tensor) and a._requires_grad for a in args)
    if not needs_graph:
        result = fn(self, *args, **kwargs)
        _write(self, result._data, getattr(fn, "__name__", "op"))
        return self
    result = fn(_snapshot(self), *args, **kwargs)
    _write(self, result._data, getattr(fn, "__name__", "op"))
    _rebase_history(self, result)
    return self


def _rebase_history(self: Tensor, result: Tensor) -> None:
    node = result._grad_fn
    if node is None:
        return
    if node._saved_out is not None:  # the node's saved output now lives in self
        node._saved_out = (self._data, self._version)
    base = self._base
    if base is None or self._view is None:
        self._grad_fn = node
        self._output_nr = result._output_nr
        self._requires_grad = True
        return
    # self is a view: the base's history becomes CopySlices(old base, new view values) ...
    cs = object.__new__(CopySlices)
    cs.chain = self._view
    mask = np.ones(base._data.shape, dtype=bool)
    replay_view_array(mask, self._view)[...] = False
    cs.mask = mask
    base_edge = _make(base._data)
    base_edge._grad_fn, base_edge._output_nr = base._grad_fn, base._output_nr
    base_edge._requires_grad, base_edge._acc = base._requires_grad, base._acc
    new_base = _record(cs, (base_edge, result), base._data)
    base._grad_fn = new_base._grad_fn
    base._output_nr = 0
    base._requires_grad = True
    # ... and the view is replayed on top of the base's new history.
    fresh = replay_view(base, self._view)
    self._grad_fn = fresh._grad_fn
    self._output_nr = fresh._output_nr
    self._requires_grad = True


class CopySlices(Op):
    """In-place op on a view: d/dbase = grad outside the view, d/dvalues = grad inside it."""

    __slots__ = ("chain", "mask")

    def backward(self, grad):
        keep = _make(self.mask.astype(grad._data.dtype))
        return grad * keep, replay_view(grad, self.chain)


class CopyBackwards(Op):
    """copy_(self, src): d/dself = 0, d/dsrc = grad (cast and summed back by the engine)."""

    __slots__ = ()

    def forward(self, a, src):
        out = np.empty_like(a)
        out[...] = src
        return out

    def backward(self, grad):
        return grad * 0, grad


class FillBackward2(Op):
    """fill_(value): d/dself = 0."""

    __slots__ = ()

    def forward(self, a, value):
        return np.full_like(a, value)

    def backward(self, grad):
        return grad * 0


class ZeroBackward0(Op):
    """zero_(): d/dself = 0."""

    __slots__ = ()

    def forward(self, a):
        return np.zeros_like(a)

    def backward(self, grad):
        return grad * 0


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """``Tensor.copy_``: copy (broadcast, cast) ``src`` into ``self``."""
    if not isinstance(src, Tensor):
        src = _make(np.asarray(src))
    return inplace(self, _copy, src)


def _copy(self: Tensor, src: Tensor) -> Tensor:
    try:
        return CopyBackwards.apply(self, src)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1})"
                           f" must match the size of tensor b ({src._data.shape[-1]}) at "
                           f"non-singleton dimension {self._data.ndim - 1}") from None


def fill_(self: Tensor, value) -> Tensor:
    """``Tensor.fill_``: set every element to ``value``."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        if value._requires_grad:
            return copy_(self, value)
        value = value.item()
    return inplace(self, lambda t, v: FillBackward2.apply(t, params=(v,)), value)


def zero_(self: Tensor) -> Tensor:
    """``Tensor.zero_``: set every element to zero."""
    return inplace(self, lambda t: ZeroBackward0.apply(t))


def write_out(out: Tensor, result: Tensor) -> Tensor:
    """Implement ``out=``: resize ``out`` if its shape differs, then copy into it."""
    if out._requires_grad and _grad_state.grad_enabled and result._requires_grad:
        raise RuntimeError("functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out._data.shape != result._data.shape:
        out._data = np.empty(result._data.shape, dtype=out._data.dtype)
    _check_cast(out, result._data, "out")
    np.copyto(out._data, result._data, casting="unsafe")
    out._version[0] += 1
    return out
