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

from .._backend import (
    FLOAT_KINDS,
    as_array,
    from_numpy_dtype,
    host,
    ndarray,
    weak_scalar,
    xp_of,
)
from .._backend import dtypes as _dt
from .._backend.trace import SymFloat
from .._tensor import Tensor, _make, _refresh_view
from ..autograd.anomaly_mode import AnomalyMode, capture_trace
from ..autograd.forward_ad import propagate as _propagate
from ..autograd.forward_ad import state as _fw_state
from ..autograd.grad_mode import state as _grad_state
from ..autograd.grad_mode import threads_off as _threads_off
from ..autograd.graph import INFERENCE_SAVE_ERROR, SEQUENCE, Node, _op_name
from ..autograd.record import (
    NO_EDGE,
    device_mismatch,
    meta_entry,
    needs_recording,
    record,
    save,
)

_new = object.__new__
# the saved-version tuples of one and two saved inputs at version 0 (or not Tensors: None),
# shared. NOTE: a new tuple per recorded op that outlives it costs ~0.1 µs/op, most of it in
# the cyclic collector, which every object the graph keeps makes run more often
_V1 = (0,)
_V2 = (((0, 0), (0, None)), ((None, 0), (None, None)))
# Python numbers an op takes as they are (a traced float of ember.compile is one: it records
# what is computed from it)
_SCALARS = (float, int, bool, SymFloat)
_FROM_NP = _dt._FROM_NP
_LINEAR_MODULES = frozenset(("ember.ops.shape", "ember.ops.indexing", "ember.ops.inplace",
                             "ember.ops.creation"))


def complex_error(cls) -> RuntimeError:
    """The error of an op not yet complex-aware, on a complex tensor (see ``Op.complex_ok``)."""
    name = cls.__name__.split("Backward")[0].lower()
    return RuntimeError(f"{name} does not support complex tensors yet in ember: apply it to "
                        "real tensors (x.real, x.imag, x.abs() or torch.view_as_real(x))")


class Op(Node):
    """Base of every built-in differentiable op (see the module docstring)."""

    __slots__ = ()
    save_inputs: tuple[int, ...] = ()
    save_output: bool = False
    # for a binary op whose two saved inputs each serve only the other's gradient (mul, mm):
    # an input is saved only if the other needs a gradient, as torch does (None in its place)
    save_crosswise: bool = False
    # the three above as one tuple, set per class (None: ``save_inputs`` varies per node). NOTE:
    # a class attribute read through an instance is not specialised by Python 3.11 (~130
    # instructions, callgrind, against ~15 for a slot): the fast paths read this one instead
    _rec: tuple | None = ((), False, False, False)
    # whether forward and backward are right for complex tensors (torch's conjugate-Wirtinger
    # convention, ops/complex.py); the linear ops of the modules in ``_LINEAR_MODULES`` (views,
    # joins, indexing) are without changes. Any other op with a complex result raises
    # ``complex_error`` instead of giving wrong numbers.
    complex_ok: bool = False
    # a forward that is one elementwise ufunc of the array module (``"tanh"``): ``forward`` is
    # derived from it, and the one-tensor apply calls NumPy's ufunc itself on host arrays (a C
    # call: no Python frame, ~0.1 µs less per op on small tensors)
    ufunc: str | None = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "complex_ok" not in cls.__dict__ and cls.__module__ in _LINEAR_MODULES:
            cls.complex_ok = True
        if "ufunc" in cls.__dict__ and "forward" not in cls.__dict__:
            cls.forward = _ufunc_forward(cls.ufunc)
        dynamic = any("save_inputs" in getattr(k, "__slots__", ()) for k in cls.__mro__)
        cls._rec = None if dynamic else (cls.save_inputs, cls.save_crosswise, cls.save_output,
                                         tuple(cls.save_inputs) == (0, 1))

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} has no forward")

    # ``saved()``: the inputs listed in ``save_inputs``; raises if freed or modified in place
    # since. ``Node._check_saved`` itself, so that backward's hot path has no extra frame.
    saved = Node._check_saved

    def saved_output(self) -> Tensor:
        """The op's output, rebuilt from its array (kept without a reference cycle)."""
        return self._unpack_output()

    def needs_grad(self, i: int) -> bool:
        """Whether input ``i`` needs a gradient (skip computing those that don't)."""
        return self.next_functions[i][0] is not None

    def tensor_backward(self, grad) -> tuple:
        """``backward`` on a raw gradient, raw gradients out: what a ``raw_backward`` rule
        returns for the cases it does not compute itself (see ``raw_operand``)."""
        out = self.backward(_make(grad if type(grad) is ndarray else as_array(grad)))
        if type(out) is not tuple:
            return out._data if isinstance(out, Tensor) else out
        return tuple([g._data if isinstance(g, Tensor) else g for g in out])

    @classmethod
    def apply(cls, *inputs, params: tuple = ()) -> Tensor:
        """Run on ``inputs`` (Tensors or Python scalars) and record a node if grad is needed."""
        node = _new(cls)
        arrays = [x._data if isinstance(x, Tensor) else x for x in inputs]
        try:
            out = node.forward(*arrays, *params)
        except TypeError:  # a backend refusing the other's arrays: say which devices
            err = device_mismatch(inputs)
            if err is None:
                raise
            raise err from None
        if type(out) is not ndarray:
            out = as_array(out)
        if out.dtype.kind == "c" and not cls.complex_ok:
            raise complex_error(cls)
        result = None
        if not _threads_off or _grad_state.grad_enabled:
            for x in inputs:
                if isinstance(x, Tensor) and x._requires_grad:
                    result = record_op(node, inputs, out)
                    break
        if result is None:
            result = _make(out)
        if _fw_state.active:
            _propagate(node, inputs, result)
        return result


def record_op(node: Op, inputs, out) -> Tensor:
    """Record a one-output op through the recording path, saving what the class declares."""
    return record(node, inputs, (out,), tuple([inputs[i] for i in node.save_inputs]))[0]


def bilinear_jvp(tangents, inputs, product):
    """The tangent of ``product(a, b)``, bilinear in its operands: ``product(ta, b) +
    product(a, tb)`` (mul, mm, matmul); a missing tangent contributes nothing."""
    (ta, tb), (a, b) = tangents, inputs
    da = product(ta, b) if ta is not None else None
    db = product(a, tb) if tb is not None else None
    return db if da is None else da if db is None else da + db


def is_dual(*xs) -> bool:
    """Whether a forward-AD level is open and one of ``xs`` carries a tangent: an op with a
    path of its own for unrecorded calls must then build its node anyway (``op_result``)."""
    if not _fw_state.active:
        return False
    for x in xs:
        if isinstance(x, Tensor) and x._extra is not None and x._extra.tangent is not None:
            return True
    return False


def op_result(node: Op, inputs, out, recording: bool) -> Tensor:
    """``out`` as the op's result: recorded by ``node`` if ``recording``, and given its tangent
    while a forward-AD level is open."""
    result = record_op(node, inputs, out) if recording else _make(out)
    if _fw_state.active:
        _propagate(node, inputs, result)
    return result


def record_outputs(node: Op, inputs, outs) -> tuple:
    """The arrays ``outs`` of one multi-output ``node`` as Tensors (recorded if grad is needed:
    one node for all, whose backward receives one gradient per output)."""
    outs = [o if type(o) is ndarray else as_array(o) for o in outs]
    if needs_recording(inputs, _grad_state.grad_enabled):
        result = tuple(record(node, inputs, outs, tuple([inputs[i] for i in node.save_inputs])))
    else:
        result = tuple(_make(o) for o in outs)
    if _fw_state.active:
        _propagate(node, inputs, result)
    return result


# NOTE: the unary and binary forms below inline ``link``/``save``/``emit`` of
# ``autograd/record.py`` for the one-output case: recording is the per-op cost that dominates
# small tensors. Going through ``record_op`` instead measured ~0.25 µs/op slower (2.10 vs 1.86
# µs/op forward, 3.62 vs 3.33 forward+backward, benchmarks/overhead.py's chain). They must stay
# equivalent to ``record_op``; the op table runs every op through them.


def apply1(cls, x: Tensor, *params) -> Tensor:
    """``cls.apply`` for the common one-tensor case, without the generic loops."""
    node = cls()  # (NOTE: ops define no __init__; ``cls()`` is ~300 instructions cheaper than
    # ``object.__new__(cls)``, which copies its arguments into a new tuple)
    out = node.forward(x._data, *params) if params else node.forward(x._data)
    if type(out) is not ndarray:
        out = as_array(out)
    if out.dtype.kind == "c" and not cls.complex_ok:
        raise complex_error(cls)
    if x._requires_grad and (not _threads_off or _grad_state.grad_enabled):
        result = _record1(node, x, out, cls._rec)
    else:
        result = _make(out)
    if _fw_state.active:
        _propagate(node, (x,), result, params)
    return result


def _ufunc_forward(name: str):
    """``forward`` of an op declared by its ``ufunc``: that function of the array's module."""
    kernel = getattr(host, name)

    def forward(self, a):
        return (kernel if type(a) is ndarray else getattr(xp_of(a), name))(a)

    forward.__qualname__ = f"forward ({name})"
    return forward


def unary_apply(cls, to_float: bool = False):
    """``apply1`` for ``cls`` as a plain function of the one tensor (a closure over ``cls``,
    not a class argument), fit to be the op's method form itself. With ``to_float``, an
    integer or bool input is computed in the default float dtype, as torch's unary float ops
    do. NOTE: one frame less than ``apply1`` behind a wrapper (~0.16 µs of ~1.1 µs for
    ``x.tanh()``); it must stay equivalent to ``apply1``, which the op table checks, and to
    ``unary_function``, which repeats its body (tests/test_pointwise.py checks both forms)."""
    complex_ok = cls.complex_ok
    kernel = None if cls.ufunc is None else getattr(host, cls.ufunc)
    rec = cls._rec
    elementwise = cls.ufunc is not None  # (its output: the input's shape)

    def apply(x: Tensor) -> Tensor:
        d = x._data
        if to_float:
            kind = d.dtype.kind
            if kind not in FLOAT_KINDS and kind != "c":
                x = _make(d.astype(_dt.get_default_dtype().np))
                d = x._data
        node = cls()
        out = kernel(d) if kernel is not None and type(d) is ndarray else node.forward(d)
        if type(out) is not ndarray:
            out = as_array(out)
        if not complex_ok and out.dtype.kind == "c":
            raise complex_error(cls)
        if x._requires_grad and (not _threads_off or _grad_state.grad_enabled):
            result = _record1(node, x, out, rec, elementwise)
        else:
            result = _make(out)
        if _fw_state.active:
            _propagate(node, (x,), result, ())
        return result

    apply.__qualname__ = f"{cls.__name__}.apply1"
    return apply


# an argument not given (``unary_function``'s input and its other spellings)
MISSING = object()


def unary_function(cls, name: str, resolve, write_out, to_float: bool = False):
    """``torch.<name>(input, *, out=None)`` for ``cls``: ``unary_apply``'s apply as a public
    function, which also takes torch's ``x=``/``a=``/``x1=`` spellings of ``input``.

    ``resolve(name, input, x, a, x1)``, called unless ``input`` is a plain Tensor and no other
    spelling is given, returns the input tensor or raises torch's TypeError;
    ``write_out(result, out)`` is ``out=``. NOTE: the body repeats ``unary_apply``'s apply
    rather than calling it: the call and a wrapper's checks cost ~0.18 µs of ~1.75 per
    ``torch.tanh(t)`` (a third of the ops of benchmarks/overhead.py's chain).
    tests/test_pointwise.py checks that both forms agree."""
    complex_ok = cls.complex_ok
    kernel = None if cls.ufunc is None else getattr(host, cls.ufunc)
    rec = cls._rec
    elementwise = cls.ufunc is not None

    def fn(input: Tensor = MISSING, *, out=None, x=MISSING, a=MISSING,
           x1=MISSING) -> Tensor:
        if type(input) is not Tensor or x is not MISSING or a is not MISSING or \
                x1 is not MISSING:
            input = resolve(name, input, x, a, x1)
        d = input._data
        if to_float:
            kind = d.dtype.kind
            if kind not in FLOAT_KINDS and kind != "c":
                input = _make(d.astype(_dt.get_default_dtype().np))
                d = input._data
        node = cls()
        result = kernel(d) if kernel is not None and type(d) is ndarray else node.forward(d)
        if type(result) is not ndarray:
            result = as_array(result)
        if not complex_ok and result.dtype.kind == "c":
            raise complex_error(cls)
        if input._requires_grad and (not _threads_off or _grad_state.grad_enabled):
            result = _record1(node, input, result, rec, elementwise)
        else:
            result = _make(result)
        if _fw_state.active:
            _propagate(node, (input,), result, ())
        return result if out is None else write_out(result, out)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _record1(node: Op, x: Tensor, out, rec, elementwise: bool = False) -> Tensor:
    """``record_op`` for one Tensor input (unary ops): straight-line, no loops. ``rec`` is the
    class's ``_rec`` (see ``_record2``); ``elementwise``: the output has the input's shape, so
    it takes the input's metadata entry when it has its dtype too (``Tensor._meta``)."""
    if x._base is not None:
        _refresh_view(x)
    fn = x._grad_fn
    node.next_functions = ((fn, x._output_nr),) if fn is not None else ((x._accumulator(), 0),)
    # NOTE: reading an array's shape makes a tuple, and looking it up hashes it: ~0.1 µs an
    # input, about a tenth of a recorded op on small tensors. The entry cached on the tensor
    # skips both
    entry = x._meta
    if entry is None:
        d = x._data
        entry = x._meta = meta_entry(d.shape, d.dtype)
    node._in_meta = entry[2]
    node._sequence_nr = next(SEQUENCE)
    node._hooks = None
    if AnomalyMode.enabled:  # (else ``_trace`` stays unset: its reader takes it as None)
        node._trace = capture_trace()
    if rec is None:
        return record_op(node, (x,), out)
    save, _, save_out, _ = rec
    if save:
        if len(save) != 1:
            return record_op(node, (x,), out)
        if x._extra is not None and x._extra.inference:
            raise RuntimeError(INFERENCE_SAVE_ERROR)
        node._saved = (x,)
        version = x._vc[0]
        node._saved_versions = _V1 if version == 0 else (version,)
    else:
        node._saved = node._saved_versions = ()
    t = _new(Tensor)  # record.emit for one output, inlined
    t._data = out
    t._grad_fn = node
    t._requires_grad = True
    t._output_nr = 0
    t._vc = vc = [0]
    t._grad = t._base = t._view = t._acc = t._extra = None
    t._meta = entry if elementwise and out.dtype is entry[0] else None
    node._saved_out = (out, vc, 0) if save_out else None
    return t


def raw_operand(x, grad):
    """For a ``raw_backward`` rule: the operand ``x`` (a saved Tensor or Python number) as
    ``grad <op> x`` sees it when no promotion happens: x's array if it has grad's dtype, a
    Python number as it is or, with a host gradient, as ``weak_scalar``'s 0-d array (grads
    are floating, so NumPy keeps their dtype as torch does). None when promotion would cast:
    the rule then falls back to ``tensor_backward``."""
    if isinstance(x, Tensor):
        d = x._data
        return d if d.dtype == grad.dtype else None
    if type(x) not in _PY_NUMBERS:
        return None
    return weak_scalar(x, grad.dtype) if type(grad) is ndarray else x


_PY_NUMBERS = (float, int, bool)


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
            if int_to_float and ad.dtype.kind not in FLOAT_KINDS and ad.dtype.kind != "c":
                target = _dt.get_default_dtype().np
                return ad.astype(target), bd.astype(target)
            return ad, bd
    elif ta:
        if ad.dtype.kind == "f" and type(b) in _SCALARS:
            return ad, bd
    elif tb and bd.dtype.kind == "f" and type(a) in _SCALARS:
        return ad, bd
    rt = _dt.result_type(a, b)
    if int_to_float and not rt.is_floating_point and not rt.is_complex:
        rt = _dt.get_default_dtype()
    target = rt.np
    if ta and ad.dtype != target:
        ad = ad.astype(target)
    elif not ta and rt.is_floating_point and type(ad) is not SymFloat:
        ad = float(ad)
    if tb and bd.dtype != target:
        bd = bd.astype(target)
    elif not tb and rt.is_floating_point and type(bd) is not SymFloat:
        bd = float(bd)
    return ad, bd


class BinaryOp(Op):
    """An op of two operands, either of which may be a Python scalar; promotes like torch.

    ``apply(a, b, *params)`` is a plain function per class (see ``_binary_apply``), so it is
    also the op's operator form: ``Tensor.__mul__`` is ``MulBackward0.apply``.

    ``scalar_arrays``: the forward takes a Python number on the right of a floating host
    array as ``weak_scalar``'s 0-d array (the same values; ~0.28 µs less a call on small
    tensors). Only for forwards that are NumPy arithmetic on their operands as they are."""

    __slots__ = ()
    int_to_float = False
    scalar_arrays = False
    # the result has the broadcast shape of the operands (False: the products, whose shapes
    # are their own): when the operands agree, it takes their metadata entry (Tensor._meta)
    elementwise = True

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.apply = staticmethod(_binary_apply(cls))


def _binary_apply(cls):
    """``cls.apply``. NOTE: a closure over ``cls`` rather than a classmethod: a call binds
    nothing, and bound to ``Tensor`` as an operator it spares ``x * y`` the function form's
    frame (~0.1 µs of ~2 µs, benchmarks/overhead.py's chain)."""

    scalar_arrays = cls.scalar_arrays
    rec = cls._rec
    elementwise = cls.elementwise
    # a forward declared as a staticmethod (``operator.mul``) is called as it is, not looked up
    # through the node (a class attribute read through an instance: ~40 ns)
    declared = next(k.__dict__["forward"] for k in cls.__mro__ if "forward" in k.__dict__)
    static = declared.__func__ if isinstance(declared, staticmethod) else None

    def apply(a, b, *params) -> Tensor:
        # the common cases first, without promote: two tensors of one floating dtype, or a
        # floating tensor and a Python number (NumPy 2 keeps the tensor's dtype, as torch)
        node = cls()  # (see apply1)
        if not isinstance(a, Tensor):
            return _apply_promoted(cls, node, a, b, False, isinstance(b, Tensor), params)
        ad = a._data
        dt = ad.dtype
        if isinstance(b, Tensor):
            bd = b._data
            if (dt is not bd.dtype and dt != bd.dtype) or dt.kind != "f":
                return _apply_promoted(cls, node, a, b, True, True, params)
            tb = True
        elif type(b) in _PY_NUMBERS and dt.kind == "f":
            bd = weak_scalar(b, dt) if scalar_arrays and type(ad) is ndarray else b
            tb = False
        else:
            return _apply_promoted(cls, node, a, b, True, False, params)
        # NOTE: ``_forward2`` inlined (its try costs nothing in 3.11 unless it raises) and no
        # ``*params`` call when there are none: one frame and one tuple less per op
        try:
            if static is not None:
                out = static(ad, bd, *params) if params else static(ad, bd)
            else:
                out = node.forward(ad, bd, *params) if params else node.forward(ad, bd)
        except (ValueError, TypeError) as exc:
            err = _forward_error(exc, a, b, ad, bd)
            if err is None:
                raise
            raise err from None
        if type(out) is not ndarray:
            out = as_array(out)
        if (a._requires_grad or (tb and b._requires_grad)) and \
                (not _threads_off or _grad_state.grad_enabled):
            result = _record2(node, a, b, True, tb, out, rec, elementwise)
        else:
            result = _make(out)
        if _fw_state.active:
            _propagate(node, (a, b), result)
        return result

    apply.__qualname__ = f"{cls.__name__}.apply"
    return apply


def _forward_error(exc: Exception, a, b, ad, bd) -> RuntimeError | None:
    """Torch's error for what a binary forward raised (None: re-raise it as it is): shapes
    that don't broadcast, or operands on different devices."""
    if isinstance(exc, ValueError):
        return broadcast_error(getattr(ad, "shape", ()), getattr(bd, "shape", ()))
    return device_mismatch((a, b))  # a backend refusing the other's arrays


def _forward2(node: Op, a, b, ad, bd, params) -> ndarray:
    """``node.forward`` on two operand arrays, with torch's errors for what NumPy refuses."""
    try:
        out = node.forward(ad, bd, *params)
    except (ValueError, TypeError) as exc:
        err = _forward_error(exc, a, b, ad, bd)
        if err is None:
            raise
        raise err from None
    return out if type(out) is ndarray else as_array(out)


def _from_numpy(x):
    if type(x) is ndarray:
        return _make(x)
    return x.item() if isinstance(x, host.generic) else x


def _apply_promoted(cls, node: Op, a, b, ta: bool, tb: bool, params) -> Tensor:
    """``BinaryOp.apply`` for operands that need torch's promotion first (mixed dtypes,
    integers, scalars on the left, bfloat16, NumPy operands)."""
    if type(a) is ndarray or isinstance(a, host.generic) or \
            type(b) is ndarray or isinstance(b, host.generic):
        # torch: an ndarray operand acts as a tensor of its dtype, a NumPy scalar as a number
        a, b = _from_numpy(a), _from_numpy(b)
        ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    ad, bd = promote(a, b, cls.int_to_float)
    low = None
    if getattr(ad, "dtype", None) is not None and ad.dtype.kind == "V" or \
            getattr(bd, "dtype", None) is not None and bd.dtype.kind == "V":
        # bfloat16: compute in float32 and round the result once, as torch's CPU kernels do
        # (NumPy would widen ``bf16 * 2.0`` to float32 and keep it there)
        low = ad.dtype if getattr(ad, "dtype", None) is not None and ad.dtype.kind == "V" \
            else bd.dtype
        f32 = host.float32
        ad = ad.astype(f32) if hasattr(ad, "astype") else ad
        bd = bd.astype(f32) if hasattr(bd, "astype") else bd
    out = _forward2(node, a, b, ad, bd, params)
    if out.dtype.kind == "c" and not cls.complex_ok:
        raise complex_error(cls)
    if low is not None and out.dtype == host.float32:
        out = out.astype(low)
    if ((ta and a._requires_grad) or (tb and b._requires_grad)) and \
            (not _threads_off or _grad_state.grad_enabled):
        result = _record2(node, a, b, ta, tb, out, cls._rec, cls.elementwise)
    else:
        result = _make(out)
    if _fw_state.active:
        _propagate(node, (a, b), result)
    return result


def _record2(node: Op, a, b, ta: bool, tb: bool, out, rec,
             elementwise: bool = False) -> Tensor:
    """``record_op`` for two operands (``ta``/``tb``: which are Tensors): straight-line.
    ``rec`` is the class's ``_rec``, passed by the caller (read once per class, not per op).
    ``elementwise``: the output has the operands' broadcast shape (see ``_record1``)."""
    if ta:
        if a._base is not None:
            _refresh_view(a)
        fn = a._grad_fn
        ea = (fn, a._output_nr) if fn is not None else (
            (a._accumulator(), 0) if a._requires_grad else NO_EDGE)
        entry = a._meta  # (see _record1)
        if entry is None:
            d = a._data
            entry = a._meta = meta_entry(d.shape, d.dtype)
    else:
        ea = NO_EDGE
    if tb:
        if b._base is not None:
            _refresh_view(b)
        fn = b._grad_fn
        eb = (fn, b._output_nr) if fn is not None else (
            (b._accumulator(), 0) if b._requires_grad else NO_EDGE)
        other = b._meta
        if other is None:
            d = b._data
            other = b._meta = meta_entry(d.shape, d.dtype)
        if not ta:
            meta = other[5]
            entry = other  # (the output's, if elementwise: a number broadcasts to b's shape)
        elif other is entry or other[1] == entry[1]:
            meta = entry[3]  # the operands agree: one shared pair
        else:
            meta = (entry[1], other[1])
            entry = None  # (the output's shape is the operands' broadcast one)
    else:
        eb = NO_EDGE
        meta = entry[4]
    node.next_functions = (ea, eb)
    node._in_meta = meta
    node._sequence_nr = next(SEQUENCE)
    node._hooks = None
    if AnomalyMode.enabled:  # (else ``_trace`` stays unset: its reader takes it as None)
        node._trace = capture_trace()
    if rec is None:
        return record_op(node, (a, b), out)
    saves, crosswise, save_out, both = rec
    if saves:
        if crosswise:
            if eb is NO_EDGE:
                a = None
                ta = False
            if ea is NO_EDGE:
                b = None
                tb = False
        if both and (not ta or a._extra is None) and (not tb or b._extra is None):
            node._saved = (a, b)
            va = a._vc[0] if ta else None
            vb = b._vc[0] if tb else None
            node._saved_versions = _V2[va is None][vb is None] if not va and not vb else \
                (va, vb)
        else:
            save(node, tuple([(a, b)[i] for i in saves]))
    else:
        node._saved = node._saved_versions = ()
    t = _new(Tensor)  # record.emit for one output, inlined
    t._data = out
    t._grad_fn = node
    t._requires_grad = True
    t._output_nr = 0
    t._vc = vc = [0]
    t._grad = t._base = t._view = t._acc = t._extra = None
    t._meta = entry if elementwise and entry is not None and out.dtype is entry[0] else None
    node._saved_out = (out, vc, 0) if save_out else None
    return t


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
        d = like._data
        return _make(xp_of(d).asarray(value, dtype=d.dtype))
    return _make(host.asarray(value, dtype=_dt._scalar_dtype(value).np))


def dtype_of(arr) -> _dt.dtype:
    return _FROM_NP[arr.dtype]


# --------------------------------------------------------------------------- out=

def _check_cast(self: Tensor, result, name: str) -> None:
    src, dst = result.dtype, self._data.dtype
    if src == dst:
        return
    if (src.kind in FLOAT_KINDS and dst.kind in "iub") or (src.kind in "iu" and dst.kind == "b"):
        raise RuntimeError(f"result type {from_numpy_dtype(src)._legacy[:-6]} can't be cast "
                           f"to the desired output type {from_numpy_dtype(dst)._legacy[:-6]}")


def write_out(out: Tensor, result: Tensor, name: str | None = None) -> Tensor:
    """Implement ``out=``: resize ``out`` if its shape differs, then copy into it.

    As in torch, this refuses (in grad mode) when any argument, ``out`` included, requires grad.
    ``name`` is the op's name for the message (by default, taken from the result's node).
    """
    if _grad_state.grad_enabled and (result._requires_grad or out._requires_grad):
        node = result._grad_fn
        if name is None and node is not None:
            name = _op_name(node).lower()
        raise RuntimeError(f"{name + '(): ' if name else ''}functions with out=... arguments "
                           "don't support automatic differentiation, but one of the arguments "
                           "requires grad.")
    if out._data.shape != result._data.shape:
        out._data = xp_of(out._data).empty(result._data.shape, dtype=out._data.dtype)
        out._meta = None
    _check_cast(out, result._data, "out")
    xp_of(out._data).copyto(out._data, result._data, casting="unsafe")
    out._vc[0] += 1
    return out
