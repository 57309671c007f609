"""Losses with a primitive (``F.*``): mse, smooth_l1, huber, nll, cross_entropy, binary
cross-entropy (with logits), soft margin, multi margin, multilabel margin; and the reduction
helpers the composite losses of ``nn.functional.loss`` share.

Where torch has a fused kernel with a simple rule (``MseLossBackward0``, ``NllLossBackward0``,
``BinaryCrossEntropyWithLogitsBackward0``, ...) the loss is one primitive here, named as torch
names it, its derivative written in ember ops (so double backward works). cross_entropy is
log_softmax then nll_loss, as in torch.
"""

from __future__ import annotations

import math
import warnings

from .._backend import HOST_ARRAYS, host, ndarray, weak_scalar, xp_of
from .._backend import dtypes as _dt
from .._backend.errstate import (
    ignore_divide_invalid,
    ignore_divide_invalid_over,
    ignore_divide_over,
    ignore_under,
)
from .._backend.sums import BLAS_MIN as _BLAS_MIN
from .._backend.sums import BLOCK as _BLOCK
from .._backend.sums import blas_sum as _blas_sum
from .._backend.sums import blas_sum_squares as _blas_sum_squares
from .._backend.trace import symbolic
from .._tensor import Tensor, _make
from ..amp import _state as _amp
from ..autograd.grad_mode import state as _grad_state
from ._op import Op, apply1, broadcast_error
from .activation import LogSoftmaxBackward0
from .arithmetic import scalar_name
from .comparison import clamp_min, where
from .unary import abs as _abs
from .unary import exp, log, sigmoid, sign

__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss",
    "mse_loss", "multi_margin_loss", "multilabel_margin_loss", "nll_loss", "smooth_l1_loss",
    "soft_margin_loss"
]


_REDUCTIONS = ("none", "mean", "sum")

# --------------------------------------------------------------------------- reduction arguments


def _legacy_reduction(size_average, reduce, stacklevel: int = 3) -> str:
    """torch's ``_Reduction.legacy_get_string``: the old flags mapped to a reduction, warned."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=stacklevel)
    return ret


def _reduction(size_average, reduce, reduction: str) -> str:
    """The reduction to apply: the legacy flags win if either is given; validated as torch's
    ``_Reduction.get_enum`` does."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce, 4)
    return _check_reduction(reduction, 4)


def _check_reduction(reduction: str, stacklevel: int = 3) -> str:
    if reduction in _REDUCTIONS:
        return reduction
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", stacklevel=stacklevel)
        return "mean"
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    """A composite loss reduced (``MeanBackward0`` / ``SumBackward0``, as torch records)."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _reduce_array(loss: ndarray, reduction: str) -> ndarray:
    """A primitive's elementwise loss reduced (an array kernel); the mean of nothing is nan,
    quietly."""
    if reduction == "none":
        return loss
    total = _blas_sum(loss, None, False)  # (None: not a large host float array)
    if total is None:
        total = loss.sum()
    if reduction == "sum":
        return total
    with ignore_divide_invalid():
        return total / loss.size if loss.size else total * math.nan


def _grad_scale(grad: Tensor, shape: tuple, reduction: str, n: int) -> Tensor:
    """The upstream gradient spread over the elementwise loss of ``shape``."""
    if reduction == "none":
        return grad
    if reduction == "mean" and n:
        grad = grad * (1.0 / n)
    return grad.expand(shape)


def _not_differentiable(t, fn: str, arg: str) -> None:
    """torch refuses a tensor that requires grad where its kernel has no derivative for it."""
    if isinstance(t, Tensor) and t._requires_grad and _grad_state.grad_enabled:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           f"'{arg}'. This input cannot have requires_grad True.")


def _size_warning(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input "
                      f"size ({input.size()}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", stacklevel=3)


def _not_implemented(kernel: str, dt) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{scalar_name(dt)}\'')


def _common(input: Tensor, target: Tensor, kernel: str | None) -> tuple[Tensor, Tensor]:
    """input and target cast to their promoted dtype, after torch's broadcast check; torch's
    kernel ``kernel`` refuses integer dtypes (None: the composite keeps them)."""
    try:
        host.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise broadcast_error(tuple(input.shape), tuple(target.shape)) from None
    rt = _dt.result_type(input, target)
    if not rt.is_floating_point:
        if kernel is not None:
            raise _not_implemented(kernel, rt)
        return input, target
    return (input if input.dtype == rt else input.to(rt),
            target if target.dtype == rt else target.to(rt))


class DivBackward1(Op):
    """tensor / scalar as torch's C++ kernels record it (one edge): d/dx = grad / scalar."""

    __slots__ = ("other",)

    def forward(self, a, other):
        self.other = other
        with ignore_divide_invalid():
            return xp_of(a).asarray(a / other, dtype=a.dtype)

    def backward(self, grad):
        return grad / self.other


# --------------------------------------------------------------------------- pointwise regression


class _PointwiseLoss(Op):
    """A loss of (input, target) elementwise, then reduced; subclasses give ``loss`` (arrays)
    and ``derivative`` (ember ops: d loss / d input; d / d target is its negative)."""

    __slots__ = ("param", "reduction", "shape")
    save_inputs = (0, 1)

    def forward(self, a, b, reduction, param=None):
        self.reduction, self.param = reduction, param
        loss = self.loss(a - b, param)
        self.shape = loss.shape
        return _reduce_array(loss, reduction)

    def backward(self, grad):
        a, b = self.saved()
        g = _grad_scale(grad, self.shape, self.reduction, math.prod(self.shape))
        da = g * self.derivative(a - b, self.param)
        return (da if self.needs_grad(0) else None, -da if self.needs_grad(1) else None)


class MseLossBackward0(_PointwiseLoss):
    """mse_loss: (input - target)**2; d/dinput = 2 (input - target).

    NOTE: the reduced losses sum the squares by BLAS dots (no squares array) and the
    derivative has an array rule: (256, 512) float32 forward 63 -> 38 µs, forward+backward
    158 -> 99 (torch 38 / 114)."""

    __slots__ = ()

    def forward(self, a, b, reduction, param=None):
        if reduction != "none":
            d = a - b
            total = _blas_sum_squares(d)
            if total is not None:
                self.reduction, self.param, self.shape = reduction, param, d.shape
                return total if reduction == "sum" else total / d.size
        return super().forward(a, b, reduction, param)

    def raw_backward(self, grad):
        # the rule of ``_PointwiseLoss.backward`` on arrays, in its order of operations
        a, b = self.saved()
        ad, bd = a._data, b._data
        if type(grad) is not ndarray or not (grad.dtype == ad.dtype == bd.dtype):
            return self.tensor_backward(grad)
        n = math.prod(self.shape)
        if self.reduction == "mean" and n:
            grad = grad * weak_scalar(1.0 / n, grad.dtype)
        da = ad - bd
        da *= 2
        da *= grad
        return (da if self.needs_grad(0) else None, -da if self.needs_grad(1) else None)

    def loss(self, d, _):
        return d * d

    def derivative(self, d, _):
        return d * 2


def _huber(d, delta):
    """huber_loss's elementwise loss of the differences ``d`` (a float array): with c = d
    clamped to [-delta, delta], c (d - c / 2). Below delta that is torch's 0.5 d * d bit for
    bit (d - d / 2 is exact), from it torch's delta (|d| - delta / 2); nan stays nan. A
    host array ``d`` is overwritten (the callers' own temporary). NOTE: in place, (256, 512)
    float32 huber_loss(reduction='none') 91 -> 84 µs (torch 25)."""
    if type(d) in HOST_ARRAYS and d.ndim:
        c = host.clip(d, -delta, delta)
        d -= host.multiply(c, 0.5)
        d *= c
        return d
    c = xp_of(d).clip(d, -delta, delta)
    return c * (d - 0.5 * c)


def _huber_sum(d, delta):
    """The sum of ``_huber(d, delta)`` as two BLAS dots, c.d - c.c / 2 (c.d >= c.c, so no
    cancellation), for a C-contiguous float32/float64 host array of ``_BLAS_MIN`` elements or
    more (None otherwise). NOTE: no loss array, no abs, no ``where`` (NumPy's is a branchy
    loop, ~420 µs on (256, 512) float32 random masks; clip is ~17): there, smooth_l1/huber's
    forward with the target made (x.detach() * 0.5) 264 -> 102 µs (torch 75); of which the
    loss itself 73 (torch 37: one fused pass where this makes three)."""
    if type(d) not in HOST_ARRAYS or d.size < _BLAS_MIN or d.dtype.char not in "fd" or \
            not d.flags.c_contiguous:
        return None
    c = host.clip(d, -delta, delta)
    q = d.size // _BLOCK * _BLOCK
    cf, df = c.reshape(-1), d.reshape(-1)
    ch, dh = cf[:q].reshape(-1, _BLOCK), df[:q].reshape(-1, _BLOCK)
    cd = host.add.reduce(host.vecdot(ch, dh)) + host.vecdot(cf[q:], df[q:])
    cc = host.add.reduce(host.vecdot(ch, ch)) + host.vecdot(cf[q:], cf[q:])
    return cd - cc * 0.5


# smooth_l1's least beta computed as huber(delta=beta) / beta (see SmoothL1LossBackward0)
_TINY_BETA = 1e-10


class _HuberLike(_PointwiseLoss):
    """smooth_l1 and huber: their derivative is d clamped to [-delta, delta], scaled. NOTE:
    an array rule of clip (~17 µs), not where and sign: with the forward's sums, (256, 512)
    float32 f+b 564 -> 180 µs (torch 147)."""

    __slots__ = ()
    scaled = False  # whether the loss and derivative are divided by the parameter

    def forward(self, a, b, reduction, param=None):
        if reduction != "none" and not (self.scaled and param < _TINY_BETA):
            d = a - b
            total = _huber_sum(d, param)
            if total is not None:
                self.reduction, self.param, self.shape = reduction, param, d.shape
                if self.scaled and param != 1.0:
                    total = total / param
                return total if reduction == "sum" else total / d.size
        return super().forward(a, b, reduction, param)

    def raw_backward(self, grad):
        # the Tensor rule's where(|d| < delta, d, sign(d) * delta) is clip(d, -delta, delta)
        # bit for bit: from |d| = delta on, the clip gives +-delta = sign(d) * delta; and
        # where(|d| < beta, d / beta, sign(d)) is clip(d / beta, -1, 1), as d / beta reaches
        # +-1 exactly when |d| reaches beta (division rounds monotonically)
        a, b = self.saved()
        ad, bd = a._data, b._data
        if type(grad) is not ndarray or type(ad) is not ndarray or \
                not (grad.dtype == ad.dtype == bd.dtype):
            return self.tensor_backward(grad)
        da = ad - bd
        if type(da) is not ndarray:  # (0-d: NumPy gives a scalar, which has no out=)
            return self.tensor_backward(grad)
        n = math.prod(self.shape)
        if self.reduction == "mean" and n:
            grad = grad * weak_scalar(1.0 / n, grad.dtype)
        if self.scaled:
            with ignore_divide_over():  # (a tiny beta: inf, clipped)
                da /= self.param
            host.clip(da, -1, 1, out=da)
        else:
            host.clip(da, -self.param, self.param, out=da)
        da *= grad
        return (da if self.needs_grad(0) else None, -da if self.needs_grad(1) else None)


class SmoothL1LossBackward0(_HuberLike):
    """smooth_l1_loss: 0.5 d**2 / beta where |d| < beta, else |d| - beta / 2 (computed as
    huber_loss(delta=beta) / beta: torch's values below beta, within an ulp above it)."""

    __slots__ = ()
    scaled = True

    def loss(self, d, beta):
        if beta < _TINY_BETA:  # (beta |d| would be subnormal in float32, or beta round to 0)
            ad = abs(d)
            with ignore_divide_invalid_over():
                return xp_of(d).where(ad < beta, 0.5 * d * d / beta, ad - 0.5 * beta)
        loss = _huber(d, beta)
        if beta == 1.0:  # (/ 1 changes no bits)
            return loss
        if type(loss) in HOST_ARRAYS and loss.ndim:
            loss /= beta
            return loss
        return loss / beta

    def derivative(self, d, beta):
        return where(_make(abs(d._data) < beta), d / beta, sign(d))


class HuberLossBackward0(_HuberLike):
    """huber_loss: 0.5 d**2 where |d| < delta, else delta (|d| - delta / 2)."""

    __slots__ = ()

    def loss(self, d, delta):
        return _huber(d, delta)

    def derivative(self, d, delta):
        return where(_make(abs(d._data) < delta), d, sign(d) * delta)


_KERNELS = {"MseLossBackward0": "mse_cpu", "SmoothL1LossBackward0": "smooth_l1_cpu",
            "HuberLossBackward0": "huber_cpu"}


def _pointwise(cls, input, target, reduction, param=None):
    input, target = _common(input, target, _KERNELS[cls.__name__])
    return cls.apply(input, target, params=(reduction, param))


def _weighted(errors: Tensor, weight: Tensor, input: Tensor, reduction: str,
              mean_by_weight: bool) -> Tensor:
    """torch's Python path for a ``weight`` of mse/l1/huber loss."""
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = errors * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_by_weight else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``F.mse_loss``: mean squared error (``MseLossBackward0``); warns if shapes differ."""
    if _amp.active:  # autocast: a float32 op
        input, target = _amp.fp32(input, target)
    _size_warning(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if weight is not None:
        x, y = _common(input, target, "mse_cpu")
        return _weighted((x - y) ** 2, weight, input, reduction, True)
    return _pointwise(MseLossBackward0, input, target, _check_reduction(reduction))


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``F.smooth_l1_loss`` (``SmoothL1LossBackward0``); ``beta=0`` is ``l1_loss``."""
    if _amp.active:  # autocast: a float32 op
        input, target = _amp.fp32(input, target)
    _size_warning(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    reduction = _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        x, y = _common(input, target, None)
        return _reduce((x - y).abs(), reduction)
    return _pointwise(SmoothL1LossBackward0, input, target, reduction, float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``F.huber_loss`` (``HuberLossBackward0``)."""
    if _amp.active:  # autocast: a float32 op
        input, target = _amp.fp32(input, target)
    _size_warning(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None:
        loss = _pointwise(HuberLossBackward0, input, target, "none", float(delta))
        return _weighted(loss, weight, input, reduction, False)
    return _pointwise(HuberLossBackward0, input, target, _check_reduction(reduction),
                      float(delta))


# --------------------------------------------------------------------------- log-softmax, nll


def _log_softmax(x: Tensor, dim: int) -> Tensor:
    if not x.dtype.is_floating_point:
        raise _not_implemented("log_softmax_lastdim_kernel_impl", x.dtype)
    return apply1(LogSoftmaxBackward0, x, dim)


def _target_index(xp, idx, axis: int) -> tuple:
    """The fancy index of each target's class along ``axis`` (``a[index]`` has ``idx``'s
    shape): take_along_axis's index, without its ~8 µs of Python per call."""
    index = []
    for d, n in enumerate(idx.shape):
        shape = [1] * idx.ndim
        shape[d] = n
        index.append(xp.arange(n).reshape(shape))
    index.insert(axis, idx)
    return tuple(index)


class NllLossBackward0(Op):
    """nll_loss: -weight[t] * input[.., t, ..] per target, 0 where ignored; 'mean' divides by
    the summed weights of the targets not ignored (nan if none). Linear in input, so its
    derivative is a constant one-hot array times the gradient."""

    __slots__ = ("cls_axis", "coef", "idx", "reduction", "shape")

    def forward(self, a, t, weight, ignore_index, reduction):
        self.reduction, self.shape = reduction, a.shape
        axis = self.cls_axis = 0 if a.ndim == 1 else 1
        xp = xp_of(a)
        if weight is None and t.size and type(t) is ndarray:
            # NOTE: unweighted, with every target in range and none ignored (told by the
            # targets' least and greatest), no masks: (256, 512) 16.6 -> 11.8 µs (torch 4.2).
            # Host arrays only: reading the targets' values would break ember.compile's capture
            lo = int(xp.minimum.reduce(t, axis=None))
            hi = int(xp.maximum.reduce(t, axis=None))
            if 0 <= lo and hi < a.shape[axis] and not lo <= ignore_index <= hi:
                self.idx = index = _target_index(xp, t.astype(host.int64, copy=False), axis)
                total = -a[index]
                if reduction == "none":
                    self.coef = xp.asarray(-1, dtype=a.dtype)
                    return total
                total = xp.add.reduce(total, axis=None)
                if reduction == "sum":
                    self.coef = xp.asarray(-1, dtype=a.dtype)
                    return total
                n = xp.asarray(t.size, dtype=a.dtype)
                self.coef = xp.asarray(-1, dtype=a.dtype) / n  # (as -w / sum(w) below)
                return total / n
        valid = t != ignore_index
        # NOTE: the usual case (no target ignored) skips the masking, and the class is picked
        # by fancy indexing (no moveaxis/take_along_axis): F.nll_loss on benchmarks/mlp.py's
        # (128, 10) went 29 -> 14 µs (torch 2 µs)
        every = bool(xp.logical_and.reduce(valid, axis=None))
        bad = (t < 0) | (t >= a.shape[axis])
        if not every:
            bad &= valid
        if xp.logical_or.reduce(bad, axis=None):
            raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
        idx = (t if every else xp.where(valid, t, 0)).astype(host.int64, copy=False)
        self.idx = index = _target_index(xp, idx, axis)
        picked = a[index]
        if weight is None:
            w = valid.astype(a.dtype)  # 1 per target, 0 where ignored
        else:
            w = weight.astype(a.dtype)[idx]
            if not every:
                w = xp.where(valid, w, 0).astype(a.dtype)
        loss = -w * picked
        if not every:
            loss = xp.where(valid, loss, 0).astype(a.dtype)
        if reduction == "none":
            self.coef = -w
            return loss
        # (the ufuncs' reductions, not ``.all()``/``.any()``/``.sum()``: the same loops
        # without their Python wrappers, ~1.5 µs a call on these small arrays)
        total = xp.add.reduce(loss, axis=None)
        if reduction == "sum":
            self.coef = -w
            return total
        wsum = xp.add.reduce(w, axis=None)
        with ignore_divide_invalid():
            coef = -w / wsum
            self.coef = coef if every else xp.where(valid, coef, 0).astype(a.dtype)
            return xp.asarray(total / wsum, dtype=a.dtype)

    def _one_hot(self):
        """The derivative of the loss (per element for 'none'): coef at each target."""
        dense = xp_of(self.coef).zeros(self.shape, dtype=self.coef.dtype)
        dense[self.idx] = self.coef
        return dense

    def backward(self, grad):
        if self.reduction == "none" and len(self.shape) > 1:
            grad = grad.unsqueeze(self.cls_axis)
        return grad * _make(self._one_hot())

    def raw_backward(self, grad):
        # the rule above on arrays, bit for bit (products commute)
        dense = self._one_hot()
        if self.reduction == "none" and len(self.shape) > 1:
            grad = xp_of(grad).expand_dims(grad, self.cls_axis)
        if grad.dtype != dense.dtype:
            return self.tensor_backward(grad)
        dense *= grad
        return dense


class NllLoss2DBackward0(NllLossBackward0):
    """nll_loss of an (N, C, d1, ...) input: torch's spatial kernel (same rule)."""

    __slots__ = ()


def _check_nll(input: Tensor, target: Tensor, weight) -> None:
    """torch's checks of nll_loss_nd: dims, batch size, target dtype and shape, weight size."""
    shape, tshape = input._data.shape, target._data.shape  # (not ``.shape``: no torch.Size)
    nd, td = len(shape), len(tshape)
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    target_batch = tshape[0] if td else 0
    if nd != 1 and shape[0] != target_batch:
        raise ValueError(f"Expected input batch_size ({shape[0]}) to match target "
                         f"batch_size ({target_batch}).")
    if nd == 1:
        if td > 1 or (td == 1 and tshape[0] != 1):
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{tshape[0]}")
    elif nd == 2:
        if td != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    else:
        want = (shape[0],) + shape[2:]
        if tshape != want:
            raise RuntimeError(f"Expected target size {list(want)}, got {list(tshape)}")
    if target.dtype not in (_dt.int64, _dt.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{scalar_name(target.dtype)}")
    n_classes = shape[0 if nd == 1 else 1]
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                           f"or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")


def _nll(input: Tensor, target: Tensor, weight, ignore_index: int, reduction: str) -> Tensor:
    _not_differentiable(weight, "nll_loss_forward", "weight")
    _check_nll(input, target, weight)
    t = target._data
    if input.dim() == 1 and t.ndim == 1:
        t = t.reshape(())
    if not input.dtype.is_floating_point:
        raise _not_implemented("nll_loss_out_frame", input.dtype)
    w = None if weight is None else weight._data
    if input.dim() <= 2:
        return apply1(NllLossBackward0, input, t, w, int(ignore_index), reduction)
    out = apply1(NllLoss2DBackward0, input, t, w, int(ignore_index), reduction)
    if reduction == "none" and input.dim() != 4:  # torch computes on a 4-d view, viewed back
        out = out.view(tuple(out.shape))
    return out


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """``F.nll_loss``: input of log-probabilities (C), (N, C) or (N, C, d1, ...); class-index
    targets; ``NllLossBackward0``."""
    if _amp.active:  # autocast: a float32 op
        input, = _amp.fp32(input)
    reduction = _reduction(size_average, reduce, reduction)
    return _nll(input, target, weight, ignore_index, reduction)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """``F.cross_entropy``: log_softmax over dim 1 (dim 0 for 1-d input), then nll_loss for
    class indices, or the soft-target sum for class probabilities (target shaped as input)."""
    if _amp.active:  # autocast: a float32 op
        input, target = _amp.fp32(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if label_smoothing > 1.0:  # torch lets a negative value through: no smoothing
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    if input.dim() and input.shape == target.shape:
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction,
                                    label_smoothing, class_dim)
    lp = _log_softmax(input, class_dim) if input.dim() else input
    nll = _nll(lp, target, weight, ignore_index, reduction)
    if label_smoothing <= 0.0:
        return nll
    n_classes = input.shape[class_dim]
    ignore = target._data == ignore_index
    if weight is not None:
        wshape = [1] * input.dim()
        wshape[class_dim] = n_classes
        smooth = -(lp * weight.reshape(wshape)).sum(class_dim)
    else:
        smooth = -lp.sum(class_dim)
    smooth = smooth.masked_fill(_make(ignore), 0.0)
    if reduction == "mean":
        # (``symbolic``: float(); under ember.compile a traced number, not a graph break)
        if weight is not None:
            denom = symbolic(weight._data[target._data[~ignore]].sum())
        else:
            denom = symbolic((~ignore).sum())
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1 - label_smoothing) + ret * (label_smoothing / n_classes)


def _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing,
                         class_dim) -> Tensor:
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, "
                           f"got {scalar_name(target.dtype)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    n_classes = input.shape[class_dim]
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                           f"{n_classes} classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = _log_softmax(input, class_dim) * target
    if weight is not None:
        wshape = [1] * input.dim()
        wshape[class_dim] = n_classes
        prod = prod * weight.reshape(wshape)
    if reduction == "none":
        return -prod.sum(class_dim)
    total = -prod.sum()
    if reduction == "sum":
        return total
    if not input.numel():  # torch: the sum, filled with nan
        return -(prod.sum() * math.nan)
    return apply1(DivBackward1, total, input.numel() // n_classes)


# --------------------------------------------------------------------------- binary cross-entropy


class BinaryCrossEntropyBackward0(Op):
    """binary_cross_entropy: -w (t log x + (1 - t) log(1 - x)), each log clamped to >= -100.

    d/dx = w (x - t) / max(x (1 - x), 1e-12); d/dt = w (log(1 - x) - log(x)).
    """

    __slots__ = ("reduction", "shape", "weight")
    save_inputs = (0, 1)

    def forward(self, x, t, weight, reduction):
        self.reduction, self.weight = reduction, weight
        xp = xp_of(x)
        with ignore_divide_invalid():
            lx = xp.maximum(xp.log(x), -100)
            l1x = xp.maximum(xp.log1p(-x), -100)
        loss = -(t * lx + (1 - t) * l1x)
        if weight is not None:
            loss = loss * weight
        loss = loss.astype(x.dtype, copy=False)
        self.shape = loss.shape
        return _reduce_array(loss, reduction)

    def backward(self, grad):
        x, t = self.saved()
        g = _grad_scale(grad, self.shape, self.reduction, math.prod(self.shape))
        if self.weight is not None:
            g = g * _make(self.weight)
        gx = gt = None
        if self.needs_grad(0):
            gx = g * (x - t) / clamp_min((1 - x) * x, 1e-12)
        if self.needs_grad(1):
            gt = g * (log(1 - x) - log(x))
        return gx, gt


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``F.binary_cross_entropy`` on probabilities (``BinaryCrossEntropyBackward0``)."""
    if _amp.active:  # autocast: a float32 op
        input, target, weight = _amp.fp32(input, target, weight)
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input "
                         f"size ({input.size()}) is deprecated. Please ensure they have the "
                         "same size.")
    _not_differentiable(weight, "binary_cross_entropy", "weight")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {scalar_name(target.dtype)} but expected "
                           f"{scalar_name(input.dtype)}")
    x, t = input._data, target._data
    if not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    if not ((t >= 0) & (t <= 1)).all():
        raise RuntimeError("all elements of target should be between 0 and 1")
    w = None
    if weight is not None:
        w = xp_of(t).broadcast_to(weight._data, host.broadcast_shapes(t.shape, weight.shape))
        w = w.astype(x.dtype)
    return BinaryCrossEntropyBackward0.apply(input, target, params=(w, reduction))


def _log_sigmoid(x: Tensor) -> Tensor:
    """Stable log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), in ember ops; min(x, 0) is
    written (x - |x|) / 2 so the derivative at 0 is the true 1/2."""
    ax = _abs(x)
    return (x - ax) * 0.5 - log(1 + exp(-ax))


def _softplus_parts(x):
    """|x| and log1p(exp(-|x|)) of a float array: softplus(x) = max(x, 0) + the latter, never
    overflowing (torch's log_sigmoid is min(x, 0) minus it). NOTE: not logaddexp(0, x), a
    scalar loop: (256, 512) float32 2,670 µs, against ~200 for abs, exp and log1p."""
    if type(x) in HOST_ARRAYS and x.ndim:  # (0-d: NumPy's ufuncs give scalars, with no out=)
        ax = host.abs(x)
        e = host.negative(ax)
        with ignore_under():
            host.exp(e, out=e)
        return ax, host.log1p(e, out=e)
    xp = xp_of(x)
    ax = xp.abs(x)
    return ax, xp.log1p(xp.exp(-ax))


def _sigmoid_array(x):
    """ember's sigmoid of an array: the array rules below must match the Tensor rules' bits."""
    return sigmoid(_make(x))._data


class BinaryCrossEntropyWithLogitsBackward0(Op):
    """bce on logits, stable: w ((1 - t) x + (1 + (p - 1) t) softplus(-x)), p the pos_weight;
    without p, as max(x, 0) - t x + log1p(exp(-|x|)), exact for large |x| where torch's
    (1 - t) x - log_sigmoid(x) cancels (t = 0, x = -20: 2e-9, torch 0).

    d/dx = w ((1 + (p - 1) t) sigmoid(x) - p t); d/dt = w ((1 - p) log_sigmoid(x) - x).
    """

    __slots__ = ("pos_weight", "reduction", "shape", "weight")
    save_inputs = (0, 1)

    def forward(self, x, t, weight, pos_weight, reduction):
        self.reduction, self.weight, self.pos_weight = reduction, weight, pos_weight
        ax, lp = _softplus_parts(x)
        if pos_weight is None:
            loss = (x + ax) * 0.5 - t * x + lp  # (x + |x|) / 2 is max(x, 0), exactly
        else:
            loss = (1 - t) * x + (1 + (pos_weight - 1) * t) * (lp + (ax - x) * 0.5)
        if weight is not None:
            loss = loss * weight
        loss = loss.astype(host.result_type(x.dtype, t.dtype), copy=False)
        self.shape = loss.shape
        return _reduce_array(loss, reduction)

    def backward(self, grad):
        x, t = self.saved()
        g = _grad_scale(grad, self.shape, self.reduction, math.prod(self.shape))
        if self.weight is not None:
            g = g * _make(self.weight)
        pw = None if self.pos_weight is None else _make(self.pos_weight)
        gx = gt = None
        if self.needs_grad(0):
            gx = g * (sigmoid(x) - t if pw is None else (1 + (pw - 1) * t) * sigmoid(x) - pw * t)
        if self.needs_grad(1):
            gt = g * (-x if pw is None else (1 - pw) * _log_sigmoid(x) - x)
        return gx, gt

    def raw_backward(self, grad):
        # ``backward``'s d/dx on arrays, in its order of operations; the target's gradient and
        # broadcasts beyond the input go the Tensor way. NOTE: with the forward above, (256,
        # 512) float32 f+b 3,030 -> 445 µs (torch 436); forward 2,810 -> 280 (torch 295)
        x, t = self.saved()
        xd, td = x._data, t._data
        if type(grad) is not ndarray or type(xd) is not ndarray or self.needs_grad(1) or \
                xd.shape != self.shape or not (grad.dtype == xd.dtype == td.dtype):
            return self.tensor_backward(grad)
        n = math.prod(self.shape)
        if self.reduction == "mean" and n:
            grad = grad * weak_scalar(1.0 / n, grad.dtype)
        if self.weight is not None:
            grad = grad * self.weight
        gx = _sigmoid_array(xd)
        pw = self.pos_weight
        if pw is None:
            gx -= td
        else:
            gx *= 1 + (pw - 1) * td
            gx -= pw * td
        gx *= grad
        return gx, None


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``F.binary_cross_entropy_with_logits``: sigmoid and bce fused, stable for any logit."""
    if _amp.active:  # autocast: a float32 op
        input, target, weight, pos_weight = _amp.fp32(input, target, weight, pos_weight)
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    _not_differentiable(weight, "binary_cross_entropy_with_logits", "weight")
    _not_differentiable(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
    input, target = _common(input, target, "log_sigmoid_cpu")
    dt = input._data.dtype
    w = None if weight is None else weight._data.astype(dt)
    pw = None if pos_weight is None else pos_weight._data.astype(dt)
    for extra in (w, pw):
        if extra is not None:
            try:
                host.broadcast_shapes(extra.shape, input.shape)
            except ValueError:
                raise broadcast_error(tuple(input.shape), extra.shape) from None
    return BinaryCrossEntropyWithLogitsBackward0.apply(input, target,
                                                       params=(w, pw, reduction))


# --------------------------------------------------------------------------- margin losses


def _size_list(t: Tensor) -> str:
    return str(list(t.shape))


class SoftMarginLossBackward0(Op):
    """soft_margin_loss: log(1 + exp(-y x)), as softplus(-y x) = max(-y x, 0) +
    log1p(exp(-|y x|)), which does not overflow (torch's log1p(exp(-y x)) gives inf from
    -y x ~ 89 in float32); d/dx = -y sigmoid(-y x)."""

    __slots__ = ("reduction", "shape", "y")
    save_inputs = (0,)

    def forward(self, x, y, reduction):
        self.y, self.reduction = y, reduction
        z = -y * x
        if z.dtype != x.dtype:  # (an integer or wider target: the loss in the input's dtype)
            z = z.astype(x.dtype)
        az, lp = _softplus_parts(z)
        loss = (z + az) * 0.5 + lp
        self.shape = loss.shape
        return _reduce_array(loss, reduction)

    def backward(self, grad):
        (x,) = self.saved()
        g = _grad_scale(grad, self.shape, self.reduction, math.prod(self.shape))
        y = _make(self.y.astype(x._data.dtype))
        return g * (-y * sigmoid(-y * x))

    def raw_backward(self, grad):
        # ``backward`` on arrays, in its order of operations. NOTE: with the forward above,
        # (256, 512) float32 f+b 3,030 -> 470 µs (torch 550)
        (x,) = self.saved()
        xd = x._data
        if type(grad) is not ndarray or type(xd) is not ndarray or grad.dtype != xd.dtype:
            return self.tensor_backward(grad)
        n = math.prod(self.shape)
        if self.reduction == "mean" and n:
            grad = grad * weak_scalar(1.0 / n, grad.dtype)
        ny = -self.y.astype(xd.dtype)
        gx = _sigmoid_array(ny * xd)
        gx *= ny
        gx *= grad
        return gx


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``F.soft_margin_loss`` (``SoftMarginLossBackward0``); target not differentiable."""
    if _amp.active:  # autocast: a float32 op
        input, target = _amp.fp32(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    _not_differentiable(target, "soft_margin_loss", "target")
    try:
        host.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise broadcast_error(tuple(input.shape), tuple(target.shape)) from None
    return apply1(SoftMarginLossBackward0, input, target._data, reduction)


class MultiMarginLossBackward0(Op):
    """multi_margin_loss: sum over j != y of w[y] max(0, margin - x[y] + x[j])**p / C."""

    __slots__ = ("margin", "nframe", "onehot", "p", "reduction", "wy")
    save_inputs = (0,)

    def forward(self, a, y, p, margin, weight, reduction):
        x = a.reshape(-1, a.shape[-1] if a.ndim else 1)
        nframe, dim = x.shape
        xp = xp_of(a)
        yy = y.reshape(-1).astype(host.int64)
        if ((yy < 0) | (yy >= dim)).any():
            raise RuntimeError("target out of range")
        onehot = xp.zeros(x.shape, dtype=bool)
        onehot[xp.arange(nframe), yy] = True
        wy = (xp.ones(nframe, a.dtype) if weight is None else weight.reshape(-1)[yy])
        wy = wy.astype(a.dtype)[:, None]
        xy = x[xp.arange(nframe), yy][:, None]
        z = margin - xy + x
        h = xp.where((z > 0) & ~onehot, z if p == 1 else z * z, 0) * wy
        loss = (h.sum(1) / dim).astype(a.dtype)
        self.p, self.margin, self.wy, self.onehot = p, margin, wy, onehot
        self.reduction, self.nframe = reduction, nframe
        if reduction == "none":
            return loss.reshape(a.shape[:-1]) if a.ndim == 2 else loss.reshape(y.shape)
        return _reduce_array(loss, reduction)

    def backward(self, grad):
        (a,) = self.saved()
        x = a.reshape(self.nframe, -1)
        dim = x.shape[1]
        onehot = _make(self.onehot.astype(x._data.dtype))
        xy = (x * onehot).sum(1, keepdim=True)
        z = x - xy + self.margin
        active = _make(((z._data > 0) & ~self.onehot).astype(x._data.dtype) * self.wy / dim)
        h = active if self.p == 1 else z * active * 2
        local = h - onehot * h.sum(1, keepdim=True)
        if self.reduction == "none":
            g = grad.reshape(self.nframe, 1)
        elif self.reduction == "mean":
            g = grad / self.nframe
        else:
            g = grad
        return (g * local).reshape(a.shape)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """``F.multi_margin_loss`` (``MultiMarginLossBackward0``), p = 1 or 2."""
    if _amp.active:  # autocast: a float32 op
        input, weight = _amp.fp32(input, weight)
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _not_differentiable(weight, "multi_margin_loss", "weight")
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0)
            or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {_size_list(input)}")
    nframe = input.shape[0] if nd == 2 else 1
    dim = 1 if nd == 0 else input.shape[-1]
    if target.dim() > 1 or target.numel() != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal "
                           f"to the number of input samples (batch size). Expected target size "
                           f"[{nframe}], but got {_size_list(target)}. Input has shape "
                           f"{_size_list(input)}.")
    if weight is not None and weight.numel() != dim:
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got "
                           f"{_size_list(weight)}")
    w = None if weight is None else weight._data
    return apply1(MultiMarginLossBackward0, input, target._data, p, float(margin), w, reduction)


class MultilabelMarginLossBackward0(Op):
    """multilabel_margin_loss: for each target class j (the targets before the first -1) and
    non-target class d, max(0, 1 - (x[j] - x[d])), summed and divided by C. Piecewise linear:
    the derivative is a constant array times the gradient."""

    __slots__ = ("local", "nframe", "reduction")

    def forward(self, a, t, reduction):
        x = a.reshape(-1, a.shape[-1] if a.ndim else 1)
        xp = xp_of(a)
        tt = t.reshape(x.shape).astype(host.int64)
        nframe, dim = x.shape
        valid = xp.cumprod(tt != -1, axis=1).astype(bool)
        if ((tt < -1) | (tt >= dim)).any():
            raise RuntimeError("argument #2 'target' is out of range")
        rows, cols = xp.nonzero(valid)
        count = xp.zeros(x.shape, dtype=a.dtype)
        xp.add.at(count, (rows, tt[rows, cols]), 1)
        is_target = count > 0
        z = 1 - x[:, :, None] + x[:, None, :]  # z[n, j, d] for target j, other d
        pair = count[:, :, None] * (~is_target)[:, None, :]
        hit = xp.where(z > 0, pair, 0)
        loss = ((hit * z).sum(axis=(1, 2)) / dim).astype(a.dtype)
        self.local = ((hit.sum(1) - hit.sum(2)) / dim).astype(a.dtype)
        self.reduction, self.nframe = reduction, nframe
        if reduction == "none":
            return loss.reshape(a.shape[:-1]) if a.ndim == 2 else loss.reshape(())
        return _reduce_array(loss, reduction)

    def backward(self, grad):
        if self.reduction == "none":
            g = grad.reshape(self.nframe, 1)
        elif self.reduction == "mean":
            g = grad / self.nframe
        else:
            g = grad
        shape = self._in_meta[0][0]
        return (g * _make(self.local)).reshape(shape)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """``F.multilabel_margin_loss`` (``MultilabelMarginLossBackward0``): target holds class
    indices, ended by the first -1."""
    if _amp.active:  # autocast: a float32 op
        input, = _amp.fp32(input)
    reduction = _reduction(size_average, reduce, reduction)
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0)
            or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {_size_list(input)}")
    if tuple(target.shape) != tuple(input.shape) and not (nd == 0 and target.numel() == 1):
        raise RuntimeError(f"inconsistent target size: {_size_list(target)} for input of size: "
                           f"{_size_list(input)}")
    return apply1(MultilabelMarginLossBackward0, input, target._data, reduction)
