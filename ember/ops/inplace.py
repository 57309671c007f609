"""In-place ops: one mechanism for every ``x.op_(...)``, ``x += y`` and ``x[key] = v``.

An in-place op runs the out-of-place op (on a snapshot of ``x`` when a graph is recorded,
so the node saves the old values), writes the result into ``x``'s memory, bumps the version
counter shared by ``x`` and its views, and makes the new node ``x``'s history. When ``x`` is a
view, the base's history is rewritten with ``CopySlices`` and the view is replayed on top,
as torch does.
"""

from __future__ import annotations

from .._backend import host, ndarray, xp_of
from .._tensor import Tensor, _make, _refresh_view
from ..autograd.forward_ad import set_tangent, tangent_of
from ..autograd.forward_ad import state as _fw_state
from ..autograd.grad_mode import state as _grad_state
from ..autograd.graph import SEQUENCE
from ._op import Op, _check_cast
from ._registry import register
from .shape import replay_view, replay_view_array

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_ERROR = ("a view of a leaf Variable that requires grad is being used in an in-place "
                      "operation.")
MULTI_OUTPUT_VIEW_ERROR = (
    "Output {} of {} is a view and is being modified inplace. This view is the output of a "
    "function that returns multiple views. Such functions do not allow the output views to be "
    "modified inplace. You should replace the inplace operation by an out-of-place one.")
# (torch's wording, missing spaces included, so that searching for it finds torch's issues)
INFERENCE_ERROR = ("Inplace update to inference tensor outside InferenceMode is not allowed.You "
                   "can make a clone to get a normal tensor before doing inplace update.See "
                   "https://github.com/pytorch/rfcs/pull/17 for more details.")


def check_inplace(self: Tensor) -> None:
    """Torch's refusals: leaves that require grad (and their views), inference tensors."""
    if _grad_state.grad_enabled:
        if self._requires_grad and self._grad_fn is None:
            raise RuntimeError(LEAF_ERROR)
        base = self._base
        if base is not None and base._requires_grad and base._grad_fn is None:
            raise RuntimeError(VIEW_OF_LEAF_ERROR)
        if base is not None and self._view and self._grad_fn is not None and any(
                getattr(step[0], "multi_output", False) for step in self._view):
            name = type(self._grad_fn).__name__.rstrip("0123456789").removesuffix("Backward")
            raise RuntimeError(MULTI_OUTPUT_VIEW_ERROR.format(self._output_nr, name))
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


def _write(self: Tensor, result, name: str) -> None:
    if result.shape != self._data.shape:
        try:
            xp_of(result).broadcast_to(result, self._data.shape)
        except ValueError:
            raise RuntimeError(
                f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                f"{list(host.broadcast_shapes(result.shape, self._data.shape))}") from None
    _check_cast(self, result, name)
    try:
        xp_of(self._data).copyto(self._data, result, casting="unsafe")
    except ValueError as e:
        if "read-only" in str(e):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location. Please clone() the tensor before performing the "
                "operation.") from None
        raise
    self._vc[0] += 1


# Direct kernels: ``op -> kernel(self, *args, **kwargs)`` computing the op straight into
# ``self``'s array when no graph is recorded, returning False (having written nothing) for a
# case it does not take, which then goes the general way. NOTE: the general way computes a new
# array and copies it in: for ``w1 -= lr * w1.grad`` and ``w1.grad.zero_()`` on the seed
# two-layer net's 1000x100 weight that is an allocation and a second pass each (~35 µs of its
# ~490 µs step).
DIRECT: dict = {}
_OPERANDS = (float, int)


def direct_binary(ufunc, keyword: str | None = None, default=None, errstate=None):
    """The direct kernel of ``self <op>= other`` by ``ufunc``: a floating CPU tensor and an
    operand of its own dtype (a tensor, or a Python float or int, which NumPy 2 keeps weak as
    torch does), ``keyword`` (alpha, rounding_mode) absent or at its default. Bit for bit the
    general way's values: the same ufunc on the same operands, into another array.
    ``errstate``: a class of ``_backend.errstate`` the ufunc runs in (None: none)."""

    def kernel(self: Tensor, other, *rest, **kwargs) -> bool:
        data = self._data
        if rest or type(data) is not ndarray or data.dtype.kind != "f":
            return False
        if kwargs:
            if len(kwargs) > 1 or keyword not in kwargs:
                return False
            value = kwargs[keyword]
            if value is not default and not (type(value) is int and value == default):
                return False
        if isinstance(other, Tensor):
            operand = other._data
            if type(operand) is not ndarray or operand.dtype is not data.dtype:
                return False
        elif type(other) in _OPERANDS:
            operand = other
        else:
            return False
        try:
            if errstate is None:
                ufunc(data, operand, out=data)
            else:
                with errstate():
                    ufunc(data, operand, out=data)
        except ValueError:  # not broadcastable to self's shape, or read-only: the general way
            return False    # raises torch's error for it
        return True

    return kernel


def inplace(self: Tensor, fn, *args, **kwargs) -> Tensor:
    """Run ``fn(self, *args)`` and store the result in ``self`` (see the module docstring)."""
    if self._base is not None:
        _refresh_view(self)
    check_inplace(self)
    if not _grad_state.grad_enabled or not (self._requires_grad or any(
            isinstance(a, Tensor) and a._requires_grad for a in args)):
        # no graph to record: the op's direct kernel when it takes the case, else the op's
        # result copied in
        direct = DIRECT.get(fn)
        if direct is not None and not _fw_state.active and direct(self, *args, **kwargs):
            self._vc[0] += 1
            return self
        result = fn(self, *args, **kwargs)
        _write(self, result._data, getattr(fn, "__name__", "op"))
        if _fw_state.active:
            _write_tangent(self, tangent_of(result))
        return self
    snap = _snapshot(self)
    if _fw_state.active:
        set_tangent(snap, tangent_of(self))
    result = fn(snap, *args, **kwargs)
    _write(self, result._data, getattr(fn, "__name__", "op"))
    _rebase_history(self, result, snap)
    if _fw_state.active:
        _write_tangent(self, tangent_of(result))
    return self


def _write_tangent(self: Tensor, tangent) -> None:
    """After an in-place op under forward AD: ``self``'s new tangent, written through to its
    base's tangent when ``self`` is a view (the base changed with it, as in torch)."""
    base = self._base
    if base is None or self._view is None or (tangent is None and tangent_of(base) is None):
        set_tangent(self, tangent)
        return
    _fw_state.active = False  # the tangent bookkeeping carries no tangents of its own
    try:
        bt = tangent_of(base)
        bt = _make(xp_of(base._data).zeros_like(base._data)) if bt is None else bt.clone()
        view_t = replay_view(bt, self._view)
        view_t.copy_(tangent if tangent is not None else view_t * 0)
    finally:
        _fw_state.active = True
    set_tangent(base, bt)
    set_tangent(self, view_t)


def _rebase_history(self: Tensor, result: Tensor, snap: Tensor) -> None:
    node = result._grad_fn
    if node is None:
        return
    if node._saved_out is not None:  # the node's saved output now lives in self
        node._saved_out = (self._data, self._vc, self._vc[0])
    base = self._base
    if base is None or self._view is None:
        _move_retained_grad(self, node, result._output_nr)
        self._grad_fn = node
        self._output_nr = result._output_nr
        self._requires_grad = True
        return
    # CopySlices absorbs the op when its first input is the view's old values; not when the
    # op saved its output (rebuilt with the op as grad_fn, it keeps the op in the graph)
    first, meta = node.next_functions[0], node._in_meta
    absorb = (first[0] is snap._grad_fn and first[1] == snap._output_nr and meta is not None
              and meta[0] is not None and meta[0][0] == self._data.shape
              and node._saved_out is None)
    rebase_view(self, node, result._output_nr, absorb)


def _move_retained_grad(t: Tensor, node, output_nr: int) -> None:
    """``retain_grad`` follows the tensor to its new history, as in torch."""
    extra = t._extra
    old = t._grad_fn
    if extra is None or not extra.retains_grad or old is None or old._hooks is None:
        return
    fn = old._hooks.retain.pop(t._output_nr, None)
    if fn is not None:
        node._get_hooks().retain[output_nr] = fn


def rebase_view(self: Tensor, node, output_nr: int, absorb: bool = False) -> None:
    """Make ``node`` (output ``output_nr``) the new history of the view ``self``.

    The base's history becomes ``CopySlices``; with ``absorb``, ``node``'s first input must be
    the view's old values, and CopySlices takes ``node``'s place in the graph, as in torch.
    """
    base = self._base
    # the base's history becomes CopySlices(old base, op) ...
    cs = object.__new__(CopySlices)
    cs.chain = self._view
    cs._sequence_nr = next(SEQUENCE)
    cs._hooks = None
    cs._trace = getattr(node, "_trace", None)  # (unset when anomaly mode was off)
    cs._saved = ()
    cs._saved_versions = ()
    cs._saved_out = None
    base_edge = base._edge()
    base_meta = (base._data.shape, base._data.dtype)
    if absorb:
        cs.fn = node
        cs.next_functions = (base_edge,) + node.next_functions[1:]
        cs._in_meta = (base_meta,) + node._in_meta[1:]
    else:  # e.g. a composite op: keep it as a child, fed the view's part of the gradient
        cs.fn = None
        cs.next_functions = (base_edge, (node, output_nr))
        cs._in_meta = (base_meta, (self._data.shape, self._data.dtype))
    _move_retained_grad(base, cs, 0)
    base._grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    # ... and the view is replayed on top of the base's new history.
    fresh = replay_view(base, self._view)
    _move_retained_grad(self, fresh._grad_fn, fresh._output_nr)
    self._grad_fn = fresh._grad_fn
    self._output_nr = fresh._output_nr
    self._requires_grad = True


class CopySlices(Op):
    """The base's node after an in-place op ``fn`` on its view (``chain``), as in torch.

    Its edges are the base's old history, then ``fn``'s other inputs. Backward runs ``fn`` on
    the view's part of the gradient; ``fn``'s gradient for the view's old values goes back
    into that part of the base's gradient, the rest of which passes through unchanged.
    """

    __slots__ = ("chain", "fn")

    def name(self) -> str:
        return "torch::autograd::CopySlices"

    def backward(self, grad):
        chain, fn = self.chain, self.fn
        grad_view = replay_view(grad, chain)
        if fn is None:
            return AsStridedScatterBackward0.apply(grad, 0.0, params=(chain,)), grad_view
        res = fn.backward(grad_view)
        res = res if type(res) is tuple else (res,)
        if self.next_functions[0][0] is None:
            return (None,) + res[1:]
        first = res[0] if res else None
        meta = fn._in_meta[0]
        if first is None:
            first = 0.0
        elif first._data.shape != meta[0] or first._data.dtype != meta[1]:
            from ..autograd.engine import _validate  # lazy: the engine loads on first backward
            first = _validate(fn, 0, first, meta, False)
        return (AsStridedScatterBackward0.apply(grad, first, params=(chain,)),) + res[1:]

    def _release(self) -> None:
        if self.fn is not None:
            self.fn._release()


class AsStridedScatterBackward0(Op):
    """``base`` with the elements of its view ``chain`` replaced by ``src``."""

    __slots__ = ("chain",)

    def forward(self, base, src, chain):
        self.chain = chain
        out = base.copy()
        replay_view_array(out, chain)[...] = src
        return out

    def backward(self, grad):
        chain = self.chain
        g_base = AsStridedScatterBackward0.apply(grad, 0.0, params=(chain,)) \
            if self.needs_grad(0) else None
        g_src = replay_view(grad, chain) if self.needs_grad(1) else None
        return g_base, g_src


class CopyBackwards(Op):
    """copy_(self, src): d/dself = 0, d/dsrc = grad (cast and summed back by the engine)."""

    __slots__ = ()

    def name(self) -> str:
        return "torch::autograd::CopyBackwards"

    def forward(self, a, src):
        out = xp_of(a).empty_like(a)
        out[...] = src
        return out

    def backward(self, grad):
        return grad * 0, grad


class FillBackward2(Op):
    """fill_(value): d/dself = 0."""

    __slots__ = ()

    def forward(self, a, value):
        return xp_of(a).full_like(a, value)

    def backward(self, grad):
        return grad * 0


class ZeroBackward0(Op):
    """zero_(): d/dself = 0."""

    __slots__ = ()

    def forward(self, a):
        return xp_of(a).zeros_like(a)

    def backward(self, grad):
        return grad * 0


@register(export=False)
def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """``Tensor.copy_``: copy (broadcast, cast) ``src`` into ``self``."""
    if not isinstance(src, Tensor):
        src = _make(xp_of(self._data).asarray(src))
    return inplace(self, _copy, src)


def _copy(self: Tensor, src: Tensor) -> Tensor:
    try:
        return CopyBackwards.apply(self, src)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1})"
                           f" must match the size of tensor b ({src._data.shape[-1]}) at "
                           f"non-singleton dimension {self._data.ndim - 1}") from None


@register
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


@register
def zero_(self: Tensor) -> Tensor:
    """``Tensor.zero_``: set every element to zero."""
    return inplace(self, _zeros)


def _zeros(t: Tensor) -> Tensor:
    return ZeroBackward0.apply(t)


def _zero_direct(self: Tensor) -> bool:
    data = self._data
    if type(data) is not ndarray:
        return False
    try:
        data.fill(0)
    except ValueError:  # read-only (an expanded view): the general way raises torch's error
        return False
    return True


DIRECT[_zeros] = _zero_direct
