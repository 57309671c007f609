"""nn.functional lookups: ``embedding`` and ``one_hot``."""

from __future__ import annotations

import numpy as np

from ..._tensor import Tensor, _make
from ...ops._op import Op, apply1

__all__ = ["embedding", "one_hot"]


class EmbeddingBackward0(Op):
    """embedding(weight, idx) = weight[idx]: d/dweight = grad summed into the rows of ``idx``
    (each scaled by ``coef``: 0 for padding_idx, 1/count with scale_grad_by_freq)."""

    __slots__ = ("coef", "idx", "num")

    def forward(self, w, idx, coef):
        self.idx, self.coef, self.num = idx, coef, w.shape[0]
        return w[idx]

    def backward(self, grad):
        return apply1(EmbeddingDenseBackward0, grad, self.idx, self.coef, self.num)


class EmbeddingDenseBackward0(Op):
    """The scatter-add of embedding's backward; its own derivative is the gather back."""

    __slots__ = ("coef", "idx")

    def forward(self, g, idx, coef, num):
        self.idx, self.coef = idx, coef
        dim = g.shape[-1]
        rows = g.reshape(-1, dim)
        if coef is not None:
            rows = rows * coef.reshape(-1, 1)
        out = np.zeros((num, dim), dtype=g.dtype)
        np.add.at(out, idx.reshape(-1), rows)
        return out

    def backward(self, grad):
        return apply1(_EmbeddingGather, grad, self.idx, self.coef)


class _EmbeddingGather(Op):
    """weight[idx] * coef: the derivative of ``EmbeddingDenseBackward0``."""

    __slots__ = ("coef", "idx", "num")

    def forward(self, w, idx, coef):
        self.idx, self.coef, self.num = idx, coef, w.shape[0]
        out = w[idx]
        return out if coef is None else out * coef[..., None]

    def backward(self, grad):
        return apply1(EmbeddingDenseBackward0, grad, self.idx, self.coef, self.num)


def _renorm_rows(weight: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: rows used by ``idx`` whose norm exceeds max_norm are
    scaled to it, in place (not recorded by autograd; the weight's version is bumped)."""
    rows = np.unique(idx)
    w = weight._data
    sel = w[rows]
    if norm_type == float("inf"):
        norms = np.max(np.abs(sel), axis=1)
    else:
        norms = np.sum(np.abs(sel) ** norm_type, axis=1) ** (1.0 / norm_type)
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
    if idx.dtype not in (np.int64, np.int32):
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
        coef = np.ones(idx.shape, dtype=weight._data.dtype)
        if scale_grad_by_freq:
            counts = np.bincount(idx.reshape(-1), minlength=num)
            coef = coef / counts[idx].astype(coef.dtype)
        if padding_idx is not None:
            coef = np.where(idx == padding_idx, 0, coef).astype(coef.dtype)
    return apply1(EmbeddingBackward0, weight, idx, coef)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``F.one_hot``: int64 indices to an int64 one-hot tensor with a trailing class dim."""
    idx = tensor._data
    if idx.dtype != np.int64:
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
    return _make((idx[..., None] == np.arange(num_classes)).astype(np.int64))
