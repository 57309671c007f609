"""``vmap``: run a function once on a batch, each op batched by its rule (``_rules.py``).

Follows ``torch.func.vmap``: ``in_dims``/``out_dims`` as ints, None or pytrees matching the
inputs/outputs, ``randomness`` ('error', 'different', 'same'), ``chunk_size``, nesting, and
torch's error messages for bad arguments. Outputs that do not depend on the batched inputs are
expanded to the batch size, as torch does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from . import _rules  # noqa: F401  (fills the rule table)
from ._batched import (
    BatchedTensor,
    DataDependentError,
    Unbatchable,
    dispatching_form,
    expand_to,
    levels_of,
    note_fallback,
    pop_level,
    push_level,
    union,
    wrap,
)
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten


def _get_name(func: Callable) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _check_randomness_arg(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def _check_out_dims(out_dims, func: Callable) -> None:
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` "
                             "must be an int, None or a python collection of ints representing "
                             "where in the outputs the vmapped dimension should appear.")


def _process_inputs(in_dims, args: tuple, func: Callable):
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(  # noqa: TRY004 (torch's type)
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
            "to be int or a (potentially nested) tuple matching the structure of "
            f"inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. "
                         "The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = broadcast_prefix(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         "compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(in_dims)[1]!r} but inputs has structure "
                         f"{args_spec!r}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             "for an input but in_dim must be either an integer dimension or "
                             "None.")
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(  # noqa: TRY004 (torch's type)
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                f"for an input but the input is of type {type(arg)}. We cannot "
                "vmap over non-Tensor arguments, please use None as the respective "
                "in_dim")
        if d is not None and not -arg.dim() <= d < arg.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             "for some input, but that input is a Tensor of dimensionality "
                             f"{arg.dim()} so expected in_dim to satisfy -{arg.dim()} <= in_dim "
                             f"< {arg.dim()}.")
        if d is not None and d < 0:
            flat_in_dims[i] = d % arg.dim()
    sizes = [arg.size(d) for arg, d in zip(flat_args, flat_in_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, args_spec


def _add_batch_dim(x: Tensor, in_dim: int, level_id: int) -> Tensor:
    """``x`` batched at a new level along its logical dim ``in_dim`` (moved next to any batch
    dims ``x`` already has)."""
    if type(x) is BatchedTensor:
        nb = len(x._levels)
        return wrap(x._value.movedim(nb + in_dim, nb), x._levels + (level_id,))
    return wrap(x.movedim(in_dim, 0), (level_id,))


def _remove_batch_dim(name: str, out: Any, level_id: int, out_dim: int | None):
    if out_dim is None:
        if isinstance(out, Tensor) and level_id in levels_of(out):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                             "out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(  # noqa: TRY004 (torch's type)
            f"vmap({name}, ...): `{name}` must only return Tensors, got type "
            f"{type(out)}. Did you mean to set out_dims= to None for output?")
    levels = union(levels_of(out), (level_id,))
    v = expand_to(out, levels)  # an output that does not vary over the batch is expanded
    i = levels.index(level_id)
    rest = levels[:i] + levels[i + 1:]
    nd = v.ndim - len(levels)
    if not -(nd + 1) <= out_dim <= nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-(nd + 1)}, "
                         f"{nd}], but got {out_dim})")
    return wrap(v.movedim(i, len(rest) + out_dim % (nd + 1)), rest)


def _flat_out_dims(outputs, out_dims, func: Callable) -> tuple[list, list, Any]:
    flat_out, out_spec = tree_flatten(outputs)
    bad = ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims "
                     "is not compatible with the structure of `outputs`. out_dims has "
                     f"structure {tree_flatten(out_dims)[1]!r} but outputs has structure "
                     f"{out_spec!r}.")
    if isinstance(outputs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_dims = list(out_dims)
        else:
            raise bad
    else:
        flat_dims = broadcast_prefix(out_dims, out_spec)
        if flat_dims is None:
            raise bad
    return flat_out, flat_dims, out_spec


def _unwrap(outputs, out_dims, level_id: int, func: Callable):
    flat_out, flat_dims, spec = _flat_out_dims(outputs, out_dims, func)
    name = _get_name(func)
    return tree_unflatten([_remove_batch_dim(name, o, level_id, d)
                           for o, d in zip(flat_out, flat_dims)], spec)


def _flat_vmap(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, args_spec,
               out_dims, randomness: str, kwargs: dict):
    level = push_level(batch_size, randomness)
    func = dispatching_form(func)
    try:
        try:
            inputs = [a if d is None else _add_batch_dim(a, d, level.id)
                      for a, d in zip(flat_args, flat_in_dims)]
            out = func(*tree_unflatten(inputs, args_spec), **kwargs)
            return _unwrap(out, out_dims, level.id, func)
        except Unbatchable as exc:
            failed = exc
        except DataDependentError as exc:  # the user's own data-dependent code: torch's error
            raise RuntimeError(str(exc)) from None
    finally:
        pop_level(level)
    return _loop_whole(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, kwargs,
                       failed)


def _loop_whole(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, args_spec,
                out_dims, kwargs: dict, failed: Unbatchable):
    """The fallback of last resort: an op reached a BatchedTensor's array without going through
    a dispatcher (a function imported by name, an ember internal), so run ``func`` once per
    example and stack. Counted under the op's name."""
    import ember

    note_fallback(f"{failed.op} (reached outside a dispatcher: vmap ran "
                  f"{_get_name(func)} once per example)")
    per_example = []
    for b in range(batch_size):
        args_b = [a if d is None else a[(slice(None),) * d + (b,)]
                  for a, d in zip(flat_args, flat_in_dims)]
        per_example.append(func(*tree_unflatten(args_b, args_spec), **kwargs))
    _, flat_dims, spec = _flat_out_dims(per_example[0], out_dims, func)
    columns = [tree_flatten(o)[0] for o in per_example]
    out = []
    name = _get_name(func)
    for j, d in enumerate(flat_dims):
        items = [c[j] for c in columns]
        if d is None:
            out.append(items[0])
            continue
        if not isinstance(items[0], Tensor):
            raise ValueError(  # noqa: TRY004 (torch's type)
                f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                f"{type(items[0])}. Did you mean to set out_dims= to None for "
                "output?")
        out.append(ember.stack(items, dim=d))
    return tree_unflatten(out, spec)


def vmap(func: Callable, in_dims: int | tuple = 0, out_dims: int | tuple | None = 0,
         randomness: str = "error", *, chunk_size: int | None = None) -> Callable:
    """``torch.func.vmap``: ``func`` mapped over a dimension of its inputs, run once on the
    batch.

    ``in_dims`` says which dimension of each input is mapped (None: not mapped), as an int or a
    pytree matching the inputs; ``out_dims`` where the mapped dimension goes in each output.
    ``randomness``: 'error' (random ops raise torch's error), 'different' (each example draws
    its own values), 'same' (one draw shared by the examples). ``chunk_size`` runs the batch in
    chunks of that many examples (less memory). Each op runs through its batching rule; an op
    without one runs once per example (see docs/func.md).
    """
    _check_randomness_arg(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        batch_size, flat_in_dims, flat_args, args_spec = _process_inputs(in_dims, args, func)
        if chunk_size is None or chunk_size >= batch_size:
            return _flat_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims,
                              randomness, kwargs)
        return _chunked(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims,
                        randomness, chunk_size, kwargs)

    return wrapped


def _chunked(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, args_spec,
             out_dims, randomness: str, chunk_size: int, kwargs: dict):
    """torch's ``_chunked_vmap``: the batch in chunks, the outputs concatenated."""
    import ember

    bounds = list(range(chunk_size, batch_size, chunk_size))
    splits = [a.tensor_split(bounds, d) if d is not None else None
              for a, d in zip(flat_args, flat_in_dims)]
    state = ember.get_rng_state() if randomness == "same" else None
    outputs = []
    for c in range(len(bounds) + 1):
        chunk_args = [a if s is None else s[c] for a, s in zip(flat_args, splits)]
        size = next(s[c].size(d) for s, d in zip(splits, flat_in_dims) if s is not None)
        if state is not None:
            ember.set_rng_state(state)
        outputs.append(_flat_vmap(func, size, flat_in_dims, chunk_args, args_spec, out_dims,
                                  randomness, kwargs))
    _, flat_dims, spec = _flat_out_dims(outputs[0], out_dims, func)
    columns = [tree_flatten(o)[0] for o in outputs]
    out = []
    for j, d in enumerate(flat_dims):
        items = [col[j] for col in columns]
        out.append(items[0] if d is None else ember.cat(items, dim=d))
    return tree_unflatten(out, spec)
