"""CNN training: a small MNIST-shaped convnet written with ``nn`` modules, trained with SGD.

The network is nn.Sequential(Conv2d(1, 16, 3, padding=1), ReLU, MaxPool2d(2), Conv2d(16, 32, 3,
padding=1), ReLU, MaxPool2d(2), Flatten, Linear(1568, 10)) trained with nn.CrossEntropyLoss and
optim.SGD(lr=0.01, momentum=0.9) on one batch of 64 float32 images of 1x28x28, 20 steps of
zero_grad / forward / backward / step. Data and initial weights come from
``numpy.random.default_rng(0)``, the same in both libraries. ember and torch run the same code
in fresh processes, alternating, with threads pinned; medians of the per-step times are reported
with the ember/torch ratio, for the training step and for the forward pass alone (no_grad), with
each library's final loss as a sanity check.

``--compile`` adds the compiled variant: the whole step (zero_grad, forward, backward, SGD's
step, returning the loss) wrapped in ``torch.compile``; the 3 warm-up steps make ember's calls
1 and 2 its eager call and its capture, and every timed step a replay. Its row compares
ember-compiled with eager torch; torch-compiled is shown as context.

Run:  python benchmarks/cnn.py [--steps 20] [--repeats 5] [--threads 1] [--quick] [--compile]
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
optim = importlib.import_module(torch.__name__ + ".optim")

rng = np.random.default_rng(0)
images = torch.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
labels = torch.tensor(rng.integers(0, 10, 64))

model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(1568, 10))
state = model.state_dict()
init = {}
for name, p in state.items():  # torch's default bounds: 1/sqrt(fan_in), from shared numbers
    fan_in = int(np.prod(state[name.split(".")[0] + ".weight"].shape[1:]))
    bound = 1.0 / np.sqrt(fan_in)
    init[name] = torch.tensor(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32))
model.load_state_dict(init)
loss_fn = nn.CrossEntropyLoss()
opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def train_step():
    opt.zero_grad()
    loss = loss_fn(model(images), labels)
    loss.backward()
    opt.step()
    return loss


step = compile_step(train_step)


def timed(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


first = warm_up(lambda i: step(), 3, step)
train = timed(step, steps)
check_replays(step, 3 + steps)
with torch.no_grad():
    fwd = 0.0 if compiled else timed(lambda: model(images), steps)
    loss = float(loss_fn(model(images), labels))
print(json.dumps({"train_step_ms": train * 1e3, "forward_ms": fwd * 1e3, "loss": loss,
                  **first}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False, steps: int = 20,
            compile: bool = False) -> dict:
    if quick:
        steps = min(steps, 5)
    runs = alternate(lambda v: run_child(CHILD, v, threads, steps), repeats, compile)
    med = medians(runs)
    rows = [row("cnn_train", "CNN train step, SGD momentum", "ms", med, "train_step_ms"),
            row("cnn_forward", "CNN forward, no_grad", "ms", med, "forward_ms")]
    if compile:
        rows += [compiled_row("cnn_train_compiled", "CNN train step, SGD momentum, compiled",
                              "ms", med, "train_step_ms"),
                 *capture_rows("cnn", "CNN train step", med)]
    return {
        "title": f"CNN on 64x1x28x28 (conv-relu-pool x2, linear; nn modules, cross-entropy, "
                 f"SGD momentum 0.9), {threads} thread(s), median of {repeats} processes x "
                 f"{steps} steps",
        "rows": rows,
        "notes": ["CNN final loss: " + ", ".join(f"{v} {m['loss']:.4f}"
                                                 for v, m in med.items()),
                  *compiled_notes("CNN train step", runs, med)],
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect, compiles=True,
               steps=(int, 20, "timed steps per process"))


if __name__ == "__main__":
    main()
