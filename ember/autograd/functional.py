"""``ember.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp, as in torch.

Everything is built on reverse mode (``autograd.grad``); ``jvp`` uses the double-backward
trick, so it needs the function's derivatives to be differentiable (ember's are).
"""

from __future__ import annotations

from .._backend import xp_of
from .._tensor import Tensor, _make
from ..ops.creation import zeros
from ..ops.shape import stack
from .api import grad
from .grad_mode import enable_grad


def _tuple(x) -> tuple[tuple, bool]:
    if isinstance(x, Tensor):
        return (x,), False
    return tuple(x), True


def _prepare(inputs: tuple, create_graph: bool) -> tuple:
    # work on fresh leaves so the caller's tensors and graphs are untouched
    return tuple(t.detach().requires_grad_(t.is_floating_point()) if not create_graph or
                 not t.requires_grad else t.view_as(t) for t in inputs)


def _grad(outputs, inputs, grad_outputs, create_graph: bool) -> tuple:
    outs = [o for o in outputs if o.requires_grad]
    gos = [g for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not outs:
        return tuple(None for _ in inputs)
    return grad(outs, inputs, gos, retain_graph=True, create_graph=create_graph,
                allow_unused=True)


def _zeros_of(t: Tensor) -> Tensor:
    return _make(xp_of(t._data).zeros(t._data.shape, dtype=t._data.dtype))


def _ones_of(t: Tensor) -> Tensor:
    return _make(xp_of(t._data).ones(t._data.shape, dtype=t._data.dtype))


def _fill_none(grads, inputs) -> tuple:
    return tuple(_zeros_of(i) if g is None else g
                 for g, i in zip(grads, inputs))


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``."""
    inputs, is_tuple = _tuple(inputs)
    with enable_grad():
        ins = _prepare(inputs, create_graph)
        out = func(*ins)
        outs, out_tuple = _tuple(out)
        if v is None:
            if any(o.numel() != 1 for o in outs):
                raise RuntimeError("The vector v can only be None if the user-provided function "
                                   "returns a single Tensor with a single element.")
            v = tuple(_ones_of(o) for o in outs)
        vs, _ = _tuple(v)
        grads = _fill_none(_grad(outs, ins, vs, create_graph), ins)
    out = out if create_graph else (tuple(o.detach() for o in outs) if out_tuple
                                     else outs[0].detach())
    grads = grads if create_graph else tuple(g.detach() for g in grads)
    return out, (grads if is_tuple else grads[0])


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)`` via the double-backward trick."""
    inputs, _ = _tuple(inputs)
    if v is None:
        if any(i.numel() != 1 for i in inputs):
            raise RuntimeError("The vector v can only be None if the input to the user-provided "
                               "function is a single Tensor with a single element.")
        v = tuple(_ones_of(i) for i in inputs)
    vs, _ = _tuple(v)
    with enable_grad():
        ins = _prepare(inputs, create_graph)
        out = func(*ins)
        outs, out_tuple = _tuple(out)
        dummies = tuple(_zeros_of(o).requires_grad_()
                        for o in outs)
        g = _fill_none(_grad(outs, ins, dummies, True), ins)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi.requires_grad]
        if pairs:
            jv = grad([p[0] for p in pairs], dummies, [p[1] for p in pairs],
                      create_graph=create_graph, allow_unused=True)
        else:
            jv = (None,) * len(dummies)
        jv = _fill_none(jv, outs)
    outs_r = outs if create_graph else tuple(o.detach() for o in outs)
    jv = jv if create_graph else tuple(t.detach() for t in jv)
    return (outs_r if out_tuple else outs_r[0]), (jv if out_tuple else jv[0])


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """``torch.autograd.functional.jacobian``: shape ``out.shape + in.shape`` per pair.

    ``strategy="forward-mode"`` (with ``vectorize=True``, as torch requires) builds it column
    by column from forward-mode AD: one pass per input element, each with a basis tangent.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    inputs, is_tuple = _tuple(inputs)
    with enable_grad():
        ins = _prepare(inputs, create_graph)
        out = func(*ins)
        outs, out_tuple = _tuple(out)
        jac = []
        for o in outs:
            rows = [[] for _ in ins]
            flat_n = o.numel()
            for e in range(flat_n):
                seed = xp_of(o._data).zeros(flat_n, dtype=o._data.dtype)
                seed[e] = 1
                gs = _fill_none(_grad((o,), ins, (_make(seed.reshape(o._data.shape)),),
                                      create_graph), ins)
                for k, gk in enumerate(gs):
                    rows[k].append(gk if create_graph else gk.detach())
            per_input = []
            for k, i in enumerate(ins):
                if rows[k]:
                    j = stack(rows[k]).reshape(tuple(o.shape) + tuple(i.shape))
                else:
                    j = zeros(tuple(o.shape) + tuple(i.shape), dtype=i.dtype, device=i.device)
                per_input.append(j)
            jac.append(tuple(per_input) if is_tuple else per_input[0])
    return tuple(jac) if out_tuple else jac[0]


def _jacfwd(func, inputs, strict: bool, vectorize: bool):
    """The Jacobian by forward-mode AD (``jacobian(strategy="forward-mode")``)."""
    from . import forward_ad as fw

    if strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    inputs, is_tuple = _tuple(inputs)
    columns = None  # per output, per input: the tangents, one per input element
    out_tuple = False
    for k, x in enumerate(inputs):
        for e in range(x.numel()):
            with fw.dual_level():
                duals = []
                for j, y in enumerate(inputs):
                    t = xp_of(y._data).zeros(y._data.size, dtype=y._data.dtype)
                    if j == k:
                        t[e] = 1
                    duals.append(fw.make_dual(y, _make(t.reshape(y._data.shape))))
                outs, out_tuple = _tuple(func(*duals))
                tangents = []
                for o in outs:
                    t = fw.unpack_dual(o).tangent
                    tangents.append((t if t is not None else _zeros_of(o)).detach())
                primals = [o.detach() for o in outs]
            if columns is None:
                columns = [[[] for _ in inputs] for _ in outs]
            for i, t in enumerate(tangents):
                columns[i][k].append(t)
    if columns is None:  # no input elements at all: run once for the outputs' shapes
        outs, out_tuple = _tuple(func(*inputs))
        primals = [o.detach() for o in outs]
        columns = [[[] for _ in inputs] for _ in outs]
    jac = []
    for i, o in enumerate(primals):
        per_input = []
        for k, x in enumerate(inputs):
            shape = tuple(o.shape) + tuple(x.shape)
            cols = columns[i][k]
            if cols:  # each column is d out / d x_e: stack them last, then shape them
                per_input.append(stack(cols, -1).reshape(shape))
            else:
                per_input.append(zeros(shape, dtype=o.dtype, device=o.device))
        jac.append(tuple(per_input) if is_tuple else per_input[0])
    return tuple(jac) if out_tuple else jac[0]


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """``torch.autograd.functional.hessian`` of a scalar function; with
    ``outer_jacobian_strategy="forward-mode"`` (and ``vectorize=True``) the outer Jacobian is
    forward-over-reverse."""
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    inputs, is_tuple = _tuple(inputs)

    def jac_fn(*ins):
        if outer_jacobian_strategy == "forward-mode":
            ins = tuple(t.requires_grad_(True) for t in ins)
        return jacobian(func, ins if is_tuple else ins[0], create_graph=True)

    return jacobian(jac_fn, inputs if is_tuple else inputs[0], create_graph=create_graph,
                    strict=strict, vectorize=vectorize, strategy=outer_jacobian_strategy)


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``."""
    inputs, is_tuple = _tuple(inputs)
    vs, _ = _tuple(v)
    with enable_grad():
        ins = _prepare(inputs, True)
        out = func(*ins)
        if out.numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with a "
                               "single element.")
        g = _fill_none(_grad((out,), ins, (_ones_of(out),), True), ins)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi.requires_grad]
        res = grad([p[0] for p in pairs], ins, [p[1] for p in pairs], create_graph=create_graph,
                   allow_unused=True) if pairs else (None,) * len(ins)
        res = _fill_none(res, ins)
    res = res if create_graph else tuple(r.detach() for r in res)
    out = out if create_graph else out.detach()
    return out, (res if is_tuple else res[0])


hvp = vhp  # the Hessian of a scalar function is symmetric
