"""The array kernels that select a gradient by a mask (``comparison.masked_bits``: ReLU's and
threshold's backward, clamp's with scalar bounds) and ReLU's row-wise forward, against torch
bit for bit: +0.0 where the gradient is cut, even when it is nan, inf or negative, the
gradient's own bits where it passes; on every layout the fast paths take or refuse."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SHAPES = [(), (0,), (5,), (3, 4), (64, 16, 28, 28), (2, 0, 3), (7, 4097)]
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -3.0, 2.5, 1e-40], np.float32)


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    if a.size >= SPECIAL.size:
        a.reshape(-1)[:SPECIAL.size] = SPECIAL.astype(dtype)
    return a


def _layouts(a):
    yield "contiguous", lambda lib, t: t
    if a.ndim >= 2:
        yield "transposed", lambda lib, t: t.transpose(0, -1)
        yield "sliced", lambda lib, t: t[..., ::2]


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


OPS = {
    "relu": lambda lib, t: lib.relu(t),
    "threshold": lambda lib, t: lib.nn.functional.threshold(t, 0.5, 2.0),
    "clamp_min": lambda lib, t: lib.clamp(t, min=0.25),
    "clamp_max": lambda lib, t: lib.clamp(t, max=-0.25),
    "clamp_both": lambda lib, t: lib.clamp(t, -0.5, 0.75),
}
# NOTE: torch's own answer at a nan input differs between its vectorised loop and the scalar
# one for the tail (hardtanh, the shrinks, threshold's value), so those see no nan input
NO_NAN_INPUT = {"threshold"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(OPS))
def test_masked_gradient_is_torch_bit_for_bit(op, shape, dtype):
    x = _data(shape, dtype, 0)
    if op in NO_NAN_INPUT:
        x[np.isnan(x)] = 1.0
    g = _data(shape, dtype, 1)
    for layout, view in _layouts(x):
        outs, grads = [], []
        for lib in (ember, torch):
            t = lib.tensor(x, requires_grad=True)
            y = OPS[op](lib, view(lib, t))
            seed = view(lib, lib.tensor(g))
            y.backward(seed)
            outs.append(y.detach().numpy())
            grads.append(t.grad.numpy())
        assert grads[0].dtype == grads[1].dtype, layout
        assert np.array_equal(_bits(grads[0]), _bits(grads[1])), (layout, grads[0], grads[1])
        # values: torch's clamp/relu keep -0.0 where ember's maximum gives +0.0 (noted in
        # docs/differences.md), so values are compared as numbers
        np.testing.assert_array_equal(outs[0], outs[1], err_msg=layout)


def test_relu_rows_do_not_depend_on_the_layout():
    """The forward takes a contiguous input as long rows and any other as it is: the same
    values either way, and the input untouched."""
    x = _data((6, 5, 300), np.float32, 2)
    t = ember.tensor(x)
    for view in (t, t.transpose(0, 2), t[:, ::2], t[..., 1:]):
        expect = np.maximum(view.numpy(), 0)
        np.testing.assert_array_equal(ember.relu(view).numpy(), expect)
    np.testing.assert_array_equal(t.numpy(), x)
