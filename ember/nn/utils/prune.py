"""``torch.nn.utils.prune``: zero parts of a parameter through a mask.

Pruning ``name`` moves the parameter to ``<name>_orig``, adds a buffer ``<name>_mask`` and a
forward pre-hook that sets ``module.<name> = <name>_mask * <name>_orig``. Pruning the same
tensor again wraps the methods in a ``PruningContainer`` whose masks compose: each new method
only looks at the entries (or channels) the earlier ones kept.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import linalg
from ..._tensor import Tensor
from ...ops.creation import ones_like, rand, rand_like, zeros_like
from ...ops.sorting import kthvalue, topk
from ..modules.module import Module
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured",
           "PruningContainer", "RandomStructured", "RandomUnstructured", "custom_from_mask",
           "global_unstructured", "identity", "is_pruned", "l1_unstructured", "ln_structured",
           "random_structured", "random_unstructured", "remove"]


class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask`` says which entries survive; as a forward pre-hook it
    recomputes the pruned tensor before each forward."""

    _tensor_name: str
    PRUNING_TYPE: str

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t`` given the mask of the earlier pruning (``default_mask``)."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_mask * <name>_orig`` (differentiable in ``<name>_orig``)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores: Tensor | None = None,
              **kwargs) -> BasePruningMethod:
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, composing with an earlier
        pruning of the same tensor."""
        old_method = None
        found = 0
        hooks_to_remove = []
        for k, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                hooks_to_remove.append(k)
                found += 1
        if found > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} "
                                 f"of module {module}. Use a PruningContainer.")
        for k in hooks_to_remove:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            method = old_method
        elif old_method is not None:
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container

        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError("importance_scores should have the same shape as parameter "
                                     f"{name} of {module}, got {importance_scores.shape} vs "
                                     f"{orig.shape}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):  # undo the move of the parameter
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """The pruned version of ``t`` (not touching any module)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError("importance_scores should have the same shape as tensor t, "
                                     f"got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` is again one parameter (the
        ``<name>_orig`` object, now holding the pruned values)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 "removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.detach()
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods on one tensor, applied one after another."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method prunes only what survived so far: unstructured methods see the
        unpruned entries, structured ones the unpruned channels, global ones everything."""
        method = self._pruning_methods[-1]
        mask = default_mask
        new_mask = mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                     "the attribute `dim` defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = [slice(None)] * n_dims
            slc[dim] = keep_channel
            slc = tuple(slc)
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * len(t.shape)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> Identity:
        return super().apply(module, name)


def _unstructured_mask(amount, t: Tensor, default_mask: Tensor, scores, largest: bool) -> Tensor:
    """``default_mask`` with the ``amount`` entries of ``t`` of largest (or smallest)
    ``scores()`` zeroed, as torch's unstructured methods compute it (``scores`` is called only
    when something is pruned: a random draw then consumes the generator as torch's does)."""
    tensor_size = t.nelement()
    nparams_toprune = _compute_nparams_toprune(amount, tensor_size)
    _validate_pruning_amount(nparams_toprune, tensor_size)
    mask = default_mask.clone()
    if nparams_toprune != 0:
        picked = topk(scores().reshape(-1), k=nparams_toprune, largest=largest).indices
        mask.view(-1)[picked] = 0
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` (a fraction, or a count) of the entries, chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        # random scores: the entries with the largest draws are pruned
        return _unstructured_mask(self.amount, t, default_mask, lambda: rand_like(t), True)

    @classmethod
    def apply(cls, module: Module, name: str, amount) -> RandomUnstructured:
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _unstructured_mask(self.amount, t, default_mask, t.abs, False)

    @classmethod
    def apply(cls, module: Module, name: str, amount,
              importance_scores: Tensor | None = None) -> L1Unstructured:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t: Tensor, dim: int, keep) -> Tensor:
    """Ones in the channels ``keep`` (indices or a bool mask) along ``dim``, zeros elsewhere."""
    mask = zeros_like(t)
    slc = [slice(None)] * len(t.shape)
    slc[dim] = keep
    mask[tuple(slc)] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        if nparams_toprune == 0:
            return default_mask
        prob = rand(tensor_size)
        threshold = kthvalue(prob, k=nparams_toprune).values
        mask = _channel_mask(t, self.dim, prob > threshold)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount, dim: int = -1) -> RandomStructured:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        nparams_tokeep = tensor_size - nparams_toprune
        _validate_pruning_amount(nparams_toprune, tensor_size)
        if nparams_toprune == 0:
            return default_mask
        largest = topk(_compute_norm(t, self.n, self.dim), k=nparams_tokeep, largest=True)
        mask = _channel_mask(t, self.dim, largest.indices)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount, n, dim: int,
              importance_scores: Tensor | None = None) -> LnStructured:
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask "
                                 f"shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> CustomFromMask:
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    """Prune nothing, but set up ``<name>_orig``/``<name>_mask`` (torch's ``prune.identity``)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount) -> Module:
    """Prune ``amount`` random entries of ``module.<name>``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount,
                    importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest |score|."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount, n, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` channels along ``dim`` of smallest L``n`` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method: type, importance_scores=None,
                        **kwargs) -> None:
    """Prune across several ``(module, name)`` tensors at once, as if they were one vector;
    each gets a ``CustomFromMask`` with its slice of the global mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    relevant_importance_scores = parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name))
         for module, name in parameters])
    default_mask = parameters_to_vector(
        [getattr(module, name + "_mask", ones_like(getattr(module, name)))
         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + num_param]
                         .view_as(param))
        pointer += num_param


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent and drop its hook, mask and orig."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any submodule has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_pruning_amount(amount, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t: Tensor) -> None:
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size: int) -> int:
    """A count stays; a fraction is rounded (Python's round, as torch)."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t: Tensor, n, dim: int) -> Tensor:
    """The L``n`` norm of each channel along ``dim`` (torch.norm over the other dims: a vector
    norm; ``'fro'`` is the 2-norm)."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    if isinstance(n, str):
        if n != "fro":
            raise ValueError(f"ember: ln_structured takes n as a number or 'fro', got {n!r}")
        n = 2
    return linalg.vector_norm(t, n, dim=dims)
