"""pytorch/examples word_language_model: an embedding + LSTM language model trained with
truncated BPTT (batchify, get_batch, repackage_hidden, clip_grad_norm_), on a synthetic corpus."""

import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

from _corpus import init_, labels, report

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.backends.cudnn.deterministic = True


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.0, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


bptt, ntokens = 6, 20
train_data = batchify(labels(240, ntokens), 4)
val_data = batchify(labels(60, ntokens, phase=5.0), 2)


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def evaluate(model, data_source, bsz):
    model.eval()
    total_loss = 0.
    hidden = model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * F.nll_loss(output, targets).item()
    return total_loss / (len(data_source) - 1)


results = {}
for rnn_type in ("LSTM", "GRU"):
    model = init_(RNNModel(rnn_type, ntokens, 16, 16, 2, tie_weights=True)).to(device)
    criterion = nn.NLLLoss()
    lr, clip = 2.0, 0.25
    losses = []
    for epoch in range(2):
        model.train()
        hidden = model.init_hidden(4)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
    val_loss = evaluate(model, val_data, 2)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "model.pt"), "wb") as f:
            torch.save(model, f)
        with open(os.path.join(tmp, "model.pt"), "rb") as f:
            torch.serialization.add_safe_globals([RNNModel])
            model = torch.load(f, weights_only=False)
            model.rnn.flatten_parameters()
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        amp_out, _ = model(val_data[:3], model.init_hidden(2))
    results[rnn_type] = dict(losses=losses, val_loss=val_loss, val_ppl=math.exp(val_loss),
                             reloaded_val=evaluate(model, val_data, 2), amp_dtype=str(amp_out.dtype),
                             amp_out=amp_out[:2])

report(**results)
