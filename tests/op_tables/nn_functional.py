"""Op-table rows for ``ember.nn.functional`` activations, linear layers, embedding/one_hot,
distances, normalisation and (deterministic) dropout; names start with ``nnf_``.

The random parts of dropout and rrelu can't be compared with torch's numbers: they are tested
in tests/test_nn_functional.py.
"""

from __future__ import annotations

import numpy as np
from op_table import FLOAT, KINKS, NUMERIC, UNARY, OpCase, S, Spec, nc, positive, st


def F(name):
    """``lambda m, *xs, **kw: m.nn.functional.<name>(*xs, **kw)``: the same call on both."""
    return lambda m, *xs, **kw: getattr(m.nn.functional, name)(*xs, **kw)


def F_inplace(name, *args):
    """``F.<name>(x * 1, *args, inplace=True)``: in place on a non-leaf."""
    return lambda m, x: getattr(m.nn.functional, name)(x * 1, *args, inplace=True)


def wide(rng, shape, dtype):
    """Floats in [-5, 5): past hardsigmoid's and hardswish's kinks at +-3."""
    return rng.uniform(-5, 5, shape).astype(dtype)


def W(*shape):
    return Spec(tuple(shape), domain=wide)


def P(*shape):
    return Spec(tuple(shape), domain=positive)


BIG = np.array([-1e4, -60.0, -25.5, 0.3, 25.5, 60.0, 1e4])  # overflow exp if done naively
BIG2 = np.array([[1e4, -1e4, 0.0], [1e4, 1e4, 1e4], [-1e4, -1e4, 5.0]])
SHRINK = np.array([[-1.0, -0.5, 0.0, 0.5], [1.0, 0.25, -0.75, 2.0]])  # at the +-0.5 kinks
HARD = np.array([-3.0, 3.0, -1.0, 0.0, 1.0, 6.0])  # hard* kinks
IDX = np.array([0, 3, 1, 3])
IDX2 = np.array([[4, 0, 1], [1, 1, 2]])
INF = float("inf")
ACT = UNARY  # (3, 4), 0-d, empty, non-contiguous, strided, (2, 1, 3)


def _with_stats(m, x, name: str):
    """(output, running_mean, running_var) after one training step with running statistics
    (momentum 0.3): the in-place update of the statistics is compared too."""
    rm = m.full((x.shape[1],), 0.5, dtype=x.dtype)
    rv = m.ones(x.shape[1], dtype=x.dtype)
    fn = getattr(m.nn.functional, name)
    if name == "batch_norm":
        return fn(x, rm, rv, training=True, momentum=0.3), rm, rv
    return fn(x, rm, rv, use_input_stats=True, momentum=0.3), rm, rv

OPS = [
    # ---- F's names for torch.tanh / torch.sigmoid, and the deprecated upsample spellings
    OpCase("nnf_tanh", F("tanh"), ACT, FLOAT),
    OpCase("nnf_sigmoid", F("sigmoid"), ACT + [S(BIG)], FLOAT),
    OpCase("nnf_upsample", F("upsample"),
           [S((2, 2, 3, 4), scale_factor=2), S((2, 2, 3, 4), size=(5, 7), mode="bilinear"),
            S((1, 2, 3, 4), size=(5, 6), mode="bicubic", align_corners=True)], FLOAT),
    OpCase("nnf_upsample_nearest", F("upsample_nearest"), [S((2, 2, 3, 4), size=(5, 7))],
           FLOAT),
    OpCase("nnf_upsample_bilinear", F("upsample_bilinear"), [S((2, 2, 3, 4), scale_factor=2)],
           FLOAT),
    # torch records one ChannelShuffleBackward0 node; ember a reshape and a transpose
    OpCase("nnf_channel_shuffle", F("channel_shuffle"),
           [S((2, 6, 3), 3), S(nc(1, 4, 3, 2), 2), S((0, 4, 2), 4)], FLOAT, node=False),
    # torch has no derivative for native_channel_shuffle: values only
    OpCase("nnf_native_channel_shuffle", F("native_channel_shuffle"), [S((2, 6, 3), 2)],
           FLOAT, grad=False, node=False),
    # ---- relu family
    OpCase("nnf_relu", F("relu"), ACT + [S(KINKS, gradcheck=False)], NUMERIC),
    OpCase("nnf_relu_inplace", F_inplace("relu"), ACT[:2]),
    OpCase("nnf_relu6", F("relu6"), ACT[:4] + [S(np.array([-1.0, 0.5, 5.0, 7.0, 6.5]))],
           NUMERIC),
    OpCase("nnf_relu6_inplace", F_inplace("relu6"), ACT[:1]),
    OpCase("nnf_leaky_relu", F("leaky_relu"),
           ACT + [S((3, 4), negative_slope=0.2), S(KINKS, gradcheck=False)], FLOAT),
    OpCase("nnf_leaky_relu_inplace", F_inplace("leaky_relu", 0.1), ACT[:2]),
    OpCase("nnf_hardtanh", F("hardtanh"),
           ACT[:4] + [S((3, 4), min_val=-0.5, max_val=0.5), S(KINKS, gradcheck=False),
                      S((3, 4), min_val=-1, max_val=1)], NUMERIC),
    OpCase("nnf_hardtanh_inplace", F_inplace("hardtanh", -0.5, 0.5), ACT[:1]),
    OpCase("nnf_threshold", lambda m, x: m.nn.functional.threshold(x, 1, -3), ACT, NUMERIC),
    OpCase("nnf_threshold_inplace", F_inplace("threshold", 0.5, 2.0), ACT[:1]),
    OpCase("nnf_rrelu_eval", F("rrelu"), ACT + [S((3, 4), lower=0.1, upper=0.5)], FLOAT),
    OpCase("nnf_rrelu_eval_inplace", F_inplace("rrelu"), ACT[:1]),
    OpCase("nnf_prelu", F("prelu"),
           [S((2, 3, 4), (3,)), S((2, 3), (1,)), S((4,), (1,)), S(nc(3, 4), (4,)),
            S((2, 3, 2, 2), (3,)), S((), (1,)), S((0, 3), (3,))], FLOAT),
    # ---- elu family
    OpCase("nnf_elu", F("elu"), ACT + [S((3, 4), alpha=0.5), S(BIG)], FLOAT),
    OpCase("nnf_elu_inplace", F_inplace("elu"), ACT[:2]),
    OpCase("nnf_selu", F("selu"), ACT + [S(BIG)], FLOAT),
    OpCase("nnf_selu_inplace", F_inplace("selu"), ACT[:1]),
    OpCase("nnf_celu", F("celu"), ACT[:4] + [S((3, 4), alpha=2.0), S(BIG)], FLOAT),
    OpCase("nnf_celu_inplace", F_inplace("celu", 0.5), ACT[:1]),
    # ---- smooth activations
    OpCase("nnf_gelu", F("gelu"),
           ACT + [S(np.array([-10.0, -5.0, -1e-3, 0.0, 3.0, 10.0])), S(W(3, 4))], FLOAT),
    OpCase("nnf_gelu_tanh", F("gelu"),
           [S((3, 4), approximate="tanh"), S((), approximate="tanh"),
            S(nc(3, 4), approximate="tanh"), S(W(3, 4), approximate="tanh"),
            S((0, 2), approximate="tanh")], FLOAT),
    OpCase("nnf_silu", F("silu"), ACT + [S(BIG)], FLOAT),
    OpCase("nnf_silu_inplace", F_inplace("silu"), ACT[:1]),
    OpCase("nnf_mish", F("mish"), ACT + [S(BIG)], FLOAT),
    OpCase("nnf_mish_inplace", F_inplace("mish"), ACT[:1]),
    OpCase("nnf_softplus", F("softplus"),
           ACT + [S((3, 4), beta=2.0, threshold=1.0), S(BIG), S(W(3, 4), beta=0.5)], FLOAT),
    OpCase("nnf_logsigmoid", F("logsigmoid"), ACT + [S(BIG)], FLOAT),
    OpCase("nnf_softsign", F("softsign"), ACT, FLOAT),
    OpCase("nnf_tanhshrink", F("tanhshrink"), ACT, FLOAT),
    # ---- hard* and *shrink
    OpCase("nnf_hardsigmoid", F("hardsigmoid"),
           ACT[:4] + [S(W(3, 4)), S(HARD, gradcheck=False)], FLOAT),
    OpCase("nnf_hardsigmoid_inplace", F_inplace("hardsigmoid"), [S(W(3, 4))]),
    OpCase("nnf_hardswish", F("hardswish"),
           ACT[:4] + [S(W(3, 4)), S(HARD, gradcheck=False)], FLOAT),
    OpCase("nnf_hardswish_inplace", F_inplace("hardswish"), [S(W(3, 4))]),
    OpCase("nnf_softshrink", F("softshrink"),
           ACT + [S((3, 4), lambd=1.0), S(SHRINK, gradcheck=False)], FLOAT),
    OpCase("nnf_hardshrink", F("hardshrink"),
           ACT + [S((3, 4), lambd=1.0), S(SHRINK, gradcheck=False)], FLOAT),
    OpCase("nnf_glu", F("glu"),
           [S((3, 4)), S((4, 3), dim=0), S((2, 6, 2), dim=1), S(nc(4, 4)), S((0, 4)),
            S(st(3, 4), dim=-1)], FLOAT),
    # ---- softmax family
    OpCase("nnf_softmax", F("softmax"),
           [S((3, 4), dim=1), S((3, 4), dim=0), S((2, 3, 4), dim=-1), S((), dim=0),
            S((0, 3), dim=1), S((0, 3), dim=0), S(nc(3, 4), dim=1), S(st(3, 4), dim=0),
            S(BIG2, dim=-1), S((3, 4)), S((2, 3, 4))], FLOAT),
    OpCase("nnf_log_softmax", F("log_softmax"),
           [S((3, 4), dim=1), S((3, 4), dim=0), S((2, 3, 4), dim=-1), S((), dim=0),
            S((0, 3), dim=1), S(nc(3, 4), dim=1), S(BIG2, dim=-1), S(BIG2, dim=0),
            S((3, 4)), S((4,))], FLOAT),
    OpCase("nnf_softmin", F("softmin"),
           [S((3, 4), dim=1), S((2, 3, 4), dim=0), S((), dim=0), S(BIG2, dim=1), S((3, 4))],
           FLOAT),
    OpCase("nnf_softmax_dtype", lambda m, x: m.nn.functional.softmax(x, 1, dtype=m.float64),
           [S((3, 4))]),
    OpCase("nnf_log_softmax_dtype",
           lambda m, x: m.nn.functional.log_softmax(x, 0, dtype=m.float64), [S((3, 4))]),
    OpCase("nnf_softmax_int_dtype", lambda m, x: m.nn.functional.softmax(x, 0, dtype=m.float32),
           [S((3, 4))], ("int64",), grad=False),
    OpCase("torch_softmax", lambda m, x, **kw: m.softmax(x, **kw),
           [S((3, 4), dim=1), S((2, 3, 4), dim=0), S(BIG2, dim=-1)], FLOAT),
    OpCase("torch_log_softmax", lambda m, x, **kw: m.log_softmax(x, **kw),
           [S((3, 4), dim=1), S((2, 3, 4), dim=0), S(BIG2, dim=-1)], FLOAT),
    OpCase("tensor_softmax", lambda m, x: x.softmax(-1), [S((3, 4)), S(())]),
    OpCase("tensor_log_softmax", lambda m, x: x.log_softmax(0), [S((3, 4)), S(())]),
    OpCase("tensor_softmax_dtype", lambda m, x: x.softmax(0, dtype=m.float64), [S((3, 4))]),
    # ---- linear layers
    OpCase("nnf_linear", F("linear"),
           [S((3, 4), (5, 4), (5,)), S((4,), (5, 4), (5,)), S((2, 3, 4), (5, 4), (5,)),
            S((2, 2, 3, 4), (5, 4), (5,)), S(nc(2, 4, 3), (5, 3), (5,)),
            S((0, 4), (5, 4), (5,)), S((3, 4), (5, 4), ()), S((3, 4), nc(5, 4), (1,))],
           FLOAT),
    OpCase("nnf_linear_nobias", F("linear"),
           [S((3, 4), (5, 4)), S((4,), (5, 4)), S((2, 3, 4), (5, 4)), S(nc(2, 4, 3), (5, 3)),
            S((2, 0, 4), (5, 4)), S(st(3, 4), (2, 4))], FLOAT),
    # a 1-d weight: torch's matmul path (mv, dot; batched matmul records its fold)
    OpCase("nnf_linear_vector_weight", F("linear"),
           [S((3, 4), (4,)), S((4,), (4,)), S((4,), (4,), ())], FLOAT),
    OpCase("nnf_linear_vector_weight_batched", F("linear"), [S((2, 3, 4), (4,))], FLOAT,
           node=False),
    OpCase("nnf_linear_int", F("linear"), [S((3, 4), (5, 4), (5,)), S((2, 3, 4), (5, 4))],
           ("int64",)),
    OpCase("nnf_bilinear", F("bilinear"),
           [S((3, 4), (3, 5), (2, 4, 5), (2,)), S((2, 3, 4), (2, 3, 5), (2, 4, 5), (2,)),
            S((4,), (5,), (2, 4, 5), (2,)), S(nc(4, 3), (4, 5), (2, 3, 5), (2,))], FLOAT),
    OpCase("nnf_bilinear_nobias", F("bilinear"),
           [S((3, 4), (3, 5), (2, 4, 5)), S((0, 4), (0, 5), (2, 4, 5))], FLOAT),
    # ---- embedding, one_hot
    OpCase("nnf_embedding", F("embedding"),
           # padding_idx and scale_grad_by_freq change the gradient on purpose: no gradcheck
           [S(IDX, (5, 3)), S(IDX2, (5, 3)), S(IDX, (5, 3), padding_idx=3, gradcheck=False),
            S(IDX2, (5, 3), padding_idx=-4, gradcheck=False),
            S(IDX2, (5, 3), scale_grad_by_freq=True, gradcheck=False),
            S(np.zeros((0,), np.int64), (5, 3)), S(IDX, nc(5, 3)),
            S(IDX.astype(np.int32), (5, 3)), S(np.array(2), (5, 3)),
            S(IDX, (5, 3), max_norm=1.0, gradcheck=False),
            S(IDX2, (5, 3), max_norm=0.5, norm_type=1.0, gradcheck=False)], FLOAT),
    OpCase("nnf_one_hot", F("one_hot"),
           [S(np.array([0, 2, 1])), S(IDX2, num_classes=6), S(np.zeros(0, np.int64),
                                                                num_classes=3),
            S(np.array(2))], ("int64",), grad=False),
    # ---- distances
    OpCase("nnf_normalize", F("normalize"),
           [S((3, 4)), S((3, 4), p=1.0), S((3, 4), dim=0), S((2, 3, 4), dim=-1, p=3.0),
            S((4,), dim=0), S(nc(3, 4)), S(np.zeros((2, 3)), gradcheck=False), S((0, 3))],
           FLOAT),
    OpCase("nnf_cosine_similarity", F("cosine_similarity"),
           [S((3, 4), (3, 4)), S((3, 4), (4,)), S((4,), (4,), dim=0),
            S((2, 3, 4), (2, 3, 4), dim=-1), S(nc(3, 4), (3, 4), dim=0),
            S((3, 4), (1, 4), eps=0.5)], FLOAT),
    OpCase("nnf_pairwise_distance", F("pairwise_distance"),
           [S((3, 4), (3, 4)), S((3, 4), (4,)), S((4,), (4,)), S((3, 4), (3, 4), p=1.0),
            S((3, 4), (3, 4), p=3.0, keepdim=True), S((), ()), S(nc(3, 4), (3, 4)),
            S((2, 3, 4), (3, 4), eps=0.0)], FLOAT),
    OpCase("nnf_pdist", F("pdist"),
           [S((4, 3)), S((4, 3), p=1.0), S((4, 3), p=3.0), S((4, 3), p=INF),
            S((4, 3), p=0.5), S((1, 3)), S(nc(4, 3)), S((4, 3), p=0)], FLOAT),
    # ---- normalisation
    OpCase("nnf_batch_norm_train",
           lambda m, x, w, b: m.nn.functional.batch_norm(
               x, m.zeros(x.shape[1], dtype=x.dtype), m.ones(x.shape[1], dtype=x.dtype), w, b,
               training=True),
           [S((4, 3), (3,), (3,)), S((2, 3, 4), (3,), (3,)), S((2, 3, 2, 2), (3,), (3,)),
            S(nc(2, 4, 3), (4,), (4,))], FLOAT),
    OpCase("nnf_batch_norm_train_no_affine",
           lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True, eps=1e-3),
           [S((4, 3)), S((2, 3, 4))], FLOAT),
    OpCase("nnf_batch_norm_eval", F("batch_norm"),
           [S((2, 3, 4), np.array([0.1, -0.2, 0.3]), np.array([0.5, 1.0, 2.0]), (3,), (3,)),
            S((4, 3), np.array([0.1, -0.2, 0.3]), np.array([0.5, 1.0, 2.0]), None, (3,)),
            S((4, 3), np.array([0.1, -0.2, 0.3]), np.array([0.5, 1.0, 2.0]))],
           FLOAT, grad_args=(0, 3, 4)),
    # the running statistics after one training step (momentum 0.3, unbiased variance)
    OpCase("nnf_batch_norm_running_stats", lambda m, x: _with_stats(m, x, "batch_norm"),
           [S((4, 3)), S((2, 3, 5))], FLOAT, grad=False),
    OpCase("nnf_layer_norm", F("layer_norm"),
           [S((3, 4), normalized_shape=(4,)), S((3, 4), normalized_shape=[4]),
            S((2, 3, 4), normalized_shape=(3, 4)), S(nc(3, 4), normalized_shape=(4,)),
            S((0, 4), normalized_shape=(4,)), S((4,), normalized_shape=(4,), eps=0.1)],
           FLOAT),
    OpCase("nnf_layer_norm_affine",
           lambda m, x, w, b, **kw: m.nn.functional.layer_norm(x, w.shape, w, b, **kw),
           [S((3, 4), (4,), (4,)), S((2, 3, 4), (3, 4), (3, 4)), S(nc(3, 4), (4,), (4,))],
           FLOAT),
    OpCase("nnf_group_norm", F("group_norm"),
           [S((2, 4, 3), 2, (4,), (4,)), S((2, 6), 3, (6,), (6,)),
            S((2, 4, 2, 2), 1, (4,), (4,)), S((2, 4, 3), 4, (4,), (4,)), S((2, 4, 3), 2),
            S(nc(2, 4, 3), 2, (4,), None)], FLOAT),
    OpCase("nnf_instance_norm", F("instance_norm"),
           [S((2, 3, 4)), S((2, 3, 2, 3)), S((2, 3, 4), None, None, (3,), (3,))], FLOAT),
    OpCase("nnf_instance_norm_running_stats",
           lambda m, x: _with_stats(m, x, "instance_norm"), [S((2, 3, 4))], FLOAT, grad=False),
    OpCase("nnf_instance_norm_eval", F("instance_norm"),
           [S((2, 3, 4), np.array([0.1, -0.2, 0.3]), np.array([0.5, 1.0, 2.0]),
              use_input_stats=False)], FLOAT, grad_args=(0,)),
    OpCase("nnf_local_response_norm", F("local_response_norm"),
           [S((2, 5, 3), 3), S((2, 4, 3, 3), 2), S((1, 3, 4), 5, alpha=0.1, beta=0.5, k=2.0),
            S((2, 3, 2, 2, 2), 3, alpha=0.5)], FLOAT),
    # ---- dropout (the deterministic cases; the random ones are in test_nn_functional.py)
    OpCase("nnf_dropout_eval", lambda m, x: m.nn.functional.dropout(x, 0.5, training=False),
           ACT[:3]),
    OpCase("nnf_dropout_p0", lambda m, x: m.nn.functional.dropout(x, 0.0), ACT[:2]),
    OpCase("nnf_dropout_p1", lambda m, x: m.nn.functional.dropout(x, 1.0), ACT[:3] + ACT[3:4]),
    OpCase("nnf_dropout_p1_inplace", lambda m, x: m.nn.functional.dropout(x * 1, 1.0, True,
                                                                          True), ACT[:1]),
    OpCase("nnf_alpha_dropout_p1",
           lambda m, x: m.nn.functional.alpha_dropout(x, 1.0, training=True), ACT[:2]),
    OpCase("nnf_alpha_dropout_eval", lambda m, x: m.nn.functional.alpha_dropout(x, 0.5),
           ACT[:1]),
    OpCase("nnf_feature_alpha_dropout_eval",
           lambda m, x: m.nn.functional.feature_alpha_dropout(x, 0.2), [S((2, 3, 4))]),
    OpCase("nnf_dropout1d_p1", lambda m, x: m.nn.functional.dropout1d(x, 1.0),
           [S((2, 3, 4)), S((3, 4))]),
    OpCase("nnf_dropout2d_eval", lambda m, x: m.nn.functional.dropout2d(x, training=False),
           [S((2, 3, 4, 5)), S((2, 3, 4)), S((2, 3))]),
    OpCase("nnf_dropout3d_p1", lambda m, x: m.nn.functional.dropout3d(x, 1.0),
           [S((2, 3, 2, 2, 2)), S((3, 2, 2, 2)), S((2, 3, 4))]),
]

# ---- refusals: torch raises on these samples, so ember must raise the same type and message
OPS += [
    OpCase("nnf_refuse_channel_shuffle", F("channel_shuffle"),
           [S((2, 6, 3), 4), S((2, 6, 3), 0), S((6,), 2)], grad=False),
]
_R = {"grad": False}
OPS += [
    OpCase("nnf_refuse_float_only", lambda m, x, **kw: getattr(m.nn.functional, kw["f"])(x),
           [S((2, 3), f=f) for f in ("leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish",
                                     "softplus", "hardsigmoid", "hardswish", "logsigmoid",
                                     "softshrink", "hardshrink", "rrelu")], ("int64",), **_R),
    OpCase("nnf_refuse_softmax_int", F("softmax"), [S((2, 3), dim=0), S((2, 3), dim=1)],
           ("int64",), **_R),
    OpCase("nnf_refuse_log_softmax_int", F("log_softmax"), [S((2, 3), dim=0), S((2, 3), dim=-1)],
           ("int64",), **_R),
    OpCase("nnf_refuse_softmax_dim", F("softmax"), [S((3, 4), dim=2), S((), dim=1)], **_R),
    OpCase("nnf_refuse_torch_softmax_no_dim", lambda m, x: m.softmax(x), [S((3, 4))], **_R),
    OpCase("nnf_refuse_tensor_log_softmax_no_dim", lambda m, x: x.log_softmax(), [S((3, 4))],
           **_R),
    OpCase("nnf_refuse_glu", F("glu"), [S((3, 3)), S((4, 3), dim=1), S(())], **_R),
    OpCase("nnf_refuse_prelu", F("prelu"), [S((3, 4), (3,)), S((4,), (4,))], **_R),
    OpCase("nnf_refuse_gelu_approximate", F("gelu"), [S((3,), approximate="foo")], **_R),
    OpCase("nnf_refuse_hardtanh_bounds", F("hardtanh"), [S((3,), min_val=1.0, max_val=-1.0)],
           **_R),
    OpCase("nnf_refuse_softshrink_lambda", F("softshrink"), [S((3,), lambd=-0.5)], FLOAT, **_R),
    OpCase("nnf_refuse_rrelu_bounds", F("rrelu"), [S((3,), lower=0.5, upper=0.1)], **_R),
    OpCase("nnf_refuse_linear", F("linear"),
           [S((3, 4), (5, 3)), S((2, 3, 4), (5, 3), (5,)), S((4,), (5, 3)), S((), (5, 3)),
            S((3, 4), (5, 4), (3,)), S((3, 4), (4,), ())], **_R),
    OpCase("nnf_refuse_linear_dtype", lambda m, x, w, b: m.nn.functional.linear(
        x, w.double(), b), [S((3, 4), (5, 4), (5,))], **_R),
    OpCase("nnf_refuse_bilinear", F("bilinear"),
           [S((3, 4), (3, 5), (2, 3, 5)), S((3, 4), (3, 5), (2, 4, 4)),
            S((3, 4), (2, 5), (2, 4, 5)), S((3, 4), (1, 3, 5), (2, 4, 5))], **_R),
    OpCase("nnf_refuse_embedding", F("embedding"),
           [S(np.array([0.0, 1.0]), (5, 3)), S(np.array([5]), (5, 3)),
            S(np.array([-1]), (5, 3)), S(np.array([1]), (5,))], **_R),
    OpCase("nnf_refuse_one_hot", F("one_hot"),
           [S(np.array([-1, 2])), S(np.array([0, 2]), num_classes=2), S(np.array([0.0, 2.0])),
            S(np.zeros(0, np.int64)), S(np.array([0, 1], np.int32))], **_R),
    OpCase("nnf_refuse_batch_norm", F("batch_norm"),
           [S((1, 3), np.zeros(3), np.ones(3), training=True),
            S((2, 3), None, None), S((3,), np.zeros(3), np.ones(3)),
            S((2, 4), np.zeros(3), np.ones(3)), S((2, 3, 4), np.zeros(3), np.ones(3), (4,)),
            S((2, 3), np.zeros(3), np.ones(4))], **_R),
    OpCase("nnf_refuse_batch_norm_int", F("batch_norm"), [S((2, 3), None, None, training=True)],
           ("int64",), **_R),
    OpCase("nnf_refuse_layer_norm", F("layer_norm"),
           [S((3, 4), normalized_shape=(5,)), S((3, 4), normalized_shape=4),
            S((3, 4), normalized_shape=()), S((3, 4), (3,), normalized_shape=(4,)),
            S((4,), normalized_shape=(3, 4))], **_R),
    OpCase("nnf_refuse_group_norm", F("group_norm"),
           [S((2, 3, 4), 2), S((3,), 1), S((1, 2), 2), S((2, 4, 3), 2, (3,))], **_R),
    OpCase("nnf_refuse_instance_norm", F("instance_norm"), [S((2, 3)), S((2, 3, 1))], **_R),
    OpCase("nnf_refuse_local_response_norm", F("local_response_norm"), [S((2, 3), 2)], **_R),
    OpCase("nnf_refuse_cosine_similarity", F("cosine_similarity"),
           [S((3, 4), (2, 4)), S((3, 4), (3, 4), dim=2)], **_R),
    OpCase("nnf_refuse_cosine_similarity_int", F("cosine_similarity"), [S((3,), (3,), dim=0)],
           ("int64",), **_R),
    OpCase("nnf_refuse_pdist", F("pdist"), [S((3,)), S((3, 2), p=-1.0)], **_R),
    OpCase("nnf_refuse_normalize", F("normalize"), [S((3,))], **_R),
    OpCase("nnf_refuse_dropout_p", F("dropout"), [S((3,), p=1.5), S((3,), p=-0.1)], **_R),
    OpCase("nnf_refuse_dropout1d_rank", F("dropout1d"), [S((2, 3, 4, 5)), S((3,))], **_R),
]

# ---- the torch.X / Tensor.X forms of nn ops (registered where the op is defined, in ember/ops)
OPS += [
    OpCase("torch_threshold", lambda m, x: m.threshold(x, 0.5, -2.0), [S((3, 4))], FLOAT),
    OpCase("torch_threshold_", lambda m, x: m.threshold_(x.clone(), 0.5, -2.0), [S((3, 4))]),
    OpCase("torch_selu_celu", lambda m, x: m.selu(x) + m.celu(x, 0.5), [S((3, 4))], FLOAT),
    OpCase("torch_selu_celu_", lambda m, x: m.selu_(x.clone()) + m.celu_(x.clone()), [S((3, 4))]),
    OpCase("torch_rrelu_eval", lambda m, x: m.rrelu(x, 0.1, 0.3) + m.rrelu_(x.clone()),
           [S((3, 4))]),
    OpCase("tensor_hardshrink", lambda m, x: x.hardshrink(0.3) + m.hardshrink(x), [S((3, 4))]),
    OpCase("tensor_prelu", lambda m, x, w: x.prelu(w) + m.prelu(x, w), [S((2, 3, 4), (3,))]),
    OpCase("torch_conv", lambda m, x, w, b: (m.conv2d(x, w, b, 1, 1),
                                             m.conv_transpose2d(m.conv2d(x, w, b, 2), w, None, 2)),
           [S((1, 2, 5, 5), (3, 2, 3, 3), (3,))]),
    OpCase("torch_conv1d_3d", lambda m, x, w, y, v: (m.conv1d(x, w), m.conv3d(y, v),
                                                     m.conv_transpose1d(x, w),
                                                     m.conv_transpose3d(y, v)),
           [S((1, 2, 6), (2, 2, 3), (1, 2, 3, 3, 3), (2, 2, 2, 2, 2))]),
    OpCase("torch_pools", lambda m, x: (m.max_pool2d(x, 2), m.max_pool1d(x[0], 2),
                                        m.avg_pool1d(x[0], 2, 1), m.adaptive_avg_pool1d(x[0], 3),
                                        *m.adaptive_max_pool1d(x[0], 3),
                                        *m.max_pool1d_with_indices(x[0], 3)),
           [S((1, 2, 4, 6))]),
    OpCase("torch_layer_group_norm", lambda m, x, w, b: m.layer_norm(x, (4,), w, b, 1e-3)
           + m.group_norm(x.transpose(1, 2), 2, None, None, 1e-3).transpose(1, 2),
           [S((2, 3, 4), (4,), (4,))]),
    OpCase("torch_embedding", lambda m, w, **kw: m.embedding(w, m.tensor(IDX2), **kw),
           [S((5, 3)), S((5, 3), padding_idx=1, gradcheck=False),
            S((5, 3), scale_grad_by_freq=True, gradcheck=False)]),
    OpCase("torch_distances", lambda m, x, y: (m.cosine_similarity(x, y), m.pdist(x),
                                               m.pairwise_distance(x, y, 3.0)),
           [S((4, 3), (4, 3))]),
    OpCase("torch_pixel_shuffle", lambda m, x: m.pixel_unshuffle(m.pixel_shuffle(x, 2), 2),
           [S((2, 8, 3, 2))]),
]
