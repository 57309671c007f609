"""Normalisation primitives (``F.*``): batch_norm, layer_norm, group_norm.

batch/layer/group norm are one primitive each, named as torch names them
(``NativeBatchNormBackward0``, ...), with edges for input, weight and bias. Their derivatives
recompute the statistics from the saved input with ember ops, so double backward works.
instance_norm and local_response_norm, composites, are in ``nn.functional.normalization``.
"""

from __future__ import annotations

from .._backend import FLOAT_KINDS, HOST_ARRAYS, host, xp_of
from .._backend.errstate import ignore_divide_invalid
from .._backend.sums import sum_arrays as _sum_arrays
from .._tensor import Size, Tensor, _make
from ..autograd.grad_mode import enable_grad
from ..autograd.grad_mode import state as _grad_state
from ._op import Op, record_outputs
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


# --------------------------------------------------------------------------- row kernels
# layer_norm and group_norm normalise the rows of a 2-D view of the input (R rows of n), in
# array kernels for forward and first derivative, as torch's CPU kernels do (batch_norm's
# derivative uses the same per-row sums). The composites of ember ops they replace ran a
# dozen full-size ops each way: see each op's NOTE for the figures.


def _row_dot(a, b):
    """The dot product of each row of ``a`` with the same row of ``b`` (2-D arrays)."""
    if type(a) in HOST_ARRAYS and type(b) in HOST_ARRAYS and a.dtype.char in "fd" and \
            a.dtype == b.dtype:
        return host.vecdot(a, b)  # (BLAS dots: 23 µs on (1024, 256) float32, against 40)
    return _sum_arrays(a * b, (1,), False)


def _outer(u, v):
    """``u[:, None] * v``, the same products. NOTE: for many rows, as a BLAS product of (R, 2)
    by (2, K) matrices, each (u_i, 0) . (v_j, 0) (exact: one rounding, as the product's own):
    (1024, 256) float32 70 -> 21 µs, (512, 784) 109 -> 35; broadcasting kept for few rows
    ((16, 16384) 35 against 48). NumPy's matmul does not call BLAS for an inner size of 1."""
    r, k = u.shape[0], v.shape[0]
    if r >= 64 and r * k >= 4096 and type(u) in HOST_ARRAYS and type(v) in HOST_ARRAYS \
            and u.dtype.char in "fd" and u.dtype == v.dtype:
        a = host.zeros((r, 2), u.dtype)
        a[:, 0] = u
        b = host.zeros((2, k), u.dtype)
        b[0] = v
        return host.matmul(a, b)
    return u[:, None] * v


def _matvec(a, v):
    """``a @ v`` for a 2-D array and a vector (``(a * v).sum(1)``)."""
    if type(a) in HOST_ARRAYS and a.dtype.char in "fd" and a.dtype == v.dtype and \
            a.flags.c_contiguous:
        return host.matmul(a, v)
    return _sum_arrays(a * v, (1,), False)


def _vecmat(v, a):
    """``v @ a`` for a vector and a 2-D array (``(v[:, None] * a).sum(0)``)."""
    if type(a) in HOST_ARRAYS and a.dtype.char in "fd" and a.dtype == v.dtype and \
            a.flags.c_contiguous:
        return host.matmul(v, a)
    return _sum_arrays(v[:, None] * a, (0,), False)


def _as_float(*arrays):
    """The arrays in float32 if the first is a half-precision one (torch accumulates these
    in float32), else as they are; and the dtype to cast results back to (or None)."""
    low = arrays[0].dtype
    if low.char in "fd":
        return arrays, None
    f32 = host.float32
    return tuple(None if a is None else a.astype(f32) for a in arrays), low


def _row_moments(x2, eps: float):
    """(xc, mean, rstd) of the rows of the 2-D array ``x2``: the centred rows, their mean and
    1 / sqrt(biased variance + eps), two passes (no cancellation, as torch's Welford)."""
    n = x2.shape[1]
    with ignore_divide_invalid():  # (empty rows: nan, as torch)
        mean = _sum_arrays(x2, (1,), False) / n
        xc = x2 - mean[:, None]
        rstd = 1.0 / xp_of(x2).sqrt(_row_dot(xc, xc) / n + eps)
    return xc, mean.astype(x2.dtype, copy=False), rstd.astype(x2.dtype, copy=False)


def _dx_coefs(n: int, mean, rstd, gsum, gxsum):
    """Per row (b, c) of d/dx = rstd g + b x + c, the derivative of the row normalisation
    (x - mean) * rstd for the upstream g (already times the weight): rstd (g - mean(g) - xhat
    mean(g xhat)) written in x, as torch's kernel does; ``gsum``, ``gxsum``: sum(g), sum(g x)
    over each row of ``n``."""
    with ignore_divide_invalid():
        mg = gsum / n
        mgx = rstd * (gxsum / n - mean * mg)  # mean(g xhat)
        b = -rstd * rstd * mgx
        return b, -b * mean - rstd * mg


class _NormGrad(Op):
    """The first derivative of a normalisation, as an op of (grad, input, weight): its
    forward is the array kernel ``grad_arrays`` of the normalisation's node ``fwd`` (which the
    node's ``raw_backward`` runs too, so both paths agree bit for bit), one output per gradient
    ``wanted``; its own derivative is that of the same rule written in ember ops
    (``fwd.grad_tensors``), taken by a nested ``autograd.grad``: double backward as torch's
    ``*BackwardBackward0`` nodes give it."""

    __slots__ = ("_num_outputs", "fwd", "wanted")
    save_inputs = (0, 1, 2)

    def forward(self, grad, x, w, fwd, wanted):
        self.fwd, self.wanted = fwd, wanted
        return tuple(g for g in fwd.grad_arrays(grad, x, w, wanted) if g is not None)

    def backward(self, *ggs):
        from ..autograd.api import grad as _autograd_grad  # (ops load before autograd.api)

        tensors = self.saved()
        wrt = [t for i, t in enumerate(tensors) if t is not None and self.needs_grad(i)]
        if not wrt:
            return (None,) * 3
        create = _grad_state.grad_enabled
        with enable_grad():
            outs = self.fwd.grad_tensors(*tensors, self.wanted)
        outs = [o for o in outs if o is not None]
        pairs = [(o, g) for o, g in zip(outs, ggs) if g is not None and o.requires_grad]
        if not pairs:
            return (None,) * 3
        got = iter(_autograd_grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                                  create_graph=create, allow_unused=True))
        return tuple(next(got) if t is not None and self.needs_grad(i) else None
                     for i, t in enumerate(tensors))


class NativeLayerNormBackwardBackward0(_NormGrad):
    __slots__ = ()


class NativeGroupNormBackwardBackward0(_NormGrad):
    __slots__ = ()


class NativeBatchNormBackwardBackward0(_NormGrad):
    __slots__ = ()


def _norm_backward(node: Op, cls, grad: Tensor) -> tuple:
    """A normalisation node's ``backward``: its gradients through the op ``cls``."""
    x, w = node.saved()
    wanted = (node.needs_grad(0), node.needs_grad(1), node.needs_grad(2))
    op = cls()
    outs = iter(record_outputs(op, (grad, x, w), op.forward(
        grad._data, x._data, None if w is None else w._data, node, wanted)))
    return tuple(next(outs) if k else None for k in wanted)


def _norm_raw_backward(node: Op, grad) -> tuple:
    """A normalisation node's ``raw_backward``: the same kernel on arrays."""
    x, w = node.saved()
    if grad.dtype != x._data.dtype:
        return node.tensor_backward(grad)
    wanted = (node.needs_grad(0), node.needs_grad(1), node.needs_grad(2))
    return node.grad_arrays(grad, x._data, None if w is None else w._data, wanted)


# --------------------------------------------------------------------------- batch norm


class NativeBatchNormBackward0(Op):
    """batch_norm over every dim but 1; training uses (and records into the running stats)
    the batch's statistics, evaluation the running ones.

    NOTE: the derivative is an array kernel (per channel sums of g and g x, as torch's):
    (32, 16, 28, 28) float32 training, forward+backward 2170 -> 1135 µs (torch 1710-1810)."""

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
        else:
            mean = running_mean._data.reshape(cshape)
            var = running_var._data.reshape(cshape)
            xc = x - mean
        invstd = 1.0 / xp_of(x).sqrt(var + eps)
        # (per channel, in the input's dtype: what the derivative uses)
        self.stats = (mean.reshape(-1).astype(x.dtype), invstd.reshape(-1).astype(x.dtype))
        out = xc * invstd
        if w is not None:
            out = out * w.reshape(cshape)
        if b is not None:
            out = out + b.reshape(cshape)
        return out.astype(x.dtype, copy=False)

    def grad_arrays(self, grad, x, w, wanted) -> tuple:
        """(gx, gw, gb) on arrays, None where not ``wanted``."""
        shape = x.shape
        (x, grad, w), low = _as_float(x, grad, w)
        n, c = shape[0], shape[1]
        size = _numel(shape[2:])
        x3 = x.reshape(n, c, size)
        g3 = xp_of(grad).ascontiguousarray(grad.reshape(n, c, size))
        mean, invstd = self.stats
        mean, invstd = mean.astype(x.dtype, copy=False), invstd.astype(x.dtype, copy=False)
        wv = None if w is None else w.astype(x.dtype, copy=False)
        gx = gw = gb = None
        # per channel sums of g and g x (through per (sample, channel) rows when they're long)
        gsum = _sum_arrays(g3.reshape(n, c) if size == 1 else _sum_arrays(g3, (2,), False),
                           (0,), False)
        if self.training or wanted[1]:
            gxsum = _sum_arrays((g3 * x3).reshape(n, c) if size == 1 else _row_dot(
                g3.reshape(n * c, size), x3.reshape(n * c, size)).reshape(n, c), (0,), False)
        if wanted[0]:
            scale = invstd if wv is None else invstd * wv
            gx = g3 * scale[:, None]
            if self.training:
                gs, gxs = (gsum, gxsum) if wv is None else (gsum * wv, gxsum * wv)
                b, c_ = _dx_coefs(n * size, mean, invstd, gs, gxs)
                gx += x3 * b[:, None]
                gx += c_[:, None]
            gx = gx.reshape(shape)
        if wanted[1]:
            gw = (gxsum - gsum * mean) * invstd
        if wanted[2]:
            gb = gsum
        if low is not None:
            return tuple(None if a is None else a.astype(low) for a in (gx, gw, gb))
        return gx, gw, gb

    def grad_tensors(self, grad, x, w, wanted) -> tuple:
        """``grad_arrays`` in ember ops (differentiable)."""
        nd = x.dim()
        dims = (0,) + tuple(range(2, nd))
        cshape = (1, x.shape[1]) + (1,) * (nd - 2)
        if self.training:
            xhat, invstd = _stats(x, dims, self.eps)
        else:
            mean, invstd = (_make(a.astype(x._data.dtype).reshape(cshape)) for a in self.stats)
            xhat = (x - mean) * invstd
        gx = gw = gb = None
        if wanted[0]:
            g = grad if w is None else grad * w.view(cshape)
            gx = _normalized_grad(g, xhat, invstd, dims) if self.training else g * invstd
        if wanted[1]:
            gw = (grad * xhat).sum(dims)
        if wanted[2]:
            gb = grad.sum(dims)
        return gx, gw, gb

    def backward(self, grad):
        return _norm_backward(self, NativeBatchNormBackwardBackward0, grad)

    def raw_backward(self, grad):
        return _norm_raw_backward(self, grad)


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
    """layer_norm over the trailing dims; weight and bias have the normalised shape.

    NOTE: array kernels over the (rows, normalised size) view, (16, 64, 256) float32 with
    weight and bias: forward 394 -> 207 µs, forward+backward 1410 -> 672 (torch 104 / 320)."""

    __slots__ = ("dims", "eps", "stats")
    save_inputs = (0, 1)

    def forward(self, x, w, b, k, eps):
        self.dims, self.eps = tuple(range(x.ndim - k, x.ndim)), eps
        shape = x.shape
        (x, w, b), low = _as_float(x, w, b)
        x2 = x.reshape(_numel(shape[:x.ndim - k]), _numel(shape[x.ndim - k:]))
        out, mean, rstd = _row_moments(x2, eps)
        self.stats = (mean, rstd)
        # (in place: the centred rows become the output; rstd and weight as one factor)
        out *= rstd[:, None] if w is None else _outer(rstd, w.reshape(-1).astype(x.dtype))
        if b is not None:
            out += b.reshape(-1)
        out = out.reshape(shape)
        return out if low is None else out.astype(low)

    def grad_arrays(self, grad, x, w, wanted) -> tuple:
        """(gx, gw, gb) on arrays, None where not ``wanted`` (torch's LayerNormBackward
        kernel: per row sums of g and g x, the weight's gradient as products with the rows'
        statistics)."""
        shape, wshape = x.shape, None if w is None else w.shape
        (x, grad, w), low = _as_float(x, grad, w)
        lead = x.ndim - len(self.dims)
        rows = (_numel(shape[:lead]), _numel(shape[lead:]))
        # (a gradient broadcast from a sum is all strides 0: copied once, not read at each use)
        x2, g2 = x.reshape(rows), xp_of(grad).ascontiguousarray(grad.reshape(rows))
        wv = None if w is None else w.reshape(-1).astype(x.dtype, copy=False)
        mean, rstd = self.stats
        gx = gw = gb = None
        gp = g2 * x2 if wanted[1] or (wanted[0] and wv is not None) else None
        if wanted[0]:
            if wv is None:
                b, c = _dx_coefs(rows[1], mean, rstd, _sum_arrays(g2, (1,), False),
                                 _row_dot(g2, x2))
                gx = g2 * rstd[:, None]
            else:
                b, c = _dx_coefs(rows[1], mean, rstd, _matvec(g2, wv), _matvec(gp, wv))
                gx = g2 * _outer(rstd, wv)
            gx += x2 * b[:, None]
            gx += c[:, None]
            gx = gx.reshape(shape)
        if wanted[1]:
            # sum over rows of g (x - mean) rstd, as two products with the rows' statistics
            gw = (_vecmat(rstd, gp) - _vecmat(mean * rstd, g2)).reshape(wshape)
        if wanted[2]:
            gb = _sum_arrays(g2, (0,), False).reshape(wshape)
        if low is not None:
            return tuple(None if a is None else a.astype(low) for a in (gx, gw, gb))
        return gx, gw, gb

    def grad_tensors(self, grad, x, w, wanted) -> tuple:
        """``grad_arrays`` in ember ops (differentiable): torch's layer_norm_backward."""
        xhat, invstd = _stats(x, self.dims, self.eps)
        lead = tuple(range(x.dim() - len(self.dims)))
        gx = gw = gb = None
        if wanted[0]:
            gx = _normalized_grad(grad if w is None else grad * w, xhat, invstd, self.dims)
        if wanted[1]:
            gw = (grad * xhat).sum(lead) if lead else grad * xhat
        if wanted[2]:
            gb = grad.sum(lead) if lead else grad
        return gx, gw, gb

    def backward(self, grad):
        return _norm_backward(self, NativeLayerNormBackwardBackward0, grad)

    def raw_backward(self, grad):
        return _norm_raw_backward(self, grad)


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


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
    """group_norm: statistics per (sample, group of channels); weight and bias per channel.

    NOTE: array kernels over the (sample x group, rest) view, (32, 16, 28, 28) float32, 4
    groups: forward 358 -> 209 µs, forward+backward 1463 -> 760 (torch 94 / 350); with weight
    and bias 530 -> 288, 2023 -> 869 (torch 107 / 383)."""

    __slots__ = ("eps", "groups", "stats")
    save_inputs = (0, 1)

    def forward(self, x, w, b, groups, eps):
        self.groups, self.eps = groups, eps
        shape = x.shape
        (x, w, b), low = _as_float(x, w, b)
        n, c = shape[:2]
        size = _numel(shape[2:])
        out, mean, rstd = _row_moments(x.reshape(n * groups, c // groups * size), eps)
        self.stats = (mean, rstd)
        if w is None:
            out *= rstd[:, None]
        else:  # rstd and weight as one factor per (sample, channel)
            out = out.reshape(n, c, size)  # (a view: the rows are C-ordered)
            scale = rstd.reshape(n, groups, 1) * w.astype(x.dtype).reshape(groups, -1)
            out *= scale.reshape(n, c, 1)
        if b is not None:
            out = out.reshape(n, c, size)
            out += b[:, None]
        out = out.reshape(shape)
        return out if low is None else out.astype(low)

    def grad_arrays(self, grad, x, w, wanted) -> tuple:
        """(gx, gw, gb) on arrays, None where not ``wanted`` (torch's GroupNormBackward
        kernel: per (sample, channel) sums of g and g x, combined per group)."""
        shape = x.shape
        (x, grad, w), low = _as_float(x, grad, w)
        n, c, g = shape[0], shape[1], self.groups
        size = _numel(shape[2:])
        x3, g3 = x.reshape(n, c, size), xp_of(grad).ascontiguousarray(grad.reshape(n, c, size))
        mean, rstd = self.stats
        gx = gw = gb = None
        gsum = _sum_arrays(g3, (2,), False)  # (n, c): sum(g) and sum(g x) per channel
        if wanted[0] or wanted[1]:
            gxsum = _row_dot(g3.reshape(n * c, size), x3.reshape(n * c, size)).reshape(n, c)
        if wanted[0]:
            wv = None if w is None else w.astype(x.dtype, copy=False).reshape(1, g, -1)
            gs, gxs = gsum.reshape(n, g, -1), gxsum.reshape(n, g, -1)
            if wv is not None:
                gs, gxs = gs * wv, gxs * wv
            b, c_ = _dx_coefs(c // g * size, mean, rstd, _sum_arrays(gs, (2,), False)
                              .reshape(-1), _sum_arrays(gxs, (2,), False).reshape(-1))
            scale = rstd.reshape(n, g, 1) if wv is None else rstd.reshape(n, g, 1) * wv
            rep, xp = c // g, xp_of(x)  # the group's coefficients for each of its channels
            gx = g3 * xp.broadcast_to(scale, (n, g, rep)).reshape(n, c, 1)
            gx += x3 * xp.repeat(b, rep).reshape(n, c, 1)
            gx += xp.repeat(c_, rep).reshape(n, c, 1)
            gx = gx.reshape(shape)
        if wanted[1]:
            m, r = mean.reshape(n, g, 1), rstd.reshape(n, g, 1)
            gw = _sum_arrays(((gxsum.reshape(n, g, -1) - gsum.reshape(n, g, -1) * m) * r)
                             .reshape(n, c), (0,), False)
        if wanted[2]:
            gb = _sum_arrays(gsum, (0,), False)
        if low is not None:
            return tuple(None if a is None else a.astype(low) for a in (gx, gw, gb))
        return gx, gw, gb

    def grad_tensors(self, grad, x, w, wanted) -> tuple:
        """``grad_arrays`` in ember ops (differentiable)."""
        shape = x.shape
        n, c = shape[0], shape[1]
        cshape = (1, c) + (1,) * (len(shape) - 2)
        dims = (0,) + tuple(range(2, len(shape)))
        xhat_g, invstd = _stats(x.reshape(n, self.groups, -1), 2, self.eps)
        gx = gw = gb = None
        if wanted[0]:
            g = grad if w is None else grad * w.view(cshape)
            gx = _normalized_grad(g.reshape(n, self.groups, -1), xhat_g, invstd, 2)
            gx = gx.reshape(shape)
        if wanted[1]:
            gw = (grad * xhat_g.reshape(shape)).sum(dims)
        if wanted[2]:
            gb = grad.sum(dims)
        return gx, gw, gb

    def backward(self, grad):
        return _norm_backward(self, NativeGroupNormBackwardBackward0, grad)

    def raw_backward(self, grad):
        return _norm_raw_backward(self, grad)


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
