"""``torch.fft``: discrete Fourier transforms, differentiable, over NumPy's pocketfft.

Three primitives, named as torch's nodes, carry every transform: ``FftC2CBackward0``
(fft/ifft/fftn/...), ``FftR2CBackward0`` (rfft*, the one-sided spectrum of a real signal) and
``FftC2RBackward0`` (irfft*, hfft). ``n``/``s`` pad with zeros or trim the input first (an
ember op, so that part of the gradient is the slice/pad's), ``norm`` is torch's
("backward", the default: 1/n on the inverse; "ortho": 1/sqrt(n) both ways; "forward": 1/n
on the forward). A float32 (or complex64) input gives complex64, float64 gives complex128.

Gradients are torch's (derivatives.yaml, ``fft_r2c_backward``/``fft_c2r_backward``): the
adjoint of a transform with norm N is the transform the other way with the norm swapped
(backward <-> forward); rfft's adjoint zero-fills the missing half of the spectrum and keeps
the real part; irfft's is an rfft whose bins that stand for two (all but the first and, for
even n, the last) are doubled.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._backend import dtypes as _dt
from .._backend import xp_of
from .._tensor import Tensor, _make, _wrap_dim
from ..ops._op import Op, apply1

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq",
           "rfftn"]

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_COMPLEX_OF = {"f": "F", "d": "D", "F": "F", "D": "D"}


def _norm(norm: str | None) -> str:
    if norm is None:
        return "backward"
    if norm not in _SWAP:
        raise RuntimeError(f"Invalid normalization mode: \"{norm}\"")
    return norm


def _complex_np(a):
    """The complex NumPy dtype a transform of array ``a`` gives (torch's: complex64 for
    float32/complex64 inputs, complex128 for float64/complex128)."""
    return _COMPLEX_OF[a.dtype.char]


# ------------------------------------------------------------------------------ primitives


class FftC2CBackward0(Op):
    """fftn/ifftn over ``dims`` (sizes as the input's): the adjoint is the transform the other
    way with the norm swapped."""

    __slots__ = ("dims", "forward_", "norm")
    complex_ok = True

    def forward(self, a, dims, norm, forward):
        self.dims, self.norm, self.forward_ = dims, norm, forward
        fft = xp_of(a).fft
        out = (fft.fftn if forward else fft.ifftn)(a, axes=dims, norm=norm)
        return out.astype(_complex_np(a), copy=False)

    def backward(self, grad):
        return _c2c(grad, self.dims, _SWAP[self.norm], not self.forward_)


class FftR2CBackward0(Op):
    """rfftn over ``dims`` (the last one halved to n//2 + 1): the adjoint zero-fills the
    missing half, runs the inverse C2C with the norm swapped, and keeps the real part."""

    __slots__ = ("dims", "n", "norm")
    complex_ok = True

    def forward(self, a, dims, norm):
        self.dims, self.norm, self.n = dims, norm, a.shape[dims[-1]]
        out = xp_of(a).fft.rfftn(a, axes=dims, norm=norm)
        return out.astype(_complex_np(a), copy=False)

    def backward(self, grad):
        full = _resize(grad, self.dims[-1], self.n)
        return _c2c(full, self.dims, _SWAP[self.norm], False).real


class FftC2RBackward0(Op):
    """irfftn over ``dims`` giving ``n`` points on the last one: the adjoint is rfftn with the
    norm swapped, the bins that stand for a conjugate pair doubled."""

    __slots__ = ("dims", "n", "norm")
    complex_ok = True

    def forward(self, a, dims, norm, n):
        self.dims, self.norm, self.n = dims, norm, n
        s = [a.shape[d] for d in dims[:-1]] + [n]
        out = xp_of(a).fft.irfftn(a, s=s, axes=dims, norm=norm)
        return out.astype(_dt.float64.np if a.dtype.char == "D" else _dt.float32.np, copy=False)

    def backward(self, grad):
        g = _r2c(grad, self.dims, _SWAP[self.norm])
        last = self.dims[-1]
        doubled = self.n - g._data.shape[last]  # bins 1 .. doubled stand for two
        if doubled > 0:
            d = g._data
            shape = [1] * d.ndim
            shape[last] = d.shape[last]
            scale = xp_of(d).ones(shape, dtype=d.real.dtype)
            scale[(slice(None),) * last + (slice(1, 1 + doubled),)] = 2
            g = g * _make(scale)
        return g


def _c2c(x: Tensor, dims: tuple, norm: str, forward: bool) -> Tensor:
    return apply1(FftC2CBackward0, x, dims, norm, forward)


def _r2c(x: Tensor, dims: tuple, norm: str) -> Tensor:
    return apply1(FftR2CBackward0, x, dims, norm)


def _c2r(x: Tensor, dims: tuple, norm: str, n: int) -> Tensor:
    return apply1(FftC2RBackward0, x, dims, norm, n)


# --------------------------------------------------------------------------- argument helpers


def _resize(x: Tensor, dim: int, n: int) -> Tensor:
    """``x`` trimmed or zero-padded to ``n`` along ``dim`` (torch's n/s handling)."""
    size = x._data.shape[dim]
    if n == size:
        return x
    if n < size:
        return x.narrow(dim, 0, n)
    from ..ops.shape import cat
    shape = list(x._data.shape)
    shape[dim] = n - size
    zeros = _make(xp_of(x._data).zeros(shape, dtype=x._data.dtype))
    return cat([x, zeros], dim)


def _as_float(x: Tensor, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    kind = x._data.dtype.kind
    if kind == "c" or x._data.dtype.char in "fd":
        return x
    return x.to(_dt.get_default_dtype() if kind != "f" else _dt.float32)


def _as_complex(x: Tensor, op: str) -> Tensor:
    x = _as_float(x, op)
    return x if x._data.dtype.kind == "c" else x.to(x.dtype.to_complex())


def _as_real(x: Tensor, op: str) -> Tensor:
    x = _as_float(x, op)
    if x._data.dtype.kind == "c":
        raise RuntimeError(f"{op} expects a real input tensor, but got "
                           f"{x.dtype._legacy[:-6]}")
    return x


def _dims_and_sizes(x: Tensor, s, dim, default_all: bool) -> tuple[tuple, list | None]:
    """torch's (s, dim) rules: dim defaults to all dims (or the last len(s) when s is given);
    s defaults to the input's sizes; -1 in s keeps a size."""
    nd = x._data.ndim
    if dim is None:
        dims = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
        if s is None and not default_all:
            dims = (nd - 2, nd - 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(_wrap_dim(d, nd) for d in dims)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
        if len(s) != len(dims):
            raise RuntimeError(f"When given, dim and shape arguments must have the same length "
                               f"(got {len(dims)} and {len(s)})")
    return dims, s


def _resize_all(x: Tensor, dims: tuple, s: list | None, skip_last: bool = False) -> Tensor:
    if s is None:
        return x
    for i, (d, n) in enumerate(zip(dims, s)):
        if skip_last and i == len(dims) - 1:
            continue
        if n != -1:
            if n < 1:
                raise RuntimeError(f"Invalid number of data points ({n}) specified")
            x = _resize(x, d, n)
    return x


# ------------------------------------------------------------------------------ C2C transforms


def _c2c_public(op: str, input: Tensor, s, dim, norm, forward: bool, default_all: bool):
    x = _as_complex(input, op)
    dims, s = _dims_and_sizes(x, s, dim, default_all)
    x = _resize_all(x, dims, s)
    return _c2c(x, dims, _norm(norm), forward)


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``torch.fft.fft``: the 1-D discrete Fourier transform along ``dim``."""
    return _c2c_public("fft", input, None if n is None else [n], (dim,), norm, True, True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``torch.fft.ifft``: the 1-D inverse transform (1/n with the default norm)."""
    return _c2c_public("ifft", input, None if n is None else [n], (dim,), norm, False, True)


def fft2(input: Tensor, s: Sequence[int] | None = None, dim=(-2, -1),
         norm: str | None = None) -> Tensor:
    """``torch.fft.fft2``: the 2-D transform over the last two dims."""
    return _c2c_public("fft2", input, s, dim, norm, True, False)


def ifft2(input: Tensor, s: Sequence[int] | None = None, dim=(-2, -1),
          norm: str | None = None) -> Tensor:
    """``torch.fft.ifft2``."""
    return _c2c_public("ifft2", input, s, dim, norm, False, False)


def fftn(input: Tensor, s: Sequence[int] | None = None, dim=None,
         norm: str | None = None) -> Tensor:
    """``torch.fft.fftn``: over ``dim`` (all dims by default, the last len(s) given s)."""
    return _c2c_public("fftn", input, s, dim, norm, True, True)


def ifftn(input: Tensor, s: Sequence[int] | None = None, dim=None,
          norm: str | None = None) -> Tensor:
    """``torch.fft.ifftn``."""
    return _c2c_public("ifftn", input, s, dim, norm, False, True)


# ------------------------------------------------------------------------ R2C and C2R transforms


def _r2c_public(op: str, input: Tensor, s, dim, norm, default_all: bool) -> Tensor:
    x = _as_real(input, op)
    dims, s = _dims_and_sizes(x, s, dim, default_all)
    x = _resize_all(x, dims, s)
    return _r2c(x, dims, _norm(norm))


def _c2r_public(op: str, input: Tensor, s, dim, norm, default_all: bool) -> Tensor:
    x = _as_complex(input, op)
    dims, s = _dims_and_sizes(x, s, dim, default_all)
    x = _resize_all(x, dims, s, skip_last=True)
    last = dims[-1]
    n = s[-1] if s is not None and s[-1] != -1 else 2 * (x._data.shape[last] - 1)
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    x = _resize(x, last, n // 2 + 1)
    return _c2r(x, dims, _norm(norm), n)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``torch.fft.rfft``: the one-sided transform of a real signal (n//2 + 1 bins)."""
    return _r2c_public("rfft", input, None if n is None else [n], (dim,), norm, True)


def irfft(input: Tensor, n: int | None = None, dim: int = -1,
          norm: str | None = None) -> Tensor:
    """``torch.fft.irfft``: the real signal of a one-sided spectrum (n = 2 * (m - 1) by
    default)."""
    return _c2r_public("irfft", input, None if n is None else [n], (dim,), norm, True)


def rfft2(input: Tensor, s: Sequence[int] | None = None, dim=(-2, -1),
          norm: str | None = None) -> Tensor:
    """``torch.fft.rfft2``."""
    return _r2c_public("rfft2", input, s, dim, norm, False)


def irfft2(input: Tensor, s: Sequence[int] | None = None, dim=(-2, -1),
           norm: str | None = None) -> Tensor:
    """``torch.fft.irfft2``."""
    return _c2r_public("irfft2", input, s, dim, norm, False)


def rfftn(input: Tensor, s: Sequence[int] | None = None, dim=None,
          norm: str | None = None) -> Tensor:
    """``torch.fft.rfftn``: the last of ``dim`` is the halved one."""
    return _r2c_public("rfftn", input, s, dim, norm, True)


def irfftn(input: Tensor, s: Sequence[int] | None = None, dim=None,
           norm: str | None = None) -> Tensor:
    """``torch.fft.irfftn``."""
    return _c2r_public("irfftn", input, s, dim, norm, True)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``torch.fft.hfft``: the real spectrum of a Hermitian-symmetric signal given by its first
    half: ``irfft(conj(input))`` with the norm swapped (unscaled by default)."""
    x = _as_complex(input, "hfft").conj()
    return _c2r_public("hfft", x, None if n is None else [n], (dim,), _SWAP[_norm(norm)], True)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1,
          norm: str | None = None) -> Tensor:
    """``torch.fft.ihfft``: the inverse of hfft, ``conj(rfft(input))`` with the norm swapped
    (1/n by default)."""
    out = _r2c_public("ihfft", input, None if n is None else [n], (dim,), _SWAP[_norm(norm)],
                      True)
    return out.conj()


# ------------------------------------------------------------------------- shifts, frequencies


def _shift(input: Tensor, dim, inverse: bool) -> Tensor:
    nd = input._data.ndim
    dims = tuple(range(nd)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    shape = input._data.shape
    shifts = tuple((shape[d] + 1) // 2 if inverse else shape[d] // 2 for d in dims)
    return input.roll(shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """``torch.fft.fftshift``: the zero frequency moved to the centre (a roll by n//2)."""
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """``torch.fft.ifftshift``: the inverse of fftshift."""
    return _shift(input, dim, True)


def _freq(ks: list[int], n: int, d: float, dtype, device, requires_grad: bool) -> Tensor:
    """torch's kernel: ``arange``-style integers times 1 / (n * d), in the result dtype."""
    from ..ops.creation import tensor
    dt = _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)
    out = tensor(ks, dtype=dt, device=device) * (1.0 / (n * d))
    return out.requires_grad_(requires_grad) if requires_grad else out


def fftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """``torch.fft.fftfreq``: the sample frequencies [0, 1, ..., -2, -1] / (d * n)."""
    ks = list(range((n - 1) // 2 + 1)) + list(range(-(n // 2), 0))
    return _freq(ks, n, d, dtype, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``torch.fft.rfftfreq``: the one-sided frequencies [0, 1, ..., n//2] / (d * n)."""
    return _freq(list(range(n // 2 + 1)), n, d, dtype, device, requires_grad)
