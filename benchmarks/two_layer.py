"""The seed program: a two-layer net trained with manual SGD, as in the PyTorch tutorial.

N=64 float32 inputs of 1000 features, a hidden layer of 100 and 10 outputs;
``y_pred = x.mm(w1).clamp(min=0).mm(w2)``, loss ``(y_pred - y).pow(2).sum()``, ``backward()``,
then under ``no_grad`` ``w -= lr * w.grad`` and ``w.grad.zero_()``, 500 steps (lr 1e-6). Data and
initial weights come from ``numpy.random.default_rng(0)``, the same in both libraries. ember and
torch run the same code in fresh processes, alternating, with threads pinned; each process times
the 500-step loop (after a 10-step warm-up) a few times and reports the median; the medians over
processes are reported in ms per 500 steps with the ember/torch ratio, and each library's final
loss as a sanity check.

Run:  python benchmarks/two_layer.py [--steps 500] [--repeats 5] [--threads 1] [--quick]
                                     [--json out.json]
"""

from __future__ import annotations

from _harness import alternate, medians, row, run_child, standalone

CHILD = r"""
steps, loops = int(args[0]), int(args[1])
N, D_in, H, D_out = 64, 1000, 100, 10
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((N, D_in)).astype(np.float32))
y = torch.tensor(rng.standard_normal((N, D_out)).astype(np.float32))
w1_init = rng.standard_normal((D_in, H)).astype(np.float32)
w2_init = rng.standard_normal((H, D_out)).astype(np.float32)
learning_rate = 1e-6


def train(steps):
    w1 = torch.tensor(w1_init, requires_grad=True)
    w2 = torch.tensor(w2_init, requires_grad=True)
    for t in range(steps):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return loss.item()


train(10)
times = []
for _ in range(loops):
    t = time.perf_counter()
    loss = train(steps)
    times.append(time.perf_counter() - t)
print(json.dumps({"train_ms": statistics.median(times) * 1e3, "loss": loss}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False, steps: int = 500) -> dict:
    loops = 1 if quick else 3
    runs = alternate(lambda lib: run_child(CHILD, lib, threads, steps, loops), repeats)
    med = medians(runs)
    return {
        "title": f"seed two-layer net (64 x 1000-100-10, manual SGD), {steps} steps, "
                 f"{threads} thread(s), median of {repeats} processes",
        "rows": [row("two_layer", f"seed two-layer net, {steps} steps", "ms", med, "train_ms")],
        "notes": ["two-layer final loss: " + ", ".join(f"{lib} {m['loss']:.6g}"
                                                       for lib, m in med.items())],
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect, steps=(int, 500, "SGD steps per timed loop"))


if __name__ == "__main__":
    main()
