"""``Optimizer``: the base class of every optimizer, following ``torch.optim.Optimizer``.

Param groups, ``add_param_group``, ``zero_grad``, step hooks and ``state_dict`` /
``load_state_dict`` in torch's format (state keyed by parameter index; ``step`` kept as a 0-d
tensor, as torch does). ``step`` is the loop torch's ``_single_tensor_*`` functions share: for
each param group and each parameter with a gradient it fills the state, counts the step, applies
``maximize`` and (coupled or decoupled) ``weight_decay``, then calls the rule's ``_update``, so a
rule's file states only its update. Updates change ``p._data`` in place with the array's own
module (``xp_of``): the arithmetic never records autograd history, so no graph is built and no
per-op overhead is paid. Every pass writes with ``out=`` or in place into the optimizer's
reusable scratch arrays (``_scratch``), so a step allocates nothing.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections import defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from .._backend import dtypes as _dt
from .._backend import host, xp_of
from .._backend.trace import symbolic as _symbolic
from .._tensor import Tensor, _make
from ..autograd import enable_grad
from ..utils.hooks import HookDict, add_hook

__all__ = [
    "Optimizer",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "required",
]


class _RequiredParameter:
    """Singleton marking a default that every param group must give (``torch.optim.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_step_pre_hooks: HookDict = HookDict()
_global_step_post_hooks: HookDict = HookDict()


def register_optimizer_step_pre_hook(hook):
    """A hook ``hook(optimizer, args, kwargs)`` run before every optimizer's ``step``."""
    return add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """A hook ``hook(optimizer, args, kwargs)`` run after every optimizer's ``step``."""
    return add_hook(_global_step_post_hooks, hook)


def _typename(obj) -> str:
    """``torch.typename``: ``torch.FloatTensor`` for a tensor, the qualified type name else."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = cls.__module__
    if module in ("builtins", "__builtin__", None):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _to_scalar(x):
    """A 1-element tensor option (``lr``, ``betas``) as a Python number; anything else as is."""
    if isinstance(x, Tensor):
        return _symbolic(x._data)  # .item(); a traced float under ember.compile
    return x


def _scalar_host_dtype():
    """The dtype of ``state['step']`` and other scalar state (torch's ``_get_scalar_dtype``)."""
    return host.float64 if _dt.get_default_dtype() is _dt.float64 else host.float32


def _scalar_state(value: float = 0.0) -> Tensor:
    """A 0-d tensor of the scalar-state dtype, like ``torch.tensor(0.0, dtype=...)``.

    It lives on the host whatever the parameters' device, as torch keeps ``step`` on the CPU
    unless ``capturable``.
    """
    return _make(host.array(value, dtype=_scalar_host_dtype()))


def _zeros_like(p: Tensor) -> Tensor:
    """A zero state tensor of ``p``'s shape, dtype and device (``torch.zeros_like``)."""
    return _make(xp_of(p._data).zeros_like(p._data))


def _lerp_(a, b, w: float, scratch) -> None:
    """``a.lerp_(b, w)`` in place, with torch's two formulas (exact at both ends).

    ``scratch`` is an array of ``a``'s shape that holds ``b - a``: three passes, no temporaries.
    """
    xp = xp_of(a)
    xp.subtract(b, a, out=scratch)
    if w < 0.5:
        scratch *= w
        a += scratch
    else:
        scratch *= 1 - w
        xp.subtract(b, scratch, out=a)


_GRAD_SLOT = 2  # the scratch slot of the gradient ``step`` negates or decays for the rule


def _real_view(a):
    """A complex array as real numbers, shape ``(*a.shape, 2)`` (torch's ``view_as_real``);
    a copy only where the array's last axis is not contiguous (then not written back: the
    rules update parameters and state, which are contiguous)."""
    if not a.flags.c_contiguous:
        a = a.copy()
    return a.reshape(a.shape + (1,)).view(a.real.dtype)


def _bump(p: Tensor) -> None:
    """Record an in-place change of ``p`` on its version counter (shared with its views)."""
    p._vc[0] += 1


def _wrap_step(step):
    """Run the step pre/post hooks (global, then per optimizer) around ``step``."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        pre = self._optimizer_step_pre_hooks
        post = self._optimizer_step_post_hooks
        if not (_global_step_pre_hooks or pre or _global_step_post_hooks or post):
            return step(self, *args, **kwargs)
        args = (self, *args)  # torch's hooks see the optimizer as args[0]
        for hook in chain(_global_step_pre_hooks.values(), pre.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
        out = step(*args, **kwargs)
        for hook in chain(post.values(), _global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


_INSTANCES: weakref.WeakSet = weakref.WeakSet()  # every optimizer, for ember.compile's guards


class Optimizer:
    """``torch.optim.Optimizer(params, defaults)``.

    ``params``: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (param groups,
    each with its own options; missing options are filled in from ``defaults``).
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _wrap_step(step)

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        _INSTANCES.add(self)
        self._optimizer_step_pre_hooks = HookDict()
        self._optimizer_step_post_hooks = HookDict()
        self._optimizer_state_dict_pre_hooks = HookDict()
        self._optimizer_state_dict_post_hooks = HookDict()
        self._optimizer_load_state_dict_pre_hooks = HookDict()
        self._optimizer_load_state_dict_post_hooks = HookDict()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))

        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        _INSTANCES.add(self)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, HookDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ---- hooks ----------------------------------------------------------------------------

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before ``step``."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None`` after ``step``."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False):
        return _add_ordered_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False):
        return _add_ordered_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False):
        return _add_ordered_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False):
        return _add_ordered_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- state_dict -----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}``.

        The state's tensors are the optimizer's own (not copies), as in torch.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)

        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}

        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param: Tensor, value: Tensor, param_id,
                                                 param_groups, key=None) -> Tensor:
        """torch's policy: ``step`` stays as saved; other state moves to the parameter's device,
        and to its dtype when the parameter is floating point."""
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict()``: the saved param indices map, in order, onto this
        optimizer's parameters; floating state tensors are cast to their parameter's dtype."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result

        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups)
                                   for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k,
                                     param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})

        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ---- gradients and groups -------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every parameter's ``.grad`` to None (default) or fill it with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if g._grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    # ---- the shared step -------------------------------------------------------------------

    @_wrap_step
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given.

        Walks the param groups and their parameters that have a gradient, as torch's
        ``_single_tensor_*`` functions do: fills an empty state (``_init_state``), adds one to
        ``state['step']`` where the rule keeps one, negates the gradient for ``maximize``,
        applies ``weight_decay`` (``p *= 1 - lr * wd`` when the group has
        ``decoupled_weight_decay``, else ``grad + wd * p``), then lets the rule's ``_update``
        change the parameter in place. A subclass that is not such a rule overrides ``step``.
        """
        loss = self._eval_closure(closure)
        all_state = self.state
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            weight_decay = _to_scalar(group.get("weight_decay", 0))
            decoupled = group.get("decoupled_weight_decay", False)
            maximize = group.get("maximize", False)
            coupled_decay = 0 if decoupled else weight_decay
            decay_factor = 1 - lr * weight_decay if decoupled and weight_decay != 0 else None
            stateful = self._has_state(group)
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                state = None
                step = None
                if stateful:
                    state = all_state[p]
                    if not state:
                        self._init_state(state, p, group)
                    step_t = state.get("step")
                    if step_t is not None:
                        step_t = step_t._data
                        step_t += 1
                        step = _symbolic(step_t)  # float(step_t); traced by ember.compile
                d = p._data
                g = grad._data
                if maximize or coupled_decay != 0:
                    g = self._grad_for_rule(d, g, maximize, coupled_decay)
                if decay_factor is not None:
                    d *= decay_factor
                if d.dtype.kind == "c":
                    self._update_complex(d, g, state, group, lr, step)
                elif d.ndim:
                    self._update(d, g, state, group, lr, step)
                else:
                    self._update_0d(d, g, state, group, lr, step)
                _bump(p)
        return loss

    def _scratch(self, like, slot: int = 0):
        """A C-contiguous array of ``like``'s shape and dtype to compute into with ``out=``.

        One flat buffer per (array type, dtype, slot), grown to the largest parameter and
        reused by every parameter and step; it is no part of ``state`` (so not saved, copied or
        pickled). Rules use slots 0 and 1; ``_GRAD_SLOT`` holds the gradient ``step`` hands them.

        NOTE: fresh temporaries cost page faults once they pass glibc's 32 MiB mmap threshold:
        ``a * b`` on 10M float32 took 13.7 ms against 7.2 ms with ``out=`` (below it, 0.05 ms
        both); reusing one buffer keeps every update pass at ``out=`` speed.
        """
        buffers = self.__dict__.get("_scratch_buffers")
        if buffers is None:
            buffers = self._scratch_buffers = {}
        key = (type(like), like.dtype, slot)
        n = like.size
        buf = buffers.get(key)
        if buf is None or buf.size < n:
            buf = buffers[key] = xp_of(like).empty(max(n, 1), dtype=like.dtype)
        return buf[:n].reshape(like.shape)

    def _grad_for_rule(self, d, g, maximize: bool, weight_decay: float):
        """``-g`` for ``maximize``, plus ``weight_decay * d`` (torch's coupled decay,
        ``grad.add(param, alpha=wd)``), in a scratch array: the gradient itself is untouched."""
        xp = xp_of(d)
        out = self._scratch(d, _GRAD_SLOT)
        if weight_decay == 0:
            return xp.negative(g, out=out)
        xp.multiply(d, weight_decay, out=out)
        if maximize:
            xp.subtract(out, g, out=out)  # (-g) + wd * d: the negation is exact
        else:
            xp.add(g, out, out=out)
        return out

    def _has_state(self, group: dict[str, Any]) -> bool:
        """Whether the rule keeps per-parameter state for this group (SGD without momentum
        keeps none, and torch then leaves ``state`` empty)."""
        return True

    def _init_state(self, state: dict[str, Any], p: Tensor, group: dict[str, Any]) -> None:
        """Fill the empty ``state`` of ``p`` (torch's ``_init_group``), e.g. ``step`` and the
        moment buffers."""

    def _update(self, d, g, state: dict[str, Any] | None, group: dict[str, Any], lr: float,
                step: float | None) -> None:
        """The rule: change the parameter's array ``d`` in place from its gradient array ``g``
        (already negated for ``maximize`` and with coupled weight decay added). ``state`` is
        the parameter's state, ``step`` the new step count as a float (None when the rule
        counts no steps)."""
        raise NotImplementedError(f"{type(self).__name__} must implement step() or _update()")

    def _update_complex(self, d, g, state: dict[str, Any] | None, group: dict[str, Any],
                        lr: float, step: float | None) -> None:
        """``_update`` for a complex parameter, run on real views of it, its gradient and its
        complex state, as torch's optimizers do (``view_as_real``): the real and imaginary
        parts are updated as independent numbers. The state stays complex, as torch's."""
        real = _real_view
        g = xp_of(d).asarray(g)
        if state is None:
            self._update(real(d), real(g), None, group, lr, step)
            return
        views = {k: _make(real(v._data)) if isinstance(v, Tensor) and v._data.dtype.kind == "c"
                 else v for k, v in state.items()}
        before = dict(views)
        self._update(real(d), real(g), views, group, lr, step)
        for k, v in views.items():  # state the rule created or replaced, back to complex
            if before.get(k) is not v:
                state[k] = _make(v._data.view(d.dtype).reshape(d.shape)) \
                    if isinstance(v, Tensor) and v._data.shape[-1:] == (2,) else v

    def _update_0d(self, d, g, state: dict[str, Any] | None, group: dict[str, Any],
                   lr: float, step: float | None) -> None:
        """``_update`` for a 0-d parameter, run on 1-element views of it and its state.

        NOTE: NumPy returns scalars, not 0-d arrays, from arithmetic on 0-d arrays, so the
        rules' in-place steps (``out=``, ``+=`` on a state buffer) would fail or update a
        copy. Views of shape (1,) share the 0-d arrays' memory, so every rule stays as written.
        """
        d1 = d.reshape(1)
        g1 = xp_of(d).asarray(g).reshape(1)
        if state is None:
            self._update(d1, g1, None, group, lr, step)
            return
        views = {k: _make(v._data.reshape(1)) if isinstance(v, Tensor) else v
                 for k, v in state.items()}
        before = dict(views)
        self._update(d1, g1, views, group, lr, step)
        for k, v in views.items():  # state the rule created or replaced, back to 0-d
            if before.get(k) is not v:
                state[k] = _make(v._data.reshape(())) if isinstance(v, Tensor) else v

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (missing ones from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        param_set: set[int] = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)

    # ---- helpers for subclasses -----------------------------------------------------------

    @staticmethod
    def _eval_closure(closure):
        """Call ``closure`` with grad enabled (``step`` itself records nothing)."""
        if closure is None:
            return None
        with enable_grad():
            return closure()


def _add_ordered_hook(registry: HookDict, hook, prepend: bool):
    handle = add_hook(registry, hook)
    if prepend:
        items = list(registry.items())
        registry.clear()
        registry[handle.id] = hook
        registry.update((k, v) for k, v in items if k != handle.id)
    return handle


def _check_lr(lr) -> None:
    """The ``lr`` checks every torch optimizer makes first."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_unsupported(name: str, differentiable: bool = False, capturable: bool = False,
                       fused: bool | None = None) -> None:
    """ember's updates are raw arrays changed in place: no graph through the step, no CUDA
    graphs."""
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True is not supported by ember")
    if capturable:
        raise NotImplementedError(f"{name}: capturable=True is not supported by ember "
                                  "(it needs CUDA graphs)")
    del fused  # a fused kernel computes the same update: ember's step is already one pass

