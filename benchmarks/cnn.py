"""CNN training step: a small MNIST-shaped convnet, forward + backward + SGD update.

The network is Conv2d(1, 16, 3, padding=1) - ReLU - MaxPool2d(2) - Conv2d(16, 32, 3,
padding=1) - ReLU - MaxPool2d(2) - Flatten - Linear(1568, 10) with cross-entropy, on a batch of
64 float32 images of 1x28x28, written with functional ops and plain weight tensors; the SGD
step updates the weights in place under no_grad. ember and torch run the same code in fresh
processes, alternating, with threads pinned to 1; medians of the per-step times are reported
with the ember/torch ratio, for the training step and for the forward pass alone (no_grad).

The loss is ``F.cross_entropy`` where ember has it (``--loss auto``), else a numerically stable
log-softmax composite (``--loss composite``), the same in both libraries.

Run:  python benchmarks/cnn.py [--steps 20] [--repeats 5] [--threads 1] [--loss auto]
                               [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import sys, time, json, statistics
import numpy as np
lib, threads, root, steps, loss_kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    int(sys.argv[4]), sys.argv[5]
if lib == "torch":
    import torch
    torch.set_num_threads(threads)
else:
    sys.path.insert(0, root)
    import ember as torch
import importlib
F = importlib.import_module(torch.__name__ + ".nn.functional")

rng = np.random.default_rng(0)
images = torch.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
labels_np = rng.integers(0, 10, 64)
labels = torch.tensor(labels_np)
onehot = torch.tensor(np.eye(10, dtype=np.float32)[labels_np])


def param(*shape, fan_in):
    bound = 1.0 / np.sqrt(fan_in)
    return torch.tensor(rng.uniform(-bound, bound, shape).astype(np.float32),
                        requires_grad=True)


params = [param(16, 1, 3, 3, fan_in=9), param(16, fan_in=9),
          param(32, 16, 3, 3, fan_in=144), param(32, fan_in=144),
          param(10, 1568, fan_in=1568), param(10, fan_in=1568)]


def forward(x):
    w1, b1, w2, b2, w3, b3 = params
    x = F.max_pool2d(torch.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    x = F.max_pool2d(torch.relu(F.conv2d(x, w2, b2, padding=1)), 2)
    x = x.reshape(x.shape[0], -1)
    return x @ w3.t() + b3


def loss_fn(logits):
    if loss_kind == "builtin":
        return F.cross_entropy(logits, labels)
    shifted = logits - logits.amax(1, keepdim=True)
    logp = shifted - shifted.exp().sum(1, keepdim=True).log()
    return -(logp * onehot).sum() / logits.shape[0]


def train_step(lr=0.01):
    loss = loss_fn(forward(images))
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return loss


def timed(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


for _ in range(3):
    train_step()
step = timed(train_step, steps)
with torch.no_grad():
    fwd = timed(lambda: forward(images), steps)
print(json.dumps({"train_step_ms": step * 1e3, "forward_ms": fwd * 1e3,
                  "loss": float(loss_fn(forward(images)))}))
"""


def measure(lib: str, threads: int, steps: int, loss: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", CHILD, lib, str(threads), root, str(steps),
                          loss], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ember_has_cross_entropy() -> bool:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import numpy as np; "
             "import ember, ember.nn.functional as F; "
             "F.cross_entropy(ember.zeros(2, 3, requires_grad=True), "
             "ember.tensor([0, 2])).backward()")
    done = subprocess.run([sys.executable, "-c", probe, root], check=False, capture_output=True)
    return done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per process")
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per library")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--loss", choices=("auto", "builtin", "composite"), default="auto")
    parser.add_argument("--json", help="also save the results to this file")
    args = parser.parse_args()
    loss = args.loss
    if loss == "auto":
        loss = "builtin" if _ember_has_cross_entropy() else "composite"
    try:
        import importlib.util
        libs = ["ember", "torch"] if importlib.util.find_spec("torch") else ["ember"]
    except ImportError:
        libs = ["ember"]
    runs: dict[str, list[dict]] = {lib: [] for lib in libs}
    for _ in range(args.repeats):
        for lib in libs:  # alternate, so drift in machine load hits both alike
            runs[lib].append(measure(lib, args.threads, args.steps, loss))
    med = {lib: {k: statistics.median(r[k] for r in rs) for k in ("train_step_ms", "forward_ms")}
           for lib, rs in runs.items()}
    print(f"CNN on 64x1x28x28 (conv-relu-pool x2, linear; {loss} cross-entropy), "
          f"{args.threads} thread(s), median of {args.repeats} processes x {args.steps} steps "
          "(ms per step)")
    print(f"{'workload':<22}{'ember':>10}{'torch':>10}{'ember/torch':>14}")
    for key, label in (("train_step_ms", "train step"), ("forward_ms", "forward (no_grad)")):
        e = med["ember"][key]
        if "torch" in med:
            t = med["torch"][key]
            print(f"{label:<22}{e:>10.2f}{t:>10.2f}{e / t:>14.2f}")
        else:
            print(f"{label:<22}{e:>10.2f}{'-':>10}{'-':>14}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"median": med, "runs": runs, "threads": args.threads, "loss": loss}, f,
                      indent=2)


if __name__ == "__main__":
    main()
