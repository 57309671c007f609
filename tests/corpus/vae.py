"""pytorch/examples vae/main.py: encoder, reparameterisation, decoder, BCE + KLD loss, Adam,
and sampling from the prior; the noise comes from a fixed tensor so both libraries agree."""

import os
import tempfile

import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F

from _corpus import init_, report, sines

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.backends.cudnn.benchmark = False


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc21 = nn.Linear(64, 8)
        self.fc22 = nn.Linear(64, 8)
        self.fc3 = nn.Linear(8, 64)
        self.fc4 = nn.Linear(64, 784)
        self.noise = None

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std) if self.noise is None else self.noise[: std.size(0)]
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


images = (sines(48, 1, 28, 28) + 1) / 2
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images), batch_size=16)
model = init_(VAE()).to(device)
model.noise = sines(16, 8, phase=0.7)
optimizer = optim.Adam(model.parameters(), lr=1e-3)

epoch_losses = []
for epoch in range(1, 4):
    model.train()
    train_loss = 0
    for batch_idx, (data,) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    epoch_losses.append(train_loss / len(train_loader.dataset))

with torch.no_grad():
    sample = sines(4, 8, phase=2.0).to(device)
    sample = model.decode(sample).cpu()
    comparison = torch.cat([images[:2].view(2, 784), sample[:2]])
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        amp_mu, _ = model.encode(images[:2].view(-1, 784))

with tempfile.TemporaryDirectory() as tmp:
    torch.save({"epoch": 3, "model": model.state_dict(), "optimizer": optimizer.state_dict()},
               os.path.join(tmp, "vae.ckpt"))
    state = torch.load(os.path.join(tmp, "vae.ckpt"), weights_only=True)
    torch.save(model, os.path.join(tmp, "vae.pt"))
    torch.serialization.add_safe_globals([VAE])
    whole = torch.load(os.path.join(tmp, "vae.pt"), weights_only=False)

report(epoch_losses=epoch_losses, sample_mean=sample.mean(dim=1), comparison_sum=comparison.sum().item(),
       amp_dtype=str(amp_mu.dtype), amp_mu=amp_mu, exp_avg_sq=state["optimizer"]["state"][0]["exp_avg_sq"][:3, :3],
       whole_noise=whole.noise[0])
