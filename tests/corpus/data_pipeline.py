"""pytorch.org "Datasets & DataLoaders" and "Writing Custom Datasets": a map-style Dataset with
a transform, a custom collate_fn that pads, samplers (sequential, subset, batch, weighted via a
seeded generator only for shape), an IterableDataset, and a model trained on the padded batches."""

import os
import tempfile

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                              SequentialSampler, Subset, SubsetRandomSampler, default_collate)

from _corpus import report, sines

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.backends.cudnn.benchmark = True


class VarLengthDataset(Dataset):
    def __init__(self, n, transform=None):
        self.items = [sines(3 + i % 4, 2, phase=i) for i in range(n)]
        self.targets = [float(i % 3) for i in range(n)]
        self.transform = transform

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        if torch.is_tensor(idx):
            idx = idx.tolist()
        sample = {"seq": self.items[idx], "target": self.targets[idx]}
        if self.transform:
            sample = self.transform(sample)
        return sample


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, sample):
        return {"seq": sample["seq"] * self.factor, "target": sample["target"]}


def pad_collate(batch):
    seqs = [b["seq"] for b in batch]
    lengths = torch.tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True), lengths, torch.tensor([b["target"] for b in batch])


class Countdown(IterableDataset):
    def __init__(self, start):
        self.start = start

    def __iter__(self):
        return iter(range(self.start, 0, -1))


dataset = VarLengthDataset(20, transform=Scale(0.5))
loader = DataLoader(dataset, batch_size=4, shuffle=False, collate_fn=pad_collate)
shapes = [list(seqs.shape) for seqs, _, _ in loader]
batches = list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
subset = Subset(dataset, [1, 3, 5])
concat = ConcatDataset([subset, Subset(dataset, [0])])
collated = default_collate([{"a": torch.tensor([1.0, 2.0]), "b": 3}, {"a": torch.tensor([4.0, 5.0]), "b": 6}])
countdown = [b.tolist() for b in DataLoader(Countdown(7), batch_size=3)]
g = torch.Generator().manual_seed(0)
random_subset = sorted(SubsetRandomSampler(list(range(5)), generator=g))


class Pooled(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, seqs, lengths):
        h = torch.tanh(self.proj(seqs))
        mask = (torch.arange(seqs.size(1))[None, :] < lengths[:, None]).unsqueeze(-1)
        pooled = (h * mask).sum(1) / lengths[:, None]
        return self.head(pooled).squeeze(-1)


model = Pooled().to(device)
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(sines(*p.shape, scale=0.3, phase=i))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for epoch in range(3):
    for seqs, lengths, target in loader:
        seqs, lengths, target = seqs.to(device), lengths.to(device), target.to(device)
        loss = nn.functional.mse_loss(model(seqs, lengths), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
with tempfile.TemporaryDirectory() as tmp:
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3},
               os.path.join(tmp, "ckpt.pt"))
    ckpt = torch.load(os.path.join(tmp, "ckpt.pt"), weights_only=True)
    torch.save(model, os.path.join(tmp, "model.pt"))
    torch.serialization.add_safe_globals([Pooled])
    whole = torch.load(os.path.join(tmp, "model.pt"), weights_only=False)
seqs, lengths, _ = next(iter(loader))
with torch.autocast(device_type=device, dtype=torch.bfloat16):
    amp_out = whole(seqs, lengths)
report(n=len(dataset), shapes=shapes, batches=batches, subset=[s["target"] for s in subset],
       concat_len=len(concat), collated=collated, countdown=countdown, random_subset=random_subset,
       losses=losses, epoch=ckpt["epoch"], amp_dtype=str(amp_out.dtype), amp_out=amp_out)
