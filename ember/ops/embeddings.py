"""Lookups: ``embedding``, ``embedding_bag`` and ``one_hot`` (``F.*``), and ``torch.embedding``
(weight first)."""

from __future__ import annotations

import warnings

from .._backend import dtypes as _dt
from .._backend import host, ndarray, to_host, xp_of
from .._tensor import Tensor, _make
from ._op import Op, apply1
from ._registry import register
from .creation import full, zeros
from .indexing import added_at
from .shape import cat

__all__ = ["embedding", "embedding_bag", "one_hot"]


class EmbeddingBackward0(Op):
    """embedding(weight, idx) = weight[idx]: d/dweight = grad summed into the rows of ``idx``
    (each scaled by ``coef``: 0 for padding_idx, 1/count with scale_grad_by_freq)."""

    __slots__ = ("coef", "idx", "num")

    def forward(self, w, idx, coef):
        self.idx, self.coef, self.num = idx, coef, w.shape[0]
        return w.take(idx, axis=0)  # NOTE: not ``w[idx]``: 46 -> 27 µs, (32, 64) of (1000, 128)

    def backward(self, grad):
        return apply1(EmbeddingDenseBackward0, grad, self.idx, self.coef, self.num)

    def jvp(self, tangents, inputs, out):
        # the rows of the weight's tangent: padding_idx and scale_grad_by_freq shape only the
        # backward, as in torch, so this is not derived from it
        return apply1(EmbeddingBackward0, tangents[0], self.idx, None)


class EmbeddingDenseBackward0(Op):
    """The scatter-add of embedding's backward; its own derivative is the gather back."""

    __slots__ = ("coef", "idx")

    def forward(self, g, idx, coef, num):
        self.idx, self.coef = idx, coef
        dim = g.shape[-1]
        rows = g.reshape(-1, dim)
        if coef is not None:
            rows = rows * coef.reshape(-1, 1)
        # NOTE: ``added_at``'s sorted row sums, not ``add.at``: forward and backward of
        # (32, 64) indices into (1000, 128) float32, 3,572 -> ~420 µs (torch ~270)
        return added_at(rows, (num, dim), (idx.reshape(-1),))

    def backward(self, grad):
        return apply1(_EmbeddingGather, grad, self.idx, self.coef)


class _EmbeddingGather(Op):
    """weight[idx] * coef: the derivative of ``EmbeddingDenseBackward0``."""

    __slots__ = ("coef", "idx", "num")

    def forward(self, w, idx, coef):
        self.idx, self.coef, self.num = idx, coef, w.shape[0]
        out = w.take(idx, axis=0)
        return out if coef is None else out * coef[..., None]

    def backward(self, grad):
        return apply1(EmbeddingDenseBackward0, grad, self.idx, self.coef, self.num)


def _renorm_rows(weight: Tensor, idx: ndarray, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: rows used by ``idx`` whose norm exceeds max_norm are
    scaled to it, in place (not recorded by autograd; the weight's version is bumped)."""
    w = weight._data
    xp = xp_of(w)
    rows = xp.unique(idx)
    sel = w[rows]
    if norm_type == float("inf"):
        norms = xp.abs(sel).max(axis=1)
    else:
        norms = (xp.abs(sel) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    big = norms > max_norm
    scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
    w[rows[big]] = sel[big] * scale[:, None]
    weight._vc[0] += 1


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``F.embedding``: rows of ``weight`` picked by the integer ``input``.

    ``padding_idx``'s row gets no gradient; ``max_norm`` renormalises the rows used, in place;
    ``scale_grad_by_freq`` divides each row's gradient by its count in ``input``. ``sparse``
    is accepted; the gradient is always dense.
    """
    num = weight._data.shape[0] if weight._data.ndim else 0
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < num, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -num, "Padding_idx must be within num_embeddings"
            padding_idx = num + padding_idx
    idx = input._data
    if idx.dtype not in (host.int64, host.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got torch."
                           f"{input.dtype._legacy} instead (while checking arguments for "
                           f"embedding)")
    if weight._data.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_rows(weight, idx, max_norm, norm_type)
    coef = None
    if scale_grad_by_freq or padding_idx is not None:
        xp = xp_of(idx)
        coef = xp.ones(idx.shape, dtype=weight._data.dtype)
        if scale_grad_by_freq:
            counts = xp.bincount(idx.reshape(-1), minlength=num)
            coef = coef / counts[idx].astype(coef.dtype)
        if padding_idx is not None:
            coef = xp.where(idx == padding_idx, 0, coef).astype(coef.dtype)
    return apply1(EmbeddingBackward0, weight, idx, coef)



@register(name="embedding", method=False)
def torch_embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
                    scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``torch.embedding``: weight first; a negative ``padding_idx`` means none (``F.embedding``
    passes -1 for ``None``)."""
    return embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _bag_error() -> RuntimeError:
    return RuntimeError("Expected i < index_size to be true, but got false.  (Could this error "
                        "message be improved?  If so, please report an enhancement request to "
                        "PyTorch.)")


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """``F.embedding_bag``: sums, means or maxima of bags of embedding rows, without the
    intermediate (n, D) tensor being visible. Bags are given by ``offsets`` into a 1-D
    ``input``, or are the rows of a 2-D ``input``; entries equal to ``padding_idx`` are left
    out (and not counted by 'mean'); an empty bag gives zeros.

    NOTE: a composite of ``embedding`` and ``index_add`` (sum/mean) or a padded gather and
    ``max`` over the bag (max), so gradients to ``weight`` and ``per_sample_weights`` come
    from those ops. ``scale_grad_by_freq`` scales by each index's count in ``input`` as
    ``F.embedding`` does (torch 2.13's CPU embedding_bag miscounts there); with
    ``include_last_offset`` the last offset should be ``len(input)``, as torch documents.
    """
    if weight.dtype == _dt.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    idx = input._data
    xp = xp_of(idx)
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        offs = host.arange(0, idx.size, idx.shape[1]) if idx.shape[1] else host.zeros(
            idx.shape[0], dtype=host.int64)
        include_last_offset = False
        idx = idx.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        offs = to_host(offsets._data)  # the bags' plan is made on the host
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if idx.dtype not in (host.int64, host.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got torch."
                           f"{input.dtype._legacy} instead (while checking arguments for "
                           f"embedding_bag)")
    n, num = idx.size, weight._data.shape[0]
    if max_norm is not None:
        _renorm_rows(weight, idx, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if offs.size and offs[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(offs[0])}")
    if offs.size and offs[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {int(offs[-1])}")
    if host.any(host.diff(offs) < 0) or (n and (idx.min() < 0 or idx.max() >= num)):
        raise _bag_error()
    if include_last_offset:
        starts, ends = offs[:-1], offs[1:]
    else:
        starts, ends = offs, host.append(offs[1:], n).astype(offs.dtype)
    bags = len(starts)
    lengths = (ends - starts).astype(host.int64)
    seg = host.repeat(host.arange(bags), lengths)  # the bag of each entry used
    pos = host.concatenate([host.arange(a, b) for a, b in zip(starts, ends)]) if bags else \
        host.zeros(0, dtype=host.int64)
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += num
        keep = to_host(idx[xp.asarray(pos)] != padding_idx)
        pos, seg = pos[keep], seg[keep]
    dim = weight._data.shape[1]
    pos_t = _make(xp.asarray(pos))
    rows = embedding(_make(idx[pos_t._data].astype(host.int64)), weight,
                     scale_grad_by_freq=scale_grad_by_freq)
    if mode == "max":
        counts = host.bincount(seg, minlength=bags)
        width = int(counts.max()) if bags else 0
        if width == 0:
            return zeros(bags, dim, dtype=weight.dtype, device=weight.device)
        # (bags, width) positions into rows, padded with an extra -inf row
        slot = host.arange(len(seg)) - host.repeat(host.cumsum(counts) - counts, counts)
        table = host.full((bags, width), len(seg), dtype=host.int64)
        table[seg, slot] = host.arange(len(seg))
        pad_row = full((1, dim), float("-inf"), dtype=weight.dtype, device=weight.device)
        ext = cat([rows, pad_row], 0)
        out = ext[_make(xp.asarray(table))].max(dim=1).values
        empty = counts == 0
        if empty.any():
            out = out.masked_fill(_make(xp.asarray(empty[:, None])), 0)
        return out
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[pos_t].unsqueeze(1)
    elif mode == "mean":
        counts = host.bincount(seg, minlength=bags)
        scale = 1.0 / host.maximum(counts, 1)[seg]
        rows = rows * _make(xp.asarray(scale[:, None].astype(weight._data.dtype)))
    out = zeros(bags, dim, dtype=weight.dtype, device=weight.device)
    return out.index_add(0, _make(xp.asarray(seg)), rows)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``F.one_hot``: int64 indices to an int64 one-hot tensor with a trailing class dim."""
    idx = tensor._data
    if idx.dtype != host.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if not idx.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    if idx.size:
        if idx.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if idx.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    # NOTE: ones written at flat positions into zeros, not ``idx[..., None] == arange``
    # (a bool array then an int64 copy): (1000,) into 256 classes, 170 -> 32 µs (torch 35)
    xp = xp_of(idx)
    out = xp.zeros(idx.shape + (num_classes,), dtype=host.int64)
    if idx.size:
        out.reshape(-1)[xp.arange(0, idx.size * num_classes, num_classes) + idx.reshape(-1)] = 1
    return _make(out)
