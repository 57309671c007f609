"""Op-table rows for the math of ember/ops/unary.py and arithmetic.py beyond the core: each op's
function, method and in-place forms."""

from __future__ import annotations

import numpy as np
from op_table import (
    BINARY,
    F32,
    FLOAT,
    KINKS,
    NUMERIC,
    TIES,
    UNARY,
    OpCase,
    S,
    Spec,
    nc,
    nonzero,
    positive,
    st,
    uniform,
)

# --------------------------------------------------------------------------- value domains
# each keeps finite differences (eps 1e-6) inside the function's domain and away from its edges


def _interval(lo: float, hi: float, int_lo: int, int_hi: int):
    def domain(rng, shape, dtype):
        if dtype.kind == "f":
            return rng.uniform(lo, hi, shape).astype(dtype)
        return rng.integers(int_lo, int_hi + 1, shape).astype(dtype)
    domain.__name__ = f"in_{lo}_{hi}"
    return domain


unit = _interval(-0.9, 0.9, 0, 0)         # asin, acos, atanh, erfinv: inside (-1, 1)
above_one = _interval(1.2, 3.0, 2, 5)     # acosh: > 1
prob = _interval(0.1, 0.9, 0, 1)          # logit: inside (0, 1)
above_minus_one = _interval(-0.7, 2.0, 0, 5)   # log1p: > -1
half_period = _interval(-1.2, 1.2, -1, 1)  # tan: inside (-pi/2, pi/2)
wide = _interval(-4.0, 4.0, -5, 5)        # rounding ops: several integers apart


def p(*shape) -> Spec:
    """A positive tensor input (divisors, logs)."""
    return Spec(tuple(shape), "c", positive)


def nz(*shape) -> Spec:
    """A tensor input away from 0, either sign."""
    return Spec(tuple(shape), "c", nonzero)


def _fn(name: str):
    return lambda m, *args, **kw: getattr(m, name)(*args, **kw)


def _method(name: str):
    return lambda m, x, *args, **kw: getattr(x, name)(*args, **kw)


def _inplace(name: str):
    """``x.clone().name_(...)``: the in-place form, on a non-leaf copy."""
    return lambda m, x, *args, **kw: getattr(x.clone(), name + "_")(*args, **kw)


# --------------------------------------------------------------------------- unary ops
# name, domain, dtypes of the function form
_UNARY = [
    ("exp2", uniform, NUMERIC + ("float16",)),
    ("expm1", uniform, NUMERIC),
    ("log2", positive, NUMERIC),
    ("log10", positive, NUMERIC),
    ("log1p", above_minus_one, NUMERIC),
    ("rsqrt", positive, NUMERIC),
    ("tan", half_period, NUMERIC),
    ("asin", unit, NUMERIC),
    ("acos", unit, NUMERIC),
    ("atan", uniform, NUMERIC),
    ("sinh", uniform, NUMERIC),
    ("cosh", uniform, NUMERIC),
    ("asinh", uniform, NUMERIC),
    ("acosh", above_one, NUMERIC),
    ("atanh", unit, NUMERIC),
    ("erf", wide, NUMERIC + ("float16",)),
    ("erfc", wide, NUMERIC),
    ("erfinv", unit, NUMERIC),
    ("sinc", uniform, NUMERIC),
    ("deg2rad", uniform, NUMERIC),
    ("rad2deg", uniform, NUMERIC),
    ("floor", wide, NUMERIC + ("int32", "uint8")),
    ("ceil", wide, NUMERIC),
    ("round", wide, NUMERIC),
    ("trunc", wide, NUMERIC),
    ("fix", wide, NUMERIC),
    ("frac", wide, FLOAT),
    ("logit", prob, NUMERIC),
    ("nan_to_num", uniform, NUMERIC),
]
_DOMAIN = {name: dom for name, dom, _ in _UNARY}

# torch's asinh_, acosh_ and atanh_ are not differentiable (tests/test_pointwise.py checks
# their nodes): their in-place rows compare values only
_NOT_DIFFERENTIABLE_INPLACE = {"asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh"}

OPS: list[OpCase] = []
for _name, _dom, _dtypes in _UNARY:
    OPS += [
        OpCase(_name, _fn(_name), UNARY, _dtypes, domain=_dom),
        OpCase(f"{_name}_method", _method(_name), UNARY[:2], F32, domain=_dom),
        # integer tensors: torch refuses to write a float result into them
        OpCase(f"{_name}_inplace", _inplace(_name), [S((3, 4)), S(nc(3, 4))],
               ("float32", "int64"), domain=_dom, grad=_name not in _NOT_DIFFERENTIABLE_INPLACE),
    ]

for _alias, _name in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                      ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")]:
    OPS += [
        OpCase(_alias, _fn(_alias), UNARY[:2], F32, domain=_DOMAIN[_name]),
        OpCase(f"{_alias}_method", _method(_alias), UNARY[:1], F32, domain=_DOMAIN[_name]),
        OpCase(f"{_alias}_inplace", _inplace(_alias), UNARY[:1], F32, domain=_DOMAIN[_name],
               grad=_alias not in _NOT_DIFFERENTIABLE_INPLACE),
    ]

_NONFINITE = np.array([[np.nan, np.inf, -np.inf, 1.5], [-0.5, np.nan, 2.0, -np.inf]])
OPS += [
    # values at the edges of each domain (forward only: finite differences fail there)
    OpCase("unary_domain_edges", lambda m, x: m.stack([
        m.asin(x), m.acos(x), m.atanh(x), m.erfinv(x), m.log1p(x), m.log2(x), m.rsqrt(x),
        m.acosh(x), m.logit(x), m.sinc(x), m.erf(x), m.erfc(x), m.tan(x), m.sinh(x)]),
        [S(np.array([-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, np.inf, -np.inf, np.nan, 30.0, -30.0,
                     1e-30, 0.999999, 5.5, -5.5]))], FLOAT, grad=False),
    # (erfinv near +-1 is ill-conditioned: torch's float32 kernel and ours differ there)
    OpCase("erf_family_values", lambda m, x: m.stack([m.erf(x), m.erfc(x), m.erfinv(x / 6.6)]),
           [S(np.linspace(-6.0, 6.0, 97))], FLOAT, grad=False),
    OpCase("erfinv_tails", lambda m, x: m.erfinv(x),
           [S(np.array([0.999999, -0.99999999, 1e-12, -1e-300, 0.5, 0.9999999999999]))],
           FLOAT, grad=False),
    OpCase("sinc_at_zero", lambda m, x: m.sinc(x), [S(np.array([0.0, 1.0, -2.0, 0.5]),
                                                      gradcheck=False)], FLOAT),
    OpCase("rounding_halves", lambda m, x: m.stack([m.round(x), m.floor(x), m.ceil(x),
                                                    m.trunc(x), m.frac(x)]),
           [S(np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 3.7, -3.7]), gradcheck=False)],
           FLOAT),
    OpCase("round_decimals", lambda m, x, **kw: m.round(x, **kw),
           [S((3, 4), decimals=2), S(nc(3, 4), decimals=0), S((), decimals=1),
            S((0, 2), decimals=3), S(np.array([1.2345, 1234.5678, 15.0, -25.0, 0.125]),
                                     decimals=-1, gradcheck=False),
            S(np.array([1.2345, 0.125, -0.375]), decimals=2, gradcheck=False)], FLOAT,
           domain=wide),
    OpCase("round_decimals_method", lambda m, x: x.round(decimals=1), [S((3, 4))], F32,
           domain=wide),
    OpCase("round_decimals_inplace", lambda m, x: x.clone().round_(decimals=1), [S((3, 4))],
           F32, domain=wide),
    OpCase("logit_eps", lambda m, x, **kw: m.logit(x, **kw),
           [S((3, 4), eps=1e-3), S(nc(3, 4), eps=0.05), S((), eps=0.2),
            S(np.array([0.0, 0.05, 0.5, 0.95, 1.0, 1.5, -0.5]), eps=0.1, gradcheck=False)],
           NUMERIC, domain=prob),
    OpCase("logit_eps_positional", lambda m, x: x.logit(0.25), [S((3, 4))], F32, domain=prob),
    OpCase("logit_outside", lambda m, x: m.logit(x),
           [S(np.array([-0.5, 0.0, 0.5, 1.0, 1.5]), gradcheck=False)], FLOAT),
    OpCase("nan_to_num_nonfinite", lambda m, x, **kw: m.nan_to_num(x, **kw),
           [S(_NONFINITE, gradcheck=False), S(_NONFINITE, nan=1.0, posinf=2.0, neginf=-3.0,
                                              gradcheck=False),
            S(_NONFINITE, posinf=9.0, gradcheck=False)], FLOAT + ("float16",)),
    OpCase("nan_to_num_method", lambda m, x: x.nan_to_num(nan=-1.0), [S(_NONFINITE,
                                                                        gradcheck=False)]),
    OpCase("positive", lambda m, x: m.positive(x), UNARY[:3], NUMERIC),
    OpCase("positive_method", lambda m, x: x.positive(), UNARY[:1], NUMERIC),
    # refusals
    OpCase("refuse_frac_int", lambda m, x: m.frac(x), [S((3,))], ("int64", "int32", "uint8"),
           grad=False),
    OpCase("refuse_rounding_bool", lambda m, x, **kw: getattr(m, kw["op"])(x),
           [S(np.array([True, False]), op=op) for op in ("floor", "ceil", "round", "trunc",
                                                           "fix", "frac")], grad=False),
    OpCase("refuse_round_decimals_int", lambda m, x: m.round(x, decimals=1), [S((3,))],
           ("int64",), grad=False),
    OpCase("refuse_positive_bool", lambda m, x: m.positive(x), [S(np.array([True]))],
           grad=False),
    OpCase("refuse_unary_not_tensor", lambda m, x, **kw: getattr(m, kw["op"])(x),
           [S(1.5, op=op) for op in ("exp2", "erf", "floor", "frac", "logit")], grad=False),
]

# --------------------------------------------------------------------------- remainder, fmod

_MOD_SCALARS = [S((3, 4), 1.5), S((3, 4), -2), S((), 0.75), S(nc(3, 4), 2.5), S((0, 3), 2)]
_SCALAR_MOD = [S(2.5, nz(3, 4)), S(-3, nz(3, 4)), S(5, nz()), S(1.5, nc(3, 4, domain=nonzero))]
OPS += [
    OpCase("remainder", lambda m, x, y: m.remainder(x, y), BINARY, NUMERIC + ("int32",),
           domain=nonzero),
    OpCase("remainder_scalar", lambda m, x, y: m.remainder(x, y), _MOD_SCALARS,
           NUMERIC + ("uint8",), domain=nonzero),
    # scalar % tensor: torch records it as not differentiable, so values only
    OpCase("remainder_scalar_first", lambda m, x, y: m.remainder(x, y), _SCALAR_MOD, NUMERIC,
           grad=False),
    OpCase("remainder_method", lambda m, x, y: x.remainder(y), BINARY[:2] + _MOD_SCALARS[:1],
           domain=nonzero),
    OpCase("remainder_inplace", lambda m, x, y: x.clone().remainder_(y),
           [S((3, 4), (4,)), S((3, 4), 2.5), S((3, 4), 3)], ("float32", "int64"),
           domain=nonzero),
    OpCase("mod_operator", lambda m, x, y: x % y, BINARY[:4] + _MOD_SCALARS[:3], NUMERIC,
           domain=nonzero),
    OpCase("rmod_operator", lambda m, x, y: x % y, _SCALAR_MOD, NUMERIC, grad=False),
    OpCase("remainder_signs", lambda m, x, y: m.stack([m.remainder(x, y), m.fmod(x, y)]),
           [S(np.array([5.0, -5.0, 5.0, -5.0, 0.0, -0.0, 3.0, 2.0, np.inf]),
              np.array([3.0, 3.0, -3.0, -3.0, 2.0, 2.0, np.inf, 0.0, 2.0]), gradcheck=False)],
           FLOAT, grad=False),
    OpCase("remainder_int_signs", lambda m, x, y: m.stack([m.remainder(x, y), m.fmod(x, y)]),
           [S(np.array([5, -5, 5, -5, 0, 7]), np.array([3, 3, -3, -3, 2, 7]))], grad=False),
    OpCase("fmod", lambda m, x, y: m.fmod(x, y), BINARY, NUMERIC + ("int32",), domain=nonzero),
    OpCase("fmod_scalar", lambda m, x, y: m.fmod(x, y), _MOD_SCALARS, NUMERIC, domain=nonzero),
    OpCase("fmod_method", lambda m, x, y: x.fmod(y), BINARY[:2] + _MOD_SCALARS[:1],
           domain=nonzero),
    OpCase("fmod_inplace", lambda m, x, y: x.clone().fmod_(y), [S((3, 4), (4,)),
                                                                S((3, 4), 2.5)],
           ("float32", "int64"), domain=nonzero),
    OpCase("refuse_int_remainder_zero", lambda m, x, y: m.remainder(x, y),
           [S((3,), 0), S((3,), np.array([1, 0, 2]))], ("int64",), grad=False),
    OpCase("refuse_int_fmod_zero", lambda m, x, y: x.fmod(y), [S((3,), 0)], ("int64",),
           grad=False),
    OpCase("refuse_fmod_scalar_first", lambda m, x, y: m.fmod(x, y), [S(2, (3,))], grad=False),
    OpCase("refuse_remainder_broadcast", lambda m, x, y: x % y, [S((3, 4), (2, 3))],
           grad=False),
]

# --------------------------------------------------------------------------- binary float ops
_TENSOR_PAIRS = BINARY
OPS += [
    OpCase("atan2", lambda m, x, y: m.atan2(x, y), _TENSOR_PAIRS, NUMERIC, domain=nonzero),
    OpCase("arctan2", lambda m, x, y: m.arctan2(x, y), BINARY[:2], F32, domain=nonzero),
    OpCase("atan2_method", lambda m, x, y: x.atan2(y), BINARY[:2], F32, domain=nonzero),
    OpCase("arctan2_method", lambda m, x, y: x.arctan2(y), BINARY[:1], F32, domain=nonzero),
    OpCase("atan2_inplace", lambda m, x, y: x.clone().atan2_(y), BINARY[:2],
           ("float32", "int64"), domain=nonzero),
    OpCase("arctan2_inplace", lambda m, x, y: x.clone().arctan2_(y), BINARY[:1], F32,
           domain=nonzero),
    OpCase("atan2_quadrants", lambda m, x, y: m.atan2(x, y),
           [S(np.array([1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, 2.0]),
              np.array([1.0, -1.0, 1.0, -1.0, 0.0, -1.0, -1.0, 0.0]), gradcheck=False)],
           FLOAT, grad=False),
    OpCase("atan2_mixed_dtypes", lambda m, x: m.atan2(x, x.to(m.int32)), [S((3, 4))],
           ("int64", "float32"), grad=False, domain=nonzero),
    OpCase("hypot", lambda m, x, y: m.hypot(x, y), _TENSOR_PAIRS, FLOAT, domain=nonzero),
    OpCase("hypot_method", lambda m, x, y: x.hypot(y), BINARY[:2], F32, domain=nonzero),
    OpCase("hypot_inplace", lambda m, x, y: x.clone().hypot_(y), BINARY[:2], F32,
           domain=nonzero),
    OpCase("logaddexp", lambda m, x, y: m.logaddexp(x, y), _TENSOR_PAIRS, FLOAT),
    OpCase("logaddexp_method", lambda m, x, y: x.logaddexp(y), BINARY[:2], F32),
    OpCase("logaddexp2", lambda m, x, y: m.logaddexp2(x, y), _TENSOR_PAIRS, FLOAT),
    OpCase("logaddexp2_method", lambda m, x, y: x.logaddexp2(y), BINARY[:2], F32),
    OpCase("logaddexp_extremes", lambda m, x, y: m.stack([m.logaddexp(x, y),
                                                          m.logaddexp2(x, y)]),
           [S(np.array([1000.0, -1000.0, 0.0, -np.inf, np.inf]),
              np.array([1000.0, -1000.0, 0.0, -np.inf, 1.0]))], FLOAT, grad=False),
    OpCase("binary_float_ops_mixed", lambda m, x: m.stack([m.hypot(x.float(), x),
                                                           m.logaddexp(x, x.float())]),
           [S((3, 4))], ("int64",), grad=False, domain=nonzero),
    OpCase("refuse_binary_float_ops_int", lambda m, x, y, **kw: getattr(m, kw["op"])(x, y),
           [S((3,), (3,), op=op) for op in ("hypot", "logaddexp", "logaddexp2")]
           + [S((3,), (2,), op="hypot")], ("int64",), grad=False),
    OpCase("refuse_binary_tensor_only", lambda m, x, y, **kw: getattr(m, kw["op"])(x, y),
           [S((3,), 2.0, op=op) for op in ("atan2", "arctan2", "fmax", "fmin", "hypot",
                                          "logaddexp", "logaddexp2", "heaviside")]
           + [S(2.0, (3,), op="atan2")], grad=False),
    # ---- fmax / fmin: NaN is ignored where the other side is a number
    OpCase("fmax", lambda m, x, y: m.fmax(x, y), _TENSOR_PAIRS, NUMERIC),
    OpCase("fmin", lambda m, x, y: m.fmin(x, y), _TENSOR_PAIRS, NUMERIC),
    OpCase("fmax_method", lambda m, x, y: x.fmax(y), BINARY[:2], F32),
    OpCase("fmin_method", lambda m, x, y: x.fmin(y), BINARY[:2], F32),
    OpCase("fmax_fmin_nan_ties", lambda m, x, y: m.stack([m.fmax(x, y), m.fmin(x, y)]),
           [S(np.array([1.0, np.nan, np.nan, 2.0, 3.0, -1.0]),
              np.array([np.nan, 2.0, np.nan, 2.0, -3.0, 4.0]), gradcheck=False),
            S(TIES[0], TIES[1], gradcheck=False)], FLOAT),
    OpCase("fmax_mixed_dtypes", lambda m, x, y: m.fmax(x, y.to(m.int64)), [S((3, 4), (4,))],
           F32, grad=False),
    # ---- xlogy
    OpCase("xlogy", lambda m, x, y: m.xlogy(x, y),
           [S((3, 4), p(3, 4)), S((3, 4), p(4)), S((2, 1, 4), p(3, 1)), S((), p(3, 4)),
            S(nc(3, 4), p(3, 4)), S((0, 3), p(3)), S((3, 4), st(3, 4, domain=positive))],
           NUMERIC),
    OpCase("xlogy_scalar_other", lambda m, x, y: m.xlogy(x, y),
           [S((3, 4), 2.5), S((), 3), S(nc(3, 4), 0.5)], NUMERIC),
    OpCase("xlogy_scalar_self", lambda m, x, y: m.xlogy(x, y),
           [S(2.5, p(3, 4)), S(-3, p()), S(0.0, p(3, 4))], NUMERIC),
    OpCase("xlogy_zeros", lambda m, x, y: m.xlogy(x, y),
           [S(np.array([0.0, 0.0, 0.0, 1.0, 2.0, 0.0]),
              np.array([0.0, np.nan, 2.0, 0.0, np.nan, np.inf]), gradcheck=False)], FLOAT),
    OpCase("xlogy_method", lambda m, x, y: x.xlogy(y), [S((3, 4), p(3, 4)), S((3, 4), 2.0)]),
    OpCase("xlogy_inplace", lambda m, x, y: x.clone().xlogy_(y),
           [S((3, 4), p(4)), S((3, 4), 2.0)], ("float32", "int64")),
    OpCase("refuse_xlogy_numbers", lambda m: m.xlogy(2, 3), [S()], grad=False),
    # ---- copysign
    OpCase("copysign", lambda m, x, y: m.copysign(x, y),
           [S(nz(3, 4), (3, 4)), S(nz(3, 4), (4,)), S(nz(2, 1, 4), (3, 1)), S(nz(), (3, 4)),
            S(nc(3, 4, domain=nonzero), (3, 4)), S(nz(0, 3), (3,))], NUMERIC),
    OpCase("copysign_scalar", lambda m, x, y: m.copysign(x, y),
           [S(nz(3, 4), -1.5), S(nz(3, 4), 2), S(nz(), -0.0)], NUMERIC),
    OpCase("copysign_zeros", lambda m, x, y: m.copysign(x, y),
           [S(np.array([0.0, -0.0, 1.0, -2.0, 3.0]), np.array([-1.0, 1.0, -0.0, 0.0, np.nan]),
              gradcheck=False)], FLOAT),
    OpCase("copysign_method", lambda m, x, y: x.copysign(y), [S(nz(3, 4), (3, 4))]),
    OpCase("copysign_inplace", lambda m, x, y: x.clone().copysign_(y),
           [S(nz(3, 4), (4,)), S(nz(3, 4), -1.0)], ("float32", "int64")),
    OpCase("refuse_copysign_scalar_first", lambda m, x, y: m.copysign(x, y), [S(2.0, (3,))],
           grad=False),
    # ---- heaviside: forward only (torch records a node whose backward raises)
    OpCase("heaviside", lambda m, x, v: m.heaviside(x, v),
           [S(KINKS, (2, 4)), S(KINKS, (4,)), S(KINKS, ()), S(TIES, np.array([0.5]))],
           NUMERIC, grad=False),
    OpCase("heaviside_method", lambda m, x, v: x.heaviside(v), [S(KINKS, (4,))], NUMERIC,
           grad=False),
    OpCase("heaviside_inplace", lambda m, x, v: x.clone().heaviside_(v), [S(KINKS, (4,))],
           NUMERIC, grad=False),
    OpCase("refuse_heaviside_dtypes", lambda m, x, v: m.heaviside(x, v.double()),
           [S((3,), (3,))], grad=False),
    OpCase("refuse_heaviside_broadcast", lambda m, x, v: m.heaviside(x, v), [S((3, 4), (2,))],
           grad=False),
    # ---- float_power: computed in float64 (a cast, then pow)
    OpCase("float_power", lambda m, x, y: m.float_power(x, y),
           [S(p(3, 4), (3, 4)), S(p(3, 4), (4,)), S(p(), (3, 4)), S(p(0, 3), (3,)),
            S(nc(3, 4, domain=positive), (3, 4))], NUMERIC),
    OpCase("float_power_scalar", lambda m, x, y: m.float_power(x, y),
           [S(p(3, 4), 2), S(p(3, 4), 0.5), S(p(), -1.5), S(2.5, (3, 4)), S(2, (3,))],
           NUMERIC),
    OpCase("float_power_method", lambda m, x, y: x.float_power(y), [S(p(3, 4), (3, 4))],
           FLOAT),
    OpCase("float_power_inplace", lambda m, x, y: x.clone().float_power_(y),
           [S(p(3, 4), (4,)), S(p(3, 4), 2.0)], FLOAT + ("int64",)),
]

# --------------------------------------------------------------------------- ternary ops
OPS += [
    OpCase("lerp", lambda m, x, y, **kw: m.lerp(x, y, **kw),
           [S((3, 4), (3, 4), weight=0.3), S((3, 4), (4,), weight=0.75), S((), (3, 4), weight=2),
            S(nc(3, 4), (3, 1), weight=-0.5), S((0, 3), (3,), weight=0.5),
            S((3, 4), st(3, 4), weight=1.0), S((), (), weight=0.0)], FLOAT),
    OpCase("lerp_tensor_weight", lambda m, x, y, w: m.lerp(x, y, w),
           [S((3, 4), (3, 4), (3, 4)), S((3, 4), (4,), (3, 1)), S((), (3, 4), ()),
            S(nc(3, 4), (3, 4), st(3, 4)), S((2, 1, 4), (3, 1), (4,)), S((0, 3), (3,), ())],
           FLOAT),
    OpCase("lerp_method", lambda m, x, y: x.lerp(y, 0.25), BINARY[:2]),
    OpCase("lerp_inplace", lambda m, x, y, w: x.clone().lerp_(y, w),
           [S((3, 4), (4,), (3, 4)), S((3, 4), (3, 4), ())]),
    OpCase("lerp_weight_0d_other_dtype", lambda m, x, y, w: m.lerp(x, y, w.double()),
           [S((3, 4), (3, 4), ())], F32),
    OpCase("refuse_lerp", lambda m, x, y, **kw: m.lerp(x, y, **kw),
           [S((3,), np.array([1.0, 2.0, 3.0], dtype=np.float64), weight=0.5),
            S((3, 4), (2, 4), weight=0.5)], F32, grad=False),
    OpCase("refuse_lerp_weight_dtype", lambda m, x, y, w: m.lerp(x, y, w.double()),
           [S((3,), (3,), (3,))], F32, grad=False),
    OpCase("refuse_lerp_int", lambda m, x, y: m.lerp(x, y, 0.5), [S((3,), (3,))], ("int64",),
           grad=False),
    OpCase("refuse_lerp_inplace_broadcast", lambda m, x, y, w: x.clone().lerp_(y, w),
           [S((3,), (3,), (2, 3))], F32, grad=False),
    OpCase("addcmul", lambda m, x, a, b, **kw: m.addcmul(x, a, b, **kw),
           [S((3, 4), (3, 4), (3, 4)), S((3, 4), (4,), (3, 1), value=2),
            S((), (3, 4), (), value=-0.5), S(nc(3, 4), st(3, 4), (3, 4), value=1.5),
            S((2, 1, 4), (3, 1), (4,)), S((0, 3), (3,), (1, 3), value=3)], NUMERIC),
    OpCase("addcmul_method", lambda m, x, a, b: x.addcmul(a, b, value=0.5),
           [S((3, 4), (3, 4), (4,))]),
    OpCase("addcmul_inplace", lambda m, x, a, b: x.clone().addcmul_(a, b, value=2),
           [S((3, 4), (3, 4), (4,)), S((3, 4), (1, 4), ())], ("float32", "int64")),
    OpCase("addcmul_mixed_dtypes", lambda m, x, a, b: m.addcmul(x, a.long(), b.long(),
                                                                 value=2),
           [S((3, 4), (3, 4), (3, 4))], F32, grad=False),
    OpCase("addcmul_int_float_value", lambda m, x, a, b: m.addcmul(x, a, b, value=0.5),
           [S((3, 4), (3, 4), (3, 4))], ("int64",), grad=False),
    OpCase("addcdiv", lambda m, x, a, b, **kw: m.addcdiv(x, a, b, **kw),
           [S((3, 4), (3, 4), nz(3, 4)), S((3, 4), (4,), nz(3, 1), value=2),
            S((), (3, 4), nz(), value=-0.5), S(nc(3, 4), st(3, 4), nz(3, 4), value=1.5),
            S((2, 1, 4), (3, 1), nz(4)), S((0, 3), (3,), nz(1, 3), value=3)], FLOAT),
    OpCase("addcdiv_method", lambda m, x, a, b: x.addcdiv(a, b, value=0.5),
           [S((3, 4), (3, 4), nz(4))]),
    OpCase("addcdiv_inplace", lambda m, x, a, b: x.clone().addcdiv_(a, b, value=2),
           [S((3, 4), (3, 4), nz(4)), S((3, 4), (1, 4), nz())]),
    OpCase("addcdiv_int_input", lambda m, x, a, b: m.addcdiv(x.long(), a, b),
           [S((3, 4), (3, 4), nz(3, 4))], F32, grad=False),
    OpCase("refuse_addcdiv_int", lambda m, x, a, b: m.addcdiv(x, a.long(), b.long()),
           [S((3,), (3,), nz(3))], F32, grad=False),
    OpCase("refuse_addcmul_broadcast", lambda m, x, a, b: m.addcmul(x, a, b),
           [S((3, 4), (2, 4), (4,))], F32, grad=False),
    OpCase("refuse_addcmul_scalar", lambda m, x, a: m.addcmul(x, a, 2.0), [S((3,), (3,))],
           F32, grad=False),
]

# ---- shifts (ember/ops/comparison.py): negative and oversized amounts as torch defines them
_SHIFTS = np.array([-1, 0, 1, 3, 7, 8, 31, 32, 63, 64, 100])
_SHIFTED = np.array([1, -8, 5, 127, -1, 0, 3, 2, -128, 64, 9])
OPS += [
    OpCase("bitwise_left_shift", lambda m, x, y: m.bitwise_left_shift(x, y),
           [S((3, 4), (3, 4), domain=positive), S((3, 4), 2), S((3, 4), (4,), domain=positive),
            S(_SHIFTED, _SHIFTS), S((0, 3), 1)], ("int64", "int32", "uint8"), grad=False),
    OpCase("bitwise_right_shift", lambda m, x, y: x.bitwise_right_shift(y),
           [S((3, 4), (3, 4), domain=positive), S(nc(3, 4), 1), S(_SHIFTED, _SHIFTS)],
           ("int64", "int32", "uint8"), grad=False),
    OpCase("shift_operators", lambda m, x, y: (x << y, x >> y, 3 << x, -64 >> x),
           [S(_SHIFTED.clip(0, 9), _SHIFTS), S((3, 4), 2, domain=positive)], ("int64",),
           grad=False),
    OpCase("shift_inplace", lambda m, x, y: (x.clone().bitwise_left_shift_(y),
                                             x.clone().bitwise_right_shift_(y)),
           [S((3, 4), (4,), domain=positive), S(_SHIFTED, _SHIFTS)], ("int64", "int32"),
           grad=False),
    OpCase("shift_inplace_operators", lambda m, x, y: _ishift(x.clone(), y),
           [S((3, 4), 2, domain=positive), S(_SHIFTED, _SHIFTS)], ("int64",), grad=False),
    OpCase("shift_bool_promotes", lambda m, x: (x << 1, x >> True),
           [S(np.array([True, False]))], ("int64",), grad=False),
    OpCase("refuse_shift", lambda m, x, y: x << y,
           [S((3,), (3,)), S((3,), 1.5), S(np.array([True]), np.array([True])),
            S((3,), (2,))], ("float32", "int64"), grad=False),
]


def _ishift(x, y):
    x <<= y
    x >>= 1
    return x
