"""Per-op overhead: a chain of 1,000 small-tensor ops, forward and forward+backward.

The chain is 333 x ``y = tanh(y * c1 + c2)`` plus one multiply (1,000 ops) on a 16-element
float32 tensor that requires grad, then ``y.sum().backward()``. ember and torch run the same
code in fresh processes, alternating, with threads pinned; each process reports the best of 10
chains, and the medians over processes are reported in µs per op with the ember/torch ratio.

``--compile`` adds the compiled variant: a function computing the chain and its
``.sum().backward()``, wrapped in ``torch.compile``, called 3 times (ember: eager, capture,
replay) and then timed as the best of 10 replays, each on a new leaf tensor. Its row compares
ember-compiled with eager torch; torch-compiled is shown as context, and the child checks
that the compiled gradient equals the eager one.

Run:  python benchmarks/overhead.py [--repeats 5] [--threads 1] [--quick] [--compile]
                                    [--json out.json]
"""

from __future__ import annotations

from _harness import (
    alternate,
    capture_rows,
    compiled_notes,
    compiled_row,
    medians,
    row,
    run_child,
    standalone,
)

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


def chain(x):  # the compiled variant's step
    y = forward(x)
    y.sum().backward()
    return y


def run_step(step):
    x = torch.tensor(x0, requires_grad=True)
    t = time.perf_counter()
    step(x)
    return time.perf_counter() - t, x.grad


if compiled:
    step = compile_step(chain)
    first = warm_up(lambda i: run_step(step), 3, step)
    both, grad = min(run_step(step) for _ in range(N_RUNS))
    check_replays(step, 3 + N_RUNS)
    x = torch.tensor(x0, requires_grad=True)
    chain(x)
    if not np.allclose(grad.numpy(), x.grad.numpy(), rtol=1e-5, atol=0):
        raise SystemExit(f"compiled gradient {grad} differs from eager {x.grad}")
    print(json.dumps({"fwd_bwd_us_per_op": both / N_OPS * 1e6, **first}))
    sys.exit()
for _ in range(3):
    run(True)
fwd = min(run(False) for _ in range(N_RUNS))
both = min(run(True) for _ in range(N_RUNS))
print(json.dumps({"forward_us_per_op": fwd / N_OPS * 1e6,
                  "fwd_bwd_us_per_op": both / N_OPS * 1e6}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False,
            compile: bool = False) -> dict:
    n_runs = 5 if quick else 10
    runs = alternate(lambda v: run_child(CHILD, v, threads, n_runs), repeats, compile)
    med = medians(runs)
    rows = [row("overhead_fwd", "op overhead, forward", "µs/op", med, "forward_us_per_op"),
            row("overhead_fwd_bwd", "op overhead, forward+backward", "µs/op", med,
                "fwd_bwd_us_per_op")]
    if compile:
        rows += [compiled_row("overhead_fwd_bwd_compiled",
                              "op overhead, forward+backward, compiled", "µs/op", med,
                              "fwd_bwd_us_per_op"),
                 *capture_rows("overhead", "op overhead", med)]
    return {
        "title": f"op overhead: 1,000-op chain on a 16-element tensor, {threads} thread(s), "
                 f"median of {repeats} processes (best of {n_runs} chains each)",
        "rows": rows,
        "notes": compiled_notes("op overhead", runs, med),
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect, compiles=True)


if __name__ == "__main__":
    main()
