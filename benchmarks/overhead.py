"""Per-op overhead: a chain of 1,000 small-tensor ops, forward and forward+backward.

The chain is 333 x ``y = tanh(y * c1 + c2)`` plus one multiply (1,000 ops) on a 16-element
float32 tensor that requires grad, then ``y.sum().backward()``. ember and torch run the same
code in fresh processes, alternating, with threads pinned; each process reports the best of 10
chains, and the medians over processes are reported in µs per op with the ember/torch ratio.

Run:  python benchmarks/overhead.py [--repeats 5] [--threads 1] [--quick] [--json out.json]
"""

from __future__ import annotations

from _harness import alternate, medians, row, run_child, standalone

CHILD = r"""
rng = np.random.default_rng(0)
x0 = rng.standard_normal(16).astype(np.float32)
c1 = torch.tensor(rng.standard_normal(16).astype(np.float32))
c2 = torch.tensor(rng.standard_normal(16).astype(np.float32))
N_OPS, N_RUNS = 1000, int(args[0])


def forward(x):
    y = x
    for _ in range(333):
        y = torch.tanh(y * c1 + c2)
    return y * c1


def run(backward):
    x = torch.tensor(x0, requires_grad=True)
    t = time.perf_counter()
    y = forward(x)
    if backward:
        y.sum().backward()
    return time.perf_counter() - t


for _ in range(3):
    run(True)
fwd = min(run(False) for _ in range(N_RUNS))
both = min(run(True) for _ in range(N_RUNS))
print(json.dumps({"forward_us_per_op": fwd / N_OPS * 1e6,
                  "fwd_bwd_us_per_op": both / N_OPS * 1e6}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False) -> dict:
    n_runs = 5 if quick else 10
    runs = alternate(lambda lib: run_child(CHILD, lib, threads, n_runs), repeats)
    med = medians(runs)
    return {
        "title": f"op overhead: 1,000-op chain on a 16-element tensor, {threads} thread(s), "
                 f"median of {repeats} processes (best of {n_runs} chains each)",
        "rows": [row("overhead_fwd", "op overhead, forward", "µs/op", med, "forward_us_per_op"),
                 row("overhead_fwd_bwd", "op overhead, forward+backward", "µs/op", med,
                     "fwd_bwd_us_per_op")],
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect)


if __name__ == "__main__":
    main()
