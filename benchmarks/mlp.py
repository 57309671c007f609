"""MLP training: 784-512-256-10 with ReLU, cross-entropy and Adam, written with ``nn`` modules.

The network is nn.Sequential(Linear(784, 512), ReLU, Linear(512, 256), ReLU, Linear(256, 10))
trained with nn.CrossEntropyLoss and optim.Adam(lr=1e-3) on batches of 128 float32 vectors
(data from ``numpy.random.default_rng(0)``, the same in both libraries: a pool of 8 batches
cycled through), 100 steps of zero_grad / forward / backward / step. Weights are copied from
one set of NumPy arrays, so both libraries start identically. ember and torch run the same code
in fresh processes, alternating, with threads pinned; medians of the per-step times are
reported with the ember/torch ratio, for the training step and the forward pass alone
(no_grad), with each library's final loss as a sanity check.

The timed training steps also give a memory figure, measured the same way for both libraries
(as ``deep_chain.py`` does, through ``_harness``): the peak growth of the process's resident set
over a baseline taken after import, setup and the warm-up steps (so Adam's state and the
allocator's cache from the warm-up are in the baseline, and the row shows what one step's
activations, gradients and temporaries add at their peak).

``--compile`` adds the compiled variant: the whole step (zero_grad, forward, backward, Adam's
step; the batch passed in, the loss returned) wrapped in ``torch.compile``; the 3 warm-up steps
make ember's calls 1 and 2 its eager call and its capture, and every timed step a replay. Its
rows compare ember-compiled with eager torch, for the step time and its peak RSS growth (the
eager ember figure is the row above); torch-compiled is shown as context.

Run:  python benchmarks/mlp.py [--steps 100] [--repeats 5] [--threads 1] [--quick]
                               [--compile] [--json out.json]
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
optim = importlib.import_module(torch.__name__ + ".optim")

rng = np.random.default_rng(0)
BATCH, POOL = 128, 8
xs = [torch.tensor(rng.standard_normal((BATCH, 784)).astype(np.float32)) for _ in range(POOL)]
ys = [torch.tensor(rng.integers(0, 10, BATCH)) for _ in range(POOL)]

model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                      nn.Linear(256, 10))
state = model.state_dict()
init = {}
for name, p in state.items():  # torch's default bounds: 1/sqrt(fan_in), from shared numbers
    fan_in = state[name.split(".")[0] + ".weight"].shape[1]
    bound = 1.0 / np.sqrt(fan_in)
    init[name] = torch.tensor(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32))
model.load_state_dict(init)
loss_fn = nn.CrossEntropyLoss()
opt = optim.Adam(model.parameters(), lr=1e-3)


def train_step(x, y):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


step = compile_step(train_step)


def timed(fn, n):
    times = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def call(i):
    return step(xs[i % POOL], ys[i % POOL])


first = warm_up(call, 3, step)
base, exact = peak_rss_baseline()
train = timed(call, steps)
peak = peak_rss_growth_mib(base, exact)
check_replays(step, 3 + steps)
with torch.no_grad():
    fwd = 0.0 if compiled else timed(lambda i: model(xs[i % POOL]), steps)
    loss = float(loss_fn(model(xs[0]), ys[0]))
print(json.dumps({"train_step_ms": train * 1e3, "forward_ms": fwd * 1e3, "loss": loss,
                  "train_peak_mib": peak, "rss_base_mib": base / 1024, "exact_peak": exact,
                  **first}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False, steps: int = 100,
            compile: bool = False) -> dict:
    if quick:
        steps = min(steps, 20)
    runs = alternate(lambda v: run_child(CHILD, v, threads, steps), repeats, compile)
    med = medians(runs)
    rows = [row("mlp_train", "MLP train step, Adam", "ms", med, "train_step_ms"),
            row("mlp_forward", "MLP forward, no_grad", "ms", med, "forward_ms"),
            row("mlp_train_memory", "MLP train step peak RSS growth", "MiB", med,
                "train_peak_mib")]
    notes = ["MLP final loss: " + ", ".join(f"{v} {m['loss']:.4f}" for v, m in med.items())]
    if compile:
        rows += [compiled_row("mlp_train_compiled", "MLP train step, Adam, compiled", "ms", med,
                              "train_step_ms"),
                 compiled_row("mlp_train_memory_compiled",
                              "MLP train step peak RSS growth, compiled", "MiB", med,
                              "train_peak_mib"),
                 *capture_rows("mlp", "MLP train step", med)]
        eager, comp = med["ember"]["train_peak_mib"], med["ember_compiled"]["train_peak_mib"]
        notes.append(f"MLP train step peak RSS growth, ember compiled/eager: {comp:.2f} / "
                     f"{eager:.2f} MiB" + (f" = {comp / eager:.2f}" if eager > 0 else ""))
        notes += compiled_notes("MLP train step", runs, med)
    return {
        "title": f"MLP 784-512-256-10 (ReLU, cross-entropy, Adam lr=1e-3), batch 128, "
                 f"{threads} thread(s), median of {repeats} processes x {steps} steps",
        "rows": rows,
        "notes": notes,
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect, compiles=True,
               steps=(int, 100, "timed steps per process"))


if __name__ == "__main__":
    main()
