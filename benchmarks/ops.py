"""Single ops and layers on mid-sized tensors: forward (no_grad) and forward + backward.

A sweep for ops far slower than torch's: each case in ``CASES`` (softmax, layer norm, GELU,
embedding, convolutions, pooling, attention, reductions, topk, ...) is timed as its forward
under ``no_grad`` and as ``out.sum().backward()`` on inputs that require grad, float32, the
best of 3 timed loops. ember and torch run the same code in fresh processes, alternating,
threads pinned; the medians over the processes are reported with the ember/torch ratio, worst
first. No targets: the table says where to look next.

Run:  python benchmarks/ops.py [--repeats 5] [--threads 1] [--quick] [--only NAME,NAME]
                               [--json out.json]
"""

from __future__ import annotations

from _harness import alternate, medians, row, run_child, standalone

# name -> the expression timed (``x4`` (32, 16, 28, 28), ``x3`` (16, 64, 256), ``x2``
# (256, 512) and the modules and indices defined in ``CHILD``)
CASES: dict[str, str] = {
    "softmax": "F.softmax(x2, -1)",
    "log_softmax": "F.log_softmax(x2, -1)",
    "cross_entropy": "F.cross_entropy(x2, tgt)",
    "mse_loss": "F.mse_loss(x2, x2.detach() * 0.5)",
    "layer_norm": "ln(x3)",
    "group_norm": "F.group_norm(x4, 4)",
    "batch_norm": "bn(x4)",
    "gelu": "F.gelu(x3)",
    "gelu_tanh": "F.gelu(x3, approximate='tanh')",
    "silu": "F.silu(x3)",
    "dropout": "F.dropout(x3, 0.1)",
    "embedding": "emb(idx)",
    "index_rows": "x2[rows]",
    "conv3x3": "conv(x4)",
    "conv3x3_stride2": "conv_s2(x4)",
    "conv1x1": "conv1(x4)",
    "conv_transpose": "F.conv_transpose2d(x4s, wt, stride=2, padding=1)",
    "max_pool2d": "F.max_pool2d(x4, 2)",
    "avg_pool2d": "F.avg_pool2d(x4, 2)",
    "adaptive_avg_pool": "F.adaptive_avg_pool2d(x4, 1)",
    "upsample_nearest": "F.interpolate(x4s, scale_factor=2)",
    "upsample_bilinear": "F.interpolate(x4s, scale_factor=2, mode='bilinear')",
    "sdpa": "F.scaled_dot_product_attention(q, k, v)",
    "bmm": "torch.matmul(q, k.transpose(-1, -2))",
    "multihead_attention": "mha(xm, xm, xm)[0]",
    "encoder_layer": "enc(xm)",
    "gru": "gru(xs)[0]",
    "sum_dim": "x3.sum(1)",
    "mean": "x3.mean()",
    "var_dim": "x3.var(-1)",
    "cumsum": "x3.cumsum(-1)",
    "topk": "x2.topk(5, -1)[0]",
    "sort": "x2.sort(-1)[0]",
    "cat": "torch.cat([x3, x3], 1)",
    "transpose_contiguous": "x3.transpose(1, 2).contiguous()",
    "where": "torch.where(x3 > 0, x3, x3 * 0.1)",
    "pow": "x3 ** 2",
}

CHILD = r"""
names, budget = json.loads(args[0]), float(args[1])
F = importlib.import_module(torch.__name__ + ".nn.functional")
nn = importlib.import_module(torch.__name__ + ".nn")
rng = np.random.default_rng(0)
torch.manual_seed(0)


def t(*shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)


x4, x3, x2, x4s = t(32, 16, 28, 28), t(16, 64, 256), t(256, 512), t(8, 16, 14, 14)
q, k, v, xm, xs, wt = t(8, 4, 64, 32), t(8, 4, 64, 32), t(8, 4, 64, 32), t(8, 32, 128), \
    t(20, 16, 64), t(16, 8, 4, 4)
tgt = torch.tensor(rng.integers(0, 512, 256))
rows = torch.tensor(rng.integers(0, 256, 64))
idx = torch.tensor(rng.integers(0, 1000, (32, 64)))
emb, ln, bn = nn.Embedding(1000, 128), nn.LayerNorm(256), nn.BatchNorm2d(16)
conv, conv_s2, conv1 = nn.Conv2d(16, 32, 3, padding=1), nn.Conv2d(16, 32, 3, stride=2, padding=1), \
    nn.Conv2d(16, 64, 1)
mha = nn.MultiheadAttention(128, 4, batch_first=True)
enc = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True, dropout=0.0)
gru = nn.GRU(64, 128)


out = {}
for name, expr in names:
    code = compile(expr, name, "eval")

    def forward():
        with torch.no_grad():
            eval(code)

    def train():
        eval(code).sum().backward()

    out[name + "_forward"] = best_of(forward, budget)
    out[name + "_train"] = best_of(train, budget)
print(json.dumps(out))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False,
            only: list[str] | None = None) -> dict:
    import json

    budget = 0.002 if quick else 0.03  # seconds per timed loop
    cases = [(name, CASES[name]) for name in (only or CASES)]
    runs = alternate(lambda lib: run_child(CHILD, lib, threads, json.dumps(cases), budget),
                     repeats)
    med = medians(runs)
    rows = []
    for name, expr in cases:
        rows.append(row(name + "_forward", f"{expr}, forward (no_grad)", "us", med,
                        name + "_forward"))
        rows.append(row(name + "_train", f"{expr}, forward+backward", "us", med,
                        name + "_train"))
    rows.sort(key=lambda r: -(r["ratio"] or 0.0))
    return {
        "title": f"single ops, float32, {threads} thread(s), median of {repeats} processes x "
                 "best of 3 loops, worst ratio first",
        "rows": rows,
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect,
               only=(lambda s: s.split(","), None, "comma-separated case names"))


if __name__ == "__main__":
    main()
