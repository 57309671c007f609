"""A spectral convolution layer (Fourier neural operator style): rfft, a learned complex
weight on the lowest modes, irfft, trained for a few steps with Adam."""

import torch
import torch.nn as nn

from _corpus import report, sines


class SpectralConv1d(nn.Module):
    def __init__(self, channels, modes):
        super().__init__()
        self.modes = modes
        scale = 1 / (channels * channels)
        real = sines(channels, channels, modes, scale=scale)
        imag = sines(channels, channels, modes, scale=scale, phase=1.0)
        self.weight = nn.Parameter(torch.complex(real, imag))

    def forward(self, x):
        x_ft = torch.fft.rfft(x)
        out_ft = torch.zeros(x.shape[0], x.shape[1], x.shape[-1] // 2 + 1, dtype=torch.cfloat)
        out_ft[:, :, :self.modes] = torch.einsum("bix,iox->box", x_ft[:, :, :self.modes],
                                                 self.weight)
        return torch.fft.irfft(out_ft, n=x.shape[-1])


torch.manual_seed(0)
layer = SpectralConv1d(channels=3, modes=4)
x = sines(2, 3, 16)
target = torch.roll(x, shifts=2, dims=-1)
opt = torch.optim.Adam(layer.parameters(), lr=0.05)
losses = []
for step in range(5):
    opt.zero_grad()
    loss = ((layer(x) - target) ** 2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())

spectrum = torch.fft.fft(torch.fft.fftshift(x[0, 0]), norm="ortho")
report(losses=losses, weight_real=layer.weight.real, weight_imag=layer.weight.imag,
       spectrum_abs=spectrum.abs(), freqs=torch.fft.rfftfreq(16, d=0.5))
