"""A character-level LSTM language model, trained on a short bundled story.

The model reads a character, updates an ``nn.LSTM``'s state, and predicts the next character:
``nn.Embedding`` -> ``nn.LSTM`` (batch_first) -> ``nn.Linear`` over the vocabulary, trained with
cross-entropy on random windows of ``examples/data/lighthouse.txt`` using Adam and gradient
clipping (``nn.utils.clip_grad_norm_``). After training it samples text one character at a time,
carrying the LSTM's ``(h, c)`` state forward under ``torch.no_grad()``.
Run with ``python examples/char_lstm.py`` (or ``--text FILE`` to train on your own text).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

# NOTE: an LSTM multiplies small matrices one time step at a time, where BLAS threads only add
# overhead, and on a busy machine they spin so badly that training runs several times slower.
# One thread unless the user asked otherwise; this must happen before NumPy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import ember as torch
import ember.nn.functional as F
from ember import nn

DEFAULT_TEXT = Path(__file__).resolve().parent / "data" / "lighthouse.txt"


class CharLSTM(nn.Module):
    def __init__(self, vocab_size: int, embed_dim: int = 32, hidden_size: int = 128,
                 num_layers: int = 1) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers, batch_first=True)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, x: torch.Tensor, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def sample(model: CharLSTM, stoi: dict, itos: list, prompt: str, length: int,
           temperature: float = 0.8) -> str:
    """Generate ``length`` characters after ``prompt``, carrying the LSTM state forward."""
    model.eval()
    chars = list(prompt)
    with torch.no_grad():
        x = torch.tensor([[stoi[c] for c in prompt]])
        logits, state = model(x)
        for _ in range(length):
            probs = F.softmax(logits[0, -1] / temperature, dim=-1)
            index = torch.multinomial(probs, 1).item()
            chars.append(itos[index])
            logits, state = model(torch.tensor([[index]]), state)
    model.train()
    return "".join(chars)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=DEFAULT_TEXT)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seq-len", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--sample-length", type=int, default=200)
    parser.add_argument("--prompt", default="The keeper",
                        help="start of the sample (default: 'The keeper', or the text's first "
                             "10 characters if those letters are not in the text)")
    parser.add_argument("--fast", action="store_true", help="30 short steps and a short sample")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.fast:
        args.steps, args.seq_len, args.sample_length = 30, 24, 40
    torch.manual_seed(args.seed)

    text = args.text.read_text(encoding="utf-8")
    itos = sorted(set(text))
    stoi = {c: i for i, c in enumerate(itos)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    print(f"text: {len(text)} characters, vocabulary of {len(itos)}")
    print(f"a uniform guess would score a loss of ln({len(itos)}) = {math.log(len(itos)):.4f}")

    model = CharLSTM(len(itos), hidden_size=args.hidden_size)
    print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    start = time.perf_counter()
    first = None
    for step in range(args.steps):
        # A batch of random windows; the target is the window shifted by one character.
        starts = torch.randint(0, len(data) - args.seq_len - 1, (args.batch_size,))
        offsets = torch.arange(args.seq_len + 1)
        chunk = data[starts.unsqueeze(1) + offsets]
        x, y = chunk[:, :-1], chunk[:, 1:]

        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(itos)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()

        first = loss.item() if first is None else first
        if step % 25 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    print(f"trained {args.steps} steps in {time.perf_counter() - start:.1f} s")
    print(f"loss fell from {first:.4f} to {loss.item():.4f}")

    print("\nsample:")
    prompt = args.prompt if set(args.prompt) <= set(stoi) else text[:10]
    print(sample(model, stoi, itos, prompt=prompt, length=args.sample_length))


if __name__ == "__main__":
    main()
