"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``,
``hessian``: torch.func's autodiff transforms over ember's reverse and forward mode.

Reverse mode (``grad``, ``vjp``, ``jacrev``) runs ``func`` on fresh leaves and calls
``autograd.grad``. Forward mode (``jvp``, ``jacfwd``) runs it on dual tensors of
``autograd.forward_ad``; ember has one dual level, so a ``jvp`` inside another (``jacfwd(jacfwd
(f))``) uses the double-backward trick instead (a vjp of a vjp), which nests without limit.

Nesting follows torch.func. Each transform sees its inputs as the inputs of a function of its
own: what flows in from an enclosing transform (a grad's leaves, a vmap's BatchedTensors, a
jvp's duals) stays differentiable, batched or dual. The result of a reverse-mode transform has
a graph of its own (``create_graph``) only when something outside needs it: an input that
requires grad, or a tensor of an enclosing graph that ``func`` closed over (found by walking the
graph of ``func``'s output); otherwise it is returned detached, as torch's is. As in torch, the
transforms run ``func`` with grad mode on, whatever the caller's mode, and an enclosing
``no_grad`` only decides whether the result is differentiable.

Inside ``vmap`` a reverse-mode transform expands every differentiated input to all the running
vmap levels before it runs ``func``: each example then gets its own copy of, say, the
parameters, and one backward pass over the batched graph gives every example's gradient (the
examples never mix in a batched computation, so the gradient of the sum of the examples'
outputs with respect to example ``b``'s copy is example ``b``'s gradient). That is how
``vmap(grad(loss))`` computes per-sample gradients in one batched forward and one backward.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd import forward_ad as fw
from ..autograd.api import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..autograd.graph import AccumulateGrad
from ._batched import (
    STACK,
    BatchedTensor,
    batch_sizes,
    expand_to,
    levels_of,
    note_fallback,
    union,
    value_of,
    wrap,
)
from ._pytree import tree_flatten, tree_map, tree_unflatten
from ._vmap import vmap

argnums_t = int | tuple[int, ...]


# ----------------------------------------------------------------------------- argnums
def _safe_argnum(argnum: int, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(  # noqa: TRY004 (torch's type)
            f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _validate_argnums(argnums: argnums_t, num_args: int) -> argnums_t:
    if isinstance(argnums, int):
        return _safe_argnum(argnums, num_args)
    if isinstance(argnums, tuple):
        return tuple(_safe_argnum(a, num_args) for a in argnums)
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _slice_argnums(args: tuple, argnums: argnums_t, as_tuple: bool = True) -> Any:
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(  # noqa: TRY004 (torch's type)
            f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    argnums = _validate_argnums(argnums, len(args))
    if isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return tuple(args[i] for i in argnums)
    return (args[argnums],) if as_tuple else args[argnums]


def _replace_args(args: tuple, new: Any, argnums: argnums_t | None) -> tuple:
    if argnums is None:
        return tuple(new)
    argnums = _validate_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    pos = dict(zip(argnums, new))
    return tuple(pos.get(i, a) for i, a in enumerate(args))


# ----------------------------------------------------------------------------- inputs
def _active_levels() -> tuple:
    return tuple(lv.id for lv in STACK)


class _Input:
    """One differentiated input: what ``func`` gets (``wrapped``), the physical tensor the
    gradient is taken with respect to (``diff``), the leaf made for it (``leaf``, None when it
    aliases an enclosing graph) and whether an enclosing graph reaches it (``outer``)."""

    __slots__ = ("diff", "leaf", "outer", "wrapped")

    def __init__(self, x: Tensor, levels: tuple) -> None:
        if not isinstance(x, Tensor):
            raise ValueError(  # noqa: TRY004 (torch's type)
                f"Thing passed to transform API must be Tensor, got {type(x)}")
        v = expand_to(x, levels) if levels else value_of(x)
        self.outer = v.requires_grad
        self.leaf = None
        if self.outer:  # a differentiable alias: the enclosing graph goes on through it
            d = v.view_as(v)
        elif fw.state.active and fw.tangent_of(v) is not None:  # a dual of an enclosing jvp
            primal, tangent = fw.unpack_dual(v)
            self.leaf = primal.detach().requires_grad_()
            d = fw.make_dual(self.leaf, tangent)
        else:
            d = self.leaf = v.detach().requires_grad_()
        self.diff = d
        self.wrapped = wrap(d, levels)


def _reaches_outside(outputs: list, inputs: list[_Input]) -> bool:
    """Whether the graph of ``outputs`` reaches a leaf other than the transform's own: then an
    enclosing graph needs the result to be differentiable (a closed-over parameter)."""
    own = {id(i.leaf) for i in inputs if i.leaf is not None}
    stack = [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    seen: set = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad:
            if id(node.variable) not in own:
                return True
            continue
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return False


def _needs_graph(grad_on: bool, inputs: list[_Input], outputs: list) -> bool:
    if not grad_on:
        return False
    return any(i.outer for i in inputs) or _reaches_outside(outputs, inputs)


def _release(t, keep: bool):
    """``t`` as a transform returns it: detached unless an enclosing transform needs its graph
    (a dual keeps its tangent)."""
    if not isinstance(t, Tensor) or keep:
        return t
    v = value_of(t)
    if fw.state.active and fw.tangent_of(v) is not None:
        return t
    return wrap(v.detach(), levels_of(t)) if v.requires_grad else t


def _zeros_like(t: Tensor) -> Tensor:
    from ..ops.creation import zeros_like
    return zeros_like(t)


def _ones_like(t: Tensor) -> Tensor:
    from ..ops.creation import ones_like
    return ones_like(t)


def _grads(outputs: list, inputs: list[_Input], cotangents: list, create_graph: bool,
           retain_graph: bool = True) -> list:
    """``autograd.grad`` of physical ``outputs`` w.r.t. the inputs' tensors, zeros for unused."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return [_zeros_like(i.diff) for i in inputs]
    gs = _autograd_grad([o for o, _ in pairs], [i.diff for i in inputs], [c for _, c in pairs],
                        retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    return [_zeros_like(i.diff) if g is None else g for g, i in zip(gs, inputs)]


# ----------------------------------------------------------------------------- grad
def grad_and_value(func: Callable, argnums: argnums_t = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad_and_value``: ``(gradient, value)`` of a function with a scalar output
    (``(gradient, (value, aux))`` with ``has_aux``), w.r.t. the inputs ``argnums`` names."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grad_on = is_grad_enabled()
        levels = _active_levels()
        with enable_grad():
            diff_args = _slice_argnums(args, argnums, as_tuple=False)
            flat, spec = tree_flatten(diff_args)
            inputs = [_Input(x, levels) for x in flat]
            new = tree_unflatten([i.wrapped for i in inputs], spec)
            output = func(*_replace_args(args, new, argnums), **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be "
                                       "a tuple: (output, aux) if has_aux is True")
                output, aux = output
            if not isinstance(output, Tensor):
                raise RuntimeError(  # noqa: TRY004 (torch's type)
                    "grad_and_value(f)(*args): Expected f(*args) to return a "
                    f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            y = value_of(output)
            keep = _needs_graph(grad_on, inputs, [y])
            gs = _grads([y], inputs, [_ones_like(y)], keep, retain_graph=keep)
        grads = tree_unflatten([wrap(g, levels) for g in gs], spec)
        value = _release(output, keep)
        if has_aux:
            return grads, (value, tree_map(lambda t: _release(t, keep), aux))
        return grads, value

    return wrapper


def grad(func: Callable, argnums: argnums_t = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad``: the gradient of a function with a scalar output w.r.t. the inputs
    ``argnums`` names (an int: that input's pytree; a tuple: a tuple of them); with
    ``has_aux``, ``func`` returns ``(output, aux)`` and the result is ``(gradient, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


# ----------------------------------------------------------------------------- vjp
def _check_outputs(flat: list, api: str, output) -> None:
    if not flat:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {output})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(  # noqa: TRY004 (torch's type)
                f"{api}: expected f(*primals) to return only tensors, got "
                f"unsupported type {type(o)}")


def _vjp_with_argnums(func: Callable, *primals, argnums: argnums_t | None = None,
                      has_aux: bool = False):
    grad_on = is_grad_enabled()
    levels = _active_levels()
    with enable_grad():
        diff = primals if argnums is None else _slice_argnums(primals, argnums, as_tuple=False)
        flat, primals_spec = tree_flatten(diff)
        inputs = [_Input(x, levels) for x in flat]
        new = tree_unflatten([i.wrapped for i in inputs], primals_spec)
        output = func(*_replace_args(primals, new, argnums))
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            output, aux = output
        flat_out, out_spec = tree_flatten(output)
        _check_outputs(flat_out, "vjp(f, *primals)", output)
        for o in flat_out:
            if not o.is_floating_point():
                raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or "
                                   f"complex Tensors, got Tensor with dtype {o.dtype}")
        phys = [value_of(o) for o in flat_out]
        keep = _needs_graph(grad_on, inputs, phys)
    results = tree_unflatten([_release(o, keep) for o in flat_out], out_spec)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{ct_spec.pprint()}, primal output: {out_spec.pprint()}")
        cg = keep and is_grad_enabled() if create_graph is None else create_graph
        if any(x not in levels for c in flat_ct for x in levels_of(c)):
            # ``vmap(vjp_fn)``: the cotangents are batched over a vmap that the forward pass
            # was not run in; run it again in there, so one batched backward serves them all
            _, rerun = _vjp_with_argnums(func, *primals, argnums=argnums)
            return rerun(cotangents, retain_graph, create_graph)
        with enable_grad():
            gs = _batched_vjp(flat_out, flat_ct, inputs, levels, cg, retain_graph)
        return tree_unflatten(gs, primals_spec)

    if has_aux:
        return results, vjp_fn, tree_map(lambda t: _release(t, keep), aux)
    return results, vjp_fn


def _batched_vjp(outs: list, cts: list, inputs: list[_Input], levels: tuple,
                 create_graph: bool, retain_graph: bool) -> list:
    """The vjp for cotangents that may be batched. A cotangent batched where its output is not
    (``vmap(vjp_fn)`` over a graph built outside that vmap) is a batched backward through an
    unbatched graph: that runs once per example (a counted fallback)."""
    extra: tuple = ()
    for o, c in zip(outs, cts):
        extra = union(extra, tuple(x for x in levels_of(c) if x not in levels_of(o)))
    if not extra:
        phys = [value_of(o) for o in outs]
        cvs = [expand_to(c, levels_of(o)).to(value_of(o).dtype) if isinstance(c, Tensor)
               else c for o, c in zip(outs, cts)]
        gs = _grads(phys, inputs, cvs, create_graph, retain_graph)
        return [wrap(g, levels) for g in gs]
    from ..ops.shape import stack

    note_fallback("vjp_fn (a cotangent batched over a vmap its primals were not computed in)")
    sizes = batch_sizes(extra)
    n = 1
    for s in sizes:
        n *= s
    flat_cts = [expand_to(c, union(levels_of(c), extra)) for c in cts]
    rows = []
    for i in range(n):
        idx = []
        rem = i
        for s in reversed(sizes):
            idx.append(rem % s)
            rem //= s
        idx = tuple(reversed(idx))
        sliced = []
        for c, full in zip(cts, flat_cts):
            lv = union(levels_of(c), extra)
            key = tuple(idx[extra.index(x)] if x in extra else slice(None) for x in lv)
            keep = tuple(x for x in lv if x not in extra)
            sliced.append(wrap(full[key], keep))
        rows.append([value_of(g) for g in _batched_vjp(outs, sliced, inputs, levels,
                                                       create_graph, True)])
    out_levels = union(levels, extra)
    order = [out_levels.index(x) for x in extra + levels]
    result = []
    for j in range(len(inputs)):
        g = stack([r[j] for r in rows]).reshape(*sizes, *rows[0][j].shape)
        perm = sorted(range(len(order)), key=lambda k: order[k])
        g = g.permute(*perm, *range(len(order), g.ndim))
        result.append(wrap(g, out_levels))
    return result


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``torch.func.vjp``: ``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives the
    vector-Jacobian products, one per primal (``(output, vjp_fn, aux)`` with ``has_aux``)."""
    return _vjp_with_argnums(func, *primals, has_aux=has_aux)


# ----------------------------------------------------------------------------- jvp
_JVP = "jvp(f, primals, tangents)"


def _check_tensors(flat: list, api: str, argname: str) -> None:
    if not flat:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for t in flat:
        if not isinstance(t, Tensor):
            raise RuntimeError(  # noqa: TRY004 (torch's type)
                f"{api}: Expected {argname} to only contain Tensors, got "
                f"{type(t)}")


def _jvp_with_argnums(func: Callable, primals, tangents, argnums: argnums_t | None = None, *,
                      strict: bool = False, has_aux: bool = False):
    if not isinstance(primals, tuple):
        raise RuntimeError(  # noqa: TRY004 (torch's type)
            f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
            "call f(*primals).")
    diff = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_p, p_spec = tree_flatten(diff)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           "tangents also must be. Got primals with structure "
                           f"{p_spec!r} and tangents with structure {t_spec!r}")
    _check_tensors(flat_p, _JVP, "primals")
    _check_tensors(flat_t, _JVP, "tangents")
    if fw.state.level >= 0:  # inside another jvp: the double-backward trick nests
        return _jvp_by_vjp(func, primals, flat_p, p_spec, flat_t, argnums, strict, has_aux)
    with fw.dual_level():
        duals = []
        for p, t in zip(flat_p, flat_t):
            lv = union(levels_of(p), levels_of(t))
            duals.append(wrap(fw.make_dual(expand_to(p, lv), expand_to(t, lv)), lv))
        new = tree_unflatten(duals, p_spec)
        args = _replace_args(primals, new if argnums is not None else tuple(new),
                             None if argnums is None else _as_tuple_argnums(argnums))
        out = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{_JVP}: output of function f should be a tuple: (output, "
                                   "aux) if has_aux is True")
            out, aux = out
        flat_out, out_spec = tree_flatten(out)
        primal_out, tangent_out = [], []
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(  # noqa: TRY004 (torch's type)
                    f"{_JVP}: expected f(*args) to return only tensors, got "
                    f"unsupported type {type(o)}")
            lv = levels_of(o)
            p_o, t_o = fw.unpack_dual(value_of(o))
            if t_o is None:
                if strict:
                    raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f "
                                       "is independent of the inputs. This is not allowed with "
                                       "strict=True.")
                t_o = _zeros_like(p_o)
            primal_out.append(wrap(p_o, lv))
            tangent_out.append(wrap(t_o, lv))
        if has_aux:
            aux = tree_map(lambda t: wrap(fw.unpack_dual(value_of(t)).primal, levels_of(t))
                           if isinstance(t, Tensor) else t, aux)
    result = (tree_unflatten(primal_out, out_spec), tree_unflatten(tangent_out, out_spec))
    return (*result, aux) if has_aux else result


def _as_tuple_argnums(argnums: argnums_t) -> tuple:
    return (argnums,) if isinstance(argnums, int) else argnums


def _jvp_by_vjp(func: Callable, primals: tuple, flat_p: list, p_spec, flat_t: list,
                argnums, strict: bool, has_aux: bool):
    """jvp as the vjp of a vjp (``u -> J^T u`` is linear in ``u``; its vjp is ``J t``): for a
    jvp nested in another (ember has one dual level)."""
    grad_on = is_grad_enabled()
    levels = _active_levels()
    with enable_grad():
        inputs = [_Input(p, levels) for p in flat_p]
        new = tree_unflatten([i.wrapped for i in inputs], p_spec)
        args = _replace_args(primals, new if argnums is not None else tuple(new),
                             None if argnums is None else _as_tuple_argnums(argnums))
        out = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{_JVP}: output of function f should be a tuple: (output, "
                                   "aux) if has_aux is True")
            out, aux = out
        flat_out, out_spec = tree_flatten(out)
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(  # noqa: TRY004 (torch's type)
                    f"{_JVP}: expected f(*args) to return only tensors, got "
                    f"unsupported type {type(o)}")
        phys = [value_of(o) for o in flat_out]
        keep = _needs_graph(grad_on, inputs, phys)
        live = [y for y in phys if y.requires_grad]
        us = [_zeros_like(y).requires_grad_() for y in live]
        tangents_out: dict = {}
        if live:
            gs = _autograd_grad(live, [i.diff for i in inputs], us, create_graph=True,
                                allow_unused=True)
            pairs = [(g, expand_to(t, levels).to(g.dtype)) for g, t in zip(gs, flat_t)
                     if g is not None and g.requires_grad]
            if pairs:
                jv = _autograd_grad([g for g, _ in pairs], us, [t for _, t in pairs],
                                    create_graph=keep, allow_unused=True)
                tangents_out = {id(y): j for y, j in zip(live, jv) if j is not None}
        if strict and not tangents_out:
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                               "independent of the inputs. This is not allowed with "
                               "strict=True.")
        t_out = [wrap(tangents_out.get(id(y), None) if id(y) in tangents_out else _zeros_like(y),
                      levels_of(o)) for y, o in zip(phys, flat_out)]
    p_out = [_release(o, keep) for o in flat_out]
    result = (tree_unflatten(p_out, out_spec), tree_unflatten(t_out, out_spec))
    if has_aux:
        return (*result, tree_map(lambda t: _release(t, keep), aux))
    return result


def jvp(func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False,
        has_aux: bool = False):
    """``torch.func.jvp``: ``(func(*primals), J @ tangents)`` by forward-mode AD (``(output,
    jvp_out, aux)`` with ``has_aux``)."""
    return _jvp_with_argnums(func, primals, tangents, strict=strict, has_aux=has_aux)


def linearize(func: Callable, *primals) -> tuple[Any, Callable]:
    """``torch.func.linearize``: ``(func(*primals), jvp_fn)``, ``jvp_fn(*tangents)`` the jvp at
    ``primals``. NOTE: torch traces ``func`` once into a graph of its jvp; ember's ``jvp_fn``
    runs ``jvp`` again each call (same values)."""
    output = func(*primals)
    _, p_spec = tree_flatten(primals)

    def jvp_fn(*tangents):
        _, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec.pprint()} to have the same "
                               f"argument structure as the primals {p_spec.pprint()}")
        return jvp(func, primals, tangents)[1]

    return tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, output), jvp_fn


# ----------------------------------------------------------------------------- jacobians
def _standard_basis(tensors: list, numels: tuple, start: int = 0, stop: int | None = None
                    ) -> list:
    """Rows ``start:stop`` of the identity over all elements of ``tensors``, split per tensor:
    one ``(rows, *t.shape)`` tensor each (torch's ``_construct_standard_basis_for``)."""
    from ..ops.creation import eye
    total = sum(numels)
    stop = total if stop is None else stop
    out = []
    offset = 0
    for t, n in zip(tensors, numels):
        block = eye(total, dtype=t.dtype)[start:stop, offset:offset + n]
        out.append(block.reshape(stop - start, *t.shape))
        offset += n
    return out


def jacrev(func: Callable, argnums: argnums_t = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable:
    """``torch.func.jacrev``: the Jacobian of ``func`` w.r.t. the inputs ``argnums`` names, by
    reverse mode: one vjp per output element, vmapped (``chunk_size`` rows at a time;
    ``chunk_size=1`` is a plain loop of vjps). The result nests output structure outside input
    structure, each block shaped ``output.shape + input.shape``.

    NOTE: torch vmaps the backward pass of one forward; here the forward is rerun once inside
    the vmap over the basis rows (each row gets its copy of the inputs, as for per-sample
    gradients), then one backward pass gives every row: one batched forward more than torch.
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        vjp_out = _vjp_with_argnums(func, *args, argnums=argnums, has_aux=has_aux)
        if has_aux:
            output, vjp_fn, aux = vjp_out
        else:
            output, vjp_fn = vjp_out
        flat_out, out_spec = tree_flatten(output)
        numels = tuple(o.numel() for o in flat_out)
        total = sum(numels)
        primals = _slice_argnums(args, argnums)
        flat_p, p_spec = tree_flatten(primals)

        def row(*basis):
            _, fn = _vjp_with_argnums(func, *args, argnums=argnums, has_aux=has_aux)[:2]
            return tree_flatten(fn(tree_unflatten(list(basis), out_spec)))[0]

        if chunk_size == 1 or total == 1:
            rows = []
            for r in range(total):
                basis = [b.reshape(o.shape) for b, o in
                         zip(_standard_basis(flat_out, numels, r, r + 1), flat_out)]
                rows.append(tree_flatten(vjp_fn(tree_unflatten(basis, out_spec)))[0])
            flat_jac = [_stack([r[j] for r in rows]) for j in range(len(flat_p))]
        else:
            step = chunk_size or total
            parts = []
            for start in range(0, total, step):
                basis = _standard_basis(flat_out, numels, start, min(start + step, total))
                parts.append(vmap(row, randomness="same")(*basis))
            flat_jac = [_cat([p[j] for p in parts]) for j in range(len(flat_p))]
        # (total, *input) per input -> per output block (*output, *input)
        per_input = [list(j.split(list(numels), 0)) for j in flat_jac]
        out_in = []
        for k, o in enumerate(flat_out):
            blocks = [per_input[j][k].reshape(*o.shape, *p.shape) for j, p in enumerate(flat_p)]
            tree = tree_unflatten(blocks, p_spec)
            out_in.append(tree[0] if isinstance(argnums, int) else tree)
        result = tree_unflatten(out_in, out_spec)
        return (result, aux) if has_aux else result

    return wrapper


def _stack(items: list) -> Tensor:
    import ember
    return ember.stack(items)


def _cat(items: list) -> Tensor:
    import ember
    return items[0] if len(items) == 1 else ember.cat(items)


def jacfwd(func: Callable, argnums: argnums_t = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """``torch.func.jacfwd``: the Jacobian of ``func`` w.r.t. the inputs ``argnums`` names, by
    forward mode: one jvp per input element, vmapped over the standard basis (one batched
    forward pass on dual tensors). Same output layout as ``jacrev``."""

    @functools.wraps(func)
    def wrapper(*args):
        primals = args if argnums is None else _slice_argnums(args, argnums)
        flat_p, p_spec = tree_flatten(primals)
        numels = tuple(p.numel() for p in flat_p)
        basis = tree_unflatten(_standard_basis(flat_p, numels), p_spec)

        def push_jvp(basis):
            out = _jvp_with_argnums(func, args, basis, argnums=argnums, has_aux=has_aux)
            return (out[1], out[2]) if has_aux else out[1]

        results = vmap(push_jvp, randomness=randomness)(basis)
        aux = None
        if has_aux:
            results, aux = results
            flat_aux, aux_spec = tree_flatten(aux)
            aux = tree_unflatten([a[0] for a in flat_aux], aux_spec)
        jac_outs, spec = tree_flatten(results)
        outs = []
        for jac in jac_outs:
            pieces = jac.movedim(0, -1).split(list(numels), -1)
            blocks = [piece.reshape(*piece.shape[:-1], *p.shape)
                      for piece, p in zip(pieces, flat_p)]
            tree = tree_unflatten(blocks, p_spec)
            outs.append(tree[0] if isinstance(argnums, int) else tree)
        result = tree_unflatten(outs, spec)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func: Callable, argnums: argnums_t = 0) -> Callable:
    """``torch.func.hessian``: ``jacfwd(jacrev(func, argnums), argnums)``, forward over
    reverse."""
    return jacfwd(jacrev(func, argnums), argnums)


__all__ = ["BatchedTensor", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "vjp"]
