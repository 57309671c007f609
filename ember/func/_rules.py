"""vmap's batching rules: how each op runs once on a whole batch (see ``_batched.py``).

A rule is ``rule(fn, args, kwargs)``: ``fn`` is the op (a function, or ``Tensor``'s unbound
method), ``args``/``kwargs`` its arguments as the user passed them, some of them BatchedTensors.
The rule calls ``fn`` on physical values (plain tensors whose leading dims are the batch dims)
and wraps the result. The families, as in functorch's C++ rules:

* broadcasting ops (elementwise math, comparisons, ``where``, activations, and ops that treat
  their leading dims as batch dims: ``tril``, ``cdist``, ``layer_norm``, attention...): align the
  operands' batch dims (size 1 where one is not batched) and left-pad their logical dims, call
  once;
* ops with dim arguments (reductions, scans, softmax, sort, transpose, split...): shift the dims
  past the batch dims; ``dim=None`` (all dims) reduces the logical dims only;
* view and shape ops (view/reshape, permute, expand, squeeze, cat/stack, indexing): prefix the
  batch sizes, or shift the dims;
* products (``matmul`` and its relatives, ``einsum``, ``F.linear``): batch dims become matmul
  batch dims, or an extra einsum index;
* NCHW layers (conv, pooling, normalization, interpolate): fold the batch dims into N, or, for
  a batched weight (an ensemble), into the channels with ``groups`` (conv);
* losses: the unreduced loss per element, then the reduction over each example's dims;
* random ops, following vmap's ``randomness`` flag.

Any op not named here runs through ``loop_fallback``; docs/func.md lists which.
"""

from __future__ import annotations

import inspect
import string

from .._tensor import Tensor
from ..ops._registry import KEYWORD_ALIASES
from ._batched import (
    INPLACE_ERROR,
    RANDOM,
    RANDOM_ERROR,
    RULES,
    STACK,
    BatchedTensor,
    align,
    batch_sizes,
    dynamic_shape_error,
    expand_to,
    levels_of,
    logical_ndim,
    loop_fallback,
    rule,
    union,
    value_of,
    wrap,
    wrap_output,
)

_BT = BatchedTensor


# ----------------------------------------------------------------------------- helpers
def _words(text: str) -> list[str]:
    return text.split()


_SIGS: dict = {}


def _bind(fn, args: tuple, kwargs: dict) -> inspect.BoundArguments:
    sig = _SIGS.get(fn)
    if sig is None:
        sig = _SIGS[fn] = inspect.signature(fn)
    if kwargs:
        params = sig.parameters
        for alias, real in KEYWORD_ALIASES.items():
            if alias in kwargs and alias not in params and real in params:
                kwargs = dict(kwargs)
                kwargs[real] = kwargs.pop(alias)
    return sig.bind(*args, **kwargs)


def _default(fn, name: str):
    return _SIGS[fn].parameters[name].default


def _call(fn, ba: inspect.BoundArguments):
    return fn(*ba.args, **ba.kwargs)


def _wrap_dim(dim: int, nd: int) -> int:
    n = max(nd, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _tensor_items(args: tuple, kwargs: dict):
    for a in args:
        if isinstance(a, Tensor):
            yield a
    for a in kwargs.values():
        if isinstance(a, Tensor):
            yield a


def _levels_nd(tensors) -> tuple[tuple, int]:
    levels: tuple = ()
    nd = 0
    for t in tensors:
        if type(t) is _BT:
            lv = t._levels
            if lv != levels:
                levels = lv if not levels else union(levels, lv)
            d = t._value.ndim - len(lv)
        else:
            d = t.ndim
        nd = max(nd, d)
    return levels, nd


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _insert_dims(v: Tensor, at: int, count: int) -> Tensor:
    if count <= 0:
        return v
    s = tuple(v.shape)
    return v.reshape(s[:at] + (1,) * count + s[at:])


# ----------------------------------------------------------------------------- broadcasting
_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2, "c": 3}


def _scalar_promotion(args: list, kwargs: dict, levels: tuple) -> None:
    """torch's type promotion treats a 0-dim tensor as lower priority than dimensioned ones of
    its category; batched, a logical 0-dim operand has a physical batch dim, so cast it to what
    the dimensioned operands give (only when the dtypes differ)."""
    from .._backend.dtypes import promote_types
    tensors = [t for t in _tensor_items(args, kwargs)]
    dims = [t for t in tensors if logical_ndim(t) > 0]
    zeros = [t for t in tensors if logical_ndim(t) == 0 and type(t) is _BT]
    if not dims or not zeros or len({t.dtype for t in tensors}) == 1:
        return
    target = dims[0].dtype
    for t in dims[1:]:
        target = promote_types(target, t.dtype)
    cat = _CATEGORY[target.np.kind] if hasattr(target, "np") else 2
    for seq in (args, kwargs):
        items = enumerate(seq) if isinstance(seq, list) else list(seq.items())
        for k, t in items:
            if type(t) is _BT and logical_ndim(t) == 0 and t.dtype != target and \
                    _CATEGORY.get(t._value._data.dtype.kind, 2) <= cat:
                seq[k] = wrap(t._value.to(target), t._levels)


def broadcasting(fn, args: tuple, kwargs: dict):
    """Elementwise ops and ops that broadcast over leading dims: one call on aligned operands."""
    if len(args) == 1 and not kwargs:
        x = args[0]
        return wrap_output(fn(x._value), x._levels)
    levels, nd = _levels_nd(_tensor_items(args, kwargs))
    args = list(args)
    if any(type(t) is _BT and logical_ndim(t) == 0 for t in _tensor_items(args, kwargs)):
        kwargs = dict(kwargs)
        _scalar_promotion(args, kwargs, levels)
    a2 = [align(a, levels, nd) if type(a) is _BT else a for a in args]
    k2 = {k: align(v, levels, nd) if type(v) is _BT else v for k, v in kwargs.items()}
    return wrap_output(fn(*a2, **k2), levels)


def inplace_broadcasting(fn, args: tuple, kwargs: dict):
    """``x.op_(...)``: the op on ``x``'s physical value, its other operands aligned to ``x``'s
    levels (torch's error if one is batched where ``x`` is not)."""
    self = args[0]
    if type(self) is not _BT:
        raise RuntimeError(INPLACE_ERROR.format(op=getattr(fn, "__name__", "inplace")))
    levels = self._levels
    nd = self._value.ndim - len(levels)
    for t in _tensor_items(args[1:], kwargs):
        if type(t) is _BT and not set(t._levels) <= set(levels):
            raise RuntimeError(INPLACE_ERROR.format(op="inplace arithmetic"))
    a2 = [align(a, levels, nd) if type(a) is _BT else a for a in args[1:]]
    k2 = {k: align(v, levels, nd) if type(v) is _BT else v for k, v in kwargs.items()}
    fn(self._value, *a2, **k2)
    return self


def self_only(fn, args: tuple, kwargs: dict):
    """Ops where only the first operand's values matter (the others lend a dtype)."""
    x = args[0]
    rest = [value_of(a) for a in args[1:]]
    kw = {k: value_of(v) for k, v in kwargs.items()}
    return wrap_output(fn(value_of(x), *rest, **kw), levels_of(x))


def unbatched_result(fn, args: tuple, kwargs: dict):
    """``x.new_zeros(...)`` and friends: a fresh tensor that does not depend on ``x``'s values."""
    return fn(value_of(args[0]), *args[1:], **kwargs)


def _pure_inplace_name(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__")


# elementwise ops (registry names: methods, functions and aliases share them)
BROADCASTING = _words("""
add sub rsub mul div floor_divide pow neg square positive remainder fmod atan2 arctan2 hypot
logaddexp logaddexp2 xlogy copysign heaviside float_power lerp addcmul addcdiv _rtruediv
_rfloordiv _rpow _rmod __rsub__ __rtruediv__ __rfloordiv__ __rpow__ __rmod__ clamp clamp_min
clamp_max maximum minimum fmax fmin eq ne lt le gt ge logical_not logical_and logical_or
logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift _rlshift
_rrshift bitwise_not isnan isinf isfinite isclose _invert exp log sqrt sin cos tanh sigmoid
reciprocal relu abs sign exp2 expm1 log2 log10 log1p rsqrt tan asin acos atan sinh cosh asinh
acosh atanh erf erfc erfinv sinc deg2rad rad2deg logit floor ceil trunc fix round frac
nan_to_num clone contiguous threshold selu celu hardshrink lgamma digamma polygamma mvlgamma
igamma igammac i0 zeros_like ones_like empty_like full_like masked_fill conj conj_physical
resolve_conj resolve_neg real imag angle sgn tril triu cdist float double half bfloat16 long
int short char byte bool
""")
# ops over their last dims that broadcast any leading dims
BROADCASTING += ["F." + n for n in _words("""
relu relu6 elu selu celu gelu silu mish leaky_relu hardtanh hardsigmoid hardswish sigmoid tanh
softplus softsign softshrink hardshrink tanhshrink threshold logsigmoid pairwise_distance
scaled_dot_product_attention pixel_shuffle pixel_unshuffle relu_ elu_ celu_ selu_ leaky_relu_
hardtanh_ threshold_
""")]
BROADCASTING += ["special." + n for n in _words("""
expit exp2 expm1 log1p logit erf erfc erfcx erfinv ndtr ndtri log_ndtr i0 i0e i1 i1e xlogy
xlog1py gammaln digamma psi polygamma multigammaln entr sinc round bessel_j0 bessel_j1
bessel_y0 bessel_y1 airy_ai gammainc gammaincc zeta lgamma mvlgamma modified_bessel_i0
modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0
scaled_modified_bessel_k1 spherical_bessel_j0 chebyshev_polynomial_t chebyshev_polynomial_u
chebyshev_polynomial_v chebyshev_polynomial_w shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w
hermite_polynomial_h hermite_polynomial_he laguerre_polynomial_l legendre_polynomial_p
""")]
# ops over the last two dims (matrices) that take any leading batch dims, and the rest of the
# elementwise registry ops
BROADCASTING += _words("""
det inverse logdet slogdet matrix_power pinverse svd cholesky_solve pairwise_distance
pixel_shuffle pixel_unshuffle view_as_real view_as_complex complex polar
""")

for _k in BROADCASTING:
    RULES[_k] = broadcasting
for _k in ("to", "type_as", "type"):
    RULES[_k] = self_only
for _k in ("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"):
    RULES[_k] = unbatched_result
for _k in ("copy_", "fill_", "zero_", "F.relu_", "F.elu_", "F.celu_", "F.selu_", "F.leaky_relu_",
           "F.hardtanh_", "F.threshold_", "celu_", "selu_", "threshold_"):
    RULES[_k] = inplace_broadcasting


def _install_inplace_rules() -> None:
    """``add_`` and every in-place form whose out-of-place op broadcasts: in place on the
    physical value."""
    from ..ops._registry import REGISTRY

    for info in REGISTRY.values():
        if info.inplace and RULES.get(info.name) is broadcasting:
            RULES.setdefault(info.name + "_", inplace_broadcasting)


_install_inplace_rules()


@rule("where")
def _where(fn, args, kwargs):
    if len(args) + len(kwargs) == 1:
        raise dynamic_shape_error("nonzero")
    return broadcasting(fn, args, kwargs)


@rule("nonzero", "unique", "argwhere", "masked_select", "unique_consecutive")
def _dynamic(fn, args, kwargs):
    name = getattr(fn, "__name__", "nonzero")
    if name == "masked_select" and any(type(t) is _BT for t in _tensor_items(args[1:], kwargs)):
        raise RuntimeError("vmap: Attempted to vmap over `mask` in torch.masked_select(self, "
                           "mask) We cannot support this because for each batch this would "
                           "return a differently shaped Tensor. Please file an issue at "
                           "https://github.com/pytorch/pytorch/issues if you need this feature.")
    if name == "masked_select":
        return loop_fallback("masked_select", fn, args, kwargs)
    raise dynamic_shape_error("_unique2" if "unique" in name else name)


@rule("detach")
def _detach(fn, args, kwargs):
    return args[0].detach()


# ----------------------------------------------------------------------------- dims
def _dim_rule(params: tuple = ("dim",), none: str = "all", extra: int = 0):
    """An op whose ``params`` are dims of its tensor operand(s): shift them past the batch dims.

    ``none``: what a missing/None dim means: "all" (reduce every logical dim), "flatten" (the
    op flattens: flatten the logical dims first), "softmax" (torch's legacy implicit dim).
    ``extra``: the op's output has that many more dims that the dim can point at (unsqueeze).
    """
    def r(fn, args, kwargs):
        ba = _bind(fn, args, kwargs)
        arguments = ba.arguments
        names = [k for k, v in arguments.items() if isinstance(v, Tensor)]
        levels, nd = _levels_nd(arguments[k] for k in names)
        nb = len(levels)
        for k in names:
            if type(arguments[k]) is _BT:
                arguments[k] = align(arguments[k], levels, nd)
        main = names[0]
        scalar = nd == 0 and not extra
        flat = None
        for p in params:
            d = arguments.get(p, _default(fn, p))
            if isinstance(d, (list, tuple)):
                dims = tuple(d)
                if not dims and none == "all":
                    d = None
            if d is None or not isinstance(d, (int, list, tuple)) or isinstance(d, bool):
                if none == "softmax":
                    d = 0 if nd in (0, 1, 3) else 1
                elif none == "all":
                    d = tuple(range(nd)) if nd else None
                    if d is None:  # a logical scalar: nothing to reduce over but itself
                        scalar = True
                        d = 0
                elif none == "flatten":
                    flat = tuple(arguments[main].shape)
                    for k in names:
                        v = arguments[k]
                        arguments[k] = v.reshape(*v.shape[:nb], -1) if v.ndim >= nb else v
                    arguments[p] = nb
                    continue
                else:
                    continue
            if scalar:
                for k in names:
                    arguments[k] = arguments[k].unsqueeze(-1)
            n = nd + extra
            if isinstance(d, (list, tuple)):
                arguments[p] = type(d)(_wrap_dim(x, n) + nb for x in d)
            else:
                arguments[p] = _wrap_dim(d, n) + nb
        out = _call(fn, ba)
        if flat is not None:
            keep = arguments.get("keepdim", False)
            if getattr(fn, "__name__", "") in ("roll",):
                out = out.reshape(flat)
            elif keep:
                out = _map_tensors(out, lambda o: o.reshape(*o.shape[:nb], *(1,) * nd))
            elif getattr(fn, "__name__", "") in ("median", "nanmedian"):
                out = out[0]  # without a dim, torch's median is the value alone
        elif scalar:
            out = _map_tensors(out, lambda o: o.squeeze(-1) if o.ndim > nb else o)
        return wrap_output(out, levels)
    return r


def _map_tensors(out, f):
    if isinstance(out, Tensor):
        return f(out)
    if isinstance(out, (tuple, list)):
        items = [f(o) if isinstance(o, Tensor) else o for o in out]
        return type(out)(*items) if hasattr(type(out), "_fields") else type(out)(items)
    return out


for _names, _kw in (
        ("sum nansum mean nanmean amax amin std var std_mean var_mean logsumexp count_nonzero",
         {}),
        ("prod argmax argmin all any median nanmedian aminmax", {"none": "flatten"}),
        (("cumsum cumprod cummax cummin logcumsumexp sort argsort topk kthvalue mode unbind split "
          "split_with_sizes chunk tensor_split narrow F.normalize F.glu cosine_similarity "
          "F.cosine_similarity unflatten"), {}),
        ("softmax log_softmax F.softmax F.log_softmax F.softmin", {"none": "softmax"}),
):
    for _n in _names.split():
        RULES[_n] = _dim_rule(**_kw)
RULES["transpose"] = RULES["swapaxes"] = RULES["swapdims"] = _dim_rule(("dim0", "dim1"))
RULES["movedim"] = RULES["moveaxis"] = _dim_rule(("source", "destination"))
RULES["diagonal"] = _dim_rule(("dim1", "dim2"))
RULES["unfold"] = _dim_rule(("dimension",))
RULES["roll"] = _dim_rule(("dims",), none="flatten")
RULES["flatten"] = _dim_rule(("start_dim", "end_dim"))
RULES["repeat_interleave"] = _dim_rule(none="flatten")
RULES["take_along_dim"] = _dim_rule(none="flatten")
RULES["rot90"] = _dim_rule(("dims",))
RULES["special.softmax"] = RULES["special.log_softmax"] = _dim_rule(none="softmax")
RULES["special.logsumexp"] = _dim_rule()


@rule("diag")
def _diag(fn, args, kwargs):
    """``diag``: a vector's diagonal matrix, or a matrix's diagonal (its ``offset``)."""
    x = args[0]
    offset = args[1] if len(args) > 1 else kwargs.get("diagonal", 0)
    if logical_ndim(x) == 1:
        return x.diag_embed(offset)
    return x.diagonal(offset)


@rule("norm")
def _norm(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    p = ba.arguments.get("p", "fro")
    return _dim_rule(none="all" if p == "nuc" else "flatten")(fn, args, kwargs)


@rule("max", "min")
def _max_min(fn, args, kwargs):
    other = args[1] if len(args) > 1 else kwargs.get("other", kwargs.get("dim"))
    if isinstance(other, Tensor):
        if len(args) > 1:
            return broadcasting(fn, args, kwargs)
        kw = dict(kwargs)
        o = kw.pop("other", None)
        if o is None:
            o = kw.pop("dim")
        return broadcasting(fn, (args[0], o), kw)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    x = args[0]
    if dim is None:  # full reduction, a tensor: as amax/amin of the flattened examples
        v = x._value
        nb = len(x._levels)
        flat = v.reshape(*v.shape[:nb], -1)
        out = flat.amax(nb) if fn.__name__.startswith("max") else flat.amin(nb)
        return wrap(out, x._levels)
    return _dim_rule()(fn, args, kwargs)


@rule("cross")
def _cross(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    if ba.arguments.get("dim") is None:
        shape = ba.arguments["input"].shape
        other = ba.arguments["other"].shape
        n = max(len(shape), len(other))
        full = [max(a, b) for a, b in zip((1,) * (n - len(shape)) + tuple(shape),
                                          (1,) * (n - len(other)) + tuple(other))]
        ba.arguments["dim"] = next(i for i, s in enumerate(full) if s == 3)
    return _dim_rule()(fn, ba.args, ba.kwargs)


@rule("flip")
def _flip(fn, args, kwargs):
    x = args[0]
    dims = args[1:]
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    if "dims" in kwargs:
        dims = tuple(kwargs["dims"])
    nd, nb = logical_ndim(x), len(x._levels)
    return wrap(x._value.flip([_wrap_dim(d, nd) + nb for d in dims]), x._levels)


def _flip_fixed(dims: tuple):
    def r(fn, args, kwargs):
        return _flip(fn, (args[0], dims), {})
    return r


RULES["fliplr"], RULES["flipud"] = _flip_fixed((1,)), _flip_fixed((0,))


@rule("msort")
def _msort(fn, args, kwargs):
    x = args[0]
    return wrap(x._value.sort(len(x._levels))[0], x._levels)


@rule("trace")
def _trace(fn, args, kwargs):
    x = args[0]
    nb = len(x._levels)
    return wrap(x._value.diagonal(0, nb, nb + 1).sum(-1), x._levels)


# ----------------------------------------------------------------------------- shapes
def _sizes(args: tuple, kwargs: dict, name: str = "size") -> tuple:
    if kwargs.get(name) is not None or kwargs.get("shape") is not None:
        s = kwargs.get(name, kwargs.get("shape"))
        return tuple(s) if not isinstance(s, int) else (s,)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _batch_shape(x) -> tuple:
    return tuple(x._value.shape[:len(x._levels)])


@rule("view", "reshape")
def _reshape(fn, args, kwargs):
    x = args[0]
    shape = _sizes(args[1:], kwargs, "size" if "size" in kwargs else "shape")
    if len(shape) == 1 and not isinstance(shape[0], int):  # x.view(dtype)
        return wrap(x._value.view(shape[0]), x._levels)
    return wrap(x._value.reshape(*_batch_shape(x), *shape), x._levels)


@rule("view_as", "reshape_as")
def _reshape_as(fn, args, kwargs):
    return args[0].reshape(tuple(args[1].shape))


@rule("ravel")
def _ravel(fn, args, kwargs):
    x = args[0]
    return wrap(x._value.reshape(*_batch_shape(x), -1), x._levels)


@rule("permute")
def _permute(fn, args, kwargs):
    x = args[0]
    dims = _sizes(args[1:], kwargs, "dims")
    nd, nb = logical_ndim(x), len(x._levels)
    return wrap(x._value.permute(*range(nb), *[_wrap_dim(d, nd) + nb for d in dims]),
                x._levels)


@rule("t")
def _t(fn, args, kwargs):
    x = args[0]
    nb = len(x._levels)
    if logical_ndim(x) < 2:
        return x
    return wrap(x._value.transpose(nb, nb + 1), x._levels)


def _reverse_dims(fn, args, kwargs):
    """``x.T``: the logical dims reversed."""
    x = args[0]
    nb, nd = len(x._levels), logical_ndim(x)
    v = x._value
    return wrap(v.permute(*range(nb), *range(v.ndim - 1, nb - 1, -1)) if nd > 1 else v,
                x._levels)


def _swap_last(fn, args, kwargs):
    """``x.mT``: the last two dims swapped."""
    x = args[0]
    return wrap(x._value.transpose(-2, -1), x._levels)


RULES["T"] = RULES["H"] = _reverse_dims
RULES["mT"] = RULES["mH"] = _swap_last


@rule("unsqueeze")
def _unsqueeze(fn, args, kwargs):
    x = args[0]
    d = args[1] if len(args) > 1 else kwargs["dim"]
    nd, nb = logical_ndim(x), len(x._levels)
    return wrap(x._value.unsqueeze(_wrap_dim(d, nd + 1) + nb), x._levels)


@rule("squeeze")
def _squeeze(fn, args, kwargs):
    x = args[0]
    d = args[1] if len(args) > 1 else kwargs.get("dim")
    nd, nb = logical_ndim(x), len(x._levels)
    shape = x._value.shape[nb:]
    if d is None:
        dims = [i for i, s in enumerate(shape) if s == 1]
    else:
        dims = [d] if isinstance(d, int) else list(d)
        dims = [_wrap_dim(i, nd) for i in dims]
        dims = [i for i in dims if nd and shape[i] == 1]
    v = x._value
    for i in sorted(dims, reverse=True):
        v = v.squeeze(i + nb)
    return wrap(v, x._levels)


@rule("expand", "broadcast_to")
def _expand(fn, args, kwargs):
    x = args[0]
    sizes = _sizes(args[1:], kwargs, "size")
    v = align(x, x._levels, len(sizes))
    return wrap(v.expand(*_batch_shape(x), *sizes), x._levels)


@rule("expand_as")
def _expand_as(fn, args, kwargs):
    return args[0].expand(tuple(args[1].shape))


@rule("repeat")
def _repeat(fn, args, kwargs):
    x = args[0]
    reps = _sizes(args[1:], kwargs, "repeats")
    nb = len(x._levels)
    v = align(x, x._levels, len(reps))
    return wrap(v.repeat(*(1,) * nb, *reps), x._levels)


@rule("tile")
def _tile(fn, args, kwargs):
    x = args[0]
    reps = _sizes(args[1:], kwargs, "dims")
    nd = logical_ndim(x)
    reps = (1,) * (nd - len(reps)) + tuple(reps)
    return _repeat(fn, (x, *reps), {})


@rule("diag_embed")
def _diag_embed(fn, args, kwargs):
    return _dim_rule(("dim1", "dim2"), extra=1)(fn, args, kwargs)


@rule("atleast_1d", "atleast_2d", "atleast_3d")
def _atleast(fn, args, kwargs):
    n = int(fn.__name__[-2])
    tensors = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    out = []
    for t in tensors:
        nd = logical_ndim(t)
        if nd >= n:
            out.append(t)
            continue
        if n == 3 and nd == 2:
            out.append(t.unsqueeze(-1))
        elif n == 3 and nd == 1:
            out.append(t.reshape(1, -1, 1))
        else:
            out.append(t.reshape(*(1,) * (n - nd), *t.shape))
    if len(args) == 1 and not isinstance(args[0], (list, tuple)):
        return out[0]
    return tuple(out)


def _tensors_dim(fn, args, kwargs) -> tuple[list, int]:
    ba = _bind(fn, args, kwargs)
    tensors = list(ba.arguments["tensors"])
    dim = ba.arguments.get("dim", 0)
    return tensors, dim


@rule("cat", "concat", "concatenate")
def _cat(fn, args, kwargs):
    tensors, dim = _tensors_dim(fn, args, kwargs)
    levels, nd = _levels_nd(tensors)
    nb = len(levels)
    phys = [expand_to(t, levels) for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    return wrap(fn(phys, _wrap_dim(dim, nd) + nb), levels)


@rule("stack")
def _stack(fn, args, kwargs):
    tensors, dim = _tensors_dim(fn, args, kwargs)
    levels, nd = _levels_nd(tensors)
    phys = [expand_to(t, levels) for t in tensors]
    return wrap(fn(phys, _wrap_dim(dim, nd + 1) + len(levels)), levels)


@rule("hstack", "vstack", "dstack", "column_stack", "row_stack")
def _hvstack(fn, args, kwargs):
    from ..ops.shape import cat

    tensors = list(args[0] if args else kwargs["tensors"])
    name = fn.__name__
    if name in ("vstack", "row_stack"):
        return _cat(cat, (_atleast(_AT2, tuple(tensors), {}), 0), {})
    if name == "dstack":
        return _cat(cat, (_atleast(_AT3, tuple(tensors), {}), 2), {})
    if name == "column_stack":
        cols = [t.reshape(-1, 1) if logical_ndim(t) <= 1 else t for t in tensors]
        return _cat(cat, (cols, 1), {})
    ts = _atleast(_AT1, tuple(tensors), {})
    return _cat(cat, (ts, 0 if logical_ndim(ts[0]) == 1 else 1), {})


def _named(name: str):
    def f():
        pass
    f.__name__ = name
    return f


_AT1, _AT2, _AT3 = _named("atleast_1d"), _named("atleast_2d"), _named("atleast_3d")


@rule("broadcast_tensors")
def _broadcast_tensors(fn, args, kwargs):
    tensors = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    shapes = [tuple(t.shape) for t in tensors]
    n = max(len(s) for s in shapes)
    full = [1] * n
    for s in shapes:
        for i, v in enumerate((1,) * (n - len(s)) + s):
            full[i] = max(full[i], v)
    return tuple(t.expand(tuple(full)) for t in tensors)


# ----------------------------------------------------------------------------- indexing
def _index_plan(x: BatchedTensor, key, extra_levels: tuple = ()):
    """Plan ``x[key]`` on the physical value: the basic (view) part first, then the advanced
    (tensor) part, as torch applies them. Returns ``(levels, v1, adv_key, move, nd_res)``:
    ``v1`` is the physical value after the basic part (expanded to ``levels`` if an index is
    batched), ``adv_key`` the physical advanced key (None if none), ``move`` the movedim that
    puts the result's dims in torch's order, ``nd_res`` the result's logical ndim."""
    from ..ops.creation import arange, tensor

    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if isinstance(k, list):
            k = tensor(k)
        if isinstance(k, bool) or (isinstance(k, Tensor) and k.dtype.is_complex):
            raise NotImplementedError("vmap: indexing with a Python bool is not supported")
        items.append(k)
    nd = logical_ndim(x)
    consumed = sum((k.ndim if k.dtype.name == "bool" else 1) if isinstance(k, Tensor) else
                   0 if k is None or k is Ellipsis else 1 for k in items)
    if any(k is Ellipsis for k in items):
        i = next(i for i, k in enumerate(items) if k is Ellipsis)
        items[i:i + 1] = [slice(None)] * (nd - consumed)
    basic: list = []
    adv: list = []  # (position in the basic result, index tensor)
    pos = 0
    for k in items:
        if isinstance(k, Tensor):
            if k.dtype.name == "bool":
                if type(k) is _BT:
                    raise dynamic_shape_error("nonzero")
                m = k.ndim
                basic.extend([slice(None)] * m)
                for j, idx in enumerate(k.nonzero().unbind(1)):
                    adv.append((pos + j, idx))
                pos += m
                continue
            basic.append(slice(None))
            adv.append((pos, k))
            pos += 1
        elif k is None or isinstance(k, slice):
            basic.append(k)
            pos += 1
        else:
            basic.append(k)
    levels = x._levels
    nb = len(levels)
    v1 = x._value[(slice(None),) * nb + tuple(basic)] if basic else x._value
    nd1 = v1.ndim - nb
    if not adv:
        return levels, v1, None, None, nd1
    positions = [p for p, _ in adv]
    idx_levels, idx_nd = _levels_nd(t for _, t in adv)
    n_idx = idx_nd
    consecutive = positions == list(range(positions[0], positions[0] + len(positions)))
    nd_res = nd1 - len(positions) + n_idx
    full = union(levels, idx_levels, extra_levels)
    if full == levels and not idx_levels:
        key2 = [slice(None)] * (nb + positions[-1] + 1)
        for p, t in adv:
            key2[nb + p] = t
        move = None
        if not consecutive:  # the index dims go first, before the batch dims
            move = (tuple(range(n_idx, n_idx + nb)), tuple(range(nb)))
        return levels, v1, tuple(key2), move, nd_res
    nbf = len(full)
    v1 = expand_to(wrap(v1, levels), full)
    key2 = []
    for j, lv in enumerate(full):
        shape = [1] * (nbf + n_idx)
        size = v1.shape[j]
        shape[j] = size
        key2.append(arange(size).reshape(shape))
    key2.extend([slice(None)] * (positions[-1] + 1))
    for p, t in adv:
        key2[nbf + p] = align(t, full, n_idx)
    move = None
    if consecutive and positions[0] > 0:
        p0 = positions[0]
        move = (tuple(range(nbf, nbf + n_idx)), tuple(range(nbf + p0, nbf + p0 + n_idx)))
    return full, v1, tuple(key2), move, nd_res


@rule("__getitem__", "getitem")
def _getitem(fn, args, kwargs):
    x, key = args
    levels, v1, key2, move, _ = _index_plan(x, key)
    out = v1 if key2 is None else v1[key2]
    if move is not None:
        out = out.movedim(*move)
    return wrap(out, levels)


@rule("__setitem__", "setitem")
def _setitem(fn, args, kwargs):
    x, key, value = args
    levels = x._levels
    for t in [value, *(key if isinstance(key, tuple) else (key,))]:
        if type(t) is _BT and not set(t._levels) <= set(levels):
            raise RuntimeError(INPLACE_ERROR.format(op="inplace arithmetic"))
    _, v1, key2, move, nd_res = _index_plan(x, key)
    v = align(value, levels, nd_res) if isinstance(value, Tensor) else value
    if key2 is None:
        if isinstance(v, Tensor):
            v1.copy_(v)
        else:
            v1.fill_(v)
        return
    if isinstance(v, Tensor) and move is not None:
        v = v.movedim(move[1], move[0])
    v1[key2] = v


@rule("index_select")
def _index_select(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    x, dim, index = ba.arguments["input"], ba.arguments["dim"], ba.arguments["index"]
    if type(x) is not _BT:
        x = wrap(expand_to(x, index._levels), index._levels)
    d = _wrap_dim(dim, logical_ndim(x))
    if logical_ndim(x) == 0:
        return x.reshape(1)[index].reshape(())
    return _getitem(None, (x, (slice(None),) * d + (index,)), {})


@rule("gather")
def _gather(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    levels, nd = _levels_nd([a["input"], a["index"]])
    a["input"] = expand_to(a["input"], levels)
    a["index"] = expand_to(a["index"], levels)
    a["dim"] = _wrap_dim(a["dim"], nd) + len(levels)
    return wrap(_call(fn, ba), levels)


@rule("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill",
      "scatter_", "scatter_add_", "scatter_reduce_", "index_add_", "index_copy_", "index_fill_")
def _scatter(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    names = [k for k, v in a.items() if isinstance(v, Tensor)]
    self_name = names[0]
    index_1d = "index" in a and fn.__name__.startswith("index_")
    if index_1d and type(a["index"]) is _BT:
        return loop_fallback(fn.__name__, fn, args, kwargs)
    levels, _ = _levels_nd(a[k] for k in names)
    nd = logical_ndim(a[self_name])
    inplace = fn.__name__.endswith("_")
    if inplace and levels_of(a[self_name]) != levels:
        raise RuntimeError(INPLACE_ERROR.format(op="inplace arithmetic"))
    for k in names:
        if index_1d and k == "index":
            continue
        a[k] = expand_to(a[k], levels)
    a["dim"] = _wrap_dim(a["dim"], nd) + len(levels)
    out = _call(fn, ba)
    return args[0] if inplace else wrap(out, levels)


# ----------------------------------------------------------------------------- products
def matmul(a, b):
    """``a @ b`` for BatchedTensors or plain tensors (torch's 1-D and broadcasting rules)."""
    la, lb = levels_of(a), levels_of(b)
    na, nb_ = logical_ndim(a), logical_ndim(b)
    if not lb and nb_ <= 2 and la:  # a plain matrix or vector on the right: one call
        v = a._value
        if nb_ == 2 and na >= 2 and v.ndim > 2:  # one GEMM over every example's rows
            out = v.reshape(-1, v.shape[-1]).matmul(b)
            return wrap(out.reshape(*v.shape[:-1], out.shape[-1]), la)
        return wrap(v.matmul(b), la)
    levels = union(la, lb)
    n = len(levels)
    av = align(a, levels)
    bv = align(b, levels)
    if na == 1:
        av = av.unsqueeze(-2)
    if nb_ == 1:
        bv = bv.unsqueeze(-1)
    ma, mb = max(na, 2), max(nb_, 2)
    m = max(ma, mb)
    av = _insert_dims(av, n, m - ma)
    bv = _insert_dims(bv, n, m - mb)
    out = av.matmul(bv)
    if na == 1:
        out = out.squeeze(-2)
    if nb_ == 1:
        out = out.squeeze(-1)
    return wrap(out, levels)


@rule("matmul", "mm", "bmm", "mv", "dot", "vdot", "__matmul__")
def _matmul(fn, args, kwargs):
    a = args[0]
    b = args[1] if len(args) > 1 else next(iter(kwargs.values()))
    return matmul(a, b)


@rule("__rmatmul__", "rmatmul")
def _rmatmul(fn, args, kwargs):
    return matmul(args[1], args[0])


@rule("outer", "ger")
def _outer(fn, args, kwargs):
    a, b = args[0], args[1] if len(args) > 1 else next(iter(kwargs.values()))
    return a.unsqueeze(-1) * b.unsqueeze(-2)


def _scaled(x, c):
    return x if c == 1 else x * c


@rule("addmm", "addmv", "addr", "baddbmm", "addbmm")
def _addmm(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    name = fn.__name__
    tensors = [v for v in a.values() if isinstance(v, Tensor)]
    inp, m1, m2 = tensors[:3]
    beta, alpha = a.get("beta", 1), a.get("alpha", 1)
    prod = _outer(None, (m1, m2), {}) if name == "addr" else matmul(m1, m2)
    if name == "addbmm":
        prod = prod.sum(0)
    prod = _scaled(prod, alpha)
    return prod if beta == 0 else _scaled(inp, beta) + prod


@rule("einsum")
def _einsum(fn, args, kwargs):
    eq = args[0].replace(" ", "")
    ops = args[1:]
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = tuple(ops[0])
    lhs, arrow, rhs = eq.partition("->")
    if not arrow:
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    levels = union(*[levels_of(o) for o in ops])
    free = [c for c in string.ascii_letters if c not in eq]
    letter = dict(zip(levels, free))
    terms = lhs.split(",")
    new_terms, phys = [], []
    for term, o in zip(terms, ops):
        lv = levels_of(o)
        new_terms.append("".join(letter[x] for x in lv) + term)
        phys.append(value_of(o))
    out_term = "".join(letter[x] for x in levels) + rhs
    return wrap(fn(",".join(new_terms) + "->" + out_term, *phys), levels)


@rule("F.linear")
def _linear(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    x, w, b = ba.arguments["input"], ba.arguments["weight"], ba.arguments.get("bias")
    if type(w) is not _BT and type(b) is not _BT:
        v = value_of(x)
        return wrap(fn(v, w, b), levels_of(x))
    if logical_ndim(w) == 2 and _prod(x.shape[:-1]) <= 8:
        # NOTE: few rows per example (per-sample gradients): one einsum. A batched matmul's
        # backward makes the weight's gradient as one k=1 GEMM per example, which NumPy's BLAS
        # runs ~5x slower (11.6 vs 2.5 ms forward+backward, 256 examples of 1 x 128 @ 128 x 128)
        from ..ops.products import einsum
        out = _einsum(einsum, ("...i,oi->...o", x, w), {})
    else:
        out = matmul(x, w if logical_ndim(w) == 1 else w.mT)
    return out if b is None else out + b


@rule("F.bilinear")
def _bilinear(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    x1, x2, w, b = a["input1"], a["input2"], a["weight"], a.get("bias")
    from ..ops.products import einsum
    out = _einsum(einsum, ("...i,oij,...j->...o", x1, w, x2), {})
    return out if b is None else out + b


# ----------------------------------------------------------------------------- nn layers
def _fold_into_n(k_of):
    """NCHW-style ops with a plain weight: fold the batch dims (and N) into one N."""
    def r(fn, args, kwargs):
        x = args[0] if args else kwargs["input"]
        rest_batched = [t for t in _tensor_items(args[1:], kwargs) if type(t) is _BT and
                        t is not x]
        if rest_batched or type(x) is not _BT:
            return loop_fallback(fn.__name__, fn, args, kwargs)
        nd = logical_ndim(x)
        k = k_of(nd)
        v = x._value
        lead = tuple(v.shape[:v.ndim - k])
        flat = v.reshape(-1, *v.shape[v.ndim - k:])
        if args:
            out = fn(flat, *args[1:], **kwargs)
        else:
            out = fn(**{**kwargs, "input": flat})
        return wrap_output(_map_tensors(out, lambda o: o.reshape(*lead, *o.shape[1:])),
                           x._levels)
    return r


def _channels_and_space(d: int):
    """``k_of`` for an op over (C, *d spatial dims) per sample."""
    def k_of(nd: int) -> int:
        return d + 1
    return k_of


def _spatial_dims(name: str) -> int:
    for d in (1, 2, 3):
        if f"{d}d" in name:
            return d
    return 0


for _n in _words("""avg_pool1d avg_pool2d avg_pool3d max_pool1d max_pool2d max_pool3d
max_pool1d_with_indices max_pool2d_with_indices max_pool3d_with_indices adaptive_avg_pool1d
adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d
adaptive_max_pool3d adaptive_max_pool1d_with_indices adaptive_max_pool2d_with_indices
adaptive_max_pool3d_with_indices lp_pool1d lp_pool2d lp_pool3d"""):
    RULES["F." + _n] = RULES[_n] = _fold_into_n(_channels_and_space(_spatial_dims(_n)))
for _n in ("interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "local_response_norm", "channel_shuffle", "native_channel_shuffle"):
    RULES["F." + _n] = _fold_into_n(lambda nd: nd - 1)
RULES["F.unfold"] = _fold_into_n(lambda nd: 3)
RULES["F.fold"] = _fold_into_n(lambda nd: 2)


@rule("F.pad")
def _pad(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    mode = ba.arguments.get("mode", "constant")
    if mode == "constant":
        return broadcasting(fn, args, kwargs)
    k = len(ba.arguments["pad"]) // 2
    return _fold_into_n(lambda nd: k + 1)(fn, args, kwargs)


def _conv(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    x, w, b = a["input"], a["weight"], a.get("bias")
    d = _spatial_dims(fn.__name__)
    if type(w) is not _BT and type(b) is not _BT:
        return _fold_into_n(lambda nd: d + 1)(fn, args, kwargs)
    if "transpose" in fn.__name__:
        return loop_fallback(fn.__name__, fn, args, kwargs)
    levels = union(levels_of(x), levels_of(w), levels_of(b))
    nb = len(levels)
    sizes = batch_sizes(levels)
    bt = _prod(sizes)
    groups = a.get("groups", 1)
    xv = expand_to(x, levels)
    has_n = xv.ndim - nb == d + 2
    xv = xv.reshape(bt, *xv.shape[nb:])
    if not has_n:
        xv = xv.unsqueeze(1)
    # (Bt, N, C, *sp) -> (N, Bt*C, *sp): the examples' channels side by side
    xv = xv.movedim(0, 1)
    xv = xv.reshape(xv.shape[0], -1, *xv.shape[3:])
    wv = expand_to(w, levels)
    wv = wv.reshape(-1, *wv.shape[nb + 1:])
    a["input"], a["weight"], a["groups"] = xv, wv, groups * bt
    if b is not None:
        a["bias"] = expand_to(b, levels).reshape(-1)
    out = _call(fn, ba)  # (N, Bt*O, *sp')
    out = out.reshape(out.shape[0], bt, -1, *out.shape[2:]).movedim(1, 0)
    if not has_n:
        out = out.squeeze(1)
    return wrap(out.reshape(*sizes, *out.shape[1:]), levels)


for _n in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"):
    RULES[_n] = RULES["F." + _n] = _conv


@rule("F.layer_norm", "layer_norm")
def _layer_norm(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    x, w, b = a["input"], a.get("weight"), a.get("bias")
    if type(w) is not _BT and type(b) is not _BT:
        return wrap(fn(value_of(x), a["normalized_shape"], w, b, a.get("eps", 1e-5)),
                    levels_of(x))
    y = wrap(fn(value_of(x), a["normalized_shape"], None, None, a.get("eps", 1e-5)),
             levels_of(x))
    if w is not None:
        y = y * w
    return y if b is None else y + b


def _channel_affine(y, w, b):
    """``y * w + b`` with ``w``/``b`` of shape (C,) applied at channel dim 1 of (N, C, *)."""
    nd = logical_ndim(y)
    if w is not None:
        y = y * w.reshape(-1, *(1,) * (nd - 2))
    if b is not None:
        y = y + b.reshape(-1, *(1,) * (nd - 2))
    return y


@rule("F.group_norm", "group_norm")
def _group_norm(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    x, w, b = a["input"], a.get("weight"), a.get("bias")
    if type(w) is _BT or type(b) is _BT:
        y = _group_norm(fn, (x, a["num_groups"], None, None, a.get("eps", 1e-5)), {})
        return _channel_affine(y, w, b)
    return _fold_into_n(lambda nd: nd - 1)(fn, args, kwargs)


@rule("F.instance_norm")
def _instance_norm(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    if a.get("running_mean") is not None or a.get("running_var") is not None:
        return loop_fallback("F.instance_norm", fn, args, kwargs)
    x, w, b = a["input"], a.get("weight"), a.get("bias")
    if type(w) is _BT or type(b) is _BT:
        y = _instance_norm(fn, (x,), {"eps": a.get("eps", 1e-5)})
        return _channel_affine(y, w, b)
    return _fold_into_n(lambda nd: nd - 1)(fn, args, kwargs)


BATCH_NORM_ERROR = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which "
    "will be updated in place, were not batched.\nIf you are using a module and do not need "
    "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
    "module and do not need eval mode, please see the functorch website for resources on how "
    "to patch your module to work with vmap")


@rule("F.batch_norm")
def _batch_norm(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    x, rm, rv = a["input"], a.get("running_mean"), a.get("running_var")
    w, b = a.get("weight"), a.get("bias")
    training = a.get("training", False)
    levels = union(*[levels_of(t) for t in (x, rm, rv, w, b) if t is not None])
    if not training:  # per-channel affine with fixed stats: N and the batch dims fold together
        if any(type(t) is _BT for t in (rm, rv, w, b) if t is not None):
            return loop_fallback("F.batch_norm", fn, args, kwargs)
        return _fold_into_n(lambda nd: nd - 1)(fn, args, kwargs)
    if (rm is not None and levels_of(rm) != levels) or (rv is not None and
                                                         levels_of(rv) != levels):
        raise RuntimeError(BATCH_NORM_ERROR)
    # training: statistics over N and space per example: the batch dims join the channels
    nb = len(levels)
    sizes = batch_sizes(levels)
    bt = _prod(sizes)
    xv = expand_to(x, levels)
    rest = xv.shape[nb:]  # (N, C, *sp)
    xv = xv.reshape(bt, *rest).movedim(0, 1).reshape(rest[0], bt * rest[1], *rest[2:])

    def per_channel(t):
        if t is None:
            return None
        return expand_to(t, levels).reshape(-1)

    a["input"] = xv
    a["running_mean"], a["running_var"] = per_channel(rm), per_channel(rv)
    a["weight"], a["bias"] = per_channel(w), per_channel(b)
    out = _call(fn, ba)
    out = out.reshape(rest[0], bt, *rest[1:]).movedim(1, 0)
    return wrap(out.reshape(*sizes, *rest), levels)


@rule("F.embedding", "embedding")
def _embedding(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    idx, w = a["input"], a["weight"]
    if type(w) is not _BT:
        a["input"] = value_of(idx)
        return wrap(_call(fn, ba), levels_of(idx))
    if a.get("padding_idx") is not None or a.get("max_norm") is not None:
        return loop_fallback("F.embedding", fn, args, kwargs)
    from ..ops.creation import arange
    levels = union(levels_of(idx), levels_of(w))
    nb = len(levels)
    wv = expand_to(w, levels)
    vocab = wv.shape[nb]
    iv = expand_to(idx, levels)
    offsets = arange(_prod(wv.shape[:nb])).reshape(*wv.shape[:nb], *(1,) * (iv.ndim - nb))
    a["input"] = iv + offsets * vocab
    a["weight"] = wv.reshape(-1, wv.shape[-1])
    return wrap(_call(fn, ba), levels)


@rule("F.prelu", "prelu")
def _prelu(fn, args, kwargs):
    """One slope, or one per channel (dim 1 of an (N, C, *) input): N takes the batch dims."""
    x, w = args[0], args[1] if len(args) > 1 else kwargs["weight"]
    if type(w) is _BT:
        return loop_fallback("prelu", fn, args, kwargs)
    if w.numel() == 1 or logical_ndim(x) < 2:
        return broadcasting(fn, args, kwargs)
    return _fold_into_n(lambda nd: nd - 1)(fn, args, kwargs)


@rule("F.one_hot")
def _one_hot(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    if ba.arguments.get("num_classes", -1) < 0:
        return loop_fallback("F.one_hot", fn, args, kwargs)
    return broadcasting(fn, args, kwargs)


# ----------------------------------------------------------------------------- losses
def _reduce(out: Tensor, nb: int, reduction: str, first_size: int | None = None):
    dims = tuple(range(nb, out.ndim))
    if reduction == "none" or not dims:
        return out
    if reduction == "sum":
        return out.sum(dims)
    if reduction == "batchmean":
        return out.sum(dims) / (first_size or 1)
    return out.mean(dims)


def elementwise_loss(fn, args, kwargs):
    """Losses that are a mean/sum of an elementwise term: the unreduced loss in one call, then
    each example's reduction."""
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    if a.get("size_average") is not None or a.get("reduce") is not None:
        return loop_fallback(fn.__name__, fn, args, kwargs)
    names = [k for k, v in a.items() if isinstance(v, Tensor)]
    levels, nd = _levels_nd(a[k] for k in names)
    first = a[names[0]]
    first_size = first.shape[0] if logical_ndim(first) else None
    for k in names:
        if type(a[k]) is _BT:
            a[k] = align(a[k], levels, nd)
    reduction = a.get("reduction", _default(fn, "reduction"))
    a["reduction"] = "none"
    out = _call(fn, ba)
    return wrap(_reduce(out, len(levels), reduction, first_size), levels)


for _n in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "poisson_nll_loss", "hinge_embedding_loss", "margin_ranking_loss"):
    RULES["F." + _n] = elementwise_loss


def _class_loss(fn, args, kwargs):
    """``cross_entropy``/``nll_loss``: examples folded into N, the unreduced loss, then each
    example's reduction, weighted as torch's mean is (by the targets' class weights)."""
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    x, t, w = a["input"], a["target"], a.get("weight")
    if a.get("size_average") is not None or a.get("reduce") is not None or type(w) is _BT:
        return loop_fallback(fn.__name__, fn, args, kwargs)
    levels = union(levels_of(x), levels_of(t))
    nb = len(levels)
    sizes = batch_sizes(levels)
    bt = _prod(sizes)
    xv, tv = expand_to(x, levels), expand_to(t, levels)
    nd = xv.ndim - nb
    probs = tv.is_floating_point()
    if nd == 1:  # (C,): one sample per example
        xf = xv.reshape(bt, xv.shape[-1])
        tf = tv.reshape(bt, -1) if probs else tv.reshape(bt)
    else:  # (N, C, *d)
        xf = xv.reshape(bt * xv.shape[nb], *xv.shape[nb + 1:])
        tf = tv.reshape(bt * tv.shape[nb], *tv.shape[nb + 1:])
    reduction = a.get("reduction", "mean")
    a["input"], a["target"], a["reduction"] = xf, tf, "none"
    out = _call(fn, ba)
    # back to (*batch, ) for a (C,) input, (*batch, N, *d) for an (N, C, *d) one
    out = out.reshape(*sizes) if nd == 1 else out.reshape(*sizes, -1, *out.shape[1:])
    dims = tuple(range(nb, out.ndim))
    if reduction == "none":
        return wrap(out, levels)
    total = out.sum(dims) if dims else out
    if reduction == "sum":
        return wrap(total, levels)
    if probs:
        count = _prod(out.shape[nb:])
        return wrap(total / count, levels)
    ignore = a.get("ignore_index", -100)
    keep = tv != ignore
    if w is None:
        denom = keep.to(out.dtype)
    else:
        safe = tv.masked_fill(~keep, 0)
        denom = w[safe] * keep.to(w.dtype)
    denom = denom.sum(tuple(range(nb, denom.ndim))) if denom.ndim > nb else denom
    return wrap(total / denom, levels)


RULES["F.cross_entropy"] = RULES["F.nll_loss"] = _class_loss


# ----------------------------------------------------------------------------- randomness
def _random_levels() -> tuple:
    """The levels whose examples draw their own randomness (torch's error in 'error' mode)."""
    for lv in STACK:
        if lv.randomness == "error":
            raise RuntimeError(RANDOM_ERROR)
    return tuple(lv.id for lv in STACK if lv.randomness == "different")


def _factory(fn, args, kwargs):
    """``rand``/``randn``/``randint``/``normal`` of a size, inside vmap: one draw per example at
    the 'different' levels (their sizes prefixed), one shared draw otherwise."""
    different = _random_levels()
    if not different or any(isinstance(t, Tensor) for t in _tensor_items(args, kwargs)):
        return _random_tensor_op(fn, args, kwargs, different)
    prefix = tuple(batch_sizes(different))
    name = fn.__name__
    args, kwargs = list(args), dict(kwargs)
    if kwargs.get("size") is not None:
        kwargs["size"] = prefix + tuple(kwargs["size"])
    elif name == "randint":
        args[-1] = prefix + tuple(args[-1])
    elif name == "normal":
        args[2] = prefix + tuple(args[2])
    elif name == "randperm":
        return loop_fallback("randperm", lambda *a, **k: fn(*args, **kwargs),
                             (wrap(_zeros(prefix), different),), {})
    elif len(args) == 1 and isinstance(args[0], (tuple, list)):
        args[0] = prefix + tuple(args[0])
    else:
        args = [*prefix, *args]
    return wrap(fn(*args, **kwargs), different)


def _zeros(shape: tuple) -> Tensor:
    from ..ops.creation import zeros
    return zeros(shape)


for _n in ("rand", "randn", "randint", "randperm"):
    RULES[_n] = _factory
    RANDOM.add(_n)


def _random_tensor_op(fn, args, kwargs, different=None):
    """A random op on tensors (``bernoulli(p)``, ``rand_like(x)``, ``normal(mean, std)``): each
    example draws its own values at the 'different' levels (operands expanded there); at a
    'same' level, batched operands share the draws."""
    if different is None:
        different = _random_levels()
    levels, nd = _levels_nd(_tensor_items(args, kwargs))
    same = [lv for lv in levels if lv not in different]
    if same:
        return _same_randomness(fn, args, kwargs, levels, different)
    target = union(levels, different)
    a2 = [expand_to(a, target, nd) if isinstance(a, Tensor) else a for a in args]
    k2 = {k: expand_to(v, target, nd) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    return wrap_output(fn(*a2, **k2), target)


def _same_randomness(fn, args, kwargs, levels, different):
    name = fn.__name__
    if name in ("rand_like", "randn_like", "randint_like"):
        x = args[0]
        shape = tuple(batch_sizes(different)) + tuple(x.shape)
        proto = _zeros(shape).to(value_of(x).dtype)
        return wrap(fn(proto, *args[1:], **kwargs), different)
    if name == "bernoulli" and len(args) == 1 and not kwargs:
        from ..ops.creation import rand
        p = args[0]
        u = wrap(rand(*batch_sizes(different), *p.shape, dtype=p.dtype), different)
        return (u < p).to(p.dtype)
    raise NotImplementedError(f"vmap: {name} with randomness='same' on a batched tensor is not "
                              "supported by ember; use randomness='different'")


for _n in ("rand_like", "randn_like", "randint_like", "bernoulli", "normal", "poisson"):
    RULES[_n] = _random_tensor_op
    RANDOM.add(_n)


@rule("multinomial")
def _multinomial(fn, args, kwargs):
    """Per-example draws (the kernel takes at most 2-D input): the loop, after the check."""
    _random_levels()
    return loop_fallback("multinomial", fn, args, kwargs)


RANDOM.add("multinomial")


def _inplace_random(fn, args, kwargs):
    x = args[0]
    different = _random_levels()
    if type(x) is not _BT:
        if different:
            raise RuntimeError("vmap: Cannot ask for different inplace randomness on an "
                               "unbatched tensor. This will appear like same randomness. If "
                               "this is necessary for your usage, please file an issue with "
                               "functorch.")
        return fn(x, *args[1:], **kwargs)
    if set(x._levels) == set(different) or not different:
        if not different:  # 'same': one draw of the example's shape, copied into every example
            from ..ops.creation import empty
            draw = fn(empty(tuple(x.shape), dtype=x.dtype), *args[1:], **kwargs)
            x._value.copy_(draw.expand_as(x._value))
            return x
        fn(x._value, *args[1:], **kwargs)
        return x
    raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched "
                       "tensor. This will appear like same randomness. If this is necessary "
                       "for your usage, please file an issue with functorch.")


for _n in ("uniform_", "normal_", "bernoulli_", "random_", "exponential_", "cauchy_",
           "log_normal_", "geometric_"):
    RULES[_n] = _inplace_random
    RANDOM.add(_n)


def _dropout(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    a = ba.arguments
    p = a.get("p", _default(fn, "p"))
    training = a.get("training", _default(fn, "training"))
    x = a["input"]
    if not training or p == 0:
        return broadcasting(fn, args, kwargs) if type(x) is _BT else fn(*args, **kwargs)
    different = _random_levels()
    levels = levels_of(x)
    name = fn.__name__
    feature = name in ("dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout")
    if any(lv not in different for lv in levels) or (not different and not levels):
        # 'same': one mask of the example's shape, shared by the examples
        if "alpha" in name:
            raise NotImplementedError(f"vmap: {name} with randomness='same' on a batched "
                                      "tensor is not supported by ember")
        from ..ops.creation import ones
        shape = tuple(batch_sizes(different)) + tuple(x.shape)
        mask = wrap(fn(ones(shape, dtype=x.dtype), p, True), different)
        out = x * mask
        if a.get("inplace"):
            x.copy_(out)
            return x
        return out
    target = union(levels, different)
    xv = expand_to(x, target)
    if a.get("inplace") and levels != target:
        raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched "
                           "tensor. This will appear like same randomness. If this is "
                           "necessary for your usage, please file an issue with functorch.")
    if feature:
        k = {"dropout1d": 2, "dropout2d": 3, "dropout3d": 4}.get(name, logical_ndim(x) - 1)
        lead = tuple(xv.shape[:xv.ndim - k])
        a["input"] = xv.reshape(-1, *xv.shape[xv.ndim - k:])
        out = _call(fn, ba).reshape(*lead, *xv.shape[xv.ndim - k:])
    else:
        a["input"] = xv
        out = _call(fn, ba)
    return wrap(out, target)


for _n in ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
           "dropout3d"):
    RULES["F." + _n] = _dropout
    RANDOM.add("F." + _n)


@rule("F.rrelu", "rrelu")
def _rrelu(fn, args, kwargs):
    ba = _bind(fn, args, kwargs)
    if not ba.arguments.get("training", False):
        return broadcasting(fn, args, kwargs)
    return _random_tensor_op(fn, args, kwargs)


RANDOM.update(("F.rrelu", "rrelu"))


@rule("F.gumbel_softmax")
def _gumbel(fn, args, kwargs):
    _random_levels()
    return loop_fallback("F.gumbel_softmax", fn, args, kwargs)


RANDOM.add("F.gumbel_softmax")
