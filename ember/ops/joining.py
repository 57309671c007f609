"""Joining tensors: cat and stack (one node with an input per tensor, as in torch)."""

from __future__ import annotations

from .._backend import xp_of
from .._tensor import Tensor, _wrap_dim
from ._op import Op


class CatBackward0(Op):
    """cat(tensors, dim): each input gets its slice of the gradient."""

    __slots__ = ("dim", "sizes")

    def forward(self, *arrays_and_dim):
        *arrays, dim = arrays_and_dim
        self.dim = dim
        self.sizes = [a.shape[dim] for a in arrays]
        return xp_of(*arrays).concatenate(arrays, axis=dim)

    def backward(self, grad):
        out, start = [], 0
        lead = (slice(None),) * self.dim
        for size, (node, _) in zip(self.sizes, self.next_functions):
            out.append(grad[lead + (slice(start, start + size),)] if node is not None else None)
            start += size
        return tuple(out)


class StackBackward0(Op):
    """stack(tensors, dim): each input gets its index of the gradient along ``dim``."""

    __slots__ = ("dim",)

    def forward(self, *arrays_and_dim):
        *arrays, dim = arrays_and_dim
        self.dim = dim
        return xp_of(*arrays).stack(arrays, axis=dim)

    def backward(self, grad):
        lead = (slice(None),) * self.dim
        return tuple(grad[lead + (i,)] if node is not None else None
                     for i, (node, _) in enumerate(self.next_functions))


def tensor_list(tensors, op: str, empty: str = "(): expected a non-empty list of Tensors") -> list:
    """The sequence of tensors a joining op takes, with torch's errors (``empty`` follows the
    op's name in the message for an empty one)."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        "Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(op + empty)
    return tensors


def cat(tensors, dim: int = 0, *, out=None) -> Tensor:
    """``torch.cat``: join along an existing dim (dtypes promoted; legacy empty 1-d skipped)."""
    tensors = tensor_list(tensors, "cat")
    kept = [(i, t) for i, t in enumerate(tensors)
            if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or list(enumerate(tensors))
    ref = kept[0][1]
    d = _wrap_dim(dim, ref._data.ndim)
    for i, t in kept:
        if t._data.ndim != ref._data.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got "
                               f"{ref._data.ndim} and {t._data.ndim}")
        for k in range(ref._data.ndim):
            if k != d and t._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref._data.shape[k]} but got size {t._data.shape[k]} for tensor number "
                    f"{i} in the list.")
    kept = _promoted([t for _, t in kept])
    return CatBackward0.apply(*kept, params=(d,))


concat = concatenate = cat


def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    """``torch.stack``: join along a new dim; all shapes must be equal."""
    tensors = tensor_list(tensors, "stack")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._data.shape)} at entry {i}")
    d = _wrap_dim(dim, len(shape) + 1)
    return StackBackward0.apply(*_promoted(tensors), params=(d,))


def _promoted(tensors: list) -> list:
    dtypes = {t._data.dtype for t in tensors}
    if len(dtypes) == 1:
        return tensors
    from .._backend import result_type
    rt = result_type(*tensors)
    return [t if t._data.dtype == rt.np else t.to(rt) for t in tensors]
