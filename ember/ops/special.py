"""Special functions: torch's gamma family (``lgamma``, ``digamma``, ``polygamma``,
``mvlgamma``, ``i0``, ``igamma``/``igammac``, registered as ``ember.X`` and ``Tensor.X``) and
the primitives of ``torch.special`` that torch has only there (``erfcx``, ``i0e``, ``i1``,
``i1e``, ``ndtri``, ``log_ndtr``, ``entr``, ``xlog1py``, ``zeta``, the Bessel functions, the
orthogonal polynomials); ``ember.special`` is the namespace over them.

Each class is one op named as torch names its node, its forward (the kernels of
``ember/_backend/special.py``, evaluated in float64 and rounded to the input's dtype) beside
its derivative from torch's derivatives.yaml, written in ember ops so that higher derivatives
compose (lgamma' = digamma, digamma' = polygamma(1), polygamma(n)' = polygamma(n + 1),
i0' = i1, ...). Functions torch does not differentiate (the Bessel J/Y/K functions, Airy's
Ai, the polynomials) return tensors that do not require grad, as torch's do.
"""

from __future__ import annotations

import math

from .._backend import FLOAT_KINDS, host, xp_of
from .._backend import dtypes as _dt
from .._backend import special as _k
from .._backend.errstate import ignore_all, ignore_invalid
from .._tensor import Tensor, _make
from ._op import BinaryOp, Op, apply1, promote
from ._registry import register
from .arithmetic import _check_tensor, _invalid_combination, _maybe_out, scalar_name
from .comparison import where
from .inplace import inplace as _inplace
from .unary import exp, log, sign

_SQRT_2PI = math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _in_float64(kernel, *arrays):
    """``kernel`` on float64 copies of ``arrays`` (of one floating dtype), rounded back."""
    dt = arrays[0].dtype
    with ignore_all():  # (overflow to inf is the answer, as torch gives it)
        out = kernel(*[a.astype(host.float64, copy=False) for a in arrays])
        return out.astype(dt, copy=False)


def _float_input(x, name: str) -> Tensor:
    """``x`` checked to be a Tensor; integer and bool tensors as the default float dtype."""
    _check_tensor(x, name)
    if x._data.dtype.kind not in FLOAT_KINDS:
        return _make(x._data.astype(_dt.get_default_dtype().np))
    return x


# ------------------------------------------------------------------------ gamma family


class LgammaBackward0(Op):
    """lgamma: d/dx = grad * digamma(x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return _in_float64(_k.lgamma, a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * digamma(a)


class DigammaBackward0(Op):
    """digamma: d/dx = grad * polygamma(1, x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return _in_float64(_k.digamma, a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * polygamma(1, a)


class PolygammaBackward0(Op):
    """polygamma(n, x): d/dx = grad * polygamma(n + 1, x)."""

    __slots__ = ("n",)
    save_inputs = (0,)

    def forward(self, a, n):
        self.n = n
        return _in_float64(lambda v: _k.polygamma(n, v), a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * polygamma(self.n + 1, a)


class PolygammaBackward1(PolygammaBackward0):
    """``Tensor.polygamma_(n)``: torch records the in-place form with a node of its own."""

    __slots__ = ()


class MvlgammaBackward0(Op):
    """mvlgamma(x, p) = p (p - 1) / 4 log(pi) + sum_j<p lgamma(x - j / 2):
    d/dx = grad * sum_j<p digamma(x - j / 2)."""

    __slots__ = ("p",)
    save_inputs = (0,)

    def forward(self, a, p):
        self.p = p

        def kernel(v):
            total = xp_of(v).zeros_like(v)
            for j in range(p - 1, -1, -1):  # torch's order: arange(-(p-1)/2, 1/2, 1/2) + x
                total = total + _k.lgamma(v - 0.5 * j)
            return total + p * (p - 1) * 0.25 * math.log(math.pi)

        return _in_float64(kernel, a)

    def backward(self, grad):
        (a,) = self.saved()
        total = digamma(a)
        for j in range(1, self.p):
            total = total + digamma(a - 0.5 * j)
        return grad * total


@register(inplace=True)
def lgamma(input: Tensor, *, out=None) -> Tensor:
    """``torch.lgamma``: log|Gamma(x)|, inf at the poles; integer inputs give the default
    float dtype."""
    return _maybe_out(apply1(LgammaBackward0, _float_input(input, "lgamma")), out)


@register(inplace=True)
def digamma(input: Tensor, *, out=None) -> Tensor:
    """``torch.digamma``: d/dx lgamma(x); -inf at +0, inf at -0, NaN at negative integers."""
    return _maybe_out(apply1(DigammaBackward0, _float_input(input, "digamma")), out)


def _check_order(n, name: str = "polygamma") -> int:
    if isinstance(n, Tensor) and n.numel() == 1 and n.dtype.is_floating_point is False:
        n = int(n.item())
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return n


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """``Tensor.polygamma(n)``: ``torch.polygamma(n, self)``."""
    return polygamma(n, self)


def _polygamma_inplace(self: Tensor, n: int) -> Tensor:
    """``Tensor.polygamma_(n)``: in place (its node is ``PolygammaBackward1``, as torch's)."""

    def out_of_place(x: Tensor, n: int) -> Tensor:
        return apply1(PolygammaBackward1, _float_input(x, "polygamma"), _check_order(n))

    out_of_place.__name__ = "polygamma"
    return _inplace(self, out_of_place, n)


_polygamma_inplace.__name__ = _polygamma_inplace.__qualname__ = "polygamma_"


@register(method=_polygamma_method, inplace=_polygamma_inplace)
def polygamma(n: int, input: Tensor, *, out=None) -> Tensor:
    """``torch.polygamma(n, input)``: the n-th derivative of digamma (n >= 0), through the
    Hurwitz zeta function for n >= 1 (see ``ember/_backend/special.py``)."""
    n = _check_order(n)
    x = _check_tensor(input, "polygamma", "input", 2)
    x = _float_input(x, "polygamma")
    return _maybe_out(apply1(PolygammaBackward0, x, n), out)


def _mvlgamma_inplace(self: Tensor, p: int) -> Tensor:
    """``Tensor.mvlgamma_(p)``: in place, refusing integer tensors as torch does."""
    return _inplace(self, _mvlgamma_into, p)


_mvlgamma_inplace.__name__ = _mvlgamma_inplace.__qualname__ = "mvlgamma_"


def _mvlgamma_into(x: Tensor, p: int) -> Tensor:
    return mvlgamma(x, p, out=x if x._data.dtype.kind in "iub" else None)


@register(inplace=_mvlgamma_inplace)
def mvlgamma(input: Tensor, p: int, *, out=None) -> Tensor:
    """``torch.mvlgamma``: the log of the multivariate gamma function of dimension ``p``."""
    _check_tensor(input, "mvlgamma")
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if input._data.dtype.kind == "b":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    result = apply1(MvlgammaBackward0, _float_input(input, "mvlgamma"), p)
    if out is not None and out._data.dtype.kind in "iub":
        # (torch's check, its arguments in this order)
        raise RuntimeError(f"mvlgamma: result type {scalar_name(input.dtype)} can't be cast "
                           f"to the desired output type {scalar_name(result.dtype)}")
    return _maybe_out(result, out)


# ------------------------------------------------------------------------ incomplete gamma


class IgammaBackward0(BinaryOp):
    """igamma(a, x) = P(a, x): d/dx = grad * exp((a - 1) log(x) - x - lgamma(a)); torch has
    no derivative in a."""

    __slots__ = ()
    save_inputs = (0, 1)
    upper = False

    def forward(self, a, b):
        return _in_float64(_k.gammaincc if self.upper else _k.gammainc, a, b)

    def backward(self, grad):
        a, x = self.saved()
        name = "igammac" if self.upper else "igamma"
        if self.needs_grad(0):
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        d = grad * exp((a - 1) * log(x) - x - lgamma(a))
        return None, -d if self.upper else d


class IgammacBackward0(IgammaBackward0):
    """igammac(a, x) = Q(a, x) = 1 - P(a, x): d/dx = -grad * exp((a - 1) log(x) - x -
    lgamma(a))."""

    __slots__ = ()
    upper = True


def _igamma(cls, name: str, input, other, out) -> Tensor:
    _check_tensor(input, name)
    _check_tensor(other, name, "other", 2)
    if input._data.dtype.kind not in FLOAT_KINDS and other._data.dtype.kind not in FLOAT_KINDS:
        kernel = "igammac" if cls.upper else "igamma"
        rt = _dt.result_type(input, other)
        raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for '{scalar_name(rt)}'")
    return _maybe_out(cls.apply(input, other), out)


@register(inplace=True)
def igamma(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.igamma``: the regularised lower incomplete gamma function P(input, other)
    (through SciPy: the ``ember[special]`` extra)."""
    return _igamma(IgammaBackward0, "igamma", input, other, out)


@register(inplace=True)
def igammac(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.igammac``: the regularised upper incomplete gamma function Q(input, other)
    (through SciPy: the ``ember[special]`` extra)."""
    return _igamma(IgammacBackward0, "igammac", input, other, out)


def gammainc(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.special.gammainc``: ``torch.igamma``."""
    return _igamma(IgammaBackward0, "special_gammainc", input, other, out)


def gammaincc(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``torch.special.gammaincc``: ``torch.igammac``."""
    return _igamma(IgammacBackward0, "special_gammaincc", input, other, out)


# ------------------------------------------------------------------------ Bessel I


def _not_tiny(a: Tensor) -> tuple[Tensor, Tensor]:
    """torch's i1/i1e backward guard: (|x| > eps as a mask tensor, x with eps where it is not)."""
    eps = _dt.finfo(a.dtype).eps
    mask = _make(xp_of(a._data).abs(a._data) > eps)
    return mask, where(mask, a, eps)


class I0Backward0(Op):
    """i0: d/dx = grad * i1(x)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return _in_float64(lambda v: _k.bessel_i(v, 0, False), a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * i1(a)


class SpecialI0EBackward0(Op):
    """i0e = exp(-|x|) i0(x): d/dx = grad * (i1e(x) - sgn(x) i0e(x))."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a):
        return _in_float64(lambda v: _k.bessel_i(v, 0, True), a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * (i1e(a) - sign(a) * self.saved_output())


class SpecialI1Backward0(Op):
    """i1: d/dx = grad * (i0(x) - i1(x) / x), 1/2 where |x| <= eps (torch's i1_backward)."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a):
        return _in_float64(lambda v: _k.bessel_i(v, 1, False), a)

    def backward(self, grad):
        (a,) = self.saved()
        mask, safe = _not_tiny(a)
        d = i0(safe) - self.saved_output() * safe.reciprocal()
        return grad * where(mask, d, 0.5)


class SpecialI1EBackward0(Op):
    """i1e = exp(-|x|) i1(x): d/dx = grad * (i0e(x) - i1e(x) (sgn(x) + 1/x)), 1/2 where
    |x| <= eps (torch's i1e_backward)."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a):
        return _in_float64(lambda v: _k.bessel_i(v, 1, True), a)

    def backward(self, grad):
        (a,) = self.saved()
        mask, safe = _not_tiny(a)
        d = i0e(safe) - self.saved_output() * (sign(safe) + safe.reciprocal())
        return grad * where(mask, d, 0.5)


@register(inplace=True)
def i0(input: Tensor, *, out=None) -> Tensor:
    """``torch.i0``: the modified Bessel function of the first kind, order 0."""
    return _maybe_out(apply1(I0Backward0, _float_input(input, "i0")), out)


def _unary(cls, name: str, doc: str):
    """A ``torch.special`` unary function: ``special_<name>`` in torch's errors."""

    def fn(input: Tensor, *, out=None) -> Tensor:
        return _maybe_out(apply1(cls, _float_input(input, f"special_{name}")), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


i0e = _unary(SpecialI0EBackward0, "i0e", "``torch.special.i0e``: exp(-|x|) i0(x).")
i1 = _unary(SpecialI1Backward0, "i1", "``torch.special.i1``: the modified Bessel function "
            "of the first kind, order 1.")
i1e = _unary(SpecialI1EBackward0, "i1e", "``torch.special.i1e``: exp(-|x|) i1(x).")


# ------------------------------------------------------------------------ erfcx, normal CDF


class SpecialErfcxBackward0(Op):
    """erfcx = exp(x**2) erfc(x): d/dx = grad * (2 x erfcx(x) - 2/sqrt(pi))."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a):
        return _in_float64(_k.erfcx, a)

    def backward(self, grad):
        (a,) = self.saved()
        return (2.0 * a * self.saved_output() - _TWO_OVER_SQRT_PI) * grad


class SpecialNdtrBackward0(Op):
    """ndtr, the standard normal CDF: d/dx = grad * exp(-x**2 / 2) / sqrt(2 pi)."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return _in_float64(_k.ndtr, a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * ((a * a) * -0.5).exp() * (1 / _SQRT_2PI)


class SpecialNdtriBackward0(Op):
    """ndtri, the inverse of ndtr: d/dp = grad * sqrt(2 pi) exp(ndtri(p)**2 / 2)."""

    __slots__ = ()
    save_output = True

    def forward(self, a):
        return _in_float64(_k.ndtri, a)

    def backward(self, grad):
        y = self.saved_output()
        return grad * _SQRT_2PI * (y.square() / 2).exp()


class SpecialLogNdtrBackward0(Op):
    """log_ndtr: d/dx = grad / sqrt(2 pi) * exp(-(log_ndtr(x) + x**2 / 2))."""

    __slots__ = ()
    save_inputs = (0,)
    save_output = True

    def forward(self, a):
        return _in_float64(_k.log_ndtr, a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad / _SQRT_2PI * (self.saved_output() + a.pow(2) / 2).neg().exp()


class SpecialEntrBackward0(Op):
    """entr = -x log(x): d/dx = grad * -(1 + log(x))."""

    __slots__ = ()
    save_inputs = (0,)

    def forward(self, a):
        return _in_float64(_k.entr, a)

    def backward(self, grad):
        (a,) = self.saved()
        return grad * -(1 + log(a))


erfcx = _unary(SpecialErfcxBackward0, "erfcx",
               "``torch.special.erfcx``: exp(x**2) erfc(x), without the overflow.")
ndtri = _unary(SpecialNdtriBackward0, "ndtri",
               "``torch.special.ndtri``: the inverse of the standard normal CDF (through "
               "SciPy: the ``ember[special]`` extra).")
log_ndtr = _unary(SpecialLogNdtrBackward0, "log_ndtr",
                  "``torch.special.log_ndtr``: log of the standard normal CDF, accurate in "
                  "both tails.")
entr = _unary(SpecialEntrBackward0, "entr",
              "``torch.special.entr``: -x log(x), 0 at 0 and -inf for x < 0.")


ndtr = _unary(SpecialNdtrBackward0, "ndtr", """``torch.special.ndtr``: the standard normal CDF.

    NOTE: a primitive where torch's is a composite, (1 + erf(x / sqrt 2)) / 2, which rounds to
    0 below x ~ -8.3 and to a few 1e-17 absolute elsewhere; this one keeps relative precision
    in both tails (ndtr(-10) = 7.6e-24, as SciPy). Its node is ``SpecialNdtrBackward0``
    where torch's is its last ``MulBackward1``.""")


# ------------------------------------------------------------------------ xlog1py, zeta


class SpecialXlog1PyBackward0(BinaryOp):
    """xlog1py(x, y) = x log1p(y), 0 where x == 0 (unless y is NaN).

    d/dx = xlog1py(grad, y), 0 where x == 0 and y <= -1; d/dy = grad * x / (y + 1).
    """

    __slots__ = ()
    save_inputs = (0, 1)
    int_to_float = True

    def forward(self, a, b):
        return _in_float64(_k.xlog1py, a, b)

    def backward(self, grad):
        a, b = self.saved()
        ga = _xlog1py_input_grad(grad, a, b, b._data) if self.needs_grad(0) else None
        gb = grad * a / (b + 1) if self.needs_grad(1) else None
        return ga, gb

    def jvp(self, tangents, inputs, out):
        """torch's forward rule: the backward's, with the tangents for ``grad``.

        NOTE: declared because the rule derived from ``backward`` (forward_ad.py) evaluates
        ``xlog1py(u, other)`` at u = 0, where its own mask (u == 0, other <= -1) would
        zero the input's term at other <= -1 instead of giving torch's inf or NaN."""
        (ta, tb), (a, b) = tangents, inputs
        terms = []
        if ta is not None:
            terms.append(_xlog1py_input_grad(ta, a, b, b._data))
        if tb is not None:
            terms.append(tb * a / (b + 1))
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]


class SpecialXlog1PyBackward1(Op):
    """xlog1py(self: scalar, other: Tensor): d/dother = grad * self / (other + 1)."""

    __slots__ = ("scalar",)
    save_inputs = (0,)

    def forward(self, b, a):
        self.scalar = a
        return _in_float64(lambda v: _k.xlog1py(xp_of(v).asarray(a, dtype=v.dtype), v), b)

    def backward(self, grad):
        (b,) = self.saved()
        return grad * self.scalar / (b + 1)


class SpecialXlog1PyBackward2(Op):
    """xlog1py(input: Tensor, other: scalar): d/dinput = xlog1py(grad, other), 0 where
    input == 0 and other <= -1."""

    __slots__ = ("scalar",)
    save_inputs = (0,)

    def forward(self, a, b):
        self.scalar = b
        return _in_float64(lambda v: _k.xlog1py(v, xp_of(v).asarray(b, dtype=v.dtype)), a)

    def backward(self, grad):
        (a,) = self.saved()
        return _xlog1py_input_grad(grad, a, self.scalar, self.scalar)


def _xlog1py_input_grad(grad: Tensor, a: Tensor, b, b_values) -> Tensor:
    g = xlog1py(grad, b)
    with ignore_invalid():
        x = a._data
        mask = (x == 0) & (xp_of(x).asarray(b_values) <= -1)
    return where(_make(mask), 0.0, g) if mask.any() else g


class SpecialZetaBackward0(BinaryOp):
    """zeta(x, q), Hurwitz's: d/dq = grad * -x * zeta(x + 1, q); torch has no derivative in
    x (``the derivative for 'zeta' is not implemented.``)."""

    __slots__ = ()
    save_inputs = (0, 1)
    int_to_float = True

    def forward(self, a, b):
        return _in_float64(_k.zeta, a, b)

    def backward(self, grad):
        a, b = self.saved()
        if self.needs_grad(0):
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        return None, grad * -a * zeta(a + 1.0, b)


class SpecialZetaBackward1(Op):
    """zeta(self: scalar, other: Tensor): d/dother = grad * -self * zeta(self + 1, other)."""

    __slots__ = ("scalar",)
    save_inputs = (0,)

    def forward(self, b, a):
        self.scalar = a
        return _in_float64(lambda v: _k.zeta(xp_of(v).asarray(a, dtype=v.dtype), v), b)

    def backward(self, grad):
        (b,) = self.saved()
        return grad * -self.scalar * zeta(self.scalar + 1.0, b)


class SpecialZetaBackward2(Op):
    """zeta(input: Tensor, other: scalar): torch has no derivative in input."""

    __slots__ = ()

    def forward(self, a, b):
        return _in_float64(lambda v: _k.zeta(v, xp_of(v).asarray(b, dtype=v.dtype)), a)

    def backward(self, grad):
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")


_SCALAR_FORMS = ["Tensor input, Tensor other, *, Tensor out = None",
                 "Number self, Tensor other, *, Tensor out = None",
                 "Tensor input, Number other, *, Tensor out = None"]


def _binary_with_scalars(name: str, both, self_scalar, other_scalar, input, other, out):
    """torch's three overloads of a binary special function: two tensors, or one a number."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _maybe_out(both.apply(input, other), out)
    if isinstance(input, Tensor) and isinstance(other, (int, float)):
        a, b = promote(input, other, True)
        x = input if a is input._data else _make(a)
        return _maybe_out(apply1(other_scalar, x, float(b)), out)
    if isinstance(other, Tensor) and isinstance(input, (int, float)):
        b, a = promote(other, input, True)
        x = other if b is other._data else _make(b)
        return _maybe_out(apply1(self_scalar, x, float(a)), out)
    raise _invalid_combination(f"special_{name}", (input, other), _SCALAR_FORMS)


def xlog1py(input, other, *, out=None) -> Tensor:
    """``torch.special.xlog1py``: input * log1p(other), 0 where input == 0 unless other is
    NaN."""
    return _binary_with_scalars("xlog1py", SpecialXlog1PyBackward0, SpecialXlog1PyBackward1,
                                SpecialXlog1PyBackward2, input, other, out)


def zeta(input, other, *, out=None) -> Tensor:
    """``torch.special.zeta``: the Hurwitz zeta function sum_k (other + k)**-input, with
    torch's special values (Cephes'); differentiable in ``other`` only, as in torch."""
    return _binary_with_scalars("zeta", SpecialZetaBackward0, SpecialZetaBackward1,
                                SpecialZetaBackward2, input, other, out)


# ------------------------------------------------------------------------ not differentiable


def _values_only(kernel, name: str, doc: str):
    """A function torch computes without autograd: its result never requires grad."""

    def fn(input: Tensor, *, out=None) -> Tensor:
        x = _float_input(input, f"special_{name}")
        return _maybe_out(_make(_in_float64(kernel, x._data)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


_SCIPY = " (through SciPy: the ``ember[special]`` extra); not differentiable, as in torch."
bessel_j0 = _values_only(_k.bessel_j0, "bessel_j0", "Bessel J0" + _SCIPY)
bessel_j1 = _values_only(_k.bessel_j1, "bessel_j1", "Bessel J1" + _SCIPY)
bessel_y0 = _values_only(_k.bessel_y0, "bessel_y0", "Bessel Y0" + _SCIPY)
bessel_y1 = _values_only(_k.bessel_y1, "bessel_y1", "Bessel Y1" + _SCIPY)
modified_bessel_k0 = _values_only(_k.modified_bessel_k0, "modified_bessel_k0",
                                  "Modified Bessel K0" + _SCIPY)
modified_bessel_k1 = _values_only(_k.modified_bessel_k1, "modified_bessel_k1",
                                  "Modified Bessel K1" + _SCIPY)
scaled_modified_bessel_k0 = _values_only(_k.scaled_modified_bessel_k0,
                                         "scaled_modified_bessel_k0",
                                         "exp(x) K0(x)" + _SCIPY)
scaled_modified_bessel_k1 = _values_only(_k.scaled_modified_bessel_k1,
                                         "scaled_modified_bessel_k1",
                                         "exp(x) K1(x)" + _SCIPY)
airy_ai = _values_only(_k.airy_ai, "airy_ai", "Airy's Ai" + _SCIPY)
modified_bessel_i0 = _values_only(lambda v: _k.bessel_i(v, 0, False), "modified_bessel_i0",
                                  "Modified Bessel I0 (as ``i0``); not differentiable, as in "
                                  "torch.")
modified_bessel_i1 = _values_only(lambda v: _k.bessel_i(v, 1, False), "modified_bessel_i1",
                                  "Modified Bessel I1 (as ``special.i1``); not "
                                  "differentiable, as in torch.")
spherical_bessel_j0 = _values_only(_k.spherical_bessel_j0, "spherical_bessel_j0",
                                   "sin(x) / x; not differentiable, as in torch.")


def _polynomial(kind: str):
    """``torch.special.<kind>_polynomial_<letter>(input, n)``: input or n may be a number."""
    name = f"special_{kind}"
    kernel = kind.replace("_polynomial", "")

    def fn(input, n, *, out=None) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise _invalid_combination(name, (input, n), [
                "Tensor x, Tensor n, *, Tensor out = None",
                "Number x, Tensor n, *, Tensor out = None",
                "Tensor x, Number n, *, Tensor out = None"])
        a, b = promote(input, n, True)
        xp = xp_of(a, b)
        dt = a.dtype if isinstance(input, Tensor) else b.dtype
        a, b = (xp.asarray(v, dtype=host.float64) for v in (a, b))
        with ignore_all():
            result = _k.orthogonal_polynomial(kernel, a, b).astype(dt, copy=False)
        return _maybe_out(_make(result), out)

    fn.__name__ = fn.__qualname__ = kind
    fn.__doc__ = (f"``torch.special.{kind}``: torch's recurrence and special values, in float64 "
                  "and rounded to the result dtype; not differentiable, as in torch.")
    return fn


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _polynomial("hermite_polynomial_h")
hermite_polynomial_he = _polynomial("hermite_polynomial_he")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l")
legendre_polynomial_p = _polynomial("legendre_polynomial_p")
