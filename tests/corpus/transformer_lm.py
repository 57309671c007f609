"""The "Language Modeling with nn.Transformer" tutorial: PositionalEncoding, TransformerEncoder
with a square subsequent mask, Adam with a step schedule, clip_grad_norm_, evaluation."""

import math
import os
import tempfile

import torch
from torch import Tensor, nn
from torch.nn import TransformerEncoder, TransformerEncoderLayer

from _corpus import init_, labels, report


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float = 0.0, max_len: int = 64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.0):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers, enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
        output = self.transformer_encoder(src, src_mask)
        return self.linear(output)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.backends.cuda.matmul.allow_tf32 = False
ntokens, bptt = 24, 8
train_data = labels(160, ntokens).view(4, -1).t().contiguous().to(device)


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


model = init_(TransformerModel(ntokens, 16, 2, 32, 2)).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
losses = []
for epoch in range(2):
    model.train()
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        output = model(data)
        loss = criterion(output.view(-1, ntokens), targets)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        losses.append(loss.item())
    scheduler.step()

model.eval()
with torch.no_grad():
    data, targets = get_batch(train_data, 0)
    eval_loss = criterion(model(data).view(-1, ntokens), targets).item()
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        amp_out = model(data[:4])

with tempfile.TemporaryDirectory() as tmp:
    best_model_params_path = os.path.join(tmp, "best_model_params.pt")
    torch.save(model.state_dict(), best_model_params_path)
    model.load_state_dict(torch.load(best_model_params_path))
    torch.save(model, os.path.join(tmp, "whole.pt"))
    torch.serialization.add_safe_globals([TransformerModel, PositionalEncoding])
    whole = torch.load(os.path.join(tmp, "whole.pt"), weights_only=False).eval()
mask = nn.Transformer.generate_square_subsequent_mask(4)
with torch.no_grad():
    same = torch.allclose(whole(data), model(data))
report(losses=losses, eval_loss=eval_loss, eval_ppl=math.exp(eval_loss), lr=scheduler.get_last_lr(),
       amp_dtype=str(amp_out.dtype), amp_out=amp_out[0, 0], mask=mask, same=same)
