"""nn.functional dropout: dropout, alpha_dropout, dropout1d/2d/3d, feature_alpha_dropout.

As in torch (on CPU), each is a composite: ``input * mask`` (``MulBackward0``, the mask a
constant), plus an offset for the alpha variants. Masks are drawn from ember's default
generator, so ``ember.manual_seed`` makes them reproducible (though not torch's numbers).
The feature variants draw one value per (sample, channel) and broadcast it.
"""

from __future__ import annotations

import math
import warnings

from ... import random as _random
from ..._backend import FLOAT_KINDS, xp_of
from ..._tensor import Tensor, _make

__all__ = [
    "alpha_dropout",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
]

_SELU_ALPHA_PRIME = 1.7580993408473766  # -scale * alpha of selu


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_impl(input: Tensor, p: float, train: bool, inplace: bool, feature: bool,
                  alpha: bool, channel_dims: int = 2) -> Tensor:
    """torch's ``_dropout_impl``: the same four variants from one body. Feature dropout
    draws one value per index of the first ``channel_dims`` dims."""
    if p == 0 or not train or input._data.size == 0:
        return input
    x = input._data
    xp = xp_of(x)
    if p == 1:
        zero = _make(xp.zeros((), dtype=x.dtype))
        return input.mul_(zero) if inplace else input * zero
    if feature:
        if x.ndim < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = x.shape[:channel_dims] + (1,) * (x.ndim - channel_dims)
    else:
        shape = x.shape
    keep = xp.asarray(_random.default_generator._rng.random(shape) >= p)  # drawn on the host
    # torch: the float mask can't be written into an integer tensor
    if x.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{input.dtype._legacy[:-len('Tensor')]}")
    if alpha:
        a = 1.0 / math.sqrt((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
        b = _make(((keep - 1.0) * (_SELU_ALPHA_PRIME * a) + _SELU_ALPHA_PRIME * a * p)
                  .astype(x.dtype))
        noise = _make((keep * a).astype(x.dtype))
        if inplace:
            return input.mul_(noise).add_(b)
        return input * noise + b
    noise = _make((keep / (1 - p)).astype(x.dtype))
    return input.mul_(noise) if inplace else input * noise


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """``F.dropout``: zero each element with probability p, scale the rest by 1/(1-p)."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """``F.alpha_dropout``: dropout that keeps selu's zero mean and unit variance."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """``F.feature_alpha_dropout``: alpha dropout of whole channels."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)


def _channel_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool) -> Tensor:
    if batched:
        return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)
    if inplace:  # (C, ...): one value per channel, written into input
        return _dropout_impl(input, p, training, True, feature=True, alpha=False,
                             channel_dims=1)
    out = _dropout_impl(input.unsqueeze(0), p, training, False, feature=True, alpha=False)
    return out.squeeze(0)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """``F.dropout1d``: zero whole channels of (N, C, L) or (C, L) inputs."""
    _check_p(p)
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. "
                           "Note that dropout1d exists to provide channel-wise dropout on inputs "
                           "with 1 spatial dimension, a channel dimension, and an optional batch "
                           "dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, batched=nd == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """``F.dropout2d``: zero whole channels of (N, C, H, W) inputs (torch's warnings for
    other ranks; a 3-D input is read as (N, C, L), as torch still does)."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        warnings.warn(f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior "
                      "and silence this warning, please use dropout instead. Note that dropout2d "
                      "exists to provide channel-wise dropout on inputs with 2 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 3D "
                      "or 4D inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape (C, "
                      "H, W). To maintain the 1D channel-wise dropout behavior, please switch to "
                      "using dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """``F.dropout3d``: zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _check_p(p)
    nd = input.dim()
    if nd not in (4, 5):
        warnings.warn(f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior "
                      "and silence this warning, please use dropout instead. Note that dropout3d "
                      "exists to provide channel-wise dropout on inputs with 3 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 4D "
                      "or 5D inputs).", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, batched=nd == 5)
