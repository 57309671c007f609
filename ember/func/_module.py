"""``functional_call`` and ``stack_module_state``: modules as functions of their parameters.

Follows ``torch.func.functional_call`` (``torch.nn.utils.stateless``): the given tensors are
swapped into the module's parameter and buffer slots (any tensor, even a BatchedTensor or one
that does not require grad), the module runs, and the originals are put back, also when the call
raises. ``tie_weights`` makes a value given for one name of a tied tensor serve every name of it;
``strict`` requires exactly the module's parameter and buffer names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor

_MISSING = object()


def _get_submodule(module, path: str):
    m = module
    if not path:
        return m
    for part in path.split("."):
        try:
            m = getattr(m, part)
        except AttributeError as exc:
            raise AttributeError(f"{m._get_name()} has no attribute `{part}`") from exc
    return m


def _swap_tensor(module, name: str, tensor):
    """Put ``tensor`` (``_MISSING``: remove) in slot ``name`` of ``module``; return what was
    there (torch's ``swap_tensor``)."""
    prefix, _, attr = name.rpartition(".")
    sub = _get_submodule(module, prefix)
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    for registry in (sub._parameters, sub._buffers):
        if attr in registry:
            orig = registry[attr]
            if tensor is _MISSING:
                del registry[attr]
            else:
                registry[attr] = tensor
            return orig
    orig = getattr(sub, attr, _MISSING)
    if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
        raise TypeError(f"attribute `{attr}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(sub, attr, tensor)
    elif hasattr(sub, attr):
        delattr(sub, attr)
    return orig


def _untie(module, tensors: dict[str, Tensor]) -> dict[str, Tensor]:
    """torch's ``_untie_named_tensors_map``: a value given for one name of tied tensors is
    given for all of them (two different values for one tied tensor is an error)."""
    named: dict = {}
    named.update(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    groups: dict[int, set] = {}
    for name, t in named.items():
        groups.setdefault(id(t), set()).add(name)
    tied = {n: g for g in groups.values() if len(g) > 1 for n in g}
    given = [n for n in tensors if n in tied]
    for n in given:
        names = tied[n]
        values = {id(tensors[m]) for m in names if m in tensors}
        if len(values) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    out = dict(tensors)
    for n in given:
        for m in tied[n]:
            out[m] = tensors[n]
    return out


@contextlib.contextmanager
def _reparametrize(module, tensors: dict[str, Tensor], tie_weights: bool, strict: bool):
    if tie_weights:
        tensors = _untie(module, tensors)
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(tensors)), sorted(set(tensors) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t"
                               + "\n\t".join(msgs))
    originals: dict = {}
    try:
        for name, t in tensors.items():
            originals[name] = _swap_tensor(module, name, t)
        yield
    finally:
        for name, orig in reversed(list(originals.items())):
            _swap_tensor(module, name, orig)


def functional_call(module, parameter_and_buffer_dicts, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``torch.func.functional_call``: call ``module`` with its parameters and buffers replaced
    by the given tensors (a dict, or a sequence of dicts with distinct keys), restored after.

    ``args``: the positional arguments (a non-tuple is a single argument); ``kwargs``: keyword
    arguments.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        keys = [k for d in parameter_and_buffer_dicts for k in d]
        repeated = [k for k in dict.fromkeys(keys) if keys.count(k) > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        tensors = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(  # noqa: TRY004 (torch's type)
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
            f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, tie_weights, strict):
        return module(*args, **kwargs)


def _stacked_leaf(tensors: Sequence[Tensor], name: str) -> Tensor:
    from ..ops.shape import stack

    all_grad = all(t.requires_grad for t in tensors)
    if not all_grad and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(list(tensors))
    if all_grad:
        result = result.detach().requires_grad_()
    return result


def stack_module_state(models) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``torch.func.stack_module_state``: the models' parameters and buffers stacked along a new
    leading dim, as ``(params, buffers)`` dicts (stacked parameters are new leaves that require
    grad), ready for ``vmap(functional_call)`` over an ensemble."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    cls = type(models[0])
    if not all(type(m) is cls for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
