"""nn.functional losses: those with a primitive from ``ember.ops.losses`` (mse, smooth_l1, huber,
nll, cross_entropy, binary cross-entropy, the margin losses), and the composites (l1, kl_div,
poisson/gaussian nll, the embedding and triplet losses) written as torch writes them, so their
graphs match torch's.
"""

from __future__ import annotations

import math
import warnings

from ..._tensor import Tensor
from ...amp import _state as _amp
from ...autograd.grad_mode import no_grad
from ...ops.arithmetic import xlogy
from ...ops.comparison import clamp_min, minimum, where
from ...ops.creation import ones_like
from ...ops.distance import pairwise_distance
from ...ops.losses import (
    _REDUCTIONS,
    _check_reduction,
    _common,
    _legacy_reduction,
    _log_sigmoid,
    _reduce,
    _reduction,
    _size_list,
    _size_warning,
    _weighted,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
)
from ...ops.reductions import any as _any
from ...ops.reductions import norm
from ...ops.unary import exp, log

__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
    "cross_entropy", "ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss",
    "kl_div", "l1_loss", "margin_ranking_loss", "mse_loss", "multi_margin_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "nll_loss", "poisson_nll_loss",
    "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss"
]


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``F.l1_loss``: mean absolute error; a composite, as torch records it (``AbsBackward0``
    under ``MeanBackward0``/``SumBackward0``)."""
    if _amp.active:  # autocast: a float32 op
        input, target = _amp.fp32(input, target)
    _size_warning(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    x, y = _common(input, target, None)
    if weight is not None:
        return _weighted((x - y).abs(), weight, input, reduction, True)
    reduction = _check_reduction(reduction)
    return _reduce((x - y).abs(), reduction)


# --------------------------------------------------------------------------- kl, poisson, gaussian


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``F.kl_div``: input in log space; target too if ``log_target``. ``'batchmean'`` divides
    the sum by the batch size; ``'mean'`` warns, as torch does."""
    if _amp.active:  # autocast: a float32 op
        input, target = _amp.fp32(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
        batchmean = False
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                          "the support size.'batchmean' divides only by the batch size, and "
                          "aligns with the KL div math definition.'mean' will be changed to "
                          "behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        batchmean = reduction == "batchmean"
        reduction = "sum" if batchmean else _check_reduction(reduction)
    if log_target:
        loss = exp(target) * (target - input)
    else:
        loss = xlogy(target, target) - target * input  # as torch: its gradient too
    out = _reduce(loss, reduction)
    if batchmean and input.dim() != 0:
        out = out / input.shape[0]
    return out


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``F.poisson_nll_loss``: exp(input) - target * input (or input - target log(input + eps));
    ``full`` adds Stirling's term where target > 1."""
    if _amp.active:  # autocast: a float32 op
        input, target = _amp.fp32(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = exp(input) - target * input
    else:
        loss = input - target * log(input + eps)
    if full:
        stirling = target * log(target) - target + 0.5 * log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``F.gaussian_nll_loss``: 0.5 (log var + (input - target)**2 / var), var clamped to eps
    without blocking its gradient (as torch's in-place clamp under no_grad)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif bool(_any(var < 0)):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``F.cosine_embedding_loss``: 1 - cos where target == 1, max(0, cos - margin) where -1."""
    if _amp.active:  # autocast: a float32 op
        input1, input2 = _amp.fp32(input1, input2)
    reduction = _reduction(size_average, reduce, reduction)
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {_size_list(input1)} and {_size_list(input2)}.")
    if td == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {_size_list(input1)} and {_size_list(input2)}.")
    eps = 1e-12
    prod_sum = (input1 * input2).sum(td)
    mag1 = (input1 * input1).sum(td) + eps
    mag2 = (input2 * input2).sum(td) + eps
    cos = prod_sum / (mag1 * mag2).sqrt()
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0)
    out = where(target == 1, pos, 0.0) + where(target == -1, neg, 0.0)
    return _reduce(out, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``F.margin_ranking_loss``: max(0, -target (input1 - input2) + margin)."""
    if _amp.active:  # autocast: a float32 op
        input1, input2 = _amp.fp32(input1, input2)
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.size()}, input2: {input2.size()}, "
                           f"target: {target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``F.hinge_embedding_loss``: input where target == 1, max(0, margin - input) where -1."""
    if _amp.active:  # autocast: a float32 op
        input, = _amp.fp32(input)
    reduction = _reduction(size_average, reduce, reduction)
    margin_clamp = (margin - input).clamp_min(0)
    out = where(target != 1, margin_clamp, 0.0) + where(target != -1, input, 0.0)
    return _reduce(out, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """``F.multilabel_soft_margin_loss``: per-class logistic loss, averaged over classes."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * _log_sigmoid(input) + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.shape[class_dim]
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _pairwise_distance(x1: Tensor, x2: Tensor, p: float, eps: float) -> Tensor:
    """torch's ``pairwise_distance``: the p-norm of x1 - x2 + eps over the last dim."""
    dim = max(x1.dim(), x2.dim()) - 1
    return norm(x1 - x2 + eps, p, dim)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """``F.triplet_margin_loss``: max(0, margin + d(a, p) - d(a, n)), d the pairwise p-norm."""
    if _amp.active:  # autocast: a float32 op
        anchor, positive, negative = _amp.fp32(anchor, positive, negative)
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    da, dp, dn = anchor.dim(), positive.dim(), negative.dim()
    if not (da == dp == dn):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {da}D, positive "
                           f"{dp}D, and negative {dn}D inputs")
    dist_pos = _pairwise_distance(anchor, positive, p, eps)
    dist_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, _pairwise_distance(positive, negative, p, eps))
    return _reduce(clamp_min(margin + dist_pos - dist_neg, 0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``F.triplet_margin_with_distance_loss``: max(0, margin + d(a, p) - d(a, n)) for any
    distance ``d`` (``pairwise_distance`` by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    da, dp, dn = anchor.dim(), positive.dim(), negative.dim()
    if not (da == dp == dn):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {da}D, positive "
                           f"{dp}D, and negative {dn}D inputs")
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance_function(positive, negative))
    return _reduce(clamp_min(margin + dist_pos - dist_neg, 0), reduction)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """``F.ctc_loss`` is not implemented in ember yet."""
    raise NotImplementedError("ember.nn.functional.ctc_loss is not implemented yet: the CTC "
                              "forward-backward recursion has no ember kernel. Compute it "
                              "with torch, or open an issue if you need it.")
