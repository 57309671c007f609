"""``torch.nn.utils.spectral_norm`` (the hook form): w = w_orig / sigma(w_orig).

sigma is estimated by power iteration: ``weight_u`` and ``weight_v`` are buffers updated in
place (no grad) on every training-mode forward; eval mode reuses them. State dict keys
(``weight_orig``, ``weight_u``, ``weight_v``) and the ``spectral_norm`` metadata version are
torch's.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ... import linalg
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops.products import dot, mv
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter
from .weight_norm import remove_norm_hook

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook",
           "remove_spectral_norm", "spectral_norm"]


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name> = <name>_orig / sigma``."""

    _version: int = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``dim`` first, the rest flattened: (size(dim), -1)."""
        if self.dim != 0:
            weight = weight.permute(self.dim,
                                    *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():  # the buffers change in place, as torch's ``out=`` does
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(mv(weight_mat, v), dim=0, eps=self.eps))
            # clones: the in-place updates of a later forward must not touch this graph
            u = u.clone()
            v = v.clone()
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat: Tensor, u: Tensor, target_sigma) -> Tensor:
        # v with u = normalize(W v) and u^T W v = target_sigma (pinv: W^T W may be singular)
        v = linalg.multi_dot([linalg.pinv(weight_mat.t().mm(weight_mat)), weight_mat.t(),
                              u.unsqueeze(1)]).squeeze(1)
        return v.mul_(target_sigma / dot(u, mv(weight_mat, v)))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError("Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError(  # noqa: TRY004 (torch's type)
                "The module passed to `SpectralNorm` can't have uninitialized "
                "parameters. Make sure to run the dummy forward before applying "
                "spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # a plain attribute until the first forward replaces it (torch: weight.data)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Upgrades a checkpoint of spectral norm version 0 (``weight`` saved, no ``weight_v``)."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs) -> None:
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is None or version < 1:
            weight_key = prefix + fn.name
            if version is None and weight_key not in state_dict and all(
                    weight_key + s in state_dict for s in ("_orig", "_u", "_v")):
                return  # saved without metadata but already in the current layout
            has_missing_keys = False
            for suffix in ("_orig", "", "_u"):
                key = weight_key + suffix
                if key not in state_dict:
                    has_missing_keys = True
                    if strict:
                        missing_keys.append(key)
            if has_missing_keys:
                return
            with no_grad():
                weight_orig = state_dict[weight_key + "_orig"]
                weight = state_dict.pop(weight_key)
                sigma = (weight_orig / weight).mean()
                weight_mat = fn.reshape_weight_to_matrix(weight_orig)
                u = state_dict[weight_key + "_u"]
                state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, u, sigma)


class SpectralNormStateDictHook:
    """Records ``spectral_norm`` version in the state dict's metadata."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata) -> None:
        meta = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in meta:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        meta[key] = self.fn._version


T_module = TypeVar("T_module", bound=Module)


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> T_module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration (``dim``
    defaults to 1 for ConvTranspose layers, else 0)."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Fold the normalisation into one parameter ``<name>`` and drop the hooks."""
    remove_norm_hook(module, name, SpectralNorm, "spectral_norm")
    for registry, kind in ((module._state_dict_hooks, SpectralNormStateDictHook),
                           (module._load_state_dict_pre_hooks,
                            SpectralNormLoadStateDictPreHook)):
        for k, hook in registry.items():
            if isinstance(hook, kind) and hook.fn.name == name:
                del registry[k]
                break
    return module
