"""The op table: one ``OpCase`` per op (or per calling form), feeding every op test.

Adding an op means adding one entry. An entry's ``fn(m, *inputs, **kwargs)`` is written once
and run twice, with ``m`` = ember and ``m`` = torch: ember follows torch's API, so the same
lambda is the spec for both. Samples list the inputs:

* a shape tuple, e.g. ``(3, 4)``: a random tensor drawn from the entry's domain;
* ``nc(3, 4)``: a non-contiguous (transposed) tensor of that shape; ``st(3, 4)``: a strided
  one (every other element of the last dim);
* a NumPy array: those exact values (float arrays take the tested dtype; bool and integer
  arrays, e.g. masks, keep theirs);
* anything else (a Python number, None): passed through as is.

Keyword arguments of a sample go to ``fn`` as keywords. This module does not import torch.
Tensor inputs are made on the module's default device (``EMBER_TEST_DEVICE=strict`` runs the
table on the strict backend); results are compared through ``.detach().cpu().numpy()``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

FLOAT = ("float32", "float64")
F32 = ("float32",)
NUMERIC = ("float32", "float64", "int64")
ALL_INT = ("int64", "int32", "uint8")

# --------------------------------------------------------------------------- input specs


def uniform(rng, shape, dtype):
    """Default domain: floats in [-2, 2), integers in [-5, 5] (unsigned: [0, 9])."""
    if dtype.kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    low = 0 if dtype.kind == "u" else -5
    return rng.integers(low, low + 10, shape).astype(dtype)


def positive(rng, shape, dtype):
    """Away from 0 and positive: for log, sqrt, pow bases."""
    if dtype.kind == "f":
        return rng.uniform(0.5, 2, shape).astype(dtype)
    return rng.integers(1, 6, shape).astype(dtype)


def nonzero(rng, shape, dtype):
    """Away from 0, either sign: for divisors and reciprocals."""
    sign = np.where(rng.random(shape) > 0.5, 1, -1)
    if dtype.kind == "f":
        return (sign * rng.uniform(0.5, 2, shape)).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(1, 6, shape).astype(dtype)
    return (sign * rng.integers(1, 6, shape)).astype(dtype)


def distinct(rng, shape, dtype):
    """Well-separated values of distinct magnitudes, random signs: no ties in x or |x|."""
    n = int(np.prod(shape))
    vals = (rng.permutation(n) + 1).reshape(shape)
    if dtype.kind != "u":
        vals = vals * np.where(rng.random(shape) > 0.5, 1, -1)
    return (vals * 0.25 if dtype.kind == "f" else vals).astype(dtype)


@dataclass(frozen=True)
class Spec:
    """A tensor input: shape, layout ('c' contiguous, 'T' transposed, 'step' strided)."""

    shape: tuple
    layout: str = "c"
    domain: Callable | None = None

    def base_shape(self) -> tuple:
        s = self.shape
        if self.layout == "T":
            return s[:-2] + (s[-1], s[-2])
        if self.layout == "step":
            return s[:-1] + (2 * s[-1],)
        return s

    def view(self, base):
        """This layout's view of ``base`` (an array or a tensor)."""
        if self.layout == "T":
            return base.swapaxes(-1, -2)
        if self.layout == "step":
            return base[..., ::2]
        return base


def nc(*shape, domain=None) -> Spec:
    """A transposed, non-contiguous tensor of ``shape`` (needs at least 2 dims)."""
    return Spec(tuple(shape), "T", domain)


def st(*shape, domain=None) -> Spec:
    """A strided, non-contiguous tensor of ``shape`` (every other element of the last dim)."""
    return Spec(tuple(shape), "step", domain)


@dataclass
class S:
    """One sample: positional inputs (specs, arrays or plain values) and keyword arguments."""

    args: tuple
    kwargs: dict
    gradcheck: bool = True  # False for samples at kinks or ties (finite differences lie there)
    domain: Callable | None = None  # overrides the entry's domain for this sample

    def __init__(self, *args, gradcheck: bool = True, domain: Callable | None = None, **kwargs):
        self.args, self.kwargs, self.gradcheck, self.domain = args, kwargs, gradcheck, domain


@dataclass
class OpCase:
    """One op (or one calling form of it), the same lambda run on ember and on torch.

    name       test id
    fn         ``fn(m, *inputs, **kwargs)`` with ``m`` the module (ember or torch)
    samples    list of ``S``
    dtypes     dtypes the value tests run in (integer ones check forward and promotion only)
    grad       differentiable: compare gradients with torch and run gradcheck
    gradcheck  run gradcheck (in float64) on the samples that allow it
    gradgrad   run gradgradcheck too
    domain     default value generator for random inputs (``uniform``, ``positive``, ...)
    node       False to skip the grad_fn name check (otherwise it must equal torch's)
    """

    name: str
    fn: Callable
    samples: list
    dtypes: tuple = F32
    grad: bool = True
    gradgrad: bool = True
    domain: Callable = uniform
    node: bool = True
    gradcheck: bool = True
    grad_args: tuple | None = None  # positions of inputs that require grad (default: all float)
    note: str = field(default="", repr=False)

    def seed(self, i: int) -> int:
        return zlib.crc32(f"{self.name}/{i}".encode())


@dataclass
class Input:
    """A materialised tensor input: its values (``base``) and the view taken of them."""

    base: np.ndarray
    spec: Spec

    def tensor(self, m, requires_grad: bool = False):
        """A fresh tensor of module ``m`` (ember or torch) with this input's values and strides,
        on ``m``'s default device (the base is copied there and the same view taken of it)."""
        t = m.from_numpy(self.spec.view(self.base.copy()))
        device = m.get_default_device()
        if t.device != device:
            t = self.spec.view(m.from_numpy(self.base.copy()).to(device)).detach()
        return t.requires_grad_() if requires_grad else t


def materialize(case: OpCase, i: int, sample: S, dtype: str) -> list:
    """An ``Input`` or the plain value for each positional input of sample ``i``."""
    rng = np.random.default_rng(case.seed(i))
    np_dtype = np.dtype(dtype)
    out = []
    for a in sample.args:
        if isinstance(a, tuple) and all(isinstance(s, int) for s in a):
            a = Spec(a)
        if isinstance(a, Spec):
            dom = a.domain or sample.domain or case.domain
            out.append(Input(np.asarray(dom(rng, a.base_shape(), np_dtype)), a))
        elif isinstance(a, np.ndarray):
            arr = a.astype(np_dtype) if a.dtype.kind == "f" else a
            out.append(Input(arr, Spec(arr.shape)))
        else:
            out.append(a)
    return out


# --------------------------------------------------------------------------- shared sample sets

UNARY = [S((3, 4)), S(()), S((0, 3)), S(nc(3, 4)), S(st(2, 3)), S((2, 1, 3))]

BINARY = [
    S((3, 4), (3, 4)),
    S((3, 4), (4,)),          # broadcast the trailing dims
    S((2, 1, 4), (3, 1)),     # both sides broadcast
    S((), (3, 4)),            # 0-d tensor with a matrix
    S((3, 4), ()),
    S(nc(3, 4), (3, 4)),      # non-contiguous inputs
    S((3, 4), st(3, 4)),
    S((0, 3), (3,)),          # empty
    S((), ()),
]

WITH_SCALAR = [S((3, 4), 2.5), S((3, 4), -2), S((), 0.5), S(nc(3, 4), 1.5)]
SCALAR_FIRST = [S(2.5, (3, 4)), S(-2, (3, 4)), S(1.5, nc(3, 4)), S(0.5, ())]

TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 0.5, 2.0], [0.0, -4.0, -4.0, 0.0]])
KINKS = np.array([[-1.0, 0.0, 1.0, 0.5], [0.0, 2.0, -0.5, 1.0]])


def reduction_samples(with_dims=True):
    samples = [S((3, 4)), S(nc(3, 4)), S(()), S((2, 3, 4))]
    if with_dims:
        samples += [
            S((3, 4), dim=0), S((3, 4), dim=-1), S((3, 4), dim=1, keepdim=True),
            S((2, 3, 4), dim=(0, 2)), S((2, 3, 4), dim=(-1, 0), keepdim=True),
            S(st(2, 3, 4), dim=1), S((), dim=0), S((0, 3), dim=1),
        ]
    return samples


# --------------------------------------------------------------------------- the table

OPS: list[OpCase] = [
    # ---- binary arithmetic
    OpCase("add", lambda m, x, y: m.add(x, y), BINARY, NUMERIC + ("float16", "int32")),
    OpCase("add_alpha", lambda m, x, y: m.add(x, y, alpha=2), BINARY[:4], NUMERIC),
    OpCase("add_alpha_float", lambda m, x, y: x.add(y, alpha=-0.5), BINARY[:3]),
    OpCase("add_scalar", lambda m, x, y: x + y, WITH_SCALAR, NUMERIC),
    OpCase("radd", lambda m, x, y: x + y, SCALAR_FIRST, NUMERIC),
    OpCase("sub", lambda m, x, y: m.sub(x, y), BINARY, NUMERIC),
    OpCase("sub_alpha", lambda m, x, y: x.sub(y, alpha=3), BINARY[:4], NUMERIC),
    OpCase("sub_scalar", lambda m, x, y: x - y, WITH_SCALAR, NUMERIC),
    OpCase("rsub_operator", lambda m, x, y: x - y, SCALAR_FIRST, NUMERIC),
    OpCase("rsub", lambda m, x, y: m.rsub(x, y), BINARY[:4] + WITH_SCALAR[:2], NUMERIC),
    OpCase("rsub_alpha", lambda m, x, y: m.rsub(x, y, alpha=2), BINARY[:3] + WITH_SCALAR[:1]),
    OpCase("mul", lambda m, x, y: m.mul(x, y), BINARY, NUMERIC + ("float16", "uint8")),
    OpCase("multiply", lambda m, x, y: x.multiply(y), BINARY[:2], F32),
    OpCase("subtract", lambda m, x, y: m.subtract(x, y, alpha=2), BINARY[:2], F32),
    OpCase("mul_scalar", lambda m, x, y: x * y, WITH_SCALAR, NUMERIC),
    OpCase("rmul", lambda m, x, y: x * y, SCALAR_FIRST, NUMERIC),
    OpCase("div", lambda m, x, y: m.div(x, y), BINARY, NUMERIC + ("float16",),
           domain=nonzero),
    OpCase("true_divide", lambda m, x, y: m.true_divide(x, y), BINARY[:2], ("int64",),
           domain=nonzero),
    OpCase("divide", lambda m, x, y: x.divide(y), BINARY[:2], F32, domain=nonzero),
    OpCase("div_scalar", lambda m, x, y: x / y, WITH_SCALAR, NUMERIC, domain=nonzero),
    OpCase("rdiv", lambda m, x, y: x / y, SCALAR_FIRST, NUMERIC, domain=nonzero),
    # rounded division is piecewise constant: its gradient is 0 (as torch records it)
    OpCase("div_trunc", lambda m, x, y: m.div(x, y, rounding_mode="trunc"),
           BINARY[:4] + WITH_SCALAR[:2], NUMERIC, domain=nonzero),
    OpCase("div_floor", lambda m, x, y: x.div(y, rounding_mode="floor"),
           BINARY[:4] + WITH_SCALAR[:2], NUMERIC, domain=nonzero),
    # torch records floor_divide as not differentiable (grad_fn NotImplemented): values only
    OpCase("floor_divide", lambda m, x, y: x // y, BINARY[:4] + WITH_SCALAR[:2], NUMERIC,
           domain=nonzero, grad=False, node=False),
    OpCase("rfloor_divide", lambda m, x, y: x // y, SCALAR_FIRST[:2], NUMERIC, domain=nonzero,
           grad=False, node=False),
    # ---- powers
    OpCase("pow_scalar", lambda m, x, e: x ** e,
           [S((3, 4), 2), S((3, 4), 3), S(nc(3, 4), 2.0), S((), 2), S((0, 2), 2),
            S((3, 4), 0), S((3, 4), 1)], NUMERIC),
    OpCase("pow_scalar_fractional", lambda m, x, e: m.pow(x, e),
           [S((3, 4), 0.5), S((3, 4), -1.5), S((3, 4), -2), S((), 2.5)], domain=positive),
    OpCase("pow_int_float_exponent", lambda m, x, e: x ** e, [S((3, 4), 0.5)], ("int64",),
           domain=positive),
    OpCase("pow_tensor", lambda m, x, e: m.pow(x, e), BINARY[:7], FLOAT, domain=positive),
    OpCase("pow_tensor_int", lambda m, x, e: x ** e, [S((3, 4), (3, 4))], ("int64",),
           domain=positive),
    # 0 ** e: torch masks the exponent's gradient (0 * log 0) and the base's where e == 0
    OpCase("pow_tensor_zero_base", lambda m, x, e: x ** e,
           [S(np.array([0.0, 0.0, 0.0, 2.0, 1.5]), np.array([0.0, 1.0, 2.0, 0.0, 0.5]),
              gradcheck=False)], FLOAT),
    OpCase("rpow", lambda m, x, e: x ** e, [S(2, (3, 4)), S(2.5, nc(3, 4)), S(0.5, ())],
           NUMERIC),
    OpCase("rpow_zero_base", lambda m, x, e: x ** e,
           [S(0, np.array([-1.0, 0.0, 2.0]), gradcheck=False), S(-2.0, (3,), gradcheck=False)],
           FLOAT),
    # ---- unary
    OpCase("neg", lambda m, x: -x, UNARY, NUMERIC),
    OpCase("neg_fn", lambda m, x: m.neg(x), UNARY[:2], NUMERIC),
    OpCase("exp", lambda m, x: m.exp(x), UNARY, NUMERIC + ("float16",)),
    OpCase("log", lambda m, x: x.log(), UNARY, NUMERIC, domain=positive),
    OpCase("sqrt", lambda m, x: m.sqrt(x), UNARY, NUMERIC, domain=positive),
    OpCase("sin", lambda m, x: m.sin(x), UNARY, NUMERIC),
    OpCase("cos", lambda m, x: x.cos(), UNARY, NUMERIC),
    OpCase("tanh", lambda m, x: m.tanh(x), UNARY, NUMERIC),
    OpCase("sigmoid", lambda m, x: x.sigmoid(), UNARY + [S(np.array([-100.0, 100.0, 0.0]))],
           NUMERIC),
    OpCase("relu", lambda m, x: m.relu(x), UNARY + [S(KINKS, gradcheck=False)], NUMERIC),
    OpCase("abs", lambda m, x: x.abs(), UNARY + [S(KINKS, gradcheck=False)], NUMERIC),
    OpCase("abs_operator", lambda m, x: abs(x), UNARY[:1], NUMERIC),
    # sign is piecewise constant: its gradient is 0 and its second derivative is 0 too
    OpCase("sign", lambda m, x: m.sign(x), UNARY + [S(KINKS, gradcheck=False)], NUMERIC),
    OpCase("square", lambda m, x: m.square(x), UNARY, NUMERIC),
    OpCase("reciprocal", lambda m, x: x.reciprocal(), UNARY, NUMERIC, domain=nonzero),
    # ---- clamp
    OpCase("clamp_scalar", lambda m, x, **kw: m.clamp(x, **kw),
           [S((3, 4), min=-0.5, max=0.5), S(nc(3, 4), min=-1.0, max=1.0), S((), min=0.0, max=1.0),
            S((3, 4), min=1.0, max=-1.0), S(KINKS, min=0.0, max=1.0, gradcheck=False),
            S((3, 4), min=-1, max=1)], NUMERIC),
    OpCase("clamp_min_only", lambda m, x, **kw: x.clamp(**kw),
           [S((3, 4), min=0.0), S((0, 2), min=0.5), S((3, 4), min=-1)], NUMERIC),
    OpCase("clamp_max_only", lambda m, x, **kw: m.clamp(x, **kw),
           [S((3, 4), max=0.0), S(st(2, 3), max=0.5), S((3, 4), max=1)], NUMERIC),
    OpCase("clip", lambda m, x: m.clip(x, -0.5, 0.5), UNARY[:2], NUMERIC),
    OpCase("clamp_int_float_bounds", lambda m, x: x.clamp(-1.5, 2.5), [S((3, 4))], ("int64",)),
    OpCase("clamp_tensor", lambda m, x, lo, hi: m.clamp(x, lo, hi),
           [S((3, 4), (3, 4), (3, 4)), S((3, 4), (4,), ()), S(nc(3, 4), (3, 1), (1, 4)),
            S(np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 1.0, 3.0, 1.0]),
              np.array([2.0, 2.0, 2.0, 3.0]), gradcheck=False)], NUMERIC),
    OpCase("clamp_tensor_min_only", lambda m, x, lo: x.clamp(min=lo),
           [S((3, 4), (3, 4)), S((3, 4), (4,)), S((), (3, 4))], NUMERIC),
    OpCase("clamp_tensor_max_only", lambda m, x, hi: m.clamp(x, max=hi),
           [S((3, 4), (3, 4)), S((3, 4), ()), S(st(3, 4), (3, 1))], NUMERIC),
    OpCase("clamp_min", lambda m, x: x.clamp_min(0.25), UNARY[:3], NUMERIC),
    OpCase("clamp_max", lambda m, x: m.clamp_max(x, 0.25), UNARY[:3], NUMERIC),
    OpCase("clamp_min_tensor", lambda m, x, y: x.clamp_min(y), BINARY[:3], NUMERIC),
    OpCase("clamp_max_tensor", lambda m, x, y: m.clamp_max(x, y), BINARY[:3], NUMERIC),
    # ---- maximum / minimum / where
    OpCase("maximum", lambda m, x, y: m.maximum(x, y),
           BINARY + [S(TIES[0], TIES[1], gradcheck=False)], NUMERIC),
    OpCase("minimum", lambda m, x, y: x.minimum(y),
           BINARY + [S(TIES[1], TIES[2], gradcheck=False)], NUMERIC),
    OpCase("max_binary", lambda m, x, y: m.max(x, y), BINARY[:3]),
    OpCase("min_binary", lambda m, x, y: m.min(x, y), BINARY[:3]),
    OpCase("where", lambda m, c, x, y: m.where(c, x, y),
           [S(np.array([[True, False, True, False]] * 3), (3, 4), (3, 4)),
            S(np.array([True, False, True, False]), (3, 1), (2, 3, 4)),
            S(np.array(True), (3, 4), ()),
            S(np.array([[True], [False], [True]]), nc(3, 4), (4,))], NUMERIC),
    OpCase("where_scalar_other", lambda m, c, x: m.where(c, x, 0.0),
           [S(np.array([True, False, True]), (2, 3))], NUMERIC),
    OpCase("where_scalar_input", lambda m, c, y: m.where(c, 1.5, y),
           [S(np.array([True, False, True]), (2, 3))], NUMERIC),
    OpCase("where_method", lambda m, c, x, y: x.where(c, y),
           [S(np.array([True, False, True]), (2, 3), (3,))], F32),
    # ---- reductions
    OpCase("sum", lambda m, x, **kw: m.sum(x, **kw),
           reduction_samples() + [S((0, 3)), S((3, 4), dim=())], NUMERIC + ("bool",)),
    OpCase("sum_half", lambda m, x, **kw: x.sum(**kw), [S((3, 4)), S((3, 4), dim=1)],
           ("float16",)),
    OpCase("sum_method_dims", lambda m, x: x.sum((0, -1)), [S((2, 3, 4))], NUMERIC),
    OpCase("sum_dtype", lambda m, x: m.sum(x, 0, dtype=m.float64), [S((3, 4))], NUMERIC),
    OpCase("mean", lambda m, x, **kw: x.mean(**kw),
           reduction_samples() + [S((0, 3))], FLOAT),
    OpCase("mean_dtype", lambda m, x: m.mean(x, dtype=m.float64), [S((3, 4))], ("int64",) + F32),
    OpCase("norm", lambda m, x, **kw: x.norm(**kw),
           reduction_samples() + [S(np.zeros((2, 3)), gradcheck=False)]),
    OpCase("norm_p1", lambda m, x, **kw: m.norm(x, 1, **kw),
           [S((3, 4)), S((3, 4), dim=1), S(nc(3, 4), dim=0, keepdim=True)]),
    OpCase("norm_inf", lambda m, x, **kw: m.norm(x, float("inf"), **kw),
           [S((3, 4), domain=distinct), S((3, 4), dim=1, domain=distinct),
            S(TIES, gradcheck=False), S(TIES, dim=1, gradcheck=False)]),
    OpCase("norm_neg_inf", lambda m, x, **kw: m.norm(x, float("-inf"), **kw),
           [S((3, 4), domain=distinct), S((3, 4), dim=0, domain=distinct)]),
    OpCase("norm_p3", lambda m, x, **kw: x.norm(3, **kw),
           [S((3, 4)), S((2, 3, 4), dim=(0, 1)), S((3, 4), dim=-1, keepdim=True)]),
    OpCase("norm_p0", lambda m, x, **kw: x.norm(0, **kw),
           [S(KINKS, gradcheck=False), S(KINKS, dim=1, gradcheck=False)]),
    OpCase("norm_dim_fro", lambda m, x: m.norm(x, dim=(0, 1)), [S((3, 4)), S(nc(3, 4))]),
    OpCase("max_full", lambda m, x: m.max(x),
           [S((3, 4), domain=distinct), S((), domain=distinct), S(TIES, gradcheck=False)],
           NUMERIC),
    OpCase("min_full", lambda m, x: x.min(),
           [S((3, 4), domain=distinct), S(nc(3, 4), domain=distinct),
            S(TIES, gradcheck=False)], NUMERIC),
    OpCase("max_dim", lambda m, x, **kw: m.max(x, **kw),
           [S((3, 4), dim=0, domain=distinct), S((3, 4), dim=-1, keepdim=True, domain=distinct),
            S((), dim=0, domain=distinct), S(nc(3, 4), dim=1, domain=distinct),
            S(TIES, dim=1, gradcheck=False)], NUMERIC),
    OpCase("min_dim", lambda m, x, d: x.min(d),
           [S((2, 3, 4), 1, domain=distinct), S((3, 4), -2, domain=distinct),
            S(TIES, 1, gradcheck=False)], NUMERIC),
    OpCase("amax", lambda m, x, **kw: m.amax(x, **kw),
           [S((3, 4), dim=0, domain=distinct), S((2, 3, 4), dim=(0, 2), domain=distinct),
            S((3, 4), dim=1, keepdim=True, domain=distinct), S((3, 4), domain=distinct),
            S(TIES, dim=1, gradcheck=False), S(TIES, gradcheck=False), S((), dim=0),
            S((3, 4), dim=()), S((0, 3)), S((0, 3), dim=1)], NUMERIC),
    OpCase("amin", lambda m, x, **kw: x.amin(**kw),
           [S((3, 4), dim=-1, domain=distinct), S((2, 3, 4), dim=(1, 0), keepdim=True,
                                                  domain=distinct),
            S(TIES, dim=0, gradcheck=False), S((0, 3), dim=1), S((0, 3), dim=0)], NUMERIC),
    OpCase("argmax", lambda m, x, **kw: m.argmax(x, **kw),
           [S((3, 4), domain=distinct), S((3, 4), dim=1), S((3, 4), dim=0, keepdim=True),
            S((), dim=0), S(TIES), S(TIES, dim=1)], NUMERIC, grad=False),
    OpCase("argmin", lambda m, x, **kw: x.argmin(**kw),
           [S((3, 4), domain=distinct), S((2, 3, 4), dim=-1), S(TIES, dim=0)], NUMERIC,
           grad=False),
    OpCase("all", lambda m, x, **kw: m.all(x, **kw),
           [S((3, 4)), S((3, 4), dim=1), S((3, 4), dim=0, keepdim=True), S((0, 2)),
            S(np.array([[True, True], [False, True]]), dim=1)], NUMERIC + ("bool", "uint8"),
           grad=False),
    OpCase("any", lambda m, x, **kw: x.any(**kw),
           [S(np.zeros((2, 3))), S((3, 4), dim=1), S((2, 3, 4), dim=-1, keepdim=True),
            S(np.array([[False, False], [False, True]]), dim=0)], NUMERIC + ("bool", "uint8"),
           grad=False),
    # ---- matrix products
    OpCase("matmul", lambda m, a, b: m.matmul(a, b),
           [S((4,), (4,)), S((3, 4), (4,)), S((3, 4), (4, 2)), S(nc(3, 4), nc(4, 2)),
            S((0, 4), (4, 2))]),
    # torch folds batched, broadcast and 1-d @ n-d matmul into mm or bmm plus views, so its
    # node names (UnsafeViewBackward0, SqueezeBackward4) name the fold: ember has one node
    OpCase("matmul_batched", lambda m, a, b: a @ b,
           [S((4,), (4, 2)), S((2, 3, 4), (2, 4, 5)), S((2, 3, 4), (4, 2)), S((3, 4), (2, 4, 5)),
            S((2, 3, 4), (4,)), S((4,), (2, 4, 3)), S((2, 1, 3, 4), (5, 4, 2)),
            S(nc(2, 3, 4), (1, 4, 2)), S((0, 3, 4), (4, 2)), S(st(4), nc(2, 4, 3))],
           node=False),
    OpCase("mm", lambda m, a, b: m.mm(a, b), [S((3, 4), (4, 2)), S(nc(3, 4), st(4, 2)),
                                              S((0, 4), (4, 2))]),
    OpCase("mv", lambda m, a, v: a.mv(v), [S((3, 4), (4,)), S(nc(3, 4), st(4))]),
    OpCase("dot", lambda m, a, b: m.dot(a, b), [S((4,), (4,)), S(st(5), (5,)), S((0,), (0,))]),
    OpCase("bmm", lambda m, a, b: m.bmm(a, b), [S((2, 3, 4), (2, 4, 5)), S(nc(2, 3, 4),
                                                                         (2, 4, 1))]),
    OpCase("matmul_int", lambda m, a, b: a @ b, [S((3, 4), (4, 2)), S((2, 3, 4), (4,))],
           ("int64",), node=False),
    # ---- views and shape ops
    OpCase("view", lambda m, x, **kw: x.view(*kw["shape"]),
           [S((3, 4), shape=(12,)), S((3, 4), shape=(-1, 2)), S((), shape=(1, 1)),
            S((0, 3), shape=(3, 0)), S(st(2, 3), shape=(2, 3))], NUMERIC),
    OpCase("reshape", lambda m, x, **kw: m.reshape(x, kw["shape"]),
           [S((3, 4), shape=(2, 6)), S(nc(3, 4), shape=(12,)), S(st(2, 3), shape=(-1,)),
            S((), shape=(1,))], NUMERIC),
    OpCase("flatten", lambda m, x, **kw: m.flatten(x, **kw),
           [S((2, 3, 4)), S((2, 3, 4), start_dim=1), S((2, 3, 4), end_dim=-2), S(()),
            S(nc(3, 4)), S((2, 3, 4), start_dim=1, end_dim=1)], NUMERIC),
    OpCase("unflatten", lambda m, x: x.unflatten(-1, (2, -1)), [S((3, 4)), S(nc(3, 4))]),
    OpCase("transpose", lambda m, x, d0, d1: m.transpose(x, d0, d1),
           [S((3, 4), 0, 1), S((2, 3, 4), -1, 0), S((2, 3, 4), 1, 1)], NUMERIC),
    OpCase("t", lambda m, x: x.t(), [S((3, 4)), S((4,)), S(()), S(nc(3, 4))], NUMERIC),
    OpCase("T", lambda m, x: x.T, [S((3, 4)), S((4,)), S(()), S((2, 3, 4))], NUMERIC),
    OpCase("mT", lambda m, x: x.mT, [S((3, 4)), S((2, 3, 4))], NUMERIC),
    OpCase("permute", lambda m, x: x.permute(2, 0, 1), [S((2, 3, 4)), S(st(2, 3, 4))], NUMERIC),
    OpCase("permute_fn", lambda m, x: m.permute(x, (-1, 0)), [S((3, 4))], NUMERIC),
    OpCase("squeeze", lambda m, x, **kw: x.squeeze(**kw),
           [S((1, 3, 1, 4)), S((1, 3, 1, 4), dim=2), S((1, 3, 1, 4), dim=1),
            S((1, 3, 1, 4), dim=(0, 2)), S((1, 3, 1, 4), dim=(-1, 0)), S(()), S((), dim=0),
            S((1, 1))], NUMERIC),
    OpCase("unsqueeze", lambda m, x, d: m.unsqueeze(x, d),
           [S((3, 4), 0), S((3, 4), -1), S((), 0), S(nc(3, 4), 1)], NUMERIC),
    OpCase("expand", lambda m, x, **kw: x.expand(*kw["shape"]),
           [S((3, 1), shape=(3, 4)), S((4,), shape=(2, 3, 4)), S((), shape=(2, 2)),
            S((3, 1), shape=(-1, 5)), S(st(1, 3), shape=(2, 2, 3))], NUMERIC),
    OpCase("view_as", lambda m, x, y: x.view_as(y), [S((3, 4), (2, 6))], F32, grad_args=(0,)),
    OpCase("reshape_as", lambda m, x, y: x.reshape_as(y), [S(nc(3, 4), (12,))], F32,
           grad_args=(0,)),
    OpCase("swapaxes", lambda m, x: x.swapaxes(0, -1), [S((2, 3, 4))], F32),
    OpCase("swapdims", lambda m, x: m.swapdims(x, 1, 0), [S((2, 3))], F32),
    OpCase("moveaxis", lambda m, x: x.moveaxis(0, -1), [S((2, 3, 4))], F32),
    OpCase("broadcast_tensors", lambda m, x, y: m.broadcast_tensors(x, y),
           [S((3, 1), (4,)), S((), (2, 3))], F32),
    OpCase("expand_as", lambda m, x, y: x.expand_as(y), [S((3, 1), (2, 3, 4))], F32,
           grad_args=(0,)),
    OpCase("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3)), [S((3,)), S(())], F32),
    OpCase("movedim", lambda m, x, **kw: m.movedim(x, **kw),
           [S((2, 3, 4), source=0, destination=2), S((2, 3, 4), source=-1, destination=0),
            S((2, 3, 4), source=(0, 1), destination=(2, 0))], NUMERIC),
    OpCase("clone", lambda m, x: m.clone(x), UNARY, NUMERIC),
    OpCase("contiguous", lambda m, x: x.contiguous(), [S((3, 4)), S(nc(3, 4)), S(st(2, 3))],
           NUMERIC),
    OpCase("to_float64", lambda m, x: x.to(m.float64), UNARY[:4], ("float32", "int64")),
    # finite differences (eps 1e-6) drown in float32 / float16 rounding: compare with torch only
    OpCase("to_float32", lambda m, x: x.to(dtype=m.float32), UNARY[:2], ("float64", "float32"),
           gradcheck=False),
    OpCase("to_float16", lambda m, x: x.to(m.float16), UNARY[:2], F32, gradcheck=False),
    OpCase("to_int", lambda m, x: x.to(m.int64), UNARY[:2], FLOAT, grad=False),
    # ---- indexing
    OpCase("index_int", lambda m, x: x[1], [S((3, 4)), S(nc(3, 4)), S((3,))], NUMERIC),
    OpCase("index_negative", lambda m, x: x[-1, -2], [S((3, 4))], NUMERIC),
    OpCase("index_slice", lambda m, x: x[1:3], [S((4, 2)), S(st(4, 3))], NUMERIC),
    OpCase("index_slice_step", lambda m, x: x[::2, 1::2], [S((5, 6)), S(nc(5, 6))], NUMERIC),
    OpCase("index_slice_negative", lambda m, x: x[-3:-1, :-1], [S((4, 3))], NUMERIC),
    OpCase("index_slice_full", lambda m, x: x[:], [S((3, 4))], NUMERIC),
    OpCase("index_none", lambda m, x: x[None], [S((3, 4)), S(())], NUMERIC),
    OpCase("index_ellipsis", lambda m, x: x[...], [S((3, 4))], NUMERIC),
    OpCase("index_ellipsis_int", lambda m, x: x[..., 1], [S((2, 3, 4))], NUMERIC),
    OpCase("index_mixed_basic", lambda m, x: x[:, None, 1:, 0], [S((2, 3, 4))], NUMERIC),
    OpCase("index_list_repeats", lambda m, x: x[[0, 2, 0, 0]], [S((3, 4)), S(nc(3, 4))],
           NUMERIC),
    OpCase("index_tensor_repeats", lambda m, x: x[m.tensor([[2, 0], [2, 2]])], [S((3, 4))],
           NUMERIC),
    OpCase("index_two_lists", lambda m, x: x[[0, 1, 1], [3, 3, 0]], [S((3, 4))], NUMERIC),
    OpCase("index_slice_and_list", lambda m, x: x[1:, [0, 2, 2]], [S((3, 4))], NUMERIC),
    OpCase("index_lists_apart", lambda m, x: x[[0, 1], :, [1, 1]], [S((2, 3, 4))], NUMERIC),
    OpCase("index_ellipsis_list", lambda m, x: x[..., [0, 0, 3]], [S((2, 3, 4))], NUMERIC),
    OpCase("index_bool_mask", lambda m, x: x[x > 0], [S((3, 4)), S(nc(3, 4))], NUMERIC),
    OpCase("index_bool_row_mask", lambda m, x: x[m.tensor([True, False, True])],
           [S((3, 4))], NUMERIC),
    OpCase("index_bool_list_cols", lambda m, x: x[:, [True, False, False, True]],
           [S((3, 4))], NUMERIC),
    OpCase("index_empty_list", lambda m, x: x[[]], [S((3, 4))], NUMERIC),
    OpCase("index_true", lambda m, x: x[True], [S((3, 4)), S(())], NUMERIC),
    OpCase("index_0d_tensor", lambda m, x: x[m.tensor(1)], [S((3, 4))], NUMERIC),
    OpCase("index_none_and_list", lambda m, x: x[None, [0, 1], None], [S((3, 4))], NUMERIC),
    OpCase("index_int_and_list", lambda m, x: x[1, [0, 0, 2]], [S((2, 3, 4))], NUMERIC),
    OpCase("masked_fill", lambda m, x, mask: x.masked_fill(mask, -1.5),
           [S((3, 4), np.array([True, False, False, True])),
            S(nc(3, 4), np.array([[True], [False], [True]])), S((), np.array(True))],
           NUMERIC),
    OpCase("index_put", lambda m, x, v: x.index_put((m.tensor([0, 2]),), v),
           [S((3, 4), (4,)), S((3, 4), (2, 4)), S((3, 4), ())], FLOAT),
    OpCase("index_put_mask", lambda m, x, v: m.index_put(x, (x > 0,), v), [S((3, 4), ())],
           FLOAT),
    OpCase("masked_fill_fn", lambda m, x, mask: m.masked_fill(x, mask, 2),
           [S((3, 4), np.array([True, False, False, True]))], NUMERIC),
    # a 0-d tensor value gets its gradient too: the sum of grad over the masked positions
    OpCase("masked_fill_tensor_value", lambda m, x, mask, v: x.masked_fill(mask, v),
           [S((3, 4), np.array([True, False, False, True]), ()),
            S((2, 3), np.zeros(3, dtype=bool), ())], FLOAT),
    OpCase("unbind", lambda m, x, **kw: m.unbind(x, **kw),
           [S((3, 4)), S((3, 4), dim=1), S((2, 3, 4), dim=-1), S((0, 2)), S((), gradcheck=False)],
           NUMERIC),
    OpCase("unbind_method", lambda m, x: x.unbind(0), [S(nc(3, 2)), S((1, 2)), S((3,))]),
    # only some outputs used: the others' gradients count as zeros
    OpCase("unbind_partial", lambda m, x: x.unbind(1)[1] * 2, [S((3, 4))]),
    OpCase("cat", lambda m, a, b, **kw: m.cat([a, b], **kw),
           [S((2, 4), (3, 4)), S((5, 4), (5, 2), dim=1), S((3,), (0,)), S((0, 3), (2, 3)),
            S(nc(3, 4), st(3, 2), dim=-1), S((2, 3), (2, 3), dim=-2)], NUMERIC),
    OpCase("concat_alias", lambda m, a, b: m.concat((a, b), dim=-1), [S((2, 3), (2, 1))], F32),
    OpCase("stack", lambda m, a, b, **kw: m.stack([a, b], **kw),
           [S((3, 4), (3, 4)), S((3, 4), nc(3, 4), dim=1), S((), (), dim=-1),
            S((2, 3), (2, 3), dim=-1), S((3,), (4,), gradcheck=False)], NUMERIC),
]

# ---- comparisons, logic and bits: forward only (bool or integer results, no gradients)
_CMP_SAMPLES = [S((3, 4), (3, 4)), S((3, 4), (4,)), S((3, 4), 0.5), S((), (2, 3)),
                S(TIES[0], TIES[1])]


def _function(name: str):
    """``m.name(x, y)`` for either module."""
    return lambda m, x, y: getattr(m, name)(x, y)


def _method(name: str):
    """``x.name(y)``, e.g. an operator's dunder."""
    return lambda m, x, y: getattr(x, name)(y)


OPS += [OpCase(n, _function(n), _CMP_SAMPLES, NUMERIC, grad=False)
        for n in ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                  "less_equal", "not_equal")]
OPS += [OpCase(f"operator_{n}", _method(f"__{n}__"), _CMP_SAMPLES[:3], NUMERIC, grad=False)
        for n in ("eq", "ne", "lt", "le", "gt", "ge")]

_BOOLS = [S(np.array([True, False, True, False]), np.array([True, True, False, False])),
          S(np.array([[True], [False]]), np.array([True, False, True]))]
OPS += [
    OpCase("logical_and", lambda m, x, y: m.logical_and(x, y),
           _BOOLS + [S((3, 4), (3, 4))], NUMERIC, grad=False),
    OpCase("logical_or", lambda m, x, y: x.logical_or(y), _BOOLS + [S((3, 4), (4,))],
           NUMERIC, grad=False),
    OpCase("logical_xor", lambda m, x, y: m.logical_xor(x, y), _BOOLS + [S((3, 4), (3, 4))],
           NUMERIC, grad=False),
    OpCase("logical_not", lambda m, x: m.logical_not(x),
           [S(np.array([True, False])), S((3, 4))], NUMERIC, grad=False),
    OpCase("bitwise_and", lambda m, x, y: m.bitwise_and(x, y),
           _BOOLS + [S((3, 4), (3, 4)), S((3, 4), 6)], ALL_INT, grad=False),
    OpCase("bitwise_or", lambda m, x, y: x | y, _BOOLS + [S((3, 4), (4,)), S((3, 4), 3)],
           ALL_INT, grad=False),
    OpCase("bitwise_xor", lambda m, x, y: x ^ y, _BOOLS + [S((3, 4), (3, 4))], ALL_INT,
           grad=False),
    OpCase("bitwise_not", lambda m, x: ~x, [S(np.array([True, False])), S((3, 4))], ALL_INT,
           grad=False),
    OpCase("bitwise_not_function", lambda m, x: m.bitwise_not(x), [S((3, 4)), S(nc(3, 4))],
           ALL_INT, grad=False),
    OpCase("bitwise_not_inplace", lambda m, x: x.clone().bitwise_not_(), [S((3, 4))], ALL_INT,
           grad=False),
    OpCase("rand_operator", lambda m, x, y: x & y, [S(True, np.array([True, False])),
                                                    S(3, (3,))], ("int64",), grad=False),
    OpCase("isnan", lambda m, x: m.isnan(x), [S(np.array([0.0, np.nan, np.inf, -np.inf]))],
           FLOAT, grad=False),
    OpCase("isinf", lambda m, x: x.isinf(), [S(np.array([0.0, np.nan, np.inf, -np.inf]))],
           FLOAT, grad=False),
    OpCase("isfinite", lambda m, x: m.isfinite(x),
           [S(np.array([0.0, np.nan, np.inf, -np.inf])), S((2, 3))], FLOAT, grad=False),
    OpCase("isfinite_int", lambda m, x: m.isfinite(x), [S((2, 3))], ALL_INT, grad=False),
    OpCase("isclose", lambda m, x, y: m.isclose(x, y), [S(TIES[0], TIES[1])], FLOAT,
           grad=False),
    OpCase("nonzero", lambda m, x: m.nonzero(x), [S(TIES), S(np.array([0.0, 1.0]))], NUMERIC,
           grad=False),
    OpCase("nonzero_as_tuple", lambda m, x: x.nonzero(as_tuple=True), [S(TIES), S(())],
           NUMERIC, grad=False),
    OpCase("where_one_arg", lambda m, x: m.where(x > 0), [S((3, 4))], F32, grad=False),
    OpCase("equal", lambda m, x, y: m.equal(x, y),
           [S(TIES, TIES), S(TIES[:1], TIES[1:2]), S((3,), (2,))], NUMERIC, grad=False),
    OpCase("allclose", lambda m, x, y: x.allclose(y), [S(TIES, TIES), S((3, 4), (3, 4))],
           FLOAT, grad=False),
]

# ---- refusals: torch raises on these samples, so ember must raise the same type and message
_BAD = S((3, 4), (2, 3))  # shapes that do not broadcast
OPS += [
    OpCase("refuse_add_broadcast", lambda m, x, y: x + y, [_BAD], grad=False),
    OpCase("refuse_compare_broadcast", lambda m, x, y: x < y, [_BAD], grad=False),
    OpCase("refuse_logical_broadcast", lambda m, x, y: m.logical_and(x, y), [_BAD],
           grad=False),
    OpCase("refuse_bitwise", lambda m, x, y: x & y, [_BAD, S((3,), (3,))], FLOAT + ("int64",),
           grad=False),
    OpCase("refuse_bitwise_not_float", lambda m, x: ~x, [S((3,))], FLOAT, grad=False),
    OpCase("refuse_where_broadcast", lambda m, c, x, y: m.where(c, x, y),
           [S(np.array([[True], [False], [True]]), (2, 3), (3, 4))], grad=False),
    OpCase("refuse_where_int_condition", lambda m, c, x: m.where(c, x, 0.0),
           [S(np.array([1, 0]), (2,))], grad=False),
    OpCase("refuse_clamp_broadcast", lambda m, x, lo: x.clamp(min=lo), [_BAD], grad=False),
    OpCase("refuse_clamp_no_bounds", lambda m, x: m.clamp(x), [S((3,))], grad=False),
    OpCase("refuse_masked_fill_broadcast", lambda m, x, mask: x.masked_fill(mask, 1.0),
           [S((3, 4), np.zeros((2, 3), dtype=bool))], grad=False),
    OpCase("refuse_masked_fill_mask_dtype", lambda m, x, mask: x.masked_fill(mask, 1.0),
           [S((3, 4), np.zeros(4, dtype=np.int64))], grad=False),
    OpCase("refuse_sub_bool", lambda m, x, y: x - y,
           [S(np.array([True]), np.array([False])), S((2,), True), S(np.array([True]), 1)],
           grad=False),
    OpCase("refuse_neg_bool", lambda m, x: -x, [S(np.array([True, False]))], grad=False),
    OpCase("refuse_int_alpha_float", lambda m, x, y: m.add(x, y, alpha=0.5), [S((2,), (2,))],
           ("int64",), grad=False),
    OpCase("refuse_int_floor_divide_zero", lambda m, x: x // 0, [S((2,))], ("int64",),
           grad=False),
    OpCase("refuse_div_rounding_mode", lambda m, x: x.div(2, rounding_mode="round"),
           [S((2,))], grad=False),
    OpCase("refuse_int_negative_power", lambda m, x: x ** -1, [S((2,))], ("int64",),
           grad=False),
    OpCase("refuse_mean_int", lambda m, x: x.mean(), [S((2,))], ("int64",), grad=False),
    OpCase("refuse_norm_int", lambda m, x: x.norm(), [S((2,))], ("int64",), grad=False),
    OpCase("refuse_norm_fro_three_dims", lambda m, x: x.norm(dim=(0, 1, 2)), [S((2, 3, 4))],
           grad=False),
    OpCase("refuse_norm_inf_empty", lambda m, x, **kw: x.norm(float("inf"), **kw),
           [S((0, 3)), S((0, 3), dim=0)], grad=False),
    OpCase("refuse_repeated_dim", lambda m, x, **kw: x.sum(**kw),
           [S((3, 4), dim=(1, -1)), S((3, 4), dim=(0, 0))], grad=False),
    OpCase("refuse_dim_out_of_range", lambda m, x, **kw: m.sum(x, **kw),
           [S((3, 4), dim=2), S((), dim=1)], grad=False),
    OpCase("refuse_max_empty", lambda m, x: x.max(), [S((0, 3))], grad=False),
    OpCase("refuse_max_dim_empty", lambda m, x: x.max(0), [S((0, 3))], grad=False),
    OpCase("refuse_amax_empty", lambda m, x, **kw: x.amax(**kw), [S((0, 3)), S((0, 3), dim=0)],
           grad=False),
    OpCase("refuse_mm_shapes", lambda m, x, y: m.mm(x, y), [S((3, 4), (3, 4))], grad=False),
    OpCase("refuse_mm_not_matrix", lambda m, x, y: m.mm(x, y), [S((3,), (3, 4))], grad=False),
    OpCase("refuse_mv_shapes", lambda m, x, y: m.mv(x, y), [S((3, 4), (3,))], grad=False),
    OpCase("refuse_dot_shapes", lambda m, x, y: x.dot(y), [S((4,), (3,)), S((2, 2), (2, 2))],
           grad=False),
    OpCase("refuse_bmm_shapes", lambda m, x, y: m.bmm(x, y), [S((2, 3, 4), (2, 3, 4))],
           grad=False),
    OpCase("refuse_matmul_0d", lambda m, x, y: m.matmul(x, y), [S((), (3,))], grad=False),
    OpCase("refuse_matmul_shapes", lambda m, x, y: x @ y, [S((3, 4), (3, 4)), S((4,), (3, 2))],
           grad=False),
    OpCase("refuse_view", lambda m, x, **kw: x.view(*kw["shape"]),
           [S((3, 4), shape=(5, -1)), S((3, 4), shape=(-1, -1)), S(nc(3, 4), shape=(12,))],
           grad=False),
    OpCase("refuse_reshape", lambda m, x: x.reshape(5, 3), [S((3, 4))], grad=False),
    OpCase("refuse_flatten_order", lambda m, x: x.flatten(1, 0), [S((2, 3))], grad=False),
    OpCase("refuse_unflatten", lambda m, x, **kw: x.unflatten(1, kw["sizes"]),
           [S((3, 4), sizes=(3, -1)), S((3, 4), sizes=(3, 2)), S((3, 4), sizes=())],
           grad=False),
    OpCase("refuse_t_3d", lambda m, x: x.t(), [S((2, 3, 4))], grad=False),
    OpCase("refuse_mT_1d", lambda m, x: x.mT, [S((3,))], grad=False),
    OpCase("refuse_permute", lambda m, x, **kw: x.permute(*kw["dims"]),
           [S((2, 3), dims=(0, 0)), S((2, 3), dims=(0,))], grad=False),
    OpCase("refuse_expand", lambda m, x, **kw: x.expand(*kw["shape"]),
           [S((3, 4), shape=(2, 3)), S((3, 4), shape=(5, 2, 3)), S((3, 4), shape=(4,)),
            S((3,), shape=(-1, 3))], grad=False),
    OpCase("refuse_movedim", lambda m, x, **kw: x.movedim(**kw),
           [S((2, 3), source=(0, 1), destination=(0,)),
            S((2, 3), source=(0, 0), destination=(0, 1)),
            S((2, 3), source=(0, 1), destination=(1, 1))], grad=False),
    OpCase("refuse_squeeze_dim", lambda m, x: x.squeeze(2), [S((2, 1))], grad=False),
    OpCase("refuse_index", lambda m, x, **kw: x[kw["key"]],
           [S((3, 4), key=3), S((3, 4), key=(0, 0, 0)), S((3, 4), key=slice(None, None, -1)),
            S((3, 4), key=slice(None, None, 0)), S((3, 4), key=[0, 5]),
            S((3, 4), key=1.5)], grad=False),
    OpCase("refuse_index_float_tensor", lambda m, x: x[m.tensor([0.0])], [S((3,))],
           grad=False),
    OpCase("refuse_index_mask_shape", lambda m, x, mask: x[mask],
           [S((3, 4), np.array([True, False])), S((3, 4), np.zeros((3, 2), dtype=bool))],
           grad=False),
    OpCase("refuse_index_mask_shape_later_dim", lambda m, x, mask: x[:, None, ..., mask],
           [S((3, 4), np.array([True, False, True]))], grad=False),
    OpCase("refuse_unbind_0d", lambda m, x: x.unbind(), [S(())], grad=False),
    OpCase("refuse_stack_shapes", lambda m, x, y: m.stack([x, y]), [S((3,), (4,))],
           grad=False),
]

OPS_BY_NAME = {c.name: c for c in OPS}
assert len(OPS_BY_NAME) == len(OPS), "op table names must be unique"


# --------------------------------------------------------------------------- comparing results

# (rtol, atol) for values; torch.testing's defaults
TOLERANCES = {"float16": (1e-3, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}
# gradients sum over broadcast dims in another order than torch does: a little looser
GRAD_TOLERANCES = {"float16": (1e-2, 1e-2), "float32": (1e-5, 1e-5), "float64": (1e-7, 1e-7)}


def dtype_name(t) -> str:
    return repr(t.dtype).removeprefix("torch.")


def tensors_of(out) -> list:
    """The tensors an op returned: one, or those in a tuple (max with dim, unbind, ...)."""
    return list(out) if isinstance(out, (tuple, list)) else [out]


def assert_close(e, t, what: str = "value", grad: bool = False, tol_dtype=None) -> None:
    """ember tensor ``e`` equals torch tensor ``t``: dtype, shape and values (within the
    tolerance of ``tol_dtype`` if given: a float64 input's gradient computed in float32)."""
    if not hasattr(t, "dtype"):  # a Python result (equal, allclose)
        assert type(e) is type(t) and e == t, f"{what}: ember {e!r}, torch {t!r}"
        return
    assert dtype_name(e) == dtype_name(t), f"{what} dtype: ember {e.dtype}, torch {t.dtype}"
    assert tuple(e.shape) == tuple(t.shape), \
        f"{what} shape: ember {tuple(e.shape)}, torch {tuple(t.shape)}"
    ea, ta = e.detach().cpu().numpy(), t.detach().cpu().numpy()
    if ta.dtype.kind == "f":
        rtol, atol = (GRAD_TOLERANCES if grad else TOLERANCES)[tol_dtype or ta.dtype.name]
        np.testing.assert_allclose(ea, ta, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{what} differs from torch")
    else:
        np.testing.assert_array_equal(ea, ta, err_msg=f"{what} differs from torch")


# --------------------------------------------------------------------------- rows by area
# Each module in tests/op_tables/ defines ``OPS``, a list of ``OpCase`` built with the helpers
# above; they join the one table here, so every test over ``OPS`` covers them.
def _gather_area_tables() -> None:
    import importlib
    import pkgutil
    from pathlib import Path
    folder = Path(__file__).resolve().parent / "op_tables"
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
        OPS.extend(importlib.import_module(f"op_tables.{info.name}").OPS)


_gather_area_tables()
