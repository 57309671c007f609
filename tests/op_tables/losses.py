"""Op-table rows for the loss functions of ``nn.functional`` (ember/ops/losses.py and
ember/nn/functional/loss.py)."""

from __future__ import annotations

import numpy as np
from op_table import FLOAT, OpCase, S, Spec, nc, positive, st


def unit(rng, shape, dtype):
    """Probabilities away from 0 and 1: inputs and targets of binary cross-entropy."""
    return rng.uniform(0.05, 0.95, shape).astype(dtype)


def counts(rng, shape, dtype):
    """Non-negative targets spanning 1 (Poisson's Stirling term applies above it)."""
    return rng.uniform(0.1, 3.0, shape).astype(dtype)


def signs(shape, seed=0):
    """A fixed array of +-1 (float): margin-loss targets."""
    return np.where(np.random.default_rng(seed).random(shape) > 0.5, 1.0, -1.0)


def U(*shape):
    return Spec(tuple(shape), domain=unit)


def P(*shape):
    return Spec(tuple(shape), domain=positive)


def F(name):
    """``lambda m, *xs, **kw: m.nn.functional.<name>(*xs, **kw)``."""
    return lambda m, *xs, **kw: getattr(m.nn.functional, name)(*xs, **kw)


C3 = np.array([0, 4, 2])          # class indices for 3 samples of 5 classes
C23 = np.array([[0, 4, 1], [2, 2, 3]])  # (2, 3) targets of a (2, 5, 3) input
BIG = np.array([[1e4, -1e4, 0.0, 3.0, 1e4], [5e3, 5e3, -1e4, 0.0, 1.0],
                [-1e4, -1e4, -1e4, -1e4, 1e4]])  # logits whose exp overflows

REDUCE = [S((3, 4), (3, 4)), S((3, 4), (3, 4), reduction="none"),
          S((3, 4), (3, 4), reduction="sum"), S(nc(3, 4), st(3, 4)), S((), ()),
          S((0, 3), (0, 3)), S((0, 3), (0, 3), reduction="sum")]
LEGACY = [S((2, 3), (2, 3), size_average=False), S((2, 3), (2, 3), reduce=False),
          S((2, 3), (2, 3), size_average=True, reduce=True)]

OPS = [
    # ---- regression
    OpCase("mse_loss", F("mse_loss"),
           REDUCE + LEGACY + [S((3, 4), (4,)), S((3, 1), (1, 4), reduction="none")], FLOAT),
    OpCase("mse_loss_weight", lambda m, x, y, w=None, **kw: m.nn.functional.mse_loss(
        x, y, weight=w, **kw), [S((3, 4), (3, 4)), S((3, 4), (3, 4), P(3, 4)),
            S((3, 4), (3, 4), P(3, 4), reduction="none")],
           FLOAT, node=False),
    OpCase("l1_loss", F("l1_loss"), REDUCE + LEGACY[:1] + [S((3, 4), (4,))], FLOAT),
    OpCase("smooth_l1_loss", F("smooth_l1_loss"),
           REDUCE + LEGACY[1:2] + [S((3, 4), (3, 4), beta=0.5),
                                   S((3, 4), (3, 4), beta=0.0, reduction="none"),
                                   S((3, 4), (1, 4), beta=2.0, reduction="sum")], FLOAT),
    OpCase("huber_loss", F("huber_loss"),
           REDUCE + [S((3, 4), (3, 4), delta=0.5), S((3, 4), (4,), delta=2.0, reduction="none"),
                     S((3, 4), (3, 4), reduction="none", delta=0.7, weight=None)], FLOAT),
    OpCase("huber_loss_weight", lambda m, x, y, w, **kw: m.nn.functional.huber_loss(
        x, y, weight=w, **kw), [S((3, 4), (3, 4), P(3, 4)), S((3, 4), (3, 4), P(3, 4),
                                                           reduction="sum")], FLOAT, node=False),
    # ---- classification
    OpCase("nll_loss", F("nll_loss"),
           [S((3, 5), C3), S((3, 5), C3, reduction="none"), S((3, 5), C3, reduction="sum"),
            S((3, 5), C3, P(5)), S((3, 5), C3, P(5), reduction="sum"),
            S((3, 5), C3, P(5), ignore_index=2), S((3, 5), C3, ignore_index=4, reduction="none"),
            S((3, 5), np.array([1, 1, 1]), ignore_index=1, gradcheck=False),  # all ignored: nan, as torch
            S((5,), np.array(3)), S((5,), np.array(3), reduction="none"),
            S((2, 5, 3), C23), S((2, 5, 3), C23, P(5), reduction="none"),
            S(nc(3, 5), C3), S((0, 5), np.zeros(0, np.int64)),
            S((2, 5, 3, 2), np.zeros((2, 3, 2), np.int64), reduction="none"),
            S((2, 5, 1, 2, 2), np.ones((2, 1, 2, 2), np.int64), reduction="none"),
            S((0, 5, 3), np.zeros((0, 3), np.int64), reduction="none"),
            S((3, 5), C3, size_average=False), S((3, 5), C3.astype(np.uint8))],
           FLOAT, grad_args=(0,)),
    OpCase("cross_entropy", F("cross_entropy"),
           [S((3, 5), C3), S((3, 5), C3, reduction="none"), S((3, 5), C3, reduction="sum"),
            S((3, 5), C3, P(5)), S((3, 5), C3, P(5), ignore_index=0, reduction="none"),
            S((5,), np.array(2)), S((2, 5, 3), C23), S((2, 5, 3), C23, reduction="none"),
            S(nc(3, 5), C3), S((0, 5), np.zeros(0, np.int64)),
            S((0, 5), np.zeros(0, np.int64), reduction="sum"),
            S(BIG, C3), S(BIG, C3, reduction="none"),
            S((3, 5), C3, reduce=False)],
           FLOAT, grad_args=(0,)),
    OpCase("cross_entropy_label_smoothing", F("cross_entropy"),
           [S((3, 5), C3, label_smoothing=0.1),
            S((3, 5), C3, label_smoothing=0.2, reduction="none"),
            S((3, 5), C3, label_smoothing=0.3, reduction="sum"),
            S((3, 5), C3, P(5), label_smoothing=0.1),
            S((3, 5), C3, P(5), label_smoothing=0.1, ignore_index=4),
            S((3, 5), C3, label_smoothing=0.1, ignore_index=4, reduction="none"),
            S((2, 5, 3), C23, label_smoothing=0.25)],
           FLOAT, grad_args=(0,)),
    OpCase("cross_entropy_probs", F("cross_entropy"),
           [S((3, 5), P(3, 5)), S((3, 5), P(3, 5), reduction="none"),
            S((3, 5), P(3, 5), reduction="sum"), S((5,), P(5)), S((2, 5, 3), P(2, 5, 3)),
            S((3, 5), P(3, 5), label_smoothing=0.2), S(BIG, P(3, 5)),
            S((0, 5), (0, 5)), S((0, 5), (0, 5), reduction="none")],
           FLOAT),
    OpCase("cross_entropy_probs_weight", F("cross_entropy"),
           [S((3, 5), P(3, 5), P(5)), S((3, 5), P(3, 5), P(5), reduction="none")],
           FLOAT, grad_args=(0, 1)),
    OpCase("binary_cross_entropy", F("binary_cross_entropy"),
           [S(U(3, 4), U(3, 4)), S(U(3, 4), U(3, 4), reduction="none"),
            S(U(3, 4), U(3, 4), reduction="sum"), S(U(), U()), S(U(0, 2), U(0, 2)),
            S(U(3, 4), U(3, 4), P(4)), S(U(3, 4), U(3, 4), P(3, 1), reduction="none"),
            S(np.array([0.0, 1.0, 0.5, 1.0]), np.array([1.0, 0.0, 0.5, 1.0]), gradcheck=False),
            S(U(2, 3), U(2, 3), reduce=False)],
           FLOAT, grad_args=(0, 1)),
    OpCase("binary_cross_entropy_with_logits", F("binary_cross_entropy_with_logits"),
           [S((3, 4), U(3, 4)), S((3, 4), U(3, 4), reduction="none"),
            S((3, 4), U(3, 4), reduction="sum"), S((), U()), S((0, 2), U(0, 2)),
            S(nc(3, 4), U(3, 4), P(3, 4)), S((3, 4), U(3, 4), P(4), reduction="none"),
            S(np.array([-200.0, -30.0, 0.0, 30.0, 200.0]), U(5), reduction="none"),
            S((2, 3), U(2, 3), size_average=False)],
           FLOAT, grad_args=(0, 1)),
    OpCase("binary_cross_entropy_with_logits_pos_weight", lambda m, x, t, pw, w=None, **kw:
           m.nn.functional.binary_cross_entropy_with_logits(x, t, w, pos_weight=pw, **kw),
           [S((3, 4), U(3, 4), P(4)), S((3, 4), U(3, 4), P(3, 4), reduction="none"),
            S((3, 4), U(3, 4), P(1, 4), P(3, 1), reduction="sum"),
            S(np.array([-200.0, 0.0, 200.0]), U(3), P(3), reduction="none")],
           FLOAT, grad_args=(0, 1)),
    # ---- divergences and likelihoods
    OpCase("kl_div", F("kl_div"),
           [S((3, 4), P(3, 4), reduction="batchmean"), S((3, 4), P(3, 4), reduction="none"),
            S((3, 4), P(3, 4), reduction="sum"), S((3, 4), P(3, 4)),
            S((3, 4), (3, 4), log_target=True, reduction="batchmean"),
            S((3, 4), (3, 4), log_target=True, reduction="none"),
            S((), P(), reduction="batchmean"), S((0, 4), P(0, 4), reduction="batchmean"),
            S((3, 4), np.array([0.0, 0.5, 1.0, 2.0]), reduction="sum", gradcheck=False),
            S((2, 3), P(2, 3), size_average=False)], FLOAT),
    OpCase("poisson_nll_loss", F("poisson_nll_loss"),
           [S((3, 4), P(3, 4)), S((3, 4), P(3, 4), reduction="none"),
            S(P(3, 4), P(3, 4), log_input=False, reduction="sum"),
            S((3, 4), Spec((3, 4), domain=counts), full=True),
            S((3, 4), Spec((3, 4), domain=counts), full=True, reduction="none"),
            S((), P()), S((0, 3), (0, 3)), S((2, 3), P(2, 3), reduce=False)], FLOAT),
    OpCase("gaussian_nll_loss", F("gaussian_nll_loss"),
           [S((3, 4), (3, 4), P(3, 4)), S((3, 4), (3, 4), P(3, 4), reduction="none"),
            S((3, 4), (3, 4), P(3), reduction="sum"), S((3, 4), (3, 4), P(3, 1), full=True),
            S((3, 4), (3, 4), 0.5), S((3, 4), (3, 4), np.array([1e-9, 0.5, 1.0, 2.0]),
                                      reduction="none", gradcheck=False),
            S((2, 3, 4), (2, 3, 4), P(2, 1, 4))], FLOAT),
    # ---- margin and embedding losses
    OpCase("cosine_embedding_loss", F("cosine_embedding_loss"),
           [S((3, 4), (3, 4), np.array([1, -1, 1])),
            S((3, 4), (3, 4), np.array([-1, -1, 1]), margin=0.2, reduction="none"),
            S(nc(3, 4), (3, 4), np.array([1, -1, -1]), margin=-0.5, reduction="sum"),
            S((4,), (4,), np.array(-1)), S((4,), (4,), np.array(1), reduction="none")],
           FLOAT),
    OpCase("margin_ranking_loss", F("margin_ranking_loss"),
           [S((5,), (5,), signs(5)), S((5,), (5,), signs(5, 1), margin=0.5, reduction="none"),
            S((3, 4), (3, 4), signs((3, 4)), reduction="sum"), S((), (), np.array(1.0)),
            S((3, 4), (3, 4), signs((3, 4)), reduce=False)], FLOAT),
    OpCase("hinge_embedding_loss", F("hinge_embedding_loss"),
           [S((3, 4), signs((3, 4))), S((3, 4), signs((3, 4), 2), margin=0.5, reduction="none"),
            S((5,), signs(5), reduction="sum"), S((), np.array(-1.0))],
           FLOAT, grad_args=(0,)),
    OpCase("soft_margin_loss", F("soft_margin_loss"),
           [S((3, 4), signs((3, 4))), S((3, 4), signs((3, 4), 2), reduction="none"),
            S((5,), signs(5), reduction="sum"), S((), np.array(-1.0)),
            S(np.array([-10.0, 0.0, 10.0]), np.array([1.0, -1.0, -1.0]))],
           FLOAT, grad_args=(0,)),
    OpCase("multilabel_soft_margin_loss", F("multilabel_soft_margin_loss"),
           [S((3, 4), np.array([[1.0, 0, 1, 0], [0, 0, 1, 1], [1, 1, 1, 0]])),
            S((3, 4), U(3, 4), reduction="none"),
            S((3, 4), U(3, 4), P(4), reduction="sum")], FLOAT, grad_args=(0, 1)),
    OpCase("multi_margin_loss", F("multi_margin_loss"),
           [S((3, 5), C3), S((3, 5), C3, reduction="none"), S((3, 5), C3, reduction="sum"),
            S((3, 5), C3, p=2, margin=0.5), S((3, 5), C3, weight=None, p=2, reduction="none"),
            S((5,), np.array([2])), S((5,), np.array(2), reduction="none")],
           FLOAT),
    OpCase("multi_margin_loss_weight", lambda m, x, t, w, **kw: m.nn.functional.
           multi_margin_loss(x, t, weight=w, **kw),
           [S((3, 5), C3, P(5)), S((3, 5), C3, P(5), p=2, reduction="none")],
           FLOAT, grad_args=(0,)),
    OpCase("multilabel_margin_loss", F("multilabel_margin_loss"),
           [S((3, 4), np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 0, 0, 0]])),
            S((3, 4), np.array([[3, 3, -1, 1], [1, 2, 0, -1], [2, -1, 0, 0]]),
              reduction="none"),
            S((4,), np.array([1, 2, -1, 0]), reduction="sum")], FLOAT),
    OpCase("triplet_margin_loss", F("triplet_margin_loss"),
           [S((3, 4), (3, 4), (3, 4)), S((3, 4), (3, 4), (3, 4), reduction="none", margin=2.0),
            S((3, 4), (3, 4), (3, 4), swap=True, reduction="sum"),
            S((3, 4), (3, 4), (3, 4), p=1, margin=3.0), S((4,), (4,), (4,), margin=3.0)],
           FLOAT),
    # ---- refusals: torch's exception type and message
    OpCase("refuse_loss_reduction", lambda m, x, y, **kw: getattr(
        m.nn.functional, kw.pop("fn"))(x, y, **kw),
           [S((3,), (3,), fn=f, reduction="avg") for f in (
               "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
               "poisson_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss")],
           grad=False),
    OpCase("refuse_nll", F("nll_loss"),
           [S((3, 5), np.array([0, 1, 2, 3])), S((3, 5), np.array([0, 1, 5])),
            S((3, 5), np.array([0, -1, 2])), S((3, 5), np.array([0, 1, 2], np.int32)),
            S((3, 5), np.array([0.0, 1.0, 2.0])), S((2, 5, 4), np.zeros((2, 3), np.int64)),
            S((2, 5, 4), np.zeros(2, np.int64)), S((5,), np.zeros(2, np.int64)),
            S((3, 5), np.zeros((3, 1), np.int64)), S((), np.array(0)),
            S((3, 5), C3, np.ones(4)), S((3, 5), C3, reduction="avg")], grad=False),
    OpCase("refuse_cross_entropy", F("cross_entropy"),
           [S((3, 5), np.array([0, 1, 2, 3])), S((3, 5), np.array([0, 1, 7])),
            S((3, 5), np.array([0.0, 1.0, 2.0])), S((3, 5), (3, 4)),
            S((3, 5), (3, 5), ignore_index=1), S((3, 5), np.ones((3, 5), np.int64)),
            S((3, 5), C3, label_smoothing=1.5),
            S((3, 5), (3, 5), np.ones(4))], grad=False),
    OpCase("refuse_weight_requires_grad", lambda m, x, t, w, **kw: getattr(
        m.nn.functional, kw.pop("fn"))(x, t, weight=w),
           [S((3, 5), C3, (5,), fn="nll_loss"), S((3, 5), C3, (5,), fn="cross_entropy"),
            S((3, 5), C3, (5,), fn="multi_margin_loss"),
            S(U(3, 5), U(3, 5), (5,), fn="binary_cross_entropy"),
            S((3, 5), U(3, 5), (5,), fn="binary_cross_entropy_with_logits")], gradcheck=False),
    OpCase("refuse_soft_margin_target_grad", F("soft_margin_loss"), [S((3,), signs(3))],
           gradcheck=False),
    OpCase("refuse_binary_cross_entropy", F("binary_cross_entropy"),
           [S(U(3), U(2)), S(np.array([0.5, 1.5]), np.array([0.5, 0.5])),
            S(np.array([0.5, 0.5]), np.array([0.5, -0.5]))], grad=False),
    OpCase("refuse_bce_with_logits_shape", F("binary_cross_entropy_with_logits"),
           [S((3,), (2,)), S((3, 4), (3, 4), (5,))], grad=False),
    OpCase("refuse_regression_shape", lambda m, x, y, **kw: getattr(
        m.nn.functional, kw.pop("fn"))(x, y, **kw),
           [S((3, 5), (3, 4), fn=f) for f in ("mse_loss", "l1_loss", "smooth_l1_loss",
                                              "huber_loss")]
           + [S((3,), (3,), fn="smooth_l1_loss", beta=-1.0),
              S((3,), (3,), fn="huber_loss", delta=0.0)], grad=False),
    OpCase("refuse_loss_weight_shape", lambda m, x, y, w, **kw: getattr(
        m.nn.functional, kw.pop("fn"))(x, y, weight=w),
           [S((3,), (3,), (2,), fn=f) for f in ("mse_loss", "l1_loss", "huber_loss")],
           grad=False),
    OpCase("refuse_margin_losses", lambda m, *xs, **kw: getattr(
        m.nn.functional, kw.pop("fn"))(*xs, **kw),
           [S((3, 4), (3, 4), np.ones((3, 4)), fn="cosine_embedding_loss"),
            S((3, 4), (3, 4), np.array(1), fn="cosine_embedding_loss"),
            S((4,), (4,), np.array([1, 1]), fn="cosine_embedding_loss"),
            S((3,), (3,), np.ones((3, 1)), fn="margin_ranking_loss"),
            S((3, 4), (3, 4), (4,), fn="triplet_margin_loss"),
            S((3, 4), (3, 4), (3, 4), fn="triplet_margin_loss", margin=0.0),
            S((3, 5), C3, fn="multi_margin_loss", p=3),
            S((3, 5), np.array([[0, 1, 2]]), fn="multi_margin_loss"),
            S((3, 5), np.array([0, 1]), fn="multi_margin_loss"),
            S((3, 5), np.array([0, 1, 5]), fn="multi_margin_loss"),
            S((3, 5), C3, np.ones(4), fn="multi_margin_loss"),
            S((3, 4), np.array([[0, 4, -1, 0]] * 3), fn="multilabel_margin_loss"),
            S((3, 4), np.array([[0, 1, -1, 7]] * 3), fn="multilabel_margin_loss"),
            S((3, 4), np.zeros((3, 3), np.int64), fn="multilabel_margin_loss")], grad=False),
    OpCase("refuse_loss_int", lambda m, x, y, **kw: getattr(m.nn.functional, kw.pop("fn"))(
        x, y, **kw), [S((3, 5), (3, 5), fn=f) for f in (
            "mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss",
            "binary_cross_entropy_with_logits")]
        + [S((3, 5), C3, fn="cross_entropy"), S((3, 5), C3, fn="nll_loss")],
           ("int64",), grad=False),
    OpCase("refuse_nll_0d_target", F("nll_loss"), [S((3, 5), np.array(1))], grad=False),
    OpCase("refuse_gaussian_nll_loss", F("gaussian_nll_loss"),
           [S((3, 4), (3, 4), np.array([-1.0, 1.0, 1.0, 1.0])), S((3, 4), (3, 4), (2, 4)),
            S((3, 4), (3, 4), (3, 4), reduction="avg"), S((3, 4), (3, 4), -1.0)],
           grad=False),
]
