"""LSTM training step: ``nn.LSTM(64, 128)`` over 50 time steps of a batch of 32, a linear head
on every step's output, a mean-squared loss, and backward.

ember and torch run the same code in fresh processes, alternating, with threads pinned;
medians of the per-step times are reported with the ember/torch ratio, for forward + backward
and for the forward alone (no_grad).

The timed forward + backward steps also give a memory figure, measured the same way for both
libraries (as ``deep_chain.py`` does, through ``_harness``): the peak growth of the process's
resident set over a baseline taken after import, setup and the warm-up steps, i.e. what the
50 steps' saved activations, the gradients and the temporaries add at their peak.

``--compile`` adds the compiled variant: the step (forward, loss, backward, and the gradients
set back to None) wrapped in ``torch.compile``; 3 warm-up steps (not 2) make ember's calls 1
and 2 its eager call and its capture, and every timed step a replay. Its row compares
ember-compiled with eager torch; torch-compiled is shown as context.

Run:  python benchmarks/lstm.py [--steps 10] [--repeats 5] [--threads 1] [--quick] [--compile]
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
steps = int(args[0])
nn = importlib.import_module(torch.__name__ + ".nn")
F = importlib.import_module(torch.__name__ + ".nn.functional")

T, B, I, H = 50, 32, 64, 128
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((T, B, I)).astype(np.float32))
y = torch.tensor(rng.standard_normal((T, B, 1)).astype(np.float32))
lstm = nn.LSTM(I, H)
head_w = torch.tensor(rng.uniform(-H ** -0.5, H ** -0.5, (1, H)).astype(np.float32),
                      requires_grad=True)
head_b = torch.tensor(np.zeros(1, np.float32), requires_grad=True)


def train_step():
    out, _ = lstm(x)
    loss = ((F.linear(out, head_w, head_b) - y) ** 2).mean()
    loss.backward()
    for p in list(lstm.parameters()) + [head_w, head_b]:
        p.grad = None


step = compile_step(train_step)


def forward():
    with torch.no_grad():
        lstm(x)


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


first = warm_up(lambda i: step(), 3 if compiled else 2, step)
base, exact = peak_rss_baseline()
train = statistics.median([timed(step) for _ in range(steps)])
peak = peak_rss_growth_mib(base, exact)
check_replays(step, 3 + steps)
fwd = 0.0 if compiled else statistics.median(timed(forward) for _ in range(steps))
print(json.dumps({"train_ms": train * 1e3, "forward_ms": fwd * 1e3, "train_peak_mib": peak,
                  "rss_base_mib": base / 1024, "exact_peak": exact, **first}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False, steps: int = 10,
            compile: bool = False) -> dict:
    if quick:
        steps = min(steps, 3)
    runs = alternate(lambda v: run_child(CHILD, v, threads, steps), repeats, compile)
    med = medians(runs)
    rows = [row("lstm_train", "LSTM forward+backward", "ms", med, "train_ms"),
            row("lstm_forward", "LSTM forward, no_grad", "ms", med, "forward_ms"),
            row("lstm_train_memory", "LSTM train step peak RSS growth", "MiB", med,
                "train_peak_mib")]
    if compile:
        rows += [compiled_row("lstm_train_compiled", "LSTM forward+backward, compiled", "ms",
                              med, "train_ms"),
                 *capture_rows("lstm", "LSTM forward+backward", med)]
    return {
        "title": f"LSTM(64, 128), 50 steps x batch 32, linear head + MSE, {threads} thread(s), "
                 f"median of {repeats} processes x {steps} steps",
        "rows": rows,
        "notes": compiled_notes("LSTM forward+backward", runs, med),
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect, compiles=True,
               steps=(int, 10, "timed steps per process"))


if __name__ == "__main__":
    main()
