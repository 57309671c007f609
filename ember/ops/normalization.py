"""Normalisation primitives (``F.*``): batch_norm, layer_norm, group_norm.

batch/layer/group norm are one primitive each, named as torch names them
(``NativeBatchNormBackward0``, ...), with edges for input, weight and bias. Their derivatives
recompute the statistics from the saved input with ember ops, so double backward works.
instance_norm and local_response_norm, composites, are in ``nn.functional.normalization``.
"""

from __future__ import annotations

from .._backend import FLOAT_KINDS, xp_of
from .._tensor import Size, Tensor, _make
from ._op import Op
from ._registry import register
from .arithmetic import scalar_name

__all__ = ["batch_norm", "group_norm", "layer_norm"]


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _float_only(x: Tensor, kernel: str) -> None:
    if x._data.dtype.kind not in FLOAT_KINDS:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_name(x.dtype)}\'')


def _normalized_grad(g: Tensor, xhat: Tensor, invstd: Tensor, dims) -> Tensor:
    """d/dx of (x - mean) * invstd over ``dims`` given the upstream ``g``:
    invstd * (g - mean(g) - xhat * mean(g * xhat))."""
    return invstd * (g - g.mean(dims, keepdim=True)
                     - xhat * (g * xhat).mean(dims, keepdim=True))


def _stats(x: Tensor, dims, eps: float):
    """(xhat, invstd) of ``x`` over ``dims`` (biased variance), in ember ops."""
    xc = x - x.mean(dims, keepdim=True)
    invstd = ((xc * xc).mean(dims, keepdim=True) + eps) ** -0.5
    return xc * invstd, invstd


# --------------------------------------------------------------------------- batch norm


class NativeBatchNormBackward0(Op):
    """batch_norm over every dim but 1; training uses (and records into the running stats)
    the batch's statistics, evaluation the running ones."""

    __slots__ = ("eps", "stats", "training")
    save_inputs = (0, 1)

    def forward(self, x, w, b, running_mean, running_var, training, momentum, eps):
        self.training, self.eps = training, eps
        nd = x.ndim
        dims = (0,) + tuple(range(2, nd))
        cshape = (1, x.shape[1]) + (1,) * (nd - 2)
        if training:
            mean = x.mean(axis=dims, keepdims=True)
            xc = x - mean
            var = (xc * xc).mean(axis=dims, keepdims=True)
            n = x.size // x.shape[1]
            if running_mean is not None:
                rm = running_mean._data
                # (written without a version bump: torch's kernel doesn't bump it either)
                rm[...] = (1 - momentum) * rm + momentum * mean.reshape(rm.shape)
            if running_var is not None:
                rv = running_var._data
                unbiased = var.reshape(rv.shape) * (n / max(n - 1, 1))
                rv[...] = (1 - momentum) * rv + momentum * unbiased
            self.stats = None
        else:
            mean = running_mean._data.reshape(cshape)
            var = running_var._data.reshape(cshape)
            xc = x - mean
            self.stats = (mean.copy(), var.copy())
        out = xc * (1.0 / xp_of(x).sqrt(var + eps))
        if w is not None:
            out = out * w.reshape(cshape)
        if b is not None:
            out = out + b.reshape(cshape)
        return out.astype(x.dtype, copy=False)

    def backward(self, grad):
        x, w = self.saved()
        nd = x.dim()
        dims = (0,) + tuple(range(2, nd))
        cshape = (1, x.shape[1]) + (1,) * (nd - 2)
        if self.training:
            xhat, invstd = _stats(x, dims, self.eps)
        else:
            mean, var = self.stats
            invstd = _make((1.0 / xp_of(var).sqrt(var + self.eps)).astype(x._data.dtype))
            xhat = (x - _make(mean.astype(x._data.dtype))) * invstd
        gx = gw = gb = None
        if self.needs_grad(0):
            g = grad if w is None else grad * w.view(cshape)
            gx = _normalized_grad(g, xhat, invstd, dims) if self.training else g * invstd
        if self.needs_grad(1):
            gw = (grad * xhat).sum(dims)
        if self.needs_grad(2):
            gb = grad.sum(dims)
        return gx, gw, gb


def _verify_batch_size(size) -> None:
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {size}")


def _check_channels(name: str, t: Tensor | None, channels: int) -> None:
    if t is not None and t._data.size != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {t._data.size}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """``F.batch_norm`` over (N, C, ...): normalise each channel. In training the batch's
    statistics are used and the running ones updated in place (unbiased variance, with
    ``momentum``); otherwise the running statistics are used."""
    if training:
        _verify_batch_size(input.shape)
    _float_only(input, "batch_norm")
    channels = input._data.shape[1] if input._data.ndim > 1 else 0
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        _check_channels(name, t, channels)
    if not training and (running_mean is None or running_var is None):
        which = "running_mean" if running_mean is None else "running_var"
        raise RuntimeError(f"{which} must be defined in evaluation mode")
    return NativeBatchNormBackward0.apply(
        input, weight, bias, params=(running_mean, running_var, training, momentum, eps))


# --------------------------------------------------------------------------- layer norm


class NativeLayerNormBackward0(Op):
    """layer_norm over the trailing dims; weight and bias have the normalised shape."""

    __slots__ = ("dims", "eps")
    save_inputs = (0, 1)

    def forward(self, x, w, b, k, eps):
        self.dims, self.eps = tuple(range(x.ndim - k, x.ndim)), eps
        mean = x.mean(axis=self.dims, keepdims=True)
        xc = x - mean
        var = (xc * xc).mean(axis=self.dims, keepdims=True)
        out = xc * (1.0 / xp_of(x).sqrt(var + eps))
        if w is not None:
            out = out * w
        if b is not None:
            out = out + b
        return out.astype(x.dtype, copy=False)

    def backward(self, grad):
        x, w = self.saved()
        xhat, invstd = _stats(x, self.dims, self.eps)
        gx = gw = gb = None
        if self.needs_grad(0):
            gx = _normalized_grad(grad if w is None else grad * w, xhat, invstd, self.dims)
        if self.needs_grad(1):
            gw = grad * xhat  # the engine sums the leading dims back to weight's shape
        if self.needs_grad(2):
            gb = grad
        return gx, gw, gb


@register(method=False)
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """``F.layer_norm``: normalise over the trailing ``normalized_shape`` dims."""
    if isinstance(normalized_shape, int) or not isinstance(normalized_shape,
                                                             (tuple, list, Size)):
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple "
                        f"of ints, not {type(normalized_shape).__name__}")
    ns = tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._data.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {_shape_str(t._data.shape)} and "
                               f"normalized_shape = {_shape_str(ns)}")
    shape = input._data.shape
    if len(shape) < k or tuple(shape[len(shape) - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={_shape_str(ns)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in ns)}], but got input of size"
                           f"{_shape_str(shape)}")
    _float_only(input, "LayerNormKernelImpl")
    return NativeLayerNormBackward0.apply(input, weight, bias, params=(k, eps))


# --------------------------------------------------------------------------- group norm


class NativeGroupNormBackward0(Op):
    """group_norm: statistics per (sample, group of channels); weight and bias per channel."""

    __slots__ = ("eps", "groups")
    save_inputs = (0, 1)

    def forward(self, x, w, b, groups, eps):
        self.groups, self.eps = groups, eps
        n, c = x.shape[:2]
        cshape = (1, c) + (1,) * (x.ndim - 2)
        xg = x.reshape(n, groups, -1)
        mean = xg.mean(axis=2, keepdims=True) if xg.size else xg.sum(2, keepdims=True)
        xc = xg - mean
        var = (xc * xc).mean(axis=2, keepdims=True) if xg.size else mean
        out = (xc * (1.0 / xp_of(x).sqrt(var + eps))).reshape(x.shape)
        if w is not None:
            out = out * w.reshape(cshape)
        if b is not None:
            out = out + b.reshape(cshape)
        return out.astype(x.dtype, copy=False)

    def backward(self, grad):
        x, w = self.saved()
        shape = x.shape
        n, c = shape[0], shape[1]
        cshape = (1, c) + (1,) * (len(shape) - 2)
        dims = (0,) + tuple(range(2, len(shape)))
        xhat_g, invstd = _stats(x.reshape(n, self.groups, -1), 2, self.eps)
        xhat = xhat_g.reshape(shape)
        gx = gw = gb = None
        if self.needs_grad(0):
            g = grad if w is None else grad * w.view(cshape)
            gx = _normalized_grad(g.reshape(n, self.groups, -1), xhat_g, invstd, 2)
            gx = gx.reshape(shape)
        if self.needs_grad(1):
            gw = (grad * xhat).sum(dims)
        if self.needs_grad(2):
            gb = grad.sum(dims)
        return gx, gw, gb


@register(method=False)
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """``F.group_norm``: normalise over each group of ``C // num_groups`` channels."""
    shape = input._data.shape
    if len(shape) < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{len(shape)}")
    _verify_batch_size([shape[0] * shape[1] // num_groups, num_groups] + list(shape[2:]))
    c = shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {_shape_str(shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.size != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number "
                               f"of channels in input, but got {name} of shape "
                               f"{_shape_str(t._data.shape)} and input of shape "
                               f"{_shape_str(shape)}")
    _float_only(input, "GroupNormKernelImpl")
    return NativeGroupNormBackward0.apply(input, weight, bias, params=(num_groups, eps))
