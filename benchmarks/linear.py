"""Linear layers by batch size: ``F.linear`` forward (no_grad) and forward + backward.

Each configuration in ``CONFIGS`` is a batch of rows through one layer (weight out x in, with
bias): float32, inputs and parameters drawn once from ``numpy.random.default_rng(0)``. The
forward row times ``F.linear(x, w, b)`` under ``no_grad``; the forward + backward row times
``F.linear(x, w, b).sum().backward()`` with the gradients set back to None. Each takes the
best of 3 timed loops; ember and torch run the same code in fresh processes, alternating,
threads pinned, and the medians over the processes are reported with the ember/torch ratio.

Small batches are where a BLAS's orientation matters most: ``_backend.matrix_product``.

Run:  python benchmarks/linear.py [--repeats 5] [--threads 1] [--quick] [--json out.json]
"""

from __future__ import annotations

from _harness import alternate, medians, row, run_child, standalone

# (key, batch, in_features, out_features)
CONFIGS: list[tuple[str, int, int, int]] = [
    ("b1_784_512", 1, 784, 512),
    ("b8_1024_1024", 8, 1024, 1024),
    ("b16_128_256", 16, 128, 256),
    ("b32_784_512", 32, 784, 512),
    ("b64_512_256", 64, 512, 256),
    ("b128_784_512", 128, 784, 512),
    ("b256_256_10", 256, 256, 10),
]

CHILD = r"""
configs, budget = json.loads(args[0]), float(args[1])
F = importlib.import_module(torch.__name__ + ".nn.functional")
rng = np.random.default_rng(0)


out = {}
for key, batch, fan_in, fan_out in configs:
    x = torch.tensor(rng.standard_normal((batch, fan_in)).astype(np.float32))
    w = torch.tensor(rng.standard_normal((fan_out, fan_in)).astype(np.float32) * fan_in ** -0.5,
                     requires_grad=True)
    b = torch.tensor(np.zeros(fan_out, np.float32), requires_grad=True)

    def forward():
        with torch.no_grad():
            F.linear(x, w, b)

    def train():
        F.linear(x, w, b).sum().backward()
        w.grad = b.grad = None

    out[key + "_forward"] = best_of(forward, budget)
    out[key + "_train"] = best_of(train, budget)
print(json.dumps(out))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False) -> dict:
    import json

    budget = 0.002 if quick else 0.03  # seconds per timed loop
    configs = json.dumps(CONFIGS)
    runs = alternate(lambda lib: run_child(CHILD, lib, threads, configs, budget), repeats)
    med = medians(runs)
    rows = []
    for key, batch, fan_in, fan_out in CONFIGS:
        shape = f"batch {batch}, {fan_in} -> {fan_out}"
        rows.append(row(key + "_forward", f"linear forward, no_grad, {shape}", "us", med,
                        key + "_forward"))
        rows.append(row(key + "_train", f"linear forward+backward, {shape}", "us", med,
                        key + "_train"))
    return {
        "title": f"F.linear by batch size (float32, with bias), {threads} thread(s), median of "
                 f"{repeats} processes x best of 3 loops",
        "rows": rows,
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect)


if __name__ == "__main__":
    main()
