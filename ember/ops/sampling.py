"""Random sampling: normal, bernoulli, multinomial and the in-place samplers (uniform_,
normal_, bernoulli_, random_, exponential_), all drawn from ``ember.random`` (``manual_seed``
or a ``Generator``).

As in torch, a sample's gradient with respect to its parameters is zero (the nodes are
recorded, named as torch names them, and give zeros), and the in-place samplers refuse leaves
that require grad through the one in-place mechanism.
"""

from __future__ import annotations

from .._backend import FLOAT_KINDS, host, xp_of
from .._backend import dtypes as _dt
from .._tensor import _CPP_NAMES, Tensor, _make
from ..random import rng
from ._op import Op, apply1, broadcast_error, write_out
from ._registry import register
from .creation import _finish, _float_dtype, _size
from .inplace import inplace
from .shape import expand

__all__ = ["bernoulli", "multinomial", "normal"]


def _dtype_name(np_dtype) -> str:
    return _dt.from_numpy_dtype(host.dtype(np_dtype))._legacy[:-6]  # "Long", "Float", ...


def _fmt(x) -> str:
    """A number as torch's C++ messages print it (``-1``, ``0.5``)."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def _draw(kind: str, gen, shape, dtype, xp=host):
    """Samples of ``shape`` in ``dtype`` (float16 drawn in float32), drawn on the host
    generator and moved to ``xp``'s device."""
    work = dtype if dtype in (host.float32, host.float64) else host.float32
    if kind == "normal":
        out = gen.standard_normal(shape, dtype=work)
    elif kind == "uniform":
        out = gen.random(shape, dtype=work)
    else:  # exponential
        out = gen.standard_exponential(shape, dtype=work)
    return xp.asarray(out.astype(dtype, copy=False))


class _ZeroGrad(Op):
    """A sampler's node: the sample does not depend differentiably on its inputs."""

    __slots__ = ()

    def backward(self, grad):
        zeros = xp_of(grad._data).zeros
        out = tuple(None if e is None else _make(zeros(meta[0], dtype=meta[1]))
                    for (e, _), meta in zip(self.next_functions, self._in_meta))
        return out if len(out) > 1 else out[0]


# --------------------------------------------------------------------------- normal


class NormalBackward1(_ZeroGrad):
    """normal(mean: Tensor, std: float)."""

    __slots__ = ()

    def forward(self, mean, std, gen):
        return mean + std * _draw("normal", gen, mean.shape, mean.dtype, xp_of(mean))


class NormalBackward2(_ZeroGrad):
    """normal(mean: float, std: Tensor)."""

    __slots__ = ()

    def forward(self, std, mean, gen):
        xp = xp_of(std)
        return (mean + std * _draw("normal", gen, std.shape, std.dtype, xp)).astype(std.dtype)


class NormalBackward3(_ZeroGrad):
    """normal(mean: Tensor, std: Tensor): broadcast; the result takes mean's dtype."""

    __slots__ = ()

    def forward(self, mean, std, gen):
        shape, xp = host.broadcast_shapes(mean.shape, std.shape), xp_of(mean)
        return (mean + std * _draw("normal", gen, shape, mean.dtype, xp)).astype(mean.dtype)


def _check_float(t: Tensor, kernel: str) -> None:
    if t._data.dtype.kind not in FLOAT_KINDS:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_dtype_name(t._data.dtype)}'")


def _check_std(std) -> None:
    if isinstance(std, Tensor):
        if (std._data < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(float(std))}")


_NORMAL_SIGNATURES = (
    "normal() received an invalid combination of arguments - got ({got}), but expected one of:\n"
    " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
    "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device "
    "device = None, bool pin_memory = False, bool requires_grad = False)\n")


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=False, requires_grad=False) -> Tensor:
    """``torch.normal``: samples of N(mean, std) for every overload of torch's.

    Tensor mean and/or std broadcast together (the result takes mean's dtype when mean is a
    tensor); float mean and std need ``size``.
    """
    gen = rng(generator)
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    if tm:
        _check_float(mean, "normal_kernel_cpu")
    _check_std(std)
    if tm and ts:
        err = broadcast_error(mean._data.shape, std._data.shape)
        if err is not None:
            raise err
        result = NormalBackward3.apply(mean, std, params=(gen,))
    elif tm:
        result = apply1(NormalBackward1, mean, float(std), gen)
    elif ts:
        _check_float(std, "normal_kernel_cpu")
        result = apply1(NormalBackward2, std, float(mean), gen)
    else:
        if size is None:
            got = ", ".join(type(a).__name__ for a in (mean, std))
            raise TypeError(_NORMAL_SIGNATURES.format(got=got))
        shape = _size((size,), "normal")
        dt = host.dtype(_float_dtype(dtype))
        if dt.kind not in FLOAT_KINDS:
            raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                      f"'{_dtype_name(dt)}'")
        data = (mean + std * _draw("normal", gen, shape, dt)).astype(dt, copy=False)
        result = _finish(data, requires_grad, device)
    if out is not None:
        return write_out(out, result, "normal")
    return result


# --------------------------------------------------------------------------- bernoulli


_P_RANGE_ERROR = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                  "message be improved?  If so, please report an enhancement request to "
                  "PyTorch.)")


def _check_p_tensor(p: Tensor) -> None:
    d = p._data
    if not ((d >= 0) & (d <= 1)).all():
        raise RuntimeError(_P_RANGE_ERROR)


def _check_p_float(p) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_fmt(p)}")


class BernoulliBackward0(_ZeroGrad):
    """bernoulli(input): 1 with probability input, in input's dtype."""

    __slots__ = ()

    def forward(self, p, gen):
        return (xp_of(p).asarray(gen.random(p.shape)) < p).astype(p.dtype)


_NotImplementedNode = type("NotImplemented", (Op,), {
    "__slots__": ("op",),
    "__doc__": "torch's node for ops it has no derivative for: backward refuses.",
    "forward": lambda self, a, fn, op: (setattr(self, "op", op), fn(a))[1],
    "backward": lambda self, grad: (_ for _ in ()).throw(
        RuntimeError(f"derivative for aten::{self.op} is not implemented")),
})


def bernoulli(input: Tensor, p=None, *, generator=None, out=None) -> Tensor:
    """``torch.bernoulli``: 1 with probability ``input`` (or ``p``), in input's dtype."""
    gen = rng(generator)
    if p is not None:
        _check_p_float(float(p))
        shape = input._data.shape
        dt = input._data.dtype
        result = apply1(_NotImplementedNode, input,
                        lambda a: xp_of(a).asarray((gen.random(shape) < p).astype(dt)),
                        "bernoulli")
    else:
        if input._data.dtype.kind not in FLOAT_KINDS:
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                      f"'{_dtype_name(input._data.dtype)}'")
        _check_p_tensor(input)
        result = apply1(BernoulliBackward0, input, gen)
    if out is not None:
        return write_out(out, result, "bernoulli")
    return result


# --------------------------------------------------------------------------- multinomial


@register
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None,
                out=None) -> Tensor:
    """``torch.multinomial``: ``num_samples`` category indices per row of weights (int64).

    With replacement: inverse-CDF sampling (one ``searchsorted`` for all rows). Without:
    the exponential race (the k smallest ``E / w``, E ~ Exp(1)), which draws categories in
    the order successive weighted draws without replacement would.
    """
    w = input._data
    if w.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if w.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_dtype_name(w.dtype)}")
    n = w.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    xp = xp_of(w)
    rows = w.reshape(-1, n).astype(host.float64)
    if not xp.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if rows.shape[0] and (rows.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    gen = rng(generator)
    r = rows.shape[0]
    if not r:
        idx = xp.zeros((0, num_samples), dtype=host.int64)
    elif replacement:
        cdf = xp.cumsum(rows, axis=-1)
        cdf /= cdf[:, -1:]  # the last entry is exactly 1: u < 1 never falls past it
        offset = xp.arange(r, dtype=host.float64)[:, None] * 2.0
        u = xp.asarray(gen.random((r, num_samples))) + offset
        pos = xp.searchsorted((cdf + offset).ravel(), u.ravel(), side="right")
        idx = pos.reshape(r, num_samples) - xp.arange(r)[:, None] * n
        last = n - 1 - (rows[:, ::-1] > 0).argmax(axis=-1)  # (rounding of u + offset)
        idx = xp.minimum(idx.clip(0, None), last[:, None])
    else:
        with xp.errstate(divide="ignore"):  # 0 weight -> inf: drawn last
            keys = xp.asarray(gen.standard_exponential((r, n))) / rows
        idx = xp.argsort(keys, axis=-1, kind="stable")[:, :num_samples]
    result = _make(idx.astype(host.int64).reshape(w.shape[:-1] + (num_samples,)))
    if out is not None:
        return write_out(out, result, "multinomial")
    return result


# --------------------------------------------------------------------------- in-place samplers


class _FillSample(_ZeroGrad):
    """An in-place sampler's node: ``fn`` makes the sample (on the host); d/dself = 0."""

    __slots__ = ()

    def forward(self, a, fn):
        return xp_of(a).asarray(fn(a.shape, a.dtype))


UniformBackward0 = type("UniformBackward0", (_FillSample,), {"__slots__": ()})
NormalBackward0 = type("NormalBackward0", (_FillSample,), {"__slots__": ()})
BernoulliBackward2 = type("BernoulliBackward2", (_FillSample,), {"__slots__": ()})
ExponentialBackward0 = type("ExponentialBackward0", (_FillSample,), {"__slots__": ()})
RandomBackward0 = type("RandomBackward0", (_FillSample,), {"__slots__": ()})  # (from, to)
RandomBackward1 = type("RandomBackward1", (_FillSample,), {"__slots__": ()})  # (to)
RandomBackward2 = type("RandomBackward2", (_FillSample,), {"__slots__": ()})  # ()


class BernoulliBackward1(_ZeroGrad):
    """bernoulli_(p: Tensor): p broadcast to self's shape."""

    __slots__ = ()

    def forward(self, a, p, gen):
        xp = xp_of(a)
        return (xp.asarray(gen.random(a.shape)) < xp.broadcast_to(p, a.shape)).astype(a.dtype)


def _fill(self: Tensor, cls, fn) -> Tensor:
    return inplace(self, lambda t: apply1(cls, t, fn))


@register(export=False)
def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator=None,
             **kwargs) -> Tensor:
    """``Tensor.uniform_``: fill with samples of U[from, to)."""
    from_ = kwargs.pop("from", from_)
    if self._data.dtype.kind not in FLOAT_KINDS:
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for "
                                  f"'{_dtype_name(self._data.dtype)}'")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_fmt(from_)} > to={_fmt(to)}")
    gen = rng(generator)
    lo, span = float(from_), float(to) - float(from_)
    return _fill(self, UniformBackward0,
                 lambda shape, dt: (lo + span * _draw("uniform", gen, shape, dt)).astype(dt))


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """``Tensor.normal_``: fill with samples of N(mean, std)."""
    _check_float(self, "normal_kernel_cpu")
    _check_std(std)
    gen = rng(generator)
    mean, std = float(mean), float(std)
    return _fill(self, NormalBackward0,
                 lambda shape, dt: (mean + std * _draw("normal", gen, shape, dt)).astype(dt))


@register(export=False)
def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """``Tensor.exponential_``: fill with samples of Exp(lambd) (mean 1 / lambd)."""
    if self._data.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{_dtype_name(self._data.dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    gen = rng(generator)
    scale = 1.0 / float(lambd)
    return _fill(self, ExponentialBackward0,
                 lambda shape, dt: (scale * _draw("exp", gen, shape, dt)).astype(dt))


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """``Tensor.bernoulli_``: fill with 1 with probability ``p`` (a float or a tensor that
    broadcasts to self), else 0."""
    gen = rng(generator)
    if isinstance(p, Tensor):
        _check_p_tensor(p)
        expand(p.detach(), self._data.shape)  # torch's error where p doesn't broadcast
        return inplace(self, lambda t, q: BernoulliBackward1.apply(t, q, params=(gen,)), p)
    _check_p_float(float(p))
    p = float(p)
    return _fill(self, BernoulliBackward2,
                 lambda shape, dt: (gen.random(shape) < p).astype(dt))


_FLOAT_MANTISSA = {host.dtype(host.float16): 11, host.dtype(host.float32): 24,
                   host.dtype(host.float64): 53}


def _random_bound(dt) -> int:
    """The largest value ``random_()`` draws for ``dt`` (inclusive), as torch bounds it."""
    if dt.kind in FLOAT_KINDS:
        return 2 ** _FLOAT_MANTISSA[dt]
    if dt.kind == "b":
        return 1
    return int(host.iinfo(dt).max)


_OMITTED = object()


@register(export=False)
def random_(self: Tensor, from_=None, to=_OMITTED, *, generator=None, **kwargs) -> Tensor:
    """``Tensor.random_()``, ``random_(to)``, ``random_(from, to)``: integers drawn uniformly
    from [from, to) (``to=None``: up to the largest integer ``self``'s dtype holds exactly)."""
    from_keyword = "from" in kwargs
    from_ = kwargs.pop("from", from_)
    dt = self._data.dtype
    if from_ is None and to in (None, _OMITTED):
        cls, low, high = RandomBackward2, 0, _random_bound(dt)
    elif to is _OMITTED and not from_keyword:  # random_(to)
        cls, low, high = RandomBackward1, 0, int(from_) - 1
    elif from_ is None:  # random_(to=...)
        cls, low, high = RandomBackward1, 0, int(to) - 1
    else:
        cls, low = RandomBackward0, int(from_)
        high = _random_bound(dt) if to in (None, _OMITTED) else int(to) - 1
    if low > high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high + 1}")
    if dt.kind in "iu":
        info = host.iinfo(dt)
        if not info.min <= low <= info.max:
            raise RuntimeError(f"from is out of bounds for {_CPP_NAMES[dt.name]}")
        if not info.min <= high <= info.max:
            raise RuntimeError(f"to - 1 is out of bounds for {_CPP_NAMES[dt.name]}")
    gen = rng(generator)
    return _fill(self, cls, lambda shape, d: gen.integers(
        low, high, shape, dtype=host.int64, endpoint=True).astype(d))


# the in-place samplers are the in-place forms of normal and bernoulli (defined above them)
register(normal, method=False, inplace=normal_)
register(bernoulli, inplace=bernoulli_)
