"""``ember.fft`` against ``torch.fft``: values, dtypes, n/s/dim/norm, gradients (torch's and
finite differences), forward-mode tangents, and a spectral (FNO-style) layer trained with SGD."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the oracle: these tests compare with torch

import ember

RNG = np.random.default_rng(0)
XR = RNG.standard_normal((4, 6))
XC = RNG.standard_normal((4, 6)) + 1j * RNG.standard_normal((4, 6))

CASES = [
    ("fft", XC, {}), ("fft", XR, {"n": 8}), ("fft", XC, {"n": 4, "dim": 0, "norm": "ortho"}),
    ("ifft", XC, {"norm": "forward"}), ("ifft", XC, {}), ("fft2", XC, {}),
    ("ifft2", XC, {"s": (3, 7)}), ("fftn", XC, {"dim": (1,), "norm": "ortho"}), ("ifftn", XR, {}),
    ("fftn", XC, {"s": (5,)}), ("rfft", XR, {}), ("rfft", XR, {"n": 5, "norm": "ortho"}),
    ("rfft", XR, {"n": 9, "dim": 0, "norm": "forward"}), ("irfft", XC, {}),
    ("irfft", XC, {"n": 7}), ("irfft", XC, {"n": 12, "norm": "ortho"}),
    ("irfft", XC, {"n": 3, "dim": 0, "norm": "forward"}), ("irfft", XR, {}), ("rfft2", XR, {}),
    ("irfft2", XC, {}), ("irfft2", XC, {"s": (5, 5)}), ("rfftn", XR, {"s": (3, 8)}),
    ("irfftn", XC, {"dim": (0, 1), "norm": "ortho"}), ("hfft", XC, {}),
    ("hfft", XC, {"n": 7, "norm": "ortho"}), ("ihfft", XR, {}),
    ("ihfft", XR, {"n": 5, "norm": "forward"}), ("fftshift", XC, {}),
    ("ifftshift", XR, {"dim": 1}), ("fftshift", XR, {"dim": (0, 1)}),
]


def _np(t) -> np.ndarray:
    return t.detach().resolve_conj().numpy()


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[2]}")
def test_values_dtypes_and_gradients_match_torch(case, precision):
    name, x, kwargs = case
    x = x.astype({"float32": np.complex64, "float64": np.complex128}[precision]
                 if np.iscomplexobj(x) else precision)
    results = []
    for m in (torch, ember):
        t = m.tensor(x, requires_grad=True)
        y = getattr(m.fft, name)(t, **kwargs)
        g = np.random.default_rng(5).standard_normal(tuple(y.shape))
        g = g * (1 + 0.5j) if y.is_complex() else g
        (gx,) = m.autograd.grad(y, t, m.tensor(g, dtype=y.dtype))
        results.append((y, gx))
    tol = 1e-4 if precision == "float32" else 1e-10
    for t, e in zip(*results):
        assert repr(e.dtype) == repr(t.dtype) and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(_np(e), _np(t), rtol=tol, atol=tol)


def test_integer_input_gives_complex64():
    assert repr(ember.fft.fft(ember.arange(4)).dtype) == \
        repr(torch.fft.fft(torch.arange(4)).dtype) == "torch.complex64"


def _fd_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(x)
    units = (1, 1j) if np.iscomplexobj(x) else (1,)
    for i in np.ndindex(x.shape):
        for u in units:
            xp, xm = x.copy(), x.copy()
            xp[i] += eps * u
            xm[i] -= eps * u
            out[i] += u * (f(xp) - f(xm)) / (2 * eps)
    return out


@pytest.mark.parametrize("case", [c for c in CASES if "shift" not in c[0]],
                         ids=lambda c: f"{c[0]}-{c[2]}")
def test_gradients_match_finite_differences(case):
    name, x, kwargs = case
    fn = getattr(ember.fft, name)
    y0 = fn(ember.tensor(x), **kwargs)
    w = np.random.default_rng(3).standard_normal(tuple(y0.shape)) * (1 - 2j)

    def loss(v: np.ndarray) -> float:
        y = fn(ember.tensor(v), **kwargs)
        return float((y * ember.tensor(w)).real.sum().item())

    t = ember.tensor(x, requires_grad=True)
    (g,) = ember.autograd.grad((fn(t, **kwargs) * ember.tensor(w)).real.sum(), t)
    np.testing.assert_allclose(g.numpy(), _fd_grad(loss, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", [c for c in CASES if "shift" not in c[0]][::3],
                         ids=lambda c: f"{c[0]}-{c[2]}")
def test_forward_mode_matches_torch(case):
    name, x, kwargs = case
    v = np.random.default_rng(4).standard_normal(x.shape) * (1 + 1j if np.iscomplexobj(x) else 1)
    results = []
    for m in (torch, ember):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            y = getattr(m.fft, name)(fw.make_dual(m.tensor(x), m.tensor(v)), **kwargs)
            results.append(_np(fw.unpack_dual(y).tangent))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-10, atol=1e-10)


def test_frequencies_match_torch():
    for n, d in [(5, 1.0), (6, 0.1), (1, 2.0)]:
        for name in ("fftfreq", "rfftfreq"):
            e, t = getattr(ember.fft, name)(n, d), getattr(torch.fft, name)(n, d)
            assert repr(e) == repr(t)
    assert ember.fft.fftfreq(4, dtype=ember.float64).dtype == ember.float64


def test_errors_match_torch():
    for fn in (lambda m: m.fft.rfft(m.ones(4, dtype=m.cfloat)),
               lambda m: m.fft.fft(m.ones(4), norm="bad")):
        with pytest.raises(RuntimeError):
            fn(torch)
        with pytest.raises(RuntimeError) as ee:
            fn(ember)
        assert "rfft" in str(ee.value) or "normalization" in str(ee.value)


def _spectral_layer_losses(m, steps: int = 5) -> tuple[list[float], np.ndarray]:
    """An FNO-style spectral layer: rfft -> complex weights on the low modes -> irfft, plus a
    pointwise linear path, trained for a few SGD steps."""
    rng = np.random.default_rng(7)
    x = m.tensor(rng.standard_normal((8, 2, 32)))
    target = m.tensor(np.sin(np.linspace(0, 4 * np.pi, 32)) * np.ones((8, 2, 1)))
    modes = 6
    w = m.tensor(rng.standard_normal((2, 2, modes)) + 1j * rng.standard_normal((2, 2, modes)),
                 requires_grad=True)
    lin = m.tensor(rng.standard_normal((2, 2)) * 0.1, requires_grad=True)
    losses = []
    for _ in range(steps):
        xf = m.fft.rfft(x, norm="ortho")
        low = (xf[:, :, None, :modes] * w[None]).sum(1)  # (batch, out, modes)
        out_f = m.cat([low, m.zeros(8, 2, xf.shape[-1] - modes, dtype=low.dtype)], -1)
        y = m.fft.irfft(out_f, n=32, norm="ortho") + m.tanh(lin @ x)
        loss = ((y - target) ** 2).mean()
        gw, gl = m.autograd.grad(loss, (w, lin))
        with m.no_grad():
            w -= 0.5 * gw
            lin -= 0.5 * gl
        losses.append(float(loss.item()))
    return losses, _np(w)


def test_spectral_layer_trains_as_in_torch():
    (tl, tw), (el, ew) = _spectral_layer_losses(torch), _spectral_layer_losses(ember)
    np.testing.assert_allclose(el, tl, rtol=1e-10)
    np.testing.assert_allclose(ew, tw, rtol=1e-10)
    assert el[-1] < el[0]
