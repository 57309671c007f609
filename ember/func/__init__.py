"""``ember.func``: torch.func's composable function transforms, on ember's autograd.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``,
``hessian``, ``vmap``, ``functional_call`` and ``stack_module_state``, each taking and returning
pytrees (tuples, lists, dicts) of tensors, and composable with each other (``grad(grad(f))``,
``jacrev(jacfwd(f))``, ``vmap(grad(f))``). See docs/func.md for how vmap batches ops.
"""

from __future__ import annotations

from ._batched import FALLBACKS as vmap_fallback_counts
from ._eager import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._module import functional_call, stack_module_state
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "stack_module_state", "vjp", "vmap", "vmap_fallback_counts"]
