"""A tiny Transformer encoder that learns to reverse short sequences of digits.

Input: ``L`` random digits. Target at position ``i``: the digit at position ``L - 1 - i``. No
single position can be answered from its own token, so the model must learn to attend to the
mirrored position: a token embedding plus a learned position embedding, an
``nn.TransformerEncoder`` of ``nn.TransformerEncoderLayer`` (batch_first, pre-norm), and a
linear head, trained with cross-entropy and AdamW. It prints the per-token and whole-sequence
accuracy on fresh sequences, and, for each layer, which position each token attends to most.
Run with ``python examples/tiny_transformer.py``.
"""

from __future__ import annotations

import argparse
import time

import ember as torch
import ember.nn.functional as F
from ember import nn


class TinyTransformer(nn.Module):
    def __init__(self, vocab: int, seq_len: int, d_model: int = 32, nhead: int = 4,
                 num_layers: int = 2, dim_feedforward: int = 64) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(seq_len, d_model) * 0.1)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.tok(x) + self.pos[: x.shape[1]]
        return self.head(self.norm(self.encoder(h)))


def batch(n: int, seq_len: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randint(0, vocab, (n, seq_len))
    return x, x.flip(1)


@torch.no_grad()
def accuracy(model: nn.Module, seq_len: int, vocab: int, n: int = 512) -> tuple[float, float]:
    model.eval()
    x, y = batch(n, seq_len, vocab)
    correct = model(x).argmax(-1) == y
    model.train()
    return correct.float().mean().item(), correct.all(dim=1).float().mean().item()


@torch.no_grad()
def attention_argmax(model: TinyTransformer, x: torch.Tensor) -> list:
    """For each layer, the key position each query position attends to most (heads averaged)."""
    model.eval()
    h = model.tok(x) + model.pos[: x.shape[1]]
    found = []
    for name, layer in model.encoder.layers.named_children():
        q = layer.norm1(h)  # norm_first: attention sees the normalised input
        _, weights = layer.self_attn(q, q, q, need_weights=True)  # (batch, L, L)
        found.append((name, weights[0].argmax(-1).tolist()))
        h = layer(h)
    model.train()
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seq-len", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--fast", action="store_true", help="60 steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps = 60 if args.fast else args.steps
    torch.manual_seed(args.seed)

    model = TinyTransformer(args.vocab, args.seq_len)
    print(f"task: reverse {args.seq_len} digits, e.g. {[3, 1, 4, 1, 5, 9, 2, 6][:args.seq_len]} -> "
          f"{[3, 1, 4, 1, 5, 9, 2, 6][:args.seq_len][::-1]}")
    print(f"model: {sum(p.numel() for p in model.parameters())} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)

    token_acc0, _ = accuracy(model, args.seq_len, args.vocab)
    print(f"before training: token accuracy {token_acc0:.1%} (chance is {1 / args.vocab:.0%})")
    start = time.perf_counter()
    first = None
    for step in range(steps):
        x, y = batch(args.batch_size, args.seq_len, args.vocab)
        loss = F.cross_entropy(model(x).reshape(-1, args.vocab), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        first = loss.item() if first is None else first
        if step % 50 == 0 or step == steps - 1:
            tok, seq = accuracy(model, args.seq_len, args.vocab, n=256)
            print(f"step {step:4d}  loss {loss.item():.4f}  token accuracy {tok:.1%}  "
                  f"sequence accuracy {seq:.1%}")
    print(f"trained {steps} steps in {time.perf_counter() - start:.1f} s")

    token_acc, seq_acc = accuracy(model, args.seq_len, args.vocab)
    x, _ = batch(1, args.seq_len, args.vocab)
    with torch.no_grad():
        model.eval()
        pred = model(x).argmax(-1)
    print(f"input      {x[0].tolist()}")
    print(f"prediction {pred[0].tolist()}")
    for i, (name, where) in enumerate(attention_argmax(model, x)):
        print(f"layer {i}: position i attends most to {where}")
    print(f"loss fell from {first:.4f} to {loss.item():.4f}")
    print(f"final accuracy: token {token_acc:.1%}, whole sequence {seq_acc:.1%}")


if __name__ == "__main__":
    main()
