"""MLP training: 784-512-256-10 with ReLU, cross-entropy and Adam, written with ``nn`` modules.

The network is nn.Sequential(Linear(784, 512), ReLU, Linear(512, 256), ReLU, Linear(256, 10))
trained with nn.CrossEntropyLoss and optim.Adam(lr=1e-3) on batches of 128 float32 vectors
(data from ``numpy.random.default_rng(0)``, the same in both libraries: a pool of 8 batches
cycled through), 100 steps of zero_grad / forward / backward / step. Weights are copied from
one set of NumPy arrays, so both libraries start identically. ember and torch run the same code
in fresh processes, alternating, with threads pinned to 1; medians of the per-step times are
reported with the ember/torch ratio, for the training step and the forward pass alone
(no_grad), with each library's final loss as a sanity check.

Run:  python benchmarks/mlp.py [--steps 100] [--repeats 5] [--threads 1] [--json out.json]
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
lib, threads, root, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if lib == "torch":
    import torch
    torch.set_num_threads(threads)
else:
    sys.path.insert(0, root)
    import ember as torch
import importlib
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


def train_step(i):
    opt.zero_grad()
    loss = loss_fn(model(xs[i % POOL]), ys[i % POOL])
    loss.backward()
    opt.step()
    return loss


def timed(fn, n):
    times = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


for i in range(3):
    train_step(i)
step = timed(train_step, steps)
with torch.no_grad():
    fwd = timed(lambda i: model(xs[i % POOL]), steps)
    loss = float(loss_fn(model(xs[0]), ys[0]))
print(json.dumps({"train_step_ms": step * 1e3, "forward_ms": fwd * 1e3, "loss": loss}))
"""


def measure(lib: str, threads: int, steps: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", CHILD, lib, str(threads), root, str(steps)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="timed steps per process")
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per library")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also save the results to this file")
    args = parser.parse_args()
    try:
        import importlib.util
        libs = ["ember", "torch"] if importlib.util.find_spec("torch") else ["ember"]
    except ImportError:
        libs = ["ember"]
    runs: dict[str, list[dict]] = {lib: [] for lib in libs}
    for _ in range(args.repeats):
        for lib in libs:  # alternate, so drift in machine load hits both alike
            runs[lib].append(measure(lib, args.threads, args.steps))
    med = {lib: {k: statistics.median(r[k] for r in rs) for k in ("train_step_ms", "forward_ms",
                                                                    "loss")}
           for lib, rs in runs.items()}
    print(f"MLP 784-512-256-10 (ReLU, cross-entropy, Adam lr=1e-3), batch 128, "
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
    print("final loss: " + ", ".join(f"{lib} {m['loss']:.4f}" for lib, m in med.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"median": med, "runs": runs, "threads": args.threads}, f, indent=2)


if __name__ == "__main__":
    main()
