"""Complex numbers: real/imag (views), conj, angle, sgn, view_as_real/view_as_complex (views),
complex(real, imag) and polar(abs, angle).

Gradients follow torch's convention (derivatives.yaml): the gradient of a real loss L with
respect to a complex z is the conjugate Wirtinger derivative, ``dL/dRe(z) + i dL/dIm(z)``. For
a holomorphic f with derivative f', a rule is then ``grad * conj(f'(z))``: this is why the
rules of mul, div, exp, ... conj their saved factor (``conj_of``) for complex tensors.

NOTE: torch's ``conj()`` is a lazy view carrying a conjugate bit; ember materialises the
conjugate (a copy), so ``is_conj()`` is always False and ``resolve_conj()`` returns its input,
as torch's does for a tensor without the bit. Values and gradients are those of torch.
"""

from __future__ import annotations

from .._backend import dtypes as _dt
from .._backend import xp_of
from .._tensor import Tensor, _make
from ..autograd.record import mark_view
from ._op import Op, apply1
from ._registry import register

_REAL_OF = {"F": "f", "D": "d"}  # complex64 -> float32, complex128 -> float64 (dtype.char)
_COMPLEX_OF = {"f": "F", "d": "D", "e": "F"}


def conj_of(t: Tensor) -> Tensor:
    """``t.conj()`` for a complex tensor, ``t`` itself for a real one: what a backward rule
    multiplies by (``grad * conj(f'(z))``) without any cost for real dtypes beyond this test."""
    return conj_physical(t) if t._data.dtype.kind == "c" else t


def _view(cls, x: Tensor, *params) -> Tensor:
    out = apply1(cls, x, *params)
    mark_view(out, x, (cls, params))
    return out


# ------------------------------------------------------------------------------------ conj


class ConjBackward0(Op):
    """conj: d/dz = conj(grad) (materialised: see the module docstring)."""

    __slots__ = ()
    complex_ok = True

    def forward(self, a):
        return xp_of(a).conj(a)

    def backward(self, grad):
        return conj_of(grad)


class ConjPhysicalBackward0(ConjBackward0):
    """conj_physical: d/dz = conj(grad)."""

    __slots__ = ()


@register
def conj(input: Tensor) -> Tensor:
    """``torch.conj``: the complex conjugate (a copy in ember, not a lazy view); a real tensor
    is returned as it is, as torch does."""
    if input._data.dtype.kind != "c":
        return input
    return apply1(ConjBackward0, input)


@register(inplace=True)
def conj_physical(input: Tensor) -> Tensor:
    """``torch.conj_physical``: the complex conjugate, computed (a real tensor: returned)."""
    if input._data.dtype.kind != "c":
        return input
    return apply1(ConjPhysicalBackward0, input)


@register
def resolve_conj(input: Tensor) -> Tensor:
    """``torch.resolve_conj``: ember's conj is never lazy, so ``input`` itself."""
    return input


@register
def resolve_neg(input: Tensor) -> Tensor:
    """``torch.resolve_neg``: ember has no lazy negation, so ``input`` itself."""
    return input


@register
def is_conj(input: Tensor) -> bool:
    """``torch.is_conj``: always False (ember materialises conjugates)."""
    return False


@register
def is_complex(input: Tensor) -> bool:
    """``torch.is_complex``."""
    return input._data.dtype.kind == "c"


# ---------------------------------------------------------------------- real, imag (views)


class SelectBackward0(Op):
    """real/imag of a complex tensor: a view of one part (torch's node is view_as_real's
    select). d/dz = grad (real) for the real part, grad * 1j for the imaginary part."""

    __slots__ = ("part",)
    complex_ok = True

    def forward(self, a, part):
        self.part = part
        return a.imag if part else a.real

    def backward(self, grad):
        g = grad.to(grad.dtype.to_complex())
        return g * 1j if self.part else g


def _real(input: Tensor) -> Tensor:
    """``torch.real``: a view of the real parts (a real tensor: itself, as torch)."""
    if input._data.dtype.kind != "c":
        return input
    return _view(SelectBackward0, input, 0)


def _imag(input: Tensor) -> Tensor:
    """``torch.imag``: a view of the imaginary parts."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _view(SelectBackward0, input, 1)


real = register(_real, name="real", method=False)
imag = register(_imag, name="imag", method=False)


def _set_part(part):
    def setter(self: Tensor, value) -> None:
        (_imag(self) if part else _real(self)).copy_(value)
    return setter


Tensor.real = property(_real, _set_part(0), doc="The real parts (a view), as torch's.")
Tensor.imag = property(_imag, _set_part(1), doc="The imaginary parts (a view), as torch's.")


# ---------------------------------------------------------------------- angle, sgn, abs helper


class AngleBackward0(Op):
    """angle: torch's angle_backward, ``where(z == 0, 0, grad * z / |z|**2 * 1j)`` for a
    complex z; zero for a real input (angle is piecewise constant there)."""

    __slots__ = ()
    save_inputs = (0,)
    complex_ok = True

    def forward(self, a):
        xp = xp_of(a)
        if a.dtype.kind == "c":
            return xp.angle(a)
        if a.dtype.kind not in "fV":
            a = a.astype(_dt.get_default_dtype().np)
        return xp.where(xp.isnan(a), a, xp.where(a < 0, xp.pi, 0.0).astype(a.dtype))

    def backward(self, grad):
        (z,) = self.saved()
        if z._data.dtype.kind != "c":
            return grad * 0
        sq = z.abs() ** 2
        safe = sq + (sq == 0).to(sq.dtype)  # 1 where z == 0 (there z makes it 0), and
        return grad * z / safe * 1j          # differentiable, for the second derivative


@register
def angle(input: Tensor) -> Tensor:
    """``torch.angle``: the argument of each element (pi for negative reals, 0 otherwise)."""
    return apply1(AngleBackward0, input)


def sgn_of(z: Tensor) -> Tensor:
    """``z / |z|``, 0 where z == 0 (torch's sgn), differentiably."""
    a = z.abs()
    d = a._data
    safe = _make(xp_of(d).where(d == 0, 1, d).astype(d.dtype))
    return z / (a + (safe - a.detach()))  # the value of |z| (1 at 0), the gradient of |z|


@register
def sgn(input: Tensor) -> Tensor:
    """``torch.sgn``: ``z / |z|`` for complex tensors (0 at 0), ``sign`` for real ones."""
    if input._data.dtype.kind != "c":
        return input.sign()
    return sgn_of(input)


# ------------------------------------------------------------- view_as_real, view_as_complex


class ViewAsRealBackward0(Op):
    """view_as_real: (..., 2) real view of a complex tensor; d/dz = view_as_complex(grad)."""

    __slots__ = ()
    complex_ok = True

    def forward(self, a):
        return a[..., None].view(_REAL_OF[a.dtype.char])

    def backward(self, grad):
        return view_as_complex(grad.contiguous())


class ViewAsComplexBackward0(Op):
    """view_as_complex: complex view of a (..., 2) real tensor; d/dx = view_as_real(grad)."""

    __slots__ = ()
    complex_ok = True

    def forward(self, a):
        return a.view(_COMPLEX_OF[a.dtype.char])[..., 0]

    def backward(self, grad):
        return view_as_real(grad)


@register(method=False)
def view_as_real(input: Tensor) -> Tensor:
    """``torch.view_as_real``: a real view with a last dimension of size 2 (real, imag)."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _view(ViewAsRealBackward0, input)


@register(method=False)
def view_as_complex(input: Tensor) -> Tensor:
    """``torch.view_as_complex``: a complex view of a float32/float64 tensor of shape (..., 2)."""
    a = input._data
    if a.dtype.char not in "fd":
        raise RuntimeError("view_as_complex is only supported for float and double tensors, "
                           f"but got a tensor of scalar type: {_dt._FROM_NP[a.dtype]._legacy[:-6]}")
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if a.strides[-1] != a.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * a.itemsize) for s in a.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    return _view(ViewAsComplexBackward0, input)


# ----------------------------------------------------------------------------- complex, polar


class ComplexBackward0(Op):
    """complex(real, imag): d/dreal = Re(grad), d/dimag = Im(grad)."""

    __slots__ = ()
    complex_ok = True

    def forward(self, re, im):
        out = xp_of(re).empty(re.shape, _COMPLEX_OF[re.dtype.char])
        out.real[...] = re  # (item assignment: a device array's parts are views too)
        out.imag[...] = im
        return out

    def backward(self, grad):
        return (grad.real if self.needs_grad(0) else None,
                grad.imag if self.needs_grad(1) else None)


class PolarBackward0(Op):
    """polar(abs, angle): torch's polar_backward, d/dabs = Re(conj(grad) * sgn(result)),
    d/dangle = Re(conj(grad) * result * 1j)."""

    __slots__ = ()
    save_output = True
    complex_ok = True

    def forward(self, r, theta):
        out = xp_of(r).empty(r.shape, _COMPLEX_OF[r.dtype.char])
        out.real[...] = r * xp_of(r).cos(theta)
        out.imag[...] = r * xp_of(r).sin(theta)
        return out

    def backward(self, grad):
        result = self.saved_output()
        gc = conj_of(grad)
        return ((gc * sgn_of(result)).real if self.needs_grad(0) else None,
                (gc * result * 1j).real if self.needs_grad(1) else None)


def _check_pair(op: str, a: Tensor, b: Tensor, names: tuple[str, str]) -> None:
    for t in (a, b):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{names[t is b]}' must be Tensor, not "
                            f"{type(t).__name__}")
    da, db = a._data.dtype, b._data.dtype
    if da.char not in "fd" or db.char not in "fd":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_dt._FROM_NP[da]._legacy[:-6]} and {_dt._FROM_NP[db]._legacy[:-6]}")
    if da != db:
        raise RuntimeError(f"Expected object of scalar type {_dt._FROM_NP[da]._legacy[:-6]} but "
                           f"got scalar type {_dt._FROM_NP[db]._legacy[:-6]} for second argument")


def _broadcast_pair(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    if a._data.shape == b._data.shape:
        return a, b
    shape = tuple(xp_of(a._data).broadcast_shapes(a._data.shape, b._data.shape))
    return a.expand(shape), b.expand(shape)


@register(method=False)
def complex(real: Tensor, imag: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.complex``: ``real + imag * 1j`` of two float32 (or float64) tensors."""
    _check_pair("complex", real, imag, ("real", "imag"))
    result = ComplexBackward0.apply(*_broadcast_pair(real, imag))
    return result if out is None else out.copy_(result)


@register(method=False)
def polar(abs: Tensor, angle: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.polar``: ``abs * (cos(angle) + sin(angle) * 1j)``."""
    _check_pair("polar", abs, angle, ("abs", "angle"))
    result = PolarBackward0.apply(*_broadcast_pair(abs, angle))
    return result if out is None else out.copy_(result)
