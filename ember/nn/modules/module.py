"""``nn.Module``: torch's module semantics.

Attribute assignment routes values into three registries (parameters, buffers, submodules)
in ``__setattr__``; everything else (iteration, ``state_dict``, ``to``, ``train``) walks those.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ..._backend import dtypes
from ..._backend import trace as _trace
from ..._backend.device import device, to_device
from ..._backend.dtypes import to_dtype
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops.creation import empty_like
from ...utils.hooks import HookDict, add_hook
from ..parameter import Parameter, is_lazy
from .hooks import finish_backward_hooks, setup_backward_hooks

__all__ = ["Module"]



class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns; prints ``<All keys matched successfully>`` when both
    lists are empty, as torch does."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"

# process-wide hooks (nn.modules.module.register_module_forward_hook & co.)
_global_forward_pre_hooks = HookDict()
_global_forward_hooks = HookDict()
_global_forward_hooks_always_called: set = set()
_global_forward_hooks_with_kwargs: set = set()
_global_backward_pre_hooks = HookDict()
_global_backward_hooks = HookDict()
_global_is_full_backward_hook: bool | None = None


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class of all layers and models (``torch.nn.Module``)."""

    training: bool
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs) -> None:
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = HookDict()
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_forward_hooks"] = HookDict()
        d["_forward_hooks_with_kwargs"] = set()
        d["_forward_hooks_always_called"] = set()
        d["_backward_hooks"] = HookDict()
        d["_backward_pre_hooks"] = HookDict()
        d["_is_full_backward_hook"] = None
        d["_state_dict_hooks"] = HookDict()
        d["_state_dict_pre_hooks"] = HookDict()
        d["_load_state_dict_pre_hooks"] = HookDict()
        d["_load_state_dict_post_hooks"] = HookDict()
        if self.call_super_init and (args or kwargs):
            super().__init__(*args, **kwargs)

    forward: callable

    def _forward_unimplemented(self, *input) -> None:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    forward = _forward_unimplemented  # noqa: PIE794 - subclasses define it

    # ------------------------------------------------------------------ registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (or None) as parameter ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(self, name, "parameter")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__module__}.{type(param).__name__}' "
                            f"object to parameter '{name}' (torch.nn.Parameter or None "
                            "required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             "parameters must be created explicitly. To express "
                             f"'{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (e.g. BatchNorm's running mean)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module as attribute ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` ('' is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Set the submodule at dotted path ``target`` (its parent must exist)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]):
            if not isinstance(getattr(parent, atoms[-1]), Module):
                raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ------------------------------------------------------------------ attribute routing
    def __getattr__(self, name: str):
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            reg = d.get(registry)
            if reg is not None and name in reg:
                return reg[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(self, name, d, params)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__module__}."
                                f"{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                _remove_from(self, name, d, modules)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__module__}."
                                    f"{type(value).__name__}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{type(value).__module__}."
                                        f"{type(value).__name__}' as buffer '{name}' "
                                        "(torch.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for registry in ("_parameters", "_buffers", "_modules"):
            reg = self.__dict__.get(registry)
            if reg is not None and name in reg:
                del reg[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = dir(type(self)) + list(self.__dict__)
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[:1].isdigit())

    # ------------------------------------------------------------------ iteration
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True):
        """(name, module) for self and every descendant, depth first, each once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, get_members, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """(dotted name, parameter) pairs; a shared parameter is listed once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        """Set training mode here and in every descendant."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default, as torch 2 does)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def apply(self, fn) -> Module:
        """Call ``fn`` on every submodule (children first) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse: bool = True) -> Module:
        """Replace every parameter's and buffer's data by ``fn(data)``, keeping the objects."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for key, param in self._parameters.items():
                if param is None:
                    continue
                new = fn(param)
                if new is not param:
                    param.data = new
                if param._grad is not None:
                    g = fn(param._grad)
                    if g is not param._grad:
                        param._grad = g
            for key, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: parameters and
        buffers move to the device, and floating ones change dtype (torch's ``Module.to``)."""
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str) or _is_device(a):
                device = a
            elif a is not None:
                dtype = a
        dev = to_device(device) if device is not None else None
        dt = None
        if dtype is not None:
            dt = to_dtype(dtype)
            if not dt.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dt}")
        if dev is None and dt is None:
            return self

        def convert(t: Tensor) -> Tensor:
            if dt is not None and t.is_floating_point():
                t = t.to(dt)
            return t.to(dev) if dev is not None and t.device != dev else t

        return self._apply(convert)

    def float(self) -> Module:
        return self._apply(lambda t: t.to(dtypes.float32) if t.is_floating_point() else t)

    def double(self) -> Module:
        return self._apply(lambda t: t.to(dtypes.float64) if t.is_floating_point() else t)

    def half(self) -> Module:
        return self._apply(lambda t: t.to(dtypes.float16) if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        return self._apply(lambda t: t.to(dtypes.bfloat16) if t.is_floating_point() else t)

    def compile(self, *args, **kwargs) -> None:
        """``nn.Module.compile``: compile this module in place, as torch does; its calls go
        through ``ember.compile``'s capture from now on (forward hooks stay eager: a module
        with hooks is a graph break). The module itself, its type and ``state_dict`` keys do
        not change."""
        from ..._compile import compile as _compile  # lazy: ember.compile loads on first use
        compiled = _compile(self.forward, *args, **kwargs)
        if compiled is not self.forward:
            self.__dict__["forward"] = compiled

    def to_empty(self, *, device=None, recurse: bool = True) -> Module:
        """Parameters and buffers become uninitialised tensors of the same shapes."""
        return self._apply(lambda t: empty_like(t), recurse=recurse)

    def share_memory(self) -> Module:
        return self

    def type(self, dst_type) -> Module:
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        to_device("cuda")
        return self

    # ------------------------------------------------------------------ state dict
    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """This module's own parameters, persistent buffers and extra state."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached unless keep_vars), with
        torch's ``_metadata`` (each module's ``_version``) attached."""
        if args:  # torch's deprecated positional form (destination, prefix, keep_vars)
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning,
                          stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if res is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif res is not None:
                destination = res
        return destination

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        """Load this module's own entries (torch's signature; ``assign`` travels in
        ``local_metadata["assign_to_params_buffers"]``)."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in {**self._parameters, **persistent}.items() if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            lazy = is_lazy(param)  # an uninitialised one has no shape to check yet
            if not lazy and param.dim() == 0 and value.dim() == 1 and value.shape[0] == 1:
                value = value[0]  # torch: a 0-d parameter saved as a 1-element vector
            if not lazy and value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model "
                                  f"is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if isinstance(value, Parameter):
                                value.requires_grad_(param.requires_grad)
                            else:
                                value = Parameter(value, requires_grad=param.requires_grad)
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as e:  # noqa: BLE001 - reported like torch, with the key
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                                  f"in the model are {param.shape} and whose dimensions in the "
                                  f"checkpoint are {value.shape}, an exception occurred : "
                                  f"{e.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head, dot, _ = key[len(prefix):].partition(".")
                    if (head not in self._modules) if dot else (head not in local):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` (or, with ``assign``, take them);
        returns ``(missing_keys, unexpected_keys)``; with ``strict`` any of either raises."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        # iterative walk (deep models must not hit the recursion limit), parents first
        stack = [(self, state_dict, "")]
        post: list = []
        while stack:
            module, local_sd, prefix = stack.pop()
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_sd, prefix, local_metadata, True, missing,
                                         unexpected, errors)
            children = []
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    children.append((child, {k: v for k, v in local_sd.items()
                                             if k.startswith(child_prefix)}, child_prefix))
            stack.extend(reversed(children))
            post.append(module)
        keys = _IncompatibleKeys(missing, unexpected)
        for module in reversed(post):  # torch runs a module's post hooks after its children
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, keys) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return keys

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict``; must
        return None (edit the dict in place)."""
        hook._from_public_api = True
        return add_hook(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook):
        """The private form: the hook may return a new state dict."""
        return add_hook(self._state_dict_hooks, hook)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before ``state_dict`` saves anything."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        if with_module:
            fn = hook

            def hook(*args, _fn=fn, _module=self):
                return _fn(_module, *args)
        return add_hook(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after ``load_state_dict``; may edit the key
        lists in place (e.g. clear them) before strict mode checks them."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    # ------------------------------------------------------------------ calling and hooks
    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False):
        """``hook(module, args)`` (or ``(module, args, kwargs)``) before forward; may return
        new args."""
        handle = add_hook(self._forward_pre_hooks, hook)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        if prepend:
            _move_to_front(self._forward_pre_hooks, handle.id)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """``hook(module, args, output)`` after forward; may return a new output."""
        handle = add_hook(self._forward_hooks, hook)
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        if prepend:
            _move_to_front(self._forward_hooks, handle.id)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` when the gradients w.r.t. the module's outputs are
        known; may return a new grad_output tuple."""
        handle = add_hook(self._backward_pre_hooks, hook)
        if prepend:
            _move_to_front(self._backward_pre_hooks, handle.id)
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` when the gradients w.r.t. the module's
        (positional tensor) inputs are computed; may return a new grad_input tuple."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = add_hook(self._backward_hooks, hook)
        if prepend:
            _move_to_front(self._backward_hooks, handle.id)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated (as in torch): ``hook(module, grad_input, grad_output)`` on the node
        that made the output; use ``register_full_backward_hook``."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        return add_hook(self._backward_hooks, hook)

    def _get_backward_hooks(self) -> tuple[list, list]:
        full: list = []
        non_full: list = []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        elif _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        elif self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self) -> list:
        return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def _call_impl(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_pre_hooks
                or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        if _trace.state.rec is not None:
            _trace.graph_break(f"a Python hook on {type(self).__name__} (forward or backward "
                               "hooks run eagerly)")
        result = None
        called_always: set = set()
        try:
            full, non_full = self._get_backward_hooks()
            bw_pre = self._get_backward_pre_hooks()
            for hid, hook in [*_global_forward_pre_hooks.items(),
                              *self._forward_pre_hooks.items()]:
                if hid in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if not (isinstance(res, tuple) and len(res) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {res}.")
                        args, kwargs = res
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_state = None
            if full or bw_pre:
                bw_state, args = setup_backward_hooks(self, args, full, bw_pre)
            result = self.forward(*args, **kwargs)
            for hid, hook in [*_global_forward_hooks.items(), *self._forward_hooks.items()]:
                if hid in self._forward_hooks_always_called \
                        or hid in _global_forward_hooks_always_called:
                    called_always.add(hid)
                if hid in self._forward_hooks_with_kwargs \
                        or hid in _global_forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_state is not None:
                result = finish_backward_hooks(bw_state, result)
            if non_full:
                _register_non_full_hooks(self, non_full, result)
            return result
        except Exception:
            for hid, hook in _global_forward_hooks.items():
                if hid in _global_forward_hooks_always_called and hid not in called_always:
                    try:
                        res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:  # noqa: BLE001 - torch silences it with a warning
                        warnings.warn("global module forward hook with ``always_call=True`` "
                                      "raised an exception that was silenced as another error "
                                      f"was raised in forward: {e}", stacklevel=2)
            for hid, hook in self._forward_hooks.items():
                if hid in self._forward_hooks_always_called and hid not in called_always:
                    try:
                        if hid in self._forward_hooks_with_kwargs:
                            res = hook(self, args, kwargs, result)
                        else:
                            res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:  # noqa: BLE001 - torch silences it with a warning
                        warnings.warn("module forward hook with ``always_call=True`` raised an "
                                      "exception that was silenced as another error was raised "
                                      f"in forward: {e}", stacklevel=2)
            raise

    __call__ = _call_impl

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in its repr (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            lines.append("(" + key + "): " + mod_str)
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        d = self.__dict__
        for name in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                     "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            d.setdefault(name, HookDict())
        for name in ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_non_persistent_buffers_set"):
            d.setdefault(name, set())
        d.setdefault("_is_full_backward_hook", None)


def _check_name(module: Module, name: str, what: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{what} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{what} name can\'t be empty string ""')
    registry = module._parameters if what == "parameter" else module._buffers
    if hasattr(module, name) and name not in registry:
        raise KeyError(f"attribute '{name}' already exists")


def _remove_from(module: Module, name: str, d: dict, keep: dict) -> None:
    for registry in (d.get("_parameters"), d.get("_buffers"), d.get("_modules")):
        if registry is not None and registry is not keep:
            registry.pop(name, None)
    d.pop(name, None)
    module._non_persistent_buffers_set.discard(name)


def _move_to_front(registry: dict, key) -> None:
    value = registry.pop(key)
    items = list(registry.items())
    registry.clear()
    registry[key] = value
    registry.update(items)


def _is_device(obj) -> bool:
    return isinstance(obj, device)


def _register_non_full_hooks(module: Module, hooks: list, result) -> None:
    """The deprecated ``register_backward_hook``: hooks on the node that made the output."""
    var = result
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) \
            else var[0]
    grad_fn = var.grad_fn
    if grad_fn is not None:
        for hook in hooks:
            grad_fn.register_hook(
                lambda gi, go, _h=hook, _m=module: _h(_m, gi, go))


def register_module_forward_pre_hook(hook):
    """A forward pre-hook run by every module, before its own (``hook(module, args)``)."""
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False):
    """A forward hook run by every module, before its own (``hook(module, args, output)``)."""
    handle = add_hook(_global_forward_hooks, hook)
    if with_kwargs:
        _global_forward_hooks_with_kwargs.add(handle.id)
    if always_call:
        _global_forward_hooks_always_called.add(handle.id)
    return handle


def register_module_full_backward_pre_hook(hook):
    """A backward pre-hook run by every module, before its own."""
    return add_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """A full backward hook run by every module, before its own."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return add_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Deprecated global form of ``register_backward_hook``."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    return add_hook(_global_backward_hooks, hook)
