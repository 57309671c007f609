"""The seed program: a two-layer net trained with manual SGD, as in the PyTorch tutorial.

N=64 float32 inputs of 1000 features, a hidden layer of 100 and 10 outputs;
``y_pred = x.mm(w1).clamp(min=0).mm(w2)``, loss ``(y_pred - y).pow(2).sum()``, ``backward()``,
then under ``no_grad`` ``w -= lr * w.grad`` and ``w.grad.zero_()``, 500 steps (lr 1e-6). Data and
initial weights come from ``numpy.random.default_rng(0)``, the same in both libraries. ember and
torch run the same code in fresh processes, alternating, with threads pinned; each process times
the 500-step loop (after a 10-step warm-up) a few times and reports the median; the medians over
processes are reported in ms per 500 steps with the ember/torch ratio, and each library's final
loss as a sanity check. Each loop starts from the same weights, copied into ``w1`` and ``w2``.

``--compile`` adds the compiled variant: the step (forward, backward, the manual update under
``no_grad`` and ``grad.zero_()``, returning the loss) wrapped in ``torch.compile``; the warm-up
makes ember's calls 1 and 2 its eager call and its capture, and every timed step a replay. Its
row compares ember-compiled with eager torch; torch-compiled is shown as context.

Run:  python benchmarks/two_layer.py [--steps 500] [--repeats 5] [--threads 1] [--quick]
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
steps, loops = int(args[0]), int(args[1])
N, D_in, H, D_out = 64, 1000, 100, 10
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((N, D_in)).astype(np.float32))
y = torch.tensor(rng.standard_normal((N, D_out)).astype(np.float32))
w1_init = torch.tensor(rng.standard_normal((D_in, H)).astype(np.float32))
w2_init = torch.tensor(rng.standard_normal((H, D_out)).astype(np.float32))
learning_rate = 1e-6
w1 = torch.zeros(D_in, H, requires_grad=True)
w2 = torch.zeros(H, D_out, requires_grad=True)


def sgd_step():
    global w1, w2  # the seed program's weights are globals, updated in place
    y_pred = x.mm(w1).clamp(min=0).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        w1 -= learning_rate * w1.grad
        w2 -= learning_rate * w2.grad
        w1.grad.zero_()
        w2.grad.zero_()
    return loss


step = compile_step(sgd_step)


def reset():
    with torch.no_grad():
        w1.copy_(w1_init)
        w2.copy_(w2_init)


def train(steps):
    reset()
    for t in range(steps):
        loss = step()
    return loss.item()


reset()
first = warm_up(lambda i: step(), 10, step)
times = []
for _ in range(loops):
    t = time.perf_counter()
    loss = train(steps)
    times.append(time.perf_counter() - t)
check_replays(step, 10 + loops * steps)
print(json.dumps({"train_ms": statistics.median(times) * 1e3, "loss": loss, **first}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False, steps: int = 500,
            compile: bool = False) -> dict:
    loops = 1 if quick else 3
    runs = alternate(lambda v: run_child(CHILD, v, threads, steps, loops), repeats, compile)
    med = medians(runs)
    rows = [row("two_layer", f"seed two-layer net, {steps} steps", "ms", med, "train_ms")]
    if compile:
        rows += [compiled_row("two_layer_compiled", f"seed two-layer net, {steps} steps, "
                              "compiled", "ms", med, "train_ms"),
                 *capture_rows("two_layer", "seed two-layer net", med)]
    return {
        "title": f"seed two-layer net (64 x 1000-100-10, manual SGD), {steps} steps, "
                 f"{threads} thread(s), median of {repeats} processes",
        "rows": rows,
        "notes": ["two-layer final loss: " + ", ".join(f"{v} {m['loss']:.6g}"
                                                       for v, m in med.items()),
                  *compiled_notes("seed two-layer net", runs, med)],
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect, compiles=True, steps=(int, 500, "SGD steps per timed loop"))


if __name__ == "__main__":
    main()
