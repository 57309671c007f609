"""``Op``: a differentiable primitive, its forward and its derivative declared together.

An op is a ``Node`` subclass named as torch names the node (``MulBackward0``)::

    class MulBackward0(Op):
        save_inputs = (0, 1)                  # inputs backward needs, version-checked
        def forward(self, a, b):              # NumPy arrays (or Python scalars) in, array out
            return a * b
        def backward(self, grad):             # ember Tensors in and out: differentiable,
            a, b = self.saved()               # so double backward needs nothing extra
            return grad * b, grad * a

``forward`` may stash non-tensor state (a dim, a mask) on ``self``; such attributes must be
declared in ``__slots__``. ``backward`` returns one gradient per input (None for "no grad").
The engine reduces broadcast gradients to each input's shape and dtype, so rules never do.
"""

from __future__ import annotations

import numpy as np

from .._backend import dtypes as _dt
from .._tensor import Tensor, _make, _refresh_view
from ..autograd.anomaly_mode import AnomalyMode, capture_trace
from ..autograd.grad_mode import state as _grad_state
from ..autograd.graph import INFERENCE_SAVE_ERROR, Node, next_sequence_nr

_new = object.__new__
_ndarray = np.ndarray
_asarray = np.asarray
_FROM_NP = _dt._FROM_NP
_NO_EDGE = (None, 0)


class Op(Node):
    """Base of every built-in differentiable op (see the module docstring)."""

    __slots__ = ()
    save_inputs: tuple[int, ...] = ()
    save_output: bool = False

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} has no forward")

    def saved(self) -> tuple:
        """The inputs listed in ``save_inputs``; raises if freed or modified in place since."""
        return self._check_saved()

    def saved_output(self) -> Tensor:
        """The op's output, rebuilt from its array (kept without a reference cycle)."""
        return self._unpack_output()

    def needs_grad(self, i: int) -> bool:
        """Whether input ``i`` needs a gradient (skip computing those that don't)."""
        return self.next_functions[i][0] is not None

    @classmethod
    def apply(cls, *inputs, params: tuple = ()) -> Tensor:
        """Run on ``inputs`` (Tensors or Python scalars) and record a node if grad is needed."""
        node = _new(cls)
        arrays = [x._data if isinstance(x, Tensor) else x for x in inputs]
        out = node.forward(*arrays, *params)
        if type(out) is not _ndarray:
            out = _asarray(out)
        if _grad_state.grad_enabled:
            for x in inputs:
                if isinstance(x, Tensor) and x._requires_grad:
                    return _record(node, inputs, out)
        return _make(out)


def apply1(cls, x: Tensor, *params) -> Tensor:
    """``cls.apply`` for the common one-tensor case, without the generic loops."""
    node = _new(cls)
    out = node.forward(x._data, *params)
    if type(out) is not _ndarray:
        out = _asarray(out)
    if x._requires_grad and _grad_state.grad_enabled:
        return _record(node, (x,), out)
    return _make(out)


def _record(node: Op, inputs, out: np.ndarray) -> Tensor:
    """Link ``node`` into the graph: edges, input metadata, saved tensors; wrap ``out``."""
    edges = []
    meta = []
    for x in inputs:  # one pass, Tensor._edge inlined: this runs for every recorded op
        if isinstance(x, Tensor):
            if x._base is not None:
                _refresh_view(x)
            fn = x._grad_fn
            if fn is not None:
                edges.append((fn, x._output_nr))
            elif x._requires_grad:
                edges.append((x._accumulator(), 0))
            else:
                edges.append(_NO_EDGE)
            d = x._data
            meta.append((d.shape, d.dtype))
        else:
            edges.append(_NO_EDGE)
            meta.append(None)
    node.next_functions = tuple(edges)
    node._in_meta = tuple(meta)
    node._sequence_nr = next_sequence_nr()
    node._hooks = None
    node._trace = capture_trace() if AnomalyMode.enabled else None
    save = node.save_inputs
    if save:
        saved = tuple(inputs[i] for i in save)
        versions = []
        for t in saved:
            if isinstance(t, Tensor):
                if t._extra is not None and t._extra.inference:
                    raise RuntimeError(INFERENCE_SAVE_ERROR)
                versions.append(t._vc[0])
            else:
                versions.append(None)
        node._saved = saved
        node._saved_versions = versions
    else:
        node._saved = ()
        node._saved_versions = ()
    result = _make(out, node)
    node._saved_out = (out, result._vc, 0) if node.save_output else None
    return result


def promote(a, b, int_to_float: bool = False):
    """Arrays of ``a`` and ``b`` (Tensors or scalars) cast as torch's type promotion says.

    Python scalars stay Python scalars: NumPy 2 treats them as weak, as torch does, once the
    tensor operand already has the result dtype.
    """
    ta = isinstance(a, Tensor)
    tb = isinstance(b, Tensor)
    ad = a._data if ta else a
    bd = b._data if tb else b
    if ta and tb:
        if ad.dtype is bd.dtype or ad.dtype == bd.dtype:
            if int_to_float and ad.dtype.kind != "f":
                target = _dt.get_default_dtype().np
                return ad.astype(target), bd.astype(target)
            return ad, bd
    elif ta:
        if ad.dtype.kind == "f" and type(b) in (float, int, bool):
            return ad, bd
    elif tb:
        if bd.dtype.kind == "f" and type(a) in (float, int, bool):
            return ad, bd
    rt = _dt.result_type(a, b)
    if int_to_float and not rt.is_floating_point:
        rt = _dt.get_default_dtype()
    target = rt.np
    if ta and ad.dtype != target:
        ad = ad.astype(target)
    elif not ta and rt.is_floating_point:
        ad = float(ad)
    if tb and bd.dtype != target:
        bd = bd.astype(target)
    elif not tb and rt.is_floating_point:
        bd = float(bd)
    return ad, bd


class BinaryOp(Op):
    """An op of two operands, either of which may be a Python scalar; promotes like torch."""

    __slots__ = ()
    int_to_float = False

    @classmethod
    def apply(cls, a, b, *params) -> Tensor:
        node = _new(cls)
        ad, bd = promote(a, b, cls.int_to_float)
        try:
            out = node.forward(ad, bd, *params)
        except ValueError:
            err = broadcast_error(np.shape(ad), np.shape(bd))
            if err is None:
                raise
            raise err from None
        if type(out) is not _ndarray:
            out = _asarray(out)
        if _grad_state.grad_enabled and (
                (isinstance(a, Tensor) and a._requires_grad)
                or (isinstance(b, Tensor) and b._requires_grad)):
            return _record(node, (a, b), out)
        return _make(out)


def broadcast_error(a_shape: tuple, b_shape: tuple) -> RuntimeError | None:
    """Torch's error for two shapes that don't broadcast (None if they do)."""
    n = max(len(a_shape), len(b_shape))
    for i in range(1, n + 1):  # torch reports the trailing-most mismatch
        sa = a_shape[-i] if i <= len(a_shape) else 1
        sb = b_shape[-i] if i <= len(b_shape) else 1
        if sa != sb and sa != 1 and sb != 1:
            return RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b "
                                f"({sb}) at non-singleton dimension {n - i}")
    return None


def wrap_scalar(value, like: Tensor | None = None) -> Tensor:
    """A constant tensor for a Python number, with torch's dtype for it."""
    if isinstance(value, Tensor):
        return value
    if like is not None:
        return _make(np.asarray(value, dtype=like._data.dtype))
    return _make(np.asarray(value, dtype=_dt._scalar_dtype(value).np))


def dtype_of(arr: np.ndarray) -> _dt.dtype:
    return _FROM_NP[arr.dtype]
